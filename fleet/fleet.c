/*
 * fleet.c - N replicas behind one router, in one event loop.
 *
 * Each replica is an engine of sim/ started without a source.  For each
 * request, in arrival order:
 *
 *   1. (refresh S > 0) when a refresh instant b = k S has passed since the
 *      last one, every replica is advanced to b and the router's snapshot
 *      of outstanding requests and KV use is taken there;
 *   2. every replica is advanced to the arrival (events strictly before
 *      it; a replica planning a span of decode steps stops it at the
 *      arrival, since the request may be routed to it);
 *   3. the router picks a replica from the signals (exact ones read now
 *      when S = 0; prefix matches are always read now, on demand);
 *   4. the request is fed to that replica, which processes its arrival
 *      with its own next events.
 *
 * At the end every replica runs to completion and the results are merged
 * (kvs_sim_result_merge).  A fleet of one replica runs exactly the events
 * of kvs_sim_run, so its result is the replay's.
 *
 * Ownership: the fleet owns its replicas until they finish, then their
 * results; the request source stays the caller's.
 */
#include "kvsim/fleet.h"
#include "common/json.h"

#include <jansson.h>
#include <math.h>
#include <string.h>
#include <time.h>

struct kvs_fleet_result {
	kvs_fleet_config cfg;
	char router_spec[160];
	uint32_t n;
	kvs_sim_result **rep;          /* [n] */
	kvs_fleet_replica_stats *rs;   /* [n] */
	kvs_sim_result *total;
	kvs_fleet_stats st;
	kvs_fleet_pool *pools;         /* copy of cfg.pools */
};

typedef struct fleet_run {
	const kvs_fleet_config *cfg;
	uint32_t n;
	kvs_sim **sims;
	uint64_t *routed;
	uint64_t *outstanding;     /* router's view */
	double *kv_usage;          /* router's view */
	uint32_t *prefix;          /* this request's prefix per replica; UINT32_MAX: unread */
	double *next_ev;           /* [n] each replica's next event time */
	unsigned needs;            /* KVS_ROUTER_NEEDS_* of the router */
	const kvs_request *req;
} fleet_run;

void kvs_fleet_config_defaults(kvs_fleet_config *c, const kvs_deploy *d)
{
	memset(c, 0, sizeof *c);
	kvs_sim_config_defaults(&c->sim, d);
	c->replicas = 1;
	c->router = "round-robin";
}

static uint32_t prefix_of(void *ctx, uint32_t i)
{
	fleet_run *f = ctx;
	if (f->prefix[i] == UINT32_MAX)
		f->prefix[i] = kvs_sim_prefix_match(f->sims[i], f->req, NULL);
	return f->prefix[i];
}

/* The signals the router reads (none for round-robin and random). */
static void read_signals(fleet_run *f)
{
	if (!(f->needs & (KVS_ROUTER_NEEDS_QUEUE | KVS_ROUTER_NEEDS_KV)))
		return;
	for (uint32_t i = 0; i < f->n; i++) {
		kvs_sim_load l;
		kvs_sim_get_load(f->sims[i], &l);
		f->outstanding[i] = f->routed[i] - l.completed - l.rejected;
		f->kv_usage[i] = l.kv_usage;
	}
}

/* Replicas with an event before t process them (the others have nothing
 * to do before t: a replica plans only while processing an event). */
static kvs_status advance_all(fleet_run *f, double t)
{
	for (uint32_t i = 0; i < f->n; i++) {
		if (!(f->next_ev[i] < t))
			continue;
		kvs_status st = kvs_sim_advance(f->sims[i], t);
		if (st != KVS_OK)
			return st;
		f->next_ev[i] = kvs_sim_next_event_s(f->sims[i]);
	}
	return KVS_OK;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The replicas' requests, accounted: routed = arrived (every routed
 * request arrives at its replica, the horizon aside), and arrived =
 * completed + rejected + unfinished on each. */
