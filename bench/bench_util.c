/* bench_util.c - see bench_util.h */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kvs_config.h"
#include "kvsim/common.h"

uint64_t kvs_bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool kvs_bench_init(kvs_bench *b, const char *name, int argc, char **argv,
		    int *exit_code)
{
	memset(b, 0, sizeof *b);
	b->name = name;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			b->json = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			printf("usage: bench_%s [--json] [options]\n", name);
			*exit_code = 0;
			return false;
		}
	}
	b->root = json_object();
	b->rows = json_array();
	json_object_set_new(b->root, "benchmark", json_string(name));
	json_object_set_new(b->root, "host_allocator", json_string(kvs_mem_allocator()));
	return true;
}

void kvs_bench_figure(kvs_bench *b, const char *key, double value,
		      const char *unit)
{
	json_object_set_new(b->root, key, json_real(value));
	if (!b->json)
		printf("%-40s %14.3f %s\n", key, value, unit ? unit : "");
}

void kvs_bench_figure_str(kvs_bench *b, const char *key, const char *value)
{
	json_object_set_new(b->root, key, json_string(value));
	if (!b->json)
		printf("%-40s %14s\n", key, value);
}

void kvs_bench_row(kvs_bench *b, json_t *row)
{
	json_array_append_new(b->rows, row);
}

int kvs_bench_finish(kvs_bench *b)
{
	json_object_set_new(b->root, "peak_rss_bytes",
			    json_integer((json_int_t)kvs_mem_peak_rss()));
	if (json_array_size(b->rows) > 0)
		json_object_set(b->root, "rows", b->rows);
	if (b->json) {
		char *s = json_dumps(b->root, JSON_INDENT(2) | JSON_SORT_KEYS);
		if (s) {
			puts(s);
			free(s);
		}
	} else {
		printf("%-40s %14.1f MiB\n", "peak_rss",
		       (double)kvs_mem_peak_rss() / (1024.0 * 1024.0));
	}
	json_decref(b->rows);
	json_decref(b->root);
	return 0;
}

bool kvs_bench_run_isolated(void (*fn)(void *ctx, void *out), void *ctx, void *out,
			    size_t size)
{
	int fd[2];
	if (pipe(fd) != 0) {
		fn(ctx, out);
		return true;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		/* the child's own copy of *out: the parent reads it back */
		fn(ctx, out);
		ssize_t w = write(fd[1], out, size);
		_exit(w == (ssize_t)size ? 0 : 1);
	}
	close(fd[1]);
	memset(out, 0, size);
	bool ok = pid >= 0 && read(fd[0], out, size) == (ssize_t)size;
	if (!ok)
		memset(out, 0, size);
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return ok;
}

const char *kvs_bench_shared_trace(char *out, size_t n, const char *rel)
{
	const char *root = getenv("KVS_SHARED_TRACES");
	if (root)
		snprintf(out, n, "%s/%s", root, rel);
	else
		snprintf(out, n, "%s/../shared/traces/%s", KVS_SOURCE_ROOT, rel);
	return out;
}

void kvs_bench_deploy(const char *name, const char *model, const char *gpu,
		      uint64_t gpu_mem, kvs_deploy *d)
{
	kvs_model m;
	kvs_gpu g;
	if (kvs_model_load(model, &m) != KVS_OK || kvs_gpu_preset(gpu, &g) != KVS_OK) {
		fprintf(stderr, "bench_%s: presets: %s\n", name, kvs_last_error());
		exit(1);
	}
	if (gpu_mem) {
		g.mem_bytes = gpu_mem;
		g.smi_mem_bytes = 0;
	}
	kvs_deploy_defaults(d, &m, &g);
}

void kvs_bench_sim_config(const char *name, const char *model, const char *gpu,
			  uint64_t gpu_mem, kvs_sim_config *c)
{
	kvs_deploy d;
	kvs_bench_deploy(name, model, gpu, gpu_mem, &d);
	kvs_sim_config_defaults(c, &d);
}

void kvs_bench_conv_workload(kvs_gen_opts *go, uint64_t requests, double rate)
{
	kvs_gen_opts_defaults(go);
	go->seed = 42;
	go->requests = requests;
	go->rate = rate;
	go->prompt = (kvs_gen_dist){ KVS_DIST_LOGNORMAL, 1000, 0.9, NULL };
	go->output = (kvs_gen_dist){ KVS_DIST_LOGNORMAL, 220, 0.9, NULL };
	go->max_tokens = 4096;
	go->hashes = 0;
}

static kvs_status gen_next(void *ctx, kvs_request *req)
{
	return kvs_gen_next(ctx, req);
}

kvs_request_source kvs_bench_gen_source(kvs_gen *g)
{
	kvs_request_source src = { gen_next, g, NULL };
	return src;
}

kvs_bench_run kvs_bench_run_of(const kvs_sim_stats *s)
{
	return (kvs_bench_run){
		.arrived = s->arrived, .completed = s->completed, .rejected = s->rejected,
		.unfinished = s->unfinished, .steps = s->steps, .spans = s->spans,
		.events = s->events, .sim_time_s = s->sim_time_s,
		.concurrency_mean = s->concurrency_mean,
	};
}
