/*
 * test_allocator.c - the paged allocator operation by operation, with
 * hand-derived block ids and byte counts; names, hashes and configuration
 * checks of the shared interface.  The validator runs after every step.
 *
 * Geometry of most tests: 100 bytes per token, 4 tokens per block (400
 * bytes), budget 10 blocks + 50 bytes = 4050 bytes, max_model_len 64.
 */
#include "alloc_fixture.h"

#include <math.h>
#include <string.h>

#include "../allocator/owed.h"

#define B 100u
#define BS 4u
#define BUDGET (10u * BS * B + 50u)

static kvs_alloc_config cfg_paged(void)
{
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.budget_bytes = BUDGET;
	c.kv_bytes_per_token = B;
	c.block_size = BS;
	c.max_model_len = 64;
	c.watermark = 0.0;
	return c;
}

static void grow_ok(kvs_alloc *a, kvs_seq_id id, uint32_t n)
{
	const kvs_block_copy *c;
	size_t nc = 99;
	assert_int_equal(kvs_alloc_grow(a, id, n, &c, &nc), KVS_OK);
	assert_int_equal(nc, 0);
	assert_true(kvs_alloc_is_valid(a));
}

static void expect_parts(const kvs_alloc *a, uint64_t tok, uint64_t res,
			 uint64_t internal, uint64_t cached, uint64_t free_b)
{
	fx_expect_parts(a, NULL, BUDGET, tok, res, internal, 0, cached, free_b);
}

/* ---- names, defaults, hashes ----------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	assert_int_equal(c.policy, KVS_POLICY_PAGED);
	assert_int_equal(c.block_size, 16);
	assert_true(fabs(c.watermark - 0.01) < 1e-12);
	assert_false(c.enable_prefix_caching);
	assert_int_equal(c.swap_bytes, 0);
	assert_false(c.best_fit);
	assert_int_equal(c.page_bytes, 2u << 20);
	assert_int_equal(c.num_kv_tensors, 64);

	const char *names[] = { "paged", "max", "pow2", "oracle", "vattention" };
	for (int p = 0; p < KVS_POLICY_COUNT_; p++) {
		assert_string_equal(kvs_policy_name((kvs_policy)p), names[p]);
		kvs_policy out = KVS_POLICY_COUNT_;
		assert_int_equal(kvs_policy_parse(names[p], &out), KVS_OK);
		assert_int_equal(out, p);
	}
	kvs_policy out = KVS_POLICY_MAX;
	assert_int_equal(kvs_policy_parse("PAGED", &out), KVS_OK);
	assert_int_equal(out, KVS_POLICY_PAGED);
	assert_int_equal(kvs_policy_parse("buddy", &out), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "buddy"));
	assert_int_equal(out, KVS_POLICY_PAGED);   /* untouched on failure */
	assert_string_equal(kvs_policy_name((kvs_policy)99), "unknown");

	assert_string_equal(kvs_admit_reason_name(KVS_REASON_EXCEEDS_MAX_LEN),
			    "exceeds_max_model_len");
	assert_string_equal(kvs_admit_reason_name(KVS_REASON_NO_HOLE), "no_hole");
	for (int r = 0; r < KVS_REASON_COUNT_; r++) {
		assert_true(strlen(kvs_admit_reason_name((kvs_admit_reason)r)) > 0);
		assert_true(strlen(kvs_admit_reason_text((kvs_admit_reason)r)) > 0);
	}
}

static void test_hashes(void **state)
{
	(void)state;
	uint32_t t1[16], t2[16];
	for (uint32_t i = 0; i < 16; i++)
		t1[i] = t2[i] = 1000 + i;
	uint64_t h1 = kvs_hash_block_tokens(0, t1, 16);
	assert_int_equal(h1, kvs_hash_block_tokens(0, t2, 16));
	t2[15]++;
	assert_int_not_equal(h1, kvs_hash_block_tokens(0, t2, 16));
	/* swapping two tokens changes the hash */
	t2[15]--;
	t2[0] = t1[1];
	t2[1] = t1[0];
	assert_int_not_equal(h1, kvs_hash_block_tokens(0, t2, 16));
	/* the parent is part of the hash */
	assert_int_not_equal(h1, kvs_hash_block_tokens(h1, t1, 16));
	assert_int_not_equal(kvs_hash_block_tokens(0, t1, 15),
			     kvs_hash_block_tokens(0, t1, 16));
	/* ids and sub-blocks */
	uint64_t a = kvs_hash_block_id(0, 7, 0);
	assert_int_equal(a, kvs_hash_block_id(0, 7, 0));
	assert_int_not_equal(a, kvs_hash_block_id(0, 7, 1));
	assert_int_not_equal(a, kvs_hash_block_id(0, 8, 0));
	assert_int_not_equal(kvs_hash_block_id(a, 7, 0), a);
	/* no collisions and balanced bits over a small dense set */
	enum { N = 4096 };
	static uint64_t hs[N];
	unsigned ones = 0;
	for (uint32_t i = 0; i < N; i++) {
		hs[i] = kvs_hash_block_id(0, i, 0);
		ones += (unsigned)__builtin_popcountll(hs[i]);
		for (uint32_t j = 0; j < i; j++)
			assert_int_not_equal(hs[i], hs[j]);
	}
	double mean = (double)ones / N;
	assert_true(mean > 31.0 && mean < 33.0);
}

static void test_bad_config(void **state)
{
	(void)state;
	kvs_alloc *a = NULL;
	kvs_alloc_config c = cfg_paged();
	c.budget_bytes = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.kv_bytes_per_token = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.block_size = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.max_model_len = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.watermark = 1.0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c.watermark = NAN;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.budget_bytes = BS * B - 1;     /* not one block */
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "holds no block of"));
	c = cfg_paged();
	c.block_size = UINT32_MAX;
	c.kv_bytes_per_token = UINT64_MAX / 2;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_OVERFLOW);
	assert_non_null(strstr(kvs_last_error(), "block_size 4294967295 x kv_bytes_per_token"));
	c = cfg_paged();
	c.policy = (kvs_policy)kvs_policy_count();   /* not registered */
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg_paged();
	c.budget_bytes = UINT64_MAX;
	c.kv_bytes_per_token = 1;
	c.block_size = 1;                /* 2^64 blocks: too many ids */
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_LIMIT);
	assert_null(a);
	/* ids that fit, metadata that does not fit this machine: 2^31 - 1
	 * blocks with prefix caching and 2^32 - 2 host blocks need 80 GiB
	 * (refused here before a byte is written; a machine that holds that
	 * much is not asked to allocate it) */
	uint64_t host = kvs_host_memory_bytes();
	if (host && host < (80ull << 30)) {
		c = cfg_paged();
		c.block_size = 1;
		c.kv_bytes_per_token = 1;
		c.budget_bytes = (1ull << 31) - 1;
		c.swap_bytes = UINT64_MAX;
		c.enable_prefix_caching = true;
		assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_NOMEM);
		assert_non_null(strstr(kvs_last_error(), "of host memory for their metadata"));
		assert_null(a);
	}
}

