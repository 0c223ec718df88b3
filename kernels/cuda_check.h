/*
 * cuda_check.h - the one CUDA checking macro.  Every CUDA runtime call and
 * every kernel launch (through cudaGetLastError) goes through
 * KVS_CUDA_CHECK, which returns KVS_ERR_CUDA from the enclosing function with
 * the failing call, its file and line and CUDA's own error name and text:
 *
 *   kernels/attention.cu:512: cudaGetLastError(): invalid argument
 *   (cudaErrorInvalidValue)
 *
 * Only for .cu files (needs cuda_runtime.h).
 */
#ifndef KVSIM_CUDA_CHECK_H
#define KVSIM_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "kernels_impl.h"

static inline kvs_status kvs_cuda_fail_(cudaError_t err, const char *call,
					const char *file, int line)
{
	(void)cudaGetLastError();   /* clear a non-sticky error for later calls */
	return kvs_fail(KVS_ERR_CUDA, "%s:%d: %s: %s (%s)", file, line, call,
			cudaGetErrorString(err), cudaGetErrorName(err));
}

#define KVS_CUDA_CHECK(call)                                                   \
	do {                                                                   \
		cudaError_t kvs_err_ = (call);                                 \
		if (kvs_err_ != cudaSuccess)                                   \
			return kvs_cuda_fail_(kvs_err_, #call, __FILE__,       \
					      __LINE__);                       \
	} while (0)

#endif /* KVSIM_CUDA_CHECK_H */
