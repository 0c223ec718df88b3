/*
 * kvsim/trace.h - streaming readers for request traces, trace shaping, and
 * the synthetic workload generator.
 *
 * A reader is opened on a file, yields one kvs_request per call in constant
 * memory whatever the file size, and keeps counters so that every line is
 * accounted for: lines read = requests yielded + skipped (by reason) +
 * filtered + header/comment/blank lines (+ the failed line after an error;
 * see kvs_trace_stats_balanced).  Malformed lines stop the reader with
 * KVS_ERR_PARSE and a message "file:line: field: reason" (kvs_last_error),
 * unless skip_bad_lines is set, in which case they are skipped and counted.
 * The format is described in docs/TRACE-FORMAT.md.
 *
 * Formats (detected from the header / first line, or forced):
 *   azure      TIMESTAMP,ContextTokens,GeneratedTokens (Azure LLM 2023)
 *   mooncake   JSONL {timestamp ms, input_length, output_length, hash_ids}
 *   burstgpt   Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
 *   splitwise  arrived_at,num_prefill_tokens,num_decode_tokens (Vidur)
 *   native     kvsim's own CSV or JSONL (docs/TRACE-FORMAT.md)
 *   vidur-lengths  num_prefill_tokens,num_decode_tokens: lengths only (Vidur's
 *              length trace); every request arrives at 0 s, or as a Poisson
 *              process at opts.rate when given
 *   vidur-dated    Date,Time,PromptTokenCount,CompletionTokenCount (Vidur's
 *              trace replay: Time in seconds, one Date per file)
 */
#ifndef KVSIM_TRACE_H
#define KVSIM_TRACE_H

#include "kvsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The trace formats, described once: enumerator and --format name (auto:
 * detected from the first lines). */
#define KVS_TRACE_FORMAT_LIST(X) \
	X(KVS_TRACE_AUTO, "auto") \
	X(KVS_TRACE_AZURE, "azure") \
	X(KVS_TRACE_MOONCAKE, "mooncake") \
	X(KVS_TRACE_BURSTGPT, "burstgpt") \
	X(KVS_TRACE_SPLITWISE, "splitwise") \
	X(KVS_TRACE_NATIVE_CSV, "native-csv") \
	X(KVS_TRACE_NATIVE_JSONL, "native-jsonl") \
	X(KVS_TRACE_VIDUR_LENGTHS, "vidur-lengths") \
	X(KVS_TRACE_VIDUR_DATED, "vidur-dated")

typedef enum kvs_trace_format {
	KVS_TRACE_FORMAT_LIST(KVS_ENUMERATOR)
	KVS_TRACE_FORMAT_COUNT_
} kvs_trace_format;

const char *kvs_trace_format_name(kvs_trace_format f);
kvs_status kvs_trace_format_parse(const char *text, kvs_trace_format *out);

/* One request as the simulator sees it. */
typedef struct kvs_request {
	uint64_t index;             /* 0-based order of yielding */
	uint64_t line;              /* source line (1-based) */
	double arrival_s;           /* seconds from trace start, after shaping */
	uint32_t prompt_tokens;
	uint32_t output_tokens;
	uint32_t num_samples;       /* parallel sampling n; 1 when absent */
	int32_t priority;           /* 0 when absent */
	uint64_t session_id;        /* conversation id; 0 when absent */
	uint32_t turn;              /* turn within the session; 0 when absent */
	/* Prefix block hashes of the prompt's full blocks, chained, at
	 * hash_block_tokens tokens each (re-split from the source granularity
	 * to kvs_trace_opts.block_size when that is set).  NULL when the
	 * format has none.  Owned by the reader; valid until the next call. */
	const uint64_t *hash_ids;
	uint32_t num_hash_ids;
	uint32_t hash_block_tokens;
	bool truncated;             /* prompt/output cut to max_model_len */
	bool over_max_len;          /* longer than max_model_len, overlong = reject:
	                             * consumers must reject it with that reason */
} kvs_request;

typedef enum kvs_overlong {
	KVS_OVERLONG_REJECT = 0,    /* yield flagged over_max_len, count it */
	KVS_OVERLONG_TRUNCATE,      /* cut prompt then output to fit */
} kvs_overlong;

typedef enum kvs_rate_mode {
	KVS_RATE_KEEP_SHAPE = 0,    /* scale inter-arrivals: keeps burstiness */
	KVS_RATE_POISSON,           /* exponential inter-arrivals at rate */
} kvs_rate_mode;

