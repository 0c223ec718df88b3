/*
 * bench_fleet.c - fleet speed: a million generated requests over 8
 * replicas behind each router, side by side with one replica's replay of
 * the same requests at an eighth of the rate (the load one replica of the
 * fleet carries), in the same run.  Each case runs in a child process so
 * that its peak resident memory is its own.
 *
 *   bench_fleet [--json] [--quick] [--replicas N] [--requests N]
 *
 * Target (one core): 1M requests over 8 replicas under 5 s and 300 MB.
 * Cost model: O(events + arrivals x replicas); the replay row is the
 * events alone.  The disaggregated row splits the same replicas into
 * prefill (5/8) and decode (3/8) pools joined by ib-400g links (the split
 * at which this load stays stable: 3/8 prefill queues without bound); it
 * runs in global event order (O(events x (replicas + links))).
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/kvsim.h"

typedef struct figures {
	int ok;
	double wall_s;
	kvs_bench_run run;
	double requests_cv;
	uint64_t peak_rss;
	char err[200];
} figures;

typedef struct bench_case {
	const char *name;
	const char *router;    /* NULL: single-replica replay */
	uint32_t replicas;
	bool disagg;           /* prefill and decode pools */
} bench_case;

static void run_case(const bench_case *bc, uint64_t nreq, uint32_t fleet_n, figures *f)
{
	memset(f, 0, sizeof *f);
	kvs_sim_config c;
	kvs_bench_sim_config("fleet", "llama-3-8b", "a100-40gb", 0, &c);
	/* bench_sim's workload at 5 requests/s per replica, so that queues
	 * and memory stay bounded */
	kvs_gen_opts go;
	kvs_bench_conv_workload(&go, nreq, 5.0 * (bc->router ? fleet_n : 1));
	kvs_gen *gen;
	kvs_status st = kvs_gen_open(&go, &gen);
	if (st != KVS_OK) {
		snprintf(f->err, sizeof f->err, "%s", kvs_last_error());
		return;
	}
	kvs_request_source src = kvs_bench_gen_source(gen);
	uint64_t t0 = kvs_bench_now_ns();
	const kvs_sim_stats *s = NULL;
	kvs_sim_result *res = NULL;
	kvs_fleet_result *fr = NULL;
	if (bc->router) {
		kvs_fleet_config fc;
		kvs_fleet_config_defaults(&fc, &c.deploy);
		fc.sim = c;
		fc.replicas = fleet_n;
		fc.router = bc->router;
		fc.seed = 1;
		kvs_fleet_pool pools[2];
		if (bc->disagg && fleet_n >= 2) {
			memset(pools, 0, sizeof pools);
			uint32_t np = (fleet_n * 5 + 7) / 8;
			if (np >= fleet_n)
				np = fleet_n - 1;
			snprintf(pools[0].name, sizeof pools[0].name, "prefill");
			pools[0].replicas = np;
			pools[0].sim = c;
			pools[0].role = KVS_FLEET_ROLE_PREFILL;
			snprintf(pools[1].name, sizeof pools[1].name, "decode");
			pools[1].replicas = fleet_n - np;
			pools[1].sim = c;
			pools[1].role = KVS_FLEET_ROLE_DECODE;
			fc.pools = pools;
			fc.npools = 2;
		}
		st = kvs_fleet_run(&fc, &src, &fr);
		if (st == KVS_OK) {
			s = kvs_sim_result_stats(kvs_fleet_result_total(fr));
			f->requests_cv = kvs_fleet_result_stats(fr)->requests_cv;
		}
	} else {
		st = kvs_sim_replay(&c, &src, &res);
		if (st == KVS_OK)
			s = kvs_sim_result_stats(res);
	}
	f->wall_s = (double)(kvs_bench_now_ns() - t0) * 1e-9;
	kvs_gen_close(gen);
	if (st != KVS_OK) {
		snprintf(f->err, sizeof f->err, "%s", kvs_last_error());
		return;
	}
	f->ok = 1;
	f->run = kvs_bench_run_of(s);
	kvs_sim_result_destroy(res);
	kvs_fleet_result_destroy(fr);
	f->peak_rss = kvs_mem_peak_rss();
}

typedef struct fleet_job {
	const bench_case *bc;
	uint64_t nreq;
	uint32_t n;
} fleet_job;

