/*
 * offload.c - the simulator's side of the KV offload tiers (the tiers
 * themselves are allocator/offload.c): the --kv-offload spec, the default
 * bandwidths, the kv_offload JSON object and the fleet-wide sums.
 *
 * The engine charges a tier hit's load (blocks x block bytes / bandwidth,
 * per rank) to the step that schedules the admitted prefill, added to that
 * step's time as PCIe swap-ins are: the load does not overlap compute.
 * Stores (device to tier on eviction) are not charged: LMCache and vLLM's
 * offloading connector write them asynchronously.  docs/SIMULATOR.md.
 */
#include "sim_internal.h"
#include "common/json.h"
#include "common/num.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool kvs_offload_config_on(const kvs_offload_config *cfg)
{
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++)
		if (cfg->tier[k].bytes)
			return true;
	return false;
}

bool kvs_sim_offload_stats_on(const kvs_offload_stats *s)
{
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++)
		if (s->tier[k].capacity_blocks)
			return true;
	return false;
}

/* One KIND:SIZE[:BW] item (len bytes at item) into cfg. */
static kvs_status parse_item(const char *item, size_t len, kvs_offload_config *cfg)
{
	char buf[128];
	if (len == 0)
		return kvs_fail(KVS_ERR_INVALID, "empty tier (expected KIND:SIZE[:BW], "
				"e.g. host:64GiB or disk:1TiB:7)");
	if (len >= sizeof buf)
		return kvs_fail(KVS_ERR_INVALID, "tier '%.*s...' is too long", 32, item);
	memcpy(buf, item, len);
	buf[len] = '\0';
	char *size = strchr(buf, ':');
	if (!size)
		return kvs_fail(KVS_ERR_INVALID, "'%s': expected KIND:SIZE[:BW] "
				"(e.g. host:64GiB or disk:1TiB:7)", buf);
	*size++ = '\0';
	char *bw = strchr(size, ':');
	if (bw)
		*bw++ = '\0';
	int k;
	if (strcmp(buf, "host") == 0 || strcmp(buf, "cpu") == 0)
		k = KVS_OFFLOAD_HOST;
	else if (strcmp(buf, "disk") == 0)
		k = KVS_OFFLOAD_DISK;
	else
		return kvs_fail(KVS_ERR_INVALID, "unknown tier '%s' (expected host or disk)",
				buf);
	const char *name = kvs_offload_kind_name((kvs_offload_kind)k);
	if (cfg->tier[k].bytes)
		return kvs_fail(KVS_ERR_INVALID, "tier %s given twice", name);
	uint64_t bytes;
	kvs_status st = kvs_parse_bytes(size, &bytes);
	if (st != KVS_OK)
		return kvs_fail_wrap(st, "tier %s: size", name);
	double gbps = 0;
	if (bw) {
		if (!kvs_parse_decimal(bw, &gbps) || !(gbps > 0) || !(gbps < 1e9))
			return kvs_fail(KVS_ERR_INVALID, "tier %s: bandwidth '%s' is not a "
					"positive number of GB/s", name, bw);
	}
	cfg->tier[k].bytes = bytes;
	cfg->tier[k].bytes_per_s = gbps * 1e9;
	return KVS_OK;
}

kvs_status kvs_offload_parse(const char *text, kvs_offload_config *cfg)
{
	if (!text || !cfg)
		return kvs_fail(KVS_ERR_INVALID, "missing tier list");
	kvs_offload_config c = *cfg;
	const char *p = text;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		kvs_status st = parse_item(p, len, &c);
		if (st != KVS_OK)
			return st;
		if (!comma)
			break;
		p = comma + 1;
	}
	*cfg = c;
	return KVS_OK;
}

kvs_status kvs_sim_offload_resolve(const kvs_sim_config *cfg, kvs_offload_config *out)
{
	*out = cfg->kv_offload;
	if (!kvs_offload_config_on(out))
		return KVS_OK;
	if (!kvs_policy_has(cfg->policy, KVS_TRAIT_PREFIX_HASHES))
		return kvs_fail(KVS_ERR_INVALID, "kv_offload: policy %s has no prefix cache "
				"to offload (use paged)", kvs_policy_name(cfg->policy));
	if (!cfg->enable_prefix_caching)
		return kvs_fail(KVS_ERR_INVALID, "kv_offload: needs prefix caching "
				"(--enable-prefix-caching)");
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		if (!out->tier[k].bytes || out->tier[k].bytes_per_s > 0)
			continue;
		if (k == KVS_OFFLOAD_DISK) {
			out->tier[k].bytes_per_s = KVS_OFFLOAD_DISK_BYTES_PER_S;
		} else if (cfg->deploy.gpu.pcie_bytes_per_s > 0) {
			out->tier[k].bytes_per_s = cfg->deploy.gpu.pcie_bytes_per_s;
		} else {
			return kvs_fail(KVS_ERR_INVALID, "kv_offload host (--kv-offload): no "
					"bandwidth given and gpu %s has no PCIe bandwidth to default to",
					cfg->deploy.gpu.name);
		}
	}
	return KVS_OK;
}

