/*
 * disagg.c - prefill/decode disaggregation: a fleet of prefill replicas
 * and decode replicas joined by KV links, in one global event loop.
 *
 * A request's life:
 *
 *   arrival --router--> prefill replica p: queued, prefilled (prefill-only
 *   engine), its KV held; SENT
 *     --router (decode replicas)--> decode replica d: queued; admitted when
 *     its blocks fit (the prompt's blocks allocated, less d's own prefix
 *     hit); ALLOCATED
 *       --p's egress link: latency, then bytes shared fairly--> KV arrived:
 *       d computes the prompt's last token in its next step (its first
 *       decode step, which emits the first token) and decodes; p frees the
 *       KV at its next step boundary.
 *
 * So TTFT = (arrival -> prefill done) + (decode-side wait for blocks) +
 * link latency + bytes / shared bandwidth + (wait for d's step boundary)
 * + d's first step.
 *
 * Order.  Replicas interact (a handoff feeds a decode replica, an
 * allocation starts a transfer, a transfer's end frees KV on one replica
 * and starts a request on another), so events are taken in global time
 * order: the next of {refresh instant, link event, trace arrival, a
 * replica's next event}, ties in that order (replicas by index).  A
 * replica processes its events before the next event of anything else
 * (kvs_sim_advance to that time, which also ends any span of decode steps
 * there); on_kv lowers that bound to the earliest time its consequence can
 * come back (a handoff: now; an allocation: now + latency + bytes /
 * bandwidth; a decode replica's refusal that wakes an idle prefill replica
 * with requests waiting: just after now, on_rejected).  An allocation may
 * still start a second transfer on the same link within that bound, after
 * the first one's latency: the link takes that latency end first
 * (kv_link_start).  Cost: O(events x (replicas + links)) for the minimum
 * scans, plus O(log transfers) per link event.
 *
 * Ownership: a transfer record (dg_xfer) lives from SENT to the KV's
 * arrival (or the decode side's rejection); its address is the tag the
 * decode engine carries (kvs_sim_kv_handoff.origin).
 */
#include "fleet/fleet_internal.h"
#include "fleet/link.h"
#include "common/num.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct dg_xfer {
	uint32_t src, dst;         /* prefill replica, decode replica */
	uint64_t src_h, dst_h;     /* the request's handle on each */
	struct dg_xfer *prev, *next;   /* every live record (freed at the end) */
} dg_xfer;

typedef struct dg_rctx {
	fleet_disagg *d;
	uint32_t i;                /* replica */
} dg_rctx;

/* One side's routing view: the replicas of one role. */
typedef struct dg_side {
	uint32_t n;
	uint32_t *rep;             /* [n] replica ids */
	uint64_t *out;             /* [n] router's view of outstanding */
	double *kv;                /* [n] router's view of KV use */
	uint64_t *wait, *run;      /* [n] router's view of the queues */
	uint32_t *pfx;             /* [n] prefix matches of this request (UINT32_MAX: unread) */
	kvs_router *router;
} dg_side;

struct fleet_disagg {
	fleet_run *f;
	dg_side pre, dec;
	uint32_t *link_of;         /* [n] prefill replica -> its link */
	kv_link *links;            /* [pre.n] */
	double *bpt;               /* [n] KV bytes per token, whole model */
	dg_rctx *rctx;             /* [n] */
	kvs_status err;            /* first failure inside a callback */
	const kvs_request *req;    /* being routed */
	const uint32_t *stale;     /* its prefixes at the last refresh (prefill side) */
	dg_side *side;             /* being routed */
	dg_xfer *live;             /* transfer records alive */
};

