/*
 * writer.c - writes requests as a native trace (docs/TRACE-FORMAT.md), CSV
 * or JSONL.  The CSV is written directly (every field is a number or a
 * space-separated list of numbers, so nothing needs quoting); JSONL lines
 * go through jansson.  A line the reader would refuse (over
 * KVS_TRACE_MAX_LINE) is refused here too, so whatever is written reads
 * back.  The file is written under a temporary name and renamed by a
 * successful close (kvs_outfile), so a failed run leaves nothing behind.
 */
#include "trace_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

struct kvs_trace_writer {
	FILE *f;
	kvs_outfile *out;       /* the file under its temporary name until close */
	kvs_trace_format format;
	bool with_hashes;
	bool header_done;
	bool io_error;
	int io_errno;          /* errno when the error was seen (0: unknown) */
	uint64_t written;
	char *path;
};

kvs_status kvs_trace_writer_open(const char *path, kvs_trace_format format,
				 bool with_hashes, kvs_trace_writer **out)
{
	if (format != KVS_TRACE_NATIVE_CSV && format != KVS_TRACE_NATIVE_JSONL)
		return kvs_fail(KVS_ERR_INVALID, "traces are written as native-csv or "
				"native-jsonl, not %s", kvs_trace_format_name(format));
	kvs_trace_writer *w = kvs_calloc(1, sizeof *w);
	if (!w)
		return kvs_fail(KVS_ERR_NOMEM, "no memory for a trace writer");
	w->path = kvs_strdup(path);
	if (!w->path) {
		kvs_free(w);
		return kvs_fail(KVS_ERR_NOMEM, "no memory for a trace writer");
	}
	kvs_status st = kvs_outfile_open(path, &w->out);
	if (st != KVS_OK) {
		kvs_free(w->path);
		kvs_free(w);
		return st;
	}
	w->f = kvs_outfile_stream(w->out);
	w->format = format;
	w->with_hashes = with_hashes;
	*out = w;
	return KVS_OK;
}

kvs_status kvs_trace_writer_comment(kvs_trace_writer *w, const char *text)
{
	if (w->written > 0)
		return kvs_fail(KVS_ERR_STATE, "%s: comments go before the first request", w->path);
	fputs("# ", w->f);
	for (const char *p = text; *p; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, w->f);
	fputc('\n', w->f);
	return KVS_OK;
}

static kvs_status check_line_size(kvs_trace_writer *w, const kvs_request *r)
{
	/* a hash id is at most 20 digits and a separator */
	uint64_t est = 256 + (uint64_t)r->num_hash_ids * 21;
	if (est > KVS_TRACE_MAX_LINE)
		return kvs_fail(KVS_ERR_LIMIT,
				"%s: request %llu: %u hash ids would make a line over %u bytes; "
				"use a larger hash block size", w->path,
				(unsigned long long)r->index, r->num_hash_ids, KVS_TRACE_MAX_LINE);
	return KVS_OK;
}

static kvs_status put_csv(kvs_trace_writer *w, const kvs_request *r)
{
	if (!w->header_done) {
		fputs("arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority",
		      w->f);
		if (w->with_hashes)
			fputs(",hash_block_tokens,hash_ids", w->f);
		fputc('\n', w->f);
		w->header_done = true;
	}
	fprintf(w->f, "%.6f,%u,%u,%llu,%u,%u,%d", r->arrival_s, r->prompt_tokens,
		r->output_tokens, (unsigned long long)r->session_id, r->turn,
		r->num_samples ? r->num_samples : 1, r->priority);
	if (w->with_hashes) {
		if (r->num_hash_ids > 0)
			fprintf(w->f, ",%u,", r->hash_block_tokens);
		else
			fputs(",,", w->f);
		for (uint32_t i = 0; i < r->num_hash_ids; i++)
			fprintf(w->f, i ? " %llu" : "%llu", (unsigned long long)r->hash_ids[i]);
	}
	fputc('\n', w->f);
	return KVS_OK;
}

