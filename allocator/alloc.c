/*
 * alloc.c - the public allocator interface: configuration, names, prefix
 * hashes, the sequence map, and the dispatch to one policy's methods.
 *
 * Every public call does its argument and misuse checks here (unknown or
 * duplicate sequence, swapped sequence, max_model_len) before the policy
 * sees it, so a policy only handles well-formed requests and a misuse never
 * reaches policy state.
 *
 * Sequence map: common/table.h's open addressing (linear probing, Fibonacci
 * homes) over a power-of-two table of (seq id, record index), load factor at
 * most 1/2, deletion by backward shift (no tombstones), so lookups stay O(1)
 * however many sequences come and go.
 */
#include "alloc_internal.h"
#include "owed.h"
#include "offload_internal.h"
#include "paged_internal.h"
#include "common/array.h"
#include "common/table.h"

#include <math.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------- */

static const char *const reason_names[KVS_REASON_COUNT_] = {
	[KVS_REASON_NONE] = "none",
	[KVS_REASON_NO_FREE_BLOCKS] = "no_free_blocks",
	[KVS_REASON_WATERMARK] = "watermark",
	[KVS_REASON_NO_HOLE] = "no_hole",
	[KVS_REASON_NO_FREE_BYTES] = "no_free_bytes",
	[KVS_REASON_EXCEEDS_MAX_LEN] = "exceeds_max_model_len",
	[KVS_REASON_EXCEEDS_BUDGET] = "exceeds_budget",
};

static const char *const reason_texts[KVS_REASON_COUNT_] = {
	[KVS_REASON_NONE] = "fits",
	[KVS_REASON_NO_FREE_BLOCKS] =
		"not enough free blocks or pages for the prompt right now",
	[KVS_REASON_WATERMARK] =
		"admitting it would dip below the free-block watermark",
	[KVS_REASON_NO_HOLE] =
		"enough free bytes in total, but no single hole large enough",
	[KVS_REASON_NO_FREE_BYTES] =
		"not enough free bytes for its reservation right now",
	[KVS_REASON_EXCEEDS_MAX_LEN] =
		"prompt plus output is longer than max_model_len",
	[KVS_REASON_EXCEEDS_BUDGET] =
		"needs more KV memory than the whole budget holds",
};

const char *kvs_admit_reason_name(kvs_admit_reason r)
{
	if ((unsigned)r >= KVS_REASON_COUNT_)
		return "unknown";
	return reason_names[r];
}

const char *kvs_admit_reason_text(kvs_admit_reason r)
{
	if ((unsigned)r >= KVS_REASON_COUNT_)
		return "unknown reason";
	return reason_texts[r];
}

/* ---- prefix hashes ----------------------------------------------------------
 * A multiply-fold mix (kvs_mul_fold: the 128-bit product of two 64-bit words
 * folded to 64 bits) spreads every input bit over the result; the common
 * mixer (kvs_mix64, splitmix64's finaliser) then removes the last structure.
 * Constants are odd 64-bit values with balanced bits (the golden ratio and
 * friends).
 */
#define HK0 KVS_GOLDEN64
#define HK1 0xd6e8feb86659fd93ull
#define HK2 0xa0761d6478bd642full
#define HK3 0xe7037ed1a0b428dbull

uint64_t kvs_hash_block_tokens(uint64_t parent, const uint32_t *tokens,
			       uint32_t n)
{
	uint64_t h = kvs_mul_fold(parent ^ HK0, (uint64_t)n ^ HK1);
	uint32_t i = 0;
	for (; i + 4 <= n; i += 4) {
		uint64_t w0 = tokens[i] | (uint64_t)tokens[i + 1] << 32;
		uint64_t w1 = tokens[i + 2] | (uint64_t)tokens[i + 3] << 32;
		h = kvs_mul_fold(w0 ^ HK2 ^ h, w1 ^ HK3) + HK0;
	}
	for (; i < n; i++)
		h = kvs_mul_fold(h ^ tokens[i] ^ HK2, HK1);
	return kvs_mix64(h ^ parent);
}

uint64_t kvs_hash_block_id(uint64_t parent, uint64_t id, uint32_t sub)
{
	uint64_t h = kvs_mul_fold(parent ^ HK0, id ^ HK1);
	h = kvs_mul_fold(h ^ HK2, (uint64_t)sub ^ HK3);
	return kvs_mix64(h ^ id);
}

/* ---- configuration -------------------------------------------------------- */

void kvs_alloc_config_defaults(kvs_alloc_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->policy = KVS_POLICY_PAGED;
	cfg->block_size = 16;
	cfg->watermark = 0.01;
	cfg->enable_prefix_caching = false;
	cfg->swap_bytes = 0;
	cfg->best_fit = false;
	cfg->page_bytes = 2u << 20;
	cfg->num_kv_tensors = 64;
}

