/*
 * vattention.c - page-granular virtual-memory KV allocation in the style of
 * vAttention (Prabhu et al., ASPLOS 2025).
 *
 * Each request reserves a virtually contiguous range of max_model_len
 * tokens in every K and V tensor (virtual address space is plentiful, so
 * the reservation costs no KV memory).  Physical pages of page_bytes are
 * mapped on demand, separately for each of the num_kv_tensors tensors (K and
 * V of every layer on this rank).  A tensor holds
 *
 *   bytes_per_tensor_token = kv_bytes_per_token / num_kv_tensors
 *   tokens_per_page        = page_bytes / bytes_per_tensor_token  (floor)
 *
 * and all tensors of a request grow in lockstep, so a request maps pages in
 * groups of num_kv_tensors pages (one per tensor); a group holds
 * tokens_per_page tokens.  Waste is page-granular: up to one page per tensor
 * per request, plus the remainder of each page when page_bytes is not a
 * multiple of bytes_per_tensor_token.
 *
 *   physical page pool: total_pages = floor(budget / page_bytes), rounded down
 *   to whole groups; the rest of the budget is never mapped (internal
 *   fragmentation, like the tail of a paged pool).
 *
 * Pages are interchangeable, so the pool is a counter: mapping and unmapping
 * are O(1).  Admission and preemption follow the paged policy: only the
 * prompt's pages are needed at admission (above the watermark), growth maps
 * more pages or fails with NOSPACE so the caller preempts.  Fork maps the
 * child's own pages and copies the parent's KV (vAttention has no
 * copy-on-write sharing).  No swap, no prefix caching.
 */
#include "alloc_internal.h"

typedef struct vatt {
	uint64_t page_bytes;
	uint32_t tensors;          /* num_kv_tensors */
	uint32_t tpp;              /* tokens per page */
	uint64_t group_bytes;      /* tensors x page_bytes */
	uint64_t groups;           /* page groups in the pool */
	uint64_t free_groups;
	uint64_t watermark;        /* groups */
	uint64_t leftover;         /* budget bytes in no group */
} vatt;

static inline vatt *V(const kvs_alloc *a)
{
	return (vatt *)a->p;
}

static kvs_status vatt_init(kvs_alloc *a)
{
	const kvs_alloc_config *c = &a->cfg;
	if (c->page_bytes < (64u << 10) || c->page_bytes > (2u << 20))
		return kvs_fail(KVS_ERR_INVALID, "allocator: page_bytes %llu is "
				"outside 64 KiB .. 2 MiB",
				(unsigned long long)c->page_bytes);
	if (c->num_kv_tensors == 0 ||
	    c->kv_bytes_per_token % c->num_kv_tensors != 0)
		return kvs_fail(KVS_ERR_INVALID, "allocator: kv_bytes_per_token "
				"%llu does not split evenly over %u K/V tensors",
				(unsigned long long)c->kv_bytes_per_token,
				c->num_kv_tensors);
	uint64_t per = c->kv_bytes_per_token / c->num_kv_tensors;
	uint64_t tpp = c->page_bytes / per;
	if (tpp == 0)
		return kvs_fail(KVS_ERR_INVALID, "allocator: a page of %llu "
				"bytes holds no token of %llu bytes per tensor",
				(unsigned long long)c->page_bytes,
				(unsigned long long)per);
	if (tpp > UINT32_MAX)
		tpp = UINT32_MAX;
	/* a page group: one page of each K/V tensor */
	uint64_t gb, groups;
	kvs_status st = kvs_alloc_units(c, c->page_bytes, "page_bytes", c->num_kv_tensors,
					"num_kv_tensors", "page group", &gb, &groups);
	if (st != KVS_OK)
		return st;
	vatt *v = kvs_calloc(1, sizeof *v);
	if (!v)
		return kvs_fail(KVS_ERR_NOMEM, "allocator: out of host memory");
	v->page_bytes = c->page_bytes;
	v->tensors = c->num_kv_tensors;
	v->tpp = (uint32_t)tpp;
	v->group_bytes = gb;
	v->groups = v->free_groups = groups;
	v->watermark = (uint64_t)(c->watermark * (double)groups);
	v->leftover = c->budget_bytes - groups * gb;
	a->p = v;
	return KVS_OK;
}

