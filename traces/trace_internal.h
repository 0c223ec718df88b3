/*
 * trace_internal.h - pieces shared by the trace readers, the writer, the
 * summary and the generator.  Not installed.
 *
 * Memory picture of a reader (constant whatever the file size):
 *
 *   line buffer  [ ........ consumed | line\n line\n partial | free ]
 *                grows by doubling up to KVS_TRACE_MAX_LINE + one read chunk
 *   sort window  sort_window + 1 slots, each a parsed record with its own
 *                hash-id array (source granularity), ordered by a binary heap
 *   output ids   one array re-split to the requested block size, returned to
 *                the caller and valid until the next kvs_trace_next call
 */
#ifndef KVSIM_TRACE_INTERNAL_H
#define KVSIM_TRACE_INTERNAL_H

#include <stdio.h>

#include "kvsim/trace.h"

/* Longest accepted line in bytes, its terminator (\n or \r\n) not counted.  A longer line is a clear error
 * (never unbounded growth). */
#define KVS_TRACE_MAX_LINE (1u << 20)

/* Latest arrival a trace holds (s): times are int64 nanoseconds, and the
 * parsers refuse from 9.2e18 ns on. */
#define KVS_TRACE_MAX_ARRIVAL_S 9.2e9

/* ---- line reader ---------------------------------------------------------*/
typedef struct kvs_linebuf {
	FILE *f;
	bool own;               /* fclose at the end (not for stdin) */
	char *buf;
	size_t cap, start, end; /* unread data is buf[start, end) */
	bool eof;
	uint64_t lineno;        /* lines returned so far */
	uint64_t bytes;         /* bytes consumed as lines */
	const char *path;       /* for messages */
	bool long_line;         /* the last error was an over-long line */
} kvs_linebuf;

/* Open path ("-": stdin), or read from stream (not closed) when given. */
kvs_status kvs_linebuf_open(kvs_linebuf *lb, const char *path, FILE *stream);
/* Next line without its terminator (\n, \r\n).  The pointer is valid until
 * the next call.  KVS_END at the end of the file; KVS_ERR_PARSE for a line
 * over KVS_TRACE_MAX_LINE; KVS_ERR_IO for a read error.  The returned line
 * is NUL-terminated in place. */
kvs_status kvs_linebuf_next(kvs_linebuf *lb, char **line, size_t *len);
/* After an over-long line error: discard the rest of that line so reading
 * can go on (skip_bad_lines). */
kvs_status kvs_linebuf_skip_rest(kvs_linebuf *lb);
void kvs_linebuf_close(kvs_linebuf *lb);

/* Open a reader on an already open stream (not closed by the reader);
 * name is used in messages.  For harnesses and in-memory input; --rate
 * with keep-shape is refused (it needs to read the input twice). */
kvs_status kvs_trace_open_stream(FILE *stream, const char *name,
				 const kvs_trace_opts *opts, kvs_trace **out);

/* ---- field parsing (parse.c) ---------------------------------------------
 * Each returns NULL on success or a static reason ("expected an integer",
 * "negative value", ...) for the "file:line: field: reason" message. */
const char *kvs_parse_field_u64(const char *s, size_t len, uint64_t max,
				uint64_t *out);
const char *kvs_parse_field_i64(const char *s, size_t len, int64_t min,
				int64_t max, int64_t *out);
/* Non-negative seconds with up to 9 exact fractional digits (or an exponent)
 * into nanoseconds. */
const char *kvs_parse_field_seconds_ns(const char *s, size_t len, int64_t *ns);
/* Same with a unit of 10^-3 s (Mooncake milliseconds). */
const char *kvs_parse_field_ms_ns(const char *s, size_t len, int64_t *ns);
/* "YYYY-MM-DD hh:mm:ss[.fffffff]" (or 'T') into ns since 1970 (UTC). */
const char *kvs_parse_field_datetime_ns(const char *s, size_t len, int64_t *ns);
/* Printable, escaped, shortened copy of a field for messages (static buffer
 * rotating among 4). */
const char *kvs_trace_quote(const char *s, size_t len);

/* ---- PRNG (rng.c): xoshiro256** seeded through splitmix64 ----------------
 * The same seed gives the same stream on every platform. */
typedef struct kvs_rng {
	uint64_t s[4];
} kvs_rng;

void kvs_rng_seed(kvs_rng *r, uint64_t seed);
uint64_t kvs_rng_u64(kvs_rng *r);
double kvs_rng_uniform(kvs_rng *r);          /* [0, 1) with 53 bits */
double kvs_rng_uniform_pos(kvs_rng *r);      /* (0, 1) */
double kvs_rng_exp(kvs_rng *r, double rate); /* mean 1 / rate */
double kvs_rng_normal(kvs_rng *r);           /* mean 0, sd 1 */
/* Box-Muller's value from its two uniforms (u1 in (0, 1), u2 in [0, 1)):
 * what kvs_rng_normal returns after drawing them. */
double kvs_normal_of(double u1, double u2);
/* exp(mu + sigma kvs_normal_of(u1, u2)) without libm, within
 * y (1 + |sigma|) 2^-41 of libm's value; false where it does not apply
 * (rng.c says when). */
bool kvs_lognormal_fast(double u1, double u2, double mu, double sigma, double *y);
/* The generator's log-normal length: exp(mu + sigma kvs_normal_of(u1, u2))
 * rounded to the nearest whole number, clamped to [1, max_tokens], exactly
 * as libm's value would give, mostly without calling libm; and the same
 * with u1 and u2 drawn from r as kvs_rng_normal draws them. */
uint32_t kvs_lognormal_len(double u1, double u2, double mu, double sigma, uint32_t max_tokens);
uint32_t kvs_rng_lognormal_len(kvs_rng *r, double mu, double sigma, uint32_t max_tokens);
double kvs_rng_gamma(kvs_rng *r, double shape, double scale);
uint64_t kvs_rng_below(kvs_rng *r, uint64_t n); /* uniform in [0, n) */

/* ---- exact/log histogram for length percentiles (summary.c) -------------*/
typedef struct kvs_lenhist {
	uint64_t *exact;        /* counts of values < exact_cap */
	uint32_t exact_cap;
	uint64_t log[64 * 16];  /* values >= KVS_LENHIST_EXACT_MAX: 16 per octave */
	uint64_t n;
	uint64_t max;
	uint64_t min;
	long double sum;
} kvs_lenhist;

#define KVS_LENHIST_EXACT_MAX (1u << 20)

#endif /* KVSIM_TRACE_INTERNAL_H */
