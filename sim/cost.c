/*
 * cost.c - the step-time model: roofline from the model and GPU, a linear
 * model (tests, calibration), a least-squares fit of a measured step-time
 * table, and closed-form sums of step times over decode spans.
 *
 * docs/COST-MODEL.md states the model and its defaults.  Everything here is
 * per rank of one tensor-parallel group, for one pass through all pp
 * stages in turn.  With balanced micro-batches (kvs_deploy.pp_balanced) a
 * step is one round of them: each sequence in one of m =
 * kvs_cost_micro_batches(nseq) batches in flight, a round lasting one
 * micro-batch's pass through every stage (each stage busy with the m
 * batches in that time).  So a step then costs what a step of 1/m of its
 * tokens, sequences, context and attention costs over all stages (the
 * weights read once per micro-batch and stage), plus the engine's
 * per-step overhead, whole, once.  Without it m is 1: one batch in flight.
 */
#include "kvs_config.h"
#include "sim_internal.h"
#include "common/num.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void kvs_cost_config_defaults(kvs_cost_config *c)
{
	memset(c, 0, sizeof *c);
	c->kind = KVS_COST_ROOFLINE;
	c->flops_efficiency = 0.5;
	c->bandwidth_efficiency = 0.8;
	c->step_overhead_s = 0.002;
	c->allreduce_latency_s = 10e-6;
	c->kv_read_factor = 1.0;
}

/* ---- closed-form sums over a span -------------------------------------- */

/* sums of a + b j over j in [j0, j1): S0 = sum, S1 = sum of j (a + b j)
 * (S1 only when want1: the prefix sums need S0 alone, computed by the
 * same operations) */
static inline __attribute__((always_inline)) void
line_sums(double a, double b, uint64_t j0, uint64_t j1, double *S0, double *S1, bool want1)
{
	if (j1 <= j0) {
		*S0 = 0;
		if (want1)
			*S1 = 0;
		return;
	}
	double n = (double)(j1 - j0);
	double x0 = (double)j0, x1 = (double)j1;
	/* sum j = (j0 + j1 - 1) n / 2 ; sum j^2 = F(j1) - F(j0), F(x) = (x-1)x(2x-1)/6 */
	double sj = (x0 + x1 - 1.0) * n / 2.0;
	*S0 = a * n + b * sj;
	if (want1) {
		double sjj = ((x1 - 1.0) * x1 * (2.0 * x1 - 1.0) -
			      (x0 - 1.0) * x0 * (2.0 * x0 - 1.0)) / 6.0;
		*S1 = a * sj + b * sjj;
	}
}

/* First index in [j0, j1] from which line 1 (not line 2) is the larger, when
 * the branch changes inside the range; the max of two lines switches at most
 * once. */
static uint64_t lin2_split(const kvs_lin2 *L, uint64_t j0, uint64_t j1)
{
	double da = L->a1 - L->a2, db = L->b1 - L->b2;
	if (db == 0.0)
		return da >= 0 ? j0 : j1;   /* one line dominates throughout */
	double r = -da / db;            /* d(r) = 0 */
	if (!(r > (double)j0))
		return db > 0 ? j0 : j1;
	if (r >= (double)j1)
		return db > 0 ? j1 : j0;
	return (uint64_t)ceil(r);
}

/* line_sums over [0, 1): n = 1, sum j = sum j^2 = +0 (the same operations,
 * with the constants the general formula yields there). */
static inline void line_sums_01(double a, double b, double *S0, double *S1)
{
	*S0 = a * 1.0 + b * 0.0;
	*S1 = a * 0.0 + b * 0.0;
}

/* kvs_lin2_sums over [0, 1), one step (most spans when many sequences
 * run): the general path's operations in its order, without the range
 * arithmetic; bit-identical results. */
static void lin2_sums_01(const kvs_lin2 *L, double *S0, double *S1)
{
	double s0 = 0, s1 = 0, p0, p1;
	double db = L->b1 - L->b2;
	if (db == 0) {
		if (L->a1 >= L->a2)
			line_sums_01(L->a1, L->b1, &s0, &s1);
		else
			line_sums_01(L->a2, L->b2, &s0, &s1);
	} else {
		double r = -(L->a1 - L->a2) / db;
		/* db > 0: line 2 before the split (js = 1 when r > 0);
		 * db < 0: line 1 before the crossover (jx = 1 when r > 0) */
		bool first = r > 0;
		double fa = db > 0 ? L->a2 : L->a1, fb = db > 0 ? L->b2 : L->b1;
		double sa = db > 0 ? L->a1 : L->a2, sb = db > 0 ? L->b1 : L->b2;
		if (first)
			line_sums_01(fa, fb, &p0, &p1);
		else
			p0 = p1 = 0;
		s0 += p0;
		s1 += p1;
		if (!first)
			line_sums_01(sa, sb, &p0, &p1);
		else
			p0 = p1 = 0;
		s0 += p0;
		s1 += p1;
	}
	line_sums_01(L->c, 0.0, &p0, &p1);
	*S0 = s0 + p0;
	*S1 = s1 + p1;
}

