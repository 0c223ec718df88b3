/*
 * args.c - the argument iterator and strict number parsing used by every
 * subcommand.  Errors name the flag and the offending text.
 */
#include "cli.h"
#include "common/num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

void kvs_args_init(kvs_args *it, const char *cmd, int argc, char **argv,
		   void (*help)(FILE *))
{
	memset(it, 0, sizeof *it);
	it->argc = argc;
	it->argv = argv;
	it->i = 1;
	it->cmd = cmd;
	it->help = help;
}

bool kvs_args_next(kvs_args *it, const char **positional)
{
	it->flag = NULL;
	it->inline_val = NULL;
	if (it->i >= it->argc)
		return false;
	it->at = it->i;
	const char *a = it->argv[it->i++];
	if (a[0] == '-' && a[1] != '\0' && !(a[1] >= '0' && a[1] <= '9')) {
		const char *eq = strchr(a, '=');
		if (eq && a[1] == '-') {
			size_t n = (size_t)(eq - a);
			if (n >= sizeof it->flagbuf)
				n = sizeof it->flagbuf - 1;
			memcpy(it->flagbuf, a, n);
			it->flagbuf[n] = '\0';
			it->flag = it->flagbuf;
			it->inline_val = eq + 1;
		} else {
			it->flag = a;
		}
		return true;
	}
	*positional = a;
	return true;
}

/* A second output flag would replace the first silently: refused. */
static bool output_once(kvs_args *it, const char *what, const char *prev)
{
	if (!prev)
		return true;
	if (strcmp(prev, "-") == 0)
		kvs_args_usage_error(it, "%s: one output %s at most (already standard "
				     "output)", it->flag, what);
	else
		kvs_args_usage_error(it, "%s: one output %s at most (already '%s')",
				     it->flag, what, prev);
	return false;
}

int kvs_args_output(kvs_args *it, const char *name, const char **path,
		    bool any_word)
{
	if (!kvs_args_is(it, name))
		return 0;
	if (!output_once(it, "file", *path))
		return -1;
	if (it->inline_val) {
		if (!*it->inline_val) {
			kvs_args_usage_error(it, "%s=: empty file name (a bare %s prints to "
					     "standard output)", name, name);
			return -1;
		}
		*path = it->inline_val;
		return 1;
	}
	/* the next word is the file when it is "-", ends in the flag's own
	 * extension (".json" for --json), or the command takes no positional
	 * argument; otherwise the output goes to standard output */
	const char *w = it->i < it->argc ? it->argv[it->i] : NULL;
	bool file = false;
	if (w && *w && (w[0] != '-' || strcmp(w, "-") == 0)) {
		size_t wl = strlen(w), el = strlen(name) - 1; /* ".json" from "--json" */
		bool ext = wl > el && w[wl - el] == '.' &&
			   strcasecmp(w + wl - el + 1, name + 2) == 0;
		/* an existing CSV where a trace may still come is that trace,
		 * never overwritten by --csv */
		struct stat sb;
		if (ext && !any_word && strcmp(name, "--csv") == 0 && stat(w, &sb) == 0 &&
		    S_ISREG(sb.st_mode) && sb.st_size > 0)
			ext = false;
		file = strcmp(w, "-") == 0 || any_word || ext;
	}
	if (file) {
		*path = w;
		it->i++;
	} else {
		*path = "-";
	}
	return 1;
}

bool kvs_args_is(const kvs_args *it, const char *name)
{
	return it->flag && strcmp(it->flag, name) == 0;
}

bool kvs_args_given_before(const kvs_args *it, const char *name)
{
	size_t n = strlen(name);
	for (int k = 1; k < it->at; k++) {
		const char *w = it->argv[k];
		if (strncmp(w, name, n) == 0 && (w[n] == '\0' || w[n] == '='))
			return true;
	}
	return false;
}

void kvs_args_usage_error(kvs_args *it, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kvsim %s: ", it->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	it->error = true;
}

const char *kvs_args_value(kvs_args *it)
{
	if (it->inline_val)
		return it->inline_val;
	if (it->i >= it->argc || strncmp(it->argv[it->i], "--", 2) == 0) {
		kvs_args_usage_error(it, "%s: missing value", it->flag);
		return NULL;
	}
	return it->argv[it->i++];
}

