/*
 * sizing.c - the KV cache arithmetic: bytes per token, per sequence, per
 * block; weights, working-space reserve, KV budget, num_gpu_blocks and
 * concurrency for one deployment.
 *
 * One token on one rank:
 *
 *   kv_bytes_per_token = layers_per_rank x layer_bytes
 *   layer_bytes        = ceil(factor x width x bits / 8) + scale bytes
 *   factor x width     = 2 x kv_heads_per_rank x head_dim      (K and V)
 *                      = 1 x (kv_lora_rank + qk_rope_head_dim)  (MLA latent)
 *
 * The KV memory of a rank, for the vLLM-style pool (memory.c has the
 * reserve's terms and the SGLang and TensorRT-LLM variants):
 *
 *   usable     = round(mem_bytes x gpu_memory_utilization)
 *   kv_budget  = usable - weights - reserve              (0 when negative)
 *   num_gpu_blocks = floor(kv_budget / (block_size x kv_bytes_per_token))
 *
 * mem_bytes is the device total as the driver reports it.
 *
 * All sizes are unsigned 64-bit with explicit overflow checks; doubles only
 * for ratios, rates and dollars.
 */
#include "kvs_config.h"
#include "sizing_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static kvs_status ovf(const char *what)
{
	return kvs_fail(KVS_ERR_OVERFLOW, "%s does not fit in 64 bits", what);
}

kvs_status kvs_sizing_layout(const kvs_model *m, kvs_dtype kv_dtype,
			     uint32_t group, uint32_t tp, uint32_t pp,
			     kvs_kv_layout *out)
{
	kvs_kv_layout l;
	memset(&l, 0, sizeof l);
	if (!m)
		return kvs_fail(KVS_ERR_INVALID, "no model");
	if (m->num_layers == 0)
		return kvs_fail(KVS_ERR_INVALID, "model %s: num_layers must be positive", m->name);
	if (tp == 0 || pp == 0)
		return kvs_fail(KVS_ERR_INVALID, "tp and pp must be at least 1 (got tp %u, pp %u)",
				tp, pp);
	if (pp > m->num_layers)
		return kvs_fail(KVS_ERR_INVALID,
				"pp %u is more than the model's %u layers", pp, m->num_layers);
	unsigned bits = kvs_dtype_bits(kv_dtype);
	if (!bits)
		return kvs_fail(KVS_ERR_INVALID, "unknown KV cache data type %d", (int)kv_dtype);
	if (m->num_heads && m->num_heads % tp != 0)
		return kvs_fail(KVS_ERR_INVALID,
				"tp %u does not divide the model's %u attention heads",
				tp, m->num_heads);
	if (m->kv_lora_rank) {
		/* MLA: the latent is shared by all heads, so every tp rank keeps
		 * the whole latent of its layers. */
		if (m->qk_rope_head_dim == 0)
			return kvs_fail(KVS_ERR_INVALID, "model %s: MLA needs qk_rope_head_dim",
					m->name);
		l.factor = 1;
		l.width = m->kv_lora_rank + m->qk_rope_head_dim;
		if (l.width < m->kv_lora_rank)
			return ovf("kv_lora_rank + qk_rope_head_dim");
	} else {
		uint32_t kv = m->num_kv_heads;
		if (kv == 0 || m->head_dim == 0)
			return kvs_fail(KVS_ERR_INVALID,
					"model %s: num_kv_heads and head_dim must be positive",
					m->name);
		if (kv >= tp ? kv % tp != 0 : tp % kv != 0)
			return kvs_fail(KVS_ERR_INVALID,
					"tp %u does not split the model's %u kv heads evenly "
					"(tp must divide them, or be a multiple of them)", tp, kv);
		l.kv_heads_rank = kv >= tp ? kv / tp : 1; /* replicated when tp > kv */
		uint64_t w = (uint64_t)l.kv_heads_rank * m->head_dim;
		if (w > UINT32_MAX)
			return ovf("kv_heads x head_dim");
		l.factor = 2;
		l.width = (uint32_t)w;
	}
	uint64_t elems = (uint64_t)l.factor * l.width; /* < 2^33 */
	uint64_t layer_bits = elems * bits;            /* < 2^39 */
	l.layer_bytes = kvs_div_ceil(layer_bits, 8);
	if (bits < 16 && group > 0) {
		/* one fp16 scale per group (+ an fp16 zero point for int4); groups
		 * stay within a head (within the latent for MLA) */
		uint64_t per_vec = m->kv_lora_rank ? l.width : m->head_dim;
		uint64_t vecs = m->kv_lora_rank ? 1 : l.kv_heads_rank;
		uint64_t groups = l.factor * vecs * kvs_div_ceil(per_vec, group);
		l.scale_bytes = groups * (kv_dtype == KVS_DTYPE_INT4 ? 4 : 2);
		l.layer_bytes += l.scale_bytes;
	}

	/* pipeline stages: the largest stage holds ceil(L / pp) layers, with
	 * full and windowed layers split as evenly as each kind allows */
	l.layers_rank = (uint32_t)kvs_div_ceil(m->num_layers, pp);
	uint32_t sliding = m->sliding_window ? m->num_sliding_layers : 0;
	if (sliding > m->num_layers)
		sliding = m->num_layers;
	uint32_t full = m->num_layers - sliding;
	uint32_t full_rank = (uint32_t)kvs_div_ceil(full, pp);
	l.full_rank = full_rank < l.layers_rank ? full_rank : l.layers_rank;
	l.sliding_rank = l.layers_rank - l.full_rank;
	l.window = l.sliding_rank ? m->sliding_window : 0;
	*out = l;
	return KVS_OK;
}

