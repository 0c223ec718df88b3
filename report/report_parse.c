/*
 * report_parse.c - read one run report (docs/REPORT-JSON.md) into rp_run.
 *
 * Required: for replay/compare, "policies" with at least one policy, each
 * with "accounting" {arrived, completed, rejected, unfinished} and
 * "memory_pct" (the six parts); for a sweep, "rows" with at least one row,
 * each with "policy" and "block_size".  Everything else is optional and
 * becomes NAN / an empty array, so a replay with one policy, a compare
 * without timeseries or a sweep without capacity all render.  A key that is
 * present with the wrong type, arrays of unequal length, or a time axis that
 * goes backwards are errors: drawing them would mislead.
 *
 * Errors read "LABEL: policies.paged.accounting.arrived: missing required
 * key" or "LABEL: line 12, column 5: ..." (jansson's message).
 */
#include "kvs_config.h"
#include "report_internal.h"
#include "kvsim/sim.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const rp_part_key[RP_NPARTS] = {
	"token_states", "reservation", "internal_fragmentation",
	"external_fragmentation", "cached_idle", "free",
};
const char *const rp_part_label[RP_NPARTS] = {
	"token states", "reservation", "internal fragmentation",
	"external fragmentation", "cached-idle", "free",
};
const char *const rp_cdf_key[RP_NCDF] = { "queue_delay_s", "ttft_s", "tpot_s" };
const char *const rp_cdf_title[RP_NCDF] = {
	"Queueing delay (arrival to first scheduled)",
	"Time to first token (TTFT)",
	"Time per output token (TPOT)",
};
/* the sweep-row fields the report draws: metric-table figures, and the
 * row's own kernel-cost keys (-1: not a metric) */
static const int rp_row_metric[RP_NROWF] = {
	KVS_M_INTERNAL_FRAG_PCT, KVS_M_METADATA_BYTES_MAX, KVS_M_PREFIX_HIT_RATE_TOKENS,
	KVS_M_CONC_MEAN, KVS_M_CONC_P99, KVS_M_QUEUE_P99,
	KVS_M_TTFT_P50, KVS_M_TTFT_P99, KVS_M_TPOT_P50, KVS_M_TPOT_P99,
	KVS_M_REQUESTS_PER_S, KVS_M_OUTPUT_TOKENS_PER_S, KVS_M_PREEMPTIONS, -1, -1,
	KVS_M_WASTE_PCT,
};
static const char *const rp_row_own_key[RP_NROWF] = {
	[RP_ROW_KERNEL_US] = "kernel_cost_us",
	[RP_ROW_KERNEL_REL] = "kernel_relative_cost",
};
const char *const rp_meta_key[RP_NMETA] = { "model", "gpu", "engine", "trace" };
const char *const rp_cost_key[RP_NCOST] = {
	"dollars_per_million_output_tokens", "dollars_per_conversation_hour",
	"dollars_per_request", "dollars",
};
const char *const rp_cost_label[RP_NCOST] = {
	"$ per million output tokens", "$ per conversation-hour", "$ per completed request",
	"$ for the run",
};

typedef struct pctx {
	const char *label;
} pctx;

enum { PATH_MAX_ = 256 };

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static void join(char *out, const char *path, const char *key)
{
	int n = path && *path ? snprintf(out, PATH_MAX_, "%s.%s", path, key)
			      : snprintf(out, PATH_MAX_, "%s", key);
	if (n >= PATH_MAX_)  /* absurdly deep or long keys: mark the cut */
		memcpy(out + PATH_MAX_ - 4, "...", 4);
}

static kvs_status missing(const pctx *c, const char *path, const char *key)
{
	char p[PATH_MAX_];
	join(p, path, key);
	return kvs_fail(KVS_ERR_PARSE, "%s: %s: missing required key", c->label, p);
}

static kvs_status bad(const pctx *c, const char *path, const char *key,
		      const char *expected, const json_t *v)
{
	char p[PATH_MAX_];
	join(p, path, key);
	return kvs_fail(KVS_ERR_PARSE, "%s: %s: expected %s, got %s", c->label,
			p, expected, type_name(v));
}

