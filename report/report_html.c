/*
 * report_html.c - index.html: summary tables per run, the accounting line of
 * every policy, the figures (PNG, linking to the SVG) and the run settings.
 *
 * The page is one file: inline CSS, the charts' data and the chart library
 * (report_interactive.c), no external fonts or scripts.  The static figures
 * beside it are linked, and shown as images only with opts.static_figures;
 * the page script then marks any image that failed to load (naturalWidth
 * 0), showing a warning and recording the counts on <body> as data-images
 * and data-images-broken, which the browser test reads back.
 */
#include "kvs_config.h"
#include "report_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

void kvs_report_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f); break;
		}
	}
}

/* light by default, dark when the reader's system asks for it; tables and
 * charts scroll inside their own box instead of widening the page */
static const char CSS[] =
	":root{--ink:#222;--muted:#666;--bg:#fafafa;--card:#fff;--line:#ddd;--head:#f0f0f0;--group:#f7f7f7;--link:#0b5cad;--ok:#1a7f37;--bad:#b42318;--badbg:#fde8e7}"
	"@media (prefers-color-scheme:dark){:root{--ink:#e4e4e4;--muted:#a0a0a0;--bg:#16181b;--card:#1f2226;--line:#3a3e44;--head:#2a2e34;--group:#25292e;--link:#7cb8ff;--ok:#5fd38a;--bad:#ff8a7a;--badbg:#3a1f1c}}"
	"body{font-family:'DejaVu Sans',system-ui,sans-serif;margin:0;color:var(--ink);background:var(--bg);line-height:1.45}"
	"a{color:var(--link)}"
	"main{max-width:1680px;margin:0 auto;padding:24px 32px 64px}"
	"h1{font-size:2.1em;margin:.2em 0}h2{font-size:1.6em;margin:1.6em 0 .4em;border-bottom:2px solid var(--line);padding-bottom:.2em}"
	"h3{font-size:1.2em;margin:1.4em 0 .5em}"
	".muted{color:var(--muted)}"
	"table{border-collapse:collapse;background:var(--card);margin:.4em 0 1em;font-size:.95em;display:block;max-width:100%;overflow:auto;width:max-content}"
	"table.scroll{max-height:32em}"
	"table.scroll thead th{position:sticky;top:0;z-index:1}"
	"th,td{border:1px solid var(--line);padding:4px 10px;text-align:right;white-space:nowrap}"
	"th:first-child,td:first-child,th.l,td.l{text-align:left}"
	"thead th{background:var(--head)}"
	"tr.group th{background:var(--group);text-align:left;font-weight:600;color:var(--muted)}"
	"td.any{font-style:italic;color:var(--muted)}"
	".sw{display:inline-block;width:.9em;height:.9em;border-radius:2px;vertical-align:-.1em;margin-right:.35em;border:1px solid #888}"
	".acct{font-family:'DejaVu Sans Mono',monospace;margin:.2em 0}"
	".ok{color:var(--ok);font-weight:600}.bad{color:var(--bad);font-weight:600}"
	".bar{display:flex;width:100%;min-width:420px;height:22px;border:1px solid #999;background:#fff}"
	".bar span{display:block;height:100%}"
	"td.barcell{width:60%}"
	".headline{background:var(--card);border:1px solid var(--line);border-left:6px solid #0072b2;padding:4px 20px 8px;margin:1em 0}"
	".headline h2{border:0;margin:.4em 0 .2em;font-size:1.3em}"
	".headline .answer{font-size:1.15em}"
	"p.note{background:var(--card);border:1px dashed var(--line);padding:8px 12px}"
	"figure{margin:1.2em 0 2em;background:var(--card);border:1px solid var(--line);padding:8px;min-width:0}"
	"figure img{display:block;width:100%;height:auto;margin-top:8px}"
	"figure.broken{border:3px solid var(--bad)}"
	".kvs-grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,520px),1fr));gap:0 16px}"
	".kvs-grid figure{margin:.6em 0}"
	".kvs-canvas{position:relative;height:420px}"
	"figure.small .kvs-canvas{height:340px}"
	".kvs-band{position:absolute;display:none;background:rgba(0,114,178,.15);border:1px solid rgba(0,114,178,.6);pointer-events:none}"
	".kvs-reset{font-size:.85em;margin-left:.5em}"
	"figcaption{margin-top:.4em;color:var(--muted);font-size:.9em}"
	"#img-warning{background:var(--badbg);border:1px solid var(--bad);padding:8px 12px}"
	"details{margin:.5em 0}summary{cursor:pointer;font-weight:600}"
	"pre.licence{white-space:pre-wrap;font-size:.8em;color:var(--muted)}"
	"footer{max-width:1680px;margin:0 auto 2em;border-top:1px solid var(--line);padding:.5em 32px}"
	".meta{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}"
	".meta table{font-size:.85em}"
	"ul.reco li{margin:.3em 0}"
	"nav a{margin-right:1em}";

