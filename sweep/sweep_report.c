/*
 * sweep_report.c - the recommendation per objective, and the sweep's JSON
 * (docs/REPORT-JSON.md "Sweep") and CSV forms.
 *
 * Every choice breaks ties the same way: the cheaper attention kernel
 * (lower relative cost), then the earlier row, so recommendations are as
 * deterministic as the rows.
 */
#include "kvs_config.h"
#include "sweep_internal.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static bool better_tie(const kvs_sweep_row *a, size_t ia, const kvs_sweep_row *b,
		       size_t ib)
{
	if (a->kernel.rel != b->kernel.rel)
		return a->kernel.rel < b->kernel.rel;
	return ia < ib;
}

static void slo_text(const kvs_sweep_config *c, char *buf, size_t n)
{
	if (c->slo_ttft_s > 0 && c->slo_tpot_s > 0)
		snprintf(buf, n, "p99 TTFT <= %g s and TPOT <= %g s", c->slo_ttft_s,
			 c->slo_tpot_s);
	else if (c->slo_ttft_s > 0)
		snprintf(buf, n, "p99 TTFT <= %g s", c->slo_ttft_s);
	else if (c->slo_tpot_s > 0)
		snprintf(buf, n, "p99 TPOT <= %g s", c->slo_tpot_s);
	else
		snprintf(buf, n, "no SLO given");
}

static void set_rec(kvs_sweep_recommendation *rec, const kvs_sweep_row *row)
{
	rec->found = true;
	rec->policy = row->policy;
	rec->block_size = row->block_size;
}

