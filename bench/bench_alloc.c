/*
 * bench_alloc.c - allocator hot paths against the host allocator.
 *
 * Figures (ns per operation, best of several rounds to shed noise):
 *   pool_single     one block taken from and given back to the pool through
 *                   the inline fast path (kvs_block_pool_take1 / give1):
 *                   one block in flight, and 64 in flight (taken one by
 *                   one, given back oldest first); measured in rounds
 *                   interleaved with the host pair, the target's reference
 *   pool_pair       the same through the library calls
 *                   kvs_alloc_blocks_take / give (batches of 16 and of 1)
 *   grow_block_pair one block allocated and freed through the sequence API:
 *                   a sequence grows by block_size tokens K times (one new
 *                   block each), then is released (K blocks freed)
 *   append          grow by 1 token inside a block (the decode fast path)
 *   fork            fork a 64-block sequence and release the child
 *   prefix_lookup   per block, chains over a cache of ~1M blocks
 *   prefix_insert   per block, prefill growth that hashes full blocks
 *                   (allocation + index insert)
 *   prefix_long     40,960-token prompts keyed by raw trace ids (as a
 *                   Mooncake replay keys them) at block 1 and 16: insert
 *                   (allocation, eviction, index insert, release) and
 *                   lookup per block, index probes per operation
 *   account         the six-part split (paged, no forks)
 *   host_pair       malloc(64) + free called directly (the host allocator:
 *                   jemalloc in the default build): the reference
 *   host_kvs_pair   the same through kvs_malloc / kvs_free, as the library
 *                   calls it (two more calls through the shared library and
 *                   the fault-injection test): what kvsim's own code pays
 * and metadata bytes per block of the paged pool.
 */
#include "bench_util.h"
#include "kvsim/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5

/* Thread CPU time: the build machine is shared, and wall-clock time would
 * charge other processes' time slices to these loops.  The reference and
 * the allocator are timed with the same clock. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static kvs_alloc *make(uint64_t blocks, bool caching, uint32_t mml)
{
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.kv_bytes_per_token = 128;
	c.block_size = 16;
	c.budget_bytes = blocks * 16 * 128;
	c.max_model_len = mml;
	c.watermark = 0;
	c.enable_prefix_caching = caching;
	kvs_alloc *a = NULL;
	if (kvs_alloc_create(&c, &a) != KVS_OK) {
		fprintf(stderr, "bench_alloc: %s\n", kvs_last_error());
		exit(1);
	}
	return a;
}

static void must(kvs_status st)
{
	if (st != KVS_OK) {
		fprintf(stderr, "bench_alloc: %s\n", kvs_last_error());
		exit(1);
	}
}

static double bench_block_pair(void)
{
	enum { K = 4096 };
	kvs_alloc *a = make(K + 16, false, K * 16);
	double best = 1e30;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (int rep = 0; rep < 50; rep++) {
			kvs_seq_desc d = { .seq = 1, .prompt_tokens = 1,
					   .output_tokens = 0 };
			must(kvs_alloc_admit(a, &d, NULL));
			must(kvs_alloc_grow(a, 1, 16, NULL, NULL));
			for (int i = 1; i < K; i++)
				must(kvs_alloc_grow(a, 1, 16, NULL, NULL));
			must(kvs_alloc_release(a, 1));
		}
		double ns = (double)(now_ns() - t0) / (50.0 * K);
		if (ns < best)
			best = ns;
	}
	kvs_alloc_destroy(a);
	return best;
}

/* The pool itself: take n blocks and give them back (n = 1: the per-call
 * cost; n = 16: one 256-token prefill chunk at block size 16). */
static double bench_pool_pair(uint32_t n)
{
	kvs_alloc *a = make(1 << 12, false, 1 << 16);
	kvs_block_id ids[64];
	double best = 1e30;
	const uint32_t iters = 4000000 / n;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (uint32_t i = 0; i < iters; i++) {
			must(kvs_alloc_blocks_take(a, n, ids));
			kvs_bench_keep(ids[0]);
			must(kvs_alloc_blocks_give(a, n, ids));
		}
		double ns = (double)(now_ns() - t0) / ((double)iters * n);
		if (ns < best)
			best = ns;
	}
	kvs_alloc_destroy(a);
	return best;
}

