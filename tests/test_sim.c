/*
 * test_sim.c - the simulator on hand-computable cases with a fixed step
 * time, the closed-form sums against brute force, the fast path against
 * one-token-at-a-time stepping, accounting, rejections, determinism, the
 * quantile sketch and the step-time table fit.
 */
#include "test_util.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "kvsim/kvsim.h"
#include "../sim/sim_internal.h"

/* ---- helpers --------------------------------------------------------------- */

/* KVS_TEST_SCALE (sanitizer builds set 0.1) scales the randomised cases. */
/* What the windowed layers read in a decode-only step whose decodes read
 * x tokens on them (kvs_win_read: decodes, whole step, pairs). */
#define DEC_WIN(x) (&(kvs_win_read){ (x), (x), (x) })

static double test_scale(void)
{
	const char *s = getenv("KVS_TEST_SCALE");
	double x = s ? atof(s) : 1.0;
	return x > 0 && x <= 1 ? x : 1.0;
}

#define MAXREC 4096

typedef struct recs {
	kvs_sim_request_record r[MAXREC];
	size_t n;
} recs;

static void on_rec(void *ctx, const kvs_sim_request_record *r)
{
	recs *R = ctx;
	assert_true(R->n < MAXREC);
	R->r[R->n++] = *r;
}

static const kvs_sim_request_record *rec_of(const recs *R, uint64_t index)
{
	for (size_t i = 0; i < R->n; i++)
		if (R->r[i].index == index)
			return &R->r[i];
	fail_msg("no record for request %llu", (unsigned long long)index);
	return NULL;
}

/* A pool of `tokens` tokens of kvb bytes, blocks of `bs`, a fixed step of
 * 10 ms (linear model), watermark 0. */
static void cfg_fixed(kvs_sim_config *c, kvs_policy pol, uint64_t tokens,
		      uint64_t kvb, uint32_t bs, uint32_t mml)
{
	kvs_sim_config_defaults(c, NULL);
	c->policy = pol;
	c->deploy.block_size = bs;
	c->deploy.max_model_len = mml;
	c->deploy.tp = 1;
	c->kv_bytes_per_token = kvb;
	c->kv_budget_bytes = tokens * kvb;
	c->watermark = 0;
	c->cost.kind = KVS_COST_LINEAR;
	c->cost.linear_base_s = 0.01;
	c->max_num_seqs = 64;
	c->max_num_batched_tokens = 512;
	c->sample_interval_s = 0.05;
}

static kvs_request mkreq(uint64_t i, double t, uint32_t p, uint32_t o)
{
	kvs_request r;
	memset(&r, 0, sizeof r);
	r.index = i;
	r.line = i + 2;
	r.arrival_s = t;
	r.prompt_tokens = p;
	r.output_tokens = o;
	r.num_samples = 1;
	return r;
}

static kvs_sim_result *run_set(kvs_sim_config *c, const kvs_request_set *set,
			       recs *R)
{
	if (R) {
		R->n = 0;
		c->on_request = on_rec;
		c->on_request_ctx = R;
	}
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *res = NULL;
	kvs_status st = kvs_sim_replay(c, &src, &res);
	if (st != KVS_OK)
		fail_msg("replay: %s", kvs_last_error());
	return res;
}

static kvs_request_set *set_of(const kvs_request *q, size_t n)
{
	kvs_request_set *s;
	assert_int_equal(kvs_request_set_create(&s), KVS_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(kvs_request_set_append(s, &q[i]), KVS_OK);
	return s;
}

static void assert_close_at(double a, double b, double rel, int line)
{
	double tol = rel * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-12;
	if (!(fabs(a - b) <= tol))
		fail_msg("line %d: %.15g != %.15g (tolerance %.3g)", line, a, b, tol);
}
#define assert_close(a, b, rel) assert_close_at((a), (b), (rel), __LINE__)

static void assert_parts_sum(const kvs_sim_mem_pct *m)
{
	double sum = m->token_states + m->reservation + m->internal_frag +
		     m->external_frag + m->cached_idle + m->free;
	assert_close(sum, 100.0, 1e-9);
	assert_true(m->token_states >= -1e-9 && m->reservation >= -1e-9 &&
		    m->internal_frag >= -1e-9 && m->external_frag >= -1e-9 &&
		    m->cached_idle >= -1e-9 && m->free >= -1e-9);
}

static void assert_accounting(const kvs_sim_stats *st)
{
	uint64_t rej = 0;
	for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++)
		rej += st->rejected_by[i];
	assert_int_equal(rej, st->rejected);
	assert_int_equal(st->arrived, st->completed + st->rejected + st->unfinished);
	assert_parts_sum(&st->memory_pct);
	assert_parts_sum(&st->memory_peak_pct);
}

/* ---- closed-form sums ------------------------------------------------------------ */

static void test_lin2_sums(void **state)
{
	(void)state;
	const kvs_lin2 cases[] = {
		{ 1.0, 0.5, 3.0, 0.1, 0.25 },     /* crossover at j = 5 */
		{ 3.0, 0.1, 1.0, 0.5, 0.0 },      /* the other way round */
		{ 2.0, 0.2, 2.0, 0.2, 0.01 },     /* equal lines */
		{ 5.0, 0.0, 1.0, 0.0, 0.0 },      /* constants */
		{ 0.001, 1e-6, 0.004, 2e-7, 0.002 },
	};
	for (size_t c = 0; c < KVS_ARRAY_LEN(cases); c++) {
		const kvs_lin2 *L = &cases[c];
		for (uint64_t j0 = 0; j0 < 12; j0 += 3)
			for (uint64_t j1 = j0; j1 < 40; j1 += 7) {
				double b0 = 0, b1 = 0;
				for (uint64_t j = j0; j < j1; j++) {
					double x = L->a1 + L->b1 * j, y = L->a2 + L->b2 * j;
					double dt = (x > y ? x : y) + L->c;
					b0 += dt;
					b1 += dt * j;
				}
				double s0, s1;
				kvs_lin2_sums(L, j0, j1, &s0, &s1);
				assert_close(s0, b0, 1e-12);
				assert_close(s1, b1, 1e-12);
				/* the prefix (S0 alone) is the same double */
				if (j0 == 0)
					assert_true(kvs_lin2_prefix(L, j1) == s0);
			}
		for (uint64_t k = 0; k < 5000; k += 1 + k / 7) {
			double s0, s1;
			kvs_lin2_sums(L, 0, k, &s0, &s1);
			assert_true(kvs_lin2_prefix(L, k) == s0);
		}
		/* one step (its own code path): exactly the leading line
		 * plus c, as the general sums give it for positive lines */
		{
			double s0, s1, x = L->a1 > L->a2 ? L->a1 : L->a2;
			if (L->b1 - L->b2 == 0)
				x = L->a1 >= L->a2 ? L->a1 : L->a2;
			kvs_lin2_sums(L, 0, 1, &s0, &s1);
			assert_true(s0 == x + L->c);
			assert_true(s1 == 0.0);
		}
		/* steps_to / step_at invert the prefix sums */
		for (double target = 0.5; target < 30; target += 1.3) {
			if (kvs_lin2_prefix(L, 1000) <= target)
				break;
			uint64_t k = kvs_lin2_steps_to(L, 1000, target);
			assert_true(kvs_lin2_prefix(L, k) >= target);
			if (k > 1)
				assert_true(kvs_lin2_prefix(L, k - 1) < target);
			uint64_t j = kvs_lin2_step_at(L, 1000, target);
			assert_true(kvs_lin2_prefix(L, j) <= target);
			assert_true(kvs_lin2_prefix(L, j + 1) > target);
		}
	}
	/* steps_to against a scan: the smallest k in [1, kmax] with
	 * prefix(k) >= target (kmax when none), targets on and beside the
	 * prefix sums themselves, step times rising, flat and falling */
	const kvs_lin2 more[] = {
		{ 0.02, 1e-5, 0.01, 4e-5, 0.003 },
		{ 0.05, -1e-5, 0.01, 0.0, 0.0 },   /* falling, then flat */
		{ 1e-3, 0.0, 1e-3, 0.0, 0.0 },
		{ 0.01, 0.002, 0.02, 0.0, 1e-4 },
	};
	for (size_t c = 0; c < KVS_ARRAY_LEN(cases) + KVS_ARRAY_LEN(more); c++) {
		const kvs_lin2 *L = c < KVS_ARRAY_LEN(cases) ? &cases[c]
							      : &more[c - KVS_ARRAY_LEN(cases)];
		for (uint64_t kmax = 1; kmax <= 700; kmax = kmax * 3 + 1)
			for (uint64_t t = 0; t <= kmax + 2; t += 1 + kmax / 40)
				for (int side = -1; side <= 1; side++) {
					double target = kvs_lin2_prefix(L, t);
					target += side * 1e-9 * (target > 0 ? target : 1);
					uint64_t want = kmax;
					for (uint64_t k = 1; k <= kmax; k++)
						if (kvs_lin2_prefix(L, k) >= target) {
							want = k;
							break;
						}
					assert_int_equal(kvs_lin2_steps_to(L, kmax, target), want);
				}
	}
}

/* ---- hand-computed cases ------------------------------------------------------------ */

static void lone_request(bool fast)
{
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 64, 16, 2048);
	c.fast_path = fast;
	c.cost.linear_per_token_s = 1e-5;   /* prefill of 100: 11 ms, decode 10.01 ms */
	kvs_request q = mkreq(0, 1.0, 100, 5);
	kvs_request_set *set = set_of(&q, 1);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 1);
	assert_int_equal(st->steps, 5);          /* 1 prefill + 4 decodes */
	const kvs_sim_request_record *r = rec_of(&R, 0);
	assert_int_equal(r->outcome, KVS_SIM_COMPLETED);
	assert_close(r->admitted_s, 1.0, 1e-12);
	assert_close(r->first_token_s, 1.011, 1e-12);
	assert_close(r->finish_s, 1.011 + 4 * 0.01001, 1e-12);
	assert_close(st->ttft_s.max, 0.011, 1e-9);
	assert_close(st->tpot_s.max, 0.01001, 1e-9);
	assert_close(st->e2e_s.max, 0.011 + 4 * 0.01001, 1e-9);
	assert_close(st->queue_delay_s.max, 0.0, 1e-12);
	/* 7 blocks of 16 held from admission (the first instant of the peak):
	 * 100 tokens stored, 4 more to come (final length 100 + 5 - 1 = 104:
	 * the last output token's KV is never written), 8 never used */
	assert_close(st->memory_peak_pct.token_states, 100.0 * 100 / 4096, 1e-9);
	assert_close(st->memory_peak_pct.reservation, 100.0 * 4 / 4096, 1e-9);
	assert_close(st->memory_peak_pct.internal_frag, 100.0 * 8 / 4096, 1e-9);
	assert_close(st->peak_time_s, 1.0, 1e-12);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_lone_request(void **state)
{
	(void)state;
	lone_request(true);
	lone_request(false);
}

static void test_chunked_prefill(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 64, 16, 2048);
	c.max_num_seqs = 8;
	c.max_num_batched_tokens = 64;   /* 100 prompt tokens: chunks of 64 + 36 */
	kvs_request q = mkreq(0, 0.0, 100, 3);
	kvs_request_set *set = set_of(&q, 1);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_request_record *r = rec_of(&R, 0);
	assert_close(r->first_token_s, 0.02, 1e-12);
	assert_close(r->finish_s, 0.04, 1e-12);
	assert_int_equal(kvs_sim_result_stats(res)->tokens_per_step_max, 64);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* Without chunked prefill (vLLM V0), 10 ms steps.  A (4 + 3 tokens) comes
 * at 0, B (4 + 2) at 15 ms.  Prompt step [0, 10) gives A token 1; decode
 * step [10, 20) token 2 (B arrives inside it); at 20 B's prompt runs alone,
 * A waits: [20, 30) gives B token 1; [30, 40) decodes both: A's token 3
 * and B's token 2, both finish at 40.  With chunked prefill B's prompt
 * rides in A's last decode step [20, 30): A finishes at 30. */
static void prompt_steps(bool chunked, bool fast)
{
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 64, 16, 64);
	c.chunked_prefill_off = !chunked;
	c.fast_path = fast;
	c.validate = true;
	kvs_request q[2] = { mkreq(0, 0.0, 4, 3), mkreq(1, 0.015, 4, 2) };
	kvs_request_set *set = set_of(q, 2);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	const kvs_sim_request_record *a = rec_of(&R, 0), *b = rec_of(&R, 1);
	assert_close(a->first_token_s, 0.01, 1e-12);
	assert_close(a->finish_s, chunked ? 0.03 : 0.04, 1e-12);
	assert_close(b->admitted_s, 0.02, 1e-12);
	assert_close(b->first_token_s, 0.03, 1e-12);
	assert_close(b->finish_s, 0.04, 1e-12);
	assert_int_equal(st->steps, 4);
	assert_int_equal(st->completed, 2);
	/* tokens per step: A's prompt 4 (V0: B's prompt alone, 4; both
	 * decoding, 2) or B's prompt with A's decode (4 + 1) */
	assert_int_equal(st->tokens_per_step_max, chunked ? 5 : 4);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* Three prompts of 30 tokens at 0, 2 output tokens each, a budget of 64
 * tokens per step: without chunked prefill a prompt is computed whole, so
 * the first prompt step takes A and B (60) and C waits for the next one
 * ([10, 20), A and B waiting); [20, 30) decodes all three.  Chunked: C's
 * first 4 tokens ride in step 0, its other 26 in step 1 beside A's and B's
 * decodes (A and B finish at 20), C's token 2 at 30. */
static void whole_prompts(bool chunked, bool fast)
{
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 64, 16, 64);
	c.max_num_batched_tokens = 64;
	c.chunked_prefill_off = !chunked;
	c.fast_path = fast;
	c.validate = true;
	kvs_request q[3] = { mkreq(0, 0.0, 30, 2), mkreq(1, 0.0, 30, 2), mkreq(2, 0.0, 30, 2) };
	kvs_request_set *set = set_of(q, 3);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	for (uint64_t i = 0; i < 2; i++) {
		assert_close(rec_of(&R, i)->first_token_s, 0.01, 1e-12);
		assert_close(rec_of(&R, i)->finish_s, chunked ? 0.02 : 0.03, 1e-12);
	}
	const kvs_sim_request_record *r = rec_of(&R, 2);
	assert_close(r->admitted_s, chunked ? 0.0 : 0.01, 1e-12);
	assert_close(r->first_token_s, 0.02, 1e-12);
	assert_close(r->finish_s, 0.03, 1e-12);
	assert_int_equal(st->steps, 3);
	assert_int_equal(st->tokens_per_step_max, chunked ? 64 : 60);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_prompt_steps(void **state)
{
	(void)state;
	for (int fast = 0; fast < 2; fast++) {
		prompt_steps(false, fast);
		prompt_steps(true, fast);
		whole_prompts(false, fast);
		whole_prompts(true, fast);
	}
	/* a prompt of max_model_len must fit one step */
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 64, 16, 2048);
	c.chunked_prefill_off = true;
	c.max_num_batched_tokens = 2047;
	kvs_sim *sim = NULL;
	assert_int_equal(kvs_sim_create(&c, &sim), KVS_ERR_INVALID);
	assert_null(sim);
	assert_non_null(strstr(kvs_last_error(), "max_num_batched_tokens (2047) must be >= "
					       "max_model_len (2048)"));
	c.max_num_batched_tokens = 2048;
	assert_int_equal(kvs_sim_create(&c, &sim), KVS_OK);
	kvs_sim_destroy(sim);
}

/* Two requests of 150 tokens each (100 + 50) on a pool of 160 tokens: the
 * second waits for the first, under paged and under oracle reservation. */
static void contend(kvs_policy pol, bool fast)
{
	kvs_sim_config c;
	cfg_fixed(&c, pol, 160, 2, 16, 1024);
	c.fast_path = fast;
	kvs_request q[2] = { mkreq(0, 0.0, 100, 50), mkreq(1, 0.0, 100, 50) };
	kvs_request_set *set = set_of(q, 2);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 2);
	assert_int_equal(st->preemptions, 0);
	assert_int_equal(st->concurrency_max, 1);
	const kvs_sim_request_record *a = rec_of(&R, 0), *b = rec_of(&R, 1);
	assert_close(a->first_token_s, 0.01, 1e-12);
	assert_close(a->finish_s, 0.50, 1e-12);
	assert_close(b->admitted_s, 0.50, 1e-12);
	assert_close(b->first_token_s, 0.51, 1e-12);
	assert_close(b->finish_s, 1.00, 1e-12);
	assert_close(st->queue_delay_s.max, 0.50, 1e-3);
	assert_close(st->sim_time_s, 1.0, 1e-12);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_contention(void **state)
{
	(void)state;
	contend(KVS_POLICY_PAGED, true);
	contend(KVS_POLICY_PAGED, false);
	contend(KVS_POLICY_ORACLE, true);
	contend(KVS_POLICY_ORACLE, false);
}

/* Pool of 10 blocks of 16; two requests of 32 + 100.  Both prefill at step
 * 0; each takes a block every 16 tokens; at step 49 A (older) needs its 6th
 * block with all 10 taken, so B (most recent) is preempted with 80 tokens
 * stored and 49 emitted.  B waits until A finishes at step 100 (t = 1.00),
 * re-prefills 81 tokens (emits token 50) and finishes at step 150. */
static void preempt_case(bool fast, kvs_preempt_mode mode)
{
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 160, 2, 16, 1024);
	c.fast_path = fast;
	c.preemption_mode = mode;
	c.deploy.gpu.pcie_bytes_per_s = 1e12;
	c.swap_bytes = 1 << 20;
	kvs_request q[2] = { mkreq(0, 0.0, 32, 100), mkreq(1, 0.0, 32, 100) };
	kvs_request_set *set = set_of(q, 2);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 2);
	assert_int_equal(st->preemptions, 1);
	const kvs_sim_request_record *a = rec_of(&R, 0), *b = rec_of(&R, 1);
	assert_int_equal(a->preemptions, 0);
	assert_int_equal(b->preemptions, 1);
	assert_close(a->first_token_s, 0.01, 1e-12);
	assert_close(b->first_token_s, 0.01, 1e-12);
	if (mode == KVS_PREEMPT_RECOMPUTE) {
		assert_int_equal(st->recomputed_tokens, 80);
		assert_int_equal(st->swapped_bytes, 0);
		assert_close(a->finish_s, 1.00, 1e-12);
		assert_close(b->finish_s, 1.51, 1e-12);
	} else {
		/* swapped out at step 49 (80 tokens x 2 bytes), back in when
		 * A finishes, then 51 more tokens: finishes at step 150 too,
		 * plus the PCIe time of the two copies */
		assert_int_equal(st->recomputed_tokens, 0);
		assert_int_equal(st->swap_out_bytes, 160);
		assert_int_equal(st->swap_in_bytes, 160);
		assert_close(a->finish_s, 1.00 + 160 / 1e12, 1e-9);
		assert_close(b->finish_s, 1.51 + 320 / 1e12, 1e-9);
	}
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_preemption(void **state)
{
	(void)state;
	preempt_case(true, KVS_PREEMPT_RECOMPUTE);
	preempt_case(false, KVS_PREEMPT_RECOMPUTE);
	preempt_case(true, KVS_PREEMPT_SWAP);
	preempt_case(false, KVS_PREEMPT_SWAP);
}

