/*
 * test_args.c - the CLI's argument iterator, strict number parsing and the
 * shared "model, GPU and deployment" flag group.  The CLI sources are not
 * part of libkvsim, so they are compiled into this test directly.
 */
#include "test_util.h"

#include "args.c"
#include "cli_deploy.c"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_parse_numbers(void **state)
{
	(void)state;
	uint64_t u = 7;
	assert_true(kvs_parse_u64("123", &u));
	assert_int_equal(u, 123);
	assert_true(kvs_parse_u64("18446744073709551615", &u));
	assert_int_equal(u, UINT64_MAX);
	u = 7;
	assert_false(kvs_parse_u64("18446744073709551616", &u));
	assert_false(kvs_parse_u64("", &u));
	assert_false(kvs_parse_u64("-1", &u));
	assert_false(kvs_parse_u64("+1", &u));
	assert_false(kvs_parse_u64("12a", &u));
	assert_false(kvs_parse_u64(" 1", &u));
	assert_false(kvs_parse_u64(NULL, &u));
	assert_int_equal(u, 7);
	double d = 0;
	assert_true(kvs_parse_double("0.9", &d));
	assert_true(d == 0.9);
	assert_true(kvs_parse_double("7e9", &d));
	assert_true(d == 7e9);
	assert_false(kvs_parse_double("abc", &d));
	assert_false(kvs_parse_double("1.5x", &d));
	assert_false(kvs_parse_double("inf", &d));
	assert_false(kvs_parse_double("nan", &d));
	assert_false(kvs_parse_double("1e999", &d));
	assert_false(kvs_parse_double("1e-400", &d));   /* underflows to 0 */
	assert_false(kvs_parse_double("0x10", &d));
	assert_false(kvs_parse_double(" 1", &d));
	assert_false(kvs_parse_double("", &d));
	assert_false(kvs_parse_double("0x10", &d));
	assert_false(kvs_parse_double(" 5", &d));
	assert_false(kvs_parse_double("infinity", &d));
	assert_true(kvs_parse_double("-2.5E-3", &d));
	assert_true(d == -2.5e-3);
}

/* vLLM's token counts: decimal suffixes read exactly, binary ones whole */
static void test_parse_tokens(void **state)
{
	(void)state;
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "8192", 8192 }, { "8k", 8000 }, { "8K", 8192 }, { "1.5k", 1500 },
		{ "1M", 1u << 20 }, { "1m", 1000000 }, { "2g", 2000000000 },
		{ "4.1m", 4100000 }, { "8.2m", 8200000 }, { "1.001k", 1001 },
		{ "1.005k", 1005 }, { "0.1k", 100 }, { "1.5000k", 1500 },
		{ "128.000001m", 128000001 }, { "1.k", 1000 },
		{ "18446744073709551.615k", UINT64_MAX },
		{ "18446744073709551615", UINT64_MAX },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(ok); i++) {
		uint64_t v = 0;
		assert_true(kvs_parse_tokens(ok[i].s, &v));
		assert_int_equal(v, ok[i].v);
	}
	static const char *const bad[] = {
		"1.0005k",  /* 1000.5: not a whole number */
		"4.10000001m", "0.5", "1.5K", "1e3", "", "k", ".5k", "1..5k", "1.5.k",
		"-1k", "+1k", "1 k", "1kk", "18446744073709551.616k", "18446744073709552k",
		"18446744073709551616", "17179869184G", "0x10k",
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(bad); i++) {
		uint64_t v = 7;
		if (kvs_parse_tokens(bad[i], &v))
			fail_msg("'%s' read as %llu", bad[i], (unsigned long long)v);
		assert_int_equal(v, 7);
	}
}

static void test_iterator(void **state)
{
	(void)state;
	char *argv[] = { "size", "--model", "llama-3-8b", "--tp=4", "pos", "-5", "--json",
			 "--context", NULL };
	kvs_args it;
	const char *pos = NULL;
	kvs_args_init(&it, "size", 8, argv, NULL);
	assert_true(kvs_args_next(&it, &pos));
	assert_true(kvs_args_is(&it, "--model"));
	assert_string_equal(kvs_args_value(&it), "llama-3-8b");
	assert_true(kvs_args_next(&it, &pos));
	assert_true(kvs_args_is(&it, "--tp"));
	uint32_t tp = 0;
	assert_true(kvs_args_u32(&it, 1, 64, &tp));
	assert_int_equal(tp, 4);
	assert_true(kvs_args_next(&it, &pos));
	assert_null(it.flag);
	assert_string_equal(pos, "pos");
	assert_true(kvs_args_next(&it, &pos)); /* "-5" is a value, not a flag */
	assert_null(it.flag);
	assert_string_equal(pos, "-5");
	assert_true(kvs_args_next(&it, &pos));
	assert_true(kvs_args_is(&it, "--json"));
	assert_true(kvs_args_next(&it, &pos));
	assert_true(kvs_args_is(&it, "--context"));
	assert_false(it.error);
	assert_null(kvs_args_value(&it)); /* missing value */
	assert_true(it.error);
	assert_false(kvs_args_next(&it, &pos));
}

