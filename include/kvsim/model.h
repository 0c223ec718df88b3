/*
 * kvsim/model.h - model and GPU descriptions, presets, and the KV cache
 * sizing arithmetic behind `kvsim size`.
 *
 * kvs_model and kvs_gpu are plain data (public layout on purpose: they are
 * configuration, filled from presets, Hugging Face config.json files or
 * flags).  All size arithmetic is unsigned 64-bit with overflow checks.
 */
#ifndef KVSIM_MODEL_H
#define KVSIM_MODEL_H

#include "kvsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The data types, described once: enumerator, name, bits per element. */
#define KVS_DTYPE_LIST(X) \
	X(KVS_DTYPE_FP32, "fp32", 32) \
	X(KVS_DTYPE_FP16, "fp16", 16) \
	X(KVS_DTYPE_BF16, "bf16", 16) \
	X(KVS_DTYPE_FP8, "fp8", 8) \
	X(KVS_DTYPE_INT8, "int8", 8) \
	X(KVS_DTYPE_INT4, "int4", 4)

typedef enum kvs_dtype {
	KVS_DTYPE_LIST(KVS_ENUMERATOR)
	KVS_DTYPE_COUNT_
} kvs_dtype;

/* "fp16", "bf16", ...; parse accepts the vLLM/HF spellings too
 * ("float16", "half", "bfloat16", "float32", "fp8_e4m3", "auto" -> fp16). */
const char *kvs_dtype_name(kvs_dtype dt);
kvs_status kvs_dtype_parse(const char *text, kvs_dtype *out);
/* Bits per element (32, 16, 16, 8, 8, 4). */
unsigned kvs_dtype_bits(kvs_dtype dt);

#define KVS_NAME_MAX 64

/* The projections of a layer a quantised checkpoint may keep at 16 bits
 * one by one (kvs_model.wide_proj_layers): enumerator, module name. */
#define KVS_PROJ_LIST(X) \
	X(KVS_PROJ_Q, "q_proj") \
	X(KVS_PROJ_K, "k_proj") \
	X(KVS_PROJ_V, "v_proj") \
	X(KVS_PROJ_O, "o_proj") \
	X(KVS_PROJ_GATE, "gate_proj") \
	X(KVS_PROJ_UP, "up_proj") \
	X(KVS_PROJ_DOWN, "down_proj")

typedef enum kvs_proj {
	KVS_PROJ_LIST(KVS_ENUMERATOR)
	KVS_PROJ_COUNT_
} kvs_proj;

/* "q_proj", ..., "down_proj"; "unknown" out of range. */
const char *kvs_proj_name(kvs_proj p);

#define KVS_DENSE_LAYER_WORDS 4     /* kvs_model.dense_layer_bits: layers below 256 */

/* The largest item a vision tower takes, as vLLM's profile run feeds it
 * before it sizes the KV pool (the item of the modality with the most
 * tokens), and the tower's widths: what the encoder's memory in that run
 * follows (docs/SIZING.md).  item_tokens 0: not modelled for the tower. */
typedef struct kvs_vision_profile {
	uint32_t width;          /* the tower's width */
	uint32_t mlp_width;      /* its MLP's width */
	bool mlp_gated;          /* gate and up projections (else fc1 and fc2) */
	uint64_t item_patches;   /* patches of one item through the tower */
	uint64_t item_pixels;    /* input values per patch */
	uint32_t item_tokens;    /* the item's prompt tokens: the unit of the
				  * encoder budget */
	uint32_t item_embeds;    /* of which the tower's output embeddings */
	bool takes_video;        /* vLLM may profile a video instead (the
				  * Qwen-VL towers) */
	bool has_tower;          /* a vision_config, counted or not */
	uint32_t patch_side;     /* a pixel-capped item (the Qwen-VL towers):
				  * patch side, pixels; 0: the item is fixed */
	uint32_t merge_side;     /* patches merged into a token, per side */
	/* what SGLang's default mem_fraction_static reads of the tower
	 * (getattr on the config as transformers loads it; 0: no tower) */
	uint32_t attr_layers;    /* num_hidden_layers (24 where the config
				  * has none: the Qwen-VL towers' "depth") */
	uint32_t attr_hidden;    /* hidden_size (1024 where it has none) */
} kvs_vision_profile;

