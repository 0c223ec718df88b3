/*
 * engine.c - discrete-event replay through one continuous-batching replica.
 *
 * Events.  A min-heap of (time, sequence number) holds the two kinds of
 * event of one replica: the next arrival from the request stream and the end
 * of the step (or span of steps) in flight.  Ties pop in push order, so runs
 * are deterministic.  At every step boundary the scheduler plans the next
 * step, vLLM style:
 *
 *   1. sequences whose next event is due at this step: finished ones release
 *      their memory; ones at the end of their room (kvs_alloc_room) grow by
 *      one token into a new block, preempting the most recently admitted
 *      running sequence (recompute or swap; with priority scheduling the
 *      lowest-priority one, see "scheduling policy") while that fails;
 *   2. every decoding sequence contributes one token (decodes first);
 *   3. sequences in prefill take chunks from what is left of
 *      max_num_batched_tokens, in admission order;
 *   4. unless a preemption happened in this step: swapped sequences come
 *      back, then waiting requests are admitted in queue order (FCFS, or
 *      by priority) while
 *      kvs_alloc_can_admit says NOW, running < max_num_seqs and tokens are
 *      left.
 *
 * The fast path.  Between events only lengths change, so decode steps are
 * not simulated one by one.  Decoding sequences are advanced lazily: each
 * remembers the step S at which its length was last told to the allocator
 * and the step E of its next event, E = S + min(room, tokens left); a queue
 * orders them by (E, admission): a ring of DQ_W (4,096) buckets indexed
 * by E for events less than DQ_W steps ahead when pushed (block crossings
 * and nearly every finish: O(1) push, the next one found in two words of
 * occupancy bits, a bucket falling due sorted by admission), a binary heap
 * for the rest.  When a planned
 * step has no prefill, admission, preemption or swap, the engine takes k
 * steps at once, with k up to the earliest of: the next due sequence, the
 * next arrival, the horizon.
 * The k step times form the max of two arithmetic series (compute and
 * memory lines of the roofline), summed in closed form (cost.c); memory
 * parts are linear in the step index inside a span and integrate in closed
 * form as well.  A replay therefore costs O(events log running): arrivals,
 * admissions, block allocations, completions, preemptions.
 *
 * Crossing classes (paged).  A single sequence's next block crossings are
 * every block_size steps; while the pool holds blocks for every crossing
 * of the step, they change nothing but which physical block it gets, and
 * how the memory parts move: a whole block below its final length adds
 * reservation, the last one (into the block holding its final token) adds
 * its tokens below the final length to reservation and the rest to
 * internal fragmentation.  Such a sequence is queued at its finish and
 * counted in class c mod block_size of its crossing steps c; at each step
 * the crossings of its class take their blocks from the pool in one call
 * (owed blocks, the account shifted for them: each final block's part
 * past the final length, summed per step in a ring ahead of lz_done,
 * stays internal fragmentation), and a sequence receives its owed blocks
 * when it is next synced.  A span does not end at crossing steps: when the free
 * stack holds the blocks of every crossing inside it (and no time-series
 * sample falls inside it), they are taken at its start in one call, in the
 * order one call per step would pop them, and the reservation, the free
 * part and the peak follow each crossing from its step on (span_take);
 * otherwise the span ends at the next crossing step, whose plan takes its
 * class.  The pool's state at every planning is that of one allocation
 * per crossing; when the pool runs short the classes dissolve into
 * ordinary queue entries for that step (see plan_due).  With
 * cfg.fast_path false every sequence is touched at every step (the check
 * that both give the same results is in tests/test_sim.c).
 *
 * Lengths.  A request of P prompt and O output tokens stores P tokens in
 * prefill (chunked); the step completing the prefill emits output token 1;
 * each further step stores the previous token's KV and emits the next, so O
 * forward passes in all and P + O - 1 tokens stored at the end (the last
 * token's KV is never written), which is the final length the allocator
 * is told.  A recomputed sequence re-prefills P + generated tokens and
 * continues.
 *
 * Parallel sampling (n > 1).  The prompt is prefilled once; the next step
 * forks n - 1 children (kvs_alloc_fork; the memory of children that get a
 * copy is reserved at admission), and the n samples decode in lockstep as
 * one decode-heap entry weighted by n.  Preemption takes the whole family:
 * swapped together, or recomputed as the prompt once, a fork, then each
 * sample's own tokens.
 *
 * Memory.  Between allocator calls, the six parts are those of the last
 * kvs_alloc_account() shifted by the tokens written since (each moves
 * kv_bytes_per_token from reservation to token states); KVS_DEBUG >= 2
 * checks this against a fresh account, and the allocator validator, at every
 * step.
 */
#include "kvs_config.h"
#include "sim_internal.h"
#include "allocator/owed.h"
#include "common/array.h"
#include "common/heap.h"
#include "common/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- requests in flight ---------------------------------------------------- */

typedef enum rstate {
	RS_WAITING = 0,
	RS_PREFILL,
	RS_FORK,       /* prompt prefilled, samples to fork at the next step */
	RS_DECODE,
	RS_DUE,        /* decode, popped for this step's processing */
	RS_SWAPPED,
	RS_DEAD,       /* rejected while running; freed at the next planning */
	RS_KV_SEND,    /* prefill-only: prefilled, KV held until read (kv_held) */
	RS_KV_WAIT,    /* KV from elsewhere: blocks allocated, KV on its way */
	RS_KV_READY,   /* its KV is here (or read): taken at the next planning */
} rstate;

/* One request.  With parallel sampling (n > 1) it is a family of n
 * sequences, allocator ids seq .. seq + n - 1 (sample 0 is the parent),
 * that advance in lockstep: the fields below (len, gen, target, S, E) hold
 * for every live member. */
typedef struct sreq {
	kvs_seq_id seq;
	uint64_t index, line;
	double arrival, admitted, first_token;
	uint32_t prompt, output;   /* from the trace (output: per sample) */
	uint32_t out_eff;          /* forward passes that emit tokens: max(output, 1) */
	uint32_t n;                /* samples (parallel sampling n) */
	uint32_t nlive;            /* members holding KV and advancing: 1 until
	                            * the fork, then n */
	uint32_t nreg;             /* members registered with the allocator
	                            * (ids seq .. seq + nreg - 1): nlive, or n
	                            * while contiguous children are reserved */
	uint32_t gen;              /* tokens emitted by the end of step S - 1 */
	uint32_t target;           /* tokens to store before the next token is emitted */
	uint32_t len;              /* length as the allocator knows it */
	uint32_t cached_first;
	uint32_t preemptions;
	int32_t priority;          /* the trace's; lower first (priority scheduling) */
	uint32_t chunk;            /* prefill tokens computed in the current step */
	uint32_t nhashes;          /* hash ids kept, at the trace's granularity */
	uint32_t hash_block;       /* that granularity (tokens) */
	uint32_t nblock_hashes;    /* ids at the block size (chained prefix) */
	uint64_t *hashes;          /* re-split to the block size when admitted */
	rstate state;
	bool in_step;              /* holds a chunk in the step in flight */
	bool over_len;             /* flagged or longer than max_model_len */
	bool admitted_once;
	bool refill;               /* family after a recompute: once forked, each
	                            * sample re-prefills its own tokens */
	bool unshared;             /* family swapped back in: its samples no
	                            * longer share the prompt's blocks (host
	                            * blocks are never shared), so running out
	                            * of memory alone does not mean it never fits */
	uint64_t gate;             /* family preempted by its own growth: not
	                            * readmitted while s->releases + 1 == gate */
	uint64_t order;            /* admission order */
	uint64_t S, E;             /* decode: sync step, event step */
	bool in_ring;              /* decode: queued in the near ring (else the heap) */
	struct sreq *dq_next;      /* in_ring: the next in its bucket */
	bool lazy;                 /* decode: its block crossings before E (its
	                            * finish) are taken in bulk (crossing classes) */
	uint8_t pre;               /* swapped out with the slot of its next
	                            * token stored (planned in the step that
	                            * preempted it) but that token not emitted
	                            * (0 or 1): emitted by the step that swaps
	                            * it in */
	uint32_t lz_res;           /* lazy: its crossing steps mod block_size */
	uint64_t pf_step;          /* lazy: the step of its crossing into the
	                            * block that holds its final token, when
	                            * that block is partly beyond it (pf_def > 0) */
	uint32_t pf_def;           /* that block's tokens past the final length
	                            * (0: no such crossing pending or owed) */
	bool pf_far;               /* pending in the far heap (else the ring) */
	bool tg_in;                /* lazy: in the list of table growths (its
	                            * table grows before its finish) */
	uint32_t tg_idx;           /* tg_in: its entry's index in s->tg */
	uint32_t cap;              /* decode: tokens its blocks hold as the
	                            * allocator knows them (len + room) */
	uint32_t tcap;             /* lazy: entries its block table holds
	                            * before it grows (the allocator's
	                            * kvs_alloc_table_capacity) */
	bool kv_remote;            /* its prompt's KV comes from elsewhere
	                            * (kvs_sim_feed_kv) until admitted */
	double kv_arrival;         /* then: its arrival at the fleet */
	uint64_t kv_origin;        /* the caller's tag (kvs_sim_kv_handoff.origin) */
	struct sreq *prev, *next;  /* running list, by admission (kv_held list
	                            * in RS_KV_SEND / RS_KV_WAIT) */
} sreq;

/* ---- small containers ------------------------------------------------------ */

typedef struct deque {
	sreq **v;
	size_t cap, head, n;
} deque;

/* cap is 0 or a power of two (64, doubled): an index wraps with a mask */
static bool deque_grow(deque *d)
{
	size_t cap = d->cap ? d->cap * 2 : 64;
	sreq **v = kvs_reallocarray(NULL, cap, sizeof *v);
	if (!v)
		return false;
	for (size_t i = 0; i < d->n; i++)
		v[i] = d->v[(d->head + i) & (d->cap - 1)];
	kvs_free(d->v);
	d->v = v;
	d->cap = cap;
	d->head = 0;
	return true;
}

static bool deque_push_back(deque *d, sreq *r)
{
	if (d->n == d->cap && !deque_grow(d))
		return false;
	d->v[(d->head + d->n++) & (d->cap - 1)] = r;
	return true;
}

static bool deque_push_front(deque *d, sreq *r)
{
	if (d->n == d->cap && !deque_grow(d))
		return false;
	d->head = (d->head + d->cap - 1) & (d->cap - 1);
	d->v[d->head] = r;
	d->n++;
	return true;
}

/* Insert r after every element that does not come after it under
 * after(); the deque is kept sorted by it.  O(log n) to find the place,
 * O(elements behind it) to move them: nothing moves for the usual arrival,
 * which comes last among its priority. */
static bool deque_insert_sorted(deque *d, sreq *r,
				bool (*after)(const sreq *a, const sreq *b))
{
	if (d->n == d->cap && !deque_grow(d))
		return false;
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (after(d->v[(d->head + mid) & (d->cap - 1)], r))
			hi = mid;
		else
			lo = mid + 1;
	}
	for (size_t i = d->n; i > lo; i--)
		d->v[(d->head + i) & (d->cap - 1)] = d->v[(d->head + i - 1) & (d->cap - 1)];
	d->v[(d->head + lo) & (d->cap - 1)] = r;
	d->n++;
	return true;
}

static sreq *deque_front(const deque *d)
{
	return d->n ? d->v[d->head] : NULL;
}

static sreq *deque_pop_front(deque *d)
{
	if (!d->n)
		return NULL;
	sreq *r = d->v[d->head];
	d->head = (d->head + 1) & (d->cap - 1);
	d->n--;
	return r;
}

/* Width of the decode queue's near ring, in steps: 64 words of occupancy
 * bits, one bit per bucket, and a word with one bit per word. */
#define DQ_W 4096
_Static_assert(DQ_W == 64 * 64, "the ring's summary is one 64-bit word");

typedef struct dh_ent {
	uint64_t E, order;
	struct sreq *r;
} dh_ent;

typedef enum ev_type { EV_ARRIVAL = 0, EV_STEP_DONE, EV_WAKE } ev_type;

typedef struct event {
	double t;
	uint64_t seqno;
	ev_type type;
} event;

static bool ev_less(const event *a, const event *b)
{
	return a->t < b->t || (a->t == b->t && a->seqno < b->seqno);
}

/* a slot of chained_prefix's id set: empty unless stamp is the current
 * request's */
typedef struct seen_slot {
	uint64_t key;
	uint32_t stamp;
} seen_slot;

/* ---- the simulator ---------------------------------------------------------- */

struct kvs_sim {
	kvs_sim_config cfg;
	kvs_alloc *alloc;
	kvs_cost cost;
	uint64_t budget, kvb;      /* bytes; per token bytes (per rank) */
	uint32_t block_size, mml;
	unsigned bs_shift;         /* log2(block_size) when bs_pow2 */
	bool bs_pow2;              /* block_size a power of two (bs_div) */
	bool ran;

	/* events */
	event *ev;
	size_t nev, capev;
	event ev_slot[2];          /* the next arrival and the end of the step
	                            * in flight, each in its slot when it is
	                            * the only one of its kind (always, but for
	                            * wakes), the others in the heap */
	bool ev_used[2];
	uint64_t ev_seqno;
	bool arrival_event_queued;
	uint64_t inflight;            /* arrived, not yet completed or rejected
				       * (closed loop: at most max_concurrency) */

	/* source */
	const kvs_request_source *src;
	sreq *pending;             /* next request, not yet arrived */
	bool src_done;
	double last_arrival;
	/* driven from outside (kvs_sim_feed, no source): requests fed but not
	 * yet pending, linked through sreq.next, and the earliest time a
	 * request not yet fed may arrive (spans stop there) */
	sreq *fed_head, *fed_tail;
	double arrival_bound;
	bool started, stopped;

	/* engine state */
	double now;
	uint64_t G;                /* index of the next step to run */
	bool busy;
	uint64_t step_k;           /* steps in the span in flight */
	deque waiting, swapped;
	sreq **prefill;            /* running sequences in prefill, by admission */
	size_t nprefill, capprefill;
	dh_ent *heap;              /* decoding requests due DQ_W or more steps
	                            * after their push, by (E, order) */
	size_t nheap, capheap;
	sreq **ring;               /* DQ_W buckets of decoding requests due
	                            * within DQ_W steps of their push, bucket
	                            * E mod DQ_W, each a list through dq_next */
	uint64_t ring_bits[DQ_W / 64]; /* bit b % 64 of word b / 64: bucket b
	                            * is not empty */
	uint64_t ring_sum;         /* bit w: ring_bits[w] is not zero */
	size_t nring;
	uint64_t ndec;             /* decoding sequences: sum of nlive over the heap */
	/* crossing classes (paged, fast path): a queued single sequence whose
	 * next block crossings come before its finish is queued at its
	 * finish instead of its next crossing, and counted in
	 * lz_cnt[c mod block_size] for its crossing steps c; at each such step
	 * the blocks of all its class are taken from the pool in one call
	 * (owed: taken, not yet in a block table) and handed to a sequence
	 * when it is next synced.  Exact: the pool sees the same takes at the
	 * same steps (see plan_due). */
	bool lazy_ok;              /* policy and path allow it */
	bool lazy_on;              /* new decode entries may be lazy */
	uint32_t *lz_cnt;          /* [block_size] lazy sequences per class */
	uint64_t *lz_bits;         /* class occupancy, one bit per class */
	uint32_t lz_words;
	uint64_t nlazy;
	uint64_t lz_done;          /* crossings of steps < lz_done are taken */
	kvs_block_id *owed;        /* blocks taken for lazy crossings */
	size_t nowed, capowed;
	/* final partial crossings of lazy sequences (pf_step, pf_def):
	 * pending ones (pf_step >= lz_done) summed per step in a ring of
	 * PF_W steps from lz_done, those farther in a heap by step until
	 * they come within it; owed ones (taken, not yet synced) count their
	 * tokens past the final length in frag_owed, internal fragmentation
	 * as the allocator will see it */
	uint32_t *pf_ring;         /* [PF_W]: tokens past final lengths, by step */
	struct pf_ent *pf;
	size_t npf, cappf;
	uint64_t frag_owed;
	/* lazy sequences whose block table grows before their finish, each
	 * with the lz_done past which it does, unordered (a time-series
	 * sample syncs those below lz_done, in the order of their steps) */
	struct pf_ent *tg;
	size_t ntg, captg;
	struct pf_ent *tg_due;     /* [captg]: a sample's entries to sync */
	sreq **forkq;              /* prefilled families waiting for their fork */
	size_t nforkq, capforkq;
	uint64_t nforked;          /* families whose children are forked now */
	bool reserve_children;     /* the n - 1 children's memory is reserved at
	                            * admission (policies whose fork copies) */
	bool fork_copies;          /* a fork copies the prompt's KV (all but paged) */
	sreq *dead;                /* rejected while running, to free */
	sreq *spare;               /* finished requests' structs, for reuse
	                            * (linked through next; at most SPARE_MAX) */
	uint32_t nspare;
	uint64_t releases;         /* device memory given back (finish, preemption) */
	bool past_due;             /* planning: the due sequences are done */
	uint64_t due_order;        /* planning the due sequences: the order of
	                            * the one growing (those before it have
	                            * planned this step's token); 0 otherwise */
	bool prompt_step;          /* the step in flight is prompt-only (no
	                            * chunked prefill): decodes wait, G stays */
	sreq **due;
	size_t capdue;
	sreq *run_head, *run_tail;
	uint32_t nrunning;
	/* disaggregation: requests holding KV outside the running list
	 * (RS_KV_SEND, RS_KV_WAIT), and those whose KV was read (kv_done, to
	 * free) or arrived (kv_ready, to run) since the last planning */
	sreq *kv_held;
	uint64_t nkv_held;
	deque kv_done, kv_ready;
	uint64_t kv_sent, kv_received;   /* kvs_sim_load */
	uint64_t next_order;
	uint64_t next_seq;         /* allocator sequence ids */
	/* lazy decode aggregates */
	uint64_t sumS;             /* sum of nlive x S over the heap */
	uint64_t dec_len_sum;      /* sum of nlive x allocator-known length over the heap */
	uint64_t dec_win_sum;      /* sum of nlive x win_ctx over the heap (kept
	                            * when the step time reads windows:
	                            * cost.window) */
	/* memory parts: last kvs_alloc_account, and tokens written since */
	kvs_mem_parts raw;
	uint64_t synced;           /* tokens grown within room since raw */
	bool dirty;
	const sreq *raw_head;
	uint64_t *hash_scratch;
	size_t hash_scratch_cap;
	uint64_t *desc_hashes;     /* the block-size ids of one request ... */
	size_t desc_hashes_cap;
	uint32_t desc_nhashes;
	kvs_seq_id desc_seq;       /* ... this one (KVS_SEQ_NONE_ when none) */
	bool desc_valid;
	seen_slot *seen;           /* repeated-id check of copy_hashes */
	size_t seen_cap;
	uint32_t seen_now;

	/* metrics */
	kvs_sim_result *res;
	double mem_int[6];         /* byte-seconds */
	double time_total;
	double *conc_time;         /* time at each running count */
	double waiting_int;
	uint64_t held_peak;
	uint64_t tokens_total;
	double next_sample_t;
	size_t capsamples;
	bool auto_interval;
	uint64_t good;
	uint64_t plannings;
	kvs_status err;
	double wall0;
};

/* Lazy crossings inside a span (span_crossings) */
typedef struct span_cross {
	uint64_t n;                /* blocks */
	uint64_t last;             /* offset of the last crossing step */
	double taken_bs;           /* byte-seconds of their blocks in the span */
	double res_bs;             /* byte-seconds of the reservation's change:
	                            * their blocks less the tokens written */
	double frag_bs;            /* byte-seconds of the final partial blocks'
	                            * parts past the final length */
	uint64_t def;              /* those parts, tokens */
} span_cross;

/* ---- event heap ------------------------------------------------------------ */

KVS_HEAP_DEFINE(evh, event, ev_less)

/* Events: an arrival and a step's end, one of each at a time, take their
 * slots; the heap holds the rest (wakes).  They pop in the order the heap
 * alone would give: by time, then push order. */
static __attribute__((noinline)) kvs_status ev_push_heap(kvs_sim *s, event e)
{
	if (!KVS_ARRAY_RESERVE(s->ev, s->capev, s->nev + 1, 8))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (event heap)");
	evh_push(s->ev, &s->nev, e);
	return KVS_OK;
}

/* An event: the arrival's or the step's slot when free (inline), else
 * the heap */
static inline kvs_status ev_push(kvs_sim *s, double t, ev_type type)
{
	event e = { t, s->ev_seqno++, type };
	if (KVS_LIKELY(type <= EV_STEP_DONE && !s->ev_used[type])) {
		s->ev_slot[type] = e;
		s->ev_used[type] = true;
		return KVS_OK;
	}
	return ev_push_heap(s, e);
}

/* The next event (NULL when none); *slot: its slot, or -1 for the heap's */
static const event *ev_next(const kvs_sim *s, int *slot)
{
	const event *m = s->nev ? &s->ev[0] : NULL;
	int w = -1;
	for (int i = 0; i < 2; i++)
		if (s->ev_used[i] && (!m || ev_less(&s->ev_slot[i], m))) {
			m = &s->ev_slot[i];
			w = i;
		}
	*slot = w;
	return m;
}

/* Remove and return the next event, found by ev_next (its slot w) */
static event ev_take(kvs_sim *s, int w)
{
	if (w >= 0) {
		s->ev_used[w] = false;
		return s->ev_slot[w];
	}
	return evh_pop(s->ev, &s->nev);
}

