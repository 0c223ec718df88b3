/*
 * test_kernels_ref.c - the C reference kernels: element conversions, the
 * layout formula, hand-derived attention results, paged == contiguous on
 * random shuffled-block batches, partitioned == one pass, cache write then
 * paged attention == attention over the dense K/V, block copy moves exactly
 * the named blocks, and argument checking.
 *
 * Slots that no sequence owns (free blocks, tails of last blocks, padding of
 * contiguous regions) are filled with NaN, so any read past a context or
 * through a wrong table entry poisons the output and fails the comparison.
 * KVS_TEST_SCALE (default 1) scales the number of random trials.
 */
#include "test_util.h"
#include "kvsim/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);   /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(rng_next() % n);
}

static float rng_unit(void)   /* uniform in [-1, 1) */
{
	return (float)((double)(rng_next() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int trials(int n)
{
	int t = (int)(n * kvs_test_scale() + 0.5);
	return t < 1 ? 1 : t;
}

static void fill_nan(kvs_kv_dtype dt, void *p, size_t n)
{
	float nan = NAN;
	for (size_t i = 0; i < n; i++)
		kvs_kv_from_f32(dt, (char *)p + i * kvs_kv_dtype_size(dt), &nan, 1);
}

static float elem(kvs_kv_dtype dt, const void *p, size_t i)
{
	float f;
	kvs_kv_to_f32(dt, &f, (const char *)p + i * kvs_kv_dtype_size(dt), 1);
	return f;
}

static void set_elem(kvs_kv_dtype dt, void *p, size_t i, float f)
{
	kvs_kv_from_f32(dt, (char *)p + i * kvs_kv_dtype_size(dt), &f, 1);
}

/* Output tolerance for values of magnitude <= 1: half an ulp of the
 * output type at 1 plus FP32/FP64 arithmetic noise. */
static double out_tol(kvs_kv_dtype dt)
{
	switch (dt) {
	case KVS_KV_F16: return 1.5e-3;
	case KVS_KV_BF16: return 1.2e-2;
	default: return 2e-5;
	}
}

/* ---- a random batch in both layouts --------------------------------------- */

typedef struct scenario {
	kvs_kv_layout L;
	kvs_decode_batch b;
	uint32_t *lens;
	kvs_block_id *tables;
	size_t es;            /* element size */
	size_t q_elems;       /* num_seqs * num_q_heads * head_dim */
	size_t cache_elems;   /* one paged tensor */
	size_t dense_elems;   /* one contiguous tensor */
	void *q, *kc, *vc, *kd, *vd;
} scenario;

static void scenario_free(scenario *s)
{
	free(s->lens);
	free(s->tables);
	free(s->q);
	free(s->kc);
	free(s->vc);
	free(s->kd);
	free(s->vd);
	memset(s, 0, sizeof *s);
}

/* Build a batch: lens given, blocks drawn from a shuffled pool with spare
 * blocks; K/V values random and written identically to both layouts. */
static void scenario_make(scenario *s, kvs_kv_dtype dt, uint32_t head_dim,
			  uint32_t kv_heads, uint32_t group, uint32_t block_size,
			  uint32_t num_seqs, const uint32_t *lens)
{
	memset(s, 0, sizeof *s);
	s->lens = malloc(num_seqs * sizeof *s->lens);
	memcpy(s->lens, lens, num_seqs * sizeof *lens);
	uint32_t max_len = 0, total_blocks = 0;
	for (uint32_t i = 0; i < num_seqs; i++) {
		if (lens[i] > max_len)
			max_len = lens[i];
		total_blocks += (lens[i] + block_size - 1) / block_size;
	}
	uint32_t mbps = (max_len + block_size - 1) / block_size + rng_below(3);
	uint32_t num_blocks = total_blocks + 1 + rng_below(8);
	s->L = (kvs_kv_layout){ dt, num_blocks, block_size, kv_heads, head_dim };
	s->es = kvs_kv_dtype_size(dt);

	/* shuffled physical blocks */
	kvs_block_id *perm = malloc(num_blocks * sizeof *perm);
	for (uint32_t i = 0; i < num_blocks; i++)
		perm[i] = i;
	for (uint32_t i = num_blocks - 1; i > 0; i--) {
		uint32_t j = rng_below(i + 1);
		kvs_block_id t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	s->tables = malloc((size_t)num_seqs * mbps * sizeof *s->tables);
	uint32_t next = 0;
	for (uint32_t i = 0; i < num_seqs; i++) {
		uint32_t nb = (lens[i] + block_size - 1) / block_size;
		for (uint32_t j = 0; j < mbps; j++)   /* unused entries: junk */
			s->tables[(size_t)i * mbps + j] =
				j < nb ? perm[next++] : KVS_BLOCK_NONE - j;
	}
	free(perm);

	s->b = (kvs_decode_batch){
		.num_seqs = num_seqs,
		.num_q_heads = kv_heads * group,
		.scale = 1.0f / sqrtf((float)head_dim),
		.context_lens = s->lens,
		.block_tables = s->tables,
		.max_blocks_per_seq = mbps,
	};
	uint64_t cap = (uint64_t)mbps * block_size;
	s->q_elems = (size_t)num_seqs * s->b.num_q_heads * head_dim;
	s->cache_elems = (size_t)num_blocks * kv_heads * block_size * head_dim;
	s->dense_elems = (size_t)num_seqs * kv_heads * cap * head_dim;
	s->q = malloc(s->q_elems * s->es);
	s->kc = malloc(s->cache_elems * s->es);
	s->vc = malloc(s->cache_elems * s->es);
	s->kd = malloc(s->dense_elems * s->es);
	s->vd = malloc(s->dense_elems * s->es);
	assert_non_null(s->q);
	assert_non_null(s->kc);
	assert_non_null(s->kd);
	fill_nan(dt, s->kc, s->cache_elems);
	fill_nan(dt, s->vc, s->cache_elems);
	fill_nan(dt, s->kd, s->dense_elems);
	fill_nan(dt, s->vd, s->dense_elems);
	for (size_t i = 0; i < s->q_elems; i++)
		set_elem(dt, s->q, i, rng_unit());

	/* a few sequences get one dominant key, so softmax is far from flat */
	for (uint32_t i = 0; i < num_seqs; i++) {
		uint32_t hot = rng_below(4) == 0 ? rng_below(lens[i]) : UINT32_MAX;
		for (uint32_t t = 0; t < lens[i]; t++) {
			kvs_block_id blk = s->tables[(size_t)i * mbps + t / block_size];
			uint64_t slot = (uint64_t)blk * block_size + t % block_size;
			for (uint32_t h = 0; h < kv_heads; h++) {
				size_t pi = (size_t)kvs_kv_slot_index(&s->L, slot, h);
				size_t di = (((size_t)i * kv_heads + h) * cap + t) * head_dim;
				for (uint32_t d = 0; d < head_dim; d++) {
					float k = rng_unit() * (t == hot ? 6.0f : 1.0f);
					float v = rng_unit();
					set_elem(dt, s->kc, pi + d, k);
					set_elem(dt, s->kd, di + d, k);
					set_elem(dt, s->vc, pi + d, v);
					set_elem(dt, s->vd, di + d, v);
				}
			}
		}
	}
}

/* Textbook two-pass softmax attention over the dense layout, in double. */
static void naive_attention(const scenario *s, double *out)
{
	const kvs_kv_layout *L = &s->L;
	const uint32_t d = L->head_dim, g = s->b.num_q_heads / L->num_kv_heads;
	const uint64_t cap = (uint64_t)s->b.max_blocks_per_seq * L->block_size;
	uint32_t max_len = 0;
	for (uint32_t i = 0; i < s->b.num_seqs; i++)
		if (s->lens[i] > max_len)
			max_len = s->lens[i];
	double *sc = malloc(max_len * sizeof *sc);
	for (uint32_t i = 0; i < s->b.num_seqs; i++) {
		for (uint32_t qh = 0; qh < s->b.num_q_heads; qh++) {
			uint32_t h = qh / g;
			size_t qi = ((size_t)i * s->b.num_q_heads + qh) * d;
			size_t base = ((size_t)i * L->num_kv_heads + h) * cap * d;
			double mx = -INFINITY, sum = 0;
			for (uint32_t t = 0; t < s->lens[i]; t++) {
				double dot = 0;
				for (uint32_t e = 0; e < d; e++)
					dot += (double)elem(L->dtype, s->q, qi + e) *
					       elem(L->dtype, s->kd, base + (size_t)t * d + e);
				sc[t] = dot * s->b.scale;
				if (sc[t] > mx)
					mx = sc[t];
			}
			for (uint32_t t = 0; t < s->lens[i]; t++) {
				sc[t] = exp(sc[t] - mx);
				sum += sc[t];
			}
			for (uint32_t e = 0; e < d; e++) {
				double o = 0;
				for (uint32_t t = 0; t < s->lens[i]; t++)
					o += sc[t] * elem(L->dtype, s->vd, base + (size_t)t * d + e);
				out[qi + e] = o / sum;
			}
		}
	}
	free(sc);
}

static double max_diff(kvs_kv_dtype dt, const void *a, const double *b, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++) {
		double x = fabs((double)elem(dt, a, i) - b[i]);
		if (!(x <= m))
			m = x;          /* NaN propagates as a failure */
	}
	return m;
}

static double max_diff2(kvs_kv_dtype dt, const void *a, const void *b, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++) {
		double x = fabs((double)elem(dt, a, i) - (double)elem(dt, b, i));
		if (!(x <= m))
			m = x;
	}
	return m;
}

/* ---- conversions ------------------------------------------------------------ */

static void test_f16_conversion(void **state)
{
	(void)state;
	assert_int_equal(kvs_f16_from_f32(1.0f), 0x3c00);
	assert_int_equal(kvs_f16_from_f32(-2.0f), 0xc000);
	assert_int_equal(kvs_f16_from_f32(65504.0f), 0x7bff);
	assert_int_equal(kvs_f16_from_f32(65519.0f), 0x7bff);
	assert_int_equal(kvs_f16_from_f32(65520.0f), 0x7c00);  /* tie -> even = inf */
	assert_int_equal(kvs_f16_from_f32(ldexpf(1, -14)), 0x0400);
	assert_int_equal(kvs_f16_from_f32(ldexpf(1, -24)), 0x0001);
	assert_int_equal(kvs_f16_from_f32(ldexpf(1, -25)), 0x0000);  /* tie -> 0 */
	assert_int_equal(kvs_f16_from_f32(ldexpf(3, -25)), 0x0002);  /* 1.5 -> 2 */
	assert_int_equal(kvs_f16_from_f32(ldexpf(1023, -24) + ldexpf(1, -25)), 0x0400);
	assert_int_equal(kvs_f16_from_f32(1.0f + ldexpf(1, -11)), 0x3c00);
	assert_int_equal(kvs_f16_from_f32(1.0f + ldexpf(3, -11)), 0x3c02);
	assert_int_equal(kvs_f16_from_f32(INFINITY), 0x7c00);
	assert_true((kvs_f16_from_f32(NAN) & 0x7fff) > 0x7c00);
	assert_true(kvs_f32_from_f16(0x3555) > 0.333f && kvs_f32_from_f16(0x3555) < 0.3334f);
	/* every non-NaN half survives half -> float -> half */
	for (uint32_t h = 0; h < 0x10000u; h++) {
		if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
			continue;
		assert_int_equal(kvs_f16_from_f32(kvs_f32_from_f16((uint16_t)h)), h);
	}
	assert_float_equal(kvs_f32_from_f16(0x0001), ldexpf(1, -24), 0);
}

static void test_bf16_conversion(void **state)
{
	(void)state;
	assert_int_equal(kvs_bf16_from_f32(1.0f), 0x3f80);
	assert_int_equal(kvs_bf16_from_f32(1.0f + ldexpf(1, -8)), 0x3f80);  /* tie -> even */
	assert_int_equal(kvs_bf16_from_f32(1.0f + ldexpf(3, -8)), 0x3f82);
	assert_int_equal(kvs_bf16_from_f32(-0.0f), 0x8000);
	assert_true((kvs_bf16_from_f32(NAN) & 0x7fff) > 0x7f80);
	assert_float_equal(kvs_f32_from_bf16(0x4049), 3.140625f, 0);
	for (uint32_t h = 0; h < 0x10000u; h++) {
		if ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu))
			continue;
		assert_int_equal(kvs_bf16_from_f32(kvs_f32_from_bf16((uint16_t)h)), h);
	}
	kvs_kv_dtype dt;
	assert_int_equal(kvs_kv_dtype_parse("bfloat16", &dt), KVS_OK);
	assert_int_equal(dt, KVS_KV_BF16);
	assert_int_equal(kvs_kv_dtype_parse("fp8", &dt), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "fp8"));
	assert_string_equal(kvs_kv_dtype_name(KVS_KV_F16), "f16");
	assert_int_equal(kvs_kv_dtype_size(KVS_KV_F32), 4);
}