/* max policy: budget B = 1000 tokens, max_model_len M = 300: at most
 * floor(B / M) = 3 at once, whatever the request sizes. */
static void test_max_policy_bound(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_MAX, 1000, 4, 16, 300);
	kvs_request q[20];
	for (int i = 0; i < 20; i++)
		q[i] = mkreq((uint64_t)i, 0.001 * i, 10 + i, 20 + 3 * i);
	kvs_request_set *set = set_of(q, 20);
	kvs_sim_result *res = run_set(&c, set, NULL);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 20);
	assert_int_equal(st->concurrency_max, 3);
	assert_true(st->concurrency_p99 <= 3);
	kvs_sim_result_destroy(res);
	/* paged fits them all at once on the same pool */
	c.policy = KVS_POLICY_PAGED;
	res = run_set(&c, set, NULL);
	assert_true(kvs_sim_result_stats(res)->concurrency_max > 3);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* Paged never holds more blocks than exist: on a small pool under heavy
 * load, at every sample the held parts stay within the budget and the six
 * parts sum to 100%; KVS_DEBUG >= 2 also runs the allocator validator and
 * compares the engine's parts with a fresh account at every step. */
static void test_paged_pool_bound(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 50 * 16, 8, 16, 512);
	c.sample_interval_s = 0.01;
	kvs_request q[300];
	uint64_t x = 12345;
	double t = 0;
	for (int i = 0; i < 300; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		t += (double)((x >> 33) % 100) / 2000.0;
		q[i] = mkreq((uint64_t)i, t, 1 + (uint32_t)((x >> 20) % 200),
			     1 + (uint32_t)((x >> 45) % 150));
	}
	kvs_request_set *set = set_of(q, 300);
	kvs_sim_result *res = run_set(&c, set, NULL);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 300);
	assert_true(st->preemptions > 0);
	size_t n;
	const kvs_sim_sample *sm = kvs_sim_result_samples(res, &n, NULL);
	assert_true(n > 10);
	for (size_t i = 0; i < n; i++) {
		assert_parts_sum(&sm[i].mem);
		assert_true(sm[i].mem.token_states + sm[i].mem.reservation +
			    sm[i].mem.internal_frag <= 100.0 + 1e-9);
		assert_true(sm[i].running <= c.max_num_seqs);
	}
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* ---- fast path == stepping one token at a time ----------------------------- */

static recs fastR, slowR;
/* set by test_fast_path_profile: a real deployment and a roofline with a
 * measured profile instead of the linear model below */
static const kvs_deploy *fs_deploy;
static const kvs_cost_config *fs_cost;
static uint32_t fs_max_concurrency;   /* closed-loop client in the comparison */
static uint32_t fs_block_size;        /* 0: 16 */
static bool fs_validate;              /* engine and allocator validators every step */
static int fs_requests;               /* 0: 400 (scaled by KVS_TEST_SCALE) */
static bool fs_prompt_steps;          /* no chunked prefill (vLLM V0) */
static double fs_gap = 1;             /* arrival gaps scaled (sparse: idle engine) */

static void compare_fast_slow_n(kvs_policy pol, bool prefix, double kv_read_factor,
				bool multi, kvs_preempt_mode mode)
{
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, fs_deploy);
	c.policy = pol;
	c.preemption_mode = mode;
	c.deploy.gpu.pcie_bytes_per_s = 25e9;
	c.swap_bytes = 600ull * 131072;
	c.deploy.block_size = fs_block_size ? fs_block_size : 16;
	c.deploy.max_model_len = 4096;
	c.kv_bytes_per_token = 131072;
	c.kv_budget_bytes = 8000ull * 131072;
	c.page_bytes = 64 << 10;
	c.max_num_seqs = 48;
	c.max_num_batched_tokens = fs_prompt_steps ? 4096 : 1024;
	c.chunked_prefill_off = fs_prompt_steps;
	c.enable_prefix_caching = prefix;
	/* a roofline-shaped linear model: memory-bound with a context term */
	c.cost.kind = KVS_COST_LINEAR;
	c.cost.linear_base_s = 0.012;
	c.cost.linear_per_token_s = 2e-5;
	c.cost.linear_per_context_s = 1e-7;
	c.cost.kv_read_factor = kv_read_factor;
	if (fs_cost) {
		c.cost = *fs_cost;
		c.cost.kv_read_factor = kv_read_factor;
	}
	c.max_concurrency = fs_max_concurrency;
	c.sample_interval_s = 0.5;
	enum { NMAX = 400 };
	static kvs_request q[NMAX];
	static uint64_t hashes[NMAX][64];
	int N = (int)((fs_requests ? fs_requests : NMAX) * test_scale());
	if (N < 40)
		N = 40;
	uint64_t x = 99;
	double t = 0;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		t += fs_gap * (double)((x >> 33) % 1000) / 4000.0;
		q[i] = mkreq((uint64_t)i, t, 1 + (uint32_t)((x >> 17) % 900),
			     1 + (uint32_t)((x >> 40) % 400));
		if (multi)   /* parallel sampling: n of 1 to 4 */
			q[i].num_samples = 1 + (uint32_t)((x >> 58) % 4);
		/* a few shared system prompts */
		uint32_t nb = q[i].prompt_tokens / 16;
		for (uint32_t b = 0; b < nb && b < 64; b++)
			hashes[i][b] = b < 8 ? (uint64_t)(i % 3) * 1000 + b + 1
					     : (uint64_t)i * 100000 + b;
		q[i].hash_ids = hashes[i];
		q[i].num_hash_ids = nb < 64 ? nb : 64;
		q[i].hash_block_tokens = 16;
	}
	kvs_request_set *set = set_of(q, (size_t)N);
	c.fast_path = true;
	c.validate = fs_validate;   /* the fast path's state (stepping has no lazy parts) */
	kvs_sim_result *f = run_set(&c, set, &fastR);
	c.fast_path = false;
	c.validate = false;
	kvs_sim_result *s = run_set(&c, set, &slowR);
	const kvs_sim_stats *a = kvs_sim_result_stats(f), *b = kvs_sim_result_stats(s);
	print_message("%s prefix %d factor %g n %s %s: %llu steps, %llu preemptions\n",
		      kvs_policy_name(pol), prefix, kv_read_factor, multi ? "1-4" : "1",
		      kvs_preempt_mode_name(mode), (unsigned long long)a->steps,
		      (unsigned long long)a->preemptions);
	assert_int_equal(a->completed, b->completed);
	assert_int_equal(a->rejected, b->rejected);
	assert_int_equal(a->steps, b->steps);
	assert_int_equal(a->preemptions, b->preemptions);
	assert_int_equal(a->recomputed_tokens, b->recomputed_tokens);
	assert_int_equal(a->swapped_bytes, b->swapped_bytes);
	assert_int_equal(a->forked_sequences, b->forked_sequences);
	assert_int_equal(a->cow_copies, b->cow_copies);
	assert_int_equal(a->copy_bytes, b->copy_bytes);
	assert_int_equal(a->output_tokens, b->output_tokens);
	assert_int_equal(a->prefix_hit_tokens, b->prefix_hit_tokens);
	assert_int_equal(a->concurrency_max, b->concurrency_max);
	assert_int_equal(a->tokens_per_step_max, b->tokens_per_step_max);
	/* the fast path did skip steps (a closed loop always steps; at block
	 * size 1 every decoding sequence crosses a block at every step, each
	 * step ends a span) */
	if (fs_max_concurrency)
		assert_true(a->spans == b->spans);
	else if (c.deploy.block_size == 1)
		assert_true(a->spans <= b->spans);
	else
		assert_true(a->spans < b->spans);
	assert_close(a->sim_time_s, b->sim_time_s, 1e-9);
	assert_close(a->concurrency_mean, b->concurrency_mean, 1e-9);
	assert_close(a->waiting_mean, b->waiting_mean, 1e-9);
	assert_close(a->memory_pct.token_states, b->memory_pct.token_states, 1e-9);
	assert_close(a->memory_pct.reservation, b->memory_pct.reservation, 1e-9);
	assert_close(a->memory_pct.internal_frag, b->memory_pct.internal_frag, 1e-9);
	assert_close(a->memory_pct.free, b->memory_pct.free, 1e-9);
	/* the peak: its parts, and the step it was first reached at (a span
	 * through block crossings finds it at its last crossing) */
	assert_close(a->memory_peak_pct.token_states, b->memory_peak_pct.token_states, 1e-9);
	assert_close(a->memory_peak_pct.reservation, b->memory_peak_pct.reservation, 1e-9);
	assert_close(a->memory_peak_pct.internal_frag, b->memory_peak_pct.internal_frag, 1e-9);
	assert_close(a->memory_peak_pct.cached_idle, b->memory_peak_pct.cached_idle, 1e-9);
	assert_close(a->memory_peak_pct.free, b->memory_peak_pct.free, 1e-9);
	assert_close(a->peak_time_s, b->peak_time_s, 1e-9);
	assert_close(a->ttft_s.p99, b->ttft_s.p99, 1e-9);
	assert_close(a->tpot_s.p50, b->tpot_s.p50, 1e-9);
	assert_int_equal(fastR.n, slowR.n);
	for (size_t i = 0; i < fastR.n; i++) {
		const kvs_sim_request_record *x1 = &fastR.r[i], *y1 = &slowR.r[i];
		assert_int_equal(x1->index, y1->index);
		assert_int_equal(x1->outcome, y1->outcome);
		assert_int_equal(x1->preemptions, y1->preemptions);
		assert_close(x1->admitted_s, y1->admitted_s, 1e-9);
		assert_close(x1->first_token_s, y1->first_token_s, 1e-9);
		assert_close(x1->finish_s, y1->finish_s, 1e-9);
	}
	size_t n1, n2;
	const kvs_sim_sample *s1 = kvs_sim_result_samples(f, &n1, NULL);
	const kvs_sim_sample *s2 = kvs_sim_result_samples(s, &n2, NULL);
	assert_int_equal(n1, n2);
	for (size_t i = 0; i < n1; i++) {
		assert_close(s1[i].mem.token_states, s2[i].mem.token_states, 1e-9);
		assert_int_equal(s1[i].running, s2[i].running);
		assert_int_equal(s1[i].waiting, s2[i].waiting);
	}
	assert_accounting(a);
	if (multi) {
		/* every sample's output counted; families forked, and under
		 * paged their shared last prompt blocks copied on write */
		uint64_t n_multi = 0;
		for (int i = 0; i < N; i++)
			n_multi += q[i].num_samples > 1;
		assert_int_equal(a->multi_sample_requests, n_multi);
		assert_true(n_multi > 0);
		if (pol == KVS_POLICY_MAX) {
			/* one region of max_model_len (4096) fits the pool
			 * (8000): no family ever fits, each is rejected */
			assert_int_equal(a->forked_sequences, 0);
			assert_true(a->rejected_by[KVS_SIM_REJECT_NEVER_FITS] >= n_multi);
		} else {
			assert_true(a->forked_sequences > 0);
			assert_true(a->copy_bytes > 0);
		}
		if (pol == KVS_POLICY_PAGED)
			assert_true(a->cow_copies > 0);
		uint64_t out = 0;
		for (size_t i = 0; i < fastR.n; i++)
			if (fastR.r[i].outcome == KVS_SIM_COMPLETED) {
				const kvs_request *qq = &q[fastR.r[i].index];
				assert_int_equal(fastR.r[i].num_samples, qq->num_samples);
				out += (uint64_t)qq->output_tokens * qq->num_samples;
			}
		assert_int_equal(a->output_tokens, out);
	}
	kvs_sim_result_destroy(f);
	kvs_sim_result_destroy(s);
	kvs_request_set_destroy(set);
}

static void compare_fast_slow(kvs_policy pol, bool prefix, double kv_read_factor)
{
	compare_fast_slow_n(pol, prefix, kv_read_factor, false, KVS_PREEMPT_RECOMPUTE);
}

static void test_fast_path_equivalence(void **state)
{
	(void)state;
	for (size_t p = 0; p < kvs_policy_count(); p++)
		compare_fast_slow((kvs_policy)p, false, 1.0);
	compare_fast_slow(KVS_POLICY_PAGED, true, 1.0);
	/* a KV-read factor scales the decode-span lines like single steps */
	compare_fast_slow(KVS_POLICY_PAGED, false, 2.5);
	compare_fast_slow(KVS_POLICY_VATTENTION, true, 1.7);
}

/* Paged at block sizes 1 and 2, under memory pressure (preemptions): the
 * fast path takes the whole-block crossings of single sequences in bulk
 * (crossing classes), falls back to one sequence at a time when the pool
 * runs short, and must still match stepping one token at a time; the
 * validators run at every step of both (the owed blocks' accounting
 * against a fresh account; with debug_checks 3 also the class counts). */
static void test_fast_path_block_sizes(void **state)
{
	(void)state;
	fs_validate = true;
	fs_requests = 120;   /* the validators are O(blocks) per step */
	fs_block_size = 1;
	compare_fast_slow_n(KVS_POLICY_PAGED, false, 1.0, false, KVS_PREEMPT_RECOMPUTE);
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.0, false, KVS_PREEMPT_SWAP);
	/* families beside the lazy singles (at block size 1 no prompt block
	 * is partly filled: nothing to copy on write, which the comparison
	 * expects) */
	fs_block_size = 2;
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.0, true, KVS_PREEMPT_RECOMPUTE);
	/* large blocks: few crossing classes occupied, so a span's steps
	 * between its crossing steps are summed in closed form */
	fs_block_size = 64;
	compare_fast_slow_n(KVS_POLICY_PAGED, false, 1.0, false, KVS_PREEMPT_RECOMPUTE);
	fs_block_size = 256;
	compare_fast_slow_n(KVS_POLICY_PAGED, false, 1.0, false, KVS_PREEMPT_SWAP);
	fs_block_size = 0;
	fs_validate = false;
	fs_requests = 0;
}

/* q replayed both ways: the fast path with the validators (*f), and one
 * token at a time (*sl) */
static void replay_both(kvs_sim_config *c, const kvs_request *q, size_t n,
			kvs_sim_result **f, kvs_sim_result **sl)
{
	kvs_request_set *set = set_of(q, n);
	c->fast_path = true;
	c->validate = true;
	*f = run_set(c, set, NULL);
	c->fast_path = false;
	c->validate = false;
	*sl = run_set(c, set, NULL);
	kvs_request_set_destroy(set);
}

/* q replayed both ways on a pool of `pool` tokens: the same completions
 * and steps, the peak's parts as worked by hand in tokens (stored,
 * reserved, past final lengths, free) and the same peak time and
 * time-weighted parts; *fast, *slow: the spans of each. */
static void final_block_case(kvs_sim_config *c, const kvs_request *q, size_t n,
			     double pool, double tok, double res, double frag, double free_tok,
			     uint64_t *fast, uint64_t *slow)
{
	kvs_sim_result *f, *sl;
	replay_both(c, q, n, &f, &sl);
	const kvs_sim_stats *a = kvs_sim_result_stats(f), *b = kvs_sim_result_stats(sl);
	assert_int_equal(a->completed, n);
	assert_int_equal(b->completed, n);
	assert_int_equal(a->steps, b->steps);
	const kvs_sim_mem_pct *pk[2] = { &a->memory_peak_pct, &b->memory_peak_pct };
	for (int i = 0; i < 2; i++) {
		assert_close(pk[i]->token_states, 100.0 * tok / pool, 1e-9);
		assert_close(pk[i]->reservation, 100.0 * res / pool, 1e-9);
		assert_close(pk[i]->internal_frag, 100.0 * frag / pool, 1e-9);
		assert_close(pk[i]->free, 100.0 * free_tok / pool, 1e-9);
	}
	assert_close(a->peak_time_s, b->peak_time_s, 1e-9);
	assert_close(a->memory_pct.token_states, b->memory_pct.token_states, 1e-9);
	assert_close(a->memory_pct.reservation, b->memory_pct.reservation, 1e-9);
	assert_close(a->memory_pct.internal_frag, b->memory_pct.internal_frag, 1e-9);
	*fast = a->spans;
	*slow = b->spans;
	kvs_sim_result_destroy(f);
	kvs_sim_result_destroy(sl);
}

/* The crossing into the block that holds a sequence's final token runs
 * inside a span like the others; that block's tokens past the final
 * length are internal fragmentation from its step on.  By hand: A (16 +
 * 100 tokens) ends at 16 + 100 - 1 = 115 tokens, in 8 blocks of 16; B
 * (16 + 20) at 35, in 3, and finishes first.  The held memory peaks when
 * A, alone, takes its 8th block, at its 113th token: 113 tokens stored, 2
 * reserved, 128 - 115 = 13 past its final length, of 64 blocks.  Both
 * paths give those parts; the fast one in fewer spans. */
static void test_fast_path_final_block(void **state)
{
	(void)state;
	kvs_sim_config c;
	uint64_t fast, slow;
	cfg_fixed(&c, KVS_POLICY_PAGED, 64 * 16, 100, 16, 1024);
	c.sample_interval_s = 1000;   /* no sample ends a span */
	kvs_request q[2] = { mkreq(0, 0, 16, 100), mkreq(1, 0, 16, 20) };
	final_block_case(&c, q, 2, 64 * 16, 113, 2, 13, 56 * 16, &fast, &slow);
	assert_true(fast < slow);

	/* a lone long sequence: its final crossing is registered more than
	 * the ring's 4,096 steps ahead (a far one, moved into the ring as the
	 * steps pass), and a span is at most that long.  16 + 6,000 tokens
	 * end at 6,015, in 376 blocks: at the last crossing 6,001 stored, 14
	 * reserved, 1 past the final length, 136 blocks free of 512 */
	cfg_fixed(&c, KVS_POLICY_PAGED, 512 * 16, 100, 16, 8192);
	c.sample_interval_s = 1000;
	kvs_request lone = mkreq(0, 0, 16, 6000);
	final_block_case(&c, &lone, 1, 512 * 16, 6001, 14, 1, 136 * 16, &fast, &slow);
	assert_true(fast >= 3 && fast < 10);
}