const char *kvs_cli_suggest_flag(void (*help)(FILE *), const char *word,
				 char *buf, size_t cap)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = help ? open_memstream(&text, &len) : NULL;
	if (!f)
		return NULL;
	help(f);
	if (fclose(f) != 0 || !text) {
		free(text);
		return NULL;
	}
	/* every "--name" the help names, once each, but the word as typed: a
	 * flag the help mentions and the command did not take is no answer */
	const char *names[512];
	size_t n = 0;
	for (char *p = text; (p = strstr(p, "--")) != NULL && n < KVS_ARRAY_LEN(names);) {
		bool start = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '-');
		char *e = p + 2;
		while (isalnum((unsigned char)*e) || *e == '-')
			e++;
		if (!start || e == p + 2 || !isalpha((unsigned char)p[2])) {
			p = e > p + 2 ? e : p + 2;
			continue;
		}
		char keep = *e;
		*e = '\0';
		bool dup = strcmp(p, word) == 0;
		for (size_t k = 0; k < n && !dup; k++)
			dup = strcmp(names[k], p) == 0;
		if (!dup)
			names[n++] = p;
		p = e + (keep != '\0');
	}
	/* "-tp 2" is as good as "--tp 2": compare the words with two dashes */
	char w[128];
	snprintf(w, sizeof w, "%s%s", word[0] == '-' && word[1] != '-' ? "-" : "", word);
	const char *best = kvs_suggest(w, names, n);
	if (best)
		snprintf(buf, cap, "%s", best);
	free(text);
	return best ? buf : NULL;
}

void kvs_args_unknown(kvs_args *it)
{
	char buf[128];
	const char *s = kvs_cli_suggest_flag(it->help, it->flag, buf, sizeof buf);
	if (s)
		kvs_args_usage_error(it, "unknown option '%s'; did you mean '%s'? (see "
				     "'kvsim %s --help')", it->flag, s, it->cmd);
	else
		kvs_args_usage_error(it, "unknown option '%s' (see 'kvsim %s --help')",
				     it->flag, it->cmd);
}

bool kvs_args_no_value(kvs_args *it)
{
	if (it->inline_val) {
		kvs_args_usage_error(it, "%s takes no value", it->flag);
		return false;
	}
	return true;
}

bool kvs_args_help(const kvs_args *it)
{
	if (!kvs_args_is(it, "--help") && !kvs_args_is(it, "-h"))
		return false;
	if (it->help)
		it->help(stdout);
	return true;
}

int kvs_args_str(kvs_args *it, const char *name, const char **out)
{
	if (!kvs_args_is(it, name))
		return 0;
	const char *v = kvs_args_value(it);
	if (!v)
		return -1;
	*out = v;
	return 1;
}

bool kvs_args_output_path(kvs_args *it, const char *what, const char **slot)
{
	const char *v = kvs_args_value(it);
	if (!v || !output_once(it, what, *slot))
		return false;
	if (!*v) {
		kvs_args_usage_error(it, "%s: empty %s name", it->flag, what);
		return false;
	}
	*slot = v;
	return true;
}

/* A key for a path that does not exist yet: its directory resolved
 * (symbolic links, "." and "..") when that exists, then the last name. */
static void path_key(const char *path, char *buf, size_t cap)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	char *real = realpath(dir, NULL);
	snprintf(buf, cap, "%s/%s", real ? real : dir, slash ? slash + 1 : path);
	free(real);
}

bool kvs_cli_same_file(const char *a, const char *b)
{
	bool sa = strcmp(a, "-") == 0, sb = strcmp(b, "-") == 0;
	if (sa || sb)
		return sa && sb;
	struct stat x, y;
	bool ea = stat(a, &x) == 0, eb = stat(b, &y) == 0;
	if (ea || eb)
		return ea && eb && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	char ka[4352], kb[4352];
	path_key(a, ka, sizeof ka);
	path_key(b, kb, sizeof kb);
	return strcmp(ka, kb) == 0;
}

bool kvs_cli_paths_check(const char *cmd, const kvs_cli_path *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			const kvs_cli_path *a = &p[i], *b = &p[j];
			if (!a->path || !b->path || (a->input && b->input) ||
			    !kvs_cli_same_file(a->path, b->path))
				continue;
			/* standard input is not standard output; a device (a
			 * sink such as /dev/null) takes any number of writers */
			struct stat sb;
			if ((a->input || b->input) && strcmp(a->path, "-") == 0)
				continue;
			if (stat(a->path, &sb) == 0 && !S_ISREG(sb.st_mode))
				continue;
			const kvs_cli_path *in = a->input ? a : b->input ? b : NULL;
			const kvs_cli_path *out = in == a ? b : a;
			if (in)
				fprintf(stderr, "kvsim %s: %s %s is also %s, read by this "
					"run: give another output file\n", cmd, out->flag,
					out->path, in->flag);
			else if (strcmp(a->path, "-") == 0)
				fprintf(stderr, "kvsim %s: %s and %s both write to standard "
					"output: give one a file\n", cmd, a->flag, b->flag);
			else
				fprintf(stderr, "kvsim %s: %s and %s both name %s: give each "
					"its own file\n", cmd, a->flag, b->flag, b->path);
			return false;
		}
	}
	return true;
}

