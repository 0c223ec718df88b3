/*
 * cmd_sweep.c - `kvsim sweep [TRACE]`: every (policy, block size)
 * combination on one trace, the recommendation per objective, and with
 * --find-max-rate the highest request rate each combination sustains within
 * the SLOs.  Flag parsing and printing only: the work is kvs_sweep_run.
 */
#include "kvs_config.h"
#include "commands.h"
#include "cli_sim.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>
#include <time.h>

void kvs_cmd_sweep_usage(FILE *f)
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
		"\n"
		"request-rate curve:\n"
		"  --rates LIST                 comma-separated request rates (req/s): the\n"
		"                               sweep once per rate (trace arrivals scaled,\n"
		"                               burstiness kept), one row per rate and\n"
		"                               combination: throughput, p50/p99 TTFT/TPOT\n"
		"\n");
	kvs_cli_sim_help(f, true);
	fputc('\n', f);
	kvs_cli_deploy_help(f);
	fprintf(f, "(in a sweep --block-sizes replaces --block-size)\n\n");
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
		"  --help                       show this help\n"
		"  Ctrl-C (SIGINT), SIGTERM     stop: the table, --json and --csv hold the\n"
		"                               combinations finished, marked interrupted;\n"
		"                               exit 130 (143)\n"
		"\n"
		"scale-out (docs/SCALE-OUT.md; scripts/sweep-parallel.sh, sweep-slurm.sh):\n"
		"  --plan PLAN.json             write the points (one per simulated\n"
		"                               combination), the flags, the trace's SHA-256\n"
		"                               and kvsim's version; simulate nothing\n"
		"  --from-plan PLAN.json        run or merge that plan's points; no other\n"
		"                               configuration flags (TRACE: the plan's trace\n"
		"                               at another path, checked by SHA-256)\n"
		"  --points A-B | I             with --from-plan: run these points (0-based)\n"
		"  --out DIR                    ... one DIR/point-NNNNNN.json each, written\n"
		"                               whole or not at all; existing ones skipped;\n"
		"                               --jobs N runs them on N threads (1)\n"
		"  --merge DIR                  with --from-plan: gather DIR's point files;\n"
		"                               the output flags then print exactly what the\n"
		"                               threaded sweep prints\n"
		"  --plan-info                  with --from-plan: print the number of\n"
		"                               points, the plan's id and its trace\n");
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
	double rates[KVS_SWEEP_MAX_RATES];  /* --rates */
	size_t nrates;
	/* scale-out */
	const char *plan_out;       /* --plan FILE */
	const char *from_plan;      /* --from-plan FILE */
	const char *points;         /* --points A-B */
	const char *out_dir;        /* --out DIR */
	const char *merge_dir;      /* --merge DIR */
	bool plan_info;             /* --plan-info */
	size_t first, last;         /* --points, checked against the plan */
	const char **args;          /* configuration flags as given (for the plan) */
	size_t nargs;
	const char *config_flag;    /* the first of them, for messages */
} opts;

