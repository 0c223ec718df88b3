/*
 * test_sim_shared.c - replays of the public Azure 2023 traces
 * (../shared/traces/azure-2023/{conv,code}.csv; skipped when absent):
 * every request is accounted for, paged runs at least as many sequences at
 * once as every contiguous reservation policy, streaming equals replaying
 * from memory, and on a slice of the real trace the fast path equals
 * stepping one token at a time.
 *
 * KVS_TEST_SCALE = s < 1 (sanitizer builds, s = 0.1) replays only the first
 * s^2 of each trace (at least 100 requests): with
 * -Ddebug_checks=2 the allocator validator runs after every mutating call
 * and every step, O(blocks) each (about 3.5 ms per paged step under
 * AddressSanitizer), so a replay costs its paged steps times the pool, and
 * s^2 keeps the whole file well under a minute there.  At s = 1 the whole
 * traces are replayed.
 */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/kvsim.h"

/* Requests to replay out of `full`: all of them at full scale, full x s^2
 * (at least lo) when scaled. */
static uint64_t share(uint64_t full, uint64_t lo)
{
	if (kvs_test_scale() >= 1.0)
		return full;
	uint64_t n = kvs_test_scaled(kvs_test_scaled(full, lo), lo);
	return n < full ? n : full;
}

static bool scaled(void)
{
	return kvs_test_scale() < 1.0;
}

static void deploy_default(kvs_deploy *d)
{
	kvs_test_deploy(d, "llama-3-8b", "a100-40gb");
}

static kvs_request_set *load(const char *rel, uint64_t limit, uint32_t mml)
{
	const char *path = kvs_test_shared_trace(rel);
	if (!path)
		return NULL;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.limit = limit;
	o.max_model_len = mml;
	o.block_size = 16;
	kvs_request_set *s = NULL;
	if (kvs_request_set_load(path, &o, &s) != KVS_OK)
		fail_msg("%s: %s", path, kvs_last_error());
	return s;
}

static kvs_sim_result *replay(const kvs_sim_config *c, const kvs_request_set *s)
{
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, s, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *r = NULL;
	if (kvs_sim_replay(c, &src, &r) != KVS_OK)
		fail_msg("replay: %s", kvs_last_error());
	return r;
}

static void check_accounting(const kvs_sim_stats *st, uint64_t n)
{
	assert_int_equal(st->arrived, n);
	uint64_t rej = 0;
	for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++)
		rej += st->rejected_by[i];
	assert_int_equal(rej, st->rejected);
	assert_int_equal(st->arrived, st->completed + st->rejected + st->unfinished);
	assert_int_equal(st->unfinished, 0);
	const kvs_sim_mem_pct *m = &st->memory_pct;
	double sum = m->token_states + m->reservation + m->internal_frag +
		     m->external_frag + m->cached_idle + m->free;
	assert_true(fabs(sum - 100.0) < 1e-6);
}

