/*
 * test_allocator_random.c - a million random operations per policy against
 * deliberately simple reference models, fixed seeds.
 *
 * The references use none of the allocator's structures: the paged model
 * keeps one small record per block (reference count, hash, a timestamp for
 * LRU order) and finds everything by linear scan; the contiguous model keeps
 * an owner per token slot and finds holes by scanning runs; the vAttention
 * model counts pages per sequence.  After every operation the test compares
 * the result status, cached tokens, copies, lengths, room, free units, the
 * six memory parts (with a random waiting request) and the statistics, and
 * runs the full validator kvs_alloc_is_valid() (O(blocks + table entries);
 * the pools here are small, so it runs after every single operation).
 *
 * KVS_TEST_SCALE (default 1) scales the operation count (CI uses 0.1 under
 * sanitizers).
 */
#include "test_util.h"
#include "kvsim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared plumbing ----------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static uint64_t num_ops(void)
{
	return kvs_test_scaled(1000000, 1000);
}

#define MAXS 24          /* live sequences at most */
#define MAXT 128         /* blocks per table at most */

enum { R_FREE = 0, R_RES, R_SWAP };

typedef struct rseq {
	int state;
	kvs_seq_id id;
	uint32_t len, final_len;
	/* paged */
	int table[MAXT];     /* reference block index (device) */
	uint32_t nb;         /* blocks (device or host) */
	uint64_t hashes[MAXT];
	uint32_t nh;
	/* contiguous */
	uint32_t start, region;
	/* vattention */
	uint32_t pages;
} rseq;

static rseq seqs[MAXS];
static uint64_t next_id;

static kvs_seq_id fresh_id(void)
{
	/* spread ids over 64 bits to exercise the sequence map */
	uint64_t z = ++next_id * 0xd6e8feb86659fd93ull;
	return z ^ (z >> 29);
}

static int pick_live(int state)
{
	int idx[MAXS], n = 0;
	for (int i = 0; i < MAXS; i++)
		if (seqs[i].state == state)
			idx[n++] = i;
	return n ? idx[below((uint32_t)n)] : -1;
}

static int free_slot(void)
{
	for (int i = 0; i < MAXS; i++)
		if (seqs[i].state == R_FREE)
			return i;
	return -1;
}

static uint32_t random_prompt(uint32_t max)
{
	/* mostly short, sometimes long */
	return below(4) ? 1 + below(max / 3) : 1 + below(max);
}

static void check_parts(const kvs_mem_parts *got, const kvs_mem_parts *want,
			uint64_t budget)
{
	assert_int_equal(got->token_states, want->token_states);
	assert_int_equal(got->reservation, want->reservation);
	assert_int_equal(got->internal_frag, want->internal_frag);
	assert_int_equal(got->external_frag, want->external_frag);
	assert_int_equal(got->cached_idle, want->cached_idle);
	assert_int_equal(got->free, want->free);
	assert_int_equal(got->token_states + got->reservation + got->internal_frag +
			 got->external_frag + got->cached_idle + got->free, budget);
}

/* ---- paged reference model --------------------------------------------------------- */

#define NB 48            /* device blocks */
#define BSZ 4            /* tokens per block */
#define HB 24            /* host blocks */
#define PB 3             /* bytes per token */
#define P_MML 96

typedef struct rblock {
	int ref;
	bool hashed;
	uint64_t hash;
	uint64_t stamp;      /* when it became cached-idle */
} rblock;

static struct {
	rblock b[NB];
	uint64_t clock;
	uint32_t host_free;
	uint32_t wm;
	bool caching;
	kvs_alloc_stats st;
} pm;

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
	return a / b + (a % b != 0);
}

static uint32_t pm_fill(uint32_t i, uint32_t len)
{
	if (len <= i * BSZ)
		return 0;
	return len - i * BSZ >= BSZ ? BSZ : len - i * BSZ;
}

static int pm_find(uint64_t h)
{
	for (int i = 0; i < NB; i++)
		if (pm.b[i].hashed && pm.b[i].hash == h)
			return i;
	return -1;
}

static uint32_t pm_count(int what)   /* 0 free, 1 idle */
{
	uint32_t n = 0;
	for (int i = 0; i < NB; i++)
		if (pm.b[i].ref == 0 && pm.b[i].hashed == (what == 1))
			n++;
	return n;
}

static int pm_take(void)
{
	for (int i = 0; i < NB; i++) {
		if (pm.b[i].ref == 0 && !pm.b[i].hashed) {
			pm.b[i].ref = 1;
			return i;
		}
	}
	int best = -1;
	for (int i = 0; i < NB; i++)
		if (pm.b[i].ref == 0 && (best < 0 || pm.b[i].stamp < pm.b[best].stamp))
			best = i;
	assert_true(best >= 0);
	pm.b[best].hashed = false;
	pm.b[best].ref = 1;
	pm.st.evictions++;
	return best;
}

static void pm_unref(int blk)
{
	assert_true(pm.b[blk].ref > 0);
	if (--pm.b[blk].ref == 0 && pm.b[blk].hashed)
		pm.b[blk].stamp = ++pm.clock;
}