static void test_typed_values(void **state)
{
	(void)state;
	char *argv[] = { "x", "--n", "0", "--n", "abc", "--n", "99", "--f", "2.5",
			 "--b", "80GB", "--b", "80", NULL };
	kvs_args it;
	const char *pos;
	uint64_t u = 5;
	double d = 0;
	kvs_args_init(&it, "x", 13, argv, NULL);
	kvs_args_next(&it, &pos);
	assert_false(kvs_args_u64(&it, 1, 10, &u));  /* below min */
	kvs_args_next(&it, &pos);
	assert_false(kvs_args_u64(&it, 1, 10, &u));  /* not a number */
	kvs_args_next(&it, &pos);
	assert_false(kvs_args_u64(&it, 1, 10, &u));  /* above max */
	assert_int_equal(u, 5);
	kvs_args_next(&it, &pos);
	assert_true(kvs_args_double(&it, 0, 10, &d));
	assert_true(d == 2.5);
	kvs_args_next(&it, &pos);
	assert_true(kvs_args_bytes(&it, &u));
	assert_int_equal(u, 80000000000ull);
	kvs_args_next(&it, &pos);
	assert_false(kvs_args_bytes(&it, &u));
}

static void test_given_before(void **state)
{
	(void)state;
	char *argv[] = { "trace", "--time-scale=1", "--title", "x", "--rate", "2",
			 "--time-scales", "3", "--seed", "1", NULL };
	kvs_args it;
	const char *pos;
	kvs_args_init(&it, "trace", 10, argv, NULL);
	assert_true(kvs_args_next(&it, &pos));
	assert_false(kvs_args_given_before(&it, "--time-scale"));  /* itself */
	assert_true(kvs_args_next(&it, &pos));
	assert_non_null(kvs_args_value(&it));
	assert_true(kvs_args_next(&it, &pos));
	assert_true(kvs_args_is(&it, "--rate"));
	assert_true(kvs_args_given_before(&it, "--time-scale"));
	assert_false(kvs_args_given_before(&it, "--rate"));
	assert_non_null(kvs_args_value(&it));
	assert_true(kvs_args_next(&it, &pos));
	assert_non_null(kvs_args_value(&it));
	assert_true(kvs_args_next(&it, &pos));
	assert_true(kvs_args_is(&it, "--seed"));
	assert_true(kvs_args_given_before(&it, "--rate"));
	assert_true(kvs_args_given_before(&it, "--time-scales"));
	assert_false(kvs_args_given_before(&it, "--time"));      /* a prefix only */
	assert_false(kvs_args_given_before(&it, "--seed"));
}

/* A help text that mentions a flag the command does not take ("--csv
 * alike") beside the ones it does. */
static void help_with_mention(FILE *f)
{
	fputs("  --json [FILE]   one JSON object\n"
	      "  (--json FILE.json: the file; --csv alike with FILE.csv)\n"
	      "  --seed N        seed\n", f);
}

static void test_suggest_flag(void **state)
{
	(void)state;
	char buf[64];
	/* never the word typed, even when the help names it */
	const char *s = kvs_cli_suggest_flag(help_with_mention, "--csv", buf, sizeof buf);
	assert_true(s == NULL || strcmp(s, "--csv") != 0);
	s = kvs_cli_suggest_flag(help_with_mention, "--jsno", buf, sizeof buf);
	assert_non_null(s);
	assert_string_equal(s, "--json");
	s = kvs_cli_suggest_flag(help_with_mention, "-seed", buf, sizeof buf);
	assert_non_null(s);
	assert_string_equal(s, "--seed");
	s = kvs_cli_suggest_flag(help_with_mention, "--sed", buf, sizeof buf);
	assert_non_null(s);
	assert_string_equal(s, "--seed");
}

