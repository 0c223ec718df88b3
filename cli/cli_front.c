/*
 * cli_front.c - what the simulating commands share around their runs: the
 * output files named by flags (opened before any run, committed all or
 * nothing), --json and --report, Ctrl-C, and the front end of replay,
 * compare and fleet (kvs_cli_front: one flag loop, the checks made before
 * any run, the trace read into memory or streamed).  See cli_sim.h.
 */
#include "cli_sim.h"
#include "common/json.h"
#include "kvsim/report.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- output files ------------------------------------------------------------- */

/* An output named by a flag, opened before any simulation so that a bad
 * path fails first (kvs_outfile: "-" is standard output; a file is written
 * under a temporary name until kvs_cli_out_close).  The message names the
 * flag, the path and the reason; NULL on failure. */
kvs_outfile *kvs_cli_out_open(const char *cmd, const char *flag, const char *path)
{
	kvs_outfile *o;
	if (kvs_outfile_open(path, &o) != KVS_OK) {
		fprintf(stderr, "kvsim %s: %s: %s\n", cmd, flag, kvs_last_error());
		return NULL;
	}
	return o;
}

/* ok: commit (rename into place; false, with the message printed, when any
 * write failed); !ok: discard, so a failed run leaves nothing behind. */
bool kvs_cli_out_close(const char *cmd, const char *flag, kvs_outfile *o, bool ok)
{
	if (!o)
		return true;
	if (!ok) {
		kvs_outfile_discard(o);
		return true;
	}
	if (kvs_outfile_commit(o) != KVS_OK) {
		fprintf(stderr, "kvsim %s: %s: %s\n", cmd, flag, kvs_last_error());
		return false;
	}
	return true;
}

/* ---- --json and --report --------------------------------------------------- */