static void vatt_fini(kvs_alloc *a)
{
	kvs_free(V(a));
}

static inline uint64_t groups_for(const vatt *v, uint64_t tokens)
{
	return kvs_div_ceil(tokens, v->tpp);
}

/* Page groups (of the full layers' tensors) the windowed layers of a
 * sequence of final length n map: those of min(n, window) tokens per
 * windowed tensor, window_num / window_den of them (kvs_alloc_config). */
static uint32_t window_groups(const kvs_alloc *a, uint64_t n)
{
	uint64_t w = a->cfg.window_tokens;
	return kvs_window_units(&a->cfg, groups_for(V(a), n < w ? n : w));
}

static kvs_admit_verdict vatt_can_admit(const kvs_alloc *a,
					const kvs_seq_desc *d,
					kvs_admit_reason *why)
{
	const vatt *v = V(a);
	uint64_t final_len = (uint64_t)d->prompt_tokens + d->output_tokens;
	uint64_t win = window_groups(a, final_len);
	uint64_t need = groups_for(v, d->prompt_tokens) + win;
	if (groups_for(v, final_len) + win > v->groups ||
	    need + v->watermark > v->groups) {
		*why = KVS_REASON_EXCEEDS_BUDGET;
		return KVS_ADMIT_NEVER;
	}
	if (need > v->free_groups) {
		*why = KVS_REASON_NO_FREE_BLOCKS;
		return KVS_ADMIT_LATER;
	}
	if (v->free_groups - need < v->watermark) {
		*why = KVS_REASON_WATERMARK;
		return KVS_ADMIT_LATER;
	}
	*why = KVS_REASON_NONE;
	return KVS_ADMIT_NOW;
}

static kvs_status vatt_admit(kvs_alloc *a, kvs_seq_rec *s,
			     const kvs_seq_desc *d, uint32_t *cached)
{
	vatt *v = V(a);
	uint64_t need = groups_for(v, d->prompt_tokens);
	s->wunits = window_groups(a, s->final_len);
	a->win_sum += s->wunits;
	v->free_groups -= need + s->wunits;
	s->pages = (uint32_t)need;
	s->len = 0;
	kvs_seq_set_res(a, s, (uint64_t)s->pages * v->tpp);
	*cached = 0;
	return KVS_OK;
}

static kvs_status vatt_grow(kvs_alloc *a, kvs_seq_rec *s, uint32_t n,
			    const kvs_block_copy **copies, size_t *ncopies)
{
	vatt *v = V(a);
	uint64_t newlen = (uint64_t)s->len + n;
	uint64_t want = groups_for(v, newlen);
	if (want > s->pages) {
		uint64_t more = want - s->pages;
		if (more > v->free_groups)
			return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: not enough free pages to grow the sequence");
		v->free_groups -= more;
		s->pages = (uint32_t)want;
	}
	s->len = (uint32_t)newlen;
	a->tok_sum += n;
	kvs_seq_set_res(a, s, (uint64_t)s->pages * v->tpp);
	if (copies)
		*copies = NULL;
	if (ncopies)
		*ncopies = 0;
	return KVS_OK;
}

static uint32_t vatt_room(const kvs_alloc *a, const kvs_seq_rec *s)
{
	uint64_t cap = (uint64_t)s->pages * V(a)->tpp;
	return cap > s->len ? (uint32_t)(cap - s->len) : 0;
}

static void vatt_release(kvs_alloc *a, kvs_seq_rec *s)
{
	V(a)->free_groups += s->pages + s->wunits;
	a->win_sum -= s->wunits;
	s->wunits = 0;
	s->pages = 0;
	a->tok_sum -= s->len;
	a->res_sum -= s->res;
	s->res = 0;
}