/* Optional/required member of type object; *out NULL when absent (or null). */
static kvs_status get_obj(const pctx *c, const json_t *parent, const char *path,
			  const char *key, bool required, json_t **out)
{
	json_t *v = json_object_get(parent, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return required ? missing(c, path, key) : KVS_OK;
	if (!json_is_object(v))
		return bad(c, path, key, "an object", v);
	*out = v;
	return KVS_OK;
}

static kvs_status get_arr(const pctx *c, const json_t *parent, const char *path,
			  const char *key, bool required, json_t **out)
{
	json_t *v = json_object_get(parent, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return required ? missing(c, path, key) : KVS_OK;
	if (!json_is_array(v))
		return bad(c, path, key, "an array", v);
	*out = v;
	return KVS_OK;
}

/* A number; NAN when absent or null. */
static kvs_status get_num(const pctx *c, const json_t *parent, const char *path,
			  const char *key, bool required, double *out)
{
	json_t *v = json_object_get(parent, key);
	if (!v || json_is_null(v)) {
		if (required)
			return missing(c, path, key);
		*out = NAN;
		return KVS_OK;
	}
	if (!json_is_number(v))
		return bad(c, path, key, "a number", v);
	*out = json_number_value(v);
	return KVS_OK;
}

/* A figure kvsim writes (a share, a time, a rate, a size, a cost, a
 * ratio): a number in [0, max] when present, NAN when absent or null.  A
 * negative one, or a percentage or share past the whole, is no run's, and
 * is refused rather than drawn. */
static kvs_status get_fig_max(const pctx *c, const json_t *parent, const char *path,
			      const char *key, bool required, double max, double *out)
{
	kvs_status st = get_num(c, parent, path, key, required, out);
	if (st != KVS_OK || isnan(*out) || (*out >= 0 && *out <= max))
		return st;
	char p[PATH_MAX_];
	join(p, path, key);
	if (*out < 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: %s: %g is negative (every figure of a "
				"run is >= 0)", c->label, p, *out);
	/* the bounds are 100 (a percentage) and 1 (a share), each with room
	 * for rounding: named by the whole */
	bool pct = max > 2;
	return kvs_fail(KVS_ERR_PARSE, "%s: %s: %.10g is above %d (a %s of the whole)",
			c->label, p, *out, pct ? 100 : 1, pct ? "percentage" : "share");
}

static kvs_status get_fig(const pctx *c, const json_t *parent, const char *path,
			  const char *key, bool required, double *out)
{
	return get_fig_max(c, parent, path, key, required, INFINITY, out);
}

/* The largest value a metric of the table can take: 100 for a percentage,
 * 1 for a share (each with room for the last digit of a rounded sum). */
static double metric_max(const kvs_metric_info *mi)
{
	if (mi && strcmp(mi->unit, "%") == 0)
		return 100.0 + 1e-6;
	if (mi && strcmp(mi->unit, "share") == 0)
		return 1.0 + 1e-9;
	return INFINITY;
}

/* A required non-negative integer count (an integral real is accepted). */
static kvs_status get_count(const pctx *c, const json_t *parent, const char *path,
			    const char *key, uint64_t *out)
{
	json_t *v = json_object_get(parent, key);
	if (!v || json_is_null(v))
		return missing(c, path, key);
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (x < 0)
			goto negative;
		*out = (uint64_t)x;
		return KVS_OK;
	}
	if (json_is_real(v)) {
		double x = json_real_value(v);
		if (x < 0)
			goto negative;
		if (x != floor(x) || x > 9.0e18)
			return bad(c, path, key, "an integer count", v);
		*out = (uint64_t)x;
		return KVS_OK;
	}
	return bad(c, path, key, "an integer count", v);
negative:;
	char p[PATH_MAX_];
	join(p, path, key);
	return kvs_fail(KVS_ERR_PARSE, "%s: %s: negative count", c->label, p);
}

static kvs_status get_str(const pctx *c, const json_t *parent, const char *path,
			  const char *key, bool required, char **out)
{
	json_t *v = json_object_get(parent, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return required ? missing(c, path, key) : KVS_OK;
	if (!json_is_string(v))
		return bad(c, path, key, "a string", v);
	*out = kvs_strdup(json_string_value(v));
	return *out ? KVS_OK : kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
}

/* An array of numbers.  expect_n != 0 requires that length. */
static kvs_status get_nums(const pctx *c, const json_t *parent, const char *path,
			   const char *key, bool required, size_t expect_n,
			   double **out, size_t *n)
{
	json_t *a;
	kvs_status st = get_arr(c, parent, path, key, required, &a);
	*out = NULL;
	if (st != KVS_OK || !a)
		return st;
	char p[PATH_MAX_];
	join(p, path, key);
	size_t len = json_array_size(a);
	if (expect_n && len != expect_n)
		return kvs_fail(KVS_ERR_PARSE,
				"%s: %s: has %zu values, expected %zu (the length of t_s / q)",
				c->label, p, len, expect_n);
	double *x = kvs_reallocarray(NULL, len ? len : 1, sizeof *x);
	if (!x)
		return kvs_fail(KVS_ERR_NOMEM, "%s: %s: out of memory", c->label, p);
	for (size_t i = 0; i < len; i++) {
		json_t *e = json_array_get(a, i);
		if (!json_is_number(e)) {
			kvs_free(x);
			return kvs_fail(KVS_ERR_PARSE, "%s: %s[%zu]: expected a number, got %s",
					c->label, p, i, type_name(e));
		}
		x[i] = json_number_value(e);
	}
	*out = x;
	if (n)
		*n = len;
	return KVS_OK;
}

/* ---- settings tables ------------------------------------------------------ */

static char *scalar_text(const json_t *v)
{
	char buf[64];
	switch (json_typeof(v)) {
	case JSON_STRING:
		return kvs_strdup(json_string_value(v));
	case JSON_INTEGER:
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
		return kvs_strdup(buf);
	case JSON_REAL:
		snprintf(buf, sizeof buf, "%.6g", json_real_value(v));
		return kvs_strdup(buf);
	case JSON_TRUE:
		return kvs_strdup("true");
	case JSON_FALSE:
		return kvs_strdup("false");
	case JSON_NULL:
		return kvs_strdup("-");
	default: {
		/* nested values: compact JSON, cut to a table cell's width */
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		if (!s)
			return NULL;
		size_t n = strlen(s);
		char *r = kvs_malloc(n + 4);
		if (r) {
			if (n > 160) {
				memcpy(r, s, 157);
				strcpy(r + 157, "...");
			} else {
				memcpy(r, s, n + 1);
			}
		}
		free(s); /* allocated by jansson with libc free */
		return r;
	}
	}
}

static kvs_status parse_meta(const pctx *c, const json_t *root, rp_run *run)
{
	for (int m = 0; m < RP_NMETA; m++) {
		json_t *o = json_object_get(root, rp_meta_key[m]);
		if (!o || json_is_null(o))
			continue;
		if (!json_is_object(o))
			return bad(c, "", rp_meta_key[m], "an object", o);
		size_t n = json_object_size(o), i = 0;
		rp_kv *kv = kvs_calloc(n ? n : 1, sizeof *kv);
		if (!kv)
			return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
		run->meta[m] = kv;
		const char *k;
		json_t *v;
		json_object_foreach(o, k, v) {
			kv[i].key = kvs_strdup(k);
			kv[i].value = scalar_text(v);
			run->nmeta[m] = ++i;
			if (!kv[i - 1].key || !kv[i - 1].value)
				return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
		}
	}
	json_t *o;
	kvs_status st;
	if ((st = get_obj(c, root, "", "model", false, &o)) != KVS_OK)
		return st;
	if (o && (st = get_str(c, o, "model", "name", false, &run->model_name)) != KVS_OK)
		return st;
	if ((st = get_obj(c, root, "", "gpu", false, &o)) != KVS_OK)
		return st;
	if (o && (st = get_str(c, o, "gpu", "name", false, &run->gpu_name)) != KVS_OK)
		return st;
	return KVS_OK;
}

/* ---- policies ------------------------------------------------------------- */

static const char *part_key_pct(int p)
{
	static _Thread_local char key[64];
	snprintf(key, sizeof key, "%s_pct", rp_part_key[p]);
	return key;
}

static kvs_status parse_series(const pctx *c, const json_t *o, const char *path,
			       rp_series *ts)
{
	kvs_status st;
	size_t n = 0;
	if ((st = get_nums(c, o, path, "t_s", true, 0, &ts->t_s, &n)) != KVS_OK)
		return st;
	/* n == 0 is a run with no samples (a trace without requests): the
	 * figures say so; every other series must then be empty too */
	for (size_t i = 1; i < n; i++)
		if (ts->t_s[i] < ts->t_s[i - 1])
			return kvs_fail(KVS_ERR_PARSE,
					"%s: %s.t_s[%zu]: time goes backwards (%g after %g)",
					c->label, path, i, ts->t_s[i], ts->t_s[i - 1]);
	for (int p = 0; p < RP_NPARTS; p++) {
		char key[64];
		snprintf(key, sizeof key, "%s_pct", rp_part_key[p]);
		if ((st = get_nums(c, o, path, key, true, n, &ts->part[p], NULL)) != KVS_OK)
			return st;
		/* each sample's share of the pool, bounded as the part's
		 * figure is */
		double max = metric_max(kvs_metric_get((kvs_metric_id)(KVS_M_TOKEN_STATES_PCT + p)));
		for (size_t i = 0; i < n; i++)
			if (!(ts->part[p][i] >= 0 && ts->part[p][i] <= max))
				return kvs_fail(KVS_ERR_PARSE, "%s: %s.%s[%zu]: %.10g is not a "
						"percentage of the pool (0 to 100)", c->label,
						path, key, i, ts->part[p][i]);
	}
	size_t nr = 0, nw = 0;
	if ((st = get_nums(c, o, path, "running", false, n, &ts->running, &nr)) ||
	    (st = get_nums(c, o, path, "waiting", false, n, &ts->waiting, &nw)))
		return st;
	const struct { const double *v; size_t n; const char *key; } counts[] = {
		{ ts->running, nr, "running" }, { ts->waiting, nw, "waiting" },
	};
	for (size_t k = 0; k < KVS_ARRAY_LEN(counts); k++)
		for (size_t i = 0; i < counts[k].n; i++)
			if (!(counts[k].v[i] >= 0))
				return kvs_fail(KVS_ERR_PARSE, "%s: %s.%s[%zu]: %.10g is negative "
						"(a count of requests)", c->label, path,
						counts[k].key, i, counts[k].v[i]);
	if (n == 0) {
		const char *bad = nr ? "running" : nw ? "waiting" : NULL;
		for (int p = 0; p < RP_NPARTS && !bad; p++)
			if (json_array_size(json_object_get(o, "t_s")) == 0 &&
			    json_array_size(json_object_get(o, part_key_pct(p))) != 0)
				bad = part_key_pct(p);
		if (bad)
			return kvs_fail(KVS_ERR_PARSE, "%s: %s.%s: has values, but t_s is "
					"empty", c->label, path, bad);
	}
	ts->n = n;
	return KVS_OK;
}

static kvs_status parse_cdf(const pctx *c, const json_t *o, const char *path,
			    rp_cdf *cdf)
{
	kvs_status st;
	size_t n = 0;
	if ((st = get_nums(c, o, path, "q", true, 0, &cdf->q, &n)) != KVS_OK)
		return st;
	if (n == 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: %s.q: empty", c->label, path);
	for (size_t i = 0; i < n; i++)
		if (!(cdf->q[i] >= 0 && cdf->q[i] <= 1) || (i && cdf->q[i] < cdf->q[i - 1]))
			return kvs_fail(KVS_ERR_PARSE,
					"%s: %s.q[%zu]: quantile levels must rise from 0 to 1 (got %g)",
					c->label, path, i, cdf->q[i]);
	for (int k = 0; k < RP_NCDF; k++) {
		/* an empty array: no request reached that point (a run with no
		 * requests), drawn as absent */
		json_t *a = json_object_get(o, rp_cdf_key[k]);
		if (json_is_array(a) && json_array_size(a) == 0)
			continue;
		if ((st = get_nums(c, o, path, rp_cdf_key[k], false, n, &cdf->v[k], NULL)))
			return st;
	}
	cdf->n = n;
	return KVS_OK;
}

/* The "cost" object of o (--gpu-hour-price), when there is one. */
static kvs_status parse_cost(const pctx *c, const json_t *o, const char *path,
			     double cost[RP_NCOST])
{
	json_t *co;
	char sub[PATH_MAX_];
	for (int k = 0; k < RP_NCOST; k++)
		cost[k] = NAN;
	kvs_status st = get_obj(c, o, path, "cost", false, &co);
	if (st != KVS_OK || !co)
		return st;
	join(sub, path, "cost");
	for (int k = 0; k < RP_NCOST; k++)
		if ((st = get_fig(c, co, sub, rp_cost_key[k], false, &cost[k])) != KVS_OK)
			return st;
	return KVS_OK;
}

static kvs_status parse_policy(const pctx *c, const char *name, const json_t *po,
			       rp_policy *p)
{
	char path[PATH_MAX_], sub[PATH_MAX_];
	kvs_status st;
	json_t *o;
	snprintf(path, sizeof path, "policies.%s", name);
	if (!json_is_object(po))
		return bad(c, "policies", name, "an object", po);
	if (!(p->name = kvs_strdup(name)))
		return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);

	/* the figures, as the metric table places them; the accounting counts
	 * and the six time-weighted memory parts are required */
	static const kvs_metric_id required[] = {
		KVS_M_ARRIVED, KVS_M_COMPLETED, KVS_M_REJECTED, KVS_M_UNFINISHED,
		KVS_M_TOKEN_STATES_PCT, KVS_M_RESERVATION_PCT, KVS_M_INTERNAL_FRAG_PCT,
		KVS_M_EXTERNAL_FRAG_PCT, KVS_M_CACHED_IDLE_PCT, KVS_M_FREE_PCT,
	};
	double m[KVS_M_COUNT_];
	for (int id = 0; id < KVS_M_COUNT_; id++) {
		const kvs_metric_info *mi = kvs_metric_get((kvs_metric_id)id);
		m[id] = NAN;
		if (!(mi->flags & KVS_MF_POLICY))
			continue;
		bool req = false;
		for (size_t k = 0; k < KVS_ARRAY_LEN(required); k++)
			req |= required[k] == mi->id;
		o = (json_t *)po;
		if (*mi->group) {
			if ((st = get_obj(c, po, path, mi->group, req, &o)) != KVS_OK)
				return st;
			if (!o)
				continue;
		}
		join(sub, path, mi->group);
		if (req && (mi->flags & KVS_MF_INT)) {
			uint64_t n;
			if ((st = get_count(c, o, sub, mi->field, &n)) != KVS_OK)
				return st;
			m[id] = (double)n;
			continue;
		}
		if ((st = get_fig_max(c, o, sub, mi->field, req, metric_max(mi), &m[id])) != KVS_OK)
			return st;
		if (isnan(m[id]) && mi->old_field &&
		    (st = get_fig_max(c, o, sub, mi->old_field, false, metric_max(mi),
				      &m[id])) != KVS_OK)
			return st;
	}
	memcpy(p->m, m, sizeof m);
	p->arrived = (uint64_t)m[KVS_M_ARRIVED];
	p->completed = (uint64_t)m[KVS_M_COMPLETED];
	p->rejected = (uint64_t)m[KVS_M_REJECTED];
	p->unfinished = (uint64_t)m[KVS_M_UNFINISHED];
	for (int i = 0; i < RP_NPARTS; i++) {
		p->mem[i] = m[KVS_M_TOKEN_STATES_PCT + i];
		p->mem_peak[i] = m[KVS_M_PEAK_TOKEN_STATES_PCT + i];
	}
	p->concurrency = (rp_pct){ m[KVS_M_CONC_MEAN], m[KVS_M_CONC_P50], NAN,
				   m[KVS_M_CONC_P99], m[KVS_M_CONC_MAX] };
	p->tokens_per_step = (rp_pct){ m[KVS_M_TPS_MEAN], NAN, NAN, NAN, m[KVS_M_TPS_MAX] };
	p->waiting = (rp_pct){ m[KVS_M_WAITING_MEAN], NAN, NAN, NAN, m[KVS_M_WAITING_MAX] };
#define DIST(ID) (rp_pct){ m[KVS_M_##ID##_MEAN], m[KVS_M_##ID##_P50], m[KVS_M_##ID##_P90], \
			   m[KVS_M_##ID##_P99], m[KVS_M_##ID##_MAX] }
	p->queue_delay = DIST(QUEUE);
	p->ttft = DIST(TTFT);
	p->tpot = DIST(TPOT);
	p->e2e = DIST(E2E);
#undef DIST
	p->requests_per_s = m[KVS_M_REQUESTS_PER_S];
	p->output_tokens_per_s = m[KVS_M_OUTPUT_TOKENS_PER_S];
	p->goodput_rps = m[KVS_M_GOODPUT_RPS];
	p->goodput_fraction = m[KVS_M_GOODPUT_FRACTION];
	p->preemptions = m[KVS_M_PREEMPTIONS];
	p->recomputed_tokens = m[KVS_M_RECOMPUTED_TOKENS];
	p->swapped_bytes = m[KVS_M_SWAPPED_BYTES];
	p->prefix_hit_tokens = m[KVS_M_PREFIX_HIT_TOKENS];
	p->prefix_hit_blocks = m[KVS_M_PREFIX_HIT_BLOCKS];
	p->prefix_hit_rate_tokens = m[KVS_M_PREFIX_HIT_RATE_TOKENS];
	p->prefix_hit_rate_blocks = m[KVS_M_PREFIX_HIT_RATE_BLOCKS];
	p->sim_time_s = m[KVS_M_SIM_TIME_S];
	p->sim_steps = m[KVS_M_STEPS];
	p->sim_events = m[KVS_M_EVENTS];
	p->sim_wall_s = m[KVS_M_WALL_S];

	/* accounting: the rejections by reason */
	if ((st = get_obj(c, po, path, "accounting", true, &o)) != KVS_OK)
		return st;
	join(sub, path, "accounting");
	json_t *rr;
	if ((st = get_obj(c, o, sub, "rejected_by_reason", false, &rr)) != KVS_OK)
		return st;
	if (rr && json_object_size(rr)) {
		char rpath[PATH_MAX_];
		join(rpath, sub, "rejected_by_reason");
		p->reasons = kvs_calloc(json_object_size(rr), sizeof *p->reasons);
		if (!p->reasons)
			return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
		const char *k;
		json_t *v;
		json_object_foreach(rr, k, v) {
			rp_reason *r = &p->reasons[p->nreasons];
			if ((st = get_count(c, rr, rpath, k, &r->count)) != KVS_OK)
				return st;
			if (!(r->reason = kvs_strdup(k)))
				return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
			p->nreasons++;
		}
	}

	if ((st = parse_cost(c, po, path, p->cost)) != KVS_OK)
		return st;

	/* goodput: the SLOs it counts against (settings) */
	p->slo_ttft_s = p->slo_tpot_s = NAN;
	if ((st = get_obj(c, po, path, "goodput", false, &o)) != KVS_OK)
		return st;
	join(sub, path, "goodput");
	if (o && ((st = get_num(c, o, sub, "slo_ttft_s", false, &p->slo_ttft_s)) ||
		  (st = get_num(c, o, sub, "slo_tpot_s", false, &p->slo_tpot_s))))
		return st;

	if ((st = get_obj(c, po, path, "timeseries", false, &o)) != KVS_OK)
		return st;
	join(sub, path, "timeseries");
	if (o && (st = parse_series(c, o, sub, &p->ts)) != KVS_OK)
		return st;
	if ((st = get_obj(c, po, path, "cdf", false, &o)) != KVS_OK)
		return st;
	join(sub, path, "cdf");
	if (o && (st = parse_cdf(c, o, sub, &p->cdf)) != KVS_OK)
		return st;
	p->ratio_concurrency = p->ratio_throughput = p->ratio_waste = p->ratio_p99_queue = NAN;
	return KVS_OK;
}

static int policy_cmp(const void *a, const void *b)
{
	const rp_policy *x = a, *y = b;
	int rx = rp_policy_rank(x->name), ry = rp_policy_rank(y->name);
	if (rx != ry)
		return rx < ry ? -1 : 1;
	return strcmp(x->name, y->name);
}

static kvs_status parse_policies(const pctx *c, const json_t *root, rp_run *run)
{
	json_t *pols;
	kvs_status st = get_obj(c, root, "", "policies", true, &pols);
	if (st != KVS_OK)
		return st;
	size_t n = json_object_size(pols);
	if (n == 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: policies: no policy in the report",
				c->label);
	run->pol = kvs_calloc(n, sizeof *run->pol);
	if (!run->pol)
		return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
	const char *k;
	json_t *v;
	json_object_foreach(pols, k, v) {
		st = parse_policy(c, k, v, &run->pol[run->npol]);
		run->npol++;
		if (st != KVS_OK)
			return st;
	}
	qsort(run->pol, run->npol, sizeof *run->pol, policy_cmp);

	json_t *ratios;
	if ((st = get_obj(c, root, "", "ratios", false, &ratios)) != KVS_OK || !ratios)
		return st;
	for (size_t i = 0; i < run->npol; i++) {
		rp_policy *p = &run->pol[i];
		json_t *r;
		char sub[PATH_MAX_];
		if ((st = get_obj(c, ratios, "ratios", p->name, false, &r)) != KVS_OK)
			return st;
		if (!r)
			continue;
		join(sub, "ratios", p->name);
		if ((st = get_fig(c, r, sub, "concurrency", false, &p->ratio_concurrency)) ||
		    (st = get_fig(c, r, sub, "throughput", false, &p->ratio_throughput)) ||
		    (st = get_fig(c, r, sub, "waste", false, &p->ratio_waste)) ||
		    (st = get_fig(c, r, sub, "p99_queue_delay", false, &p->ratio_p99_queue)))
			return st;
		p->has_ratios = true;
	}
	return KVS_OK;
}

const char *rp_row_field_key(int field)
{
	if (field < 0 || field >= RP_NROWF)
		return "";
	return rp_row_metric[field] >= 0
		? kvs_metric_get((kvs_metric_id)rp_row_metric[field])->key
		: rp_row_own_key[field];
}

/* ---- sweep ---------------------------------------------------------------- */

/* rows (a sweep) or curve (a --rates sweep, each row with its "rate") */
static kvs_status parse_rows(const pctx *c, const json_t *root, rp_run *run, bool curve)
{
	json_t *a;
	const char *key = curve ? "curve" : "rows";
	kvs_status st = get_arr(c, root, "", key, true, &a);
	if (st != KVS_OK)
		return st;
	size_t n = json_array_size(a);
	if (n == 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: %s: the sweep has no rows%s", c->label, key,
				run->interrupted ? " (it was interrupted before any "
				"combination finished: nothing to report)" : "");
	if (!(run->rows = kvs_calloc(n, sizeof *run->rows)))
		return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i);
		rp_row *r = &run->rows[i];
		char path[PATH_MAX_];
		snprintf(path, sizeof path, "%s[%zu]", key, i);
		run->nrows = i + 1;
		r->rate = NAN;
		r->meets_slo = -1;
		if (!json_is_object(o))
			return kvs_fail(KVS_ERR_PARSE, "%s: %s: expected an object, got %s",
					c->label, path, type_name(o));
		if ((st = get_str(c, o, path, "policy", true, &r->policy)) ||
		    (st = get_num(c, o, path, "block_size", true, &r->block_size)))
			return st;
		if (curve) {
			if ((st = get_num(c, o, path, "rate", true, &r->rate)))
				return st;
			if (!(r->rate > 0))
				return kvs_fail(KVS_ERR_PARSE, "%s: %s.rate: must be > 0, got %g",
						c->label, path, r->rate);
			json_t *b = json_object_get(o, "meets_slo");
			if (b && !json_is_boolean(b))
				return bad(c, path, "meets_slo", "true or false", b);
			r->meets_slo = b ? json_is_true(b) : -1;
			b = json_object_get(o, "repeated");
			if (b && !json_is_boolean(b))
				return bad(c, path, "repeated", "true or false", b);
			r->repeated = json_is_true(b);
		}
		if (!(r->block_size >= 1))
			return kvs_fail(KVS_ERR_PARSE, "%s: %s.block_size: must be >= 1, got %g",
					c->label, path, r->block_size);
		for (int f = 0; f < RP_NROWF; f++) {
			const kvs_metric_info *mi = rp_row_metric[f] >= 0
				? kvs_metric_get((kvs_metric_id)rp_row_metric[f]) : NULL;
			if ((st = get_fig_max(c, o, path, mi ? mi->key : rp_row_own_key[f], false,
					      metric_max(mi), &r->f[f])))
				return st;
			/* a sweep saved before the key was renamed */
			if (isnan(r->f[f]) && mi && mi->old_key &&
			    (st = get_fig_max(c, o, path, mi->old_key, false, metric_max(mi),
					      &r->f[f])))
				return st;
		}
		if ((st = parse_cost(c, o, path, r->cost)) != KVS_OK)
			return st;
	}
	if (curve) {
		/* meets_slo is true on every row of a run without SLOs: it says
		 * something only when engine.slo_ttft_s or slo_tpot_s was set */
		const json_t *e = json_object_get(root, "engine");
		const json_t *t = json_object_get(e, "slo_ttft_s"), *p = json_object_get(e, "slo_tpot_s");
		bool slo = (json_is_number(t) && json_number_value(t) > 0) ||
			   (json_is_number(p) && json_number_value(p) > 0);
		for (size_t i = 0; i < n && !slo; i++)
			run->rows[i].meets_slo = -1;
	}
	return KVS_OK;
}

static kvs_status parse_sweep(const pctx *c, const json_t *root, rp_run *run)
{
	json_t *a;
	size_t n;
	kvs_status st = parse_rows(c, root, run, false);
	if (st != KVS_OK)
		return st;

	if ((st = get_arr(c, root, "", "capacity", false, &a)) != KVS_OK)
		return st;
	if (a && (n = json_array_size(a))) {
		if (!(run->cap = kvs_calloc(n, sizeof *run->cap)))
			return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
		for (size_t i = 0; i < n; i++) {
			json_t *o = json_array_get(a, i);
			rp_capacity *r = &run->cap[i];
			char path[PATH_MAX_];
			snprintf(path, sizeof path, "capacity[%zu]", i);
			run->ncap = i + 1;
			if (!json_is_object(o))
				return kvs_fail(KVS_ERR_PARSE, "%s: %s: expected an object, got %s",
						c->label, path, type_name(o));
			if ((st = get_str(c, o, path, "policy", true, &r->policy)) ||
			    (st = get_num(c, o, path, "max_rate", true, &r->max_rate)) ||
			    (st = get_num(c, o, path, "block_size", false, &r->block_size)) ||
			    (st = get_num(c, o, path, "tolerance", false, &r->tolerance)) ||
			    (st = get_num(c, o, path, "fail_rate", false, &r->fail_rate)) ||
			    (st = get_str(c, o, path, "outcome", false, &r->outcome)) ||
			    (st = get_num(c, o, path, "slo_ttft_s", false, &r->slo_ttft_s)) ||
			    (st = get_num(c, o, path, "slo_tpot_s", false, &r->slo_tpot_s)))
				return st;
		}
	}

	if ((st = get_arr(c, root, "", "recommendations", false, &a)) != KVS_OK)
		return st;
	if (a && (n = json_array_size(a))) {
		if (!(run->reco = kvs_calloc(n, sizeof *run->reco)))
			return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", c->label);
		for (size_t i = 0; i < n; i++) {
			json_t *o = json_array_get(a, i);
			rp_reco *r = &run->reco[i];
			char path[PATH_MAX_];
			snprintf(path, sizeof path, "recommendations[%zu]", i);
			run->nreco = i + 1;
			if (!json_is_object(o))
				return kvs_fail(KVS_ERR_PARSE, "%s: %s: expected an object, got %s",
						c->label, path, type_name(o));
			if ((st = get_str(c, o, path, "objective", true, &r->objective)) ||
			    (st = get_str(c, o, path, "policy", false, &r->policy)) ||
			    (st = get_str(c, o, path, "reason", false, &r->reason)) ||
			    (st = get_num(c, o, path, "block_size", false, &r->block_size)))
				return st;
		}
	}
	return KVS_OK;
}

/* ---- entry ---------------------------------------------------------------- */

kvs_status rp_run_parse(const char *text, size_t len, const char *label,
			rp_run *run)
{
	pctx c = { .label = label };
	json_error_t err;
	kvs_status st;
	if (!(run->label = kvs_strdup(label)))
		return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", label);
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return kvs_fail(KVS_ERR_PARSE, "%s: line %d, column %d: %s", label,
				err.line, err.column, err.text);
	if (!json_is_object(root)) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: expected a JSON object at the top, got %s",
			      label, type_name(root));
		goto out;
	}
	if ((st = get_str(&c, root, "", "command", false, &run->command)) ||
	    (st = get_str(&c, root, "", "kvsim_version", false, &run->version)))
		goto out;
	/* "interrupted": true, or absent (docs/REPORT-JSON.md); a sweep's
	 * count of finished combinations beside it */
	json_t *intr = json_object_get(root, "interrupted");
	if (intr && !json_is_boolean(intr)) {
		st = bad(&c, "", "interrupted", "true or false", intr);
		goto out;
	}
	run->interrupted = json_is_true(intr);
	if (run->interrupted &&
	    ((json_object_get(root, "points_done") &&
	      (st = get_count(&c, root, "", "points_done", &run->points_done))) ||
	     (json_object_get(root, "points_total") &&
	      (st = get_count(&c, root, "", "points_total", &run->points_total)))))
		goto out;
	if (!run->command) {
		/* older or hand-made reports: infer from the content */
		const char *cmd = json_object_get(root, "rows") ? "sweep" :
				  json_object_get(root, "policies") ? "replay" : NULL;
		if (!cmd) {
			st = kvs_fail(KVS_ERR_PARSE,
				      "%s: neither \"policies\" (replay/compare) nor \"rows\" (sweep): not a kvsim run report",
				      label);
			goto out;
		}
		if (!(run->command = kvs_strdup(cmd))) {
			st = kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", label);
			goto out;
		}
	}
	if (strcmp(run->command, "sweep") == 0 && !json_object_get(root, "rows") &&
	    json_object_get(root, "curve")) {
		/* sweep --rates: a curve over offered rates, no recommendations */
		run->kind = RP_KIND_CURVE;
		st = parse_rows(&c, root, run, true);
	} else if (strcmp(run->command, "sweep") == 0) {
		run->kind = RP_KIND_SWEEP;
		st = parse_sweep(&c, root, run);
	} else if (strcmp(run->command, "replay") == 0 ||
		   strcmp(run->command, "fleet") == 0 ||
		   strcmp(run->command, "compare") == 0) {
		run->kind = RP_KIND_POLICIES;
		st = parse_policies(&c, root, run);
	} else {
		st = kvs_fail(KVS_ERR_PARSE,
			      "%s: command: \"%s\" has no report (expected replay, compare, fleet or sweep)",
			      label, run->command);
	}
	if (st == KVS_OK)
		st = parse_meta(&c, root, run);
	if (st == KVS_OK && json_object_get(root, "replicas"))  /* fleet runs */
		st = rp_replicas_parse(json_object_get(root, "replicas"), label, run);
	if (st == KVS_OK && strcmp(run->command, "fleet") == 0)
		rp_fleet_parse(root, run);
out:
	json_decref(root);
	return st;
}