typedef struct kvs_model {
	char name[KVS_NAME_MAX];
	uint32_t num_layers;             /* num_hidden_layers */
	uint32_t num_heads;              /* num_attention_heads */
	uint32_t num_kv_heads;           /* num_key_value_heads (== heads if absent) */
	uint32_t head_dim;               /* elements; hidden/heads unless given */
	uint32_t hidden_size;
	uint32_t intermediate_size;
	uint32_t vocab_size;
	uint32_t max_position_embeddings; /* tokens */
	uint64_t num_params;             /* total parameters */
	uint64_t num_active_params;      /* per token (MoE); == num_params if dense,
					  * less vision_params */
	bool tie_word_embeddings;
	kvs_dtype dtype;                 /* torch_dtype of the weights */
	/* Sliding-window attention: `sliding_window` tokens (0 = none) applied
	 * to `num_sliding_layers` of the num_layers layers (all layers for
	 * Mistral-7B-v0.1, every other layer for Gemma-2). */
	uint32_t sliding_window;
	uint32_t num_sliding_layers;
	/* Mixture of experts (0 = dense). */
	uint32_t num_experts;
	uint32_t num_experts_per_tok;
	uint32_t moe_intermediate_size;
	/* Multi-head latent attention (DeepSeek-V2/V3): the cache holds one
	 * latent of kv_lora_rank plus one RoPE key of qk_rope_head_dim per layer
	 * per token.  kv_lora_rank == 0 means ordinary (GQA/MHA) attention. */
	uint32_t kv_lora_rank;
	uint32_t qk_rope_head_dim;

	/* ---- architecture details, appended; all-zero means Llama-like (gated
	 * MLP, no biases, two RMSNorms per layer).  Used by the parameter
	 * estimate and the reserve estimate; the KV arithmetic needs none. */
	kvs_dtype weight_dtype;          /* weight storage from quantization_config;
					  * FP32 means "same as dtype" */
	uint32_t q_lora_rank;            /* MLA query latent (0 = plain q_proj) */
	uint32_t qk_nope_head_dim;       /* MLA: per-head query/key part without RoPE */
	uint32_t v_head_dim;             /* MLA: per-head value width */
	uint32_t shared_expert_intermediate_size; /* summed over shared experts (0 = none) */
	uint32_t first_dense_layers;     /* MoE: leading dense layers (first_k_dense_replace) */
	uint32_t norms_per_layer;        /* 0 = 2; Gemma-2 has 4 */
	uint32_t learned_positions;      /* learned position embeddings (OPT: max_pos + 2) */
	bool qkv_bias;                   /* bias on q, k, v projections (Qwen2) */
	bool o_bias;                     /* bias on the output projection */
	bool mlp_plain;                  /* up/down MLP (OPT) instead of gated SwiGLU/GeGLU */
	bool mlp_bias;
	bool norm_bias;                  /* LayerNorm with bias (OPT) */
	bool qk_norm;                    /* per-head q/k norms (Qwen3, Gemma-3) */
	bool params_from_config;         /* num_params came from the config, not the estimate */
	/* ---- appended: what the non-KV memory model needs ---- */
	bool quant_lm_head;              /* quantization_config quantises lm_head too
					  * (embeddings stay 16-bit regardless) */
	bool logit_softcap;              /* final_logit_softcapping (Gemma-2): two
					  * more [seqs, vocab] temporaries */
	/* ---- appended ---- */
	char quant_unread[64];           /* a quantization_config whose storage
					  * width kvsim does not read ("quant_method
					  * 'x', bits 3"): weights then count at the
					  * model's dtype; "" when none or read */
	/* ---- appended ---- */
	/* Parts a quantised checkpoint keeps at 16 bits, from
	 * quantization_config's modules_to_not_convert, llm_int8_skip_modules
	 * or ignore, in layers: an entry for every layer ("model.layers.*.
	 * self_attn", "re:.*self_attn.*", "self_attn") is KVS_WIDE_ALL, one
	 * naming layer i counts that layer once.  lm_head there clears
	 * quant_lm_head; the embeddings stay at 16 bits regardless.  Read
	 * them through kvs_model_wide_layers, which bounds them by the model's
	 * layers. */
	uint32_t wide_attn_layers;       /* attention projections (q, k, v, o) */
	uint32_t wide_router_layers;     /* MoE routers (gate, router) */
	uint32_t wide_shared_layers;     /* MoE shared experts */
	char wide_unread[128];           /* entries that name no part kvsim
					  * counts apart (an MoE layer's MLP, a
					  * projection of the experts or of MLA
					  * attention, a layer the model lacks, a
					  * pattern over some layers), counted
					  * quantised: the first and how many
					  * more; "" none */
	bool wide_lm_head_conflict;      /* "lm_head": true, and lm_head listed
					  * as kept at 16 bits (the list wins) */
	char quant_method[24];           /* quantization_config.quant_method as
					  * written ("mxfp4", "awq", ...); "" none */
	uint32_t moe_layer_step;         /* MoE: every step-th layer is MoE, the
					  * rest dense (Llama 4's
					  * interleave_moe_layer_step); 0 or 1:
					  * all but first_dense_layers */
	uint32_t dense_intermediate_size;/* a dense layer's MLP width when it
					  * differs from intermediate_size (Llama
					  * 4's intermediate_size_mlp); 0: the same */
	bool window_chunked;             /* the windowed layers attend within
					  * aligned chunks of sliding_window
					  * tokens (Llama 4's attention_chunk_size)
					  * rather than over a sliding window */
	/* ---- appended ---- */
	/* Projections kept at 16 bits one by one, from the same lists:
	 * "model.layers.0.mlp.down_proj", "model.layers.3.self_attn.q_proj",
	 * a dense layer's "mlp" (its gate, up and down projections), in
	 * layers as wide_*_layers are.  Only the layers whose attention is
	 * not kept whole count here (a projection of a layer whose attention
	 * is listed too is counted once, as attention); gate, up and down in
	 * the dense layers only (an MoE layer's "mlp" is its experts, which
	 * kvsim counts narrow, and says).  Read them through
	 * kvs_model_wide_projs. */
	uint32_t wide_proj_layers[KVS_PROJ_COUNT_];
	/* ---- appended: a multimodal checkpoint's encoders ---- */
	uint64_t vision_params;          /* the vision tower and its projector
					  * into the text model (vision_config),
					  * part of num_params and not of
					  * num_active_params (they run once per
					  * image, not per token); 0: none counted */
	bool vision_wide;                /* quantization_config keeps the tower
					  * at 16 bits (an entry naming it) */
	char vision_unread[96];          /* a tower or projector kvsim does not
					  * count, left out of the weights ("vision
					  * tower of model_type 'x'"); "" none */
	/* ---- appended: Qwen2-/Qwen3-MoE's mlp_only_layers ---- */
	uint64_t dense_layer_bits[KVS_DENSE_LAYER_WORDS]; /* layer i < 64 x words
					  * has a dense MLP where it would hold
					  * experts when bit i is set */
	/* ---- appended: the vision tower's profile-run input ---- */
	kvs_vision_profile vision_profile;
} kvs_model;

