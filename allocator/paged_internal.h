/*
 * paged_internal.h - the paged allocator's state, shared by paged.c and the
 * grow fast path that kvs_alloc_grow (alloc.c) inlines.
 */
#ifndef KVSIM_PAGED_INTERNAL_H
#define KVSIM_PAGED_INTERNAL_H

#include "alloc_internal.h"

/* Cold per-block data: 16 bytes. */
typedef struct pblock {
	uint64_t hash;             /* chained prefix hash (when PB_HASHED) */
	uint32_t prev, next;       /* LRU links (cached-idle blocks only) */
} pblock;

/* pool is the first member: the pool's slow paths find the allocator
 * from the pool pointer the caller holds. */
typedef struct paged {
	kvs_block_pool pool;         /* free-id stack, state words, pinned count */
	kvs_alloc *a;                /* owner (statistics for the slow paths) */
	pblock *b;
	uint32_t bs;                 /* tokens per block */
	/* Lazy state words (paged.c, "lazy pushes"): while `lazy`, a block
	 * pushed on the free stack keeps state word 1 (its value while one
	 * table held it) instead of POOL | position.  Every stack position
	 * at or above min(stale_lo, nfree) holds such a block, every one
	 * below it has its exact state word.  (Both sit in what was
	 * padding, so the struct's size, counted as metadata, is unchanged.) */
	uint32_t stale_lo;
	uint64_t block_bytes;
	uint64_t leftover;           /* budget bytes not in whole blocks */
	uint32_t watermark;          /* blocks */
	bool caching;
	bool lazy;                   /* no prefix caching, no pool pointer handed out */
	uint8_t bs_shift;            /* log2(bs) when bs_pow2 (padding too) */
	bool bs_pow2;                /* bs a power of two: paged_blocks_for shifts */

	uint32_t lru_head, lru_tail, nidle;

	uint32_t *ht;                /* prefix index */
	uint64_t ht_cap;
	uint32_t nhashed;

	uint64_t dup_tok;            /* sum over owned of (ref - 1) * fill */
	uint32_t shared_tails;       /* non-full blocks with ref >= 2 */

	uint32_t *host_free;         /* host swap pool: free-id stack */
	uint32_t host_nblocks, host_nfree;
} paged;

/* The block that holds token tok (tok / bs), and the blocks that hold
 * tokens tokens (ceil(tokens / bs)): a shift and a mask at a power-of-two
 * block size (a 64-bit division costs tens of cycles, and admission takes
 * several per request). */
static inline uint64_t paged_block_of(const paged *p, uint64_t tok)
{
	return kvs_div_p2(tok, p->bs, p->bs_shift, p->bs_pow2);
}

static inline uint64_t paged_blocks_for(const paged *p, uint64_t tokens)
{
	return kvs_div_ceil_p2(tokens, p->bs, p->bs_shift, p->bs_pow2);
}

/* The paged policy's grow (every case), called directly by kvs_alloc_grow
 * when the fast path below declines. */
/* Device blocks swapping swapped-out s in takes. */
__attribute__((visibility("hidden")))
uint64_t kvs_paged_swap_in_blocks(const kvs_alloc *a, const kvs_seq_rec *s);

__attribute__((visibility("hidden")))
kvs_status kvs_paged_grow(kvs_alloc *a, kvs_seq_rec *s, uint32_t n,
			  const kvs_block_copy **copies, size_t *ncopies);

/* The decode and block-crossing hot path of a paged grow, inlined into
 * kvs_alloc_grow: no block shared, no prefix caching, and at most one new
 * block, which the free stack holds and the table has room for.  Does
 * exactly what kvs_paged_grow does in that case and returns true; returns
 * false, having changed nothing, in every other case. */
static inline bool kvs_paged_grow_fast(kvs_alloc *a, kvs_seq_rec *s, uint32_t n)
{
	paged *p = a->p;
	if (KVS_UNLIKELY(p->shared_tails | p->caching))
		return false;
	uint32_t len = s->len, newlen = len + n;  /* <= max_model_len, checked */
	uint32_t nb = s->nblocks;
	uint64_t cap = (uint64_t)nb * p->bs;
	if (newlen > cap) {
		uint32_t top = p->pool.nfree_;
		cap += p->bs;
		if (KVS_UNLIKELY(newlen > cap || top == 0 || nb >= s->table_cap))
			return false;
		uint32_t id = p->pool.free_ids_[--top];
		p->pool.nfree_ = top;
		p->pool.state_[id] = 1;        /* ref 1, unhashed */
		s->table[nb] = id;
		s->nblocks = nb + 1;
	}
	/* kvs_seq_set_res with the values in registers */
	uint32_t top = cap < s->final_len ? (uint32_t)cap : s->final_len;
	uint32_t r = top > newlen ? top - newlen : 0;
	a->res_sum += (uint64_t)r - s->res;
	a->tok_sum += n;
	s->res = r;
	s->len = newlen;
	return true;
}

#endif /* KVSIM_PAGED_INTERNAL_H */
