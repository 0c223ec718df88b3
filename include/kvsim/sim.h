/*
 * kvsim/sim.h - discrete-event replay of request traces through one
 * continuous-batching serving replica, and the metrics of that replay.
 *
 * A replay takes a deployment (model, GPU, tp, block size, ...), engine
 * settings (policy, max_num_seqs, max_num_batched_tokens, preemption, ...)
 * and a stream of requests, and returns a kvs_sim_result: accounting,
 * the six memory parts time-weighted and at peak, concurrency, queueing,
 * latency percentiles, throughput, goodput, preemptions, prefix hits, a
 * sampled time series and quantile curves.  docs/SIMULATOR.md describes the
 * engine, docs/COST-MODEL.md the step-time model, docs/REPORT-JSON.md the
 * JSON form of a result.
 *
 * Cost.  A replay costs O(scheduling events x log(running)), not
 * O(tokens x steps): runs of decode steps in which nothing but lengths
 * changes are taken at once with their step times summed in closed form.
 * Memory is proportional to the requests in flight (the trace is streamed;
 * latency quantiles use bounded-size log histograms).
 *
 * Threads.  A kvs_sim holds all its state; independent simulations may run
 * in parallel threads (the library keeps no mutable global state; errors go
 * to the calling thread's kvs_last_error()).  A kvs_request_set may be read
 * by many threads at once through separate cursors.
 */
#ifndef KVSIM_SIM_H
#define KVSIM_SIM_H

#include <signal.h>
#include <stdio.h>

#include "kvsim/common.h"
#include "kvsim/alloc.h"
#include "kvsim/model.h"
#include "kvsim/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- request sources ------------------------------------------------------
 * The engine pulls requests in arrival order (non-decreasing arrival_s).
 * next() returns KVS_OK with *req filled, KVS_END at the end, or an error;
 * req->hash_ids need only stay valid until the next call. */
typedef struct kvs_request_source {
	kvs_status (*next)(void *ctx, kvs_request *req);
	void *ctx;
	/* Optional: share of the input consumed so far (0..1) for progress
	 * lines; NULL when unknown. */
	double (*progress)(void *ctx);
} kvs_request_source;

/* A source reading an open trace (kvs_trace_next).  The trace stays owned
 * by the caller. */
kvs_request_source kvs_request_source_trace(kvs_trace *t);

/* A trace held in memory, so that many replays (compare, sweep, capacity
 * search) read it once.  Hash ids are kept at the granularity of the file
 * (or of opts->block_size when set); the engine re-splits them to its own
 * block size.  Immutable once loaded: safe to share between threads. */
typedef struct kvs_request_set kvs_request_set;

kvs_status kvs_request_set_load(const char *path, const kvs_trace_opts *opts,
				kvs_request_set **out);
/* Copy requests from any source into a new set. */
kvs_status kvs_request_set_from_source(const kvs_request_source *src,
				       kvs_request_set **out);
/* An empty set to fill with kvs_request_set_append (tests, generators). */
kvs_status kvs_request_set_create(kvs_request_set **out);
/* Append a copy of req (and its hash ids); arrivals must not decrease. */
kvs_status kvs_request_set_append(kvs_request_set *s, const kvs_request *req);
void kvs_request_set_destroy(kvs_request_set *s);
uint64_t kvs_request_set_count(const kvs_request_set *s);
/* The mean arrival rate, (n - 1) / (last arrival - first), in requests/s;
 * 0 without two distinct arrival times. */
double kvs_request_set_mean_rate(const kvs_request_set *s);
const kvs_request *kvs_request_set_get(const kvs_request_set *s, uint64_t i);
/* Reader statistics and format of the loaded file (zeroed / AUTO when the
 * set was built otherwise). */
const kvs_trace_stats *kvs_request_set_trace_stats(const kvs_request_set *s);
kvs_trace_format kvs_request_set_format(const kvs_request_set *s);
const char *kvs_request_set_path(const kvs_request_set *s);

/* A read cursor over a set; arrivals are multiplied by time_scale (> 0; 1
 * keeps them; 0.5 doubles the rate).  One cursor per replay. */
typedef struct kvs_request_cursor {
	const kvs_request_set *set;
	uint64_t next;
	double time_scale;
} kvs_request_cursor;

void kvs_request_cursor_init(kvs_request_cursor *c, const kvs_request_set *s,
			     double time_scale);
kvs_request_source kvs_request_cursor_source(kvs_request_cursor *c);

/* ---- configuration -------------------------------------------------------- */

typedef enum kvs_preempt_mode {
	KVS_PREEMPT_RECOMPUTE = 0,   /* free the KV, recompute it on readmission */
	KVS_PREEMPT_SWAP,            /* copy the KV to host memory over PCIe */
	KVS_PREEMPT_COUNT_
} kvs_preempt_mode;

const char *kvs_preempt_mode_name(kvs_preempt_mode m);  /* "recompute", "swap" */
kvs_status kvs_preempt_mode_parse(const char *text, kvs_preempt_mode *out);

/* vLLM's --scheduling-policy.  fcfs: the waiting queue in arrival order, a
 * preempted request back at its front, the most recently admitted running
 * request preempted first.  priority: the waiting queue ordered by
 * (priority, arrival time), lower first (the trace's priority column), a
 * preempted request reinserted by the same key, and the running request
 * with the largest (priority, arrival time) preempted first. */
typedef enum kvs_sched_policy {
	KVS_SCHED_FCFS = 0,
	KVS_SCHED_PRIORITY,
	KVS_SCHED_COUNT_
} kvs_sched_policy;

const char *kvs_sched_policy_name(kvs_sched_policy p);  /* "fcfs", "priority" */
kvs_status kvs_sched_policy_parse(const char *text, kvs_sched_policy *out);

typedef enum kvs_cost_kind {
	KVS_COST_ROOFLINE = 0,   /* model + GPU roofline (docs/COST-MODEL.md) */
	KVS_COST_LINEAR,         /* base + per token + per context token + per seq */
	KVS_COST_KIND_COUNT_
} kvs_cost_kind;

