/* test_trace_bad.c - malformed input: every error names file, line, field
 * and reason; --skip-bad-lines skips and counts; the counters add up; no
 * input crashes the reader or makes it grow without bound. */
#include "test_util.h"
#include "kvsim/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static kvs_trace_stats stats;
static char first_skip[512];

/* Read to the end; returns the final status, *n the requests yielded. */
static kvs_status run(const char *path, const kvs_trace_opts *o, uint64_t *n)
{
	kvs_trace *t;
	*n = 0;
	first_skip[0] = '\0';
	kvs_status st = kvs_trace_open(path, o, &t);
	if (st != KVS_OK)
		return st;
	kvs_request r;
	while ((st = kvs_trace_next(t, &r)) == KVS_OK)
		(*n)++;
	stats = *kvs_trace_get_stats(t);
	snprintf(first_skip, sizeof first_skip, "%s", kvs_trace_first_skip(t));
	if (st != KVS_END) {
		/* the error sticks */
		assert_int_equal(kvs_trace_next(t, &r), st);
	}
	kvs_trace_close(t);
	assert_true(kvs_trace_stats_balanced(&stats));
	return st;
}

static const char *AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

/* Expect a parse error whose message contains `msg`. */
static void expect(const char *name, const char *body, kvs_status want, const char *msg)
{
	const char *p = body ? kvs_test_write_tmp(name, body) : "/nonexistent/missing.csv";
	uint64_t n;
	kvs_status st = run(p, NULL, &n);
	if (st != want || !strstr(kvs_last_error(), msg))
		fail_msg("%s: status %d, message '%s'; wanted %d and '%s'", name, st,
			 kvs_last_error(), want, msg);
	if (body)
		unlink(p);
}

static char *azure_with(const char *bad_row)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s2023-11-16 18:15:46.6805900,374,44\n%s\n"
		 "2023-11-16 18:15:51.2224670,879,55\n", AZ, bad_row);
	return buf;
}

static void test_empty_and_headers(void **state)
{
	(void)state;
	expect("empty.csv", "", KVS_ERR_PARSE, "empty.csv: empty file");
	expect("blank.csv", "\n  \n\n", KVS_ERR_PARSE, "blank.csv: no header and no requests");
	expect("nohdr.csv", "1,2,3\n", KVS_ERR_PARSE,
	       "nohdr.csv:1: header: unrecognised header \"1,2,3\"");
	expect("hdronly.csv", "TIMESTAMP,ContextTokens\n", KVS_ERR_PARSE,
	       "hdronly.csv:1: header: unrecognised header");
	uint64_t n;
	/* a header and no rows is a valid, empty trace */
	const char *p = kvs_test_write_tmp("zero.csv", AZ);
	assert_int_equal(run(p, NULL, &n), KVS_END);
	assert_int_equal(n, 0);
	assert_int_equal(stats.header_lines, 1);
	unlink(p);
	expect("missing.csv", NULL, KVS_ERR_IO, "cannot open");
}

static void test_binary_junk(void **state)
{
	(void)state;
	char junk[600];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)((i * 37 + 11) % 256);
	junk[sizeof junk - 1] = '\0';
	const char *p = kvs_test_write_tmp("junk.bin", "");
	FILE *f = fopen(p, "wb");
	fwrite(junk, 1, sizeof junk, f);
	fclose(f);
	uint64_t n;
	kvs_status st = run(p, NULL, &n);
	assert_int_equal(st, KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "junk.bin:1: "));
	unlink(p);
	/* a NUL inside a number */
	p = kvs_test_write_tmp("nul.csv", "");
	f = fopen(p, "wb");
	fputs(AZ, f);
	fwrite("2023-11-16 18:15:46.6805900,3\0004,44\n", 1, 36, f);
	fclose(f);
	assert_int_equal(run(p, NULL, &n), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(),
			       "nul.csv:2: ContextTokens: expected an integer, got \"3\\x004\""));
	unlink(p);
}

