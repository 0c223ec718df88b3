/*
 * kvsim/kernels.h - the paged KV cache layout and the kernels that read and
 * write it: cache write, paged-attention decode, block copy and a contiguous
 * attention baseline, each as a plain C reference (always built, the oracle)
 * and as CUDA (built when nvcc is found, run when a device is present).
 *
 * ---- The paged KV cache layout (one layer) --------------------------------
 *
 *   k_cache, v_cache: [num_blocks, num_kv_heads, block_size, head_dim]
 *
 * two separate tensors of the same shape and element type, row-major, the
 * head dimension innermost.  The element of token slot `slot`, kv head `h`,
 * dimension `d` lives at index
 *
 *   ((block * num_kv_heads + h) * block_size + offset) * head_dim + d,
 *   block = slot / block_size,  offset = slot % block_size,
 *
 * so slot = block * block_size + offset: exactly the slot kvs_alloc_slot()
 * returns for a token position.  One block of one head is a dense
 * [block_size, head_dim] tile, so a warp reads whole rows of head_dim
 * elements and a block copy is one contiguous run of
 * num_kv_heads * block_size * head_dim elements per tensor.
 *
 * A sequence's block table is a row of kvs_block_id (uint32): entry i is the
 * physical block that holds its tokens [i * block_size, (i + 1) * block_size).
 * Tables of a batch are padded rows of one stride:
 *
 *   block_tables: [num_seqs, max_blocks_per_seq]   (only the first
 *                 ceil(context_len / block_size) entries of a row are read)
 *
 * Contiguous baseline: the same sequences stored without a block table, each
 * in a dense region of capacity = max_blocks_per_seq * block_size tokens (the
 * tokens the block table could address, as a max-length reservation holds):
 *
 *   k, v: [num_seqs, num_kv_heads, capacity, head_dim]
 *
 * Query and output of a decode step (one new token per sequence), and the
 * new keys and values of a cache write:
 *
 *   query, out:  [num_seqs, num_q_heads, head_dim]
 *   key, value:  [num_tokens, num_kv_heads, head_dim]
 *
 * Query head q reads kv head q / (num_q_heads / num_kv_heads) (grouped-query
 * attention; num_q_heads is a multiple of num_kv_heads).  Query, output, key,
 * value and caches all have the layout's element type; arithmetic is FP32 on
 * the GPU and FP64 in the reference.
 *
 * ---- Who validates what ----------------------------------------------------
 *
 * Tensors (caches, query, key, value, out) are pointers the caller sized from
 * the shapes above: host memory for kvs_ref_*, device memory for kvs_cuda_*.
 * Metadata (block tables, context lengths, slot mappings, copy lists) is
 * always passed as host arrays and validated at the boundary: shapes, ids
 * below num_blocks, lengths within their tables.  The CUDA entry points
 * upload metadata themselves (the decode plan once, then every run reuses
 * it), so kernels never see an unchecked id.  Every call returns a kvs_status
 * and records a message naming the argument (and its index) on failure.
 */
#ifndef KVSIM_KERNELS_H
#define KVSIM_KERNELS_H

#include "kvsim/alloc.h"
#include "kvsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- element types -------------------------------------------------------- */

typedef enum kvs_kv_dtype {
	KVS_KV_F32 = 0,   /* IEEE binary32 */
	KVS_KV_F16,       /* IEEE binary16, stored as uint16_t bits */
	KVS_KV_BF16,      /* bfloat16, stored as uint16_t bits */
	KVS_KV_DTYPE_COUNT_
} kvs_kv_dtype;

/* "f32", "f16", "bf16"; NULL for an unknown value. */
const char *kvs_kv_dtype_name(kvs_kv_dtype dt);
/* Accepts the names above and "fp32"/"float32", "fp16"/"float16"/"half",
 * "bfloat16". */
kvs_status kvs_kv_dtype_parse(const char *text, kvs_kv_dtype *out);
/* Bytes per element (4 or 2); 0 for an unknown value. */
size_t kvs_kv_dtype_size(kvs_kv_dtype dt);