/* The decode queue's ring holds events fewer than 4,096 steps ahead and
 * its heap the rest: outputs around 4,096 tokens, admitted at steps that
 * are not multiples of 64, queue finishes in the ring's farthest buckets
 * (the low bits of the word the current step is in), exactly 4,096 ahead
 * (the heap) and past it, beside short ones.  Paged (lazy crossing
 * classes, each queued at its finish) and oracle (one contiguous region:
 * its finish is its only event), the fast path with the validators
 * against one token at a time: the same completions, steps and time. */
static void test_decode_ring_far(void **state)
{
	(void)state;
	static const uint32_t outs[] = { 4095, 4096, 4097, 4056, 4159, 5000, 4033,
					 4100, 100, 7, 4094, 2000, 4090, 4098 };
	enum { N = sizeof outs / sizeof outs[0] };
	kvs_request q[N];
	double t = 0;
	for (int i = 0; i < N; i++) {
		q[i] = mkreq((uint64_t)i, t, 16, outs[i]);
		t += 0.013 + 0.0371 * (double)(i % 5);   /* steps of 0.01 s */
	}
	const kvs_policy pols[2] = { KVS_POLICY_PAGED, KVS_POLICY_ORACLE };
	for (int k = 0; k < 2; k++) {
		kvs_sim_config c;
		cfg_fixed(&c, pols[k], 80000, 100, 16, 8192);
		c.sample_interval_s = 7.5;
		kvs_sim_result *f, *sl;
		replay_both(&c, q, N, &f, &sl);
		const kvs_sim_stats *a = kvs_sim_result_stats(f), *b = kvs_sim_result_stats(sl);
		assert_int_equal(a->completed, N);
		assert_int_equal(b->completed, N);
		assert_int_equal(a->steps, b->steps);
		assert_int_equal(a->output_tokens, b->output_tokens);
		print_message("%s: %llu spans against %llu steps\n", kvs_policy_name(pols[k]),
			      (unsigned long long)a->spans, (unsigned long long)b->spans);
		assert_true(a->spans < b->spans);
		assert_close(a->sim_time_s, b->sim_time_s, 1e-9);
		assert_close(a->concurrency_mean, b->concurrency_mean, 1e-9);
		assert_close(a->memory_pct.token_states, b->memory_pct.token_states, 1e-9);
		kvs_sim_result_destroy(f);
		kvs_sim_result_destroy(sl);
	}
}

/* The same with parallel sampling (n = 1..4 per request): forked siblings
 * decode in lockstep and fit the spans; families preempted whole, by
 * recompute and by swap. */
static void test_fast_path_parallel_sampling(void **state)
{
	(void)state;
	for (size_t p = 0; p < kvs_policy_count(); p++)
		compare_fast_slow_n((kvs_policy)p, false, 1.0, true, KVS_PREEMPT_RECOMPUTE);
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.0, true, KVS_PREEMPT_RECOMPUTE);
	compare_fast_slow_n(KVS_POLICY_PAGED, false, 1.0, true, KVS_PREEMPT_SWAP);
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.3, true, KVS_PREEMPT_SWAP);
}

/* Without chunked prefill: prompt-only steps leave the due decodes queued
 * for the next decode step, which the fast path's spans and crossing
 * classes must see exactly as stepping does; every policy, recompute and
 * swap, families, prefix caching, the validators at every step. */
static void test_fast_path_prompt_steps(void **state)
{
	(void)state;
	fs_prompt_steps = true;
	for (size_t p = 0; p < kvs_policy_count(); p++)
		compare_fast_slow((kvs_policy)p, false, 1.0);
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.0, true, KVS_PREEMPT_SWAP);
	fs_validate = true;
	fs_requests = 120;
	fs_block_size = 1;
	compare_fast_slow_n(KVS_POLICY_PAGED, false, 1.0, false, KVS_PREEMPT_RECOMPUTE);
	fs_block_size = 2;
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.0, true, KVS_PREEMPT_RECOMPUTE);
	/* sparse arrivals: the engine goes idle (a plan with nothing to run
	 * takes step G's crossings and G stays), then a prompt step's
	 * sequences cross a block at G (at block size 1 every prompt fills
	 * its blocks) */
	fs_gap = 40;
	fs_block_size = 1;
	compare_fast_slow_n(KVS_POLICY_PAGED, false, 1.0, false, KVS_PREEMPT_RECOMPUTE);
	fs_block_size = 4;
	compare_fast_slow_n(KVS_POLICY_PAGED, true, 1.0, false, KVS_PREEMPT_SWAP);
	fs_gap = 1;
	fs_block_size = 0;
	fs_requests = 0;
	fs_validate = false;
	fs_prompt_steps = false;
}

/* ---- parallel sampling ----------------------------------------------------------------
 * One request of P = 40 prompt and O = 10 output tokens per sample, n = 4,
 * blocks of 16, 10 ms steps.  Step 0 prefills the prompt once (3 blocks: 2
 * full, 1 holding 8 tokens) and samples the 4 first tokens (TTFT 10 ms).
 * At step 1 the request forks 3 children sharing the 3 blocks; each sample
 * then writes its token 1 into the shared partial block: 3 copy-on-write
 * copies (the last writer keeps the original).  Steps 1..9 each store one
 * token per sample (position 39 + k) and emit the next: the request
 * finishes at 100 ms with 4 x 10 output tokens, each sample at its final
 * length 40 + 10 - 1 = 49.
 *
 * paged, slots held (step k = 0..9):
 *   step 0:     3 blocks (48 slots): 40 stored, 8 reserved
 *   steps 1-8:  2 shared full blocks + 4 private block-2 copies (96 slots):
 *               32 + 4 (8 + k) stored, 4 (8 - k) reserved
 *   step 9:     + one block 3 per sample (160 slots: the prompt's 2 full
 *               blocks once plus 2 tail blocks per sample): 100 stored,
 *               60 internal (15 unused slots of each block 3)
 *   time-weighted: stored (40 + sum_{k=1..9} (64 + 4k)) / 10 = 79.6,
 *   reserved (8 + sum_{k=1..8} 4 (8 - k)) / 10 = 12, internal 60 / 10 = 6.
 * oracle: 4 regions of 49 (196 slots) from admission (the children's
 *   reserved with the parent's); stored 40 in step 0, then 4 (40 + k):
 *   time-weighted (40 + sum_{k=1..9} 4 (40 + k)) / 10 = 166, reserved 30,
 *   nothing internal; a fork copies the 40 prompt tokens into each child. */
static void sampling_case(kvs_policy pol, bool fast)
{
	kvs_sim_config c;
	cfg_fixed(&c, pol, 4096, 64, 16, 2048);
	c.fast_path = fast;
	kvs_request q = mkreq(0, 0.0, 40, 10);
	q.num_samples = 4;
	kvs_request_set *set = set_of(&q, 1);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->arrived, 1);
	assert_int_equal(st->completed, 1);
	assert_int_equal(st->multi_sample_requests, 1);
	assert_int_equal(st->steps, 10);
	assert_int_equal(st->output_tokens, 40);
	assert_int_equal(st->prompt_tokens, 40);
	assert_int_equal(st->forked_sequences, 3);
	assert_int_equal(st->concurrency_max, 4);
	assert_int_equal(st->preemptions, 0);
	const kvs_sim_request_record *r = rec_of(&R, 0);
	assert_int_equal(r->num_samples, 4);
	assert_int_equal(r->output_tokens, 10);
	assert_close(r->first_token_s, 0.01, 1e-12);
	assert_close(r->finish_s, 0.10, 1e-12);
	assert_close(st->ttft_s.max, 0.01, 1e-9);
	assert_close(st->tpot_s.max, 0.01, 1e-9);
	assert_close(st->output_tokens_per_s, 40 / 0.10, 1e-9);
	const kvs_sim_mem_pct *m = &st->memory_pct, *pk = &st->memory_peak_pct;
	double u = 100.0 / 4096;   /* one slot, in % of the pool */
	if (pol == KVS_POLICY_PAGED) {
		assert_int_equal(st->cow_copies, 3);
		assert_int_equal(st->copy_bytes, 3 * 16 * 64);
		assert_close(m->token_states, 79.6 * u, 1e-9);
		assert_close(m->reservation, 12 * u, 1e-9);
		assert_close(m->internal_frag, 6 * u, 1e-9);
		/* the most held: 10 blocks, from step 9 */
		assert_close(pk->token_states, 100 * u, 1e-9);
		assert_close(pk->reservation, 0, 1e-9);
		assert_close(pk->internal_frag, 60 * u, 1e-9);
		assert_close(st->peak_time_s, 0.09, 1e-9);
	} else {
		assert_int_equal(st->cow_copies, 0);
		assert_int_equal(st->copy_bytes, 3 * 40 * 64);
		assert_close(m->token_states, 166 * u, 1e-9);
		assert_close(m->reservation, 30 * u, 1e-9);
		assert_close(m->internal_frag, 0, 1e-9);
		assert_close(pk->token_states, 40 * u, 1e-9);
		assert_close(pk->reservation, 156 * u, 1e-9);
		assert_close(st->peak_time_s, 0.0, 1e-12);
	}
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_parallel_sampling_by_hand(void **state)
{
	(void)state;
	sampling_case(KVS_POLICY_PAGED, true);
	sampling_case(KVS_POLICY_PAGED, false);
	sampling_case(KVS_POLICY_ORACLE, true);
	sampling_case(KVS_POLICY_ORACLE, false);
}

/* A family preempted whole.  Pool of 12 blocks of 16; A (32 + 100, n = 1)
 * and B (16 + 60, n = 2) start together.  A holds ceil((32 + G) / 16)
 * blocks at step G, B one shared block plus ceil((16 + G) / 16) - 1 of
 * each sample's own; at step 33 they hold 5 + 7 = 12, at step 49 A needs
 * its 6th block and B (the most recent) is preempted with both samples at
 * 64 tokens (49 emitted).  Recompute drops 64 + (64 - 16) = 112 tokens of
 * KV; swap copies both samples out (2 x 64 tokens x 2 bytes) and back. */
static void family_preempt_case(kvs_preempt_mode mode, bool fast)
{
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 12 * 16, 2, 16, 1024);
	c.fast_path = fast;
	c.preemption_mode = mode;
	c.deploy.gpu.pcie_bytes_per_s = 1e12;
	c.swap_bytes = 1 << 20;
	kvs_request q[2] = { mkreq(0, 0.0, 32, 100), mkreq(1, 0.0, 16, 60) };
	q[1].num_samples = 2;
	kvs_request_set *set = set_of(q, 2);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 2);
	assert_int_equal(st->output_tokens, 100 + 2 * 60);
	const kvs_sim_request_record *a = rec_of(&R, 0), *b = rec_of(&R, 1);
	assert_int_equal(a->preemptions, 0);
	assert_true(b->preemptions >= 1);
	assert_close(b->first_token_s, 0.01, 1e-12);
	if (mode == KVS_PREEMPT_SWAP) {
		/* out at step 49, back in once A's blocks allow it */
		assert_int_equal(st->preemptions, 1);
		assert_int_equal(st->recomputed_tokens, 0);
		assert_int_equal(st->swap_out_bytes, 2 * 64 * 2);
		assert_int_equal(st->swap_in_bytes, 2 * 64 * 2);
		assert_int_equal(st->forked_sequences, 1);
	} else {
		/* the first preemption drops 112 tokens; readmitted, B
		 * re-prefills its prompt, forks again and each sample
		 * recomputes its own 49 tokens */
		assert_true(st->recomputed_tokens >= 112);
		assert_true(st->forked_sequences >= 2);
	}
	assert_true(b->finish_s > a->finish_s - 1e-12 || mode == KVS_PREEMPT_SWAP);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_parallel_sampling_preemption(void **state)
{
	(void)state;
	family_preempt_case(KVS_PREEMPT_RECOMPUTE, true);
	family_preempt_case(KVS_PREEMPT_RECOMPUTE, false);
	family_preempt_case(KVS_PREEMPT_SWAP, true);
	family_preempt_case(KVS_PREEMPT_SWAP, false);
	/* n larger than max_num_seqs, or samples that together exceed the
	 * pool though one fits: rejected as never_fits, still accounted */
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 10 * 16, 2, 16, 1024);
	c.max_num_seqs = 4;
	kvs_request q[3] = { mkreq(0, 0.0, 10, 10), mkreq(1, 0.1, 10, 10),
			     mkreq(2, 0.2, 20, 100) };
	q[0].num_samples = 5;
	q[2].num_samples = 3;   /* 3 x ceil(119 / 16) - 1 = 20 blocks > 10 */
	kvs_request_set *set = set_of(q, 3);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->arrived, 3);
	assert_int_equal(st->completed, 1);
	assert_int_equal(st->rejected_by[KVS_SIM_REJECT_NEVER_FITS], 2);
	assert_int_equal(rec_of(&R, 0)->outcome, KVS_SIM_REJECTED);
	assert_int_equal(rec_of(&R, 2)->outcome, KVS_SIM_REJECTED);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* A generated trace with n = 4 (as `kvsim gen --n 4` writes): every
 * request accounted for per request, every sample's output counted, and
 * paged (shared prompts) runs at least as many sequences at once as the
 * contiguous policies. */
static void test_parallel_sampling_generated(void **state)
{
	(void)state;
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.seed = 5;
	o.requests = kvs_test_scaled(300, 40);
	o.rate = 20;   /* a saturating load */
	o.num_samples = 4;
	assert_int_equal(kvs_gen_dist_parse("lognormal:600:0.8", &o.prompt), KVS_OK);
	assert_int_equal(kvs_gen_dist_parse("lognormal:150:0.8", &o.output), KVS_OK);
	o.max_tokens = 2000;
	kvs_gen *g;
	assert_int_equal(kvs_gen_open(&o, &g), KVS_OK);
	kvs_request_source gsrc = { (kvs_status (*)(void *, kvs_request *))kvs_gen_next, g, NULL };
	kvs_request_set *set;
	assert_int_equal(kvs_request_set_from_source(&gsrc, &set), KVS_OK);
	kvs_gen_close(g);
	uint64_t n = kvs_request_set_count(set);
	assert_int_equal(n, o.requests);
	kvs_sim_result *res[KVS_POLICY_CAP];
	for (size_t p = 0; p < kvs_policy_count(); p++) {
		kvs_sim_config c;
		cfg_fixed(&c, (kvs_policy)p, 60000, 131072, 16, 4096);
		c.page_bytes = 64 << 10;
		c.max_num_seqs = 128;
		c.max_num_batched_tokens = 2048;
		c.cost.linear_per_context_s = 1e-8;
		static recs R;
		res[p] = run_set(&c, set, &R);
		const kvs_sim_stats *st = kvs_sim_result_stats(res[p]);
		assert_int_equal(st->arrived, n);
		assert_int_equal(st->multi_sample_requests, n);
		assert_int_equal(st->unfinished, 0);
		assert_accounting(st);
		uint64_t out = 0;
		for (size_t i = 0; i < R.n; i++)
			if (R.r[i].outcome == KVS_SIM_COMPLETED)
				out += 4ull * R.r[i].output_tokens;
		assert_int_equal(st->output_tokens, out);
		assert_true(st->completed > 0);
		assert_true(st->concurrency_max <= c.max_num_seqs);
		assert_true(st->concurrency_max % 4 == 0);   /* whole families */
		print_message("%s: completed %llu, concurrency mean %.2f max %llu, "
			      "preemptions %llu, sim %.1f s\n", kvs_policy_name((kvs_policy)p),
			      (unsigned long long)st->completed, st->concurrency_mean,
			      (unsigned long long)st->concurrency_max,
			      (unsigned long long)st->preemptions, st->sim_time_s);
	}
	const kvs_sim_stats *pg = kvs_sim_result_stats(res[KVS_POLICY_PAGED]);
	for (int p = KVS_POLICY_MAX; p <= KVS_POLICY_ORACLE; p++)
		assert_true(pg->concurrency_mean >=
			    kvs_sim_result_stats(res[p])->concurrency_mean);
	for (size_t p = 0; p < kvs_policy_count(); p++)
		kvs_sim_result_destroy(res[p]);
	kvs_request_set_destroy(set);
}

/* ---- rejections and accounting --------------------------------------------------- */

static void test_rejections(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 160, 2, 16, 1000);
	kvs_request q[5] = {
		mkreq(0, 0.0, 10, 10),
		mkreq(1, 0.1, 900, 200),   /* over max_model_len */
		mkreq(2, 0.2, 100, 100),   /* 200 tokens > pool of 160 */
		mkreq(3, 0.3, 0, 5),       /* empty prompt */
		mkreq(4, 0.4, 20, 20),
	};
	q[1].over_max_len = true;
	kvs_request_set *set = set_of(q, 5);
	static recs R;
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->arrived, 5);
	assert_int_equal(st->completed, 2);
	assert_int_equal(st->rejected, 3);
	assert_int_equal(st->rejected_by[KVS_SIM_REJECT_MAX_LEN], 1);
	assert_int_equal(st->rejected_by[KVS_SIM_REJECT_BUDGET], 1);
	assert_int_equal(st->rejected_by[KVS_SIM_REJECT_EMPTY_PROMPT], 1);
	assert_int_equal(rec_of(&R, 2)->outcome, KVS_SIM_REJECTED);
	assert_int_equal(rec_of(&R, 2)->reason, KVS_SIM_REJECT_BUDGET);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	/* under max reservation (300 > pool) every request is too big */
	cfg_fixed(&c, KVS_POLICY_MAX, 160, 2, 16, 300);
	res = run_set(&c, set, NULL);
	st = kvs_sim_result_stats(res);
	assert_int_equal(st->completed, 0);
	assert_int_equal(st->rejected, 5);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_horizon_unfinished(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 2, 16, 2048);
	c.horizon_s = 0.255;
	kvs_request q[3] = { mkreq(0, 0.0, 10, 10), mkreq(1, 0.0, 10, 100),
			     mkreq(2, 5.0, 10, 10) };
	kvs_request_set *set = set_of(q, 3);
	kvs_sim_result *res = run_set(&c, set, NULL);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->arrived, 2);   /* the third comes after the horizon */
	assert_int_equal(st->completed, 1);
	assert_int_equal(st->unfinished, 1);
	assert_close(st->sim_time_s, 0.26, 1e-12);
	assert_accounting(st);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* A given sample interval is kept while the series stays within
 * KVS_SIM_SAMPLES_MAX; past it the interval doubles (as the automatic one
 * does past 4096), the samples staying on its multiples. */