#define KVS_WIDE_ALL UINT32_MAX      /* kvs_model.wide_*_layers: every layer */

typedef struct kvs_gpu {
	char name[KVS_NAME_MAX];
	uint64_t mem_bytes;         /* device total as the driver reports it
				     * (cudaMemGetInfo), what engines size from */
	double hbm_bytes_per_s;     /* peak memory bandwidth */
	double fp16_flops;          /* dense FP16/BF16 FLOP/s */
	double pcie_bytes_per_s;    /* host link, for swap/offload costs */
	double interconnect_bytes_per_s; /* GPU-GPU (NVLink/IF), for all-reduce */
	/* ---- appended ---- */
	double fp8_flops;           /* dense FP8 FLOP/s; 0 = no FP8 tensor cores */
	double int8_ops;            /* dense INT8 op/s; 0 = unknown */
	uint64_t datasheet_mem_bytes; /* the label's decimal figure (0 = not given) */
	char mem_source[192];       /* where mem_bytes comes from, in words */
	uint64_t smi_mem_bytes;     /* total as nvidia-smi (rocm-smi) reports it,
				     * which SGLang's defaults read; 0: unknown
				     * (mem_bytes stands in) */
} kvs_gpu;

/* Built-in presets (lowercase, dashes: "llama-2-7b", "h100-80gb").
 * Unknown names return KVS_ERR_NOT_FOUND with a message listing the known
 * ones.  kvs_model_load also accepts a path to a Hugging Face config.json. */
kvs_status kvs_model_load(const char *name_or_path, kvs_model *out);
kvs_status kvs_model_from_json_file(const char *path, kvs_model *out);
/* The same from the bytes of a config.json in memory (UTF-8; a leading
 * byte-order mark is skipped); path names it in messages. */
kvs_status kvs_model_from_json_text(const char *path, const char *data, size_t len,
				    kvs_model *out);
kvs_status kvs_gpu_preset(const char *name, kvs_gpu *out);
/* A preset name, or a path to a JSON file (a name with '/' or ending in
 * .json) holding one GPU object with the preset fields: memory,
 * hbm_gb_per_s, fp16_dense_tflops, pcie_gb_per_s, interconnect_gb_per_s,
 * and optionally fp8_dense_tflops, int8_dense_tops, memory_source, name.
 * Errors name the file and the field. */
kvs_status kvs_gpu_load(const char *name_or_path, kvs_gpu *out);
/* The compute rate a matmul runs at with weights of `weight_dtype`: the
 * FP8 rate for FP8 weights (W8A8), the INT8 rate for INT8 weights, the
 * FP16 rate otherwise or when the GPU has no such rate (W8A16 kernels). */
double kvs_gpu_matmul_rate(const kvs_gpu *g, kvs_dtype weight_dtype);
/* The device total as nvidia-smi (rocm-smi) shows it, what SGLang's
 * defaults read: smi_mem_bytes, or mem_bytes where that is unknown. */
uint64_t kvs_gpu_smi_bytes(const kvs_gpu *g);
/* NULL-terminated arrays of preset names. */
const char *const *kvs_model_preset_names(void);
const char *const *kvs_gpu_preset_names(void);

/* Parse a memory size with a mandatory unit: "80GB", "79.2GiB", "512MiB".
 * Decimal units (KB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB,
 * GiB, TiB) powers of 1024. */
kvs_status kvs_parse_bytes(const char *text, uint64_t *out);

/* Whose memory accounting the KV budget follows (see docs/SIZING.md). */
typedef enum kvs_engine {
	KVS_ENGINE_VLLM = 0,  /* V1 determine_available_memory: total x utilization
			       * - weights - profiled peak - non-torch growth */
	KVS_ENGINE_SGLANG,    /* total x mem_fraction_static - weights - context */
	KVS_ENGINE_TRTLLM,    /* free_gpu_memory_fraction x memory free after the
			       * weights and activation buffers */
	KVS_ENGINE_COUNT_
} kvs_engine;

const char *kvs_engine_name(kvs_engine e);       /* "vllm", "sglang", "trtllm" */
kvs_status kvs_engine_parse(const char *text, kvs_engine *out);

