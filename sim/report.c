/*
 * report.c - a replay's results as JSON (docs/REPORT-JSON.md) and CSV.
 *
 * Every object is built with jansson and written with JSON_SORT_KEYS, and
 * nothing in it depends on wall-clock time unless record_wall_time is set,
 * so the same inputs give byte-identical files.  Non-finite numbers are
 * written as null.
 */
#include "sim_internal.h"
#include "common/json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static void set(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v ? v : json_null());
}

static json_t *model_jt(const kvs_model *m)
{
	json_t *o = json_object();
	set(o, "name", json_string(m->name));
	set(o, "num_layers", jint(m->num_layers));
	set(o, "num_heads", jint(m->num_heads));
	set(o, "num_kv_heads", jint(m->num_kv_heads));
	set(o, "head_dim", jint(m->head_dim));
	set(o, "hidden_size", jint(m->hidden_size));
	set(o, "intermediate_size", jint(m->intermediate_size));
	set(o, "vocab_size", jint(m->vocab_size));
	set(o, "max_position_embeddings", jint(m->max_position_embeddings));
	set(o, "num_params", jint(m->num_params));
	set(o, "num_active_params", jint(m->num_active_params ? m->num_active_params
							       : m->num_params));
	set(o, "params_from_config", json_boolean(m->params_from_config));
	/* only with a vision tower, so other documents stay as they were */
	if (m->vision_params) {
		set(o, "vision_params", jint(m->vision_params));
		if (m->vision_wide && kvs_dtype_bits(m->weight_dtype) < 16)
			set(o, "vision_kept_16bit", json_true());
	}
	set(o, "dtype", json_string(kvs_dtype_name(m->dtype)));
	set(o, "sliding_window", jint(m->sliding_window));
	set(o, "num_sliding_layers", jint(m->num_sliding_layers));
	set(o, "num_experts", jint(m->num_experts));
	set(o, "num_experts_per_tok", jint(m->num_experts_per_tok));
	set(o, "kv_lora_rank", jint(m->kv_lora_rank));
	set(o, "qk_rope_head_dim", jint(m->qk_rope_head_dim));
	if (m->quant_method[0])
		set(o, "quant_method", json_string(m->quant_method));
	uint32_t na, nr, ns, np[KVS_PROJ_COUNT_];
	kvs_model_wide_layers(m, &na, &nr, &ns);
	kvs_model_wide_projs(m, np);
	/* projections kept one by one: only those kept, only when any is */
	json_t *pj = json_object();
	for (kvs_proj p = 0; p < KVS_PROJ_COUNT_; p++)
		if (np[p])
			set(pj, kvs_proj_name(p), jint(np[p]));
	unsigned wbits = kvs_dtype_bits(m->weight_dtype);
	if ((na || nr || ns || json_object_size(pj)) && wbits < 16) {
		/* what a quantised checkpoint keeps at 16 bits, in layers */
		json_t *w = json_object();
		set(w, "attention_layers", jint(na));
		set(w, "router_layers", jint(nr));
		set(w, "shared_expert_layers", jint(ns));
		if (json_object_size(pj))
			set(w, "projection_layers", json_incref(pj));
		set(o, "kept_16bit", w);
	}
	json_decref(pj);
	return o;
}

static json_t *gpu_jt(const kvs_gpu *g)
{
	json_t *o = json_object();
	set(o, "name", json_string(g->name));
	set(o, "mem_bytes", jint(g->mem_bytes));
	set(o, "hbm_bytes_per_s", jreal(g->hbm_bytes_per_s));
	set(o, "fp16_flops", jreal(g->fp16_flops));
	set(o, "pcie_bytes_per_s", jreal(g->pcie_bytes_per_s));
	set(o, "interconnect_bytes_per_s", jreal(g->interconnect_bytes_per_s));
	set(o, "fp8_flops", jreal(g->fp8_flops));
	set(o, "int8_ops", jreal(g->int8_ops));
	set(o, "datasheet_mem_bytes", jint(g->datasheet_mem_bytes));
	set(o, "mem_source", json_string(g->mem_source));
	return o;
}

