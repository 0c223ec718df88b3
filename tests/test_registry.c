/*
 * test_registry.c - the policy registry, and a test-only policy registered
 * through the same path as the built-in ones, run through a replay and a
 * sweep.
 *
 * The test policy "padded" reserves contiguously prompt + 2 x output + 8
 * tokens: the oracle's method table with another region rule.  Requests run
 * alone (10 s apart, 1 s per step), so a request of P prompt and O output
 * tokens lives O steps and is told a final length of P + O - 1 (the last
 * token's KV is never written): its internal fragmentation is the region
 * minus that, (O - 1) + 8 tokens, for O seconds.
 *
 * The metric table: keys unique, every row where the JSON writers put it
 * with the value the table reads from the stats, earlier keys found.
 */
#include "kvs_config.h"
#include "test_util.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "kvsim/kvsim.h"
#include "../allocator/alloc_internal.h"
#include "common/json.h"

static uint32_t region_padded(uint32_t mml, uint32_t prompt, uint32_t output)
{
	uint64_t r = (uint64_t)prompt + 2ull * output + 8;
	return r > mml ? mml : (uint32_t)r;
}

static kvs_alloc_methods padded_methods;
static const kvs_policy_info padded_row = {
	.name = "padded",
	.aliases = "pad,padded-test",
	.help = "test only: prompt + 2 x output + 8 tokens, contiguous",
	.traits = KVS_TRAIT_FORKS_BY_COPY,
	.kernel = KVS_KERNEL_READ_CONTIGUOUS,
	.color = 0x123456,
	.methods = &padded_methods,
};
static kvs_policy padded = (kvs_policy)-1;
static size_t nbuiltin;   /* rows before the test's */

static int group_setup(void **state)
{
	(void)state;
	nbuiltin = kvs_policy_count();
	padded_methods = kvs_oracle_methods;
	padded_methods.name = "padded";
	padded_methods.region = region_padded;
	return kvs_policy_register(&padded_row, &padded) == KVS_OK ? 0 : -1;
}

static const uint32_t P[] = { 100, 50, 7 };
static const uint32_t O[] = { 1, 5, 3 };

static kvs_request_set *small_set(void)
{
	kvs_request_set *s;
	assert_int_equal(kvs_request_set_create(&s), KVS_OK);
	for (size_t i = 0; i < KVS_ARRAY_LEN(P); i++) {
		kvs_request q;
		memset(&q, 0, sizeof q);
		q.index = i;
		q.line = i + 1;
		q.arrival_s = 10.0 * (double)i;
		q.prompt_tokens = P[i];
		q.output_tokens = O[i];
		q.num_samples = 1;
		assert_int_equal(kvs_request_set_append(s, &q), KVS_OK);
	}
	return s;
}

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
	sc->kv_budget_bytes = 16384;
	sc->watermark = 0;
}

/* (O - 1 + 8) tokens for O seconds each, over 16384 tokens and the run's
 * 20 + 3 = 23 s: 8 x 1 + 12 x 5 + 10 x 3 = 98 token-seconds */
static const double want_ifrag = 100.0 * 98.0 / (16384.0 * 23.0);

