/*
 * offload.c - KV offload tiers behind the paged prefix cache: a host tier
 * and a disk tier, each an LRU of block hashes of bounded capacity (LMCache's
 * local CPU and disk backends, Dynamo's KV block manager G2/G3 tiers).
 *
 * Memory picture of one tier (cap blocks of capacity; arrays grow to cap as
 * hashes arrive, so a large, mostly empty tier costs little):
 *
 *   hash[slots]    the block hash a slot holds
 *   prev/next[slots] LRU links (head = least recent), or the free-slot
 *                  chain through next
 *   ht[2 slots]    index: (hash, slot id) pairs, 16 bytes (common/table.h,
 *                  linear probing, load <= 1/2); the key sits in the
 *                  entry so that probing and backward-shift deletion read
 *                  only the index, not hash[] at random
 *
 * Only hashes move: the simulator needs which prefix blocks a tier holds
 * and how many bytes cross its link, not their content.
 *
 * Flow (paged.c calls the two hooks):
 *   store  the device evicts a cached block of hash h: h enters the first
 *          tier as its most recent entry (already there: it is touched; in
 *          the disk tier: it moves up, counted as promoted).  A full tier
 *          first evicts its least recent entry, which enters the next tier
 *          (store) or is dropped.  So every hash is in at most one tier,
 *          and the host tier holds the most recently evicted blocks.
 *   match  an admission's device prefix hit ends at block k: its hashes
 *          k, k+1, ... are looked up in the tiers while found (in any tier);
 *          each found block is loaded (touched, counted, its bytes over the
 *          tier's bandwidth added to the pending load) and stays in its
 *          tier, as LMCache keeps what it serves.
 *
 * Invariants (kvs_offload_is_valid): per tier, resident = entries on the
 * LRU = entries in the index <= cap; store = resident + evicted + promoted;
 * load bytes = hits x block bytes; no hash in two tiers.
 *
 * Costs: store and the lookup of one hash O(1) expected (an index probe and
 * list splices); growth amortised O(1) per stored hash.
 */
#include "offload_internal.h"
#include "common/table.h"

#include <string.h>

#define NONE UINT32_MAX

typedef struct tentry {
	uint64_t key;              /* block hash */
	uint32_t slot;             /* NONE = empty */
} tentry;

typedef struct tier {
	kvs_offload_kind kind;
	uint32_t cap;              /* blocks */
	double bytes_per_s;
	uint64_t *hash;            /* [slots] */
	uint32_t *prev, *next;     /* [slots] */
	uint32_t slots;            /* allocated, <= cap */
	uint32_t used;             /* slots ever handed out (high water) */
	uint32_t free_head;        /* free-slot chain through next */
	uint32_t head, tail, n;    /* LRU, entries */
	tentry *ht;                /* index, ht_cap = 2 x slots */
	uint64_t ht_cap;
	kvs_offload_tier_stats st;
} tier;

struct kvs_offload {
	tier t[KVS_OFFLOAD_KINDS_];   /* in cascade order: host, then disk */
	uint32_t nt;
	uint64_t block_bytes;
	double pending_s;             /* load time not yet taken */
};

#define T_IS_EMPTY(t, e) ((e)->slot == NONE)
#define T_KEY(t, e) ((e)->key)
#define T_SET_EMPTY(t, e) ((e)->slot = NONE)
KVS_TABLE_DEFINE(tindex, tentry, const tier *, T_IS_EMPTY, T_KEY, T_SET_EMPTY,
		 kvs_table_mixed)

const char *kvs_offload_kind_name(kvs_offload_kind k)
{
	return k == KVS_OFFLOAD_HOST ? "host" : k == KVS_OFFLOAD_DISK ? "disk" : "?";
}

bool kvs_offload_configured(const kvs_offload_config *cfg)
{
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++)
		if (cfg->tier[k].bytes)
			return true;
	return false;
}

/* ---- one tier ------------------------------------------------------------------ */

