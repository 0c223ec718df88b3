/*
 * kernels_cuda.c - the public kvs_cuda_* API: argument checks, contexts,
 * decode plans and metadata uploads.  Compiled in every build: without CUDA
 * (KVS_HAVE_CUDA == 0) each call returns KVS_ERR_UNSUPPORTED, so callers and
 * tests link the same symbols everywhere.  The device work itself is in the
 * kvs_cu_* launchers of the .cu files, which assume checked arguments.
 *
 * Ownership: a context owns its stream and a grow-only device scratch buffer
 * for per-call metadata (slot mappings, copy lists).  Reuse of that buffer
 * is safe because uploads and kernels are ordered on the one stream.  A plan
 * owns its uploaded context lengths, block tables and partition scratch.
 */
#include "kvs_config.h"
#include "kernels_impl.h"

#include <math.h>
#include <string.h>

#if KVS_HAVE_CUDA

struct kvs_cuda_ctx {
	int device;
	void *stream;                 /* cudaStream_t */
	kvs_cuda_device_info info;
	void *scratch;                /* device, grow-only */
	size_t scratch_bytes;
};

struct kvs_cuda_plan {
	kvs_cuda_ctx *ctx;
	kvs_kv_layout layout;
	bool paged;
	uint32_t num_seqs, num_q_heads, max_blocks_per_seq;
	float scale;
	uint32_t partition_tokens, num_partitions;
	uint32_t *d_context_lens;     /* [num_seqs] */
	kvs_block_id *d_block_tables; /* [num_seqs, max_blocks_per_seq] */
	float *d_tmp_out;             /* [num_seqs, num_q_heads, parts, head_dim] */
	float *d_max_logits;          /* [num_seqs, num_q_heads, parts] */
	float *d_exp_sums;            /* [num_seqs, num_q_heads, parts] */
};

kvs_status kvs_cuda_device_count(int *count)
{
	if (!count)
		return kvs_fail(KVS_ERR_INVALID, "cuda: count: NULL");
	return kvs_cu_device_count(count);
}

kvs_status kvs_cuda_create(int device, kvs_cuda_ctx **out)
{
	if (!out)
		return kvs_fail(KVS_ERR_INVALID, "cuda: out: NULL");
	int count = 0;
	kvs_status st = kvs_cu_device_count(&count);
	if (st != KVS_OK)
		return st;
	if (device < 0 || device >= count)
		return kvs_fail(KVS_ERR_INVALID,
				"cuda: device %d: only devices 0..%d exist",
				device, count - 1);
	kvs_cuda_ctx *ctx = kvs_calloc(1, sizeof *ctx);
	if (!ctx)
		return kvs_fail(KVS_ERR_NOMEM, "cuda: context");
	ctx->device = device;
	st = kvs_cu_open(device, &ctx->stream, &ctx->info);
	if (st != KVS_OK) {
		kvs_free(ctx);
		return st;
	}
	*out = ctx;
	return KVS_OK;
}

void kvs_cuda_destroy(kvs_cuda_ctx *ctx)
{
	if (!ctx)
		return;
	if (kvs_cu_set_device(ctx->device) == KVS_OK) {
		kvs_cu_free(ctx->scratch);
		kvs_cu_close(ctx->device, ctx->stream);
	}
	kvs_free(ctx);
}

kvs_status kvs_cuda_get_info(const kvs_cuda_ctx *ctx, kvs_cuda_device_info *info)
{
	if (!ctx || !info)
		return kvs_fail(KVS_ERR_INVALID, "cuda: NULL %s", !ctx ? "ctx" : "info");
	*info = ctx->info;
	return KVS_OK;
}

static kvs_status enter(const kvs_cuda_ctx *ctx, const char *what)
{
	if (!ctx)
		return kvs_fail(KVS_ERR_INVALID, "%s: ctx: NULL", what);
	return kvs_cu_set_device(ctx->device);
}