static void xfer_free(fleet_disagg *d, dg_xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		d->live = x->next;
	if (x->next)
		x->next->prev = x->prev;
	kvs_free(x);
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

static kvs_status side_init(dg_side *s, uint32_t n)
{
	s->n = 0;
	s->rep = kvs_calloc(n, sizeof *s->rep);
	s->out = kvs_calloc(n, sizeof *s->out);
	s->kv = kvs_calloc(n, sizeof *s->kv);
	s->wait = kvs_calloc(n, sizeof *s->wait);
	s->run = kvs_calloc(n, sizeof *s->run);
	s->pfx = kvs_calloc(n, sizeof *s->pfx);
	if (!s->rep || !s->out || !s->kv || !s->wait || !s->run || !s->pfx)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (fleet)");
	return KVS_OK;
}

static void side_free(dg_side *s)
{
	kvs_free(s->rep);
	kvs_free(s->out);
	kvs_free(s->kv);
	kvs_free(s->wait);
	kvs_free(s->run);
	kvs_free(s->pfx);
	kvs_router_destroy(s->router);
}

/* KV bytes of one token over the whole model (every tp x pp rank): the
 * sizing library's figure, or the engine's per-rank override x ranks. */
static kvs_status bytes_per_token(const kvs_sim_config *c, double *out)
{
	uint32_t ranks = (c->deploy.tp ? c->deploy.tp : 1) * (c->deploy.pp ? c->deploy.pp : 1);
	if (c->kv_bytes_per_token) {
		*out = (double)c->kv_bytes_per_token * ranks;
		return KVS_OK;
	}
	kvs_sizing sz;
	kvs_status st = kvs_size_compute(&c->deploy, &sz);
	if (st != KVS_OK)
		return st;
	*out = (double)sz.kv_bytes_per_token_total;
	return KVS_OK;
}

kvs_status fleet_disagg_create(fleet_run *f, fleet_disagg **out)
{
	uint32_t n = f->n;
	fleet_disagg *d = kvs_calloc(1, sizeof *d);
	if (!d)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (fleet)");
	d->f = f;
	kvs_status st;
	if ((st = side_init(&d->pre, n)) != KVS_OK || (st = side_init(&d->dec, n)) != KVS_OK)
		goto fail;
	d->link_of = kvs_calloc(n, sizeof *d->link_of);
	d->bpt = kvs_calloc(n, sizeof *d->bpt);
	d->rctx = kvs_calloc(n, sizeof *d->rctx);
	d->links = kvs_calloc(n, sizeof *d->links);
	if (!d->link_of || !d->bpt || !d->rctx || !d->links) {
		st = kvs_fail(KVS_ERR_NOMEM, "out of memory (fleet)");
		goto fail;
	}
	const kvs_fleet_link *L = &f->cfg->kv_link;
	for (uint32_t i = 0; i < n; i++) {
		d->rctx[i] = (dg_rctx){ d, i };
		if ((st = bytes_per_token(&f->rcfg[i], &d->bpt[i])) != KVS_OK)
			goto fail;
		if (f->role[i] == KVS_FLEET_ROLE_PREFILL) {
			d->link_of[i] = d->pre.n;
			kv_link_init(&d->links[d->pre.n], L->bytes_per_s, L->latency_s);
			d->pre.rep[d->pre.n++] = i;
		} else {
			d->dec.rep[d->dec.n++] = i;
		}
	}
	/* one router per side, from the same specification */
	const char *spec = f->cfg->router ? f->cfg->router : "round-robin";
	if ((st = kvs_router_create(spec, f->cfg->seed, &d->pre.router)) != KVS_OK ||
	    (st = kvs_router_create(spec, f->cfg->seed + 1, &d->dec.router)) != KVS_OK)
		goto fail;
	*out = d;
	return KVS_OK;
fail:
	fleet_disagg_destroy(d);
	return st;
}

void *fleet_disagg_ctx(fleet_disagg *d, uint32_t replica)
{
	return &d->rctx[replica];
}

void fleet_disagg_destroy(fleet_disagg *d)
{
	if (!d)
		return;
	side_free(&d->pre);
	side_free(&d->dec);
	/* records of requests a horizon left on their way */
	while (d->live)
		xfer_free(d, d->live);
	if (d->links)
		for (uint32_t k = 0; k < d->f->n; k++)
			kv_link_free(&d->links[k]);
	kvs_free(d->links);
	kvs_free(d->link_of);
	kvs_free(d->bpt);
	kvs_free(d->rctx);
	kvs_free(d);
}

/* ---- routing ---------------------------------------------------------------------- */

static uint32_t side_prefix_of(void *ctx, uint32_t k)
{
	fleet_disagg *d = ctx;
	dg_side *s = d->side;
	if (d->stale)
		return d->stale[s->rep[k]];
	if (s->pfx[k] == UINT32_MAX)
		s->pfx[k] = kvs_sim_prefix_match(d->f->sims[s->rep[k]], d->req, NULL);
	return s->pfx[k];
}

static void side_signals(fleet_disagg *d, dg_side *s)
{
	if (!(d->f->needs & (KVS_ROUTER_NEEDS_QUEUE | KVS_ROUTER_NEEDS_KV |
			     KVS_ROUTER_NEEDS_SCHED)))
		return;
	for (uint32_t k = 0; k < s->n; k++) {
		uint32_t i = s->rep[k];
		kvs_sim_load l;
		kvs_sim_get_load(d->f->sims[i], &l);
		/* a prefill replica's requests leave it when handed out */
		uint64_t gone = l.completed + l.rejected + l.kv_sent;
		s->out[k] = d->f->routed[i] > gone ? d->f->routed[i] - gone : 0;
		s->kv[k] = l.kv_usage;
		s->wait[k] = l.waiting + fleet_unseen(d->f->routed[i], &l);
		s->run[k] = l.running;
	}
}

/* The replica of side s for req (signals read now unless refreshed). */
static uint32_t side_pick(fleet_disagg *d, dg_side *s, const kvs_request *req,
			  const uint32_t *stale, uint32_t stale_blocks)
{
	fleet_run *f = d->f;
	if (f->cfg->router_refresh_s == 0)
		side_signals(d, s);
	for (uint32_t k = 0; k < s->n; k++)
		s->pfx[k] = UINT32_MAX;
	d->req = req;
	d->side = s;
	d->stale = stale;
	uint32_t nblocks = stale ? stale_blocks : 0;
	if (!stale && f->rcfg[s->rep[0]].enable_prefix_caching && s->n > 1 &&
	    (f->needs & KVS_ROUTER_NEEDS_PREFIX))
		s->pfx[0] = kvs_sim_prefix_match(f->sims[s->rep[0]], req, &nblocks);
	kvs_router_view v = {
		.n = s->n,
		.outstanding = s->out,
		.kv_usage = s->kv,
		.waiting = s->wait,
		.running = s->run,
		.prefix_of = side_prefix_of,
		.request_blocks = nblocks,
		.ctx = d,
	};
	uint32_t k = kvs_router_pick(s->router, &v);
	d->stale = NULL;
	uint32_t i = s->rep[k];
	if (f->cfg->on_route)
		f->cfg->on_route(f->cfg->on_route_ctx, req, i);
	f->routed[i]++;
	if (f->cfg->router_refresh_s > 0) {
		s->out[k]++;   /* the router counts what it sends */
		s->wait[k]++;
	}
	return i;
}

/* ---- the engines' calls ------------------------------------------------------------ */

static double on_sent(fleet_disagg *d, uint32_t p, const kvs_sim_kv_handoff *h)
{
	fleet_run *f = d->f;
	dg_xfer *x = kvs_calloc(1, sizeof *x);
	if (!x) {
		d->err = kvs_fail(KVS_ERR_NOMEM, "out of memory (KV transfer)");
		return h->now_s;
	}
	x->next = d->live;
	if (d->live)
		d->live->prev = x;
	d->live = x;
	x->src = p;
	x->src_h = h->handle;
	x->dst = side_pick(d, &d->dec, &h->req, NULL, 0);
	kvs_sim_kv_handoff g = *h;
	g.origin = (uint64_t)(uintptr_t)x;
	kvs_status st = kvs_sim_feed_kv(f->sims[x->dst], &g, h->now_s);
	if (st != KVS_OK && d->err == KVS_OK)
		d->err = st;
	f->next_ev[x->dst] = kvs_sim_next_event_s(f->sims[x->dst]);
	/* the decode replica may refuse it at once, which frees its KV here */
	return h->now_s;
}

static double on_allocated(fleet_disagg *d, const kvs_sim_kv_handoff *h)
{
	dg_xfer *x = (dg_xfer *)(uintptr_t)h->origin;
	x->dst_h = h->handle;
	kv_link *l = &d->links[d->link_of[x->src]];
	double bytes = (double)h->kv_tokens * d->bpt[x->src];
	kvs_status st = kv_link_start(l, h->now_s, bytes, x);
	if (st != KVS_OK && d->err == KVS_OK)
		d->err = st;
	return kv_link_earliest(l, h->now_s, bytes);
}

/* The decode replica refused the request (it can never fit there): the
 * prefill replica frees its KV now.  An idle prefill replica wakes at
 * once for it, and with requests waiting for that memory it may prefill
 * one and hand it over a step later, possibly to this decode replica:
 * an event that the bound of the advance in progress (computed while the
 * prefill replica had none) does not cover.  So the decode replica stops
 * just after now (strictly: a bound of exactly now would leave its span
 * unbounded), and the fleet takes the prefill replica's event first.  A
 * busy prefill replica frees the KV at its next step boundary, an event
 * already under that bound; an idle one with nothing waiting starts
 * nothing before an arrival, also under it. */
static double on_rejected(fleet_disagg *d, const kvs_sim_kv_handoff *h)
{
	fleet_run *f = d->f;
	dg_xfer *x = (dg_xfer *)(uintptr_t)h->origin;
	uint32_t p = x->src;
	bool was_idle = !isfinite(f->next_ev[p]);
	kvs_status st = kvs_sim_kv_release(f->sims[p], x->src_h, h->now_s);
	if (st != KVS_OK && d->err == KVS_OK)
		d->err = st;
	f->next_ev[p] = kvs_sim_next_event_s(f->sims[p]);
	xfer_free(d, x);
	kvs_sim_load l;
	kvs_sim_get_load(f->sims[p], &l);
	return was_idle && l.waiting > 0 ? nextafter(h->now_s, INFINITY) : INFINITY;
}

double fleet_disagg_on_kv(void *ctx, int what, const kvs_sim_kv_handoff *h)
{
	dg_rctx *c = ctx;
	switch (what) {
	case KVS_SIM_KV_SENT: return on_sent(c->d, c->i, h);
	case KVS_SIM_KV_ALLOCATED: return on_allocated(c->d, h);
	case KVS_SIM_KV_REJECTED: return on_rejected(c->d, h);
	default: return INFINITY;
	}
}

/* A transfer ended at t: the KV is on the decode replica, and the
 * prefill replica may free it. */
static kvs_status delivered(fleet_disagg *d, dg_xfer *x, double t)
{
	fleet_run *f = d->f;
	kvs_status st = kvs_sim_kv_arrived(f->sims[x->dst], x->dst_h, t);
	if (st == KVS_OK)
		st = kvs_sim_kv_release(f->sims[x->src], x->src_h, t);
	f->next_ev[x->dst] = kvs_sim_next_event_s(f->sims[x->dst]);
	f->next_ev[x->src] = kvs_sim_next_event_s(f->sims[x->src]);
	xfer_free(d, x);
	return st;
}

/* ---- the loop ------------------------------------------------------------------------ */

/* Whether decode replica i may still admit a request handed to it (one
 * still to arrive there, or waiting): an admission allocates its KV and
 * starts a transfer. */
static bool may_admit(fleet_disagg *d, uint32_t i)
{
	kvs_sim_load l;
	kvs_sim_get_load(d->f->sims[i], &l);
	return l.waiting > 0 || d->f->routed[i] > l.kv_received;
}

/* Whether a prefill replica is idle with requests waiting (for memory: a
 * transfer's end, freeing its KV, may let it run); a busy one's next
 * hand-off is at or after its next event, and an idle one with nothing
 * waiting starts only at an arrival. */
static bool prefill_blocked(fleet_disagg *d)
{
	for (uint32_t k = 0; k < d->pre.n; k++) {
		uint32_t i = d->pre.rep[k];
		if (isfinite(d->f->next_ev[i]))
			continue;
		kvs_sim_load l;
		kvs_sim_get_load(d->f->sims[i], &l);
		if (l.waiting > 0)
			return true;
	}
	return false;
}

/* Has every request handed to a decode replica arrived there?  A hand-off
 * is fed as an arrival at the hand-off instant and counted received
 * (kv_received) when the decode engine processes it, at its next
 * advance: until then it is counted sent on the prefill side and nowhere
 * on the decode side.  O(decode replicas). */
static bool handoffs_arrived(fleet_disagg *d)
{
	for (uint32_t k = 0; k < d->dec.n; k++) {
		uint32_t i = d->dec.rep[k];
		kvs_sim_load l;
		kvs_sim_get_load(d->f->sims[i], &l);
		if (d->f->routed[i] > l.kv_received)
			return false;
	}
	return true;
}

/* Is any replica's next event still to come? */
static bool any_event(const fleet_run *f)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (isfinite(f->next_ev[i]))
			return true;
	return false;
}

