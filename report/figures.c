/*
 * figures.c - the report's figures.  Each figure is one drawing routine over
 * a cairo context (draw_figure), called once for an SVG surface and once for
 * a PNG image surface, so the two files show exactly the same picture.
 *
 * Long timeseries are reduced before drawing: stacked memory areas to
 * bucket means (which keeps the six parts summing to 100 % and preserves
 * the time-weighted areas), request counts to per-bucket min/max envelopes
 * (which keeps every spike visible).  A figure thus costs O(samples) to
 * draw and its SVG stays a few hundred kilobytes whatever the run length.
 */
#include "kvs_config.h"
#include "plot.h"

#include <cairo-svg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	FIG_MEMORY, FIG_REQUESTS, FIG_CDF, FIG_SWEEP_FRAG, FIG_SWEEP_TPUT,
	FIG_SWEEP_LAT, FIG_CAPACITY, FIG_CURVE,
};

/* at most this many points per drawn curve */
#define MAX_POINTS 1200
/* at most this many policy panels in the memory figure */
#define MAX_PANELS 12

static const rp_rgb INK = { 0.13, 0.13, 0.13 };
static const rp_rgb MUTED = { 0.40, 0.40, 0.40 };

/* ---- helpers -------------------------------------------------------------- */

/* Layout of n panels: 1, 2 or 3 side by side, then two rows. */
static void panel_layout(size_t n, int *rows, int *cols)
{
	if (n <= 3) {
		*rows = 1;
		*cols = n ? (int)n : 1;
	} else {
		*rows = 2;
		*cols = (int)((n + 1) / 2);
	}
}

/* Divisor and unit name for a time axis ending at tmax seconds. */
static double time_unit(double tmax, const char **unit)
{
	if (tmax > 3 * 3600.0) {
		*unit = "h";
		return 3600;
	}
	if (tmax > 1800.0) {
		*unit = "min";
		return 60;
	}
	*unit = "s";
	return 1;
}

/* Multiplier and unit name for a latency axis ending at vmax seconds. */
static double latency_unit(double vmax, const char **unit)
{
	if (vmax < 2e-3) {
		*unit = "µs";
		return 1e6;
	}
	if (vmax < 2) {
		*unit = "ms";
		return 1e3;
	}
	*unit = "s";
	return 1;
}

/* Bucket means of k series over n samples into at most maxpts points.
 * out_t and out_y[j] hold room for maxpts values.  Returns the count. */
static size_t reduce_mean(const double *t, const double *const *y, int k,
			  size_t n, size_t maxpts, double *out_t,
			  double *const *out_y)
{
	size_t chunk = (n + maxpts - 1) / maxpts, m = 0;
	if (chunk < 1)
		chunk = 1;
	for (size_t i = 0; i < n; i += chunk, m++) {
		size_t e = i + chunk < n ? i + chunk : n;
		double st = 0;
		for (size_t j = i; j < e; j++)
			st += t[j];
		out_t[m] = st / (double)(e - i);
		for (int s = 0; s < k; s++) {
			double sy = 0;
			for (size_t j = i; j < e; j++)
				sy += y[s][j];
			out_y[s][m] = sy / (double)(e - i);
		}
	}
	return m;
}

void rp_minmax(const double *y, size_t lo, size_t hi, size_t *first, size_t *last)
{
	size_t jmin = lo, jmax = lo;
	for (size_t j = lo; j < hi; j++) {
		if (y[j] < y[jmin])
			jmin = j;
		if (y[j] > y[jmax])
			jmax = j;
	}
	*first = jmin < jmax ? jmin : jmax;
	*last = jmin < jmax ? jmax : jmin;
}

/* Per-bucket min and max (in time order) of one series: at most
 * 2 * ceil(n / chunk) points; out arrays hold 2 * maxpts values. */
static size_t reduce_envelope(const double *t, const double *y, size_t n,
			      size_t maxpts, double *ot, double *oy)
{
	if (n <= 2 * maxpts) {
		memcpy(ot, t, n * sizeof *t);
		memcpy(oy, y, n * sizeof *y);
		return n;
	}
	size_t chunk = (n + maxpts - 1) / maxpts, m = 0;
	for (size_t i = 0; i < n; i += chunk) {
		size_t a, b;
		rp_minmax(y, i, i + chunk < n ? i + chunk : n, &a, &b);
		ot[m] = t[a];
		oy[m++] = y[a];
		if (b != a) {
			ot[m] = t[b];
			oy[m++] = y[b];
		}
	}
	return m;
}

static double meta_num(const rp_run *run, int m, const char *key)
{
	for (size_t i = 0; i < run->nmeta[m]; i++)
		if (strcmp(run->meta[m][i].key, key) == 0) {
			char *end;
			double v = strtod(run->meta[m][i].value, &end);
			return end != run->meta[m][i].value && *end == '\0' ? v : NAN;
		}
	return NAN;
}

static void policy_legend(pl_fig *f, double *y, const char *const *names,
			  size_t n, bool line)
{
	pl_legend_item items[32];
	if (n > 32)
		n = 32;
	for (size_t i = 0; i < n; i++)
		items[i] = (pl_legend_item){ .label = names[i],
					     .color = rp_policy_color(names[i]),
					     .line = line };
	*y = pl_legend(f, *y, items, n);
}

/* ---- KV memory over time -------------------------------------------------- */