static void test_bad_fields(void **state)
{
	(void)state;
	expect("neg.csv", azure_with("2023-11-16 18:15:50.9951690,-5,10"), KVS_ERR_PARSE,
	       "neg.csv:3: ContextTokens: negative value, got \"-5\"");
	expect("huge.csv", azure_with("2023-11-16 18:15:50.9951690,99999999999,10"), KVS_ERR_PARSE,
	       "huge.csv:3: ContextTokens: too large, got \"99999999999\"");
	expect("huger.csv", azure_with("2023-11-16 18:15:50.9951690,5,"
				       "123456789012345678901234567890"),
	       KVS_ERR_PARSE, "huger.csv:3: GeneratedTokens: too large");
	expect("word.csv", azure_with("2023-11-16 18:15:50.9951690,abc,10"), KVS_ERR_PARSE,
	       "word.csv:3: ContextTokens: expected an integer, got \"abc\"");
	expect("frac.csv", azure_with("2023-11-16 18:15:50.9951690,12.5,10"), KVS_ERR_PARSE,
	       "frac.csv:3: ContextTokens: expected an integer, not a fraction");
	expect("zero.csv", azure_with("2023-11-16 18:15:50.9951690,0,10"), KVS_ERR_PARSE,
	       "zero.csv:3: ContextTokens: must be at least 1 token");
	expect("zout.csv", azure_with("2023-11-16 18:15:50.9951690,10,0"), KVS_ERR_PARSE,
	       "zout.csv:3: GeneratedTokens: must be at least 1 token");
	expect("date.csv", azure_with("2023-13-16 18:15:50.9951690,10,10"), KVS_ERR_PARSE,
	       "date.csv:3: TIMESTAMP: date or time out of range");
	/* Gregorian leap years: 2024 and 2000, not 2023 or 2100 */
	expect("feb29.csv", azure_with("2023-02-29 18:15:50.9951690,10,10"), KVS_ERR_PARSE,
	       "feb29.csv:3: TIMESTAMP: date or time out of range, got \"2023-02-29 18:15:50.9951690\"");
	expect("feb30.csv", azure_with("2024-02-30 18:15:50.9951690,10,10"), KVS_ERR_PARSE,
	       "feb30.csv:3: TIMESTAMP: date or time out of range");
	char leap[256];
	snprintf(leap, sizeof leap, "%s2100-02-28 23:59:59,10,10\n2100-02-29 00:00:00,10,10\n", AZ);
	expect("y2100.csv", leap, KVS_ERR_PARSE, "y2100.csv:3: TIMESTAMP: date or time out of range");
	/* ... and the days between are counted as such */
	snprintf(leap, sizeof leap, "%s2000-02-29 00:00:00,10,10\n2024-02-29 00:00:00,10,10\n"
		 "2100-02-28 00:00:00,10,10\n2100-03-01 00:00:00,10,10\n", AZ);
	const char *p = kvs_test_write_tmp("leap.csv", leap);
	kvs_trace *t;
	kvs_request r;
	static const double days[] = { 0, 8766, 36524, 36525 };
	assert_int_equal(kvs_trace_open(p, NULL, &t), KVS_OK);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(kvs_trace_next(t, &r), KVS_OK);
		assert_true(r.arrival_s == days[i] * 86400);
	}
	assert_int_equal(kvs_trace_next(t, &r), KVS_END);
	kvs_trace_close(t);
	unlink(p);
	expect("time.csv", azure_with("yesterday,10,10"), KVS_ERR_PARSE,
	       "time.csv:3: TIMESTAMP: expected a time YYYY-MM-DD hh:mm:ss");
	expect("short.csv", azure_with("2023-11-16 18:15:50.9951690,10"), KVS_ERR_PARSE,
	       "short.csv:3: row: 2 fields, expected 3 as in the header");
	expect("long.csv", azure_with("2023-11-16 18:15:50.9951690,10,10,10"), KVS_ERR_PARSE,
	       "long.csv:3: row: 4 fields, expected 3");
	expect("quote.csv", azure_with("\"2023-11-16 18:15:50.9951690,10,10"), KVS_ERR_PARSE,
	       "quote.csv:3: row: unterminated quoted field");
	expect("quote2.csv", azure_with("2023-11-16 18:15:50.9951690,1\"0,10"), KVS_ERR_PARSE,
	       "quote2.csv:3: row: malformed quoting");
	expect("negsec.csv", "arrival_s,prompt_tokens,output_tokens\n-1.5,10,10\n",
	       KVS_ERR_PARSE, "negsec.csv:2: arrival_s: negative value");
	expect("bigsec.csv", "arrival_s,prompt_tokens,output_tokens\n1e300,10,10\n",
	       KVS_ERR_PARSE, "bigsec.csv:2: arrival_s: too large");
	expect("hashes.csv",
	       "arrival_s,prompt_tokens,output_tokens,hash_block_tokens,hash_ids\n"
	       "0,40,1,16,1 2 x\n", KVS_ERR_PARSE,
	       "hashes.csv:2: hash_ids: id 3: expected an integer, got \"x\"");
	expect("hashes2.csv",
	       "arrival_s,prompt_tokens,output_tokens,hash_block_tokens,hash_ids\n"
	       "0,40,1,16,1 2\n1,40,1,32,1 2\n", KVS_ERR_PARSE,
	       "hashes2.csv:3: hash_block_tokens: 32 differs from the 16 of earlier lines");
	expect("hashes3.csv",
	       "arrival_s,prompt_tokens,output_tokens,hash_ids\n0,40,1,1 2\n", KVS_ERR_PARSE,
	       "hashes3.csv:2: hash_block_tokens: missing or 0 while hash_ids are given");
	char many[400] = "arrival_s,prompt_tokens,output_tokens\n0,1,1";
	for (int i = 0; i < 70; i++)
		strcat(many, ",1");
	expect("many.csv", many, KVS_ERR_PARSE, "many.csv:2: row: more than 64 fields");
}