static kvs_status put_jsonl(kvs_trace_writer *w, const kvs_request *r)
{
	json_t *o = json_object();
	if (!o)
		return kvs_fail(KVS_ERR_NOMEM, "no memory for a JSON record");
	double t = round(r->arrival_s * 1e6) / 1e6;
	int bad = 0;
	bad |= json_object_set_new(o, "arrival_s", json_real(t));
	bad |= json_object_set_new(o, "prompt_tokens", json_integer(r->prompt_tokens));
	bad |= json_object_set_new(o, "output_tokens", json_integer(r->output_tokens));
	if (r->session_id) {
		if (r->session_id > (uint64_t)INT64_MAX) {
			json_decref(o);
			return kvs_fail(KVS_ERR_OVERFLOW, "%s: session id %llu does not fit a "
					"JSON integer", w->path, (unsigned long long)r->session_id);
		}
		bad |= json_object_set_new(o, "session_id", json_integer((json_int_t)r->session_id));
		bad |= json_object_set_new(o, "turn", json_integer(r->turn));
	}
	if (r->num_samples > 1)
		bad |= json_object_set_new(o, "num_samples", json_integer(r->num_samples));
	if (r->priority)
		bad |= json_object_set_new(o, "priority", json_integer(r->priority));
	if (w->with_hashes && r->num_hash_ids > 0) {
		json_t *a = json_array();
		bad |= !a;
		for (uint32_t i = 0; a && i < r->num_hash_ids; i++) {
			if (r->hash_ids[i] > (uint64_t)INT64_MAX) {
				json_decref(a);
				json_decref(o);
				return kvs_fail(KVS_ERR_OVERFLOW, "%s: hash id %llu does not fit "
						"a JSON integer", w->path,
						(unsigned long long)r->hash_ids[i]);
			}
			bad |= json_array_append_new(a, json_integer((json_int_t)r->hash_ids[i]));
		}
		bad |= json_object_set_new(o, "hash_block_tokens", json_integer(r->hash_block_tokens));
		bad |= json_object_set_new(o, "hash_ids", a);
	}
	if (!bad)
		bad |= json_dumpf(o, w->f, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
	json_decref(o);
	if (bad)
		return kvs_fail(KVS_ERR_NOMEM, "%s: could not build a JSON record", w->path);
	fputc('\n', w->f);
	return KVS_OK;
}

kvs_status kvs_trace_writer_put(kvs_trace_writer *w, const kvs_request *r)
{
	kvs_status st = check_line_size(w, r);
	if (st != KVS_OK)
		return st;
	if (!(r->arrival_s >= 0) || !isfinite(r->arrival_s))
		return kvs_fail(KVS_ERR_INVALID, "%s: request %llu: arrival %g s is not a "
				"non-negative number", w->path, (unsigned long long)r->index,
				r->arrival_s);
	/* the reader keeps times as int64 nanoseconds: refuse what it would */
	if (r->arrival_s >= KVS_TRACE_MAX_ARRIVAL_S)
		return kvs_fail(KVS_ERR_LIMIT, "%s: request %llu: arrival %g s is past the "
				"latest a trace can hold (%g s, 2^63 ns)", w->path,
				(unsigned long long)r->index, r->arrival_s,
				KVS_TRACE_MAX_ARRIVAL_S);
	st = w->format == KVS_TRACE_NATIVE_CSV ? put_csv(w, r) : put_jsonl(w, r);
	if (st == KVS_OK)
		w->written++;
	if (ferror(w->f) && !w->io_error) {
		w->io_error = true;
		w->io_errno = errno;
	}
	return st;
}

kvs_status kvs_trace_writer_close(kvs_trace_writer *w)
{
	if (!w)
		return KVS_OK;
	kvs_status st = KVS_OK;
	if (w->format == KVS_TRACE_NATIVE_CSV && !w->header_done) {
		/* an empty trace still names its columns */
		fputs("arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority",
		      w->f);
		if (w->with_hashes)
			fputs(",hash_block_tokens,hash_ids", w->f);
		fputc('\n', w->f);
	}
	if (!w->io_error && (fflush(w->f) != 0 || ferror(w->f))) {
		w->io_error = true;
		w->io_errno = errno;
	}
	if (w->io_error) {
		st = kvs_fail(KVS_ERR_IO, "%s: write failed: %s", w->path,
			      strerror(w->io_errno ? w->io_errno : EIO));
		kvs_outfile_discard(w->out);
	} else {
		st = kvs_outfile_commit(w->out);
	}
	kvs_free(w->path);
	kvs_free(w);
	return st;
}

void kvs_trace_writer_discard(kvs_trace_writer *w)
{
	if (!w)
		return;
	kvs_outfile_discard(w->out);
	kvs_free(w->path);
	kvs_free(w);
}