static json_t *opt_real(double v)
{
	return v > 0 ? jreal(v) : json_null();
}

/* vLLM's multimodal flags, as given (vLLM's names); empty with none, so
 * other documents stay as they were */
static json_t *mm_jt(const kvs_deploy *d)
{
	json_t *o = json_object();
	if (d->mm_image_limit || d->mm_video_limit) {
		json_t *l = json_object();
		const struct { const char *key; uint32_t v; } lim[] = {
			{ "image", d->mm_image_limit }, { "video", d->mm_video_limit },
		};
		for (size_t i = 0; i < KVS_ARRAY_LEN(lim); i++)
			if (lim[i].v)
				set(l, lim[i].key, jint(lim[i].v == KVS_MM_LIMIT_ZERO ? 0 : lim[i].v));
		set(o, "limit_mm_per_prompt", l);
	}
	if (d->skip_mm_profiling)
		set(o, "skip_mm_profiling", json_true());
	if (d->mm_max_pixels) {
		json_t *k = json_object();
		set(k, "max_pixels", jint(d->mm_max_pixels));
		set(o, "mm_processor_kwargs", k);
	}
	return o;
}

kvs_json *kvs_sim_mm_json(const kvs_deploy *d)
{
	return kvs_json_of(mm_jt(d));
}

static json_t *engine_jt(const kvs_sim_config *cfg, const kvs_sim_stats *sized)
{
	const kvs_deploy *d = &cfg->deploy;
	json_t *o = json_object();
	set(o, "tp", jint(d->tp ? d->tp : 1));
	set(o, "pp", jint(d->pp ? d->pp : 1));
	if (d->dp > 1) {   /* a data-parallel fleet's ranks (only then: other
			    * documents keep their keys) */
		set(o, "dp", jint(d->dp));
		set(o, "expert_parallel", json_boolean(d->expert_parallel));
	}
	set(o, "block_size", jint(d->block_size ? d->block_size : 16));
	set(o, "max_num_seqs", jint(cfg->max_num_seqs));
	set(o, "max_num_batched_tokens", jint(cfg->max_num_batched_tokens));
	set(o, "max_model_len", jint(sized ? sized->max_model_len : d->max_model_len));
	set(o, "gpu_memory_utilization", jreal(d->gpu_memory_utilization));
	set(o, "dtype", json_string(kvs_dtype_name(d->weight_dtype)));
	set(o, "kv_cache_dtype", json_string(kvs_dtype_name(d->kv_dtype)));
	set(o, "preemption_mode", json_string(kvs_preempt_mode_name(cfg->preemption_mode)));
	/* written only when not the default, so fcfs documents stay as they were */
	if (cfg->scheduling_policy != KVS_SCHED_FCFS)
		set(o, "scheduling_policy",
		    json_string(kvs_sched_policy_name(cfg->scheduling_policy)));
	set(o, "enable_prefix_caching", json_boolean(cfg->enable_prefix_caching));
	/* written only when off, so documents of the default stay as they were */
	if (cfg->chunked_prefill_off)
		set(o, "enable_chunked_prefill", json_false());
	if (d->hybrid_kv_off)
		set(o, "disable_hybrid_kv_cache_manager", json_true());
	if (d->chunked_hybrid_on)
		set(o, "allow_chunked_local_attn_with_hybrid_kv_cache", json_true());
	if (d->pp_balanced)
		set(o, "pp_balanced", json_true());
	json_t *mm = mm_jt(d);
	json_object_update(o, mm);
	json_decref(mm);
	/* written only when the windowed layers are held in full, so
	 * documents of models without windows stay as they were */
	if (kvs_deploy_windows_in_full(d))
		set(o, "windows_in_full", json_true());
	set(o, "swap_space_bytes", jint(cfg->swap_bytes));
	set(o, "watermark", jreal(cfg->watermark));
	set(o, "page_bytes", jint(cfg->page_bytes));
	set(o, "best_fit", json_boolean(cfg->best_fit));
	set(o, "max_concurrency", json_integer(cfg->max_concurrency));
	set(o, "placement", json_string(cfg->buddy ? "buddy" : cfg->best_fit ? "best-fit"
								 : "first-fit"));
	set(o, "slo_ttft_s", opt_real(cfg->slo_ttft_s));
	set(o, "slo_tpot_s", opt_real(cfg->slo_tpot_s));
	set(o, "sample_interval_s", opt_real(cfg->sample_interval_s));
	set(o, "horizon_s", opt_real(cfg->horizon_s));
	set(o, "seed", jint(cfg->seed));
	set(o, "fast_path", json_boolean(cfg->fast_path));
	if (sized) {
		set(o, "kv_budget_bytes", jint(sized->kv_budget_bytes));
		set(o, "kv_bytes_per_token", jint(sized->kv_bytes_per_token));
		set(o, "num_gpu_blocks", jint(sized->num_blocks));
		if (sized->window_groups) {
			json_t *w = json_object();
			set(w, "window_tokens", jint(sized->window_tokens));
			set(w, "chunked", json_boolean(cfg->deploy.model.window_chunked));
			set(w, "window_groups", jint(sized->window_groups));
			set(w, "full_groups", jint(sized->full_groups));
			set(w, "group_layers", jint(sized->group_layers));
			set(o, "kv_windows", w);
		}
	}
	const kvs_cost_config *c = &cfg->cost;
	json_t *m = json_object();
	set(m, "model", json_string(c->table_path[0] ? "table"
				    : c->kind == KVS_COST_LINEAR ? "linear" : "roofline"));
	if (c->kind == KVS_COST_ROOFLINE) {
		set(m, "flops_efficiency", jreal(c->flops_efficiency));
		set(m, "bandwidth_efficiency", jreal(c->bandwidth_efficiency));
		set(m, "step_overhead_s", jreal(c->step_overhead_s));
		set(m, "allreduce_latency_s", jreal(c->allreduce_latency_s));
	} else {
		set(m, "base_s", jreal(c->linear_base_s));
		set(m, "per_token_s", jreal(c->linear_per_token_s));
		set(m, "per_context_token_s", jreal(c->linear_per_context_s));
		set(m, "per_seq_s", jreal(c->linear_per_seq_s));
	}
	set(m, "kv_read_factor", jreal(c->kv_read_factor));
	if (c->table_path[0]) {
		set(m, "table", json_string(c->table_path));
		set(m, "fit_rows", jint(c->fit_rows));
		set(m, "fit_r2", jreal(c->fit_r2));
	}
	set(o, "step_time", m);
	return o;
}

