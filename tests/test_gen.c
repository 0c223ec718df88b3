/* test_gen.c - the synthetic workload generator: distributions and rates
 * within statistical tolerance of what was asked (fixed seeds), exact
 * structure of shared prefixes and multi-turn conversations, determinism,
 * and a round trip through the native writer and reader. */
#include "test_util.h"
#include "kvsim/trace.h"
#include "../traces/trace_internal.h"
#include "../common/fastmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct gstats {
	uint64_t n;
	double first, last, gap_mean, gap_m2;
	double prompt_sum, output_sum;
	uint32_t prompt_min, prompt_max;
} gstats;

static void run(const kvs_gen_opts *o, gstats *s)
{
	kvs_gen *g;
	assert_int_equal(kvs_gen_open(o, &g), KVS_OK);
	memset(s, 0, sizeof *s);
	s->prompt_min = UINT32_MAX;
	kvs_request r;
	double prev = 0;
	kvs_status st;
	while ((st = kvs_gen_next(g, &r)) == KVS_OK) {
		if (s->n == 0) {
			s->first = r.arrival_s;
		} else {
			double gp = r.arrival_s - prev;
			assert_true(gp >= 0);
			double d = gp - s->gap_mean;
			s->gap_mean += d / (double)s->n;
			s->gap_m2 += d * (gp - s->gap_mean);
		}
		prev = s->last = r.arrival_s;
		s->n++;
		s->prompt_sum += r.prompt_tokens;
		s->output_sum += r.output_tokens;
		if (r.prompt_tokens < s->prompt_min)
			s->prompt_min = r.prompt_tokens;
		if (r.prompt_tokens > s->prompt_max)
			s->prompt_max = r.prompt_tokens;
		assert_true(r.prompt_tokens >= 1 && r.output_tokens >= 1);
		assert_int_equal(r.index, s->n - 1);
	}
	assert_int_equal(st, KVS_END);
	kvs_gen_close(g);
}

static double cv(const gstats *s)
{
	return sqrt(s->gap_m2 / (double)(s->n - 1)) / s->gap_mean;
}

