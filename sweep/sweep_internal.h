/*
 * sweep_internal.h - private pieces shared by the sweep's files: the
 * workload summary the kernel model reads, and the result object.
 */
#ifndef KVSIM_SWEEP_INTERNAL_H
#define KVSIM_SWEEP_INTERNAL_H

#include "kvsim/sweep.h"
#include "kvsim/model.h"

/* What the kernel model needs of a request set, computed once per sweep. */
typedef struct kvs_sweep_workload {
	const kvs_request_set *set;
	double decode_steps;        /* sequence-steps of decode in the trace */
	double context_sum;         /* tokens read over those steps */
	double mean_context;        /* context_sum / decode_steps */
	uint32_t hash_block_tokens; /* granularity of the hash ids (0: none) */
	bool prompts_only;          /* no request decodes: prompts stand in */
} kvs_sweep_workload;

void kvs_sweep_workload_init(kvs_sweep_workload *w, const kvs_request_set *set);
kvs_status kvs_sweep_kernel_ws(const kvs_sweep_config *c, const kvs_sweep_workload *w,
			       kvs_policy policy, uint32_t b, kvs_sweep_kernel *out);
/* Fold the relative kernel cost into sc's step-time model: its KV-read
 * factor is multiplied by rel (when c->kernel_feeds_step_time). */
kvs_status kvs_sweep_apply_kernel(const kvs_sweep_config *c, double rel,
				  kvs_sim_config *sc);

struct kvs_sweep_result {
	kvs_sweep_config cfg;
	kvs_sweep_row *rows;             /* npolicies x nblock_sizes, policy-major */
	size_t nrows;
	kvs_sweep_capacity *caps;        /* same order, when searched */
	size_t ncaps;
	kvs_sweep_recommendation rec[KVS_OBJ_COUNT_];
	uint64_t simulations;
	size_t points_done, points_total;   /* simulated combinations (done:
	                                     * with find_max_rate, its search too) */
	size_t points_replayed;          /* of those, with the row's replay done
	                                  * (all done ones; more when a search
	                                  * was interrupted) */
	bool interrupted;
	double mean_context;
	double base_rate;                /* trace's mean rate at cfg.time_scale */
	uint64_t requests;               /* the set's: what every row's replay reads */
	uint32_t hash_block_tokens;
};

kvs_status kvs_sweep_recommend(kvs_sweep_result *r);

/* ---- points ---------------------------------------------------------------
 * The unit of work of a sweep, threaded (kvs_sweep_run) or scaled out
 * (`kvsim sweep --plan / --from-plan`, sweep/plan.c): one simulated
 * combination, its row's replay and, with find_max_rate, its capacity
 * search.  Combinations that repeat another (contiguous policies at later
 * block sizes, when deduplicated) are not points.  Points are numbered in
 * row order, so point p's row index grows with p. */
typedef struct kvs_sweep_point {
	size_t row;                 /* combination index, policy-major */
	kvs_policy policy;
	uint32_t block_size;        /* tokens */
	kvs_sim_config sc;          /* the row's simulator configuration */
} kvs_sweep_point;

typedef struct kvs_sweep_point_result {
	kvs_sim_stats st;           /* the row's replay */
	kvs_sweep_capacity cap;     /* with find_max_rate, else zero (and zero
	                             * when the search was interrupted) */
	uint64_t simulations;       /* replays: 1 + capacity probes */
} kvs_sweep_point_result;

/* What kvs_sweep_point_run reports as it goes: a replay starts (at rate,
 * requests/s; probe: a capacity probe) or ends. */
typedef struct kvs_sweep_tick {
	size_t point;
	double rate;
	bool probe;
	bool end;                   /* false: starts */
} kvs_sweep_tick;

typedef struct kvs_sweep_work {
	const kvs_request_set *set; /* not owned */
	kvs_sweep_result *res;      /* rows named, kernel cost and base rate set */
	kvs_sweep_point *points;
	size_t npoints;
} kvs_sweep_work;

/* Check cfg against set and lay out the rows and points (no simulation;
 * cost: the kernel model per row, O(requests) each).  On failure w is
 * empty. */
kvs_status kvs_sweep_work_init(const kvs_sweep_config *cfg, const kvs_request_set *set,
			       kvs_sweep_work *w);
/* Run point p (thread-safe: reads w only); tick, when not NULL, is called
 * as each replay starts and ends.  out is untouched on failure.  When the
 * configuration's interrupt is raised: KVS_ERR_STATE if the row's replay
 * did not finish; KVS_OK with a zero capacity (simulations 0) if only the
 * capacity search did not. */
kvs_status kvs_sweep_point_run(const kvs_sweep_work *w, size_t p,
			       void (*tick)(void *ctx, const kvs_sweep_tick *t), void *ctx,
			       kvs_sweep_point_result *out);
/* Put point p's result into its row (not thread-safe). */
void kvs_sweep_point_store(kvs_sweep_work *w, size_t p, const kvs_sweep_point_result *r);
/* Every point stored: repeat the deduplicated rows, mark the SLO verdicts,
 * recommend; hands the result over in *out and frees the rest of w (all of
 * w, *out untouched, when the recommendation runs out of memory). */
kvs_status kvs_sweep_work_finish(kvs_sweep_work *w, kvs_sweep_result **out);
void kvs_sweep_work_free(kvs_sweep_work *w);
/* Do sweep/plan.c's field tables cover kvs_sim_stats and kvs_sweep_capacity
 * (every byte a field or alignment padding)?  err names the gap. */
bool kvs_sweep_point_fields_check(char *err, size_t errn);

#endif
