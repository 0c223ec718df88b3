/*
 * reader.c - the streaming trace reader: format detection, per-format row
 * decoding (CSV through libcsv, JSONL through jansson), the sort window,
 * shaping (window, time scale, rate, limit, max_model_len) and the
 * counters that account for every line.
 *
 * Pipeline of one kvs_trace_next call:
 *
 *   line buffer -> decode row -> slot -> heap (sort window, W + 1 slots)
 *     -> pop earliest -> order check -> time window -> re-time
 *     -> max_model_len -> hash ids at the requested block size -> request
 *
 * Times travel as int64 nanoseconds on the trace's own clock until the
 * last step; Azure's absolute timestamps are rebased to the first request.
 *
 * Invariant (kvs_trace_stats_balanced): every line read is exactly one of
 * header/comment, blank, yielded, skipped (by reason), filtered (window or
 * limit) or failed (stopped the reader, or was read ahead of the line that
 * did).
 */
#include "kvs_config.h"
#include "trace_internal.h"
#include "common/array.h"
#include "common/heap.h"

#include <csv.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#define MAX_FIELDS 64
#define MOONCAKE_BLOCK 512

/* ---- format names ---------------------------------------------------------*/

static const char *const format_names[KVS_TRACE_FORMAT_COUNT_] = {
#define FORMAT(id, name) [id] = name,
	KVS_TRACE_FORMAT_LIST(FORMAT)
#undef FORMAT
};

const char *kvs_trace_format_name(kvs_trace_format f)
{
	if ((unsigned)f >= KVS_TRACE_FORMAT_COUNT_)
		return "unknown";
	return format_names[f];
}

kvs_status kvs_trace_format_parse(const char *text, kvs_trace_format *out)
{
	static const struct {
		const char *name;
		kvs_trace_format f;
	} aliases[] = {
		{ "csv", KVS_TRACE_NATIVE_CSV },
		{ "jsonl", KVS_TRACE_NATIVE_JSONL },
		{ "vidur", KVS_TRACE_SPLITWISE },
	};
	if (!text)
		return kvs_fail(KVS_ERR_INVALID, "trace format: missing");
	for (int f = 0; f < KVS_TRACE_FORMAT_COUNT_; f++) {
		if (strcasecmp(text, format_names[f]) == 0) {
			*out = (kvs_trace_format)f;
			return KVS_OK;
		}
	}
	for (size_t i = 0; i < KVS_ARRAY_LEN(aliases); i++) {
		if (strcasecmp(text, aliases[i].name) == 0) {
			*out = aliases[i].f;
			return KVS_OK;
		}
	}
	char names[256];
	size_t len = 0;
	for (int f = 0; f < KVS_TRACE_FORMAT_COUNT_ && len < sizeof names; f++)
		len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
					f == 0 ? "" : f + 1 == KVS_TRACE_FORMAT_COUNT_ ? " or "
					: ", ", format_names[f]);
	return kvs_fail(KVS_ERR_INVALID, "unknown trace format '%s' (expected %s)", text,
			names);
}

void kvs_trace_opts_defaults(kvs_trace_opts *o)
{
	memset(o, 0, sizeof *o);
	o->format = KVS_TRACE_AUTO;
	o->time_scale = 1.0;
	o->rate_mode = KVS_RATE_KEEP_SHAPE;
	o->overlong = KVS_OVERLONG_REJECT;
	o->skip_failed = true;
}

const char *kvs_trace_skip_reason_name(kvs_skip_reason r)
{
	switch (r) {
	case KVS_SKIP_BAD_LINE: return "bad_line";
	case KVS_SKIP_FAILED: return "failed";
	default: return "unknown";
	}
}

bool kvs_trace_stats_balanced(const kvs_trace_stats *s)
{
	uint64_t sum = s->header_lines + s->blank_lines + s->requests +
		       s->filtered_window + s->filtered_limit + s->failed_lines;
	for (int i = 0; i < KVS_SKIP_COUNT_; i++)
		sum += s->skipped[i];
	return sum == s->lines_read;
}

/* Does text[0..len) contain the NUL-terminated needle? */
static bool has_text(const char *text, size_t len, const char *needle)
{
	return memmem(text, len, needle, strlen(needle)) != NULL;
}

/* ---- CSV layouts ------------------------------------------------------------*/

enum col {
	C_TIME, C_PROMPT, C_OUTPUT, C_SESSION, C_TURN, C_SAMPLES, C_PRIORITY,
	C_HBLOCK, C_HASHES, C_DATE, C_COUNT
};

/* T_NONE: the format has no arrival times (every request at 0 s, or a
 * Poisson process at --rate) */
enum time_kind { T_DATETIME, T_SECONDS, T_MS, T_NONE };

struct layout {
	kvs_trace_format fmt;
	const char *names[C_COUNT];   /* header names (case-insensitive) */
	enum time_kind tk;
	bool absolute;                /* rebase arrivals to the first request */
	int canon[C_COUNT];           /* headerless column positions, -1 absent */
	uint32_t canon_fields;        /* 0: a header is required */
	const char *example;
};

#define REQUIRED_COLS 3 /* C_TIME (unless T_NONE), C_PROMPT, C_OUTPUT */

static const struct layout csv_layouts[] = {
	{ KVS_TRACE_NATIVE_CSV,
	  { "arrival_s", "prompt_tokens", "output_tokens", "session_id", "turn",
	    "num_samples", "priority", "hash_block_tokens", "hash_ids" },
	  T_SECONDS, false, { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 }, 0,
	  "arrival_s,prompt_tokens,output_tokens[,session_id,turn,num_samples,"
	  "priority,hash_block_tokens,hash_ids]" },
	{ KVS_TRACE_AZURE,
	  { "TIMESTAMP", "ContextTokens", "GeneratedTokens" },
	  T_DATETIME, true, { 0, 1, 2, -1, -1, -1, -1, -1, -1, -1 }, 3,
	  "TIMESTAMP,ContextTokens,GeneratedTokens" },
	{ KVS_TRACE_BURSTGPT,
	  { "Timestamp", "Request tokens", "Response tokens" },
	  T_SECONDS, false, { 0, 2, 3, -1, -1, -1, -1, -1, -1, -1 }, 6,
	  "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type" },
	{ KVS_TRACE_SPLITWISE,
	  { "arrived_at", "num_prefill_tokens", "num_decode_tokens" },
	  T_SECONDS, false, { 0, 1, 2, -1, -1, -1, -1, -1, -1, -1 }, 3,
	  "arrived_at,num_prefill_tokens,num_decode_tokens" },
	/* Vidur's length trace (TraceRequestLengthGenerator): no arrival
	 * column; after splitwise, which has one */
	{ KVS_TRACE_VIDUR_LENGTHS,
	  { NULL, "num_prefill_tokens", "num_decode_tokens" },
	  T_NONE, false, { -1, 0, 1, -1, -1, -1, -1, -1, -1, -1 }, 2,
	  "num_prefill_tokens,num_decode_tokens" },
	/* Vidur's trace replay (TraceReplayRequestGenerator): Time is the
	 * arrival in seconds, Date the day Vidur selects (one per file here) */
	{ KVS_TRACE_VIDUR_DATED,
	  { "Time", "PromptTokenCount", "CompletionTokenCount", [C_DATE] = "Date" },
	  T_SECONDS, false, { 1, 2, 3, -1, -1, -1, -1, -1, -1, 0 }, 4,
	  "Date,Time,PromptTokenCount,CompletionTokenCount" },
};

