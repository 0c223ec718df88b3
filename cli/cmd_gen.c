/*
 * cmd_gen.c - `kvsim gen`: write a synthetic native trace from a workload
 * description (arrival process, length distributions, shared system
 * prompts, multi-turn conversations, parallel sampling).  Deterministic
 * for a given --seed.
 */
#include "commands.h"
#include "cli_sim.h"

#include <math.h>
#include <string.h>

void kvs_cmd_gen_usage(FILE *f)
{
	fprintf(f,
		"usage: kvsim gen [options] [-o FILE]\n"
		"\n"
		"Write a synthetic request trace in kvsim's native format (CSV, or JSONL\n"
		"for a .jsonl FILE or --format jsonl) to FILE or standard output.\n"
		"\n"
		"size:\n"
		"  --requests N        number of requests (default 1000; 0 with --duration)\n"
		"  --duration S        stop before the first arrival at or after S seconds\n"
		"  --seed N            random seed (default 1); same seed, same trace\n"
		"arrivals (of new conversations):\n"
		"  --arrival P         poisson (default), gamma or constant\n"
		"  --rate R            conversations per second (default 1)\n"
		"  --cv C              gamma gaps with coefficient of variation C (1 is\n"
		"                      Poisson, > 1 burstier; 'kvsim trace' reports it)\n"
		"  --burstiness B      gamma gaps with shape B, as 'vllm bench serve\n"
		"                      --burstiness' (1 = Poisson, < 1 burstier): --cv 1/sqrt(B)\n"
		"lengths (tokens, new per turn):\n"
		"  --prompt-len D      default lognormal:1024:1; D is fixed:N, uniform:MIN:MAX,\n"
		"  --output-len D      lognormal:MEAN:SIGMA (mean in tokens, sigma of the log)\n"
		"                      or trace:FILE (resampled; the same FILE for both keeps\n"
		"                      prompt/output pairs); default output lognormal:256:1\n"
		"  --max-tokens N      clamp every prompt and output to N (default 131072)\n"
		"shared system prompts:\n"
		"  --prefix-tokens K   length of a shared system prompt\n"
		"  --prefix-fraction F share of conversations that start with one (0..1;\n"
		"                      default 1 when --prefix-tokens is given)\n"
		"  --prefix-groups G   number of distinct system prompts (default 1)\n"
		"multi-turn conversations:\n"
		"  --turns T           turns per conversation (default 1)\n"
		"  --turns-dist D      fixed (default) or geometric (mean T)\n"
		"  --think S           mean think time between turns, exponential (default 0)\n"
		"other:\n"
		"  --n N               parallel sampling: n outputs per request (default 1)\n"
		"  --hash-block N      block size of the emitted prefix hash ids (default 16)\n"
		"  --hashes, --no-hashes  emit hash ids always / never (default: when there\n"
		"                      are shared prompts or multi-turn conversations)\n"
		"  --format F          csv or jsonl (default: from FILE's extension, else csv)\n"
		"  -o, --out FILE      output file (default: standard output)\n"
		"  -q, --quiet         no 'wrote N requests' line on stderr (errors and\n"
		"                      the interruption note are still said)\n"
		"  --help              show this help\n"
		"  Ctrl-C (SIGINT), SIGTERM  stop: standard output ends after the last\n"
		"                      whole request; a FILE is not written; exit 130 (143)\n");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool dist_arg(kvs_args *it, kvs_gen_dist *d)
{
	const char *v = kvs_args_value(it);
	if (!v)
		return false;
	if (kvs_gen_dist_parse(v, d) != KVS_OK) {
		kvs_args_usage_error(it, "%s: %s", it->flag, kvs_last_error());
		return false;
	}
	return true;
}

int kvs_cmd_gen(kvs_args *it)
{
	kvs_gen_opts o;
	kvs_gen_opts_defaults(&o);
	const char *out = NULL, *fmt = NULL;
	bool set_requests = false;
	bool set_arrival = false, set_cv = false;
	double burstiness = 0;     /* vLLM's gamma shape; 0 = not given */
	bool quiet = false;        /* --quiet: no "wrote" line */
	const char *pos;
	while (kvs_args_next(it, &pos)) {
		if (!it->flag) {
			kvs_args_usage_error(it, "unexpected argument '%s' (the output file "
					     "goes after -o)", pos);
			return KVS_EXIT_USAGE;
		}
		bool ok = true;
		if (kvs_args_help(it)) {
			return KVS_EXIT_OK;
		} else if (kvs_args_is(it, "--requests")) {
			ok = kvs_args_u64(it, 0, UINT64_MAX, &o.requests);
			set_requests = true;
		} else if (kvs_args_is(it, "--duration")) {
			ok = kvs_args_double(it, 1e-9, 1e12, &o.duration_s);
		} else if (kvs_args_is(it, "--seed")) {
			ok = kvs_args_u64(it, 0, UINT64_MAX, &o.seed);
		} else if (kvs_args_is(it, "--arrival")) {
			set_arrival = true;
			const char *v = kvs_args_value(it);
			if (!v)
				return KVS_EXIT_USAGE;
			if (strcmp(v, "poisson") == 0)
				o.arrival = KVS_ARRIVAL_POISSON;
			else if (strcmp(v, "gamma") == 0)
				o.arrival = KVS_ARRIVAL_GAMMA;
			else if (strcmp(v, "constant") == 0)
				o.arrival = KVS_ARRIVAL_CONSTANT;
			else {
				kvs_args_usage_error(it, "--arrival: expected poisson, gamma or "
						     "constant, got '%s'", v);
				ok = false;
			}
		} else if (kvs_args_is(it, "--rate")) {
			ok = kvs_args_double(it, 1e-9, 1e9, &o.rate);
		} else if (kvs_args_is(it, "--cv")) {
			ok = kvs_args_double(it, 1e-3, 100, &o.cv);
			set_cv = true;
		} else if (kvs_args_is(it, "--burstiness")) {
			/* shape k of gamma gaps: cv = 1 / sqrt(k), so [1e-4, 1e6]
			 * covers --cv's [1e-3, 100] */
			ok = kvs_args_double(it, 1e-4, 1e6, &burstiness);
		} else if (kvs_args_is(it, "--prompt-len")) {
			ok = dist_arg(it, &o.prompt);
		} else if (kvs_args_is(it, "--output-len")) {
			ok = dist_arg(it, &o.output);
		} else if (kvs_args_is(it, "--max-tokens")) {
			ok = kvs_args_u32(it, 1, UINT32_MAX, &o.max_tokens);
		} else if (kvs_args_is(it, "--prefix-tokens")) {
			ok = kvs_args_u32(it, 0, UINT32_MAX, &o.prefix_tokens);
		} else if (kvs_args_is(it, "--prefix-fraction")) {
			ok = kvs_args_double(it, 0, 1, &o.prefix_fraction);
		} else if (kvs_args_is(it, "--prefix-groups")) {
			ok = kvs_args_u32(it, 1, 1u << 20, &o.prefix_groups);
		} else if (kvs_args_is(it, "--turns")) {
			ok = kvs_args_double(it, 1, 1e6, &o.turns);
		} else if (kvs_args_is(it, "--turns-dist")) {
			const char *v = kvs_args_value(it);
			if (!v)
				return KVS_EXIT_USAGE;
			if (strcmp(v, "fixed") == 0)
				o.turns_geometric = false;
			else if (strcmp(v, "geometric") == 0)
				o.turns_geometric = true;
			else {
				kvs_args_usage_error(it, "--turns-dist: expected fixed or "
						     "geometric, got '%s'", v);
				ok = false;
			}
		} else if (kvs_args_is(it, "--think")) {
			ok = kvs_args_double(it, 0, 1e9, &o.think_s);
		} else if (kvs_args_is(it, "--n")) {
			ok = kvs_args_u32(it, 1, 1u << 16, &o.num_samples);
		} else if (kvs_args_is(it, "--hash-block")) {
			ok = kvs_args_u32(it, 1, 1u << 20, &o.hash_block_tokens);
		} else if (kvs_args_is(it, "--hashes")) {
			ok = kvs_args_no_value(it);
			o.hashes = 1;
		} else if (kvs_args_is(it, "--no-hashes")) {
			ok = kvs_args_no_value(it);
			o.hashes = 0;
		} else if (kvs_args_is(it, "--format")) {
			fmt = kvs_args_value(it);
			ok = fmt != NULL;
			if (ok && strcmp(fmt, "csv") != 0 && strcmp(fmt, "jsonl") != 0) {
				kvs_args_usage_error(it, "--format: expected csv or jsonl, got '%s'", fmt);
				ok = false;
			}
		} else if (kvs_args_is(it, "-o") || kvs_args_is(it, "--out")) {
			ok = kvs_args_output_path(it, "file", &out);
		} else if (kvs_args_is(it, "--quiet") || kvs_args_is(it, "-q")) {
			ok = kvs_args_no_value(it);
			quiet = true;
		} else {
			kvs_args_unknown(it);
			ok = false;
		}
		if (!ok)
			return KVS_EXIT_USAGE;
	}
	if (burstiness > 0) {
		if (set_cv) {
			kvs_args_usage_error(it, "--burstiness and --cv both set the shape of "
					     "the gaps (cv = 1/sqrt(burstiness)): give one");
			return KVS_EXIT_USAGE;
		}
		if (set_arrival && o.arrival != KVS_ARRIVAL_GAMMA) {
			kvs_args_usage_error(it, "--burstiness is the shape of gamma gaps: it "
					     "goes with --arrival gamma (the default with it)");
			return KVS_EXIT_USAGE;
		}
		o.arrival = KVS_ARRIVAL_GAMMA;
		o.cv = 1.0 / sqrt(burstiness);
	} else if (set_cv) {
		/* as --burstiness: the shape of gamma gaps, never dropped for
		 * another arrival process */
		if (set_arrival && o.arrival != KVS_ARRIVAL_GAMMA) {
			kvs_args_usage_error(it, "--cv is the coefficient of variation of gamma "
					     "gaps: it goes with --arrival gamma (the default "
					     "with it)");
			return KVS_EXIT_USAGE;
		}
		o.arrival = KVS_ARRIVAL_GAMMA;
	}
	if (!out)
		out = "-";
	if (o.duration_s > 0 && !set_requests)
		o.requests = 0; /* --duration alone: as many as fit */
	if (o.prefix_tokens > 0 && o.prefix_fraction == 0)
		o.prefix_fraction = 1.0; /* a shared prompt with no fraction: everyone */
	kvs_trace_format f = KVS_TRACE_NATIVE_CSV;
	if (fmt ? strcmp(fmt, "jsonl") == 0 : ends_with(out, ".jsonl"))
		f = KVS_TRACE_NATIVE_JSONL;

	kvs_gen *g;
	kvs_status st = kvs_gen_open(&o, &g);
	if (st != KVS_OK) {
		/* bad combinations of options are usage errors */
		kvs_cli_report_error("gen", st);
		return st == KVS_ERR_INVALID ? KVS_EXIT_USAGE : KVS_EXIT_FAIL;
	}
	bool hashes = o.hashes > 0 ||
		      (o.hashes < 0 && ((o.prefix_fraction > 0 && o.prefix_tokens > 0) || o.turns > 1));
	/* Ctrl-C: stop between two requests (before the output opens, so
	 * that its own handler leaves the signals to this one) */
	const volatile sig_atomic_t *intr = kvs_cli_interrupt_install();
	kvs_trace_writer *w;
	st = kvs_trace_writer_open(out, f, hashes, &w);
	if (st != KVS_OK) {
		kvs_gen_close(g);
		fprintf(stderr, "kvsim gen: -o: %s\n", kvs_last_error());
		return KVS_EXIT_FAIL;
	}
	char cmdline[1024];
	size_t n = (size_t)snprintf(cmdline, sizeof cmdline, "generated by kvsim %s:", kvs_version());
	for (int i = 0; i < it->argc && n < sizeof cmdline; i++)
		n += (size_t)snprintf(cmdline + n, sizeof cmdline - n, " %s", it->argv[i]);
	kvs_trace_writer_comment(w, cmdline);
	kvs_request r;
	uint64_t count = 0;
	double last = 0;
	while (!*intr && (st = kvs_gen_next(g, &r)) == KVS_OK) {
		if ((st = kvs_trace_writer_put(w, &r)) != KVS_OK)
			break;
		count++;
		last = r.arrival_s;
	}
	bool to_stdout = strcmp(out, "-") == 0;
	int sig = *intr;
	/* a failed run leaves no file behind (and an existing one
	 * untouched), and so does an interrupted one; on standard output an
	 * interrupted run ends after its last whole request */
	if (st == KVS_END || (sig && st == KVS_OK && to_stdout))
		st = kvs_trace_writer_close(w);
	else
		kvs_trace_writer_discard(w);   /* st: an error, or OK when interrupted */
	kvs_gen_close(g);
	if (st != KVS_OK) {
		kvs_cli_report_error("gen", st);
		return KVS_EXIT_FAIL;
	}
	if (sig) {
		if (to_stdout)
			fprintf(stderr, "kvsim gen: interrupted after %llu requests; standard "
				"output holds them, each whole\n", (unsigned long long)count);
		else
			fprintf(stderr, "kvsim gen: interrupted after %llu requests: %s not "
				"written (a file already there is untouched)\n",
				(unsigned long long)count, out);
		return 128 + sig;
	}
	if (!to_stdout && !quiet)
		fprintf(stderr, "kvsim gen: wrote %llu requests over %.3f s to %s\n",
			(unsigned long long)count, last, out);
	return KVS_EXIT_OK;
}
