/*
 * cmd_fleet.c - `kvsim fleet [TRACE]`: N replicas of one engine behind a
 * router (the work is in the library's fleet/), the replay flag groups
 * applied to every replica, the replay table for the fleet as a whole,
 * per-replica rows, and the smallest fleet that meets SLOs at a rate.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cli_sim.h"
#include "commands.h"
#include "kvsim/fleet.h"
#include "common/json.h"

void kvs_cmd_fleet_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim fleet [TRACE] [options]\n"
		"\n"
		"Replay a request trace through N identical serving replicas behind one\n"
		"router.  Each replica is the engine of 'kvsim replay' (its own KV allocator,\n"
		"scheduler and prefix cache); the router sends each arriving request to one\n"
		"replica.  Reports the fleet as a whole (the replay figures), every replica\n"
		"(requests, KV use, prefix-cache hit rate, preemptions) and the balance\n"
		"(coefficient of variation of requests and KV use across replicas).\n"
		"\n"
		"TRACE is a trace in any supported format ('-' reads standard input);\n"
		"without it, the bundled sample (%s).\n"
		"\n"
		"fleet:\n"
		"  --replicas N                 replicas (1)\n"
		"  --router POLICY[:K=V,...]    how requests are routed (round-robin):\n", kvs_trace_default_path());
	kvs_router_help(f);
	fprintf(f,
		"  --pool NAME:N:GPU:TP[:ROLE]  a pool of N replicas on GPU (preset or GPU file) with\n"
		"                               tensor parallelism TP; repeat for a\n"
		"                               heterogeneous fleet (instead of --replicas).\n"
		"                               ROLE prefill, decode or both; when absent, a\n"
		"                               pool named prefill or decode takes that role.\n"
		"                               Prefill and decode pools disaggregate: each\n"
		"                               request prefills on a prefill replica, then\n"
		"                               its KV moves to a decode replica (both picked\n"
		"                               by the router) over --kv-link\n"
		"  --kv-link BW[:LATENCY]       the link from each prefill replica (its\n"
		"                               egress, shared fairly by its transfers):\n"
		"                               a preset or GB/s (units B/s, MB/s, GB/s,\n"
		"                               TB/s, Gb/s, Gbps, Tb/s), LATENCY per transfer\n"
		"                               (s, ms, us, ns; 0); default ib-400g. Presets:\n");
	kvs_fleet_link_help(f);
	fprintf(f,
		"  --router-refresh S           route on replica load, KV use, queues and\n"
		"                               prefix caches as of the last refresh, every\n"
		"                               S seconds (0: exact; default 0, vllm-dp 0.1)\n"
		"  --dp, --data-parallel-size N vLLM's data parallelism: N replicas (the\n"
		"                               ranks) behind --router vllm-dp unless another\n"
		"                               is given; with --enable-expert-parallel an\n"
		"                               MoE model's experts spread over all N x tp\n"
		"                               GPUs (each rank's pool grows)\n"
		"  --gpu-hour-price P           dollars per GPU-hour: fleet cost per hour and\n"
		"                               per million output tokens\n"
		"\n"
		"sizing (--find-min-replicas):\n"
		"  --find-min-replicas          the fewest replicas whose p99 TTFT and p99 TPOT\n"
		"                               meet --slo-ttft / --slo-tpot with the trace's\n"
		"                               arrivals rescaled to --rate\n"
		"  --rate R                     requests per second (default: the trace's own)\n"
		"  --max-replicas N             give up beyond N replicas (1024); the search\n"
		"                               also stops, exit 1, once more replicas no\n"
		"                               longer help (no request queued and the p99\n"
		"                               missed no better than at half as many): the\n"
		"                               SLO is unattainable, its floor printed\n"
		"\n"
		"output:\n"
		"  --json [FILE]                every figure as JSON (the replay document of the\n"
		"                               fleet plus a \"fleet\" object; docs/FLEET.md)\n"
		"  (--json, --json - : standard output instead of the table; --json FILE.json,\n"
		"  --json=FILE: the file, the table stays)\n"
		"  --report DIR                 also render the run as DIR/index.html\n"
		"  --help                       show this help\n"
		"  Ctrl-C (SIGINT), SIGTERM     stop at the next arrival (a disaggregated\n"
		"                               fleet: once every hand-off has reached its\n"
		"                               decode replica): the table and --json hold\n"
		"                               what was done, marked interrupted; exit 130\n"
		"                               (143). A search stops with the replica\n"
		"                               counts tried so far and the fewest found\n"
		"\n");
	kvs_cli_sim_usage_groups(f, false);
}

typedef struct fleet_opts {
	uint32_t replicas;
	const char *router;
	double refresh_s;
	double gpu_hour_price;
	bool find_min;
	bool max_replicas_set;   /* --max-replicas given (a search's bound) */
	double rate;
	uint32_t max_replicas;
	bool replicas_set;
	bool router_set;         /* --router given */
	const char *pool_specs[16];
	size_t npools;
	kvs_fleet_link link;
	bool link_set;
} fleet_opts;

