/*
 * common/json.h - the library's side of the opaque kvs_json handle
 * (private): a kvs_json is a jansson json_t.  Only library code and the
 * CLI's own helpers cast between the two; public headers never name
 * jansson.
 */
#ifndef KVS_COMMON_JSON_H
#define KVS_COMMON_JSON_H

#include <jansson.h>

#include "kvsim/common.h"

static inline json_t *kvs_json_jt(kvs_json *doc)
{
	return (json_t *)doc;
}

static inline const json_t *kvs_json_cjt(const kvs_json *doc)
{
	return (const json_t *)doc;
}

static inline kvs_json *kvs_json_of(json_t *j)
{
	return (kvs_json *)j;
}

/* The dump flags of every JSON output of kvsim. */
#define KVS_JSON_DUMP_FLAGS (JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12))

#endif