/* Sizing inputs: one deployment of a model on tp x pp GPUs. */
typedef struct kvs_deploy {
	kvs_model model;
	kvs_gpu gpu;
	uint32_t tp;                    /* tensor parallel size (>= 1) */
	uint32_t pp;                    /* pipeline parallel size (>= 1) */
	double gpu_memory_utilization;  /* share of device memory kvsim may use (0.9) */
	kvs_dtype weight_dtype;
	kvs_dtype kv_dtype;
	uint32_t kv_quant_group;        /* elements per scale for fp8/int8/int4 caches;
					 * 0 = per-tensor scale (vLLM's default, no
					 * per-token bytes).  With N > 0 each group of N
					 * elements of a head (of the MLA latent) carries
					 * an fp16 scale, plus an fp16 zero point for int4
					 * (asymmetric): 2 or 4 bytes per group. */
	uint32_t block_size;            /* tokens per KV block (16) */
	uint64_t context_tokens;        /* tokens per conversation */
	uint64_t max_model_len;         /* tokens; 0 = model's max_position_embeddings */
	int64_t reserve_bytes;          /* activation/working space per GPU; < 0 = estimate */
	double gpu_hour_price;          /* dollars per GPU-hour; 0 = not given */

	/* ---- appended: the engine whose memory accounting is followed ---- */
	kvs_engine engine;              /* KVS_ENGINE_VLLM by default */
	uint32_t max_num_seqs;          /* profile run's sequences; 0 = engine default */
	uint32_t max_num_batched_tokens;/* profile run's tokens; 0 = engine default */
	double mem_fraction_static;     /* sglang; 0 = SGLang's default for the
					 * GPU and tp (docs/SIZING.md) */
	double free_gpu_memory_fraction;/* trtllm; 0 = 0.9 */
	uint64_t num_gpu_blocks_override; /* vLLM's override; 0 = none */
	uint64_t kv_cache_memory_bytes; /* vLLM's kv_cache_memory_bytes; 0 = none */
	/* ---- appended: data and expert parallelism ---- */
	uint32_t dp;                    /* data-parallel ranks (0 or 1: one): each
					 * tp x pp GPUs with its own KV pool and
					 * its own requests (vLLM
					 * --data-parallel-size) */
	bool expert_parallel;           /* MoE: the routed experts spread over
					 * the dp x tp GPUs of a stage (vLLM
					 * --enable-expert-parallel), the rest
					 * tensor-sharded within each DP rank;
					 * without it every DP rank holds all
					 * experts */
	bool hybrid_kv_off;             /* vLLM --disable-hybrid-kv-cache-manager:
					 * windowed layers held in full, as
					 * full-attention ones, in one group */
	bool chunked_hybrid_on;         /* vLLM's
					 * VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1:
					 * chunked attention (Llama 4) kept in
					 * the hybrid manager, which vLLM
					 * otherwise turns off for it */
	/* ---- appended: pipeline micro-batches ---- */
	bool pp_balanced;               /* at pp > 1, the running sequences
					 * split evenly into min(pp, n) batches in
					 * flight (vLLM V0's virtual engines,
					 * SGLang's scheduler: the CLI's default
					 * with --engine sglang); off: one batch in
					 * flight, as vLLM V1's scheduler mostly
					 * runs (docs/COST-MODEL.md) */
	/* ---- appended: vLLM's multimodal profile run ---- */
	uint32_t mm_image_limit;        /* images one prompt may hold (vLLM
					 * --limit-mm-per-prompt image=N); 0:
					 * vLLM's default, 999;
					 * KVS_MM_LIMIT_ZERO: image=0 */
	uint32_t mm_video_limit;        /* videos, likewise (video=N) */
	bool skip_mm_profiling;         /* vLLM --skip-mm-profiling: no encoder
					 * run before it sizes the pool */
	uint64_t mm_max_pixels;         /* --mm-processor-kwargs max_pixels: a
					 * pixel-capped tower's largest image;
					 * 0: the processor's default */
} kvs_deploy;

/* vLLM's items per prompt of a modality --limit-mm-per-prompt leaves out
 * (MultiModalConfig.get_limit_per_prompt); a limit of 0 given, as
 * kvs_deploy stores it (0 there is the default) */
#define KVS_MM_LIMIT_DEFAULT 999u
#define KVS_MM_LIMIT_ZERO UINT32_MAX

/* Does vLLM run d's vision tower before it sizes the pool: a
 * vision_config, no --skip-mm-profiling, and a modality the tower takes
 * (images; videos too for the Qwen-VL towers) with a limit above 0. */
bool kvs_deploy_mm_profiled(const kvs_deploy *d);

/* Fill d with defaults (tp = pp = 1, utilization 0.9, fp16, block 16,
 * estimated reserve, ...) around the given model and GPU. */
void kvs_deploy_defaults(kvs_deploy *d, const kvs_model *m, const kvs_gpu *g);
/* Does the engine hold d's windowed layers in full, as full-attention
 * layers in one group?  For a model with both kinds of layer under
 * --engine vllm (both flags are vLLM's; other engines keep the windows):
 * under --disable-hybrid-kv-cache-manager (hybrid_kv_off), and for
 * chunked attention (Llama 4) unless chunked_hybrid_on (vLLM turns the
 * hybrid manager off for it by default).  A model whose every layer is
 * windowed has one kind of layer and keeps its window. */
bool kvs_deploy_windows_in_full(const kvs_deploy *d);
/* GPUs of one deployment: tp x pp x dp (0 in any counts as 1). */
uint64_t kvs_deploy_gpus(const kvs_deploy *d);
/* GPUs of one engine, one data-parallel rank: tp x pp (what a replay
 * simulates and a fleet's replica is). */
uint64_t kvs_deploy_rank_gpus(const kvs_deploy *d);
/* Expert parallelism in effect: an MoE model, --enable-expert-parallel
 * and more than one data-parallel rank (the experts then spread over the
 * dp x tp GPUs of a stage). */
