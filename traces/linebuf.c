/*
 * linebuf.c - buffered line reading with a bounded line length.
 *
 * Lines are found with memchr in a buffer refilled by fread, so the cost is
 * one pass over the bytes.  A line longer than KVS_TRACE_MAX_LINE is an
 * error rather than a reason to keep growing: a trace file is text with
 * short records, and a missing newline in a binary file must not take the
 * process's memory with it.
 */
#include "trace_internal.h"

#include <errno.h>
#include <string.h>

#define LB_CHUNK (256u * 1024u)

kvs_status kvs_linebuf_open(kvs_linebuf *lb, const char *path, FILE *stream)
{
	memset(lb, 0, sizeof *lb);
	lb->path = path;
	if (stream) {
		lb->f = stream;
	} else if (strcmp(path, "-") == 0) {
		lb->f = stdin;
	} else {
		lb->f = fopen(path, "rb");
		if (!lb->f)
			return kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path,
					strerror(errno));
		lb->own = true;
	}
	lb->cap = LB_CHUNK;
	lb->buf = kvs_malloc(lb->cap + 1);
	if (!lb->buf) {
		kvs_linebuf_close(lb);
		return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for the line buffer", path);
	}
	return KVS_OK;
}

/* Make room and read more; false at EOF or on error (lb->eof set). */
static kvs_status fill(kvs_linebuf *lb)
{
	if (lb->start > 0) {
		memmove(lb->buf, lb->buf + lb->start, lb->end - lb->start);
		lb->end -= lb->start;
		lb->start = 0;
	}
	if (lb->end == lb->cap) {
		size_t ncap = lb->cap * 2;
		char *nb = kvs_realloc(lb->buf, ncap + 1);
		if (!nb)
			return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for a line", lb->path);
		lb->buf = nb;
		lb->cap = ncap;
	}
	size_t got;
	for (;;) {
		errno = 0;
		got = fread(lb->buf + lb->end, 1, lb->cap - lb->end, lb->f);
		/* a signal the program handles (Ctrl-C stopping a run) cut a
		 * read from a pipe or terminal short: read on */
		if (got == 0 && ferror(lb->f) && errno == EINTR) {
			clearerr(lb->f);
			continue;
		}
		break;
	}
	lb->end += got;
	if (got == 0) {
		if (ferror(lb->f))
			return kvs_fail(KVS_ERR_IO, "%s:%llu: read error: %s", lb->path,
					(unsigned long long)lb->lineno + 1, strerror(errno));
		lb->eof = true;
	}
	return KVS_OK;
}

/* A first line holding a carriage return: the file ends its lines in '\r'
 * alone (classic Mac OS), so its lines would run together. */
static kvs_status cr_only(const kvs_linebuf *lb, const char *s, size_t n)
{
	while (n > 0 && s[n - 1] == '\r')   /* "\r\r\n" ends a line too */
		n--;
	if (lb->lineno != 1 || !memchr(s, '\r', n))
		return KVS_OK;
	return kvs_fail(KVS_ERR_PARSE, "%s:1: a carriage return inside the line: the file "
			"ends its lines in \\r alone (classic Mac OS); convert them to \\n "
			"(tr '\\r' '\\n')", lb->path);
}

kvs_status kvs_linebuf_next(kvs_linebuf *lb, char **line, size_t *len)
{
	size_t scanned = 0; /* bytes of the pending line already searched */
	for (;;) {
		char *s = lb->buf + lb->start;
		size_t avail = lb->end - lb->start;
		char *nl = avail > scanned ? memchr(s + scanned, '\n', avail - scanned) : NULL;
		if (KVS_LIKELY(nl != NULL)) {
			size_t n = (size_t)(nl - s);
			if (KVS_UNLIKELY(n - (n > 0 && s[n - 1] == '\r') > KVS_TRACE_MAX_LINE))
				break;
			lb->start += n + 1;
			lb->bytes += n + 1;
			lb->lineno++;
			if (n > 0 && s[n - 1] == '\r')
				n--;
			if (KVS_UNLIKELY(lb->lineno == 1) && cr_only(lb, s, n) != KVS_OK)
				return KVS_ERR_PARSE;
			s[n] = '\0';
			*line = s;
			*len = n;
			return KVS_OK;
		}
		scanned = avail;
		if (avail > KVS_TRACE_MAX_LINE + 1) /* + 1: a '\r' */
			break;
		if (lb->eof) {
			if (avail == 0)
				return KVS_END;
			/* last line without a newline */
			size_t n = avail;
			lb->start = lb->end;
			lb->bytes += n;
			lb->lineno++;
			if (n > 0 && s[n - 1] == '\r')
				n--;
			if (cr_only(lb, s, n) != KVS_OK)
				return KVS_ERR_PARSE;
			s[n] = '\0'; /* buf has cap + 1 bytes */
			*line = s;
			*len = n;
			return KVS_OK;
		}
		kvs_status st = fill(lb);
		if (st != KVS_OK)
			return st;
	}
	lb->lineno++;
	lb->long_line = true;
	return kvs_fail(KVS_ERR_PARSE,
			"%s:%llu: line: longer than %u bytes (a trace line is a short "
			"record; is this a binary file, or one without newlines?)",
			lb->path, (unsigned long long)lb->lineno, KVS_TRACE_MAX_LINE);
}

kvs_status kvs_linebuf_skip_rest(kvs_linebuf *lb)
{
	lb->long_line = false;
	for (;;) {
		char *s = lb->buf + lb->start;
		size_t avail = lb->end - lb->start;
		char *nl = memchr(s, '\n', avail);
		if (nl) {
			size_t n = (size_t)(nl - s) + 1;
			lb->start += n;
			lb->bytes += n;
			return KVS_OK;
		}
		lb->bytes += avail;
		lb->start = lb->end = 0;
		if (lb->eof)
			return KVS_OK;
		kvs_status st = fill(lb);
		if (st != KVS_OK)
			return st;
	}
}

void kvs_linebuf_close(kvs_linebuf *lb)
{
	if (lb->own && lb->f)
		fclose(lb->f);
	lb->f = NULL;
	kvs_free(lb->buf);
	lb->buf = NULL;
}
