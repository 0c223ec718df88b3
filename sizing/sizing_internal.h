/*
 * sizing_internal.h - helpers shared by the files of sizing/ (not public).
 */
#ifndef KVSIM_SIZING_INTERNAL_H
#define KVSIM_SIZING_INTERNAL_H

#include "kvsim/model.h"

/* Find `rel` ("models/llama-2-7b.json", "gpus.json") in the preset data
 * directories, in order: $KVSIM_DATADIR, the installed KVS_DATADIR, the
 * source tree's sizing/presets.  Writes the first readable path to buf and
 * returns true; false when none is readable. */
bool kvs_sizing_find_data(const char *rel, char *buf, size_t cap);

/* Where a KV layout puts one token on one rank.  Filled by
 * kvs_sizing_layout, used by sizing.c and advice.c. */
typedef struct kvs_kv_layout {
	uint32_t factor;          /* 2 (K, V) or 1 (MLA latent) */
	uint32_t width;           /* elements per factor per layer on one rank */
	uint32_t kv_heads_rank;   /* 0 for MLA */
	uint32_t layers_rank;     /* ceil(layers / pp): the largest stage */
	uint32_t full_rank;       /* full-attention layers on that stage */
	uint32_t sliding_rank;    /* sliding-window layers on that stage */
	uint32_t window;          /* tokens; 0 = none */
	uint64_t layer_bytes;     /* bytes per token per layer, incl. scales */
	uint64_t scale_bytes;     /* of which quantisation scales */
} kvs_kv_layout;

kvs_status kvs_sizing_layout(const kvs_model *m, kvs_dtype kv_dtype,
			     uint32_t kv_quant_group, uint32_t tp, uint32_t pp,
			     kvs_kv_layout *out);

/* d's model as the engine holds its KV: without windows when
 * kvs_deploy_windows_in_full(d) (the memory figures read this one; the
 * attention still reads over the windows). */
kvs_model kvs_deploy_held_model(const kvs_deploy *d);

/* Layer-blocks (one layer x block_size tokens) one sequence of n tokens
 * holds on one rank: full layers ceil(n / bs) each, windowed layers at most
 * the blocks a window can straddle. */
uint64_t kvs_sizing_layer_blocks(const kvs_kv_layout *l, uint32_t block_size,
				 uint64_t n_tokens);

/* The max_model_len d runs at: as given, else the model's
 * max_position_embeddings, else the conversation's context. */
static inline uint64_t kvs_deploy_max_model_len(const kvs_deploy *d)
{
	return d->max_model_len ? d->max_model_len
	     : d->model.max_position_embeddings ? d->model.max_position_embeddings
	     : d->context_tokens;
}

/* A pixel-capped image's item (the Qwen-VL towers): max_pixels in patches
 * of patch^2 pixels, merge^2 patches a token, rounded down, at least one
 * token; patches = tokens x merge^2. */
void kvs_vision_item_from_pixels(uint64_t max_pixels, uint32_t patch, uint32_t merge,
				 uint64_t *patches, uint32_t *tokens);

#endif
