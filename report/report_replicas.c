/*
 * report_replicas.c - the fleet hook of the report: an optional `replicas`
 * array in any run's JSON, one object per replica, becomes a table with one
 * row per replica and one column per numeric field (report_interactive.c
 * draws a dot chart per field).  The reader takes every number or boolean
 * at the top level of each replica object, in first-seen order; nested
 * objects and arrays are left to the run's own figures.  A replica is named
 * by its "name" or "id" (a string or an integer), else by its index.
 */
#include "kvs_config.h"
#include "report_internal.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

enum { RR_MAX_FIELDS = 64 };

static kvs_status nomem(const char *label)
{
	return kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", label);
}

kvs_status rp_replicas_parse(const struct json_t *arr, const char *label, rp_run *run)
{
	json_t *a = (json_t *)arr;
	if (!json_is_array(a))
		return kvs_fail(KVS_ERR_PARSE, "%s: replicas: expected an array", label);
	size_t n = json_array_size(a);
	if (n == 0)
		return KVS_OK;
	/* the columns: numeric keys of any replica, first seen first */
	const char *keys[RR_MAX_FIELDS];
	size_t nk = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i);
		if (!json_is_object(o))
			return kvs_fail(KVS_ERR_PARSE, "%s: replicas[%zu]: expected an object",
					label, i);
		const char *k;
		json_t *v;
		json_object_foreach(o, k, v) {
			if (!(json_is_number(v) || json_is_boolean(v)) || strcmp(k, "id") == 0)
				continue;
			bool seen = false;
			for (size_t j = 0; j < nk && !seen; j++)
				seen = strcmp(keys[j], k) == 0;
			if (!seen && nk < RR_MAX_FIELDS)
				keys[nk++] = k;
		}
	}
	/* a kvsim fleet's rows (its JSON's keys come sorted): the columns in
	 * its table's order, so that each row reads as it balances */
	if (run->command && strcmp(run->command, "fleet") == 0) {
		static const char *const order[] = {
			"routed", "arrived", "completed", "rejected", "unfinished", "kv_sent",
			"kv_received", "kv_used_pct", "prefix_hit_rate_tokens", "preemptions",
			"link_util",
		};
		const char *sorted[RR_MAX_FIELDS];
		size_t ns = 0;
		for (size_t o = 0; o < KVS_ARRAY_LEN(order); o++)
			for (size_t j = 0; j < nk; j++)
				if (keys[j] && strcmp(keys[j], order[o]) == 0) {
					sorted[ns++] = keys[j];
					keys[j] = NULL;
				}
		for (size_t j = 0; j < nk; j++)
			if (keys[j])
				sorted[ns++] = keys[j];
		memcpy(keys, sorted, nk * sizeof *keys);
	}
	run->replica_names = kvs_calloc(n, sizeof *run->replica_names);
	run->replica_fields = kvs_calloc(nk ? nk : 1, sizeof *run->replica_fields);
	run->replica_values = kvs_calloc(n * (nk ? nk : 1), sizeof *run->replica_values);
	if (!run->replica_names || !run->replica_fields || !run->replica_values)
		return nomem(label);
	run->nreplicas = n;
	run->nreplica_fields = nk;
	for (size_t j = 0; j < nk; j++)
		if (!(run->replica_fields[j] = kvs_strdup(keys[j])))
			return nomem(label);
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i);
		json_t *nm = json_object_get(o, "name");
		if (!nm)
			nm = json_object_get(o, "id");
		char buf[32];
		const char *name = buf;
		if (json_is_string(nm))
			name = json_string_value(nm);
		else if (json_is_integer(nm))
			snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(nm));
		else
			snprintf(buf, sizeof buf, "%zu", i);
		if (!(run->replica_names[i] = kvs_strdup(name)))
			return nomem(label);
		for (size_t j = 0; j < nk; j++) {
			json_t *v = json_object_get(o, keys[j]);
			run->replica_values[i * nk + j] =
				json_is_number(v) ? json_number_value(v) :
				json_is_boolean(v) ? (json_is_true(v) ? 1 : 0) : NAN;
		}
	}
	return KVS_OK;
}

void rp_replicas_free(rp_run *run)
{
	for (size_t i = 0; i < run->nreplicas && run->replica_names; i++)
		kvs_free(run->replica_names[i]);
	for (size_t j = 0; j < run->nreplica_fields && run->replica_fields; j++)
		kvs_free(run->replica_fields[j]);
	kvs_free(run->replica_names);
	kvs_free(run->replica_fields);
	kvs_free(run->replica_values);
	run->replica_names = run->replica_fields = NULL;
	run->replica_values = NULL;
	run->nreplicas = run->nreplica_fields = 0;
}