static void test_sample_interval_bound(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 2, 16, 2048);
	/* one request: a 10 ms prefill step and 199 decode steps, 2 s */
	kvs_request q[1] = { mkreq(0, 0.0, 10, 200) };
	kvs_request_set *set = set_of(q, 1);
	c.sample_interval_s = 1e-3;
	kvs_sim_result *res = run_set(&c, set, NULL);
	size_t n;
	double iv;
	const kvs_sim_sample *sm = kvs_sim_result_samples(res, &n, &iv);
	assert_true(iv == 1e-3);
	assert_true(n == 2000 || n == 2001);
	kvs_sim_result_destroy(res);
	/* 1 us would be two million samples */
	c.sample_interval_s = 1e-6;
	res = run_set(&c, set, NULL);
	sm = kvs_sim_result_samples(res, &n, &iv);
	assert_true(n <= KVS_SIM_SAMPLES_MAX && n > KVS_SIM_SAMPLES_MAX / 2);
	assert_true(iv == 1e-6 * 32);   /* doubled five times: 62,500 samples */
	for (size_t i = 0; i < n; i++)
		assert_close(sm[i].t_s, (double)i * iv, 1e-9);
	assert_close(kvs_sim_result_stats(res)->sim_time_s, 2.0, 1e-9);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* ---- determinism and JSON ------------------------------------------------------- */

static char *json_of(kvs_sim_config *c, const kvs_request_set *set)
{
	kvs_sim_result *res = run_set(c, set, NULL);
	kvs_sim_result *arr[1] = { res };
	kvs_json *doc = kvs_sim_report_json("replay", arr, 1, "mem", KVS_TRACE_AUTO, NULL);
	char *s = kvs_json_text(doc);
	kvs_json_free(doc);
	kvs_sim_result_destroy(res);
	return s;
}

static void test_json_deterministic(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 800, 8, 16, 512);
	kvs_request q[50];
	for (int i = 0; i < 50; i++)
		q[i] = mkreq((uint64_t)i, 0.03 * i, 5 + (uint32_t)(i * 7 % 90),
			     1 + (uint32_t)(i * 13 % 70));
	kvs_request_set *set = set_of(q, 50);
	char *a = json_of(&c, set), *b = json_of(&c, set);
	assert_string_equal(a, b);
	json_error_t err;
	json_t *doc = json_loads(a, 0, &err);
	assert_non_null(doc);
	json_t *p = json_object_get(json_object_get(doc, "policies"), "paged");
	assert_non_null(p);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "accounting"),
							    "arrived")), 50);
	static const char *keys[] = {
		"accounting", "memory_pct", "memory_peak_pct", "concurrency",
		"tokens_per_step", "waiting", "queue_delay_s", "ttft_s", "tpot_s",
		"e2e_s", "throughput", "goodput", "preemptions", "recomputed_tokens",
		"swapped_bytes", "prefix_hit_tokens", "prefix_hit_blocks",
		"prefix_hit_rate", "sim", "timeseries", "cdf",
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(keys); i++)
		if (!json_object_get(p, keys[i]))
			fail_msg("missing key %s", keys[i]);
	json_t *ts = json_object_get(p, "timeseries");
	size_t n = json_array_size(json_object_get(ts, "t_s"));
	assert_true(n > 0);
	assert_int_equal(json_array_size(json_object_get(ts, "free_pct")), n);
	assert_int_equal(json_array_size(json_object_get(json_object_get(p, "cdf"), "q")), 101);
	assert_true(json_is_null(json_object_get(json_object_get(p, "sim"), "wall_s")));
	json_decref(doc);
	free(a);
	free(b);
	kvs_request_set_destroy(set);
}

/* ---- pieces ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The sketch's bucket index, computed mostly without log, is the
 * definition's ceil(log v / log g) for values spread over 24 decades, for
 * every bucket boundary from 1e-12 to 1e12 and the doubles next to it,
 * and for powers of two (whose mantissa is 1). */
static void test_sketch_bucket(void **state)
{
	(void)state;
	uint64_t x = 11;
	for (int i = 0; i < 2000000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		double v = pow(10.0, ((double)(x >> 11) / 9007199254740992.0) * 24 - 12);
		if (v <= 1e-12)
			continue;
		assert_int_equal(kvs_sketch_bucket(v), kvs_sketch_bucket_exact(v));
	}
	double lg = log(1.001 / 0.999);
	int32_t lo = (int32_t)floor(log(1e-12) / lg) + 1, hi = (int32_t)ceil(log(1e12) / lg);
	uint64_t checked = 0;
	for (int32_t i = lo; i <= hi; i++) {
		double b = exp((double)i * lg), u = b, d = b;
		for (int k = 0; k < 4; k++) {
			assert_int_equal(kvs_sketch_bucket(u), kvs_sketch_bucket_exact(u));
			assert_int_equal(kvs_sketch_bucket(d), kvs_sketch_bucket_exact(d));
			u = nextafter(u, INFINITY);
			d = nextafter(d, 0);
			checked += 2;
		}
	}
	assert_true(checked > 200000);
	for (int e = -39; e <= 39; e++) {
		double v = ldexp(1.0, e);
		assert_int_equal(kvs_sketch_bucket(v), kvs_sketch_bucket_exact(v));
		assert_int_equal(kvs_sketch_bucket(nextafter(v, 0)),
				 kvs_sketch_bucket_exact(nextafter(v, 0)));
	}
	assert_int_equal(kvs_sketch_bucket(1.0), 0);
	assert_int_equal(kvs_sketch_bucket(2e-12), kvs_sketch_bucket_exact(2e-12));
}

static void test_sketch(void **state)
{
	(void)state;
	enum { N = 20000 };
	static double v[N];
	kvs_sketch s;
	kvs_sketch_init(&s);
	uint64_t x = 7;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = i % 50 == 0 ? 0.0 : exp(((double)(x >> 11) / 9007199254740992.0) * 12 - 8);
		assert_int_equal(kvs_sketch_add(&s, v[i]), KVS_OK);
	}
	qsort(v, N, sizeof v[0], cmp_double);
	for (double q = 0.0; q <= 1.0; q += 0.01) {
		/* numpy's default: linear between ranks floor(h) and floor(h) + 1 */
		double h = q * (N - 1);
		size_t lo = (size_t)floor(h);
		double hi_v = lo + 1 < N ? v[lo + 1] : v[lo];
		double want = v[lo] + (h - (double)lo) * (hi_v - v[lo]);
		double got = kvs_sketch_quantile(&s, q);
		assert_true(fabs(got - want) <= 0.0011 * hi_v + 1e-12);
	}
	assert_true(kvs_sketch_quantile(&s, 1.0) == v[N - 1]);
	assert_true(kvs_sketch_quantile(&s, 0.0) == v[0]);
	/* the values span 12 e-folds, 6,000 buckets (ln g = 0.002); the
	 * doubling array overshoots it by less than twice at either end */
	assert_true(s.n >= 6000 && s.n < 3 * 6002 + 192);
	/* population standard deviation (np.std) within bucket precision */
	double mean = 0, ss = 0;
	for (int i = 0; i < N; i++)
		mean += v[i];
	mean /= N;
	for (int i = 0; i < N; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	double sd = sqrt(ss / N);
	assert_true(fabs(kvs_sketch_std(&s) - sd) <= 0.002 * sd);
	kvs_sketch_free(&s);

	/* by hand: 1..10, p99 = 9 + 0.91 (h = 8.91), p50 = 5.5, p25 = 3.25 as
	 * numpy.percentile and pandas give; std = sqrt(8.25) */
	kvs_sketch_init(&s);
	for (int i = 1; i <= 10; i++)
		assert_int_equal(kvs_sketch_add(&s, i), KVS_OK);
	assert_true(fabs(kvs_sketch_quantile(&s, 0.99) - 9.91) <= 0.0011 * 10);
	assert_true(fabs(kvs_sketch_quantile(&s, 0.50) - 5.5) <= 0.0011 * 6);
	assert_true(fabs(kvs_sketch_quantile(&s, 0.25) - 3.25) <= 0.0011 * 4);
	assert_true(fabs(kvs_sketch_std(&s) - sqrt(8.25)) <= 0.002 * sqrt(8.25));
	kvs_sketch_free(&s);

	/* a value counted n times is n single adds */
	kvs_sketch a, b;
	kvs_sketch_init(&a);
	kvs_sketch_init(&b);
	assert_int_equal(kvs_sketch_add_n(&a, 0.25, 4), KVS_OK);
	assert_int_equal(kvs_sketch_add_n(&a, 0.5, 0), KVS_OK);
	assert_int_equal(kvs_sketch_add(&a, 1.0), KVS_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(kvs_sketch_add(&b, 0.25), KVS_OK);
	assert_int_equal(kvs_sketch_add(&b, 1.0), KVS_OK);
	assert_int_equal(a.count, 5);
	assert_true(a.sum == b.sum && a.max == b.max && a.min == b.min);
	for (double q = 0; q <= 1.0; q += 0.05)
		assert_true(kvs_sketch_quantile(&a, q) == kvs_sketch_quantile(&b, q));
	/* add2: once into one sketch, n times into another, as add and add_n */
	kvs_sketch c1, c2, a0, b0;
	kvs_sketch_init(&c1);
	kvs_sketch_init(&c2);
	kvs_sketch_init(&a0);
	kvs_sketch_init(&b0);
	const double vals[] = { 0.02, 3.5, 0.0, -1.0, 1e-13, 700.0, 0.02 };
	for (size_t k = 0; k < KVS_ARRAY_LEN(vals); k++) {
		assert_int_equal(kvs_sketch_add2(&c1, &c2, vals[k], k), KVS_OK);
		assert_int_equal(kvs_sketch_add(&a0, vals[k]), KVS_OK);
		assert_int_equal(kvs_sketch_add_n(&b0, vals[k], k), KVS_OK);
	}
	assert_int_equal(c1.count, 7);
	assert_int_equal(c2.count, 21);
	assert_true(c1.zeros == 3 && c2.zeros == 2 + 3 + 4);
	assert_true(c1.sum == a0.sum && c2.sum == b0.sum && c2.min == b0.min &&
		    c2.max == b0.max);
	for (double q = 0; q <= 1.0; q += 0.05) {
		assert_true(kvs_sketch_quantile(&c1, q) == kvs_sketch_quantile(&a0, q));
		assert_true(kvs_sketch_quantile(&c2, q) == kvs_sketch_quantile(&b0, q));
	}
	kvs_sketch_free(&a0);
	kvs_sketch_free(&b0);
	/* merge: the values of three sketches (zeros only, small values,
	 * large ones) merged in two orders equal one sketch of them all;
	 * quantile walks cover the buckets holding values, whatever part of
	 * the (doubling) array is empty */
	for (int order = 0; order < 2; order++) {
		kvs_sketch part[3], all, m;
		for (int k = 0; k < 3; k++)
			kvs_sketch_init(&part[k]);
		kvs_sketch_init(&all);
		kvs_sketch_init(&m);
		for (int k = 0; k < 300; k++) {
			double val = k % 3 == 0 ? 0.0 : k % 3 == 1 ? 1e-4 * (1 + k) : 50.0 + k;
			assert_int_equal(kvs_sketch_add(&part[k % 3], val), KVS_OK);
			assert_int_equal(kvs_sketch_add(&all, val), KVS_OK);
		}
		for (int k = 0; k < 3; k++)
			assert_int_equal(kvs_sketch_merge(&m, &part[order ? 2 - k : k]), KVS_OK);
		assert_true(m.count == all.count && m.zeros == all.zeros && m.min == all.min &&
			    m.max == all.max);
		for (double q = 0; q <= 1.0; q += 0.01)
			assert_true(kvs_sketch_quantile(&m, q) == kvs_sketch_quantile(&all, q));
		assert_close(kvs_sketch_std(&m), kvs_sketch_std(&all), 1e-12);
		for (int k = 0; k < 3; k++)
			kvs_sketch_free(&part[k]);
		kvs_sketch_free(&all);
		kvs_sketch_free(&m);
	}
	kvs_sketch_free(&c1);
	kvs_sketch_free(&c2);
	kvs_sketch_free(&a);
	kvs_sketch_free(&b);

	/* values rising, then falling, across 9 decades each way (10,400
	 * buckets a side): the array is replaced a logarithmic number of
	 * times (by 64 buckets at a time it would be about 320 times), and
	 * the quantiles match the same values added in the other order */
	kvs_sketch_init(&a);
	kvs_sketch_init(&b);
	int moves = 0;
	const uint64_t *was = NULL;
	for (int k = 0; k < 2; k++)
		for (int e = 0; e <= 900; e++) {
			double val = pow(10.0, (k == 0 ? e : -e) / 100.0);
			assert_int_equal(kvs_sketch_add(&a, val), KVS_OK);
			moves += a.counts != was;
			was = a.counts;
		}
	for (int k = 1; k >= 0; k--)
		for (int e = 900; e >= 0; e--)
			assert_int_equal(kvs_sketch_add(&b, pow(10.0, (k == 0 ? e : -e) / 100.0)),
					 KVS_OK);
	assert_true(moves <= 20);
	assert_true(a.n < 3 * 20800 + 192);
	assert_true(a.count == b.count && a.min == b.min && a.max == b.max);
	for (double q = 0; q <= 1.0; q += 0.01)
		assert_true(kvs_sketch_quantile(&a, q) == kvs_sketch_quantile(&b, q));
	assert_true(kvs_sketch_std(&a) == kvs_sketch_std(&b));
	kvs_sketch_free(&a);
	kvs_sketch_free(&b);
}

static void test_step_table_fit(void **state)
{
	(void)state;
	/* t = 0.004 + 3e-5 tokens + 2e-8 context + 1e-4 seqs, exactly */
	char text[8192];
	int off = snprintf(text, sizeof text, "num_tokens,context_tokens,num_seqs,step_time_s\n");
	for (int i = 0; i < 40; i++) {
		unsigned tok = 1 + (unsigned)(i * 37 % 500), ctx = (unsigned)(i * 7919 % 100000);
		unsigned seqs = 1 + (unsigned)(i * 11 % 64);
		double t = 0.004 + 3e-5 * tok + 2e-8 * ctx + 1e-4 * seqs;
		off += snprintf(text + off, sizeof text - (size_t)off, "%u,%u,%u,%.12g\n",
				tok, ctx, seqs, t);
	}
	const char *path = kvs_test_write_tmp("steps.csv", text);
	kvs_cost_config c;
	kvs_cost_config_defaults(&c);
	assert_int_equal(kvs_cost_fit_table(path, &c), KVS_OK);
	assert_int_equal(c.kind, KVS_COST_LINEAR);
	assert_close(c.linear_base_s, 0.004, 1e-6);
	assert_close(c.linear_per_token_s, 3e-5, 1e-6);
	assert_close(c.linear_per_context_s, 2e-8, 1e-6);
	assert_close(c.linear_per_seq_s, 1e-4, 1e-6);
	assert_true(c.fit_r2 > 0.999999);
	assert_int_equal(c.fit_rows, 40);
	remove(path);
	/* malformed: the message names file, line and column */
	path = kvs_test_write_tmp("bad.csv", "num_tokens,context_tokens,step_time_s\n1,2,0.01\n3,x,0.02\n");
	assert_int_equal(kvs_cost_fit_table(path, &c), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), ":3: column 2 (context_tokens)"));
	remove(path);
	path = kvs_test_write_tmp("bad2.csv", "tokens,time\n1,2\n");
	assert_int_equal(kvs_cost_fit_table(path, &c), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "missing column"));
	remove(path);
	/* the table read strictly: each failing case names line and column */
	char longv[128];
	snprintf(longv, sizeof longv, "0.002%0*dxyz", 70, 0);
	static const char *const rows3 = "1,100,0.011\n2,200,0.022\n30,50,0.035\n";
	static const struct { const char *head, *row, *want; } bad[] = {
		/* a column named twice: not "the last one wins" */
		{ "num_tokens,context_tokens,step_time_s,step_time_s", "1,100,0.01,9",
		  ":1: header: column 4 repeats 'step_time_s' (column 3)" },
		{ "num_tokens,num_tokens,context_tokens,step_time_s", "1,1,100,0.01",
		  ":1: header: column 2 repeats 'num_tokens' (column 1)" },
		/* a row shorter than the header, even when the column left out
		 * is not one the fit reads */
		{ "num_tokens,context_tokens,step_time_s", "1,100",
		  ":2: column 3 (step_time_s): missing (2 fields, the header has 3)" },
		{ "num_tokens,context_tokens,step_time_s,note", "1,100,0.01",
		  ":2: column 4: missing (3 fields, the header has 4)" },
		/* decimal numbers only */
		{ "num_tokens,context_tokens,step_time_s", "0x10,100,0.01",
		  ":2: column 1 (num_tokens): expected a non-negative number, got '0x10'" },
		{ "num_tokens,context_tokens,step_time_s", "1,inf,0.01",
		  ":2: column 2 (context_tokens): expected a non-negative number, got 'inf'" },
		{ "num_tokens,context_tokens,step_time_s", "1,100,nan",
		  ":2: column 3 (step_time_s): expected a non-negative number, got 'nan'" },
		{ "num_tokens,context_tokens,step_time_s", "1,100,",
		  ":2: column 3 (step_time_s): expected a non-negative number, got ''" },
		/* a long value is refused, not cut to a number */
		{ "num_tokens,context_tokens,step_time_s", NULL,
		  ":2: column 3 (step_time_s): value longer than 63 characters" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
		char row[160], t[512];
		if (bad[i].row)
			snprintf(row, sizeof row, "%s", bad[i].row);
		else
			snprintf(row, sizeof row, "1,100,%s", longv);
		snprintf(t, sizeof t, "%s\n%s\n%s", bad[i].head, row, rows3);
		path = kvs_test_write_tmp("strict.csv", t);
		if (kvs_cost_fit_table(path, &c) != KVS_ERR_PARSE ||
		    !strstr(kvs_last_error(), bad[i].want))
			fail_msg("case %zu: %s", i, kvs_last_error());
		assert_non_null(strstr(kvs_last_error(), "strict.csv:"));
		remove(path);
	}
	/* a UTF-8 byte order mark before the header is skipped */
	snprintf(text, sizeof text, "\xEF\xBB\xBFnum_tokens,context_tokens,step_time_s\n%s",
		 rows3);
	path = kvs_test_write_tmp("bom.csv", text);
	kvs_cost_config_defaults(&c);
	assert_int_equal(kvs_cost_fit_table(path, &c), KVS_OK);
	assert_int_equal(c.fit_rows, 3);
	remove(path);
}

/* A small measured profile of Llama-2-7B's shape, tp 1: layer times 0.1,
 * 0.15, 0.6, 2.2 ms at 1, 64, 512, 2048 tokens, embedding 10 us flat. */
