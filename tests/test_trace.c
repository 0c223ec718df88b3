/* test_trace.c - every reader on the shipped samples, shaping, hash-id
 * re-splitting, the summary, the native writer and the default trace.
 * Expected values are derived by hand from the sample files (see
 * traces/samples/) or, for the Azure cut, by an independent script. */
#include "test_util.h"
#include "kvsim/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXREQ 2048
#define MAXIDS 16

typedef struct got {
	kvs_request r;
	uint64_t ids[MAXIDS];
} got;

static got reqs[MAXREQ];
static kvs_trace_stats stats;

/* Read a whole trace; returns the request count, or -1 (status in *st). */
static int read_all(const char *path, const kvs_trace_opts *o, kvs_status *st_out)
{
	kvs_trace *t;
	kvs_status st = kvs_trace_open(path, o, &t);
	if (st_out)
		*st_out = st;
	if (st != KVS_OK)
		return -1;
	int n = 0;
	kvs_request r;
	while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
		assert_true(n < MAXREQ);
		reqs[n].r = r;
		for (uint32_t i = 0; i < r.num_hash_ids && i < MAXIDS; i++)
			reqs[n].ids[i] = r.hash_ids[i];
		reqs[n].r.hash_ids = NULL;
		n++;
	}
	stats = *kvs_trace_get_stats(t);
	kvs_trace_close(t);
	if (st_out)
		*st_out = st;
	assert_true(kvs_trace_stats_balanced(&stats));
	return st == KVS_END ? n : -1;
}

static const char *sample(const char *name)
{
	static char b[4][1024];
	static int k;
	k = (k + 1) % 4;
	snprintf(b[k], sizeof b[k], "%s", kvs_test_src(name));
	return b[k];
}

static void test_format_names(void **state)
{
	(void)state;
	kvs_trace_format f;
	for (int i = 0; i < KVS_TRACE_FORMAT_COUNT_; i++) {
		assert_int_equal(kvs_trace_format_parse(kvs_trace_format_name((kvs_trace_format)i), &f),
				 KVS_OK);
		assert_int_equal(f, i);
	}
	assert_int_equal(kvs_trace_format_parse("Vidur", &f), KVS_OK);
	assert_int_equal(f, KVS_TRACE_SPLITWISE);
	assert_int_equal(kvs_trace_format_parse("jsonl", &f), KVS_OK);
	assert_int_equal(f, KVS_TRACE_NATIVE_JSONL);
	assert_int_equal(kvs_trace_format_parse("parquet", &f), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "unknown trace format 'parquet'"));
}

static void test_azure_sample(void **state)
{
	(void)state;
	int n = read_all(sample("traces/samples/azure-conv-sample.csv"), NULL, NULL);
	assert_int_equal(n, 1511);
	assert_int_equal(stats.lines_read, 1512);
	assert_int_equal(stats.header_lines, 1);
	uint64_t sp = 0, so = 0;
	for (int i = 0; i < n; i++) {
		sp += reqs[i].r.prompt_tokens;
		so += reqs[i].r.output_tokens;
		assert_int_equal(reqs[i].r.index, (uint64_t)i);
		assert_int_equal(reqs[i].r.line, (uint64_t)i + 2);
		assert_int_equal(reqs[i].r.num_samples, 1);
		assert_null(reqs[i].r.hash_ids);
	}
	assert_int_equal(sp, 1609464);
	assert_int_equal(so, 398413);
	/* 18:30:00.1963560 -> 18:30:00.3461740 and -> 18:34:59.8764450 */
	assert_true(reqs[0].r.arrival_s == 0.0);
	assert_true(fabs(reqs[1].r.arrival_s - 0.149818) < 1e-9);
	assert_true(fabs(reqs[n - 1].r.arrival_s - 299.680089) < 1e-9);
	assert_int_equal(reqs[0].r.prompt_tokens, 1165);
	assert_int_equal(reqs[0].r.output_tokens, 37);
}