kvs_status kvs_kv_bytes_per_token(const kvs_model *m, kvs_dtype kv_dtype,
				  uint32_t kv_quant_group, uint32_t tp,
				  uint32_t pp, uint64_t *out)
{
	kvs_kv_layout l;
	kvs_status st = kvs_sizing_layout(m, kv_dtype, kv_quant_group, tp, pp, &l);
	if (st != KVS_OK)
		return st;
	uint64_t v;
	if (kvs_mul_overflow(l.layer_bytes, l.layers_rank, &v))
		return ovf("KV bytes per token");
	*out = v;
	return KVS_OK;
}

static kvs_status bytes_for_tokens(const kvs_kv_layout *l, uint64_t n, uint64_t *out)
{
	uint64_t win = l->window && n > l->window ? l->window : n;
	uint64_t a, b, layer_tokens, v;
	if (kvs_mul_overflow(l->full_rank, n, &a) ||
	    kvs_mul_overflow(l->sliding_rank, win, &b) ||
	    kvs_add_overflow(a, b, &layer_tokens) ||
	    kvs_mul_overflow(layer_tokens, l->layer_bytes, &v))
		return ovf("KV bytes of the sequence");
	*out = v;
	return KVS_OK;
}

kvs_status kvs_kv_bytes_for_tokens(const kvs_model *m, kvs_dtype kv_dtype,
				   uint32_t kv_quant_group, uint32_t tp,
				   uint32_t pp, uint64_t n_tokens,
				   uint64_t *out)
{
	kvs_kv_layout l;
	kvs_status st = kvs_sizing_layout(m, kv_dtype, kv_quant_group, tp, pp, &l);
	if (st != KVS_OK)
		return st;
	return bytes_for_tokens(&l, n_tokens, out);
}

uint64_t kvs_sizing_layer_blocks(const kvs_kv_layout *l, uint32_t bs, uint64_t n)
{
	uint64_t full_blocks = kvs_div_ceil(n, bs);
	uint64_t win_blocks = full_blocks;
	if (l->window) {
		/* w consecutive tokens straddle at most ceil((w - 1) / bs) + 1 blocks */
		uint64_t w = kvs_div_ceil(l->window - 1, bs) + 1;
		if (w < win_blocks)
			win_blocks = w;
	}
	uint64_t a, b, r;
	if (kvs_mul_overflow(l->full_rank, full_blocks, &a) ||
	    kvs_mul_overflow(l->sliding_rank, win_blocks, &b) ||
	    kvs_add_overflow(a, b, &r))
		return UINT64_MAX;
	return r;
}

/* Bytes of n parameters stored at the weight width (INT4: with its group
 * scales), plus wide ones at 16 bits. */
