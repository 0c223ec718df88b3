/*
 * profile.c - measured operator profiles in the Vidur format, read into
 * the step-time model's configuration (docs/COST-MODEL.md, "Measured
 * profiles").
 *
 *   DIR/mlp.csv        one row per (num_tokens, num_tensor_parallel_workers):
 *                      per-layer times of the non-attention operators, in ms
 *   DIR/attention.csv  (optional) one row per (batch_size, kv_cache_size,
 *                      prefill_chunk_size, is_prefill): attention times per
 *                      layer and rank, in ms; kept as a grid (cost.c)
 *   <root>/network/<gpu>_pairwise_nvlink/all_reduce.csv
 *                      all-reduce time by message size and rank count, found
 *                      from DIR = <root>/compute/<gpu>/<org>/<model>
 *
 * The files are plain CSV with a header (no quoting).  Only the cells a
 * row is used for are read, each by the rule of its column: counts are
 * plain decimal integers (int_cell), times decimal numbers >= 0 read by
 * common/num.h (time_cell: no hex, inf or nan), and anything else is an
 * error naming the file, line and column.  The other cells are not read:
 * the text columns (is_prefill aside, which is read as a flag), the
 * statistics other than the median, and the other phase's times in
 * attention.csv, which Vidur leaves empty (a decode row has no prefill
 * time).  Only the medians are kept; repeated num_tokens are averaged.  No
 * fitting: kvs_cost_step interpolates between the points.
 */
#include "kvs_config.h"
#include "sim_internal.h"

#include "common/array.h"
#include "common/num.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_COLS 128
#define LINE_MAX_BYTES 16384

/* The per-layer operators summed into one layer's time. */
static const char *const layer_ops[] = {
	"input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
	"post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add",
};

typedef struct csv_file {
	const char *path;
	FILE *f;
	char line[LINE_MAX_BYTES];
	char *names[MAX_COLS];
	int ncols;
	unsigned long lineno;
	char header[LINE_MAX_BYTES];
	char *cells[MAX_COLS];      /* the last row's text, field by field */
} csv_file;

