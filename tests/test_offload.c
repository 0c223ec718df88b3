/*
 * test_offload.c - the KV offload tiers (allocator/offload.c, sim/offload.c):
 * the --kv-offload spec; a block evicted from the device and hit from the
 * host tier, its load charged at the tier's bandwidth (by hand, in the
 * allocator and through the engine, where it lengthens the admitting step);
 * the tier's LRU capacity; the host -> disk cascade and the promotion back;
 * a randomised run of the tiers against a list-based reference model; the
 * accounting invariants; and on the Mooncake synthetic trace
 * (../shared/traces/mooncake-synthetic/, skipped when absent) a small pool
 * with a host tier reaching a higher prefix hit rate than without, and the
 * fast path equal to stepping one token at a time with host and disk
 * tiers.
 */
#include "kvs_config.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/kvsim.h"
#include "../allocator/offload_internal.h"

#define BS 16u
#define KVB 1000u                    /* bytes per token */
#define BB ((uint64_t)BS * KVB)      /* bytes per block */

static void assert_close(double a, double b, double rel)
{
	double tol = rel * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-15;
	if (!(fabs(a - b) <= tol))
		fail_msg("%.17g != %.17g (tolerance %.3g)", a, b, tol);
}

/* Per tier: store = resident + evicted + promoted; bytes = blocks x BB. */
static void assert_tier_books(const kvs_offload_stats *s, uint64_t bb)
{
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		const kvs_offload_tier_stats *t = &s->tier[k];
		assert_int_equal(t->store_blocks, t->resident_blocks + t->evicted_blocks +
				 t->promoted_blocks);
		assert_true(t->resident_blocks <= t->capacity_blocks);
		assert_int_equal(t->store_bytes, t->store_blocks * bb);
		assert_int_equal(t->load_bytes, t->hit_blocks * bb);
		assert_int_equal(t->capacity_bytes, t->capacity_blocks * bb);
		if (t->hit_blocks)
			assert_close(t->load_s, (double)t->load_bytes / t->bytes_per_s, 1e-12);
	}
}

/* ---- the spec --------------------------------------------------------------------- */

static void test_parse(void **state)
{
	(void)state;
	kvs_offload_config c;
	memset(&c, 0, sizeof c);
	assert_false(kvs_offload_config_on(&c));
	assert_int_equal(kvs_offload_parse("host:64GiB", &c), KVS_OK);
	assert_int_equal(c.tier[KVS_OFFLOAD_HOST].bytes, 64ull << 30);
	assert_true(c.tier[KVS_OFFLOAD_HOST].bytes_per_s == 0);   /* default later */
	assert_true(kvs_offload_config_on(&c));
	memset(&c, 0, sizeof c);
	assert_int_equal(kvs_offload_parse("host:1GB:25.6,disk:1TiB:7", &c), KVS_OK);
	assert_int_equal(c.tier[KVS_OFFLOAD_HOST].bytes, 1000000000ull);
	assert_close(c.tier[KVS_OFFLOAD_HOST].bytes_per_s, 25.6e9, 1e-15);
	assert_int_equal(c.tier[KVS_OFFLOAD_DISK].bytes, 1ull << 40);
	assert_close(c.tier[KVS_OFFLOAD_DISK].bytes_per_s, 7e9, 1e-15);
	/* a repeated flag adds the other kind */
	memset(&c, 0, sizeof c);
	assert_int_equal(kvs_offload_parse("disk:2TB:14", &c), KVS_OK);
	assert_int_equal(kvs_offload_parse("host:8GiB", &c), KVS_OK);
	assert_int_equal(c.tier[KVS_OFFLOAD_DISK].bytes, 2000000000000ull);
	assert_int_equal(c.tier[KVS_OFFLOAD_HOST].bytes, 8ull << 30);

	static const struct { const char *text, *says; } bad[] = {
		{ "", "empty tier" },
		{ "host", "KIND:SIZE" },
		{ "gpu:1GiB", "unknown tier 'gpu'" },
		{ "host:abc", "tier host: size" },
		{ "host:12", "no unit" },
		{ "host:1GiB:0", "bandwidth '0'" },
		{ "host:1GiB:-3", "bandwidth '-3'" },
		{ "host:1GiB:fast", "bandwidth 'fast'" },
		{ "host:1GiB:5:6", "bandwidth '5:6'" },
		{ "host:1GiB,host:2GiB", "tier host given twice" },
		{ "host:1GiB,", "empty tier" },
		{ "disk:1TiB:0x10", "bandwidth '0x10'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&c, 0, sizeof c);
		c.tier[KVS_OFFLOAD_DISK].bytes_per_s = 5;   /* untouched on failure */
		if (kvs_offload_parse(bad[i].text, &c) == KVS_OK)
			fail_msg("'%s' parsed", bad[i].text);
		if (!strstr(kvs_last_error(), bad[i].says))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].text,
				 kvs_last_error(), bad[i].says);
		assert_true(c.tier[KVS_OFFLOAD_DISK].bytes_per_s == 5);
		assert_int_equal(c.tier[KVS_OFFLOAD_DISK].bytes, 0);
		assert_int_equal(c.tier[KVS_OFFLOAD_HOST].bytes, 0);
	}
}

