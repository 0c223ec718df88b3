/*
 * profile.c - measured operator profiles in the Vidur format, read into
 * the step-time model's configuration (docs/COST-MODEL.md, "Measured
 * profiles").
 *
 *   DIR/mlp.csv        one row per (num_tokens, num_tensor_parallel_workers):
 *                      per-layer times of the non-attention operators, in ms
 *   <root>/network/<gpu>_pairwise_nvlink/all_reduce.csv
 *                      all-reduce time by message size and rank count, found
 *                      from DIR = <root>/compute/<gpu>/<org>/<model>
 *
 * The files are plain CSV with a header and numbers only (no quoting).
 * Only the medians are kept; repeated num_tokens are averaged.  No fitting:
 * kvs_cost_step interpolates between the points.
 */
#include "kvs_config.h"
#include "sim_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Next data row as numbers; KVS_END at the end of the file. */
static kvs_status csv_row(csv_file *c, double *vals)
{
	char *cells[MAX_COLS];
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
		for (int i = 0; i < n; i++) {
			char *end;
			if (!*cells[i]) {
				vals[i] = NAN;  /* an empty cell: only an error where used */
				continue;
			}
			errno = 0;
			vals[i] = strtod(cells[i], &end);
			if (*end || errno == ERANGE)
				vals[i] = NAN;  /* text (the collective's name): not used */
		}
		return KVS_OK;
	}
}

static kvs_status bad_cell(const csv_file *c, int col)
{
	return kvs_fail(KVS_ERR_PARSE, "%s:%lu: column %d ('%s'): expected a number >= 0",
			c->path, c->lineno, col + 1, c->names[col]);
}

static bool good(double x)
{
	return isfinite(x) && x >= 0;
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
	while ((st = csv_row(&f, vals)) == KVS_OK) {
		double rtp = vals[ctp];
		if (!good(rtp))
			{ st = bad_cell(&f, ctp); goto done; }
		bool was = false;
		for (size_t i = 0; i < nseen; i++)
			was |= seen[i] == rtp;
		if (!was && nseen < KVS_ARRAY_LEN(seen))
			seen[nseen++] = rtp;
		if (rtp != (double)tp)
			continue;
		double layer = 0;
		for (size_t i = 0; i < KVS_ARRAY_LEN(layer_ops); i++) {
			if (!good(vals[cop[i]]))
				{ st = bad_cell(&f, cop[i]); goto done; }
			layer += vals[cop[i]];
		}
		if (!good(vals[cemb]))
			{ st = bad_cell(&f, cemb); goto done; }
		if (!good(vals[ctok]) || vals[ctok] < 1)
			{ st = bad_cell(&f, ctok); goto done; }
		c->profile_n_embd = (uint32_t)vals[cemb_n];
		c->profile_n_head = (uint32_t)vals[chead];
		c->profile_n_kv_head = (uint32_t)vals[ckv];
		c->profile_n_expanded = (uint32_t)vals[cexp];
		bool known = false;
		for (uint32_t i = 0; i < n; i++)
			known |= c->profile_tokens[i] == vals[ctok];
		if (!known && n == KVS_PROFILE_MAX_POINTS) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: more than %d distinct num_tokens for tp %u",
				      path, KVS_PROFILE_MAX_POINTS, tp);
			goto done;
		}
		add_point(c->profile_tokens, c->profile_layer_s, c->profile_emb_s, counts, &n,
			  vals[ctok], layer * 1e-3, vals[cemb] * 1e-3);
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
	while ((st = csv_row(&f, vals)) == KVS_OK) {
		if (vals[cw] != (double)tp)
			continue;
		if (!good(vals[ct]))
			{ st = bad_cell(&f, ct); goto done; }
		if (!good(vals[cs]))
			{ st = bad_cell(&f, cs); goto done; }
		bool known = false;
		for (uint32_t i = 0; i < n; i++)
			known |= c->allreduce_bytes[i] == vals[cs];
		if (!known && n == KVS_PROFILE_MAX_AR)
			continue; /* enough sizes: the rest are beyond the table */
		add_point(c->allreduce_bytes, c->allreduce_s, NULL, counts, &n, vals[cs],
			  vals[ct] * 1e-3, 0);
	}
	if (st != KVS_END)
		goto done;
	st = KVS_OK;
	c->allreduce_points = n;
done:
	fclose(f.f);
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
	int w = snprintf(c->profile_desc, sizeof c->profile_desc,
			 "non-attention operators from %.100s (tp %u, %u points); "
			 "all-reduce from %.100s; attention, KV read and write from the roofline",
			 path, tp, c->profile_points, ar[0] ? ar : "the roofline");
	(void)w;
	return KVS_OK;
}
