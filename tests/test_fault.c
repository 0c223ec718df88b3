/*
 * test_fault.c - out-of-memory paths, walked one allocation at a time.
 *
 * A whole `compare` (load a trace, replay it under every policy, build and
 * write the JSON report) and a whole `sweep` (two block sizes x two
 * policies on two worker threads, plus its JSON) are run first without
 * faults to record the reference output and the number of host
 * allocations, then once per N with kvs_mem_fail_nth(N): the Nth
 * allocation through kvs_malloc and friends fails (SQLite's and
 * knot-resolver's fault-injection walk).  Each run must end either with
 * KVS_ERR_NOMEM, no output file and the message naming memory, or (when the
 * failed allocation was optional) with KVS_OK and output byte-identical to
 * the reference.  Leaks and crashes are caught by the AddressSanitizer build
 * (CI runs this test there).  Both the "fail once" and the "fail from N on"
 * modes are walked; KVS_TEST_SCALE strides N for slow builds.
 */
#include "kvs_config.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/kvsim.h"

static const char *trace_path;
static char out_path[512];

/* A trace that exercises admission, prefix sharing (hash ids), parallel
 * sampling (forks), preemption (a small budget) and requests that never
 * fit. */
static void write_trace(void)
{
	char text[8192];
	size_t o = 0;
	o += (size_t)snprintf(text + o, sizeof text - o,
			      "arrival_s,prompt_tokens,output_tokens,session_id,turn,"
			      "num_samples,priority,hash_block_tokens,hash_ids\n");
	for (int i = 0; i < 24; i++) {
		unsigned prompt = 40 + (unsigned)(i * 37 % 200);
		unsigned output = 8 + (unsigned)(i * 13 % 60);
		unsigned samples = i % 5 == 2 ? 3 : 1;
		o += (size_t)snprintf(text + o, sizeof text - o,
				      "%.3f,%u,%u,%d,1,%u,0,16,1 %d %d\n", 0.05 * i,
				      prompt, output, i % 4 + 1, samples, i % 3 + 2, 100 + i);
	}
	o += (size_t)snprintf(text + o, sizeof text - o, "1.5,9000,4,0,0,1,0,,\n");
	trace_path = kvs_test_write_tmp("fault-trace.csv", text);
	assert_non_null(trace_path);
	const char *dir = getenv("TMPDIR");
	snprintf(out_path, sizeof out_path, "%s/kvsim-test-%d-fault-out.json",
		 dir ? dir : "/tmp", (int)getpid());
}

static kvs_status base_config(kvs_sim_config *c)
{
	kvs_model m;
	kvs_gpu g;
	kvs_status st;
	if ((st = kvs_model_load("llama-3-8b", &m)) != KVS_OK ||
	    (st = kvs_gpu_preset("a100-80gb", &g)) != KVS_OK)
		return st;
	kvs_deploy d;
	kvs_deploy_defaults(&d, &m, &g);
	d.max_model_len = 8192;
	kvs_sim_config_defaults(c, &d);
	/* room for about 60 blocks of 16 tokens: preemption and waiting */
	c->kv_budget_bytes = 60ull * 16 * 131072;
	c->enable_prefix_caching = true;
	c->page_bytes = 256 * 1024;      /* vattention: 16 MiB a page group */
	return KVS_OK;
}

/* ---- one whole compare ----------------------------------------------------- */

static kvs_status run_compare(void)
{
	static const char *const names[] = { "paged", "max", "pow2", "oracle", "vattention" };
	kvs_sim_result *res[KVS_ARRAY_LEN(names)] = { 0 };
	kvs_request_set *set = NULL;
	kvs_json *doc = NULL;
	kvs_sim_config c;
	kvs_status st = base_config(&c);
	if (st == KVS_OK)
		st = kvs_request_set_load(trace_path, NULL, &set);
	size_t n = 0;
	for (; st == KVS_OK && n < KVS_ARRAY_LEN(names); n++) {
		if ((st = kvs_policy_parse(names[n], &c.policy)) != KVS_OK)
			break;
		kvs_request_cursor cur;
		kvs_request_cursor_init(&cur, set, 1.0);
		kvs_request_source src = kvs_request_cursor_source(&cur);
		st = kvs_sim_replay(&c, &src, &res[n]);
	}
	if (st == KVS_OK) {
		doc = kvs_sim_report_json("compare", res, n, trace_path,
					  kvs_request_set_format(set),
					  kvs_request_set_trace_stats(set));
		if (!doc)
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory (report)");
	}
	if (st == KVS_OK)
		st = kvs_sim_json_write(doc, out_path);
	kvs_json_free(doc);
	for (size_t i = 0; i < KVS_ARRAY_LEN(names); i++)
		kvs_sim_result_destroy(res[i]);
	kvs_request_set_destroy(set);
	return st;
}