/* ---- layout ---------------------------------------------------------------- */

static void test_layout(void **state)
{
	(void)state;
	kvs_kv_layout L = { KVS_KV_F16, 10, 16, 2, 8 };
	assert_int_equal(kvs_kv_layout_check(&L), KVS_OK);
	/* slot 37 = block 2, offset 5; head 1: ((2*2+1)*16+5)*8 = 680 */
	assert_int_equal(kvs_kv_slot_index(&L, 37, 1), 680);
	uint64_t bytes;
	assert_int_equal(kvs_kv_cache_bytes(&L, &bytes), KVS_OK);
	assert_int_equal(bytes, 10 * 16 * 2 * 8 * 2);
	assert_int_equal(kvs_kv_block_bytes(&L), 16 * 2 * 8 * 2);

	L.block_size = 0;
	assert_int_equal(kvs_kv_layout_check(&L), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "block_size"));
	L = (kvs_kv_layout){ KVS_KV_F32, UINT32_MAX, UINT32_MAX, UINT32_MAX, 8 };
	assert_int_equal(kvs_kv_layout_check(&L), KVS_ERR_OVERFLOW);
	L = (kvs_kv_layout){ (kvs_kv_dtype)7, 1, 1, 1, 1 };
	assert_int_equal(kvs_kv_layout_check(&L), KVS_ERR_INVALID);
	assert_int_equal(kvs_kv_layout_check(NULL), KVS_ERR_INVALID);
}