/* host pair and inline pool pair, rounds interleaved so that both see the
 * same machine (the build machine is shared and noisy). */
static double host_round(void)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < 2000000; i++) {
		void *p = malloc(64);
		kvs_bench_keep(p);
		free(p);
	}
	return (double)(now_ns() - t0) / 2000000.0;
}

static double host_kvs_round(void)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < 2000000; i++) {
		void *p = kvs_malloc(64);
		kvs_bench_keep(p);
		kvs_free(p);
	}
	return (double)(now_ns() - t0) / 2000000.0;
}

static double single_round(kvs_block_pool *pool)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < 4000000; i++) {
		kvs_block_id id = kvs_block_pool_take1(pool);
		if (id == KVS_BLOCK_NONE)
			must(KVS_ERR_NOSPACE);
		kvs_bench_keep(id);
		must(kvs_block_pool_give1(pool, id));
	}
	return (double)(now_ns() - t0) / 4000000.0;
}

static double single64_round(kvs_block_pool *pool)
{
	enum { W = 64 };
	kvs_block_id ids[W];
	uint64_t t0 = now_ns();
	for (int i = 0; i < 4000000 / W; i++) {
		for (int k = 0; k < W; k++) {
			ids[k] = kvs_block_pool_take1(pool);
			if (ids[k] == KVS_BLOCK_NONE)
				must(KVS_ERR_NOSPACE);
		}
		kvs_bench_keep(ids[0]);
		for (int k = 0; k < W; k++)
			must(kvs_block_pool_give1(pool, ids[k]));
	}
	return (double)(now_ns() - t0) / (double)(4000000 / W * W);
}

static void bench_single(double *host, double *host_kvs, double *single,
			 double *single64)
{
	kvs_alloc *a = make(1 << 12, false, 1 << 16);
	kvs_block_pool *pool = kvs_alloc_block_pool(a);
	if (!pool)
		must(KVS_ERR_UNSUPPORTED);
	*host = *host_kvs = *single = *single64 = 1e30;
	for (int r = 0; r < 2 * ROUNDS; r++) {
		double h = host_round(), hk = host_kvs_round(),
		       s1 = single_round(pool), s64 = single64_round(pool);
		if (h < *host)
			*host = h;
		if (hk < *host_kvs)
			*host_kvs = hk;
		if (s1 < *single)
			*single = s1;
		if (s64 < *single64)
			*single64 = s64;
	}
	if (!kvs_alloc_is_valid(a) || kvs_alloc_free_blocks(a) != 1 << 12) {
		fprintf(stderr, "bench_alloc: pool inconsistent after the run\n");
		exit(1);
	}
	kvs_alloc_destroy(a);
}

static double bench_append(void)
{
	kvs_alloc *a = make(1 << 16, false, 1 << 20);
	enum { S = 64 };
	for (int s = 0; s < S; s++) {
		kvs_seq_desc d = { .seq = (kvs_seq_id)s * 7919, .prompt_tokens = 1,
				   .output_tokens = 2000 };
		must(kvs_alloc_admit(a, &d, NULL));
	}
	double best = 1e30;
	uint64_t n = 0;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (int step = 0; step < 256; step++)
			for (int s = 0; s < S; s++, n++)
				must(kvs_alloc_grow(a, (kvs_seq_id)s * 7919, 1,
						    NULL, NULL));
		double ns = (double)(now_ns() - t0) / (256.0 * S);
		if (ns < best)
			best = ns;
	}
	kvs_alloc_destroy(a);
	return best;
}

