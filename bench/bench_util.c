/* bench_util.c - see bench_util.h */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
