/*
 * kvsim/fleet.h - many serving replicas behind one router.
 *
 * A fleet is N replicas, each the engine of kvsim/sim.h with its own
 * allocator, scheduler and prefix cache, fed by one router that sends each
 * arriving request to one replica.  The fleet runs one event loop: before a
 * request is routed, every replica is advanced to its arrival time, so the
 * router reads the replicas' state at that instant (or, with a refresh
 * interval, a snapshot taken at the last refresh).  Pools of role prefill
 * and decode disaggregate: a request prefills on a prefill replica, then
 * its KV crosses that replica's link to a decode replica.  docs/FLEET.md
 * describes the routers, the signals, disaggregation, the outputs and the
 * cost.
 *
 * Routers (one method table each, listed by kvs_router_names()):
 *   round-robin, random (seeded), least-requests, least-kv, prefix
 *   (longest cached prefix with SGLang's load-imbalance guard), and
 *   score:prefix=W,queue=W,kv=W (weighted normalised scorers, as llm-d's
 *   inference scheduler).
 *
 * Cost.  O(events + arrivals x replicas): a busy replica's span of decode
 * steps ends at the next arrival, wherever it is routed, since the router
 * may send it there.  Memory: the replicas' requests in flight.
 *
 * Threads.  A fleet run holds all its state; runs may go in parallel.
 */
#ifndef KVSIM_FLEET_H
#define KVSIM_FLEET_H

#include <stdio.h>

#include "kvsim/common.h"
#include "kvsim/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- routers ---------------------------------------------------------------- */

typedef struct kvs_router kvs_router;

/* What a router reads about the replicas, at the request's arrival (or at
 * the last refresh for outstanding and kv_usage). */
typedef struct kvs_router_view {
	uint32_t n;                     /* replicas */
	const uint64_t *outstanding;    /* [n] requests routed there and not yet
	                                 * completed or rejected */
	const double *kv_usage;         /* [n] share of KV blocks in use, 0..1 */
	/* [n] the engines' scheduler queues: requests waiting (or swapped
	 * out) and sequences running */
	const uint64_t *waiting, *running;
	/* [n] leading blocks of the request's prompt cached on each replica;
	 * computed on first use by prefix_of (NULL before) */
	uint32_t (*prefix_of)(void *ctx, uint32_t replica);
	uint32_t request_blocks;        /* full prompt blocks with hash ids */
	void *ctx;
} kvs_router_view;

/* Parse a router specification ("round-robin", "score:prefix=2,queue=1",
 * ...) and create the router; seed drives `random`.  Errors name the
 * router or the parameter. */
kvs_status kvs_router_create(const char *spec, uint64_t seed, kvs_router **out);
void kvs_router_destroy(kvs_router *r);
/* The replica for the next request, in [0, v->n). */
uint32_t kvs_router_pick(kvs_router *r, const kvs_router_view *v);
/* Signals a router reads (so that a fleet reads only those): */
enum {
	KVS_ROUTER_NEEDS_QUEUE = 1,   /* outstanding */
	KVS_ROUTER_NEEDS_KV = 2,      /* kv_usage */
	KVS_ROUTER_NEEDS_PREFIX = 4,  /* prefix_of */
	KVS_ROUTER_NEEDS_SCHED = 8,   /* waiting, running */
};
unsigned kvs_router_needs(const kvs_router *r);
/* The signals' refresh interval the router's engine uses when the fleet
 * gives none (seconds; 0: exact signals).  vllm-dp: 0.1, the interval
 * of vLLM's data-parallel coordinator. */
double kvs_router_default_refresh_s(const kvs_router *r);
/* The router's name ("score", "prefix", ...). */
const char *kvs_router_name(const kvs_router *r);
/* The specification with every parameter spelled out (for reports). */
const char *kvs_router_spec(const kvs_router *r);
/* "round-robin, random, ..." and the help lines of every router. */
const char *kvs_router_names(void);
void kvs_router_help(FILE *f);

/* ---- fleets ------------------------------------------------------------------ */

/* What a pool's replicas do: everything, or one phase of a disaggregated
 * fleet (prefill pools hand each prefilled request's KV to a decode pool
 * over the KV link). */
