/*
 * bench_sweep.c - block-size sweep speed: 9 block sizes x 5 policies over
 * the Azure 2023 conversation trace (../shared/traces/azure-2023/conv.csv;
 * skipped when absent), on 2 worker threads and serially, with contiguous
 * policies deduplicated (the default: 13 replays) and without (45 replays).
 * Prints wall time, simulations, simulations/s and the serial time beside
 * the parallel one; the target is under 10 s for the 45-combination sweep.
 * The machine is shared: each figure is the best of `--repeat N` runs (3),
 * with the CPU time of all threads in that run beside it (2 jobs scale when
 * their CPU time stays that of 1 job and the cores are free).  The machine's
 * own speed also drifts between the series, so the 45-combination speedup
 * is given a second time from `--pairs N` pairs of runs (9; 1 job, then
 * 2), as the median of the pairs' ratios: each pair sees the same machine.
 * Target: 1.8x on 2 cores.
 *
 * Beside each pair, the machine's own ceiling for 2 jobs at that moment:
 * two serial sweeps at once, each on its own thread, sharing nothing but
 * the read-only trace (2 x the serial time over their wall time).  No
 * way of splitting the 45 points over 2 threads can beat it; when it reads
 * well below 2, the two cores were not both free (on a shared virtual
 * machine two independent processes slow each other too), and the
 * sweep's figure is judged against it as well as against 1.8.
 */
#include "kvs_config.h"
#include "bench_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kvsim/kvsim.h"

/* CPU time of the whole process (every worker thread). */
static double proc_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double run_cpu_s;   /* CPU time of the last run_once */

static double run_once(const kvs_sweep_config *c, const kvs_request_set *set,
		       uint64_t *sims)
{
	double c0 = proc_cpu_s();
	uint64_t t0 = kvs_bench_now_ns();
	kvs_sweep_result *R = NULL;
	kvs_status st = kvs_sweep_run(c, set, &R);
	double s = (double)(kvs_bench_now_ns() - t0) / 1e9;
	run_cpu_s = proc_cpu_s() - c0;
	if (st != KVS_OK) {
		fprintf(stderr, "bench_sweep: %s\n", kvs_last_error());
		exit(1);
	}
	*sims = kvs_sweep_result_simulations(R);
	kvs_sweep_result_destroy(R);
	return s;
}

typedef struct serial_job {
	const kvs_sweep_config *c;
	const kvs_request_set *set;
	kvs_status st;
	char err[512];      /* the thread's message (errors are per thread) */
} serial_job;

static void *serial_thread(void *arg)
{
	serial_job *j = arg;
	kvs_sweep_result *R = NULL;
	j->st = kvs_sweep_run(j->c, j->set, &R);
	if (j->st != KVS_OK)
		snprintf(j->err, sizeof j->err, "%s", kvs_last_error());
	kvs_sweep_result_destroy(R);
	return NULL;
}

/* Two serial sweeps (c->jobs must be 1) at once on two threads: wall s. */
static double run_two_serial(const kvs_sweep_config *c, const kvs_request_set *set)
{
	serial_job j[2] = { { c, set, KVS_OK, "" }, { c, set, KVS_OK, "" } };
	pthread_t t[2];
	uint64_t t0 = kvs_bench_now_ns();
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, serial_thread, &j[i]) != 0) {
			fprintf(stderr, "bench_sweep: cannot start a thread\n");
			exit(1);
		}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	double s = (double)(kvs_bench_now_ns() - t0) / 1e9;
	for (int i = 0; i < 2; i++)
		if (j[i].st != KVS_OK) {
			fprintf(stderr, "bench_sweep: %s\n", j[i].err);
			exit(1);
		}
	return s;
}