bool kvs_cli_path_is_regular(const char *path)
{
	struct stat sb;
	return strcmp(path, "-") != 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool kvs_cli_report_dir_ok(const char *cmd, const char *dir)
{
	char path[4096];
	size_t n = strlen(dir);
	if (n == 0) {
		fprintf(stderr, "kvsim %s: --report: empty directory name\n", cmd);
		return false;
	}
	if (n >= sizeof path) {
		fprintf(stderr, "kvsim %s: --report: %s: path too long\n", cmd, dir);
		return false;
	}
	memcpy(path, dir, n + 1);
	/* walk up to the deepest part of the path that exists */
	for (;;) {
		struct stat sb;
		if (stat(path, &sb) == 0) {
			if (!S_ISDIR(sb.st_mode)) {
				fprintf(stderr, "kvsim %s: --report: %s: %s is not a directory\n",
					cmd, dir, path);
				return false;
			}
			if (access(path, W_OK | X_OK) != 0) {
				fprintf(stderr, "kvsim %s: --report: %s: cannot write in %s: %s\n",
					cmd, dir, path, strerror(errno));
				return false;
			}
			/* an existing directory is replaced as a whole: it must
			 * be empty or a previous report, known before the runs */
			if (strcmp(path, dir) != 0 ||
			    kvs_report_dir_check(dir) == KVS_OK)
				return true;
			fprintf(stderr, "kvsim %s: --report: %s\n", cmd, kvs_last_error());
			return false;
		}
		if (errno != ENOENT && errno != ENOTDIR) {
			fprintf(stderr, "kvsim %s: --report: %s: %s: %s\n", cmd, dir, path,
				strerror(errno));
			return false;
		}
		/* drop the last component (and trailing slashes) */
		while (n > 1 && path[n - 1] == '/')
			path[--n] = '\0';
		while (n > 0 && path[n - 1] != '/')
			n--;
		if (n == 0) {
			strcpy(path, ".");
			n = 1;
		} else {
			while (n > 1 && path[n - 1] == '/')
				n--;
			path[n] = '\0';
		}
	}
}

typedef struct report_progress {
	const char *cmd;
	bool shown;
} report_progress;

static void on_report_progress(void *ctx, size_t done, size_t total, const char *what)
{
	report_progress *rp = ctx;
	fprintf(stderr, "\rkvsim %s: report [%zu/%zu] %-40.40s", rp->cmd, done, total, what);
	if (done == total)
		fprintf(stderr, "\r%*s\r", 78, "");
	fflush(stderr);
	rp->shown = done != total;
}

int kvs_cli_json_output(const char *cmd, const kvs_json *doc, kvs_outfile *json_out,
			const char *report_dir, const char *title, bool quiet)
{
	if (!json_out && !report_dir)
		return KVS_EXIT_OK;
	/* one text for both outputs */
	char *text = kvs_json_text(doc);
	if (!text) {
		fprintf(stderr, "kvsim %s: out of memory (JSON)\n", cmd);
		return KVS_EXIT_FAIL;
	}
	int rc = KVS_EXIT_OK;
	if (json_out) {
		FILE *f = kvs_outfile_stream(json_out);
		if (fputs(text, f) < 0 || fputc('\n', f) == EOF) {
			fprintf(stderr, "kvsim %s: --json: %s: write failed: %s\n", cmd,
				kvs_outfile_path(json_out), strerror(errno));
			rc = KVS_EXIT_FAIL;
		}
	}
	if (rc == KVS_EXIT_OK && report_dir) {
		kvs_report_opts o;
		kvs_report_opts_defaults(&o);
		o.title = title;
		report_progress rp = { cmd, false };
		if (!quiet && kvs_cli_stderr_is_tty()) {
			o.progress = on_report_progress;
			o.progress_ctx = &rp;
		}
		const char *texts[1] = { text };
		char label[32];
		snprintf(label, sizeof label, "kvsim %s", cmd);
		const char *labels[1] = { label };
		kvs_status st = kvs_report_write(texts, labels, 1, report_dir, &o);
		if (rp.shown)
			fprintf(stderr, "\r%*s\r", 78, "");
		if (st != KVS_OK) {
			/* the message names the run by its label: said once */
			const char *msg = kvs_last_error();
			size_t ll = strlen(label);
			if (strncmp(msg, label, ll) == 0 && strncmp(msg + ll, ": ", 2) == 0)
				msg += ll + 2;
			fprintf(stderr, "kvsim %s: --report: %s\n", cmd, msg);
			rc = KVS_EXIT_FAIL;
		} else if (!quiet) {
			size_t dl = strlen(report_dir);
			while (dl > 1 && report_dir[dl - 1] == '/')
				dl--;
			fprintf(stderr, "kvsim %s: report written to %.*s/index.html\n", cmd,
				(int)dl, report_dir);
		}
	}
	free(text);
	return rc;
}

/* ---- lines the trace dropped ----------------------------------------------------- */

void kvs_cli_trace_skip_note(const char *cmd, const kvs_trace_stats *st, const char *first)
{
	uint64_t bad = st->skipped[KVS_SKIP_BAD_LINE], failed = st->skipped[KVS_SKIP_FAILED];
	if (bad)
		fprintf(stderr, "kvsim %s: skipped %llu malformed line(s)%s%s\n", cmd,
			(unsigned long long)bad, first && *first ? "; first: " : "",
			first && *first ? first : "");
	if (failed)
		fprintf(stderr, "kvsim %s: skipped %llu BurstGPT failure row(s) (0 response "
			"tokens; --keep-failed keeps them)\n", cmd, (unsigned long long)failed);
	/* requests kept but made shorter: as silent as a skip otherwise */
	if (st->truncated)
		fprintf(stderr, "kvsim %s: --overlong truncate cut %llu request(s) longer "
			"than max_model_len to fit (the head of the prompt kept)\n", cmd,
			(unsigned long long)st->truncated);
}

void kvs_cli_set_skip_note(const char *cmd, const char *path, const kvs_trace_opts *o,
			   const kvs_trace_stats *st)
{
	/* a trace in memory keeps the counts, not the first malformed line:
	 * a regular file is read again up to that line (once, and only when
	 * one was skipped); standard input or a pipe cannot be */
	kvs_trace *t = NULL;
	if (st->skipped[KVS_SKIP_BAD_LINE] && kvs_cli_path_is_regular(path) &&
	    kvs_trace_open(path, o, &t) == KVS_OK) {
		kvs_request r;
		while (!*kvs_trace_first_skip(t) && kvs_trace_next(t, &r) == KVS_OK)
			;
	}
	kvs_cli_trace_skip_note(cmd, st, t ? kvs_trace_first_skip(t) : NULL);
	kvs_trace_close(t);
}

/* ---- Ctrl-C ---------------------------------------------------------------------- */

/* SIGINT/SIGTERM during a replay, compare, fleet or sweep: the run stops
 * at its next event, the outputs are written whole and marked
 * "interrupted", exit 128 + signal.  A second signal ends the process at
 * once, removing the outputs' temporary files first (the outputs' own
 * handlers are not installed over this one), unless it comes within
 * REPEAT_NS of the first: that is the same stop delivered twice, as
 * coreutils' timeout sends it to the process and then to its process
 * group (a kill of the group from a job scheduler does the same), and
 * taking it for a second would lose the outputs the first is writing. */
#define REPEAT_NS 250000000ll   /* a quarter second */

static volatile sig_atomic_t sim_interrupt;
static struct timespec first_at;   /* written before on_repeat is installed */

static void on_second(int sig)
{
	kvs_outfile_unlink_all();
	kvs_report_unlink_staging();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* clock_gettime is async-signal-safe (POSIX.1-2008) */
static void on_repeat(int sig)
{
	struct timespec now;
	if (clock_gettime(CLOCK_MONOTONIC, &now) == 0 &&
	    (now.tv_sec - first_at.tv_sec) * 1000000000ll + (now.tv_nsec - first_at.tv_nsec) <
		    REPEAT_NS)
		return;
	on_second(sig);
}

static void on_interrupt(int sig)
{
	sim_interrupt = sig;
	if (clock_gettime(CLOCK_MONOTONIC, &first_at) != 0)
		first_at.tv_sec = first_at.tv_nsec = 0;
	signal(sig, on_repeat);
}

const volatile sig_atomic_t *kvs_cli_interrupt_install(void)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	for (size_t i = 0; i < KVS_ARRAY_LEN(sigs); i++) {
		struct sigaction old;
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_handler = on_interrupt;
			/* reads of the trace from a pipe go on (the flag stops
			 * the run at its next event) */
			sa.sa_flags = SA_RESTART;
			sigemptyset(&sa.sa_mask);
			sigaction(sigs[i], &sa, NULL);
		}
	}
	return &sim_interrupt;
}

