/*
 * memory.c - the memory of one rank that is not KV cache, term by term, as
 * an inference engine accounts for it before it sizes its KV pool.
 *
 *   device total (cudaMemGetInfo)
 *   +-- CUDA context ........ before vLLM's first snapshot: vLLM does not
 *   |                         count it; SGLang and TensorRT-LLM measure free
 *   |                         memory, so they do
 *   +-- weights ............. weight_dtype, embeddings and lm_head at 16 bits
 *   |                         in quantised checkpoints, + the RoPE cache
 *   +-- profile-run peak .... activations of max_num_batched_tokens tokens
 *   |                         + logits and sampler of max_num_seqs x vocab;
 *   |                         under vLLM, a vision tower's run on its
 *   |                         largest items where that is more
 *   +-- non-torch growth .... workspaces and runtime buffers; NCCL and
 *   |                         custom all-reduce buffers when tp x pp >= 2
 *   +-- CUDA graphs ......... captured after the KV cache is allocated: out
 *   |                         of the headroom (vLLM's default; see
 *   |                         VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS)
 *   +-- KV cache ............ what is left of the engine's share
 *
 * Which terms an engine subtracts is `counted`; kvs_reserve_estimate sums
 * them.  Every constant here is cited in docs/SIZING.md, and the fitted ones
 * are marked as tuned in docs/VALIDATION.md.
 */
#include "kvs_config.h"
#include "sizing_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const engine_names[KVS_ENGINE_COUNT_] = {
	"vllm", "sglang", "trtllm",
};

const char *kvs_engine_name(kvs_engine e)
{
	return (unsigned)e < KVS_ENGINE_COUNT_ ? engine_names[e] : "?";
}

kvs_status kvs_engine_parse(const char *text, kvs_engine *out)
{
	if (text) {
		for (int e = 0; e < KVS_ENGINE_COUNT_; e++)
			if (strcasecmp(text, engine_names[e]) == 0) {
				*out = (kvs_engine)e;
				return KVS_OK;
			}
		if (strcasecmp(text, "tensorrt-llm") == 0) {
			*out = KVS_ENGINE_TRTLLM;
			return KVS_OK;
		}
	}
	return kvs_fail(KVS_ERR_INVALID, "unknown engine '%s' (expected vllm, sglang or trtllm)",
			text ? text : "");
}

/* Serving dtype of activations: fp32 configs are served in bf16. */
static unsigned act_bytes(const kvs_model *m)
{
	return m->dtype == KVS_DTYPE_FP32 ? 2 : (kvs_dtype_bits(m->dtype) + 7) / 8;
}

/* vLLM's `vllm serve` batch defaults: GPUs with at least 70 GiB of device
 * memory whose name does not contain "a100" get max_num_batched_tokens
 * 8192 and max_num_seqs 1024, every other GPU 2048 and 256 (vLLM V1,
 * vllm/engine/arg_utils.py, EngineArgs._set_default_args_v1: the
 * UsageContext.OPENAI_API_SERVER entries of default_max_num_batched_tokens
 * and default_max_num_seqs, keyed by get_device_total_memory() and
 * get_device_name()).  TensorRT-LLM's trtllm-serve: max_num_tokens 8192,
 * max_batch_size 2048.  SGLang is given vLLM's, as before. */
static bool large_gpu(const kvs_gpu *g)
{
	return g->mem_bytes >= (70ull << 30) && !strcasestr(g->name, "a100");
}

void kvs_engine_batch_defaults(kvs_engine e, const kvs_gpu *g, uint32_t *max_num_seqs,
			       uint32_t *max_num_batched_tokens)
{
	if (e == KVS_ENGINE_TRTLLM) {
		*max_num_batched_tokens = 8192;   /* max_num_tokens */
		*max_num_seqs = 2048;             /* max_batch_size */
		return;
	}
	bool large = large_gpu(g);
	*max_num_batched_tokens = large ? 8192 : 2048;
	*max_num_seqs = large ? 1024 : 256;
}