static void fig_memory(pl_fig *f, const rp_run *run)
{
	char sub[256], bud[32];
	double budget = meta_num(run, RP_META_ENGINE, "kv_budget_bytes");
	rp_fmt_bytes(bud, sizeof bud, budget);
	if (run->npol > MAX_PANELS)  /* never drop a policy silently */
		snprintf(sub, sizeof sub, "share of the KV budget by part: the first %d of %zu policies "
			 "(see the tables for all)", MAX_PANELS, run->npol);
	else
		snprintf(sub, sizeof sub,
			 "share of the KV budget%s%s%s by part, one panel per policy; waste = reservation + fragmentation",
			 isfinite(budget) ? " (" : "", isfinite(budget) ? bud : "",
			 isfinite(budget) ? ")" : "");
	double y = pl_title(f, "KV cache memory over time", sub);
	pl_legend_item items[RP_NPARTS];
	for (int i = 0; i < RP_NPARTS; i++)
		items[i] = (pl_legend_item){ .label = rp_part_label[i],
					     .color = rp_part_color(i) };
	y = pl_legend(f, y, items, RP_NPARTS);

	double tmax = 0;
	for (size_t i = 0; i < run->npol; i++)
		if (run->pol[i].ts.n)
			tmax = fmax(tmax, run->pol[i].ts.t_s[run->pol[i].ts.n - 1]);
	const char *unit;
	double div = time_unit(tmax, &unit);

	int rows, cols;
	size_t np = run->npol < MAX_PANELS ? run->npol : MAX_PANELS;
	panel_layout(np, &rows, &cols);
	pl_panel panels[MAX_PANELS];
	pl_grid(f, 10 * f->s, y, f->w - 10 * f->s, f->h, rows, cols, panels, np);

	/* the long panel annotation only when it fits every panel, so all
	 * panels read alike */
	bool long_stats = np > 0;
	for (size_t i = 0; i < np; i++)
		long_stats &= pl_text_width(f, 23, true, run->pol[i].name) +
			      pl_text_width(f, 18, false, "token states 100.0% · waste 100.0%") +
			      16 * f->s <= panels[i].w;

	/* scratch: t, 6 parts, 6 cumulative sums */
	double *buf = kvs_reallocarray(NULL, (size_t)MAX_POINTS * 13, sizeof *buf);
	for (size_t i = 0; i < np; i++) {
		const rp_policy *p = &run->pol[i];
		pl_panel *pn = &panels[i];
		pn->xa.scale = pn->ya.scale = PL_LINEAR;
		pn->xa.exact = true; /* the time axis ends where the run ends */
		pl_axis_fit(&pn->xa, 0, tmax > 0 ? tmax / div : 1, cols >= 3 ? 5 : 8);
		pl_axis_fit(&pn->ya, 0, 100, 5);
		snprintf(pn->xa.title, sizeof pn->xa.title, "simulated time (%s)", unit);
		if (i % (size_t)cols == 0)
			snprintf(pn->ya.title, sizeof pn->ya.title, "%% of KV budget");
		/* name as the panel title; the time-weighted split on the right,
		 * shortened when the panel is narrow */
		char stats[96];
		double waste = p->mem[1] + p->mem[2] + p->mem[3];
		snprintf(stats, sizeof stats, "token states %.1f%% · waste %.1f%%",
			 p->mem[0], waste);
		if (!long_stats)
			snprintf(stats, sizeof stats, "waste %.1f%%", waste);
		pl_text(f, pn->x + pn->w, pn->y - 20 * f->s, 18, PL_RIGHT, false, MUTED, 0,
			stats);
		const char *title = p->name;
		if (p->ts.n && buf) {
			double *t = buf, *part[RP_NPARTS], *cum[RP_NPARTS];
			for (int k = 0; k < RP_NPARTS; k++) {
				part[k] = buf + (size_t)MAX_POINTS * (1 + k);
				cum[k] = buf + (size_t)MAX_POINTS * (7 + k);
			}
			size_t m = reduce_mean(p->ts.t_s, (const double *const *)p->ts.part,
					       RP_NPARTS, p->ts.n, MAX_POINTS, t, part);
			for (size_t j = 0; j < m; j++) {
				t[j] /= div;
				double acc = 0;
				for (int k = 0; k < RP_NPARTS; k++) {
					acc += fmax(part[k][j], 0);
					cum[k][j] = acc;
				}
			}
			/* zeros for the bottom edge: part[0] is no longer needed */
			for (size_t j = 0; j < m; j++)
				part[0][j] = 0;
			pl_clip(f, pn);
			/* top layer first, each drawn down to 0, so no seams show */
			for (int k = RP_NPARTS - 1; k >= 0; k--)
				pl_band(f, pn, t, part[0], cum[k], m, rp_part_color(k));
			pl_unclip(f);
			pl_axes(f, pn, title, rp_policy_color(p->name), true, true);
		} else {
			pl_axes(f, pn, title, rp_policy_color(p->name), true, true);
			pl_note(f, pn, p->ts.n ? "out of memory" : "no timeseries for this policy");
		}
	}
	kvs_free(buf);
}

/* ---- running and waiting requests ----------------------------------------- */

static void fig_requests(pl_fig *f, const rp_run *run)
{
	double y = pl_title(f, "Running and waiting requests over time",
			    "running: sequences in the batch; waiting: arrived, not yet admitted");
	const char *names[32] = { NULL };
	size_t nn = 0;
	double tmax = 0, rmax = 0, wmax = 0, wpos = INFINITY;
	for (size_t i = 0; i < run->npol && nn < 32; i++) {
		const rp_policy *p = &run->pol[i];
		if (!p->ts.n || (!p->ts.running && !p->ts.waiting))
			continue;
		names[nn++] = p->name;
		tmax = fmax(tmax, p->ts.t_s[p->ts.n - 1]);
		for (size_t j = 0; j < p->ts.n; j++) {
			if (p->ts.running)
				rmax = fmax(rmax, p->ts.running[j]);
			if (p->ts.waiting) {
				wmax = fmax(wmax, p->ts.waiting[j]);
				if (p->ts.waiting[j] > 0)
					wpos = fmin(wpos, p->ts.waiting[j]);
			}
		}
	}
	/* one long queue (max reservation's hundreds) would flatten the
	 * others' tens to zero: log10 when the queues span more than a decade,
	 * an empty queue on the bottom edge */
	bool wlog = isfinite(wpos) && wmax > 10 * fmax(wpos, 1);
	policy_legend(f, &y, names, nn, true);
	const char *unit;
	double div = time_unit(tmax, &unit);
	pl_panel pn[2];
	pl_grid(f, 40 * f->s, y, f->w - 40 * f->s, f->h, 2, 1, pn, 2);
	double *t = kvs_reallocarray(NULL, 4 * (size_t)MAX_POINTS, sizeof *t);
	double *v = t ? t + 2 * MAX_POINTS : NULL;
	for (int k = 0; k < 2; k++) {
		bool lg = k == 1 && wlog;
		pn[k].xa.scale = PL_LINEAR;
		pn[k].ya.scale = lg ? PL_LOG10 : PL_LINEAR;
		pn[k].xa.exact = true;
		pl_axis_fit(&pn[k].xa, 0, tmax > 0 ? tmax / div : 1, 10);
		if (lg)
			pl_axis_fit(&pn[k].ya, 1, wmax * 1.2, 6);
		else
			pl_axis_fit(&pn[k].ya, 0, fmax(k == 0 ? rmax : wmax, 1) * 1.05, 4);
		snprintf(pn[k].xa.title, sizeof pn[k].xa.title, "simulated time (%s)", unit);
		snprintf(pn[k].ya.title, sizeof pn[k].ya.title, lg ? "requests, log" : "requests");
		pl_axes(f, &pn[k], k == 0 ? "Running (batch size)" :
			lg ? "Waiting for admission (log; an empty queue on the bottom edge)" :
			     "Waiting for admission",
			INK, true, true);
		if (!t)
			continue;
		pl_clip(f, &pn[k]);
		/* paged last, on top: the policies often coincide for long
		 * stretches and paged is the one the figure is about */
		for (size_t ii = 0; ii <= run->npol; ii++) {
			size_t i = ii;
			bool last = ii == run->npol;
			if (last) {
				for (i = 0; i < run->npol && !rp_policy_is(run->pol[i].name, KVS_TRAIT_BASELINE); i++)
					;
				if (i == run->npol)
					break;
			} else if (rp_policy_is(run->pol[i].name, KVS_TRAIT_BASELINE)) {
				continue;
			}
			const rp_policy *p = &run->pol[i];
			const double *src = k == 0 ? p->ts.running : p->ts.waiting;
			if (!p->ts.n || !src)
				continue;
			size_t m = reduce_envelope(p->ts.t_s, src, p->ts.n, MAX_POINTS, t, v);
			for (size_t j = 0; j < m; j++)
				t[j] /= div;
			pl_line(f, &pn[k], t, v, m, rp_policy_color(p->name), last ? 4 : 3, false,
				false);
		}
		pl_unclip(f);
	}
	kvs_free(t);
}