/* ---- decode heap ------------------------------------------------------------
 * The decode queue's far part: events DQ_W or more steps ahead when
 * pushed (the near ring holds the rest).  Keys live in the entries, so
 * sifting never touches the requests.  Removal of an arbitrary sequence
 * (a preemption victim) scans for it: O(n), and rare. */

static bool dh_less(const dh_ent *a, const dh_ent *b)
{
	return a->E < b->E || (a->E == b->E && a->order < b->order);
}

KVS_HEAP_DEFINE(dhh, dh_ent, dh_less)

/* Steps of the ring of pending final partial crossings (a power of two):
 * a span through block crossings is at most this long. */
#define PF_W 4096

/* A step's pending final partial crossings, in the ring: slot
 * step mod PF_W holds the tokens past final lengths of those of its step
 * in the window lz_done .. lz_done + PF_W - 1; pf_advance clears the
 * slots of the steps it takes, so every other slot reads 0 (4 bytes a
 * step, 16 KiB: the ring is read at every step of a span through
 * crossings, and written at a random step ahead per lazy sequence) */
static inline uint64_t pf_at(const kvs_sim *s, uint64_t t)
{
	return s->pf_ring[t & (PF_W - 1)];
}

static inline void pf_add(kvs_sim *s, uint64_t t, uint32_t def)
{
	s->pf_ring[t & (PF_W - 1)] += def;
}

/* A sequence keyed by a step: a pending final partial crossing PF_W or
 * more steps ahead (s->pf, a heap), or the step past which its block
 * table grows (s->tg, a list). */
typedef struct pf_ent {
	uint64_t step;
	struct sreq *r;
} pf_ent;

static bool pf_less(const pf_ent *a, const pf_ent *b)
{
	return a->step < b->step;
}

KVS_HEAP_DEFINE(pfh, pf_ent, pf_less)

/* r's entry leaves heap h (found by a scan: only for a sequence leaving
 * early, and the heap holds a few dozen) */
static void pfh_remove_seq(pf_ent *h, size_t *n, const struct sreq *r)
{
	for (size_t i = 0; i < *n; i++)
		if (h[i].r == r) {
			pfh_remove_at(h, n, i);
			return;
		}
}

/* ---- the near ring's occupancy bits ------------------------------------------ */

static inline bool ring_has(const kvs_sim *s, unsigned b)
{
	return s->ring_bits[b >> 6] >> (b & 63) & 1;
}

static inline void ring_set(kvs_sim *s, unsigned b)
{
	s->ring_bits[b >> 6] |= 1ull << (b & 63);
	s->ring_sum |= 1ull << (b >> 6);
}

static inline void ring_clear(kvs_sim *s, unsigned b)
{
	if (!(s->ring_bits[b >> 6] &= ~(1ull << (b & 63))))
		s->ring_sum &= ~(1ull << (b >> 6));
}

/* The first occupied bucket at or after bucket g, going round (some
 * bucket is occupied): the rest of g's word, then the words after it,
 * and last the part of g's word below g, the farthest steps. */
static unsigned ring_first(const kvs_sim *s, unsigned g)
{
	unsigned w = g >> 6;
	uint64_t m = s->ring_bits[w] & (~0ull << (g & 63));
	if (m)
		return (w << 6) + (unsigned)__builtin_ctzll(m);
	unsigned sh = (w + 1) & 63;
	uint64_t rot = sh ? (s->ring_sum >> sh) | (s->ring_sum << (64 - sh)) : s->ring_sum;
	unsigned wi = (w + 1 + (unsigned)__builtin_ctzll(rot)) & 63;
	return (wi << 6) + (unsigned)__builtin_ctzll(s->ring_bits[wi]);
}

/* The next occupied bucket after b in index order, or DQ_W (for walks
 * over every occupied bucket) */
static unsigned ring_next(const kvs_sim *s, unsigned b)
{
	unsigned w = (b + 1) >> 6;
	if (w >= DQ_W / 64)
		return DQ_W;
	uint64_t m = s->ring_bits[w] & (~0ull << ((b + 1) & 63));
	if (m)
		return (w << 6) + (unsigned)__builtin_ctzll(m);
	uint64_t rest = w + 1 < 64 ? s->ring_sum & (~0ull << (w + 1)) : 0;
	if (!rest)
		return DQ_W;
	unsigned wi = (unsigned)__builtin_ctzll(rest);
	return (wi << 6) + (unsigned)__builtin_ctzll(s->ring_bits[wi]);
}

#define RING_FOR_EACH(s, b) \
	for (unsigned b = ring_has(s, 0) ? 0 : ring_next(s, 0); b < DQ_W; b = ring_next(s, b))

/* The context a decode of r reads on the windowed layers, as the step
 * time charges it (kvs_cost_decode_window: its window, or its final length
 * when shorter; under chunked attention the mean of its decode steps'),
 * the same from its first decode to its finish so that the sum over the
 * decode queue is kept as it is. */
static inline uint64_t win_ctx(const kvs_sim *s, const sreq *r)
{
	return kvs_cost_decode_window(&s->cost, r->prompt, (uint64_t)r->prompt + r->out_eff);
}

static kvs_status dh_push(kvs_sim *s, sreq *r)
{
	if (r->E >= s->G && r->E - s->G < DQ_W) {
		/* the near ring: O(1), keyed by E alone (order is restored
		 * when a bucket falls due) */
		unsigned b = (unsigned)(r->E & (DQ_W - 1));
		r->dq_next = s->ring[b];
		s->ring[b] = r;
		ring_set(s, b);
		s->nring++;
		r->in_ring = true;
		goto accounted;
	}
	r->in_ring = false;
	if (!KVS_ARRAY_RESERVE(s->heap, s->capheap, s->nheap + 1, 64))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (decode heap)");
	dhh_push(s->heap, &s->nheap, (dh_ent){ r->E, r->order, r });
accounted:
	s->ndec += r->nlive;
	s->sumS += (uint64_t)r->nlive * r->S;
	s->dec_len_sum += (uint64_t)r->nlive * r->len;
	if (KVS_UNLIKELY(s->cost.window))
		s->dec_win_sum += (uint64_t)r->nlive * win_ctx(s, r);
	return KVS_OK;
}

/* ---- crossing classes ------------------------------------------------------- */

static void lz_register(kvs_sim *s, sreq *r, uint32_t res)
{
	r->lazy = true;
	r->lz_res = res;
	if (s->lz_cnt[res]++ == 0)
		s->lz_bits[res >> 6] |= 1ull << (res & 63);
	s->nlazy++;
}

static void pf_drop(kvs_sim *s, sreq *r);
static void tg_drop(kvs_sim *s, sreq *r);
static uint64_t lz_table_step(const kvs_sim *s, const sreq *r);

/* x / block_size, x % block_size and the quotient rounded up: a shift
 * and a mask at a power-of-two block size (every size vLLM offers), the
 * steps' and lengths' divisions otherwise (a 64-bit division costs tens
 * of cycles, and the span and crossing paths take several per step). */
static inline uint64_t bs_div(const kvs_sim *s, uint64_t x)
{
	return kvs_div_p2(x, s->block_size, s->bs_shift, s->bs_pow2);
}

static inline uint32_t bs_mod(const kvs_sim *s, uint64_t x)
{
	return (uint32_t)kvs_mod_p2(x, s->block_size, s->bs_pow2);
}

static inline uint64_t bs_ceil(const kvs_sim *s, uint64_t x)
{
	return kvs_div_ceil_p2(x, s->block_size, s->bs_shift, s->bs_pow2);
}

static void lz_unregister(kvs_sim *s, sreq *r)
{
	uint32_t res = r->lz_res;
	r->lazy = false;
	/* a final partial crossing still pending goes with the class; an
	 * owed one stays until the sync that hands its block over */
	if (r->pf_def && r->pf_step >= s->lz_done)
		pf_drop(s, r);
	if (r->tg_in)
		tg_drop(s, r);
	if (--s->lz_cnt[res] == 0)
		s->lz_bits[res >> 6] &= ~(1ull << (res & 63));
	s->nlazy--;
}

/* The first step >= from at which a lazy sequence crosses a block
 * (UINT64_MAX when none is lazy). */
static uint64_t lz_next(const kvs_sim *s, uint64_t from)
{
	if (!s->nlazy)
		return UINT64_MAX;
	uint32_t bs = s->block_size;
	uint32_t r0 = bs_mod(s, from);
	/* classes r0 .. bs - 1, then 0 .. r0 - 1 */
	uint32_t w = r0 >> 6;
	uint64_t m = s->lz_bits[w] & (~0ull << (r0 & 63));
	for (uint32_t i = 0; i <= s->lz_words; i++) {
		if (m) {
			uint32_t c = (w << 6) + (uint32_t)__builtin_ctzll(m);
			return from + (c >= r0 ? c - r0 : c + bs - r0);
		}
		w = w + 1 == s->lz_words ? 0 : w + 1;
		m = s->lz_bits[w];
	}
	kvs_require(false);   /* nlazy > 0: some class is occupied */
	return UINT64_MAX;
}

/* Bytes of the owed blocks below their sequences' final lengths, so
 * reservation to the account (the allocator counts a taken block as
 * internal fragmentation): whole blocks, less the parts of final partial
 * blocks past the final length, which stay internal fragmentation. */
static int64_t lz_owed_bytes(const kvs_sim *s)
{
	return (int64_t)(((uint64_t)s->nowed * s->block_size - s->frag_owed) * s->kvb);
}

/* r's pending final partial crossing is withdrawn (only a preempted lazy
 * sequence's) */
static void pf_drop(kvs_sim *s, sreq *r)
{
	if (!r->pf_far)
		s->pf_ring[r->pf_step & (PF_W - 1)] -= r->pf_def;
	else
		pfh_remove_seq(s->pf, &s->npf, r);
	r->pf_def = 0;
}

/* Far pending crossings that came within PF_W steps of to (lz_done) move
 * to the ring; any before it are owed */
static void pf_migrate(kvs_sim *s, uint64_t to)
{
	while (s->npf && s->pf[0].step < to + PF_W) {
		pf_ent e = pfh_pop(s->pf, &s->npf);
		kvs_require(e.r->lazy && e.r->pf_def && e.r->pf_far && e.r->pf_step == e.step);
		e.r->pf_far = false;
		if (e.step < to)
			s->frag_owed += e.r->pf_def;
		else
			pf_add(s, e.step, e.r->pf_def);
	}
}

/* The crossings of steps < to are taken (lz_done = to): the pending final
 * partial crossings among them are owed now, their slots cleared, and far
 * ones that come within PF_W steps move to the ring. */
static inline void pf_advance(kvs_sim *s, uint64_t to)
{
	uint64_t from = s->lz_done;
	s->lz_done = to;
	if (s->pf_ring) {
		if (to - from > PF_W)
			from = to - PF_W;
		for (uint64_t t = from; t < to; t++) {
			uint32_t *sl = &s->pf_ring[t & (PF_W - 1)];
			s->frag_owed += *sl;
			*sl = 0;
		}
	}
	if (KVS_UNLIKELY(s->npf && s->pf[0].step < to + PF_W))
		pf_migrate(s, to);
}

static inline void dh_unaccount(kvs_sim *s, sreq *r)
{
	s->ndec -= r->nlive;
	s->sumS -= (uint64_t)r->nlive * r->S;
	s->dec_len_sum -= (uint64_t)r->nlive * r->len;
	if (KVS_UNLIKELY(s->cost.window))
		s->dec_win_sum -= (uint64_t)r->nlive * win_ctx(s, r);
	if (r->lazy)
		lz_unregister(s, r);
}

/* Decoding requests queued (ring and heap). */
static size_t dq_count(const kvs_sim *s)
{
	return s->nheap + s->nring;
}

/* The smallest E queued (UINT64_MAX when none).  Every ring entry has E in
 * [G, G + DQ_W): pushed so, and G never passes the smallest E. */
static inline uint64_t dq_min(const kvs_sim *s)
{
	uint64_t m = s->nheap ? s->heap[0].E : UINT64_MAX;
	if (s->ring_sum) {
		unsigned g = (unsigned)(s->G & (DQ_W - 1));
		uint64_t e = s->G + ((ring_first(s, g) - g) & (DQ_W - 1));
		if (e < m)
			m = e;
	}
	return m;
}

static sreq *dh_pop(kvs_sim *s)
{
	sreq *r = dhh_pop(s->heap, &s->nheap).r;
	dh_unaccount(s, r);
	return r;
}

static void dh_remove(kvs_sim *s, sreq *r)
{
	if (r->in_ring) {
		unsigned b = (unsigned)(r->E & (DQ_W - 1));
		sreq **pp = &s->ring[b];
		while (*pp && *pp != r)
			pp = &(*pp)->dq_next;
		kvs_require(*pp == r);
		*pp = r->dq_next;
		if (!s->ring[b])
			ring_clear(s, b);
		s->nring--;
		r->in_ring = false;
		dh_unaccount(s, r);
		return;
	}
	size_t i = 0;
	while (i < s->nheap && s->heap[i].r != r)
		i++;
	kvs_require(i < s->nheap);
	dh_unaccount(s, r);
	dhh_remove_at(s->heap, &s->nheap, i);
}

/* ---- running list ---------------------------------------------------------- */

/* Running counts sequences: a family holds n of the max_num_seqs slots
 * from its admission (as vLLM's scheduler budgets a sequence group). */
static void run_append(kvs_sim *s, sreq *r)
{
	r->order = s->next_order++;
	r->prev = s->run_tail;
	r->next = NULL;
	if (s->run_tail)
		s->run_tail->next = r;
	else
		s->run_head = r;
	s->run_tail = r;
	s->nrunning += r->n;
}

static void run_remove(kvs_sim *s, sreq *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		s->run_head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		s->run_tail = r->prev;
	r->prev = r->next = NULL;
	s->nrunning -= r->n;
}

static kvs_status prefill_add(kvs_sim *s, sreq *r)
{
	if (!KVS_ARRAY_RESERVE(s->prefill, s->capprefill, s->nprefill + 1, 16))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (prefill list)");
	s->prefill[s->nprefill++] = r;
	return KVS_OK;
}

/* Back into the prefill list at its admission rank (a family whose
 * samples recompute their own tokens after the fork). */
static kvs_status prefill_insert_ordered(kvs_sim *s, sreq *r)
{
	kvs_status st = prefill_add(s, r);
	if (st != KVS_OK)
		return st;
	size_t i = s->nprefill - 1;
	while (i > 0 && s->prefill[i - 1]->order > r->order) {
		s->prefill[i] = s->prefill[i - 1];
		i--;
	}
	s->prefill[i] = r;
	return KVS_OK;
}

static kvs_status forkq_add(kvs_sim *s, sreq *r)
{
	if (!KVS_ARRAY_RESERVE(s->forkq, s->capforkq, s->nforkq + 1, 8))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (fork queue)");
	s->forkq[s->nforkq++] = r;
	return KVS_OK;
}

/* Remove r from the fork queue if it is there. */
static void forkq_remove(kvs_sim *s, const sreq *r)
{
	for (size_t i = 0; i < s->nforkq; i++)
		if (s->forkq[i] == r) {
			memmove(&s->forkq[i], &s->forkq[i + 1],
				(s->nforkq - i - 1) * sizeof *s->forkq);
			s->nforkq--;
			return;
		}
}

static void prefill_remove(kvs_sim *s, sreq *r)
{
	for (size_t i = 0; i < s->nprefill; i++)
		if (s->prefill[i] == r) {
			memmove(&s->prefill[i], &s->prefill[i + 1],
				(s->nprefill - i - 1) * sizeof *s->prefill);
			s->nprefill--;
			return;
		}
	kvs_require(!"sequence not in the prefill list");
}

/* ---- helpers --------------------------------------------------------------- */

static void sreq_free(sreq *r)
{
	if (r) {
		kvs_free(r->hashes);
		kvs_free(r);
	}
}

/* A finished request's struct kept for the next arrival (an allocation
 * and a free less per request); its hash ids are freed. */
enum { SPARE_MAX = 64 };

static void sreq_recycle(kvs_sim *s, sreq *r)
{
	if (s->nspare == SPARE_MAX) {
		sreq_free(r);
		return;
	}
	kvs_free(r->hashes);
	r->hashes = NULL;
	r->next = s->spare;
	s->spare = r;
	s->nspare++;
}

/* A zeroed struct: a spare, else a new one (NULL when out of memory). */
static sreq *sreq_new(kvs_sim *s)
{
	sreq *r = s->spare;
	if (!r)
		return kvs_calloc(1, sizeof *r);
	s->spare = r->next;
	s->nspare--;
	memset(r, 0, sizeof *r);
	return r;
}

/* Tokens a sequence of r stores by the end: the prompt and every emitted
 * token but the last, whose KV is never written (docs/MEMORY-ACCOUNTING.md,
 * "final length"). */
static uint32_t final_len(const sreq *r)
{
	return r->prompt + r->out_eff - 1;
}

/* What the allocator is told at admission: the tokens to prefill now
 * (target) and those the sequence will still store after them, so that
 * prompt_tokens + output_tokens is its exact final length. */
static void block_hashes_of(kvs_sim *s, const sreq *r, const uint64_t **ids,
			    uint32_t *n);

static inline void desc_of(kvs_sim *s, const sreq *r, kvs_seq_desc *d)
{
	d->seq = r->seq;
	d->prompt_tokens = r->target;
	d->output_tokens = final_len(r) - r->target;
	block_hashes_of(s, r, &d->block_hashes, &d->num_block_hashes);
}

static kvs_seq_id member(const sreq *r, uint32_t i)
{
	return r->seq + i;
}

/* Release every registered member (finished, preempted by recompute,
 * rejected after admission). */
static kvs_status release_family(kvs_sim *s, sreq *r)
{
	for (uint32_t i = 0; i < r->nreg; i++) {
		kvs_status st = kvs_alloc_release(s->alloc, member(r, i));
		if (st != KVS_OK)
			return st;
	}
	if (r->nlive > 1)
		s->nforked--;
	s->releases++;
	r->nreg = 0;
	r->nlive = 1;
	r->unshared = false;
	s->dirty = true;
	return KVS_OK;
}

/* Tokens a family can grow by without new memory: the least of its live
 * members' rooms (equal in lockstep, except right after a fork, when the
 * shared last block must be copied first). */
static uint32_t family_room(const kvs_sim *s, const sreq *r)
{
	uint32_t room = kvs_alloc_room(s->alloc, r->seq);
	for (uint32_t i = 1; i < r->nlive && room; i++) {
		uint32_t x = kvs_alloc_room(s->alloc, member(r, i));
		if (x < room)
			room = x;
	}
	return room;
}

static void emit_record(kvs_sim *s, const sreq *r, kvs_sim_outcome outcome,
			kvs_sim_reject reason, double finish)
{
	if (s->inflight)
		s->inflight--;        /* the request leaves: a client slot frees */
	if (!s->cfg.on_request)
		return;
	kvs_sim_request_record rec = {
		.index = r->index,
		.line = r->line,
		.outcome = outcome,
		.reason = reason,
		.arrival_s = r->arrival,
		.admitted_s = r->admitted_once ? r->admitted : -1.0,
		.first_token_s = r->first_token,
		.finish_s = finish,
		.prompt_tokens = r->prompt,
		.output_tokens = r->output,
		.cached_tokens = r->cached_first,
		.preemptions = r->preemptions,
		.num_samples = r->n,
	};
	s->cfg.on_request(s->cfg.on_request_ctx, &rec);
}

static void kv_tell(kvs_sim *s, int what, sreq *r, uint32_t kv_tokens);

static void reject(kvs_sim *s, sreq *r, kvs_sim_reject why)
{
	if (r->kv_remote && s->cfg.on_kv)
		kv_tell(s, KVS_SIM_KV_REJECTED, r, 0);   /* its sender frees the KV */
	s->res->st.rejected++;
	s->res->st.rejected_by[why]++;
	emit_record(s, r, KVS_SIM_REJECTED, why, -1.0);
	sreq_free(r);
}

static void free_dead(kvs_sim *s)
{
	while (s->dead) {
		sreq *r = s->dead;
		s->dead = r->next;
		sreq_free(r);
	}
}

/* ---- memory parts ----------------------------------------------------------- */

/* Tokens written but not yet told to the allocator, during step G. */
static uint64_t lag_tokens(const kvs_sim *s)
{
	return s->ndec * (s->G + !s->prompt_step) - s->sumS;
}

static void parts_now(kvs_sim *s, int64_t out[6])
{
	const sreq *head = deque_front(&s->waiting);
	if (s->dirty || head != s->raw_head) {
		kvs_seq_desc d, *dp = NULL;
		if (head) {
			desc_of(s, head, &d);
			dp = &d;
		}
		kvs_alloc_account(s->alloc, dp, &s->raw);
		s->synced = 0;
		s->dirty = false;
		s->raw_head = head;
	}
	int64_t shift = (int64_t)((s->synced + lag_tokens(s)) * s->kvb);
	out[0] = (int64_t)s->raw.token_states + shift;
	int64_t owed = lz_owed_bytes(s);
	out[1] = (int64_t)s->raw.reservation - shift + owed;
	out[2] = (int64_t)s->raw.internal_frag - owed;
	out[3] = (int64_t)s->raw.external_frag;
	out[4] = (int64_t)s->raw.cached_idle;
	out[5] = (int64_t)s->raw.free;
}