static void test_dist_parse(void **state)
{
	(void)state;
	kvs_gen_dist d;
	assert_int_equal(kvs_gen_dist_parse("fixed:128", &d), KVS_OK);
	assert_int_equal(d.kind, KVS_DIST_FIXED);
	assert_true(d.a == 128);
	assert_int_equal(kvs_gen_dist_parse("300", &d), KVS_OK);
	assert_true(d.kind == KVS_DIST_FIXED && d.a == 300);
	assert_int_equal(kvs_gen_dist_parse("uniform:10:20", &d), KVS_OK);
	assert_true(d.kind == KVS_DIST_UNIFORM && d.a == 10 && d.b == 20);
	assert_int_equal(kvs_gen_dist_parse("lognormal:1000:0.5", &d), KVS_OK);
	assert_true(d.kind == KVS_DIST_LOGNORMAL && d.a == 1000 && d.b == 0.5);
	assert_int_equal(kvs_gen_dist_parse("trace:/x/y.csv", &d), KVS_OK);
	assert_string_equal(d.trace_path, "/x/y.csv");
	assert_int_equal(kvs_gen_dist_parse("uniform:20:10", &d), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "1 <= MIN <= MAX"));
	assert_int_equal(kvs_gen_dist_parse("fixed:0", &d), KVS_ERR_INVALID);
	assert_int_equal(kvs_gen_dist_parse("fixed:1.5", &d), KVS_ERR_INVALID);
	assert_int_equal(kvs_gen_dist_parse("lognormal:100", &d), KVS_ERR_INVALID);
	assert_int_equal(kvs_gen_dist_parse("lognormal:100:9", &d), KVS_ERR_INVALID);
	assert_int_equal(kvs_gen_dist_parse("zipf:3", &d), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "'zipf:3' is not a length distribution"));
	assert_int_equal(kvs_gen_dist_parse("fixed:12x", &d), KVS_ERR_INVALID);
	/* decimal notation only: strtod's hexadecimal, inf, nan and leading
	 * blanks are refused */
	static const char *const not_decimal[] = {
		"0x40", "inf", "nan", " 64", "fixed:0x10", "fixed: 16", "fixed:-0x5",
		"uniform:1:0x20", "uniform:0X1p4:20", "lognormal:inf:1", "lognormal:100:nan",
		"lognormal:1e999:1", "lognormal:100:infinity",
	};
	for (size_t i = 0; i < sizeof not_decimal / sizeof *not_decimal; i++) {
		d.kind = KVS_DIST_LOGNORMAL;
		d.a = 7;
		if (kvs_gen_dist_parse(not_decimal[i], &d) != KVS_ERR_INVALID)
			fail_msg("'%s' accepted as %g", not_decimal[i], d.a);
		assert_true(d.kind == KVS_DIST_LOGNORMAL && d.a == 7);
		assert_non_null(strstr(kvs_last_error(), not_decimal[i]));
	}
	assert_int_equal(kvs_gen_dist_parse("fixed:0x10", &d), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "parameter 1 is not a finite decimal number"));
	/* exponents and signs are decimal notation */
	assert_int_equal(kvs_gen_dist_parse("1e3", &d), KVS_OK);
	assert_true(d.kind == KVS_DIST_FIXED && d.a == 1000);
	assert_int_equal(kvs_gen_dist_parse("uniform:+5:1.0e2", &d), KVS_OK);
	assert_true(d.kind == KVS_DIST_UNIFORM && d.a == 5 && d.b == 100);
	assert_int_equal(kvs_gen_dist_parse("lognormal:.5e3:0.", &d), KVS_OK);
	assert_true(d.kind == KVS_DIST_LOGNORMAL && d.a == 500 && d.b == 0);
	assert_int_equal(kvs_gen_dist_parse("fixed:5e", &d), KVS_ERR_INVALID);
}

static void test_bad_opts(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen *g;
	kvs_gen_opts_defaults(&o);
	o.rate = 0;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--rate must be > 0"));
	kvs_gen_opts_defaults(&o);
	o.prefix_fraction = 0.5;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--prefix-fraction needs --prefix-tokens"));
	kvs_gen_opts_defaults(&o);
	o.requests = 0;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	/* a fixed number of turns is whole (2.5 was rounded to 3); a
	 * geometric mean need not be */
	kvs_gen_opts_defaults(&o);
	o.turns = 2.5;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--turns 2.5 is not a whole number"));
	o.turns_geometric = true;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
	kvs_gen_close(g);
	/* distributions filled in directly are held to what the parser
	 * accepts: the sampler converts their parameters to integers */
	kvs_gen_opts_defaults(&o);
	o.prompt = (kvs_gen_dist){ KVS_DIST_UNIFORM, 1, 1e30, NULL };
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--prompt-len: needs whole numbers 1 <= MIN <= MAX"));
	kvs_gen_opts_defaults(&o);
	o.output = (kvs_gen_dist){ KVS_DIST_FIXED, NAN, 0, NULL };
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--output-len: the length must be a whole number"));
	kvs_gen_opts_defaults(&o);
	o.output.b = NAN;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "--output-len: sigma must be in [0, 4]"));
	kvs_gen_opts_defaults(&o);
	o.prompt.kind = KVS_DIST_TRACE;
	o.prompt.trace_path = "/nonexistent/trace.csv";
	assert_int_equal(kvs_gen_open(&o, &g), KVS_ERR_IO);
}

/* Poisson: the mean gap's standard error is gap / sqrt(n); 4 of them. */
static void test_poisson(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = kvs_test_scaled(20000, 1);
	o.rate = 10;
	o.seed = 42;
	gstats s;
	run(&o, &s);
	assert_int_equal(s.n, o.requests);
	assert_true(s.first == 0);
	double rate = (double)(s.n - 1) / (s.last - s.first);
	assert_true(fabs(rate / 10 - 1) < 4 / sqrt((double)s.n));
	assert_true(fabs(cv(&s) - 1) < 0.1);
	/* lognormal defaults: mean 1024 and 256 */
	assert_true(fabs(s.prompt_sum / s.n / 1024 - 1) < 0.08);
	assert_true(fabs(s.output_sum / s.n / 256 - 1) < 0.08);
}

