/*
 * json.c - the opaque JSON document handle (common/json.h).
 */
#include "kvs_config.h"
#include "common/json.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

void kvs_json_free(kvs_json *doc)
{
	json_decref(kvs_json_jt(doc));
}

char *kvs_json_text(const kvs_json *doc)
{
	return json_dumps(kvs_json_cjt(doc), KVS_JSON_DUMP_FLAGS);
}

json_t *kvs_json_load_file(const char *path, size_t flags, const char *what,
			   kvs_status *st)
{
	const char *sep = what ? ": " : "", *w = what ? what : "";
	struct stat sb;
	if (stat(path, &sb) != 0) {
		*st = kvs_fail(KVS_ERR_IO, "%s%s%s: cannot open: %s", path, sep, w,
			       strerror(errno));
		return NULL;
	}
	if (S_ISDIR(sb.st_mode)) {
		*st = kvs_fail(KVS_ERR_IO, "%s%s%s: is a directory, not a JSON file",
			       path, sep, w);
		return NULL;
	}
	json_error_t e;
	json_t *root = json_load_file(path, flags, &e);
	if (root)
		return root;
	/* jansson reports a file it could not open or read at line -1 */
	if (e.line < 1)
		*st = kvs_fail(KVS_ERR_IO, "%s%s%s: cannot read: %s", path, sep, w, e.text);
	else
		*st = kvs_fail(KVS_ERR_PARSE, "%s:%d:%d%s%s: %s", path, e.line, e.column,
			       sep, w, e.text);
	return NULL;
}
