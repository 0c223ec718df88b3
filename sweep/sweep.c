/*
 * sweep.c - every (policy, block size) combination over one request set,
 * on worker threads, and the capacity search per combination.
 *
 * Work items.  Combination i = policy index x nblock_sizes + block index
 * (policy-major, in the order given).  Each item is one replay (a row) or one
 * capacity search (a bracketing + bisection of replays).  Workers take the
 * next item from a shared counter and write only their own slot, so the
 * result order, and every figure, is the same for any number of threads.
 * Contiguous policies allocate the same at every block size: with
 * dedupe_contiguous they run once (at the first block size) and their rows
 * are repeated, the pool's block count restated for each block size.
 *
 * Capacity search.  Rates form the grid r_k = r_0 (1 + tol)^k, r_0 the
 * trace's mean rate (at cfg.time_scale), reached by scaling the arrivals by
 * (1 + tol)^-k through the cursor.  Bracketing walks k by 1, 2, 4, ... up
 * (or down) until the SLO verdict flips, bisection then narrows the bracket
 * to adjacent grid points: r_lo meets the SLOs and r_lo (1 + tol) does not,
 * by construction.  Cost: about log2(K) + log2(K) replays, K = |k| reached.
 */
#include "kvs_config.h"
#include "sweep_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kvs_sweep_config_defaults(kvs_sweep_config *c, const kvs_sim_config *base)
{
	memset(c, 0, sizeof *c);
	if (base)
		c->base = *base;
	c->npolicies = kvs_policy_count();
	for (size_t p = 0; p < c->npolicies; p++)
		c->policies[p] = (kvs_policy)p;
	for (uint32_t b = 1, i = 0; b <= 256; b *= 2, i++)
		c->block_sizes[i] = b;
	c->nblock_sizes = 9;
	c->time_scale = 1.0;
	c->kernel_block_overhead = 1.0;
	c->kernel_feeds_step_time = true;
	c->dedupe_contiguous = true;
	c->rate_tolerance = 0.02;
	c->rate_max_factor = 1e4;
	c->kernel_cost_margin = 0.05;
}

/* Split text at commas into trimmed items; calls fn for each. */
static kvs_status each_item(const char *text, const char *what,
			    kvs_status (*fn)(const char *item, void *ctx), void *ctx)
{
	if (!text || !*text)
		return kvs_fail(KVS_ERR_INVALID, "%s: empty list", what);
	const char *p = text;
	for (;;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char item[64];
		while (n && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0)
			return kvs_fail(KVS_ERR_INVALID, "%s: empty item in '%s'", what, text);
		if (n >= sizeof item)
			return kvs_fail(KVS_ERR_INVALID, "%s: item too long in '%s'", what, text);
		memcpy(item, p, n);
		item[n] = '\0';
		kvs_status st = fn(item, ctx);
		if (st != KVS_OK)
			return st;
		if (!e)
			return KVS_OK;
		p = e + 1;
	}
}

static kvs_status add_block(const char *item, void *ctx)
{
	kvs_sweep_config *c = ctx;
	char *end;
	unsigned long long v = strtoull(item, &end, 10);
	if (*end || item[0] == '-' || item[0] == '+' || v == 0 ||
	    v > KVS_SWEEP_MAX_BLOCK_SIZE)
		return kvs_fail(KVS_ERR_INVALID, "block size '%s': expected an integer "
				"1..%u", item, KVS_SWEEP_MAX_BLOCK_SIZE);
	for (size_t i = 0; i < c->nblock_sizes; i++)
		if (c->block_sizes[i] == v)
			return kvs_fail(KVS_ERR_INVALID, "block size %llu given twice", v);
	if (c->nblock_sizes == KVS_SWEEP_MAX_BLOCK_SIZES)
		return kvs_fail(KVS_ERR_INVALID, "more than %d block sizes",
				KVS_SWEEP_MAX_BLOCK_SIZES);
	c->block_sizes[c->nblock_sizes++] = (uint32_t)v;
	return KVS_OK;
}