/* Step-time model.  Roofline: per step, per rank,
 *   t = max(flops / (fp16_flops * flops_efficiency),
 *           bytes / (hbm_bytes_per_s * bandwidth_efficiency))
 *       + all-reduce time (tp > 1) + step_overhead_s,
 *   bytes = weights + kv_bytes_per_token * (kv_read_factor * context tokens
 *           read + batched tokens written).
 * Linear: t = linear_base_s + linear_per_token_s * batched tokens
 *           + kv_read_factor * linear_per_context_s * context tokens read
 *           + linear_per_seq_s * sequences in the batch.
 * kv_read_factor is the attention kernel's cost relative to an ideal
 * contiguous KV read (1: ideal; a paged kernel at a small block size reads
 * slower, see docs/SWEEP.md); it scales the KV-read term only.
 * A measured step-time table (kvs_cost_fit_table) is fitted to the linear
 * form by least squares. */
#define KVS_PROFILE_MAX_POINTS 512
struct kvs_attn_table;   /* measured attention, private to the library */
#define KVS_PROFILE_MAX_AR 64

typedef struct kvs_cost_config {
	kvs_cost_kind kind;
	double flops_efficiency;      /* share of peak FLOP/s reached (0.5) */
	double bandwidth_efficiency;  /* share of peak HBM bandwidth reached (0.8) */
	double step_overhead_s;       /* fixed per step: scheduler, launch (0.002) */
	double allreduce_latency_s;   /* per all-reduce when tp > 1 (10e-6) */
	double kv_read_factor;        /* multiplies the KV-read time (1.0); > 0 */
	double linear_base_s;
	double linear_per_token_s;
	double linear_per_context_s;
	double linear_per_seq_s;
	/* Filled by kvs_cost_fit_table: rows fitted and R^2 (0 otherwise). */
	uint64_t fit_rows;
	double fit_r2;
	char table_path[256];         /* "" when no table */
	/* ---- appended: roofline per-step overhead terms (0 by default) ---- */
	double step_overhead_per_seq_s;   /* x sequences in the step */
	double step_overhead_per_token_s; /* x batched tokens in the step */
	/* ---- appended: measured operator profile (kvs_cost_load_profile);
	 * used by the roofline kind when profile_points > 0.  Non-attention
	 * operators come from the profile, interpolated in num_tokens; the
	 * all-reduce from the network profile when one was found; attention
	 * from the profile's attention.csv when present (attn below), else
	 * from the roofline. */
	uint32_t profile_points;          /* 0 = no profile */
	uint32_t profile_tp;              /* num_tensor_parallel_workers it holds */
	uint32_t profile_n_embd, profile_n_head, profile_n_kv_head, profile_n_expanded;
	double profile_tokens[KVS_PROFILE_MAX_POINTS];   /* sorted, distinct */
	double profile_layer_s[KVS_PROFILE_MAX_POINTS];  /* per layer, per rank */
	double profile_emb_s[KVS_PROFILE_MAX_POINTS];    /* once per step */
	uint32_t allreduce_points;        /* 0 = all-reduce from the roofline */
	double allreduce_bytes[KVS_PROFILE_MAX_AR];      /* message size, sorted */
	double allreduce_s[KVS_PROFILE_MAX_AR];
	char profile_desc[400];           /* which terms came from where */
	/* ---- appended: measured attention (DIR/attention.csv when present;
	 * NULL = attention, KV read and write from the roofline).  Owned by the
	 * library for the life of the process; configs share it by pointer. */
	const struct kvs_attn_table *attn;
} kvs_cost_config;

/* Largest linear coefficient accepted (s; an hour per step, token or
 * sequence is far past any GPU): it keeps steps, the simulated clock and
 * the time-weighted memory figures finite. */
#define KVS_COST_MAX_COEF_S 3600.0

/* Defaults: roofline, 0.5, 0.8, 2 ms, 10 us, KV-read factor 1; linear
 * terms 0. */
void kvs_cost_config_defaults(kvs_cost_config *c);

/* Read a measured step-time table (CSV with a header naming at least
 * num_tokens, context_tokens and step_time_s; optional num_seqs) and fit the
 * linear model to it by least squares: c->kind becomes KVS_COST_LINEAR.
 * Errors name the file, line and column. */
kvs_status kvs_cost_fit_table(const char *path, kvs_cost_config *c);

/* Read a Vidur operator profile directory (DIR/mlp.csv; DIR/attention.csv
 * when present; the all-reduce times from
 * .../network/GPU_pairwise_nvlink/all_reduce.csv beside the compute/ tree
 * when present) for tensor parallelism tp into c.  Points are the medians;
 * duplicates are averaged.  An attention.csv without rows for tp is skipped
 * (attention stays on the roofline, as profile_desc says).  Errors name the file,
 * line and column, or the tp the file lacks.  Start-up cost: one pass over
 * a few thousand rows.  The model's shape is checked in kvs_cost_init. */
kvs_status kvs_cost_load_profile(const char *dir, uint32_t tp, kvs_cost_config *c);

/* Time of one engine step, for tests and tools: a batch of num_tokens tokens
 * over num_seqs sequences that reads context_tokens tokens of KV and whose
 * attention covers attn_pairs (query, key) pairs. */
typedef struct kvs_step_shape {
	uint64_t num_tokens;
	uint64_t num_seqs;
	uint64_t context_tokens;
	double attn_pairs;
	/* appended: of these, decode_seqs sequences decode one token each over
	 * decode_context_tokens of context; the other sequences prefill equal
	 * chunks of what is left.  Both 0 with num_tokens == num_seqs: all
	 * decode; both 0 otherwise: all prefill. */
	uint64_t decode_seqs;
	uint64_t decode_context_tokens;
} kvs_step_shape;

typedef struct kvs_sim_request_record kvs_sim_request_record;
typedef struct kvs_sim_progress kvs_sim_progress;
typedef struct kvs_sim_kv_handoff kvs_sim_kv_handoff;