static void pct_of(const kvs_sim *s, const double bytes[6], kvs_sim_mem_pct *p)
{
	double b = (double)s->budget;
	p->token_states = 100.0 * bytes[0] / b;
	p->reservation = 100.0 * bytes[1] / b;
	p->internal_frag = 100.0 * bytes[2] / b;
	p->external_frag = 100.0 * bytes[3] / b;
	p->cached_idle = 100.0 * bytes[4] / b;
	p->free = 100.0 * bytes[5] / b;
}

/* ---- time integration and samples ------------------------------------------ */

static kvs_status add_sample(kvs_sim *s, double t, const double bytes[6])
{
	kvs_sim_result *R = s->res;
	if (R->nsamples == s->capsamples) {
		if (R->nsamples >= (s->auto_interval ? 4096u : KVS_SIM_SAMPLES_MAX)) {
			/* keep every other sample and double the spacing */
			size_t n = 0;
			for (size_t i = 0; i < R->nsamples; i += 2)
				R->samples[n++] = R->samples[i];
			R->nsamples = n;
			R->sample_interval_s *= 2;
			s->next_sample_t = R->samples[n - 1].t_s + R->sample_interval_s;
			if (t < s->next_sample_t - R->sample_interval_s * 1e-9)
				return KVS_OK;
		} else if (!KVS_ARRAY_RESERVE(R->samples, s->capsamples,
					      R->nsamples + 1, 256)) {
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (time series)");
		}
	}
	kvs_sim_sample *sm = &R->samples[R->nsamples++];
	sm->t_s = t;
	pct_of(s, bytes, &sm->mem);
	sm->running = s->nrunning;
	sm->waiting = s->waiting.n + s->swapped.n;
	kvs_alloc_stats as;
	kvs_alloc_get_stats(s->alloc, &as);
	if (as.metadata_bytes > R->st.metadata_bytes_max)
		R->st.metadata_bytes_max = as.metadata_bytes;
	return KVS_OK;
}

/* Account for [t0, t0 + dur): a span of k steps with lines L (parts grow by
 * `slope` tokens per step; dur and S1 are kvs_lin2_sums over [0, k)), or a
 * constant gap when L is NULL (S1 = 0); x: the lazy crossings inside the
 * span, when it runs through them. */
static kvs_status lz_sync_all(kvs_sim *s);

static kvs_status integrate_from(kvs_sim *s, const int64_t now[6], double t0,
				 double dur, double S1, const kvs_lin2 *L, uint64_t k,
				 uint64_t slope, const span_cross *x)
{
	if (!(dur > 0))
		return KVS_OK;
	int64_t own[6];
	const int64_t *p = now;
	if (!p) {
		parts_now(s, own);
		p = own;
	}
	double S0 = dur;
	double d = (double)(slope * s->kvb);
	double *mi = s->mem_int;
	mi[0] += (double)p[0] * S0;
	mi[1] += (double)p[1] * S0;
	mi[2] += (double)p[2] * S0;
	mi[3] += (double)p[3] * S0;
	mi[4] += (double)p[4] * S0;
	mi[5] += (double)p[5] * S0;
	s->mem_int[0] += d * S1;
	if (x && x->n) {
		/* the tokens' shift and the crossings' blocks in one sum of
		 * exact per-step changes (at block size 1 they cancel) */
		s->mem_int[1] += x->res_bs;
		s->mem_int[2] += x->frag_bs;
		s->mem_int[5] -= x->taken_bs;
	} else {
		s->mem_int[1] -= d * S1;
	}
	s->time_total += S0;
	s->conc_time[s->nrunning] += S0;
	s->waiting_int += (double)(s->waiting.n + s->swapped.n) * S0;
	if (s->next_sample_t < t0 + dur) {
		kvs_status st = lz_sync_all(s);
		if (st != KVS_OK)
			return st;
	}
	while (s->next_sample_t < t0 + dur) {
		double t = s->next_sample_t;
		uint64_t j = 0;
		if (L && t > t0)
			j = kvs_lin2_step_at(L, k, t - t0);
		double b[6];
		for (int i = 0; i < 6; i++)
			b[i] = (double)p[i];
		b[0] += d * (double)j;
		b[1] -= d * (double)j;
		kvs_status st = add_sample(s, t, b);
		if (st != KVS_OK)
			return st;
		if (s->next_sample_t == t)
			s->next_sample_t = t + s->res->sample_interval_s;
	}
	return KVS_OK;
}

/* The parts now (parts_now) into p, and the peak updated. */
static inline void track_peak_parts(kvs_sim *s, int64_t p[6])
{
	parts_now(s, p);
	uint64_t held = (uint64_t)(p[0] + p[1] + p[2]);
	if (held > s->held_peak || s->held_peak == 0) {
		double b[6];
		for (int i = 0; i < 6; i++)
			b[i] = (double)p[i];
		s->held_peak = held;
		pct_of(s, b, &s->res->st.memory_peak_pct);
		s->res->st.peak_time_s = s->now;
	}
}

static void track_peak(kvs_sim *s)
{
	int64_t p[6];
	track_peak_parts(s, p);
}

static kvs_status integrate(kvs_sim *s, double t0, double dur,
			    const kvs_lin2 *L, uint64_t k, uint64_t slope)
{
	return integrate_from(s, NULL, t0, dur, 0, L, k, slope, NULL);
}

/* ---- debug validation -------------------------------------------------------- */

static kvs_status sync_decode(kvs_sim *s, sreq *r, uint64_t to_step);

/* Sums over the decode queue's entries (heap and ring) that the engine
 * keeps as aggregates, or that other structures must match. */
typedef struct queue_tally {
	uint64_t ndec, sumS, lens, wins;          /* decoding sequences */
	uint64_t nlazy, owed, ntg;                /* crossing classes */
	uint64_t pending_far, pending_ring, frag; /* final partial crossings */
} queue_tally;

/* One queued request's own checks, and its part of the tally t */
static bool queued_is_valid(const kvs_sim *s, const sreq *r, queue_tally *t)
{
	t->ndec += r->nlive;
	t->sumS += (uint64_t)r->nlive * r->S;
	t->lens += (uint64_t)r->nlive * r->len;
	t->wins += (uint64_t)r->nlive * win_ctx(s, r);
	KVS_VALID(r->lazy || !r->pf_def);
	KVS_VALID(r->lazy || !r->tg_in);
	if (!r->lazy)
		return true;
	/* in the table-growth list when its table grows before E */
	KVS_VALID(r->tcap == kvs_alloc_table_capacity(s->alloc, r->seq));
	KVS_VALID(r->tg_in || lz_table_step(s, r) >= r->E);
	t->ntg += r->tg_in;
	if (r->pf_def) {
		/* its final partial crossing: pending (in the heap) or owed */
		KVS_VALID(r->pf_def < s->block_size && r->pf_step < r->E &&
			  r->pf_step % s->block_size == r->lz_res);
		if (r->pf_step >= s->lz_done && r->pf_far)
			t->pending_far++;
		else if (r->pf_step >= s->lz_done)
			t->pending_ring += r->pf_def;
		else
			t->frag += r->pf_def;
		KVS_VALID(!r->pf_far || r->pf_step >= s->lz_done + PF_W);
		KVS_VALID(r->pf_far || r->pf_step < s->lz_done + PF_W);
	}
	KVS_VALID(s->lazy_ok && r->nlive == 1 && r->lz_res < s->block_size);
	KVS_VALID(s->lz_cnt[r->lz_res] > 0);
	t->nlazy++;
	/* the owed blocks are those of its crossings before lz_done */
	uint64_t len = r->len + (s->lz_done > r->S ? s->lz_done - r->S : 0);
	if (len > r->cap)
		t->owed += kvs_div_ceil(len - r->cap, s->block_size);
	return true;
}

/* debug_checks >= 3: the whole engine state against itself, O(requests in
 * flight) per step: both heaps ordered, decode entries keyed by their
 * requests, the decode ring's buckets and occupancy bits consistent, the lazy decode aggregates equal to their sums recomputed, the
 * running list linked both ways in admission order and its sequence count
 * equal to nrunning. */
static bool engine_is_valid(const kvs_sim *s)
{
	KVS_VALID(evh_is_valid(s->ev, s->nev));
	KVS_VALID(dhh_is_valid(s->heap, s->nheap));
	queue_tally t = { 0 };
	for (size_t i = 0; i < s->nheap; i++) {
		const sreq *r = s->heap[i].r;
		KVS_VALID(s->heap[i].E == r->E);
		KVS_VALID(s->heap[i].order == r->order);
		KVS_VALID(!r->in_ring);
		KVS_VALID(queued_is_valid(s, r, &t));
	}
	size_t nring = 0;
	for (unsigned w = 0; w < DQ_W / 64; w++)
		KVS_VALID(!s->ring_bits[w] == !(s->ring_sum >> w & 1));
	for (unsigned b = 0; b < DQ_W; b++) {
		KVS_VALID(!s->ring[b] == !ring_has(s, b));
		for (const sreq *r = s->ring[b]; r; r = r->dq_next) {
			KVS_VALID(r->in_ring && (r->E & (DQ_W - 1)) == b);
			KVS_VALID(queued_is_valid(s, r, &t));
			nring++;
		}
	}
	KVS_VALID(nring == s->nring);
	/* crossing classes: every lazy entry counted in its class, and the
	 * owed blocks those of their crossings before lz_done */
	KVS_VALID(t.nlazy == s->nlazy);
	KVS_VALID(t.owed == s->nowed);
	KVS_VALID(t.pending_far == s->npf && t.frag == s->frag_owed);
	KVS_VALID(t.ntg == s->ntg);
	for (size_t i = 0; i < s->ntg; i++)
		KVS_VALID(s->tg[i].r->lazy && s->tg[i].r->tg_in && s->tg[i].r->tg_idx == i &&
			  s->tg[i].step <= lz_table_step(s, s->tg[i].r));
	KVS_VALID(pfh_is_valid(s->pf, s->npf));
	for (size_t i = 0; i < s->npf; i++)
		KVS_VALID(s->pf[i].r->lazy && s->pf[i].r->pf_def && s->pf[i].r->pf_far &&
			  s->pf[i].r->pf_step == s->pf[i].step);
	uint64_t ring = 0;
	for (uint32_t i = 0; s->pf_ring && i < PF_W; i++)
		ring += s->pf_ring[i];
	KVS_VALID(ring == t.pending_ring);
	if (s->lazy_ok) {
		uint64_t sum = 0;
		for (uint32_t c = 0; c < s->block_size; c++) {
			KVS_VALID(!s->lz_cnt[c] == !(s->lz_bits[c >> 6] & (1ull << (c & 63))));
			sum += s->lz_cnt[c];
		}
		KVS_VALID(sum == s->nlazy);
	}
	KVS_VALID(t.ndec == s->ndec);
	KVS_VALID(t.sumS == s->sumS);
	KVS_VALID(t.lens == s->dec_len_sum);
	KVS_VALID(t.wins == s->dec_win_sum);
	uint64_t seqs = 0;
	const sreq *prev = NULL;
	for (const sreq *r = s->run_head; r; r = r->next) {
		KVS_VALID(r->prev == prev);
		KVS_VALID(!prev || prev->order < r->order);
		seqs += r->n;
		prev = r;
	}
	KVS_VALID(prev == s->run_tail);
	KVS_VALID(seqs == s->nrunning);
	return true;
}


#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			return kvs_fail(KVS_ERR_STATE, "engine validator at step " \
					"%llu: %s", (unsigned long long)s->G, #cond); \
	} while (0)

/* Validator, one queued decoding request: sync it to G, check its counts. */
static kvs_status check_queued(kvs_sim *s, sreq *r)
{
	if (r->S <= s->G) {
		kvs_status st = sync_decode(s, r, s->G);
		if (st != KVS_OK)
			return st;
		if (r->lazy)   /* the table may have grown */
			r->tcap = kvs_alloc_table_capacity(s->alloc, r->seq);
	}
	CHECK(r->gen <= r->out_eff);
	CHECK(r->len <= final_len(r) + 1);
	return KVS_OK;
}

/* The engine's validator (debug_checks >= 2, or cfg.validate): KVS_OK, or
 * KVS_ERR_STATE naming the first check that failed. */
static kvs_status debug_check(kvs_sim *s)
{
	/* tell the allocator every length, then compare our shifted parts
	 * with a fresh account */
	for (size_t i = 0; i < s->nheap; i++) {
		sreq *r = s->heap[i].r;
		CHECK(!r->in_ring);
		kvs_status st = check_queued(s, r);
		if (st != KVS_OK)
			return st;
	}
	RING_FOR_EACH(s, b) {
		CHECK(s->ring[b] != NULL);
		for (sreq *r = s->ring[b]; r; r = r->dq_next) {
			CHECK(r->in_ring && (r->E & (DQ_W - 1)) == b &&
			      r->E >= s->G && r->E - s->G < DQ_W);
			kvs_status st = check_queued(s, r);
			if (st != KVS_OK)
				return st;
		}
	}
	int64_t ours[6];
	parts_now(s, ours);
	kvs_mem_parts fresh;
	kvs_seq_desc d, *dp = NULL;
	if (deque_front(&s->waiting)) {
		desc_of(s, deque_front(&s->waiting), &d);
		dp = &d;
	}
	CHECK(kvs_alloc_is_valid(s->alloc));
	kvs_alloc_account(s->alloc, dp, &fresh);
	uint64_t sum = fresh.token_states + fresh.reservation + fresh.internal_frag +
		       fresh.external_frag + fresh.cached_idle + fresh.free;
	CHECK(sum == s->budget);
	/* the lag of step G (its own token, for sequences synced to G) */
	int64_t lag = (int64_t)(lag_tokens(s) * s->kvb);
	/* and the owed blocks of lazy crossings, which the allocator counts
	 * as taken (internal fragmentation): reservation, but for the parts
	 * of final blocks past their final lengths */
	int64_t owed = lz_owed_bytes(s);
	CHECK(ours[0] == (int64_t)fresh.token_states + lag);
	CHECK(ours[1] == (int64_t)fresh.reservation - lag + owed);
	CHECK(ours[1] >= 0);
	CHECK(ours[2] == (int64_t)fresh.internal_frag - owed);
	CHECK(ours[3] == (int64_t)fresh.external_frag);
	CHECK(ours[4] == (int64_t)fresh.cached_idle);
	CHECK(ours[5] == (int64_t)fresh.free);
	CHECK(s->nrunning <= s->cfg.max_num_seqs);
	/* a preempted victim goes to the front: the first few are checked
	 * (the whole queue would cost O(waiting) per step) */
	for (size_t i = 0; i < s->waiting.n && i < 4; i++) {
		const sreq *r = s->waiting.v[(s->waiting.head + i) % s->waiting.cap];
		CHECK(r->target <= final_len(r));   /* never past its final length */
		CHECK(r->gen < r->out_eff);
	}
	CHECK(!dq_count(s) || dq_min(s) >= s->G);
	if (KVS_DEBUG >= 3 && !engine_is_valid(s))
		return kvs_fail_wrap(KVS_ERR_STATE, "engine validator at step %llu",
				     (unsigned long long)s->G);
	return KVS_OK;
}

#undef CHECK

/* ---- scheduling policy (vLLM's --scheduling-policy) -------------------------
 * fcfs: arrivals at the back of the waiting queue, preempted requests at
 * its front, the most recently admitted running request the victim.
 * priority: the queue ordered by (priority, arrival), a preempted request
 * reinserted by its key, the victim the running request with the largest
 * key (the first of equals in admission order), as vLLM's scheduler. */

static bool sched_after(const sreq *a, const sreq *b)
{
	return a->priority != b->priority ? a->priority > b->priority
					  : a->arrival > b->arrival;
}

/* r into the waiting queue; front: a preempted (or swapped-out) request */
static bool waiting_add(kvs_sim *s, sreq *r, bool front)
{
	if (s->cfg.scheduling_policy == KVS_SCHED_PRIORITY)
		return deque_insert_sorted(&s->waiting, r, sched_after);
	return front ? deque_push_front(&s->waiting, r) : deque_push_back(&s->waiting, r);
}

/* The running request to preempt when memory runs out.  Under priority
 * O(running) (running <= max_num_seqs), and a request already holding a
 * prefill chunk of the step being planned is passed over (its chunk is in
 * the step's cost); the request growing never holds one yet, so there is
 * always a victim. */
static sreq *victim(const kvs_sim *s)
{
	if (s->cfg.scheduling_policy != KVS_SCHED_PRIORITY)
		return s->run_tail;
	sreq *v = NULL;
	for (sreq *r = s->run_head; r; r = r->next)
		if (!r->in_step && (!v || sched_after(r, v)))
			v = r;
	return v;
}

/* ---- request intake ------------------------------------------------------- */

/* Ids a request's hashes may keep: the longest prefix of distinct ids.  A
 * chained id names its whole prefix, so an id repeated within one prompt
 * breaks the chain rule (docs/TRACE-FORMAT.md); the blocks from the repeat
 * on are taken as the request's own (never shared), which also keeps the
 * allocator from mapping one cached block twice into one block table.
 * O(n) expected: common/table.h over slots stamped with the request (a
 * slot is empty unless its stamp is the current one), so the set is never
 * cleared between requests; the load stays at most 1/2. */
#define SEEN_IS_EMPTY(now, e) ((e)->stamp != (now))
#define SEEN_KEY(now, e) ((e)->key)
#define SEEN_SET_EMPTY(now, e) ((e)->stamp = 0)
KVS_TABLE_DEFINE(seentab, seen_slot, uint32_t, SEEN_IS_EMPTY, SEEN_KEY, SEEN_SET_EMPTY,
		 kvs_table_mixed)

static kvs_status chained_prefix(kvs_sim *s, const uint64_t *h, uint32_t n,
				 uint32_t *keep)
{
	*keep = n;
	if (n < 2)
		return KVS_OK;
	size_t before = s->seen_cap;
	if (!KVS_ARRAY_RESERVE(s->seen, s->seen_cap, 2 * (size_t)n, 64))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (hash ids)");
	/* grown (new slots hold garbage) or stamps wrapped: clear once */
	if (s->seen_cap != before || ++s->seen_now == 0) {
		memset(s->seen, 0, s->seen_cap * sizeof *s->seen);
		s->seen_now = 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t probes = 0;
		uint64_t j = seentab_probe(s->seen_now, s->seen, s->seen_cap, h[i], &probes);
		if (s->seen[j].stamp == s->seen_now) {   /* h[i] seen before */
			*keep = i;
			return KVS_OK;
		}
		s->seen[j] = (seen_slot){ h[i], s->seen_now };
	}
	return KVS_OK;
}

/* Split (or merge) a request's ids of src_block tokens to the block size,
 * into s->hash_scratch: the full blocks of its prompt.  *n ids. */
static kvs_status resplit(kvs_sim *s, const uint64_t *ids, uint32_t nids, uint32_t src_block,
			  uint32_t prompt, uint32_t *n)
{
	uint64_t cap = (uint64_t)nids * (src_block / s->block_size + 1);
	if (cap > s->hash_scratch_cap) {
		uint64_t *v = kvs_reallocarray(s->hash_scratch, cap, sizeof *v);
		if (!v)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (hash ids)");
		s->hash_scratch = v;
		s->hash_scratch_cap = cap;
	}
	*n = 0;
	kvs_status st = s->block_size < src_block
		? kvs_trace_split_hashes(ids, nids, src_block, prompt, s->block_size,
					 s->hash_scratch, n)
		: kvs_trace_merge_hashes(ids, nids, src_block, prompt, s->block_size,
					 s->hash_scratch, n);
	uint32_t full = prompt / s->block_size;
	if (*n > full)
		*n = full;
	return st;
}

/* Keep a request's hash ids at the trace's own granularity, only those its
 * prompt's full blocks use: a waiting request costs 8 bytes per source
 * block (512 tokens for Mooncake), not per block of the (maybe 1-token)
 * block size.  They are re-split when the request is described to the
 * allocator (block_hashes_of), and cut at the first repeated id
 * (chained_prefix).  Ids that cannot be re-split are refused here, naming
 * the request. */
static kvs_status copy_hashes(kvs_sim *s, sreq *r, const kvs_request *q)
{
	if (!s->cfg.enable_prefix_caching || !q->hash_ids || q->num_hash_ids == 0)
		return KVS_OK;
	uint32_t src_block = q->hash_block_tokens ? q->hash_block_tokens : s->block_size;
	uint32_t full = r->prompt / s->block_size;
	if (!full)
		return KVS_OK;
	/* source blocks the full blocks reach into */
	uint64_t need = src_block == s->block_size ? full
			: kvs_div_ceil((uint64_t)full * s->block_size, src_block);
	uint32_t n = q->num_hash_ids < need ? q->num_hash_ids : (uint32_t)need;
	uint32_t keep = n;
	kvs_status st;
	if (src_block != s->block_size) {
		uint32_t nout;
		st = resplit(s, q->hash_ids, n, src_block, r->prompt, &nout);
		if (st != KVS_OK)
			return kvs_fail_wrap(st, "request %llu (line %llu)",
					     (unsigned long long)q->index,
					     (unsigned long long)q->line);
		if ((st = chained_prefix(s, s->hash_scratch, nout, &keep)) != KVS_OK)
			return st;
		if (!keep)
			return KVS_OK;
		/* room to re-split later without allocating (block_hashes_of) */
		if (nout > s->desc_hashes_cap) {
			uint64_t *v = kvs_reallocarray(s->desc_hashes, nout, sizeof *v);
			if (!v)
				return kvs_fail(KVS_ERR_NOMEM, "out of memory (hash ids)");
			s->desc_hashes = v;
			s->desc_hashes_cap = nout;
		}
	} else {
		if ((st = chained_prefix(s, q->hash_ids, n, &keep)) != KVS_OK)
			return st;
		if (!keep)
			return KVS_OK;
		n = keep;
	}
	r->hashes = kvs_reallocarray(NULL, n, sizeof *r->hashes);
	if (!r->hashes)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (hash ids)");
	memcpy(r->hashes, q->hash_ids, n * sizeof *r->hashes);
	r->nhashes = n;
	r->hash_block = src_block;
	r->nblock_hashes = keep;
	return KVS_OK;
}

