/*
 * test_property.c - a differential property test of the simulator.
 *
 * Each case is drawn from one seed: a small generated trace (parallel
 * sampling n = 1-4, shared system prompts, multi-turn conversations, hash
 * ids), a block size (16 in half the cases, else 1, 2, 32, 64 or 128),
 * prefix caching on or off, recompute or swap (with a host pool from
 * scarce to ample), a KV pool from tiny to ample, batch limits and a
 * watermark.  The trace is replayed under every policy, each twice (the
 * fast path and one token at a time), with the engine's and the
 * allocator's validators run at every step (cfg.validate).  The properties:
 *
 *   - the run ends without error and every request is accounted for:
 *     arrived = completed + rejected + unfinished, unfinished = 0 (no
 *     horizon), one record per request;
 *   - the six memory parts (time-weighted, at peak, every sample) are each
 *     within [0, 100] % and sum to 100 %;
 *   - the fast path gives the results of stepping one token at a time;
 *   - paged never rejects as never_fits or exceeds_* a request that a
 *     contiguous policy (max, pow2, oracle) served (with blocks larger
 *     than 16 tokens, one whose blocks fit the pool);
 *   - paged and oracle never reject a request whose own final length fits
 *     the pool (all n samples unshared, rounded up to blocks).
 *
 * As a cmocka test (suite unit) it runs KVS_PROPERTY_CASES cases (default
 * 12, scaled by KVS_TEST_SCALE) from seed 1.  Run directly with --long it
 * is the long campaign (scripts/property-long.sh): `--first S --cases N`
 * prints every seed and its verdict, `--seed S` reruns one case verbosely;
 * the exit status is the number of failing cases (at most 125).
 */
#include "test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/kvsim.h"

#define NPOL KVS_POLICY_COUNT_

enum { KVB = 131072, BS = 16, MML = 4096 };   /* bytes per token, tokens */
/* BS: the block size of the regression seeds and the hand-made cases */
#define MAXREQ 256

typedef struct prop_case {
	uint64_t seed;
	uint32_t bs;               /* tokens per block */
	uint32_t n, pool_tokens, max_num_seqs, max_num_batched_tokens, requests;
	bool prefix, swap;
	double watermark, swap_share, rate;
} prop_case;

typedef struct rec_tab {
	kvs_sim_request_record r[MAXREQ];
	uint32_t count[MAXREQ];   /* records seen per request index */
	size_t n;
	bool overflow;
} rec_tab;