static int split(char *s, char **out, int max)
{
	int n = 0;
	char *p = s;
	for (;;) {
		if (n == max)
			return -1;
		out[n++] = p;
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = '\0';
		p = c + 1;
	}
	char *e = out[n - 1] + strlen(out[n - 1]);
	while (e > out[n - 1] && (e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return n;
}

static kvs_status csv_open(csv_file *c, const char *path)
{
	memset(c, 0, sizeof *c);
	c->path = path;
	c->f = fopen(path, "r");
	if (!c->f)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
	if (!fgets(c->header, sizeof c->header, c->f)) {
		fclose(c->f);
		return kvs_fail(KVS_ERR_PARSE, "%s: empty file (expected a CSV header)", path);
	}
	c->lineno = 1;
	c->ncols = split(c->header, c->names, MAX_COLS);
	if (c->ncols < 0) {
		fclose(c->f);
		return kvs_fail(KVS_ERR_PARSE, "%s:1: more than %d columns", path, MAX_COLS);
	}
	return KVS_OK;
}

static int csv_col(const csv_file *c, const char *name)
{
	for (int i = 0; i < c->ncols; i++)
		if (strcmp(c->names[i], name) == 0)
			return i;
	return -1;
}

static kvs_status need_col(const csv_file *c, const char *name, int *out)
{
	*out = csv_col(c, name);
	if (*out < 0)
		return kvs_fail(KVS_ERR_PARSE, "%s:1: missing column '%s'", c->path, name);
	return KVS_OK;
}

/* Next data row, split into c->cells; KVS_END at the end of the file. */
static kvs_status csv_row(csv_file *c)
{
	char **cells = c->cells;
	for (;;) {
		if (!fgets(c->line, sizeof c->line, c->f))
			return ferror(c->f) ? kvs_fail(KVS_ERR_IO, "%s: read error", c->path)
					    : KVS_END;
		c->lineno++;
		if (!strchr(c->line, '\n') && !feof(c->f))
			return kvs_fail(KVS_ERR_PARSE, "%s:%lu: line longer than %d bytes",
					c->path, c->lineno, LINE_MAX_BYTES);
		if (c->line[0] == '\n' || c->line[0] == '\r' || c->line[0] == '\0')
			continue;
		int n = split(c->line, cells, MAX_COLS);
		if (n != c->ncols)
			return kvs_fail(KVS_ERR_PARSE, "%s:%lu: %d fields, the header has %d",
					c->path, c->lineno, n, c->ncols);
		return KVS_OK;
	}
}

/* An operator time past an hour (in the file's milliseconds) is no
 * measurement: the step-time model's own bound (--step-time-linear) */
#define PROFILE_MAX_MS 3.6e6

/* The current row's cell col as a time (*out, in the file's milliseconds):
 * a decimal number from 0 to an hour by common/num.h's rule, so that hex
 * ("0x1p-3"), "inf", "nan", an empty cell, text after the number or an
 * absurd time is refused rather than read as something else. */
static kvs_status time_cell(const csv_file *c, int col, double *out)
{
	const char *s = c->cells[col];
	double v;
	if (!kvs_parse_decimal(s, &v) || v < 0 || v > PROFILE_MAX_MS)
		return kvs_fail(KVS_ERR_PARSE, "%s:%lu: column %d ('%s'): expected a decimal "
				"number from 0 to 3600000 (milliseconds), got %s%.64s%s%s", c->path,
				c->lineno, col + 1, c->names[col], *s ? "'" : "an empty cell",
				s, strlen(s) > 64 ? "..." : "", *s ? "'" : "");
	*out = v;
	return KVS_OK;
}

/* The current row's cell col as an integer in [lo, hi] (*out, and vals[col]
 * set to it, for the caller's use of the row): decimal digits only, so that
 * a fraction, a sign, an exponent, hex or a value past hi is refused rather
 * than converted. */
static kvs_status int_cell(const csv_file *c, double *vals, int col, uint64_t lo,
			   uint64_t hi, uint64_t *out)
{
	const char *s = c->cells[col];
	uint64_t v = 0;
	bool ok = *s != '\0';
	for (const char *p = s; ok && *p; p++) {
		unsigned d = (unsigned)(*p - '0');
		ok = d <= 9 && v <= (UINT64_MAX - d) / 10;
		v = v * 10 + d;
	}
	if (!ok || v < lo || v > hi) {
		char range[48] = "";
		if (hi < UINT64_MAX)
			snprintf(range, sizeof range, " <= %llu", (unsigned long long)hi);
		return kvs_fail(KVS_ERR_PARSE, "%s:%lu: column %d ('%s'): expected %s%s, "
				"got '%s'", c->path, c->lineno, col + 1, c->names[col],
				lo ? "a positive integer" : "an integer >= 0", range, s);
	}
	vals[col] = (double)v;
	if (out)
		*out = v;
	return KVS_OK;
}

/* A model-shape cell (a positive 32-bit integer) into *shape; every row read
 * must agree on it (have: an earlier row set *shape). */
static kvs_status shape_cell(const csv_file *c, double *vals, int col, bool have,
			     uint32_t *shape)
{
	uint64_t v;
	kvs_status st = int_cell(c, vals, col, 1, UINT32_MAX, &v);
	if (st != KVS_OK)
		return st;
	if (have && v != *shape)
		return kvs_fail(KVS_ERR_PARSE, "%s:%lu: column %d ('%s'): %llu, but an "
				"earlier row has %u (one model shape per file)", c->path,
				c->lineno, col + 1, c->names[col], (unsigned long long)v, *shape);
	*shape = (uint32_t)v;
	return KVS_OK;
}

/* Insert (x, a, b) into sorted points, averaging a repeated x. */
static void add_point(double *xs, double *as, double *bs, uint32_t *counts,
		      uint32_t *n, double x, double a, double b)
{
	uint32_t i = 0;
	while (i < *n && xs[i] < x)
		i++;
	if (i < *n && xs[i] == x) {
		counts[i]++;
		as[i] += (a - as[i]) / counts[i];
		if (bs)
			bs[i] += (b - bs[i]) / counts[i];
		return;
	}
	memmove(xs + i + 1, xs + i, (*n - i) * sizeof *xs);
	memmove(as + i + 1, as + i, (*n - i) * sizeof *as);
	if (bs)
		memmove(bs + i + 1, bs + i, (*n - i) * sizeof *bs);
	memmove(counts + i + 1, counts + i, (*n - i) * sizeof *counts);
	xs[i] = x;
	as[i] = a;
	if (bs)
		bs[i] = b;
	counts[i] = 1;
	(*n)++;
}

static kvs_status load_mlp(const char *path, uint32_t tp, kvs_cost_config *c)
{
	csv_file f;
	kvs_status st = csv_open(&f, path);
	if (st != KVS_OK)
		return st;
	int cop[KVS_ARRAY_LEN(layer_ops)], cemb, ctok, ctp, cemb_n, chead, ckv, cexp;
	char name[96];
	for (size_t i = 0; i < KVS_ARRAY_LEN(layer_ops); i++) {
		snprintf(name, sizeof name, "time_stats.%s.median", layer_ops[i]);
		if ((st = need_col(&f, name, &cop[i])))
			goto done;
	}
	if ((st = need_col(&f, "time_stats.emb.median", &cemb)) ||
	    (st = need_col(&f, "num_tokens", &ctok)) ||
	    (st = need_col(&f, "num_tensor_parallel_workers", &ctp)) ||
	    (st = need_col(&f, "n_embd", &cemb_n)) || (st = need_col(&f, "n_head", &chead)) ||
	    (st = need_col(&f, "n_kv_head", &ckv)) ||
	    (st = need_col(&f, "n_expanded_embd", &cexp)))
		goto done;
	uint32_t counts[KVS_PROFILE_MAX_POINTS];
	double vals[MAX_COLS];
	uint32_t n = 0;
	double seen[16];            /* tp values in the file, for the error */
	size_t nseen = 0;
	bool shaped = false;
	while ((st = csv_row(&f)) == KVS_OK) {
		if ((st = int_cell(&f, vals, ctp, 1, UINT32_MAX, NULL)) != KVS_OK)
			goto done;
		double rtp = vals[ctp];
		bool was = false;
		for (size_t i = 0; i < nseen; i++)
			was |= seen[i] == rtp;
		if (!was && nseen < KVS_ARRAY_LEN(seen))
			seen[nseen++] = rtp;
		if (rtp != (double)tp)
			continue;
		double layer = 0, op, emb;
		for (size_t i = 0; i < KVS_ARRAY_LEN(layer_ops); i++) {
			if ((st = time_cell(&f, cop[i], &op)) != KVS_OK)
				goto done;
			layer += op;
		}
		if ((st = time_cell(&f, cemb, &emb)) != KVS_OK)
			goto done;
		if ((st = int_cell(&f, vals, ctok, 1, UINT32_MAX, NULL)) != KVS_OK ||
		    (st = shape_cell(&f, vals, cemb_n, shaped, &c->profile_n_embd)) != KVS_OK ||
		    (st = shape_cell(&f, vals, chead, shaped, &c->profile_n_head)) != KVS_OK ||
		    (st = shape_cell(&f, vals, ckv, shaped, &c->profile_n_kv_head)) != KVS_OK ||
		    (st = shape_cell(&f, vals, cexp, shaped, &c->profile_n_expanded)) != KVS_OK)
			goto done;
		shaped = true;
		bool known = false;
		for (uint32_t i = 0; i < n; i++)
			known |= c->profile_tokens[i] == vals[ctok];
		if (!known && n == KVS_PROFILE_MAX_POINTS) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: more than %d distinct num_tokens for tp %u",
				      path, KVS_PROFILE_MAX_POINTS, tp);
			goto done;
		}
		add_point(c->profile_tokens, c->profile_layer_s, c->profile_emb_s, counts, &n,
			  vals[ctok], layer * 1e-3, emb * 1e-3);
	}
	if (st != KVS_END)
		goto done;
	st = KVS_OK;
	if (n == 0) {
		char tps[160] = "";
		size_t len = 0;
		for (size_t i = 0; i < nseen && len < sizeof tps - 24; i++)
			len += (size_t)snprintf(tps + len, sizeof tps - len, "%s%.0f",
						i ? ", " : "", seen[i]);
		st = kvs_fail(KVS_ERR_INVALID, "%s: no rows for tensor parallelism %u "
			      "(the profile has tp %s)", path, tp, len ? tps : "none");
	}
	c->profile_points = n;
	c->profile_tp = tp;
done:
	fclose(f.f);
	return st;
}

