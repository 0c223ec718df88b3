/*
 * json.c - the opaque JSON document handle (common/json.h).
 */
#include "kvs_config.h"
#include "common/json.h"

void kvs_json_free(kvs_json *doc)
{
	json_decref(kvs_json_jt(doc));
}

char *kvs_json_text(const kvs_json *doc)
{
	return json_dumps(kvs_json_cjt(doc), KVS_JSON_DUMP_FLAGS);
}