static void test_same_file(void **state)
{
	(void)state;
	const char *tmpdir = getenv("TMPDIR");
	char d[256], a[300], b[300], c[300];
	snprintf(d, sizeof d, "%s/kvsim-args-XXXXXX", tmpdir ? tmpdir : "/tmp");
	assert_non_null(mkdtemp(d));
	snprintf(a, sizeof a, "%s/a.csv", d);
	FILE *f = fopen(a, "w");
	assert_non_null(f);
	fclose(f);
	/* an existing file: by device and inode, through links */
	snprintf(b, sizeof b, "%s/./a.csv", d);
	assert_true(kvs_cli_same_file(a, b));
	snprintf(b, sizeof b, "%s/link.csv", d);
	assert_int_equal(symlink(a, b), 0);
	assert_true(kvs_cli_same_file(a, b));
	snprintf(c, sizeof c, "%s/hard.csv", d);
	assert_int_equal(link(a, c), 0);
	assert_true(kvs_cli_same_file(c, b));
	snprintf(b, sizeof b, "%s/b.csv", d);
	assert_false(kvs_cli_same_file(a, b));
	/* files still to be written: by resolved directory and name */
	snprintf(c, sizeof c, "%s/sub", d);
	assert_int_equal(mkdir(c, 0700), 0);
	snprintf(a, sizeof a, "%s/x.json", d);
	snprintf(b, sizeof b, "%s/sub/../x.json", d);
	assert_true(kvs_cli_same_file(a, b));
	snprintf(b, sizeof b, "%s//x.json", d);
	assert_true(kvs_cli_same_file(a, b));
	snprintf(b, sizeof b, "%s/sub/x.json", d);
	assert_false(kvs_cli_same_file(a, b));
	assert_true(kvs_cli_same_file("-", "-"));
	assert_false(kvs_cli_same_file("-", a));

	/* the check: an output over an input or another output is refused;
	 * standard input against standard output and devices are not */
	snprintf(a, sizeof a, "%s/a.csv", d);
	snprintf(b, sizeof b, "%s/link.csv", d);
	kvs_cli_path over_input[] = { { "the trace", a, true }, { "--json", NULL, false },
				      { "--requests", b, false } };
	assert_false(kvs_cli_paths_check("test", over_input, 3));
	kvs_cli_path two_inputs[] = { { "the trace", a, true }, { "--table", b, true } };
	assert_true(kvs_cli_paths_check("test", two_inputs, 2));
	kvs_cli_path stdio[] = { { "the trace", "-", true }, { "--json", "-", false } };
	assert_true(kvs_cli_paths_check("test", stdio, 2));
	kvs_cli_path stdouts[] = { { "--json", "-", false }, { "--csv", "-", false } };
	assert_false(kvs_cli_paths_check("test", stdouts, 2));
	kvs_cli_path sinks[] = { { "--json", "/dev/null", false },
				 { "--csv", "/dev/null", false } };
	assert_true(kvs_cli_paths_check("test", sinks, 2));
	snprintf(c, sizeof c, "%s/sub/../x.json", d);
	snprintf(b, sizeof b, "%s/x.json", d);
	kvs_cli_path outputs[] = { { "--json", b, false }, { "--csv", c, false } };
	assert_false(kvs_cli_paths_check("test", outputs, 2));

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
}

/* Parse argv through the deployment group; returns the last arg result. */
static int deploy_parse(kvs_cli_deploy *c, int argc, char **argv)
{
	kvs_args it;
	const char *pos;
	int r = 1;
	kvs_args_init(&it, "test", argc, argv, NULL);
	kvs_cli_deploy_init(c, "llama-2-7b", "a100-80gb");
	while (r == 1 && kvs_args_next(&it, &pos))
		r = kvs_cli_deploy_arg(&it, c);
	return r;
}

#define PARSE(c, ...)                                                        \
	({                                                                   \
		char *argv_[] = { "test", __VA_ARGS__, NULL };               \
		deploy_parse((c), (int)KVS_ARRAY_LEN(argv_) - 1, argv_);     \
	})