/* ---- through the allocator ------------------------------------------------------- */

/* A paged pool of nblocks blocks (BS tokens of KVB bytes), prefix caching
 * on, watermark 0, with a host tier of host blocks at host_bw and a disk
 * tier of disk blocks at disk_bw (0 blocks: none). */
static kvs_alloc *mkalloc(uint32_t nblocks, uint64_t host, double host_bw,
			  uint64_t disk, double disk_bw)
{
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.block_size = BS;
	c.kv_bytes_per_token = KVB;
	c.budget_bytes = (uint64_t)nblocks * BB;
	c.max_model_len = 4096;
	c.watermark = 0;
	c.enable_prefix_caching = true;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes = host * BB;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes_per_s = host_bw;
	c.offload.tier[KVS_OFFLOAD_DISK].bytes = disk * BB;
	c.offload.tier[KVS_OFFLOAD_DISK].bytes_per_s = disk_bw;
	kvs_alloc *a = NULL;
	if (kvs_alloc_create(&c, &a) != KVS_OK)
		fail_msg("create: %s", kvs_last_error());
	return a;
}

/* Admit seq with a prompt of p tokens and hashes h[0..nh) and fill the
 * prompt; returns the tokens found cached. */
static uint32_t admit_full(kvs_alloc *a, kvs_seq_id seq, uint32_t p, uint32_t out,
			   const uint64_t *h, uint32_t nh)
{
	kvs_seq_desc d = { .seq = seq, .prompt_tokens = p, .output_tokens = out,
			   .block_hashes = h, .num_block_hashes = nh };
	assert_int_equal(kvs_alloc_can_admit(a, &d, NULL), KVS_ADMIT_NOW);
	uint32_t cached = 0;
	if (kvs_alloc_admit(a, &d, &cached) != KVS_OK)
		fail_msg("admit %llu: %s", (unsigned long long)seq, kvs_last_error());
	assert_true(kvs_alloc_is_valid(a));
	if (p > cached)
		assert_int_equal(kvs_alloc_grow(a, seq, p - cached, NULL, NULL), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
	return cached;
}

static void release(kvs_alloc *a, kvs_seq_id seq)
{
	assert_int_equal(kvs_alloc_release(a, seq), KVS_OK);
	assert_true(kvs_alloc_is_valid(a));
}

static const uint64_t H[5] = { 101, 102, 103, 104, 105 };

/* 4 blocks evicted from a 12-block pool to the host tier, then hit: the
 * load is 4 x 16 tokens x 1000 bytes / 1 GB/s = 64 us. */
static void test_evict_then_hit(void **state)
{
	(void)state;
	kvs_alloc *a = mkalloc(12, 8, 1e9, 0, 0);
	kvs_offload_stats os;
	kvs_alloc_stats as;
	/* 65 tokens: 4 full hashed blocks + 1; released: 4 cached-idle */
	assert_int_equal(admit_full(a, 1, 65, 1, H, 4), 0);
	release(a, 1);
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].capacity_blocks, 8);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].store_blocks, 0);
	/* 177 tokens take all 12 blocks: the 4 cached ones are evicted to host */
	assert_int_equal(admit_full(a, 2, 177, 1, NULL, 0), 0);
	kvs_alloc_get_stats(a, &as);
	assert_int_equal(as.evictions, 4);
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].store_blocks, 4);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].store_bytes, 4 * BB);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].resident_blocks, 4);
	assert_int_equal(kvs_alloc_prefix_lookup(a, H, 4), 0);   /* not on the device */
	assert_true(kvs_alloc_offload_take_load_s(a) == 0);
	release(a, 2);
	/* the same prefix: 4 blocks from the host tier, one token computed */
	assert_int_equal(admit_full(a, 3, 65, 1, H, 4), 64);
	double want = (double)(4 * 16 * 1000) / 1e9;
	double got = kvs_alloc_offload_take_load_s(a);
	assert_true(got == want);
	assert_close(got, 64e-6, 1e-12);
	assert_true(kvs_alloc_offload_take_load_s(a) == 0);     /* taken once */
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].hit_blocks, 4);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].load_bytes, 4 * BB);
	assert_true(os.tier[KVS_OFFLOAD_HOST].load_s == want);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].resident_blocks, 4);  /* kept */
	/* loaded blocks are cached on the device again */
	assert_int_equal(kvs_alloc_prefix_lookup(a, H, 4), 4);
	kvs_alloc_get_stats(a, &as);
	assert_int_equal(as.prefix_hit_blocks, 4);
	assert_int_equal(as.prefix_hit_tokens, 64);
	assert_tier_books(&os, BB);
	/* a device hit loads nothing */
	release(a, 3);
	assert_int_equal(admit_full(a, 4, 65, 1, H, 4), 64);
	assert_true(kvs_alloc_offload_take_load_s(a) == 0);
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].hit_blocks, 4);
	release(a, 4);
	kvs_alloc_destroy(a);
}