/* The ids of r's full prompt blocks at the block size, up to the first
 * repeated id.  Re-split ids live in s->desc_hashes until another request
 * is described (the same one is not re-split: the waiting head is
 * described at every accounting). */
static void block_hashes_of(kvs_sim *s, const sreq *r, const uint64_t **ids, uint32_t *n)
{
	*ids = NULL;
	*n = 0;
	if (!r->nhashes)
		return;
	if (r->hash_block == s->block_size) {
		*ids = r->hashes;
		*n = r->nhashes;
		return;
	}
	if (!s->desc_valid || s->desc_seq != r->seq) {
		/* the same split as at intake, into room reserved there: it
		 * neither fails nor allocates */
		uint32_t m = 0;
		kvs_status st = resplit(s, r->hashes, r->nhashes, r->hash_block, r->prompt, &m);
		kvs_require(st == KVS_OK && m <= s->desc_hashes_cap);
		if (m > r->nblock_hashes)
			m = r->nblock_hashes;
		memcpy(s->desc_hashes, s->hash_scratch, (size_t)m * sizeof *s->desc_hashes);
		s->desc_nhashes = m;
		s->desc_seq = r->seq;
		s->desc_valid = true;
	}
	*ids = s->desc_nhashes ? s->desc_hashes : NULL;
	*n = s->desc_nhashes;
}

/* A new request object for q, checked (arrival order, horizon); *out is
 * NULL when q arrives after the horizon (then the input ends). */
static kvs_status make_sreq(kvs_sim *s, const kvs_request *qp, sreq **out)
{
	const kvs_request q = *qp;
	kvs_status st;
	*out = NULL;
	if (!(q.arrival_s >= 0) || !isfinite(q.arrival_s))
		return kvs_fail(KVS_ERR_INVALID, "request %llu (line %llu): arrival %g s: "
				"must be a finite time >= 0", (unsigned long long)q.index,
				(unsigned long long)q.line, q.arrival_s);
	if (q.arrival_s < s->last_arrival)
		return kvs_fail(KVS_ERR_INVALID,
				"request %llu (line %llu): arrival %.9g s is before the "
				"previous one (%.9g s): requests must come in arrival order",
				(unsigned long long)q.index, (unsigned long long)q.line,
				q.arrival_s, s->last_arrival);
	if (s->cfg.horizon_s > 0 && q.arrival_s > s->cfg.horizon_s) {
		s->src_done = true;   /* arrives after the end of the run */
		return KVS_OK;
	}
	s->last_arrival = q.arrival_s;
	sreq *r = sreq_new(s);
	if (!r)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (request)");
	r->n = q.num_samples > 1 ? q.num_samples : 1;
	r->priority = q.priority;
	r->nlive = 1;
	r->seq = s->next_seq;
	s->next_seq += r->n;
	r->index = q.index;
	r->line = q.line;
	r->arrival = q.arrival_s;
	r->admitted = -1;
	r->first_token = -1;
	r->prompt = q.prompt_tokens;
	r->output = q.output_tokens;
	r->out_eff = q.output_tokens ? q.output_tokens : 1;
	r->target = q.prompt_tokens;
	if (q.over_max_len || (uint64_t)q.prompt_tokens + q.output_tokens > s->mml)
		r->over_len = true;   /* rejected on arrival */
	st = copy_hashes(s, r, &q);
	if (st != KVS_OK) {
		sreq_free(r);
		return st;
	}
	*out = r;
	return KVS_OK;
}

/* Pull the next request of the source (or of the fed queue when the
 * engine is driven from outside) into s->pending. */
static kvs_status pull(kvs_sim *s)
{
	kvs_request q;
	s->pending = NULL;
	if (!s->src) {
		sreq *r = s->fed_head;
		if (r) {
			s->fed_head = r->next;
			if (!s->fed_head)
				s->fed_tail = NULL;
			r->next = NULL;
		}
		s->pending = r;
		return KVS_OK;
	}
	if (s->src_done)
		return KVS_OK;
	kvs_status st = s->src->next(s->src->ctx, &q);
	if (st == KVS_END) {
		s->src_done = true;
		return KVS_OK;
	}
	if (st != KVS_OK)
		return st;
	return make_sreq(s, &q, &s->pending);
}

static kvs_status arrive(kvs_sim *s, sreq *r)
{
	kvs_sim_stats *st = &s->res->st;
	if (r->kv_remote) {
		s->kv_received++;   /* arrived at the fleet, counted there */
		r->arrival = r->kv_arrival;
	} else {
		if (st->arrived == 0)
			st->first_arrival_s = r->arrival;
		st->last_arrival_s = r->arrival;
		st->arrived++;
		/* (a hand-off was counted where it arrived: a fleet's sum
		 * counts each request once) */
		st->multi_sample_requests += r->n > 1;
	}
	if (r->over_len) {
		reject(s, r, KVS_SIM_REJECT_MAX_LEN);
		return KVS_OK;
	}
	if (r->prompt == 0) {
		reject(s, r, KVS_SIM_REJECT_EMPTY_PROMPT);
		return KVS_OK;
	}
	if (r->n > s->cfg.max_num_seqs) {
		/* its n sequences can never run at once */
		reject(s, r, KVS_SIM_REJECT_NEVER_FITS);
		return KVS_OK;
	}
	kvs_seq_desc d;
	desc_of(s, r, &d);
	kvs_admit_reason why = KVS_REASON_NONE;
	if (kvs_alloc_can_admit(s->alloc, &d, &why) == KVS_ADMIT_NEVER) {
		reject(s, r, why == KVS_REASON_EXCEEDS_MAX_LEN ? KVS_SIM_REJECT_MAX_LEN :
			     why == KVS_REASON_EXCEEDS_BUDGET ? KVS_SIM_REJECT_BUDGET :
			     KVS_SIM_REJECT_NEVER_FITS);
		return KVS_OK;
	}
	r->state = RS_WAITING;
	if (!waiting_add(s, r, false)) {
		sreq_free(r);   /* in no queue yet: the run is over */
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (waiting queue)");
	}
	if (s->waiting.n + s->swapped.n > st->waiting_max)
		st->waiting_max = s->waiting.n + s->swapped.n;
	return KVS_OK;
}

/* Closed loop (max_concurrency N): the client holds the next request
 * until one of its N in flight leaves. */
static bool client_full(const kvs_sim *s)
{
	return s->cfg.max_concurrency && s->inflight >= s->cfg.max_concurrency;
}

static kvs_status drain_arrivals(kvs_sim *s)
{
	kvs_status st;
	while (s->pending && s->pending->arrival <= s->now && !client_full(s)) {
		sreq *r = s->pending;
		if ((st = pull(s)) != KVS_OK) {
			sreq_free(r);
			return st;
		}
		/* a held request is sent now: latencies count from the send */
		if (s->cfg.max_concurrency && r->arrival < s->now)
			r->arrival = s->now;
		s->inflight++;
		if ((st = arrive(s, r)) != KVS_OK)
			return st;
	}
	/* a request held by a full client waits for a departure (a step's
	 * end drains again), not for an event at its own arrival time */
	if (s->pending && !s->arrival_event_queued &&
	    !(client_full(s) && s->pending->arrival <= s->now)) {
		if ((st = ev_push(s, s->pending->arrival, EV_ARRIVAL)) != KVS_OK)
			return st;
		s->arrival_event_queued = true;
	}
	return KVS_OK;
}

/* ---- scheduling ------------------------------------------------------------- */

/* Bring a decoding request's allocator length up to the start of step
 * to_step (within its room, so no allocation), every live member.  With
 * release (a request that finishes at to_step), owed blocks go back with
 * its table in one call and its member is released. */
static inline kvs_status sync_to(kvs_sim *s, sreq *r, uint64_t to_step, bool release)
{
	if (to_step <= r->S)
		return KVS_OK;
	uint64_t n = to_step - r->S;
	bool synced_lazy = r->len + n > r->cap;
	if (synced_lazy) {
		/* lazy crossings of steps S .. to_step - 1: their blocks were
		 * taken when they fell due; they go back to the top of the
		 * free stack, from which the grow takes them again */
		uint64_t m = bs_ceil(s, r->len + n - r->cap);
		/* the last of them, at step S + cap + (m - 1) bs - len, is
		 * one already taken */
		kvs_require(r->nlive == 1 && m <= s->nowed &&
			    r->S + r->cap + (m - 1) * s->block_size - r->len < s->lz_done);
		s->nowed -= m;
		/* given back and grown into in one call; or, released, the
		 * blocks go back with the table's, in the order the grow and
		 * the release would leave (release_family then has nothing
		 * left to release) */
		kvs_status st;
		if (release) {
			kvs_require(r->nreg == 1);
			st = kvs_alloc_release_owed(s->alloc, member(r, 0), (uint32_t)n,
						    (uint32_t)m, s->owed + s->nowed,
						    s->cfg.validate);
			if (st == KVS_OK)
				r->nreg = 0;
		} else {
			st = kvs_alloc_grow_owed(s->alloc, member(r, 0), (uint32_t)n,
						 (uint32_t)m, s->owed + s->nowed,
						 s->cfg.validate);
		}
		if (st != KVS_OK)
			return kvs_fail_wrap(st == KVS_ERR_NOSPACE ? KVS_ERR_STATE : st,
					"allocator refused %llu tokens and their %llu "
					"taken blocks for request %llu",
					(unsigned long long)n, (unsigned long long)m,
					(unsigned long long)r->index);
		r->cap += (uint32_t)m * s->block_size;
		s->dirty = true;
		if (r->pf_def && r->pf_step < to_step) {
			/* its final partial block is in its table now */
			kvs_require(r->pf_step < s->lz_done && s->frag_owed >= r->pf_def);
			s->frag_owed -= r->pf_def;
			r->pf_def = 0;
		}
	}
	for (uint32_t i = 0; i < r->nlive && !synced_lazy; i++) {
		kvs_status st = kvs_alloc_grow(s->alloc, member(r, i), (uint32_t)n,
					       NULL, NULL);
		if (st != KVS_OK)
			return kvs_fail_wrap(st == KVS_ERR_NOSPACE ? KVS_ERR_STATE : st,
					"allocator refused %llu tokens within the room it "
					"reported for request %llu", (unsigned long long)n,
					(unsigned long long)r->index);
	}
	uint64_t tokens = n * r->nlive;
	if (r->state == RS_DECODE) {   /* in the heap */
		s->sumS += tokens;
		s->dec_len_sum += tokens;
	}
	r->S = to_step;
	r->len += (uint32_t)n;
	r->gen += (uint32_t)n;
	s->synced += tokens;
	return KVS_OK;
}

static kvs_status sync_decode(kvs_sim *s, sreq *r, uint64_t to_step)
{
	return sync_to(s, r, to_step, false);
}

/* Would syncing r to lz_done enlarge its block table's capacity (more
 * blocks than the table's tcap entries)?  A recycled table keeps its
 * buffer, so most tables never grow. */
static bool lz_table_grows(const kvs_sim *s, const sreq *r)
{
	return r->len + (s->lz_done - r->S) > (uint64_t)r->tcap * s->block_size;
}

/* The lz_done past which syncing r would enlarge its table
 * (lz_table_grows(r) exactly when lz_done is larger): len + lz_done - S
 * past the tcap entries' tokens (at least cap: the table holds its
 * blocks).  S - len does not change when r is synced, and tcap only
 * grows, so it never falls. */
static uint64_t lz_table_step(const kvs_sim *s, const sreq *r)
{
	return r->S + (uint64_t)r->tcap * s->block_size - r->len;
}

/* r (lazy) joins the table-growth list when its table grows before its
 * finish E (lz_done never passes E while it is queued) */
static inline kvs_status tg_add(kvs_sim *s, sreq *r)
{
	uint64_t t = lz_table_step(s, r);
	if (t >= r->E)
		return KVS_OK;
	if (s->ntg == s->captg) {
		size_t cap = s->captg ? 2 * s->captg : 64;
		pf_ent *v = kvs_reallocarray(s->tg, cap, sizeof *v);
		pf_ent *d = v ? kvs_reallocarray(s->tg_due, cap, sizeof *d) : NULL;
		if (v)
			s->tg = v;
		if (!d)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (block tables)");
		s->tg_due = d;
		s->captg = cap;
	}
	r->tg_idx = (uint32_t)s->ntg;
	s->tg[s->ntg++] = (pf_ent){ t, r };
	r->tg_in = true;
	return KVS_OK;
}

/* r leaves the table-growth list: the last entry takes its place */
static void tg_drop(kvs_sim *s, sreq *r)
{
	uint32_t i = r->tg_idx;
	kvs_require(i < s->ntg && s->tg[i].r == r);
	s->tg[i] = s->tg[--s->ntg];
	s->tg[i].r->tg_idx = i;
	r->tg_in = false;
}

/* The taken blocks of every lazy sequence whose table would grow into its
 * table (its length synced to lz_done): before the allocator's metadata is
 * read (a time-series sample, the end of the run), which counts
 * block-table capacity; a sync that would not enlarge a table changes no
 * figure and is left to the sequence's next event.  Those sequences are
 * the list's entries below lz_done (an entry older than a sync is low: its
 * sequence is tested, and listed again by its step now), taken out in one
 * pass and synced in the order of their steps, then of admission.  A
 * sample comes every so many seconds of simulated time, so one pass over
 * the list per sample costs less than keeping it ordered per request. */
static kvs_status lz_sync_all(kvs_sim *s)
{
	kvs_status st;
	/* taken out by moving the last entry into each hole: the list's
	 * order is no one's (the due entries are sorted below), and only a
	 * moved entry's sequence is written, not every one kept */
	size_t nd = 0, n = s->ntg;
	for (size_t i = 0; i < n;) {
		if (s->tg[i].step >= s->lz_done) {
			i++;
			continue;
		}
		s->tg_due[nd++] = s->tg[i];
		s->tg[i] = s->tg[--n];
		if (i < n)
			s->tg[i].r->tg_idx = (uint32_t)i;
	}
	s->ntg = n;
	pf_ent *d = s->tg_due;
	for (size_t i = 1; i < nd; i++) {   /* a few: insertion */
		pf_ent e = d[i];
		size_t j = i;
		while (j > 0 && (d[j - 1].step > e.step ||
				 (d[j - 1].step == e.step && d[j - 1].r->order > e.r->order))) {
			d[j] = d[j - 1];
			j--;
		}
		d[j] = e;
	}
	for (size_t i = 0; i < nd; i++) {
		sreq *r = d[i].r;
		kvs_require(r->lazy && r->tg_in);
		r->tg_in = false;
		if (lz_table_grows(s, r)) {
			if ((st = sync_decode(s, r, s->lz_done)) != KVS_OK)
				return st;
			r->tcap = kvs_alloc_table_capacity(s->alloc, r->seq);
		}
		/* within captg (the entries taken out made room): tg_add moves
		 * neither array */
		if ((st = tg_add(s, r)) != KVS_OK)
			return st;
	}
	return KVS_OK;
}

/* Key a decoding request synced at step S and put it in the heap. */
static kvs_status decode_schedule(kvs_sim *s, sreq *r)
{
	uint64_t rem = r->out_eff - r->gen;
	uint64_t room = rem ? family_room(s, r) : 0;
	r->E = r->S + (room < rem ? room : rem);
	r->cap = r->len + (uint32_t)room;
	kvs_require(!r->lazy && !r->pf_def);
	if (s->lazy_on && r->n == 1 && room < rem) {
		/* crossings at c0, c0 + bs, ... before the finish at S + rem,
		 * all lazy, and the finish the queued event: those of whole
		 * blocks below the final length, and the last one, into the
		 * block that holds the final token, whose tokens past the
		 * final length are internal fragmentation from its step on */
		uint32_t bs = s->block_size;
		uint64_t c0 = r->S + room, ef = r->S + rem;
		uint64_t F = final_len(r);
		uint64_t L = bs_ceil(s, ef - c0);
		uint64_t Lf = F > r->cap ? bs_div(s, F - r->cap) : 0;
		kvs_require(L >= Lf && L <= Lf + 1);
		if (L > Lf) {
			uint64_t q = F - r->cap - Lf * bs;   /* tokens below F */
			kvs_require(q > 0 && q < bs);
			uint64_t step = c0 + Lf * bs;
			kvs_require(step >= s->lz_done);
			r->pf_far = step >= s->lz_done + PF_W;
			if (r->pf_far) {
				if (!KVS_ARRAY_RESERVE(s->pf, s->cappf, s->npf + 1, 64))
					return kvs_fail(KVS_ERR_NOMEM, "out of memory (block crossings)");
				pfh_push(s->pf, &s->npf, (pf_ent){ step, r });
			} else {
				pf_add(s, step, (uint32_t)(bs - q));
			}
			r->pf_step = step;
			r->pf_def = (uint32_t)(bs - q);
		}
		r->E = ef;
		lz_register(s, r, bs_mod(s, c0));
		r->tcap = kvs_alloc_table_capacity(s->alloc, r->seq);
		kvs_status st = tg_add(s, r);
		if (st != KVS_OK)
			return st;
	}
	if (!s->cfg.fast_path && rem > 0) {
		/* touch every sequence at every step: the step being planned,
		 * unless its due sequences are done (a sequence swapped in
		 * with room decodes this step's token unseen, as in a span) */
		r->E = r->S;
		if (s->past_due && r->E == s->G)
			r->E = s->G + 1;
	}
	r->state = RS_DECODE;
	return dh_push(s, r);
}

/* KV tokens a preemption by recompute drops: the parent's, and each forked
 * child's own past the shared prompt (read before the release). */
static uint64_t dropped_tokens(const kvs_sim *s, const sreq *r)
{
	uint64_t t = kvs_alloc_len(s->alloc, r->seq);
	for (uint32_t i = 1; i < r->nlive; i++) {
		uint32_t l = kvs_alloc_len(s->alloc, member(r, i));
		t += l > r->prompt ? l - r->prompt : 0;
	}
	return t;
}

/* Swap every live member of a decoding request out; false (with the
 * members already out released again) when the host pool is full. */
static kvs_status swap_out_family(kvs_sim *s, sreq *v, bool *ok, double *extra_time)
{
	kvs_sim_stats *st = &s->res->st;
	*ok = true;
	for (uint32_t i = 0; i < v->nlive; i++) {
		kvs_status rc = kvs_alloc_swap_out(s->alloc, member(v, i), NULL, NULL);
		if (rc == KVS_ERR_NOSPACE || rc == KVS_ERR_UNSUPPORTED) {
			*ok = false;   /* the copies made so far still took their time */
			return KVS_OK;
		}
		if (rc != KVS_OK)
			return rc;
		uint32_t len = kvs_alloc_len(s->alloc, member(v, i));
		uint64_t bytes = (uint64_t)len * s->kvb + kvs_alloc_window_bytes(s->alloc, len);
		st->swap_out_bytes += bytes;
		*extra_time += (double)bytes / s->cfg.deploy.gpu.pcie_bytes_per_s;
	}
	return KVS_OK;
}

/* Reject a family that was admitted but can never complete: with nothing
 * else running it still ran out of memory (its n samples together need
 * more than the pool). */
static kvs_status reject_running(kvs_sim *s, sreq *r)
{
	kvs_status rc = release_family(s, r);
	if (rc != KVS_OK)
		return rc;
	s->res->st.rejected++;
	s->res->st.rejected_by[KVS_SIM_REJECT_NEVER_FITS]++;
	emit_record(s, r, KVS_SIM_REJECTED, KVS_SIM_REJECT_NEVER_FITS, -1.0);
	/* freed at the next planning: this step's lists may still point here */
	r->state = RS_DEAD;
	r->next = s->dead;
	s->dead = r;
	return KVS_OK;
}

/* Preempt v (all its members).  allow_swap is false when v's members are
 * at different lengths (it went while growing them one by one): it is
 * recomputed then. */
