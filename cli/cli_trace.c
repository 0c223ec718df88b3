/*
 * cli_trace.c - the trace-shaping flag group shared by every command that
 * reads a trace (trace, replay, compare, sweep).  Parsing only: the reader
 * applies the options (kvs_trace_open).
 */
#include "cli.h"

#include <string.h>

int kvs_cli_trace_arg(kvs_args *it, kvs_trace_opts *o)
{
	if (kvs_args_is(it, "--format")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (kvs_trace_format_parse(v, &o->format) != KVS_OK) {
			kvs_args_usage_error(it, "--format: %s", kvs_last_error());
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--limit"))
		return kvs_args_u64(it, 1, UINT64_MAX, &o->limit) ? 1 : -1;
	if (kvs_args_is(it, "--start"))
		return kvs_args_double(it, 0, 1e12, &o->window_start_s) ? 1 : -1;
	if (kvs_args_is(it, "--end"))
		return kvs_args_double(it, 1e-9, 1e12, &o->window_end_s) ? 1 : -1;
	if (kvs_args_is(it, "--time-scale")) {
		if (o->rate > 0) {
			kvs_args_usage_error(it, "--time-scale and --rate both set the arrival "
					     "times; give one");
			return -1;
		}
		return kvs_args_double(it, 1e-9, 1e9, &o->time_scale) ? 1 : -1;
	}
	if (kvs_args_is(it, "--rate")) {
		/* given, not "!= 1": --time-scale 1 is a choice too */
		if (kvs_args_given_before(it, "--time-scale")) {
			kvs_args_usage_error(it, "--time-scale and --rate both set the arrival "
					     "times; give one");
			return -1;
		}
		return kvs_args_double(it, 1e-9, 1e9, &o->rate) ? 1 : -1;
	}
	if (kvs_args_is(it, "--rate-mode")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (strcmp(v, "keep") == 0 || strcmp(v, "keep-shape") == 0) {
			o->rate_mode = KVS_RATE_KEEP_SHAPE;
		} else if (strcmp(v, "poisson") == 0) {
			o->rate_mode = KVS_RATE_POISSON;
		} else {
			kvs_args_usage_error(it, "--rate-mode: expected keep or poisson, got '%s'", v);
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--seed"))
		return kvs_args_u64(it, 0, UINT64_MAX, &o->seed) ? 1 : -1;
	if (kvs_args_is(it, "--overlong")) {
		const char *v = kvs_args_value(it);
		if (!v)
			return -1;
		if (strcmp(v, "reject") == 0) {
			o->overlong = KVS_OVERLONG_REJECT;
		} else if (strcmp(v, "truncate") == 0) {
			o->overlong = KVS_OVERLONG_TRUNCATE;
		} else {
			kvs_args_usage_error(it, "--overlong: expected reject or truncate, got '%s'", v);
			return -1;
		}
		return 1;
	}
	if (kvs_args_is(it, "--skip-bad-lines") || kvs_args_is(it, "--keep-failed")) {
		if (!kvs_args_no_value(it))
			return -1;
		if (kvs_args_is(it, "--skip-bad-lines"))
			o->skip_bad_lines = true;
		else
			o->skip_failed = false;
		return 1;
	}
	if (kvs_args_is(it, "--sort-window"))
		return kvs_args_u32(it, 0, 1u << 24, &o->sort_window) ? 1 : -1;
	return 0;
}

void kvs_cli_trace_help(FILE *f)
{
	/* the format names, from the reader's table, wrapped at 79 columns */
	int col = fprintf(f, "trace options:\n  --format F          %s",
			  "auto (default: from the header / first line)") - 15;
	for (int k = 1; k < KVS_TRACE_FORMAT_COUNT_; k++) {
		const char *name = kvs_trace_format_name((kvs_trace_format)k);
		bool last = k + 1 == KVS_TRACE_FORMAT_COUNT_;
		if (col + 2 + (int)strlen(name) + !last > 79) {
			col = fprintf(f, ",\n%22s%s", "", name) - 2;
		} else {
			col += fprintf(f, ", %s", name);
		}
	}
	fprintf(f,
		"\n"
		"  --limit N           stop after N requests\n"
		"  --start S           keep arrivals at or after S seconds (trace clock)\n"
		"  --end S             keep arrivals before S seconds (trace clock)\n"
		"  --time-scale X      multiply arrival times by X (0.5 = twice the rate)\n"
		"  --rate R            re-time arrivals to a mean of R requests/s\n"
		"  --rate-mode M       keep (default: scale the gaps, keeping burstiness;\n"
		"                      two passes: a pipe or FIFO is copied to a temporary\n"
		"                      file first) or poisson (exponential gaps)\n"
		"  --seed N            seed of the Poisson re-timing (default 0)\n"
		"  --overlong M        requests over --max-model-len: reject (default: flag\n"
		"                      and count them) or truncate (cut the prompt's tail)\n"
		"  --skip-bad-lines    skip and count malformed lines instead of stopping\n"
		"                      (their number and the first one noted on stderr)\n"
		"  --keep-failed       keep BurstGPT failure rows (0 response tokens; by\n"
		"                      default left out, their number noted on stderr)\n"
		"  --sort-window N     reorder arrivals out of order by up to N requests\n"
		"                      (default 0: an unsorted trace is an error)\n");
}
