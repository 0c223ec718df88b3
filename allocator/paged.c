/*
 * paged.c - the paged KV block allocator (vLLM PagedAttention style) with
 * prefix caching, copy-on-write fork, a host swap pool and a watermark.
 *
 * Memory picture (N blocks of block_size tokens each):
 *
 *   st[N]      state word, 4 bytes: hashed | ref:29, or POOL | stack
 *              position (the hot array: allocation and free touch only st
 *              and the stack)
 *   b[N]       pblock, 16 bytes: hash | prev | next (prefix cache, LRU)
 *   fstack[N]  free-id stack, 4 bytes per block (pool.free_ids_)
 *   ht[2N]     prefix index, 4 bytes per slot: block id or NONE (only with
 *              prefix caching), open addressing keyed by the block's hash
 *              (32 bytes per block in all with prefix caching, 24 without)
 *
 *   every block is exactly one of
 *     free         POOL | its position on the free-id stack
 *     cached-idle  hashed, ref 0, on the LRU queue (prev/next; head = oldest)
 *     owned        ref >= 1 = number of block tables holding it, or pinned:
 *                  POOL | a position where the stack does not hold it
 *                  (taken through the raw pool calls; see MAX_REF below)
 *
 * Fresh blocks come off the free stack; only when it is empty is the LRU
 * head evicted (hash dropped).  Released blocks go to the free stack, or to
 * the LRU tail when hashed; a sequence frees its blocks last-first, so the
 * tail of a prefix is evicted before its root.  A prefix hit takes a cached
 * block back: off the LRU if idle, ref + 1 either way.  With KV offload
 * tiers (offload.c) an evicted block's hash goes to them, and an admission
 * whose hit ends goes on matching there: those blocks are loaded into fresh
 * blocks and hashed again.
 *
 * A block is hashed when it becomes full and its sequence carries the
 * chained hash for it (the prompt's full blocks); only full blocks are ever
 * shared through the cache.  Fork shares every block; a write into a shared
 * block first copies it (copy-on-write) and reports (src, dst).
 *
 * Accounting is incremental.  With fill(i) = tokens stored in logical block
 * i of a holder, every holder of a physical block sees the same fill (a
 * shared block is never written), so
 *   token states = sum of len over sequences - dup_tok,
 *   dup_tok      = sum over owned blocks of (ref - 1) * fill,
 * updated on every reference change.  A shared block that is not full (only
 * fork makes these; counted in shared_tails) has unwritten slots that
 * several holders may claim; they count once, as reservation when some
 * holder will still write them.  account() corrects for that with one pass
 * over the sequences only while shared_tails > 0, so its cost is O(1)
 * without forks.
 *
 * Costs: alloc/free O(1) (a stack pop or an LRU unlink), append O(1)
 * amortised, prefix lookup O(1) expected per block, fork O(blocks of the
 * parent), swap O(blocks of the sequence).
 */
#include "alloc_internal.h"
#include "paged_internal.h"
#include "offload_internal.h"
#include "owed.h"
#include "common/table.h"

#include <string.h>

#define NONE KVS_BLOCK_NONE

/* State word of a block (kvs_block_pool.state_[id]):
 *   held by tables or cached-idle:  hashed flag | reference count (29 bits)
 *   the pool's (free, or pinned):   POOL | position on the free stack
 * A pool block is free exactly when its position is below the stack top and
 * the stack holds its id there (sparse-set membership); otherwise it is
 * pinned: taken through kvs_block_pool_take1 / kvs_alloc_blocks_take,
 * owned outside any table, with one implicit reference.  So taking a block
 * off the stack for the caller writes nothing but the top. */
#define MAX_REF ((1u << 29) - 1)
#define PB_HASHED (1u << 29)   /* in the prefix index (full, hash known) */
#define POOL KVS_BLOCK_POOL_TAG_
#define MAX_BLOCKS (POOL - 1)  /* positions must fit below the tag */

_Static_assert((POOL & (MAX_REF | PB_HASHED)) == 0,
	       "the pool tag is a bit of its own");

static inline uint64_t bhash(const pblock *b)
{
	return b->hash;
}

static inline void set_bhash(pblock *b, uint64_t h)
{
	b->hash = h;
}

static inline paged *P(const kvs_alloc *a)
{
	return (paged *)a->p;
}

static inline uint32_t ref_of(const paged *p, uint32_t id)
{
	return p->pool.state_[id] & MAX_REF;
}

/* Is id a pinned block, with the free stack's top at top?  (The test
 * kvs_block_pool_give1 makes.) */
static inline bool pool_pinned(const kvs_block_pool *pool, uint32_t top,
			       uint32_t id)
{
	if (id >= pool->nblocks_)
		return false;
	uint32_t pos = pool->state_[id] ^ POOL;
	if (pos >= pool->nblocks_)
		return false;       /* not the pool's: held by a table, or idle */
	return !(pos < top && pool->free_ids_[pos] == id);
}

static inline uint32_t fill_of(uint32_t bs, uint32_t i, uint32_t len)
{
	uint64_t start = (uint64_t)i * bs;
	if (len <= start)
		return 0;
	return len - start >= bs ? bs : (uint32_t)(len - start);
}

/* ---- prefix index ------------------------------------------------------------ */

/* The index is common/table.h's open-addressing table over 4-byte block
 * ids, keyed by each block's hash.  Keys are whatever the caller passed as block
 * hashes: chained 64-bit hashes from kvs_hash_block_*, but also raw trace
 * ids (Mooncake's hash ids are small consecutive integers, re-split to
 * id x k + j for smaller blocks).  Range reduction by the high word of
 * h x cap alone uses only the key's top bits, which are all zero for such
 * ids: every key would start at slot 0 and the index degenerate into one
 * cluster probed linearly (quadratic work per prompt).  So the key is
 * mixed first with a full-avalanche finaliser (splitmix64's), which makes
 * any key family, integers, strided, split or lattice-shaped ids, behave
 * like random hashes: about 2.2 slots per operation at load 1/2.
 * (Fibonacci hashing alone, one multiply, spreads consecutive ids even
 * better and keeps cluster neighbours close in time, but sparse split ids
 * already cost it twice the probes and strides near a Fibonacci number
 * pack keys into long runs; see docs/ALLOCATOR.md.) */
#define HT_IS_EMPTY(p, e) (*(e) == NONE)
#define HT_KEY(p, e) bhash(&(p)->b[*(e)])
#define HT_SET_EMPTY(p, e) (*(e) = NONE)
KVS_TABLE_DEFINE(pindex, uint32_t, const paged *, HT_IS_EMPTY, HT_KEY,
		 HT_SET_EMPTY, kvs_table_mixed)

/* Probe counting: the mutating paths (admission, registration, eviction)
 * add their index operations and the slots they examined to the
 * statistics (prefix_index_ops / prefix_index_probes), a deterministic
 * measure of the index's work that tests bound; the read-only paths
 * (can_admit, kvs_alloc_prefix_lookup, the validator) count nothing. */

/* The block cached under h, or NONE; *probes += slots examined. */
static inline uint32_t ht_find_n(const paged *p, uint64_t h, uint64_t *probes)
{
	return p->ht[pindex_probe(p, p->ht, p->ht_cap, h, probes)];
}

static inline uint32_t ht_find(const paged *p, uint64_t h)
{
	uint64_t n = 0;
	return ht_find_n(p, h, &n);
}

/* Enter block id under h unless h is cached already: one probe sequence
 * for the lookup and the insert.  True when id was entered. */
static bool ht_insert_new(paged *p, uint32_t id, uint64_t h)
{
	uint64_t n = 0;
	uint64_t i = pindex_probe(p, p->ht, p->ht_cap, h, &n);
	p->a->stats.prefix_index_ops++;
	p->a->stats.prefix_index_probes += n;
	if (p->ht[i] != NONE)
		return false;    /* same content cached in block p->ht[i] */
	set_bhash(&p->b[id], h);
	p->ht[i] = id;
	p->pool.state_[id] |= PB_HASHED;
	p->nhashed++;
	return true;
}

/* Drop id from the index: find its slot, then shift the rest of its
 * cluster back (no tombstones, so probe lengths never build up). */
static void ht_remove(paged *p, uint32_t id)
{
	uint64_t n = 0;
	uint64_t i = pindex_probe(p, p->ht, p->ht_cap, bhash(&p->b[id]), &n);
	kvs_require(p->ht[i] == id);
	n += pindex_vacate(p, p->ht, p->ht_cap, i);
	p->pool.state_[id] &= ~PB_HASHED;
	p->nhashed--;
	p->a->stats.prefix_index_ops++;
	p->a->stats.prefix_index_probes += n;
}

/* ---- block states ------------------------------------------------------------ */

