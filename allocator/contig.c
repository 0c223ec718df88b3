/*
 * contig.c - contiguous-reservation allocators (max, pow2, oracle): the
 * schemes that came before PagedAttention, measured on the same budget.
 *
 * Memory picture: one linear KV address space [0, budget_bytes).  Each
 * sequence holds one region of region_tokens x kv_bytes_per_token bytes,
 * reserved whole at admission:
 *
 *   max     max_model_len tokens
 *   pow2    prompt + the next power of two >= output (1 when output is 0),
 *           at most max_model_len
 *   oracle  exactly prompt + output
 *
 *   |--seq 3--|..hole..|----seq 1----|.hole.|--seq 7--|....hole....|
 *
 * Free space is an address-ordered array of extents (offset, length), kept
 * coalesced: no two extents touch.  Placement is first fit (lowest address
 * that fits) or, with best_fit, the smallest hole that fits (lowest address
 * on ties); the region is cut from the hole's start.  With buddy, the
 * region is rounded up to 2^k tokens and placed at the lowest offset
 * aligned to its size (a binary buddy system's blocks), possibly in the
 * middle of a hole; the rounding (`pad`) counts as external fragmentation.  A release merges the
 * region with its neighbours.  There are at most (sequences + 1) holes; the
 * array is sized for that at admission so release never allocates.
 *
 * Costs: placement and release O(holes) (scan, memmove); grow and room O(1);
 * account O(holes) for external fragmentation (every other part is a
 * running total).  Holes stay few (at most the number of running sequences
 * plus one), so this is cheap next to a scheduling step.
 */
#include "alloc_internal.h"
#include "common/array.h"

#include <stdlib.h>
#include <string.h>

typedef struct extent {
	uint64_t off, len;   /* bytes */
} extent;

typedef struct contig {
	extent *fx;          /* free extents by address */
	uint32_t nfx, fx_cap;

	uint64_t free_bytes;
	uint64_t held_tokens; /* sum of regions of resident sequences */
	uint64_t pad_tokens;  /* of which buddy rounding (external fragmentation) */
} contig;

static inline contig *C(const kvs_alloc *a)
{
	return (contig *)a->p;
}

/* Region for a sequence of prompt + output tokens (fits in max_model_len:
 * the caller checked): the policy's rule. */
static uint32_t region_tokens(const kvs_alloc *a, uint32_t prompt,
			      uint32_t output)
{
	return a->m->region(a->cfg.max_model_len, prompt, output);
}

/* r tokens rounded up to a power of two under buddy placement. */
static uint32_t round_held(const kvs_alloc *a, uint32_t r)
{
	if (!a->cfg.buddy)
		return r;
	uint64_t p2 = 1;
	while (p2 < r)
		p2 <<= 1;
	return p2 > UINT32_MAX ? UINT32_MAX : (uint32_t)p2;
}

/* Tokens (of kv_bytes_per_token) the windowed layers of a sequence
 * whose full layers reserve `region` tokens hold: the same rule capped
 * at the window, window_num / window_den of it (kvs_alloc_config). */
static uint32_t window_tokens(const kvs_alloc *a, uint32_t region)
{
	uint32_t w = a->cfg.window_tokens;
	return kvs_window_units(&a->cfg, region < w ? region : w);
}

/* Tokens the full layers of s may store: its region less the buddy
 * rounding and the windowed layers' part. */
static inline uint32_t cap_of(const kvs_seq_rec *s)
{
	return s->region - s->pad - s->wunits;
}

/* The region held for a sequence of prompt + output tokens: the
 * policy's size and the windowed layers' part, rounded up to a power of
 * two of tokens under buddy placement (the rounding is internal
 * fragmentation). */
static uint32_t held_tokens(const kvs_alloc *a, uint32_t prompt, uint32_t output)
{
	uint32_t r = region_tokens(a, prompt, output);
	uint64_t t = (uint64_t)r + window_tokens(a, r);
	return round_held(a, t > UINT32_MAX ? UINT32_MAX : (uint32_t)t);
}

/* Smallest region the policy can ever reserve (external fragmentation
 * with no waiting request): that of an empty sequence, as every rule
 * grows with prompt and output. */