static kvs_status load_allreduce(const char *path, uint32_t tp, kvs_cost_config *c)
{
	csv_file f;
	kvs_status st = csv_open(&f, path);
	if (st != KVS_OK)
		return st;
	int ct, cw, cs;
	if ((st = need_col(&f, "time_stats.all_reduce.median", &ct)) ||
	    (st = need_col(&f, "num_workers", &cw)) || (st = need_col(&f, "size", &cs)))
		goto done;
	uint32_t counts[KVS_PROFILE_MAX_AR];
	double vals[MAX_COLS];
	uint32_t n = 0;
	while ((st = csv_row(&f)) == KVS_OK) {
		if ((st = int_cell(&f, vals, cw, 1, UINT32_MAX, NULL)) != KVS_OK)
			goto done;
		if (vals[cw] != (double)tp)
			continue;
		double t;
		if ((st = time_cell(&f, ct, &t)) != KVS_OK)
			goto done;
		/* message bytes: exact as doubles up to 2^53 */
		if ((st = int_cell(&f, vals, cs, 0, UINT64_C(1) << 53, NULL)) != KVS_OK)
			goto done;
		bool known = false;
		for (uint32_t i = 0; i < n; i++)
			known |= c->allreduce_bytes[i] == vals[cs];
		if (!known && n == KVS_PROFILE_MAX_AR)
			continue; /* enough sizes: the rest are beyond the table */
		add_point(c->allreduce_bytes, c->allreduce_s, NULL, counts, &n, vals[cs],
			  t * 1e-3, 0);
	}
	if (st != KVS_END)
		goto done;
	st = KVS_OK;
	c->allreduce_points = n;
done:
	fclose(f.f);
	return st;
}