typedef struct kvs_sim_config {
	kvs_deploy deploy;             /* model, GPU, tp, block size, max_model_len, ... */
	kvs_policy policy;
	uint32_t max_num_seqs;         /* running sequences at most (256) */
	uint32_t max_num_batched_tokens; /* tokens per step (8192); >= max_num_seqs */
	bool enable_prefix_caching;    /* paged: reuse blocks by prompt hash ids */
	kvs_preempt_mode preemption_mode;
	kvs_sched_policy scheduling_policy;  /* fcfs (default) or priority */
	uint64_t swap_bytes;           /* host swap space per rank (4 GiB) */
	kvs_offload_config kv_offload; /* KV offload tiers per rank (none); a
	                                * bandwidth of 0 takes the default:
	                                * host the GPU's PCIe link, disk
	                                * KVS_OFFLOAD_DISK_BYTES_PER_S */
	double watermark;              /* share of blocks kept free at admission (0.01) */
	uint64_t page_bytes;           /* vattention physical page (2 MiB) */
	bool best_fit;                 /* contiguous placement: best fit */
	bool buddy;                    /* contiguous placement: binary buddy */
	uint32_t max_concurrency;      /* closed-loop client: at most N requests in
	                                * flight, the next sent when one leaves
	                                * (vllm bench serve --max-concurrency); 0 =
	                                * open loop (trace arrival times) */
	double slo_ttft_s;             /* goodput SLOs; 0 = none */
	double slo_tpot_s;
	double slo_e2e_s;              /* end-to-end objective; 0 = none */
	kvs_cost_config cost;
	double sample_interval_s;      /* time series spacing; 0 = auto (1 s,
	                                * doubled to keep <= 4096 samples); a
	                                * given one is doubled past 65536 (the
	                                * result's interval is the one used) */
	double horizon_s;              /* stop at this simulated time; 0 = run to
	                                * completion */
	uint64_t seed;                 /* recorded; the engine itself is deterministic */
	bool fast_path;                /* true: skip decode steps in closed form;
	                                * false: step one token at a time (checks) */
	bool record_wall_time;         /* put wall_s in results (breaks byte-identical
	                                * JSON between runs) */
	bool validate;                 /* run the engine's and the allocator's
	                                * validators at every step, as a
	                                * debug_checks >= 2 build does (slow; for
	                                * tests): a failure ends the run with
	                                * KVS_ERR_STATE naming the check */
	/* Overrides for tests and tools; 0 = from kvs_size_compute(&deploy). */
	uint64_t kv_budget_bytes;      /* KV memory of one rank */
	uint64_t kv_bytes_per_token;   /* per rank */
	/* Optional callbacks (called on the simulating thread). */
	void (*on_request)(void *ctx, const kvs_sim_request_record *r);
	void *on_request_ctx;
	void (*on_progress)(void *ctx, const kvs_sim_progress *p);
	void *on_progress_ctx;
	/* Non-NULL: the run ends before its next event once *interrupt is
	 * nonzero (set from a SIGINT handler), as at a horizon: what is in the
	 * system is unfinished and stats.interrupted is set. */
	const volatile sig_atomic_t *interrupt;
	/* ---- appended: prefill/decode disaggregation (kvsim/fleet.h drives
	 * it; docs/FLEET.md).  With kv_prefill_only, a request whose prompt is
	 * prefilled leaves the running set and holds its KV until
	 * kvs_sim_kv_release; on_kv is told (KVS_SIM_KV_SENT).  A request fed
	 * by kvs_sim_feed_kv has its prompt's KV computed elsewhere: admission
	 * allocates its blocks (on_kv told, KVS_SIM_KV_ALLOCATED), and after
	 * kvs_sim_kv_arrived it joins the batch with one token to compute (its
	 * first decode step, which emits the first token).  on_kv returns the
	 * earliest time a consequence may come back to this engine: the
	 * engine's advance stops there and no span runs past it. */
	bool kv_prefill_only;
	double (*on_kv)(void *ctx, int what, const kvs_sim_kv_handoff *h);
	void *on_kv_ctx;
	/* appended: vLLM V0's scheduler without chunked prefill
	 * (--no-enable-chunked-prefill): waiting prompts that can be admitted
	 * are computed whole in a step of their own while every decode
	 * waits; decode steps admit nothing.  Needs max_num_batched_tokens
	 * >= max_model_len.  false (default): vLLM V1's chunked prefill. */
	bool chunked_prefill_off;
} kvs_sim_config;

/* Defaults around a deployment (policy paged, vLLM engine defaults). */
void kvs_sim_config_defaults(kvs_sim_config *c, const kvs_deploy *d);

/* ---- KV offload tiers (sim/offload.c, docs/SIMULATOR.md) ------------------ */

/* Default disk tier read bandwidth: a PCIe 4.0 x4 NVMe SSD (7 GB/s). */
#define KVS_OFFLOAD_DISK_BYTES_PER_S 7e9

/* Add the tiers of text to cfg: a comma-separated list of KIND:SIZE[:BW]
 * with KIND host or disk, SIZE a size with its unit ("64GiB") and BW the
 * load bandwidth in GB/s (omitted: the default, bytes_per_s 0).
 * KVS_ERR_INVALID naming the item and field; a kind already in cfg is an
 * error.  cfg is untouched on failure. */
kvs_status kvs_offload_parse(const char *text, kvs_offload_config *cfg);
/* True when cfg names at least one tier. */
bool kvs_offload_config_on(const kvs_offload_config *cfg);

/* One row per request, in the order requests leave the system. */
typedef enum kvs_sim_outcome {
	KVS_SIM_COMPLETED = 0,
	KVS_SIM_REJECTED,
	KVS_SIM_UNFINISHED,
} kvs_sim_outcome;

typedef enum kvs_sim_reject {
	KVS_SIM_REJECT_MAX_LEN = 0,    /* "exceeds_max_model_len" */
	KVS_SIM_REJECT_BUDGET,         /* "exceeds_kv_budget": larger than the pool */
	KVS_SIM_REJECT_NEVER_FITS,     /* "never_fits": cannot be admitted even
	                                * into an idle engine (watermark, holes) */
	KVS_SIM_REJECT_EMPTY_PROMPT,   /* "empty_prompt" */
	KVS_SIM_REJECT_COUNT_
} kvs_sim_reject;

