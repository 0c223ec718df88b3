/*
 * cmd_trace.c - `kvsim trace [FILE]`: summarise a trace before replaying
 * it (rates, burstiness, length percentiles, prefix sharing, reader
 * counters), as a table or --json; or, with --write, convert it (after
 * shaping) into a native trace.
 */
#include "commands.h"
#include "cli_sim.h"

#include <stdlib.h>

#include <jansson.h>
#include <math.h>
#include <string.h>

void kvs_cmd_trace_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim trace [FILE] [options]\n"
		"\n"
		"Summarise a request trace: requests, time span, mean rate, burstiness (cv)\n"
		"(coefficient of variation of inter-arrival times), prompt and output\n"
		"length percentiles, and where the trace has prefix hash ids the share\n"
		"of blocks and prompt tokens an unbounded prefix cache would hit.\n"
		"FILE is a trace in any supported format ('-' reads standard input);\n"
		"without it, the bundled sample (%s).\n"
		"\n"
		"options:\n"
		"  --block-size N      re-split hash ids to N-token blocks (a divisor or\n"
		"                      multiple of the trace's hash block)\n"
		"  --max-model-len N   flag (or with --overlong truncate, cut) requests\n"
		"                      whose prompt + output exceed N tokens\n"
		"  --write FILE        write the shaped requests as a native trace (CSV, or\n"
		"                      JSONL when FILE ends in .jsonl) instead of a summary\n"
		"                      (so not with --json)\n"
		"  --json [FILE]       one JSON object\n"
		"  (--json, --json - : standard output instead of the table; --json FILE.json,\n"
		"  --json=FILE: the file, the table stays)\n"
		"  --help              show this help\n"
		"\n", kvs_trace_default_path());
	kvs_cli_trace_help(f);
}

static json_t *len_json(const kvs_len_stats *s, uint64_t total)
{
	return json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "mean", s->mean,
			 "min", (json_int_t)s->min, "p50", (json_int_t)s->p50,
			 "p90", (json_int_t)s->p90, "p99", (json_int_t)s->p99,
			 "max", (json_int_t)s->max, "total", (json_int_t)total);
}

static json_t *reader_json(const kvs_trace_stats *r)
{
	json_t *skipped = json_object();
	for (int i = 0; i < KVS_SKIP_COUNT_; i++)
		json_object_set_new(skipped, kvs_trace_skip_reason_name((kvs_skip_reason)i),
				    json_integer((json_int_t)r->skipped[i]));
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
			 "lines_read", (json_int_t)r->lines_read,
			 "header_lines", (json_int_t)r->header_lines,
			 "blank_lines", (json_int_t)r->blank_lines,
			 "requests", (json_int_t)r->requests,
			 "skipped", skipped,
			 "filtered_window", (json_int_t)r->filtered_window,
			 "filtered_limit", (json_int_t)r->filtered_limit,
			 "over_max_len", (json_int_t)r->over_max_len,
			 "truncated", (json_int_t)r->truncated,
			 "reordered", (json_int_t)r->reordered,
			 "bytes_read", (json_int_t)r->bytes_read,
			 "failed_lines", (json_int_t)r->failed_lines,
			 "balanced", kvs_trace_stats_balanced(r));
	/* only when some were kept, so other documents stay as they were */
	if (o && r->kept_failed)
		json_object_set_new(o, "kept_failed", json_integer((json_int_t)r->kept_failed));
	return o;
}