static json_t *trace_jt(const char *path, kvs_trace_format format,
			   const kvs_trace_stats *ts, const kvs_sim_stats *st)
{
	json_t *o = json_object();
	set(o, "path", path ? json_string(path) : json_null());
	set(o, "format", json_string(format == KVS_TRACE_AUTO ? "memory"
				     : kvs_trace_format_name(format)));
	if (st) {
		double span = st->arrived ? st->last_arrival_s - st->first_arrival_s : 0;
		set(o, "requests", jint(st->arrived));
		set(o, "first_arrival_s", jreal(st->first_arrival_s));
		set(o, "last_arrival_s", jreal(st->last_arrival_s));
		set(o, "span_s", jreal(span));
		set(o, "mean_rate", span > 0 ? jreal((double)(st->arrived - 1) / span)
					     : json_null());
	}
	if (ts) {
		set(o, "lines_read", jint(ts->lines_read));
		set(o, "header_lines", jint(ts->header_lines));
		set(o, "blank_lines", jint(ts->blank_lines));
		set(o, "yielded", jint(ts->requests));
		set(o, "skipped_bad_lines", jint(ts->skipped[KVS_SKIP_BAD_LINE]));
		set(o, "skipped_failed", jint(ts->skipped[KVS_SKIP_FAILED]));
		set(o, "filtered_window", jint(ts->filtered_window));
		set(o, "filtered_limit", jint(ts->filtered_limit));
		set(o, "over_max_len", jint(ts->over_max_len));
		set(o, "truncated", jint(ts->truncated));
		/* only when some were kept, so other documents stay as they were */
		if (ts->kept_failed)
			set(o, "kept_failed", jint(ts->kept_failed));
		set(o, "reordered", jint(ts->reordered));
		set(o, "bytes_read", jint(ts->bytes_read));
	}
	return o;
}

