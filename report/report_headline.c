/*
 * report_headline.c - the summary at the top of index.html: the answer
 * first, in a sentence a reader can quote, before any table.
 *
 *   compare: "paged holds 3.6x the conversations of max at this load (mean
 *            running sequences 86.5 against 24.0)", then KV waste, p99
 *            queueing delay and throughput of the same pair, then paged
 *            against every other policy in one line;
 *   replay:  the policy's accounting, concurrency, waste and p99 latency;
 *   sweep:   each recommendation with its reason, and the capacity of the
 *            best paged block size against the best contiguous policy.
 *
 * Every figure is read from the run; nothing is claimed that the JSON does
 * not hold (a missing number drops its clause).
 */
#include "kvs_config.h"
#include "report_internal.h"

#include <math.h>
#include <string.h>

static void pct(char *b, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(b, n, "-");
	else if (v > 0 && v < 0.01)
		snprintf(b, n, "<0.01 %%");
	else
		snprintf(b, n, "%.3g %%", v);
}

static double waste(const rp_policy *p)
{
	return p->mem[1] + p->mem[2] + p->mem[3];
}

static const rp_policy *find(const rp_run *run, const char *name)
{
	for (size_t i = 0; i < run->npol; i++)
		if (strcmp(run->pol[i].name, name) == 0)
			return &run->pol[i];
	return NULL;
}

static void name(FILE *f, const char *policy)
{
	char hx[8];
	rp_rgb_hex(rp_policy_color(policy), hx);
	fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span><b>", hx);
	kvs_report_esc(f, policy);
	fprintf(f, "</b>");
}

/* A fleet's answer opens with the fleet: its replicas, router and GPUs,
 * and its pools. */
static void fleet_intro(FILE *f, const rp_fleet *F)
{
	char n[32], g[32];
	rp_fmt_count(n, sizeof n, F->replicas);
	fprintf(f, "A fleet of <b>%s replica%s</b>", isfinite(F->replicas) ? n : "?",
		F->replicas == 1 ? "" : "s");
	if (isfinite(F->gpus)) {
		rp_fmt_count(g, sizeof g, F->gpus);
		fprintf(f, " on <b>%s GPU%s</b>", g, F->gpus == 1 ? "" : "s");
	}
	if (F->pools[0]) {
		fprintf(f, " (pools ");
		kvs_report_esc(f, F->pools);
		fprintf(f, ")");
	}
	if (F->router[0]) {
		fprintf(f, ", router ");
		kvs_report_esc(f, F->router);
	}
	fprintf(f, ": ");
}

/* The SLOs a search was for: "p99 TTFT <= 0.5 s and p99 TPOT <= 50 ms". */
static void slos(FILE *f, const rp_fleet *F)
{
	char b[32];
	bool ttft = isfinite(F->slo_ttft_s) && F->slo_ttft_s > 0;
	if (ttft) {
		rp_fmt_seconds(b, sizeof b, F->slo_ttft_s);
		fprintf(f, "p99 TTFT &le; %s", b);
	}
	if (isfinite(F->slo_tpot_s) && F->slo_tpot_s > 0) {
		rp_fmt_seconds(b, sizeof b, F->slo_tpot_s);
		fprintf(f, "%sp99 TPOT &le; %s", ttft ? " and " : "", b);
	}
}

/* --find-min-replicas: its answer, or why there is none. */
static void fleet_search(FILE *f, const rp_fleet *F)
{
	if (!F->search[0])
		return;
	char r[32], n[32];
	rp_fmt_num(r, sizeof r, F->search_rate, 3);
	if (strcmp(F->search, "found") == 0 && isfinite(F->fewest)) {
		rp_fmt_count(n, sizeof n, F->fewest);
		fprintf(f, "<p class=\"answer\">The fewest replicas that meet ");
		slos(f, F);
		fprintf(f, " at %s req/s: <b>%s</b> (the fleet shown).</p>\n", r, n);
	} else if (strcmp(F->search, "unattainable") == 0) {
		char t[32], p[32];
		rp_fmt_count(n, sizeof n, F->floor_replicas);
		rp_fmt_seconds(t, sizeof t, F->floor_ttft_s);
		rp_fmt_seconds(p, sizeof p, F->floor_tpot_s);
		fprintf(f, "<p class=\"answer bad\"><b>Unattainable:</b> no number of replicas "
			   "meets ");
		slos(f, F);
		fprintf(f, " at %s req/s. At %s replicas no request queued, and more no longer "
			   "helped: the floor of an unloaded fleet is p99 TTFT %s, p99 TPOT %s. "
			   "A faster GPU, more tensor parallelism or a looser SLO would help.</p>\n",
			r, n, t, p);
	} else {
		fprintf(f, "<p>The search for the fewest replicas meeting ");
		slos(f, F);
		fprintf(f, " at %s req/s was interrupted", r);
		if (isfinite(F->fewest)) {
			rp_fmt_count(n, sizeof n, F->fewest);
			fprintf(f, "; the fewest found so far: %s", n);
		}
		fprintf(f, ".</p>\n");
	}
}

