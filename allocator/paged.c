/*
 * paged.c - the paged KV block allocator (vLLM PagedAttention style) with
 * prefix caching, copy-on-write fork, a host swap pool and a watermark.
 *
 * Memory picture (N blocks of block_size tokens each):
 *
 *   b[N]       pblock, 20 bytes: hash | ref:29 flags:3 | prev | next
 *   fstack[N]  free-id stack, 4 bytes per block
 *   ht[2N]     prefix index, 4 bytes per slot: block id or NONE (only with
 *              prefix caching), open addressing keyed by the block's hash
 *              (32 bytes per block in all with prefix caching, 24 without)
 *
 *   every block is exactly one of
 *     free         ref 0, no flags, on the free-id stack
 *     cached-idle  ref 0, hashed, on the LRU queue (prev/next; head = oldest)
 *     owned        ref >= 1 = number of block tables holding it
 *
 * Fresh blocks come off the free stack; only when it is empty is the LRU
 * head evicted (hash dropped).  Released blocks go to the free stack, or to
 * the LRU tail when hashed; a sequence frees its blocks last-first, so the
 * tail of a prefix is evicted before its root.  A prefix hit takes a cached
 * block back: off the LRU if idle, ref + 1 either way.
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

#include <string.h>

#define NONE KVS_BLOCK_NONE
#define PB_HASHED 1u
#define PB_PINNED 2u     /* taken through kvs_alloc_blocks_take */

/* 20 bytes: the hash is split so that the struct needs 4-byte alignment. */
typedef struct pblock {
	uint32_t hash_lo, hash_hi; /* chained prefix hash (when PB_HASHED) */
	uint32_t ref : 29;         /* block tables holding it (+1 if pinned) */
	uint32_t flags : 3;        /* PB_* */
	uint32_t prev, next;       /* LRU links (cached-idle blocks only) */
} pblock;

#define MAX_REF ((1u << 29) - 1)

static inline uint64_t bhash(const pblock *b)
{
	return (uint64_t)b->hash_hi << 32 | b->hash_lo;
}

static inline void set_bhash(pblock *b, uint64_t h)
{
	b->hash_lo = (uint32_t)h;
	b->hash_hi = (uint32_t)(h >> 32);
}

typedef struct paged {
	pblock *b;
	uint32_t nblocks;
	uint32_t bs;                 /* tokens per block */
	uint64_t block_bytes;
	uint64_t leftover;           /* budget bytes not in whole blocks */
	uint32_t watermark;          /* blocks */
	bool caching;

	uint32_t *fstack, nfree;     /* free-id stack: fstack[nfree - 1] on top */
	uint32_t lru_head, lru_tail, nidle;

	uint32_t *ht;                /* prefix index */
	uint64_t ht_cap;
	uint32_t nhashed;

	uint64_t dup_tok;            /* sum over owned of (ref - 1) * fill */
	uint32_t shared_tails;       /* non-full blocks with ref >= 2 */

	uint32_t npinned;            /* blocks taken outside any sequence */

	uint32_t *host_free;         /* host swap pool: free-id stack */
	uint32_t host_nblocks, host_nfree;
} paged;

static inline paged *P(const kvs_alloc *a)
{
	return (paged *)a->p;
}

static inline uint32_t fill_of(uint32_t bs, uint32_t i, uint32_t len)
{
	uint64_t start = (uint64_t)i * bs;
	if (len <= start)
		return 0;
	return len - start >= bs ? bs : (uint32_t)(len - start);
}

/* ---- prefix index ------------------------------------------------------------ */

static inline uint64_t ht_home(const paged *p, uint64_t h)
{
	return (uint64_t)(((__uint128_t)h * p->ht_cap) >> 64);
}

static inline uint64_t ht_next(const paged *p, uint64_t i)
{
	return i + 1 == p->ht_cap ? 0 : i + 1;
}

static inline uint32_t ht_find(const paged *p, uint64_t h)
{
	uint64_t i = ht_home(p, h);
	for (;;) {
		uint32_t id = p->ht[i];
		if (id == NONE || bhash(&p->b[id]) == h)
			return id;
		i = ht_next(p, i);
	}
}