static const struct layout json_layouts[] = {
	{ KVS_TRACE_MOONCAKE,
	  { "timestamp", "input_length", "output_length", NULL, NULL, NULL, NULL,
	    NULL, "hash_ids" },
	  T_MS, false, { 0 }, 0,
	  "{\"timestamp\": ms, \"input_length\": N, \"output_length\": M, \"hash_ids\": [...]}" },
	{ KVS_TRACE_NATIVE_JSONL,
	  { "arrival_s", "prompt_tokens", "output_tokens", "session_id", "turn",
	    "num_samples", "priority", "hash_block_tokens", "hash_ids" },
	  T_SECONDS, false, { 0 }, 0,
	  "{\"arrival_s\": s, \"prompt_tokens\": N, \"output_tokens\": M, ...}" },
};

/* ---- the reader ---------------------------------------------------------------*/

typedef struct slot {
	int64_t t_ns;           /* trace clock */
	uint64_t line;
	uint64_t seq;           /* read order, breaks ties */
	uint32_t prompt, output, samples, turn;
	int32_t priority;
	uint64_t session;
	uint64_t *ids;          /* source granularity */
	uint32_t nids, ids_cap;
	uint32_t id_block;
} slot;

struct kvs_trace {
	char *path;
	kvs_trace_opts o;
	kvs_trace_format fmt;
	const struct layout *lay;
	bool json;
	kvs_linebuf lb;
	kvs_trace_stats st;

	/* CSV columns: col[c] = field index or -1; names as in the header */
	int col[C_COUNT];
	char colname[C_COUNT][40];
	uint32_t ncols;
	struct csv_parser csv;
	bool csv_ready;
	char *fbuf;
	size_t fcap, flen;
	uint32_t nf;
	bool ftoomany;
	uint32_t foff[MAX_FIELDS], flens[MAX_FIELDS];

	/* a data line read during detection, processed first */
	char *pending;
	size_t pending_len;
	uint64_t pending_line;

	/* sort window */
	slot *slots;
	slot **heap;
	slot **free_slots;
	uint32_t nslots, nfree;
	size_t heap_n;
	uint64_t seq;
	bool eof, done;
	kvs_status err;         /* sticky error */
	bool have_last;
	int64_t last_t_ns;
	uint64_t last_line;
	bool have_max_in;
	int64_t max_in_ns;
	bool have_base;
	int64_t base_ns;

	/* shaping */
	double factor;          /* arrival multiplier (time_scale or rate) */
	kvs_rng rng;
	double poisson_t;
	uint32_t src_block;     /* hash-id granularity of the file, 0 unknown */

	uint64_t *out_ids;
	uint32_t out_cap;
	char first_skip[512];
	char err_msg[512];
	char date[64];          /* vidur-dated: the file's Date */
	uint64_t date_line;
};

/* Remember the error that stopped the reader: later calls repeat it. */
static kvs_status sticky(kvs_trace *t, kvs_status st)
{
	t->err = st;
	snprintf(t->err_msg, sizeof t->err_msg, "%s", kvs_last_error());
	return st;
}

/* A malformed line: skipped and counted with skip_bad_lines, else fatal. */
static kvs_status bad_line(kvs_trace *t, uint64_t line, const char *field,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static kvs_status bad_line(kvs_trace *t, uint64_t line, const char *field,
			   const char *fmt, ...)
{
	char why[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (t->o.skip_bad_lines) {
		t->st.skipped[KVS_SKIP_BAD_LINE]++;
		if (!t->first_skip[0])
			snprintf(t->first_skip, sizeof t->first_skip, "%s:%llu: %s: %s",
				 t->path, (unsigned long long)line, field, why);
		return KVS_OK;
	}
	t->st.failed_lines++;
	return kvs_fail(KVS_ERR_PARSE, "%s:%llu: %s: %s", t->path,
			(unsigned long long)line, field, why);
}

/* A line over KVS_TRACE_MAX_LINE: with skip_bad_lines, discard it and
 * count it; *skipped tells the caller to read on. */
static kvs_status long_line(kvs_trace *t, kvs_status st, bool *skipped)
{
	*skipped = false;
	if (st != KVS_ERR_PARSE || !t->lb.long_line)
		return st;
	if (!t->o.skip_bad_lines) {
		t->st.failed_lines++;
		return st;
	}
	t->st.skipped[KVS_SKIP_BAD_LINE]++;
	if (!t->first_skip[0])
		snprintf(t->first_skip, sizeof t->first_skip, "%s", kvs_last_error());
	st = kvs_linebuf_skip_rest(&t->lb);
	t->st.bytes_read = t->lb.bytes;
	*skipped = st == KVS_OK;
	return st;
}

/* The next line into *line, *len, counted in the stats: KVS_OK, KVS_END at
 * the end of the input, or the error of a line too long (one is skipped
 * and the next read instead with skip_bad_lines, see long_line). */
static kvs_status next_line(kvs_trace *t, char **line, size_t *len)
{
	for (;;) {
		kvs_status st = kvs_linebuf_next(&t->lb, line, len);
		t->st.lines_read = t->lb.lineno;
		t->st.bytes_read = t->lb.bytes;
		if (st == KVS_OK || st == KVS_END)
			return st;
		bool skipped;
		st = long_line(t, st, &skipped);
		if (!skipped)
			return st;
	}
}

/* ---- libcsv plumbing ---------------------------------------------------------*/

static void cb_field(void *data, size_t len, void *ctx)
{
	kvs_trace *t = ctx;
	if (t->nf >= MAX_FIELDS) {
		t->ftoomany = true;
		return;
	}
	/* fbuf was sized to the line, and fields are never longer in total */
	if (len > 0)
		memcpy(t->fbuf + t->flen, data, len);
	t->fbuf[t->flen + len] = '\0';
	t->foff[t->nf] = (uint32_t)t->flen;
	t->flens[t->nf] = (uint32_t)len;
	t->flen += len + 1;
	t->nf++;
}

static void cb_row(int c, void *ctx)
{
	(void)c;
	(void)ctx;
}

static void *csv_realloc_fn(void *p, size_t n)
{
	return kvs_realloc(p, n);
}

static void csv_reset(kvs_trace *t)
{
	if (t->csv_ready)
		csv_free(&t->csv);
	csv_init(&t->csv, CSV_STRICT | CSV_STRICT_FINI);
	csv_set_realloc_func(&t->csv, csv_realloc_fn);
	csv_set_free_func(&t->csv, kvs_free);
	t->csv_ready = true;
}

/* csv_split's reason when the field buffer cannot grow: an out-of-memory
 * error, never a bad line (callers compare the pointer). */
static const char csv_nomem[] = "no memory for the fields";

/* Split one line into fields.  NULL or a reason. */
static const char *csv_split(kvs_trace *t, const char *line, size_t len)
{
	size_t need = len + MAX_FIELDS + 1;
	if (need > t->fcap) {
		char *nb = kvs_realloc(t->fbuf, need);
		if (!nb)
			return csv_nomem;
		t->fbuf = nb;
		t->fcap = need;
	}
	t->nf = 0;
	t->flen = 0;
	t->ftoomany = false;
	size_t used = csv_parse(&t->csv, line, len, cb_field, cb_row, t);
	int rc = used == len ? csv_fini(&t->csv, cb_field, cb_row, t) : -1;
	if (rc != 0) {
		bool unterminated = used == len;
		bool nomem = csv_error(&t->csv) == CSV_ENOMEM;
		csv_reset(t);
		if (nomem)
			return csv_nomem;
		return unterminated ? "unterminated quoted field (a record must fit on one line)"
				    : "malformed quoting (a quote inside an unquoted field, or "
				      "text after a closing quote)";
	}
	if (t->ftoomany)
		return "more than 64 fields";
	return NULL;
}

static const char *field(const kvs_trace *t, int c, size_t *len)
{
	int i = t->col[c];
	*len = t->flens[i];
	return t->fbuf + t->foff[i];
}

/* ---- header detection -------------------------------------------------------*/

static bool header_matches(kvs_trace *t, const struct layout *lay)
{
	int col[C_COUNT];
	for (int c = 0; c < C_COUNT; c++) {
		col[c] = -1;
		if (!lay->names[c])
			continue;
		for (uint32_t i = 0; i < t->nf; i++) {
			if (strcasecmp(t->fbuf + t->foff[i], lay->names[c]) == 0) {
				col[c] = (int)i;
				break;
			}
		}
		if (c < REQUIRED_COLS && col[c] < 0)
			return false;
		if (c == C_DATE && col[c] < 0)
			return false;   /* vidur-dated names it */
	}
	for (int c = 0; c < C_COUNT; c++) {
		t->col[c] = col[c];
		if (col[c] >= 0)
			snprintf(t->colname[c], sizeof t->colname[c], "%s",
				 t->fbuf + t->foff[col[c]]);
		else if (lay->names[c])
			snprintf(t->colname[c], sizeof t->colname[c], "%s", lay->names[c]);
	}
	t->ncols = t->nf;
	return true;
}

static void use_canonical(kvs_trace *t, const struct layout *lay)
{
	for (int c = 0; c < C_COUNT; c++) {
		t->col[c] = lay->canon[c];
		snprintf(t->colname[c], sizeof t->colname[c], "%s",
			 lay->names[c] ? lay->names[c] : "");
	}
	t->ncols = lay->canon_fields;
}

static const struct layout *find_layout(const struct layout *l, size_t n,
					kvs_trace_format f)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].fmt == f)
			return &l[i];
	return NULL;
}