static inline void lru_unlink(paged *p, uint32_t id)
{
	pblock *b = &p->b[id];
	if (b->prev != NONE)
		p->b[b->prev].next = b->next;
	else
		p->lru_head = b->next;
	if (b->next != NONE)
		p->b[b->next].prev = b->prev;
	else
		p->lru_tail = b->prev;
	p->nidle--;
}

static inline void lru_append(paged *p, uint32_t id)
{
	pblock *b = &p->b[id];
	b->prev = p->lru_tail;
	b->next = NONE;
	if (p->lru_tail != NONE)
		p->b[p->lru_tail].next = id;
	else
		p->lru_head = id;
	p->lru_tail = id;
	p->nidle++;
}

static __attribute__((noinline)) uint32_t evict(kvs_alloc *a, paged *p)
{
	uint32_t id = p->lru_head;
	kvs_require(id != NONE);
	lru_unlink(p, id);
	if (a->off)
		kvs_offload_store(a->off, bhash(&p->b[id]));
	ht_remove(p, id);
	a->stats.evictions++;
	return id;
}

/* A fresh block with ref 1; the caller made sure one is available.
 * Cost: a stack pop (one unlikely branch to eviction). */
static inline uint32_t take(kvs_alloc *a, paged *p)
{
	uint32_t id;
	if (KVS_LIKELY(p->pool.nfree_))
		id = p->pool.free_ids_[--p->pool.nfree_];
	else
		id = evict(a, p);
	p->pool.state_[id] = 1;      /* evict() dropped the hash */
	return id;
}

/* dst[i] = src[n - 1 - i] for i < n: a table to the stack top (release)
 * or the stack top to a table (admission).  Whole vectors of w ids
 * reversed (the default -O2 build does not vectorise the plain loop), two
 * per turn; the last w ids by one move that may overlap the ones before it
 * (it writes the same values), so that how many ids remain sends no loop
 * round an unpredictable number of times.  Four ids per vector, or eight
 * with AVX2 (checked when the library loads; the build itself targets
 * baseline x86-64) for 16 ids or more; fewer than four by three stores. */
typedef uint32_t kvs_u32x4 __attribute__((vector_size(16)));

/* dst[0..3] = src[3], src[2], src[1], src[0] */
static inline void move_rev4(uint32_t *dst, const uint32_t *src)
{
	kvs_u32x4 v;
	memcpy(&v, src, sizeof v);
#if defined(__clang__)
	v = __builtin_shufflevector(v, v, 3, 2, 1, 0);
#else
	v = __builtin_shuffle(v, (kvs_u32x4){ 3, 2, 1, 0 });
#endif
	memcpy(dst, &v, sizeof v);
}

/* copy_reversed for n >= w by move, which reverses w ids: whole moves from
 * the front while more than w ids are left, then the last w ids, which may
 * overlap the ones before with the same values (no test on n's remainder,
 * a branch the predictor misses about as often as not) */
static inline __attribute__((always_inline)) void
copy_rev_by(uint32_t *restrict dst, const uint32_t *restrict src, uint32_t n, uint32_t w,
	    void (*move)(uint32_t *, const uint32_t *))
{
	const uint32_t *end = src + n;
	for (size_t i = 0; i + w < n; i += w)
		move(dst + i, end - i - w);
	move(dst + n - w, src);   /* dst[n - w + k] = src[w - 1 - k] */
}

/* the same, n >= 2w, two moves a turn and the last 2w ids as two moves */
static inline __attribute__((always_inline)) void
copy_rev_by2(uint32_t *restrict dst, const uint32_t *restrict src, uint32_t n, uint32_t w,
	     void (*move)(uint32_t *, const uint32_t *))
{
	const uint32_t *end = src + n;
	for (size_t i = 0; i + 2 * w < n; i += 2 * w) {
		move(dst + i, end - i - w);
		move(dst + i + w, end - i - 2 * w);
	}
	move(dst + n - 2 * w, src + w);
	move(dst + n - w, src);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KVS_COPY_AVX2 1
typedef uint32_t kvs_u32x8 __attribute__((vector_size(32)));
static bool have_avx2;

__attribute__((constructor)) static void detect_avx2(void)
{
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2");
}

__attribute__((target("avx2"))) static inline void move_rev8(uint32_t *dst, const uint32_t *src)
{
	kvs_u32x8 v;
	memcpy(&v, src, sizeof v);
#if defined(__clang__)
	v = __builtin_shufflevector(v, v, 7, 6, 5, 4, 3, 2, 1, 0);
#else
	v = __builtin_shuffle(v, (kvs_u32x8){ 7, 6, 5, 4, 3, 2, 1, 0 });
#endif
	memcpy(dst, &v, sizeof v);
}

__attribute__((target("avx2"), noinline)) static void
copy_reversed_avx2(uint32_t *restrict dst, const uint32_t *restrict src, uint32_t n)
{
	copy_rev_by2(dst, src, n, 8, move_rev8);
}
#endif

static inline void copy_reversed(uint32_t *restrict dst,
				 const uint32_t *restrict src, uint32_t n)
{
#ifdef KVS_COPY_AVX2
	if (n >= 16 && have_avx2) {
		copy_reversed_avx2(dst, src, n);
		return;
	}
#endif
	if (n < 4) {
		if (n) {   /* 1: dst[0]; 2: dst[0], dst[1]; 3: all three */
			dst[0] = src[n - 1];
			dst[n - 1] = src[0];
			dst[n / 2] = src[(n - 1) / 2];
		}
		return;
	}
	copy_rev_by(dst, src, n, 4, move_rev4);
}

/* Lowest free-stack position whose block may carry a stale state word
 * (1 instead of POOL | position); nfree when none does. */
static inline uint32_t stale_floor(const paged *p)
{
	return p->stale_lo < p->pool.nfree_ ? p->stale_lo : p->pool.nfree_;
}

/* Push id, which no table holds any more, on the free stack.  While lazy
 * its state word is left at 1 (see "lazy pushes" below). */
static inline void push_free(paged *p, uint32_t id)
{
	uint32_t top = p->pool.nfree_;
	if (p->lazy) {
		if (p->stale_lo > top)
			p->stale_lo = top;
		p->pool.state_[id] = 1;
	} else {
		p->pool.state_[id] = POOL | top;
	}
	p->pool.free_ids_[top] = id;
	p->pool.nfree_ = top + 1;
}

/* kvs_alloc_grow's inline path (alloc.c) declines while a block tail is
 * shared: a->grow_limit follows shared_tails. */
static void shared_tails_changed(paged *p)
{
	kvs_alloc *a = p->a;
	a->grow_limit = a->fast == p && p->shared_tails == 0
			? a->cfg.max_model_len : 0;
}

/* Another table now holds id, whose fill is `fill` (id not idle). */
static inline void ref_inc(paged *p, uint32_t id, uint32_t fill)
{
	uint32_t *st = &p->pool.state_[id];
	uint32_t ref = *st & MAX_REF;
	if (ref >= 1) {
		p->dup_tok += fill;
		if (fill < p->bs && ref == 1 && p->shared_tails++ == 0)
			shared_tails_changed(p);
	}
	++*st;                       /* callers keep ref below MAX_REF */
}

/* One table less holds id. */
static inline void ref_dec(paged *p, uint32_t id, uint32_t fill)
{
	uint32_t *st = &p->pool.state_[id];
	uint32_t ref = *st & MAX_REF;
	if (ref >= 2) {
		p->dup_tok -= fill;
		if (fill < p->bs && ref == 2 && --p->shared_tails == 0)
			shared_tails_changed(p);
	}
	if (--*st & MAX_REF)
		return;
	if (*st & PB_HASHED)
		lru_append(p, id);
	else
		push_free(p, id);
}

/* Hash the blocks of s that became full while len went from old to s->len. */
static void register_full(paged *p, kvs_seq_rec *s, uint32_t old)
{
	uint32_t lo = (uint32_t)paged_block_of(p, old), hi = (uint32_t)paged_block_of(p, s->len);
	if (hi > s->nhashes)
		hi = s->nhashes;
	for (uint32_t i = lo; i < hi; i++) {
		uint32_t id = s->table[i];
		if (p->pool.state_[id] & PB_HASHED)
			continue;
		/* if the same content is cached elsewhere, id stays unhashed */
		ht_insert_new(p, id, s->hashes[i]);
	}
}

/* ---- init / fini ----------------------------------------------------------- */

static size_t vscratch_bytes(const paged *p);

/* Everything paged_init made (fields it did not reach are NULL). */
static void paged_free(paged *p)
{
	kvs_free(p->b);
	kvs_free(p->pool.state_);
	kvs_free(p->pool.free_ids_);
	kvs_free(p->ht);
	kvs_free(p->host_free);
	kvs_free(p);
}

static kvs_status paged_init(kvs_alloc *a)
{
	const kvs_alloc_config *c = &a->cfg;
	uint64_t bb, n;
	kvs_status pool_st = kvs_alloc_units(c, c->block_size, "block_size",
					     c->kv_bytes_per_token, "kv_bytes_per_token",
					     "block", &bb, &n);
	if (pool_st != KVS_OK)
		return pool_st;
	if (n > MAX_BLOCKS)
		return kvs_fail(KVS_ERR_LIMIT, "allocator: %llu blocks exceed "
				"the pool's limit of %u; raise block_size",
				(unsigned long long)n, MAX_BLOCKS);
	/* the per-block arrays below, and the host swap pool's: refused
	 * when they exceed the machine's memory (the allocations would
	 * succeed, the kernel overcommitting, and the first writes to them
	 * would have the process killed) */
	uint64_t hn0 = c->swap_bytes / bb < NONE ? c->swap_bytes / bb : NONE - 1;
	uint64_t meta = n * (sizeof(pblock) + 2 * sizeof(uint32_t) +
			     (c->enable_prefix_caching ? 2 * sizeof(uint32_t) : 0) +
			     (c->window_num ? sizeof(uint32_t) : 0)) +   /* the stash */
			hn0 * sizeof(uint32_t);
	uint64_t host = kvs_host_memory_bytes();
	if (host && meta > host)
		return kvs_fail(KVS_ERR_NOMEM, "allocator: %llu device blocks and %llu host "
				"swap blocks need %.1f GiB of host memory for their metadata, "
				"more than the %.1f GiB this machine has available; raise block_size",
				(unsigned long long)n, (unsigned long long)hn0,
				(double)meta / 1073741824.0, (double)host / 1073741824.0);
	paged *p = kvs_calloc(1, sizeof *p);
	if (!p)
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	p->pool.nblocks_ = (uint32_t)n;
	p->bs = c->block_size;
	unsigned shift;
	p->bs_pow2 = kvs_pow2_shift(p->bs, &shift);
	p->bs_shift = (uint8_t)shift;
	p->block_bytes = bb;
	p->leftover = c->budget_bytes - n * bb;
	p->watermark = (uint32_t)(c->watermark * (double)n);
	p->caching = c->enable_prefix_caching;
	p->a = a;
	p->b = kvs_calloc((size_t)n, sizeof *p->b);
	/* one spare entry each: slot n of the stack holds id n, whose state
	 * word stays 0 (kvs_block_pool_give1's first test reads them) */
	p->pool.state_ = kvs_calloc((size_t)n + 1, sizeof *p->pool.state_);
	p->pool.free_ids_ = kvs_reallocarray(NULL, (size_t)n + 1,
					     sizeof *p->pool.free_ids_);
	if (!p->b || !p->pool.state_ || !p->pool.free_ids_)
		goto nomem;
	/* free stack in id order: block 0 on top */
	for (uint32_t i = 0; i < p->pool.nblocks_; i++) {
		uint32_t id = p->pool.nblocks_ - 1 - i;
		p->b[i].prev = p->b[i].next = NONE;
		p->pool.free_ids_[i] = id;
		p->pool.state_[id] = POOL | i;
	}
	p->pool.free_ids_[n] = (uint32_t)n;
	p->pool.nfree_ = p->pool.nblocks_;
	p->lru_head = p->lru_tail = NONE;
	p->lazy = !p->caching;
	p->stale_lo = p->pool.nblocks_;
	if (p->caching) {
		p->ht_cap = 2 * n;
		p->ht = kvs_reallocarray(NULL, (size_t)p->ht_cap, sizeof *p->ht);
		if (!p->ht)
			goto nomem;
		memset(p->ht, 0xff, (size_t)p->ht_cap * sizeof *p->ht);
	}
	uint64_t hn = c->swap_bytes / bb;
	if (hn >= NONE)
		hn = NONE - 1;
	p->host_nblocks = p->host_nfree = (uint32_t)hn;
	if (hn) {
		p->host_free = kvs_reallocarray(NULL, (size_t)hn,
						sizeof *p->host_free);
		if (!p->host_free)
			goto nomem;
		for (uint32_t i = 0; i < hn; i++)
			p->host_free[i] = (uint32_t)hn - 1 - i;   /* 0 on top */
	}
	if (KVS_DEBUG >= 2 && !kvs_alloc_vscratch(a, vscratch_bytes(p)))
		goto nomem;
	if (c->window_num) {
		a->wstash = kvs_reallocarray(NULL, (size_t)n, sizeof *a->wstash);
		if (!a->wstash)
			goto nomem;
	}
	if (kvs_offload_configured(&c->offload)) {
		kvs_status st = kvs_offload_create(&c->offload, bb, &a->off);
		if (st != KVS_OK) {
			paged_free(p);
			return st;
		}
	}
	a->p = p;
	return KVS_OK;
nomem:
	paged_free(p);
	return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory for "
			"%llu blocks", (unsigned long long)n);
}

