/*
 * kvsim/sweep.h - block-size tuning and capacity search over one trace.
 *
 * A sweep replays one request set (read once, shared read-only by every
 * worker thread) under every (policy, block size) combination and reports
 * one row per combination: fragmentation, block-table metadata, prefix-cache
 * hit rate, concurrency, queueing, latency percentiles, throughput,
 * preemptions and the modelled attention-kernel cost at that block size.
 * With capacity search on, it also finds for each combination the highest
 * request rate (the trace's arrivals scaled through the cursor's time_scale)
 * at which the p99 TTFT and TPOT SLOs still hold, by bracketing and
 * bisection on a geometric grid of step (1 + tolerance).
 *
 * Kernel cost.  Decode attention through a block table costs more than over
 * contiguous KV: one block-id load per block, and the last block of a
 * sequence is read whole.  The default analytic model (docs/SWEEP.md)
 *     t_paged(b, c) / t_contig(c) = (b + delta) * ceil(c / b) / c
 * with delta = kernel_block_overhead tokens per block, is averaged over the
 * trace's decode contexts; a measured kernel profile (kvs_kernel_profile)
 * replaces it where it has the block size.  The relative cost scales the
 * KV-read part of the simulator's step time (see kvs_sweep_row_sim_config).
 *
 * Determinism.  Results are in (policy, block size) order whatever the
 * number of worker threads; the same inputs give byte-identical JSON.
 *
 * Threads.  kvs_sweep_run uses cfg->jobs pthreads; the library keeps no
 * mutable global state.  Errors are reported on the calling thread (the
 * failing combination with the lowest index wins, so messages are
 * deterministic too).
 */
#ifndef KVSIM_SWEEP_H
#define KVSIM_SWEEP_H

#include <stdio.h>

#include "kvsim/common.h"
#include "kvsim/alloc.h"
#include "kvsim/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVS_SWEEP_MAX_BLOCK_SIZES 1024
#define KVS_SWEEP_MAX_BLOCK_SIZE 65536u

/* ---- measured kernel profile ------------------------------------------------
 * JSON written by the kernel benchmark (bench_kernels --json, docs/KERNELS.md):
 *   { "gpu": str, "peak_gbps": num,
 *     "entries": [ { "block_size", "context", "batch", "paged_us",
 *                    "contiguous_us", "gbps" }, ... ] }
 * Errors name the file, the entry index and the key. */
typedef struct kvs_kernel_profile kvs_kernel_profile;

kvs_status kvs_kernel_profile_load(const char *path, kvs_kernel_profile **out);
void kvs_kernel_profile_destroy(kvs_kernel_profile *p);
const char *kvs_kernel_profile_gpu(const kvs_kernel_profile *p);
const char *kvs_kernel_profile_path(const kvs_kernel_profile *p);
/* Does the profile hold measurements at this block size? */
bool kvs_kernel_profile_has(const kvs_kernel_profile *p, uint32_t block_size);
/* Measured paged / contiguous time at (block size, context), averaged over
 * the batches measured, interpolated linearly in log(context) and clamped
 * at the ends.  0 when the block size is absent. */
double kvs_kernel_profile_ratio(const kvs_kernel_profile *p,
				uint32_t block_size, double context);
/* delta (tokens per block) fitted by least squares to every entry, so that
 * block sizes the profile lacks use the analytic model calibrated to the
 * measured GPU. */
double kvs_kernel_profile_fit_delta(const kvs_kernel_profile *p);

/* Analytic relative cost of paged decode attention at one context:
 * (b + delta) * ceil(c / b) / c (1 + delta at b = 1; -> 1 as b -> 1 and
 * delta -> 0).  context >= 1. */
double kvs_kernel_model_ratio(uint32_t block_size, double delta, uint64_t context);

typedef enum kvs_kernel_source {
	KVS_KERNEL_CONTIGUOUS = 0,  /* contiguous policy: relative cost 1 */
	KVS_KERNEL_MODEL,           /* analytic model, default delta */
	KVS_KERNEL_PROFILE,         /* measured at this block size */
	KVS_KERNEL_PROFILE_FIT,     /* analytic model, delta fitted to the profile */
} kvs_kernel_source;