static uint32_t t_find(const tier *t, uint64_t h)
{
	if (!t->ht_cap)
		return NONE;
	uint64_t probes = 0;
	return t->ht[tindex_probe(t, t->ht, t->ht_cap, h, &probes)].slot;
}

static void t_unlink(tier *t, uint32_t s)
{
	if (t->prev[s] != NONE)
		t->next[t->prev[s]] = t->next[s];
	else
		t->head = t->next[s];
	if (t->next[s] != NONE)
		t->prev[t->next[s]] = t->prev[s];
	else
		t->tail = t->prev[s];
}

static void t_append(tier *t, uint32_t s)
{
	t->prev[s] = t->tail;
	t->next[s] = NONE;
	if (t->tail != NONE)
		t->next[t->tail] = s;
	else
		t->head = s;
	t->tail = s;
}

static void t_touch(tier *t, uint32_t s)
{
	if (t->tail == s)
		return;
	t_unlink(t, s);
	t_append(t, s);
}

/* Drop slot s: off the list and the index, onto the free chain. */
static void t_remove(tier *t, uint32_t s)
{
	uint64_t probes = 0;
	uint64_t i = tindex_probe(t, t->ht, t->ht_cap, t->hash[s], &probes);
	kvs_require(t->ht[i].slot == s);
	tindex_vacate(t, t->ht, t->ht_cap, i);
	t_unlink(t, s);
	t->next[s] = t->free_head;
	t->free_head = s;
	t->n--;
}

/* Room for more slots (up to cap); false when out of host memory. */
static bool t_grow(tier *t)
{
	uint64_t want = t->slots ? 2 * (uint64_t)t->slots : 64;
	if (want > t->cap)
		want = t->cap;
	uint64_t *h = kvs_reallocarray(t->hash, (size_t)want, sizeof *h);
	if (h)
		t->hash = h;
	uint32_t *pv = kvs_reallocarray(t->prev, (size_t)want, sizeof *pv);
	if (pv)
		t->prev = pv;
	uint32_t *nx = kvs_reallocarray(t->next, (size_t)want, sizeof *nx);
	if (nx)
		t->next = nx;
	tentry *ht = kvs_reallocarray(NULL, (size_t)(2 * want), sizeof *ht);
	if (!h || !pv || !nx || !ht) {
		kvs_free(ht);
		return false;
	}
	memset(ht, 0xff, (size_t)(2 * want) * sizeof *ht);
	kvs_free(t->ht);
	t->ht = ht;
	t->ht_cap = 2 * want;
	t->slots = (uint32_t)want;
	for (uint32_t s = t->head; s != NONE; s = t->next[s]) {
		uint64_t probes = 0;
		t->ht[tindex_probe(t, t->ht, t->ht_cap, t->hash[s], &probes)] =
			(tentry){ t->hash[s], s };
	}
	return true;
}

static void t_free(tier *t)
{
	kvs_free(t->hash);
	kvs_free(t->prev);
	kvs_free(t->next);
	kvs_free(t->ht);
}

/* ---- the cascade ----------------------------------------------------------------- */

/* Enter h (in no tier) into tier i as its most recent entry, cascading its
 * least recent entry down when full. */
static void enter(kvs_offload *o, uint32_t i, uint64_t h)
{
	tier *t = &o->t[i];
	bool room = t->free_head != NONE || t->used < t->slots;
	/* out of host memory for the simulator's own index, the tier holds
	 * what it has room for: its least recent entry makes way, or, empty,
	 * it cannot take h (dropped, not counted as stored) */
	if (!room && t->slots < t->cap)
		room = t_grow(t);
	if (!room && t->n == 0)
		return;
	if (!room) {
		uint32_t v = t->head;
		uint64_t vh = t->hash[v];
		t_remove(t, v);
		t->st.evicted_blocks++;
		if (i + 1 < o->nt)
			enter(o, i + 1, vh);
	}
	uint32_t s;
	if (t->free_head != NONE) {
		s = t->free_head;
		t->free_head = t->next[s];
	} else {
		s = t->used++;
	}
	t->hash[s] = h;
	uint64_t probes = 0;
	t->ht[tindex_probe(t, t->ht, t->ht_cap, h, &probes)] = (tentry){ h, s };
	t_append(t, s);
	t->n++;
	t->st.store_blocks++;
	t->st.store_bytes += o->block_bytes;
}