/* ---- measured attention ------------------------------------------------- */

typedef struct attn_pt {
	double x, kv, t;   /* batch size (decode) or chunk size (prefill), KV, s */
} attn_pt;

typedef struct attn_pts {
	attn_pt *v;
	size_t n, cap;
} attn_pts;

static int attn_pt_cmp(const void *pa, const void *pb)
{
	const attn_pt *a = pa, *b = pb;
	if (a->x != b->x)
		return a->x < b->x ? -1 : 1;
	return a->kv < b->kv ? -1 : a->kv > b->kv;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return a < b ? -1 : a > b;
}

/* Sort, then average the points repeated at one (x, kv). */
static void attn_pts_merge(attn_pts *p)
{
	if (!p->n)
		return;
	qsort(p->v, p->n, sizeof *p->v, attn_pt_cmp);
	size_t w = 0, run = 1;
	for (size_t i = 1; i < p->n; i++) {
		if (p->v[i].x == p->v[w].x && p->v[i].kv == p->v[w].kv) {
			run++;
			p->v[w].t += (p->v[i].t - p->v[w].t) / (double)run;
		} else {
			p->v[++w] = p->v[i];
			run = 1;
		}
	}
	p->n = w + 1;
}

static kvs_status attn_push(attn_pts *p, double x, double kv, double t)
{
	if (!KVS_ARRAY_RESERVE(p->v, p->cap, p->n + 1, 1024))
		return kvs_fail(KVS_ERR_NOMEM, "attention profile: out of memory");
	p->v[p->n++] = (attn_pt){ x, kv, t };
	return KVS_OK;
}

static pthread_mutex_t attn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kvs_attn_table *attn_loaded;   /* kept for the process */

static void attn_table_free(struct kvs_attn_table *a)
{
	if (!a)
		return;
	free(a->batch);
	free(a->kv);
	free(a->dec_s);
	free(a->chunk);
	free(a->pre_off);
	free(a->pre_kv);
	free(a->pre_s);
	free(a);
}

