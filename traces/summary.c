/*
 * summary.c - what `kvsim trace` prints: arrival statistics, length
 * percentiles and the prefix sharing an unbounded prefix cache would find.
 *
 * Lengths go into a histogram that is exact below 2^20 tokens (an array of
 * counts that grows to the largest value seen, 8 MiB at most) and
 * log-bucketed above (16 buckets per octave), so percentiles cost constant
 * memory whatever the number of requests.  Inter-arrival gaps are folded
 * with Welford's method.
 *
 * The prefix cache is a map from each distinct hash id of the trace's own
 * granularity (512 tokens for Mooncake) to how many of its sub-blocks have
 * been seen: a block size that splits the trace's blocks (--block-size 16
 * of a 512-token trace) names sub-block j of id x as x * k + j, and a
 * request always holds a block's first sub-blocks, so "sub-block j seen"
 * is "j < the most seen" and the map stays the size of the coarse id set
 * whatever the block size (--block-size 1 costs what 512 costs).  Open
 * addressing, 24 bytes per distinct id at the maximum load of 1/2; at most
 * KVS_SUMMARY_MAX_IDS distinct ids (768 MiB), past which the prefix
 * statistics stop and say how many requests they cover.
 */
#include "trace_internal.h"
#include "common/array.h"
#include "common/table.h"

#include <math.h>
#include <string.h>

/* ---- length histogram -------------------------------------------------------*/

