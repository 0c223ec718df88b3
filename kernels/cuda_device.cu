/*
 * cuda_device.cu - device discovery, streams and device memory for the
 * kvs_cuda_* API (kernels_cuda.c).  Each function is one or two runtime
 * calls behind KVS_CUDA_CHECK; "no device" and "no driver" both read as
 * KVS_ERR_NO_DEVICE so that GPU tests and benchmarks can skip cleanly.
 */
#include <stdio.h>
#include "cuda_check.h"

#include <string.h>

extern "C" kvs_status kvs_cu_device_count(int *count)
{
	int n = 0;
	cudaError_t err = cudaGetDeviceCount(&n);
	if (err != cudaSuccess) {
		(void)cudaGetLastError();
		return kvs_fail(KVS_ERR_NO_DEVICE, "cuda: no usable device: %s (%s)",
				cudaGetErrorString(err), cudaGetErrorName(err));
	}
	if (n <= 0)
		return kvs_fail(KVS_ERR_NO_DEVICE, "cuda: no device present");
	*count = n;
	return KVS_OK;
}

extern "C" kvs_status kvs_cu_set_device(int device)
{
	KVS_CUDA_CHECK(cudaSetDevice(device));
	return KVS_OK;
}

extern "C" kvs_status kvs_cu_open(int device, void **stream,
				  kvs_cuda_device_info *info)
{
	KVS_CUDA_CHECK(cudaSetDevice(device));
	cudaDeviceProp prop;
	KVS_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
	memset(info, 0, sizeof *info);
	snprintf(info->name, sizeof info->name, "%s", prop.name);
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->sm_count = (uint32_t)prop.multiProcessorCount;
	info->memory_bytes = (uint64_t)prop.totalGlobalMem;
	if (prop.major < 7 || (prop.major == 7 && prop.minor < 5))
		return kvs_fail(KVS_ERR_NO_DEVICE,
				"cuda: %s (sm_%d%d) is older than the compiled "
				"architectures", prop.name, prop.major, prop.minor);
	cudaStream_t s;
	KVS_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	*stream = s;
	return KVS_OK;
}

extern "C" void kvs_cu_close(int device, void *stream)
{
	(void)device;
	if (stream) {
		(void)cudaStreamSynchronize((cudaStream_t)stream);
		(void)cudaStreamDestroy((cudaStream_t)stream);
	}
}

extern "C" kvs_status kvs_cu_malloc(size_t bytes, void **dptr)
{
	void *p = NULL;
	cudaError_t err = cudaMalloc(&p, bytes);
	if (err == cudaErrorMemoryAllocation) {
		(void)cudaGetLastError();
		return kvs_fail(KVS_ERR_NOSPACE, "cuda malloc: %zu bytes: out of "
				"device memory", bytes);
	}
	KVS_CUDA_CHECK(err);
	*dptr = p;
	return KVS_OK;
}

extern "C" void kvs_cu_free(void *dptr)
{
	if (dptr)
		(void)cudaFree(dptr);
}

extern "C" kvs_status kvs_cu_copy(void *stream, void *dst, const void *src,
				  size_t bytes, bool to_device)
{
	cudaStream_t s = (cudaStream_t)stream;
	KVS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes,
				       to_device ? cudaMemcpyHostToDevice
						 : cudaMemcpyDeviceToHost, s));
	KVS_CUDA_CHECK(cudaStreamSynchronize(s));
	return KVS_OK;
}

extern "C" kvs_status kvs_cu_memset(void *stream, void *dst, int byte,
				    size_t bytes)
{
	cudaStream_t s = (cudaStream_t)stream;
	KVS_CUDA_CHECK(cudaMemsetAsync(dst, byte, bytes, s));
	KVS_CUDA_CHECK(cudaStreamSynchronize(s));
	return KVS_OK;
}

extern "C" kvs_status kvs_cu_sync(void *stream)
{
	KVS_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
	KVS_CUDA_CHECK(cudaGetLastError());
	return KVS_OK;
}