/* SGLang's default mem_fraction_static (ServerArgs._handle_gpu_memory_
 * settings, from SGLang PR #10975 through 0.5.14 with piecewise graphs
 * off; docs/SIZING.md says what later versions add): from the device
 * total as nvidia-smi reports it (gpu_mem, MiB), the chunked_prefill_size
 * and cuda_graph_max_bs SGLang picks by GPU size (its own defaults: the
 * simulators' token budget is vLLM's), a reserve in MiB of
 *   512 + max(cps, 2048) x 1.5 + cuda_graph_max_bs x 2 + tp x pp / 8 x 1024,
 * at least 10 GiB above 60 GiB, and fraction = (gpu_mem - reserve) /
 * gpu_mem to three decimals, rounded from the double's exact value as
 * Python's round() does; a vision model's then scaled (sglang_vlm_factor).
 * (Its additions for DP attention, speculative decoding and piecewise
 * graphs are not modelled.) */
static double sglang_fraction(const kvs_gpu *g, uint64_t tp, uint64_t pp)
{
	double mib = (double)(kvs_gpu_smi_bytes(g) >> 20);
	uint32_t dcps, graph_bs;
	if (mib < 20 * 1024)
		dcps = 2048, graph_bs = 8;                       /* T4, 4080 */
	else if (mib < 35 * 1024)
		dcps = 2048, graph_bs = tp < 4 ? 24 : 80;        /* A10, 4090, L4 */
	else if (mib < 60 * 1024)
		dcps = 4096, graph_bs = tp < 4 ? 32 : 160;       /* A100-40GB, L40S */
	else if (mib < 160 * 1024)
		dcps = 8192, graph_bs = tp < 4 ? 256 : 512;      /* A100-80GB, H100, H200 */
	else
		dcps = 16384, graph_bs = 512;                    /* B200, MI300X */
	/* SGLang's max(chunk, 2048): every chunk above is 2048 or more */
	double reserve = 512 + dcps * 1.5 + graph_bs * 2.0 + (double)(tp * pp) / 8 * 1024;
	if (mib > 60 * 1024 && reserve < 10 * 1024)
		reserve = 10 * 1024;
	/* printf rounds the exact binary value, ties to even, as round() in
	 * Python does: round(x * 1000) / 1000 would round 0.8125 up */
	char buf[32];
	snprintf(buf, sizeof buf, "%.3f", (mib - reserve) / mib);
	return strtod(buf, NULL);
}

/* SGLang's reduction of its default mem_fraction_static for a vision
 * model (ServerArgs.adjust_mem_fraction_for_vlm, 0.4 through 0.5.14):
 * 0.95 x (1 - 0.1 x (r - 1)) with the second factor held to [0.8, 1.05],
 * r the tower's num_hidden_layers x hidden_size^2 over ViT-L/14's 24 x
 * 1024^2, read with getattr defaults of 24 and 1024 (a tower kvsim does
 * not count included); not rounded again.  1 without a vision_config. */
static double sglang_vlm_factor(const kvs_model *m)
{
	const kvs_vision_profile *v = &m->vision_profile;
	if (!v->has_tower)
		return 1.0;
	double h = v->attr_hidden;
	double r = (double)v->attr_layers * h * h / (24.0 * 1024.0 * 1024.0);
	double f = 1.0 - 0.1 * (r - 1.0);
	f = f < 0.8 ? 0.8 : f > 1.05 ? 1.05 : f;
	return 0.95 * f;
}

static uint64_t clamp_u64(double x)
{
	return x <= 0 ? 0 : x < 1e18 ? (uint64_t)x : (uint64_t)1e18;
}

/* Live elements per token of the largest layer tensors of a prefill: the
 * residual stream and the normalised input, plus the larger of attention
 * (q, k, v and the attention output) and the MLP (gate and up projections
 * and the activated product; up and product for a plain MLP). */