static kvs_status check_config(const kvs_alloc_config *c)
{
	if (!kvs_policy_get(c->policy))
		return kvs_fail(KVS_ERR_INVALID, "allocator: unknown policy %d",
				(int)c->policy);
	if (kvs_offload_configured(&c->offload) &&
	    (kvs_policy_get(c->policy)->methods != &kvs_paged_methods ||
	     !c->enable_prefix_caching))
		return kvs_fail(KVS_ERR_INVALID, "allocator: KV offload tiers need the "
				"paged policy with prefix caching (policy %s%s)",
				kvs_policy_get(c->policy)->name,
				c->enable_prefix_caching ? "" : ", prefix caching off");
	if (c->budget_bytes == 0)
		return kvs_fail(KVS_ERR_INVALID,
				"allocator: budget_bytes must be positive");
	if (c->kv_bytes_per_token == 0)
		return kvs_fail(KVS_ERR_INVALID,
				"allocator: kv_bytes_per_token must be positive");
	if (c->max_model_len == 0)
		return kvs_fail(KVS_ERR_INVALID,
				"allocator: max_model_len must be positive");
	if ((c->window_tokens == 0) != (c->window_num == 0) ||
	    (c->window_num != 0 && c->window_den == 0) || c->window_num > 1024 ||
	    c->window_den > 1024)
		return kvs_fail(KVS_ERR_INVALID,
				"allocator: windowed layers need window_tokens, window_num "
				"and window_den together (got %u, %u, %u; at most 1024 groups)",
				c->window_tokens, c->window_num, c->window_den);
	if (!(c->watermark >= 0.0 && c->watermark < 1.0))
		return kvs_fail(KVS_ERR_INVALID,
				"allocator: watermark %g is outside [0, 1)",
				c->watermark);
	return KVS_OK;
}

kvs_status kvs_alloc_units(const kvs_alloc_config *c, uint64_t a, const char *name_a,
			   uint64_t b, const char *name_b, const char *unit,
			   uint64_t *unit_bytes, uint64_t *units)
{
	if (a == 0 || b == 0)
		return kvs_fail(KVS_ERR_INVALID, "allocator: %s must be positive",
				a == 0 ? name_a : name_b);
	if (kvs_mul_overflow(a, b, unit_bytes))
		return kvs_fail(KVS_ERR_OVERFLOW, "allocator: %s %llu x %s %llu overflows",
				name_a, (unsigned long long)a, name_b, (unsigned long long)b);
	*units = c->budget_bytes / *unit_bytes;
	if (*units == 0)
		return kvs_fail(KVS_ERR_INVALID, "allocator: budget %llu bytes holds no %s "
				"of %llu bytes", (unsigned long long)c->budget_bytes, unit,
				(unsigned long long)*unit_bytes);
	return KVS_OK;
}

/* ---- buffers -------------------------------------------------------------- */

/* (kvs_alloc_grow_u32 and _u64 made the test n > *cap) */
kvs_status kvs_alloc_grow_rec_buf(kvs_alloc *a, void **arr, uint32_t *cap, uint32_t n,
				  size_t elem)
{
	size_t c = *cap;
	if (!kvs_array_grow(arr, &c, n, elem, 4, UINT32_MAX))
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory "
				"growing a table to %u entries", n);
	a->rec_buf_bytes += (uint64_t)(c - *cap) * elem;
	*cap = (uint32_t)c;
	return KVS_OK;
}

/* The records' table and hash buffers, summed (what rec_buf_bytes counts) */
static uint64_t rec_buf_sum(const kvs_alloc *a)
{
	uint64_t md = 0;
	for (uint32_t i = 0; i < a->nrecs; i++)
		md += (uint64_t)a->recs[i].table_cap * sizeof(kvs_block_id) +
		      (uint64_t)a->recs[i].hashes_cap * sizeof(uint64_t);
	return md;
}

kvs_status kvs_alloc_reserve_copies(kvs_alloc *a, size_t n)
{
	if (!KVS_ARRAY_RESERVE(a->copies, a->copies_cap, n, 16))
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory "
				"for a copy list of %zu blocks", n);
	return KVS_OK;
}

/* ---- sequence map ---------------------------------------------------------- */

#define MAP_EMPTY UINT32_MAX

#define MAP_IS_EMPTY(a, e) ((e)->idx == MAP_EMPTY)
#define MAP_KEY(a, e) ((e)->key)
#define MAP_SET_EMPTY(a, e) ((e)->idx = MAP_EMPTY)
/* Sequence ids are dense integers: Fibonacci hashing spreads them best. */
KVS_TABLE_DEFINE(seqmap, kvs_seq_map_entry, const kvs_alloc *, MAP_IS_EMPTY,
		 MAP_KEY, MAP_SET_EMPTY, kvs_table_fibonacci)