/* A host tier of 3 blocks takes 5 evictions (tail first: 105 .. 101): it
 * keeps the 3 most recent, 103 102 101; a prompt 101..105 loads 3. */
static void test_lru_capacity(void **state)
{
	(void)state;
	kvs_alloc *a = mkalloc(6, 3, 2e9, 0, 0);
	assert_int_equal(admit_full(a, 1, 81, 1, H, 5), 0);
	release(a, 1);
	assert_int_equal(admit_full(a, 2, 95, 1, NULL, 0), 0);
	kvs_offload_stats os;
	kvs_alloc_offload_stats(a, &os);
	const kvs_offload_tier_stats *h = &os.tier[KVS_OFFLOAD_HOST];
	assert_int_equal(h->store_blocks, 5);
	assert_int_equal(h->evicted_blocks, 2);
	assert_int_equal(h->resident_blocks, 3);
	assert_tier_books(&os, BB);
	release(a, 2);
	assert_int_equal(admit_full(a, 3, 81, 1, H, 5), 48);
	assert_true(kvs_alloc_offload_take_load_s(a) == (double)(3 * BB) / 2e9);
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].hit_blocks, 3);
	release(a, 3);
	kvs_alloc_destroy(a);
}

/* Host 2 blocks at 2 GB/s, disk 4 at 0.5 GB/s: five evictions leave host
 * 102 101 and disk 105 104 103; a prompt 101..105 loads 2 from host and 3
 * from disk: 2 x 16000 / 2e9 + 3 x 16000 / 5e8 = 16 + 96 = 112 us.  Its
 * blocks evicted again move up from disk (promoted). */