static kvs_status stored_bytes(uint64_t narrow, uint64_t wide, kvs_dtype weight_dtype,
			       uint64_t *out)
{
	uint64_t pbits, bytes;
	if (kvs_mul_overflow(narrow, kvs_dtype_bits(weight_dtype), &pbits))
		return ovf("weight bytes");
	bytes = kvs_div_ceil(pbits, 8);
	if (weight_dtype == KVS_DTYPE_INT4 &&
	    kvs_add_overflow(bytes, kvs_div_ceil(narrow, 128) * 4, &bytes))
		return ovf("weight bytes");
	if (kvs_add_overflow(bytes, wide * 2, &bytes))
		return ovf("weight bytes");
	*out = bytes;
	return KVS_OK;
}

/* The vision tower's bytes on one GPU of the first stage: stored at the
 * weight width, or at 16 bits when the checkpoint keeps it so, split over
 * tp.  vLLM builds its encoders (SigLIP's q/k/v, o, fc1, fc2) of the same
 * column- and row-parallel layers as the language model, so tp shards
 * them; the tower runs before the first layer, on the first pipeline
 * stage only (the projector, the patch convolution and the norms, under
 * 2% of Gemma 3's tower, are replicated there: counted sharded). */
static kvs_status vision_bytes(const kvs_model *m, uint64_t vis, kvs_dtype weight_dtype,
			       uint32_t tp, uint64_t *out)
{
	bool wide = m->vision_wide && kvs_dtype_bits(weight_dtype) < 16;
	uint64_t b;
	kvs_status st = stored_bytes(wide ? 0 : vis, wide ? vis : 0, weight_dtype, &b);
	if (st)
		return st;
	*out = kvs_div_ceil(b, tp);
	return KVS_OK;
}

/* The weights of one GPU: the language model's stored bytes over tp x pp,
 * and on the first stage the vision tower's over tp; with expert
 * parallelism (held > 0), the rest's over tp x pp and `held` whole routed
 * experts of each MoE layer of a stage, ceil(experts / (tp x dp)) (the
 * first GPUs hold the remainder, as vLLM's expert map places them). */
static kvs_status gpu_weight_bytes(const kvs_model *m, kvs_dtype weight_dtype, uint32_t tp,
				   uint32_t pp, uint32_t held, uint64_t *out,
				   uint64_t *vision_out)
{
	unsigned bits = kvs_dtype_bits(weight_dtype);
	if (!bits)
		return kvs_fail(KVS_ERR_INVALID, "unknown weight data type %d", (int)weight_dtype);
	if (tp == 0 || pp == 0)
		return kvs_fail(KVS_ERR_INVALID, "tp and pp must be at least 1");
	/* quantised checkpoints keep the embeddings, the LM head unless
	 * quantization_config says lm_head (vLLM's VocabParallelEmbedding and
	 * ParallelLMHead stay unquantised), and the parts its
	 * modules_to_not_convert names, at 16 bits */
	uint64_t vis = m->vision_params < m->num_params ? m->vision_params : m->num_params;
	uint64_t wide = bits < 16 ? kvs_model_wide_params(m) : 0;
	uint64_t narrow = m->num_params - vis - wide;
	uint64_t ranks = (uint64_t)tp * pp, bytes, vb;
	kvs_status st;
	if ((st = vision_bytes(m, vis, weight_dtype, tp, &vb)))
		return st;
	if (vision_out)
		*vision_out = vb;
	uint64_t experts = 0;
	if (held && m->num_experts) {
		/* the routed experts' share of the shape estimate, applied to
		 * the parameter count in use (a config's own count, --params) */
		kvs_param_parts pp_;
		kvs_model_param_parts(m, &pp_);
		uint64_t est = pp_.total;
		experts = est == m->num_params || est == 0 || est == UINT64_MAX
			  ? pp_.experts
			  : (uint64_t)((double)pp_.experts / (double)est * (double)m->num_params);
		if (experts > narrow)
			experts = narrow;
	}
	if (experts == 0) {
		if ((st = stored_bytes(narrow, wide, weight_dtype, &bytes)))
			return st;
		if (kvs_add_overflow(kvs_div_ceil(bytes, ranks), vb, out))
			return ovf("weight bytes");
		return KVS_OK;
	}
	/* the routed experts (never among the wide parts) apart */
	uint64_t eb;
	if ((st = stored_bytes(narrow - experts, wide, weight_dtype, &bytes)) ||
	    (st = stored_bytes(experts, 0, weight_dtype, &eb)))
		return st;
	uint64_t e = m->num_experts, x;
	if (kvs_mul_overflow(eb, held, &x) ||
	    kvs_add_overflow(kvs_div_ceil(bytes, ranks) + kvs_div_ceil(x, e * pp), vb, out))
		return ovf("weight bytes");
	return KVS_OK;
}