bool kvs_args_one_positional(kvs_args *it, const char *pos, const char **slot,
			     const char *what)
{
	if (*slot) {
		kvs_args_usage_error(it, "one %s at most (got '%s' and '%s')", what,
				     *slot, pos);
		return false;
	}
	*slot = pos;
	return true;
}

bool kvs_args_taken(kvs_args *it, int r)
{
	if (r == 0)
		kvs_args_unknown(it);
	return r > 0;
}

bool kvs_parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE || *end != '\0')
		return false;
	*out = v;
	return true;
}

bool kvs_parse_double(const char *s, double *out)
{
	/* the library's rule: decimal notation only (no hex floats, blanks,
	 * "inf" or "nan"), finite, neither overflowing nor underflowing */
	return kvs_parse_decimal(s, out);
}

/* An integer flag value read by `parse` (which accepts what `expected`
 * describes) and held to [min, max]: the one body of kvs_args_u64 and
 * kvs_args_tokens. */
static bool args_u64_by(kvs_args *it, bool (*parse)(const char *, uint64_t *),
			const char *expected, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *v = kvs_args_value(it);
	uint64_t x;
	if (!v)
		return false;
	if (!parse(v, &x)) {
		kvs_args_usage_error(it, "%s: expected %s, got '%s'", it->flag, expected, v);
		return false;
	}
	if (x < min || x > max) {
		kvs_args_usage_error(it, "%s: %s is out of range [%llu, %llu]",
				     it->flag, v, (unsigned long long)min,
				     (unsigned long long)max);
		return false;
	}
	*out = x;
	return true;
}

bool kvs_args_u64(kvs_args *it, uint64_t min, uint64_t max, uint64_t *out)
{
	return args_u64_by(it, kvs_parse_u64, "a non-negative integer", min, max, out);
}

bool kvs_args_u32(kvs_args *it, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t x;
	if (!kvs_args_u64(it, min, max, &x))
		return false;
	*out = (uint32_t)x;
	return true;
}

const char *kvs_args_number(kvs_args *it, double *out)
{
	const char *v = kvs_args_value(it);
	if (!v)
		return NULL;
	if (!kvs_parse_double(v, out)) {
		kvs_args_usage_error(it, "%s: expected a number, got '%s'", it->flag, v);
		return NULL;
	}
	return v;
}

bool kvs_args_double(kvs_args *it, double min, double max, double *out)
{
	double x;
	const char *v = kvs_args_number(it, &x);
	if (!v)
		return false;
	if (!(x >= min && x <= max)) {
		kvs_args_usage_error(it, "%s: %s is out of range [%g, %g]",
				     it->flag, v, min, max);
		return false;
	}
	*out = x;
	return true;
}

/* "D[.F]" times 10^e exactly: the digits read as integers, so that 4.1
 * with e = 6 is 4100000 (in doubles, 4.1 * 1e6 is 4099999.9999999995); false
 * unless the product is a whole number below 2^64. */
static bool parse_decimal_scaled(const char *s, unsigned e, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (p == s)
		return false;
	/* the fraction's digits move left of the point one by one; past the
	 * scale's e places only zeros may follow */
	unsigned places = 0;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			unsigned d = (unsigned)(*p - '0');
			if (places == e) {
				if (d != 0)
					return false;
				continue;
			}
			if (v > (UINT64_MAX - d) / 10)
				return false;
			v = v * 10 + d;
			places++;
		}
	}
	if (*p != '\0')
		return false;
	for (; places < e; places++) {
		if (v > UINT64_MAX / 10)
			return false;
		v *= 10;
	}
	*out = v;
	return true;
}

bool kvs_parse_tokens(const char *s, uint64_t *out)
{
	/* vLLM's human-readable integers: k/m/g decimal (decimals allowed,
	 * the product must be whole), K/M/G binary (whole numbers only) */
	if (!s || *s < '0' || *s > '9')
		return false;
	size_t n = strlen(s);
	char last = s[n - 1];
	const char *dec = "kmg", *bin = "KMG";
	const char *p;
	char num[64];
	if (n > 1 && last && (p = strchr(dec, last)) != NULL) {
		if (n - 1 >= sizeof num)
			return false;
		memcpy(num, s, n - 1);
		num[n - 1] = '\0';
		return parse_decimal_scaled(num, 3u * (unsigned)(p - dec + 1), out);
	}
	if (n > 1 && last && (p = strchr(bin, last)) != NULL) {
		uint64_t v;
		if (n - 1 >= sizeof num)
			return false;
		memcpy(num, s, n - 1);
		num[n - 1] = '\0';
		unsigned shift = 10u * (unsigned)(p - bin + 1);
		if (!kvs_parse_u64(num, &v) || v > (UINT64_MAX >> shift))
			return false;
		*out = v << shift;
		return true;
	}
	return kvs_parse_u64(s, out);
}

