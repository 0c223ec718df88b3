/*
 * kvsim/trace.h - streaming readers for request traces, trace shaping, and
 * the synthetic workload generator.
 *
 * A reader is opened on a file, yields one kvs_request per call in constant
 * memory whatever the file size, and keeps counters so that every line is
 * accounted for: lines read = requests yielded + skipped (by reason) +
 * filtered + header/blank lines.  Malformed lines stop the reader with
 * KVS_ERR_PARSE and a message "file:line: field: reason" (kvs_last_error),
 * unless skip_bad_lines is set, in which case they are skipped and counted.
 *
 * Formats (detected from the header / first line, or forced):
 *   azure      TIMESTAMP,ContextTokens,GeneratedTokens (Azure LLM 2023)
 *   mooncake   JSONL {timestamp ms, input_length, output_length, hash_ids}
 *   burstgpt   Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
 *   splitwise  arrived_at,num_prefill_tokens,num_decode_tokens (Vidur)
 *   native     kvsim's own CSV or JSONL (docs/TRACE-FORMAT.md)
 */
#ifndef KVSIM_TRACE_H
#define KVSIM_TRACE_H

#include "kvsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kvs_trace_format {
	KVS_TRACE_AUTO = 0,
	KVS_TRACE_AZURE,
	KVS_TRACE_MOONCAKE,
	KVS_TRACE_BURSTGPT,
	KVS_TRACE_SPLITWISE,
	KVS_TRACE_NATIVE_CSV,
	KVS_TRACE_NATIVE_JSONL,
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
	uint64_t bytes_read;
} kvs_trace_stats;

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

/* Path of the bundled default trace (installed data dir, or source tree). */
const char *kvs_trace_default_path(void);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_TRACE_H */
