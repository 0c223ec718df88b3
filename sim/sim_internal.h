/*
 * sim_internal.h - private pieces of the simulator shared by its files:
 * the step-time model in "two lines" form, the bounded-memory quantile
 * sketch, and the result object.
 */
#ifndef KVSIM_SIM_INTERNAL_H
#define KVSIM_SIM_INTERNAL_H

#include "kvsim/sim.h"

/* ---- step time as a function of the step index within a decode span -------
 * Within a span of decode-only steps the batch is fixed (T tokens = n
 * sequences) and the context read grows by n tokens per step, so every cost
 * term is linear in the step index j:
 *     dt(j) = max(a1 + b1 j, a2 + b2 j) + c
 * (line 1: compute, line 2: memory traffic, c: all-reduce + overhead; the
 * linear model uses a1 = a2, b1 = b2).  The max of two lines changes branch
 * at most once, so sums over j split at the crossover into two arithmetic
 * series: O(1) per span whatever its length. */
typedef struct kvs_lin2 {
	double a1, b1, a2, b2, c;
} kvs_lin2;

/* S0 = sum dt(j), S1 = sum j dt(j) over j in [j0, j1). */
void kvs_lin2_sums(const kvs_lin2 *L, uint64_t j0, uint64_t j1,
		   double *S0, double *S1);
/* sum of dt(j) over j in [0, k) */
double kvs_lin2_prefix(const kvs_lin2 *L, uint64_t k);
/* the time of step j: max(a1 + b1 j, a2 + b2 j) + c */
static inline double kvs_lin2_dt(const kvs_lin2 *L, uint64_t j)
{
	double l1 = L->a1 + L->b1 * (double)j, l2 = L->a2 + L->b2 * (double)j;
	return (l1 > l2 ? l1 : l2) + L->c;
}
/* smallest k in [1, kmax] with prefix(k) >= target (kmax if none) */
uint64_t kvs_lin2_steps_to(const kvs_lin2 *L, uint64_t kmax, double target);
/* largest j in [0, k) with prefix(j) <= offset (the step running at offset) */
uint64_t kvs_lin2_step_at(const kvs_lin2 *L, uint64_t k, double offset);

/* Measured attention (DIR/attention.csv of a Vidur profile), per layer and
 * per rank, in seconds.  Decode: a grid over (batch size, per-request KV
 * length), rectangular (a cell the file lacks is interpolated along its
 * batch size's KV axis).  Prefill: per chunk size, the time of one
 * sequence's chunk by the KV length before it.  Loaded once per process and
 * kept (kvs_cost_load_profile); never modified after loading, so configs
 * copied across threads share it. */
struct kvs_attn_table {
	uint32_t tp, n_embd, n_q_head, n_kv_head;
	uint32_t nb, nkv;          /* decode grid */
	double *batch, *kv;        /* sorted, distinct */
	double *dec_s;             /* nb x nkv, row per batch size */
	uint32_t nchunk;           /* prefill */
	double *chunk;             /* sorted, distinct */
	uint32_t *pre_off;         /* nchunk + 1 offsets into pre_kv / pre_s */
	double *pre_kv, *pre_s;
	uint64_t decode_rows, prefill_rows;
	char path[512];
	uint64_t key[4];               /* the file's inode, size, mtime (s, ns) */
	struct kvs_attn_table *next;   /* the process's list of loaded tables */
};

/* Piecewise-linear through n sorted points (cost.c): flat below the first,
 * the last segment's slope above the last, never below the last value. */
double kvs_interp(const double *xs, const double *ys, uint32_t n, double x);