static void swatch(FILE *f, rp_rgb c)
{
	char hx[8];
	rp_rgb_hex(c, hx);
	fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", hx);
}

/* ---- policy summary table -------------------------------------------------- */

/* F_PCTG: percent to 3 significant digits (sweep fragmentation spans
 * 0.001 % to 80 %); F_X3: a cost relative to contiguous, 3 decimals */
typedef enum cellfmt {
	F_PCT, F_PCTG, F_NUM, F_COUNT, F_SEC, F_BYTES, F_FRAC, F_RATIO, F_X3
} cellfmt;

static void cell(FILE *f, double v, cellfmt fmt)
{
	char b[64];
	if (!isfinite(v)) {
		snprintf(b, sizeof b, "-");
	} else {
		switch (fmt) {
		case F_PCT: snprintf(b, sizeof b, "%.1f %%", v); break;
		case F_PCTG:
			if (v > 0 && v < 0.01)
				snprintf(b, sizeof b, "<0.01 %%");
			else
				snprintf(b, sizeof b, "%.3g %%", v);
			break;
		case F_X3: snprintf(b, sizeof b, "%.3f×", v); break;
		case F_NUM: rp_fmt_num(b, sizeof b, v, 3); break;
		case F_COUNT: rp_fmt_count(b, sizeof b, v); break;
		case F_SEC: rp_fmt_seconds(b, sizeof b, v); break;
		case F_BYTES: rp_fmt_bytes(b, sizeof b, v); break;
		case F_FRAC: snprintf(b, sizeof b, "%.1f %%", v * 100); break;
		case F_RATIO: snprintf(b, sizeof b, "%.2f×", v); break;
		}
	}
	fprintf(f, "<td>");
	kvs_report_esc(f, b);
	fprintf(f, "</td>");
}

/* a table row of one value per policy, read through an offset into rp_policy;
 * skipped when every policy lacks it */
static void row(FILE *f, const rp_run *run, const char *label, size_t off,
		cellfmt fmt)
{
	bool any = false;
	for (size_t i = 0; i < run->npol; i++)
		any |= isfinite(*(const double *)((const char *)&run->pol[i] + off));
	if (!any)
		return;
	fprintf(f, "<tr><td>");
	kvs_report_esc(f, label);
	fprintf(f, "</td>");
	for (size_t i = 0; i < run->npol; i++)
		cell(f, *(const double *)((const char *)&run->pol[i] + off), fmt);
	fprintf(f, "</tr>\n");
}

static void group(FILE *f, const rp_run *run, const char *title)
{
	fprintf(f, "<tr class=\"group\"><th colspan=\"%zu\">", run->npol + 1);
	kvs_report_esc(f, title);
	fprintf(f, "</th></tr>\n");
}

#define OFF(field) offsetof(rp_policy, field)

static void accounting(FILE *f, const rp_run *run)
{
	fprintf(f, "<h3>Accounting</h3>\n");
	for (size_t i = 0; i < run->npol; i++) {
		const rp_policy *p = &run->pol[i];
		char a[32], c[32], r[32], u[32];
		rp_fmt_count(a, sizeof a, (double)p->arrived);
		rp_fmt_count(c, sizeof c, (double)p->completed);
		rp_fmt_count(r, sizeof r, (double)p->rejected);
		rp_fmt_count(u, sizeof u, (double)p->unfinished);
		bool ok = kvs_accounting_balances(p->arrived, p->completed, p->rejected,
						  p->unfinished);
		fprintf(f, "<p class=\"acct\">");
		swatch(f, rp_policy_color(p->name));
		fprintf(f, "<b>");
		kvs_report_esc(f, p->name);
		fprintf(f, "</b>: arrived %s = completed %s + rejected %s + unfinished %s ", a,
			c, r, u);
		fprintf(f, ok ? "<span class=\"ok\">balances</span>" :
				"<span class=\"bad\">does not balance</span>");
		if (p->nreasons) {
			fprintf(f, " <span class=\"muted\">(rejected: ");
			for (size_t k = 0; k < p->nreasons; k++) {
				char n[32];
				rp_fmt_count(n, sizeof n, (double)p->reasons[k].count);
				fprintf(f, "%s", k ? ", " : "");
				kvs_report_esc(f, p->reasons[k].reason);
				fprintf(f, " %s", n);
			}
			fprintf(f, ")</span>");
		}
		fprintf(f, "</p>\n");
	}
}