/* Conversions with round-to-nearest-even, the rounding CUDA's __float2half_rn
 * and __float2bfloat16_rn use; NaN stays NaN, overflow goes to infinity. */
uint16_t kvs_f16_from_f32(float x);
float kvs_f32_from_f16(uint16_t h);
uint16_t kvs_bf16_from_f32(float x);
float kvs_f32_from_bf16(uint16_t h);

/* dst[i] = src[i] converted to dt (dst holds n elements of dt). */
void kvs_kv_from_f32(kvs_kv_dtype dt, void *dst, const float *src, size_t n);
/* dst[i] = src[i] (n elements of dt) converted to float. */
void kvs_kv_to_f32(kvs_kv_dtype dt, float *dst, const void *src, size_t n);

/* ---- layout ----------------------------------------------------------------- */

#define KVS_SLOT_NONE UINT64_MAX   /* slot mapping entry: do not write (padding) */

typedef struct kvs_kv_layout {
	kvs_kv_dtype dtype;
	uint32_t num_blocks;     /* physical blocks in the pool (>= 1) */
	uint32_t block_size;     /* tokens per block (>= 1) */
	uint32_t num_kv_heads;   /* kv heads of this layer on this rank (>= 1) */
	uint32_t head_dim;       /* elements per head (>= 1) */
} kvs_kv_layout;

/* KVS_OK if every field is in range and one cache tensor's size fits in 64
 * bits (and in size_t); otherwise KVS_ERR_INVALID / KVS_ERR_OVERFLOW with a
 * message naming the field. */
kvs_status kvs_kv_layout_check(const kvs_kv_layout *layout);

/* Bytes of ONE of the two cache tensors (K or V): num_blocks * num_kv_heads
 * * block_size * head_dim * element size.  Checked like kvs_kv_layout_check. */
kvs_status kvs_kv_cache_bytes(const kvs_kv_layout *layout, uint64_t *bytes);

/* Bytes of one block of one tensor: num_kv_heads * block_size * head_dim *
 * element size (the unit a block copy moves, per tensor). */
uint64_t kvs_kv_block_bytes(const kvs_kv_layout *layout);

/* Element index of (slot, kv head, dim 0) in a cache tensor (see top). */
static inline uint64_t kvs_kv_slot_index(const kvs_kv_layout *layout,
					 uint64_t slot, uint32_t head)
{
	uint64_t block = slot / layout->block_size;
	uint64_t offset = slot % layout->block_size;
	return ((block * layout->num_kv_heads + head) * layout->block_size +
		offset) * layout->head_dim;
}

/* ---- one decode step ----------------------------------------------------- */

typedef struct kvs_decode_batch {
	uint32_t num_seqs;              /* sequences, one query token each (>= 1) */
	uint32_t num_q_heads;           /* multiple of the layout's num_kv_heads */
	float scale;                    /* softmax scale, finite and > 0
	                                 * (usually 1 / sqrt(head_dim)) */
	const uint32_t *context_lens;   /* [num_seqs] tokens attended, >= 1 and
	                                 * <= max_blocks_per_seq * block_size;
	                                 * host memory */
	const kvs_block_id *block_tables; /* [num_seqs, max_blocks_per_seq] host
	                                 * memory; paged kernels only (NULL for
	                                 * contiguous) */
	uint32_t max_blocks_per_seq;    /* row stride of block_tables; contiguous
	                                 * capacity is this * block_size tokens */
	uint32_t partition_tokens;      /* split each context into partitions of
	                                 * this many tokens, computed apart and
	                                 * merged (flash-decoding); 0 = reference:
	                                 * one pass, CUDA: automatic */
} kvs_decode_batch;

/* Validate a batch against a layout.  paged: block_tables must be given and
 * the first ceil(len / block_size) entries of every row must be below
 * num_blocks.  Costs O(sum of blocks read). */
kvs_status kvs_decode_batch_check(const kvs_kv_layout *layout,
				  const kvs_decode_batch *batch, bool paged);

