/*
 * metric.c - the metric table: one row per reported figure.
 *
 * Key, policy-object place and unit come from KVS_METRIC_LIST (kvsim/sim.h);
 * the row here adds where the figure lives in kvs_sim_stats, which outputs
 * carry it (replay/compare policy objects, sweep rows), its earlier names,
 * and how the replay/compare table prints it.  The rows are in the order of
 * that table.  sim/report.c, sweep/sweep_report.c, cli/cli_sim.c and
 * report/report_parse.c walk this table instead of spelling keys.
 */
#include "sim_internal.h"

#include <stddef.h>
#include <string.h>

#define P KVS_MF_POLICY
#define S KVS_MF_SWEEP
#define I KVS_MF_INT
#define D KVS_MF_DIST
#define ST(m) offsetof(kvs_sim_stats, m)

static double waste(const kvs_sim_stats *s)
{
	return s->memory_pct.reservation + s->memory_pct.internal_frag +
	       s->memory_pct.external_frag;
}

static double peak_waste(const kvs_sim_stats *s)
{
	return s->memory_peak_pct.reservation + s->memory_peak_pct.internal_frag +
	       s->memory_peak_pct.external_frag;
}

/* The part of a row after key, group, field and unit, per id:
 * old key, old field, flags; the replay table's section, label, format and
 * scale; the offset in kvs_sim_stats (or a derive function) and, for a
 * distribution, the offset of its kvs_sim_dist; the report page's section,
 * label and style. */
#define R_ARRIVED NULL, NULL, P | S | I, "requests", "  arrived", "%.0f", 1, ST(arrived), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_COMPLETED NULL, NULL, P | S | I, NULL, "  completed", "%.0f", 1, ST(completed), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_REJECTED NULL, NULL, P | S | I, NULL, "  rejected", "%.0f", 1, ST(rejected), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_UNFINISHED NULL, NULL, P | S | I, NULL, "  unfinished", "%.0f", 1, ST(unfinished), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_MULTI_SAMPLE NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(multi_sample_requests), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
/* a part of the KV budget after the first: time-weighted (in the replay
 * table, and in sweep rows when flags say so) and at peak use (on the
 * report page only) */
#define MEM_ROW(f, flags, label, page_label) NULL, NULL, P | (flags), NULL, label, "%.2f", 1, \
	ST(memory_pct.f), NULL, 0, \
	NULL, page_label, KVS_MS_PCT
#define PEAK_ROW(f, page_label) NULL, NULL, P, NULL, NULL, NULL, 1, ST(memory_peak_pct.f), NULL, 0, \
	NULL, page_label, KVS_MS_PCT
#define R_TOKEN_STATES_PCT NULL, NULL, P | S, "KV memory, time-weighted (% of pool)", \
	"  token states", "%.2f", 1, ST(memory_pct.token_states), NULL, 0, \
	"KV memory, time-weighted (% of KV budget)", "token states", KVS_MS_PCT
#define R_RESERVATION_PCT MEM_ROW(reservation, S, "  reservation", "reservation")
#define R_INTERNAL_FRAG_PCT MEM_ROW(internal_frag, S, "  internal fragmentation", \
	"internal fragmentation")
#define R_EXTERNAL_FRAG_PCT MEM_ROW(external_frag, S, "  external fragmentation", \
	"external fragmentation")
#define R_CACHED_IDLE_PCT MEM_ROW(cached_idle, 0, "  cached idle", "cached-idle")
#define R_FREE_PCT MEM_ROW(free, 0, "  free", "free")
#define R_WASTE_PCT NULL, NULL, S, NULL, NULL, NULL, 1, 0, waste, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_PEAK_TOKEN_STATES_PCT NULL, NULL, P, "KV memory at peak use (% of pool)", \
	"  token states", "%.2f", 1, ST(memory_peak_pct.token_states), NULL, 0, \
	"KV memory at peak use (% of KV budget)", "token states", KVS_MS_PCT
