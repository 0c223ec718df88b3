/*
 * cli_bench.c - results in the shapes other tools read:
 *
 *  - --bench-json FILE: `vllm bench serve --save-result`'s schema (key
 *    names, milliseconds, mean/median/std/pNN per latency, goodput as
 *    --goodput sets it), so a measured run and a simulated one load into
 *    the same notebook.  One object for one policy, a list for several.
 *  - --summary-csv FILE: the same figures flat, one row per policy, with
 *    the KV memory split and, with --gpu-hour-price, the cost columns.
 *  - the cost figures of --gpu-hour-price shared by the table and both.
 *
 * A run that ended before its trace (--horizon, Ctrl-C) counts the rest of
 * the trace in both under --json's key (after_horizon, after_interrupt), so
 * that each output accounts for every request read.
 *
 * The per-request arrays of vLLM's file (ttfts, itls, input_lens, ...) are
 * left out: --requests FILE.csv holds them, one row per request.
 */
#include "cli_sim.h"
#include "common/json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool kvs_cli_cost_of(const kvs_sim_result *r, kvs_cli_cost *out)
{
	return kvs_sim_cost_of(&kvs_sim_result_config(r)->deploy, kvs_sim_result_stats(r), out);
}

void kvs_cli_cost_print(FILE *f, kvs_sim_result *const *res, size_t n)
{
	kvs_cli_cost c;
	if (!n || !kvs_cli_cost_of(res[0], &c))
		return;
	fprintf(f, "\ncost at $%.2f per GPU-hour x %u GPU%s ($%.2f per hour)\n",
		kvs_sim_result_config(res[0])->deploy.gpu_hour_price, c.gpus,
		c.gpus == 1 ? "" : "s", c.dollars_per_hour);
	fprintf(f, "  %-28s", "");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %14s", kvs_policy_name(kvs_sim_result_stats(res[i])->policy));
	fputc('\n', f);
	static const char *const label[] = { "  $ per million output tokens",
		"  $ per conversation-hour", "  $ per completed request", "  $ for the run" };
	for (int row = 0; row < 4; row++) {
		fprintf(f, "%-30s", label[row]);
		for (size_t i = 0; i < n; i++) {
			kvs_cli_cost_print_one(f, res[i], row);
		}
		fputc('\n', f);
	}
}

void kvs_cli_cost_print_one(FILE *f, const kvs_sim_result *r, int row)
{
	kvs_cli_cost c;
	kvs_cli_cost_of(r, &c);
	double v = row == 0 ? c.per_million_output_tokens : row == 1 ? c.per_conversation_hour
		 : row == 2 ? c.per_request : c.dollars;
	if (isfinite(v))
		fprintf(f, " %14.4f", v);
	else
		fprintf(f, " %14s", "-");
}

json_t *kvs_cli_cost_json(const kvs_sim_result *r)
{
	return kvs_json_jt(kvs_sim_cost_json(&kvs_sim_result_config(r)->deploy,
					     kvs_sim_result_stats(r)));
}

/* ---- vllm bench serve's figures ------------------------------------------ */

typedef struct bench_field {
	const char *key;
	double v;
	bool is_int, is_null;
} bench_field;

#define MAX_FIELDS 96

typedef struct bench_row {
	bench_field f[MAX_FIELDS];
	size_t n;
} bench_row;

static void put(bench_row *b, const char *key, double v, bool is_int)
{
	if (b->n < MAX_FIELDS)
		b->f[b->n++] = (bench_field){ key, v, is_int, !isfinite(v) };
}

/* vLLM's keys: the latency blocks as --percentile-metrics ttft,tpot,itl,e2el
 * and --metric-percentiles 50,90,95,99 would print them; a metric with no
 * sample is `empty` (vllm bench serve writes 0 there; the summary CSV an
 * empty cell, as the replay JSON's null) */