kvs_status kvs_sweep_parse_block_sizes(const char *text, kvs_sweep_config *c)
{
	kvs_sweep_config tmp = *c;
	tmp.nblock_sizes = 0;
	kvs_status st = each_item(text, "block sizes", add_block, &tmp);
	if (st == KVS_OK)
		*c = tmp;
	return st;
}

kvs_status kvs_sweep_parse_policies(const char *text, kvs_sweep_config *c)
{
	return kvs_policy_parse_list(text, c->policies, KVS_POLICY_CAP, &c->npolicies);
}

static kvs_status check_config(const kvs_sweep_config *c)
{
	if (c->npolicies == 0 || c->npolicies > KVS_POLICY_CAP)
		return kvs_fail(KVS_ERR_INVALID, "sweep: no policies");
	for (size_t i = 0; i < c->npolicies; i++)
		if (!kvs_policy_get(c->policies[i]))
			return kvs_fail(KVS_ERR_INVALID, "sweep: unknown policy %d",
					(int)c->policies[i]);
	if (c->nblock_sizes == 0 || c->nblock_sizes > KVS_SWEEP_MAX_BLOCK_SIZES)
		return kvs_fail(KVS_ERR_INVALID, "sweep: no block sizes");
	for (size_t i = 0; i < c->nblock_sizes; i++)
		if (c->block_sizes[i] == 0 || c->block_sizes[i] > KVS_SWEEP_MAX_BLOCK_SIZE)
			return kvs_fail(KVS_ERR_INVALID, "sweep: block size %u out of range",
					c->block_sizes[i]);
	if (!(c->time_scale > 0) || !isfinite(c->time_scale))
		return kvs_fail(KVS_ERR_INVALID, "sweep: time scale must be > 0");
	if (!(c->kernel_block_overhead >= 0) || !isfinite(c->kernel_block_overhead))
		return kvs_fail(KVS_ERR_INVALID, "sweep: kernel block overhead must be >= 0");
	if (!(c->kernel_cost_margin >= 0) || !isfinite(c->kernel_cost_margin))
		return kvs_fail(KVS_ERR_INVALID, "sweep: kernel cost margin must be >= 0");
	if (!(c->slo_ttft_s >= 0) || !(c->slo_tpot_s >= 0))
		return kvs_fail(KVS_ERR_INVALID, "sweep: SLOs must be >= 0");
	if (c->find_max_rate) {
		if (c->slo_ttft_s == 0 && c->slo_tpot_s == 0)
			return kvs_fail(KVS_ERR_INVALID, "capacity search needs an SLO: give "
					"--slo-ttft and/or --slo-tpot");
		if (!(c->rate_tolerance >= 1e-4 && c->rate_tolerance <= 1))
			return kvs_fail(KVS_ERR_INVALID, "rate tolerance %g: must be in "
					"[0.0001, 1]", c->rate_tolerance);
		if (!(c->rate_max_factor >= 1 + c->rate_tolerance) ||
		    !isfinite(c->rate_max_factor))
			return kvs_fail(KVS_ERR_INVALID, "rate search range %g: must be > 1 + "
					"tolerance", c->rate_max_factor);
	}
	return KVS_OK;
}