bool kvs_deploy_expert_parallel(const kvs_deploy *d);

/* The engine's default scheduler limits on GPU g, as its server sets them
 * when --max-num-seqs / --max-num-batched-tokens are not given: vLLM's
 * depend on the GPU (256 and 2048, or 1024 and 8192 on GPUs of >= 70 GiB
 * that are not A100s; docs/SIZING.md).  The one source of these defaults:
 * size's profile run and the simulated scheduler both use it, so the pool
 * and the limits agree. */
void kvs_engine_batch_defaults(kvs_engine e, const kvs_gpu *g, uint32_t *max_num_seqs,
			       uint32_t *max_num_batched_tokens);

/* The non-KV memory of one rank as an engine accounts it.  Every term is
 * computed; `counted` says which ones the engine subtracts before sizing
 * its KV pool (the rest live in its headroom).  See docs/SIZING.md. */
enum {
	KVS_MEM_ACTIVATION = 1u << 0,
	KVS_MEM_SAMPLER = 1u << 1,
	KVS_MEM_CUDAGRAPH = 1u << 2,
	KVS_MEM_NON_TORCH = 1u << 3,
	KVS_MEM_CONTEXT = 1u << 4,
	KVS_MEM_ROPE = 1u << 5,
	KVS_MEM_ENCODER = 1u << 6,   /* vLLM, where a vision tower's run is modelled */
};

typedef struct kvs_mem_terms {
	kvs_engine engine;
	uint32_t profile_tokens;      /* max_num_batched_tokens as used */
	uint32_t profile_seqs;        /* max_num_seqs as used */
	uint32_t cudagraph_sizes;     /* piecewise capture sizes */
	uint32_t cudagraph_max_size;  /* largest capture size, tokens */
	uint64_t rope_cache_bytes;    /* the rotary cos/sin cache (vLLM's "model
				       * loading took" includes it) */
	uint64_t activation_bytes;    /* peak of a profile run at profile_tokens */
	uint64_t sampler_bytes;       /* logits and sampler for profile_seqs x vocab */
	uint64_t cudagraph_bytes;     /* CUDA graph pools (estimate) */
	uint64_t non_torch_bytes;     /* workspaces, runtime buffers, NCCL / custom
				       * all-reduce at tp x pp >= 2 */
	uint64_t comm_bytes;          /* of which communication buffers */
	uint64_t cuda_context_bytes;  /* CUDA context (before the engine measures) */
	unsigned counted;             /* KVS_MEM_* the engine subtracts */
	double fraction;              /* gpu_memory_utilization, mem_fraction_static
				       * or free_gpu_memory_fraction, as used */
	/* vLLM's profile run of a vision tower (0 without a modelled one) */
	uint32_t encoder_items;       /* items of the largest kind it feeds */
	uint64_t encoder_patches;     /* patches through the tower */
	uint64_t encoder_peak_bytes;  /* the tower's own peak, input included */
	uint64_t encoder_out_bytes;   /* its embeddings, kept through the text
				       * model's dummy step */
	uint64_t encoder_bytes;       /* what the run adds to the text model's
				       * peak (activations and sampler) */
	bool encoder_video;           /* images off, videos on: vLLM profiles a
				       * video, the largest image stands in */
	double vlm_factor;            /* SGLang: the factor its default
				       * fraction took for a vision tower (1:
				       * none, or a fraction given) */
} kvs_mem_terms;

/* Fill the terms for deployment d (reserve_bytes ignored).  O(1). */
void kvs_mem_terms_compute(const kvs_deploy *d, kvs_mem_terms *out);