static void memory_bars(FILE *f, const rp_run *run)
{
	fprintf(f, "<h3>Where the KV memory went (time-weighted)</h3>\n<p>");
	for (int k = 0; k < RP_NPARTS; k++) {
		swatch(f, rp_part_color(k));
		fprintf(f, "%s &nbsp; ", rp_part_label[k]);
	}
	fprintf(f, "</p>\n<table>\n<thead><tr><th>policy</th><th class=\"l\">share of the KV budget</th>"
		   "<th>sum</th></tr></thead>\n");
	for (size_t i = 0; i < run->npol; i++) {
		const rp_policy *p = &run->pol[i];
		double sum = 0;
		fprintf(f, "<tr><td>");
		swatch(f, rp_policy_color(p->name));
		kvs_report_esc(f, p->name);
		fprintf(f, "</td><td class=\"barcell\"><div class=\"bar\">");
		for (int k = 0; k < RP_NPARTS; k++) {
			char hx[8];
			double v = fmax(p->mem[k], 0);
			rp_rgb_hex(rp_part_color(k), hx);
			fprintf(f, "<span style=\"width:%.3f%%;background:%s\" title=\"%s %.1f%%\"></span>",
				fmin(v, 100), hx, rp_part_label[k], p->mem[k]);
		}
		/* the six parts partition the budget: flag a report where they do not */
		bool ok = rp_parts_whole(p, &sum);
		fprintf(f, "</div></td><td%s>%.1f %%</td></tr>\n",
			ok ? "" : " class=\"bad\" title=\"the six parts should sum to 100 %\"", sum);
	}
	fprintf(f, "</table>\n");
}

static cellfmt style_fmt(kvs_metric_style s)
{
	switch (s) {
	case KVS_MS_PCT: return F_PCT;
	case KVS_MS_COUNT: return F_COUNT;
	case KVS_MS_SEC: return F_SEC;
	case KVS_MS_BYTES: return F_BYTES;
	case KVS_MS_FRAC: return F_FRAC;
	default: return F_NUM;
	}
}

/* The first metric id after `id` that starts a page section (or the end). */
static int next_section(int id)
{
	for (int i = id + 1; i < KVS_M_COUNT_; i++)
		if (kvs_metric_get((kvs_metric_id)i)->page_section)
			return i;
	return KVS_M_COUNT_;
}

/* Whether some policy has a finite value in the section starting at id. */
static bool section_has_data(const rp_run *run, int id)
{
	int end = next_section(id);
	for (size_t i = 0; i < run->npol; i++)
		for (int k = id; k < end; k++)
			if (kvs_metric_get((kvs_metric_id)k)->page_label &&
			    isfinite(run->pol[i].m[k]))
				return true;
	return false;
}

static void ratio_rows(FILE *f, const rp_run *run)
{
	bool ratios = false;
	for (size_t i = 0; i < run->npol; i++)
		ratios |= run->pol[i].has_ratios;
	if (ratios) {
		group(f, run, "Paged / this policy");
		row(f, run, "concurrency", OFF(ratio_concurrency), F_RATIO);
		row(f, run, "throughput", OFF(ratio_throughput), F_RATIO);
		row(f, run, "waste", OFF(ratio_waste), F_RATIO);
		row(f, run, "p99 queueing delay", OFF(ratio_p99_queue), F_RATIO);
	}
}

