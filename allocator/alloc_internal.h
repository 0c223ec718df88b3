/*
 * alloc_internal.h - what the policy files share behind kvsim/alloc.h.
 *
 * One kvs_alloc object per allocator.  The public kvs_alloc_* functions in
 * alloc.c check arguments, look the sequence up and then call the policy
 * through a const table of methods (the shape of SQLite's pcache methods):
 *
 *   kvs_alloc --+-- methods ------> the policy's row in the registry
 *               |                    (registry.c): paged | max | pow2 |
 *               |                    oracle | vattention methods
 *               +-- seq map  (open addressing, seq id -> record index, O(1))
 *               +-- recs[]   (one record per admitted or swapped sequence;
 *               |             free records are chained through next_free and
 *               |             keep their buffers, so steady state allocates
 *               |             nothing)
 *               +-- running totals (tokens, reservation) kept incrementally
 *               +-- policy state (void *)
 *
 * Ownership: the allocator owns every buffer it hands out (block tables,
 * copy lists); they stay valid until the next call that changes the state.
 * Not thread-safe: one simulator drives one allocator.
 */
#ifndef KVSIM_ALLOC_INTERNAL_H
#define KVSIM_ALLOC_INTERNAL_H

#include "kvs_config.h"
#include "kvsim/alloc.h"

enum kvs_seq_state {
	KVS_SEQ_UNUSED = 0,  /* record on the free-record chain */
	KVS_SEQ_RESIDENT,    /* KV on the device */
	KVS_SEQ_SWAPPED,     /* KV in the host swap pool (paged only) */
};

/* One sequence.  Fields a policy does not use stay zero. */
typedef struct kvs_seq_rec {
	kvs_seq_id id;
	uint32_t state;       /* enum kvs_seq_state */
	uint32_t len;         /* tokens stored */
	uint32_t final_len;   /* prompt + output: true final length, tokens */
	uint32_t res;         /* reservation counted in the totals, tokens */
	uint32_t next_free;   /* free-record chain */

	/* paged: block table (device ids, or host ids while swapped) */
	kvs_block_id *table;
	uint32_t nblocks, table_cap;
	/* paged with prefix caching: hashes of the prompt's full blocks */
	uint64_t *hashes;
	uint32_t nhashes, hashes_cap;

	/* contiguous: region [off, off + region * bytes_per_token) */
	uint64_t off;         /* bytes */
	uint32_t region;      /* tokens held, buddy rounding included */
	uint32_t pad;         /* of which buddy rounding beyond the policy's region */
	/* vattention: physical pages mapped per K/V tensor */
	uint32_t pages;
	/* windowed layers (kvs_alloc_config.window_*): units held for them
	 * from admission to release (paged: blocks, in kvs_alloc.wstash) */
	uint32_t wunits;
} kvs_seq_rec;

typedef struct kvs_alloc_methods {
	const char *name;
	kvs_status (*init)(kvs_alloc *a);
	void (*fini)(kvs_alloc *a);
	kvs_admit_verdict (*can_admit)(const kvs_alloc *a, const kvs_seq_desc *d,
				       kvs_admit_reason *why);
	/* s is fresh (id, final_len set; len 0).  On failure s is untouched
	 * apart from buffers it may keep. */
	kvs_status (*admit)(kvs_alloc *a, kvs_seq_rec *s, const kvs_seq_desc *d,
			    uint32_t *cached);
	/* len + n <= max_model_len is checked by the caller. */
	kvs_status (*grow)(kvs_alloc *a, kvs_seq_rec *s, uint32_t n,
			   const kvs_block_copy **copies, size_t *ncopies);
	uint32_t (*room)(const kvs_alloc *a, const kvs_seq_rec *s);
	void (*release)(kvs_alloc *a, kvs_seq_rec *s);
	/* child is fresh with id and final_len set. */
	kvs_status (*fork)(kvs_alloc *a, kvs_seq_rec *parent, kvs_seq_rec *child);
	kvs_status (*swap_out)(kvs_alloc *a, kvs_seq_rec *s,
			       const kvs_block_copy **copies, size_t *ncopies);
	kvs_status (*swap_in)(kvs_alloc *a, kvs_seq_rec *s,
			      const kvs_block_copy **copies, size_t *ncopies);
	bool (*can_swap_in)(const kvs_alloc *a, const kvs_seq_rec *s);
	void (*account)(const kvs_alloc *a, const kvs_seq_desc *next,
			kvs_mem_parts *out);
	bool (*is_valid)(const kvs_alloc *a);
	uint64_t (*num_units)(const kvs_alloc *a);
	uint64_t (*free_units)(const kvs_alloc *a);
	uint64_t (*metadata_bytes)(const kvs_alloc *a);
	/* contiguous policies only: tokens of the region a sequence of
	 * prompt + output tokens reserves, at most max_model_len (which the
	 * caller checked prompt + output against); at least 1 */
	uint32_t (*region)(uint32_t max_model_len, uint32_t prompt, uint32_t output);
} kvs_alloc_methods;

