/*
 * report_internal.h - the report module's private model of a run and the
 * pieces that share it: the JSON reader (report_parse.c), the plotting layer
 * (plot.c), the figures (figures.c) and the HTML page (report_html.c).
 *
 * The reader turns jansson values into the plain structs below once, so the
 * drawing and page code never touch JSON.  Every optional number is a double
 * that holds NAN when the key was absent; counts that the report checks
 * (accounting) are uint64_t and required.
 */
#ifndef KVSIM_REPORT_INTERNAL_H
#define KVSIM_REPORT_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvsim/report.h"
#include "kvsim/sim.h"

/* ---- memory parts ---------------------------------------------------------
 * Stacked bottom to top in this order in every figure and table. */
enum { RP_NPARTS = 6 };
extern const char *const rp_part_key[RP_NPARTS];   /* "token_states", ... */
extern const char *const rp_part_label[RP_NPARTS]; /* "token states", ... */

typedef struct rp_rgb {
	double r, g, b;
} rp_rgb;

rp_rgb rp_part_color(int part);
/* The registry's colour for a registered policy (allocator/registry.c); any
 * other name gets a colour from its hash, so a policy keeps its colour in
 * every figure and table. */
rp_rgb rp_policy_color(const char *policy);
/* "#rrggbb" into buf (8 bytes). */
void rp_rgb_hex(rp_rgb c, char buf[8]);
/* Display rank of a policy name: registered policies first, in registry
 * order. */
int rp_policy_rank(const char *policy);
/* Whether a policy named in a report is registered and has every trait in
 * traits (KVS_TRAIT_*, kvsim/alloc.h). */
bool rp_policy_is(const char *policy, unsigned traits);

/* ---- a replay / compare run ---------------------------------------------- */
typedef struct rp_pct {        /* percentile block, seconds or counts */
	double mean, p50, p90, p99, max;
} rp_pct;

typedef struct rp_reason {
	char *reason;
	uint64_t count;
} rp_reason;

typedef struct rp_series {     /* timeseries, n samples */
	size_t n;
	double *t_s;               /* simulated seconds, non-decreasing */
	double *part[RP_NPARTS];   /* percent of the KV budget */
	double *running;           /* NULL when absent */
	double *waiting;           /* NULL when absent */
} rp_series;

enum { RP_CDF_QUEUE, RP_CDF_TTFT, RP_CDF_TPOT, RP_NCDF };
extern const char *const rp_cdf_key[RP_NCDF];   /* "queue_delay_s", ... */
extern const char *const rp_cdf_title[RP_NCDF]; /* "Queueing delay", ... */

typedef struct rp_cdf {
	size_t n;
	double *q;                 /* quantile levels 0..1, non-decreasing */
	double *v[RP_NCDF];        /* seconds; NULL when absent */
} rp_cdf;

/* ---- cost (--gpu-hour-price): the "cost" object of a policy or sweep row */
enum { RP_COST_MTOK, RP_COST_CONV_HOUR, RP_COST_REQUEST, RP_COST_RUN, RP_NCOST };
extern const char *const rp_cost_key[RP_NCOST];   /* "dollars_per_million_output_tokens", ... */
extern const char *const rp_cost_label[RP_NCOST]; /* "$ per million output tokens", ... */

typedef struct rp_policy {
	char *name;
	uint64_t arrived, completed, rejected, unfinished;
	rp_reason *reasons;
	size_t nreasons;
	double mem[RP_NPARTS];       /* time-weighted percent */
	double mem_peak[RP_NPARTS];  /* NAN when absent */
	rp_pct concurrency, tokens_per_step, waiting;
	rp_pct queue_delay, ttft, tpot, e2e;  /* seconds */
	double requests_per_s, output_tokens_per_s;
	double goodput_rps, goodput_fraction, slo_ttft_s, slo_tpot_s;
	double preemptions, recomputed_tokens, swapped_bytes;
	double prefix_hit_tokens, prefix_hit_blocks;
	double prefix_hit_rate_tokens, prefix_hit_rate_blocks;
	double sim_time_s, sim_steps, sim_events, sim_wall_s;
	/* compare: paged / this policy, from the top-level "ratios" */
	double ratio_concurrency, ratio_throughput, ratio_waste, ratio_p99_queue;
	bool has_ratios;
	double m[KVS_M_COUNT_];      /* every figure by metric id; NAN when absent */
	rp_series ts;                /* n == 0 when absent */
	rp_cdf cdf;                  /* n == 0 when absent */
	double cost[RP_NCOST];       /* dollars; NAN when absent */
} rp_policy;