/* ---- paged ---------------------------------------------------------------------- */

static void test_paged_grow_and_account(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	assert_int_equal(kvs_alloc_num_blocks(a), 10);
	assert_int_equal(kvs_alloc_free_blocks(a), 10);
	expect_parts(a, 0, 0, 50, 0, 4000);

	/* prompt 6, output 4 (final 10): 2 blocks, nothing stored yet */
	fx_admit_ok(a, 1, 6, 4);
	assert_int_equal(kvs_alloc_len(a, 1), 0);
	assert_int_equal(kvs_alloc_room(a, 1), 8);
	assert_int_equal(kvs_alloc_free_blocks(a), 8);
	expect_parts(a, 0, 800, 50, 0, 3200);
	const kvs_block_id *ids;
	uint32_t n;
	assert_int_equal(kvs_alloc_block_table(a, 1, &ids, &n), KVS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[1], 1);

	grow_ok(a, 1, 6);                 /* prefill */
	expect_parts(a, 600, 200, 50, 0, 3200);
	assert_int_equal(kvs_alloc_room(a, 1), 2);
	grow_ok(a, 1, 2);                 /* len 8: both blocks full */
	expect_parts(a, 800, 0, 50, 0, 3200);
	assert_int_equal(kvs_alloc_room(a, 1), 0);
	grow_ok(a, 1, 1);                 /* len 9: third block */
	assert_int_equal(kvs_alloc_block_table(a, 1, &ids, &n), KVS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(ids[2], 2);
	/* 3 blocks = 1200 bytes: 900 stored, 100 reserved (token 10), 200
	 * never used (slots 11, 12) + 50 budget tail */
	expect_parts(a, 900, 100, 250, 0, 2800);
	assert_int_equal(kvs_alloc_room(a, 1), 3);
	uint64_t slot;
	assert_int_equal(kvs_alloc_slot(a, 1, 8, &slot), KVS_OK);
	assert_int_equal(slot, 2 * BS + 0);
	assert_int_equal(kvs_alloc_slot(a, 1, 5, &slot), KVS_OK);
	assert_int_equal(slot, 1 * BS + 1);
	assert_int_equal(kvs_alloc_slot(a, 1, 12, &slot), KVS_ERR_INVALID);

	/* growing past the true final length is allowed: all of it is
	 * stored, the tail of the last block is internal */
	grow_ok(a, 1, 2);                 /* len 11 > final 10 */
	expect_parts(a, 1100, 0, 150, 0, 2800);

	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	expect_parts(a, 0, 0, 50, 0, 4000);
	assert_int_equal(kvs_alloc_num_seqs(a), 0);
	/* freed last-first onto the stack: block 0 on top again */
	fx_admit_ok(a, 2, 1, 0);
	assert_int_equal(kvs_alloc_block_table(a, 2, &ids, &n), KVS_OK);
	assert_int_equal(ids[0], 0);
	kvs_alloc_destroy(a);
}

static void test_paged_admission(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	c.watermark = 0.2;                /* 2 of 10 blocks */
	kvs_alloc *a = fx_make(&c);
	kvs_admit_reason why;
	kvs_seq_desc d = fx_desc(1, 60, 5);  /* 65 > max_model_len 64 */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_MAX_LEN);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_ERR_LIMIT);
	d = fx_desc(1, 30, 11);              /* 41 tokens > 40 slots */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_BUDGET);
	d = fx_desc(1, 33, 0);               /* 9 blocks, 10 - 9 < watermark 2 */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_BUDGET);
	/* paged admission needs only the prompt's blocks */
	d = fx_desc(1, 24, 16);              /* 6 blocks now, 40 tokens final */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NOW);
	assert_int_equal(why, KVS_REASON_NONE);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	d = fx_desc(2, 12, 0);               /* 3 blocks: 4 free, 1 < 2 left */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_WATERMARK);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_ERR_NOSPACE);
	d = fx_desc(2, 20, 0);               /* 5 blocks > 4 free */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_NO_FREE_BLOCKS);
	d = fx_desc(2, 8, 0);                /* 2 blocks, 2 left = watermark */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NOW);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	/* running sequences may dip into the watermark */
	grow_ok(a, 1, 24);
	grow_ok(a, 1, 8);                 /* 8 blocks for seq 1 */
	assert_int_equal(kvs_alloc_free_blocks(a), 0);
	/* out of blocks: NOSPACE, nothing changes */
	kvs_mem_parts before, after;
	kvs_alloc_account(a, NULL, &before);
	assert_int_equal(kvs_alloc_grow(a, 1, 1, NULL, NULL), KVS_ERR_NOSPACE);
	assert_int_equal(kvs_alloc_len(a, 1), 32);
	kvs_alloc_account(a, NULL, &after);
	assert_memory_equal(&before, &after, sizeof before);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
}

static void test_paged_misuse(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 7, 5, 5);
	grow_ok(a, 7, 5);
	kvs_mem_parts before, after;
	kvs_alloc_account(a, NULL, &before);
	kvs_seq_desc d = fx_desc(7, 3, 3);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_ERR_STATE);
	d = fx_desc(8, 0, 3);
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_ERR_INVALID);
	d = fx_desc(8, 4, 3);
	d.num_block_hashes = 1;
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_ERR_INVALID);
	assert_int_equal(kvs_alloc_grow(a, 99, 1, NULL, NULL), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_grow(a, 7, 60, NULL, NULL), KVS_ERR_LIMIT);
	assert_non_null(strstr(kvs_last_error(), "max_model_len"));
	assert_int_equal(kvs_alloc_release(a, 99), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_fork(a, 99, 100, 1), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_fork(a, 7, 7, 1), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_fork(a, 7, 100, 60), KVS_ERR_LIMIT);
	assert_int_equal(kvs_alloc_swap_in(a, 7, NULL, NULL), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_swap_out(a, 7, NULL, NULL), KVS_ERR_NOSPACE);
	assert_false(kvs_alloc_can_swap_in(a, 7));
	assert_int_equal(kvs_alloc_room(a, 99), 0);
	assert_int_equal(kvs_alloc_len(a, 99), 0);
	uint64_t slot = 5;
	assert_int_equal(kvs_alloc_slot(a, 99, 0, &slot), KVS_ERR_STATE);
	assert_int_equal(slot, 5);
	kvs_alloc_account(a, NULL, &after);
	assert_memory_equal(&before, &after, sizeof before);
	assert_int_equal(kvs_alloc_len(a, 7), 5);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_release(a, 7), KVS_OK);
	assert_int_equal(kvs_alloc_release(a, 7), KVS_ERR_STATE);   /* double */
	assert_true(kvs_alloc_is_valid(a));
	expect_parts(a, 0, 0, 50, 0, 4000);
	kvs_alloc_destroy(a);
}

