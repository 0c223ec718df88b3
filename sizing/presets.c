/*
 * presets.c - built-in model and GPU presets.
 *
 * Presets are data, not code: one Hugging Face config.json per model under
 * models/NAME.json and one gpus.json, found in the first of
 *   $KVSIM_DATADIR, KVS_DATADIR (the installed share/kvsim), and the source
 *   tree's sizing/presets (so an uninstalled build works),
 * that holds the file.  The name lists below are the presets the project
 * ships; tests check that each has its file and that the files hold no
 * others.
 */
#include "kvs_config.h"
#include "sizing_internal.h"
#include "common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const model_names[] = {
	"llama-2-7b", "llama-2-13b", "llama-2-70b",
	"llama-3-8b", "llama-3.1-8b", "llama-3-70b", "llama-3.1-70b", "llama-3.1-405b",
	"mistral-7b", "mixtral-8x7b",
	"qwen2.5-7b", "qwen2.5-72b", "qwen2-vl-7b", "qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-30b-a3b",
	"opt-13b", "opt-66b",
	"gemma-2-9b", "gemma-2-27b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b",
	"deepseek-v3",
	"gpt-oss-20b", "gpt-oss-120b",
	"qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b",
	"llama-4-scout", "llama-4-maverick",
	"llava-1.5-7b", "pixtral-12b", "internvl2.5-8b",
	NULL,
};

static const char *const gpu_names[] = {
	"a100-40gb", "a100-80gb", "h100-80gb", "h100-nvl-94gb", "h200-141gb",
	"l4", "l40s", "b200", "mi300x",
	NULL,
};

const char *const *kvs_model_preset_names(void)
{
	return model_names;
}

const char *const *kvs_gpu_preset_names(void)
{
	return gpu_names;
}

bool kvs_sizing_find_data(const char *rel, char *buf, size_t cap)
{
	const char *dirs[3] = {
		getenv("KVSIM_DATADIR"),
		KVS_DATADIR,
		KVS_SOURCE_ROOT "/sizing/presets",
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(dirs); i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		int n = snprintf(buf, cap, "%s/%s", dirs[i], rel);
		if (n < 0 || (size_t)n >= cap)
			continue;
		if (access(buf, R_OK) == 0)
			return true;
	}
	return false;
}

static bool in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

/* The preset's own spelling of a name typed in any case ("Llama-3-8B"),
 * or the name itself. */
static const char *canonical(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcasecmp(*list, name) == 0)
			return *list;
	return name;
}

/* " (did you mean 'x'?)" or "" into buf; a name of 4 characters or more
 * that begins two to six presets ("h100", "qwen3-vl") names them all:
 * " (did you mean 'x' or 'y'?)" (the known names follow in the message
 * anyway) */
static const char *did_you_mean(const char *const *list, const char *name,
				char *buf, size_t cap)
{
	buf[0] = '\0';
	size_t len = strlen(name), n = 0, used = 0;
	for (const char *const *l = list; *l && len >= 4; l++)
		n += strncasecmp(*l, name, len) == 0;
	if (n < 2 || n > 6) {
		const char *s = kvs_suggest(name, list, SIZE_MAX);
		if (s)
			snprintf(buf, cap, " (did you mean '%s'?)", s);
		return buf;
	}
	size_t k = 0;   /* named so far */
	for (const char *const *l = list; *l && used < cap; l++) {
		if (strncasecmp(*l, name, len) != 0)
			continue;
		const char *sep = k == 0 ? " (did you mean " : k + 1 == n ? " or " : ", ";
		int w = snprintf(buf + used, cap - used, "%s'%s'", sep, *l);
		if (w < 0)
			break;
		used += (size_t)w;
		k++;
	}
	if (used < cap)
		snprintf(buf + used, cap - used, "?)");
	return buf;
}

