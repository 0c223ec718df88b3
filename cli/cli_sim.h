/*
 * cli/cli_sim.h - the engine flag group shared by replay, compare and sweep
 * (policy, vLLM scheduler limits, preemption, prefix caching, step-time
 * model, SLOs, sampling, progress), and the printing of results.
 *
 * Usage in a command:
 *
 *     kvs_cli_sim sim;  kvs_cli_sim_init(&sim);
 *     ... in the flag loop, after the deploy group:
 *         int r = kvs_cli_sim_arg(&it, &sim);   1 ours, 0 not ours, -1 bad
 *     ... then, after kvs_cli_deploy_finish(&dep, cmd):
 *         if (!kvs_cli_sim_finish(&sim, &dep.d, &trace_opts, cmd))
 *                 return sim.fail_exit;
 *     sim.cfg is then complete for sim.policies[0] (set cfg.policy for each
 *     policy), and the trace options carry --seed, the block size (to
 *     re-split hash ids) and max_model_len (to flag overlong requests).
 *
 * Dispatch the sim group before the trace group: both know --seed; the sim
 * group takes it and kvs_cli_sim_finish copies it into the trace options.
 */
#ifndef KVSIM_CLI_SIM_H
#define KVSIM_CLI_SIM_H

#include <signal.h>

#include <jansson.h>

#include "cli.h"
#include "kvsim/sim.h"

typedef struct kvs_cli_sim {
	kvs_sim_config cfg;             /* engine settings; deploy filled by finish */
	kvs_policy policies[KVS_POLICY_CAP];
	size_t npolicies;               /* 0 until --policy/--policies */
	const char *table_path;         /* --step-time-table */
	const char *profile_dir;        /* --step-time-profile */
	bool quiet;                     /* --quiet: no progress line */
	bool seed_set;
	const char *placement_flag;     /* "--best-fit" / "--placement" given, or NULL */
	bool step_linear_set;
	bool batched_tokens_set;        /* --max-num-batched-tokens given */
	bool seqs_set;                  /* --max-num-seqs given */
	unsigned slo_flags;             /* KVS_CLI_SLO_* set by --slo-ttft/--slo-tpot */
	unsigned goodput_flags;         /* KVS_CLI_SLO_* set by --goodput */
	int fail_exit;                  /* exit code when finish fails */
	/* progress line state */
	double progress_last;
	double progress_t0;             /* wall clock at the run's start */
	bool progress_tty;              /* \r line on a terminal, else plain lines */
	const char *progress_label;
	bool progress_shown;
} kvs_cli_sim;

/* the objectives, as bits of slo_flags / goodput_flags */
enum { KVS_CLI_SLO_TTFT = 1u << 0, KVS_CLI_SLO_TPOT = 1u << 1, KVS_CLI_SLO_E2E = 1u << 2 };

void kvs_cli_sim_init(kvs_cli_sim *c);
/* 1: the current flag was ours and consumed; 0: not ours; -1: ours, bad
 * value (message printed). */
int kvs_cli_sim_arg(kvs_args *it, kvs_cli_sim *c);
/* Complete cfg from the deployment, read the step-time table, apply the
 * engine's block size, max_model_len and seed to the trace options.  Prints
 * the error and returns false on failure (exit code in c->fail_exit). */
bool kvs_cli_sim_finish(kvs_cli_sim *c, const kvs_deploy *d,
			kvs_trace_opts *topts, const char *cmd);
void kvs_cli_sim_help(FILE *f, bool several_policies);
/* The end of replay's and compare's --help: --bench-json to Ctrl-C, then
 * kvs_cli_sim_usage_groups. */
void kvs_cli_sim_usage_tail(FILE *f, bool several_policies);
/* The engine, deployment and trace flags, a blank line between groups. */
void kvs_cli_sim_usage_groups(FILE *f, bool several_policies);

/* Set cfg.on_progress to a progress line on stderr (when stderr is a
 * terminal and --quiet is not given), labelled e.g. "replay paged". */
void kvs_cli_sim_progress_begin(kvs_cli_sim *c, const char *label);
void kvs_cli_sim_progress_end(kvs_cli_sim *c);

/* A streaming source over an open trace that also reports the share of
 * the file read (for progress). */
typedef struct kvs_cli_trace_source {
	kvs_trace *t;
	double file_bytes;              /* 0 when unknown (stdin) */
} kvs_cli_trace_source;

kvs_request_source kvs_cli_trace_source_init(kvs_cli_trace_source *ts,
					     kvs_trace *t, const char *path);

