/*
 * registry.c - the policy registry: one const row per allocation policy.
 *
 * A row names the policy (and its aliases), gives its --help line, its
 * method table and its traits.  Everything outside allocator/ that needs to
 * know something about a policy asks here (kvs_policy_has) instead of
 * comparing policy ids, and every list of policy names (help texts, parser
 * messages, sweep defaults, report order and colours) is generated from the
 * rows, so adding a policy is its source file plus one row.
 *
 * The built-in rows are const and their ids are the kvs_policy enum;
 * kvs_policy_register() appends further rows (a test-only policy goes
 * through the same path as the built-in ones).
 */
#include "alloc_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The method tables come from each policy's own file (declared in
 * alloc_internal.h; a new policy may declare its table here, above its
 * row). */

/* The built-in rows, in display order: the first KVS_POLICY_COUNT_ have the
 * ids of enum kvs_policy; a row appended here needs no id of its own. */
static const kvs_policy_info builtin[] = {
	[KVS_POLICY_PAGED] = {
		.name = "paged",
		.help = "fixed-size blocks from a pool (vLLM PagedAttention)",
		.traits = KVS_TRAIT_BLOCK_GRANULAR | KVS_TRAIT_PREFIX_HASHES |
			  KVS_TRAIT_BASELINE,
		.kernel = KVS_KERNEL_READ_PAGED,
		.color = 0x0072b2,      /* blue */
		.methods = &kvs_paged_methods,
	},
	[KVS_POLICY_MAX] = {
		.name = "max",
		.help = "contiguous region of max_model_len tokens per request",
		.traits = KVS_TRAIT_FORKS_BY_COPY | KVS_TRAIT_PLACEMENT,
		.kernel = KVS_KERNEL_READ_CONTIGUOUS,
		.color = 0xd55e00,      /* vermillion */
		.methods = &kvs_max_methods,
	},
	[KVS_POLICY_POW2] = {
		.name = "pow2",
		.help = "contiguous region of prompt + next power of two >= output",
		.traits = KVS_TRAIT_FORKS_BY_COPY | KVS_TRAIT_PLACEMENT,
		.kernel = KVS_KERNEL_READ_CONTIGUOUS,
		.color = 0xe69f00,      /* orange */
		.methods = &kvs_pow2_methods,
	},
	[KVS_POLICY_ORACLE] = {
		.name = "oracle",
		.help = "contiguous region of exactly prompt + output (a bound)",
		.traits = KVS_TRAIT_FORKS_BY_COPY | KVS_TRAIT_BOUND | KVS_TRAIT_PLACEMENT,
		.kernel = KVS_KERNEL_READ_CONTIGUOUS,
		.color = 0x009e73,      /* bluish green */
		.methods = &kvs_oracle_methods,
	},
	[KVS_POLICY_VATTENTION] = {
		.name = "vattention",
		.help = "virtually contiguous, backed on demand by physical pages",
		.traits = KVS_TRAIT_FORKS_BY_COPY,
		.kernel = KVS_KERNEL_READ_CONTIGUOUS,
		.color = 0xcc79a7,      /* reddish purple */
		.methods = &kvs_vatt_methods,
	},
};

#define NBUILTIN (sizeof builtin / sizeof builtin[0])
_Static_assert(NBUILTIN >= (size_t)KVS_POLICY_COUNT_ && NBUILTIN <= KVS_POLICY_CAP,
	       "every enum kvs_policy id has a row, within KVS_POLICY_CAP");

/* registered rows after the built-in ones */
static const kvs_policy_info *added[KVS_POLICY_CAP - NBUILTIN];
static size_t nrows = NBUILTIN;

static const kvs_policy_info *row_at(size_t i)
{
	return i < NBUILTIN ? &builtin[i] : added[i - NBUILTIN];
}

size_t kvs_policy_count(void)
{
	return nrows;
}

const kvs_policy_info *kvs_policy_get(kvs_policy p)
{
	return (unsigned)p < nrows ? row_at((size_t)p) : NULL;
}

bool kvs_policy_has(kvs_policy p, unsigned traits)
{
	const kvs_policy_info *r = kvs_policy_get(p);
	return r && (r->traits & traits) == traits;
}

const char *kvs_policy_name(kvs_policy p)
{
	const kvs_policy_info *r = kvs_policy_get(p);
	return r ? r->name : "unknown";
}