static void test_paged_fork_cow(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 6, 4);             /* final 10 */
	grow_ok(a, 1, 6);                 /* blocks 0 (4), 1 (2 of 4) */
	assert_int_equal(kvs_alloc_fork(a, 1, 2, 3), KVS_OK);   /* final 9 */
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_len(a, 2), 6);
	assert_int_equal(kvs_alloc_free_blocks(a), 8);
	/* shared: 6 tokens once; slots 6, 7 reserved once (both will write) */
	expect_parts(a, 600, 200, 50, 0, 3200);
	assert_int_equal(kvs_alloc_room(a, 2), 0);  /* next write copies */

	const kvs_block_copy *cp;
	size_t nc;
	assert_int_equal(kvs_alloc_grow(a, 2, 1, &cp, &nc), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(nc, 1);
	assert_int_equal(cp[0].src, 1);
	assert_int_equal(cp[0].dst, 2);
	const kvs_block_id *ids;
	uint32_t n;
	assert_int_equal(kvs_alloc_block_table(a, 2, &ids, &n), KVS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], 0);      /* full block still shared */
	assert_int_equal(ids[1], 2);
	/* blocks 0 (4 tokens, shared), 1 (parent: 2 tokens + 2 reserved for
	 * its final 10), 2 (child: 3 tokens + 1 reserved for its final 9) */
	expect_parts(a, 900, 300, 50, 0, 2800);
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.cow_copies, 1);
	assert_int_equal(st.copy_bytes, BS * B);
	/* parent now writes in place */
	assert_int_equal(kvs_alloc_room(a, 1), 2);
	grow_ok(a, 1, 1);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 8);
	assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
	expect_parts(a, 0, 0, 50, 0, 4000);

	/* fork before prefill shares empty blocks; the first writer gets
	 * fresh blocks and no copy (nothing to copy) */
	fx_admit_ok(a, 3, 8, 0);
	assert_int_equal(kvs_alloc_fork(a, 3, 4, 2), KVS_OK);
	assert_int_equal(kvs_alloc_grow(a, 4, 8, &cp, &nc), KVS_OK);
	assert_int_equal(nc, 0);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 6);
	kvs_alloc_destroy(a);
}

static void hashes_for(uint64_t *h, uint32_t n, uint64_t doc)
{
	uint64_t parent = 0;
	for (uint32_t i = 0; i < n; i++)
		parent = h[i] = kvs_hash_block_id(parent, doc * 1000 + i, 0);
}

static void test_paged_prefix_cache(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	c.enable_prefix_caching = true;
	kvs_alloc *a = fx_make(&c);
	uint64_t h[4];
	hashes_for(h, 4, 1);
	kvs_seq_desc d = fx_desc(1, 10, 2);  /* 2 full prompt blocks + 2 tokens */
	d.block_hashes = h;
	d.num_block_hashes = 4;           /* extra hashes are ignored */
	uint32_t cached = 99;
	assert_int_equal(kvs_alloc_admit(a, &d, &cached), KVS_OK);
	assert_int_equal(cached, 0);
	assert_int_equal(kvs_alloc_prefix_lookup(a, h, 4), 0);
	grow_ok(a, 1, 5);                 /* block 0 full: cached now */
	assert_int_equal(kvs_alloc_prefix_lookup(a, h, 4), 1);
	grow_ok(a, 1, 5);
	assert_int_equal(kvs_alloc_prefix_lookup(a, h, 4), 2);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	/* blocks 0, 1 cached-idle; block 2 (partial) free */
	expect_parts(a, 0, 0, 50, 800, 3200);
	assert_int_equal(kvs_alloc_free_blocks(a), 10);

	d.seq = 2;
	kvs_admit_reason why;
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NOW);
	assert_int_equal(kvs_alloc_admit(a, &d, &cached), KVS_OK);
	assert_int_equal(cached, 8);
	assert_int_equal(kvs_alloc_len(a, 2), 8);
	assert_true(kvs_alloc_is_valid(a));
	const kvs_block_id *ids;
	uint32_t n;
	assert_int_equal(kvs_alloc_block_table(a, 2, &ids, &n), KVS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[1], 1);
	/* 8 cached tokens stored, 2 prompt + 2 output reserved */
	expect_parts(a, 800, 400, 50, 0, 2800);

	/* a second live sharer: refcount 2 on the cached blocks */
	kvs_seq_desc d3 = fx_desc(3, 8, 1);  /* prompt = exactly 2 blocks */
	d3.block_hashes = h;
	d3.num_block_hashes = 2;
	assert_int_equal(kvs_alloc_admit(a, &d3, &cached), KVS_OK);
	assert_int_equal(cached, 4);      /* last prompt token recomputed */
	assert_true(kvs_alloc_is_valid(a));
	expect_parts(a, 800, 800, 50, 0, 2400);  /* blk 1' holds 4 reserved */

	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.prefix_hit_blocks, 3);
	assert_int_equal(st.prefix_miss_blocks, 3 + 1 + 1);
	assert_int_equal(st.prefix_hit_tokens, 12);
	assert_int_equal(st.prefix_miss_tokens, 10 + 2 + 4);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
	assert_int_equal(kvs_alloc_release(a, 3), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));

	/* eviction: fill every block; the idle cached ones go, tail first */
	uint64_t g[9];
	hashes_for(g, 9, 2);
	kvs_seq_desc d4 = fx_desc(4, 36, 0); /* 9 blocks: 8 free + 1 evicted */
	d4.block_hashes = g;
	d4.num_block_hashes = 9;
	assert_int_equal(kvs_alloc_free_blocks(a), 10);
	assert_int_equal(kvs_alloc_admit(a, &d4, &cached), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.evictions, 1);
	/* the first block of the old prefix survives, the second went */
	assert_int_equal(kvs_alloc_prefix_lookup(a, h, 2), 1);
	grow_ok(a, 4, 36);                /* 9 new cached blocks (full) */
	assert_int_equal(kvs_alloc_prefix_lookup(a, g, 9), 9);
	kvs_alloc_destroy(a);
}

/* The prefix index does O(1) work per block whatever the keys look like.
 * A Mooncake replay keys blocks by raw trace ids (small consecutive
 * integers, re-split to id x k + j): an index that took its home slot from
 * the key's top bits put every such key in slot 0 and probed one growing
 * cluster, quadratic per prompt.  Six prompts of 2,048 one-token blocks
 * each (ops hand-counted below) through a pool of four, under five key
 * families; the probe count must stay below 3 per operation (about 1.5 to
 * 2.5 at the index's load of 1/2; the degenerate index needed ~1,000). */
enum { PX_N = 2048, PX_Q = 6 };

static uint64_t px_key(int family, uint32_t q, uint32_t b)
{
	uint64_t x = (uint64_t)q * PX_N + b;     /* ids 0, 1, 2, ... */
	switch (family) {
	case 0: return x;                        /* block 1, 512-token ids */
	case 1: return (x / 16 * 3 + 7) * 16 + x % 16;   /* sparse ids split */
	case 2: return x << 20;                  /* varying middle bits */
	case 3: return x << 44;                  /* varying top bits */
	default: return kvs_hash_block_id(0, q, b);       /* mixed hashes */
	}
}