/* ---- CDFs ----------------------------------------------------------------- */

/* value at quantile level q by linear interpolation; NAN when absent */
static double quantile(const rp_cdf *c, const double *v, double q)
{
	if (!c->n || !v)
		return NAN;
	for (size_t i = 0; i < c->n; i++)
		if (c->q[i] >= q) {
			if (i == 0 || c->q[i] == c->q[i - 1])
				return v[i];
			double a = (q - c->q[i - 1]) / (c->q[i] - c->q[i - 1]);
			return v[i - 1] + a * (v[i] - v[i - 1]);
		}
	return v[c->n - 1];
}

static void fig_cdf(pl_fig *f, const rp_run *run, int which)
{
	const char *names[32] = { NULL };
	size_t nn = 0;
	double vmax = 0, p99max = 0, cut_max = 0, minpos = INFINITY, p50min = INFINITY;
	bool zeros = false;
	const char *cut_pol = NULL;
	for (size_t i = 0; i < run->npol && nn < 32; i++) {
		const rp_policy *p = &run->pol[i];
		const double *v = p->cdf.v[which];
		if (!p->cdf.n || !v)
			continue;
		names[nn++] = p->name;
		for (size_t j = 0; j < p->cdf.n; j++) {
			if (v[j] > vmax) {
				vmax = v[j];
				cut_pol = p->name;
			}
			if (v[j] > 0)
				minpos = fmin(minpos, v[j]);
			else
				zeros = true;
		}
		p99max = fmax(p99max, quantile(&p->cdf, v, 0.99));
		double p50 = quantile(&p->cdf, v, 0.5);
		if (p50 > 0)
			p50min = fmin(p50min, p50);
	}
	/* Policies often differ by orders of magnitude (paged waits fractions
	 * of a second where max reservation queues for minutes): then a log
	 * axis shows every curve.  Otherwise a linear axis, cut past the
	 * largest p99 when a heavy tail would squeeze the curves. */
	char sub[192];
	double xhi = vmax, xlo = 0;
	bool logx = isfinite(p50min) && vmax > 50 * p50min;
	const char *unit;
	double mul;
	if (logx) {
		xlo = fmax(minpos, vmax / 1e4);
		mul = latency_unit(sqrt(xlo * vmax), &unit);
		snprintf(sub, sizeof sub, "cumulative distribution over requests, log scale%s",
			 zeros ? "; requests with no delay at the left edge" : "");
	} else {
		if (p99max > 0 && vmax > 4 * p99max) {
			xhi = p99max * 1.3;
			cut_max = vmax;
		}
		mul = latency_unit(xhi, &unit);
		if (cut_max > 0) {
			char mx[32];
			rp_fmt_seconds(mx, sizeof mx, cut_max);
			snprintf(sub, sizeof sub,
				 "cumulative distribution over requests; axis cut past the largest p99 (max %s, %s)",
				 mx, cut_pol);
		} else {
			snprintf(sub, sizeof sub, "cumulative distribution over requests, all policies on one plot");
		}
	}
	char title[128];
	snprintf(title, sizeof title, "%s: CDF", rp_cdf_title[which]);
	double y = pl_title(f, title, sub);
	policy_legend(f, &y, names, nn, true);

	pl_panel pn;
	pl_grid(f, 40 * f->s, y, f->w - 40 * f->s, f->h, 1, 1, &pn, 1);
	pn.xa.scale = logx ? PL_LOG10 : PL_LINEAR;
	pn.ya.scale = PL_LINEAR;
	if (logx)
		pl_axis_fit(&pn.xa, xlo * mul, vmax * mul, 10);
	else
		pl_axis_fit(&pn.xa, 0, xhi > 0 ? xhi * mul : 1, 10);
	pl_axis_fit(&pn.ya, 0, 100, 10);
	static const char *const axis[RP_NCDF] = { "queueing delay", "time to first token",
						   "time per output token" };
	snprintf(pn.xa.title, sizeof pn.xa.title, "%s (%s%s)", axis[which], unit,
		 logx ? ", log scale" : "");
	snprintf(pn.ya.title, sizeof pn.ya.title, "requests at or below (%%)");
	pl_axes(f, &pn, NULL, INK, true, true);

	/* p50 and p99 guides, labelled on the side away from the frame */
	static const double guide[] = { 50, 99 };
	static const char *const glabel[] = { "p50", "p99" };
	for (int g = 0; g < 2; g++) {
		double gx[2] = { pn.xa.lo, pn.xa.hi }, gy[2] = { guide[g], guide[g] };
		pl_line(f, &pn, gx, gy, 2, MUTED, 1.5, true, false);
		pl_text(f, pn.x + pn.w - 8 * f->s,
			pl_mapy(&pn, guide[g]) + (g ? 16 : -16) * f->s, 18, PL_RIGHT, false,
			MUTED, 0, glabel[g]);
	}

	pl_clip(f, &pn);
	for (size_t i = 0; i < run->npol; i++) {
		const rp_policy *p = &run->pol[i];
		const double *v = p->cdf.v[which];
		if (!p->cdf.n || !v)
			continue;
		double *x = kvs_reallocarray(NULL, 2 * p->cdf.n, sizeof *x);
		if (!x)
			continue;
		double *q = x + p->cdf.n;
		for (size_t j = 0; j < p->cdf.n; j++) {
			x[j] = v[j] * mul;
			q[j] = p->cdf.q[j] * 100;
		}
		pl_line(f, &pn, x, q, p->cdf.n, rp_policy_color(p->name), 4, false, false);
		kvs_free(x);
	}
	pl_unclip(f);
}

