/*
 * main.c - the kvsim command line: dispatch to subcommands.
 *
 * Every subcommand lives in cli/cmd_NAME.c and is a thin layer over library
 * calls: parse flags, call kvsim, print.
 */
#include "kvs_config.h"
#include "commands.h"

#include <errno.h>
#include <string.h>

struct command {
	const char *name;
	int (*run)(kvs_args *it);
	void (*usage)(FILE *f);
};

static const struct command commands[] = {
#define KVS_CMD_ROW(name) { #name, kvs_cmd_##name, kvs_cmd_##name##_usage },
	KVS_COMMANDS(KVS_CMD_ROW)
#undef KVS_CMD_ROW
};

static const char *summary_of(const char *name)
{
	static const struct { const char *name, *text; } s[] = {
		{ "size", "KV cache per token and per conversation; conversations per GPU" },
		{ "trace", "summarise a request trace (rates, lengths, prefix sharing)" },
		{ "gen", "generate a synthetic trace from a workload description" },
		{ "replay", "replay a trace through the serving simulator under one policy" },
		{ "compare", "replay one trace under several allocation policies, side by side" },
		{ "fleet", "replay a trace through N replicas behind a router" },
		{ "sweep", "tune the block size and find the highest sustainable rate" },
		{ "report", "render replay/compare/sweep JSON into an HTML report with plots" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(s); i++)
		if (strcmp(s[i].name, name) == 0)
			return s[i].text;
	return "";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim COMMAND [OPTIONS]\n"
		"\n"
		"How much GPU memory does each conversation's KV cache take, and how\n"
		"many conversations fit on one GPU?\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < KVS_ARRAY_LEN(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, summary_of(commands[i].name));
	fprintf(f,
		"  help      show this help, or 'kvsim help COMMAND'\n"
		"\n"
		"options:\n"
		"  --version  print the version\n"
		"  --help     show this help\n"
		"\n"
		"Run 'kvsim COMMAND --help' for the options of a command.\n");
}

/* A table or JSON that could not reach standard output (a full disk, a
 * closed pipe) is a failure, not a silent success. */
static int finish(const char *name, int rc)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "kvsim %s: standard output: write failed%s%s\n", name,
			errno ? ": " : "", errno ? strerror(errno) : "");
		if (rc == KVS_EXIT_OK)
			rc = KVS_EXIT_FAIL;
	}
	return rc;
}

/* "kvsim: unknown command 'X'" with the closest command name, if any */
static void unknown_command(const char *name)
{
	const char *names[KVS_ARRAY_LEN(commands) + 1];
	for (size_t i = 0; i < KVS_ARRAY_LEN(commands); i++)
		names[i] = commands[i].name;
	names[KVS_ARRAY_LEN(commands)] = "help";
	const char *s = kvs_suggest(name, names, KVS_ARRAY_LEN(names));
	if (s)
		fprintf(stderr, "kvsim: unknown command '%s'; did you mean '%s'?\n", name, s);
	else
		fprintf(stderr, "kvsim: unknown command '%s'\n", name);
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < KVS_ARRAY_LEN(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return KVS_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
		printf("kvsim %s\n", kvs_version());
		return finish("--version", KVS_EXIT_OK);
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		usage(stdout);
		return finish("--help", KVS_EXIT_OK);
	}
	if (strcmp(name, "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return finish("help", KVS_EXIT_OK);
		}
		const struct command *c = find(argv[2]);
		if (!c) {
			unknown_command(argv[2]);
			usage(stderr);
			return KVS_EXIT_USAGE;
		}
		c->usage(stdout);
		return finish(c->name, KVS_EXIT_OK);
	}
	const struct command *c = find(name);
	if (!c) {
		unknown_command(name);
		fputc('\n', stderr);
		usage(stderr);
		return KVS_EXIT_USAGE;
	}
	/* the command's arguments, argv[0] its name */
	kvs_args it;
	kvs_args_init(&it, c->name, argc - 1, argv + 1, c->usage);
	return finish(c->name, c->run(&it));
}