static void keep_pending(kvs_trace *t, const char *line, size_t len, uint64_t ln,
			 kvs_status *st)
{
	t->pending = kvs_malloc(len + 1);
	if (!t->pending) {
		*st = kvs_fail(KVS_ERR_NOMEM, "%s: no memory", t->path);
		return;
	}
	memcpy(t->pending, line, len);
	t->pending[len] = '\0';
	t->pending_len = len;
	t->pending_line = ln;
}

static bool is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	return true;
}

static kvs_status detect_json(kvs_trace *t, const char *line, size_t len, uint64_t ln)
{
	kvs_trace_format want = t->o.format;
	if (want == KVS_TRACE_AUTO) {
		json_error_t e;
		json_t *root = json_loadb(line, len, 0, &e);
		if (!root) {
			t->st.failed_lines++;
			return kvs_fail(KVS_ERR_PARSE, "%s:%llu: json: %s (column %d)", t->path,
					(unsigned long long)ln, e.text, e.column);
		}
		if (json_is_object(root) && json_object_get(root, "arrival_s"))
			want = KVS_TRACE_NATIVE_JSONL;
		else if (json_is_object(root) && json_object_get(root, "input_length"))
			want = KVS_TRACE_MOONCAKE;
		json_decref(root);
		if (want == KVS_TRACE_AUTO) {
			t->st.failed_lines++;
			return kvs_fail(KVS_ERR_PARSE,
					"%s:%llu: json: unrecognised record %s (expected Mooncake "
					"%s or native %s; or pass --format)", t->path,
					(unsigned long long)ln, kvs_trace_quote(line, len),
					json_layouts[0].example, json_layouts[1].example);
		}
	}
	t->fmt = want;
	t->lay = find_layout(json_layouts, KVS_ARRAY_LEN(json_layouts), want);
	t->json = true;
	for (int c = 0; c < C_COUNT; c++)
		snprintf(t->colname[c], sizeof t->colname[c], "%s",
			 t->lay->names[c] ? t->lay->names[c] : "");
	if (want == KVS_TRACE_MOONCAKE)
		t->src_block = MOONCAKE_BLOCK;
	kvs_status st = KVS_OK;
	keep_pending(t, line, len, ln, &st);
	return st;
}

static kvs_status detect_csv(kvs_trace *t, const char *line, size_t len, uint64_t ln)
{
	kvs_trace_format want = t->o.format;
	const char *why = csv_split(t, line, len);
	if (why == csv_nomem)
		return kvs_fail(KVS_ERR_NOMEM, "%s:%llu: %s", t->path,
				(unsigned long long)ln, why);
	if (why) {
		t->st.failed_lines++;
		return kvs_fail(KVS_ERR_PARSE, "%s:%llu: header: %s", t->path,
				(unsigned long long)ln, why);
	}
	for (size_t i = 0; i < KVS_ARRAY_LEN(csv_layouts); i++) {
		const struct layout *lay = &csv_layouts[i];
		if (want != KVS_TRACE_AUTO && want != lay->fmt)
			continue;
		if (header_matches(t, lay)) {
			/* a column named twice is ambiguous (which one holds the
			 * value?): refused, as JSON refuses duplicate keys */
			for (uint32_t a = 0; a < t->nf; a++)
				for (uint32_t b = a + 1; b < t->nf; b++)
					if (strcasecmp(t->fbuf + t->foff[a], t->fbuf + t->foff[b]) == 0) {
						t->st.failed_lines++;
						return kvs_fail(KVS_ERR_PARSE, "%s:%llu: header: "
								"column \"%s\" appears twice "
								"(columns %u and %u)", t->path,
								(unsigned long long)ln,
								t->fbuf + t->foff[a], a + 1, b + 1);
					}
			t->lay = lay;
			t->fmt = lay->fmt;
			t->st.header_lines++;
			return KVS_OK;
		}
	}
	if (want != KVS_TRACE_AUTO) {
		const struct layout *lay = find_layout(csv_layouts, KVS_ARRAY_LEN(csv_layouts), want);
		int64_t ns;
		/* a data line: its time (or, without one, its prompt) parses */
		int tci = lay->tk == T_NONE ? lay->canon[C_PROMPT] : lay->canon[C_TIME];
		uint32_t tc = lay->canon_fields ? (uint32_t)tci : 0;
		uint64_t u;
		bool data = lay->canon_fields && t->nf > tc &&
			    (lay->tk == T_NONE
				     ? !kvs_parse_field_u64(t->fbuf + t->foff[tc], t->flens[tc], UINT32_MAX, &u)
				     : lay->tk == T_DATETIME
				     ? !kvs_parse_field_datetime_ns(t->fbuf + t->foff[tc], t->flens[tc], &ns)
				     : !kvs_parse_field_seconds_ns(t->fbuf + t->foff[tc], t->flens[tc], &ns));
		if (data) {
			/* forced format without a header: canonical column order */
			t->lay = lay;
			t->fmt = lay->fmt;
			use_canonical(t, lay);
			kvs_status st = KVS_OK;
			keep_pending(t, line, len, ln, &st);
			return st;
		}
		t->st.failed_lines++;
		return kvs_fail(KVS_ERR_PARSE,
				"%s:%llu: header: %s does not name the %s columns (expected %s)",
				t->path, (unsigned long long)ln, kvs_trace_quote(line, len),
				kvs_trace_format_name(want), lay->example);
	}
	t->st.failed_lines++;
	return kvs_fail(KVS_ERR_PARSE,
			"%s:%llu: header: unrecognised header %s; expected one of: azure "
			"\"%s\", burstgpt \"%s\", splitwise \"%s\", native \"%s\", "
			"vidur-lengths \"%s\", vidur-dated \"%s\", or a JSON "
			"object per line (mooncake, native-jsonl); or pass --format",
			t->path, (unsigned long long)ln, kvs_trace_quote(line, len),
			csv_layouts[1].example, csv_layouts[2].example,
			csv_layouts[3].example, csv_layouts[0].example,
			csv_layouts[4].example, csv_layouts[5].example);
}