/* ---- sweep ---------------------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int rx = rp_policy_rank(x), ry = rp_policy_rank(y);
	return rx != ry ? (rx < ry ? -1 : 1) : strcmp(x, y);
}

/* distinct policy names of the sweep rows (or capacity entries), display order */
static size_t sweep_policies(const rp_run *run, bool capacity, const char **out,
			     size_t cap)
{
	size_t n = 0, total = capacity ? run->ncap : run->nrows;
	for (size_t i = 0; i < total; i++) {
		const char *name = capacity ? run->cap[i].policy : run->rows[i].policy;
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp(out[j], name) == 0;
		if (!seen && n < cap)
			out[n++] = name;
	}
	qsort(out, n, sizeof *out, name_cmp);
	return n;
}

typedef struct xy {
	double x, y;
} xy;

static int xy_cmp(const void *a, const void *b)
{
	const xy *p = a, *q = b;
	return p->x < q->x ? -1 : p->x > q->x;
}

static void block_range(const rp_run *run, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = 0;
	for (size_t i = 0; i < run->nrows; i++) {
		*lo = fmin(*lo, run->rows[i].block_size);
		*hi = fmax(*hi, run->rows[i].block_size);
	}
	if (*hi <= *lo) {
		*lo = *lo / 2 >= 1 ? *lo / 2 : 1;
		*hi = *hi * 2;
	}
}

/* How a sweep panel scales its y axis. */
typedef struct sweep_y {
	bool latency;      /* seconds: pick µs / ms / s */
	bool log_wide;     /* log10 when the positive values span > 2 decades */
	bool log_decade;   /* log10 when they span > 1 decade (latencies) */
	double slo;        /* seconds: a dashed SLO line; NAN or 0 for none */
	bool from_data;    /* linear axis from the smallest value, not from 0 */
	bool skip_ones;    /* draw policies constant at 1 as one dashed guide
	                    * (relative costs of contiguous kernels) */
	bool skip_zeros;   /* leave out policies constant at 0 (no prefix
	                    * caching outside paged), noted in the panel */
	double mul;        /* values x this (1; 100 for fractions as percent) */
} sweep_y;

/* Is every finite value of this policy's field exactly v? */
static bool policy_constant_at(const rp_run *run, const char *name, int field, double v)
{
	for (size_t i = 0; i < run->nrows; i++)
		if (strcmp(run->rows[i].policy, name) == 0 && isfinite(run->rows[i].f[field]) &&
		    run->rows[i].f[field] != v)
			return false;
	return true;
}

/* One panel: field against block size, a line per policy. */
static void sweep_panel_y(pl_fig *f, pl_panel *pn, const rp_run *run, int field,
			  const sweep_y *o, const char *title, const char *ytitle)
{
	const char *names[32] = { NULL };
	size_t nn = sweep_policies(run, false, names, 32);
	double lo, hi, vmax = 0, vmin = INFINITY, pmin = INFINITY;
	double mul0 = o->mul > 0 ? o->mul : 1;
	size_t have = 0;
	bool guide = false;
	bool drawn[32];
	size_t nskip0 = 0;
	for (size_t k = 0; k < nn; k++) {
		drawn[k] = !(o->skip_zeros && policy_constant_at(run, names[k], field, 0.0));
		nskip0 += !drawn[k];
	}
	block_range(run, &lo, &hi);
	for (size_t i = 0; i < run->nrows; i++) {
		double v = run->rows[i].f[field] * mul0;
		size_t k = 0;
		while (k < nn && strcmp(names[k], run->rows[i].policy) != 0)
			k++;
		if (!isfinite(v) || (k < nn && !drawn[k]))
			continue;
		have++;
		vmax = fmax(vmax, v);
		vmin = fmin(vmin, v);
		if (v > 0)
			pmin = fmin(pmin, v);
	}
	const char *unit = "";
	double mul = o->latency ? latency_unit(vmax, &unit) * mul0 : mul0;
	double umul = mul / mul0;   /* the latency unit alone */
	bool logy = isfinite(pmin) && ((o->log_wide && vmax > 100 * pmin) ||
					(o->log_decade && vmax > 10 * pmin));
	bool slo = isfinite(o->slo) && o->slo > 0 && have;
	if (slo) {  /* the SLO line stays inside the axis */
		vmax = fmax(vmax, o->slo * mul0);
		pmin = fmin(pmin, o->slo * mul0);
		vmin = fmin(vmin, o->slo * mul0);
	}
	pn->xa.scale = PL_LOG2;
	pn->ya.scale = logy ? PL_LOG10 : PL_LINEAR;
	pl_axis_fit(&pn->xa, lo, hi, 10);
	if (logy)
		pl_axis_fit(&pn->ya, pmin * umul, vmax * umul, 8);
	else if (o->from_data && have && vmax > vmin)
		pl_axis_fit(&pn->ya, vmin * umul - 0.04 * (vmax - vmin) * umul,
			    vmax * umul + 0.06 * (vmax - vmin) * umul, 5);
	else if (o->from_data && have)
		pl_axis_fit(&pn->ya, vmin * umul * 0.95, vmax * umul * 1.05, 5);
	else
		pl_axis_fit(&pn->ya, 0, vmax > 0 ? vmax * umul * 1.08 : 1, 5);
	snprintf(pn->xa.title, sizeof pn->xa.title, "block size (tokens, log2)");
	if (o->latency)
		snprintf(pn->ya.title, sizeof pn->ya.title, "%s (%s)", ytitle, unit);
	else
		snprintf(pn->ya.title, sizeof pn->ya.title, "%s%s", ytitle,
			 logy ? ", log" : "");
	pl_axes(f, pn, title, INK, true, true);
	if (!have) {
		pl_note(f, pn, "not in this sweep");
		return;
	}
	xy *pts = kvs_reallocarray(NULL, run->nrows, sizeof *pts);
	double *x = kvs_reallocarray(NULL, 2 * run->nrows, sizeof *x);
	pl_clip(f, pn);
	if (pts && x) {
		double *yv = x + run->nrows;
		for (size_t k = 0; k < nn; k++) {
			if (!drawn[k])
				continue;
			if (o->skip_ones && policy_constant_at(run, names[k], field, 1.0)) {
				guide = true;
				continue;
			}
			size_t m = 0;
			for (size_t i = 0; i < run->nrows; i++)
				if (strcmp(run->rows[i].policy, names[k]) == 0 &&
				    isfinite(run->rows[i].f[field]))
					pts[m++] = (xy){ run->rows[i].block_size,
							 run->rows[i].f[field] * mul };
			qsort(pts, m, sizeof *pts, xy_cmp);
			for (size_t j = 0; j < m; j++) {
				x[j] = pts[j].x;
				yv[j] = pts[j].y;
			}
			pl_line(f, pn, x, yv, m, rp_policy_color(names[k]), 4, false, true);
		}
		if (slo) {
			double gx[2] = { pn->xa.lo, pn->xa.hi };
			double gy[2] = { o->slo * mul, o->slo * mul };
			char lab[48], sb[32];
			rp_fmt_seconds(sb, sizeof sb, o->slo);
			snprintf(lab, sizeof lab, "SLO %s", sb);
			pl_line(f, pn, gx, gy, 2, INK, 2.5, true, false);
			pl_text(f, pl_mapx(pn, pn->xa.hi) - 12 * f->s, pl_mapy(pn, gy[0]) - 8 * f->s,
				17, PL_RIGHT, false, INK, 0, lab);
		}
		if (guide) {
			double gx[2] = { pn->xa.lo, pn->xa.hi }, gy[2] = { 1.0, 1.0 };
			pl_line(f, pn, gx, gy, 2, INK, 2.5, true, false);
			pl_text(f, pl_mapx(pn, pn->xa.lo) + 12 * f->s, pl_mapy(pn, 1.0) + 26 * f->s,
				17, PL_LEFT, false, INK, 0, "contiguous policies: 1.000");
		}
	}
	pl_unclip(f);
	if (nskip0)
		pl_text(f, pn->x + 12 * f->s, pn->y + pn->h - 14 * f->s, 17, PL_LEFT, false, INK, 0,
			nskip0 == 1 ? "one policy at 0 not drawn" : "policies at 0 not drawn");
	if (logy && vmin <= 0)
		pl_text(f, pn->x + 12 * f->s, pn->y + pn->h - 14 * f->s, 17, PL_LEFT, false, INK, 0,
			"zero: on the bottom edge");
	kvs_free(pts);
	kvs_free(x);
}