static void test_paged_prefix_index_probes(void **state)
{
	(void)state;
	static uint64_t h[PX_Q][PX_N];
	for (int family = 0; family < 5; family++) {
		kvs_alloc_config c;
		kvs_alloc_config_defaults(&c);
		c.kv_bytes_per_token = 1;
		c.block_size = 1;
		c.budget_bytes = 4 * (PX_N + 1);     /* four prompts' blocks */
		c.max_model_len = PX_N + 1;
		c.watermark = 0;
		c.enable_prefix_caching = true;
		kvs_alloc *a = fx_make(&c);
		for (uint32_t q = 0; q < PX_Q; q++)
			for (uint32_t b = 0; b < PX_N; b++)
				h[q][b] = px_key(family, q, b);
		uint32_t cached;
		for (uint32_t q = 0; q < PX_Q; q++) {
			kvs_seq_desc d = fx_desc(q, PX_N + 1, 0);
			d.block_hashes = h[q];
			d.num_block_hashes = PX_N;
			assert_int_equal(kvs_alloc_admit(a, &d, &cached), KVS_OK);
			assert_int_equal(cached, 0);
			for (uint32_t k = 0; k < 4; k++)    /* chunked prefill */
				grow_ok(a, q, k < 3 ? 512 : 513);
			assert_int_equal(kvs_alloc_release(a, q), KVS_OK);
			assert_true(kvs_alloc_is_valid(a));
		}
		kvs_alloc_stats st;
		kvs_alloc_get_stats(a, &st);
		/* q4 takes the 4 free blocks and evicts 2,045; q5 the one
		 * block q4 left free (its unhashed last) and 2,048 more */
		assert_int_equal(st.evictions, 2045 + 2048);
		/* read-only calls count nothing */
		kvs_seq_desc d5 = fx_desc(5, PX_N + 1, 0);
		d5.block_hashes = h[5];
		d5.num_block_hashes = PX_N;
		assert_int_equal(kvs_alloc_prefix_lookup(a, h[5], PX_N), PX_N);
		assert_int_equal(kvs_alloc_can_admit(a, &d5, NULL), KVS_ADMIT_NOW);
		kvs_alloc_stats st2;
		kvs_alloc_get_stats(a, &st2);
		assert_int_equal(st2.prefix_index_ops, st.prefix_index_ops);
		assert_int_equal(st2.prefix_index_probes, st.prefix_index_probes);
		/* q5 again: every block a hit, 2,048 lookups, no miss lookup */
		d5.seq = 7;
		assert_int_equal(kvs_alloc_admit(a, &d5, &cached), KVS_OK);
		assert_int_equal(cached, PX_N);
		grow_ok(a, 7, 1);                   /* nothing new to register */
		assert_int_equal(kvs_alloc_release(a, 7), KVS_OK);
		assert_true(kvs_alloc_is_valid(a));
		kvs_alloc_get_stats(a, &st);
		/* 6 admission misses + 6 x 2,048 registrations + 4,093
		 * evictions + 2,048 hits */
		assert_int_equal(st.prefix_index_ops,
				 6 + PX_Q * PX_N + 4093 + PX_N);
		assert_true(st.prefix_index_probes >= st.prefix_index_ops);
		if (st.prefix_index_probes > 3 * st.prefix_index_ops)
			fail_msg("key family %d: %llu probes for %llu index "
				 "operations", family,
				 (unsigned long long)st.prefix_index_probes,
				 (unsigned long long)st.prefix_index_ops);
		kvs_alloc_destroy(a);
	}
}

static void test_paged_swap(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	c.swap_bytes = 3 * BS * B + 7;    /* 3 host blocks */
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 6, 4);
	grow_ok(a, 1, 6);
	fx_admit_ok(a, 2, 12, 0);            /* 3 blocks, only 4 tokens written */
	grow_ok(a, 2, 4);
	const kvs_block_copy *cp;
	size_t nc;
	assert_int_equal(kvs_alloc_swap_out(a, 1, &cp, &nc), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(nc, 2);
	assert_int_equal(cp[0].src, 0);
	assert_int_equal(cp[0].dst, 0);
	assert_int_equal(cp[1].src, 1);
	assert_int_equal(cp[1].dst, 1);
	assert_true(kvs_alloc_is_swapped(a, 1));
	assert_int_equal(kvs_alloc_len(a, 1), 6);
	assert_int_equal(kvs_alloc_room(a, 1), 0);
	assert_int_equal(kvs_alloc_grow(a, 1, 1, NULL, NULL), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_swap_out(a, 1, NULL, NULL), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_block_table(a, 1, &(const kvs_block_id *){0},
					       &(uint32_t){0}), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_free_blocks(a), 7);
	/* seq 2 holds 4 tokens in 1 of its 3 blocks: 1 host block left, it
	 * needs 1 (empty blocks are dropped, not copied) */
	assert_int_equal(kvs_alloc_swap_out(a, 2, &cp, &nc), KVS_OK);
	assert_int_equal(nc, 1);
	assert_true(kvs_alloc_is_valid(a));
	expect_parts(a, 0, 0, 50, 0, 4000);
	/* host pool full now */
	fx_admit_ok(a, 3, 2, 0);
	grow_ok(a, 3, 2);
	assert_int_equal(kvs_alloc_swap_out(a, 3, NULL, NULL), KVS_ERR_NOSPACE);
	assert_true(kvs_alloc_can_swap_in(a, 1));
	assert_int_equal(kvs_alloc_swap_in(a, 1, &cp, &nc), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(nc, 2);
	assert_int_equal(cp[0].src, 0);
	assert_int_equal(cp[1].src, 1);
	assert_false(kvs_alloc_is_swapped(a, 1));
	assert_int_equal(kvs_alloc_swap_in(a, 1, NULL, NULL), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_len(a, 1), 6);
	assert_int_equal(kvs_alloc_room(a, 1), 2);
	grow_ok(a, 1, 4);
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.swap_out_blocks, 3);
	assert_int_equal(st.swap_in_blocks, 2);
	assert_int_equal(st.swap_out_bytes, 3 * BS * B);
	/* releasing a swapped sequence returns its host blocks */
	assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_swap_out(a, 3, &cp, &nc), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
}

static void test_paged_pool_take_give(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 4, 0);             /* block 0 */
	kvs_block_id ids[12];
	assert_int_equal(kvs_alloc_blocks_take(a, 3, ids), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 2);
	assert_int_equal(ids[2], 3);
	assert_int_equal(kvs_alloc_free_blocks(a), 6);
	/* pinned blocks hold no tokens: internal fragmentation */
	expect_parts(a, 0, 400, 1200 + 50, 0, 2400);
	assert_int_equal(kvs_alloc_blocks_take(a, 7, ids + 3), KVS_ERR_NOSPACE);
	kvs_block_id bad[2] = { ids[0], ids[0] };
	assert_int_equal(kvs_alloc_blocks_give(a, 2, bad), KVS_ERR_STATE);
	bad[1] = 0;                       /* held by seq 1, not taken */
	assert_int_equal(kvs_alloc_blocks_give(a, 2, bad), KVS_ERR_STATE);
	bad[1] = 99;
	assert_int_equal(kvs_alloc_blocks_give(a, 2, bad), KVS_ERR_STATE);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 6);
	assert_int_equal(kvs_alloc_blocks_give(a, 3, ids), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_blocks_give(a, 1, ids), KVS_ERR_STATE);
	expect_parts(a, 0, 400, 50, 0, 3600);
	kvs_alloc_destroy(a);

	c.policy = KVS_POLICY_ORACLE;
	a = fx_make(&c);
	assert_int_equal(kvs_alloc_blocks_take(a, 1, ids), KVS_ERR_UNSUPPORTED);
	kvs_alloc_destroy(a);
}

