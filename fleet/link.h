/*
 * link.h - a KV link shared by processor sharing (private to fleet/).
 *
 * A transfer started at t waits the link's latency (setup: the receiver's
 * read request reaching the sender), then its bytes share the link's
 * bandwidth fairly with every other transfer in its data phase: with n of
 * them, each is served at bw / n.  Service is tracked in virtual time V
 * (bytes served to each active transfer so far): a transfer that enters
 * at V0 with B bytes ends when V reaches V0 + B, so the next end is the
 * smallest finish tag, found in a binary heap.  Cost: O(log n) per start
 * and per end; memory: the transfers in flight plus one double per
 * finished transfer (its duration, for the percentiles).
 */
#ifndef KVSIM_FLEET_LINK_H
#define KVSIM_FLEET_LINK_H

#include "kvsim/common.h"

typedef struct link_flow {
	double tag;          /* finish tag: V at which its last byte is served */
	uint64_t seqno;      /* ties: start order */
	double t0;           /* start (before the latency) */
	double bytes;
	void *ctx;           /* the caller's */
} link_flow;

typedef struct kv_link {
	double bw;           /* bytes/s */
	double lat;          /* s, per transfer */
	double now;          /* time the state below is at */
	double V;            /* virtual time: bytes served per active transfer */
	link_flow *act;      /* data phase: heap by (tag, seqno) */
	size_t nact, capact;
	link_flow *wait;     /* latency phase: FIFO (constant latency) */
	size_t whead, nwait, capwait;
	uint64_t seqno;
	/* figures */
	uint64_t transfers;  /* finished */
	double bytes;        /* of the finished transfers */
	double busy_s;       /* time with a transfer in its data phase */
	double *dur;         /* [transfers] start to end, s */
	size_t capdur;
} kv_link;

void kv_link_init(kv_link *l, double bytes_per_s, double latency_s);
void kv_link_free(kv_link *l);
/* Start a transfer of bytes at t (>= the link's time). */
kvs_status kv_link_start(kv_link *l, double t, double bytes, void *ctx);
/* Time of the link's next event (a transfer entering its data phase or
 * ending); +inf when idle. */
double kv_link_next(const kv_link *l);
/* Process the link's next event (at kv_link_next): *done gets the ended
 * transfer's ctx, or NULL when a transfer only entered its data phase. */
kvs_status kv_link_pop(kv_link *l, void **done);
/* Earliest end of a transfer of bytes started at t (alone on the link). */
double kv_link_earliest(const kv_link *l, double t, double bytes);

#endif
