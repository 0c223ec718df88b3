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
