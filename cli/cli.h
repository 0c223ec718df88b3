/*
 * cli/cli.h - plumbing shared by the kvsim subcommands: a small argument
 * iterator (--name value, --name=value, boolean flags), number parsing with
 * field names in errors, and the flag groups several commands share.
 *
 * Each subcommand is `int kvs_cmd_NAME(int argc, char **argv)` in
 * cli/cmd_NAME.c; argv[0] is the subcommand name.  Exit codes: 0 success,
 * 1 runtime failure, 2 usage error (unknown flag, bad value).
 */
#ifndef KVSIM_CLI_H
#define KVSIM_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "kvsim/kvsim.h"

#define KVS_EXIT_OK 0
#define KVS_EXIT_FAIL 1
#define KVS_EXIT_USAGE 2

typedef struct kvs_args {
	int argc;
	char **argv;
	int i;                  /* next argv index */
	const char *cmd;        /* subcommand name, for messages */
	/* current flag, set by kvs_args_next */
	int at;                 /* argv index of the current flag */
	const char *flag;       /* "--model" (without "=value") */
	char flagbuf[128];
	const char *inline_val; /* value after '=' or NULL */
	bool error;             /* a usage error was reported */
	void (*help)(FILE *);   /* the command's --help; also for "did you mean" */
} kvs_args;

/* help prints the command's --help (for kvs_args_help and the "did you
 * mean" of an unknown flag); NULL for none. */
void kvs_args_init(kvs_args *it, const char *cmd, int argc, char **argv,
		   void (*help)(FILE *));

/* Advance: returns true with it->flag set for a flag ("--x" or "-x"),
 * true with it->flag == NULL and *positional set for a positional argument,
 * false at the end. */
bool kvs_args_next(kvs_args *it, const char **positional);

/* The output grammar every command shares, for --json and --csv:
 *   --json, --json -              standard output (replacing the table)
 *   --json FILE, --json=FILE      FILE (the table stays on standard output)
 * "--json WORD" takes WORD as the file when it is "-", ends in the flag's
 * extension (.json for --json, .csv for --csv, any case; not an existing
 * non-empty .csv for --csv while any_word is false), or any_word is set
 * (a command without positional arguments, or whose positional is given,
 * or whose --json always took a file); else WORD is left for the command
 * (a trace) and the output goes to standard output.  *path must be NULL
 * on entry: a second --json is refused rather than replacing the first.
 * 1 taken with *path set, 0 another flag, -1 bad (message printed). */
int kvs_args_output(kvs_args *it, const char *name, const char **path,
		    bool any_word);

/* Do a and b name the same file?  "-" only matches "-"; the same device
 * and inode when either exists (through symbolic links and hard links);
 * else the same directory (resolved) and name. */
bool kvs_cli_same_file(const char *a, const char *b);

/* A path a command reads or writes, for kvs_cli_paths_check. */
typedef struct kvs_cli_path {
	const char *flag;       /* "--json", or how the input is named: "the trace" */
	const char *path;       /* NULL: not given */
	bool input;             /* read by the run (else written) */
} kvs_cli_path;

/* Before anything is opened: no output may name an input or another
 * output (kvs_cli_same_file), or one file would replace the other.
 * Devices (/dev/null) and standard input against standard output are
 * exempt.  false with "kvsim CMD: ..." naming both flags printed: a
 * usage error. */
bool kvs_cli_paths_check(const char *cmd, const kvs_cli_path *p, size_t n);

/* Is the current flag `name` ("--model")? */
bool kvs_args_is(const kvs_args *it, const char *name);

/* Was the flag `name` ("--rate", two dashes) given before the current one,
 * as "--rate V" or "--rate=V"?  For flags whose default is also a value
 * one can give ("--time-scale 1"), where the value cannot tell.  Exact:
 * no value is ever taken from a word starting with "--". */
bool kvs_args_given_before(const kvs_args *it, const char *name);

/* Value of the current flag (inline or next argv); NULL and a usage error
 * message when missing. */
const char *kvs_args_value(kvs_args *it);