static void test_mooncake_sample(void **state)
{
	(void)state;
	const char *p = sample("traces/samples/mooncake-sample.jsonl");
	int n = read_all(p, NULL, NULL);
	assert_int_equal(n, 5);
	const double at[5] = { 0, 0.5, 1.5, 2.0, 3.25 };
	const uint32_t nids[5] = { 2, 2, 1, 0, 4 }; /* full 512-token blocks */
	for (int i = 0; i < 5; i++) {
		assert_true(fabs(reqs[i].r.arrival_s - at[i]) < 1e-12);
		assert_int_equal(reqs[i].r.num_hash_ids, nids[i]);
	}
	assert_int_equal(reqs[0].r.hash_block_tokens, 512);
	assert_int_equal(reqs[4].ids[2], 6);
	assert_int_equal(reqs[4].ids[3], 7);

	/* 256-token blocks: id * 2 + sub-block, full blocks only */
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 256;
	n = read_all(p, &o, NULL);
	assert_int_equal(n, 5);
	const uint32_t n256[5] = { 4, 4, 2, 1, 8 };
	const uint64_t last[5] = { 3, 3, 1, 10, 15 };
	for (int i = 0; i < 5; i++) {
		assert_int_equal(reqs[i].r.num_hash_ids, n256[i]);
		assert_int_equal(reqs[i].r.hash_block_tokens, 256);
		assert_int_equal(reqs[i].ids[n256[i] - 1], last[i]);
	}
	assert_int_equal(reqs[4].ids[4], 12);

	/* 1024-token blocks: the id of the last 512-block of each pair */
	o.block_size = 1024;
	n = read_all(p, &o, NULL);
	assert_int_equal(reqs[0].r.num_hash_ids, 1);
	assert_int_equal(reqs[0].ids[0], 1);
	assert_int_equal(reqs[2].r.num_hash_ids, 0);
	assert_int_equal(reqs[4].r.num_hash_ids, 2);
	assert_int_equal(reqs[4].ids[1], 7);

	/* 24 neither divides 512 nor is a multiple: clear error at open */
	o.block_size = 24;
	kvs_trace *t;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--block-size 24"));
	assert_non_null(strstr(kvs_last_error(), "512-token hash blocks"));
}

static void test_burstgpt_sample(void **state)
{
	(void)state;
	const char *p = sample("traces/samples/burstgpt-sample.csv");
	int n = read_all(p, NULL, NULL);
	assert_int_equal(n, 5);
	assert_int_equal(stats.skipped[KVS_SKIP_FAILED], 2);
	assert_int_equal(stats.skipped[KVS_SKIP_BAD_LINE], 0);
	const double at[5] = { 5, 118, 140, 190, 262 };
	const uint32_t pr[5] = { 472, 417, 1360, 24, 91 };
	for (int i = 0; i < 5; i++) {
		assert_true(reqs[i].r.arrival_s == at[i]);
		assert_int_equal(reqs[i].r.prompt_tokens, pr[i]);
	}
	assert_int_equal(reqs[2].r.output_tokens, 39); /* quoted "39" */
	assert_int_equal(reqs[3].r.output_tokens, 97); /* after "GPT-4, turbo" */

	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.skip_failed = false;
	n = read_all(p, &o, NULL);
	assert_int_equal(n, 7);
	assert_int_equal(stats.skipped[KVS_SKIP_FAILED], 0);
	assert_int_equal(reqs[1].r.output_tokens, 0);
	assert_int_equal(reqs[1].r.prompt_tokens, 1087);
}

static void test_splitwise_sample(void **state)
{
	(void)state;
	int n = read_all(sample("traces/samples/splitwise-sample.csv"), NULL, NULL);
	assert_int_equal(n, 5);
	const double at[5] = { 0, 0.25, 0.25, 1.5, 2.125 };
	const uint32_t pr[5] = { 1024, 512, 2048, 300, 4096 };
	for (int i = 0; i < 5; i++) {
		assert_true(fabs(reqs[i].r.arrival_s - at[i]) < 1e-12);
		assert_int_equal(reqs[i].r.prompt_tokens, pr[i]);
	}
	assert_int_equal(reqs[4].r.output_tokens, 512);
}

static void check_native(void)
{
	assert_int_equal(reqs[0].r.session_id, 1);
	assert_int_equal(reqs[0].r.turn, 1);
	assert_int_equal(reqs[1].r.num_samples, 2);
	assert_int_equal(reqs[1].r.priority, 1);
	assert_int_equal(reqs[2].r.turn, 2);
	assert_int_equal(reqs[2].r.num_hash_ids, 4);
	assert_int_equal(reqs[2].ids[3], 5);
	assert_int_equal(reqs[3].r.priority, -2);
	assert_int_equal(reqs[3].r.num_hash_ids, 0);
	assert_int_equal(reqs[3].r.session_id, 0);
}