kvs_status kvs_sweep_check(const kvs_sweep_config *c, const kvs_request_set *set)
{
	kvs_status st = check_config(c);
	if (st != KVS_OK)
		return st;
	if (!c->base.enable_prefix_caching)
		return KVS_OK;
	bool uses_hashes = false;
	for (size_t i = 0; i < c->npolicies; i++)
		uses_hashes |= kvs_policy_has(c->policies[i], KVS_TRAIT_PREFIX_HASHES);
	if (!uses_hashes)
		return KVS_OK;
	uint64_t n = kvs_request_set_count(set);
	const char *path = kvs_request_set_path(set);
	for (uint64_t i = 0; i < n; i++) {
		const kvs_request *q = kvs_request_set_get(set, i);
		uint32_t g = q->hash_block_tokens;
		if (!q->hash_ids || !q->num_hash_ids || !g)
			continue;
		for (size_t j = 0; j < c->nblock_sizes; j++) {
			uint32_t b = c->block_sizes[j];
			if (g % b == 0 && g > b) {
				/* a split names sub-block j of id as id * k + j: an id
				 * too large for that is refused now, with its line */
				uint64_t k = g / b, v;
				for (uint32_t h = 0; h < q->num_hash_ids; h++)
					if (kvs_mul_overflow(q->hash_ids[h], k, &v) ||
					    kvs_add_overflow(v, k - 1, &v))
						return kvs_fail(KVS_ERR_INVALID,
								"%s%sline %llu: hash_ids: id %llu is "
								"too large to split into %llu "
								"blocks of %u tokens (ids must stay "
								"below 2^64 / %llu); drop %u from "
								"--block-sizes",
								path ? path : "", path ? ": " : "",
								(unsigned long long)q->line,
								(unsigned long long)q->hash_ids[h],
								(unsigned long long)k, b,
								(unsigned long long)k, b);
				continue;
			}
			if (g % b == 0 || b % g == 0)
				continue;
			return kvs_fail(KVS_ERR_INVALID,
					"%s%sline %llu: block size %u cannot be used with this "
					"trace's hash ids, which name blocks of %u tokens: a "
					"block size must divide %u (or be a multiple of it) for "
					"prefix caching to reuse them; drop %u from "
					"--block-sizes or turn prefix caching off",
					path ? path : "", path ? ": " : "",
					(unsigned long long)q->line, b, g, g, b);
		}
	}
	return KVS_OK;
}

kvs_status kvs_sweep_row_sim_config(const kvs_sweep_config *c,
				    const kvs_request_set *set, kvs_policy policy,
				    uint32_t block_size, kvs_sim_config *out)
{
	kvs_sweep_workload w;
	kvs_sweep_workload_init(&w, set);
	kvs_sweep_kernel k;
	kvs_status st = kvs_sweep_kernel_ws(c, &w, policy, block_size, &k);
	if (st != KVS_OK)
		return st;
	kvs_sim_config sc = c->base;
	sc.policy = policy;
	sc.deploy.block_size = block_size;
	sc.slo_ttft_s = c->slo_ttft_s;
	sc.slo_tpot_s = c->slo_tpot_s;
	sc.on_request = NULL;
	sc.on_progress = NULL;
	sc.record_wall_time = false;
	if ((st = kvs_sweep_apply_kernel(c, k.rel, &sc)) != KVS_OK)
		return st;
	*out = sc;
	return KVS_OK;
}

/* ---- points ---------------------------------------------------------------
 * A point is one simulated combination: its row's replay and, with
 * find_max_rate, its capacity search.  kvs_sweep_run runs every point on
 * threads; `kvsim sweep --from-plan` runs some of them in another process
 * (sweep/plan.c).  Both go through kvs_sweep_point_run, so a merged sweep
 * and a threaded one hold the same figures. */

/* The progress hook of one point's replays. */
typedef struct ticker {
	void (*fn)(void *ctx, const kvs_sweep_tick *t);
	void *ctx;
	size_t point;
	double rate0;               /* requests/s at time scale 1 */
	bool probe;
} ticker;

static void tick_at(const ticker *tk, double time_scale, bool end)
{
	if (!tk || !tk->fn)
		return;
	kvs_sweep_tick t = { tk->point, time_scale > 0 ? tk->rate0 / time_scale : 0,
			     tk->probe, end };
	tk->fn(tk->ctx, &t);
}

static bool raised(const kvs_sim_config *sc)
{
	return sc->interrupt && *sc->interrupt;
}

/* One replay of the set at time_scale; KVS_ERR_STATE when the interrupt
 * stopped it (its figures are partial). */