/* ---- C reference (host memory; any block size and head dim) ---------------- */

/* Scatter num_tokens new keys and values into their slots:
 * k_cache[slot_mapping[t]] = key[t] for every kv head (and the same for V).
 * slot_mapping[t] == KVS_SLOT_NONE skips token t; any other slot must lie
 * below num_blocks * block_size, and no slot may appear twice.
 *   k_cache, v_cache: [num_blocks, num_kv_heads, block_size, head_dim]
 *   key, value:       [num_tokens, num_kv_heads, head_dim]
 *   slot_mapping:     [num_tokens]                                     */
kvs_status kvs_ref_cache_write(const kvs_kv_layout *layout,
			       void *k_cache, void *v_cache,
			       const void *key, const void *value,
			       const uint64_t *slot_mapping, uint32_t num_tokens);

/* Decode attention through block tables:
 *   out[s][q] = sum_t softmax_t(scale * query[s][q] . K[s][t]) V[s][t]
 * over the batch's context_lens[s] tokens, with a numerically stable online
 * softmax; with batch->partition_tokens > 0 each partition keeps its own
 * (max, sum, output) and the partitions are merged as the CUDA kernel does.
 *   out, query:       [num_seqs, num_q_heads, head_dim]
 *   k_cache, v_cache: [num_blocks, num_kv_heads, block_size, head_dim]
 * Cost: O(sum(context_lens) * num_q_heads * head_dim). */
kvs_status kvs_ref_paged_attention(const kvs_kv_layout *layout,
				   const kvs_decode_batch *batch, void *out,
				   const void *query, const void *k_cache,
				   const void *v_cache);

/* The same attention over contiguous K and V (layout->num_blocks is not
 * used; batch->block_tables is ignored).
 *   out, query: [num_seqs, num_q_heads, head_dim]
 *   k, v:       [num_seqs, num_kv_heads, capacity, head_dim]            */
kvs_status kvs_ref_contiguous_attention(const kvs_kv_layout *layout,
					const kvs_decode_batch *batch,
					void *out, const void *query,
					const void *k, const void *v);

/* Copy whole blocks (all kv heads, K and V) within one cache: block
 * copies[i].dst becomes a copy of block copies[i].src; nothing else changes.
 * Ids must be below num_blocks, destinations distinct, and no destination
 * may also be a source (the copies are then order-independent, as the
 * parallel CUDA kernel needs).  kvs_alloc_grow's copy-on-write list and
 * compaction plans have this form.
 *   k_cache, v_cache: [num_blocks, num_kv_heads, block_size, head_dim]
 *   copies:           [num_copies]                                      */
kvs_status kvs_ref_block_copy(const kvs_kv_layout *layout, void *k_cache,
			      void *v_cache, const kvs_block_copy *copies,
			      size_t num_copies);

/* ---- CUDA ---------------------------------------------------------------
 * Built when meson finds nvcc (-Dcuda=auto|enabled).  Without CUDA in the
 * build every call returns KVS_ERR_UNSUPPORTED; with it but no usable device
 * kvs_cuda_create returns KVS_ERR_NO_DEVICE.  Compiled shapes: head_dim 64
 * or 128, block_size 8, 16, 32 or 64, chosen at run time;
 * kvs_cuda_shape_supported says whether a layout is one of them.  Tensors
 * are device pointers from kvs_cuda_malloc; calls are ordered on the
 * context's stream and asynchronous unless they say otherwise.  A context
 * is used by one thread at a time.
 */
typedef struct kvs_cuda_ctx kvs_cuda_ctx;
typedef struct kvs_cuda_plan kvs_cuda_plan;

typedef struct kvs_cuda_device_info {
	char name[256];             /* "NVIDIA H200" */
	int cc_major, cc_minor;     /* compute capability */
	uint32_t sm_count;          /* streaming multiprocessors */
	uint64_t memory_bytes;      /* global memory */
} kvs_cuda_device_info;

