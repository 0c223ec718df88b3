/*
 * test_plan.c - SHA-256 against the FIPS 180-4 example vectors, the point
 * files' field tables against the structs, and a sweep split into points,
 * run in pieces into a directory and merged: the same result as the
 * threaded kvs_sweep_run, field for field and JSON byte for byte.
 */
#include "kvs_config.h"
#include "test_util.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kvsim/kvsim.h"
#include "../sweep/sweep_internal.h"
#include "common/json.h"

static void hex_of(const char *msg, size_t n, char out[KVS_SHA256_HEX])
{
	kvs_sha256_text(msg, n, out);
}

/* FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf") */
static void test_sha256_vectors(void **state)
{
	(void)state;
	char h[KVS_SHA256_HEX];
	hex_of("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(m448, strlen(m448), h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
			   "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	hex_of(m896, strlen(m896), h);
	assert_string_equal(h, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
	/* one million 'a', fed in uneven pieces to cross every buffer state */
	static char a[1000];
	memset(a, 'a', sizeof a);
	kvs_sha256 s;
	uint8_t d[KVS_SHA256_BYTES];
	kvs_sha256_init(&s);
	size_t left = 1000000, k = 0;
	while (left) {
		size_t n = 1 + (k++ * 37) % 999;
		if (n > left)
			n = left;
		kvs_sha256_update(&s, a, n);
		left -= n;
	}
	kvs_sha256_final(&s, d);
	kvs_sha256_hex(d, h);
	assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* every split of a 130-byte message gives the one-shot digest */
	char msg[130], whole[KVS_SHA256_HEX];
	for (size_t i = 0; i < sizeof msg; i++)
		msg[i] = (char)(i * 7 + 1);
	hex_of(msg, sizeof msg, whole);
	for (size_t cut = 0; cut <= sizeof msg; cut++) {
		kvs_sha256_init(&s);
		kvs_sha256_update(&s, msg, cut);
		kvs_sha256_update(&s, msg + cut, sizeof msg - cut);
		kvs_sha256_final(&s, d);
		kvs_sha256_hex(d, h);
		assert_string_equal(h, whole);
	}
	/* a file's digest is its bytes' digest */
	const char *f = kvs_test_write_tmp("sha.txt", "abc");
	assert_int_equal(kvs_sha256_file(f, h), KVS_OK);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(kvs_sha256_file("/nonexistent/x", h), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "/nonexistent/x"));
}

static void test_point_fields_cover_structs(void **state)
{
	(void)state;
	char err[256] = "";
	bool ok = kvs_sweep_point_fields_check(err, sizeof err);
	if (!ok)
		fail_msg("%s", err);
}

static kvs_request_set *sample_set(const char *rel)
{
	kvs_trace_opts to;
	kvs_trace_opts_defaults(&to);
	to.block_size = 0;
	to.limit = kvs_test_scaled(400, 60); /* fewer under sanitizers */
	to.max_model_len = 4096;
	kvs_request_set *set = NULL;
	assert_int_equal(kvs_request_set_load(kvs_test_src(rel), &to, &set), KVS_OK);
	return set;
}

static void sweep_cfg(kvs_sweep_config *c, bool capacity)
{
	kvs_sim_config base;
	kvs_deploy d;
	kvs_test_deploy(&d, "llama-2-7b", "a100-80gb");
	kvs_sim_config_defaults(&base, &d);
	kvs_sweep_config_defaults(c, &base);
	assert_int_equal(kvs_sweep_parse_block_sizes(capacity ? "16,64" : "8,16,32", c), KVS_OK);
	assert_int_equal(kvs_sweep_parse_policies("paged,max,oracle", c), KVS_OK);
	c->jobs = 2;
	if (capacity) {
		c->find_max_rate = true;
		c->slo_ttft_s = 2;
		c->slo_tpot_s = 0.1;
		c->rate_tolerance = 0.1;
	}
}

static char *doc_text(const kvs_sweep_result *r, const kvs_request_set *set)
{
	json_t *doc = kvs_json_jt(kvs_sweep_result_json(r, set));
	assert_non_null(doc);
	/* 17 digits: every double exactly, not the files' 12 */
	char *t = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	json_decref(doc);
	assert_non_null(t);
	return t;
}

static void plan_round_trip(bool capacity)
{
	kvs_request_set *set = sample_set("traces/samples/azure-conv-sample.csv");
	const char *trace = kvs_test_src("traces/samples/azure-conv-sample.csv");
	kvs_sweep_config c;
	sweep_cfg(&c, capacity);
	kvs_sweep_result *ref = NULL;
	assert_int_equal(kvs_sweep_run(&c, set, &ref), KVS_OK);

	const char *args[] = { "--block-sizes", "x" };
	kvs_sweep_plan *p = NULL;
	assert_int_equal(kvs_sweep_plan_create(&c, set, trace, args, 2, &p), KVS_OK);
	/* paged at each block size, max and oracle once each */
	assert_int_equal(kvs_sweep_plan_points(p), c.nblock_sizes + 2);
	char dir[] = "/tmp/kvs-plan-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char plan_path[64];
	snprintf(plan_path, sizeof plan_path, "%s/plan.json", dir);
	assert_int_equal(kvs_sweep_plan_write(p, plan_path), KVS_OK);
	char out[64];
	snprintf(out, sizeof out, "%s/out", dir);
	size_t n = kvs_sweep_plan_points(p), ran = 0, skipped = 0;

	/* the loaded plan is the written one; bound, it runs points in pieces */
	kvs_sweep_plan *q = NULL;
	assert_int_equal(kvs_sweep_plan_load(plan_path, &q), KVS_OK);
	assert_string_equal(kvs_sweep_plan_id(q), kvs_sweep_plan_id(p));
	const char *const *qa;
	assert_int_equal(kvs_sweep_plan_args(q, &qa), 2);
	assert_string_equal(qa[1], "x");
	assert_int_equal(kvs_sweep_plan_bind(q, &c, set, trace), KVS_OK);
	assert_int_equal(kvs_sweep_plan_run_points(q, 0, 1, out, 1, &ran, &skipped), KVS_OK);
	assert_int_equal(ran, 2);
	assert_int_equal(skipped, 0);
	/* merge with points missing names them */
	kvs_sweep_result *m = NULL;
	assert_int_equal(kvs_sweep_plan_merge(q, out, &m), KVS_ERR_IO);
	char want[64];
	snprintf(want, sizeof want, "%zu of %zu points missing: 2-%zu", n - 2, n, n - 1);
	assert_non_null(strstr(kvs_last_error(), want));
	assert_int_equal(kvs_sweep_plan_bind(q, &c, set, trace), KVS_OK);
	/* a rerun over everything skips what is done */
	assert_int_equal(kvs_sweep_plan_run_points(q, 0, n - 1, out, 2, &ran, &skipped), KVS_OK);
	assert_int_equal(ran, n - 2);
	assert_int_equal(skipped, 2);
	assert_int_equal(kvs_sweep_plan_run_points(q, n, n, out, 1, NULL, NULL), KVS_ERR_INVALID);
	assert_int_equal(kvs_sweep_plan_merge(q, out, &m), KVS_OK);

	/* the same result, field for field (padding aside: compare by JSON too) */
	assert_int_equal(kvs_sweep_result_rows(m), kvs_sweep_result_rows(ref));
	assert_int_equal(kvs_sweep_result_simulations(m), kvs_sweep_result_simulations(ref));
	for (size_t i = 0; i < kvs_sweep_result_rows(ref); i++) {
		const kvs_sweep_row *a = kvs_sweep_result_row(ref, i), *b = kvs_sweep_result_row(m, i);
		assert_int_equal(a->block_size, b->block_size);
		assert_memory_equal(&a->st.memory_pct, &b->st.memory_pct, sizeof a->st.memory_pct);
		assert_memory_equal(&a->st.ttft_s, &b->st.ttft_s, sizeof a->st.ttft_s);
		assert_true(a->st.output_tokens_per_s == b->st.output_tokens_per_s);
		assert_int_equal(a->meets_slo, b->meets_slo);
	}
	assert_int_equal(kvs_sweep_result_capacities(m), kvs_sweep_result_capacities(ref));
	for (size_t i = 0; i < kvs_sweep_result_capacities(ref); i++) {
		const kvs_sweep_capacity *a = kvs_sweep_result_capacity(ref, i);
		const kvs_sweep_capacity *b = kvs_sweep_result_capacity(m, i);
		assert_true(a->max_rate == b->max_rate && a->fail_rate == b->fail_rate);
		assert_int_equal(a->simulations, b->simulations);
		assert_int_equal(a->repeated, b->repeated);
	}
	char *ta = doc_text(ref, set), *tb = doc_text(m, set);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	kvs_sweep_result_destroy(m);

	/* another configuration's plan refuses these point files, naming one */
	kvs_sweep_config c2 = c;
	c2.kernel_block_overhead = 2.0;
	kvs_sweep_plan *p2 = NULL;
	assert_int_equal(kvs_sweep_plan_create(&c2, set, trace, args, 2, &p2), KVS_OK);
	assert_string_not_equal(kvs_sweep_plan_id(p2), kvs_sweep_plan_id(p));
	assert_int_equal(kvs_sweep_plan_merge(p2, out, &m), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "point-000000.json: from another plan"));
	/* binding the plan to another configuration names the key that differs */
	assert_int_equal(kvs_sweep_plan_bind(q, &c2, set, trace), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "config.sweep.kernel_block_overhead"));
	/* and to another trace names both digests */
	const char *other = kvs_test_src("traces/samples/mooncake-sample.jsonl");
	assert_int_equal(kvs_sweep_plan_bind(q, &c, set, other), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "not the plan's trace"));

	kvs_sweep_plan_destroy(p2);
	kvs_sweep_plan_destroy(q);
	kvs_sweep_plan_destroy(p);
	kvs_sweep_result_destroy(ref);
	kvs_request_set_destroy(set);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_plan_rows(void **state)
{
	(void)state;
	plan_round_trip(false);
}