void kvs_offload_store(kvs_offload *o, uint64_t h)
{
	tier *t0 = &o->t[0];
	uint32_t s = t_find(t0, h);
	if (s != NONE) {
		t_touch(t0, s);      /* the tier has this content already */
		return;
	}
	for (uint32_t i = 1; i < o->nt; i++) {
		tier *t = &o->t[i];
		if ((s = t_find(t, h)) != NONE) {
			t_remove(t, s);
			t->st.promoted_blocks++;
			break;
		}
	}
	enter(o, 0, h);
}

uint32_t kvs_offload_match(kvs_offload *o, const uint64_t *h, uint32_t n)
{
	uint64_t hits[KVS_OFFLOAD_KINDS_] = { 0 };
	uint32_t k = 0;
	for (; k < n; k++) {
		uint32_t i, s = NONE;
		for (i = 0; i < o->nt; i++)
			if ((s = t_find(&o->t[i], h[k])) != NONE)
				break;
		if (s == NONE)
			break;
		t_touch(&o->t[i], s);
		hits[i]++;
	}
	/* one charge per tier: bytes over bandwidth, as a hand computes it */
	for (uint32_t i = 0; i < o->nt; i++) {
		if (!hits[i])
			continue;
		tier *t = &o->t[i];
		uint64_t bytes = hits[i] * o->block_bytes;
		double sec = (double)bytes / t->bytes_per_s;
		t->st.hit_blocks += hits[i];
		t->st.load_bytes += bytes;
		t->st.load_s += sec;
		o->pending_s += sec;
	}
	return k;
}

int kvs_offload_where(const kvs_offload *o, uint64_t h)
{
	for (uint32_t i = 0; i < o->nt; i++)
		if (t_find(&o->t[i], h) != NONE)
			return (int)o->t[i].kind;
	return -1;
}

double kvs_offload_take_load_s(kvs_offload *o)
{
	double s = o->pending_s;
	o->pending_s = 0;
	return s;
}

void kvs_offload_get_stats(const kvs_offload *o, kvs_offload_stats *out)
{
	memset(out, 0, sizeof *out);
	for (uint32_t i = 0; i < o->nt; i++) {
		const tier *t = &o->t[i];
		kvs_offload_tier_stats *d = &out->tier[t->kind];
		*d = t->st;
		d->capacity_blocks = t->cap;
		d->capacity_bytes = (uint64_t)t->cap * o->block_bytes;
		d->bytes_per_s = t->bytes_per_s;
		d->resident_blocks = t->n;
	}
}

void kvs_alloc_offload_stats(const kvs_alloc *a, kvs_offload_stats *out)
{
	if (!a->off) {
		memset(out, 0, sizeof *out);
		return;
	}
	kvs_offload_get_stats(a->off, out);
}

double kvs_alloc_offload_take_load_s(kvs_alloc *a)
{
	return a->off ? kvs_offload_take_load_s(a->off) : 0;
}

/* ---- create / destroy / validate -------------------------------------------------- */