/* The map alone (the validator checks it without the hint). */
static kvs_seq_rec *map_find(const kvs_alloc *a, kvs_seq_id seq)
{
	uint64_t probes = 0;
	const kvs_seq_map_entry *e = &a->map[seqmap_probe(a, a->map, a->map_cap, seq, &probes)];
	return e->idx == MAP_EMPTY ? NULL : &a->recs[e->idx];
}

/* kvs_alloc_find (alloc_internal.h) when its guess misses. */
kvs_seq_rec *kvs_alloc_find_slow(const kvs_alloc *a, kvs_seq_id seq)
{
	kvs_seq_rec *s = map_find(a, seq);
	if (s)
		((kvs_alloc *)a)->hint = s;
	return s;
}

static void map_put(kvs_alloc *a, kvs_seq_id seq, uint32_t idx)
{
	uint64_t probes = 0;
	kvs_seq_map_entry *e = &a->map[seqmap_probe(a, a->map, a->map_cap, seq, &probes)];
	e->key = seq;
	e->idx = idx;
}

static void map_del(kvs_alloc *a, kvs_seq_id seq)
{
	uint64_t probes = 0;
	uint64_t i = seqmap_probe(a, a->map, a->map_cap, seq, &probes);
	kvs_require(a->map[i].idx != MAP_EMPTY);
	seqmap_vacate(a, a->map, a->map_cap, i);
}

/* Room for one more sequence in the map (load <= 1/2). */
static kvs_status map_reserve(kvs_alloc *a)
{
	uint64_t cap = a->map_cap;
	if ((uint64_t)(a->nseqs + 1) * 2 <= cap)
		return KVS_OK;
	uint64_t ncap = cap * 2;
	kvs_seq_map_entry *old = a->map;
	kvs_seq_map_entry *nm = kvs_reallocarray(NULL, (size_t)ncap, sizeof *nm);
	if (!nm)
		return kvs_fail(KVS_ERR_NOMEM,
				"allocator: out of host memory for the sequence map");
	for (uint64_t i = 0; i < ncap; i++)
		nm[i].idx = MAP_EMPTY;
	a->map = nm;
	a->map_cap = ncap;
	for (uint64_t i = 0; i < cap; i++)
		if (old[i].idx != MAP_EMPTY)
			map_put(a, old[i].key, old[i].idx);
	kvs_free(old);
	return KVS_OK;
}

/* A fresh record (keeps the buffers of a recycled one); index in *idx.
 * May move a->recs. */
static kvs_status rec_get(kvs_alloc *a, uint32_t *idx)
{
	uint32_t i = a->free_rec;
	if (i == UINT32_MAX) {
		if (a->nrecs == a->recs_cap) {
			uint64_t c = a->recs_cap ? (uint64_t)a->recs_cap * 2 : 16;
			if (c >= UINT32_MAX)
				return kvs_fail(KVS_ERR_LIMIT,
						"allocator: too many sequences");
			size_t hint = a->hint == &a->no_hint
				      ? SIZE_MAX : (size_t)(a->hint - a->recs);
			kvs_seq_rec *r = kvs_reallocarray(a->recs, (size_t)c,
							  sizeof *r);
			if (!r)
				return kvs_fail(KVS_ERR_NOMEM, "allocator: out of "
						"host memory for sequence records");
			if (hint != SIZE_MAX)
				a->hint = r + hint;
			memset(r + a->recs_cap, 0,
			       (size_t)(c - a->recs_cap) * sizeof *r);
			a->recs = r;
			a->recs_cap = (uint32_t)c;
		}
		i = a->nrecs++;
	} else {
		a->free_rec = a->recs[i].next_free;
	}
	kvs_seq_rec *s = &a->recs[i];
	kvs_block_id *table = s->table;
	uint32_t table_cap = s->table_cap;
	uint64_t *hashes = s->hashes;
	uint32_t hashes_cap = s->hashes_cap;
	memset(s, 0, sizeof *s);
	s->table = table;
	s->table_cap = table_cap;
	s->hashes = hashes;
	s->hashes_cap = hashes_cap;
	*idx = i;
	return KVS_OK;
}

static void rec_put(kvs_alloc *a, uint32_t idx)
{
	kvs_seq_rec *s = &a->recs[idx];
	s->state = KVS_SEQ_UNUSED;
	s->nblocks = 0;
	s->nhashes = 0;
	s->next_free = a->free_rec;
	a->free_rec = idx;
}

/* ---- create / destroy ------------------------------------------------------- */