/* Typed values for the current flag; false (and a message naming the flag)
 * when missing, non-numeric, out of range, zero/negative where not allowed. */
bool kvs_args_u64(kvs_args *it, uint64_t min, uint64_t max, uint64_t *out);
bool kvs_args_u32(kvs_args *it, uint32_t min, uint32_t max, uint32_t *out);
bool kvs_args_double(kvs_args *it, double min, double max, double *out);
/* The current flag's value read as a number into *out: the value's text, or
 * NULL with "expected a number" (or the missing-value message) printed. */
const char *kvs_args_number(kvs_args *it, double *out);
bool kvs_args_bytes(kvs_args *it, uint64_t *out);   /* "80GB", "79.2GiB" */
/* A token count as vLLM reads one: 8192, 8k (8000), 8K (8192), 1.5k,
 * 1M (2^20), 1m (10^6). */
bool kvs_args_tokens(kvs_args *it, uint64_t min, uint64_t max, uint64_t *out);
bool kvs_parse_tokens(const char *s, uint64_t *out);

/* A boolean flag: false, with a usage error, when it came as "--flag=value". */
bool kvs_args_no_value(kvs_args *it);

/* Is the current flag --help or -h?  Then the command's help printer (given
 * to kvs_args_init) has printed the help on standard output. */
bool kvs_args_help(const kvs_args *it);

/* A string-valued flag, in the flag groups' convention: 1 when the current
 * flag is `name` and *out holds its value, 0 when it is another flag, -1
 * when the value is missing (message printed). */
int kvs_args_str(kvs_args *it, const char *name, const char **out);

/* The value of a flag naming an output the command writes (`what`: "file"
 * or "directory", for messages) into *slot, which must still be NULL:
 * false with a usage error naming the flag when the value is missing or
 * empty, or when the flag (or an alias sharing the slot) came before, as
 * the last of two outputs would otherwise win silently. */
bool kvs_args_output_path(kvs_args *it, const char *what, const char **slot);

/* The positional argument of a command that takes at most one (`what`
 * names it in the message): stores pos in *slot, or reports "one WHAT at
 * most (got 'A' and 'B')" and returns false. */
bool kvs_args_one_positional(kvs_args *it, const char *pos, const char **slot,
			     const char *what);

/* End of a chain of flag groups, r as they return it (1 taken, 0 not ours,
 * -1 bad value, already reported): reports an unknown flag for 0 and
 * returns true only when the flag was taken. */
bool kvs_args_taken(kvs_args *it, int r);

/* Report an unknown flag and mark the usage error; with it->help set, the
 * closest flag that help text names is offered ("did you mean '--tp'?"). */
void kvs_args_unknown(kvs_args *it);

/* Did-you-mean for `word` among the flags ("--name") a help printer names:
 * the suggestion copied to buf (cap bytes) and returned, or NULL; never
 * `word` itself (a flag the help mentions but the command did not take). */
const char *kvs_cli_suggest_flag(void (*help)(FILE *), const char *word,
				 char *buf, size_t cap);

