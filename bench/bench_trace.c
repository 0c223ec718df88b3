/*
 * bench_trace.c - reader throughput: lines/s, requests/s and MB/s on a
 * generated file of each format (one million lines by default, written to
 * a temporary folder and removed afterwards).  One core, the default
 * options (no sort window, no re-timing).  Target: at least one million
 * requests per second from CSV (Azure).
 *
 *   bench_trace [--json] [--lines N] [--keep]
 */
#include "bench_util.h"
#include "kvsim/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TARGET_CSV_RPS 1e6

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint32_t rnd(uint32_t lo, uint32_t hi)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (uint32_t)(rng_state % (uint64_t)(hi - lo + 1));
}

static void write_ids(FILE *f, uint64_t i, uint32_t n, const char *sep)
{
	for (uint32_t k = 0; k < n; k++)
		fprintf(f, k ? "%s%llu" : "%.0s%llu", sep, (unsigned long long)(i * 64 + k));
}

/* Write n request lines of format `fmt`; returns false on I/O error. */
static bool generate(const char *path, const char *fmt, uint64_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	static char buf[1 << 16];
	setvbuf(f, buf, _IOFBF, sizeof buf);
	rng_state = 0x2545f4914f6cdd1dull;
	if (strcmp(fmt, "azure") == 0)
		fputs("TIMESTAMP,ContextTokens,GeneratedTokens\n", f);
	else if (strcmp(fmt, "burstgpt") == 0)
		fputs("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n", f);
	else if (strcmp(fmt, "splitwise") == 0)
		fputs("arrived_at,num_prefill_tokens,num_decode_tokens\n", f);
	else if (strcmp(fmt, "native-csv") == 0)
		fputs("arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority,"
		      "hash_block_tokens,hash_ids\n", f);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t p = rnd(16, 4096), o = rnd(1, 1024);
		double t = (double)i * 0.05;
		if (strcmp(fmt, "azure") == 0) {
			uint64_t ticks = i * 500000ull + rnd(0, 9999);
			uint64_t s = ticks / 10000000ull;
			fprintf(f, "2023-11-16 %02llu:%02llu:%02llu.%07llu,%u,%u\n",
				(unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60),
				(unsigned long long)(s % 60),
				(unsigned long long)(ticks % 10000000ull), p, o);
		} else if (strcmp(fmt, "burstgpt") == 0) {
			fprintf(f, "%.3f,ChatGPT,%u,%u,%u,Conversation log\n", t, p, o, p + o);
		} else if (strcmp(fmt, "splitwise") == 0) {
			fprintf(f, "%.6f,%u,%u\n", t, p, o);
		} else if (strcmp(fmt, "native-csv") == 0) {
			fprintf(f, "%.6f,%u,%u,%llu,1,1,0,16,", t, p, o, (unsigned long long)i + 1);
			write_ids(f, i, p / 16 < 8 ? p / 16 : 8, " ");
			fputc('\n', f);
		} else if (strcmp(fmt, "mooncake") == 0) {
			fprintf(f, "{\"timestamp\": %llu, \"input_length\": %u, \"output_length\": %u, "
				"\"hash_ids\": [", (unsigned long long)(i * 50), p, o);
			write_ids(f, i, (p + 511) / 512, ", ");
			fputs("]}\n", f);
		} else { /* native-jsonl */
			fprintf(f, "{\"arrival_s\": %.6f, \"prompt_tokens\": %u, \"output_tokens\": %u, "
				"\"hash_block_tokens\": 16, \"hash_ids\": [", t, p, o);
			write_ids(f, i, p / 16 < 8 ? p / 16 : 8, ", ");
			fputs("]}\n", f);
		}
	}
	bool ok = !ferror(f);
	return fclose(f) == 0 && ok;
}

int main(int argc, char **argv)
{
	kvs_bench b;
	int rc = 0;
	if (!kvs_bench_init(&b, "trace", argc, argv, &rc))
		return rc;
	uint64_t lines = 1000000;
	bool keep = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc)
			lines = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
		else if (strcmp(argv[i], "--json") != 0) {
			fprintf(stderr, "bench_trace: unknown option '%s' "
				"(--json, --lines N, --keep)\n", argv[i]);
			return 2;
		}
	}
	if (lines == 0)
		lines = 1;
	const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[512];
	snprintf(dir, sizeof dir, "%s/kvsim-bench-trace-XXXXXX", tmpdir);
	if (!mkdtemp(dir)) {
		perror("bench_trace: mkdtemp");
		return 1;
	}
	static const char *const formats[] = { "azure", "burstgpt", "splitwise", "native-csv",
					       "mooncake", "native-jsonl" };
	double azure_rps = 0;
	if (!b.json)
		printf("%-14s %10s %10s %14s %14s %10s\n", "format", "lines", "MB", "lines/s",
		       "requests/s", "MB/s");
	for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
		char path[600];
		snprintf(path, sizeof path, "%s/bench-%s.%s", dir, formats[k],
			 strstr(formats[k], "json") || strcmp(formats[k], "mooncake") == 0 ? "jsonl"
											    : "csv");
		if (!generate(path, formats[k], lines)) {
			fprintf(stderr, "bench_trace: cannot write %s\n", path);
			return 1;
		}
		struct stat sb;
		stat(path, &sb);
		kvs_trace *t;
		uint64_t t0 = kvs_bench_now_ns();
		kvs_status st = kvs_trace_open(path, NULL, &t);
		if (st != KVS_OK) {
			fprintf(stderr, "bench_trace: %s\n", kvs_last_error());
			return 1;
		}
		kvs_request r;
		uint64_t n = 0, tokens = 0;
		while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
			n++;
			tokens += r.prompt_tokens + r.num_hash_ids;
		}
		uint64_t t1 = kvs_bench_now_ns();
		kvs_bench_keep(tokens);
		if (st != KVS_END) {
			fprintf(stderr, "bench_trace: %s\n", kvs_last_error());
			return 1;
		}
		const kvs_trace_stats *s = kvs_trace_get_stats(t);
		double sec = (double)(t1 - t0) * 1e-9;
		double lps = (double)s->lines_read / sec, rps = (double)n / sec;
		double mbs = (double)s->bytes_read / 1e6 / sec;
		if (!b.json)
			printf("%-14s %10llu %10.1f %14.0f %14.0f %10.1f\n", formats[k],
			       (unsigned long long)s->lines_read, (double)sb.st_size / 1e6, lps, rps, mbs);
		json_t *row = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f}", "format", formats[k],
					"lines", (json_int_t)s->lines_read, "bytes",
					(json_int_t)sb.st_size, "seconds", sec, "lines_per_s", lps,
					"requests_per_s", rps, "mb_per_s", mbs);
		kvs_bench_row(&b, row);
		kvs_trace_close(t);
		if (k == 0)
			azure_rps = rps;
		if (!keep)
			unlink(path);
	}
	if (!keep)
		rmdir(dir);
	else if (!b.json)
		printf("files kept in %s\n", dir);
	if (!b.json)
		printf("\n");
	kvs_bench_figure(&b, "csv_requests_per_s", azure_rps, "req/s (Azure CSV)");
	kvs_bench_figure(&b, "csv_target_requests_per_s", TARGET_CSV_RPS, "req/s");
	kvs_bench_figure_str(&b, "csv_target", azure_rps >= TARGET_CSV_RPS ? "met" : "MISSED");
	return kvs_bench_finish(&b);
}