/* The fleet's own flags (kvs_cli_front_arg_fn); ctx is the fleet_opts. */
static int fleet_arg(kvs_args *it, kvs_cli_front *fe, void *ctx)
{
	fleet_opts *o = ctx;
	(void)fe;
	if (kvs_args_is(it, "--replicas")) {
		o->replicas_set = true;
		return kvs_args_u32(it, 1, 1u << 20, &o->replicas) ? 1 : -1;
	}
	if (kvs_args_is(it, "--max-replicas")) {
		o->max_replicas_set = true;
		return kvs_args_u32(it, 1, 1u << 20, &o->max_replicas) ? 1 : -1;
	}
	if (kvs_args_is(it, "--router-refresh"))
		return kvs_args_double(it, 0, 1e9, &o->refresh_s) ? 1 : -1;
	if (kvs_args_is(it, "--gpu-hour-price"))
		return kvs_args_double(it, 0, 1e9, &o->gpu_hour_price) ? 1 : -1;
	/* the search's --rate re-times the arrivals, as the trace group's
	 * --time-scale does: not both */
	if ((kvs_args_is(it, "--rate") && kvs_args_given_before(it, "--time-scale")) ||
	    (kvs_args_is(it, "--time-scale") && o->rate > 0)) {
		kvs_args_usage_error(it, "--time-scale and --rate both set the arrival times; "
				     "give one");
		return -1;
	}
	if (kvs_args_is(it, "--rate"))
		return kvs_args_double(it, 1e-9, 1e12, &o->rate) ? 1 : -1;
	if (kvs_args_is(it, "--find-min-replicas")) {
		if (!kvs_args_no_value(it))
			return -1;
		o->find_min = true;
		return 1;
	}
	if (kvs_args_is(it, "--kv-link")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (kvs_fleet_link_parse(v, &o->link) != KVS_OK) {
			kvs_args_usage_error(it, "%s", kvs_last_error());
			return -1;
		}
		o->link_set = true;
		return 1;
	}
	if (kvs_args_is(it, "--pool")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (o->npools == KVS_ARRAY_LEN(o->pool_specs)) {
			kvs_args_usage_error(it, "--pool: at most %zu pools",
					     KVS_ARRAY_LEN(o->pool_specs));
			return -1;
		}
		o->pool_specs[o->npools++] = v;
		return 1;
	}
	int r = kvs_args_str(it, "--router", &o->router);
	if (r == 1)
		o->router_set = true;
	return r;
}

/* "NAME:N:GPU:TP[:ROLE]" on top of the base engine: the pool's GPU preset,
 * tensor parallelism and role (by default the name's, when it is prefill
 * or decode); the deployment is sized now so that an impossible pool fails
 * before any run. */
static bool parse_pool(const char *spec, const kvs_cli_sim *sim, kvs_fleet_pool *p)
{
	const kvs_sim_config *base = &sim->cfg;
	char buf[256];
	char *f[6] = { 0 };
	int nf = 0;
	if (strlen(spec) >= sizeof buf) {
		fprintf(stderr, "kvsim fleet: --pool '%.40s...': too long\n", spec);
		return false;
	}
	strcpy(buf, spec);
	for (char *s = buf; nf < 6;) {
		f[nf++] = s;
		char *c = strchr(s, ':');
		if (!c)
			break;
		*c = 0;
		s = c + 1;
	}
	if (nf < 4 || nf > 5 || !*f[0] || !*f[1] || !*f[2] || !*f[3] || (nf == 5 && !*f[4])) {
		fprintf(stderr, "kvsim fleet: --pool '%s': expected NAME:N:GPU:TP[:ROLE] "
			"(e.g. big:2:h100-80gb:2, prefill:2:h100-80gb:1)\n", spec);
		return false;
	}
	kvs_fleet_role role = KVS_FLEET_ROLE_BOTH;
	if (nf == 5) {
		if (kvs_fleet_role_parse(f[4], &role) != KVS_OK) {
			fprintf(stderr, "kvsim fleet: --pool '%s': %s\n", spec, kvs_last_error());
			return false;
		}
	} else if (kvs_fleet_role_parse(f[0], &role) != KVS_OK) {
		role = KVS_FLEET_ROLE_BOTH;   /* a name that is not a role */
	}
	if (strlen(f[0]) >= sizeof p->name) {
		fprintf(stderr, "kvsim fleet: --pool '%s': name longer than %zu characters\n",
			spec, sizeof p->name - 1);
		return false;
	}
	char *e;
	errno = 0;
	unsigned long n = strtoul(f[1], &e, 10), tp;
	if (*e || errno || n < 1 || n > (1u << 20) || f[1][0] == '-') {
		fprintf(stderr, "kvsim fleet: --pool '%s': replicas '%s': expected an integer "
			"in [1, %u]\n", spec, f[1], 1u << 20);
		return false;
	}
	tp = strtoul(f[3], &e, 10);
	if (*e || errno || tp < 1 || tp > 1024 || f[3][0] == '-') {
		fprintf(stderr, "kvsim fleet: --pool '%s': tp '%s': expected an integer in "
			"[1, 1024]\n", spec, f[3]);
		return false;
	}
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "%s", f[0]);
	p->replicas = (uint32_t)n;
	p->role = role;
	p->sim = *base;
	if (kvs_gpu_load(f[2], &p->sim.deploy.gpu) != KVS_OK) {
		fprintf(stderr, "kvsim fleet: --pool '%s': %s\n", spec, kvs_last_error());
		return false;
	}
	p->sim.deploy.tp = (uint32_t)tp;
	/* the scheduler limits not given are this GPU's defaults, the batch
	 * its pool is profiled for (as size sizes it) */
	uint32_t dseqs, dtokens;
	kvs_engine_batch_defaults(p->sim.deploy.engine, &p->sim.deploy.gpu, &dseqs, &dtokens);
	if (!sim->seqs_set)
		p->sim.max_num_seqs = p->sim.deploy.max_num_seqs = dseqs;
	if (!sim->batched_tokens_set && !p->sim.chunked_prefill_off)
		p->sim.max_num_batched_tokens = p->sim.deploy.max_num_batched_tokens = dtokens;
	if (p->sim.max_num_batched_tokens < p->sim.max_num_seqs) {
		fprintf(stderr, "kvsim fleet: --pool '%s': max_num_batched_tokens (%u) must be at "
			"least --max-num-seqs (%u); give --max-num-batched-tokens\n", spec,
			p->sim.max_num_batched_tokens, p->sim.max_num_seqs);
		return false;
	}
	kvs_sizing sz;
	if (kvs_size_compute(&p->sim.deploy, &sz) != KVS_OK) {
		fprintf(stderr, "kvsim fleet: --pool '%s': %s\n", spec, kvs_last_error());
		return false;
	}
	return true;
}