const char *kvs_sim_reject_name(kvs_sim_reject r);

struct kvs_sim_request_record {
	uint64_t index;             /* request index in the source */
	uint64_t line;              /* source line */
	kvs_sim_outcome outcome;
	kvs_sim_reject reason;      /* when rejected */
	double arrival_s;
	double admitted_s;          /* first scheduled; < 0 if never */
	double first_token_s;       /* < 0 if none */
	double finish_s;            /* < 0 unless completed */
	uint32_t prompt_tokens;
	uint32_t output_tokens;
	uint32_t cached_tokens;     /* prefix-cache hit at first admission */
	uint32_t preemptions;
	uint32_t num_samples;       /* parallel sampling n (output_tokens is per sample) */
};

struct kvs_sim_progress {
	double sim_time_s;
	double input_share;          /* 0..1, or < 0 when unknown */
	uint64_t arrived, completed, rejected;
	uint64_t steps, events;
};

/* ---- results -------------------------------------------------------------- */

typedef struct kvs_metric_info kvs_metric_info;   /* the metric table, below */

typedef struct kvs_sim_mem_pct {       /* percent of the KV budget; sum 100 */
	double token_states;
	double reservation;
	double internal_frag;
	double external_frag;
	double cached_idle;
	double free;
} kvs_sim_mem_pct;

typedef struct kvs_sim_dist {          /* seconds */
	uint64_t count;
	double mean, p50, p90, p99, max;   /* 0 when count == 0 */
} kvs_sim_dist;

typedef struct kvs_sim_stats {
	kvs_policy policy;
	/* accounting: arrived = completed + rejected + unfinished */
	uint64_t arrived, completed, rejected, unfinished;
	uint64_t rejected_by[KVS_SIM_REJECT_COUNT_];
	uint64_t multi_sample_requests; /* n > 1 in the trace: forked into n sequences */
	/* memory */
	kvs_sim_mem_pct memory_pct;       /* time-weighted */
	kvs_sim_mem_pct memory_peak_pct;  /* at the instant of most memory held */
	double peak_time_s;
	uint64_t kv_budget_bytes, kv_bytes_per_token, num_blocks;
	uint64_t max_model_len;
	uint64_t metadata_bytes_max;      /* allocator bookkeeping, max sampled */
	/* concurrency: running sequences, time-weighted */
	double concurrency_mean, concurrency_p50, concurrency_p99;
	uint64_t concurrency_max;
	double tokens_per_step_mean;
	uint64_t tokens_per_step_max;
	double waiting_mean;
	uint64_t waiting_max;
	/* latency */
	kvs_sim_dist queue_delay_s, ttft_s, tpot_s, e2e_s;
	/* throughput over sim_time_s */
	double requests_per_s, output_tokens_per_s;
	uint64_t prompt_tokens, output_tokens;   /* of completed requests; output
	                                          * counts every sample (n x) */
	double goodput_requests_per_s, goodput_fraction; /* fraction of arrived */
	/* preemption and prefix caching */
	uint64_t preemptions, recomputed_tokens;
	uint64_t swap_out_bytes, swap_in_bytes, swapped_bytes;
	/* parallel sampling: children forked (n - 1 per request and prefill),
	 * copy-on-write block copies (paged) and all device bytes copied
	 * (copy-on-write blocks; the prompt copied into each child's region
	 * or pages under the contiguous policies and vattention) */
	uint64_t forked_sequences, cow_copies, copy_bytes;
	uint64_t prefix_hit_tokens, prefix_hit_blocks;
	uint64_t prefix_miss_tokens, prefix_miss_blocks;
	double prefix_hit_rate_tokens, prefix_hit_rate_blocks;
	/* (with KV offload tiers the prefix hits include the tiers' hits:
	 * kvs_sim_result_offload) */
	/* the run */
	double first_arrival_s, last_arrival_s;
	double sim_time_s;
	uint64_t steps, events, spans;
	double wall_s;                    /* < 0 unless record_wall_time */
	bool interrupted;                 /* ended early by cfg.interrupt */
	/* windowed layers held as vLLM's hybrid allocator holds them: 0
	 * when the model has none, or all its layers are windowed, or the
	 * bytes per token were given (every layer then counts in full).
	 * kv_bytes_per_token and num_blocks are then the full-attention
	 * groups' (vLLM's blocks when there is one such group) */
	uint32_t window_tokens;           /* the window (chunk) */
	uint32_t window_groups, full_groups, group_layers;
} kvs_sim_stats;

typedef struct kvs_sim_result kvs_sim_result;

const kvs_sim_stats *kvs_sim_result_stats(const kvs_sim_result *r);
const kvs_sim_config *kvs_sim_result_config(const kvs_sim_result *r);
/* The KV offload tiers' figures of the run (kvs_sim_config.kv_offload; all
 * zero without tiers; a fleet's result sums its replicas').  Valid while r
 * lives. */
const kvs_offload_stats *kvs_sim_result_offload(const kvs_sim_result *r);

typedef enum kvs_sim_metric {
	KVS_METRIC_QUEUE_DELAY = 0,
	KVS_METRIC_TTFT,
	KVS_METRIC_TPOT,
	KVS_METRIC_E2E,
	KVS_METRIC_ITL,        /* inter-token latency: each completed request's
	                        * TPOT once per gap (output - 1 times), so the
	                        * mean is vLLM's mean ITL over all gaps */
	KVS_METRIC_COUNT_
} kvs_sim_metric;

/* Quantile q in [0, 1] of a latency metric, in seconds, interpolated
 * linearly between ranks as numpy's default (relative error under 0.1%;
 * q = 0 and q = 1 are the exact min and max).  0 when empty. */
double kvs_sim_result_quantile(const kvs_sim_result *r, kvs_sim_metric m,
			       double q);
/* Exact mean, population standard deviation (numpy's np.std: bucket
 * precision) and count of a latency metric; 0 when empty. */