static kvs_status preempt(kvs_sim *s, sreq *v, bool allow_swap, double *extra_time)
{
	kvs_sim_stats *st = &s->res->st;
	kvs_status rc;
	if (v->state == RS_DECODE) {
		/* the tokens the victim has stored when stepping one token at
		 * a time (every decoding sequence due at every step, planned
		 * in admission order): this step's too once the due sequences
		 * are planned, or when its turn came before the sequence
		 * growing now (priority scheduling picks such victims; under
		 * FCFS the victim is the most recent, after it).  Within its
		 * room: its next event is later. */
		bool planned = s->past_due || v->order < s->due_order;
		if ((rc = sync_decode(s, v, s->G + planned)) != KVS_OK)
			return rc;
		dh_remove(s, v);
	} else if (v->state == RS_DUE) {
		/* out of the heap; bring its length up to this step */
		if ((rc = sync_decode(s, v, s->G)) != KVS_OK)
			return rc;
	} else if (v->state == RS_FORK) {
		forkq_remove(s, v);
	} else {
		kvs_require(v->state == RS_PREFILL);
		prefill_remove(s, v);
	}
	bool decoding = v->state == RS_DECODE || v->state == RS_DUE;
	/* A victim synced past this step (S = G + 1) stored this step's token
	 * in advance, but it does not run this step: as in vLLM, where a
	 * preempted request is not scheduled, that token is not produced.  It
	 * is rolled back before anything is counted, in every mode: not
	 * emitted (else the last token of a sequence due to finish at G + 1
	 * would be re-prefilled, one past its final length, or a group would
	 * be swapped out with nothing left to generate), not recomputed.
	 * The allocator keeps its slot while the victim is swapped out (pre);
	 * the step that swaps it in emits it. */
	uint32_t ahead = decoding && v->S > s->G ? (uint32_t)(v->S - s->G) : 0;
	v->gen -= ahead;
	v->S -= ahead;
	run_remove(s, v);
	s->dirty = true;
	if (v->n > 1 && s->nrunning == 0) {
		/* alone and out of memory: it never fits, unless it came back
		 * from swap unshared; recomputed, it shares its prompt again */
		if (!v->unshared)
			return reject_running(s, v);
		allow_swap = false;
	}
	st->preemptions++;
	v->preemptions++;
	if (decoding && allow_swap && v->nreg == v->nlive &&
	    s->cfg.preemption_mode == KVS_PREEMPT_SWAP) {
		bool ok;
		if ((rc = swap_out_family(s, v, &ok, extra_time)) != KVS_OK)
			return rc;
		if (ok) {
			s->releases++;
			/* a token is left to emit (the one this step planned,
			 * if any): it comes back, never finishes out there */
			kvs_require(v->gen < v->out_eff);
			kvs_require(ahead <= 1);   /* S is at most G + 1 */
			v->pre = (uint8_t)ahead;
			v->state = RS_SWAPPED;
			if (!deque_push_back(&s->swapped, v))
				return kvs_fail(KVS_ERR_NOMEM, "out of memory");
			return KVS_OK;
		}
		/* host swap full (or not offered): recompute instead */
	}
	st->recomputed_tokens += dropped_tokens(s, v) - (uint64_t)ahead * v->nlive;
	if ((rc = release_family(s, v)) != KVS_OK)
		return rc;
	/* a single sequence re-prefills every known token; a family its
	 * prompt once, then (after the fork) each sample its own tokens */
	if (v->n > 1)
		v->target = v->prompt;
	else if (decoding)
		v->target = v->prompt + v->gen;
	v->len = 0;
	v->state = RS_WAITING;
	if (!waiting_add(s, v, true))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	if (s->waiting.n + s->swapped.n > st->waiting_max)
		st->waiting_max = s->waiting.n + s->swapped.n;
	return KVS_OK;
}

/* A family that ran out of memory while it was the most recent request
 * (it preempted itself) would run out again at the same point if it were
 * readmitted before anything gives memory back: free memory only shrinks
 * until a release.  It waits for the next release (a single sequence needs
 * no such gate: its readmission takes all its known tokens at once). */
static void gate_family(kvs_sim *s, sreq *r)
{
	/* alone (recomputed after a swap-in left it unshared) it has all
	 * the memory there is: no gate, or nothing would ever admit it */
	if (r->n > 1 && r->state == RS_WAITING && s->nrunning > 0)
		r->gate = s->releases + 1;
}

/* Copy-on-write copies reported by a grow: their device time. */
static void charge_copies(kvs_sim *s, size_t ncopies, double *extra_time)
{
	if (!ncopies || !(s->cost.byte_rate > 0))
		return;
	/* a block copy reads and writes the block once */
	double bytes = (double)ncopies * s->block_size * (double)s->kvb;
	*extra_time += 2.0 * bytes / s->cost.byte_rate;
}

/* Grow every live member of r by n tokens, preempting the most recently
 * admitted running request while memory is short.  *self_preempted when r
 * itself went (recomputed if some members had grown already). */
static kvs_status grow_or_preempt(kvs_sim *s, sreq *r, uint32_t n,
				  bool *self_preempted, bool *preempted,
				  double *extra_time)
{
	*self_preempted = false;
	for (uint32_t i = 0; i < r->nlive; i++) {
		for (;;) {
			size_t nc = 0;
			kvs_status st = kvs_alloc_grow(s->alloc, member(r, i), n, NULL, &nc);
			if (st == KVS_OK) {
				s->dirty = true;
				charge_copies(s, nc, extra_time);
				break;
			}
			if (st != KVS_ERR_NOSPACE)
				return st;
			sreq *v = victim(s);
			kvs_require(v != NULL);
			*preempted = true;
			if ((st = preempt(s, v, v != r || i == 0, extra_time)) != KVS_OK)
				return st;
			if (v == r) {
				gate_family(s, r);
				*self_preempted = true;
				return KVS_OK;
			}
		}
	}
	return KVS_OK;
}

/* Fork the n - 1 children of a family whose prompt is prefilled (the
 * parent at len = prompt).  Each shares the parent's blocks (paged: no new
 * memory until a shared block is written), or gets its own copy of the
 * prompt's KV in memory reserved for it at admission (its region under the
 * contiguous policies, its prompt's pages under vattention), released just
 * before the fork takes it again.  Should a fork still find no memory, the
 * most recent request is preempted, as for growth. */
static kvs_status fork_family(kvs_sim *s, sreq *r, bool *self_preempted,
			      bool *preempted, double *extra_time)
{
	*self_preempted = false;
	uint32_t child_out = final_len(r) - r->len;
	while (r->nlive < r->n) {
		kvs_seq_id c = member(r, r->nlive);
		bool reserved = r->nreg > r->nlive;
		kvs_status st;
		if (reserved && (st = kvs_alloc_release(s->alloc, c)) != KVS_OK)
			return st;
		st = kvs_alloc_fork(s->alloc, r->seq, c, child_out);
		if (st == KVS_ERR_NOSPACE && !reserved) {
			sreq *v = victim(s);
			kvs_require(v != NULL);
			*preempted = true;
			if ((st = preempt(s, v, true, extra_time)) != KVS_OK)
				return st;
			if (v == r) {
				gate_family(s, r);
				*self_preempted = true;
				return KVS_OK;
			}
			continue;
		}
		if (st != KVS_OK)
			return kvs_fail_wrap(st == KVS_ERR_NOSPACE ? KVS_ERR_STATE : st,
					"request %llu: fork of sample %u failed%s",
					(unsigned long long)r->index, r->nlive,
					reserved ? " in the region reserved for it" : "");
		if (r->nlive == 1)
			s->nforked++;
		r->nlive++;
		if (r->nreg < r->nlive)
			r->nreg = r->nlive;
		s->dirty = true;
	}
	s->res->st.forked_sequences += r->n - 1;
	if (s->fork_copies && s->cost.byte_rate > 0)   /* read and write */
		*extra_time += 2.0 * (double)(r->n - 1) * r->len * (double)s->kvb /
			       s->cost.byte_rate;
	/* every policy copies the windowed layers' last window to a child */
	uint64_t wb = kvs_alloc_window_bytes(s->alloc, r->len);
	if (wb && s->cost.byte_rate > 0)
		*extra_time += 2.0 * (double)(r->n - 1) * (double)wb / s->cost.byte_rate;
	return KVS_OK;
}

/* Record r's completion and free it (also on failure: the run is over). */
static kvs_status finish(kvs_sim *s, sreq *r)
{
	kvs_sim_result *R = s->res;
	kvs_sim_stats *stats = &R->st;
	kvs_status st;
	double t = s->now;
	stats->completed++;
	stats->prompt_tokens += r->prompt;
	stats->output_tokens += (uint64_t)r->output * r->n;   /* every sample's */
	double ttft = r->first_token - r->arrival;

	if ((st = kvs_sketch_add(&R->sk[KVS_METRIC_TTFT], ttft)) != KVS_OK ||
	    (st = kvs_sketch_add(&R->sk[KVS_METRIC_E2E], t - r->arrival)) != KVS_OK ||
	    (st = kvs_sketch_add(&R->sk[KVS_METRIC_QUEUE_DELAY], r->admitted - r->arrival)) != KVS_OK) {
		sreq_free(r);
		return st;
	}
	bool good = !(s->cfg.slo_ttft_s > 0 && ttft > s->cfg.slo_ttft_s);
	if (s->cfg.slo_e2e_s > 0 && t - r->arrival > s->cfg.slo_e2e_s)
		good = false;
	if (r->output >= 2) {
		/* samples advance in lockstep: each sample's TPOT, and their mean */
		double tpot = (t - r->first_token) / (double)(r->output - 1);
		if ((st = kvs_sketch_add2(&R->sk[KVS_METRIC_TPOT], &R->sk[KVS_METRIC_ITL], tpot,
					  r->output - 1)) != KVS_OK) {
			sreq_free(r);
			return st;
		}
		if (s->cfg.slo_tpot_s > 0 && tpot > s->cfg.slo_tpot_s)
			good = false;
	}
	s->good += good;
	emit_record(s, r, KVS_SIM_COMPLETED, KVS_SIM_REJECT_COUNT_, t);
	sreq_recycle(s, r);
	return KVS_OK;
}

static kvs_status ensure_due_cap(kvs_sim *s)
{
	size_t need = dq_count(s);
	if (s->capdue >= need)
		return KVS_OK;
	size_t cap = need > 64 ? need : 64;
	sreq **v = kvs_reallocarray(s->due, cap, sizeof *v);
	if (!v)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	s->due = v;
	s->capdue = cap;
	return KVS_OK;
}

/* ---- disaggregation (kvs_sim_config.on_kv) ------------------------------------ */

static void kv_link(kvs_sim *s, sreq *r, rstate state)
{
	r->state = state;
	r->prev = NULL;
	r->next = s->kv_held;
	if (s->kv_held)
		s->kv_held->prev = r;
	s->kv_held = r;
	s->nkv_held++;
}

static void kv_unlink(kvs_sim *s, sreq *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		s->kv_held = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
	s->nkv_held--;
}

/* Tell on_kv; its answer bounds this advance (arrival_bound). */
static void kv_tell(kvs_sim *s, int what, sreq *r, uint32_t kv_tokens)
{
	kvs_sim_kv_handoff h = {
		.handle = (uint64_t)(uintptr_t)r,
		.req = {
			.index = r->index, .line = r->line, .arrival_s = r->arrival,
			.prompt_tokens = r->prompt, .output_tokens = r->output,
			.num_samples = r->n, .hash_ids = r->hashes,
			.num_hash_ids = r->nhashes, .hash_block_tokens = r->hash_block,
		},
		.admitted_s = r->admitted,
		.now_s = s->now,
		.cached_tokens = r->cached_first,
		.preemptions = r->preemptions,
		.kv_tokens = kv_tokens,
		.origin = r->kv_origin,
	};
	double t = s->cfg.on_kv(s->cfg.on_kv_ctx, what, &h);
	if (t < s->arrival_bound)
		s->arrival_bound = t;
}

/* Prefill-only: r's prompt is prefilled; it leaves the running set and
 * holds its KV until kvs_sim_kv_release. */
static void kv_send(kvs_sim *s, sreq *r)
{
	run_remove(s, r);
	kv_link(s, r, RS_KV_SEND);
	s->kv_sent++;
	kv_tell(s, KVS_SIM_KV_SENT, r, r->prompt);
}

/* r was admitted with its prompt's KV coming from elsewhere: its blocks
 * are taken now (those its own prefix cache lacks are the ones to
 * receive), and it waits for kvs_sim_kv_arrived. */
static kvs_status kv_wait(kvs_sim *s, sreq *r, uint32_t cached)
{
	r->kv_remote = false;
	if (r->target > cached) {
		kvs_status st = kvs_alloc_grow(s->alloc, r->seq, r->target - cached, NULL, NULL);
		if (st != KVS_OK)
			return kvs_fail_wrap(st, "request %llu: its prompt's %u tokens do not fit "
					"its admitted memory", (unsigned long long)r->index,
					r->target);
	}
	r->len = r->target;
	kv_link(s, r, RS_KV_WAIT);
	kv_tell(s, KVS_SIM_KV_ALLOCATED, r, r->target - cached);
	return KVS_OK;
}

/* Planning: free the KV that was read, and start the requests whose KV
 * arrived while seats are left: each computes one token (its prompt's
 * last, for the logits, as a fully cached prompt) in this step. */
static kvs_status kv_take(kvs_sim *s)
{
	sreq *r;
	kvs_status st;
	while ((r = deque_pop_front(&s->kv_done))) {
		if ((st = release_family(s, r)) != KVS_OK) {
			sreq_free(r);
			return st;
		}
		sreq_free(r);
	}
	while ((r = deque_front(&s->kv_ready)) &&
	       s->nrunning + r->n <= s->cfg.max_num_seqs) {
		deque_pop_front(&s->kv_ready);
		r->state = RS_PREFILL;
		run_append(s, r);
		if ((st = prefill_add(s, r)) != KVS_OK)
			return st;
	}
	return KVS_OK;
}

/* Requests holding KV outside the running list, or about to free it. */
static bool kv_holding(const kvs_sim *s)
{
	return s->nkv_held || s->kv_done.n || s->kv_ready.n;
}

/* Admit the head of the waiting queue (can_admit said NOW).  A family under
 * a policy whose fork copies (all but paged) also reserves its n - 1
 * children's memory now, as sequences of the parent's shape (their fork
 * copies the prompt into it once the prompt is prefilled), so that an
 * admitted family can always fork; when they do not all fit, nothing is
 * admitted and *later is set.  dp: the head's description, the one
 * can_admit answered (the allocator does not ask again). */
static kvs_status admit_head(kvs_sim *s, sreq *r, const kvs_seq_desc *dp, bool *later)
{
	kvs_seq_desc d = *dp;
	uint32_t cached = 0;
	*later = false;
	kvs_status st = kvs_alloc_admit_now(s->alloc, &d, &cached);
	if (st != KVS_OK)
		return kvs_fail_wrap(st, "request %llu: admission failed after can_admit said "
				"it fits", (unsigned long long)r->index);
	r->nreg = 1;
	r->nlive = 1;
	if (r->n > 1 && s->reserve_children) {
		for (uint32_t i = 1; i < r->n; i++) {
			kvs_seq_desc c = d;
			c.seq = member(r, i);
			if (kvs_alloc_can_admit(s->alloc, &c, NULL) != KVS_ADMIT_NOW) {
				*later = true;
				break;
			}
			if ((st = kvs_alloc_admit(s->alloc, &c, NULL)) != KVS_OK)
				return st;
			r->nreg++;
		}
		if (*later)
			return release_family(s, r);
	}
	deque_pop_front(&s->waiting);
	s->dirty = true;
	if (!r->admitted_once) {
		r->admitted_once = true;
		r->admitted = s->now;
		r->cached_first = cached;
	}
	if (r->kv_remote)
		return kv_wait(s, r, cached);
	r->len = cached;
	r->state = RS_PREFILL;
	run_append(s, r);
	return prefill_add(s, r);
}

/* Families whose prompt was prefilled in the last step: fork them, then
 * decode (first pass) or let each sample recompute its own tokens (after a
 * preemption by recompute). */
static kvs_status do_forks(kvs_sim *s, bool *preempted, double *extra)
{
	kvs_status st;
	while (s->nforkq) {
		sreq *r = s->forkq[0];
		bool self;
		if ((st = fork_family(s, r, &self, preempted, extra)) != KVS_OK)
			return st;
		if (self)
			continue;   /* preempt() took it off the queue */
		forkq_remove(s, r);
		r->S = s->G;
		if (r->refill) {
			/* recompute: each sample re-prefills its own tokens */
			r->refill = false;
			r->target = r->prompt + r->gen;
			r->state = RS_PREFILL;
			if ((st = prefill_insert_ordered(s, r)) != KVS_OK)
				return st;
		} else if ((st = decode_schedule(s, r)) != KVS_OK) {
			return st;
		}
	}
	return KVS_OK;
}

/* The step being planned: what it batches and what happened while it was
 * planned. */
typedef struct step_plan {
	uint64_t budget;           /* tokens left of max_num_batched_tokens */
	uint64_t chunk_tokens;     /* prefill tokens batched (fully cached: 1) */
	uint64_t chunk_seqs;       /* sequences taking a prefill chunk */
	double chunk_ctx;          /* context tokens those chunks read */
	double chunk_pairs;        /* their attention (query, key) pairs */
	double chunk_attn_s;       /* their measured attention time (0 without) */
	double chunk_wctx;         /* the windowed layers' context and pairs */
	double chunk_wpairs;       /* of those chunks (0 without windows) */
	double extra;              /* PCIe time of swaps, copy time of forks */
	bool preempted;            /* a preemption happened: no admissions */
	bool swapped_any;          /* a request came back from swap */
} step_plan;

/* A prefill chunk of c tokens for each live member of r, counted into the
 * step's batch. */
static void add_chunk(const kvs_cost *cost, sreq *r, uint32_t c, step_plan *b)
{
	uint32_t work = c ? c : 1;   /* fully cached: one token recomputed for logits */
	double m = r->nlive;
	if (cost->cfg.attn)
		b->chunk_attn_s += m * kvs_cost_prefill_attn(cost, work, r->len);
	b->chunk_pairs += m * ((double)work * r->len + (double)work * (work + 1) / 2.0);
	b->chunk_ctx += m * ((double)r->len + work);
	if (cost->window) {
		double wc, wp;
		kvs_cost_chunk_window(cost, work, r->len, &wc, &wp);
		b->chunk_wctx += m * wc;
		b->chunk_wpairs += m * wp;
	}
	r->len += c;
	r->chunk = work;
	r->in_step = true;
	uint64_t w = (uint64_t)work * r->nlive;
	b->chunk_tokens += w;
	b->chunk_seqs += r->nlive;
	b->budget -= w < b->budget ? w : b->budget;
}

/* Prefill tokens each live member of r takes this step from budget. */
static uint32_t chunk_of(const sreq *r, uint64_t budget)
{
	uint32_t left = r->target > r->len ? r->target - r->len : 0;
	uint64_t per = r->nlive == 1 ? budget : budget / r->nlive;
	return left < per ? left : (uint32_t)per;
}

/* Phase 1: the decoding requests whose event is this step.  All are popped
 * first; finished ones release their memory before any other allocates;
 * then each grows by the tokens of steps S..G-1 and this step's token,
 * which needs a new block, preempting the most recent request while memory
 * is short. */
static void sort_due(sreq **due, size_t n)
{
	/* no finished (NULL) entry: plan_due compacts them out first */
	for (size_t i = 1; i < n; i++) {
		sreq *r = due[i];
		size_t j = i;
		while (j > 0 && due[j - 1]->order > r->order) {
			due[j] = due[j - 1];
			j--;
		}
		due[j] = r;
	}
}

/* Memory is short for the crossings of step G: every lazy sequence becomes
 * an ordinary queue entry again (synced to G, keyed by its next crossing
 * or finish), those crossing at G joining the due list, so that the step
 * runs exactly as without crossing classes (in admission order, each grow
 * preempting while memory is short). */
static kvs_status lz_dissolve(kvs_sim *s, size_t *ndue)
{
	kvs_status st;
	size_t nl = 0, base = *ndue;
	s->lazy_on = false;
	/* pending final partial crossings become ordinary events with the
	 * rest (owed ones are synced below) */
	if (s->pf_ring)
		memset(s->pf_ring, 0, PF_W * sizeof *s->pf_ring);
	s->npf = 0;
	for (size_t i = 0; i < s->ntg; i++)
		s->tg[i].r->tg_in = false;
	s->ntg = 0;
	sreq **out = s->due + base;    /* room: ensure_due_cap counted them */
	RING_FOR_EACH(s, b) {
		sreq **pp = &s->ring[b];
		while (*pp) {
			sreq *r = *pp;
			if (r->lazy) {
				*pp = r->dq_next;
				r->in_ring = false;
				out[nl++] = r;
				s->nring--;
			} else {
				pp = &r->dq_next;
			}
		}
		if (!s->ring[b])
			ring_clear(s, b);
	}
	size_t k = 0;
	for (size_t i = 0; i < s->nheap; i++) {
		if (s->heap[i].r->lazy)
			out[nl++] = s->heap[i].r;
		else
			s->heap[k++] = s->heap[i];
	}
	s->nheap = k;
	for (size_t i = s->nheap / 2; i-- > 0;)
		dhh_sift_down(s->heap, s->nheap, i);
	kvs_require(s->nlazy == nl);
	for (size_t i = 0; i < nl; i++)
		if (out[i]->pf_def && out[i]->pf_step >= s->lz_done)
			out[i]->pf_def = 0;
	size_t ndue_now = base;
	for (size_t i = 0; i < nl; i++) {
		sreq *r = out[i];
		dh_unaccount(s, r);
		r->state = RS_DUE;
		if ((st = sync_decode(s, r, s->G)) != KVS_OK)
			return st;
		uint64_t rem = r->out_eff - r->gen;
		uint64_t room = r->cap - r->len;
		if (room == 0 && rem > 0) {
			s->due[ndue_now++] = r;   /* crosses at G */
		} else if ((st = decode_schedule(s, r)) != KVS_OK) {
			return st;
		}
	}
	*ndue = ndue_now;   /* owed blocks left: those of due entries */
	return KVS_OK;
}

/* Phase 1: the decoding requests whose event is this step.  All are popped
 * first; finished ones release their memory before any other allocates;
 * then each grows by the tokens of steps S..G-1 and this step's token,
 * which needs a new block, preempting the most recent request while memory
 * is short.  Lazy crossings of step G (one per lazy sequence of class
 * G mod block_size) take their blocks in one call after the releases, when
 * the pool holds enough for them and every due grow (so that no grow can
 * fail and the order of the takes changes no outcome: which physical
 * block a sequence gets is all that differs); otherwise the classes are
 * dissolved and the step runs one sequence at a time. */