kvs_status kvs_weight_bytes(const kvs_model *m, kvs_dtype weight_dtype,
			    uint32_t tp, uint32_t pp, uint64_t *out)
{
	return gpu_weight_bytes(m, weight_dtype, tp, pp, 0, out, NULL);
}

bool kvs_deploy_windows_in_full(const kvs_deploy *d)
{
	const kvs_model *m = &d->model;
	uint32_t wl = kvs_model_window_layers(m);
	if (!wl || wl >= m->num_layers || d->engine != KVS_ENGINE_VLLM)
		return false;
	return d->hybrid_kv_off || (m->window_chunked && !d->chunked_hybrid_on);
}

kvs_model kvs_deploy_held_model(const kvs_deploy *d)
{
	kvs_model held = d->model;
	if (kvs_deploy_windows_in_full(d)) {
		held.sliding_window = 0;
		held.num_sliding_layers = 0;
		held.window_chunked = false;
	}
	return held;
}

bool kvs_deploy_expert_parallel(const kvs_deploy *d)
{
	return d->dp > 1 && d->expert_parallel && d->model.num_experts;
}

uint64_t kvs_deploy_rank_gpus(const kvs_deploy *d)
{
	return (uint64_t)(d->tp ? d->tp : 1) * (d->pp ? d->pp : 1);
}

uint64_t kvs_deploy_gpus(const kvs_deploy *d)
{
	return (uint64_t)(d->tp ? d->tp : 1) * (d->pp ? d->pp : 1) * (d->dp ? d->dp : 1);
}

void kvs_deploy_defaults(kvs_deploy *d, const kvs_model *m, const kvs_gpu *g)
{
	memset(d, 0, sizeof *d);
	if (m)
		d->model = *m;
	if (g)
		d->gpu = *g;
	d->tp = 1;
	d->pp = 1;
	d->dp = 1;
	d->gpu_memory_utilization = 0.9;
	kvs_dtype act = d->model.dtype == KVS_DTYPE_FP32 ? KVS_DTYPE_BF16 : d->model.dtype;
	if (kvs_dtype_bits(act) < 16)
		act = KVS_DTYPE_BF16;
	d->weight_dtype = d->model.weight_dtype != KVS_DTYPE_FP32 ? d->model.weight_dtype : act;
	d->kv_dtype = act; /* vLLM's kv_cache_dtype "auto": the model's dtype */
	d->kv_quant_group = 0;
	d->block_size = 16;
	d->max_model_len = 0;
	uint64_t ctx = 4000;
	if (d->model.max_position_embeddings && d->model.max_position_embeddings < ctx)
		ctx = d->model.max_position_embeddings;
	d->context_tokens = ctx;
	d->reserve_bytes = -1;
	d->gpu_hour_price = 0.0;
}

/* Roofline decode step on one rank for `conv` conversations at full
 * context: weights (MoE: the experts those tokens touch) and every
 * conversation's cache read once; matmul and attention FLOPs; tp adds two
 * all-reduces per layer.  Stages of a pipeline run one after another; with
 * balanced micro-batches (`balanced`: pp_balanced, or the other bound's
 * rate) the conversations run as
 * min(pp, conv) micro-batches in flight, and a step (every conversation
 * one token) lasts one micro-batch's pass through the pp stages, each
 * stage reading its weights once per micro-batch (the simulator's model,
 * docs/COST-MODEL.md). */