static void test_gamma_and_constant(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = kvs_test_scaled(40000, 1);
	o.arrival = KVS_ARRIVAL_GAMMA;
	o.rate = 5;
	o.cv = 3;
	o.seed = 7;
	gstats s;
	run(&o, &s);
	double rate = (double)(s.n - 1) / (s.last - s.first);
	/* gaps have sd 3 / rate: standard error of the mean 3 / sqrt(n) */
	assert_true(fabs(rate / 5 - 1) < 4 * 3 / sqrt((double)s.n));
	assert_true(fabs(cv(&s) / 3 - 1) < 0.15);

	o.arrival = KVS_ARRIVAL_CONSTANT;
	o.requests = 1001;
	run(&o, &s);
	assert_true(fabs(s.last - 200.0) < 1e-9);
	assert_true(cv(&s) < 1e-9);

	o.requests = 0;
	o.duration_s = 100.5;
	run(&o, &s);
	assert_int_equal(s.n, 503); /* arrivals 0, 0.2, ..., 100.4 */
}

static void test_lengths(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = kvs_test_scaled(20000, 1);
	o.seed = 3;
	assert_int_equal(kvs_gen_dist_parse("uniform:100:200", &o.prompt), KVS_OK);
	assert_int_equal(kvs_gen_dist_parse("fixed:77", &o.output), KVS_OK);
	gstats s;
	run(&o, &s);
	/* uniform on 101 integers: sd 29.2, standard error 29.2 / sqrt(n) */
	assert_true(fabs(s.prompt_sum / s.n - 150) < 4 * 29.2 / sqrt((double)s.n));
	assert_int_equal(s.prompt_min, 100);
	assert_int_equal(s.prompt_max, 200);
	assert_true(s.output_sum == 77.0 * s.n);

	/* lognormal mean 2000, sigma 0.5: sd = 2000 sqrt(e^0.25 - 1) = 1066 */
	assert_int_equal(kvs_gen_dist_parse("lognormal:2000:0.5", &o.prompt), KVS_OK);
	run(&o, &s);
	assert_true(fabs(s.prompt_sum / s.n - 2000) < 4 * 1066 / sqrt((double)s.n));

	/* clamped to max_tokens */
	o.max_tokens = 500;
	run(&o, &s);
	assert_true(s.prompt_max <= 500);
}

static void test_resample(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	const char *src = kvs_test_src("traces/samples/burstgpt-sample.csv");
	assert_int_equal(kvs_gen_dist_parse("trace:x", &o.prompt), KVS_OK);
	o.prompt.trace_path = src;
	o.output = o.prompt;
	o.requests = 500;
	kvs_gen *g;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
	/* the 5 (prompt, output) pairs of the sample, kept together */
	const uint32_t pp[5] = { 472, 417, 1360, 24, 91 }, oo[5] = { 18, 276, 39, 97, 112 };
	int seen[5] = { 0 };
	kvs_request r;
	while (kvs_gen_next(g, &r) == KVS_OK) {
		int k = -1;
		for (int i = 0; i < 5; i++)
			if (r.prompt_tokens == pp[i] && r.output_tokens == oo[i])
				k = i;
		assert_true(k >= 0);
		seen[k]++;
	}
	kvs_gen_close(g);
	for (int i = 0; i < 5; i++)
		assert_true(seen[i] > 50 && seen[i] < 150); /* 100 each expected */
}

