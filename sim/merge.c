/*
 * merge.c - several engines' results as one (a fleet as a whole).
 *
 * What adds up is summed (requests, tokens, bytes, preemptions, prefix
 * hits and misses, offload tier figures, pool sizes, steps, events);
 * latency distributions are merged bucket by bucket (the sketches share
 * their buckets, so the merged quantiles are those of all the values
 * together); time-weighted figures are weighted by what they are shares
 * of: memory parts by pool bytes over the fleet's time (a replica that
 * ended earlier holds its last state until then), concurrency and
 * waiting summed over replicas (each replica's mean over its own time,
 * carried to the fleet's time).  The time
 * series is summed at the coarsest sample interval of the replicas; a
 * replica that ended earlier keeps its last memory state and runs nothing.
 * Percentiles and maxima of concurrency and waiting come from that series
 * (the fleet's maximum is at least every replica's own).  docs/FLEET.md
 * lists every field.
 */
#include "sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static kvs_status copy_result(const kvs_sim_result *r, kvs_sim_result **out)
{
	kvs_sim_result *c = kvs_calloc(1, sizeof *c);
	if (!c)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (result)");
	c->cfg = r->cfg;
	c->st = r->st;
	c->offload = r->offload;
	c->sample_interval_s = r->sample_interval_s;
	for (int i = 0; i < KVS_METRIC_COUNT_; i++) {
		kvs_sketch_init(&c->sk[i]);
		if (kvs_sketch_merge(&c->sk[i], &r->sk[i]) != KVS_OK) {
			kvs_sim_result_destroy(c);
			return KVS_ERR_NOMEM;
		}
	}
	if (r->nsamples) {
		c->samples = kvs_reallocarray(NULL, r->nsamples, sizeof *c->samples);
		if (!c->samples) {
			kvs_sim_result_destroy(c);
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (time series)");
		}
		memcpy(c->samples, r->samples, r->nsamples * sizeof *c->samples);
		c->nsamples = r->nsamples;
	}
	*out = c;
	return KVS_OK;
}

static void add_pct(kvs_sim_mem_pct *acc, const kvs_sim_mem_pct *p, double w)
{
	acc->token_states += p->token_states * w;
	acc->reservation += p->reservation * w;
	acc->internal_frag += p->internal_frag * w;
	acc->external_frag += p->external_frag * w;
	acc->cached_idle += p->cached_idle * w;
	acc->free += p->free * w;
}