static kvs_status detect(kvs_trace *t)
{
	for (;;) {
		char *line;
		size_t len;
		kvs_status st = next_line(t, &line, &len);
		if (st == KVS_END) {
			if (t->st.lines_read == 0)
				return kvs_fail(KVS_ERR_PARSE, "%s: empty file (no header and no "
						"requests)", t->path);
			return kvs_fail(KVS_ERR_PARSE, "%s: no header and no requests (only "
					"blank or comment lines)", t->path);
		}
		if (st != KVS_OK)
			return st;
		uint64_t ln = t->lb.lineno;
		if (ln == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
			line += 3; /* UTF-8 byte order mark */
			len -= 3;
		}
		if (ln == 1 && len >= 2 && ((unsigned char)line[0] == 0xff || (unsigned char)line[0] == 0xfe) &&
		    ((unsigned char)line[1] == 0xfe || (unsigned char)line[1] == 0xff) && line[0] != line[1]) {
			t->st.failed_lines++;
			return kvs_fail(KVS_ERR_PARSE, "%s:1: the file is UTF-16 text (byte-order "
					"mark %02X %02X); traces are UTF-8 or ASCII: convert it "
					"(iconv -f UTF-16 -t UTF-8)", t->path,
					(unsigned char)line[0], (unsigned char)line[1]);
		}
		if (memchr(line, '\0', len)) {
			t->st.failed_lines++;
			return kvs_fail(KVS_ERR_PARSE, "%s:%llu: the line holds NUL bytes: a "
					"UTF-16 text or a binary file, not a UTF-8 trace", t->path,
					(unsigned long long)ln);
		}
		if (is_blank(line, len)) {
			t->st.blank_lines++;
			continue;
		}
		if (line[0] == '#') {
			t->st.header_lines++;
			continue;
		}
		size_t sp = 0;
		while (sp < len && (line[sp] == ' ' || line[sp] == '\t'))
			sp++;
		if (line[sp] == '[') {
			/* one JSON document, not a line per request: ShareGPT and
			 * similar datasets hold conversations as text, without
			 * arrival times or token counts */
			t->st.failed_lines++;
			bool sharegpt = has_text(line, len, "\"conversations\"") ||
					has_text(line, len, "\"from\"") || len <= sp + 2;
			return kvs_fail(KVS_ERR_PARSE, "%s:%llu: a JSON array%s, not a request "
					"trace: kvsim reads one request per line (CSV, or a "
					"JSON object per line). A dataset of prompts such as "
					"ShareGPT has text, not arrival times and token counts: "
					"tokenize it into arrival_s,prompt_tokens,output_tokens "
					"rows, or let 'kvsim gen --prompt-len trace:FILE.csv' "
					"draw arrivals", t->path, (unsigned long long)ln,
					sharegpt ? " (a ShareGPT conversation file?)" : "");
		}
		bool json_fmt = t->o.format == KVS_TRACE_MOONCAKE ||
				t->o.format == KVS_TRACE_NATIVE_JSONL;
		if (line[sp] == '{' && (t->o.format == KVS_TRACE_AUTO || json_fmt))
			return detect_json(t, line, len, ln);
		if (json_fmt) {
			t->st.failed_lines++;
			return kvs_fail(KVS_ERR_PARSE, "%s:%llu: json: expected a JSON object per "
					"line for --format %s, got %s", t->path,
					(unsigned long long)ln, kvs_trace_format_name(t->o.format),
					kvs_trace_quote(line, len));
		}
		return detect_csv(t, line, len, ln);
	}
}

/* ---- row decoding ---------------------------------------------------------------*/

static bool slot_reserve_ids(slot *s, uint32_t n)
{
	return KVS_ARRAY_RESERVE(s->ids, s->ids_cap, n, 64);
}

/* The unsigned fields of a request line, read in this order by both
 * decoders (the priority, signed, comes after them): the largest value each
 * takes, and whether the line must give it. */
static const struct {
	int c;
	uint64_t max;
	bool required;
} ufields[] = {
	{ C_PROMPT, UINT32_MAX, true }, { C_OUTPUT, UINT32_MAX, true },
	{ C_TURN, UINT32_MAX, false }, { C_SAMPLES, UINT32_MAX, false },
	{ C_SESSION, UINT64_MAX, false }, { C_HBLOCK, 1u << 20, false },
};

/* The unsigned fields as a line without them leaves them. */
static void ufields_default(const kvs_trace *t, slot *s)
{
	s->prompt = s->output = s->turn = 0;
	s->samples = 1;
	s->session = 0;
	s->id_block = t->fmt == KVS_TRACE_MOONCAKE ? MOONCAKE_BLOCK : 0;
}

static void ufield_set(slot *s, int c, uint64_t x)
{
	switch (c) {
	case C_PROMPT: s->prompt = (uint32_t)x; break;
	case C_OUTPUT: s->output = (uint32_t)x; break;
	case C_TURN: s->turn = (uint32_t)x; break;
	case C_SAMPLES: s->samples = (uint32_t)x; break;
	case C_SESSION: s->session = x; break;
	default: s->id_block = (uint32_t)x; break; /* C_HBLOCK */
	}
}

/* Checks shared by every format once the fields are in the slot.
 * Returns KVS_OK with *keep false when the row was skipped. */
static kvs_status validate(kvs_trace *t, slot *s, bool *keep)
{
	uint32_t hblock = s->id_block;
	*keep = false;
	if (s->prompt == 0)
		return bad_line(t, s->line, t->colname[C_PROMPT], "must be at least 1 token");
	if (s->output == 0) {
		if (t->fmt == KVS_TRACE_BURSTGPT) {
			if (t->o.skip_failed) {
				t->st.skipped[KVS_SKIP_FAILED]++;
				return KVS_OK;
			}
		} else {
			return bad_line(t, s->line, t->colname[C_OUTPUT],
					"must be at least 1 token");
		}
	}
	if (s->samples == 0)
		return bad_line(t, s->line, t->colname[C_SAMPLES], "must be at least 1");
	if (s->nids > 0) {
		if (hblock == 0)
			return bad_line(t, s->line, t->colname[C_HBLOCK],
					"missing or 0 while hash_ids are given");
		if (t->src_block == 0) {
			t->src_block = hblock;
		} else if (hblock != t->src_block) {
			return bad_line(t, s->line, t->colname[C_HBLOCK],
					"%u differs from the %u of earlier lines (one block size "
					"per trace)", hblock, t->src_block);
		}
		uint64_t blocks = kvs_div_ceil(s->prompt, hblock);
		if (s->nids > blocks)
			return bad_line(t, s->line, t->colname[C_HASHES],
					"%u ids for %u prompt tokens, more than the %llu blocks "
					"of %u tokens", s->nids, s->prompt,
					(unsigned long long)blocks, hblock);
	}
	*keep = true;
	return KVS_OK;
}

static const char *parse_time(const kvs_trace *t, const char *v, size_t n, int64_t *ns)
{
	switch (t->lay->tk) {
	case T_DATETIME: return kvs_parse_field_datetime_ns(v, n, ns);
	case T_MS: return kvs_parse_field_ms_ns(v, n, ns);
	default: return kvs_parse_field_seconds_ns(v, n, ns);
	}
}

