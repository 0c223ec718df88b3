/*
 * advice.c - "what shrinks it" and the long-context advice of `kvsim size`.
 *
 * Every row and option is the same sizing arithmetic (kvs_size_compute) run
 * on a changed deployment: nothing here is a rule of thumb.  The shrink rows
 * hold the GPU, the weights and the working-space reserve fixed and change
 * only the cache; the parallel options re-estimate the reserve for their
 * layout (unless the user gave one).
 */
#include "sizing_internal.h"

#include <stdio.h>
#include <string.h>

static const char *const questions[] = {
	"What is the typical context per conversation, and what is the maximum "
	"you must support? (Size for the typical case; cap or route the rare long ones.)",
	"How many conversations must be in flight at once at peak, and how many "
	"are idle but kept warm?",
	"What latency targets apply: time to first token and time per output "
	"token? (Offloading and deep pipelines trade latency for capacity.)",
	"How much of each prompt is shared between conversations (system prompt, "
	"documents, few-shot examples)? A cached shared prefix is stored once.",
	"How long are the outputs? (Generated tokens grow the cache too, and set "
	"how long each conversation holds its memory.)",
	"Is a quantised KV cache (FP8, INT4) acceptable for quality, and is "
	"there room to add GPUs or move to larger-memory ones?",
	NULL,
};

const char *const *kvs_size_questions(void)
{
	return questions;
}

static void row_fill(kvs_shrink_row *r, const kvs_sizing *s, double base)
{
	r->applicable = true;
	r->kv_bytes_per_token = s->kv_bytes_per_token;
	r->bytes_per_context = s->bytes_per_context;
	r->max_conversations = s->max_conversations;
	r->max_concurrency = s->max_concurrency;
	r->vs_baseline = base > 0 ? s->max_concurrency / base : 0.0;
}

/* Size a variant; on an impossible variant keep the row not applicable with
 * the reason. */
static void row_try(kvs_shrink_row *r, const kvs_deploy *v, double base)
{
	kvs_sizing s;
	if (kvs_size_compute(v, &s) == KVS_OK) {
		row_fill(r, &s, base);
		return;
	}
	size_t n = strlen(r->label);
	snprintf(r->label + n, sizeof r->label - n, " (not possible: %s)", kvs_last_error());
}