static void synthetic_profile(kvs_cost_config *k)
{
	static const double tok[] = { 1, 64, 512, 2048 };
	static const double lay[] = { 0.1e-3, 0.15e-3, 0.6e-3, 2.2e-3 };
	kvs_cost_config_defaults(k);
	k->profile_points = 4;
	k->profile_tp = 1;
	k->profile_n_embd = 4096;
	k->profile_n_head = 32;
	k->profile_n_kv_head = 32;
	k->profile_n_expanded = 11008;
	for (int i = 0; i < 4; i++) {
		k->profile_tokens[i] = tok[i];
		k->profile_layer_s[i] = lay[i];
		k->profile_emb_s[i] = 10e-6;
	}
	k->step_overhead_per_seq_s = 20e-6;
	k->step_overhead_per_token_s = 1e-6;
}

/* gpt-oss-120b on one H100 at max_model_len 4,096: 18 full and 18
 * windowed layers (128 tokens). */
static void gptoss_deploy(kvs_deploy *d)
{
	kvs_test_deploy(d, "gpt-oss-120b", "h100-80gb");
	d->max_model_len = 4096;
}

/* Chunked attention (Llama 4): a query at position q attends to the keys of
 * its aligned chunk up to itself, (q mod C) + 1 of them, not the last C.
 * gpt-oss-120b's 18 windowed layers of 128 tokens, made chunked, against
 * the same layers as a sliding window; every figure summed by hand. */
static void test_chunked_attention(void **state)
{
	(void)state;
	kvs_deploy sd, cd;
	gptoss_deploy(&sd);
	cd = sd;
	cd.model.window_chunked = true;
	kvs_sizing sz;
	assert_int_equal(kvs_size_compute(&sd, &sz), KVS_OK);
	kvs_cost_config cc;
	kvs_cost_config_defaults(&cc);
	kvs_cost sl, ch;
	assert_int_equal(kvs_cost_init(&sl, &cc, &sd, &sz), KVS_OK);
	assert_int_equal(kvs_cost_init(&ch, &cc, &cd, &sz), KVS_OK);
	assert_int_equal(ch.window, 128);
	assert_true(ch.window_chunked && !sl.window_chunked);

	/* prefill chunks: 300 from 0 is two whole chunks (1 + ... + 128
	 * each) and 44 queries of the third (1 + ... + 44), over 300 keys */
	double wc, wp;
	kvs_cost_chunk_window(&ch, 300, 0, &wc, &wp);
	assert_close(wp, 2 * 8256.0 + 990, 1e-12);
	assert_close(wc, 300, 1e-12);
	/* 100 from 500: positions 500..511 read 117..128 keys, 512..599
	 * read 1..88; the keys touched run from 384, the chunk's start */
	kvs_cost_chunk_window(&ch, 100, 500, &wc, &wp);
	assert_close(wp, (117.0 + 128) * 12 / 2 + 88.0 * 89 / 2, 1e-12);
	assert_close(wc, 116 + 100, 1e-12);
	/* within one chunk: 130..139 read 3..12 */
	kvs_cost_chunk_window(&ch, 10, 130, &wc, &wp);
	assert_close(wp, 75, 1e-12);
	assert_close(wc, 12, 1e-12);
	/* the sliding window of the same size reads more past it */
	kvs_cost_chunk_window(&sl, 100, 500, &wc, &wp);
	assert_close(wp, 128.0 * 100, 1e-12);
	assert_close(wc, 227, 1e-12);

	/* a decode's constant: 300 + 100 decodes at positions 300..398,
	 * reading 45..128 (84 steps) then 1..15 keys: 7,386 / 99 = 74.6 */
	assert_int_equal(kvs_cost_decode_window(&ch, 300, 400), 75);
	assert_int_equal(kvs_cost_decode_window(&sl, 300, 400), 128);
	assert_int_equal(kvs_cost_decode_window(&ch, 100, 110), 105);   /* 101..109 */
	assert_int_equal(kvs_cost_decode_window(&ch, 256, 258), 1);     /* 256: a chunk's first */
	assert_int_equal(kvs_cost_decode_window(&ch, 128, 129), 128);   /* no decode step */
	assert_int_equal(kvs_cost_decode_window(&sl, 60, 70), 70);

	/* a measured prefill attention grid, bilinear in the chunk's tokens c
	 * and the cached keys kv (two chunk sizes, two KV lengths):
	 * 1e-9 c kv + 1e-7 c.  On the chunked layers a prefill chunk is timed
	 * in pieces at the attention chunks' boundaries: 100 after 100 is 28
	 * after 100 (5.6 us) and 72 after none (7.2 us); 200 after 100 adds
	 * a whole chunk of 128 after none (12.8 us) and 44 (4.4 us); the full
	 * layers and a sliding window read the whole 100 before it */
	double pre_kv[] = { 0, 1000, 0, 1000 }, csz[] = { 1, 201 };
	double pre_s[] = { 1e-7, 1e-7 + 1e-6, 201e-7, 201e-7 + 201e-6 };
	uint32_t pre_off[] = { 0, 2, 4 };
	struct kvs_attn_table at = { .nchunk = 2, .chunk = csz, .pre_off = pre_off,
				     .pre_kv = pre_kv, .pre_s = pre_s };
	assert_close(ch.win_layers, 18, 1e-12);
	assert_close(ch.layers, 36, 1e-12);
	ch.cfg.attn = sl.cfg.attn = &at;
	assert_close(kvs_cost_prefill_attn(&ch, 100, 100), 18 * 20e-6 + 18 * (5.6e-6 + 7.2e-6), 1e-9);
	assert_close(kvs_cost_prefill_attn(&sl, 100, 100), 36 * 20e-6, 1e-9);
	assert_close(kvs_cost_prefill_attn(&ch, 200, 100),
		     18 * 40e-6 + 18 * (5.6e-6 + 12.8e-6 + 4.4e-6), 1e-9);
	/* within one attention chunk, after 500 keys: read at 500 mod 128 = 116 */
	assert_close(kvs_cost_prefill_attn(&ch, 10, 500),
		     18 * (5e-6 + 1e-6) + 18 * (1.16e-6 + 1e-6), 1e-9);
	ch.cfg.attn = sl.cfg.attn = NULL;

	/* through the engine, stepping and the fast path: a lone request of
	 * 300 + 100 tokens; its prefill as above, its 99 decode steps read
	 * 301..399 tokens on the full layers and 75 on the chunked ones */
	kvs_win_read pw = { 0, 300, 17502 };
	double ttft = kvs_cost_step(&ch, 300, 1, 300, 300.0 * 301 / 2, 0, 0, &pw, 0);
	double dec = 0, dec_sl = 0;
	for (int i = 1; i < 100; i++) {
		double ctx = 300 + i;
		dec += kvs_cost_step(&ch, 1, 1, ctx, ctx, 1, ctx, DEC_WIN(75), 0);
		dec_sl += kvs_cost_step(&sl, 1, 1, ctx, ctx, 1, ctx, DEC_WIN(128), 0);
	}
	assert_true(dec < dec_sl);
	for (int fast = 0; fast < 2; fast++) {
		kvs_sim_config c;
		kvs_sim_config_defaults(&c, &cd);
		c.fast_path = fast;
		c.validate = fast;
		kvs_request one = mkreq(0, 0.0, 300, 100);
		kvs_request_set *set = set_of(&one, 1);
		kvs_sim_result *r = run_set(&c, set, NULL);
		const kvs_sim_stats *st = kvs_sim_result_stats(r);
		assert_int_equal(st->completed, 1);
		assert_close(st->ttft_s.max, ttft, 1e-9);
		assert_close(st->e2e_s.max - st->ttft_s.max, dec, 1e-9);
		kvs_sim_result_destroy(r);
		kvs_request_set_destroy(set);
	}
}

/* A model with full and windowed layers is held as vLLM's hybrid
 * allocator holds it.  gpt-oss-120b: 18 full + 18 windowed layers (128
 * tokens), 2 KiB a layer a token: two groups of 18, blocks of 16 tokens x
 * 18 layers = 589,824 B.  A request of 1,024 prompt tokens and one output
 * token stores 1,024 tokens: 64 blocks of the full group, and the window's
 * ceil(127 / 16) + 1 = 9 of the windowed one: 73.  A pool of 300 blocks
 * runs 4 at once (292); holding every layer in full (blocks of 1,179,648 B,
 * 150 of them, 64 a request) it would run 2. */
static void test_hybrid_windows(void **state)
{
	(void)state;
	kvs_deploy d;
	gptoss_deploy(&d);
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	c.kv_budget_bytes = 300ull * 589824;
	c.watermark = 0;
	c.cost.kind = KVS_COST_LINEAR;
	c.cost.linear_base_s = 0.01;
	c.max_num_batched_tokens = 8192;
	kvs_request q[8];
	for (int i = 0; i < 8; i++)
		q[i] = mkreq((uint64_t)i, 0.0, 1024, 1);
	kvs_request_set *set = set_of(q, 8);
	for (int fast = 0; fast < 2; fast++) {
		c.fast_path = fast;
		kvs_sim_result *res = run_set(&c, set, NULL);
		const kvs_sim_stats *st = kvs_sim_result_stats(res);
		assert_int_equal(st->kv_bytes_per_token, 18 * 2048);
		assert_int_equal(st->num_blocks, 300);
		assert_int_equal(st->window_tokens, 128);
		assert_int_equal(st->window_groups, 1);
		assert_int_equal(st->full_groups, 1);
		assert_int_equal(st->group_layers, 18);
		assert_int_equal(st->completed, 8);
		assert_int_equal(st->concurrency_max, 4);
		/* at the peak, 4 x 73 of the 300 blocks hold token states (the
		 * window's blocks whole, the full group's 1,024 tokens) */
		assert_close(st->memory_peak_pct.token_states, 100.0 * 292 / 300, 1e-9);
		kvs_sim_result_destroy(res);
	}
	kvs_request_set_destroy(set);

	/* a lone request of 2,000 + 2 tokens on the roofline: its one decode
	 * step reads 2,001 tokens on the 18 full layers and the 128-token
	 * window on the 18 windowed ones, as kvs_cost_step charges it with
	 * that windowed context, and less than the whole context would */
	{
		kvs_sim_config rc = c;
		rc.cost.kind = KVS_COST_ROOFLINE;
		rc.kv_budget_bytes = 0;
		kvs_request one = mkreq(0, 0.0, 2000, 2);
		kvs_request_set *s1 = set_of(&one, 1);
		kvs_sim_result *r = run_set(&rc, s1, NULL);
		const kvs_sim_stats *st1 = kvs_sim_result_stats(r);
		double decode = st1->e2e_s.max - st1->ttft_s.max;
		kvs_sizing sz;
		assert_int_equal(kvs_size_compute(&d, &sz), KVS_OK);
		kvs_cost cost;
		assert_int_equal(kvs_cost_init(&cost, &rc.cost, &d, &sz), KVS_OK);
		double want = kvs_cost_step(&cost, 1, 1, 2001, 2001, 1, 2001, DEC_WIN(128), 0);
		double whole = kvs_cost_step(&cost, 1, 1, 2001, 2001, 1, 2001, DEC_WIN(2001), 0);
		assert_close(decode, want, 1e-9);
		assert_true(want < whole);
		/* its prefill: 2,000 x 2,001 / 2 pairs on the full layers; on the
		 * windowed ones 1 + ... + 128 and then 128 a query, 8,256 +
		 * 128 x 1,872 = 247,872, over all 2,000 keys */
		double wc, wp;
		kvs_cost_chunk_window(&cost, 2000, 0, &wc, &wp);
		assert_close(wc, 2000, 1e-12);
		assert_close(wp, 247872, 1e-12);
		kvs_win_read pw = { 0, 2000, 247872 };
		assert_close(st1->ttft_s.max,
			     kvs_cost_step(&cost, 2000, 1, 2000, 2000.0 * 2001 / 2, 0, 0, &pw, 0),
			     1e-9);
		kvs_sim_result_destroy(r);
		kvs_request_set_destroy(s1);
	}

	/* varied lengths, parallel samples, preemptions, swap and prefix
	 * caching: the fast path gives what stepping one token at a time
	 * gives, the validator running after every operation */
	size_t n = (size_t)(300 * test_scale());
	kvs_request *v = calloc(n, sizeof *v);
	assert_non_null(v);
	uint64_t x = 12345;
	double t = 0;
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		/* arrivals off the 10 ms step grid: a tie between an arrival
		 * and a step's end may fall either way in floating point */
		t += (double)((x >> 45) % 1000) / 25000.0 + 1e-7;
		v[i] = mkreq(i, t, 16 + (uint32_t)(x >> 33) % 2000,
			     1 + (uint32_t)(x >> 17) % 300);
		v[i].num_samples = i % 7 == 0 ? 3 : 1;
	}
	set = set_of(v, n);
	free(v);
	c.kv_budget_bytes = 400ull * 589824;
	for (int mode = 0; mode < 3; mode++) {
		c.enable_prefix_caching = mode == 1;
		c.preemption_mode = mode == 2 ? KVS_PREEMPT_SWAP : KVS_PREEMPT_RECOMPUTE;
		kvs_sim_stats one[2];
		for (int fast = 0; fast < 2; fast++) {
			c.fast_path = fast;
			c.validate = fast;   /* engine and allocator validators every step */
			kvs_sim_result *r = run_set(&c, set, NULL);
			one[fast] = *kvs_sim_result_stats(r);
			kvs_sim_result_destroy(r);
		}
		assert_int_equal(one[0].completed, one[1].completed);
		assert_int_equal(one[0].preemptions, one[1].preemptions);
		assert_int_equal(one[0].concurrency_max, one[1].concurrency_max);
		assert_close(one[0].concurrency_mean, one[1].concurrency_mean, 1e-9);
		assert_close(one[0].memory_pct.token_states, one[1].memory_pct.token_states, 1e-9);
		assert_close(one[0].e2e_s.mean, one[1].e2e_s.mean, 1e-9);
		assert_true(one[0].preemptions > 0 || mode == 1);
	}
	/* the roofline, whose step time reads the windowed layers over their
	 * windows (the decode queue's windowed-context sum): the fast path
	 * gives what stepping gives, the aggregate checked every step */
	for (int mode = 0; mode < 2; mode++) {
		kvs_sim_config rc = c;
		rc.cost.kind = KVS_COST_ROOFLINE;
		rc.preemption_mode = mode ? KVS_PREEMPT_SWAP : KVS_PREEMPT_RECOMPUTE;
		rc.enable_prefix_caching = false;
		kvs_sim_stats one[2];
		for (int fast = 0; fast < 2; fast++) {
			rc.fast_path = fast;
			rc.validate = fast;
			kvs_sim_result *r = run_set(&rc, set, NULL);
			one[fast] = *kvs_sim_result_stats(r);
			kvs_sim_result_destroy(r);
		}
		assert_int_equal(one[0].completed, one[1].completed);
		assert_int_equal(one[0].preemptions, one[1].preemptions);
		assert_true(one[0].preemptions > 0);
		assert_true(one[0].forked_sequences > 0);
		assert_true(mode == 0 || one[0].swapped_bytes > 0);
		assert_close(one[0].e2e_s.mean, one[1].e2e_s.mean, 1e-9);
		assert_close(one[0].tpot_s.mean, one[1].tpot_s.mean, 1e-9);
	}

	/* the bytes per token given: every layer in full, 2 at once */
	c.validate = false;
	kvs_request_set_destroy(set);
	set = set_of(q, 8);
	c.enable_prefix_caching = false;
	c.preemption_mode = KVS_PREEMPT_RECOMPUTE;
	c.kv_bytes_per_token = 36 * 2048;
	c.kv_budget_bytes = 150ull * 1179648;
	kvs_sim_result *res = run_set(&c, set, NULL);
	const kvs_sim_stats *st = kvs_sim_result_stats(res);
	assert_int_equal(st->window_groups, 0);
	assert_int_equal(st->concurrency_max, 2);
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

/* The profile model by hand: the profile's layers and embedding at T
 * (interpolated), the roofline's attention or KV traffic, the overheads. */
static void test_profile_step_time(void **state)
{
	(void)state;
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-2-7b", "h100-80gb");
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	synthetic_profile(&c.cost);
	/* 32 tokens over 32 sequences, 16,000 tokens of context, decode */
	kvs_step_shape sh = { 32, 32, 16000, 16000, 0, 0 };
	double t;
	assert_int_equal(kvs_sim_step_time(&c, &sh, &t), KVS_OK);
	double layer = 0.1e-3 + (0.15e-3 - 0.1e-3) * (32 - 1) / (64 - 1);
	double attn = 4.0 * 32 * 128 * 32 * 16000 / (989e12 * 0.5);
	double kv = 524288.0 * (16000 + 32) / (3350e9 * 0.8);
	double want = 32 * layer + 10e-6 + (attn > kv ? attn : kv) + 0.002 + 32 * 20e-6 + 32 * 1e-6;
	assert_close(t, want, 1e-12);
	/* beyond the last point: the last segment's slope */
	kvs_step_shape big = { 4096, 1, 4096, 4096.0 * 4097 / 2, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &big, &t), KVS_OK);
	layer = 2.2e-3 + (2.2e-3 - 0.6e-3) / (2048 - 512) * (4096 - 2048);
	attn = 4.0 * 32 * 128 * 32 * (4096.0 * 4097 / 2) / (989e12 * 0.5);
	kv = 524288.0 * (4096 + 4096) / (3350e9 * 0.8);
	want = 32 * layer + 10e-6 + (attn > kv ? attn : kv) + 0.002 + 20e-6 + 4096 * 1e-6;
	assert_close(t, want, 1e-12);
	/* a profile of another shape is refused */
	c.cost.profile_n_kv_head = 8;
	assert_int_equal(kvs_sim_step_time(&c, &sh, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "8 kv heads"));
	c.cost.profile_n_kv_head = 32;
	c.cost.profile_tp = 2;
	assert_int_equal(kvs_sim_step_time(&c, &sh, &t), KVS_ERR_INVALID);
}

/* Reading the Vidur format: tp filter, medians, repeated num_tokens
 * averaged, errors with file, line and column. */