/* Lazy pushes (no prefix caching, no pool pointer handed out): released
 * blocks go back to the free stack without their state words; blocks taken
 * from there are pinned exactly, a second give within one list (or of a
 * free block) fails with no change, and handing out the pool pointer makes
 * every state word exact again, for the inline calls. */
static void test_paged_lazy_pushes(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 8, 0);             /* blocks 0, 1 */
	grow_ok(a, 1, 8);
	fx_admit_ok(a, 2, 4, 0);             /* block 2 */
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));   /* stack: 0 1 | 3 .. 9 */
	assert_int_equal(kvs_alloc_free_blocks(a), 9);
	kvs_block_id ids[4];
	assert_int_equal(kvs_alloc_blocks_take(a, 3, ids), KVS_OK);
	assert_int_equal(ids[0], 0);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 3);
	assert_true(kvs_alloc_is_valid(a));
	/* given twice within the list: refused, the first stays pinned */
	kvs_block_id bad[2] = { ids[0], ids[0] };
	assert_int_equal(kvs_alloc_blocks_give(a, 2, bad), KVS_ERR_STATE);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 6);
	/* a free block (released lazily) and a table's are not the pool's */
	assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
	bad[0] = ids[1];
	bad[1] = 2;
	assert_int_equal(kvs_alloc_blocks_give(a, 2, bad), KVS_ERR_STATE);
	assert_true(kvs_alloc_is_valid(a));
	fx_admit_ok(a, 3, 4, 0);             /* takes block 2 back */
	const kvs_block_id *t;
	uint32_t n;
	assert_int_equal(kvs_alloc_block_table(a, 3, &t, &n), KVS_OK);
	assert_int_equal(n, 1);
	assert_int_equal(t[0], 2);
	assert_int_equal(kvs_alloc_blocks_give(a, 1, &t[0]), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_free_blocks(a), 6);
	assert_int_equal(kvs_alloc_blocks_give(a, 3, ids), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_blocks_give(a, 1, &ids[2]), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_free_blocks(a), 9);
	/* prompt blocks off the stale top: 3, 1, 0 (the give's reverse) */
	fx_admit_ok(a, 4, 12, 0);
	assert_int_equal(kvs_alloc_block_table(a, 4, &t, &n), KVS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(t[0], 3);
	assert_int_equal(t[1], 1);
	assert_int_equal(t[2], 0);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_release(a, 4), KVS_OK);
	expect_parts(a, 0, 4 * B, 50, 0, 9 * BS * B);   /* seq 3: 4 tokens reserved */
	/* the pool pointer: exact state words, so the inline calls work */
	kvs_block_pool *pool = kvs_alloc_block_pool(a);
	assert_non_null(pool);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_block_pool_give1(pool, 0), KVS_ERR_STATE);
	kvs_block_id one = kvs_block_pool_take1(pool);
	assert_int_equal(one, 3);            /* seq 4's first block, pushed last */
	assert_int_equal(kvs_block_pool_give1(pool, one), KVS_OK);
	assert_int_equal(kvs_block_pool_give1(pool, one), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_release(a, 3), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	expect_parts(a, 0, 0, 50, 0, 10 * BS * B);
	kvs_alloc_destroy(a);
}

/* seq's block table on a equals its twin's on b, n blocks long (0: any
 * length); a's table */
static const kvs_block_id *same_table(const kvs_alloc *a, const kvs_alloc *b,
				      kvs_seq_id seq, uint32_t n)
{
	const kvs_block_id *ta, *tb;
	uint32_t na, nb;
	assert_int_equal(kvs_alloc_block_table(a, seq, &ta, &na), KVS_OK);
	assert_int_equal(kvs_alloc_block_table(b, seq, &tb, &nb), KVS_OK);
	assert_int_equal(na, nb);
	if (n)
		assert_int_equal(na, n);
	for (uint32_t i = 0; i < na; i++)
		assert_int_equal(ta[i], tb[i]);
	return ta;
}

/* A prompt's blocks come off the free stack in the order blocks_take pops
 * them (checked on a twin allocator), for every length from 1 to 40
 * blocks (the stack top copied reversed: two vectors a turn, one, then
 * an overlapping last one, with AVX2 from 16 ids; under 4 one by one), from a
 * stack whose top a lazy release left; a release and a new admission of
 * the same length give the same table back. */
static void test_paged_stack_order(void **state)
{
	(void)state;
	for (uint32_t n = 1; n <= 40; n++) {
		kvs_alloc_config c = cfg_paged();
		c.budget_bytes = 100u * BS * B;
		c.max_model_len = 1024;
		kvs_alloc *a = fx_make(&c), *twin = fx_make(&c);
		kvs_alloc *both[2] = { a, twin };
		for (int k = 0; k < 2; k++) {
			fx_admit_ok(both[k], 1, 37 * BS, 0);
			fx_admit_ok(both[k], 9, 5 * BS, 0);
			assert_int_equal(kvs_alloc_release(both[k], 1), KVS_OK);
		}
		kvs_block_id ids[40];
		assert_int_equal(kvs_alloc_blocks_take(twin, n, ids), KVS_OK);
		fx_admit_ok(a, 2, n * BS, 0);
		const kvs_block_id *t;
		uint32_t nt;
		assert_int_equal(kvs_alloc_block_table(a, 2, &t, &nt), KVS_OK);
		assert_int_equal(nt, n);
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(t[i], ids[i]);
		kvs_block_id first[40];
		memcpy(first, t, n * sizeof *t);
		assert_int_equal(kvs_alloc_release(a, 2), KVS_OK);
		fx_admit_ok(a, 3, n * BS, 0);
		assert_int_equal(kvs_alloc_block_table(a, 3, &t, &nt), KVS_OK);
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(t[i], first[i]);
		assert_true(kvs_alloc_is_valid(a));
		kvs_alloc_destroy(a);
		kvs_alloc_destroy(twin);
	}
}

/* The owed-block tests' pool: 100 blocks, max_model_len 1024. */
static kvs_alloc_config cfg_owed(void)
{
	kvs_alloc_config c = cfg_paged();
	c.budget_bytes = 100u * BS * B;
	c.max_model_len = 1024;
	return c;
}

/* Twin allocators of config c whose free stacks' top a lazy release left
 * (20 blocks admitted and released: the first record's table of 32
 * entries recycled), with sequence keep admitted (prompt, output) in
 * both. */