/* The policy object's sub-object `group` ("" = o itself), created on
 * first use. */
static json_t *group_of(json_t *o, const char *group)
{
	if (!*group)
		return o;
	json_t *g = json_object_get(o, group);
	if (!g) {
		g = json_object();
		set(o, group, g);
	}
	return g;
}

/* A metric's JSON value: integers as integers, non-finite reals as null. */
static json_t *metric_jt(const kvs_metric_info *m, const kvs_sim_stats *st)
{
	double v = kvs_metric_value(m->id, st);
	if (m->flags & KVS_MF_INT)
		return jint((uint64_t)v);
	return jreal(v);
}

static json_t *series(const kvs_sim_result *r, size_t off, bool is_u32, bool is_u64)
{
	json_t *a = json_array();
	for (size_t i = 0; i < r->nsamples; i++) {
		const char *base = (const char *)&r->samples[i];
		if (is_u32)
			json_array_append_new(a, jint(*(const uint32_t *)(base + off)));
		else if (is_u64)
			json_array_append_new(a, jint(*(const uint64_t *)(base + off)));
		else
			json_array_append_new(a, jreal(*(const double *)(base + off)));
	}
	return a;
}

static json_t *result_jt(const kvs_sim_result *r)
{
	const kvs_sim_stats *st = &r->st;
	json_t *o = json_object();
	set(o, "policy", json_string(kvs_policy_name(st->policy)));

	/* every figure of the metric table that policy objects carry */
	for (int i = 0; i < KVS_M_COUNT_; i++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)i);
		if (!(m->flags & KVS_MF_POLICY))
			continue;
		json_t *v;
		if (kvs_metric_is_empty(m, st))
			v = json_null();        /* no sample: no latency */
		else if ((m->flags & KVS_MF_SET_ONLY) && !(kvs_metric_value(m->id, st) >= 0))
			v = json_null();        /* not recorded */
		else if ((m->flags & KVS_MF_SLO) && !kvs_sim_config_has_slo(&r->cfg))
			v = json_null();        /* no SLO: nothing to meet */
		else
			v = metric_jt(m, st);
		set(group_of(o, m->group), m->field, v);
	}
	json_t *why = json_object();
	for (int i = 0; i < KVS_SIM_REJECT_COUNT_; i++)
		set(why, kvs_sim_reject_name((kvs_sim_reject)i), jint(st->rejected_by[i]));
	set(group_of(o, "accounting"), "rejected_by_reason", why);
	/* the SLOs the goodput counts against: settings, not figures */
	json_t *g = group_of(o, "goodput");
	set(g, "slo_ttft_s", opt_real(r->cfg.slo_ttft_s));
	set(g, "slo_tpot_s", opt_real(r->cfg.slo_tpot_s));

	json_t *ts = json_object();
	set(ts, "interval_s", jreal(r->sample_interval_s));
	set(ts, "t_s", series(r, offsetof(kvs_sim_sample, t_s), false, false));
	set(ts, "token_states_pct",
	    series(r, offsetof(kvs_sim_sample, mem.token_states), false, false));
	set(ts, "reservation_pct",
	    series(r, offsetof(kvs_sim_sample, mem.reservation), false, false));
	set(ts, "internal_fragmentation_pct",
	    series(r, offsetof(kvs_sim_sample, mem.internal_frag), false, false));
	set(ts, "external_fragmentation_pct",
	    series(r, offsetof(kvs_sim_sample, mem.external_frag), false, false));
	set(ts, "cached_idle_pct",
	    series(r, offsetof(kvs_sim_sample, mem.cached_idle), false, false));
	set(ts, "free_pct", series(r, offsetof(kvs_sim_sample, mem.free), false, false));
	set(ts, "running", series(r, offsetof(kvs_sim_sample, running), true, false));
	set(ts, "waiting", series(r, offsetof(kvs_sim_sample, waiting), false, true));
	set(o, "timeseries", ts);

	json_t *cdf = json_object();
	json_t *q = json_array();
	for (int i = 0; i <= 100; i++)
		json_array_append_new(q, jreal(i / 100.0));
	set(cdf, "q", q);
	static const struct { const char *key; kvs_sim_metric m; } keys[] = {
		{ "queue_delay_s", KVS_METRIC_QUEUE_DELAY },
		{ "ttft_s", KVS_METRIC_TTFT },
		{ "tpot_s", KVS_METRIC_TPOT },
		{ "e2e_s", KVS_METRIC_E2E },
	};
	for (size_t k = 0; k < KVS_ARRAY_LEN(keys); k++) {
		json_t *a = json_array();
		if (r->sk[keys[k].m].count)
			for (int i = 0; i <= 100; i++)
				json_array_append_new(a, jreal(kvs_sketch_quantile(
					&r->sk[keys[k].m], i / 100.0)));
		set(cdf, keys[k].key, a);
	}
	set(o, "cdf", cdf);
	if (kvs_sim_offload_stats_on(&r->offload))
		set(o, "kv_offload", kvs_sim_offload_jt(r));
	return o;
}

