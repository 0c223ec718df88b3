/*
 * units.c - memory sizes with mandatory units and element data types.
 */
#include "kvsim/model.h"
#include "common/num.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

kvs_status kvs_parse_bytes(const char *text, uint64_t *out)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
		{ "B", 1.0 },
		{ "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
		{ "KiB", 1024.0 }, { "MiB", 1048576.0 },
		{ "GiB", 1073741824.0 }, { "TiB", 1099511627776.0 },
	};
	if (!text || !*text)
		return kvs_fail(KVS_ERR_INVALID, "empty size (expected e.g. 80GB or 79.2GiB)");
	if (!((*text >= '0' && *text <= '9') || *text == '.'))
		return kvs_fail(KVS_ERR_INVALID,
				"'%s' is not a size (expected e.g. 80GB or 79.2GiB)", text);
	const char *end;
	double v;
	if (!kvs_strtod_decimal(text, &v, &end))
		return kvs_fail(KVS_ERR_INVALID, "'%s' is not a size", text);
	if (*end == '\0')
		return kvs_fail(KVS_ERR_INVALID,
				"'%s' has no unit (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)",
				text);
	for (size_t i = 0; i < KVS_ARRAY_LEN(units); i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		double bytes = v * units[i].scale;
		if (!(bytes > 0.0))
			return kvs_fail(KVS_ERR_INVALID, "'%s' must be greater than zero", text);
		if (bytes >= 18446744073709551616.0)
			return kvs_fail(KVS_ERR_OVERFLOW, "'%s' does not fit in 64 bits", text);
		/* 0 means "not given" to callers: a size that rounds to 0 is an error */
		if (bytes < 0.5)
			return kvs_fail(KVS_ERR_INVALID, "'%s' is less than one byte", text);
		*out = (uint64_t)llround(bytes);
		return KVS_OK;
	}
	return kvs_fail(KVS_ERR_INVALID,
			"'%s': unknown unit '%s' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)",
			text, end);
}

static const struct {
	const char *name;
	unsigned bits;
} dtypes[KVS_DTYPE_COUNT_] = {
#define DTYPE(id, name, bits) [id] = { name, bits },
	KVS_DTYPE_LIST(DTYPE)
#undef DTYPE
};

const char *kvs_dtype_name(kvs_dtype dt)
{
	return (unsigned)dt < KVS_DTYPE_COUNT_ ? dtypes[dt].name : "unknown";
}

unsigned kvs_dtype_bits(kvs_dtype dt)
{
	return (unsigned)dt < KVS_DTYPE_COUNT_ ? dtypes[dt].bits : 0;
}

kvs_status kvs_dtype_parse(const char *text, kvs_dtype *out)
{
	static const struct {
		const char *alias;
		kvs_dtype dt;
	} aliases[] = {
		{ "fp32", KVS_DTYPE_FP32 }, { "float32", KVS_DTYPE_FP32 },
		{ "float", KVS_DTYPE_FP32 },
		{ "fp16", KVS_DTYPE_FP16 }, { "float16", KVS_DTYPE_FP16 },
		{ "half", KVS_DTYPE_FP16 }, { "auto", KVS_DTYPE_FP16 },
		{ "bf16", KVS_DTYPE_BF16 }, { "bfloat16", KVS_DTYPE_BF16 },
		{ "fp8", KVS_DTYPE_FP8 }, { "fp8_e4m3", KVS_DTYPE_FP8 },
		{ "fp8_e5m2", KVS_DTYPE_FP8 }, { "float8_e4m3fn", KVS_DTYPE_FP8 },
		{ "int8", KVS_DTYPE_INT8 }, { "int4", KVS_DTYPE_INT4 },
	};
	if (text)
		for (size_t i = 0; i < KVS_ARRAY_LEN(aliases); i++)
			if (strcasecmp(text, aliases[i].alias) == 0) {
				*out = aliases[i].dt;
				return KVS_OK;
			}
	return kvs_fail(KVS_ERR_INVALID,
			"unknown data type '%s' (use fp32, fp16, bf16, fp8, int8 or int4)",
			text ? text : "");
}