static void replica_stats(kvs_fleet_result *R)
{
	double sum_a = 0, sum_k = 0, sq_a = 0, sq_k = 0;
	for (uint32_t i = 0; i < R->n; i++) {
		const kvs_sim_stats *s = kvs_sim_result_stats(R->rep[i]);
		kvs_fleet_replica_stats *o = &R->rs[i];
		o->arrived = s->arrived;
		o->completed = s->completed;
		o->rejected = s->rejected;
		o->unfinished = s->unfinished;
		o->kv_used_pct = 100.0 - s->memory_pct.free - s->memory_pct.cached_idle;
		if (o->kv_used_pct < 0)
			o->kv_used_pct = 0;
		o->prefix_hit_rate_tokens = s->prefix_hit_rate_tokens;
		o->preemptions = s->preemptions;
		kvs_require(o->arrived == o->completed + o->rejected + o->unfinished);
		sum_a += (double)o->arrived;
		sum_k += o->kv_used_pct;
	}
	double n = R->n, ma = sum_a / n, mk = sum_k / n;
	for (uint32_t i = 0; i < R->n; i++) {
		double da = (double)R->rs[i].arrived - ma, dk = R->rs[i].kv_used_pct - mk;
		sq_a += da * da;
		sq_k += dk * dk;
	}
	R->st.replicas = R->n;
	R->st.requests_cv = ma > 0 ? sqrt(sq_a / n) / ma : 0;
	R->st.kv_used_cv = mk > 0 ? sqrt(sq_k / n) / mk : 0;
}