/* --plan, --from-plan, --points, --out, --merge */
static int plan_arg(kvs_args *it, opts *o)
{
	static const char *const names[] = { "--plan", "--from-plan", "--points", "--out",
					     "--merge" };
	const char **slots[] = { &o->plan_out, &o->from_plan, &o->points, &o->out_dir,
				 &o->merge_dir };
	if (kvs_args_is(it, "--plan-info")) {
		if (!kvs_args_no_value(it))
			return -1;
		o->plan_info = true;
		return 1;
	}
	for (size_t i = 0; i < KVS_ARRAY_LEN(names); i++) {
		if (!kvs_args_is(it, names[i]))
			continue;
		/* the plan and the point files are outputs: one of each */
		if (slots[i] == &o->plan_out || slots[i] == &o->out_dir)
			return kvs_args_output_path(it, slots[i] == &o->plan_out ? "file"
						    : "directory", slots[i]) ? 1 : -1;
		*slots[i] = kvs_args_value(it);
		return *slots[i] ? 1 : -1;
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
		if (!kvs_args_no_value(it))
			return -1;
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
		if (!kvs_args_no_value(it))
			return -1;
		s->kernel_feeds_step_time = false;
		return 1;
	}
	if (kvs_args_is(it, "--kernel-cost-margin"))
		return kvs_args_double(it, 0, 100, &s->kernel_cost_margin) ? 1 : -1;
	if (kvs_args_is(it, "--find-max-rate")) {
		if (!kvs_args_no_value(it))
			return -1;
		s->find_max_rate = true;
		return 1;
	}
	if (kvs_args_is(it, "--rates")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		o->nrates = 0;
		const char *p = v;
		for (;;) {
			char buf[64];
			size_t k = strcspn(p, ",");
			double x = 0;
			if (k == 0 || k >= sizeof buf || o->nrates == KVS_SWEEP_MAX_RATES) {
				kvs_args_usage_error(it, "--rates %s: expected up to %d request "
						     "rates > 0 (requests/s), comma-separated", v,
						     KVS_SWEEP_MAX_RATES);
				return -1;
			}
			memcpy(buf, p, k);
			buf[k] = '\0';
			if (!kvs_parse_double(buf, &x) || !(x >= 1e-9 && x <= 1e9)) {
				kvs_args_usage_error(it, "--rates: '%s' is not a request rate "
						     "in [1e-09, 1e+09] (requests/s)", buf);
				return -1;
			}
			for (size_t j = 0; j < o->nrates; j++)
				if (o->rates[j] == x) {
					kvs_args_usage_error(it, "--rates: %s given twice", buf);
					return -1;
				}
			o->rates[o->nrates++] = x;
			if (!p[k])
				break;
			p += k + 1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--rate-tolerance"))
		return kvs_args_double(it, 1e-4, 1, &s->rate_tolerance) ? 1 : -1;
	if (kvs_args_is(it, "--rate-search-range"))
		return kvs_args_double(it, 1.0001, 1e9, &s->rate_max_factor) ? 1 : -1;
	return 0;
}

/* Progress: simulated combinations done of the real total (repeated
 * contiguous rows are not simulated), replays run (capacity probes
 * included), the combination that started last with its rate, elapsed time
 * and ETA; a line rewritten in place on a terminal, else a plain line
 * every KVSIM_PROGRESS_INTERVAL seconds (5) and at the end. */
typedef struct sweep_progress {
	struct timespec t0;
	double last;
	bool tty, open;             /* open: a terminal line not yet ended */
	double interval;
	kvs_sweep_progress pr;      /* the last report */
} sweep_progress;

static double since(const struct timespec *t0)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)(ts.tv_sec - t0->tv_sec) + (ts.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* What an interrupted sweep holds: "2 of 5 simulated combinations done"
 * or, when capacity searches were cut short, "2 of 5 simulated
 * combinations replayed at the trace's rate, 0 of them with their capacity
 * search finished" (the counts of the rows and of the capacity table). */
static void interrupted_text(const kvs_sweep_result *R, char *buf, size_t n)
{
	size_t done = 0, total = 0;
	kvs_sweep_result_interrupted(R, &done, &total);
	size_t replayed = kvs_sweep_result_points_replayed(R);
	if (replayed > done)
		snprintf(buf, n, "%zu of %zu simulated combinations replayed at the trace's "
			 "rate, %zu of them with their capacity search finished", replayed,
			 total, done);
	else
		snprintf(buf, n, "%zu of %zu simulated combinations done", done, total);
}

static void progress_line(sweep_progress *p, bool final)
{
	const kvs_sweep_progress *q = &p->pr;
	double el = since(&p->t0);
	size_t done = q->points_done, total = q->points_total;
	char run[96] = "", eta[48] = "";
	if (!final && done < total) {
		int k = snprintf(run, sizeof run, ", running %s/%u", kvs_policy_name(q->policy),
				 q->block_size);
		if (q->rate > 0 && k > 0 && (size_t)k < sizeof run)
			snprintf(run + k, sizeof run - (size_t)k, " at %.4g req/s%s", q->rate,
				 q->probe ? " (capacity probe)" : "");
	}
	if (!final && done && done < total)
		snprintf(eta, sizeof eta, ", ETA %.0f s", el * (double)(total - done) / (double)done);
	fprintf(stderr, "%skvsim sweep: %zu/%zu combinations done, %llu simulation%s%s, "
		"elapsed %.0f s%s%s", p->tty ? "\r" : "", done, total,
		(unsigned long long)q->simulations, q->simulations == 1 ? "" : "s", run, el,
		eta, p->tty && !final ? "\033[K" : "\n");
	fflush(stderr);
	p->open = p->tty && !final;
}

static void progress(void *ctx, const kvs_sweep_progress *q)
{
	sweep_progress *p = ctx;
	p->pr = *q;
	double el = since(&p->t0);
	if (el - p->last < (p->tty ? 0.1 : p->interval) && p->last > 0)
		return;
	p->last = el;
	progress_line(p, false);
}

/* A kernel profile names its device as the driver does ("NVIDIA H200",
 * "NVIDIA A100-SXM4-80GB"); one measured on another GPU than --gpu's
 * (whose preset name's first word, "h200" of h200-141gb, the device name
 * does not hold, case and punctuation aside) is said. */
static void warn_kernel_gpu(const char *path, const char *dev, const kvs_gpu *g)
{
	char want[32], have[128];
	size_t nw = 0, nh = 0;
	for (const char *p = g->name; *p && *p != '-' && *p != '_' && nw + 1 < sizeof want; p++)
		want[nw++] = (char)tolower((unsigned char)*p);
	want[nw] = '\0';
	for (const char *p = dev ? dev : ""; *p && nh + 1 < sizeof have; p++)
		if (isalnum((unsigned char)*p))
			have[nh++] = (char)tolower((unsigned char)*p);
	have[nh] = '\0';
	if (!nw || !nh || strstr(have, want))
		return;   /* no name to compare (a profile without "gpu"), or the same */
	fprintf(stderr, "kvsim sweep: warning: --kernel-profile %s was measured on %s, not on "
		"--gpu %s: the paged/contiguous kernel ratios are that device's\n", path, dev,
		g->name);
}

/* A latency cell of a table: v with prec decimals, or n/a when no request
 * reached it (its distribution is empty: 0 would read as instant). */
static const char *lat_cell(char buf[16], const kvs_sim_dist *d, double v, int prec)
{
	if (d->count)
		snprintf(buf, 16, "%.*f", prec, v);
	else
		snprintf(buf, 16, "n/a");
	return buf;
}

/* --gpu-hour-price: per row, as the replay/compare cost rows */
static void print_cost(const kvs_sweep_result *R, FILE *f)
{
	const kvs_deploy *d = &kvs_sweep_result_config(R)->base.deploy;
	kvs_sim_cost c;
	if (!kvs_sim_cost_of(d, &kvs_sweep_result_row(R, 0)->st, &c))
		return;
	fprintf(f, "\nCost at $%.2f per GPU-hour x %u GPU%s ($%.2f per hour), at the trace's "
		"rate:\n", d->gpu_hour_price, c.gpus, c.gpus == 1 ? "" : "s", c.dollars_per_hour);
	fprintf(f, "%-10s %5s %14s %14s %14s %14s\n", "policy", "block", "$/M out tok",
		"$/conv-hour", "$/request", "$ for the run");
	for (size_t i = 0; i < kvs_sweep_result_rows(R); i++) {
		const kvs_sweep_row *r = kvs_sweep_result_row(R, i);
		if (!r->done)
			continue;
		kvs_sim_cost_of(d, &r->st, &c);
		fprintf(f, "%-10s %5u", kvs_policy_name(r->policy), r->block_size);
		const double v[4] = { c.per_million_output_tokens, c.per_conversation_hour,
				      c.per_request, c.dollars };
		for (int k = 0; k < 4; k++) {
			if (isfinite(v[k]))
				fprintf(f, " %14.4f", v[k]);
			else
				fprintf(f, " %14s", "-");
		}
		fputc('\n', f);
	}
}

/* "max, pow2, oracle, vattention": the registered policies that do not
 * depend on the block size */
static void put_contiguous_names(FILE *f)
{
	for (size_t p = 0, k = 0; p < kvs_policy_count(); p++)
		if (!kvs_policy_has((kvs_policy)p, KVS_TRAIT_BLOCK_GRANULAR))
			fprintf(f, "%s%s", k++ ? ", " : "", kvs_policy_name((kvs_policy)p));
}

static void print_table(const kvs_sweep_result *R, FILE *f)
{
	size_t n = kvs_sweep_result_rows(R);
	const kvs_sweep_config *c = kvs_sweep_result_config(R);
	bool slo = c->slo_ttft_s > 0 || c->slo_tpot_s > 0;
	char slo_s[96];
	kvs_slo_phrase(slo_s, sizeof slo_s, c->slo_ttft_s, c->slo_tpot_s);
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
		if (!r->done)
			continue;     /* interrupted before it ran */
		char lat[5][16];
		fprintf(f, "%-10s %5u %7.2f %7.2f %10llu %6.1f %7.1f %7.1f %8s %8s %8s "
			"%8s %8s %7.2f %8.1f %6llu %6.3f %9.2f%s\n",
			kvs_policy_name(r->policy), r->block_size, s->memory_pct.internal_frag,
			kvs_sweep_row_waste_pct(r), (unsigned long long)s->metadata_bytes_max,
			100.0 * s->prefix_hit_rate_tokens, s->concurrency_mean,
			s->concurrency_p99, lat_cell(lat[0], &s->queue_delay_s, s->queue_delay_s.p99, 3),
			lat_cell(lat[1], &s->ttft_s, s->ttft_s.p50, 3),
			lat_cell(lat[2], &s->ttft_s, s->ttft_s.p99, 3),
			lat_cell(lat[3], &s->tpot_s, 1e3 * s->tpot_s.p50, 2),
			lat_cell(lat[4], &s->tpot_s, 1e3 * s->tpot_s.p99, 2),
			s->requests_per_s,
			s->output_tokens_per_s, (unsigned long long)s->preemptions,
			r->kernel.rel, r->kernel.cost_us,
			!slo ? "" : r->meets_slo ? "  met" : "  missed");
		if (!r->repeated) {
			distinct++;
			met += r->meets_slo;
		}
	}
	if (c->dedupe_contiguous && c->nblock_sizes > 1) {
		fputs("\nContiguous policies (", f);
		put_contiguous_names(f);
		fputs(") reserve the same memory at every block size\nand read KV with the "
		      "contiguous kernel: each is simulated once and its row repeated per "
		      "block size.\n", f);
	}
	/* a block size the profile lacks is the analytic model with the
	 * profile's fitted overhead: said, not called measured */
	bool fitted = false;
	for (size_t i = 0; i < n; i++)
		fitted |= kvs_sweep_result_row(R, i)->kernel.source == KVS_KERNEL_PROFILE_FIT;
	fprintf(f, "kernel x: paged / contiguous decode-attention time at this block size "
		"(%s)%s.\n", !c->kernel_profile ? "analytic model"
		: fitted ? "measured profile; block sizes it lacks: the analytic model with "
			   "its fitted per-block overhead"
		: "measured profile",
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
	print_cost(R, f);
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
			if (k->simulations == 0)
				continue;     /* search interrupted */
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

/* --rates: the sweep once per offered rate, its arrivals scaled from the
 * trace's mean rate ((n - 1) / span, as the capacity search scales them:
 * burstiness kept), one row per rate and combination.  The sweeps share
 * the trace read once; an interrupt stops at the rate running, whose
 * finished rows are kept.  Returns the exit code; *lost: interrupted. */
static int rates_mode(const opts *o, const kvs_request_set *set, const char *path,
		      const volatile sig_atomic_t *sigflag, kvs_outfile *jso,
		      kvs_outfile *cso, bool *lost)
{
	double base = kvs_request_set_mean_rate(set);
	if (!(base > 0)) {
		fprintf(stderr, "kvsim sweep: --rates: %s has no arrival rate to scale (it needs "
			"two distinct arrival times)\n", path);
		return KVS_EXIT_USAGE;
	}
	kvs_sweep_result *res[KVS_SWEEP_MAX_RATES] = { NULL };
	size_t nres = 0;
	uint64_t sims = 0;
	int rc = KVS_EXIT_OK;
	for (size_t i = 0; i < o->nrates; i++) {
		kvs_sweep_config c = o->sw;
		c.time_scale = base / o->rates[i];
		c.base.interrupt = sigflag;
		kvs_status st = kvs_sweep_run(&c, set, &res[nres]);
		if (st != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			rc = KVS_EXIT_FAIL;
			goto out;
		}
		sims += kvs_sweep_result_simulations(res[nres]);
		if (kvs_sweep_result_interrupted(res[nres++], NULL, NULL)) {
			*lost = true;
			break;
		}
		if (!o->quiet)
			fprintf(stderr, "kvsim sweep: rate %zu/%zu done (%.4g requests/s), %llu "
				"simulations\n", i + 1, o->nrates, o->rates[i],
				(unsigned long long)sims);
	}
	if (*lost)
		fprintf(stderr, "kvsim sweep: interrupted at rate %zu of %zu (%.4g requests/s); "
			"the outputs hold the rows finished, marked \"interrupted\"\n", nres,
			o->nrates, o->rates[nres - 1]);
	if (o->json) {
		kvs_json *doc = kvs_sweep_curve_json(res, o->rates, nres, set);
		if (!doc) {
			fprintf(stderr, "kvsim sweep: out of memory (JSON)\n");
			rc = KVS_EXIT_FAIL;
			goto out;
		}
		rc = kvs_cli_json_output("sweep", doc, jso, NULL, NULL, o->quiet);
		kvs_json_free(doc);
		if (rc != KVS_EXIT_OK)
			goto out;
	}
	if (cso) {
		kvs_status st = kvs_sweep_curve_csv(res, o->rates, nres, kvs_outfile_stream(cso));
		if (st != KVS_OK) {
			fprintf(stderr, "kvsim sweep: --csv: %s: %s\n", o->csv, kvs_last_error());
			rc = KVS_EXIT_FAIL;
			goto out;
		}
	}
	if ((!o->json || strcmp(o->json, "-") != 0) && (!o->csv || strcmp(o->csv, "-") != 0)) {
		const kvs_sweep_config *c = kvs_sweep_result_config(res[0]);
		bool slo = c->slo_ttft_s > 0 || c->slo_tpot_s > 0;
		char slo_s[96];
		kvs_slo_phrase(slo_s, sizeof slo_s, c->slo_ttft_s, c->slo_tpot_s);
		printf("kvsim sweep: %s, %llu requests at %zu rates (the trace's: %.4g requests/s); "
		       "%s on %s (tp %u); %llu simulations\n", path,
		       (unsigned long long)kvs_request_set_count(set), o->nrates, base, o->dep.d.model.name, o->dep.d.gpu.name,
		       o->dep.d.tp ? o->dep.d.tp : 1, (unsigned long long)sims);
		if (*lost)
			printf("interrupted at rate %zu of %zu: the rows below are those finished\n",
			       nres, o->nrates);
		printf("\n%9s %-10s %5s %8s %9s %8s %8s %8s %8s %6s%s\n", "rate", "policy",
		       "block", "req/s", "tok/s", "TTFT", "TTFT", "TPOT", "TPOT", "preem",
		       slo ? "  SLO" : "");
		printf("%9s %-10s %5s %8s %9s %8s %8s %8s %8s %6s\n", "offered", "", "", "", "",
		       "p50 s", "p99 s", "p50 ms", "p99 ms", "");
		/* a contiguous policy is simulated once per rate and its row
		 * repeated per block size: shown once, block "any" */
		bool once = c->dedupe_contiguous && c->nblock_sizes > 1;
		for (size_t i = 0; i < nres; i++)
			for (size_t j = 0; j < kvs_sweep_result_rows(res[i]); j++) {
				const kvs_sweep_row *r = kvs_sweep_result_row(res[i], j);
				const kvs_sim_stats *st = &r->st;
				if (!r->done || (once && r->repeated))
					continue;
				char bs[16];
				if (once && !kvs_policy_has(r->policy, KVS_TRAIT_BLOCK_GRANULAR))
					snprintf(bs, sizeof bs, "any");
				else
					snprintf(bs, sizeof bs, "%u", r->block_size);
				char lat[4][16];
				printf("%9.4g %-10s %5s %8.3f %9.1f %8s %8s %8s %8s %6llu%s\n",
				       o->rates[i], kvs_policy_name(r->policy), bs,
				       st->requests_per_s, st->output_tokens_per_s,
				       lat_cell(lat[0], &st->ttft_s, st->ttft_s.p50, 3),
				       lat_cell(lat[1], &st->ttft_s, st->ttft_s.p99, 3),
				       lat_cell(lat[2], &st->tpot_s, 1e3 * st->tpot_s.p50, 2),
				       lat_cell(lat[3], &st->tpot_s, 1e3 * st->tpot_s.p99, 2),
				       (unsigned long long)st->preemptions,
				       !slo ? "" : r->meets_slo ? "  met" : "  missed");
			}
		printf("\nrate: offered (the trace's arrivals scaled to it); req/s, tok/s: served.%s%s\n",
		       slo ? "  SLO: " : "", slo ? slo_s : "");
		if (once) {
			fputs("block any: a contiguous policy (", stdout);
			put_contiguous_names(stdout);
			fputs(") reserves the same\nmemory at every block size: simulated once "
			      "per rate and shown once (the JSON\nand CSV repeat its row per block "
			      "size).\n", stdout);
		}
	}
out:
	for (size_t i = 0; i < nres; i++)
		kvs_sweep_result_destroy(res[i]);
	return rc;
}

/* --plan, --from-plan --points/--out, --from-plan --merge: -1 with *R the
 * merged result (printed as the threaded sweep's), else an exit code. */
static int plan_mode(opts *o, kvs_sweep_plan **plan, const kvs_request_set *set,
		     const char *path, kvs_sweep_result **R)
{
	kvs_status st;
	if (o->plan_out) {
		if (o->json || o->csv || o->report) {
			fprintf(stderr, "kvsim sweep: --plan writes only the plan; give --json, "
				"--csv and --report to the merge\n");
			return KVS_EXIT_USAGE;
		}
		st = kvs_sweep_plan_create(&o->sw, set, path, o->args, o->nargs, plan);
		if (st == KVS_OK)
			st = kvs_sweep_plan_write(*plan, o->plan_out);
		if (st != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			return KVS_EXIT_FAIL;
		}
		if (!o->quiet)
			fprintf(stderr, "kvsim sweep: %s: %zu points (0-%zu), plan %.12s\n",
				o->plan_out, kvs_sweep_plan_points(*plan),
				kvs_sweep_plan_points(*plan) - 1, kvs_sweep_plan_id(*plan));
		return KVS_EXIT_OK;
	}
	if ((st = kvs_sweep_plan_bind(*plan, &o->sw, set, path)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		return KVS_EXIT_FAIL;
	}
	if (o->out_dir) {
		size_t a = o->first, b = o->last, ran = 0, skipped = 0;
		unsigned jobs = o->sw.jobs ? o->sw.jobs : 1;
		st = kvs_sweep_plan_run_points(*plan, a, b, o->out_dir, jobs, &ran, &skipped);
		if (st != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			return KVS_EXIT_FAIL;
		}
		if (!o->quiet)
			fprintf(stderr, "kvsim sweep: points %zu-%zu: %zu run, %zu already done\n",
				a, b, ran, skipped);
		return KVS_EXIT_OK;
	}
	if ((st = kvs_sweep_plan_merge(*plan, o->merge_dir, R)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		return KVS_EXIT_FAIL;
	}
	return -1;
}

static void opts_init(opts *o)
{
	memset(o, 0, sizeof *o);
	kvs_cli_deploy_init(&o->dep, "llama-3-8b", NULL);   /* as replay */
	kvs_trace_opts_defaults(&o->to);
	kvs_cli_sim_init(&o->sim);
	kvs_sweep_config_defaults(&o->sw, NULL);
}

/* Parse the arguments into o (argv[0] the command); -1 to go on, else an
 * exit code.  The configuration flags (every flag but the output,
 * scale-out and --jobs ones) are recorded in o->args for a plan. */
static int parse(kvs_args *it, opts *o)
{
	const char *pos;
	o->args = kvs_calloc((size_t)it->argc + 1, sizeof *o->args);
	if (!o->args) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		return KVS_EXIT_FAIL;
	}
	for (;;) {
		int i0 = it->i;
		if (!kvs_args_next(it, &pos))
			break;
		if (!it->flag) {
			if (!kvs_args_one_positional(it, pos, &o->trace, "trace"))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_help(it))
			return KVS_EXIT_OK;
		int out_r = kvs_args_output(it, "--json", &o->json, o->trace != NULL);
		if (out_r == 0)
			out_r = kvs_args_output(it, "--csv", &o->csv, o->trace != NULL);
		if (out_r < 0)
			return KVS_EXIT_USAGE;
		if (out_r > 0)
			continue;
		if (kvs_args_is(it, "--report")) {
			if (!kvs_args_output_path(it, "directory", &o->report))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_is(it, "--quiet") || kvs_args_is(it, "-q")) {
			if (!kvs_args_no_value(it))
				return KVS_EXIT_USAGE;
			o->quiet = true;
			continue;
		}
		int r = plan_arg(it, o);
		if (r != 0) {
			if (r < 0)
				return KVS_EXIT_USAGE;
			continue;
		}
		/* the sim group before the trace group: both know --seed */
		r = sweep_arg(it, o);
		if (r == 0)
			r = kvs_cli_deploy_arg(it, &o->dep);
		if (r == 0)
			r = kvs_cli_sim_arg(it, &o->sim);
		if (r == 0)
			r = kvs_cli_trace_arg(it, &o->to);
		if (r < 0)
			return KVS_EXIT_USAGE;
		if (r == 0) {
			kvs_args_unknown(it);
			return KVS_EXIT_USAGE;
		}
		if (!kvs_args_is(it, "--jobs")) {
			if (!o->config_flag)
				o->config_flag = it->flag;
			for (int k = i0; k < it->i; k++)
				o->args[o->nargs++] = it->argv[k];
		}
	}
	if (it->error)
		return KVS_EXIT_USAGE;
	return -1;
}

/* "A-B" or "I" against n points */
static bool points_range(const char *text, size_t n, size_t *a, size_t *b)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(text, &end, 10), y = x;
	if (end == text || text[0] == '-' || errno)
		return false;
	if (*end == '-') {
		const char *t = end + 1;
		if (!(*t >= '0' && *t <= '9'))
			return false;
		y = strtoull(t, &end, 10);
		if (errno)
			return false;
	}
	if (*end || x > y || y >= n)
		return false;
	*a = (size_t)x;
	*b = (size_t)y;
	return true;
}

/* --from-plan: the configuration comes from the plan's flags; the command
 * line gives the mode, the outputs, --jobs and optionally the trace. */
static int from_plan(opts *o, kvs_sweep_plan **plan)
{
	if (o->config_flag) {
		fprintf(stderr, "kvsim sweep: %s: with --from-plan the configuration is the "
			"plan's; give it when writing the plan\n", o->config_flag);
		return KVS_EXIT_USAGE;
	}
	if (o->plan_info && !o->plan_out && !o->out_dir && !o->merge_dir && !o->points) {
		kvs_status st = kvs_sweep_plan_load(o->from_plan, plan);
		if (st != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			return KVS_EXIT_FAIL;
		}
		printf("points %zu\nplan_id %s\ntrace %s\n", kvs_sweep_plan_points(*plan),
		       kvs_sweep_plan_id(*plan), kvs_sweep_plan_trace_path(*plan));
		return KVS_EXIT_OK;
	}
	if (o->plan_out || o->plan_info || !!o->out_dir == !!o->merge_dir ||
	    !!o->points != !!o->out_dir) {
		fprintf(stderr, "kvsim sweep: --from-plan needs either --points A-B --out DIR "
			"or --merge DIR\n");
		return KVS_EXIT_USAGE;
	}
	kvs_status st = kvs_sweep_plan_load(o->from_plan, plan);
	if (st != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		return KVS_EXIT_FAIL;
	}
	size_t n = kvs_sweep_plan_points(*plan);
	if (o->points && !points_range(o->points, n, &o->first, &o->last)) {
		fprintf(stderr, "kvsim sweep: --points %s: expected I or A-B with A <= B "
			"< %zu (the plan's points)\n", o->points, n);
		return KVS_EXIT_USAGE;
	}
	const char *const *args;
	size_t nargs = kvs_sweep_plan_args(*plan, &args);
	char **argv = kvs_calloc(nargs + 2, sizeof *argv);
	if (!argv) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		return KVS_EXIT_FAIL;
	}
	argv[0] = (char *)"sweep";
	for (size_t i = 0; i < nargs; i++)
		argv[i + 1] = (char *)args[i];
	opts p;
	opts_init(&p);
	kvs_args it;
	kvs_args_init(&it, "sweep", (int)nargs + 1, argv, kvs_cmd_sweep_usage);
	int rc = parse(&it, &p);
	kvs_free(argv);
	if (rc >= 0) {
		kvs_free(p.args);
		fprintf(stderr, "kvsim sweep: %s: its flags (args) do not parse here\n",
			o->from_plan);
		return rc == KVS_EXIT_OK ? KVS_EXIT_USAGE : rc;
	}
	/* the plan's configuration, this command's mode and outputs */
	p.trace = o->trace ? o->trace : kvs_sweep_plan_trace_path(*plan);
	p.json = o->json;
	p.csv = o->csv;
	p.report = o->report;
	p.quiet = o->quiet;
	p.from_plan = o->from_plan;
	p.points = o->points;
	p.out_dir = o->out_dir;
	p.merge_dir = o->merge_dir;
	p.sw.jobs = o->sw.jobs;
	p.first = o->first;
	p.last = o->last;
	kvs_free(o->args);
	*o = p;
	return -1;
}

int kvs_cmd_sweep(kvs_args *it)
{
	opts o;
	kvs_sweep_plan *plan = NULL;
	opts_init(&o);
	int prc = parse(it, &o);
	if (prc < 0 && o.from_plan)
		prc = from_plan(&o, &plan);
	else if (prc < 0 && (o.points || o.out_dir || o.merge_dir || o.plan_info)) {
		fprintf(stderr, "kvsim sweep: --points, --out, --merge and --plan-info need "
			"--from-plan PLAN.json\n");
		prc = KVS_EXIT_USAGE;
	}
	if (prc >= 0) {
		kvs_free(o.args);
		kvs_sweep_plan_destroy(plan);
		return prc;
	}
	int rc = KVS_EXIT_OK;
	kvs_sweep_result *R = NULL;
	kvs_kernel_profile *prof = NULL;
	kvs_request_set *set = NULL;
	const char *path = NULL;
	kvs_outfile *jso = NULL, *cso = NULL;
	const volatile sig_atomic_t *sigflag = NULL;
	bool rates_cut = false;     /* --rates interrupted */
	kvs_status st;
	/* no output may replace an input or another output */
	const kvs_cli_path paths[] = {
		{ "the trace", o.trace ? o.trace : kvs_trace_default_path(), true },
		{ "--from-plan", o.from_plan, true },
		{ "--kernel-profile", o.profile, true },
		{ "--plan", o.plan_out, false },
		{ "--json", o.json, false },
		{ "--csv", o.csv, false },
	};
	if (!kvs_cli_paths_check("sweep", paths, KVS_ARRAY_LEN(paths))) {
		rc = KVS_EXIT_USAGE;
		goto out;
	}
	if (o.dep.set_block_size) {
		fprintf(stderr, "kvsim sweep: --block-size: the sweep varies the block size; "
			"give --block-sizes LIST\n");
		rc = KVS_EXIT_USAGE;
		goto out;
	}
	if (o.sim.npolicies > 0) {
		fprintf(stderr, "kvsim sweep: --policy: the sweep runs several; give "
			"--policies LIST\n");
		rc = KVS_EXIT_USAGE;
		goto out;
	}
	if (o.nrates) {
		/* the curve is its own output: one rate axis, no search */
		const char *clash = o.sw.find_max_rate ? "--find-max-rate"
				    : o.to.rate > 0 ? "--rate" : o.report ? "--report"
				    : o.plan_out ? "--plan" : o.from_plan ? "--from-plan" : NULL;
		if (clash) {
			fprintf(stderr, "kvsim sweep: --rates cannot be combined with %s\n",
				clash);
			rc = KVS_EXIT_USAGE;
			goto out;
		}
	}
	/* the SLOs are the engine group's; the sweep bounds p99 latencies by them */
	o.sw.slo_ttft_s = o.sim.cfg.slo_ttft_s;
	o.sw.slo_tpot_s = o.sim.cfg.slo_tpot_s;
	if (o.sw.find_max_rate && o.sw.slo_ttft_s == 0 && o.sw.slo_tpot_s == 0) {
		fprintf(stderr, "kvsim sweep: --find-max-rate needs --slo-ttft and/or --slo-tpot\n");
		rc = KVS_EXIT_USAGE;
		goto out;
	}
	if (!kvs_cli_deploy_finish(&o.dep, "sweep")) {
		rc = o.dep.fail_exit;
		goto out;
	}
	if (!kvs_cli_sim_finish(&o.sim, &o.dep.d, &o.to, "sweep")) {
		rc = o.sim.fail_exit;
		goto out;
	}
	/* a directory that cannot be written fails now, not after the runs */
	if (o.report && !kvs_cli_report_dir_ok("sweep", o.report)) {
		rc = KVS_EXIT_FAIL;
		goto out;
	}
	/* keep the trace's hash ids at their own granularity: each block size of
	 * the sweep re-splits (or merges) them itself.  The id of a prompt's
	 * partial last block comes too: its full sub-blocks are shared at a
	 * finer block size, as replay's reader (re-splitting to that size) shares
	 * them */
	o.to.block_size = 0;
	o.to.hash_partial_block = true;
	o.sw.base = o.sim.cfg;
	o.quiet |= o.sim.quiet;
	if (o.profile) {
		if ((st = kvs_kernel_profile_load(o.profile, &prof)) != KVS_OK) {
			kvs_cli_report_error("sweep", st);
			rc = KVS_EXIT_FAIL;
			goto out;
		}
		o.sw.kernel_profile = prof;
		warn_kernel_gpu(o.profile, kvs_kernel_profile_gpu(prof), &o.sim.cfg.deploy.gpu);
	}

	/* SIGINT/SIGTERM while the combinations run: the replays stop, the
	 * finished combinations are written whole, marked "interrupted", exit
	 * 128 + signal.  Installed before the outputs open (whose own handler
	 * then leaves these signals to it); plan modes keep the default. */
	if (!o.plan_out && !o.from_plan)
		sigflag = kvs_cli_interrupt_install();
	/* every output file opens now, so that a bad path fails before the
	 * runs; each is renamed into place only when the sweep succeeds */
	if ((o.json && !(jso = kvs_cli_out_open("sweep", "--json", o.json))) ||
	    (o.csv && !(cso = kvs_cli_out_open("sweep", "--csv", o.csv)))) {
		rc = KVS_EXIT_FAIL;
		goto out;
	}

	/* read the trace once (overlong prompts flagged at max_model_len) */
	path = o.trace ? o.trace : kvs_trace_default_path();
	if (plan && (st = kvs_sweep_plan_check_trace(plan, path)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		rc = KVS_EXIT_FAIL;
		goto out;
	}
	if ((st = kvs_request_set_load(path, &o.to, &set)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		rc = st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
		goto out;
	}
	kvs_cli_set_skip_note("sweep", path, &o.to, kvs_request_set_trace_stats(set));
	bool show = !o.quiet;
	/* flags that do not fit the trace (block sizes against its hash ids)
	 * are usage errors; anything failing in the runs is a runtime one */
	if ((st = kvs_sweep_check(&o.sw, set)) != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		rc = KVS_EXIT_USAGE;
		goto out;
	}
	if (o.nrates) {
		rc = rates_mode(&o, set, path, sigflag, jso, cso, &rates_cut);
		goto out;
	}
	if (o.plan_out || o.from_plan) {
		int prc2 = plan_mode(&o, &plan, set, path, &R);
		if (prc2 >= 0) {
			rc = prc2;
			goto out;
		}
		st = KVS_OK;    /* merged into R */
	} else {
		sweep_progress sp = { .tty = kvs_cli_stderr_is_tty() };
		clock_gettime(CLOCK_MONOTONIC, &sp.t0);
		const char *iv = getenv("KVSIM_PROGRESS_INTERVAL");
		if (!iv || !kvs_parse_double(iv, &sp.interval) || sp.interval < 0)
			sp.interval = 5.0;
		o.sw.base.interrupt = sigflag;
		st = kvs_sweep_run_ex(&o.sw, set, show ? progress : NULL, &sp, &R);
		if (show && st == KVS_OK) {
			/* the closing line: the counts the result holds */
			kvs_sweep_result_interrupted(R, &sp.pr.points_done, &sp.pr.points_total);
			sp.pr.simulations = kvs_sweep_result_simulations(R);
			progress_line(&sp, true);
		} else if (sp.open) {
			fputc('\n', stderr);
		}
	}
	if (st != KVS_OK) {
		kvs_cli_report_error("sweep", st);
		rc = KVS_EXIT_FAIL;
		goto out;
	}
	bool interrupted = kvs_sweep_result_interrupted(R, NULL, NULL);
	char what[320] = "";
	if (interrupted) {
		interrupted_text(R, what, sizeof what);
		fprintf(stderr, "kvsim sweep: interrupted: %s; the outputs hold those, marked "
			"\"interrupted\"\n", what);
	}
	if (o.json || o.report) {
		kvs_json *doc = kvs_sweep_result_json(R, set);
		if (!doc) {
			fprintf(stderr, "kvsim sweep: out of memory (JSON)\n");
			rc = KVS_EXIT_FAIL;
			goto out;
		}
		const char *base = strrchr(path, '/');
		char title[256];
		snprintf(title, sizeof title, "kvsim sweep: %s", base && base[1] ? base + 1 : path);
		rc = kvs_cli_json_output("sweep", doc, jso, o.report, title, o.quiet);
		kvs_json_free(doc);
		if (rc != KVS_EXIT_OK)
			goto out;
	}
	if (cso && (st = csv_fn(R, kvs_outfile_stream(cso))) != KVS_OK) {
		fprintf(stderr, "kvsim sweep: --csv: %s: %s\n", o.csv, kvs_last_error());
		rc = KVS_EXIT_FAIL;
		goto out;
	}
	if ((!o.json || strcmp(o.json, "-") != 0) && (!o.csv || strcmp(o.csv, "-") != 0)) {
		printf("kvsim sweep: %s, %llu requests; %s on %s (tp %u); %llu simulations\n",
		       path, (unsigned long long)kvs_request_set_count(set),
		       o.dep.d.model.name, o.dep.d.gpu.name, o.dep.d.tp ? o.dep.d.tp : 1,
		       (unsigned long long)kvs_sweep_result_simulations(R));
		if (interrupted)
			printf("interrupted: %s; the rows and recommendations below cover "
			       "those\n", what);
		putchar('\n');
		print_table(R, stdout);
	}
out:;
	/* all or nothing: after one failure the rest are discarded */
	bool ok = rc == KVS_EXIT_OK;
	ok = kvs_cli_out_close("sweep", "--json", jso, ok) && ok;
	ok = kvs_cli_out_close("sweep", "--csv", cso, ok) && ok;
	if (!ok && rc == KVS_EXIT_OK)
		rc = KVS_EXIT_FAIL;
	bool lost = (R && kvs_sweep_result_interrupted(R, NULL, NULL)) || rates_cut;
	kvs_sweep_result_destroy(R);
	kvs_request_set_destroy(set);
	kvs_kernel_profile_destroy(prof);
	kvs_sweep_plan_destroy(plan);
	kvs_free(o.args);
	/* a signal that came after the last combination lost nothing */
	if (rc == KVS_EXIT_OK && sigflag && *sigflag && lost)
		rc = 128 + (int)*sigflag;
	return rc;
}