/* Sizing results, per GPU (rank) unless the name says otherwise. */
typedef struct kvs_sizing {
	uint64_t kv_bytes_per_token;        /* per rank, incl. quantisation scales */
	uint64_t kv_bytes_per_token_total;  /* summed over all tp x pp ranks */
	uint32_t kv_heads_per_rank;
	uint32_t layers_per_rank;
	uint64_t bytes_per_block;           /* kv_bytes_per_token * block_size */
	uint64_t bytes_per_context;         /* one conversation at context_tokens, per rank */
	uint64_t weight_bytes;              /* per rank */
	uint64_t reserve_bytes;             /* activation / working space per rank */
	uint64_t usable_bytes;              /* mem_bytes * gpu_memory_utilization */
	uint64_t kv_budget_bytes;           /* usable - weights - reserve (0 if negative) */
	uint64_t num_gpu_blocks;
	uint64_t kv_capacity_tokens;        /* num_gpu_blocks * block_size */
	double max_concurrency;             /* conversations at context_tokens, as vLLM logs it */
	double cache_to_weights;            /* bytes_per_context / weight_bytes */
	double dollars_per_conv_hour;       /* 0 when no price */
	double dollars_per_mtok;            /* per million generated tokens at full occupancy */

	/* ---- appended: the factors and the whole-block view ---------------- */
	uint32_t kv_factor;                 /* 2 (K and V), 1 for an MLA latent */
	uint32_t kv_width;                  /* elements per layer per factor on one rank:
					     * kv_heads_per_rank x head_dim, or
					     * kv_lora_rank + qk_rope_head_dim (MLA) */
	uint32_t sliding_layers_per_rank;   /* of layers_per_rank, windowed */
	uint64_t kv_scale_bytes_per_token;  /* quantisation scales, included above */
	uint64_t max_model_len;             /* tokens, as used */
	uint64_t blocks_per_conversation;   /* whole blocks one conversation at
					     * context_tokens occupies (windows honoured) */
	uint64_t max_conversations;         /* whole conversations that fit at once */
	bool reserve_estimated;             /* reserve_bytes came from kvs_reserve_estimate */
	bool context_over_max_model_len;    /* context_tokens > max_model_len */
	double decode_step_s;               /* roofline decode step at full occupancy */
	double decode_tokens_per_s;         /* generated tokens/s of one tp x pp replica */

	/* ---- appended: the memory that is not KV, term by term, per rank ---- */
	kvs_mem_terms mem;
	uint64_t vllm_kv_tokens;            /* "GPU KV cache size: N tokens":
					     * vllm_num_blocks / groups x block_size */
	double vllm_max_concurrency;        /* "Maximum concurrency for max_model_len
					     * tokens per request": vllm_num_blocks /
					     * vllm_blocks_per_request */
	bool kv_from_override;              /* num_gpu_blocks_override or
					     * kv_cache_memory_bytes decided the pool */

	/* ---- appended: the whole replica ------------------------------------ */
	uint64_t bytes_per_context_replica; /* one conversation at context_tokens,
					     * summed over the tp x pp GPUs of a
					     * replica (kv heads replicated when tp
					     * exceeds them, as on the GPUs) */

	/* ---- appended: the data-parallel ranks ------------------------------ */
	uint32_t dp;                        /* ranks (1 without data parallelism) */
	uint64_t max_conversations_total;   /* max_conversations x dp: each rank
					     * holds its own requests' KV */
	double decode_tokens_per_s_total;   /* decode_tokens_per_s x dp */
	uint32_t experts_per_gpu;           /* with expert parallelism, the routed
					     * experts of a layer one GPU holds at
					     * most, ceil(experts / (tp x dp)); 0
					     * without */

	/* ---- appended: vLLM's KV cache groups and its start-up lines ------- */
	/* vLLM puts the layers of one attention kind in groups of
	 * vllm_group_layers (padding the last group of a kind); every group
	 * draws blocks of one layer's page from one pool, so a block is
	 * block_size tokens x vllm_group_layers layers.  A model of one kind
	 * has one group of every layer of the rank (num_gpu_blocks above). */
	uint32_t vllm_group_layers;
	uint32_t vllm_full_groups;          /* groups of full-attention layers */
	uint32_t vllm_window_groups;        /* groups of windowed layers */
	uint64_t vllm_num_blocks;           /* vLLM's blocks in the pool */
	uint64_t vllm_blocks_per_request;   /* blocks one max_model_len request
					     * may hold over the groups (windowed
					     * ones: window - 1 +
					     * max_num_batched_tokens, + 1 block) */
	uint64_t vllm_request_bytes;        /* KV memory vLLM's start-up check
					     * asks for one max_model_len request */
	uint64_t vllm_fit_max_model_len;    /* when that exceeds the pool: the
					     * longest max_model_len it estimates
					     * would fit (0 when none); else 0 */

	/* ---- appended: a multimodal checkpoint's encoders ------------------ */
	uint64_t vision_weight_bytes;       /* of weight_bytes, the vision tower's
					     * (first stage; 0 on the others) */

	/* ---- appended: vLLM's start-up check ------------------------------- */
	uint64_t vllm_check_bytes;          /* the KV memory vLLM logs as available
					     * and checks one request against: the
					     * profiled budget or
					     * --kv-cache-memory-bytes, before
					     * --num-gpu-blocks-override replaces
					     * the block count */
	bool vllm_starts;                   /* vllm_request_bytes fits in it */

	/* ---- appended: vLLM 0.14's check at pp > 1 ------------------------- */
	uint64_t vllm_request_bytes_all_stages; /* pp > 1: the same request
					     * over every stage's layers, which
					     * vLLM 0.14.0 checked against one
					     * GPU's memory until PR #33698
					     * (issue #32105); 0 at pp 1 */
	double decode_tokens_per_s_other;   /* pp > 1: decode_tokens_per_s under
					     * the other pipeline bound (balanced
					     * micro-batches without pp_balanced,
					     * one batch in flight with it); 0 at
					     * pp 1 */
} kvs_sizing;

/* KV bytes one token occupies on one rank, given the model, the cache dtype
 * and tp (kv heads split across ranks, replicated when tp > kv_heads) and pp
 * (layers split across stages). */
kvs_status kvs_kv_bytes_per_token(const kvs_model *m, kvs_dtype kv_dtype,
				  uint32_t kv_quant_group, uint32_t tp,
				  uint32_t pp, uint64_t *out);

/* Bytes per token of the simulator's pool unit on one rank: with both
 * full-attention and windowed layers (vLLM's hybrid groups, vllm_*), the
 * full-attention groups' (padding layers included), the windowed groups
 * riding beside each sequence; otherwise kv_bytes_per_token.  0 when s
 * has no layers. */
uint64_t kvs_sizing_pool_bytes_per_token(const kvs_sizing *s);

/* KV bytes of one sequence of n tokens on one rank, honouring sliding
 * windows (window layers hold at most `sliding_window` tokens). */
kvs_status kvs_kv_bytes_for_tokens(const kvs_model *m, kvs_dtype kv_dtype,
				   uint32_t kv_quant_group, uint32_t tp,
				   uint32_t pp, uint64_t n_tokens,
				   uint64_t *out);