static kvs_status replay(const kvs_sim_config *sc, const kvs_request_set *set,
			 double time_scale, const ticker *tk, kvs_sim_stats *out)
{
	if (raised(sc))
		return kvs_fail(KVS_ERR_STATE, "interrupted");
	tick_at(tk, time_scale, false);
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, time_scale);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *r = NULL;
	kvs_status st = kvs_sim_replay(sc, &src, &r);
	if (st != KVS_OK)
		return st;
	bool cut = kvs_sim_result_stats(r)->interrupted;
	*out = *kvs_sim_result_stats(r);
	kvs_sim_result_destroy(r);
	if (cut)
		return kvs_fail(KVS_ERR_STATE, "interrupted");
	tick_at(tk, time_scale, true);
	return KVS_OK;
}

static bool slo_holds(const kvs_sweep_config *c, const kvs_sim_stats *st)
{
	return kvs_sim_stats_meet_slo(st, c->slo_ttft_s, c->slo_tpot_s);
}

static kvs_status capacity_search(const kvs_sweep_work *w, const kvs_sweep_point *pt,
				  const ticker *tk, kvs_sweep_capacity *cap)
{
	const kvs_sweep_config *c = &w->res->cfg;
	double step = 1.0 + c->rate_tolerance;
	int64_t kmax = (int64_t)ceil(log(c->rate_max_factor) / log(step));
	double r0 = w->res->base_rate;
	kvs_sim_stats st, best;
	bool have_best = false;
	int64_t lo = 0, hi = 0;
	uint32_t sims = 0;
	kvs_status s;
	memset(&best, 0, sizeof best);
#define PROBE(k, ok) do { \
		s = replay(&pt->sc, w->set, c->time_scale * pow(step, -(double)(k)), tk, &st); \
		if (s != KVS_OK) { \
			cap->simulations = sims;  /* the probes that finished */ \
			return s; \
		} \
		sims++; \
		(ok) = slo_holds(c, &st); \
	} while (0)
	bool ok;
	PROBE(0, ok);
	cap->outcome = KVS_CAPACITY_FOUND;
	if (ok) {
		best = st;
		have_best = true;
		int64_t d = 1;
		for (;;) {
			int64_t k = lo + d > kmax ? kmax : lo + d;
			PROBE(k, ok);
			if (!ok) {
				hi = k;
				break;
			}
			lo = k;
			best = st;
			if (k == kmax) {
				cap->outcome = KVS_CAPACITY_UNBOUNDED;
				hi = k;
				break;
			}
			d *= 2;
		}
	} else {
		int64_t d = 1;
		for (;;) {
			int64_t k = hi - d < -kmax ? -kmax : hi - d;
			PROBE(k, ok);
			if (ok) {
				lo = k;
				best = st;
				have_best = true;
				break;
			}
			hi = k;
			if (k == -kmax) {
				cap->outcome = KVS_CAPACITY_UNATTAINABLE;
				lo = k;
				break;
			}
			d *= 2;
		}
	}
	if (cap->outcome == KVS_CAPACITY_FOUND) {
		while (hi - lo > 1) {
			int64_t mid = lo + (hi - lo) / 2;
			PROBE(mid, ok);
			if (ok) {
				lo = mid;
				best = st;
			} else {
				hi = mid;
			}
		}
	}
#undef PROBE
	uint32_t gpus = (c->base.deploy.tp ? c->base.deploy.tp : 1) *
			(c->base.deploy.pp ? c->base.deploy.pp : 1);
	cap->policy = pt->policy;
	cap->block_size = pt->block_size;
	cap->tolerance = c->rate_tolerance;
	cap->simulations = sims;
	if (cap->outcome == KVS_CAPACITY_UNATTAINABLE || !have_best) {
		cap->max_rate = 0;
		cap->fail_rate = r0 * pow(step, (double)-kmax);
		cap->time_scale = 0;
		return KVS_OK;
	}
	cap->max_rate = r0 * pow(step, (double)lo);
	cap->fail_rate = cap->outcome == KVS_CAPACITY_FOUND ? r0 * pow(step, (double)hi) : 0;
	cap->time_scale = c->time_scale * pow(step, -(double)lo);
	cap->ttft_p99_s = best.ttft_s.p99;
	cap->tpot_p99_s = best.tpot_s.p99;
	cap->concurrency_mean = best.concurrency_mean;
	cap->conversations_per_gpu = best.concurrency_mean / gpus;
	cap->requests_per_s_per_gpu = cap->max_rate / gpus;
	cap->output_tokens_per_s = best.output_tokens_per_s;
	return KVS_OK;
}