/* Usable CUDA devices (>= 1) in *count; KVS_ERR_NO_DEVICE (no device or no
 * driver) or KVS_ERR_UNSUPPORTED (built without CUDA) otherwise. */
kvs_status kvs_cuda_device_count(int *count);

/* Context on device `device` (0-based) with its own stream. */
kvs_status kvs_cuda_create(int device, kvs_cuda_ctx **out);
void kvs_cuda_destroy(kvs_cuda_ctx *ctx);
kvs_status kvs_cuda_get_info(const kvs_cuda_ctx *ctx,
			     kvs_cuda_device_info *info);

/* KVS_OK if the layout's head_dim and block_size are compiled in, else
 * KVS_ERR_UNSUPPORTED naming what is missing.  Cache write and block copy
 * take any layout; attention needs this. */
kvs_status kvs_cuda_shape_supported(const kvs_kv_layout *layout);

/* Device memory.  upload / download / memset are synchronous. */
kvs_status kvs_cuda_malloc(kvs_cuda_ctx *ctx, size_t bytes, void **dptr);
void kvs_cuda_free(kvs_cuda_ctx *ctx, void *dptr);
kvs_status kvs_cuda_upload(kvs_cuda_ctx *ctx, void *dst, const void *src,
			   size_t bytes);
kvs_status kvs_cuda_download(kvs_cuda_ctx *ctx, void *dst, const void *src,
			     size_t bytes);
kvs_status kvs_cuda_memset(kvs_cuda_ctx *ctx, void *dst, int byte,
			   size_t bytes);
/* Wait for all work queued on the context's stream; reports the first
 * asynchronous kernel failure. */
kvs_status kvs_cuda_sync(kvs_cuda_ctx *ctx);

/* kvs_ref_cache_write on the device.  slot_mapping is a HOST array, checked
 * and uploaded by the call (one small copy per call).
 *   k_cache, v_cache: [num_blocks, num_kv_heads, block_size, head_dim] device
 *   key, value:       [num_tokens, num_kv_heads, head_dim] device          */
kvs_status kvs_cuda_cache_write(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
				void *k_cache, void *v_cache, const void *key,
				const void *value, const uint64_t *slot_mapping,
				uint32_t num_tokens);

/* kvs_ref_block_copy on the device; copies is a HOST array, checked and
 * uploaded by the call.  One thread block per (copy, tensor). */
kvs_status kvs_cuda_block_copy(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
			       void *k_cache, void *v_cache,
			       const kvs_block_copy *copies, size_t num_copies);

/* A decode plan: the batch checked once (kvs_decode_batch_check), its
 * context lengths and block tables uploaded, the partition count chosen and
 * the partition scratch allocated.  Run it any number of times.  With
 * partition_tokens 0 the plan splits contexts into 512-token partitions
 * when the longest context is longer than that, and runs one pass
 * otherwise.  The batch's host arrays are not kept. */
kvs_status kvs_cuda_plan_create(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
				const kvs_decode_batch *batch, bool paged,
				kvs_cuda_plan **out);
void kvs_cuda_plan_destroy(kvs_cuda_plan *plan);
/* Partitions per sequence the plan launches (1 = single pass). */
uint32_t kvs_cuda_plan_partitions(const kvs_cuda_plan *plan);

/* Paged decode attention (plan made with paged = true).
 *   out, query:       [num_seqs, num_q_heads, head_dim] device
 *   k_cache, v_cache: [num_blocks, num_kv_heads, block_size, head_dim] device */
kvs_status kvs_cuda_paged_attention(kvs_cuda_plan *plan, void *out,
				    const void *query, const void *k_cache,
				    const void *v_cache);

/* Contiguous decode attention (plan made with paged = false): same kernel
 * and math, K/V rows addressed directly.
 *   out, query: [num_seqs, num_q_heads, head_dim] device
 *   k, v:       [num_seqs, num_kv_heads, capacity, head_dim] device       */
kvs_status kvs_cuda_contiguous_attention(kvs_cuda_plan *plan, void *out,
					 const void *query, const void *k,
					 const void *v);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_KERNELS_H */