/* The decode grid and the prefill lists from the merged points. */
static kvs_status attn_build(struct kvs_attn_table *a, const attn_pts *dec,
			     const attn_pts *pre)
{
	size_t nb = 0, nkv = 0, nc = 0;
	double *kvs = kvs_reallocarray(NULL, dec->n ? dec->n : 1, sizeof *kvs);
	if (!kvs)
		return kvs_fail(KVS_ERR_NOMEM, "attention profile: out of memory");
	for (size_t i = 0; i < dec->n; i++) {
		nb += i == 0 || dec->v[i].x != dec->v[i - 1].x;
		kvs[i] = dec->v[i].kv;
	}
	/* the union of the KV lengths, sorted and distinct */
	qsort(kvs, dec->n, sizeof *kvs, cmp_double);
	for (size_t i = 0; i < dec->n; i++)
		if (i == 0 || kvs[i] != kvs[nkv - 1])
			kvs[nkv++] = kvs[i];
	for (size_t i = 0; i < pre->n; i++)
		nc += i == 0 || pre->v[i].x != pre->v[i - 1].x;
	a->nb = (uint32_t)nb;
	a->nkv = (uint32_t)nkv;
	a->nchunk = (uint32_t)nc;
	a->kv = kvs;
	a->batch = kvs_calloc(nb ? nb : 1, sizeof *a->batch);
	size_t ngrid = nb * nkv;
	a->dec_s = kvs_calloc(ngrid ? ngrid : 1, sizeof *a->dec_s);
	a->chunk = kvs_calloc(nc ? nc : 1, sizeof *a->chunk);
	a->pre_off = kvs_calloc(nc + 1, sizeof *a->pre_off);
	a->pre_kv = kvs_calloc(pre->n ? pre->n : 1, sizeof *a->pre_kv);
	a->pre_s = kvs_calloc(pre->n ? pre->n : 1, sizeof *a->pre_s);
	if (!a->batch || !a->dec_s || !a->chunk || !a->pre_off || !a->pre_kv || !a->pre_s)
		return kvs_fail(KVS_ERR_NOMEM, "attention profile: out of memory");
	/* each batch size's own points, resampled on the union of KV lengths
	 * (its own knots are among them, so nothing between them moves) */
	double *xs = kvs_reallocarray(NULL, nkv ? nkv : 1, sizeof *xs);
	double *ys = kvs_reallocarray(NULL, nkv ? nkv : 1, sizeof *ys);
	if (!xs || !ys) {
		free(xs);
		free(ys);
		return kvs_fail(KVS_ERR_NOMEM, "attention profile: out of memory");
	}
	for (size_t i = 0, b = 0; i < dec->n; b++) {
		size_t j = i, m = 0;
		for (; j < dec->n && dec->v[j].x == dec->v[i].x; j++, m++) {
			xs[m] = dec->v[j].kv;
			ys[m] = dec->v[j].t;
		}
		a->batch[b] = dec->v[i].x;
		for (size_t k = 0; k < nkv; k++)
			a->dec_s[b * nkv + k] = kvs_interp(xs, ys, (uint32_t)m, kvs[k]);
		i = j;
	}
	free(xs);
	free(ys);
	for (size_t i = 0, c = 0; i < pre->n; c++) {
		a->chunk[c] = pre->v[i].x;
		a->pre_off[c] = (uint32_t)i;
		for (; i < pre->n && pre->v[i].x == a->chunk[c]; i++) {
			a->pre_kv[i] = pre->v[i].kv;
			a->pre_s[i] = pre->v[i].t;
		}
	}
	a->pre_off[nc] = (uint32_t)pre->n;
	return KVS_OK;
}

/* Read DIR/attention.csv for tp into a table (NULL when the file has no
 * rows for tp).  Times are the medians of the attention kernel and its
 * reshapes (and of the KV-cache write where the file has it), per layer
 * and rank. */
