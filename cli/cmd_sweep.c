/*
 * cmd_sweep.c - `kvsim sweep [TRACE]`: every (policy, block size)
 * combination on one trace, the recommendation per objective, and with
 * --find-max-rate the highest request rate each combination sustains within
 * the SLOs.  Flag parsing and printing only: the work is kvs_sweep_run.
 */
#include "kvs_config.h"
#include "cli.h"
#include "cli_sim.h"

#include <errno.h>
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
		"  --policies LIST              policies to sweep (all; see engine)\n"
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
		"  --kernel-cost-margin X       least-waste and prefix-hit recommendations\n"
		"                               consider paged block sizes whose kernel time\n"
		"                               is within X of the cheapest one's (0.05)\n"
		"\n"
		"capacity search (with --slo-ttft and/or --slo-tpot, engine flags below;\n"
		"the SLOs bound p99 latencies and pick the throughput recommendation):\n"
		"  --find-max-rate              per combination, the highest request rate\n"
		"                               (trace arrivals scaled) meeting the SLOs\n"
		"  --rate-tolerance X           relative step of the rate grid (0.02)\n"
		"  --rate-search-range F        search between trace rate / F and x F (1e4)\n"
		"\n");
	kvs_cli_sim_help(f, true);
	fprintf(f, "\nmodel, GPU and deployment (--block-size is replaced by --block-sizes):\n");
	kvs_cli_deploy_help(f);
	fprintf(f, "\ntrace shaping:\n");
	kvs_cli_trace_help(f);
	fprintf(f,
		"\noutput:\n"
		"  --json [FILE]                the sweep document (docs/REPORT-JSON.md)\n"
		"  --csv [FILE]                 one CSV line per row\n"
		"  (--json, --json - : standard output instead of the table; --json FILE.json,\n"
		"  --json=FILE: the file, the table stays; --csv alike with FILE.csv)\n"
		"  --report DIR                 also render the sweep as DIR/index.html with\n"
		"                               SVG and PNG figures (as 'kvsim report'; the\n"
		"                               same JSON as --json), DIR created if missing\n"
		"  --quiet                      no progress line on stderr\n"
		"  --help                       show this help\n");
}

typedef struct opts {
	kvs_sweep_config sw;
	kvs_cli_sim sim;
	kvs_cli_deploy dep;
	kvs_trace_opts to;
	const char *trace;
	const char *json, *csv;     /* "-" = stdout */
	const char *report;         /* --report DIR */
	const char *profile;
	bool quiet;
} opts;

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
	if (kvs_args_is(it, "--kernel-cost-margin"))
		return kvs_args_double(it, 0, 100, &s->kernel_cost_margin) ? 1 : -1;
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
static void progress(void *ctx, size_t done, size_t total)
{
	(void)ctx;
	fprintf(stderr, "\rkvsim sweep: %zu/%zu simulations%s", done, total,
		done == total ? "\n" : "");
	fflush(stderr);
}

/* "p99 TTFT <= 2 s and p99 TPOT <= 0.1 s", "" without SLOs */
static void slo_text(const kvs_sweep_config *c, char *slo, size_t n)
{
	slo[0] = '\0';
	if (c->slo_ttft_s > 0)
		snprintf(slo, n, "p99 TTFT <= %g s", c->slo_ttft_s);
	if (c->slo_tpot_s > 0)
		snprintf(slo + strlen(slo), n - strlen(slo), "%sp99 TPOT <= %g s",
			 c->slo_ttft_s > 0 ? " and " : "", c->slo_tpot_s);
}