static void test_native_samples(void **state)
{
	(void)state;
	int n = read_all(sample("traces/samples/native-sample.csv"), NULL, NULL);
	assert_int_equal(n, 4);
	assert_int_equal(stats.header_lines, 2); /* comment + header */
	check_native();
	got csv[4];
	memcpy(csv, reqs, sizeof csv);
	n = read_all(sample("traces/samples/native-sample.jsonl"), NULL, NULL);
	assert_int_equal(n, 4);
	check_native();
	for (int i = 0; i < 4; i++) {
		assert_true(csv[i].r.arrival_s == reqs[i].r.arrival_s);
		assert_int_equal(csv[i].r.prompt_tokens, reqs[i].r.prompt_tokens);
		assert_int_equal(csv[i].r.output_tokens, reqs[i].r.output_tokens);
		assert_int_equal(csv[i].r.num_hash_ids, reqs[i].r.num_hash_ids);
		assert_memory_equal(csv[i].ids, reqs[i].ids,
				    sizeof(uint64_t) * csv[i].r.num_hash_ids);
	}
}

static void test_limit_and_window(void **state)
{
	(void)state;
	const char *p = sample("traces/samples/azure-conv-sample.csv");
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.limit = 10;
	assert_int_equal(read_all(p, &o, NULL), 10);
	assert_int_equal(stats.lines_read, 11);
	assert_int_equal(stats.filtered_limit, 0);
	/* with a sort window, the lines read ahead count as filtered */
	o.sort_window = 4;
	assert_int_equal(read_all(p, &o, NULL), 10);
	assert_int_equal(stats.lines_read, 15);
	assert_int_equal(stats.filtered_limit, 4);

	kvs_trace_opts_defaults(&o);
	o.window_start_s = 10;
	o.window_end_s = 20;
	int n = read_all(p, &o, NULL);
	assert_int_equal(n, 40);
	/* 44 before the window, and the first one at or after its end */
	assert_int_equal(stats.filtered_window, 45);
	for (int i = 0; i < n; i++)
		assert_true(reqs[i].r.arrival_s >= 0 && reqs[i].r.arrival_s < 10);
}

static double cv_of(int n)
{
	double m = (reqs[n - 1].r.arrival_s - reqs[0].r.arrival_s) / (n - 1), v = 0;
	for (int i = 1; i < n; i++) {
		double g = reqs[i].r.arrival_s - reqs[i - 1].r.arrival_s - m;
		v += g * g;
	}
	return sqrt(v / (n - 1)) / m;
}

static void test_retiming(void **state)
{
	(void)state;
	const char *p = sample("traces/samples/azure-conv-sample.csv");
	int n = read_all(p, NULL, NULL);
	double span = reqs[n - 1].r.arrival_s, cv = cv_of(n);
	double a7 = reqs[7].r.arrival_s;

	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.time_scale = 0.5;
	assert_int_equal(read_all(p, &o, NULL), n);
	assert_true(fabs(reqs[7].r.arrival_s - a7 * 0.5) < 1e-12);

	/* keep-shape: mean rate exactly 20/s, burstiness unchanged */
	kvs_trace_opts_defaults(&o);
	o.rate = 20;
	assert_int_equal(read_all(p, &o, NULL), n);
	assert_true(fabs((n - 1) / reqs[n - 1].r.arrival_s - 20) < 1e-9);
	assert_true(fabs(cv_of(n) - cv) < 1e-9);
	assert_true(fabs(reqs[7].r.arrival_s - a7 * ((n - 1) / span) / 20) < 1e-9);

	/* Poisson: seeded, the rate within 3 standard errors (1/sqrt(n)) */
	o.rate_mode = KVS_RATE_POISSON;
	o.seed = 7;
	assert_int_equal(read_all(p, &o, NULL), n);
	double r1 = (n - 1) / reqs[n - 1].r.arrival_s, last1 = reqs[n - 1].r.arrival_s;
	assert_true(fabs(r1 / 20 - 1) < 3 / sqrt(n));
	assert_true(reqs[0].r.arrival_s == 0);
	assert_int_equal(read_all(p, &o, NULL), n);
	assert_true(reqs[n - 1].r.arrival_s == last1);
	o.seed = 8;
	assert_int_equal(read_all(p, &o, NULL), n);
	assert_true(reqs[n - 1].r.arrival_s != last1);
}