static double activation_per_token(const kvs_model *m, uint64_t tp)
{
	uint64_t heads = m->num_heads ? m->num_heads : m->num_kv_heads;
	uint64_t heads_rank = kvs_div_ceil(heads, tp);
	uint64_t kv_rank = m->num_kv_heads ? kvs_div_ceil(m->num_kv_heads, tp) : 0;
	double attn;
	if (m->kv_lora_rank)
		attn = (double)heads_rank * ((double)m->qk_nope_head_dim + m->qk_rope_head_dim +
					     (m->v_head_dim ? m->v_head_dim : m->head_dim)) +
		       m->kv_lora_rank + m->qk_rope_head_dim;
	else
		attn = (double)(2 * heads_rank + 2 * kv_rank) * m->head_dim;
	uint64_t inter = m->dense_intermediate_size ? m->dense_intermediate_size
						    : m->intermediate_size;
	if (m->num_experts && m->moe_intermediate_size) {
		uint64_t moe = (uint64_t)m->moe_intermediate_size * m->num_experts_per_tok +
			       m->shared_expert_intermediate_size;
		if (moe > inter || kvs_model_moe_layers(m) == m->num_layers)
			inter = moe;
	}
	double mlp = (m->mlp_plain ? 2.0 : 3.0) * (double)kvs_div_ceil(inter, tp);
	return 2.0 * m->hidden_size + (attn > mlp ? attn : mlp);
}

void kvs_vision_item_from_pixels(uint64_t max_pixels, uint32_t patch, uint32_t merge,
				 uint64_t *patches, uint32_t *tokens)
{
	uint64_t pp = (uint64_t)patch * patch, mm = (uint64_t)merge * merge;
	uint64_t n = pp && mm ? max_pixels / pp / mm : 0;
	if (n == 0)
		n = 1;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	*tokens = (uint32_t)n;
	*patches = n * mm;
}

/* A modality's limit per prompt as vLLM takes it. */
static uint64_t mm_limit(uint32_t stored)
{
	return stored == KVS_MM_LIMIT_ZERO ? 0 : stored ? stored : KVS_MM_LIMIT_DEFAULT;
}

bool kvs_deploy_mm_profiled(const kvs_deploy *d)
{
	const kvs_vision_profile *v = &d->model.vision_profile;
	return v->has_tower && !d->skip_mm_profiling &&
	       (mm_limit(d->mm_image_limit) || (v->takes_video && mm_limit(d->mm_video_limit)));
}

/* vLLM's profile run of a vision tower, before the text model's dummy
 * step (V1's GPUModelRunner.profile_run): as many items of the largest
 * kind as the encoder budget holds (max(max_num_batched_tokens, one
 * item's tokens) / one item's tokens), through the tower at once.  Its
 * peak is the input pixels and one layer's tensors per patch, counted as
 * the text model's are (activation_per_token): the residual stream and
 * the normalised input, plus the larger of attention (q, k, v, output)
 * and the MLP, both split over tp.  Its embeddings stay cached through
 * the text model's dummy step.  What vLLM's measured peak gains is the
 * larger of the tower's peak above the text model's terms and those
 * kept embeddings.  An item longer than max_model_len still counts (a
 * vLLM 0.9 log profiles a 16,384-token image at max_model_len 2,048). */
