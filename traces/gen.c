/*
 * gen.c - the synthetic workload generator behind `kvsim gen`.
 *
 * Conversations (sessions) start by an arrival process (Poisson, gamma
 * with a coefficient of variation, or constant gaps).  Each has a number of
 * turns; turn 1's prompt is an optional shared system prompt plus new
 * tokens, turn k's prompt is turn k-1's prompt and output plus new tokens,
 * and turn k arrives a think time after turn k-1.  Requests come out in
 * arrival order: a min-heap holds the next turn of every conversation in
 * flight, so memory grows with concurrency, not with the trace length.
 *
 * Hash ids (chained, one per full block of hash_block_tokens) are a pure
 * function of where a block sits, so nothing per block is stored:
 *
 *   block i inside shared system prompt g   ((1 + g) << 32) | i
 *   any other block i of conversation c     ((1 + G + c) << 32) | i
 *
 * Two prompts share block i exactly when they share every token up to its
 * end: the same system prompt, or the same conversation's history.
 *
 * Random streams: arrivals, lengths and structure (groups, turns, think
 * times) draw from three generators seeded from --seed, so changing one
 * option does not reshuffle the others.
 */
#include "trace_internal.h"
#include "common/num.h"
#include "common/array.h"
#include "common/heap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RESERVOIR_MAX (1u << 20)

void kvs_gen_opts_defaults(kvs_gen_opts *o)
{
	memset(o, 0, sizeof *o);
	o->seed = 1;
	o->requests = 1000;
	o->arrival = KVS_ARRIVAL_POISSON;
	o->rate = 1.0;
	o->cv = 1.0;
	o->prompt = (kvs_gen_dist){ KVS_DIST_LOGNORMAL, 1024, 1.0, NULL };
	o->output = (kvs_gen_dist){ KVS_DIST_LOGNORMAL, 256, 1.0, NULL };
	o->max_tokens = 131072;
	o->prefix_groups = 1;
	o->turns = 1;
	o->num_samples = 1;
	o->hash_block_tokens = 16;
	o->hashes = -1;
}

/* NULL when d's parameters make lengths in [1, 2^32) (the sampler
 * converts them to integers), else why not. */
static const char *dist_check(const kvs_gen_dist *d)
{
	switch (d->kind) {
	case KVS_DIST_FIXED:
		if (!(d->a >= 1 && d->a <= 4294967295.0) || d->a != floor(d->a))
			return "the length must be a whole number >= 1";
		return NULL;
	case KVS_DIST_UNIFORM:
		if (!(d->a >= 1 && d->b >= d->a && d->b <= 4294967295.0) ||
		    d->a != floor(d->a) || d->b != floor(d->b))
			return "needs whole numbers 1 <= MIN <= MAX";
		return NULL;
	case KVS_DIST_LOGNORMAL:
		if (!(d->a >= 1 && d->a <= 4294967295.0))
			return "the mean must be >= 1 token";
		if (!(d->b >= 0 && d->b <= 4))
			return "sigma must be in [0, 4]";
		return NULL;
	case KVS_DIST_TRACE:
		return d->trace_path && *d->trace_path ? NULL : "trace: needs a file";
	default:
		return "unknown distribution";
	}
}