static void owed_twins(const kvs_alloc_config *c, kvs_alloc *both[2], kvs_seq_id keep,
		       uint32_t prompt, uint32_t output)
{
	for (int k = 0; k < 2; k++) {
		both[k] = fx_make(c);
		fx_admit_ok(both[k], 99, 20 * BS, 0);
		fx_admit_ok(both[k], keep, prompt, output);
		assert_int_equal(kvs_alloc_release(both[k], 99), KVS_OK);   /* a stale top */
	}
}

/* The engine's calls (allocator/owed.h), checked on a twin allocator
 * that makes the public ones.  kvs_alloc_blocks_take_owed without pinning
 * (a lazily released top keeps its state words) and kvs_alloc_grow_owed
 * leave what kvs_alloc_blocks_take and kvs_alloc_grow_taken leave, in the
 * fast case and the fallback (a table growing past its capacity gives the
 * blocks back and grows), and the validator holds once they are in
 * tables; kvs_alloc_admit_now admits as kvs_alloc_admit does. */
static void test_paged_owed(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_owed();
	kvs_alloc *both[2];
	owed_twins(&c, both, 1, 2 * BS, 60 * BS);
	kvs_alloc *a = both[0], *b = both[1];
	/* blocks 1 .. m at a time: 2 (fast, room in a table of 4), 3 (past
	 * the table's 4 entries: the fallback), then 1, 5, 7, and 4 (fast:
	 * the last 2 of the 20 stale blocks and 2 with exact state words,
	 * below the stale floor) */
	const uint32_t ms[] = { 2, 3, 1, 5, 7, 4 };
	for (size_t r = 0; r < KVS_ARRAY_LEN(ms); r++) {
		uint32_t m = ms[r];
		kvs_block_id ia[8], ib[8];
		assert_int_equal(kvs_alloc_blocks_take_owed(a, m, ia, false), KVS_OK);
		assert_int_equal(kvs_alloc_blocks_take(b, m, ib), KVS_OK);
		for (uint32_t i = 0; i < m; i++)
			assert_int_equal(ia[i], ib[i]);
		assert_int_equal(kvs_alloc_free_blocks(a), kvs_alloc_free_blocks(b));
		assert_int_equal(kvs_alloc_grow_owed(a, 1, m * BS, m, ia, false), KVS_OK);
		assert_int_equal(kvs_alloc_grow_taken(b, 1, m * BS, m, ib), KVS_OK);
		same_table(a, b, 1, 0);
		assert_true(kvs_alloc_is_valid(a));
		assert_int_equal(kvs_alloc_free_blocks(a), kvs_alloc_free_blocks(b));
	}
	kvs_mem_parts pa, pb;
	kvs_alloc_account(a, NULL, &pa);
	kvs_alloc_account(b, NULL, &pb);
	assert_memory_equal(&pa, &pb, sizeof pa);
	/* kvs_alloc_admit_now, right after can_admit said NOW, admits as
	 * kvs_alloc_admit does, and still checks the description */
	kvs_seq_desc d = { .seq = 5, .prompt_tokens = 3 * BS + 1, .output_tokens = 4 };
	assert_int_equal(kvs_alloc_can_admit(a, &d, NULL), KVS_ADMIT_NOW);
	uint32_t ca = 9, cb = 9;
	assert_int_equal(kvs_alloc_admit_now(a, &d, &ca), KVS_OK);
	assert_int_equal(kvs_alloc_admit(b, &d, &cb), KVS_OK);
	assert_int_equal(ca, cb);
	same_table(a, b, 5, 4);
	kvs_alloc_account(a, NULL, &pa);
	kvs_alloc_account(b, NULL, &pb);
	assert_memory_equal(&pa, &pb, sizeof pa);
	assert_true(kvs_alloc_is_valid(a));
	kvs_seq_desc empty = { .seq = 6, .prompt_tokens = 0, .output_tokens = 4 };
	assert_int_equal(kvs_alloc_admit_now(a, &empty, NULL), KVS_ERR_INVALID);
	/* a fresh pool, nothing released: every id taken has its exact
	 * state word, which the unpinned take replaces with a table's (the
	 * grow, the prompt's 2 blocks and 2 more, is the fast case) */
	kvs_alloc *f = fx_make(&c);
	fx_admit_ok(f, 1, 2 * BS, 60 * BS);
	kvs_block_id fa[2];
	assert_int_equal(kvs_alloc_blocks_take_owed(f, 2, fa, false), KVS_OK);
	assert_int_equal(kvs_alloc_grow_owed(f, 1, 4 * BS, 2, fa, false), KVS_OK);
	assert_int_equal(kvs_alloc_free_blocks(f), 96);
	assert_true(kvs_alloc_is_valid(f));
	kvs_alloc_destroy(f);
	/* pinned (as the validator needs them): the public calls' blocks */
	kvs_block_id ia[2];
	assert_int_equal(kvs_alloc_blocks_take_owed(a, 2, ia, true), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_grow_owed(a, 1, 2 * BS, 2, ia, true), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
	kvs_alloc_destroy(b);
}

/* kvs_alloc_release_owed leaves what kvs_alloc_grow_owed then
 * kvs_alloc_release leave, checked on a twin allocator: the free count,
 * the memory parts (table buffers' capacity among them), the validator,
 * and at the end the order in which the free stack gives every block
 * back.  Fast cases (the table has room, unpinned and pinned, a partial
 * last block) and fallbacks (a table past its capacity, 32 entries from
 * the first record's 20 blocks; more tokens than the blocks hold, which
 * the grow's own takes make up). */
static void test_paged_release_owed(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_owed();
	kvs_alloc *both[2];
	owed_twins(&c, both, 91, 3 * BS, 0);   /* 91 stays: other tables */
	kvs_alloc *a = both[0], *b = both[1];
	static const struct {
		uint32_t prompt, n, m;
		bool pin;
	} cases[] = {
		{ 2 * BS, 2 * BS, 2, false },      /* fast: the table has room */
		{ 3 * BS, 3 * BS, 3, false },      /* fast: a recycled record's table */
		{ 30 * BS, 3 * BS, 3, false },     /* fallback: past its 32 entries */
		{ BS + 1, 2 * BS - 1, 1, false },  /* fast: the partial block filled */
		{ BS, BS, 1, true },               /* fast, pinned */
		{ 2 * BS, 2 * BS + 1, 2, false },  /* fallback: a third block */
		{ 1, BS - 1 + 2 * BS, 2, true },   /* fast, pinned */
	};
	for (size_t r = 0; r < KVS_ARRAY_LEN(cases); r++) {
		kvs_seq_id seq = 10 + r;
		uint32_t m = cases[r].m;
		bool pin = cases[r].pin;
		kvs_block_id ia[4], ib[4];
		for (int k = 0; k < 2; k++) {
			fx_admit_ok(both[k], seq, cases[r].prompt, 60 * BS);
			grow_ok(both[k], seq, cases[r].prompt);   /* its prefill */
		}
		assert_int_equal(kvs_alloc_blocks_take_owed(a, m, ia, pin), KVS_OK);
		assert_int_equal(kvs_alloc_blocks_take_owed(b, m, ib, pin), KVS_OK);
		assert_int_equal(kvs_alloc_release_owed(a, seq, cases[r].n, m, ia, pin), KVS_OK);
		assert_int_equal(kvs_alloc_grow_owed(b, seq, cases[r].n, m, ib, pin), KVS_OK);
		assert_int_equal(kvs_alloc_release(b, seq), KVS_OK);
		assert_int_equal(kvs_alloc_free_blocks(a), kvs_alloc_free_blocks(b));
		kvs_mem_parts pa, pb;
		kvs_alloc_account(a, NULL, &pa);
		kvs_alloc_account(b, NULL, &pb);
		assert_memory_equal(&pa, &pb, sizeof pa);
		assert_true(kvs_alloc_is_valid(a));
		const kvs_block_id *t;
		uint32_t nt;
		assert_int_equal(kvs_alloc_block_table(a, seq, &t, &nt), KVS_ERR_STATE);
	}
	/* every free block, in the order the stacks give them */
	uint64_t nf = kvs_alloc_free_blocks(a);
	kvs_block_id *fa = test_malloc(nf * sizeof *fa), *fb = test_malloc(nf * sizeof *fb);
	assert_int_equal(kvs_alloc_blocks_take(a, (uint32_t)nf, fa), KVS_OK);
	assert_int_equal(kvs_alloc_blocks_take(b, (uint32_t)nf, fb), KVS_OK);
	assert_memory_equal(fa, fb, nf * sizeof *fa);
	test_free(fa);
	test_free(fb);
	/* not a paged allocator: refused, as the grow is */
	kvs_alloc_config cm = c;
	cm.policy = KVS_POLICY_MAX;
	cm.max_model_len = 8 * BS;
	kvs_alloc *x = fx_make(&cm);
	fx_admit_ok(x, 1, BS, BS);
	kvs_block_id none[1] = { 0 };
	assert_int_equal(kvs_alloc_release_owed(x, 1, BS, 1, none, false), KVS_ERR_UNSUPPORTED);
	kvs_alloc_destroy(x);
	kvs_alloc_destroy(a);
	kvs_alloc_destroy(b);
}

/* kvs_alloc_grow_taken leaves what kvs_alloc_blocks_give then
 * kvs_alloc_grow leave (checked on a twin allocator), refuses a block not
 * taken with no change, and falls back to the two calls when the grow does
 * not need exactly the blocks given. */
static void test_paged_grow_taken(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c), *b = fx_make(&c);
	kvs_alloc *both[2] = { a, b };
	kvs_block_id ids[2][2];
	for (int k = 0; k < 2; k++) {
		fx_admit_ok(both[k], 1, 4, 8);          /* block 0 */
		grow_ok(both[k], 1, 4);
		assert_int_equal(kvs_alloc_blocks_take(both[k], 2, ids[k]), KVS_OK);
		assert_int_equal(ids[k][0], 1);
		assert_int_equal(ids[k][1], 2);
	}
	/* misuse: a block twice, a free block, a table's block */
	kvs_block_id bad[2] = { 1, 1 };
	assert_int_equal(kvs_alloc_grow_taken(a, 1, 8, 2, bad), KVS_ERR_STATE);
	bad[1] = 5;
	assert_int_equal(kvs_alloc_grow_taken(a, 1, 8, 2, bad), KVS_ERR_STATE);
	bad[1] = 0;
	assert_int_equal(kvs_alloc_grow_taken(a, 1, 8, 2, bad), KVS_ERR_STATE);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_len(a, 1), 4);
	assert_int_equal(kvs_alloc_free_blocks(a), 7);
	assert_int_equal(kvs_alloc_grow_taken(a, 2, 4, 2, ids[0]), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_free_blocks(a), 9);  /* given back, unknown seq */
	assert_int_equal(kvs_alloc_blocks_give(b, 2, ids[1]), KVS_OK);
	for (int k = 0; k < 2; k++) {             /* stack top now 2, then 1 */
		assert_int_equal(kvs_alloc_blocks_take(both[k], 2, ids[k]), KVS_OK);
		assert_int_equal(ids[k][0], 2);
	}
	/* the fast case: 8 tokens need exactly the 2 blocks */
	assert_int_equal(kvs_alloc_grow_taken(a, 1, 8, 2, ids[0]), KVS_OK);
	assert_int_equal(kvs_alloc_blocks_give(b, 2, ids[1]), KVS_OK);
	grow_ok(b, 1, 8);
	assert_true(kvs_alloc_is_valid(a));
	const kvs_block_id *ta = same_table(a, b, 1, 3);
	assert_int_equal(ta[1], 1);               /* the last given, first */
	assert_int_equal(kvs_alloc_free_blocks(a), kvs_alloc_free_blocks(b));
	expect_parts(a, 12 * B, 0, 50, 0, 7 * BS * B);
	/* the fallback: one block given, none needed (room for 4 tokens
	 * is left): given back, then grown within the table */
	for (int k = 0; k < 2; k++)
		assert_int_equal(kvs_alloc_blocks_take(both[k], 1, ids[k]), KVS_OK);
	assert_int_equal(kvs_alloc_grow_taken(a, 1, 0, 1, ids[0]), KVS_OK);
	assert_int_equal(kvs_alloc_blocks_give(b, 1, ids[1]), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 7);
	expect_parts(a, 12 * B, 0, 50, 0, 7 * BS * B);
	kvs_alloc_destroy(a);
	kvs_alloc_destroy(b);

	c.policy = KVS_POLICY_ORACLE;
	a = fx_make(&c);
	assert_int_equal(kvs_alloc_grow_taken(a, 1, 1, 0, NULL), KVS_ERR_UNSUPPORTED);
	kvs_alloc_destroy(a);
}