static kvs_status due_take(kvs_sim *s, size_t *out_ndue)
{
	kvs_status st;
	if ((st = ensure_due_cap(s)) != KVS_OK)
		return st;
	size_t ndue = 0;
	while (s->nheap && s->heap[0].E <= s->G) {
		kvs_require(s->heap[0].E == s->G);
		sreq *r = dh_pop(s);
		r->state = RS_DUE;   /* its length is synced with its next grow */
		s->due[ndue++] = r;
	}
	unsigned bk = (unsigned)(s->G & (DQ_W - 1));
	if (ring_has(s, bk)) {
		size_t first = ndue;
		for (sreq *r = s->ring[bk]; r; r = r->dq_next) {
			kvs_require(r->E == s->G);
			r->in_ring = false;
			dh_unaccount(s, r);
			r->state = RS_DUE;
			s->due[ndue++] = r;
		}
		s->nring -= ndue - first;
		s->ring[bk] = NULL;
		ring_clear(s, bk);
		/* the bucket's list runs newest first: pushed order back,
		 * which is nearly admission order, then admission order, as
		 * a heap of (E, order) pops them */
		for (size_t i = first, j = ndue - 1; i < j; i++, j--) {
			sreq *t = s->due[i];
			s->due[i] = s->due[j];
			s->due[j] = t;
		}
		sort_due(s->due, ndue);
	}
	for (size_t i = 0; i < ndue; i++) {
		sreq *r = s->due[i];
		if (r->gen + (s->G - r->S) == r->out_eff) {
			/* lazy blocks first, given back with the table in
			 * one call: the table a release drops is the one it
			 * would hold */
			if (r->len + (s->G - r->S) > r->cap &&
			    (st = sync_to(s, r, s->G, true)) != KVS_OK)
				return st;
			if ((st = release_family(s, r)) != KVS_OK)
				return st;
			run_remove(s, r);
			s->due[i] = NULL;
			if ((st = finish(s, r)) != KVS_OK)
				return st;
		}
	}
	*out_ndue = ndue;
	return KVS_OK;
}

/* A prompt-only step leaves the due sequences for the next decode step:
 * back into the queue at this step G, counted as decoding again. */
static kvs_status due_requeue(kvs_sim *s, size_t ndue)
{
	for (size_t i = 0; i < ndue; i++) {
		sreq *r = s->due[i];
		if (!r || r->state != RS_DUE)
			continue;
		kvs_require(r->E == s->G);
		r->state = RS_DECODE;
		kvs_status st = dh_push(s, r);
		if (st != KVS_OK)
			return st;
	}
	return KVS_OK;
}

/* The blocks of n lazy crossings of steps first..last, taken off the pool
 * into the owed list.  The account moves them from free to owned
 * (internal fragmentation), unless the free stack ran short and
 * cached-idle blocks were evicted: then it is taken afresh. */
static inline kvs_status owed_take(kvs_sim *s, uint64_t n, uint64_t first, uint64_t last)
{
	if (!KVS_ARRAY_RESERVE(s->owed, s->capowed, s->nowed + n, 64))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (block crossings)");
	kvs_status st = kvs_alloc_blocks_take_owed(s->alloc, (uint32_t)n, s->owed + s->nowed,
						  s->cfg.validate);
	if (st != KVS_OK)
		return kvs_fail_wrap(st == KVS_ERR_NOSPACE ? KVS_ERR_STATE : st,
				     "%llu block crossings of steps %llu to %llu failed "
				     "after they were found to fit", (unsigned long long)n,
				     (unsigned long long)first, (unsigned long long)last);
	s->nowed += n;
	uint64_t bytes = n * s->block_size * s->kvb;
	if (!s->dirty && s->raw.free >= bytes) {
		s->raw.free -= bytes;
		s->raw.internal_frag += bytes;
	} else {
		s->dirty = true;
	}
	return KVS_OK;
}

/* The rest of phase 1 for the ndue sequences due_take left: the lazy
 * crossings of step G and every due grow. */
static kvs_status plan_due(kvs_sim *s, step_plan *b, size_t ndue)
{
	kvs_status st;
	if (s->lazy_ok && s->lz_done <= s->G) {
		uint32_t c = s->nlazy ? s->lz_cnt[bs_mod(s, s->G)] : 0;
		uint64_t need = c;
		for (size_t i = 0; i < ndue; i++)
			if (s->due[i])
				need += 2 * (uint64_t)s->due[i]->nlive;
		uint64_t avail = kvs_alloc_free_blocks(s->alloc);
		bool dissolved = false;
		if (c && need > avail) {
			/* the entries due_take finished are NULL: out first,
			 * so that the sort sees sequences only */
			size_t live = 0;
			for (size_t i = 0; i < ndue; i++)
				if (s->due[i])
					s->due[live++] = s->due[i];
			ndue = live;
			if ((st = lz_dissolve(s, &ndue)) != KVS_OK)
				return st;
			sort_due(s->due, ndue);
			dissolved = true;
			c = 0;
		}
		if (c) {
			if ((st = owed_take(s, c, s->G, s->G)) != KVS_OK)
				return st;
			avail -= c;
		}
		pf_advance(s, s->G + 1);
		/* new lazy entries while the pool holds two blocks per
		 * decoding sequence */
		if (!dissolved)
			s->lazy_on = avail >= 2 * (s->ndec + ndue) + 16;
	}
	for (size_t i = 0; i < ndue; i++) {
		sreq *r = s->due[i];
		if (!r || r->state != RS_DUE)
			continue;   /* finished, or preempted by an earlier one */
		/* the tokens of steps S..G-1 and this step's token, which needs
		 * a new block: one allocator call per member (a family is
		 * synced to G first, so that its members grow by one token
		 * each and stay at one length if it is preempted midway; a
		 * lazy sequence too, which takes its owed blocks back) */
		if ((r->nlive > 1 || r->len + (s->G - r->S) > r->cap) &&
		    (st = sync_decode(s, r, s->G)) != KVS_OK)
			return st;
		bool self;
		uint32_t n = (uint32_t)(s->G - r->S + 1);
		s->due_order = r->order;   /* victims before it planned their token */
		st = grow_or_preempt(s, r, n, &self, &b->preempted, &b->extra);
		s->due_order = 0;
		if (st != KVS_OK)
			return st;
		if (self)
			continue;
		r->len += n;     /* this step's token stored in advance */
		r->gen += n;
		r->S = s->G + 1;
		if ((st = decode_schedule(s, r)) != KVS_OK)
			return st;
	}
	return KVS_OK;
}

/* Phases 2-3: every decoding sequence takes one token of the budget
 * (decodes first, as vLLM's chunked prefill); the sequences in prefill
 * then take chunks of what is left, in admission order, preempting the
 * most recent request when a chunk finds no memory. */
static kvs_status plan_prefill(kvs_sim *s, step_plan *b)
{
	kvs_status st;
	b->budget = s->cfg.max_num_batched_tokens - s->ndec;
	for (size_t i = 0; i < s->nprefill && b->budget > 0; i++) {
		sreq *r = s->prefill[i];
		uint32_t c = chunk_of(r, b->budget);
		if (c == 0 && r->target > r->len)
			continue;   /* a family's samples need a token each */
		if (c > 0) {
			bool self, p2 = false;
			double x = 0;
			if ((st = grow_or_preempt(s, r, c, &self, &p2, &x)) != KVS_OK)
				return st;
			b->preempted |= p2;
			b->extra += x;
			if (self) {
				i--;   /* r left the list */
				continue;
			}
			/* a victim before r (priority scheduling) moved it down */
			while (s->prefill[i] != r)
				i--;
		}
		add_chunk(&s->cost, r, c, b);
	}
	return KVS_OK;
}

/* Phase 4a (no preemption in this step): swapped requests come back in
 * FCFS order while the whole group fits above the watermark, a seat and a
 * token each are left; each decodes in this step. */
static kvs_status plan_swap_in(kvs_sim *s, step_plan *b)
{
	kvs_status st;
	const kvs_sim_config *cfg = &s->cfg;
	while (s->swapped.n && b->budget > 0) {
		/* every family went out with a token left (preempt) */
		sreq *r = deque_front(&s->swapped);
		if (s->nrunning + r->n > cfg->max_num_seqs || b->budget < r->nlive)
			break;
		/* every member comes back, or none: the whole group's
		 * blocks must fit above the watermark (vLLM's rule for a
		 * sequence group; swap is paged only) */
		if (!kvs_alloc_can_swap_in(s->alloc, r->seq))
			break;
		if (r->nlive > 1) {
			uint64_t need = 0;
			for (uint32_t i = 0; i < r->nlive; i++)
				need += kvs_alloc_swap_in_blocks(s->alloc, member(r, i));
			uint64_t avail = kvs_alloc_free_blocks(s->alloc);
			uint64_t wm = (uint64_t)(cfg->watermark *
						 (double)kvs_alloc_num_blocks(s->alloc));
			if (need > avail || avail - need < wm)
				break;
		}
		for (uint32_t i = 0; i < r->nlive; i++) {
			st = kvs_alloc_swap_in(s->alloc, member(r, i), NULL, NULL);
			if (st != KVS_OK)
				return kvs_fail_wrap(st == KVS_ERR_NOSPACE ? KVS_ERR_STATE : st,
						"request %llu: swap-in of sample %u failed "
						"after its group was found to fit",
						(unsigned long long)r->index, i);
		}
		deque_pop_front(&s->swapped);
		uint64_t bytes = ((uint64_t)r->len * s->kvb +
				  kvs_alloc_window_bytes(s->alloc, r->len)) * r->nlive;
		s->res->st.swap_in_bytes += bytes;
		b->extra += (double)bytes / cfg->deploy.gpu.pcie_bytes_per_s;
		b->swapped_any = true;
		s->dirty = true;
		r->unshared = r->nlive > 1;
		run_append(s, r);
		r->S = s->G;
		r->state = RS_DUE;
		if (r->pre) {
			/* the slot of this step's token came back with it: the
			 * token its preemption step planned is emitted now */
			r->gen += r->pre;
			r->S = s->G + r->pre;
			r->pre = 0;
		} else if (family_room(s, r) == 0) {
			bool self;
			if ((st = grow_or_preempt(s, r, 1, &self, &b->preempted,
						  &b->extra)) != KVS_OK)
				return st;
			if (self)
				break;
			r->len += 1;
			r->gen += 1;
			r->S = s->G + 1;
		}
		if ((st = decode_schedule(s, r)) != KVS_OK)
			return st;
		b->budget -= r->nlive;
	}
	return KVS_OK;
}

/* Phase 4b (no preemption, nothing swapped out): waiting requests are
 * admitted FCFS while kvs_alloc_can_admit says NOW, a seat and tokens are
 * left; each takes its first prefill chunk in this step.  A head that can
 * never fit, or cannot fit an idle engine, is rejected; one that must wait
 * stops the loop (no skipping ahead). */
static kvs_status plan_admit(kvs_sim *s, step_plan *b)
{
	kvs_status st;
	while (s->waiting.n && b->budget > 0) {
		sreq *r = deque_front(&s->waiting);
		if ((!r->kv_remote && s->nrunning + r->n > s->cfg.max_num_seqs) ||
		    r->gate == s->releases + 1)
			break;
		/* without chunked prefill a prompt is computed whole */
		if (s->cfg.chunked_prefill_off && !r->kv_remote &&
		    (uint64_t)(r->target - r->len) * r->nlive > b->budget)
			break;
		kvs_seq_desc d;
		desc_of(s, r, &d);
		kvs_admit_reason why = KVS_REASON_NONE;
		kvs_admit_verdict v = kvs_alloc_can_admit(s->alloc, &d, &why);
		bool later = false;
		if (v == KVS_ADMIT_NOW && (st = admit_head(s, r, &d, &later)) != KVS_OK)
			return st;
		if (later) {
			v = KVS_ADMIT_LATER;   /* the children's regions do not fit */
			why = KVS_REASON_NONE;
		}
		if (v == KVS_ADMIT_LATER && s->nrunning == 0 && !kv_holding(s))
			v = KVS_ADMIT_NEVER;   /* nothing will ever free memory */
		if (v == KVS_ADMIT_NEVER) {
			deque_pop_front(&s->waiting);
			s->dirty = true;
			reject(s, r, why == KVS_REASON_EXCEEDS_MAX_LEN ? KVS_SIM_REJECT_MAX_LEN :
				     why == KVS_REASON_EXCEEDS_BUDGET ? KVS_SIM_REJECT_BUDGET :
				     KVS_SIM_REJECT_NEVER_FITS);
			continue;
		}
		if (v != KVS_ADMIT_NOW)
			break;
		if (r->state == RS_KV_WAIT)
			continue;   /* no compute until its KV arrives */
		uint32_t c = chunk_of(r, b->budget);
		if (c > 0 && (st = kvs_alloc_grow(s->alloc, r->seq, c, NULL, NULL)) != KVS_OK)
			return kvs_fail_wrap(st, "request %llu: prefill of %u tokens failed "
					"inside its admitted memory",
					(unsigned long long)r->index, c);
		add_chunk(&s->cost, r, c, b);
	}
	/* prefix blocks loaded back from the KV offload tiers by these
	 * admissions: their load time is charged to this step (sim/offload.c) */
	b->extra += kvs_alloc_offload_take_load_s(s->alloc);
	return KVS_OK;
}

/* Nothing runs and the head of the swap queue cannot come back: it is
 * recomputed instead (moved to the front of the waiting queue). */
static kvs_status recompute_swapped_head(kvs_sim *s)
{
	sreq *r = deque_pop_front(&s->swapped);
	/* the slot of a planned token (pre) holds nothing computed */
	s->res->st.recomputed_tokens += dropped_tokens(s, r) - (uint64_t)r->pre * r->nlive;
	kvs_status st = release_family(s, r);
	if (st != KVS_OK)
		return st;
	r->pre = 0;
	r->target = r->n > 1 ? r->prompt : r->prompt + r->gen;
	r->len = 0;
	r->state = RS_WAITING;
	if (!waiting_add(s, r, true))
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	return KVS_OK;
}

/* Steps of a span that starts at step G: at most kmax, ended early by the
 * step-time model's own knots, the next arrival and the horizon. */
static uint64_t span_steps(const kvs_sim *s, const kvs_lin2 *L, double ctx_dec,
			   uint64_t kmax)
{
	uint64_t k = kvs_cost_span_steps(&s->cost, s->ndec, ctx_dec, kmax);
	double next_arrival = s->pending ? s->pending->arrival : s->arrival_bound;
	if (next_arrival > s->now && isfinite(next_arrival))
		k = kvs_lin2_steps_to(L, k, next_arrival - s->now);
	double horizon = s->cfg.horizon_s;
	if (horizon > 0 && horizon > s->now)
		k = kvs_lin2_steps_to(L, k, horizon - s->now);
	return k;
}

/* The lazy crossings of the steps after a span's first, G + 1 .. G + k - 1
 * (of sequences whose next event is at or after G + k, so every class
 * crosses at each of its steps): blocks, the offset of the last crossing
 * step, and the byte-seconds of their blocks and of the reservation's
 * change, each block held from the start of its step.  One pass over the
 * steps: the change of step j, blocks x block bytes - j x tokens per step
 * x kv bytes, is an exact integer before it is weighted by the step's
 * time. */
static void span_crossings(const kvs_sim *s, const kvs_lin2 *L, uint64_t k, span_cross *x)
{
	uint32_t bs = s->block_size, cls = bs_mod(s, s->G);
	int64_t per_block = (int64_t)bs * (int64_t)s->kvb;
	int64_t per_step = (int64_t)(s->ndec * s->kvb);
	int64_t taken = 0, frag = 0;
	/* the ring covers steps lz_done .. lz_done + PF_W - 1 (lz_done is
	 * G + 1: plan took step G's crossings) */
	kvs_require(s->lz_done == s->G + 1 && k <= PF_W);
	/* in locals, summed in the same order (x's fields would be stored
	 * and loaded again each step: the build allows any aliasing) */
	span_cross a = *x;
	const uint32_t *cnt = s->lz_cnt;
	for (uint64_t j = 1; j < k; j++) {
		cls = cls + 1 == bs ? 0 : cls + 1;
		uint32_t c = cnt[cls];
		if (c) {
			a.n += c;
			a.last = j;
			taken += (int64_t)c * per_block;
			uint64_t d = pf_at(s, s->G + j);
			a.def += d;
			frag += (int64_t)(d * s->kvb);
		}
		double dt = kvs_lin2_dt(L, j);
		a.taken_bs += dt * (double)taken;
		a.res_bs += dt * (double)(taken - frag - per_step * (int64_t)j);
		a.frag_bs += dt * (double)frag;
	}
	*x = a;
}

/* A span that runs through lazy crossings (x, from span_crossings): their
 * blocks are taken at its start, in one call, off the free stack (the
 * pool pops them in the order of the steps, as one call per step would,
 * and nothing else takes or gives a block inside the span); the
 * reservation holds each from its step on, the free part loses it from
 * then; and the peak sees the held memory of the last crossing step, the
 * span's largest.  parts: the parts at the span's start, before. */
static kvs_status span_take(kvs_sim *s, const span_cross *x, const int64_t parts[6],
			    const kvs_lin2 *L, uint64_t k)
{
	uint64_t bytes = x->n * s->block_size * s->kvb;
	kvs_require(!s->dirty && s->raw.free >= bytes);   /* off the free stack */
	kvs_status st = owed_take(s, x->n, s->G + 1, s->G + k - 1);
	if (st != KVS_OK)
		return st;
	pf_advance(s, s->G + k);
	uint64_t held = (uint64_t)(parts[0] + parts[1] + parts[2]) + bytes;
	if (held > s->held_peak) {
		double d = (double)(s->ndec * s->kvb) * (double)x->last;
		double f = (double)(x->def * s->kvb);
		double b[6];
		for (int i = 0; i < 6; i++)
			b[i] = (double)parts[i];
		b[0] += d;
		b[1] += (double)bytes - d - f;
		b[2] += f;
		b[5] -= (double)bytes;
		s->held_peak = held;
		pct_of(s, b, &s->res->st.memory_peak_pct);
		s->res->st.peak_time_s = s->now + kvs_lin2_prefix(L, x->last);
	}
	return KVS_OK;
}

/* Phase 5: the step's time and its start.  A step with no prefill,
 * admission, preemption, swap or copy (and the fast path on) becomes a
 * span of k decode steps, k up to the next due request, the next arrival
 * or the horizon, timed and integrated in closed form. */
static kvs_status start_step(kvs_sim *s, const step_plan *b, uint64_t T,
			     const int64_t parts[6])
{
	const kvs_sim_config *cfg = &s->cfg;
	/* a prompt-only step's decodes wait: none is in its batch */
	uint64_t ndec = s->prompt_step ? 0 : s->ndec;
	double ctx_dec = ndec ? (double)(s->dec_len_sum + lag_tokens(s)) : 0;
	double wctx_dec = ndec ? (double)s->dec_win_sum : 0;
	kvs_lin2 L;
	kvs_cost_decode_lines(&s->cost, ndec, ctx_dec, wctx_dec, &L);
	uint64_t k = 1;
	double dur, S1 = 0;
	span_cross x = { 0 };
	bool single = b->chunk_seqs > 0 || b->preempted || b->swapped_any ||
		      b->extra > 0 || !cfg->fast_path;
	if (single) {
		kvs_win_read w = { wctx_dec, wctx_dec + b->chunk_wctx,
				   wctx_dec + b->chunk_wpairs };
		dur = kvs_cost_step(&s->cost, T, ndec + b->chunk_seqs,
				    ctx_dec + b->chunk_ctx, ctx_dec + b->chunk_pairs,
				    ndec, ctx_dec, &w, b->chunk_attn_s) +
		      b->extra;
		L.a1 = L.a2 = dur;
		L.b1 = L.b2 = L.c = 0;
	} else {
		uint64_t e = dq_min(s), c = lz_next(s, s->G + 1);
		/* The span runs through lazy crossings when the free stack
		 * holds all their blocks (taking a cached-idle one would
		 * evict a prefix-cache entry at its step; the account is
		 * fresh, plan read it) and no sample falls inside it.  Fed
		 * from outside, spans stop at the next input: every step of
		 * the span in flight has started when a router reads the
		 * load. */
		uint64_t per_block = (uint64_t)s->block_size * s->kvb;
		bool through = c < e && !s->dirty &&
			       s->raw.free >= per_block * s->lz_cnt[bs_mod(s, c)];
		uint64_t end = through || e < c ? e : c;
		if (through && end - s->G > PF_W)
			end = s->G + PF_W;   /* within the ring of final crossings */
		k = span_steps(s, &L, ctx_dec, end - s->G);
		kvs_lin2_sums(&L, 0, k, &dur, &S1);
		bool sampled = s->next_sample_t < s->now + dur;
		if (through && !sampled)
			span_crossings(s, &L, k, &x);
		if (through && (sampled || (x.n && x.n * per_block > s->raw.free))) {
			k = span_steps(s, &L, ctx_dec, c - s->G);
			kvs_lin2_sums(&L, 0, k, &dur, &S1);
			memset(&x, 0, sizeof x);
		}
	}
	kvs_sim_stats *stt = &s->res->st;
	if (T > stt->tokens_per_step_max)
		stt->tokens_per_step_max = T;
	if (s->nrunning > stt->concurrency_max)
		stt->concurrency_max = s->nrunning;
	s->tokens_total += T * k;
	kvs_status st = integrate_from(s, parts, s->now, dur, S1, &L, k, single ? 0 : s->ndec,
				       &x);
	if (st != KVS_OK)
		return st;
	if (x.n && (st = span_take(s, &x, parts, &L, k)) != KVS_OK)
		return st;
	s->step_k = k;
	s->busy = true;
	stt->spans++;
	return ev_push(s, s->now + dur, EV_STEP_DONE);
}