static double decode_step(const kvs_deploy *d, const kvs_sizing *s, uint64_t conv,
			  bool balanced)
{
	const kvs_model *m = &d->model;
	double ranks = (double)d->tp * d->pp;
	uint64_t mb = d->pp > 1 && balanced ? (conv < d->pp ? conv : d->pp) : 1;
	double c = (double)conv / (double)mb;
	double w = (double)s->weight_bytes;
	double active_w = w * ((double)m->num_active_params /
			       (double)(m->num_params ? m->num_params : 1));
	double wread = active_w * c < w ? active_w * c : w;
	/* the cache read: the windowed layers' windows even where the engine
	 * holds their KV in full (the kernel reads the window) */
	double read = (double)s->bytes_per_context;
	uint64_t wb = 0;
	if (kvs_deploy_windows_in_full(d) &&
	    kvs_kv_bytes_for_tokens(m, d->kv_dtype, d->kv_quant_group, d->tp, d->pp,
				    d->context_tokens, &wb) == KVS_OK)
		read = (double)wb;
	double bytes = wread + c * read;
	double heads_rank = (double)(m->num_heads ? m->num_heads : 1) / d->tp;
	double att_dim = m->kv_lora_rank ? (double)m->kv_lora_rank + m->qk_rope_head_dim
					 : (double)m->head_dim;
	double flops = 2.0 * (double)m->num_active_params / ranks * c +
		       4.0 * (double)d->context_tokens * heads_rank * att_dim *
			       s->layers_per_rank * c;
	uint32_t nwl = kvs_model_window_layers(m);
	if (nwl && m->sliding_window < d->context_tokens) {
		/* windowed layers attend over their window only (held in full
		 * or not), as the simulator's step time charges them */
		double wl = (double)s->layers_per_rank * nwl / m->num_layers;
		flops -= 4.0 * (double)(d->context_tokens - m->sliding_window) * heads_rank *
			 att_dim * wl * c;
	}
	double t = fmax(bytes / d->gpu.hbm_bytes_per_s,
			flops / kvs_gpu_matmul_rate(&d->gpu, d->weight_dtype));
	if (d->tp > 1 && d->gpu.interconnect_bytes_per_s > 0)
		t += 2.0 * s->layers_per_rank * c * m->hidden_size * 2.0 *
		     (2.0 * (d->tp - 1) / d->tp) / d->gpu.interconnect_bytes_per_s;
	return t * d->pp;
}

/* vLLM's KV cache groups on one rank (its grouping for pages of one size,
 * vLLM 0.10-0.19): each attention kind's layers split into groups of the
 * smaller kind's count, or of the larger kind's when that is under 1.25x
 * the smaller (fewer padding layers); a model of one kind is one group. */
static void vllm_groups(const kvs_kv_layout *l, kvs_sizing *s)
{
	uint32_t f = l->full_rank, w = l->sliding_rank;
	uint32_t lo = f < w ? f : w, hi = f < w ? w : f;
	uint32_t g = lo ? lo : hi;
	if (lo && (uint64_t)hi * 4 < (uint64_t)lo * 5)
		g = hi;
	s->vllm_group_layers = g;
	s->vllm_full_groups = f ? (uint32_t)kvs_div_ceil(f, g) : 0;
	s->vllm_window_groups = w ? (uint32_t)kvs_div_ceil(w, g) : 0;
}

/* Pages one windowed layer may hold for a request of mml tokens, as
 * vLLM's start-up accounting bounds it: within a step the layer holds the
 * window's last window - 1 tokens (a chunk's, for chunked attention) and
 * the step's up to `step` new ones, never more than mml; a sliding window
 * may start inside a block, one block more. */
static uint64_t vllm_window_pages(const kvs_kv_layout *l, bool chunked, uint64_t mml,
				  uint32_t bs, uint64_t step)
{
	uint64_t n = (chunked ? l->window : l->window - 1) + step;
	if (n > mml)
		n = mml;
	return kvs_div_ceil(n, bs) + (chunked ? 0 : 1);
}

/* Bytes vLLM's start-up check asks for one request of mml tokens: every
 * layer's largest holding (full layers mml tokens in whole blocks). */
static uint64_t vllm_request_bytes(const kvs_kv_layout *l, bool chunked, uint64_t mml,
				   uint32_t bs, uint64_t step)
{
	uint64_t pages = l->full_rank * kvs_div_ceil(mml, bs);
	if (l->sliding_rank)
		pages += l->sliding_rank * vllm_window_pages(l, chunked, mml, bs, step);
	double b = (double)pages * (double)bs * (double)l->layer_bytes;
	return b >= 0x1p64 ? UINT64_MAX : pages * bs * l->layer_bytes;
}