/* Parameter count from the architecture fields (embeddings, attention,
 * MLP or experts, norms, LM head unless tied), plus vision_params;
 * UINT64_MAX if it overflows.  Exact for the Llama, Mistral, Mixtral,
 * Qwen2, Gemma-2, Gemma-3 and OPT families. */
uint64_t kvs_model_estimate_params(const kvs_model *m);
/* Parameters touched per token: shared parts plus num_experts_per_tok
 * routed experts (the language model's total for dense models; never the
 * vision tower). */
uint64_t kvs_model_estimate_active_params(const kvs_model *m);
/* One layer's parameters in the parts a quantised checkpoint may keep at
 * 16 bits (kvs_model.wide_*_layers): the attention projections with their
 * biases and q/k norms, an MoE layer's router, its shared experts (0 for
 * a dense model). */
typedef struct kvs_param_parts {
	uint64_t attn;
	uint64_t router;
	uint64_t shared;
	uint64_t experts;   /* every routed expert of every MoE layer (not per layer) */
	uint64_t total;     /* the whole estimate (kvs_model_estimate_params) */
} kvs_param_parts;
void kvs_model_param_parts(const kvs_model *m, kvs_param_parts *out);
/* An MoE model's MoE layers: every moe_layer_step-th, else all but the
 * first_dense_layers; 0 for a dense model. */
uint32_t kvs_model_moe_layers(const kvs_model *m);
/* The layers that attend through a window (sliding window or chunked
 * attention; every layer for an all-windowed model); 0 without one. */
uint32_t kvs_model_window_layers(const kvs_model *m);
/* The layers whose attention, router and shared experts a quantised
 * checkpoint keeps at 16 bits, bounded by the model: attention by its
 * layers, routers and shared experts by its MoE layers (0 for a model
 * without them). */
void kvs_model_wide_layers(const kvs_model *m, uint32_t *attn, uint32_t *router,
			   uint32_t *shared);
/* Of the language model's parameters (num_params less vision_params),
 * how many a quantised checkpoint keeps at 16 bits:
 * the embeddings, the LM head unless quant_lm_head, and the wide parts
 * (kvs_model.wide_*; routers and shared experts in the MoE layers only,
 * the projections of kvs_model_wide_projs);
 * 0 when that is not below num_params (a config's own count too small
 * to hold them). */
uint64_t kvs_model_wide_params(const kvs_model *m);
/* The layers in which each projection is kept at 16 bits apart from
 * whole attention (kvs_model.wide_proj_layers), bounded by the model:
 * q, k, v, o by the layers whose attention is not kept whole, gate, up,
 * down by the dense layers. */
void kvs_model_wide_projs(const kvs_model *m, uint32_t out[KVS_PROJ_COUNT_]);
/* One layer's parameters in projection p, with its bias: q heads x
 * head_dim x hidden, k and v kv_heads x head_dim x hidden, o as q, gate
 * and up hidden x a dense layer's intermediate size, down the same; 0
 * for a projection the model lacks (MLA's q, k, v, o; a plain MLP's
 * gate). */
uint64_t kvs_model_proj_params(const kvs_model *m, kvs_proj p);
/* The layers without experts: num_layers - kvs_model_moe_layers. */
uint32_t kvs_model_dense_layers(const kvs_model *m);

/* Everything `kvsim size` prints, per rank: validates the deployment
 * (tp must divide the kv heads or be a multiple of them, pp <= layers,
 * 0 < utilization <= 1, ...) and returns KVS_ERR_INVALID or
 * KVS_ERR_OVERFLOW with a message otherwise.  A KV budget too small for one
 * conversation is a normal result (max_conversations == 0).  O(1). */
kvs_status kvs_size_compute(const kvs_deploy *d, kvs_sizing *out);

/* Non-KV memory per rank that the engine subtracts before sizing its KV
 * pool: the sum of the kvs_mem_terms it counts (activations of the profile
 * run, logits and sampler, non-torch growth; the CUDA context for SGLang and
 * TensorRT-LLM).  Constants, cited in docs/SIZING.md: */
#define KVS_SAMPLER_BYTES_PER_LOGIT 8.0       /* fp32 logits + fp32 probabilities */
#define KVS_CUDAGRAPH_BYTES_FACTOR 8.0        /* x capture size x hidden x dtype bytes */
#define KVS_MEM_RUNTIME_BYTES (384ull << 20)  /* non-torch growth and runtime buffers */
#define KVS_MEM_COMM_BYTES (512ull << 20)     /* NCCL + custom all-reduce, tp x pp > 1 */
#define KVS_MEM_CONTEXT_BYTES (512ull << 20)  /* CUDA context and library handles */
uint64_t kvs_reserve_estimate(const kvs_deploy *d);

/* Weight bytes on one rank: num_params x bytes per weight / (tp x pp),
 * rounded up, plus group scales for INT4 (fp16 scale and zero per 128
 * weights); a vision tower (vision_params) on the first stage only,
 * split over tp.  KVS_ERR_OVERFLOW when it does not fit 64 bits. */
kvs_status kvs_weight_bytes(const kvs_model *m, kvs_dtype weight_dtype,
			    uint32_t tp, uint32_t pp, uint64_t *out);

/* ---- "what shrinks it" ---------------------------------------------------
 * The same deployment (GPU, weights and reserve held fixed) with one change
 * to the cache at a time.  Rows that do not apply (the model already has
 * the feature) keep applicable = false and say why in `label`. */