static void pm_register(rseq *s, uint32_t old)
{
	if (!pm.caching)
		return;
	for (uint32_t i = old / BSZ; i < s->len / BSZ && i < s->nh; i++) {
		int blk = s->table[i];
		if (pm.b[blk].hashed || pm_find(s->hashes[i]) >= 0)
			continue;
		pm.b[blk].hashed = true;
		pm.b[blk].hash = s->hashes[i];
	}
}

static uint32_t pm_hits(const kvs_seq_desc *d, uint32_t *idle)
{
	*idle = 0;
	if (!pm.caching || !d->block_hashes)
		return 0;
	uint32_t lim = (d->prompt_tokens - 1) / BSZ, h = 0;
	if (lim > d->num_block_hashes)
		lim = d->num_block_hashes;
	for (; h < lim; h++) {
		int blk = pm_find(d->block_hashes[h]);
		if (blk < 0)
			break;
		*idle += pm.b[blk].ref == 0;
	}
	return h;
}

static kvs_admit_verdict pm_can_admit(const kvs_seq_desc *d,
				      kvs_admit_reason *why)
{
	uint32_t final_len = d->prompt_tokens + d->output_tokens;
	uint32_t np = ceil_div(d->prompt_tokens, BSZ);
	if (final_len > P_MML) {
		*why = KVS_REASON_EXCEEDS_MAX_LEN;
		return KVS_ADMIT_NEVER;
	}
	if (ceil_div(final_len, BSZ) > NB || np + pm.wm > NB) {
		*why = KVS_REASON_EXCEEDS_BUDGET;
		return KVS_ADMIT_NEVER;
	}
	uint32_t idle, hits = pm_hits(d, &idle);
	uint32_t need = np - hits + idle;
	uint32_t avail = pm_count(0) + pm_count(1);
	if (need > avail) {
		*why = KVS_REASON_NO_FREE_BLOCKS;
		return KVS_ADMIT_LATER;
	}
	if (avail - need < pm.wm) {
		*why = KVS_REASON_WATERMARK;
		return KVS_ADMIT_LATER;
	}
	*why = KVS_REASON_NONE;
	return KVS_ADMIT_NOW;
}

static uint32_t pm_room(const rseq *s)
{
	uint32_t i = s->len / BSZ;
	while (i < s->nb && pm.b[s->table[i]].ref == 1)
		i++;
	return i * BSZ > s->len ? i * BSZ - s->len : 0;
}

static void pm_account(kvs_mem_parts *m)
{
	uint32_t fill[NB], resmax[NB];
	memset(fill, 0, sizeof fill);
	memset(resmax, 0, sizeof resmax);
	for (int k = 0; k < MAXS; k++) {
		const rseq *s = &seqs[k];
		if (s->state != R_RES)
			continue;
		for (uint32_t i = 0; i < s->nb; i++) {
			int blk = s->table[i];
			uint32_t f = pm_fill(i, s->len);
			fill[blk] = f;
			uint32_t lo = i * BSZ + f, hi = (i + 1) * BSZ;
			uint32_t r = s->final_len > lo
				? (s->final_len < hi ? s->final_len : hi) - lo : 0;
			if (r > resmax[blk])
				resmax[blk] = r;
		}
	}
	uint64_t tok = 0, res = 0, owned = 0;
	for (int i = 0; i < NB; i++) {
		if (pm.b[i].ref == 0)
			continue;
		owned++;
		tok += fill[i];
		res += resmax[i];
	}
	m->token_states = tok * PB;
	m->reservation = res * PB;
	m->internal_frag = owned * BSZ * PB - (tok + res) * PB + 7;
	m->external_frag = 0;
	m->cached_idle = pm_count(1) * BSZ * PB;
	m->free = pm_count(0) * BSZ * PB;
}

static void make_hashes(uint64_t *h, uint32_t n, uint32_t doc)
{
	uint64_t parent = 0;
	for (uint32_t i = 0; i < n; i++)
		parent = h[i] = kvs_hash_block_id(parent, doc * 1000u + i, 0);
}