static void test_determinism(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = 300;
	o.turns = 3;
	o.turns_geometric = true;
	o.think_s = 4;
	o.prefix_tokens = 100;
	o.prefix_fraction = 0.5;
	o.seed = 99;
	kvs_gen *a, *b;
	assert_int_equal(kvs_gen_open(&o, &a), KVS_OK);
	assert_int_equal(kvs_gen_open(&o, &b), KVS_OK);
	kvs_request ra, rb;
	uint64_t h = 1469598103934665603ull;
	while (kvs_gen_next(a, &ra) == KVS_OK) {
		assert_int_equal(kvs_gen_next(b, &rb), KVS_OK);
		assert_true(ra.arrival_s == rb.arrival_s);
		assert_int_equal(ra.prompt_tokens, rb.prompt_tokens);
		assert_int_equal(ra.output_tokens, rb.output_tokens);
		assert_int_equal(ra.num_hash_ids, rb.num_hash_ids);
		assert_memory_equal(ra.hash_ids, rb.hash_ids, ra.num_hash_ids * sizeof(uint64_t));
		h = (h ^ ra.prompt_tokens) * 1099511628211ull;
	}
	assert_int_equal(kvs_gen_next(b, &rb), KVS_END);
	kvs_gen_close(a);
	kvs_gen_close(b);
	o.seed = 100;
	assert_int_equal(kvs_gen_open(&o, &a), KVS_OK);
	uint64_t h2 = 1469598103934665603ull;
	while (kvs_gen_next(a, &ra) == KVS_OK)
		h2 = (h2 ^ ra.prompt_tokens) * 1099511628211ull;
	kvs_gen_close(a);
	assert_true(h != h2);
}

static void test_shared_prefix(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = kvs_test_scaled(10000, 1);
	o.seed = 5;
	o.prefix_tokens = 512;
	o.prefix_fraction = 0.5;
	o.prefix_groups = 2;
	o.hash_block_tokens = 16;
	assert_int_equal(kvs_gen_dist_parse("fixed:100", &o.prompt), KVS_OK);
	kvs_gen *g;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
	kvs_request r;
	uint64_t grouped = 0, n = 0;
	bool group_seen[2] = { false, false };
	while (kvs_gen_next(g, &r) == KVS_OK) {
		n++;
		assert_int_equal(r.hash_block_tokens, 16);
		if (r.prompt_tokens == 612) {
			grouped++;
			assert_int_equal(r.num_hash_ids, 38);
			uint64_t grp = (r.hash_ids[0] >> 32) - 1;
			assert_true(grp < 2);
			group_seen[grp] = true;
			for (uint32_t i = 0; i < 32; i++)
				assert_int_equal(r.hash_ids[i], ((grp + 1) << 32) | i);
			assert_true((r.hash_ids[32] >> 32) > 2); /* own blocks after */
		} else {
			assert_int_equal(r.prompt_tokens, 100);
			assert_int_equal(r.num_hash_ids, 6);
			assert_true((r.hash_ids[0] >> 32) > 2);
		}
	}
	kvs_gen_close(g);
	assert_true(group_seen[0] && group_seen[1]);
	/* binomial(n, 0.5): sd sqrt(n) / 2 */
	assert_true(fabs((double)grouped - n / 2.0) < 4 * sqrt((double)n) / 2);
}

static void test_sessions(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = 3000;
	o.seed = 11;
	o.turns = 3;
	o.think_s = 10;
	o.rate = 2;
	o.num_samples = 4;
	enum { MAXS = 4000 };
	static uint32_t last_prompt[MAXS], last_output[MAXS], last_turn[MAXS];
	static double last_t[MAXS];
	memset(last_turn, 0, sizeof last_turn);
	kvs_gen *g;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
	kvs_request r;
	double prev = 0;
	uint64_t sessions = 0;
	while (kvs_gen_next(g, &r) == KVS_OK) {
		assert_true(r.arrival_s >= prev);
		prev = r.arrival_s;
		assert_int_equal(r.num_samples, 4);
		assert_true(r.session_id >= 1 && r.session_id < MAXS);
		uint64_t s = r.session_id;
		assert_int_equal(r.turn, last_turn[s] + 1);
		assert_true(r.turn <= 3);
		if (r.turn == 1) {
			sessions++;
		} else {
			/* history (previous prompt and output) plus new tokens */
			assert_true(r.prompt_tokens > last_prompt[s] + last_output[s]);
			assert_true(r.arrival_s >= last_t[s]);
			/* the previous prompt's full blocks are this prompt's first */
			assert_true(r.num_hash_ids >= last_prompt[s] / 16);
			for (uint32_t i = 0; i < r.num_hash_ids; i++)
				assert_int_equal(r.hash_ids[i], ((2 + s) << 32) | i);
		}
		last_turn[s] = r.turn;
		last_prompt[s] = r.prompt_tokens;
		last_output[s] = r.output_tokens;
		last_t[s] = r.arrival_s;
	}
	kvs_gen_close(g);
	/* each conversation has 3 turns unless cut at the end */
	assert_true(sessions >= 1000 && sessions < 1100);
}