void kvs_sweep_recommend(kvs_sweep_result *R)
{
	const kvs_sweep_config *c = &R->cfg;
	char slo[96];
	slo_text(c, slo, sizeof slo);
	for (int o = 0; o < KVS_OBJ_COUNT_; o++) {
		memset(&R->rec[o], 0, sizeof R->rec[o]);
		R->rec[o].objective = (kvs_sweep_objective)o;
	}
	R->rec[KVS_OBJ_THROUGHPUT].objective_name = "throughput_within_slo";
	R->rec[KVS_OBJ_WASTE].objective_name = "least_kv_waste";
	R->rec[KVS_OBJ_PREFIX].objective_name = "best_prefix_hit_rate";

	/* throughput: the highest sustainable rate when searched, else the
	 * highest output tokens/s among rows within the SLOs */
	kvs_sweep_recommendation *rt = &R->rec[KVS_OBJ_THROUGHPUT];
	size_t best = SIZE_MAX;
	if (R->caps) {
		for (size_t i = 0; i < R->ncaps; i++) {
			const kvs_sweep_capacity *k = &R->caps[i];
			if (k->outcome == KVS_CAPACITY_UNATTAINABLE)
				continue;
			if (best == SIZE_MAX || k->max_rate > R->caps[best].max_rate ||
			    (k->max_rate == R->caps[best].max_rate &&
			     better_tie(&R->rows[i], i, &R->rows[best], best)))
				best = i;
		}
		if (best != SIZE_MAX) {
			const kvs_sweep_capacity *k = &R->caps[best];
			set_rec(rt, &R->rows[best]);
			snprintf(rt->reason, sizeof rt->reason,
				 "%s at block size %u sustains %.3g requests/s (%.3g conversations "
				 "per GPU) with %s, the highest rate of the %zu combinations%s.",
				 kvs_policy_name(k->policy), k->block_size, k->max_rate,
				 k->conversations_per_gpu, slo, R->ncaps,
				 k->outcome == KVS_CAPACITY_UNBOUNDED ? " (the search limit)" : "");
		} else {
			snprintf(rt->reason, sizeof rt->reason,
				 "No combination meets %s at any rate searched: relax the SLOs "
				 "or use a faster deployment.", slo);
		}
	} else {
		/* rows within 1% of the best throughput serve the trace alike:
		 * among them the lowest p99 TTFT wins */
		double top = -1;
		for (size_t i = 0; i < R->nrows; i++)
			if (R->rows[i].meets_slo && R->rows[i].st.output_tokens_per_s > top)
				top = R->rows[i].st.output_tokens_per_s;
		for (size_t i = 0; i < R->nrows; i++) {
			const kvs_sweep_row *r = &R->rows[i];
			if (!r->meets_slo || r->st.output_tokens_per_s < 0.99 * top)
				continue;
			if (best == SIZE_MAX || r->st.ttft_s.p99 < R->rows[best].st.ttft_s.p99 ||
			    (r->st.ttft_s.p99 == R->rows[best].st.ttft_s.p99 &&
			     better_tie(r, i, &R->rows[best], best)))
				best = i;
		}
		if (best != SIZE_MAX) {
			const kvs_sweep_row *r = &R->rows[best];
			set_rec(rt, r);
			snprintf(rt->reason, sizeof rt->reason,
				 "%s at block size %u delivers %.4g output tokens/s (within 1%% of "
				 "the best of the %zu combinations at the trace's rate) with the "
				 "lowest p99 TTFT among them, %.3g s, and p99 TPOT %.3g s (%s).",
				 kvs_policy_name(r->policy), r->block_size,
				 r->st.output_tokens_per_s, R->nrows, r->st.ttft_s.p99,
				 r->st.tpot_s.p99, slo);
		} else {
			snprintf(rt->reason, sizeof rt->reason,
				 "No combination meets %s at the trace's rate: lower the rate "
				 "(--time-scale) or relax the SLOs.", slo);
		}
	}

	/* least waste: reservation + internal + external fragmentation */
	kvs_sweep_recommendation *rw = &R->rec[KVS_OBJ_WASTE];
	best = SIZE_MAX;
	for (size_t i = 0; i < R->nrows; i++) {
		double w = kvs_sweep_row_waste_pct(&R->rows[i]);
		double bw = best == SIZE_MAX ? INFINITY : kvs_sweep_row_waste_pct(&R->rows[best]);
		if (w < bw || (w == bw && better_tie(&R->rows[i], i, &R->rows[best], best)))
			best = i;
	}
	if (best != SIZE_MAX) {
		const kvs_sweep_row *r = &R->rows[best];
		set_rec(rw, r);
		snprintf(rw->reason, sizeof rw->reason,
			 "%s at block size %u leaves the least KV memory held but unused: "
			 "%.3g%% of the budget on average (reservation %.3g%%, internal "
			 "fragmentation %.3g%%, external %.3g%%).",
			 kvs_policy_name(r->policy), r->block_size, kvs_sweep_row_waste_pct(r),
			 r->st.memory_pct.reservation, r->st.memory_pct.internal_frag,
			 r->st.memory_pct.external_frag);
	}

	/* prefix hits, in tokens */
	kvs_sweep_recommendation *rp = &R->rec[KVS_OBJ_PREFIX];
	best = SIZE_MAX;
	for (size_t i = 0; i < R->nrows; i++) {
		const kvs_sweep_row *r = &R->rows[i];
		if (r->st.prefix_hit_tokens == 0)
			continue;
		if (best == SIZE_MAX ||
		    r->st.prefix_hit_rate_tokens > R->rows[best].st.prefix_hit_rate_tokens ||
		    (r->st.prefix_hit_rate_tokens == R->rows[best].st.prefix_hit_rate_tokens &&
		     better_tie(r, i, &R->rows[best], best)))
			best = i;
	}
	if (best != SIZE_MAX) {
		const kvs_sweep_row *r = &R->rows[best];
		set_rec(rp, r);
		snprintf(rp->reason, sizeof rp->reason,
			 "%s at block size %u reuses %.3g%% of prompt tokens from the prefix "
			 "cache, the most of any combination (coarser blocks share only "
			 "whole blocks).",
			 kvs_policy_name(r->policy), r->block_size,
			 100.0 * r->st.prefix_hit_rate_tokens);
	} else {
		snprintf(rp->reason, sizeof rp->reason, "%s",
			 c->base.enable_prefix_caching
			 ? "No prefix-cache hits in any combination: the trace's prompts "
			   "share no hash-identified prefix."
			 : "Prefix caching is off (--enable-prefix-caching), so no "
			   "combination reuses prompt blocks.");
	}
}