static void compare_headline(FILE *f, const rp_run *run)
{
	/* the registry's baseline (paged) against max reservation, else the
	 * first other policy */
	const rp_policy *paged = NULL;
	for (size_t i = 0; !paged && i < run->npol; i++)
		if (rp_policy_is(run->pol[i].name, KVS_TRAIT_BASELINE))
			paged = &run->pol[i];
	const rp_policy *other = find(run, "max");
	for (size_t i = 0; !other && i < run->npol; i++)
		if (&run->pol[i] != paged)
			other = &run->pol[i];
	if (!paged || !other) {
		/* one policy (a replay): its own figures */
		const rp_policy *p = paged ? paged : &run->pol[0];
		char a[32], c[32], m[32], w[32], t[32];
		rp_fmt_count(a, sizeof a, (double)p->arrived);
		rp_fmt_count(c, sizeof c, (double)p->completed);
		rp_fmt_num(m, sizeof m, p->concurrency.mean, 3);
		pct(w, sizeof w, waste(p));
		rp_fmt_seconds(t, sizeof t, p->ttft.p99);
		fprintf(f, "<p class=\"answer\">");
		if (run->fleet.on)
			fleet_intro(f, &run->fleet);
		name(f, p->name);
		fprintf(f, " completed %s of %s requests", c, a);
		if (isfinite(p->concurrency.mean) && run->fleet.on && run->fleet.replicas > 1) {
			/* the fleet's figure sums its replicas' */
			char per[32];
			rp_fmt_num(per, sizeof per, p->concurrency.mean / run->fleet.replicas, 3);
			fprintf(f, ", holding %s conversations at once on average across the "
				"fleet (%s per replica)", m, per);
		} else if (isfinite(p->concurrency.mean)) {
			fprintf(f, ", holding %s conversations at once on average", m);
		}
		fprintf(f, "; KV waste (reservation and fragmentation) %s of the budget", w);
		if (isfinite(p->ttft.p99))
			fprintf(f, ", p99 TTFT %s", t);
		fprintf(f, ".</p>\n");
		if (run->fleet.on)
			fleet_search(f, &run->fleet);
		return;
	}
	double r = paged->concurrency.mean / other->concurrency.mean;
	char rb[32], m1[32], m2[32];
	snprintf(rb, sizeof rb, "%.2g", r);
	rp_fmt_num(m1, sizeof m1, paged->concurrency.mean, 3);
	rp_fmt_num(m2, sizeof m2, other->concurrency.mean, 3);
	fprintf(f, "<p class=\"answer\">");
	if (isfinite(r) && r > 0) {
		name(f, paged->name);
		fprintf(f, " holds <b>%s×</b> the conversations of ", rb);
		name(f, other->name);
		fprintf(f, " at this load (mean running sequences %s against %s)", m1, m2);
	} else {
		name(f, paged->name);
		fprintf(f, " against ");
		name(f, other->name);
	}
	char w1[32], w2[32];
	pct(w1, sizeof w1, waste(paged));
	pct(w2, sizeof w2, waste(other));
	fprintf(f, ": it leaves %s of the KV budget reserved or fragmented, against %s", w1, w2);
	if (isfinite(paged->queue_delay.p99) && isfinite(other->queue_delay.p99)) {
		char q1[32], q2[32];
		rp_fmt_seconds(q1, sizeof q1, paged->queue_delay.p99);
		rp_fmt_seconds(q2, sizeof q2, other->queue_delay.p99);
		fprintf(f, "; p99 queueing delay %s against %s", q1, q2);
	}
	if (isfinite(paged->requests_per_s) && isfinite(other->requests_per_s)) {
		char t1[32], t2[32];
		rp_fmt_num(t1, sizeof t1, paged->requests_per_s, 3);
		rp_fmt_num(t2, sizeof t2, other->requests_per_s, 3);
		fprintf(f, "; throughput %s against %s req/s", t1, t2);
	}
	fprintf(f, ".</p>\n");
	if (run->npol > 2) {
		fprintf(f, "<p>Conversations held, paged against each policy:");
		size_t k = 0;
		for (size_t i = 0; i < run->npol; i++) {
			const rp_policy *p = &run->pol[i];
			double x = paged->concurrency.mean / p->concurrency.mean;
			if (p == paged || !isfinite(x))
				continue;
			fprintf(f, "%s ", k++ ? "," : "");
			name(f, p->name);
			fprintf(f, " %.3g×", x);
		}
		fprintf(f, ".</p>\n");
	}
}