kvs_status kvs_alloc_create(const kvs_alloc_config *cfg, kvs_alloc **out)
{
	if (!cfg || !out)
		return kvs_fail(KVS_ERR_INVALID, "allocator: missing argument");
	kvs_status st = check_config(cfg);
	if (st != KVS_OK)
		return st;
	kvs_alloc *a = kvs_calloc(1, sizeof *a);
	if (!a)
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	a->cfg = *cfg;
	a->free_rec = UINT32_MAX;
	a->hint = &a->no_hint;
	a->m = kvs_policy_get(cfg->policy)->methods;
	a->map_cap = 16;
	a->map = kvs_reallocarray(NULL, 16, sizeof *a->map);
	if (!a->map) {
		kvs_free(a);
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	}
	for (int i = 0; i < 16; i++)
		a->map[i].idx = MAP_EMPTY;
	st = a->m->init(a);
	if (st != KVS_OK) {
		kvs_free(a->vs);        /* the validator scratch init may have made */
		kvs_free(a->map);
		kvs_free(a);
		return st;
	}
	if (KVS_DEBUG < 2 && a->m == &kvs_paged_methods &&
	    !((const paged *)a->p)->caching) {
		a->fast = a->p;
		a->grow_limit = a->cfg.max_model_len;
	}
	*out = a;
	return KVS_OK;
}

void kvs_alloc_destroy(kvs_alloc *a)
{
	if (!a)
		return;
	a->m->fini(a);
	kvs_offload_destroy(a->off);
	for (uint32_t i = 0; i < a->nrecs; i++) {
		kvs_free(a->recs[i].table);
		kvs_free(a->recs[i].hashes);
	}
	kvs_free(a->recs);
	kvs_free(a->wstash);
	kvs_free(a->map);
	kvs_free(a->copies);
	kvs_free(a->vs);
	kvs_free(a);
}

const kvs_alloc_config *kvs_alloc_get_config(const kvs_alloc *a)
{
	return &a->cfg;
}

/* ---- admission ----------------------------------------------------------- */

kvs_admit_verdict kvs_alloc_can_admit(const kvs_alloc *a,
				      const kvs_seq_desc *d,
				      kvs_admit_reason *why)
{
	kvs_admit_reason r = KVS_REASON_NONE;
	kvs_admit_verdict v;
	if ((uint64_t)d->prompt_tokens + d->output_tokens > a->cfg.max_model_len) {
		v = KVS_ADMIT_NEVER;
		r = KVS_REASON_EXCEEDS_MAX_LEN;
	} else {
		v = a->m->can_admit(a, d, &r);
	}
	if (why)
		*why = r;
	return v;
}

static kvs_status check_desc(const kvs_alloc *a, const kvs_seq_desc *d)
{
	if (d->prompt_tokens == 0)
		return kvs_fail(KVS_ERR_INVALID, "allocator: sequence %llu has "
				"an empty prompt",
				(unsigned long long)d->seq);
	if (d->num_block_hashes && !d->block_hashes)
		return kvs_fail(KVS_ERR_INVALID, "allocator: sequence %llu: "
				"num_block_hashes %u without block_hashes",
				(unsigned long long)d->seq, d->num_block_hashes);
	if (kvs_alloc_find(a, d->seq))
		return kvs_fail(KVS_ERR_STATE,
				"allocator: sequence %llu is already admitted",
				(unsigned long long)d->seq);
	return KVS_OK;
}

static kvs_status admit_fits(kvs_alloc *a, const kvs_seq_desc *d,
			     uint32_t *cached_tokens);

kvs_status kvs_alloc_admit(kvs_alloc *a, const kvs_seq_desc *d,
			   uint32_t *cached_tokens)
{
	if (!a || !d)
		return kvs_fail(KVS_ERR_INVALID, "allocator: missing argument");
	kvs_status st = check_desc(a, d);
	if (st != KVS_OK)
		return st;
	kvs_admit_reason why;
	kvs_admit_verdict v = kvs_alloc_can_admit(a, d, &why);
	if (v == KVS_ADMIT_NEVER)
		return kvs_fail(KVS_ERR_LIMIT, "allocator: sequence %llu "
				"(%u + %u tokens) can never be admitted: %s",
				(unsigned long long)d->seq, d->prompt_tokens,
				d->output_tokens, kvs_admit_reason_text(why));
	if (v == KVS_ADMIT_LATER)
		return kvs_fail_static(KVS_ERR_NOSPACE, kvs_admit_reason_text(why));
	return admit_fits(a, d, cached_tokens);
}

kvs_status kvs_alloc_admit_now(kvs_alloc *a, const kvs_seq_desc *d,
			       uint32_t *cached_tokens)
{
	if (KVS_DEBUG >= 2)
		return kvs_alloc_admit(a, d, cached_tokens);
	kvs_status st = check_desc(a, d);
	if (st != KVS_OK)
		return st;
	return admit_fits(a, d, cached_tokens);
}