/* Plan and start the step at s->now, in the phases of the file-top comment
 * (0: forks, 1: due decodes, 2-3: decodes and prefill chunks, 4: swap-ins
 * and admissions unless this step preempted); leaves the engine idle when
 * there is nothing to run. */
static kvs_status plan(kvs_sim *s)
{
	kvs_status st;
	step_plan b = { 0 };

	s->plannings++;
	free_dead(s);
	if (kv_holding(s) && (st = kv_take(s)) != KVS_OK)
		return st;
	s->past_due = false;
	if (s->nforkq && (st = do_forks(s, &b.preempted, &b.extra)) != KVS_OK)
		return st;
	size_t ndue;
	if ((st = due_take(s, &ndue)) != KVS_OK)
		return st;
	bool chunked = !s->cfg.chunked_prefill_off;
	/* A plan that found nothing to run (idle, everything preempted, or
	 * the swap queue's head recomputed) took the crossings of step G
	 * already and left G where it was; a prompt step now would register
	 * new lazy sequences crossing at G after their class was taken.
	 * Nothing decodes then, so step G's crossings are taken afresh at
	 * its decode step. */
	if (!chunked && s->lz_done > s->G) {
		kvs_require(s->ndec == 0 && s->nlazy == 0 && s->nowed == 0);
		s->lz_done = s->G;
	}
	if (!chunked && !b.preempted && s->swapped.n == 0 && s->waiting.n) {
		/* vLLM without chunked prefill: waiting prompts that can be
		 * admitted run as a step of their own, the decodes wait */
		s->prompt_step = true;
		b.budget = s->cfg.max_num_batched_tokens;
		if ((st = plan_admit(s, &b)) != KVS_OK)
			return st;
		if (b.chunk_seqs) {
			if ((st = due_requeue(s, ndue)) != KVS_OK)
				return st;
			if ((KVS_DEBUG >= 2 || s->cfg.validate) &&
			    (st = debug_check(s)) != KVS_OK)
				return st;
			int64_t parts[6];
			track_peak_parts(s, parts);
			return start_step(s, &b, b.chunk_tokens, parts);
		}
		s->prompt_step = false;
	}
	if ((st = plan_due(s, &b, ndue)) != KVS_OK)
		return st;
	s->past_due = true;
	if ((st = plan_prefill(s, &b)) != KVS_OK)
		return st;
	if (!b.preempted && (st = plan_swap_in(s, &b)) != KVS_OK)
		return st;
	if (!b.preempted && s->swapped.n == 0) {
		if (chunked && (st = plan_admit(s, &b)) != KVS_OK)
			return st;
	} else if (s->nrunning == 0 && s->swapped.n) {
		if ((st = recompute_swapped_head(s)) != KVS_OK)
			return st;
		return plan(s);
	}

	uint64_t T = s->ndec + b.chunk_tokens;
	if (T == 0 && b.preempted && (s->waiting.n || s->swapped.n))
		return plan(s);   /* everything was preempted: admit again now */
	if (T == 0) {
		s->busy = false;   /* idle until the next arrival */
		track_peak(s);
		return KVS_OK;
	}
	if ((KVS_DEBUG >= 2 || s->cfg.validate) && (st = debug_check(s)) != KVS_OK)
		return st;
	/* the parts the peak saw are the span's first (nothing changes
	 * between): computed once */
	int64_t parts[6];
	track_peak_parts(s, parts);
	return start_step(s, &b, T, parts);
}

/* The step (or span) in flight ended at s->now. */
static kvs_status step_done(kvs_sim *s)
{
	kvs_status st;
	s->past_due = false;
	if (!s->prompt_step)
		s->G += s->step_k;
	s->prompt_step = false;
	s->res->st.steps += s->step_k;
	for (size_t i = 0; i < s->nprefill;) {
		sreq *r = s->prefill[i];
		if (!r->in_step) {
			i++;
			continue;
		}
		r->in_step = false;
		if (r->len < r->target) {
			i++;
			continue;
		}
		memmove(&s->prefill[i], &s->prefill[i + 1],
			(s->nprefill - i - 1) * sizeof *s->prefill);
		s->nprefill--;
		r->S = s->G;
		if (s->cfg.kv_prefill_only && r->gen == 0) {
			kv_send(s, r);   /* handed out: it decodes elsewhere */
			continue;
		}
		bool emits = true;   /* this step emitted the next token */
		if (r->nlive < r->n) {
			/* a family's prompt: the first pass samples all n first
			 * tokens; after a recompute, the samples' own tokens
			 * come after the fork */
			emits = r->gen == 0;
			if (!emits || r->out_eff > 1) {
				r->state = RS_FORK;
				r->refill = !emits;
				if ((st = forkq_add(s, r)) != KVS_OK)
					return st;
			}
		}
		if (emits) {
			if (r->first_token < 0)
				r->first_token = s->now;
			r->gen += 1;
		}
		if (r->state != RS_FORK && (st = decode_schedule(s, r)) != KVS_OK)
			return st;
	}
	s->busy = false;
	return KVS_OK;
}

/* ---- public API --------------------------------------------------------------- */

const char *kvs_preempt_mode_name(kvs_preempt_mode m)
{
	switch (m) {
	case KVS_PREEMPT_RECOMPUTE: return "recompute";
	case KVS_PREEMPT_SWAP: return "swap";
	default: return "unknown";
	}
}

kvs_status kvs_preempt_mode_parse(const char *text, kvs_preempt_mode *out)
{
	if (text && strcmp(text, "recompute") == 0) {
		*out = KVS_PREEMPT_RECOMPUTE;
		return KVS_OK;
	}
	if (text && strcmp(text, "swap") == 0) {
		*out = KVS_PREEMPT_SWAP;
		return KVS_OK;
	}
	return kvs_fail(KVS_ERR_INVALID, "preemption mode '%s': expected recompute or swap",
			text ? text : "");
}

const char *kvs_sched_policy_name(kvs_sched_policy p)
{
	return p == KVS_SCHED_FCFS ? "fcfs" : p == KVS_SCHED_PRIORITY ? "priority" : "unknown";
}

kvs_status kvs_sched_policy_parse(const char *text, kvs_sched_policy *out)
{
	for (int p = 0; text && p < KVS_SCHED_COUNT_; p++)
		if (strcmp(text, kvs_sched_policy_name((kvs_sched_policy)p)) == 0) {
			*out = (kvs_sched_policy)p;
			return KVS_OK;
		}
	return kvs_fail(KVS_ERR_INVALID, "scheduling policy '%s': expected fcfs or priority",
			text ? text : "");
}

const char *kvs_sim_reject_name(kvs_sim_reject r)
{
	static const char *const names[KVS_SIM_REJECT_COUNT_] = {
		[KVS_SIM_REJECT_MAX_LEN] = "exceeds_max_model_len",
		[KVS_SIM_REJECT_BUDGET] = "exceeds_kv_budget",
		[KVS_SIM_REJECT_NEVER_FITS] = "never_fits",
		[KVS_SIM_REJECT_EMPTY_PROMPT] = "empty_prompt",
	};
	return (unsigned)r < KVS_SIM_REJECT_COUNT_ ? names[r] : "none";
}

void kvs_sim_config_defaults(kvs_sim_config *c, const kvs_deploy *d)
{
	memset(c, 0, sizeof *c);
	if (d)
		c->deploy = *d;
	c->policy = KVS_POLICY_PAGED;
	c->max_num_seqs = 256;
	c->max_num_batched_tokens = 8192;
	c->preemption_mode = KVS_PREEMPT_RECOMPUTE;
	c->swap_bytes = 4ull << 30;
	c->watermark = 0.01;
	c->page_bytes = 2ull << 20;
	kvs_cost_config_defaults(&c->cost);
	c->fast_path = true;
}

/* Resolve the pool: budget, bytes per token, max_model_len, sizing. */
static kvs_status resolve(const kvs_sim_config *cfg, kvs_sizing *sz,
			  uint64_t *budget, uint64_t *kvb, uint32_t *mml)
{
	const kvs_deploy *d = &cfg->deploy;
	memset(sz, 0, sizeof *sz);
	bool need_sizing = cfg->cost.kind == KVS_COST_ROOFLINE ||
			   !cfg->kv_budget_bytes || !cfg->kv_bytes_per_token;
	if (need_sizing) {
		kvs_status st = kvs_size_compute(d, sz);
		if (st != KVS_OK)
			return st;
	}
	*budget = cfg->kv_budget_bytes ? cfg->kv_budget_bytes : sz->kv_budget_bytes;
	*kvb = cfg->kv_bytes_per_token ? cfg->kv_bytes_per_token : sz->kv_bytes_per_token;
	if (!*kvb)
		return kvs_fail(KVS_ERR_INVALID, "KV bytes per token is 0");
	if (!*budget)
		return kvs_fail(KVS_ERR_INVALID,
				"no KV cache memory left for %s: the weights (%llu B) and "
				"the reserve (%llu B) take the whole usable %llu B (device "
				"memory %llu B, from --gpu-mem or the %s preset, x "
				"--gpu-memory-utilization; try more --tp, more memory or a "
				"smaller --dtype)", d->model.name,
				(unsigned long long)sz->weight_bytes,
				(unsigned long long)sz->reserve_bytes,
				(unsigned long long)sz->usable_bytes,
				(unsigned long long)d->gpu.mem_bytes, d->gpu.name);
	uint64_t m = d->max_model_len ? d->max_model_len : d->model.max_position_embeddings;
	if (m == 0)
		return kvs_fail(KVS_ERR_INVALID, "max_model_len unknown: give --max-model-len");
	if (m > UINT32_MAX)
		return kvs_fail(KVS_ERR_OVERFLOW, "max_model_len %llu too large",
				(unsigned long long)m);
	*mml = (uint32_t)m;
	return KVS_OK;
}

kvs_status kvs_sim_step_time(const kvs_sim_config *cfg,
			     const kvs_step_shape *shape, double *out_s)
{
	kvs_sizing sz;
	uint64_t budget, kvb;
	uint32_t mml;
	kvs_status st = resolve(cfg, &sz, &budget, &kvb, &mml);
	if (st != KVS_OK)
		return st;
	kvs_cost c;
	if ((st = kvs_cost_init(&c, &cfg->cost, &cfg->deploy, &sz)) != KVS_OK)
		return st;
	/* the decode share, then equal prefill chunks over what is left */
	uint64_t T = shape->num_tokens, n = shape->num_seqs;
	uint64_t nd = shape->decode_seqs, cd = shape->decode_context_tokens;
	if (!nd && !cd && T == n)
		nd = n, cd = shape->context_tokens;
	if (nd > n || nd > T || cd > shape->context_tokens)
		return kvs_fail(KVS_ERR_INVALID, "step shape: %llu decode sequences over %llu "
				"context tokens do not fit in %llu sequences, %llu tokens, "
				"%llu context tokens", (unsigned long long)nd,
				(unsigned long long)cd, (unsigned long long)n,
				(unsigned long long)T, (unsigned long long)shape->context_tokens);
	double pre_attn = 0;
	if (n > nd && T > nd) {
		double np = (double)(n - nd), chunk = (double)(T - nd) / np;
		double before = ((double)(shape->context_tokens - cd) - (double)(T - nd)) / np;
		pre_attn = np * kvs_cost_prefill_attn(&c, chunk, before > 0 ? before : 0);
	}
	kvs_win_read w = { (double)cd, (double)shape->context_tokens, shape->attn_pairs };
	*out_s = kvs_cost_step(&c, T, n, (double)shape->context_tokens, shape->attn_pairs,
			       nd, (double)cd, &w, pre_attn);
	return KVS_OK;
}

kvs_status kvs_sim_create(const kvs_sim_config *cfg, kvs_sim **out)
{
	if (!cfg || !out)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_create: NULL argument");
	if (!kvs_policy_get(cfg->policy))
		return kvs_fail(KVS_ERR_INVALID, "unknown policy %d", (int)cfg->policy);
	if (cfg->max_num_seqs == 0)
		return kvs_fail(KVS_ERR_INVALID, "max_num_seqs must be >= 1");
	if (cfg->max_num_batched_tokens < cfg->max_num_seqs)
		return kvs_fail(KVS_ERR_INVALID,
				"max_num_batched_tokens (%u) must be >= max_num_seqs (%u)",
				cfg->max_num_batched_tokens, cfg->max_num_seqs);
	if (!(cfg->watermark >= 0 && cfg->watermark < 1))
		return kvs_fail(KVS_ERR_INVALID, "watermark %g: must be in [0, 1)", cfg->watermark);
	if ((unsigned)cfg->preemption_mode >= KVS_PREEMPT_COUNT_)
		return kvs_fail(KVS_ERR_INVALID, "unknown preemption mode");
	if ((unsigned)cfg->scheduling_policy >= KVS_SCHED_COUNT_)
		return kvs_fail(KVS_ERR_INVALID, "unknown scheduling policy");
	if (cfg->preemption_mode == KVS_PREEMPT_SWAP &&
	    !(cfg->deploy.gpu.pcie_bytes_per_s > 0))
		return kvs_fail(KVS_ERR_INVALID,
				"--preemption-mode swap needs the GPU's PCIe bandwidth "
				"(gpu %s has none)", cfg->deploy.gpu.name);
	if (!(cfg->slo_ttft_s >= 0) || !(cfg->slo_tpot_s >= 0) ||
	    !(cfg->sample_interval_s >= 0) || !(cfg->horizon_s >= 0))
		return kvs_fail(KVS_ERR_INVALID, "SLOs, sample interval and horizon must be >= 0");

	kvs_sim *s = kvs_calloc(1, sizeof *s);
	if (!s)
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	s->cfg = *cfg;
	/* a closed-loop client sends requests at departures the fast path's
	 * spans do not stop at: step one token at a time */
	if (s->cfg.max_concurrency)
		s->cfg.fast_path = false;
	kvs_sizing sz;
	kvs_status st = resolve(cfg, &sz, &s->budget, &s->kvb, &s->mml);
	if (st == KVS_OK && cfg->chunked_prefill_off &&
	    cfg->max_num_batched_tokens < s->mml)
		st = kvs_fail(KVS_ERR_INVALID,
			      "without chunked prefill a prompt is computed in one "
			      "step: max_num_batched_tokens (%u) must be >= "
			      "max_model_len (%u)", cfg->max_num_batched_tokens, s->mml);
	if (st == KVS_OK)
		st = kvs_cost_init(&s->cost, &cfg->cost, &cfg->deploy, &sz);
	if (st != KVS_OK) {
		kvs_free(s);
		return st;
	}
	s->block_size = cfg->deploy.block_size ? cfg->deploy.block_size : 16;
	s->bs_pow2 = kvs_pow2_shift(s->block_size, &s->bs_shift);
	kvs_alloc_config ac;
	kvs_alloc_config_defaults(&ac);
	ac.policy = cfg->policy;
	ac.budget_bytes = s->budget;
	ac.kv_bytes_per_token = s->kvb;
	ac.block_size = s->block_size;
	ac.max_model_len = s->mml;
	ac.watermark = cfg->watermark;
	ac.enable_prefix_caching = cfg->enable_prefix_caching;
	ac.swap_bytes = cfg->preemption_mode == KVS_PREEMPT_SWAP ? cfg->swap_bytes : 0;
	ac.best_fit = cfg->best_fit;
	ac.buddy = cfg->buddy;
	if (cfg->page_bytes)
		ac.page_bytes = cfg->page_bytes;
	if ((st = kvs_sim_offload_resolve(cfg, &ac.offload)) != KVS_OK) {
		kvs_free(s);
		return st;
	}
	uint32_t layers = sz.layers_per_rank ? sz.layers_per_rank : cfg->deploy.model.num_layers;
	/* windowed layers beside full ones, as vLLM's hybrid allocator keeps
	 * them (kvs_sizing.vllm_*): the pool's unit is the full-attention
	 * groups' block and each sequence holds its windowed groups' blocks
	 * beside it (kvs_alloc_config.window_*).  Not when the bytes per
	 * token were given, nor when every layer is windowed. */
	bool windows = !cfg->kv_bytes_per_token && sz.vllm_window_groups &&
		       sz.vllm_full_groups && sz.layers_per_rank;
	if (windows) {
		layers = sz.vllm_full_groups * sz.vllm_group_layers;
		s->kvb = kvs_sizing_pool_bytes_per_token(&sz);
		ac.kv_bytes_per_token = s->kvb;
		ac.window_tokens = cfg->deploy.model.sliding_window;
		ac.window_num = sz.vllm_window_groups;
		ac.window_den = sz.vllm_full_groups;
		ac.window_chunked = cfg->deploy.model.window_chunked;
	}
	if (layers)
		ac.num_kv_tensors = 2 * layers;
	if ((st = kvs_alloc_create(&ac, &s->alloc)) != KVS_OK) {
		kvs_free(s);
		return st;
	}
	s->conc_time = kvs_calloc((size_t)cfg->max_num_seqs + 1, sizeof *s->conc_time);
	s->res = kvs_calloc(1, sizeof *s->res);
	s->ring = kvs_calloc(DQ_W, sizeof *s->ring);
	/* crossing classes: a block-granular policy with a block pool
	 * (paged: taking no block succeeds; kvs_alloc_block_pool would make
	 * the allocator keep every free block's state word exact, which
	 * only the inline pool calls need), and the fast path (stepping one
	 * token at a time touches every sequence anyway); a step's slot in
	 * the ring of final crossings sums fewer than block_size tokens per
	 * running sequence, within its 32 bits */
	s->lazy_ok = s->cfg.fast_path &&
		     kvs_policy_has(cfg->policy, KVS_TRAIT_BLOCK_GRANULAR) &&
		     kvs_alloc_blocks_take(s->alloc, 0, NULL) == KVS_OK &&
		     (uint64_t)cfg->max_num_seqs * s->block_size <= UINT32_MAX;
	s->lazy_on = s->lazy_ok;
	bool lz_fail = false;
	if (s->lazy_ok) {
		s->lz_words = (s->block_size + 63) / 64;
		s->lz_cnt = kvs_calloc(s->block_size, sizeof *s->lz_cnt);
		s->lz_bits = kvs_calloc(s->lz_words, sizeof *s->lz_bits);
		s->pf_ring = kvs_calloc(PF_W, sizeof *s->pf_ring);
		lz_fail = !s->lz_cnt || !s->lz_bits || !s->pf_ring;
	}
	if (!s->conc_time || !s->res || !s->ring || lz_fail) {
		kvs_sim_destroy(s);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	s->res->cfg = *cfg;
	s->res->cfg.kv_offload = ac.offload;   /* with default bandwidths */
	for (int i = 0; i < KVS_METRIC_COUNT_; i++)
		kvs_sketch_init(&s->res->sk[i]);
	kvs_sim_stats *r = &s->res->st;
	r->policy = cfg->policy;
	r->kv_budget_bytes = s->budget;
	r->kv_bytes_per_token = s->kvb;
	r->max_model_len = s->mml;
	r->num_blocks = s->budget / ((uint64_t)s->block_size * s->kvb);
	if (windows) {
		r->window_tokens = ac.window_tokens;
		r->window_groups = sz.vllm_window_groups;
		r->full_groups = sz.vllm_full_groups;
		r->group_layers = sz.vllm_group_layers;
	}
	r->wall_s = -1;
	s->auto_interval = cfg->sample_interval_s == 0;
	s->res->sample_interval_s = s->auto_interval ? 1.0 : cfg->sample_interval_s;
	s->dirty = true;
	s->arrival_bound = INFINITY;
	/* a policy that forks by copy puts the prompt's KV into each child
	 * at the fork, into memory of the child's own: that memory is
	 * reserved with the parent's at admission */
	s->fork_copies = kvs_policy_has(cfg->policy, KVS_TRAIT_FORKS_BY_COPY);
	s->reserve_children = s->fork_copies;
	*out = s;
	return KVS_OK;
}

static void free_reqs(kvs_sim *s)
{
	sreq *r;
	while ((r = deque_pop_front(&s->waiting)))
		sreq_free(r);
	while ((r = deque_pop_front(&s->swapped)))
		sreq_free(r);
	for (r = s->run_head; r;) {
		sreq *n = r->next;
		sreq_free(r);
		r = n;
	}
	s->run_head = s->run_tail = NULL;
	sreq_free(s->pending);
	s->pending = NULL;
	while ((r = s->fed_head)) {
		s->fed_head = r->next;
		sreq_free(r);
	}
	s->fed_tail = NULL;
	free_dead(s);
	while ((r = s->kv_held)) {
		kv_unlink(s, r);
		sreq_free(r);
	}
	while ((r = deque_pop_front(&s->kv_done)))
		sreq_free(r);
	while ((r = deque_pop_front(&s->kv_ready)))
		sreq_free(r);
	while ((r = s->spare)) {
		s->spare = r->next;
		sreq_free(r);
	}
	s->nspare = 0;
}

void kvs_sim_destroy(kvs_sim *s)
{
	if (!s)
		return;
	free_reqs(s);
	kvs_alloc_destroy(s->alloc);
	kvs_free(s->waiting.v);
	kvs_free(s->swapped.v);
	kvs_free(s->kv_done.v);
	kvs_free(s->kv_ready.v);
	kvs_free(s->prefill);
	kvs_free(s->forkq);
	kvs_free(s->heap);
	kvs_free(s->ring);
	kvs_free(s->due);
	kvs_free(s->lz_cnt);
	kvs_free(s->lz_bits);
	kvs_free(s->owed);
	kvs_free(s->pf);
	kvs_free(s->pf_ring);
	kvs_free(s->tg);
	kvs_free(s->tg_due);
	kvs_free(s->ev);
	kvs_free(s->conc_time);
	kvs_free(s->hash_scratch);
	kvs_free(s->desc_hashes);
	kvs_free(s->seen);
	if (s->res)
		kvs_sim_result_destroy(s->res);
	kvs_free(s);
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(kvs_sim *s)
{
	if (!s->cfg.on_progress)
		return;
	kvs_sim_progress p = {
		.sim_time_s = s->now,
		.input_share = s->src && s->src->progress ? s->src->progress(s->src->ctx) : -1.0,
		.arrived = s->res->st.arrived,
		.completed = s->res->st.completed,
		.rejected = s->res->st.rejected,
		.steps = s->res->st.steps,
		.events = s->res->st.events,
	};
	s->cfg.on_progress(s->cfg.on_progress_ctx, &p);
}

static void finalize(kvs_sim *s)
{
	kvs_sim_result *R = s->res;
	kvs_sim_stats *st = &R->st;
	/* a run that never stepped (no request, or every one rejected) held
	 * its first state throughout: that is its peak, from time 0 (else
	 * the six parts would sum to 0, and a fleet's average with them) */
	const kvs_sim_mem_pct *pk = &st->memory_peak_pct;
	if (pk->token_states + pk->reservation + pk->internal_frag + pk->external_frag +
	    pk->cached_idle + pk->free == 0) {
		track_peak(s);
		st->peak_time_s = 0;
	}
	/* whatever is still in the system at the horizon */
	sreq *r;
	for (r = s->run_head; r; r = r->next) {
		st->unfinished++;
		emit_record(s, r, KVS_SIM_UNFINISHED, KVS_SIM_REJECT_COUNT_, -1.0);
	}
	for (size_t i = 0; i < s->waiting.n; i++) {
		st->unfinished++;
		emit_record(s, s->waiting.v[(s->waiting.head + i) % s->waiting.cap],
			    KVS_SIM_UNFINISHED, KVS_SIM_REJECT_COUNT_, -1.0);
	}
	for (size_t i = 0; i < s->swapped.n; i++) {
		st->unfinished++;
		emit_record(s, s->swapped.v[(s->swapped.head + i) % s->swapped.cap],
			    KVS_SIM_UNFINISHED, KVS_SIM_REJECT_COUNT_, -1.0);
	}
	/* received, waiting for their KV or a seat (the sent ones are the
	 * receiving engine's) */
	for (r = s->kv_held; r; r = r->next)
		if (r->state == RS_KV_WAIT) {
			st->unfinished++;
			emit_record(s, r, KVS_SIM_UNFINISHED, KVS_SIM_REJECT_COUNT_, -1.0);
		}
	for (size_t i = 0; i < s->kv_ready.n; i++) {
		st->unfinished++;
		emit_record(s, s->kv_ready.v[(s->kv_ready.head + i) % s->kv_ready.cap],
			    KVS_SIM_UNFINISHED, KVS_SIM_REJECT_COUNT_, -1.0);
	}
	st->sim_time_s = s->now;
	{
		int64_t p[6];
		double e[6];
		parts_now(s, p);
		for (int i = 0; i < 6; i++)
			e[i] = (double)p[i];
		pct_of(s, e, &R->end_pct);
	}
	double T = s->time_total;
	if (T > 0) {
		double b[6];
		for (int i = 0; i < 6; i++)
			b[i] = s->mem_int[i] / T;
		pct_of(s, b, &st->memory_pct);
		double acc = 0, mean = 0;
		bool got50 = false, got99 = false;
		for (uint32_t c = 0; c <= s->cfg.max_num_seqs; c++) {
			acc += s->conc_time[c];
			mean += (double)c * s->conc_time[c];
			if (!got50 && acc >= 0.5 * T) {
				st->concurrency_p50 = c;
				got50 = true;
			}
			if (!got99 && acc >= 0.99 * T) {
				st->concurrency_p99 = c;
				got99 = true;
			}
		}
		st->concurrency_mean = mean / T;
		st->waiting_mean = s->waiting_int / T;
	} else {
		st->memory_pct.free = 100.0;
	}
	if (st->steps)
		st->tokens_per_step_mean = (double)s->tokens_total / (double)st->steps;
	kvs_sketch_dist(&R->sk[KVS_METRIC_QUEUE_DELAY], &st->queue_delay_s);
	kvs_sketch_dist(&R->sk[KVS_METRIC_TTFT], &st->ttft_s);
	kvs_sketch_dist(&R->sk[KVS_METRIC_TPOT], &st->tpot_s);
	kvs_sketch_dist(&R->sk[KVS_METRIC_E2E], &st->e2e_s);
	if (st->sim_time_s > 0) {
		st->requests_per_s = (double)st->completed / st->sim_time_s;
		st->output_tokens_per_s = (double)st->output_tokens / st->sim_time_s;
		st->goodput_requests_per_s = (double)s->good / st->sim_time_s;
	}
	/* of the requests this engine answers for (arrived, unless some were
	 * handed out or received: docs/FLEET.md) */
	uint64_t answered = st->completed + st->rejected + st->unfinished;
	st->goodput_fraction = answered ? (double)s->good / (double)answered : 0;
	st->swapped_bytes = st->swap_out_bytes + st->swap_in_bytes;
	kvs_alloc_stats as;
	kvs_alloc_get_stats(s->alloc, &as);
	st->cow_copies = as.cow_copies;
	st->copy_bytes = as.copy_bytes;
	st->prefix_hit_tokens = as.prefix_hit_tokens;
	st->prefix_hit_blocks = as.prefix_hit_blocks;
	st->prefix_miss_tokens = as.prefix_miss_tokens;
	st->prefix_miss_blocks = as.prefix_miss_blocks;
	uint64_t tt = as.prefix_hit_tokens + as.prefix_miss_tokens;
	uint64_t tb = as.prefix_hit_blocks + as.prefix_miss_blocks;
	st->prefix_hit_rate_tokens = tt ? (double)as.prefix_hit_tokens / (double)tt : 0;
	st->prefix_hit_rate_blocks = tb ? (double)as.prefix_hit_blocks / (double)tb : 0;
	kvs_alloc_offload_stats(s->alloc, &R->offload);
	if (as.metadata_bytes > st->metadata_bytes_max)
		st->metadata_bytes_max = as.metadata_bytes;
	if (s->cfg.record_wall_time)
		st->wall_s = wall_now() - s->wall0;
}

/* ---- driving the engine: start, feed, advance, finish ------------------------
 * kvs_sim_run is start + advance(+inf) + finish over a source; a fleet
 * drives many engines through the same calls, feeding each the requests
 * routed to it (docs/FLEET.md). */

kvs_status kvs_sim_start(kvs_sim *s, const kvs_request_source *src)
{
	if (!s || (src && !src->next))
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_start: NULL argument");
	if (s->ran)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_start: a simulator runs once");
	s->ran = true;
	s->started = true;
	s->src = src;
	s->wall0 = wall_now();
	kvs_status st = pull(s);
	if (st == KVS_OK && s->pending) {
		st = ev_push(s, s->pending->arrival, EV_ARRIVAL);
		s->arrival_event_queued = true;
	}
	return st;
}

static kvs_status feed_sreq(kvs_sim *s, sreq *r);

kvs_status kvs_sim_feed(kvs_sim *s, const kvs_request *req)
{
	if (!s || !req)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_feed: NULL argument");
	if (!s->started || s->src)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_feed: the engine was not started "
				"without a source");
	if (req->arrival_s < s->now)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_feed: request %llu arrives at %.9g s, "
				"before the engine's time %.9g s", (unsigned long long)req->index,
				req->arrival_s, s->now);
	if (s->stopped || s->src_done)
		return KVS_OK;   /* past the horizon: the input has ended */
	sreq *r;
	kvs_status st = make_sreq(s, req, &r);
	if (st != KVS_OK || !r)
		return st;
	return feed_sreq(s, r);
}