static void on_rec(void *ctx, const kvs_sim_request_record *r)
{
	rec_tab *T = ctx;
	if (r->index >= MAXREQ) {
		T->overflow = true;
		return;
	}
	T->r[r->index] = *r;
	T->count[r->index]++;
	T->n++;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unit(uint64_t *x)
{
	return (double)(splitmix(x) >> 11) * 0x1.0p-53;
}

/* The case of a seed; bs 0: the block size drawn too (from a stream of
 * its own, so that the other draws of a seed are those of block size 16). */
static void case_of(uint64_t seed, uint32_t bs, prop_case *c)
{
	uint64_t x = seed * 0x2545f4914f6cdd1dull + 7;
	memset(c, 0, sizeof *c);
	c->seed = seed;
	if (!bs) {
		/* the crossing classes run at any size; past 16 they
		 * dissolve, under load, at steps where sequences finish */
		static const uint32_t sizes[] = { 16, 16, 16, 16, 16, 1, 2, 32, 64, 128 };
		uint64_t y = seed * 0x9e3779b97f4a7c15ull + 11;
		bs = sizes[splitmix(&y) % KVS_ARRAY_LEN(sizes)];
	}
	c->bs = bs;
	c->n = 1 + (uint32_t)(splitmix(&x) % 4);
	c->prefix = splitmix(&x) & 1;
	c->swap = splitmix(&x) & 1;
	/* log-uniform from tiny (a few requests at once) to ample, in whole
	 * blocks (a partial block would hold a contiguous policy's tokens but
	 * no paged block) */
	c->pool_tokens = (uint32_t)(1200.0 * pow(40.0, unit(&x))) / c->bs * c->bs;
	/* blocks of 1 and 2 tokens: a pool of a few thousand blocks (the
	 * validators walk every block at every step) */
	if (c->bs < BS && c->pool_tokens > 4096u * c->bs)
		c->pool_tokens = 4096u * c->bs;
	static const uint32_t seqs[] = { 4, 16, 64, 256 };
	c->max_num_seqs = seqs[splitmix(&x) % 4];
	static const uint32_t toks[] = { 256, 512, 2048 };
	c->max_num_batched_tokens = toks[splitmix(&x) % 3];
	if (c->max_num_batched_tokens < c->max_num_seqs)
		c->max_num_batched_tokens = c->max_num_seqs;
	c->watermark = (splitmix(&x) & 1) ? 0.01 : 0;
	c->swap_share = (splitmix(&x) % 3 == 0) ? 0.25 : 4.0;
	c->rate = 2.0 + 40.0 * unit(&x);
	c->requests = 24 + (uint32_t)(splitmix(&x) % 120);
}

static void case_print(FILE *f, const prop_case *c)
{
	fprintf(f, "seed %" PRIu64 ": block size %u, n %u, prefix caching %s, %s, pool %u tokens, "
		"max_num_seqs %u, max_num_batched_tokens %u, watermark %g, "
		"swap space %g x pool, %u requests at %.1f/s\n",
		c->seed, c->bs, c->n, c->prefix ? "on" : "off",
		c->swap ? "swap" : "recompute", c->pool_tokens, c->max_num_seqs,
		c->max_num_batched_tokens, c->watermark, c->swap_share,
		c->requests, c->rate);
}

static void cfg_of(const prop_case *pc, kvs_policy pol, bool fast,
		   kvs_sim_config *c)
{
	kvs_sim_config_defaults(c, NULL);
	c->policy = pol;
	c->deploy.block_size = pc->bs;
	c->deploy.max_model_len = MML;
	c->deploy.tp = 1;
	c->deploy.gpu.pcie_bytes_per_s = 32e9;
	c->kv_bytes_per_token = KVB;
	c->kv_budget_bytes = (uint64_t)pc->pool_tokens * KVB;
	c->watermark = pc->watermark;
	c->cost.kind = KVS_COST_LINEAR;
	c->cost.linear_base_s = 0.01;
	c->cost.linear_per_token_s = 1e-5;
	c->cost.linear_per_context_s = 1e-8;
	c->max_num_seqs = pc->max_num_seqs;
	c->max_num_batched_tokens = pc->max_num_batched_tokens;
	c->enable_prefix_caching = pc->prefix && pol == KVS_POLICY_PAGED;
	c->preemption_mode = pc->swap ? KVS_PREEMPT_SWAP : KVS_PREEMPT_RECOMPUTE;
	c->swap_bytes = (uint64_t)(pc->swap_share * (double)c->kv_budget_bytes);
	c->page_bytes = 64 << 10;
	c->sample_interval_s = 0.5;
	c->fast_path = fast;
	c->validate = true;
}

static kvs_status trace_of(const prop_case *pc, kvs_request_set **out)
{
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	o.seed = pc->seed;
	o.requests = pc->requests;
	o.rate = pc->rate;
	o.num_samples = pc->n;
	o.prefix_tokens = 200;
	o.prefix_groups = 4;
	o.turns = 3;
	o.think_s = 0.5;
	o.max_tokens = 1200;
	o.hash_block_tokens = pc->bs;
	kvs_status st = kvs_gen_dist_parse("lognormal:300:0.8", &o.prompt);
	if (st == KVS_OK)
		st = kvs_gen_dist_parse("lognormal:120:1", &o.output);
	kvs_gen *g = NULL;
	if (st == KVS_OK)
		st = kvs_gen_open(&o, &g);
	if (st != KVS_OK)
		return st;
	kvs_request_source src = {
		(kvs_status (*)(void *, kvs_request *))kvs_gen_next, g, NULL
	};
	st = kvs_request_set_from_source(&src, out);
	kvs_gen_close(g);
	return st;
}

/* ---- checks (a message, not an abort, so the long run can go on) ----------- */

typedef struct verdict {
	char msg[512];
	bool failed;
} verdict;

static bool failf(verdict *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool failf(verdict *v, const char *fmt, ...)
{
	if (!v->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(v->msg, sizeof v->msg, fmt, ap);
		va_end(ap);
		v->failed = true;
	}
	return false;
}

static bool parts_ok(verdict *v, const char *pol, const char *what,
		     const kvs_sim_mem_pct *m)
{
	const double p[6] = { m->token_states, m->reservation, m->internal_frag,
			      m->external_frag, m->cached_idle, m->free };
	double sum = 0;
	for (int i = 0; i < 6; i++) {
		if (!(p[i] >= -1e-9 && p[i] <= 100 + 1e-9))
			return failf(v, "%s: %s: memory part %d is %.12g %%", pol, what,
				     i, p[i]);
		sum += p[i];
	}
	if (!(fabs(sum - 100.0) <= 1e-6))
		return failf(v, "%s: %s: memory parts sum to %.12g %%", pol, what, sum);
	return true;
}

static bool close_rel(double a, double b)
{
	double tol = 1e-9 * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-12;
	return fabs(a - b) <= tol;
}

#define SAME_INT(f)                                                           \
	do {                                                                  \
		if (a->f != b->f)                                             \
			return failf(v, "%s: fast path %s %llu, one token at a " \
				     "time %llu", pol, #f,                    \
				     (unsigned long long)a->f,                \
				     (unsigned long long)b->f);               \
	} while (0)
#define SAME_DBL(f)                                                           \
	do {                                                                  \
		if (!close_rel(a->f, b->f))                                   \
			return failf(v, "%s: fast path %s %.15g, one token at a " \
				     "time %.15g", pol, #f, a->f, b->f);      \
	} while (0)

static bool same_results(verdict *v, const char *pol, const kvs_sim_stats *a,
			 const kvs_sim_stats *b)
{
	SAME_INT(completed);
	SAME_INT(rejected);
	for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++)
		SAME_INT(rejected_by[i]);
	SAME_INT(steps);
	SAME_INT(preemptions);
	SAME_INT(recomputed_tokens);
	SAME_INT(swapped_bytes);
	SAME_INT(forked_sequences);
	SAME_INT(cow_copies);
	SAME_INT(output_tokens);
	SAME_INT(prefix_hit_tokens);
	SAME_INT(concurrency_max);
	SAME_DBL(sim_time_s);
	SAME_DBL(concurrency_mean);
	SAME_DBL(waiting_mean);
	SAME_DBL(memory_pct.token_states);
	SAME_DBL(memory_pct.reservation);
	SAME_DBL(memory_pct.internal_frag);
	SAME_DBL(memory_pct.external_frag);
	SAME_DBL(memory_pct.cached_idle);
	SAME_DBL(memory_pct.free);
	SAME_DBL(ttft_s.p99);
	SAME_DBL(e2e_s.p50);
	return true;
}

/* Blocks the request's n samples need at their final length, unshared:
 * what any allocator that fits the request alone must find. */
static uint64_t own_blocks(const kvs_sim_request_record *r, uint32_t bs)
{
	uint64_t fl = (uint64_t)r->prompt_tokens +
		      (r->output_tokens ? r->output_tokens : 1) - 1;
	return (uint64_t)r->num_samples * ((fl + bs - 1) / bs);
}

static bool fits_alone(const prop_case *pc, const kvs_sim_request_record *r)
{
	uint64_t nblocks = pc->pool_tokens / pc->bs;
	uint64_t wm = (uint64_t)(pc->watermark * (double)nblocks);
	/* + n: a fork's copy-on-write of the shared partial block */
	return r->prompt_tokens > 0 &&
	       (uint64_t)r->prompt_tokens + r->output_tokens <= MML &&
	       r->num_samples <= pc->max_num_seqs &&
	       own_blocks(r, pc->bs) + r->num_samples + wm <= nblocks;
}

static bool is_capacity(kvs_sim_reject why)
{
	return why == KVS_SIM_REJECT_NEVER_FITS || why == KVS_SIM_REJECT_BUDGET ||
	       why == KVS_SIM_REJECT_MAX_LEN;
}

static rec_tab tabs[NPOL][2];

/* One case; false with v->msg on the first property that fails. */
static bool run_case(uint64_t seed, uint32_t bs, bool verbose, verdict *v)
{
	prop_case pc;
	case_of(seed, bs, &pc);
	memset(v, 0, sizeof *v);
	if (verbose)
		case_print(stdout, &pc);
	kvs_request_set *set = NULL;
	if (trace_of(&pc, &set) != KVS_OK)
		return failf(v, "trace: %s", kvs_last_error());
	uint64_t nreq = kvs_request_set_count(set);
	bool ok = nreq <= MAXREQ || failf(v, "trace of %llu requests",
					  (unsigned long long)nreq);
	kvs_sim_stats stats[NPOL][2];
	for (int p = 0; ok && p < NPOL; p++) {
		const char *pol = kvs_policy_name((kvs_policy)p);
		for (int f = 0; ok && f < 2; f++) {
			rec_tab *T = &tabs[p][f];
			memset(T, 0, sizeof *T);
			kvs_sim_config c;
			cfg_of(&pc, (kvs_policy)p, f == 0, &c);
			c.on_request = on_rec;
			c.on_request_ctx = T;
			kvs_request_cursor cur;
			kvs_request_cursor_init(&cur, set, 1.0);
			kvs_request_source src = kvs_request_cursor_source(&cur);
			kvs_sim_result *res = NULL;
			if (kvs_sim_replay(&c, &src, &res) != KVS_OK) {
				ok = failf(v, "%s%s: %s", pol, f ? " (one token at a time)" : "",
					   kvs_last_error());
				break;
			}
			const kvs_sim_stats *st = kvs_sim_result_stats(res);
			stats[p][f] = *st;
			size_t ns = 0;
			const kvs_sim_sample *sm = kvs_sim_result_samples(res, &ns, NULL);
			if (st->arrived != nreq || st->unfinished != 0 ||
			    st->arrived != st->completed + st->rejected + st->unfinished)
				ok = failf(v, "%s: arrived %llu of %llu = completed %llu + "
					   "rejected %llu + unfinished %llu", pol,
					   (unsigned long long)st->arrived,
					   (unsigned long long)nreq,
					   (unsigned long long)st->completed,
					   (unsigned long long)st->rejected,
					   (unsigned long long)st->unfinished);
			ok = ok && parts_ok(v, pol, "time-weighted", &st->memory_pct);
			ok = ok && parts_ok(v, pol, "at peak", &st->memory_peak_pct);
			for (size_t i = 0; ok && i < ns; i++)
				ok = parts_ok(v, pol, "sample", &sm[i].mem);
			for (uint64_t i = 0; ok && i < nreq; i++)
				if (T->count[i] != 1)
					ok = failf(v, "%s: request %llu has %u records", pol,
						   (unsigned long long)i, T->count[i]);
			kvs_sim_result_destroy(res);
		}
		if (ok)
			ok = same_results(v, pol, &stats[p][0], &stats[p][1]);
		if (ok && verbose)
			printf("  %-10s completed %4llu rejected %3llu preemptions %5llu "
			       "steps %7llu\n", pol,
			       (unsigned long long)stats[p][0].completed,
			       (unsigned long long)stats[p][0].rejected,
			       (unsigned long long)stats[p][0].preemptions,
			       (unsigned long long)stats[p][0].steps);
	}
	for (uint64_t i = 0; ok && i < nreq; i++) {
		const kvs_sim_request_record *pg = &tabs[KVS_POLICY_PAGED][0].r[i];
		/* (blocks larger than 16 tokens may hold the request's samples
		 * in more memory than a contiguous region of exact length:
		 * there paged owes it only when its own blocks fit) */
		if (pg->outcome == KVS_SIM_REJECTED && is_capacity(pg->reason) &&
		    (pc.bs <= BS || fits_alone(&pc, pg)))
			for (int p = KVS_POLICY_MAX; ok && p <= KVS_POLICY_ORACLE; p++)
				if (tabs[p][0].r[i].outcome == KVS_SIM_COMPLETED)
					ok = failf(v, "paged rejected request %llu (prompt %u, "
						   "output %u, n %u) as %s; %s served it",
						   (unsigned long long)i, pg->prompt_tokens,
						   pg->output_tokens, pg->num_samples,
						   kvs_sim_reject_name(pg->reason),
						   kvs_policy_name((kvs_policy)p));
		const kvs_policy exact[] = { KVS_POLICY_PAGED, KVS_POLICY_ORACLE };
		for (int k = 0; ok && k < 2; k++) {
			const kvs_sim_request_record *r = &tabs[exact[k]][0].r[i];
			if (r->outcome == KVS_SIM_REJECTED && fits_alone(&pc, r))
				ok = failf(v, "%s rejected request %llu (prompt %u, output "
					   "%u, n %u: %llu blocks of %u) as %s",
					   kvs_policy_name(exact[k]), (unsigned long long)i,
					   r->prompt_tokens, r->output_tokens, r->num_samples,
					   (unsigned long long)own_blocks(r, pc.bs), pc.pool_tokens / pc.bs,
					   kvs_sim_reject_name(r->reason));
		}
	}
	kvs_request_set_destroy(set);
	return ok;
}

static unsigned long env_cases(unsigned long def)
{
	const char *e = getenv("KVS_PROPERTY_CASES");
	return e && *e ? strtoul(e, NULL, 10) : def;
}

static void test_property_short(void **state)
{
	(void)state;
	unsigned long n = kvs_test_scaled(env_cases(12), 3);
	for (uint64_t seed = 1; seed <= n; seed++) {
		verdict v;
		if (!run_case(seed, 0, false, &v)) {
			prop_case pc;
			case_of(seed, 0, &pc);
			case_print(stderr, &pc);
			fail_msg("seed %llu: %s (rerun: scripts/property-long.sh --seed %llu)",
				 (unsigned long long)seed, v.msg, (unsigned long long)seed);
		}
	}
}

/* The checks can fail: a pool the size of one request makes paged reject
 * what a larger pool serves, which the comparison must see. */
static void test_property_detects(void **state)
{
	(void)state;
	verdict v = { 0 };
	kvs_sim_mem_pct m = { 50, -0.04, 0, 0, 0, 50.04 };
	assert_false(parts_ok(&v, "paged", "test", &m));
	assert_true(v.failed);
	assert_non_null(strstr(v.msg, "-0.04"));
	verdict w = { 0 };
	kvs_sim_stats a = { 0 }, b = { 0 };
	a.completed = 3;
	b.completed = 2;
	assert_false(same_results(&w, "paged", &a, &b));
	assert_non_null(strstr(w.msg, "completed 3"));
	kvs_sim_request_record r = { 0 };
	r.prompt_tokens = 1000;
	r.output_tokens = 101;
	r.num_samples = 3;
	prop_case pc = { .bs = 16, .pool_tokens = 3 * 1104 + 3 * 16, .max_num_seqs = 4 };
	assert_int_equal(own_blocks(&r, 16), 3 * 69);
	assert_true(fits_alone(&pc, &r));
	pc.pool_tokens -= 16;
	assert_false(fits_alone(&pc, &r));
}

/* Regressions found by the property test before their fixes: an n = 4
 * family swapped back in (its samples no longer sharing the prompt) ran
 * out of memory alone and was rejected as never_fits, though it fits
 * fresh; oracle served it. */
static void test_property_regressions(void **state)
{
	(void)state;
	static const uint64_t seeds[] = { 43, 120, 195 };
	size_t n = kvs_test_scale() < 1 ? 1 : sizeof seeds / sizeof *seeds;
	for (size_t i = 0; i < n; i++) {
		verdict v;
		if (!run_case(seeds[i], BS, false, &v))
			fail_msg("seed %llu: %s", (unsigned long long)seeds[i], v.msg);
	}
}

/* Hash ids that break the chain rule (an id repeated within one prompt)
 * never abort: the shared prefix ends at the repeat, so a prompt of ids
 * 7 7 7 7 hits one cached block, not the same block three times.  Then a
 * hostile mix (ids drawn from {1, 2, 3}, n = 3, swap, prefix caching, a
 * tiny pool) runs clean under every policy with the validators on. */
static void test_property_repeated_hash_ids(void **state)
{
	(void)state;
	static const uint64_t sevens[4] = { 7, 7, 7, 7 };
	kvs_request_set *set;
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	for (int i = 0; i < 2; i++) {
		kvs_request q;
		memset(&q, 0, sizeof q);
		q.index = (uint64_t)i;
		q.line = (uint64_t)i + 2;
		q.arrival_s = 10.0 * i;
		q.prompt_tokens = 64;
		q.output_tokens = 4;
		q.num_samples = 1;
		q.hash_ids = sevens;
		q.num_hash_ids = 4;
		q.hash_block_tokens = BS;
		assert_int_equal(kvs_request_set_append(set, &q), KVS_OK);
	}
	prop_case pc = { .pool_tokens = 1024, .max_num_seqs = 16,
			 .max_num_batched_tokens = 512, .prefix = true };
	rec_tab *T = &tabs[0][0];
	memset(T, 0, sizeof *T);
	kvs_sim_config c;
	cfg_of(&pc, KVS_POLICY_PAGED, true, &c);
	c.on_request = on_rec;
	c.on_request_ctx = T;
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *res = NULL;
	if (kvs_sim_replay(&c, &src, &res) != KVS_OK)
		fail_msg("replay: %s", kvs_last_error());
	assert_int_equal(kvs_sim_result_stats(res)->completed, 2);
	assert_int_equal(T->r[0].cached_tokens, 0);
	assert_int_equal(T->r[1].cached_tokens, BS);   /* block 0 only */
	kvs_sim_result_destroy(res);
	kvs_request_set_destroy(set);

	/* the hostile mix */
	uint64_t x = 3;
	static uint64_t ids[200][80];
	int nq = (int)kvs_test_scaled(200, 30);
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	double t = 0;
	for (int i = 0; i < nq; i++) {
		kvs_request q;
		memset(&q, 0, sizeof q);
		t += 0.05 * unit(&x);
		q.index = (uint64_t)i;
		q.line = (uint64_t)i + 2;
		q.arrival_s = t;
		q.prompt_tokens = 100 + (uint32_t)(splitmix(&x) % 1100);
		q.output_tokens = 10 + (uint32_t)(splitmix(&x) % 300);
		q.num_samples = 3;
		q.num_hash_ids = q.prompt_tokens / BS;
		for (uint32_t j = 0; j < q.num_hash_ids; j++)
			ids[i][j] = 1 + splitmix(&x) % 3;
		q.hash_ids = ids[i];
		q.hash_block_tokens = BS;
		assert_int_equal(kvs_request_set_append(set, &q), KVS_OK);
	}
	pc.pool_tokens = 3808;
	pc.swap = true;
	pc.swap_share = 0.25;
	for (int p = 0; p < NPOL; p++)
		for (int f = 0; f < 2; f++) {
			cfg_of(&pc, (kvs_policy)p, f == 0, &c);
			kvs_request_cursor_init(&cur, set, 1.0);
			src = kvs_request_cursor_source(&cur);
			res = NULL;
			if (kvs_sim_replay(&c, &src, &res) != KVS_OK)
				fail_msg("%s: %s", kvs_policy_name((kvs_policy)p),
					 kvs_last_error());
			const kvs_sim_stats *st = kvs_sim_result_stats(res);
			assert_int_equal(st->arrived, (uint64_t)nq);
			assert_int_equal(st->completed + st->rejected, (uint64_t)nq);
			kvs_sim_result_destroy(res);
		}
	kvs_request_set_destroy(set);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		/* the long campaign: --first S --cases N, or --seed S */
		uint64_t first = 1, cases = 0, only = 0;
		for (int i = 1; i + 1 < argc; i += 2) {
			uint64_t x = strtoull(argv[i + 1], NULL, 10);
			if (strcmp(argv[i], "--first") == 0)
				first = x;
			else if (strcmp(argv[i], "--cases") == 0)
				cases = x;
			else if (strcmp(argv[i], "--seed") == 0)
				only = x;
			else {
				fprintf(stderr, "usage: %s [--first S --cases N | --seed S]\n",
					argv[0]);
				return 2;
			}
		}
		if (only) {
			verdict v;
			bool ok = run_case(only, 0, true, &v);
			printf("seed %llu: %s%s\n", (unsigned long long)only,
			       ok ? "ok" : "FAIL: ", ok ? "" : v.msg);
			return ok ? 0 : 1;
		}
		unsigned fails = 0;
		for (uint64_t s = first; s < first + cases; s++) {
			verdict v;
			bool ok = run_case(s, 0, false, &v);
			printf("seed %llu: %s%s\n", (unsigned long long)s,
			       ok ? "ok" : "FAIL: ", ok ? "" : v.msg);
			fflush(stdout);
			fails += !ok;
		}
		printf("%llu cases from seed %llu: %u failed\n",
		       (unsigned long long)cases, (unsigned long long)first, fails);
		return fails > 125 ? 125 : (int)fails;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_property_detects),
		cmocka_unit_test(test_property_short),
		cmocka_unit_test(test_property_regressions),
		cmocka_unit_test(test_property_repeated_hash_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
