/*
 * cache_ops.cu - cache write (scatter new K/V rows into their slots) and
 * block copy (whole blocks within one cache).  Both are pure data movement:
 * they copy raw words of the widest size that divides every row and every
 * pointer (16, 8, 4 or 2 bytes), so they take any layout and element type.
 * Arguments were checked by kernels_cuda.c.
 */
#include "cuda_check.h"

#include <stdint.h>

namespace {

constexpr int kThreads = 128;
constexpr unsigned kMaxGrid = 65535;

/* One thread block per token (grid-stride), threads over heads x words. */
template <typename W>
__global__ void __launch_bounds__(kThreads)
cache_write_kernel(W *__restrict__ k_cache,        // [num_blocks, kv_heads, block_size, row]
		   W *__restrict__ v_cache,        // [num_blocks, kv_heads, block_size, row]
		   const W *__restrict__ key,      // [num_tokens, kv_heads, row]
		   const W *__restrict__ value,    // [num_tokens, kv_heads, row]
		   const uint64_t *__restrict__ slots, // [num_tokens]
		   uint32_t num_tokens, uint32_t kv_heads, uint32_t block_size,
		   uint32_t row)                   // words per head row
{
	const uint32_t per_token = kv_heads * row;
	for (uint32_t t = blockIdx.x; t < num_tokens; t += gridDim.x) {
		const uint64_t slot = slots[t];
		if (slot == KVS_SLOT_NONE)
			continue;
		const uint64_t block = slot / block_size, off = slot % block_size;
		for (uint32_t i = threadIdx.x; i < per_token; i += blockDim.x) {
			const uint32_t h = i / row, w = i % row;
			const size_t src = (size_t)t * per_token + i;
			const size_t dst = ((block * kv_heads + h) * block_size + off) *
					   row + w;
			k_cache[dst] = key[src];
			v_cache[dst] = value[src];
		}
	}
}

/* One thread block per (copy, tensor): blockIdx.y 0 is K, 1 is V. */
template <typename W>
__global__ void __launch_bounds__(kThreads)
block_copy_kernel(W *__restrict__ k_cache,         // [num_blocks, block_words]
		  W *__restrict__ v_cache,         // [num_blocks, block_words]
		  const kvs_block_copy *__restrict__ copies, // [num_copies]
		  uint32_t num_copies, uint64_t block_words)
{
	W *cache = blockIdx.y == 0 ? k_cache : v_cache;
	for (uint32_t c = blockIdx.x; c < num_copies; c += gridDim.x) {
		const W *src = cache + (size_t)copies[c].src * block_words;
		W *dst = cache + (size_t)copies[c].dst * block_words;
		for (uint64_t i = threadIdx.x; i < block_words; i += blockDim.x)
			dst[i] = src[i];
	}
}

/* Widest word (16, 8, 4, 2) dividing `bytes` and every pointer. */
unsigned word_size(uint64_t bytes, const void *const *ptrs, int n)
{
	for (unsigned w = 16; w > 2; w /= 2) {
		bool ok = bytes % w == 0;
		for (int i = 0; ok && i < n; i++)
			ok = (uintptr_t)ptrs[i] % w == 0;
		if (ok)
			return w;
	}
	return 2;
}

template <typename W>
kvs_status cache_write(cudaStream_t s, const kvs_kv_layout *L, void *k,
		       void *v, const void *key, const void *value,
		       const uint64_t *slots, uint32_t n, unsigned wbytes)
{
	const uint32_t row = (uint32_t)(L->head_dim * kvs_kv_dtype_size(L->dtype) /
					wbytes);
	const unsigned grid = n < kMaxGrid ? n : kMaxGrid;
	cache_write_kernel<W><<<grid, kThreads, 0, s>>>(
		(W *)k, (W *)v, (const W *)key, (const W *)value, slots, n,
		L->num_kv_heads, L->block_size, row);
	KVS_CUDA_CHECK(cudaGetLastError());
	return KVS_OK;
}

template <typename W>
kvs_status block_copy(cudaStream_t s, const kvs_kv_layout *L, void *k,
		      void *v, const kvs_block_copy *copies, uint32_t n,
		      unsigned wbytes)
{
	const dim3 grid(n < kMaxGrid ? n : kMaxGrid, 2);
	block_copy_kernel<W><<<grid, kThreads, 0, s>>>(
		(W *)k, (W *)v, copies, n, kvs_kv_block_bytes(L) / wbytes);
	KVS_CUDA_CHECK(cudaGetLastError());
	return KVS_OK;
}

} // namespace

extern "C" kvs_status kvs_cu_cache_write(void *stream, const kvs_kv_layout *L,
					 void *k_cache, void *v_cache,
					 const void *key, const void *value,
					 const uint64_t *d_slots,
					 uint32_t num_tokens)
{
	cudaStream_t s = (cudaStream_t)stream;
	const void *ptrs[] = { k_cache, v_cache, key, value };
	const unsigned w = word_size(L->head_dim * kvs_kv_dtype_size(L->dtype), ptrs, 4);
	switch (w) {
	case 16: return cache_write<uint4>(s, L, k_cache, v_cache, key, value, d_slots, num_tokens, w);
	case 8: return cache_write<uint2>(s, L, k_cache, v_cache, key, value, d_slots, num_tokens, w);
	case 4: return cache_write<uint32_t>(s, L, k_cache, v_cache, key, value, d_slots, num_tokens, w);
	default: return cache_write<uint16_t>(s, L, k_cache, v_cache, key, value, d_slots, num_tokens, w);
	}
}

extern "C" kvs_status kvs_cu_block_copy(void *stream, const kvs_kv_layout *L,
					void *k_cache, void *v_cache,
					const kvs_block_copy *d_copies,
					size_t num_copies)
{
	cudaStream_t s = (cudaStream_t)stream;
	const void *ptrs[] = { k_cache, v_cache };
	const unsigned w = word_size(kvs_kv_block_bytes(L), ptrs, 2);
	const uint32_t n = (uint32_t)num_copies;
	switch (w) {
	case 16: return block_copy<uint4>(s, L, k_cache, v_cache, d_copies, n, w);
	case 8: return block_copy<uint2>(s, L, k_cache, v_cache, d_copies, n, w);
	case 4: return block_copy<uint32_t>(s, L, k_cache, v_cache, d_copies, n, w);
	default: return block_copy<uint16_t>(s, L, k_cache, v_cache, d_copies, n, w);
	}
}