double kvs_sim_result_mean(const kvs_sim_result *r, kvs_sim_metric m);
double kvs_sim_result_std(const kvs_sim_result *r, kvs_sim_metric m);
uint64_t kvs_sim_result_count(const kvs_sim_result *r, kvs_sim_metric m);

/* Time series, sampled every *interval_s of simulated time from 0. */
typedef struct kvs_sim_sample {
	double t_s;
	kvs_sim_mem_pct mem;
	uint32_t running;
	uint64_t waiting;
} kvs_sim_sample;

const kvs_sim_sample *kvs_sim_result_samples(const kvs_sim_result *r,
					     size_t *n, double *interval_s);

void kvs_sim_result_destroy(kvs_sim_result *r);

/* ---- running ------------------------------------------------------------- */

typedef struct kvs_sim kvs_sim;

/* Validate the configuration, size the KV pool (kvs_size_compute unless
 * overridden) and create the allocator.  Errors name the offending field. */
kvs_status kvs_sim_create(const kvs_sim_config *cfg, kvs_sim **out);
void kvs_sim_destroy(kvs_sim *s);

/* Replay every request of src.  A kvs_sim runs once. */
kvs_status kvs_sim_run(kvs_sim *s, const kvs_request_source *src,
		       kvs_sim_result **out);

/* ---- driving an engine step by step (fleets) -------------------------------
 * kvs_sim_run is kvs_sim_start(src) + kvs_sim_finish.  A caller that routes
 * requests to many engines (kvsim/fleet.h) starts each without a source
 * (src NULL), feeds it the requests routed to it, and advances every engine
 * to the next arrival before routing it:
 *
 *     kvs_sim_start(s, NULL);
 *     for each request q (arrivals non-decreasing):
 *         kvs_sim_advance(s, q.arrival_s);   events strictly before it
 *         ... read kvs_sim_get_load / kvs_sim_prefix_match, route ...
 *         kvs_sim_feed(s, &q);
 *     kvs_sim_finish(s, &result);           runs to the end
 *
 * One engine driven so over a whole trace gives the same result as
 * kvs_sim_run over it (tests/test_fleet.c checks byte-identical JSON). */

/* Start a run: with src, requests are pulled from it; with src NULL, they
 * come through kvs_sim_feed.  A kvs_sim runs once. */
kvs_status kvs_sim_start(kvs_sim *s, const kvs_request_source *src);
/* Hand one request to an engine started without a source.  Its arrival
 * must not precede the engine's time nor the previous request's (errors
 * as for a source); after the horizon it is not counted (as replay).  The
 * request is copied (hash ids re-split to the engine's block size). */
kvs_status kvs_sim_feed(kvs_sim *s, const kvs_request *req);
/* Process every event strictly before until_s (+inf: all).  Without a
 * source, the engine takes until_s as the earliest arrival still to be
 * fed, so that no span of decode steps runs past it.  Cost: the events
 * processed. */
kvs_status kvs_sim_advance(kvs_sim *s, double until_s);
/* As kvs_sim_advance, but no request will be fed before input_s (>=
 * until_s), so spans of decode steps may run up to it. */
kvs_status kvs_sim_advance_bounded(kvs_sim *s, double until_s, double input_s);
/* Time of the engine's next event (+inf when none), and its clock. */
double kvs_sim_next_event_s(const kvs_sim *s);
double kvs_sim_now_s(const kvs_sim *s);

/* Load signals of a running engine, as a router reads them. */
typedef struct kvs_sim_load {
	uint64_t arrived, completed, rejected;  /* requests so far */
	uint32_t running;     /* sequences running */
	uint64_t waiting;     /* requests waiting or swapped out */
	double kv_usage;      /* share of KV blocks in use (free and cached-idle
	                       * blocks excepted, as vLLM's gpu_cache_usage);
	                       * held share of the pool for policies without
	                       * blocks */
	/* disaggregation: requests handed out after their prefill
	 * (kv_prefill_only) and requests fed with their KV from elsewhere
	 * (kvs_sim_feed_kv, not counted in arrived); once finished,
	 * arrived + kv_received = completed + rejected + unfinished + kv_sent */
	uint64_t kv_sent, kv_received;
} kvs_sim_load;

void kvs_sim_get_load(kvs_sim *s, kvs_sim_load *out);
/* Host memory the simulator holds from its creation on, whatever the
 * trace: its allocator's per-block bookkeeping (block array, free stack,
 * prefix index, host swap pool) and the engine's own state.  A fleet
 * multiplies it by its replicas. */
uint64_t kvs_sim_host_bytes(const kvs_sim *s);
/* Leading blocks of req's prompt (hash ids re-split to the engine's block
 * size) present in the engine's prefix cache now; *nblocks (may be NULL)
 * gets the full blocks the prompt has hash ids for.  0 without prefix
 * caching.  No side effects on the cache.  Cost: O(blocks). */
uint32_t kvs_sim_prefix_match(kvs_sim *s, const kvs_request *req, uint32_t *nblocks);
/* ---- prefill/decode disaggregation hooks (kvs_sim_config.on_kv) ------------- */
/* what on_kv is told: SENT (prefill side: prefilled, KV held), ALLOCATED
 * (receiving side: blocks taken, the KV may be sent), REJECTED (receiving
 * side: refused, as kvs_sim_reject_name says; its KV is not wanted) */
enum { KVS_SIM_KV_SENT = 1, KVS_SIM_KV_ALLOCATED = 2, KVS_SIM_KV_REJECTED = 3 };
struct kvs_sim_kv_handoff {
	uint64_t handle;        /* the request on the engine that calls on_kv,
	                         * for kvs_sim_kv_release / kvs_sim_kv_arrived */
	kvs_request req;        /* arrival_s: at the fleet; hash ids valid
	                         * during the call only */
	double admitted_s;      /* first scheduled (prefill replica) */
	double now_s;           /* the engine's time at the call */
	uint32_t cached_tokens; /* prefix hit on the prefill replica */
	uint32_t preemptions;
	uint32_t kv_tokens;     /* ALLOCATED: prompt tokens to receive (the
	                         * prompt less this engine's own prefix hit) */
	uint64_t origin;        /* kvs_sim_feed_kv: the caller's tag, given
	                         * back with this request's later calls */
};

