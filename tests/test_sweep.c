/*
 * test_sweep.c - block-size sweep and capacity search.
 *
 * Hand-derived internal fragmentation per block size on a trace of known
 * lengths; a sweep row against a separate replay with the same settings;
 * identical JSON for 1 and 2 worker threads; the hash-id granularity check
 * (Mooncake ids of 512 tokens); the capacity search's bracket (max rate
 * meets the SLO, one tolerance step higher does not); the kernel model and
 * the kernel profile reader with its errors.
 */
#include "kvs_config.h"
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/kvsim.h"

static const uint32_t all_blocks[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };

/* A deployment where only the overrides matter: linear step time of exactly
 * 1 s per step, KV of 1 byte per token, a budget of 16384 tokens. */
static void fixed_config(kvs_sim_config *sc)
{
	kvs_deploy d;
	memset(&d, 0, sizeof d);
	snprintf(d.model.name, sizeof d.model.name, "test");
	d.tp = d.pp = 1;
	d.block_size = 16;
	d.max_model_len = 4096;
	kvs_sim_config_defaults(sc, &d);
	sc->cost.kind = KVS_COST_LINEAR;
	sc->cost.linear_base_s = 1.0;
	sc->kv_bytes_per_token = 1;
	sc->kv_budget_bytes = 16384;   /* a multiple of every block size */
	sc->watermark = 0;
}

static void sweep_defaults(kvs_sweep_config *c, const kvs_sim_config *sc)
{
	kvs_sweep_config_defaults(c, sc);
	c->jobs = 2;
}

static kvs_request_set *set_of(const uint32_t *prompt, const uint32_t *output, size_t n,
			       double gap_s)
{
	kvs_request_set *s;
	assert_int_equal(kvs_request_set_create(&s), KVS_OK);
	for (size_t i = 0; i < n; i++) {
		kvs_request q;
		memset(&q, 0, sizeof q);
		q.index = i;
		q.line = i + 1;
		q.arrival_s = gap_s * (double)i;
		q.prompt_tokens = prompt[i];
		q.output_tokens = output[i];
		q.num_samples = 1;
		assert_int_equal(kvs_request_set_append(s, &q), KVS_OK);
	}
	return s;
}

/* ---- internal fragmentation by hand -------------------------------------------
 * Requests of P prompt tokens and one output token arrive 10 s apart, so
 * each runs alone for exactly one 1-s step (the prefill step emits its only
 * token) and holds P tokens in ceil(P / b) blocks.  The allocator is told
 * the request's final length P + O - 1 = P (the KV of the last output token
 * is never written), so the slots held but never to be used are
 * b ceil(P / b) - P for that second.  The run lasts until the last request finishes at
 * 10 (n - 1) + 1 s, so the time-weighted internal fragmentation is
 *     100 x sum_i (b ceil(P_i / b) - P_i) / (16384 x sim_time). */
static const uint32_t P[] = { 1, 5, 17, 100, 255, 256, 257, 1000 };
static const uint32_t O1[] = { 1, 1, 1, 1, 1, 1, 1, 1 };

static uint64_t tail(uint32_t p, uint32_t b)
{
	uint64_t held = kvs_div_ceil(p, b) * b;
	return held - p;
}

static void test_internal_fragmentation(void **state)
{
	(void)state;
	size_t n = KVS_ARRAY_LEN(P);
	kvs_request_set *set = set_of(P, O1, n, 10.0);
	kvs_sim_config sc;
	fixed_config(&sc);
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	assert_int_equal(kvs_sweep_parse_policies("paged", &c), KVS_OK);
	kvs_sweep_result *R;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	assert_int_equal(kvs_sweep_result_rows(R), 9);
	double sim_time = 10.0 * (double)(n - 1) + 1.0;
	/* the waste at b = 16, slot by slot: 15 + 11 + 15 + 12 + 1 + 0 + 15 + 8 */
	uint64_t waste16 = 0;
	for (size_t i = 0; i < n; i++)
		waste16 += tail(P[i], 16);
	assert_int_equal(waste16, 77);
	for (size_t j = 0; j < 9; j++) {
		const kvs_sweep_row *row = kvs_sweep_result_row(R, j);
		uint32_t b = all_blocks[j];
		assert_int_equal(row->block_size, b);
		assert_int_equal(row->policy, KVS_POLICY_PAGED);
		uint64_t waste = 0;
		for (size_t i = 0; i < n; i++)
			waste += tail(P[i], b);
		double want = 100.0 * (double)waste / (16384.0 * sim_time);
		assert_int_equal(row->st.completed, n);
		assert_float_equal(row->st.sim_time_s, sim_time, 1e-9);
		assert_float_equal(row->st.memory_pct.internal_frag, want, 1e-9);
		if (b == 1)
			assert_true(row->st.memory_pct.internal_frag == 0.0);
		if (b == 16)
			assert_float_equal(row->st.memory_pct.internal_frag,
					   100.0 * 77.0 / (16384.0 * 71.0), 1e-9);
		/* the analytic kernel model at b = 1: (1 + 1) x c / c */
		if (b == 1)
			assert_float_equal(row->kernel.rel, 2.0, 1e-12);
	}
	/* least waste: block size 1 has no tail at all, but its kernel costs 2x;
	 * the pick is the least waste among block sizes whose kernel is within
	 * 5% of the cheapest, derived here from the rows */
	double min_rel = INFINITY;
	for (size_t j = 0; j < 9; j++)
		min_rel = fmin(min_rel, kvs_sweep_result_row(R, j)->kernel.rel);
	size_t want = SIZE_MAX;
	for (size_t j = 0; j < 9; j++) {
		const kvs_sweep_row *row = kvs_sweep_result_row(R, j);
		if (row->kernel.rel > min_rel * 1.05 * (1 + 1e-12))
			continue;
		if (want == SIZE_MAX || kvs_sweep_row_waste_pct(row) <
		    kvs_sweep_row_waste_pct(kvs_sweep_result_row(R, want)))
			want = j;
	}
	const kvs_sweep_recommendation *rw = kvs_sweep_result_recommendation(R, KVS_OBJ_WASTE);
	assert_true(rw->found);
	assert_int_equal(rw->block_size, all_blocks[want]);
	assert_true(all_blocks[want] > 1);
	assert_false(rw->any_block_size);
	assert_non_null(strstr(rw->reason, "block size 1 wastes"));
	kvs_sweep_result_destroy(R);
	/* a margin wide enough for block 1's 2x kernel picks it */
	c.kernel_cost_margin = 1.5;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	rw = kvs_sweep_result_recommendation(R, KVS_OBJ_WASTE);
	assert_int_equal(rw->block_size, 1);
	assert_null(strstr(rw->reason, "counting only"));
	kvs_sweep_result_destroy(R);
	kvs_request_set_destroy(set);
}