static void test_bad_json(void **state)
{
	(void)state;
	const char *ok = "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, "
			 "\"hash_ids\": [1, 2]}\n";
	char buf[1024];
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"input_length\": 5,\n", ok);
	expect("trunc.jsonl", buf, KVS_ERR_PARSE, "trunc.jsonl:2: json: ");
	snprintf(buf, sizeof buf, "%s[1, 2]\n", ok);
	expect("arr.jsonl", buf, KVS_ERR_PARSE, "arr.jsonl:2: json: expected an object");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"output_length\": 5}\n", ok);
	expect("miss.jsonl", buf, KVS_ERR_PARSE, "miss.jsonl:2: input_length: missing");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": -1, \"input_length\": 5, "
		 "\"output_length\": 5}\n", ok);
	expect("negts.jsonl", buf, KVS_ERR_PARSE, "negts.jsonl:2: timestamp: negative value");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"input_length\": \"5\", "
		 "\"output_length\": 5}\n", ok);
	expect("str.jsonl", buf, KVS_ERR_PARSE, "str.jsonl:2: input_length: expected a number");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"input_length\": 1000, "
		 "\"output_length\": 5, \"hash_ids\": [1, 2, 3]}\n", ok);
	expect("ids.jsonl", buf, KVS_ERR_PARSE,
	       "ids.jsonl:2: hash_ids: 3 ids for 1000 prompt tokens, more than the 2 blocks of 512");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"input_length\": 1000, "
		 "\"output_length\": 5, \"hash_ids\": [1, -2]}\n", ok);
	expect("negid.jsonl", buf, KVS_ERR_PARSE,
	       "negid.jsonl:2: hash_ids: element 1: expected a non-negative integer");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"input_length\": 99999999999, "
		 "\"output_length\": 5}\n", ok);
	expect("bigjs.jsonl", buf, KVS_ERR_PARSE, "bigjs.jsonl:2: input_length: too large");
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 1, \"timestamp\": 2, \"input_length\": 9, "
		 "\"output_length\": 5}\n", ok);
	expect("dup.jsonl", buf, KVS_ERR_PARSE, "dup.jsonl:2: json: duplicate object key");
	expect("what.jsonl", "{\"a\": 1}\n", KVS_ERR_PARSE,
	       "what.jsonl:1: json: unrecognised record");
	/* integral reals at the top of each range: 2^64 (what UINT64_MAX
	 * rounds to as a double) and 2^32 are out, the largest doubles
	 * below them are in */
	const char *nat = "{\"arrival_s\": 0, \"prompt_tokens\": 10, \"output_tokens\": 5}\n";
	snprintf(buf, sizeof buf, "%s{\"arrival_s\": 1, \"prompt_tokens\": 10, "
		 "\"output_tokens\": 5, \"session_id\": 18446744073709551615.0}\n", nat);
	expect("sid64.jsonl", buf, KVS_ERR_PARSE, "sid64.jsonl:2: session_id: too large");
	snprintf(buf, sizeof buf, "%s{\"arrival_s\": 1, \"prompt_tokens\": 10, "
		 "\"output_tokens\": 5, \"session_id\": 1e300}\n", nat);
	expect("sidbig.jsonl", buf, KVS_ERR_PARSE, "sidbig.jsonl:2: session_id: too large");
	snprintf(buf, sizeof buf, "%s{\"arrival_s\": 1, \"prompt_tokens\": 4294967296.0, "
		 "\"output_tokens\": 5}\n", nat);
	expect("p32.jsonl", buf, KVS_ERR_PARSE, "p32.jsonl:2: prompt_tokens: too large");
	snprintf(buf, sizeof buf, "%s{\"arrival_s\": 1, \"prompt_tokens\": 10, "
		 "\"output_tokens\": 5, \"session_id\": 18446744073709549568.0}\n", nat);
	const char *p = kvs_test_write_tmp("sidmax.jsonl", buf);
	kvs_trace *t;
	kvs_request r;
	assert_int_equal(kvs_trace_open(p, NULL, &t), KVS_OK);
	assert_int_equal(kvs_trace_next(t, &r), KVS_OK);
	assert_int_equal(kvs_trace_next(t, &r), KVS_OK);
	assert_true(r.session_id == 18446744073709549568ull);
	assert_int_equal(kvs_trace_next(t, &r), KVS_END);
	kvs_trace_close(t);
	unlink(p);
}