static kvs_status decode_csv(kvs_trace *t, const char *line, size_t len, slot *s,
			     bool *keep)
{
	*keep = false;
	const char *why = csv_split(t, line, len);
	if (why == csv_nomem)
		return kvs_fail(KVS_ERR_NOMEM, "%s:%llu: %s", t->path,
				(unsigned long long)s->line, why);
	if (why)
		return bad_line(t, s->line, "row", "%s", why);
	if (t->nf != t->ncols)
		return bad_line(t, s->line, "row", "%u fields, expected %u%s", t->nf, t->ncols,
				t->st.header_lines ? " as in the header" : "");
	size_t n;
	const char *v;
	s->t_ns = 0;   /* vidur-lengths: no arrival column */
	if (t->col[C_TIME] >= 0 && (v = field(t, C_TIME, &n), (why = parse_time(t, v, n, &s->t_ns))))
		return bad_line(t, s->line, t->colname[C_TIME], "%s, got %s", why,
				kvs_trace_quote(v, n));
	if (t->fmt == KVS_TRACE_VIDUR_DATED) {
		/* Vidur replays the rows of one Date (its Time restarts each
		 * day): a file holds one */
		v = field(t, C_DATE, &n);
		if (n == 0 || n >= sizeof t->date)
			return bad_line(t, s->line, t->colname[C_DATE], "expected a date of 1 to "
					"%zu characters, got %s", sizeof t->date - 1,
					kvs_trace_quote(v, n));
		if (!t->date[0]) {
			memcpy(t->date, v, n);
			t->date[n] = '\0';
			t->date_line = s->line;
		} else if (strlen(t->date) != n || memcmp(t->date, v, n) != 0) {
			return bad_line(t, s->line, t->colname[C_DATE], "%s differs from %s of "
					"line %llu: Vidur replays one date at a time (its Time "
					"restarts each day); keep one date's rows per file",
					kvs_trace_quote(v, n), t->date,
					(unsigned long long)t->date_line);
		}
	}
	ufields_default(t, s);
	for (size_t i = 0; i < KVS_ARRAY_LEN(ufields); i++) {
		int c = ufields[i].c;
		if (t->col[c] < 0)
			continue;
		v = field(t, c, &n);
		if (n == 0 && !ufields[i].required)
			continue; /* optional column left empty */
		uint64_t x;
		if ((why = kvs_parse_field_u64(v, n, ufields[i].max, &x)))
			return bad_line(t, s->line, t->colname[c], "%s, got %s", why,
					kvs_trace_quote(v, n));
		ufield_set(s, c, x);
	}
	s->priority = 0;
	if (t->col[C_PRIORITY] >= 0 && (v = field(t, C_PRIORITY, &n), n > 0)) {
		int64_t p;
		if ((why = kvs_parse_field_i64(v, n, INT32_MIN, INT32_MAX, &p)))
			return bad_line(t, s->line, t->colname[C_PRIORITY], "%s, got %s", why,
					kvs_trace_quote(v, n));
		s->priority = (int32_t)p;
	}
	s->nids = 0;
	if (t->col[C_HASHES] >= 0 && (v = field(t, C_HASHES, &n), n > 0)) {
		/* space-separated non-negative integers */
		size_t i = 0;
		while (i < n) {
			while (i < n && v[i] == ' ')
				i++;
			if (i == n)
				break;
			size_t j = i;
			while (j < n && v[j] != ' ')
				j++;
			uint64_t id;
			if ((why = kvs_parse_field_u64(v + i, j - i, UINT64_MAX, &id)))
				return bad_line(t, s->line, t->colname[C_HASHES],
						"id %u: %s, got %s", s->nids + 1, why,
						kvs_trace_quote(v + i, j - i));
			if (!slot_reserve_ids(s, s->nids + 1))
				return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for hash ids", t->path);
			s->ids[s->nids++] = id;
			i = j;
		}
	}
	return validate(t, s, keep);
}

/* Integer (or integral real) JSON member; *present false when absent. */
static const char *json_u64(json_t *obj, const char *key, uint64_t max, bool *present,
			    uint64_t *out)
{
	json_t *v = json_object_get(obj, key);
	*present = v != NULL && !json_is_null(v);
	if (!*present)
		return NULL;
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (x < 0)
			return "negative value";
		if ((uint64_t)x > max)
			return "too large";
		*out = (uint64_t)x;
		return NULL;
	}
	if (json_is_real(v)) {
		double x = json_real_value(v);
		if (x < 0)
			return "negative value";
		if (x != floor(x))
			return "expected an integer, not a fraction";
		/* (double)UINT64_MAX rounds up to 2^64, so the bound is 2^64
		 * itself, exact; below it the conversion is defined */
		if (x >= 0x1p64 || (uint64_t)x > max)
			return "too large";
		*out = (uint64_t)x;
		return NULL;
	}
	return "expected a number";
}

/* Integer JSON member in the 32-bit range, into *out when present. */
static const char *json_i32(json_t *obj, const char *key, int32_t *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_integer(v))
		return "expected an integer";
	json_int_t x = json_integer_value(v);
	if (x < INT32_MIN || x > INT32_MAX)
		return "out of the 32-bit range";
	*out = (int32_t)x;
	return NULL;
}

static kvs_status decode_json(kvs_trace *t, const char *line, size_t len, slot *s,
			      bool *keep)
{
	*keep = false;
	json_error_t e;
	json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e);
	if (!root)
		return bad_line(t, s->line, "json", "%s (column %d)", e.text, e.column);
	kvs_status st = KVS_OK;
	const char *why = NULL;
	const char *const *names = t->lay->names;
	const char *fname = "json";
	bool present;
	uint64_t x;
	if (!json_is_object(root)) {
		st = bad_line(t, s->line, "json", "expected an object, got %s",
			      kvs_trace_quote(line, len));
		goto out;
	}
	/* time */
	fname = names[C_TIME];
	json_t *tv = json_object_get(root, fname);
	if (!tv || json_is_null(tv)) {
		why = "missing";
	} else if (json_is_integer(tv)) {
		json_int_t ti = json_integer_value(tv);
		int64_t unit = t->lay->tk == T_MS ? 1000000 : 1000000000;
		if (ti < 0)
			why = "negative value";
		else if (ti > INT64_MAX / unit)
			why = "too large";
		else
			s->t_ns = (int64_t)ti * unit;
	} else if (json_is_real(tv)) {
		double d = json_real_value(tv) * (t->lay->tk == T_MS ? 1e6 : 1e9);
		if (d < 0)
			why = "negative value";
		else if (!(d < 9.2e18))
			why = "too large";
		else
			s->t_ns = (int64_t)llround(d);
	} else {
		why = "expected a number";
	}
	if (why)
		goto field_err;
	ufields_default(t, s);
	for (size_t i = 0; i < KVS_ARRAY_LEN(ufields); i++) {
		fname = names[ufields[i].c];
		if (!fname)
			continue;
		if ((why = json_u64(root, fname, ufields[i].max, &present, &x)))
			goto field_err;
		if (!present && ufields[i].required) {
			why = "missing";
			goto field_err;
		}
		if (present)
			ufield_set(s, ufields[i].c, x);
	}
	s->priority = 0;
	if ((fname = names[C_PRIORITY]) && (why = json_i32(root, fname, &s->priority)))
		goto field_err;
	s->nids = 0;
	fname = names[C_HASHES];
	json_t *ids = json_object_get(root, fname);
	if (ids && !json_is_null(ids)) {
		if (!json_is_array(ids)) {
			why = "expected an array of integers";
			goto field_err;
		}
		size_t n = json_array_size(ids);
		if (n > UINT32_MAX || !slot_reserve_ids(s, (uint32_t)n)) {
			st = kvs_fail(KVS_ERR_NOMEM, "%s: no memory for hash ids", t->path);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			json_t *iv = json_array_get(ids, i);
			if (!json_is_integer(iv) || json_integer_value(iv) < 0) {
				st = bad_line(t, s->line, fname, "element %zu: expected a "
					      "non-negative integer", i);
				goto out;
			}
			s->ids[i] = (uint64_t)json_integer_value(iv);
		}
		s->nids = (uint32_t)n;
	}
	json_decref(root);
	return validate(t, s, keep);
field_err:
	st = bad_line(t, s->line, fname, "%s", why);
out:
	json_decref(root);
	return st;
}