static void sweep_headline(FILE *f, const rp_run *run)
{
	bool said = false;
	for (size_t i = 0; i < run->nreco; i++) {
		const rp_reco *r = &run->reco[i];
		if (!r->policy)
			continue;
		fprintf(f, "<p class=\"answer\">");
		if (isfinite(r->block_size))
			fprintf(f, "<b>Block size %g</b> with ", r->block_size);
		name(f, r->policy);
		fprintf(f, " is recommended for <b>");
		kvs_report_esc(f, r->objective);
		fprintf(f, "</b>");
		if (r->reason) {
			fprintf(f, ": ");
			kvs_report_esc(f, r->reason);
		}
		fprintf(f, "</p>\n");
		said = true;
		break;  /* the first objective answers; the others follow below */
	}
	/* capacity: paged at the recommended block size (else its best)
	 * against max and against the best other deployable policy; oracle
	 * knows the output lengths in advance, a bound rather than a choice */
	double rec_bs = NAN;
	for (size_t i = 0; i < run->nreco; i++)
		if (run->reco[i].policy && rp_policy_is(run->reco[i].policy, KVS_TRAIT_BASELINE) &&
		    strcmp(run->reco[i].objective, "throughput_within_slo") == 0)
			rec_bs = run->reco[i].block_size;
	const rp_capacity *bp = NULL, *bo = NULL, *bm = NULL;
	for (size_t i = 0; i < run->ncap; i++) {
		const rp_capacity *c = &run->cap[i];
		if (!isfinite(c->max_rate))
			continue;
		if (rp_policy_is(c->policy, KVS_TRAIT_BASELINE)) {
			if (c->block_size == rec_bs)
				bp = c;
			else if (isnan(rec_bs) && (!bp || c->max_rate > bp->max_rate))
				bp = c;
		} else if (!rp_policy_is(c->policy, KVS_TRAIT_BOUND)) {
			if (!bo || c->max_rate > bo->max_rate)
				bo = c;
			if (strcmp(c->policy, "max") == 0 && (!bm || c->max_rate > bm->max_rate))
				bm = c;
		}
	}
	if (bp && bo && bo->max_rate > 0) {
		char a[32], b[32];
		rp_fmt_num(a, sizeof a, bp->max_rate, 3);
		fprintf(f, "<p>Within the SLOs, ");
		name(f, bp->policy);
		if (isfinite(bp->block_size))
			fprintf(f, " at block size %g", bp->block_size);
		fprintf(f, " sustains <b>%s req/s</b>", a);
		if (bm && bm != bo && bm->max_rate > 0) {
			rp_fmt_num(b, sizeof b, bm->max_rate, 3);
			fprintf(f, ": <b>%.2g×</b> ", bp->max_rate / bm->max_rate);
			name(f, "max");
			fprintf(f, " (%s req/s)", b);
		}
		rp_fmt_num(b, sizeof b, bo->max_rate, 3);
		fprintf(f, "%s<b>%.2g×</b> the best other deployable policy, ",
			bm && bm != bo ? " and " : ": ", bp->max_rate / bo->max_rate);
		name(f, bo->policy);
		fprintf(f, " (%s req/s).</p>\n", b);
		said = true;
	}
	if (!said)
		fprintf(f, "<p>%zu sweep rows; no recommendation or capacity result in this run.</p>\n",
			run->nrows);
}

/* sweep --rates: per policy (at its rp_curve_block), the highest offered
 * rate within the SLOs when the run had SLOs (meets_slo), else the knee:
 * the last rate, going up from the lowest, whose served req/s stays within
 * 5 % of the offered rate (past it the queue grows without bound).  Served
 * req/s counts the drain after the last arrival too, so a rate kept up
 * with reads a few percent low: 2 % called a bundled run's 4 req/s, served
 * at 3.91 with p99 TTFT 1.2 s, past its knee. */
