/*
 * plan.c - a sweep split into points that other processes run: the plan
 * file, one result file per point, and the merge (docs/SCALE-OUT.md).
 *
 *   plan     kvs_sweep_plan_create + _write: the configuration flags as
 *            given (a worker rebuilds the configuration from them), the
 *            resolved configuration as JSON (to check that rebuild), the
 *            trace's path and SHA-256, kvsim's version, and the points
 *            (index, row, policy, block size).  Its id is the SHA-256 of
 *            that document with compact sorted keys, minus the id itself.
 *   points   kvs_sweep_plan_run_points: points [first, last] through
 *            kvs_sweep_point_run (the threaded sweep's code path), each
 *            written to DIR/point-NNNNNN.json under a temporary name and
 *            renamed, so a killed worker leaves no half file; a point whose
 *            file exists (and belongs to this plan) is skipped.
 *   merge    kvs_sweep_plan_merge: every point file, in index order,
 *            checked against the plan, stored into the rows, then the
 *            threaded sweep's finish (repeated rows, SLO verdicts,
 *            recommendations): the same result, so the same bytes.
 *
 * Exactness.  A point file holds every field of kvs_sim_stats and
 * kvs_sweep_capacity through one field table each; doubles are written
 * with 17 significant digits (jansson's default), which strtod reads back
 * bit for bit, and non-finite ones as "nan", "inf", "-inf".  The tables
 * are checked against the structs' layouts (kvs_sweep_point_fields_check,
 * run by the unit test), so a field added to the struct and not to the
 * table fails a test instead of vanishing from merged results.
 */
#include "kvs_config.h"
#include "sweep_internal.h"
#include "common/json.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLAN_FORMAT "kvsim-sweep-plan"
#define POINT_FORMAT "kvsim-sweep-point"
#define FORMAT_VERSION 1

/* ---- field tables ------------------------------------------------------------ */

typedef enum ftype { F_U64, F_F64, F_I32, F_U32, F_BOOL } ftype;

typedef struct field {
	const char *name;
	size_t off;
	ftype type;
} field;

static size_t ftype_size(ftype t)
{
	switch (t) {
	case F_U64: case F_F64: return 8;
	case F_I32: case F_U32: return 4;
	case F_BOOL: return sizeof(bool);
	}
	return 0;
}

#define S(t, f) { #f, offsetof(kvs_sim_stats, f), t }
#define PCT(m) S(F_F64, m.token_states), S(F_F64, m.reservation), \
	S(F_F64, m.internal_frag), S(F_F64, m.external_frag), \
	S(F_F64, m.cached_idle), S(F_F64, m.free)
#define DIST(m) S(F_U64, m.count), S(F_F64, m.mean), S(F_F64, m.p50), \
	S(F_F64, m.p90), S(F_F64, m.p99), S(F_F64, m.max)
/* kvs_sim_stats in declaration order; rejected_by is written as an array */
static const field stats_fields[] = {
	S(F_I32, policy),
	S(F_U64, arrived), S(F_U64, completed), S(F_U64, rejected), S(F_U64, unfinished),
	S(F_U64, multi_sample_requests),
	PCT(memory_pct), PCT(memory_peak_pct),
	S(F_F64, peak_time_s),
	S(F_U64, kv_budget_bytes), S(F_U64, kv_bytes_per_token), S(F_U64, num_blocks),
	S(F_U64, max_model_len), S(F_U64, metadata_bytes_max),
	S(F_F64, concurrency_mean), S(F_F64, concurrency_p50), S(F_F64, concurrency_p99),
	S(F_U64, concurrency_max),
	S(F_F64, tokens_per_step_mean), S(F_U64, tokens_per_step_max),
	S(F_F64, waiting_mean), S(F_U64, waiting_max),
	DIST(queue_delay_s), DIST(ttft_s), DIST(tpot_s), DIST(e2e_s),
	S(F_F64, requests_per_s), S(F_F64, output_tokens_per_s),
	S(F_U64, prompt_tokens), S(F_U64, output_tokens),
	S(F_F64, goodput_requests_per_s), S(F_F64, goodput_fraction),
	S(F_U64, preemptions), S(F_U64, recomputed_tokens),
	S(F_U64, swap_out_bytes), S(F_U64, swap_in_bytes), S(F_U64, swapped_bytes),
	S(F_U64, forked_sequences), S(F_U64, cow_copies), S(F_U64, copy_bytes),
	S(F_U64, prefix_hit_tokens), S(F_U64, prefix_hit_blocks),
	S(F_U64, prefix_miss_tokens), S(F_U64, prefix_miss_blocks),
	S(F_F64, prefix_hit_rate_tokens), S(F_F64, prefix_hit_rate_blocks),
	S(F_F64, first_arrival_s), S(F_F64, last_arrival_s), S(F_F64, sim_time_s),
	S(F_U64, steps), S(F_U64, events), S(F_U64, spans),
	S(F_F64, wall_s),
	S(F_BOOL, interrupted),
	S(F_U32, window_tokens), S(F_U32, window_groups), S(F_U32, full_groups),
	S(F_U32, group_layers),
};
#undef S
#undef PCT
#undef DIST