static int replay_trace(const char *rel, uint64_t full)
{
	kvs_deploy d;
	deploy_default(&d);
	kvs_request_set *s = load(rel, share(full, 100), 8192);
	if (!s) {
		fprintf(stderr, "skip: ../shared/traces/%s is absent\n", rel);
		return KVS_TEST_SKIP;
	}
	uint64_t n = kvs_request_set_count(s);
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	kvs_sim_result *res[KVS_POLICY_COUNT_];
	for (int p = 0; p < KVS_POLICY_COUNT_; p++) {
		c.policy = (kvs_policy)p;
		res[p] = replay(&c, s);
		const kvs_sim_stats *st = kvs_sim_result_stats(res[p]);
		check_accounting(st, n);
		assert_true(st->completed > 0);
	}
	const kvs_sim_stats *paged = kvs_sim_result_stats(res[KVS_POLICY_PAGED]);
	for (int p = KVS_POLICY_MAX; p <= KVS_POLICY_ORACLE; p++) {
		const kvs_sim_stats *o = kvs_sim_result_stats(res[p]);
		/* (means to rounding: with memory to spare the schedules are
		 * the same, summed over differently split spans) */
		if (paged->concurrency_max < o->concurrency_max ||
		    paged->concurrency_mean < o->concurrency_mean * (1 - 1e-12))
			fail_msg("%s: paged ran fewer sequences at once than %s "
				 "(max %llu vs %llu, mean %.2f vs %.2f)", rel,
				 kvs_policy_name((kvs_policy)p),
				 (unsigned long long)paged->concurrency_max,
				 (unsigned long long)o->concurrency_max,
				 paged->concurrency_mean, o->concurrency_mean);
	}
	/* max reservation: at most floor(pool / max_model_len) at once */
	const kvs_sim_stats *mx = kvs_sim_result_stats(res[KVS_POLICY_MAX]);
	assert_true(mx->concurrency_max <= mx->kv_budget_bytes /
					   (mx->kv_bytes_per_token * mx->max_model_len));
	for (int p = 0; p < KVS_POLICY_COUNT_; p++)
		kvs_sim_result_destroy(res[p]);

	/* streaming the file gives the same result as the in-memory set (the
	 * source is what is compared: scaled runs use the cheaper oracle) */
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.limit = n;
	o.max_model_len = 8192;
	o.block_size = 16;
	kvs_trace *t;
	assert_int_equal(kvs_trace_open(kvs_test_shared_trace(rel), &o, &t), KVS_OK);
	kvs_request_source src = kvs_request_source_trace(t);
	kvs_sim_result *streamed;
	c.policy = scaled() ? KVS_POLICY_ORACLE : KVS_POLICY_PAGED;
	assert_int_equal(kvs_sim_replay(&c, &src, &streamed), KVS_OK);
	kvs_trace_close(t);
	kvs_sim_result *mem = replay(&c, s);
	const kvs_sim_stats *a = kvs_sim_result_stats(streamed), *b = kvs_sim_result_stats(mem);
	assert_int_equal(a->steps, b->steps);
	assert_int_equal(a->completed, b->completed);
	assert_true(a->sim_time_s == b->sim_time_s);
	assert_true(a->ttft_s.p99 == b->ttft_s.p99);
	kvs_sim_result_destroy(streamed);
	kvs_sim_result_destroy(mem);
	kvs_request_set_destroy(s);
	return 0;
}

static void test_conv(void **state)
{
	(void)state;
	if (replay_trace("azure-2023/conv.csv", 19366) == KVS_TEST_SKIP)
		skip();
}

static void test_code(void **state)
{
	(void)state;
	if (replay_trace("azure-2023/code.csv", 8819) == KVS_TEST_SKIP)
		skip();
}

/* The first requests of the conversation trace, fast path against one
 * token at a time, roofline step times, every policy. */
static void test_fast_path_real(void **state)
{
	(void)state;
	kvs_deploy d;
	deploy_default(&d);
	kvs_request_set *s = load("azure-2023/conv.csv", share(1500, 100), 8192);
	if (!s)
		skip();
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	for (int p = 0; p < KVS_POLICY_COUNT_; p++) {
		c.policy = (kvs_policy)p;
		c.fast_path = true;
		kvs_sim_result *f = replay(&c, s);
		c.fast_path = false;
		kvs_sim_result *g = replay(&c, s);
		const kvs_sim_stats *a = kvs_sim_result_stats(f), *b = kvs_sim_result_stats(g);
		assert_int_equal(a->steps, b->steps);
		assert_int_equal(a->completed, b->completed);
		assert_int_equal(a->preemptions, b->preemptions);
		assert_int_equal(a->concurrency_max, b->concurrency_max);
		assert_true(a->spans < b->spans);
		assert_true(fabs(a->sim_time_s - b->sim_time_s) <= 1e-9 * b->sim_time_s);
		assert_true(fabs(a->memory_pct.token_states - b->memory_pct.token_states) < 1e-6);
		assert_true(fabs(a->concurrency_mean - b->concurrency_mean) < 1e-6);
		assert_true(fabs(a->tpot_s.p99 - b->tpot_s.p99) <= 1e-9 * b->tpot_s.p99);
		kvs_sim_result_destroy(f);
		kvs_sim_result_destroy(g);
	}
	kvs_request_set_destroy(s);
}

int main(void)
{
	if (!kvs_test_shared_trace("azure-2023/conv.csv") &&
	    !kvs_test_shared_trace("azure-2023/code.csv")) {
		fprintf(stderr, "skip: ../shared/traces/azure-2023 is absent\n");
		return KVS_TEST_SKIP;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_code),
		cmocka_unit_test(test_fast_path_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