/* ---- JSON ---------------------------------------------------------------------- */

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static void jset(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v ? v : json_null());
}

static json_t *row_json(const kvs_sweep_row *r)
{
	const kvs_sim_stats *s = &r->st;
	json_t *o = json_object();
	jset(o, "policy", json_string(kvs_policy_name(r->policy)));
	jset(o, "block_size", jint(r->block_size));
	jset(o, "internal_fragmentation_pct", jreal(s->memory_pct.internal_frag));
	jset(o, "external_fragmentation_pct", jreal(s->memory_pct.external_frag));
	jset(o, "reservation_pct", jreal(s->memory_pct.reservation));
	jset(o, "token_states_pct", jreal(s->memory_pct.token_states));
	jset(o, "waste_pct", jreal(kvs_sweep_row_waste_pct(r)));
	jset(o, "metadata_bytes", jint(s->metadata_bytes_max));
	jset(o, "num_gpu_blocks", jint(s->num_blocks));
	jset(o, "prefix_hit_rate", jreal(s->prefix_hit_rate_tokens));
	jset(o, "prefix_hit_rate_blocks", jreal(s->prefix_hit_rate_blocks));
	jset(o, "prefix_hit_tokens", jint(s->prefix_hit_tokens));
	jset(o, "concurrency_mean", jreal(s->concurrency_mean));
	jset(o, "concurrency_p99", jreal(s->concurrency_p99));
	jset(o, "concurrency_max", jint(s->concurrency_max));
	jset(o, "queue_delay_p50_s", jreal(s->queue_delay_s.p50));
	jset(o, "queue_delay_p99_s", jreal(s->queue_delay_s.p99));
	jset(o, "ttft_p50_s", jreal(s->ttft_s.p50));
	jset(o, "ttft_p90_s", jreal(s->ttft_s.p90));
	jset(o, "ttft_p99_s", jreal(s->ttft_s.p99));
	jset(o, "tpot_p50_s", jreal(s->tpot_s.p50));
	jset(o, "tpot_p90_s", jreal(s->tpot_s.p90));
	jset(o, "tpot_p99_s", jreal(s->tpot_s.p99));
	jset(o, "requests_per_s", jreal(s->requests_per_s));
	jset(o, "output_tokens_per_s", jreal(s->output_tokens_per_s));
	jset(o, "goodput_requests_per_s", jreal(s->goodput_requests_per_s));
	jset(o, "preemptions", jint(s->preemptions));
	jset(o, "recomputed_tokens", jint(s->recomputed_tokens));
	jset(o, "arrived", jint(s->arrived));
	jset(o, "completed", jint(s->completed));
	jset(o, "rejected", jint(s->rejected));
	jset(o, "unfinished", jint(s->unfinished));
	jset(o, "sim_time_s", jreal(s->sim_time_s));
	jset(o, "kernel_cost_us", jreal(r->kernel.cost_us));
	jset(o, "kernel_relative_cost", jreal(r->kernel.rel));
	jset(o, "kernel_source", json_string(kvs_kernel_source_name(r->kernel.source)));
	jset(o, "meets_slo", json_boolean(r->meets_slo));
	jset(o, "repeated", json_boolean(r->repeated));
	return o;
}