#define R_PEAK_RESERVATION_PCT PEAK_ROW(reservation, "reservation")
#define R_PEAK_INTERNAL_FRAG_PCT PEAK_ROW(internal_frag, "internal fragmentation")
#define R_PEAK_EXTERNAL_FRAG_PCT PEAK_ROW(external_frag, "external fragmentation")
#define R_PEAK_CACHED_IDLE_PCT PEAK_ROW(cached_idle, "cached-idle")
#define R_PEAK_FREE_PCT PEAK_ROW(free, "free")
#define R_PEAK_WASTE_PCT NULL, NULL, 0, NULL, "  reserved or fragmented", "%.2f", 1, 0, \
	peak_waste, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_PEAK_TIME_S NULL, NULL, P, NULL, NULL, NULL, 1, ST(peak_time_s), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_KV_BUDGET_BYTES NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(kv_budget_bytes), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_KV_BYTES_PER_TOKEN NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(kv_bytes_per_token), \
	NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_NUM_GPU_BLOCKS NULL, "num_blocks", P | S | I, NULL, NULL, NULL, 1, ST(num_blocks), \
	NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_METADATA_BYTES_MAX "metadata_bytes", NULL, P | S | I, NULL, NULL, NULL, 1, \
	ST(metadata_bytes_max), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_CONC_MEAN NULL, NULL, P | S, "concurrency (running sequences)", "  mean", "%.1f", 1, \
	ST(concurrency_mean), NULL, 0, \
	"Concurrency", "running sequences mean", KVS_MS_NUM
#define R_CONC_P50 NULL, NULL, P, NULL, "  p50", "%.0f", 1, ST(concurrency_p50), NULL, 0, \
	NULL, "running sequences p50", KVS_MS_NUM
#define R_CONC_P99 NULL, NULL, P | S, NULL, "  p99", "%.0f", 1, ST(concurrency_p99), NULL, 0, \
	NULL, "running sequences p99", KVS_MS_NUM
#define R_CONC_MAX NULL, NULL, P | S | I, NULL, "  max", "%.0f", 1, ST(concurrency_max), NULL, 0, \
	NULL, "running sequences max", KVS_MS_NUM
#define R_TPS_MEAN NULL, NULL, P, NULL, "  tokens per step, mean", "%.1f", 1, \
	ST(tokens_per_step_mean), NULL, 0, \
	NULL, "tokens per step mean", KVS_MS_NUM
#define R_TPS_MAX NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(tokens_per_step_max), NULL, 0, \
	NULL, "tokens per step max", KVS_MS_NUM
#define R_WAITING_MEAN NULL, NULL, P, "admission queue", "  waiting, mean", "%.1f", 1, \
	ST(waiting_mean), NULL, 0, \
	NULL, "waiting requests mean", KVS_MS_NUM
#define R_WAITING_MAX NULL, NULL, P | I, NULL, "  waiting, max", "%.0f", 1, ST(waiting_max), \
	NULL, 0, \
	NULL, "waiting requests max", KVS_MS_NUM
/* distributions: count, mean, p50, p90, p99, max */
#define DIST_ROW(dist, f, flags, section, label, fmt, scale) \
	NULL, NULL, P | D | (flags), section, label, fmt, scale, \
	ST(dist) + offsetof(kvs_sim_dist, f), NULL, ST(dist)
#define R_QUEUE_COUNT DIST_ROW(queue_delay_s, count, I, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_QUEUE_MEAN DIST_ROW(queue_delay_s, mean, 0, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_QUEUE_P50 DIST_ROW(queue_delay_s, p50, S, NULL, "  queue delay p50 (s)", "%.3f", 1), \
	"Queueing delay (arrival to first scheduled)", "queueing delay p50", KVS_MS_SEC
#define R_QUEUE_P90 DIST_ROW(queue_delay_s, p90, 0, NULL, "  queue delay p90 (s)", "%.3f", 1), \
	NULL, "queueing delay p90", KVS_MS_SEC
#define R_QUEUE_P99 DIST_ROW(queue_delay_s, p99, S, NULL, "  queue delay p99 (s)", "%.3f", 1), \
	NULL, "queueing delay p99", KVS_MS_SEC
#define R_QUEUE_MAX DIST_ROW(queue_delay_s, max, 0, NULL, "  queue delay max (s)", "%.3f", 1), \
	NULL, "queueing delay max", KVS_MS_SEC
#define R_TTFT_COUNT DIST_ROW(ttft_s, count, I, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_TTFT_MEAN DIST_ROW(ttft_s, mean, 0, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_TTFT_P50 DIST_ROW(ttft_s, p50, S, "latency", "  TTFT p50 (s)", "%.3f", 1), \
	"Latency", "TTFT p50", KVS_MS_SEC
