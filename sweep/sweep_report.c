/*
 * sweep_report.c - the recommendation per objective, and the sweep's JSON
 * (docs/REPORT-JSON.md "Sweep") and CSV forms.
 *
 * Recommendations name only deployable policies: oracle reserves each
 * request's true final length, which no server knows in advance, so it is
 * a bound to compare against, quoted in the sentence (as a bound only
 * when no other policy beats it there), never a pick.  A policy that does
 * not depend on the block size (all but paged) counts once, named without
 * a block size.  Every choice breaks ties the same way: the policy engines
 * deploy (the registry's baseline, paged) first, then lower p99 TTFT
 * (within TTFT_TIE of the lowest tied counts as equal: one p99 is noisy),
 * then lower KV waste, then smaller block-table metadata, then the earlier
 * row, so recommendations are as deterministic as the rows.  Capacities
 * within one grid step of each other tie: the search cannot order them.
 */
#include "kvs_config.h"
#include "sweep_internal.h"
#include "common/json.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <errno.h>
#include <string.h>

/* a bound (oracle knows each request's output length in advance) is
 * never recommended */
static bool deployable(kvs_policy p)
{
	return !kvs_policy_has(p, KVS_TRAIT_BOUND);
}

/* whether the policy's allocation and kernel vary with the block size;
 * the others are named without one */
static bool by_block(kvs_policy p)
{
	return kvs_policy_has(p, KVS_TRAIT_BLOCK_GRANULAR);
}

/* the policy serving engines deploy (paged, the registry's baseline):
 * first among ties, since the others are either not what engines run or
 * know each request's output length in advance (pow2 rounds it up) */
static bool engine_policy(kvs_policy p)
{
	return kvs_policy_has(p, KVS_TRAIT_BASELINE);
}

static double nan_hi(double v)
{
	return isnan(v) ? INFINITY : v;
}

/* p99 TTFTs within this of the lowest among tied rows count as equal */
#define TTFT_TIE 0.05

/* the deciding criterion of a tie, for the sentence */
enum { TIE_ENGINE, TIE_TTFT, TIE_WASTE, TIE_META, TIE_ORDER };

typedef struct rctx {
	const kvs_sweep_config *c;
	const kvs_sweep_row *rows;
	const kvs_sweep_capacity *caps;
	size_t n;
	char slo[96];
	double margin;          /* kernel_cost_margin */
	double min_rel;         /* cheapest paged kernel; INFINITY without paged */
	size_t cheapest;        /* its row (SIZE_MAX without paged) */
	bool *cand;             /* scratch, n entries */
	double ttft_band;       /* tied p99 TTFTs up to this count as equal
	                         * (set by choose) */
} rctx;

/* The row stands for its combination: every paged row, and the first row
 * of a policy that does not depend on the block size. */
static bool distinct(const rctx *x, size_t i)
{
	if (by_block(x->rows[i].policy))
		return true;
	for (size_t j = 0; j < i; j++)
		if (x->rows[j].policy == x->rows[i].policy)
			return false;
	return true;
}

/* Within the kernel-cost margin of the cheapest paged block size (rows of
 * other policies use the contiguous kernel and always are). */
static bool in_margin(const rctx *x, size_t i)
{
	if (!by_block(x->rows[i].policy))
		return true;
	return x->rows[i].kernel.rel <= x->min_rel * (1.0 + x->margin) * (1.0 + 1e-12);
}

static void name_of(const kvs_sweep_row *r, char *buf, size_t n)
{
	if (by_block(r->policy))
		snprintf(buf, n, "%s at block size %u", kvs_policy_name(r->policy),
			 r->block_size);
	else
		snprintf(buf, n, "%s", kvs_policy_name(r->policy));
}

/* p99 TTFT that ties are broken on: at the capacity found when searched,
 * else at the trace's rate */
static double tie_ttft(const rctx *x, size_t i)
{
	return nan_hi(x->caps ? x->caps[i].ttft_p99_s : x->rows[i].st.ttft_s.p99);
}

/* < 0 when row a goes before row b under the tie rule; *why: the criterion
 * that decided.  TTFTs within the band compare equal, so the order stays
 * a strict weak one (the band is fixed for one choice). */
static int tie_cmp(const rctx *x, size_t a, size_t b, int *why)
{
	bool ea = engine_policy(x->rows[a].policy), eb = engine_policy(x->rows[b].policy);
	if (ea != eb) {
		*why = TIE_ENGINE;
		return ea ? -1 : 1;
	}
	double ta = tie_ttft(x, a), tb = tie_ttft(x, b);
	if (ta <= x->ttft_band)
		ta = 0;
	if (tb <= x->ttft_band)
		tb = 0;
	if (ta != tb) {
		*why = TIE_TTFT;
		return ta < tb ? -1 : 1;
	}
	double wa = kvs_sweep_row_waste_pct(&x->rows[a]);
	double wb = kvs_sweep_row_waste_pct(&x->rows[b]);
	if (wa != wb) {
		*why = TIE_WASTE;
		return wa < wb ? -1 : 1;
	}
	uint64_t ma = x->rows[a].st.metadata_bytes_max, mb = x->rows[b].st.metadata_bytes_max;
	if (ma != mb) {
		*why = TIE_META;
		return ma < mb ? -1 : 1;
	}
	*why = TIE_ORDER;
	return a < b ? -1 : a > b;
}

typedef struct pick {
	size_t best;            /* SIZE_MAX: no candidate */
	size_t top;             /* a candidate with the highest key */
	size_t ntied;           /* candidates tied on the objective's figure */
	size_t nengine;         /* of those, rows of the engines' policy */
	int why;                /* what set best apart from the runner-up */
} pick;

static bool tied_key(double k, double top, double rel_eq)
{
	return k == top || fabs(k - top) <= rel_eq * fabs(top);
}

/* Among the candidates x->cand, those with the highest key (equal within
 * rel_eq, relative) tie; the tie rule orders them. */