static json_t *cap_json(const kvs_sweep_capacity *k, const kvs_sweep_config *c)
{
	json_t *o = json_object();
	jset(o, "policy", json_string(kvs_policy_name(k->policy)));
	jset(o, "block_size", jint(k->block_size));
	jset(o, "outcome", json_string(kvs_capacity_outcome_name(k->outcome)));
	jset(o, "max_rate", jreal(k->max_rate));
	jset(o, "fail_rate", k->fail_rate > 0 ? jreal(k->fail_rate) : json_null());
	jset(o, "time_scale", jreal(k->time_scale));
	jset(o, "tolerance", jreal(k->tolerance));
	jset(o, "slo_ttft_s", c->slo_ttft_s > 0 ? jreal(c->slo_ttft_s) : json_null());
	jset(o, "slo_tpot_s", c->slo_tpot_s > 0 ? jreal(c->slo_tpot_s) : json_null());
	jset(o, "ttft_p99_s", jreal(k->ttft_p99_s));
	jset(o, "tpot_p99_s", jreal(k->tpot_p99_s));
	jset(o, "concurrency_mean", jreal(k->concurrency_mean));
	jset(o, "conversations_per_gpu", jreal(k->conversations_per_gpu));
	jset(o, "requests_per_s_per_gpu", jreal(k->requests_per_s_per_gpu));
	jset(o, "output_tokens_per_s", jreal(k->output_tokens_per_s));
	jset(o, "simulations", jint(k->simulations));
	jset(o, "repeated", json_boolean(k->repeated));
	return o;
}

json_t *kvs_sweep_result_json(const kvs_sweep_result *R, const kvs_request_set *rs)
{
	const kvs_sweep_config *c = &R->cfg;
	json_t *doc = json_object();
	if (!doc)
		return NULL;
	jset(doc, "kvsim_version", json_string(kvs_version()));
	jset(doc, "command", json_string("sweep"));
	jset(doc, "model", kvs_sim_model_json(&c->base.deploy.model));
	jset(doc, "gpu", kvs_sim_gpu_json(&c->base.deploy.gpu));
	const kvs_sim_stats *st0 = R->nrows ? &R->rows[0].st : NULL;
	kvs_sim_config ec = c->base;
	ec.slo_ttft_s = c->slo_ttft_s;
	ec.slo_tpot_s = c->slo_tpot_s;
	json_t *eng = kvs_sim_engine_json(&ec, st0);
	if (eng) {
		/* block size and pool blocks vary by row */
		json_object_del(eng, "block_size");
		json_object_del(eng, "num_gpu_blocks");
		json_t *bs = json_array(), *ps = json_array();
		for (size_t i = 0; i < c->nblock_sizes; i++)
			json_array_append_new(bs, jint(c->block_sizes[i]));
		for (size_t i = 0; i < c->npolicies; i++)
			json_array_append_new(ps, json_string(kvs_policy_name(c->policies[i])));
		jset(eng, "block_sizes", bs);
		jset(eng, "policies", ps);
		jset(eng, "time_scale", jreal(c->time_scale));
	}
	jset(doc, "engine", eng);
	jset(doc, "trace", kvs_sim_trace_json(rs ? kvs_request_set_path(rs) : NULL,
					      rs ? kvs_request_set_format(rs) : KVS_TRACE_AUTO,
					      rs ? kvs_request_set_trace_stats(rs) : NULL, st0));
	json_t *k = json_object();
	jset(k, "model", json_string(c->kernel_profile ? "profile" : "analytic"));
	jset(k, "block_overhead_tokens",
	    jreal(c->kernel_profile ? kvs_kernel_profile_fit_delta(c->kernel_profile)
				    : c->kernel_block_overhead));
	jset(k, "feeds_step_time", json_boolean(c->kernel_feeds_step_time));
	jset(k, "mean_decode_context", jreal(R->mean_context));
	if (c->kernel_profile) {
		jset(k, "profile", json_string(kvs_kernel_profile_path(c->kernel_profile)));
		jset(k, "profile_gpu", json_string(kvs_kernel_profile_gpu(c->kernel_profile)));
	}
	jset(doc, "kernel", k);
	json_t *rows = json_array();
	for (size_t i = 0; i < R->nrows; i++)
		json_array_append_new(rows, row_json(&R->rows[i]));
	jset(doc, "rows", rows);
	if (R->caps) {
		json_t *caps = json_array();
		for (size_t i = 0; i < R->ncaps; i++)
			json_array_append_new(caps, cap_json(&R->caps[i], c));
		jset(doc, "capacity", caps);
		jset(doc, "base_rate", jreal(R->base_rate));
	}
	json_t *recs = json_array();
	for (int o = 0; o < KVS_OBJ_COUNT_; o++) {
		const kvs_sweep_recommendation *r = &R->rec[o];
		json_t *x = json_object();
		jset(x, "objective", json_string(r->objective_name));
		jset(x, "found", json_boolean(r->found));
		jset(x, "policy", r->found ? json_string(kvs_policy_name(r->policy)) : json_null());
		jset(x, "block_size", r->found ? jint(r->block_size) : json_null());
		jset(x, "reason", json_string(r->reason));
		json_array_append_new(recs, x);
	}
	jset(doc, "recommendations", recs);
	jset(doc, "simulations", jint(R->simulations));
	return doc;
}