/* The lines vLLM logs for this pool, and whether it would start: it
 * refuses when one max_model_len request needs more than the pool, and
 * names the longest max_model_len that fits (a binary search, as its
 * estimate does). */
static void vllm_lines(const kvs_deploy *d, const kvs_kv_layout *l, kvs_sizing *s)
{
	bool chunked = d->model.window_chunked;
	uint32_t bs = d->block_size;
	uint64_t step = s->mem.profile_tokens;
	uint64_t full = kvs_div_ceil(s->max_model_len, bs);
	uint64_t win = l->sliding_rank ? vllm_window_pages(l, chunked, s->max_model_len, bs, step)
				       : 0;
	s->vllm_blocks_per_request = s->vllm_full_groups * full + s->vllm_window_groups * win;
	uint32_t groups = s->vllm_full_groups + s->vllm_window_groups;
	s->vllm_kv_tokens = s->vllm_num_blocks / (groups ? groups : 1) * bs;
	s->vllm_max_concurrency = s->vllm_blocks_per_request
		? (double)s->vllm_num_blocks / (double)s->vllm_blocks_per_request : 0.0;
	s->vllm_request_bytes = vllm_request_bytes(l, chunked, s->max_model_len, bs, step);
	s->vllm_fit_max_model_len = 0;
	/* vLLM checks the memory it found (get_kv_cache_config's first step);
	 * a block-count override replaces the blocks after it */
	uint64_t avail = s->vllm_check_bytes;
	s->vllm_starts = s->vllm_request_bytes <= avail;
	if (s->vllm_starts)
		return;
	uint64_t lo = 1, hi = s->max_model_len;
	if (vllm_request_bytes(l, chunked, lo, bs, step) > avail)
		return;
	while (lo < hi) {   /* the largest n whose request fits, lo <= n < hi + 1 */
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (vllm_request_bytes(l, chunked, mid, bs, step) <= avail)
			lo = mid;
		else
			hi = mid - 1;
	}
	s->vllm_fit_max_model_len = lo;
}

uint64_t kvs_sizing_pool_bytes_per_token(const kvs_sizing *s)
{
	if (!s->layers_per_rank)
		return 0;
	if (!s->vllm_window_groups || !s->vllm_full_groups)
		return s->kv_bytes_per_token;
	return s->kv_bytes_per_token / s->layers_per_rank * s->vllm_group_layers *
	       s->vllm_full_groups;
}