/* kvs_lin2_sums, and with want1 false S0 alone (by the same operations) */
static inline __attribute__((always_inline)) void
lin2_sums(const kvs_lin2 *L, uint64_t j0, uint64_t j1, double *S0, double *S1, bool want1)
{
	double s0 = 0, s1 = 0, p0, p1 = 0;
	if (j0 == 0 && j1 == 1) {
		double t1;
		lin2_sums_01(L, S0, want1 ? S1 : &t1);
		return;
	}
	if (j1 <= j0) {
		*S0 = 0;
		if (want1)
			*S1 = 0;
		return;
	}
	uint64_t js = lin2_split(L, j0, j1);
	double db = L->b1 - L->b2;
	/* with db > 0 line 2 leads before js, line 1 after; db < 0 the reverse */
	bool first_is_1 = db < 0 || (db == 0 && L->a1 >= L->a2);
	if (db == 0) {
		if (first_is_1)
			line_sums(L->a1, L->b1, j0, j1, &s0, &s1, want1);
		else
			line_sums(L->a2, L->b2, j0, j1, &s0, &s1, want1);
	} else {
		/* the leading line over [j0, jx), the other over [jx, j1) */
		double fa = L->a2, fb = L->b2, sa = L->a1, sb = L->b1;
		uint64_t jx = js;
		if (db < 0) {
			/* line 1 leads until the crossover, then line 2 */
			double r = -(L->a1 - L->a2) / db;
			jx = j1;
			if (!(r > (double)j0))
				jx = j0;
			else if (r < (double)j1)
				jx = (uint64_t)floor(r) + 1; /* line1 >= line2 for j <= r */
			fa = L->a1, fb = L->b1, sa = L->a2, sb = L->b2;
		}
		line_sums(fa, fb, j0, jx, &p0, &p1, want1);
		s0 += p0;
		s1 += p1;
		line_sums(sa, sb, jx, j1, &p0, &p1, want1);
		s0 += p0;
		s1 += p1;
	}
	line_sums(L->c, 0.0, j0, j1, &p0, &p1, want1);
	*S0 = s0 + p0;
	if (want1)
		*S1 = s1 + p1;
}

void kvs_lin2_sums(const kvs_lin2 *L, uint64_t j0, uint64_t j1,
		   double *S0, double *S1)
{
	lin2_sums(L, j0, j1, S0, S1, true);
}

double kvs_lin2_prefix(const kvs_lin2 *L, uint64_t k)
{
	double s0;
	lin2_sums(L, 0, k, &s0, NULL, false);
	return s0;
}

/* The real k at which the line leading at step 0 alone, summed from step
 * 0, reaches target: a k (A + B (k - 1) / 2) = target with A = a + c,
 * B = b, in the form without cancellation.  A first guess for
 * kvs_lin2_steps_to: exact up to rounding while that line leads. */
static double lin2_lead_steps(const kvs_lin2 *L, double target)
{
	bool one = L->a1 > L->a2 || (L->a1 == L->a2 && L->b1 >= L->b2);
	double A = (one ? L->a1 : L->a2) + L->c, B = one ? L->b1 : L->b2;
	double h = A - 0.5 * B;
	return 2.0 * target / (h + sqrt(h * h + 2.0 * B * target));
}

