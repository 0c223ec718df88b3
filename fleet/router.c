/*
 * router.c - the routers of a fleet, behind one method table.
 *
 * Each router is a row of `routers` below: its name, its help line, the
 * parameters it takes (NAME=VALUE after a colon, defaults in the row) and
 * its pick method.  Names, help and the parameter check are generated from
 * the rows, so adding a router is adding a row and a pick function.
 *
 * Every pick is deterministic: ties go to the lowest replica index, and
 * `random` draws from its own seeded generator (splitmix64).  Cost: O(n)
 * per pick over the n replicas; the prefix-reading routers add one prefix
 * lookup per replica (O(prompt blocks) each).
 */
#include "kvsim/fleet.h"
#include "common/mix.h"
#include "common/num.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROUTER_MAX_PARAMS 3

typedef struct router_param {
	const char *name;
	double def;
	double min;    /* accepted range [min, max] (max 0: unbounded) */
	double max;
	const char *help;
} router_param;

typedef struct router_ops {
	uint32_t (*pick)(kvs_router *r, const kvs_router_view *v);
} router_ops;

typedef struct router_row {
	const char *name;
	const char *help;
	const router_ops *ops;
	unsigned needs;         /* KVS_ROUTER_NEEDS_* (score: those weighted) */
	double refresh_s;       /* the signals' refresh when the fleet gives none */
	router_param params[ROUTER_MAX_PARAMS];
} router_row;

struct kvs_router {
	const router_row *row;
	double p[ROUTER_MAX_PARAMS];    /* parameter values, in row order */
	uint64_t next;                  /* round-robin: next replica */
	uint64_t rng;                   /* random: splitmix64 state */
	char spec[160];
};

/* ---- picks ------------------------------------------------------------------- */

static uint32_t pick_round_robin(kvs_router *r, const kvs_router_view *v)
{
	return (uint32_t)(r->next++ % v->n);
}

/* splitmix64's step: the mixer of common/mix.h over a golden-ratio walk */
static uint64_t splitmix64(uint64_t *x)
{
	return kvs_mix64(*x += KVS_GOLDEN64);
}

static uint32_t pick_random(kvs_router *r, const kvs_router_view *v)
{
	/* the high 32 bits scaled to [0, n): bias under n / 2^32 */
	return (uint32_t)(((splitmix64(&r->rng) >> 32) * (uint64_t)v->n) >> 32);
}

static uint32_t least_outstanding(const kvs_router_view *v)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < v->n; i++)
		if (v->outstanding[i] < v->outstanding[best])
			best = i;
	return best;
}

static uint32_t pick_least_requests(kvs_router *r, const kvs_router_view *v)
{
	return least_outstanding(v);
}

/* Lowest KV use; ties to fewer outstanding requests, then lower index. */
static uint32_t least_kv(const kvs_router_view *v)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < v->n; i++)
		if (v->kv_usage[i] < v->kv_usage[best] ||
		    (v->kv_usage[i] == v->kv_usage[best] &&
		     v->outstanding[i] < v->outstanding[best]))
			best = i;
	return best;
}

/* The fewest and the most outstanding requests over the replicas. */
static void outstanding_range(const kvs_router_view *v, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = v->outstanding[0];
	for (uint32_t i = 1; i < v->n; i++) {
		if (v->outstanding[i] < *lo)
			*lo = v->outstanding[i];
		if (v->outstanding[i] > *hi)
			*hi = v->outstanding[i];
	}
}

static uint32_t pick_least_kv(kvs_router *r, const kvs_router_view *v)
{
	return least_kv(v);
}

/* SGLang's cache-aware policy: while the load is imbalanced (the most
 * loaded replica has more than balance-abs requests beyond the least
 * loaded and more than balance-rel times its count) route to the least
 * loaded; otherwise to the replica with the longest cached prefix when its
 * match ratio reaches cache-threshold, else to the one with the most free
 * cache (SGLang: the smallest tree; here the lowest KV use). */
static uint32_t pick_prefix(kvs_router *r, const kvs_router_view *v)
{
	double threshold = r->p[0], abs_t = r->p[1], rel_t = r->p[2];
	uint64_t lo, hi;
	outstanding_range(v, &lo, &hi);
	if ((double)(hi - lo) > abs_t && (double)hi > rel_t * (double)lo)
		return least_outstanding(v);
	uint32_t best = 0, best_hit = 0;
	if (v->request_blocks && v->prefix_of) {
		for (uint32_t i = 0; i < v->n; i++) {
			uint32_t h = v->prefix_of(v->ctx, i);
			if (h > best_hit) {
				best_hit = h;
				best = i;
			}
		}
	}
	if (v->request_blocks && best_hit > 0 &&
	    (double)best_hit / (double)v->request_blocks >= threshold)
		return best;
	return least_kv(v);
}