static double median_of(double *v, int n)
{
	for (int i = 1; i < n; i++)   /* insertion sort, a few values */
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double best_of(int n, const kvs_sweep_config *c, const kvs_request_set *set,
		      uint64_t *sims, double *worst, double *cpu)
{
	double best = 1e300;
	*worst = 0;
	for (int i = 0; i < n; i++) {
		double s = run_once(c, set, sims);
		if (s < best) {
			best = s;
			*cpu = run_cpu_s;
		}
		if (s > *worst)
			*worst = s;
	}
	return best;
}

int main(int argc, char **argv)
{
	kvs_bench b;
	int rc = 0, repeat = 3, pairs = 9;
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--repeat") == 0)
			repeat = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
		if (strcmp(argv[i], "--pairs") == 0)
			pairs = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
	}
	if (!kvs_bench_init(&b, "sweep", argc, argv, &rc))
		return rc;
	char path[4096];
	kvs_bench_shared_trace(path, sizeof path, "azure-2023/conv.csv");
	if (access(path, R_OK) != 0) {
		printf("bench_sweep: %s not found: skipped\n", path);
		kvs_bench_finish(&b);
		return 0;
	}
	kvs_sim_config sc;
	kvs_bench_sim_config("sweep", "llama-2-7b", "a100-80gb", 0, &sc);
	kvs_trace_opts o;
	kvs_trace_opts_defaults(&o);
	o.max_model_len = 4096;
	uint64_t t0 = kvs_bench_now_ns();
	kvs_request_set *set = NULL;
	if (kvs_request_set_load(path, &o, &set) != KVS_OK) {
		fprintf(stderr, "bench_sweep: %s\n", kvs_last_error());
		return 1;
	}
	double load_s = (double)(kvs_bench_now_ns() - t0) / 1e9;
	kvs_sweep_config c;
	kvs_sweep_config_defaults(&c, &sc);   /* 9 block sizes x 5 policies */

	kvs_bench_figure(&b, "requests", (double)kvs_request_set_count(set), "");
	kvs_bench_figure(&b, "combinations", (double)(c.nblock_sizes * c.npolicies), "");
	kvs_bench_figure(&b, "trace_load_s", load_s, "s (read once)");
	kvs_bench_figure(&b, "online_cpus", (double)sysconf(_SC_NPROCESSORS_ONLN), "");

	static const struct { const char *name; bool dedupe; unsigned jobs; } runs[] = {
		{ "all45_jobs2", false, 2 },
		{ "all45_jobs1", false, 1 },
		{ "dedupe_jobs2", true, 2 },
		{ "dedupe_jobs1", true, 1 },
	};
	double wall[4];
	for (size_t i = 0; i < 4; i++) {
		c.dedupe_contiguous = runs[i].dedupe;
		c.jobs = runs[i].jobs;
		uint64_t sims = 0;
		double worst, cpu = 0;
		wall[i] = best_of(repeat, &c, set, &sims, &worst, &cpu);
		char key[96];
		snprintf(key, sizeof key, "%s_wall_s", runs[i].name);
		kvs_bench_figure(&b, key, wall[i], "s (best)");
		snprintf(key, sizeof key, "%s_wall_worst_s", runs[i].name);
		kvs_bench_figure(&b, key, worst, "s (worst: noise of the shared machine)");
		snprintf(key, sizeof key, "%s_cpu_s", runs[i].name);
		kvs_bench_figure(&b, key, cpu, "s CPU, all threads, in the best run "
				 "(wall = CPU / jobs when the cores are free)");
		snprintf(key, sizeof key, "%s_simulations", runs[i].name);
		kvs_bench_figure(&b, key, (double)sims, "");
		snprintf(key, sizeof key, "%s_simulations_per_s", runs[i].name);
		kvs_bench_figure(&b, key, (double)sims / wall[i], "sims/s");
		json_t *row = json_object();
		json_object_set_new(row, "run", json_string(runs[i].name));
		json_object_set_new(row, "jobs", json_integer(runs[i].jobs));
		json_object_set_new(row, "dedupe_contiguous", json_boolean(runs[i].dedupe));
		json_object_set_new(row, "wall_s", json_real(wall[i]));
		json_object_set_new(row, "cpu_s", json_real(cpu));
		json_object_set_new(row, "simulations", json_integer((json_int_t)sims));
		kvs_bench_row(&b, row);
	}
	kvs_bench_figure(&b, "speedup_all45_jobs2", wall[1] / wall[0], "x (serial / 2 jobs)");
	/* pairs, alternating: the median of their ratios; beside each, the
	 * machine's ceiling for 2 jobs (two serial sweeps at once) */
	c.dedupe_contiguous = false;
	double ratio[64], ceiling[64], eff[64];
	int npairs = pairs < 64 ? pairs : 64;
	for (int i = 0; i < npairs; i++) {
		uint64_t sims;
		c.jobs = 1;
		double one = run_once(&c, set, &sims);
		c.jobs = 2;
		ratio[i] = one / run_once(&c, set, &sims);
		c.jobs = 1;
		ceiling[i] = 2.0 * one / run_two_serial(&c, set);
		eff[i] = ratio[i] / ceiling[i];
		if (!b.json)
			printf("pair %-2d  serial %.3f s  speedup %.3fx  ceiling %.3fx\n",
			       i + 1, one, ratio[i], ceiling[i]);
		json_t *row = json_object();
		json_object_set_new(row, "run", json_string("pair"));
		json_object_set_new(row, "pair", json_integer(i + 1));
		json_object_set_new(row, "serial_wall_s", json_real(one));
		json_object_set_new(row, "speedup", json_real(ratio[i]));
		json_object_set_new(row, "ceiling", json_real(ceiling[i]));
		kvs_bench_row(&b, row);
	}
	double median = median_of(ratio, npairs);
	double ceil_median = median_of(ceiling, npairs);
	double eff_median = median_of(eff, npairs);
	kvs_bench_figure(&b, "speedup_all45_jobs2_paired", median,
			 "x (median of serial / 2 jobs over runs in pairs; target >= 1.8 on 2 cores)");
	kvs_bench_figure(&b, "ceiling_all45_2jobs_paired", ceil_median,
			 "x (median over the same pairs: two serial sweeps at once, "
			 "the machine's ceiling for 2 jobs; 2 = both cores free)");
	kvs_bench_figure(&b, "speedup_of_ceiling_paired", eff_median,
			 "(median over the pairs of speedup / ceiling)");
	kvs_bench_figure(&b, "speedup_pairs", (double)npairs, "pairs");
	kvs_bench_figure(&b, "target_s", 10.0, "s (45 combinations, 2 jobs)");
	kvs_request_set_destroy(set);
	return kvs_bench_finish(&b);
}
