/*
 * kvsim/report.h - render run reports (the JSON of `kvsim replay`, `compare`
 * and `sweep`, see docs/REPORT-JSON.md) into a directory holding index.html
 * and its figures, each as an SVG and a PNG file drawn with cairo.
 *
 * The input is JSON text, so callers that just produced a report (the
 * `--report DIR` flag of replay/compare/sweep) pass the text they wrote and
 * `kvsim report` passes the text of files.  Several runs go into one report,
 * one section each, with a cross-run overview when there is more than one.
 *
 * Figures of a replay/compare run: KV memory over time (stacked parts, one
 * panel per policy), running and waiting requests over time, and the CDFs of
 * queueing delay, TTFT and TPOT.  Figures of a sweep: internal
 * fragmentation, throughput and p99 latencies against block size, and the
 * capacity-search result per policy.  Optional keys (timeseries, cdf,
 * capacity, ...) only drop the figure or table cell that needs them; a
 * missing required key or malformed JSON fails with a message naming the
 * input, the key path, or the line and column.
 *
 * Cost: linear in the size of the JSON; long timeseries are reduced to at
 * most a few thousand points per curve before drawing, so figure files stay
 * small whatever the run length.
 */
#ifndef KVSIM_REPORT_H
#define KVSIM_REPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "kvsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Progress callback: called before each step (parsing an input, drawing a
 * figure, writing the page) with the number of steps done and the total.
 * `what` names the step ("memory.svg/png").  The library never prints. */
typedef void (*kvs_report_progress_fn)(void *ctx, size_t done, size_t total,
					const char *what);

typedef struct kvs_report_opts {
	unsigned png_width;   /* PNG size in pixels; SVG uses the same units */
	unsigned png_height;  /* (default 1600 x 900, slide size) */
	const char *title;    /* page title; NULL = "kvsim report" */
	kvs_report_progress_fn progress;  /* NULL = none */
	void *progress_ctx;
	/* false (default): the last report to finish drawing releases cairo's
	 * process-wide font caches, so leak checkers see a clean exit.  Set it
	 * when the program uses cairo elsewhere at the same time. */
	bool keep_cairo_caches;
	/* false (default): index.html is one self-contained file with
	 * interactive charts, linking the SVG/PNG figures written beside it;
	 * true: it also shows each figure as an image (which then must stay
	 * beside index.html), for print and papers. */
	bool static_figures;
	/* NULL (default), or a flag a signal handler sets: polled before each
	 * step, and once it is non-zero the report stops, leaves outdir as it
	 * was and returns KVS_END. */
	const volatile sig_atomic_t *interrupt;
	/* NULL (default), or called once per finding in an input that the
	 * page flags but draws (an accounting that does not balance), with a
	 * message naming the input and the policy; the library never prints */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
} kvs_report_opts;

/* Defaults: 1600 x 900, no title, no progress. */
void kvs_report_opts_defaults(kvs_report_opts *o);

/*
 * Render n run reports given as JSON texts into outdir, which is replaced
 * as a whole: the report is drawn into a staging directory beside it
 * (".NAME.kvsim-XXXXXX") and swapped in when complete, so a reader sees the
 * previous report or the new one, never a mix, and a failed or interrupted
 * call leaves outdir as it was.  outdir is created (and its parents) when
 * missing; one that exists must be empty or hold a previous report (an
 * index.html written by kvsim, SVG and PNG files), else the call fails
 * before drawing, naming the entry that is not a report's.  A symbolic link
 * to a directory has the directory replaced and stays a link; the
 * directory keeps its permission bits.  labels[i] names run i in
 * messages and in the page (e.g. its file name); labels may be NULL, then
 * runs are called "run 1", "run 2", ...  opts may be NULL for defaults.
 *
 * With one run the figures are named memory.svg, memory.png, ...; with
 * several, run1-memory.svg, run2-memory.svg, ...  Returns KVS_ERR_PARSE for
 * malformed JSON or missing/mistyped keys (message: "LABEL: line L, column
 * C: ..." or "LABEL: policies.paged.accounting.arrived: missing"),
 * KVS_ERR_IO when outdir or a file cannot be written or outdir holds
 * something else than a report, KVS_ERR_UNSUPPORTED when kvsim was built
 * without cairo, KVS_ERR_INVALID for n == 0 or NULL arguments, KVS_END
 * when opts->interrupt stopped it.  Nothing is written unless every input
 * parses.
 */
kvs_status kvs_report_write(const char *const *json_texts,
			    const char *const *labels, size_t n,
			    const char *outdir, const kvs_report_opts *opts);

/* The same for JSON files; each run is labelled by its path. */
kvs_status kvs_report_write_files(const char *const *paths, size_t n,
				  const char *outdir,
				  const kvs_report_opts *opts);

/* Whether kvs_report_write may replace outdir, without writing anything:
 * KVS_OK when it is missing, empty or a previous report; KVS_ERR_IO naming
 * it and the first entry that is not a report's, or when it is not a
 * directory.  For a program that renders a report after long work, to
 * fail first.  O(entries in outdir). */
kvs_status kvs_report_dir_check(const char *outdir);

/* Remove the staging directories of the reports this process is drawing
 * (async-signal-safe: for a program's own handler of a second Ctrl-C,
 * beside kvs_outfile_unlink_all, before the signal ends the process).  A
 * staging directory of a process that died without it is removed by the
 * next report into the same directory. */
void kvs_report_unlink_staging(void);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_REPORT_H */
