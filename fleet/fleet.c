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
 *      when S = 0, prefix matches on demand; with S > 0 those of the
 *      snapshot, prefix matches taken at the refresh instant for the
 *      requests read ahead to the next one);
 *   4. the request is fed to that replica, which processes its arrival
 *      with its own next events.
 *
 * Fleets of prefill and decode pools run the loop of disagg.c instead.
 *
 * At the end every replica runs to completion and the results are merged
 * (kvs_sim_result_merge).  A fleet of one replica runs exactly the events
 * of kvs_sim_run, so its result is the replay's.
 *
 * Ownership: the fleet owns its replicas until they finish, then their
 * results; the request source stays the caller's.
 */
#include "fleet/fleet_internal.h"
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
	/* a disaggregated fleet's replicas' interrupt flag (fleet_run.stop):
	 * here, so that it lives as long as the results whose configurations
	 * point at it */
	volatile sig_atomic_t stop;
};

void kvs_fleet_config_defaults(kvs_fleet_config *c, const kvs_deploy *d)
{
	memset(c, 0, sizeof *c);
	kvs_sim_config_defaults(&c->sim, d);
	c->replicas = 1;
	c->router = "round-robin";
	c->router_refresh_s = -1;    /* the router's own */
	kvs_fleet_link_default(&c->kv_link);
}

static uint32_t prefix_of(void *ctx, uint32_t i)
{
	fleet_run *f = ctx;
	if (f->stale)
		return f->stale[i];
	if (f->prefix[i] == UINT32_MAX)
		f->prefix[i] = kvs_sim_prefix_match(f->sims[i], f->req, NULL);
	return f->prefix[i];
}

/* ---- the requests, read ahead for a stale prefix signal ------------------------ */

static void ahead_free(ahead_ent *e)
{
	kvs_free(e->ids);
	kvs_free(e->prefix);
	memset(e, 0, sizeof *e);
}

/* The next request of the source, checked as the replay checks it;
 * KVS_END at the end. */
static kvs_status src_next(fleet_src *s, kvs_request *q)
{
	kvs_status st = s->src->next(s->src->ctx, q);
	if (st == KVS_END)
		s->end = true;
	if (st != KVS_OK)
		return st;
	if (!(q->arrival_s >= 0) || !isfinite(q->arrival_s))
		return kvs_fail(KVS_ERR_INVALID, "request %llu (line %llu): arrival %g s: "
				"must be a finite time >= 0", (unsigned long long)q->index,
				(unsigned long long)q->line, q->arrival_s);
	if (q->arrival_s < s->last)
		return kvs_fail(KVS_ERR_INVALID,
				"request %llu (line %llu): arrival %.9g s is before the "
				"previous one (%.9g s): requests must come in arrival order",
				(unsigned long long)q->index, (unsigned long long)q->line,
				q->arrival_s, s->last);
	s->last = q->arrival_s;
	return KVS_OK;
}

/* The next request of the source into e (*got false at the end), its hash
 * ids copied when copy is set (they outlive the reader's next call). */
static kvs_status src_read(fleet_src *s, ahead_ent *e, bool copy, bool *got)
{
	*got = false;
	kvs_request q;
	kvs_status st = src_next(s, &q);
	if (st == KVS_END)
		return KVS_OK;
	if (st != KVS_OK)
		return st;
	e->q = q;
	if (copy && q.num_hash_ids) {
		e->ids = kvs_reallocarray(NULL, q.num_hash_ids, sizeof *e->ids);
		if (!e->ids)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (requests read ahead)");
		memcpy(e->ids, q.hash_ids, q.num_hash_ids * sizeof *e->ids);
		e->q.hash_ids = e->ids;
	}
	*got = true;
	return KVS_OK;
}

