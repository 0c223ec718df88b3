/* test_common.c - status strings, error messages, checked arithmetic. */
#include "test_util.h"
#include "kvsim/common.h"

#include <string.h>

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(kvs_strerror(KVS_OK), "ok");
	assert_string_equal(kvs_strerror((kvs_status)999), "unknown status");
	for (int s = 0; s < KVS_STATUS_COUNT_; s++)
		assert_true(strlen(kvs_strerror((kvs_status)s)) > 0);
}

static void test_fail_records_message(void **state)
{
	(void)state;
	kvs_clear_error();
	assert_string_equal(kvs_last_error(), "");
	kvs_status st = kvs_fail(KVS_ERR_PARSE, "%s:%d: %s", "x.csv", 12, "bad");
	assert_int_equal(st, KVS_ERR_PARSE);
	assert_string_equal(kvs_last_error(), "x.csv:12: bad");
}

static void test_overflow(void **state)
{
	(void)state;
	uint64_t r;
	assert_false(kvs_mul_overflow(1u << 20, 1u << 20, &r));
	assert_int_equal(r, 1ull << 40);
	assert_true(kvs_mul_overflow(UINT64_MAX / 2 + 1, 2, &r));
	assert_true(kvs_add_overflow(UINT64_MAX, 1, &r));
	assert_int_equal(kvs_div_ceil(17, 16), 2);
	assert_int_equal(kvs_div_ceil(16, 16), 1);
	assert_int_equal(kvs_div_ceil(0, 16), 0);
}

static void test_memory_wrapper(void **state)
{
	(void)state;
	char *p = kvs_strdup("kvsim");
	assert_non_null(p);
	assert_string_equal(p, "kvsim");
	kvs_free(p);
	assert_null(kvs_reallocarray(NULL, SIZE_MAX, 2));
	assert_true(strcmp(kvs_mem_allocator(), "jemalloc") == 0 ||
		    strcmp(kvs_mem_allocator(), "libc") == 0);
	assert_true(kvs_mem_peak_rss() > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_fail_records_message),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_memory_wrapper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