static int print_json(const char *path, const kvs_trace_summary *s, kvs_outfile *dest)
{
	json_t *o = json_object();
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "format", json_string(kvs_trace_format_name(s->format)));
	json_object_set_new(o, "requests", json_integer((json_int_t)s->requests));
	json_object_set_new(o, "first_arrival_s", json_real(s->first_s));
	json_object_set_new(o, "last_arrival_s", json_real(s->last_s));
	json_object_set_new(o, "span_s", json_real(s->span_s));
	json_object_set_new(o, "mean_rate", isfinite(s->mean_rate) ? json_real(s->mean_rate)
								    : json_null());
	json_object_set_new(o, "cv_interarrival", isfinite(s->cv_interarrival)
						  ? json_real(s->cv_interarrival) : json_null());
	json_object_set_new(o, "prompt_tokens", len_json(&s->prompt, s->prompt_tokens_total));
	json_object_set_new(o, "output_tokens", len_json(&s->output, s->output_tokens_total));
	json_object_set_new(o, "has_hashes", json_boolean(s->has_hashes));
	if (s->has_hashes) {
		json_object_set_new(o, "hash_block_tokens", json_integer(s->hash_block_tokens));
		json_object_set_new(o, "prefix_hit_blocks", json_real(s->prefix_hit_blocks));
		json_object_set_new(o, "prefix_hit_tokens", json_real(s->prefix_hit_tokens));
	} else {
		json_object_set_new(o, "hash_block_tokens", json_null());
		json_object_set_new(o, "prefix_hit_blocks", json_null());
		json_object_set_new(o, "prefix_hit_tokens", json_null());
	}
	json_object_set_new(o, "full_blocks", json_integer((json_int_t)s->full_blocks));
	json_object_set_new(o, "hashed_blocks", json_integer((json_int_t)s->hashed_blocks));
	json_object_set_new(o, "hit_blocks", json_integer((json_int_t)s->hit_blocks));
	json_object_set_new(o, "unique_blocks", json_integer((json_int_t)s->unique_blocks));
	json_object_set_new(o, "prefix_requests", json_integer((json_int_t)s->prefix_requests));
	json_object_set_new(o, "prefix_capped", json_boolean(s->prefix_capped));
	json_object_set_new(o, "sessions", json_integer((json_int_t)s->sessions));
	json_object_set_new(o, "max_turn", json_integer(s->max_turn));
	json_object_set_new(o, "multi_sample", json_integer((json_int_t)s->multi_sample));
	json_object_set_new(o, "reader", reader_json(&s->reader));
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
	json_decref(o);
	int rc = kvs_cli_write_text("trace", "--json", dest, text);
	free(text);
	return rc;
}

static void print_reader(FILE *f, const kvs_trace_stats *r)
{
	fprintf(f, "%-16s %llu lines = %llu header/comment + %llu blank + %llu requests"
		" + %llu skipped (bad %llu, failed %llu) + %llu filtered (window %llu, limit %llu)",
		"reader", (unsigned long long)r->lines_read,
		(unsigned long long)r->header_lines, (unsigned long long)r->blank_lines,
		(unsigned long long)r->requests,
		(unsigned long long)(r->skipped[KVS_SKIP_BAD_LINE] + r->skipped[KVS_SKIP_FAILED]),
		(unsigned long long)r->skipped[KVS_SKIP_BAD_LINE],
		(unsigned long long)r->skipped[KVS_SKIP_FAILED],
		(unsigned long long)(r->filtered_window + r->filtered_limit),
		(unsigned long long)r->filtered_window, (unsigned long long)r->filtered_limit);
	if (r->failed_lines)
		fprintf(f, " + %llu failed", (unsigned long long)r->failed_lines);
	fputc('\n', f);
	if (r->over_max_len || r->truncated || r->reordered)
		fprintf(f, "%-16s %llu over max_model_len, %llu truncated, %llu reordered\n", "",
			(unsigned long long)r->over_max_len, (unsigned long long)r->truncated,
			(unsigned long long)r->reordered);
	if (r->kept_failed)
		fprintf(f, "%-16s %llu of the requests are BurstGPT failure rows kept by "
			"--keep-failed (0 output tokens)\n", "",
			(unsigned long long)r->kept_failed);
}

