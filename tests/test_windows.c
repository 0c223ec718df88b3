/*
 * test_windows.c - windowed layers beside the full ones in every policy
 * (kvs_alloc_config.window_*): each sequence holds its windowed layers'
 * largest holding from admission to release, counted as token states.
 * Every figure is derived by hand in the comments; the validator runs
 * after every operation.
 */
#include "alloc_fixture.h"

#include <string.h>

#define B 100u     /* bytes per token of the full layers */
#define BS 4u

static void grow_ok(kvs_alloc *a, kvs_seq_id id, uint32_t n)
{
	assert_int_equal(kvs_alloc_grow(a, id, n, NULL, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
}

/* paged: 40 blocks of 4 tokens x 100 B (+ 50 B of tail); a 6-token window
 * straddles at most ceil(5 / 4) + 1 = 3 blocks; windowed groups twice the
 * full ones (window_num 2): 2 x min(ceil(final / 4), 3) blocks a sequence */
static kvs_alloc_config cfg_paged(void)
{
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_PAGED;
	c.budget_bytes = 40u * BS * B + 50u;
	c.kv_bytes_per_token = B;
	c.block_size = BS;
	c.max_model_len = 200;
	c.watermark = 0;
	c.swap_bytes = 20u * BS * B;
	c.window_tokens = 6;
	c.window_num = 2;
	c.window_den = 1;
	return c;
}

static void test_paged_windows(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	const uint64_t blk = BS * B, budget = c.budget_bytes;

	/* prompt 6, output 4, final 10: 2 prompt blocks, 2 x min(3, 3) = 6
	 * window blocks, all window blocks token states */
	fx_admit_ok(a, 1, 6, 4);
	assert_int_equal(kvs_alloc_free_blocks(a), 32);
	fx_expect_parts(a, NULL, budget, 6 * blk, 8 * B, 50, 0, 0, 32 * blk);
	grow_ok(a, 1, 6);
	fx_expect_parts(a, NULL, budget, 6 * blk + 6 * B, 2 * B, 50, 0, 0, 32 * blk);
	assert_int_equal(kvs_alloc_room(a, 1), 2);   /* the window is not room */

	/* final 2: one block of it, 2 x min(1, 3) = 2 window blocks */
	fx_admit_ok(a, 2, 1, 1);
	assert_int_equal(kvs_alloc_free_blocks(a), 29);

	/* the window blocks count toward the largest request: final 150 is
	 * 38 blocks + 6 > 40; final 132 is 33 + 6 = 39 <= 40 */
	kvs_admit_reason why;
	kvs_seq_desc d = fx_desc(9, 140, 10);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_BUDGET);
	d = fx_desc(9, 130, 2);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_NO_FREE_BLOCKS);

	/* release gives the window blocks back with the table */
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 37);

	/* a forked child (final 4 + 8 = 12: 3 blocks) takes 6 window blocks
	 * of its own; the prompt block is shared */
	fx_admit_ok(a, 3, 4, 8);                     /* 1 + 6 blocks */
	grow_ok(a, 3, 4);
	assert_int_equal(kvs_alloc_free_blocks(a), 30);
	assert_int_equal(kvs_alloc_fork(a, 3, 4, 8), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 24);
	/* the parent's 4 tokens on the windowed groups (twice the full
	 * ones) are copied: 8 token states */
	kvs_alloc_stats stt;
	kvs_alloc_get_stats(a, &stt);
	assert_int_equal(stt.copy_bytes, 8 * B);
	assert_int_equal(kvs_alloc_window_bytes(a, 4), 8 * B);
	assert_int_equal(kvs_alloc_window_bytes(a, 100), 12 * B);   /* the window's 6 */

	/* swap-out gives them back, swap-in takes them again; the windowed
	 * KV moves with the block */
	assert_int_equal(kvs_alloc_release(a, 4), KVS_OK);
	assert_int_equal(kvs_alloc_swap_out(a, 3, NULL, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 37);
	kvs_alloc_get_stats(a, &stt);
	assert_int_equal(stt.swap_out_bytes, blk + 8 * B);
	assert_int_equal(kvs_alloc_swap_in_blocks(a, 3), 1 + 6);
	assert_true(kvs_alloc_can_swap_in(a, 3));
	assert_int_equal(kvs_alloc_swap_in(a, 3, NULL, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_get_stats(a, &stt);
	assert_int_equal(stt.swap_in_bytes, blk + 8 * B);
	assert_int_equal(kvs_alloc_free_blocks(a), 30);
	assert_int_equal(kvs_alloc_swap_in_blocks(a, 3), 0);   /* resident */

	/* 25 prompt blocks and 6 window blocks are more than the 30 free */
	kvs_seq_desc big = fx_desc(5, 100, 4);
	assert_int_equal(kvs_alloc_can_admit(a, &big, &why), KVS_ADMIT_LATER);
	uint32_t cached;
	assert_int_equal(kvs_alloc_admit(a, &big, &cached), KVS_ERR_NOSPACE);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 30);
	kvs_alloc_destroy(a);
}

static void test_paged_window_exhaustion(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	/* 40 blocks: prompt 96 output 4 is 24 + 6 = 30 blocks, leaving 10 */
	fx_admit_ok(a, 1, 96, 4);
	grow_ok(a, 1, 96);
	assert_int_equal(kvs_alloc_free_blocks(a), 10);
	/* prompt 12, output 1: 3 + 2 x 3 = 9 */
	fx_admit_ok(a, 2, 12, 1);
	grow_ok(a, 2, 12);
	assert_int_equal(kvs_alloc_free_blocks(a), 1);
	/* a child of sequence 2 needs 6 window blocks: NOSPACE, nothing moved */
	assert_int_equal(kvs_alloc_fork(a, 2, 3, 1), KVS_ERR_NOSPACE);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 1);
	kvs_alloc_destroy(a);

	/* the host pool holds the windowed KV too: a sequence of 4 tokens
	 * swaps out 1 block and 2 x 4 = 8 windowed token states, 2 host
	 * blocks of 4: 3 host blocks, not in a pool of 2 */
	for (uint32_t host = 2; host <= 3; host++) {
		c.swap_bytes = host * BS * B;
		a = fx_make(&c);
		fx_admit_ok(a, 1, 4, 4);
		grow_ok(a, 1, 4);
		assert_int_equal(kvs_alloc_swap_out(a, 1, NULL, NULL),
				 host == 3 ? KVS_OK : KVS_ERR_NOSPACE);
		assert_true(kvs_alloc_is_valid(a));
		assert_int_equal(kvs_alloc_is_swapped(a, 1), host == 3);
		if (host == 2)
			kvs_alloc_destroy(a);
	}
	/* back in: its block and its 2 x 2 window blocks; the host room is
	 * free again, so a second round trip fits */
	assert_int_equal(kvs_alloc_swap_in_blocks(a, 1), 1 + 4);
	assert_int_equal(kvs_alloc_swap_in(a, 1, NULL, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_swap_out(a, 1, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);   /* released while out */
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
}

/* chunked attention: an aligned chunk of 8 tokens holds 8 / 4 = 2
 * blocks; a 6-token chunk straddles up to ceil(5 / 4) + 1 = 3 */
static void test_paged_chunked(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	c.window_chunked = true;
	c.window_tokens = 8;
	c.window_num = 3;
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 20, 20);                  /* 5 + 3 x 2 */
	assert_int_equal(kvs_alloc_free_blocks(a), 29);
	kvs_alloc_destroy(a);
	c.window_tokens = 6;
	a = fx_make(&c);
	fx_admit_ok(a, 1, 20, 20);                  /* 5 + 3 x 3 */
	assert_int_equal(kvs_alloc_free_blocks(a), 26);
	kvs_alloc_destroy(a);
	/* a ratio below one rounds up: 1 / 3 of 3 blocks is 1, of 1 block 1 */
	c.window_num = 1;
	c.window_den = 3;
	a = fx_make(&c);
	fx_admit_ok(a, 1, 20, 20);                  /* 5 + 1 */
	fx_admit_ok(a, 2, 1, 1);                    /* 1 + 1 */
	assert_int_equal(kvs_alloc_free_blocks(a), 32);
	kvs_alloc_destroy(a);
}

/* contiguous (oracle, max, buddy): the region's rule capped at the
 * window for the windowed layers, 2 x min(region, 6) tokens beside it */
static void test_contiguous_windows(void **state)
{
	(void)state;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_ORACLE;
	c.budget_bytes = 100u * B;
	c.kv_bytes_per_token = B;
	c.max_model_len = 50;
	c.window_tokens = 6;
	c.window_num = 2;
	c.window_den = 1;
	kvs_alloc *a = fx_make(&c);
	/* prompt 6, output 4: 10 + 12 = 22 tokens; 12 of them token states,
	 * 10 reserved; room 10 */
	fx_admit_ok(a, 1, 6, 4);
	assert_int_equal(kvs_alloc_room(a, 1), 10);
	fx_expect_parts(a, NULL, c.budget_bytes, 12 * B, 10 * B, 0, 0, 0, 78 * B);
	grow_ok(a, 1, 10);
	assert_int_equal(kvs_alloc_room(a, 1), 0);
	assert_int_equal(kvs_alloc_grow(a, 1, 1, NULL, NULL), KVS_ERR_NOSPACE);
	/* prompt 2, output 1: 3 + 2 x 3 = 9 tokens */
	fx_admit_ok(a, 2, 2, 1);
	fx_expect_parts(a, NULL, c.budget_bytes, (22 + 6) * B, 3 * B, 0, 0, 0, 69 * B);
	/* a child of 1 (final 10 + 2 = 12): its own 12 + 12 = 24 tokens, the
	 * parent's 10 copied in, and its windowed groups' 2 x 6 */
	kvs_alloc_stats st0, st1;
	kvs_alloc_get_stats(a, &st0);
	assert_int_equal(kvs_alloc_fork(a, 1, 3, 2), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_get_stats(a, &st1);
	assert_int_equal(st1.copy_bytes - st0.copy_bytes, (10 + 12) * B);
	fx_expect_parts(a, NULL, c.budget_bytes, (22 + 6 + 22) * B, (3 + 2) * B, 0, 0, 0,
			45 * B);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
	assert_int_equal(kvs_alloc_release(a, 3), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	fx_expect_parts(a, NULL, c.budget_bytes, 0, 0, 0, 0, 0, 100 * B);
	kvs_alloc_destroy(a);

	/* max: max_model_len 50 for the full layers, 2 x 6 beside: 62; a
	 * second does not fit the 100 */
	c.policy = KVS_POLICY_MAX;
	a = fx_make(&c);
	fx_admit_ok(a, 1, 6, 4);
	assert_int_equal(kvs_alloc_room(a, 1), 50);
	kvs_admit_reason why;
	kvs_seq_desc d = fx_desc(2, 1, 1);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_LATER);
	kvs_alloc_destroy(a);

	/* buddy: 22 tokens rounded to 32, 10 of rounding */
	c.policy = KVS_POLICY_ORACLE;
	c.buddy = true;
	c.budget_bytes = 128u * B;
	a = fx_make(&c);
	fx_admit_ok(a, 1, 6, 4);
	assert_int_equal(kvs_alloc_room(a, 1), 10);
	fx_expect_parts(a, NULL, c.budget_bytes, 12 * B, 10 * B, 0, 10 * B, 0, 96 * B);
	kvs_alloc_destroy(a);
}

/* vattention: 2 tensors of 512 B a token (kv_bytes_per_token 1024), 64 KiB
 * pages: 128 tokens a page, page groups of 128 KiB; a 200-token window
 * maps the groups of min(final, 200) tokens */
static void test_vattention_windows(void **state)
{
	(void)state;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_VATTENTION;
	c.kv_bytes_per_token = 1024;
	c.num_kv_tensors = 2;
	c.page_bytes = 64u << 10;
	c.budget_bytes = 20u * (128u << 10);
	c.max_model_len = 4096;
	c.watermark = 0;
	c.window_tokens = 200;
	c.window_num = 1;
	c.window_den = 1;
	kvs_alloc *a = fx_make(&c);
	const uint64_t g = 128u << 10;
	/* prompt 300, output 700: 3 groups for the prompt, 2 for the
	 * window (200 tokens) */
	fx_admit_ok(a, 1, 300, 700);
	fx_expect_parts(a, NULL, c.budget_bytes, 2 * g, 384 * 1024, 0, 0, 0, 15 * g);
	/* final 100: 1 group (100 of its 128 slots reserved), 1 for the
	 * window */
	fx_admit_ok(a, 2, 50, 50);
	fx_expect_parts(a, NULL, c.budget_bytes, 3 * g, (384 + 100) * 1024, 28 * 1024, 0, 0,
			13 * g);
	/* the largest request: 32 groups for 4,096 tokens + 2 > 20 */
	kvs_admit_reason why;
	kvs_seq_desc d = fx_desc(3, 100, 2400);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	/* 18 + 2 = 20 groups fits an empty pool only */
	d = fx_desc(3, 100, 2200);
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NOW);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	fx_expect_parts(a, NULL, c.budget_bytes, 0, 0, 0, 0, 0, 20 * g);
	kvs_alloc_destroy(a);
}

static void test_window_config_errors(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = NULL;
	c.window_den = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "window"));
	c = cfg_paged();
	c.window_tokens = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.window_num = 2000;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_null(a);
	/* a contiguous region of max_model_len tokens plus its windowed
	 * part must be a 32-bit token count: 2^32 - 1000 tokens and 3 x 1000
	 * windowed ones would wrap; 2^32 - 3001 fit exactly */
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_MAX;
	c.budget_bytes = 1u << 20;
	c.kv_bytes_per_token = 1;
	c.max_model_len = UINT32_MAX - 999;
	c.window_tokens = 1000;
	c.window_num = 3;
	c.window_den = 1;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_LIMIT);
	assert_non_null(strstr(kvs_last_error(), "windowed layers' 3000"));
	assert_null(a);
	c.max_model_len = UINT32_MAX - 3000;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_OK);
	kvs_alloc_destroy(a);
}