kvs_status kvs_size_compute(const kvs_deploy *d, kvs_sizing *out)
{
	kvs_sizing s;
	kvs_status st;
	memset(&s, 0, sizeof s);
	if (!d)
		return kvs_fail(KVS_ERR_INVALID, "no deployment");
	if (!(d->gpu_memory_utilization > 0.0 && d->gpu_memory_utilization <= 1.0))
		return kvs_fail(KVS_ERR_INVALID,
				"gpu_memory_utilization must be in (0, 1], got %g",
				d->gpu_memory_utilization);
	if (d->block_size == 0)
		return kvs_fail(KVS_ERR_INVALID, "block_size must be at least 1 token");
	if (d->context_tokens == 0)
		return kvs_fail(KVS_ERR_INVALID, "context must be at least 1 token");
	if (d->gpu.mem_bytes == 0)
		return kvs_fail(KVS_ERR_INVALID, "GPU memory must be positive");
	if (!(d->gpu_hour_price >= 0.0) || !isfinite(d->gpu_hour_price))
		return kvs_fail(KVS_ERR_INVALID, "GPU-hour price must be zero or positive");

	/* windowed layers held in full (--disable-hybrid-kv-cache-manager,
	 * or vLLM's default for chunked attention) */
	kvs_model held = kvs_deploy_held_model(d);
	kvs_kv_layout l;
	if ((st = kvs_sizing_layout(&held, d->kv_dtype, d->kv_quant_group, d->tp,
				    d->pp, &l)))
		return st;
	s.kv_factor = l.factor;
	s.kv_width = l.width;
	s.kv_heads_per_rank = l.kv_heads_rank;
	s.layers_per_rank = l.layers_rank;
	s.sliding_layers_per_rank = l.sliding_rank;
	if (kvs_mul_overflow(l.layer_bytes, l.layers_rank, &s.kv_bytes_per_token) ||
	    kvs_mul_overflow(l.scale_bytes, l.layers_rank, &s.kv_scale_bytes_per_token) ||
	    kvs_mul_overflow(l.layer_bytes, (uint64_t)d->model.num_layers * d->tp,
			     &s.kv_bytes_per_token_total))
		return ovf("KV bytes per token");
	if (kvs_mul_overflow(s.kv_bytes_per_token, d->block_size, &s.bytes_per_block))
		return ovf("bytes per block");
	if ((st = bytes_for_tokens(&l, d->context_tokens, &s.bytes_per_context)))
		return st;
	/* the replica: every layer (pp 1) on each of the tp ranks */
	kvs_kv_layout all;
	if ((st = kvs_sizing_layout(&held, d->kv_dtype, d->kv_quant_group, d->tp, 1,
				    &all)) ||
	    (st = bytes_for_tokens(&all, d->context_tokens, &s.bytes_per_context_replica)))
		return st;
	if (kvs_mul_overflow(s.bytes_per_context_replica, d->tp, &s.bytes_per_context_replica))
		return ovf("KV bytes of the sequence on the replica");
	s.max_model_len = kvs_deploy_max_model_len(d);
	s.context_over_max_model_len = d->context_tokens > s.max_model_len;

	if (d->dp > 1024)
		return kvs_fail(KVS_ERR_INVALID, "data-parallel size must be at most 1024, got %u",
				d->dp);
	if (kvs_deploy_expert_parallel(d)) {
		uint64_t ep = (uint64_t)d->tp * d->dp, e = d->model.num_experts;
		if (ep > e)
			return kvs_fail(KVS_ERR_INVALID, "expert parallelism over tp %u x dp %u = "
					"%llu GPUs: the model has %u experts per layer, fewer than "
					"one per GPU", d->tp, d->dp, (unsigned long long)ep,
					d->model.num_experts);
		s.experts_per_gpu = (uint32_t)((e + ep - 1) / ep);
	}
	if ((st = gpu_weight_bytes(&d->model, d->weight_dtype, d->tp, d->pp, s.experts_per_gpu,
				   &s.weight_bytes, &s.vision_weight_bytes)))
		return st;
	kvs_mem_terms_compute(d, &s.mem);
	if (!(s.mem.fraction > 0.0 && s.mem.fraction <= 1.0))
		return kvs_fail(KVS_ERR_INVALID, "%s: memory fraction must be in (0, 1], got %g",
				s.mem.engine == KVS_ENGINE_SGLANG ? "mem_fraction_static" :
				"free_gpu_memory_fraction", s.mem.fraction);
	s.reserve_estimated = d->reserve_bytes < 0;
	s.reserve_bytes = s.reserve_estimated ? kvs_reserve_estimate(d)
					      : (uint64_t)d->reserve_bytes;
	uint64_t taken;
	if (kvs_add_overflow(s.weight_bytes, s.reserve_bytes, &taken))
		return ovf("weights plus reserve");
	if (s.mem.engine == KVS_ENGINE_TRTLLM) {
		/* a fraction of what is free once weights and buffers are in */
		uint64_t free_b = d->gpu.mem_bytes > taken ? d->gpu.mem_bytes - taken : 0;
		s.kv_budget_bytes = (uint64_t)((double)free_b * s.mem.fraction);
		s.usable_bytes = taken + s.kv_budget_bytes;
	} else {
		/* vLLM: total x gpu_memory_utilization; SGLang: x mem_fraction_static */
		double usable = nearbyint((double)d->gpu.mem_bytes * s.mem.fraction);
		s.usable_bytes = usable >= (double)d->gpu.mem_bytes ? d->gpu.mem_bytes
								    : (uint64_t)usable;
		s.kv_budget_bytes = s.usable_bytes > taken ? s.usable_bytes - taken : 0;
	}
	/* vLLM's overrides: a fixed KV memory, or a fixed block count */
	if (d->kv_cache_memory_bytes) {
		s.kv_budget_bytes = d->kv_cache_memory_bytes;
		s.kv_from_override = true;
	}
	/* vLLM's block: one layer's page in each of a group's layers (every
	 * layer of the rank for a model of one attention kind) */
	vllm_groups(&l, &s);
	uint64_t vllm_block_bytes;
	if (kvs_mul_overflow(l.layer_bytes * d->block_size, s.vllm_group_layers,
			     &vllm_block_bytes))
		return ovf("bytes per block");
	s.vllm_num_blocks = s.kv_budget_bytes / vllm_block_bytes;
	s.vllm_check_bytes = s.kv_budget_bytes;
	if (d->num_gpu_blocks_override) {
		/* vLLM's own blocks */
		s.vllm_num_blocks = d->num_gpu_blocks_override;
		if (kvs_mul_overflow(s.vllm_num_blocks, vllm_block_bytes, &s.kv_budget_bytes))
			return ovf("num_gpu_blocks_override x bytes per block");
		s.kv_from_override = true;
	}
	s.num_gpu_blocks = s.kv_budget_bytes / s.bytes_per_block;
	if (kvs_mul_overflow(s.num_gpu_blocks, d->block_size, &s.kv_capacity_tokens))
		return ovf("KV capacity in tokens");
	vllm_lines(d, &l, &s);
	if (d->pp > 1)
		s.vllm_request_bytes_all_stages =
			vllm_request_bytes(&all, d->model.window_chunked, s.max_model_len,
					   d->block_size, s.mem.profile_tokens);

	/* whole conversations: layer-blocks of the pool over layer-blocks of one */
	uint64_t conv_lb = kvs_sizing_layer_blocks(&l, d->block_size, d->context_tokens);
	uint64_t pool_lb;
	if (conv_lb == UINT64_MAX ||
	    kvs_mul_overflow(s.num_gpu_blocks, l.layers_rank, &pool_lb))
		return ovf("blocks per conversation");
	s.blocks_per_conversation = kvs_div_ceil(conv_lb, l.layers_rank);
	s.max_conversations = conv_lb ? pool_lb / conv_lb : 0;
	/* kvsim's window-aware figure: pool bytes over one request's bytes at
	 * --context (vLLM's own line is vllm_max_concurrency, above) */
	s.max_concurrency = s.bytes_per_context
		? (double)s.num_gpu_blocks * (double)s.bytes_per_block / (double)s.bytes_per_context
		: 0.0;
	s.cache_to_weights = s.weight_bytes ? (double)s.bytes_per_context / (double)s.weight_bytes
					    : 0.0;
	if (s.max_conversations && d->gpu.hbm_bytes_per_s > 0 && d->gpu.fp16_flops > 0) {
		s.decode_step_s = decode_step(d, &s, s.max_conversations, d->pp_balanced);
		s.decode_tokens_per_s = (double)s.max_conversations / s.decode_step_s;
		if (d->pp > 1)   /* the other bound, for the range */
			s.decode_tokens_per_s_other =
				(double)s.max_conversations /
				decode_step(d, &s, s.max_conversations, !d->pp_balanced);
	}
	s.dp = d->dp > 1 ? d->dp : 1;
	if (kvs_mul_overflow(s.max_conversations, s.dp, &s.max_conversations_total))
		return ovf("conversations over the data-parallel ranks");
	s.decode_tokens_per_s_total = s.decode_tokens_per_s * s.dp;
	if (d->gpu_hour_price > 0 && s.max_conversations) {
		double per_hour = d->gpu_hour_price * (double)kvs_deploy_rank_gpus(d);
		s.dollars_per_conv_hour = per_hour / (double)s.max_conversations;
		if (s.decode_tokens_per_s > 0)
			s.dollars_per_mtok = per_hour / 3600.0 / s.decode_tokens_per_s * 1e6;
	}
	if (KVS_DEBUG >= 1) {
		/* the budget parts add up; whole blocks never beat vLLM's ratio */
		kvs_require(s.kv_from_override || s.kv_budget_bytes == 0 ||
			    s.kv_budget_bytes + taken == s.usable_bytes);
		kvs_require(s.num_gpu_blocks * s.bytes_per_block <= s.kv_budget_bytes);
		kvs_require((double)s.max_conversations <= s.max_concurrency * (1 + 1e-12));
		kvs_require(s.max_conversations * conv_lb <= pool_lb);
	}
	*out = s;
	return KVS_OK;
}