/* Printing.  The header names model, GPU, pool and trace; a result prints
 * as a column of figures; several results side by side with the ratios
 * paged / each.  Every report ends with the accounting lines. */
/* The header's "KV pool per GPU" line of one replica's pool (with limits:
 * its max_num_seqs and max_num_batched_tokens after it). */
void kvs_cli_sim_print_pool(FILE *f, const kvs_sim_config *cfg, const kvs_sim_stats *st,
			    const kvs_sim_config *limits);
/* The header's engine and trace lines alone (kvsim fleet prints its own
 * model and KV pool lines: a pool per GPU, and the fleet's total), and
 * the header's byte sizes ("19.19 GiB"). */
void kvs_cli_sim_print_header_engine(FILE *f, const kvs_sim_config *cfg,
				     const kvs_sim_stats *st, const char *trace_path,
				     kvs_trace_format format, bool limits_per_pool);
void kvs_cli_human_bytes(char *buf, size_t n, double b);
/* after: NULL, or for each result the trace's requests it did not take,
 * having ended at its horizon or been interrupted (kvs_cli_after_end). */
void kvs_cli_sim_print_results(FILE *f, kvs_sim_result *const *res, size_t n,
			       const uint64_t *after);
/* The requests of a trace of `requests` that a run did not take: 0 unless
 * it ended at its horizon or was interrupted (then the rest of the trace,
 * with the request it read past its end). */
uint64_t kvs_cli_after_end(const kvs_sim_result *r, uint64_t requests);
/* A warning on stderr when a given --sample-interval (given_s > 0) was
 * coarsened in any of the results (too many samples to keep). */
/* A trace that yielded no request: said on stderr, so that the empty
 * figures are not taken for a run's (sweep refuses one outright). */
void kvs_cli_warn_empty_trace(const char *cmd, const char *path, const kvs_trace_stats *ts);
void kvs_cli_warn_coarsened(const char *cmd, double given_s, kvs_sim_result *const *res,
			    size_t nres);
/* "after_horizon" or "after_interrupt" (0 .. the count) in the accounting
 * object of policy's JSON (doc's "policies" object), for a run that ended
 * either way. */
void kvs_cli_after_end_json(kvs_json *doc, const kvs_sim_result *r, uint64_t after);
/* The key that counts those requests ("after_interrupt" for a run
 * interrupted, else "after_horizon" for one with a horizon), NULL for a
 * run that takes its whole trace: the same key in every output. */
const char *kvs_cli_after_end_key(const kvs_sim_result *r);
void kvs_cli_sim_print_accounting(FILE *f, const kvs_sim_stats *st);

/* ---- around the runs (cli/cli_front.c) --------------------------------------- */

/* JSON output shared by replay, compare and sweep.  The document is dumped
 * once (JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12), as
 * kvs_sim_json_write); that one text is written to json_out (opened by
 * kvs_cli_out_open before the runs; NULL = none; the caller commits it)
 * and handed to kvs_report_write() for report_dir (NULL = none), so the
 * report and the JSON cannot disagree.  title names the report page
 * (NULL: the library's default); the report's progress line appears on
 * stderr when it is a terminal and quiet is false.  Returns an exit code;
 * messages are printed as "kvsim CMD: ...". */
int kvs_cli_json_output(const char *cmd, const kvs_json *doc, kvs_outfile *json_out,
			const char *report_dir, const char *title, bool quiet);

/* Output files named by flags (kvs_outfile): open before any simulation,
 * "kvsim CMD: FLAG: PATH: reason" and NULL when the path cannot be
 * written; close commits when ok (false, with the message, when a write
 * failed) and discards otherwise.  NULL closes as a no-op. */
kvs_outfile *kvs_cli_out_open(const char *cmd, const char *flag, const char *path);
bool kvs_cli_out_close(const char *cmd, const char *flag, kvs_outfile *o, bool ok);

/* True when path names an existing regular file (one that can be read
 * twice); false for "-", pipes, FIFOs and devices. */
bool kvs_cli_path_is_regular(const char *path);

/* Check before any simulation that --report DIR can be created: the
 * deepest existing part of the path must be a writable directory.  Prints
 * "kvsim CMD: --report: ..." and returns false otherwise. */
bool kvs_cli_report_dir_ok(const char *cmd, const char *dir);

/* Install the SIGINT/SIGTERM handlers of an interruptible run (where the
 * disposition is the default; before the outputs open, so that their own
 * cleanup leaves the signals to these): the flag returned holds the signal
 * number once one arrives; a second one ends the process (default action).
 * The run checks the flag, writes its outputs whole, marked "interrupted",
 * and exits 128 + the signal. */