static double bench_fork(void)
{
	kvs_alloc *a = make(1 << 12, false, 1 << 16);
	kvs_seq_desc d = { .seq = 1, .prompt_tokens = 64 * 16 - 5,
			   .output_tokens = 100 };
	must(kvs_alloc_admit(a, &d, NULL));
	must(kvs_alloc_grow(a, 1, 64 * 16 - 5, NULL, NULL));
	double best = 1e30;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (int i = 0; i < 20000; i++) {
			must(kvs_alloc_fork(a, 1, 2, 50));
			must(kvs_alloc_release(a, 2));
		}
		double ns = (double)(now_ns() - t0) / 20000.0;
		if (ns < best)
			best = ns;
	}
	kvs_alloc_destroy(a);
	return best;
}

/* Fill a cache of nblocks hashed blocks: documents of 64 blocks each,
 * prefilled and released (they stay cached-idle). */
static void bench_prefix(double *lookup_ns, double *insert_ns,
			 uint64_t *cached_blocks)
{
	enum { DOC = 64 };
	const uint64_t nblocks = 1u << 20;
	const uint32_t ndocs = (uint32_t)(nblocks / DOC) - 8;
	kvs_alloc *a = make(nblocks, true, DOC * 16 + 16);
	uint64_t *h = malloc((size_t)ndocs * DOC * sizeof *h);
	if (!h)
		exit(1);
	for (uint32_t doc = 0; doc < ndocs; doc++) {
		uint64_t parent = 0;
		for (uint32_t i = 0; i < DOC; i++)
			parent = h[(size_t)doc * DOC + i] =
				kvs_hash_block_id(parent, doc, i);
	}
	uint64_t t0 = now_ns();
	for (uint32_t doc = 0; doc < ndocs; doc++) {
		kvs_seq_desc d = { .seq = doc, .prompt_tokens = DOC * 16 + 1,
				   .output_tokens = 0,
				   .block_hashes = &h[(size_t)doc * DOC],
				   .num_block_hashes = DOC };
		must(kvs_alloc_admit(a, &d, NULL));
		for (uint32_t i = 0; i < DOC; i++)
			must(kvs_alloc_grow(a, doc, 16, NULL, NULL));
		must(kvs_alloc_release(a, doc));
	}
	*insert_ns = (double)(now_ns() - t0) / ((double)ndocs * DOC);
	*cached_blocks = (uint64_t)ndocs * DOC;
	/* lookups in a scattered document order */
	double best = 1e30;
	uint64_t found = 0;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t1 = now_ns();
		uint32_t doc = 12345;
		for (uint32_t q = 0; q < 20000; q++) {
			doc = (uint32_t)((doc * 2654435761u + 1) % ndocs);
			found += kvs_alloc_prefix_lookup(a, &h[(size_t)doc * DOC],
							 DOC);
		}
		double ns = (double)(now_ns() - t1) / (20000.0 * DOC);
		if (ns < best)
			best = ns;
	}
	kvs_bench_keep(found);
	if (found != (uint64_t)ROUNDS * 20000 * DOC) {
		fprintf(stderr, "bench_alloc: prefix cache lost blocks\n");
		exit(1);
	}
	*lookup_ns = best;
	free(h);
	kvs_alloc_destroy(a);
}

/* Long prompts keyed as a Mooncake replay keys them: raw hash ids (small
 * consecutive integers, one per 512-token block) re-split to the block
 * size as id x k + j, k = 512 / bs.  Prompts of 40,960 tokens (80 hash
 * blocks) with ids of their own are admitted, prefilled in 2,048-token
 * chunks and released, NQ of them through a pool that holds POOLQ, so
 * the cache evicts as it goes (insert: allocation + eviction + index
 * insert + release, per block).  Then the POOLQ prompts still cached are
 * looked up (per block), and the index's probes per operation are read
 * from the statistics (deterministic). */
typedef struct long_prompt_figs {
	double insert_ns, lookup_ns, probes_per_op;
	uint64_t blocks_per_prompt;
} long_prompt_figs;