/* Whether `text` is the row's name or one of its comma-separated aliases. */
static bool row_is(const kvs_policy_info *r, const char *text)
{
	if (strcasecmp(text, r->name) == 0)
		return true;
	for (const char *a = r->aliases; a && *a;) {
		size_t n = strcspn(a, ",");
		if (n == strlen(text) && strncasecmp(a, text, n) == 0)
			return true;
		a += n + (a[n] == ',');
	}
	return false;
}

static int find(const char *text)
{
	for (size_t i = 0; i < nrows; i++)
		if (row_is(row_at(i), text))
			return (int)i;
	return -1;
}

kvs_status kvs_policy_register(const kvs_policy_info *info, kvs_policy *out)
{
	if (!info || !info->name || !*info->name || !info->methods)
		return kvs_fail(KVS_ERR_INVALID, "policy registry: a row needs a name "
				"and a method table");
	if (find(info->name) >= 0)
		return kvs_fail(KVS_ERR_INVALID, "policy registry: '%s' is already "
				"registered", info->name);
	for (const char *a = info->aliases; a && *a;) {
		size_t n = strcspn(a, ",");
		char alias[64];
		snprintf(alias, sizeof alias, "%.*s", (int)n, a);
		if (find(alias) >= 0)
			return kvs_fail(KVS_ERR_INVALID, "policy registry: alias '%s' of "
					"'%s' is already taken", alias, info->name);
		a += n + (a[n] == ',');
	}
	if (nrows == KVS_POLICY_CAP)
		return kvs_fail(KVS_ERR_LIMIT, "policy registry: full (%d policies)",
				KVS_POLICY_CAP);
	added[nrows - NBUILTIN] = info;
	if (out)
		*out = (kvs_policy)nrows;
	nrows++;
	return KVS_OK;
}

size_t kvs_policy_names(char *buf, size_t size, const char *sep, bool last_or)
{
	size_t len = 0;
	for (size_t i = 0; i < nrows; i++) {
		const char *s = i == 0 ? "" : last_or && i + 1 == nrows ? " or " : sep;
		int k = snprintf(buf ? buf + (len < size ? len : size) : NULL,
				 len < size ? size - len : 0, "%s%s", s, row_at(i)->name);
		len += (size_t)(k > 0 ? k : 0);
	}
	if (buf && size && len == 0)
		buf[0] = '\0';
	return len;
}

kvs_status kvs_policy_parse(const char *text, kvs_policy *out)
{
	if (!text || !out)
		return kvs_fail(KVS_ERR_INVALID, "policy: missing value");
	int i = find(text);
	if (i >= 0) {
		*out = (kvs_policy)i;
		return KVS_OK;
	}
	char names[256];
	kvs_policy_names(names, sizeof names, ", ", true);
	return kvs_fail(KVS_ERR_INVALID, "unknown policy '%s' (expected %s)", text, names);
}

kvs_status kvs_policy_parse_list(const char *text, kvs_policy *out, size_t cap,
				 size_t *n)
{
	kvs_policy tmp[KVS_POLICY_CAP];
	size_t k = 0;
	if (!text || !*text)
		return kvs_fail(KVS_ERR_INVALID, "policies: empty list");
	for (const char *p = text;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		char item[64];
		if (len == 0)
			return kvs_fail(KVS_ERR_INVALID, "policies: empty item in '%s'", text);
		if (len >= sizeof item)
			return kvs_fail(KVS_ERR_INVALID, "policies: item too long in '%s'", text);
		memcpy(item, p, len);
		item[len] = '\0';
		kvs_policy q = KVS_POLICY_PAGED;   /* set when the parse succeeds */
		kvs_status st = kvs_policy_parse(item, &q);
		if (st != KVS_OK)
			return st;
		for (size_t i = 0; i < k; i++)
			if (tmp[i] == q)
				return kvs_fail(KVS_ERR_INVALID, "policy '%s' given twice", item);
		if (k == cap || k == KVS_POLICY_CAP)
			return kvs_fail(KVS_ERR_LIMIT, "policies: more than %zu", k);
		tmp[k++] = q;
		if (!e)
			break;
		p = e + 1;
	}
	memcpy(out, tmp, k * sizeof *tmp);
	*n = k;
	return KVS_OK;
}

int kvs_policy_baseline_index(const kvs_policy *ps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kvs_policy_has(ps[i], KVS_TRAIT_BASELINE))
			return (int)i;
	return -1;
}