/* kvs_alloc_admit once the description is checked and the verdict is NOW */
static kvs_status admit_fits(kvs_alloc *a, const kvs_seq_desc *d,
			     uint32_t *cached_tokens)
{
	kvs_status st = map_reserve(a);
	if (st != KVS_OK)
		return st;
	uint32_t idx;
	st = rec_get(a, &idx);
	if (st != KVS_OK)
		return st;
	kvs_seq_rec *s = &a->recs[idx];
	s->id = d->seq;
	s->final_len = d->prompt_tokens + d->output_tokens;
	s->state = KVS_SEQ_RESIDENT;
	uint32_t cached = 0;
	st = a->m->admit(a, s, d, &cached);
	if (st != KVS_OK) {
		rec_put(a, idx);
		return st;
	}
	map_put(a, d->seq, idx);
	a->nseqs++;
	if (cached_tokens)
		*cached_tokens = cached;
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return KVS_OK;
}

/* ---- per-sequence operations ------------------------------------------------ */

static kvs_status unknown_seq(const char *op, kvs_seq_id seq)
{
	return kvs_fail(KVS_ERR_STATE, "allocator: %s: unknown sequence %llu",
			op, (unsigned long long)seq);
}

/* Every case of a grow: the checks, then the policy.  s may be NULL. */
static __attribute__((noinline)) kvs_status
grow_checked(kvs_alloc *a, kvs_seq_rec *s, kvs_seq_id seq, uint32_t n,
	     const kvs_block_copy **copies, size_t *ncopies)
{
	if (KVS_UNLIKELY(!s))
		return unknown_seq("grow", seq);
	if (KVS_UNLIKELY(s->state != KVS_SEQ_RESIDENT))
		return kvs_fail(KVS_ERR_STATE, "allocator: grow: sequence %llu "
				"is swapped out", (unsigned long long)seq);
	if (KVS_UNLIKELY((uint64_t)s->len + n > a->cfg.max_model_len))
		return kvs_fail(KVS_ERR_LIMIT, "allocator: grow: sequence %llu "
				"would reach %llu tokens, past max_model_len %u",
				(unsigned long long)seq,
				(unsigned long long)s->len + n, a->cfg.max_model_len);
	if (KVS_UNLIKELY(n == 0)) {
		if (copies)
			*copies = NULL;
		if (ncopies)
			*ncopies = 0;
		return KVS_OK;
	}
	kvs_status st = a->m == &kvs_paged_methods
			? kvs_paged_grow(a, s, n, copies, ncopies)
			: a->m->grow(a, s, n, copies, ncopies);
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return st;
}

/* The simulator's hottest allocator call.  The paged decode and one-block
 * crossing cases (kvs_paged_grow_fast) run inline here, with no register
 * saved and no call; everything else, and every build that validates
 * after each operation, goes through grow_checked. */
static __attribute__((noinline)) kvs_status
grow_any(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
	 const kvs_block_copy **copies, size_t *ncopies)
{
	/* the guess missed (or debug checks are on) */
	kvs_seq_rec *s = KVS_DEBUG < 2 ? kvs_alloc_find_slow(a, seq) : kvs_alloc_find(a, seq);
	if (KVS_DEBUG < 2 && KVS_LIKELY(s && a->m == &kvs_paged_methods &&
					s->state == KVS_SEQ_RESIDENT &&
					(uint64_t)s->len + n <= a->cfg.max_model_len &&
					kvs_paged_grow_fast(a, s, n))) {
		if (copies)
			*copies = NULL;
		if (ncopies)
			*ncopies = 0;
		return KVS_OK;
	}
	return grow_checked(a, s, seq, n, copies, ncopies);
}

/* The hot case first, with no call on its way (so no registers to save):
 * the last sequence looked up, paged without prefix caching (a->fast),
 * resident, no block shared, growing within its room or by one block
 * off the free stack into a table with room for it.  This is
 * kvs_paged_grow_fast with the policy test reduced to one load, written
 * so that its values fit the registers a call may clobber; anything
 * else is grow_any's, with nothing changed. */
/* The value of x in a register, unknown to the optimiser from here on:
 * it keeps one copy of x instead of the terms x was computed from. */
#define KVS_OPAQUE(x) __asm__("" : "+r"(x))

/* A grow that made no copy says so. */
static inline void grow_outputs(const kvs_block_copy **copies, size_t *ncopies)
{
	if (copies)
		*copies = NULL;
	if (ncopies)
		*ncopies = 0;
}

/* kvs_alloc_grow declined after the record's checks, having added the n
 * tokens to the total already: seq is s->id and n is newlen - s->len, so
 * that kvs_alloc_grow need not keep them.  Not inlined nor analysed
 * across the call (GCC's noipa; clang has only noinline). */
#if defined(__clang__)
#define KVS_NOIPA __attribute__((noinline))
#else
#define KVS_NOIPA __attribute__((noipa))
#endif
static KVS_NOIPA kvs_status
grow_declined(kvs_alloc *a, const kvs_seq_rec *s, uint64_t newlen,
	      const kvs_block_copy **copies, size_t *ncopies)
{
	uint32_t n = (uint32_t)(newlen - s->len);
	a->tok_sum -= n;
	return grow_any(a, s->id, n, copies, ncopies);
}