kvs_status fleet_src_peek(fleet_src *s, const ahead_ent **out)
{
	*out = NULL;
	if (s->n) {
		*out = &s->v[s->head];
		return KVS_OK;
	}
	if (s->end)
		return KVS_OK;
	/* direct: one slot, hash ids still the reader's */
	if (!s->cap) {
		s->v = kvs_calloc(1, sizeof *s->v);
		if (!s->v)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory");
		s->cap = 1;
	}
	s->head = 0;
	bool got;
	kvs_status st = src_read(s, &s->v[0], s->buffered, &got);
	if (st != KVS_OK || !got)
		return st;
	s->n = 1;
	*out = &s->v[0];
	return KVS_OK;
}

void fleet_src_pop(fleet_src *s)
{
	if (!s->n)
		return;
	ahead_free(&s->v[s->head]);
	s->head = (s->head + 1) % s->cap;
	s->n--;
}

/* Append one request of the source to the ring, its ids copied. */
static kvs_status src_append(fleet_src *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		ahead_ent *v = kvs_calloc(cap, sizeof *v);
		if (!v)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (requests read ahead)");
		for (size_t i = 0; i < s->n; i++)
			v[i] = s->v[(s->head + i) % s->cap];
		kvs_free(s->v);
		s->v = v;
		s->cap = cap;
		s->head = 0;
	}
	ahead_ent *e = &s->v[(s->head + s->n) % s->cap];
	memset(e, 0, sizeof *e);
	bool got;
	kvs_status st = src_read(s, e, true, &got);
	if (st == KVS_OK && got)
		s->n++;
	return st;
}

kvs_status fleet_src_snapshot(fleet_src *s, fleet_run *f, double until_s)
{
	kvs_status st;
	while (!s->end && (!s->n || s->v[(s->head + s->n - 1) % s->cap].q.arrival_s < until_s) &&
	       !(s->n && s->horizon > 0 &&
		 s->v[(s->head + s->n - 1) % s->cap].q.arrival_s > s->horizon))
		if ((st = src_append(s)) != KVS_OK)
			return st;
	for (size_t k = 0; k < s->n; k++) {
		ahead_ent *e = &s->v[(s->head + k) % s->cap];
		if (!(e->q.arrival_s < until_s))
			break;
		if (!e->prefix && !(e->prefix = kvs_calloc(s->nrep, sizeof *e->prefix)))
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (prefix snapshot)");
		bool first = true;
		for (uint32_t i = 0; i < s->nrep; i++) {
			if (f->role[i] == KVS_FLEET_ROLE_DECODE)
				continue;   /* requests arrive at prefill replicas */
			e->prefix[i] = kvs_sim_prefix_match(f->sims[i], &e->q,
							    first ? &e->nblocks : NULL);
			first = false;
		}
	}
	return KVS_OK;
}

void fleet_src_free(fleet_src *s)
{
	while (s->n)
		fleet_src_pop(s);
	kvs_free(s->v);
	s->v = NULL;
	s->cap = 0;
}

/* The signals the router reads (none for round-robin and random). */
static void read_signals(fleet_run *f)
{
	if (!(f->needs & (KVS_ROUTER_NEEDS_QUEUE | KVS_ROUTER_NEEDS_KV |
			  KVS_ROUTER_NEEDS_SCHED)))
		return;
	for (uint32_t i = 0; i < f->n; i++) {
		kvs_sim_load l;
		kvs_sim_get_load(f->sims[i], &l);
		f->outstanding[i] = f->routed[i] - l.completed - l.rejected;
		f->kv_usage[i] = l.kv_usage;
		f->waiting[i] = l.waiting + fleet_unseen(f->routed[i], &l);
		f->running[i] = l.running;
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
 * request arrives at its replica, the horizon aside), and arrived +
 * kv_received = completed + rejected + unfinished + kv_sent on each. */
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
		kvs_require(o->arrived + o->kv_received ==
			    o->completed + o->rejected + o->unfinished + o->kv_sent);
		sum_a += (double)(o->arrived + o->kv_received);
		sum_k += o->kv_used_pct;
	}
	double n = R->n, ma = sum_a / n, mk = sum_k / n;
	for (uint32_t i = 0; i < R->n; i++) {
		double da = (double)(R->rs[i].arrived + R->rs[i].kv_received) - ma;
		double dk = R->rs[i].kv_used_pct - mk;
		sq_a += da * da;
		sq_k += dk * dk;
	}
	R->st.replicas = R->n;
	R->st.requests_cv = ma > 0 ? sqrt(sq_a / n) / ma : 0;
	R->st.kv_used_cv = mk > 0 ? sqrt(sq_k / n) / mk : 0;
}