static void print_table(const kvs_sweep_result *R, FILE *f)
{
	size_t n = kvs_sweep_result_rows(R);
	const kvs_sweep_config *c = kvs_sweep_result_config(R);
	bool slo = c->slo_ttft_s > 0 || c->slo_tpot_s > 0;
	char slo_s[96];
	slo_text(c, slo_s, sizeof slo_s);
	fprintf(f, "%-10s %5s %7s %7s %10s %6s %7s %7s %8s %8s %8s %8s %8s %7s %8s %6s %6s %9s%s\n",
		"policy", "block", "intfrag", "waste", "metadata", "prefix", "conc",
		"conc", "queue", "TTFT", "TTFT", "TPOT", "TPOT", "req/s", "tok/s",
		"preem", "kernel", "kernel", slo ? "  SLO at" : "");
	fprintf(f, "%-10s %5s %7s %7s %10s %6s %7s %7s %8s %8s %8s %8s %8s %7s %8s %6s %6s %9s%s\n",
		"", "", "%", "%", "bytes", "hit %", "mean", "p99", "p99 s", "p50 s",
		"p99 s", "p50 ms", "p99 ms", "", "", "", "x", "us/seq",
		slo ? "  trace rate" : "");
	size_t met = 0, distinct = 0;
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
			!slo ? "" : r->meets_slo ? "  met" : "  missed");
		if (!r->repeated) {
			distinct++;
			met += r->meets_slo;
		}
	}
	if (c->dedupe_contiguous && c->nblock_sizes > 1) {
		/* the registered policies that do not depend on the block size */
		fputs("\nContiguous policies (", f);
		for (size_t p = 0, k = 0; p < kvs_policy_count(); p++)
			if (!kvs_policy_has((kvs_policy)p, KVS_TRAIT_BLOCK_GRANULAR))
				fprintf(f, "%s%s", k++ ? ", " : "", kvs_policy_name((kvs_policy)p));
		fputs(") reserve the same memory at every block size\nand read KV with the "
		      "contiguous kernel: each is simulated once and its row repeated per "
		      "block size.\n", f);
	}
	fprintf(f, "kernel x: paged / contiguous decode-attention time at this block size "
		"(%s)%s.\n", c->kernel_profile ? "measured profile" : "analytic model",
		c->kernel_feeds_step_time ? ", folded into the step time" : ", not in the step time");
	if (slo) {
		fprintf(f, "SLO at trace rate: %s, replayed at the trace's own arrival rate\n"
			"(%.4g requests/s): %zu of %zu simulated combinations meet them.  ",
			slo_s, kvs_sweep_result_base_rate(R), met, distinct);
		if (c->find_max_rate)
			fprintf(f, "The capacity table below gives the\nhighest rate each "
				"sustains.\n");
		else
			fprintf(f, "Add --find-max-rate to find the\nhighest rate each "
				"combination sustains within them.\n");
	}
	size_t nc = kvs_sweep_result_capacities(R);
	if (nc) {
		fprintf(f, "\nCapacity: the highest request rate with %s (rate grid step %.3g%%;\n"
			"the next step up, 'fail req/s', misses them).  conv/GPU = mean running "
			"sequences at that rate / GPUs.\n", slo_s, 100 * c->rate_tolerance);
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
		if (r->found && r->any_block_size)
			fprintf(f, "  %-22s %s: %s\n", r->objective_name,
				kvs_policy_name(r->policy), r->reason);
		else if (r->found)
			fprintf(f, "  %-22s %s/%u: %s\n", r->objective_name,
				kvs_policy_name(r->policy), r->block_size, r->reason);
		else
			fprintf(f, "  %-22s none: %s\n", r->objective_name, r->reason);
	}
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
	kvs_args_set_help(&it, usage);
	kvs_cli_deploy_init(&o.dep, "llama-3-8b", "a100-40gb");   /* as replay */
	kvs_trace_opts_defaults(&o.to);
	kvs_cli_sim_init(&o.sim);
	kvs_sweep_config_defaults(&o.sw, NULL);
	while (kvs_args_next(&it, &pos)) {
		if (!it.flag) {
			if (!kvs_args_one_positional(&it, pos, &o.trace, "trace"))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_is(&it, "--help") || kvs_args_is(&it, "-h")) {
			usage(stdout);
			return KVS_EXIT_OK;
		}
		int out_r = kvs_args_output(&it, "--json", &o.json, o.trace != NULL);
		if (out_r == 0)
			out_r = kvs_args_output(&it, "--csv", &o.csv, o.trace != NULL);
		if (out_r < 0)
			return KVS_EXIT_USAGE;
		if (out_r > 0)
			continue;
		if (kvs_args_is(&it, "--report")) {
			if (!(o.report = kvs_args_value(&it)))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_is(&it, "--quiet") || kvs_args_is(&it, "-q")) {
			o.quiet = true;
			continue;
		}
		/* the sim group before the trace group: both know --seed */
		int r = sweep_arg(&it, &o);
		if (r == 0)
			r = kvs_cli_deploy_arg(&it, &o.dep);
		if (r == 0)
			r = kvs_cli_sim_arg(&it, &o.sim);
		if (r == 0)
			r = kvs_cli_trace_arg(&it, &o.to);
		if (r < 0)
			return KVS_EXIT_USAGE;
		if (r == 0) {
			kvs_args_unknown(&it);
			return KVS_EXIT_USAGE;
		}
	}
	if (it.error)
		return KVS_EXIT_USAGE;
	if (o.dep.set_block_size) {
		fprintf(stderr, "kvsim sweep: --block-size: the sweep varies the block size; "
			"give --block-sizes LIST\n");
		return KVS_EXIT_USAGE;
	}
	if (o.sim.npolicies > 0) {
		fprintf(stderr, "kvsim sweep: --policy: the sweep runs several; give "
			"--policies LIST\n");
		return KVS_EXIT_USAGE;
	}
	/* the SLOs are the engine group's; the sweep bounds p99 latencies by them */
	o.sw.slo_ttft_s = o.sim.cfg.slo_ttft_s;
	o.sw.slo_tpot_s = o.sim.cfg.slo_tpot_s;
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
	if (!kvs_cli_sim_finish(&o.sim, &o.dep.d, &o.to, "sweep"))
		return o.sim.fail_exit;
	/* a directory that cannot be written fails now, not after the runs */
	if (o.report && !kvs_cli_report_dir_ok("sweep", o.report))
		return KVS_EXIT_FAIL;
	/* keep the trace's hash ids at their own granularity: each block size of
	 * the sweep re-splits (or merges) them itself */
	o.to.block_size = 0;
	o.sw.base = o.sim.cfg;
	o.quiet |= o.sim.quiet;
	kvs_status st;

	kvs_kernel_profile *prof = NULL;
	if (o.profile) {
		if ((st = kvs_kernel_profile_load(o.profile, &prof)) != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			return KVS_EXIT_FAIL;
		}
		o.sw.kernel_profile = prof;
	}

	/* every output file opens now, so that a bad path fails before the
	 * runs; each is renamed into place only when the sweep succeeds */
	kvs_outfile *jso = NULL, *cso = NULL;
	if ((o.json && !(jso = kvs_cli_out_open("sweep", "--json", o.json))) ||
	    (o.csv && !(cso = kvs_cli_out_open("sweep", "--csv", o.csv)))) {
		kvs_outfile_discard(jso);
		kvs_kernel_profile_destroy(prof);
		return KVS_EXIT_FAIL;
	}

	/* read the trace once (overlong prompts flagged at max_model_len) */
	const char *path = o.trace ? o.trace : kvs_trace_default_path();
	kvs_request_set *set = NULL;
	if ((st = kvs_request_set_load(path, &o.to, &set)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		kvs_kernel_profile_destroy(prof);
		kvs_outfile_discard(jso);
		kvs_outfile_discard(cso);
		return st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
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
	if (o.json || o.report) {
		json_t *doc = kvs_sweep_result_json(R, set);
		if (!doc) {
			fprintf(stderr, "kvsim sweep: out of memory (JSON)\n");
			rc = KVS_EXIT_FAIL;
			goto out;
		}
		const char *base = strrchr(path, '/');
		char title[256];
		snprintf(title, sizeof title, "kvsim sweep: %s", base && base[1] ? base + 1 : path);
		rc = kvs_cli_json_output("sweep", doc, jso, o.report, title, o.quiet);
		json_decref(doc);
		if (rc != KVS_EXIT_OK)
			goto out;
	}
	if (cso && (st = csv_fn(R, kvs_outfile_stream(cso))) != KVS_OK) {
		fprintf(stderr, "kvsim sweep: --csv: %s: %s\n", o.csv, kvs_last_error());
		rc = KVS_EXIT_FAIL;
		goto out;
	}
	if ((!o.json || strcmp(o.json, "-") != 0) && (!o.csv || strcmp(o.csv, "-") != 0)) {
		printf("kvsim sweep: %s, %llu requests; %s on %s (tp %u); %llu simulations\n\n",
		       path, (unsigned long long)kvs_request_set_count(set),
		       o.dep.d.model.name, o.dep.d.gpu.name, o.dep.d.tp ? o.dep.d.tp : 1,
		       (unsigned long long)kvs_sweep_result_simulations(R));
		print_table(R, stdout);
	}
out:;
	/* all or nothing: after one failure the rest are discarded */
	bool ok = rc == KVS_EXIT_OK;
	ok = kvs_cli_out_close("sweep", "--json", jso, ok) && ok;
	ok = kvs_cli_out_close("sweep", "--csv", cso, ok) && ok;
	if (!ok && rc == KVS_EXIT_OK)
		rc = KVS_EXIT_FAIL;
	kvs_sweep_result_destroy(R);
	kvs_request_set_destroy(set);
	kvs_kernel_profile_destroy(prof);
	return rc;
}