static json_t *ratio(double a, double b)
{
	return b > 0 && isfinite(a / b) ? jreal(a / b) : json_null();
}

static double waste_pct(const kvs_sim_stats *s)
{
	return kvs_metric_value(KVS_M_WASTE_PCT, s);
}

static json_t *report_jt(const char *command, kvs_sim_result *const *results,
			    size_t n, const char *trace_path, kvs_trace_format format,
			    const kvs_trace_stats *tstats)
{
	json_t *doc = json_object();
	set(doc, "kvsim_version", json_string(kvs_version()));
	set(doc, "command", json_string(command));
	if (n == 0)
		return doc;
	const kvs_sim_config *cfg = &results[0]->cfg;
	set(doc, "model", model_jt(&cfg->deploy.model));
	set(doc, "gpu", gpu_jt(&cfg->deploy.gpu));
	set(doc, "engine", engine_jt(cfg, &results[0]->st));
	set(doc, "trace", trace_jt(trace_path, format, tstats, &results[0]->st));
	json_t *pol = json_object();
	/* the ratios are taken against the registry's baseline policy */
	const kvs_sim_stats *paged = NULL;
	for (size_t i = 0; i < n; i++) {
		set(pol, kvs_policy_name(results[i]->st.policy), result_jt(results[i]));
		if (!paged && kvs_policy_has(results[i]->st.policy, KVS_TRAIT_BASELINE))
			paged = &results[i]->st;
	}
	set(doc, "policies", pol);
	if (strcmp(command, "compare") == 0 && paged) {
		json_t *rs = json_object();
		for (size_t i = 0; i < n; i++) {
			const kvs_sim_stats *o = &results[i]->st;
			if (o == paged)
				continue;
			json_t *r = json_object();
			set(r, "concurrency", ratio(paged->concurrency_mean, o->concurrency_mean));
			set(r, "throughput", ratio(paged->output_tokens_per_s, o->output_tokens_per_s));
			set(r, "requests_per_s", ratio(paged->requests_per_s, o->requests_per_s));
			set(r, "waste", ratio(waste_pct(paged), waste_pct(o)));
			set(r, "p99_queue_delay", ratio(paged->queue_delay_s.p99, o->queue_delay_s.p99));
			set(rs, kvs_policy_name(o->policy), r);
		}
		set(doc, "ratios", rs);
	}
	return doc;
}

kvs_status kvs_sim_json_write_text(const char *text, const char *path)
{
	/* the text and a newline, under a temporary name renamed when done */
	kvs_outfile *o;
	kvs_status st = kvs_outfile_open(path, &o);
	if (st != KVS_OK)
		return st;
	FILE *f = kvs_outfile_stream(o);
	if (fputs(text, f) < 0 || fputc('\n', f) == EOF) {
		kvs_outfile_discard(o);
		return kvs_fail(KVS_ERR_IO, "%s: write failed: %s", path, strerror(errno));
	}
	return kvs_outfile_commit(o);
}