kvs_status kvs_sweep_point_run(const kvs_sweep_work *w, size_t p,
			       void (*tick)(void *ctx, const kvs_sweep_tick *t), void *ctx,
			       kvs_sweep_point_result *out)
{
	if (p >= w->npoints)
		return kvs_fail(KVS_ERR_INVALID, "point %zu: the sweep has %zu points",
				p, w->npoints);
	const kvs_sweep_point *pt = &w->points[p];
	const kvs_sweep_config *c = &w->res->cfg;
	/* base_rate is the trace's rate at c->time_scale */
	ticker tk = { tick, ctx, p, w->res->base_rate * c->time_scale, false };
	kvs_sweep_point_result r;
	memset(&r, 0, sizeof r);
	kvs_status st = replay(&pt->sc, w->set, c->time_scale, &tk, &r.st);
	if (st != KVS_OK)
		return st;
	r.simulations = 1;
	if (c->find_max_rate) {
		tk.probe = true;
		st = capacity_search(w, pt, &tk, &r.cap);
		if (st != KVS_OK && !raised(&pt->sc))
			return st;
		if (st != KVS_OK) {
			/* interrupted: the row stands, the search does not; the
			 * probes that finished still count as simulations run */
			r.simulations += r.cap.simulations;
			memset(&r.cap, 0, sizeof r.cap);
			r.cap.policy = pt->policy;
			r.cap.block_size = pt->block_size;
		}
		r.simulations += r.cap.simulations;
	}
	*out = r;
	return KVS_OK;
}

void kvs_sweep_point_store(kvs_sweep_work *w, size_t p, const kvs_sweep_point_result *r)
{
	kvs_require(p < w->npoints);
	size_t i = w->points[p].row;
	w->res->rows[i].st = r->st;
	w->res->rows[i].done = true;
	if (w->res->caps)
		w->res->caps[i] = r->cap;
	w->res->simulations += r->simulations;
	w->res->points_replayed++;
	if (!w->res->caps || r->cap.simulations > 0)
		w->res->points_done++;
	else
		w->res->interrupted = true;
}

void kvs_sweep_work_free(kvs_sweep_work *w)
{
	kvs_free(w->points);
	kvs_sweep_result_destroy(w->res);
	memset(w, 0, sizeof *w);
}