static void test_overlong(void **state)
{
	(void)state;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.max_model_len = 2000;
	int n = read_all(sample("traces/samples/azure-conv-sample.csv"), &o, NULL);
	assert_int_equal(n, 1511);
	assert_int_equal(stats.over_max_len, 144);
	int flagged = 0;
	for (int i = 0; i < n; i++) {
		bool over = reqs[i].r.prompt_tokens + reqs[i].r.output_tokens > 2000;
		assert_int_equal(reqs[i].r.over_max_len, over);
		flagged += over;
	}
	assert_int_equal(flagged, 144);
	o.overlong = KVS_OVERLONG_TRUNCATE;
	n = read_all(sample("traces/samples/azure-conv-sample.csv"), &o, NULL);
	assert_int_equal(stats.truncated, 144);
	assert_int_equal(stats.over_max_len, 0);
	for (int i = 0; i < n; i++)
		assert_true(reqs[i].r.prompt_tokens + reqs[i].r.output_tokens <= 2000);

	/* prompt cut to leave the output; hash ids cover the kept head only */
	o.max_model_len = 1000;
	n = read_all(sample("traces/samples/mooncake-sample.jsonl"), &o, NULL);
	assert_int_equal(reqs[0].r.prompt_tokens, 950);
	assert_int_equal(reqs[0].r.output_tokens, 50);
	assert_true(reqs[0].r.truncated);
	assert_int_equal(reqs[0].r.num_hash_ids, 1);
	assert_false(reqs[3].r.truncated); /* 300 + 5 fits */
	/* an output alone over the limit keeps one prompt token */
	o.max_model_len = 60;
	n = read_all(sample("traces/samples/mooncake-sample.jsonl"), &o, NULL);
	assert_int_equal(reqs[4].r.output_tokens, 59);
	assert_int_equal(reqs[4].r.prompt_tokens, 1);
}

static void test_sort_window(void **state)
{
	(void)state;
	const char *p = kvs_test_write_tmp("unsorted.csv",
		"arrival_s,prompt_tokens,output_tokens\n"
		"0,10,1\n2,20,2\n1,30,3\n3,40,4\n");
	kvs_status st;
	assert_int_equal(read_all(p, NULL, &st), -1);
	assert_int_equal(st, KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "unsorted.csv:4: arrival_s: arrivals are not "
				"sorted: 1.000000 s earlier than line 3"));
	assert_int_equal(stats.failed_lines, 1);

	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.sort_window = 1;
	assert_int_equal(read_all(p, &o, NULL), 4);
	assert_int_equal(stats.reordered, 1);
	for (int i = 0; i < 4; i++)
		assert_true(reqs[i].r.arrival_s == i);
	assert_int_equal(reqs[1].r.prompt_tokens, 30);
	assert_int_equal(reqs[1].r.line, 4);

	p = kvs_test_write_tmp("unsorted2.csv",
		"arrival_s,prompt_tokens,output_tokens\n"
		"0,10,1\n3,20,2\n4,30,3\n1,40,4\n5,1,1\n");
	assert_int_equal(read_all(p, &o, &st), -1);
	assert_non_null(strstr(kvs_last_error(), "unsorted2.csv:5: arrival_s: 2.000000 s earlier "
				"than line 3, out of order by more than the sort window of 1"));
	o.sort_window = 2;
	assert_int_equal(read_all(p, &o, NULL), 5);
	assert_int_equal(reqs[1].r.prompt_tokens, 40);
}