bool kvs_args_tokens(kvs_args *it, uint64_t min, uint64_t max, uint64_t *out)
{
	return args_u64_by(it, kvs_parse_tokens, "a token count such as 8192, 8k (8000) "
			   "or 8K (8192)", min, max, out);
}

bool kvs_args_bytes(kvs_args *it, uint64_t *out)
{
	const char *v = kvs_args_value(it);
	uint64_t x;
	if (!v)
		return false;
	kvs_status st = kvs_parse_bytes(v, &x);
	if (st != KVS_OK) {
		kvs_args_usage_error(it, "%s: %s", it->flag, kvs_last_error());
		return false;
	}
	*out = x;
	return true;
}

void kvs_cli_report_error(const char *cmd, kvs_status st)
{
	const char *msg = kvs_last_error();
	fprintf(stderr, "kvsim %s: %s\n", cmd, *msg ? msg : kvs_strerror(st));
}

bool kvs_cli_stderr_is_tty(void)
{
	return isatty(2) == 1;
}

char *kvs_cli_json_text(const json_t *doc, size_t flags)
{
	/* jansson prints reals with 17 significant digits ("0.90000000000000002");
	 * each real is rewritten with the fewest digits that read back as the
	 * same double ("0.9"), keeping jansson's ".0" on whole numbers */
	char *in = json_dumps(doc, flags | JSON_REAL_PRECISION(17));
	if (!in)
		return NULL;
	size_t n = strlen(in);
	char *out = malloc(n + 1);
	if (!out) {
		free(in);
		return NULL;
	}
	size_t o = 0;
	bool str = false;
	for (size_t i = 0; i < n;) {
		char c = in[i];
		if (str) {
			out[o++] = c;
			i++;
			if (c == '\\' && i < n)
				out[o++] = in[i++];
			else if (c == '"')
				str = false;
			continue;
		}
		if (c == '"') {
			str = true;
			out[o++] = in[i++];
			continue;
		}
		if (c == '-' || (c >= '0' && c <= '9')) {
			size_t e = i + 1;
			bool real = false;
			while (e < n && strchr("0123456789+-.eE", in[e])) {
				real |= in[e] == '.' || in[e] == 'e' || in[e] == 'E';
				e++;
			}
			char tok[64], best[64];
			size_t len = e - i;
			if (real && len < sizeof tok) {
				memcpy(tok, in + i, len);
				tok[len] = '\0';
				double v = strtod(tok, NULL);
				snprintf(best, sizeof best, "%s", tok);
				for (int p = 1; p <= 17; p++) {
					snprintf(best, sizeof best, "%.*g", p, v);
					if (strtod(best, NULL) == v)
						break;
				}
				if (!strpbrk(best, ".eE") && strlen(best) + 2 < sizeof best)
					strcat(best, ".0");
				size_t bl = strlen(best);
				if (bl <= len) {   /* never longer than jansson's */
					memcpy(out + o, best, bl);
					o += bl;
					i = e;
					continue;
				}
			}
			memcpy(out + o, in + i, len);
			o += len;
			i = e;
			continue;
		}
		out[o++] = in[i++];
	}
	out[o] = '\0';
	free(in);
	return out;
}

int kvs_cli_write_text(const char *cmd, const char *flag, kvs_outfile *o,
		       const char *text)
{
	/* through kvs_outfile: a file appears whole under its name or not at all */
	FILE *f = kvs_outfile_stream(o);
	if (!text || fputs(text, f) < 0 || fputc('\n', f) == EOF) {
		fprintf(stderr, "kvsim %s: %s: %s: %s\n", cmd, flag, kvs_outfile_path(o),
			text ? "write failed" : "out of memory");
		kvs_outfile_discard(o);
		return KVS_EXIT_FAIL;
	}
	if (kvs_outfile_commit(o) != KVS_OK) {
		fprintf(stderr, "kvsim %s: %s: %s\n", cmd, flag, kvs_last_error());
		return KVS_EXIT_FAIL;
	}
	return KVS_EXIT_OK;
}
