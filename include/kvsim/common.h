/*
 * kvsim/common.h - status codes, error messages, checked arithmetic and the
 * host memory wrapper shared by every kvsim module.
 *
 * Errors: every fallible call returns a kvs_status and leaves its
 * out-parameters untouched on failure.  The call that fails also records a
 * human-readable message (file, line, field and reason where they apply) in a
 * thread-local buffer, read back with kvs_last_error().  Exhaustion (no free
 * block, no room for a request) is a normal result of the allocator, not an
 * error.
 */
#ifndef KVSIM_COMMON_H
#define KVSIM_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kvs_status {
	KVS_OK = 0,
	KVS_END,             /* end of a stream (trace reader): not an error */
	KVS_ERR_INVALID,     /* bad argument or bad user input */
	KVS_ERR_PARSE,       /* malformed input file */
	KVS_ERR_IO,          /* file could not be opened, read or written */
	KVS_ERR_NOMEM,       /* host allocation failed */
	KVS_ERR_OVERFLOW,    /* a size does not fit in 64 bits */
	KVS_ERR_NOT_FOUND,   /* unknown preset, sequence, key */
	KVS_ERR_STATE,       /* misuse: double free, unknown sequence, ... */
	KVS_ERR_LIMIT,       /* beyond a configured limit (max_model_len, ...) */
	KVS_ERR_NOSPACE,     /* not enough free KV memory right now */
	KVS_ERR_UNSUPPORTED, /* operation not offered by this policy/build */
	KVS_ERR_CUDA,        /* a CUDA runtime call failed */
	KVS_ERR_NO_DEVICE,   /* no CUDA device present */
	KVS_STATUS_COUNT_
} kvs_status;

/* Short fixed description of a status code ("invalid argument", ...). */
const char *kvs_strerror(kvs_status status);

/* Message recorded by the last failing call on this thread, or "" if none. */
const char *kvs_last_error(void);

/* Record a printf-style message for status and return status, so that
 * failing paths read `return kvs_fail(KVS_ERR_PARSE, "%s:%llu: ...", ...);`
 * The message is formatted aside first, so an argument that points into the
 * thread's message buffer is read before the buffer is overwritten. */
kvs_status kvs_fail(kvs_status status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), cold));

/* Wrap the failure being propagated: record "<fmt...>: <previous message>"
 * and return status.  The one way to add context (file, request, field) to a
 * callee's error while keeping its cause:
 *     if ((st = kvs_parse_bytes(text, &b)) != KVS_OK)
 *         return kvs_fail_wrap(st, "%s: field 'memory'", path);
 * Never pass kvs_last_error() to kvs_fail: use this. */
kvs_status kvs_fail_wrap(kvs_status status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), cold));

/* Record a fixed message (a string literal or other static text) without
 * formatting: O(1), for expected outcomes on hot paths such as
 * KVS_ERR_NOSPACE from a failed grow, where the caller decides what to do
 * and formats context only if it reports the failure. */
kvs_status kvs_fail_static(kvs_status status, const char *msg);

/* Clear the thread's last error message. */
void kvs_clear_error(void);

/* Library version string ("0.1.0"). */
const char *kvs_version(void);

/* v in decimal with thousands separators ("1,234,567") written to buf (cap
 * bytes, 27 are always enough); returns buf.  Truncates, still terminated,
 * when cap is short. */
const char *kvs_fmt_commas(uint64_t v, char *buf, size_t cap);

/* The candidate closest to `word` (case-insensitive edit distance with
 * adjacent swaps, within 1 edit for words under 5 characters, 2 under 9,
 * 3 beyond; else the one candidate `word` is a prefix of), or NULL.  Reads
 * at most `count` entries of `candidates` or up to a NULL entry.  For "did
 * you mean" hints. */
const char *kvs_suggest(const char *word, const char *const *candidates, size_t count);

/* ---- JSON documents -------------------------------------------------------
 * Report builders (kvs_sim_report_json, kvs_sweep_result_json, ...) return
 * an opaque document handle; its representation is the library's own.
 */
typedef struct kvs_json kvs_json;