/* The six memory parts share the KV pool: true when their sum (in *sum)
 * is 100 % to the file's rounding.  The page flags, and kvs_report_write
 * says, a policy where it is not. */
static inline bool rp_parts_whole(const rp_policy *p, double *sum)
{
	double t = 0;
	for (int k = 0; k < RP_NPARTS; k++)
		t += p->mem[k];
	*sum = t;
	return fabs(t - 100) <= 0.05;
}

/* ---- a sweep run ---------------------------------------------------------- */
enum {
	RP_ROW_IFRAG, RP_ROW_METADATA, RP_ROW_PREFIX_HIT, RP_ROW_CONC_MEAN,
	RP_ROW_CONC_P99, RP_ROW_QUEUE_P99, RP_ROW_TTFT_P50, RP_ROW_TTFT_P99,
	RP_ROW_TPOT_P50, RP_ROW_TPOT_P99, RP_ROW_RPS, RP_ROW_OTPS,
	RP_ROW_PREEMPTIONS, RP_ROW_KERNEL_US, RP_ROW_KERNEL_REL, RP_ROW_WASTE, RP_NROWF
};
/* The JSON key of a sweep-row field: the metric table's (kvsim/sim.h), or
 * the row's own (kernel cost). */
const char *rp_row_field_key(int field);

typedef struct rp_row {
	char *policy;
	double block_size;           /* tokens per block, >= 1 */
	double f[RP_NROWF];          /* NAN when absent */
	double cost[RP_NCOST];       /* dollars; NAN when absent */
	/* a --rates curve's row: its offered rate (NAN in a plain sweep),
	 * meets_slo 1/0 (-1 when absent), repeated: a copy of the row at
	 * another block size (contiguous reservation) */
	double rate;
	int meets_slo;
	bool repeated;
} rp_row;

typedef struct rp_capacity {
	char *policy;
	char *outcome;               /* "found", "unbounded", "unattainable"; NULL when absent */
	double block_size;           /* NAN when absent */
	double max_rate, slo_ttft_s, slo_tpot_s;
	double tolerance;            /* relative step of the rate grid (0.02 = 2 %) */
	double fail_rate;            /* the next rate tried, which misses the SLOs; NAN when absent */
} rp_capacity;

typedef struct rp_reco {
	char *objective, *policy, *reason;
	double block_size;
} rp_reco;

/* ---- key/value pairs for the run's settings tables ------------------------ */
typedef struct rp_kv {
	char *key, *value;
} rp_kv;

enum { RP_META_MODEL, RP_META_GPU, RP_META_ENGINE, RP_META_TRACE, RP_NMETA };
extern const char *const rp_meta_key[RP_NMETA];

/* RP_KIND_CURVE: a `kvsim sweep --rates` document, its "curve" rows in
 * rows[] with their rate (throughput against latency per offered rate) */
typedef enum rp_kind { RP_KIND_POLICIES, RP_KIND_SWEEP, RP_KIND_CURVE } rp_kind;

/* The "fleet" object of a kvsim fleet run, as far as the answer needs it. */
typedef struct rp_fleet {
	bool on;                     /* the run is a fleet's */
	double replicas;             /* NAN: not given */
	char router[96];
	double gpus;                 /* every replica's tp x pp; NAN: unknown */
	char pools[256];             /* "2 x h100-80gb (tp 1, prefill), ..." or "" */
	/* --find-min-replicas: result "found", "unattainable", "interrupted"
	 * ("" without a search), at rate req/s; the fewest replicas meeting
	 * the SLOs (NAN: none); the unattainable floor and where */
	char search[16];
	double search_rate, fewest, floor_replicas, floor_ttft_s, floor_tpot_s;
	double slo_ttft_s, slo_tpot_s;   /* the engine's SLOs (NAN: none) */
} rp_fleet;