static void test_split_merge(void **state)
{
	(void)state;
	const uint64_t ids[3] = { 10, 11, 12 };
	uint64_t out[64];
	uint32_t n = 99;
	/* 1100 tokens at 128: 8 per id, 1100/128 = 8 full blocks */
	assert_int_equal(kvs_trace_split_hashes(ids, 3, 512, 1100, 128, out, &n), KVS_OK);
	assert_int_equal(n, 8);
	assert_int_equal(out[0], 40);
	assert_int_equal(out[3], 43);
	assert_int_equal(out[4], 44);
	assert_int_equal(out[7], 47);
	/* more full blocks than ids cover: only what the ids name */
	assert_int_equal(kvs_trace_split_hashes(ids, 1, 512, 1100, 256, out, &n), KVS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(kvs_trace_split_hashes(ids, 3, 512, 1100, 96, out, &n), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "block size 96 does not divide the trace's "
				"512-token hash blocks"));
	const uint64_t big[1] = { UINT64_MAX / 2 };
	assert_int_equal(kvs_trace_split_hashes(big, 1, 512, 512, 16, out, &n), KVS_ERR_OVERFLOW);
	assert_int_equal(kvs_trace_merge_hashes(ids, 3, 16, 48, 32, out, &n), KVS_OK);
	assert_int_equal(n, 1);
	assert_int_equal(out[0], 11);
	assert_int_equal(kvs_trace_merge_hashes(ids, 3, 16, 48, 24, out, &n), KVS_ERR_INVALID);
}

/* Reference prefix cache for test_summary_split: every fine id in a plain
 * open-addressing set, looked up one block at a time. */
typedef struct refset {
	uint64_t *k;
	bool *used;
	size_t cap;
} refset;

static bool ref_has_put(refset *r, uint64_t id, bool put)
{
	size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 40) % r->cap;
	for (;; i = (i + 1) % r->cap) {
		if (!r->used[i]) {
			if (put) {
				r->used[i] = true;
				r->k[i] = id;
			}
			return false;
		}
		if (r->k[i] == id)
			return true;
	}
}

/* The summary's prefix figures at a block size that splits (or merges) the
 * trace's hash blocks equal a block-by-block reference over the ids the
 * reader yields: shared prefixes, repeated ids, partial last blocks. */
static void test_summary_split(void **state)
{
	(void)state;
	static char text[64 * 1024];
	size_t n = (size_t)snprintf(text, sizeof text, "arrival_s,prompt_tokens,"
				    "output_tokens,session_id,turn,num_samples,priority,"
				    "hash_block_tokens,hash_ids\n");
	uint64_t x = 12345;
	for (int q = 0; q < 150; q++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned prompt = 1 + (unsigned)((x >> 33) % 700);
		unsigned nids = (prompt + 63) / 64;
		n += (size_t)snprintf(text + n, sizeof text - n, "%d,%u,5,0,0,1,0,64,", q,
				      prompt);
		for (unsigned i = 0; i < nids; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* few distinct ids per position: much sharing, some repeats */
			uint64_t id = i * 4 + (x >> 60) % 3 + ((x >> 50) % 7 == 0 ? 1 : 0);
			n += (size_t)snprintf(text + n, sizeof text - n, "%s%llu", i ? " " : "",
					      (unsigned long long)id);
		}
		n += (size_t)snprintf(text + n, sizeof text - n, "\n");
	}
	assert_true(n < sizeof text - 1);
	const char *path = kvs_test_write_tmp("summary-split.csv", text);
	const uint32_t sizes[] = { 1, 4, 16, 64, 128 };
	for (size_t b = 0; b < KVS_ARRAY_LEN(sizes); b++) {
		kvs_trace_opts o;
		kvs_trace_opts_defaults(&o);
		o.block_size = sizes[b];
		kvs_trace *t;
		kvs_trace_summary s;
		assert_int_equal(kvs_trace_open(path, &o, &t), KVS_OK);
		assert_int_equal(kvs_trace_summarize(t, &s), KVS_OK);
		kvs_trace_close(t);
		refset r = { kvs_calloc(1 << 17, sizeof(uint64_t)), kvs_calloc(1 << 17, sizeof(bool)),
			     1 << 17 };
		assert_non_null(r.k);
		uint64_t hits = 0, uniq = 0, full = 0;
		assert_int_equal(kvs_trace_open(path, &o, &t), KVS_OK);
		kvs_request q;
		while (kvs_trace_next(t, &q) == KVS_OK) {
			bool hitting = true;
			full += q.prompt_tokens / sizes[b];
			for (uint32_t i = 0; i < q.num_hash_ids; i++) {
				bool had = ref_has_put(&r, q.hash_ids[i], true);
				uniq += !had;
				if (hitting && had)
					hits++;
				else
					hitting = false;
			}
		}
		kvs_trace_close(t);
		kvs_free(r.k);
		kvs_free(r.used);
		assert_int_equal(s.hit_blocks, hits);
		assert_int_equal(s.unique_blocks, uniq);
		assert_int_equal(s.full_blocks, full);
		assert_int_equal(s.prefix_requests, 150);
		assert_false(s.prefix_capped);
		assert_true(hits > 0 && hits < full);
	}
}