/* ---- CSV -------------------------------------------------------------------------- */

kvs_status kvs_sweep_result_csv(const kvs_sweep_result *R, FILE *f)
{
	fprintf(f, "policy,block_size,internal_fragmentation_pct,external_fragmentation_pct,"
		"reservation_pct,waste_pct,metadata_bytes,prefix_hit_rate,concurrency_mean,"
		"concurrency_p99,queue_delay_p99_s,ttft_p50_s,ttft_p90_s,ttft_p99_s,"
		"tpot_p50_s,tpot_p90_s,tpot_p99_s,requests_per_s,output_tokens_per_s,"
		"preemptions,kernel_relative_cost,kernel_cost_us,kernel_source,meets_slo");
	if (R->caps)
		fprintf(f, ",capacity_outcome,max_rate,fail_rate,conversations_per_gpu,"
			"requests_per_s_per_gpu");
	fputc('\n', f);
	for (size_t i = 0; i < R->nrows; i++) {
		const kvs_sweep_row *r = &R->rows[i];
		const kvs_sim_stats *s = &r->st;
		fprintf(f, "%s,%u,%.6g,%.6g,%.6g,%.6g,%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,"
			"%.6g,%.6g,%.6g,%.6g,%.6g,%llu,%.6g,%.6g,%s,%d",
			kvs_policy_name(r->policy), r->block_size, s->memory_pct.internal_frag,
			s->memory_pct.external_frag, s->memory_pct.reservation,
			kvs_sweep_row_waste_pct(r), (unsigned long long)s->metadata_bytes_max,
			s->prefix_hit_rate_tokens, s->concurrency_mean, s->concurrency_p99,
			s->queue_delay_s.p99, s->ttft_s.p50, s->ttft_s.p90, s->ttft_s.p99,
			s->tpot_s.p50, s->tpot_s.p90, s->tpot_s.p99, s->requests_per_s,
			s->output_tokens_per_s, (unsigned long long)s->preemptions,
			r->kernel.rel, r->kernel.cost_us, kvs_kernel_source_name(r->kernel.source),
			r->meets_slo ? 1 : 0);
		if (R->caps) {
			const kvs_sweep_capacity *k = &R->caps[i];
			fprintf(f, ",%s,%.6g,%.6g,%.6g,%.6g", kvs_capacity_outcome_name(k->outcome),
				k->max_rate, k->fail_rate, k->conversations_per_gpu,
				k->requests_per_s_per_gpu);
		}
		fputc('\n', f);
	}
	if (fflush(f) != 0 || ferror(f))
		return kvs_fail(KVS_ERR_IO, "writing the sweep CSV failed");
	return KVS_OK;
}