uint64_t kvs_lin2_steps_to(const kvs_lin2 *L, uint64_t kmax, double target)
{
	uint64_t lo = 1, hi = kmax;
	if (kmax <= 1)
		return kmax;
	/* The guess g (or g + 1) is the answer when the prefix sums
	 * themselves bracket target there: prefix(g - 1) < target <=
	 * prefix(g), g < kmax (so prefix(kmax) >= target too).  What the
	 * search below returns, in two sums instead of five or six. */
	double kg = lin2_lead_steps(L, target);
	if (kg > 0.5 && kg < (double)kmax - 1.0) {
		uint64_t g = (uint64_t)ceil(kg);
		if (kvs_lin2_prefix(L, g) >= target) {
			if (g == 1 || kvs_lin2_prefix(L, g - 1) < target)
				return g;
		} else if (kvs_lin2_prefix(L, g + 1) >= target) {
			return g + 1;
		}
	}
	if (kvs_lin2_prefix(L, kmax) < target)
		return kmax;
	/* Narrowed first: with step times between dt(0) and dt(k0 - 1) the
	 * answer lies between target / dt(k0 - 1) and k0 = target / dt(0),
	 * give or take a step of rounding.  The bounds are checked against
	 * the prefix sums themselves (prefix(lo - 1) < target <= prefix(hi)),
	 * so the search below returns what it returns over [1, kmax]. */
	double d0 = kvs_lin2_dt(L, 0);
	if (d0 > 0 && target / d0 < (double)kmax) {
		uint64_t k0 = (uint64_t)(target / d0) + 2;
		double d1 = kvs_lin2_dt(L, k0 > kmax ? kmax - 1 : k0 - 1);
		uint64_t k1 = d1 > 0 ? (uint64_t)(target / d1) : 1;
		uint64_t nlo = k1 > 2 ? k1 - 1 : 1, nhi = k0 < kmax ? k0 : kmax;
		if (nlo < nhi && (nlo == 1 || kvs_lin2_prefix(L, nlo - 1) < target) &&
		    kvs_lin2_prefix(L, nhi) >= target) {
			lo = nlo;
			hi = nhi;
		}
	}
	while (lo < hi) {           /* prefix(hi) >= target */
		uint64_t mid = lo + (hi - lo) / 2;
		if (kvs_lin2_prefix(L, mid) >= target)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

uint64_t kvs_lin2_step_at(const kvs_lin2 *L, uint64_t k, double offset)
{
	uint64_t lo = 0, hi = k - 1;    /* prefix(lo) <= offset */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (kvs_lin2_prefix(L, mid) <= offset)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* ---- the model ---------------------------------------------------------- */

kvs_status kvs_cost_init(kvs_cost *c, const kvs_cost_config *cfg,
			 const kvs_deploy *d, const kvs_sizing *sz)
{
	memset(c, 0, sizeof *c);
	c->cfg = *cfg;
	/* a zero here is a config built without kvs_cost_config_defaults: it
	 * would silently drop the KV read, so it is refused like any bad value */
	if (!(cfg->kv_read_factor > 0) || !isfinite(cfg->kv_read_factor))
		return kvs_fail(KVS_ERR_INVALID,
				"KV-read factor %g: must be a finite number > 0 (1 = an "
				"ideal contiguous read; set by kvs_cost_config_defaults)",
				cfg->kv_read_factor);
	if (cfg->kind == KVS_COST_LINEAR) {
		/* each coefficient at most KVS_COST_MAX_COEF_S, so that a step,
		 * the simulated clock and the time-weighted memory integrals stay
		 * finite (1e300 would make them inf) */
		const double co[4] = { cfg->linear_base_s, cfg->linear_per_token_s,
				       cfg->linear_per_context_s, cfg->linear_per_seq_s };
		for (int i = 0; i < 4; i++)
			if (!(co[i] >= 0 && co[i] <= KVS_COST_MAX_COEF_S))
				return kvs_fail(KVS_ERR_INVALID,
						"linear step-time model: coefficient %d is "
						"%g s; each must be in [0, %g] s", i + 1, co[i],
						KVS_COST_MAX_COEF_S);
		if (cfg->linear_base_s + cfg->linear_per_token_s +
		    cfg->linear_per_seq_s <= 0)
			return kvs_fail(KVS_ERR_INVALID,
					"linear step-time model: a step must take some time");
		return KVS_OK;
	}
	if (cfg->kind != KVS_COST_ROOFLINE)
		return kvs_fail(KVS_ERR_INVALID, "unknown step-time model %d", (int)cfg->kind);
	if (!(cfg->flops_efficiency > 0 && cfg->flops_efficiency <= 1))
		return kvs_fail(KVS_ERR_INVALID, "flops efficiency %g: must be in (0, 1]",
				cfg->flops_efficiency);
	if (!(cfg->bandwidth_efficiency > 0 && cfg->bandwidth_efficiency <= 1))
		return kvs_fail(KVS_ERR_INVALID, "bandwidth efficiency %g: must be in (0, 1]",
				cfg->bandwidth_efficiency);
	if (!(cfg->step_overhead_s >= 0) || !(cfg->allreduce_latency_s >= 0))
		return kvs_fail(KVS_ERR_INVALID, "step overhead and all-reduce latency must be >= 0");
	const kvs_model *m = &d->model;
	const kvs_gpu *g = &d->gpu;
	if (!(g->fp16_flops > 0) || !(g->hbm_bytes_per_s > 0))
		return kvs_fail(KVS_ERR_INVALID,
				"GPU %s: peak FLOP/s and HBM bandwidth are needed for the "
				"roofline step-time model", g->name);
	uint32_t tp = d->tp ? d->tp : 1, pp = d->pp ? d->pp : 1;
	double active = (double)(m->num_active_params ? m->num_active_params
						      : m->num_params);
	if (!(active > 0))
		return kvs_fail(KVS_ERR_INVALID,
				"model %s: parameter count unknown (give --params)", m->name);
	/* matmuls run at the weights' rate (FP8/INT8 tensor cores for 8-bit
	 * weights); attention at the FP16 rate, expressed below in FLOPs at
	 * the matmul rate so one division serves both (same step-time shape) */
	double mm_rate = kvs_gpu_matmul_rate(g, d->weight_dtype);
	c->flop_rate = mm_rate * cfg->flops_efficiency;
	c->byte_rate = g->hbm_bytes_per_s * cfg->bandwidth_efficiency;
	/* one pass through the stages reads every stage's weights and KV */
	c->weight_bytes = (double)sz->weight_bytes * pp;
	c->kv_bytes_per_token = (double)sz->kv_bytes_per_token * pp;
	c->linear_flops_per_token = 2.0 * active / tp;
	double heads = (double)(m->num_heads ? m->num_heads : m->num_kv_heads);
	/* windowed layers attend over their window whether the engine holds
	 * their KV in full or not (the kernel masks the rest): their share of
	 * the KV bytes and of the attention is charged apart */
	uint32_t wl = kvs_model_window_layers(m);
	c->attn_flops_per_pair = 4.0 * heads / tp * m->head_dim * (m->num_layers - wl) *
				 (mm_rate / g->fp16_flops);
	if (wl) {
		c->attn_win_flops_per_pair = 4.0 * heads / tp * m->head_dim * wl *
					     (mm_rate / g->fp16_flops);
		c->kv_win_bytes_per_token = c->kv_bytes_per_token * wl / m->num_layers;
		c->kv_bytes_per_token -= c->kv_win_bytes_per_token;
		c->win_layers = wl;
		c->window = m->sliding_window;
		c->window_chunked = m->window_chunked;
	}
	if (tp > 1) {
		double link = g->interconnect_bytes_per_s > 0 ? g->interconnect_bytes_per_s
							      : g->pcie_bytes_per_s;
		if (!(link > 0))
			return kvs_fail(KVS_ERR_INVALID,
					"GPU %s: interconnect bandwidth needed for tp %u",
					g->name, tp);
		/* two all-reduces per layer (attention and MLP outputs) of
		 * hidden x 2 bytes per token; a ring moves 2 (tp-1)/tp of it */
		double per_token_bytes = 2.0 * m->hidden_size * 2.0 * (tp - 1) / tp;
		c->allreduce_per_token_s = 2.0 * m->num_layers * per_token_bytes / link;
		c->allreduce_fixed_s = 2.0 * m->num_layers * cfg->allreduce_latency_s;
	}
	if (!(cfg->step_overhead_per_seq_s >= 0) || !(cfg->step_overhead_per_token_s >= 0))
		return kvs_fail(KVS_ERR_INVALID, "per-sequence and per-token step overheads "
				"must be >= 0");
	c->layers = m->num_layers;
	c->in_flight = d->pp_balanced ? pp : 1;
	c->allreduce_bytes_per_token = 2.0 * m->hidden_size;
	if (cfg->profile_points) {
		if (cfg->profile_tp != tp)
			return kvs_fail(KVS_ERR_INVALID, "the step-time profile was read for tp %u, "
					"the deployment has tp %u", cfg->profile_tp, tp);
		if (cfg->profile_n_embd != m->hidden_size ||
		    cfg->profile_n_head != m->num_heads ||
		    cfg->profile_n_kv_head != m->num_kv_heads)
			return kvs_fail(KVS_ERR_INVALID,
					"the step-time profile is for n_embd %u, %u heads, %u kv "
					"heads; model %s has hidden %u, %u heads, %u kv heads",
					cfg->profile_n_embd, cfg->profile_n_head,
					cfg->profile_n_kv_head, m->name, m->hidden_size,
					m->num_heads, m->num_kv_heads);
		const struct kvs_attn_table *a = cfg->attn;
		if (a && (a->tp != tp || a->n_embd != m->hidden_size ||
			  a->n_q_head != m->num_heads || a->n_kv_head != m->num_kv_heads))
			return kvs_fail(KVS_ERR_INVALID,
					"%s is for tp %u, n_embd %u, %u q heads, %u kv heads; "
					"model %s at tp %u has hidden %u, %u heads, %u kv heads",
					a->path, a->tp, a->n_embd, a->n_q_head, a->n_kv_head,
					m->name, tp, m->hidden_size, m->num_heads, m->num_kv_heads);
	}
	return KVS_OK;
}

/* The segment of sorted points holding x, for xs[0] <= x < xs[n - 1]: the
 * lo with xs[lo] <= x < xs[lo + 1]. */
static inline uint32_t segment_of(const double *xs, uint32_t n, double x)
{
	uint32_t lo = 0, hi = n - 1;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (xs[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Piecewise-linear through sorted points; flat below the first, the last
 * segment's slope above the last (never below the last value). */
double kvs_interp(const double *xs, const double *ys, uint32_t n, double x)
{
	if (n == 1 || x <= xs[0])
		return ys[0];
	uint32_t hi = n - 1;
	if (x >= xs[hi]) {
		double slope = (ys[hi] - ys[hi - 1]) / (xs[hi] - xs[hi - 1]);
		double y = ys[hi] + slope * (x - xs[hi]);
		return y > ys[hi] ? y : ys[hi];
	}
	uint32_t lo = segment_of(xs, n, x);
	hi = lo + 1;
	return ys[lo] + (ys[hi] - ys[lo]) * (x - xs[lo]) / (xs[hi] - xs[lo]);
}

/* Profile terms of a step (or micro-batch) of t tokens: the
 * non-attention operators of every layer and the embedding, and the two
 * all-reduces per layer. */
static double profile_linear(const kvs_cost *c, double t)
{
	const kvs_cost_config *k = &c->cfg;
	if (!(t > 0))
		return 0;
	return c->layers * kvs_interp(k->profile_tokens, k->profile_layer_s, k->profile_points, t) +
	       kvs_interp(k->profile_tokens, k->profile_emb_s, k->profile_points, t);
}

static inline double comm_time(const kvs_cost *c, double t)
{
	const kvs_cost_config *k = &c->cfg;
	if (!(t > 0))
		return 0;
	if (k->profile_points && k->allreduce_points)
		return 2.0 * c->layers * kvs_interp(k->allreduce_bytes, k->allreduce_s,
						k->allreduce_points,
						c->allreduce_bytes_per_token * t);
	return c->allreduce_fixed_s > 0 ? c->allreduce_fixed_s +
					  c->allreduce_per_token_s * t : 0;
}

static double overhead(const kvs_cost_config *k, uint64_t T, uint64_t nseq)
{
	return k->step_overhead_s + k->step_overhead_per_seq_s * (double)nseq +
	       k->step_overhead_per_token_s * (double)T;
}

/* ---- measured attention (cfg.attn) ----------------------------------------
 * Per layer and rank.  Along the batch (or chunk) axis the two profiled
 * neighbours are blended linearly (flat below the first; the last two
 * extrapolated above the last); along the KV axis each is kvs_interp.  At a
 * fixed batch size the decode time is therefore piecewise linear in the
 * per-request KV length, with knots at the grid's KV lengths: a decode span
 * is timed in closed form on one segment (kvs_cost_span_steps). */
static void bracket(const double *xs, uint32_t n, double x, uint32_t *i0, double *w)
{
	if (n == 1 || x <= xs[0]) {
		*i0 = 0;
		*w = 0;
		return;
	}
	uint32_t lo = x >= xs[n - 1] ? n - 2 : segment_of(xs, n, x);
	*i0 = lo;
	*w = (x - xs[lo]) / (xs[lo + 1] - xs[lo]);
}

static double attn_decode_at(const struct kvs_attn_table *a, double n, double kv)
{
	uint32_t i;
	double w;
	bracket(a->batch, a->nb, n, &i, &w);
	double t0 = kvs_interp(a->kv, a->dec_s + (size_t)i * a->nkv, a->nkv, kv);
	if (w == 0)
		return t0;
	double t1 = kvs_interp(a->kv, a->dec_s + (size_t)(i + 1) * a->nkv, a->nkv, kv);
	double t = t0 + w * (t1 - t0);
	return t > 0 ? t : 0;
}

static double attn_prefill_at(const struct kvs_attn_table *a, double chunk, double kv)
{
	uint32_t i;
	double w;
	bracket(a->chunk, a->nchunk, chunk, &i, &w);
	uint32_t o = a->pre_off[i], m = a->pre_off[i + 1] - o;
	double t0 = kvs_interp(a->pre_kv + o, a->pre_s + o, m, kv);
	if (w == 0)
		return t0;
	o = a->pre_off[i + 1];
	m = a->pre_off[i + 2] - o;
	double t1 = kvs_interp(a->pre_kv + o, a->pre_s + o, m, kv);
	double t = t0 + w * (t1 - t0);
	return t > 0 ? t : 0;
}

double kvs_cost_prefill_attn(const kvs_cost *c, double chunk, double kv)
{
	const struct kvs_attn_table *a = c->cfg.attn;
	if (!a)
		return 0;
	if (c->win_layers > 0) {
		double W = (double)c->window, win = 0;
		if (c->window_chunked) {
			/* in pieces at the chunk boundaries: the first after the
			 * keys of the chunk it starts in, the others from a
			 * boundary, with none before them */
			double off = kv - W * floor(kv / W);
			double first = W - off < chunk ? W - off : chunk;
			double rest = chunk - first, whole = floor(rest / W);
			win = attn_prefill_at(a, first, off);
			if (whole > 0)
				win += whole * attn_prefill_at(a, W, 0);
			if (rest - whole * W > 0)
				win += attn_prefill_at(a, rest - whole * W, 0);
		} else {
			/* at most the window before the chunk */
			win = attn_prefill_at(a, chunk, kv < W ? kv : W);
		}
		return (c->layers - c->win_layers) * attn_prefill_at(a, chunk, kv) +
		       c->win_layers * win;
	}
	return c->layers * attn_prefill_at(a, chunk, kv);
}

/* Keys read by the queries at positions 0 .. x - 1 under chunked attention
 * of chunks of C: (q mod C) + 1 each, whole chunks then the part one. */
static uint64_t chunk_keys_below(uint64_t x, uint64_t C)
{
	uint64_t full = x / C, r = x % C;
	return full * (C * (C + 1) / 2) + r * (r + 1) / 2;
}

void kvs_cost_chunk_window(const kvs_cost *c, double n, double kv, double *ctx,
			   double *pairs)
{
	double W = (double)c->window;
	if (c->window_chunked) {
		/* query j (0-based position kv + j) attends ((kv + j) mod W) + 1
		 * keys; the keys touched run from the start of the chunk the
		 * first query is in to the last query */
		uint64_t a = (uint64_t)kv, b = a + (uint64_t)n, C = c->window;
		*pairs = (double)(chunk_keys_below(b, C) - chunk_keys_below(a, C));
		*ctx = (double)(a % C) + n;
		return;
	}
	/* query j (1-based position kv + j) attends min(kv + j, W) keys:
	 * summed over j = 1..n in the window's three cases */
	double a = kv + 1, b = kv + n;
	double p;
	if (b <= W)
		p = (a + b) * n / 2.0;
	else if (a >= W)
		p = W * n;
	else
		p = (a + W) * (W - a + 1) / 2.0 + W * (b - W);
	*pairs = p;
	/* the keys touched: the window before the first query, and the chunk */
	double touched = W + n - 1;
	*ctx = kv + n < touched ? kv + n : touched;
}

uint64_t kvs_cost_decode_window(const kvs_cost *c, uint64_t prompt, uint64_t fin)
{
	uint64_t C = c->window;
	if (!c->window_chunked)
		return fin < C ? fin : C;
	if (fin <= prompt + 1)
		return prompt ? (prompt - 1) % C + 1 : 1;
	uint64_t n = fin - 1 - prompt;   /* queries at prompt .. fin - 2 */
	uint64_t keys = chunk_keys_below(fin - 1, C) - chunk_keys_below(prompt, C);
	return (keys + n / 2) / n;
}

/* Decode attention of dn requests (a micro-batch's share: not always
 * whole) at per-request KV length kv0, and its slope per step (one more
 * token each) on kv0's segment. */
static void attn_decode_line(const kvs_cost *c, double dn, double kv0,
			     double *v0, double *slope)
{
	const struct kvs_attn_table *a = c->cfg.attn;
	const double *kv = a->kv;
	uint32_t m = a->nkv;
	double lo, hi;
	if (m == 1 || kv0 < kv[0]) {
		/* flat below the first knot (everywhere with one) */
		*v0 = attn_decode_at(a, dn, kv0);
		*slope = 0;
		return;
	}
	if (kv0 >= kv[m - 1]) {
		lo = kv0;        /* linear past the last knot */
		hi = kv0 + 1;
	} else {
		uint32_t j = segment_of(kv, m, kv0);
		lo = kv[j];
		hi = kv[j + 1];
	}
	double f_lo = attn_decode_at(a, dn, lo), f_hi = attn_decode_at(a, dn, hi);
	*slope = (f_hi - f_lo) / (hi - lo);
	*v0 = f_lo + *slope * (kv0 - lo);
}

uint64_t kvs_cost_span_steps(const kvs_cost *c, uint64_t n, double ctx0, uint64_t kmax)
{
	const struct kvs_attn_table *a = c->cfg.attn;
	if (!a || !n || kmax <= 1)
		return kmax;
	double kv0 = ctx0 / (double)n;
	/* the first knot above kv0; step j reads kv0 + j */
	const double *kv = a->kv;
	uint32_t m = a->nkv;
	if (kv0 >= kv[m - 1])
		return kmax;
	uint32_t hi = kv0 < kv[0] ? 0 : segment_of(kv, m, kv0) + 1;
	double room = floor(kv[hi] - kv0) + 1;
	return room < (double)kmax ? (uint64_t)room : kmax;
}

double kvs_cost_step(const kvs_cost *c, uint64_t T, uint64_t nseq,
		     double ctx, double pairs, uint64_t ndec, double ctx_dec,
		     const kvs_win_read *w, double prefill_attn_s)
{
	const kvs_cost_config *k = &c->cfg;
	if (k->kind == KVS_COST_LINEAR)
		return k->linear_base_s + k->linear_per_token_s * (double)T +
		       k->kv_read_factor * k->linear_per_context_s * ctx +
		       k->linear_per_seq_s * (double)nseq;
	bool prof = k->profile_points > 0;
	/* one micro-batch's share of the step through every stage (the
	 * whole step at pp 1: each division by 1 is exact) */
	double mb = kvs_cost_micro_batches(c, nseq);
	double t = (double)T / mb;
	if (prof && k->attn) {
		/* measured attention: decode (the KV-read factor scales it) and
		 * the prefill chunks' own times; the KV write is not profiled */
		double dec = 0, dn = (double)ndec / mb;
		if (ndec && c->win_layers > 0)
			dec = (c->layers - c->win_layers) * k->kv_read_factor *
			      attn_decode_at(k->attn, dn, ctx_dec / (double)ndec) +
			      c->win_layers * k->kv_read_factor *
			      attn_decode_at(k->attn, dn, w->dec / (double)ndec);
		else if (ndec)
			dec = c->layers * k->kv_read_factor *
			      attn_decode_at(k->attn, dn, ctx_dec / (double)ndec);
		return dec + prefill_attn_s / mb + profile_linear(c, t) + comm_time(c, t) +
		       overhead(k, T, nseq);
	}
	/* measured profile: the linear layers are in profile_linear, the
	 * roofline keeps attention and the KV read and write */
	double flops = (prof ? 0 : c->linear_flops_per_token * t) +
		       c->attn_flops_per_pair * (pairs / mb);
	/* KV read (scaled by the attention kernel's relative cost) and KV
	 * written for the new tokens; the weights, once per micro-batch */
	double bytes = (prof ? 0 : c->weight_bytes) +
		       c->kv_bytes_per_token * (k->kv_read_factor * (ctx / mb) + t);
	if (c->kv_win_bytes_per_token > 0) {
		/* the windowed layers, over their windows */
		flops += c->attn_win_flops_per_pair * (w->pairs / mb);
		bytes += c->kv_win_bytes_per_token * (k->kv_read_factor * (w->ctx / mb) + t);
	}
	double comp = flops / c->flop_rate;
	double mem = bytes / c->byte_rate;
	return (comp > mem ? comp : mem) + (prof ? profile_linear(c, t) : 0) +
	       comm_time(c, t) + overhead(k, T, nseq);
}

void kvs_cost_decode_lines(const kvs_cost *c, uint64_t n, double ctx0,
			   double wctx, kvs_lin2 *out)
{
	const kvs_cost_config *k = &c->cfg;
	double dn = (double)n;
	double f = k->kv_read_factor;
	if (k->kind == KVS_COST_LINEAR) {
		out->a1 = out->a2 = k->linear_base_s + k->linear_per_token_s * dn +
				    f * k->linear_per_context_s * ctx0 +
				    k->linear_per_seq_s * dn;
		out->b1 = out->b2 = f * k->linear_per_context_s * dn;
		out->c = 0;
		return;
	}
	/* a decode token attends to its whole context: pairs == ctx; the same
	 * terms as kvs_cost_step with T = nseq = n, the profile's constant,
	 * for one micro-batch's share (n, ctx0 and wctx over mb; the
	 * per-request lengths unchanged) */
	bool prof = k->profile_points > 0;
	double mb = kvs_cost_micro_batches(c, n), nm = dn / mb;
	out->c = (prof ? profile_linear(c, nm) : 0) + comm_time(c, nm) + overhead(k, n, n);
	if (prof && k->attn) {
		double v0 = 0, sl = 0;
		if (n)
			attn_decode_line(c, nm, ctx0 / dn, &v0, &sl);
		if (n && c->win_layers > 0) {
			/* the windowed layers' read is constant over the span */
			double lf = c->layers - c->win_layers;
			out->a1 = out->a2 = lf * f * v0 +
					    c->win_layers * f *
					    attn_decode_at(c->cfg.attn, nm, wctx / dn);
			out->b1 = out->b2 = lf * f * sl;
			return;
		}
		out->a1 = out->a2 = c->layers * f * v0;
		out->b1 = out->b2 = c->layers * f * sl;
		return;
	}
	ctx0 /= mb;
	wctx /= mb;
	dn = nm;
	double flops = (prof ? 0 : c->linear_flops_per_token * dn) +
		       c->attn_flops_per_pair * ctx0;
	double bytes = (prof ? 0 : c->weight_bytes) + c->kv_bytes_per_token * (f * ctx0 + dn);
	if (c->kv_win_bytes_per_token > 0) {
		flops += c->attn_win_flops_per_pair * wctx;
		bytes += c->kv_win_bytes_per_token * (f * wctx + dn);
	}
	out->a1 = flops / c->flop_rate;
	out->b1 = c->attn_flops_per_pair * dn / c->flop_rate;
	out->a2 = bytes / c->byte_rate;
	out->b2 = f * c->kv_bytes_per_token * dn / c->byte_rate;
}

/* ---- measured step-time table ------------------------------------------ */

enum { COL_TOKENS, COL_CONTEXT, COL_SEQS, COL_TIME, NCOLS };
static const char *const col_names[NCOLS] = {
	"num_tokens", "context_tokens", "num_seqs", "step_time_s"
};

typedef struct table_parse {
	const char *path;
	uint64_t line;
	int field;              /* fields of the current line so far */
	bool header;
	int col_of_field[32];   /* field index -> column id or -1 */
	int field_of_col[NCOLS];/* column id -> field index or -1 */
	int nfields;
	double row[NCOLS];
	kvs_status st;
	/* normal equations over x = (1, tokens, context, seqs) */
	double xtx[4][4], xty[4], yy, ysum;
	uint64_t rows;
} table_parse;

/* The longest value a cell may hold: a number has no need of more, and a
 * longer one is refused rather than cut. */
#define TABLE_VALUE_MAX 63

static void table_field(void *s, size_t len, void *data)
{
	table_parse *p = data;
	int f = p->field++;
	if (p->st != KVS_OK)
		return;
	if (p->header) {
		if (f >= 32) {
			p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: too many columns",
					 p->path, (unsigned long long)p->line);
			return;
		}
		p->col_of_field[f] = -1;
		for (int c = 0; c < NCOLS; c++) {
			if (len != strlen(col_names[c]) || memcmp(s, col_names[c], len) != 0)
				continue;
			if (p->field_of_col[c] >= 0) {
				p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: header: column %d "
						 "repeats '%s' (column %d)", p->path,
						 (unsigned long long)p->line, f + 1,
						 col_names[c], p->field_of_col[c] + 1);
				return;
			}
			p->col_of_field[f] = c;
			p->field_of_col[c] = f;
		}
		p->nfields = f + 1;
		return;
	}
	if (f >= p->nfields) {
		p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: column %d: more fields than the header",
				 p->path, (unsigned long long)p->line, f + 1);
		return;
	}
	int c = p->col_of_field[f];
	if (c < 0)
		return;
	if (len > TABLE_VALUE_MAX) {
		p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: column %d (%s): value longer than "
				 "%d characters", p->path, (unsigned long long)p->line, f + 1,
				 col_names[c], TABLE_VALUE_MAX);
		return;
	}
	char buf[TABLE_VALUE_MAX + 1];
	if (len)
		memcpy(buf, s, len);
	buf[len] = '\0';
	double v;
	if (!kvs_parse_decimal(buf, &v) || v < 0) {
		p->st = kvs_fail(KVS_ERR_PARSE,
				 "%s:%llu: column %d (%s): expected a non-negative number, got '%s'",
				 p->path, (unsigned long long)p->line, f + 1, col_names[c], buf);
		return;
	}
	p->row[c] = v;
}

static void table_row(int term, void *data)
{
	(void)term;
	table_parse *p = data;
	if (p->st != KVS_OK)
		return;
	if (p->header) {
		p->header = false;
		for (int c = 0; c < NCOLS; c++) {
			if (p->field_of_col[c] < 0 && c != COL_SEQS) {
				p->st = kvs_fail(KVS_ERR_PARSE,
						 "%s:%llu: header: missing column '%s' (need "
						 "num_tokens,context_tokens,step_time_s[,num_seqs])",
						 p->path, (unsigned long long)p->line, col_names[c]);
				return;
			}
		}
		return;
	}
	if (p->field < p->nfields) {
		int c = p->col_of_field[p->field];
		p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: column %d%s%s%s: missing (%d fields, "
				 "the header has %d)", p->path, (unsigned long long)p->line,
				 p->field + 1, c >= 0 ? " (" : "", c >= 0 ? col_names[c] : "",
				 c >= 0 ? ")" : "", p->field, p->nfields);
		return;
	}
	if (!(p->row[COL_TIME] > 0)) {
		p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: column %d (step_time_s): must be > 0",
				 p->path, (unsigned long long)p->line, p->field_of_col[COL_TIME] + 1);
		return;
	}
	double x[4] = { 1.0, p->row[COL_TOKENS], p->row[COL_CONTEXT], p->row[COL_SEQS] };
	double y = p->row[COL_TIME];
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 4; j++)
			p->xtx[i][j] += x[i] * x[j];
		p->xty[i] += x[i] * y;
	}
	p->yy += y * y;
	p->ysum += y;
	p->rows++;
}