static bool lenhist_add(kvs_lenhist *h, uint64_t v)
{
	if (v < KVS_LENHIST_EXACT_MAX) {
		if (v >= h->exact_cap) {
			uint32_t old = h->exact_cap;
			if (!KVS_ARRAY_RESERVE(h->exact, h->exact_cap, v + 1, 4096))
				return false;
			memset(h->exact + old, 0, (h->exact_cap - old) * sizeof *h->exact);
		}
		h->exact[v]++;
	} else {
		int oct = 63 - __builtin_clzll(v);
		unsigned sub = (unsigned)(v >> (oct - 4)) & 15u;
		h->log[oct * 16 + sub]++;
	}
	if (h->n == 0 || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	h->sum += v;
	return true;
}

/* Nearest rank: smallest v with count(<= v) >= ceil(p n). */
static uint64_t lenhist_quantile(const kvs_lenhist *h, double p)
{
	if (h->n == 0)
		return 0;
	uint64_t rank = (uint64_t)ceil(p * (double)h->n);
	if (rank < 1)
		rank = 1;
	uint64_t c = 0;
	for (uint32_t v = 0; v < h->exact_cap; v++) {
		c += h->exact[v];
		if (c >= rank)
			return v;
	}
	for (unsigned i = 0; i < KVS_ARRAY_LEN(h->log); i++) {
		c += h->log[i];
		if (c >= rank) {
			/* upper edge of the bucket, capped by the maximum */
			unsigned oct = i / 16, sub = i % 16;
			uint64_t hi = ((16ull + sub + 1) << (oct - 4)) - 1;
			return hi < h->max ? hi : h->max;
		}
	}
	return h->max;
}

/* Sum of floor(v / b) over the values: exact below KVS_LENHIST_EXACT_MAX,
 * from each bucket's lower edge above. */
static uint64_t lenhist_sum_div(const kvs_lenhist *h, uint32_t b)
{
	uint64_t sum = 0;
	for (uint32_t v = b; v < h->exact_cap; v++)
		sum += h->exact[v] * (v / b);
	for (unsigned i = 0; i < KVS_ARRAY_LEN(h->log); i++) {
		if (!h->log[i])
			continue;
		unsigned oct = i / 16, sub = i % 16;
		sum += h->log[i] * ((((uint64_t)16 + sub) << (oct - 4)) / b);
	}
	return sum;
}

static void lenhist_finish(const kvs_lenhist *h, kvs_len_stats *s)
{
	memset(s, 0, sizeof *s);
	s->n = h->n;
	if (h->n == 0)
		return;
	s->mean = (double)(h->sum / (long double)h->n);
	s->min = h->min;
	s->max = h->max;
	s->p50 = lenhist_quantile(h, 0.50);
	s->p90 = lenhist_quantile(h, 0.90);
	s->p99 = lenhist_quantile(h, 0.99);
}

/* ---- a set of 64-bit ids ------------------------------------------------------*/

typedef struct idset {
	uint64_t *keys;     /* 0 = empty; the id 0 is kept aside */
	uint32_t *vals;     /* per key (maps only; NULL for sets) */
	uint64_t cap, n;
	bool has_zero;
	bool map;
	uint32_t zero_val;
} idset;

#define IDSET_IS_EMPTY(s, k) (*(k) == 0)
#define IDSET_KEY(s, k) (*(k))
#define IDSET_SET_EMPTY(s, k) (*(k) = 0)
KVS_TABLE_DEFINE(idtab, uint64_t, const idset *, IDSET_IS_EMPTY, IDSET_KEY,
		 IDSET_SET_EMPTY, kvs_table_mixed)

/* The slot of k (k != 0): where it is, or the empty slot where it goes. */
static uint64_t idset_slot(const idset *s, uint64_t k)
{
	uint64_t probes = 0;
	return idtab_probe(s, s->keys, s->cap, k, &probes);
}

/* The value of k in a map, 0 when absent. */
static uint32_t idmap_get(const idset *s, uint64_t k)
{
	if (k == 0)
		return s->has_zero ? s->zero_val : 0;
	if (s->cap == 0)
		return 0;
	uint64_t i = idset_slot(s, k);
	return s->keys[i] == k ? s->vals[i] : 0;
}

static void idset_put_nogrow(idset *s, uint64_t k, uint32_t v)
{
	uint64_t i = idset_slot(s, k);
	if (s->keys[i] == 0) {
		s->keys[i] = k;
		s->n++;
	}
	if (s->map)
		s->vals[i] = v;
}

/* Room for one more key; false on allocation failure. */
static bool idset_reserve(idset *s)
{
	if ((s->n + 1) * 2 <= s->cap)
		return true;
	uint64_t ncap = s->cap ? s->cap * 2 : 1024;
	uint64_t *nk = kvs_calloc(ncap, sizeof *nk);
	uint32_t *nv = s->map ? kvs_calloc(ncap, sizeof *nv) : NULL;
	if (!nk || (s->map && !nv)) {
		kvs_free(nk);
		kvs_free(nv);
		return false;
	}
	idset old = *s;
	s->keys = nk;
	s->vals = nv;
	s->cap = ncap;
	s->n = 0;
	for (uint64_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			idset_put_nogrow(s, old.keys[i], old.map ? old.vals[i] : 0);
	kvs_free(old.keys);
	kvs_free(old.vals);
	return true;
}

/* Set k (a set: insert; a map: k -> v).  false on allocation failure. */
static bool idset_put(idset *s, uint64_t k, uint32_t v)
{
	if (k == 0) {
		s->has_zero = true;
		s->zero_val = v;
		return true;
	}
	if (!idset_reserve(s))
		return false;
	idset_put_nogrow(s, k, v);
	return true;
}

static uint64_t idset_size(const idset *s)
{
	return s->n + (s->has_zero ? 1 : 0);
}

/* ---- the summary ---------------------------------------------------------------*/

/* The prefix cache's part of one request: ids at the request's block size,
 * k sub-blocks per id of the trace's own granularity (1 when not split).
 * Consecutive ids x * k + j of one coarse id x form a run; the run's
 * first M (the most sub-blocks of x seen before) are hits while every
 * earlier block hit. */
static kvs_status prefix_add(idset *blocks, kvs_trace_summary *s, const kvs_request *r,
			     uint64_t k)
{
	bool hitting = true;
	for (uint32_t i = 0; i < r->num_hash_ids;) {
		uint64_t x = r->hash_ids[i] / k;
		uint32_t m = 1;
		while (i + m < r->num_hash_ids && r->hash_ids[i + m] / k == x &&
		       r->hash_ids[i + m] == r->hash_ids[i + m - 1] + 1)
			m++;
		i += m;
		uint32_t seen = idmap_get(blocks, x);
		if (hitting)
			s->hit_blocks += m < seen ? m : seen;
		if (m > seen) {
			hitting = false;
			if (seen == 0 && idset_size(blocks) >= KVS_SUMMARY_MAX_IDS)
				return KVS_ERR_LIMIT;
			if (!idset_put(blocks, x, m))
				return kvs_fail(KVS_ERR_NOMEM, "no memory for the prefix cache "
						"(%llu distinct blocks)",
						(unsigned long long)idset_size(blocks));
			s->unique_blocks += m - seen;
		}
	}
	return KVS_OK;
}

kvs_status kvs_trace_summarize(kvs_trace *t, kvs_trace_summary *out)
{
	kvs_trace_summary s;
	memset(&s, 0, sizeof s);
	/* prompt, output, and the prompts the prefix statistics cover */
	kvs_lenhist *hp = kvs_calloc(3, sizeof *hp);
	idset blocks = { .map = true }, sessions = { 0 };
	if (!hp)
		return kvs_fail(KVS_ERR_NOMEM, "no memory for the trace summary");
	double prev = 0, gap_mean = 0, gap_m2 = 0;
	uint64_t gaps = 0, prefix_prompt_tokens = 0;
	kvs_status st;
	kvs_request r;
	while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
		if (s.requests == 0) {
			s.first_s = r.arrival_s;
		} else {
			double g = r.arrival_s - prev;
			gaps++;
			double d = g - gap_mean;
			gap_mean += d / (double)gaps;
			gap_m2 += d * (g - gap_mean);
		}
		prev = r.arrival_s;
		s.last_s = r.arrival_s;
		s.requests++;
		if (!lenhist_add(&hp[0], r.prompt_tokens) || !lenhist_add(&hp[1], r.output_tokens)) {
			st = kvs_fail(KVS_ERR_NOMEM, "no memory for the length histogram");
			break;
		}
		s.prompt_tokens_total += r.prompt_tokens;
		s.output_tokens_total += r.output_tokens;
		if (r.num_samples > 1)
			s.multi_sample++;
		if (r.turn > s.max_turn)
			s.max_turn = r.turn;
		if (r.session_id != 0 && !idset_put(&sessions, r.session_id, 0)) {
			st = kvs_fail(KVS_ERR_NOMEM, "no memory for the session set");
			break;
		}
		if (s.prefix_capped)
			continue;
		if (r.hash_block_tokens > 0) {
			s.has_hashes = true;
			s.hash_block_tokens = r.hash_block_tokens;
			uint32_t src = kvs_trace_source_block(t);
			uint64_t k = src > r.hash_block_tokens && src % r.hash_block_tokens == 0
				     ? src / r.hash_block_tokens : 1;
			kvs_trace_summary before = s;
			st = prefix_add(&blocks, &s, &r, k);
			if (st == KVS_ERR_LIMIT) {
				/* stream past the bound: the prefix statistics cover the
				 * requests before this one */
				s.hit_blocks = before.hit_blocks;
				s.unique_blocks = before.unique_blocks;
				s.prefix_capped = true;
				st = KVS_OK;
				continue;
			}
			if (st != KVS_OK)
				break;
			s.hashed_blocks += r.num_hash_ids;
		}
		if (!lenhist_add(&hp[2], r.prompt_tokens)) {
			st = kvs_fail(KVS_ERR_NOMEM, "no memory for the length histogram");
			break;
		}
		prefix_prompt_tokens += r.prompt_tokens;
		s.prefix_requests++;
	}
	if (st == KVS_END) {
		st = KVS_OK;
		s.format = kvs_trace_get_format(t);
		s.span_s = s.requests ? s.last_s - s.first_s : 0;
		/* requests all at one instant have no rate and no cv: not a 0 */
		s.mean_rate = s.requests > 1 && s.span_s > 0 ? (double)(s.requests - 1) / s.span_s
							     : NAN;
		s.cv_interarrival = gaps > 1 && gap_mean > 0 ? sqrt(gap_m2 / (double)gaps) / gap_mean
							     : NAN;
		lenhist_finish(&hp[0], &s.prompt);
		lenhist_finish(&hp[1], &s.output);
		/* every covered prompt's full blocks, with or without ids (the
		 * block size is one per trace) */
		if (s.has_hashes)
			s.full_blocks = lenhist_sum_div(&hp[2], s.hash_block_tokens);
		s.sessions = idset_size(&sessions);
		if (s.full_blocks > 0)
			s.prefix_hit_blocks = (double)s.hit_blocks / (double)s.full_blocks;
		if (prefix_prompt_tokens > 0 && s.has_hashes)
			s.prefix_hit_tokens = (double)s.hit_blocks * s.hash_block_tokens /
					      (double)prefix_prompt_tokens;
		s.reader = *kvs_trace_get_stats(t);
		*out = s;
	}
	for (int i = 0; i < 3; i++)
		kvs_free(hp[i].exact);
	kvs_free(hp);
	kvs_free(blocks.keys);
	kvs_free(blocks.vals);
	kvs_free(sessions.keys);
	return st;
}