static void test_profile_load(void **state)
{
	(void)state;
	char dir[] = "/tmp/kvsim-profile-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/mlp.csv", dir);
	static const char *const ops[] = { "emb", "input_layernorm", "attn_pre_proj",
		"attn_rope", "attn_post_proj", "post_attention_layernorm", "mlp_up_proj",
		"mlp_act", "mlp_down_proj", "add" };
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 10; i++)
		fprintf(f, "time_stats.%s.median,time_stats.%s.mean,", ops[i], ops[i]);
	fprintf(f, "n_head,n_kv_head,n_embd,n_expanded_embd,num_tokens,num_tensor_parallel_workers\n");
	/* rows: (tokens, tp, op median) - every op takes the same time */
	static const double rows[][3] = { { 8, 1, 0.01 }, { 8, 2, 0.5 }, { 4, 1, 0.02 },
					  { 8, 1, 0.03 }, { 16, 1, 0.04 } };
	for (size_t r = 0; r < 5; r++) {
		for (int i = 0; i < 10; i++)
			fprintf(f, "%g,9,", rows[r][2]);
		fprintf(f, "32,32,4096,11008,%g,%g\n", rows[r][0], rows[r][1]);
	}
	fclose(f);
	kvs_cost_config k;
	kvs_cost_config_defaults(&k);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_OK);
	assert_int_equal(k.profile_points, 3);        /* 4, 8 (twice, averaged), 16 */
	assert_true(k.profile_tokens[0] == 4 && k.profile_tokens[1] == 8 &&
		    k.profile_tokens[2] == 16);
	assert_close(k.profile_layer_s[0], 9 * 0.02e-3, 1e-12);   /* nine layer ops */
	assert_close(k.profile_layer_s[1], 9 * 0.02e-3, 1e-12);   /* (0.01 + 0.03) / 2 */
	assert_close(k.profile_emb_s[2], 0.04e-3, 1e-12);
	assert_int_equal(k.profile_n_embd, 4096);
	assert_int_equal(k.allreduce_points, 0);
	assert_non_null(strstr(k.profile_desc, "all-reduce from the roofline"));
	assert_int_equal(kvs_cost_load_profile(dir, 4, &k), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "the profile has tp 1, 2"));
	f = fopen(path, "a");
	fprintf(f, "x");
	for (int i = 1; i < 26; i++)
		fprintf(f, ",1");
	fprintf(f, "\n");
	fclose(f);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "mlp.csv:7: column 1"));
	assert_int_equal(k.profile_points, 0);
	remove(path);
	rmdir(dir);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_ERR_IO);
}

/* A profile directory with mlp.csv (every layer op 0.01 ms, embedding
 * 0.01 ms, at 1 and 4096 tokens) and attention.csv (decode: batch 1 at KV
 * 100/200 = 0.01/0.02 ms; batch 4 at KV 100/200/300 = 0.03/0.07/0.10 ms;
 * prefill: chunk 64 at KV 0/100 = 0.05/0.07 ms, chunk 128 at KV 0 = 0.12
 * ms; reshapes 0.001 ms each, one of them empty), Llama-2-7B's shape, tp 1. */
static void write_attention_profile(const char *dir)
{
	char path[256];
	snprintf(path, sizeof path, "%s/mlp.csv", dir);
	static const char *const ops[] = { "emb", "input_layernorm", "attn_pre_proj",
		"attn_rope", "attn_post_proj", "post_attention_layernorm", "mlp_up_proj",
		"mlp_act", "mlp_down_proj", "add" };
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 10; i++)
		fprintf(f, "time_stats.%s.median,", ops[i]);
	fprintf(f, "n_head,n_kv_head,n_embd,n_expanded_embd,num_tokens,num_tensor_parallel_workers\n");
	for (int r = 0; r < 2; r++) {
		for (int i = 0; i < 10; i++)
			fprintf(f, "0.01,");
		fprintf(f, "32,32,4096,11008,%d,1\n", r ? 4096 : 1);
	}
	fclose(f);
	snprintf(path, sizeof path, "%s/attention.csv", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "time_stats.attn_input_reshape.median,time_stats.attn_decode.median,"
		   "time_stats.attn_output_reshape.median,time_stats.attn_prefill.median,"
		   "n_embd,n_q_head,n_kv_head,num_tensor_parallel_workers,batch_size,"
		   "prefill_chunk_size,kv_cache_size,is_prefill\n");
	static const struct { int b, kv; double t; } dec[] = {
		{ 1, 100, 0.01 }, { 1, 200, 0.02 }, { 4, 100, 0.03 }, { 4, 300, 0.10 }, { 4, 200, 0.07 },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(dec); i++)
		fprintf(f, "0.001,%g,0.001,,4096,32,32,1,%d,0,%d,False\n", dec[i].t, dec[i].b, dec[i].kv);
	/* a row of another tp, ignored */
	fprintf(f, "0.001,9,0.001,,4096,32,32,2,1,0,100,False\n");
	static const struct { int c, kv; double t; } pre[] = {
		{ 64, 0, 0.05 }, { 64, 100, 0.07 }, { 128, 0, 0.12 },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(pre); i++)
		fprintf(f, ",,0.002,%g,4096,32,32,1,1,%d,%d,True\n", pre[i].t, pre[i].c, pre[i].kv);
	fclose(f);
}

/* Measured attention by hand: per layer, bilinear in (batch, KV) for
 * decode and in (chunk, KV) for prefill chunks, times 32 layers, beside the
 * profile's linear layers (9 x 0.01 ms per layer + 0.01 ms embedding) and
 * the 2 ms step overhead; the KV-read factor scales decode attention. */
static void test_attention_profile(void **state)
{
	(void)state;
	char dir[] = "/tmp/kvsim-attn-XXXXXX";
	assert_non_null(mkdtemp(dir));
	write_attention_profile(dir);
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-2-7b", "h100-80gb");
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &c.cost), KVS_OK);
	assert_non_null(c.cost.attn);
	assert_non_null(strstr(c.cost.profile_desc, "attention from"));
	assert_non_null(strstr(c.cost.profile_desc, "2 batch sizes x 3 KV lengths, 2 chunk sizes"));
	const double base = 32 * 9 * 0.01e-3 + 0.01e-3 + 0.002;
	double t;
	/* one request decoding at KV 150: 0.017 ms per layer */
	kvs_step_shape one = { 1, 1, 150, 150, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &one, &t), KVS_OK);
	assert_close(t, base + 32 * 0.017e-3, 1e-12);
	/* two at KV 150: a third of the way from batch 1 (0.017) to batch 4
	 * (0.052) */
	kvs_step_shape two = { 2, 2, 300, 300, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &two, &t), KVS_OK);
	double a2 = 0.017e-3 + (0.052e-3 - 0.017e-3) / 3;
	assert_close(t, base + 32 * a2, 1e-12);
	/* batch 1 at KV 300 resampled on the union of KV lengths: its own line
	 * continued (0.032 ms) */
	kvs_step_shape far = { 1, 1, 300, 300, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &far, &t), KVS_OK);
	assert_close(t, base + 32 * 0.032e-3, 1e-12);
	/* a prefill chunk of 64 on an empty cache: 0.052 ms per layer */
	kvs_step_shape pre = { 64, 1, 64, 64.0 * 65 / 2, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &pre, &t), KVS_OK);
	assert_close(t, base + 32 * 0.052e-3, 1e-12);
	/* mixed: two decodes at KV 150 and a chunk of 64 after 100 cached
	 * tokens (0.072 ms); chunk 96 between 64 and 128 at KV 0: 0.087 */
	kvs_step_shape mix = { 66, 3, 300 + 164, 300 + 64.0 * 100 + 64.0 * 65 / 2, 2, 300 };
	assert_int_equal(kvs_sim_step_time(&c, &mix, &t), KVS_OK);
	assert_close(t, base + 32 * (a2 + 0.072e-3), 1e-12);
	kvs_step_shape mid = { 96, 1, 96, 96.0 * 97 / 2, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &mid, &t), KVS_OK);
	assert_close(t, base + 32 * (0.052e-3 + (0.122e-3 - 0.052e-3) / 2), 1e-12);
	/* the KV-read factor scales decode attention only */
	c.cost.kv_read_factor = 2;
	assert_int_equal(kvs_sim_step_time(&c, &one, &t), KVS_OK);
	assert_close(t, base + 2 * 32 * 0.017e-3, 1e-12);
	assert_int_equal(kvs_sim_step_time(&c, &pre, &t), KVS_OK);
	assert_close(t, base + 32 * 0.052e-3, 1e-12);
	c.cost.kv_read_factor = 1;
	/* a shape the step cannot hold is refused */
	kvs_step_shape bad = { 1, 1, 10, 10, 2, 10 };
	assert_int_equal(kvs_sim_step_time(&c, &bad, &t), KVS_ERR_INVALID);
	/* a model of another shape is refused, naming attention.csv */
	kvs_model m70;
	assert_int_equal(kvs_model_load("llama-2-13b", &m70), KVS_OK);
	kvs_deploy d2;
	kvs_deploy_defaults(&d2, &m70, &d.gpu);
	kvs_sim_config c2;
	kvs_sim_config_defaults(&c2, &d2);
	c2.cost = c.cost;
	c2.cost.profile_n_embd = m70.hidden_size;   /* mlp.csv passes, attention not */
	c2.cost.profile_n_head = m70.num_heads;
	c2.cost.profile_n_kv_head = m70.num_kv_heads;
	assert_int_equal(kvs_sim_step_time(&c2, &one, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "attention.csv is for tp 1"));

	/* the fast path times decode spans on one grid segment at a time: the
	 * same results as one-token stepping, every policy */
	kvs_cost_config k = c.cost;
	fs_deploy = &d;
	fs_cost = &k;
	for (size_t p = 0; p < kvs_policy_count(); p++)
		compare_fast_slow((kvs_policy)p, false, 1.0);
	compare_fast_slow(KVS_POLICY_PAGED, true, 1.5);
	fs_deploy = NULL;
	fs_cost = NULL;

	/* errors name the file, line and column */
	char path[256];
	snprintf(path, sizeof path, "%s/attention.csv", dir);
	FILE *f = fopen(path, "a");
	fprintf(f, "0.001,0.01,0.001,,4096,32,32,1,1,0,100,Maybe\n");
	fclose(f);
	kvs_cost_config e;
	kvs_cost_config_defaults(&e);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &e), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "attention.csv:11: column 12 ('is_prefill')"));
	f = fopen(path, "w");
	fprintf(f, "batch_size,kv_cache_size\n1,2\n");
	fclose(f);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &e), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "missing column 'prefill_chunk_size'"));
	remove(path);
	/* without attention.csv: attention from the roofline */
	assert_int_equal(kvs_cost_load_profile(dir, 1, &e), KVS_OK);
	assert_null(e.attn);
	assert_non_null(strstr(e.profile_desc, "attention, KV read and write from the roofline"));
	snprintf(path, sizeof path, "%s/mlp.csv", dir);
	remove(path);
	rmdir(dir);
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* mlp.csv of a row per (tokens, tp), with the model-shape cells given:
 * n_head (column 11), n_kv_head (12), n_embd (13), n_expanded_embd (14),
 * num_tokens (15), num_tensor_parallel_workers (16). */
static void put_mlp(const char *path, const char *const rows[][6], size_t n)
{
	char text[4096];
	int off = 0;
	static const char *const ops[] = { "emb", "input_layernorm", "attn_pre_proj",
		"attn_rope", "attn_post_proj", "post_attention_layernorm", "mlp_up_proj",
		"mlp_act", "mlp_down_proj", "add" };
	for (int i = 0; i < 10; i++)
		off += snprintf(text + off, sizeof text - (size_t)off, "time_stats.%s.median,", ops[i]);
	off += snprintf(text + off, sizeof text - (size_t)off, "n_head,n_kv_head,n_embd,"
			"n_expanded_embd,num_tokens,num_tensor_parallel_workers\n");
	for (size_t r = 0; r < n; r++) {
		for (int i = 0; i < 10; i++)
			off += snprintf(text + off, sizeof text - (size_t)off, "0.01,");
		off += snprintf(text + off, sizeof text - (size_t)off, "%s,%s,%s,%s,%s,%s\n",
				rows[r][0], rows[r][1], rows[r][2], rows[r][3], rows[r][4],
				rows[r][5]);
	}
	assert_true((size_t)off < sizeof text);
	put_file(path, text);
}

/* The integer columns of the three profile files are integers: a fraction,
 * a sign, an exponent, hex, text or a value past the column's range is an
 * error naming the file, line and column, never a conversion; the model
 * shape is one per file. */
static void test_profile_integer_cells(void **state)
{
	(void)state;
	char root[] = "/tmp/kvsim-profint-XXXXXX";
	assert_non_null(mkdtemp(root));
	char dir[256], path[320], ar[320], net[300];
	snprintf(dir, sizeof dir, "%s/compute", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(dir, sizeof dir, "%s/compute/h100", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/mlp.csv", dir);
	kvs_cost_config k;
	kvs_cost_config_defaults(&k);
	static const char *const good[6] = { "32", "8", "4096", "14336", "1", "1" };
	/* the second row's cell `col` (0: n_head ... 5: tp) set to bad */
	static const struct { int col; const char *bad; const char *name; } cases[] = {
		{ 2, "4294971392", "n_embd" }, { 2, "4096.9", "n_embd" }, { 2, "abc", "n_embd" },
		{ 2, "-4096", "n_embd" }, { 2, "0x1000", "n_embd" }, { 2, "4e3", "n_embd" },
		{ 2, "", "n_embd" }, { 2, "0", "n_embd" }, { 2, "+4096", "n_embd" },
		{ 0, "32.5", "n_head" }, { 1, "-8", "n_kv_head" },
		{ 3, "1.4336e4", "n_expanded_embd" }, { 4, "8.5", "num_tokens" },
		{ 4, "0", "num_tokens" }, { 4, "99999999999999999999999", "num_tokens" },
		{ 5, "1.0", "num_tensor_parallel_workers" }, { 5, "inf", "num_tensor_parallel_workers" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(cases); i++) {
		const char *rows[2][6];
		for (int c = 0; c < 6; c++)
			rows[0][c] = rows[1][c] = good[c];
		rows[1][4] = "4096";
		rows[1][cases[i].col] = cases[i].bad;
		put_mlp(path, rows, 2);
		char want[160];
		snprintf(want, sizeof want, "mlp.csv:3: column %d ('%s'): expected a positive "
			 "integer", 11 + cases[i].col, cases[i].name);
		if (kvs_cost_load_profile(dir, 1, &k) != KVS_ERR_PARSE ||
		    !strstr(kvs_last_error(), want))
			fail_msg("%s = '%s': %s", cases[i].name, cases[i].bad, kvs_last_error());
		assert_int_equal(k.profile_points, 0);
	}
	/* one model per file */
	const char *mixed[2][6] = { { "32", "8", "4096", "14336", "1", "1" },
				    { "32", "8", "5120", "14336", "4096", "1" } };
	put_mlp(path, mixed, 2);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "mlp.csv:3: column 13 ('n_embd'): 5120, "
			       "but an earlier row has 4096"));
	/* rows of another tp are read for their tp only */
	const char *ok[3][6] = { { "32", "8", "4096", "14336", "1", "1" },
				 { "32", "8", "4096", "14336", "4096", "1" },
				 { "x", "8", "4096", "14336", "1", "2" } };
	put_mlp(path, ok, 3);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_OK);
	assert_int_equal(k.profile_points, 2);
	assert_int_equal(k.profile_n_embd, 4096);
	assert_int_equal(k.profile_n_kv_head, 8);
	assert_int_equal(k.profile_n_expanded, 14336);

	/* all_reduce.csv beside the compute tree (tp 2): num_workers and size */
	const char *tp2[2][6] = { { "32", "8", "4096", "14336", "1", "2" },
				  { "32", "8", "4096", "14336", "4096", "2" } };
	put_mlp(path, tp2, 2);
	snprintf(net, sizeof net, "%s/network", root);
	assert_int_equal(mkdir(net, 0700), 0);
	snprintf(net, sizeof net, "%s/network/h100_pairwise_nvlink", root);
	assert_int_equal(mkdir(net, 0700), 0);
	snprintf(ar, sizeof ar, "%s/all_reduce.csv", net);
	put_file(ar, ",time_stats.all_reduce.median,num_workers,size,collective\n"
		     "0,0.01,2,2048,all_reduce\n1,0.02,4,4096,all_reduce\n");
	assert_int_equal(kvs_cost_load_profile(dir, 2, &k), KVS_OK);
	assert_int_equal(k.allreduce_points, 1);
	static const char *const ar_bad[][3] = {
		{ "2,2048.5", "4", "size" }, { "2,-1", "4", "size" }, { "2,0x800", "4", "size" },
		{ "2.0,2048", "3", "num_workers" }, { "two,2048", "3", "num_workers" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(ar_bad); i++) {
		char text[256], want[96];
		snprintf(text, sizeof text, ",time_stats.all_reduce.median,num_workers,size\n"
			 "0,0.01,%s\n", ar_bad[i][0]);
		put_file(ar, text);
		snprintf(want, sizeof want, "all_reduce.csv:2: column %s ('%s'): expected",
			 ar_bad[i][1], ar_bad[i][2]);
		if (kvs_cost_load_profile(dir, 2, &k) != KVS_ERR_PARSE ||
		    !strstr(kvs_last_error(), want))
			fail_msg("all_reduce %s: %s", ar_bad[i][0], kvs_last_error());
	}
	remove(ar);
	rmdir(net);
	snprintf(net, sizeof net, "%s/network", root);
	rmdir(net);

	/* attention.csv: batch, KV and chunk sizes, tp and the model's shape */
	put_mlp(path, ok, 2);
	snprintf(ar, sizeof ar, "%s/attention.csv", dir);
	static const char *const at_head =
		"time_stats.attn_decode.median,time_stats.attn_prefill.median,n_embd,n_q_head,"
		"n_kv_head,num_tensor_parallel_workers,batch_size,prefill_chunk_size,"
		"kv_cache_size,is_prefill\n";
	static const char *const at_bad[][3] = {
		{ "0.01,,4096,32,8,1,2.5,0,100,False", "7", "batch_size" },
		{ "0.01,,4096,32,8,1,0,0,100,False", "7", "batch_size" },
		{ "0.01,,4096,32,8,1,1,0,-100,False", "9", "kv_cache_size" },
		{ "0.01,,4096,32,8,1,1,0,1e2,False", "9", "kv_cache_size" },
		{ ",0.05,4096,32,8,1,1,64.5,0,True", "8", "prefill_chunk_size" },
		{ ",0.05,4096,32,8,1,1,0,0,True", "8", "prefill_chunk_size" },
		{ "0.01,,4096.5,32,8,1,1,0,100,False", "3", "n_embd" },
		{ "0.01,,4096,32x,8,1,1,0,100,False", "4", "n_q_head" },
		{ "0.01,,4096,32,4294967296,1,1,0,100,False", "5", "n_kv_head" },
		{ "0.01,,4096,32,8,1.5,1,0,100,False", "6", "num_tensor_parallel_workers" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(at_bad); i++) {
		char text[512], want[96];
		snprintf(text, sizeof text, "%s0.01,,4096,32,8,1,1,0,100,False\n%s\n", at_head,
			 at_bad[i][0]);
		put_file(ar, text);
		snprintf(want, sizeof want, "attention.csv:3: column %s ('%s'): expected",
			 at_bad[i][1], at_bad[i][2]);
		if (kvs_cost_load_profile(dir, 1, &k) != KVS_ERR_PARSE ||
		    !strstr(kvs_last_error(), want))
			fail_msg("attention row '%s': %s", at_bad[i][0], kvs_last_error());
	}
	char text[512];
	snprintf(text, sizeof text, "%s0.01,,4096,32,8,1,1,0,100,False\n"
		 "0.01,,4096,40,8,1,2,0,100,False\n", at_head);
	put_file(ar, text);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "attention.csv:3: column 4 ('n_q_head'): 40, "
			       "but an earlier row has 32"));
	remove(ar);
	remove(path);
	rmdir(dir);
	snprintf(dir, sizeof dir, "%s/compute", root);
	rmdir(dir);
	assert_int_equal(rmdir(root), 0);
}