typedef struct kvs_seq_map_entry {
	kvs_seq_id key;
	uint32_t idx;          /* record index; UINT32_MAX = empty */
} kvs_seq_map_entry;

struct kvs_alloc {
	const kvs_alloc_methods *m;
	kvs_alloc_config cfg;
	kvs_alloc_stats stats;

	/* sequences */
	kvs_seq_rec *recs;
	uint32_t nrecs, recs_cap;     /* records ever created, capacity */
	uint32_t free_rec;            /* head of the free-record chain */
	uint32_t nseqs;               /* resident + swapped */
	kvs_seq_map_entry *map;
	kvs_seq_rec *hint;            /* record of the last lookup, or
	                               * &no_hint: a guess, checked against
	                               * the record's id and state before it
	                               * is used, so always readable (moved
	                               * with recs) */
	struct paged *fast;           /* the paged policy's state when
	                               * kvs_alloc_grow may take its inline
	                               * path (paged, no prefix caching, no
	                               * validation after each operation),
	                               * else NULL; set at creation */
	uint64_t grow_limit;          /* that path takes a grow to newlen
	                               * tokens only when 0 < newlen <=
	                               * grow_limit: max_model_len while fast
	                               * is set and shares no block tail
	                               * (paged.c keeps it), else 0 */
	kvs_seq_rec no_hint;          /* an unused record, never written */
	void *vs;                     /* validator scratch (kvs_alloc_vscratch) */
	size_t vs_bytes;
	uint64_t map_cap;             /* slots (common/table.h), a power of two */

	/* running totals over resident sequences, tokens */
	uint64_t tok_sum;             /* sum of len */
	uint64_t res_sum;             /* sum of res */
	uint64_t win_sum;             /* sum of wunits (the policy's unit) */
	/* paged with windowed layers: the blocks the sequences hold for them,
	 * interchangeable, so kept in one stack rather than per sequence
	 * (win_sum of them; room for every block of the pool) */
	kvs_block_id *wstash;

	/* copy list handed to the caller */
	kvs_block_copy *copies;
	size_t copies_cap;
	uint64_t rec_buf_bytes;    /* every record's table and hash buffers
	                            * (they only grow, and stay with the
	                            * record when it is reused) */

	void *p;                      /* policy state */
	struct kvs_offload *off;      /* paged: KV offload tiers (offload.c), or
				       * NULL; made by paged_init, freed with
				       * the allocator */
};

/* The policies' method tables (registered in registry.c).  Only tests and
 * the policies' own files name them; everything else goes through
 * kvs_policy_get(). */
extern const kvs_alloc_methods kvs_paged_methods;
/* contiguous reservation; the three differ only in .region */
extern const kvs_alloc_methods kvs_max_methods;
extern const kvs_alloc_methods kvs_pow2_methods;
extern const kvs_alloc_methods kvs_oracle_methods;
extern const kvs_alloc_methods kvs_vatt_methods;

/* The end of a release, after the policy's release method: s leaves the
 * map and goes back to the free records. */
void kvs_alloc_forget(kvs_alloc *a, kvs_seq_rec *s);

/* Record lookup through the map (and the hint updated). */
kvs_seq_rec *kvs_alloc_find_slow(const kvs_alloc *a, kvs_seq_id seq);

/* Record lookup; NULL when seq is unknown.  O(1) expected.  Callers touch
 * one sequence several times in a row (a grow, then its room; every block
 * of a prefill), so the record found last is tried first, inline: a live
 * record whose id is seq is seq's record (the map holds one per id), so
 * the guess needs no map. */