int kvs_cli_front_unrun(kvs_cli_front *fe, int sig)
{
	fprintf(stderr, "kvsim %s: interrupted before the first run; no output written\n",
		fe->cmd);
	kvs_cli_front_close(fe, 128 + sig);
	return 128 + sig;
}

void kvs_cli_hangup_install(void)
{
	/* the user is gone, nobody to wait for: ended at once, as a second
	 * Ctrl-C ends it (a handler or an ignore set by the caller stays) */
	struct sigaction old;
	if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		signal(SIGHUP, on_second);
}

/* ---- the front end of replay, compare and fleet ----------------------------------- */

/* The flag of each output file, in the order they open and commit. */
static const char *const out_flag[KVS_CLI_OUT_COUNT_] = {
	[KVS_CLI_OUT_TIMESERIES] = "--timeseries",
	[KVS_CLI_OUT_REQUESTS] = "--requests",
	[KVS_CLI_OUT_JSON] = "--json",
	[KVS_CLI_OUT_BENCH_JSON] = "--bench-json",
	[KVS_CLI_OUT_SUMMARY_CSV] = "--summary-csv",
};

void kvs_cli_front_init(kvs_cli_front *fe, kvs_args *it, unsigned outputs)
{
	memset(fe, 0, sizeof *fe);
	fe->it = it;
	fe->cmd = it->cmd;
	fe->outputs = outputs | KVS_CLI_OUT_BIT(KVS_CLI_OUT_JSON);
	fe->format = KVS_TRACE_AUTO;
	kvs_cli_deploy_init(&fe->dep, "llama-3-8b", NULL);
	kvs_trace_opts_defaults(&fe->topts);
	kvs_cli_sim_init(&fe->sim);
}

/* An output flag (once, not empty: kvs_args_output_path), in the flag
 * groups' convention. */
static int output_arg(kvs_args *it, const char *name, const char *what, const char **slot)
{
	if (!kvs_args_is(it, name))
		return 0;
	return kvs_args_output_path(it, what, slot) ? 1 : -1;
}