/* ---- kvsim fleet runs ---------------------------------------------------------- */

static double num_or_nan(const json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str_or(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

void rp_fleet_parse(const struct json_t *root_, rp_run *run)
{
	json_t *root = (json_t *)root_;
	rp_fleet *F = &run->fleet;
	json_t *fl = json_object_get(root, "fleet");
	json_t *eng = json_object_get(root, "engine");
	if (!json_is_object(fl))
		return;
	F->on = true;
	F->replicas = num_or_nan(json_object_get(fl, "replicas"));
	json_t *rt = json_object_get(fl, "router");
	if (json_is_string(rt))
		snprintf(F->router, sizeof F->router, "%s", json_string_value(rt));
	/* GPUs: fleet.kv, else the cost object, else replicas x tp x pp of
	 * a fleet without pools (documents written before fleet.kv) */
	F->gpus = num_or_nan(json_object_get(json_object_get(fl, "kv"), "gpus"));
	if (isnan(F->gpus))
		F->gpus = num_or_nan(json_object_get(json_object_get(fl, "cost"), "gpus"));
	json_t *pools = json_object_get(fl, "pools");
	if (isnan(F->gpus) && !json_is_array(pools) && json_is_object(eng)) {
		double tp = num_or_nan(json_object_get(eng, "tp"));
		double pp = num_or_nan(json_object_get(eng, "pp"));
		F->gpus = F->replicas * (isfinite(tp) ? tp : 1) * (isfinite(pp) && pp > 0 ? pp : 1);
	}
	size_t used = 0, i;
	json_t *p;
	json_array_foreach(pools, i, p) {
		json_t *role = json_object_get(p, "role");
		int k = snprintf(F->pools + used, sizeof F->pools - used, "%s%s: %g x %s (tp %g%s%s)",
				 i ? ", " : "", str_or(json_object_get(p, "name"), "?"),
				 num_or_nan(json_object_get(p, "replicas")),
				 str_or(json_object_get(p, "gpu"), "?"),
				 num_or_nan(json_object_get(p, "tp")),
				 json_is_string(role) ? ", " : "",
				 json_is_string(role) ? json_string_value(role) : "");
		if (k < 0 || (size_t)k >= sizeof F->pools - used)
			break;          /* (cut short: the pools shown so far) */
		used += (size_t)k;
	}
	F->slo_ttft_s = num_or_nan(json_object_get(eng, "slo_ttft_s"));
	F->slo_tpot_s = num_or_nan(json_object_get(eng, "slo_tpot_s"));
	json_t *s = json_object_get(fl, "search");
	F->fewest = F->floor_replicas = F->floor_ttft_s = F->floor_tpot_s = NAN;
	F->search_rate = NAN;
	if (!json_is_object(s))
		return;
	json_t *res = json_object_get(s, "result");
	/* a search written before "result": only an interrupted one had it */
	snprintf(F->search, sizeof F->search, "%s",
		 json_is_string(res) ? json_string_value(res) : "interrupted");
	F->search_rate = num_or_nan(json_object_get(s, "rate"));
	F->fewest = num_or_nan(json_object_get(s, "fewest_meeting"));
	json_t *fo = json_object_get(s, "floor");
	F->floor_replicas = num_or_nan(json_object_get(fo, "replicas"));
	F->floor_ttft_s = num_or_nan(json_object_get(fo, "ttft_p99_s"));
	F->floor_tpot_s = num_or_nan(json_object_get(fo, "tpot_p99_s"));
}

/* The replica rows of a kvsim fleet: headings as its table has them, and
 * shares (0..1) as percentages beside kv_used_pct. */
static const struct {
	const char *key, *label;
	double scale;
} fleet_fields[] = {
	{ "kv_used_pct", "KV used %", 1 },
	{ "prefix_hit_rate_tokens", "prefix hit %", 100 },
	{ "kv_sent", "handed off", 1 },
	{ "kv_received", "KV received", 1 },
	{ "link_util", "link use %", 100 },
};

const char *rp_replica_field_label(const rp_run *run, const char *key, double *scale)
{
	*scale = 1;
	if (!run->fleet.on)
		return key;
	for (size_t i = 0; i < KVS_ARRAY_LEN(fleet_fields); i++)
		if (strcmp(key, fleet_fields[i].key) == 0) {
			*scale = fleet_fields[i].scale;
			return fleet_fields[i].label;
		}
	return key;
}
