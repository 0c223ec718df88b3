/*
 * source.c - where a replay's requests come from: a streaming trace reader,
 * or a trace held in memory (kvs_request_set) read through cursors, so that
 * compare, sweep and capacity search parse a trace once and replay it many
 * times, from several threads at once.
 *
 * A set stores the requests in one array and all their hash ids in another
 * (each request points at its slice by offset): about 80 bytes per request
 * plus 8 bytes per hash id.
 */
#include "sim_internal.h"
#include "common/array.h"

#include <string.h>

/* ---- a trace reader as a source ---------------------------------------- */

static kvs_status trace_next(void *ctx, kvs_request *req)
{
	return kvs_trace_next((kvs_trace *)ctx, req);
}

kvs_request_source kvs_request_source_trace(kvs_trace *t)
{
	kvs_request_source s = { trace_next, t, NULL };
	return s;
}

/* ---- request sets ------------------------------------------------------- */

struct kvs_request_set {
	kvs_request *reqs;       /* hash_ids hold offsets into hashes until read */
	uint64_t n, cap;
	uint64_t *hashes;
	uint64_t nh, caph;
	kvs_trace_stats tstats;
	kvs_trace_format format;
	char *path;
};

kvs_status kvs_request_set_create(kvs_request_set **out)
{
	kvs_request_set *s = kvs_calloc(1, sizeof *s);
	if (!s)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (request set)");
	*out = s;
	return KVS_OK;
}

void kvs_request_set_destroy(kvs_request_set *s)
{
	if (!s)
		return;
	kvs_free(s->reqs);
	kvs_free(s->hashes);
	kvs_free(s->path);
	kvs_free(s);
}

kvs_status kvs_request_set_append(kvs_request_set *s, const kvs_request *req)
{
	if (s->n && req->arrival_s < s->reqs[s->n - 1].arrival_s)
		return kvs_fail(KVS_ERR_INVALID,
				"request %llu (line %llu): arrival %.9g s before the previous "
				"one: requests must come in arrival order",
				(unsigned long long)req->index, (unsigned long long)req->line,
				req->arrival_s);
	uint32_t nh = req->hash_ids ? req->num_hash_ids : 0;
	if (!KVS_ARRAY_RESERVE(s->reqs, s->cap, s->n + 1, 1024) ||
	    !KVS_ARRAY_RESERVE(s->hashes, s->caph, s->nh + nh, 1024))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (request set)");
	kvs_request *r = &s->reqs[s->n++];
	*r = *req;
	if (nh)
		memcpy(s->hashes + s->nh, req->hash_ids, nh * sizeof *s->hashes);
	/* the offset of the slice, turned back into a pointer on reading */
	r->hash_ids = (const uint64_t *)(uintptr_t)s->nh;
	r->num_hash_ids = nh;
	s->nh += nh;
	return KVS_OK;
}

kvs_status kvs_request_set_from_source(const kvs_request_source *src,
				       kvs_request_set **out)
{
	kvs_request_set *s = NULL;
	kvs_status st = kvs_request_set_create(&s);
	if (st != KVS_OK)
		return st;
	kvs_request q;
	while ((st = src->next(src->ctx, &q)) == KVS_OK)
		if ((st = kvs_request_set_append(s, &q)) != KVS_OK)
			break;
	if (st != KVS_END) {
		kvs_request_set_destroy(s);
		return st;
	}
	*out = s;
	return KVS_OK;
}

kvs_status kvs_request_set_load(const char *path, const kvs_trace_opts *opts,
				kvs_request_set **out)
{
	kvs_trace *t;
	kvs_status st = kvs_trace_open(path, opts, &t);
	if (st != KVS_OK)
		return st;
	kvs_request_source src = kvs_request_source_trace(t);
	kvs_request_set *s = NULL;
	st = kvs_request_set_from_source(&src, &s);
	if (st == KVS_OK) {
		s->tstats = *kvs_trace_get_stats(t);
		s->format = kvs_trace_get_format(t);
		s->path = kvs_strdup(kvs_trace_path(t) ? kvs_trace_path(t) : path);
		if (!s->path) {
			kvs_request_set_destroy(s);
			s = NULL;
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory");
		}
	}
	kvs_trace_close(t);
	if (st == KVS_OK)
		*out = s;
	return st;
}

uint64_t kvs_request_set_count(const kvs_request_set *s)
{
	return s->n;
}

double kvs_request_set_mean_rate(const kvs_request_set *s)
{
	uint64_t n = s->n;
	double first = n ? kvs_request_set_get(s, 0)->arrival_s : 0;
	double last = n ? kvs_request_set_get(s, n - 1)->arrival_s : 0;
	return n > 1 && last > first ? (double)(n - 1) / (last - first) : 0;
}

static void resolve_req(const kvs_request_set *s, uint64_t i, kvs_request *out)
{
	*out = s->reqs[i];
	out->hash_ids = out->num_hash_ids
			? s->hashes + (uintptr_t)s->reqs[i].hash_ids : NULL;
}

const kvs_request *kvs_request_set_get(const kvs_request_set *s, uint64_t i)
{
	/* hash_ids of the returned copy are resolved on a thread-local copy */
	static _Thread_local kvs_request tmp;
	if (i >= s->n)
		return NULL;
	resolve_req(s, i, &tmp);
	return &tmp;
}

const kvs_trace_stats *kvs_request_set_trace_stats(const kvs_request_set *s)
{
	return &s->tstats;
}

kvs_trace_format kvs_request_set_format(const kvs_request_set *s)
{
	return s->format;
}

const char *kvs_request_set_path(const kvs_request_set *s)
{
	return s->path;
}

/* ---- cursors --------------------------------------------------------------- */

void kvs_request_cursor_init(kvs_request_cursor *c, const kvs_request_set *s,
			     double time_scale)
{
	memset(c, 0, sizeof *c);
	c->set = s;
	c->time_scale = time_scale > 0 ? time_scale : 1.0;
}

static kvs_status cursor_next(void *ctx, kvs_request *req)
{
	kvs_request_cursor *c = ctx;
	if (c->next >= c->set->n)
		return KVS_END;
	resolve_req(c->set, c->next++, req);
	req->arrival_s *= c->time_scale;
	return KVS_OK;
}

static double cursor_progress(void *ctx)
{
	kvs_request_cursor *c = ctx;
	return c->set->n ? (double)c->next / (double)c->set->n : 1.0;
}

kvs_request_source kvs_request_cursor_source(kvs_request_cursor *c)
{
	kvs_request_source s = { cursor_next, c, cursor_progress };
	return s;
}
