/* test_trace_shared.c - the public traces under ../shared/traces: request
 * counts and means stated in ../shared/traces/README.md.  Skips (77) when
 * the folder is absent. */
#include "test_util.h"
#include "kvsim/trace.h"

#include <math.h>
#include <string.h>

static void summarize(const char *path, const kvs_trace_opts *o, kvs_trace_summary *s)
{
	kvs_trace *t;
	assert_int_equal(kvs_trace_open(path, o, &t), KVS_OK);
	assert_int_equal(kvs_trace_summarize(t, s), KVS_OK);
	kvs_trace_close(t);
	assert_true(kvs_trace_stats_balanced(&s->reader));
	assert_int_equal(s->reader.skipped[KVS_SKIP_BAD_LINE], 0);
}

static void test_azure_conv(void **state)
{
	(void)state;
	const char *p = kvs_test_shared_trace("azure-2023/conv.csv");
	if (!p)
		skip();
	kvs_trace_summary s;
	summarize(p, NULL, &s);
	assert_int_equal(s.format, KVS_TRACE_AZURE);
	assert_int_equal(s.requests, 19366);
	assert_int_equal(s.reader.lines_read, 19367);
	assert_true(fabs(s.prompt.mean - 1154.7) < 0.05);  /* 22361870 / 19366 */
	assert_true(fabs(s.output.mean - 211.13) < 0.01);  /* 4088665 / 19366 */
	assert_int_equal(s.prompt_tokens_total, 22361870);
	assert_int_equal(s.output_tokens_total, 4088665);
	/* 18:15:46.6805900 .. 19:14:08.4025270 */
	assert_true(fabs(s.span_s - 3501.721937) < 1e-6);
	assert_true(fabs(s.mean_rate - 19365 / 3501.721937) < 1e-9);
	assert_false(s.has_hashes);
}

static void test_azure_code(void **state)
{
	(void)state;
	const char *p = kvs_test_shared_trace("azure-2023/code.csv");
	if (!p)
		skip();
	kvs_trace_summary s;
	summarize(p, NULL, &s);
	assert_int_equal(s.requests, 8819);
	/* the README: very bursty, inter-arrival cv about 13 */
	assert_true(s.cv_interarrival > 12 && s.cv_interarrival < 14);
	/* a 5-minute window, limited: counters still add up */
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.window_start_s = 600;
	o.window_end_s = 900;
	o.limit = 100;
	summarize(p, &o, &s);
	assert_true(s.requests <= 100);
	assert_true(s.first_s >= 0 && s.last_s < 300);
}

static void test_mooncake(void **state)
{
	(void)state;
	const char *p = kvs_test_shared_trace("mooncake-synthetic/synthetic.jsonl");
	if (!p)
		skip();
	kvs_trace_summary s;
	summarize(p, NULL, &s);
	assert_int_equal(s.format, KVS_TRACE_MOONCAKE);
	assert_int_equal(s.requests, 3993);
	assert_true(s.has_hashes);
	assert_int_equal(s.hash_block_tokens, 512);
	/* every full 512-block has an id (the file has ceil(len / 512) ids) */
	assert_int_equal(s.hashed_blocks, s.full_blocks);
	assert_true(s.prefix_hit_blocks > 0 && s.prefix_hit_blocks < 1);
	uint64_t hits512 = s.hit_blocks, tokens = s.prompt_tokens_total;

	/* at 16 tokens every full 16-block of the prompt gets a hash, and the
	 * hits can only grow (sub-blocks of a partial 512-block count too) */
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 16;
	summarize(p, &o, &s);
	assert_int_equal(s.hashed_blocks, s.full_blocks);
	assert_int_equal(s.prompt_tokens_total, tokens);
	assert_true(s.hit_blocks * 16 >= hits512 * 512);
}

int main(void)
{
	if (!kvs_test_shared_trace("azure-2023/conv.csv") &&
	    !kvs_test_shared_trace("azure-2023/code.csv") &&
	    !kvs_test_shared_trace("mooncake-synthetic/synthetic.jsonl"))
		return KVS_TEST_SKIP;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_azure_conv),
		cmocka_unit_test(test_azure_code),
		cmocka_unit_test(test_mooncake),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