/* ---- hand-derived attention ------------------------------------------------ */

static void test_attention_by_hand(void **state)
{
	(void)state;
	/* head_dim 2, block 1, one head; scores 0 and ln 3 -> weights 1/4, 3/4 */
	kvs_kv_layout L = { KVS_KV_F32, 4, 1, 1, 2 };
	float k[8] = { 0 }, v[8] = { 0 };
	/* sequence blocks: token 0 -> block 3, token 1 -> block 1 */
	k[3 * 2] = 0.0f;            v[3 * 2] = 4.0f;  v[3 * 2 + 1] = 0.0f;
	k[1 * 2] = logf(3.0f);      v[1 * 2] = 0.0f;  v[1 * 2 + 1] = 8.0f;
	k[0] = k[1] = v[0] = v[1] = NAN;   /* blocks 0 and 2 are not ours */
	k[4] = k[5] = v[4] = v[5] = NAN;
	float q[2] = { 1.0f, 0.0f }, out[2];
	uint32_t len = 2;
	kvs_block_id table[2] = { 3, 1 };
	kvs_decode_batch b = { .num_seqs = 1, .num_q_heads = 1, .scale = 1.0f,
			       .context_lens = &len, .block_tables = table,
			       .max_blocks_per_seq = 2 };
	assert_int_equal(kvs_ref_paged_attention(&L, &b, out, q, k, v), KVS_OK);
	assert_float_equal(out[0], 1.0f, 1e-6);   /* 1/4 * 4 */
	assert_float_equal(out[1], 6.0f, 1e-6);   /* 3/4 * 8 */

	/* one partition per token must give the same answer */
	b.partition_tokens = 1;
	assert_int_equal(kvs_ref_paged_attention(&L, &b, out, q, k, v), KVS_OK);
	assert_float_equal(out[0], 1.0f, 1e-6);
	assert_float_equal(out[1], 6.0f, 1e-6);

	/* a single token: the output is its value row, whatever the score */
	len = 1;
	q[0] = 1e4f;
	assert_int_equal(kvs_ref_paged_attention(&L, &b, out, q, k, v), KVS_OK);
	assert_float_equal(out[0], 4.0f, 0);
	assert_float_equal(out[1], 0.0f, 0);
}