static void test_roundtrip_file(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = 200;
	o.turns = 2;
	o.prefix_tokens = 64;
	o.prefix_fraction = 0.3;
	const char *path = kvs_test_write_tmp("gen.jsonl", "");
	for (int fmt = 0; fmt < 2; fmt++) {
		kvs_trace_format f = fmt ? KVS_TRACE_NATIVE_JSONL : KVS_TRACE_NATIVE_CSV;
		kvs_gen *g;
		kvs_trace_writer *w;
		assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
		assert_int_equal(kvs_trace_writer_open(path, f, true, &w), KVS_OK);
		kvs_request r;
		while (kvs_gen_next(g, &r) == KVS_OK)
			assert_int_equal(kvs_trace_writer_put(w, &r), KVS_OK);
		assert_int_equal(kvs_trace_writer_close(w), KVS_OK);
		kvs_gen_close(g);

		assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
		kvs_trace *t;
		kvs_trace_opts to;
		kvs_trace_opts_defaults(&to);
		to.format = f;
		assert_int_equal(kvs_trace_open(path, &to, &t), KVS_OK);
		kvs_request q;
		uint64_t n = 0;
		while (kvs_gen_next(g, &r) == KVS_OK) {
			assert_int_equal(kvs_trace_next(t, &q), KVS_OK);
			assert_true(fabs(q.arrival_s - r.arrival_s) < 1e-6);
			assert_int_equal(q.prompt_tokens, r.prompt_tokens);
			assert_int_equal(q.output_tokens, r.output_tokens);
			assert_int_equal(q.session_id, r.session_id);
			assert_int_equal(q.turn, r.turn);
			assert_int_equal(q.num_hash_ids, r.num_hash_ids);
			assert_memory_equal(q.hash_ids, r.hash_ids, r.num_hash_ids * sizeof(uint64_t));
			n++;
		}
		assert_int_equal(kvs_trace_next(t, &q), KVS_END);
		assert_int_equal(n, 200);
		kvs_trace_close(t);
		kvs_gen_close(g);
	}
	unlink(path);
}

static void test_line_limit(void **state)
{
	(void)state;
	/* 131072 one-token blocks would make a line the reader refuses */
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.requests = 1;
	o.hashes = 1;
	o.hash_block_tokens = 1;
	assert_int_equal(kvs_gen_dist_parse("fixed:131072", &o.prompt), KVS_OK);
	kvs_gen *g;
	kvs_trace_writer *w;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
	const char *path = kvs_test_write_tmp("big.csv", "");
	assert_int_equal(kvs_trace_writer_open(path, KVS_TRACE_NATIVE_CSV, true, &w), KVS_OK);
	kvs_request r;
	assert_int_equal(kvs_gen_next(g, &r), KVS_OK);
	assert_int_equal(kvs_trace_writer_put(w, &r), KVS_ERR_LIMIT);
	assert_non_null(strstr(kvs_last_error(), "use a larger hash block size"));
	kvs_trace_writer_close(w);
	kvs_gen_close(g);
	unlink(path);
}

/* common/fastmath.h's three functions against libm's long double ones
 * (64-bit mantissas: their error is a thousandth of the bounds), within
 * the bounds its comments state, over their whole ranges. */