/* Shaping options shared by every command that reads traces. */
typedef struct kvs_trace_opts {
	kvs_trace_format format;    /* AUTO detects */
	uint64_t limit;             /* max requests yielded; 0 = all */
	double window_start_s;      /* keep arrivals in [start, end) before scaling */
	double window_end_s;        /* <= 0: no end */
	double time_scale;          /* arrivals multiplied by this (1) */
	double rate;                /* target mean rate req/s; 0 = keep */
	kvs_rate_mode rate_mode;
	uint64_t seed;              /* for Poisson re-timing */
	uint32_t max_model_len;     /* 0 = no limit */
	kvs_overlong overlong;
	bool skip_bad_lines;
	bool skip_failed;           /* BurstGPT rows with 0 response tokens (true) */
	uint32_t sort_window;       /* reorder unsorted arrivals within this many
	                             * requests; 0 = unsorted input is an error */
	uint32_t block_size;        /* re-split hash ids to this block size; 0 = as in file */
	/* With block_size 0: also yield the id of the prompt's partial last
	 * source block (a 600-token Mooncake prompt keeps both its ids), so
	 * that a consumer re-splitting to a finer block size itself (sweep)
	 * reuses the full sub-blocks inside it as a reader re-splitting to
	 * that size does.  hash_ids then cover the prompt's full and partial
	 * source blocks. */
	bool hash_partial_block;
} kvs_trace_opts;

void kvs_trace_opts_defaults(kvs_trace_opts *o);

typedef enum kvs_skip_reason {
	KVS_SKIP_BAD_LINE = 0,      /* malformed, with skip_bad_lines */
	KVS_SKIP_FAILED,            /* BurstGPT failure rows */
	KVS_SKIP_COUNT_
} kvs_skip_reason;

typedef struct kvs_trace_stats {
	uint64_t lines_read;        /* including header and blank lines */
	uint64_t header_lines;
	uint64_t blank_lines;
	uint64_t requests;          /* yielded */
	uint64_t skipped[KVS_SKIP_COUNT_];
	uint64_t filtered_window;   /* outside the time window */
	uint64_t filtered_limit;    /* read past --limit (0 if reading stopped) */
	uint64_t over_max_len;      /* yielded flagged over_max_len */
	uint64_t truncated;
	uint64_t reordered;         /* arrivals fixed by the sort window */
	uint64_t hashed;            /* yielded with prefix hash ids in the file */
	uint64_t kept_failed;       /* BurstGPT failure rows yielded (0 output
	                             * tokens; skip_failed false) */
	uint64_t bytes_read;
	uint64_t failed_lines;      /* after an error: the line that stopped the
	                             * reader plus any read ahead of it in the
	                             * sort window; 0 otherwise */
} kvs_trace_stats;

/* Do the counters add up?  lines_read = header_lines + blank_lines +
 * requests + skipped[*] + filtered_window + filtered_limit + failed_lines.
 * Holds after KVS_END and after an error; tests check it after every run. */
bool kvs_trace_stats_balanced(const kvs_trace_stats *s);

/* Name of a skip reason ("bad_line", "failed"). */
const char *kvs_trace_skip_reason_name(kvs_skip_reason r);

typedef struct kvs_trace kvs_trace;

/* Open path ("-" is stdin).  Reads the header / first line to detect the
 * format.  Errors name the file. */
kvs_status kvs_trace_open(const char *path, const kvs_trace_opts *opts,
			  kvs_trace **out);
/* KVS_OK with *req filled, KVS_END at the end, or an error. */
kvs_status kvs_trace_next(kvs_trace *t, kvs_request *req);
const kvs_trace_stats *kvs_trace_get_stats(const kvs_trace *t);
kvs_trace_format kvs_trace_get_format(const kvs_trace *t);
const char *kvs_trace_path(const kvs_trace *t);
void kvs_trace_close(kvs_trace *t);

/* Re-split source hash ids of src_block tokens (e.g. Mooncake's 512) into
 * chained hashes of block_size tokens, covering only full blocks of a
 * prompt of prompt_tokens.  KVS_ERR_INVALID with a clear message when
 * block_size does not divide src_block.  out must hold
 * n * (src_block / block_size) entries. */
kvs_status kvs_trace_split_hashes(const uint64_t *ids, uint32_t n,
				  uint32_t src_block, uint32_t prompt_tokens,
				  uint32_t block_size, uint64_t *out,
				  uint32_t *nout);