typedef enum kvs_shrink_kind {
	KVS_SHRINK_BASELINE = 0,  /* as configured */
	KVS_SHRINK_GQA8,          /* grouped-query attention with 8 kv heads */
	KVS_SHRINK_MQA,           /* multi-query attention: 1 kv head */
	KVS_SHRINK_FP8,           /* FP8 cache */
	KVS_SHRINK_INT4,          /* INT4 cache (scales per kv_quant_group) */
	KVS_SHRINK_SLIDING,       /* 4096-token sliding window on every layer */
	KVS_SHRINK_MLA,           /* DeepSeek-style latent: 512 + 64 per layer */
	KVS_SHRINK_RESERVE_FULL,  /* contiguous: reserve max_model_len per conversation */
	KVS_SHRINK_COUNT_
} kvs_shrink_kind;

typedef struct kvs_shrink_row {
	const char *key;                /* stable id: "baseline", "gqa8", "mqa", "fp8",
					 * "int4", "sliding_window", "mla", "reserve_full" */
	char label[112];                /* what the row changes, in words */
	bool applicable;
	uint64_t kv_bytes_per_token;    /* per rank */
	uint64_t bytes_per_context;     /* one conversation at context_tokens, per rank */
	uint64_t max_conversations;     /* whole conversations per replica */
	double max_concurrency;         /* vLLM's figure */
	double vs_baseline;             /* max_concurrency / baseline's (0 if baseline is 0) */
} kvs_shrink_row;

kvs_status kvs_size_shrinks(const kvs_deploy *d,
			    kvs_shrink_row rows[KVS_SHRINK_COUNT_]);

/* ---- long-context advice --------------------------------------------------
 * When one conversation does not fit, or fewer than
 * KVS_ADVICE_FEW_CONVERSATIONS do, or its cache outgrows the weights, or the
 * context passes max_model_len: the ways out, with numbers. */
typedef struct kvs_parallel_option {
	uint32_t tp, pp;
	uint64_t kv_budget_bytes;       /* per rank */
	uint64_t max_conversations;     /* per replica of tp x pp GPUs */
	double max_concurrency;
} kvs_parallel_option;

/* every tp x pp layout advise tries (tp 1-16 x pp 1-8) */
#define KVS_ADVICE_PARALLEL_MAX 20
#define KVS_ADVICE_CONTEXTS 3
/* fewer whole conversations than this per replica: the ways out are shown */
#define KVS_ADVICE_FEW_CONVERSATIONS 8

typedef struct kvs_size_advice {
	bool needed;                    /* any of the conditions below */
	bool weights_fit;               /* weights + reserve fit in usable memory */
	bool context_fits;              /* at least one conversation fits */
	bool cache_exceeds_weights;     /* one conversation's cache > weights */
	bool over_max_model_len;
	/* every tp x pp layout with more GPUs than now that holds at least one
	 * conversation, fewest GPUs first */
	size_t n_parallel;
	kvs_parallel_option parallel[KVS_ADVICE_PARALLEL_MAX];
	uint64_t fp8_conversations;     /* with an FP8 cache */
	uint64_t int4_conversations;    /* with an INT4 cache */
	/* offloading to host memory over PCIe */
	uint64_t offload_bytes;         /* bytes of one conversation beyond the KV budget */
	double offload_s_per_step;      /* PCIe time per decode step to stream them */
	double offload_full_s_per_step; /* ... to stream one whole conversation */
	double pcie_bytes_per_s;
	/* shorter contexts: longest context (tokens, at most max_model_len) at
	 * which n conversations fit */
	uint32_t context_for_n[KVS_ADVICE_CONTEXTS];   /* n = 1, 8, 32 */
	uint64_t context_tokens_for_n[KVS_ADVICE_CONTEXTS];
	/* prefix sharing: conversations when half of each context is one shared,
	 * cached prefix (stored once) */
	uint64_t prefix_half_conversations;
	/* ---- appended ---- */
	bool few_conversations;         /* weights and one conversation fit, but
					 * fewer than KVS_ADVICE_FEW_CONVERSATIONS */
	/* quantised weights (--dtype fp8, --dtype int4): the layout with the
	 * fewest GPUs, at least as many as now, that holds a conversation
	 * with them (tp = 0: none up to 64 GPUs, or the weights are already
	 * that narrow); filled when the weights do not fit */
	kvs_parallel_option fp8_weights;
	kvs_parallel_option int4_weights;
	/* ---- appended ---- */
	/* an MoE model on tp > 1 GPUs without data parallelism: the same GPUs
	 * as tp 1 x dp (tp) ranks with the experts spread over them (vLLM
	 * --data-parallel-size --enable-expert-parallel), where each rank
	 * holds its own conversations (an MLA latent, which tp keeps whole on
	 * every GPU, is then held once); data_parallel.max_conversations per
	 * rank, data_parallel_total on all of them (0: not applicable, or no
	 * conversation fits) */
	kvs_parallel_option data_parallel;
	uint32_t data_parallel_ranks;
	uint64_t data_parallel_total;
} kvs_size_advice;

kvs_status kvs_size_advise(const kvs_deploy *d, const kvs_sizing *s,
			   kvs_size_advice *out);

/* The questions to ask before sizing a long-context deployment
 * (NULL-terminated, static). */
const char *const *kvs_size_questions(void);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_MODEL_H */