/* llm-d style: score = sum of weight x scorer, each scorer in [0, 1]:
 * prefix = cached share of the prompt's blocks; queue = (max - q) /
 * (max - min) over the replicas' outstanding requests (1 when all equal);
 * kv = 1 - KV use.  Highest score wins, ties to the lower index. */
static uint32_t pick_score(kvs_router *r, const kvs_router_view *v)
{
	double wp = r->p[0], wq = r->p[1], wk = r->p[2];
	uint64_t lo, hi;
	outstanding_range(v, &lo, &hi);
	bool read_prefix = wp > 0 && v->request_blocks && v->prefix_of;
	uint32_t best = 0;
	double best_s = -INFINITY;
	for (uint32_t i = 0; i < v->n; i++) {
		double s = 0;
		if (read_prefix)
			s += wp * (double)v->prefix_of(v->ctx, i) / (double)v->request_blocks;
		if (wq > 0)
			s += wq * (hi == lo ? 1.0 : (double)(hi - v->outstanding[i]) /
						    (double)(hi - lo));
		if (wk > 0)
			s += wk * (1.0 - v->kv_usage[i]);
		if (s > best_s) {
			best_s = s;
			best = i;
		}
	}
	return best;
}

/* vLLM's internal data-parallel balancer (DPLBAsyncMPClient): the
 * lowest 4 x waiting + running, the first lowest in rank order. */
static uint32_t pick_vllm_dp(kvs_router *r, const kvs_router_view *v)
{
	uint32_t best = 0;
	uint64_t best_s = UINT64_MAX;
	for (uint32_t i = 0; i < v->n; i++) {
		uint64_t s = 4 * v->waiting[i] + v->running[i];
		if (s < best_s) {
			best_s = s;
			best = i;
		}
	}
	return best;
}

static const router_ops ops_round_robin = { pick_round_robin };
static const router_ops ops_random = { pick_random };
static const router_ops ops_least_requests = { pick_least_requests };
static const router_ops ops_least_kv = { pick_least_kv };
static const router_ops ops_prefix = { pick_prefix };
static const router_ops ops_score = { pick_score };
static const router_ops ops_vllm_dp = { pick_vllm_dp };

/* ---- the registry --------------------------------------------------------------- */

static const router_row routers[] = {
	{ "round-robin", "replicas in turn (Vidur's round_robin)", &ops_round_robin, 0, 0, { { 0 } } },
	{ "random", "uniform at random, seeded by --seed (Vidur's random)", &ops_random, 0, 0,
	  { { 0 } } },
	{ "least-requests", "fewest outstanding requests (Vidur's lor; vLLM production "
	  "stack's session-less default)", &ops_least_requests, KVS_ROUTER_NEEDS_QUEUE, 0,
	  { { 0 } } },
	{ "least-kv", "lowest KV block use (vLLM's gpu_cache_usage)", &ops_least_kv,
	  KVS_ROUTER_NEEDS_QUEUE | KVS_ROUTER_NEEDS_KV, 0, { { 0 } } },
	{ "prefix", "longest cached prefix of the prompt's blocks, with SGLang's "
	  "cache-aware load-imbalance guard", &ops_prefix,
	  KVS_ROUTER_NEEDS_QUEUE | KVS_ROUTER_NEEDS_KV | KVS_ROUTER_NEEDS_PREFIX, 0,
	  { { "cache-threshold", 0.3, 0, 1, "match ratio that routes by prefix" },
	    { "balance-abs", 64, 0, 0, "imbalance: max - min outstanding above this" },
	    { "balance-rel", 1.5, 0, 0, "and max above this times min" } } },
	{ "score", "weighted sum of normalised scorers (llm-d inference scheduler)",
	  &ops_score, 0, 0,
	  { { "prefix", 1, 0, 0, "cached share of the prompt's blocks" },
	    { "queue", 1, 0, 0, "fewer outstanding requests (min-max normalised)" },
	    { "kv", 1, 0, 0, "free KV share" } } },
	{ "vllm-dp", "lowest 4 x waiting + running requests, signals refreshed every "
	  "0.1 s unless --router-refresh says otherwise (vLLM's data-parallel balancer)",
	  &ops_vllm_dp, KVS_ROUTER_NEEDS_SCHED, 0.1, { { 0 } } },
};

const char *kvs_router_names(void)
{
	return "round-robin, random, least-requests, least-kv, prefix, score, vllm-dp";
}

void kvs_router_help(FILE *f)
{
	for (size_t i = 0; i < KVS_ARRAY_LEN(routers); i++) {
		const router_row *w = &routers[i];
		fprintf(f, "    %-16s %s\n", w->name, w->help);
		for (int k = 0; k < ROUTER_MAX_PARAMS && w->params[k].name; k++)
			fprintf(f, "    %16s   %s=W (%g): %s\n", "", w->params[k].name,
				w->params[k].def, w->params[k].help);
	}
}