static void ht_insert(paged *p, uint32_t id)
{
	uint64_t i = ht_home(p, bhash(&p->b[id]));
	while (p->ht[i] != NONE)
		i = ht_next(p, i);
	p->ht[i] = id;
	p->b[id].flags |= PB_HASHED;
	p->nhashed++;
}

static void ht_remove(paged *p, uint32_t id)
{
	uint64_t i = ht_home(p, bhash(&p->b[id]));
	while (p->ht[i] != id) {
		kvs_require(p->ht[i] != NONE);
		i = ht_next(p, i);
	}
	uint64_t j = i;
	for (;;) {
		j = ht_next(p, j);
		uint32_t e = p->ht[j];
		if (e == NONE)
			break;
		uint64_t k = ht_home(p, bhash(&p->b[e]));
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (stays)
			continue;
		p->ht[i] = e;
		i = j;
	}
	p->ht[i] = NONE;
	p->b[id].flags &= ~PB_HASHED;
	p->nhashed--;
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
	ht_remove(p, id);
	a->stats.evictions++;
	return id;
}

/* A fresh block with ref 1; the caller made sure one is available.
 * Cost: a stack pop (one unlikely branch to eviction). */
static inline uint32_t take(kvs_alloc *a, paged *p)
{
	uint32_t id;
	if (KVS_LIKELY(p->nfree))
		id = p->fstack[--p->nfree];
	else
		id = evict(a, p);
	p->b[id].ref = 1;
	return id;
}

/* Another table now holds id, whose fill is `fill` (id not idle). */
static inline void ref_inc(paged *p, uint32_t id, uint32_t fill)
{
	pblock *b = &p->b[id];
	if (b->ref >= 1) {
		p->dup_tok += fill;
		if (fill < p->bs && b->ref == 1)
			p->shared_tails++;
	}
	b->ref++;
}

/* One table less holds id. */
static inline void ref_dec(paged *p, uint32_t id, uint32_t fill)
{
	pblock *b = &p->b[id];
	if (b->ref >= 2) {
		p->dup_tok -= fill;
		if (fill < p->bs && b->ref == 2)
			p->shared_tails--;
	}
	if (--b->ref == 0) {
		if (b->flags & PB_HASHED) {
			lru_append(p, id);
		} else {
			p->fstack[p->nfree++] = id;
		}
	}
}

/* Hash the blocks of s that became full while len went from old to s->len. */
static void register_full(paged *p, kvs_seq_rec *s, uint32_t old)
{
	uint32_t lo = old / p->bs, hi = s->len / p->bs;
	if (hi > s->nhashes)
		hi = s->nhashes;
	for (uint32_t i = lo; i < hi; i++) {
		uint32_t id = s->table[i];
		if (p->b[id].flags & PB_HASHED)
			continue;
		uint64_t h = s->hashes[i];
		if (ht_find(p, h) != NONE)
			continue;    /* same content already cached elsewhere */
		set_bhash(&p->b[id], h);
		ht_insert(p, id);
	}
}

/* ---- init / fini ----------------------------------------------------------- */

static kvs_status paged_init(kvs_alloc *a)
{
	const kvs_alloc_config *c = &a->cfg;
	if (c->block_size == 0)
		return kvs_fail(KVS_ERR_INVALID,
				"allocator: block_size must be positive");
	uint64_t bb;
	if (kvs_mul_overflow(c->block_size, c->kv_bytes_per_token, &bb))
		return kvs_fail(KVS_ERR_OVERFLOW, "allocator: block_size %u x "
				"kv_bytes_per_token %llu overflows", c->block_size,
				(unsigned long long)c->kv_bytes_per_token);
	uint64_t n = c->budget_bytes / bb;
	if (n == 0)
		return kvs_fail(KVS_ERR_INVALID, "allocator: budget %llu bytes "
				"holds no block of %llu bytes",
				(unsigned long long)c->budget_bytes,
				(unsigned long long)bb);
	if (n >= NONE)
		return kvs_fail(KVS_ERR_LIMIT, "allocator: %llu blocks exceed "
				"the 32-bit block id space; raise block_size",
				(unsigned long long)n);
	paged *p = kvs_calloc(1, sizeof *p);
	if (!p)
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	p->nblocks = (uint32_t)n;
	p->bs = c->block_size;
	p->block_bytes = bb;
	p->leftover = c->budget_bytes - n * bb;
	p->watermark = (uint32_t)(c->watermark * (double)n);
	p->caching = c->enable_prefix_caching;
	p->b = kvs_calloc((size_t)n, sizeof *p->b);
	p->fstack = kvs_reallocarray(NULL, (size_t)n, sizeof *p->fstack);
	if (!p->b || !p->fstack)
		goto nomem;
	/* free stack in id order: block 0 on top */
	for (uint32_t i = 0; i < p->nblocks; i++) {
		p->b[i].prev = p->b[i].next = NONE;
		p->fstack[i] = p->nblocks - 1 - i;
	}
	p->nfree = p->nblocks;
	p->lru_head = p->lru_tail = NONE;
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
	a->p = p;
	return KVS_OK;
nomem:
	kvs_free(p->b);
	kvs_free(p->fstack);
	kvs_free(p->ht);
	kvs_free(p->host_free);
	kvs_free(p);
	return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory for "
			"%llu blocks", (unsigned long long)n);
}