/* ---- a row equals a separate replay ------------------------------------------- */

static void real_config(kvs_sim_config *sc)
{
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-2-7b", "a100-80gb");
	kvs_sim_config_defaults(sc, &d);
}

static kvs_request_set *sample_set(void)
{
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.limit = kvs_test_scaled(400, 60); /* fewer under sanitizers */
	o.max_model_len = 4096;
	kvs_request_set *s = NULL;
	assert_int_equal(kvs_request_set_load(kvs_test_src("traces/samples/azure-conv-sample.csv"),
					      &o, &s), KVS_OK);
	return s;
}

static void assert_stats_equal(const kvs_sim_stats *a, const kvs_sim_stats *b)
{
	assert_int_equal(a->arrived, b->arrived);
	assert_int_equal(a->completed, b->completed);
	assert_int_equal(a->rejected, b->rejected);
	assert_int_equal(a->num_blocks, b->num_blocks);
	assert_int_equal(a->preemptions, b->preemptions);
	assert_int_equal(a->steps, b->steps);
	assert_int_equal(a->metadata_bytes_max, b->metadata_bytes_max);
	assert_true(a->memory_pct.internal_frag == b->memory_pct.internal_frag);
	assert_true(a->memory_pct.external_frag == b->memory_pct.external_frag);
	assert_true(a->concurrency_mean == b->concurrency_mean);
	assert_true(a->concurrency_p99 == b->concurrency_p99);
	assert_true(a->queue_delay_s.p99 == b->queue_delay_s.p99);
	assert_true(a->ttft_s.p50 == b->ttft_s.p50);
	assert_true(a->ttft_s.p99 == b->ttft_s.p99);
	assert_true(a->tpot_s.p99 == b->tpot_s.p99);
	assert_true(a->output_tokens_per_s == b->output_tokens_per_s);
	assert_true(a->sim_time_s == b->sim_time_s);
	assert_true(a->prefix_hit_rate_tokens == b->prefix_hit_rate_tokens);
}

static void replay_stats(const kvs_sim_config *sc, const kvs_request_set *set, double ts,
			 kvs_sim_stats *out)
{
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, ts);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	kvs_sim_result *r = NULL;
	assert_int_equal(kvs_sim_replay(sc, &src, &r), KVS_OK);
	*out = *kvs_sim_result_stats(r);
	kvs_sim_result_destroy(r);
}

static void test_row_equals_replay(void **state)
{
	(void)state;
	kvs_request_set *set = sample_set();
	kvs_sim_config sc;
	real_config(&sc);
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	assert_int_equal(kvs_sweep_parse_policies("paged,oracle", &c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_block_sizes("16,64", &c), KVS_OK);
	for (int feed = 0; feed < 2; feed++) {
		c.kernel_feeds_step_time = feed;
		kvs_sweep_result *R;
		assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
		assert_int_equal(kvs_sweep_result_rows(R), 4);
		for (size_t i = 0; i < 4; i++) {
			const kvs_sweep_row *row = kvs_sweep_result_row(R, i);
			kvs_sim_config rc;
			assert_int_equal(kvs_sweep_row_sim_config(&c, set, row->policy,
								  row->block_size, &rc), KVS_OK);
			/* the plain engine settings; with the kernel feed, the
			 * KV-read factor (--kv-read-factor) is the row's relative
			 * kernel cost and nothing else changes */
			kvs_sim_config plain = sc;
			plain.policy = row->policy;
			plain.deploy.block_size = row->block_size;
			assert_true(rc.cost.bandwidth_efficiency ==
				    plain.cost.bandwidth_efficiency);
			assert_true(rc.cost.flops_efficiency == plain.cost.flops_efficiency);
			assert_true(rc.cost.kv_read_factor ==
				    (feed ? row->kernel.rel : 1.0));
			if (feed)
				plain.cost.kv_read_factor = row->kernel.rel;
			rc = plain;
			kvs_sim_stats st;
			replay_stats(&rc, set, 1.0, &st);
			assert_stats_equal(&row->st, &st);
			if (row->policy == KVS_POLICY_ORACLE)
				assert_true(row->repeated == (row->block_size == 64));
			else if (feed)
				assert_true(row->kernel.rel > 1.0);
		}
		/* the paged row at 16 runs slower with the kernel cost than without */
		kvs_sweep_result_destroy(R);
	}
	kvs_request_set_destroy(set);
}

/* ---- determinism across thread counts ----------------------------------------- */

static char *sweep_json(kvs_sweep_config *c, const kvs_request_set *set, unsigned jobs)
{
	c->jobs = jobs;
	kvs_sweep_result *R;
	assert_int_equal(kvs_sweep_run(c, set, &R), KVS_OK);
	kvs_json *doc = kvs_sweep_result_json(R, set);
	assert_non_null(doc);
	char *s = kvs_json_text(doc);
	kvs_json_free(doc);
	kvs_sweep_result_destroy(R);
	return s;
}

static void test_jobs_identical(void **state)
{
	(void)state;
	kvs_request_set *set = sample_set();
	kvs_sim_config sc;
	real_config(&sc);
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	assert_int_equal(kvs_sweep_parse_block_sizes("4,16,64", &c), KVS_OK);
	c.slo_ttft_s = 2.0;
	c.slo_tpot_s = 0.1;
	char *a = sweep_json(&c, set, 1);
	char *b = sweep_json(&c, set, 2);
	char *d = sweep_json(&c, set, 3);
	assert_string_equal(a, b);
	assert_string_equal(a, d);
	/* the rows are there, in policy-major order */
	json_t *doc = json_loads(a, 0, NULL);
	json_t *rows = json_object_get(doc, "rows");
	assert_int_equal(json_array_size(rows), 15);
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "policy")),
			    "paged");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(rows, 2), "block_size")),
			 64);
	assert_int_equal(json_array_size(json_object_get(doc, "recommendations")), 3);
	json_decref(doc);
	free(a);
	free(b);
	free(d);
	kvs_request_set_destroy(set);
}