/* "contiguous", "model", "profile", "profile_fit" */
const char *kvs_kernel_source_name(kvs_kernel_source s);

/* ---- configuration ---------------------------------------------------------- */

typedef struct kvs_sweep_config {
	/* Engine, deployment and step-time model of every run; policy and
	 * deploy.block_size are set per combination. */
	kvs_sim_config base;
	kvs_policy policies[KVS_POLICY_CAP];
	size_t npolicies;
	uint32_t block_sizes[KVS_SWEEP_MAX_BLOCK_SIZES];
	size_t nblock_sizes;
	unsigned jobs;                 /* worker threads; 0 = online CPUs */
	double time_scale;             /* arrivals x this for the rows (1) */
	/* kernel cost */
	double kernel_block_overhead;  /* delta, tokens per block (1.0) */
	const kvs_kernel_profile *kernel_profile;  /* NULL: analytic model; not owned */
	bool kernel_feeds_step_time;   /* scale the step time's KV read (true) */
	/* Contiguous policies (max, pow2, oracle, vattention) allocate the same
	 * at every block size: simulate once and repeat the row (true). */
	bool dedupe_contiguous;
	/* SLOs: goodput, the throughput recommendation and capacity search */
	double slo_ttft_s;             /* p99 TTFT bound; 0 = none */
	double slo_tpot_s;             /* p99 TPOT bound; 0 = none */
	bool find_max_rate;            /* needs at least one SLO */
	double rate_tolerance;         /* relative grid step (0.02) */
	double rate_max_factor;        /* search within trace rate x / this factor (1e4) */
	/* Recommendations for least KV waste and best prefix-hit rate consider
	 * only paged block sizes whose kernel relative cost is within this
	 * fraction of the cheapest paged block size's (0.05): block size 1
	 * wastes nothing but doubles the attention time. */
	double kernel_cost_margin;
} kvs_sweep_config;

/* Defaults around a base configuration (may be NULL: the caller fills
 * base): every policy, block sizes 1..256 (powers of two), jobs 0,
 * delta 1, kernel feed on, dedupe on, tolerance 0.02, kernel-cost
 * margin 0.05. */
void kvs_sweep_config_defaults(kvs_sweep_config *c, const kvs_sim_config *base);

/* Parse "1,2,4,8" / "paged,max" lists (sorted as given, duplicates are an
 * error).  Messages name the offending item. */
kvs_status kvs_sweep_parse_block_sizes(const char *text, kvs_sweep_config *c);
kvs_status kvs_sweep_parse_policies(const char *text, kvs_sweep_config *c);

/* Can every block size of c be used with the hash ids of set?  Hash ids of
 * g tokens (Mooncake: 512) re-split to block sizes that divide g or merge
 * to multiples of g; any other block size is KVS_ERR_INVALID naming the
 * block size, the granularity and the trace.  Only checked when prefix
 * caching is on (otherwise the ids are not used).  Load set with
 * kvs_trace_opts block_size 0 and hash_partial_block, so that the rows'
 * prefix hits equal a replay's at each block size. */
kvs_status kvs_sweep_check(const kvs_sweep_config *c, const kvs_request_set *set);

/* The workload's decode contexts, summarised once per set for the kernel
 * model: per block size b, sum over decode steps of ceil(c / b) and of c. */
typedef struct kvs_sweep_kernel {
	double rel;                 /* paged / contiguous decode attention time */
	double cost_us;             /* modelled decode-attention time of one
	                             * sequence-step at the mean decode context,
	                             * all layers of one rank, microseconds */
	double mean_context;        /* tokens, decode-step weighted */
	kvs_kernel_source source;
} kvs_sweep_kernel;

kvs_status kvs_sweep_kernel_cost(const kvs_sweep_config *c,
				 const kvs_request_set *set, kvs_policy policy,
				 uint32_t block_size, kvs_sweep_kernel *out);

/* The exact simulator configuration of one row (policy, block size, SLOs,
 * and the step-time model with the kernel cost folded in).  A replay with
 * it and a cursor at c->time_scale reproduces the row. */
