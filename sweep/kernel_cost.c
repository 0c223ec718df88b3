/*
 * kernel_cost.c - what decode attention costs at a block size: the analytic
 * model, the measured kernel profile (JSON from the kernel benchmark), the
 * workload's decode contexts, and how the relative cost enters the
 * simulator's step time.  docs/SWEEP.md derives the model and its defaults.
 *
 * Model.  A decode step of one sequence with context c reads c tokens of K
 * and V per layer and kv head.  Contiguously that costs c token-reads.
 * Through a block table of block size b it costs ceil(c / b) blocks, each
 * read whole (the last one is partial but its tile is still fetched and
 * masked), plus one dependent block-id load per block worth `delta`
 * token-reads:
 *     paged / contiguous = (b + delta) * ceil(c / b) / c.
 * Summed over the trace's decode steps (contexts P + 1 .. P + O - 1 of each
 * request) in closed form: O(requests) per block size.
 */
#include "kvs_config.h"
#include "sweep_internal.h"
#include "common/json.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the analytic model --------------------------------------------------- */

double kvs_kernel_model_ratio(uint32_t block_size, double delta, uint64_t context)
{
	if (context == 0)
		context = 1;
	double b = block_size ? (double)block_size : 1.0;
	double blocks = (double)kvs_div_ceil(context, block_size ? block_size : 1);
	return (b + delta) * blocks / (double)context;
}

/* sum_{c=1}^{n} ceil(c / b) = b q (q + 1) / 2 + r (q + 1), n = q b + r */
static double sum_ceil(uint64_t n, uint32_t b)
{
	double q = (double)(n / b), r = (double)(n % b);
	return (double)b * q * (q + 1.0) / 2.0 + r * (q + 1.0);
}

/* decode contexts of one request: [lo, hi] (empty when lo > hi) */
static bool decode_range(const kvs_request *q, uint64_t *lo, uint64_t *hi)
{
	if (q->over_max_len || q->prompt_tokens == 0 || q->output_tokens < 2)
		return false;
	*lo = (uint64_t)q->prompt_tokens + 1;
	*hi = (uint64_t)q->prompt_tokens + q->output_tokens - 1;
	return true;
}

void kvs_sweep_workload_init(kvs_sweep_workload *w, const kvs_request_set *set)
{
	memset(w, 0, sizeof *w);
	uint64_t n = kvs_request_set_count(set);
	for (uint64_t i = 0; i < n; i++) {
		const kvs_request *q = kvs_request_set_get(set, i);
		if (q->hash_ids && q->num_hash_ids && q->hash_block_tokens &&
		    !w->hash_block_tokens)
			w->hash_block_tokens = q->hash_block_tokens;
		uint64_t lo, hi;
		if (!decode_range(q, &lo, &hi))
			continue;
		double steps = (double)(hi - lo + 1);
		w->decode_steps += steps;
		w->context_sum += ((double)lo + (double)hi) * steps / 2.0;
	}
	if (w->decode_steps == 0) {
		/* no request decodes past its first token: use the prompts */
		for (uint64_t i = 0; i < n; i++) {
			const kvs_request *q = kvs_request_set_get(set, i);
			if (q->over_max_len || q->prompt_tokens == 0)
				continue;
			w->decode_steps += 1;
			w->context_sum += q->prompt_tokens;
		}
		w->prompts_only = true;
	}
	w->mean_context = w->decode_steps > 0 ? w->context_sum / w->decode_steps : 1.0;
	w->set = set;
}

/* Context-weighted mean of paged/contiguous over the decode steps. */
static double workload_ratio(const kvs_sweep_workload *w, uint32_t b, double delta,
			     const kvs_kernel_profile *prof)
{
	const kvs_request_set *set = w->set;
	uint64_t n = kvs_request_set_count(set);
	double num = 0, den = 0;
	for (uint64_t i = 0; i < n; i++) {
		const kvs_request *q = kvs_request_set_get(set, i);
		uint64_t lo, hi;
		if (w->prompts_only) {
			if (q->over_max_len || q->prompt_tokens == 0)
				continue;
			lo = hi = q->prompt_tokens;
		} else if (!decode_range(q, &lo, &hi)) {
			continue;
		}
		double csum = ((double)lo + (double)hi) * (double)(hi - lo + 1) / 2.0;
		if (prof) {
			double mid = ((double)lo + (double)hi) / 2.0;
			num += csum * kvs_kernel_profile_ratio(prof, b, mid);
		} else {
			double blocks = sum_ceil(hi, b) - sum_ceil(lo - 1, b);
			num += ((double)b + delta) * blocks;
		}
		den += csum;
	}
	return den > 0 ? num / den : 1.0;
}