static void make_spec(kvs_router *r)
{
	size_t o = (size_t)snprintf(r->spec, sizeof r->spec, "%s", r->row->name);
	for (int k = 0; k < ROUTER_MAX_PARAMS && r->row->params[k].name; k++)
		o += (size_t)snprintf(r->spec + o, o < sizeof r->spec ? sizeof r->spec - o : 0,
				      "%c%s=%g", k ? ',' : ':', r->row->params[k].name, r->p[k]);
}

kvs_status kvs_router_create(const char *spec, uint64_t seed, kvs_router **out)
{
	if (!spec || !*spec)
		return kvs_fail(KVS_ERR_INVALID, "router: empty name (expected one of %s)",
				kvs_router_names());
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	const router_row *row = NULL;
	for (size_t i = 0; i < KVS_ARRAY_LEN(routers); i++)
		if (strlen(routers[i].name) == nlen && strncmp(routers[i].name, spec, nlen) == 0)
			row = &routers[i];
	if (!row)
		return kvs_fail(KVS_ERR_INVALID, "router '%.*s': unknown (expected one of %s)",
				(int)nlen, spec, kvs_router_names());
	kvs_router *r = kvs_calloc(1, sizeof *r);
	if (!r)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	r->row = row;
	r->rng = seed;
	for (int k = 0; k < ROUTER_MAX_PARAMS; k++)
		r->p[k] = row->params[k].def;
	if (colon) {
		if (!row->params[0].name) {
			kvs_free(r);
			return kvs_fail(KVS_ERR_INVALID, "router '%s': takes no parameters", row->name);
		}
		const char *p = colon + 1;
		unsigned seen = 0;
		while (*p) {
			const char *eq = strchr(p, '='), *end = strchr(p, ',');
			if (!end)
				end = p + strlen(p);
			if (!eq || eq > end) {
				kvs_free(r);
				return kvs_fail(KVS_ERR_INVALID, "router '%s': '%.*s': expected NAME=VALUE",
						row->name, (int)(end - p), p);
			}
			int k = -1;
			for (int j = 0; j < ROUTER_MAX_PARAMS && row->params[j].name; j++)
				if (strlen(row->params[j].name) == (size_t)(eq - p) &&
				    strncmp(row->params[j].name, p, (size_t)(eq - p)) == 0)
					k = j;
			if (k < 0) {
				kvs_free(r);
				return kvs_fail(KVS_ERR_INVALID, "router '%s': unknown parameter '%.*s'",
						row->name, (int)(eq - p), p);
			}
			char buf[64];
			size_t vl = (size_t)(end - eq - 1);
			double val = 0;
			bool num = vl > 0 && vl < sizeof buf;
			if (num) {
				memcpy(buf, eq + 1, vl);
				buf[vl] = 0;
				num = kvs_parse_decimal(buf, &val);
			}
			double hi = row->params[k].max;
			if (!num || val < row->params[k].min || (hi > 0 && val > hi)) {
				kvs_free(r);
				if (hi > 0)
					return kvs_fail(KVS_ERR_INVALID, "router '%s': %s='%.*s': "
							"expected a number in [%g, %g]", row->name,
							row->params[k].name, (int)vl, eq + 1,
							row->params[k].min, hi);
				return kvs_fail(KVS_ERR_INVALID, "router '%s': %s='%.*s': expected a "
						"number >= %g", row->name, row->params[k].name,
						(int)vl, eq + 1, row->params[k].min);
			}
			if (seen & (1u << k)) {
				kvs_free(r);
				return kvs_fail(KVS_ERR_INVALID, "router '%s': %s given twice",
						row->name, row->params[k].name);
			}
			seen |= 1u << k;
			r->p[k] = val;
			p = *end ? end + 1 : end;
		}
	}
	if (row->ops == &ops_score && r->p[0] + r->p[1] + r->p[2] <= 0) {
		kvs_free(r);
		return kvs_fail(KVS_ERR_INVALID, "router 'score': every weight is 0");
	}
	make_spec(r);
	*out = r;
	return KVS_OK;
}

void kvs_router_destroy(kvs_router *r)
{
	kvs_free(r);
}

uint32_t kvs_router_pick(kvs_router *r, const kvs_router_view *v)
{
	if (v->n <= 1)
		return 0;
	uint32_t i = r->row->ops->pick(r, v);
	kvs_require(i < v->n);
	return i;
}

unsigned kvs_router_needs(const kvs_router *r)
{
	if (r->row->ops != &ops_score)
		return r->row->needs;
	return (r->p[0] > 0 ? KVS_ROUTER_NEEDS_PREFIX : 0) |
	       (r->p[1] > 0 ? KVS_ROUTER_NEEDS_QUEUE : 0) |
	       (r->p[2] > 0 ? KVS_ROUTER_NEEDS_KV : 0);
}

double kvs_router_default_refresh_s(const kvs_router *r)
{
	return r->row->refresh_s;
}

const char *kvs_router_name(const kvs_router *r)
{
	return r->row->name;
}

const char *kvs_router_spec(const kvs_router *r)
{
	return r->spec;
}
