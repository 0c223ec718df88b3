/*
 * test_fleet.c - replicas behind a router: a fleet of one is the replay,
 * the engine driven step by step is the engine run whole, routing orders
 * derived by hand, accounting across replicas after every run, determinism,
 * and prefix routing against round-robin on the Mooncake trace.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs_config.h"
#include "kvsim/fleet.h"
#include "common/json.h"
#include "fleet/link.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------------- */

/* A pool of `tokens` tokens of 8 bytes, blocks of 16, a fixed step of
 * 10 ms (linear model), watermark 0. */
static void cfg_fixed(kvs_sim_config *c, uint64_t tokens, bool prefix)
{
	kvs_sim_config_defaults(c, NULL);
	c->deploy.block_size = 16;
	c->deploy.max_model_len = 4096;
	c->deploy.tp = 1;
	c->kv_bytes_per_token = 8;
	c->kv_budget_bytes = tokens * 8;
	c->watermark = 0;
	c->cost.kind = KVS_COST_LINEAR;
	c->cost.linear_base_s = 0.01;
	c->cost.linear_per_token_s = 1e-5;
	c->max_num_seqs = 64;
	c->max_num_batched_tokens = 512;
	c->sample_interval_s = 0.05;
	c->enable_prefix_caching = prefix;
}

static kvs_request mkreq(uint64_t i, double t, uint32_t p, uint32_t o)
{
	kvs_request r;
	memset(&r, 0, sizeof r);
	r.index = i;
	r.line = i + 2;
	r.arrival_s = t;
	r.prompt_tokens = p;
	r.output_tokens = o;
	r.num_samples = 1;
	return r;
}

/* A mixed workload: n requests, one every gap seconds, some sharing
 * prefixes (hash ids of 16 tokens drawn from 4 families), some preempted
 * in a small pool. */
static kvs_request_set *mixed_set_gap(size_t n, double gap)
{
	kvs_request_set *s;
	assert_int_equal(kvs_request_set_create(&s), KVS_OK);
	uint64_t h[64];
	for (size_t i = 0; i < n; i++) {
		uint32_t p = 20 + (uint32_t)(i * 37 % 300);
		kvs_request q = mkreq(i, gap * (double)i, p, 1 + (uint32_t)(i * 53 % 120));
		uint32_t nb = p / 16;
		uint64_t fam = i % 4;
		for (uint32_t b = 0; b < nb && b < 64; b++)
			h[b] = b < nb / 2 + 1 ? fam * 1000 + b : 100000 + i * 100 + b;
		q.hash_ids = h;
		q.num_hash_ids = nb < 64 ? nb : 64;
		q.hash_block_tokens = 16;
		assert_int_equal(kvs_request_set_append(s, &q), KVS_OK);
	}
	return s;
}

static kvs_request_set *mixed_set(size_t n)
{
	return mixed_set_gap(n, 0.013);
}