static void test_equal_keys_average(void **state)
{
	(void)state;
	/* all keys equal: output is the mean of the value rows, for every
	 * query head of the group (GQA 4), even with huge scores (stability) */
	const uint32_t n = 1000, d = 4;
	kvs_kv_layout L = { KVS_KV_F32, 1, 1, 1, d };
	float *k = malloc(n * d * sizeof *k), *v = malloc(n * d * sizeof *v);
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t e = 0; e < d; e++) {
			k[t * d + e] = 50.0f;
			v[t * d + e] = (float)(t + e);
		}
	float q[4 * 4], out[4 * 4];
	for (int i = 0; i < 16; i++)
		q[i] = 100.0f + (float)i;       /* scores ~ 2e4: exp overflows naively */
	kvs_decode_batch b = { .num_seqs = 1, .num_q_heads = 4, .scale = 1.0f,
			       .context_lens = &n, .max_blocks_per_seq = n };
	assert_int_equal(kvs_ref_contiguous_attention(&L, &b, out, q, k, v), KVS_OK);
	for (uint32_t h = 0; h < 4; h++)
		for (uint32_t e = 0; e < d; e++)   /* mean of t + e = 499.5 + e */
			assert_float_equal(out[h * d + e], 499.5f + (float)e, 1e-3);
	free(k);
	free(v);
}