#define C(t, f) { #f, offsetof(kvs_sweep_capacity, f), t }
static const field cap_fields[] = {
	C(F_I32, policy), C(F_U32, block_size), C(F_I32, outcome),
	C(F_F64, max_rate), C(F_F64, fail_rate), C(F_F64, time_scale), C(F_F64, tolerance),
	C(F_F64, ttft_p99_s), C(F_F64, tpot_p99_s), C(F_F64, concurrency_mean),
	C(F_F64, conversations_per_gpu), C(F_F64, requests_per_s_per_gpu),
	C(F_F64, output_tokens_per_s), C(F_U32, simulations), C(F_BOOL, repeated),
};
#undef C

/* The struct's bytes are the table's fields, in order, with only the
 * padding alignment needs between them (and the array `array_at`, n
 * elements of 8 bytes, where given). */
static bool fields_tile(const char *what, const field *t, size_t n, size_t size,
		       size_t array_at, size_t array_n, char *err, size_t errn)
{
	size_t end = 0;
	for (size_t i = 0; i < n; i++) {
		size_t sz = ftype_size(t[i].type);
		if (array_at && end == array_at) {
			end += 8 * array_n;
		}
		size_t want = (end + sz - 1) / sz * sz;
		if (t[i].off != want) {
			snprintf(err, errn, "%s: bytes %zu..%zu before field '%s' are not in "
				 "sweep/plan.c's field table (add the new field there)",
				 what, end, t[i].off, t[i].name);
			return false;
		}
		end = t[i].off + sz;
	}
	if ((end + 7) / 8 * 8 != size) {
		snprintf(err, errn, "%s: bytes %zu..%zu after field '%s' are not in "
			 "sweep/plan.c's field table (add the new field there)", what, end,
			 size, t[n - 1].name);
		return false;
	}
	return true;
}

bool kvs_sweep_point_fields_check(char *err, size_t errn)
{
	return fields_tile("kvs_sim_stats", stats_fields, KVS_ARRAY_LEN(stats_fields),
			   sizeof(kvs_sim_stats), offsetof(kvs_sim_stats, rejected_by),
			   KVS_SIM_REJECT_COUNT_, err, errn) &&
	       fields_tile("kvs_sweep_capacity", cap_fields, KVS_ARRAY_LEN(cap_fields),
			   sizeof(kvs_sweep_capacity), 0, 0, err, errn);
}

static json_t *real_json(double v)
{
	if (isnan(v))
		return json_string("nan");
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	return json_real(v);
}

static bool real_from(const json_t *j, double *out)
{
	if (json_is_number(j)) {
		*out = json_number_value(j);
		return true;
	}
	const char *s = json_string_value(j);
	if (!s)
		return false;
	if (strcmp(s, "nan") == 0)
		*out = NAN;
	else if (strcmp(s, "inf") == 0)
		*out = INFINITY;
	else if (strcmp(s, "-inf") == 0)
		*out = -INFINITY;
	else
		return false;
	return true;
}