kvs_status kvs_sim_json_write(const kvs_json *doc, const char *path)
{
	char *text = kvs_json_text(doc);
	if (!text)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (JSON)");
	kvs_status st = kvs_sim_json_write_text(text, path);
	free(text);
	return st;
}

kvs_status kvs_sim_timeseries_csv(kvs_sim_result *const *res, size_t n, FILE *f)
{
	fprintf(f, "policy,t_s,token_states_pct,reservation_pct,internal_fragmentation_pct,"
		   "external_fragmentation_pct,cached_idle_pct,free_pct,running,waiting\n");
	for (size_t i = 0; i < n; i++) {
		const kvs_sim_result *r = res[i];
		const char *name = kvs_policy_name(r->st.policy);
		for (size_t k = 0; k < r->nsamples; k++) {
			const kvs_sim_sample *s = &r->samples[k];
			fprintf(f, "%s,%.9g,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%u,%llu\n", name,
				s->t_s, s->mem.token_states, s->mem.reservation,
				s->mem.internal_frag, s->mem.external_frag, s->mem.cached_idle,
				s->mem.free, s->running, (unsigned long long)s->waiting);
		}
	}
	if (ferror(f))
		return kvs_fail(KVS_ERR_IO, "time series: write failed");
	return KVS_OK;
}

void kvs_sim_request_csv_header(FILE *f)
{
	fprintf(f, "policy,index,line,outcome,reason,arrival_s,admitted_s,first_token_s,"
		   "finish_s,prompt_tokens,output_tokens,cached_tokens,preemptions,"
		   "num_samples,ttft_s,tpot_s,itl_mean_s,e2e_s\n");
}

static void opt_time(FILE *f, double t)
{
	if (t >= 0)
		fprintf(f, ",%.9f", t);
	else
		fputs(",", f);
}

void kvs_sim_request_csv_row(FILE *f, const char *policy, const kvs_sim_request_record *r)
{
	static const char *const outcome[] = { "completed", "rejected", "unfinished" };
	fprintf(f, "%s,%llu,%llu,%s,%s", policy, (unsigned long long)r->index,
		(unsigned long long)r->line, outcome[r->outcome],
		r->outcome == KVS_SIM_REJECTED ? kvs_sim_reject_name(r->reason) : "");
	fprintf(f, ",%.9f", r->arrival_s);
	opt_time(f, r->admitted_s);
	opt_time(f, r->first_token_s);
	opt_time(f, r->finish_s);
	fprintf(f, ",%u,%u,%u,%u,%u", r->prompt_tokens, r->output_tokens,
		r->cached_tokens, r->preemptions, r->num_samples ? r->num_samples : 1);
	/* vLLM's per-request figures (benchmarks/serve): TTFT from arrival,
	 * TPOT = (e2e - TTFT) / (output - 1), end-to-end from arrival; the mean
	 * inter-token latency of one request is its TPOT (the gaps between its
	 * tokens sum to e2e - TTFT).  Empty where undefined. */
	double ttft = r->first_token_s >= 0 ? r->first_token_s - r->arrival_s : -1;
	double e2e = r->finish_s >= 0 ? r->finish_s - r->arrival_s : -1;
	double tpot = e2e >= 0 && ttft >= 0 && r->output_tokens > 1
		? (e2e - ttft) / (double)(r->output_tokens - 1) : -1;
	opt_time(f, ttft);
	opt_time(f, tpot);
	opt_time(f, tpot);
	opt_time(f, e2e);
	fputc('\n', f);
}

/* ---- the public, opaque face of the builders above ---------------------------- */

kvs_json *kvs_sim_model_json(const kvs_model *m)
{
	return kvs_json_of(model_jt(m));
}

kvs_json *kvs_sim_gpu_json(const kvs_gpu *g)
{
	return kvs_json_of(gpu_jt(g));
}

kvs_json *kvs_sim_engine_json(const kvs_sim_config *cfg, const kvs_sim_stats *sized)
{
	return kvs_json_of(engine_jt(cfg, sized));
}