/* ---- interruption --------------------------------------------------------------------
 * The interrupt raised once the first combination finished (one thread, so
 * no other has started): that row is kept, byte for byte as in a full run,
 * nothing else is, and the result says so. */

static volatile sig_atomic_t stop_flag;

static void stop_after_first(void *ctx, const kvs_sweep_progress *p)
{
	(void)ctx;
	if (p->points_done == 1)
		stop_flag = SIGINT;
	assert_true(p->points_done <= p->points_total);
}

/* raised when the second capacity probe of the first combination ends:
 * its row's replay and two probes finished, its search did not */
static uint64_t seen_sims;

static void stop_in_search(void *ctx, const kvs_sweep_progress *p)
{
	(void)ctx;
	if (p->simulations == 3)
		stop_flag = SIGINT;
	seen_sims = p->simulations;
}

static void test_interrupted(void **state)
{
	(void)state;
	kvs_request_set *set = sample_set();
	kvs_sim_config sc;
	real_config(&sc);
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	assert_int_equal(kvs_sweep_parse_block_sizes("16,64", &c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_policies("paged,max", &c), KVS_OK);
	c.jobs = 1;
	char *full = sweep_json(&c, set, 1);
	json_t *fdoc = json_loads(full, 0, NULL);
	assert_null(json_object_get(fdoc, "interrupted"));
	size_t total = 0, done = 0;

	stop_flag = 0;
	c.base.interrupt = &stop_flag;
	kvs_sweep_result *R = NULL;
	assert_int_equal(kvs_sweep_run_ex(&c, set, stop_after_first, NULL, &R), KVS_OK);
	assert_true(kvs_sweep_result_interrupted(R, &done, &total));
	assert_int_equal(done, 1);
	assert_true(total > 1);
	assert_int_equal(kvs_sweep_result_simulations(R), 1);
	assert_true(kvs_sweep_result_row(R, 0)->done);
	for (size_t i = 1; i < kvs_sweep_result_rows(R); i++)
		assert_false(kvs_sweep_result_row(R, i)->done);
	kvs_json *doc = kvs_sweep_result_json(R, set);
	char *text = kvs_json_text(doc);    /* as written, like the full run */
	kvs_json_free(doc);
	json_t *j = json_loads(text, 0, NULL);
	assert_non_null(j);
	free(text);
	assert_true(json_is_true(json_object_get(j, "interrupted")));
	assert_int_equal(json_integer_value(json_object_get(j, "points_done")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "points_total")), (json_int_t)total);
	json_t *rows = json_object_get(j, "rows");
	assert_int_equal(json_array_size(rows), 1);
	assert_true(json_equal(json_array_get(rows, 0),
			       json_array_get(json_object_get(fdoc, "rows"), 0)));
	json_decref(j);
	/* the CSV: a header and the one row */
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(kvs_sweep_result_csv(R, f), KVS_OK);
	rewind(f);
	int lines = 0, ch;
	while ((ch = fgetc(f)) != EOF)
		lines += ch == '\n';
	fclose(f);
	assert_int_equal(lines, 2);
	kvs_sweep_result_destroy(R);

	/* raised before the start: nothing done, still a result */
	stop_flag = SIGTERM;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	assert_true(kvs_sweep_result_interrupted(R, &done, &total));
	assert_int_equal(done, 0);
	assert_int_equal(kvs_sweep_result_simulations(R), 0);
	assert_false(kvs_sweep_result_recommendation(R, KVS_OBJ_WASTE)->found);
	kvs_sweep_result_destroy(R);

	/* interrupted inside a capacity search: the row stands and the
	 * recommendations its row allows are made (marked as covering it
	 * alone), the throughput one is not; the counts agree with what
	 * ran: 3 simulations, as the progress saw, 1 combination replayed, 0
	 * searched */
	c.find_max_rate = true;
	c.slo_ttft_s = 1000;
	c.slo_tpot_s = 10;
	stop_flag = 0;
	seen_sims = 0;
	assert_int_equal(kvs_sweep_run_ex(&c, set, stop_in_search, NULL, &R), KVS_OK);
	assert_true(kvs_sweep_result_interrupted(R, &done, &total));
	assert_int_equal(done, 0);
	assert_int_equal(kvs_sweep_result_points_replayed(R), 1);
	assert_int_equal(kvs_sweep_result_simulations(R), 3);
	assert_int_equal(seen_sims, 3);
	assert_true(kvs_sweep_result_row(R, 0)->done);
	const kvs_sweep_recommendation *rw = kvs_sweep_result_recommendation(R, KVS_OBJ_WASTE);
	assert_true(rw->found);
	assert_int_equal(rw->block_size, 16);
	assert_non_null(strstr(rw->reason, "(Interrupted: this covers only the 1 of "));
	const kvs_sweep_recommendation *rt =
		kvs_sweep_result_recommendation(R, KVS_OBJ_THROUGHPUT);
	assert_false(rt->found);
	assert_non_null(strstr(rt->reason, "before any combination finished its capacity search"));
	doc = kvs_sweep_result_json(R, set);
	text = kvs_json_text(doc);
	kvs_json_free(doc);
	j = json_loads(text, 0, NULL);
	free(text);
	assert_int_equal(json_integer_value(json_object_get(j, "simulations")), 3);
	assert_int_equal(json_integer_value(json_object_get(j, "points_done")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "points_replayed")), 1);
	assert_int_equal(json_array_size(json_object_get(j, "rows")), 1);
	assert_int_equal(json_array_size(json_object_get(j, "capacity")), 0);
	json_decref(j);
	kvs_sweep_result_destroy(R);
	json_decref(fdoc);
	free(full);
	kvs_request_set_destroy(set);
}