const char *kvs_kernel_source_name(kvs_kernel_source s)
{
	switch (s) {
	case KVS_KERNEL_CONTIGUOUS: return "contiguous";
	case KVS_KERNEL_MODEL: return "model";
	case KVS_KERNEL_PROFILE: return "profile";
	case KVS_KERNEL_PROFILE_FIT: return "profile_fit";
	}
	return "unknown";
}

/* KV bytes per token read by one rank's pass through the stages, times
 * pp, as the step-time model counts them (balanced micro-batches then
 * charge a step 1/m of its sequences' reads). */
static kvs_status kv_bytes_per_step_token(const kvs_sim_config *sc, double *kvb)
{
	kvs_sizing sz;
	memset(&sz, 0, sizeof sz);
	if (!sc->kv_bytes_per_token) {
		kvs_status st = kvs_size_compute(&sc->deploy, &sz);
		if (st != KVS_OK)
			return st;
	}
	uint32_t pp = sc->deploy.pp ? sc->deploy.pp : 1;
	uint64_t k = sc->kv_bytes_per_token ? sc->kv_bytes_per_token : sz.kv_bytes_per_token;
	if (!k)
		return kvs_fail(KVS_ERR_INVALID, "KV bytes per token is 0");
	*kvb = (double)k * pp;
	return KVS_OK;
}

kvs_status kvs_sweep_kernel_ws(const kvs_sweep_config *c, const kvs_sweep_workload *w,
			       kvs_policy policy, uint32_t b, kvs_sweep_kernel *out)
{
	kvs_sweep_kernel k;
	memset(&k, 0, sizeof k);
	k.mean_context = w->mean_context;
	if (!kvs_policy_get(policy) ||
	    kvs_policy_get(policy)->kernel != KVS_KERNEL_READ_PAGED) {
		k.rel = 1.0;
		k.source = KVS_KERNEL_CONTIGUOUS;
	} else if (c->kernel_profile && kvs_kernel_profile_has(c->kernel_profile, b)) {
		k.rel = workload_ratio(w, b, 0, c->kernel_profile);
		k.source = KVS_KERNEL_PROFILE;
	} else if (c->kernel_profile) {
		k.rel = workload_ratio(w, b, kvs_kernel_profile_fit_delta(c->kernel_profile),
				       NULL);
		k.source = KVS_KERNEL_PROFILE_FIT;
	} else {
		k.rel = workload_ratio(w, b, c->kernel_block_overhead, NULL);
		k.source = KVS_KERNEL_MODEL;
	}
	/* absolute: contiguous decode attention of one sequence-step at the
	 * mean context, as the step-time model charges it */
	const kvs_sim_config *sc = &c->base;
	double t;
	if (sc->cost.kind == KVS_COST_LINEAR) {
		t = sc->cost.kv_read_factor * sc->cost.linear_per_context_s * w->mean_context;
	} else {
		double kvb = 0;
		kvs_sim_config tmp = *sc;
		tmp.deploy.block_size = b;
		kvs_status st = kv_bytes_per_step_token(&tmp, &kvb);
		if (st != KVS_OK)
			return st;
		double rate = sc->deploy.gpu.hbm_bytes_per_s * sc->cost.bandwidth_efficiency;
		t = rate > 0 ? sc->cost.kv_read_factor * kvb * w->mean_context / rate : 0;
	}
	k.cost_us = k.rel * t * 1e6;
	*out = k;
	return KVS_OK;
}

kvs_status kvs_sweep_kernel_cost(const kvs_sweep_config *c, const kvs_request_set *set,
				 kvs_policy policy, uint32_t block_size,
				 kvs_sweep_kernel *out)
{
	if (!c || !set || !out || block_size == 0)
		return kvs_fail(KVS_ERR_INVALID, "kvs_sweep_kernel_cost: bad argument");
	kvs_sweep_workload w;
	kvs_sweep_workload_init(&w, set);
	return kvs_sweep_kernel_ws(c, &w, policy, block_size, out);
}