/* GPUs of the whole fleet: tp x pp of every replica. */
static uint64_t fleet_gpus(const kvs_fleet_result *r)
{
	kvs_fleet_kv kv;
	kvs_fleet_result_kv(r, &kv);
	return kv.gpus;
}

/* The table's header for a fleet: the model, each replica's KV pool per
 * GPU (one line per pool with --pool), and the fleet's total KV over all
 * its GPUs; then the replay's engine and trace lines.  (The fleet's total
 * result sums the replicas' pools, which is no GPU's pool.) */
static void print_fleet_header(FILE *f, const kvs_fleet_result *r, const char *path,
			       kvs_trace_format format)
{
	const kvs_fleet_config *c = kvs_fleet_result_config(r);
	const kvs_sim_result *tot = kvs_fleet_result_total(r);
	const kvs_sim_result *r0 = kvs_fleet_result_replica(r, 0);
	const kvs_deploy *d = &kvs_sim_result_config(r0)->deploy;
	uint32_t n = kvs_fleet_result_replicas(r);
	/* pools on different GPUs take their own GPU's scheduler defaults:
	 * then each pool's line gives its limits, and the engine line none */
	bool limits_differ = false;
	for (size_t p = 1; p < c->npools; p++)
		limits_differ |= c->pools[p].sim.max_num_seqs != c->pools[0].sim.max_num_seqs ||
				 c->pools[p].sim.max_num_batched_tokens !=
					 c->pools[0].sim.max_num_batched_tokens;
	if (!c->npools) {
		if (d->dp > 1)   /* the replicas are data-parallel ranks */
			fprintf(f, "model %s on %s (tp %u), KV cache %s, %u data-parallel ranks%s\n",
				d->model.name, d->gpu.name, d->tp ? d->tp : 1,
				kvs_dtype_name(d->kv_dtype), n,
				d->expert_parallel && d->model.num_experts
					? " (experts spread over all of them)" : "");
		else
			fprintf(f, "model %s on %s (tp %u), KV cache %s, %u replica%s\n",
				d->model.name, d->gpu.name, d->tp ? d->tp : 1,
				kvs_dtype_name(d->kv_dtype), n, n == 1 ? "" : "s");
		kvs_cli_sim_print_pool(f, kvs_sim_result_config(r0), kvs_sim_result_stats(r0),
				       NULL);
	} else {
		fprintf(f, "model %s, KV cache %s, %u replica%s in %zu pool%s\n", d->model.name,
			kvs_dtype_name(d->kv_dtype), n, n == 1 ? "" : "s", c->npools,
			c->npools == 1 ? "" : "s");
		uint32_t first = 0;
		for (size_t p = 0; p < c->npools; p++) {
			const kvs_fleet_pool *pl = &c->pools[p];
			fprintf(f, "  pool %s: %u x %s (tp %u): ", pl->name, pl->replicas,
				pl->sim.deploy.gpu.name, pl->sim.deploy.tp);
			const kvs_sim_result *rp = kvs_fleet_result_replica(r, first);
			kvs_cli_sim_print_pool(f, kvs_sim_result_config(rp), kvs_sim_result_stats(rp),
					       limits_differ ? &pl->sim : NULL);
			first += pl->replicas;
		}
	}
	kvs_fleet_kv kv;
	kvs_fleet_result_kv(r, &kv);
	char total[32];
	kvs_cli_human_bytes(total, sizeof total, (double)kv.total_bytes);
	fprintf(f, "KV pool of the whole fleet %s on %llu GPU%s = %llu tokens (%llu blocks, "
		"all replicas)\n", total, (unsigned long long)kv.gpus, kv.gpus == 1 ? "" : "s",
		(unsigned long long)kv.total_tokens, (unsigned long long)kv.total_blocks);
	kvs_cli_sim_print_header_engine(f, kvs_sim_result_config(tot), kvs_sim_result_stats(tot),
					path, format, limits_differ);
}