/* Solve the normal equations restricted to the columns in `use`; false when
 * singular. */
static bool solve(const table_parse *p, const bool use[4], double beta[4])
{
	double A[4][5];
	int idx[4], n = 0;
	for (int i = 0; i < 4; i++)
		if (use[i])
			idx[n++] = i;
	for (int r = 0; r < n; r++) {
		for (int c = 0; c < n; c++)
			A[r][c] = p->xtx[idx[r]][idx[c]];
		A[r][n] = p->xty[idx[r]];
	}
	for (int c = 0; c < n; c++) {
		int piv = c;
		for (int r = c + 1; r < n; r++)
			if (fabs(A[r][c]) > fabs(A[piv][c]))
				piv = r;
		double scale = fabs(A[c][c]) + fabs(A[piv][c]) + 1e-300;
		if (fabs(A[piv][c]) <= 1e-12 * scale * (double)p->rows + 1e-300)
			return false;
		if (piv != c)
			for (int k = 0; k <= n; k++) {
				double t = A[c][k];
				A[c][k] = A[piv][k];
				A[piv][k] = t;
			}
		for (int r = 0; r < n; r++) {
			if (r == c)
				continue;
			double f = A[r][c] / A[c][c];
			for (int k = c; k <= n; k++)
				A[r][k] -= f * A[c][k];
		}
	}
	for (int i = 0; i < 4; i++)
		beta[i] = 0;
	for (int r = 0; r < n; r++)
		beta[idx[r]] = A[r][n] / A[r][r];
	return true;
}