typedef struct rp_run {
	char *label;                 /* as given (file name or "run N") */
	char *command;               /* "replay", "compare", "sweep" */
	char *version;               /* kvsim_version or NULL */
	char *model_name, *gpu_name; /* NULL when absent */
	rp_kind kind;
	rp_kv *meta[RP_NMETA];
	size_t nmeta[RP_NMETA];
	rp_policy *pol;              /* in display order */
	size_t npol;
	rp_row *rows;                /* sweep, in input order */
	size_t nrows;
	rp_capacity *cap;
	size_t ncap;
	rp_reco *reco;
	size_t nreco;
	char prefix[32];             /* figure file prefix: "" or "run2-" */
	/* stopped by a signal ("interrupted": true): the figures cover what
	 * was done; a sweep's points_done of points_total (0 when absent) */
	bool interrupted;
	uint64_t points_done, points_total;
	/* fleet runs: the optional `replicas` array, one row per replica and a
	 * column per numeric field of any replica (NAN where one lacks it) */
	size_t nreplicas, nreplica_fields;
	char **replica_names;        /* its "name", its "id", or its index */
	char **replica_fields;       /* in first-seen order */
	double *replica_values;      /* [nreplicas][nreplica_fields] */
	/* kvsim fleet runs (command "fleet"): what the "fleet" object says
	 * of the fleet as a whole, for the answer (rp_fleet_parse) */
	rp_fleet fleet;
} rp_run;

/* Parse one JSON text into *run (zeroed by the caller).  On failure returns
 * KVS_ERR_PARSE with a message naming label and key path or line/column;
 * partially filled runs are released by rp_run_free either way. */
kvs_status rp_run_parse(const char *text, size_t len, const char *label,
			rp_run *run);
void rp_run_free(rp_run *run);

/* The note an interrupted run carries wherever its figures are shown
 * (nothing for a finished one). */
void rp_interrupted_note(FILE *f, const rp_run *run);

/* report_replicas.c: read a `replicas` array (a jansson json_t *) into run;
 * KVS_ERR_PARSE naming label and the replica when it is not an array of
 * objects.  rp_replicas_free releases what it read. */
struct json_t;
kvs_status rp_replicas_parse(const struct json_t *arr, const char *label, rp_run *run);
/* A kvsim fleet's document (root): its "fleet" object into run->fleet;
 * what is missing stays unknown.  The replicas table's heading and scale
 * for a field of a fleet's replica rows (the raw key otherwise). */
void rp_fleet_parse(const struct json_t *root, rp_run *run);
const char *rp_replica_field_label(const rp_run *run, const char *key, double *scale);
void rp_replicas_free(rp_run *run);

/* ---- figures -------------------------------------------------------------- */
typedef struct rp_fig {
	char name[64];               /* file base name, with the run prefix */
	char title[128];             /* caption */
	int kind;                    /* private to figures.c */
	const rp_run *run;
	int which;                   /* CDF index, ... */
} rp_fig;

/* The figures a run has data for, appended to *figs (grown with
 * kvs_reallocarray). */
kvs_status rp_figures_plan(const rp_run *run, rp_fig **figs, size_t *nfigs);
/* The block size a --rates curve draws policy at: 16 (the engines'
 * default) when it has rows there, else its nearest on a log scale. */
double rp_curve_block(const rp_run *run, const char *policy);
/* The rows a --rates curve draws for policy: those at its rp_curve_block
 * with an offered rate above 0, in ascending rate order (rows of one rate
 * in row order), at most cap of them into out; returns how many.  The
 * figure, the chart and the headline all take their points from here. */
size_t rp_curve_rows(const rp_run *run, const char *policy, const rp_row **out,
		     size_t cap);
/* Draw fig into dir/NAME.svg and dir/NAME.png at w x h units. */
kvs_status rp_figure_render(const rp_fig *fig, const char *dir, unsigned w,
			    unsigned h);
