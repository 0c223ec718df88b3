/*
 * cmd_sweep.c - `kvsim sweep [TRACE]`: every (policy, block size)
 * combination on one trace, the recommendation per objective, and with
 * --find-max-rate the highest request rate each combination sustains within
 * the SLOs.  Flag parsing and printing only: the work is kvs_sweep_run.
 */
#include "kvs_config.h"
#include "cli.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim sweep [TRACE] [OPTIONS]\n"
		"\n"
		"Replay TRACE (default: the bundled sample) under every policy and block\n"
		"size, one row per combination: fragmentation, block-table metadata,\n"
		"prefix-cache hit rate, concurrency, queueing, TTFT/TPOT, throughput,\n"
		"preemptions and the modelled attention-kernel cost; then recommend a\n"
		"block size per objective.  The trace is read once; combinations run\n"
		"on --jobs threads; the output does not depend on --jobs.\n"
		"\n"
		"sweep:\n"
		"  --block-sizes LIST           block sizes in tokens (1,2,4,8,16,32,64,128,256)\n"
		"  --policies LIST              paged,max,pow2,oracle,vattention (all)\n"
		"  --jobs N                     worker threads (online CPUs)\n"
		"  --no-dedupe                  simulate contiguous policies at every block\n"
		"                               size (default: once, row repeated: their\n"
		"                               allocation does not depend on it)\n"
		"  --kernel-profile FILE.json   measured kernel profile (bench_kernels --json)\n"
		"                               instead of the analytic kernel model\n"
		"  --kernel-block-overhead T    analytic model: cost of one block-table\n"
		"                               lookup in token reads (1.0)\n"
		"  --no-kernel-step-time        report the kernel cost but leave the step\n"
		"                               time as the plain cost model (rows then\n"
		"                               equal 'kvsim replay' exactly)\n"
		"\n"
		"SLOs and capacity search:\n"
		"  --slo-ttft S                 p99 time-to-first-token bound, seconds\n"
		"  --slo-tpot S                 p99 time-per-output-token bound, seconds\n"
		"  --find-max-rate              per combination, the highest request rate\n"
		"                               (trace arrivals scaled) meeting the SLOs\n"
		"  --rate-tolerance X           relative step of the rate grid (0.02)\n"
		"  --rate-search-range F        search between trace rate / F and x F (1e4)\n"
		"\n"
		"engine:\n"
		"  --max-num-seqs N             running sequences at most (256)\n"
		"  --max-num-batched-tokens N   tokens per step (8192)\n"
		"  --enable-prefix-caching      reuse prompt blocks by the trace's hash ids\n"
		"  --preemption-mode M          recompute (default) or swap\n"
		"  --swap-space GIB             host swap space per GPU (4)\n"
		"  --watermark F                share of blocks kept free at admission (0.01)\n"
		"  --page-size SIZE             vattention physical page (2MiB)\n"
		"  --step-time-table FILE.csv   fit the step time to measured steps\n"
		"  --flops-efficiency F         roofline: share of peak FLOP/s (0.5)\n"
		"  --bandwidth-efficiency F     roofline: share of peak HBM bandwidth (0.8)\n"
		"  --step-overhead S            fixed per-step time, seconds (0.002)\n"
		"\n"
		"model, GPU and deployment (--block-size is replaced by --block-sizes):\n");
	kvs_cli_deploy_help(f);
	fprintf(f, "\ntrace shaping:\n");
	kvs_cli_trace_help(f);
	fprintf(f,
		"\noutput:\n"
		"  --json[=FILE]                the sweep document (docs/REPORT-JSON.md)\n"
		"  --csv[=FILE]                 one CSV line per row\n"
		"  --quiet                      no progress line on stderr\n"
		"  --help                       show this help\n");
}

typedef struct opts {
	kvs_sweep_config sw;
	kvs_sim_config sc;
	kvs_cli_deploy dep;
	kvs_trace_opts to;
	const char *trace;
	const char *json, *csv;     /* "-" = stdout */
	const char *profile;
	const char *table;
	bool quiet;
	double flops_eff, bw_eff, overhead;
	bool set_flops, set_bw, set_overhead;
	double swap_gib;
	bool set_swap;
} opts;