/* Per-rank constants of the cost model, resolved once per simulation. */
typedef struct kvs_cost {
	kvs_cost_config cfg;
	/* roofline */
	double flop_rate;          /* effective FLOP/s */
	double byte_rate;          /* effective bytes/s */
	double weight_bytes;       /* per rank */
	double kv_bytes_per_token; /* per rank */
	double linear_flops_per_token; /* 2 x active params / tp */
	double attn_flops_per_pair;    /* 4 x heads/tp x head_dim x layers */
	double allreduce_per_token_s;  /* bandwidth part per batched token */
	double allreduce_fixed_s;      /* latency part per step */
	/* measured profile (cfg.profile_points > 0) */
	double layers;                 /* layers over all stages */
	double allreduce_bytes_per_token; /* hidden x 2 bytes */
	/* windowed layers (sliding window, chunked attention): a decode reads
	 * their KV over its windowed context only (wctx below); the
	 * full-attention figures above are then the other layers'.  All 0
	 * for a model without windows, and under the linear model. */
	double kv_win_bytes_per_token; /* per rank */
	double attn_win_flops_per_pair;
	double win_layers;             /* of layers (measured attention) */
	uint32_t window;               /* their window (tokens); 0 without */
	uint32_t in_flight;            /* micro-batches in flight at most
	                                * (kvs_cost_micro_batches): pp with
	                                * balanced micro-batches, else 1; 0
	                                * under the linear model (read as 1) */
	bool window_chunked;           /* Llama 4's chunked attention: a query
	                                * attends within its aligned chunk of
	                                * `window` tokens */
} kvs_cost;

kvs_status kvs_cost_init(kvs_cost *c, const kvs_cost_config *cfg,
			 const kvs_deploy *d, const kvs_sizing *sz);
/* Micro-batches a step of nseq sequences runs as at pp stages with
 * balanced micro-batches (kvs_deploy.pp_balanced): up to pp batches in
 * flight, each of its own sequences, so a step of nseq >= pp sequences
 * splits into pp; fewer, into one each (docs/COST-MODEL.md).  1 at pp 1
 * and without the balanced split. */
static inline double kvs_cost_micro_batches(const kvs_cost *c, uint64_t nseq)
{
	if (c->in_flight <= 1 || nseq <= 1)
		return 1.0;
	return (double)(nseq < c->in_flight ? nseq : c->in_flight);
}
/* What the windowed layers of a step read (kvs_cost.window): the
 * decodes' context (dec), and the whole step's context and attention
 * pairs, prefill chunks included (kvs_cost_chunk_window).  A caller that
 * does not know the windows passes the full-attention figures. */
typedef struct kvs_win_read {
	double dec, ctx, pairs;
} kvs_win_read;

/* One step: T tokens, nseq sequences, ctx tokens of KV read, attention over
 * pairs (query, key) pairs.  Of these, ndec sequences decode one token each
 * over ctx_dec tokens of context (pairs include ctx_dec); w is what the
 * windowed layers read instead; prefill_attn_s is the measured attention
 * time of the step's prefill chunks (the sum of kvs_cost_prefill_attn; 0
 * without a measured attention profile). */
double kvs_cost_step(const kvs_cost *c, uint64_t T, uint64_t nseq,
		     double ctx, double pairs, uint64_t ndec, double ctx_dec,
		     const kvs_win_read *w, double prefill_attn_s);
/* The context tokens and attention pairs the windowed layers read for a
 * prefill chunk of n tokens after kv stored ones: each query attends to
 * the last c->window tokens up to itself, or (window_chunked) to those of
 * its aligned chunk of c->window tokens up to itself. */
void kvs_cost_chunk_window(const kvs_cost *c, double n, double kv, double *ctx,
			   double *pairs);
/* The windowed context a decode of a request of prompt tokens and fin
 * in all (prompt + output) is charged at every decode step, constant from
 * its first decode to its finish: min(fin, window) under a sliding window
 * (the most it reads, an upper bound before it fills the window); under
 * chunked attention the mean, rounded to the nearest token, of what its
 * decode steps read, (q mod window) + 1 keys for the query at position
 * q = prompt .. fin - 2 (fin == prompt + 1, no decode step: what the
 * prompt's last query read).  c->window > 0. */
uint64_t kvs_cost_decode_window(const kvs_cost *c, uint64_t prompt, uint64_t fin);
/* Measured attention time (all layers, s) of one prefill chunk of chunk
 * tokens after kv tokens already cached, the windowed layers' over their
 * window (chunked attention: the prefill chunk in pieces at the attention
 * chunks' boundaries, each after the keys of its own attention chunk); 0
 * without an attention profile. */