/* "a, b, c" of a NULL-terminated list, for error messages. */
static void join(const char *const *list, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = '\0';
	for (; *list; list++) {
		int n = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", *list);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
}

static bool looks_like_path(const char *s)
{
	size_t n = strlen(s);
	return strchr(s, '/') != NULL || (n > 5 && strcmp(s + n - 5, ".json") == 0);
}

kvs_status kvs_model_load(const char *name_or_path, kvs_model *out)
{
	char path[4096];
	if (!name_or_path || !*name_or_path)
		return kvs_fail(KVS_ERR_INVALID, "empty model name");
	struct stat sb;
	if (stat(name_or_path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		/* a model directory, as vLLM's --model takes one */
		int n = snprintf(path, sizeof path, "%s%sconfig.json", name_or_path,
				 name_or_path[strlen(name_or_path) - 1] == '/' ? "" : "/");
		if (n < 0 || (size_t)n >= sizeof path)
			return kvs_fail(KVS_ERR_INVALID, "%s: path too long", name_or_path);
		if (access(path, F_OK) != 0)
			return kvs_fail(KVS_ERR_IO, "%s: is a directory without a config.json "
					"(give the model directory or its config.json)",
					name_or_path);
		return kvs_model_from_json_file(path, out);
	}
	if (looks_like_path(name_or_path))
		return kvs_model_from_json_file(name_or_path, out);
	name_or_path = canonical(model_names, name_or_path);

	char rel[256];
	int n = snprintf(rel, sizeof rel, "models/%s.json", name_or_path);
	bool found = n > 0 && (size_t)n < sizeof rel &&
		     kvs_sizing_find_data(rel, path, sizeof path);
	if (!found) {
		char known[1024];
		join(model_names, known, sizeof known);
		if (in_list(model_names, name_or_path))
			return kvs_fail(KVS_ERR_IO,
					"preset data for model '%s' not found (looked in "
					"$KVSIM_DATADIR, %s and %s/sizing/presets)",
					name_or_path, KVS_DATADIR, KVS_SOURCE_ROOT);
		char hint[160];
		return kvs_fail(KVS_ERR_NOT_FOUND,
				"unknown model '%s'%s; known models: %s "
				"(or give a path to a Hugging Face config.json or its directory)",
				name_or_path, did_you_mean(model_names, name_or_path, hint,
							   sizeof hint), known);
	}
	kvs_model m;
	kvs_status st = kvs_model_from_json_file(path, &m);
	if (st != KVS_OK)
		return st;
	snprintf(m.name, sizeof m.name, "%s", name_or_path);
	*out = m;
	return KVS_OK;
}

/* One number field of a GPU entry: positive, or (optional) zero or absent. */
static kvs_status gpu_rate(json_t *g, const char *path, const char *name,
			   const char *key, double scale, bool optional, double *out)
{
	json_t *v = json_object_get(g, key);
	if (!v || json_is_null(v)) {
		if (optional) {
			*out = 0.0;
			return KVS_OK;
		}
		return kvs_fail(KVS_ERR_PARSE, "%s: gpu '%s': missing field '%s'",
				path, name, key);
	}
	/* in the field's unit (GB/s, TFLOPS): below 0.001 (1 MB/s, 1 GFLOPS)
	 * is a misplaced unit, not a GPU, and would make every time
	 * astronomical */
	double x = json_is_number(v) ? json_number_value(v) : -1.0;
	if (!json_is_number(v) || !((optional && x == 0.0) || (x >= 1e-3 && x < 1e9)))
		return kvs_fail(KVS_ERR_PARSE,
				"%s: gpu '%s': field '%s' must be a number in [0.001, 1e9)%s",
				path, name, key, optional ? ", or 0 when not supported" : "");
	*out = x * scale;
	return KVS_OK;
}

/* A size field ("80GB", "79.19GiB"); optional ones may be absent. */
static kvs_status gpu_size(json_t *g, const char *path, const char *name,
			   const char *key, bool optional, uint64_t *out)
{
	json_t *v = json_object_get(g, key);
	if (!v && optional) {
		*out = 0;
		return KVS_OK;
	}
	if (!json_is_string(v))
		return kvs_fail(KVS_ERR_PARSE,
				"%s: gpu '%s': field '%s' must be a size string such as "
				"\"79.19GiB\"", path, name, key);
	if (kvs_parse_bytes(json_string_value(v), out) != KVS_OK)
		return kvs_fail_wrap(KVS_ERR_PARSE, "%s: gpu '%s': field '%s'",
				     path, name, key);
	return KVS_OK;
}

/* A GPU object's fields: each is read below, or (name, description) is
 * a label; keys that start with '_' are comments. */
static const char *const gpu_keys[] = {
	"name", "description", "memory", "datasheet_memory", "memory_source", "smi_memory",
	"hbm_gb_per_s", "fp16_dense_tflops", "fp8_dense_tflops", "int8_dense_tops",
	"pcie_gb_per_s", "interconnect_gb_per_s", NULL,
};

/* A field that no GPU has (a misspelt one would leave its figure at a
 * default or missing): refused, with the nearest known name. */
static kvs_status gpu_keys_known(json_t *g, const char *path, const char *name)
{
	const char *key;
	json_t *v;
	json_object_foreach(g, key, v) {
		if (key[0] == '_' || in_list(gpu_keys, key))
			continue;
		const char *near = kvs_suggest(key, gpu_keys, KVS_ARRAY_LEN(gpu_keys) - 1);
		return kvs_fail(KVS_ERR_PARSE, "%s: gpu '%s': unknown field '%s'%s%s%s "
				"(fields: memory, hbm_gb_per_s, fp16_dense_tflops, "
				"pcie_gb_per_s, interconnect_gb_per_s; optional "
				"datasheet_memory, memory_source, smi_memory, fp8_dense_tflops, "
				"int8_dense_tops, name, description)", path, name, key,
				near ? "; did you mean '" : "", near ? near : "",
				near ? "'?" : "");
	}
	return KVS_OK;
}

/* One GPU object (a preset entry or a --gpu FILE.json) into *out. */
static kvs_status gpu_from_json(json_t *g, const char *path, const char *name,
				kvs_gpu *out)
{
	kvs_gpu gpu;
	kvs_status st = gpu_keys_known(g, path, name);
	if (st != KVS_OK)
		return st;
	memset(&gpu, 0, sizeof gpu);
	snprintf(gpu.name, sizeof gpu.name, "%s", name);
	if ((st = gpu_size(g, path, name, "memory", false, &gpu.mem_bytes)) ||
	    (st = gpu_size(g, path, name, "datasheet_memory", true, &gpu.datasheet_mem_bytes)) ||
	    (st = gpu_size(g, path, name, "smi_memory", true, &gpu.smi_mem_bytes)) ||
	    (st = gpu_rate(g, path, name, "hbm_gb_per_s", 1e9, false, &gpu.hbm_bytes_per_s)) ||
	    (st = gpu_rate(g, path, name, "fp16_dense_tflops", 1e12, false, &gpu.fp16_flops)) ||
	    (st = gpu_rate(g, path, name, "fp8_dense_tflops", 1e12, true, &gpu.fp8_flops)) ||
	    (st = gpu_rate(g, path, name, "int8_dense_tops", 1e12, true, &gpu.int8_ops)) ||
	    (st = gpu_rate(g, path, name, "pcie_gb_per_s", 1e9, false, &gpu.pcie_bytes_per_s)) ||
	    (st = gpu_rate(g, path, name, "interconnect_gb_per_s", 1e9, false,
			   &gpu.interconnect_bytes_per_s)))
		return st;
	if (gpu.mem_bytes == 0)
		return kvs_fail(KVS_ERR_PARSE, "%s: gpu '%s': field 'memory' must be positive",
				path, name);
	json_t *src = json_object_get(g, "memory_source");
	if (src && !json_is_string(src))
		return kvs_fail(KVS_ERR_PARSE, "%s: gpu '%s': field 'memory_source' must be a string",
				path, name);
	snprintf(gpu.mem_source, sizeof gpu.mem_source, "%s",
		 src ? json_string_value(src) : "as given in the file");
	*out = gpu;
	return KVS_OK;
}

uint64_t kvs_gpu_smi_bytes(const kvs_gpu *g)
{
	return g->smi_mem_bytes ? g->smi_mem_bytes : g->mem_bytes;
}

double kvs_gpu_matmul_rate(const kvs_gpu *g, kvs_dtype weight_dtype)
{
	if (weight_dtype == KVS_DTYPE_FP8 && g->fp8_flops > 0)
		return g->fp8_flops;
	if (weight_dtype == KVS_DTYPE_INT8 && g->int8_ops > 0)
		return g->int8_ops;
	return g->fp16_flops;
}

kvs_status kvs_gpu_preset(const char *name, kvs_gpu *out)
{
	char path[4096], known[512], hint[160];
	join(gpu_names, known, sizeof known);
	if (!name || !*name)
		return kvs_fail(KVS_ERR_INVALID, "empty GPU name; known GPUs: %s", known);
	if (!kvs_sizing_find_data("gpus.json", path, sizeof path))
		return kvs_fail(KVS_ERR_IO,
				"GPU preset file gpus.json not found (looked in "
				"$KVSIM_DATADIR, %s and %s/sizing/presets)",
				KVS_DATADIR, KVS_SOURCE_ROOT);
	name = canonical(gpu_names, name);
	kvs_status st = KVS_OK;
	json_t *root = kvs_json_load_file(path, JSON_REJECT_DUPLICATES, "GPU presets", &st);
	if (!root)
		return st;
	json_t *gpus = json_object_get(root, "gpus");
	json_t *g = json_is_object(gpus) ? json_object_get(gpus, name) : NULL;
	if (!json_is_object(gpus))
		st = kvs_fail(KVS_ERR_PARSE, "%s: missing object 'gpus'", path);
	else if (!json_is_object(g))
		st = kvs_fail(KVS_ERR_NOT_FOUND, "unknown GPU '%s'%s; known GPUs: %s "
			      "(or give a GPU file, --gpu FILE.json, or --gpu-mem SIZE, "
			      "e.g. 79.19GiB)", name,
			      did_you_mean(gpu_names, name, hint, sizeof hint), known);
	else
		st = gpu_from_json(g, path, name, out);
	json_decref(root);
	return st;
}

kvs_status kvs_gpu_load(const char *name_or_path, kvs_gpu *out)
{
	if (!name_or_path || !looks_like_path(name_or_path))
		return kvs_gpu_preset(name_or_path, out);
	kvs_status st = KVS_OK;
	json_t *root = kvs_json_load_file(name_or_path, JSON_REJECT_DUPLICATES, "GPU file",
					 &st);
	if (!root)
		return st;
	if (!json_is_object(root)) {
		json_decref(root);
		return kvs_fail(KVS_ERR_PARSE, "%s: expected a JSON object with the GPU's "
				"fields (memory, hbm_gb_per_s, fp16_dense_tflops, ...)",
				name_or_path);
	}
	/* the name: the file's "name", else its base name without .json */
	char name[KVS_NAME_MAX];
	json_t *n = json_object_get(root, "name");
	if (n && (!json_is_string(n) || !*json_string_value(n))) {
		json_decref(root);
		return kvs_fail(KVS_ERR_PARSE, "%s: field 'name' must be a non-empty string "
				"(or left out: the file's base name)", name_or_path);
	}
	if (n) {
		snprintf(name, sizeof name, "%s", json_string_value(n));
	} else {
		const char *b = strrchr(name_or_path, '/');
		b = b ? b + 1 : name_or_path;
		size_t len = strlen(b);
		if (len > 5 && strcmp(b + len - 5, ".json") == 0)
			len -= 5;
		snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), b);
	}
	st = gpu_from_json(root, name_or_path, name, out);
	json_decref(root);
	return st;
}
