/*
 * test_sizing.c - the KV cache arithmetic against hand-derived figures and
 * the published ones in ../shared/REFERENCE.md; presets; config.json
 * parsing and its error messages; the shrink table and the advice.
 */
#include "test_util.h"
#include "kvs_config.h"

#include "kvsim/model.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static kvs_model load(const char *name)
{
	kvs_model m;
	kvs_status st = kvs_model_load(name, &m);
	if (st != KVS_OK)
		fail_msg("%s: %s", name, kvs_last_error());
	return m;
}

static kvs_gpu gpu(const char *name)
{
	kvs_gpu g;
	kvs_status st = kvs_gpu_preset(name, &g);
	if (st != KVS_OK)
		fail_msg("%s: %s", name, kvs_last_error());
	return g;
}

static uint64_t bpt(const kvs_model *m, kvs_dtype dt, uint32_t group, uint32_t tp, uint32_t pp)
{
	uint64_t v = 0;
	kvs_status st = kvs_kv_bytes_per_token(m, dt, group, tp, pp, &v);
	if (st != KVS_OK)
		fail_msg("%s: %s", m->name, kvs_last_error());
	return v;
}

static uint64_t for_tokens(const kvs_model *m, kvs_dtype dt, uint64_t n)
{
	uint64_t v = 0;
	kvs_status st = kvs_kv_bytes_for_tokens(m, dt, 0, 1, 1, n, &v);
	if (st != KVS_OK)
		fail_msg("%s: %s", m->name, kvs_last_error());
	return v;
}

/* The seed example.  80 GB is decimal (80e9 bytes, the datasheet unit) and
 * "14 GB of weights" is 7e9 parameters at 2 bytes; utilization 1.0 and no
 * working-space reserve make the KV budget exactly 80e9 - 14e9 = 66e9. */
static void test_seed_example(void **state)
{
	(void)state;
	kvs_model m;
	memset(&m, 0, sizeof m);
	snprintf(m.name, sizeof m.name, "seed");
	m.num_layers = 32;
	m.num_heads = 32;
	m.num_kv_heads = 32;
	m.head_dim = 128;
	m.num_params = m.num_active_params = 7000000000ull;
	m.dtype = KVS_DTYPE_FP16;
	assert_int_equal(bpt(&m, KVS_DTYPE_FP16, 0, 1, 1), 524288);
	assert_int_equal(for_tokens(&m, KVS_DTYPE_FP16, 4000), 2097152000ull);

	kvs_gpu g;
	memset(&g, 0, sizeof g);
	snprintf(g.name, sizeof g.name, "80gb");
	assert_int_equal(kvs_parse_bytes("80GB", &g.mem_bytes), KVS_OK);
	g.hbm_bytes_per_s = 2e12;
	g.fp16_flops = 3e14;
	kvs_deploy d;
	kvs_deploy_defaults(&d, &m, &g);
	d.gpu_memory_utilization = 1.0;
	d.reserve_bytes = 0;
	d.context_tokens = 4000;
	d.max_model_len = 4096;
	kvs_sizing s;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.weight_bytes, 14000000000ull);
	assert_int_equal(s.kv_budget_bytes, 66000000000ull);
	assert_int_equal(s.bytes_per_block, 16ull * 524288);
	assert_int_equal(s.num_gpu_blocks, 66000000000ull / (16ull * 524288)); /* 7867 */
	assert_int_equal(s.num_gpu_blocks, 7867);
	assert_int_equal(s.kv_capacity_tokens, 7867 * 16);
	assert_int_equal(s.blocks_per_conversation, 250);
	assert_int_equal(s.max_conversations, 31);
	assert_true(s.max_concurrency > 31.46 && s.max_concurrency < 31.47); /* 7867*16/4000 */
	assert_int_equal(s.kv_bytes_per_token_total, 524288);
	assert_false(s.context_over_max_model_len);
}

struct ref {
	const char *name;
	uint32_t layers, heads, kv_heads, head_dim, hidden, max_pos;
	uint64_t params;        /* 0: checked separately */
	uint64_t bytes_per_token;
};

/* ../shared/REFERENCE.md, table "Models" */
static const struct ref refs[] = {
	{ "llama-2-7b", 32, 32, 32, 128, 4096, 4096, 6738415616ull, 524288 },
	{ "llama-2-13b", 40, 40, 40, 128, 5120, 4096, 13015864320ull, 819200 },
	{ "llama-2-70b", 80, 64, 8, 128, 8192, 4096, 68976648192ull, 327680 },
	{ "llama-3-8b", 32, 32, 8, 128, 4096, 8192, 8030261248ull, 131072 },
	{ "llama-3.1-8b", 32, 32, 8, 128, 4096, 131072, 8030261248ull, 131072 },
	{ "llama-3-70b", 80, 64, 8, 128, 8192, 8192, 70553706496ull, 327680 },
	/* not in the reference table: Llama-3-70B's shapes with Llama-3.1's
	 * 131,072 positions (llama3 RoPE scaling), meta-llama/Llama-3.1-70B */
	{ "llama-3.1-70b", 80, 64, 8, 128, 8192, 131072, 70553706496ull, 327680 },
	{ "llama-3.1-405b", 126, 128, 8, 128, 16384, 131072, 405853388800ull, 516096 },
	{ "mistral-7b", 32, 32, 8, 128, 4096, 32768, 7241732096ull, 131072 },
	{ "mixtral-8x7b", 32, 32, 8, 128, 4096, 32768, 46702792704ull, 131072 },
	{ "qwen2.5-7b", 28, 28, 4, 128, 3584, 131072, 7615616512ull, 57344 },
	{ "qwen2.5-72b", 80, 64, 8, 128, 8192, 131072, 72706203648ull, 327680 },
	/* not in the reference table: Qwen2-VL-7B-Instruct (Hugging Face
	 * lists 8.29B parameters), by hand: Qwen2-7B's text model, the
	 * qwen2.5-7b preset's shapes (7,615,616,512), and its vision tower
	 * (embed_dim 1280, MLP 4 x 1280, 32 blocks): patches 3 x 2 x 14^2 x
	 * 1280 = 1,505,280; a block's LayerNorms 5,120, packed q/k/v 3 x
	 * 1280^2 + 3,840 = 4,919,040, output 1,639,680, fc1 1280 x 5120 +
	 * 5120 = 6,558,720, fc2 6,554,880: 19,677,440, x 32 = 629,678,080;
	 * the merger's LayerNorm 2,560, 5120^2 + 5120 = 26,219,520 and 5120
	 * x 3584 + 3584 = 18,353,664: 44,575,744.  In all 8,291,375,616. */
	{ "qwen2-vl-7b", 28, 28, 4, 128, 3584, 32768, 8291375616ull, 57344 },
	/* Qwen2.5-VL-7B-Instruct: the same text model and a tower of 32
	 * blocks of 1280 with gated MLPs of 3420 and RMSNorms: a block's
	 * norms 2,560, q/k/v and output 6,558,720, gate and up 2 x (1280 x
	 * 3420 + 3420) = 8,762,040, down 3420 x 1280 + 1280 = 4,378,880:
	 * 19,702,200, x 32 = 630,470,400; patches 1,505,280; the merger's
	 * RMSNorm 1,280 and its MLP 44,573,184.  In all 8,292,166,656. */
	{ "qwen2.5-vl-7b", 28, 28, 4, 128, 3584, 128000, 8292166656ull, 57344 },
	/* Qwen3-VL-8B-Instruct (its safetensors hold 8,767,123,696
	 * parameters, 17,534,247,392 bytes in bf16), by hand: the text
	 * model, untied: embeddings and head 2 x 151936 x 4096 =
	 * 1,244,659,712; 36 layers of q and o 2 x 4096^2, k and v 2 x 4096 x
	 * 1024, q/k norms 256, MLP 3 x 4096 x 12288, norms 8,192
	 * (192,946,432), the final norm 4,096: 8,190,735,360; the tower
	 * (hidden 1152, MLP 4304, 27 blocks): patches 3 x 2 x 16^2 x 1152 +
	 * 1152 = 1,770,624, positions 2304 x 1152 = 2,654,208, a block 4 x
	 * (1152^2 + 1152) + 2 x 1152 x 4304 + 4304 + 1152 + 4 x 1152 =
	 * 15,239,504 (411,466,608); the merger's LayerNorm 2,304, 4608 x
	 * 4608 + 4608 = 21,238,272 and 4608 x 4096 + 4096 = 18,878,464
	 * (40,119,040); three deepstack mergers, their LayerNorms over 4608
	 * (9,216): 3 x 40,125,952.  In all 8,767,123,696. */
	{ "qwen3-vl-8b", 36, 32, 8, 128, 4096, 262144, 8767123696ull, 147456 },
	/* Qwen3-VL-30B-A3B-Instruct (31,070,754,032 parameters in its bf16
	 * safetensors), by hand: untied embeddings and head 2 x 151936 x
	 * 2048 = 622,329,856; 48 layers of q and o 2 x 2048 x 4096, k and v
	 * 2 x 2048 x 512, q/k norms 256, norms 4,096 (18,878,720), 128
	 * experts of 3 x 2048 x 768 and the router 128 x 2048 (604,241,920),
	 * the final norm 2,048: 30,532,122,624; the tower as Qwen3-VL-8B's
	 * into 2048: 1,770,624 + 2,654,208 + 411,466,608, the merger 2,304 +
	 * 21,238,272 + 4608 x 2048 + 2048 = 30,679,808, three deepstack
	 * mergers of 30,686,720: 538,631,408.  In all 31,070,754,032. */
	{ "qwen3-vl-30b-a3b", 48, 32, 4, 128, 2048, 262144, 31070754032ull, 98304 },
	/* LLaVA-1.5-7B (llava-hf/llava-1.5-7b-hf; Hugging Face counts its
	 * checkpoints at 7.06B), by hand: Vicuna-7B's text model, Llama-2-7B's
	 * shapes with 32,064 tokens (6,738,415,616 + 2 x 64 x 4096 =
	 * 6,738,939,904); CLIP ViT-L/14 at 336 pixels (576 patches): patches
	 * 3 x 14^2 x 1024 = 602,112, class 1,024, positions 577 x 1024 =
	 * 590,848, LayerNorms 4,096, 24 layers of 4 x (1024^2 + 1024) + 2 x
	 * 1024 x 4096 + 4096 + 1024 + 4096 = 12,596,224: 303,507,456; the
	 * projector 1024 x 4096 + 4096 + 4096^2 + 4096 = 20,979,712.  In all
	 * 7,063,427,072. */
	{ "llava-1.5-7b", 32, 32, 32, 128, 4096, 4096, 7063427072ull, 524288 },
	/* Pixtral-12B (mistral-community/pixtral-12b, its six bf16 shards
	 * 25.37 GB), by hand: Mistral-NeMo's text model, 2 x 131,072 x 5120
	 * embeddings and head 1,342,177,280, 40 layers of q 5120 x 4096, k
	 * and v 2 x 5120 x 1024, o 4096 x 5120, MLP 3 x 5120 x 14336, norms
	 * 10,240 = 272,640,000, the final norm 5,120: 12,247,782,400; the
	 * tower 403,489,792 (test_vision_tower); the projector 1024 x 5120 +
	 * 5120 + 5120^2 + 5120 = 31,467,520.  In all 12,682,739,712. */
	{ "pixtral-12b", 40, 32, 8, 128, 5120, 1024000, 12682739712ull, 163840 },
	/* InternVL2.5-8B (Hugging Face's safetensors count 8,075,365,376),
	 * by hand: InternViT-300M 304,012,288 and mlp1 33,570,816
	 * (test_vision_tower's InternVL block); InternLM2.5-7B over 92,553
	 * tokens, untied, no biases: 2 x 92,553 x 4096 = 758,194,176, 32
	 * layers of q and o 2 x 4096^2, k and v 2 x 4096 x 1024, MLP 3 x
	 * 4096 x 14336, norms 8,192 (218,112,000), the final norm 4,096:
	 * 7,737,782,272.  In all 8,075,365,376. */
	{ "internvl2.5-8b", 32, 32, 8, 128, 4096, 32768, 8075365376ull, 131072 },
	{ "opt-13b", 40, 40, 40, 128, 5120, 2048, 12853473280ull, 819200 },
	{ "opt-66b", 64, 72, 72, 128, 9216, 2048, 65719701504ull, 2359296 },
	{ "gemma-2-9b", 42, 16, 8, 256, 3584, 8192, 9241705984ull, 344064 },
	{ "gemma-2-27b", 46, 32, 16, 128, 4608, 8192, 27227128320ull, 376832 },
	/* not in the reference table: the -it checkpoints' config.json with
	 * Gemma3TextConfig's defaults written out; the totals are the
	 * checkpoints' (Hugging Face's safetensors count: 4,300,079,472,
	 * 12,187,325,040, 27,432,406,640), the language model's and the
	 * SigLIP tower's.  By hand for gemma-3-27b: embeddings (tied) 262208
	 * x 5376 = 1,409,630,208; a layer's attention 2 x 5376 x 4096 + 2 x
	 * 5376 x 2048 = 66,060,288, q/k norms 256, four norms 21,504, MLP 3 x
	 * 5376 x 21504 = 346,816,512: 62 x 412,898,560 + 1,409,630,208 +
	 * 5,376 = 27,009,346,304; the tower (hidden 1152, MLP 4304, 27
	 * layers, 64 x 64 patches of 14): patch convolution 3 x 14 x 14 x
	 * 1152 + 1152 = 678,528, positions 4096 x 1152 = 4,718,592, a layer
	 * 4 x (1152^2 + 1152) + 2 x 1152 x 4304 + 4304 + 1152 + 4 x 1152 =
	 * 15,239,504, the final LayerNorm 2,304: 416,866,032; the projector
	 * 1152 x 5376 + 1152 = 6,194,304.  Total 27,432,406,640. */
	{ "gemma-3-4b", 34, 8, 4, 256, 2560, 131072, 4300079472ull, 139264 },
	{ "gemma-3-12b", 48, 16, 8, 256, 3840, 131072, 12187325040ull, 393216 },
	{ "gemma-3-27b", 62, 32, 16, 128, 5376, 131072, 27432406640ull, 507904 },
	{ "deepseek-v3", 61, 128, 128, 192, 7168, 163840, 0, 70272 },
	/* not in the reference table: the shape fields of OpenAI's configs
	 * (NVIDIA Megatron-Bridge's model page gives the same).  Parameters
	 * by hand, 120b: embeddings and head 2 x 201088 x 2880 =
	 * 1,158,266,880, final norm 2,880, a layer's attention 2 x 2880 x
	 * 4096 + 2 x 2880 x 512 = 26,542,080, its norms 5,760, router 2880 x
	 * 128 = 368,640, experts 128 x 3 x 2880 x 2880 = 3,185,049,600: 36
	 * layers of 3,211,966,080 and the rest, 116,789,048,640 (the model
	 * card's 116.8B); 20b: 24 layers with 32 experts, 20,907,927,360
	 * (20.9B). */
	{ "gpt-oss-20b", 24, 64, 8, 64, 2880, 131072, 20907927360ull, 49152 },
	{ "gpt-oss-120b", 36, 64, 8, 64, 2880, 131072, 116789048640ull, 73728 },
	/* not in the reference table: the fields of Qwen's configs.  Their
	 * counts match the model cards' total (8.2B, 32.8B, 30.5B, 235B) and
	 * non-embedding (6.95B, 31.2B, 29.9B, 234B) parameters; by hand for
	 * qwen3-8b: embeddings and head 2 x 151936 x 4096 = 1,244,659,712,
	 * a layer's attention 2 x 4096 x 4096 + 2 x 4096 x 1024 =
	 * 41,943,040, q/k norms 256, norms 8,192, MLP 3 x 4096 x 12288 =
	 * 150,994,944: 36 x 192,946,432 + 1,244,659,712 + 4,096 =
	 * 8,190,735,360. */
	{ "qwen3-8b", 36, 32, 8, 128, 4096, 40960, 8190735360ull, 147456 },
	{ "qwen3-32b", 64, 64, 8, 128, 5120, 40960, 32762123264ull, 262144 },
	{ "qwen3-30b-a3b", 48, 32, 4, 128, 2048, 40960, 30532122624ull, 98304 },
	{ "qwen3-235b-a22b", 94, 64, 4, 128, 4096, 40960, 235093634560ull, 192512 },
	/* Llama-4-Scout-17B-16E (Meta's card: 109B, 17B active), by hand.
	 * The text model: a layer's attention 5120 x (5120 + 2 x 1024) +
	 * 5120^2 = 62,914,560 and two norms 10,240; 16 routed experts and a
	 * shared one of 3 x 5120 x 8192 = 125,829,120 and a router of 5120 x
	 * 16: 2,202,101,760 a layer, x 48 = 105,700,884,480, + untied
	 * embeddings and head 2 x 202,048 x 5120 + the final norm =
	 * 107,769,861,120.  The vision tower (hidden 1408, MLP 5632, 34
	 * layers, 336-pixel images in 14-pixel patches: 576 patches):
	 * patches 3 x 14^2 x 1408 = 827,904, class embedding 1,408,
	 * positions 577 x 1408 = 812,416, two LayerNorms 5,632; a layer
	 * q, k, v, o 4 x (1408^2 + 1408) = 7,935,488, fc1 1408 x 5632 + 5632
	 * = 7,935,488, fc2 5632 x 1408 + 1408 = 7,931,264, two LayerNorms
	 * 5,632: 23,807,872, x 34 = 809,467,648; the adapter 5632 x 4096 +
	 * 4096^2 = 39,845,888: 850,960,896; the projector 4096 x 5120 =
	 * 20,971,520.  In all 108,641,793,536. */
	{ "llama-4-scout", 48, 40, 8, 128, 5120, 10485760, 108641793536ull, 196608 },
	/* Llama-4-Maverick-17B-128E (Meta's card: 400B, 17B active), by
	 * hand: the same attention and norms as Scout's (62,924,800 a
	 * layer); 24 MoE layers (every second) of 128 routed experts and a
	 * shared one of 125,829,120 each and a router of 5120 x 128:
	 * 16,232,611,840; 24 dense layers of 3 x 5120 x 16384 =
	 * 251,658,240: 24 x 16,295,536,640 + 24 x 314,583,040 =
	 * 398,642,872,320, + embeddings, head and final norm
	 * 2,068,976,640 = 400,711,848,960; + Scout's vision tower and
	 * projector 871,932,416 = 401,583,781,376 */
	{ "llama-4-maverick", 48, 40, 8, 128, 5120, 1048576, 401583781376ull, 196608 },
};

static void test_presets_match_reference(void **state)
{
	(void)state;
	size_t n = 0;
	for (const char *const *p = kvs_model_preset_names(); *p; p++)
		n++;
	assert_int_equal(n, KVS_ARRAY_LEN(refs));
	for (size_t i = 0; i < KVS_ARRAY_LEN(refs); i++) {
		const struct ref *r = &refs[i];
		kvs_model m = load(r->name);
		assert_string_equal(m.name, r->name);
		assert_int_equal(m.num_layers, r->layers);
		assert_int_equal(m.num_heads, r->heads);
		assert_int_equal(m.num_kv_heads, r->kv_heads);
		assert_int_equal(m.head_dim, r->head_dim);
		assert_int_equal(m.hidden_size, r->hidden);
		assert_int_equal(m.max_position_embeddings, r->max_pos);
		if (bpt(&m, KVS_DTYPE_FP16, 0, 1, 1) != r->bytes_per_token)
			fail_msg("%s: %llu bytes/token, reference %llu", r->name,
				 (unsigned long long)bpt(&m, KVS_DTYPE_FP16, 0, 1, 1),
				 (unsigned long long)r->bytes_per_token);
		/* the parameter count is estimated from the config's shapes */
		assert_false(m.params_from_config);
		if (r->params && m.num_params != r->params)
			fail_msg("%s: %llu parameters, reference %llu", r->name,
				 (unsigned long long)m.num_params,
				 (unsigned long long)r->params);
		if (!m.num_experts)
			assert_int_equal(m.num_active_params, m.num_params - m.vision_params);
	}
}

static void test_moe_and_mla_params(void **state)
{
	(void)state;
	kvs_model mx = load("mixtral-8x7b");
	assert_int_equal(mx.num_experts, 8);
	assert_int_equal(mx.num_experts_per_tok, 2);
	/* "about 12.9B active": hand count, 2 of 8 experts per layer */
	assert_int_equal(mx.num_active_params, 12879925248ull);
	/* Llama 4 Scout, "17B active": a layer's attention, norms, router,
	 * shared expert and one routed one, 314,664,960, x 48, + embeddings,
	 * head and final norm */
	kvs_model sc = load("llama-4-scout");
	assert_int_equal(sc.num_active_params, 48ull * 314664960 + 2ull * 202048 * 5120 + 5120);
	assert_int_equal(sc.num_sliding_layers, 36);
	assert_true(sc.window_chunked);
	/* Maverick, "17B active": 24 MoE layers of attention, norms, router,
	 * shared expert and one routed one (315,238,400) and 24 dense ones
	 * (314,583,040), + embeddings, head and final norm */
	kvs_model mv = load("llama-4-maverick");
	assert_int_equal(mv.num_experts, 128);
	assert_int_equal(mv.num_active_params,
			 24ull * 315238400 + 24ull * 314583040 + 2ull * 202048 * 5120 + 5120);
	assert_int_equal(mv.num_sliding_layers, 36);

	kvs_model ds = load("deepseek-v3");
	assert_int_equal(ds.kv_lora_rank, 512);
	assert_int_equal(ds.qk_rope_head_dim, 64);
	assert_int_equal(ds.num_experts, 256);
	assert_int_equal(ds.first_dense_layers, 3);
	assert_int_equal(ds.shared_expert_intermediate_size, 2048);
	assert_int_equal(ds.weight_dtype, KVS_DTYPE_FP8);   /* quantization_config */
	/* 671B total, 37B active (MTP module and router biases not counted) */
	assert_true(ds.num_params > 670000000000ull && ds.num_params < 672000000000ull);
	assert_true(ds.num_active_params > 37000000000ull &&
		    ds.num_active_params < 38000000000ull);
	/* uncompressed equivalent: 128 heads x (192 + 128) vs 576: ~71x */
	double ratio = 2.0 * 128 * (192 + 128) / 2.0 / 576.0;
	assert_true(ratio > 71.0 && ratio < 71.2);
}