kvs_status kvs_sweep_work_init(const kvs_sweep_config *cfg, const kvs_request_set *set,
			       kvs_sweep_work *w)
{
	memset(w, 0, sizeof *w);
	if (!cfg || !set)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sweep_run: NULL argument");
	kvs_status st = kvs_sweep_check(cfg, set);
	if (st != KVS_OK)
		return st;
	uint64_t nreq = kvs_request_set_count(set);
	if (nreq == 0)
		return kvs_fail(KVS_ERR_INVALID, "%s: the trace has no requests to sweep",
				kvs_request_set_path(set) ? kvs_request_set_path(set) : "trace");
	kvs_sweep_result *R = kvs_calloc(1, sizeof *R);
	size_t n = cfg->npolicies * cfg->nblock_sizes;
	w->set = set;
	w->res = R;
	w->points = kvs_calloc(n, sizeof *w->points);
	if (!R || !w->points) {
		st = kvs_fail(KVS_ERR_NOMEM, "out of memory");
		goto fail;
	}
	R->cfg = *cfg;
	R->rows = kvs_calloc(n, sizeof *R->rows);
	R->nrows = n;
	if (cfg->find_max_rate) {
		R->caps = kvs_calloc(n, sizeof *R->caps);
		R->ncaps = n;
	}
	if (!R->rows || (cfg->find_max_rate && !R->caps)) {
		st = kvs_fail(KVS_ERR_NOMEM, "out of memory");
		goto fail;
	}
	kvs_sweep_workload wl;
	kvs_sweep_workload_init(&wl, set);
	R->mean_context = wl.mean_context;
	R->hash_block_tokens = wl.hash_block_tokens;
	R->requests = nreq;
	double first = kvs_request_set_get(set, 0)->arrival_s;
	double last = kvs_request_set_get(set, nreq - 1)->arrival_s;
	R->base_rate = nreq > 1 && last > first
		       ? (double)(nreq - 1) / ((last - first) * cfg->time_scale) : 0;
	if (cfg->find_max_rate && !(R->base_rate > 0)) {
		st = kvs_fail(KVS_ERR_INVALID, "capacity search needs a trace with at least "
			      "two distinct arrival times (its rate is scaled)");
		goto fail;
	}
	for (size_t p = 0; p < cfg->npolicies; p++) {
		for (size_t b = 0; b < cfg->nblock_sizes; b++) {
			size_t i = p * cfg->nblock_sizes + b;
			kvs_sweep_row *row = &R->rows[i];
			row->policy = cfg->policies[p];
			row->block_size = cfg->block_sizes[b];
			row->repeated = cfg->dedupe_contiguous && b > 0 &&
					!kvs_policy_has(row->policy, KVS_TRAIT_BLOCK_GRANULAR);
			st = kvs_sweep_kernel_ws(cfg, &wl, row->policy, row->block_size,
						 &row->kernel);
			if (st != KVS_OK)
				goto fail;
			if (row->repeated)
				continue;
			kvs_sim_config sc = cfg->base;
			sc.policy = row->policy;
			sc.deploy.block_size = row->block_size;
			sc.slo_ttft_s = cfg->slo_ttft_s;
			sc.slo_tpot_s = cfg->slo_tpot_s;
			sc.on_request = NULL;
			sc.on_progress = NULL;
			sc.record_wall_time = false;
			st = kvs_sweep_apply_kernel(cfg, row->kernel.rel, &sc);
			if (st != KVS_OK)
				goto fail;
			kvs_sweep_point *pt = &w->points[w->npoints++];
			pt->row = i;
			pt->policy = row->policy;
			pt->block_size = row->block_size;
			pt->sc = sc;
		}
	}
	R->points_total = w->npoints;
	return KVS_OK;
fail:
	kvs_sweep_work_free(w);
	return st;
}

kvs_status kvs_sweep_work_finish(kvs_sweep_work *w, kvs_sweep_result **out)
{
	kvs_sweep_result *R = w->res;
	const kvs_sweep_config *cfg = &R->cfg;
	/* repeat contiguous rows across block sizes, as a replay there reports */
	for (size_t p = 0; p < cfg->npolicies; p++) {
		size_t i0 = p * cfg->nblock_sizes;
		for (size_t b = 1; b < cfg->nblock_sizes; b++) {
			size_t i = i0 + b;
			kvs_sweep_row *row = &R->rows[i];
			if (!row->repeated || !R->rows[i0].done)
				continue;
			row->st = R->rows[i0].st;
			row->done = true;
			uint64_t per = (uint64_t)row->block_size * row->st.kv_bytes_per_token;
			row->st.num_blocks = per ? row->st.kv_budget_bytes / per : 0;
			if (R->caps && R->caps[i0].simulations > 0) {
				R->caps[i] = R->caps[i0];
				R->caps[i].block_size = row->block_size;
				R->caps[i].repeated = true;
			}
		}
	}
	for (size_t i = 0; i < R->nrows; i++)
		R->rows[i].meets_slo = R->rows[i].done && slo_holds(cfg, &R->rows[i].st);
	R->interrupted |= R->points_done < R->points_total;
	kvs_status st = kvs_sweep_recommend(R);
	if (st != KVS_OK) {
		kvs_sweep_work_free(w);
		return st;
	}
	w->res = NULL;
	kvs_sweep_work_free(w);
	*out = R;
	return KVS_OK;
}

