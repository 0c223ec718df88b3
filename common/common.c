/*
 * common.c - status strings, the thread-local error message, the host memory
 * wrapper and the always-on require.
 */
#include "kvs_config.h"
#include "kvsim/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static _Thread_local char last_error[1024];

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
	return last_error;
}

void kvs_clear_error(void)
{
	last_error[0] = '\0';
}

kvs_status kvs_fail(kvs_status status, const char *fmt, ...)
{
	/* formatted aside first: callers may wrap kvs_last_error() itself */
	char msg[sizeof last_error];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	memcpy(last_error, msg, sizeof msg);
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

void *kvs_malloc(size_t size)
{
	return malloc(size ? size : 1);
}

void *kvs_calloc(size_t count, size_t size)
{
	return calloc(count ? count : 1, size ? size : 1);
}

void *kvs_realloc(void *ptr, size_t size)
{
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

void kvs_require_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "kvsim: internal invariant failed: %s (%s:%d)\n",
		expr, file, line);
	abort();
}