kvs_status kvs_fleet_run(const kvs_fleet_config *cfg, const kvs_request_source *src,
			 kvs_fleet_result **out)
{
	if (!cfg || !src || !src->next || !out)
		return kvs_fail(KVS_ERR_INVALID, "kvs_fleet_run: NULL argument");
	uint32_t n = cfg->replicas;
	if (cfg->npools) {
		if (!cfg->pools)
			return kvs_fail(KVS_ERR_INVALID, "kvs_fleet_run: pools NULL");
		uint64_t sum = 0;
		for (size_t p = 0; p < cfg->npools; p++) {
			if (cfg->pools[p].replicas == 0)
				return kvs_fail(KVS_ERR_INVALID, "pool %s: replicas must be >= 1",
						cfg->pools[p].name);
			if (cfg->pools[p].sim.deploy.block_size != cfg->pools[0].sim.deploy.block_size)
				return kvs_fail(KVS_ERR_INVALID, "pool %s: block size %u differs from "
						"pool %s's %u: one block size per fleet",
						cfg->pools[p].name, cfg->pools[p].sim.deploy.block_size,
						cfg->pools[0].name, cfg->pools[0].sim.deploy.block_size);
			sum += cfg->pools[p].replicas;
		}
		if (sum > (1u << 20))
			return kvs_fail(KVS_ERR_INVALID, "pools: %llu replicas in all (at most %u)",
					(unsigned long long)sum, 1u << 20);
		n = (uint32_t)sum;
	}
	if (n == 0)
		return kvs_fail(KVS_ERR_INVALID, "--replicas must be >= 1");
	if (!(cfg->router_refresh_s >= 0) || !isfinite(cfg->router_refresh_s))
		return kvs_fail(KVS_ERR_INVALID, "--router-refresh %g: must be a finite time >= 0",
				cfg->router_refresh_s);
	double w0 = wall_now();
	kvs_router *router;
	kvs_status st = kvs_router_create(cfg->router ? cfg->router : "round-robin",
					  cfg->seed, &router);
	if (st != KVS_OK)
		return st;
	fleet_run f = { .cfg = cfg, .n = n };
	kvs_fleet_result *R = kvs_calloc(1, sizeof *R);
	f.sims = kvs_calloc(n, sizeof *f.sims);
	f.routed = kvs_calloc(n, sizeof *f.routed);
	f.outstanding = kvs_calloc(n, sizeof *f.outstanding);
	f.kv_usage = kvs_calloc(n, sizeof *f.kv_usage);
	f.prefix = kvs_calloc(n, sizeof *f.prefix);
	f.next_ev = kvs_calloc(n, sizeof *f.next_ev);
	if (R) {
		R->rep = kvs_calloc(n, sizeof *R->rep);
		R->rs = kvs_calloc(n, sizeof *R->rs);
	}
	if (!R || !R->rep || !R->rs || !f.sims || !f.routed || !f.outstanding ||
	    !f.kv_usage || !f.prefix || !f.next_ev) {
		st = kvs_fail(KVS_ERR_NOMEM, "out of memory (fleet of %u)", n);
		goto done;
	}
	R->cfg = *cfg;
	if (cfg->npools) {
		R->pools = kvs_reallocarray(NULL, cfg->npools, sizeof *R->pools);
		if (!R->pools) {
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory");
			goto done;
		}
		memcpy(R->pools, cfg->pools, cfg->npools * sizeof *R->pools);
		R->cfg.pools = R->pools;
	}
	R->n = n;
	snprintf(R->router_spec, sizeof R->router_spec, "%s", kvs_router_spec(router));
	R->cfg.router = R->router_spec;
	R->st.wall_s = -1;
	size_t pool = 0;
	uint32_t in_pool = 0;
	for (uint32_t i = 0; i < n && st == KVS_OK; i++) {
		const kvs_sim_config *sc = &cfg->sim;
		if (cfg->npools) {
			if (in_pool == cfg->pools[pool].replicas) {
				pool++;
				in_pool = 0;
			}
			in_pool++;
			sc = &cfg->pools[pool].sim;
			R->rs[i].pool = (uint32_t)pool;
		}
		st = kvs_sim_create(sc, &f.sims[i]);
		if (st != KVS_OK && cfg->npools)
			st = kvs_fail_wrap(st, "pool %s", cfg->pools[pool].name);
		if (st == KVS_OK)
			st = kvs_sim_start(f.sims[i], NULL);
		f.next_ev[i] = INFINITY;
	}
	f.needs = kvs_router_needs(router);
	if (st != KVS_OK)
		goto done;

	double S = cfg->router_refresh_s, next_refresh = 0, last = 0;
	double horizon = cfg->sim.horizon_s;
	for (;;) {
		kvs_request q;
		st = src->next(src->ctx, &q);
		if (st == KVS_END) {
			st = KVS_OK;
			break;
		}
		if (st != KVS_OK)
			goto done;
		if (!(q.arrival_s >= 0) || !isfinite(q.arrival_s)) {
			st = kvs_fail(KVS_ERR_INVALID, "request %llu (line %llu): arrival %g s: "
				      "must be a finite time >= 0", (unsigned long long)q.index,
				      (unsigned long long)q.line, q.arrival_s);
			goto done;
		}
		if (q.arrival_s < last) {
			st = kvs_fail(KVS_ERR_INVALID,
				      "request %llu (line %llu): arrival %.9g s is before the "
				      "previous one (%.9g s): requests must come in arrival order",
				      (unsigned long long)q.index, (unsigned long long)q.line,
				      q.arrival_s, last);
			goto done;
		}
		last = q.arrival_s;
		if (horizon > 0 && q.arrival_s > horizon)
			break;   /* arrives after the end of the run (as replay) */
		if (S > 0 && q.arrival_s >= next_refresh) {
			double b = floor(q.arrival_s / S) * S;
			if ((st = advance_all(&f, b)) != KVS_OK)
				goto done;
			read_signals(&f);
			next_refresh = b + S;
		}
		if ((st = advance_all(&f, q.arrival_s)) != KVS_OK)
			goto done;
		if (S == 0)
			read_signals(&f);
		for (uint32_t i = 0; i < n; i++)
			f.prefix[i] = UINT32_MAX;
		f.req = &q;
		uint32_t nblocks = 0;
		if (cfg->sim.enable_prefix_caching && n > 1 &&
		    (f.needs & KVS_ROUTER_NEEDS_PREFIX))
			f.prefix[0] = kvs_sim_prefix_match(f.sims[0], &q, &nblocks);
		kvs_router_view v = {
			.n = n,
			.outstanding = f.outstanding,
			.kv_usage = f.kv_usage,
			.prefix_of = prefix_of,
			.request_blocks = nblocks,
			.ctx = &f,
		};
		uint32_t k = kvs_router_pick(router, &v);
		if (cfg->on_route)
			cfg->on_route(cfg->on_route_ctx, &q, k);
		if ((st = kvs_sim_feed(f.sims[k], &q)) != KVS_OK)
			goto done;
		f.next_ev[k] = kvs_sim_next_event_s(f.sims[k]);
		f.routed[k]++;
		if (S > 0)
			f.outstanding[k]++;   /* the router counts what it sends */
	}
	for (uint32_t i = 0; i < n; i++) {
		st = kvs_sim_finish(f.sims[i], &R->rep[i]);
		if (st != KVS_OK)
			goto done;
		kvs_sim_destroy(f.sims[i]);
		f.sims[i] = NULL;
		R->rs[i].routed = f.routed[i];
	}
	if ((st = kvs_sim_result_merge((const kvs_sim_result *const *)R->rep, n,
				       &R->total)) != KVS_OK)
		goto done;
	replica_stats(R);
	if (cfg->sim.record_wall_time)
		R->st.wall_s = wall_now() - w0;
done:
	if (f.sims)
		for (uint32_t i = 0; i < n; i++)
			kvs_sim_destroy(f.sims[i]);
	kvs_free(f.sims);
	kvs_free(f.routed);
	kvs_free(f.outstanding);
	kvs_free(f.kv_usage);
	kvs_free(f.prefix);
	kvs_free(f.next_ev);
	kvs_router_destroy(router);
	if (st != KVS_OK) {
		kvs_fleet_result_destroy(R);
		return st;
	}
	*out = R;
	return KVS_OK;
}