kvs_status kvs_sweep_row_sim_config(const kvs_sweep_config *c,
				    const kvs_request_set *set, kvs_policy policy,
				    uint32_t block_size, kvs_sim_config *out);

/* ---- results ---------------------------------------------------------------- */

typedef struct kvs_sweep_row {
	kvs_policy policy;
	uint32_t block_size;
	kvs_sim_stats st;            /* the replay's figures */
	kvs_sweep_kernel kernel;
	bool repeated;               /* contiguous: same run as the first block size */
	bool meets_slo;              /* p99 TTFT and TPOT within the SLOs given */
	bool done;                   /* replayed; false only in an interrupted sweep */
} kvs_sweep_row;

typedef enum kvs_capacity_outcome {
	KVS_CAPACITY_FOUND = 0,      /* max_rate meets, max_rate x (1 + tol) does not */
	KVS_CAPACITY_UNBOUNDED,      /* SLOs hold up to trace rate x rate_max_factor */
	KVS_CAPACITY_UNATTAINABLE,   /* SLOs fail even at trace rate / rate_max_factor */
} kvs_capacity_outcome;

const char *kvs_capacity_outcome_name(kvs_capacity_outcome o); /* "found", ... */

typedef struct kvs_sweep_capacity {
	kvs_policy policy;
	uint32_t block_size;
	kvs_capacity_outcome outcome;
	double max_rate;             /* requests/s at which the SLOs hold (0 if none) */
	double fail_rate;            /* the next grid rate, where they do not */
	double time_scale;           /* arrivals scale of max_rate */
	double tolerance;
	double ttft_p99_s, tpot_p99_s;    /* at max_rate */
	double concurrency_mean;     /* running sequences at max_rate (replica) */
	double conversations_per_gpu;     /* concurrency_mean / (tp x pp) */
	double requests_per_s_per_gpu;    /* max_rate / (tp x pp) */
	double output_tokens_per_s;       /* at max_rate */
	uint32_t simulations;        /* 0: not searched (an interrupted sweep) */
	bool repeated;
} kvs_sweep_capacity;

typedef enum kvs_sweep_objective {
	KVS_OBJ_THROUGHPUT = 0,      /* highest throughput within the SLOs */
	KVS_OBJ_WASTE,               /* least KV waste */
	KVS_OBJ_PREFIX,              /* best prefix-cache hit rate */
	KVS_OBJ_COUNT_
} kvs_sweep_objective;

typedef struct kvs_sweep_recommendation {
	kvs_sweep_objective objective;
	const char *objective_name;  /* "throughput_within_slo", "least_kv_waste",
	                              * "best_prefix_hit_rate" */
	bool found;
	kvs_policy policy;
	uint32_t block_size;         /* the row's; see any_block_size */
	/* The policy does not depend on the block size (every policy but
	 * paged): block_size is then only the first swept, and the policy is
	 * named without one (JSON block_size null). */
	bool any_block_size;
	char reason[640];            /* one sentence */
} kvs_sweep_recommendation;

typedef struct kvs_sweep_result kvs_sweep_result;

/* Run every combination (and the capacity searches) on cfg->jobs threads.
 * set is only read.  On failure nothing is returned and the message names
 * the combination.
 *
 * Interruption.  With cfg->base.interrupt set, once *interrupt is non-zero
 * the replays running stop at their next event and no further combination
 * starts; the result holds the combinations that finished (rows with done
 * set, capacity entries with simulations > 0), recommends among those, and
 * kvs_sweep_result_interrupted says so.  KVS_OK, even with nothing done. */
kvs_status kvs_sweep_run(const kvs_sweep_config *cfg, const kvs_request_set *set,
			 kvs_sweep_result **out);

/* Where a running sweep stands, for a progress line. */
typedef struct kvs_sweep_progress {
	size_t points_done;          /* simulated combinations finished (with
	                              * find_max_rate, their capacity search too) */
	size_t points_total;         /* simulated combinations in all */
	uint64_t simulations;        /* replays finished: rows and capacity probes */
	/* the replay that started last, on any worker thread */
	kvs_policy policy;
	uint32_t block_size;         /* tokens */
	double rate;                 /* its arrival rate, requests/s (0: unknown) */
	bool probe;                  /* a capacity probe, else the row's replay */
} kvs_sweep_progress;