static json_t *fields_json(const void *base, const field *t, size_t n)
{
	json_t *o = json_object();
	const char *b = base;
	for (size_t i = 0; o && i < n; i++) {
		const char *p = b + t[i].off;
		json_t *v = NULL;
		switch (t[i].type) {
		case F_U64: { uint64_t x; memcpy(&x, p, 8); v = json_integer((json_int_t)x); break; }
		case F_F64: { double x; memcpy(&x, p, 8); v = real_json(x); break; }
		case F_I32: { int32_t x; memcpy(&x, p, 4); v = json_integer(x); break; }
		case F_U32: { uint32_t x; memcpy(&x, p, 4); v = json_integer(x); break; }
		case F_BOOL: { bool x; memcpy(&x, p, sizeof x); v = json_boolean(x); break; }
		}
		if (!v || json_object_set_new(o, t[i].name, v) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* Every field present and of its type; the error names the key. */
static kvs_status fields_from(const json_t *o, void *base, const field *t, size_t n,
			      const char *file, const char *what)
{
	char *b = base;
	if (!json_is_object(o))
		return kvs_fail(KVS_ERR_PARSE, "%s: %s: expected an object", file, what);
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_object_get(o, t[i].name);
		char *p = b + t[i].off;
		bool ok = v != NULL;
		switch (t[i].type) {
		case F_U64:
			if ((ok = ok && json_is_integer(v) && json_integer_value(v) >= 0)) {
				uint64_t x = (uint64_t)json_integer_value(v);
				memcpy(p, &x, 8);
			}
			break;
		case F_F64: {
			double x;
			if ((ok = ok && real_from(v, &x)))
				memcpy(p, &x, 8);
			break;
		}
		case F_I32:
		case F_U32:
			if ((ok = ok && json_is_integer(v) &&
				  (t[i].type == F_I32 ? json_integer_value(v) >= INT32_MIN &&
							json_integer_value(v) <= INT32_MAX
						      : json_integer_value(v) >= 0 &&
							json_integer_value(v) <= UINT32_MAX))) {
				uint32_t x = (uint32_t)json_integer_value(v);
				memcpy(p, &x, 4);
			}
			break;
		case F_BOOL:
			if ((ok = ok && json_is_boolean(v))) {
				bool x = json_is_true(v);
				memcpy(p, &x, sizeof x);
			}
			break;
		}
		if (!ok)
			return kvs_fail(KVS_ERR_PARSE, "%s: %s.%s: %s", file, what, t[i].name,
					!v ? "missing" : t[i].type == F_U64 || t[i].type == F_U32
					? "expected a non-negative integer in range"
					: "wrong type");
	}
	return KVS_OK;
}

static json_t *stats_json(const kvs_sim_stats *st)
{
	json_t *o = fields_json(st, stats_fields, KVS_ARRAY_LEN(stats_fields));
	json_t *a = json_array();
	for (int i = 0; a && i < KVS_SIM_REJECT_COUNT_; i++)
		json_array_append_new(a, json_integer((json_int_t)st->rejected_by[i]));
	if (!o || !a || json_object_set_new(o, "rejected_by", a) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static kvs_status stats_from(const json_t *o, kvs_sim_stats *st, const char *file)
{
	kvs_status s = fields_from(o, st, stats_fields, KVS_ARRAY_LEN(stats_fields), file,
				   "stats");
	if (s != KVS_OK)
		return s;
	const json_t *a = json_object_get(o, "rejected_by");
	if (!json_is_array(a) || json_array_size(a) != KVS_SIM_REJECT_COUNT_)
		return kvs_fail(KVS_ERR_PARSE, "%s: stats.rejected_by: expected an array of "
				"%d integers", file, KVS_SIM_REJECT_COUNT_);
	for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++) {
		const json_t *v = json_array_get(a, (size_t)i);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return kvs_fail(KVS_ERR_PARSE, "%s: stats.rejected_by[%d]: expected a "
					"non-negative integer", file, i);
		st->rejected_by[i] = (uint64_t)json_integer_value(v);
	}
	/* a point's figures are a run's: none negative (NaN stands for a
	 * figure with no data) ... */
	for (size_t i = 0; i < KVS_ARRAY_LEN(stats_fields); i++) {
		double x;
		if (stats_fields[i].type != F_F64 ||
		    strcmp(stats_fields[i].name, "wall_s") == 0)   /* -1: not timed */
			continue;
		memcpy(&x, (const char *)st + stats_fields[i].off, 8);
		if (x < 0)
			return kvs_fail(KVS_ERR_PARSE, "%s: stats.%s: %g is negative (not a "
					"run's figure)", file, stats_fields[i].name, x);
	}
	/* ... and its accounting balances, as the run that wrote it checked (a
	 * file edited or damaged since does not) */
	uint64_t by = 0;
	bool wrap = false;
	for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++) {
		wrap |= st->rejected_by[i] > UINT64_MAX - by;
		by += st->rejected_by[i];
	}
	if (!kvs_accounting_balances(st->arrived, st->completed, st->rejected, st->unfinished))
		return kvs_fail(KVS_ERR_PARSE, "%s: stats: arrived %llu is not completed %llu + "
				"rejected %llu + unfinished %llu (not a run's figures)", file,
				(unsigned long long)st->arrived, (unsigned long long)st->completed,
				(unsigned long long)st->rejected, (unsigned long long)st->unfinished);
	if (wrap || by != st->rejected)
		return kvs_fail(KVS_ERR_PARSE, "%s: stats.rejected_by: the reasons sum to %llu, "
				"rejected is %llu", file, (unsigned long long)by,
				(unsigned long long)st->rejected);
	return KVS_OK;
}

/* ---- the plan ------------------------------------------------------------------ */

struct kvs_sweep_plan {
	json_t *doc;                 /* the plan document, id included */
	char id[KVS_SHA256_HEX];
	char trace_sha[KVS_SHA256_HEX];
	char *path;                  /* plan file, for messages ("" when built) */
	const char **args;           /* into doc */
	size_t nargs;
	size_t npoints;
	kvs_sweep_work work;         /* bound: rebuilt configuration and trace */
	bool bound;
};

static void jset(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v ? v : json_null());
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* The resolved configuration, as the sweep document describes it, plus
 * what the sweep document leaves implicit.  A worker rebuilds it from the
 * plan's flags and compares: a model, profile or other file named by a
 * flag that differs on the worker's host shows here. */
static json_t *config_json(const kvs_sweep_work *w)
{
	const kvs_sweep_config *c = &w->res->cfg;
	json_t *o = json_object();
	jset(o, "model", kvs_json_jt(kvs_sim_model_json(&c->base.deploy.model)));
	jset(o, "gpu", kvs_json_jt(kvs_sim_gpu_json(&c->base.deploy.gpu)));
	kvs_sim_config ec = c->base;
	ec.slo_ttft_s = c->slo_ttft_s;
	ec.slo_tpot_s = c->slo_tpot_s;
	jset(o, "engine", kvs_json_jt(kvs_sim_engine_json(&ec, NULL)));
	json_t *s = json_object();
	json_t *bs = json_array(), *ps = json_array();
	for (size_t i = 0; i < c->nblock_sizes; i++)
		json_array_append_new(bs, jint(c->block_sizes[i]));
	for (size_t i = 0; i < c->npolicies; i++)
		json_array_append_new(ps, json_string(kvs_policy_name(c->policies[i])));
	jset(s, "block_sizes", bs);
	jset(s, "policies", ps);
	jset(s, "time_scale", real_json(c->time_scale));
	jset(s, "dedupe_contiguous", json_boolean(c->dedupe_contiguous));
	jset(s, "kernel_block_overhead", real_json(c->kernel_block_overhead));
	jset(s, "kernel_profile", c->kernel_profile
	     ? json_string(kvs_kernel_profile_path(c->kernel_profile)) : json_null());
	jset(s, "kernel_feeds_step_time", json_boolean(c->kernel_feeds_step_time));
	jset(s, "kernel_cost_margin", real_json(c->kernel_cost_margin));
	jset(s, "slo_ttft_s", real_json(c->slo_ttft_s));
	jset(s, "slo_tpot_s", real_json(c->slo_tpot_s));
	jset(s, "find_max_rate", json_boolean(c->find_max_rate));
	jset(s, "rate_tolerance", real_json(c->rate_tolerance));
	jset(s, "rate_max_factor", real_json(c->rate_max_factor));
	jset(s, "base_rate", real_json(w->res->base_rate));
	jset(s, "mean_decode_context", real_json(w->res->mean_context));
	jset(o, "sweep", s);
	return o;
}

static json_t *points_json(const kvs_sweep_work *w)
{
	json_t *a = json_array();
	for (size_t p = 0; a && p < w->npoints; p++) {
		const kvs_sweep_point *pt = &w->points[p];
		const kvs_sweep_row *row = &w->res->rows[pt->row];
		json_t *o = json_object();
		jset(o, "index", jint(p));
		jset(o, "row", jint(pt->row));
		jset(o, "policy", json_string(kvs_policy_name(pt->policy)));
		jset(o, "block_size", jint(pt->block_size));
		jset(o, "kernel_relative_cost", real_json(row->kernel.rel));
		json_array_append_new(a, o);
	}
	return a;
}

/* SHA-256 of the document's compact, key-sorted text without "plan_id". */
static kvs_status doc_id(const json_t *doc, char id[KVS_SHA256_HEX])
{
	json_t *copy = json_copy((json_t *)doc);
	if (!copy)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	json_object_del(copy, "plan_id");
	char *text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(copy);
	if (!text)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	kvs_sha256_text(text, strlen(text), id);
	free(text);
	return KVS_OK;
}

void kvs_sweep_plan_destroy(kvs_sweep_plan *p)
{
	if (!p)
		return;
	kvs_sweep_work_free(&p->work);
	json_decref(p->doc);
	kvs_free(p->args);
	kvs_free(p->path);
	kvs_free(p);
}

static kvs_status read_args(kvs_sweep_plan *p)
{
	const json_t *a = json_object_get(p->doc, "args");
	if (!json_is_array(a))
		return kvs_fail(KVS_ERR_PARSE, "%s: args: expected an array of strings", p->path);
	p->nargs = json_array_size(a);
	p->args = kvs_calloc(p->nargs + 1, sizeof *p->args);
	if (!p->args)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < p->nargs; i++) {
		p->args[i] = json_string_value(json_array_get(a, i));
		if (!p->args[i])
			return kvs_fail(KVS_ERR_PARSE, "%s: args[%zu]: expected a string",
					p->path, i);
	}
	return KVS_OK;
}

kvs_status kvs_sweep_plan_create(const kvs_sweep_config *cfg, const kvs_request_set *set,
				 const char *trace_file, const char *const *args,
				 size_t nargs, kvs_sweep_plan **out)
{
	kvs_sweep_plan *p = kvs_calloc(1, sizeof *p);
	if (!p)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	p->path = kvs_strdup("");
	kvs_status st = kvs_sha256_file(trace_file, p->trace_sha);
	if (st == KVS_OK)
		st = kvs_sweep_work_init(cfg, set, &p->work);
	if (st != KVS_OK) {
		kvs_sweep_plan_destroy(p);
		return st;
	}
	p->bound = true;
	p->npoints = p->work.npoints;
	json_t *doc = p->doc = json_object();
	jset(doc, "format", json_string(PLAN_FORMAT));
	jset(doc, "format_version", jint(FORMAT_VERSION));
	jset(doc, "kvsim_version", json_string(kvs_version()));
	jset(doc, "command", json_string("sweep"));
	json_t *a = json_array();
	for (size_t i = 0; i < nargs; i++)
		json_array_append_new(a, json_string(args[i]));
	jset(doc, "args", a);
	json_t *t = json_object();
	const char *tp = kvs_request_set_path(set);
	jset(t, "path", json_string(tp ? tp : trace_file));
	jset(t, "sha256", json_string(p->trace_sha));
	jset(t, "requests", jint(kvs_request_set_count(set)));
	jset(doc, "trace", t);
	jset(doc, "config", config_json(&p->work));
	jset(doc, "points", points_json(&p->work));
	if ((st = doc_id(doc, p->id)) == KVS_OK)
		jset(doc, "plan_id", json_string(p->id));
	if (st == KVS_OK)
		st = read_args(p);
	if (st != KVS_OK) {
		kvs_sweep_plan_destroy(p);
		return st;
	}
	*out = p;
	return KVS_OK;
}

/* Write text to path through a temporary name in the same directory and a
 * rename: a reader sees the whole file or none. */
static kvs_status write_atomic(const char *path, const char *text)
{
	size_t n = strlen(path) + 64;
	char *tmp = kvs_malloc(n);
	if (!tmp)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	static atomic_uint seq;
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path + 1) : 0;
	snprintf(tmp, n, "%.*s.tmp.%ld.%u.%s", dl, path, (long)getpid(),
		 atomic_fetch_add(&seq, 1), slash ? slash + 1 : path);
	kvs_status st = KVS_OK;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		st = kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
		goto done;
	}
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t k = write(fd, text + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	bool ok = off == len && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		st = kvs_fail(KVS_ERR_IO, "%s: write failed: %s", path, strerror(errno));
		unlink(tmp);
	}