/* Random admissions, growth, releases, forks and swaps on a windowed pool
 * of every policy: the validator after every operation (the units the
 * sequences hold sum to the running total, paged's stash blocks each held
 * once), the parts summing to the budget, and an empty pool at the end. */
static uint64_t rng = 7;
static uint32_t rnd_below(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((rng >> 33) % n);
}

static void random_ops(kvs_alloc_config c, unsigned long ops)
{
	kvs_alloc *a = fx_make(&c);
	enum { MAXL = 32 };
	kvs_seq_id live[MAXL];
	uint32_t nlive = 0;
	kvs_seq_id next = 1;
	for (unsigned long k = 0; k < ops; k++) {
		uint32_t op = rnd_below(10);
		if (op < 3 && nlive < MAXL) {
			kvs_seq_desc d = fx_desc(next, 1 + rnd_below(c.max_model_len / 2),
						 rnd_below(c.max_model_len / 2));
			uint32_t cached;
			kvs_status st = kvs_alloc_admit(a, &d, &cached);
			/* LIMIT: never fits the pool */
			if (st != KVS_OK && st != KVS_ERR_NOSPACE && st != KVS_ERR_LIMIT)
				fail_msg("admit %u + %u: %d %s", d.prompt_tokens, d.output_tokens,
					 (int)st, kvs_last_error());
			if (st == KVS_OK)
				live[nlive++] = next;
			next++;
		} else if (op < 6 && nlive) {
			kvs_seq_id id = live[rnd_below(nlive)];
			if (!kvs_alloc_is_swapped(a, id)) {
				kvs_status st = kvs_alloc_grow(a, id, 1 + rnd_below(6), NULL, NULL);
				assert_true(st == KVS_OK || st == KVS_ERR_NOSPACE ||
					    st == KVS_ERR_LIMIT);
			}
		} else if (op < 8 && nlive) {
			uint32_t i = rnd_below(nlive);
			assert_int_equal(kvs_alloc_release(a, live[i]), KVS_OK);
			live[i] = live[--nlive];
		} else if (op == 8 && nlive && nlive < MAXL) {
			kvs_seq_id par = live[rnd_below(nlive)];
			if (!kvs_alloc_is_swapped(a, par) &&
			    kvs_alloc_len(a, par) + 8 <= c.max_model_len) {
				kvs_status st = kvs_alloc_fork(a, par, next, 8);
				assert_true(st == KVS_OK || st == KVS_ERR_NOSPACE);
				if (st == KVS_OK)
					live[nlive++] = next;
				next++;
			}
		} else if (op == 9 && nlive && c.swap_bytes) {
			kvs_seq_id id = live[rnd_below(nlive)];
			kvs_status st = kvs_alloc_is_swapped(a, id)
				? (kvs_alloc_can_swap_in(a, id)
				   ? kvs_alloc_swap_in(a, id, NULL, NULL) : KVS_OK)
				: kvs_alloc_swap_out(a, id, NULL, NULL);
			assert_true(st == KVS_OK || st == KVS_ERR_NOSPACE);
		}
		assert_true(kvs_alloc_is_valid(a));
		kvs_mem_parts m;
		kvs_alloc_account(a, NULL, &m);
		assert_int_equal(m.token_states + m.reservation + m.internal_frag +
				 m.external_frag + m.cached_idle + m.free, c.budget_bytes);
	}
	kvs_alloc_stats stt;
	kvs_alloc_get_stats(a, &stt);
	print_message("%s: %llu sequences, %u live at the end, %llu swapped out\n",
		      kvs_policy_name(c.policy), (unsigned long long)next - 1, nlive,
		      (unsigned long long)stt.swap_out_blocks);
	while (nlive)
		assert_int_equal(kvs_alloc_release(a, live[--nlive]), KVS_OK);
	kvs_mem_parts m;
	kvs_alloc_account(a, NULL, &m);
	assert_int_equal(m.token_states + m.reservation, 0);
	kvs_alloc_destroy(a);
}