static void sweep_panel(pl_fig *f, pl_panel *pn, const rp_run *run, int field,
			bool latency, const char *title, const char *ytitle)
{
	sweep_y o = { .latency = latency, .slo = NAN, .mul = 1 };
	sweep_panel_y(f, pn, run, field, &o, title, ytitle);
}

/* any row with a positive value of field */
static bool rows_positive(const rp_run *run, int field)
{
	for (size_t i = 0; i < run->nrows; i++)
		if (run->rows[i].f[field] > 0)
			return true;
	return false;
}

static bool rows_have(const rp_run *run, int field)
{
	for (size_t i = 0; i < run->nrows; i++)
		if (isfinite(run->rows[i].f[field]))
			return true;
	return false;
}

static void sweep_header(pl_fig *f, const rp_run *run, const char *title,
			 const char *sub, double *y)
{
	const char *names[32] = { NULL };
	size_t nn = sweep_policies(run, false, names, 32);
	*y = pl_title(f, title, sub);
	policy_legend(f, y, names, nn, true);
}

static void fig_sweep(pl_fig *f, const rp_run *run, int kind)
{
	double y;
	pl_panel pn[3];
	switch (kind) {
	case FIG_SWEEP_FRAG: {
		/* the trade-off the sweep is about: small blocks waste less of the
		 * last block (and share prefixes finely), large blocks make the
		 * block-table walk of decode attention cheaper */
		bool hits = rows_positive(run, RP_ROW_PREFIX_HIT);
		bool kern = rows_have(run, RP_ROW_KERNEL_REL);
		int np = 1 + hits + kern, k = 0;
		sweep_header(f, run, "Block-size trade-off: KV memory against kernel time",
			     kern ? "small blocks lose less KV to partly filled blocks; large blocks "
				    "make decode attention cheaper"
				  : "time-weighted share of the KV budget lost to partly filled blocks",
			     &y);
		pl_grid(f, 10 * f->s, y, f->w - 10 * f->s, f->h, 1, np, pn, (size_t)np);
		sweep_y oi = { .log_wide = true, .mul = 1 };
		sweep_panel_y(f, &pn[k++], run, RP_ROW_IFRAG, &oi, "Internal fragmentation",
			      "% of KV budget, time-weighted");
		if (hits) {
			sweep_y oh = { .from_data = true, .skip_zeros = true, .mul = 100 };
			sweep_panel_y(f, &pn[k++], run, RP_ROW_PREFIX_HIT, &oh,
				      "Prefix-cache hits", "% of prompt tokens");
		}
		if (kern) {
			sweep_y ok = { .from_data = true, .skip_ones = true, .mul = 1 };
			sweep_panel_y(f, &pn[k++], run, RP_ROW_KERNEL_REL, &ok,
				      "Attention kernel (model)", "decode time / contiguous kernel");
		}
		break;
	}
	case FIG_SWEEP_TPUT:
		sweep_header(f, run, "Throughput against block size", NULL, &y);
		pl_grid(f, 10 * f->s, y, f->w - 10 * f->s, f->h, 1, 2, pn, 2);
		sweep_panel(f, &pn[0], run, RP_ROW_RPS, false, "Requests", "requests / s");
		sweep_panel(f, &pn[1], run, RP_ROW_OTPS, false, "Output tokens",
			    "output tokens / s");
		break;
	default: {
		/* latencies span decades (paged's seconds against max's minutes):
		 * log10 past one; the capacity search's SLOs as dashed lines */
		double st = NAN, sp = NAN;
		for (size_t i = 0; i < run->ncap; i++) {
			if (isnan(st) && run->cap[i].slo_ttft_s > 0)
				st = run->cap[i].slo_ttft_s;
			if (isnan(sp) && run->cap[i].slo_tpot_s > 0)
				sp = run->cap[i].slo_tpot_s;
		}
		sweep_header(f, run, "p99 latency against block size",
			     isfinite(st) || isfinite(sp) ? "dashed: the SLOs of the capacity search"
							  : NULL, &y);
		pl_grid(f, 10 * f->s, y, f->w - 10 * f->s, f->h, 1, 3, pn, 3);
		sweep_y oq = { .latency = true, .log_decade = true, .slo = NAN, .mul = 1 };
		sweep_y ot = { .latency = true, .log_decade = true, .slo = st, .mul = 1 };
		sweep_y op = { .latency = true, .log_decade = true, .slo = sp, .mul = 1 };
		sweep_panel_y(f, &pn[0], run, RP_ROW_QUEUE_P99, &oq, "Queueing delay",
			      "p99 queueing delay");
		sweep_panel_y(f, &pn[1], run, RP_ROW_TTFT_P99, &ot, "Time to first token",
			      "p99 TTFT");
		sweep_panel_y(f, &pn[2], run, RP_ROW_TPOT_P99, &op, "Time per output token",
			      "p99 TPOT");
		break;
	}
	}
}