kvs_status kvs_size_shrinks(const kvs_deploy *d, kvs_shrink_row rows[KVS_SHRINK_COUNT_])
{
	kvs_sizing s0;
	kvs_status st = kvs_size_compute(d, &s0);
	if (st != KVS_OK)
		return st;
	static const char *const keys[KVS_SHRINK_COUNT_] = {
		"baseline", "gqa8", "mqa", "fp8", "int4", "sliding_window", "mla",
		"reserve_full",
	};
	memset(rows, 0, sizeof(kvs_shrink_row) * KVS_SHRINK_COUNT_);
	for (int i = 0; i < KVS_SHRINK_COUNT_; i++)
		rows[i].key = keys[i];

	const kvs_model *m = &d->model;
	bool mla = m->kv_lora_rank != 0;
	double base = s0.max_concurrency;
	kvs_deploy v0 = *d;
	v0.reserve_bytes = (int64_t)s0.reserve_bytes; /* held fixed */
	kvs_deploy v;
	kvs_shrink_row *r;

	r = &rows[KVS_SHRINK_BASELINE];
	if (mla)
		snprintf(r->label, sizeof r->label, "as configured (MLA latent %u + %u, %s cache)",
			 m->kv_lora_rank, m->qk_rope_head_dim, kvs_dtype_name(d->kv_dtype));
	else
		snprintf(r->label, sizeof r->label, "as configured (%u kv heads, %s cache)",
			 m->num_kv_heads, kvs_dtype_name(d->kv_dtype));
	row_fill(r, &s0, base);

	r = &rows[KVS_SHRINK_GQA8];
	if (mla || m->num_kv_heads <= 8) {
		snprintf(r->label, sizeof r->label, "GQA with 8 kv heads (%s)",
			 mla ? "n/a: MLA has no kv heads" : "already <= 8 kv heads");
	} else {
		uint32_t kv = 8;
		while (kv > 1 && m->num_heads % kv)
			kv--;
		snprintf(r->label, sizeof r->label, "GQA with %u kv heads (retrained model)", kv);
		v = v0;
		v.model.num_kv_heads = kv;
		row_try(r, &v, base);
	}

	r = &rows[KVS_SHRINK_MQA];
	if (mla || m->num_kv_heads <= 1) {
		snprintf(r->label, sizeof r->label, "MQA, 1 kv head (%s)",
			 mla ? "n/a: MLA has no kv heads" : "already 1 kv head");
	} else {
		snprintf(r->label, sizeof r->label, "MQA, 1 kv head (retrained model)");
		v = v0;
		v.model.num_kv_heads = 1;
		row_try(r, &v, base);
	}

	static const struct { int row; kvs_dtype dt; const char *name; } q[] = {
		{ KVS_SHRINK_FP8, KVS_DTYPE_FP8, "FP8" },
		{ KVS_SHRINK_INT4, KVS_DTYPE_INT4, "INT4" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(q); i++) {
		r = &rows[q[i].row];
		if (kvs_dtype_bits(d->kv_dtype) <= kvs_dtype_bits(q[i].dt)) {
			snprintf(r->label, sizeof r->label, "%s cache (already %s)", q[i].name,
				 kvs_dtype_name(d->kv_dtype));
			continue;
		}
		if (d->kv_quant_group)
			snprintf(r->label, sizeof r->label, "%s cache (scales per %u elements)",
				 q[i].name, d->kv_quant_group);
		else
			snprintf(r->label, sizeof r->label, "%s cache (per-tensor scales)",
				 q[i].name);
		v = v0;
		v.kv_dtype = q[i].dt;
		row_try(r, &v, base);
	}

	r = &rows[KVS_SHRINK_SLIDING];
	if (m->sliding_window && m->sliding_window <= 4096 &&
	    m->num_sliding_layers >= m->num_layers) {
		snprintf(r->label, sizeof r->label,
			 "sliding window on every layer (already %u tokens)", m->sliding_window);
	} else {
		snprintf(r->label, sizeof r->label, "sliding window of 4096 tokens on every layer%s",
			 d->context_tokens <= 4096 ? " (no gain at this context)" : "");
		v = v0;
		v.model.sliding_window = 4096;
		v.model.num_sliding_layers = m->num_layers;
		row_try(r, &v, base);
	}

	r = &rows[KVS_SHRINK_MLA];
	if (mla) {
		snprintf(r->label, sizeof r->label, "MLA latent (already MLA)");
	} else {
		snprintf(r->label, sizeof r->label,
			 "MLA latent 512 + 64 per layer (DeepSeek-V3 shape, retrained model)");
		v = v0;
		v.model.kv_lora_rank = 512;
		v.model.qk_rope_head_dim = 64;
		row_try(r, &v, base);
	}

	/* contiguous reservation of max_model_len per conversation */
	r = &rows[KVS_SHRINK_RESERVE_FULL];
	{
		/* a contiguous allocator reserves the longest sequence it admits */
		uint64_t len = s0.max_model_len > d->context_tokens ? s0.max_model_len
								    : d->context_tokens;
		char ml[32];
		kvs_fmt_commas(len, ml, sizeof ml);
		snprintf(r->label, sizeof r->label,
			 "no paging: reserve %s (%s tokens) per conversation",
			 len == s0.max_model_len ? "max_model_len" : "the context", ml);
		uint64_t bytes;
		kvs_model held = kvs_deploy_held_model(d);   /* as the engine holds it */
		st = kvs_kv_bytes_for_tokens(&held, d->kv_dtype, d->kv_quant_group, d->tp, d->pp,
					     len, &bytes);
		if (st != KVS_OK)
			return st;
		r->applicable = true;
		r->kv_bytes_per_token = s0.kv_bytes_per_token;
		r->bytes_per_context = bytes;
		r->max_conversations = bytes ? s0.kv_budget_bytes / bytes : 0;
		r->max_concurrency = bytes ? (double)s0.kv_budget_bytes / (double)bytes : 0.0;
		r->vs_baseline = base > 0 ? r->max_concurrency / base : 0.0;
	}
	return KVS_OK;
}

/* Longest context (tokens, at most hi) at which n conversations fit in
 * pool_lb layer-blocks.  Binary search: layer-blocks grow with tokens. */
static uint64_t longest_context(const kvs_kv_layout *l, uint32_t bs, uint64_t pool_lb,
				uint64_t n, uint64_t hi)
{
	uint64_t lo = 0;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		uint64_t lb = kvs_sizing_layer_blocks(l, bs, mid), need;
		if (lb != UINT64_MAX && !kvs_mul_overflow(lb, n, &need) && need <= pool_lb)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* d at tp x pp with weights of weight_dtype, as a ways-out row: false
 * when it cannot be sized or holds no conversation */
static bool layout_option(const kvs_deploy *d, kvs_dtype weight_dtype, uint32_t tp,
			  uint32_t pp, kvs_parallel_option *o)
{
	kvs_deploy v = *d;
	v.weight_dtype = weight_dtype;
	v.tp = tp;
	v.pp = pp;
	kvs_sizing vs;
	if (kvs_size_compute(&v, &vs) != KVS_OK || vs.max_conversations == 0)
		return false;
	*o = (kvs_parallel_option){ v.tp, v.pp, vs.kv_budget_bytes, vs.max_conversations,
				    vs.max_concurrency };
	return true;
}

kvs_status kvs_size_advise(const kvs_deploy *d, const kvs_sizing *s, kvs_size_advice *out)
{
	kvs_size_advice a;
	memset(&a, 0, sizeof a);
	uint64_t taken = s->weight_bytes + s->reserve_bytes; /* checked in compute */
	a.weights_fit = taken < s->usable_bytes;
	a.context_fits = s->max_conversations >= 1;
	a.cache_exceeds_weights = s->bytes_per_context > s->weight_bytes;
	a.over_max_model_len = s->context_over_max_model_len;
	/* what matters to a long-context deployment is how many conversations
	 * fit: a large model's cache can stay below its weights while only a
	 * handful fit (llama-3-70b at 128K on 4 H100s: 3) */
	a.few_conversations = a.weights_fit && a.context_fits &&
			      s->max_conversations < KVS_ADVICE_FEW_CONVERSATIONS;
	a.needed = !a.weights_fit || !a.context_fits || a.cache_exceeds_weights ||
		   a.over_max_model_len || a.few_conversations;

	/* more GPUs: tp x pp layouts with more GPUs than now, fewest first */
	static const uint32_t tps[] = { 1, 2, 4, 8, 16 };
	static const uint32_t pps[] = { 1, 2, 4, 8 };
	_Static_assert(KVS_ADVICE_PARALLEL_MAX >= KVS_ARRAY_LEN(tps) * KVS_ARRAY_LEN(pps),
		       "a.parallel holds every layout");
	uint64_t gpus_now = (uint64_t)d->tp * d->pp;
	for (size_t i = 0; i < KVS_ARRAY_LEN(tps); i++) {
		for (size_t j = 0; j < KVS_ARRAY_LEN(pps); j++) {
			uint64_t g = (uint64_t)tps[i] * pps[j];
			if (g <= gpus_now || g > 64)
				continue;
			kvs_parallel_option o;
			if (!layout_option(d, d->weight_dtype, tps[i], pps[j], &o))
				continue;
			/* insert sorted by GPUs, then more conversations first
			 * (every layout has room: the assertion above) */
			size_t k = a.n_parallel;
			while (k > 0) {
				const kvs_parallel_option *p = &a.parallel[k - 1];
				uint64_t pg = (uint64_t)p->tp * p->pp;
				if (pg < g || (pg == g && p->max_conversations >= o.max_conversations))
					break;
				a.parallel[k] = *p;
				k--;
			}
			a.parallel[k] = o;
			a.n_parallel++;
		}
	}

	/* data-parallel ranks with the experts spread over them, on the same
	 * GPUs */
	if (d->model.num_experts && d->tp > 1 && d->dp <= 1) {
		kvs_deploy v = *d;
		kvs_sizing vs;
		v.tp = 1;
		v.dp = d->tp;
		v.expert_parallel = true;
		if (kvs_size_compute(&v, &vs) == KVS_OK && vs.max_conversations) {
			a.data_parallel = (kvs_parallel_option){ v.tp, v.pp, vs.kv_budget_bytes,
								 vs.max_conversations,
								 vs.max_concurrency };
			a.data_parallel_ranks = v.dp;
			a.data_parallel_total = vs.max_conversations_total;
		}
	}

	/* quantised weights, when the weights are what does not fit: the
	 * fewest GPUs (from the current count) that then hold a conversation */
	static const kvs_dtype wd[2] = { KVS_DTYPE_FP8, KVS_DTYPE_INT4 };
	kvs_parallel_option *wo[2] = { &a.fp8_weights, &a.int4_weights };
	for (int w = 0; w < 2 && !a.weights_fit; w++) {
		if (kvs_dtype_bits(d->weight_dtype) <= kvs_dtype_bits(wd[w]))
			continue;
		for (size_t i = 0; i < KVS_ARRAY_LEN(tps); i++) {
			for (size_t j = 0; j < KVS_ARRAY_LEN(pps); j++) {
				uint64_t g = (uint64_t)tps[i] * pps[j];
				uint64_t best = (uint64_t)wo[w]->tp * wo[w]->pp;
				if (g < gpus_now || g > 64 || (wo[w]->tp && g > best))
					continue;
				kvs_parallel_option o;
				if (!layout_option(d, wd[w], tps[i], pps[j], &o))
					continue;
				if (wo[w]->tp && g == best &&
				    o.max_conversations <= wo[w]->max_conversations)
					continue;
				*wo[w] = o;
			}
		}
	}

	/* a quantised cache */
	static const kvs_dtype qd[2] = { KVS_DTYPE_FP8, KVS_DTYPE_INT4 };
	uint64_t *qc[2] = { &a.fp8_conversations, &a.int4_conversations };
	for (int i = 0; i < 2; i++) {
		kvs_deploy v = *d;
		kvs_sizing vs;
		v.kv_dtype = qd[i];
		v.reserve_bytes = (int64_t)s->reserve_bytes;
		if (kvs_dtype_bits(d->kv_dtype) > kvs_dtype_bits(qd[i]) &&
		    kvs_size_compute(&v, &vs) == KVS_OK)
			*qc[i] = vs.max_conversations;
		else
			*qc[i] = s->max_conversations;
	}

	/* offloading: what does not fit must cross PCIe on every decode step */
	a.pcie_bytes_per_s = d->gpu.pcie_bytes_per_s;
	uint64_t pool = s->num_gpu_blocks * s->bytes_per_block;
	a.offload_bytes = s->bytes_per_context > pool ? s->bytes_per_context - pool : 0;
	if (a.pcie_bytes_per_s > 0) {
		a.offload_s_per_step = (double)a.offload_bytes / a.pcie_bytes_per_s;
		a.offload_full_s_per_step = (double)s->bytes_per_context / a.pcie_bytes_per_s;
	}

	/* shorter contexts, and prefix sharing */
	kvs_kv_layout l;
	kvs_model held = kvs_deploy_held_model(d);
	kvs_status st = kvs_sizing_layout(&held, d->kv_dtype, d->kv_quant_group,
					  d->tp, d->pp, &l);
	if (st != KVS_OK)
		return st;
	uint64_t pool_lb = s->num_gpu_blocks * l.layers_rank; /* checked in compute */
	/* no longer than the engine admits: max_model_len caps every context */
	static const uint32_t ns[KVS_ADVICE_CONTEXTS] = { 1, 8, 32 };
	for (int i = 0; i < KVS_ADVICE_CONTEXTS; i++) {
		a.context_for_n[i] = ns[i];
		a.context_tokens_for_n[i] = longest_context(&l, d->block_size, pool_lb, ns[i],
							    s->max_model_len);
	}
	uint64_t conv_lb = kvs_sizing_layer_blocks(&l, d->block_size, d->context_tokens);
	uint64_t shared_lb = (uint64_t)l.full_rank * ((d->context_tokens / 2) / d->block_size);
	if (conv_lb != UINT64_MAX && conv_lb > shared_lb && pool_lb >= shared_lb)
		a.prefix_half_conversations = (pool_lb - shared_lb) / (conv_lb - shared_lb);
	*out = a;
	return KVS_OK;
}