int kvs_cli_front_parse(kvs_cli_front *fe, kvs_cli_front_arg_fn arg, void *ctx)
{
	kvs_args *it = fe->it;
	const char *pos;
	while (kvs_args_next(it, &pos)) {
		if (!it->flag) {
			if (!kvs_args_one_positional(it, pos, &fe->path, "TRACE"))
				return KVS_EXIT_USAGE;
			continue;
		}
		if (kvs_args_help(it))
			return KVS_EXIT_OK;
		/* as sweep and trace: "--json WORD" is a file when WORD ends in
		 * .json or comes after the trace, else WORD may be the trace */
		int r = kvs_args_output(it, "--json", &fe->out_path[KVS_CLI_OUT_JSON],
					fe->path != NULL);
		if (r == 0)
			r = output_arg(it, "--report", "directory", &fe->report);
		for (int i = 0; r == 0 && i < KVS_CLI_OUT_COUNT_; i++)
			if (i != KVS_CLI_OUT_JSON && (fe->outputs & KVS_CLI_OUT_BIT(i)))
				r = output_arg(it, out_flag[i], "file", &fe->out_path[i]);
		if (r == 0 && arg)
			r = arg(it, fe, ctx);
		if (r == 0)
			r = kvs_cli_deploy_arg(it, &fe->dep);
		if (r == 0)
			r = kvs_cli_sim_arg(it, &fe->sim);
		if (r == 0)
			r = kvs_cli_trace_arg(it, &fe->topts);
		if (!kvs_args_taken(it, r))
			return KVS_EXIT_USAGE;
	}
	return it->error ? KVS_EXIT_USAGE : KVS_CLI_GO_ON;
}

int kvs_cli_front_finish(kvs_cli_front *fe)
{
	if (!kvs_cli_deploy_finish(&fe->dep, fe->cmd))
		return fe->dep.fail_exit;
	if (!kvs_cli_sim_finish(&fe->sim, &fe->dep.d, &fe->topts, fe->cmd))
		return fe->sim.fail_exit;
	return KVS_CLI_GO_ON;
}

int kvs_cli_front_open(kvs_cli_front *fe, bool interruptible)
{
	if (!fe->path)
		fe->path = kvs_trace_default_path();
	/* no output may replace the trace, the step-time table or another
	 * output */
	kvs_cli_path paths[KVS_CLI_OUT_COUNT_ + 2] = {
		{ "the trace", fe->path, true },
		{ "--step-time-table", fe->sim.table_path, true },
	};
	size_t n = 2;
	for (int i = 0; i < KVS_CLI_OUT_COUNT_; i++)
		paths[n++] = (kvs_cli_path){ out_flag[i], fe->out_path[i], false };
	if (!kvs_cli_paths_check(fe->cmd, paths, n))
		return KVS_EXIT_USAGE;
	/* a directory that cannot be written fails now, not after the runs */
	if (fe->report && !kvs_cli_report_dir_ok(fe->cmd, fe->report))
		return KVS_EXIT_FAIL;
	/* before the outputs open: their own signal cleanup then leaves
	 * SIGINT and SIGTERM to this handler, and they are committed whole */
	if (interruptible)
		fe->sim.cfg.interrupt = fe->interrupt = kvs_cli_interrupt_install();
	/* every output file opens now, so that a bad path fails before the
	 * runs; each is renamed into place only when the whole command
	 * succeeds */
	for (int i = 0; i < KVS_CLI_OUT_COUNT_; i++)
		if (fe->out_path[i] &&
		    !(fe->out[i] = kvs_cli_out_open(fe->cmd, out_flag[i], fe->out_path[i])))
			return kvs_cli_front_close(fe, KVS_EXIT_FAIL);
	return KVS_CLI_GO_ON;
}

int kvs_cli_front_load(kvs_cli_front *fe, bool several_runs)
{
	/* a trace read more than once, or that cannot be read twice
	 * (standard input, a pipe, a FIFO), is read once into memory; a
	 * regular file read once is streamed, so memory stays proportional
	 * to the requests in flight */
	if (!several_runs && kvs_cli_path_is_regular(fe->path))
		return KVS_CLI_GO_ON;
	kvs_status st = kvs_request_set_load(fe->path, &fe->topts, &fe->set);
	if (st != KVS_OK) {
		kvs_cli_report_error(fe->cmd, st);
		return kvs_cli_front_close(fe, st == KVS_ERR_INVALID ? KVS_EXIT_USAGE
								     : KVS_EXIT_FAIL);
	}
	fe->tstats = *kvs_request_set_trace_stats(fe->set);
	fe->format = kvs_request_set_format(fe->set);
	kvs_cli_set_skip_note(fe->cmd, fe->path, &fe->topts, &fe->tstats);
	return KVS_CLI_GO_ON;
}