static void test_plan_capacity(void **state)
{
	(void)state;
	plan_round_trip(true);
}

/* A plan edited by hand no longer matches its id. */
static void test_plan_edited(void **state)
{
	(void)state;
	kvs_request_set *set = sample_set("traces/samples/azure-conv-sample.csv");
	const char *trace = kvs_test_src("traces/samples/azure-conv-sample.csv");
	kvs_sweep_config c;
	sweep_cfg(&c, false);
	kvs_sweep_plan *p = NULL;
	assert_int_equal(kvs_sweep_plan_create(&c, set, trace, NULL, 0, &p), KVS_OK);
	const char *path = kvs_test_write_tmp("plan.json", "");
	assert_int_equal(kvs_sweep_plan_write(p, path), KVS_OK);
	json_error_t e;
	json_t *doc = json_load_file(path, 0, &e);
	assert_non_null(doc);
	json_object_set_new(json_object_get(doc, "trace"), "requests", json_integer(1));
	assert_int_equal(json_dump_file(doc, path, JSON_INDENT(1)), 0);
	json_decref(doc);
	kvs_sweep_plan *q = NULL;
	assert_int_equal(kvs_sweep_plan_load(path, &q), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "plan_id does not match"));
	assert_null(q);
	kvs_sweep_plan_destroy(p);
	kvs_request_set_destroy(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_point_fields_cover_structs),
		cmocka_unit_test(test_plan_rows),
		cmocka_unit_test(test_plan_capacity),
		cmocka_unit_test(test_plan_edited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