/* ---- randomised: paged == contiguous == naive, partitions ------------------ */

static void check_scenario(scenario *s, bool partitions)
{
	const kvs_kv_dtype dt = s->L.dtype;
	void *out_p = malloc(s->q_elems * s->es);
	void *out_c = malloc(s->q_elems * s->es);
	double *ref = malloc(s->q_elems * sizeof *ref);

	assert_int_equal(kvs_ref_paged_attention(&s->L, &s->b, out_p, s->q,
						 s->kc, s->vc), KVS_OK);
	assert_int_equal(kvs_ref_contiguous_attention(&s->L, &s->b, out_c, s->q,
						      s->kd, s->vd), KVS_OK);
	/* same data, same arithmetic: bit-identical */
	if (memcmp(out_p, out_c, s->q_elems * s->es) != 0)
		fail_msg("paged != contiguous: max diff %g",
			 max_diff2(dt, out_p, out_c, s->q_elems));
	naive_attention(s, ref);
	double diff = max_diff(dt, out_p, ref, s->q_elems);
	if (!(diff <= out_tol(dt)))
		fail_msg("paged vs naive (%s, block %u, head_dim %u, GQA %u): max "
			 "diff %g > %g", kvs_kv_dtype_name(dt), s->L.block_size,
			 s->L.head_dim, s->b.num_q_heads / s->L.num_kv_heads,
			 diff, out_tol(dt));
	if (partitions) {
		static const uint32_t parts[] = { 1, 7, 16, 64, 512 };
		s->b.partition_tokens = parts[rng_below(KVS_ARRAY_LEN(parts))];
		assert_int_equal(kvs_ref_paged_attention(&s->L, &s->b, out_c, s->q,
							 s->kc, s->vc), KVS_OK);
		s->b.partition_tokens = 0;
		diff = max_diff2(dt, out_p, out_c, s->q_elems);
		/* FP64 merge: only the final rounding may differ, by one ulp */
		if (!(diff <= out_tol(dt)))
			fail_msg("partitioned vs one pass: max diff %g", diff);
	}
	free(out_p);
	free(out_c);
	free(ref);
}

static void test_paged_equals_contiguous_random(void **state)
{
	(void)state;
	static const uint32_t block_sizes[] = { 1, 2, 3, 7, 8, 16, 17, 32, 64, 100, 128, 256 };
	static const uint32_t groups[] = { 1, 4, 8 };
	static const uint32_t head_dims[] = { 1, 5, 16, 64, 128 };
	rng_state = 42;
	int n = trials(36);
	for (int it = 0; it < n; it++) {
		kvs_kv_dtype dt = (kvs_kv_dtype)(it % 3);
		uint32_t bs = block_sizes[(uint32_t)it % KVS_ARRAY_LEN(block_sizes)];
		uint32_t g = groups[rng_below(3)];
		uint32_t hd = head_dims[rng_below(KVS_ARRAY_LEN(head_dims))];
		uint32_t kvh = 1 + rng_below(2);
		uint32_t ns = 1 + rng_below(5);
		uint32_t lens[6];
		for (uint32_t i = 0; i < ns; i++) {
			switch (rng_below(4)) {   /* short, around a block, long */
			case 0: lens[i] = 1 + rng_below(4); break;
			case 1: lens[i] = bs - 1 + rng_below(3); break;
			case 2: lens[i] = 1 + rng_below(300); break;
			default: lens[i] = 1000 + rng_below(3200); break;
			}
			if (lens[i] == 0)
				lens[i] = 1;
		}
		scenario s;
		scenario_make(&s, dt, hd, kvh, g, bs, ns, lens);
		check_scenario(&s, true);
		scenario_free(&s);
	}
}