/* The same with a progress callback, called (serialised, on a worker
 * thread) when a replay starts and when one ends. */
kvs_status kvs_sweep_run_ex(const kvs_sweep_config *cfg, const kvs_request_set *set,
			    void (*on_progress)(void *ctx, const kvs_sweep_progress *p),
			    void *ctx, kvs_sweep_result **out);
void kvs_sweep_result_destroy(kvs_sweep_result *r);

const kvs_sweep_config *kvs_sweep_result_config(const kvs_sweep_result *r);
size_t kvs_sweep_result_rows(const kvs_sweep_result *r);
const kvs_sweep_row *kvs_sweep_result_row(const kvs_sweep_result *r, size_t i);
/* 0 rows unless find_max_rate. */
size_t kvs_sweep_result_capacities(const kvs_sweep_result *r);
const kvs_sweep_capacity *kvs_sweep_result_capacity(const kvs_sweep_result *r,
						    size_t i);
const kvs_sweep_recommendation *kvs_sweep_result_recommendation(
	const kvs_sweep_result *r, kvs_sweep_objective o);
/* The trace's mean arrival rate at cfg->time_scale, requests/s ((n - 1) /
 * span; 0 with fewer than two distinct arrival times): the rate the rows
 * were replayed at and the base of the capacity grid. */
double kvs_sweep_result_base_rate(const kvs_sweep_result *r);
/* Simulations run in all (rows and capacity probes). */
uint64_t kvs_sweep_result_simulations(const kvs_sweep_result *r);
/* Was the sweep interrupted (cfg->base.interrupt)?  The simulated
 * combinations finished and in all, when the pointers are not NULL. */
bool kvs_sweep_result_interrupted(const kvs_sweep_result *r, size_t *points_done,
				  size_t *points_total);
/* Simulated combinations whose row's replay finished: points_done, plus,
 * in a sweep interrupted during capacity searches, those whose search was
 * cut short (their rows stand, their capacities do not). */
size_t kvs_sweep_result_points_replayed(const kvs_sweep_result *r);

/* The recommendation per objective from a sweep's rows (and capacity
 * entries, NULL without a search), as kvs_sweep_run makes them; c gives the
 * policies and block sizes (rows are policy-major, c->npolicies x
 * c->nblock_sizes of them), the SLOs and the kernel-cost margin.  Rules
 * (docs/SWEEP.md "Recommendations"):
 *  - only deployable policies are recommended: oracle reserves the true
 *    output length, which no server knows in advance; it is named in the
 *    sentence as the bound it is;
 *  - a policy independent of the block size counts once (its first row);
 *  - ties (on the capacity grid, or on the objective's figure) go to the
 *    lower p99 TTFT, then the lower KV waste, then the smaller block-table
 *    metadata, then the earlier row.
 * KVS_ERR_NOMEM (out untouched) when its n-entry scratch cannot be had. */
kvs_status kvs_sweep_recommend_rows(const kvs_sweep_config *c, const kvs_sweep_row *rows,
			      const kvs_sweep_capacity *caps, size_t n,
			      kvs_sweep_recommendation out[KVS_OBJ_COUNT_]);

/* KV waste of a row as the compare report counts it: reservation +
 * internal + external fragmentation, time-weighted percent of the budget. */
double kvs_sweep_row_waste_pct(const kvs_sweep_row *row);

/* The sweep document of docs/REPORT-JSON.md ("command": "sweep"); a new
 * document (kvs_json_free), NULL on allocation failure. */
kvs_json *kvs_sweep_result_json(const kvs_sweep_result *r, const kvs_request_set *set);
/* One header line and one line per row (capacity columns filled when
 * searched). */
kvs_status kvs_sweep_result_csv(const kvs_sweep_result *r, FILE *f);