static void test_megabyte_line(void **state)
{
	(void)state;
	const char *p = kvs_test_write_tmp("mega.csv", "");
	FILE *f = fopen(p, "wb");
	fputs(AZ, f);
	fputs("2023-11-16 18:15:46.6805900,374,44\n", f);
	for (int i = 0; i < 3 * 1024 * 1024; i++)
		fputc('7', f);
	fputs("\n2023-11-16 18:15:51.2224670,879,55\n", f);
	fclose(f);
	uint64_t n;
	assert_int_equal(run(p, NULL, &n), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "mega.csv:3: line: longer than 1048576 bytes"));
	assert_int_equal(n, 1);
	assert_int_equal(stats.failed_lines, 1);
	/* skipped and counted, and reading goes on after it */
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.skip_bad_lines = true;
	assert_int_equal(run(p, &o, &n), KVS_END);
	assert_int_equal(n, 2);
	assert_int_equal(stats.skipped[KVS_SKIP_BAD_LINE], 1);
	assert_int_equal(stats.lines_read, 4);
	assert_non_null(strstr(first_skip, "mega.csv:3: line: longer than"));
	unlink(p);
	/* no newline at all */
	p = kvs_test_write_tmp("mega2.csv", "");
	f = fopen(p, "wb");
	for (int i = 0; i < 2 * 1024 * 1024; i++)
		fputc('x', f);
	fclose(f);
	assert_int_equal(run(p, NULL, &n), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "mega2.csv:1: line: longer than"));
	unlink(p);
}