static void test_fastmath_bounds(void **state)
{
	(void)state;
	kvs_rng r;
	kvs_rng_seed(&r, 3);
	unsigned long n = kvs_test_scaled(1000000, 50000);
	for (unsigned long i = 0; i < n; i++) {
		/* ln: every exponent of the normal range, the mantissa's
		 * 1/128 slices and their edges */
		int e = (int)kvs_rng_below(&r, 2046) - 1022;
		double m = 1.0 + kvs_rng_uniform(&r);
		if (i % 7 == 0)
			m = 1.0 + (double)kvs_rng_below(&r, 129) / 128.0;
		if (m >= 2.0)
			m = nextafter(2.0, 1.0);
		double v = ldexp(m, e);
		double ln_bound = 1e-15 + 2.0 * (nextafter(fabs(e * M_LN2) + 1.0, INFINITY) -
						 (fabs(e * M_LN2) + 1.0));
		assert_true(fabsl((long double)kvs_fastmath_ln(v) - logl(v)) <= ln_bound);
		/* exp on (-700, 700), and at the table's steps */
		double t = -700.0 + 1400.0 * kvs_rng_uniform(&r);
		if (i % 5 == 0)
			t = (double)((int64_t)kvs_rng_below(&r, 1u << 16) - (1 << 15)) * M_LN2 / 64.0;
		if (t > -700.0 && t < 700.0) {
			long double ex = expl(t);
			assert_true(fabsl((long double)kvs_fastmath_exp(t) - ex) <= ex * 1e-15L);
		}
		/* cos(2 pi u) on the 2^-53 grid, quadrant edges included */
		double u = kvs_rng_uniform(&r);
		if (i % 3 == 0)
			u = (double)kvs_rng_below(&r, 8) / 8.0 +
			    ((double)kvs_rng_below(&r, 64) - 32.0) * 0x1p-53;
		if (u < 0)
			u += 1.0;
		if (u >= 1.0)
			u = 1.0 - 0x1p-53;
		long double x = 2.0L * 3.14159265358979323846264338327950288L * u;
		assert_true(fabsl((long double)kvs_fastmath_cos_2pi(u) - cosl(x)) <= 5e-16L);
	}
	assert_true(kvs_fastmath_cos_2pi(0.0) == 1.0);
	assert_true(fabs(kvs_fastmath_cos_2pi(0.5) + 1.0) <= 1e-16);
}

/* round_to_len of traces/rng.c spelled out again, an oracle of its own:
 * the length libm's value gives */
static uint32_t len_of(double y, uint32_t max)
{
	double z = y + 0.5;
	if (!(z >= 1))
		return 1;
	if (z >= (double)max + 1.0)
		return max;
	return (uint32_t)z;
}

/* The log-normal without libm against libm's expression: within the bound
 * rng.c states, on random draws and at the edges of its range, and
 * taking nearly every draw; the lengths equal libm's. */