/* The time cells of the three profile files are decimal numbers >= 0
 * (common/num.h's rule): hex, inf, nan, a sign, an empty cell or text after
 * the number is an error naming the file, line and column, never a value;
 * the forms the published files hold (0.0123, 7, 1.7e-18) are read. */
static void test_profile_time_cells(void **state)
{
	(void)state;
	char root[] = "/tmp/kvsim-proftime-XXXXXX";
	assert_non_null(mkdtemp(root));
	char dir[256], path[320], ar[320], net[300];
	snprintf(dir, sizeof dir, "%s/compute", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(dir, sizeof dir, "%s/compute/h100", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/mlp.csv", dir);
	kvs_cost_config k;
	kvs_cost_config_defaults(&k);
	static const char *const head =
		"time_stats.emb.median,time_stats.input_layernorm.median,"
		"time_stats.attn_pre_proj.median,time_stats.attn_rope.median,"
		"time_stats.attn_post_proj.median,time_stats.post_attention_layernorm.median,"
		"time_stats.mlp_up_proj.median,time_stats.mlp_act.median,"
		"time_stats.mlp_down_proj.median,time_stats.add.median,n_head,n_kv_head,n_embd,"
		"n_expanded_embd,num_tokens,num_tensor_parallel_workers,time_stats.add.std\n";
	static const char *const bad[] = {
		"0x1p-7", "0X10", "inf", "+inf", "-inf", "INF", "infinity", "nan", "NaN",
		"-nan", "-0.01", "", " 0.01", "0.01 ", "0.01ms", "0.01.5", "1e", "1e400",
		"1e-400", ".", "e5", "--1", "0,01", "3600000.5", "1.7e308",
	};
	/* the second row's attn_rope median (column 4), then its embedding
	 * (column 1) */
	for (int col = 0; col < 2; col++) {
		for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
			char text[2048], want[160], cell[64];
			snprintf(cell, sizeof cell, "%s", bad[i]);
			const char *rope = col == 0 ? cell : "0.01", *emb = col == 1 ? cell : "0.01";
			snprintf(text, sizeof text, "%s"
				 "0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,32,8,4096,14336,1,1,0\n"
				 "%s,0.01,0.01,%s,0.01,0.01,0.01,0.01,0.01,0.01,32,8,4096,14336,4096,1,0\n",
				 head, emb, rope);
			put_file(path, text);
			/* "0,01" is two cells: the row has a field too many */
			if (strchr(bad[i], ','))
				snprintf(want, sizeof want, "mlp.csv:3: 18 fields, the header has 17");
			else
				snprintf(want, sizeof want, "mlp.csv:3: column %d ('time_stats.%s.median'): "
					 "expected a decimal number from 0 to 3600000 (milliseconds), got %s%s%s",
					 col == 0 ? 4 : 1, col == 0 ? "attn_rope" : "emb",
					 *bad[i] ? "'" : "an empty cell", bad[i], *bad[i] ? "'" : "");
			if (kvs_cost_load_profile(dir, 1, &k) != KVS_ERR_PARSE ||
			    !strstr(kvs_last_error(), want))
				fail_msg("cell '%s': %s (want \"%s\")", bad[i], kvs_last_error(), want);
			assert_int_equal(k.profile_points, 0);
		}
	}
	/* the forms of the published files, and the rest of the decimal rule;
	 * a cell not used (a std, a row of another tp) is not read */
	static const struct { const char *cell; double ms; } ok[] = {
		{ "0.0123", 0.0123 }, { "7", 7 }, { "1.734723475976807e-18", 1.734723475976807e-18 },
		{ "1E-05", 1e-5 }, { "+0.5", 0.5 }, { "0", 0 }, { "-0", 0 }, { ".25", 0.25 },
		{ "3.", 3 },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(ok); i++) {
		char text[2048];
		snprintf(text, sizeof text, "%s"
			 "0.01,0.01,0.01,%s,0.01,0.01,0.01,0.01,0.01,0.01,32,8,4096,14336,1,1,nan\n"
			 "nan,inf,,0x1,x,-1,,,,,32,8,4096,14336,1,2,\n", head, ok[i].cell);
		put_file(path, text);
		if (kvs_cost_load_profile(dir, 1, &k) != KVS_OK)
			fail_msg("cell '%s': %s", ok[i].cell, kvs_last_error());
		assert_int_equal(k.profile_points, 1);
		assert_close(k.profile_layer_s[0], (8 * 0.01 + ok[i].ms) * 1e-3, 1e-15);
	}

	/* all_reduce.csv's median */
	snprintf(net, sizeof net, "%s/network", root);
	assert_int_equal(mkdir(net, 0700), 0);
	snprintf(net, sizeof net, "%s/network/h100_pairwise_nvlink", root);
	assert_int_equal(mkdir(net, 0700), 0);
	snprintf(ar, sizeof ar, "%s/all_reduce.csv", net);
	char text[1024];
	snprintf(text, sizeof text, "%s"
		 "0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,32,8,4096,14336,1,2,0\n", head);
	put_file(path, text);
	static const char *const ar_bad[] = { "nan", "inf", "0x1p-6", "0.02s", "", "-0.02" };
	for (size_t i = 0; i < KVS_ARRAY_LEN(ar_bad); i++) {
		char want[160];
		snprintf(text, sizeof text, ",time_stats.all_reduce.median,num_workers,size,collective\n"
			 "0,%s,2,2048,all_reduce\n", ar_bad[i]);
		put_file(ar, text);
		snprintf(want, sizeof want, "all_reduce.csv:2: column 2 "
			 "('time_stats.all_reduce.median'): expected a decimal number from 0 to 3600000");
		if (kvs_cost_load_profile(dir, 2, &k) != KVS_ERR_PARSE ||
		    !strstr(kvs_last_error(), want))
			fail_msg("all_reduce median '%s': %s", ar_bad[i], kvs_last_error());
	}
	put_file(ar, ",time_stats.all_reduce.median,num_workers,size,collective\n"
		     "0,1.5e-2,2,2048,all_reduce\n1,nan,4,2048,all_reduce\n");
	assert_int_equal(kvs_cost_load_profile(dir, 2, &k), KVS_OK);
	assert_int_equal(k.allreduce_points, 1);
	assert_close(k.allreduce_s[0], 1.5e-5, 1e-15);
	remove(ar);
	rmdir(net);
	snprintf(net, sizeof net, "%s/network", root);
	rmdir(net);

	/* attention.csv: the phase's own median is required, the other
	 * phase's cell is not read (Vidur leaves it empty); an optional
	 * reshape is 0 when empty, else a time like the others */
	snprintf(text, sizeof text, "%s"
		 "0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,0.01,32,8,4096,14336,1,1,0\n", head);
	put_file(path, text);
	snprintf(ar, sizeof ar, "%s/attention.csv", dir);
	static const char *const at_head =
		"time_stats.attn_decode.median,time_stats.attn_prefill.median,n_embd,n_q_head,"
		"n_kv_head,num_tensor_parallel_workers,batch_size,prefill_chunk_size,"
		"kv_cache_size,is_prefill,time_stats.attn_input_reshape.median\n";
	static const char *const at_good =
		"0.01,,4096,32,8,1,1,0,100,False,0.001\n,0.05,4096,32,8,1,1,64,0,True,\n";
	static const char *const at_bad[][3] = {
		{ ",0.05,4096,32,8,1,1,0,100,False,0.001", "1", "an empty cell" },
		{ "nan,,4096,32,8,1,1,0,100,False,0.001", "1", "'nan'" },
		{ "0.01,nan,4096,32,8,1,1,64,0,True,0.001", "2", "'nan'" },
		{ "0.01,0x1p-4,4096,32,8,1,1,64,0,True,0.001", "2", "'0x1p-4'" },
		{ "0.01,,4096,32,8,1,1,0,100,False,inf", "11", "'inf'" },
		{ "0.01,,4096,32,8,1,1,0,100,False,0.001x", "11", "'0.001x'" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(at_bad); i++) {
		char want[160];
		snprintf(text, sizeof text, "%s%s%s\n", at_head, at_good, at_bad[i][0]);
		put_file(ar, text);
		snprintf(want, sizeof want, "attention.csv:4: column %s ('", at_bad[i][1]);
		const char *msg = kvs_last_error();
		if (kvs_cost_load_profile(dir, 1, &k) != KVS_ERR_PARSE ||
		    !strstr((msg = kvs_last_error()), want) || !strstr(msg, at_bad[i][2]))
			fail_msg("attention row '%s': %s", at_bad[i][0], msg);
	}
	/* the decode row's other-phase cell holds text (not read): the
	 * prefill reshape, empty, counts 0 */
	snprintf(text, sizeof text, "%s%s0.02,n/a,4096,32,8,1,2,0,100,False,\n", at_head, at_good);
	put_file(ar, text);
	assert_int_equal(kvs_cost_load_profile(dir, 1, &k), KVS_OK);
	assert_non_null(k.attn);
	assert_int_equal(k.attn->decode_rows, 2);
	assert_int_equal(k.attn->prefill_rows, 1);
	assert_close(k.attn->pre_s[0], 0.05e-3, 1e-15);
	remove(ar);
	remove(path);
	rmdir(dir);
	snprintf(dir, sizeof dir, "%s/compute", root);
	rmdir(dir);
	assert_int_equal(rmdir(root), 0);
}

/* The published profiles (../shared/profiles, skipped when absent) load
 * under the strict rule: every mlp.csv at each tp it holds (every row
 * read), the pairwise NVLink all-reduce at tp 2 and 4, and the Llama-2-70B
 * attention at tp 2. */
static void test_profile_real_files(void **state)
{
	(void)state;
	const char *src = getenv("KVS_SOURCE_ROOT");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "%s/../shared/profiles/vidur/compute/*/*/*/mlp.csv",
		 src ? src : ".");
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0) {
		skip();
		return;
	}
	size_t attn = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(g.gl_pathv[i], '/') - g.gl_pathv[i]),
			 g.gl_pathv[i]);
		for (uint32_t tp = 1; tp <= 8; tp *= 2) {
			kvs_cost_config k;
			kvs_cost_config_defaults(&k);
			if (kvs_cost_load_profile(dir, tp, &k) != KVS_OK)
				fail_msg("%s at tp %u: %s", dir, tp, kvs_last_error());
			assert_true(k.profile_points > 0);
			if (tp == 2 || tp == 4)
				assert_true(k.allreduce_points > 0);
			attn += k.attn != NULL;
		}
	}
	globfree(&g);
	assert_true(attn >= 1);
}

/* fast path == one-token stepping with the profile model and the per-seq
 * and per-token overheads */
static void test_fast_path_profile(void **state)
{
	(void)state;
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-2-7b", "h100-80gb");
	kvs_cost_config k;
	synthetic_profile(&k);
	fs_deploy = &d;
	fs_cost = &k;
	for (int p = 0; p < KVS_POLICY_COUNT_; p++)
		compare_fast_slow((kvs_policy)p, false, 1.0);
	compare_fast_slow(KVS_POLICY_PAGED, true, 2.0);
	k.profile_points = 0;    /* plain roofline with the overhead terms */
	compare_fast_slow(KVS_POLICY_PAGED, false, 1.0);
	fs_deploy = NULL;
	fs_cost = NULL;
	/* and a closed-loop client, every policy: it steps one token at a time
	 * whatever fast_path says, so both runs must agree */
	fs_max_concurrency = 12;
	for (int p = 0; p < KVS_POLICY_COUNT_; p++)
		compare_fast_slow((kvs_policy)p, false, 1.0);
	fs_max_concurrency = 0;
}

/* Closed loop, by hand: three requests at t = 0 (prompt 100, output 5;
 * prefill 11 ms, decodes 10.01 ms) with one in flight run back to back,
 * each sent when the previous one finishes; with two, the third waits for
 * the first. */
static void test_closed_loop(void **state)
{
	(void)state;
	kvs_sim_config c;
	cfg_fixed(&c, KVS_POLICY_PAGED, 4096, 64, 16, 2048);
	c.cost.linear_per_token_s = 1e-5;
	c.max_concurrency = 1;
	kvs_request q[3] = { mkreq(0, 0.0, 100, 5), mkreq(1, 0.0, 100, 5), mkreq(2, 0.0, 100, 5) };
	static recs R;
	double one = 0.011 + 4 * 0.01001;
	for (int fast = 0; fast < 2; fast++) {
		c.fast_path = fast;
		kvs_request_set *set = set_of(q, 3);
		kvs_sim_result *res = run_set(&c, set, &R);
		const kvs_sim_stats *st = kvs_sim_result_stats(res);
		assert_int_equal(st->completed, 3);
		for (int i = 0; i < 3; i++) {
			const kvs_sim_request_record *r = rec_of(&R, (uint64_t)i);
			assert_close(r->arrival_s, i * one, 1e-9);      /* sent at the previous finish */
			assert_close(r->finish_s, (i + 1) * one, 1e-9);
		}
		kvs_sim_result_destroy(res);
		kvs_request_set_destroy(set);
	}
	/* two in flight: 0 and 1 batch together, 2 is sent when they finish */
	c.max_concurrency = 2;
	c.fast_path = true;
	kvs_request_set *set = set_of(q, 3);
	kvs_sim_result *res = run_set(&c, set, &R);
	const kvs_sim_request_record *r0 = rec_of(&R, 0), *r2 = rec_of(&R, 2);
	assert_close(r2->arrival_s, r0->finish_s, 1e-12);
	assert_true(r0->finish_s > one);                    /* a batch of two is slower */
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);
}

static void test_roofline(void **state)
{
	(void)state;
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-3-8b", "a100-80gb");
	kvs_sizing sz;
	assert_int_equal(kvs_size_compute(&d, &sz), KVS_OK);
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	/* one decode token with a context of 1: bandwidth-bound, weights once */
	kvs_step_shape one = { 1, 1, 1, 1, 0, 0 };
	double t;
	assert_int_equal(kvs_sim_step_time(&c, &one, &t), KVS_OK);
	double want = ((double)sz.weight_bytes + 2.0 * sz.kv_bytes_per_token) /
		      (d.gpu.hbm_bytes_per_s * 0.8) + 0.002;
	assert_close(t, want, 1e-12);
	/* a prefill of 8192 tokens: compute-bound, 2 x params FLOPs per token */
	kvs_step_shape pre = { 8192, 1, 8192, 8192.0 * 8193 / 2, 0, 0 };
	assert_int_equal(kvs_sim_step_time(&c, &pre, &t), KVS_OK);
	double flops = 2.0 * (double)d.model.num_params * 8192 +
		       4.0 * d.model.num_heads * d.model.head_dim * d.model.num_layers * (8192.0 * 8193 / 2);
	assert_close(t, flops / (d.gpu.fp16_flops * 0.5) + 0.002, 1e-12);
	/* decode lines agree with single steps */
	kvs_cost cost;
	assert_int_equal(kvs_cost_init(&cost, &c.cost, &d, &sz), KVS_OK);
	kvs_lin2 L;
	kvs_cost_decode_lines(&cost, 64, 64 * 1000.0, 0, &L);
	for (uint64_t j = 0; j < 2000; j += 97) {
		double ctx = 64 * (1000.0 + j);
		double x = kvs_cost_step(&cost, 64, 64, ctx, ctx, 64, ctx, DEC_WIN(ctx), 0);
		double y = kvs_lin2_prefix(&L, j + 1) - kvs_lin2_prefix(&L, j);
		assert_close(x, y, 1e-9);
	}
}

/* ---- the KV-read factor ---------------------------------------------------------------
 * A small hand-made deployment: 1e9 weight bytes and 1e5 KV bytes per token
 * per rank, a GPU of 1 TB/s at 50% (5e11 B/s effective) and 1 PFLOP/s at
 * 50%, 2 ms overhead.  A decode step of 4 sequences reading 4000 tokens of
 * context writes 4 tokens:
 *   memory  = (1e9 + 1e5 (f 4000 + 4)) / 5e11
 *           = 2.0008 ms + f x 0.8 ms          (KV read: 4e8 B / 5e11 = 0.8 ms)
 *   compute = (2 x 1e9 x 4 + 4 x 8 x 64 x 4 x 4000) / 5e14 = 16.07 us
 * so the step is memory-bound and f = 2 makes its KV-read share exactly
 * 1.6 ms instead of 0.8 ms. */
static void small_deploy(kvs_deploy *d, kvs_sizing *sz)
{
	memset(d, 0, sizeof *d);
	snprintf(d->model.name, sizeof d->model.name, "tiny");
	d->model.num_layers = 4;
	d->model.num_heads = 8;
	d->model.num_kv_heads = 8;
	d->model.head_dim = 64;
	d->model.hidden_size = 512;
	d->model.num_params = 1000000000ull;
	snprintf(d->gpu.name, sizeof d->gpu.name, "unit");
	d->gpu.hbm_bytes_per_s = 1e12;
	d->gpu.fp16_flops = 1e15;
	d->tp = 1;
	d->pp = 1;
	memset(sz, 0, sizeof *sz);
	sz->weight_bytes = 1000000000ull;
	sz->kv_bytes_per_token = 100000;
}

/* small_deploy and a roofline at 50% of peak FLOP/s and bandwidth */
static void small_roofline(kvs_deploy *d, kvs_sizing *sz, kvs_cost_config *cc)
{
	small_deploy(d, sz);
	kvs_cost_config_defaults(cc);
	cc->flops_efficiency = 0.5;
	cc->bandwidth_efficiency = 0.5;
}