kvs_status kvs_gen_dist_parse(const char *text, kvs_gen_dist *out)
{
	kvs_gen_dist d = { 0 };
	if (!text || !*text)
		return kvs_fail(KVS_ERR_INVALID, "empty length distribution");
	if (strncmp(text, "trace:", 6) == 0) {
		if (!text[6])
			return kvs_fail(KVS_ERR_INVALID, "'%s': trace: needs a file", text);
		d.kind = KVS_DIST_TRACE;
		d.trace_path = text + 6;
		*out = d;
		return KVS_OK;
	}
	const char *colon = strchr(text, ':');
	size_t kl = colon ? (size_t)(colon - text) : strlen(text);
	int want;
	if (kl == 5 && strncmp(text, "fixed", 5) == 0) {
		d.kind = KVS_DIST_FIXED;
		want = 1;
	} else if (kl == 7 && strncmp(text, "uniform", 7) == 0) {
		d.kind = KVS_DIST_UNIFORM;
		want = 2;
	} else if (kl == 9 && strncmp(text, "lognormal", 9) == 0) {
		d.kind = KVS_DIST_LOGNORMAL;
		want = 2;
	} else {
		/* a bare number is a fixed length */
		const char *end;
		d.kind = KVS_DIST_FIXED;
		if (kvs_strtod_decimal(text, &d.a, &end) && *end == '\0' && !dist_check(&d)) {
			*out = d;
			return KVS_OK;
		}
		return kvs_fail(KVS_ERR_INVALID,
				"'%s' is not a length distribution (expected fixed:N, "
				"uniform:MIN:MAX, lognormal:MEAN:SIGMA or trace:FILE)", text);
	}
	double v[2] = { 0, 0 };
	const char *p = colon;
	for (int i = 0; i < want; i++) {
		if (!p || *p != ':')
			return kvs_fail(KVS_ERR_INVALID, "'%s': expected %d number(s) after '%.*s:'",
					text, want, (int)kl, text);
		if (!kvs_strtod_decimal(p + 1, &v[i], &p))
			return kvs_fail(KVS_ERR_INVALID, "'%s': parameter %d is not a finite "
					"decimal number", text, i + 1);
	}
	if (*p)
		return kvs_fail(KVS_ERR_INVALID, "'%s': unexpected text '%s'", text, p);
	d.a = v[0];
	d.b = v[1];
	const char *why = dist_check(&d);
	if (why)
		return kvs_fail(KVS_ERR_INVALID, "'%s': %s", text, why);
	*out = d;
	return KVS_OK;
}

typedef struct conv {
	double t;               /* arrival of its next turn */
	uint64_t seq;           /* tie break: creation order */
	uint64_t id;            /* 1-based */
	uint32_t turn;          /* turns emitted */
	uint32_t turns;         /* turns planned */
	uint64_t history;       /* tokens of the previous prompt + output */
	int32_t group;          /* shared system prompt, -1 none */
} conv;

typedef struct pairs {
	uint32_t *prompt, *output;
	uint32_t n;
} pairs;

struct kvs_gen {
	kvs_gen_opts o;
	kvs_rng arr, len, structure;
	bool hashes;
	double next_new;        /* arrival of the next new conversation */
	uint64_t convs;         /* conversations started */
	uint64_t emitted;
	uint64_t seq;
	conv **heap;
	size_t heap_n, heap_cap;
	pairs prompt_src, output_src;
	bool joint;             /* prompt and output resampled as pairs */
	uint32_t pair_idx;
	uint64_t *ids;
	uint32_t ids_cap;
	conv *spare;            /* a finished conversation's struct, reused */
	double prompt_mu, output_mu;   /* lognormal: ln mean - sigma^2 / 2 */
	uint32_t turns_fixed;          /* turns, rounded (not geometric) */
};

/* A lognormal of mean a and shape b: mu = ln a - b^2 / 2 (computed once,
 * at open; 0 for the other kinds). */
static double lognormal_mu(const kvs_gen_dist *d)
{
	return d->kind == KVS_DIST_LOGNORMAL ? log(d->a) - 0.5 * d->b * d->b : 0;
}

static kvs_status load_pairs(const char *path, uint64_t seed, pairs *p)
{
	kvs_trace *t;
	kvs_status st = kvs_trace_open(path, NULL, &t);
	if (st != KVS_OK)
		return st;
	kvs_rng r;
	kvs_rng_seed(&r, seed ^ 0x7265736572766f69ull);
	p->prompt = kvs_calloc(RESERVOIR_MAX, sizeof *p->prompt);
	p->output = kvs_calloc(RESERVOIR_MAX, sizeof *p->output);
	if (!p->prompt || !p->output) {
		kvs_trace_close(t);
		return kvs_fail(KVS_ERR_NOMEM, "no memory to resample %s", path);
	}
	kvs_request q;
	uint64_t seen = 0;
	while ((st = kvs_trace_next(t, &q)) == KVS_OK) {
		/* reservoir sampling (algorithm R): a uniform sample of at most
		 * RESERVOIR_MAX pairs in constant memory */
		uint64_t slot = seen < RESERVOIR_MAX ? seen : kvs_rng_below(&r, seen + 1);
		if (slot < RESERVOIR_MAX) {
			p->prompt[slot] = q.prompt_tokens;
			p->output[slot] = q.output_tokens;
		}
		seen++;
	}
	kvs_trace_close(t);
	if (st != KVS_END)
		return st;
	if (seen == 0)
		return kvs_fail(KVS_ERR_INVALID, "%s: no requests to resample lengths from", path);
	p->n = seen < RESERVOIR_MAX ? (uint32_t)seen : RESERVOIR_MAX;
	return KVS_OK;
}