void kvs_sim_offload_merge(kvs_offload_stats *acc, const kvs_offload_stats *x)
{
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		kvs_offload_tier_stats *a = &acc->tier[k];
		const kvs_offload_tier_stats *b = &x->tier[k];
		a->capacity_blocks += b->capacity_blocks;
		a->capacity_bytes += b->capacity_bytes;
		if (!(a->bytes_per_s > 0))
			a->bytes_per_s = b->bytes_per_s;
		a->resident_blocks += b->resident_blocks;
		a->hit_blocks += b->hit_blocks;
		a->load_bytes += b->load_bytes;
		a->load_s += b->load_s;
		a->store_blocks += b->store_blocks;
		a->store_bytes += b->store_bytes;
		a->evicted_blocks += b->evicted_blocks;
		a->promoted_blocks += b->promoted_blocks;
	}
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

const kvs_offload_stats *kvs_sim_result_offload(const kvs_sim_result *r)
{
	return &r->offload;
}

kvs_json *kvs_sim_offload_json(const kvs_sim_result *r)
{
	if (!r || !kvs_sim_offload_stats_on(&r->offload))
		return NULL;
	return kvs_json_of(kvs_sim_offload_jt(r));
}

json_t *kvs_sim_offload_jt(const kvs_sim_result *r)
{
	const kvs_sim_stats *st = &r->st;
	const kvs_offload_stats *os = &r->offload;
	uint64_t bs = r->cfg.deploy.block_size ? r->cfg.deploy.block_size : 16;
	json_t *o = json_object();
	uint64_t hits = 0, load = 0, store = 0;
	double load_s = 0;
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		const kvs_offload_tier_stats *t = &os->tier[k];
		if (!t->capacity_blocks)
			continue;
		json_t *j = json_object();
		json_object_set_new(j, "capacity_blocks", jint(t->capacity_blocks));
		json_object_set_new(j, "capacity_bytes", jint(t->capacity_bytes));
		json_object_set_new(j, "bandwidth_bytes_per_s", jreal(t->bytes_per_s));
		json_object_set_new(j, "hit_blocks", jint(t->hit_blocks));
		json_object_set_new(j, "hit_tokens", jint(t->hit_blocks * bs));
		json_object_set_new(j, "load_bytes", jint(t->load_bytes));
		json_object_set_new(j, "load_s", jreal(t->load_s));
		json_object_set_new(j, "store_blocks", jint(t->store_blocks));
		json_object_set_new(j, "store_bytes", jint(t->store_bytes));
		json_object_set_new(j, "evicted_blocks", jint(t->evicted_blocks));
		json_object_set_new(j, "promoted_blocks", jint(t->promoted_blocks));
		json_object_set_new(j, "resident_blocks", jint(t->resident_blocks));
		json_object_set_new(o, kvs_offload_kind_name((kvs_offload_kind)k), j);
		hits += t->hit_blocks;
		load += t->load_bytes;
		store += t->store_bytes;
		load_s += t->load_s;
	}
	uint64_t hbm = st->prefix_hit_blocks - hits;
	json_object_set_new(o, "hbm_hit_blocks", jint(hbm));
	json_object_set_new(o, "hbm_hit_tokens", jint(st->prefix_hit_tokens - hits * bs));
	json_object_set_new(o, "tier_hit_blocks", jint(hits));
	json_object_set_new(o, "tier_hit_tokens", jint(hits * bs));
	json_object_set_new(o, "tier_hit_share", st->prefix_hit_blocks
			    ? jreal((double)hits / (double)st->prefix_hit_blocks)
			    : json_null());
	json_object_set_new(o, "load_bytes", jint(load));
	json_object_set_new(o, "load_s", jreal(load_s));
	json_object_set_new(o, "store_bytes", jint(store));
	return o;
}
