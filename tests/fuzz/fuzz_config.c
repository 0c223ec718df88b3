/*
 * fuzz_config.c - libFuzzer harness for the Hugging Face config.json parser
 * (kvs_model_from_json_text), built by run.sh.  The first input byte picks
 * the deployment (tp, KV dtype, block size, context, four data-parallel
 * ranks with expert parallelism, INT4 weights) that sizes a parsed model,
 * so the arithmetic of the sizing runs on every shape the parser accepts.
 * Checks: no crash, no sanitizer report, every refusal carries a message,
 * and an accepted model has the fields sizing relies on.
 */
#include "kvsim/model.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t ctl = data[0];
	data++;
	size--;
	kvs_model m;
	memset(&m, 0xA5, sizeof m); /* untouched on failure: must not be read */
	kvs_clear_error();
	kvs_status st = kvs_model_from_json_text("fuzz.json", (const char *)data, size, &m);
	if (st != KVS_OK) {
		kvs_require(kvs_last_error()[0] != '\0');
		kvs_require(strstr(kvs_last_error(), "fuzz.json") != NULL);
		return 0;
	}
	kvs_require(m.num_layers >= 1 && m.num_heads >= 1 && m.num_kv_heads >= 1);
	kvs_require(m.head_dim >= 1 || m.kv_lora_rank >= 1);
	/* the parts kept at 16 bits are parts of the model */
	kvs_require(kvs_model_wide_params(&m) <= m.num_params);
	/* the vision tower too, and apart from them */
	kvs_require(m.vision_params <= m.num_params - kvs_model_wide_params(&m));
	kvs_require(m.num_active_params <= m.num_params);
	kvs_gpu g;
	memset(&g, 0, sizeof g);
	snprintf(g.name, sizeof g.name, "fuzz-gpu");
	g.mem_bytes = (ctl & 1) ? 80ull << 30 : 24ull << 30;
	g.hbm_bytes_per_s = 2e12;
	g.fp16_flops = 3e14;
	g.pcie_bytes_per_s = 3.2e10;
	g.interconnect_bytes_per_s = 3e11;
	kvs_deploy d;
	kvs_deploy_defaults(&d, &m, &g);
	d.tp = 1u << ((ctl >> 1) & 3);
	d.kv_dtype = (ctl & 8) ? KVS_DTYPE_FP8 : d.kv_dtype;
	d.block_size = (ctl & 16) ? 1 : 16;
	d.context_tokens = (ctl & 32) ? 1000000 : 4000;
	if (ctl & 64) {
		d.dp = 4;
		d.expert_parallel = true;
	}
	if (ctl & 128)
		d.weight_dtype = KVS_DTYPE_INT4;
	kvs_sizing sz;
	kvs_clear_error();
	st = kvs_size_compute(&d, &sz);
	if (st != KVS_OK) {
		kvs_require(kvs_last_error()[0] != '\0');
		return 0;
	}
	kvs_require(sz.kv_budget_bytes <= sz.usable_bytes);
	kvs_require(sz.max_conversations_total == sz.max_conversations * sz.dp);
	if (ctl & 64) {
		/* spreading the experts never adds weight to a GPU */
		kvs_deploy one = d;
		one.expert_parallel = false;
		kvs_sizing s1;
		if (kvs_size_compute(&one, &s1) == KVS_OK)
			kvs_require(sz.weight_bytes <= s1.weight_bytes);
	}
	return 0;
}