static void test_kv_read_factor(void **state)
{
	(void)state;
	kvs_deploy d;
	kvs_sizing sz;
	kvs_cost_config cc;
	small_roofline(&d, &sz, &cc);
	assert_true(cc.kv_read_factor == 1.0);
	double t[3];
	for (int f = 1; f <= 2; f++) {
		cc.kv_read_factor = f;
		kvs_cost c;
		assert_int_equal(kvs_cost_init(&c, &cc, &d, &sz), KVS_OK);
		t[f] = kvs_cost_step(&c, 4, 4, 4000.0, 4000.0, 4, 4000.0, DEC_WIN(4000.0), 0);
		assert_close(t[f], 0.002 + 2.0008e-3 + f * 0.8e-3, 1e-12);
		/* the decode-span lines carry the factor too: step j of a span
		 * from context 4000 reads 4000 + 4 j, at f x 0.8 ms per 4000 */
		kvs_lin2 L;
		kvs_cost_decode_lines(&c, 4, 4000.0, 0, &L);
		for (uint64_t j = 0; j < 50; j += 7) {
			double want = 0.002 + (1e9 + 1e5 * (f * (4000.0 + 4.0 * j) + 4)) / 5e11;
			double got = kvs_lin2_prefix(&L, j + 1) - kvs_lin2_prefix(&L, j);
			assert_close(got, want, 1e-9);
			assert_close(got, kvs_cost_step(&c, 4, 4, 4000.0 + 4.0 * j,
							4000.0 + 4.0 * j, 4,
							4000.0 + 4.0 * j,
							DEC_WIN(4000.0 + 4.0 * j), 0), 1e-9);
		}
	}
	/* with the weight read and the overhead removed, what is left at f = 1
	 * is the KV read (0.8 ms) plus the write (0.8 us): f = 2 doubles the read */
	t[0] = 0.002 + 1e9 / 5e11 + 1e5 * 4 / 5e11;
	assert_close(t[2] - t[0], 2.0 * (t[1] - t[0]), 1e-9);
	assert_close(t[2] - t[1], 0.8e-3, 1e-9);

	/* the linear model: only the per-context-token term scales */
	kvs_cost_config lc;
	kvs_cost_config_defaults(&lc);
	lc.kind = KVS_COST_LINEAR;
	lc.linear_base_s = 0.01;
	lc.linear_per_token_s = 1e-5;
	lc.linear_per_context_s = 1e-7;
	lc.linear_per_seq_s = 1e-4;
	lc.kv_read_factor = 2.0;
	kvs_cost c;
	assert_int_equal(kvs_cost_init(&c, &lc, &d, &sz), KVS_OK);
	assert_close(kvs_cost_step(&c, 4, 4, 4000.0, 4000.0, 4, 4000.0, DEC_WIN(4000.0), 0),
		     0.01 + 4e-5 + 2.0 * 4e-4 + 4e-4, 1e-12);
	kvs_lin2 L;
	kvs_cost_decode_lines(&c, 4, 4000.0, 0, &L);
	assert_close(L.b1, 2.0 * 1e-7 * 4, 1e-12);

	/* windowed layers: 3 of the 4 layers keep a window of 128 tokens;
	 * their 75,000 of the 100,000 KV bytes per token are read over 4 x
	 * 128 tokens, the other 25,000 over the 4,000 of context:
	 *   memory = (1e9 + 25e3 (4000 + 4) + 75e3 (512 + 4)) / 5e11
	 *          = 2.0 ms + 0.2002 ms + 0.0774 ms
	 * and a span's windowed read stays at 512 tokens while the full
	 * layers' grows by 4 a step */
	kvs_cost_config wc;
	kvs_cost_config_defaults(&wc);
	wc.flops_efficiency = 0.5;
	wc.bandwidth_efficiency = 0.5;
	kvs_deploy wd = d;
	wd.model.sliding_window = 128;
	wd.model.num_sliding_layers = 3;
	kvs_cost w;
	assert_int_equal(kvs_cost_init(&w, &wc, &wd, &sz), KVS_OK);
	assert_close(kvs_cost_step(&w, 4, 4, 4000.0, 4000.0, 4, 4000.0, DEC_WIN(512.0), 0),
		     0.002 + (1e9 + 25e3 * 4004.0 + 75e3 * 516.0) / 5e11, 1e-12);
	/* a prefill chunk's windowed reads, hand-summed: each of its queries
	 * attends to the last 128 tokens up to itself */
	double cw, cp;
	kvs_cost_chunk_window(&w, 100, 0, &cw, &cp);     /* inside the window */
	assert_close(cp, 101.0 * 100 / 2, 1e-12);
	assert_close(cw, 100, 1e-12);
	kvs_cost_chunk_window(&w, 100, 500, &cw, &cp);   /* past it */
	assert_close(cp, 128.0 * 100, 1e-12);
	assert_close(cw, 128 + 100 - 1, 1e-12);
	kvs_cost_chunk_window(&w, 100, 50, &cw, &cp);    /* across it: 51..128, then 128 */
	assert_close(cp, (51.0 + 128) * 78 / 2 + 128.0 * 22, 1e-12);
	assert_close(cw, 150, 1e-12);
	/* the windowed context equal to the whole one: the old charge */
	assert_close(kvs_cost_step(&w, 4, 4, 4000.0, 4000.0, 4, 4000.0, DEC_WIN(4000.0), 0),
		     t[1], 1e-12);
	kvs_cost_decode_lines(&w, 4, 4000.0, 512.0, &L);
	for (uint64_t j = 0; j < 50; j += 7) {
		double want = 0.002 + (1e9 + 25e3 * (4000.0 + 4.0 * j + 4) + 75e3 * 516.0) / 5e11;
		double got = kvs_lin2_prefix(&L, j + 1) - kvs_lin2_prefix(&L, j);
		assert_close(got, want, 1e-9);
		assert_close(got, kvs_cost_step(&w, 4, 4, 4000.0 + 4.0 * j, 4000.0 + 4.0 * j,
						4, 4000.0 + 4.0 * j, DEC_WIN(512.0), 0), 1e-9);
	}

	/* a config built without defaults (factor 0) or a bad factor is refused */
	lc.kv_read_factor = 0;
	assert_int_equal(kvs_cost_init(&c, &lc, &d, &sz), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "KV-read factor"));
	lc.kv_read_factor = NAN;
	assert_int_equal(kvs_cost_init(&c, &lc, &d, &sz), KVS_ERR_INVALID);

	/* through the engine: a lone request of 100 + 5 tokens on the linear
	 * model reads 100 (prefill) + 101 + 102 + 103 + 104 tokens of KV */
	for (int fast = 0; fast < 2; fast++) {
		double e2e[3];
		for (int f = 0; f <= 2; f++) {
			kvs_sim_config sc;
			cfg_fixed(&sc, KVS_POLICY_PAGED, 4096, 64, 16, 2048);
			sc.fast_path = fast;
			sc.cost.linear_per_context_s = f ? 1e-4 : 0;
			sc.cost.kv_read_factor = f ? f : 1;
			kvs_request q = mkreq(0, 1.0, 100, 5);
			kvs_request_set *set = set_of(&q, 1);
			kvs_sim_result *res = run_set(&sc, set, NULL);
			e2e[f] = kvs_sim_result_stats(res)->e2e_s.max;
			kvs_sim_result_destroy(res);
			kvs_request_set_destroy(set);
		}
		assert_close(e2e[0], 5 * 0.01, 1e-9);
		assert_close(e2e[1], 5 * 0.01 + 1e-4 * 510, 1e-9);
		assert_close(e2e[2], 5 * 0.01 + 2 * 1e-4 * 510, 1e-9);
	}
}

/* Pipeline stages, by hand on small_deploy's figures (per rank and stage:
 * 1e9 weight bytes, 1e5 KV bytes a token; 5e11 B/s and 5e14 FLOP/s
 * effective; 4 layers of 8 heads x 64).  By default one batch in flight:
 * a step is one pass of the whole batch through the pp stages.  With
 * balanced micro-batches a step of n sequences runs as m = min(pp, n)
 * of them: it lasts one micro-batch's pass through every stage, 1/m of
 * the step's tokens, context and pairs with all stages' weights, plus the
 * 2 ms overhead once. */
static double pp_step(double w_all, double kv_all, double T, double ctx, double pairs,
		      double m)
{
	double flops = 2e9 * T / m + 4.0 * 8 * 64 * 4 * pairs / m;
	double bytes = w_all + kv_all * (ctx / m + T / m);
	double comp = flops / 5e14, mem = bytes / 5e11;
	return (comp > mem ? comp : mem) + 0.002;
}

static void test_pipeline_micro_batches(void **state)
{
	(void)state;
	kvs_deploy d;
	kvs_sizing sz;
	kvs_cost_config cc;
	small_roofline(&d, &sz, &cc);
	kvs_cost c;

	/* pp 2, one batch in flight: a decode of 4 sequences over 4,000
	 * tokens passes both stages, (2e9 + 2e5 x 4004) / 5e11 + 2 ms */
	d.pp = 2;
	assert_int_equal(kvs_cost_init(&c, &cc, &d, &sz), KVS_OK);
	assert_true(kvs_cost_micro_batches(&c, 4) == 1.0);
	assert_close(kvs_cost_step(&c, 4, 4, 4000.0, 4000.0, 4, 4000.0, DEC_WIN(4000.0), 0),
		     7.6016e-3, 1e-12);
	/* balanced, in two halves: (2e9 + 2e5 x (2000 + 2)) / 5e11 = 4.8008 ms,
	 * + 2 ms */
	d.pp_balanced = true;
	assert_int_equal(kvs_cost_init(&c, &cc, &d, &sz), KVS_OK);
	assert_true(kvs_cost_micro_batches(&c, 4) == 2.0);
	assert_true(kvs_cost_micro_batches(&c, 1) == 1.0);
	double t = kvs_cost_step(&c, 4, 4, 4000.0, 4000.0, 4, 4000.0, DEC_WIN(4000.0), 0);
	assert_close(t, 6.8008e-3, 1e-12);
	assert_close(t, pp_step(2e9, 2e5, 4, 4000, 4000, 2), 1e-15);
	/* one sequence cannot be split: its pass is the whole step's */
	t = kvs_cost_step(&c, 1, 1, 4000.0, 4000.0, 1, 4000.0, DEC_WIN(4000.0), 0);
	assert_close(t, (2e9 + 2e5 * 4001) / 5e11 + 0.002, 1e-12);
	/* compute-bound: two prompts of 4,096 tokens at once take half the
	 * FLOPs of one pass each way; one prompt of 8,192 takes them all */
	double pairs2 = 2.0 * 4096 * 4097 / 2, pairs1 = 8192.0 * 8193 / 2;
	t = kvs_cost_step(&c, 8192, 2, 8192.0, pairs2, 0, 0, DEC_WIN(0), 0);
	double want = pp_step(2e9, 2e5, 8192, 8192, pairs2, 2);
	assert_close(t, want, 1e-12);
	assert_close(t, (2e9 * 4096 + 8192.0 * pairs2 / 2) / 5e14 + 0.002, 1e-12);
	t = kvs_cost_step(&c, 8192, 1, 8192.0, pairs1, 0, 0, DEC_WIN(0), 0);
	assert_close(t, (2e9 * 8192 + 8192.0 * pairs1) / 5e14 + 0.002, 1e-12);

	/* pp 4: three sequences make three micro-batches, five make four */
	d.pp = 4;
	assert_int_equal(kvs_cost_init(&c, &cc, &d, &sz), KVS_OK);
	assert_true(kvs_cost_micro_batches(&c, 3) == 3.0);
	assert_true(kvs_cost_micro_batches(&c, 5) == 4.0);
	t = kvs_cost_step(&c, 3, 3, 3000.0, 3000.0, 3, 3000.0, DEC_WIN(3000.0), 0);
	assert_close(t, (4e9 + 4e5 * (1000.0 + 1)) / 5e11 + 0.002, 1e-12);
	t = kvs_cost_step(&c, 5, 5, 5000.0, 5000.0, 5, 5000.0, DEC_WIN(5000.0), 0);
	assert_close(t, (4e9 + 4e5 * (1250.0 + 1.25)) / 5e11 + 0.002, 1e-12);

	/* the decode-span lines split the same way: step j of a span of n
	 * decodes from context 1000 n, for n below, at and above pp */
	for (uint64_t n = 1; n <= 6; n++) {
		kvs_lin2 L;
		kvs_cost_decode_lines(&c, n, 1000.0 * n, 0, &L);
		double m = n < 4 ? (double)n : 4.0;
		for (uint64_t j = 0; j < 60; j += 13) {
			double ctx = (1000.0 + j) * n;
			double got = kvs_lin2_prefix(&L, j + 1) - kvs_lin2_prefix(&L, j);
			assert_close(got, pp_step(4e9, 4e5, n, ctx, ctx, m), 1e-12);
			assert_close(got, kvs_cost_step(&c, n, n, ctx, ctx, n, ctx, DEC_WIN(ctx), 0),
				     1e-12);
		}
	}

	/* the linear model is a fit of whole steps: pp does not split it */
	kvs_cost_config lc;
	kvs_cost_config_defaults(&lc);
	lc.kind = KVS_COST_LINEAR;
	lc.linear_base_s = 0.01;
	lc.linear_per_token_s = 1e-5;
	assert_int_equal(kvs_cost_init(&c, &lc, &d, &sz), KVS_OK);
	assert_true(kvs_cost_micro_batches(&c, 8) == 1.0);
	assert_close(kvs_cost_step(&c, 8, 8, 800.0, 800.0, 8, 800.0, DEC_WIN(800.0), 0),
		     0.01 + 8e-5, 1e-12);

	/* whole runs at pp 2 and 4, balanced, on the roofline and on a
	 * measured profile: the decode spans in closed form give what
	 * stepping one token at a time gives, the split changing with the
	 * number of running sequences */
	kvs_deploy dp;
	kvs_test_deploy(&dp, "llama-2-7b", "h100-80gb");
	dp.pp_balanced = true;
	kvs_cost_config rk, pk;
	kvs_cost_config_defaults(&rk);
	synthetic_profile(&pk);
	fs_deploy = &dp;
	for (uint32_t pp = 2; pp <= 4; pp += 2) {
		dp.pp = pp;
		fs_cost = &rk;
		compare_fast_slow(KVS_POLICY_PAGED, false, 1.0);
		compare_fast_slow(KVS_POLICY_VATTENTION, true, 1.0);
		fs_cost = &pk;
		compare_fast_slow(KVS_POLICY_PAGED, false, 1.0);
	}
	fs_cost = NULL;
	fs_deploy = NULL;
}

static void test_bad_config(void **state)
{
	(void)state;
	kvs_sim_config c;
	kvs_sim *s;
	cfg_fixed(&c, KVS_POLICY_PAGED, 160, 2, 16, 1000);
	c.max_num_batched_tokens = 8;
	c.max_num_seqs = 16;
	assert_int_equal(kvs_sim_create(&c, &s), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "max_num_batched_tokens"));
	cfg_fixed(&c, KVS_POLICY_PAGED, 160, 2, 16, 1000);
	c.preemption_mode = KVS_PREEMPT_SWAP;
	assert_int_equal(kvs_sim_create(&c, &s), KVS_ERR_INVALID);
	cfg_fixed(&c, KVS_POLICY_PAGED, 160, 2, 16, 1000);
	c.cost.linear_base_s = -1;
	assert_int_equal(kvs_sim_create(&c, &s), KVS_ERR_INVALID);
	/* arrivals out of order are an error naming the request */
	cfg_fixed(&c, KVS_POLICY_PAGED, 160, 2, 16, 1000);
	kvs_request_set *set;
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	kvs_request a = mkreq(0, 1.0, 5, 5), b = mkreq(1, 0.5, 5, 5);
	assert_int_equal(kvs_request_set_append(set, &a), KVS_OK);
	assert_int_equal(kvs_request_set_append(set, &b), KVS_ERR_INVALID);
	kvs_request_set_destroy(set);
}

static void test_cursor_time_scale(void **state)
{
	(void)state;
	kvs_request q[3] = { mkreq(0, 0.0, 5, 5), mkreq(1, 2.0, 5, 5), mkreq(2, 4.0, 5, 5) };
	uint64_t h[2] = { 11, 12 };
	q[1].hash_ids = h;
	q[1].num_hash_ids = 2;
	kvs_request_set *set = set_of(q, 3);
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 0.5);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_request r;
	assert_int_equal(src.next(src.ctx, &r), KVS_OK);
	assert_int_equal(src.next(src.ctx, &r), KVS_OK);
	assert_close(r.arrival_s, 1.0, 1e-15);
	assert_int_equal(r.num_hash_ids, 2);
	assert_int_equal(r.hash_ids[1], 12);
	assert_int_equal(src.next(src.ctx, &r), KVS_OK);
	assert_int_equal(src.next(src.ctx, &r), KVS_END);
	kvs_request_set_destroy(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lin2_sums),
		cmocka_unit_test(test_lone_request),
		cmocka_unit_test(test_chunked_prefill),
		cmocka_unit_test(test_prompt_steps),
		cmocka_unit_test(test_contention),
		cmocka_unit_test(test_preemption),
		cmocka_unit_test(test_max_policy_bound),
		cmocka_unit_test(test_paged_pool_bound),
		cmocka_unit_test(test_fast_path_equivalence),
		cmocka_unit_test(test_fast_path_parallel_sampling),
		cmocka_unit_test(test_fast_path_block_sizes),
		cmocka_unit_test(test_fast_path_final_block),
		cmocka_unit_test(test_decode_ring_far),
		cmocka_unit_test(test_fast_path_prompt_steps),
		cmocka_unit_test(test_parallel_sampling_by_hand),
		cmocka_unit_test(test_parallel_sampling_preemption),
		cmocka_unit_test(test_parallel_sampling_generated),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_horizon_unfinished),
		cmocka_unit_test(test_sample_interval_bound),
		cmocka_unit_test(test_json_deterministic),
		cmocka_unit_test(test_sketch_bucket),
		cmocka_unit_test(test_sketch),
		cmocka_unit_test(test_step_table_fit),
		cmocka_unit_test(test_roofline),
		cmocka_unit_test(test_profile_step_time),
		cmocka_unit_test(test_pipeline_micro_batches),
		cmocka_unit_test(test_profile_load),
		cmocka_unit_test(test_fast_path_profile),
		cmocka_unit_test(test_attention_profile),
		cmocka_unit_test(test_profile_integer_cells),
		cmocka_unit_test(test_profile_time_cells),
		cmocka_unit_test(test_profile_real_files),
		cmocka_unit_test(test_closed_loop),
		cmocka_unit_test(test_kv_read_factor),
		cmocka_unit_test(test_hybrid_windows),
		cmocka_unit_test(test_chunked_attention),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_cursor_time_scale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