/* Print "kvsim CMD: message" to stderr (usage errors), mark error. */
void kvs_args_usage_error(kvs_args *it, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "kvsim CMD: " + kvs_last_error() (or the status text) to stderr. */
void kvs_cli_report_error(const char *cmd, kvs_status st);

/* Parse strictly: whole string, base 10, no sign for unsigned. */
bool kvs_parse_u64(const char *s, uint64_t *out);
bool kvs_parse_double(const char *s, double *out);

/* Is stderr a terminal (for progress lines)? */
bool kvs_cli_stderr_is_tty(void);

/* json_dumps(doc, flags) with every real in its shortest form that reads
 * back as the same double (0.9, not 0.90000000000000002); free() it. */
char *kvs_cli_json_text(const json_t *doc, size_t flags);

/* text and a newline to o, opened before the work by kvs_cli_out_open
 * (cli_sim.h) so that a bad path fails first, then committed; o is
 * consumed (discarded when text is NULL or a write fails).  KVS_EXIT_OK,
 * or a message naming cmd, flag and path and KVS_EXIT_FAIL. */
int kvs_cli_write_text(const char *cmd, const char *flag, kvs_outfile *o,
		       const char *text);

/* ---- flag group: model, GPU and deployment (cli/cli_deploy.c) ------------
 * --model NAME|config.json, --gpu NAME, --gpu-mem SIZE,
 * --gpu-memory-utilization F, --tp N, --pp N, --dtype T, --kv-cache-dtype T,
 * --block-size N, --context N, --max-model-len N, --reserve SIZE,
 * --layers N, --kv-heads N, --head-dim N, --params N, --gpu-hour-price F,
 * --kv-quant-group N.
 */
typedef struct kvs_cli_deploy {
	const char *model_arg;      /* as given, NULL = default */
	const char *gpu_arg;
	bool gpu_given;             /* --gpu was on the command line */
	uint64_t gpu_mem;           /* 0 = from preset */
	uint32_t layers, kv_heads, head_dim;  /* 0 = from model */
	uint64_t params;            /* 0 = from model */
	/* The deployment.  The flags write their fields straight into it,
	 * over kvs_deploy_defaults; kvs_cli_deploy_finish adds the model, the
	 * GPU and what depends on them (dtypes, context). */
	kvs_deploy d;
	bool set_context, set_block_size;
	const char *dtype_arg, *kv_dtype_arg;  /* resolved against the model */
	int pp_balanced_arg;        /* --pp-balanced 1, --no-pp-balanced 0; -1: the
				     * engine's own (SGLang balances, vLLM V1 not) */
	int fail_exit;              /* exit code when finish fails: 2 usage, 1 runtime */
	const char *mm_flag;        /* the first of vLLM's multimodal flags
				     * given (refused under other engines) */
} kvs_cli_deploy;
/* A warning on standard error when a vLLM override (--kv-cache-memory-
 * bytes, --num-gpu-blocks-override) sizes a pool that, with the weights,
 * exceeds the GPU's memory: vLLM would fail to allocate it. */
void kvs_cli_override_warn(const char *cmd, const kvs_deploy *d, const kvs_sizing *s);

/* The one default GPU of every command. */
#define KVS_CLI_DEFAULT_GPU "a100-40gb"

/* Defaults: the given model; gpu KVS_CLI_DEFAULT_GPU when default_gpu is
 * NULL. */
void kvs_cli_deploy_init(kvs_cli_deploy *c, const char *default_model,
			 const char *default_gpu);
/* 1: the current flag belonged to this group and was consumed; 0: not ours;
 * -1: ours but bad (message printed). */
int kvs_cli_deploy_arg(kvs_args *it, kvs_cli_deploy *c);
/* Load presets / config files, apply overrides, fill c->d.  Prints the error
 * and returns false on failure. */
bool kvs_cli_deploy_finish(kvs_cli_deploy *c, const char *cmd);
void kvs_cli_deploy_help(FILE *f);

/* ---- flag group: trace shaping (cli/cli_trace.c) -------------------------
 * --format F, --limit N, --start S, --end S, --time-scale X, --rate R,
 * --rate-mode keep|poisson, --seed N, --overlong reject|truncate,
 * --skip-bad-lines, --sort-window N.
 */
int kvs_cli_trace_arg(kvs_args *it, kvs_trace_opts *o);
void kvs_cli_trace_help(FILE *f);

/* The lines a trace dropped, on stderr whatever --quiet says (they are
 * data left out, not progress): "kvsim CMD: skipped N malformed line(s);
 * first: FILE:LINE: FIELD: reason" (first: kvs_trace_first_skip, or NULL
 * or "" for none known) for --skip-bad-lines, and the BurstGPT failure
 * rows left out without --keep-failed.  Nothing when none were
 * (cli/cli_front.c). */
void kvs_cli_trace_skip_note(const char *cmd, const kvs_trace_stats *st, const char *first);
/* The same for a trace read into memory from path with the options o,
 * whose stats are st: the first malformed line is found by reading a
 * regular file again up to it. */
void kvs_cli_set_skip_note(const char *cmd, const char *path, const kvs_trace_opts *o,
			   const kvs_trace_stats *st);

#endif /* KVSIM_CLI_H */