/* The figures of bench_long_prompts at block size bs, under keys naming it. */
static void long_prompt_figures(kvs_bench *b, uint32_t bs, const long_prompt_figs *f)
{
	char key[64], unit[96];
	snprintf(key, sizeof key, "prefix_long_bs%u_insert_ns", bs);
	snprintf(unit, sizeof unit, "ns per block, 40,960-token prompts, block %u, trace ids", bs);
	kvs_bench_figure(b, key, f->insert_ns, unit);
	snprintf(key, sizeof key, "prefix_long_bs%u_lookup_ns", bs);
	kvs_bench_figure(b, key, f->lookup_ns, "ns per block (target < 100)");
	snprintf(key, sizeof key, "prefix_long_bs%u_probes_per_op", bs);
	kvs_bench_figure(b, key, f->probes_per_op, "index slots per operation (deterministic)");
}

static void bench_long_prompts(uint32_t bs, long_prompt_figs *f)
{
	enum { T = 40960, ID_BLOCK = 512, NQ = 12, POOLQ = 4, CHUNK = 2048 };
	const uint32_t k = ID_BLOCK / bs, nb = T / bs;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.kv_bytes_per_token = 128;
	c.block_size = bs;
	c.budget_bytes = ((uint64_t)POOLQ * (nb + 1) + 1) * bs * 128;
	c.max_model_len = T + bs;
	c.watermark = 0;
	c.enable_prefix_caching = true;
	kvs_alloc *a = NULL;
	must(kvs_alloc_create(&c, &a));
	uint64_t *h = malloc((size_t)NQ * nb * sizeof *h);
	if (!h)
		exit(1);
	for (uint32_t q = 0; q < NQ; q++)
		for (uint32_t b = 0; b < nb; b++)
			h[(size_t)q * nb + b] =
				((uint64_t)q * (T / ID_BLOCK) + b / k) * k + b % k;
	uint64_t t0 = now_ns();
	for (uint32_t q = 0; q < NQ; q++) {
		kvs_seq_desc d = { .seq = q, .prompt_tokens = T + 1,
				   .output_tokens = 0,
				   .block_hashes = &h[(size_t)q * nb],
				   .num_block_hashes = nb };
		must(kvs_alloc_admit(a, &d, NULL));
		for (uint32_t done = 0; done < T + 1; done += CHUNK)
			must(kvs_alloc_grow(a, q, done + CHUNK <= T + 1 ? CHUNK
					    : T + 1 - done, NULL, NULL));
		must(kvs_alloc_release(a, q));
	}
	f->insert_ns = (double)(now_ns() - t0) / ((double)NQ * nb);
	double best = 1e30;
	uint64_t found = 0;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t1 = now_ns();
		for (uint32_t q = NQ - POOLQ; q < NQ; q++)
			found += kvs_alloc_prefix_lookup(a, &h[(size_t)q * nb], nb);
		double ns = (double)(now_ns() - t1) / ((double)POOLQ * nb);
		if (ns < best)
			best = ns;
	}
	if (found != (uint64_t)ROUNDS * POOLQ * nb) {
		fprintf(stderr, "bench_alloc: long prompts lost cached blocks\n");
		exit(1);
	}
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	f->lookup_ns = best;
	f->probes_per_op = (double)st.prefix_index_probes /
			   (double)st.prefix_index_ops;
	f->blocks_per_prompt = nb;
	free(h);
	kvs_alloc_destroy(a);
}

static double bench_account(void)
{
	kvs_alloc *a = make(1 << 14, false, 1 << 16);
	for (int s = 0; s < 256; s++) {
		kvs_seq_desc d = { .seq = (kvs_seq_id)s, .prompt_tokens = 100,
				   .output_tokens = 200 };
		must(kvs_alloc_admit(a, &d, NULL));
	}
	kvs_mem_parts m;
	double best = 1e30;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (int i = 0; i < 100000; i++) {
			kvs_alloc_account(a, NULL, &m);
			kvs_bench_keep(m.free);
		}
		double ns = (double)(now_ns() - t0) / 100000.0;
		if (ns < best)
			best = ns;
	}
	kvs_alloc_destroy(a);
	return best;
}