kvs_status kvs_offload_create(const kvs_offload_config *cfg, uint64_t block_bytes,
			      kvs_offload **out)
{
	if (block_bytes == 0)
		return kvs_fail(KVS_ERR_INVALID, "kv offload: block bytes must be positive");
	kvs_offload *o = kvs_calloc(1, sizeof *o);
	if (!o)
		return kvs_fail(KVS_ERR_NOMEM, "kv offload: out of host memory");
	o->block_bytes = block_bytes;
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		uint64_t bytes = cfg->tier[k].bytes;
		if (!bytes)
			continue;
		const char *name = kvs_offload_kind_name((kvs_offload_kind)k);
		uint64_t n = bytes / block_bytes;
		kvs_status st = KVS_OK;
		if (n == 0)
			st = kvs_fail(KVS_ERR_INVALID, "kv offload tier %s (--kv-offload): "
				      "%llu bytes hold no block of %llu bytes", name,
				      (unsigned long long)bytes,
				      (unsigned long long)block_bytes);
		else if (n >= NONE)
			st = kvs_fail(KVS_ERR_LIMIT, "kv offload tier %s (--kv-offload): "
				      "%llu blocks exceed the limit of %u; raise the "
				      "block size", name, (unsigned long long)n, NONE - 1);
		else if (!(cfg->tier[k].bytes_per_s > 0) ||
			 !(cfg->tier[k].bytes_per_s < 1e18))
			st = kvs_fail(KVS_ERR_INVALID, "kv offload tier %s (--kv-offload): "
				      "bandwidth %g bytes/s must be positive and finite",
				      name, cfg->tier[k].bytes_per_s);
		if (st != KVS_OK) {
			kvs_offload_destroy(o);
			return st;
		}
		tier *t = &o->t[o->nt++];
		t->kind = (kvs_offload_kind)k;
		t->cap = (uint32_t)n;
		t->bytes_per_s = cfg->tier[k].bytes_per_s;
		t->head = t->tail = t->free_head = NONE;
	}
	if (o->nt == 0) {
		kvs_offload_destroy(o);
		return kvs_fail(KVS_ERR_INVALID, "kv offload: no tier has a size");
	}
	*out = o;
	return KVS_OK;
}

void kvs_offload_destroy(kvs_offload *o)
{
	if (!o)
		return;
	for (uint32_t i = 0; i < o->nt; i++)
		t_free(&o->t[i]);
	kvs_free(o);
}

static bool tier_is_valid(const kvs_offload *o, uint32_t i)
{
	const tier *t = &o->t[i];
	if (t->n > t->cap || t->used > t->slots || t->slots > t->cap)
		return false;
	uint32_t cnt = 0, prev = NONE;
	for (uint32_t s = t->head; s != NONE; s = t->next[s]) {
		if (s >= t->used || t->prev[s] != prev || ++cnt > t->n)
			return false;
		/* indexed at itself, and in no later tier */
		if (t_find(t, t->hash[s]) != s)
			return false;
		for (uint32_t j = i + 1; j < o->nt; j++)
			if (t_find(&o->t[j], t->hash[s]) != NONE)
				return false;
		prev = s;
	}
	if (cnt != t->n || t->tail != prev)
		return false;
	uint64_t indexed = 0;
	for (uint64_t k = 0; k < t->ht_cap; k++) {
		if (t->ht[k].slot == NONE)
			continue;
		if (t->ht[k].slot >= t->used || t->hash[t->ht[k].slot] != t->ht[k].key)
			return false;
		indexed++;
	}
	uint32_t nfree = 0;
	for (uint32_t s = t->free_head; s != NONE; s = t->next[s])
		if (s >= t->used || ++nfree > t->used)
			return false;
	const kvs_offload_tier_stats *st = &t->st;
	return indexed == t->n && nfree + t->n == t->used &&
	       st->store_blocks == t->n + st->evicted_blocks + st->promoted_blocks &&
	       st->store_bytes == st->store_blocks * o->block_bytes &&
	       st->load_bytes == st->hit_blocks * o->block_bytes;
}

bool kvs_offload_is_valid(const kvs_offload *o)
{
	if (!(o->pending_s >= 0))
		return false;
	for (uint32_t i = 0; i < o->nt; i++)
		if (!tier_is_valid(o, i))
			return false;
	return true;
}