/* ---- threads ---------------------------------------------------------------- */

typedef struct slot {
	kvs_sweep_point_result r;
	kvs_status st;
	char err[512];
} slot;

typedef struct job {
	const kvs_sweep_work *w;
	slot *slots;
	atomic_size_t next;
	atomic_bool failed;
	pthread_mutex_t lock;
	kvs_sweep_progress pr;      /* under lock */
	void (*on_progress)(void *ctx, const kvs_sweep_progress *p);
	void *on_progress_ctx;
} job;

static void tick(void *arg, const kvs_sweep_tick *t)
{
	job *J = arg;
	if (!J->on_progress)
		return;
	pthread_mutex_lock(&J->lock);
	if (t->end) {
		J->pr.simulations++;
	} else {
		J->pr.policy = J->w->points[t->point].policy;
		J->pr.block_size = J->w->points[t->point].block_size;
		J->pr.rate = t->rate;
		J->pr.probe = t->probe;
	}
	J->on_progress(J->on_progress_ctx, &J->pr);
	pthread_mutex_unlock(&J->lock);
}

static void point_done(job *J)
{
	if (!J->on_progress)
		return;
	pthread_mutex_lock(&J->lock);
	J->pr.points_done++;
	J->on_progress(J->on_progress_ctx, &J->pr);
	pthread_mutex_unlock(&J->lock);
}