typedef enum kvs_fleet_role {
	KVS_FLEET_ROLE_BOTH = 0,
	KVS_FLEET_ROLE_PREFILL,
	KVS_FLEET_ROLE_DECODE,
	KVS_FLEET_ROLE_COUNT_
} kvs_fleet_role;

const char *kvs_fleet_role_name(kvs_fleet_role r);   /* "both", "prefill", "decode" */
kvs_status kvs_fleet_role_parse(const char *text, kvs_fleet_role *out);

/* A pool of identical replicas in a heterogeneous fleet. */
typedef struct kvs_fleet_pool {
	char name[32];
	uint32_t replicas;         /* >= 1 */
	kvs_sim_config sim;        /* the pool's engine (its GPU, tp, ...) */
	kvs_fleet_role role;       /* both (0) unless disaggregated */
} kvs_fleet_pool;

/* The link a disaggregated fleet moves KV over: one per prefill replica
 * (its egress), shared fairly by the transfers leaving that replica. */
typedef struct kvs_fleet_link {
	char name[32];             /* the preset, or "custom" */
	double bytes_per_s;        /* > 0 */
	double latency_s;          /* >= 0, per transfer, before its bytes */
} kvs_fleet_link;

/* Parse --kv-link: PRESET[:LATENCY] or BW[:LATENCY], BW a number with an
 * optional unit (GB/s when none; B/s, MB/s, GB/s, TB/s, Gb/s, Gbps, Tb/s),
 * LATENCY seconds with an optional unit (s, ms, us, ns).  Errors name the
 * part.  Presets: kvs_fleet_link_help. */
kvs_status kvs_fleet_link_parse(const char *spec, kvs_fleet_link *out);
void kvs_fleet_link_help(FILE *f);
/* The default link (ib-400g). */
void kvs_fleet_link_default(kvs_fleet_link *out);

typedef struct kvs_fleet_config {
	kvs_sim_config sim;        /* every replica's engine (on_request called
	                            * with the records of all replicas) */
	uint32_t replicas;         /* >= 1; ignored when pools are given */
	/* Optional heterogeneous fleet: replicas numbered pool by pool, in
	 * this order (copied into the result). */
	const kvs_fleet_pool *pools;
	size_t npools;
	const char *router;        /* router specification (round-robin) */
	double router_refresh_s;   /* 0: exact signals; > 0: outstanding, KV
	                            * use, queues and prefix matches as of the
	                            * last refresh, every S s; < 0 (the
	                            * default): the router's own
	                            * (kvs_router_default_refresh_s) */
	uint64_t seed;             /* for the random router */
	/* Optional: told every routing decision (tests, per-request output). */
	void (*on_route)(void *ctx, const kvs_request *req, uint32_t replica);
	void *on_route_ctx;
	/* Disaggregated fleets (pools of role prefill and decode): the KV
	 * link (kvs_fleet_link_default unless set); on_route is also told
	 * each decode replica chosen. */
	kvs_fleet_link kv_link;
} kvs_fleet_config;

void kvs_fleet_config_defaults(kvs_fleet_config *c, const kvs_deploy *d);

typedef struct kvs_fleet_result kvs_fleet_result;

/* Per-replica figures, and the balance of the fleet. */
typedef struct kvs_fleet_replica_stats {
	uint32_t pool;             /* index in cfg.pools (0 without pools) */
	uint64_t routed;           /* requests the router sent there */
	uint64_t arrived, completed, rejected, unfinished;
	double kv_used_pct;        /* time-weighted KV in use: token states +
	                            * reservation + fragmentation (100 - free -
	                            * cached-idle) */
	double prefix_hit_rate_tokens;
	uint64_t preemptions;
	/* disaggregated: requests handed out after their prefill (prefill
	 * replicas) and received with their KV (decode replicas; not counted
	 * in arrived): arrived + kv_received = completed + rejected +
	 * unfinished + kv_sent */
	uint64_t kv_sent, kv_received;
	double link_util;          /* prefill replicas: share of the simulated
	                            * time its egress link moved bytes */
} kvs_fleet_replica_stats;