static kvs_status load_attention(const char *path, uint32_t tp,
				 struct kvs_attn_table **out)
{
	*out = NULL;
	csv_file f;
	kvs_status st = csv_open(&f, path);
	if (st != KVS_OK)
		return st;
	int cb, ckv, cchunk, cpre, ctp, cemb, cq, ckvh, cdec, cpf;
	attn_pts dec = { 0 }, pre = { 0 };
	struct kvs_attn_table *a = NULL;
	if ((st = need_col(&f, "batch_size", &cb)) ||
	    (st = need_col(&f, "kv_cache_size", &ckv)) ||
	    (st = need_col(&f, "prefill_chunk_size", &cchunk)) ||
	    (st = need_col(&f, "is_prefill", &cpre)) ||
	    (st = need_col(&f, "num_tensor_parallel_workers", &ctp)) ||
	    (st = need_col(&f, "n_embd", &cemb)) || (st = need_col(&f, "n_q_head", &cq)) ||
	    (st = need_col(&f, "n_kv_head", &ckvh)) ||
	    (st = need_col(&f, "time_stats.attn_decode.median", &cdec)) ||
	    (st = need_col(&f, "time_stats.attn_prefill.median", &cpf)))
		goto done;
	/* optional: absent, or an empty cell, counts as 0 (the reshapes are
	 * timed in every row of the published files, the KV-cache write is a
	 * newer column); a cell with text is read as a time */
	int cextra[3] = {
		csv_col(&f, "time_stats.attn_input_reshape.median"),
		csv_col(&f, "time_stats.attn_output_reshape.median"),
		csv_col(&f, "time_stats.attn_kv_cache_save.median"),
	};
	if (!(a = kvs_calloc(1, sizeof *a))) {
		st = kvs_fail(KVS_ERR_NOMEM, "%s: out of memory", path);
		goto done;
	}
	double vals[MAX_COLS];
	bool shaped = false;
	while ((st = csv_row(&f)) == KVS_OK) {
		if ((st = int_cell(&f, vals, ctp, 1, UINT32_MAX, NULL)) != KVS_OK)
			goto done;
		if (vals[ctp] != (double)tp)
			continue;
		const char *ip = f.cells[cpre];
		bool is_pre;
		if (!strcmp(ip, "True") || !strcmp(ip, "true") || !strcmp(ip, "1"))
			is_pre = true;
		else if (!strcmp(ip, "False") || !strcmp(ip, "false") || !strcmp(ip, "0"))
			is_pre = false;
		else {
			st = kvs_fail(KVS_ERR_PARSE, "%s:%lu: column %d ('is_prefill'): "
				      "expected True or False, got '%s'",
				      path, f.lineno, cpre + 1, ip);
			goto done;
		}
		/* the phase's own time: the other phase's cell is empty */
		double t, extra;
		if ((st = time_cell(&f, is_pre ? cpf : cdec, &t)) != KVS_OK)
			goto done;
		for (int e = 0; e < 3; e++) {
			if (cextra[e] < 0 || !*f.cells[cextra[e]])
				continue;
			if ((st = time_cell(&f, cextra[e], &extra)) != KVS_OK)
				goto done;
			t += extra;
		}
		if ((st = int_cell(&f, vals, cb, 1, UINT32_MAX, NULL)) != KVS_OK ||
		    (st = int_cell(&f, vals, ckv, 0, UINT32_MAX, NULL)) != KVS_OK ||
		    (st = int_cell(&f, vals, cchunk, is_pre ? 1 : 0, UINT32_MAX, NULL)) != KVS_OK ||
		    (st = shape_cell(&f, vals, cemb, shaped, &a->n_embd)) != KVS_OK ||
		    (st = shape_cell(&f, vals, cq, shaped, &a->n_q_head)) != KVS_OK ||
		    (st = shape_cell(&f, vals, ckvh, shaped, &a->n_kv_head)) != KVS_OK)
			goto done;
		shaped = true;
		if (is_pre) {
			/* a batch of equal chunks: the time of one */
			st = attn_push(&pre, vals[cchunk], vals[ckv], t * 1e-3 / vals[cb]);
			a->prefill_rows++;
		} else {
			st = attn_push(&dec, vals[cb], vals[ckv], t * 1e-3);
			a->decode_rows++;
		}
		if (st != KVS_OK)
			goto done;
	}
	if (st != KVS_END)
		goto done;
	st = KVS_OK;
	if (!dec.n || !pre.n)
		goto done;   /* no rows for tp (or one phase only): roofline */
	attn_pts_merge(&dec);
	attn_pts_merge(&pre);
	a->tp = tp;
	snprintf(a->path, sizeof a->path, "%s", path);
	if ((st = attn_build(a, &dec, &pre)) != KVS_OK)
		goto done;
	*out = a;
	a = NULL;
done:
	attn_table_free(a);
	free(dec.v);
	free(pre.v);
	fclose(f.f);
	return st;
}

