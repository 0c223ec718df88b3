/*
 * plot.c - axes, ticks, legends and marks on a cairo context (see plot.h).
 *
 * Units: a figure is w x h units (1600 x 900 by default; one unit is one PNG
 * pixel and one SVG px).  Sizes below are for s = 1 (a 900-unit-high
 * figure) and scale with the figure height so a smaller PNG keeps its
 * proportions.
 */
#include "kvs_config.h"
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FONT "DejaVu Sans"

static const rp_rgb INK = { 0.13, 0.13, 0.13 };
static const rp_rgb MUTED = { 0.38, 0.38, 0.38 };
static const rp_rgb GRID = { 0.88, 0.88, 0.88 };
static const rp_rgb FRAME = { 0.45, 0.45, 0.45 };

/* sizes in units at s = 1 */
#define SZ_TITLE 34.0
#define SZ_SUBTITLE 21.0
#define SZ_PANEL 23.0
#define SZ_TICK 19.0
#define SZ_AXIS 21.0
#define SZ_LEGEND 22.0

/* room around a panel's plot area, for tick labels and axis titles */
#define M_LEFT 118.0
#define M_RIGHT 28.0
#define M_TOP 44.0
#define M_BOTTOM 84.0

static void set_rgb(cairo_t *cr, rp_rgb c)
{
	cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

void pl_fig_init(pl_fig *f, cairo_t *cr, double w, double h)
{
	f->cr = cr;
	f->w = w;
	f->h = h;
	f->s = h / 900.0;
	if (w / 1600.0 < f->s)
		f->s = w / 1600.0;
	cairo_save(cr);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_restore(cr);
	cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
	cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
}

static void font(const pl_fig *f, double size, bool bold)
{
	cairo_select_font_face(f->cr, FONT, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(f->cr, size * f->s);
}

double pl_text_width(const pl_fig *f, double size, bool bold, const char *text)
{
	cairo_text_extents_t e;
	cairo_save(f->cr);
	font(f, size, bold);
	cairo_text_extents(f->cr, text, &e);
	cairo_restore(f->cr);
	return e.x_advance;
}

void pl_text(const pl_fig *f, double x, double y, double size, int halign,
	     bool bold, rp_rgb c, double angle, const char *text)
{
	cairo_t *cr = f->cr;
	cairo_text_extents_t e;
	cairo_font_extents_t fe;
	cairo_save(cr);
	font(f, size, bold);
	cairo_text_extents(cr, text, &e);
	cairo_font_extents(cr, &fe);
	cairo_translate(cr, x, y);
	if (angle != 0)
		cairo_rotate(cr, angle);
	cairo_move_to(cr, -e.x_advance * halign / 2.0, (fe.ascent - fe.descent) / 2.0);
	set_rgb(cr, c);
	cairo_show_text(cr, text);
	cairo_new_path(cr);
	cairo_restore(cr);
}

double pl_title(const pl_fig *f, const char *title, const char *subtitle)
{
	double y = 38 * f->s;
	pl_text(f, f->w / 2, y, SZ_TITLE, PL_CENTER, true, INK, 0, title);
	y += 30 * f->s;
	if (subtitle && *subtitle) {
		y += 6 * f->s;
		pl_text(f, f->w / 2, y, SZ_SUBTITLE, PL_CENTER, false, MUTED, 0, subtitle);
		y += 26 * f->s;
	}
	return y;
}

double pl_legend(const pl_fig *f, double y, const pl_legend_item *items, size_t n)
{
	const double sw = 30 * f->s, gap = 10 * f->s, space = 38 * f->s;
	const double row_h = 36 * f->s, maxw = f->w - 80 * f->s;
	size_t i = 0;
	y += row_h / 2;
	while (i < n) {
		/* take as many items as fit on this row */
		size_t j = i;
		double total = 0;
		while (j < n) {
			double iw = sw + gap + pl_text_width(f, SZ_LEGEND, false, items[j].label);
			double add = (j > i ? space : 0) + iw;
			if (j > i && total + add > maxw)
				break;
			total += add;
			j++;
		}
		double x = (f->w - total) / 2;
		for (size_t k = i; k < j; k++) {
			cairo_t *cr = f->cr;
			cairo_save(cr);
			set_rgb(cr, items[k].color);
			if (items[k].line) {
				cairo_set_line_width(cr, 5 * f->s);
				if (items[k].dashed) {
					double d[] = { 8 * f->s, 6 * f->s };
					cairo_set_dash(cr, d, 2, 0);
				}
				cairo_move_to(cr, x, y);
				cairo_line_to(cr, x + sw, y);
				cairo_stroke(cr);
			} else {
				cairo_rectangle(cr, x, y - sw / 2 + 3 * f->s, sw, sw - 6 * f->s);
				cairo_fill_preserve(cr);
				set_rgb(cr, FRAME);
				cairo_set_line_width(cr, 1 * f->s);
				cairo_stroke(cr);
			}
			cairo_restore(cr);
			pl_text(f, x + sw + gap, y, SZ_LEGEND, PL_LEFT, false, INK, 0,
				items[k].label);
			x += sw + gap + pl_text_width(f, SZ_LEGEND, false, items[k].label) + space;
		}
		i = j;
		y += row_h;
	}
	return y - row_h / 2 + 8 * f->s;
}

void pl_grid(const pl_fig *f, double x0, double y0, double x1, double y1,
	     int rows, int cols, pl_panel *panels, size_t n)
{
	double cw = (x1 - x0) / cols, ch = (y1 - y0) / rows;
	for (size_t i = 0; i < n; i++) {
		int r = (int)i / cols, c = (int)i % cols;
		pl_panel *p = &panels[i];
		memset(p, 0, sizeof *p);
		p->x = x0 + c * cw + M_LEFT * f->s;
		p->y = y0 + r * ch + M_TOP * f->s;
		p->w = cw - (M_LEFT + M_RIGHT) * f->s;
		p->h = ch - (M_TOP + M_BOTTOM) * f->s;
	}
}

static double tx(const pl_axis *a, double v)
{
	if (a->scale == PL_LOG2)
		return (log2(fmax(v, a->lo)) - log2(a->lo)) / (log2(a->hi) - log2(a->lo));
	if (a->scale == PL_LOG10)
		return (log10(fmax(v, a->lo)) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
	return (v - a->lo) / (a->hi - a->lo);
}

double pl_mapx(const pl_panel *p, double x)
{
	return p->x + tx(&p->xa, x) * p->w;
}

double pl_mapy(const pl_panel *p, double y)
{
	return p->y + p->h - tx(&p->ya, y) * p->h;
}

void pl_axis_fit(pl_axis *a, double lo, double hi, int max_ticks)
{
	if (!isfinite(lo) || !isfinite(hi)) {
		lo = a->scale == PL_LOG2 ? 1 : 0;
		hi = a->scale == PL_LOG2 ? 2 : 1;
	}
	if (lo > hi) {
		double t = lo;
		lo = hi;
		hi = t;
	}
	if (a->scale == PL_LOG10) {
		if (lo <= 0)
			lo = hi > 0 ? hi / 1000 : 1;
		if (hi <= lo)
			hi = lo * 10;
		a->lo = pow(10, floor(log10(lo) + 1e-9));
		a->hi = pow(10, ceil(log10(hi) - 1e-9));
		if (a->hi <= a->lo)
			a->hi = a->lo * 10;
		int span = (int)lround(log10(a->hi / a->lo));
		/* log_every: 1 = label 1, 2 and 5 of each decade; 2 = decades only */
		a->log_every = span <= 3 ? 1 : 2;
		a->step = 0;
		return;
	}
	if (a->scale == PL_LOG2) {
		if (lo <= 0)
			lo = 1;
		if (hi <= lo)
			hi = lo * 2;
		a->lo = exp2(floor(log2(lo) + 1e-9));
		a->hi = exp2(ceil(log2(hi) - 1e-9));
		if (a->hi <= a->lo)
			a->hi = a->lo * 2;
		int span = (int)lround(log2(a->hi / a->lo));
		a->log_every = span > max_ticks ? (span + max_ticks - 1) / max_ticks : 1;
		a->step = 0;
		return;
	}
	if (hi - lo < 1e-12 * (fabs(hi) + fabs(lo)) || hi == lo) {
		if (hi == 0) {
			hi = 1;
		} else {
			double d = fabs(hi) * 0.5;
			lo -= d;
			hi += d;
			if (lo < 0 && hi > 0 && lo > -d * 1.01)
				lo = 0;
		}
	}
	double raw = (hi - lo) / (max_ticks > 1 ? max_ticks : 1);
	double mag = pow(10, floor(log10(raw)));
	double norm = raw / mag, step;
	if (norm <= 1)
		step = mag;
	else if (norm <= 2)
		step = 2 * mag;
	else if (norm <= 2.5)
		step = 2.5 * mag;
	else if (norm <= 5)
		step = 5 * mag;
	else
		step = 10 * mag;
	a->step = step;
	if (a->exact) {
		a->lo = lo;
		a->hi = hi;
		return;
	}
	a->lo = floor(lo / step + 1e-9) * step;
	a->hi = ceil(hi / step - 1e-9) * step;
	if (a->hi <= a->lo)
		a->hi = a->lo + step;
}

void pl_tick_label(char *buf, size_t size, double v, double step)
{
	if (fabs(v) < step * 1e-6)
		v = 0;
	double av = fabs(v);
	if (av >= 1e6 && step >= 1e5) {
		snprintf(buf, size, "%gM", v / 1e6);
		return;
	}
	if (av >= 1e4 && step >= 1e3) {
		snprintf(buf, size, "%gk", v / 1e3);
		return;
	}
	int dec = 0;
	if (step > 0 && step < 1) {
		dec = (int)ceil(-log10(step) - 1e-9);
		/* 2.5, 0.25: one more digit */
		double scaled = step * pow(10, dec);
		if (fabs(scaled - round(scaled)) > 1e-6)
			dec++;
	}
	snprintf(buf, size, "%.*f", dec, v);
}

/* tick values of an axis into t (at most cap); returns the count */
static size_t ticks(const pl_axis *a, double *t, size_t cap, bool *labelled)
{
	size_t n = 0;
	if (a->scale == PL_LOG2) {
		int e0 = (int)lround(log2(a->lo)), e1 = (int)lround(log2(a->hi));
		for (int e = e0; e <= e1 && n < cap; e++) {
			t[n] = exp2(e);
			labelled[n] = (e - e0) % (a->log_every > 0 ? a->log_every : 1) == 0;
			n++;
		}
		return n;
	}
	if (a->scale == PL_LOG10) {
		static const double mant[3] = { 1, 2, 5 };
		int e0 = (int)lround(log10(a->lo)), e1 = (int)lround(log10(a->hi));
		for (int e = e0; e <= e1 && n < cap; e++)
			for (int k = 0; k < 3 && n < cap; k++) {
				double v = mant[k] * pow(10, e);
				if (v > a->hi * (1 + 1e-9))
					break;
				t[n] = v;
				labelled[n++] = k == 0 || a->log_every == 1;
			}
		return n;
	}
	/* from the index, not by repeated addition, so no error accumulates */
	double first = a->step > 0 ? ceil(a->lo / a->step - 1e-6) * a->step : a->lo;
	double count = a->step > 0 ? floor((a->hi - first) / a->step + 1e-6) + 1 : 0;
	for (; n < cap && (double)n < count; n++) {
		t[n] = first + (double)n * a->step;
		labelled[n] = true;
	}
	return n;
}

void pl_axes(const pl_fig *f, const pl_panel *p, const char *title,
	     rp_rgb title_color, bool x_labels, bool y_labels)
{
	cairo_t *cr = f->cr;
	double t[64];
	bool lab[64];
	char buf[32];
	size_t n;

	cairo_save(cr);
	cairo_set_line_width(cr, 1.2 * f->s);
	set_rgb(cr, GRID);
	n = ticks(&p->ya, t, 64, lab);
	for (size_t i = 0; i < n; i++) {
		double y = round(pl_mapy(p, t[i])) + 0.5;
		cairo_move_to(cr, p->x, y);
		cairo_line_to(cr, p->x + p->w, y);
	}
	cairo_stroke(cr);
	if (y_labels)
		for (size_t i = 0; i < n; i++) {
			if (!lab[i])
				continue;
			if (p->ya.scale != PL_LINEAR)
				pl_tick_label(buf, sizeof buf, t[i], t[i]);
			else
				pl_tick_label(buf, sizeof buf, t[i], p->ya.step);
			pl_text(f, p->x - 10 * f->s, pl_mapy(p, t[i]), SZ_TICK, PL_RIGHT,
				false, INK, 0, buf);
		}
	set_rgb(cr, GRID);
	n = x_labels || p->xa.hi > p->xa.lo ? ticks(&p->xa, t, 64, lab) : 0;
	for (size_t i = 0; i < n && x_labels; i++) {
		double x = round(pl_mapx(p, t[i])) + 0.5;
		cairo_move_to(cr, x, p->y);
		cairo_line_to(cr, x, p->y + p->h);
	}
	cairo_stroke(cr);
	if (x_labels)
		for (size_t i = 0; i < n; i++) {
			if (!lab[i])
				continue;
			if (p->xa.scale != PL_LINEAR)
				pl_tick_label(buf, sizeof buf, t[i], t[i]);
			else
				pl_tick_label(buf, sizeof buf, t[i], p->xa.step);
			pl_text(f, pl_mapx(p, t[i]), p->y + p->h + 20 * f->s, SZ_TICK,
				PL_CENTER, false, INK, 0, buf);
		}

	set_rgb(cr, FRAME);
	cairo_set_line_width(cr, 1.5 * f->s);
	cairo_rectangle(cr, p->x, p->y, p->w, p->h);
	cairo_stroke(cr);
	cairo_restore(cr);

	if (p->xa.title[0])
		pl_text(f, p->x + p->w / 2, p->y + p->h + 56 * f->s, SZ_AXIS, PL_CENTER,
			false, INK, 0, p->xa.title);
	if (p->ya.title[0])
		pl_text(f, p->x - (M_LEFT - 26) * f->s, p->y + p->h / 2, SZ_AXIS,
			PL_CENTER, false, INK, -M_PI / 2, p->ya.title);
	if (title && *title)
		pl_text(f, p->x, p->y - 20 * f->s, SZ_PANEL, PL_LEFT, true, title_color,
			0, title);
}

void pl_clip(const pl_fig *f, const pl_panel *p)
{
	cairo_save(f->cr);
	cairo_rectangle(f->cr, p->x, p->y, p->w, p->h);
	cairo_clip(f->cr);
}

void pl_unclip(const pl_fig *f)
{
	cairo_restore(f->cr);
}

void pl_line(const pl_fig *f, const pl_panel *p, const double *x,
	     const double *y, size_t n, rp_rgb c, double width, bool dashed,
	     bool markers)
{
	cairo_t *cr = f->cr;
	cairo_save(cr);
	set_rgb(cr, c);
	cairo_set_line_width(cr, width * f->s);
	if (dashed) {
		double d[] = { 10 * f->s, 7 * f->s };
		cairo_set_dash(cr, d, 2, 0);
	}
	bool pen = false;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]) || !isfinite(y[i])) {
			pen = false;
			continue;
		}
		double dx = pl_mapx(p, x[i]), dy = pl_mapy(p, y[i]);
		if (pen)
			cairo_line_to(cr, dx, dy);
		else
			cairo_move_to(cr, dx, dy);
		pen = true;
	}
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
	if (markers)
		for (size_t i = 0; i < n; i++) {
			if (!isfinite(x[i]) || !isfinite(y[i]))
				continue;
			cairo_new_sub_path(cr);
			cairo_arc(cr, pl_mapx(p, x[i]), pl_mapy(p, y[i]), 6.5 * f->s, 0, 2 * M_PI);
			cairo_set_source_rgb(cr, c.r, c.g, c.b);
			cairo_fill_preserve(cr);
			cairo_set_source_rgb(cr, 1, 1, 1);
			cairo_set_line_width(cr, 1.5 * f->s);
			cairo_stroke(cr);
		}
	cairo_restore(cr);
}