static void print_table(const char *path, const kvs_trace_summary *s)
{
	printf("%-16s %s (%s)\n", "trace", path, kvs_trace_format_name(s->format));
	printf("%-16s %llu\n", "requests", (unsigned long long)s->requests);
	printf("%-16s %.3f s (%.3f .. %.3f)\n", "span", s->span_s, s->first_s, s->last_s);
	/* undefined (every arrival at one instant, or too few): n/a, not 0 */
	char rate[32], cv[32];
	if (isfinite(s->mean_rate))
		snprintf(rate, sizeof rate, "%.4f req/s", s->mean_rate);
	else
		snprintf(rate, sizeof rate, "n/a");
	if (isfinite(s->cv_interarrival))
		snprintf(cv, sizeof cv, "%.3f", s->cv_interarrival);
	else
		snprintf(cv, sizeof cv, "n/a");
	printf("%-16s %s\n", "mean rate", rate);
	printf("%-16s %s (coefficient of variation of inter-arrival times: 1 = Poisson,\n"
	       "%-16s > 1 burstier; vllm bench serve --burstiness, a gamma shape, is 1/cv^2)\n",
	       "cv", cv, "");
	printf("\n%-16s %10s %8s %8s %8s %8s %8s %14s\n", "tokens", "mean", "min", "p50",
	       "p90", "p99", "max", "total");
	const kvs_len_stats *ls[2] = { &s->prompt, &s->output };
	const uint64_t tot[2] = { s->prompt_tokens_total, s->output_tokens_total };
	const char *names[2] = { "prompt", "output" };
	for (int i = 0; i < 2; i++)
		printf("%-16s %10.1f %8llu %8llu %8llu %8llu %8llu %14llu\n", names[i],
		       ls[i]->mean, (unsigned long long)ls[i]->min,
		       (unsigned long long)ls[i]->p50, (unsigned long long)ls[i]->p90,
		       (unsigned long long)ls[i]->p99, (unsigned long long)ls[i]->max,
		       (unsigned long long)tot[i]);
	printf("\n");
	if (s->has_hashes) {
		printf("%-16s unbounded cache, %u-token blocks: %.2f%% of full blocks "
		       "(%llu of %llu), %.2f%% of prompt tokens; %llu distinct blocks\n",
		       "prefix hits", s->hash_block_tokens, 100.0 * s->prefix_hit_blocks,
		       (unsigned long long)s->hit_blocks, (unsigned long long)s->full_blocks,
		       100.0 * s->prefix_hit_tokens, (unsigned long long)s->unique_blocks);
		if (s->prefix_capped)
			printf("%-16s the prefix figures cover the first %llu requests: the "
			       "cache reached its bound of %llu distinct ids\n", "",
			       (unsigned long long)s->prefix_requests,
			       (unsigned long long)KVS_SUMMARY_MAX_IDS);
	} else {
		printf("%-16s none (this trace has no prefix hash ids)\n", "prefix hits");
	}
	if (s->sessions)
		printf("%-16s %llu conversations, up to %u turns\n", "sessions",
		       (unsigned long long)s->sessions, s->max_turn);
	if (s->multi_sample)
		printf("%-16s %llu requests with n > 1\n", "parallel samples",
		       (unsigned long long)s->multi_sample);
	print_reader(stdout, &s->reader);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int write_native(kvs_trace *t, const char *out)
{
	kvs_trace_format f = ends_with(out, ".jsonl") ? KVS_TRACE_NATIVE_JSONL
						       : KVS_TRACE_NATIVE_CSV;
	kvs_trace_writer *w;
	kvs_status st = kvs_trace_writer_open(out, f, true, &w);
	if (st != KVS_OK) {
		fprintf(stderr, "kvsim trace: --write: %s\n", kvs_last_error());
		return KVS_EXIT_FAIL;
	}
	char note[512];
	snprintf(note, sizeof note, "converted by kvsim trace from %s (%s)",
		 kvs_trace_path(t), kvs_trace_format_name(kvs_trace_get_format(t)));
	kvs_trace_writer_comment(w, note);
	kvs_request r;
	while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
		st = kvs_trace_writer_put(w, &r);
		if (st != KVS_OK)
			break;
	}
	/* a failed run leaves no file behind (and an existing one untouched) */
	if (st == KVS_END)
		st = kvs_trace_writer_close(w);
	else
		kvs_trace_writer_discard(w);
	if (st != KVS_OK) {
		kvs_cli_report_error("trace", st);
		/* an option the trace's data cannot take (found mid-read: a
		 * block size its hash ids cannot take) is a usage error */
		return st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
	}
	print_reader(stderr, kvs_trace_get_stats(t));
	return KVS_EXIT_OK;
}