/* Release a document (NULL is ignored). */
void kvs_json_free(kvs_json *doc);

/* The document as text: sorted keys, 2-space indent, reals with 12
 * significant digits (what kvs_sim_json_write writes, without the final
 * newline).  Release with kvs_free; NULL when out of memory. */
char *kvs_json_text(const kvs_json *doc);

/* ---- checked 64-bit arithmetic (true on overflow) ------------------------ */
static inline bool kvs_mul_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}
static inline bool kvs_add_overflow(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out);
}
static inline uint64_t kvs_div_ceil(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}
/* Division by a divisor d fixed for a run (a block size): a shift and a
 * mask when d is a power of two (*shift its log2, set by kvs_pow2_shift),
 * the division otherwise.  A 64-bit division costs tens of cycles on some
 * cores, and the engine's hot paths take several per step. */
static inline bool kvs_pow2_shift(uint64_t d, unsigned *shift)
{
	*shift = d ? (unsigned)__builtin_ctzll(d) : 0;
	return d && (d & (d - 1)) == 0;
}
static inline uint64_t kvs_div_p2(uint64_t x, uint64_t d, unsigned shift, bool pow2)
{
	return __builtin_expect(pow2, 1) ? x >> shift : x / d;
}
static inline uint64_t kvs_mod_p2(uint64_t x, uint64_t d, bool pow2)
{
	return __builtin_expect(pow2, 1) ? x & (d - 1) : x % d;
}
static inline uint64_t kvs_div_ceil_p2(uint64_t x, uint64_t d, unsigned shift, bool pow2)
{
	return kvs_div_p2(x, d, shift, pow2) + (kvs_mod_p2(x, d, pow2) != 0);
}
/* The accounting identity arrived = completed + rejected + unfinished, in
 * checked arithmetic (a wrapped sum would fake a balance). */
static inline bool kvs_accounting_balances(uint64_t arrived, uint64_t completed,
					   uint64_t rejected, uint64_t unfinished)
{
	uint64_t sum;
	return !kvs_add_overflow(completed, rejected, &sum) &&
	       !kvs_add_overflow(sum, unfinished, &sum) && sum == arrived;
}

/* ---- host memory ----------------------------------------------------------
 * All host memory of the library goes through these, so that jemalloc (the
 * default), libc malloc (sanitizer builds) and test allocators are swapped in
 * one place.  kvs_malloc and friends return NULL on failure like malloc.
 */
void *kvs_malloc(size_t size);
void *kvs_calloc(size_t count, size_t size);
void *kvs_realloc(void *ptr, size_t size);
/* realloc of count * size with overflow check; NULL on overflow or failure */
void *kvs_reallocarray(void *ptr, size_t count, size_t size);
void kvs_free(void *ptr);
char *kvs_strdup(const char *s);

/* Fault injection (tests): make the nth host allocation from now fail
 * (kvs_malloc, kvs_calloc, kvs_realloc, kvs_reallocarray and kvs_strdup
 * return NULL), as SQLite's and knot-resolver's fault tests do.  n = 1 fails
 * the next one; n = 0 turns injection off.  Every later allocation keeps
 * failing when persistent is true (a process out of memory), else only the
 * nth one does.  Process-wide; the counter is atomic. */
void kvs_mem_fail_nth(uint64_t n, bool persistent);
/* Allocations counted since the last kvs_mem_fail_nth call (0 before any),
 * and whether an injected failure has fired since then. */
uint64_t kvs_mem_alloc_count(void);
bool kvs_mem_fail_fired(void);

/* Name of the host allocator in use: "jemalloc" or "libc". */
const char *kvs_mem_allocator(void);

/* Peak resident set size of this process in bytes (0 if unknown). */
uint64_t kvs_mem_peak_rss(void);

/* Host memory a run can still take, in bytes: MemAvailable of
 * /proc/meminfo (free memory plus what the kernel can reclaim), else the
 * machine's physical memory; 0 if unknown. */
uint64_t kvs_host_memory_bytes(void);

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------
 * Fingerprints of traces, plans and point files (docs/SCALE-OUT.md).  The
 * context lives on the caller's stack; update any number of times, then
 * final once.  Cost: linear in the bytes hashed. */