static void paged_fini(kvs_alloc *a)
{
	paged_free(P(a));
}

/* ---- windowed layers --------------------------------------------------------------
 * The blocks a sequence holds for its windowed layers (kvs_alloc_config.
 * window_*): per windowed layer group, the blocks a window straddles, at
 * most ceil((window - 1) / bs) + 1, or those of an aligned chunk, never
 * more than the blocks of the final length; window_num / window_den of
 * them per full-layer block.  Taken at admission (and by a forked child),
 * given back at release and swap-out, taken again at swap-in.  They hold
 * ref 1 and no hash, and count as full blocks of token states.
 */

static inline uint32_t window_blocks(const kvs_alloc *a, const paged *p, uint32_t final_len)
{
	const kvs_alloc_config *c = &a->cfg;
	if (KVS_LIKELY(!c->window_num))
		return 0;
	uint64_t w = c->window_tokens, bs = p->bs;
	uint64_t cap = c->window_chunked && w % bs == 0 ? w / bs : (w - 1 + bs - 1) / bs + 1;
	uint64_t held = paged_blocks_for(p, final_len);
	return kvs_window_units(c, held < cap ? held : cap);
}

/* n fresh blocks onto the window stash; the caller made sure they exist */
static void window_take(kvs_alloc *a, paged *p, kvs_seq_rec *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		a->wstash[a->win_sum++] = take(a, p);
	s->wunits = n;
}

static void window_give(kvs_alloc *a, paged *p, kvs_seq_rec *s)
{
	for (uint32_t i = 0; i < s->wunits; i++)
		push_free(p, a->wstash[--a->win_sum]);
	s->wunits = 0;
}

/* ---- admission ---------------------------------------------------------------- */

/* Prefix hits usable by d: full prompt blocks found in the cache, stopping
 * before the last prompt token (it must be computed to produce the next
 * token).  *idle receives how many of them are cached-idle; ids (may be
 * NULL) the hit blocks; *ops / *probes the lookups made and the index
 * slots they examined.  O(hits + 1) lookups.  Called through
 * prefix_hits, with caching on and hashes given. */
static uint32_t prefix_walk(const paged *p, const kvs_seq_desc *d,
			   uint32_t *idle, uint32_t *ids, uint64_t *ops,
			   uint64_t *probes)
{
	uint32_t nidle = 0, h = 0;
	uint32_t lim = (d->prompt_tokens - 1) / p->bs;
	if (lim > d->num_block_hashes)
		lim = d->num_block_hashes;
	for (; h < lim; h++) {
		uint32_t id = ht_find_n(p, d->block_hashes[h], probes);
		++*ops;
		if (id == NONE || ref_of(p, id) == MAX_REF)
			break;
		nidle += ref_of(p, id) == 0;
		if (ids)
			ids[h] = id;
	}
	*idle = nidle;
	return h;
}

/* prefix_walk's answer, and none without caching: tested inline, since
 * every admission asks. */
static inline uint32_t prefix_hits(const paged *p, const kvs_seq_desc *d,
				   uint32_t *idle, uint32_t *ids, uint64_t *ops,
				   uint64_t *probes)
{
	*ops = *probes = 0;
	if (p->caching && d->block_hashes && d->prompt_tokens > 0)
		return prefix_walk(p, d, idle, ids, ops, probes);
	*idle = 0;
	return 0;
}

static kvs_admit_verdict paged_can_admit(const kvs_alloc *a,
					 const kvs_seq_desc *d,
					 kvs_admit_reason *why)
{
	const paged *p = P(a);
	uint64_t final_len = (uint64_t)d->prompt_tokens + d->output_tokens;
	uint64_t win = window_blocks(a, p, (uint32_t)(final_len < UINT32_MAX ? final_len
										: UINT32_MAX));
	uint64_t nprompt = paged_blocks_for(p, d->prompt_tokens) + win;
	if (paged_blocks_for(p, final_len) + win > p->pool.nblocks_ ||
	    nprompt + p->watermark > p->pool.nblocks_) {
		*why = KVS_REASON_EXCEEDS_BUDGET;
		return KVS_ADMIT_NEVER;
	}
	uint32_t idle;
	uint64_t ops, probes;
	uint32_t hits = prefix_hits(p, d, &idle, NULL, &ops, &probes);
	uint64_t need = nprompt - hits + idle;
	uint64_t avail = (uint64_t)p->pool.nfree_ + p->nidle;
	if (need > avail) {
		*why = KVS_REASON_NO_FREE_BLOCKS;
		return KVS_ADMIT_LATER;
	}
	if (avail - need < p->watermark) {
		*why = KVS_REASON_WATERMARK;
		return KVS_ADMIT_LATER;
	}
	*why = KVS_REASON_NONE;
	return KVS_ADMIT_NOW;
}