static void test_cascade(void **state)
{
	(void)state;
	kvs_alloc *a = mkalloc(6, 2, 2e9, 4, 5e8);
	assert_int_equal(admit_full(a, 1, 81, 1, H, 5), 0);
	release(a, 1);
	assert_int_equal(admit_full(a, 2, 95, 1, NULL, 0), 0);
	kvs_offload_stats os;
	kvs_alloc_offload_stats(a, &os);
	const kvs_offload_tier_stats *h = &os.tier[KVS_OFFLOAD_HOST];
	const kvs_offload_tier_stats *d = &os.tier[KVS_OFFLOAD_DISK];
	assert_int_equal(h->store_blocks, 5);
	assert_int_equal(h->evicted_blocks, 3);
	assert_int_equal(h->resident_blocks, 2);
	assert_int_equal(d->store_blocks, 3);
	assert_int_equal(d->evicted_blocks, 0);
	assert_int_equal(d->resident_blocks, 3);
	assert_tier_books(&os, BB);
	release(a, 2);
	assert_int_equal(admit_full(a, 3, 81, 1, H, 5), 80);
	double want = (double)(2 * BB) / 2e9 + (double)(3 * BB) / 5e8;
	assert_true(kvs_alloc_offload_take_load_s(a) == want);
	assert_close(want, 112e-6, 1e-12);
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(os.tier[KVS_OFFLOAD_HOST].hit_blocks, 2);
	assert_int_equal(os.tier[KVS_OFFLOAD_DISK].hit_blocks, 3);
	assert_int_equal(os.tier[KVS_OFFLOAD_DISK].load_bytes, 3 * BB);
	release(a, 3);
	/* evicted again, tail first: each of 105 .. 101 is on disk or, once
	 * the host tier pushes it down, on disk again: 5 promotions */
	assert_int_equal(admit_full(a, 4, 95, 1, NULL, 0), 0);
	kvs_alloc_offload_stats(a, &os);
	assert_int_equal(h->store_blocks, 10);
	assert_int_equal(h->evicted_blocks, 8);
	assert_int_equal(h->resident_blocks, 2);
	assert_int_equal(d->store_blocks, 8);
	assert_int_equal(d->promoted_blocks, 5);
	assert_int_equal(d->resident_blocks, 3);
	assert_tier_books(&os, BB);
	release(a, 4);
	kvs_alloc_destroy(a);
}

/* Tiers need the paged policy with prefix caching; a tier smaller than
 * a block is refused. */
static void test_config_errors(void **state)
{
	(void)state;
	kvs_alloc_config c;
	kvs_alloc_config_defaults(&c);
	c.kv_bytes_per_token = KVB;
	c.budget_bytes = 64 * BB;
	c.max_model_len = 1024;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes = 8 * BB;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes_per_s = 1e9;
	kvs_alloc *a = NULL;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "prefix caching"));
	c.enable_prefix_caching = true;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes = BB - 1;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "hold no block"));
	c.offload.tier[KVS_OFFLOAD_HOST].bytes = BB;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes_per_s = 0;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "bandwidth"));
	kvs_policy mx;
	assert_int_equal(kvs_policy_parse("max", &mx), KVS_OK);
	c.policy = mx;
	c.offload.tier[KVS_OFFLOAD_HOST].bytes_per_s = 1e9;
	assert_int_equal(kvs_alloc_create(&c, &a), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "paged"));
	assert_null(a);
}

/* ---- the tiers against a reference model ------------------------------------------ */

typedef struct ref_list {
	uint64_t v[64];
	uint32_t n, cap;
} ref_list;

static int ref_find(const ref_list *l, uint64_t h)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i] == h)
			return (int)i;
	return -1;
}

static void ref_del(ref_list *l, int i)
{
	memmove(&l->v[i], &l->v[i + 1], (l->n - (uint32_t)i - 1) * sizeof l->v[0]);
	l->n--;
}

static void ref_touch(ref_list *l, int i)
{
	uint64_t h = l->v[i];
	ref_del(l, i);
	l->v[l->n++] = h;
}

/* Random stores and matches over 24 hashes, host 5 and disk 7 blocks,
 * against two plain lists (least recent first); every hash's tier, every
 * match and every counter compared after each operation. */