static void test_registry_rows(void **state)
{
	(void)state;
	assert_true(nbuiltin >= KVS_POLICY_COUNT_);
	assert_int_equal(kvs_policy_count(), nbuiltin + 1);
	assert_int_equal(padded, nbuiltin);
	assert_string_equal(kvs_policy_name(padded), "padded");
	assert_ptr_equal(kvs_policy_get(padded), &padded_row);
	assert_null(kvs_policy_get((kvs_policy)KVS_POLICY_CAP));
	assert_string_equal(kvs_policy_name((kvs_policy)99), "unknown");

	/* traits of the built-in rows, as the modules rely on them */
	assert_true(kvs_policy_has(KVS_POLICY_PAGED, KVS_TRAIT_BLOCK_GRANULAR |
				   KVS_TRAIT_PREFIX_HASHES | KVS_TRAIT_BASELINE));
	assert_false(kvs_policy_has(KVS_POLICY_PAGED, KVS_TRAIT_FORKS_BY_COPY));
	assert_true(kvs_policy_has(KVS_POLICY_ORACLE, KVS_TRAIT_BOUND));
	for (size_t p = 0; p < KVS_POLICY_COUNT_; p++) {
		const kvs_policy_info *r = kvs_policy_get((kvs_policy)p);
		assert_non_null(r->methods);
		assert_non_null(r->help);
		/* paged is the one block-granular policy and reads through a
		 * block table; every other forks by copy */
		bool paged = p == KVS_POLICY_PAGED;
		assert_int_equal(r->kernel == KVS_KERNEL_READ_PAGED, paged);
		assert_int_equal(kvs_policy_has((kvs_policy)p, KVS_TRAIT_FORKS_BY_COPY), !paged);
		assert_int_equal(kvs_policy_has((kvs_policy)p, KVS_TRAIT_BOUND),
				 p == KVS_POLICY_ORACLE);
	}
	assert_false(kvs_policy_has(padded, KVS_TRAIT_BOUND));

	/* names and aliases, case-insensitive */
	kvs_policy q;
	assert_int_equal(kvs_policy_parse("PADDED", &q), KVS_OK);
	assert_int_equal(q, padded);
	assert_int_equal(kvs_policy_parse("padded-test", &q), KVS_OK);
	assert_int_equal(q, padded);
	assert_int_equal(kvs_policy_parse("pa", &q), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "unknown policy 'pa'"));
	assert_non_null(strstr(kvs_last_error(), " or padded)"));

	/* the one list parser */
	kvs_policy list[KVS_POLICY_CAP] = { 0 };
	size_t n = 0;
	assert_int_equal(kvs_policy_parse_list("paged, pad,max", list, KVS_POLICY_CAP, &n),
			 KVS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(list[0], KVS_POLICY_PAGED);
	assert_int_equal(list[1], padded);
	assert_int_equal(list[2], KVS_POLICY_MAX);
	assert_int_equal(kvs_policy_parse_list("paged,padded,PAD", list, KVS_POLICY_CAP, &n),
			 KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "given twice"));
	assert_int_equal(n, 3);  /* untouched */
	assert_int_equal(kvs_policy_parse_list("paged,,max", list, KVS_POLICY_CAP, &n),
			 KVS_ERR_INVALID);
	assert_int_equal(kvs_policy_parse_list("", list, KVS_POLICY_CAP, &n), KVS_ERR_INVALID);
	assert_int_equal(kvs_policy_parse_list("paged,max", list, 1, &n), KVS_ERR_LIMIT);
	assert_int_equal(kvs_policy_baseline_index(list, 0), -1);
	kvs_policy two[] = { padded, KVS_POLICY_PAGED };
	assert_int_equal(kvs_policy_baseline_index(two, 2), 1);

	/* every name, generated */
	char names[256];
	size_t need = kvs_policy_names(names, sizeof names, ", ", true);
	/* the built-in ones first, in registry order, the test's last */
	assert_int_equal(strncmp(names, "paged, max, pow2, oracle, vattention", 36), 0);
	assert_string_equal(names + strlen(names) - 10, " or padded");
	assert_int_equal(need, strlen(names));
	char small[8];
	assert_int_equal(kvs_policy_names(small, sizeof small, ", ", false), need - 2);
	assert_string_equal(small, "paged, ");

	/* a second registration of a name or alias is refused */
	static const kvs_policy_info dup = { .name = "Paged", .methods = &kvs_max_methods };
	static const kvs_policy_info dup_alias = { .name = "other", .aliases = "x,pad",
						   .methods = &kvs_max_methods };
	static const kvs_policy_info no_methods = { .name = "empty" };
	assert_int_equal(kvs_policy_register(&dup, NULL), KVS_ERR_INVALID);
	assert_int_equal(kvs_policy_register(&dup_alias, NULL), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "alias 'pad'"));
	assert_int_equal(kvs_policy_register(&no_methods, NULL), KVS_ERR_INVALID);
	assert_int_equal(kvs_policy_count(), nbuiltin + 1);
}