/* ---- hash-id granularity ----------------------------------------------------------- */

static void test_mooncake_block_size(void **state)
{
	(void)state;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	kvs_request_set *set = NULL;
	assert_int_equal(kvs_request_set_load(kvs_test_src("traces/samples/mooncake-sample.jsonl"),
					      &o, &set), KVS_OK);
	kvs_sim_config sc;
	real_config(&sc);
	sc.enable_prefix_caching = true;
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	assert_int_equal(kvs_sweep_parse_block_sizes("16,48", &c), KVS_OK);
	kvs_sweep_result *R = NULL;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_ERR_INVALID);
	assert_null(R);
	const char *msg = kvs_last_error();
	assert_non_null(strstr(msg, "mooncake-sample.jsonl"));
	assert_non_null(strstr(msg, "block size 48"));
	assert_non_null(strstr(msg, "512"));
	/* dividers and multiples of 512 are fine, and so is 48 without caching */
	assert_int_equal(kvs_sweep_parse_block_sizes("1,16,256,1024", &c), KVS_OK);
	assert_int_equal(kvs_sweep_check(&c, set), KVS_OK);
	assert_int_equal(kvs_sweep_parse_block_sizes("48", &c), KVS_OK);
	c.base.enable_prefix_caching = false;
	assert_int_equal(kvs_sweep_check(&c, set), KVS_OK);
	/* prefix hits: the sample's prompts share chained ids */
	c.base.enable_prefix_caching = true;
	assert_int_equal(kvs_sweep_parse_block_sizes("16,256", &c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_policies("paged", &c), KVS_OK);
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	const kvs_sweep_recommendation *rp = kvs_sweep_result_recommendation(R, KVS_OBJ_PREFIX);
	assert_true(rp->found);
	assert_true(kvs_sweep_result_row(R, 0)->st.prefix_hit_tokens > 0);
	kvs_sweep_result_destroy(R);
	kvs_request_set_destroy(set);
}

/* ---- capacity search --------------------------------------------------------------- */

static void test_capacity(void **state)
{
	(void)state;
	kvs_gen_opts g;
	kvs_gen_opts_defaults(&g);
	g.seed = 7;
	g.requests = 300;
	g.rate = 2.0;
	g.arrival = KVS_ARRIVAL_POISSON;
	assert_int_equal(kvs_gen_dist_parse("uniform:100:400", &g.prompt), KVS_OK);
	assert_int_equal(kvs_gen_dist_parse("uniform:20:120", &g.output), KVS_OK);
	kvs_gen *gen;
	assert_int_equal(kvs_gen_open(&g, &gen), KVS_OK);
	kvs_request_set *set;
	assert_int_equal(kvs_request_set_create(&set), KVS_OK);
	kvs_request q;
	kvs_status st;
	while ((st = kvs_gen_next(gen, &q)) == KVS_OK)
		assert_int_equal(kvs_request_set_append(set, &q), KVS_OK);
	assert_int_equal(st, KVS_END);
	kvs_gen_close(gen);

	kvs_sim_config sc;
	fixed_config(&sc);
	/* a step: 5 ms + 20 us per batched token + 10 ns per context token */
	sc.cost.linear_base_s = 0.005;
	sc.cost.linear_per_token_s = 20e-6;
	sc.cost.linear_per_context_s = 10e-9;
	sc.kv_budget_bytes = 32768;
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	assert_int_equal(kvs_sweep_parse_policies("paged,max", &c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_block_sizes("16,128", &c), KVS_OK);
	c.find_max_rate = true;
	c.slo_ttft_s = 0.5;
	c.slo_tpot_s = 0.05;
	c.rate_tolerance = 0.05;
	kvs_sweep_result *R;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	assert_int_equal(kvs_sweep_result_capacities(R), 4);
	for (size_t i = 0; i < 4; i++) {
		const kvs_sweep_capacity *k = kvs_sweep_result_capacity(R, i);
		assert_int_equal(k->outcome, KVS_CAPACITY_FOUND);
		assert_true(k->max_rate > 0);
		assert_float_equal(k->fail_rate, k->max_rate * 1.05, 1e-9 * k->max_rate);
		assert_true(k->simulations >= 2);
		kvs_sim_config rc;
		assert_int_equal(kvs_sweep_row_sim_config(&c, set, k->policy, k->block_size, &rc),
				 KVS_OK);
		kvs_sim_stats ok, bad;
		replay_stats(&rc, set, k->time_scale, &ok);
		replay_stats(&rc, set, k->time_scale / 1.05, &bad);
		assert_true(ok.ttft_s.p99 <= c.slo_ttft_s && ok.tpot_s.p99 <= c.slo_tpot_s);
		assert_true(bad.ttft_s.p99 > c.slo_ttft_s || bad.tpot_s.p99 > c.slo_tpot_s);
		assert_true(ok.concurrency_mean == k->concurrency_mean);
		assert_true(k->conversations_per_gpu == k->concurrency_mean);
	}
	/* paged packs more sequences than max reservation: it sustains at
	 * least the same rate */
	assert_true(kvs_sweep_result_capacity(R, 0)->max_rate >=
		    kvs_sweep_result_capacity(R, 2)->max_rate);
	const kvs_sweep_recommendation *rt = kvs_sweep_result_recommendation(R, KVS_OBJ_THROUGHPUT);
	assert_true(rt->found);
	kvs_sweep_result_destroy(R);

	/* an SLO no rate meets: below a single step's time */
	c.slo_tpot_s = 0.001;
	c.rate_max_factor = 4;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	assert_int_equal(kvs_sweep_result_capacity(R, 0)->outcome, KVS_CAPACITY_UNATTAINABLE);
	assert_false(kvs_sweep_result_recommendation(R, KVS_OBJ_THROUGHPUT)->found);
	kvs_sweep_result_destroy(R);
	/* capacity search without an SLO is refused */
	c.slo_ttft_s = c.slo_tpot_s = 0;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_ERR_INVALID);
	kvs_request_set_destroy(set);
}