/* The inline single-block path: stack order, eviction and exhaustion in
 * the slow path, misuse, and blocks moving between the two pool APIs. */
static void test_paged_pool_single(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	c.enable_prefix_caching = true;
	kvs_alloc *a = fx_make(&c);
	kvs_block_pool *pool = kvs_alloc_block_pool(a);
	assert_non_null(pool);
	uint64_t h[2];
	hashes_for(h, 2, 1);
	kvs_seq_desc d = fx_desc(1, 9, 0);   /* 2 full prompt blocks + 1 token */
	d.block_hashes = h;
	d.num_block_hashes = 2;
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	grow_ok(a, 1, 9);                 /* blocks 0, 1 hashed; 2 partial */
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	/* free stack: 2 on top, then 3..9; LRU: 1 (released first), 0 */
	kvs_block_id ids[10];
	for (uint32_t i = 0; i < 8; i++) {
		ids[i] = kvs_block_pool_take1(pool);
		assert_int_equal(ids[i], 2 + i);
		assert_true(kvs_alloc_is_valid(a));
	}
	expect_parts(a, 0, 0, 8 * BS * B + 50, 2 * BS * B, 0);
	/* free stack empty: the slow path evicts the LRU head, then the next */
	ids[8] = kvs_block_pool_take1(pool);
	assert_int_equal(ids[8], 1);
	ids[9] = kvs_block_pool_take1(pool);
	assert_int_equal(ids[9], 0);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(kvs_alloc_prefix_lookup(a, h, 2), 0);
	/* exhausted: a normal result that changes nothing */
	assert_int_equal(kvs_block_pool_take1(pool), KVS_BLOCK_NONE);
	assert_int_equal(kvs_alloc_free_blocks(a), 0);
	assert_true(kvs_alloc_is_valid(a));
	expect_parts(a, 0, 0, 10 * BS * B + 50, 0, 0);
	/* misuse: out of range, given twice; no change */
	assert_int_equal(kvs_block_pool_give1(pool, 10), KVS_ERR_STATE);
	assert_int_equal(kvs_block_pool_give1(pool, KVS_BLOCK_NONE),
			 KVS_ERR_STATE);
	assert_int_equal(kvs_block_pool_give1(pool, 5), KVS_OK);
	assert_int_equal(kvs_block_pool_give1(pool, 5), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_free_blocks(a), 1);
	assert_true(kvs_alloc_is_valid(a));
	/* taken one way, given back the other: stack 5 | 2 3 */
	assert_int_equal(kvs_alloc_blocks_give(a, 2, &ids[0]), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	kvs_block_id two[2];
	assert_int_equal(kvs_alloc_blocks_take(a, 2, two), KVS_OK);
	assert_int_equal(two[0], 3);
	assert_int_equal(two[1], 2);
	assert_int_equal(kvs_block_pool_give1(pool, two[0]), KVS_OK);
	assert_int_equal(kvs_block_pool_give1(pool, two[1]), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	/* a block a sequence holds is not the pool's to give back */
	fx_admit_ok(a, 7, 1, 0);             /* takes block 2 off the top */
	const kvs_block_id *t;
	uint32_t n;
	assert_int_equal(kvs_alloc_block_table(a, 7, &t, &n), KVS_OK);
	assert_int_equal(t[0], 2);
	assert_int_equal(kvs_block_pool_give1(pool, 2), KVS_ERR_STATE);
	assert_int_equal(kvs_alloc_release(a, 7), KVS_OK);
	for (uint32_t i = 2; i < 10; i++)     /* 4, 6..9, 1, 0 */
		if (ids[i] != 5)
			assert_int_equal(kvs_block_pool_give1(pool, ids[i]),
					 KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 10);
	expect_parts(a, 0, 0, 50, 0, 10 * BS * B);
	kvs_alloc_destroy(a);

	c = cfg_paged();
	c.policy = KVS_POLICY_MAX;
	a = fx_make(&c);
	assert_null(kvs_alloc_block_pool(a));
	kvs_alloc_destroy(a);
}

static void test_paged_metadata(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	c.enable_prefix_caching = true;
	c.budget_bytes = 1000u * BS * B;
	kvs_alloc *a = fx_make(&c);
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_true(st.block_metadata_bytes <= 32u * 1000u + 256u);
	assert_true(st.metadata_bytes >= st.block_metadata_bytes);
	kvs_alloc_destroy(a);
}

/* Table capacity: 4 entries at the first admission, doubled as the table
 * grows, kept by the record a released sequence leaves for the next one;
 * the metadata counts it (4 bytes an entry).  No table: 0. */
static void test_paged_table_capacity(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	kvs_alloc_stats s0, s1;
	assert_int_equal(kvs_alloc_table_capacity(a, 1), 0);   /* unknown */
	fx_admit_ok(a, 1, 6, 30);            /* 2 blocks */
	assert_int_equal(kvs_alloc_table_capacity(a, 1), 4);
	kvs_alloc_get_stats(a, &s0);
	grow_ok(a, 1, 16);                   /* 4 blocks: room in 4 entries */
	assert_int_equal(kvs_alloc_table_capacity(a, 1), 4);
	grow_ok(a, 1, 1);                    /* the fifth block: 8 entries */
	assert_int_equal(kvs_alloc_table_capacity(a, 1), 8);
	kvs_alloc_get_stats(a, &s1);
	assert_int_equal(s1.metadata_bytes - s0.metadata_bytes, 4u * 4u);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_int_equal(kvs_alloc_table_capacity(a, 1), 0);
	fx_admit_ok(a, 2, 1, 1);             /* one block, the record kept */
	assert_int_equal(kvs_alloc_table_capacity(a, 2), 8);
	kvs_alloc_destroy(a);

	c.policy = KVS_POLICY_MAX;
	c.max_model_len = 16;
	a = fx_make(&c);
	fx_admit_ok(a, 1, 6, 4);
	assert_int_equal(kvs_alloc_table_capacity(a, 1), 0);
	kvs_alloc_destroy(a);
}

/* The validator names the invariant that broke (file:line and the
 * expression) and needs no memory: it passes with every host allocation
 * failing, and each corruption below is caught by its own check. */
static void test_validator_names_invariant(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg_paged();
	kvs_alloc *a = fx_make(&c);
	fx_admit_ok(a, 1, 6, 4);
	grow_ok(a, 1, 6);
	kvs_mem_fail_nth(1, true);
	bool ok = kvs_alloc_is_valid(a);
	kvs_mem_fail_nth(0, false);
	assert_true(ok);

	/* a free block's state word no longer names its stack slot */
	kvs_block_pool *pool = kvs_alloc_block_pool(a);
	kvs_block_id top = pool->free_ids_[pool->nfree_ - 1];
	uint32_t saved = pool->state_[top];
	pool->state_[top] ^= 1;
	kvs_clear_error();
	assert_false(kvs_alloc_is_valid(a));
	const char *msg = kvs_last_error();
	assert_non_null(strstr(msg, "paged.c:"));
	assert_non_null(strstr(msg, "invariant broken: p->pool.state_[id] == (POOL | k)"));
	pool->state_[top] = saved;
	assert_true(kvs_alloc_is_valid(a));

	/* the free count claims one block more than the stack holds */
	pool->nfree_++;
	assert_false(kvs_alloc_is_valid(a));
	assert_non_null(strstr(kvs_last_error(), "invariant broken: "));
	pool->nfree_--;
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_hashes),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_paged_grow_and_account),
		cmocka_unit_test(test_paged_admission),
		cmocka_unit_test(test_paged_misuse),
		cmocka_unit_test(test_paged_fork_cow),
		cmocka_unit_test(test_paged_prefix_cache),
		cmocka_unit_test(test_paged_prefix_index_probes),
		cmocka_unit_test(test_paged_swap),
		cmocka_unit_test(test_paged_pool_take_give),
		cmocka_unit_test(test_paged_pool_single),
		cmocka_unit_test(test_paged_lazy_pushes),
		cmocka_unit_test(test_paged_stack_order),
		cmocka_unit_test(test_paged_grow_taken),
		cmocka_unit_test(test_paged_owed),
		cmocka_unit_test(test_paged_release_owed),
		cmocka_unit_test(test_paged_metadata),
		cmocka_unit_test(test_paged_table_capacity),
		cmocka_unit_test(test_validator_names_invariant),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