kvs_status kvs_cuda_malloc(kvs_cuda_ctx *ctx, size_t bytes, void **dptr)
{
	kvs_status st = enter(ctx, "cuda malloc");
	if (st != KVS_OK)
		return st;
	if (!dptr || bytes == 0)
		return kvs_fail(KVS_ERR_INVALID, "cuda malloc: %s",
				!dptr ? "dptr: NULL" : "bytes: must be at least 1");
	return kvs_cu_malloc(bytes, dptr);
}

void kvs_cuda_free(kvs_cuda_ctx *ctx, void *dptr)
{
	if (ctx && dptr && kvs_cu_set_device(ctx->device) == KVS_OK)
		kvs_cu_free(dptr);
}

kvs_status kvs_cuda_upload(kvs_cuda_ctx *ctx, void *dst, const void *src,
			   size_t bytes)
{
	kvs_status st = enter(ctx, "cuda upload");
	if (st != KVS_OK || bytes == 0)
		return st;
	if (!dst || !src)
		return kvs_fail(KVS_ERR_INVALID, "cuda upload: NULL %s", !dst ? "dst" : "src");
	return kvs_cu_copy(ctx->stream, dst, src, bytes, true);
}

kvs_status kvs_cuda_download(kvs_cuda_ctx *ctx, void *dst, const void *src,
			     size_t bytes)
{
	kvs_status st = enter(ctx, "cuda download");
	if (st != KVS_OK || bytes == 0)
		return st;
	if (!dst || !src)
		return kvs_fail(KVS_ERR_INVALID, "cuda download: NULL %s", !dst ? "dst" : "src");
	return kvs_cu_copy(ctx->stream, dst, src, bytes, false);
}

kvs_status kvs_cuda_memset(kvs_cuda_ctx *ctx, void *dst, int byte, size_t bytes)
{
	kvs_status st = enter(ctx, "cuda memset");
	if (st != KVS_OK || bytes == 0)
		return st;
	if (!dst)
		return kvs_fail(KVS_ERR_INVALID, "cuda memset: dst: NULL");
	return kvs_cu_memset(ctx->stream, dst, byte, bytes);
}

kvs_status kvs_cuda_sync(kvs_cuda_ctx *ctx)
{
	kvs_status st = enter(ctx, "cuda sync");
	if (st != KVS_OK)
		return st;
	return kvs_cu_sync(ctx->stream);
}

/* Device scratch of at least `bytes`, holding a copy of host `src`. */
static kvs_status upload_scratch(kvs_cuda_ctx *ctx, const void *src,
				 size_t bytes, void **dptr)
{
	if (bytes > ctx->scratch_bytes) {
		size_t want = bytes < 4096 ? 4096 : bytes;
		void *p = NULL;
		kvs_status st = kvs_cu_malloc(want, &p);
		if (st != KVS_OK)
			return st;
		kvs_cu_free(ctx->scratch);   /* waits for kernels still using it */
		ctx->scratch = p;
		ctx->scratch_bytes = want;
	}
	*dptr = ctx->scratch;
	return kvs_cu_copy(ctx->stream, ctx->scratch, src, bytes, true);
}

#endif /* KVS_HAVE_CUDA */

kvs_status kvs_cuda_shape_supported(const kvs_kv_layout *layout)
{
	kvs_status st = kvs_kv_layout_check(layout);
	if (st != KVS_OK)
		return st;
	if (!KVS_HAVE_CUDA)
		return kvs_fail(KVS_ERR_UNSUPPORTED, "cuda: this build has no CUDA kernels");
	if (layout->head_dim != 64 && layout->head_dim != 128)
		return kvs_fail(KVS_ERR_UNSUPPORTED,
				"cuda attention: head_dim %u not compiled in (64, 128)",
				layout->head_dim);
	switch (layout->block_size) {
	case 8: case 16: case 32: case 64:
		return KVS_OK;
	default:
		return kvs_fail(KVS_ERR_UNSUPPORTED,
				"cuda attention: block_size %u not compiled in "
				"(8, 16, 32, 64)", layout->block_size);
	}
}