#define R_TTFT_P90 DIST_ROW(ttft_s, p90, S, NULL, "  TTFT p90 (s)", "%.3f", 1), \
	NULL, "TTFT p90", KVS_MS_SEC
#define R_TTFT_P99 DIST_ROW(ttft_s, p99, S, NULL, "  TTFT p99 (s)", "%.3f", 1), \
	NULL, "TTFT p99", KVS_MS_SEC
#define R_TTFT_MAX DIST_ROW(ttft_s, max, 0, NULL, NULL, NULL, 1), \
	NULL, "TTFT max", KVS_MS_SEC
#define R_TPOT_COUNT DIST_ROW(tpot_s, count, I, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_TPOT_MEAN DIST_ROW(tpot_s, mean, 0, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_TPOT_P50 DIST_ROW(tpot_s, p50, S, NULL, "  TPOT p50 (ms)", "%.2f", 1e3), \
	NULL, "TPOT p50", KVS_MS_SEC
#define R_TPOT_P90 DIST_ROW(tpot_s, p90, S, NULL, "  TPOT p90 (ms)", "%.2f", 1e3), \
	NULL, "TPOT p90", KVS_MS_SEC
#define R_TPOT_P99 DIST_ROW(tpot_s, p99, S, NULL, "  TPOT p99 (ms)", "%.2f", 1e3), \
	NULL, "TPOT p99", KVS_MS_SEC
#define R_TPOT_MAX DIST_ROW(tpot_s, max, 0, NULL, NULL, NULL, 1), \
	NULL, "TPOT max", KVS_MS_SEC
#define R_E2E_COUNT DIST_ROW(e2e_s, count, I, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_E2E_MEAN DIST_ROW(e2e_s, mean, 0, NULL, NULL, NULL, 1), \
	NULL, NULL, KVS_MS_NONE
#define R_E2E_P50 DIST_ROW(e2e_s, p50, 0, NULL, "  end-to-end p50 (s)", "%.3f", 1), \
	NULL, "end-to-end p50", KVS_MS_SEC
#define R_E2E_P90 DIST_ROW(e2e_s, p90, 0, NULL, NULL, NULL, 1), \
	NULL, "end-to-end p90", KVS_MS_SEC
#define R_E2E_P99 DIST_ROW(e2e_s, p99, 0, NULL, "  end-to-end p99 (s)", "%.3f", 1), \
	NULL, "end-to-end p99", KVS_MS_SEC
#define R_E2E_MAX DIST_ROW(e2e_s, max, 0, NULL, NULL, NULL, 1), \
	NULL, "end-to-end max", KVS_MS_SEC
#define R_REQUESTS_PER_S NULL, NULL, P | S, "throughput", "  requests/s", "%.3f", 1, \
	ST(requests_per_s), NULL, 0, \
	"Throughput", "requests / s", KVS_MS_NUM
#define R_OUTPUT_TOKENS_PER_S NULL, NULL, P | S, NULL, "  output tokens/s", "%.1f", 1, \
	ST(output_tokens_per_s), NULL, 0, \
	NULL, "output tokens / s", KVS_MS_NUM
#define R_OUTPUT_TOKENS NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(output_tokens), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_PROMPT_TOKENS NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(prompt_tokens), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_GOODPUT_RPS NULL, NULL, P | S | KVS_MF_SLO, NULL, "  goodput requests/s", "%.3f", 1, \
	ST(goodput_requests_per_s), NULL, 0, \
	NULL, "goodput requests / s", KVS_MS_NUM
#define R_GOODPUT_FRACTION NULL, NULL, P | KVS_MF_SLO, NULL, "  goodput (% of arrived)", "%.1f", 100, \
	ST(goodput_fraction), NULL, 0, \
	NULL, "goodput share of requests", KVS_MS_FRAC
#define R_PREEMPTIONS NULL, NULL, P | S | I, "preemption and prefix cache", "  preemptions", \
	"%.0f", 1, ST(preemptions), NULL, 0, \
	"Preemption and prefix cache", "preemptions", KVS_MS_COUNT
#define R_RECOMPUTED_TOKENS NULL, NULL, P | S | I, NULL, "  recomputed tokens", "%.0f", 1, \
	ST(recomputed_tokens), NULL, 0, \
	NULL, "recomputed tokens", KVS_MS_COUNT