/* The colocated loop: each request, in arrival order, routed to one
 * replica (the file-top comment). */
static kvs_status colocated_loop(fleet_run *f, kvs_router *router)
{
	const kvs_fleet_config *cfg = f->cfg;
	uint32_t n = f->n;
	kvs_status st;
	double S = cfg->router_refresh_s, next_refresh = 0;
	double horizon = cfg->sim.horizon_s;
	bool fed = false;
	for (;;) {
		/* interrupted: no more routing; each replica, asked to finish,
		 * stops at once too and counts what it holds as unfinished.
		 * The replica fed last then has an event to stop at (the
		 * arrival), or stopped at one: so the fleet's result says it
		 * was interrupted.  Before the first request nothing would:
		 * that one is routed first (and stops at its arrival). */
		if (fleet_interrupted(f) && fed)
			return KVS_OK;
		const ahead_ent *e;
		if ((st = fleet_src_peek(&f->in, &e)) != KVS_OK)
			return st;
		if (!e)
			return KVS_OK;
		double t = e->q.arrival_s;
		if (horizon > 0 && t > horizon)
			return KVS_OK;   /* arrives after the end of the run (as replay) */
		if (S > 0 && t >= next_refresh) {
			double b = floor(t / S) * S;
			if ((st = advance_all(f, b)) != KVS_OK)
				return st;
			read_signals(f);
			if (f->in.buffered) {
				if ((st = fleet_src_snapshot(&f->in, f, b + S)) != KVS_OK)
					return st;
				if ((st = fleet_src_peek(&f->in, &e)) != KVS_OK)
					return st;
			}
			next_refresh = b + S;
		}
		kvs_request q = e->q;
		if ((st = advance_all(f, t)) != KVS_OK)
			return st;
		if (S == 0)
			read_signals(f);
		for (uint32_t i = 0; i < n; i++)
			f->prefix[i] = UINT32_MAX;
		f->req = &q;
		f->stale = f->in.buffered ? e->prefix : NULL;
		uint32_t nblocks = 0;
		if (f->stale)
			nblocks = e->nblocks;
		else if (cfg->sim.enable_prefix_caching && n > 1 &&
			 (f->needs & KVS_ROUTER_NEEDS_PREFIX))
			f->prefix[0] = kvs_sim_prefix_match(f->sims[0], &q, &nblocks);
		kvs_router_view v = {
			.n = n,
			.outstanding = f->outstanding,
			.kv_usage = f->kv_usage,
			.waiting = f->waiting,
			.running = f->running,
			.prefix_of = prefix_of,
			.request_blocks = nblocks,
			.ctx = f,
		};
		uint32_t k = kvs_router_pick(router, &v);
		f->stale = NULL;
		if (cfg->on_route)
			cfg->on_route(cfg->on_route_ctx, &q, k);
		if ((st = kvs_sim_feed(f->sims[k], &q)) != KVS_OK)
			return st;
		fleet_src_pop(&f->in);
		f->next_ev[k] = kvs_sim_next_event_s(f->sims[k]);
		f->routed[k]++;
		fed = true;
		if (S > 0) {
			/* the router counts what it sends (vLLM's balancer adds
			 * each to its engine's waiting count) */
			f->outstanding[k]++;
			f->waiting[k]++;
		}
	}
}