/* The samples of y[lo, hi) (hi > lo) that hold its minimum and its maximum
 * (the first of each), in index order: *first <= *last, the same sample when
 * one is both.  The figures and the charts draw this pair per bucket of a
 * count series, an envelope that keeps every spike.  O(hi - lo). */
void rp_minmax(const double *y, size_t lo, size_t hi, size_t *first, size_t *last);

/* ---- the page ------------------------------------------------------------- */
/* static_imgs: also show each static figure as <img> (opts.static_figures) */
kvs_status rp_html_write(const char *path, const char *title,
			 const rp_run *runs, size_t nruns, const rp_fig *figs,
			 size_t nfigs, unsigned w, unsigned h, bool static_imgs);

/* report_interactive.c: a run's interactive charts (JSON specs drawn by the
 * inlined Chart.js), each captioned with links to its static figure, and
 * the per-replica rows of a fleet run */
void rp_charts_write(FILE *f, const rp_run *run, const rp_fig *figs, size_t nfigs,
		     bool static_imgs, unsigned w, unsigned h);
/* the chart library, the page script and the library's licence */
void rp_charts_tail(FILE *f);
/* A sweep policy whose rows agree on every result at every block size
 * (contiguous reservation): shown once in tables and figures. */
bool rp_sweep_bs_independent(const rp_run *run, const char *policy);
/* The same for capacity results: one max rate, next rate and outcome at
 * every block size searched. */
bool rp_capacity_bs_independent(const rp_run *run, const char *policy);

/* report_headline.c: the summary at the top of the page, stating the answer */
void rp_headline_write(FILE *f, const rp_run *runs, size_t nruns);

/* ---- the output directory (report_outdir.c) -------------------------------
 * The report is drawn into a staging directory and swapped in whole: see
 * the comment at the top of report_outdir.c. */
typedef struct rp_outdir {
	char *shown;        /* the directory as the caller named it, for messages */
	char *target;       /* the same, absolute, symbolic links resolved */
	char *parent;       /* target's parent directory and name in it */
	char *base;
	char *staging;      /* where the files are drawn; NULL once swapped in */
	int lock_fd;        /* staging, flock-ed while it is built; -1 when none */
	int slot;           /* its entry in the signal handler's table, -1 when none */
	unsigned mode;      /* the previous directory's permission bits */
	bool existed;       /* target existed when opened */
	bool in_place;      /* fallback: staged inside target, files moved one by one */
} rp_outdir;

/* Check outdir (missing, empty or a previous report), create missing
 * parents, remove staging directories left by dead runs, create the
 * staging directory.  KVS_ERR_IO naming outdir and, for a directory that
 * is not a previous report, the entry that is not a report's.  On failure
 * nothing is left to discard. */
kvs_status rp_outdir_open(const char *outdir, rp_outdir *od);
/* The directory to draw into. */
const char *rp_outdir_staging(const rp_outdir *od);
/* Swap the staged report in and remove the previous one; od is released
 * either way (on failure the staged files are removed and the target is
 * as it was, except in the file-by-file fallback). */
kvs_status rp_outdir_commit(rp_outdir *od);
/* Remove the staged files and release od (safe on a released one). */
void rp_outdir_discard(rp_outdir *od);
/* st, its message rewritten to name the target instead of the staging
 * directory when it names that (errors of the files drawn into it). */
kvs_status rp_outdir_restate(const rp_outdir *od, kvs_status st);

/* ---- number formatting shared by the page and the figures ----------------- */
/* Seconds with a unit that suits the magnitude ("850 ms", "1.25 s"). */
void rp_fmt_seconds(char *buf, size_t size, double s);
/* A plain number with up to `sig` significant digits, "-" for NAN. */
void rp_fmt_num(char *buf, size_t size, double v, int sig);
/* An integer count with thousands separators ("1,234,567"). */
void rp_fmt_count(char *buf, size_t size, double v);
/* Bytes in binary units ("1.50 GiB"). */
void rp_fmt_bytes(char *buf, size_t size, double v);

/* s written as HTML text: & < > " and ' escaped (report_html.c). */
void kvs_report_esc(FILE *f, const char *s);

#endif /* KVSIM_REPORT_INTERNAL_H */