static kvs_status paged_admit(kvs_alloc *a, kvs_seq_rec *s,
			      const kvs_seq_desc *d, uint32_t *cached)
{
	paged *p = P(a);
	uint32_t nprompt = (uint32_t)paged_blocks_for(p, d->prompt_tokens);
	uint32_t nh = 0;
	if (p->caching && d->block_hashes) {
		nh = (uint32_t)paged_block_of(p, d->prompt_tokens);
		if (nh > d->num_block_hashes)
			nh = d->num_block_hashes;
	}
	kvs_status st = kvs_alloc_grow_u32(a, &s->table, &s->table_cap, nprompt);
	if (st == KVS_OK)
		st = kvs_alloc_grow_u64(a, &s->hashes, &s->hashes_cap, nh);
	if (st != KVS_OK)
		return st;
	uint32_t idle;
	uint64_t ops, probes;
	/* the hit blocks land in the table (nprompt > hits entries) */
	uint32_t hits = prefix_hits(p, d, &idle, s->table, &ops, &probes);
	a->stats.prefix_index_ops += ops;
	a->stats.prefix_index_probes += probes;
	/* where the device hit ends, the offload tiers may go on: those
	 * blocks are loaded back into fresh blocks (offload.c) */
	uint32_t loaded = 0;
	if (KVS_UNLIKELY(a->off != NULL) && d->block_hashes && d->prompt_tokens > 0) {
		uint32_t lim = (d->prompt_tokens - 1) / p->bs;
		if (lim > d->num_block_hashes)
			lim = d->num_block_hashes;
		if (lim > hits)
			loaded = kvs_offload_match(a->off, d->block_hashes + hits,
						   lim - hits);
	}
	/* cached blocks first, so fresh allocations cannot evict them */
	for (uint32_t i = 0; i < hits; i++) {
		uint32_t id = s->table[i];
		if (ref_of(p, id) == 0)
			lru_unlink(p, id);
		ref_inc(p, id, p->bs);
	}
	if (KVS_LIKELY(nprompt - hits <= p->pool.nfree_)) {
		/* straight off the free stack, no eviction possible; the
		 * blocks above the stale floor say 1 already */
		uint32_t *fs = p->pool.free_ids_, *st_ = p->pool.state_;
		uint32_t top = p->pool.nfree_;
		uint32_t k = nprompt - hits, nstale = top - stale_floor(p);
		if (k > nstale)
			k = nstale;
		copy_reversed(s->table + hits, fs + top - k, k);
		top -= k;
		for (uint32_t i = hits + k; i < nprompt; i++) {
			uint32_t id = fs[--top];
			st_[id] = 1;
			s->table[i] = id;
		}
		p->pool.nfree_ = top;
	} else {
		for (uint32_t i = hits; i < nprompt; i++)
			s->table[i] = take(a, p);
	}
	s->nblocks = nprompt;
	if (KVS_UNLIKELY(a->cfg.window_num))
		window_take(a, p, s, window_blocks(a, p, s->final_len));
	if (nh)
		memcpy(s->hashes, d->block_hashes, (size_t)nh * sizeof(uint64_t));
	s->nhashes = nh;
	/* loaded blocks are full and cached again (unless the same content
	 * is cached elsewhere, as register_full) */
	for (uint32_t i = hits; i < hits + loaded; i++)
		ht_insert_new(p, s->table[i], d->block_hashes[i]);
	hits += loaded;
	s->len = hits * p->bs;
	a->tok_sum += s->len;
	kvs_seq_set_res(a, s, (uint64_t)nprompt * p->bs);
	if (p->caching) {
		a->stats.prefix_hit_blocks += hits;
		a->stats.prefix_miss_blocks += nprompt - hits;
		a->stats.prefix_hit_tokens += s->len;
		a->stats.prefix_miss_tokens += d->prompt_tokens - s->len;
	}
	*cached = s->len;
	return KVS_OK;
}

/* ---- grow ---------------------------------------------------------------------- */

static __attribute__((noinline)) kvs_status
grow_slow(kvs_alloc *a, paged *p, kvs_seq_rec *s, uint32_t n,
	  const kvs_block_copy **copies, size_t *ncopies)
{
	uint32_t bs = p->bs;
	uint32_t len = s->len, newlen = len + n;  /* <= max_model_len */
	uint64_t cap = (uint64_t)s->nblocks * bs;
	/* blocks written by this step that others also hold: copy first */
	uint32_t ncow = 0;
	if (p->shared_tails && len < cap) {
		uint32_t last = (uint32_t)(((newlen < cap ? newlen : cap) - 1) / bs);
		for (uint32_t i = len / bs; i <= last; i++)
			ncow += ref_of(p, s->table[i]) > 1;
	}
	uint32_t want = (uint32_t)paged_blocks_for(p, newlen);
	uint32_t fresh = want > s->nblocks ? want - s->nblocks : 0;
	if ((uint64_t)ncow + fresh > (uint64_t)p->pool.nfree_ + p->nidle)
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: not enough free blocks to grow the sequence");
	kvs_status st = kvs_alloc_grow_u32(a, &s->table, &s->table_cap, s->nblocks + fresh);
	if (st == KVS_OK && ncow)
		st = kvs_alloc_reserve_copies(a, ncow);
	if (st != KVS_OK)
		return st;
	size_t nc = 0;
	if (ncow) {
		uint32_t last = (uint32_t)(((newlen < cap ? newlen : cap) - 1) / bs);
		for (uint32_t i = len / bs; i <= last; i++) {
			uint32_t old = s->table[i];
			if (ref_of(p, old) <= 1)
				continue;
			uint32_t f = fill_of(bs, i, len);
			uint32_t nb = take(a, p);
			ref_dec(p, old, f);
			s->table[i] = nb;
			if (f) {
				a->copies[nc++] = (kvs_block_copy){ old, nb };
				a->stats.cow_copies++;
				a->stats.copy_bytes += p->block_bytes;
			}
		}
	}
	kvs_block_id *t = s->table + s->nblocks;
	if (KVS_LIKELY(fresh <= p->pool.nfree_)) {
		/* straight off the free stack, no eviction possible */
		uint32_t *fs = p->pool.free_ids_, *st_ = p->pool.state_;
		uint32_t top = p->pool.nfree_;
		for (uint32_t i = 0; i < fresh; i++) {
			uint32_t id = fs[--top];
			st_[id] = 1;
			t[i] = id;
		}
		p->pool.nfree_ = top;
	} else {
		for (uint32_t i = 0; i < fresh; i++)
			t[i] = take(a, p);
	}
	s->nblocks += fresh;
	s->len = newlen;
	a->tok_sum += n;
	kvs_seq_set_res(a, s, (uint64_t)s->nblocks * bs);
	if (p->caching)
		register_full(p, s, len);
	if (copies)
		*copies = nc ? a->copies : NULL;
	if (ncopies)
		*ncopies = nc;
	return KVS_OK;
}

/* Hot path: nothing shared, and at most one new block that the free stack
 * holds and the table has room for (a decode step, or a grow that crosses
 * one block boundary): a few adds, one pop, no division.  Anything else
 * (copy-on-write, several blocks, eviction, a table to enlarge) takes
 * grow_slow, which does the same for those cases. */
kvs_status kvs_paged_grow(kvs_alloc *a, kvs_seq_rec *s, uint32_t n,
			  const kvs_block_copy **copies, size_t *ncopies)
{
	paged *p = P(a);
	uint32_t len = s->len, newlen = len + n;
	uint32_t nb = s->nblocks;
	uint64_t cap = (uint64_t)nb * p->bs;
	if (KVS_UNLIKELY(p->shared_tails))
		return grow_slow(a, p, s, n, copies, ncopies);
	if (newlen > cap) {
		uint32_t top = p->pool.nfree_;
		if (KVS_UNLIKELY(newlen > cap + p->bs || top == 0 ||
				 nb >= s->table_cap))
			return grow_slow(a, p, s, n, copies, ncopies);
		uint32_t id = p->pool.free_ids_[top - 1];
		p->pool.nfree_ = top - 1;
		p->pool.state_[id] = 1;
		s->table[nb] = id;
		s->nblocks = nb + 1;
		cap += p->bs;
	}
	s->len = newlen;
	a->tok_sum += n;
	kvs_seq_set_res(a, s, cap);
	if (p->caching)
		register_full(p, s, len);
	if (copies)
		*copies = NULL;
	if (ncopies)
		*ncopies = 0;
	return KVS_OK;
}