static kvs_request_set *set_of(const kvs_request *q, size_t n)
{
	kvs_request_set *s;
	assert_int_equal(kvs_request_set_create(&s), KVS_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(kvs_request_set_append(s, &q[i]), KVS_OK);
	return s;
}

static kvs_sim_result *replay(const kvs_sim_config *c, const kvs_request_set *set)
{
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *r = NULL;
	if (kvs_sim_replay(c, &src, &r) != KVS_OK)
		fail_msg("replay: %s", kvs_last_error());
	return r;
}

typedef struct routes {
	uint32_t *to;
	size_t n, cap;
} routes;

static void on_route(void *ctx, const kvs_request *q, uint32_t k)
{
	routes *R = ctx;
	assert_true(q->index < R->cap);
	assert_int_equal(q->index, R->n);   /* routed in arrival order */
	R->to[R->n++] = k;
}

static kvs_fleet_result *fleet(const kvs_sim_config *c, uint32_t n, const char *router,
			       double refresh, const kvs_request_set *set, routes *R)
{
	kvs_fleet_config fc;
	kvs_fleet_config_defaults(&fc, NULL);
	fc.sim = *c;
	fc.replicas = n;
	fc.router = router;
	fc.router_refresh_s = refresh;
	fc.seed = 7;
	if (R) {
		R->n = 0;
		fc.on_route = on_route;
		fc.on_route_ctx = R;
	}
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_fleet_result *r = NULL;
	if (kvs_fleet_run(&fc, &src, &r) != KVS_OK)
		fail_msg("fleet %s x%u: %s", router, n, kvs_last_error());
	return r;
}

static void assert_parts_sum(const kvs_sim_mem_pct *m)
{
	double sum = m->token_states + m->reservation + m->internal_frag +
		     m->external_frag + m->cached_idle + m->free;
	if (!(fabs(sum - 100.0) <= 1e-9))
		fail_msg("memory parts sum to %.15g", sum);
}

/* Every request accounted for, per replica and for the fleet; the fleet's
 * counts are the replicas' sums. */
static void assert_fleet_accounting(const kvs_fleet_result *r, uint64_t requests)
{
	const kvs_fleet_stats *fs = kvs_fleet_result_stats(r);
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
	uint64_t routed = 0, arrived = 0, completed = 0, rejected = 0, unfinished = 0;
	uint64_t hit = 0, miss = 0, pre = 0, out = 0;
	for (uint32_t i = 0; i < fs->replicas; i++) {
		const kvs_fleet_replica_stats *s = kvs_fleet_result_replica_stats(r, i);
		const kvs_sim_stats *q = kvs_sim_result_stats(kvs_fleet_result_replica(r, i));
		assert_int_equal(s->routed, s->arrived);
		assert_int_equal(q->arrived, q->completed + q->rejected + q->unfinished);
		assert_parts_sum(&q->memory_pct);
		assert_parts_sum(&q->memory_peak_pct);
		routed += s->routed;
		arrived += q->arrived;
		completed += q->completed;
		rejected += q->rejected;
		unfinished += q->unfinished;
		hit += q->prefix_hit_tokens;
		miss += q->prefix_miss_tokens;
		pre += q->preemptions;
		out += q->output_tokens;
	}
	assert_int_equal(routed, requests);
	assert_int_equal(t->arrived, arrived);
	assert_int_equal(t->completed, completed);
	assert_int_equal(t->rejected, rejected);
	assert_int_equal(t->unfinished, unfinished);
	assert_int_equal(t->arrived, t->completed + t->rejected + t->unfinished);
	assert_int_equal(t->prefix_hit_tokens, hit);
	assert_int_equal(t->prefix_miss_tokens, miss);
	assert_int_equal(t->preemptions, pre);
	assert_int_equal(t->output_tokens, out);
	assert_int_equal(t->ttft_s.count, completed);
	assert_parts_sum(&t->memory_pct);
	assert_parts_sum(&t->memory_peak_pct);
}

/* Every key of the replay document but "command", dumped alone. */
static void assert_same_as_replay(const kvs_sim_config *c, const kvs_request_set *set,
				  const char *router)
{
	kvs_sim_result *rr = replay(c, set);
	kvs_fleet_result *fr = fleet(c, 1, router, 0, set, NULL);
	json_t *a = kvs_json_jt(kvs_sim_report_json("replay", &rr, 1, "mem", KVS_TRACE_AUTO, NULL));
	json_t *b = kvs_json_jt(kvs_fleet_report_json(fr, "mem", KVS_TRACE_AUTO, NULL));
	const char *key;
	json_t *v;
	size_t nkeys = 0;
	json_object_foreach(a, key, v) {
		if (strcmp(key, "command") == 0)
			continue;
		char *x = json_dumps(v, JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
		char *y = json_dumps(json_object_get(b, key), JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
		assert_non_null(x);
		if (!y || strcmp(x, y) != 0)
			fail_msg("router %s: key %s differs from replay", router, key);
		free(x);
		free(y);
		nkeys++;
	}
	assert_true(nkeys >= 6);
	assert_non_null(json_object_get(b, "fleet"));
	json_decref(a);
	json_decref(b);
	kvs_sim_result_destroy(rr);
	kvs_fleet_result_destroy(fr);
}

/* ---- a fleet of one is the replay ------------------------------------------------- */

static void test_one_replica_is_replay(void **state)
{
	(void)state;
	static const char *routers[] = { "round-robin", "random", "least-requests",
					 "least-kv", "prefix", "score:prefix=2,queue=1,kv=1" };
	kvs_request_set *set = mixed_set(kvs_test_scaled(400, 60));
	kvs_sim_config c;
	/* small pool: preemptions and prefix hits both happen */
	cfg_fixed(&c, 2000, true);
	for (size_t i = 0; i < KVS_ARRAY_LEN(routers); i++)
		assert_same_as_replay(&c, set, routers[i]);
	/* swap, no prefix caching, a horizon that cuts the run */
	cfg_fixed(&c, 2000, false);
	c.preemption_mode = KVS_PREEMPT_SWAP;
	c.deploy.gpu.pcie_bytes_per_s = 1e9;
	c.swap_bytes = 1000 * 8;   /* host room for 1000 tokens (validators scan it) */
	assert_same_as_replay(&c, set, "round-robin");
	cfg_fixed(&c, 4000, true);
	c.horizon_s = 1.7;
	assert_same_as_replay(&c, set, "least-requests");
	/* the roofline on a real deployment over the bundled Mooncake sample */
	kvs_deploy d;
	kvs_test_deploy(&d, "qwen2.5-7b", "a100-80gb");
	kvs_sim_config_defaults(&c, &d);
	c.enable_prefix_caching = true;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 16;
	kvs_request_set *moon;
	assert_int_equal(kvs_request_set_load(kvs_test_src("traces/samples/mooncake-sample.jsonl"),
					      &o, &moon), KVS_OK);
	assert_same_as_replay(&c, moon, "prefix");
	kvs_request_set_destroy(moon);
	kvs_request_set_destroy(set);
}

/* The step API alone: feed every request after advancing to it. */
static void test_step_api_is_run(void **state)
{
	(void)state;
	kvs_request_set *set = mixed_set(200);
	kvs_sim_config c;
	cfg_fixed(&c, 1500, true);
	kvs_sim_result *a = replay(&c, set);
	kvs_sim *s;
	assert_int_equal(kvs_sim_create(&c, &s), KVS_OK);
	assert_int_equal(kvs_sim_start(s, NULL), KVS_OK);
	for (uint64_t i = 0; i < kvs_request_set_count(set); i++) {
		const kvs_request *q = kvs_request_set_get(set, i);
		assert_int_equal(kvs_sim_advance(s, q->arrival_s), KVS_OK);
		assert_true(kvs_sim_now_s(s) <= q->arrival_s);
		assert_true(kvs_sim_next_event_s(s) >= q->arrival_s);
		kvs_sim_load l;
		kvs_sim_get_load(s, &l);
		assert_true(l.kv_usage >= 0 && l.kv_usage <= 1);
		assert_true(l.arrived >= l.completed + l.rejected);
		assert_int_equal(kvs_sim_feed(s, q), KVS_OK);
	}
	/* a request before the engine's time is refused */
	kvs_request early = mkreq(9999, 0, 10, 1);
	assert_int_equal(kvs_sim_feed(s, &early), KVS_ERR_STATE);
	kvs_sim_result *b = NULL;
	assert_int_equal(kvs_sim_finish(s, &b), KVS_OK);
	kvs_sim_destroy(s);
	json_t *ja = kvs_json_jt(kvs_sim_result_json(a)), *jb = kvs_json_jt(kvs_sim_result_json(b));
	char *x = json_dumps(ja, JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	char *y = json_dumps(jb, JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	assert_string_equal(x, y);
	free(x);
	free(y);
	json_decref(ja);
	json_decref(jb);
	kvs_sim_result_destroy(a);
	kvs_sim_result_destroy(b);
	kvs_request_set_destroy(set);
}

/* ---- routing orders by hand -------------------------------------------------------- */

static void test_round_robin_order(void **state)
{
	(void)state;
	kvs_request q[10];
	for (int i = 0; i < 10; i++)
		q[i] = mkreq((uint64_t)i, 0.01 * i, 32, 4);
	kvs_request_set *set = set_of(q, 10);
	kvs_sim_config c;
	cfg_fixed(&c, 4000, false);
	uint32_t to[10];
	routes R = { to, 0, 10 };
	kvs_fleet_result *r = fleet(&c, 3, "round-robin", 0, set, &R);
	assert_int_equal(R.n, 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(to[i], (uint32_t)(i % 3));
	assert_int_equal(kvs_fleet_result_replica_stats(r, 0)->routed, 4);
	assert_int_equal(kvs_fleet_result_replica_stats(r, 1)->routed, 3);
	assert_int_equal(kvs_fleet_result_replica_stats(r, 2)->routed, 3);
	/* arrived 4, 3, 3: mean 10/3, population sd sqrt(2)/3, CV sqrt(2)/10 */
	assert_true(fabs(kvs_fleet_result_stats(r)->requests_cv - sqrt(2.0) / 10.0) < 1e-12);
	assert_fleet_accounting(r, 10);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

/* A (long) and B (short) at 0, then C, D and E together at 1 s: the
 * requests of the by-hand routing tests below, on 2 replicas */
static kvs_request_set *abcde_set(kvs_sim_config *c)
{
	kvs_request q[5] = {
		mkreq(0, 0.0, 16, 1000), mkreq(1, 0.0, 16, 2), mkreq(2, 1.0, 16, 5),
		mkreq(3, 1.0, 16, 5), mkreq(4, 1.0, 16, 5),
	};
	cfg_fixed(c, 8000, false);
	return set_of(q, 5);
}

/* The fleet of 2 under router at refresh routes the five as want says;
 * every request accounted for.  The result, for more checks. */
static kvs_fleet_result *routes_are(const kvs_sim_config *c, const char *router,
				    double refresh, const kvs_request_set *set,
				    const uint32_t want[5])
{
	uint32_t to[5];
	routes R = { to, 0, 5 };
	kvs_fleet_result *r = fleet(c, 2, router, refresh, set, &R);
	for (int i = 0; i < 5; i++)
		if (to[i] != want[i])
			fail_msg("%s, refresh %g: request %d went to %u, not %u", router,
				 refresh, i, to[i], want[i]);
	assert_fleet_accounting(r, 5);
	return r;
}

/* A (long) and B (short) at 0; B is done (2 steps of about 10 ms) long
 * before C, D, E arrive together at 1 s while A still runs (1000 steps).
 * least-requests: A -> 0 (tie, lowest), B -> 1 (0 has 1), then at 1 s
 * outstanding is (1, 0): C -> 1, (1, 1): D -> 0, (2, 1): E -> 1.
 * With signals refreshed every 100 s the router never sees B finish, only
 * its own sends: (1, 1): C -> 0, (2, 1): D -> 1, (2, 2): E -> 0. */
static void test_least_requests_by_hand(void **state)
{
	(void)state;
	kvs_sim_config c;
	kvs_request_set *set = abcde_set(&c);
	static const uint32_t exact[5] = { 0, 1, 1, 0, 1 };
	static const uint32_t stale[5] = { 0, 1, 0, 1, 0 };
	kvs_fleet_result_destroy(routes_are(&c, "least-requests", 0, set, exact));
	kvs_fleet_result_destroy(routes_are(&c, "least-requests", 100.0, set, stale));
	/* score with the queue scorer alone is least-requests */
	kvs_fleet_result_destroy(routes_are(&c, "score:prefix=0,queue=1,kv=0", 0, set, exact));
	kvs_request_set_destroy(set);
}

/* vllm-dp: the lowest 4 x waiting + running, the first lowest in index
 * order.  Picks by hand on made-up queues, then the requests of
 * test_least_requests_by_hand: A -> 0 (tie), B -> 1 (A waits on 0: 4
 * against 0); at 1 s A runs on 0 (1) and B is done (0): C -> 1, then D
 * -> 0 (1 against C waiting, 4), E -> 1 (A running + D waiting, 5,
 * against 4).  With signals refreshed every 100 s the router sees only
 * its own sends, each 4 more on its replica: they alternate. */
static void test_vllm_dp_by_hand(void **state)
{
	(void)state;
	kvs_router *rt;
	assert_int_equal(kvs_router_create("vllm-dp", 0, &rt), KVS_OK);
	assert_true(kvs_router_needs(rt) == KVS_ROUTER_NEEDS_SCHED);
	assert_true(kvs_router_default_refresh_s(rt) == 0.1);
	static const struct { uint64_t w[3], r[3]; uint32_t pick; } cases[] = {
		{ { 0, 1, 9 }, { 3, 0, 0 }, 0 },     /* 3 < 4 < 36 */
		{ { 0, 1, 9 }, { 4, 0, 0 }, 0 },     /* 4 = 4: the first */
		{ { 0, 1, 9 }, { 5, 0, 0 }, 1 },     /* 5 > 4 */
		{ { 2, 2, 1 }, { 0, 1, 5 }, 0 },     /* 8, 9, 9 */
		{ { 2, 2, 0 }, { 1, 1, 9 }, 0 },     /* 9, 9, 9: the first */
		{ { 3, 2, 0 }, { 0, 1, 8 }, 2 },     /* 12, 9, 8 */
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(cases); i++) {
		double kv[3] = { 0.9, 0.0, 0.5 };
		uint64_t out[3] = { 7, 0, 3 };
		kvs_router_view v = { .n = 3, .outstanding = out, .kv_usage = kv,
				      .waiting = cases[i].w, .running = cases[i].r };
		assert_int_equal(kvs_router_pick(rt, &v), cases[i].pick);
	}
	kvs_router_destroy(rt);

	kvs_sim_config c;
	kvs_request_set *set = abcde_set(&c);
	static const uint32_t exact[5] = { 0, 1, 1, 0, 1 };
	static const uint32_t stale[5] = { 0, 1, 0, 1, 0 };
	kvs_fleet_result *r = routes_are(&c, "vllm-dp", 0, set, exact);
	assert_true(kvs_fleet_result_config(r)->router_refresh_s == 0);
	kvs_fleet_result_destroy(r);
	kvs_fleet_result_destroy(routes_are(&c, "vllm-dp", 100.0, set, stale));
	/* the fleet's default refresh is the router's own: 0.1 s here (the
	 * snapshot at 0 s, then at 1 s, where A runs and B is done: as
	 * exact) and 0 for the others */
	r = routes_are(&c, "vllm-dp", -1, set, exact);
	assert_true(kvs_fleet_result_config(r)->router_refresh_s == 0.1);
	kvs_fleet_result_destroy(r);
	r = routes_are(&c, "least-requests", -1, set, exact);
	assert_true(kvs_fleet_result_config(r)->router_refresh_s == 0);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

/* least-kv: A holds 1600 tokens (100 blocks of the 400) on replica 0 when
 * B arrives: B -> 1 though both have one request outstanding... and C,
 * at the same instant as B, finds replica 1's B not yet admitted (0 blocks
 * in use on 1): C -> 1 as well. */
static void test_least_kv_by_hand(void **state)
{
	(void)state;
	kvs_request q[3] = { mkreq(0, 0.0, 1600, 500), mkreq(1, 1.0, 16, 5),
			     mkreq(2, 1.0, 16, 5) };
	kvs_request_set *set = set_of(q, 3);
	kvs_sim_config c;
	cfg_fixed(&c, 6400, false);
	c.max_num_batched_tokens = 2048;
	uint32_t to[3];
	routes R = { to, 0, 3 };
	kvs_fleet_result *r = fleet(&c, 2, "least-kv", 0, set, &R);
	assert_int_equal(to[0], 0);
	assert_int_equal(to[1], 1);
	assert_int_equal(to[2], 1);
	assert_fleet_accounting(r, 3);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

/* prefix: requests of one family follow the first to its replica; the
 * guard sends to the least loaded once the imbalance passes the bounds. */
static void test_prefix_by_hand(void **state)
{
	(void)state;
	uint64_t h[4] = { 11, 12, 13, 14 }, g[4] = { 21, 22, 23, 24 };
	kvs_request q[6];
	for (int i = 0; i < 6; i++) {
		q[i] = mkreq((uint64_t)i, i ? 1.0 * (i - 1) : 0.0, 64, 3);
		q[i].hash_ids = i == 1 ? g : h;
		q[i].num_hash_ids = 4;
		q[i].hash_block_tokens = 16;
	}
	kvs_request_set *set = set_of(q, 6);
	kvs_sim_config c;
	cfg_fixed(&c, 8000, true);
	uint32_t to[6];
	routes R = { to, 0, 6 };
	/* 0 (family h, at 0 s): nothing cached: least KV use, all 0, and
	 * fewest outstanding, all 0 -> 0.  1 (family g, also at 0 s): no
	 * match; KV use all 0 (0 not admitted yet), outstanding (1, 0, 0) ->
	 * 1.  2..5 (family h, at 1, 2, 3, 4 s): 0 holds h's 4 blocks (cached
	 * idle once 0 is done): full match -> 0, each hitting 3 blocks (48
	 * tokens: the last block of a fully cached prompt is recomputed). */
	kvs_fleet_result *r = fleet(&c, 3, "prefix", 0, set, &R);
	static const uint32_t want[6] = { 0, 1, 0, 0, 0, 0 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(to[i], want[i]);
	assert_true(kvs_sim_result_stats(kvs_fleet_result_replica(r, 0))->prefix_hit_tokens >=
		    4 * 48);
	kvs_fleet_result_destroy(r);
	/* round-robin spreads the family: fewer hits */
	r = fleet(&c, 3, "round-robin", 0, set, &R);
	assert_true(kvs_sim_result_stats(kvs_fleet_result_total(r))->prefix_hit_tokens <
		    4 * 48);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

/* ---- accounting, determinism ----------------------------------------------------- */

static void test_accounting_all_routers(void **state)
{
	(void)state;
	static const char *routers[] = { "round-robin", "random", "least-requests",
					 "least-kv", "prefix", "score", "score:kv=1,queue=0,prefix=0",
					 "vllm-dp" };
	size_t n = kvs_test_scaled(600, 100);
	kvs_request_set *set = mixed_set(n);
	kvs_sim_config c;
	cfg_fixed(&c, 1200, true);
	for (size_t i = 0; i < KVS_ARRAY_LEN(routers); i++)
		for (double refresh = 0; refresh <= 0.5; refresh += 0.5) {
			kvs_fleet_result *r = fleet(&c, 3, routers[i], refresh, set, NULL);
			assert_fleet_accounting(r, n);
			kvs_fleet_result_destroy(r);
		}
	/* a horizon leaves requests unfinished: still accounted */
	c.horizon_s = 0.013 * (double)n / 2;   /* half the arrivals */
	kvs_fleet_result *r = fleet(&c, 4, "least-requests", 0, set, NULL);
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
	assert_true(t->unfinished > 0);
	assert_true(t->arrived < n);
	assert_int_equal(t->arrived, t->completed + t->rejected + t->unfinished);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

static char *doc_of(const kvs_sim_config *c, const char *router, uint64_t seed,
		    const kvs_request_set *set, uint32_t *to)
{
	kvs_fleet_config fc;
	kvs_fleet_config_defaults(&fc, NULL);
	fc.sim = *c;
	fc.replicas = 5;
	fc.router = router;
	fc.seed = seed;
	routes R = { to, 0, 400 };
	fc.on_route = on_route;
	fc.on_route_ctx = &R;
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_fleet_result *r;
	assert_int_equal(kvs_fleet_run(&fc, &src, &r), KVS_OK);
	json_t *d = kvs_json_jt(kvs_fleet_report_json(r, "mem", KVS_TRACE_AUTO, NULL));
	char *s = json_dumps(d, JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	json_decref(d);
	kvs_fleet_result_destroy(r);
	return s;
}

static void test_deterministic(void **state)
{
	(void)state;
	kvs_request_set *set = mixed_set(400);
	kvs_sim_config c;
	cfg_fixed(&c, 3000, true);
	static uint32_t a[400], b[400];
	char *x = doc_of(&c, "random", 1, set, a), *y = doc_of(&c, "random", 1, set, b);
	assert_string_equal(x, y);
	assert_memory_equal(a, b, sizeof a);
	free(y);
	y = doc_of(&c, "random", 2, set, b);
	assert_true(memcmp(a, b, sizeof a) != 0);   /* the seed matters */
	free(x);
	free(y);
	x = doc_of(&c, "prefix", 0, set, a);
	y = doc_of(&c, "prefix", 0, set, b);
	assert_string_equal(x, y);
	free(x);
	free(y);
	kvs_request_set_destroy(set);
}

typedef struct two_ctx_ { kvs_request *q; size_t *at; } two_ctx_;

static kvs_status two_next(void *ctx, kvs_request *out)
{
	two_ctx_ *t = ctx;
	if (*t->at >= 2)
		return KVS_END;
	*out = t->q[(*t->at)++];
	return KVS_OK;
}

static void test_router_specs(void **state)
{
	(void)state;
	kvs_router *r;
	assert_int_equal(kvs_router_create("score:prefix=2,kv=0.5", 0, &r), KVS_OK);
	assert_string_equal(kvs_router_spec(r), "score:prefix=2,queue=1,kv=0.5");
	kvs_router_destroy(r);
	static const char *bad[] = { "", "nope", "round-robin:x=1", "score:prefix",
				     "score:foo=1", "score:prefix=-1", "score:prefix=0,queue=0,kv=0",
				     "prefix:cache-threshold=abc", "score:kv=",
				     /* decimal only: hex, inf and blanks are not numbers */
				     "prefix:cache-threshold=0x10", "score:kv=inf",
				     "score:kv= 1", "vllm-dp:x=1",
				     /* a match ratio past 1; a parameter twice */
				     "prefix:cache-threshold=1.5", "score:kv=1,kv=2" };
	for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
		r = NULL;
		if (kvs_router_create(bad[i], 0, &r) != KVS_ERR_INVALID)
			fail_msg("router spec '%s' accepted", bad[i]);
		assert_null(r);
		assert_true(strlen(kvs_last_error()) > 0);
	}
	/* bad input to the fleet: an arrival out of order names the request */
	kvs_request q[2] = { mkreq(0, 1.0, 16, 2), mkreq(1, 0.5, 16, 2) };
	size_t at = 0;
	kvs_request_source src = { two_next, &at, NULL };
	two_ctx_ tc = { q, &at };
	src.ctx = &tc;
	kvs_sim_config c;
	cfg_fixed(&c, 1000, false);
	kvs_fleet_config fc;
	kvs_fleet_config_defaults(&fc, NULL);
	fc.sim = c;
	fc.replicas = 2;
	kvs_fleet_result *res = NULL;
	assert_int_equal(kvs_fleet_run(&fc, &src, &res), KVS_ERR_INVALID);
	assert_null(res);
	assert_non_null(strstr(kvs_last_error(), "request 1 (line 3)"));
	fc.replicas = 0;
	at = 0;
	assert_int_equal(kvs_fleet_run(&fc, &src, &res), KVS_ERR_INVALID);
	fc.replicas = 2;
	fc.router = "least-nothing";
	assert_int_equal(kvs_fleet_run(&fc, &src, &res), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "least-nothing"));
}

/* ---- heterogeneous pools ----------------------------------------------------------- */

static char *policies_json(const kvs_fleet_result *r)
{
	json_t *d = kvs_json_jt(kvs_fleet_report_json(r, "mem", KVS_TRACE_AUTO, NULL));
	char *s = json_dumps(json_object_get(d, "policies"),
			     JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	json_decref(d);
	return s;
}

static void test_pools(void **state)
{
	(void)state;
	size_t nreq = kvs_test_scaled(300, 60);
	kvs_request_set *set = mixed_set(nreq);
	kvs_fleet_pool pools[2];
	memset(pools, 0, sizeof pools);
	snprintf(pools[0].name, sizeof pools[0].name, "small");
	pools[0].replicas = 1;
	cfg_fixed(&pools[0].sim, 1000, true);
	snprintf(pools[1].name, sizeof pools[1].name, "big");
	pools[1].replicas = 2;
	cfg_fixed(&pools[1].sim, 8000, true);
	kvs_fleet_config fc;
	kvs_fleet_config_defaults(&fc, NULL);
	fc.sim = pools[0].sim;
	fc.replicas = 99;   /* ignored: the pools give 3 */
	fc.pools = pools;
	fc.npools = 2;
	fc.router = "round-robin";
	uint32_t to[300];
	routes R = { to, 0, 300 };
	fc.on_route = on_route;
	fc.on_route_ctx = &R;
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_fleet_result *r;
	assert_int_equal(kvs_fleet_run(&fc, &src, &r), KVS_OK);
	assert_int_equal(kvs_fleet_result_replicas(r), 3);
	assert_fleet_accounting(r, nreq);
	for (size_t i = 0; i < nreq; i++)
		assert_int_equal(to[i], (uint32_t)(i % 3));
	/* replica 0 is the small pool, 1 and 2 the big one */
	assert_int_equal(kvs_fleet_result_replica_stats(r, 0)->pool, 0);
	assert_int_equal(kvs_fleet_result_replica_stats(r, 2)->pool, 1);
	assert_int_equal(kvs_sim_result_stats(kvs_fleet_result_replica(r, 0))->kv_budget_bytes,
			 1000 * 8);
	assert_int_equal(kvs_sim_result_stats(kvs_fleet_result_replica(r, 1))->kv_budget_bytes,
			 8000 * 8);
	assert_int_equal(kvs_sim_result_stats(kvs_fleet_result_total(r))->kv_budget_bytes,
			 (1000 + 2 * 8000) * 8);
	/* the small pool preempts, the big ones do not */
	assert_true(kvs_fleet_result_replica_stats(r, 0)->preemptions >
		    kvs_fleet_result_replica_stats(r, 1)->preemptions);
	json_t *d = kvs_json_jt(kvs_fleet_report_json(r, "mem", KVS_TRACE_AUTO, NULL));
	json_t *jp = json_object_get(json_object_get(d, "fleet"), "pools");
	assert_int_equal(json_array_size(jp), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(jp, 1), "name")), "big");
	/* fleet.kv: pools differ, so no one pool per GPU; the total over
	 * every GPU (one each here) is the policy object's sum */
	json_t *kv = json_object_get(json_object_get(d, "fleet"), "kv");
	assert_true(json_is_null(json_object_get(kv, "budget_bytes_per_gpu")));
	assert_int_equal(json_integer_value(json_object_get(kv, "gpus")), 3);
	assert_int_equal(json_integer_value(json_object_get(kv, "total_bytes")),
			 (1000 + 2 * 8000) * 8);
	assert_int_equal(json_integer_value(json_object_get(kv, "total_blocks")),
			 kvs_sim_result_stats(kvs_fleet_result_total(r))->num_blocks);
	/* the same sums through the library call the table reads */
	kvs_fleet_kv fk;
	kvs_fleet_result_kv(r, &fk);
	assert_false(fk.uniform);
	assert_int_equal(fk.gpus, 3);
	assert_int_equal(fk.total_bytes, (1000 + 2 * 8000) * 8);
	assert_int_equal(fk.total_blocks, 1000 / 16 + 2 * (8000 / 16));
	assert_int_equal(fk.total_tokens, 16 * fk.total_blocks);
	assert_int_equal(fk.budget_bytes_per_gpu, 0);
	/* the replicas' names, in the table as in the JSON */
	char nm[48];
	kvs_fleet_replica_name(r, 0, nm, sizeof nm);
	assert_string_equal(nm, "small-0");
	kvs_fleet_replica_name(r, 2, nm, sizeof nm);
	assert_string_equal(nm, "big-2");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(d, "replicas"), 2), "name")), "big-2");
	json_decref(d);
	kvs_fleet_result_destroy(r);

	/* two pools of one configuration are that many replicas */
	pools[0].sim = pools[1].sim;
	fc.on_route = NULL;
	kvs_request_cursor_init(&cur, set, 1.0);
	assert_int_equal(kvs_fleet_run(&fc, &src, &r), KVS_OK);
	kvs_fleet_result *same = fleet(&pools[1].sim, 3, "round-robin", 0, set, NULL);
	char *x = policies_json(r), *y = policies_json(same);
	assert_string_equal(x, y);
	free(x);
	free(y);
	kvs_fleet_result_destroy(r);
	kvs_fleet_result_destroy(same);

	/* tp 2: each replica's pool is one GPU's, the fleet's total is over
	 * both GPUs of each replica (tp x pp x replicas GPUs) */
	kvs_sim_config tp2 = pools[1].sim;
	tp2.deploy.tp = 2;
	kvs_fleet_result *t2 = fleet(&tp2, 3, "round-robin", 0, set, NULL);
	kvs_fleet_result_kv(t2, &fk);
	assert_true(fk.uniform);
	assert_int_equal(fk.gpus, 6);
	assert_int_equal(fk.budget_bytes_per_gpu, 8000 * 8);
	assert_int_equal(fk.num_gpu_blocks_per_replica, 8000 / 16);
	assert_int_equal(fk.total_bytes, 6 * 8000 * 8);
	assert_int_equal(fk.total_blocks, 3 * (8000 / 16));
	kvs_fleet_result_destroy(t2);

	/* a pool of no replicas, or of another block size, is refused */
	pools[1].replicas = 0;
	assert_int_equal(kvs_fleet_run(&fc, &src, &r), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "pool big"));
	pools[1].replicas = 2;
	pools[1].sim.deploy.block_size = 32;
	assert_int_equal(kvs_fleet_run(&fc, &src, &r), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "block size"));
	kvs_request_set_destroy(set);
}

/* ---- Mooncake: prefix routing keeps families together ----------------------------- */

static void test_mooncake_prefix_beats_round_robin(void **state)
{
	(void)state;
	const char *path = kvs_test_shared_trace("mooncake-synthetic/synthetic.jsonl");
	if (!path) {
		skip();
		return;
	}
	kvs_deploy d;
	kvs_test_deploy(&d, "qwen2.5-7b", "h100-80gb");
	kvs_sim_config c;
	kvs_sim_config_defaults(&c, &d);
	c.enable_prefix_caching = true;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.block_size = 16;
	o.max_model_len = d.model.max_position_embeddings;
	kvs_request_set *all, *set;
	assert_int_equal(kvs_request_set_load(path, &o, &all), KVS_OK);
	uint64_t n = kvs_test_scaled(kvs_request_set_count(all), 300);
	if (KVS_DEBUG >= 2) {
		/* the validators scan the whole pool at every step: a pool of
		 * 64k tokens per replica and the first 200 requests */
		n = 200;
		kvs_sizing sz;
		assert_int_equal(kvs_size_compute(&c.deploy, &sz), KVS_OK);
		c.kv_budget_bytes = 65536 * sz.kv_bytes_per_token;
	}
	if (n > kvs_request_set_count(all))
		n = kvs_request_set_count(all);
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(kvs_request_set_append(set, kvs_request_set_get(all, i)), KVS_OK);
	kvs_request_set_destroy(all);
	kvs_fleet_result *rr = fleet(&c, 4, "round-robin", 0, set, NULL);
	kvs_fleet_result *pr = fleet(&c, 4, "prefix", 0, set, NULL);
	assert_fleet_accounting(rr, n);
	assert_fleet_accounting(pr, n);
	double hr = kvs_sim_result_stats(kvs_fleet_result_total(rr))->prefix_hit_rate_tokens;
	double hp = kvs_sim_result_stats(kvs_fleet_result_total(pr))->prefix_hit_rate_tokens;
	printf("mooncake, %llu requests, 4 replicas: fleet prefix hit rate (tokens) "
	       "prefix %.4f, round-robin %.4f\n", (unsigned long long)n, hp, hr);
	assert_true(hp > hr);
	/* the prefix signal as of a refresh longer than the trace (every
	 * cache empty, as at 0 s): the router cannot follow the caches */
	kvs_fleet_result *sr = fleet(&c, 4, "prefix", 1e6, set, NULL);
	assert_fleet_accounting(sr, n);
	double hs = kvs_sim_result_stats(kvs_fleet_result_total(sr))->prefix_hit_rate_tokens;
	printf("mooncake, %llu requests, 4 replicas: prefix router with signals refreshed "
	       "every 1e6 s: hit rate %.4f (live %.4f)\n", (unsigned long long)n, hs, hp);
	assert_true(hs < hp);
	kvs_fleet_result_destroy(sr);
	kvs_fleet_result_destroy(rr);
	kvs_fleet_result_destroy(pr);
	kvs_request_set_destroy(set);
}


/* ---- prefill/decode disaggregation ------------------------------------------------- */

typedef struct recs {
	kvs_sim_request_record r[64];
	size_t n;
} recs;

static void on_rec(void *ctx, const kvs_sim_request_record *r)
{
	recs *R = ctx;
	assert_true(R->n < 64);
	R->r[R->n++] = *r;
}

/* A fleet of np prefill replicas of cp and nd decode replicas of cd over
 * set; on_route (NULL: none) told every decision. */
static kvs_fleet_result *dfleet_pools(const kvs_sim_config *cp, const kvs_sim_config *cd,
				      uint32_t np, uint32_t nd, const char *router,
				      double refresh, double bw, double lat,
				      const kvs_request_set *set,
				      void (*on_route_fn)(void *, const kvs_request *, uint32_t),
				      void *ctx)
{
	const kvs_sim_config *c = cp;
	kvs_fleet_pool pools[2];
	memset(pools, 0, sizeof pools);
	snprintf(pools[0].name, sizeof pools[0].name, "prefill");
	pools[0].replicas = np;
	pools[0].sim = *c;
	pools[0].role = KVS_FLEET_ROLE_PREFILL;
	snprintf(pools[1].name, sizeof pools[1].name, "decode");
	pools[1].replicas = nd;
	pools[1].sim = *cd;
	pools[1].role = KVS_FLEET_ROLE_DECODE;
	kvs_fleet_config fc;
	kvs_fleet_config_defaults(&fc, NULL);
	fc.sim = *c;
	fc.pools = pools;
	fc.npools = 2;
	fc.router = router;
	fc.router_refresh_s = refresh;
	fc.seed = 3;
	snprintf(fc.kv_link.name, sizeof fc.kv_link.name, "test");
	fc.kv_link.bytes_per_s = bw;
	fc.kv_link.latency_s = lat;
	fc.on_route = on_route_fn;
	fc.on_route_ctx = ctx;
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_fleet_result *r = NULL;
	if (kvs_fleet_run(&fc, &src, &r) != KVS_OK)
		fail_msg("disaggregated fleet %s %u+%u: %s", router, np, nd, kvs_last_error());
	return r;
}

static kvs_fleet_result *dfleet_routed(const kvs_sim_config *c, uint32_t np, uint32_t nd,
				       const char *router, double refresh, double bw,
				       double lat, const kvs_request_set *set,
				       void (*on_route_fn)(void *, const kvs_request *, uint32_t),
				       void *ctx)
{
	return dfleet_pools(c, c, np, nd, router, refresh, bw, lat, set, on_route_fn, ctx);
}

static kvs_fleet_result *dfleet(const kvs_sim_config *c, uint32_t np, uint32_t nd,
				const char *router, double refresh, double bw, double lat,
				const kvs_request_set *set)
{
	return dfleet_routed(c, np, nd, router, refresh, bw, lat, set, NULL, NULL);
}

/* Every request accounted for: per replica, arrived + kv_received =
 * completed + rejected + unfinished + kv_sent; the fleet's arrived =
 * completed + rejected + unfinished; everything sent was received. */
static void assert_disagg_accounting(const kvs_fleet_result *r, uint64_t requests,
				     bool horizon)
{
	const kvs_fleet_stats *fs = kvs_fleet_result_stats(r);
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
	uint64_t arrived = 0, sent = 0, recv = 0, completed = 0, routed = 0;
	assert_true(fs->disaggregated);
	for (uint32_t i = 0; i < fs->replicas; i++) {
		const kvs_fleet_replica_stats *s = kvs_fleet_result_replica_stats(r, i);
		const kvs_sim_stats *q = kvs_sim_result_stats(kvs_fleet_result_replica(r, i));
		assert_int_equal(q->arrived + s->kv_received,
				 q->completed + q->rejected + q->unfinished + s->kv_sent);
		assert_int_equal(s->arrived, q->arrived);
		assert_parts_sum(&q->memory_pct);
		if (q->arrived + s->kv_received)   /* no peak without an event */
			assert_parts_sum(&q->memory_peak_pct);
		arrived += q->arrived;
		sent += s->kv_sent;
		recv += s->kv_received;
		completed += q->completed;
		routed += s->routed;
	}
	assert_int_equal(sent, recv);
	assert_int_equal(t->arrived, arrived);
	assert_int_equal(t->completed, completed);
	assert_int_equal(t->arrived, t->completed + t->rejected + t->unfinished);
	assert_int_equal(t->ttft_s.count, completed);
	assert_parts_sum(&t->memory_pct);
	if (!horizon) {
		assert_int_equal(arrived, requests);
		assert_int_equal(t->unfinished, 0);
		/* every received request's KV crossed a link, unless rejected */
		assert_true(fs->kv_transfers <= recv);
		assert_true(fs->kv_transfers >= completed);
		assert_int_equal(routed, requests + sent);   /* two decisions each */
	}
}

/* One request of P = 100 prompt and O = 5 output tokens, 8 bytes of KV per
 * token, a link of 10^4 B/s and 50 ms; step = 10 ms + 10 us per token:
 *   prefill:  one step of 100 tokens, 0 -> 0.011 s (handed out)
 *   decode:   admitted at 0.011 s, its 100 tokens' blocks allocated
 *   transfer: 0.05 s latency + 800 B / 10^4 B/s = 0.08 s -> 0.141 s
 *   first decode step: 1 token, 0.01001 s -> first token at 0.15101 s
 *   then 4 steps of 0.01001 s -> done at 0.19105 s. */
static void test_disagg_ttft_by_hand(void **state)
{
	(void)state;
	kvs_request q = mkreq(0, 0.0, 100, 5);
	kvs_request_set *set = set_of(&q, 1);
	kvs_sim_config c;
	cfg_fixed(&c, 4096, false);
	recs R = { .n = 0 };
	c.on_request = on_rec;
	c.on_request_ctx = &R;
	kvs_fleet_result *r = dfleet(&c, 1, 1, "round-robin", 0, 1e4, 0.05, set);
	assert_int_equal(R.n, 1);   /* one record, from the decode replica */
	assert_int_equal(R.r[0].outcome, KVS_SIM_COMPLETED);
	assert_true(fabs(R.r[0].arrival_s - 0.0) < 1e-12);
	assert_true(fabs(R.r[0].admitted_s - 0.0) < 1e-12);
	double prefill = 0.01 + 100 * 1e-5, xfer = 0.05 + 800.0 / 1e4, step = 0.01 + 1e-5;
	double ttft = prefill + xfer + step;
	if (fabs(R.r[0].first_token_s - ttft) > 1e-9)
		fail_msg("first token at %.12g s, want %.12g s", R.r[0].first_token_s, ttft);
	assert_true(fabs(R.r[0].finish_s - (ttft + 4 * step)) < 1e-9);
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
	assert_true(fabs(t->ttft_s.max - ttft) < 1e-9 * 1000);   /* sketch precision */
	const kvs_fleet_stats *fs = kvs_fleet_result_stats(r);
	assert_int_equal(fs->kv_transfers, 1);
	assert_true(fabs(fs->kv_bytes - 800.0) < 1e-9);
	assert_true(fabs(fs->kv_transfer_mean_s - xfer) < 1e-12);
	assert_true(fabs(fs->kv_transfer_p99_s - xfer) < 1e-12);
	/* the link moved bytes for 0.08 s of the run's 0.19105 s */
	double T = t->sim_time_s;
	assert_true(fabs(T - (ttft + 4 * step)) < 1e-9);
	assert_true(fabs(fs->kv_link_util_mean - 0.08 / T) < 1e-9);
	const kvs_fleet_replica_stats *p = kvs_fleet_result_replica_stats(r, 0);
	const kvs_fleet_replica_stats *d = kvs_fleet_result_replica_stats(r, 1);
	assert_int_equal(p->arrived, 1);
	assert_int_equal(p->kv_sent, 1);
	assert_int_equal(p->completed, 0);
	assert_int_equal(d->arrived, 0);
	assert_int_equal(d->kv_received, 1);
	assert_int_equal(d->completed, 1);
	assert_disagg_accounting(r, 1, false);
	/* the prefill replica held the 100 tokens' blocks until the KV was
	 * read (0.141 s, its last event): its token states, 100 of 4096
	 * tokens, written during the first 0.011 s, then held */
	const kvs_sim_stats *ps = kvs_sim_result_stats(kvs_fleet_result_replica(r, 0));
	assert_true(fabs(ps->sim_time_s - 0.141) < 1e-12);
	assert_true(ps->memory_pct.token_states > 100.0 * 100 / 4096 * (0.13 / 0.141) - 1e-9);
	assert_true(ps->memory_pct.token_states < 100.0 * 100 / 4096 + 1e-9);
	assert_true(fabs(ps->memory_peak_pct.token_states - 100.0 * 100 / 4096) < 1e-9);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

/* Two requests prefilled in one step on one prefill replica share its
 * link: each takes latency + 2 x 800 B / 10^4 B/s, twice one alone. */
static void test_disagg_link_shared(void **state)
{
	(void)state;
	kvs_request q[2] = { mkreq(0, 0.0, 100, 5), mkreq(1, 0.0, 100, 5) };
	kvs_request_set *one = set_of(q, 1), *two = set_of(q, 2);
	kvs_sim_config c;
	cfg_fixed(&c, 4096, false);
	kvs_fleet_result *a = dfleet(&c, 1, 2, "round-robin", 0, 1e4, 0.05, one);
	kvs_fleet_result *b = dfleet(&c, 1, 2, "round-robin", 0, 1e4, 0.05, two);
	const kvs_fleet_stats *fa = kvs_fleet_result_stats(a), *fb = kvs_fleet_result_stats(b);
	assert_int_equal(fb->kv_transfers, 2);
	double alone = fa->kv_transfer_mean_s - 0.05, shared = fb->kv_transfer_mean_s - 0.05;
	assert_true(fabs(alone - 0.08) < 1e-12);
	if (fabs(shared - 2 * alone) > 1e-12)
		fail_msg("shared transfer %.12g s, want twice %.12g s", shared, alone);
	assert_true(fabs(fb->kv_transfer_max_s - (0.05 + 0.16)) < 1e-12);
	/* both first tokens: prefill of 200 tokens (0.012 s) + 0.21 s + one
	 * step of the two decoding together (0.01 + 2 x 1e-5) on their
	 * replicas (one each, round-robin) */
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(b));
	double ttft = 0.012 + 0.21 + 0.01001;
	assert_true(fabs(t->ttft_s.mean - ttft) < 1e-9);
	assert_disagg_accounting(a, 1, false);
	assert_disagg_accounting(b, 2, false);
	/* two prefill replicas: separate links, no sharing */
	kvs_fleet_result_destroy(b);
	b = dfleet(&c, 2, 1, "round-robin", 0, 1e4, 0.05, two);
	assert_true(fabs(kvs_fleet_result_stats(b)->kv_transfer_mean_s - 0.13) < 1e-12);
	assert_disagg_accounting(b, 2, false);
	kvs_fleet_result_destroy(a);
	kvs_fleet_result_destroy(b);
	kvs_request_set_destroy(one);
	kvs_request_set_destroy(two);
}

static void test_disagg_accounting(void **state)
{
	(void)state;
	static const char *routers[] = { "round-robin", "random", "least-requests",
					 "least-kv", "prefix", "score" };
	size_t n = kvs_test_scaled(400, 100);
	kvs_request_set *set = mixed_set(n);
	kvs_sim_config c;
	cfg_fixed(&c, 1200, true);   /* small pools: preemptions, waits */
	for (size_t i = 0; i < KVS_ARRAY_LEN(routers); i++)
		for (double refresh = 0; refresh <= 0.5; refresh += 0.5) {
			kvs_fleet_result *r = dfleet(&c, 2, 3, routers[i], refresh, 2e5, 1e-3, set);
			assert_disagg_accounting(r, n, false);
			kvs_fleet_result_destroy(r);
		}
	/* swap preemption, a slow link, one decode replica */
	c.preemption_mode = KVS_PREEMPT_SWAP;
	c.deploy.gpu.pcie_bytes_per_s = 1e6;
	c.swap_bytes = 2 * 1200 * 8;   /* host room of two pools (validated at every step) */
	c.validate = true;   /* the engine's and the allocator's validators, every step */
	kvs_fleet_result *r = dfleet(&c, 3, 1, "least-kv", 0, 5e4, 0, set);
	assert_disagg_accounting(r, n, false);
	kvs_fleet_result_destroy(r);
	/* a horizon leaves requests in prefill, on the link and in decode */
	c.preemption_mode = KVS_PREEMPT_RECOMPUTE;
	c.horizon_s = 0.013 * (double)n / 2;
	r = dfleet(&c, 2, 2, "least-requests", 0, 2e4, 0.01, set);
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
	assert_true(t->unfinished > 0);
	assert_true(t->arrived < n);
	assert_disagg_accounting(r, n, true);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

static char *ddoc(const kvs_sim_config *c, const char *router, const kvs_request_set *set)
{
	kvs_fleet_result *r = dfleet(c, 2, 3, router, 0, 1e5, 2e-3, set);
	json_t *d = kvs_json_jt(kvs_fleet_report_json(r, "mem", KVS_TRACE_AUTO, NULL));
	char *s = json_dumps(d, JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
	json_t *fl = json_object_get(d, "fleet");
	assert_non_null(json_object_get(fl, "transfers"));
	assert_non_null(json_object_get(fl, "kv_link"));
	json_decref(d);
	kvs_fleet_result_destroy(r);
	return s;
}

static void test_disagg_deterministic(void **state)
{
	(void)state;
	kvs_request_set *set = mixed_set(300);
	kvs_sim_config c;
	cfg_fixed(&c, 3000, true);
	static const char *routers[] = { "random", "prefix", "score" };
	for (size_t i = 0; i < KVS_ARRAY_LEN(routers); i++) {
		char *x = ddoc(&c, routers[i], set), *y = ddoc(&c, routers[i], set);
		assert_string_equal(x, y);
		free(x);
		free(y);
	}
	kvs_request_set_destroy(set);
}

static void test_kv_link_parse(void **state)
{
	(void)state;
	kvs_fleet_link L;
	assert_int_equal(kvs_fleet_link_parse("ib-400g", &L), KVS_OK);
	assert_true(L.bytes_per_s == 50e9 && L.latency_s == 0);
	assert_string_equal(L.name, "ib-400g");
	assert_int_equal(kvs_fleet_link_parse("nvlink:2us", &L), KVS_OK);
	assert_true(L.bytes_per_s == 450e9 && fabs(L.latency_s - 2e-6) < 1e-18);
	assert_int_equal(kvs_fleet_link_parse("25", &L), KVS_OK);
	assert_true(L.bytes_per_s == 25e9);
	assert_int_equal(kvs_fleet_link_parse("100Gb/s:0.5ms", &L), KVS_OK);
	assert_true(L.bytes_per_s == 12.5e9 && fabs(L.latency_s - 5e-4) < 1e-15);
	assert_string_equal(L.name, "custom");
	/* the bounds: 1 MB/s to 1 PB/s, latency up to 60 s */
	assert_int_equal(kvs_fleet_link_parse("1MB/s:60s", &L), KVS_OK);
	assert_true(L.bytes_per_s == 1e6 && L.latency_s == 60);
	assert_int_equal(kvs_fleet_link_parse("1e6", &L), KVS_OK);
	assert_true(L.bytes_per_s == 1e15);
	static const char *bad[] = { "", "0", "-3", "fast", "10XB/s", "ib-400g:", "10:-1",
				     "10:abc", "nan", "inf", "0x10GB/s", "10:0x1", " 10",
				     "1e-300", "0.9MB/s", "1.1e6", "10:1e300", "10:61s",
				     "10:1e-400" };
	for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
		if (kvs_fleet_link_parse(bad[i], &L) != KVS_ERR_INVALID)
			fail_msg("--kv-link '%s' accepted", bad[i]);
		assert_non_null(strstr(kvs_last_error(), "--kv-link"));
	}
	kvs_fleet_role role;
	assert_int_equal(kvs_fleet_role_parse("decode", &role), KVS_OK);
	assert_int_equal(role, KVS_FLEET_ROLE_DECODE);
	assert_int_equal(kvs_fleet_role_parse("middle", &role), KVS_ERR_INVALID);
}

/* With a refresh longer than the trace the prefix router sees every
 * replica's cache as it was at 0 s (empty), so it never routes by prefix;
 * with 0 it reads the caches live (as before this signal could be stale). */
static void test_stale_prefix(void **state)
{
	(void)state;
	uint64_t h[4] = { 11, 12, 13, 14 }, g[4] = { 21, 22, 23, 24 };
	kvs_request q[6];
	for (int i = 0; i < 6; i++) {
		q[i] = mkreq((uint64_t)i, i ? 1.0 * (i - 1) : 0.0, 64, 3);
		q[i].hash_ids = i == 1 ? g : h;
		q[i].num_hash_ids = 4;
		q[i].hash_block_tokens = 16;
	}
	kvs_request_set *set = set_of(q, 6);
	kvs_sim_config c;
	cfg_fixed(&c, 8000, true);
	uint32_t to[6];
	routes R = { to, 0, 6 };
	/* live: test_prefix_by_hand's order 0,1,0,0,0,0 */
	kvs_fleet_result *live = fleet(&c, 3, "prefix", 0, set, &R);
	static const uint32_t want_live[6] = { 0, 1, 0, 0, 0, 0 };
	assert_memory_equal(to, want_live, sizeof to);
	/* stale (1000 s): no match seen: lowest KV use as of 0 s (all 0),
	 * ties to fewer outstanding as the router counts its sends (0, 1, 2,
	 * then 0 again with one each...), i.e. round-robin here */
	kvs_fleet_result *stale = fleet(&c, 3, "prefix", 1000, set, &R);
	static const uint32_t want_stale[6] = { 0, 1, 2, 0, 1, 2 };
	assert_memory_equal(to, want_stale, sizeof to);
	double hl = kvs_sim_result_stats(kvs_fleet_result_total(live))->prefix_hit_rate_tokens;
	double hs = kvs_sim_result_stats(kvs_fleet_result_total(stale))->prefix_hit_rate_tokens;
	printf("prefix router, 6 requests, 3 replicas: hit rate live %.4f, refreshed every "
	       "1000 s %.4f\n", hl, hs);
	assert_true(hl > hs);
	/* a refresh of 0.5 s (between arrivals 1 s apart, after the caches
	 * filled) sees them: the live order */
	kvs_fleet_result *half = fleet(&c, 3, "prefix", 0.5, set, &R);
	assert_memory_equal(to, want_live, sizeof to);
	kvs_fleet_result_destroy(live);
	kvs_fleet_result_destroy(stale);
	kvs_fleet_result_destroy(half);
	kvs_request_set_destroy(set);
}

/* ---- Ctrl-C ------------------------------------------------------------------------- */

/* Raises the flag at the routing decision number `at` (0: before the
 * first), as a signal could arrive at any instant. */
typedef struct cut_at {
	volatile sig_atomic_t flag;
	uint64_t at, seen;
} cut_at;

static void cut_route(void *ctx, const kvs_request *q, uint32_t k)
{
	cut_at *c = ctx;
	(void)q;
	(void)k;
	if (++c->seen == c->at)
		c->flag = SIGINT;
}

/* Interrupted at each routing decision in turn, a prefill replica's or
 * (during a hand-off) a decode replica's: the run says it was
 * interrupted, and every request is accounted for, every hand-off
 * counted on both sides (sent = received), KV stopped on a link counted
 * unfinished on its decode replica. */
static void test_disagg_interrupt(void **state)
{
	(void)state;
	size_t n = kvs_test_scaled(120, 60);
	kvs_request_set *set = mixed_set(n);
	kvs_sim_config c;
	cfg_fixed(&c, 1200, true);
	uint64_t in_flight = 0, cut = 0;
	for (uint64_t at = 0; at <= 2 * n; at += at < 40 ? 1 : 7) {
		cut_at C = { .flag = at == 0 ? SIGINT : 0, .at = at };
		c.interrupt = &C.flag;
		/* a slow link: KV in flight at most instants */
		kvs_fleet_result *r = dfleet_routed(&c, 2, 2, "least-requests", 0, 2e4, 1e-3, set,
						    cut_route, &C);
		const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
		assert_disagg_accounting(r, n, true);
		assert_true(t->arrived <= n);
		if (at < 2 * n) {   /* the last decision is the last hand-off */
			if (!t->interrupted)
				fail_msg("interrupted at decision %llu: not said",
					 (unsigned long long)at);
			cut += t->unfinished > 0;
		}
		in_flight += kvs_fleet_result_stats(r)->kv_in_flight;
		kvs_fleet_result_destroy(r);
	}
	assert_true(cut > 0 && in_flight > 0);   /* the cases did arise */
	/* a colocated fleet interrupted before its first request says so too */
	cut_at C = { .flag = SIGINT };
	c.interrupt = &C.flag;
	kvs_fleet_result *r = fleet(&c, 3, "round-robin", 0, set, NULL);
	const kvs_sim_stats *t = kvs_sim_result_stats(kvs_fleet_result_total(r));
	assert_true(t->interrupted);
	assert_int_equal(t->arrived, t->completed + t->rejected + t->unfinished);
	kvs_fleet_result_destroy(r);
	kvs_request_set_destroy(set);
}

/* ---- the fast path agrees with one step at a time ----------------------------------- */

static void assert_close(double a, double b, const char *what)
{
	if (!(fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b))))
		fail_msg("%s: fast path %.17g, one step at a time %.17g", what, a, b);
}

/* The same run (steps, tokens, requests, latencies) both ways. */
static void assert_same_run(const kvs_sim_stats *a, const kvs_sim_stats *b)
{
	assert_int_equal(a->arrived, b->arrived);
	assert_int_equal(a->completed, b->completed);
	assert_int_equal(a->rejected, b->rejected);
	assert_int_equal(a->unfinished, b->unfinished);
	assert_int_equal(a->steps, b->steps);
	assert_int_equal(a->preemptions, b->preemptions);
	assert_int_equal(a->output_tokens, b->output_tokens);
	assert_int_equal(a->tokens_per_step_max, b->tokens_per_step_max);
	assert_close(a->tokens_per_step_mean, b->tokens_per_step_mean, "tokens per step");
	assert_close(a->sim_time_s, b->sim_time_s, "sim time");
	assert_close(a->ttft_s.mean, b->ttft_s.mean, "mean TTFT");
	assert_close(a->tpot_s.mean, b->tpot_s.mean, "mean TPOT");
	assert_close(a->e2e_s.mean, b->e2e_s.mean, "mean e2e");
}

/* A horizon exactly on an arrival, inside a span of decode steps: the
 * run stops at the end of the step that holds it, whose steps and
 * tokens count, the same both ways and as just before the arrival. */
static void test_horizon_on_arrival(void **state)
{
	(void)state;
	kvs_request q[12];
	for (uint64_t i = 0; i < 12; i++)
		q[i] = mkreq(i, 1.0 * (double)i, 200, 150);
	kvs_request_set *set = set_of(q, 12);
	kvs_sim_config c;
	cfg_fixed(&c, 40000, false);
	c.horizon_s = 5.0;   /* request 5's arrival */
	kvs_sim_result *a = replay(&c, set);
	c.fast_path = false;
	kvs_sim_result *b = replay(&c, set);
	const kvs_sim_stats *sa = kvs_sim_result_stats(a), *sb = kvs_sim_result_stats(b);
	assert_same_run(sa, sb);
	assert_int_equal(sa->arrived, 6);
	assert_true(sa->sim_time_s > 5.0 && sa->sim_time_s < 5.0 + 0.02);
	assert_true(sa->spans < sb->spans);   /* spans did run */
	/* the step that holds 5.0 s is the one a horizon just before ends */
	c.fast_path = true;
	c.horizon_s = nextafter(5.0, 0);
	kvs_sim_result *e = replay(&c, set);
	const kvs_sim_stats *se = kvs_sim_result_stats(e);
	assert_int_equal(se->steps, sa->steps);
	assert_close(se->sim_time_s, sa->sim_time_s, "sim time before the arrival");
	assert_int_equal(se->arrived, 5);
	kvs_sim_result_destroy(a);
	kvs_sim_result_destroy(b);
	kvs_sim_result_destroy(e);
	/* a fleet: the replica the arrival goes to, and the others */
	c.horizon_s = 5.0;
	kvs_fleet_result *fa = fleet(&c, 3, "round-robin", 0, set, NULL);
	c.fast_path = false;
	kvs_fleet_result *fb = fleet(&c, 3, "round-robin", 0, set, NULL);
	for (uint32_t i = 0; i < 3; i++)
		assert_same_run(kvs_sim_result_stats(kvs_fleet_result_replica(fa, i)),
				kvs_sim_result_stats(kvs_fleet_result_replica(fb, i)));
	const kvs_sim_stats *ta = kvs_sim_result_stats(kvs_fleet_result_total(fa));
	assert_same_run(ta, kvs_sim_result_stats(kvs_fleet_result_total(fb)));
	assert_true(ta->sim_time_s > 5.0);
	kvs_fleet_result_destroy(fa);
	kvs_fleet_result_destroy(fb);
	kvs_request_set_destroy(set);
}

/* A disaggregated fleet, fast and one step at a time: a decode
 * replica's span stops where another replica's event may hand it a
 * request (an allocation on another decode replica starts a transfer,
 * whose end lets a blocked prefill replica prefill and hand over). */
static void test_disagg_fast_path(void **state)
{
	(void)state;
	static const struct {
		uint32_t np, nd;
		uint64_t tokens;
		double bw;
	} runs[] = {
		{ 1, 2, 1200, 2e5 }, { 1, 2, 2000, 1e5 }, { 1, 3, 1500, 5e4 }, { 2, 3, 1200, 2e5 },
	};
	kvs_request_set *set = mixed_set(300);
	for (size_t k = 0; k < KVS_ARRAY_LEN(runs); k++) {
		kvs_sim_config c;
		cfg_fixed(&c, runs[k].tokens, true);
		kvs_fleet_result *a = dfleet(&c, runs[k].np, runs[k].nd, "round-robin", 0,
					     runs[k].bw, 1e-3, set);
		c.fast_path = false;
		kvs_fleet_result *b = dfleet(&c, runs[k].np, runs[k].nd, "round-robin", 0,
					     runs[k].bw, 1e-3, set);
		uint32_t n = runs[k].np + runs[k].nd;
		for (uint32_t i = 0; i < n; i++)
			assert_same_run(kvs_sim_result_stats(kvs_fleet_result_replica(a, i)),
					kvs_sim_result_stats(kvs_fleet_result_replica(b, i)));
		kvs_fleet_result_destroy(a);
		kvs_fleet_result_destroy(b);
	}
	kvs_request_set_destroy(set);
	/* a decode replica that allocates twice in one span, on the link of
	 * one prefill replica, the second time after the first transfer's
	 * latency: both ways, the first is served alone until the second's
	 * latency ends (kv_link_start; before, the fast path left the first
	 * in its latency phase until the second start) */
	set = mixed_set_gap(300, 0.03);
	kvs_sim_config c;
	cfg_fixed(&c, 800, true);
	kvs_fleet_result *a = dfleet(&c, 2, 2, "round-robin", 0, 1e5, 1e-3, set);
	c.fast_path = false;
	kvs_fleet_result *b = dfleet(&c, 2, 2, "round-robin", 0, 1e5, 1e-3, set);
	for (uint32_t i = 0; i < 4; i++)
		assert_same_run(kvs_sim_result_stats(kvs_fleet_result_replica(a, i)),
				kvs_sim_result_stats(kvs_fleet_result_replica(b, i)));
	assert_disagg_accounting(a, 300, false);
	kvs_fleet_result_destroy(a);
	kvs_fleet_result_destroy(b);
	kvs_request_set_destroy(set);
}

/* A transfer started while another's latency has ended unseen: the first
 * enters its data phase at its own instant.  Link of 10^5 B/s and 1 ms,
 * 1000 bytes each: A starts at 0 (data from 0.001), B at 0.005 (data
 * from 0.006); A alone serves 500 bytes by 0.006, then both at 5e4 B/s:
 * A ends at 0.016, B (500 left) alone at 10^5 B/s ends at 0.021. */
static void test_kv_link_start_after_latency(void **state)
{
	(void)state;
	kv_link l;
	kv_link_init(&l, 1e5, 1e-3);
	int a, b;
	assert_int_equal(kv_link_start(&l, 0.0, 1000, &a), KVS_OK);
	assert_int_equal(kv_link_start(&l, 0.005, 1000, &b), KVS_OK);
	double t_end[2] = { -1, -1 };
	for (int k = 0; k < 4 && isfinite(kv_link_next(&l)); k++) {
		double t = kv_link_next(&l);
		void *done;
		assert_int_equal(kv_link_pop(&l, &done), KVS_OK);
		if (done)
			t_end[done == &b] = t;
	}
	if (fabs(t_end[0] - 0.016) > 1e-12 || fabs(t_end[1] - 0.021) > 1e-12)
		fail_msg("ends at %.12g s and %.12g s, want 0.016 and 0.021", t_end[0], t_end[1]);
	assert_int_equal(l.transfers, 2);
	assert_true(fabs(l.busy_s - 0.020) < 1e-12);   /* data from 0.001 to 0.021 */
	kv_link_free(&l);
}

/* A decode replica that refuses a handed request frees its prefill
 * replica's KV; that replica, idle with a request waiting for the
 * memory, prefills it and hands it over while the decode replica is
 * still decoding a long request.  Prefill pool 8000 tokens, decode pool
 * 7000: C (16 + 2000 tokens) decodes for 20 s; A (1800 + 6000) fits the
 * prefill pool but never the decode one; B (6300 + 10) waits on the
 * prefill replica for A's memory.  Before, the decode replica ran on to
 * the end of C before the prefill replica's wake-up, and B's hand-off
 * (0.40 s) came before its clock: the run failed. */
static void test_disagg_reject_wakes_prefill(void **state)
{
	(void)state;
	kvs_request q[3] = { mkreq(0, 0.0, 16, 2000), mkreq(1, 0.1, 1800, 6000),
			     mkreq(2, 0.11, 6300, 10) };
	kvs_request_set *set = set_of(q, 3);
	kvs_sim_config cp, cd;
	cfg_fixed(&cp, 8000, false);
	cp.deploy.max_model_len = 16384;
	cd = cp;
	cd.kv_budget_bytes = 7000 * 8;
	kvs_fleet_result *r[2];
	for (int k = 0; k < 2; k++) {
		cp.fast_path = cd.fast_path = k == 0;
		r[k] = dfleet_pools(&cp, &cd, 1, 1, "round-robin", 0, 1e6, 1e-3, set, NULL, NULL);
		const kvs_sim_stats *p = kvs_sim_result_stats(kvs_fleet_result_replica(r[k], 0));
		const kvs_sim_stats *d = kvs_sim_result_stats(kvs_fleet_result_replica(r[k], 1));
		assert_int_equal(p->rejected, 0);
		assert_int_equal(d->rejected, 1);
		assert_int_equal(d->rejected_by[KVS_SIM_REJECT_BUDGET], 1);
		assert_int_equal(d->completed, 2);
		/* B's first token long before C's end */
		assert_true(d->ttft_s.max < 1.0);
		assert_disagg_accounting(r[k], 3, false);
	}
	for (uint32_t i = 0; i < 2; i++)
		assert_same_run(kvs_sim_result_stats(kvs_fleet_result_replica(r[0], i)),
				kvs_sim_result_stats(kvs_fleet_result_replica(r[1], i)));
	kvs_fleet_result_destroy(r[0]);
	kvs_fleet_result_destroy(r[1]);
	kvs_request_set_destroy(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_replica_is_replay),
		cmocka_unit_test(test_step_api_is_run),
		cmocka_unit_test(test_round_robin_order),
		cmocka_unit_test(test_least_requests_by_hand),
		cmocka_unit_test(test_vllm_dp_by_hand),
		cmocka_unit_test(test_least_kv_by_hand),
		cmocka_unit_test(test_prefix_by_hand),
		cmocka_unit_test(test_accounting_all_routers),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_router_specs),
		cmocka_unit_test(test_pools),
		cmocka_unit_test(test_mooncake_prefix_beats_round_robin),
		cmocka_unit_test(test_disagg_ttft_by_hand),
		cmocka_unit_test(test_disagg_link_shared),
		cmocka_unit_test(test_disagg_accounting),
		cmocka_unit_test(test_disagg_deterministic),
		cmocka_unit_test(test_kv_link_parse),
		cmocka_unit_test(test_stale_prefix),
		cmocka_unit_test(test_horizon_on_arrival),
		cmocka_unit_test(test_disagg_fast_path),
		cmocka_unit_test(test_disagg_interrupt),
		cmocka_unit_test(test_kv_link_start_after_latency),
		cmocka_unit_test(test_disagg_reject_wakes_prefill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
