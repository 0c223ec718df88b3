/*
 * cmd_replay.c - `kvsim replay [TRACE]`: one allocation policy replayed
 * through the continuous-batching simulator (the work is in cli_sim.c and
 * the library's sim/).
 */
#include "cli_sim.h"
#include "commands.h"

void kvs_cmd_replay_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim replay [TRACE] [options]\n"
		"\n"
		"Replay a request trace through one serving replica (a model on --tp GPUs)\n"
		"with iteration-level batching under one KV allocation policy, and report\n"
		"where the KV memory went (token states, reservation, internal and external\n"
		"fragmentation, cached-idle, free; time-weighted and at peak), how many\n"
		"sequences ran at once, how long requests waited for admission, latency\n"
		"percentiles (queue delay, TTFT, TPOT, end-to-end), throughput, goodput,\n"
		"preemptions and prefix-cache hits.  Every report ends with the accounting\n"
		"arrived = completed + rejected + unfinished.\n"
		"\n"
		"TRACE is a trace in any supported format ('-' reads standard input);\n"
		"without it, the bundled sample (%s)\n"
		"on llama-3-8b and an a100-40gb.\n"
		"\n"
		"output:\n"
		"  --json [FILE]                every figure as JSON (docs/REPORT-JSON.md)\n"
		"  (--json, --json - : standard output instead of the table; --json FILE.json,\n"
		"  --json=FILE: the file, the table stays)\n"
		"  --report DIR                 also render the run as DIR/index.html with\n"
		"                               SVG and PNG figures (as 'kvsim report'; the\n"
		"                               same JSON as --json), DIR created if missing\n"
		"  --timeseries FILE.csv        memory parts, running and waiting over time\n"
		"  --requests FILE.csv          one row per request: arrival, admission, first\n"
		"                               token, finish, preemptions, outcome and reason\n"
		"                               and vllm bench serve's ttft_s, tpot_s,\n"
		"                               itl_mean_s, e2e_s\n"
		"", kvs_trace_default_path());
	kvs_cli_sim_usage_tail(f, false);
}

int kvs_cmd_replay(kvs_args *it)
{
	return kvs_cli_sim_command(it, false);
}