static uint32_t paged_room(const kvs_alloc *a, const kvs_seq_rec *s)
{
	const paged *p = P(a);
	uint32_t i = s->nblocks;
	if (p->shared_tails) {
		/* writing into a shared block copies it first */
		for (i = s->len / p->bs; i < s->nblocks; i++)
			if (ref_of(p, s->table[i]) > 1)
				break;
	}
	uint64_t lim = (uint64_t)i * p->bs;
	return lim > s->len ? (uint32_t)(lim - s->len) : 0;
}

/* ---- release / fork ---------------------------------------------------------- */

static void drop_device_blocks(kvs_alloc *a, paged *p, kvs_seq_rec *s)
{
	if (KVS_LIKELY(p->dup_tok == 0 && p->shared_tails == 0)) {
		/* No block held by two tables (a shared block is either full,
		 * counted in dup_tok, or not, counted in shared_tails), so
		 * every block of s has ref 1 and goes back: unhashed ones
		 * to the free stack, hashed ones to the LRU tail. */
		uint32_t *fs = p->pool.free_ids_, *st = p->pool.state_;
		uint32_t top = p->pool.nfree_;
		if (p->lazy) {
			/* every block has state 1, which a lazy push keeps:
			 * the table is copied onto the stack, last block first,
			 * and no state word is touched */
			if (p->stale_lo > top)
				p->stale_lo = top;
			copy_reversed(fs + top, s->table, s->nblocks);
			p->pool.nfree_ = top + s->nblocks;
			goto done;
		}
		if (!p->caching && KVS_DEBUG < 2) {
			/* nothing is hashed: every block has state 1 and
			 * goes to the free stack (stores only: no load of a
			 * state word that is likely a cache miss) */
			for (uint32_t i = s->nblocks; i-- > 0;) {
				uint32_t id = s->table[i];
				st[id] = POOL | top;
				fs[top++] = id;
			}
			p->pool.nfree_ = top;
			goto done;
		}
		for (uint32_t i = s->nblocks; i-- > 0;) {
			uint32_t id = s->table[i];
			if (KVS_LIKELY(st[id] == 1)) {
				st[id] = POOL | top;
				fs[top++] = id;
			} else {
				if (KVS_DEBUG >= 1)
					kvs_require(st[id] == (PB_HASHED | 1u));
				st[id] = PB_HASHED;   /* ref 1 -> 0, stays hashed */
				lru_append(p, id);
			}
		}
		p->pool.nfree_ = top;
	} else {
		for (uint32_t i = s->nblocks; i-- > 0;)
			ref_dec(p, s->table[i], fill_of(p->bs, i, s->len));
	}
done:
	a->tok_sum -= s->len;
	a->res_sum -= s->res;
	s->res = 0;
}

static void paged_release(kvs_alloc *a, kvs_seq_rec *s)
{
	paged *p = P(a);
	if (s->state == KVS_SEQ_RESIDENT) {
		drop_device_blocks(a, p, s);
		if (KVS_UNLIKELY(s->wunits))
			window_give(a, p, s);
	} else {
		for (uint32_t i = s->nblocks; i-- > 0;)
			p->host_free[p->host_nfree++] = s->table[i];
	}
	s->nblocks = 0;
}

static kvs_status paged_fork(kvs_alloc *a, kvs_seq_rec *par, kvs_seq_rec *c)
{
	paged *p = P(a);
	kvs_status st = kvs_alloc_grow_u32(a, &c->table, &c->table_cap, par->nblocks);
	if (st == KVS_OK)
		st = kvs_alloc_grow_u64(a, &c->hashes, &c->hashes_cap, par->nhashes);
	if (st != KVS_OK)
		return st;
	for (uint32_t i = 0; i < par->nblocks; i++)
		if (ref_of(p, par->table[i]) == MAX_REF)
			return kvs_fail(KVS_ERR_LIMIT, "allocator: fork: block %u "
					"is shared by %u sequences already",
					par->table[i], MAX_REF);
	uint32_t win = window_blocks(a, p, c->final_len);
	if (win > (uint64_t)p->pool.nfree_ + p->nidle)
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: fork: no free blocks "
				       "for the child's windowed layers");
	window_take(a, p, c, win);
	for (uint32_t i = 0; i < par->nblocks; i++) {
		ref_inc(p, par->table[i], fill_of(p->bs, i, par->len));
		c->table[i] = par->table[i];
	}
	c->nblocks = par->nblocks;
	if (par->nhashes)
		memcpy(c->hashes, par->hashes, par->nhashes * sizeof(uint64_t));
	c->nhashes = par->nhashes;
	c->len = par->len;
	a->tok_sum += c->len;
	kvs_seq_set_res(a, c, (uint64_t)c->nblocks * p->bs);
	/* the full layers' blocks are shared; the windowed ones are copied */
	a->stats.copy_bytes += kvs_window_copy_bytes(&a->cfg, par->len);
	return KVS_OK;
}

/* ---- swap ------------------------------------------------------------------------
 * Only blocks holding tokens travel: the empty blocks at the end of a table
 * (allocated for a prompt not yet prefilled) are dropped on swap-out and
 * allocated again by grow after swap-in.  Host blocks are never shared, so a
 * forked family swapped out one by one comes back unshared.
 */

/* Host blocks a swapped-out sequence of len tokens holds for its windowed
 * layers' last window (after its k full-attention blocks in its table). */
static inline uint32_t host_window_blocks(const kvs_alloc *a, const paged *p, uint32_t len)
{
	uint64_t b = kvs_window_copy_bytes(&a->cfg, len);
	return (uint32_t)((b + p->block_bytes - 1) / p->block_bytes);
}

static kvs_status paged_swap_out(kvs_alloc *a, kvs_seq_rec *s,
				 const kvs_block_copy **copies, size_t *ncopies)
{
	paged *p = P(a);
	uint32_t k = (uint32_t)paged_blocks_for(p, s->len);
	uint32_t hw = host_window_blocks(a, p, s->len);
	if ((uint64_t)k + hw > p->host_nfree)
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: swap_out: not enough free host blocks");
	kvs_status st = kvs_alloc_reserve_copies(a, k);
	if (st == KVS_OK && hw)
		st = kvs_alloc_grow_u32(a, &s->table, &s->table_cap, k + hw);
	if (st != KVS_OK)
		return st;
	for (uint32_t i = 0; i < k; i++)
		a->copies[i] = (kvs_block_copy){ s->table[i],
						 p->host_free[--p->host_nfree] };
	drop_device_blocks(a, p, s);
	if (KVS_UNLIKELY(s->wunits))
		window_give(a, p, s);
	for (uint32_t i = 0; i < k; i++)
		s->table[i] = a->copies[i].dst;
	for (uint32_t i = 0; i < hw; i++)   /* room for the windowed KV */
		s->table[k + i] = p->host_free[--p->host_nfree];
	s->nblocks = k + hw;
	s->state = KVS_SEQ_SWAPPED;
	a->stats.swap_out_blocks += k;
	/* the windowed layers' last window goes out with the blocks (their
	 * blocks are given back and taken again at swap-in) */
	a->stats.swap_out_bytes += k * p->block_bytes + kvs_window_copy_bytes(&a->cfg, s->len);
	if (copies)
		*copies = k ? a->copies : NULL;
	if (ncopies)
		*ncopies = k;
	return KVS_OK;
}

uint64_t kvs_paged_swap_in_blocks(const kvs_alloc *a, const kvs_seq_rec *s)
{
	const paged *p = P(a);
	return (uint64_t)s->nblocks - host_window_blocks(a, p, s->len) +
	       window_blocks(a, p, s->final_len);
}

static bool paged_can_swap_in(const kvs_alloc *a, const kvs_seq_rec *s)
{
	const paged *p = P(a);
	uint64_t avail = (uint64_t)p->pool.nfree_ + p->nidle;
	uint64_t need = kvs_paged_swap_in_blocks(a, s);
	return need <= avail && avail - need >= p->watermark;
}