static void scale_pct(kvs_sim_mem_pct *p, double k)
{
	p->token_states *= k;
	p->reservation *= k;
	p->internal_frag *= k;
	p->external_frag *= k;
	p->cached_idle *= k;
	p->free *= k;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The summed time series at the coarsest interval; concurrency and waiting
 * percentiles and maxima from it. */
static kvs_status merge_series(const kvs_sim_result *const *rs, size_t n,
			       kvs_sim_result *m)
{
	double iv = 0, end = 0, B = 0;
	for (size_t i = 0; i < n; i++) {
		if (rs[i]->sample_interval_s > iv)
			iv = rs[i]->sample_interval_s;
		if (rs[i]->nsamples && rs[i]->samples[rs[i]->nsamples - 1].t_s > end)
			end = rs[i]->samples[rs[i]->nsamples - 1].t_s;
		B += (double)rs[i]->st.kv_budget_bytes;
	}
	m->sample_interval_s = iv > 0 ? iv : 1.0;
	bool any = false;
	for (size_t i = 0; i < n; i++)
		any |= rs[i]->nsamples > 0;
	if (!any || !(B > 0))
		return KVS_OK;
	size_t ns = (size_t)floor(end / m->sample_interval_s + 1e-9) + 1;
	m->samples = kvs_calloc(ns, sizeof *m->samples);
	size_t *at = kvs_calloc(n, sizeof *at);
	uint64_t *run = kvs_calloc(ns, sizeof *run), *wait = kvs_calloc(ns, sizeof *wait);
	if (!m->samples || !at || !run || !wait) {
		kvs_free(at);
		kvs_free(run);
		kvs_free(wait);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (time series)");
	}
	for (size_t j = 0; j < ns; j++) {
		double t = (double)j * m->sample_interval_s;
		kvs_sim_sample *o = &m->samples[j];
		o->t_s = t;
		for (size_t i = 0; i < n; i++) {
			const kvs_sim_result *r = rs[i];
			if (!r->nsamples) {
				o->mem.free += 100.0 * (double)r->st.kv_budget_bytes / B;
				continue;
			}
			/* the last sample at or before t */
			while (at[i] + 1 < r->nsamples &&
			       r->samples[at[i] + 1].t_s <= t + 1e-9 * m->sample_interval_s)
				at[i]++;
			const kvs_sim_sample *sm = &r->samples[at[i]];
			bool live = fabs(sm->t_s - t) <= 1e-9 * m->sample_interval_s + 1e-12 ||
				    at[i] + 1 < r->nsamples;
			add_pct(&o->mem, &sm->mem, (double)r->st.kv_budget_bytes / B);
			if (live) {
				o->running += sm->running;
				o->waiting += sm->waiting;
			}
		}
		run[j] = o->running;
		wait[j] = o->waiting;
	}
	m->nsamples = ns;
	kvs_sim_stats *st = &m->st;
	qsort(run, ns, sizeof *run, cmp_u64);
	qsort(wait, ns, sizeof *wait, cmp_u64);
	st->concurrency_p50 = (double)run[(size_t)floor(0.50 * (double)(ns - 1))];
	st->concurrency_p99 = (double)run[(size_t)floor(0.99 * (double)(ns - 1))];
	if (run[ns - 1] > st->concurrency_max)
		st->concurrency_max = run[ns - 1];
	if (wait[ns - 1] > st->waiting_max)
		st->waiting_max = wait[ns - 1];
	kvs_free(at);
	kvs_free(run);
	kvs_free(wait);
	return KVS_OK;
}

kvs_status kvs_sim_result_merge(const kvs_sim_result *const *rs, size_t n,
				kvs_sim_result **out)
{
	if (!rs || !out || n == 0)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_result_merge: no results");
	if (n == 1)
		return copy_result(rs[0], out);
	kvs_sim_result *m = kvs_calloc(1, sizeof *m);
	if (!m)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (result)");
	m->cfg = rs[0]->cfg;
	for (int i = 0; i < KVS_METRIC_COUNT_; i++)
		kvs_sketch_init(&m->sk[i]);
	kvs_sim_stats *st = &m->st;
	st->policy = rs[0]->st.policy;
	st->kv_bytes_per_token = rs[0]->st.kv_bytes_per_token;
	st->max_model_len = rs[0]->st.max_model_len;
	st->wall_s = -1;
	double T = 0, wmem = 0, wpeak = 0, conc = 0, waitm = 0, tokens = 0, good = 0;
	double held_peak = -1;
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		const kvs_sim_stats *r = &rs[i]->st;
		st->interrupted |= r->interrupted;
		if (r->sim_time_s > T)
			T = r->sim_time_s;
	}
	for (size_t i = 0; i < n; i++) {
		const kvs_sim_result *R = rs[i];
		const kvs_sim_stats *r = &R->st;
		st->arrived += r->arrived;
		st->completed += r->completed;
		st->rejected += r->rejected;
		st->unfinished += r->unfinished;
		for (int k = 0; k < KVS_SIM_REJECT_COUNT_; k++)
			st->rejected_by[k] += r->rejected_by[k];
		st->multi_sample_requests += r->multi_sample_requests;
		double B = (double)r->kv_budget_bytes;
		double w = B * r->sim_time_s;
		add_pct(&st->memory_pct, &r->memory_pct, w);
		/* a replica that ended before the fleet holds its last state
		 * (its pool free but for cached and unfinished blocks) until
		 * the fleet's end: the fleet's memory is over the fleet's time,
		 * as its concurrency is */
		if (T > r->sim_time_s)
			add_pct(&st->memory_pct, &R->end_pct, B * (T - r->sim_time_s));
		wmem += B * (r->sim_time_s > T ? r->sim_time_s : T);
		add_pct(&st->memory_peak_pct, &r->memory_peak_pct, B);
		wpeak += B;
		double held = r->memory_peak_pct.token_states + r->memory_peak_pct.reservation +
			      r->memory_peak_pct.internal_frag;
		if (held > held_peak) {
			held_peak = held;
			st->peak_time_s = r->peak_time_s;
		}
		st->kv_budget_bytes += r->kv_budget_bytes;
		st->num_blocks += r->num_blocks;
		if (r->max_model_len < st->max_model_len)
			st->max_model_len = r->max_model_len;
		if (r->metadata_bytes_max > st->metadata_bytes_max)
			st->metadata_bytes_max = r->metadata_bytes_max;
		conc += r->concurrency_mean * r->sim_time_s;
		waitm += r->waiting_mean * r->sim_time_s;
		if (r->concurrency_max > st->concurrency_max)
			st->concurrency_max = r->concurrency_max;
		if (r->waiting_max > st->waiting_max)
			st->waiting_max = r->waiting_max;
		tokens += r->tokens_per_step_mean * (double)r->steps;
		if (r->tokens_per_step_max > st->tokens_per_step_max)
			st->tokens_per_step_max = r->tokens_per_step_max;
		st->prompt_tokens += r->prompt_tokens;
		st->output_tokens += r->output_tokens;
		good += round(r->goodput_fraction *
			      (double)(r->completed + r->rejected + r->unfinished));
		st->preemptions += r->preemptions;
		st->recomputed_tokens += r->recomputed_tokens;
		st->swap_out_bytes += r->swap_out_bytes;
		st->swap_in_bytes += r->swap_in_bytes;
		st->swapped_bytes += r->swapped_bytes;
		st->forked_sequences += r->forked_sequences;
		st->cow_copies += r->cow_copies;
		st->copy_bytes += r->copy_bytes;
		st->prefix_hit_tokens += r->prefix_hit_tokens;
		st->prefix_hit_blocks += r->prefix_hit_blocks;
		st->prefix_miss_tokens += r->prefix_miss_tokens;
		st->prefix_miss_blocks += r->prefix_miss_blocks;
		kvs_sim_offload_merge(&m->offload, &R->offload);
		if (r->arrived) {
			if (first || r->first_arrival_s < st->first_arrival_s)
				st->first_arrival_s = r->first_arrival_s;
			if (first || r->last_arrival_s > st->last_arrival_s)
				st->last_arrival_s = r->last_arrival_s;
			first = false;
		}
		st->steps += r->steps;
		st->events += r->events;
		st->spans += r->spans;
		for (int k = 0; k < KVS_METRIC_COUNT_; k++) {
			kvs_status rc = kvs_sketch_merge(&m->sk[k], &R->sk[k]);
			if (rc != KVS_OK) {
				kvs_sim_result_destroy(m);
				return rc;
			}
		}
	}
	st->sim_time_s = T;
	if (wmem > 0)
		scale_pct(&st->memory_pct, 1.0 / wmem);
	else
		st->memory_pct.free = 100.0;
	if (wpeak > 0)
		scale_pct(&st->memory_peak_pct, 1.0 / wpeak);
	if (T > 0) {
		st->concurrency_mean = conc / T;
		st->waiting_mean = waitm / T;
		st->requests_per_s = (double)st->completed / T;
		st->output_tokens_per_s = (double)st->output_tokens / T;
		st->goodput_requests_per_s = good / T;
	}
	if (st->steps)
		st->tokens_per_step_mean = tokens / (double)st->steps;
	st->goodput_fraction = st->arrived ? good / (double)st->arrived : 0;
	uint64_t tt = st->prefix_hit_tokens + st->prefix_miss_tokens;
	uint64_t tb = st->prefix_hit_blocks + st->prefix_miss_blocks;
	st->prefix_hit_rate_tokens = tt ? (double)st->prefix_hit_tokens / (double)tt : 0;
	st->prefix_hit_rate_blocks = tb ? (double)st->prefix_hit_blocks / (double)tb : 0;
	kvs_sketch_dist(&m->sk[KVS_METRIC_QUEUE_DELAY], &st->queue_delay_s);
	kvs_sketch_dist(&m->sk[KVS_METRIC_TTFT], &st->ttft_s);
	kvs_sketch_dist(&m->sk[KVS_METRIC_TPOT], &st->tpot_s);
	kvs_sketch_dist(&m->sk[KVS_METRIC_E2E], &st->e2e_s);
	kvs_status rc = merge_series(rs, n, m);
	if (rc != KVS_OK) {
		kvs_sim_result_destroy(m);
		return rc;
	}
	*out = m;
	return KVS_OK;
}