/* ---- sort window (binary heap on (t_ns, seq)) ----------------------------------*/

/* The heap holds slot pointers: compare what they point to. */
static inline bool slot_before(slot *const *a, slot *const *b)
{
	return (*a)->t_ns < (*b)->t_ns || ((*a)->t_ns == (*b)->t_ns && (*a)->seq < (*b)->seq);
}

KVS_HEAP_DEFINE(window, slot *, slot_before)

static void heap_push(kvs_trace *t, slot *s)
{
	window_push(t->heap, &t->heap_n, s);
}

static slot *heap_pop(kvs_trace *t)
{
	return window_pop(t->heap, &t->heap_n);
}

/* Read lines until one request is decoded into a free slot and pushed, or
 * the end.  KVS_OK with *pushed. */
static kvs_status read_one(kvs_trace *t, bool *pushed)
{
	*pushed = false;
	slot *s = t->free_slots[t->nfree - 1];
	for (;;) {
		char *line;
		size_t len;
		uint64_t ln;
		if (t->pending) {
			line = t->pending;
			len = t->pending_len;
			ln = t->pending_line;
		} else {
			kvs_status st = next_line(t, &line, &len);
			if (st == KVS_END) {
				t->eof = true;
				return KVS_OK;
			}
			if (st != KVS_OK)
				return st;
			ln = t->lb.lineno;
		}
		kvs_status st;
		bool keep = false;
		if (KVS_UNLIKELY(len == 0 || is_blank(line, len))) {
			t->st.blank_lines++;
			st = KVS_OK;
		} else if (KVS_UNLIKELY(line[0] == '#')) {
			t->st.header_lines++;
			st = KVS_OK;
		} else {
			s->line = ln;
			st = t->json ? decode_json(t, line, len, s, &keep)
				     : decode_csv(t, line, len, s, &keep);
		}
		if (t->pending) {
			kvs_free(t->pending);
			t->pending = NULL;
		}
		if (st != KVS_OK)
			return st;
		if (keep) {
			s->seq = t->seq++;
			if (t->have_max_in && s->t_ns < t->max_in_ns)
				t->st.reordered++;
			if (!t->have_max_in || s->t_ns > t->max_in_ns) {
				t->max_in_ns = s->t_ns;
				t->have_max_in = true;
			}
			t->nfree--;
			heap_push(t, s);
			*pushed = true;
			return KVS_OK;
		}
	}
}

/* ---- hash ids ----------------------------------------------------------------------*/

/* Re-grains n chained hash ids of src_block tokens to block_size: split,
 * block_size divides src_block and each id becomes r = src_block /
 * block_size sub-block ids id * r + part; merge, block_size is r times
 * src_block and a block takes the id of its last source block (a chained id
 * names the whole prefix).  Only the prompt's full blocks are kept. */
static kvs_status regrain(const uint64_t *ids, uint32_t n, uint32_t src_block,
			  uint32_t prompt_tokens, uint32_t block_size, bool split,
			  uint64_t *out, uint32_t *nout)
{
	uint32_t fine = split ? block_size : src_block;
	uint32_t coarse = split ? src_block : block_size;
	if (fine == 0 || coarse == 0 || coarse % fine != 0)
		return split ? kvs_fail(KVS_ERR_INVALID, "block size %u does not divide the "
					"trace's %u-token hash blocks (use a divisor of %u, "
					"e.g. 16)", block_size, src_block, src_block)
			     : kvs_fail(KVS_ERR_INVALID, "block size %u is not a multiple of "
					"the trace's %u-token hash blocks", block_size, src_block);
	uint64_t r = coarse / fine;
	uint64_t full = prompt_tokens / block_size;
	uint64_t have = split ? (uint64_t)n * r : n / r;
	if (full > have)
		full = have;
	for (uint64_t b = 0; b < full; b++) {
		uint64_t id = split ? ids[b / r] : ids[(b + 1) * r - 1], v = id;
		if (split && (kvs_mul_overflow(id, r, &v) || kvs_add_overflow(v, b % r, &v)))
			return kvs_fail(KVS_ERR_OVERFLOW,
					"hash id %llu is too large to split into %llu sub-blocks",
					(unsigned long long)id, (unsigned long long)r);
		out[b] = v;
	}
	*nout = (uint32_t)full;
	return KVS_OK;
}

kvs_status kvs_trace_split_hashes(const uint64_t *ids, uint32_t n, uint32_t src_block,
				  uint32_t prompt_tokens, uint32_t block_size,
				  uint64_t *out, uint32_t *nout)
{
	return regrain(ids, n, src_block, prompt_tokens, block_size, true, out, nout);
}

kvs_status kvs_trace_merge_hashes(const uint64_t *ids, uint32_t n, uint32_t src_block,
				  uint32_t prompt_tokens, uint32_t block_size,
				  uint64_t *out, uint32_t *nout)
{
	return regrain(ids, n, src_block, prompt_tokens, block_size, false, out, nout);
}

static kvs_status yield_hashes(kvs_trace *t, const slot *s, uint32_t prompt,
			       kvs_request *req)
{
	req->hash_ids = NULL;
	req->num_hash_ids = 0;
	req->hash_block_tokens = 0;
	if (s->nids == 0)
		return KVS_OK;
	uint32_t src = s->id_block;
	uint32_t bs = t->o.block_size ? t->o.block_size : src;
	uint64_t cap = bs <= src ? (uint64_t)s->nids * (src / bs) : s->nids;
	if (cap > t->out_cap) {
		uint64_t *p = kvs_reallocarray(t->out_ids, cap, sizeof *p);
		if (!p)
			return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for hash ids", t->path);
		t->out_ids = p;
		t->out_cap = (uint32_t)cap;
	}
	uint32_t nout;
	kvs_status st;
	if (bs == src && !t->o.block_size && t->o.hash_partial_block) {
		/* as in the file, the partial last block's id included: the
		 * consumer re-splits them and keeps its own full blocks */
		uint64_t cover = kvs_div_ceil((uint64_t)prompt, src);
		nout = s->nids < cover ? s->nids : (uint32_t)cover;
		memcpy(t->out_ids, s->ids, (size_t)nout * sizeof *t->out_ids);
		st = KVS_OK;
	} else if (bs == src || src % bs == 0) {
		st = kvs_trace_split_hashes(s->ids, s->nids, src, prompt, bs, t->out_ids, &nout);
	} else if (bs % src == 0) {
		st = kvs_trace_merge_hashes(s->ids, s->nids, src, prompt, bs, t->out_ids, &nout);
	} else {
		/* as open_impl says it when the file's block size is known
		 * there; the path and line come with the wrap below */
		st = kvs_fail(KVS_ERR_INVALID,
			      "--block-size %u neither divides nor is a multiple of the "
			      "trace's %u-token hash blocks (use a power of two)", bs, src);
	}
	if (st != KVS_OK)
		return kvs_fail_wrap(st, "%s:%llu: %s", t->path, (unsigned long long)s->line,
				     t->lay->names[C_HASHES] ? t->lay->names[C_HASHES] : "hash_ids");
	req->hash_ids = nout ? t->out_ids : NULL;
	req->num_hash_ids = nout;
	req->hash_block_tokens = bs;
	t->st.hashed++;
	return KVS_OK;
}

/* ---- open / next / close -----------------------------------------------------------*/