int kvs_cmd_trace(kvs_args *it)
{
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	const char *path = NULL, *out = NULL;
	const char *json = NULL;
	const char *pos;
	bool seed_given = false;
	while (kvs_args_next(it, &pos)) {
		if (!it->flag) {
			if (!kvs_args_one_positional(it, pos, &path, "trace"))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_help(it))
			return KVS_EXIT_OK;
		seed_given |= kvs_args_is(it, "--seed");
		int r = kvs_cli_trace_arg(it, &o);
		if (r < 0)
			return KVS_EXIT_USAGE;
		if (r > 0)
			continue;
		int jr = kvs_args_output(it, "--json", &json, path != NULL);
		if (jr < 0)
			return KVS_EXIT_USAGE;
		if (jr > 0) {
			continue;
		} else if (kvs_args_is(it, "--block-size")) {
			if (!kvs_args_u32(it, 1, 1u << 20, &o.block_size))
				return KVS_EXIT_USAGE;
		} else if (kvs_args_is(it, "--max-model-len")) {
			if (!kvs_args_u32(it, 1, UINT32_MAX, &o.max_model_len))
				return KVS_EXIT_USAGE;
		} else if (kvs_args_is(it, "--write") || kvs_args_is(it, "-o")) {
			if (!kvs_args_output_path(it, "file", &out))
				return KVS_EXIT_USAGE;
		} else {
			kvs_args_unknown(it);
			return KVS_EXIT_USAGE;
		}
	}
	if (out && json) {
		/* --write converts instead of summarising: --json would be lost */
		kvs_args_usage_error(it, "--write converts the trace instead of summarising "
				     "it, so --json would write nothing: give one ('kvsim trace "
				     "%s --json' then summarises the written trace)", out);
		return KVS_EXIT_USAGE;
	}
	/* the seed draws the Poisson re-timing's gaps, and nothing else */
	if (seed_given && o.rate_mode != KVS_RATE_POISSON)
		fprintf(stderr, "kvsim trace: warning: --seed has no effect without --rate-mode "
			"poisson (it seeds the Poisson re-timing)\n");
	if (!path)
		path = kvs_trace_default_path();
	const kvs_cli_path paths[] = {
		{ "the trace", path, true },
		{ "--write", out, false },
		{ "--json", json, false },
	};
	if (!kvs_cli_paths_check("trace", paths, KVS_ARRAY_LEN(paths)))
		return KVS_EXIT_USAGE;
	/* a --json path that cannot be written fails before the trace is read */
	kvs_outfile *jo = NULL;
	if (json && !(jo = kvs_cli_out_open("trace", "--json", json)))
		return KVS_EXIT_FAIL;
	kvs_trace *t;
	kvs_status st = kvs_trace_open(path, &o, &t);
	if (st != KVS_OK) {
		/* options the trace cannot take are usage errors, as in replay */
		kvs_cli_report_error("trace", st);
		kvs_cli_out_close("trace", "--json", jo, false);
		return st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
	}
	int rc;
	if (out) {
		rc = write_native(t, out);
	} else {
		kvs_trace_summary s;
		st = kvs_trace_summarize(t, &s);
		if (st != KVS_OK) {
			kvs_cli_report_error("trace", st);
			kvs_cli_out_close("trace", "--json", jo, false);
			rc = st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
		} else {
			/* JSON on standard output replaces the table; in a file, both */
			if (!json || strcmp(json, "-") != 0)
				print_table(path, &s);
			rc = jo ? print_json(path, &s, jo) : KVS_EXIT_OK;
		}
	}
	if (rc == KVS_EXIT_OK)
		kvs_cli_trace_skip_note("trace", kvs_trace_get_stats(t), kvs_trace_first_skip(t));
	kvs_trace_close(t);
	return rc;
}