static kvs_status paged_swap_in(kvs_alloc *a, kvs_seq_rec *s,
				const kvs_block_copy **copies, size_t *ncopies)
{
	paged *p = P(a);
	if (!paged_can_swap_in(a, s))
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: swap_in: the sequence's blocks do not fit above the watermark");
	uint32_t hw = host_window_blocks(a, p, s->len);
	uint32_t k = s->nblocks - hw;
	kvs_status st = kvs_alloc_reserve_copies(a, k);
	if (st != KVS_OK)
		return st;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t d = take(a, p);
		a->copies[i] = (kvs_block_copy){ s->table[i], d };
		p->host_free[p->host_nfree++] = s->table[i];
		s->table[i] = d;
	}
	for (uint32_t i = 0; i < hw; i++)
		p->host_free[p->host_nfree++] = s->table[k + i];
	s->nblocks = k;
	s->state = KVS_SEQ_RESIDENT;
	if (KVS_UNLIKELY(a->cfg.window_num))
		window_take(a, p, s, window_blocks(a, p, s->final_len));
	a->tok_sum += s->len;
	kvs_seq_set_res(a, s, (uint64_t)k * p->bs);
	if (p->caching)
		register_full(p, s, 0);
	a->stats.swap_in_blocks += k;
	a->stats.swap_in_bytes += k * p->block_bytes + kvs_window_copy_bytes(&a->cfg, s->len);
	if (copies)
		*copies = k ? a->copies : NULL;
	if (ncopies)
		*ncopies = k;
	return KVS_OK;
}

/* ---- accounting ----------------------------------------------------------------- */

/* Reservation of the unwritten slots of logical block i for one holder. */
static inline uint32_t block_res(uint32_t bs, uint32_t i, uint32_t len,
				 uint32_t final_len)
{
	uint64_t lo = (uint64_t)i * bs + fill_of(bs, i, len);
	uint64_t hi = (uint64_t)(i + 1) * bs;
	if (final_len <= lo)
		return 0;
	return (uint32_t)((final_len < hi ? final_len : hi) - lo);
}

/* Reservation counted more than once because several holders share a
 * non-full block: per block, sum over holders minus the largest claim.
 * Uses the link fields of owned blocks (unused while owned) as scratch. */
static __attribute__((noinline)) uint64_t shared_res_excess(const kvs_alloc *a)
{
	paged *p = P(a);
	uint32_t bs = p->bs;
	uint64_t excess = 0;
	for (int pass = 0; pass < 3; pass++) {
		for (uint32_t r = 0; r < a->nrecs; r++) {
			const kvs_seq_rec *s = &a->recs[r];
			if (s->state != KVS_SEQ_RESIDENT)
				continue;
			for (uint32_t i = s->len / bs; i < s->nblocks; i++) {
				if (ref_of(p, s->table[i]) < 2)
					continue;
				pblock *b = &p->b[s->table[i]];
				uint32_t v = block_res(bs, i, s->len, s->final_len);
				if (pass == 0) {
					b->prev = 0;     /* largest claim */
					b->next = 0;     /* sum of claims */
				} else if (pass == 1) {
					if (v > b->prev)
						b->prev = v;
					b->next += v;
				} else if (b->next != NONE) {
					excess += b->next - b->prev;
					b->next = NONE;
				}
			}
		}
	}
	return excess;
}

static void paged_account(const kvs_alloc *a, const kvs_seq_desc *next,
			  kvs_mem_parts *out)
{
	const paged *p = P(a);
	uint64_t B = a->cfg.kv_bytes_per_token;
	uint64_t owned = (uint64_t)p->pool.nblocks_ - p->pool.nfree_ - p->nidle;
	uint64_t tok = a->tok_sum - p->dup_tok + a->win_sum * p->bs;
	uint64_t res = a->res_sum;
	if (p->shared_tails)
		res -= shared_res_excess(a);
	out->token_states = tok * B;
	out->reservation = res * B;
	out->internal_frag = owned * p->block_bytes - (tok + res) * B + p->leftover;
	out->external_frag = 0;
	out->cached_idle = (uint64_t)p->nidle * p->block_bytes;
	out->free = (uint64_t)p->pool.nfree_ * p->block_bytes;
	(void)next;
}

/* ---- validation ----------------------------------------------------------------- */

enum { V_NONE = 0, V_FREE, V_IDLE };

/* The validator's per-block scratch: 13 bytes per device block, 1 per host
 * block (kvs_alloc_vscratch; made by paged_init with debug_checks >= 2). */
static size_t vscratch_bytes(const paged *p)
{
	return (size_t)p->pool.nblocks_ * (3 * sizeof(uint32_t) + 1) + p->host_nblocks + 1;
}

static bool paged_is_valid(const kvs_alloc *a)
{
	const paged *p = P(a);
	uint32_t n = p->pool.nblocks_, bs = p->bs;
	void *vs = kvs_alloc_vscratch(a, vscratch_bytes(p));
	KVS_VALID(vs != NULL);   /* only without debug_checks >= 2 */
	uint32_t *refs = vs;
	uint32_t *fill = refs + n;
	uint32_t *resmax = fill + n;
	uint8_t *mark = (uint8_t *)(resmax + n);
	uint8_t *hmark = mark + n;
	memset(vs, 0, vscratch_bytes(p));
	KVS_VALID(!a->off || kvs_offload_is_valid(a->off));
	/* free stack */
	KVS_VALID(p->pool.nfree_ <= n);
	KVS_VALID(p->pool.free_ids_[n] == n && p->pool.state_[n] == 0);  /* spare */
	for (uint32_t k = p->pool.nfree_; k < n; k++)   /* read by give1's first test */
		KVS_VALID(p->pool.free_ids_[k] < n);
	KVS_VALID(p->lazy || p->stale_lo == n);         /* eager: nothing stale */
	KVS_VALID(!p->lazy || !p->caching);
	uint32_t stale = stale_floor(p);
	for (uint32_t k = 0; k < p->pool.nfree_; k++) {
		uint32_t id = p->pool.free_ids_[k];
		KVS_VALID(id < n);
		KVS_VALID(!mark[id]);                       /* on the stack once */
		mark[id] = V_FREE;
		if (k >= stale) {
			KVS_VALID(p->pool.state_[id] == 1);  /* a lazy push's */
			continue;
		}
		KVS_VALID(p->pool.state_[id] == (POOL | k));
	}
	/* LRU, both directions */
	uint32_t cnt = 0;
	uint32_t prev = NONE;
	for (uint32_t id = p->lru_head; id != NONE; id = p->b[id].next) {
		KVS_VALID(id < n);
		KVS_VALID(!mark[id]);                       /* neither free nor twice */
		KVS_VALID(p->pool.state_[id] == PB_HASHED); /* idle: cached, no ref */
		KVS_VALID(p->b[id].prev == prev);
		mark[id] = V_IDLE;
		prev = id;
		KVS_VALID(++cnt <= n);                      /* no cycle */
	}
	KVS_VALID(cnt == p->nidle);
	KVS_VALID(prev == p->lru_tail);
	KVS_VALID(p->caching || p->nidle == 0);
	/* tables: reference counts, fills, reservation claims */
	uint64_t dup = 0;
	uint32_t host_used = 0;
	for (uint32_t r = 0; r < a->nrecs; r++) {
		const kvs_seq_rec *s = &a->recs[r];
		if (s->state == KVS_SEQ_UNUSED)
			continue;
		if (s->state == KVS_SEQ_SWAPPED) {
			/* its blocks, then room for its windowed KV */
			KVS_VALID(s->nblocks == kvs_div_ceil(s->len, bs) +
						host_window_blocks(a, p, s->len));
			for (uint32_t i = 0; i < s->nblocks; i++) {
				uint32_t h = s->table[i];
				KVS_VALID(h < p->host_nblocks);
				KVS_VALID(!hmark[h]);       /* one holder per host block */
				hmark[h] = 1;
				host_used++;
			}
			continue;
		}
		KVS_VALID((uint64_t)s->nblocks * bs >= s->len);
		KVS_VALID(s->res == kvs_seq_reserved((uint64_t)s->nblocks * bs, s->len,
						     s->final_len));
		for (uint32_t i = 0; i < s->nblocks; i++) {
			uint32_t id = s->table[i];
			KVS_VALID(id < n);
			KVS_VALID(mark[id] == V_NONE);      /* held: neither free nor idle */
			uint32_t f = fill_of(bs, i, s->len);
			uint32_t v = block_res(bs, i, s->len, s->final_len);
			/* holders agree on a shared block's fill */
			KVS_VALID(refs[id] == 0 || fill[id] == f);
			if (refs[id])
				dup += f;
			refs[id]++;
			fill[id] = f;
			if (v > resmax[id])
				resmax[id] = v;
			/* a cached block holds what its hash names */
			KVS_VALID(!(p->pool.state_[id] & PB_HASHED) || f == bs);
			KVS_VALID(!(p->pool.state_[id] & PB_HASHED) || i >= s->nhashes ||
				  s->hashes[i] == bhash(&p->b[id]));
		}
	}
	/* the window stash: blocks held by no table, ref 1, full, one per
	 * unit a resident sequence holds */
	uint64_t wunits = 0;
	for (uint32_t r = 0; r < a->nrecs; r++)
		if (a->recs[r].state == KVS_SEQ_RESIDENT) {
			/* the rule's count for its final length */
			KVS_VALID(a->recs[r].wunits == window_blocks(a, p, a->recs[r].final_len));
			wunits += a->recs[r].wunits;
		} else {
			KVS_VALID(a->recs[r].wunits == 0);
		}
	KVS_VALID(wunits == a->win_sum);
	KVS_VALID(a->win_sum == 0 || a->cfg.window_num);
	for (uint64_t k = 0; k < a->win_sum; k++) {
		uint32_t id = a->wstash[k];
		KVS_VALID(id < n);
		KVS_VALID(mark[id] == V_NONE && refs[id] == 0);
		KVS_VALID(p->pool.state_[id] == 1);
		refs[id] = 1;
		fill[id] = bs;
	}
	uint64_t tok = 0, res = 0, owned = 0;
	uint32_t tails = 0;
	for (uint32_t id = 0; id < n; id++) {
		if (mark[id] != V_NONE)
			continue;
		/* a pinned block (the pool's, off the stack) is in no table,
		 * has one implicit reference and is what give1 accepts */
		if (p->pool.state_[id] & POOL) {
			KVS_VALID(refs[id] == 0);
			KVS_VALID(pool_pinned(&p->pool, p->pool.nfree_, id));
		} else {
			KVS_VALID(ref_of(p, id) != 0);
			KVS_VALID(ref_of(p, id) == refs[id]);
		}
		owned++;
		tok += fill[id];
		res += resmax[id];
		tails += refs[id] >= 2 && fill[id] < bs;
	}
	KVS_VALID(dup == p->dup_tok);
	KVS_VALID(tails == p->shared_tails);
	/* prefix index: exactly the hashed blocks, each reachable */
	uint32_t hashed = 0;
	for (uint32_t id = 0; id < n; id++)
		hashed += (p->pool.state_[id] & PB_HASHED) != 0;
	KVS_VALID(hashed == p->nhashed);
	KVS_VALID(p->caching || hashed == 0);
	if (p->caching) {
		uint64_t entries = 0;
		for (uint64_t i = 0; i < p->ht_cap; i++) {
			uint32_t id = p->ht[i];
			if (id == NONE)
				continue;
			entries++;
			KVS_VALID(id < n);
			KVS_VALID(p->pool.state_[id] & PB_HASHED);
			KVS_VALID(ht_find(p, bhash(&p->b[id])) == id);
		}
		KVS_VALID(entries == hashed);
	}
	/* host pool */
	KVS_VALID(host_used + p->host_nfree == p->host_nblocks);
	for (uint32_t i = 0; i < p->host_nfree; i++) {
		uint32_t h = p->host_free[i];
		KVS_VALID(h < p->host_nblocks);
		KVS_VALID(!hmark[h]);                       /* free xor held, once */
		hmark[h] = 1;
	}
	/* the incremental accounting equals the one recomputed from scratch */
	kvs_mem_parts m;
	paged_account(a, NULL, &m);
	uint64_t B = a->cfg.kv_bytes_per_token;
	KVS_VALID(m.token_states == tok * B);
	KVS_VALID(m.reservation == res * B);
	KVS_VALID(m.cached_idle == (uint64_t)p->nidle * p->block_bytes);
	KVS_VALID(m.free == (uint64_t)p->pool.nfree_ * p->block_bytes);
	KVS_VALID(m.internal_frag == owned * p->block_bytes - (tok + res) * B + p->leftover);
	return true;
}