static void print_fleet(FILE *f, const kvs_fleet_result *r, const fleet_opts *o)
{
	const kvs_fleet_stats *fs = kvs_fleet_result_stats(r);
	const kvs_fleet_config *c = kvs_fleet_result_config(r);
	fprintf(f, "\nfleet: %u replicas, router %s", fs->replicas, c->router);
	if (c->router_refresh_s > 0)
		fprintf(f, ", signals refreshed every %g s", c->router_refresh_s);
	fputc('\n', f);
	for (size_t p = 0; p < c->npools; p++)
		fprintf(f, "  pool %s: %u x %s, tp %u%s%s\n", c->pools[p].name, c->pools[p].replicas,
			c->pools[p].sim.deploy.gpu.name, c->pools[p].sim.deploy.tp,
			c->pools[p].role ? ", " : "",
			c->pools[p].role ? kvs_fleet_role_name(c->pools[p].role) : "");
	if (fs->disaggregated)
		fprintf(f, "  KV link: %s, %.4g GB/s, latency %.4g s per transfer, one per "
			"prefill replica\n", c->kv_link.name, c->kv_link.bytes_per_s / 1e9,
			c->kv_link.latency_s);
	/* the replicas by the names of --json (POOL-INDEX with pools) */
	int w = 7;
	char name[48];
	for (uint32_t i = 0; i < fs->replicas; i++) {
		kvs_fleet_replica_name(r, i, name, sizeof name);
		if ((int)strlen(name) > w)
			w = (int)strlen(name);
	}
	/* disaggregated: a prefill replica's requests leave it handed off to
	 * a decode replica, so that each row balances in sight: routed =
	 * completed + rejected + unfinished + handed off */
	fprintf(f, "  %*s %9s %9s %9s %9s", w, "replica", "routed", "completed", "rejected",
		"unfinished");
	if (fs->disaggregated)
		fprintf(f, " %10s", "handed off");
	fprintf(f, " %10s %10s %11s", "KV used %", "prefix hit", "preemptions");
	if (fs->disaggregated)
		fprintf(f, " %9s %9s", "KV recv", "link use");
	fputc('\n', f);
	bool balanced = true;
	for (uint32_t i = 0; i < fs->replicas; i++) {
		const kvs_fleet_replica_stats *s = kvs_fleet_result_replica_stats(r, i);
		kvs_fleet_replica_name(r, i, name, sizeof name);
		fprintf(f, "  %*s %9llu %9llu %9llu %9llu", w, name,
			(unsigned long long)s->routed, (unsigned long long)s->completed,
			(unsigned long long)s->rejected, (unsigned long long)s->unfinished);
		if (fs->disaggregated)
			fprintf(f, " %10llu", (unsigned long long)s->kv_sent);
		fprintf(f, " %10.2f %9.2f%% %11llu", s->kv_used_pct,
			100.0 * s->prefix_hit_rate_tokens, (unsigned long long)s->preemptions);
		if (fs->disaggregated && c->pools[s->pool].role == KVS_FLEET_ROLE_PREFILL)
			fprintf(f, " %9llu %8.2f%%", (unsigned long long)s->kv_received,
				100.0 * s->link_util);
		else if (fs->disaggregated)
			fprintf(f, " %9llu %9s", (unsigned long long)s->kv_received, "-");
		fputc('\n', f);
		balanced &= s->routed == s->completed + s->rejected + s->unfinished + s->kv_sent;
	}
	if (fs->disaggregated)
		fprintf(f, "  each row: routed = completed + rejected + unfinished + handed off "
			"(a decode replica's routed: the hand-offs it received)%s\n",
			balanced ? "" : "; requests routed but not yet arrived when the run "
			"ended are in none of them");
	if (fs->disaggregated)
		fprintf(f, "  KV transfers: %llu, %.4g GB moved, time mean %.4g s, p99 %.4g s, "
			"max %.4g s; link use mean %.2f%%, max %.2f%%\n",
			(unsigned long long)fs->kv_transfers, fs->kv_bytes / 1e9,
			fs->kv_transfer_mean_s, fs->kv_transfer_p99_s, fs->kv_transfer_max_s,
			100.0 * fs->kv_link_util_mean, 100.0 * fs->kv_link_util_max);
	if (fs->disaggregated && kvs_sim_result_stats(kvs_fleet_result_total(r))->interrupted)
		fprintf(f, "  KV in flight when interrupted: %llu transfers (their requests "
			"unfinished on their decode replicas)\n",
			(unsigned long long)fs->kv_in_flight);
	fprintf(f, "  balance: requests CV %.4f, KV use CV %.4f\n", fs->requests_cv,
		fs->kv_used_cv);
	if (o->gpu_hour_price > 0) {
		const kvs_sim_stats *st = kvs_sim_result_stats(kvs_fleet_result_total(r));
		uint64_t gpus = fleet_gpus(r);
		double per_h = o->gpu_hour_price * (double)gpus;
		fprintf(f, "  cost: %llu GPUs, $%.2f per hour", (unsigned long long)gpus, per_h);
		if (st->output_tokens_per_s > 0)
			fprintf(f, ", $%.4f per million output tokens",
				per_h / (st->output_tokens_per_s * 3600.0) * 1e6);
		fputc('\n', f);
	}
}

typedef struct fleet_run {
	const kvs_fleet_config *base;
	uint32_t replicas;
	kvs_fleet_result **out;
} fleet_run;

static kvs_status fleet_run_one(void *ctx, kvs_request_source *src)
{
	fleet_run *r = ctx;
	kvs_fleet_config c = *r->base;
	c.replicas = r->replicas;
	return kvs_fleet_run(&c, src, r->out);
}

/* The "cost" object of the fleet's JSON (--gpu-hour-price). */
static json_t *fleet_cost_json(const kvs_fleet_result *r, double gpu_hour_price)
{
	const kvs_sim_stats *s = kvs_sim_result_stats(kvs_fleet_result_total(r));
	uint64_t gpus = fleet_gpus(r);
	double per_h = gpu_hour_price * (double)gpus;
	json_t *cost = json_object();
	json_object_set_new(cost, "gpus", json_integer(gpus));
	json_object_set_new(cost, "gpu_hour_price", json_real(gpu_hour_price));
	json_object_set_new(cost, "dollars_per_hour", json_real(per_h));
	json_object_set_new(cost, "dollars_per_million_output_tokens",
			    s->output_tokens_per_s > 0
			    ? json_real(per_h / (s->output_tokens_per_s * 3600.0) * 1e6)
			    : json_null());
	return cost;
}

/* One fleet of n over the trace (in memory) at the given time scale. */
static kvs_status run_n(kvs_cli_front *fe, const kvs_fleet_config *base, uint32_t n,
			double scale, kvs_fleet_result **out)
{
	fleet_run r = { base, n, out };
	return kvs_cli_front_run(fe, scale, fleet_run_one, &r);
}

/* One run of the search: its replica count and verdict. */
typedef struct search_try {
	uint32_t n;
	int verdict;                /* 1 meets the SLOs, 0 misses, -1 interrupted */
	double ttft_p99_s, tpot_p99_s;
	double queue_delay_max_s;   /* 0: no request waited for admission */
	uint64_t preemptions;
} search_try;

/* Doubling from 1 to at most 2^20 replicas (21 runs), then bisection
 * between two of them (at most 20): the tries of any search fit. */
