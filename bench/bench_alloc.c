/*
 * bench_alloc.c - allocator hot paths against the host allocator.
 *
 * Figures (ns per operation, best of several rounds to shed noise):
 *   pool_pair       one block taken from and given back to the pool
 *                   (kvs_alloc_blocks_take/give, batches of 16 and of 1)
 *   grow_block_pair one block allocated and freed through the sequence API:
 *                   a sequence grows by block_size tokens K times (one new
 *                   block each), then is released (K blocks freed)
 *   append          grow by 1 token inside a block (the decode fast path)
 *   fork            fork a 64-block sequence and release the child
 *   prefix_lookup   per block, chains over a cache of ~1M blocks
 *   prefix_insert   per block, prefill growth that hashes full blocks
 *                   (allocation + index insert)
 *   account         the six-part split (paged, no forks)
 *   host_pair       malloc(64) + free through the host allocator (jemalloc
 *                   in the default build): the reference
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

static double bench_host_pair(void)
{
	double best = 1e30;
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();
		for (int i = 0; i < 2000000; i++) {
			void *p = kvs_malloc(64);
			kvs_bench_keep(p);
			kvs_free(p);
		}
		double ns = (double)(now_ns() - t0) / 2000000.0;
		if (ns < best)
			best = ns;
	}
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
	double host = bench_host_pair();
	double pool16 = bench_pool_pair(16);
	double pool1 = bench_pool_pair(1);
	double pair = bench_block_pair();
	double append = bench_append();
	double fork = bench_fork();
	double lookup, insert;
	uint64_t cached;
	bench_prefix(&lookup, &insert, &cached);
	double account = bench_account();
	double meta = metadata_per_block();

	kvs_bench_figure(&b, "host_pair_ns", host, "ns (malloc+free of 64 B)");
	kvs_bench_figure(&b, "pool_pair_ns", pool16,
			 "ns per block, take+give 16 (target <= host/5)");
	kvs_bench_figure(&b, "pool_pair_speedup", host / pool16, "x vs host pair");
	kvs_bench_figure(&b, "pool_pair_single_ns", pool1,
			 "ns per block, take+give 1 (two library calls)");
	kvs_bench_figure(&b, "grow_block_pair_ns", pair,
			 "ns per block, grow across a block + release");
	kvs_bench_figure(&b, "append_ns", append, "ns per grow by 1 token");
	kvs_bench_figure(&b, "fork_ns", fork, "ns per fork+release, 64 blocks");
	kvs_bench_figure(&b, "prefix_cached_blocks", (double)cached, "blocks");
	kvs_bench_figure(&b, "prefix_lookup_ns", lookup, "ns per block (target < 100)");
	kvs_bench_figure(&b, "prefix_insert_ns", insert, "ns per block (alloc + hash insert)");
	kvs_bench_figure(&b, "account_ns", account, "ns per six-part split");
	kvs_bench_figure(&b, "metadata_bytes_per_block", meta, "bytes (target <= 32)");
	return kvs_bench_finish(&b);
}