static inline kvs_seq_rec *kvs_alloc_find(const kvs_alloc *a, kvs_seq_id seq)
{
	kvs_seq_rec *s = a->hint;
	if (KVS_LIKELY(s->id == seq && s->state != KVS_SEQ_UNUSED))
		return s;
	return kvs_alloc_find_slow(a, seq);
}

/* A policy's pool, checked at init: its unit of allocation is a x b bytes
 * (the factors named name_a and name_b in messages) and *units of them fit
 * the budget, at least one.  KVS_ERR_INVALID when a factor is 0 or no unit
 * fits ("budget N bytes holds no UNIT of M bytes"), KVS_ERR_OVERFLOW when
 * a x b overflows 64 bits. */
kvs_status kvs_alloc_units(const kvs_alloc_config *c, uint64_t a, const char *name_a,
			   uint64_t b, const char *name_b, const char *unit,
			   uint64_t *unit_bytes, uint64_t *units);

/* Make sure a->copies holds n entries (KVS_ERR_NOMEM otherwise). */
kvs_status kvs_alloc_reserve_copies(kvs_alloc *a, size_t n);

/* Reservation of a sequence holding cap tokens of memory: slots below its
 * final length not yet written. */
static inline uint32_t kvs_seq_reserved(uint64_t cap, uint32_t len,
					uint32_t final_len)
{
	uint32_t top = cap < final_len ? (uint32_t)cap : final_len;
	return top > len ? top - len : 0;
}

/* Units of the windowed layers for `units` units of one windowed layer
 * group's holding: window_num / window_den of them, rounded up (0 when
 * the model has no windowed layers). */
static inline uint32_t kvs_window_units(const kvs_alloc_config *c, uint64_t units)
{
	if (!c->window_num)
		return 0;
	uint64_t u = (units * c->window_num + c->window_den - 1) / c->window_den;
	return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* Bytes of windowed-layer KV a sequence of len tokens holds and a copy of
 * it moves (a forked child gets its parent's last window on each windowed
 * group): kvs_window_units of min(len, window) tokens of
 * kv_bytes_per_token.  0 without windows. */
static inline uint64_t kvs_window_copy_bytes(const kvs_alloc_config *c, uint32_t len)
{
	if (!c->window_num)
		return 0;
	uint32_t w = len < c->window_tokens ? len : c->window_tokens;
	return (uint64_t)kvs_window_units(c, w) * c->kv_bytes_per_token;
}

/* Update the running reservation of s after its len or capacity (tokens)
 * changed. */
static inline void kvs_seq_set_res(kvs_alloc *a, kvs_seq_rec *s, uint64_t cap)
{
	uint32_t r = kvs_seq_reserved(cap, s->len, s->final_len);
	a->res_sum = a->res_sum - s->res + r;
	s->res = r;
}

/* A record's array of elem-byte entries grown to at least n > *cap
 * entries (geometric), the growth counted in a->rec_buf_bytes. */
kvs_status kvs_alloc_grow_rec_buf(kvs_alloc *a, void **arr, uint32_t *cap, uint32_t n,
				  size_t elem);

/* Grow a record's array of T (uint32: its block table; uint64: its block
 * hashes) to hold at least n entries.  Buffers stay with a recycled
 * record, so they mostly have room: that test is inline, the growth a
 * call. */
#define KVS_ALLOC_GROW_TYPED(name, T) \
	static inline kvs_status name(kvs_alloc *a, T **arr, uint32_t *cap, uint32_t n) \
	{ \
		if (KVS_LIKELY(n <= *cap)) \
			return KVS_OK; \
		void *p = *arr; \
		kvs_status st = kvs_alloc_grow_rec_buf(a, &p, cap, n, sizeof **arr); \
		*arr = p; \
		return st; \
	}
KVS_ALLOC_GROW_TYPED(kvs_alloc_grow_u32, uint32_t)
KVS_ALLOC_GROW_TYPED(kvs_alloc_grow_u64, uint64_t)

/* The validators' scratch: at least bytes bytes, kept by the allocator
 * (not policy state, not counted as metadata).  Policies size it where
 * their state grows when KVS_DEBUG >= 2, so that the validation run after
 * every operation never allocates; otherwise the first validation makes
 * it.  NULL when out of memory. */
void *kvs_alloc_vscratch(const kvs_alloc *a, size_t bytes);

/* Iterate records in use: for (i = 0; i < a->nrecs; i++) if state != UNUSED */

#endif /* KVSIM_ALLOC_INTERNAL_H */