/* ---- capacity ------------------------------------------------------------- */

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static bool same_block(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

/* Top of a capacity entry's whisker: the next rate tried (fail_rate), else
 * one grid step up; max_rate itself when neither is known. */
static double cap_top(const rp_capacity *c)
{
	if (isfinite(c->fail_rate) && c->fail_rate > c->max_rate)
		return c->fail_rate;
	if (isfinite(c->tolerance) && c->tolerance > 0)
		return c->max_rate * (1.0 + c->tolerance);
	return c->max_rate;
}

static bool cap_is(const rp_capacity *c, const char *outcome)
{
	return c->outcome && strcmp(c->outcome, outcome) == 0;
}

static void fig_capacity(pl_fig *f, const rp_run *run)
{
	const char *names[32] = { NULL };
	size_t nn = sweep_policies(run, true, names, 32);
	const rp_capacity *c0 = &run->cap[0];
	char sub[256], a[32], b[32], tol[48] = "";
	rp_fmt_seconds(a, sizeof a, c0->slo_ttft_s);
	rp_fmt_seconds(b, sizeof b, c0->slo_tpot_s);
	/* the sweep's tolerance is the relative step of its rate grid; the
	 * whisker reaches the next rate tried, which misses the SLOs */
	if (isfinite(c0->tolerance) && c0->tolerance > 0)
		snprintf(tol, sizeof tol, " (grid step %g %%)", 100 * c0->tolerance);
	snprintf(sub, sizeof sub,
		 "highest arrival rate with p99 TTFT ≤ %s and p99 TPOT ≤ %s; "
		 "whisker: to the next rate tried, which misses them%s",
		 a, b, tol);
	double y = pl_title(f, "Capacity: sustainable request rate per policy", sub);
	policy_legend(f, &y, names, nn, false);

	/* groups: distinct block sizes (NAN = one group without a size) */
	double groups[64];
	size_t ng = 0;
	bool has_nan = false;
	for (size_t i = 0; i < run->ncap; i++) {
		double bs = run->cap[i].block_size;
		if (isnan(bs)) {
			has_nan = true;
			continue;
		}
		bool seen = false;
		for (size_t g = 0; g < ng && !seen; g++)
			seen = groups[g] == bs;
		if (!seen && ng < 63)
			groups[ng++] = bs;
	}
	qsort(groups, ng, sizeof *groups, dbl_cmp);
	if (has_nan)
		groups[ng++] = NAN;

	double vmax = 0;
	for (size_t i = 0; i < run->ncap; i++)
		vmax = fmax(vmax, cap_top(&run->cap[i]));
	pl_panel pn;
	pl_grid(f, 40 * f->s, y, f->w - 40 * f->s, f->h, 1, 1, &pn, 1);
	pn.xa.scale = pn.ya.scale = PL_LINEAR;
	pn.xa.lo = 0;
	pn.xa.hi = 1;
	pl_axis_fit(&pn.ya, 0, vmax > 0 ? vmax * 1.12 : 1, 6);
	snprintf(pn.ya.title, sizeof pn.ya.title, "requests / s");
	snprintf(pn.xa.title, sizeof pn.xa.title, "%s",
		 ng > 1 || !has_nan ? "block size (tokens)" : "policy");
	pl_axes(f, &pn, NULL, INK, false, true);

	double gw = pn.w / (double)ng;
	double bw = fmin(gw * 0.8 / (double)(nn ? nn : 1), 160 * f->s);
	for (size_t g = 0; g < ng; g++) {
		double gx = pn.x + gw * ((double)g + 0.5);
		char lab[32];
		if (isnan(groups[g]))
			snprintf(lab, sizeof lab, "%s", ng > 1 ? "(no block size)" : "");
		else
			snprintf(lab, sizeof lab, "%g", groups[g]);
		if (*lab)
			pl_text(f, gx, pn.y + pn.h + 22 * f->s, 20, PL_CENTER, false, INK, 0, lab);
		for (size_t k = 0; k < nn; k++) {
			for (size_t i = 0; i < run->ncap; i++) {
				const rp_capacity *c = &run->cap[i];
				if (strcmp(c->policy, names[k]) != 0 || !same_block(c->block_size, groups[g]))
					continue;
				double cx = gx + bw * ((double)k - (double)(nn - 1) / 2.0);
				rp_rgb col = rp_policy_color(c->policy);
				pl_bar(f, &pn, cx, bw * 0.9, c->max_rate, col);
				double top = cap_top(c);
				if (top > c->max_rate && !cap_is(c, "unbounded")) {
					/* the true limit lies in [max_rate, next rate tried) */
					double wy[2] = { c->max_rate, top };
					cairo_t *cr = f->cr;
					cairo_save(cr);
					cairo_set_source_rgb(cr, INK.r, INK.g, INK.b);
					cairo_set_line_width(cr, 2 * f->s);
					cairo_move_to(cr, cx, pl_mapy(&pn, wy[0]));
					cairo_line_to(cr, cx, pl_mapy(&pn, wy[1]));
					cairo_move_to(cr, cx - 8 * f->s, pl_mapy(&pn, wy[1]));
					cairo_line_to(cr, cx + 8 * f->s, pl_mapy(&pn, wy[1]));
					cairo_stroke(cr);
					cairo_restore(cr);
				}
				char val[40];
				if (cap_is(c, "unattainable")) {
					snprintf(val, sizeof val, "none");
				} else {
					char num[32];
					rp_fmt_num(num, sizeof num, c->max_rate, 3);
					/* unbounded: the SLOs held up to the search limit */
					snprintf(val, sizeof val, "%s%s",
						 cap_is(c, "unbounded") ? "≥ " : "", num);
				}
				pl_text(f, cx, pl_mapy(&pn, top) - 18 * f->s, 19, PL_CENTER, true,
					INK, 0, val);
				if (ng == 1 && has_nan)
					pl_text(f, cx, pn.y + pn.h + 22 * f->s, 20, PL_CENTER, false,
						INK, 0, c->policy);
				break;
			}
		}
	}
}

/* ---- request-rate curve (sweep --rates) ---------------------------------- */

double rp_curve_block(const rp_run *run, const char *policy)
{
	/* 16 tokens, the engines' default; else the policy's nearest on a log
	 * scale (the smaller of two as near) */
	double best = NAN;
	for (size_t i = 0; i < run->nrows; i++) {
		const rp_row *r = &run->rows[i];
		if (strcmp(r->policy, policy) != 0)
			continue;
		double d = fabs(log2(r->block_size / 16)), db = fabs(log2(best / 16));
		if (isnan(best) || d < db || (d == db && r->block_size < best))
			best = r->block_size;
	}
	return best;
}

size_t rp_curve_rows(const rp_run *run, const char *policy, const rp_row **out,
		     size_t cap)
{
	double bs = rp_curve_block(run, policy);
	size_t n = 0;
	for (size_t i = 0; i < run->nrows && n < cap; i++) {
		const rp_row *r = &run->rows[i];
		if (strcmp(r->policy, policy) != 0 || r->block_size != bs || !(r->rate > 0))
			continue;
		/* insertion: a curve has at most KVS_SWEEP_MAX_RATES rows */
		size_t j = n++;
		for (; j > 0 && out[j - 1]->rate > r->rate; j--)
			out[j] = out[j - 1];
		out[j] = r;
	}
	return n;
}

/* One panel: served output tokens/s (x) against a p99 latency (y), a line
 * per policy at its rp_curve_block, each point labelled by its offered
 * rate; latencies span decades once a policy saturates: log10 then. */
static void curve_panel(pl_fig *f, pl_panel *pn, const rp_run *run, int field,
			const char *title, const char *ytitle)
{
	const char *names[32] = { NULL };
	size_t nn = sweep_policies(run, false, names, 32);
	double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
	for (size_t i = 0; i < run->nrows; i++) {
		const rp_row *r = &run->rows[i];
		double x = r->f[RP_ROW_OTPS], v = r->f[field];
		if (!isfinite(x) || !(v > 0) || r->block_size != rp_curve_block(run, r->policy))
			continue;
		xlo = fmin(xlo, x);
		xhi = fmax(xhi, x);
		ylo = fmin(ylo, v);
		yhi = fmax(yhi, v);
	}
	if (!(xhi > 0)) {
		pn->xa.scale = pn->ya.scale = PL_LINEAR;
		pl_axis_fit(&pn->xa, 0, 1, 5);
		pl_axis_fit(&pn->ya, 0, 1, 5);
		snprintf(pn->xa.title, sizeof pn->xa.title, "output tokens / s (served)");
		snprintf(pn->ya.title, sizeof pn->ya.title, "%s (s)", ytitle);
		pl_axes(f, pn, title, INK, true, true);
		pl_note(f, pn, "no data");
		return;
	}
	const char *unit = "";
	double mul = latency_unit(yhi, &unit);
	bool logy = yhi > 10 * ylo;
	pn->xa.scale = PL_LINEAR;
	pn->ya.scale = logy ? PL_LOG10 : PL_LINEAR;
	pl_axis_fit(&pn->xa, 0, xhi * 1.08, 6);
	if (logy)
		pl_axis_fit(&pn->ya, ylo * mul, yhi * mul, 8);
	else
		pl_axis_fit(&pn->ya, 0, yhi * mul * 1.08, 5);
	snprintf(pn->xa.title, sizeof pn->xa.title, "output tokens / s (served)");
	snprintf(pn->ya.title, sizeof pn->ya.title, "%s (%s%s)", ytitle, unit,
		 logy ? ", log10" : "");
	pl_axes(f, pn, title, INK, true, true);
	pl_clip(f, pn);
	for (size_t k = 0; k < nn; k++) {
		const rp_row *rows[256];
		size_t nr = rp_curve_rows(run, names[k], rows, 256), np = 0;
		double x[256], y[256], rate[256];
		for (size_t j = 0; j < nr; j++) {
			const rp_row *r = rows[j];
			if (!isfinite(r->f[RP_ROW_OTPS]) || !(r->f[field] > 0))
				continue;
			x[np] = r->f[RP_ROW_OTPS];
			y[np] = r->f[field] * mul;
			rate[np++] = r->rate;
		}
		rp_rgb c = rp_policy_color(names[k]);
		pl_line(f, pn, x, y, np, c, 2.0, false, true);
		for (size_t j = 0; j < np; j++) {
			char b[32];
			rp_fmt_num(b, sizeof b, rate[j], 3);
			pl_text(f, pl_mapx(pn, x[j]) + 7 * f->s, pl_mapy(pn, y[j]) - 7 * f->s, 14,
				PL_LEFT, false, c, 0, b);
		}
	}
	pl_unclip(f);
}

static void fig_curve(pl_fig *f, const rp_run *run)
{
	double y;
	pl_panel pn[2];
	sweep_header(f, run, "Throughput against latency by offered rate",
		     "one line per policy at block size 16 (or its nearest); points labelled "
		     "by offered requests / s", &y);
	pl_grid(f, 10 * f->s, y, f->w - 10 * f->s, f->h, 1, 2, pn, 2);
	curve_panel(f, &pn[0], run, RP_ROW_TTFT_P99, "Time to first token", "p99 TTFT");
	curve_panel(f, &pn[1], run, RP_ROW_TPOT_P99, "Time per output token", "p99 TPOT");
}

/* ---- plan and render ------------------------------------------------------ */

static void draw_figure(const rp_fig *fig, cairo_t *cr, double w, double h)
{
	pl_fig f;
	pl_fig_init(&f, cr, w, h);
	switch (fig->kind) {
	case FIG_MEMORY: fig_memory(&f, fig->run); break;
	case FIG_REQUESTS: fig_requests(&f, fig->run); break;
	case FIG_CDF: fig_cdf(&f, fig->run, fig->which); break;
	case FIG_CAPACITY: fig_capacity(&f, fig->run); break;
	case FIG_CURVE: fig_curve(&f, fig->run); break;
	default: fig_sweep(&f, fig->run, fig->kind); break;
	}
}

static kvs_status add(rp_fig **figs, size_t *n, const rp_run *run, int kind,
		      int which, const char *name, const char *title)
{
	rp_fig *a = kvs_reallocarray(*figs, *n + 1, sizeof *a);
	if (!a)
		return kvs_fail(KVS_ERR_NOMEM, "report: out of memory");
	*figs = a;
	rp_fig *g = &a[(*n)++];
	memset(g, 0, sizeof *g);
	g->kind = kind;
	g->which = which;
	g->run = run;
	snprintf(g->name, sizeof g->name, "%s%s", run->prefix, name);
	snprintf(g->title, sizeof g->title, "%s", title);
	return KVS_OK;
}

kvs_status rp_figures_plan(const rp_run *run, rp_fig **figs, size_t *n)
{
	kvs_status st = KVS_OK;
	if (run->kind == RP_KIND_POLICIES) {
		bool ts = false, rw = false, cdf[RP_NCDF] = { false };
		for (size_t i = 0; i < run->npol; i++) {
			const rp_policy *p = &run->pol[i];
			ts |= p->ts.n > 0;
			rw |= p->ts.n > 0 && (p->ts.running || p->ts.waiting);
			for (int k = 0; k < RP_NCDF; k++)
				cdf[k] |= p->cdf.n > 0 && p->cdf.v[k];
		}
		static const char *const cdf_name[RP_NCDF] = { "cdf-queue-delay", "cdf-ttft",
							       "cdf-tpot" };
		if (ts)
			st = add(figs, n, run, FIG_MEMORY, 0, "memory", "KV cache memory over time");
		if (!st && rw)
			st = add(figs, n, run, FIG_REQUESTS, 0, "requests",
				 "Running and waiting requests over time");
		for (int k = 0; k < RP_NCDF && !st; k++)
			if (cdf[k])
				st = add(figs, n, run, FIG_CDF, k, cdf_name[k], rp_cdf_title[k]);
		return st;
	}
	if (run->kind == RP_KIND_CURVE)
		return add(figs, n, run, FIG_CURVE, 0, "rate-curve",
			   "Throughput against p99 latency by offered rate");
	bool frag = false, tput = false, lat = false;
	for (size_t i = 0; i < run->nrows; i++) {
		const double *v = run->rows[i].f;
		frag |= isfinite(v[RP_ROW_IFRAG]);
		tput |= isfinite(v[RP_ROW_RPS]) || isfinite(v[RP_ROW_OTPS]);
		lat |= isfinite(v[RP_ROW_QUEUE_P99]) || isfinite(v[RP_ROW_TTFT_P99]) ||
		       isfinite(v[RP_ROW_TPOT_P99]);
	}
	if (frag)
		st = add(figs, n, run, FIG_SWEEP_FRAG, 0, "sweep-fragmentation",
			 "Block-size trade-off: internal fragmentation, prefix hits and "
			 "kernel time against block size");
	if (!st && tput)
		st = add(figs, n, run, FIG_SWEEP_TPUT, 0, "sweep-throughput",
			 "Throughput against block size");
	if (!st && lat)
		st = add(figs, n, run, FIG_SWEEP_LAT, 0, "sweep-latency",
			 "p99 latency against block size");
	if (!st && run->ncap)
		st = add(figs, n, run, FIG_CAPACITY, 0, "capacity",
			 "Capacity: sustainable request rate per policy");
	return st;
}

static kvs_status check(cairo_surface_t *s, const char *path)
{
	cairo_status_t cs = cairo_surface_status(s);
	if (cs != CAIRO_STATUS_SUCCESS)
		return kvs_fail(cs == CAIRO_STATUS_NO_MEMORY ? KVS_ERR_NOMEM : KVS_ERR_IO,
				"%s: cannot draw: %s", path, cairo_status_to_string(cs));
	return KVS_OK;
}

/* cairo writes figures through kvs_outfile (temporary name, renamed when
 * complete) */
static cairo_status_t out_write(void *closure, const unsigned char *data, unsigned int len)
{
	FILE *f = kvs_outfile_stream(closure);
	return fwrite(data, 1, len, f) == len ? CAIRO_STATUS_SUCCESS
					      : CAIRO_STATUS_WRITE_ERROR;
}

static kvs_status out_end(kvs_outfile *o, kvs_status st)
{
	if (st != KVS_OK) {
		kvs_outfile_discard(o);
		return st;
	}
	return kvs_outfile_commit(o);
}

kvs_status rp_figure_render(const rp_fig *fig, const char *dir, unsigned w,
			    unsigned h)
{
	kvs_outfile *out;
	char path[4096];
	kvs_status st;
	int len = snprintf(path, sizeof path, "%s/%s.svg", dir, fig->name);
	if (len < 0 || (size_t)len >= sizeof path)
		return kvs_fail(KVS_ERR_INVALID, "%s: output path too long", dir);

	if ((st = kvs_outfile_open(path, &out)) != KVS_OK)
		return st;
	cairo_surface_t *s = cairo_svg_surface_create_for_stream(out_write, out, w, h);
	if ((st = check(s, path)) != KVS_OK) {
		cairo_surface_destroy(s);
		return out_end(out, st);
	}
	cairo_svg_surface_restrict_to_version(s, CAIRO_SVG_VERSION_1_1);
	cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
	cairo_t *cr = cairo_create(s);
	draw_figure(fig, cr, w, h);
	cairo_status_t cs = cairo_status(cr);
	cairo_destroy(cr);
	cairo_surface_finish(s);
	st = check(s, path);
	cairo_surface_destroy(s);
	if (st == KVS_OK && cs != CAIRO_STATUS_SUCCESS)
		st = kvs_fail(KVS_ERR_IO, "%s: cannot draw: %s", path,
			      cairo_status_to_string(cs));
	if ((st = out_end(out, st)) != KVS_OK)
		return st;

	snprintf(path, sizeof path, "%s/%s.png", dir, fig->name);
	s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)w, (int)h);
	if ((st = check(s, path)) != KVS_OK) {
		cairo_surface_destroy(s);
		return st;
	}
	cr = cairo_create(s);
	draw_figure(fig, cr, w, h);
	cs = cairo_status(cr);
	cairo_destroy(cr);
	if (cs != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(s);
		return kvs_fail(KVS_ERR_IO, "%s: cannot draw: %s", path,
				cairo_status_to_string(cs));
	}
	if ((st = kvs_outfile_open(path, &out)) != KVS_OK) {
		cairo_surface_destroy(s);
		return st;
	}
	cs = cairo_surface_write_to_png_stream(s, out_write, out);
	cairo_surface_destroy(s);
	if (cs != CAIRO_STATUS_SUCCESS)
		st = kvs_fail(KVS_ERR_IO, "%s: cannot write: %s", path,
			      cairo_status_to_string(cs));
	return out_end(out, st);
}
