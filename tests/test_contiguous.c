/*
 * test_contiguous.c - max / pow2 / oracle reservation over one linear
 * address space: placement (first and best fit), coalescing, admission
 * verdicts and the six-part accounting with external fragmentation.
 *
 * Geometry: 10 bytes per token, budget 1005 bytes (100 tokens + 5 bytes
 * that no region can use), max_model_len 40.  Offsets below are in bytes.
 */
#include "alloc_fixture.h"

#include <string.h>

#define B 10u
#define BUDGET 1005u

static kvs_alloc *make(kvs_policy p, bool best_fit)
{
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = p;
	c.budget_bytes = BUDGET;
	c.kv_bytes_per_token = B;
	c.max_model_len = 40;
	c.best_fit = best_fit;
	return fx_make(&c);
}

static void release_ok(kvs_alloc *a, kvs_seq_id id)
{
	assert_int_equal(kvs_alloc_release(a, id), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
}

static void expect(const kvs_alloc *a, const kvs_seq_desc *next, uint64_t tok,
		   uint64_t res, uint64_t internal, uint64_t ext, uint64_t free_b)
{
	fx_expect_parts(a, next, BUDGET, tok, res, internal, ext, 0, free_b);
}

static void test_oracle_first_fit(void **state)
{
	(void)state;
	kvs_alloc *a = make(KVS_POLICY_ORACLE, false);
	expect(a, NULL, 0, 0, 0, 0, BUDGET);
	fx_admit_ok(a, 1, 10, 5);            /* [0, 150) */
	fx_admit_ok(a, 2, 20, 10);           /* [150, 450) */
	fx_admit_ok(a, 3, 5, 5);             /* [450, 550) */
	expect(a, NULL, 0, 550, 0, 0, 455);
	assert_int_equal(kvs_alloc_grow(a, 1, 12, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_room(a, 1), 3);
	expect(a, NULL, 120, 430, 0, 0, 455);
	/* past the reservation: the caller must preempt */
	assert_int_equal(kvs_alloc_grow(a, 1, 4, NULL, NULL), KVS_ERR_NOSPACE);
	assert_int_equal(kvs_alloc_len(a, 1), 12);
	assert_int_equal(kvs_alloc_grow(a, 1, 30, NULL, NULL), KVS_ERR_LIMIT);
	assert_true(kvs_alloc_is_valid(a));

	release_ok(a, 2);                 /* holes [150,450) [550,1005) */
	fx_admit_ok(a, 4, 30, 5);            /* 350: first fit skips 300 -> 550 */
	/* holes 300 and 105; a waiting request of 32 tokens fits neither */
	kvs_seq_desc next = fx_desc(9, 30, 2);
	expect(a, &next, 120, 480, 0, 405, 0);
	/* with no waiting request only holes below one token count */
	expect(a, NULL, 120, 480, 0, 0, 405);
	kvs_admit_reason why;
	assert_int_equal(kvs_alloc_can_admit(a, &next, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_NO_HOLE);
	assert_int_equal(kvs_alloc_admit(a, &next, NULL), KVS_ERR_NOSPACE);
	kvs_seq_desc big = fx_desc(9, 35, 6);
	assert_int_equal(kvs_alloc_can_admit(a, &big, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_MAX_LEN);

	fx_admit_ok(a, 5, 20, 5);            /* 250 into [150,450) -> [400,450) */
	kvs_seq_desc d16 = fx_desc(9, 16, 0);
	assert_int_equal(kvs_alloc_can_admit(a, &d16, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_NO_FREE_BYTES);
	fx_admit_ok(a, 6, 10, 0);            /* 100: only [900,1005) fits */
	/* holes: [400,450) 50 and [1000,1005) 5 */
	kvs_seq_desc d5 = fx_desc(9, 5, 0);
	expect(a, &d5, 120, 480 + 250 + 100, 0, 5, 50);

	release_ok(a, 1);
	release_ok(a, 3);
	release_ok(a, 4);
	release_ok(a, 6);
	release_ok(a, 5);
	expect(a, NULL, 0, 0, 0, 0, BUDGET);
	/* coalesced back into one hole: the largest request fits */
	fx_admit_ok(a, 7, 40, 0);
	kvs_alloc_destroy(a);
}

static void test_best_fit(void **state)
{
	(void)state;
	for (int best = 0; best <= 1; best++) {
		kvs_alloc *a = make(KVS_POLICY_ORACLE, best);
		fx_admit_ok(a, 1, 20, 0);    /* [0,200) */
		fx_admit_ok(a, 2, 10, 0);    /* [200,300) */
		fx_admit_ok(a, 3, 15, 0);    /* [300,450) */
		fx_admit_ok(a, 4, 10, 0);    /* [450,550) */
		release_ok(a, 1);
		release_ok(a, 3);         /* holes 200, 150, 455 */
		fx_admit_ok(a, 5, 14, 0);    /* 140 */
		kvs_seq_desc next = fx_desc(9, 10, 5);   /* 150 */
		kvs_mem_parts m;
		kvs_alloc_account(a, &next, &m);
		/* first fit: [140,200) is too small; best fit: [440,450) */
		assert_int_equal(m.external_frag, best ? 10 : 60);
		kvs_alloc_destroy(a);
	}
}

static void test_max_policy(void **state)
{
	(void)state;
	kvs_alloc *a = make(KVS_POLICY_MAX, false);
	fx_admit_ok(a, 1, 10, 5);            /* 40 tokens reserved */
	/* 15 tokens to come, 25 never used */
	expect(a, NULL, 0, 150, 250, 0, 605);
	fx_admit_ok(a, 2, 1, 0);
	kvs_admit_reason why;
	kvs_seq_desc d = fx_desc(3, 1, 0);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_NO_FREE_BYTES);
	/* every request needs 400 bytes: the 205-byte tail is unusable */
	expect(a, NULL, 0, 160, 640, 205, 0);
	assert_int_equal(kvs_alloc_grow(a, 1, 15, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_room(a, 1), 25);
	expect(a, NULL, 150, 10, 640, 205, 0);
	kvs_alloc_destroy(a);

	/* a region larger than the budget can never be admitted */
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_MAX;
	c.budget_bytes = BUDGET;
	c.kv_bytes_per_token = B;
	c.max_model_len = 200;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_OK);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_BUDGET);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_ERR_LIMIT);
	kvs_alloc_destroy(a);
}

static void test_pow2_policy(void **state)
{
	(void)state;
	static const struct { uint32_t prompt, output, region; } cases[] = {
		{ 10, 5, 18 }, { 10, 0, 11 }, { 10, 1, 11 }, { 10, 8, 18 },
		{ 10, 9, 26 }, { 30, 9, 40 }, { 1, 16, 17 },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(cases); i++) {
		kvs_alloc *a = make(KVS_POLICY_POW2, false);
		fx_admit_ok(a, 1, cases[i].prompt, cases[i].output);
		uint32_t final_len = cases[i].prompt + cases[i].output;
		expect(a, NULL, 0, final_len * B,
		       (cases[i].region - final_len) * B, 0,
		       BUDGET - cases[i].region * B);
		assert_int_equal(kvs_alloc_room(a, 1), cases[i].region);
		kvs_alloc_destroy(a);
	}
}

/* Buddy placement: regions rounded up to 2^k tokens (the rounding is
 * internal fragmentation), placed at the lowest offset aligned to their
 * size, possibly mid-hole; holes with no aligned room are external
 * fragmentation for the next request. */
static void test_buddy(void **state)
{
	(void)state;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_ORACLE;
	c.budget_bytes = BUDGET;
	c.kv_bytes_per_token = B;
	c.max_model_len = 40;
	c.buddy = true;
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 2, 1);     /* 3 -> 4 tokens: [0, 40) */
	fx_admit_ok(a, 2, 4, 1);     /* 5 -> 8 tokens, aligned to 80: [80, 160) */
	fx_admit_ok(a, 3, 1, 1);     /* 2 tokens, aligned to 20: [40, 60) */
	/* holes [60, 80) and [160, 1005); reserved 3 + 5 + 2 tokens; the
	 * rounding, 1 + 3 + 0 tokens, is external fragmentation */
	expect(a, NULL, 0, 100, 0, 40, 865);
	assert_int_equal(kvs_alloc_room(a, 1), 3);   /* not into the rounding */
	/* a waiting 16-token request (160 bytes, aligned to 160): [60, 80) is
	 * too small, [160, 320) is free */
	kvs_seq_desc d16 = fx_desc(9, 10, 6);
	expect(a, &d16, 0, 100, 0, 60, 845);
	/* 8 tokens (80 bytes, aligned to 80): [60, 80) has no aligned room */
	kvs_seq_desc d8 = fx_desc(9, 7, 1);
	expect(a, &d8, 0, 100, 0, 60, 845);
	fx_admit_ok(a, 4, 7, 1);     /* [160, 240) */
	release_ok(a, 2);            /* [60, 160) coalesces; 4 needs no rounding */
	expect(a, &d8, 0, 130, 0, 10, 865);
	fx_admit_ok(a, 5, 3, 5);     /* 8 tokens: 60 is not aligned, 80 is: [80, 160) */
	/* the 20 bytes at [60, 80) hold no 8-token region */
	expect(a, &d8, 0, 210, 0, 30, 765);
	assert_int_equal(kvs_alloc_grow(a, 1, 3, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_grow(a, 1, 1, NULL, NULL), KVS_ERR_NOSPACE);
	assert_true(kvs_alloc_is_valid(a));
	/* first fit would have put 5 at [60, 140): buddy leaves the gap */
	kvs_alloc_destroy(a);
}

static void test_fork_and_unsupported(void **state)
{
	(void)state;
	kvs_alloc *a = make(KVS_POLICY_ORACLE, false);
	fx_admit_ok(a, 1, 10, 5);
	assert_int_equal(kvs_alloc_grow(a, 1, 10, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_fork(a, 1, 2, 3), KVS_OK);  /* 13 tokens */
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_len(a, 2), 10);
	assert_int_equal(kvs_alloc_room(a, 2), 3);
	expect(a, NULL, 200, 80, 0, 0, BUDGET - 280);
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.copy_bytes, 100);
	assert_int_equal(kvs_alloc_fork(a, 1, 2, 3), KVS_ERR_STATE);
	/* no swap, no block tables, no prefix cache */
	assert_int_equal(kvs_alloc_swap_out(a, 1, NULL, NULL), KVS_ERR_UNSUPPORTED);
	assert_int_equal(kvs_alloc_swap_in(a, 1, NULL, NULL), KVS_ERR_UNSUPPORTED);
	assert_false(kvs_alloc_can_swap_in(a, 1));
	const kvs_block_id *ids;
	uint32_t n;
	assert_int_equal(kvs_alloc_block_table(a, 1, &ids, &n), KVS_ERR_UNSUPPORTED);
	uint64_t slot;
	assert_int_equal(kvs_alloc_slot(a, 1, 0, &slot), KVS_ERR_UNSUPPORTED);
	assert_int_equal(kvs_alloc_num_blocks(a), 0);
	uint64_t h = 1;
	assert_int_equal(kvs_alloc_prefix_lookup(a, &h, 1), 0);
	release_ok(a, 1);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_ERR_STATE);
	release_ok(a, 2);
	/* a fork that finds no hole fails and leaves no trace */
	fx_admit_ok(a, 3, 30, 10);           /* 400 */
	fx_admit_ok(a, 4, 30, 10);           /* 400 */
	assert_int_equal(kvs_alloc_grow(a, 3, 30, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_fork(a, 3, 5, 10), KVS_ERR_NOSPACE);
	assert_int_equal(kvs_alloc_len(a, 5), 0);
	assert_int_equal(kvs_alloc_num_seqs(a), 2);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oracle_first_fit),
		cmocka_unit_test(test_best_fit),
		cmocka_unit_test(test_max_policy),
		cmocka_unit_test(test_pow2_policy),
		cmocka_unit_test(test_buddy),
		cmocka_unit_test(test_fork_and_unsupported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