/* ---- one whole sweep ------------------------------------------------------- */

static kvs_status run_sweep(void)
{
	kvs_request_set *set = NULL;
	kvs_sweep_result *r = NULL;
	kvs_json *doc = NULL;
	kvs_sim_config c;
	kvs_sweep_config sc;
	kvs_status st = base_config(&c);
	if (st == KVS_OK) {
		kvs_sweep_config_defaults(&sc, &c);
		sc.jobs = 2;
		sc.slo_ttft_s = 5.0;
		if ((st = kvs_sweep_parse_block_sizes("8,16", &sc)) == KVS_OK)
			st = kvs_sweep_parse_policies("paged,max", &sc);
	}
	if (st == KVS_OK)
		st = kvs_request_set_load(trace_path, NULL, &set);
	if (st == KVS_OK)
		st = kvs_sweep_run(&sc, set, &r);
	if (st == KVS_OK) {
		doc = kvs_sweep_result_json(r, set);
		if (!doc)
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory (report)");
	}
	if (st == KVS_OK)
		st = kvs_sim_json_write(doc, out_path);
	kvs_json_free(doc);
	kvs_sweep_result_destroy(r);
	kvs_request_set_destroy(set);
	return st;
}

/* ---- the walk ---------------------------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = '\0';
	fclose(f);
	return b;
}

static void walk(kvs_status (*run)(void), const char *what)
{
	unlink(out_path);
	kvs_mem_fail_nth(UINT64_MAX, false);     /* count only */
	kvs_status st = run();
	uint64_t total = kvs_mem_alloc_count();
	kvs_mem_fail_nth(0, false);
	if (st != KVS_OK)
		fail_msg("%s without faults: %s", what, kvs_last_error());
	char *ref = slurp(out_path);
	assert_non_null(ref);
	assert_true(total > 100);
	/* under sanitizers every run is several times slower: stride N */
	uint64_t stride = kvs_test_scale() < 1.0 ? 7 : 1;
	uint64_t failed = 0, tolerated = 0;
	for (int sticky = 0; sticky < 2; sticky++) {
		for (uint64_t n = 1; n <= total + 8; n += stride) {
			unlink(out_path);
			kvs_clear_error();
			kvs_mem_fail_nth(n, sticky);
			st = run();
			bool fired = kvs_mem_fail_fired();
			kvs_mem_fail_nth(0, false);
			char *got = slurp(out_path);
			if (st == KVS_OK) {
				/* the failure was absorbed (or came after the
				 * last allocation): the output is complete */
				if (!got || strcmp(got, ref) != 0) {
					size_t d = 0;
					while (got && got[d] && got[d] == ref[d])
						d++;
					size_t from = d > 80 ? d - 80 : 0;
					fail_msg("%s, allocation %llu%s: ok but output differs "
						 "at byte %zu: ...%.160s", what,
						 (unsigned long long)n, sticky ? "+" : "", d,
						 got ? got + from : "(none)");
				}
				tolerated += fired;
			} else {
				if (st != KVS_ERR_NOMEM || !fired)
					fail_msg("%s, allocation %llu%s: status %s (%s), "
						 "expected out of memory", what,
						 (unsigned long long)n, sticky ? "+" : "",
						 kvs_strerror(st), kvs_last_error());
				if (!strstr(kvs_last_error(), "memory"))
					fail_msg("%s, allocation %llu: message names no "
						 "memory: %s", what, (unsigned long long)n,
						 kvs_last_error());
				if (got)
					fail_msg("%s, allocation %llu: failed but wrote %s",
						 what, (unsigned long long)n, out_path);
				failed++;
			}
			free(got);
		}
	}
	unlink(out_path);
	free(ref);
	print_message("%s: %llu allocations; %llu injected failures reported, "
		      "%llu absorbed\n", what, (unsigned long long)total,
		      (unsigned long long)failed, (unsigned long long)tolerated);
	assert_true(failed > 0);
}

static void test_compare_nomem(void **state)
{
	(void)state;
	walk(run_compare, "compare");
}

static void test_sweep_nomem(void **state)
{
	(void)state;
	walk(run_sweep, "sweep");
}

static int setup(void **state)
{
	(void)state;
	write_trace();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(trace_path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_nomem),
		cmocka_unit_test(test_sweep_nomem),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