/* ---- views ------------------------------------------------------------------------ */

static uint64_t paged_num_units(const kvs_alloc *a)
{
	return P(a)->pool.nblocks_;
}

static uint64_t paged_free_units(const kvs_alloc *a)
{
	return (uint64_t)P(a)->pool.nfree_ + P(a)->nidle;
}

static uint64_t paged_metadata_bytes(const kvs_alloc *a)
{
	const paged *p = P(a);
	return (uint64_t)p->pool.nblocks_ * (sizeof(pblock) + 2 * sizeof(uint32_t) +
					     (a->wstash ? sizeof(uint32_t) : 0)) +
	       p->ht_cap * sizeof(uint32_t) +
	       (uint64_t)p->host_nblocks * sizeof(uint32_t) + sizeof *p;
}

/* ---- raw pool access ------------------------------------------------------------
 * Pinned blocks (state word POOL | any position, off the free stack) are
 * owned outside any table.  take1 / give1 are inline in kvsim/alloc.h;
 * what they cannot do on their own is here.
 */


static inline paged *pool_paged(kvs_block_pool *pool)
{
	return (paged *)(void *)pool;     /* pool is paged's first member */
}

/* The caller may now push and pop through the inline take1 / give1, which
 * know nothing of stale state words: give every free block its exact
 * state word, and push that way from now on.  O(stale blocks), once. */
static void pool_make_eager(paged *p)
{
	uint32_t *fs = p->pool.free_ids_, *st = p->pool.state_;
	for (uint32_t k = stale_floor(p); k < p->pool.nfree_; k++)
		st[fs[k]] = POOL | k;
	p->lazy = false;
	p->stale_lo = p->pool.nblocks_;
}

kvs_block_pool *kvs_alloc_block_pool(kvs_alloc *a)
{
	if (a->m != &kvs_paged_methods) {
		kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has no "
			 "block pool", kvs_policy_name(a->cfg.policy));
		return NULL;
	}
	if (P(a)->lazy)
		pool_make_eager(P(a));
	return &P(a)->pool;
}

/* The free stack is empty: evict the least recently released cached-idle
 * block, or report exhaustion. */
__attribute__((noinline)) kvs_block_id
kvs_block_pool_take_slow(kvs_block_pool *pool)
{
	paged *p = pool_paged(pool);
	if (pool->nfree_)
		return kvs_block_pool_take1(pool);
	if (p->nidle == 0) {
		kvs_fail_static(KVS_ERR_NOSPACE, "allocator: no free block in the pool");
		return NONE;
	}
	uint32_t id = evict(p->a, p);
	pool->state_[id] = POOL;     /* position 0: off the stack all the same */
	return id;
}

__attribute__((noinline, cold)) kvs_status
kvs_block_pool_give_fail(kvs_block_pool *pool, kvs_block_id id)
{
	(void)pool;
	return kvs_fail(KVS_ERR_STATE, "allocator: block %u was not taken "
			"(or is given twice)", id);
}

kvs_status kvs_alloc_blocks_take(kvs_alloc *a, uint32_t n, kvs_block_id *ids)
{
	if (a->m != &kvs_paged_methods)
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has "
				"no block pool", kvs_policy_name(a->cfg.policy));
	paged *p = P(a);
	kvs_block_pool *pool = &p->pool;
	if (n > pool->nfree_ + p->nidle)
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: not enough free blocks for the request");
	/* all or nothing: n blocks are there.  Straight off the stack (the
	 * state words already say POOL, except the stale ones above the
	 * floor, which get theirs), then the rest by eviction. */
	uint32_t top = pool->nfree_, lo = stale_floor(p);
	uint32_t k = n < top ? n : top;        /* off the stack */
	uint32_t ks = top - lo < k ? top - lo : k;  /* of which stale */
	const uint32_t *fs = pool->free_ids_;
	uint32_t *st = pool->state_;
	for (uint32_t i = 0; i < ks; i++) {
		uint32_t pos = top - 1 - i, id = fs[pos];
		st[id] = POOL | pos;
		ids[i] = id;
	}
	if (k > ks)
		copy_reversed(ids + ks, fs + top - k, k - ks);
	pool->nfree_ = top - k;
	for (uint32_t i = k; i < n; i++)
		ids[i] = kvs_block_pool_take_slow(pool);
	return KVS_OK;
}

/* The engine's owed blocks skip the state words' marks (allocator/owed.h):
 * unpinned, without debug_checks >= 2, from a lazy paged pool */
static inline bool owed_unmarked(const kvs_alloc *a, bool pin)
{
	return !pin && KVS_DEBUG < 2 && a->m == &kvs_paged_methods && P(a)->lazy;
}

kvs_status kvs_alloc_blocks_take_owed(kvs_alloc *a, uint32_t n, kvs_block_id *ids, bool pin)
{
	if (!owed_unmarked(a, pin) || n > P(a)->pool.nfree_)
		return kvs_alloc_blocks_take(a, n, ids);
	paged *p = P(a);
	kvs_block_pool *pool = &p->pool;
	uint32_t top = pool->nfree_;
	/* off the stack, each holding a table's state word 1: those a lazy
	 * release left (at or above the stale floor) as they are, the rest
	 * (exact words, below it) written now, so that kvs_alloc_grow_owed
	 * touches no state word */
	const uint32_t *fs = pool->free_ids_;
	uint32_t lo = stale_floor(p);
	for (uint32_t k = top - n; k < lo; k++)
		pool->state_[fs[k]] = 1;
	copy_reversed(ids, fs + top - n, n);
	pool->nfree_ = top - n;
	return KVS_OK;
}