static void policy_table(FILE *f, const rp_run *run)
{
	fprintf(f, "<h3>Summary</h3>\n<table>\n<thead><tr><th>metric</th>");
	for (size_t i = 0; i < run->npol; i++) {
		fprintf(f, "<th>");
		swatch(f, rp_policy_color(run->pol[i].name));
		kvs_report_esc(f, run->pol[i].name);
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead>\n<tbody>\n");

	/* the metric table's page rows, under their sections; a section of
	 * peak figures only when some policy has one */
	for (int id = 0; id < KVS_M_COUNT_; id++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)id);
		if (m->page_section) {
			if (id == KVS_M_SIM_TIME_S)
				ratio_rows(f, run);
			if (id == KVS_M_PEAK_TOKEN_STATES_PCT && !section_has_data(run, id))
				id = next_section(id) - 1;
			else
				group(f, run, m->page_section);
			if (id != (int)m->id)
				continue;
		}
		if (m->page_label)
			row(f, run, m->page_label, OFF(m) + (size_t)id * sizeof(double),
			    style_fmt(m->page_style));
		if (id == KVS_M_GOODPUT_FRACTION) {
			/* the SLOs the goodput counts against */
			row(f, run, "SLO: TTFT", OFF(slo_ttft_s), F_SEC);
			row(f, run, "SLO: TPOT", OFF(slo_tpot_s), F_SEC);
		}
	}
	/* --gpu-hour-price */
	bool cost = false;
	for (size_t i = 0; i < run->npol; i++)
		cost |= isfinite(run->pol[i].cost[RP_COST_RUN]);
	if (cost)
		group(f, run, "Cost (--gpu-hour-price)");
	for (int k = 0; cost && k < RP_NCOST; k++)
		row(f, run, rp_cost_label[k], OFF(cost) + (size_t)k * sizeof(double), F_NUM);
	fprintf(f, "</tbody>\n</table>\n");
}

/* ---- sweep tables --------------------------------------------------------- */

/* The policy of sweep row i, or of capacity result i. */
static const char *bs_row_policy(const rp_run *run, bool cap, size_t i)
{
	return cap ? run->cap[i].policy : run->rows[i].policy;
}

/* Opens row i of the sweep table (cap false) or of the capacity table: the
 * policy (swatch and name) and the block size.  A policy whose results do
 * not depend on the block size (contiguous reservation) is one row, "any"
 * block size: its later rows write nothing and return false. */
static bool bs_row_open(FILE *f, const rp_run *run, bool cap, size_t i)
{
	const char *policy = bs_row_policy(run, cap, i);
	bool once = cap ? rp_capacity_bs_independent(run, policy)
			: rp_sweep_bs_independent(run, policy);
	for (size_t j = 0; once && j < i; j++)
		if (strcmp(bs_row_policy(run, cap, j), policy) == 0)
			return false;
	fprintf(f, "<tr><td>");
	swatch(f, rp_policy_color(policy));
	kvs_report_esc(f, policy);
	fprintf(f, "</td>");
	if (once)
		fprintf(f, "<td class=\"any\" title=\"the same at every block size %s\">any</td>",
			cap ? "searched" : "swept");
	else if (cap)
		cell(f, run->cap[i].block_size, F_NUM);
	else
		fprintf(f, "<td>%g</td>", run->rows[i].block_size);
	return true;
}

/* the capacity search: after policy, block size and outcome, a column of
 * each figure below */