static int engine_arg(kvs_args *it, opts *o)
{
	kvs_sim_config *c = &o->sc;
	if (kvs_args_is(it, "--max-num-seqs"))
		return kvs_args_u32(it, 1, 1u << 20, &c->max_num_seqs) ? 1 : -1;
	if (kvs_args_is(it, "--max-num-batched-tokens"))
		return kvs_args_u32(it, 1, UINT32_MAX, &c->max_num_batched_tokens) ? 1 : -1;
	if (kvs_args_is(it, "--enable-prefix-caching")) {
		c->enable_prefix_caching = true;
		return 1;
	}
	if (kvs_args_is(it, "--preemption-mode")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (kvs_preempt_mode_parse(v, &c->preemption_mode) != KVS_OK) {
			kvs_args_usage_error(it, "--preemption-mode: %s", kvs_last_error());
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--swap-space")) {
		o->set_swap = true;
		return kvs_args_double(it, 0, 1 << 20, &o->swap_gib) ? 1 : -1;
	}
	if (kvs_args_is(it, "--watermark"))
		return kvs_args_double(it, 0, 0.99, &c->watermark) ? 1 : -1;
	if (kvs_args_is(it, "--page-size"))
		return kvs_args_bytes(it, &c->page_bytes) ? 1 : -1;
	if (kvs_args_is(it, "--step-time-table")) {
		o->table = kvs_args_value(it);
		return o->table ? 1 : -1;
	}
	if (kvs_args_is(it, "--flops-efficiency")) {
		o->set_flops = true;
		return kvs_args_double(it, 1e-6, 1, &o->flops_eff) ? 1 : -1;
	}
	if (kvs_args_is(it, "--bandwidth-efficiency")) {
		o->set_bw = true;
		return kvs_args_double(it, 1e-6, 1, &o->bw_eff) ? 1 : -1;
	}
	if (kvs_args_is(it, "--step-overhead")) {
		o->set_overhead = true;
		return kvs_args_double(it, 0, 10, &o->overhead) ? 1 : -1;
	}
	return 0;
}

static int sweep_arg(kvs_args *it, opts *o)
{
	kvs_sweep_config *s = &o->sw;
	if (kvs_args_is(it, "--block-sizes") || kvs_args_is(it, "--policies")) {
		bool bs = kvs_args_is(it, "--block-sizes");
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		kvs_status st = bs ? kvs_sweep_parse_block_sizes(v, s)
				   : kvs_sweep_parse_policies(v, s);
		if (st != KVS_OK) {
			kvs_args_usage_error(it, "%s: %s", bs ? "--block-sizes" : "--policies",
					     kvs_last_error());
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--jobs"))
		return kvs_args_u32(it, 1, 1024, &s->jobs) ? 1 : -1;
	if (kvs_args_is(it, "--no-dedupe")) {
		s->dedupe_contiguous = false;
		return 1;
	}
	if (kvs_args_is(it, "--kernel-profile")) {
		o->profile = kvs_args_value(it);
		return o->profile ? 1 : -1;
	}
	if (kvs_args_is(it, "--kernel-block-overhead"))
		return kvs_args_double(it, 0, 1e6, &s->kernel_block_overhead) ? 1 : -1;
	if (kvs_args_is(it, "--no-kernel-step-time")) {
		s->kernel_feeds_step_time = false;
		return 1;
	}
	if (kvs_args_is(it, "--slo-ttft"))
		return kvs_args_double(it, 1e-9, 1e9, &s->slo_ttft_s) ? 1 : -1;
	if (kvs_args_is(it, "--slo-tpot"))
		return kvs_args_double(it, 1e-9, 1e9, &s->slo_tpot_s) ? 1 : -1;
	if (kvs_args_is(it, "--find-max-rate")) {
		s->find_max_rate = true;
		return 1;
	}
	if (kvs_args_is(it, "--rate-tolerance"))
		return kvs_args_double(it, 1e-4, 1, &s->rate_tolerance) ? 1 : -1;
	if (kvs_args_is(it, "--rate-search-range"))
		return kvs_args_double(it, 1.0001, 1e9, &s->rate_max_factor) ? 1 : -1;
	return 0;
}

/* --json / --csv: no value (stdout) or an inline "=FILE" */
static bool out_arg(kvs_args *it, const char *name, const char **dst)
{
	if (!kvs_args_is(it, name))
		return false;
	*dst = it->inline_val && *it->inline_val ? it->inline_val : "-";
	return true;
}

static void progress(void *ctx, size_t done, size_t total)
{
	(void)ctx;
	fprintf(stderr, "\rkvsim sweep: %zu/%zu simulations%s", done, total,
		done == total ? "\n" : "");
	fflush(stderr);
}

static void print_table(const kvs_sweep_result *R, FILE *f)
{
	size_t n = kvs_sweep_result_rows(R);
	const kvs_sweep_config *c = kvs_sweep_result_config(R);
	fprintf(f, "%-10s %5s %7s %7s %10s %6s %7s %7s %8s %8s %8s %8s %8s %7s %8s %6s %6s %9s\n",
		"policy", "block", "intfrag", "waste", "metadata", "prefix", "conc",
		"conc", "queue", "TTFT", "TTFT", "TPOT", "TPOT", "req/s", "tok/s",
		"preem", "kernel", "kernel");
	fprintf(f, "%-10s %5s %7s %7s %10s %6s %7s %7s %8s %8s %8s %8s %8s %7s %8s %6s %6s %9s\n",
		"", "", "%", "%", "bytes", "hit %", "mean", "p99", "p99 s", "p50 s",
		"p99 s", "p50 ms", "p99 ms", "", "", "", "x", "us/seq");
	for (size_t i = 0; i < n; i++) {
		const kvs_sweep_row *r = kvs_sweep_result_row(R, i);
		const kvs_sim_stats *s = &r->st;
		fprintf(f, "%-10s %5u %7.2f %7.2f %10llu %6.1f %7.1f %7.1f %8.3f %8.3f %8.3f "
			"%8.2f %8.2f %7.2f %8.1f %6llu %6.3f %9.2f%s\n",
			kvs_policy_name(r->policy), r->block_size, s->memory_pct.internal_frag,
			kvs_sweep_row_waste_pct(r), (unsigned long long)s->metadata_bytes_max,
			100.0 * s->prefix_hit_rate_tokens, s->concurrency_mean,
			s->concurrency_p99, s->queue_delay_s.p99, s->ttft_s.p50, s->ttft_s.p99,
			1e3 * s->tpot_s.p50, 1e3 * s->tpot_s.p99, s->requests_per_s,
			s->output_tokens_per_s, (unsigned long long)s->preemptions,
			r->kernel.rel, r->kernel.cost_us,
			(c->slo_ttft_s > 0 || c->slo_tpot_s > 0) && !r->meets_slo ? "  (SLO missed)" : "");
	}
	if (c->dedupe_contiguous && c->nblock_sizes > 1)
		fprintf(f, "\nContiguous policies (max, pow2, oracle, vattention) reserve the same "
			"memory at every block size\nand read KV with the contiguous kernel: each "
			"is simulated once and its row repeated per block size.\n");
	fprintf(f, "kernel x: paged / contiguous decode-attention time at this block size "
		"(%s)%s.\n", c->kernel_profile ? "measured profile" : "analytic model",
		c->kernel_feeds_step_time ? ", folded into the step time" : ", not in the step time");
	size_t nc = kvs_sweep_result_capacities(R);
	if (nc) {
		char slo[96] = "";
		if (c->slo_ttft_s > 0)
			snprintf(slo, sizeof slo, "p99 TTFT <= %g s", c->slo_ttft_s);
		if (c->slo_tpot_s > 0)
			snprintf(slo + strlen(slo), sizeof slo - strlen(slo), "%sp99 TPOT <= %g s",
				 c->slo_ttft_s > 0 ? " and " : "", c->slo_tpot_s);
		fprintf(f, "\nCapacity: the highest request rate with %s (rate grid step %.3g%%;\n"
			"the next step up, 'fail req/s', misses them).  conv/GPU = mean running "
			"sequences at that rate / GPUs.\n", slo, 100 * c->rate_tolerance);
		fprintf(f, "%-10s %5s %-12s %10s %10s %10s %10s %9s %9s %5s\n", "policy", "block",
			"outcome", "max req/s", "fail req/s", "conv/GPU", "req/s/GPU",
			"TTFT p99", "TPOT p99", "sims");
		for (size_t i = 0; i < nc; i++) {
			const kvs_sweep_capacity *k = kvs_sweep_result_capacity(R, i);
			fprintf(f, "%-10s %5u %-12s %10.4g %10.4g %10.2f %10.4g %9.3f %9.4f %5u\n",
				kvs_policy_name(k->policy), k->block_size,
				kvs_capacity_outcome_name(k->outcome), k->max_rate, k->fail_rate,
				k->conversations_per_gpu, k->requests_per_s_per_gpu, k->ttft_p99_s,
				k->tpot_p99_s, k->simulations);
		}
	}
	fprintf(f, "\nRecommendations:\n");
	for (int o = 0; o < KVS_OBJ_COUNT_; o++) {
		const kvs_sweep_recommendation *r = kvs_sweep_result_recommendation(R, o);
		if (r->found)
			fprintf(f, "  %-22s %s/%u: %s\n", r->objective_name,
				kvs_policy_name(r->policy), r->block_size, r->reason);
		else
			fprintf(f, "  %-22s none: %s\n", r->objective_name, r->reason);
	}
}

static int write_out(const char *path, kvs_status (*fn)(const void *, FILE *),
		     const void *arg)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
	if (!f) {
		fprintf(stderr, "kvsim sweep: %s: cannot open for writing\n", path);
		return KVS_EXIT_FAIL;
	}
	kvs_status st = fn(arg, f);
	if (f != stdout && fclose(f) != 0 && st == KVS_OK)
		st = kvs_fail(KVS_ERR_IO, "%s: write failed", path);
	if (st != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		return KVS_EXIT_FAIL;
	}
	return KVS_EXIT_OK;
}

static kvs_status csv_fn(const void *arg, FILE *f)
{
	return kvs_sweep_result_csv(arg, f);
}

int kvs_cmd_sweep(int argc, char **argv);

int kvs_cmd_sweep(int argc, char **argv)
{
	kvs_args it;
	opts o;
	const char *pos;
	memset(&o, 0, sizeof o);
	kvs_args_init(&it, "sweep", argc, argv);
	kvs_cli_deploy_init(&o.dep, "llama-2-7b", "a100-80gb");
	kvs_trace_opts_defaults(&o.to);
	kvs_sim_config_defaults(&o.sc, NULL);
	kvs_sweep_config_defaults(&o.sw, NULL);
	while (kvs_args_next(&it, &pos)) {
		if (!it.flag) {
			if (o.trace) {
				kvs_args_usage_error(&it, "one trace at most (got '%s' and '%s')",
						     o.trace, pos);
				return KVS_EXIT_USAGE;
			}
			o.trace = pos;
			continue;
		}
		if (kvs_args_is(&it, "--help") || kvs_args_is(&it, "-h")) {
			usage(stdout);
			return KVS_EXIT_OK;
		}
		if (out_arg(&it, "--json", &o.json) || out_arg(&it, "--csv", &o.csv))
			continue;
		if (kvs_args_is(&it, "--quiet") || kvs_args_is(&it, "-q")) {
			o.quiet = true;
			continue;
		}
		int r = sweep_arg(&it, &o);
		if (r == 0)
			r = engine_arg(&it, &o);
		if (r == 0)
			r = kvs_cli_deploy_arg(&it, &o.dep);
		if (r == 0)
			r = kvs_cli_trace_arg(&it, &o.to);
		if (r < 0)
			return KVS_EXIT_USAGE;
		if (r == 0) {
			kvs_args_unknown(&it);
			return KVS_EXIT_USAGE;
		}
	}
	if (o.dep.set_block_size) {
		fprintf(stderr, "kvsim sweep: --block-size: the sweep varies the block size; "
			"give --block-sizes LIST\n");
		return KVS_EXIT_USAGE;
	}
	if (o.sw.find_max_rate && o.sw.slo_ttft_s == 0 && o.sw.slo_tpot_s == 0) {
		fprintf(stderr, "kvsim sweep: --find-max-rate needs --slo-ttft and/or --slo-tpot\n");
		return KVS_EXIT_USAGE;
	}
	if (o.json && o.csv && strcmp(o.json, "-") == 0 && strcmp(o.csv, "-") == 0) {
		fprintf(stderr, "kvsim sweep: --json and --csv cannot both go to stdout; "
			"give one a file (--csv=FILE)\n");
		return KVS_EXIT_USAGE;
	}
	if (!kvs_cli_deploy_finish(&o.dep, "sweep"))
		return o.dep.fail_exit;

	/* engine settings over the deployment */
	kvs_sim_config sc;
	kvs_sim_config_defaults(&sc, &o.dep.d);
	sc.max_num_seqs = o.sc.max_num_seqs ? o.sc.max_num_seqs : sc.max_num_seqs;
	sc.max_num_batched_tokens = o.sc.max_num_batched_tokens ? o.sc.max_num_batched_tokens
								: sc.max_num_batched_tokens;
	sc.enable_prefix_caching = o.sc.enable_prefix_caching;
	sc.preemption_mode = o.sc.preemption_mode;
	if (o.set_swap)
		sc.swap_bytes = (uint64_t)(o.swap_gib * (double)(1ull << 30));
	sc.watermark = o.sc.watermark;
	sc.page_bytes = o.sc.page_bytes;
	if (o.set_flops)
		sc.cost.flops_efficiency = o.flops_eff;
	if (o.set_bw)
		sc.cost.bandwidth_efficiency = o.bw_eff;
	if (o.set_overhead)
		sc.cost.step_overhead_s = o.overhead;
	kvs_status st;
	if (o.table && (st = kvs_cost_fit_table(o.table, &sc.cost)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		return KVS_EXIT_FAIL;
	}
	if (sc.max_num_batched_tokens < sc.max_num_seqs) {
		fprintf(stderr, "kvsim sweep: --max-num-batched-tokens (%u) must be >= "
			"--max-num-seqs (%u)\n", sc.max_num_batched_tokens, sc.max_num_seqs);
		return KVS_EXIT_USAGE;
	}
	o.sw.base = sc;

	kvs_kernel_profile *prof = NULL;
	if (o.profile) {
		if ((st = kvs_kernel_profile_load(o.profile, &prof)) != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			return KVS_EXIT_FAIL;
		}
		o.sw.kernel_profile = prof;
	}

	/* read the trace once; overlong prompts are flagged at the model's limit */
	kvs_sizing sz;
	if (o.to.max_model_len == 0 && kvs_size_compute(&o.dep.d, &sz) == KVS_OK &&
	    sz.max_model_len <= UINT32_MAX)
		o.to.max_model_len = (uint32_t)sz.max_model_len;
	const char *path = o.trace ? o.trace : kvs_trace_default_path();
	kvs_request_set *set = NULL;
	if ((st = kvs_request_set_load(path, &o.to, &set)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		kvs_kernel_profile_destroy(prof);
		return KVS_EXIT_FAIL;
	}
	int rc = KVS_EXIT_OK;
	kvs_sweep_result *R = NULL;
	bool show = !o.quiet && kvs_cli_stderr_is_tty();
	/* flags that do not fit the trace (block sizes against its hash ids)
	 * are usage errors; anything failing in the runs is a runtime one */
	if ((st = kvs_sweep_check(&o.sw, set)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		rc = KVS_EXIT_USAGE;
		goto out;
	}
	st = kvs_sweep_run_ex(&o.sw, set, show ? progress : NULL, NULL, &R);
	if (st != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		rc = KVS_EXIT_FAIL;
		goto out;
	}
	if (o.json) {
		json_t *doc = kvs_sweep_result_json(R, set);
		st = doc ? kvs_sim_json_write(doc, o.json)
			 : kvs_fail(KVS_ERR_NOMEM, "out of memory (JSON)");
		json_decref(doc);
		if (st != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			rc = KVS_EXIT_FAIL;
			goto out;
		}
	}
	if (o.csv && (rc = write_out(o.csv, csv_fn, R)) != KVS_EXIT_OK)
		goto out;
	if ((!o.json || strcmp(o.json, "-") != 0) && (!o.csv || strcmp(o.csv, "-") != 0)) {
		printf("kvsim sweep: %s, %llu requests; %s on %s (tp %u); %llu simulations\n\n",
		       path, (unsigned long long)kvs_request_set_count(set),
		       o.dep.d.model.name, o.dep.d.gpu.name, o.dep.d.tp ? o.dep.d.tp : 1,
		       (unsigned long long)kvs_sweep_result_simulations(R));
		print_table(R, stdout);
	}
out:
	kvs_sweep_result_destroy(R);
	kvs_request_set_destroy(set);
	kvs_kernel_profile_destroy(prof);
	return rc;
}