static void policy_free(rp_policy *p)
{
	kvs_free(p->name);
	for (size_t i = 0; i < p->nreasons; i++)
		kvs_free(p->reasons[i].reason);
	kvs_free(p->reasons);
	kvs_free(p->ts.t_s);
	for (int i = 0; i < RP_NPARTS; i++)
		kvs_free(p->ts.part[i]);
	kvs_free(p->ts.running);
	kvs_free(p->ts.waiting);
	kvs_free(p->cdf.q);
	for (int i = 0; i < RP_NCDF; i++)
		kvs_free(p->cdf.v[i]);
}

void rp_run_free(rp_run *run)
{
	if (!run)
		return;
	kvs_free(run->label);
	kvs_free(run->command);
	kvs_free(run->version);
	kvs_free(run->model_name);
	kvs_free(run->gpu_name);
	for (int m = 0; m < RP_NMETA; m++) {
		for (size_t i = 0; i < run->nmeta[m]; i++) {
			kvs_free(run->meta[m][i].key);
			kvs_free(run->meta[m][i].value);
		}
		kvs_free(run->meta[m]);
	}
	for (size_t i = 0; i < run->npol; i++)
		policy_free(&run->pol[i]);
	kvs_free(run->pol);
	for (size_t i = 0; i < run->nrows; i++)
		kvs_free(run->rows[i].policy);
	kvs_free(run->rows);
	for (size_t i = 0; i < run->ncap; i++) {
		kvs_free(run->cap[i].policy);
		kvs_free(run->cap[i].outcome);
	}
	kvs_free(run->cap);
	for (size_t i = 0; i < run->nreco; i++) {
		kvs_free(run->reco[i].objective);
		kvs_free(run->reco[i].policy);
		kvs_free(run->reco[i].reason);
	}
	kvs_free(run->reco);
	rp_replicas_free(run);
	memset(run, 0, sizeof *run);
}