static double metadata_per_block(void)
{
	kvs_alloc *a = make(1 << 20, true, 4096);
	kvs_alloc_stats st;
	kvs_alloc_get_stats(a, &st);
	kvs_alloc_destroy(a);
	return (double)st.block_metadata_bytes / (double)(1 << 20);
}

int main(int argc, char **argv)
{
	kvs_bench b;
	int code;
	if (!kvs_bench_init(&b, "alloc", argc, argv, &code))
		return code;
	double host, host_kvs, single, single64;
	bench_single(&host, &host_kvs, &single, &single64);
	double pool16 = bench_pool_pair(16);
	double pool1 = bench_pool_pair(1);
	double pair = bench_block_pair();
	double append = bench_append();
	double fork = bench_fork();
	double lookup, insert;
	uint64_t cached;
	bench_prefix(&lookup, &insert, &cached);
	static const uint32_t long_bs[] = { 1, 16 };
	long_prompt_figs lp[KVS_ARRAY_LEN(long_bs)];
	for (size_t i = 0; i < KVS_ARRAY_LEN(long_bs); i++)
		bench_long_prompts(long_bs[i], &lp[i]);
	double account = bench_account();
	double meta = metadata_per_block();

	char unit[96];
	snprintf(unit, sizeof unit, "ns (malloc+free of 64 B, %s, called "
		 "directly)", kvs_mem_allocator());
	kvs_bench_figure(&b, "host_pair_ns", host, unit);
	kvs_bench_figure(&b, "host_kvs_pair_ns", host_kvs,
			 "ns (the same through kvs_malloc / kvs_free)");
	snprintf(unit, sizeof unit, "ns per block, take1+give1 inline "
		 "(target <= host/5 = %.2f ns)", host / 5);
	kvs_bench_figure(&b, "pool_single_pair_ns", single, unit);
	kvs_bench_figure(&b, "pool_single_speedup", host / single,
			 "x vs host pair (target >= 5)");
	kvs_bench_figure(&b, "pool_single_target_met", host / single >= 5.0,
			 "1 = met");
	kvs_bench_figure(&b, "pool_single_speedup_kvs", host_kvs / single,
			 "x vs the pair through kvs_malloc / kvs_free");
	kvs_bench_figure(&b, "pool_single64_pair_ns", single64,
			 "ns per block, 64 in flight, take1/give1");
	kvs_bench_figure(&b, "pool_single64_speedup", host / single64,
			 "x vs host pair");
	kvs_bench_figure(&b, "pool_pair_ns", pool16,
			 "ns per block, blocks_take/give of 16");
	kvs_bench_figure(&b, "pool_pair_speedup", host / pool16, "x vs host pair");
	kvs_bench_figure(&b, "pool_pair_call1_ns", pool1,
			 "ns per block, blocks_take/give of 1 (two calls)");
	kvs_bench_figure(&b, "grow_block_pair_ns", pair,
			 "ns per block, grow across a block + release");
	kvs_bench_figure(&b, "append_ns", append, "ns per grow by 1 token");
	kvs_bench_figure(&b, "fork_ns", fork, "ns per fork+release, 64 blocks");
	kvs_bench_figure(&b, "prefix_cached_blocks", (double)cached, "blocks");
	kvs_bench_figure(&b, "prefix_lookup_ns", lookup, "ns per block (target < 100)");
	kvs_bench_figure(&b, "prefix_insert_ns", insert, "ns per block (alloc + hash insert)");
	for (size_t i = 0; i < KVS_ARRAY_LEN(long_bs); i++)
		long_prompt_figures(&b, long_bs[i], &lp[i]);
	kvs_bench_figure(&b, "account_ns", account, "ns per six-part split");
	kvs_bench_figure(&b, "metadata_bytes_per_block", meta, "bytes (target <= 32)");
	return kvs_bench_finish(&b);
}
