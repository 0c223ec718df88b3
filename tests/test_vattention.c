/*
 * test_vattention.c - page-granular virtual-memory allocation: pages per
 * K/V tensor, on-demand mapping, page-tail waste, admission and checks.
 *
 * Geometry: 4 K/V tensors, 4096 bytes per token (1024 per tensor), 64 KiB
 * pages = 64 tokens per page; a page group (one page per tensor) is
 * 256 KiB; budget 10 groups + 1000 bytes; max_model_len 1024.
 */
#include "alloc_fixture.h"

#include <string.h>

#define T 4u
#define B 4096u
#define PAGE (64u << 10)
#define GROUP (T * PAGE)
#define BUDGET (10u * GROUP + 1000u)

static kvs_alloc_config cfg(void)
{
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_VATTENTION;
	c.budget_bytes = BUDGET;
	c.kv_bytes_per_token = B;
	c.max_model_len = 1024;
	c.page_bytes = PAGE;
	c.num_kv_tensors = T;
	c.watermark = 0.0;
	return c;
}

static void expect(const kvs_alloc *a, uint64_t budget, uint64_t tok,
		   uint64_t res, uint64_t internal, uint64_t free_b)
{
	fx_expect_parts(a, NULL, budget, tok, res, internal, 0, 0, free_b);
}

static void test_on_demand_pages(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg();
	kvs_alloc *a = fx_make(&c);
	assert_int_equal(kvs_alloc_num_blocks(a), 10);
	expect(a, BUDGET, 0, 0, 1000, 10ull * GROUP);
	kvs_seq_desc d = { .seq = 1, .prompt_tokens = 100, .output_tokens = 50 };
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	/* 2 pages per tensor = 128 tokens mapped, all reserved */
	assert_int_equal(kvs_alloc_free_blocks(a), 8);
	assert_int_equal(kvs_alloc_room(a, 1), 128);
	expect(a, BUDGET, 0, 128ull * B, 1000, 8ull * GROUP);
	assert_int_equal(kvs_alloc_grow(a, 1, 100, NULL, NULL), KVS_OK);
	expect(a, BUDGET, 100ull * B, 28ull * B, 1000, 8ull * GROUP);
	assert_int_equal(kvs_alloc_grow(a, 1, 30, NULL, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	/* 130 tokens: a third page per tensor, 192 tokens mapped; 20 still to
	 * come, 42 past the final length of 150 */
	assert_int_equal(kvs_alloc_free_blocks(a), 7);
	expect(a, BUDGET, 130ull * B, 20ull * B, 42ull * B + 1000, 7ull * GROUP);
	assert_int_equal(kvs_alloc_room(a, 1), 62);
	assert_int_equal(kvs_alloc_release(a, 1), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	expect(a, BUDGET, 0, 0, 1000, 10ull * GROUP);
	kvs_alloc_destroy(a);
}

static void test_page_tail_waste(void **state)
{
	(void)state;
	/* 1000 bytes per tensor token: 65 tokens per 64 KiB page, 536 bytes
	 * of every page never used */
	kvs_alloc_config c = cfg();
	c.kv_bytes_per_token = 4000;
	c.budget_bytes = 3ull * GROUP;
	kvs_alloc *a = fx_make(&c);
	kvs_seq_desc d = { .seq = 1, .prompt_tokens = 65, .output_tokens = 0 };
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_grow(a, 1, 65, NULL, NULL), KVS_OK);
	expect(a, 3ull * GROUP, 65ull * 4000, 0, 4ull * 536, 2ull * GROUP);
	assert_int_equal(kvs_alloc_grow(a, 1, 1, NULL, NULL), KVS_OK);
	expect(a, 3ull * GROUP, 66ull * 4000, 0, 2ull * GROUP - 66ull * 4000,
	       1ull * GROUP);
	assert_true(kvs_alloc_is_valid(a));
	kvs_alloc_destroy(a);
}

static void test_admission(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg();
	c.watermark = 0.1;                /* 1 group */
	kvs_alloc *a = fx_make(&c);
	kvs_admit_reason why;
	kvs_seq_desc d = { .seq = 1, .prompt_tokens = 1000, .output_tokens = 25 };
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_MAX_LEN);
	/* 640 tokens fill the pool; 641 never fit */
	d.prompt_tokens = 600;
	d.output_tokens = 41;
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_BUDGET);
	d.output_tokens = 0;              /* 10 groups: no watermark left */
	assert_int_equal(kvs_alloc_can_admit(a, &d, &why), KVS_ADMIT_NEVER);
	assert_int_equal(why, KVS_REASON_EXCEEDS_BUDGET);
	d.prompt_tokens = 512;            /* 8 groups now */
	d.output_tokens = 128;
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	kvs_seq_desc e = { .seq = 2, .prompt_tokens = 65, .output_tokens = 0 };
	assert_int_equal(kvs_alloc_can_admit(a, &e, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_WATERMARK);
	e.prompt_tokens = 200;
	assert_int_equal(kvs_alloc_can_admit(a, &e, &why), KVS_ADMIT_LATER);
	assert_int_equal(why, KVS_REASON_NO_FREE_BLOCKS);
	e.prompt_tokens = 64;
	assert_int_equal(kvs_alloc_admit(a, &e, NULL), KVS_OK);
	/* growth may use the watermark, then fails without side effects */
	assert_int_equal(kvs_alloc_grow(a, 1, 512, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_grow(a, 1, 64, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_free_blocks(a), 0);
	assert_int_equal(kvs_alloc_grow(a, 1, 1, NULL, NULL), KVS_ERR_NOSPACE);
	assert_int_equal(kvs_alloc_len(a, 1), 576);
	assert_int_equal(kvs_alloc_fork(a, 2, 3, 10), KVS_OK);  /* len 0 */
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_swap_out(a, 1, NULL, NULL), KVS_ERR_UNSUPPORTED);
	kvs_alloc_destroy(a);
}

static void test_fork_copies(void **state)
{
	(void)state;
	kvs_alloc_config c = cfg();
	kvs_alloc *a = fx_make(&c);
	kvs_seq_desc d = { .seq = 1, .prompt_tokens = 70, .output_tokens = 10 };
	assert_int_equal(kvs_alloc_admit(a, &d, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_grow(a, 1, 70, NULL, NULL), KVS_OK);
	assert_int_equal(kvs_alloc_fork(a, 1, 2, 5), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_free_blocks(a), 6);
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	assert_int_equal(st.copy_bytes, 70ull * B);
	/* parent 10 to come, child 5 */
	expect(a, BUDGET, 140ull * B, 15ull * B,
	       4ull * GROUP - 155ull * B + 1000, 6ull * GROUP);
	kvs_alloc_destroy(a);
}

static void test_bad_config(void **state)
{
	(void)state;
	kvs_alloc *a = NULL;
	kvs_alloc_config c = cfg();
	c.page_bytes = 32u << 10;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg();
	c.page_bytes = 4u << 20;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg();
	c.kv_bytes_per_token = 4097;      /* not divisible by 4 tensors */
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg();
	c.num_kv_tensors = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg();
	c.kv_bytes_per_token = 4u * (128u << 10);  /* a token > a page */
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	c = cfg();
	c.budget_bytes = GROUP - 1;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "holds no page group of"));
	assert_null(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_on_demand_pages),
		cmocka_unit_test(test_page_tail_waste),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_fork_copies),
		cmocka_unit_test(test_bad_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