/* Path of the bundled default trace: $KVSIM_DATADIR/traces/azure-conv-sample.csv,
 * then the installed data dir, then the source tree; the first that exists
 * (the source-tree path when none does).  Static storage. */
const char *kvs_trace_default_path(void);

/* Message of the first line skipped as malformed ("file:line: field:
 * reason"), or "" when none was: lets a command show one example. */
const char *kvs_trace_first_skip(const kvs_trace *t);

/* Source granularity of the hash ids this reader yields before re-splitting
 * (512 for Mooncake, the file's hash_block_tokens for native, 0 if none). */
uint32_t kvs_trace_source_block(const kvs_trace *t);

/* Coarsen chained hash ids of src_block tokens to block_size, a multiple of
 * src_block: the hash of a coarse block is the hash of its last fine block
 * (chained ids name the whole prefix).  Only full coarse blocks of a
 * prompt of prompt_tokens are kept.  out may alias ids.  KVS_ERR_INVALID
 * when block_size is not a multiple of src_block. */
kvs_status kvs_trace_merge_hashes(const uint64_t *ids, uint32_t n,
				  uint32_t src_block, uint32_t prompt_tokens,
				  uint32_t block_size, uint64_t *out,
				  uint32_t *nout);

/* ---- summary (kvsim trace) ----------------------------------------------- */

/* Length distribution.  Percentiles are nearest-rank (the smallest value v
 * with at least ceil(p * n) values <= v); exact below 2^20 tokens, above it
 * within 1/16 of an octave (4.4 %). */
typedef struct kvs_len_stats {
	uint64_t n;
	double mean;
	uint64_t min, p50, p90, p99, max;
} kvs_len_stats;

typedef struct kvs_trace_summary {
	kvs_trace_format format;
	uint64_t requests;
	double first_s, last_s;     /* first and last arrival, seconds */
	double span_s;              /* last - first */
	double mean_rate;           /* (requests - 1) / span_s, req/s; NAN when
	                             * undefined (under 2 requests, or span 0) */
	double cv_interarrival;     /* sd / mean of inter-arrival gaps; NAN when
	                             * undefined (under 2 gaps, or mean gap 0) */
	kvs_len_stats prompt;       /* tokens */
	kvs_len_stats output;       /* tokens */
	uint64_t prompt_tokens_total, output_tokens_total;
	/* Unbounded prefix cache over the hash ids (chained; a lookup stops at
	 * the first miss, as vLLM's does).  Zero when the trace has none. */
	bool has_hashes;
	uint32_t hash_block_tokens;
	uint64_t hashed_blocks;     /* full prompt blocks with a hash id */
	uint64_t full_blocks;       /* full prompt blocks of every request:
	                             * sum floor(prompt / block) (exact below
	                             * 2^20-token prompts) */
	uint64_t hit_blocks;        /* blocks found in the cache */
	uint64_t unique_blocks;     /* distinct hash ids seen */
	uint64_t prefix_requests;   /* requests the prefix figures cover: all,
	                             * unless prefix_capped */
	bool prefix_capped;         /* KVS_SUMMARY_MAX_IDS distinct ids reached:
	                             * the prefix figures stop there */
	double prefix_hit_blocks;   /* hit_blocks / full_blocks */
	double prefix_hit_tokens;   /* hit_blocks * block / prompt_tokens_total */
	uint64_t sessions;          /* distinct non-zero session ids */
	uint32_t max_turn;
	uint64_t multi_sample;      /* requests with num_samples > 1 */
	kvs_trace_stats reader;
} kvs_trace_summary;

/* Most distinct hash ids (at the trace's own granularity) the summary's
 * prefix cache holds: 2^25, 768 MiB. */
#define KVS_SUMMARY_MAX_IDS (1ull << 25)

/* Read every request of an open reader (to KVS_END) and summarise it.
 * Memory: constant for the arrival and length statistics; the prefix cache
 * grows with the distinct hash ids at the trace's own granularity (24
 * bytes each, whatever the block size the reader splits them to), up to
 * KVS_SUMMARY_MAX_IDS, past which the prefix figures cover the requests
 * before and the rest is still read and counted; the session set grows
 * with the distinct sessions (16 bytes each).  On error the summary is
 * untouched. */
kvs_status kvs_trace_summarize(kvs_trace *t, kvs_trace_summary *out);

/* ---- native writer ------------------------------------------------------- */