const volatile sig_atomic_t *kvs_cli_interrupt_install(void);
/* SIGHUP ends the process at once, removing temporary files and a report's
 * staging directory (as a second Ctrl-C does). */
void kvs_cli_hangup_install(void);

/* The front end of replay, compare and fleet: one flag loop (TRACE,
 * --help, --json, --report, the output files the command takes, the
 * command's own flags, then the deployment, engine and trace groups), the
 * checks and output files opened before any run, the trace read into
 * memory or streamed, Ctrl-C, --json/--report and the all-or-nothing
 * commit.  Each step returns KVS_CLI_GO_ON or the command's exit code
 * (its message printed, what was opened closed):
 *
 *     kvs_cli_front fe;
 *     kvs_cli_front_init(&fe, it, 0);
 *     int rc = kvs_cli_front_parse(&fe, fleet_arg, &fo);
 *     ...usage checks of the command's own flags...
 *     rc = kvs_cli_front_finish(&fe);          deployment and engine
 *     ...checks that need the deployment...
 *     rc = kvs_cli_front_open(&fe, false);     --report, output files
 *     rc = kvs_cli_front_load(&fe, several_runs);
 *     st = kvs_cli_front_run(&fe, 1.0, run, ctx);   as often as needed
 *     ...table (kvs_cli_front_table), rc = kvs_cli_front_json(&fe, doc)...
 *     return kvs_cli_front_close(&fe, rc);
 */
#define KVS_CLI_GO_ON (-1)

/* The output files a command may take besides --json, in the order they
 * open and commit. */
typedef enum kvs_cli_out_id {
	KVS_CLI_OUT_TIMESERIES,         /* --timeseries FILE.csv */
	KVS_CLI_OUT_REQUESTS,           /* --requests FILE.csv */
	KVS_CLI_OUT_JSON,               /* --json [FILE]: every command */
	KVS_CLI_OUT_BENCH_JSON,         /* --bench-json FILE */
	KVS_CLI_OUT_SUMMARY_CSV,        /* --summary-csv FILE */
	KVS_CLI_OUT_COUNT_
} kvs_cli_out_id;

#define KVS_CLI_OUT_BIT(id) (1u << (id))
#define KVS_CLI_OUT_ALL (KVS_CLI_OUT_BIT(KVS_CLI_OUT_COUNT_) - 1)

typedef struct kvs_cli_front {
	const char *cmd;
	kvs_args *it;                   /* the command's arguments (main.c's) */
	kvs_cli_deploy dep;
	kvs_trace_opts topts;
	kvs_cli_sim sim;
	const char *path;               /* TRACE; after open, the sample when not given */
	const char *report;             /* --report DIR, or NULL */
	unsigned outputs;               /* KVS_CLI_OUT_BIT of the files it takes */
	const char *out_path[KVS_CLI_OUT_COUNT_];  /* as given, NULL = none */
	kvs_outfile *out[KVS_CLI_OUT_COUNT_];      /* open between open and close */
	const volatile sig_atomic_t *interrupt;   /* NULL: not interruptible */
	kvs_request_set *set;           /* the trace in memory; NULL: streamed */
	kvs_trace_stats tstats;         /* the trace as read by the last run */
	kvs_trace_format format;
	uint64_t trace_requests;        /* the trace's requests, as read by the last
	                                 * run and after it (kvs_cli_front_run) */
} kvs_cli_front;

/* A command's own flags, in the flag groups' convention: 1 taken, 0 not
 * ours, -1 bad (message printed). */
typedef int (*kvs_cli_front_arg_fn)(kvs_args *it, kvs_cli_front *fe, void *ctx);
/* One run over the trace's requests; it may end before the trace does (a
 * horizon, an interrupt). */
typedef kvs_status (*kvs_cli_front_run_fn)(void *ctx, kvs_request_source *src);

/* The defaults (model llama-3-8b) for the command whose arguments it
 * holds; outputs: KVS_CLI_OUT_BIT of the files it takes besides --json. */
void kvs_cli_front_init(kvs_cli_front *fe, kvs_args *it, unsigned outputs);
/* The flag loop; arg (may be NULL) takes the command's own flags, before
 * the deployment, engine and trace groups.  KVS_EXIT_OK after --help. */
int kvs_cli_front_parse(kvs_cli_front *fe, kvs_cli_front_arg_fn arg, void *ctx);
/* The deployment and the engine completed (kvs_cli_deploy_finish,
 * kvs_cli_sim_finish). */
int kvs_cli_front_finish(kvs_cli_front *fe);
/* The sample trace when none was given, --report checked, the Ctrl-C
 * handler installed (interruptible: sim.cfg.interrupt set) and every
 * output file opened, before any run. */