static pick choose(rctx *x, double (*key)(const rctx *, size_t), double rel_eq)
{
	pick p = { SIZE_MAX, SIZE_MAX, 0, 0, TIE_ORDER };
	double top = -INFINITY;
	bool any = false;
	for (size_t i = 0; i < x->n; i++)
		if (x->cand[i] && (!any || key(x, i) > top)) {
			top = key(x, i);
			p.top = i;
			any = true;
		}
	if (!any)
		return p;
	/* the TTFT band: the lowest p99 TTFT among the tied rows of the
	 * policy that goes first (the engines', when any is tied) */
	bool engine = false;
	for (size_t i = 0; i < x->n; i++)
		if (x->cand[i] && tied_key(key(x, i), top, rel_eq))
			engine |= engine_policy(x->rows[i].policy);
	double lo = INFINITY;
	for (size_t i = 0; i < x->n; i++)
		if (x->cand[i] && tied_key(key(x, i), top, rel_eq) &&
		    (!engine || engine_policy(x->rows[i].policy)) && tie_ttft(x, i) < lo)
			lo = tie_ttft(x, i);
	x->ttft_band = isfinite(lo) ? lo * (1.0 + TTFT_TIE) : -INFINITY;
	size_t second = SIZE_MAX;
	for (size_t i = 0; i < x->n; i++) {
		if (!x->cand[i])
			continue;
		double k = key(x, i);
		if (!tied_key(k, top, rel_eq))
			continue;
		p.ntied++;
		p.nengine += engine_policy(x->rows[i].policy);
		int why;
		if (p.best == SIZE_MAX || tie_cmp(x, i, p.best, &why) < 0) {
			second = p.best;
			p.best = i;
		} else if (second == SIZE_MAX || tie_cmp(x, i, second, &why) < 0) {
			second = i;
		}
	}
	if (second != SIZE_MAX)
		tie_cmp(x, p.best, second, &p.why);
	return p;
}

static double key_rate(const rctx *x, size_t i)
{
	return x->caps[i].max_rate;
}

static double key_flat(const rctx *x, size_t i)
{
	(void)x;
	(void)i;
	return 0;
}

static double key_low_waste(const rctx *x, size_t i)
{
	return -kvs_sweep_row_waste_pct(&x->rows[i]);
}

static double key_hits(const rctx *x, size_t i)
{
	return x->rows[i].st.prefix_hit_rate_tokens;
}