void kvs_fleet_result_destroy(kvs_fleet_result *r)
{
	if (!r)
		return;
	if (r->rep)
		for (uint32_t i = 0; i < r->n; i++)
			kvs_sim_result_destroy(r->rep[i]);
	kvs_free(r->rep);
	kvs_free(r->rs);
	kvs_free(r->pools);
	kvs_sim_result_destroy(r->total);
	kvs_free(r);
}

const kvs_sim_result *kvs_fleet_result_total(const kvs_fleet_result *r)
{
	return r->total;
}

const kvs_sim_result *kvs_fleet_result_replica(const kvs_fleet_result *r, uint32_t i)
{
	return i < r->n ? r->rep[i] : NULL;
}

const kvs_fleet_replica_stats *kvs_fleet_result_replica_stats(const kvs_fleet_result *r,
							      uint32_t i)
{
	return i < r->n ? &r->rs[i] : NULL;
}

uint32_t kvs_fleet_result_replicas(const kvs_fleet_result *r)
{
	return r->n;
}

const kvs_fleet_stats *kvs_fleet_result_stats(const kvs_fleet_result *r)
{
	return &r->st;
}

const kvs_fleet_config *kvs_fleet_result_config(const kvs_fleet_result *r)
{
	return &r->cfg;
}

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *fleet_jt(const kvs_fleet_result *r, const char *trace_path,
			kvs_trace_format format, const kvs_trace_stats *tstats)
{
	kvs_sim_result *tot = r->total;
	json_t *doc = kvs_json_jt(kvs_sim_report_json("fleet", &tot, 1, trace_path, format,
						      tstats));
	if (!doc)
		return NULL;
	/* the engine of one replica (the total sums the pools) */
	const kvs_sim_result *r0 = r->rep[0];
	json_object_set_new(doc, "engine",
			    kvs_json_jt(kvs_sim_engine_json(kvs_sim_result_config(r0),
							    kvs_sim_result_stats(r0))));
	json_t *fl = json_object();
	json_t *rows = json_array();
	if (!fl || !rows) {
		json_decref(fl);
		json_decref(rows);
		json_decref(doc);
		return NULL;
	}
	json_object_set_new(fl, "replicas", json_integer((json_int_t)r->n));
	json_object_set_new(fl, "router", json_string(r->router_spec));
	json_object_set_new(fl, "router_refresh_s", jreal(r->cfg.router_refresh_s));
	json_t *bal = json_object();
	json_object_set_new(bal, "requests_cv", jreal(r->st.requests_cv));
	json_object_set_new(bal, "kv_used_cv", jreal(r->st.kv_used_cv));
	json_object_set_new(fl, "balance", bal);
	for (uint32_t i = 0; i < r->n; i++) {
		const kvs_fleet_replica_stats *s = &r->rs[i];
		json_t *o = json_object();
		char name[48];
		if (r->cfg.npools)
			snprintf(name, sizeof name, "%s-%u", r->cfg.pools[s->pool].name, i);
		else
			snprintf(name, sizeof name, "%u", i);
		json_object_set_new(o, "name", json_string(name));
		if (r->cfg.npools)
			json_object_set_new(o, "pool", json_string(r->cfg.pools[s->pool].name));
		json_object_set_new(o, "routed", json_integer((json_int_t)s->routed));
		json_object_set_new(o, "arrived", json_integer((json_int_t)s->arrived));
		json_object_set_new(o, "completed", json_integer((json_int_t)s->completed));
		json_object_set_new(o, "rejected", json_integer((json_int_t)s->rejected));
		json_object_set_new(o, "unfinished", json_integer((json_int_t)s->unfinished));
		json_object_set_new(o, "kv_used_pct", jreal(s->kv_used_pct));
		json_object_set_new(o, "prefix_hit_rate_tokens", jreal(s->prefix_hit_rate_tokens));
		json_object_set_new(o, "preemptions", json_integer((json_int_t)s->preemptions));
		json_array_append_new(rows, o);
	}
	/* top level: the report's per-replica table (docs/REPORT.md) */
	json_object_set_new(doc, "replicas", rows);
	if (r->cfg.npools) {
		json_t *pools = json_array();
		uint32_t first = 0;
		for (size_t p = 0; p < r->cfg.npools; p++) {
			const kvs_fleet_pool *pl = &r->cfg.pools[p];
			const kvs_sim_stats *s0 = kvs_sim_result_stats(r->rep[first]);
			json_t *o = json_object();
			json_object_set_new(o, "name", json_string(pl->name));
			json_object_set_new(o, "replicas", json_integer((json_int_t)pl->replicas));
			json_object_set_new(o, "gpu", json_string(pl->sim.deploy.gpu.name));
			json_object_set_new(o, "tp", json_integer((json_int_t)pl->sim.deploy.tp));
			json_object_set_new(o, "kv_budget_bytes", json_integer((json_int_t)s0->kv_budget_bytes));
			json_object_set_new(o, "num_gpu_blocks", json_integer((json_int_t)s0->num_blocks));
			json_array_append_new(pools, o);
			first += pl->replicas;
		}
		json_object_set_new(fl, "pools", pools);
	}
	json_object_set_new(doc, "fleet", fl);
	return doc;
}

kvs_json *kvs_fleet_report_json(const kvs_fleet_result *r, const char *trace_path,
				kvs_trace_format format, const kvs_trace_stats *tstats)
{
	return kvs_json_of(fleet_jt(r, trace_path, format, tstats));
}