static void curve_headline(FILE *f, const rp_run *run)
{
	const char *names[32];
	size_t nn = 0;
	bool slo = false;
	for (size_t i = 0; i < run->nrows; i++) {
		bool seen = false;
		slo |= run->rows[i].meets_slo >= 0;
		for (size_t k = 0; k < nn && !seen; k++)
			seen = strcmp(names[k], run->rows[i].policy) == 0;
		if (!seen && nn < 32)
			names[nn++] = run->rows[i].policy;
	}
	fprintf(f, "<p class=\"answer\">%s</p>\n<ul class=\"reco\">\n",
		slo ? "The highest offered rate each policy sustains within the SLOs:"
		    : "Where each policy stops keeping up (the knee: the last offered rate "
		      "whose served requests/s stay within 5 % of it):");
	for (size_t k = 0; k < nn; k++) {
		double bs = rp_curve_block(run, names[k]);
		double best = NAN, lowest = INFINITY, prev = 0;
		bool stop = false;
		/* ascending rates (rows are in rate order, but do not rely on
		 * it); a rate given twice counts once, its first row */
		const rp_row *rows[256];
		size_t nr = rp_curve_rows(run, names[k], rows, 256);
		for (size_t j = 0; j < nr; j++) {
			const rp_row *next = rows[j];
			if (next->rate == prev)
				continue;
			prev = next->rate;
			if (!slo && !isfinite(next->f[RP_ROW_RPS]))
				continue;     /* nothing to compare the rate with */
			lowest = fmin(lowest, next->rate);
			bool ok = slo ? next->meets_slo == 1
				      : next->f[RP_ROW_RPS] >= 0.95 * next->rate;
			if (slo && ok)
				best = next->rate;
			else if (!slo && !stop && ok)
				best = next->rate;
			else if (!slo)
				stop = true;
		}
		char a[32], b[32];
		fprintf(f, "<li>");
		name(f, names[k]);
		fprintf(f, " (block size %g): ", bs);
		rp_fmt_num(b, sizeof b, lowest, 3);
		if (isinf(lowest)) {
			fprintf(f, "no served requests/s in its rows");
		} else if (isfinite(best)) {
			rp_fmt_num(a, sizeof a, best, 3);
			fprintf(f, "<b>%s req/s</b>", a);
			if (!slo && best == prev)
				fprintf(f, " (the highest rate tried: no knee within it)");
		} else if (slo) {
			fprintf(f, "none: it misses them at every rate tried, the lowest %s req/s", b);
		} else {
			fprintf(f, "none: it falls behind already at %s req/s, the lowest rate tried", b);
		}
		fprintf(f, "</li>\n");
	}
	fprintf(f, "</ul>\n");
}

void rp_interrupted_note(FILE *f, const rp_run *run)
{
	if (!run->interrupted)
		return;
	fprintf(f, "<p class=\"bad interrupted\">Interrupted: this run was stopped "
		   "before it finished. ");
	if (run->kind == RP_KIND_CURVE) {
		fprintf(f, "the curve covers only the rates finished.</p>\n");
	} else if (run->kind == RP_KIND_SWEEP) {
		if (run->points_total)
			fprintf(f, "%llu of %llu simulated combinations were done; ",
				(unsigned long long)run->points_done,
				(unsigned long long)run->points_total);
		fprintf(f, "the rows and recommendations cover only those.</p>\n");
	} else {
		fprintf(f, "Its figures cover the simulated time reached; policies that "
			   "had not started are absent, and every request not done "
			   "counts as unfinished.</p>\n");
	}
}

void rp_headline_write(FILE *f, const rp_run *runs, size_t nruns)
{
	fprintf(f, "<section class=\"headline\" id=\"headline\"><h2>The answer</h2>\n");
	for (size_t r = 0; r < nruns; r++) {
		const rp_run *run = &runs[r];
		if (nruns > 1) {
			fprintf(f, "<h3><a href=\"#run%zu\">", r + 1);
			kvs_report_esc(f, run->label);
			fprintf(f, "</a></h3>\n");
		}
		rp_interrupted_note(f, run);
		if (run->kind == RP_KIND_POLICIES)
			compare_headline(f, run);
		else if (run->kind == RP_KIND_CURVE)
			curve_headline(f, run);
		else
			sweep_headline(f, run);
	}
	fprintf(f, "</section>\n");
}