/* ---- recommendations on hand-made rows -----------------------------------------
 * Rows are policy-major (policies x block sizes).  Figures are chosen so
 * that each rule decides exactly one pick. */
static void mkrow(kvs_sweep_row *r, kvs_policy p, uint32_t b, double rel, double waste,
		  double ttft_p99, uint64_t meta, double otps, double hits)
{
	memset(r, 0, sizeof *r);
	r->policy = p;
	r->block_size = b;
	r->kernel.rel = rel;
	r->kernel.source = p == KVS_POLICY_PAGED ? KVS_KERNEL_MODEL : KVS_KERNEL_CONTIGUOUS;
	r->st.memory_pct.internal_frag = waste;
	r->st.ttft_s.p99 = ttft_p99;
	r->st.tpot_s.p99 = 0.05;
	r->st.metadata_bytes_max = meta;
	r->st.output_tokens_per_s = otps;
	r->st.prefix_hit_rate_tokens = hits;
	r->st.prefix_hit_tokens = hits > 0 ? 1000 : 0;
	r->st.completed = 10;
	r->meets_slo = true;
}

static void mkcap(kvs_sweep_capacity *k, const kvs_sweep_row *r, double rate, double ttft)
{
	memset(k, 0, sizeof *k);
	k->policy = r->policy;
	k->block_size = r->block_size;
	k->outcome = rate > 0 ? KVS_CAPACITY_FOUND : KVS_CAPACITY_UNATTAINABLE;
	k->max_rate = rate;
	k->fail_rate = rate * 1.02;
	k->ttft_p99_s = ttft;
	k->conversations_per_gpu = 10;
}