static uint32_t min_region(const kvs_alloc *a)
{
	return region_tokens(a, 0, 0);
}

static uint32_t region_max(uint32_t mml, uint32_t prompt, uint32_t output)
{
	(void)prompt;
	(void)output;
	return mml;
}

static uint32_t region_pow2(uint32_t mml, uint32_t prompt, uint32_t output)
{
	uint64_t p2 = 1;
	while (p2 < output)
		p2 <<= 1;
	uint64_t r = prompt + p2;
	return r > mml ? mml : (uint32_t)r;
}

static uint32_t region_oracle(uint32_t mml, uint32_t prompt, uint32_t output)
{
	(void)mml;
	/* a forked child of an empty parent still takes one token */
	return prompt + output ? prompt + output : 1;
}

static kvs_status contig_init(kvs_alloc *a)
{
	/* a region is at most max_model_len tokens, with its windowed part:
	 * their sum must be a token count (r + w below is 32-bit; the part
	 * saturates at UINT32_MAX, which fails here too) */
	uint32_t mml = a->cfg.max_model_len, wmax = window_tokens(a, mml);
	if ((uint64_t)mml + wmax > UINT32_MAX)
		return kvs_fail(KVS_ERR_LIMIT,
				"allocator: a region of max_model_len %u tokens and its windowed "
				"layers' %u would pass %u tokens", mml, wmax, UINT32_MAX);
	contig *c = kvs_calloc(1, sizeof *c);
	if (!c)
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	c->fx_cap = 16;
	c->fx = kvs_reallocarray(NULL, c->fx_cap, sizeof *c->fx);
	if (!c->fx || (KVS_DEBUG >= 2 &&
		       !kvs_alloc_vscratch(a, 2 * (size_t)c->fx_cap * sizeof(extent)))) {
		kvs_free(c->fx);
		kvs_free(c);
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	}
	c->fx[0] = (extent){ 0, a->cfg.budget_bytes };
	c->nfx = 1;
	c->free_bytes = a->cfg.budget_bytes;
	a->p = c;
	return KVS_OK;
}

static void contig_fini(kvs_alloc *a)
{
	kvs_free(C(a)->fx);
	kvs_free(C(a));
}

/* Buddy placement: the lowest offset aligned to `bytes` (a power of two
 * of tokens times the bytes per token) whose [off, off + bytes) lies inside
 * one hole.  A binary buddy system with full coalescing can hand out
 * exactly such blocks: allocated blocks are aligned powers of two, so an
 * aligned block that is wholly free is (part of) one free buddy block. */
static uint64_t aligned_start(const extent *e, uint64_t bytes)
{
	uint64_t off = e->off % bytes ? e->off + (bytes - e->off % bytes) : e->off;
	if (off < e->off || off - e->off > e->len || e->len - (off - e->off) < bytes)
		return UINT64_MAX;
	return off;
}

/* Index of the hole for `bytes`, or UINT32_MAX. */
static uint32_t find_hole(const kvs_alloc *a, uint64_t bytes)
{
	const contig *c = C(a);
	uint32_t best = UINT32_MAX;
	if (a->cfg.buddy) {
		for (uint32_t i = 0; i < c->nfx; i++)
			if (aligned_start(&c->fx[i], bytes) != UINT64_MAX)
				return i;
		return UINT32_MAX;
	}
	for (uint32_t i = 0; i < c->nfx; i++) {
		if (c->fx[i].len < bytes)
			continue;
		if (!a->cfg.best_fit)
			return i;
		if (best == UINT32_MAX || c->fx[i].len < c->fx[best].len)
			best = i;
	}
	return best;
}

/* bytes of a region, or UINT64_MAX on overflow */
static uint64_t region_bytes(const kvs_alloc *a, uint32_t tokens)
{
	uint64_t b;
	if (kvs_mul_overflow(tokens, a->cfg.kv_bytes_per_token, &b))
		return UINT64_MAX;
	return b;
}