/* Feed (as kvs_sim_feed, at time t_s) a request handed out by a prefill
 * engine (h as told with KVS_SIM_KV_SENT). */
kvs_status kvs_sim_feed_kv(kvs_sim *s, const kvs_sim_kv_handoff *h, double t_s);
/* Prefill side: the KV of handle has been read; its blocks are freed at
 * the engine's next step boundary at or after t_s (now when idle). */
kvs_status kvs_sim_kv_release(kvs_sim *s, uint64_t handle, double t_s);
/* Decode side: the KV of handle arrived at t_s; the request joins the
 * batch at the next step boundary at or after t_s. */
kvs_status kvs_sim_kv_arrived(kvs_sim *s, uint64_t handle, double t_s);

/* Run to the end (every event, every request fed) and hand over the
 * result (owned by the caller). */
kvs_status kvs_sim_finish(kvs_sim *s, kvs_sim_result **out);

/* Combine the results of several engines into one (a fleet as a whole):
 * counts and byte figures summed, latency distributions merged, memory
 * parts weighted by pool size and simulated time, time series summed at
 * the coarsest sample interval (docs/FLEET.md).  With n == 1 the result
 * is a copy.  The caller owns *out. */
kvs_status kvs_sim_result_merge(const kvs_sim_result *const *rs, size_t n,
				kvs_sim_result **out);

/* create + run + destroy in one call. */
kvs_status kvs_sim_replay(const kvs_sim_config *cfg,
			  const kvs_request_source *src, kvs_sim_result **out);

/* Step time of one step of the given shape under cfg's cost model, for the
 * deployment in cfg (sizing done as in kvs_sim_create).  The shape says no
 * windows: a model's windowed layers are charged over the whole decode
 * context here, where a replay charges them over their windows. */
kvs_status kvs_sim_step_time(const kvs_sim_config *cfg,
			     const kvs_step_shape *shape, double *out_s);

/* ---- reports ---------------------------------------------------------------
 * JSON objects as docs/REPORT-JSON.md specifies (new documents; the caller
 * releases them with kvs_json_free).  NULL on allocation failure. */
kvs_json *kvs_sim_model_json(const kvs_model *m);
kvs_json *kvs_sim_gpu_json(const kvs_gpu *g);
/* vLLM's multimodal flags of d as given, under vLLM's names
 * (limit_mm_per_prompt, skip_mm_profiling, mm_processor_kwargs); an empty
 * object without them. */
kvs_json *kvs_sim_mm_json(const kvs_deploy *d);
/* engine settings (the policy excluded) and the sized pool */
kvs_json *kvs_sim_engine_json(const kvs_sim_config *cfg,
			      const kvs_sim_stats *sized);
/* trace summary; set may be NULL (then only what stats know is written),
 * tstats (reader counters) may be NULL. */
kvs_json *kvs_sim_trace_json(const char *path, kvs_trace_format format,
			   const kvs_trace_stats *tstats,
			   const kvs_sim_stats *st);
/* one policy object (accounting, memory_pct, ..., timeseries, cdf) */
kvs_json *kvs_sim_result_json(const kvs_sim_result *r);
/* The result's kv_offload object (tiers, hits, bytes moved, GPU vs tier
 * split); NULL when the run had no offload tier. */
kvs_json *kvs_sim_offload_json(const kvs_sim_result *r);
/* One figure of the metric table as JSON (an integer, a real, or null when
 * not finite). */
kvs_json *kvs_sim_metric_json(const kvs_metric_info *m, const kvs_sim_stats *st);

/* ---- cost (--gpu-hour-price) ------------------------------------------------
 * What a run cost on the deployment's tp x pp GPUs at d->gpu_hour_price
 * dollars per GPU-hour over the simulated duration (docs/REPORT-JSON.md
 * "Cost"); replay, compare and sweep rows all go through these.  NAN where
 * undefined (no output, no completion, nothing running). */
typedef struct kvs_sim_cost {
	uint32_t gpus;                      /* tp x pp */
	double dollars_per_hour;            /* price x gpus */
	double dollars;                     /* for the simulated duration */
	double per_million_output_tokens;
	double per_conversation_hour;       /* dollars_per_hour / mean running */
	double per_request;                 /* per completed request */
} kvs_sim_cost;

/* false (and zeros) without a price (d->gpu_hour_price <= 0) */
bool kvs_sim_cost_of(const kvs_deploy *d, const kvs_sim_stats *st, kvs_sim_cost *out);
/* The "cost" object (gpu_hour_price, gpus, dollars_per_hour, dollars,
 * dollars_per_million_output_tokens, dollars_per_conversation_hour,
 * dollars_per_request); NULL without a price or on allocation failure. */
kvs_json *kvs_sim_cost_json(const kvs_deploy *d, const kvs_sim_stats *st);

/* Whether a run meets its latency targets: something completed, p99 TTFT
 * <= slo_ttft_s and p99 TPOT <= slo_tpot_s (a target <= 0 is not checked).
 * The one test of sweep's capacity search and fleet's sizing. */
bool kvs_sim_stats_meet_slo(const kvs_sim_stats *st, double slo_ttft_s, double slo_tpot_s);
/* The SLOs given, as every output words them: "p99 TTFT <= 2 s and p99
 * TPOT <= 0.1 s", "p99 TPOT <= 0.1 s"; an objective <= 0 is not given and
 * not named (never "<= 0 s"); "" when neither is.  Returns buf. */
char *kvs_slo_phrase(char *buf, size_t n, double slo_ttft_s, double slo_tpot_s);

/* Whether the run has a latency objective (TTFT, TPOT or end-to-end) for
 * its goodput to be measured against. */
bool kvs_sim_config_has_slo(const kvs_sim_config *cfg);

/* The whole replay/compare document: command "replay" or "compare" (with
 * ratios baseline / each when the registry's baseline policy, paged, is
 * among the results). */