static void test_tp_pp(void **state)
{
	(void)state;
	kvs_model m70 = load("llama-2-70b");
	assert_int_equal(bpt(&m70, KVS_DTYPE_FP16, 0, 4, 1), 81920);
	assert_int_equal(bpt(&m70, KVS_DTYPE_FP16, 0, 8, 1), 40960);
	/* tp 16 > 8 kv heads: one head per rank, replicated */
	kvs_model m3 = load("llama-3-70b");
	assert_int_equal(bpt(&m3, KVS_DTYPE_FP16, 0, 16, 1), 40960);
	/* pp: the largest stage of 32 layers over 3 stages holds 11 */
	kvs_model m7 = load("llama-2-7b");
	assert_int_equal(bpt(&m7, KVS_DTYPE_FP16, 0, 1, 3), 11 * 16384);
	assert_int_equal(bpt(&m7, KVS_DTYPE_FP16, 0, 2, 2), 16 * 2 * 16 * 128 * 2);
	/* MLA: every rank keeps the whole latent */
	kvs_model ds = load("deepseek-v3");
	assert_int_equal(bpt(&ds, KVS_DTYPE_BF16, 0, 1, 1), 70272);
	assert_int_equal(bpt(&ds, KVS_DTYPE_BF16, 0, 8, 1), 70272);

	uint64_t v = 7;
	kvs_model m13 = load("llama-2-13b");
	assert_int_equal(kvs_kv_bytes_per_token(&m13, KVS_DTYPE_FP16, 0, 3, 1, &v),
			 KVS_ERR_INVALID);
	assert_int_equal(v, 7); /* untouched on failure */
	assert_non_null(strstr(kvs_last_error(), "tp 3"));
	assert_int_equal(kvs_kv_bytes_per_token(&m7, KVS_DTYPE_FP16, 0, 1, 33, &v),
			 KVS_ERR_INVALID);
	assert_int_equal(kvs_kv_bytes_per_token(&m7, KVS_DTYPE_FP16, 0, 0, 1, &v),
			 KVS_ERR_INVALID);
}

static void test_sliding_windows(void **state)
{
	(void)state;
	kvs_model g = load("gemma-2-9b");
	assert_int_equal(g.sliding_window, 4096);
	assert_int_equal(g.num_sliding_layers, 21);
	/* 8192 tokens: 21 global layers x 8192 + 21 local x 4096, 8 KiB each */
	assert_int_equal(for_tokens(&g, KVS_DTYPE_BF16, 8192), 2016ull << 20);
	assert_int_equal(for_tokens(&g, KVS_DTYPE_BF16, 4096), 1344ull << 20);
	assert_int_equal(for_tokens(&g, KVS_DTYPE_BF16, 100), 344064ull * 100);
	/* without the window it would be 2688 MiB */
	assert_int_equal(344064ull * 8192, 2688ull << 20);

	kvs_model m = load("mistral-7b");
	assert_int_equal(m.sliding_window, 4096);
	assert_int_equal(m.num_sliding_layers, 32);
	assert_int_equal(for_tokens(&m, KVS_DTYPE_BF16, 8192), 131072ull * 4096);
	assert_int_equal(for_tokens(&m, KVS_DTYPE_BF16, 4095), 131072ull * 4095);

	/* Mixtral and Qwen2.5 declare windows they do not use */
	kvs_model mx = load("mixtral-8x7b");
	assert_int_equal(mx.sliding_window, 0);
	kvs_model q = load("qwen2.5-7b");
	assert_int_equal(q.sliding_window, 0);
	assert_int_equal(for_tokens(&q, KVS_DTYPE_BF16, 131072), 57344ull * 131072);

	/* whole blocks: Gemma-2-9B at 8192 tokens, block 16: 21 x 512 global
	 * layer-blocks + 21 x 257 windowed ones (4096 tokens straddle 257) */
	kvs_deploy d;
	kvs_gpu h = gpu("h100-80gb");
	kvs_deploy_defaults(&d, &g, &h);
	d.context_tokens = 8192;
	kvs_sizing s;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.sliding_layers_per_rank, 21);
	assert_int_equal(s.blocks_per_conversation, (21 * 512 + 21 * 257 + 41) / 42);
	assert_int_equal(s.max_conversations, s.num_gpu_blocks * 42 / (21 * 512 + 21 * 257));
	/* pp 2: 21 layers per stage, 11 global + 10 windowed */
	d.pp = 2;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.layers_per_rank, 21);
	assert_int_equal(s.sliding_layers_per_rank, 10);
}

/* vLLM's KV cache groups and the lines it logs for a hybrid pool, derived
 * by hand from its grouping and each kind's largest per-request holding. */
static void test_vllm_hybrid_lines(void **state)
{
	(void)state;
	kvs_gpu h = gpu("h100-80gb");
	kvs_deploy d;
	kvs_sizing s;

	/* Gemma-2-9B: 21 global + 21 windowed layers (4096), 8 KiB per layer
	 * per token, max_model_len 8192, 8192 batched tokens (an H100):
	 * 2 groups of 21; a block is 16 tokens x 21 layers = 2,752,512 B; a
	 * request holds 512 global blocks and min(4095 + 8192, 8192) / 16 + 1
	 * = 513 windowed ones */
	kvs_model g = load("gemma-2-9b");
	kvs_deploy_defaults(&d, &g, &h);
	d.max_model_len = 8192;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.mem.profile_tokens, 8192);
	assert_int_equal(s.vllm_group_layers, 21);
	assert_int_equal(s.vllm_full_groups, 1);
	assert_int_equal(s.vllm_window_groups, 1);
	assert_int_equal(s.vllm_num_blocks, s.kv_budget_bytes / 2752512);
	assert_int_equal(s.vllm_blocks_per_request, 512 + 513);
	assert_int_equal(s.vllm_kv_tokens, s.vllm_num_blocks / 2 * 16);
	assert_true(s.vllm_max_concurrency == (double)s.vllm_num_blocks / 1025.0);
	assert_int_equal(s.vllm_request_bytes, (21ull * 512 + 21ull * 513) * 16 * 8192);
	assert_int_equal(s.vllm_fit_max_model_len, 0);
	/* a step of 2048 tokens: the window's blocks fall to (4095 + 2048) / 16
	 * rounded up, + 1 = 385 */
	d.max_num_batched_tokens = 2048;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_blocks_per_request, 512 + 385);

	/* gpt-oss-120b: 18 + 18 layers, window 128, 2 KiB per layer per
	 * token; at 131,072 tokens a request holds 8192 full blocks and
	 * (127 + 8192) / 16 rounded up, + 1 = 521 windowed */
	kvs_model o = load("gpt-oss-120b");
	kvs_deploy_defaults(&d, &o, &h);
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 18);
	assert_int_equal(s.vllm_blocks_per_request, 8192 + 521);
	assert_int_equal(s.vllm_num_blocks, s.kv_budget_bytes / (16 * 2048 * 18));
	/* the request needs (18 x 8192 + 18 x 521) pages of 32 KiB */
	assert_int_equal(s.vllm_request_bytes, 18ull * 8713 * 16 * 2048);
	uint64_t windowed_context = s.bytes_per_context;
	/* --disable-hybrid-kv-cache-manager: every layer in full, one group
	 * of 36; 4,000 tokens are 36 x 4,000 x 2 KiB */
	d.hybrid_kv_off = true;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 36);
	assert_int_equal(s.vllm_window_groups, 0);
	assert_int_equal(s.sliding_layers_per_rank, 0);
	assert_int_equal(s.vllm_blocks_per_request, 8192);
	assert_int_equal(s.bytes_per_context, 36ull * 4000 * 2048);
	assert_int_equal(windowed_context, (18ull * 4000 + 18ull * 128) * 2048);
	assert_int_equal(kvs_sizing_pool_bytes_per_token(&s), 36 * 2048);
	d.hybrid_kv_off = false;

	/* Gemma-3-27B: 62 layers, every 6th global: 10 global, 52 windowed;
	 * 52 >= 1.25 x 10, so groups of 10: 1 global group, 6 windowed (the
	 * last padded) */
	kvs_model m = g;
	m.num_layers = 62;
	m.num_sliding_layers = 52;
	kvs_deploy_defaults(&d, &m, &h);
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 10);
	assert_int_equal(s.vllm_full_groups, 1);
	assert_int_equal(s.vllm_window_groups, 6);
	assert_int_equal(s.vllm_kv_tokens, s.vllm_num_blocks / 7 * 16);
	/* 8 global and 9 windowed: 9 < 1.25 x 8, one group of 9 each */
	m.num_layers = 17;
	m.num_sliding_layers = 9;
	kvs_deploy_defaults(&d, &m, &h);
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 9);
	assert_int_equal(s.vllm_full_groups, 1);
	assert_int_equal(s.vllm_window_groups, 1);

	/* chunked attention (Llama 4): a chunk of 8192 plus the step's 8192
	 * tokens, no extra block: (8192 + 8192) / 16 = 1024 */
	m = g;
	m.num_layers = 48;
	m.num_sliding_layers = 36;
	m.sliding_window = 8192;
	m.window_chunked = true;
	kvs_deploy_defaults(&d, &m, &h);
	d.max_model_len = 131072;
	d.chunked_hybrid_on = true;
	assert_false(kvs_deploy_windows_in_full(&d));
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 12);
	assert_int_equal(s.vllm_window_groups, 3);
	assert_int_equal(s.vllm_blocks_per_request, 8192 + 3 * 1024);
	/* vLLM's default for chunked attention: the hybrid manager off, one
	 * group of all 48 layers, 131072 / 16 blocks a request */
	d.chunked_hybrid_on = false;
	assert_true(kvs_deploy_windows_in_full(&d));
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 48);
	assert_int_equal(s.vllm_window_groups, 0);
	assert_int_equal(s.sliding_layers_per_rank, 0);
	assert_int_equal(s.vllm_blocks_per_request, 8192);
	/* other engines keep the chunks */
	d.engine = KVS_ENGINE_SGLANG;
	assert_false(kvs_deploy_windows_in_full(&d));
	d.engine = KVS_ENGINE_VLLM;
	/* a sliding window is kept by default, held in full with the flag */
	m.window_chunked = false;
	kvs_deploy_defaults(&d, &m, &h);
	assert_false(kvs_deploy_windows_in_full(&d));
	d.hybrid_kv_off = true;
	assert_true(kvs_deploy_windows_in_full(&d));
	/* every layer windowed (Mistral-7B v0.1): one kind of layer, the
	 * flag changes nothing and the window stays */
	m.num_sliding_layers = m.num_layers;
	kvs_deploy_defaults(&d, &m, &h);
	d.hybrid_kv_off = true;
	assert_false(kvs_deploy_windows_in_full(&d));
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.sliding_layers_per_rank, 48);

	/* one attention kind: one group of every layer, vLLM's line is
	 * blocks x 16 and its concurrency over ceil(max_model_len / 16) */
	kvs_model l = load("llama-3.1-70b");
	kvs_deploy_defaults(&d, &l, &h);
	d.tp = 2;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_group_layers, 80);
	assert_int_equal(s.vllm_num_blocks, s.num_gpu_blocks);
	assert_int_equal(s.vllm_kv_tokens, s.num_gpu_blocks * 16);
	assert_int_equal(s.vllm_blocks_per_request, 131072 / 16);
	/* 131,072 tokens need 8192 blocks of 2.5 MiB (80 layers x 16 tokens
	 * x 2 KiB: K and V of 4 kv heads of 128 at 2 bytes): more than the
	 * pool, so vLLM refuses; the longest length that fits is the pool's
	 * whole blocks */
	assert_int_equal(s.vllm_request_bytes, 8192ull * 80 * 16 * 2048);
	assert_true(s.vllm_request_bytes > s.kv_budget_bytes);
	assert_int_equal(s.vllm_fit_max_model_len, s.num_gpu_blocks * 16);
	assert_false(s.vllm_starts);
	uint64_t profiled = s.kv_budget_bytes, fit = s.vllm_fit_max_model_len;
	assert_int_equal(s.vllm_check_bytes, profiled);
	/* a fixed block count replaces the blocks after vLLM's check, which
	 * reads the profiled memory: 100 blocks do not make it refuse less,
	 * nor 100,000 pass */
	d.num_gpu_blocks_override = 100;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.vllm_num_blocks, 100);
	assert_int_equal(s.num_gpu_blocks, 100);
	assert_int_equal(s.vllm_check_bytes, profiled);
	assert_false(s.vllm_starts);
	assert_int_equal(s.vllm_fit_max_model_len, fit);
	d.num_gpu_blocks_override = 100000;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_false(s.vllm_starts);
	d.max_model_len = fit;
	d.num_gpu_blocks_override = 10;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_true(s.vllm_starts);
	assert_int_equal(s.vllm_fit_max_model_len, 0);
	d.max_model_len = fit + 1;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_false(s.vllm_starts);
}

static void test_quantised_cache(void **state)
{
	(void)state;
	kvs_model m = load("llama-3-8b");
	uint64_t base = bpt(&m, KVS_DTYPE_BF16, 0, 1, 1);
	assert_int_equal(base, 131072);
	assert_int_equal(bpt(&m, KVS_DTYPE_FP8, 0, 1, 1), base / 2);
	assert_int_equal(bpt(&m, KVS_DTYPE_INT8, 0, 1, 1), base / 2);
	assert_int_equal(bpt(&m, KVS_DTYPE_INT4, 0, 1, 1), base / 4);
	assert_int_equal(bpt(&m, KVS_DTYPE_FP32, 0, 1, 1), base * 2);
	/* group scales: int4 with 32-element groups: per layer 2 x 8 heads x
	 * 4 groups x (fp16 scale + fp16 zero) = 256 bytes */
	assert_int_equal(bpt(&m, KVS_DTYPE_INT4, 32, 1, 1), base / 4 + 32 * 256);
	/* fp8 with one scale per head vector: 2 x 8 x 1 x 2 bytes per layer */
	assert_int_equal(bpt(&m, KVS_DTYPE_FP8, 128, 1, 1), base / 2 + 32 * 32);
	/* groups do not span heads: 100-element groups still need 2 per head */
	assert_int_equal(bpt(&m, KVS_DTYPE_INT8, 100, 1, 1), base / 2 + 32 * 2 * 8 * 2 * 2);
	/* 16-bit caches carry no scales */
	assert_int_equal(bpt(&m, KVS_DTYPE_BF16, 32, 1, 1), base);
	/* MLA latent: 576 elements, 64-element groups: 9 groups x 2 bytes */
	kvs_model ds = load("deepseek-v3");
	assert_int_equal(bpt(&ds, KVS_DTYPE_FP8, 64, 1, 1), 61 * (576 + 18));

	kvs_deploy d;
	kvs_gpu g = gpu("a100-80gb");
	kvs_deploy_defaults(&d, &m, &g);
	d.kv_dtype = KVS_DTYPE_INT4;
	d.kv_quant_group = 32;
	kvs_sizing s;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.kv_scale_bytes_per_token, 32 * 256);
	assert_int_equal(s.kv_bytes_per_token, base / 4 + 32 * 256);
}

static void test_weights_and_reserve(void **state)
{
	(void)state;
	kvs_model m;
	memset(&m, 0, sizeof m);
	m.num_params = 7000000000ull;
	uint64_t w;
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP16, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 14000000000ull);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP8, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 7000000000ull);
	/* int4: half a byte plus fp16 scale and zero per 128 weights */
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_INT4, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 3500000000ull + 218750000ull);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP16, 4, 2, &w), KVS_OK);
	assert_int_equal(w, 1750000000ull);
	m.num_params = UINT64_MAX / 4;
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP16, 1, 1, &w), KVS_ERR_OVERFLOW);

	/* quantised checkpoints keep the embeddings and the untied LM head at
	 * 16 bits: 2 x 32000 x 4096 = 262,144,000 of 7e9 weights */
	m.num_params = 7000000000ull;
	m.vocab_size = 32000;
	m.hidden_size = 4096;
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP16, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 14000000000ull);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP8, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 6737856000ull + 2 * 262144000ull);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_INT4, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 6737856000ull / 2 + 52639500ull * 4 + 2 * 262144000ull);
	m.quant_lm_head = true;  /* quantization_config "lm_head": true */
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP8, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 6868928000ull + 2 * 131072000ull);
	m.quant_lm_head = false;
	m.tie_word_embeddings = true;
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP8, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 6868928000ull + 2 * 131072000ull);

	/* the non-KV terms for llama-2-7b on an A100-80GB, by hand (vLLM's
	 * serve defaults on an A100: 2048 tokens, 256 sequences):
	 *   RoPE cache   4096 positions x 128 x 2 bytes
	 *   activations  2048 x (2 x 4096 + max((2x32 + 2x32) x 128, 3 x 11008)) x 2
	 *   sampler      256 x 32000 x 8 bytes (fp32 logits and probabilities)
	 *   non-torch    384 MiB */
	kvs_model l = load("llama-2-7b");
	kvs_gpu g = gpu("a100-80gb");
	kvs_deploy d;
	kvs_deploy_defaults(&d, &l, &g);
	kvs_mem_terms t;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.engine, KVS_ENGINE_VLLM);
	assert_int_equal(t.profile_tokens, 2048);
	assert_int_equal(t.profile_seqs, 256);
	assert_int_equal(t.rope_cache_bytes, 4096ull * 128 * 2);
	assert_int_equal(t.activation_bytes, 2048ull * (2 * 4096 + 3 * 11008) * 2);
	assert_int_equal(t.sampler_bytes, 256ull * 32000 * 8);
	assert_int_equal(t.non_torch_bytes, 384ull << 20);
	assert_int_equal(t.comm_bytes, 0);
	/* 256 seqs: capture sizes 1, 2, 4, 8..248 by 8, 256..512 by 16 */
	assert_int_equal(t.cudagraph_sizes, 3 + 31 + 17);
	assert_int_equal(t.cudagraph_max_size, 512);
	uint64_t sizes = 1 + 2 + 4 + 8 * (31 * 32 / 2) + (256 * 17 + 16 * (16 * 17 / 2));
	assert_int_equal(t.cudagraph_bytes, sizes * 4096 * 2 * 8);
	assert_false(t.counted & KVS_MEM_CUDAGRAPH);
	assert_false(t.counted & KVS_MEM_CONTEXT);
	uint64_t r = kvs_reserve_estimate(&d);
	assert_int_equal(r, t.rope_cache_bytes + t.activation_bytes + t.sampler_bytes +
				    t.non_torch_bytes);
	d.tp = 2;  /* heads and the MLP split; NCCL and custom all-reduce added */
	uint64_t r2 = kvs_reserve_estimate(&d);
	assert_int_equal(r2, 4096ull * 128 * 2 + 2048ull * (2 * 4096 + 3 * 5504) * 2 +
				     256ull * 32000 * 8 + (384ull << 20) + (512ull << 20));
	/* an H100 is a large GPU for vLLM: 8192 tokens and 1024 sequences */
	kvs_deploy_defaults(&d, &l, &g);
	d.gpu = gpu("h100-80gb");
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.profile_tokens, 8192);
	assert_int_equal(t.profile_seqs, 1024);
	assert_int_equal(t.sampler_bytes, 1024ull * 32000 * 8);
	/* a soft-capped vocabulary adds two 16-bit temporaries per logit */
	d.model.logit_softcap = true;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.sampler_bytes, 1024ull * 32000 * 12);

	/* defaults: llama-2-7b fp16, a100-80gb 79.25 GiB as the driver reports
	 * it, x 0.9 = 76,584,635,596.8 -> 76,584,635,597 */
	kvs_deploy_defaults(&d, &l, &g);
	kvs_sizing s;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_true(s.reserve_estimated);
	assert_int_equal(s.usable_bytes, 76584635597ull);
	assert_int_equal(s.weight_bytes, 2 * 6738415616ull);
	assert_int_equal(s.kv_budget_bytes, 76584635597ull - 2 * 6738415616ull - r);
	assert_int_equal(s.num_gpu_blocks, s.kv_budget_bytes / (16 * 524288ull));
	assert_int_equal(s.max_conversations, s.num_gpu_blocks / 250);
	/* vLLM's log lines: tokens = blocks x 16; concurrency over 4096 = 256 blocks */
	assert_int_equal(s.vllm_kv_tokens, s.num_gpu_blocks * 16);
	assert_true(s.vllm_max_concurrency == (double)s.num_gpu_blocks / 256.0);
	assert_true(s.decode_tokens_per_s > 0);
	assert_true(s.cache_to_weights > 0.155 && s.cache_to_weights < 0.156);

	/* vLLM's overrides */
	d.num_gpu_blocks_override = 1000;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.num_gpu_blocks, 1000);
	assert_int_equal(s.kv_budget_bytes, 1000ull * 16 * 524288);
	assert_true(s.kv_from_override);
	d.num_gpu_blocks_override = 0;
	d.kv_cache_memory_bytes = 10ull << 30;  /* 10 GiB / 8 MiB = 1280 blocks */
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.num_gpu_blocks, 1280);
	assert_int_equal(s.kv_capacity_tokens, 1280 * 16);
	d.kv_cache_memory_bytes = 0;

	/* SGLang: total x mem_fraction_static - weights - RoPE - non-torch -
	 * CUDA context.  Its default on an A100-80GB (nvidia-smi: 81,920 MiB,
	 * chunked_prefill_size 8192, cuda_graph_max_bs 256 at tp 1): a
	 * reserve of 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024 = 13,440 MiB,
	 * (81,920 - 13,440) / 81,920 = 0.83594 -> 0.836 */
	d.engine = KVS_ENGINE_SGLANG;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_true(s.mem.fraction == 0.836);
	uint64_t total = 85094039552ull;  /* 79.25 GiB */
	uint64_t use = (uint64_t)(total * 0.836 + 0.5);
	assert_int_equal(s.usable_bytes, use);
	assert_int_equal(s.reserve_bytes, 4096ull * 128 * 2 + (384ull << 20) + (512ull << 20));
	assert_int_equal(s.kv_budget_bytes, use - 2 * 6738415616ull - s.reserve_bytes);
	/* tp 2: 256 MiB more reserve, (81,920 - 13,568) / 81,920 -> 0.834;
	 * SGLang's own chunk whatever the simulators' token budget (the
	 * pool replay sizes is the one size prints); on a GPU of 40,960 MiB
	 * (the A100-40GB: chunked_prefill_size 4096, cuda_graph_max_bs 32, no
	 * 10 GiB floor): 512 + 6,144 + 64 + 128 = 6,848, -> 0.833; given with
	 * --gpu-mem, its total stands for nvidia-smi's: 40 GiB as 40,960 MiB,
	 * the same; 70 GiB (71,680 MiB): (71,680 - 13,440) / 71,680 =
	 * 0.8125 exactly, to even as SGLang's Python rounds it: 0.812 */
	d.tp = 2;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_true(s.mem.fraction == 0.834);
	d.tp = 1;
	d.max_num_batched_tokens = 16384;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_true(s.mem.fraction == 0.836);
	d.max_num_batched_tokens = 0;
	kvs_gpu g40 = gpu("a100-40gb");
	kvs_deploy d40 = d;
	d40.gpu = g40;
	assert_int_equal(kvs_size_compute(&d40, &s), KVS_OK);
	assert_true(s.mem.fraction == 0.833);
	d40.gpu.smi_mem_bytes = 0;
	d40.gpu.mem_bytes = 40ull << 30;
	assert_int_equal(kvs_size_compute(&d40, &s), KVS_OK);
	assert_true(s.mem.fraction == 0.833);
	d40.gpu.mem_bytes = 70ull << 30;
	assert_int_equal(kvs_size_compute(&d40, &s), KVS_OK);
	assert_true(s.mem.fraction == 0.812);
	/* TensorRT-LLM: 0.9 of what is free after weights and buffers */
	d.engine = KVS_ENGINE_TRTLLM;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.mem.profile_tokens, 8192);
	assert_int_equal(s.mem.profile_seqs, 2048);
	assert_int_equal(s.mem.sampler_bytes, 2048ull * 32000 * 4);
	uint64_t taken = 2 * 6738415616ull + s.reserve_bytes;
	assert_int_equal(s.kv_budget_bytes, (uint64_t)((double)(total - taken) * 0.9));
	assert_int_equal(s.usable_bytes, taken + s.kv_budget_bytes);
}