#define SEARCH_TRIES 48

/* A search for the fewest replicas, as far as it went. */
typedef struct search {
	search_try t[SEARCH_TRIES];
	size_t ntries;
	uint32_t lo, hi;            /* most replicas that missed, fewest that met
	                             * (0: none yet) */
	kvs_fleet_result *best;     /* hi's fleet */
	kvs_fleet_result *miss;     /* lo's fleet */
	kvs_fleet_result *cut;      /* the run the interrupt stopped, if one did */
	bool interrupted;           /* stopped before its answer */
	/* More replicas no longer help: lo's fleet missed with no request
	 * queued or preempted, its missed p99s no better than the count
	 * before it: its p99s are the floor of an unloaded fleet */
	bool unattainable;
	bool limit_reached;   /* --max-replicas tried, missing, still helping */
} search;

static void search_free(search *S)
{
	kvs_fleet_result_destroy(S->best);
	kvs_fleet_result_destroy(S->miss);
	kvs_fleet_result_destroy(S->cut);
	memset(S, 0, sizeof *S);
}

/* Did more replicas stop helping?  t missed with no request queued for
 * admission and none preempted (every request ran as soon as it came),
 * and no p99 it missed improved on the previous count's (prev): adding
 * replicas only thins batches that no longer hold anyone up, so the
 * search would double on to --max-replicas for nothing.  ("Improved": by
 * more than 0.1%, so that float noise is no progress.) */
static bool no_longer_helps(const search_try *prev, const search_try *t, double slo_ttft_s,
			    double slo_tpot_s)
{
	if (t->verdict != 0 || t->queue_delay_max_s > 0 || t->preemptions)
		return false;
	if (!prev || prev->verdict != 0)
		return false;
	bool ttft_missed = slo_ttft_s > 0 && !(t->ttft_p99_s <= slo_ttft_s);
	bool tpot_missed = slo_tpot_s > 0 && !(t->tpot_p99_s <= slo_tpot_s);
	if (!ttft_missed && !tpot_missed)
		return false;      /* (nothing completed: not a latency floor) */
	if (ttft_missed && !(t->ttft_p99_s >= prev->ttft_p99_s * (1 - 1e-3)))
		return false;
	if (tpot_missed && !(t->tpot_p99_s >= prev->tpot_p99_s * (1 - 1e-3)))
		return false;
	return true;
}

/* Doubling, then bisection: the fewest replicas meeting the SLOs
 * (assumes more replicas never do worse, as for identical replicas).
 * The doubling stops early when more replicas no longer help
 * (no_longer_helps: S->unattainable, KVS_EXIT_OK), and at --max-replicas
 * (S->limit_reached, KVS_EXIT_OK).
 * Ctrl-C ends it before the next run, or in one (whose figures are then
 * no verdict): S->interrupted, the tries so far in S, KVS_EXIT_OK. */
static int find_min(kvs_cli_front *fe, const kvs_fleet_config *base, const fleet_opts *o,
		    double scale, search *S)
{
	const char *cmd = fe->cmd;
	uint32_t n = 1;
	memset(S, 0, sizeof *S);
	for (;;) {
		/* a signal between two runs: the search stops here (before the
		 * first, that run starts and stops at once, so that there is
		 * one to show) */
		if (S->ntries && kvs_cli_front_interrupted(fe)) {
			S->interrupted = true;
			return KVS_EXIT_OK;
		}
		kvs_require(S->ntries < SEARCH_TRIES);
		kvs_fleet_result *r = NULL;
		kvs_status st = run_n(fe, base, n, scale, &r);
		if (st != KVS_OK) {
			/* (a run can end well and the trace's rest fail to read) */
			kvs_fleet_result_destroy(r);
			kvs_cli_report_error(cmd, st);
			return KVS_EXIT_FAIL;
		}
		const kvs_sim_stats *s = kvs_sim_result_stats(kvs_fleet_result_total(r));
		search_try *t = &S->t[S->ntries++];
		*t = (search_try){ n, -1, s->ttft_s.p99, s->tpot_s.p99, s->queue_delay_s.max,
				   s->preemptions };
		if (s->interrupted) {
			fprintf(stderr, "kvsim %s: %u replicas: interrupted at %.3f simulated s: "
				"no verdict\n", cmd, n, s->sim_time_s);
			S->cut = r;
			S->interrupted = true;
			return KVS_EXIT_OK;
		}
		bool ok = kvs_sim_stats_meet_slo(s, base->sim.slo_ttft_s, base->sim.slo_tpot_s);
		t->verdict = ok;
		fprintf(stderr, "kvsim %s: %u replicas: p99 TTFT %.4f s, p99 TPOT %.4f s: %s\n",
			cmd, n, s->ttft_s.p99, s->tpot_s.p99, ok ? "meets the SLOs" : "misses");
		if (ok) {
			kvs_fleet_result_destroy(S->best);
			S->best = r;
			S->hi = n;
		} else {
			kvs_fleet_result_destroy(S->miss);
			S->miss = r;
			S->lo = n;
		}
		if (S->hi == 0) {
			if (S->ntries >= 2 && no_longer_helps(&S->t[S->ntries - 2], t,
							     base->sim.slo_ttft_s,
							     base->sim.slo_tpot_s)) {
				S->unattainable = true;
				return KVS_EXIT_OK;
			}
			if (n >= o->max_replicas) {
				S->limit_reached = true;
				return KVS_EXIT_OK;
			}
			n = n * 2 > o->max_replicas ? o->max_replicas : n * 2;
			continue;
		}
		if (S->hi - S->lo <= 1)
			return KVS_EXIT_OK;
		n = S->lo + (S->hi - S->lo) / 2;
	}
}

static const char *const verdict_name[] = { "interrupted", "misses", "meets" };