#if KVS_HAVE_CUDA

kvs_status kvs_cuda_cache_write(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
				void *k_cache, void *v_cache, const void *key,
				const void *value, const uint64_t *slot_mapping,
				uint32_t num_tokens)
{
	kvs_status st = enter(ctx, "cache write");
	if (st != KVS_OK)
		return st;
	st = kvs_kv_slots_check(layout, slot_mapping, num_tokens);
	if (st != KVS_OK || num_tokens == 0)
		return st;
	if (!k_cache || !v_cache || !key || !value)
		return kvs_fail(KVS_ERR_INVALID, "cache write: NULL %s",
				!k_cache ? "k_cache" : !v_cache ? "v_cache" :
				!key ? "key" : "value");
	void *d_slots;
	st = upload_scratch(ctx, slot_mapping, (size_t)num_tokens * sizeof(uint64_t),
			    &d_slots);
	if (st != KVS_OK)
		return st;
	return kvs_cu_cache_write(ctx->stream, layout, k_cache, v_cache, key,
				  value, d_slots, num_tokens);
}

kvs_status kvs_cuda_block_copy(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
			       void *k_cache, void *v_cache,
			       const kvs_block_copy *copies, size_t num_copies)
{
	kvs_status st = enter(ctx, "block copy");
	if (st != KVS_OK)
		return st;
	st = kvs_kv_copies_check(layout, copies, num_copies);
	if (st != KVS_OK || num_copies == 0)
		return st;
	if (!k_cache || !v_cache)
		return kvs_fail(KVS_ERR_INVALID, "block copy: NULL %s",
				!k_cache ? "k_cache" : "v_cache");
	if (num_copies > UINT32_MAX / 2)
		return kvs_fail(KVS_ERR_LIMIT, "block copy: %zu copies: at most %u "
				"per call", num_copies, UINT32_MAX / 2);
	void *d_copies;
	st = upload_scratch(ctx, copies, num_copies * sizeof *copies, &d_copies);
	if (st != KVS_OK)
		return st;
	return kvs_cu_block_copy(ctx->stream, layout, k_cache, v_cache, d_copies,
				 num_copies);
}

void kvs_cuda_plan_destroy(kvs_cuda_plan *plan)
{
	if (!plan)
		return;
	if (kvs_cu_set_device(plan->ctx->device) == KVS_OK) {
		kvs_cu_free(plan->d_context_lens);
		kvs_cu_free(plan->d_block_tables);
		kvs_cu_free(plan->d_tmp_out);
		kvs_cu_free(plan->d_max_logits);
		kvs_cu_free(plan->d_exp_sums);
	}
	kvs_free(plan);
}

static kvs_status plan_alloc(kvs_cuda_plan *p, uint64_t bytes, void **dptr,
			     const void *src)
{
	kvs_status st = kvs_cu_malloc((size_t)bytes, dptr);
	if (st == KVS_OK && src)
		st = kvs_cu_copy(p->ctx->stream, *dptr, src, (size_t)bytes, true);
	return st;
}

