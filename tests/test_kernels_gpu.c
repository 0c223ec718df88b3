/*
 * test_kernels_gpu.c - every CUDA kernel against its C reference on the same
 * seeded inputs: paged and contiguous decode attention (all compiled dtypes,
 * head dims and block sizes; GQA 1, 4, 8; single pass and partitioned),
 * cache write and block copy (bit-exact), plus argument checks of the
 * kvs_cuda_* API.
 *
 * Exits 77 (skipped) when the build has no CUDA or no device is present:
 * that is the normal outcome on CI machines.  Suite "gpu".
 */
#include "test_util.h"
#include "kvsim/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kvs_cuda_ctx *ctx;
static uint64_t rng_state = 2024;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(rng_next() % n);
}

static float rng_unit(void)
{
	return (float)((double)(rng_next() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void *dev_copy(const void *host, size_t bytes)
{
	void *d = NULL;
	assert_int_equal(kvs_cuda_malloc(ctx, bytes, &d), KVS_OK);
	assert_int_equal(kvs_cuda_upload(ctx, d, host, bytes), KVS_OK);
	return d;
}

static void *host_copy(const void *dev, size_t bytes)
{
	void *h = malloc(bytes);
	assert_non_null(h);
	assert_int_equal(kvs_cuda_download(ctx, h, dev, bytes), KVS_OK);
	return h;
}

static void random_fill(kvs_kv_dtype dt, void *p, size_t n)
{
	size_t es = kvs_kv_dtype_size(dt);
	for (size_t i = 0; i < n; i++) {
		float f = rng_unit();
		kvs_kv_from_f32(dt, (char *)p + i * es, &f, 1);
	}
}

static double tol(kvs_kv_dtype dt)
{
	return dt == KVS_KV_F32 ? 1e-4 : dt == KVS_KV_F16 ? 2e-3 : 1.6e-2;
}

static double max_diff(kvs_kv_dtype dt, const void *a, const void *b, size_t n)
{
	size_t es = kvs_kv_dtype_size(dt);
	double m = 0;
	for (size_t i = 0; i < n; i++) {
		float x, y;
		kvs_kv_to_f32(dt, &x, (const char *)a + i * es, 1);
		kvs_kv_to_f32(dt, &y, (const char *)b + i * es, 1);
		double d = fabs((double)x - (double)y);
		if (!(d <= m))
			m = d;
	}
	return m;
}

/* One attention case: dense K/V, scattered into shuffled blocks with the
 * reference cache write, then GPU vs reference for paged and contiguous. */
static void attention_case(kvs_kv_dtype dt, uint32_t hd, uint32_t bs,
			   uint32_t kvh, uint32_t group, uint32_t ns,
			   const uint32_t *lens, uint32_t partition_tokens)
{
	uint32_t max_len = 0, used = 0;
	for (uint32_t i = 0; i < ns; i++) {
		max_len = lens[i] > max_len ? lens[i] : max_len;
		used += (lens[i] + bs - 1) / bs;
	}
	const uint32_t mbps = (max_len + bs - 1) / bs + 1;
	const uint64_t cap = (uint64_t)mbps * bs;
	kvs_kv_layout L = { dt, used + 3, bs, kvh, hd };
	const size_t es = kvs_kv_dtype_size(dt);
	const uint32_t nq = kvh * group;
	const size_t q_n = (size_t)ns * nq * hd;
	const size_t dense_n = (size_t)ns * kvh * cap * hd;
	const size_t cache_n = (size_t)L.num_blocks * kvh * bs * hd;

	/* shuffled block tables */
	kvs_block_id *perm = malloc(L.num_blocks * sizeof *perm);
	for (uint32_t i = 0; i < L.num_blocks; i++)
		perm[i] = i;
	for (uint32_t i = L.num_blocks - 1; i > 0; i--) {
		uint32_t j = rng_below(i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	kvs_block_id *tables = calloc((size_t)ns * mbps, sizeof *tables);
	uint32_t next = 0;
	for (uint32_t i = 0; i < ns; i++)
		for (uint32_t j = 0; j < (lens[i] + bs - 1) / bs; j++)
			tables[(size_t)i * mbps + j] = perm[next++];

	void *q = malloc(q_n * es), *kd = malloc(dense_n * es), *vd = malloc(dense_n * es);
	void *kc = calloc(cache_n, es), *vc = calloc(cache_n, es);
	random_fill(dt, q, q_n);
	random_fill(dt, kd, dense_n);
	random_fill(dt, vd, dense_n);

	/* scatter the dense rows into the paged cache (reference cache write) */
	const size_t row = (size_t)kvh * hd;
	void *key = malloc(max_len * row * es), *value = malloc(max_len * row * es);
	uint64_t *slots = malloc(max_len * sizeof *slots);
	for (uint32_t i = 0; i < ns; i++) {
		for (uint32_t t = 0; t < lens[i]; t++) {
			slots[t] = (uint64_t)tables[(size_t)i * mbps + t / bs] * bs + t % bs;
			for (uint32_t h = 0; h < kvh; h++) {
				size_t di = (((size_t)i * kvh + h) * cap + t) * hd;
				memcpy((char *)key + ((size_t)t * row + h * hd) * es,
				       (char *)kd + di * es, hd * es);
				memcpy((char *)value + ((size_t)t * row + h * hd) * es,
				       (char *)vd + di * es, hd * es);
			}
		}
		assert_int_equal(kvs_ref_cache_write(&L, kc, vc, key, value, slots,
						     lens[i]), KVS_OK);
	}

	kvs_decode_batch b = { .num_seqs = ns, .num_q_heads = nq,
			       .scale = 1.0f / sqrtf((float)hd),
			       .context_lens = lens, .block_tables = tables,
			       .max_blocks_per_seq = mbps,
			       .partition_tokens = partition_tokens };
	void *ref_p = malloc(q_n * es), *ref_c = malloc(q_n * es);
	kvs_decode_batch rb = b;
	rb.partition_tokens = 0;
	assert_int_equal(kvs_ref_paged_attention(&L, &rb, ref_p, q, kc, vc), KVS_OK);
	assert_int_equal(kvs_ref_contiguous_attention(&L, &rb, ref_c, q, kd, vd), KVS_OK);

	void *d_q = dev_copy(q, q_n * es);
	void *d_kc = dev_copy(kc, cache_n * es), *d_vc = dev_copy(vc, cache_n * es);
	void *d_kd = dev_copy(kd, dense_n * es), *d_vd = dev_copy(vd, dense_n * es);
	void *d_out = NULL;
	assert_int_equal(kvs_cuda_malloc(ctx, q_n * es, &d_out), KVS_OK);

	kvs_cuda_plan *pp = NULL, *pc = NULL;
	assert_int_equal(kvs_cuda_plan_create(ctx, &L, &b, true, &pp), KVS_OK);
	assert_int_equal(kvs_cuda_plan_create(ctx, &L, &b, false, &pc), KVS_OK);
	assert_int_equal(kvs_cuda_paged_attention(pp, d_out, d_q, d_kc, d_vc), KVS_OK);
	assert_int_equal(kvs_cuda_sync(ctx), KVS_OK);
	void *gpu_p = host_copy(d_out, q_n * es);
	assert_int_equal(kvs_cuda_memset(ctx, d_out, 0xff, q_n * es), KVS_OK);
	assert_int_equal(kvs_cuda_contiguous_attention(pc, d_out, d_q, d_kd, d_vd), KVS_OK);
	assert_int_equal(kvs_cuda_sync(ctx), KVS_OK);
	void *gpu_c = host_copy(d_out, q_n * es);
	/* the wrong kind of plan is refused */
	assert_int_equal(kvs_cuda_paged_attention(pc, d_out, d_q, d_kc, d_vc),
			 KVS_ERR_INVALID);

	double dp = max_diff(dt, gpu_p, ref_p, q_n);
	double dc = max_diff(dt, gpu_c, ref_c, q_n);
	if (!(dp <= tol(dt)) || !(dc <= tol(dt)))
		fail_msg("%s head_dim %u block %u GQA %u seqs %u max_len %u "
			 "partitions %u: paged diff %g, contiguous diff %g (tol %g)",
			 kvs_kv_dtype_name(dt), hd, bs, group, ns, max_len,
			 kvs_cuda_plan_partitions(pp), dp, dc, tol(dt));

	kvs_cuda_plan_destroy(pp);
	kvs_cuda_plan_destroy(pc);
	kvs_cuda_free(ctx, d_out);
	kvs_cuda_free(ctx, d_q);
	kvs_cuda_free(ctx, d_kc);
	kvs_cuda_free(ctx, d_vc);
	kvs_cuda_free(ctx, d_kd);
	kvs_cuda_free(ctx, d_vd);
	free(gpu_p);
	free(gpu_c);
	free(ref_p);
	free(ref_c);
	free(key);
	free(value);
	free(slots);
	free(q);
	free(kd);
	free(vd);
	free(kc);
	free(vc);
	free(tables);
	free(perm);
}

static void test_attention_all_shapes(void **state)
{
	(void)state;
	static const uint32_t block_sizes[] = { 8, 16, 32, 64 };
	static const uint32_t head_dims[] = { 64, 128 };
	static const uint32_t groups[] = { 1, 4, 8 };
	int c = 0;
	for (int dt = 0; dt < KVS_KV_DTYPE_COUNT_; dt++)
		for (size_t h = 0; h < KVS_ARRAY_LEN(head_dims); h++)
			for (size_t b = 0; b < KVS_ARRAY_LEN(block_sizes); b++, c++) {
				uint32_t bs = block_sizes[b];
				uint32_t lens[5] = { 1, bs - 1, bs + 1,
						     1 + rng_below(700), 1500 + rng_below(1500) };
				/* auto partitions (the long one splits), then forced */
				attention_case((kvs_kv_dtype)dt, head_dims[h], bs, 2,
					       groups[c % 3], 5, lens, 0);
				attention_case((kvs_kv_dtype)dt, head_dims[h], bs, 2,
					       groups[(c + 1) % 3], 5, lens, 64);
			}
}

static void test_attention_edges(void **state)
{
	(void)state;
	/* one sequence of one token; MQA (1 kv head, 16 query heads: 4 chunks);
	 * partitions of 7 tokens (not a multiple of the tile or block) */
	const uint32_t one[] = { 1 };
	attention_case(KVS_KV_F16, 128, 16, 1, 1, 1, one, 0);
	const uint32_t mixed[] = { 4096, 3, 513, 512, 511 };
	attention_case(KVS_KV_F16, 128, 16, 1, 16, 5, mixed, 0);
	attention_case(KVS_KV_BF16, 64, 8, 3, 2, 5, mixed, 7);
	attention_case(KVS_KV_F32, 128, 64, 2, 4, 5, mixed, 100000);
}

static void test_cache_write(void **state)
{
	(void)state;
	for (int dt = 0; dt < KVS_KV_DTYPE_COUNT_; dt++) {
		/* head_dim 7 with f16 exercises the 2-byte path */
		kvs_kv_layout L = { (kvs_kv_dtype)dt, 40, 16, 3, dt == 1 ? 7 : 128 };
		const size_t es = kvs_kv_dtype_size(L.dtype);
		const size_t cache_n = (size_t)L.num_blocks * L.num_kv_heads *
				       L.block_size * L.head_dim;
		const uint32_t nt = 300;
		const size_t tok_n = (size_t)nt * L.num_kv_heads * L.head_dim;
		void *kc = malloc(cache_n * es), *vc = malloc(cache_n * es);
		void *key = malloc(tok_n * es), *value = malloc(tok_n * es);
		random_fill(L.dtype, kc, cache_n);
		random_fill(L.dtype, vc, cache_n);
		random_fill(L.dtype, key, tok_n);
		random_fill(L.dtype, value, tok_n);
		/* distinct random slots, some padding */
		uint64_t nslots = (uint64_t)L.num_blocks * L.block_size;
		uint64_t *perm = malloc(nslots * sizeof *perm);
		for (uint64_t i = 0; i < nslots; i++)
			perm[i] = i;
		for (uint64_t i = nslots - 1; i > 0; i--) {
			uint64_t j = rng_next() % (i + 1), t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		uint64_t *slots = malloc(nt * sizeof *slots);
		for (uint32_t t = 0; t < nt; t++)
			slots[t] = t % 17 == 5 ? KVS_SLOT_NONE : perm[t];

		void *d_kc = dev_copy(kc, cache_n * es), *d_vc = dev_copy(vc, cache_n * es);
		void *d_key = dev_copy(key, tok_n * es), *d_value = dev_copy(value, tok_n * es);
		assert_int_equal(kvs_ref_cache_write(&L, kc, vc, key, value, slots, nt), KVS_OK);
		assert_int_equal(kvs_cuda_cache_write(ctx, &L, d_kc, d_vc, d_key, d_value,
						      slots, nt), KVS_OK);
		assert_int_equal(kvs_cuda_sync(ctx), KVS_OK);
		void *gk = host_copy(d_kc, cache_n * es), *gv = host_copy(d_vc, cache_n * es);
		assert_memory_equal(gk, kc, cache_n * es);
		assert_memory_equal(gv, vc, cache_n * es);

		slots[0] = nslots;   /* beyond the pool: refused before any launch */
		assert_int_equal(kvs_cuda_cache_write(ctx, &L, d_kc, d_vc, d_key, d_value,
						      slots, nt), KVS_ERR_INVALID);
		kvs_cuda_free(ctx, d_kc);
		kvs_cuda_free(ctx, d_vc);
		kvs_cuda_free(ctx, d_key);
		kvs_cuda_free(ctx, d_value);
		free(gk);
		free(gv);
		free(kc);
		free(vc);
		free(key);
		free(value);
		free(perm);
		free(slots);
	}
}

static void test_block_copy(void **state)
{
	(void)state;
	kvs_kv_layout L = { KVS_KV_BF16, 64, 16, 8, 128 };
	const size_t es = 2;
	const size_t cache_n = (size_t)64 * 8 * 16 * 128;
	void *kc = malloc(cache_n * es), *vc = malloc(cache_n * es);
	random_fill(L.dtype, kc, cache_n);
	random_fill(L.dtype, vc, cache_n);
	/* sources 0..19, destinations 32..51 shuffled, one source copied twice */
	kvs_block_copy copies[21];
	for (uint32_t i = 0; i < 20; i++)
		copies[i] = (kvs_block_copy){ i, 32 + (i * 7) % 20 };
	copies[20] = (kvs_block_copy){ 3, 60 };
	void *d_kc = dev_copy(kc, cache_n * es), *d_vc = dev_copy(vc, cache_n * es);
	assert_int_equal(kvs_ref_block_copy(&L, kc, vc, copies, 21), KVS_OK);
	assert_int_equal(kvs_cuda_block_copy(ctx, &L, d_kc, d_vc, copies, 21), KVS_OK);
	assert_int_equal(kvs_cuda_sync(ctx), KVS_OK);
	void *gk = host_copy(d_kc, cache_n * es), *gv = host_copy(d_vc, cache_n * es);
	assert_memory_equal(gk, kc, cache_n * es);
	assert_memory_equal(gv, vc, cache_n * es);
	copies[1].dst = copies[0].dst;
	assert_int_equal(kvs_cuda_block_copy(ctx, &L, d_kc, d_vc, copies, 21),
			 KVS_ERR_INVALID);
	kvs_cuda_free(ctx, d_kc);
	kvs_cuda_free(ctx, d_vc);
	free(gk);
	free(gv);
	free(kc);
	free(vc);
}

static void test_plan_checks(void **state)
{
	(void)state;
	kvs_kv_layout L = { KVS_KV_F16, 8, 16, 2, 96 };
	uint32_t lens[1] = { 20 };
	kvs_block_id table[2] = { 1, 9 };
	kvs_decode_batch b = { .num_seqs = 1, .num_q_heads = 4, .scale = 0.1f,
			       .context_lens = lens, .block_tables = table,
			       .max_blocks_per_seq = 2 };
	kvs_cuda_plan *p = NULL;
	assert_int_equal(kvs_cuda_plan_create(ctx, &L, &b, true, &p), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "block_tables[0][1]"));
	table[1] = 2;
	assert_int_equal(kvs_cuda_plan_create(ctx, &L, &b, true, &p), KVS_ERR_UNSUPPORTED);
	assert_non_null(strstr(kvs_last_error(), "head_dim 96"));
	L.head_dim = 64;
	assert_int_equal(kvs_cuda_plan_create(ctx, &L, &b, true, &p), KVS_OK);
	assert_int_equal(kvs_cuda_plan_partitions(p), 1);
	/* misaligned device pointer */
	void *d = NULL;
	assert_int_equal(kvs_cuda_malloc(ctx, 1 << 20, &d), KVS_OK);
	assert_int_equal(kvs_cuda_paged_attention(p, (char *)d + 2, d, d, d),
			 KVS_ERR_INVALID);
	kvs_cuda_free(ctx, d);
	kvs_cuda_plan_destroy(p);
}

int main(void)
{
	kvs_status st = kvs_cuda_create(0, &ctx);
	if (st == KVS_ERR_UNSUPPORTED || st == KVS_ERR_NO_DEVICE) {
		printf("skipped: %s\n", kvs_last_error());
		return KVS_TEST_SKIP;
	}
	if (st != KVS_OK) {
		fprintf(stderr, "cuda: %s\n", kvs_last_error());
		return 1;
	}
	kvs_cuda_device_info info;
	if (kvs_cuda_get_info(ctx, &info) == KVS_OK)
		printf("device: %s (sm_%d%d, %u SMs)\n", info.name, info.cc_major,
		       info.cc_minor, info.sm_count);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_checks),
		cmocka_unit_test(test_cache_write),
		cmocka_unit_test(test_block_copy),
		cmocka_unit_test(test_attention_edges),
		cmocka_unit_test(test_attention_all_shapes),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	kvs_cuda_destroy(ctx);
	return rc;
}