double kvs_cost_prefill_attn(const kvs_cost *c, double chunk, double kv);
/* Steps, at most kmax, that a decode span of n sequences starting at ctx0
 * context tokens can take on one segment of the measured attention grid
 * (each step adds one token to every request's KV); kmax without one. */
uint64_t kvs_cost_span_steps(const kvs_cost *c, uint64_t n, double ctx0, uint64_t kmax);
/* The lines of a decode span: n sequences each decoding one token, with
 * ctx0 context tokens read in the first step (n more each step) by the
 * full-attention layers and wctx by the windowed ones throughout. */
void kvs_cost_decode_lines(const kvs_cost *c, uint64_t n, double ctx0,
			   double wctx, kvs_lin2 *out);

/* ---- quantile sketch -------------------------------------------------------
 * Log-bucketed histogram (the DDSketch idea): bucket i holds values in
 * (g^(i-1), g^i] with g = (1 + a) / (1 - a), a = 0.001, so any quantile is
 * within 0.1% of a true sample value.  Buckets are allocated over the range
 * of values seen: about 7,000 per factor 1e6 of range, independent of the
 * number of values.  Values <= 1e-12 are counted as zero. */
typedef struct kvs_sketch {
	uint64_t *counts;
	int32_t lo;        /* index of counts[0] */
	uint32_t n;        /* buckets allocated */
	int32_t nz_lo, nz_hi;   /* smallest and largest index holding a value
	                         * that is not zero (when count > zeros) */
	uint64_t zeros;
	uint64_t count;
	double sum, min, max;
} kvs_sketch;

void kvs_sketch_init(kvs_sketch *s);
/* the bucket of a value v > 1e-12: ceil(log v / log g), by definition
 * (_exact) and as the sketch computes it (mostly without log) */
int32_t kvs_sketch_bucket(double v);
int32_t kvs_sketch_bucket_exact(double v);
void kvs_sketch_free(kvs_sketch *s);
kvs_status kvs_sketch_add(kvs_sketch *s, double v);
/* v counted n times (a request's mean inter-token gap, once per gap) */
kvs_status kvs_sketch_add_n(kvs_sketch *s, double v, uint64_t n);
/* v once into a and n times into b, its bucket found once */
kvs_status kvs_sketch_add2(kvs_sketch *a, kvs_sketch *b, double v, uint64_t n);
/* population standard deviation (ddof 0), values at bucket precision */
double kvs_sketch_std(const kvs_sketch *s);
double kvs_sketch_quantile(const kvs_sketch *s, double q);
void kvs_sketch_dist(const kvs_sketch *s, kvs_sim_dist *out);
/* Add every value of src to dst (same buckets: exact). */
kvs_status kvs_sketch_merge(kvs_sketch *dst, const kvs_sketch *src);

/* KV offload tiers (sim/offload.c): the tiers of cfg with default
 * bandwidths filled in, checked against the policy and prefix caching; the
 * fleet-wide sum; whether stats come from tiers; the kv_offload JSON
 * object of a result (a jansson json_t). */
kvs_status kvs_sim_offload_resolve(const kvs_sim_config *cfg, kvs_offload_config *out);
void kvs_sim_offload_merge(kvs_offload_stats *acc, const kvs_offload_stats *x);
bool kvs_sim_offload_stats_on(const kvs_offload_stats *s);
struct json_t *kvs_sim_offload_jt(const struct kvs_sim_result *r);

/* The most samples a time series keeps at a given sample interval: past
 * it, as past 4096 at the automatic one, every other sample is dropped and
 * the interval doubled (a power of two times the arrays' 256, so the
 * capacity meets it exactly).  About 5 MB of samples and 11 MB of JSON. */
#define KVS_SIM_SAMPLES_MAX 65536u

struct kvs_sim_result {
	kvs_sim_config cfg;
	kvs_sim_stats st;
	kvs_offload_stats offload;     /* KV offload tiers (sim/offload.c) */
	kvs_sketch sk[KVS_METRIC_COUNT_];
	kvs_sim_sample *samples;
	size_t nsamples;
	double sample_interval_s;
	/* the memory parts when the run ended: a fleet carries a replica that
	 * ended before the others in this state to the fleet's end (merge.c) */
	kvs_sim_mem_pct end_pct;
};

#endif