/* The request-rate curve (`kvsim sweep --rates`): R[i] the sweep of the
 * same configuration with its arrivals scaled to rates[i] requests/s.
 * JSON: the first sweep's document with "rates", "curve" (every replayed
 * row of every sweep with its "rate") and the total "simulations" in place
 * of rows, capacity and recommendations ("interrupted" when one was);
 * NULL on allocation failure.  CSV: a "rate" column before each sweep's
 * columns, one header. */
#define KVS_SWEEP_MAX_RATES 64    /* --rates: rates at most */
kvs_json *kvs_sweep_curve_json(kvs_sweep_result *const *R, const double *rates, size_t n,
			       const kvs_request_set *set);
kvs_status kvs_sweep_curve_csv(kvs_sweep_result *const *R, const double *rates, size_t n,
			       FILE *f);


/* ---- scale-out: plan, points, merge (docs/SCALE-OUT.md) ----------------------
 * A sweep split into points (its simulated combinations) that other
 * processes run, on GNU parallel or Slurm, and merged into the same result
 * as kvs_sweep_run, so the same JSON and CSV bytes.  The plan holds the
 * configuration flags as given (args: a worker rebuilds the configuration
 * from them), the resolved configuration, the trace's path and SHA-256,
 * kvsim's version and the points; its id is the SHA-256 of its contents.
 * Point and merge refuse a trace, plan or point file of another plan,
 * trace or version, naming the file. */
typedef struct kvs_sweep_plan kvs_sweep_plan;

/* The plan of cfg over set (no simulation); trace_file is hashed.  The
 * plan is bound (can run and merge points in this process). */
kvs_status kvs_sweep_plan_create(const kvs_sweep_config *cfg, const kvs_request_set *set,
				 const char *trace_file, const char *const *args,
				 size_t nargs, kvs_sweep_plan **out);
/* Write the plan as JSON (temporary file and rename). */
kvs_status kvs_sweep_plan_write(const kvs_sweep_plan *p, const char *path);
/* Read a plan file: format, kvsim version and its id are checked; the
 * plan is not bound until kvs_sweep_plan_bind. */
kvs_status kvs_sweep_plan_load(const char *path, kvs_sweep_plan **out);
/* The configuration flags stored in the plan (owned by p). */
size_t kvs_sweep_plan_args(const kvs_sweep_plan *p, const char *const **args);
const char *kvs_sweep_plan_trace_path(const kvs_sweep_plan *p);
const char *kvs_sweep_plan_id(const kvs_sweep_plan *p);    /* 64 hex digits */
size_t kvs_sweep_plan_points(const kvs_sweep_plan *p);
/* Is trace_file the plan's trace (its SHA-256)?  The message names both. */
kvs_status kvs_sweep_plan_check_trace(const kvs_sweep_plan *p, const char *trace_file);
/* Bind a loaded plan to the configuration rebuilt from its args and the
 * trace read from trace_file: the file's SHA-256 and the rebuilt
 * configuration and points must be the plan's (the message names the first
 * key that differs).  Cost: hashing the trace, the kernel model per row. */
kvs_status kvs_sweep_plan_bind(kvs_sweep_plan *p, const kvs_sweep_config *cfg,
			       const kvs_request_set *set, const char *trace_file);
/* Run points first..last (inclusive) on jobs threads, each written to
 * dir/point-NNNNNN.json (temporary file and rename); dir is created if
 * missing; a point whose file exists and is this plan's is skipped (ran
 * and skipped count both).  A file of another plan, trace or version is an
 * error naming it. */
kvs_status kvs_sweep_plan_run_points(const kvs_sweep_plan *p, size_t first, size_t last,
				     const char *dir, unsigned jobs, size_t *ran,
				     size_t *skipped);
/* Read every point file of dir in index order into the sweep's result,
 * exactly as kvs_sweep_run makes it.  Missing points are an error listing
 * their indexes.  Consumes the binding (bind again to merge again). */
kvs_status kvs_sweep_plan_merge(kvs_sweep_plan *p, const char *dir, kvs_sweep_result **out);
void kvs_sweep_plan_destroy(kvs_sweep_plan *p);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_SWEEP_H */