static uint32_t clamp_len(kvs_gen *g, double x)
{
	if (!(x >= 1))
		return 1;
	if (x > g->o.max_tokens)
		return g->o.max_tokens;
	return (uint32_t)x;
}

static inline uint32_t sample(kvs_gen *g, const kvs_gen_dist *d, double mu, const pairs *src,
		       bool is_output)
{
	switch (d->kind) {
	case KVS_DIST_FIXED:
		return clamp_len(g, d->a);
	case KVS_DIST_UNIFORM:
		return clamp_len(g, d->a + (double)kvs_rng_below(&g->len, (uint64_t)(d->b - d->a) + 1));
	case KVS_DIST_LOGNORMAL:
		return kvs_rng_lognormal_len(&g->len, mu, d->b, g->o.max_tokens);
	case KVS_DIST_TRACE:
	default: {
		uint32_t i;
		if (is_output && g->joint)
			i = g->pair_idx;
		else
			i = (uint32_t)kvs_rng_below(&g->len, src->n);
		if (!is_output)
			g->pair_idx = i;
		return clamp_len(g, is_output ? src->output[i] : src->prompt[i]);
	}
	}
}

static double gap(kvs_gen *g)
{
	switch (g->o.arrival) {
	case KVS_ARRIVAL_CONSTANT:
		return 1.0 / g->o.rate;
	case KVS_ARRIVAL_GAMMA: {
		double shape = 1.0 / (g->o.cv * g->o.cv);
		return kvs_rng_gamma(&g->arr, shape, 1.0 / (g->o.rate * shape));
	}
	default:
		return kvs_rng_exp(&g->arr, g->o.rate);
	}
}

static kvs_status check(const kvs_gen_opts *o)
{
	if (o->requests == 0 && !(o->duration_s > 0))
		return kvs_fail(KVS_ERR_INVALID, "generator: give a number of requests or a duration");
	if (!(o->duration_s >= 0) || !isfinite(o->duration_s))
		return kvs_fail(KVS_ERR_INVALID, "generator: duration must be >= 0 s");
	if (!(o->rate > 0) || !isfinite(o->rate))
		return kvs_fail(KVS_ERR_INVALID, "generator: --rate must be > 0, got %g", o->rate);
	if (o->arrival == KVS_ARRIVAL_GAMMA && !(o->cv > 0 && o->cv <= 100))
		return kvs_fail(KVS_ERR_INVALID, "generator: --cv must be in (0, 100], got %g", o->cv);
	if ((unsigned)o->arrival > KVS_ARRIVAL_CONSTANT)
		return kvs_fail(KVS_ERR_INVALID, "generator: unknown arrival process");
	if (o->max_tokens == 0)
		return kvs_fail(KVS_ERR_INVALID, "generator: --max-tokens must be >= 1");
	if (!(o->prefix_fraction >= 0 && o->prefix_fraction <= 1))
		return kvs_fail(KVS_ERR_INVALID, "generator: --prefix-fraction must be in [0, 1], got %g",
				o->prefix_fraction);
	if (o->prefix_fraction > 0 && (o->prefix_groups == 0 || o->prefix_tokens == 0))
		return kvs_fail(KVS_ERR_INVALID, "generator: --prefix-fraction needs --prefix-tokens "
				"> 0 and --prefix-groups >= 1");
	if (o->prefix_groups > (1u << 20))
		return kvs_fail(KVS_ERR_INVALID, "generator: at most %u prefix groups", 1u << 20);
	if (o->prefix_tokens >= o->max_tokens && o->prefix_fraction > 0)
		return kvs_fail(KVS_ERR_INVALID, "generator: the shared prefix (%u tokens) leaves no "
				"room under --max-tokens %u", o->prefix_tokens, o->max_tokens);
	/* what kvs_gen_dist_parse refuses, for options filled in directly */
	const char *why = dist_check(&o->prompt);
	if (why)
		return kvs_fail(KVS_ERR_INVALID, "generator: --prompt-len: %s", why);
	if ((why = dist_check(&o->output)))
		return kvs_fail(KVS_ERR_INVALID, "generator: --output-len: %s", why);
	if (!(o->turns >= 1 && o->turns <= 1e6))
		return kvs_fail(KVS_ERR_INVALID, "generator: --turns must be in [1, 1e6], got %g", o->turns);
	/* a fixed count of turns is a whole number; the geometric mean need not be */
	if (!o->turns_geometric && o->turns != floor(o->turns))
		return kvs_fail(KVS_ERR_INVALID, "generator: --turns %g is not a whole number (a "
				"fractional mean needs --turns-dist geometric)", o->turns);
	if (!(o->think_s >= 0) || !isfinite(o->think_s))
		return kvs_fail(KVS_ERR_INVALID, "generator: --think must be >= 0 s");
	if (o->num_samples == 0)
		return kvs_fail(KVS_ERR_INVALID, "generator: --n must be >= 1");
	if (o->hash_block_tokens == 0 || o->hash_block_tokens > (1u << 20))
		return kvs_fail(KVS_ERR_INVALID, "generator: --hash-block must be in [1, %u]", 1u << 20);
	return KVS_OK;
}