static void test_reference_model(void **state)
{
	(void)state;
	kvs_offload_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.tier[KVS_OFFLOAD_HOST].bytes = 5 * BB;
	cfg.tier[KVS_OFFLOAD_HOST].bytes_per_s = 3e9;
	cfg.tier[KVS_OFFLOAD_DISK].bytes = 7 * BB + 5;   /* partial block unused */
	cfg.tier[KVS_OFFLOAD_DISK].bytes_per_s = 7e8;
	kvs_offload *o = NULL;
	assert_int_equal(kvs_offload_create(&cfg, BB, &o), KVS_OK);
	ref_list host = { .cap = 5 }, disk = { .cap = 7 };
	uint64_t hits[2] = { 0 }, stores[2] = { 0 }, evicted[2] = { 0 }, promoted = 0;
	double pending = 0;
	uint64_t x = 12345;
	unsigned long nops = kvs_test_scaled(20000, 2000);
	for (unsigned long op = 0; op < nops; op++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t h = 1 + (x >> 33) % 24;
		if ((x >> 20) % 3) {
			kvs_offload_store(o, h);
			int i = ref_find(&host, h);
			if (i >= 0) {
				ref_touch(&host, i);
			} else {
				int j = ref_find(&disk, h);
				if (j >= 0) {
					ref_del(&disk, j);
					promoted++;
				}
				if (host.n == host.cap) {
					uint64_t v = host.v[0];
					ref_del(&host, 0);
					evicted[0]++;
					if (disk.n == disk.cap) {
						ref_del(&disk, 0);
						evicted[1]++;
					}
					disk.v[disk.n++] = v;
					stores[1]++;
				}
				host.v[host.n++] = h;
				stores[0]++;
			}
		} else {
			uint64_t q[4];
			uint32_t n = 1 + (uint32_t)((x >> 40) % 4);
			for (uint32_t k = 0; k < n; k++)
				q[k] = 1 + (h + k * ((x >> 50) % 3)) % 24;
			uint32_t want = 0;
			uint64_t nh[2] = { 0 };
			for (; want < n; want++) {
				int i = ref_find(&host, q[want]);
				if (i >= 0) {
					ref_touch(&host, i);
					nh[0]++;
					continue;
				}
				int j = ref_find(&disk, q[want]);
				if (j < 0)
					break;
				ref_touch(&disk, j);
				nh[1]++;
			}
			assert_int_equal(kvs_offload_match(o, q, n), want);
			if (nh[0])
				pending += (double)(nh[0] * BB) / 3e9;
			if (nh[1])
				pending += (double)(nh[1] * BB) / 7e8;
			hits[0] += nh[0];
			hits[1] += nh[1];
		}
		assert_true(kvs_offload_is_valid(o));
		for (uint64_t k = 1; k <= 24; k++) {
			int where = ref_find(&host, k) >= 0 ? KVS_OFFLOAD_HOST :
				    ref_find(&disk, k) >= 0 ? KVS_OFFLOAD_DISK : -1;
			assert_int_equal(kvs_offload_where(o, k), where);
		}
		if (op % 97 == 0) {
			assert_close(kvs_offload_take_load_s(o), pending, 1e-12);
			pending = 0;
		}
	}
	kvs_offload_stats s;
	kvs_offload_get_stats(o, &s);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(s.tier[k].hit_blocks, hits[k]);
		assert_int_equal(s.tier[k].store_blocks, stores[k]);
		assert_int_equal(s.tier[k].evicted_blocks, evicted[k]);
	}
	assert_int_equal(s.tier[KVS_OFFLOAD_DISK].promoted_blocks, promoted);
	assert_int_equal(s.tier[KVS_OFFLOAD_HOST].resident_blocks, host.n);
	assert_int_equal(s.tier[KVS_OFFLOAD_DISK].resident_blocks, disk.n);
	assert_int_equal(s.tier[KVS_OFFLOAD_DISK].capacity_blocks, 7);
	assert_tier_books(&s, BB);
	assert_true(hits[0] > 0 && hits[1] > 0 && promoted > 0 && evicted[1] > 0);
	kvs_offload_destroy(o);
}

/* ---- through the engine ------------------------------------------------------------ */

typedef struct recs {
	kvs_sim_request_record r[8];
	size_t n;
} recs;

static void on_rec(void *ctx, const kvs_sim_request_record *r)
{
	recs *R = ctx;
	assert_true(R->n < 8);
	R->r[R->n++] = *r;
}

static kvs_request mkreq(uint64_t i, double t, uint32_t p, const uint64_t *h,
			 uint32_t nh)
{
	kvs_request r;
	memset(&r, 0, sizeof r);
	r.index = i;
	r.line = i + 1;
	r.arrival_s = t;
	r.prompt_tokens = p;
	r.output_tokens = 1;
	r.num_samples = 1;
	r.hash_ids = h;
	r.num_hash_ids = nh;
	r.hash_block_tokens = BS;
	return r;
}