static void latency(bench_row *b, const kvs_sim_result *r, kvs_sim_metric m,
		    const char *const keys[7], double empty)
{
	bool any = kvs_sim_result_count(r, m) > 0;
	put(b, keys[0], any ? kvs_sim_result_mean(r, m) * 1e3 : empty, false);
	put(b, keys[1], any ? kvs_sim_result_quantile(r, m, 0.5) * 1e3 : empty, false);
	put(b, keys[2], any ? kvs_sim_result_std(r, m) * 1e3 : empty, false);
	static const double q[4] = { 0.50, 0.90, 0.95, 0.99 };
	for (int i = 0; i < 4; i++)
		put(b, keys[3 + i], any ? kvs_sim_result_quantile(r, m, q[i]) * 1e3 : empty,
		    false);
}

static void bench_fields(bench_row *b, const kvs_sim_result *r, bool goodput, double empty)
{
	const kvs_sim_stats *s = kvs_sim_result_stats(r);
	double dur = s->sim_time_s;
	memset(b, 0, sizeof *b);
	put(b, "duration", dur, false);
	put(b, "completed", (double)s->completed, true);
	put(b, "failed", (double)(s->rejected + s->unfinished), true);
	put(b, "num_prompts", (double)s->arrived, true);
	put(b, "total_input_tokens", (double)s->prompt_tokens, true);
	put(b, "total_output_tokens", (double)s->output_tokens, true);
	put(b, "request_throughput", dur > 0 ? (double)s->completed / dur : 0, false);
	if (goodput)
		put(b, "request_goodput", s->goodput_requests_per_s, false);
	put(b, "output_throughput", dur > 0 ? (double)s->output_tokens / dur : 0, false);
	put(b, "total_token_throughput",
	    dur > 0 ? (double)(s->prompt_tokens + s->output_tokens) / dur : 0, false);
	put(b, "max_concurrent_requests", (double)s->concurrency_max, true);
	static const char *const ttft[7] = { "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms",
		"p50_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms" };
	static const char *const tpot[7] = { "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms",
		"p50_tpot_ms", "p90_tpot_ms", "p95_tpot_ms", "p99_tpot_ms" };
	static const char *const itl[7] = { "mean_itl_ms", "median_itl_ms", "std_itl_ms",
		"p50_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms" };
	static const char *const e2el[7] = { "mean_e2el_ms", "median_e2el_ms", "std_e2el_ms",
		"p50_e2el_ms", "p90_e2el_ms", "p95_e2el_ms", "p99_e2el_ms" };
	latency(b, r, KVS_METRIC_TTFT, ttft, empty);
	latency(b, r, KVS_METRIC_TPOT, tpot, empty);
	latency(b, r, KVS_METRIC_ITL, itl, empty);
	latency(b, r, KVS_METRIC_E2E, e2el, empty);
}

static json_t *field_json(const bench_field *f)
{
	if (f->is_null)
		return json_null();
	return f->is_int ? json_integer((json_int_t)f->v) : json_real(f->v);
}

/* "20261201-112233" as vLLM dates its results (SOURCE_DATE_EPOCH, when set,
 * for reproducible files) */
static void bench_date(char *buf, size_t cap)
{
	time_t now = time(NULL);
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (sde && *sde) {
		char *end;
		errno = 0;
		long long v = strtoll(sde, &end, 10);
		if (!errno && !*end)
			now = (time_t)v;
	}
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(buf, cap, "%Y%m%d-%H%M%S", &tm);
}