kvs_json *kvs_sim_report_json(const char *command,
			    kvs_sim_result *const *results, size_t n,
			    const char *trace_path, kvs_trace_format format,
			    const kvs_trace_stats *tstats);

/* Write text and a newline to path ("-" = stdout, flushed) through
 * kvs_outfile (whole or not at all); errors name the file (KVS_ERR_IO). */
kvs_status kvs_sim_json_write_text(const char *text, const char *path);
/* kvs_json_text (sorted keys, 2-space indent, 12 significant digits: the
 * one format of every replay, compare and sweep file) +
 * kvs_sim_json_write_text. */
kvs_status kvs_sim_json_write(const kvs_json *doc, const char *path);

/* CSV writers (docs/REPORT-JSON.md): the time series of n results, one
 * row per sample with the policy first; request records (header once, then
 * one row per finished request, the policy first). */
kvs_status kvs_sim_timeseries_csv(kvs_sim_result *const *res, size_t n, FILE *f);
void kvs_sim_request_csv_header(FILE *f);
void kvs_sim_request_csv_row(FILE *f, const char *policy,
			     const kvs_sim_request_record *r);
/* An on_request callback (kvs_sim_config) writing rows to f for policy. */
typedef struct kvs_sim_request_csv {
	FILE *f;
	const char *policy;
} kvs_sim_request_csv;
void kvs_sim_request_csv_on_request(void *ctx, const kvs_sim_request_record *r);

/* ---- the metric table --------------------------------------------------------
 * Every figure a run reports, described once (sim/metric.c): its key, its
 * unit, where it lives in kvs_sim_stats, where it goes in a replay/compare
 * policy object (group.field), whether a sweep row carries it, and how the
 * replay/compare table prints it.  The JSON writers, the CLI tables and the
 * report reader walk this table; no other file spells a figure's key.
 * docs/REPORT-JSON.md lists the keys; docs/ARCHITECTURE.md says how to add
 * one. */
#define KVS_METRIC_LIST(X) \
	X(ARRIVED, "arrived", "accounting", "arrived", "requests") \
	X(COMPLETED, "completed", "accounting", "completed", "requests") \
	X(REJECTED, "rejected", "accounting", "rejected", "requests") \
	X(UNFINISHED, "unfinished", "accounting", "unfinished", "requests") \
	X(MULTI_SAMPLE, "multi_sample_requests", "accounting", "multi_sample_requests", "requests") \
	KVS_METRIC_MEMORY(X, , "", "memory_pct") \
	X(WASTE_PCT, "waste_pct", NULL, NULL, "%") \
	KVS_METRIC_MEMORY(X, PEAK_, "peak_", "memory_peak_pct") \
	X(PEAK_WASTE_PCT, "peak_waste_pct", NULL, NULL, "%") \
	X(PEAK_TIME_S, "memory_peak_time_s", "", "memory_peak_time_s", "s") \
	X(KV_BUDGET_BYTES, "kv_budget_bytes", "kv", "budget_bytes", "bytes") \
	X(KV_BYTES_PER_TOKEN, "kv_bytes_per_token", "kv", "bytes_per_token", "bytes") \
	X(NUM_GPU_BLOCKS, "num_gpu_blocks", "kv", "num_gpu_blocks", "blocks") \
	X(METADATA_BYTES_MAX, "metadata_bytes_max", "kv", "metadata_bytes_max", "bytes") \
	X(CONC_MEAN, "concurrency_mean", "concurrency", "mean", "sequences") \
	X(CONC_P50, "concurrency_p50", "concurrency", "p50", "sequences") \
	X(CONC_P99, "concurrency_p99", "concurrency", "p99", "sequences") \
	X(CONC_MAX, "concurrency_max", "concurrency", "max", "sequences") \
	X(TPS_MEAN, "tokens_per_step_mean", "tokens_per_step", "mean", "tokens") \
	X(TPS_MAX, "tokens_per_step_max", "tokens_per_step", "max", "tokens") \
	X(WAITING_MEAN, "waiting_mean", "waiting", "mean", "requests") \
	X(WAITING_MAX, "waiting_max", "waiting", "max", "requests") \
	KVS_METRIC_DIST(X, QUEUE, "queue_delay") \
	KVS_METRIC_DIST(X, TTFT, "ttft") \
	KVS_METRIC_DIST(X, TPOT, "tpot") \
	KVS_METRIC_DIST(X, E2E, "e2e") \
	X(REQUESTS_PER_S, "requests_per_s", "throughput", "requests_per_s", "requests/s") \
	X(OUTPUT_TOKENS_PER_S, "output_tokens_per_s", "throughput", "output_tokens_per_s", "tokens/s") \
	X(OUTPUT_TOKENS, "output_tokens", "throughput", "output_tokens", "tokens") \
	X(PROMPT_TOKENS, "prompt_tokens", "throughput", "prompt_tokens", "tokens") \
	X(GOODPUT_RPS, "goodput_requests_per_s", "goodput", "requests_per_s", "requests/s") \
	X(GOODPUT_FRACTION, "goodput_fraction", "goodput", "fraction", "share") \
	X(PREEMPTIONS, "preemptions", "", "preemptions", "preemptions") \
	X(RECOMPUTED_TOKENS, "recomputed_tokens", "", "recomputed_tokens", "tokens") \
	X(SWAPPED_BYTES, "swapped_bytes", "", "swapped_bytes", "bytes") \
	X(SWAP_OUT_BYTES, "swap_out_bytes", "", "swap_out_bytes", "bytes") \
	X(SWAP_IN_BYTES, "swap_in_bytes", "", "swap_in_bytes", "bytes") \
	X(FORKED_SEQUENCES, "forked_sequences", "", "forked_sequences", "sequences") \
	X(COW_COPIES, "cow_copies", "", "cow_copies", "blocks") \
	X(COPY_BYTES, "copy_bytes", "", "copy_bytes", "bytes") \
	X(PREFIX_HIT_TOKENS, "prefix_hit_tokens", "", "prefix_hit_tokens", "tokens") \
	X(PREFIX_HIT_BLOCKS, "prefix_hit_blocks", "", "prefix_hit_blocks", "blocks") \
	X(PREFIX_HIT_RATE_TOKENS, "prefix_hit_rate_tokens", "prefix_hit_rate", "tokens", "share") \
	X(PREFIX_HIT_RATE_BLOCKS, "prefix_hit_rate_blocks", "prefix_hit_rate", "blocks", "share") \
	X(SIM_TIME_S, "sim_time_s", "sim", "sim_time_s", "s") \
	X(STEPS, "steps", "sim", "steps", "steps") \
	X(SPANS, "spans", "sim", "spans", "spans") \
	X(EVENTS, "events", "sim", "events", "events") \
	X(WALL_S, "wall_s", "sim", "wall_s", "s")