void pl_band(const pl_fig *f, const pl_panel *p, const double *x,
	     const double *lower, const double *upper, size_t n, rp_rgb c)
{
	if (n == 0)
		return;
	cairo_t *cr = f->cr;
	cairo_save(cr);
	set_rgb(cr, c);
	cairo_move_to(cr, pl_mapx(p, x[0]), pl_mapy(p, upper[0]));
	for (size_t i = 1; i < n; i++)
		cairo_line_to(cr, pl_mapx(p, x[i]), pl_mapy(p, upper[i]));
	for (size_t i = n; i-- > 0;)
		cairo_line_to(cr, pl_mapx(p, x[i]), pl_mapy(p, lower[i]));
	cairo_close_path(cr);
	cairo_fill(cr);
	cairo_restore(cr);
}

void pl_bar(const pl_fig *f, const pl_panel *p, double cx, double bw, double v,
	    rp_rgb c)
{
	cairo_t *cr = f->cr;
	double y0 = pl_mapy(p, p->ya.lo > 0 ? p->ya.lo : 0), y1 = pl_mapy(p, v);
	cairo_save(cr);
	cairo_rectangle(cr, cx - bw / 2, y1, bw, y0 - y1);
	set_rgb(cr, c);
	cairo_fill_preserve(cr);
	cairo_set_source_rgb(cr, c.r * 0.7, c.g * 0.7, c.b * 0.7);
	cairo_set_line_width(cr, 1.2 * f->s);
	cairo_stroke(cr);
	cairo_restore(cr);
}

void pl_note(const pl_fig *f, const pl_panel *p, const char *text)
{
	pl_text(f, p->x + p->w / 2, p->y + p->h / 2, SZ_AXIS, PL_CENTER, false,
		MUTED, 0, text);
}