json_t *kvs_cli_bench_json(const kvs_sim_result *r, const kvs_cli_bench_opts *o,
			   uint64_t after)
{
	const kvs_sim_config *cfg = kvs_sim_result_config(r);
	json_t *j = json_object();
	char date[32];
	bench_date(date, sizeof date);
	json_object_set_new(j, "date", json_string(date));
	json_object_set_new(j, "backend", json_string("kvsim"));
	json_object_set_new(j, "endpoint_type", json_string("kvsim-simulated"));
	json_object_set_new(j, "label", json_string(kvs_policy_name(cfg->policy)));
	json_object_set_new(j, "model_id", json_string(cfg->deploy.model.name));
	json_object_set_new(j, "tokenizer_id", json_string(cfg->deploy.model.name));
	if (o->request_rate > 0)
		json_object_set_new(j, "request_rate", json_real(o->request_rate));
	else
		json_object_set_new(j, "request_rate", json_string("trace"));
	json_object_set_new(j, "burstiness", json_null());
	/* vllm bench serve's client cap on requests in flight (null in an open
	 * loop), not the engine's max_num_seqs */
	json_object_set_new(j, "max_concurrency", cfg->max_concurrency
			    ? json_integer(cfg->max_concurrency) : json_null());
	json_object_set_new(j, "percentile_metrics", json_string("ttft,tpot,itl,e2el"));
	json_object_set_new(j, "metric_percentiles", json_string("50,90,95,99"));
	if (o->goodput) {
		json_t *g = json_object();
		if (cfg->slo_ttft_s > 0)
			json_object_set_new(g, "ttft", json_real(cfg->slo_ttft_s * 1e3));
		if (cfg->slo_tpot_s > 0)
			json_object_set_new(g, "tpot", json_real(cfg->slo_tpot_s * 1e3));
		if (cfg->slo_e2e_s > 0)
			json_object_set_new(g, "e2el", json_real(cfg->slo_e2e_s * 1e3));
		json_object_set_new(j, "goodput", g);
	}
	if (o->trace)
		json_object_set_new(j, "dataset_path", json_string(o->trace));
	bench_row b;
	bench_fields(&b, r, o->goodput, 0);
	for (size_t i = 0; i < b.n; i++)
		json_object_set_new(j, b.f[i].key, field_json(&b.f[i]));
	if (kvs_sim_result_stats(r)->interrupted)
		json_object_set_new(j, "interrupted", json_true());
	/* num_prompts counts the requests the run took: a run that ended
	 * before its trace counts the rest as --json's accounting does, so
	 * that num_prompts + this = the trace's requests */
	const char *ak = kvs_cli_after_end_key(r);
	if (ak)
		json_object_set_new(j, ak, json_integer((json_int_t)after));
	json_t *cost = kvs_cli_cost_json(r);
	if (cost)
		json_object_set_new(j, "cost", cost);
	return j;
}

/* ---- the flat summary ----------------------------------------------------- */

static void csv_num(FILE *f, const bench_field *x)
{
	if (x->is_null)
		fputs(",", f);
	else if (x->is_int)
		fprintf(f, ",%.0f", x->v);
	else
		fprintf(f, ",%.17g", x->v);
}

/* Which of the after_horizon / after_interrupt columns a summary has:
 * those of its runs' kvs_cli_after_end_key (none when every run took its
 * whole trace, so such a file is as it always was). */
static void after_columns(kvs_sim_result *const *res, size_t n, bool *horizon,
			  bool *interrupt)
{
	*horizon = *interrupt = false;
	for (size_t k = 0; k < n; k++) {
		const char *key = kvs_cli_after_end_key(res[k]);
		*horizon |= key && strcmp(key, "after_horizon") == 0;
		*interrupt |= key && strcmp(key, "after_interrupt") == 0;
	}
}

