/*
 * plot.h - a small plotting layer over cairo used by the report figures:
 * panels with linear or log2 axes, 1-2-5 ticks, grid, axis titles with
 * units, legends, lines, stacked areas and bars.  All sizes are in figure
 * units scaled by pl_fig.s (1 at 1600 x 900), so the same drawing routine
 * renders to an SVG surface and to a PNG image surface.
 */
#ifndef KVSIM_REPORT_PLOT_H
#define KVSIM_REPORT_PLOT_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>

#include "report_internal.h"

typedef struct pl_fig {
	cairo_t *cr;
	double w, h;  /* figure size in units */
	double s;     /* scale: font and line sizes are multiplied by it */
} pl_fig;

typedef enum pl_scale { PL_LINEAR, PL_LOG2, PL_LOG10 } pl_scale;

typedef struct pl_axis {
	double lo, hi;
	pl_scale scale;
	char title[96];     /* with the unit, e.g. "simulated time (s)" */
	double step;        /* linear tick step (set by pl_axis_fit) */
	int log_every;      /* log2: label every this many powers of two */
	bool exact;         /* linear: keep lo..hi as given, ticks inside */
} pl_axis;

typedef struct pl_panel {
	double x, y, w, h;  /* plot area (inside the axes) in units */
	pl_axis xa, ya;
} pl_panel;

enum { PL_LEFT = 0, PL_CENTER = 1, PL_RIGHT = 2 };

void pl_fig_init(pl_fig *f, cairo_t *cr, double w, double h);

/* Text at (x, y) (baseline-centred vertically), size in units (scaled),
 * halign PL_LEFT/CENTER/RIGHT; angle in radians (-pi/2 for y titles). */
void pl_text(const pl_fig *f, double x, double y, double size, int halign,
	     bool bold, rp_rgb c, double angle, const char *text);
double pl_text_width(const pl_fig *f, double size, bool bold, const char *text);

/* Figure title (and optional subtitle) at the top; returns the y below it. */
double pl_title(const pl_fig *f, const char *title, const char *subtitle);

/* Legend entries in one or more centred rows starting at y; swatches are
 * filled squares (areas, bars) or short lines (curves).  Returns the y below. */
typedef struct pl_legend_item {
	const char *label;
	rp_rgb color;
	bool line;          /* line sample instead of a filled square */
	bool dashed;
} pl_legend_item;
double pl_legend(const pl_fig *f, double y, const pl_legend_item *items, size_t n);

/* Split the area [x0,x1] x [y0,y1] into rows x cols panels, leaving room
 * for tick labels and axis titles; panel i is row i / cols, column i % cols. */
void pl_grid(const pl_fig *f, double x0, double y0, double x1, double y1,
	     int rows, int cols, pl_panel *panels, size_t n);

/* Data to device coordinates. */
double pl_mapx(const pl_panel *p, double x);
double pl_mapy(const pl_panel *p, double y);

/* Nice axis ends and ticks.  pl_axis_fit widens [lo, hi] to tick marks
 * (linear: 1-2-5 steps; log2: powers of two; log10: decades, with 2 and 5
 * between them).  On log axes values below lo are drawn at lo. */
void pl_axis_fit(pl_axis *a, double lo, double hi, int max_ticks);

/* Frame, grid lines, ticks, tick labels, axis titles and a panel title. */
void pl_axes(const pl_fig *f, const pl_panel *p, const char *title,
	     rp_rgb title_color, bool x_labels, bool y_labels);

/* Clip subsequent drawing to the panel's plot area; pl_unclip restores. */
void pl_clip(const pl_fig *f, const pl_panel *p);
void pl_unclip(const pl_fig *f);

/* A polyline through (x[i], y[i]) skipping NAN points; markers draws dots. */
void pl_line(const pl_fig *f, const pl_panel *p, const double *x,
	     const double *y, size_t n, rp_rgb c, double width, bool dashed,
	     bool markers);

/* The area between lower[i] and upper[i] over x[i]. */
void pl_band(const pl_fig *f, const pl_panel *p, const double *x,
	     const double *lower, const double *upper, size_t n, rp_rgb c);

/* A bar from y = 0 to y = v centred at device x with device width bw. */
void pl_bar(const pl_fig *f, const pl_panel *p, double cx, double bw, double v,
	    rp_rgb c);

/* A message in the middle of a panel ("no timeseries in this run"). */
void pl_note(const pl_fig *f, const pl_panel *p, const char *text);

/* Tick label text for value v on an axis whose tick step is step. */
void pl_tick_label(char *buf, size_t size, double v, double step);

#endif /* KVSIM_REPORT_PLOT_H */