/* Each of the n ids's state becomes 1 (a table's, and the word a lazy
 * push leaves); with push, each also goes on the free stack.  With check,
 * each must be taken (pinned), once: a second occurrence in the list
 * fails the test, and on a failure the ids before it get their pinned
 * state back (positions at or above the top, which the top has not
 * passed) and nothing else changed.  Without (the engine's owed blocks,
 * allocator/owed.h), no word is read. */
static inline kvs_status to_state1(kvs_block_pool *pool, uint32_t n,
				   const kvs_block_id *ids, bool push, bool check)
{
	uint32_t top = pool->nfree_, top0 = top;
	uint32_t *fs = pool->free_ids_, *st = pool->state_;
	if (!check) {   /* its own loop: the compiler keeps one with the test */
		for (uint32_t i = 0; i < n; i++) {
			st[ids[i]] = 1;
			if (push)
				fs[top++] = ids[i];
		}
		pool->nfree_ = top;
		return KVS_OK;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = ids[i];
		if (KVS_UNLIKELY(!pool_pinned(pool, top, id))) {
			for (uint32_t j = 0; j < i; j++)
				st[ids[j]] = POOL | (top0 + j);
			return kvs_block_pool_give_fail(pool, id);
		}
		st[id] = 1;
		if (push)
			fs[top++] = id;
	}
	pool->nfree_ = top;
	return KVS_OK;
}

/* A lazy pool's give: state 1, as a table's, left as it is (check as
 * to_state1's) */
static inline kvs_status give_lazy(paged *p, uint32_t n, const kvs_block_id *ids, bool check)
{
	uint32_t top0 = p->pool.nfree_;
	kvs_status rc = to_state1(&p->pool, n, ids, true, check);
	if (rc == KVS_OK && n && p->stale_lo > top0)
		p->stale_lo = top0;
	return rc;
}

kvs_status kvs_alloc_blocks_give(kvs_alloc *a, uint32_t n,
				 const kvs_block_id *ids)
{
	if (a->m != &kvs_paged_methods)
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has "
				"no block pool", kvs_policy_name(a->cfg.policy));
	paged *p = P(a);
	kvs_block_pool *pool = &p->pool;
	/* one pass with the top in a local: a bad id (not taken, or given
	 * twice, also within the list) abandons the pass before the top is
	 * stored, and the blocks pushed so far, whose positions lie at or
	 * above the old top, read as pinned again: no change */
	if (p->lazy)
		return give_lazy(p, n, ids, true);
	uint32_t top = pool->nfree_;
	uint32_t *fs = pool->free_ids_, *st = pool->state_;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = ids[i];
		if (KVS_UNLIKELY(!pool_pinned(pool, top, id)))
			return kvs_block_pool_give_fail(pool, id);
		st[id] = POOL | top;
		fs[top++] = id;
	}
	pool->nfree_ = top;
	return KVS_OK;
}

/* kvs_alloc_grow_taken; check: test that each id is pinned (once);
 * marked: each id holds state 1 already (kvs_alloc_blocks_take_owed's
 * fast case), nothing to write */
/* The case grow_taken hands ids straight to a table: s resident, nothing
 * shared (no copy-on-write), exactly m new blocks for its n tokens, a
 * table with room for them. */
static inline bool taken_fits(const kvs_alloc *a, const paged *p, const kvs_seq_rec *s,
			      uint32_t n, uint32_t m)
{
	return s && s->state == KVS_SEQ_RESIDENT && !p->shared_tails &&
	       (uint64_t)s->len + n <= a->cfg.max_model_len &&
	       paged_blocks_for(p, (uint64_t)s->len + n) == (uint64_t)s->nblocks + m &&
	       s->nblocks + m <= s->table_cap;
}

static inline kvs_status grow_taken(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
				    uint32_t m, const kvs_block_id *ids, bool check,
				    bool marked)
{
	if (a->m != &kvs_paged_methods)
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has "
				"no block pool", kvs_policy_name(a->cfg.policy));
	paged *p = P(a);
	kvs_seq_rec *s = kvs_alloc_find(a, seq);
	uint32_t bs = p->bs;
	/* anything but the case the blocks are for is the give and the grow
	 * themselves */
	if (!taken_fits(a, p, s, n, m)) {
		/* unchecked, the ids may not be marked taken
		 * (kvs_alloc_blocks_take_owed): the lazy give without the test */
		kvs_status st = !check && p->lazy ? give_lazy(p, m, ids, false)
						  : kvs_alloc_blocks_give(a, m, ids);
		if (st == KVS_OK)
			st = kvs_alloc_grow(a, seq, n, NULL, NULL);
		return st;
	}
	/* each id taken (pinned), once: a table's now, state 1 */
	if (!marked) {
		kvs_status rc = to_state1(&p->pool, m, ids, false, check);
		if (rc != KVS_OK)
			return rc;
	}
	/* the order a give and a grow would leave: the last given on top,
	 * popped first */
	copy_reversed(s->table + s->nblocks, ids, m);
	uint32_t len = s->len;
	s->nblocks += m;
	s->len = len + n;
	a->tok_sum += n;
	kvs_seq_set_res(a, s, (uint64_t)s->nblocks * bs);
	if (p->caching)
		register_full(p, s, len);
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return KVS_OK;
}

kvs_status kvs_alloc_grow_taken(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
				uint32_t m, const kvs_block_id *ids)
{
	return grow_taken(a, seq, n, m, ids, true, false);
}

kvs_status kvs_alloc_grow_owed(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
			       uint32_t m, const kvs_block_id *ids, bool pin)
{
	/* unpinned from a lazy pool, the ids came from the take's fast case
	 * (its other case fails there: no cached-idle block to evict), and
	 * hold state 1 already; a pool made eager since gets the words again,
	 * harmlessly */
	return grow_taken(a, seq, n, m, ids, KVS_DEBUG >= 2, owed_unmarked(a, pin));
}

kvs_status kvs_alloc_release_owed(kvs_alloc *a, kvs_seq_id seq, uint32_t n,
				  uint32_t m, const kvs_block_id *ids, bool pin)
{
	kvs_seq_rec *s = a->m == &kvs_paged_methods ? kvs_alloc_find(a, seq) : NULL;
	paged *p = P(a);
	/* the case it is for: grow_taken's fast one, from a lazy pool (no
	 * prefix caching), no block in two tables, no windowed blocks;
	 * anything else is the two calls */
	if (!taken_fits(a, p, s, n, m) || !p->lazy || p->dup_tok || s->wunits) {
		kvs_status st = kvs_alloc_grow_owed(a, seq, n, m, ids, pin);
		return st == KVS_OK ? kvs_alloc_release(a, seq) : st;
	}
	if (!owed_unmarked(a, pin)) {
		kvs_status rc = to_state1(&p->pool, m, ids, false, KVS_DEBUG >= 2);
		if (rc != KVS_OK)
			return rc;
	}
	/* The grow would append the ids reversed (the last given popped
	 * first) and the lazy release push the table last entry first: the
	 * ids go on the stack in their order, state 1 kept, then the
	 * release's own drop pushes the table.  The account never saw the grow's n
	 * tokens; the table buffer keeps its capacity, which had room. */
	uint32_t top = p->pool.nfree_;
	if (p->stale_lo > top)
		p->stale_lo = top;
	memcpy(p->pool.free_ids_ + top, ids, (size_t)m * sizeof *ids);
	p->pool.nfree_ = top + m;
	drop_device_blocks(a, p, s);   /* paged_release's, no windowed blocks */
	s->nblocks = 0;
	kvs_alloc_forget(a, s);
	if (KVS_DEBUG >= 2)
		kvs_require(kvs_alloc_is_valid(a));
	return KVS_OK;
}

uint32_t kvs_alloc_prefix_lookup(const kvs_alloc *a, const uint64_t *hashes,
				 uint32_t n)
{
	if (a->m != &kvs_paged_methods || !P(a)->caching || !hashes)
		return 0;
	const paged *p = P(a);
	uint32_t i = 0;
	while (i < n && ht_find(p, hashes[i]) != NONE)
		i++;
	return i;
}

const kvs_alloc_methods kvs_paged_methods = {
	.name = "paged",
	.init = paged_init,
	.fini = paged_fini,
	.can_admit = paged_can_admit,
	.admit = paged_admit,
	.grow = kvs_paged_grow,
	.room = paged_room,
	.release = paged_release,
	.fork = paged_fork,
	.swap_out = paged_swap_out,
	.swap_in = paged_swap_in,
	.can_swap_in = paged_can_swap_in,
	.account = paged_account,
	.is_valid = paged_is_valid,
	.num_units = paged_num_units,
	.free_units = paged_free_units,
	.metadata_bytes = paged_metadata_bytes,
};