/* Append printf text to buf (truncating safely). */
static void cat(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void cat(char *buf, size_t n, const char *fmt, ...)
{
	size_t len = strlen(buf);
	if (len + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
}

/* "; 6 come within one grid step of the highest rate and it has the lowest
 * p99 TTFT among them, 1.5 s (the next more than 5% higher)";
 * when rows of other policies tie too, ", 5 of them paged (the policy
 * engines deploy, which goes first)" before the criterion among those */
static void tie_text(const rctx *x, const pick *p, const char *tied, char *buf, size_t n)
{
	if (p->ntied < 2)
		return;
	const kvs_sweep_row *r = &x->rows[p->best];
	double ttft = tie_ttft(x, p->best);
	const char *eng = kvs_policy_name(r->policy);
	cat(buf, n, "; %zu %s", p->ntied, tied);
	bool engine = engine_policy(r->policy) && p->nengine < p->ntied;
	if (engine && p->nengine > 1)
		cat(buf, n, ", %zu of them %s (the policy engines deploy, which goes first)",
		    p->nengine, eng);
	const char *among = engine ? "among those" : "among them";
	switch (p->why) {
	case TIE_ENGINE:
		cat(buf, n, ", and %s, the policy engines deploy, goes first", eng);
		break;
	case TIE_TTFT:
		cat(buf, n, " and it has the lowest p99 TTFT %s, %.4g s (the next more than "
		    "%g%% higher)", among, ttft, 100.0 * TTFT_TIE);
		break;
	case TIE_WASTE:
		cat(buf, n, ", its p99 TTFT, %.4g s, is within %g%% of the lowest %s and it "
		    "wastes the least KV of those, %.3g%%", ttft, 100.0 * TTFT_TIE, among,
		    kvs_sweep_row_waste_pct(r));
		break;
	case TIE_META:
		cat(buf, n, ", it shares the lowest p99 TTFT (within %g%%, %.4g s) and KV waste "
		    "%s and has the smallest block tables of those, %llu bytes",
		    100.0 * TTFT_TIE, ttft, among, (unsigned long long)r->st.metadata_bytes_max);
		break;
	default:
		cat(buf, n, ", tying on p99 TTFT, KV waste and block tables, and it "
		    "comes first");
		break;
	}
}

/* the first oracle row (SIZE_MAX when oracle was not swept) */
static size_t oracle_row(const rctx *x)
{
	for (size_t i = 0; i < x->n; i++)
		if (!deployable(x->rows[i].policy))
			return i;
	return SIZE_MAX;
}

static size_t count_cand(const rctx *x)
{
	size_t k = 0;
	for (size_t i = 0; i < x->n; i++)
		k += x->cand[i];
	return k;
}

static bool any_deployable(const rctx *x)
{
	for (size_t i = 0; i < x->n; i++)
		if (deployable(x->rows[i].policy))
			return true;
	return false;
}

static void set_rec(kvs_sweep_recommendation *rec, const kvs_sweep_row *row)
{
	rec->found = true;
	rec->policy = row->policy;
	rec->block_size = row->block_size;
	rec->any_block_size = !by_block(row->policy);
}

static const char only_oracle[] =
	"Only oracle was swept, and it is a bound, not a deployable choice (it "
	"reserves each request's true output length, which no server knows in "
	"advance): add paged, vattention, max or pow2 to --policies.";

static void rec_throughput(rctx *x, kvs_sweep_recommendation *rec)
{
	char *buf = rec->reason;
	size_t bn = sizeof rec->reason;
	char nm[64];
	size_t orow = oracle_row(x);
	if (!any_deployable(x)) {
		snprintf(buf, bn, "%s", only_oracle);
		return;
	}
	if (x->caps) {
		for (size_t i = 0; i < x->n; i++)
			x->cand[i] = deployable(x->rows[i].policy) && distinct(x, i) &&
				     x->caps[i].outcome != KVS_CAPACITY_UNATTAINABLE;
		size_t ncomb = 0;
		for (size_t i = 0; i < x->n; i++)
			ncomb += deployable(x->rows[i].policy) && distinct(x, i);
		/* rates on the grid are r0 (1 + tol)^k: the search resolves a
		 * rate to one step, so rates one step apart (k and k - 1) tie */
		double tol = x->c->rate_tolerance > 0 ? x->c->rate_tolerance : 0;
		pick p = choose(x, key_rate, tol / (1.0 + tol) * (1.0 + 1e-6) + 1e-9);
		double top = p.top != SIZE_MAX ? x->caps[p.top].max_rate : 0;
		/* the highest rate is named by the pick when it reaches it */
		if (p.best != SIZE_MAX && fabs(x->caps[p.best].max_rate - top) <= 1e-9 * top)
			p.top = p.best;
		char tnm[64] = "";
		if (p.best != SIZE_MAX) {
			const kvs_sweep_capacity *k = &x->caps[p.best];
			set_rec(rec, &x->rows[p.best]);
			name_of(&x->rows[p.best], nm, sizeof nm);
			bool at_top = p.top == p.best;   /* (named so just above) */
			snprintf(buf, bn, "%s sustains %.3g requests/s (%.3g conversations per "
				 "GPU) with %s, ", nm, k->max_rate, k->conversations_per_gpu, x->slo);
			if (at_top) {
				cat(buf, bn, "the highest rate of the %zu deployable combinations",
				    ncomb);
			} else {
				name_of(&x->rows[p.top], tnm, sizeof tnm);
				cat(buf, bn, "within the search's resolution (one %g%% grid "
				    "step) of the highest rate of the %zu deployable "
				    "combinations, %s's %.3g", 100.0 * tol, ncomb, tnm, top);
			}
			if (k->outcome == KVS_CAPACITY_UNBOUNDED)
				cat(buf, bn, " (the search limit)");
			tie_text(x, &p, "come within one grid step of the highest rate",
				 buf, bn);
		} else {
			snprintf(buf, bn, "No deployable combination meets %s at any rate "
				 "searched: relax the SLOs or use a faster deployment", x->slo);
		}
		if (orow != SIZE_MAX) {
			const kvs_sweep_capacity *o = &x->caps[orow];
			const char *on = kvs_policy_name(o->policy);
			if (o->outcome == KVS_CAPACITY_UNATTAINABLE) {
				cat(buf, bn, "; %s, the unattainable bound, meets them at no "
				    "rate searched either", on);
			} else if (p.best == SIZE_MAX) {
				cat(buf, bn, "; %s, the unattainable bound, reaches %.3g "
				    "requests/s", on, o->max_rate);
			} else if (o->max_rate < top * (1.0 - 1e-9)) {
				/* a deployable policy beats it: not a bound here */
				if (!*tnm)
					name_of(&x->rows[p.top], tnm, sizeof tnm);
				cat(buf, bn, "; %s, which reserves each request's true length, "
				    "reaches %.3g requests/s, less than %s's %.3g: %s", on,
				    o->max_rate, tnm, top,
				    o->max_rate >= top / (1.0 + tol) * (1.0 - 1e-6)
				    ? "within the search's resolution, which cannot order them"
				    : "reservation waste is not what limits the rate here");
			} else if (fabs(o->max_rate - x->caps[p.best].max_rate) <=
				   1e-9 * o->max_rate) {
				cat(buf, bn, "; %s, the unattainable bound, reaches the same "
				    "grid rate", on);
			} else {
				cat(buf, bn, "; %s, the unattainable bound, reaches %.3g "
				    "requests/s (%+.3g%%)", on, o->max_rate,
				    100.0 * (o->max_rate / x->caps[p.best].max_rate - 1.0));
			}
		}
		cat(buf, bn, ".");
		return;
	}
	/* at the trace's rate: rows within 1% of the best throughput serve the
	 * trace alike (several serve everything), the tie rule orders them */
	double top = -1;
	for (size_t i = 0; i < x->n; i++) {
		const kvs_sweep_row *r = &x->rows[i];
		if (deployable(r->policy) && distinct(x, i) && r->meets_slo &&
		    r->st.output_tokens_per_s > top)
			top = r->st.output_tokens_per_s;
	}
	for (size_t i = 0; i < x->n; i++) {
		const kvs_sweep_row *r = &x->rows[i];
		x->cand[i] = deployable(r->policy) && distinct(x, i) && r->meets_slo &&
			     r->st.output_tokens_per_s >= 0.99 * top;
	}
	pick p = choose(x, key_flat, 0);
	if (p.best == SIZE_MAX) {
		if (x->c->slo_ttft_s > 0 || x->c->slo_tpot_s > 0)
			snprintf(buf, bn, "No deployable combination meets %s at the trace's "
				 "rate: --find-max-rate finds the highest rate each sustains, "
				 "or relax the SLOs", x->slo);
		else
			snprintf(buf, bn, "No deployable combination completes a request at "
				 "the trace's rate: each rejected or left unfinished every "
				 "request (see the rows' accounting; a larger pool or "
				 "max_model_len admits them)");
	} else {
		const kvs_sweep_row *r = &x->rows[p.best];
		set_rec(rec, r);
		name_of(r, nm, sizeof nm);
		snprintf(buf, bn, "%s delivers %.4g output tokens/s at the trace's rate with "
			 "p99 TPOT %.3g s (%s)", nm, r->st.output_tokens_per_s,
			 r->st.tpot_s.p99, x->slo);
		if (p.ntied < 2)
			cat(buf, bn, " and p99 TTFT %.4g s", r->st.ttft_s.p99);
		tie_text(x, &p, "deployable combinations come within 1% of the best "
			 "throughput", buf, bn);
	}
	if (orow != SIZE_MAX)
		/* a bound only where no deployable row delivers more */
		cat(buf, bn, "; %s, %s, delivers %.4g tokens/s with p99 TTFT %.3g s",
		    kvs_policy_name(x->rows[orow].policy),
		    x->rows[orow].st.output_tokens_per_s >= top
		    ? "the unattainable bound" : "which reserves each request's true length",
		    x->rows[orow].st.output_tokens_per_s, x->rows[orow].st.ttft_s.p99);
	cat(buf, bn, ".");
}

/* When a paged block size left out by the kernel-cost margin would beat
 * the pick on the objective (better(a, b): a beats b), say so: ", counting
 * only paged block sizes whose kernel time is within 5% of the cheapest
 * (block size 64, 1.042x contiguous): block size 1 wastes 0.0069% but its
 * kernel takes 2.000x", naming the best of those left out. */
static void margin_text(const rctx *x, size_t best, bool (*better)(const rctx *, size_t, size_t),
			const char *(*what)(const rctx *, size_t, char *, size_t),
			char *buf, size_t n)
{
	size_t out = SIZE_MAX;
	for (size_t i = 0; i < x->n; i++) {
		if (!by_block(x->rows[i].policy) || in_margin(x, i))
			continue;
		if (out == SIZE_MAX || better(x, i, out))
			out = i;
	}
	if (out == SIZE_MAX || !better(x, out, best))
		return;
	char w[96];
	cat(buf, n, ", counting only paged block sizes whose kernel time is within %g%% "
	    "of the cheapest (block size %u, %.3fx contiguous): block size %u %s but its "
	    "kernel takes %.3fx", 100.0 * x->margin, x->rows[x->cheapest].block_size,
	    x->min_rel, x->rows[out].block_size, what(x, out, w, sizeof w),
	    x->rows[out].kernel.rel);
}

static bool less_waste(const rctx *x, size_t a, size_t b)
{
	return kvs_sweep_row_waste_pct(&x->rows[a]) < kvs_sweep_row_waste_pct(&x->rows[b]);
}

static const char *waste_what(const rctx *x, size_t i, char *buf, size_t n)
{
	snprintf(buf, n, "wastes %.3g%%", kvs_sweep_row_waste_pct(&x->rows[i]));
	return buf;
}

static bool more_hits(const rctx *x, size_t a, size_t b)
{
	return x->rows[a].st.prefix_hit_rate_tokens > x->rows[b].st.prefix_hit_rate_tokens;
}

static const char *hits_what(const rctx *x, size_t i, char *buf, size_t n)
{
	snprintf(buf, n, "reuses %.3g%%", 100.0 * x->rows[i].st.prefix_hit_rate_tokens);
	return buf;
}

static void kernel_text(const kvs_sweep_row *r, char *buf, size_t n)
{
	if (by_block(r->policy))
		cat(buf, n, " (kernel %.3fx contiguous)", r->kernel.rel);
}

/* The recommendation is r: recorded, and its name and kernel start the
 * sentence in buf. */
static void lead_with(kvs_sweep_recommendation *rec, const kvs_sweep_row *r,
		      char *buf, size_t bn)
{
	char nm[64];
	set_rec(rec, r);
	name_of(r, nm, sizeof nm);
	snprintf(buf, bn, "%s", nm);
	kernel_text(r, buf, bn);
}

static void rec_waste(rctx *x, kvs_sweep_recommendation *rec)
{
	char *buf = rec->reason;
	size_t bn = sizeof rec->reason;
	if (!any_deployable(x)) {
		snprintf(buf, bn, "%s", only_oracle);
		return;
	}
	for (size_t i = 0; i < x->n; i++)
		x->cand[i] = deployable(x->rows[i].policy) && distinct(x, i) && in_margin(x, i);
	pick p = choose(x, key_low_waste, 0);
	if (p.best == SIZE_MAX)
		return;     /* cannot happen: the cheapest paged row is in the margin */
	const kvs_sweep_row *r = &x->rows[p.best];
	lead_with(rec, r, buf, bn);
	cat(buf, bn, " leaves the least KV memory held but unused of the %zu deployable "
	    "choices considered, %.3g%% of the budget on average (reservation %.3g%%, internal "
	    "fragmentation %.3g%%, external %.3g%%)", count_cand(x), kvs_sweep_row_waste_pct(r),
	    r->st.memory_pct.reservation, r->st.memory_pct.internal_frag,
	    r->st.memory_pct.external_frag);
	margin_text(x, p.best, less_waste, waste_what, buf, bn);
	tie_text(x, &p, "tie on waste", buf, bn);
	size_t orow = oracle_row(x);
	if (orow != SIZE_MAX) {
		/* a bound only where no contiguous policy swept wastes less */
		double ow = kvs_sweep_row_waste_pct(&x->rows[orow]);
		bool bound = true;
		for (size_t i = 0; i < x->n; i++)
			if (deployable(x->rows[i].policy) && !by_block(x->rows[i].policy) &&
			    kvs_sweep_row_waste_pct(&x->rows[i]) < ow)
				bound = false;
		cat(buf, bn, "; %s, %s, wastes %.3g%%", kvs_policy_name(x->rows[orow].policy),
		    bound ? "the unattainable bound for contiguous reservation"
			  : "which reserves each request's true length", ow);
	}
	cat(buf, bn, ".");
}

static void rec_prefix(rctx *x, kvs_sweep_recommendation *rec)
{
	char *buf = rec->reason;
	size_t bn = sizeof rec->reason;
	const kvs_sweep_config *c = x->c;
	bool paged = false;
	for (size_t i = 0; i < x->n; i++)
		paged |= kvs_policy_has(x->rows[i].policy, KVS_TRAIT_PREFIX_HASHES);
	for (size_t i = 0; i < x->n; i++)
		x->cand[i] = deployable(x->rows[i].policy) && distinct(x, i) &&
			     in_margin(x, i) && x->rows[i].st.prefix_hit_tokens > 0;
	bool widened = false;
	if (count_cand(x) == 0) {
		/* no block size within the margin shares a prefix: look at all */
		for (size_t i = 0; i < x->n; i++)
			x->cand[i] = deployable(x->rows[i].policy) && distinct(x, i) &&
				     x->rows[i].st.prefix_hit_tokens > 0;
		widened = count_cand(x) > 0;
	}
	pick p = choose(x, key_hits, 0);
	if (p.best == SIZE_MAX) {
		if (!c->base.enable_prefix_caching)
			snprintf(buf, bn, "Prefix caching is off (--enable-prefix-caching "
				 "turns it on), so no combination reuses prompt blocks.");
		else if (!paged)
			snprintf(buf, bn, "Prefix caching applies to the paged policy only, "
				 "and paged is not in --policies.");
		else
			snprintf(buf, bn, "No prefix-cache hits in any combination: the "
				 "trace's prompts share no hash-identified prefix.");
		return;
	}
	const kvs_sweep_row *r = &x->rows[p.best];
	lead_with(rec, r, buf, bn);
	cat(buf, bn, " reuses %.3g%% of prompt tokens from the prefix cache (coarser "
	    "blocks share only whole blocks), the most of the deployable choices",
	    100.0 * r->st.prefix_hit_rate_tokens);
	if (widened)
		cat(buf, bn, " (no paged block size within %g%% of the cheapest kernel "
		    "reuses any)", 100.0 * x->margin);
	else
		margin_text(x, p.best, more_hits, hits_what, buf, bn);
	tie_text(x, &p, "tie on hits", buf, bn);
	cat(buf, bn, ".");
}

kvs_status kvs_sweep_recommend_rows(const kvs_sweep_config *c, const kvs_sweep_row *rows,
			      const kvs_sweep_capacity *caps, size_t n,
			      kvs_sweep_recommendation out[KVS_OBJ_COUNT_])
{
	static const char *const names[KVS_OBJ_COUNT_] = {
		"throughput_within_slo", "least_kv_waste", "best_prefix_hit_rate",
	};
	for (int o = 0; o < KVS_OBJ_COUNT_; o++) {
		memset(&out[o], 0, sizeof out[o]);
		out[o].objective = (kvs_sweep_objective)o;
		out[o].objective_name = names[o];
	}
	rctx x = { .c = c, .rows = rows, .caps = caps, .n = n,
		   .margin = c->kernel_cost_margin >= 0 ? c->kernel_cost_margin : 0,
		   .min_rel = INFINITY, .cheapest = SIZE_MAX };
	if (!*kvs_slo_phrase(x.slo, sizeof x.slo, c->slo_ttft_s, c->slo_tpot_s))
		snprintf(x.slo, sizeof x.slo, "no SLO given");
	for (size_t i = 0; i < n; i++)
		if (by_block(rows[i].policy) && rows[i].kernel.rel < x.min_rel) {
			x.min_rel = rows[i].kernel.rel;
			x.cheapest = i;
		}
	if (n == 0) {
		for (int o = 0; o < KVS_OBJ_COUNT_; o++)
			snprintf(out[o].reason, sizeof out[o].reason, "No rows.");
		return KVS_OK;
	}
	if (!(x.cand = kvs_calloc(n, sizeof *x.cand)))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory choosing a recommendation");
	rec_throughput(&x, &out[KVS_OBJ_THROUGHPUT]);
	rec_waste(&x, &out[KVS_OBJ_WASTE]);
	rec_prefix(&x, &out[KVS_OBJ_PREFIX]);
	kvs_free(x.cand);
	return KVS_OK;
}

/* A row the throughput objective can weigh: replayed and, when searched,
 * its capacity found (all of them unless the sweep was interrupted).  The
 * other objectives read only the row. */
static bool row_complete(const kvs_sweep_result *R, size_t i)
{
	return R->rows[i].done && (!R->caps || R->caps[i].simulations > 0);
}

/* The rows (and capacities) of R replayed (searched_only: and searched),
 * copied into *rows / *caps; *n of them. */
static kvs_status gather(const kvs_sweep_result *R, bool searched_only,
			 kvs_sweep_row **rows, kvs_sweep_capacity **caps, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < R->nrows; i++)
		k += searched_only ? row_complete(R, i) : R->rows[i].done;
	*rows = kvs_calloc(k ? k : 1, sizeof **rows);
	*caps = R->caps ? kvs_calloc(k ? k : 1, sizeof **caps) : NULL;
	if (!*rows || (R->caps && !*caps)) {
		kvs_free(*rows);
		kvs_free(*caps);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory choosing a recommendation");
	}
	k = 0;
	for (size_t i = 0; i < R->nrows; i++) {
		if (!(searched_only ? row_complete(R, i) : R->rows[i].done))
			continue;
		(*rows)[k] = R->rows[i];
		if (*caps)
			(*caps)[k] = R->caps[i];
		k++;
	}
	*n = k;
	return KVS_OK;
}

kvs_status kvs_sweep_recommend(kvs_sweep_result *R)
{
	size_t n = 0, nrep = 0;
	for (size_t i = 0; i < R->nrows; i++) {
		n += row_complete(R, i);
		nrep += R->rows[i].done;
	}
	if (n == R->nrows)
		return kvs_sweep_recommend_rows(&R->cfg, R->rows, R->caps, R->nrows, R->rec);
	/* interrupted: least waste and prefix hits among the rows replayed,
	 * throughput among those whose capacity search (when searched) also
	 * finished; each sentence says what it covers */
	kvs_sweep_row *rows;
	kvs_sweep_capacity *caps;
	kvs_sweep_recommendation part[KVS_OBJ_COUNT_];
	kvs_status st = gather(R, false, &rows, &caps, &nrep);
	if (st != KVS_OK)
		return st;
	/* rows whose search was cut have no capacity: their ties are broken
	 * at the trace's rate (and throughput is chosen below) */
	bool cut = R->caps && n < nrep;
	st = kvs_sweep_recommend_rows(&R->cfg, rows, cut ? NULL : caps, nrep, R->rec);
	kvs_free(rows);
	kvs_free(caps);
	if (st == KVS_OK && cut) {
		if ((st = gather(R, true, &rows, &caps, &n)) != KVS_OK)
			return st;
		st = kvs_sweep_recommend_rows(&R->cfg, rows, caps, n, part);
		kvs_free(rows);
		kvs_free(caps);
		if (st == KVS_OK)
			R->rec[KVS_OBJ_THROUGHPUT] = part[KVS_OBJ_THROUGHPUT];
	}
	if (st != KVS_OK)
		return st;
	for (int o = 0; o < KVS_OBJ_COUNT_; o++) {
		kvs_sweep_recommendation *r = &R->rec[o];
		bool searched = o == KVS_OBJ_THROUGHPUT && R->caps;
		size_t have = searched ? R->points_done : R->points_replayed;
		if (have == 0) {
			snprintf(r->reason, sizeof r->reason, "The sweep was interrupted before "
				 "any combination %s.", searched ? "finished its capacity search"
				 : "finished");
			r->found = false;
			continue;
		}
		size_t len = strlen(r->reason);
		snprintf(r->reason + len, sizeof r->reason - len, " (Interrupted: this covers "
			 "only the %zu of %zu simulated combinations %s.)", have,
			 R->points_total, searched ? "whose capacity search finished"
			 : "replayed");
	}
	return KVS_OK;
}

/* ---- JSON ---------------------------------------------------------------------- */

static json_t *jreal(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static void jset(json_t *o, const char *k, json_t *v)
{
	json_object_set_new(o, k, v ? v : json_null());
}

/* The set's requests a row's replay did not take: those after the
 * horizon (a row's replay is never cut short by an interrupt: an
 * interrupted one is not a row).  0 without a horizon. */
static uint64_t after_horizon(const kvs_sweep_result *R, const kvs_sweep_row *r)
{
	return R->requests > r->st.arrived ? R->requests - r->st.arrived : 0;
}

static json_t *row_json(const kvs_sweep_result *R, const kvs_sweep_row *r)
{
	const kvs_deploy *d = &R->cfg.base.deploy;
	const kvs_sim_stats *s = &r->st;
	json_t *o = json_object();
	jset(o, "policy", json_string(kvs_policy_name(r->policy)));
	jset(o, "block_size", jint(r->block_size));
	/* every figure of the metric table that sweep rows carry, flat */
	for (int i = 0; i < KVS_M_COUNT_; i++) {
		const kvs_metric_info *m = kvs_metric_get((kvs_metric_id)i);
		if (m->flags & KVS_MF_SWEEP)
			jset(o, m->key, kvs_json_jt(kvs_sim_metric_json(m, s)));
	}
	jset(o, "kernel_cost_us", jreal(r->kernel.cost_us));
	jset(o, "kernel_relative_cost", jreal(r->kernel.rel));
	jset(o, "kernel_source", json_string(kvs_kernel_source_name(r->kernel.source)));
	jset(o, "meets_slo", json_boolean(r->meets_slo));
	jset(o, "repeated", json_boolean(r->repeated));
	/* --horizon: arrived + after_horizon = the trace's requests, as in
	 * replay's accounting */
	if (R->cfg.base.horizon_s > 0)
		jset(o, "after_horizon", jint(after_horizon(R, r)));
	/* --gpu-hour-price: the replay/compare policy object's cost object */
	json_t *cost = kvs_json_jt(kvs_sim_cost_json(d, s));
	if (cost)
		jset(o, "cost", cost);
	return o;
}

static json_t *cap_json(const kvs_sweep_capacity *k, const kvs_sweep_config *c)
{
	json_t *o = json_object();
	jset(o, "policy", json_string(kvs_policy_name(k->policy)));
	jset(o, "block_size", jint(k->block_size));
	jset(o, "outcome", json_string(kvs_capacity_outcome_name(k->outcome)));
	jset(o, "max_rate", jreal(k->max_rate));
	jset(o, "fail_rate", k->fail_rate > 0 ? jreal(k->fail_rate) : json_null());
	jset(o, "time_scale", jreal(k->time_scale));
	jset(o, "tolerance", jreal(k->tolerance));
	jset(o, "slo_ttft_s", c->slo_ttft_s > 0 ? jreal(c->slo_ttft_s) : json_null());
	jset(o, "slo_tpot_s", c->slo_tpot_s > 0 ? jreal(c->slo_tpot_s) : json_null());
	jset(o, "ttft_p99_s", jreal(k->ttft_p99_s));
	jset(o, "tpot_p99_s", jreal(k->tpot_p99_s));
	jset(o, "concurrency_mean", jreal(k->concurrency_mean));
	jset(o, "conversations_per_gpu", jreal(k->conversations_per_gpu));
	jset(o, "requests_per_s_per_gpu", jreal(k->requests_per_s_per_gpu));
	jset(o, "output_tokens_per_s", jreal(k->output_tokens_per_s));
	jset(o, "simulations", jint(k->simulations));
	jset(o, "repeated", json_boolean(k->repeated));
	return o;
}

static json_t *sweep_jt(const kvs_sweep_result *R, const kvs_request_set *rs)
{
	const kvs_sweep_config *c = &R->cfg;
	json_t *doc = json_object();
	if (!doc)
		return NULL;
	jset(doc, "kvsim_version", json_string(kvs_version()));
	jset(doc, "command", json_string("sweep"));
	jset(doc, "model", kvs_json_jt(kvs_sim_model_json(&c->base.deploy.model)));
	jset(doc, "gpu", kvs_json_jt(kvs_sim_gpu_json(&c->base.deploy.gpu)));
	const kvs_sim_stats *st0 = NULL;   /* the first row replayed */
	for (size_t i = 0; i < R->nrows && !st0; i++)
		if (R->rows[i].done)
			st0 = &R->rows[i].st;
	kvs_sim_config ec = c->base;
	ec.slo_ttft_s = c->slo_ttft_s;
	ec.slo_tpot_s = c->slo_tpot_s;
	json_t *eng = kvs_json_jt(kvs_sim_engine_json(&ec, st0));
	if (eng) {
		/* block size and pool blocks vary by row */
		json_object_del(eng, "block_size");
		json_object_del(eng, "num_gpu_blocks");
		json_t *bs = json_array(), *ps = json_array();
		for (size_t i = 0; i < c->nblock_sizes; i++)
			json_array_append_new(bs, jint(c->block_sizes[i]));
		for (size_t i = 0; i < c->npolicies; i++)
			json_array_append_new(ps, json_string(kvs_policy_name(c->policies[i])));
		jset(eng, "block_sizes", bs);
		jset(eng, "policies", ps);
		jset(eng, "time_scale", jreal(c->time_scale));
	}
	jset(doc, "engine", eng);
	jset(doc, "trace", kvs_json_jt(kvs_sim_trace_json(rs ? kvs_request_set_path(rs) : NULL,
					      rs ? kvs_request_set_format(rs) : KVS_TRACE_AUTO,
					      rs ? kvs_request_set_trace_stats(rs) : NULL, st0)));
	json_t *k = json_object();
	jset(k, "model", json_string(c->kernel_profile ? "profile" : "analytic"));
	jset(k, "block_overhead_tokens",
	    jreal(c->kernel_profile ? kvs_kernel_profile_fit_delta(c->kernel_profile)
				    : c->kernel_block_overhead));
	jset(k, "feeds_step_time", json_boolean(c->kernel_feeds_step_time));
	jset(k, "mean_decode_context", jreal(R->mean_context));
	if (c->kernel_profile) {
		jset(k, "profile", json_string(kvs_kernel_profile_path(c->kernel_profile)));
		jset(k, "profile_gpu", json_string(kvs_kernel_profile_gpu(c->kernel_profile)));
	}
	jset(doc, "kernel", k);
	json_t *rows = json_array();
	for (size_t i = 0; i < R->nrows; i++)
		if (R->rows[i].done)
			json_array_append_new(rows, row_json(R, &R->rows[i]));
	jset(doc, "rows", rows);
	if (R->caps) {
		json_t *caps = json_array();
		for (size_t i = 0; i < R->ncaps; i++)
			if (R->caps[i].simulations > 0)
				json_array_append_new(caps, cap_json(&R->caps[i], c));
		jset(doc, "capacity", caps);
		jset(doc, "base_rate", jreal(R->base_rate));
	}
	json_t *recs = json_array();
	for (int o = 0; o < KVS_OBJ_COUNT_; o++) {
		const kvs_sweep_recommendation *r = &R->rec[o];
		json_t *x = json_object();
		jset(x, "objective", json_string(r->objective_name));
		jset(x, "found", json_boolean(r->found));
		jset(x, "policy", r->found ? json_string(kvs_policy_name(r->policy)) : json_null());
		/* a policy independent of the block size is named without one */
		jset(x, "block_size", r->found && !r->any_block_size ? jint(r->block_size)
								 : json_null());
		jset(x, "reason", json_string(r->reason));
		json_array_append_new(recs, x);
	}
	jset(doc, "recommendations", recs);
	jset(doc, "simulations", jint(R->simulations));
	if (R->interrupted) {
		/* docs/REPORT-JSON.md: what an interrupted sweep did */
		jset(doc, "interrupted", json_true());
		jset(doc, "points_done", jint(R->points_done));
		jset(doc, "points_replayed", jint(R->points_replayed));
		jset(doc, "points_total", jint(R->points_total));
	}
	return doc;
}

/* ---- CSV -------------------------------------------------------------------------- */

kvs_status kvs_sweep_result_csv(const kvs_sweep_result *R, FILE *f)
{
	/* the row's figures, by the metric table's keys */
	static const kvs_metric_id cols[] = {
		KVS_M_INTERNAL_FRAG_PCT, KVS_M_EXTERNAL_FRAG_PCT, KVS_M_RESERVATION_PCT,
		KVS_M_WASTE_PCT, KVS_M_METADATA_BYTES_MAX, KVS_M_PREFIX_HIT_RATE_TOKENS,
		KVS_M_CONC_MEAN, KVS_M_CONC_P99, KVS_M_QUEUE_P99, KVS_M_TTFT_P50,
		KVS_M_TTFT_P90, KVS_M_TTFT_P99, KVS_M_TPOT_P50, KVS_M_TPOT_P90,
		KVS_M_TPOT_P99, KVS_M_REQUESTS_PER_S, KVS_M_OUTPUT_TOKENS_PER_S,
		KVS_M_PREEMPTIONS,
	};
	fputs("policy,block_size", f);
	for (size_t k = 0; k < KVS_ARRAY_LEN(cols); k++)
		fprintf(f, ",%s", kvs_metric_get(cols[k])->key);
	fputs(",kernel_relative_cost,kernel_cost_us,kernel_source,meets_slo", f);
	if (R->caps)
		fprintf(f, ",capacity_outcome,max_rate,fail_rate,conversations_per_gpu,"
			"requests_per_s_per_gpu");
	/* --gpu-hour-price: the summary CSV's cost columns */
	kvs_sim_cost c0;
	bool priced = kvs_sim_cost_of(&R->cfg.base.deploy, &R->rows[0].st, &c0);
	if (priced)
		fputs(",gpu_hour_price,gpus,dollars,dollars_per_million_output_tokens,"
		      "dollars_per_conversation_hour,dollars_per_request", f);
	/* --horizon: the requests each row took and those after it (the CSV
	 * has no other request count) */
	bool horizon = R->cfg.base.horizon_s > 0;
	if (horizon)
		fputs(",arrived,after_horizon", f);
	fputc('\n', f);
	for (size_t i = 0; i < R->nrows; i++) {
		const kvs_sweep_row *r = &R->rows[i];
		if (!r->done)
			continue;
		fprintf(f, "%s,%u", kvs_policy_name(r->policy), r->block_size);
		for (size_t k = 0; k < KVS_ARRAY_LEN(cols); k++) {
			const kvs_metric_info *m = kvs_metric_get(cols[k]);
			double v = kvs_metric_value(m->id, &r->st);
			if (kvs_metric_is_empty(m, &r->st))
				fputc(',', f);   /* no sample: an empty cell */
			else if (m->flags & KVS_MF_INT)
				fprintf(f, ",%llu", (unsigned long long)v);
			else
				fprintf(f, ",%.6g", v);
		}
		fprintf(f, ",%.6g,%.6g,%s,%d", r->kernel.rel, r->kernel.cost_us,
			kvs_kernel_source_name(r->kernel.source), r->meets_slo ? 1 : 0);
		if (R->caps && R->caps[i].simulations == 0) {
			fputs(",,,,,", f);     /* search interrupted */
		} else if (R->caps) {
			const kvs_sweep_capacity *k = &R->caps[i];
			fprintf(f, ",%s,%.6g,%.6g,%.6g,%.6g", kvs_capacity_outcome_name(k->outcome),
				k->max_rate, k->fail_rate, k->conversations_per_gpu,
				k->requests_per_s_per_gpu);
		}
		if (priced) {
			kvs_sim_cost c;
			kvs_sim_cost_of(&R->cfg.base.deploy, &r->st, &c);
			fprintf(f, ",%.6g,%u,%.6g", R->cfg.base.deploy.gpu_hour_price, c.gpus,
				c.dollars);
			const double v[3] = { c.per_million_output_tokens,
					      c.per_conversation_hour, c.per_request };
			for (int k = 0; k < 3; k++) {
				if (isfinite(v[k]))
					fprintf(f, ",%.6g", v[k]);
				else
					fputc(',', f);
			}
		}
		if (horizon)
			fprintf(f, ",%llu,%llu", (unsigned long long)r->st.arrived,
				(unsigned long long)after_horizon(R, r));
		fputc('\n', f);
	}
	if (fflush(f) != 0 || ferror(f))
		return kvs_fail(KVS_ERR_IO, "write failed: %s", strerror(errno));
	return KVS_OK;
}

kvs_json *kvs_sweep_result_json(const kvs_sweep_result *R, const kvs_request_set *rs)
{
	return kvs_json_of(sweep_jt(R, rs));
}

/* ---- request-rate curve (--rates) ------------------------------------------------ */

kvs_json *kvs_sweep_curve_json(kvs_sweep_result *const *R, const double *rates, size_t n,
			       const kvs_request_set *set)
{
	if (n == 0)
		return NULL;
	/* the first sweep's document stands for the configuration (the
	 * sweeps differ only in the arrivals' scale); its rows, capacity and
	 * recommendations make way for the curve */
	kvs_json *d = kvs_sweep_result_json(R[0], set);
	if (!d)
		return NULL;
	json_t *doc = kvs_json_jt(d);
	static const char *const drop[] = { "rows", "capacity", "base_rate", "recommendations",
					    "simulations", "interrupted", "points_done",
					    "points_replayed", "points_total" };
	for (size_t k = 0; k < KVS_ARRAY_LEN(drop); k++)
		json_object_del(doc, drop[k]);
	json_t *rs = json_array(), *curve = json_array();
	uint64_t sims = 0;
	bool cut = false;
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(rs, jreal(rates[i]));
		sims += R[i]->simulations;
		cut |= R[i]->interrupted;
		for (size_t j = 0; j < R[i]->nrows; j++) {
			if (!R[i]->rows[j].done)
				continue;
			json_t *o = row_json(R[i], &R[i]->rows[j]);
			if (o)
				jset(o, "rate", jreal(rates[i]));
			json_array_append_new(curve, o);
		}
	}
	jset(doc, "rates", rs);
	/* the trace's own rate: each result's is at its rates[i] time scale */
	jset(doc, "base_rate", jreal(R[0]->base_rate * R[0]->cfg.time_scale));
	jset(doc, "curve", curve);
	jset(doc, "simulations", jint(sims));
	if (cut)
		jset(doc, "interrupted", json_true());
	return d;
}

kvs_status kvs_sweep_curve_csv(kvs_sweep_result *const *R, const double *rates, size_t n,
			       FILE *f)
{
	for (size_t i = 0; i < n; i++) {
		/* each sweep's CSV, its lines prefixed with the rate (the header
		 * with "rate", once) */
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		if (!m)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (CSV)");
		kvs_status st = kvs_sweep_result_csv(R[i], m);
		if (fclose(m) != 0 && st == KVS_OK)
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory (CSV)");
		if (st != KVS_OK) {
			free(buf);
			return st;
		}
		char *line = buf, *nl;
		bool head = true;
		while (line < buf + len && (nl = memchr(line, '\n', (size_t)(buf + len - line)))) {
			if (!head)
				fprintf(f, "%.9g,", rates[i]);
			else if (i == 0)
				fputs("rate,", f);
			if (!head || i == 0)
				fwrite(line, 1, (size_t)(nl - line) + 1, f);
			head = false;
			line = nl + 1;
		}
		free(buf);
	}
	return ferror(f) ? kvs_fail(KVS_ERR_IO, "write error") : KVS_OK;
}