/* Pool roles: a disaggregated fleet has prefill and decode pools only. */
static kvs_status check_roles(const kvs_fleet_config *cfg, bool *disagg)
{
	size_t np = 0, nd = 0, nb = 0;
	*disagg = false;
	for (size_t p = 0; p < cfg->npools; p++) {
		kvs_fleet_role r = cfg->pools[p].role;
		if ((unsigned)r >= KVS_FLEET_ROLE_COUNT_)
			return kvs_fail(KVS_ERR_INVALID, "pool %s: unknown role %d",
					cfg->pools[p].name, (int)r);
		np += r == KVS_FLEET_ROLE_PREFILL;
		nd += r == KVS_FLEET_ROLE_DECODE;
		nb += r == KVS_FLEET_ROLE_BOTH;
	}
	if (!np && !nd)
		return KVS_OK;
	if (!np || !nd)
		return kvs_fail(KVS_ERR_INVALID, "--pool: a disaggregated fleet needs a prefill "
				"pool and a decode pool (no %s pool given)", np ? "decode" : "prefill");
	if (nb)
		return kvs_fail(KVS_ERR_INVALID, "--pool: prefill and decode pools cannot be "
				"mixed with pools that do both");
	if (cfg->sim.max_concurrency)
		return kvs_fail(KVS_ERR_INVALID, "--max-concurrency: not with a disaggregated "
				"fleet");
	const kvs_fleet_link *L = &cfg->kv_link;
	if (!(L->bytes_per_s > 0) || !isfinite(L->bytes_per_s) || !(L->latency_s >= 0) ||
	    !isfinite(L->latency_s))
		return kvs_fail(KVS_ERR_INVALID, "--kv-link: bandwidth %g B/s, latency %g s: need "
				"a finite bandwidth > 0 and latency >= 0", L->bytes_per_s,
				L->latency_s);
	*disagg = true;
	return KVS_OK;
}

/* Every replica holds its pool's bookkeeping from its start, whatever the
 * trace: the fleet's, one probe replica per configuration times its
 * replicas, must fit the machine, or the run crawls once the kernel has
 * overcommitted and is then killed.  Checked before anything per replica
 * is allocated. */
static kvs_status host_check(const kvs_fleet_config *cfg, uint32_t n)
{
	uint64_t host = kvs_host_memory_bytes();
	if (!host)
		return KVS_OK;
	double need = (double)n * (sizeof(kvs_sim_config) + sizeof(kvs_fleet_replica_stats));
	double per_max = 0;
	size_t np = cfg->npools ? cfg->npools : 1;
	for (size_t p = 0; p < np; p++) {
		const kvs_sim_config *c = cfg->npools ? &cfg->pools[p].sim : &cfg->sim;
		uint32_t reps = cfg->npools ? cfg->pools[p].replicas : n;
		kvs_sim *probe = NULL;
		if (kvs_sim_create(c, &probe) != KVS_OK)
			return KVS_OK;   /* the run itself reports why */
		double per = (double)kvs_sim_host_bytes(probe);
		kvs_sim_destroy(probe);
		need += per * reps;
		per_max = per > per_max ? per : per_max;
	}
	if (need <= (double)host)
		return KVS_OK;
	return kvs_fail(KVS_ERR_NOMEM, "%u replicas need about %.1f GiB of host memory for "
			"their KV pools' bookkeeping (up to %.0f KiB each), more than the "
			"%.1f GiB this machine has available: fewer replicas, or a larger "
			"block size", n,
			need / 1073741824.0, per_max / 1024.0, (double)host / 1073741824.0);
}