/* " 1 (misses), 2 (meets), ...": the counts tried with their verdicts */
static void print_tried(FILE *f, const search *S)
{
	for (size_t i = 0; i < S->ntries; i++)
		fprintf(f, "%s %u (%s)", i ? "," : "", S->t[i].n, verdict_name[S->t[i].verdict + 1]);
}

/* An interrupted search on stdout: the counts tried, what was found, and
 * which fleet the table below shows. */
static void print_search(FILE *f, const search *S, uint32_t shown, int shown_verdict,
			 double slo_ttft_s, double slo_tpot_s, double rate)
{
	char slo[96];
	fprintf(f, "kvsim fleet: search interrupted (%s at %.6g requests/s); tried",
		kvs_slo_phrase(slo, sizeof slo, slo_ttft_s, slo_tpot_s), rate);
	print_tried(f, S);
	fputs("\n", f);
	if (S->hi)
		fprintf(f, "  the fewest found to meet them: %u replicas; %u or fewer miss; "
			"%u to %u not decided\n", S->hi, S->lo, S->lo + 1, S->hi - 1);
	else if (S->lo)
		fprintf(f, "  none found to meet them yet: %u or fewer replicas miss\n", S->lo);
	else
		fprintf(f, "  no verdict yet\n");
	fprintf(f, "  below: the fleet of %u replicas (%s)\n", shown,
		shown_verdict > 0 ? "meets the SLOs" : shown_verdict == 0 ? "misses the SLOs"
				  : "interrupted: the figures cover what was done");
}

/* A search that more replicas no longer help: the verdict, the floor of
 * the p99s missed and what would lower it, the counts tried. */
static void print_unattainable(FILE *f, const search *S, double slo_ttft_s, double slo_tpot_s,
			       double rate)
{
	const search_try *t = &S->t[S->ntries - 1], *prev = &S->t[S->ntries - 2];
	bool ttft = slo_ttft_s > 0 && !(t->ttft_p99_s <= slo_ttft_s);
	bool tpot = slo_tpot_s > 0 && !(t->tpot_p99_s <= slo_tpot_s);
	char slo[96];
	fprintf(f, "kvsim fleet: unattainable: no number of replicas meets %s at %.6g "
		"requests/s\n", kvs_slo_phrase(slo, sizeof slo, ttft ? slo_ttft_s : 0,
					  tpot ? slo_tpot_s : 0), rate);
	fprintf(f, "  at %u replicas no request queued for admission or was preempted, and "
		"the p99 missed did not improve on %u replicas'\n", t->n, prev->n);
	fprintf(f, "  the floor of an unloaded fleet: p99 TTFT %.4f s, p99 TPOT %.4f s\n",
		t->ttft_p99_s, t->tpot_p99_s);
	fputs("  what would help: a faster GPU (--gpu), more tensor parallelism (--tp), ", f);
	if (ttft && tpot)
		fprintf(f, "or SLOs of at least p99 TTFT %.4g s and p99 TPOT %.4g s\n",
			t->ttft_p99_s, t->tpot_p99_s);
	else
		fprintf(f, "or an SLO of at least %.4g s (--slo-%s)\n",
			ttft ? t->ttft_p99_s : t->tpot_p99_s, ttft ? "ttft" : "tpot");
	fputs("  tried", f);
	print_tried(f, S);
	fprintf(f, "\n  below: the fleet of %u replicas (misses the SLOs)\n", t->n);
}

/* The search in --json ("search", docs/FLEET.md): every search, finished,
 * unattainable or interrupted. */
static json_t *search_json(const search *S, uint32_t shown, double rate)
{
	json_t *o = json_object(), *tries = json_array();
	for (size_t i = 0; i < S->ntries; i++) {
		const search_try *t = &S->t[i];
		json_t *x = json_object();
		json_object_set_new(x, "replicas", json_integer(t->n));
		json_object_set_new(x, "verdict", json_string(verdict_name[t->verdict + 1]));
		json_object_set_new(x, "ttft_p99_s", t->verdict >= 0 && isfinite(t->ttft_p99_s)
				    ? json_real(t->ttft_p99_s) : json_null());
		json_object_set_new(x, "tpot_p99_s", t->verdict >= 0 && isfinite(t->tpot_p99_s)
				    ? json_real(t->tpot_p99_s) : json_null());
		json_object_set_new(x, "queue_delay_max_s", t->verdict >= 0 &&
				    isfinite(t->queue_delay_max_s)
				    ? json_real(t->queue_delay_max_s) : json_null());
		json_array_append_new(tries, x);
	}
	json_object_set_new(o, "result", json_string(S->interrupted ? "interrupted"
				: S->unattainable ? "unattainable"
				: S->limit_reached ? "max_replicas_reached" : "found"));
	if (S->unattainable) {
		const search_try *t = &S->t[S->ntries - 1];
		json_t *fl = json_object();
		json_object_set_new(fl, "replicas", json_integer(t->n));
		json_object_set_new(fl, "ttft_p99_s", isfinite(t->ttft_p99_s)
				    ? json_real(t->ttft_p99_s) : json_null());
		json_object_set_new(fl, "tpot_p99_s", isfinite(t->tpot_p99_s)
				    ? json_real(t->tpot_p99_s) : json_null());
		json_object_set_new(o, "floor", fl);
	} else {
		json_object_set_new(o, "floor", json_null());
	}
	json_object_set_new(o, "tried", tries);
	json_object_set_new(o, "rate", json_real(rate));
	json_object_set_new(o, "fewest_meeting", S->hi ? json_integer(S->hi) : json_null());
	json_object_set_new(o, "most_missing", S->lo ? json_integer(S->lo) : json_null());
	json_object_set_new(o, "shown_replicas", json_integer(shown));
	return o;
}