static void test_mixed_batch_long(void **state)
{
	(void)state;
	/* one batch mixing 1 token, block edges and several thousand tokens,
	 * GQA 8, block 16, f16: the shape of a real decode step */
	rng_state = 7;
	const uint32_t lens[] = { 1, 15, 16, 17, 4097, 2500, 33 };
	scenario s;
	scenario_make(&s, KVS_KV_F16, 64, 2, 8, 16, KVS_ARRAY_LEN(lens), lens);
	check_scenario(&s, true);
	scenario_free(&s);
}

/* ---- cache write ------------------------------------------------------------ */

static void test_cache_write_then_attention(void **state)
{
	(void)state;
	static const uint32_t block_sizes[] = { 1, 5, 16, 64 };
	rng_state = 99;
	int n = trials(8);
	for (int it = 0; it < n; it++) {
		kvs_kv_dtype dt = (kvs_kv_dtype)(it % 3);
		uint32_t bs = block_sizes[(uint32_t)it % KVS_ARRAY_LEN(block_sizes)];
		uint32_t lens[4] = { 1 + rng_below(40), 1 + rng_below(700),
				     bs, 1 + rng_below(2000) };
		scenario s;
		scenario_make(&s, dt, 32, 2, 4, bs, 4, lens);
		const kvs_kv_layout *L = &s.L;
		const uint64_t cap = (uint64_t)s.b.max_blocks_per_seq * bs;
		const size_t row = (size_t)L->num_kv_heads * L->head_dim;

		/* every token of every sequence, in shuffled order, plus padding
		 * tokens (KVS_SLOT_NONE) carrying NaN */
		uint32_t ntok = 0;
		for (int i = 0; i < 4; i++)
			ntok += lens[i];
		uint32_t npad = 1 + rng_below(5);
		uint32_t total = ntok + npad;
		uint64_t *slots = malloc(total * sizeof *slots);
		void *key = malloc(total * row * s.es), *value = malloc(total * row * s.es);
		uint32_t *order = malloc(total * sizeof *order);
		for (uint32_t i = 0; i < total; i++)
			order[i] = i;
		for (uint32_t i = total - 1; i > 0; i--) {
			uint32_t j = rng_below(i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		uint32_t k = 0;
		for (uint32_t i = 0; i < 4; i++) {
			for (uint32_t t = 0; t < lens[i]; t++, k++) {
				uint32_t at = order[k];
				kvs_block_id blk = s.tables[(size_t)i * s.b.max_blocks_per_seq + t / bs];
				slots[at] = (uint64_t)blk * bs + t % bs;
				for (uint32_t h = 0; h < L->num_kv_heads; h++) {
					size_t di = (((size_t)i * L->num_kv_heads + h) * cap + t) * L->head_dim;
					memcpy((char *)key + ((size_t)at * row + (size_t)h * L->head_dim) * s.es,
					       (char *)s.kd + di * s.es, L->head_dim * s.es);
					memcpy((char *)value + ((size_t)at * row + (size_t)h * L->head_dim) * s.es,
					       (char *)s.vd + di * s.es, L->head_dim * s.es);
				}
			}
		}
		for (; k < total; k++) {
			slots[order[k]] = KVS_SLOT_NONE;
			fill_nan(dt, (char *)key + (size_t)order[k] * row * s.es, row);
			fill_nan(dt, (char *)value + (size_t)order[k] * row * s.es, row);
		}
		/* start from an all-NaN cache: only the written slots are numbers */
		void *kc = malloc(s.cache_elems * s.es), *vc = malloc(s.cache_elems * s.es);
		fill_nan(dt, kc, s.cache_elems);
		fill_nan(dt, vc, s.cache_elems);
		assert_int_equal(kvs_ref_cache_write(L, kc, vc, key, value, slots, total),
				 KVS_OK);
		/* exactly the scenario's paged cache (NaN bits included) */
		assert_memory_equal(kc, s.kc, s.cache_elems * s.es);
		assert_memory_equal(vc, s.vc, s.cache_elems * s.es);

		void *out_p = malloc(s.q_elems * s.es), *out_c = malloc(s.q_elems * s.es);
		assert_int_equal(kvs_ref_paged_attention(L, &s.b, out_p, s.q, kc, vc), KVS_OK);
		assert_int_equal(kvs_ref_contiguous_attention(L, &s.b, out_c, s.q, s.kd, s.vd),
				 KVS_OK);
		assert_memory_equal(out_p, out_c, s.q_elems * s.es);

		/* a slot twice or beyond the pool is refused, cache untouched */
		uint64_t bad[2] = { 3, 3 };
		assert_int_equal(kvs_ref_cache_write(L, kc, vc, key, value, bad, 2),
				 KVS_ERR_INVALID);
		assert_non_null(strstr(kvs_last_error(), "twice"));
		bad[1] = (uint64_t)L->num_blocks * bs;
		assert_int_equal(kvs_ref_cache_write(L, kc, vc, key, value, bad, 2),
				 KVS_ERR_INVALID);
		assert_non_null(strstr(kvs_last_error(), "slot_mapping[1]"));
		assert_memory_equal(kc, s.kc, s.cache_elems * s.es);

		free(out_p);
		free(out_c);
		free(kc);
		free(vc);
		free(order);
		free(key);
		free(value);
		free(slots);
		scenario_free(&s);
	}
}

/* ---- block copy ------------------------------------------------------------- */

static void test_block_copy(void **state)
{
	(void)state;
	kvs_kv_layout L = { KVS_KV_F32, 12, 4, 3, 5 };
	const size_t per_block = 4 * 3 * 5, n = 12 * per_block;
	float *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
	float *ek = malloc(n * sizeof *ek), *ev = malloc(n * sizeof *ev);
	for (size_t i = 0; i < n; i++) {
		k[i] = (float)i;
		v[i] = -(float)i;
	}
	/* 2 -> 7, 2 -> 9 (one source, two copies, as a fork), 11 -> 0, 5 -> 6 */
	kvs_block_copy copies[] = { { 2, 7 }, { 2, 9 }, { 11, 0 }, { 5, 6 } };
	memcpy(ek, k, n * sizeof *k);
	memcpy(ev, v, n * sizeof *v);
	for (size_t c = 0; c < KVS_ARRAY_LEN(copies); c++)
		for (size_t e = 0; e < per_block; e++) {
			/* expected by the formula: element e of block b is b*60+e */
			ek[copies[c].dst * per_block + e] = (float)(copies[c].src * per_block + e);
			ev[copies[c].dst * per_block + e] = -(float)(copies[c].src * per_block + e);
		}
	assert_int_equal(kvs_ref_block_copy(&L, k, v, copies, KVS_ARRAY_LEN(copies)), KVS_OK);
	assert_memory_equal(k, ek, n * sizeof *k);
	assert_memory_equal(v, ev, n * sizeof *v);
	/* blocks not named as destinations are exactly as before */
	for (size_t b = 0; b < 12; b++) {
		if (b == 7 || b == 9 || b == 0 || b == 6)
			continue;
		for (size_t e = 0; e < per_block; e++)
			assert_float_equal(k[b * per_block + e], (float)(b * per_block + e), 0);
	}

	/* refused, nothing moved: a destination twice, a destination that is
	 * also a source, an id beyond the pool */
	kvs_block_copy twice[] = { { 1, 3 }, { 2, 3 } };
	kvs_block_copy chain[] = { { 1, 3 }, { 3, 4 } };
	kvs_block_copy self[] = { { 4, 4 } };
	kvs_block_copy range[] = { { 1, 12 } };
	assert_int_equal(kvs_ref_block_copy(&L, k, v, twice, 2), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "block 3"));
	assert_int_equal(kvs_ref_block_copy(&L, k, v, chain, 2), KVS_ERR_INVALID);
	assert_int_equal(kvs_ref_block_copy(&L, k, v, self, 1), KVS_ERR_INVALID);
	assert_int_equal(kvs_ref_block_copy(&L, k, v, range, 1), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "copies[0]"));
	assert_memory_equal(k, ek, n * sizeof *k);
	assert_int_equal(kvs_ref_block_copy(&L, k, v, NULL, 0), KVS_OK);
	free(k);
	free(v);
	free(ek);
	free(ev);
}