/* The hot case first, with no call on its way (so no registers to save):
 * the last sequence looked up (a->hint), paged without prefix caching
 * (a->fast) and no block tail shared (a->grow_limit), resident, growing
 * within max_model_len and its room or by one
 * block off the free stack into a table with room for it; this is
 * kvs_paged_grow_fast with its tests folded into the two guesses.
 * Anything else is grow_any's, with nothing changed. */
/* kvs_alloc_grow; outputs: copies or ncopies may be non-NULL (else both
 * are NULL, and the outputs cost nothing) */
static inline __attribute__((always_inline)) kvs_status
grow_impl(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
	  const kvs_block_copy **copies, size_t *ncopies, bool outputs)
{
	if (!outputs)
		copies = NULL, ncopies = NULL;
	/* Every value 64 bits wide, so that none is kept twice (32 bits and
	 * zero-extended); once the tests have passed, the outputs and the
	 * token total are written first, so that their values need no
	 * register across the rest. */
	kvs_seq_rec *s = a->hint;
	paged *p = a->fast;
	uint64_t n64 = n;
	KVS_OPAQUE(n64);
	uint64_t newlen = s->len + n64;
	KVS_OPAQUE(newlen);
	/* a->grow_limit: the policy's tests and max_model_len in one; a
	 * grow to 0 tokens (by 0) is grow_any's */
	if (KVS_UNLIKELY(s->id != seq || s->state != KVS_SEQ_RESIDENT ||
			 newlen - 1 >= a->grow_limit))
		return grow_any(a, seq, (uint32_t)n64, copies, ncopies);
	a->tok_sum += n64;         /* taken back by grow_declined */
	uint64_t nb = s->nblocks;
	uint64_t bs = p->bs;
	uint64_t cap = nb * bs;
	if (newlen > cap) {
		cap += bs;
		uint64_t top = p->pool.nfree_;
		if (KVS_UNLIKELY(newlen > cap || top == 0 || nb >= s->table_cap))
			return grow_declined(a, s, newlen, copies, ncopies);
		grow_outputs(copies, ncopies);
		top--;
		KVS_OPAQUE(top);
		uint64_t id = p->pool.free_ids_[top];
		p->pool.nfree_ = (uint32_t)top;
		p->pool.state_[id] = 1;        /* ref 1, unhashed */
		s->table[nb] = (kvs_block_id)id;
		nb++;
		KVS_OPAQUE(nb);
		s->nblocks = (uint32_t)nb;
	} else {
		grow_outputs(copies, ncopies);
	}
	/* kvs_seq_set_res with the values in registers */
	uint64_t fin = s->final_len;
	uint64_t top = cap < fin ? cap : fin;
	top = top > newlen ? top : newlen;
	uint64_t r = top - newlen;
	a->res_sum += r - s->res;
	s->res = (uint32_t)r;
	s->len = (uint32_t)newlen;
	return KVS_OK;
}

static __attribute__((noinline)) kvs_status
grow_outputs_asked(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
		   const kvs_block_copy **copies, size_t *ncopies)
{
	return grow_impl(a, seq, n, copies, ncopies, true);
}

/* Aligned to a cache line: where the function starts within one moved the
 * block-crossing figure of bench_alloc by 6% (5.06 ns at a line start,
 * 5.39 ns at offset 32, same code). */
__attribute__((aligned(64)))
kvs_status kvs_alloc_grow(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
			  const kvs_block_copy **copies, size_t *ncopies)
{
	/* the simulator's grows ask for no output: that path keeps the
	 * registers the outputs would take */
	if (KVS_UNLIKELY(((uintptr_t)copies | (uintptr_t)ncopies) != 0))
		return grow_outputs_asked(a, seq, n, copies, ncopies);
	return grow_impl(a, seq, n, NULL, NULL, false);
}

uint32_t kvs_alloc_room(const kvs_alloc *a, kvs_seq_id seq)
{
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	if (!s || s->state != KVS_SEQ_RESIDENT)
		return 0;
	return a->m->room(a, s);
}

uint32_t kvs_alloc_len(const kvs_alloc *a, kvs_seq_id seq)
{
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	return s ? s->len : 0;
}

bool kvs_alloc_is_swapped(const kvs_alloc *a, kvs_seq_id seq)
{
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	return s && s->state == KVS_SEQ_SWAPPED;
}

uint32_t kvs_alloc_num_seqs(const kvs_alloc *a)
{
	return a->nseqs;
}

void kvs_alloc_forget(kvs_alloc *a, kvs_seq_rec *s)
{
	map_del(a, s->id);
	rec_put(a, (uint32_t)(s - a->recs));
	a->nseqs--;
}

kvs_status kvs_alloc_release(kvs_alloc *a, kvs_seq_id seq)
{
	kvs_seq_rec *s = kvs_alloc_find(a, seq);
	if (!s)
		return unknown_seq("release", seq);
	a->m->release(a, s);
	kvs_alloc_forget(a, s);
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return KVS_OK;
}