kvs_status kvs_cuda_plan_create(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
				const kvs_decode_batch *batch, bool paged,
				kvs_cuda_plan **out)
{
	kvs_status st = enter(ctx, "decode plan");
	if (st != KVS_OK)
		return st;
	if (!out)
		return kvs_fail(KVS_ERR_INVALID, "decode plan: out: NULL");
	if (!layout)
		return kvs_fail(KVS_ERR_INVALID, "kv layout: NULL");
	kvs_kv_layout L = *layout;
	if (!paged)
		L.num_blocks = 1;    /* no pool behind a contiguous batch */
	st = kvs_decode_batch_check(&L, batch, paged);
	if (st == KVS_OK)
		st = kvs_cuda_shape_supported(&L);
	if (st != KVS_OK)
		return st;
	if (batch->num_seqs > 65535u)
		return kvs_fail(KVS_ERR_LIMIT, "decode plan: num_seqs = %u: at most "
				"65535 per launch", batch->num_seqs);

	uint32_t max_len = kvs_decode_batch_max_len(batch);
	uint32_t part = batch->partition_tokens;
	if (part == 0)
		part = max_len > KVS_CU_PARTITION_TOKENS ? KVS_CU_PARTITION_TOKENS
							 : max_len;
	uint32_t parts = (uint32_t)kvs_div_ceil(max_len, part);
	if (parts > 65535u)
		return kvs_fail(KVS_ERR_LIMIT, "decode plan: %u partitions of %u "
				"tokens: at most 65535", parts, part);

	kvs_cuda_plan *p = kvs_calloc(1, sizeof *p);
	if (!p)
		return kvs_fail(KVS_ERR_NOMEM, "decode plan");
	p->ctx = ctx;
	p->layout = L;
	p->paged = paged;
	p->num_seqs = batch->num_seqs;
	p->num_q_heads = batch->num_q_heads;
	p->max_blocks_per_seq = batch->max_blocks_per_seq;
	p->scale = batch->scale;
	p->partition_tokens = part;
	p->num_partitions = parts;

	uint64_t n = batch->num_seqs;
	st = plan_alloc(p, n * sizeof(uint32_t), (void **)&p->d_context_lens,
			batch->context_lens);
	if (st == KVS_OK && paged)
		st = plan_alloc(p, n * batch->max_blocks_per_seq * sizeof(kvs_block_id),
				(void **)&p->d_block_tables, batch->block_tables);
	if (st == KVS_OK && parts > 1) {
		uint64_t rows = n * batch->num_q_heads * parts;
		st = plan_alloc(p, rows * L.head_dim * sizeof(float),
				(void **)&p->d_tmp_out, NULL);
		if (st == KVS_OK)
			st = plan_alloc(p, rows * sizeof(float),
					(void **)&p->d_max_logits, NULL);
		if (st == KVS_OK)
			st = plan_alloc(p, rows * sizeof(float),
					(void **)&p->d_exp_sums, NULL);
	}
	if (st != KVS_OK) {
		kvs_cuda_plan_destroy(p);
		return st;
	}
	*out = p;
	return KVS_OK;
}

uint32_t kvs_cuda_plan_partitions(const kvs_cuda_plan *plan)
{
	return plan ? plan->num_partitions : 0;
}

static kvs_status run_plan(kvs_cuda_plan *p, bool paged, void *out,
			   const void *query, const void *k, const void *v)
{
	const char *what = paged ? "paged attention" : "contiguous attention";
	if (!p)
		return kvs_fail(KVS_ERR_INVALID, "%s: plan: NULL", what);
	if (p->paged != paged)
		return kvs_fail(KVS_ERR_INVALID, "%s: the plan was made for %s "
				"attention", what, p->paged ? "paged" : "contiguous");
	if (!out || !query || !k || !v)
		return kvs_fail(KVS_ERR_INVALID, "%s: NULL %s", what,
				!out ? "out" : !query ? "query" : !k ? "k" : "v");
	const void *ptrs[] = { out, query, k, v };
	static const char *const names[] = { "out", "query", "k", "v" };
	for (size_t i = 0; i < KVS_ARRAY_LEN(ptrs); i++)
		if ((uintptr_t)ptrs[i] % 16 != 0)
			return kvs_fail(KVS_ERR_INVALID, "%s: %s: device pointer "
					"must be 16-byte aligned", what, names[i]);
	kvs_status st = kvs_cu_set_device(p->ctx->device);
	if (st != KVS_OK)
		return st;
	kvs_cu_attn_args a = {
		.dtype = p->layout.dtype,
		.paged = paged,
		.head_dim = p->layout.head_dim,
		.block_size = p->layout.block_size,
		.num_kv_heads = p->layout.num_kv_heads,
		.num_seqs = p->num_seqs,
		.num_q_heads = p->num_q_heads,
		.scale_log2 = (float)((double)p->scale * 1.4426950408889634),
		.max_blocks_per_seq = p->max_blocks_per_seq,
		.partition_tokens = p->partition_tokens,
		.num_partitions = p->num_partitions,
		.context_lens = p->d_context_lens,
		.block_tables = p->d_block_tables,
		.out = out, .query = query, .k = k, .v = v,
		.tmp_out = p->d_tmp_out,
		.max_logits = p->d_max_logits,
		.exp_sums = p->d_exp_sums,
		.stream = p->ctx->stream,
	};
	return kvs_cu_attention(&a);
}