static kvs_status vatt_fork(kvs_alloc *a, kvs_seq_rec *par, kvs_seq_rec *c)
{
	vatt *v = V(a);
	uint64_t need = groups_for(v, par->len);
	uint32_t win = window_groups(a, c->final_len);
	if (need + win > v->free_groups)
		return kvs_fail_static(KVS_ERR_NOSPACE, "allocator: fork: not enough free pages for the child");
	v->free_groups -= need + win;
	c->wunits = win;
	a->win_sum += win;
	c->pages = (uint32_t)need;
	c->len = par->len;
	a->tok_sum += c->len;
	kvs_seq_set_res(a, c, (uint64_t)c->pages * v->tpp);
	a->stats.copy_bytes += (uint64_t)par->len * a->cfg.kv_bytes_per_token +
			       kvs_window_copy_bytes(&a->cfg, par->len);
	return KVS_OK;
}

static void vatt_account(const kvs_alloc *a, const kvs_seq_desc *next,
			 kvs_mem_parts *out)
{
	const vatt *v = V(a);
	uint64_t B = a->cfg.kv_bytes_per_token;
	uint64_t mapped = (v->groups - v->free_groups) * v->group_bytes;
	uint64_t win = a->win_sum * v->group_bytes;
	out->token_states = a->tok_sum * B + win;
	out->reservation = a->res_sum * B;
	out->internal_frag = mapped - (a->tok_sum + a->res_sum) * B - win + v->leftover;
	out->external_frag = 0;
	out->cached_idle = 0;
	out->free = v->free_groups * v->group_bytes;
	(void)next;
}

static bool vatt_is_valid(const kvs_alloc *a)
{
	const vatt *v = V(a);
	uint64_t mapped = 0, wsum = 0;
	for (uint32_t r = 0; r < a->nrecs; r++) {
		const kvs_seq_rec *s = &a->recs[r];
		if (s->state == KVS_SEQ_UNUSED)
			continue;
		uint64_t cap = (uint64_t)s->pages * v->tpp;
		KVS_VALID(s->state == KVS_SEQ_RESIDENT);    /* never swapped */
		KVS_VALID(cap >= s->len);
		KVS_VALID(s->res == kvs_seq_reserved(cap, s->len, s->final_len));
		/* never more pages than the longer of len and one page */
		KVS_VALID(!(s->pages > 1 && groups_for(v, s->len) < s->pages &&
			    (uint64_t)(s->pages - 1) * v->tpp >= s->final_len));
		mapped += s->pages;
		KVS_VALID(s->wunits == window_groups(a, s->final_len));
		wsum += s->wunits;
	}
	KVS_VALID(wsum == a->win_sum);
	KVS_VALID(mapped + wsum + v->free_groups == v->groups);
	/* bytes held cover what is stored and reserved */
	KVS_VALID(mapped * v->group_bytes >=
		  (a->tok_sum + a->res_sum) * a->cfg.kv_bytes_per_token);
	return true;
}

static uint64_t vatt_num_units(const kvs_alloc *a)
{
	return V(a)->groups;
}

static uint64_t vatt_free_units(const kvs_alloc *a)
{
	return V(a)->free_groups;
}

static uint64_t vatt_metadata_bytes(const kvs_alloc *a)
{
	(void)a;
	return sizeof(vatt);
}

const kvs_alloc_methods kvs_vatt_methods = {
	.name = "vattention",
	.init = vatt_init,
	.fini = vatt_fini,
	.can_admit = vatt_can_admit,
	.admit = vatt_admit,
	.grow = vatt_grow,
	.room = vatt_room,
	.release = vatt_release,
	.fork = vatt_fork,
	.swap_out = NULL,
	.swap_in = NULL,
	.can_swap_in = NULL,
	.account = vatt_account,
	.is_valid = vatt_is_valid,
	.num_units = vatt_num_units,
	.free_units = vatt_free_units,
	.metadata_bytes = vatt_metadata_bytes,
};