kvs_status kvs_gen_open(const kvs_gen_opts *opts, kvs_gen **out)
{
	kvs_status st = check(opts);
	if (st != KVS_OK)
		return st;
	kvs_gen *g = kvs_calloc(1, sizeof *g);
	if (!g)
		return kvs_fail(KVS_ERR_NOMEM, "no memory for the generator");
	g->o = *opts;
	g->prompt_mu = lognormal_mu(&opts->prompt);
	g->output_mu = lognormal_mu(&opts->output);
	g->turns_fixed = (uint32_t)floor(opts->turns + 0.5);
	kvs_rng_seed(&g->arr, opts->seed * 3 + 0);
	kvs_rng_seed(&g->len, opts->seed * 3 + 1);
	kvs_rng_seed(&g->structure, opts->seed * 3 + 2);
	g->hashes = opts->hashes > 0 ||
		    (opts->hashes < 0 && ((opts->prefix_fraction > 0 && opts->prefix_tokens > 0) ||
					  opts->turns > 1));
	if (opts->prompt.kind == KVS_DIST_TRACE)
		st = load_pairs(opts->prompt.trace_path, opts->seed, &g->prompt_src);
	if (st == KVS_OK && opts->output.kind == KVS_DIST_TRACE) {
		if (opts->prompt.kind == KVS_DIST_TRACE &&
		    strcmp(opts->prompt.trace_path, opts->output.trace_path) == 0)
			g->joint = true;
		else
			st = load_pairs(opts->output.trace_path, opts->seed, &g->output_src);
	}
	if (st != KVS_OK) {
		kvs_gen_close(g);
		return st;
	}
	g->next_new = 0;
	*out = g;
	return KVS_OK;
}

static inline bool conv_before(conv *const *a, conv *const *b)
{
	return (*a)->t < (*b)->t || ((*a)->t == (*b)->t && (*a)->seq < (*b)->seq);
}

KVS_HEAP_DEFINE(convh, conv *, conv_before)

static bool heap_push(kvs_gen *g, conv *c)
{
	if (!KVS_ARRAY_RESERVE(g->heap, g->heap_cap, g->heap_n + 1, 64))
		return false;
	convh_push(g->heap, &g->heap_n, c);
	return true;
}

static conv *heap_pop(kvs_gen *g)
{
	return convh_pop(g->heap, &g->heap_n);
}

/* A conversation that ended: its struct serves the next new one (a
 * single-turn workload would otherwise allocate and free one per
 * request). */
static void conv_end(kvs_gen *g, conv *c)
{
	if (g->spare)
		kvs_free(c);
	else
		g->spare = c;
}

static kvs_status new_conv(kvs_gen *g, conv **out)
{
	conv *c = g->spare;
	if (c) {
		g->spare = NULL;
		memset(c, 0, sizeof *c);
	} else if (!(c = kvs_calloc(1, sizeof *c))) {
		return kvs_fail(KVS_ERR_NOMEM, "no memory for a conversation");
	}
	c->t = g->next_new;
	c->seq = g->seq++;
	c->id = ++g->convs;
	c->group = -1;
	if (g->o.prefix_fraction > 0 && g->o.prefix_tokens > 0 &&
	    kvs_rng_uniform(&g->structure) < g->o.prefix_fraction)
		c->group = (int32_t)kvs_rng_below(&g->structure, g->o.prefix_groups);
	if (g->o.turns_geometric && g->o.turns > 1) {
		/* geometric on {1, 2, ...} with mean turns */
		double p = 1.0 / g->o.turns;
		double u = kvs_rng_uniform_pos(&g->structure);
		double k = ceil(log(u) / log1p(-p));
		c->turns = k < 1 ? 1 : k > 1e6 ? 1000000u : (uint32_t)k;
	} else {
		c->turns = g->turns_fixed;
	}
	g->next_new += gap(g);
	*out = c;
	return KVS_OK;
}