kvs_status fleet_disagg_loop(fleet_disagg *d, kvs_router *router)
{
	(void)router;   /* each side has its own, of the same specification */
	fleet_run *f = d->f;
	uint32_t n = f->n;
	double S = f->cfg->router_refresh_s, next_refresh = S > 0 ? 0 : INFINITY;
	double horizon = f->cfg->sim.horizon_s;
	kvs_status st;
	for (;;) {
		if (d->err != KVS_OK)
			return d->err;
		/* Interrupted: the replicas stop at once (their flag, raised
		 * here, is read before each of their events), at a clean
		 * point, between two of the fleet's events, where
		 *  - every hand-off has arrived at its decode replica, so that
		 *    it is counted there (unfinished, waiting for blocks or for
		 *    its KV), not only as sent on its prefill replica: the
		 *    totals balance.  Such a hand-off arrives at the instant it
		 *    was made, so the loop goes on at most to the end of that
		 *    instant;
		 *  - some replica has an event to stop at, so that the fleet's
		 *    result says it was interrupted; when none has, the next
		 *    arrival or link event gives one one.
		 * KV on a link stays there: its request is unfinished on its
		 * decode replica, its KV held by its prefill replica
		 * (kv_in_flight). */
		if (fleet_interrupted(f) && handoffs_arrived(d) && any_event(f)) {
			*f->stop = 1;
			return KVS_OK;
		}
		/* the next arrival (none past the horizon) */
		const ahead_ent *e;
		if ((st = fleet_src_peek(&f->in, &e)) != KVS_OK)
			return st;
		double ta = e ? e->q.arrival_s : INFINITY;
		if (horizon > 0 && ta > horizon)
			ta = INFINITY;
		/* the next link event */
		double tl = INFINITY;
		uint32_t kl = 0;
		for (uint32_t k = 0; k < d->pre.n; k++) {
			double t = kv_link_next(&d->links[k]);
			if (t < tl) {
				tl = t;
				kl = k;
			}
		}
		if (horizon > 0 && tl > horizon)
			tl = INFINITY;   /* ends after the run: the request is unfinished */
		/* the replicas' next two events */
		double t1 = INFINITY, t2 = INFINITY;
		uint32_t i1 = 0;
		for (uint32_t i = 0; i < n; i++) {
			double t = f->next_ev[i];
			if (t < t1) {
				t2 = t1;
				t1 = t;
				i1 = i;
			} else if (t < t2) {
				t2 = t;
			}
		}
		double tnext = min2(min2(ta, tl), t1);
		if (!isfinite(tnext))
			return KVS_OK;
		if (next_refresh <= tnext) {
			/* every replica is at the instant: snapshot the signals
			 * (the same until the next event, so instants with none
			 * between are skipped) */
			side_signals(d, &d->pre);
			side_signals(d, &d->dec);
			double b = next_refresh;
			double skip = floor(tnext / S) * S;
			next_refresh = (skip > b ? skip : b) + S;
			if (f->in.buffered && e &&
			    (st = fleet_src_snapshot(&f->in, f, next_refresh)) != KVS_OK)
				return st;
			continue;
		}
		if (tl <= ta && tl <= t1) {
			void *done;
			if ((st = kv_link_pop(&d->links[kl], &done)) != KVS_OK)
				return st;
			if (done && (st = delivered(d, done, tl)) != KVS_OK)
				return st;
			continue;
		}
		if (ta <= t1) {
			kvs_request q = e->q;
			uint32_t i = side_pick(d, &d->pre, &q, f->in.buffered ? e->prefix : NULL,
					       f->in.buffered ? e->nblocks : 0);
			if ((st = kvs_sim_feed(f->sims[i], &q)) != KVS_OK)
				return st;
			fleet_src_pop(&f->in);
			f->next_ev[i] = kvs_sim_next_event_s(f->sims[i]);
			continue;
		}
		/* replica i1 processes its events before anything else's next;
		 * a decode replica's spans need only stop where a request or
		 * its KV may come: an arrival (which leads to a hand-off), a
		 * link event, a prefill replica's next event (a step end is a
		 * hand-off), and, while a prefill replica waits for memory, the
		 * next event of another decode replica that may still admit a
		 * handed request: its allocation starts a transfer whose
		 * delivery frees the prefill replica's KV, which may let it
		 * prefill and hand a request over.  The router's refresh hands
		 * nothing over: not an input bound. */
		double bound = min2(min2(ta, tl), min2(t2, next_refresh));
		if (!(bound > t1))
			bound = nextafter(t1, INFINITY);
		double input = bound;
		if (f->role[i1] == KVS_FLEET_ROLE_DECODE) {
			bool blocked = prefill_blocked(d);
			double tin = INFINITY;
			for (uint32_t i = 0; i < n; i++)
				if (i != i1 && f->next_ev[i] < tin &&
				    (f->role[i] == KVS_FLEET_ROLE_PREFILL ||
				     (blocked && may_admit(d, i))))
					tin = f->next_ev[i];
			input = min2(min2(ta, tl), tin);
		}
		if ((st = kvs_sim_advance_bounded(f->sims[i1], bound, input)) != KVS_OK)
			return st;
		f->next_ev[i1] = kvs_sim_next_event_s(f->sims[i1]);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void fleet_disagg_stats(fleet_disagg *d, double sim_time_s, kvs_fleet_stats *st,
			kvs_fleet_replica_stats *rs)
{
	st->disaggregated = true;
	uint64_t total = 0;
	double sum = 0, umax = 0, usum = 0, dmax = 0;
	for (uint32_t k = 0; k < d->pre.n; k++) {
		kv_link *l = &d->links[k];
		total += l->transfers;
		st->kv_bytes += l->bytes;
		for (uint64_t j = 0; j < l->transfers; j++) {
			sum += l->dur[j];
			if (l->dur[j] > dmax)
				dmax = l->dur[j];
		}
		double u = sim_time_s > 0 ? l->busy_s / sim_time_s : 0;
		rs[d->pre.rep[k]].link_util = u;
		usum += u;
		if (u > umax)
			umax = u;
	}
	st->kv_transfers = total;
	st->kv_transfer_mean_s = total ? sum / (double)total : 0;
	st->kv_transfer_max_s = dmax;
	st->kv_link_util_mean = d->pre.n ? usum / d->pre.n : 0;
	st->kv_link_util_max = umax;
	st->kv_in_flight = 0;
	for (uint32_t k = 0; k < d->pre.n; k++)
		st->kv_in_flight += d->links[k].nact + d->links[k].nwait;
	st->kv_transfer_p99_s = 0;
	if (!total)
		return;
	double *all = kvs_reallocarray(NULL, total, sizeof *all);
	if (!all) {
		st->kv_transfer_p99_s = NAN;   /* reported as null */
		return;
	}
	size_t o = 0;
	for (uint32_t k = 0; k < d->pre.n; k++) {
		if (!d->links[k].transfers)
			continue;   /* a link that carried nothing has no array */
		memcpy(all + o, d->links[k].dur, d->links[k].transfers * sizeof *all);
		o += d->links[k].transfers;
	}
	qsort(all, total, sizeof *all, cmp_double);
	/* numpy's default: linear between the ranks around q (n - 1) */
	double pos = 0.99 * (double)(total - 1);
	size_t lo = (size_t)pos;
	double frac = pos - (double)lo;
	st->kv_transfer_p99_s = lo + 1 < total ? all[lo] + frac * (all[lo + 1] - all[lo]) : all[lo];
	kvs_free(all);
}

/* ---- roles and links ------------------------------------------------------------------ */

static const char *const role_names[KVS_FLEET_ROLE_COUNT_] = { "both", "prefill", "decode" };

const char *kvs_fleet_role_name(kvs_fleet_role r)
{
	return (unsigned)r < KVS_FLEET_ROLE_COUNT_ ? role_names[r] : "?";
}

kvs_status kvs_fleet_role_parse(const char *text, kvs_fleet_role *out)
{
	for (int r = 0; r < KVS_FLEET_ROLE_COUNT_; r++)
		if (text && strcmp(text, role_names[r]) == 0) {
			*out = (kvs_fleet_role)r;
			return KVS_OK;
		}
	return kvs_fail(KVS_ERR_INVALID, "role '%s': expected prefill, decode or both",
			text ? text : "");
}

/* Line rates, one direction (docs/FLEET.md cites each). */
static const struct link_preset {
	const char *name;
	double bytes_per_s;
	const char *what;
} link_presets[] = {
	{ "nvlink", 450e9, "NVLink 4 (H100 SXM), 900 GB/s both ways: 450 GB/s each" },
	{ "ib-400g", 50e9, "InfiniBand NDR, 400 Gb/s per port (ConnectX-7)" },
	{ "ib-200g", 25e9, "InfiniBand HDR, 200 Gb/s per port (ConnectX-6)" },
	{ "eth-100g", 12.5e9, "100 Gigabit Ethernet (IEEE 802.3)" },
	{ "pcie5", 63.0e9, "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b" },
};

void kvs_fleet_link_default(kvs_fleet_link *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", link_presets[1].name);
	out->bytes_per_s = link_presets[1].bytes_per_s;
}

void kvs_fleet_link_help(FILE *f)
{
	for (size_t i = 0; i < KVS_ARRAY_LEN(link_presets); i++)
		fprintf(f, "    %-10s %6.1f GB/s  %s\n", link_presets[i].name,
			link_presets[i].bytes_per_s / 1e9, link_presets[i].what);
}

/* A custom link's bounds: below 1 MB/s or beyond a minute of latency a KV
 * transfer would take longer than any trace lasts (a misplaced unit, not a
 * link), and above 1 PB/s it is no link either. */
#define LINK_MIN_BPS 1e6
#define LINK_MAX_BPS 1e15
#define LINK_MAX_LATENCY_S 60.0

/* A decimal number and a unit from units[] (the first, "", when none). */
typedef struct unit {
	const char *name;
	double scale;
} unit;

static bool parse_qty(const char *text, size_t len, const unit *units, size_t nunits,
		      double *out)
{
	char buf[64];
	if (len == 0 || len >= sizeof buf)
		return false;
	memcpy(buf, text, len);
	buf[len] = 0;
	const char *end;
	double v;
	if (!kvs_strtod_decimal(buf, &v, &end))
		return false;
	for (size_t i = 0; i < nunits; i++)
		if (strcmp(end, units[i].name) == 0) {
			*out = v * units[i].scale;
			return true;
		}
	return false;
}

kvs_status kvs_fleet_link_parse(const char *spec, kvs_fleet_link *out)
{
	static const unit bw_units[] = {
		{ "", 1e9 }, { "B/s", 1 }, { "KB/s", 1e3 }, { "MB/s", 1e6 }, { "GB/s", 1e9 },
		{ "TB/s", 1e12 }, { "Gb/s", 1e9 / 8 }, { "Gbps", 1e9 / 8 }, { "Tb/s", 1e12 / 8 },
	};
	static const unit lat_units[] = {
		{ "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "ns", 1e-9 },
	};
	if (!spec || !*spec)
		return kvs_fail(KVS_ERR_INVALID, "--kv-link: empty (expected PRESET or BW, "
				"then :LATENCY)");
	const char *colon = strchr(spec, ':');
	size_t blen = colon ? (size_t)(colon - spec) : strlen(spec);
	kvs_fleet_link L;
	memset(&L, 0, sizeof L);
	bool found = false;
	for (size_t i = 0; i < KVS_ARRAY_LEN(link_presets); i++)
		if (strlen(link_presets[i].name) == blen &&
		    strncmp(link_presets[i].name, spec, blen) == 0) {
			snprintf(L.name, sizeof L.name, "%s", link_presets[i].name);
			L.bytes_per_s = link_presets[i].bytes_per_s;
			found = true;
		}
	if (!found) {
		if (!parse_qty(spec, blen, bw_units, KVS_ARRAY_LEN(bw_units), &L.bytes_per_s) ||
		    !(L.bytes_per_s >= LINK_MIN_BPS && L.bytes_per_s <= LINK_MAX_BPS))
			return kvs_fail(KVS_ERR_INVALID, "--kv-link '%s': bandwidth '%.*s': expected "
					"a preset (nvlink, ib-400g, ib-200g, eth-100g, pcie5) or a "
					"decimal number from 1 MB/s to 1 PB/s with an optional unit "
					"(GB/s when none; B/s, MB/s, TB/s, Gb/s, Gbps, Tb/s)", spec,
					(int)blen, spec);
		snprintf(L.name, sizeof L.name, "custom");
	}
	if (colon) {
		const char *lt = colon + 1;
		if (!parse_qty(lt, strlen(lt), lat_units, KVS_ARRAY_LEN(lat_units), &L.latency_s) ||
		    !(L.latency_s >= 0 && L.latency_s <= LINK_MAX_LATENCY_S))
			return kvs_fail(KVS_ERR_INVALID, "--kv-link '%s': latency '%s': expected a "
					"decimal time from 0 to 60 s with an optional unit (s when "
					"none; ms, us, ns)", spec, lt);
	}
	*out = L;
	return KVS_OK;
}
