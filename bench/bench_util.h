/*
 * bench_util.h - shared benchmark plumbing: a monotonic clock, a figures
 * table that prints as aligned text or, with --json, as one JSON object.
 */
#ifndef KVSIM_BENCH_UTIL_H
#define KVSIM_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kvsim/model.h"
#include "kvsim/sim.h"

/* Monotonic time in nanoseconds. */
uint64_t kvs_bench_now_ns(void);

/* Keeps the compiler from optimising a value away. */
#define kvs_bench_keep(x) __asm__ volatile("" : : "g"(x) : "memory")

typedef struct kvs_bench {
	const char *name;   /* benchmark name, e.g. "alloc" */
	bool json;          /* --json given */
	json_t *root;       /* figures collected for --json */
	json_t *rows;       /* array of row objects */
} kvs_bench;

/* Parse the common flags (--json, --help); returns false if the benchmark
 * should exit (help printed or bad flag; *exit_code set). Unknown flags
 * starting with "--" are left for the caller when `extra` is true. */
bool kvs_bench_init(kvs_bench *b, const char *name, int argc, char **argv,
		    int *exit_code);

/* Record a top-level figure (also printed in table mode as "key: value"). */
void kvs_bench_figure(kvs_bench *b, const char *key, double value,
		      const char *unit);
void kvs_bench_figure_str(kvs_bench *b, const char *key, const char *value);

/* Record a row: a JSON object (stolen reference) appended to "rows". */
void kvs_bench_row(kvs_bench *b, json_t *row);

/* Run fn(ctx, out) in a forked child, so that the peak RSS it reads is its
 * own, and copy the size bytes it wrote to *out back through a pipe (when
 * no pipe can be made, fn runs in this process).  False, with *out zeroed,
 * when the child failed. */
bool kvs_bench_run_isolated(void (*fn)(void *ctx, void *out), void *ctx, void *out,
			    size_t size);

/* The path of a public trace under the shared folder, rel relative to it
 * (e.g. "azure-2023/conv.csv"): $KVS_SHARED_TRACES, else ../shared/traces
 * beside the source tree.  Returns out; the caller checks it exists. */
const char *kvs_bench_shared_trace(char *out, size_t n, const char *rel);

/* *d = kvs_deploy_defaults of the model and GPU presets named, the GPU's
 * memory set to gpu_mem bytes when gpu_mem > 0.  A preset that does not
 * load ends the benchmark: "bench_NAME: presets: <error>", exit 1. */
void kvs_bench_deploy(const char *name, const char *model, const char *gpu,
		      uint64_t gpu_mem, kvs_deploy *d);

/* *c = kvs_sim_config_defaults over kvs_bench_deploy's deployment. */
void kvs_bench_sim_config(const char *name, const char *model, const char *gpu,
			  uint64_t gpu_mem, kvs_sim_config *c);

/* The generated workload of bench_sim and bench_fleet: requests with
 * Azure-conversation-like lengths (log-normal prompts around 1,000 tokens
 * and outputs around 220, at most 4,096), no prefix hashes, seed 42, at
 * rate requests/s. */
void kvs_bench_conv_workload(kvs_gen_opts *go, uint64_t requests, double rate);

/* A request source over a generator (streamed, never held in memory). */
kvs_request_source kvs_bench_gen_source(kvs_gen *g);

/* What the simulator benchmarks report of one run: a plain struct, so that
 * a child of kvs_bench_run_isolated can send it back whole. */
typedef struct kvs_bench_run {
	uint64_t arrived, completed, rejected, unfinished;
	uint64_t steps, spans, events;
	double sim_time_s;          /* simulated */
	double concurrency_mean;
} kvs_bench_run;

/* The figures of one run, from its statistics. */
kvs_bench_run kvs_bench_run_of(const kvs_sim_stats *s);

/* Print the JSON object (json mode) and free everything. */
int kvs_bench_finish(kvs_bench *b);

#endif