static void encoder_profile(const kvs_deploy *d, uint64_t tp, unsigned ab, kvs_mem_terms *t)
{
	const kvs_model *m = &d->model;
	kvs_vision_profile vv = m->vision_profile;
	const kvs_vision_profile *v = &vv;
	uint64_t images = mm_limit(d->mm_image_limit), videos = mm_limit(d->mm_video_limit);
	if (!v->item_tokens || !v->item_patches || !kvs_deploy_mm_profiled(d))
		return;
	/* images off, videos on: vLLM profiles a video, which kvsim does not
	 * model; the largest image, at the video limit, stands in */
	t->encoder_video = !images;
	uint64_t limit = images ? images : videos;
	/* --mm-processor-kwargs max_pixels: the largest image of a
	 * pixel-capped tower */
	if (d->mm_max_pixels && v->patch_side) {
		kvs_vision_item_from_pixels(d->mm_max_pixels, v->patch_side, v->merge_side,
					    &vv.item_patches, &vv.item_tokens);
		vv.item_embeds = vv.item_tokens;
	}
	/* MultiModalBudget.get_max_items (chunked prefill on): the budget's
	 * items, at most max_num_seqs prompts of max(1, min(limit,
	 * max_model_len / item tokens)) items each, and at least one */
	uint64_t T = v->item_tokens;
	uint64_t budget = t->profile_tokens > T ? t->profile_tokens : T;
	uint64_t mml = kvs_deploy_max_model_len(d);
	uint64_t per_prompt = mml / T < limit ? mml / T : limit;
	if (per_prompt < 1)
		per_prompt = 1;
	uint64_t items = budget / T, cap = (uint64_t)t->profile_seqs * per_prompt;
	if (items > cap)
		items = cap;
	t->encoder_items = (uint32_t)(items ? items : 1);
	double patches = (double)t->encoder_items * (double)v->item_patches;
	double attn = 4.0 * (double)kvs_div_ceil(v->width, tp);
	double mlp = (v->mlp_gated ? 3.0 : 2.0) * (double)kvs_div_ceil(v->mlp_width, tp);
	double per_patch = 2.0 * v->width + (attn > mlp ? attn : mlp) + (double)v->item_pixels;
	t->encoder_patches = (uint64_t)clamp_u64(patches);
	t->encoder_peak_bytes = clamp_u64(per_patch * patches * ab);
	t->encoder_out_bytes = clamp_u64((double)t->encoder_items * v->item_embeds *
					 (double)m->hidden_size * ab);
	uint64_t text = t->activation_bytes + t->sampler_bytes;
	uint64_t above = t->encoder_peak_bytes > text ? t->encoder_peak_bytes - text : 0;
	t->encoder_bytes = above > t->encoder_out_bytes ? above : t->encoder_out_bytes;
}

/* vLLM's piecewise CUDA graph capture sizes: 1, 2, 4, then every 8 up to
 * 248, then every 16 up to min(2 x max_num_seqs, 512). */
static void capture_sizes(uint32_t seqs, uint32_t *count, uint32_t *max, double *sum)
{
	uint32_t top = seqs < 256 ? seqs * 2 : 512;
	*count = 0;
	*max = 0;
	*sum = 0;
	for (uint32_t s = 1; s <= top; s = s < 8 ? (s == 4 ? 8 : s * 2) : s < 256 ? s + 8 : s + 16) {
		(*count)++;
		*max = s;
		*sum += s;
	}
}