kvs_status kvs_fleet_run(const kvs_fleet_config *cfg, const kvs_request_source *src,
			 kvs_fleet_result **out)
{
	if (!cfg || !src || !src->next || !out)
		return kvs_fail(KVS_ERR_INVALID, "kvs_fleet_run: NULL argument");
	uint32_t n = cfg->replicas;
	bool disagg = false;
	if (cfg->npools) {
		if (!cfg->pools)
			return kvs_fail(KVS_ERR_INVALID, "kvs_fleet_run: pools NULL");
		uint64_t sum = 0;
		for (size_t p = 0; p < cfg->npools; p++) {
			if (cfg->pools[p].replicas == 0)
				return kvs_fail(KVS_ERR_INVALID, "pool %s: replicas must be >= 1",
						cfg->pools[p].name);
			/* a replica is named POOL-INDEX in every output */
			for (size_t q = 0; q < p; q++)
				if (strcmp(cfg->pools[q].name, cfg->pools[p].name) == 0)
					return kvs_fail(KVS_ERR_INVALID, "pool %s: named twice (pools "
							"%zu and %zu): its replicas' names would "
							"not say which", cfg->pools[p].name,
							q + 1, p + 1);
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
		kvs_status rs = check_roles(cfg, &disagg);
		if (rs != KVS_OK)
			return rs;
	}
	if (n == 0)
		return kvs_fail(KVS_ERR_INVALID, "--replicas must be >= 1");
	if (isnan(cfg->router_refresh_s) || !isfinite(cfg->router_refresh_s))
		return kvs_fail(KVS_ERR_INVALID, "--router-refresh %g: must be a finite time >= 0",
				cfg->router_refresh_s);
	double w0 = wall_now();
	kvs_router *router;
	kvs_status st = kvs_router_create(cfg->router ? cfg->router : "round-robin",
					  cfg->seed, &router);
	if (st != KVS_OK)
		return st;
	/* the refresh resolved: from here on (and in the result) >= 0 */
	kvs_fleet_config rcfg = *cfg;
	if (rcfg.router_refresh_s < 0)
		rcfg.router_refresh_s = kvs_router_default_refresh_s(router);
	cfg = &rcfg;
	if ((st = host_check(cfg, n)) != KVS_OK) {
		kvs_router_destroy(router);
		return st;
	}
	fleet_run f = { .cfg = cfg, .n = n };
	fleet_disagg *dg = NULL;
	kvs_fleet_result *R = kvs_calloc(1, sizeof *R);
	f.sims = kvs_calloc(n, sizeof *f.sims);
	f.routed = kvs_calloc(n, sizeof *f.routed);
	f.outstanding = kvs_calloc(n, sizeof *f.outstanding);
	f.kv_usage = kvs_calloc(n, sizeof *f.kv_usage);
	f.waiting = kvs_calloc(n, sizeof *f.waiting);
	f.running = kvs_calloc(n, sizeof *f.running);
	f.prefix = kvs_calloc(n, sizeof *f.prefix);
	f.next_ev = kvs_calloc(n, sizeof *f.next_ev);
	f.role = kvs_calloc(n, sizeof *f.role);
	f.rcfg = kvs_calloc(n, sizeof *f.rcfg);
	if (R) {
		R->rep = kvs_calloc(n, sizeof *R->rep);
		R->rs = kvs_calloc(n, sizeof *R->rs);
	}
	if (!R || !R->rep || !R->rs || !f.sims || !f.routed || !f.outstanding ||
	    !f.kv_usage || !f.waiting || !f.running || !f.prefix || !f.next_ev || !f.role || !f.rcfg) {
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
	f.needs = kvs_router_needs(router);
	size_t pool = 0;
	uint32_t in_pool = 0;
	for (uint32_t i = 0; i < n; i++) {
		f.rcfg[i] = cfg->sim;
		if (cfg->npools) {
			if (in_pool == cfg->pools[pool].replicas) {
				pool++;
				in_pool = 0;
			}
			in_pool++;
			f.rcfg[i] = cfg->pools[pool].sim;
			f.role[i] = cfg->pools[pool].role;
			R->rs[i].pool = (uint32_t)pool;
		}
		f.next_ev[i] = INFINITY;
	}
	/* Ctrl-C: the caller's flag; a disaggregated fleet's replicas read
	 * the fleet's own instead, which its loop raises at a clean point */
	f.interrupt = cfg->sim.interrupt;
	for (size_t p = 0; !f.interrupt && p < cfg->npools; p++)
		f.interrupt = cfg->pools[p].sim.interrupt;
	f.stop = &R->stop;
	f.in = (fleet_src){
		.src = src,
		.horizon = cfg->sim.horizon_s,
		.nrep = n,
		.buffered = cfg->router_refresh_s > 0 && n > 1 && cfg->sim.enable_prefix_caching &&
			    (f.needs & KVS_ROUTER_NEEDS_PREFIX),
	};
	if (disagg && (st = fleet_disagg_create(&f, &dg)) != KVS_OK)
		goto done;
	pool = 0;
	in_pool = 0;
	for (uint32_t i = 0; i < n && st == KVS_OK; i++) {
		if (cfg->npools) {
			if (in_pool == cfg->pools[pool].replicas) {
				pool++;
				in_pool = 0;
			}
			in_pool++;
		}
		if (dg) {
			f.rcfg[i].kv_prefill_only = f.role[i] == KVS_FLEET_ROLE_PREFILL;
			f.rcfg[i].on_kv = fleet_disagg_on_kv;
			f.rcfg[i].on_kv_ctx = fleet_disagg_ctx(dg, i);
			f.rcfg[i].interrupt = f.interrupt ? f.stop : NULL;
		}
		st = kvs_sim_create(&f.rcfg[i], &f.sims[i]);
		if (st != KVS_OK && cfg->npools)
			st = kvs_fail_wrap(st, "pool %s", cfg->pools[pool].name);
		if (st == KVS_OK)
			st = kvs_sim_start(f.sims[i], NULL);
	}
	if (st != KVS_OK)
		goto done;

	st = dg ? fleet_disagg_loop(dg, router) : colocated_loop(&f, router);
	if (st != KVS_OK)
		goto done;
	for (uint32_t i = 0; i < n; i++) {
		kvs_sim_load l;
		kvs_sim_get_load(f.sims[i], &l);   /* the hand-offs: final already */
		R->rs[i].kv_sent = l.kv_sent;
		R->rs[i].kv_received = l.kv_received;
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
	if (dg)
		fleet_disagg_stats(dg, kvs_sim_result_stats(R->total)->sim_time_s, &R->st, R->rs);
	if (cfg->sim.record_wall_time)
		R->st.wall_s = wall_now() - w0;
done:
	if (f.sims)
		for (uint32_t i = 0; i < n; i++)
			kvs_sim_destroy(f.sims[i]);
	fleet_disagg_destroy(dg);
	fleet_src_free(&f.in);
	kvs_free(f.sims);
	kvs_free(f.routed);
	kvs_free(f.outstanding);
	kvs_free(f.kv_usage);
	kvs_free(f.waiting);
	kvs_free(f.running);
	kvs_free(f.prefix);
	kvs_free(f.next_ev);
	kvs_free(f.role);
	kvs_free(f.rcfg);
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

void kvs_fleet_replica_name(const kvs_fleet_result *r, uint32_t i, char *buf, size_t n)
{
	if (r->cfg.npools && i < r->n)
		snprintf(buf, n, "%s-%u", r->cfg.pools[r->rs[i].pool].name, i);
	else
		snprintf(buf, n, "%u", i);
}

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* "fleet.kv": the KV pools per GPU and in all (docs/FLEET.md).  The
 * policy object's kv.budget_bytes sums each replica's pool of one GPU,
 * which is the fleet's KV memory only at tp x pp = 1: the total is
 * spelled out here, over every GPU of every replica. */
void kvs_fleet_result_kv(const kvs_fleet_result *r, kvs_fleet_kv *out)
{
	memset(out, 0, sizeof *out);
	out->uniform = true;
	const kvs_sim_stats *s0 = kvs_sim_result_stats(r->rep[0]);
	for (uint32_t i = 0; i < r->n; i++) {
		const kvs_sim_stats *s = kvs_sim_result_stats(r->rep[i]);
		const kvs_deploy *d = &kvs_sim_result_config(r->rep[i])->deploy;
		uint64_t g = kvs_deploy_rank_gpus(d);
		out->total_bytes += s->kv_budget_bytes * g;
		out->total_blocks += s->num_blocks;
		out->total_tokens += s->num_blocks * (d->block_size ? d->block_size : 16);
		out->gpus += g;
		out->uniform &= s->kv_budget_bytes == s0->kv_budget_bytes &&
				s->num_blocks == s0->num_blocks;
	}
	if (out->uniform) {
		out->budget_bytes_per_gpu = s0->kv_budget_bytes;
		out->num_gpu_blocks_per_replica = s0->num_blocks;
	}
}

static json_t *fleet_kv_json(const kvs_fleet_result *r)
{
	kvs_fleet_kv kv;
	kvs_fleet_result_kv(r, &kv);
	json_t *o = json_object();
	json_object_set_new(o, "gpus", json_integer((json_int_t)kv.gpus));
	json_object_set_new(o, "budget_bytes_per_gpu", kv.uniform
			    ? json_integer((json_int_t)kv.budget_bytes_per_gpu) : json_null());
	json_object_set_new(o, "num_gpu_blocks_per_replica", kv.uniform
			    ? json_integer((json_int_t)kv.num_gpu_blocks_per_replica)
			    : json_null());
	json_object_set_new(o, "total_bytes", json_integer((json_int_t)kv.total_bytes));
	json_object_set_new(o, "total_blocks", json_integer((json_int_t)kv.total_blocks));
	json_object_set_new(o, "total_tokens", json_integer((json_int_t)kv.total_tokens));
	return o;
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
	json_object_set_new(fl, "kv", fleet_kv_json(r));
	for (uint32_t i = 0; i < r->n; i++) {
		const kvs_fleet_replica_stats *s = &r->rs[i];
		json_t *o = json_object();
		char name[48];
		kvs_fleet_replica_name(r, i, name, sizeof name);
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
		if (r->st.disaggregated) {
			json_object_set_new(o, "role", json_string(kvs_fleet_role_name(
				r->cfg.pools[s->pool].role)));
			json_object_set_new(o, "kv_sent", json_integer((json_int_t)s->kv_sent));
			json_object_set_new(o, "kv_received", json_integer((json_int_t)s->kv_received));
			if (r->cfg.pools[s->pool].role == KVS_FLEET_ROLE_PREFILL)
				json_object_set_new(o, "link_util", jreal(s->link_util));
		}
		json_t *off = kvs_json_jt(kvs_sim_offload_json(r->rep[i]));
		if (off)
			json_object_set_new(o, "kv_offload", off);
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
			if (r->st.disaggregated)
				json_object_set_new(o, "role", json_string(kvs_fleet_role_name(pl->role)));
			json_array_append_new(pools, o);
			first += pl->replicas;
		}
		json_object_set_new(fl, "pools", pools);
	}
	if (r->st.disaggregated) {
		const kvs_fleet_stats *st = &r->st;
		json_t *L = json_object();
		json_object_set_new(L, "name", json_string(r->cfg.kv_link.name));
		json_object_set_new(L, "bytes_per_s", jreal(r->cfg.kv_link.bytes_per_s));
		json_object_set_new(L, "latency_s", jreal(r->cfg.kv_link.latency_s));
		json_object_set_new(L, "scope", json_string("prefill-egress"));
		json_object_set_new(fl, "kv_link", L);
		json_t *T = json_object();
		json_object_set_new(T, "count", json_integer((json_int_t)st->kv_transfers));
		json_object_set_new(T, "bytes", jreal(st->kv_bytes));
		json_object_set_new(T, "mean_s", jreal(st->kv_transfer_mean_s));
		json_object_set_new(T, "p99_s", jreal(st->kv_transfer_p99_s));
		json_object_set_new(T, "max_s", jreal(st->kv_transfer_max_s));
		json_object_set_new(T, "link_util_mean", jreal(st->kv_link_util_mean));
		json_object_set_new(T, "link_util_max", jreal(st->kv_link_util_max));
		/* interrupted: the transfers it stopped on a link (their
		 * requests unfinished on their decode replicas) */
		if (kvs_sim_result_stats(r->total)->interrupted)
			json_object_set_new(T, "in_flight", json_integer((json_int_t)st->kv_in_flight));
		json_object_set_new(fl, "transfers", T);
	}
	json_object_set_new(doc, "fleet", fl);
	return doc;
}

kvs_json *kvs_fleet_report_json(const kvs_fleet_result *r, const char *trace_path,
				kvs_trace_format format, const kvs_trace_stats *tstats)
{
	return kvs_json_of(fleet_jt(r, trace_path, format, tstats));
}