kvs_status kvs_alloc_fork(kvs_alloc *a, kvs_seq_id parent, kvs_seq_id child,
			  uint32_t child_output_tokens)
{
	kvs_seq_rec *p = kvs_alloc_find(a, parent);
	if (!p)
		return unknown_seq("fork", parent);
	if (p->state != KVS_SEQ_RESIDENT)
		return kvs_fail(KVS_ERR_STATE, "allocator: fork: sequence %llu "
				"is swapped out", (unsigned long long)parent);
	if (parent == child || kvs_alloc_find(a, child))
		return kvs_fail(KVS_ERR_STATE, "allocator: fork: sequence %llu "
				"already exists", (unsigned long long)child);
	uint64_t final_len = (uint64_t)p->len + child_output_tokens;
	if (final_len > a->cfg.max_model_len)
		return kvs_fail(KVS_ERR_LIMIT, "allocator: fork: child %llu "
				"would reach %llu tokens, past max_model_len %u",
				(unsigned long long)child,
				(unsigned long long)final_len, a->cfg.max_model_len);
	kvs_status st = map_reserve(a);
	if (st != KVS_OK)
		return st;
	uint32_t pidx = (uint32_t)(p - a->recs);
	uint32_t cidx;
	st = rec_get(a, &cidx);    /* may move a->recs */
	if (st != KVS_OK)
		return st;
	p = &a->recs[pidx];
	kvs_seq_rec *c = &a->recs[cidx];
	c->id = child;
	c->final_len = (uint32_t)final_len;
	c->state = KVS_SEQ_RESIDENT;
	st = a->m->fork(a, p, c);
	if (st != KVS_OK) {
		rec_put(a, cidx);
		return st;
	}
	map_put(a, child, cidx);
	a->nseqs++;
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return KVS_OK;
}

/* swap_out (out) or swap_in: the misuse checks, then the policy's method. */
static kvs_status swap(kvs_alloc *a, kvs_seq_id seq, bool out,
		       const kvs_block_copy **copies, size_t *ncopies)
{
	const char *what = out ? "swap_out" : "swap_in";
	kvs_seq_rec *s = kvs_alloc_find(a, seq);
	if (!s)
		return unknown_seq(what, seq);
	if (!(out ? a->m->swap_out : a->m->swap_in))
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s does "
				"not swap", kvs_policy_name(a->cfg.policy));
	if (s->state != (out ? KVS_SEQ_RESIDENT : KVS_SEQ_SWAPPED))
		return kvs_fail(KVS_ERR_STATE, "allocator: %s: sequence %llu %s",
				what, (unsigned long long)seq,
				out ? "is already swapped out" : "is not swapped out");
	kvs_status st = out ? a->m->swap_out(a, s, copies, ncopies)
			    : a->m->swap_in(a, s, copies, ncopies);
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return st;
}

kvs_status kvs_alloc_swap_out(kvs_alloc *a, kvs_seq_id seq,
			      const kvs_block_copy **copies, size_t *ncopies)
{
	return swap(a, seq, true, copies, ncopies);
}

kvs_status kvs_alloc_swap_in(kvs_alloc *a, kvs_seq_id seq,
			     const kvs_block_copy **copies, size_t *ncopies)
{
	return swap(a, seq, false, copies, ncopies);
}

bool kvs_alloc_can_swap_in(const kvs_alloc *a, kvs_seq_id seq)
{
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	if (!s || s->state != KVS_SEQ_SWAPPED || !a->m->can_swap_in)
		return false;
	return a->m->can_swap_in(a, s);
}

uint64_t kvs_alloc_window_bytes(const kvs_alloc *a, uint32_t len)
{
	return kvs_window_copy_bytes(&a->cfg, len);
}

uint64_t kvs_alloc_swap_in_blocks(const kvs_alloc *a, kvs_seq_id seq)
{
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	if (!s || s->state != KVS_SEQ_SWAPPED || a->m != &kvs_paged_methods)
		return 0;
	return kvs_paged_swap_in_blocks(a, s);
}

/* ---- accounting, stats, validation ------------------------------------------ */

void *kvs_alloc_vscratch(const kvs_alloc *a, size_t bytes)
{
	kvs_alloc *m = (kvs_alloc *)a;   /* scratch only: no state anyone reads */
	if (bytes > m->vs_bytes) {
		void *p = kvs_realloc(m->vs, bytes);
		if (!p)
			return NULL;
		m->vs = p;
		m->vs_bytes = bytes;
	}
	return m->vs;
}

void kvs_alloc_account(const kvs_alloc *a, const kvs_seq_desc *next,
		       kvs_mem_parts *out)
{
	a->m->account(a, next, out);
	if (KVS_DEBUG >= 1)
		kvs_require(out->token_states + out->reservation +
			    out->internal_frag + out->external_frag +
			    out->cached_idle + out->free == a->cfg.budget_bytes);
}