static void capacity_table(FILE *f, const rp_run *run)
{
	static const struct {
		const char *head;
		size_t off;          /* a double in rp_capacity */
		cellfmt fmt;
	} col[] = {
		{ "max rate (req/s)", offsetof(rp_capacity, max_rate), F_NUM },
		{ "next rate, missed (req/s)", offsetof(rp_capacity, fail_rate), F_NUM },
		{ "grid step", offsetof(rp_capacity, tolerance), F_FRAC },
		{ "SLO p99 TTFT", offsetof(rp_capacity, slo_ttft_s), F_SEC },
		{ "SLO p99 TPOT", offsetof(rp_capacity, slo_tpot_s), F_SEC },
	};
	fprintf(f, "<h3>Capacity search</h3>\n<table class=\"scroll\">\n<thead><tr><th>policy</th>"
		   "<th>block size</th><th>outcome</th>");
	for (size_t k = 0; k < KVS_ARRAY_LEN(col); k++)
		fprintf(f, "<th>%s</th>", col[k].head);
	fprintf(f, "</tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < run->ncap; i++) {
		const rp_capacity *c = &run->cap[i];
		if (!bs_row_open(f, run, true, i))
			continue;
		fprintf(f, "<td>");
		kvs_report_esc(f, c->outcome ? c->outcome : "-");
		fprintf(f, "</td>");
		for (size_t k = 0; k < KVS_ARRAY_LEN(col); k++)
			cell(f, *(const double *)((const char *)c + col[k].off), col[k].fmt);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n");
}

static void sweep_tables(FILE *f, const rp_run *run)
{
	static const struct {
		int field;
		const char *head;
		cellfmt fmt;
	} col[] = {
		{ RP_ROW_IFRAG, "internal frag.", F_PCTG },
		{ RP_ROW_WASTE, "KV waste", F_PCTG },
		{ RP_ROW_METADATA, "block tables", F_BYTES },
		{ RP_ROW_PREFIX_HIT, "prefix hit", F_FRAC },
		{ RP_ROW_CONC_MEAN, "running mean", F_NUM },
		{ RP_ROW_CONC_P99, "running p99", F_NUM },
		{ RP_ROW_QUEUE_P99, "queue p99", F_SEC },
		{ RP_ROW_TTFT_P50, "TTFT p50", F_SEC },
		{ RP_ROW_TTFT_P99, "TTFT p99", F_SEC },
		{ RP_ROW_TPOT_P50, "TPOT p50", F_SEC },
		{ RP_ROW_TPOT_P99, "TPOT p99", F_SEC },
		{ RP_ROW_RPS, "req/s", F_NUM },
		{ RP_ROW_OTPS, "out tok/s", F_NUM },
		{ RP_ROW_PREEMPTIONS, "preemptions", F_COUNT },
		{ RP_ROW_KERNEL_REL, "kernel vs contiguous", F_X3 },
		{ RP_ROW_KERNEL_US, "kernel µs", F_NUM },
	};
	bool show[KVS_ARRAY_LEN(col)], cost = false;
	fprintf(f, "<h3>Sweep</h3>\n<table class=\"scroll\">\n<thead><tr><th>policy</th><th>block size</th>");
	for (size_t c = 0; c < KVS_ARRAY_LEN(col); c++) {
		show[c] = false;
		for (size_t i = 0; i < run->nrows; i++)
			show[c] |= isfinite(run->rows[i].f[col[c].field]);
		if (show[c]) {
			fprintf(f, "<th>");
			kvs_report_esc(f, col[c].head);
			fprintf(f, "</th>");
		}
	}
	/* --gpu-hour-price: the cost columns */
	for (size_t i = 0; i < run->nrows; i++)
		cost |= isfinite(run->rows[i].cost[RP_COST_RUN]);
	for (int k = 0; cost && k < RP_NCOST; k++) {
		fprintf(f, "<th>");
		kvs_report_esc(f, rp_cost_label[k]);
		fprintf(f, "</th>");
	}
	fprintf(f, "</tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < run->nrows; i++) {
		const rp_row *r = &run->rows[i];
		if (!bs_row_open(f, run, false, i))
			continue;
		for (size_t c = 0; c < KVS_ARRAY_LEN(col); c++)
			if (show[c])
				cell(f, r->f[col[c].field], col[c].fmt);
		for (int k = 0; cost && k < RP_NCOST; k++)
			cell(f, r->cost[k], F_NUM);
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n");

	if (run->nreco) {
		fprintf(f, "<h3>Recommendations</h3>\n<ul class=\"reco\">\n");
		for (size_t i = 0; i < run->nreco; i++) {
			const rp_reco *r = &run->reco[i];
			fprintf(f, "<li><b>");
			kvs_report_esc(f, r->objective);
			fprintf(f, "</b>: ");
			if (!isfinite(r->block_size) && !r->policy)
				fprintf(f, "none");
			if (isfinite(r->block_size))
				fprintf(f, "block size %g", r->block_size);
			if (r->policy) {
				fprintf(f, "%s", isfinite(r->block_size) ? ", " : "");
				swatch(f, rp_policy_color(r->policy));
				kvs_report_esc(f, r->policy);
			}
			if (r->reason) {
				fprintf(f, " &mdash; ");
				kvs_report_esc(f, r->reason);
			}
			fprintf(f, "</li>\n");
		}
		fprintf(f, "</ul>\n");
	}
	if (run->ncap)
		capacity_table(f, run);
}

/* sweep --rates: a row per offered rate, policy and block size.  A row
 * repeated from another block size (contiguous reservation: "repeated")
 * is left out and its first shown with "any" block size, as the sweep
 * table shows such a policy once. */
static void curve_table(FILE *f, const rp_run *run)
{
	static const struct {
		int field;
		const char *head;
		cellfmt fmt;
	} col[] = {
		{ RP_ROW_RPS, "req/s (served)", F_NUM },
		{ RP_ROW_OTPS, "out tok/s", F_NUM },
		{ RP_ROW_TTFT_P50, "TTFT p50", F_SEC },
		{ RP_ROW_TTFT_P99, "TTFT p99", F_SEC },
		{ RP_ROW_TPOT_P50, "TPOT p50", F_SEC },
		{ RP_ROW_TPOT_P99, "TPOT p99", F_SEC },
		{ RP_ROW_QUEUE_P99, "queue p99", F_SEC },
		{ RP_ROW_PREEMPTIONS, "preemptions", F_COUNT },
	};
	bool slo = false;
	for (size_t i = 0; i < run->nrows; i++)
		slo |= run->rows[i].meets_slo >= 0;
	fprintf(f, "<h3>Request-rate curve</h3>\n<table class=\"scroll\">\n<thead><tr>"
		   "<th>offered req/s</th><th>policy</th><th>block size</th>");
	for (size_t c = 0; c < KVS_ARRAY_LEN(col); c++) {
		fprintf(f, "<th>");
		kvs_report_esc(f, col[c].head);
		fprintf(f, "</th>");
	}
	fprintf(f, "%s</tr></thead>\n<tbody>\n", slo ? "<th>SLOs</th>" : "");
	for (size_t i = 0; i < run->nrows; i++) {
		const rp_row *r = &run->rows[i];
		if (r->repeated)
			continue;
		bool any = false;
		for (size_t j = 0; j < run->nrows && !any; j++)
			any = run->rows[j].repeated && run->rows[j].rate == r->rate &&
			      strcmp(run->rows[j].policy, r->policy) == 0;
		fprintf(f, "<tr>");
		cell(f, r->rate, F_NUM);
		fprintf(f, "<td>");
		swatch(f, rp_policy_color(r->policy));
		kvs_report_esc(f, r->policy);
		fprintf(f, "</td>");
		if (any)
			fprintf(f, "<td class=\"any\" title=\"the same at every block size swept\">any</td>");
		else
			fprintf(f, "<td>%g</td>", r->block_size);
		for (size_t c = 0; c < KVS_ARRAY_LEN(col); c++)
			cell(f, r->f[col[c].field], col[c].fmt);
		if (slo)
			fprintf(f, "<td>%s</td>", r->meets_slo == 1 ? "met" :
				r->meets_slo == 0 ? "missed" : "-");
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</tbody>\n</table>\n");
}

/* ---- page ----------------------------------------------------------------- */

static void settings(FILE *f, const rp_run *run)
{
	bool any = false;
	for (int m = 0; m < RP_NMETA; m++)
		any |= run->nmeta[m] > 0;
	if (!any)
		return;
	fprintf(f, "<details><summary>Run settings (model, GPU, engine, trace)</summary>\n"
		   "<div class=\"meta\">\n");
	for (int m = 0; m < RP_NMETA; m++) {
		if (!run->nmeta[m])
			continue;
		fprintf(f, "<table><thead><tr><th colspan=\"2\">%s</th></tr></thead><tbody>\n",
			rp_meta_key[m]);
		for (size_t i = 0; i < run->nmeta[m]; i++) {
			fprintf(f, "<tr><td>");
			kvs_report_esc(f, run->meta[m][i].key);
			fprintf(f, "</td><td>");
			kvs_report_esc(f, run->meta[m][i].value);
			fprintf(f, "</td></tr>\n");
		}
		fprintf(f, "</tbody></table>\n");
	}
	fprintf(f, "</div></details>\n");
}

static void overview(FILE *f, const rp_run *runs, size_t nruns)
{
	fprintf(f, "<h2 id=\"overview\">Overview</h2>\n<table>\n<thead><tr><th>run</th>"
		   "<th class=\"l\">policy</th><th>arrived</th><th>completed</th><th>token states</th>"
		   "<th>free</th><th>running mean</th><th>queue p99</th><th>TTFT p99</th>"
		   "<th>TPOT p99</th><th>req/s</th></tr></thead>\n<tbody>\n");
	for (size_t r = 0; r < nruns; r++) {
		const rp_run *run = &runs[r];
		for (size_t i = 0; i < run->npol; i++) {
			const rp_policy *p = &run->pol[i];
			fprintf(f, "<tr><td><a href=\"#run%zu\">", r + 1);
			kvs_report_esc(f, run->label);
			fprintf(f, "</a></td><td class=\"l\">");
			swatch(f, rp_policy_color(p->name));
			kvs_report_esc(f, p->name);
			fprintf(f, "</td>");
			cell(f, (double)p->arrived, F_COUNT);
			cell(f, (double)p->completed, F_COUNT);
			cell(f, p->mem[0], F_PCT);
			cell(f, p->mem[RP_NPARTS - 1], F_PCT);
			cell(f, p->concurrency.mean, F_NUM);
			cell(f, p->queue_delay.p99, F_SEC);
			cell(f, p->ttft.p99, F_SEC);
			cell(f, p->tpot.p99, F_SEC);
			cell(f, p->requests_per_s, F_NUM);
			fprintf(f, "</tr>\n");
		}
		if (run->kind == RP_KIND_SWEEP) {
			fprintf(f, "<tr><td><a href=\"#run%zu\">", r + 1);
			kvs_report_esc(f, run->label);
			fprintf(f, "</a></td><td class=\"l\" colspan=\"10\">sweep: %zu rows, %zu capacity results</td></tr>\n",
				run->nrows, run->ncap);
		} else if (run->kind == RP_KIND_CURVE) {
			fprintf(f, "<tr><td><a href=\"#run%zu\">", r + 1);
			kvs_report_esc(f, run->label);
			fprintf(f, "</a></td><td class=\"l\" colspan=\"10\">request-rate curve: %zu rows</td></tr>\n",
				run->nrows);
		}
	}
	fprintf(f, "</tbody>\n</table>\n");
}

kvs_status rp_html_write(const char *path, const char *title,
			 const rp_run *runs, size_t nruns, const rp_fig *figs,
			 size_t nfigs, unsigned w, unsigned h, bool static_imgs)
{
	/* written under a temporary name and renamed when complete */
	kvs_outfile *out;
	kvs_status st = kvs_outfile_open(path, &out);
	if (st != KVS_OK)
		return st;
	FILE *f = kvs_outfile_stream(out);
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<title>");
	kvs_report_esc(f, title);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n<h1>", CSS);
	kvs_report_esc(f, title);
	fprintf(f, "</h1>\n<p class=\"muted\">kvsim %s &middot; %zu run%s:", kvs_version(),
		nruns, nruns == 1 ? "" : "s");
	for (size_t r = 0; r < nruns; r++) {
		fprintf(f, "%s <a href=\"#run%zu\">", r ? "," : "", r + 1);
		kvs_report_esc(f, runs[r].label);
		fprintf(f, "</a>");
	}
	fprintf(f, "</p>\n<p id=\"img-warning\" hidden></p>\n");
	rp_headline_write(f, runs, nruns);
	if (nruns > 1)
		overview(f, runs, nruns);

	for (size_t r = 0; r < nruns; r++) {
		const rp_run *run = &runs[r];
		fprintf(f, "<section id=\"run%zu\">\n<h2>", r + 1);
		kvs_report_esc(f, run->label);
		fprintf(f, " <span class=\"muted\">&middot; ");
		kvs_report_esc(f, run->command);
		if (run->model_name) {
			fprintf(f, " &middot; ");
			kvs_report_esc(f, run->model_name);
		}
		if (run->gpu_name) {
			fprintf(f, " on ");
			kvs_report_esc(f, run->gpu_name);
		}
		fprintf(f, "</span></h2>\n");
		rp_interrupted_note(f, run);
		if (run->kind == RP_KIND_POLICIES) {
			accounting(f, run);
			memory_bars(f, run);
			policy_table(f, run);
		} else if (run->kind == RP_KIND_CURVE) {
			curve_table(f, run);
		} else {
			sweep_tables(f, run);
		}
		rp_charts_write(f, run, figs, nfigs, static_imgs, w, h);
		settings(f, run);
		fprintf(f, "</section>\n");
	}
	fprintf(f, "</main>\n");
	rp_charts_tail(f);
	fprintf(f, "</body>\n</html>\n");
	return kvs_outfile_commit(out);
}