static void test_deploy_group(void **state)
{
	(void)state;
	kvs_cli_deploy c;
	assert_int_equal(PARSE(&c, "--model", "llama-2-70b", "--gpu", "h100-80gb", "--tp", "4",
			       "--kv-cache-dtype", "fp8", "--block-size", "32", "--context",
			       "8000", "--reserve", "2GiB", "--gpu-memory-utilization", "0.95",
			       "--gpu-hour-price", "2.5", "--kv-quant-group", "64"), 1);
	assert_true(kvs_cli_deploy_finish(&c, "test"));
	assert_string_equal(c.d.model.name, "llama-2-70b");
	assert_string_equal(c.d.gpu.name, "h100-80gb");
	assert_int_equal(c.d.tp, 4);
	assert_int_equal(c.d.kv_dtype, KVS_DTYPE_FP8);
	assert_int_equal(c.d.weight_dtype, KVS_DTYPE_FP16);
	assert_int_equal(c.d.block_size, 32);
	assert_int_equal(c.d.context_tokens, 8000);
	assert_int_equal(c.d.reserve_bytes, 2ll << 30);
	assert_true(c.d.gpu_memory_utilization == 0.95);
	assert_true(c.d.gpu_hour_price == 2.5);
	assert_int_equal(c.d.kv_quant_group, 64);
	assert_true(c.set_context && c.set_block_size);

	/* defaults: the context stops at max_model_len */
	assert_int_equal(PARSE(&c, "--model", "opt-13b"), 1);
	assert_true(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.d.context_tokens, 2048);
	assert_int_equal(PARSE(&c, "--max-model-len", "1000"), 1);
	assert_true(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.d.context_tokens, 1000);
	assert_int_equal(c.d.max_model_len, 1000);
	assert_int_equal(c.d.reserve_bytes, -1);

	/* overrides re-estimate the parameters unless given */
	assert_int_equal(PARSE(&c, "--layers", "16", "--kv-heads", "8"), 1);
	assert_true(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.d.model.num_layers, 16);
	assert_int_equal(c.d.model.num_kv_heads, 8);
	uint64_t layer = 2 * 4096ull * 4096 + 2 * 4096ull * 1024 + 3 * 4096ull * 11008 + 2 * 4096;
	assert_int_equal(c.d.model.num_params, 16 * layer + 2 * 32000ull * 4096 + 4096);
	assert_int_equal(PARSE(&c, "--params", "7e9", "--head-dim", "64", "--reserve", "0"), 1);
	assert_true(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.d.model.num_params, 7000000000ull);
	assert_int_equal(c.d.model.head_dim, 64);
	assert_int_equal(c.d.reserve_bytes, 0);
	assert_int_equal(PARSE(&c, "--gpu-mem", "79.2GiB"), 1);
	assert_true(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.d.gpu.mem_bytes, 85040352461ull);

	/* not ours */
	assert_int_equal(PARSE(&c, "--json"), 0);
	/* ours but bad */
	assert_int_equal(PARSE(&c, "--tp", "0"), -1);
	assert_int_equal(PARSE(&c, "--tp", "-2"), -1);
	assert_int_equal(PARSE(&c, "--context", "1e3"), -1);
	assert_int_equal(PARSE(&c, "--context", "99999999999999999999999"), -1);
	assert_int_equal(PARSE(&c, "--gpu-memory-utilization", "0"), -1);
	assert_int_equal(PARSE(&c, "--gpu-memory-utilization", "1.01"), -1);
	assert_int_equal(PARSE(&c, "--gpu-mem", "80"), -1);
	assert_int_equal(PARSE(&c, "--reserve", "5"), -1);
	assert_int_equal(PARSE(&c, "--params", "0"), -1);
	assert_int_equal(PARSE(&c, "--params", "-1"), -1);
	assert_int_equal(PARSE(&c, "--gpu-hour-price", "0"), -1);

	/* finish refuses with the right exit code */
	assert_int_equal(PARSE(&c, "--model", "nope"), 1);
	assert_false(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.fail_exit, KVS_EXIT_USAGE);
	assert_int_equal(PARSE(&c, "--gpu", "nope"), 1);
	assert_false(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.fail_exit, KVS_EXIT_USAGE);
	const char *bad = kvs_test_write_tmp("cfg.json", "{\"hidden_size\": 1}");
	assert_int_equal(PARSE(&c, "--model", (char *)bad), 1);
	assert_false(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.fail_exit, KVS_EXIT_FAIL);
	assert_int_equal(PARSE(&c, "--tp", "3"), 1);
	assert_false(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.fail_exit, KVS_EXIT_USAGE);
	assert_int_equal(PARSE(&c, "--kv-cache-dtype", "fp7"), 1);
	assert_false(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(PARSE(&c, "--context", "1000000000000000000"), 1);
	assert_false(kvs_cli_deploy_finish(&c, "test"));
	assert_int_equal(c.fail_exit, KVS_EXIT_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_parse_tokens),
		cmocka_unit_test(test_iterator),
		cmocka_unit_test(test_typed_values),
		cmocka_unit_test(test_given_before),
		cmocka_unit_test(test_suggest_flag),
		cmocka_unit_test(test_same_file),
		cmocka_unit_test(test_deploy_group),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