/* The six parts of the KV budget (kvs_sim_mem_pct), time-weighted (ids
 * TOKEN_STATES_PCT .. FREE_PCT, keys "token_states_pct" ..) and at peak
 * use (PEAK_TOKEN_STATES_PCT .., "peak_token_states_pct" ..). */
#define KVS_METRIC_MEMORY(X, ID, pre, group) \
	X(ID##TOKEN_STATES_PCT, pre "token_states_pct", group, "token_states", "%") \
	X(ID##RESERVATION_PCT, pre "reservation_pct", group, "reservation", "%") \
	X(ID##INTERNAL_FRAG_PCT, pre "internal_fragmentation_pct", group, "internal_fragmentation", "%") \
	X(ID##EXTERNAL_FRAG_PCT, pre "external_fragmentation_pct", group, "external_fragmentation", "%") \
	X(ID##CACHED_IDLE_PCT, pre "cached_idle_pct", group, "cached_idle", "%") \
	X(ID##FREE_PCT, pre "free_pct", group, "free", "%")
/* A latency distribution: ids ID_COUNT .. ID_MAX, keys "name_count",
 * "name_mean_s" .. "name_max_s". */
#define KVS_METRIC_DIST(X, ID, name) \
	X(ID##_COUNT, name "_count", name "_s", "count", "requests") \
	X(ID##_MEAN, name "_mean_s", name "_s", "mean", "s") \
	X(ID##_P50, name "_p50_s", name "_s", "p50", "s") \
	X(ID##_P90, name "_p90_s", name "_s", "p90", "s") \
	X(ID##_P99, name "_p99_s", name "_s", "p99", "s") \
	X(ID##_MAX, name "_max_s", name "_s", "max", "s")

typedef enum kvs_metric_id {
#define KVS_METRIC_ID_(id, key, group, field, unit) KVS_M_##id,
	KVS_METRIC_LIST(KVS_METRIC_ID_)
#undef KVS_METRIC_ID_
	KVS_M_COUNT_
} kvs_metric_id;

enum {
	KVS_MF_POLICY = 1u << 0,   /* written in replay/compare policy objects */
	KVS_MF_SWEEP = 1u << 1,    /* written in sweep rows (flat key) */
	KVS_MF_INT = 1u << 2,      /* an integer count (else a real) */
	KVS_MF_DIST = 1u << 3,     /* a latency distribution figure: null in a
				    * policy object when the distribution is empty */
	KVS_MF_SET_ONLY = 1u << 4, /* null unless >= 0 (recorded on request) */
	KVS_MF_SLO = 1u << 5,      /* measured against the SLOs: null in a policy
				    * object, n/a in the table, when the run has
				    * none (kvs_sim_config_has_slo) */
};

typedef enum kvs_metric_style {   /* how the report page shows a figure */
	KVS_MS_NONE = 0,
	KVS_MS_PCT,       /* percent, "12.3 %" */
	KVS_MS_NUM,       /* a number, 3 significant digits */
	KVS_MS_COUNT,     /* a count with thousands separators */
	KVS_MS_SEC,       /* seconds with a unit that suits ("850 ms") */
	KVS_MS_BYTES,     /* binary units ("1.50 GiB") */
	KVS_MS_FRAC,      /* a share 0..1 as percent */
} kvs_metric_style;

struct kvs_metric_info {
	kvs_metric_id id;
	const char *key;          /* flat key: sweep rows and CSV */
	const char *group;        /* policy object: sub-object, "" = top level,
				   * NULL = not in policy objects */
	const char *field;        /* key inside group */
	const char *unit;         /* "s", "%", "bytes", "requests/s", "share", ... */
	const char *old_key;      /* earlier flat key, still read, or NULL */
	const char *old_field;    /* earlier field in group, still read, or NULL */
	unsigned flags;           /* KVS_MF_* */
	/* replay/compare table: a section title printed before the row (or
	 * NULL), the row's label (NULL: not in the table), the printf format
	 * of value x scale */
	const char *section;
	const char *label;
	const char *fmt;
	double scale;
	/* where it lives: a uint64_t or double at this offset in
	 * kvs_sim_stats, or computed from the stats by derive */
	size_t offset;
	double (*derive)(const kvs_sim_stats *st);
	size_t dist_offset;       /* KVS_MF_DIST: its kvs_sim_dist */
	/* the report page's policy table (kvsim report): a section title
	 * before the row (or NULL), the row's label (NULL: not on the page),
	 * and how the value is shown */
	const char *page_section;
	const char *page_label;
	kvs_metric_style page_style;
};

/* The row of id; NULL past KVS_M_COUNT_.  Rows are in table order
 * (ids 0 .. KVS_M_COUNT_ - 1), which is the replay table's order. */
const kvs_metric_info *kvs_metric_get(kvs_metric_id id);
/* The row whose flat key (or earlier flat key) is key, or NULL. */
const kvs_metric_info *kvs_metric_find(const char *key);
/* The figure's value in st (integers converted; derived figures computed). */
double kvs_metric_value(kvs_metric_id id, const kvs_sim_stats *st);
/* A latency figure (KVS_MF_DIST) whose distribution has no sample (no
 * request completed, or none got a first token): null in JSON, n/a in the
 * table, an empty CSV cell; its value, 0, means nothing. */
bool kvs_metric_is_empty(const kvs_metric_info *m, const kvs_sim_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_SIM_H */
