/*
 * cmd_report.c - `kvsim report RUN.json [RUN.json ...] -o DIR`: render the
 * JSON of replay / compare / fleet / sweep into DIR/index.html with SVG and
 * PNG figures (the library call kvs_report_write_files does the work).
 */
#include "kvs_config.h"
#include "commands.h"
#include "cli_sim.h"

#include <signal.h>
#include <string.h>

void kvs_cmd_report_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim report RUN.json [RUN.json ...] -o DIR [OPTIONS]\n"
		"\n"
		"Render the JSON written by 'kvsim replay --json', 'kvsim compare --json',\n"
		"'kvsim fleet --json' or 'kvsim sweep --json' into DIR/index.html: one\n"
		"self-contained file (data and chart library inline, opens offline) with a\n"
		"summary that states the answer, tables and interactive charts (hover for\n"
		"values, drag to zoom time axes, click a legend entry to hide a policy): KV\n"
		"memory over time, running and waiting requests, CDFs of queueing delay, TTFT\n"
		"and TPOT; for a sweep, capacity, fragmentation, latency and throughput\n"
		"against block size; for a fleet, its replicas, GPUs and router, the\n"
		"--find-min-replicas answer, and a row and charts per replica.  Each figure is\n"
		"also written beside it as SVG and PNG.  Several runs go into one page; '-'\n"
		"reads one run from standard input (kvsim replay --json - |\n"
		"kvsim report - -o DIR).\n"
		"\n"
		"options:\n"
		"  -o, --output DIR   output directory (created if missing; required)\n"
		"  --title TEXT       page title (default \"kvsim report\")\n"
		"  --width N          figure width in pixels (default 1600)\n"
		"  --height N         figure height in pixels (default 900)\n"
		"  --static           also show the PNG figures in the page (for print; they\n"
		"                     must then stay beside index.html)\n"
		"  --quiet            no progress line on stderr\n"
		"  -h, --help         show this help\n"
		"\n"
		"DIR is replaced as a whole: the report is drawn beside it and swapped in\n"
		"when complete, so DIR holds the previous report or the new one, never a\n"
		"mix.  DIR must therefore be new, empty or a previous report: a directory\n"
		"holding anything else is refused before anything is drawn.\n"
		"\n"
		"A progress line is shown on stderr when it is a terminal.  Ctrl-C\n"
		"(SIGINT) or SIGTERM stops the report and leaves DIR as it was; a second\n"
		"one, a quarter second or more later, ends it at once, removing what it\n"
		"had drawn.  Exit status: 0 written, 1 bad input or write failure, 2\n"
		"usage error, 130 (143) interrupted.\n");
}

struct progress_state {
	bool shown;
};

static void show_progress(void *ctx, size_t done, size_t total, const char *what)
{
	struct progress_state *ps = ctx;
	fprintf(stderr, "\rkvsim report: [%zu/%zu] %-48.48s", done, total, what);
	if (done == total)
		fputc('\n', stderr);
	fflush(stderr);
	ps->shown = done != total;
}

/* A finding the page flags but draws: on stderr too, past the progress
 * line when one is shown. */
static void show_warning(void *ctx, const char *msg)
{
	struct progress_state *ps = ctx;
	if (ps->shown) {
		fputc('\n', stderr);
		ps->shown = false;
	}
	fprintf(stderr, "kvsim report: warning: %s\n", msg);
}

int kvs_cmd_report(kvs_args *it)
{
	const char *pos;
	const char *outdir = NULL;
	bool quiet = false;
	kvs_report_opts o;
	kvs_report_opts_defaults(&o);
	const char **inputs = kvs_calloc((size_t)it->argc, sizeof *inputs);
	size_t n = 0;
	if (!inputs) {
		fprintf(stderr, "kvsim report: out of memory\n");
		return KVS_EXIT_FAIL;
	}
	while (!it->error && kvs_args_next(it, &pos)) {
		if (!it->flag) {
			inputs[n++] = pos;
		} else if (kvs_args_help(it)) {
			kvs_free(inputs);
			return KVS_EXIT_OK;
		} else if (kvs_args_is(it, "-o") || kvs_args_is(it, "--output")) {
			kvs_args_output_path(it, "directory", &outdir);
		} else if (kvs_args_is(it, "--title")) {
			o.title = kvs_args_value(it);
		} else if (kvs_args_is(it, "--width")) {
			kvs_args_u32(it, 320, 8192, &o.png_width);
		} else if (kvs_args_is(it, "--height")) {
			kvs_args_u32(it, 180, 8192, &o.png_height);
		} else if (kvs_args_is(it, "--static")) {
			o.static_figures = kvs_args_no_value(it);
		} else if (kvs_args_is(it, "--quiet") || kvs_args_is(it, "-q")) {
			quiet = kvs_args_no_value(it);
		} else {
			kvs_args_unknown(it);
		}
	}
	if (!it->error && n == 0)
		kvs_args_usage_error(it, "no input: give one or more RUN.json files");
	if (!it->error && !outdir)
		kvs_args_usage_error(it, "no output directory: give -o DIR");
	if (it->error) {
		kvs_free(inputs);
		return KVS_EXIT_USAGE;
	}

	struct progress_state ps = { false };
	if (!quiet && kvs_cli_stderr_is_tty()) {
		o.progress = show_progress;
		o.progress_ctx = &ps;
	}
	/* Ctrl-C: the first signal stops the report at its next step (the
	 * library then removes what it drew and leaves DIR as it was); a
	 * second (not the first delivered twice) ends the process at once,
	 * removing the staged files from the handler, and so does SIGHUP.  Installed before any output
	 * opens, so that its own handler leaves the signals to these. */
	const volatile sig_atomic_t *report_interrupt = kvs_cli_interrupt_install();
	kvs_cli_hangup_install();
	o.interrupt = report_interrupt;
	o.warn = show_warning;
	o.warn_ctx = &ps;
	kvs_status st = kvs_report_write_files(inputs, n, outdir, &o);
	kvs_free(inputs);
	if (ps.shown)
		fputc('\n', stderr);
	int sig = *report_interrupt;
	if (st == KVS_END && sig) {
		fprintf(stderr, "kvsim report: interrupted: %s left as it was\n", outdir);
		return 128 + sig;
	}
	if (st != KVS_OK) {
		kvs_cli_report_error("report", st);
		return KVS_EXIT_FAIL;
	}
	printf("wrote %s/index.html\n", outdir);
	if (sig) {
		/* too late to stop: the new report was already in place, whole */
		fprintf(stderr, "kvsim report: interrupted after the report was written\n");
		return 128 + sig;
	}
	return KVS_EXIT_OK;
}