/* How the relative cost enters the step time: the step-time model's KV-read
 * factor (kvs_cost_config.kv_read_factor) multiplies the KV-read term, the
 * roofline's KV bytes read and the linear model's per-context-token time,
 * in single steps and in the closed-form decode spans alike.  The paged
 * kernel at block size b reads KV rel times slower than the contiguous
 * kernel, so the row's factor is the base configuration's (the contiguous
 * kernel against an ideal read, 1 by default) times rel: exact at every
 * step, whatever the batch. */
kvs_status kvs_sweep_apply_kernel(const kvs_sweep_config *c, double rel,
				  kvs_sim_config *sc)
{
	if (!c->kernel_feeds_step_time || rel == 1.0)
		return KVS_OK;
	if (!(rel > 0) || !isfinite(rel))
		return kvs_fail(KVS_ERR_INVALID, "kernel relative cost %g: must be > 0", rel);
	double f = sc->cost.kv_read_factor * rel;
	if (!(f > 0) || !isfinite(f))
		return kvs_fail(KVS_ERR_INVALID, "KV-read factor %g x kernel relative cost "
				"%g: must be a finite number > 0", sc->cost.kv_read_factor, rel);
	sc->cost.kv_read_factor = f;
	return KVS_OK;
}

/* ---- measured profile ------------------------------------------------------- */

typedef struct prof_point {
	uint32_t block_size;
	double context;
	double ratio;      /* paged_us / contiguous_us, averaged over batches */
	uint32_t n;
} prof_point;

struct kvs_kernel_profile {
	char *path;
	char *gpu;
	double peak_gbps;
	prof_point *pts;   /* sorted by (block_size, context) */
	size_t npts;
	double delta;      /* fitted */
};

static kvs_status num_key(const char *path, size_t i, json_t *e, const char *key,
			  double min, double *out)
{
	json_t *v = json_object_get(e, key);
	if (!v)
		return kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: missing key '%s'", path, i, key);
	if (!json_is_number(v))
		return kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: %s: expected a number", path,
				i, key);
	double d = json_number_value(v);
	if (!isfinite(d) || d < min)
		return kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: %s: %g is out of range "
				"(must be >= %g)", path, i, key, d, min);
	*out = d;
	return KVS_OK;
}

static int pt_cmp(const void *a, const void *b)
{
	const prof_point *x = a, *y = b;
	if (x->block_size != y->block_size)
		return x->block_size < y->block_size ? -1 : 1;
	return (x->context > y->context) - (x->context < y->context);
}