static void test_recommend_rules(void **state)
{
	(void)state;
	kvs_sweep_config c;
	kvs_sweep_config_defaults(&c, NULL);
	c.slo_ttft_s = 2;
	c.slo_tpot_s = 0.1;
	c.find_max_rate = true;
	assert_int_equal(kvs_sweep_parse_policies("paged,oracle,pow2", &c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_block_sizes("1,16,64", &c), KVS_OK);
	kvs_sweep_row rows[9];
	kvs_sweep_capacity caps[9];
	kvs_sweep_recommendation rec[KVS_OBJ_COUNT_];
	/*           policy               b   rel    waste ttft  meta  tok/s hits */
	mkrow(&rows[0], KVS_POLICY_PAGED, 1, 2.000, 0.01, 1.0, 6000, 900, 0.50);
	mkrow(&rows[1], KVS_POLICY_PAGED, 16, 1.060, 0.30, 1.0, 400, 1000, 0.45);
	mkrow(&rows[2], KVS_POLICY_PAGED, 64, 1.040, 1.40, 1.0, 100, 1000, 0.40);
	for (int b = 0; b < 3; b++) {
		mkrow(&rows[3 + b], KVS_POLICY_ORACLE, c.block_sizes[b], 1, 9.6, 0.8, 16000,
		      1010, 0);
		mkrow(&rows[6 + b], KVS_POLICY_POW2, c.block_sizes[b], 1, 14.1, 0.9, 16000,
		      1000, 0);
		rows[3 + b].repeated = rows[6 + b].repeated = b > 0;
	}
	/* capacity: oracle is highest; paged 16 and 64 tie on the grid rate with
	 * paged 1 below; 16 has the lower p99 TTFT at that rate */
	mkcap(&caps[0], &rows[0], 4.0, 1.2);
	mkcap(&caps[1], &rows[1], 4.5, 1.4);
	mkcap(&caps[2], &rows[2], 4.5, 1.6);
	for (int i = 3; i < 6; i++)
		mkcap(&caps[i], &rows[i], 4.8, 1.0);
	for (int i = 6; i < 9; i++)
		mkcap(&caps[i], &rows[i], 4.4, 1.0);
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	const kvs_sweep_recommendation *t = &rec[KVS_OBJ_THROUGHPUT];
	assert_true(t->found);
	assert_int_equal(t->policy, KVS_POLICY_PAGED);        /* never oracle */
	assert_int_equal(t->block_size, 16);                  /* lower p99 TTFT */
	assert_string_equal(t->objective_name, "throughput_within_slo");
	assert_non_null(strstr(t->reason, "paged at block size 16 sustains 4.5 requests/s"));
	assert_non_null(strstr(t->reason, "2 come within one grid step of the highest rate"));
	assert_non_null(strstr(t->reason, "lowest p99 TTFT among them, 1.4 s"));
	assert_non_null(strstr(t->reason, "oracle, the unattainable bound, reaches 4.8"));
	assert_non_null(strstr(t->reason, "of the 4 deployable combinations"));
	assert_null(strchr(t->reason, '\n'));

	/* the same p99 TTFT at the tied rate: lower waste decides (16) */
	caps[2].ttft_p99_s = 1.4;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 16);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "wastes the least KV"));
	/* the same waste too: smaller block tables decide (64) */
	rows[2].st.memory_pct.internal_frag = 0.30;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 64);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "smallest block tables"));
	/* identical in every rule: the earlier row (16) */
	rows[2].st.metadata_bytes_max = 400;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 16);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "comes first"));
	rows[2].st.memory_pct.internal_frag = 1.40;
	rows[2].st.metadata_bytes_max = 100;
	caps[2].ttft_p99_s = 1.6;

	/* pow2 one grid step above paged: within the search's resolution, a
	 * tie, and paged (what engines deploy) goes first; oracle, below pow2,
	 * is not called a bound */
	for (int i = 6; i < 9; i++)
		caps[i].max_rate = 4.5 * 1.02;
	for (int i = 3; i < 6; i++)
		caps[i].max_rate = 4.5;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	t = &rec[KVS_OBJ_THROUGHPUT];
	assert_int_equal(t->policy, KVS_POLICY_PAGED);
	assert_int_equal(t->block_size, 16);
	assert_non_null(strstr(t->reason, "within the search's resolution (one 2% grid step) "
			       "of the highest rate of the 4 deployable combinations, pow2's 4.59"));
	assert_non_null(strstr(t->reason, "3 come within one grid step of the highest rate, "
			       "2 of them paged (the policy engines deploy, which goes first)"));
	assert_non_null(strstr(t->reason, "oracle, which reserves each request's true length, "
			       "reaches 4.5 requests/s, less than pow2's 4.59: within the "
			       "search's resolution"));
	assert_null(strstr(t->reason, "bound"));
	/* oracle two steps below the top: not a bound either, and said why */
	for (int i = 3; i < 6; i++)
		caps[i].max_rate = 4.4;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason,
			       "reservation waste is not what limits the rate here"));
	assert_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "bound"));
	/* p99 TTFTs within 5% tie: lower waste decides (16 over 64 at 1.39 s) */
	for (int i = 6; i < 9; i++)
		caps[i].max_rate = 4.4;
	for (int i = 3; i < 6; i++)
		caps[i].max_rate = 4.8;
	caps[2].ttft_p99_s = 1.39;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 16);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "is within 5% of the lowest"));
	caps[2].ttft_p99_s = 1.6;

	/* a contiguous policy wins: named without a block size, JSON null */
	for (int i = 6; i < 9; i++)
		caps[i].max_rate = 4.6;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	t = &rec[KVS_OBJ_THROUGHPUT];
	assert_int_equal(t->policy, KVS_POLICY_POW2);
	assert_true(t->any_block_size);
	assert_int_equal(t->block_size, 1);                   /* its first row */
	assert_true(strncmp(t->reason, "pow2 sustains 4.6 requests/s", 28) == 0);
	assert_null(strstr(t->reason, "block size"));
	assert_null(strstr(t->reason, "come within one grid step"));  /* counted once */
	assert_non_null(strstr(t->reason, "(+4.35%)"));          /* oracle 4.8 / 4.6 */
	for (int i = 6; i < 9; i++)
		caps[i].max_rate = 4.4;

	/* least waste: block 1 (2x kernel) is outside the 5% margin of the
	 * cheapest paged kernel (64, 1.04): 16 at 1.06 is inside and wastes
	 * less than 64, pow2 and oracle (excluded: a bound) */
	const kvs_sweep_recommendation *w = &rec[KVS_OBJ_WASTE];
	assert_true(w->found);
	assert_int_equal(w->policy, KVS_POLICY_PAGED);
	assert_int_equal(w->block_size, 16);
	assert_non_null(strstr(w->reason, "within 5% of the cheapest (block size 64, 1.040x"));
	assert_non_null(strstr(w->reason, "block size 1 wastes 0.01% but its kernel takes 2.000x"));
	assert_non_null(strstr(w->reason, "oracle, the unattainable bound for contiguous "
				   "reservation, wastes 9.6%"));
	/* prefix hits: the same margin, block 1's 50% named as the costlier one */
	const kvs_sweep_recommendation *p = &rec[KVS_OBJ_PREFIX];
	assert_true(p->found);
	assert_int_equal(p->block_size, 16);
	assert_non_null(strstr(p->reason, "reuses 45% of prompt tokens"));
	assert_non_null(strstr(p->reason, "block size 1 reuses 50% but its kernel takes 2.000x"));

	/* oracle wastes least among contiguous policies but is never the pick */
	for (int i = 0; i < 3; i++)
		rows[i].st.memory_pct.internal_frag = 50;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_int_equal(rec[KVS_OBJ_WASTE].policy, KVS_POLICY_POW2);
	assert_true(rec[KVS_OBJ_WASTE].any_block_size);
	assert_true(strncmp(rec[KVS_OBJ_WASTE].reason, "pow2 leaves", 11) == 0);

	/* without a capacity search: deployable rows within 1% of the best
	 * tokens/s (oracle's 1010 is not the reference); paged goes first
	 * (pow2's lower p99 TTFT does not count against it), its two rows tie
	 * on p99 TTFT and waste (50%), smaller block tables decide (64) */
	kvs_sweep_recommend_rows(&c, rows, NULL, 9, rec);
	t = &rec[KVS_OBJ_THROUGHPUT];
	assert_int_equal(t->policy, KVS_POLICY_PAGED);
	assert_int_equal(t->block_size, 64);
	assert_non_null(strstr(t->reason, "3 deployable combinations come within 1%"));
	assert_non_null(strstr(t->reason, "2 of them paged"));
	assert_non_null(strstr(t->reason, "oracle, the unattainable bound, delivers 1010"));
	/* p99 TTFT 0.99 (16) against 1.0 (64): within 5%, a tie, and the
	 * lower waste decides (64, 0.2%); 0.9: more than 5%, TTFT decides (16) */
	rows[1].st.memory_pct.internal_frag = 0.30;
	rows[1].st.ttft_s.p99 = 0.99;
	rows[2].st.memory_pct.internal_frag = 0.20;
	kvs_sweep_recommend_rows(&c, rows, NULL, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 64);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "wastes the least KV"));
	rows[1].st.ttft_s.p99 = 0.9;
	kvs_sweep_recommend_rows(&c, rows, NULL, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 16);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "lowest p99 TTFT among those"));
	/* oracle below the pick's tokens/s: not called a bound */
	rows[1].st.output_tokens_per_s = 1020;
	kvs_sweep_recommend_rows(&c, rows, NULL, 9, rec);
	assert_int_equal(rec[KVS_OBJ_THROUGHPUT].block_size, 16);
	assert_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "bound"));
	rows[1].st.output_tokens_per_s = 1000;
	rows[1].st.ttft_s.p99 = 1.0;
	rows[1].st.memory_pct.internal_frag = rows[2].st.memory_pct.internal_frag = 50;
	for (int i = 0; i < 9; i++)
		rows[i].meets_slo = false;
	kvs_sweep_recommend_rows(&c, rows, NULL, 9, rec);
	assert_false(rec[KVS_OBJ_THROUGHPUT].found);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "--find-max-rate"));

	/* prefix caching off: the flag that turns it on is named */
	for (int i = 0; i < 9; i++)
		rows[i].st.prefix_hit_tokens = 0;
	kvs_sweep_recommend_rows(&c, rows, caps, 9, rec);
	assert_false(rec[KVS_OBJ_PREFIX].found);
	assert_non_null(strstr(rec[KVS_OBJ_PREFIX].reason, "--enable-prefix-caching"));

	/* only oracle swept: nothing deployable to recommend */
	kvs_sweep_config co = c;
	assert_int_equal(kvs_sweep_parse_policies("oracle", &co), KVS_OK);
	kvs_sweep_recommend_rows(&co, rows + 3, caps + 3, 3, rec);
	for (int o = 0; o < KVS_OBJ_COUNT_; o++)
		assert_false(rec[o].found);
	assert_non_null(strstr(rec[KVS_OBJ_THROUGHPUT].reason, "not a deployable choice"));
}