kvs_json *kvs_sim_trace_json(const char *path, kvs_trace_format format,
			     const kvs_trace_stats *tstats, const kvs_sim_stats *st)
{
	return kvs_json_of(trace_jt(path, format, tstats, st));
}

kvs_json *kvs_sim_result_json(const kvs_sim_result *r)
{
	return kvs_json_of(result_jt(r));
}

kvs_json *kvs_sim_report_json(const char *command, kvs_sim_result *const *results,
			      size_t n, const char *trace_path, kvs_trace_format format,
			      const kvs_trace_stats *tstats)
{
	return kvs_json_of(report_jt(command, results, n, trace_path, format, tstats));
}

bool kvs_sim_cost_of(const kvs_deploy *d, const kvs_sim_stats *s, kvs_sim_cost *out)
{
	memset(out, 0, sizeof *out);
	double price = d->gpu_hour_price;
	if (!(price > 0))
		return false;
	out->gpus = kvs_deploy_rank_gpus(d);
	out->dollars_per_hour = price * out->gpus;
	out->dollars = out->dollars_per_hour * s->sim_time_s / 3600.0;
	out->per_million_output_tokens = s->output_tokens
		? out->dollars / (double)s->output_tokens * 1e6 : NAN;
	out->per_request = s->completed ? out->dollars / (double)s->completed : NAN;
	/* one running conversation's share of the replica for an hour */
	out->per_conversation_hour = s->concurrency_mean > 0
		? out->dollars_per_hour / s->concurrency_mean : NAN;
	return true;
}

kvs_json *kvs_sim_cost_json(const kvs_deploy *d, const kvs_sim_stats *st)
{
	kvs_sim_cost c;
	if (!kvs_sim_cost_of(d, st, &c))
		return NULL;
	json_t *o = json_object();
	if (!o)
		return NULL;
	set(o, "gpu_hour_price", jreal(d->gpu_hour_price));
	set(o, "gpus", jint(c.gpus));
	set(o, "dollars_per_hour", jreal(c.dollars_per_hour));
	set(o, "dollars", jreal(c.dollars));
	set(o, "dollars_per_million_output_tokens", jreal(c.per_million_output_tokens));
	set(o, "dollars_per_conversation_hour", jreal(c.per_conversation_hour));
	set(o, "dollars_per_request", jreal(c.per_request));
	return kvs_json_of(o);
}

kvs_json *kvs_sim_metric_json(const kvs_metric_info *m, const kvs_sim_stats *st)
{
	if (kvs_metric_is_empty(m, st))
		return kvs_json_of(json_null());   /* no sample: no latency */
	return kvs_json_of(metric_jt(m, st));
}

void kvs_sim_request_csv_on_request(void *ctx, const kvs_sim_request_record *r)
{
	const kvs_sim_request_csv *c = ctx;
	kvs_sim_request_csv_row(c->f, c->policy, r);
}

bool kvs_sim_config_has_slo(const kvs_sim_config *cfg)
{
	return cfg->slo_ttft_s > 0 || cfg->slo_tpot_s > 0 || cfg->slo_e2e_s > 0;
}

char *kvs_slo_phrase(char *buf, size_t n, double slo_ttft_s, double slo_tpot_s)
{
	bool ttft = slo_ttft_s > 0, tpot = slo_tpot_s > 0;
	if (ttft && tpot)
		snprintf(buf, n, "p99 TTFT <= %g s and p99 TPOT <= %g s", slo_ttft_s, slo_tpot_s);
	else if (ttft || tpot)
		snprintf(buf, n, "p99 %s <= %g s", ttft ? "TTFT" : "TPOT",
			 ttft ? slo_ttft_s : slo_tpot_s);
	else if (n)
		buf[0] = '\0';
	return buf;
}

bool kvs_sim_stats_meet_slo(const kvs_sim_stats *st, double slo_ttft_s, double slo_tpot_s)
{
	if (st->completed == 0)
		return false;
	if (slo_ttft_s > 0 && !(st->ttft_s.p99 <= slo_ttft_s))
		return false;
	if (slo_tpot_s > 0 && !(st->tpot_s.p99 <= slo_tpot_s))
		return false;
	return true;
}