static kvs_status fill_hashes(kvs_gen *g, const conv *c, uint32_t prompt, kvs_request *r)
{
	uint32_t b = g->o.hash_block_tokens;
	uint32_t n = prompt / b;
	r->hash_ids = NULL;
	r->num_hash_ids = 0;
	r->hash_block_tokens = b;
	if (n > g->ids_cap) {
		uint64_t *p = kvs_reallocarray(g->ids, n, sizeof *p);
		if (!p)
			return kvs_fail(KVS_ERR_NOMEM, "no memory for hash ids");
		g->ids = p;
		g->ids_cap = n;
	}
	uint64_t owner_conv = 1 + (uint64_t)g->o.prefix_groups + c->id;
	if (owner_conv >= (1ull << 31))
		return kvs_fail(KVS_ERR_OVERFLOW, "generator: more than 2^31 conversations with hash ids");
	uint32_t shared = c->group >= 0 ? g->o.prefix_tokens / b : 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t owner = i < shared ? 1 + (uint64_t)c->group : owner_conv;
		g->ids[i] = (owner << 32) | i;
	}
	r->hash_ids = n ? g->ids : NULL;
	r->num_hash_ids = n;
	return KVS_OK;
}

kvs_status kvs_gen_next(kvs_gen *g, kvs_request *r)
{
	for (;;) {
		if (g->o.requests && g->emitted >= g->o.requests)
			return KVS_END;
		conv *c = NULL;
		bool fresh = g->heap_n == 0 || g->next_new < g->heap[0]->t;
		double t = fresh ? g->next_new : g->heap[0]->t;
		if (g->o.duration_s > 0 && t >= g->o.duration_s)
			return KVS_END;
		if (fresh) {
			kvs_status st = new_conv(g, &c);
			if (st != KVS_OK)
				return st;
		} else {
			c = heap_pop(g);
		}
		uint32_t add = sample(g, &g->o.prompt, g->prompt_mu, &g->prompt_src, false);
		uint32_t out = sample(g, &g->o.output, g->output_mu,
				      g->joint ? &g->prompt_src : &g->output_src, true);
		uint64_t base = c->turn == 0 ? (c->group >= 0 ? g->o.prefix_tokens : 0) : c->history;
		uint64_t prompt = base + add;
		if (prompt > g->o.max_tokens) {
			if (c->turn > 0) {
				/* the conversation outgrew the context: it ends */
				conv_end(g, c);
				continue;
			}
			prompt = g->o.max_tokens;
		}
		memset(r, 0, sizeof *r);
		r->index = g->emitted;
		r->line = 0;
		r->arrival_s = c->t;
		r->prompt_tokens = (uint32_t)prompt;
		r->output_tokens = out;
		r->num_samples = g->o.num_samples;
		c->turn++;
		if (c->turns > 1) {
			r->session_id = c->id;
			r->turn = c->turn;
		}
		if (g->hashes) {
			kvs_status st = fill_hashes(g, c, (uint32_t)prompt, r);
			if (st != KVS_OK) {
				conv_end(g, c);
				return st;
			}
		}
		g->emitted++;
		c->history = prompt + out;
		if (c->turn < c->turns) {
			c->t += g->o.think_s > 0 ? kvs_rng_exp(&g->structure, 1.0 / g->o.think_s) : 0;
			c->seq = g->seq++;
			if (!heap_push(g, c)) {
				conv_end(g, c);
				return kvs_fail(KVS_ERR_NOMEM, "no memory for conversations in flight");
			}
		} else {
			conv_end(g, c);
		}
		return KVS_OK;
	}
}

void kvs_gen_close(kvs_gen *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->heap_n; i++)
		kvs_free(g->heap[i]);
	kvs_free(g->heap);
	kvs_free(g->prompt_src.prompt);
	kvs_free(g->prompt_src.output);
	kvs_free(g->output_src.prompt);
	kvs_free(g->output_src.output);
	kvs_free(g->ids);
	kvs_free(g->spare);
	kvs_free(g);
}