static void paged_run(bool caching, double share)
{
	memset(&pm, 0, sizeof pm);
	memset(seqs, 0, sizeof seqs);
	pm.caching = caching;
	pm.wm = caching ? 2 : 0;          /* watermark 0.05 of 48 */
	pm.host_free = HB;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.budget_bytes = NB * BSZ * PB + 7;
	c.kv_bytes_per_token = PB;
	c.block_size = BSZ;
	c.max_model_len = P_MML;
	c.watermark = caching ? 0.05 : 0.0;
	c.enable_prefix_caching = caching;
	c.swap_bytes = HB * BSZ * PB + 5;
	kvs_alloc *a = NULL;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_OK);
	uint64_t n = (uint64_t)(num_ops() * share);
	for (uint64_t op = 0; op < n; op++) {
		uint32_t r = below(100);
		int k;
		if (r < 18) {                               /* admit */
			k = free_slot();
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			uint64_t h[MAXT];
			kvs_seq_desc d = { .seq = fresh_id(),
					   .prompt_tokens = random_prompt(P_MML),
					   .output_tokens = below(40) };
			if (below(20) == 0)
				d.prompt_tokens += 20;      /* now and then too long */
			uint32_t nfull = d.prompt_tokens / BSZ;
			if (below(5)) {
				make_hashes(h, nfull + below(2), below(6));
				d.block_hashes = h;
				d.num_block_hashes = nfull;
			}
			kvs_admit_reason why, rwhy;
			kvs_admit_verdict v = kvs_alloc_can_admit(a, &d, &why);
			assert_int_equal(v, pm_can_admit(&d, &rwhy));
			assert_int_equal(why, rwhy);
			uint32_t cached = 12345;
			kvs_status st = kvs_alloc_admit(a, &d, &cached);
			if (v != KVS_ADMIT_NOW) {
				assert_int_equal(st, v == KVS_ADMIT_NEVER ?
						 KVS_ERR_LIMIT : KVS_ERR_NOSPACE);
				assert_int_equal(cached, 12345);
			} else {
				assert_int_equal(st, KVS_OK);
				uint32_t idle, hits = pm_hits(&d, &idle);
				uint32_t np = ceil_div(d.prompt_tokens, BSZ);
				memset(s, 0, sizeof *s);
				s->state = R_RES;
				s->id = d.seq;
				s->final_len = d.prompt_tokens + d.output_tokens;
				for (uint32_t i = 0; i < hits; i++) {
					int blk = pm_find(d.block_hashes[i]);
					pm.b[blk].ref++;
					s->table[i] = blk;
				}
				for (uint32_t i = hits; i < np; i++)
					s->table[i] = pm_take();
				s->nb = np;
				s->len = hits * BSZ;
				if (caching && d.block_hashes) {
					s->nh = d.num_block_hashes;
					memcpy(s->hashes, h, s->nh * sizeof *h);
					pm.st.prefix_hit_blocks += hits;
					pm.st.prefix_miss_blocks += np - hits;
					pm.st.prefix_hit_tokens += s->len;
					pm.st.prefix_miss_tokens += d.prompt_tokens - s->len;
				} else if (caching) {
					pm.st.prefix_miss_blocks += np;
					pm.st.prefix_miss_tokens += d.prompt_tokens;
				}
				assert_int_equal(cached, s->len);
			}
		} else if (r < 60) {                        /* grow */
			k = pick_live(R_RES);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			uint32_t g = below(3) ? 1 : below(14);
			const kvs_block_copy *cp;
			size_t nc = 777;
			kvs_status st = kvs_alloc_grow(a, s->id, g, &cp, &nc);
			uint32_t newlen = s->len + g;
			if (newlen > P_MML) {
				assert_int_equal(st, KVS_ERR_LIMIT);
				assert_int_equal(nc, 777);
				continue;
			}
			uint32_t cap = s->nb * BSZ, ncow = 0, ncopy = 0;
			uint32_t top = newlen < cap ? newlen : cap;
			if (g && s->len < cap)
				for (uint32_t i = s->len / BSZ; i <= (top - 1) / BSZ; i++)
					ncow += pm.b[s->table[i]].ref > 1;
			uint32_t want = ceil_div(newlen, BSZ);
			uint32_t fresh = want > s->nb ? want - s->nb : 0;
			if (ncow + fresh > pm_count(0) + pm_count(1)) {
				assert_int_equal(st, KVS_ERR_NOSPACE);
				assert_int_equal(nc, 777);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			if (ncow) {
				for (uint32_t i = s->len / BSZ; i <= (top - 1) / BSZ; i++) {
					int old = s->table[i];
					if (pm.b[old].ref <= 1)
						continue;
					int nbk = pm_take();
					pm_unref(old);
					s->table[i] = nbk;
					if (pm_fill(i, s->len)) {
						assert_int_not_equal(cp[ncopy].src,
								     cp[ncopy].dst);
						ncopy++;
						pm.st.cow_copies++;
					}
				}
			}
			for (uint32_t i = 0; i < fresh; i++)
				s->table[s->nb + i] = pm_take();
			s->nb += fresh;
			uint32_t old = s->len;
			s->len = newlen;
			pm_register(s, old);
			assert_int_equal(nc, ncopy);
		} else if (r < 72) {                        /* release */
			k = pick_live(below(4) ? R_RES : R_SWAP);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			assert_int_equal(kvs_alloc_release(a, s->id), KVS_OK);
			if (s->state == R_RES) {
				for (uint32_t i = s->nb; i-- > 0;)
					pm_unref(s->table[i]);
			} else {
				pm.host_free += s->nb;
			}
			s->state = R_FREE;
		} else if (r < 78) {                        /* fork */
			k = pick_live(R_RES);
			int ck = free_slot();
			if (k < 0 || ck < 0)
				continue;
			rseq *p = &seqs[k], *ch = &seqs[ck];
			uint32_t out = below(30);
			kvs_seq_id cid = fresh_id();
			kvs_status st = kvs_alloc_fork(a, p->id, cid, out);
			if (p->len + out > P_MML) {
				assert_int_equal(st, KVS_ERR_LIMIT);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			*ch = *p;
			ch->id = cid;
			ch->final_len = p->len + out;
			for (uint32_t i = 0; i < p->nb; i++)
				pm.b[p->table[i]].ref++;
		} else if (r < 84) {                        /* swap out */
			k = pick_live(R_RES);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			const kvs_block_copy *cp;
			size_t nc = 777;
			kvs_status st = kvs_alloc_swap_out(a, s->id, &cp, &nc);
			uint32_t kb = ceil_div(s->len, BSZ);
			if (kb > pm.host_free) {
				assert_int_equal(st, KVS_ERR_NOSPACE);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			assert_int_equal(nc, kb);
			for (uint32_t i = s->nb; i-- > 0;)
				pm_unref(s->table[i]);
			pm.host_free -= kb;
			s->nb = kb;
			s->state = R_SWAP;
			pm.st.swap_out_blocks += kb;
		} else if (r < 90) {                        /* swap in */
			k = pick_live(R_SWAP);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			uint32_t avail = pm_count(0) + pm_count(1);
			bool ok = s->nb <= avail && avail - s->nb >= pm.wm;
			assert_int_equal(kvs_alloc_can_swap_in(a, s->id), ok);
			const kvs_block_copy *cp;
			size_t nc = 777;
			kvs_status st = kvs_alloc_swap_in(a, s->id, &cp, &nc);
			if (!ok) {
				assert_int_equal(st, KVS_ERR_NOSPACE);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			assert_int_equal(nc, s->nb);
			for (uint32_t i = 0; i < s->nb; i++)
				s->table[i] = pm_take();
			pm.host_free += s->nb;
			pm.st.swap_in_blocks += s->nb;
			s->state = R_RES;
			pm_register(s, 0);
		} else if (r < 93) {                        /* misuse */
			kvs_seq_id bogus = fresh_id();
			assert_int_equal(kvs_alloc_release(a, bogus), KVS_ERR_STATE);
			assert_int_equal(kvs_alloc_grow(a, bogus, 1, NULL, NULL),
					 KVS_ERR_STATE);
			k = pick_live(R_RES);
			if (k >= 0) {
				kvs_seq_desc d = { .seq = seqs[k].id,
						   .prompt_tokens = 1 };
				assert_int_equal(kvs_alloc_admit(a, &d, NULL),
						 KVS_ERR_STATE);
				assert_int_equal(kvs_alloc_swap_in(a, seqs[k].id,
								   NULL, NULL),
						 KVS_ERR_STATE);
			}
			k = pick_live(R_SWAP);
			if (k >= 0)
				assert_int_equal(kvs_alloc_grow(a, seqs[k].id, 1,
								NULL, NULL),
						 KVS_ERR_STATE);
			/* without caching (no eviction): raw blocks taken off
			 * the stack (stale words there after lazy releases),
			 * a double give refused, then given back last first,
			 * which leaves the stack as it was */
			uint32_t nt = below(4);
			kvs_block_id ids[4], back[4];
			if (!caching && kvs_alloc_blocks_take(a, nt, ids) == KVS_OK) {
				if (nt > 0) {
					kvs_block_id twice[2] = { ids[0], ids[0] };
					assert_int_equal(kvs_alloc_blocks_give(a, 2, twice),
							 KVS_ERR_STATE);
					assert_true(kvs_alloc_is_valid(a));
				}
				for (uint32_t j = 0; j < nt; j++)
					back[j] = ids[nt - 1 - j];
				assert_int_equal(kvs_alloc_blocks_give(a, nt, back), KVS_OK);
			}
		}
		/* after every operation: compare, then validate */
		assert_true(kvs_alloc_is_valid(a));
		assert_int_equal(kvs_alloc_free_blocks(a), pm_count(0) + pm_count(1));
		k = pick_live(R_RES);
		if (k >= 0) {
			assert_int_equal(kvs_alloc_len(a, seqs[k].id), seqs[k].len);
			assert_int_equal(kvs_alloc_room(a, seqs[k].id),
					 pm_room(&seqs[k]));
			const kvs_block_id *ids;
			uint32_t nids;
			assert_int_equal(kvs_alloc_block_table(a, seqs[k].id,
							       &ids, &nids), KVS_OK);
			assert_int_equal(nids, seqs[k].nb);
		}
		kvs_mem_parts got, want;
		kvs_alloc_account(a, NULL, &got);
		pm_account(&want);
		check_parts(&got, &want, c.budget_bytes);
		kvs_alloc_stats st;
		kvs_alloc_get_stats(a, &st);
		assert_int_equal(st.evictions, pm.st.evictions);
		assert_int_equal(st.cow_copies, pm.st.cow_copies);
		assert_int_equal(st.prefix_hit_blocks, pm.st.prefix_hit_blocks);
		assert_int_equal(st.prefix_miss_blocks, pm.st.prefix_miss_blocks);
		assert_int_equal(st.prefix_hit_tokens, pm.st.prefix_hit_tokens);
		assert_int_equal(st.prefix_miss_tokens, pm.st.prefix_miss_tokens);
		assert_int_equal(st.swap_out_blocks, pm.st.swap_out_blocks);
		assert_int_equal(st.swap_in_blocks, pm.st.swap_in_blocks);
	}
	for (int k = 0; k < MAXS; k++)
		if (seqs[k].state != R_FREE)
			assert_int_equal(kvs_alloc_release(a, seqs[k].id), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	assert_int_equal(kvs_alloc_num_seqs(a), 0);
	assert_int_equal(kvs_alloc_free_blocks(a), NB);
	if (caching)
		assert_true(pm.st.evictions > 0 && pm.st.prefix_hit_blocks > 0 &&
			    pm.st.cow_copies > 0 && pm.st.swap_in_blocks > 0);
	/* the prefix index stayed O(1) per operation (about 2 slots at its
	 * load of 1/2; a degenerate index probes whole clusters) */
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	if (caching) {
		assert_true(st.prefix_index_ops >= pm.st.evictions);
		assert_true(st.prefix_index_probes >= st.prefix_index_ops);
		assert_true(st.prefix_index_probes <= 3 * st.prefix_index_ops);
	} else {
		assert_int_equal(st.prefix_index_ops, 0);
		assert_int_equal(st.prefix_index_probes, 0);
	}
	kvs_alloc_destroy(a);
}

static void test_paged_random(void **state)
{
	(void)state;
	rng_state = 0x5eed0001;
	paged_run(true, 1.0);
}

static void test_paged_plain_random(void **state)
{
	(void)state;
	rng_state = 0x5eed0002;
	paged_run(false, 0.25);
}

/* ---- the raw block pool against a reference stack ------------------------------------ */

/* kvs_block_pool_take1 / give1 and kvs_alloc_blocks_take / give, mixed,
 * against an array stack: a take pops the reference's top, a give of a
 * taken id pushes it, and a give of anything else (a free id, an id past
 * the pool, the pool's size, KVS_BLOCK_NONE) fails and changes nothing.
 * Gives favour the block taken last (back to the slot it came from: the
 * inline give's shortcut) and the top that moved since (the slot holds
 * another id). */
static void test_pool_random(void **state)
{
	(void)state;
	enum { N = 12 };
	rng_state = 0x5eed0007;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.kv_bytes_per_token = 64;
	c.block_size = 16;
	c.budget_bytes = N * 16 * 64;
	c.max_model_len = 16 * N;
	c.watermark = 0;
	kvs_alloc *a = NULL;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_OK);
	kvs_block_pool *pool = kvs_alloc_block_pool(a);
	assert_non_null(pool);
	uint32_t stack[N], nfree = N;       /* reference: block 0 on top */
	for (uint32_t i = 0; i < N; i++)
		stack[i] = N - 1 - i;
	bool taken[N] = { false };
	uint32_t held[N], nheld = 0;         /* taken ids, in taking order */
	uint64_t ops = num_ops() / 4;
	for (uint64_t op = 0; op < ops; op++) {
		uint32_t r = below(100);
		if (r < 40) {                    /* take one or a few */
			uint32_t n = r < 30 ? 1 : 1 + below(4);
			kvs_block_id ids[4];
			kvs_status rc;
			if (n == 1) {
				ids[0] = kvs_block_pool_take1(pool);
				rc = ids[0] == KVS_BLOCK_NONE ? KVS_ERR_NOSPACE : KVS_OK;
			} else {
				rc = kvs_alloc_blocks_take(a, n, ids);
			}
			if (n > nfree) {
				assert_int_equal(rc, KVS_ERR_NOSPACE);
			} else {
				assert_int_equal(rc, KVS_OK);
				for (uint32_t i = 0; i < n; i++) {
					assert_int_equal(ids[i], stack[--nfree]);
					taken[ids[i]] = true;
					held[nheld++] = ids[i];
				}
			}
		} else if (r < 90 && nheld) {    /* give back one or a few held */
			uint32_t n = r < 80 ? 1 : 1 + below(nheld < 3 ? nheld : 3);
			kvs_block_id ids[3];
			for (uint32_t i = 0; i < n; i++) {
				uint32_t k = below(2) ? nheld - 1 : below(nheld);
				ids[i] = held[k];
				held[k] = held[--nheld];
			}
			kvs_status rc = n == 1 ? kvs_block_pool_give1(pool, ids[0])
					       : kvs_alloc_blocks_give(a, n, ids);
			assert_int_equal(rc, KVS_OK);
			for (uint32_t i = 0; i < n; i++) {
				taken[ids[i]] = false;
				stack[nfree++] = ids[i];
			}
		} else if (r < 93 && nheld && nfree) {
			/* a batch give with a free id after held ones: refused,
			 * nothing changed (its pushes above the top read as
			 * taken again) */
			kvs_block_id ids[3] = { held[below(nheld)], 0, 0 };
			uint32_t m = 2;
			if (nheld > 1 && ids[0] != held[nheld - 1])
				ids[m - 1] = held[nheld - 1], m = 3;
			ids[m - 1] = stack[below(nfree)];
			assert_int_equal(kvs_alloc_blocks_give(a, m, ids), KVS_ERR_STATE);
		} else if (r < 96 && pool->nfree_ < N) {
			/* the id in the slot just above the top, when not held:
			 * the shortcut's first test passes, the second must not */
			kvs_block_id id = pool->free_ids_[pool->nfree_];
			bool held_now = false;
			for (uint32_t i = 0; i < nheld; i++)
				held_now |= held[i] == id;
			if (!held_now)
				assert_int_equal(kvs_block_pool_give1(pool, id), KVS_ERR_STATE);
		} else {                         /* a give that must fail */
			kvs_block_id bad;
			uint32_t k = below(4);
			if (k == 0)
				bad = N;
			else if (k == 1)
				bad = below(2) ? KVS_BLOCK_NONE : N + below(1000);
			else if (nfree)
				bad = stack[below(nfree)];   /* free: given twice */
			else
				bad = N;
			assert_false(bad < N && taken[bad]);
			assert_int_equal(kvs_block_pool_give1(pool, bad), KVS_ERR_STATE);
		}
		assert_int_equal(kvs_alloc_free_blocks(a), nfree);
		assert_true(kvs_alloc_is_valid(a));
	}
	kvs_alloc_destroy(a);
}

/* ---- contiguous reference model ------------------------------------------------------ */

#define CS 120           /* token slots */
#define CB 3             /* bytes per token */
#define CX 2             /* budget bytes past the last slot */
#define C_MML 40

static int owner[CS];    /* slot -> seq index, -1 free */

static uint32_t cm_region(kvs_policy p, uint32_t prompt, uint32_t output)
{
	if (p == KVS_POLICY_MAX)
		return C_MML;
	if (p == KVS_POLICY_POW2) {
		uint32_t p2 = 1;
		while (p2 < output)
			p2 *= 2;
		return prompt + p2 > C_MML ? C_MML : prompt + p2;
	}
	return prompt + output ? prompt + output : 1;
}

/* holes as (start slot, bytes); returns count */
static int cm_holes(uint32_t *start, uint64_t *bytes)
{
	int n = 0;
	uint32_t i = 0;
	while (i < CS) {
		if (owner[i] >= 0) {
			i++;
			continue;
		}
		uint32_t j = i;
		while (j < CS && owner[j] < 0)
			j++;
		start[n] = i;
		bytes[n] = (uint64_t)(j - i) * CB + (j == CS ? CX : 0);
		n++;
		i = j;
	}
	if (owner[CS - 1] >= 0 && CX != 0) {
		start[n] = CS;
		bytes[n] = CX;
		n++;
	}
	return n;
}

static int cm_place(bool best, uint32_t tokens)
{
	uint32_t start[CS + 1];
	uint64_t bytes[CS + 1];
	int n = cm_holes(start, bytes), pick = -1;
	for (int i = 0; i < n; i++) {
		if (bytes[i] < (uint64_t)tokens * CB)
			continue;
		if (!best) {
			pick = i;
			break;
		}
		if (pick < 0 || bytes[i] < bytes[pick])
			pick = i;
	}
	return pick < 0 ? -1 : (int)start[pick];
}

static void cm_account(kvs_policy p, const kvs_seq_desc *next, kvs_mem_parts *m)
{
	uint64_t tok = 0, res = 0, held = 0;
	for (int k = 0; k < MAXS; k++) {
		const rseq *s = &seqs[k];
		if (s->state != R_RES)
			continue;
		tok += s->len;
		uint32_t top = s->region < s->final_len ? s->region : s->final_len;
		res += top > s->len ? top - s->len : 0;
		held += s->region;
	}
	uint64_t need = (uint64_t)(next ? cm_region(p, next->prompt_tokens,
						    next->output_tokens)
				   : (p == KVS_POLICY_MAX ? C_MML : 1)) * CB;
	uint32_t start[CS + 1];
	uint64_t bytes[CS + 1], ext = 0, fr = 0;
	int n = cm_holes(start, bytes);
	for (int i = 0; i < n; i++) {
		if (bytes[i] < need)
			ext += bytes[i];
		else
			fr += bytes[i];
	}
	m->token_states = tok * CB;
	m->reservation = res * CB;
	m->internal_frag = (held - tok - res) * CB;
	m->external_frag = ext;
	m->cached_idle = 0;
	m->free = fr;
}

static void contig_run(kvs_policy p, bool best, uint64_t seed)
{
	rng_state = seed;
	memset(seqs, 0, sizeof seqs);
	for (int i = 0; i < CS; i++)
		owner[i] = -1;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = p;
	c.budget_bytes = CS * CB + CX;
	c.kv_bytes_per_token = CB;
	c.max_model_len = C_MML;
	c.best_fit = best;
	kvs_alloc *a = NULL;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_OK);
	uint64_t n = num_ops();
	for (uint64_t op = 0; op < n; op++) {
		uint32_t r = below(100);
		int k;
		if (r < 30) {                               /* admit */
			k = free_slot();
			if (k < 0)
				continue;
			kvs_seq_desc d = { .seq = fresh_id(),
					   .prompt_tokens = random_prompt(C_MML),
					   .output_tokens = below(24) };
			uint32_t reg = cm_region(p, d.prompt_tokens, d.output_tokens);
			uint32_t free_b = 0;
			for (int i = 0; i < CS; i++)
				free_b += owner[i] < 0 ? CB : 0;
			free_b += CX;   /* the budget tail is never owned */
			int at = cm_place(best, reg);
			kvs_admit_reason why;
			kvs_admit_verdict v = kvs_alloc_can_admit(a, &d, &why);
			if (d.prompt_tokens + d.output_tokens > C_MML) {
				assert_int_equal(v, KVS_ADMIT_NEVER);
				assert_int_equal(why, KVS_REASON_EXCEEDS_MAX_LEN);
			} else if (at < 0) {
				assert_int_equal(v, KVS_ADMIT_LATER);
				assert_int_equal(why, (uint64_t)reg * CB > free_b ?
						 KVS_REASON_NO_FREE_BYTES :
						 KVS_REASON_NO_HOLE);
			} else {
				assert_int_equal(v, KVS_ADMIT_NOW);
			}
			kvs_status st = kvs_alloc_admit(a, &d, NULL);
			if (v != KVS_ADMIT_NOW) {
				assert_int_not_equal(st, KVS_OK);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			rseq *s = &seqs[k];
			memset(s, 0, sizeof *s);
			s->state = R_RES;
			s->id = d.seq;
			s->final_len = d.prompt_tokens + d.output_tokens;
			s->start = (uint32_t)at;
			s->region = reg;
			for (uint32_t i = 0; i < reg; i++)
				owner[at + i] = k;
		} else if (r < 70) {                        /* grow */
			k = pick_live(R_RES);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			uint32_t g = below(3) ? 1 : below(10);
			kvs_status st = kvs_alloc_grow(a, s->id, g, NULL, NULL);
			if (s->len + g > C_MML)
				assert_int_equal(st, KVS_ERR_LIMIT);
			else if (s->len + g > s->region)
				assert_int_equal(st, KVS_ERR_NOSPACE);
			else {
				assert_int_equal(st, KVS_OK);
				s->len += g;
			}
		} else if (r < 90) {                        /* release */
			k = pick_live(R_RES);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			assert_int_equal(kvs_alloc_release(a, s->id), KVS_OK);
			assert_int_equal(kvs_alloc_release(a, s->id), KVS_ERR_STATE);
			for (uint32_t i = 0; i < s->region; i++)
				owner[s->start + i] = -1;
			s->state = R_FREE;
		} else if (r < 96) {                        /* fork */
			k = pick_live(R_RES);
			int ck = free_slot();
			if (k < 0 || ck < 0)
				continue;
			rseq *par = &seqs[k];
			uint32_t out = below(12);
			kvs_seq_id cid = fresh_id();
			kvs_status st = kvs_alloc_fork(a, par->id, cid, out);
			if (par->len + out > C_MML) {
				assert_int_equal(st, KVS_ERR_LIMIT);
				continue;
			}
			uint32_t reg = cm_region(p, par->len, out);
			int at = cm_place(best, reg);
			if (at < 0) {
				assert_int_equal(st, KVS_ERR_NOSPACE);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			rseq *ch = &seqs[ck];
			memset(ch, 0, sizeof *ch);
			ch->state = R_RES;
			ch->id = cid;
			ch->len = par->len;
			ch->final_len = par->len + out;
			ch->start = (uint32_t)at;
			ch->region = reg;
			for (uint32_t i = 0; i < reg; i++)
				owner[at + i] = ck;
		}
		assert_true(kvs_alloc_is_valid(a));
		kvs_seq_desc next = { .seq = 1, .prompt_tokens = 1 + below(30),
				      .output_tokens = below(10) };
		kvs_mem_parts got, want;
		kvs_alloc_account(a, &next, &got);
		cm_account(p, &next, &want);
		check_parts(&got, &want, c.budget_bytes);
		kvs_alloc_account(a, NULL, &got);
		cm_account(p, NULL, &want);
		check_parts(&got, &want, c.budget_bytes);
		k = pick_live(R_RES);
		if (k >= 0) {
			assert_int_equal(kvs_alloc_len(a, seqs[k].id), seqs[k].len);
			assert_int_equal(kvs_alloc_room(a, seqs[k].id),
					 seqs[k].region - seqs[k].len);
		}
	}
	kvs_alloc_destroy(a);
}

static void test_max_random(void **state)
{
	(void)state;
	contig_run(KVS_POLICY_MAX, false, 0x5eed0003);
}

static void test_pow2_random(void **state)
{
	(void)state;
	contig_run(KVS_POLICY_POW2, true, 0x5eed0004);
}

static void test_oracle_random(void **state)
{
	(void)state;
	contig_run(KVS_POLICY_ORACLE, false, 0x5eed0005);
}

/* ---- vAttention reference model -------------------------------------------------------- */

#define VT 2                         /* tensors */
#define VB 4096u                     /* bytes per token (2048 per tensor) */
#define VPAGE (64u << 10)            /* 32 tokens per page */
#define VTPP 32u
#define VG 40u                       /* page groups */
#define V_MML 400

static void test_vattention_random(void **state)
{
	(void)state;
	rng_state = 0x5eed0006;
	memset(seqs, 0, sizeof seqs);
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.policy = KVS_POLICY_VATTENTION;
	c.budget_bytes = (uint64_t)VG * VT * VPAGE + 100;
	c.kv_bytes_per_token = VB;
	c.max_model_len = V_MML;
	c.page_bytes = VPAGE;
	c.num_kv_tensors = VT;
	c.watermark = 0.05;                      /* 2 groups */
	const uint32_t wm = 2;
	kvs_alloc *a = NULL;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_OK);
	uint32_t free_g = VG;
	uint64_t n = num_ops();
	for (uint64_t op = 0; op < n; op++) {
		uint32_t r = below(100);
		int k;
		if (r < 25) {
			k = free_slot();
			if (k < 0)
				continue;
			kvs_seq_desc d = { .seq = fresh_id(),
					   .prompt_tokens = random_prompt(V_MML),
					   .output_tokens = below(150) };
			uint32_t fin = d.prompt_tokens + d.output_tokens;
			uint32_t need = ceil_div(d.prompt_tokens, VTPP);
			kvs_admit_verdict want;
			if (fin > V_MML || ceil_div(fin, VTPP) > VG || need + wm > VG)
				want = KVS_ADMIT_NEVER;
			else if (need > free_g || free_g - need < wm)
				want = KVS_ADMIT_LATER;
			else
				want = KVS_ADMIT_NOW;
			assert_int_equal(kvs_alloc_can_admit(a, &d, NULL), want);
			kvs_status st = kvs_alloc_admit(a, &d, NULL);
			if (want != KVS_ADMIT_NOW) {
				assert_int_not_equal(st, KVS_OK);
				continue;
			}
			assert_int_equal(st, KVS_OK);
			rseq *s = &seqs[k];
			memset(s, 0, sizeof *s);
			s->state = R_RES;
			s->id = d.seq;
			s->final_len = fin;
			s->pages = need;
			free_g -= need;
		} else if (r < 75) {
			k = pick_live(R_RES);
			if (k < 0)
				continue;
			rseq *s = &seqs[k];
			uint32_t g = below(3) ? 1 : below(40);
			kvs_status st = kvs_alloc_grow(a, s->id, g, NULL, NULL);
			uint32_t want = ceil_div(s->len + g, VTPP);
			uint32_t more = want > s->pages ? want - s->pages : 0;
			if (s->len + g > V_MML) {
				assert_int_equal(st, KVS_ERR_LIMIT);
			} else if (more > free_g) {
				assert_int_equal(st, KVS_ERR_NOSPACE);
			} else {
				assert_int_equal(st, KVS_OK);
				s->len += g;
				s->pages += more;
				free_g -= more;
			}
		} else if (r < 93) {
			k = pick_live(R_RES);
			if (k < 0)
				continue;
			assert_int_equal(kvs_alloc_release(a, seqs[k].id), KVS_OK);
			free_g += seqs[k].pages;
			seqs[k].state = R_FREE;
		} else {
			k = pick_live(R_RES);
			int ck = free_slot();
			if (k < 0 || ck < 0)
				continue;
			uint32_t out = below(50);
			kvs_seq_id cid = fresh_id();
			kvs_status st = kvs_alloc_fork(a, seqs[k].id, cid, out);
			uint32_t need = ceil_div(seqs[k].len, VTPP);
			if (seqs[k].len + out > V_MML) {
				assert_int_equal(st, KVS_ERR_LIMIT);
			} else if (need > free_g) {
				assert_int_equal(st, KVS_ERR_NOSPACE);
			} else {
				assert_int_equal(st, KVS_OK);
				seqs[ck] = seqs[k];
				seqs[ck].id = cid;
				seqs[ck].final_len = seqs[k].len + out;
				seqs[ck].pages = need;
				free_g -= need;
			}
		}
		assert_true(kvs_alloc_is_valid(a));
		assert_int_equal(kvs_alloc_free_blocks(a), free_g);
		uint64_t tok = 0, res = 0, mapped = 0;
		for (int i = 0; i < MAXS; i++) {
			const rseq *s = &seqs[i];
			if (s->state != R_RES)
				continue;
			uint32_t cap = s->pages * VTPP;
			uint32_t top = cap < s->final_len ? cap : s->final_len;
			tok += s->len;
			res += top > s->len ? top - s->len : 0;
			mapped += s->pages;
		}
		kvs_mem_parts got, want;
		kvs_alloc_account(a, NULL, &got);
		want.token_states = tok * VB;
		want.reservation = res * VB;
		want.internal_frag = mapped * VT * VPAGE - (tok + res) * VB + 100;
		want.external_frag = 0;
		want.cached_idle = 0;
		want.free = (uint64_t)free_g * VT * VPAGE;
		check_parts(&got, &want, c.budget_bytes);
		k = pick_live(R_RES);
		if (k >= 0)
			assert_int_equal(kvs_alloc_room(a, seqs[k].id),
					 seqs[k].pages * VTPP - seqs[k].len);
	}
	kvs_alloc_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paged_random),
		cmocka_unit_test(test_paged_plain_random),
		cmocka_unit_test(test_pool_random),
		cmocka_unit_test(test_max_random),
		cmocka_unit_test(test_pow2_random),
		cmocka_unit_test(test_oracle_random),
		cmocka_unit_test(test_vattention_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