static void test_random_windows(void **state)
{
	(void)state;
	unsigned long ops = kvs_test_scaled(20000, 500);
	kvs_alloc_config c = cfg_paged();
	random_ops(c, ops);
	c.enable_prefix_caching = true;
	c.swap_bytes = 0;
	random_ops(c, ops);
	c = cfg_paged();
	c.window_chunked = true;
	c.window_tokens = 8;
	c.window_num = 1;
	c.window_den = 2;
	random_ops(c, ops);
	static const kvs_policy contig[] = { KVS_POLICY_MAX, KVS_POLICY_POW2,
					     KVS_POLICY_ORACLE };
	for (size_t i = 0; i < 3; i++) {
		kvs_alloc_config k;
		kvs_alloc_config_defaults(&k);
		k.policy = contig[i];
		k.budget_bytes = 400u * B;
		k.kv_bytes_per_token = B;
		k.max_model_len = 60;
		k.window_tokens = 6;
		k.window_num = 2;
		k.window_den = 1;
		random_ops(k, ops);
		k.buddy = true;
		random_ops(k, ops);
	}
	kvs_alloc_config v;
	kvs_alloc_config_defaults(&v);
	v.policy = KVS_POLICY_VATTENTION;
	v.kv_bytes_per_token = 1024;
	v.num_kv_tensors = 2;
	v.page_bytes = 64u << 10;
	v.budget_bytes = 40u * (128u << 10);
	v.max_model_len = 2048;
	v.window_tokens = 200;
	v.window_num = 3;
	v.window_den = 2;
	random_ops(v, ops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paged_windows),
		cmocka_unit_test(test_paged_window_exhaustion),
		cmocka_unit_test(test_paged_chunked),
		cmocka_unit_test(test_contiguous_windows),
		cmocka_unit_test(test_vattention_windows),
		cmocka_unit_test(test_window_config_errors),
		cmocka_unit_test(test_random_windows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