int kvs_cli_front_open(kvs_cli_front *fe, bool interruptible);
/* The trace read into memory when the command runs it more than once
 * (several_runs) or it cannot be read twice; else it is streamed by each
 * kvs_cli_front_run. */
int kvs_cli_front_load(kvs_cli_front *fe, bool several_runs);
/* run over the trace: the loaded requests at the time scale given, or the
 * file streamed (scale 1), its share read reported for the progress line;
 * tstats and format record the trace.  A run that ended before its trace
 * (a horizon, an interrupt) leaves the rest unread: it is read after the
 * run, so that trace_requests counts every request of the trace and
 * tstats covers every line (a file and a trace in memory are both
 * finite; a second signal ends the process meanwhile).  The status of run
 * (or of opening or reading the trace). */
kvs_status kvs_cli_front_run(kvs_cli_front *fe, double scale, kvs_cli_front_run_fn run,
			     void *ctx);
/* The signal that interrupted the run, 0 for none. */
int kvs_cli_front_interrupted(const kvs_cli_front *fe);
/* Does the table go to standard output (not replaced by --json -)? */
bool kvs_cli_front_table(const kvs_cli_front *fe);
/* Is a JSON document wanted (--json or --report)? */
bool kvs_cli_front_wants_json(const kvs_cli_front *fe);
/* An open output's stream, NULL when the flag was not given. */
FILE *kvs_cli_front_stream(const kvs_cli_front *fe, kvs_cli_out_id id);
/* doc (owned, freed; NULL: out of memory) to --json and --report, the
 * report titled "kvsim CMD: TRACE"; an exit code (kvs_cli_json_output). */
int kvs_cli_front_json(kvs_cli_front *fe, kvs_json *doc);
/* Every output committed when rc is KVS_EXIT_OK (KVS_EXIT_FAIL when one
 * cannot be), else discarded; the trace in memory freed.  Returns rc or
 * KVS_EXIT_FAIL. */
int kvs_cli_front_close(kvs_cli_front *fe, int rc);
/* A signal (sig) came before the first run, while the trace was read:
 * nothing to write; says so, closes fe (its outputs removed) and returns
 * the exit status, 128 + sig. */
int kvs_cli_front_unrun(kvs_cli_front *fe, int sig);

/* The whole of `kvsim replay` (several = false) and `kvsim compare`
 * (several = true) over the command's arguments: flags, runs, table,
 * --json, --report, --timeseries, --requests, --bench-json, --summary-csv. */
int kvs_cli_sim_command(kvs_args *it, bool several);

/* ---- results for other tools (cli/cli_bench.c) ---------------------------- */

/* --gpu-hour-price figures of one run (kvs_sim_cost_of, kvsim/sim.h). */
typedef kvs_sim_cost kvs_cli_cost;

/* false (and zeros) without a price */
bool kvs_cli_cost_of(const kvs_sim_result *r, kvs_cli_cost *out);
/* the cost rows under the replay/compare table; nothing without a price */
void kvs_cli_cost_print(FILE *f, kvs_sim_result *const *res, size_t n);
void kvs_cli_cost_print_one(FILE *f, const kvs_sim_result *r, int row);
/* the "cost" object of a policy, NULL without a price */
json_t *kvs_cli_cost_json(const kvs_sim_result *r);

typedef struct kvs_cli_bench_opts {
	const char *trace;       /* dataset_path */
	double request_rate;     /* --rate, 0: the trace's own arrivals */
	bool goodput;            /* SLOs given: request_goodput and goodput */
} kvs_cli_bench_opts;

/* One run in `vllm bench serve --save-result`'s schema (docs/REPORT-JSON.md);
 * after: the trace's requests it did not take (kvs_cli_after_end), under
 * kvs_cli_after_end_key's key when the run may have ended early. */
json_t *kvs_cli_bench_json(const kvs_sim_result *r, const kvs_cli_bench_opts *o,
			   uint64_t after);
/* The flat summary: a header and one row per policy; after[i] as for
 * kvs_cli_bench_json, in after_horizon / after_interrupt columns at the end
 * when some run had a horizon / was interrupted. */
void kvs_cli_summary_csv(FILE *f, kvs_sim_result *const *res, size_t n, bool goodput,
			 const uint64_t *after);
/* --goodput KEY:MS [KEY:MS ...] into cfg's SLOs; as the flag groups return. */
int kvs_cli_goodput_arg(kvs_args *it, kvs_sim_config *cfg, bool *set);

#endif /* KVSIM_CLI_SIM_H */