/* A source that counts the requests it hands out. */
typedef struct counted_source {
	const kvs_request_source *in;
	uint64_t n;
} counted_source;

static kvs_status counted_next(void *ctx, kvs_request *req)
{
	counted_source *c = ctx;
	kvs_status st = c->in->next(c->in->ctx, req);
	c->n += st == KVS_OK;
	return st;
}

static double counted_progress(void *ctx)
{
	const counted_source *c = ctx;
	return c->in->progress ? c->in->progress(c->in->ctx) : -1.0;
}

/* run over src, then the rest of src read and every request counted */
static kvs_status run_counted(kvs_cli_front *fe, kvs_cli_front_run_fn run, void *ctx,
			      const kvs_request_source *src)
{
	counted_source cs = { src, 0 };
	kvs_request_source counted = { counted_next, &cs, counted_progress };
	kvs_status st = run(ctx, &counted);
	kvs_request q;
	while (st == KVS_OK && (st = counted_next(&cs, &q)) == KVS_OK)
		;
	if (st == KVS_END)
		st = KVS_OK;
	fe->trace_requests = cs.n;
	return st;
}

kvs_status kvs_cli_front_run(kvs_cli_front *fe, double scale, kvs_cli_front_run_fn run,
			     void *ctx)
{
	kvs_request_source src;
	if (fe->set) {
		kvs_request_cursor cur;
		kvs_request_cursor_init(&cur, fe->set, scale);
		src = kvs_request_cursor_source(&cur);
		return run_counted(fe, run, ctx, &src);
	}
	kvs_trace *t;
	kvs_status st = kvs_trace_open(fe->path, &fe->topts, &t);
	if (st != KVS_OK)
		return st;
	kvs_cli_trace_source ts;
	src = kvs_cli_trace_source_init(&ts, t, fe->path);
	st = run_counted(fe, run, ctx, &src);
	fe->tstats = *kvs_trace_get_stats(t);
	fe->format = kvs_trace_get_format(t);
	if (st == KVS_OK)
		kvs_cli_trace_skip_note(fe->cmd, &fe->tstats, kvs_trace_first_skip(t));
	kvs_trace_close(t);
	return st;
}

int kvs_cli_front_interrupted(const kvs_cli_front *fe)
{
	return fe->interrupt ? (int)*fe->interrupt : 0;
}

bool kvs_cli_front_table(const kvs_cli_front *fe)
{
	const char *json = fe->out_path[KVS_CLI_OUT_JSON];
	return !(json && strcmp(json, "-") == 0);
}

bool kvs_cli_front_wants_json(const kvs_cli_front *fe)
{
	return fe->out_path[KVS_CLI_OUT_JSON] || fe->report;
}

FILE *kvs_cli_front_stream(const kvs_cli_front *fe, kvs_cli_out_id id)
{
	return fe->out[id] ? kvs_outfile_stream(fe->out[id]) : NULL;
}

int kvs_cli_front_json(kvs_cli_front *fe, kvs_json *doc)
{
	if (!doc) {
		fprintf(stderr, "kvsim %s: out of memory\n", fe->cmd);
		return KVS_EXIT_FAIL;
	}
	/* "kvsim replay: conv.csv" for the report page */
	char title[256];
	const char *base = strrchr(fe->path, '/');
	snprintf(title, sizeof title, "kvsim %s: %s", fe->cmd,
		 base && base[1] ? base + 1 : fe->path);
	int rc = kvs_cli_json_output(fe->cmd, doc, fe->out[KVS_CLI_OUT_JSON], fe->report,
				     title, fe->sim.quiet);
	kvs_json_free(doc);
	return rc;
}

int kvs_cli_front_close(kvs_cli_front *fe, int rc)
{
	/* all or nothing: after one failure the rest are discarded */
	bool ok = rc == KVS_EXIT_OK;
	for (int i = 0; i < KVS_CLI_OUT_COUNT_; i++) {
		ok = kvs_cli_out_close(fe->cmd, out_flag[i], fe->out[i], ok) && ok;
		fe->out[i] = NULL;
	}
	kvs_request_set_destroy(fe->set);
	fe->set = NULL;
	return !ok && rc == KVS_EXIT_OK ? KVS_EXIT_FAIL : rc;
}