#define R_SWAPPED_BYTES NULL, NULL, P | I, NULL, "  swapped (MiB)", "%.1f", 1.0 / 1048576.0, \
	ST(swapped_bytes), NULL, 0, \
	NULL, "swapped", KVS_MS_BYTES
#define R_SWAP_OUT_BYTES NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(swap_out_bytes), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_SWAP_IN_BYTES NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(swap_in_bytes), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_FORKED_SEQUENCES NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(forked_sequences), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_COW_COPIES NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(cow_copies), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_COPY_BYTES NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(copy_bytes), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_PREFIX_HIT_TOKENS NULL, NULL, P | S | I, NULL, NULL, NULL, 1, ST(prefix_hit_tokens), \
	NULL, 0, \
	NULL, "prefix hit tokens", KVS_MS_COUNT
#define R_PREFIX_HIT_BLOCKS NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(prefix_hit_blocks), NULL, 0, \
	NULL, "prefix hit blocks", KVS_MS_COUNT
#define R_PREFIX_HIT_RATE_TOKENS "prefix_hit_rate", NULL, P | S, NULL, \
	"  prefix hit rate (% tokens)", "%.1f", 100, ST(prefix_hit_rate_tokens), NULL, 0, \
	NULL, "prefix hit rate (tokens)", KVS_MS_FRAC
#define R_PREFIX_HIT_RATE_BLOCKS NULL, NULL, P | S, NULL, NULL, NULL, 1, \
	ST(prefix_hit_rate_blocks), NULL, 0, \
	NULL, "prefix hit rate (blocks)", KVS_MS_FRAC
#define R_SIM_TIME_S NULL, NULL, P | S, "simulation", "  simulated time (s)", "%.1f", 1, \
	ST(sim_time_s), NULL, 0, \
	"Simulation", "simulated time", KVS_MS_SEC
#define R_STEPS NULL, NULL, P | I, NULL, "  engine steps", "%.0f", 1, ST(steps), NULL, 0, \
	NULL, "engine steps", KVS_MS_COUNT
#define R_SPANS NULL, NULL, P | I, NULL, "  scheduling spans", "%.0f", 1, ST(spans), NULL, 0, \
	NULL, NULL, KVS_MS_NONE
#define R_EVENTS NULL, NULL, P | I, NULL, NULL, NULL, 1, ST(events), NULL, 0, \
	NULL, "events", KVS_MS_COUNT
#define R_WALL_S NULL, NULL, P | KVS_MF_SET_ONLY, NULL, NULL, NULL, 1, ST(wall_s), NULL, 0, \
	NULL, "wall time", KVS_MS_SEC

static const kvs_metric_info table[KVS_M_COUNT_] = {
#define ROW(id, key, group, field, unit) \
	[KVS_M_##id] = { KVS_M_##id, key, group, field, unit, R_##id },
	KVS_METRIC_LIST(ROW)
#undef ROW
};

const kvs_metric_info *kvs_metric_get(kvs_metric_id id)
{
	return (unsigned)id < KVS_M_COUNT_ ? &table[id] : NULL;
}

const kvs_metric_info *kvs_metric_find(const char *key)
{
	for (size_t i = 0; i < KVS_M_COUNT_; i++)
		if (strcmp(table[i].key, key) == 0 ||
		    (table[i].old_key && strcmp(table[i].old_key, key) == 0))
			return &table[i];
	return NULL;
}

bool kvs_metric_is_empty(const kvs_metric_info *m, const kvs_sim_stats *st)
{
	return m && (m->flags & KVS_MF_DIST) && !(m->flags & KVS_MF_INT) &&
	       ((const kvs_sim_dist *)((const char *)st + m->dist_offset))->count == 0;
}

double kvs_metric_value(kvs_metric_id id, const kvs_sim_stats *st)
{
	const kvs_metric_info *m = kvs_metric_get(id);
	if (!m)
		return 0;
	if (m->derive)
		return m->derive(st);
	const char *p = (const char *)st + m->offset;
	if (m->flags & KVS_MF_INT) {
		uint64_t v;
		memcpy(&v, p, sizeof v);
		return (double)v;
	}
	double v;
	memcpy(&v, p, sizeof v);
	return v;
}
