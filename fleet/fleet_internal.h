/*
 * fleet_internal.h - what fleet.c (the fleet, its colocated loop) and
 * disagg.c (the disaggregated loop) share (private to fleet/).
 */
#ifndef KVSIM_FLEET_INTERNAL_H
#define KVSIM_FLEET_INTERNAL_H

#include "kvsim/fleet.h"

/* One request not yet routed.  With a stale prefix signal (refresh S > 0
 * and a router reading prefixes) requests are read ahead to the end of
 * the refresh interval, and their prefix matches are taken on every
 * replica at the refresh instant: the router then sees each replica's
 * cache as of the last refresh. */
typedef struct ahead_ent {
	kvs_request q;             /* q.hash_ids points into ids */
	uint64_t *ids;
	uint32_t *prefix;          /* [n] at the last refresh; NULL before */
	uint32_t nblocks;          /* full prompt blocks with hash ids */
} ahead_ent;

typedef struct fleet_src {
	const kvs_request_source *src;
	bool buffered;             /* read ahead (stale prefix signal) */
	double horizon;            /* no read-ahead past it */
	double last;               /* previous arrival (order check) */
	bool end;                  /* the source is exhausted */
	ahead_ent *v;              /* ring of requests read */
	size_t head, n, cap;
	uint32_t nrep;
} fleet_src;

typedef struct fleet_run {
	const kvs_fleet_config *cfg;
	uint32_t n;
	kvs_sim **sims;
	uint64_t *routed;
	uint64_t *outstanding;     /* router's view */
	uint64_t *waiting, *running;  /* [n] router's view of the queues */
	double *kv_usage;          /* router's view */
	uint32_t *prefix;          /* this request's prefix per replica; UINT32_MAX: unread */
	const uint32_t *stale;     /* [n] prefixes as of the last refresh, or NULL */
	double *next_ev;           /* [n] each replica's next event time */
	unsigned needs;            /* KVS_ROUTER_NEEDS_* of the router */
	const kvs_request *req;
	kvs_fleet_role *role;      /* [n] */
	fleet_src in;
	kvs_sim_config *rcfg;      /* [n] each replica's engine settings */
	/* The caller's Ctrl-C flag (cfg->sim.interrupt, else a pool's), read
	 * by the loop before each step; NULL: not interruptible. */
	const volatile sig_atomic_t *interrupt;
	/* Disaggregated: the replicas' own interrupt flag, raised by the loop
	 * once it has reached a clean point (fleet_disagg_loop); the
	 * colocated replicas read the caller's flag itself. */
	volatile sig_atomic_t *stop;
} fleet_run;

/* Requests fed to a replica whose arrival it has not processed yet (fed
 * at the instant it is at): waiting, as an engine's add_request queues
 * them at once. */
static inline uint64_t fleet_unseen(uint64_t routed, const kvs_sim_load *l)
{
	uint64_t seen = l->arrived + l->kv_received;
	return routed > seen ? routed - seen : 0;
}

/* Has the caller asked the run to stop? */
static inline bool fleet_interrupted(const fleet_run *f)
{
	return f->interrupt && *f->interrupt;
}

/* The next request (NULL at the end) and, read ahead, its entry. */
kvs_status fleet_src_peek(fleet_src *s, const ahead_ent **out);
void fleet_src_pop(fleet_src *s);
/* At a refresh instant (every replica advanced to it): read ahead to
 * arrivals before until_s and take their prefix matches now. */
kvs_status fleet_src_snapshot(fleet_src *s, fleet_run *f, double until_s);
void fleet_src_free(fleet_src *s);

/* The disaggregated loop (disagg.c).  create: before the replicas are
 * created (their engines take fleet_disagg_on_kv with
 * fleet_disagg_ctx(d, i)); loop: every request of f->in through the
 * prefill and decode replicas of f, transfer figures into *st and rs. */
typedef struct fleet_disagg fleet_disagg;
kvs_status fleet_disagg_create(fleet_run *f, fleet_disagg **out);
double fleet_disagg_on_kv(void *ctx, int what, const kvs_sim_kv_handoff *h);
void *fleet_disagg_ctx(fleet_disagg *d, uint32_t replica);
kvs_status fleet_disagg_loop(fleet_disagg *d, kvs_router *router);
/* after the replicas finished: sim_time_s is the fleet's */
void fleet_disagg_stats(fleet_disagg *d, double sim_time_s, kvs_fleet_stats *st,
			kvs_fleet_replica_stats *rs);
void fleet_disagg_destroy(fleet_disagg *d);

#endif
