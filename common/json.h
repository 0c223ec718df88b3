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

/* The JSON file at path, parsed with jansson's flags, or NULL with *st
 * set and the message naming the file (and `what` it should hold, when not
 * NULL): KVS_ERR_IO when it cannot be read (missing, a directory,
 * unreadable), KVS_ERR_PARSE with its line and column when it is not
 * JSON.  The one loader of the library's JSON inputs. */
json_t *kvs_json_load_file(const char *path, size_t flags, const char *what,
			   kvs_status *st);

/* The dump flags of every JSON output of kvsim. */
#define KVS_JSON_DUMP_FLAGS (JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12))

#endif