static void test_summary(void **state)
{
	(void)state;
	kvs_trace *t;
	kvs_trace_summary s;
	assert_int_equal(kvs_trace_open(sample("traces/samples/mooncake-sample.jsonl"), NULL, &t),
			 KVS_OK);
	assert_int_equal(kvs_trace_summarize(t, &s), KVS_OK);
	kvs_trace_close(t);
	assert_int_equal(s.requests, 5);
	assert_true(fabs(s.span_s - 3.25) < 1e-12);
	assert_true(fabs(s.mean_rate - 4 / 3.25) < 1e-12);
	/* gaps 0.5 1 0.5 1.25: mean 0.8125, population variance 0.10546875 */
	assert_true(fabs(s.cv_interarrival - sqrt(0.10546875) / 0.8125) < 1e-12);
	assert_int_equal(s.prompt.p50, 1100);
	assert_int_equal(s.prompt.p90, 2048);
	assert_int_equal(s.prompt.min, 300);
	assert_int_equal(s.output.max, 100);
	assert_true(s.has_hashes);
	assert_int_equal(s.full_blocks, 9);
	assert_int_equal(s.hit_blocks, 5);
	assert_true(fabs(s.prefix_hit_blocks - 5.0 / 9) < 1e-12);
	assert_true(fabs(s.prefix_hit_tokens - 5.0 * 512 / 5248) < 1e-12);

	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 256;
	assert_int_equal(kvs_trace_open(sample("traces/samples/mooncake-sample.jsonl"), &o, &t),
			 KVS_OK);
	assert_int_equal(kvs_trace_summarize(t, &s), KVS_OK);
	kvs_trace_close(t);
	assert_int_equal(s.full_blocks, 19);
	assert_int_equal(s.hit_blocks, 10);

	assert_int_equal(kvs_trace_open(sample("traces/samples/native-sample.csv"), NULL, &t),
			 KVS_OK);
	assert_int_equal(kvs_trace_summarize(t, &s), KVS_OK);
	kvs_trace_close(t);
	assert_int_equal(s.full_blocks, 8);
	assert_int_equal(s.hit_blocks, 3);
	assert_int_equal(s.sessions, 2);
	assert_int_equal(s.max_turn, 2);
	assert_int_equal(s.multi_sample, 1);

	assert_int_equal(kvs_trace_open(sample("traces/samples/azure-conv-sample.csv"), NULL, &t),
			 KVS_OK);
	assert_int_equal(kvs_trace_summarize(t, &s), KVS_OK);
	kvs_trace_close(t);
	assert_int_equal(s.prompt.p50, 1032);
	assert_int_equal(s.prompt.p90, 1665);
	assert_int_equal(s.prompt.p99, 4105);
	assert_int_equal(s.prompt_tokens_total, 1609464);
	assert_false(s.has_hashes);
	assert_true(kvs_trace_stats_balanced(&s.reader));
}