static void test_skip_bad_lines_counts(void **state)
{
	(void)state;
	const char *p = kvs_test_write_tmp("mixed.csv",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n"
		"2023-11-16 18:15:46.6805900,374,44\n"
		"2023-11-16 18:15:47.0000000,abc,44\n"
		"\n"
		"2023-11-16 18:15:48.0000000,10,20\n"
		"2023-11-16 18:15:49.0000000,-1,20\n"
		"garbage\n"
		"2023-11-16 18:15:50.0000000,10,20\n");
	uint64_t n;
	assert_int_equal(run(p, NULL, &n), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "mixed.csv:3: ContextTokens: expected an integer"));
	assert_int_equal(n, 1);
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.skip_bad_lines = true;
	assert_int_equal(run(p, &o, &n), KVS_END);
	assert_int_equal(n, 3);
	assert_int_equal(stats.lines_read, 8);
	assert_int_equal(stats.header_lines, 1);
	assert_int_equal(stats.blank_lines, 1);
	assert_int_equal(stats.skipped[KVS_SKIP_BAD_LINE], 3);
	assert_non_null(strstr(first_skip, "mixed.csv:3: ContextTokens: expected an integer"));
	unlink(p);
}

static void test_bad_options(void **state)
{
	(void)state;
	const char *p = kvs_test_src("traces/samples/native-sample.csv");
	kvs_trace *t;
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.time_scale = 0;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "time scale must be a positive number"));
	kvs_trace_opts_defaults(&o);
	o.window_start_s = 5;
	o.window_end_s = 2;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "window end 2 s is not after its start 5 s"));
	kvs_trace_opts_defaults(&o);
	o.rate = 5;
	o.limit = 1;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "no mean rate to rescale"));
	kvs_trace_opts_defaults(&o);
	o.format = KVS_TRACE_MOONCAKE;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "expected a JSON object per line for --format "
				"mooncake"));
	/* truncating keeps a prompt token and an output token: at least 2 */
	kvs_trace_opts_defaults(&o);
	o.max_model_len = 1;
	o.overlong = KVS_OVERLONG_TRUNCATE;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "max model len 1 cannot hold a prompt token "
				"and an output token"));
	kvs_request r;
	o.max_model_len = 2;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_OK);
	uint64_t n = 0;
	kvs_status st;
	while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
		assert_true(r.truncated);
		assert_int_equal(r.prompt_tokens, 1);
		assert_int_equal(r.output_tokens, 1);
		n++;
	}
	assert_int_equal(st, KVS_END);
	assert_int_equal(n, 4);
	kvs_trace_close(t);
	/* flagged, not cut: a limit of 1 is a limit like any other */
	o.overlong = KVS_OVERLONG_REJECT;
	o.max_model_len = 1;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_OK);
	assert_int_equal(kvs_trace_next(t, &r), KVS_OK);
	assert_true(r.over_max_len);
	kvs_trace_close(t);
	kvs_trace_opts_defaults(&o);
	o.block_size = 24;
	assert_int_equal(kvs_trace_open(p, &o, &t), KVS_OK);
	assert_int_equal(kvs_trace_next(t, &r), KVS_ERR_INVALID);
	/* the same status and words as at open (Mooncake), the path once */
	const char *e = kvs_last_error();
	assert_non_null(strstr(e, "native-sample.csv:3: hash_ids: --block-size 24 neither "
			       "divides nor is a multiple of the trace's 16-token hash blocks"));
	assert_null(strstr(strstr(e, "native-sample.csv") + 1, "native-sample.csv"));
	assert_true(kvs_trace_stats_balanced(kvs_trace_get_stats(t)));
	kvs_trace_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_headers),
		cmocka_unit_test(test_binary_junk),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_bad_json),
		cmocka_unit_test(test_megabyte_line),
		cmocka_unit_test(test_skip_bad_lines_counts),
		cmocka_unit_test(test_bad_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