void kvs_cli_summary_csv(FILE *f, kvs_sim_result *const *res, size_t n, bool goodput,
			 const uint64_t *after)
{
	bench_row b;
	if (!n)
		return;
	bench_fields(&b, res[0], goodput, NAN);
	kvs_cli_cost c0;
	bool cost = kvs_cli_cost_of(res[0], &c0);
	bool after_h, after_i;
	after_columns(res, n, &after_h, &after_i);
	fputs("policy", f);
	for (size_t i = 0; i < b.n; i++)
		fprintf(f, ",%s", b.f[i].key);
	fputs(",kv_token_states_pct,kv_reservation_pct,kv_internal_fragmentation_pct,"
	      "kv_external_fragmentation_pct,kv_cached_idle_pct,kv_free_pct,"
	      "concurrency_mean,preemptions,rejected,unfinished", f);
	if (cost)
		fputs(",gpu_hour_price,gpus,dollars,dollars_per_million_output_tokens,"
		      "dollars_per_conversation_hour,dollars_per_request", f);
	if (after_h)
		fputs(",after_horizon", f);
	if (after_i)
		fputs(",after_interrupt", f);
	fputc('\n', f);
	for (size_t k = 0; k < n; k++) {
		const kvs_sim_stats *s = kvs_sim_result_stats(res[k]);
		bench_fields(&b, res[k], goodput, NAN);
		fputs(kvs_policy_name(s->policy), f);
		for (size_t i = 0; i < b.n; i++)
			csv_num(f, &b.f[i]);
		const kvs_sim_mem_pct *m = &s->memory_pct;
		fprintf(f, ",%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%llu,%llu,%llu",
			m->token_states, m->reservation, m->internal_frag, m->external_frag,
			m->cached_idle, m->free, s->concurrency_mean,
			(unsigned long long)s->preemptions, (unsigned long long)s->rejected,
			(unsigned long long)s->unfinished);
		if (cost) {
			kvs_cli_cost c;
			kvs_cli_cost_of(res[k], &c);
			bench_field x[6] = {
				{ NULL, kvs_sim_result_config(res[k])->deploy.gpu_hour_price, false, false },
				{ NULL, c.gpus, true, false },
				{ NULL, c.dollars, false, false },
				{ NULL, c.per_million_output_tokens, false, !isfinite(c.per_million_output_tokens) },
				{ NULL, c.per_conversation_hour, false, !isfinite(c.per_conversation_hour) },
				{ NULL, c.per_request, false, !isfinite(c.per_request) },
			};
			for (int i = 0; i < 6; i++)
				csv_num(f, &x[i]);
		}
		/* each run's count in its own column, 0 in the other: num_prompts
		 * + after_horizon + after_interrupt = the trace's requests */
		const char *ak = kvs_cli_after_end_key(res[k]);
		uint64_t a = after ? after[k] : 0;
		if (after_h)
			fprintf(f, ",%llu", ak && strcmp(ak, "after_horizon") == 0
					    ? (unsigned long long)a : 0ull);
		if (after_i)
			fprintf(f, ",%llu", ak && strcmp(ak, "after_interrupt") == 0
					    ? (unsigned long long)a : 0ull);
		fputc('\n', f);
	}
}

/* ---- --goodput ttft:MS tpot:MS e2el:MS ------------------------------------- */

int kvs_cli_goodput_arg(kvs_args *it, kvs_sim_config *cfg, bool *set)
{
	if (!kvs_args_is(it, "--goodput"))
		return 0;
	/* vLLM takes one or more KEY:MS words after the flag */
	int taken = 0;
	for (;;) {
		const char *v;
		if (taken == 0) {
			v = kvs_args_value(it);
			if (!v)
				return -1;
		} else {
			if (it->inline_val || it->i >= it->argc)
				break;
			v = it->argv[it->i];
			if (!strchr(v, ':') || v[0] == '-')
				break;
			it->i++;
		}
		taken++;
		const char *colon = strchr(v, ':');
		double ms;
		if (!colon || !kvs_parse_double(colon + 1, &ms) || !(ms > 0)) {
			kvs_args_usage_error(it, "--goodput: expected KEY:MILLISECONDS such as "
					     "ttft:500 or tpot:50, got '%s'", v);
			return -1;
		}
		size_t k = (size_t)(colon - v);
		if (k == 4 && strncmp(v, "ttft", 4) == 0)
			cfg->slo_ttft_s = ms / 1e3;
		else if (k == 4 && strncmp(v, "tpot", 4) == 0)
			cfg->slo_tpot_s = ms / 1e3;
		else if (k == 4 && strncmp(v, "e2el", 4) == 0)
			cfg->slo_e2e_s = ms / 1e3;
		else {
			kvs_args_usage_error(it, "--goodput: '%.*s' is not a metric: ttft, tpot "
					     "or e2el (as vllm bench serve)", (int)k, v);
			return -1;
		}
	}
	*set = true;
	return 1;
}