static void paged_fini(kvs_alloc *a)
{
	paged *p = P(a);
	kvs_free(p->b);
	kvs_free(p->fstack);
	kvs_free(p->ht);
	kvs_free(p->host_free);
	kvs_free(p);
}

/* ---- admission ---------------------------------------------------------------- */

/* Prefix hits usable by d: full prompt blocks found in the cache, stopping
 * before the last prompt token (it must be computed to produce the next
 * token).  *idle receives how many of them are cached-idle. */
static uint32_t prefix_hits(const paged *p, const kvs_seq_desc *d,
			    uint32_t *idle)
{
	uint32_t nidle = 0, h = 0;
	if (p->caching && d->block_hashes && d->prompt_tokens > 0) {
		uint32_t lim = (d->prompt_tokens - 1) / p->bs;
		if (lim > d->num_block_hashes)
			lim = d->num_block_hashes;
		for (; h < lim; h++) {
			uint32_t id = ht_find(p, d->block_hashes[h]);
			if (id == NONE || p->b[id].ref == MAX_REF)
				break;
			nidle += p->b[id].ref == 0;
		}
	}
	*idle = nidle;
	return h;
}

static kvs_admit_verdict paged_can_admit(const kvs_alloc *a,
					 const kvs_seq_desc *d,
					 kvs_admit_reason *why)
{
	const paged *p = P(a);
	uint64_t final_len = (uint64_t)d->prompt_tokens + d->output_tokens;
	uint64_t nprompt = kvs_div_ceil(d->prompt_tokens, p->bs);
	if (kvs_div_ceil(final_len, p->bs) > p->nblocks ||
	    nprompt + p->watermark > p->nblocks) {
		*why = KVS_REASON_EXCEEDS_BUDGET;
		return KVS_ADMIT_NEVER;
	}
	uint32_t idle;
	uint32_t hits = prefix_hits(p, d, &idle);
	uint64_t need = nprompt - hits + idle;
	uint64_t avail = (uint64_t)p->nfree + p->nidle;
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
	uint32_t nprompt = (uint32_t)kvs_div_ceil(d->prompt_tokens, p->bs);
	uint32_t nh = 0;
	if (p->caching && d->block_hashes) {
		nh = d->prompt_tokens / p->bs;
		if (nh > d->num_block_hashes)
			nh = d->num_block_hashes;
	}
	kvs_status st = kvs_alloc_grow_u32(&s->table, &s->table_cap, nprompt);
	if (st == KVS_OK)
		st = kvs_alloc_grow_u64(&s->hashes, &s->hashes_cap, nh);
	if (st != KVS_OK)
		return st;
	uint32_t idle;
	uint32_t hits = prefix_hits(p, d, &idle);
	/* cached blocks first, so fresh allocations cannot evict them */
	for (uint32_t i = 0; i < hits; i++) {
		uint32_t id = ht_find(p, d->block_hashes[i]);
		if (p->b[id].ref == 0)
			lru_unlink(p, id);
		ref_inc(p, id, p->bs);
		s->table[i] = id;
	}
	for (uint32_t i = hits; i < nprompt; i++)
		s->table[i] = take(a, p);
	s->nblocks = nprompt;
	if (nh)
		memcpy(s->hashes, d->block_hashes, (size_t)nh * sizeof(uint64_t));
	s->nhashes = nh;
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
	uint32_t len = s->len, newlen = len + n;
	uint64_t cap = (uint64_t)s->nblocks * bs;
	/* blocks written by this step that others also hold: copy first */
	uint32_t ncow = 0;
	if (p->shared_tails && len < cap) {
		uint32_t last = (uint32_t)(((newlen < cap ? newlen : cap) - 1) / bs);
		for (uint32_t i = len / bs; i <= last; i++)
			ncow += p->b[s->table[i]].ref > 1;
	}
	uint32_t want = (uint32_t)kvs_div_ceil(newlen, bs);
	uint32_t fresh = want > s->nblocks ? want - s->nblocks : 0;
	if ((uint64_t)ncow + fresh > (uint64_t)p->nfree + p->nidle)
		return kvs_fail(KVS_ERR_NOSPACE, "allocator: sequence %llu needs "
				"%u blocks, %u free",
				(unsigned long long)s->id, ncow + fresh,
				p->nfree + p->nidle);
	kvs_status st = kvs_alloc_grow_u32(&s->table, &s->table_cap,
					   s->nblocks + fresh);
	if (st == KVS_OK)
		st = kvs_alloc_reserve_copies(a, ncow);
	if (st != KVS_OK)
		return st;
	size_t nc = 0;
	if (ncow) {
		uint32_t last = (uint32_t)(((newlen < cap ? newlen : cap) - 1) / bs);
		for (uint32_t i = len / bs; i <= last; i++) {
			uint32_t old = s->table[i];
			if (p->b[old].ref <= 1)
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
	for (uint32_t i = 0; i < fresh; i++)
		s->table[s->nblocks + i] = take(a, p);
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

/* Hot path: no new block, nothing shared (a few adds). */
static kvs_status paged_grow(kvs_alloc *a, kvs_seq_rec *s, uint32_t n,
			     const kvs_block_copy **copies, size_t *ncopies)
{
	paged *p = P(a);
	uint32_t len = s->len;
	if (KVS_UNLIKELY(p->shared_tails ||
			 (uint64_t)len + n > (uint64_t)s->nblocks * p->bs))
		return grow_slow(a, p, s, n, copies, ncopies);
	s->len = len + n;
	a->tok_sum += n;
	kvs_seq_set_res(a, s, (uint64_t)s->nblocks * p->bs);
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
			if (p->b[s->table[i]].ref > 1)
				break;
	}
	uint64_t lim = (uint64_t)i * p->bs;
	return lim > s->len ? (uint32_t)(lim - s->len) : 0;
}

/* ---- release / fork ---------------------------------------------------------- */

static void drop_device_blocks(kvs_alloc *a, paged *p, kvs_seq_rec *s)
{
	for (uint32_t i = s->nblocks; i-- > 0;)
		ref_dec(p, s->table[i], fill_of(p->bs, i, s->len));
	a->tok_sum -= s->len;
	a->res_sum -= s->res;
	s->res = 0;
}

static void paged_release(kvs_alloc *a, kvs_seq_rec *s)
{
	paged *p = P(a);
	if (s->state == KVS_SEQ_RESIDENT) {
		drop_device_blocks(a, p, s);
	} else {
		for (uint32_t i = s->nblocks; i-- > 0;)
			p->host_free[p->host_nfree++] = s->table[i];
	}
	s->nblocks = 0;
}

static kvs_status paged_fork(kvs_alloc *a, kvs_seq_rec *par, kvs_seq_rec *c)
{
	paged *p = P(a);
	kvs_status st = kvs_alloc_grow_u32(&c->table, &c->table_cap, par->nblocks);
	if (st == KVS_OK)
		st = kvs_alloc_grow_u64(&c->hashes, &c->hashes_cap, par->nhashes);
	if (st != KVS_OK)
		return st;
	for (uint32_t i = 0; i < par->nblocks; i++)
		if (p->b[par->table[i]].ref == MAX_REF)
			return kvs_fail(KVS_ERR_LIMIT, "allocator: fork: block %u "
					"is shared by %u sequences already",
					par->table[i], MAX_REF);
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
	return KVS_OK;
}

/* ---- swap ------------------------------------------------------------------------
 * Only blocks holding tokens travel: the empty blocks at the end of a table
 * (allocated for a prompt not yet prefilled) are dropped on swap-out and
 * allocated again by grow after swap-in.  Host blocks are never shared, so a
 * forked family swapped out one by one comes back unshared.
 */

static kvs_status paged_swap_out(kvs_alloc *a, kvs_seq_rec *s,
				 const kvs_block_copy **copies, size_t *ncopies)
{
	paged *p = P(a);
	uint32_t k = (uint32_t)kvs_div_ceil(s->len, p->bs);
	if (k > p->host_nfree)
		return kvs_fail(KVS_ERR_NOSPACE, "allocator: swap_out: sequence "
				"%llu needs %u host blocks, %u free",
				(unsigned long long)s->id, k, p->host_nfree);
	kvs_status st = kvs_alloc_reserve_copies(a, k);
	if (st != KVS_OK)
		return st;
	for (uint32_t i = 0; i < k; i++)
		a->copies[i] = (kvs_block_copy){ s->table[i],
						 p->host_free[--p->host_nfree] };
	drop_device_blocks(a, p, s);
	for (uint32_t i = 0; i < k; i++)
		s->table[i] = a->copies[i].dst;
	s->nblocks = k;
	s->state = KVS_SEQ_SWAPPED;
	a->stats.swap_out_blocks += k;
	a->stats.swap_out_bytes += k * p->block_bytes;
	if (copies)
		*copies = k ? a->copies : NULL;
	if (ncopies)
		*ncopies = k;
	return KVS_OK;
}

static bool paged_can_swap_in(const kvs_alloc *a, const kvs_seq_rec *s)
{
	const paged *p = P(a);
	uint64_t avail = (uint64_t)p->nfree + p->nidle;
	return s->nblocks <= avail && avail - s->nblocks >= p->watermark;
}

static kvs_status paged_swap_in(kvs_alloc *a, kvs_seq_rec *s,
				const kvs_block_copy **copies, size_t *ncopies)
{
	paged *p = P(a);
	if (!paged_can_swap_in(a, s))
		return kvs_fail(KVS_ERR_NOSPACE, "allocator: swap_in: sequence "
				"%llu needs %u blocks above the watermark of %u, "
				"%u free", (unsigned long long)s->id, s->nblocks,
				p->watermark, p->nfree + p->nidle);
	uint32_t k = s->nblocks;
	kvs_status st = kvs_alloc_reserve_copies(a, k);
	if (st != KVS_OK)
		return st;
	for (uint32_t i = 0; i < k; i++) {
		uint32_t d = take(a, p);
		a->copies[i] = (kvs_block_copy){ s->table[i], d };
		p->host_free[p->host_nfree++] = s->table[i];
		s->table[i] = d;
	}
	s->state = KVS_SEQ_RESIDENT;
	a->tok_sum += s->len;
	kvs_seq_set_res(a, s, (uint64_t)k * p->bs);
	if (p->caching)
		register_full(p, s, 0);
	a->stats.swap_in_blocks += k;
	a->stats.swap_in_bytes += k * p->block_bytes;
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
				pblock *b = &p->b[s->table[i]];
				if (b->ref < 2)
					continue;
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
	uint64_t owned = (uint64_t)p->nblocks - p->nfree - p->nidle;
	uint64_t tok = a->tok_sum - p->dup_tok;
	uint64_t res = a->res_sum;
	if (p->shared_tails)
		res -= shared_res_excess(a);
	out->token_states = tok * B;
	out->reservation = res * B;
	out->internal_frag = owned * p->block_bytes - (tok + res) * B + p->leftover;
	out->external_frag = 0;
	out->cached_idle = (uint64_t)p->nidle * p->block_bytes;
	out->free = (uint64_t)p->nfree * p->block_bytes;
	(void)next;
}

/* ---- validation ----------------------------------------------------------------- */

enum { V_NONE = 0, V_FREE, V_IDLE };

static bool paged_is_valid(const kvs_alloc *a)
{
	const paged *p = P(a);
	uint32_t n = p->nblocks, bs = p->bs;
	bool ok = false;
	uint8_t *mark = kvs_calloc(n, 1);
	uint32_t *refs = kvs_calloc(n, sizeof *refs);
	uint32_t *fill = kvs_calloc(n, sizeof *fill);
	uint32_t *resmax = kvs_calloc(n, sizeof *resmax);
	uint8_t *hmark = kvs_calloc(p->host_nblocks + 1, 1);
	if (!mark || !refs || !fill || !resmax || !hmark)
		goto out;
	/* free stack */
	uint32_t cnt = 0;
	if (p->nfree > n)
		goto out;
	for (uint32_t k = 0; k < p->nfree; k++) {
		uint32_t id = p->fstack[k];
		if (id >= n || mark[id] || p->b[id].ref || p->b[id].flags)
			goto out;
		mark[id] = V_FREE;
	}
	/* LRU, both directions */
	cnt = 0;
	uint32_t prev = NONE;
	for (uint32_t id = p->lru_head; id != NONE; id = p->b[id].next) {
		if (id >= n || mark[id] || p->b[id].ref ||
		    !(p->b[id].flags & PB_HASHED) || p->b[id].prev != prev)
			goto out;
		mark[id] = V_IDLE;
		prev = id;
		if (++cnt > n)
			goto out;
	}
	if (cnt != p->nidle || prev != p->lru_tail)
		goto out;
	if (!p->caching && p->nidle)
		goto out;
	/* tables: reference counts, fills, reservation claims */
	uint64_t dup = 0;
	uint32_t host_used = 0;
	for (uint32_t r = 0; r < a->nrecs; r++) {
		const kvs_seq_rec *s = &a->recs[r];
		if (s->state == KVS_SEQ_UNUSED)
			continue;
		if (s->state == KVS_SEQ_SWAPPED) {
			if (s->nblocks != kvs_div_ceil(s->len, bs))
				goto out;
			for (uint32_t i = 0; i < s->nblocks; i++) {
				uint32_t h = s->table[i];
				if (h >= p->host_nblocks || hmark[h])
					goto out;
				hmark[h] = 1;
				host_used++;
			}
			continue;
		}
		if ((uint64_t)s->nblocks * bs < s->len ||
		    s->res != kvs_seq_reserved((uint64_t)s->nblocks * bs, s->len, s->final_len))
			goto out;
		for (uint32_t i = 0; i < s->nblocks; i++) {
			uint32_t id = s->table[i];
			if (id >= n || mark[id] != V_NONE)
				goto out;
			uint32_t f = fill_of(bs, i, s->len);
			uint32_t v = block_res(bs, i, s->len, s->final_len);
			if (refs[id] && fill[id] != f)
				goto out;   /* holders disagree on a shared block */
			if (refs[id])
				dup += f;
			refs[id]++;
			fill[id] = f;
			if (v > resmax[id])
				resmax[id] = v;
			/* a cached block must hold what its hash names */
			if ((p->b[id].flags & PB_HASHED) &&
			    (f != bs || (i < s->nhashes && s->hashes[i] != bhash(&p->b[id]))))
				goto out;
		}
	}
	uint64_t tok = 0, res = 0, owned = 0;
	uint32_t tails = 0, npinned = 0;
	for (uint32_t id = 0; id < n; id++) {
		if (mark[id] != V_NONE)
			continue;
		bool pinned = (p->b[id].flags & PB_PINNED) != 0;
		if (p->b[id].ref == 0 || p->b[id].ref != refs[id] + pinned ||
		    (pinned && refs[id]))
			goto out;
		npinned += pinned;
		owned++;
		tok += fill[id];
		res += resmax[id];
		tails += refs[id] >= 2 && fill[id] < bs;
	}
	if (dup != p->dup_tok || tails != p->shared_tails ||
	    npinned != p->npinned)
		goto out;
	/* prefix index: exactly the hashed blocks, each reachable */
	uint32_t hashed = 0;
	for (uint32_t id = 0; id < n; id++)
		hashed += (p->b[id].flags & PB_HASHED) != 0;
	if (hashed != p->nhashed || (!p->caching && hashed))
		goto out;
	if (p->caching) {
		uint64_t entries = 0;
		for (uint64_t i = 0; i < p->ht_cap; i++) {
			uint32_t id = p->ht[i];
			if (id == NONE)
				continue;
			entries++;
			if (id >= n || !(p->b[id].flags & PB_HASHED) ||
			    ht_find(p, bhash(&p->b[id])) != id)
				goto out;
		}
		if (entries != hashed)
			goto out;
	}
	/* host pool */
	if (host_used + p->host_nfree != p->host_nblocks)
		goto out;
	for (uint32_t i = 0; i < p->host_nfree; i++) {
		uint32_t h = p->host_free[i];
		if (h >= p->host_nblocks || hmark[h])
			goto out;
		hmark[h] = 1;
	}
	/* the incremental accounting equals the one recomputed from scratch */
	kvs_mem_parts m;
	paged_account(a, NULL, &m);
	uint64_t B = a->cfg.kv_bytes_per_token;
	if (m.token_states != tok * B || m.reservation != res * B ||
	    m.cached_idle != (uint64_t)p->nidle * p->block_bytes ||
	    m.free != (uint64_t)p->nfree * p->block_bytes ||
	    m.internal_frag != owned * p->block_bytes - (tok + res) * B + p->leftover)
		goto out;
	ok = true;
out:
	kvs_free(mark);
	kvs_free(refs);
	kvs_free(fill);
	kvs_free(resmax);
	kvs_free(hmark);
	return ok;
}

/* ---- views ------------------------------------------------------------------------ */

static uint64_t paged_num_units(const kvs_alloc *a)
{
	return P(a)->nblocks;
}

static uint64_t paged_free_units(const kvs_alloc *a)
{
	return (uint64_t)P(a)->nfree + P(a)->nidle;
}

static uint64_t paged_metadata_bytes(const kvs_alloc *a)
{
	const paged *p = P(a);
	return (uint64_t)p->nblocks * (sizeof(pblock) + sizeof(uint32_t)) +
	       p->ht_cap * sizeof(uint32_t) +
	       (uint64_t)p->host_nblocks * sizeof(uint32_t) + sizeof *p;
}

kvs_status kvs_alloc_blocks_take(kvs_alloc *a, uint32_t n, kvs_block_id *ids)
{
	if (a->m != &kvs_paged_methods)
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has "
				"no block pool", kvs_policy_name(a->cfg.policy));
	paged *p = P(a);
	if (n > p->nfree + p->nidle)
		return kvs_fail(KVS_ERR_NOSPACE, "allocator: %u blocks wanted, "
				"%u free", n, p->nfree + p->nidle);
	uint32_t top = p->nfree, i = 0;
	pblock *b = p->b;
	const uint32_t *fs = p->fstack;
	/* fast path: straight off the stack, nothing shared in memory */
	for (; i < n && top; i++) {
		uint32_t id = fs[--top];
		b[id].ref = 1;
		b[id].flags = PB_PINNED;
		ids[i] = id;
	}
	p->nfree = top;
	for (; i < n; i++) {           /* the rest evicts cached blocks */
		uint32_t id = take(a, p);
		b[id].flags |= PB_PINNED;
		ids[i] = id;
	}
	p->npinned += n;
	return KVS_OK;
}

kvs_status kvs_alloc_blocks_give(kvs_alloc *a, uint32_t n,
				 const kvs_block_id *ids)
{
	if (a->m != &kvs_paged_methods)
		return kvs_fail(KVS_ERR_UNSUPPORTED, "allocator: policy %s has "
				"no block pool", kvs_policy_name(a->cfg.policy));
	paged *p = P(a);
	/* one pass: pinned blocks have ref 1 and no hash, so they go straight
	 * back; a bad id (not taken, or given twice) undoes the pass so that a
	 * bad list changes nothing */
	uint32_t top = p->nfree;
	pblock *b = p->b;
	uint32_t *fs = p->fstack;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = ids[i];
		if (KVS_UNLIKELY(id >= p->nblocks || b[id].flags != PB_PINNED)) {
			while (i-- > 0) {
				uint32_t u = fs[--top];
				b[u].ref = 1;
				b[u].flags = PB_PINNED;
			}
			return kvs_fail(KVS_ERR_STATE, "allocator: block %u was "
					"not taken (or is given twice)", id);
		}
		b[id].ref = 0;
		b[id].flags = 0;
		fs[top++] = id;
	}
	p->nfree = top;
	p->npinned -= n;
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
	.grow = paged_grow,
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