static kvs_status check_opts(const kvs_trace_opts *o)
{
	if ((unsigned)o->format >= KVS_TRACE_FORMAT_COUNT_)
		return kvs_fail(KVS_ERR_INVALID, "trace format %d is unknown", (int)o->format);
	if (!(o->time_scale > 0) || !isfinite(o->time_scale))
		return kvs_fail(KVS_ERR_INVALID, "time scale must be a positive number, got %g",
				o->time_scale);
	if (o->rate < 0 || !isfinite(o->rate))
		return kvs_fail(KVS_ERR_INVALID, "rate must be positive, got %g", o->rate);
	if (o->window_start_s < 0 || !isfinite(o->window_start_s))
		return kvs_fail(KVS_ERR_INVALID, "window start must be >= 0 s, got %g",
				o->window_start_s);
	if (o->window_end_s > 0 && o->window_end_s <= o->window_start_s)
		return kvs_fail(KVS_ERR_INVALID, "window end %g s is not after its start %g s",
				o->window_end_s, o->window_start_s);
	if (o->sort_window > (1u << 24))
		return kvs_fail(KVS_ERR_INVALID, "sort window %u is over the limit of %u "
				"requests", o->sort_window, 1u << 24);
	if (o->block_size > (1u << 20))
		return kvs_fail(KVS_ERR_INVALID, "block size %u is too large", o->block_size);
	if ((unsigned)o->overlong > KVS_OVERLONG_TRUNCATE ||
	    (unsigned)o->rate_mode > KVS_RATE_POISSON)
		return kvs_fail(KVS_ERR_INVALID, "unknown overlong or rate mode");
	/* Poisson re-timing draws gaps at the rate: without one it would do
	 * nothing, which a user who asked for it should hear */
	if (o->rate_mode == KVS_RATE_POISSON && !(o->rate > 0))
		return kvs_fail(KVS_ERR_INVALID, "--rate-mode poisson re-times arrivals to "
				"--rate R: give --rate (--time-scale keeps the trace's own "
				"gaps)");
	/* a truncated request keeps one prompt and one output token */
	if (o->overlong == KVS_OVERLONG_TRUNCATE && o->max_model_len == 1)
		return kvs_fail(KVS_ERR_INVALID, "max model len 1 cannot hold a prompt token "
				"and an output token: truncating needs at least 2");
	return KVS_OK;
}

/* Mean rate of the requests this reader would yield, by a first pass over
 * the input with the same options but no re-timing: (n - 1) / span.  The
 * pass reads from f, which is seekable (a regular file or the spool below),
 * and leaves it where it started. */
static kvs_status source_rate(const char *path, FILE *f, const kvs_trace_opts *o,
			      double *rate)
{
	off_t start = ftello(f);
	if (start < 0)
		return kvs_fail(KVS_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
	kvs_trace_opts o2 = *o;
	o2.rate = 0;
	o2.time_scale = 1.0;
	o2.block_size = 0;
	o2.max_model_len = 0;
	kvs_trace *t;
	kvs_status st = kvs_trace_open_stream(f, path, &o2, &t);
	if (st != KVS_OK)
		return st;
	kvs_request r;
	uint64_t n = 0;
	double first = 0, last = 0;
	if (t->lay && t->lay->tk == T_NONE) {
		/* no arrival times: --rate draws a Poisson process, no first pass */
		kvs_trace_close(t);
		*rate = 0;
		if (fseeko(f, start, SEEK_SET) != 0)
			return kvs_fail(KVS_ERR_IO, "%s: cannot seek back: %s", path, strerror(errno));
		return KVS_OK;
	}
	while ((st = kvs_trace_next(t, &r)) == KVS_OK) {
		if (n == 0)
			first = r.arrival_s;
		last = r.arrival_s;
		n++;
	}
	kvs_trace_close(t);
	if (st != KVS_END)
		return st;
	if (fseeko(f, start, SEEK_SET) != 0)
		return kvs_fail(KVS_ERR_IO, "%s: cannot seek back: %s", path, strerror(errno));
	if (n < 2 || !(last > first))
		return kvs_fail(KVS_ERR_INVALID,
				"%s: --rate: the trace has %llu request(s) spanning %g s, so it "
				"has no mean rate to rescale; use --rate-mode poisson", path,
				(unsigned long long)n, last - first);
	*rate = (double)(n - 1) / (last - first);
	return KVS_OK;
}

/* A stream that can be read twice: f itself when it is a seekable regular
 * file, else a copy of its bytes in an anonymous temporary file (tmpfile(),
 * under TMPDIR; removed on close), so that pipes, FIFOs and standard input
 * are read once.  *spool is set when the copy is made. */
static kvs_status rereadable(const char *path, FILE *f, FILE **out, bool *spool)
{
	struct stat sb;
	*spool = false;
	if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && ftello(f) >= 0) {
		*out = f;
		return KVS_OK;
	}
	FILE *tmp = tmpfile();
	if (!tmp)
		return kvs_fail(KVS_ERR_IO, "%s: --rate needs a copy of this stream to read "
				"its mean rate first, and no temporary file could be made: %s",
				path, strerror(errno));
	char buf[64 * 1024];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		if (fwrite(buf, 1, got, tmp) != got) {
			int e = errno;
			fclose(tmp);
			return kvs_fail(KVS_ERR_IO, "%s: --rate: copying the stream to a "
					"temporary file failed: %s", path, strerror(e));
		}
	if (ferror(f)) {
		int e = errno;
		fclose(tmp);
		return kvs_fail(KVS_ERR_IO, "%s: read error: %s", path, strerror(e));
	}
	if (fflush(tmp) != 0 || fseeko(tmp, 0, SEEK_SET) != 0) {
		int e = errno;
		fclose(tmp);
		return kvs_fail(KVS_ERR_IO, "%s: --rate: temporary copy failed: %s", path,
				strerror(e));
	}
	*out = tmp;
	*spool = true;
	return KVS_OK;
}

static kvs_status open_impl(const char *path, FILE *stream, const kvs_trace_opts *opts,
			    kvs_trace **out)
{
	kvs_trace_opts dflt;
	if (!opts) {
		kvs_trace_opts_defaults(&dflt);
		opts = &dflt;
	}
	if (!path || !*path)
		return kvs_fail(KVS_ERR_INVALID, "trace path is empty");
	kvs_status st = check_opts(opts);
	if (st != KVS_OK)
		return st;
	kvs_trace *t = kvs_calloc(1, sizeof *t);
	if (!t)
		return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for a reader", path);
	t->o = *opts;
	t->path = kvs_strdup(path);
	t->nslots = opts->sort_window + 1;
	t->slots = kvs_calloc(t->nslots, sizeof *t->slots);
	t->heap = kvs_calloc(t->nslots, sizeof *t->heap);
	t->free_slots = kvs_calloc(t->nslots, sizeof *t->free_slots);
	if (!t->path || !t->slots || !t->heap || !t->free_slots) {
		kvs_trace_close(t);
		return kvs_fail(KVS_ERR_NOMEM, "%s: no memory for a reader", path);
	}
	for (uint32_t i = 0; i < t->nslots; i++)
		t->free_slots[i] = &t->slots[i];
	t->nfree = t->nslots;
	t->factor = opts->time_scale;
	kvs_rng_seed(&t->rng, opts->seed);
	csv_reset(t);
	if (opts->rate > 0 && opts->rate_mode == KVS_RATE_KEEP_SHAPE) {
		/* the mean rate needs a first pass: over the same open file, or
		 * over a spooled copy of a pipe, never by opening the path again */
		FILE *in = stream ? stream : strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
		if (!in) {
			st = kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
		} else {
			FILE *rf = NULL;
			bool spool = false;
			double r = 0;
			st = rereadable(t->path, in, &rf, &spool);
			if (st == KVS_OK)
				st = source_rate(t->path, rf, opts, &r);
			bool opened = in != stream && in != stdin;
			if (st == KVS_OK) {
				t->factor = r / opts->rate;
				st = kvs_linebuf_open(&t->lb, t->path, rf);
			}
			if (st == KVS_OK) {
				/* the reader owns what it opened: the spool, or the file */
				t->lb.own = spool || opened;
				if (spool && opened)
					fclose(in);
			} else {
				if (spool)
					fclose(rf);
				if (opened)
					fclose(in);
			}
		}
	} else {
		st = kvs_linebuf_open(&t->lb, t->path, stream);
	}
	if (st == KVS_OK)
		st = detect(t);
	if (st == KVS_OK && t->o.block_size && t->src_block &&
	    t->src_block % t->o.block_size != 0 && t->o.block_size % t->src_block != 0)
		st = kvs_fail(KVS_ERR_INVALID,
			      "%s: --block-size %u neither divides nor is a multiple of the "
			      "trace's %u-token hash blocks (use a power of two)", path,
			      t->o.block_size, t->src_block);
	if (st != KVS_OK) {
		kvs_trace_close(t);
		return st;
	}
	*out = t;
	return KVS_OK;
}