typedef struct kvs_fleet_stats {
	uint32_t replicas;
	double requests_cv;        /* coefficient of variation of arrived per
	                            * replica (population standard deviation /
	                            * mean; 0 when the mean is 0) */
	double kv_used_cv;         /* of kv_used_pct per replica */
	double wall_s;             /* < 0 unless record_wall_time */
	/* disaggregated fleets: KV transfers that ended, their bytes, their
	 * time from the decode side's allocation to the last byte (latency
	 * and sharing included), and link use (busy time / simulated time,
	 * mean and max over the prefill replicas' links) */
	bool disaggregated;
	uint64_t kv_transfers;
	double kv_bytes;
	double kv_transfer_mean_s, kv_transfer_p99_s, kv_transfer_max_s;
	double kv_link_util_mean, kv_link_util_max;
	/* transfers still on a link when the run ended (a horizon or an
	 * interrupt): their requests are unfinished on their decode
	 * replicas, their KV still held on their prefill replicas */
	uint64_t kv_in_flight;
} kvs_fleet_stats;

/* Run the fleet over every request of src.  With cfg->sim.interrupt (or
 * a pool's) raised, the run stops early (docs/FLEET.md): a colocated
 * fleet routes nothing more and its replicas stop at their next event; a
 * disaggregated one stops its replicas itself at its next clean point
 * (every hand-off arrived at its decode replica).  The result then holds
 * what was done, every request accounted for, and its total says
 * interrupted. */
kvs_status kvs_fleet_run(const kvs_fleet_config *cfg, const kvs_request_source *src,
			 kvs_fleet_result **out);
void kvs_fleet_result_destroy(kvs_fleet_result *r);

/* The fleet as a whole (kvs_sim_result_merge of the replicas; the
 * replica's own result when there is one). */
const kvs_sim_result *kvs_fleet_result_total(const kvs_fleet_result *r);
const kvs_sim_result *kvs_fleet_result_replica(const kvs_fleet_result *r, uint32_t i);
const kvs_fleet_replica_stats *kvs_fleet_result_replica_stats(const kvs_fleet_result *r,
							      uint32_t i);
const kvs_fleet_stats *kvs_fleet_result_stats(const kvs_fleet_result *r);
const kvs_fleet_config *kvs_fleet_result_config(const kvs_fleet_result *r);

/* The KV pools of the whole fleet, over every GPU of every replica (the
 * total result's kv_budget_bytes sums one GPU's pool per replica, which is
 * the fleet's only at tp x pp = 1).  The one place these sums are made:
 * the table, "fleet.kv" and the cost all read them. */
typedef struct kvs_fleet_kv {
	uint64_t gpus;                 /* tp x pp, summed over the replicas */
	uint64_t total_bytes;          /* each replica's per-GPU pool x its GPUs */
	uint64_t total_blocks;         /* blocks of every replica's pool */
	uint64_t total_tokens;         /* those blocks x their block sizes */
	bool uniform;                  /* every replica's pool alike: then */
	uint64_t budget_bytes_per_gpu; /* one GPU's pool */
	uint64_t num_gpu_blocks_per_replica;
} kvs_fleet_kv;
void kvs_fleet_result_kv(const kvs_fleet_result *r, kvs_fleet_kv *out);

/* The replay document (kvs_sim_report_json) of the whole fleet, command
 * "fleet", plus a "fleet" object: replicas, router, refresh, per-replica
 * rows and balance (docs/FLEET.md). */
/* Replicas of the fleet (replicas, or the pools' sum). */
uint32_t kvs_fleet_result_replicas(const kvs_fleet_result *r);
/* Replica i's name in every output: its index, or POOL-INDEX with pools
 * (the index counts over the whole fleet). */
void kvs_fleet_replica_name(const kvs_fleet_result *r, uint32_t i, char *buf, size_t n);

/* (a new document: release it with kvs_json_free; NULL when out of memory) */
kvs_json *kvs_fleet_report_json(const kvs_fleet_result *r, const char *trace_path,
				kvs_trace_format format, const kvs_trace_stats *tstats);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_FLEET_H */