static void *worker(void *arg)
{
	job *J = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&J->next, 1);
		if (i >= J->w->npoints)
			break;
		slot *sl = &J->slots[i];
		const kvs_sim_config *sc = &J->w->points[i].sc;
		if (atomic_load(&J->failed) || raised(sc)) {
			/* stop early; a lower index may still be running */
			sl->st = KVS_ERR_STATE;
			snprintf(sl->err, sizeof sl->err, "not run: %s",
				 raised(sc) ? "interrupted" : "an earlier combination failed");
			continue;
		}
		kvs_clear_error();
		sl->st = kvs_sweep_point_run(J->w, i, tick, J, &sl->r);
		if (sl->st != KVS_OK && raised(sc)) {
			/* the interrupt stopped it: not run, not a failure */
			sl->st = KVS_ERR_STATE;
			snprintf(sl->err, sizeof sl->err, "not run: interrupted");
		} else if (sl->st != KVS_OK) {
			snprintf(sl->err, sizeof sl->err, "%s", kvs_last_error());
			atomic_store(&J->failed, true);
		} else if (!J->w->res->cfg.find_max_rate || sl->r.cap.simulations > 0) {
			point_done(J);
		}
	}
	return NULL;
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/* Points [0, npoints) on jobs threads (the caller's one of them). */
static kvs_status run_points(job *J, unsigned jobs)
{
	size_t work = J->w->npoints;
	if (jobs > work)
		jobs = work ? (unsigned)work : 1;
	atomic_store(&J->next, 0);
	atomic_store(&J->failed, false);
	pthread_t *th = kvs_calloc(jobs, sizeof *th);
	if (!th)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	unsigned started = 0;
	for (unsigned t = 1; t < jobs; t++) {
		if (pthread_create(&th[t], NULL, worker, J) != 0)
			break;      /* fewer threads is still correct */
		started++;
	}
	worker(J);          /* the calling thread works too */
	for (unsigned t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	kvs_free(th);
	/* the failure of the lowest index, so messages do not depend on timing */
	for (size_t i = 0; i < work; i++) {
		const slot *sl = &J->slots[i];
		if (sl->st != KVS_OK && strncmp(sl->err, "not run:", 8) != 0)
			return kvs_fail(sl->st, "%s, block size %u: %s",
					kvs_policy_name(J->w->points[i].policy),
					J->w->points[i].block_size, sl->err);
	}
	return KVS_OK;
}

kvs_status kvs_sweep_run(const kvs_sweep_config *cfg, const kvs_request_set *set,
			 kvs_sweep_result **out)
{
	return kvs_sweep_run_ex(cfg, set, NULL, NULL, out);
}

kvs_status kvs_sweep_run_ex(const kvs_sweep_config *cfg, const kvs_request_set *set,
			    void (*on_progress)(void *ctx, const kvs_sweep_progress *p),
			    void *ctx, kvs_sweep_result **out)
{
	if (!out)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sweep_run: NULL argument");
	kvs_sweep_work w;
	kvs_status st = kvs_sweep_work_init(cfg, set, &w);
	if (st != KVS_OK)
		return st;
	job J;
	memset(&J, 0, sizeof J);
	J.w = &w;
	J.slots = kvs_calloc(w.npoints ? w.npoints : 1, sizeof *J.slots);
	if (!J.slots) {
		kvs_sweep_work_free(&w);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	J.on_progress = on_progress;
	J.on_progress_ctx = ctx;
	J.pr.points_total = w.npoints;
	pthread_mutex_init(&J.lock, NULL);
	st = run_points(&J, cfg->jobs ? cfg->jobs : online_cpus());
	pthread_mutex_destroy(&J.lock);
	/* an interrupted sweep keeps the points that finished */
	for (size_t p = 0; st == KVS_OK && p < w.npoints; p++)
		if (J.slots[p].st == KVS_OK)
			kvs_sweep_point_store(&w, p, &J.slots[p].r);
	kvs_free(J.slots);
	if (st != KVS_OK) {
		kvs_sweep_work_free(&w);
		return st;
	}
	return kvs_sweep_work_finish(&w, out);
}

void kvs_sweep_result_destroy(kvs_sweep_result *r)
{
	if (!r)
		return;
	kvs_free(r->rows);
	kvs_free(r->caps);
	kvs_free(r);
}

const kvs_sweep_config *kvs_sweep_result_config(const kvs_sweep_result *r)
{
	return &r->cfg;
}

size_t kvs_sweep_result_rows(const kvs_sweep_result *r)
{
	return r->nrows;
}

const kvs_sweep_row *kvs_sweep_result_row(const kvs_sweep_result *r, size_t i)
{
	return i < r->nrows ? &r->rows[i] : NULL;
}

size_t kvs_sweep_result_capacities(const kvs_sweep_result *r)
{
	return r->ncaps;
}

const kvs_sweep_capacity *kvs_sweep_result_capacity(const kvs_sweep_result *r, size_t i)
{
	return i < r->ncaps ? &r->caps[i] : NULL;
}

const kvs_sweep_recommendation *kvs_sweep_result_recommendation(
	const kvs_sweep_result *r, kvs_sweep_objective o)
{
	return (unsigned)o < KVS_OBJ_COUNT_ ? &r->rec[o] : NULL;
}

double kvs_sweep_result_base_rate(const kvs_sweep_result *r)
{
	return r->base_rate;
}

uint64_t kvs_sweep_result_simulations(const kvs_sweep_result *r)
{
	return r->simulations;
}

size_t kvs_sweep_result_points_replayed(const kvs_sweep_result *r)
{
	return r->points_replayed;
}

bool kvs_sweep_result_interrupted(const kvs_sweep_result *r, size_t *points_done,
				  size_t *points_total)
{
	if (points_done)
		*points_done = r->points_done;
	if (points_total)
		*points_total = r->points_total;
	return r->interrupted;
}

double kvs_sweep_row_waste_pct(const kvs_sweep_row *row)
{
	return row->st.memory_pct.reservation + row->st.memory_pct.internal_frag +
	       row->st.memory_pct.external_frag;
}

const char *kvs_capacity_outcome_name(kvs_capacity_outcome o)
{
	switch (o) {
	case KVS_CAPACITY_FOUND: return "found";
	case KVS_CAPACITY_UNBOUNDED: return "unbounded";
	case KVS_CAPACITY_UNATTAINABLE: return "unattainable";
	}
	return "unknown";
}