/* ---- argument checks -------------------------------------------------------- */

static void test_batch_checks(void **state)
{
	(void)state;
	kvs_kv_layout L = { KVS_KV_F32, 4, 16, 2, 8 };
	uint32_t lens[2] = { 20, 16 };
	kvs_block_id tables[4] = { 0, 1, 2, KVS_BLOCK_NONE };
	static float kbuf[1024], vbuf[1024], qbuf[64], obuf[64];
	float *buf = obuf;
	kvs_decode_batch b = { .num_seqs = 2, .num_q_heads = 4, .scale = 0.5f,
			       .context_lens = lens, .block_tables = tables,
			       .max_blocks_per_seq = 2 };
	assert_int_equal(kvs_decode_batch_check(&L, &b, true), KVS_OK);
	/* sequence 1 reads 1 block: its second (junk) entry is never read */
	assert_int_equal(kvs_ref_paged_attention(&L, &b, obuf, qbuf, kbuf, vbuf), KVS_OK);

	lens[1] = 17;   /* now reads entry [1][1] = KVS_BLOCK_NONE */
	assert_int_equal(kvs_decode_batch_check(&L, &b, true), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "block_tables[1][1]"));
	assert_true(kvs_decode_batch_check(&L, &b, false) == KVS_OK);
	lens[1] = 33;   /* beyond 2 blocks of 16 */
	assert_int_equal(kvs_decode_batch_check(&L, &b, false), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "context_lens[1] = 33"));
	lens[1] = 0;
	assert_int_equal(kvs_decode_batch_check(&L, &b, true), KVS_ERR_INVALID);
	lens[1] = 16;
	b.num_q_heads = 3;
	assert_int_equal(kvs_decode_batch_check(&L, &b, true), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "num_q_heads"));
	b.num_q_heads = 4;
	b.scale = NAN;
	assert_int_equal(kvs_decode_batch_check(&L, &b, true), KVS_ERR_INVALID);
	b.scale = -1.0f;
	assert_int_equal(kvs_decode_batch_check(&L, &b, true), KVS_ERR_INVALID);
	b.scale = 0.5f;
	b.block_tables = NULL;
	assert_int_equal(kvs_ref_paged_attention(&L, &b, buf, buf, buf, buf),
			 KVS_ERR_INVALID);
	assert_int_equal(kvs_ref_contiguous_attention(&L, &b, obuf, qbuf, kbuf, vbuf),
			 KVS_OK);
	assert_int_equal(kvs_ref_contiguous_attention(&L, &b, NULL, buf, buf, buf),
			 KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "out"));
	b.num_seqs = 0;
	assert_int_equal(kvs_decode_batch_check(&L, &b, false), KVS_ERR_INVALID);
	assert_int_equal(kvs_ref_contiguous_attention(NULL, &b, buf, buf, buf, buf),
			 KVS_ERR_INVALID);
}