/* ---- kernel model and profile ------------------------------------------------------ */

static void test_kernel_model(void **state)
{
	(void)state;
	assert_float_equal(kvs_kernel_model_ratio(1, 1.0, 1000), 2.0, 1e-12);
	/* c = 100, b = 16: 7 blocks of 17 token-reads for 100 tokens */
	assert_float_equal(kvs_kernel_model_ratio(16, 1.0, 100), 7.0 * 17.0 / 100.0, 1e-12);
	assert_float_equal(kvs_kernel_model_ratio(16, 0.0, 96), 1.0, 1e-12);

	/* the workload average: one request, P = 10, O = 3: decode contexts
	 * 11 and 12; b = 8: 2 blocks each, (8 + 1) x 4 / 23 */
	uint32_t p[] = { 10 }, o[] = { 3 };
	kvs_request_set *set = set_of(p, o, 1, 1.0);
	kvs_sim_config sc;
	fixed_config(&sc);
	kvs_sweep_config c;
	sweep_defaults(&c, &sc);
	kvs_sweep_kernel k;
	assert_int_equal(kvs_sweep_kernel_cost(&c, set, KVS_POLICY_PAGED, 8, &k), KVS_OK);
	assert_float_equal(k.rel, 9.0 * 4.0 / 23.0, 1e-12);
	assert_float_equal(k.mean_context, 11.5, 1e-12);
	assert_int_equal(k.source, KVS_KERNEL_MODEL);
	assert_int_equal(kvs_sweep_kernel_cost(&c, set, KVS_POLICY_MAX, 8, &k), KVS_OK);
	assert_float_equal(k.rel, 1.0, 0);

	/* how a row's step time carries the kernel cost: the KV-read factor
	 * becomes the base configuration's factor x rel; the linear model's
	 * per-context-token term itself is left alone (the factor scales it) */
	sc.cost.linear_per_context_s = 1e-6;
	sc.cost.kv_read_factor = 1.5;
	sweep_defaults(&c, &sc);
	const double rel8 = 9.0 * 4.0 / 23.0;
	kvs_sim_config rc;
	assert_int_equal(kvs_sweep_row_sim_config(&c, set, KVS_POLICY_PAGED, 8, &rc), KVS_OK);
	assert_float_equal(rc.cost.kv_read_factor, 1.5 * rel8, 1e-12);
	assert_true(rc.cost.linear_per_context_s == 1e-6);
	assert_true(rc.cost.linear_base_s == sc.cost.linear_base_s);
	/* kernel_cost_us: rel x the contiguous read as the model charges it */
	assert_int_equal(kvs_sweep_kernel_cost(&c, set, KVS_POLICY_PAGED, 8, &k), KVS_OK);
	assert_float_equal(k.cost_us, rel8 * 1.5 * 1e-6 * 11.5 * 1e6, 1e-9);
	assert_int_equal(kvs_sweep_row_sim_config(&c, set, KVS_POLICY_MAX, 8, &rc), KVS_OK);
	assert_float_equal(rc.cost.kv_read_factor, 1.5, 0);
	c.kernel_feeds_step_time = false;
	assert_int_equal(kvs_sweep_row_sim_config(&c, set, KVS_POLICY_PAGED, 8, &rc), KVS_OK);
	assert_float_equal(rc.cost.kv_read_factor, 1.5, 0);
	sweep_defaults(&c, &sc);

	/* a measured profile: ratio 1.2 at b = 16 (context 1000), 1.1 at 4000;
	 * two batches at 1000 average */
	const char *good = kvs_test_write_tmp("prof.json",
		"{\"gpu\": \"h200\", \"peak_gbps\": 4800, \"entries\": ["
		"{\"block_size\": 16, \"context\": 1000, \"batch\": 1, \"paged_us\": 11,"
		" \"contiguous_us\": 10, \"gbps\": 1000},"
		"{\"block_size\": 16, \"context\": 1000, \"batch\": 64, \"paged_us\": 13,"
		" \"contiguous_us\": 10, \"gbps\": 1000},"
		"{\"block_size\": 16, \"context\": 4000, \"batch\": 1, \"paged_us\": 11,"
		" \"contiguous_us\": 10, \"gbps\": 1000}]}");
	kvs_kernel_profile *prof;
	assert_int_equal(kvs_kernel_profile_load(good, &prof), KVS_OK);
	assert_string_equal(kvs_kernel_profile_gpu(prof), "h200");
	assert_true(kvs_kernel_profile_has(prof, 16));
	assert_false(kvs_kernel_profile_has(prof, 8));
	assert_float_equal(kvs_kernel_profile_ratio(prof, 16, 500), 1.2, 1e-12);
	assert_float_equal(kvs_kernel_profile_ratio(prof, 16, 2000), 1.15, 1e-12);
	assert_float_equal(kvs_kernel_profile_ratio(prof, 16, 9000), 1.1, 1e-12);
	c.kernel_profile = prof;
	assert_int_equal(kvs_sweep_kernel_cost(&c, set, KVS_POLICY_PAGED, 16, &k), KVS_OK);
	assert_int_equal(k.source, KVS_KERNEL_PROFILE);
	assert_float_equal(k.rel, 1.2, 1e-12);
	assert_int_equal(kvs_sweep_kernel_cost(&c, set, KVS_POLICY_PAGED, 8, &k), KVS_OK);
	assert_int_equal(k.source, KVS_KERNEL_PROFILE_FIT);
	assert_true(kvs_kernel_profile_fit_delta(prof) > 0);
	kvs_kernel_profile_destroy(prof);

	const char *bad = kvs_test_write_tmp("bad.json",
		"{\"gpu\": \"x\", \"entries\": [{\"block_size\": 16, \"context\": 10,"
		" \"batch\": 1, \"paged_us\": 1, \"contiguous_us\": 1},"
		" {\"block_size\": 16, \"context\": 10, \"batch\": 2, \"contiguous_us\": 1}]}");
	assert_int_equal(kvs_kernel_profile_load(bad, &prof), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "entries[1]"));
	assert_non_null(strstr(kvs_last_error(), "paged_us"));
	assert_non_null(strstr(kvs_last_error(), "bad.json"));
	const char *bad2 = kvs_test_write_tmp("bad2.json", "{\"entries\": 3}");
	assert_int_equal(kvs_kernel_profile_load(bad2, &prof), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "entries"));
	const char *bad3 = kvs_test_write_tmp("bad3.json", "{\"entries\": [");
	assert_int_equal(kvs_kernel_profile_load(bad3, &prof), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "bad3.json:1:"));
	assert_int_equal(kvs_kernel_profile_load("/nonexistent/prof.json", &prof), KVS_ERR_IO);
	/* the message names the file and the cause, not jansson's line -1 */
	assert_non_null(strstr(kvs_last_error(), "/nonexistent/prof.json: kernel profile: "
			       "cannot open"));
	assert_null(strstr(kvs_last_error(), "-1"));
	assert_int_equal(kvs_kernel_profile_load("/tmp", &prof), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "is a directory"));
	const char *cpu = kvs_test_write_tmp("cpu.json",
		"{\"device\": \"cpu_reference\", \"gpu\": \"none\", \"entries\": [{"
		"\"block_size\": 16, \"context\": 10, \"batch\": 1, \"paged_us\": 1,"
		" \"contiguous_us\": 1}]}");
	assert_int_equal(kvs_kernel_profile_load(cpu, &prof), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "cpu_reference"));
	kvs_request_set_destroy(set);
}