static void roundtrip(kvs_trace_format f, const char *name)
{
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 128;
	int n = read_all(sample("traces/samples/mooncake-sample.jsonl"), &o, NULL);
	assert_int_equal(n, 5);
	got a[5];
	memcpy(a, reqs, sizeof a);
	const char *path = kvs_test_write_tmp(name, "");
	kvs_trace_writer *w;
	assert_int_equal(kvs_trace_writer_open(path, f, true, &w), KVS_OK);
	assert_int_equal(kvs_trace_writer_comment(w, "round trip\nsecond line"), KVS_OK);
	for (int i = 0; i < n; i++) {
		kvs_request r = a[i].r;
		r.hash_ids = a[i].ids;
		assert_true(r.num_hash_ids <= MAXIDS);
		assert_int_equal(kvs_trace_writer_put(w, &r), KVS_OK);
	}
	assert_int_equal(kvs_trace_writer_close(w), KVS_OK);
	assert_int_equal(read_all(path, NULL, NULL), 5);
	assert_int_equal(stats.header_lines, f == KVS_TRACE_NATIVE_CSV ? 2 : 1);
	for (int i = 0; i < n; i++) {
		assert_true(fabs(a[i].r.arrival_s - reqs[i].r.arrival_s) < 1e-6);
		assert_int_equal(a[i].r.prompt_tokens, reqs[i].r.prompt_tokens);
		assert_int_equal(a[i].r.output_tokens, reqs[i].r.output_tokens);
		assert_int_equal(a[i].r.num_hash_ids, reqs[i].r.num_hash_ids);
		assert_int_equal(reqs[i].r.hash_block_tokens, a[i].r.num_hash_ids ? 128 : 0);
		assert_memory_equal(a[i].ids, reqs[i].ids, sizeof(uint64_t) * a[i].r.num_hash_ids);
	}
	unlink(path);
}

static void test_writer_roundtrip(void **state)
{
	(void)state;
	roundtrip(KVS_TRACE_NATIVE_CSV, "rt.csv");
	roundtrip(KVS_TRACE_NATIVE_JSONL, "rt.jsonl");
	kvs_trace_writer *w;
	assert_int_equal(kvs_trace_writer_open("/tmp/x.csv", KVS_TRACE_AZURE, false, &w),
			 KVS_ERR_INVALID);
	assert_int_equal(kvs_trace_writer_open("/nonexistent-dir/x.csv", KVS_TRACE_NATIVE_CSV,
					       false, &w), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "/nonexistent-dir/x.csv: cannot write"));
}

static void test_headerless_forced(void **state)
{
	(void)state;
	const char *p = kvs_test_write_tmp("noheader.csv",
		"2023-11-16 18:15:46.6805900,374,44\n"
		"2023-11-16 18:15:50.9951690,396,109\n");
	kvs_status st;
	assert_int_equal(read_all(p, NULL, &st), -1);
	assert_int_equal(st, KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "noheader.csv:1: header: unrecognised header"));
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.format = KVS_TRACE_AZURE;
	assert_int_equal(read_all(p, &o, NULL), 2);
	assert_int_equal(stats.header_lines, 0);
	assert_true(fabs(reqs[1].r.arrival_s - 4.314579) < 1e-9);
	/* a forced format with another format's header names what it wanted */
	o.format = KVS_TRACE_SPLITWISE;
	assert_int_equal(read_all(sample("traces/samples/burstgpt-sample.csv"), &o, &st), -1);
	assert_non_null(strstr(kvs_last_error(), "does not name the splitwise columns"));
}

static void test_default_path(void **state)
{
	(void)state;
	const char *p = kvs_trace_default_path();
	assert_non_null(strstr(p, "azure-conv-sample.csv"));
	assert_int_equal(access(p, R_OK), 0);
	char dir[256];
	snprintf(dir, sizeof dir, "/tmp/kvsim-test-%d-data", (int)getpid());
	char sub[300], file[400];
	snprintf(sub, sizeof sub, "%s/traces", dir);
	snprintf(file, sizeof file, "%s/azure-conv-sample.csv", sub);
	mkdir(dir, 0700);
	mkdir(sub, 0700);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs("TIMESTAMP,ContextTokens,GeneratedTokens\n", f);
	fclose(f);
	setenv("KVSIM_DATADIR", dir, 1);
	assert_string_equal(kvs_trace_default_path(), file);
	unsetenv("KVSIM_DATADIR");
	unlink(file);
	rmdir(sub);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_azure_sample),
		cmocka_unit_test(test_mooncake_sample),
		cmocka_unit_test(test_burstgpt_sample),
		cmocka_unit_test(test_splitwise_sample),
		cmocka_unit_test(test_native_samples),
		cmocka_unit_test(test_limit_and_window),
		cmocka_unit_test(test_retiming),
		cmocka_unit_test(test_overlong),
		cmocka_unit_test(test_sort_window),
		cmocka_unit_test(test_split_merge),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_summary_split),
		cmocka_unit_test(test_writer_roundtrip),
		cmocka_unit_test(test_headerless_forced),
		cmocka_unit_test(test_default_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