void kvs_alloc_get_stats(const kvs_alloc *a, kvs_alloc_stats *out)
{
	*out = a->stats;
	uint64_t md = (uint64_t)a->recs_cap * sizeof(kvs_seq_rec) +
		      a->map_cap * sizeof(kvs_seq_map_entry) +
		      a->copies_cap * sizeof(kvs_block_copy) + a->rec_buf_bytes;
	out->block_metadata_bytes = a->m->metadata_bytes(a);
	out->metadata_bytes = md + out->block_metadata_bytes;
}

bool kvs_alloc_is_valid(const kvs_alloc *a)
{
	KVS_VALID(a->rec_buf_bytes == rec_buf_sum(a));
	/* records and map agree */
	uint32_t live = 0;
	uint64_t tok = 0, res = 0;
	for (uint32_t i = 0; i < a->nrecs; i++) {
		const kvs_seq_rec *s = &a->recs[i];
		if (s->state == KVS_SEQ_UNUSED)
			continue;
		live++;
		KVS_VALID(map_find(a, s->id) == s);
		KVS_VALID(s->len <= a->cfg.max_model_len);
		KVS_VALID(s->final_len <= a->cfg.max_model_len);
		if (s->state == KVS_SEQ_RESIDENT) {
			tok += s->len;
			res += s->res;
		} else {
			KVS_VALID(s->res == 0);   /* swapped: nothing reserved */
		}
	}
	KVS_VALID(live == a->nseqs);
	KVS_VALID(tok == a->tok_sum);
	KVS_VALID(res == a->res_sum);
	uint64_t used = 0;
	for (uint64_t i = 0; i < a->map_cap; i++) {
		const kvs_seq_map_entry *e = &a->map[i];
		if (e->idx == MAP_EMPTY)
			continue;
		used++;
		KVS_VALID(e->idx < a->nrecs);
		KVS_VALID(a->recs[e->idx].state != KVS_SEQ_UNUSED);
		KVS_VALID(a->recs[e->idx].id == e->key);
	}
	KVS_VALID(used == a->nseqs);
	uint32_t nfree = 0;
	for (uint32_t i = a->free_rec; i != UINT32_MAX; i = a->recs[i].next_free) {
		KVS_VALID(i < a->nrecs);
		KVS_VALID(a->recs[i].state == KVS_SEQ_UNUSED);
		KVS_VALID(++nfree <= a->nrecs);             /* no cycle */
	}
	KVS_VALID(nfree + live == a->nrecs);
	if (!a->m->is_valid(a))
		return false;                               /* it said which */
	kvs_mem_parts m;
	a->m->account(a, NULL, &m);
	uint64_t sum = m.token_states + m.reservation + m.internal_frag +
		       m.external_frag + m.cached_idle + m.free;
	KVS_VALID(sum == a->cfg.budget_bytes);
	return true;
}

/* ---- paged-only views ------------------------------------------------------- */

static bool is_paged(const kvs_alloc *a)
{
	return a->m == &kvs_paged_methods;
}

kvs_status kvs_alloc_block_table(const kvs_alloc *a, kvs_seq_id seq,
				 const kvs_block_id **ids, uint32_t *n)
{
	if (!is_paged(a))
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has "
				"no block tables", kvs_policy_name(a->cfg.policy));
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	if (!s)
		return unknown_seq("block_table", seq);
	if (s->state != KVS_SEQ_RESIDENT)
		return kvs_fail(KVS_ERR_STATE, "allocator: block_table: sequence "
				"%llu is swapped out", (unsigned long long)seq);
	*ids = s->table;
	*n = s->nblocks;
	return KVS_OK;
}

uint32_t kvs_alloc_table_capacity(const kvs_alloc *a, kvs_seq_id seq)
{
	const kvs_seq_rec *s = kvs_alloc_find(a, seq);
	return s ? s->table_cap : 0;
}

kvs_status kvs_alloc_slot(const kvs_alloc *a, kvs_seq_id seq, uint32_t pos,
			  uint64_t *slot)
{
	const kvs_block_id *ids;
	uint32_t n;
	kvs_status st = kvs_alloc_block_table(a, seq, &ids, &n);
	if (st != KVS_OK)
		return st;
	uint32_t bs = a->cfg.block_size;
	if (pos / bs >= n)
		return kvs_fail(KVS_ERR_INVALID, "allocator: slot: position %u of "
				"sequence %llu is past its %u blocks", pos,
				(unsigned long long)seq, n);
	*slot = (uint64_t)ids[pos / bs] * bs + pos % bs;
	return KVS_OK;
}

uint64_t kvs_alloc_num_blocks(const kvs_alloc *a)
{
	return a->m->num_units(a);
}

uint64_t kvs_alloc_free_blocks(const kvs_alloc *a)
{
	return a->m->free_units(a);
}