kvs_status kvs_sim_feed_kv(kvs_sim *s, const kvs_sim_kv_handoff *h, double t_s)
{
	if (!s || !h)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_feed_kv: NULL argument");
	if (!s->started || s->src)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_feed_kv: the engine was not started "
				"without a source");
	if (t_s < s->now)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_feed_kv: request %llu comes at %.9g s, "
				"before the engine's time %.9g s",
				(unsigned long long)h->req.index, t_s, s->now);
	kvs_request q = h->req;
	q.arrival_s = t_s;
	sreq *r;
	kvs_status st = KVS_OK;
	if (s->stopped || s->src_done || (s->cfg.horizon_s > 0 && t_s > s->cfg.horizon_s)) {
		/* past the end of the run: received, and unfinished */
		s->kv_received++;
		s->res->st.unfinished++;
		r = kvs_calloc(1, sizeof *r);
		if (!r)
			return kvs_fail(KVS_ERR_NOMEM, "out of memory (request)");
		r->index = q.index;
		r->line = q.line;
		r->arrival = h->req.arrival_s;
		r->admitted = h->admitted_s;
		r->admitted_once = true;
		r->first_token = -1;
		r->prompt = q.prompt_tokens;
		r->output = q.output_tokens;
		r->n = q.num_samples > 1 ? q.num_samples : 1;
		r->cached_first = h->cached_tokens;
		r->preemptions = h->preemptions;
		emit_record(s, r, KVS_SIM_UNFINISHED, KVS_SIM_REJECT_COUNT_, -1.0);
		sreq_free(r);
		return KVS_OK;
	}
	if ((st = make_sreq(s, &q, &r)) != KVS_OK)
		return st;
	kvs_require(r);
	r->kv_remote = true;
	r->kv_origin = h->origin;
	r->kv_arrival = h->req.arrival_s;
	r->admitted = h->admitted_s;
	r->admitted_once = true;
	r->cached_first = h->cached_tokens;
	r->preemptions = h->preemptions;
	return feed_sreq(s, r);
}

/* Queue r (made by make_sreq) for its arrival. */
static kvs_status feed_sreq(kvs_sim *s, sreq *r)
{
	kvs_status st;
	r->next = NULL;
	if (s->fed_tail)
		s->fed_tail->next = r;
	else
		s->fed_head = r;
	s->fed_tail = r;
	if (s->pending)
		return KVS_OK;
	if ((st = pull(s)) != KVS_OK)
		return st;
	if (s->pending && !s->arrival_event_queued) {
		if ((st = ev_push(s, s->pending->arrival, EV_ARRIVAL)) != KVS_OK)
			return st;
		s->arrival_event_queued = true;
	}
	return KVS_OK;
}

double kvs_sim_next_event_s(const kvs_sim *s)
{
	int w;
	const event *e = ev_next(s, &w);
	return e && !s->stopped ? e->t : INFINITY;
}

kvs_status kvs_sim_advance(kvs_sim *s, double until_s)
{
	return kvs_sim_advance_bounded(s, until_s, until_s);
}

kvs_status kvs_sim_advance_bounded(kvs_sim *s, double until_s, double input_s)
{
	if (!s || !s->started)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_advance: the engine was not started");
	if (s->err != KVS_OK)
		return s->err;
	if (!s->src)
		s->arrival_bound = input_s > until_s ? input_s : until_s;
	kvs_status st = KVS_OK;
	double horizon = s->cfg.horizon_s;
	for (;;) {
		int w;
		const event *next = ev_next(s, &w);
		if (s->stopped || !next || !(next->t < until_s))
			break;
		if (s->cfg.interrupt && *s->cfg.interrupt) {
			/* as at a horizon: what is in the system is unfinished */
			s->res->st.interrupted = true;
			s->stopped = true;
			break;
		}
		event e = ev_take(s, w);
		if (!s->busy && e.t > s->now) {
			double until = horizon > 0 && e.t > horizon ? horizon : e.t;
			if ((st = integrate(s, s->now, until - s->now, NULL, 0, 0)) != KVS_OK)
				break;
		}
		if (horizon > 0 && e.t > horizon && !s->busy) {
			s->now = horizon;
			s->stopped = true;
			break;
		}
		s->now = e.t;
		s->res->st.events++;
		if (e.type == EV_ARRIVAL)
			s->arrival_event_queued = false;
		else if (e.type == EV_STEP_DONE && (st = step_done(s)) != KVS_OK)
			break;
		if ((st = drain_arrivals(s)) != KVS_OK)
			break;
		/* the horizon ends the run at a step boundary: an event at or
		 * after it inside a step (or span), an arrival exactly on it,
		 * waits for that step's end, whose steps count */
		if (horizon > 0 && s->now >= horizon && !s->busy) {
			s->stopped = true;
			break;
		}
		if (!s->busy && (st = plan(s)) != KVS_OK)
			break;
		/* closed loop: a request that left inside this event's work frees
		 * a client slot; the held request is sent at once */
		if (s->pending && !s->arrival_event_queued && !client_full(s)) {
			double t = s->pending->arrival > s->now ? s->pending->arrival : s->now;
			if ((st = ev_push(s, t, EV_ARRIVAL)) != KVS_OK)
				break;
			s->arrival_event_queued = true;
		}
		if ((s->plannings & 0x3fff) == 0)
			progress(s);
		if (!s->src && s->arrival_bound < until_s)
			until_s = s->arrival_bound;   /* lowered by on_kv */
	}
	s->err = st;
	return st;
}

/* The KV of r is read (prefill side) or has arrived (decode side) at t_s:
 * taken at the next planning, which an idle engine runs at t_s. */
static kvs_status kv_event(kvs_sim *s, uint64_t handle, double t_s, rstate from,
			   deque *to, const char *what)
{
	if (!s || !handle)
		return kvs_fail(KVS_ERR_INVALID, "%s: NULL argument", what);
	sreq *r = (sreq *)(uintptr_t)handle;
	if (r->state != from)
		return kvs_fail(KVS_ERR_STATE, "%s: request %llu is not waiting for it", what,
				(unsigned long long)r->index);
	if (t_s < s->now)
		return kvs_fail(KVS_ERR_STATE, "%s: request %llu at %.9g s, before the engine's "
				"time %.9g s", what, (unsigned long long)r->index, t_s, s->now);
	kv_unlink(s, r);
	r->state = RS_KV_READY;
	if (!deque_push_back(to, r)) {
		sreq_free(r);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory (KV queue)");
	}
	if (!s->busy && !s->stopped)
		return ev_push(s, t_s, EV_WAKE);
	return KVS_OK;
}

kvs_status kvs_sim_kv_release(kvs_sim *s, uint64_t handle, double t_s)
{
	return kv_event(s, handle, t_s, RS_KV_SEND, &s->kv_done, "kvs_sim_kv_release");
}

kvs_status kvs_sim_kv_arrived(kvs_sim *s, uint64_t handle, double t_s)
{
	return kv_event(s, handle, t_s, RS_KV_WAIT, &s->kv_ready, "kvs_sim_kv_arrived");
}

double kvs_sim_now_s(const kvs_sim *s)
{
	return s->now;
}

uint64_t kvs_sim_host_bytes(const kvs_sim *s)
{
	kvs_alloc_stats a;
	kvs_alloc_get_stats(s->alloc, &a);
	/* the engine: itself, its result, the decode ring, the ring of final
	 * crossings and the concurrency histogram (the requests come later) */
	return a.block_metadata_bytes + sizeof *s + sizeof *s->res +
	       (uint64_t)DQ_W * sizeof *s->ring +
	       (s->pf_ring ? (uint64_t)PF_W * sizeof *s->pf_ring : 0) +
	       ((uint64_t)s->cfg.max_num_seqs + 1) * sizeof *s->conc_time;
}

void kvs_sim_get_load(kvs_sim *s, kvs_sim_load *out)
{
	const kvs_sim_stats *st = &s->res->st;
	memset(out, 0, sizeof *out);
	out->arrived = st->arrived;
	out->completed = st->completed;
	out->rejected = st->rejected;
	out->running = s->nrunning;
	out->waiting = s->waiting.n + s->swapped.n;
	out->kv_sent = s->kv_sent;
	out->kv_received = s->kv_received;
	uint64_t nb = kvs_alloc_num_blocks(s->alloc);
	if (nb) {
		out->kv_usage = 1.0 - (double)kvs_alloc_free_blocks(s->alloc) / (double)nb;
	} else {
		int64_t p[6];
		parts_now(s, p);
		out->kv_usage = (double)(p[0] + p[1] + p[2]) / (double)s->budget;
	}
}

uint32_t kvs_sim_prefix_match(kvs_sim *s, const kvs_request *req, uint32_t *nblocks)
{
	sreq tmp;
	memset(&tmp, 0, sizeof tmp);
	tmp.prompt = req->prompt_tokens;
	if (nblocks)
		*nblocks = 0;
	if (copy_hashes(s, &tmp, req) != KVS_OK || !tmp.nhashes) {
		kvs_free(tmp.hashes);
		return 0;
	}
	/* the ids at the block size (re-split into the scratch when the
	 * trace's granularity differs), up to the first repeated id */
	const uint64_t *ids = tmp.hashes;
	uint32_t n = tmp.nhashes;
	if (tmp.hash_block != s->block_size) {
		if (resplit(s, tmp.hashes, tmp.nhashes, tmp.hash_block, tmp.prompt, &n) != KVS_OK) {
			kvs_free(tmp.hashes);
			return 0;
		}
		ids = s->hash_scratch;
	}
	if (n > tmp.nblock_hashes)
		n = tmp.nblock_hashes;
	uint32_t hit = n ? kvs_alloc_prefix_lookup(s->alloc, ids, n) : 0;
	if (nblocks)
		*nblocks = n;
	kvs_free(tmp.hashes);
	return hit;
}

kvs_status kvs_sim_finish(kvs_sim *s, kvs_sim_result **out)
{
	if (!s || !out)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_finish: NULL argument");
	if (!s->started || !s->res)
		return kvs_fail(KVS_ERR_STATE, "kvs_sim_finish: not started, or finished");
	if (s->err != KVS_OK)
		return s->err;
	/* every event and every fed request first */
	kvs_status st = kvs_sim_advance(s, INFINITY);
	if (st != KVS_OK)
		return st;
	if ((st = lz_sync_all(s)) != KVS_OK)
		return st;
	progress(s);
	finalize(s);
	kvs_require(s->res->st.arrived + s->kv_received ==
		    s->res->st.completed + s->res->st.rejected + s->res->st.unfinished +
		    s->kv_sent);
	*out = s->res;
	s->res = NULL;
	return KVS_OK;
}

kvs_status kvs_sim_run(kvs_sim *s, const kvs_request_source *src,
		       kvs_sim_result **out)
{
	if (!s || !src || !src->next || !out)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sim_run: NULL argument");
	kvs_status st = kvs_sim_start(s, src);
	if (st == KVS_OK)
		st = kvs_sim_finish(s, out);
	return st;
}

kvs_status kvs_sim_replay(const kvs_sim_config *cfg,
			  const kvs_request_source *src, kvs_sim_result **out)
{
	kvs_sim *s;
	kvs_status st = kvs_sim_create(cfg, &s);
	if (st != KVS_OK)
		return st;
	st = kvs_sim_run(s, src, out);
	kvs_sim_destroy(s);
	return st;
}

/* ---- results -------------------------------------------------------------------- */

const kvs_sim_stats *kvs_sim_result_stats(const kvs_sim_result *r)
{
	return &r->st;
}

const kvs_sim_config *kvs_sim_result_config(const kvs_sim_result *r)
{
	return &r->cfg;
}

double kvs_sim_result_quantile(const kvs_sim_result *r, kvs_sim_metric m, double q)
{
	if ((unsigned)m >= KVS_METRIC_COUNT_)
		return 0;
	return kvs_sketch_quantile(&r->sk[m], q);
}

double kvs_sim_result_mean(const kvs_sim_result *r, kvs_sim_metric m)
{
	if ((unsigned)m >= KVS_METRIC_COUNT_ || !r->sk[m].count)
		return 0;
	return r->sk[m].sum / (double)r->sk[m].count;
}

double kvs_sim_result_std(const kvs_sim_result *r, kvs_sim_metric m)
{
	if ((unsigned)m >= KVS_METRIC_COUNT_)
		return 0;
	return kvs_sketch_std(&r->sk[m]);
}

uint64_t kvs_sim_result_count(const kvs_sim_result *r, kvs_sim_metric m)
{
	if ((unsigned)m >= KVS_METRIC_COUNT_)
		return 0;
	return r->sk[m].count;
}

const kvs_sim_sample *kvs_sim_result_samples(const kvs_sim_result *r, size_t *n,
					     double *interval_s)
{
	if (n)
		*n = r->nsamples;
	if (interval_s)
		*interval_s = r->sample_interval_s;
	return r->samples;
}

void kvs_sim_result_destroy(kvs_sim_result *r)
{
	if (!r)
		return;
	for (int i = 0; i < KVS_METRIC_COUNT_; i++)
		kvs_sketch_free(&r->sk[i]);
	kvs_free(r->samples);
	kvs_free(r);
}