/* The table of path at tp: loaded once per process (again when the file
 * changed: another inode, size or modification time), then shared. */
static kvs_status attention_for(const char *path, uint32_t tp,
				const struct kvs_attn_table **out)
{
	kvs_status st = KVS_OK;
	struct stat sb;
	if (stat(path, &sb) != 0)
		return kvs_fail(KVS_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
	uint64_t key[4] = { (uint64_t)sb.st_ino, (uint64_t)sb.st_size,
			    (uint64_t)sb.st_mtim.tv_sec, (uint64_t)sb.st_mtim.tv_nsec };
	pthread_mutex_lock(&attn_lock);
	for (struct kvs_attn_table *a = attn_loaded; a; a = a->next)
		if (a->tp == tp && !strcmp(a->path, path) && !memcmp(a->key, key, sizeof key)) {
			*out = a;
			goto done;
		}
	struct kvs_attn_table *a;
	if ((st = load_attention(path, tp, &a)) == KVS_OK && a) {
		memcpy(a->key, key, sizeof key);
		a->next = attn_loaded;
		attn_loaded = a;
	}
	*out = st == KVS_OK ? a : NULL;
done:
	pthread_mutex_unlock(&attn_lock);
	return st;
}

kvs_status kvs_cost_load_profile(const char *dir, uint32_t tp, kvs_cost_config *c)
{
	char path[1024];
	if (!dir || !*dir)
		return kvs_fail(KVS_ERR_INVALID, "empty profile directory");
	if (tp == 0)
		tp = 1;
	c->profile_points = 0;
	c->allreduce_points = 0;
	c->attn = NULL;
	int n = snprintf(path, sizeof path, "%s/mlp.csv", dir);
	if (n < 0 || (size_t)n >= sizeof path)
		return kvs_fail(KVS_ERR_INVALID, "%s: path too long", dir);
	kvs_status st = load_mlp(path, tp, c);
	if (st != KVS_OK) {
		c->profile_points = 0;
		return st;
	}
	c->kind = KVS_COST_ROOFLINE;
	char ar[1024] = "";
	/* <root>/compute/<gpu>/...: the network profile of the same GPU */
	const char *cp = strstr(dir, "/compute/");
	if (tp > 1 && cp) {
		const char *g = cp + strlen("/compute/");
		const char *ge = strchr(g, '/');
		size_t glen = ge ? (size_t)(ge - g) : strlen(g);
		n = snprintf(ar, sizeof ar, "%.*s/network/%.*s_pairwise_nvlink/all_reduce.csv",
			     (int)(cp - dir), dir, (int)glen, g);
		if (n < 0 || (size_t)n >= sizeof ar || access(ar, R_OK) != 0) {
			ar[0] = '\0';
		} else if ((st = load_allreduce(ar, tp, c)) != KVS_OK) {
			c->profile_points = 0;
			return st;
		}
		if (c->allreduce_points == 0)
			ar[0] = '\0';
	}
	char at[1024];
	n = snprintf(at, sizeof at, "%s/attention.csv", dir);
	if (n > 0 && (size_t)n < sizeof at && access(at, R_OK) == 0) {
		if ((st = attention_for(at, tp, &c->attn)) != KVS_OK) {
			c->profile_points = 0;
			return st;
		}
	}
	int w;
	if (c->attn)
		w = snprintf(c->profile_desc, sizeof c->profile_desc,
			     "non-attention operators from mlp.csv (tp %u, %u points) and "
			     "attention from attention.csv (%u batch sizes x %u KV lengths, "
			     "%u chunk sizes) in %.100s; all-reduce from %.100s; KV write "
			     "not profiled", tp, c->profile_points, c->attn->nb, c->attn->nkv,
			     c->attn->nchunk, dir, ar[0] ? ar : "the roofline");
	else
		w = snprintf(c->profile_desc, sizeof c->profile_desc,
			     "non-attention operators from %.100s (tp %u, %u points); "
			     "all-reduce from %.100s; attention, KV read and write from the roofline",
			     path, tp, c->profile_points, ar[0] ? ar : "the roofline");
	(void)w;
	return KVS_OK;
}