static void replay(kvs_policy p, const kvs_request_set *set, kvs_sim_result **out)
{
	kvs_sim_config sc;
	fixed_config(&sc);
	sc.policy = p;
	kvs_request_cursor cur;
	kvs_request_cursor_init(&cur, set, 1.0);
	kvs_request_source src = kvs_request_cursor_source(&cur);
	assert_int_equal(kvs_sim_replay(&sc, &src, out), KVS_OK);
}

static void test_registered_policy_replay(void **state)
{
	(void)state;
	kvs_request_set *set = small_set();
	kvs_sim_result *r, *o;
	replay(padded, set, &r);
	replay(KVS_POLICY_ORACLE, set, &o);
	const kvs_sim_stats *s = kvs_sim_result_stats(r);
	assert_int_equal(s->policy, padded);
	assert_int_equal(s->arrived, 3);
	assert_int_equal(s->completed, 3);
	assert_int_equal(s->rejected + s->unfinished, 0);
	assert_float_equal(s->sim_time_s, 23.0, 1e-9);
	assert_float_equal(s->memory_pct.internal_frag, want_ifrag, 1e-9);
	/* the oracle reserves exactly the final length: no internal waste */
	assert_true(kvs_sim_result_stats(o)->memory_pct.internal_frag == 0.0);
	/* the same tokens are stored whatever the policy */
	assert_float_equal(s->memory_pct.token_states,
			   kvs_sim_result_stats(o)->memory_pct.token_states, 1e-9);

	/* its JSON is keyed by its registry name */
	kvs_sim_result *both[2] = { o, r };
	json_t *doc = kvs_json_jt(kvs_sim_report_json("compare", both, 2, NULL,
							 KVS_TRACE_AUTO, NULL));
	assert_non_null(doc);
	json_t *pol = json_object_get(json_object_get(doc, "policies"), "padded");
	assert_non_null(pol);
	/* no baseline among them: no ratios */
	assert_null(json_object_get(doc, "ratios"));
	json_decref(doc);
	kvs_sim_result_destroy(r);
	kvs_sim_result_destroy(o);
	kvs_request_set_destroy(set);
}

static void test_registered_policy_sweep(void **state)
{
	(void)state;
	kvs_request_set *set = small_set();
	kvs_sim_config sc;
	fixed_config(&sc);
	kvs_sweep_config c;
	kvs_sweep_config_defaults(&c, &sc);
	c.jobs = 2;
	/* the defaults sweep every registered policy */
	assert_int_equal(c.npolicies, kvs_policy_count());
	assert_int_equal(c.policies[c.npolicies - 1], padded);
	assert_int_equal(kvs_sweep_parse_policies("paged,padded", &c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_block_sizes("8,16", &c), KVS_OK);
	kvs_sweep_result *R;
	assert_int_equal(kvs_sweep_run(&c, set, &R), KVS_OK);
	assert_int_equal(kvs_sweep_result_rows(R), 4);
	for (size_t i = 2; i < 4; i++) {
		const kvs_sweep_row *row = kvs_sweep_result_row(R, i);
		assert_int_equal(row->policy, padded);
		/* not block-granular: run once, repeated at the second size,
		 * read with the contiguous kernel */
		assert_int_equal(row->repeated, i == 3);
		assert_int_equal(row->kernel.source, KVS_KERNEL_CONTIGUOUS);
		assert_float_equal(row->kernel.rel, 1.0, 0);
		assert_int_equal(row->st.completed, 3);
		assert_float_equal(row->st.memory_pct.internal_frag, want_ifrag, 1e-9);
	}
	/* paged at 8 and 16 tokens a block is run at each */
	assert_false(kvs_sweep_result_row(R, 1)->repeated);
	json_t *doc = kvs_json_jt(kvs_sweep_result_json(R, set));
	assert_non_null(doc);
	json_t *ps = json_object_get(json_object_get(doc, "engine"), "policies");
	assert_int_equal(json_array_size(ps), 2);
	assert_string_equal(json_string_value(json_array_get(ps, 1)), "padded");
	json_t *rows = json_object_get(doc, "rows");
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 3),
							      "policy")), "padded");
	/* a row carries the sweep figures of the metric table under their keys */
	const kvs_sweep_row *r3 = kvs_sweep_result_row(R, 3);
	for (int i = 0; i < KVS_M_COUNT_; i++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)i);
		json_t *v = json_object_get(json_array_get(rows, 3), m->key);
		assert_int_equal(v != NULL, (m->flags & KVS_MF_SWEEP) != 0);
		if (v && !json_is_null(v))
			assert_float_equal(json_number_value(v), kvs_metric_value(m->id, &r3->st),
					   1e-12);
	}
	json_decref(doc);
	kvs_sweep_result_destroy(R);
	kvs_request_set_destroy(set);
}


