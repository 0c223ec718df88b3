/*
 * link.c - a KV link shared by processor sharing (see link.h).
 *
 *   latency phase (FIFO)        data phase (heap by finish tag)
 *   t0 ... t0 + lat   ----->    V0 ... V0 + bytes   -----> ended
 *
 * Between events V grows at bw / n (n transfers in the data phase), so a
 * transfer's end is the instant V reaches its tag; the link's time moves
 * only at its own events and at starts.  A start may come after latency
 * phases have ended whose events the fleet has not taken yet (kv_link_start
 * moves them to the data phase first, at their own instants), never after
 * a transfer's end (the fleet stops the replica that starts transfers at
 * the earliest end of the first one it starts, kv_link_earliest).
 */
#include "fleet/link.h"
#include "common/array.h"
#include "common/heap.h"

#include <math.h>
#include <string.h>

static bool flow_less(const link_flow *a, const link_flow *b)
{
	return a->tag < b->tag || (a->tag == b->tag && a->seqno < b->seqno);
}

KVS_HEAP_DEFINE(flowh, link_flow, flow_less)

void kv_link_init(kv_link *l, double bytes_per_s, double latency_s)
{
	memset(l, 0, sizeof *l);
	l->bw = bytes_per_s;
	l->lat = latency_s;
}

void kv_link_free(kv_link *l)
{
	kvs_free(l->act);
	kvs_free(l->wait);
	kvs_free(l->dur);
	memset(l, 0, sizeof *l);
}

/* Serve the data phase up to t. */
static void advance(kv_link *l, double t)
{
	if (t <= l->now)
		return;
	if (l->nact) {
		l->V += (t - l->now) * l->bw / (double)l->nact;
		l->busy_s += t - l->now;
	}
	l->now = t;
}

static kvs_status activate(kv_link *l, link_flow f)
{
	if (!KVS_ARRAY_RESERVE(l->act, l->capact, l->nact + 1, 8))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (KV link)");
	f.tag = l->V + f.bytes;
	flowh_push(l->act, &l->nact, f);
	return KVS_OK;
}

static double next_end(const kv_link *l)
{
	if (!l->nact)
		return INFINITY;
	double left = l->act[0].tag - l->V;
	return l->now + (left > 0 ? left : 0) * (double)l->nact / l->bw;
}

static double next_wait(const kv_link *l)
{
	return l->nwait ? l->wait[l->whead].t0 + l->lat : INFINITY;
}

double kv_link_next(const kv_link *l)
{
	double a = next_end(l), b = next_wait(l);
	return a < b ? a : b;
}

double kv_link_earliest(const kv_link *l, double t, double bytes)
{
	return t + l->lat + bytes / l->bw;
}

/* The waiting transfer at the head enters its data phase (at its
 * latency's end, which the caller has reached). */
static kvs_status wait_pop(kv_link *l)
{
	advance(l, next_wait(l));
	link_flow f = l->wait[l->whead];
	l->whead = (l->whead + 1) % l->capwait;
	l->nwait--;
	return activate(l, f);
}

kvs_status kv_link_start(kv_link *l, double t, double bytes, void *ctx)
{
	kvs_require(t >= l->now);
	/* A decode replica that starts two transfers on this link in one
	 * advance (its bound is the first one's earliest end, after the
	 * first one's latency) starts the second after the first entered
	 * its data phase: that happens now, at its instant, so that the
	 * first is served alone until the second's own latency ends, as
	 * when the fleet takes the event in between.  Only latency ends
	 * are due: an end is at or after the bound of the advance (were
	 * one due by rounding, the fleet takes it next, as before). */
	while (l->nwait && next_wait(l) <= t && next_wait(l) < next_end(l)) {
		kvs_status st = wait_pop(l);
		if (st != KVS_OK)
			return st;
	}
	advance(l, t);
	link_flow f = { .tag = 0, .seqno = l->seqno++, .t0 = t, .bytes = bytes, .ctx = ctx };
	if (l->lat <= 0)
		return activate(l, f);
	if (l->nwait == l->capwait) {
		/* grow the ring, unwrapping it */
		size_t cap = l->capwait ? 2 * l->capwait : 8;
		link_flow *v = kvs_reallocarray(NULL, cap, sizeof *v);
		if (!v)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (KV link)");
		for (size_t i = 0; i < l->nwait; i++)
			v[i] = l->wait[(l->whead + i) % l->capwait];
		kvs_free(l->wait);
		l->wait = v;
		l->capwait = cap;
		l->whead = 0;
	}
	l->wait[(l->whead + l->nwait) % l->capwait] = f;
	l->nwait++;
	return KVS_OK;
}

kvs_status kv_link_pop(kv_link *l, void **done)
{
	double te = next_end(l), tw = next_wait(l);
	*done = NULL;
	kvs_require(isfinite(te) || isfinite(tw));
	if (te <= tw) {
		advance(l, te);
		link_flow f = flowh_pop(l->act, &l->nact);
		if (f.tag > l->V)
			l->V = f.tag;   /* rounding: it is served exactly */
		if (!l->nact)
			l->V = 0;       /* idle: restart the virtual clock */
		if (!KVS_ARRAY_RESERVE(l->dur, l->capdur, l->transfers + 1, 64))
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (KV link)");
		l->dur[l->transfers++] = te - f.t0;
		l->bytes += f.bytes;
		*done = f.ctx;
		return KVS_OK;
	}
	return wait_pop(l);
}