static kvs_admit_verdict contig_can_admit(const kvs_alloc *a,
					  const kvs_seq_desc *d,
					  kvs_admit_reason *why)
{
	uint64_t need = region_bytes(a, held_tokens(a, d->prompt_tokens,
						    d->output_tokens));
	if (need > a->cfg.budget_bytes) {
		*why = KVS_REASON_EXCEEDS_BUDGET;
		return KVS_ADMIT_NEVER;
	}
	if (need > C(a)->free_bytes) {
		*why = KVS_REASON_NO_FREE_BYTES;
		return KVS_ADMIT_LATER;
	}
	if (find_hole(a, need) == UINT32_MAX) {
		*why = KVS_REASON_NO_HOLE;
		return KVS_ADMIT_LATER;
	}
	*why = KVS_REASON_NONE;
	return KVS_ADMIT_NOW;
}

/* Place a region for s: the policy's `policy_tokens`, held as `tokens`
 * (rounded under buddy placement); NOSPACE when no hole fits. */
static kvs_status place(kvs_alloc *a, kvs_seq_rec *s, uint32_t policy_tokens,
			uint32_t tokens)
{
	contig *c = C(a);
	/* after this placement there are at most nseqs + 2 holes (the new
	 * sequence is not counted in nseqs yet); a buddy cut from a hole's
	 * middle leaves one more transiently */
	uint32_t want = a->nseqs + 3;
	if (!KVS_ARRAY_RESERVE(c->fx, c->fx_cap, want, 16) ||
	    (KVS_DEBUG >= 2 && !kvs_alloc_vscratch(a, 2 * (size_t)want * sizeof(extent))))
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host "
				"memory for the free-extent list");
	uint64_t bytes = region_bytes(a, tokens);
	uint32_t i = bytes == UINT64_MAX ? UINT32_MAX : find_hole(a, bytes);
	if (i == UINT32_MAX)
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: no free hole large enough for the sequence");
	extent h = c->fx[i];
	uint64_t off = a->cfg.buddy ? aligned_start(&h, bytes) : h.off;
	s->off = off;
	s->region = tokens;
	s->pad = tokens - policy_tokens;
	c->pad_tokens += s->pad;
	if (off > h.off) {
		/* cut from the middle: the hole's head stays, its tail follows */
		uint64_t tail = h.off + h.len - (off + bytes);
		c->fx[i].len = off - h.off;
		if (tail) {
			memmove(&c->fx[i + 2], &c->fx[i + 1],
				(c->nfx - i - 1) * sizeof *c->fx);
			c->fx[i + 1] = (extent){ off + bytes, tail };
			c->nfx++;
		}
	} else {
		c->fx[i].off += bytes;
		c->fx[i].len -= bytes;
		if (c->fx[i].len == 0) {
			memmove(&c->fx[i], &c->fx[i + 1],
				(c->nfx - i - 1) * sizeof *c->fx);
			c->nfx--;
		}
	}
	c->free_bytes -= bytes;
	c->held_tokens += tokens;
	return KVS_OK;
}