static kvs_sim_result *run(const kvs_sim_config *c0, const kvs_request *q, size_t n,
			   recs *R)
{
	kvs_sim_config c = *c0;
	R->n = 0;
	c.on_request = on_rec;
	c.on_request_ctx = R;
	kvs_request_set *set;
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(kvs_request_set_append(set, &q[i]), KVS_OK);
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *res = NULL;
	if (kvs_sim_replay(&c, &src, &res) != KVS_OK)
		fail_msg("replay: %s", kvs_last_error());
	kvs_request_set_destroy(set);
	return res;
}

static void assert_run_books(const kvs_sim_result *r, uint64_t n)
{
	const kvs_sim_stats *st = kvs_sim_result_stats(r);
	const kvs_offload_stats *os = kvs_sim_result_offload(r);
	assert_int_equal(st->arrived, n);
	assert_int_equal(st->arrived, st->completed + st->rejected + st->unfinished);
	double sum = st->memory_pct.token_states + st->memory_pct.reservation +
		     st->memory_pct.internal_frag + st->memory_pct.external_frag +
		     st->memory_pct.cached_idle + st->memory_pct.free;
	assert_close(sum, 100.0, 1e-9);
	uint64_t tier = 0;
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++)
		tier += os->tier[k].hit_blocks;
	assert_true(tier <= st->prefix_hit_blocks);
	assert_int_equal(st->prefix_hit_tokens, st->prefix_hit_blocks * BS);
	assert_tier_books(os, BS * st->kv_bytes_per_token);
}

/* A 12-block pool, a fixed 10 ms step.  Request 0 (65 tokens, prefix
 * 101..104) leaves 4 cached blocks; request 1 (177 tokens) takes the whole
 * pool and evicts them to the host tier; request 2 (request 0's prefix)
 * arrives at t = 2 on an idle engine, loads the 4 blocks and computes one
 * token: its first step takes 10 ms + 4 x 16 x 1000 B / 1 GB/s = 10.064 ms.
 * Without the tier it recomputes the prompt in a 10 ms step. */
static void test_engine_charge(void **state)
{
	(void)state;
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, NULL);
	c.deploy.block_size = BS;
	c.deploy.max_model_len = 1024;
	c.deploy.tp = 1;
	c.kv_bytes_per_token = KVB;
	c.kv_budget_bytes = 12 * BB;
	c.watermark = 0;
	c.cost.kind = KVS_COST_LINEAR;
	c.cost.linear_base_s = 0.01;
	c.max_num_seqs = 8;
	c.max_num_batched_tokens = 512;
	c.enable_prefix_caching = true;
	c.validate = true;
	kvs_request q[3] = {
		mkreq(0, 0.0, 65, H, 4),
		mkreq(1, 1.0, 177, NULL, 0),
		mkreq(2, 2.0, 65, H, 4),
	};
	recs R;
	kvs_sim_result *plain = run(&c, q, 3, &R);
	const kvs_sim_stats *ps = kvs_sim_result_stats(plain);
	assert_int_equal(ps->completed, 3);
	assert_int_equal(ps->prefix_hit_blocks, 0);
	assert_false(kvs_sim_result_offload(plain)->tier[KVS_OFFLOAD_HOST].capacity_blocks);
	const kvs_sim_request_record *r2 = &R.r[2];
	assert_int_equal(r2->index, 2);
	assert_close(r2->first_token_s - r2->arrival_s, 0.01, 1e-12);

	c.kv_offload.tier[KVS_OFFLOAD_HOST].bytes = 8 * BB;
	c.kv_offload.tier[KVS_OFFLOAD_HOST].bytes_per_s = 1e9;
	kvs_sim_result *off = run(&c, q, 3, &R);
	const kvs_sim_stats *os = kvs_sim_result_stats(off);
	assert_run_books(off, 3);
	assert_int_equal(os->completed, 3);
	const kvs_offload_tier_stats *h = &kvs_sim_result_offload(off)->tier[KVS_OFFLOAD_HOST];
	assert_int_equal(h->capacity_blocks, 8);
	assert_int_equal(h->store_blocks, 4);
	assert_int_equal(h->hit_blocks, 4);
	assert_int_equal(h->load_bytes, 64000);
	assert_int_equal(os->prefix_hit_blocks, 4);     /* all from the tier */
	assert_int_equal(os->prefix_hit_tokens, 64);
	r2 = &R.r[2];
	assert_int_equal(r2->index, 2);
	assert_int_equal(r2->cached_tokens, 64);
	assert_close(r2->first_token_s - r2->arrival_s, 0.01 + 64000.0 / 1e9, 1e-12);
	/* the other requests are untouched */
	assert_close(R.r[0].first_token_s, 0.01, 1e-12);
	/* the JSON carries the split */
	kvs_json *j = kvs_sim_result_json(off);
	char *text = kvs_json_text(j);
	assert_non_null(strstr(text, "\"kv_offload\""));
	assert_non_null(strstr(text, "\"tier_hit_share\": 1.0"));
	kvs_free(text);
	kvs_json_free(j);
	j = kvs_sim_result_json(plain);
	text = kvs_json_text(j);
	assert_null(strstr(text, "kv_offload"));
	kvs_free(text);
	kvs_json_free(j);

	/* a policy without a prefix cache, or prefix caching off: refused */
	kvs_sim *s = NULL;
	c.enable_prefix_caching = false;
	assert_int_equal(kvs_sim_create(&c, &s), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "prefix caching"));
	c.enable_prefix_caching = true;
	assert_int_equal(kvs_policy_parse("max", &c.policy), KVS_OK);
	assert_int_equal(kvs_sim_create(&c, &s), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "kv_offload"));
	/* no bandwidth and no GPU PCIe figure to default to */
	c.policy = KVS_POLICY_PAGED;
	c.kv_offload.tier[KVS_OFFLOAD_HOST].bytes_per_s = 0;
	assert_int_equal(kvs_sim_create(&c, &s), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "PCIe"));
	assert_null(s);
	kvs_sim_result_destroy(plain);
	kvs_sim_result_destroy(off);
}