kvs_status kvs_cost_fit_table(const char *path, kvs_cost_config *c)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return kvs_fail(KVS_ERR_IO, "%s: cannot open step-time table: %s", path,
				strerror(errno));
	struct stat sb;
	if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
		fclose(f);
		return kvs_fail(KVS_ERR_IO, "%s: cannot read step-time table: is a "
				"directory (expected a CSV file)", path);
	}
	struct csv_parser csv;
	if (csv_init(&csv, CSV_APPEND_NULL) != 0) {
		fclose(f);
		return kvs_fail(KVS_ERR_NOMEM, "%s: csv parser", path);
	}
	table_parse *p = kvs_calloc(1, sizeof *p);
	if (!p) {
		csv_free(&csv);
		fclose(f);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	p->path = path;
	p->header = true;
	p->st = KVS_OK;
	for (int k = 0; k < NCOLS; k++)
		p->field_of_col[k] = -1;
	char buf[4096];
	while (p->st == KVS_OK && fgets(buf, sizeof buf, f)) {
		p->line++;
		char *line = buf;
		size_t n = strlen(line);
		if (n == sizeof buf - 1 && line[n - 1] != '\n') {
			p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: line too long", path,
					 (unsigned long long)p->line);
			break;
		}
		/* a UTF-8 byte order mark (spreadsheet exports) is no part of
		 * the first column's name */
		if (p->line == 1 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
			line += 3;
			n -= 3;
		}
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		p->field = 0;
		memset(p->row, 0, sizeof p->row);
		if (csv_parse(&csv, line, n, table_field, table_row, p) != n) {
			p->st = kvs_fail(KVS_ERR_PARSE, "%s:%llu: %s", path,
					 (unsigned long long)p->line,
					 csv_strerror(csv_error(&csv)));
			break;
		}
		csv_fini(&csv, table_field, table_row, p);
	}
	if (p->st == KVS_OK && ferror(f))
		p->st = kvs_fail(KVS_ERR_IO, "%s: read error: %s", path, strerror(errno));
	csv_free(&csv);
	fclose(f);
	kvs_status st = p->st;
	if (st == KVS_OK && p->rows < 3)
		st = kvs_fail(KVS_ERR_PARSE, "%s: %llu rows: need at least 3 measured steps",
			      path, (unsigned long long)p->rows);
	double beta[4] = { 0 };
	if (st == KVS_OK) {
		bool use[4] = { true, true, true, p->xtx[3][3] > 0 };
		/* non-negative least squares by dropping negative terms: a few
		 * rounds suffice for four unknowns */
		bool ok = false;
		for (int round = 0; round < 4; round++) {
			if (!solve(p, use, beta)) {
				/* tokens and sequences collinear (decode-only rows):
				 * fold the per-sequence term into per-token */
				if (use[3]) {
					use[3] = false;
					continue;
				}
				break;
			}
			bool neg = false;
			for (int i = 1; i < 4; i++)
				if (use[i] && beta[i] < 0) {
					use[i] = false;
					neg = true;
				}
			if (!neg) {
				ok = true;
				break;
			}
		}
		if (!ok || !(beta[0] > 0))
			st = kvs_fail(KVS_ERR_PARSE,
				      "%s: cannot fit step time = base + a*num_tokens + "
				      "b*context_tokens (+ c*num_seqs) with non-negative "
				      "terms: vary num_tokens and context_tokens across rows",
				      path);
	}
	if (st == KVS_OK) {
		/* R^2 = 1 - SSE / SST, from the normal equations */
		double n = (double)p->rows, mean = p->ysum / n;
		double sse = p->yy;
		for (int i = 0; i < 4; i++) {
			sse -= 2 * beta[i] * p->xty[i];
			for (int j = 0; j < 4; j++)
				sse += beta[i] * beta[j] * p->xtx[i][j];
		}
		double sst = p->yy - n * mean * mean;
		c->kind = KVS_COST_LINEAR;
		c->linear_base_s = beta[0];
		c->linear_per_token_s = beta[1];
		c->linear_per_context_s = beta[2];
		c->linear_per_seq_s = beta[3];
		c->fit_rows = p->rows;
		c->fit_r2 = sst > 0 ? 1.0 - (sse > 0 ? sse : 0) / sst : 1.0;
		snprintf(c->table_path, sizeof c->table_path, "%s", path);
	}
	kvs_free(p);
	return st;
}