static void unplace(kvs_alloc *a, kvs_seq_rec *s)
{
	contig *c = C(a);
	uint64_t off = s->off, len = region_bytes(a, s->region);
	/* first extent above the region */
	uint32_t lo = 0, hi = c->nfx;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->fx[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t i = lo;
	bool left = i > 0 && c->fx[i - 1].off + c->fx[i - 1].len == off;
	bool right = i < c->nfx && off + len == c->fx[i].off;
	if (left && right) {
		c->fx[i - 1].len += len + c->fx[i].len;
		memmove(&c->fx[i], &c->fx[i + 1],
			(c->nfx - i - 1) * sizeof *c->fx);
		c->nfx--;
	} else if (left) {
		c->fx[i - 1].len += len;
	} else if (right) {
		c->fx[i].off = off;
		c->fx[i].len += len;
	} else {
		kvs_require(c->nfx < c->fx_cap);
		memmove(&c->fx[i + 1], &c->fx[i], (c->nfx - i) * sizeof *c->fx);
		c->fx[i] = (extent){ off, len };
		c->nfx++;
	}
	c->free_bytes += len;
	c->held_tokens -= s->region;
	c->pad_tokens -= s->pad;
	s->region = 0;
	s->pad = 0;
	s->off = 0;
}

static kvs_status contig_admit(kvs_alloc *a, kvs_seq_rec *s,
			       const kvs_seq_desc *d, uint32_t *cached)
{
	uint32_t r = region_tokens(a, d->prompt_tokens, d->output_tokens);
	uint32_t w = window_tokens(a, r);
	kvs_status st = place(a, s, r + w, held_tokens(a, d->prompt_tokens, d->output_tokens));
	if (st != KVS_OK)
		return st;
	s->wunits = w;
	a->win_sum += w;
	s->len = 0;
	kvs_seq_set_res(a, s, cap_of(s));
	*cached = 0;
	return KVS_OK;
}

static kvs_status contig_grow(kvs_alloc *a, kvs_seq_rec *s, uint32_t n,
			      const kvs_block_copy **copies, size_t *ncopies)
{
	uint32_t cap = cap_of(s);
	if (KVS_UNLIKELY((uint64_t)s->len + n > cap))
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: the sequence outgrows its reservation");
	s->len += n;
	a->tok_sum += n;
	kvs_seq_set_res(a, s, cap);
	if (copies)
		*copies = NULL;
	if (ncopies)
		*ncopies = 0;
	return KVS_OK;
}

static uint32_t contig_room(const kvs_alloc *a, const kvs_seq_rec *s)
{
	(void)a;
	return cap_of(s) - s->len;
}

static void contig_release(kvs_alloc *a, kvs_seq_rec *s)
{
	a->tok_sum -= s->len;
	a->res_sum -= s->res;
	s->res = 0;
	a->win_sum -= s->wunits;
	s->wunits = 0;
	unplace(a, s);
}

/* The child gets its own region (the policy's size for its prompt = the
 * parent's tokens, output = its own) and a copy of the parent's KV. */
static kvs_status contig_fork(kvs_alloc *a, kvs_seq_rec *par, kvs_seq_rec *c)
{
	uint32_t par_len = par->len;
	uint32_t out = c->final_len - par_len;
	uint32_t r = region_tokens(a, par_len, out);
	uint32_t w = window_tokens(a, r);
	kvs_status st = place(a, c, r + w, held_tokens(a, par_len, out));
	if (st != KVS_OK)
		return st;
	c->wunits = w;
	a->win_sum += w;
	c->len = par_len;
	a->tok_sum += par_len;
	kvs_seq_set_res(a, c, cap_of(c));
	a->stats.copy_bytes += (uint64_t)par_len * a->cfg.kv_bytes_per_token +
			       kvs_window_copy_bytes(&a->cfg, par_len);
	return KVS_OK;
}

static void contig_account(const kvs_alloc *a, const kvs_seq_desc *next,
			   kvs_mem_parts *out)
{
	const contig *c = C(a);
	uint64_t B = a->cfg.kv_bytes_per_token;
	uint32_t ref = next ? held_tokens(a, next->prompt_tokens, next->output_tokens)
			    : min_region(a) + window_tokens(a, min_region(a));
	uint64_t need = region_bytes(a, ref);
	uint64_t ext = 0;
	/* free bytes no region of `need` can use: whole holes too small, and
	 * under buddy placement holes with no aligned room for it */
	for (uint32_t i = 0; i < c->nfx; i++)
		if (c->fx[i].len < need ||
		    (a->cfg.buddy && aligned_start(&c->fx[i], need) == UINT64_MAX))
			ext += c->fx[i].len;
	/* buddy rounding is memory the allocator's block sizes waste, not the
	 * request's over-reservation: external, as the PagedAttention paper's
	 * Fig. 2 counts it */
	out->token_states = (a->tok_sum + a->win_sum) * B;
	out->reservation = a->res_sum * B;
	out->internal_frag = (c->held_tokens - c->pad_tokens - a->tok_sum - a->win_sum -
			      a->res_sum) * B;
	out->external_frag = ext + c->pad_tokens * B;
	out->cached_idle = 0;
	out->free = c->free_bytes - ext;
}

static int cmp_extent(const void *x, const void *y)
{
	const extent *a = x, *b = y;
	return a->off < b->off ? -1 : a->off > b->off;
}

static bool contig_is_valid(const kvs_alloc *a)
{
	const contig *c = C(a);
	uint64_t budget = a->cfg.budget_bytes;
	uint64_t fsum = 0;
	for (uint32_t i = 0; i < c->nfx; i++) {
		const extent *e = &c->fx[i];
		KVS_VALID(e->len > 0);
		KVS_VALID(e->off <= budget && e->len <= budget - e->off);
		/* sorted and coalesced: a gap between consecutive holes */
		KVS_VALID(i == 0 || c->fx[i - 1].off + c->fx[i - 1].len < e->off);
		fsum += e->len;
	}
	KVS_VALID(fsum == c->free_bytes);
	/* all extents (free and held) tile [0, budget) exactly; the scratch
	 * is sized by place() with debug_checks >= 2, else here */
	uint32_t n = c->nfx + a->nseqs;
	extent *all = kvs_alloc_vscratch(a, (n ? n : 1) * sizeof *all);
	KVS_VALID(all != NULL);
	uint32_t k = 0;
	uint64_t held = 0, pads = 0, wsum = 0;
	for (uint32_t i = 0; i < c->nfx; i++)
		all[k++] = c->fx[i];
	for (uint32_t r = 0; r < a->nrecs; r++) {
		const kvs_seq_rec *s = &a->recs[r];
		if (s->state == KVS_SEQ_UNUSED)
			continue;
		KVS_VALID(s->state == KVS_SEQ_RESIDENT);    /* never swapped */
		KVS_VALID(s->region > 0);
		KVS_VALID(s->pad < s->region);
		KVS_VALID(s->pad == 0 || a->cfg.buddy);     /* rounding only with buddy */
		KVS_VALID(s->wunits < s->region - s->pad);
		KVS_VALID(s->wunits == 0 || a->cfg.window_num);
		/* the windowed part is the rule's for the policy's region */
		KVS_VALID(s->wunits == window_tokens(a, cap_of(s)));
		KVS_VALID(s->len <= cap_of(s));
		KVS_VALID(s->res == kvs_seq_reserved(cap_of(s), s->len, s->final_len));
		wsum += s->wunits;
		KVS_VALID(k < n);                           /* nseqs counts it */
		all[k++] = (extent){ s->off, region_bytes(a, s->region) };
		held += s->region;
		pads += s->pad;
	}
	KVS_VALID(k == n);
	KVS_VALID(held == c->held_tokens);
	KVS_VALID(pads == c->pad_tokens);
	KVS_VALID(wsum == a->win_sum);
	qsort(all, n, sizeof *all, cmp_extent);
	uint64_t at = 0;
	for (uint32_t i = 0; i < n; i++) {
		KVS_VALID(all[i].off == at);                /* no gap, no overlap */
		at += all[i].len;
	}
	KVS_VALID(at == budget);
	return true;
}

static uint64_t contig_zero(const kvs_alloc *a)
{
	(void)a;
	return 0;
}

static uint64_t contig_metadata_bytes(const kvs_alloc *a)
{
	return (uint64_t)C(a)->fx_cap * sizeof(extent) + sizeof(contig);
}

#define CONTIG_METHODS(policy_name, rule) {				\
	.name = policy_name,						\
	.init = contig_init,						\
	.fini = contig_fini,						\
	.can_admit = contig_can_admit,					\
	.admit = contig_admit,						\
	.grow = contig_grow,						\
	.room = contig_room,						\
	.release = contig_release,					\
	.fork = contig_fork,						\
	.swap_out = NULL,						\
	.swap_in = NULL,						\
	.can_swap_in = NULL,						\
	.account = contig_account,					\
	.is_valid = contig_is_valid,					\
	.num_units = contig_zero,					\
	.free_units = contig_zero,					\
	.metadata_bytes = contig_metadata_bytes,			\
	.region = rule,							\
}

const kvs_alloc_methods kvs_max_methods = CONTIG_METHODS("max", region_max);
const kvs_alloc_methods kvs_pow2_methods = CONTIG_METHODS("pow2", region_pow2);
const kvs_alloc_methods kvs_oracle_methods = CONTIG_METHODS("oracle", region_oracle);