/* ---- the metric table ------------------------------------------------------- */

static void test_metric_table(void **state)
{
	(void)state;
	for (int i = 0; i < KVS_M_COUNT_; i++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)i);
		assert_non_null(m);
		assert_int_equal(m->id, i);
		assert_non_null(m->unit);
		assert_ptr_equal(kvs_metric_find(m->key), m);
		if (m->old_key)
			assert_ptr_equal(kvs_metric_find(m->old_key), m);
		/* a figure in policy objects has a place there */
		assert_int_equal((m->flags & KVS_MF_POLICY) != 0, m->group != NULL);
		if (m->label)
			assert_non_null(m->fmt);
		for (int j = 0; j < i; j++) {
			const kvs_metric_info *o = kvs_metric_get((kvs_metric_id)j);
			assert_true(strcmp(o->key, m->key) != 0);
			if (m->group && o->group)
				assert_false(strcmp(o->group, m->group) == 0 &&
					     strcmp(o->field, m->field) == 0);
		}
	}
	assert_null(kvs_metric_get(KVS_M_COUNT_));
	assert_null(kvs_metric_find("no_such_figure"));
	assert_ptr_equal(kvs_metric_find("metadata_bytes"), kvs_metric_get(KVS_M_METADATA_BYTES_MAX));
	assert_ptr_equal(kvs_metric_find("prefix_hit_rate"),
			 kvs_metric_get(KVS_M_PREFIX_HIT_RATE_TOKENS));

	kvs_request_set *set = small_set();
	kvs_sim_result *r;
	replay(KVS_POLICY_PAGED, set, &r);
	const kvs_sim_stats *st = kvs_sim_result_stats(r);
	/* by hand: three requests, all completed; waste is the three wasted parts */
	assert_float_equal(kvs_metric_value(KVS_M_ARRIVED, st), 3, 0);
	assert_float_equal(kvs_metric_value(KVS_M_COMPLETED, st), 3, 0);
	assert_float_equal(kvs_metric_value(KVS_M_SIM_TIME_S, st), 23.0, 1e-9);
	assert_float_equal(kvs_metric_value(KVS_M_WASTE_PCT, st),
			   st->memory_pct.reservation + st->memory_pct.internal_frag +
			   st->memory_pct.external_frag, 0);
	assert_float_equal(kvs_metric_value(KVS_M_TTFT_P99, st), st->ttft_s.p99, 0);
	assert_float_equal(kvs_metric_value(KVS_M_CONC_MAX, st), (double)st->concurrency_max, 0);

	json_t *o = kvs_json_jt(kvs_sim_result_json(r));
	for (int i = 0; i < KVS_M_COUNT_; i++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)i);
		if (!(m->flags & KVS_MF_POLICY))
			continue;
		json_t *g = *m->group ? json_object_get(o, m->group) : o;
		assert_non_null(g);
		json_t *v = json_object_get(g, m->field);
		if (!v)
			fail_msg("%s: no %s.%s in the policy object", m->key, m->group, m->field);
		if (json_is_null(v))
			continue;   /* wall time not recorded */
		assert_true((m->flags & KVS_MF_INT) ? json_is_integer(v) : json_is_real(v));
		assert_float_equal(json_number_value(v), kvs_metric_value(m->id, st), 1e-12);
	}
	json_decref(o);
	kvs_sim_result_destroy(r);
	kvs_request_set_destroy(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_rows),
		cmocka_unit_test(test_registered_policy_replay),
		cmocka_unit_test(test_registered_policy_sweep),
		cmocka_unit_test(test_metric_table),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