kvs_status kvs_trace_open(const char *path, const kvs_trace_opts *opts, kvs_trace **out)
{
	return open_impl(path, NULL, opts, out);
}

kvs_status kvs_trace_open_stream(FILE *stream, const char *name,
				 const kvs_trace_opts *opts, kvs_trace **out)
{
	return open_impl(name, stream, opts, out);
}

/* Lines read ahead in the sort window when reading stops early. */
static uint64_t drop_pending(kvs_trace *t)
{
	uint64_t n = t->heap_n;
	while (t->heap_n > 0)
		t->free_slots[t->nfree++] = heap_pop(t);
	return n;
}

kvs_status kvs_trace_next(kvs_trace *t, kvs_request *out)
{
	kvs_request q, *req = &q; /* *out is untouched on failure */
	if (t->err != KVS_OK)
		return kvs_fail(t->err, "%s", t->err_msg);
	for (;;) {
		if (t->done)
			return KVS_END;
		if (t->o.limit && t->st.requests >= t->o.limit) {
			t->st.filtered_limit += drop_pending(t);
			t->done = true;
			return KVS_END;
		}
		while (t->nfree > 0 && !t->eof) {
			bool pushed;
			kvs_status st = read_one(t, &pushed);
			if (st != KVS_OK) {
				t->st.failed_lines += drop_pending(t);
				return sticky(t, st);
			}
		}
		if (t->heap_n == 0) {
			t->done = true;
			return KVS_END;
		}
		slot *s = heap_pop(t);
		t->free_slots[t->nfree++] = s;
		if (t->have_last && s->t_ns < t->last_t_ns) {
			t->st.failed_lines += 1 + drop_pending(t);
			double d = (double)(t->last_t_ns - s->t_ns) / 1e9;
			if (t->o.sort_window == 0)
				kvs_fail(KVS_ERR_PARSE,
					 "%s:%llu: %s: arrivals are not sorted: %.6f s earlier "
					 "than line %llu (use --sort-window N to reorder within N "
					 "requests)", t->path, (unsigned long long)s->line,
					 t->colname[C_TIME], d, (unsigned long long)t->last_line);
			else
				kvs_fail(KVS_ERR_PARSE,
					 "%s:%llu: %s: %.6f s earlier than line %llu, out "
					 "of order by more than the sort window of %u requests "
					 "(raise --sort-window)", t->path,
					 (unsigned long long)s->line, t->colname[C_TIME], d,
					 (unsigned long long)t->last_line, t->o.sort_window);
			return sticky(t, KVS_ERR_PARSE);
		}
		t->have_last = true;
		t->last_t_ns = s->t_ns;
		t->last_line = s->line;
		if (!t->have_base) {
			t->have_base = true;
			t->base_ns = t->lay->absolute ? s->t_ns : 0;
		}
		double rel = (double)(s->t_ns - t->base_ns) / 1e9;
		if (rel < t->o.window_start_s) {
			t->st.filtered_window++;
			continue;
		}
		if (t->o.window_end_s > 0 && rel >= t->o.window_end_s) {
			/* sorted from here on: stop reading */
			t->st.filtered_window += 1 + drop_pending(t);
			t->done = true;
			return KVS_END;
		}
		memset(req, 0, sizeof *req);
		/* without arrival times there is no shape to keep: --rate is
		 * a Poisson process (Vidur's default interval generator) */
		if (t->o.rate > 0 && (t->o.rate_mode == KVS_RATE_POISSON || t->lay->tk == T_NONE)) {
			if (t->st.requests > 0)
				t->poisson_t += kvs_rng_exp(&t->rng, t->o.rate);
			req->arrival_s = t->poisson_t;
		} else {
			req->arrival_s = (rel - t->o.window_start_s) * t->factor;
		}
		uint32_t prompt = s->prompt, output = s->output;
		uint32_t m = t->o.max_model_len;
		if (m > 0 && (uint64_t)prompt + output > m) {
			if (t->o.overlong == KVS_OVERLONG_TRUNCATE) {
				/* keep the head of the prompt (its prefix hashes stay
				 * valid); the output is cut only when it alone does not
				 * leave one prompt token, and m >= 2 (check_opts) leaves
				 * it one token at least */
				if (output > m - 1)
					output = m - 1;
				if (prompt > m - output)
					prompt = m - output;
				req->truncated = true;
				t->st.truncated++;
			} else {
				req->over_max_len = true;
				t->st.over_max_len++;
			}
		}
		kvs_status st = yield_hashes(t, s, prompt, req);
		if (st != KVS_OK) {
			t->st.failed_lines += 1 + drop_pending(t);
			return sticky(t, st);
		}
		req->index = t->st.requests;
		req->line = s->line;
		req->prompt_tokens = prompt;
		req->output_tokens = output;
		if (output == 0)   /* only a BurstGPT failure row passes validate so */
			t->st.kept_failed++;
		req->num_samples = s->samples;
		req->priority = s->priority;
		req->session_id = s->session;
		req->turn = s->turn;
		t->st.requests++;
		*out = q;
		return KVS_OK;
	}
}

const kvs_trace_stats *kvs_trace_get_stats(const kvs_trace *t)
{
	return &t->st;
}

kvs_trace_format kvs_trace_get_format(const kvs_trace *t)
{
	return t->fmt;
}

const char *kvs_trace_path(const kvs_trace *t)
{
	return t->path;
}

const char *kvs_trace_first_skip(const kvs_trace *t)
{
	return t->first_skip;
}

uint32_t kvs_trace_source_block(const kvs_trace *t)
{
	return t->src_block;
}

void kvs_trace_close(kvs_trace *t)
{
	if (!t)
		return;
	kvs_linebuf_close(&t->lb);
	if (t->csv_ready)
		csv_free(&t->csv);
	if (t->slots)
		for (uint32_t i = 0; i < t->nslots; i++)
			kvs_free(t->slots[i].ids);
	kvs_free(t->slots);
	kvs_free(t->heap);
	kvs_free(t->free_slots);
	kvs_free(t->fbuf);
	kvs_free(t->pending);
	kvs_free(t->out_ids);
	kvs_free(t->path);
	kvs_free(t);
}

/* ---- the bundled default trace ----------------------------------------------------*/

#define DEFAULT_TRACE "azure-conv-sample.csv"

const char *kvs_trace_default_path(void)
{
	static _Thread_local char buf[4096];
	const char *env = getenv("KVSIM_DATADIR");
	if (env && *env) {
		snprintf(buf, sizeof buf, "%s/traces/%s", env, DEFAULT_TRACE);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	snprintf(buf, sizeof buf, "%s/traces/%s", KVS_DATADIR, DEFAULT_TRACE);
	if (access(buf, R_OK) == 0)
		return buf;
	snprintf(buf, sizeof buf, "%s/traces/samples/%s", KVS_SOURCE_ROOT, DEFAULT_TRACE);
	return buf;
}
