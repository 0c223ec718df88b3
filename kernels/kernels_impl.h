/*
 * kernels_impl.h - private interface between the kernels' host code
 * (kernels_ref.c, kernels_cuda.c: C, always compiled) and the CUDA sources
 * (*.cu: compiled only when the build has CUDA).
 *
 * The C side validates every argument and owns the public API; the kvs_cu_*
 * functions below are thin launchers that assume valid input.  Stream
 * handles travel as void * so that this header needs no CUDA header.
 */
#ifndef KVSIM_KERNELS_IMPL_H
#define KVSIM_KERNELS_IMPL_H

#include "kvsim/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tokens per partition when a plan splits contexts automatically. */
#define KVS_CU_PARTITION_TOKENS 512u
/* Query heads one thread block serves for one kv head; larger GQA groups are
 * split into chunks of this many heads (grid dimension). */
#define KVS_CU_MAX_GROUP 4u

/* Checks shared by the reference and the CUDA paths (kernels_ref.c). */
kvs_status kvs_kv_slots_check(const kvs_kv_layout *layout,
			      const uint64_t *slot_mapping, uint32_t num_tokens);
kvs_status kvs_kv_copies_check(const kvs_kv_layout *layout,
			       const kvs_block_copy *copies, size_t num_copies);
/* Longest context of a checked batch. */
uint32_t kvs_decode_batch_max_len(const kvs_decode_batch *batch);

/* ---- CUDA launchers (the .cu files of kernels/) ---------------------------- */

typedef struct kvs_cu_attn_args {
	kvs_kv_dtype dtype;
	bool paged;
	uint32_t head_dim, block_size, num_kv_heads;
	uint32_t num_seqs, num_q_heads;
	float scale_log2;               /* scale * log2(e): scores in base 2 */
	uint32_t max_blocks_per_seq;    /* table stride; capacity / block_size */
	uint32_t partition_tokens;      /* tokens per partition */
	uint32_t num_partitions;        /* 1: write out directly */
	const uint32_t *context_lens;   /* [num_seqs] device */
	const kvs_block_id *block_tables; /* [num_seqs, max_blocks_per_seq] device */
	void *out;                      /* [num_seqs, num_q_heads, head_dim] */
	const void *query;              /* [num_seqs, num_q_heads, head_dim] */
	const void *k, *v;              /* paged or contiguous caches */
	float *tmp_out;                 /* [num_seqs, num_q_heads, num_partitions, head_dim] */
	float *max_logits;              /* [num_seqs, num_q_heads, num_partitions] */
	float *exp_sums;                /* [num_seqs, num_q_heads, num_partitions] */
	void *stream;
} kvs_cu_attn_args;

kvs_status kvs_cu_device_count(int *count);
kvs_status kvs_cu_open(int device, void **stream, kvs_cuda_device_info *info);
void kvs_cu_close(int device, void *stream);
kvs_status kvs_cu_set_device(int device);
kvs_status kvs_cu_malloc(size_t bytes, void **dptr);
void kvs_cu_free(void *dptr);
/* to_device: host -> device, else device -> host; synchronous. */
kvs_status kvs_cu_copy(void *stream, void *dst, const void *src, size_t bytes,
		       bool to_device);
kvs_status kvs_cu_memset(void *stream, void *dst, int byte, size_t bytes);
kvs_status kvs_cu_sync(void *stream);

kvs_status kvs_cu_attention(const kvs_cu_attn_args *a);
kvs_status kvs_cu_cache_write(void *stream, const kvs_kv_layout *layout,
			      void *k_cache, void *v_cache, const void *key,
			      const void *value, const uint64_t *d_slots,
			      uint32_t num_tokens);
kvs_status kvs_cu_block_copy(void *stream, const kvs_kv_layout *layout,
			     void *k_cache, void *v_cache,
			     const kvs_block_copy *d_copies, size_t num_copies);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_KERNELS_IMPL_H */