#define KVS_SHA256_BYTES 32
#define KVS_SHA256_HEX 65            /* 64 lowercase hex digits and a NUL */
typedef struct kvs_sha256 {
	uint32_t h[8];
	uint64_t len;                /* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
} kvs_sha256;
void kvs_sha256_init(kvs_sha256 *s);
void kvs_sha256_update(kvs_sha256 *s, const void *data, size_t n);
void kvs_sha256_final(kvs_sha256 *s, uint8_t out[KVS_SHA256_BYTES]);
void kvs_sha256_hex(const uint8_t digest[KVS_SHA256_BYTES], char out[KVS_SHA256_HEX]);
/* Digest of n bytes as lowercase hex. */
void kvs_sha256_text(const void *data, size_t n, char out[KVS_SHA256_HEX]);
/* Digest of a file's bytes as lowercase hex; KVS_ERR_IO naming the file. */
kvs_status kvs_sha256_file(const char *path, char out[KVS_SHA256_HEX]);

/* ---- always-on invariant check --------------------------------------------
 * For conditions that would silently corrupt results.  Never for validating
 * user input: that returns a status.
 */
void kvs_require_fail(const char *expr, const char *file, int line)
	__attribute__((noreturn, cold));
#define kvs_require(expr) \
	((expr) ? (void)0 : kvs_require_fail(#expr, __FILE__, __LINE__))

/* ---- validators ------------------------------------------------------------
 * Each *_is_valid() checks one invariant per KVS_VALID line and, at the
 * first that does not hold, records "file:line: invariant broken: expr" as
 * the thread's error message (kvs_last_error(), KVS_ERR_STATE) and returns
 * false.  Recording formats into the thread's fixed buffer: a validator
 * never allocates, so it can run after every operation, also while host
 * memory is exhausted.
 */
bool kvs_invalid(const char *expr, const char *file, int line)
	__attribute__((cold));
#define KVS_VALID(expr) \
	do { \
		if (KVS_UNLIKELY(!(expr))) \
			return kvs_invalid(#expr, __FILE__, __LINE__); \
	} while (0)

/* ---- output files written whole or not at all (common/outfile.c) --------
 * kvs_outfile_open writes to a temporary file beside path, and
 * kvs_outfile_commit renames it over path once everything is written;
 * kvs_outfile_discard (or a failed commit, or SIGINT/SIGTERM/SIGHUP)
 * removes it, so a failed run never leaves a partial file and never
 * clobbers an existing one.  "-" is standard output (never closed), and an
 * existing non-regular target (/dev/null, a FIFO) is written in place.
 * Opening fails, naming path and the reason, when path cannot be written
 * (a regular file without any write bit is read-only for every user, the
 * superuser too): open every output before long work so that a bad path
 * fails first.
 * Errors name the path; commit and discard free the handle.
 */
typedef struct kvs_outfile kvs_outfile;
kvs_status kvs_outfile_open(const char *path, kvs_outfile **out);
FILE *kvs_outfile_stream(const kvs_outfile *o);
const char *kvs_outfile_path(const kvs_outfile *o);
bool kvs_outfile_is_stdout(const kvs_outfile *o);
kvs_status kvs_outfile_commit(kvs_outfile *o);
void kvs_outfile_discard(kvs_outfile *o);
/* Remove every temporary file still open (async-signal-safe: for a
 * program's own signal handler, before the signal ends the process; the
 * files' own handlers are installed only where the program set none). */
void kvs_outfile_unlink_all(void);
/* open, write len bytes of data, commit */
kvs_status kvs_outfile_write_all(const char *path, const void *data, size_t len);

#define KVS_LIKELY(x) __builtin_expect(!!(x), 1)
#define KVS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define KVS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* The enumerator of a row of an X-macro list whose first column is the
 * enumerator's name: `typedef enum e { E_LIST(KVS_ENUMERATOR) E_COUNT_ } e;` */
#define KVS_ENUMERATOR(id, ...) id,

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_COMMON_H */