done:
	kvs_free(tmp);
	return st;
}

static kvs_status dump_atomic(const json_t *doc, const char *path, size_t flags)
{
	char *text = json_dumps(doc, flags | JSON_SORT_KEYS);
	if (!text)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	size_t n = strlen(text);
	char *t2 = realloc(text, n + 2);
	if (!t2) {
		free(text);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	t2[n] = '\n';
	t2[n + 1] = '\0';
	kvs_status st = write_atomic(path, t2);
	free(t2);
	return st;
}

kvs_status kvs_sweep_plan_write(const kvs_sweep_plan *p, const char *path)
{
	return dump_atomic(p->doc, path, JSON_INDENT(1));
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

kvs_status kvs_sweep_plan_load(const char *path, kvs_sweep_plan **out)
{
	kvs_status lst;
	json_t *doc = kvs_json_load_file(path, 0, "sweep plan", &lst);
	if (!doc)
		return lst;
	kvs_sweep_plan *p = kvs_calloc(1, sizeof *p);
	if (!p) {
		json_decref(doc);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	p->doc = doc;
	p->path = kvs_strdup(path);
	kvs_status st = KVS_OK;
	const char *fmt = jstr(doc, "format"), *ver = jstr(doc, "kvsim_version");
	const char *id = jstr(doc, "plan_id");
	const json_t *t = json_object_get(doc, "trace");
	const char *sha = jstr(t, "sha256");
	const json_t *pts = json_object_get(doc, "points");
	if (!fmt || strcmp(fmt, PLAN_FORMAT) != 0)
		st = kvs_fail(KVS_ERR_PARSE, "%s: format: not a kvsim sweep plan (expected "
			      "\"%s\")", path, PLAN_FORMAT);
	else if (json_integer_value(json_object_get(doc, "format_version")) != FORMAT_VERSION)
		st = kvs_fail(KVS_ERR_PARSE, "%s: format_version: expected %d", path,
			      FORMAT_VERSION);
	else if (!ver || strcmp(ver, kvs_version()) != 0)
		st = kvs_fail(KVS_ERR_INVALID, "%s: written by kvsim %s, this is kvsim %s: "
			      "write the plan again with this version", path,
			      ver ? ver : "(unknown)", kvs_version());
	else if (!sha || strlen(sha) != KVS_SHA256_HEX - 1 || !jstr(t, "path"))
		st = kvs_fail(KVS_ERR_PARSE, "%s: trace: expected path and sha256", path);
	else if (!json_is_array(pts))
		st = kvs_fail(KVS_ERR_PARSE, "%s: points: expected an array", path);
	else if (!id || (st = doc_id(doc, p->id)) != KVS_OK || strcmp(id, p->id) != 0)
		st = st != KVS_OK ? st : kvs_fail(KVS_ERR_INVALID, "%s: plan_id does not match "
						  "the plan's contents (edited?): write the "
						  "plan again", path);
	if (st == KVS_OK) {
		memcpy(p->trace_sha, sha, KVS_SHA256_HEX);
		p->npoints = json_array_size(pts);
		st = read_args(p);
	}
	if (st != KVS_OK) {
		kvs_sweep_plan_destroy(p);
		return st;
	}
	*out = p;
	return KVS_OK;
}

size_t kvs_sweep_plan_args(const kvs_sweep_plan *p, const char *const **args)
{
	*args = p->args;
	return p->nargs;
}

const char *kvs_sweep_plan_trace_path(const kvs_sweep_plan *p)
{
	return jstr(json_object_get(p->doc, "trace"), "path");
}

const char *kvs_sweep_plan_id(const kvs_sweep_plan *p)
{
	return p->id;
}

size_t kvs_sweep_plan_points(const kvs_sweep_plan *p)
{
	return p->npoints;
}

/* First key path where a and b differ ("config.model.num_layers"). */
static bool json_diff(const json_t *a, const json_t *b, char *at, size_t n)
{
	if (json_equal((json_t *)a, (json_t *)b))
		return false;
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		size_t len = strlen(at);
		json_object_foreach((json_t *)a, k, v) {
			snprintf(at + len, n - len, ".%s", k);
			if (json_diff(v, json_object_get(b, k), at, n))
				return true;
		}
		json_object_foreach((json_t *)b, k, v) {
			snprintf(at + len, n - len, ".%s", k);
			if (!json_object_get(a, k))
				return true;
		}
		at[len] = '\0';
	}
	if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
		size_t len = strlen(at);
		for (size_t i = 0; i < json_array_size(a); i++) {
			snprintf(at + len, n - len, "[%zu]", i);
			if (json_diff(json_array_get(a, i), json_array_get(b, i), at, n))
				return true;
		}
		at[len] = '\0';
	}
	return true;
}

kvs_status kvs_sweep_plan_check_trace(const kvs_sweep_plan *p, const char *trace_file)
{
	char sha[KVS_SHA256_HEX];
	kvs_status st = kvs_sha256_file(trace_file, sha);
	if (st != KVS_OK)
		return st;
	if (strcmp(sha, p->trace_sha) != 0)
		return kvs_fail(KVS_ERR_INVALID, "%s: SHA-256 %s, but plan %s was written for "
				"a trace with SHA-256 %s: not the plan's trace", trace_file, sha,
				p->path, p->trace_sha);
	return KVS_OK;
}

kvs_status kvs_sweep_plan_bind(kvs_sweep_plan *p, const kvs_sweep_config *cfg,
			       const kvs_request_set *set, const char *trace_file)
{
	kvs_status st = kvs_sweep_plan_check_trace(p, trace_file);
	if (st != KVS_OK)
		return st;
	kvs_sweep_work_free(&p->work);
	p->bound = false;
	if ((st = kvs_sweep_work_init(cfg, set, &p->work)) != KVS_OK)
		return st;
	json_t *c = config_json(&p->work), *pts = points_json(&p->work);
	char at[256] = "config";
	bool differs = json_diff(json_object_get(p->doc, "config"), c, at, sizeof at);
	if (!differs) {
		snprintf(at, sizeof at, "points");
		differs = json_diff(json_object_get(p->doc, "points"), pts, at, sizeof at);
	}
	json_decref(c);
	json_decref(pts);
	if (differs) {
		kvs_sweep_work_free(&p->work);
		return kvs_fail(KVS_ERR_INVALID, "%s: the configuration rebuilt here from the "
				"plan's flags differs from the plan's at %s (a file a flag names, "
				"such as a model config or kernel profile, differs on this host?)",
				p->path, at);
	}
	p->bound = true;
	return KVS_OK;
}

/* ---- point files ---------------------------------------------------------------- */

static char *point_path(const char *dir, size_t i)
{
	size_t n = strlen(dir) + 32;
	char *s = kvs_malloc(n);
	if (s)
		snprintf(s, n, "%s/point-%06zu.json", dir, i);
	return s;
}

/* A point file's header against the plan; the message names the file. */
static kvs_status point_check(const kvs_sweep_plan *p, const json_t *doc, size_t i,
			      const char *file)
{
	const char *fmt = jstr(doc, "format"), *plan = jstr(doc, "plan_id");
	const char *sha = jstr(doc, "trace_sha256"), *ver = jstr(doc, "kvsim_version");
	const json_t *ix = json_object_get(doc, "index");
	if (!fmt || strcmp(fmt, POINT_FORMAT) != 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: not a kvsim sweep point file", file);
	if (!ver || strcmp(ver, kvs_version()) != 0)
		return kvs_fail(KVS_ERR_INVALID, "%s: written by kvsim %s, not %s (this "
				"kvsim): delete it and run the point again", file,
				ver ? ver : "(unknown)", kvs_version());
	if (!sha || strcmp(sha, p->trace_sha) != 0)
		return kvs_fail(KVS_ERR_INVALID, "%s: from another trace (SHA-256 %s, the "
				"plan's is %s)", file, sha ? sha : "(none)", p->trace_sha);
	if (!plan || strcmp(plan, p->id) != 0)
		return kvs_fail(KVS_ERR_INVALID, "%s: from another plan (%s, not %s)", file,
				plan ? plan : "(none)", p->id);
	if (!json_is_integer(ix) || (size_t)json_integer_value(ix) != i)
		return kvs_fail(KVS_ERR_INVALID, "%s: holds point %lld, not %zu", file,
				(long long)json_integer_value(ix), i);
	/* the point's row, policy and block size, as the plan has them */
	const kvs_sweep_point *pt = &p->work.points[i];
	const json_t *row = json_object_get(doc, "row"), *bs = json_object_get(doc, "block_size");
	const char *pol = jstr(doc, "policy");
	if (!json_is_integer(row) || json_integer_value(row) != (json_int_t)pt->row ||
	    !pol || strcmp(pol, kvs_policy_name(pt->policy)) != 0 ||
	    !json_is_integer(bs) || json_integer_value(bs) != (json_int_t)pt->block_size)
		return kvs_fail(KVS_ERR_INVALID, "%s: row, policy or block_size is not the "
				"plan's point %zu (row %zu, %s, block size %u)", file, i,
				(size_t)pt->row, kvs_policy_name(pt->policy), pt->block_size);
	return KVS_OK;
}

static kvs_status point_read(const kvs_sweep_plan *p, const char *file, size_t i,
			     kvs_sweep_point_result *r)
{
	kvs_status lst;
	json_t *doc = kvs_json_load_file(file, 0, "sweep point", &lst);
	if (!doc)
		return kvs_fail(lst, "%s (delete it to run the point again)", kvs_last_error());
	kvs_status st = point_check(p, doc, i, file);
	if (st == KVS_OK && r) {
		memset(r, 0, sizeof *r);
		const json_t *sims = json_object_get(doc, "simulations");
		st = stats_from(json_object_get(doc, "stats"), &r->st, file);
		if (st == KVS_OK && p->work.res->caps)
			st = fields_from(json_object_get(doc, "capacity"), &r->cap, cap_fields,
					 KVS_ARRAY_LEN(cap_fields), file, "capacity");
		if (st == KVS_OK && !json_is_integer(sims))
			st = kvs_fail(KVS_ERR_PARSE, "%s: simulations: expected an integer", file);
		if (st == KVS_OK)
			r->simulations = (uint64_t)json_integer_value(sims);
		const kvs_sweep_point *pt = &p->work.points[i];
		if (st == KVS_OK && (r->st.policy != pt->policy ||
				     (uint32_t)json_integer_value(json_object_get(doc, "block_size"))
				     != pt->block_size))
			st = kvs_fail(KVS_ERR_INVALID, "%s: not point %zu of the plan (%s, block "
				      "size %u)", file, i, kvs_policy_name(pt->policy),
				      pt->block_size);
	}
	json_decref(doc);
	return st;
}

static kvs_status point_write(const kvs_sweep_plan *p, const char *file, size_t i,
			      const kvs_sweep_point_result *r)
{
	const kvs_sweep_point *pt = &p->work.points[i];
	json_t *doc = json_object();
	jset(doc, "format", json_string(POINT_FORMAT));
	jset(doc, "kvsim_version", json_string(kvs_version()));
	jset(doc, "plan_id", json_string(p->id));
	jset(doc, "trace_sha256", json_string(p->trace_sha));
	jset(doc, "index", jint(i));
	jset(doc, "row", jint(pt->row));
	jset(doc, "policy", json_string(kvs_policy_name(pt->policy)));
	jset(doc, "block_size", jint(pt->block_size));
	jset(doc, "simulations", jint(r->simulations));
	jset(doc, "stats", stats_json(&r->st));
	if (p->work.res->caps)
		jset(doc, "capacity", fields_json(&r->cap, cap_fields, KVS_ARRAY_LEN(cap_fields)));
	kvs_status st = dump_atomic(doc, file, JSON_INDENT(1));
	json_decref(doc);
	return st;
}

/* ---- running points ---------------------------------------------------------------- */

typedef struct prun {
	const kvs_sweep_plan *p;
	const char *dir;
	size_t first, last;
	atomic_size_t next, ran, skipped;
	atomic_bool failed;
	kvs_status *st;              /* per point of [first, last] */
	char (*err)[512];
} prun;

static kvs_status run_one(prun *R, size_t i)
{
	char *file = point_path(R->dir, i);
	if (!file)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	kvs_status st;
	if (access(file, F_OK) == 0) {
		/* a rerun resumes: a finished point is kept, if it is this plan's */
		if ((st = point_read(R->p, file, i, NULL)) == KVS_OK)
			atomic_fetch_add(&R->skipped, 1);
	} else {
		kvs_sweep_point_result r;
		st = kvs_sweep_point_run(&R->p->work, i, NULL, NULL, &r);
		if (st == KVS_OK)
			st = point_write(R->p, file, i, &r);
		if (st == KVS_OK)
			atomic_fetch_add(&R->ran, 1);
	}
	kvs_free(file);
	return st;
}

static void *prun_worker(void *arg)
{
	prun *R = arg;
	for (;;) {
		size_t i = atomic_fetch_add(&R->next, 1);
		if (i > R->last || atomic_load(&R->failed))
			break;
		kvs_clear_error();
		kvs_status st = run_one(R, i);
		if (st != KVS_OK) {
			R->st[i - R->first] = st;
			snprintf(R->err[i - R->first], sizeof R->err[0], "%s", kvs_last_error());
			atomic_store(&R->failed, true);
		}
	}
	return NULL;
}

kvs_status kvs_sweep_plan_run_points(const kvs_sweep_plan *p, size_t first, size_t last,
				     const char *dir, unsigned jobs, size_t *ran,
				     size_t *skipped)
{
	if (!p->bound)
		return kvs_fail(KVS_ERR_STATE, "%s: plan not bound to a trace", p->path);
	if (first > last || last >= p->npoints)
		return kvs_fail(KVS_ERR_INVALID, "points %zu-%zu: the plan has points 0-%zu",
				first, last, p->npoints ? p->npoints - 1 : 0);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return kvs_fail(KVS_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
	size_t n = last - first + 1;
	prun R;
	memset(&R, 0, sizeof R);
	R.p = p;
	R.dir = dir;
	R.first = first;
	R.last = last;
	atomic_store(&R.next, first);
	R.st = kvs_calloc(n, sizeof *R.st);
	R.err = kvs_calloc(n, sizeof *R.err);
	pthread_t *th = kvs_calloc(jobs ? jobs : 1, sizeof *th);
	if (!R.st || !R.err || !th) {
		kvs_free(R.st);
		kvs_free(R.err);
		kvs_free(th);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	if (jobs > n)
		jobs = (unsigned)n;
	unsigned started = 0;
	for (unsigned t = 1; t < jobs; t++) {
		if (pthread_create(&th[t], NULL, prun_worker, &R) != 0)
			break;
		started++;
	}
	prun_worker(&R);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	kvs_status st = KVS_OK;
	for (size_t k = 0; k < n; k++) {
		if (R.st[k] != KVS_OK) {
			const kvs_sweep_point *pt = &p->work.points[first + k];
			st = kvs_fail(R.st[k], "point %zu (%s, block size %u): %s", first + k,
				      kvs_policy_name(pt->policy), pt->block_size, R.err[k]);
			break;
		}
	}
	if (ran)
		*ran = atomic_load(&R.ran);
	if (skipped)
		*skipped = atomic_load(&R.skipped);
	kvs_free(R.st);
	kvs_free(R.err);
	kvs_free(th);
	return st;
}

/* "3, 17-19, 40" of the indexes i where miss[i]; at most ~40 ranges. */
static void ranges_text(const bool *miss, size_t n, char *out, size_t cap)
{
	size_t len = 0, shown = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && len < cap; i++) {
		if (!miss[i])
			continue;
		size_t j = i;
		while (j + 1 < n && miss[j + 1])
			j++;
		if (shown == 40) {
			snprintf(out + len, cap - len, ", ...");
			return;
		}
		len += (size_t)snprintf(out + len, cap - len, j > i ? "%s%zu-%zu" : "%s%zu",
					shown ? ", " : "", i, j);
		shown++;
		i = j;
	}
}

kvs_status kvs_sweep_plan_merge(kvs_sweep_plan *p, const char *dir, kvs_sweep_result **out)
{
	if (!p->bound)
		return kvs_fail(KVS_ERR_STATE, "%s: plan not bound to a trace", p->path);
	struct stat sb;
	if (stat(dir, &sb) != 0)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open the points' directory: %s", dir,
				strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return kvs_fail(KVS_ERR_IO, "%s: not a directory (the points' directory "
				"that --out wrote)", dir);
	bool *miss = kvs_calloc(p->npoints ? p->npoints : 1, sizeof *miss);
	if (!miss)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	size_t nmiss = 0;
	kvs_status st = KVS_OK;
	for (size_t i = 0; st == KVS_OK && i < p->npoints; i++) {
		char *file = point_path(dir, i);
		if (!file) {
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory");
			break;
		}
		kvs_sweep_point_result r;
		if (access(file, F_OK) != 0) {
			miss[i] = true;
			nmiss++;
		} else if ((st = point_read(p, file, i, &r)) == KVS_OK) {
			kvs_sweep_point_store(&p->work, i, &r);
		}
		kvs_free(file);
	}
	if (st == KVS_OK && nmiss) {
		char list[1024];
		ranges_text(miss, p->npoints, list, sizeof list);
		st = kvs_fail(KVS_ERR_IO, "%s: %zu of %zu points missing: %s (run them with "
			      "--from-plan %s --points I --out %s)", dir, nmiss, p->npoints,
			      list, p->path, dir);
	}
	kvs_free(miss);
	if (st != KVS_OK) {
		kvs_sweep_work_free(&p->work);
		p->bound = false;
		return st;
	}
	st = kvs_sweep_work_finish(&p->work, out);
	p->bound = false;
	return st;
}