kvs_status kvs_kernel_profile_load(const char *path, kvs_kernel_profile **out)
{
	if (!path || !out)
		return kvs_fail(KVS_ERR_INVALID, "kernel profile: NULL argument");
	kvs_status st = KVS_OK;
	json_t *root = kvs_json_load_file(path, 0, "kernel profile", &st);
	if (!root)
		return st;
	kvs_kernel_profile *p = kvs_calloc(1, sizeof *p);
	if (!p) {
		json_decref(root);
		return kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	json_t *gpu = json_object_get(root, "gpu");
	json_t *peak = json_object_get(root, "peak_gbps");
	json_t *entries = json_object_get(root, "entries");
	if (!json_is_object(root)) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: kernel profile: expected a JSON object", path);
	} else if (gpu && !json_is_string(gpu)) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: gpu: expected a string", path);
	} else if (peak && !json_is_number(peak)) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: peak_gbps: expected a number", path);
	} else if (json_is_string(json_object_get(root, "device")) &&
		   strcmp(json_string_value(json_object_get(root, "device")),
			  "cpu_reference") == 0) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: device: \"cpu_reference\": this profile was "
			      "measured on the C reference kernels, not a GPU; run the kernel "
			      "benchmark on the GPU to be tuned for", path);
	} else if (!entries) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: missing key 'entries'", path);
	} else if (!json_is_array(entries) || json_array_size(entries) == 0) {
		st = kvs_fail(KVS_ERR_PARSE, "%s: entries: expected a non-empty array", path);
	}
	size_t ne = st == KVS_OK ? json_array_size(entries) : 0;
	if (st == KVS_OK) {
		p->path = kvs_strdup(path);
		p->gpu = kvs_strdup(gpu ? json_string_value(gpu) : "");
		p->peak_gbps = peak ? json_number_value(peak) : 0;
		p->pts = kvs_calloc(ne, sizeof *p->pts);
		if (!p->path || !p->gpu || !p->pts)
			st = kvs_fail(KVS_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; st == KVS_OK && i < ne; i++) {
		json_t *e = json_array_get(entries, i);
		double bs, ctx, batch, pus, cus;
		if (!json_is_object(e)) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: expected an object", path, i);
			break;
		}
		if ((st = num_key(path, i, e, "block_size", 1, &bs)) ||
		    (st = num_key(path, i, e, "context", 1, &ctx)) ||
		    (st = num_key(path, i, e, "batch", 1, &batch)) ||
		    (st = num_key(path, i, e, "paged_us", 0, &pus)) ||
		    (st = num_key(path, i, e, "contiguous_us", 0, &cus)))
			break;
		if (bs != floor(bs) || bs > KVS_SWEEP_MAX_BLOCK_SIZE) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: block_size: %g is not a "
				      "block size (an integer 1..%u)", path, i, bs,
				      KVS_SWEEP_MAX_BLOCK_SIZE);
			break;
		}
		if (!(pus > 0) || !(cus > 0)) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: %s: must be > 0", path, i,
				      pus > 0 ? "contiguous_us" : "paged_us");
			break;
		}
		double ratio = pus / cus;
		if (!(ratio > 0) || !isfinite(ratio)) {
			st = kvs_fail(KVS_ERR_PARSE, "%s: entries[%zu]: paged_us / contiguous_us = "
				      "%g / %g is not a finite ratio > 0", path, i, pus, cus);
			break;
		}
		/* merge batches at the same (block size, context) */
		size_t j;
		for (j = 0; j < p->npts; j++)
			if (p->pts[j].block_size == (uint32_t)bs && p->pts[j].context == ctx)
				break;
		if (j == p->npts) {
			p->pts[j].block_size = (uint32_t)bs;
			p->pts[j].context = ctx;
			p->npts++;
		}
		p->pts[j].ratio += ratio;
		p->pts[j].n++;
	}
	json_decref(root);
	if (st != KVS_OK) {
		kvs_kernel_profile_destroy(p);
		return st;
	}
	for (size_t j = 0; j < p->npts; j++)
		p->pts[j].ratio /= p->pts[j].n;
	qsort(p->pts, p->npts, sizeof *p->pts, pt_cmp);
	/* delta by least squares: ratio - b ceil(c/b)/c = delta ceil(c/b)/c */
	double sxy = 0, sxx = 0;
	for (size_t j = 0; j < p->npts; j++) {
		uint64_t c = (uint64_t)ceil(p->pts[j].context);
		double x = (double)kvs_div_ceil(c, p->pts[j].block_size) / (double)c;
		double y = p->pts[j].ratio - (double)p->pts[j].block_size * x;
		sxy += x * y;
		sxx += x * x;
	}
	p->delta = sxx > 0 ? sxy / sxx : 0;
	if (p->delta < 0)
		p->delta = 0;
	*out = p;
	return KVS_OK;
}

void kvs_kernel_profile_destroy(kvs_kernel_profile *p)
{
	if (!p)
		return;
	kvs_free(p->path);
	kvs_free(p->gpu);
	kvs_free(p->pts);
	kvs_free(p);
}

const char *kvs_kernel_profile_gpu(const kvs_kernel_profile *p)
{
	return p->gpu;
}

const char *kvs_kernel_profile_path(const kvs_kernel_profile *p)
{
	return p->path;
}

double kvs_kernel_profile_fit_delta(const kvs_kernel_profile *p)
{
	return p->delta;
}

bool kvs_kernel_profile_has(const kvs_kernel_profile *p, uint32_t b)
{
	for (size_t j = 0; j < p->npts; j++)
		if (p->pts[j].block_size == b)
			return true;
	return false;
}

double kvs_kernel_profile_ratio(const kvs_kernel_profile *p, uint32_t b, double context)
{
	size_t lo = 0;
	while (lo < p->npts && p->pts[lo].block_size != b)
		lo++;
	if (lo == p->npts)
		return 0;
	size_t hi = lo;
	while (hi + 1 < p->npts && p->pts[hi + 1].block_size == b)
		hi++;
	if (context <= p->pts[lo].context)
		return p->pts[lo].ratio;
	if (context >= p->pts[hi].context)
		return p->pts[hi].ratio;
	size_t j = lo;
	while (p->pts[j + 1].context < context)
		j++;
	const prof_point *a = &p->pts[j], *z = &p->pts[j + 1];
	double t = (log(context) - log(a->context)) / (log(z->context) - log(a->context));
	return a->ratio + t * (z->ratio - a->ratio);
}