typedef struct kvs_trace_writer kvs_trace_writer;

/* Open path ("-" is stdout) for a native trace, format KVS_TRACE_NATIVE_CSV
 * or KVS_TRACE_NATIVE_JSONL.  with_hashes adds the hash columns (CSV).  The
 * trace is written to a temporary file beside path (kvs_outfile) that
 * kvs_trace_writer_close renames to path; path is untouched until then. */
kvs_status kvs_trace_writer_open(const char *path, kvs_trace_format format,
				 bool with_hashes, kvs_trace_writer **out);
/* A "# text" comment line (before the first request, CSV and JSONL). */
kvs_status kvs_trace_writer_comment(kvs_trace_writer *w, const char *text);
kvs_status kvs_trace_writer_put(kvs_trace_writer *w, const kvs_request *r);
/* Flush, close and rename to the path; KVS_ERR_IO if any write failed (and
 * then nothing is left at the path).  NULL is a no-op. */
kvs_status kvs_trace_writer_close(kvs_trace_writer *w);
/* Close and remove what was written: for a run that failed.  NULL: no-op. */
void kvs_trace_writer_discard(kvs_trace_writer *w);

/* ---- synthetic workload generator (kvsim gen) ----------------------------- */

typedef enum kvs_gen_arrival {
	KVS_ARRIVAL_POISSON = 0,    /* exponential gaps */
	KVS_ARRIVAL_GAMMA,          /* gamma gaps with coefficient of variation cv */
	KVS_ARRIVAL_CONSTANT,       /* gaps of exactly 1 / rate */
} kvs_gen_arrival;

typedef enum kvs_gen_dist_kind {
	KVS_DIST_FIXED = 0,         /* a */
	KVS_DIST_UNIFORM,           /* integers in [a, b] */
	KVS_DIST_LOGNORMAL,         /* mean a tokens, sigma b of log(length) */
	KVS_DIST_TRACE,             /* resampled from the lengths of a trace */
} kvs_gen_dist_kind;

typedef struct kvs_gen_dist {
	kvs_gen_dist_kind kind;
	double a, b;
	const char *trace_path;     /* KVS_DIST_TRACE; not owned */
} kvs_gen_dist;

/* "fixed:N", "uniform:A:B", "lognormal:MEAN:SIGMA" or "trace:FILE";
 * KVS_ERR_INVALID with a message otherwise.  For trace:, out->trace_path
 * points into text. */
kvs_status kvs_gen_dist_parse(const char *text, kvs_gen_dist *out);

typedef struct kvs_gen_opts {
	uint64_t seed;
	uint64_t requests;          /* stop after this many (0: duration only) */
	double duration_s;          /* stop before this arrival (0: requests only) */
	kvs_gen_arrival arrival;
	double rate;                /* new conversations per second */
	double cv;                  /* gamma: coefficient of variation of gaps */
	kvs_gen_dist prompt;        /* new prompt tokens per turn */
	kvs_gen_dist output;        /* output tokens per turn */
	uint32_t max_tokens;        /* lengths are clamped to [1, max_tokens] */
	/* shared-prefix groups: a system prompt of prefix_tokens shared by
	 * prefix_fraction of the conversations, spread over prefix_groups
	 * distinct prompts */
	uint32_t prefix_groups;
	uint32_t prefix_tokens;
	double prefix_fraction;
	/* multi-turn sessions: turns per conversation (mean when geometric),
	 * think time between a turn's arrival and the next (exponential) */
	double turns;
	bool turns_geometric;
	double think_s;
	uint32_t num_samples;       /* parallel sampling n */
	uint32_t hash_block_tokens; /* granularity of emitted hash ids */
	int hashes;                 /* -1 auto (when groups or turns > 1), 0, 1 */
} kvs_gen_opts;

void kvs_gen_opts_defaults(kvs_gen_opts *o);

typedef struct kvs_gen kvs_gen;

/* Validate options (KVS_ERR_INVALID naming the option) and load any trace
 * to resample lengths from (a reservoir of at most 2^20 pairs). */
kvs_status kvs_gen_open(const kvs_gen_opts *o, kvs_gen **out);
/* Next request in arrival order; KVS_END when done.  Memory grows with the
 * conversations in flight only.  hash_ids valid until the next call. */
kvs_status kvs_gen_next(kvs_gen *g, kvs_request *req);
void kvs_gen_close(kvs_gen *g);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_TRACE_H */