static void test_parse_lists(void **state)
{
	(void)state;
	kvs_sweep_config c;
	kvs_sweep_config_defaults(&c, NULL);
	assert_int_equal(c.nblock_sizes, 9);
	assert_int_equal(c.block_sizes[8], 256);
	assert_int_equal(c.npolicies, 5);
	assert_int_equal(kvs_sweep_parse_block_sizes("8, 16 ,32", &c), KVS_OK);
	assert_int_equal(c.nblock_sizes, 3);
	assert_int_equal(c.block_sizes[1], 16);
	assert_int_equal(kvs_sweep_parse_block_sizes("8,0", &c), KVS_ERR_INVALID);
	assert_int_equal(kvs_sweep_parse_block_sizes("8,x", &c), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "'x'"));
	assert_int_equal(kvs_sweep_parse_block_sizes("8,8", &c), KVS_ERR_INVALID);
	assert_int_equal(kvs_sweep_parse_block_sizes("8,,16", &c), KVS_ERR_INVALID);
	assert_int_equal(kvs_sweep_parse_block_sizes("-8", &c), KVS_ERR_INVALID);
	assert_int_equal(c.nblock_sizes, 3);   /* failures leave it as it was */
	assert_int_equal(kvs_sweep_parse_policies("oracle,paged", &c), KVS_OK);
	assert_int_equal(c.policies[0], KVS_POLICY_ORACLE);
	assert_int_equal(kvs_sweep_parse_policies("paged,lru", &c), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "lru"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_lists),
		cmocka_unit_test(test_kernel_model),
		cmocka_unit_test(test_internal_fragmentation),
		cmocka_unit_test(test_row_equals_replay),
		cmocka_unit_test(test_jobs_identical),
		cmocka_unit_test(test_interrupted),
		cmocka_unit_test(test_mooncake_block_size),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_recommend_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