/* The Mooncake synthetic trace on a pool too small for its prefixes: a
 * host tier raises the prefix hit rate. */
static void test_mooncake(void **state)
{
	(void)state;
	const char *path = kvs_test_shared_trace("mooncake-synthetic/synthetic.jsonl");
	if (!path) {
		skip();
		return;
	}
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-3-8b", "a100-80gb");
	d.max_model_len = 131072;
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	c.enable_prefix_caching = true;
	kvs_sizing sz;
	assert_int_equal(kvs_size_compute(&c.deploy, &sz), KVS_OK);
	/* 3000 blocks: the pool holds a few prompts at a time.  With
	 * debug_checks >= 2 the validators scan the pool and the tier after
	 * every allocator call: the first 100 requests, 1000 blocks, 2 GiB */
	bool dbg = KVS_DEBUG >= 2;
	uint64_t pool = dbg ? 1000 : 3000, tier = dbg ? 2ull << 30 : 64ull << 30;
	c.kv_budget_bytes = pool * 16 * sz.kv_bytes_per_token;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 16;
	o.max_model_len = d.max_model_len;
	kvs_request_set *all;
	assert_int_equal(kvs_request_set_load(path, &o, &all), KVS_OK);
	uint64_t n = kvs_request_set_count(all);
	uint64_t lim = dbg ? 100 : kvs_test_scaled(n, 400);
	if (lim < n)
		n = lim;
	kvs_request_set *set;
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(kvs_request_set_append(set, kvs_request_set_get(all, i)),
				 KVS_OK);
	kvs_request_set_destroy(all);
	kvs_sim_result *res[2];
	for (int t = 0; t < 2; t++) {
		if (t)
			c.kv_offload.tier[KVS_OFFLOAD_HOST].bytes = tier;
		kvs_request_cursor cur;
		kvs_request_cursor_init(&cur, set, 1.0);
		kvs_request_source src = kvs_request_cursor_source(&cur);
		if (kvs_sim_replay(&c, &src, &res[t]) != KVS_OK)
			fail_msg("replay: %s", kvs_last_error());
		assert_run_books(res[t], n);
	}
	const kvs_sim_stats *a = kvs_sim_result_stats(res[0]);
	const kvs_sim_stats *b = kvs_sim_result_stats(res[1]);
	const kvs_offload_tier_stats *h = &kvs_sim_result_offload(res[1])->tier[KVS_OFFLOAD_HOST];
	printf("mooncake, %llu requests, %llu-block pool: prefix hit rate (tokens) "
	       "%.4f without a tier, %.4f with a %llu GiB host tier (%llu of %llu hit "
	       "blocks from the tier, %.3f s of loads at %.0f GB/s)\n",
	       (unsigned long long)n, (unsigned long long)pool, a->prefix_hit_rate_tokens,
	       b->prefix_hit_rate_tokens, (unsigned long long)(tier >> 30),
	       (unsigned long long)h->hit_blocks, (unsigned long long)b->prefix_hit_blocks,
	       h->load_s, h->bytes_per_s / 1e9);
	assert_true(b->prefix_hit_rate_tokens > a->prefix_hit_rate_tokens);
	assert_true(h->hit_blocks > 0);
	assert_true(h->bytes_per_s == d.gpu.pcie_bytes_per_s);   /* the default */
	/* the same requests either way */
	assert_int_equal(a->completed + a->rejected, b->completed + b->rejected);
	kvs_sim_result_destroy(res[0]);
	kvs_sim_result_destroy(res[1]);

	/* a 64 MiB host tier and a 16 GiB disk tier: the fast path equals
	 * stepping one token at a time on the first 100 requests */
	c.kv_budget_bytes = 1000ull * 16 * sz.kv_bytes_per_token;
	c.kv_offload.tier[KVS_OFFLOAD_HOST].bytes = 64ull << 20;
	c.kv_offload.tier[KVS_OFFLOAD_DISK].bytes = 16ull << 30;
	kvs_request_set *few;
	assert_int_equal(kvs_request_set_create(&few), KVS_OK);
	for (uint64_t i = 0; i < 100 && i < n; i++)
		assert_int_equal(kvs_request_set_append(few, kvs_request_set_get(set, i)),
				 KVS_OK);
	for (int t = 0; t < 2; t++) {
		c.fast_path = t == 0;
		kvs_request_cursor cur;
		kvs_request_cursor_init(&cur, few, 1.0);
		kvs_request_source src = kvs_request_cursor_source(&cur);
		if (kvs_sim_replay(&c, &src, &res[t]) != KVS_OK)
			fail_msg("replay: %s", kvs_last_error());
		assert_run_books(res[t], n < 100 ? n : 100);
	}
	a = kvs_sim_result_stats(res[0]);
	b = kvs_sim_result_stats(res[1]);
	const kvs_offload_stats *fa = kvs_sim_result_offload(res[0]);
	const kvs_offload_stats *fb = kvs_sim_result_offload(res[1]);
	printf("100 requests, host 64 MiB + disk 16 GiB: %llu host and %llu disk hit blocks\n",
	       (unsigned long long)fa->tier[KVS_OFFLOAD_HOST].hit_blocks,
	       (unsigned long long)fa->tier[KVS_OFFLOAD_DISK].hit_blocks);
	assert_int_equal(a->completed, b->completed);
	assert_int_equal(a->steps, b->steps);
	assert_int_equal(a->prefix_hit_blocks, b->prefix_hit_blocks);
	assert_true(fa->tier[KVS_OFFLOAD_HOST].hit_blocks > 0);
	assert_true(fa->tier[KVS_OFFLOAD_DISK].hit_blocks > 0);
	for (int k = 0; k < KVS_OFFLOAD_KINDS_; k++) {
		assert_int_equal(fa->tier[k].hit_blocks, fb->tier[k].hit_blocks);
		assert_int_equal(fa->tier[k].store_blocks, fb->tier[k].store_blocks);
		assert_close(fa->tier[k].load_s, fb->tier[k].load_s, 1e-12);
	}
	assert_close(a->sim_time_s, b->sim_time_s, 1e-9);
	assert_close(a->ttft_s.mean, b->ttft_s.mean, 1e-9);
	kvs_sim_result_destroy(res[0]);
	kvs_sim_result_destroy(res[1]);
	kvs_request_set_destroy(few);
	kvs_request_set_destroy(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_evict_then_hit),
		cmocka_unit_test(test_lru_capacity),
		cmocka_unit_test(test_cascade),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_reference_model),
		cmocka_unit_test(test_engine_charge),
		cmocka_unit_test(test_mooncake),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