kvs_status kvs_cuda_paged_attention(kvs_cuda_plan *plan, void *out,
				    const void *query, const void *k_cache,
				    const void *v_cache)
{
	return run_plan(plan, true, out, query, k_cache, v_cache);
}

kvs_status kvs_cuda_contiguous_attention(kvs_cuda_plan *plan, void *out,
					 const void *query, const void *k,
					 const void *v)
{
	return run_plan(plan, false, out, query, k, v);
}

#else /* !KVS_HAVE_CUDA: the same symbols, reporting the missing build */

static kvs_status no_cuda(const char *what)
{
	return kvs_fail(KVS_ERR_UNSUPPORTED,
			"%s: this build has no CUDA (reconfigure with -Dcuda=enabled "
			"on a machine with nvcc)", what);
}

kvs_status kvs_cuda_device_count(int *count)
{
	return no_cuda("cuda device count");
}

kvs_status kvs_cuda_create(int device, kvs_cuda_ctx **out)
{
	return no_cuda("cuda create");
}

void kvs_cuda_destroy(kvs_cuda_ctx *ctx)
{
}

kvs_status kvs_cuda_get_info(const kvs_cuda_ctx *ctx, kvs_cuda_device_info *info)
{
	return no_cuda("cuda info");
}

kvs_status kvs_cuda_malloc(kvs_cuda_ctx *ctx, size_t bytes, void **dptr)
{
	return no_cuda("cuda malloc");
}

void kvs_cuda_free(kvs_cuda_ctx *ctx, void *dptr)
{
}

kvs_status kvs_cuda_upload(kvs_cuda_ctx *ctx, void *dst, const void *src,
			   size_t bytes)
{
	return no_cuda("cuda upload");
}

kvs_status kvs_cuda_download(kvs_cuda_ctx *ctx, void *dst, const void *src,
			     size_t bytes)
{
	return no_cuda("cuda download");
}

kvs_status kvs_cuda_memset(kvs_cuda_ctx *ctx, void *dst, int byte, size_t bytes)
{
	return no_cuda("cuda memset");
}

kvs_status kvs_cuda_sync(kvs_cuda_ctx *ctx)
{
	return no_cuda("cuda sync");
}

kvs_status kvs_cuda_cache_write(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
				void *k_cache, void *v_cache, const void *key,
				const void *value, const uint64_t *slot_mapping,
				uint32_t num_tokens)
{
	return no_cuda("cache write");
}

kvs_status kvs_cuda_block_copy(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
			       void *k_cache, void *v_cache,
			       const kvs_block_copy *copies, size_t num_copies)
{
	return no_cuda("block copy");
}

kvs_status kvs_cuda_plan_create(kvs_cuda_ctx *ctx, const kvs_kv_layout *layout,
				const kvs_decode_batch *batch, bool paged,
				kvs_cuda_plan **out)
{
	return no_cuda("decode plan");
}

void kvs_cuda_plan_destroy(kvs_cuda_plan *plan)
{
}

uint32_t kvs_cuda_plan_partitions(const kvs_cuda_plan *plan)
{
	return 0;
}

kvs_status kvs_cuda_paged_attention(kvs_cuda_plan *plan, void *out,
				    const void *query, const void *k_cache,
				    const void *v_cache)
{
	return no_cuda("paged attention");
}

kvs_status kvs_cuda_contiguous_attention(kvs_cuda_plan *plan, void *out,
					 const void *query, const void *k,
					 const void *v)
{
	return no_cuda("contiguous attention");
}

#endif /* KVS_HAVE_CUDA */