static void test_size_validation(void **state)
{
	(void)state;
	kvs_model m = load("llama-2-7b");
	kvs_gpu g = gpu("a100-80gb");
	kvs_deploy d;
	kvs_sizing s;
	kvs_deploy_defaults(&d, &m, &g);
	d.gpu_memory_utilization = 0.0;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_ERR_INVALID);
	d.gpu_memory_utilization = 1.5;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_ERR_INVALID);
	kvs_deploy_defaults(&d, &m, &g);
	d.block_size = 0;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_ERR_INVALID);
	kvs_deploy_defaults(&d, &m, &g);
	d.context_tokens = 0;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_ERR_INVALID);
	kvs_deploy_defaults(&d, &m, &g);
	d.context_tokens = 1ull << 50;  /* x 524288 bytes overflows */
	assert_int_equal(kvs_size_compute(&d, &s), KVS_ERR_OVERFLOW);
	kvs_deploy_defaults(&d, &m, &g);
	d.block_size = 1u << 31;
	d.model.num_layers = 1u << 31;  /* bytes per block overflows */
	assert_int_equal(kvs_size_compute(&d, &s), KVS_ERR_OVERFLOW);
	/* weights larger than the GPU: a normal result with no room */
	kvs_model big = load("llama-3.1-405b");
	kvs_deploy_defaults(&d, &big, &g);
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.kv_budget_bytes, 0);
	assert_int_equal(s.num_gpu_blocks, 0);
	assert_int_equal(s.max_conversations, 0);
	/* context past max_model_len is flagged, not refused */
	kvs_deploy_defaults(&d, &m, &g);
	d.context_tokens = 128000;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_true(s.context_over_max_model_len);
	assert_int_equal(s.max_model_len, 4096);
}

static void test_unknown_presets(void **state)
{
	(void)state;
	kvs_model m;
	kvs_gpu g;
	assert_int_equal(kvs_model_load("llama-9-9b", &m), KVS_ERR_NOT_FOUND);
	assert_non_null(strstr(kvs_last_error(), "llama-9-9b"));
	assert_non_null(strstr(kvs_last_error(), "llama-2-7b"));
	assert_non_null(strstr(kvs_last_error(), "deepseek-v3"));
	assert_int_equal(kvs_gpu_preset("a200", &g), KVS_ERR_NOT_FOUND);
	assert_non_null(strstr(kvs_last_error(), "h100-80gb"));
	assert_non_null(strstr(kvs_last_error(), "mi300x"));
	assert_int_equal(kvs_model_load("/nonexistent/config.json", &m), KVS_ERR_IO);
	assert_non_null(strstr(kvs_last_error(), "/nonexistent/config.json"));
}

static void test_gpu_presets(void **state)
{
	(void)state;
	/* memory is the driver's total (docs/SIZING.md): 79.19 GiB for an H100 */
	kvs_gpu g = gpu("h100-80gb");
	assert_int_equal(g.mem_bytes, 85029615043ull);   /* round(79.19 x 2^30) */
	assert_int_equal(g.datasheet_mem_bytes, 80000000000ull);
	assert_non_null(strstr(g.mem_source, "vLLM"));
	assert_true(g.hbm_bytes_per_s == 3350e9);
	assert_true(g.fp16_flops == 989e12);
	assert_true(g.fp8_flops == 1979e12);
	assert_true(g.pcie_bytes_per_s > 0 && g.interconnect_bytes_per_s > 0);
	assert_int_equal(gpu("a100-80gb").mem_bytes, 85094039552ull);  /* 79.25 GiB */
	assert_int_equal(gpu("a100-40gb").mem_bytes, 42412802048ull);  /* 39.50 GiB */
	assert_int_equal(gpu("mi300x").mem_bytes, 205822885888ull);
	/* the driver's total is within 10% of the label (NVIDIA labels are
	 * decimal and the driver keeps some; the MI300X's 192 GB is 192 GiB) */
	for (const char *const *p = kvs_gpu_preset_names(); *p; p++) {
		kvs_gpu x = gpu(*p);
		assert_true(x.mem_bytes < x.datasheet_mem_bytes * 1.1);
		assert_true(x.mem_bytes > x.datasheet_mem_bytes * 0.9);
		assert_true(x.mem_source[0] != '\0');
	}
	/* 8-bit matmuls: FP8 on Hopper, INT8 on Ampere; none of FP8 on A100 */
	kvs_gpu a1 = gpu("a100-80gb");
	assert_true(kvs_gpu_matmul_rate(&a1, KVS_DTYPE_FP8) == 312e12);
	assert_true(kvs_gpu_matmul_rate(&a1, KVS_DTYPE_INT8) == 624e12);
	assert_true(kvs_gpu_matmul_rate(&g, KVS_DTYPE_FP8) == 1979e12);
	assert_true(kvs_gpu_matmul_rate(&g, KVS_DTYPE_BF16) == 989e12);
	assert_true(kvs_gpu_matmul_rate(&g, KVS_DTYPE_INT4) == 989e12);
	/* ridge points from REFERENCE.md: A100-80GB ~153, H100 ~295, H200 ~206 */
	kvs_gpu a = gpu("a100-80gb");
	assert_int_equal((int)(a.fp16_flops / a.hbm_bytes_per_s), 153);
	assert_int_equal((int)(g.fp16_flops / g.hbm_bytes_per_s), 295);
	kvs_gpu h = gpu("h200-141gb");
	assert_int_equal((int)(h.fp16_flops / h.hbm_bytes_per_s), 206);

	/* the data file holds exactly the listed presets */
	json_error_t e;
	json_t *root = json_load_file(kvs_test_src("sizing/presets/gpus.json"), 0, &e);
	assert_non_null(root);
	json_t *gpus = json_object_get(root, "gpus");
	size_t n = 0;
	for (const char *const *p = kvs_gpu_preset_names(); *p; p++, n++) {
		assert_non_null(json_object_get(gpus, *p));
		gpu(*p);
	}
	assert_int_equal(json_object_size(gpus), n);
	json_decref(root);

	/* ... and one model file per listed model */
	DIR *dir = opendir(kvs_test_src("sizing/presets/models"));
	assert_non_null(dir);
	size_t files = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), de->d_name);
		bool listed = false;
		for (const char *const *p = kvs_model_preset_names(); *p; p++)
			listed |= strcmp(*p, name) == 0;
		if (!listed)
			fail_msg("models/%s is not in the preset list", de->d_name);
		files++;
	}
	closedir(dir);
	assert_int_equal(files, KVS_ARRAY_LEN(refs));
}

static void test_datadir_env(void **state)
{
	(void)state;
	/* KVSIM_DATADIR wins: a directory with one extra model */
	const char *cfg = kvs_test_write_tmp("dd-probe.json", "{}");
	assert_non_null(cfg);
	char dir[4096];
	snprintf(dir, sizeof dir, "%s.d", cfg);
	char cmd[8300];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/models' && cp '%s' '%s/models/'", dir,
		 kvs_test_src("sizing/presets/models/llama-3-8b.json"), dir);
	assert_int_equal(system(cmd), 0);
	char from[4200], to[4200];
	snprintf(from, sizeof from, "%s/models/llama-3-8b.json", dir);
	snprintf(to, sizeof to, "%s/models/my-model.json", dir);
	assert_int_equal(rename(from, to), 0);
	setenv("KVSIM_DATADIR", dir, 1);
	kvs_model m = load("my-model");
	assert_int_equal(m.num_kv_heads, 8);
	unsetenv("KVSIM_DATADIR");
	kvs_model m2;
	assert_int_equal(kvs_model_load("my-model", &m2), KVS_ERR_NOT_FOUND);
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, cfg);
	assert_int_equal(system(cmd), 0);
}

/* ---- config.json parsing --------------------------------------------------- */
static kvs_status parse(const char *text, kvs_model *m)
{
	const char *p = kvs_test_write_tmp("config.json", text);
	assert_non_null(p);
	return kvs_model_from_json_file(p, m);
}

static void expect_error(const char *text, kvs_status want, const char *needle)
{
	kvs_model m;
	kvs_status st = parse(text, &m);
	if (st != want || !strstr(kvs_last_error(), needle) ||
	    !strstr(kvs_last_error(), "config.json"))
		fail_msg("status %d, message \"%s\"; wanted %d with \"%s\"", st,
			 kvs_last_error(), want, needle);
}

#define BASE "\"num_hidden_layers\": 4, \"num_attention_heads\": 8, \"hidden_size\": 512, " \
	     "\"intermediate_size\": 1024, \"vocab_size\": 1000"

static void test_config_errors(void **state)
{
	(void)state;
	expect_error("{\"num_attention_heads\": 8, \"hidden_size\": 512}", KVS_ERR_PARSE,
		     "missing field 'num_hidden_layers'");
	expect_error("{\"num_hidden_layers\": 4, \"hidden_size\": 512}", KVS_ERR_PARSE,
		     "missing field 'num_attention_heads'");
	expect_error("{\"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
		     "\"intermediate_size\": 1, \"vocab_size\": 1}", KVS_ERR_PARSE,
		     "missing field 'hidden_size'");
	expect_error("{\"num_hidden_layers\": 4, \"num_attention_heads\": 8, \"hidden_size\": 512,"
		     " \"intermediate_size\": 1024}", KVS_ERR_PARSE, "missing field 'vocab_size'");
	expect_error("{\"num_hidden_layers\": \"abc\", \"num_attention_heads\": 8}",
		     KVS_ERR_PARSE, "field 'num_hidden_layers'");
	expect_error("{\"num_hidden_layers\": -4, \"num_attention_heads\": 8}",
		     KVS_ERR_PARSE, "out of range");
	expect_error("{\"num_hidden_layers\": 0, \"num_attention_heads\": 8}",
		     KVS_ERR_PARSE, "out of range");
	expect_error("{\"num_hidden_layers\": 99999999999, \"num_attention_heads\": 8}",
		     KVS_ERR_PARSE, "out of range");
	expect_error("{\"num_hidden_layers\": 4.5, \"num_attention_heads\": 8}",
		     KVS_ERR_PARSE, "expected an integer");
	expect_error("{" BASE ", \"num_key_value_heads\": 3}", KVS_ERR_PARSE,
		     "num_key_value_heads");
	expect_error("{" BASE ", \"kv_lora_rank\": 512}", KVS_ERR_PARSE,
		     "missing field 'qk_rope_head_dim'");
	expect_error("{" BASE ", \"torch_dtype\": \"float7\"}", KVS_ERR_PARSE, "torch_dtype");
	expect_error("{" BASE ", \"num_local_experts\": 8}", KVS_ERR_PARSE,
		     "missing field 'num_experts_per_tok'");
	expect_error("{" BASE ", \"layer_types\": [\"full_attention\"]}", KVS_ERR_PARSE,
		     "layer_types");
	expect_error("{" BASE ", \"layer_types\": [\"sliding_attention\", \"full_attention\","
		     " \"sliding_attention\", \"full_attention\"]}", KVS_ERR_PARSE,
		     "missing field 'sliding_window'");
	expect_error("{" BASE ", \"tie_word_embeddings\": 1}", KVS_ERR_PARSE,
		     "tie_word_embeddings");
	expect_error("{\"num_hidden_layers\": 4,,}", KVS_ERR_PARSE, "config.json:1:");
	expect_error("[1, 2]", KVS_ERR_PARSE, "expected a JSON object");
	expect_error("{" BASE ", \"num_hidden_layers\": 5}", KVS_ERR_PARSE, "duplicate");
	expect_error("{\"num_hidden_layers\": 4, \"num_attention_heads\": 7, \"hidden_size\": 512,"
		     " \"intermediate_size\": 1024, \"vocab_size\": 1000}", KVS_ERR_PARSE,
		     "missing field 'head_dim'");
}

/* kvs_model_from_json_text: a UTF-8 byte-order mark is skipped, UTF-16 is
 * named, and a per-head width is bounded with its file and field. */
static void test_config_text(void **state)
{
	(void)state;
	static const char cfg[] =
		"{\"hidden_size\": 4096, \"num_attention_heads\": 32, "
		"\"num_key_value_heads\": 8, \"num_hidden_layers\": 32, "
		"\"vocab_size\": 128256, \"intermediate_size\": 14336, "
		"\"max_position_embeddings\": 8192%s}";
	char text[512];
	kvs_model m, bom;
	snprintf(text, sizeof text, cfg, "");
	assert_int_equal(kvs_model_from_json_text("c.json", text, strlen(text), &m), KVS_OK);
	assert_int_equal(m.head_dim, 128);
	char with_bom[600];
	snprintf(with_bom, sizeof with_bom, "\xef\xbb\xbf%s", text);
	assert_int_equal(kvs_model_from_json_text("c.json", with_bom, strlen(with_bom), &bom),
			 KVS_OK);
	assert_int_equal(bom.num_params, m.num_params);
	assert_int_equal(kvs_model_from_json_text("u.json", "\xff\xfe{\0}\0", 6, &m),
			 KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "u.json: the file is UTF-16 text"));
	snprintf(text, sizeof text, cfg, ", \"head_dim\": 4294967295");
	assert_int_equal(kvs_model_from_json_text("h.json", text, strlen(text), &m),
			 KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(),
			       "h.json: field 'head_dim': 4294967295 is out of range [1, 65536]"));
	snprintf(text, sizeof text, cfg, ", \"head_dim\": 65536");
	assert_int_equal(kvs_model_from_json_text("h.json", text, strlen(text), &m), KVS_OK);
	/* OPT's learned positions are max_position_embeddings + 2: a count
	 * that the offset would carry past 32 bits is refused, not wrapped */
	static const char opt[] =
		"{\"model_type\": \"opt\", \"hidden_size\": 512, "
		"\"num_attention_heads\": 8, \"num_hidden_layers\": 2, "
		"\"vocab_size\": 1000, \"ffn_dim\": 1024, "
		"\"max_position_embeddings\": %s}";
	snprintf(text, sizeof text, opt, "2048");
	assert_int_equal(kvs_model_from_json_text("o.json", text, strlen(text), &m), KVS_OK);
	assert_int_equal(m.learned_positions, 2050);
	snprintf(text, sizeof text, opt, "4294967295");
	assert_int_equal(kvs_model_from_json_text("o.json", text, strlen(text), &m),
			 KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "o.json: field 'max_position_embeddings'"));
}

/* Modules a quantised checkpoint keeps at 16 bits (modules_to_not_convert
 * and its kin), on a 4-layer Mixtral-shaped MoE whose figures are derived
 * by hand: hidden 512, 8 heads of 64 (no GQA), 4 experts of 1024, vocab
 * 1000, untied.
 *   attention per layer  q, k, v, o = 4 x 512 x 512          = 1,048,576
 *   router per layer     512 x 4                             =     2,048
 *   experts per layer    4 x 3 x 512 x 1024                  = 6,291,456
 *   norms per layer      2 x 512                             =     1,024
 *   embeddings + head    2 x 1000 x 512 = 1,024,000, final norm 512
 *   total  1,024,512 + 4 x 7,343,104                         = 30,396,928 */
#define MOE4 "\"model_type\": \"mixtral\", \"num_hidden_layers\": 4, " \
	     "\"num_attention_heads\": 8, \"hidden_size\": 512, \"intermediate_size\": 1024, " \
	     "\"vocab_size\": 1000, \"num_local_experts\": 4, \"num_experts_per_tok\": 2"

static void test_quant_wide_modules(void **state)
{
	(void)state;
	kvs_model m;
	kvs_param_parts pp;
	uint64_t w;
	uint32_t na, nr, ns;
	/* gpt-oss's list: attention and routers of every layer, the
	 * embeddings and the head */
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"mxfp4\", "
			       "\"modules_to_not_convert\": [\"model.layers.*.self_attn\", "
			       "\"model.layers.*.block_sparse_moe.gate\", \"model.embed_tokens\", "
			       "\"lm_head\"]}}", &m), KVS_OK);
	assert_int_equal(m.num_params, 30396928);
	kvs_model_param_parts(&m, &pp);
	assert_int_equal(pp.attn, 1048576);
	assert_int_equal(pp.router, 2048);
	assert_int_equal(pp.shared, 0);
	assert_int_equal(m.wide_attn_layers, KVS_WIDE_ALL);
	assert_int_equal(m.wide_router_layers, KVS_WIDE_ALL);
	kvs_model_wide_layers(&m, &na, &nr, &ns);
	assert_int_equal(na, 4);
	assert_int_equal(nr, 4);
	assert_int_equal(ns, 0);
	assert_string_equal(m.wide_unread, "");
	assert_false(m.wide_lm_head_conflict);
	/* every layer is every layer of the model as reshaped */
	m.num_layers = 2;
	kvs_model_wide_layers(&m, &na, &nr, &ns);
	assert_int_equal(na, 2);
	assert_int_equal(nr, 2);
	m.num_layers = 4;
	/* wide: 1,024,000 + 4 x 1,048,576 + 4 x 2,048 = 5,226,496; narrow
	 * 25,170,432 at 4 bits (12,585,216 B) with 196,644 groups of 128 x
	 * 4 B (786,576 B); wide x 2 B = 10,452,992 B */
	assert_int_equal(kvs_model_wide_params(&m), 5226496);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_INT4, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 12585216 + 786576 + 10452992);
	/* unquantised weights: the list changes nothing */
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP16, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 2 * 30396928);

	/* layers named one by one: each once, a regular expression's literal
	 * layer read from its words; a layer past the model's, a number of 10
	 * digits, one after a '-', and a pattern over some layers are read
	 * as nothing, and said */
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"awq\", "
			       "\"bits\": 4, \"modules_to_not_convert\": [\"model.layers.1.self_attn\", "
			       "\"model.layers.1.self_attn\", \"model.layers.9.self_attn\", "
			       "\"re:.*layers[.]2[.]self_attn.*\", \"model.layers.4294967296.self_attn\", "
			       "\"model.layers.-1.self_attn\", \"re:model[.]layers[.][0-9]+[.]self_attn\", "
			       "\"re:.*layers.(1|3).self_attn\", \"re:.*layers.\\\\d.self_attn\", "
			       "\"\"]}}", &m), KVS_OK);
	assert_int_equal(m.wide_attn_layers, 2);
	assert_int_equal(m.wide_router_layers, 0);
	assert_int_equal(kvs_model_wide_params(&m), 1024000 + 2 * 1048576);
	assert_string_equal(m.wide_unread, "'model.layers.9.self_attn' and 6 more");
	/* patterns that pick layers their words do not say: a class other
	 * than [.], a number before an unescaped dot or a repeat */
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"awq\", "
			       "\"bits\": 4, \"modules_to_not_convert\": ["
			       "\"re:model\\\\.layers\\\\.[12]\\\\.self_attn\", "
			       "\"re:model\\\\.layers\\\\.[^0]\\\\.self_attn\", "
			       "\"re:.*layers\\\\.1.*self_attn\", \"re:model.layers.1..self_attn\", "
			       "\"re:model\\\\.layers\\\\.3\\\\.self_attn\"]}}", &m), KVS_OK);
	assert_int_equal(m.wide_attn_layers, 1);   /* layer 3, literally */
	assert_string_equal(m.wide_unread, "'re:model\\.layers\\.[12]\\.self_attn' and 3 more");
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"awq\", "
			       "\"bits\": 4, \"modules_to_not_convert\": [\"\"]}}", &m), KVS_OK);
	assert_string_equal(m.wide_unread, "an empty name");
	/* a router or shared experts the model lacks: none counted, said */
	assert_int_equal(parse("{" BASE ", \"quantization_config\": {\"quant_method\": \"awq\", "
			       "\"bits\": 4, \"modules_to_not_convert\": [\"model.layers.*.mlp.gate\"]}}",
			       &m), KVS_OK);
	kvs_model_wide_layers(&m, &na, &nr, &ns);
	assert_int_equal(nr, 0);
	assert_string_equal(m.wide_unread, "routers (the model has none)");

	/* what names no part kvsim counts apart (an MoE layer's MLP: its
	 * experts) is counted narrow and said; one projection of every
	 * layer's attention is counted; bitsandbytes' own list; lm_head
	 * listed keeps the head wide though GPTQ's flag quantises it */
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": "
			       "\"bitsandbytes\", \"load_in_4bit\": true, \"llm_int8_skip_modules\": "
			       "[\"model.layers.0.mlp\", \"model.layers.*.self_attn.q_proj\", "
			       "\"shared_expert\"]}}", &m), KVS_OK);
	assert_int_equal(m.wide_attn_layers, 0);
	assert_int_equal(m.wide_shared_layers, KVS_WIDE_ALL);
	/* (Mixtral has no shared experts: none are counted, and it is said) */
	kvs_model_wide_layers(&m, &na, &nr, &ns);
	assert_int_equal(ns, 0);
	assert_int_equal(m.wide_proj_layers[KVS_PROJ_Q], KVS_WIDE_ALL);
	assert_string_equal(m.wide_unread, "'model.layers.0.mlp'; shared experts "
			    "(the model has none)");
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"gptq\", "
			       "\"bits\": 4, \"lm_head\": true, \"modules_to_not_convert\": "
			       "[\"lm_head\"]}}", &m), KVS_OK);
	assert_false(m.quant_lm_head);
	assert_true(m.wide_lm_head_conflict);
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"gptq\", "
			       "\"bits\": 4, \"lm_head\": true}}", &m), KVS_OK);
	assert_true(m.quant_lm_head);
	assert_int_equal(kvs_model_wide_params(&m), 512000);

	/* a list that is no list, a name that is no string */
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"mxfp4\", "
			       "\"modules_to_not_convert\": \"lm_head\"}}", &m), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "quantization_config.modules_to_not_convert"));
	assert_int_equal(parse("{" MOE4 ", \"quantization_config\": {\"quant_method\": \"mxfp4\", "
			       "\"ignore\": [\"lm_head\", 3]}}", &m), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "quantization_config.ignore[1]"));
}

