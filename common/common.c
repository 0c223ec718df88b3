/*
 * common.c - status strings, the thread-local error message, the host memory
 * wrapper and the always-on require.
 */
#include "kvs_config.h"
#include "kvsim/common.h"
#include "common/array.h"
#include "common/num.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static _Thread_local char last_error[1024];
/* The current message: last_error, or static text from kvs_fail_static. */
static _Thread_local const char *last_msg = "";

static const char *const status_text[KVS_STATUS_COUNT_] = {
	[KVS_OK] = "ok",
	[KVS_END] = "end of stream",
	[KVS_ERR_INVALID] = "invalid argument",
	[KVS_ERR_PARSE] = "malformed input",
	[KVS_ERR_IO] = "input/output error",
	[KVS_ERR_NOMEM] = "out of host memory",
	[KVS_ERR_OVERFLOW] = "size overflow",
	[KVS_ERR_NOT_FOUND] = "not found",
	[KVS_ERR_STATE] = "invalid state for this operation",
	[KVS_ERR_LIMIT] = "limit exceeded",
	[KVS_ERR_NOSPACE] = "not enough free KV memory",
	[KVS_ERR_UNSUPPORTED] = "not supported",
	[KVS_ERR_CUDA] = "CUDA error",
	[KVS_ERR_NO_DEVICE] = "no CUDA device",
};

const char *kvs_strerror(kvs_status status)
{
	if ((unsigned)status >= KVS_STATUS_COUNT_ || !status_text[status])
		return "unknown status";
	return status_text[status];
}

const char *kvs_last_error(void)
{
	return last_msg;
}

void kvs_clear_error(void)
{
	last_msg = "";
}

/* Format into a scratch buffer, then copy: arguments may point into
 * last_error (the message being wrapped). */
static void set_message(const char *fmt, va_list ap, const char *cause)
{
	char tmp[sizeof last_error];
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	if (cause && n >= 0 && (size_t)n < sizeof tmp)
		snprintf(tmp + n, sizeof tmp - (size_t)n, ": %s", cause);
	memcpy(last_error, tmp, sizeof last_error);
	last_msg = last_error;
}

kvs_status kvs_fail(kvs_status status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_message(fmt, ap, NULL);
	va_end(ap);
	return status;
}

kvs_status kvs_fail_wrap(kvs_status status, const char *fmt, ...)
{
	char cause[sizeof last_error];
	snprintf(cause, sizeof cause, "%s", last_msg[0] ? last_msg : kvs_strerror(status));
	va_list ap;
	va_start(ap, fmt);
	set_message(fmt, ap, cause);
	va_end(ap);
	return status;
}

kvs_status kvs_fail_static(kvs_status status, const char *msg)
{
	last_msg = msg;
	return status;
}

const char *kvs_version(void)
{
	return KVS_VERSION;
}

const char *kvs_fmt_commas(uint64_t v, char *buf, size_t cap)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
	size_t o = 0;
	if (cap == 0)
		return buf;
	for (int i = 0; i < n && o + 2 < cap; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

/* ---- fault injection ----------------------------------------------------------
 * fail_at == 0: off (one relaxed load per allocation).  Otherwise the
 * allocation whose 1-based number since kvs_mem_fail_nth reaches fail_at
 * fails, and so does every later one when fail_sticky. */
static _Atomic uint64_t fail_at, alloc_count;
static _Atomic bool fail_sticky, fail_fired;

void kvs_mem_fail_nth(uint64_t n, bool persistent)
{
	atomic_store(&alloc_count, 0);
	atomic_store(&fail_fired, false);
	atomic_store(&fail_sticky, persistent);
	atomic_store(&fail_at, n);
}

uint64_t kvs_mem_alloc_count(void)
{
	return atomic_load(&alloc_count);
}

bool kvs_mem_fail_fired(void)
{
	return atomic_load(&fail_fired);
}

__attribute__((noinline, cold)) static bool inject_slow(uint64_t at)
{
	uint64_t k = atomic_fetch_add(&alloc_count, 1) + 1;
	if (k == at || (k > at && atomic_load(&fail_sticky))) {
		atomic_store(&fail_fired, true);
		return true;
	}
	return false;
}

static inline bool inject_failure(void)
{
	uint64_t at = atomic_load_explicit(&fail_at, memory_order_relaxed);
	return KVS_UNLIKELY(at != 0) && inject_slow(at);
}

void *kvs_malloc(size_t size)
{
	if (inject_failure())
		return NULL;
	return malloc(size ? size : 1);
}

void *kvs_calloc(size_t count, size_t size)
{
	if (inject_failure())
		return NULL;
	return calloc(count ? count : 1, size ? size : 1);
}

void *kvs_realloc(void *ptr, size_t size)
{
	if (inject_failure())
		return NULL;
	return realloc(ptr, size ? size : 1);
}

void *kvs_reallocarray(void *ptr, size_t count, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(count, size, &bytes))
		return NULL;
	return kvs_realloc(ptr, bytes);
}

void kvs_free(void *ptr)
{
	if (ptr)   /* jemalloc's free reaches its test for NULL some 40 instructions in */
		free(ptr);
}

char *kvs_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = kvs_malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

const char *kvs_mem_allocator(void)
{
	return KVS_HAVE_JEMALLOC ? "jemalloc" : "libc";
}

uint64_t kvs_mem_peak_rss(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}

uint64_t kvs_host_memory_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (f) {
		char line[256];
		unsigned long long kb = 0;
		bool found = false;
		while (!found && fgets(line, sizeof line, f))
			found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
		fclose(f);
		if (found && kb > 0)
			return (uint64_t)kb * 1024u;
	}
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

bool kvs_invalid(const char *expr, const char *file, int line)
{
	kvs_fail(KVS_ERR_STATE, "%s:%d: invariant broken: %s", file, line, expr);
	return false;
}

void kvs_require_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "kvsim: internal invariant failed: %s (%s:%d)\n",
		expr, file, line);
	if (strstr(last_msg, "invariant broken"))
		fprintf(stderr, "kvsim: %s\n", last_msg);
	abort();
}

/* ---- array growth (common/array.h) ------------------------------------------ */

bool kvs_array_grow(void **p, size_t *cap, size_t need, size_t elem,
		    size_t min_cap, size_t limit)
{
	size_t c = *cap ? *cap : (min_cap ? min_cap : 1);
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return false;
		c *= 2;
	}
	if (c > limit)
		c = need <= limit ? limit : 0;
	if (c == 0)
		return false;
	void *q = kvs_reallocarray(*p, c, elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

bool kvs_strtod_decimal(const char *s, double *out, const char **end)
{
	/* strtod may read no further than the decimal characters do: a hex
	 * float, "inf", "nan" or a leading blank is refused, not read */
	size_t span = s ? strspn(s, "0123456789+-.eE") : 0;
	if (span == 0)
		return false;
	errno = 0;
	char *e;
	double v = strtod(s, &e);
	if (e == s || (size_t)(e - s) > span || errno == ERANGE || !isfinite(v))
		return false;
	*out = v;
	*end = e;
	return true;
}

bool kvs_parse_decimal(const char *s, double *out)
{
	const char *end;
	double v;
	if (!kvs_strtod_decimal(s, &v, &end) || *end != '\0')
		return false;
	*out = v;
	return true;
}
