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

typedef enum kvs_dtype {
	KVS_DTYPE_FP32 = 0,
	KVS_DTYPE_FP16,
	KVS_DTYPE_BF16,
	KVS_DTYPE_FP8,
	KVS_DTYPE_INT8,
	KVS_DTYPE_INT4,
	KVS_DTYPE_COUNT_
} kvs_dtype;

/* "fp16", "bf16", ...; parse accepts the vLLM/HF spellings too
 * ("float16", "half", "bfloat16", "float32", "fp8_e4m3", "auto" -> fp16). */
const char *kvs_dtype_name(kvs_dtype dt);
kvs_status kvs_dtype_parse(const char *text, kvs_dtype *out);
/* Bits per element (32, 16, 16, 8, 8, 4). */
unsigned kvs_dtype_bits(kvs_dtype dt);

#define KVS_NAME_MAX 64

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
	uint64_t num_active_params;      /* per token (MoE); == num_params if dense */
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
} kvs_model;

typedef struct kvs_gpu {
	char name[KVS_NAME_MAX];
	uint64_t mem_bytes;         /* device memory as the preset states it */
	double hbm_bytes_per_s;     /* peak memory bandwidth */
	double fp16_flops;          /* dense FP16/BF16 FLOP/s */
	double pcie_bytes_per_s;    /* host link, for swap/offload costs */
	double interconnect_bytes_per_s; /* GPU-GPU (NVLink/IF), for all-reduce */
} kvs_gpu;

/* Built-in presets (lowercase, dashes: "llama-2-7b", "h100-80gb").
 * Unknown names return KVS_ERR_NOT_FOUND with a message listing the known
 * ones.  kvs_model_load also accepts a path to a Hugging Face config.json. */
kvs_status kvs_model_load(const char *name_or_path, kvs_model *out);
kvs_status kvs_model_from_json_file(const char *path, kvs_model *out);
kvs_status kvs_gpu_preset(const char *name, kvs_gpu *out);
/* NULL-terminated arrays of preset names. */
const char *const *kvs_model_preset_names(void);
const char *const *kvs_gpu_preset_names(void);

/* Parse a memory size with a mandatory unit: "80GB", "79.2GiB", "512MiB".
 * Decimal units (KB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB,
 * GiB, TiB) powers of 1024. */
kvs_status kvs_parse_bytes(const char *text, uint64_t *out);

/* Sizing inputs: one deployment of a model on tp x pp GPUs. */
typedef struct kvs_deploy {
	kvs_model model;
	kvs_gpu gpu;
	uint32_t tp;                    /* tensor parallel size (>= 1) */
	uint32_t pp;                    /* pipeline parallel size (>= 1) */
	double gpu_memory_utilization;  /* share of device memory kvsim may use (0.9) */
	kvs_dtype weight_dtype;
	kvs_dtype kv_dtype;
	uint32_t kv_quant_group;        /* elements per scale for int8/int4/fp8 (0 = per-tensor) */
	uint32_t block_size;            /* tokens per KV block (16) */
	uint64_t context_tokens;        /* tokens per conversation */
	uint64_t max_model_len;         /* tokens; 0 = model's max_position_embeddings */
	int64_t reserve_bytes;          /* activation/working space per GPU; < 0 = estimate */
	double gpu_hour_price;          /* dollars per GPU-hour; 0 = not given */
} kvs_deploy;

/* Fill d with defaults (tp = pp = 1, utilization 0.9, fp16, block 16,
 * estimated reserve, ...) around the given model and GPU. */
void kvs_deploy_defaults(kvs_deploy *d, const kvs_model *m, const kvs_gpu *g);

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
} kvs_sizing;

/* KV bytes one token occupies on one rank, given the model, the cache dtype
 * and tp (kv heads split across ranks, replicated when tp > kv_heads) and pp
 * (layers split across stages). */
kvs_status kvs_kv_bytes_per_token(const kvs_model *m, kvs_dtype kv_dtype,
				  uint32_t kv_quant_group, uint32_t tp,
				  uint32_t pp, uint64_t *out);

/* KV bytes of one sequence of n tokens on one rank, honouring sliding
 * windows (window layers hold at most `sliding_window` tokens). */
kvs_status kvs_kv_bytes_for_tokens(const kvs_model *m, kvs_dtype kv_dtype,
				   uint32_t kv_quant_group, uint32_t tp,
				   uint32_t pp, uint64_t n_tokens,
				   uint64_t *out);

/* Parameter count from the architecture fields (embeddings, attention,
 * MLP or experts, norms, LM head unless tied). */
uint64_t kvs_model_estimate_params(const kvs_model *m);

kvs_status kvs_size_compute(const kvs_deploy *d, kvs_sizing *out);

#ifdef __cplusplus
}
#endif
#endif /* KVSIM_MODEL_H */