/* Projections and dense MLPs kept at 16 bits one by one, on a 4-layer
 * Llama-shaped dense model whose figures are derived by hand: hidden 64,
 * 4 heads of 16, 2 kv heads, intermediate 128, vocab 100, untied, FP8.
 *   q, o       64 x 64                                  =  4,096 each
 *   k, v       64 x 2 x 16                              =  2,048 each
 *   gate, up   64 x 128                                 =  8,192 each
 *   down       128 x 64                                 =  8,192
 *   a layer    12,288 + 24,576 + norms 128              = 36,992
 *   total      4 x 36,992 + embeddings and head 12,800 + 64 = 160,832
 * At FP8 every parameter kept at 16 bits costs one byte more. */
#define DENSE4 "\"model_type\": \"llama\", \"num_hidden_layers\": 4, " \
	       "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"hidden_size\": 64, " \
	       "\"intermediate_size\": 128, \"vocab_size\": 100"
#define FP8_KEEP(list) "{" DENSE4 ", \"quantization_config\": {\"quant_method\": " \
		       "\"fbgemm_fp8\", \"modules_to_not_convert\": [" list "]}}"

static uint64_t fp8_bytes(const kvs_model *m)
{
	uint64_t w = 0;
	assert_int_equal(kvs_weight_bytes(m, KVS_DTYPE_FP8, 1, 1, &w), KVS_OK);
	return w;
}

/* A tiny SigLIP tower under Gemma 3's top level, by hand: hidden 8, MLP
 * 16, 2 layers, 8 x 8 images in 4 x 4 patches (4 patches), 3 channels:
 *   patch convolution 3 x 4 x 4 x 8 + 8 = 392, positions 4 x 8 = 32
 *   a layer: two LayerNorms 2 x 16, q, k, v, o 4 x (64 + 8) = 288,
 *            fc1 8 x 16 + 16 = 144, fc2 16 x 8 + 8 = 136: 600
 *   final LayerNorm 16: tower 392 + 32 + 2 x 600 + 16 = 1,640
 *   SigLIP's pooling head (vision_use_head absent: true): probe 8,
 *            packed q/k/v 3 x 64 + 24, out 64 + 8, LayerNorm 16, MLP 280: 592
 *   Gemma 3's projector into hidden 64: RMSNorm 8 + 8 x 64 = 520
 * The text model is DENSE4 (160,832). */
#define SIGLIP(extra) "\"vision_config\": {\"model_type\": \"siglip_vision_model\", " \
		      "\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, " \
		      "\"image_size\": 8, \"patch_size\": 4" extra "}"
#define GEMMA3_TINY(extra, more) "{\"model_type\": \"gemma3\", \"torch_dtype\": \"bfloat16\", " \
				 "\"text_config\": {" DENSE4 "}, " SIGLIP(extra) more "}"

/* Fields a config leaves out take the text model's config class defaults,
 * as transformers fills them: LlamaConfig's and MistralConfig's shapes. */
static void test_text_defaults(void **state)
{
	(void)state;
	kvs_model m;
	/* a bare Mistral config is Mistral-7B (the mistral-7b preset's
	 * 7,241,732,096), its 4,096-token window included */
	assert_int_equal(parse("{\"model_type\": \"mistral\"}", &m), KVS_OK);
	assert_int_equal(m.num_params, 7241732096ull);
	assert_int_equal(m.num_kv_heads, 8);
	assert_int_equal(m.sliding_window, 4096);
	assert_int_equal(m.max_position_embeddings, 131072);
	/* llava-hf/llava-1.5-7b-hf's config as published: its text_config
	 * writes only the vocabulary and positions, LlamaConfig gives the
	 * rest (32 layers of 4096, 32 heads, MLP 11008); with its CLIP tower,
	 * the llava-1.5-7b preset's count */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {\"model_type\": "
			       "\"llama\", \"vocab_size\": 32064, \"max_position_embeddings\": 4096}, "
			       "\"vision_config\": {\"model_type\": \"clip_vision_model\", "
			       "\"hidden_size\": 1024, \"intermediate_size\": 4096, "
			       "\"num_hidden_layers\": 24, \"image_size\": 336, \"patch_size\": 14}}",
			       &m), KVS_OK);
	assert_int_equal(m.num_params, 7063427072ull);
	assert_int_equal(m.num_kv_heads, 32);
	assert_int_equal(m.max_position_embeddings, 4096);
	/* what the config writes wins, at either level */
	assert_int_equal(parse("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
			       "\"hidden_size\": 64, \"num_attention_heads\": 4, "
			       "\"intermediate_size\": 128, \"vocab_size\": 100}", &m), KVS_OK);
	assert_int_equal(m.num_layers, 2);
	assert_int_equal(m.max_position_embeddings, 2048);
	assert_int_equal(parse("{\"model_type\": \"mistral\", \"sliding_window\": null, "
			       "\"num_key_value_heads\": 4}", &m), KVS_OK);
	assert_int_equal(m.sliding_window, 0);
	assert_int_equal(m.num_kv_heads, 4);
	/* a null alias is a value too: no default window */
	assert_int_equal(parse("{\"model_type\": \"mistral\", \"sliding_window_size\": null}", &m),
			 KVS_OK);
	assert_int_equal(m.sliding_window, 0);
	/* a text_config without its model_type is the wrapper's default
	 * language model: LLaVA's Llama (untied, as LlamaConfig) */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {\"vocab_size\": 32064, "
			       "\"max_position_embeddings\": 4096}, \"vision_config\": {\"model_type\": "
			       "\"clip_vision_model\", \"hidden_size\": 1024, \"intermediate_size\": 4096, "
			       "\"num_hidden_layers\": 24, \"image_size\": 336, \"patch_size\": 14}}",
			       &m), KVS_OK);
	assert_int_equal(m.num_params, 7063427072ull);
	assert_false(m.tie_word_embeddings);
	/* Mistral 3's Mistral, none given at all: Mistral-7B's shapes */
	assert_int_equal(parse("{\"model_type\": \"mistral3\"}", &m), KVS_OK);
	assert_int_equal(m.num_params, 7241732096ull);
	/* other families name what is missing, as before */
	expect_error("{\"model_type\": \"qwen2\"}", KVS_ERR_PARSE,
		     "missing field 'num_hidden_layers'");
}

/* vLLM's profile run of a vision tower (memory.c's encoder_profile),
 * derived by hand on tiny towers. */