int kvs_cmd_fleet(kvs_args *it)
{
	kvs_cli_front fe;
	kvs_cli_front_init(&fe, it, 0);
	const kvs_cli_sim *sim = &fe.sim;
	fleet_opts fo = { .replicas = 1, .router = "round-robin", .max_replicas = 1024,
			  .refresh_s = -1 };
	int rc = kvs_cli_front_parse(&fe, fleet_arg, &fo);
	if (rc != KVS_CLI_GO_ON)
		return rc;
	if (sim->npolicies > 1) {
		fprintf(stderr, "kvsim fleet: one policy per fleet\n");
		return KVS_EXIT_USAGE;
	}
	if ((rc = kvs_cli_front_finish(&fe)) != KVS_CLI_GO_ON)
		return rc;
	/* data parallelism: the ranks are the replicas, behind the engine's
	 * own balancer unless a router is given */
	uint32_t dp = fe.dep.d.dp;
	if (dp > 1) {
		const char *clash = fo.npools ? "--pool" : fo.find_min ? "--find-min-replicas" :
				    fo.replicas_set && fo.replicas != dp ? "--replicas" : NULL;
		if (clash) {
			fprintf(stderr, "kvsim fleet: --data-parallel-size %u: the ranks are the "
				"fleet's replicas; not with %s\n", dp, clash);
			return kvs_cli_front_close(&fe, KVS_EXIT_USAGE);
		}
		fo.replicas = dp;
		if (!fo.router_set)   /* SGLang's data-parallel controller: round robin */
			fo.router = fe.dep.d.engine == KVS_ENGINE_SGLANG ? "round-robin" : "vllm-dp";
	}
	kvs_router *probe;
	if (kvs_router_create(fo.router, 0, &probe) != KVS_OK) {
		fprintf(stderr, "kvsim fleet: --router: %s\n", kvs_last_error());
		return KVS_EXIT_USAGE;
	}
	kvs_router_destroy(probe);
	if (fo.find_min && !(sim->cfg.slo_ttft_s > 0) && !(sim->cfg.slo_tpot_s > 0)) {
		fprintf(stderr, "kvsim fleet: --find-min-replicas needs --slo-ttft and/or "
			"--slo-tpot\n");
		return KVS_EXIT_USAGE;
	}
	if (fo.npools && (fe.dep.gpu_given || fe.dep.gpu_mem)) {
		/* each pool loads its own GPU: one given for all would be
		 * dropped silently */
		fprintf(stderr, "kvsim fleet: --pool names each pool's GPU: not with %s (a GPU "
			"file in the pool, NAME:N:FILE.json:TP, gives other figures)\n",
			fe.dep.gpu_given ? "--gpu" : "--gpu-mem");
		return KVS_EXIT_USAGE;
	}
	if (fo.npools && (fo.replicas_set || fo.find_min)) {
		fprintf(stderr, "kvsim fleet: --pool gives the replicas: not with %s\n",
			fo.find_min ? "--find-min-replicas" : "--replicas");
		return KVS_EXIT_USAGE;
	}
	if ((fo.rate > 0 || fo.max_replicas_set) && !fo.find_min) {
		fprintf(stderr, "kvsim fleet: %s is for --find-min-replicas\n",
			fo.rate > 0 ? "--rate" : "--max-replicas");
		return KVS_EXIT_USAGE;
	}
	kvs_fleet_config fc;
	kvs_fleet_config_defaults(&fc, &fe.dep.d);
	fc.sim = sim->cfg;
	fc.replicas = fo.replicas;
	fc.router = fo.router;
	fc.router_refresh_s = fo.refresh_s;
	fc.seed = sim->cfg.seed;
	if (fo.link_set)
		fc.kv_link = fo.link;
	kvs_fleet_pool pools[KVS_ARRAY_LEN(fo.pool_specs)];
	for (size_t p = 0; p < fo.npools; p++)
		if (!parse_pool(fo.pool_specs[p], sim, &pools[p]))
			return kvs_cli_front_close(&fe, KVS_EXIT_USAGE);
	fc.pools = pools;
	fc.npools = fo.npools;
	bool disagg = false;
	for (size_t p = 0; p < fo.npools; p++)
		disagg |= pools[p].role != KVS_FLEET_ROLE_BOTH;
	/* SIGINT/SIGTERM stop a fleet run at its next arrival (a
	 * disaggregated one once every hand-off has reached its decode
	 * replica), and a search before its next run or in one: the outputs
	 * are written whole with what was done, marked interrupted */
	if ((rc = kvs_cli_front_open(&fe, true)) != KVS_CLI_GO_ON)
		return rc;
	fc.sim.interrupt = sim->cfg.interrupt;   /* set by the open */
	for (size_t p = 0; p < fo.npools; p++)
		pools[p].sim.interrupt = sim->cfg.interrupt;
	if (fo.link_set && !disagg) {
		fprintf(stderr, "kvsim fleet: --kv-link needs prefill and decode pools (--pool "
			"prefill:N:GPU:TP --pool decode:N:GPU:TP)\n");
		return kvs_cli_front_close(&fe, KVS_EXIT_USAGE);
	}

	/* the search runs the trace many times */
	if ((rc = kvs_cli_front_load(&fe, fo.find_min)) != KVS_CLI_GO_ON)
		return rc;
	int sig = kvs_cli_front_interrupted(&fe);
	if (sig) {
		/* while the trace was read into memory */
		return kvs_cli_front_unrun(&fe, sig);
	}
	rc = KVS_EXIT_OK;
	kvs_fleet_result *res = NULL;
	kvs_status st = KVS_OK;
	search S;
	memset(&S, 0, sizeof S);
	uint32_t shown = 0;         /* an interrupted search: the fleet shown */
	double rate = 0;
	if (fo.find_min) {
		double base_rate = kvs_request_set_mean_rate(fe.set);
		if (!(base_rate > 0)) {
			fprintf(stderr, "kvsim fleet: --find-min-replicas needs a trace with at "
				"least two distinct arrival times (its rate is scaled)\n");
			return kvs_cli_front_close(&fe, KVS_EXIT_USAGE);
		}
		double scale = fo.rate > 0 ? base_rate / fo.rate : 1.0;
		rate = fo.rate > 0 ? fo.rate : base_rate;
		rc = find_min(&fe, &fc, &fo, scale, &S);
		/* the line goes with the table: not into --json - */
		FILE *line = kvs_cli_front_table(&fe) ? stdout : stderr;
		if (rc == KVS_EXIT_OK && S.unattainable) {
			print_unattainable(line, &S, sim->cfg.slo_ttft_s, sim->cfg.slo_tpot_s, rate);
			res = S.miss;
			S.miss = NULL;
			shown = S.lo;
		} else if (rc == KVS_EXIT_OK && S.limit_reached) {
			fprintf(line, "kvsim fleet: no fleet of up to %u replicas meets the SLOs at "
				"%.6g requests/s, and more replicas still helped (raise "
				"--max-replicas)\n  tried", fo.max_replicas, rate);
			print_tried(line, &S);
			fprintf(line, "\n  below: the fleet of %u replicas (misses the SLOs)\n", S.lo);
			res = S.miss;
			S.miss = NULL;
			shown = S.lo;
		} else if (rc == KVS_EXIT_OK && !S.interrupted) {
			char slo[96];
			fprintf(line, "kvsim fleet: %u replicas meet %s at %.6g requests/s\n",
				S.hi, kvs_slo_phrase(slo, sizeof slo, sim->cfg.slo_ttft_s,
						     sim->cfg.slo_tpot_s), rate);
			res = S.best;
			S.best = NULL;
			shown = S.hi;
		} else if (rc == KVS_EXIT_OK) {
			/* the search so far: its best fleet, else the last that
			 * missed, else the run it stopped in */
			kvs_fleet_result **pick = S.best ? &S.best : S.miss ? &S.miss : &S.cut;
			int verdict = S.best ? 1 : S.miss ? 0 : -1;
			res = *pick;
			*pick = NULL;
			shown = verdict > 0 ? S.hi : verdict == 0 ? S.lo : S.t[S.ntries - 1].n;
			print_search(line, &S, shown, verdict, sim->cfg.slo_ttft_s,
				     sim->cfg.slo_tpot_s, rate);
		}
	} else {
		st = run_n(&fe, &fc, fc.replicas, 1.0, &res);
	}
	if (st != KVS_OK) {
		kvs_cli_report_error(fe.cmd, st);
		rc = st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
	}
	sig = kvs_cli_front_interrupted(&fe);
	kvs_sim_result *tot = rc == KVS_EXIT_OK
			      ? (kvs_sim_result *)kvs_fleet_result_total(res) : NULL;
	/* the trace's requests the fleet did not take (a horizon, an
	 * interrupt): counted, as replay counts them */
	uint64_t after = tot ? kvs_cli_after_end(tot, fe.trace_requests) : 0;
	if (tot && sig && S.interrupted)
		fprintf(stderr, "kvsim fleet: interrupted after %zu run%s of the search; the "
			"outputs hold the search so far, marked \"interrupted\"\n", S.ntries,
			S.ntries == 1 ? "" : "s");
	else if (tot && sig && kvs_sim_result_stats(tot)->interrupted)
		fprintf(stderr, "kvsim fleet: interrupted at %.3f simulated seconds; the "
			"outputs hold what was done, marked \"interrupted\"\n",
			kvs_sim_result_stats(tot)->sim_time_s);
	else if (tot && sig)
		fprintf(stderr, "kvsim fleet: interrupted after the %s had finished: the "
			"outputs are whole\n", fo.find_min ? "search" : "run");
	/* the replicas coarsen a given interval alike */
	if (tot) {
		kvs_cli_warn_empty_trace(fe.cmd, fe.path, &fe.tstats);
		kvs_cli_warn_coarsened(fe.cmd, sim->cfg.sample_interval_s, &tot, 1);
	}
	if (rc == KVS_EXIT_OK && kvs_cli_front_table(&fe)) {
		if (S.interrupted || S.unattainable || S.limit_reached)
			putchar('\n');
		print_fleet_header(stdout, res, fe.path, fe.format);
		kvs_cli_sim_print_results(stdout, &tot, 1, &after);
		print_fleet(stdout, res, &fo);
	}
	if (rc == KVS_EXIT_OK && kvs_cli_front_wants_json(&fe)) {
		kvs_json *doc = kvs_fleet_report_json(res, fe.path, fe.format, &fe.tstats);
		if (doc && fo.gpu_hour_price > 0)
			json_object_set_new(json_object_get(kvs_json_jt(doc), "fleet"), "cost",
					    fleet_cost_json(res, fo.gpu_hour_price));
		if (doc && sig)
			json_object_set_new(kvs_json_jt(doc), "interrupted", json_true());
		if (doc && fo.find_min)
			json_object_set_new(json_object_get(kvs_json_jt(doc), "fleet"), "search",
					    search_json(&S, shown, rate));
		kvs_cli_after_end_json(doc, tot, after);
		rc = kvs_cli_front_json(&fe, doc);
	}
	kvs_fleet_result_destroy(res);
	bool unattainable = S.unattainable || S.limit_reached;
	search_free(&S);
	rc = kvs_cli_front_close(&fe, rc);
	if (rc == KVS_EXIT_OK && sig)
		return 128 + sig;
	/* the outputs written, but no fleet meets the SLOs */
	return rc == KVS_EXIT_OK && unattainable ? KVS_EXIT_FAIL : rc;
}