static void fleet_job_run(void *ctx, void *out)
{
	const fleet_job *j = ctx;
	run_case(j->bc, j->nreq, j->n, out);
}

/* Run in a child so the peak RSS belongs to this case alone. */
static void run_isolated(const bench_case *bc, uint64_t nreq, uint32_t n, figures *f)
{
	fleet_job j = { bc, nreq, n };
	if (!kvs_bench_run_isolated(fleet_job_run, &j, f, sizeof *f))
		snprintf(f->err, sizeof f->err, "child failed");
}

int main(int argc, char **argv)
{
	kvs_bench b;
	int code;
	if (!kvs_bench_init(&b, "fleet", argc, argv, &code))
		return code;
	uint64_t nreq = 1000000;
	uint32_t n = 8;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			nreq = 100000;
		else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
			nreq = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--replicas") == 0 && i + 1 < argc)
			n = (uint32_t)strtoul(argv[++i], NULL, 10);
	}
	if (nreq == 0 || n == 0) {
		fprintf(stderr, "bench_fleet: --requests and --replicas must be >= 1\n");
		return 2;
	}
	const bench_case cases[] = {
		{ "replay, 1 replica", NULL, 1, false },
		{ "fleet round-robin", "round-robin", n, false },
		{ "fleet least-requests", "least-requests", n, false },
		{ "fleet least-kv", "least-kv", n, false },
		{ "fleet score", "score", n, false },
		{ "disagg 5:3 least-req", "least-requests", n, true },
	};
	double target = 5.0 * (double)nreq / 1e6;
	if (!b.json) {
		printf("kvsim fleet speed, llama-3-8b on a100-40gb, %llu generated requests, "
		       "one core, %s allocator\n", (unsigned long long)nreq, kvs_mem_allocator());
		printf("fleet: %u replicas at %g requests/s; replay: the same requests at %g "
		       "requests/s on one replica\n\n", n, 5.0 * n, 5.0);
		printf("%-22s %9s %8s %12s %12s %10s %9s %8s %s\n", "case", "wall s", "target",
		       "requests/s", "events", "steps", "peak MiB", "req CV", "");
	}
	for (size_t k = 0; k < KVS_ARRAY_LEN(cases); k++) {
		const bench_case *bc = &cases[k];
		figures f;
		run_isolated(bc, nreq, n, &f);
		if (!f.ok) {
			printf("%-22s failed: %s\n", bc->name, f.err);
			continue;
		}
		double rps = (double)f.run.arrived / f.wall_s;
		double mib = (double)f.peak_rss / 1048576.0;
		bool met = !bc->router || (f.wall_s <= target && mib < 300);
		if (!b.json)
			printf("%-22s %9.3f %7.1fs %12.0f %12llu %10llu %9.1f %8.4f %s\n", bc->name,
			       f.wall_s, bc->router ? target : 0.0, rps,
			       (unsigned long long)f.run.events, (unsigned long long)f.run.steps, mib,
			       f.requests_cv, bc->router ? (met ? "ok" : "MISSED") : "(reference)");
		json_t *row = json_object();
		json_object_set_new(row, "case", json_string(bc->name));
		json_object_set_new(row, "router", bc->router ? json_string(bc->router) : json_null());
		json_object_set_new(row, "replicas", json_integer(bc->router ? n : 1));
		json_object_set_new(row, "disaggregated", json_boolean(bc->disagg));
		json_object_set_new(row, "wall_s", json_real(f.wall_s));
		json_object_set_new(row, "requests", json_integer((json_int_t)f.run.arrived));
		json_object_set_new(row, "completed", json_integer((json_int_t)f.run.completed));
		json_object_set_new(row, "requests_per_s", json_real(rps));
		json_object_set_new(row, "events", json_integer((json_int_t)f.run.events));
		json_object_set_new(row, "steps", json_integer((json_int_t)f.run.steps));
		json_object_set_new(row, "sim_time_s", json_real(f.run.sim_time_s));
		json_object_set_new(row, "requests_cv", json_real(f.requests_cv));
		json_object_set_new(row, "peak_rss_bytes", json_integer((json_int_t)f.peak_rss));
		json_object_set_new(row, "target_s", bc->router ? json_real(target) : json_null());
		json_object_set_new(row, "target_met", json_boolean(met));
		kvs_bench_row(&b, row);
	}
	return kvs_bench_finish(&b);
}