static void test_lognormal_fast_bound(void **state)
{
	(void)state;
	const double mus[] = { 0.0, 2.0, 6.4, 9.0, 11.5, 25.0 };
	const double sigmas[] = { 0.0, 0.01, 0.3, 1.0, 2.5, 4.0 };
	const double u1s[] = { 0x1p-54, 0x1p-53 + 0x1p-54, 1e-10, 0.25, 0.5 - 0x1p-54,
			       0.5 + 0x1p-54, 0.9, 1.0 - 0x1p-10, 1.0 - 0x1p-10 + 0x1p-54,
			       1.0 - 0x1p-54 };
	const double u2s[] = { 0.0, 0x1p-53, 0.125, 0.25 - 0x1p-53, 0.25, 0.25 + 0x1p-53,
			       0.375, 0.5, 0.625, 0.75 - 0x1p-53, 0.75, 0.875, 1.0 - 0x1p-53 };
	unsigned long n = kvs_test_scaled(400000, 20000);
	kvs_rng r;
	kvs_rng_seed(&r, 42);
	for (size_t a = 0; a < KVS_ARRAY_LEN(mus); a++)
		for (size_t b = 0; b < KVS_ARRAY_LEN(sigmas); b++) {
			double mu = mus[a], sg = sigmas[b], worst = 0;
			unsigned long fast = 0, total = 0;
			for (unsigned long i = 0; i < n + 130; i++) {
				double u1, u2;
				if (i < 130) {
					u1 = u1s[i / 13];
					u2 = u2s[i % 13];
				} else {
					u1 = kvs_rng_uniform_pos(&r);
					u2 = kvs_rng_uniform(&r);
				}
				double yl = exp(mu + sg * kvs_normal_of(u1, u2)), yf;
				total++;
				if (kvs_lognormal_fast(u1, u2, mu, sg, &yf)) {
					fast++;
					assert_true(u1 <= 1.0 - 0x1p-10);
					double err = fabs(yf - yl) / (yl * (1.0 + sg) * 0x1p-41);
					if (err > worst)
						worst = err;
				}
				assert_int_equal(kvs_lognormal_len(u1, u2, mu, sg, 131072),
						 len_of(yl, 131072));
			}
			assert_true(worst <= 1.0);
			/* all but u1 > 1 - 2^-10 (one in 1,024) and t >= 40 */
			if (mu + 4 * sg < 40)
				assert_true((double)fast >= 0.997 * (double)total);
		}
}

/* Draws whose libm length sits at a rounding boundary: u1 solved so that
 * libm's y is close to k + 0.5, then its neighbours on the 2^-53 grid.
 * The value without libm falls on the other side of the boundary for some
 * of them (the test checks that it has such cases); the length must still
 * be libm's for every one. */
static void test_lognormal_len_boundaries(void **state)
{
	(void)state;
	const double sigmas[] = { 0.3, 1.0, 2.5, 4.0 }, mus[] = { 2.0, 6.4, 9.0 };
	kvs_rng r;
	kvs_rng_seed(&r, 7);
	unsigned long cases = 0, across = 0;
	for (size_t a = 0; a < KVS_ARRAY_LEN(sigmas); a++)
		for (size_t b = 0; b < KVS_ARRAY_LEN(mus); b++) {
			double sg = sigmas[a], mu = mus[b];
			for (double k = 1; k < 200000; k = floor(k * 1.07) + 1)
				for (int rep = 0; rep < 4; rep++) {
					double u2 = kvs_rng_uniform(&r), c = cos(2.0 * M_PI * u2);
					double zt = (log(k + 0.5) - mu) / sg;
					if (zt * c <= 0 || fabs(c) < 1e-3)
						continue;
					double u1 = exp(-0.5 * (zt / c) * (zt / c));
					if (!(u1 > 0x1p-50 && u1 < 1.0 - 0x1p-10))
						continue;
					double x0 = floor(u1 * 0x1p53 - 0.5);
					for (int d = -16; d <= 16; d++) {
						double u = (x0 + d + 0.5) * 0x1p-53, yf;
						double yl = exp(mu + sg * kvs_normal_of(u, u2));
						uint32_t want = len_of(yl, 1u << 30);
						cases++;
						if (kvs_lognormal_fast(u, u2, mu, sg, &yf) &&
						    len_of(yf, 1u << 30) != want)
							across++;
						assert_int_equal(kvs_lognormal_len(u, u2, mu, sg, 1u << 30),
								 want);
					}
				}
		}
	assert_true(cases > 50000);
	assert_true(across > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dist_parse),
		cmocka_unit_test(test_bad_opts),
		cmocka_unit_test(test_poisson),
		cmocka_unit_test(test_gamma_and_constant),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_resample),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_shared_prefix),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_roundtrip_file),
		cmocka_unit_test(test_line_limit),
		cmocka_unit_test(test_fastmath_bounds),
		cmocka_unit_test(test_lognormal_fast_bound),
		cmocka_unit_test(test_lognormal_len_boundaries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