static void test_cuda_api_without_cuda(void **state)
{
	(void)state;
	/* this machine may have no device: every path must answer with a
	 * status, never crash */
	kvs_cuda_ctx *ctx = NULL;
	kvs_status st = kvs_cuda_create(0, &ctx);
	assert_true(st == KVS_OK || st == KVS_ERR_NO_DEVICE ||
		    st == KVS_ERR_UNSUPPORTED);
	if (st == KVS_OK)
		kvs_cuda_destroy(ctx);
	else
		assert_true(strlen(kvs_last_error()) > 0);
	kvs_kv_layout L = { KVS_KV_F16, 4, 16, 2, 96 };
	st = kvs_cuda_shape_supported(&L);
	assert_int_equal(st, KVS_ERR_UNSUPPORTED);
	L.head_dim = 128;
	L.block_size = 12;
	assert_int_equal(kvs_cuda_shape_supported(&L), KVS_ERR_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f16_conversion),
		cmocka_unit_test(test_bf16_conversion),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_attention_by_hand),
		cmocka_unit_test(test_equal_keys_average),
		cmocka_unit_test(test_paged_equals_contiguous_random),
		cmocka_unit_test(test_mixed_batch_long),
		cmocka_unit_test(test_cache_write_then_attention),
		cmocka_unit_test(test_block_copy),
		cmocka_unit_test(test_batch_checks),
		cmocka_unit_test(test_cuda_api_without_cuda),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
