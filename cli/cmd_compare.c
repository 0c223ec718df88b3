/*
 * cmd_compare.c - `kvsim compare [TRACE]`: the same trace replayed under
 * several allocation policies, side by side, with the ratios paged / each.
 */
#include "cli_sim.h"
#include "commands.h"

void kvs_cmd_compare_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim compare [TRACE] [options]\n"
		"\n"
		"Replay one trace under several KV allocation policies (paged blocks against\n"
		"max / pow2 / oracle contiguous reservation and vAttention-style pages) on\n"
		"the same replica, and print them side by side with the ratios paged / each\n"
		"for concurrency, throughput, waste (reserved + fragmented memory) and p99\n"
		"queueing delay.\n"
		"\n"
		"TRACE is a trace in any supported format ('-' reads standard input once);\n"
		"without it, the bundled sample (%s)\n"
		"on llama-3-8b and an a100-40gb.\n"
		"\n"
		"output:\n"
		"  --json [FILE]                every figure of every policy as JSON\n"
		"                               (docs/REPORT-JSON.md)\n"
		"  (--json, --json - : standard output instead of the table; --json FILE.json,\n"
		"  --json=FILE: the file, the table stays)\n"
		"  --report DIR                 also render the run as DIR/index.html with\n"
		"                               SVG and PNG figures (as 'kvsim report'; the\n"
		"                               same JSON as --json), DIR created if missing\n"
		"  --timeseries FILE.csv        memory parts, running, waiting over time (policy column)\n"
		"  --requests FILE.csv          one row per request and policy\n"
		"                               and vllm bench serve's ttft_s, tpot_s,\n"
		"                               itl_mean_s, e2e_s\n"
		"", kvs_trace_default_path());
	kvs_cli_sim_usage_tail(f, true);
}

int kvs_cmd_compare(kvs_args *it)
{
	return kvs_cli_sim_command(it, true);
}