void kvs_mem_terms_compute(const kvs_deploy *d, kvs_mem_terms *out)
{
	const kvs_model *m = &d->model;
	kvs_mem_terms t;
	memset(&t, 0, sizeof t);
	uint64_t tp = d->tp ? d->tp : 1, pp = d->pp ? d->pp : 1;
	unsigned ab = act_bytes(m);
	t.engine = (unsigned)d->engine < KVS_ENGINE_COUNT_ ? d->engine : KVS_ENGINE_VLLM;

	/* the profile run's batch */
	kvs_engine_batch_defaults(t.engine, &d->gpu, &t.profile_seqs, &t.profile_tokens);
	if (d->max_num_batched_tokens)
		t.profile_tokens = d->max_num_batched_tokens;
	if (d->max_num_seqs)
		t.profile_seqs = d->max_num_seqs;

	/* the RoPE cos/sin cache: max_position_embeddings x rotary dims at
	 * the activation dtype, loaded with the weights */
	if (!m->learned_positions) {
		uint64_t rot = m->kv_lora_rank ? m->qk_rope_head_dim : m->head_dim;
		t.rope_cache_bytes = (uint64_t)m->max_position_embeddings * rot * ab;
	}

	/* activations of the profile run: one layer's tensors are the peak */
	t.activation_bytes = clamp_u64(activation_per_token(m, tp) *
				       (double)t.profile_tokens * ab);

	/* logits and sampler: one row per request of the profile batch; fp32
	 * logits and fp32 probabilities (vLLM/SGLang), plus the two temporaries
	 * of a final logit soft cap; TensorRT-LLM keeps one fp32 logits buffer */
	uint64_t n = t.profile_seqs < t.profile_tokens ? t.profile_seqs : t.profile_tokens;
	double per_logit = t.engine == KVS_ENGINE_TRTLLM ? 4.0
			 : KVS_SAMPLER_BYTES_PER_LOGIT + (m->logit_softcap ? 2.0 * ab : 0.0);
	t.sampler_bytes = clamp_u64((double)n * m->vocab_size * per_logit);

	/* CUDA graphs: per capture size, about s x hidden x 8 activation bytes */
	double sum = 0;
	capture_sizes(t.profile_seqs, &t.cudagraph_sizes, &t.cudagraph_max_size, &sum);
	t.cudagraph_bytes = clamp_u64(sum * m->hidden_size * ab * KVS_CUDAGRAPH_BYTES_FACTOR);

	/* communicators: of the tp x pp group, or of the expert-parallel
	 * group that spans the data-parallel ranks of an MoE model */
	t.comm_bytes = tp * pp > 1 || kvs_deploy_expert_parallel(d) ? KVS_MEM_COMM_BYTES : 0;
	t.non_torch_bytes = KVS_MEM_RUNTIME_BYTES + t.comm_bytes;
	t.cuda_context_bytes = KVS_MEM_CONTEXT_BYTES;
	t.vlm_factor = 1.0;

	switch (t.engine) {
	case KVS_ENGINE_SGLANG:
		/* activations, sampler and graphs live in the 1 - fraction rest */
		t.counted = KVS_MEM_ROPE | KVS_MEM_NON_TORCH | KVS_MEM_CONTEXT;
		t.vlm_factor = d->mem_fraction_static > 0 ? 1.0 : sglang_vlm_factor(m);
		t.fraction = d->mem_fraction_static > 0 ? d->mem_fraction_static
							 : sglang_fraction(&d->gpu, tp, pp) *
							   t.vlm_factor;
		break;
	case KVS_ENGINE_TRTLLM:
		t.counted = KVS_MEM_ROPE | KVS_MEM_ACTIVATION | KVS_MEM_SAMPLER |
			    KVS_MEM_NON_TORCH | KVS_MEM_CONTEXT;
		t.fraction = d->free_gpu_memory_fraction > 0 ? d->free_gpu_memory_fraction : 0.9;
		break;
	default:
		t.counted = KVS_MEM_ROPE | KVS_MEM_ACTIVATION | KVS_MEM_SAMPLER |
			    KVS_MEM_NON_TORCH;
		t.fraction = d->gpu_memory_utilization;
		encoder_profile(d, tp, ab, &t);   /* vLLM's run only */
		if (t.encoder_items)              /* a term only where a run is */
			t.counted |= KVS_MEM_ENCODER;
		break;
	}
	*out = t;
}

uint64_t kvs_reserve_estimate(const kvs_deploy *d)
{
	kvs_mem_terms t;
	kvs_mem_terms_compute(d, &t);
	/* each term with the KVS_MEM_* bit that says the engine counts it */
	const struct { unsigned bit; const uint64_t *bytes; } terms[] = {
		{ KVS_MEM_ROPE, &t.rope_cache_bytes },
		{ KVS_MEM_ACTIVATION, &t.activation_bytes },
		{ KVS_MEM_SAMPLER, &t.sampler_bytes },
		{ KVS_MEM_CUDAGRAPH, &t.cudagraph_bytes },
		{ KVS_MEM_NON_TORCH, &t.non_torch_bytes },
		{ KVS_MEM_CONTEXT, &t.cuda_context_bytes },
		{ KVS_MEM_ENCODER, &t.encoder_bytes },
	};
	uint64_t r = 0;
	for (size_t i = 0; i < KVS_ARRAY_LEN(terms); i++)
		if (t.counted & terms[i].bit)
			r += *terms[i].bytes;
	return r;
}