static void test_vision_profile(void **state)
{
	(void)state;
	kvs_model m;
	/* Gemma 3's SigLIP: 8 wide, fc1/fc2 of 16, 64-pixel images in 4-pixel
	 * patches (256 patches of 3 x 4^2 = 48 pixels), 2 embeddings an
	 * image written with four tokens more */
	assert_int_equal(parse("{\"model_type\": \"gemma3\", \"torch_dtype\": \"bfloat16\", "
			       "\"mm_tokens_per_image\": 2, \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"siglip_vision_model\", "
			       "\"hidden_size\": 8, \"intermediate_size\": 16, "
			       "\"num_hidden_layers\": 2, \"image_size\": 64, \"patch_size\": 4, "
			       "\"vision_use_head\": false}}", &m), KVS_OK);
	const kvs_vision_profile *vp = &m.vision_profile;
	assert_int_equal(vp->width, 8);
	assert_int_equal(vp->mlp_width, 16);
	assert_false(vp->mlp_gated);
	assert_int_equal(vp->item_patches, 256);
	assert_int_equal(vp->item_pixels, 48);
	assert_int_equal(vp->item_embeds, 2);
	assert_int_equal(vp->item_tokens, 6);
	assert_true(vp->has_tower && !vp->takes_video);
	assert_int_equal(vp->attr_layers, 2);
	assert_int_equal(vp->attr_hidden, 8);
	kvs_gpu g;
	memset(&g, 0, sizeof g);
	g.mem_bytes = 1ull << 30;
	kvs_deploy d;
	kvs_mem_terms t;
	kvs_deploy_defaults(&d, &m, &g);
	/* one token, one sequence: budget max(1, 6) holds one image; a patch
	 * holds 2 x 8 + max(4 x 8, 2 x 16) + 48 = 96 values, so the peak is
	 * 96 x 256 x 2 B = 49,152.  The text model's terms: a token's
	 * 2 x 64 + max((2 x 4 + 2 x 2) x 16, 3 x 128) = 512 values x 2 B, and
	 * one row of 100 logits x 8 B: 1,824.  The embeddings kept, 2 x 64 x
	 * 2 B = 256, are less than the 47,328 above */
	d.max_num_batched_tokens = 1;
	d.max_num_seqs = 1;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.activation_bytes + t.sampler_bytes, 1824);
	assert_int_equal(t.encoder_items, 1);
	assert_int_equal(t.encoder_patches, 256);
	assert_int_equal(t.encoder_peak_bytes, 49152);
	assert_int_equal(t.encoder_out_bytes, 256);
	assert_int_equal(t.encoder_bytes, 49152 - 1824);
	assert_true(t.counted & KVS_MEM_ENCODER);
	assert_int_equal(kvs_reserve_estimate(&d), t.rope_cache_bytes + 1824 +
			 t.non_torch_bytes + 49152 - 1824);
	/* tp 2 splits attention and the MLP: 16 + max(16, 16) + 48 = 80 */
	d.tp = 2;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_peak_bytes, 80 * 256 * 2);
	d.tp = 1;
	/* 20 tokens: 20 / 6 = 3 images, 768 patches, peak 147,456; the text
	 * terms (20,480 + 800) leave 126,176 */
	d.max_num_batched_tokens = 20;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 3);
	assert_int_equal(t.encoder_peak_bytes, 96 * 768 * 2);
	assert_int_equal(t.encoder_bytes, 96 * 768 * 2 - 20480 - 800);
	/* 4,000 tokens: 666 images, 170,496 patches, a peak of 32,735,232
	 * against text terms of 4,096,000 + 800 (max_model_len 8,192: one
	 * prompt may hold 1,365 images) */
	d.max_num_batched_tokens = 4000;
	d.max_model_len = 8192;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 666);
	assert_int_equal(t.encoder_bytes, 32735232 - 4096000 - 800);
	/* the decoder's cap: one sequence of max(1, min(limit, 8,192 / 6))
	 * images; max_model_len 3 still holds one */
	d.mm_image_limit = 100;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 100);
	d.max_model_len = 3;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 1);
	d.max_num_seqs = 7;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 7);
	/* image=0 on a tower without videos: no term; 0 stored is the
	 * default */
	d.mm_image_limit = KVS_MM_LIMIT_ZERO;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 0);
	assert_int_equal(t.encoder_bytes, 0);
	assert_false(t.counted & KVS_MEM_ENCODER);
	assert_false(kvs_deploy_mm_profiled(&d));
	d.mm_image_limit = 0;
	assert_true(kvs_deploy_mm_profiled(&d));
	d.skip_mm_profiling = true;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_bytes, 0);
	d.skip_mm_profiling = false;
	d.max_model_len = 8192;
	d.max_num_seqs = 1;
	/* other engines: no term */
	d.engine = KVS_ENGINE_SGLANG;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 0);
	assert_int_equal(t.encoder_bytes, 0);
	d.engine = KVS_ENGINE_TRTLLM;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_bytes, 0);
	assert_true(t.vlm_factor == 1.0);
	/* SGLang's default fraction for a vision model: this tower, 2 layers
	 * of 8, is far below ViT-L/14, so the factor is held at 1.05: 0.95 x
	 * 1.05 = 0.9975; a fraction given takes none */
	d.engine = KVS_ENGINE_SGLANG;
	kvs_mem_terms_compute(&d, &t);
	assert_true(fabs(t.vlm_factor - 0.9975) < 1e-12);
	double with = t.fraction;
	kvs_deploy text = d;   /* no vision_config */
	memset(&text.model.vision_profile, 0, sizeof text.model.vision_profile);
	kvs_mem_terms_compute(&text, &t);
	assert_true(t.vlm_factor == 1.0);
	assert_true(fabs(with - t.fraction * 0.9975) < 1e-12);
	d.mem_fraction_static = 0.5;
	kvs_mem_terms_compute(&d, &t);
	assert_true(t.vlm_factor == 1.0 && t.fraction == 0.5);
	d.mem_fraction_static = 0;
	expect_error("{\"model_type\": \"gemma3\", \"mm_tokens_per_image\": 0, "
		     "\"text_config\": {" DENSE4 "}, " SIGLIP("") "}", KVS_ERR_PARSE,
		     "field 'mm_tokens_per_image': 0 is out of range");
	/* Gemma 3's default, 256 embeddings in 260 tokens; 8-pixel images,
	 * 4 patches: at 260 tokens and one sequence the peak (96 x 4 x 2 B =
	 * 768) is below the text terms (266,240 + 800), so the kept
	 * embeddings count, 256 x 64 x 2 B */
	assert_int_equal(parse(GEMMA3_TINY("", ""), &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_tokens, 260);
	kvs_deploy_defaults(&d, &m, &g);
	d.max_num_batched_tokens = 260;
	d.max_num_seqs = 1;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 1);
	assert_int_equal(t.encoder_peak_bytes, 768);
	assert_int_equal(t.activation_bytes + t.sampler_bytes, 266240 + 800);
	assert_int_equal(t.encoder_bytes, 256 * 64 * 2);
	/* a SigLIP tower under PaliGemma: not modelled */
	assert_int_equal(parse("{\"model_type\": \"paligemma\", \"text_config\": {" DENSE4 "}, "
			       SIGLIP("") "}", &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_tokens, 0);
	kvs_deploy_defaults(&d, &m, &g);
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 0);
	/* LLaVA's CLIP: 8-pixel images in 4-pixel patches, 4 patches and the
	 * class token; 4 tokens ("default" drops the class token), 5 with
	 * "full"; CLIP under another model: not modelled */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"clip_vision_model\", "
			       "\"image_size\": 8, \"patch_size\": 4}}", &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_patches, 5);
	assert_int_equal(m.vision_profile.item_tokens, 4);
	assert_int_equal(parse("{\"model_type\": \"llava\", \"vision_feature_select_strategy\": "
			       "\"full\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"clip_vision_model\", "
			       "\"image_size\": 8, \"patch_size\": 4}}", &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_tokens, 5);
	expect_error("{\"model_type\": \"llava\", \"vision_feature_select_strategy\": 1, "
		     "\"text_config\": {" DENSE4 "}, \"vision_config\": {\"model_type\": "
		     "\"clip_vision_model\"}}", KVS_ERR_PARSE,
		     "field 'vision_feature_select_strategy': expected a string");
	/* Pixtral under LLaVA: 16-pixel images in 4-pixel patches, 4 rows of
	 * 4 and a break: 20 tokens, 16 embeddings; under Mistral 3 with
	 * merge 2: 2 rows of 2 and a break, 6 tokens */
#define PIXTRAL_TINY(top) "{\"model_type\": " top ", \"text_config\": {" DENSE4 "}, " \
			  "\"vision_config\": {\"model_type\": \"pixtral\", " \
			  "\"hidden_size\": 8, \"intermediate_size\": 16, " \
			  "\"image_size\": 16, \"patch_size\": 4}}"
	assert_int_equal(parse(PIXTRAL_TINY("\"llava\""), &m), KVS_OK);
	assert_true(m.vision_profile.mlp_gated);
	assert_int_equal(m.vision_profile.item_patches, 16);
	assert_int_equal(m.vision_profile.item_tokens, 20);
	assert_int_equal(m.vision_profile.item_embeds, 16);
	assert_int_equal(parse(PIXTRAL_TINY("\"mistral3\", \"spatial_merge_size\": 2"), &m),
			 KVS_OK);
	assert_int_equal(m.vision_profile.item_tokens, 6);
	assert_int_equal(m.vision_profile.item_embeds, 4);
	/* merge 3 over 4 patches a side: 2 rows, rounded up as vLLM does */
	assert_int_equal(parse(PIXTRAL_TINY("\"mistral3\", \"spatial_merge_size\": 3"), &m),
			 KVS_OK);
	assert_int_equal(m.vision_profile.item_tokens, 6);
#undef PIXTRAL_TINY
	/* InternVL's chat format: 16-pixel tiles in 4-pixel patches (16 and a
	 * class token), downsample 0.5: 4 embeddings a tile; without
	 * dynamic_image_size one tile (4 + 2 tokens); with it 3 tiles and a
	 * thumbnail (16 + 2), 68 patches; a Qwen2 language model takes
	 * videos */
#define INTERNVL_TINY(extra) "{\"model_type\": \"internvl_chat\", \"downsample_ratio\": 0.5" \
			     extra ", \"llm_config\": {" DENSE4 "}, \"vision_config\": " \
			     "{\"model_type\": \"intern_vit_6b\", \"hidden_size\": 8, " \
			     "\"intermediate_size\": 16, \"num_hidden_layers\": 2, " \
			     "\"image_size\": 16, \"patch_size\": 4}}"
	assert_int_equal(parse(INTERNVL_TINY(""), &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_patches, 17);
	assert_int_equal(m.vision_profile.item_tokens, 6);
	assert_false(m.vision_profile.takes_video);
	assert_int_equal(parse(INTERNVL_TINY(", \"dynamic_image_size\": true, "
					     "\"max_dynamic_patch\": 3, \"use_thumbnail\": true"),
			       &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_patches, 68);
	assert_int_equal(m.vision_profile.item_embeds, 16);
	assert_int_equal(m.vision_profile.item_tokens, 18);
	/* one tile and a thumbnail is still one tile */
	assert_int_equal(parse(INTERNVL_TINY(", \"dynamic_image_size\": true, "
					     "\"max_dynamic_patch\": 1, \"use_thumbnail\": true"),
			       &m), KVS_OK);
	assert_int_equal(m.vision_profile.item_patches, 17);
#undef INTERNVL_TINY
	/* the Qwen-VL towers: the processors' largest image, 12,845,056
	 * pixels in patches of 2 x 2 (3,211,264), merge^2 of them a token,
	 * rounded down: 356,807 tokens of 9 patches at merge 3; Qwen2-VL's
	 * fc1/fc2 of embed_dim x mlp_ratio, Qwen2.5-VL's gated MLP */
	assert_int_equal(parse("{\"model_type\": \"qwen2_vl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"depth\": 2, \"embed_dim\": 8, "
			       "\"mlp_ratio\": 2, \"in_chans\": 3, \"patch_size\": 2, "
			       "\"temporal_patch_size\": 1, \"spatial_merge_size\": 3, "
			       "\"hidden_size\": 6}}", &m), KVS_OK);
	assert_int_equal(vp->width, 8);
	assert_int_equal(vp->mlp_width, 16);
	assert_false(vp->mlp_gated);
	assert_int_equal(vp->item_patches, 356807 * 9);
	assert_int_equal(vp->item_pixels, 12);
	assert_int_equal(vp->item_tokens, 356807);
	assert_int_equal(vp->item_embeds, 356807);
	/* what SGLang reads: no num_hidden_layers (24), hidden_size 6 */
	assert_true(vp->takes_video);
	assert_int_equal(vp->attr_layers, 24);
	assert_int_equal(vp->attr_hidden, 6);
	assert_int_equal(parse("{\"model_type\": \"qwen2_5_vl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"qwen2_5_vl\", \"depth\": 2, "
			       "\"hidden_size\": 8, \"intermediate_size\": 12, \"in_channels\": 3, "
			       "\"patch_size\": 2, \"temporal_patch_size\": 2, "
			       "\"spatial_merge_size\": 2, \"out_hidden_size\": 6}}", &m), KVS_OK);
	assert_int_equal(vp->mlp_width, 12);
	assert_true(vp->mlp_gated);
	assert_int_equal(vp->item_patches, 3211264);
	assert_int_equal(vp->item_tokens, 802816);
	assert_int_equal(vp->item_pixels, 24);
	assert_int_equal(vp->attr_layers, 24);
	assert_int_equal(vp->attr_hidden, 8);
	/* a num_hidden_layers written is read */
	assert_int_equal(parse("{\"model_type\": \"qwen2_5_vl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"num_hidden_layers\": 5}}", &m), KVS_OK);
	assert_int_equal(vp->attr_layers, 5);
	/* images off, videos on: a Qwen-VL tower is still profiled, the
	 * largest image standing in for vLLM's video; videos off too: not */
	kvs_deploy_defaults(&d, &m, &g);
	d.mm_image_limit = KVS_MM_LIMIT_ZERO;
	kvs_mem_terms_compute(&d, &t);
	assert_true(t.encoder_video && t.encoder_items == 1);
	d.mm_video_limit = KVS_MM_LIMIT_ZERO;
	kvs_mem_terms_compute(&d, &t);
	assert_int_equal(t.encoder_items, 0);
	/* a tower kvsim does not count: no weights, no profile, but SGLang
	 * scales its fraction by what it reads: 27 layers of 1152 give 0.95 x
	 * (1 - 0.1 x (1.423828125 - 1)) */
	assert_int_equal(parse("{\"model_type\": \"idefics3\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"idefics3_vision\", "
			       "\"num_hidden_layers\": 27, \"hidden_size\": 1152}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 0);
	assert_true(vp->has_tower && vp->item_tokens == 0);
	kvs_deploy_defaults(&d, &m, &g);
	d.engine = KVS_ENGINE_SGLANG;
	kvs_mem_terms_compute(&d, &t);
	assert_true(fabs(t.vlm_factor - 0.95 * (1 - 0.1 * 0.423828125)) < 1e-12);
}

static void test_vision_tower(void **state)
{
	(void)state;
	kvs_model m;
	uint64_t w = 0;
	assert_int_equal(parse(GEMMA3_TINY(", \"vision_use_head\": false", ""), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1640 + 520);
	assert_int_equal(m.num_params, 160832 + 2160);
	assert_int_equal(kvs_model_estimate_params(&m), 162992);
	/* the tower runs once per image: not in the per-token count */
	assert_int_equal(m.num_active_params, 160832);
	assert_string_equal(m.vision_unread, "");
	/* bf16: 2 bytes each; tp 2 x pp 2: the text model over 4 GPUs, the
	 * tower on the first stage over 2 (321,664 / 4 + 4,320 / 2) */
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_BF16, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 325984);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_BF16, 2, 2, &w), KVS_OK);
	assert_int_equal(w, 80416 + 2160);
	kvs_gpu g;
	memset(&g, 0, sizeof g);
	g.mem_bytes = 1ull << 30;
	kvs_deploy d;
	kvs_sizing s;
	kvs_deploy_defaults(&d, &m, &g);
	d.tp = d.pp = 2;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.weight_bytes, 82576);
	assert_int_equal(s.vision_weight_bytes, 2160);
	/* FP8 (--dtype fp8): the tower narrow with the text model, whose
	 * embeddings and head stay at 16 bits (160,832 + 12,800) */
	assert_int_equal(fp8_bytes(&m), 173632 + 2160);
	/* the pooling head counts unless vision_use_head is false */
	assert_int_equal(parse(GEMMA3_TINY("", ""), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1640 + 592 + 520);
	/* a checkpoint that keeps the tower at 16 bits says so */
	assert_int_equal(parse(GEMMA3_TINY(", \"vision_use_head\": false",
					   ", \"quantization_config\": {\"quant_method\": "
					   "\"fbgemm_fp8\", \"modules_to_not_convert\": [\"lm_head\", "
					   "\"re:.*vision_tower.*\", \"multi_modal_projector\"]}"), &m),
			 KVS_OK);
	assert_true(m.vision_wide);
	assert_string_equal(m.wide_unread, "");
	assert_int_equal(m.weight_dtype, KVS_DTYPE_FP8);
	assert_int_equal(fp8_bytes(&m), 173632 + 4320);
	/* the config's own count holds the tower */
	assert_int_equal(parse("{\"model_type\": \"gemma3\", \"kvsim_num_parameters\": 1000000, "
			       "\"text_config\": {" DENSE4 "}, "
			       SIGLIP(", \"vision_use_head\": false") "}", &m), KVS_OK);
	assert_int_equal(m.num_params, 1000000);
	assert_int_equal(m.vision_params, 2160);
	assert_int_equal(m.num_active_params, 1000000 - 2160);
	/* fewer layers (--layers): the estimate keeps the tower */
	assert_int_equal(parse(GEMMA3_TINY(", \"vision_use_head\": false", ""), &m), KVS_OK);
	m.num_layers = 2;
	assert_int_equal(kvs_model_estimate_params(&m), 160832 - 2 * 36992 + 2160);

	/* towers and projectors kvsim does not count: named, left out */
	assert_int_equal(parse("{\"model_type\": \"mllama\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"mllama_vision_model\", "
			       "\"hidden_size\": 1280}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 0);
	assert_int_equal(m.num_params, 160832);
	assert_string_equal(m.vision_unread, "vision tower of model_type 'mllama_vision_model'");
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {}}", &m), KVS_OK);
	assert_string_equal(m.vision_unread, "vision tower of model_type '(none given)'");
	assert_int_equal(parse("{\"model_type\": \"gemma3n\", \"text_config\": {" DENSE4 "}, "
			       "\"audio_config\": {\"model_type\": \"gemma3n_audio\"}}", &m), KVS_OK);
	assert_string_equal(m.vision_unread, "audio tower of model_type 'gemma3n_audio'");
	/* Llama 4's tower and projector, by hand: hidden 8, MLP 16, 2 layers,
	 * 8 x 8 images in 4 x 4 patches, 3 channels, adapter 16 x 12 and
	 * 6 x 6, vision_output_dim 10:
	 *   patches 3 x 4 x 4 x 8 = 384 (no bias), class embedding 8,
	 *   positions (4 + 1) x 8 = 40, pre and post LayerNorms 32,
	 *   layers 2 x 600 (as SigLIP's above), adapter 192 + 36:
	 *   tower 1,892; projector 10 x 64 = 640 (no bias) */
	assert_int_equal(parse("{\"model_type\": \"llama4\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"llama4_vision_model\", "
			       "\"hidden_size\": 8, \"intermediate_size\": 16, "
			       "\"num_hidden_layers\": 2, \"image_size\": 8, \"patch_size\": 4, "
			       "\"projector_input_dim\": 12, \"projector_output_dim\": 6, "
			       "\"vision_output_dim\": 10}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1892 + 640);
	assert_int_equal(m.num_params, 160832 + 2532);
	assert_int_equal(m.num_active_params, 160832);
	assert_string_equal(m.vision_unread, "");
	/* Llama4VisionConfig's defaults: hidden 768, MLP 5632, 34 layers,
	 * 448-pixel images in 14-pixel patches (1,024), adapter 5632 x 4096
	 * and 4096^2, vision_output_dim 7680: patches 451,584, class 768,
	 * positions 787,200, LayerNorms 3,072, layers 34 x 11,022,592,
	 * adapter 39,845,888 = 415,856,640; projector 7680 x 64 */
	assert_int_equal(parse("{\"model_type\": \"llama4\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"llama4_vision_model\"}}",
			       &m), KVS_OK);
	assert_int_equal(m.vision_params, 415856640ull + 491520);
	/* a tower under another model's top level: its projector is not
	 * counted, and said */
	assert_int_equal(parse("{\"model_type\": \"gemma3\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"llama4_vision_model\", "
			       "\"hidden_size\": 8, \"intermediate_size\": 16, "
			       "\"num_hidden_layers\": 2, \"image_size\": 8, \"patch_size\": 4, "
			       "\"projector_input_dim\": 12, \"projector_output_dim\": 6}}", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 1892);
	assert_string_equal(m.vision_unread, "projector of model_type 'gemma3'");
	expect_error("{\"model_type\": \"llama4\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"llama4_vision_model\", "
		     "\"vision_output_dim\": 0}}", KVS_ERR_PARSE,
		     "field 'vision_config.vision_output_dim': 0 is out of range");
	/* PaliGemma: the SigLIP tower and its projector, one linear layer
	 * with bias into the text width, 8 x 64 + 64 = 576 */
	assert_int_equal(parse("{\"model_type\": \"paligemma\", \"text_config\": {" DENSE4 "}, "
			       SIGLIP(", \"vision_use_head\": false") "}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1640 + 576);
	assert_string_equal(m.vision_unread, "");
	/* into vision_config's projection_dim (else the top level's) */
	assert_int_equal(parse("{\"model_type\": \"paligemma\", \"text_config\": {" DENSE4 "}, "
			       SIGLIP(", \"vision_use_head\": false, \"projection_dim\": 32") "}", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 1640 + 8 * 32 + 32);
	assert_int_equal(parse("{\"model_type\": \"paligemma\", \"projection_dim\": 16, "
			       "\"text_config\": {" DENSE4 "}, "
			       SIGLIP(", \"vision_use_head\": false") "}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1640 + 8 * 16 + 16);
	/* LLaVA's fields are read under LLaVA's model types only */
	assert_int_equal(parse(GEMMA3_TINY(", \"vision_use_head\": false",
					   ", \"vision_feature_layer\": \"last\", "
					   "\"spatial_merge_size\": 0"), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1640 + 520);
	/* google/paligemma-3b-pt-224's config (tests/data; Hugging Face counts its
	 * checkpoints at 2.92B), by hand: Gemma-2B's text model with 257,216
	 * tokens, tied: embeddings 526,778,368, 18 layers of q and o 2 x
	 * 2048^2, k and v 2 x 2048 x 256, MLP 3 x 2048 x 16384, norms 4,096
	 * (110,104,576), the final norm 2,048: 2,508,662,784; SigLIP
	 * So400m/14 at 224 pixels without its head: patches 3 x 14^2 x 1152
	 * + 1152 = 678,528, positions 256 x 1152 = 294,912, 27 layers of
	 * 15,239,504, the final LayerNorm 2,304: 412,442,352; the projector
	 * 1152 x 2048 + 2048 = 2,361,344.  In all 2,923,466,480. */
	assert_int_equal(kvs_model_from_json_file(KVS_SOURCE_ROOT
						  "/tests/data/paligemma-3b-pt-224.json", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 412442352ull + 2361344);
	assert_int_equal(m.num_params, 2923466480ull);

	/* Qwen2-VL's tower with its patch merger, by hand: embed_dim 8,
	 * mlp_ratio 2 (MLP 16), 2 blocks, 3 channels, 2 x 2 patches of one
	 * frame, merge 2 x 2, into hidden_size 6:
	 *   patches 3 x 1 x 2 x 2 x 8 = 96 (no bias)
	 *   a block as a ViT layer above: 600
	 *   merger: LayerNorm 16, 32 x 32 + 32 = 1,056, 32 x 6 + 6 = 198
	 *   in all 96 + 1,200 + 1,270 = 2,566 */
#define QWEN2VL_TOWER(ratio) "\"vision_config\": {\"depth\": 2, \"embed_dim\": 8, " \
			     "\"mlp_ratio\": " ratio ", \"in_chans\": 3, \"patch_size\": 2, " \
			     "\"temporal_patch_size\": 1, \"spatial_merge_size\": 2, " \
			     "\"hidden_size\": 6}"
	assert_int_equal(parse("{\"model_type\": \"qwen2_vl\", \"text_config\": {" DENSE4 "}, "
			       QWEN2VL_TOWER("2") "}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 2566);
	assert_int_equal(m.num_params, 160832 + 2566);
	assert_int_equal(m.num_active_params, 160832);
	assert_string_equal(m.vision_unread, "");
	/* a ratio of 2.5: an MLP of 20 (truncated as transformers does),
	 * a block 4 x 72 + 2 x 8 x 20 + 20 + 8 + 32 = 668 */
	assert_int_equal(parse("{\"model_type\": \"qwen2_vl\", \"text_config\": {" DENSE4 "}, "
			       QWEN2VL_TOWER("2.5") "}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 96 + 2 * 668 + 1270);
	/* Qwen2VLVisionConfig's defaults are Qwen2-VL-7B's tower */
	assert_int_equal(parse("{\"model_type\": \"qwen2_vl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"qwen2_vl\"}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 675759104ull);
	/* Qwen2.5-VL's, by hand: hidden 8, gated MLP 12, the rest as above:
	 *   a block: two RMSNorms 16, q/k/v and output 288, gate and up
	 *   2 x (96 + 12) = 216, down 96 + 8 = 104: 624
	 *   merger: RMSNorm 8, 1,056, 198: 1,262
	 *   in all 96 + 1,248 + 1,262 = 2,606 */
	assert_int_equal(parse("{\"model_type\": \"qwen2_5_vl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"qwen2_5_vl\", \"depth\": 2, "
			       "\"hidden_size\": 8, \"intermediate_size\": 12, \"in_channels\": 3, "
			       "\"patch_size\": 2, \"temporal_patch_size\": 1, "
			       "\"spatial_merge_size\": 2, \"out_hidden_size\": 6}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 2606);
	assert_string_equal(m.vision_unread, "");
	/* the family's text model at the top level: q, k and v biases
	 * (64 + 2 x 32 a layer) and untied embeddings */
	assert_int_equal(parse("{\"model_type\": \"qwen2_5_vl\", \"num_hidden_layers\": 4, "
			       "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
			       "\"hidden_size\": 64, \"intermediate_size\": 128, "
			       "\"vocab_size\": 100, \"vision_config\": {\"depth\": 0, "
			       "\"hidden_size\": 8, \"intermediate_size\": 12, "
			       "\"patch_size\": 2, \"temporal_patch_size\": 1, "
			       "\"out_hidden_size\": 64}}", &m), KVS_OK);
	assert_true(m.qkv_bias && !m.tie_word_embeddings);
	assert_int_equal(m.vision_params, 96 + 8 + 32 * 33 + 32 * 64 + 64);
	assert_int_equal(m.num_params, 160832 + 4 * 128 + m.vision_params);
	expect_error("{\"model_type\": \"qwen2_vl\", \"text_config\": {" DENSE4 "}, "
		     QWEN2VL_TOWER("\"x\"") "}", KVS_ERR_PARSE,
		     "field 'vision_config.mlp_ratio': expected a number");
	expect_error("{\"model_type\": \"qwen2_vl\", \"text_config\": {" DENSE4 "}, "
		     QWEN2VL_TOWER("0.01") "}", KVS_ERR_PARSE,
		     "field 'vision_config.mlp_ratio': embed_dim x mlp_ratio is below 1");
	expect_error("{\"model_type\": \"qwen2_5_vl\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"spatial_merge_size\": 0}}", KVS_ERR_PARSE,
		     "field 'vision_config.spatial_merge_size': 0 is out of range");
#undef QWEN2VL_TOWER

	/* Qwen3-VL's tower with its mergers, by hand: hidden 8, MLP 12 (fc1
	 * and fc2), 2 blocks, 3 channels, 2 x 2 patches of one frame, 4
	 * positions, merge 2 x 2 into 6, deepstack after blocks 0 and 1:
	 *   patches 96 and their bias 8, positions 4 x 8 = 32
	 *   a block 4 x 72 + 2 x 8 x 12 + 12 + 8 + 32 = 532
	 *   merger: LayerNorm 16, 32 x 32 + 32 = 1,056, 32 x 6 + 6 = 198
	 *   a deepstack merger: LayerNorm over 32 (64), 1,056, 198
	 *   in all 104 + 32 + 1,064 + 1,270 + 2 x 1,318 = 5,106 */
#define QWEN3VL_TOWER(type, deep) "\"vision_config\": {" type "\"depth\": 2, " \
				  "\"hidden_size\": 8, \"intermediate_size\": 12, " \
				  "\"in_channels\": 3, \"patch_size\": 2, " \
				  "\"temporal_patch_size\": 1, \"spatial_merge_size\": 2, " \
				  "\"out_hidden_size\": 6, \"num_position_embeddings\": 4" deep "}"
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl\", \"text_config\": {" DENSE4 "}, "
			       QWEN3VL_TOWER("\"model_type\": \"qwen3_vl\", ",
					     ", \"deepstack_visual_indexes\": [0, 1]") "}", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 5106);
	assert_int_equal(m.num_params, 160832 + 5106);
	assert_int_equal(m.num_active_params, 160832);
	assert_string_equal(m.vision_unread, "");
	/* no model_type of its own (the top level's names it), transformers
	 * 5's qwen3_vl_vision, Qwen3-VL-MoE's: the same tower; without the
	 * list, Qwen3VLVisionConfig's three deepstack mergers; an empty list,
	 * none */
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl_moe\", \"text_config\": {" DENSE4 "}, "
			       QWEN3VL_TOWER("", ", \"deepstack_visual_indexes\": [1, 0]") "}",
			       &m), KVS_OK);
	assert_int_equal(m.vision_params, 5106);
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl\", \"text_config\": {" DENSE4 "}, "
			       QWEN3VL_TOWER("\"model_type\": \"qwen3_vl_vision\", ", "") "}", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 5106 + 1318);
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl\", \"text_config\": {" DENSE4 "}, "
			       QWEN3VL_TOWER("", ", \"deepstack_visual_indexes\": []") "}", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 5106 - 2 * 1318);
	/* Qwen3VLVisionConfig's defaults: Qwen3-VL-8B's tower merging into
	 * 3584 (each merger's fc2 4608 x 3584 + 3584): 1,770,624 + 2,654,208
	 * + 411,466,608 + 37,759,232 + 3 x 37,766,144 = 566,949,104 */
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"qwen3_vl\"}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 566949104ull);
	/* one merger per entry, as transformers builds them, whatever block
	 * it names (a toy config's indexes past its depth included); Qwen3-VL-
	 * MoE's tower named by its own type */
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl_moe\", \"text_config\": {" DENSE4 "}, "
			       QWEN3VL_TOWER("\"model_type\": \"qwen3_vl_moe_vision\", ",
					     ", \"deepstack_visual_indexes\": [8, 16, 24, 0]") "}",
			       &m), KVS_OK);
	assert_int_equal(m.vision_params, 5106 + 2 * 1318);
	expect_error("{\"model_type\": \"qwen3_vl\", \"text_config\": {" DENSE4 "}, "
		     QWEN3VL_TOWER("", ", \"deepstack_visual_indexes\": 8") "}", KVS_ERR_PARSE,
		     "field 'vision_config.deepstack_visual_indexes': expected a list of "
		     "block indexes");
	expect_error("{\"model_type\": \"qwen3_vl\", \"text_config\": {" DENSE4 "}, "
		     QWEN3VL_TOWER("", ", \"deepstack_visual_indexes\": [0, \"2\"]") "}",
		     KVS_ERR_PARSE,
		     "field 'vision_config.deepstack_visual_indexes'[1]: expected an integer");
#undef QWEN3VL_TOWER
	/* InternVL's chat config: the text model under llm_config, InternViT,
	 * and mlp1.  By hand, hidden 8, MLP 12, 2 layers, 4 x 4 images in
	 * 2 x 2 patches (4 patches and the class token), 3 channels:
	 *   patches (3 x 2 x 2 + 1) x 8 = 104, class embedding 8, positions
	 *   5 x 8 = 40
	 *   a layer with LayerNorms, q/k/v biases, no q/k norms:
	 *     q/k/v 3 x 64 + 24, output 64 + 8, MLP 2 x 8 x 12 + 12 + 8,
	 *     norms 4 x 8, layer scales 2 x 8 = 548; tower 152 + 2 x 548 = 1,248
	 *   mlp1 at downsample_ratio 0.5 (2 x 2 patches side by side, 32 wide)
	 *     into hidden 64: LayerNorm 64, 32 x 64 + 64, 64 x 64 + 64 = 6,336 */
#define IVL(top, tower) "{\"model_type\": \"internvl_chat\", \"llm_config\": {" DENSE4 "}, " \
			top "\"vision_config\": {\"model_type\": \"intern_vit_6b\", " \
			"\"hidden_size\": 8, \"intermediate_size\": 12, " \
			"\"num_hidden_layers\": 2, \"image_size\": 4, \"patch_size\": 2" tower "}}"
	assert_int_equal(parse(IVL("\"downsample_ratio\": 0.5, ",
				   ", \"norm_type\": \"layer_norm\", \"qkv_bias\": true, "
				   "\"qk_normalization\": false"), &m), KVS_OK);
	assert_int_equal(m.num_layers, 4);
	assert_int_equal(m.vision_params, 1248 + 6336);
	assert_int_equal(m.num_params, 160832 + 1248 + 6336);
	assert_int_equal(m.num_active_params, 160832);
	assert_string_equal(m.vision_unread, "");
	/* InternVisionConfig's defaults (InternViT-6B's layers): RMSNorms,
	 * q and k normalised, no q/k/v biases: a layer 192 + 16 + 72 + 212 +
	 * 16 + 16 = 524; downsample_ratio 0.25 puts 4 x 4 patches side by
	 * side (128 wide): 256 + 128 x 64 + 64 + 4,160 = 12,672 */
	assert_int_equal(parse(IVL("\"downsample_ratio\": 0.25, ", ""), &m), KVS_OK);
	assert_int_equal(m.vision_params, 152 + 2 * 524 + 12672);
	/* no downsample_ratio: InternVLChatConfig's 0.5 */
	assert_int_equal(parse(IVL("", ""), &m), KVS_OK);
	assert_int_equal(m.vision_params, 152 + 2 * 524 + 6336);
	/* every field defaulted: InternViT-6B at 224 pixels (48 layers of
	 * 3200, MLP 12800, 14-pixel patches): patches 589 x 3200, class
	 * 3200, positions 257 x 3200, layers 48 x 122,918,400 =
	 * 5,900,083,200: 5,902,793,600; mlp1 from 12800 into 64: 25,600 +
	 * 819,264 + 4,160 */
	assert_int_equal(parse("{\"model_type\": \"internvl_chat\", \"llm_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"intern_vit_6b\"}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 5902793600ull + 849024);
	expect_error(IVL("", ", \"norm_type\": \"batch_norm\""), KVS_ERR_PARSE,
		     "field 'vision_config.norm_type': expected \"rms_norm\" or \"layer_norm\", "
		     "got \"batch_norm\"");
	expect_error(IVL("", ", \"qkv_bias\": 1"), KVS_ERR_PARSE,
		     "field 'vision_config.qkv_bias': expected true or false");
	expect_error(IVL("\"downsample_ratio\": 0, ", ""), KVS_ERR_PARSE,
		     "field 'downsample_ratio': expected a number in (1/64, 1], got 0");
	expect_error(IVL("\"downsample_ratio\": \"0.5\", ", ""), KVS_ERR_PARSE,
		     "field 'downsample_ratio': expected a number in (1/64, 1], got \"0.5\"");
	/* mlp1 into a text model 2^32 - 1 wide: the count past 64 bits is
	 * refused, not wrapped */
	expect_error("{\"model_type\": \"internvl_chat\", \"llm_config\": {\"model_type\": "
		     "\"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 65537, "
		     "\"hidden_size\": 4294967295, \"intermediate_size\": 1, \"vocab_size\": 1}, "
		     "\"vision_config\": {\"model_type\": \"intern_vit_6b\", \"hidden_size\": 8, "
		     "\"intermediate_size\": 12, \"num_hidden_layers\": 1, \"image_size\": 4, "
		     "\"patch_size\": 2}}", KVS_ERR_OVERFLOW,
		     "the vision tower's parameter count does not fit in 64 bits");
	expect_error("{\"model_type\": \"internvl_chat\", \"llm_config\": \"qwen2\"}",
		     KVS_ERR_PARSE, "field 'llm_config': expected an object");
	expect_error("{\"model_type\": \"llava\", \"text_config\": [1]}",
		     KVS_ERR_PARSE, "field 'text_config': expected an object");
#undef IVL
	/* transformers' own InternVL format (internvl, an internvl_vision
	 * tower under text_config's model): the same weights, with
	 * InternVLVisionConfig's defaults (LayerNorms, no q/k/v biases, no
	 * q/k norms): the toy tower's layer 192 + 72 + 212 + 32 + 16 = 524,
	 * 24 more with attention_bias (or qkv_bias): 1,248 as above; a mask
	 * token 8, a LayerNorm after the last layer 16 (use_mean_pooling
	 * false), no positions -40; 4 x 6 images in 2 x 3 patches: the
	 * convolution (3 x 6 + 1) x 8 = 152, still 4 patches */
#define IVLHF(tower) "{\"model_type\": \"internvl\", \"text_config\": {" DENSE4 "}, " \
		     "\"vision_config\": {\"model_type\": \"internvl_vision\", " \
		     "\"hidden_size\": 8, \"intermediate_size\": 12, " \
		     "\"num_hidden_layers\": 2, \"image_size\": [4, 4], \"patch_size\": 2" tower "}}"
	assert_int_equal(parse(IVLHF(", \"attention_bias\": true"), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1248 + 6336);
	assert_int_equal(m.num_params, 160832 + 1248 + 6336);
	assert_int_equal(parse(IVLHF(", \"qkv_bias\": true"), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1248 + 6336);
	assert_int_equal(parse(IVLHF(""), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1248 - 2 * 24 + 6336);
	assert_int_equal(parse(IVLHF(", \"use_mask_token\": true, \"use_mean_pooling\": false, "
				     "\"use_absolute_position_embeddings\": false"), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1200 + 8 + 16 - 40 + 6336);
	assert_int_equal(parse("{\"model_type\": \"internvl\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"internvl_vision\", "
			       "\"hidden_size\": 8, \"intermediate_size\": 12, "
			       "\"num_hidden_layers\": 2, \"image_size\": [4, 6], "
			       "\"patch_size\": [2, 3]}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 152 + 8 + 40 + 2 * 524 + 6336);
	expect_error(IVLHF(", \"use_qk_norm\": \"yes\""), KVS_ERR_PARSE,
		     "field 'vision_config.use_qk_norm': expected true or false");
	expect_error("{\"model_type\": \"internvl\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"internvl_vision\", "
		     "\"image_size\": [448]}}", KVS_ERR_PARSE,
		     "field 'vision_config.image_size': expected an integer or two in "
		     "[1, 1048576], got [448]");
	expect_error("{\"model_type\": \"internvl\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"internvl_vision\", "
		     "\"image_size\": 8, \"patch_size\": [4, 16]}}", KVS_ERR_PARSE,
		     "field 'vision_config.patch_size': larger than image_size");
#undef IVLHF
	/* InternVL3-1B in that format (its "-hf" checkpoint's shapes): the
	 * same 938,193,024 as the chat config's below; and with a text_config
	 * without its model_type and the tower's fields left to
	 * InternVLVisionConfig's defaults: InternVLConfig's Qwen2 (q/k/v
	 * biases, untied), the same count */
#define IVL1B(type, tower) "{\"model_type\": \"internvl\", \"downsample_ratio\": 0.5, " \
			   "\"text_config\": {" type "\"hidden_size\": 896, " \
			   "\"intermediate_size\": 4864, \"num_hidden_layers\": 24, " \
			   "\"num_attention_heads\": 14, \"num_key_value_heads\": 2, " \
			   "\"vocab_size\": 151674}, \"vision_config\": {\"model_type\": " \
			   "\"internvl_vision\", \"attention_bias\": true" tower "}}"
	assert_int_equal(parse(IVL1B("\"model_type\": \"qwen2\", \"tie_word_embeddings\": false, ",
				     ", \"hidden_size\": 1024, \"intermediate_size\": 4096, "
				     "\"num_hidden_layers\": 24, \"image_size\": [448, 448], "
				     "\"patch_size\": [14, 14], \"norm_type\": \"layer_norm\", "
				     "\"use_qk_norm\": false"), &m), KVS_OK);
	assert_int_equal(m.num_params, 938193024ull);
	assert_int_equal(parse(IVL1B("", ""), &m), KVS_OK);
	assert_true(m.qkv_bias && !m.tie_word_embeddings);
	assert_int_equal(m.num_params, 938193024ull);
#undef IVL1B
	/* an llm_config without its model_type: the type its architectures
	 * name (Qwen2's q/k/v biases: 4 x 128 on DENSE4's shapes), InternLM2's
	 * without any (q/k/v and output biases: 4 x 192) */
#define IVLA(arch) "{\"model_type\": \"internvl_chat\", \"llm_config\": {" arch \
		   "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, " \
		   "\"num_key_value_heads\": 2, \"hidden_size\": 64, " \
		   "\"intermediate_size\": 128, \"vocab_size\": 100}}"
	assert_int_equal(parse(IVLA("\"architectures\": [\"Qwen2ForCausalLM\"], "), &m), KVS_OK);
	assert_int_equal(m.num_params, 160832 + 4 * 128);
	assert_int_equal(parse(IVLA(""), &m), KVS_OK);
	assert_int_equal(m.num_params, 160832 + 4 * 192);
	assert_int_equal(parse(IVLA("\"architectures\": [\"LlamaForCausalLM\"], "), &m), KVS_OK);
	assert_int_equal(m.num_params, 160832);
#undef IVLA
	/* InternLM2 (InternVL2.5-8B's text model): one `bias` for the
	 * packed q/k/v and the output, InternLM2Config's default true (4 x
	 * (64 + 32 + 32 + 64) = 768 more than DENSE4's shapes), untied */
#define ILM2(extra) "{\"model_type\": \"internlm2\", \"num_hidden_layers\": 4, " \
		    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, " \
		    "\"hidden_size\": 64, \"intermediate_size\": 128, \"vocab_size\": 100" extra "}"
	assert_int_equal(parse(ILM2(""), &m), KVS_OK);
	assert_true(m.qkv_bias && m.o_bias && !m.tie_word_embeddings);
	assert_int_equal(m.num_params, 160832 + 768);
	assert_int_equal(parse(ILM2(", \"bias\": false"), &m), KVS_OK);
	assert_int_equal(m.num_params, 160832);
	expect_error(ILM2(", \"bias\": \"no\""), KVS_ERR_PARSE,
		     "field 'bias': expected true or false");
#undef ILM2
	/* InternVL2.5-1B's shapes (tests/data: InternVL3-1B's config, the
	 * same InternViT-300M and Qwen2.5-0.5B over 151,674 tokens):
	 *   tower: patches 589 x 1024, class 1024, positions 1025 x 1024,
	 *   24 layers of 12,598,272: 304,012,288
	 *   mlp1: 8,192 + 4096 x 896 + 896 + 896 x 896 + 896 = 4,482,816
	 *   text: embeddings and head 2 x 151,674 x 896, 24 layers of
	 *   14,912,384, the final norm 896: 629,697,920
	 * in all 938,193,024 (Hugging Face's safetensors count for
	 * OpenGVLab/InternVL2_5-1B) */
	assert_int_equal(kvs_model_from_json_file(KVS_SOURCE_ROOT "/tests/data/internvl3-1b.json",
						  &m), KVS_OK);
	/* named by its file: llm_config's _name_or_path is the language
	 * model it was trained from */
	assert_non_null(strstr(m.name, "internvl3-1b.json"));
	assert_true(m.qkv_bias && !m.tie_word_embeddings);
	assert_int_equal(m.num_layers, 24);
	assert_int_equal(m.num_kv_heads, 2);
	assert_int_equal(m.vision_params, 304012288ull + 4482816);
	assert_int_equal(m.num_params, 938193024ull);
	/* Qwen-MoE's layouts: experts every decoder_sparse_step-th layer
	 * (layers 1 and 3 of 4 at 2: two dense MLPs of 128 instead of two
	 * MoE layers), and dense layers by index (mlp_only_layers; an index
	 * past the layers or negative names none, as in transformers) */
#define QMOE(extra) "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 4, " \
		    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, " \
		    "\"hidden_size\": 64, \"intermediate_size\": 128, \"vocab_size\": 100, " \
		    "\"num_experts\": 4, \"num_experts_per_tok\": 2, " \
		    "\"moe_intermediate_size\": 32" extra "}"
	kvs_model all, half;
	assert_int_equal(parse(QMOE(", \"decoder_sparse_step\": 1, \"mlp_only_layers\": []"),
			       &all), KVS_OK);
	assert_int_equal(parse(QMOE(", \"decoder_sparse_step\": 2"), &half), KVS_OK);
	assert_int_equal(kvs_model_moe_layers(&half), 2);
	/* an MoE layer: 4 experts of 3 x 64 x 32 and the router 4 x 64 =
	 * 24,832; a dense one 3 x 64 x 128 = 24,576 */
	assert_int_equal(all.num_params - half.num_params, 2 * (24832 - 24576));
	assert_int_equal(parse(QMOE(", \"mlp_only_layers\": [0, 9, -1]"), &m), KVS_OK);
	assert_int_equal(kvs_model_moe_layers(&m), 3);
	assert_int_equal(all.num_params - m.num_params, 24832 - 24576);
	/* layer 0 has no experts at step 2 anyway; layer 1 loses its own */
	assert_int_equal(parse(QMOE(", \"decoder_sparse_step\": 2, \"mlp_only_layers\": [0]"),
			       &m), KVS_OK);
	assert_int_equal(m.num_params, half.num_params);
	assert_int_equal(parse(QMOE(", \"decoder_sparse_step\": 2, \"mlp_only_layers\": [1]"),
			       &m), KVS_OK);
	assert_int_equal(kvs_model_moe_layers(&m), 1);
	assert_int_equal(half.num_params - m.num_params, 24832 - 24576);
	expect_error(QMOE(", \"mlp_only_layers\": 3"), KVS_ERR_PARSE,
		     "field 'mlp_only_layers': expected a list of layer indexes");
	expect_error(QMOE(", \"mlp_only_layers\": [0, \"1\"]"), KVS_ERR_PARSE,
		     "field 'mlp_only_layers'[1]: expected an integer");
	expect_error("{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 300, "
		     "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
		     "\"hidden_size\": 64, \"intermediate_size\": 128, \"vocab_size\": 100, "
		     "\"num_experts\": 4, \"num_experts_per_tok\": 2, "
		     "\"moe_intermediate_size\": 32, \"mlp_only_layers\": [299]}", KVS_ERR_PARSE,
		     "field 'mlp_only_layers'[0]: kvsim reads dense layers below 256");
#undef QMOE
	/* the family's text model: Qwen3's q and k norms (2 x 16 a layer)
	 * and untied embeddings unless the config ties them */
	assert_int_equal(parse("{\"model_type\": \"qwen3_vl\", \"text_config\": {"
			       "\"model_type\": \"qwen3_vl_text\", \"num_hidden_layers\": 4, "
			       "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
			       "\"hidden_size\": 64, \"intermediate_size\": 128, "
			       "\"vocab_size\": 100}, \"vision_config\": {\"depth\": 0, "
			       "\"hidden_size\": 8, \"intermediate_size\": 12, "
			       "\"patch_size\": 2, \"temporal_patch_size\": 1, "
			       "\"num_position_embeddings\": 0, "
			       "\"deepstack_visual_indexes\": [], \"out_hidden_size\": 64}}", &m),
			 KVS_OK);
	assert_true(m.qk_norm && !m.tie_word_embeddings && !m.qkv_bias);
	assert_int_equal(m.vision_params, 96 + 8 + 16 + 32 * 33 + 32 * 64 + 64);
	assert_int_equal(m.num_params, 160832 + 4 * 32 + m.vision_params);
	/* Qwen3-VL-4B-Instruct's config (tests/data; its safetensors hold
	 * 4,437,815,808 parameters, 8,875,631,616 bytes), by hand: the text
	 * model, tied: embeddings 151936 x 2560 = 388,956,160; 36 layers of q
	 * and o 2 x 2560 x 4096, k and v 2 x 2560 x 1024, q/k norms 256, MLP
	 * 3 x 2560 x 9728, norms 5,120 (100,930,816), the final norm 2,560:
	 * 4,022,468,096; the tower (hidden 1024, MLP 4096, 24 blocks):
	 * patches 1,572,864 + 1,024, positions 2,359,296, blocks 24 x
	 * 12,596,224, the merger 2,048 + 4096 x 4097 + 4096 x 2560 + 2560 =
	 * 27,271,680, three deepstack mergers of 27,277,824: 415,347,712. */
	/* the qwen3-vl-8b preset's tower: the pieces in refs[] above,
	 * 1,770,624 + 2,654,208 + 411,466,608 + 40,119,040 + 3 x 40,125,952 */
	kvs_model m8;
	assert_int_equal(kvs_model_load("qwen3-vl-8b", &m8), KVS_OK);
	assert_int_equal(m8.vision_params, 576388336ull);
	assert_int_equal(kvs_model_from_json_file(KVS_SOURCE_ROOT "/tests/data/qwen3-vl-4b.json",
						  &m), KVS_OK);
	assert_true(m.tie_word_embeddings && m.qk_norm);
	assert_int_equal(m.vision_params, 415347712ull);
	assert_int_equal(m.num_params, 4437815808ull);

	/* a CLIP tower under LLaVA, by hand: hidden 8, MLP 16, 2 layers, 8 x 8
	 * images in 4 x 4 patches, 3 channels:
	 *   patches 3 x 4 x 4 x 8 = 384 (no bias), class embedding 8,
	 *   positions (4 + 1) x 8 = 40, pre and post LayerNorms 32,
	 *   layers 2 x 600: tower 1,664
	 *   LLaVA's projector into hidden 64: 8 x 64 + 64 + 64 x 64 + 64 = 4,736 */
#define CLIP_TINY "\"vision_config\": {\"model_type\": \"clip_vision_model\", " \
		  "\"hidden_size\": 8, \"intermediate_size\": 16, \"num_hidden_layers\": 2, " \
		  "\"image_size\": 8, \"patch_size\": 4}"
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
			       CLIP_TINY ", \"vision_feature_layer\": -2}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1664 + 4736);
	assert_int_equal(m.num_params, 160832 + 6400);
	assert_int_equal(m.num_active_params, 160832);
	assert_string_equal(m.vision_unread, "");
	/* two layers' features side by side: linear_1 from 16 */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
			       CLIP_TINY ", \"vision_feature_layer\": [-2, -5]}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1664 + 16 * 64 + 64 + 64 * 64 + 64);
	/* no biases; LLaVA-NeXT's image_newline (64) */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
			       CLIP_TINY ", \"multimodal_projector_bias\": false}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1664 + 4736 - 128);
	assert_int_equal(parse("{\"model_type\": \"llava_next\", \"text_config\": {" DENSE4 "}, "
			       CLIP_TINY "}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 1664 + 4736 + 64);
	/* CLIPVisionConfig's defaults: hidden 768, MLP 3072, 12 layers,
	 * 224-pixel images in 32-pixel patches (49): patches 2,359,296,
	 * class 768, positions 38,400, LayerNorms 3,072, layers 12 x
	 * 7,087,872; a CLIP tower under Gemma 3: its projector not counted */
	assert_int_equal(parse("{\"model_type\": \"gemma3\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"clip_vision_model\"}}", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 87456000ull);
	assert_string_equal(m.vision_unread, "projector of model_type 'gemma3'");
	expect_error("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
		     CLIP_TINY ", \"vision_feature_layer\": \"last\"}", KVS_ERR_PARSE,
		     "field 'vision_feature_layer': expected an integer or a non-empty list");
	expect_error("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
		     CLIP_TINY ", \"vision_feature_layer\": [-2, \"x\"]}", KVS_ERR_PARSE,
		     "field 'vision_feature_layer'[1]: expected an integer");
	expect_error("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
		     CLIP_TINY ", \"multimodal_projector_bias\": 1}", KVS_ERR_PARSE,
		     "field 'multimodal_projector_bias': expected true or false");
	/* Pixtral's tower under LLaVA, by hand: hidden 8, MLP 16, 2 layers,
	 * 4 x 4 patches, 3 channels: patches 384 (no bias), ln_pre 8, a layer
	 * of two RMSNorms 16, q, k, v, o 4 x 64 and a gated MLP 3 x 8 x 16
	 * (no biases): 656; the tower 384 + 8 + 1,312 = 1,704, the projector
	 * as above 4,736 */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"pixtral\", "
			       "\"hidden_size\": 8, \"intermediate_size\": 16, "
			       "\"num_hidden_layers\": 2, \"image_size\": 8, \"patch_size\": 4}}",
			       &m), KVS_OK);
	assert_int_equal(m.vision_params, 1704 + 4736);
	assert_string_equal(m.vision_unread, "");
	/* Mistral 3 (Mistral Small 3.1): the same tower, its projector an
	 * RMSNorm 8, the patch merger of 2 x 2 patches 4 x 8 x 8 = 256 (no
	 * bias), and linear_1 and linear_2 without biases by default, 512 +
	 * 4,096: 4,872 */
#define MISTRAL3(top) "{\"model_type\": \"mistral3\", " top "\"text_config\": {" DENSE4 "}, " \
		      "\"vision_config\": {\"model_type\": \"pixtral\", \"hidden_size\": 8, " \
		      "\"intermediate_size\": 16, \"num_hidden_layers\": 2, \"image_size\": 8, " \
		      "\"patch_size\": 4}}"
	assert_int_equal(parse(MISTRAL3(""), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1704 + 4872);
	assert_int_equal(parse(MISTRAL3("\"spatial_merge_size\": 1, "), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1704 + 4872 - 256 + 64);
	assert_int_equal(parse(MISTRAL3("\"multimodal_projector_bias\": true, "), &m), KVS_OK);
	assert_int_equal(m.vision_params, 1704 + 4872 + 128);
	expect_error(MISTRAL3("\"spatial_merge_size\": 0, "), KVS_ERR_PARSE,
		     "field 'spatial_merge_size': expected an integer in [1, 64]");
#undef MISTRAL3
	/* Mistral-Small-3.1-24B-Instruct-2503's config (tests/data), by hand: the text
	 * model 2 x 131,072 x 5120 = 1,342,177,280 in embeddings and head, 40
	 * layers of attention 52,428,800, MLP 3 x 5120 x 32768 = 503,316,480
	 * and norms 10,240, the final norm: 23,572,403,200; Pixtral's tower at
	 * 14-pixel patches 602,112 + 1,024 + 24 x 16,779,264 = 403,305,472;
	 * the projector 1,024 + 4096 x 1024 + 1024 x 5120 + 5120^2 =
	 * 35,652,608.  In all 24,011,361,280 (Mistral's 24B). */
	assert_int_equal(kvs_model_from_json_file(KVS_SOURCE_ROOT
						  "/tests/data/mistral-small-3.1-24b.json", &m),
			 KVS_OK);
	assert_int_equal(m.vision_params, 403305472ull + 35652608);
	assert_int_equal(m.num_params, 24011361280ull);
	assert_int_equal(m.sliding_window, 0);
	/* PixtralVisionConfig's defaults are Pixtral-12B's tower: patches 3 x
	 * 16^2 x 1024 = 786,432, ln_pre 1,024, 24 layers of 2,048 + 4 x
	 * 1024^2 + 3 x 1024 x 4096 = 16,779,264 */
	assert_int_equal(parse("{\"model_type\": \"paligemma\", \"text_config\": {" DENSE4 "}, "
			       "\"vision_config\": {\"model_type\": \"pixtral\"}}", &m), KVS_OK);
	assert_int_equal(m.vision_params, 403489792ull);
	assert_string_equal(m.vision_unread, "projector of model_type 'paligemma'");
#undef CLIP_TINY

	/* bad fields name the file and the field */
	expect_error(GEMMA3_TINY(", \"vision_use_head\": 1", ""), KVS_ERR_PARSE,
		     "field 'vision_config.vision_use_head': expected true or false");
	expect_error("{\"model_type\": \"gemma3\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"siglip_vision_model\", "
		     "\"hidden_size\": \"big\"}}", KVS_ERR_PARSE,
		     "field 'vision_config.hidden_size': expected an integer");
	expect_error("{\"model_type\": \"gemma3\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"siglip_vision_model\", "
		     "\"num_hidden_layers\": -1}}", KVS_ERR_PARSE,
		     "field 'vision_config.num_hidden_layers': -1 is out of range");
	expect_error("{\"model_type\": \"gemma3\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"siglip_vision_model\", "
		     "\"patch_size\": 300}}", KVS_ERR_PARSE,
		     "field 'vision_config.patch_size': 300 is larger than image_size 224");
	expect_error("{" DENSE4 ", \"vision_config\": [1]}", KVS_ERR_PARSE,
		     "field 'vision_config': expected an object");
	expect_error("{" DENSE4 ", \"audio_config\": 3}", KVS_ERR_PARSE,
		     "field 'audio_config': expected an object");
	expect_error("{" DENSE4 ", \"vision_config\": {\"model_type\": 7}}", KVS_ERR_PARSE,
		     "field 'vision_config.model_type': expected a string");
	/* shapes too large to count: refused, not wrapped */
	expect_error("{\"model_type\": \"gemma3\", \"text_config\": {" DENSE4 "}, "
		     "\"vision_config\": {\"model_type\": \"siglip_vision_model\", "
		     "\"hidden_size\": 1048576, \"patch_size\": 1048576, \"image_size\": 1048576, "
		     "\"num_channels\": 1024}}", KVS_ERR_OVERFLOW, "vision tower");
}

static void test_quant_wide_projections(void **state)
{
	(void)state;
	kvs_model m;
	uint32_t np[KVS_PROJ_COUNT_];
	/* the embeddings and head alone: 148,032 B + 2 x 12,800 B */
	assert_int_equal(parse(FP8_KEEP("\"lm_head\""), &m), KVS_OK);
	assert_int_equal(m.num_params, 160832);
	assert_int_equal(kvs_model_wide_params(&m), 12800);
	assert_int_equal(fp8_bytes(&m), 173632);
	assert_int_equal(kvs_model_proj_params(&m, KVS_PROJ_Q), 4096);
	assert_int_equal(kvs_model_proj_params(&m, KVS_PROJ_K), 2048);
	assert_int_equal(kvs_model_proj_params(&m, KVS_PROJ_O), 4096);
	assert_int_equal(kvs_model_proj_params(&m, KVS_PROJ_DOWN), 8192);

	/* one down projection: 64 x 128 = 8,192 more at 16 bits, 8,192 B */
	assert_int_equal(parse(FP8_KEEP("\"model.layers.0.mlp.down_proj\""), &m), KVS_OK);
	kvs_model_wide_projs(&m, np);
	assert_int_equal(np[KVS_PROJ_DOWN], 1);
	assert_int_equal(np[KVS_PROJ_GATE], 0);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 8192);
	assert_int_equal(fp8_bytes(&m), 173632 + 8192);
	assert_string_equal(m.wide_unread, "");

	/* listed twice, with its weight, and within the whole MLP of the
	 * same layer: layer 0's MLP once, 24,576 */
	assert_int_equal(parse(FP8_KEEP("\"model.layers.0.mlp.down_proj\", "
					"\"model.layers.0.mlp.down_proj.weight\", "
					"\"model.layers.0.mlp\""), &m), KVS_OK);
	kvs_model_wide_projs(&m, np);
	assert_int_equal(np[KVS_PROJ_GATE], 1);
	assert_int_equal(np[KVS_PROJ_UP], 1);
	assert_int_equal(np[KVS_PROJ_DOWN], 1);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 24576);
	assert_int_equal(fp8_bytes(&m), 173632 + 24576);

	/* a projection of a layer whose attention is kept whole is counted
	 * in it; one of another layer apart; one past the 4 layers, one
	 * the layer's part lacks (self_attn.gate_proj, mlp.q_proj), one of
	 * the experts are read as nothing and said */
	assert_int_equal(parse(FP8_KEEP("\"model.layers.1.self_attn.q_proj\", "
					"\"model.layers.1.self_attn\", "
					"\"model.layers.2.self_attn.k_proj\", "
					"\"model.layers.4.mlp.down_proj\", "
					"\"model.layers.3.self_attn.gate_proj\", "
					"\"model.layers.3.mlp.q_proj\", "
					"\"model.layers.3.mlp.experts.0.down_proj\""), &m), KVS_OK);
	assert_int_equal(m.wide_attn_layers, 1);
	kvs_model_wide_projs(&m, np);
	assert_int_equal(np[KVS_PROJ_Q], 0);
	assert_int_equal(np[KVS_PROJ_K], 1);
	assert_int_equal(np[KVS_PROJ_DOWN], 0);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 12288 + 2048);
	assert_string_equal(m.wide_unread, "'model.layers.4.mlp.down_proj' and 3 more");

	/* every layer's q beside layer 0's whole attention: q in the other
	 * 3 layers; every layer's attention leaves no projection apart */
	assert_int_equal(parse(FP8_KEEP("\"re:.*self_attn[.]q_proj\", \"model.layers.0.self_attn\""),
			       &m), KVS_OK);
	assert_int_equal(m.wide_proj_layers[KVS_PROJ_Q], KVS_WIDE_ALL);
	kvs_model_wide_projs(&m, np);
	assert_int_equal(np[KVS_PROJ_Q], 3);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 12288 + 3 * 4096);
	assert_int_equal(parse(FP8_KEEP("\"model.layers.*.self_attn\", "
					"\"model.layers.2.self_attn.o_proj\", \"q_proj\""), &m), KVS_OK);
	kvs_model_wide_projs(&m, np);
	assert_int_equal(np[KVS_PROJ_Q], 0);
	assert_int_equal(np[KVS_PROJ_O], 0);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 4 * 12288);
	/* fused names: qkv_proj is q, k, v; gate_up_proj gate and up */
	assert_int_equal(parse(FP8_KEEP("\"model.layers.3.self_attn.qkv_proj\", "
					"\"model.layers.3.mlp.gate_up_proj\""), &m), KVS_OK);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 8192 + 16384);
	/* a regular expression over some layers keeps today's rule: nothing */
	assert_int_equal(parse(FP8_KEEP("\"re:.*layers[.][0-9]+[.]mlp[.]down_proj\""), &m),
			 KVS_OK);
	assert_int_equal(kvs_model_wide_params(&m), 12800);
	assert_string_equal(m.wide_unread, "'re:.*layers[.][0-9]+[.]mlp[.]down_proj'");
	/* a vision tower's projections and MLPs are not the language
	 * model's: read as nothing */
	assert_int_equal(parse(FP8_KEEP("\"visual.blocks.0.mlp.down_proj\", "
					"\"vision_model.layers.1.self_attn.q_proj\", "
					"\"model.vision_tower.layers.2.mlp\""), &m), KVS_OK);
	assert_int_equal(kvs_model_wide_params(&m), 12800);
	assert_string_equal(m.wide_unread, "'visual.blocks.0.mlp.down_proj' and 2 more");
	/* malformed names are read as nothing, never refused */
	assert_int_equal(parse(FP8_KEEP("\"mlp..down_proj\", \"model.layers.0.mlp.down_proj.x\", "
					"\"re:[\", \".\", \"model.layers.99999999999.mlp\""), &m),
			 KVS_OK);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 4 * 8192);  /* every down */
	assert_string_equal(m.wide_unread, "'model.layers.0.mlp.down_proj.x' and 3 more");

	/* an MoE model with one leading dense layer (hidden 64, MLP 128,
	 * experts of 32): layer 0's MLP counts; an MoE layer's "mlp" is its
	 * experts, read as nothing; its router still reads; an every-layer
	 * projection counts in the dense layer and says the rest */
	assert_int_equal(parse("{" DENSE4 ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2, "
			       "\"moe_intermediate_size\": 32, \"first_k_dense_replace\": 1, "
			       "\"quantization_config\": {\"quant_method\": \"fp8\", "
			       "\"modules_to_not_convert\": [\"model.layers.0.mlp\", \"model.layers.1.mlp\", "
			       "\"model.layers.1.mlp.gate\", \"model.layers.*.mlp.down_proj\"]}}", &m),
			 KVS_OK);
	assert_int_equal(m.wide_router_layers, 1);
	kvs_model_wide_projs(&m, np);
	assert_int_equal(np[KVS_PROJ_GATE], 1);
	assert_int_equal(np[KVS_PROJ_DOWN], 1);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 24576 + 64 * 4);
	assert_string_equal(m.wide_unread, "'model.layers.1.mlp' and 1 more");
	/* Llama 4's layout: MoE every 2nd layer (1 and 3), dense layers of
	 * intermediate_size_mlp 96 (3 x 64 x 96 = 18,432) */
	assert_int_equal(parse("{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 4, "
			       "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
			       "\"hidden_size\": 64, \"intermediate_size\": 32, \"intermediate_size_mlp\": 96, "
			       "\"num_local_experts\": 4, \"num_experts_per_tok\": 1, "
			       "\"interleave_moe_layer_step\": 2, \"vocab_size\": 100, "
			       "\"tie_word_embeddings\": false, \"quantization_config\": {"
			       "\"quant_method\": \"fp8\", \"modules_to_not_convert\": ["
			       "\"model.layers.2.feed_forward\", \"model.layers.3.feed_forward\"]}}", &m),
			 KVS_OK);
	assert_int_equal(kvs_model_wide_params(&m), 12800 + 18432);
	assert_string_equal(m.wide_unread, "'model.layers.3.feed_forward'");
	/* MLA attention has other projections: q_proj is read as nothing */
	assert_int_equal(parse("{" DENSE4 ", \"kv_lora_rank\": 32, \"qk_rope_head_dim\": 8, "
			       "\"qk_nope_head_dim\": 16, \"v_head_dim\": 16, \"quantization_config\": {"
			       "\"quant_method\": \"fp8\", \"modules_to_not_convert\": ["
			       "\"model.layers.0.self_attn.q_proj\"]}}", &m), KVS_OK);
	assert_int_equal(kvs_model_wide_params(&m), 12800);
	assert_string_equal(m.wide_unread, "'model.layers.0.self_attn.q_proj'");
}

/* Meta's Llama-3.1-405B-Instruct-FP8 (fbgemm_fp8) keeps the q, k, v and o
 * projections of all 126 layers, the MLP of layers 0 and 125 and lm_head
 * at 16 bits.  Hidden 16384, 128 heads of 128, 8 kv heads, MLP 53248,
 * vocab 128256:
 *   embeddings and head  2 x 128256 x 16384                =  4,202,692,608
 *   q + o  2 x 16384^2 = 536,870,912; k + v 2 x 16384 x 1024 = 33,554,432
 *   attention over 126 layers  126 x 570,425,344           = 71,873,593,344
 *   MLP of 2 layers  2 x 3 x 16384 x 53248                 =  5,234,491,392
 *   kept at 16 bits                                         = 81,310,777,344
 * of 405,853,388,800: narrow 324,542,611,456 B + wide 162,621,554,688 B =
 * 487,164,166,144 B, 60,895,520,768 B a GPU at tp 8. */
static void test_quant_wide_405b_fp8(void **state)
{
	(void)state;
	char *text = malloc(64 * 1024);
	assert_non_null(text);
	size_t len = (size_t)snprintf(text, 1024, "{\"model_type\": \"llama\", "
		"\"num_hidden_layers\": 126, \"num_attention_heads\": 128, "
		"\"num_key_value_heads\": 8, \"head_dim\": 128, \"hidden_size\": 16384, "
		"\"intermediate_size\": 53248, \"vocab_size\": 128256, "
		"\"torch_dtype\": \"bfloat16\", \"quantization_config\": {"
		"\"quant_method\": \"fbgemm_fp8\", \"activation_scale_ub\": 1200.0, "
		"\"modules_to_not_convert\": [\"lm_head\"");
	static const char *const attn[] = { "k_proj", "o_proj", "q_proj", "v_proj" };
	static const char *const mlp[] = { "down_proj", "gate_proj", "up_proj" };
	for (int l = 0; l < 126; l++)
		for (size_t i = 0; i < 4; i++)
			len += (size_t)snprintf(text + len, 64 * 1024 - len,
						", \"model.layers.%d.self_attn.%s\"", l, attn[i]);
	for (size_t i = 0; i < 3; i++)
		len += (size_t)snprintf(text + len, 64 * 1024 - len, ", \"model.layers.0.mlp.%s\", "
					"\"model.layers.125.mlp.%s\"", mlp[i], mlp[i]);
	snprintf(text + len, 64 * 1024 - len, "]}}");
	kvs_model m;
	assert_int_equal(parse(text, &m), KVS_OK);
	free(text);
	assert_int_equal(m.num_params, 405853388800ull);
	assert_int_equal(m.weight_dtype, KVS_DTYPE_FP8);
	assert_int_equal(m.wide_attn_layers, 0);
	uint32_t np[KVS_PROJ_COUNT_];
	kvs_model_wide_projs(&m, np);
	for (kvs_proj p = KVS_PROJ_Q; p <= KVS_PROJ_O; p++)
		assert_int_equal(np[p], 126);
	for (kvs_proj p = KVS_PROJ_GATE; p < KVS_PROJ_COUNT_; p++)
		assert_int_equal(np[p], 2);
	assert_string_equal(m.wide_unread, "");
	assert_int_equal(kvs_model_wide_params(&m), 81310777344ull);
	uint64_t w;
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP8, 1, 1, &w), KVS_OK);
	assert_int_equal(w, 487164166144ull);
	assert_int_equal(kvs_weight_bytes(&m, KVS_DTYPE_FP8, 8, 1, &w), KVS_OK);
	assert_int_equal(w, 60895520768ull);
}

/* Data-parallel ranks with expert parallelism, on MOE4 in fp16: the routed
 * experts, 4 layers x 4 x 1,572,864 = 25,165,824 parameters (50,331,648
 * B), spread over the ranks; the other 5,231,104 (10,462,208 B) on every
 * rank.  Each rank holds its own conversations. */
static void test_data_expert_parallel(void **state)
{
	(void)state;
	kvs_model m;
	kvs_param_parts pp;
	assert_int_equal(parse("{" MOE4 ", \"torch_dtype\": \"float16\"}", &m), KVS_OK);
	kvs_model_param_parts(&m, &pp);
	assert_int_equal(pp.experts, 25165824);
	kvs_gpu g = gpu("h100-80gb");
	kvs_deploy d;
	kvs_sizing one, two, ep;
	kvs_deploy_defaults(&d, &m, &g);
	assert_int_equal(d.dp, 1);
	assert_int_equal(kvs_size_compute(&d, &one), KVS_OK);
	assert_int_equal(one.weight_bytes, 2 * 30396928);
	assert_int_equal(one.dp, 1);
	assert_int_equal(one.max_conversations_total, one.max_conversations);
	/* two ranks, each with every expert: the GPU is the same, twice */
	d.dp = 2;
	assert_int_equal(kvs_size_compute(&d, &two), KVS_OK);
	assert_int_equal(two.weight_bytes, one.weight_bytes);
	assert_int_equal(two.max_conversations, one.max_conversations);
	assert_int_equal(two.max_conversations_total, 2 * one.max_conversations);
	assert_int_equal(kvs_deploy_gpus(&d), 2);
	/* expert parallel: half the experts on each GPU; the pool grows by
	 * what they freed, less the expert-parallel group's communicators */
	d.expert_parallel = true;
	assert_int_equal(kvs_size_compute(&d, &ep), KVS_OK);
	assert_int_equal(ep.weight_bytes, 10462208 + 50331648 / 2);
	assert_int_equal(ep.mem.comm_bytes, KVS_MEM_COMM_BYTES);
	assert_int_equal(ep.kv_budget_bytes,
			 one.kv_budget_bytes + 50331648 / 2 - KVS_MEM_COMM_BYTES);
	assert_int_equal(ep.max_conversations_total, 2 * ep.max_conversations);
	/* with tp 2 as well: the rest over 2, the experts over 4 */
	d.tp = 2;
	assert_int_equal(kvs_size_compute(&d, &ep), KVS_OK);
	assert_int_equal(ep.weight_bytes, 10462208 / 2 + 50331648 / 4);
	assert_int_equal(kvs_deploy_gpus(&d), 4);
	/* a dense model: expert parallelism changes nothing */
	kvs_model dense = load("llama-3-8b");
	kvs_deploy_defaults(&d, &dense, &g);
	assert_int_equal(kvs_size_compute(&d, &one), KVS_OK);
	d.dp = 4;
	d.expert_parallel = true;
	assert_int_equal(kvs_size_compute(&d, &ep), KVS_OK);
	assert_int_equal(ep.weight_bytes, one.weight_bytes);
	d.dp = 1025;
	assert_int_equal(kvs_size_compute(&d, &ep), KVS_ERR_INVALID);
}

static void test_config_variants(void **state)
{
	(void)state;
	kvs_model m;
	/* minimal llama-like: MHA, head_dim from hidden / heads */
	assert_int_equal(parse("{" BASE "}", &m), KVS_OK);
	assert_int_equal(m.num_kv_heads, 8);
	assert_int_equal(m.head_dim, 64);
	assert_int_equal(m.sliding_window, 0);
	/* params: untied default (no model_type -> tied), 4 layers */
	uint64_t layer = 4 * 512 * 512 + 3 * 512 * 1024 + 2 * 512;
	assert_int_equal(m.num_params, 1000 * 512 + 4 * layer + 512);
	/* published count wins */
	assert_int_equal(parse("{" BASE ", \"kvsim_num_parameters\": 123456789}", &m), KVS_OK);
	assert_int_equal(m.num_params, 123456789);
	assert_true(m.params_from_config);
	/* GPT-style aliases and Falcon's multi_query */
	assert_int_equal(parse("{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 256, \"n_inner\": 1024,"
			       " \"vocab_size\": 100, \"n_positions\": 1024, \"multi_query\": true}",
			       &m), KVS_OK);
	assert_int_equal(m.num_layers, 2);
	assert_int_equal(m.num_kv_heads, 1);
	assert_int_equal(m.max_position_embeddings, 1024);
	/* null counts as absent; whole reals are accepted */
	assert_int_equal(parse("{" BASE ", \"head_dim\": null, \"sliding_window\": null,"
			       " \"max_position_embeddings\": 4096.0}", &m), KVS_OK);
	assert_int_equal(m.head_dim, 64);
	assert_int_equal(m.max_position_embeddings, 4096);
	/* layer_types */
	assert_int_equal(parse("{" BASE ", \"sliding_window\": 1024, \"layer_types\": "
			       "[\"sliding_attention\", \"sliding_attention\", \"sliding_attention\","
			       " \"full_attention\"]}", &m), KVS_OK);
	assert_int_equal(m.sliding_window, 1024);
	assert_int_equal(m.num_sliding_layers, 3);
	/* Gemma-2 without layer_types: even layers are local */
	assert_int_equal(parse("{" BASE ", \"model_type\": \"gemma2\", \"sliding_window\": 64,"
			       " \"num_hidden_layers\": 5}", &m), KVS_ERR_PARSE); /* duplicate */
	assert_int_equal(parse("{\"num_hidden_layers\": 5, \"num_attention_heads\": 8,"
			       " \"hidden_size\": 512, \"intermediate_size\": 1024,"
			       " \"vocab_size\": 1000, \"model_type\": \"gemma2\","
			       " \"sliding_window\": 64}", &m), KVS_OK);
	assert_int_equal(m.num_sliding_layers, 3);
	assert_int_equal(m.norms_per_layer, 4);
	/* Gemma-3: every 6th layer global */
	assert_int_equal(parse("{\"num_hidden_layers\": 62, \"num_attention_heads\": 8,"
			       " \"hidden_size\": 512, \"intermediate_size\": 1024,"
			       " \"vocab_size\": 1000, \"model_type\": \"gemma3_text\","
			       " \"sliding_window\": 1024, \"sliding_window_pattern\": 6}", &m),
			 KVS_OK);
	assert_int_equal(m.num_sliding_layers, 62 - 10);
	/* Llama 4's chunked attention: the RoPE layers hold at most a chunk,
	 * all but every 4th by default, or as no_rope_layers says (1 = RoPE),
	 * or as layer_types says; 8 layers of 8 kv heads x 64 at fp16 = 2,048
	 * B a layer a token: at 4,096 tokens 2 x 4,096 + 6 x 1,024 = 14,336
	 * layer-tokens, 29,360,128 B */
	assert_int_equal(parse("{\"num_hidden_layers\": 8, \"num_attention_heads\": 8, "
			       "\"hidden_size\": 512, \"intermediate_size\": 1024, \"vocab_size\": 1000, "
			       "\"model_type\": \"llama4_text\", \"attention_chunk_size\": 1024}", &m),
			 KVS_OK);
	assert_int_equal(m.sliding_window, 1024);
	assert_int_equal(m.num_sliding_layers, 6);
	uint64_t cb;
	assert_int_equal(kvs_kv_bytes_for_tokens(&m, KVS_DTYPE_FP16, 0, 1, 1, 4096, &cb), KVS_OK);
	assert_int_equal(cb, 29360128);
	assert_int_equal(parse("{\"num_hidden_layers\": 8, \"num_attention_heads\": 8, "
			       "\"hidden_size\": 512, \"intermediate_size\": 1024, \"vocab_size\": 1000, "
			       "\"attention_chunk_size\": 1024, \"no_rope_layers\": "
			       "[1, 0, 1, 0, 1, 0, 1, 1]}", &m), KVS_OK);
	assert_int_equal(m.num_sliding_layers, 5);
	assert_int_equal(parse("{\"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
			       "\"hidden_size\": 512, \"intermediate_size\": 1024, \"vocab_size\": 1000, "
			       "\"attention_chunk_size\": 2048, \"layer_types\": [\"chunked_attention\", "
			       "\"chunked_attention\", \"chunked_attention\", \"full_attention\"]}", &m),
			 KVS_OK);
	assert_int_equal(m.sliding_window, 2048);
	assert_int_equal(m.num_sliding_layers, 3);
	assert_int_equal(parse("{\"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
			       "\"hidden_size\": 512, \"intermediate_size\": 1024, \"vocab_size\": 1000, "
			       "\"attention_chunk_size\": 2048, \"no_rope_layers\": [1, 2, 1, 0]}", &m),
			 KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "'no_rope_layers'[1]: expected 0 or 1"));
	assert_int_equal(parse("{\"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
			       "\"hidden_size\": 512, \"intermediate_size\": 1024, \"vocab_size\": 1000, "
			       "\"attention_chunk_size\": 2048, \"no_rope_layers\": [1, 0]}", &m),
			 KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "expected an array of 4"));
	/* Llama 4's layout: MoE every 2nd layer with one shared expert as wide
	 * as a routed one, dense layers of intermediate_size_mlp.  Hidden 64,
	 * 4 heads of 16, 2 kv heads: attention 3 x 64 x 64 + ... = 12,288 a
	 * layer, norms 128; dense MLP 3 x 64 x 96 = 18,432; router 256, four
	 * experts of 3 x 64 x 32 = 6,144 and the shared one.  2 dense layers
	 * of 30,848, 2 MoE layers of 43,392, embeddings and head 12,800,
	 * final norm 64: 161,344; active, one routed expert: 124,480 */
	assert_int_equal(parse("{\"model_type\": \"llama4\", \"text_config\": {"
			       "\"model_type\": \"llama4_text\", \"num_hidden_layers\": 4, "
			       "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
			       "\"hidden_size\": 64, \"intermediate_size\": 32, \"intermediate_size_mlp\": 96, "
			       "\"num_local_experts\": 4, \"num_experts_per_tok\": 1, "
			       "\"interleave_moe_layer_step\": 2, \"vocab_size\": 100, "
			       "\"tie_word_embeddings\": false}}", &m), KVS_OK);
	assert_int_equal(kvs_model_moe_layers(&m), 2);
	assert_int_equal(m.shared_expert_intermediate_size, 32);
	assert_int_equal(m.num_params, 161344);
	assert_int_equal(m.num_active_params, 124480);
	assert_int_equal(parse("{" BASE ", \"num_local_experts\": 4, \"num_experts_per_tok\": 1, "
			       "\"interleave_moe_layer_step\": 2, \"first_k_dense_replace\": 1}", &m),
			 KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "interleave_moe_layer_step"));
	/* Qwen2 with use_sliding_window true: layers >= max_window_layers */
	assert_int_equal(parse("{" BASE ", \"model_type\": \"qwen2\", \"sliding_window\": 256,"
			       " \"use_sliding_window\": true, \"max_window_layers\": 1}", &m),
			 KVS_OK);
	assert_int_equal(m.num_sliding_layers, 3);
	assert_true(m.qkv_bias);
	/* multimodal: text_config wins */
	assert_int_equal(parse("{\"model_type\": \"llava\", \"text_config\": {" BASE
			       ", \"num_key_value_heads\": 2}, \"vision_config\": {}}", &m), KVS_OK);
	assert_int_equal(m.num_layers, 4);
	assert_int_equal(m.num_kv_heads, 2);
	/* quantization_config */
	assert_int_equal(parse("{" BASE ", \"quantization_config\": {\"quant_method\": \"awq\","
			       " \"bits\": 4}}", &m), KVS_OK);
	assert_int_equal(m.weight_dtype, KVS_DTYPE_INT4);
	kvs_deploy d;
	kvs_deploy_defaults(&d, &m, NULL);
	assert_int_equal(d.weight_dtype, KVS_DTYPE_INT4);
	assert_int_equal(d.kv_dtype, KVS_DTYPE_FP16);
	assert_string_equal(m.quant_unread, "");
	/* the other ways checkpoints say their width, and the widths kvsim
	 * does not read: weights at the model's dtype (FP32: "same as
	 * dtype"), and said (the CLI warns) */
	static const struct {
		const char *quant;      /* the quantization_config's members */
		kvs_dtype dtype;
		const char *unread;
	} qc[] = {
		{ "\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true", KVS_DTYPE_INT4, "" },
		{ "\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true", KVS_DTYPE_INT8, "" },
		{ "\"quant_method\": \"awq\", \"w_bit\": 4", KVS_DTYPE_INT4, "" },
		{ "\"quant_method\": \"mxfp4\"", KVS_DTYPE_INT4, "" },
		{ "\"quant_method\": \"gptq\", \"bits\": 3", KVS_DTYPE_FP32,
		  "quant_method 'gptq', bits 3" },
		{ "\"quant_method\": \"compressed-tensors\"", KVS_DTYPE_FP32,
		  "quant_method 'compressed-tensors'" },
		/* EXL2's fractional width */
		{ "\"quant_method\": \"exl2\", \"bits\": 4.65", KVS_DTYPE_FP32,
		  "quant_method 'exl2', bits 4.65" },
	};
	for (size_t i = 0; i < KVS_ARRAY_LEN(qc); i++) {
		char text[512];
		snprintf(text, sizeof text, "{" BASE ", \"quantization_config\": {%s}}", qc[i].quant);
		assert_int_equal(parse(text, &m), KVS_OK);
		assert_int_equal(m.weight_dtype, qc[i].dtype);
		assert_string_equal(m.quant_unread, qc[i].unread);
	}
	/* a width that is no width */
	assert_int_equal(parse("{" BASE ", \"quantization_config\": {\"quant_method\": "
			       "\"gptq\", \"bits\": 0}}", &m), KVS_ERR_PARSE);
	assert_non_null(strstr(kvs_last_error(), "quantization_config.bits"));
	/* MLA without q_lora_rank (DeepSeek-V2-Lite shape) */
	assert_int_equal(parse("{" BASE ", \"kv_lora_rank\": 128, \"qk_rope_head_dim\": 32,"
			       " \"qk_nope_head_dim\": 64, \"v_head_dim\": 64}", &m), KVS_OK);
	assert_int_equal(m.head_dim, 96);
	assert_int_equal(bpt(&m, KVS_DTYPE_BF16, 0, 1, 1), 4 * (128 + 32) * 2);
}

static void test_parse_bytes(void **state)
{
	(void)state;
	uint64_t v = 0;
	assert_int_equal(kvs_parse_bytes("80GB", &v), KVS_OK);
	assert_int_equal(v, 80000000000ull);
	assert_int_equal(kvs_parse_bytes("79.2GiB", &v), KVS_OK);
	assert_int_equal(v, 85040352461ull);
	assert_int_equal(kvs_parse_bytes("512MiB", &v), KVS_OK);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(kvs_parse_bytes("80", &v), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "no unit"));
	assert_int_equal(kvs_parse_bytes("80XB", &v), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "unknown unit"));
	assert_int_equal(kvs_parse_bytes("0GB", &v), KVS_ERR_INVALID);
	assert_int_equal(kvs_parse_bytes("-1GB", &v), KVS_ERR_INVALID);
	assert_int_equal(kvs_parse_bytes("abc", &v), KVS_ERR_INVALID);
	assert_int_equal(kvs_parse_bytes("99999999TB", &v), KVS_ERR_OVERFLOW);
	assert_int_equal(kvs_parse_bytes("", &v), KVS_ERR_INVALID);
	/* a size that rounds to 0 bytes would read as "not given" */
	v = 7;
	assert_int_equal(kvs_parse_bytes("0.4B", &v), KVS_ERR_INVALID);
	assert_non_null(strstr(kvs_last_error(), "less than one byte"));
	assert_int_equal(kvs_parse_bytes("1e-30GB", &v), KVS_ERR_INVALID);
	assert_int_equal(v, 7);
	assert_int_equal(kvs_parse_bytes("0.5B", &v), KVS_OK);
	assert_int_equal(v, 1);
	/* decimal only: no hex floats */
	assert_int_equal(kvs_parse_bytes("0x10GB", &v), KVS_ERR_INVALID);
	assert_int_equal(kvs_parse_bytes("1.5e3MB", &v), KVS_OK);
	assert_int_equal(v, 1500000000ull);
	kvs_dtype dt;
	assert_int_equal(kvs_dtype_parse("bfloat16", &dt), KVS_OK);
	assert_int_equal(dt, KVS_DTYPE_BF16);
	assert_int_equal(kvs_dtype_parse("fp8_e5m2", &dt), KVS_OK);
	assert_int_equal(dt, KVS_DTYPE_FP8);
	assert_int_equal(kvs_dtype_parse("fp7", &dt), KVS_ERR_INVALID);
}

static void test_shrinks(void **state)
{
	(void)state;
	kvs_model m = load("llama-2-7b");
	kvs_gpu g = gpu("a100-80gb");
	kvs_deploy d;
	kvs_deploy_defaults(&d, &m, &g);
	kvs_sizing s;
	kvs_shrink_row r[KVS_SHRINK_COUNT_];
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_shrinks(&d, r), KVS_OK);
	assert_string_equal(r[KVS_SHRINK_BASELINE].key, "baseline");
	assert_int_equal(r[KVS_SHRINK_BASELINE].max_conversations, s.max_conversations);
	assert_true(r[KVS_SHRINK_BASELINE].vs_baseline == 1.0);
	assert_int_equal(r[KVS_SHRINK_GQA8].kv_bytes_per_token, 131072);
	assert_int_equal(r[KVS_SHRINK_MQA].kv_bytes_per_token, 16384);
	assert_int_equal(r[KVS_SHRINK_FP8].kv_bytes_per_token, 262144);
	assert_int_equal(r[KVS_SHRINK_INT4].kv_bytes_per_token, 131072);
	assert_int_equal(r[KVS_SHRINK_MLA].kv_bytes_per_token, 32 * 576 * 2);
	/* weights and reserve held fixed: conversations scale with bytes */
	uint64_t nb = s.kv_budget_bytes / (16 * 131072ull);
	assert_int_equal(r[KVS_SHRINK_GQA8].max_conversations, nb / 250);
	assert_true(r[KVS_SHRINK_FP8].vs_baseline > 1.99 && r[KVS_SHRINK_FP8].vs_baseline < 2.01);
	/* 4,000 tokens is inside a 4096 window: no gain */
	assert_int_equal(r[KVS_SHRINK_SLIDING].max_conversations, s.max_conversations);
	/* contiguous: budget over 4096 tokens x 524288 bytes */
	assert_int_equal(r[KVS_SHRINK_RESERVE_FULL].max_conversations,
			 s.kv_budget_bytes / (4096ull * 524288));

	/* Llama-3-8B already has 8 kv heads; Mistral already slides;
	 * DeepSeek has no kv heads */
	kvs_model l3 = load("llama-3-8b");
	kvs_deploy_defaults(&d, &l3, &g);
	assert_int_equal(kvs_size_shrinks(&d, r), KVS_OK);
	assert_false(r[KVS_SHRINK_GQA8].applicable);
	assert_true(r[KVS_SHRINK_MQA].applicable);
	kvs_model mi = load("mistral-7b");
	kvs_deploy_defaults(&d, &mi, &g);
	assert_int_equal(kvs_size_shrinks(&d, r), KVS_OK);
	assert_false(r[KVS_SHRINK_SLIDING].applicable);
	kvs_model ds = load("deepseek-v3");
	kvs_gpu h = gpu("h200-141gb");
	kvs_deploy_defaults(&d, &ds, &h);
	d.tp = 8;
	assert_int_equal(kvs_size_shrinks(&d, r), KVS_OK);
	assert_false(r[KVS_SHRINK_GQA8].applicable);
	assert_false(r[KVS_SHRINK_MLA].applicable);
	assert_true(r[KVS_SHRINK_FP8].applicable);
	/* an FP8 cache already in place */
	kvs_deploy_defaults(&d, &l3, &g);
	d.kv_dtype = KVS_DTYPE_FP8;
	assert_int_equal(kvs_size_shrinks(&d, r), KVS_OK);
	assert_false(r[KVS_SHRINK_FP8].applicable);
	assert_true(r[KVS_SHRINK_INT4].applicable);
}

static void test_long_context_advice(void **state)
{
	(void)state;
	kvs_model m = load("llama-2-7b");
	kvs_gpu g = gpu("a100-80gb");
	kvs_deploy d;
	kvs_deploy_defaults(&d, &m, &g);
	kvs_sizing s;
	kvs_size_advice a;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_false(a.needed);

	d.context_tokens = 128000;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(s.bytes_per_context, 128000ull * 524288);
	assert_int_equal(s.max_conversations, 0);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_true(a.needed);
	assert_true(a.weights_fit);
	assert_false(a.context_fits);
	assert_true(a.cache_exceeds_weights);
	assert_true(a.over_max_model_len);
	/* more GPUs: the first option uses 2 GPUs and holds one conversation */
	assert_true(a.n_parallel > 0);
	assert_int_equal(a.parallel[0].tp * a.parallel[0].pp, 2);
	assert_true(a.parallel[0].max_conversations >= 1);
	for (size_t i = 1; i < a.n_parallel; i++)
		assert_true(a.parallel[i - 1].tp * a.parallel[i - 1].pp <=
			    a.parallel[i].tp * a.parallel[i].pp);
	/* FP8 halves the cache: 31.25 GiB fits in ~53 GiB once */
	assert_int_equal(a.fp8_conversations, 1);
	assert_int_equal(a.int4_conversations, s.num_gpu_blocks / 2000);
	/* offload: what the pool cannot hold crosses PCIe each step */
	uint64_t pool = s.num_gpu_blocks * s.bytes_per_block;
	assert_int_equal(a.offload_bytes, s.bytes_per_context - pool);
	/* 62.5 GiB of cache, ~58.2 GiB of pool: ~4.3 GiB at 32 GB/s */
	assert_true(a.offload_s_per_step > 0.12 && a.offload_s_per_step < 0.17);
	assert_true(a.offload_full_s_per_step > 2.0 && a.offload_full_s_per_step < 2.2);
	/* shorter context: full attention, so n conversations get capacity / n,
	 * at most max_model_len (4,096 for Llama-2) */
	assert_int_equal(a.context_for_n[0], 1);
	assert_int_equal(s.max_model_len, 4096);
	assert_int_equal(a.context_tokens_for_n[0], 4096);
	assert_int_equal(a.context_tokens_for_n[1], 4096);
	assert_int_equal(a.context_tokens_for_n[2], s.num_gpu_blocks / 32 * 16);
	assert_false(a.few_conversations);   /* none fits: context_fits says it */
	d.max_model_len = 1ull << 20;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_int_equal(a.context_tokens_for_n[0], s.kv_capacity_tokens);
	assert_int_equal(a.context_tokens_for_n[1], s.num_gpu_blocks / 8 * 16);
	d.max_model_len = 0;
	assert_non_null(kvs_size_questions()[0]);

	/* weights that do not fit */
	kvs_model big = load("llama-3.1-405b");
	kvs_deploy_defaults(&d, &big, &g);
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_false(a.weights_fit);
	assert_true(a.needed);
	/* quantised weights: int4 needs fewer GPUs than fp8, fp8 no more than
	 * bf16's first layout; every layout that holds one is listed */
	assert_true(a.fp8_weights.tp > 0 && a.int4_weights.tp > 0);
	assert_true(a.int4_weights.tp * a.int4_weights.pp <= a.fp8_weights.tp * a.fp8_weights.pp);
	assert_true(a.n_parallel > 0);
	assert_true(a.fp8_weights.tp * a.fp8_weights.pp <=
		    a.parallel[0].tp * a.parallel[0].pp);
	assert_true(a.n_parallel > 6);
	d.weight_dtype = KVS_DTYPE_INT4;   /* already that narrow: nothing to offer */
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_int_equal(a.int4_weights.tp, 0);
	assert_int_equal(a.fp8_weights.tp, 0);
	/* windowed: Mistral fits any context once the window fits */
	kvs_model mi = load("mistral-7b");
	kvs_deploy_defaults(&d, &mi, &g);
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_int_equal(a.context_tokens_for_n[0], s.max_model_len);

	/* few conversations: the cache stays below the weights, yet only 3 fit */
	kvs_model l70 = load("llama-3-70b");
	kvs_gpu h100 = gpu("h100-80gb");
	kvs_deploy_defaults(&d, &l70, &h100);
	d.tp = 4;
	d.context_tokens = d.max_model_len = 131072;
	assert_int_equal(kvs_size_compute(&d, &s), KVS_OK);
	assert_int_equal(kvs_size_advise(&d, &s, &a), KVS_OK);
	assert_true(s.max_conversations < KVS_ADVICE_FEW_CONVERSATIONS);
	assert_false(a.cache_exceeds_weights);
	assert_true(a.few_conversations);
	assert_true(a.needed);
}

/* The invariants of docs/SIZING.md over every preset and a grid of
 * deployments. */
static void test_invariants(void **state)
{
	(void)state;
	static const uint64_t contexts[] = { 1, 15, 16, 17, 1000, 4095, 4096, 4097, 8192,
					     100000, 131072 };
	static const uint32_t blocks[] = { 1, 8, 16, 32, 128 };
	static const uint32_t tps[] = { 1, 2, 8 };
	static const kvs_dtype kvd[] = { KVS_DTYPE_BF16, KVS_DTYPE_FP8, KVS_DTYPE_INT4 };
	kvs_gpu g = gpu("h200-141gb");
	size_t checked = 0;
	for (const char *const *p = kvs_model_preset_names(); *p; p++) {
		kvs_model m = load(*p);
		for (size_t ti = 0; ti < KVS_ARRAY_LEN(tps); ti++)
		for (size_t bi = 0; bi < KVS_ARRAY_LEN(blocks); bi++)
		for (size_t ci = 0; ci < KVS_ARRAY_LEN(contexts); ci++)
		for (size_t di = 0; di < KVS_ARRAY_LEN(kvd); di++) {
			kvs_deploy d;
			kvs_sizing s;
			kvs_deploy_defaults(&d, &m, &g);
			d.tp = tps[ti];
			d.pp = ti == 2 ? 2 : 1;
			d.block_size = blocks[bi];
			d.context_tokens = contexts[ci];
			d.kv_dtype = kvd[di];
			d.kv_quant_group = di == 2 ? 32 : 0;
			kvs_status st = kvs_size_compute(&d, &s);
			if (m.num_heads % d.tp) {  /* e.g. Qwen2.5-7B's 28 heads at tp 8 */
				assert_int_equal(st, KVS_ERR_INVALID);
				continue;
			}
			if (st != KVS_OK)
				fail_msg("%s tp %u: %s", *p, d.tp, kvs_last_error());
			if (s.kv_budget_bytes)
				assert_int_equal(s.kv_budget_bytes + s.weight_bytes + s.reserve_bytes,
						 s.usable_bytes);
			assert_true(s.num_gpu_blocks * s.bytes_per_block <= s.kv_budget_bytes);
			assert_true(s.kv_budget_bytes < (s.num_gpu_blocks + 1) * s.bytes_per_block);
			assert_true((double)s.max_conversations <= s.max_concurrency + 1e-9);
			assert_true(s.bytes_per_context <= contexts[ci] * s.kv_bytes_per_token);
			if (!s.sliding_layers_per_rank) {
				assert_int_equal(s.bytes_per_context,
						 contexts[ci] * s.kv_bytes_per_token);
				assert_int_equal(s.max_conversations,
						 s.num_gpu_blocks /
						 ((contexts[ci] + blocks[bi] - 1) / blocks[bi]));
			}
			checked++;
		}
	}
	/* 35 presets at 3 parallel layouts, all but the three of Qwen2-7B's
	 * shape (qwen2.5-7b, qwen2-vl-7b, qwen2.5-vl-7b) at tp 8 */
	assert_int_equal(checked, (35 * 3 - 3) * 5 * 11 * 3);
}

/* A bad unit inside a GPU preset: the message keeps the unit error (the
 * cause) after the file, GPU and field, each named once. */
static void test_gpu_preset_error_keeps_cause(void **state)
{
	(void)state;
	char dir[256];
	snprintf(dir, sizeof dir, "%s/kvsim-test-%d-gpudata",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	mkdir(dir, 0700);
	char path[512];
	snprintf(path, sizeof path, "%s/gpus.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"gpus\": {\"h100-80gb\": {\"memory\": \"80XB\", "
	      "\"hbm_gb_per_s\": 3350, \"fp16_dense_tflops\": 989}}}\n", f);
	fclose(f);
	const char *old = getenv("KVSIM_DATADIR");
	char *saved = old ? strdup(old) : NULL;
	setenv("KVSIM_DATADIR", dir, 1);
	kvs_gpu g;
	kvs_status st = kvs_gpu_preset("h100-80gb", &g);
	if (saved) {
		setenv("KVSIM_DATADIR", saved, 1);
		free(saved);
	} else {
		unsetenv("KVSIM_DATADIR");
	}
	unlink(path);
	rmdir(dir);
	assert_int_equal(st, KVS_ERR_PARSE);
	const char *msg = kvs_last_error();
	char want[1024];
	snprintf(want, sizeof want, "%s: gpu 'h100-80gb': field 'memory': "
		 "'80XB': unknown unit 'XB' (use B, KB, MB, GB, TB, KiB, MiB, "
		 "GiB or TiB)", path);
	assert_string_equal(msg, want);
	/* the field is named once: the old message repeated it garbled */
	assert_ptr_equal(strstr(strstr(msg, "field 'memory'") + 1, "field 'memory'"), NULL);
}

/* kvs_fail_wrap prefixes context and keeps the cause; kvs_fail may read
 * the thread's message while replacing it. */
static void test_fail_wrap(void **state)
{
	(void)state;
	kvs_fail(KVS_ERR_INVALID, "inner %d", 7);
	assert_int_equal(kvs_fail_wrap(KVS_ERR_PARSE, "outer %s", "x"), KVS_ERR_PARSE);
	assert_string_equal(kvs_last_error(), "outer x: inner 7");
	assert_int_equal(kvs_fail_wrap(KVS_ERR_PARSE, "top"), KVS_ERR_PARSE);
	assert_string_equal(kvs_last_error(), "top: outer x: inner 7");
	kvs_fail(KVS_ERR_INVALID, "%s and %s", kvs_last_error(), kvs_last_error());
	assert_string_equal(kvs_last_error(), "top: outer x: inner 7 and top: outer x: inner 7");
	kvs_fail_static(KVS_ERR_NOSPACE, "no room");
	assert_string_equal(kvs_last_error(), "no room");
	kvs_fail_wrap(KVS_ERR_STATE, "request 3");
	assert_string_equal(kvs_last_error(), "request 3: no room");
	kvs_clear_error();
	assert_string_equal(kvs_last_error(), "");
	kvs_fail_wrap(KVS_ERR_NOMEM, "loading");
	assert_string_equal(kvs_last_error(), "loading: out of host memory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_example),
		cmocka_unit_test(test_presets_match_reference),
		cmocka_unit_test(test_moe_and_mla_params),
		cmocka_unit_test(test_tp_pp),
		cmocka_unit_test(test_sliding_windows),
		cmocka_unit_test(test_vllm_hybrid_lines),
		cmocka_unit_test(test_quantised_cache),
		cmocka_unit_test(test_weights_and_reserve),
		cmocka_unit_test(test_size_validation),
		cmocka_unit_test(test_unknown_presets),
		cmocka_unit_test(test_gpu_presets),
		cmocka_unit_test(test_datadir_env),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_text),
		cmocka_unit_test(test_config_variants),
		cmocka_unit_test(test_quant_wide_modules),
		cmocka_unit_test(test_quant_wide_projections),
		cmocka_unit_test(test_text_defaults),
		cmocka_unit_test(test_vision_tower),
		cmocka_unit_test(test_vision_profile),
		cmocka_unit_test(test_quant_wide_405b_fp8),
		cmocka_unit_test(test_data_expert_parallel),
		cmocka_unit_test(test_parse_bytes),
		cmocka_unit_test(test_shrinks),
		cmocka_unit_test(test_long_context_advice),
		cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_gpu_preset_error_keeps_cause),
		cmocka_unit_test(test_fail_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
