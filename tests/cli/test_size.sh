#!/usr/bin/env bash
# CLI tests of `kvsim size`: table output, JSON keys and figures, error
# messages and exit codes.  Needs $KVSIM (the built binary) and
# $KVS_SOURCE_ROOT.
set -u
ROOT="${KVS_SOURCE_ROOT:?}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
run() { kvs_run size "$@"; } # run EXPECTED_RC ARGS...: $out, $err

# JSON field (top level, integer or real): "key": value
jget() {
	printf '%s\n' "$out" | sed -n "s/^  \"$1\": \([^,]*\),\{0,1\}$/\1/p"
}

# first integer field "key": N at any depth
nget() {
	printf '%s\n' "$out" | sed -n "s/^ *\"$1\": \([0-9]*\),\{0,1\}$/\1/p" | head -n 1
}

# ---- defaults: llama-2-7b on a100-40gb at 4,000 tokens ----------------------
run 0 && {
	has "$out" "llama-2-7b on a100-40gb" "default deployment (one default GPU for every command)"
	has "$out" "2 (K and V) x 32 layers x 32 kv heads x 128 head_dim x 2 bytes (fp16) = 524,288 B" "formula"
	has "$out" "kv_bytes_per_token" "table"
	has "$out" "num_gpu_blocks" "table"
	has "$out" "max_concurrency" "table"
	has "$out" "2,097,152,000" "bytes per conversation"
	has "$out" "What shrinks it" "shrink table"
	has "$out" "GQA with 8 kv heads" "shrink table"
	has "$out" "MQA" "shrink table"
	has "$out" "FP8 cache" "shrink table"
	has "$out" "INT4 cache" "shrink table"
	has "$out" "sliding window" "shrink table"
	has "$out" "MLA latent" "shrink table"
	has "$out" "no paging" "shrink table"
}

# ---- the seed example: 80 GB - 14 GB of weights holds 31 conversations ------
seed=(--gpu-mem 80GB --params 7e9 --gpu-memory-utilization 1 --reserve 0 --context 4000)
run 0 "${seed[@]}" && {
	has "$out" "14,000,000,000" "seed weights"
	has "$out" "66,000,000,000" "seed KV budget"
	printf '%s\n' "$out" | grep -Eq '^  conversations that fit +31 ' ||
		fail "seed: 31 conversations expected: $out"
}
run 0 "${seed[@]}" --json && {
	[ "$(jget kv_bytes_per_token)" = 524288 ] || fail "seed json kv_bytes_per_token: $(jget kv_bytes_per_token)"
	[ "$(jget bytes_per_context)" = 2097152000 ] || fail "seed json bytes_per_context"
	[ "$(jget kv_budget_bytes)" = 66000000000 ] || fail "seed json kv_budget_bytes"
	[ "$(jget num_gpu_blocks)" = 7867 ] || fail "seed json num_gpu_blocks: $(jget num_gpu_blocks)"
	[ "$(jget max_conversations)" = 31 ] || fail "seed json max_conversations"
	case "$(jget max_concurrency)" in 31.46*) ;; *) fail "seed json max_concurrency: $(jget max_concurrency)" ;; esac
	for k in kv_bytes_per_token kv_bytes_per_token_total bytes_per_block bytes_per_context \
		weight_bytes reserve_bytes usable_bytes kv_budget_bytes num_gpu_blocks \
		kv_capacity_tokens max_concurrency max_conversations cache_to_weights \
		kv_formula shrinks advice questions model gpu deploy kvsim_version; do
		has "$out" "\"$k\":" "json key $k"
	done
	# snake_case keys only, sorted
	printf '%s\n' "$out" | grep -o '"[A-Za-z0-9_]*":' | grep -q '[A-Z]' && fail "json keys not snake_case"
	[ "${out:0:1}" = "{" ] || fail "json output does not start with {"
}
if command -v python3 >/dev/null 2>&1; then
	"$KVSIM" size --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["command"]=="size" and d["kv_bytes_per_token"]==524288' ||
		fail "json does not parse or has wrong figures"
fi

# ---- figures from REFERENCE.md through the CLI ------------------------------
run 0 --model llama-2-70b --gpu h100-80gb --tp 4 --json && {
	[ "$(jget kv_bytes_per_token)" = 81920 ] || fail "llama-2-70b tp 4: $(jget kv_bytes_per_token)"
	[ "$(jget kv_bytes_per_token_total)" = 327680 ] || fail "llama-2-70b tp 4 total"
}
run 0 --model deepseek-v3 --gpu h200-141gb --tp 8 --json && {
	[ "$(jget kv_bytes_per_token)" = 70272 ] || fail "deepseek-v3: $(jget kv_bytes_per_token)"
}
run 0 --model deepseek-v3 --gpu h200-141gb --tp 8 && has "$out" "(512 latent + 64 rope) x 61 layers x 2 bytes (bf16) = 70,272 B" "MLA formula"
run 0 --model gemma-2-9b --gpu h100-80gb --context 8192 --json && {
	[ "$(jget bytes_per_context)" = $((2016 * 1024 * 1024)) ] || fail "gemma-2-9b 8192: $(jget bytes_per_context)"
}
run 0 --model llama-3-8b --kv-cache-dtype fp8 --json && {
	[ "$(jget kv_bytes_per_token)" = 65536 ] || fail "llama-3-8b fp8: $(jget kv_bytes_per_token)"
}
run 0 --model llama-3-8b --kv-cache-dtype int4 --kv-quant-group 32 && has "$out" "quantisation scales" "int4 scales shown"
# size's what-if rows use the group for their FP8 and INT4 caches whatever
# the cache; a replay's cache is the one given
run 0 --model llama-3-8b --kv-quant-group 32 && has "$out" "FP8 cache (scales per 32 elements)" "what-if rows with a group"
kvs_run replay 2 -q --model llama-3-8b --kv-quant-group 32 &&
	has "$err" "--kv-quant-group applies to fp8, int8 and int4 caches; this cache is bf16" "a scale group on an unquantised cache"
run 0 --model "$ROOT/sizing/presets/models/qwen2.5-7b.json" --json && {
	[ "$(jget kv_bytes_per_token)" = 57344 ] || fail "config path: $(jget kv_bytes_per_token)"
}
run 0 --gpu-hour-price 2.5 --json && { has "$out" '"dollars_per_conv_hour":' "price"; has "$out" '"dollars_per_mtok":' "price"; }
run 0 --gpu-hour-price 2.5 && has "$out" "per conversation-hour" "price row"

# ---- long context: the ways out ---------------------------------------------
run 0 --context 128000 && {
	has "$out" "does not fit" "long context"
	has "$out" "x the weights" "long context"
	has "$out" "Ways out" "long context"
	has "$out" "more GPUs" "long context"
	has "$out" "quantised cache" "long context"
	has "$out" "PCIe" "long context offload"
	has "$out" "shorter context" "long context"
	# none fits even with half of it shared: prefix sharing is no way out
	case "$out" in *"prefix sharing"*) fail "prefix sharing offered, 0 conversations" ;; esac
	has "$out" "Ask the customer" "questions"
	has "$out" "typical context" "questions"
}

# ---- GPU memory as the driver reports it, and custom GPUs --------------------
run 0 --model llama-3.1-8b --gpu h100-80gb --max-model-len 8192 --gpu-memory-utilization 0.95 && {
	has "$out" "79.19 GiB (the total the driver reports)" "driver total named"
	has "$out" "vLLM 0.19.0 total_memory" "memory source shown"
	has "$out" "Available KV cache memory: 58.11 GiB" "vLLM line: available"
	# the vLLM 0.19 log line of the validation table: 476,000 tokens
	has "$out" "GPU KV cache size: 476,000 tokens" "vLLM line: tokens"
	has "$out" "Maximum concurrency for 8,192 tokens per request: 58.11x" "vLLM line: concurrency"
	has "$out" "- activations (8192 tokens)" "activation term"
	has "$out" "- logits, sampler (1024 seqs)" "sampler term"
	has "$out" "CUDA graphs (51 sizes)" "cuda graph term"
	has "$out" "vLLM 0.21 and later, on CUDA GPUs, subtract a profiled estimate of their own by default" "graphs: vLLM 0.21's default said"
}
run 0 --model llama-3.1-8b --gpu h100-80gb --max-model-len 8192 --gpu-memory-utilization 0.95 --json && {
	[ "$(jget num_gpu_blocks)" = 29750 ] || fail "llama-3.1-8b h100 blocks: $(jget num_gpu_blocks)"
	has "$out" '"gpu_kv_cache_tokens": 476000' "json vllm_log tokens"
	has "$out" '"activation_bytes": 838860800' "json activation: 8192 x 51200 x 2"
	has "$out" '"sampler_bytes": 1050673152' "json sampler: 1024 x 128256 x 8"
	has "$out" '"mem_source":' "json mem_source"
}
# gemma-2: vLLM's groups (21 + 21 layers) and its concurrency at
# max_model_len, windowed layers bounded by 4095 + 8192 tokens (513 blocks)
run 0 --model gemma-2-9b --gpu h100-80gb --max-model-len 8192 && {
	has "$out" "kvsim's figure (windows honoured)" "window-aware concurrency labelled"
	has "$out" "2 KV cache groups of 21 layers" "vLLM's groups named"
	has "$out" "may hold 1,025 of them: 512 for" "vLLM's blocks per request"
}
run 0 --model gemma-2-9b --gpu h100-80gb --max-model-len 8192 --json && {
	has "$out" '"blocks_per_request": 1025' "json vllm_log blocks per request"
	has "$out" '"window_groups": 1' "json vllm_log window groups"
	has "$out" '"starts": true' "json vllm_log starts"
}
# Llama 4's chunked attention: vLLM turns its hybrid manager off for it
# unless told (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1): 4 of 8
# layers chunked at 1,024 tokens; held in full, one group of 8 layers and
# 4096 / 16 = 256 blocks a request; kept, groups of 4: 256 + (1024 + 2048) / 16
cat >"$tmp/llama4.json" <<'EOF2'
{ "model_type": "llama4_text", "num_hidden_layers": 8, "num_attention_heads": 8,
  "num_key_value_heads": 2, "head_dim": 64, "hidden_size": 512, "intermediate_size": 1024,
  "vocab_size": 1000, "attention_chunk_size": 1024, "max_position_embeddings": 4096,
  "layer_types": ["chunked_attention", "full_attention", "chunked_attention", "full_attention",
                  "chunked_attention", "full_attention", "chunked_attention", "full_attention"] }
EOF2
run 0 --model "$tmp/llama4.json" --gpu a100-40gb --json && {
	has "$out" '"windows_in_full": true' "chunked attention held in full by default"
	has "$out" '"group_layers": 8' "one group of every layer"
	has "$out" '"blocks_per_request": 256' "full blocks only"
}
run 0 --model "$tmp/llama4.json" --gpu a100-40gb &&
	has "$out" "vLLM turns its hybrid manager off for chunked" "default said"
run 0 --model "$tmp/llama4.json" --gpu a100-40gb --allow-chunked-local-attn-with-hybrid-kv-cache --json && {
	has "$out" '"windows_in_full": false' "opt-in keeps the chunks"
	has "$out" '"group_layers": 4' "groups of 4"
	has "$out" '"blocks_per_request": 448' "full 256 + chunked (1024 + 2048) / 16"
}
run 0 --model "$tmp/llama4.json" --gpu a100-40gb --engine sglang --json &&
	has "$out" '"windows_in_full": false' "other engines keep the chunks"
# the advice reads the layers as held: in full, 32 contexts of 286,704
# tokens fill the 9,174,592-token pool (the chunks honoured would claim
# 572,368 each)
sed 's/"max_position_embeddings": 4096/"max_position_embeddings": 1048576/' "$tmp/llama4.json" \
	>"$tmp/llama4-long.json"
run 0 --model "$tmp/llama4-long.json" --gpu a100-40gb --context 1000000 --json && {
	has "$out" '"kv_capacity_tokens": 9174592' "pool of the layers held in full"
	printf '%s' "$out" | python3 -c 'import json, sys
a = json.load(sys.stdin)["advice"]["shorter_context"]
assert [r["max_context_tokens"] for r in a if r["conversations"] == 32] == [286704], a' ||
		fail "advice over the held layers"
}
run 2 --model gpt-oss-120b --gpu h100-80gb --engine sglang --disable-hybrid-kv-cache-manager &&
	has "$err" "--disable-hybrid-kv-cache-manager is a vLLM option" "flag gated on vLLM"
# --disable-hybrid-kv-cache-manager: gpt-oss's windowed layers held in full
run 0 --model gpt-oss-120b --gpu h100-80gb --disable-hybrid-kv-cache-manager && {
	has "$out" "KV held in full (--disable-hybrid-kv-cache-manager)" "hybrid manager off said"
	has "$out" "Maximum concurrency for 131,072 tokens per request: 0.89x" "one group at max_model_len"
}
run 0 --model gpt-oss-120b --gpu h100-80gb --disable-hybrid-kv-cache-manager --json &&
	has "$out" '"disable_hybrid_kv_cache_manager": true' "json hybrid manager off"
# vLLM refuses to start when one max_model_len request does not fit: 70B
# at tp 2 holds 18,160 tokens (1,135 blocks) on an H100 at 128K
run 0 --model llama-3.1-70b --gpu h100-80gb --tp 2 && {
	has "$out" "vLLM would not start: one request of max_model_len 131,072 tokens" \
		"refusal said"
	has "$out" "max_model_len that fits is 18,160 tokens" "fitting length named"
}
run 0 --model llama-3.1-70b --gpu h100-80gb --tp 2 --json && {
	has "$out" '"starts": false' "json refusal"
	has "$out" '"fit_max_model_len": 18160' "json fitting length"
}
# the check reads the memory vLLM found, before a block-count override:
# a large override does not lift the refusal, and a small one does not
# cause one (18,160 tokens is 1,135 blocks of the profiled 2.77 GiB)
run 0 --model llama-3.1-70b --gpu h100-80gb --tp 2 --num-gpu-blocks-override 100000 --json && {
	has "$out" '"starts": false' "override does not lift the refusal"
	has "$out" '"fit_max_model_len": 18160' "fitting length from the profiled memory"
	has "$out" '"num_blocks": 100000' "override's blocks"
}
run 0 --model llama-3.1-70b --gpu h100-80gb --tp 2 --max-model-len 16384 --num-gpu-blocks-override 10 && {
	case "$out" in *"vLLM would not start"*) fail "a small override refused" ;; esac
	has "$out" "GPU KV cache size: 160 tokens" "override's tokens"
}
cat >"$tmp/mygpu.json" <<'EOF2'
{ "memory": "22.5GiB", "memory_source": "cudaMemGetInfo on our card",
  "hbm_gb_per_s": 600, "fp16_dense_tflops": 150, "fp8_dense_tflops": 300,
  "int8_dense_tops": 300, "pcie_gb_per_s": 32, "interconnect_gb_per_s": 32 }
EOF2
run 0 --gpu "$tmp/mygpu.json" --model llama-3-8b --dtype fp8 --json && {
	[ "$(jget usable_bytes)" = 21743271936 ] || fail "custom gpu usable: $(jget usable_bytes)"   # 22.5 GiB x 0.9
	has "$out" '"name": "mygpu"' "custom gpu named after its file"
}
run 0 --gpu "$tmp/mygpu.json" --model llama-3-8b --dtype fp8 && {
	has "$out" "cudaMemGetInfo on our card" "custom memory source"
	has "$out" "matmuls at the FP8 rate, 300 TFLOP/s" "fp8 rate used"
}
# smi_memory, the total nvidia-smi shows, sizes SGLang's default: 24,000
# MiB is below 35 GiB (chunked_prefill_size 2048, cuda_graph_max_bs 24): a
# reserve of 512 + 3,072 + 48 + 128 = 3,760 MiB, 1 - 3,760 / 24,000 = 0.843
sed 's/"memory_source": "cudaMemGetInfo on our card",/&  "smi_memory": "24000MiB",/' \
	"$tmp/mygpu.json" >"$tmp/smigpu.json"
run 0 --gpu "$tmp/smigpu.json" --model llama-3-8b --engine sglang --json &&
	has "$out" '"fraction": 0.843' "custom gpu: smi_memory read"
sed 's/"memory_source": "cudaMemGetInfo on our card",/&  "smi_memory": "24000",/' \
	"$tmp/mygpu.json" >"$tmp/smibad.json"
run 1 --gpu "$tmp/smibad.json" && has "$err" "smibad.json: gpu 'smibad': field 'smi_memory'" "custom gpu: bad smi_memory"
printf '{ "memory": "22GiB", "hbm_gb_per_s": 600 }\n' >"$tmp/badgpu.json"
run 1 --gpu "$tmp/badgpu.json" && has "$err" "badgpu.json: gpu 'badgpu': missing field 'fp16_dense_tflops'" "custom gpu: missing field"
printf '{ "name": "", "memory": "22GiB", "hbm_gb_per_s": 600, "fp16_dense_tflops": 100 }\n' >"$tmp/noname.json"
run 1 --gpu "$tmp/noname.json" && has "$err" "noname.json: field 'name' must be a non-empty string" "custom gpu: empty name"
printf '{ "memory": "22", "hbm_gb_per_s": 600 }\n' >"$tmp/badmem.json"
run 1 --gpu "$tmp/badmem.json" && has "$err" "field 'memory'" "custom gpu: bad memory"
# a misspelt field is refused, with the nearest name; rates below 0.001 of
# their unit are misplaced units; an unreadable file names itself and the cause
printf '{ "memroy": "22GiB", "hbm_gb_per_s": 600, "fp16_dense_tflops": 150, "pcie_gb_per_s": 32, "interconnect_gb_per_s": 32 }\n' >"$tmp/typo.json"
run 1 --gpu "$tmp/typo.json" && has "$err" "unknown field 'memroy'; did you mean 'memory'?" "custom gpu: misspelt field"
printf '{ "memory": "22GiB", "hbm_gb_per_s": 1e-300, "fp16_dense_tflops": 150, "pcie_gb_per_s": 32, "interconnect_gb_per_s": 32 }\n' >"$tmp/slow.json"
run 1 --gpu "$tmp/slow.json" && has "$err" "field 'hbm_gb_per_s' must be a number in [0.001, 1e9)" "custom gpu: rate too small"
run 1 --gpu "$tmp/nonexist.json" && {
	has "$err" "nonexist.json: GPU file: cannot open: No such file or directory" "missing gpu file"
	case "$err" in *":-1"*) fail "missing gpu file: jansson's line -1 shown: $err" ;; esac
}
mkdir -p "$tmp/gpudir.json"
run 1 --gpu "$tmp/gpudir.json" && has "$err" "gpudir.json: GPU file: is a directory" "gpu file is a directory"
run 0 --gpu-mem 80GB && has "$err" "warning: --gpu-mem without --gpu: the bandwidth and FLOP/s of the default GPU a100-40gb are borrowed" "borrowed speed warned"
run 0 --gpu-mem 80GB --gpu h100-80gb && { [ -z "$err" ] || fail "no warning with --gpu: $err"; has "$out" "(--gpu-mem)" "gpu-mem named"; }

# ---- engines and vLLM's overrides --------------------------------------------
# SGLang's default mem_fraction_static from the GPU's size (the default GPU,
# an A100-40GB of 40,960 MiB: 1 - 6,848 / 40,960 = 0.833; an H100 of
# 81,559 MiB: 1 - 13,440 / 81,559 = 0.835, the value SGLang logs there)
run 0 --engine sglang --json && { has "$out" '"engine": "sglang"' "sglang"; has "$out" '"fraction": 0.833' "sglang default fraction"; }
run 0 --engine sglang --gpu h100-80gb --json && has "$out" '"fraction": 0.835' "sglang default fraction, h100"
run 0 --engine sglang --gpu h100-80gb && has "$out" "usable (x 0.835 mem_fraction_static)" "sglang fraction shown" &&
	has "$out" "SGLang's default for 81,559 MiB (nvidia-smi), tp 1 x pp 1" "sglang default's inputs shown"
run 0 --engine sglang --mem-fraction-static 0.8 --json && has "$out" '"fraction": 0.8' "mem-fraction-static"
run 0 --engine trtllm && has "$out" "As trtllm would size it" "trtllm"
run 2 --mem-fraction-static 0.8 && has "$err" "--mem-fraction-static applies to --engine sglang only" "fraction needs sglang"
run 2 --engine foo && has "$err" "--engine: unknown engine 'foo'" "bad engine"
run 0 --num-gpu-blocks-override 1000 --json && {
	[ "$(jget num_gpu_blocks)" = 1000 ] || fail "override blocks: $(jget num_gpu_blocks)"
	[ "$(jget kv_budget_bytes)" = $((1000 * 16 * 524288)) ] || fail "override budget"
}
run 0 --kv-cache-memory-bytes 10GiB --json && [ "$(jget num_gpu_blocks)" = 1280 ] || fail "kv-cache-memory-bytes 10 GiB / 8 MiB"
run 2 --engine sglang --num-gpu-blocks-override 5 && has "$err" "is a vLLM option" "override needs vllm"
run 0 --max-num-seqs 64 --max-num-batched-tokens 1024 --json && {
	has "$out" '"profile_tokens": 1024' "profile tokens flag"
	has "$out" '"sampler_bytes": 16384000' "64 x 32000 x 8"
}

# ---- help -------------------------------------------------------------------
run 0 --help && for f in --model --gpu --gpu-mem --gpu-memory-utilization --tp --pp --dtype \
	--kv-cache-dtype --kv-quant-group --block-size --context --max-model-len --reserve \
	--layers --kv-heads --head-dim --params --gpu-hour-price --json --engine \
	--mem-fraction-static --free-gpu-memory-fraction --num-gpu-blocks-override \
	--kv-cache-memory-bytes --max-num-seqs --max-num-batched-tokens; do
	has "$out" "$f" "help lists $f"
done
"$KVSIM" help size >/dev/null || fail "kvsim help size"

# ---- bad input --------------------------------------------------------------
run 2 --model llama-9-9b && { has "$err" "unknown model 'llama-9-9b'" "unknown model"; has "$err" "llama-2-7b" "lists models"; has "$err" "deepseek-v3" "lists models"; }
run 2 --gpu a200 && { has "$err" "unknown GPU 'a200'" "unknown gpu"; has "$err" "h100-80gb" "lists gpus"; }
printf '{"num_attention_heads": 32, "hidden_size": 4096}\n' >"$tmp/config.json"
run 1 --model "$tmp/config.json" && { has "$err" "num_hidden_layers" "missing field named"; has "$err" "$tmp/config.json" "file named"; }
printf '{"num_hidden_layers": 32,\n "num_attention_heads": }\n' >"$tmp/bad.json"
run 1 --model "$tmp/bad.json" && has "$err" "$tmp/bad.json:2:" "json syntax error names line"
run 1 --model "$tmp/missing.json" && has "$err" "missing.json: cannot open: No such file" "missing file"
mkdir "$tmp/cfgdir"
run 1 --model "$tmp/cfgdir" && has "$err" "cfgdir: is a directory" "directory as config"
printf '{"num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096}\n' >"$tmp/types.json"
run 1 --model "$tmp/types.json" && has "$err" "field 'num_hidden_layers': expected an integer" "wrong type"
printf '{"num_hidden_layers": {"a": [1]}, "num_attention_heads": 32, "hidden_size": 4096}\n' >"$tmp/nest.json"
run 1 --model "$tmp/nest.json" && has "$err" "field 'num_hidden_layers'" "nested garbage"
printf '[]\n' >"$tmp/array.json"
run 1 --model "$tmp/array.json" && has "$err" "expected a JSON object" "array config"
run 2 --gpu-mem 1e30GB && has "$err" "does not fit in 64 bits" "huge --gpu-mem"
run 2 --gpu-mem nanGB && has "$err" "is not a size" "NaN --gpu-mem"
run 2 --gpu-mem 0x10GB && has "$err" "is not a size" "hex --gpu-mem"
run 2 --gpu-mem 0.4B && has "$err" "less than one byte" "--gpu-mem rounding to 0 is not 'from the preset'"
run 2 --gpu-hour-price 0x1p3 && has "$err" "--gpu-hour-price: expected a number" "hex float"
run 2 --context 18446744073709551616 && has "$err" "--context: 18446744073709551616 is too large" "context past 2^64"
run 2 --gpu-memory-utilization nan && has "$err" "expected a number" "NaN utilization"
run 2 --gpu-memory-utilization inf && has "$err" "expected a number" "inf utilization"
# results that cannot reach standard output fail
if [ -w /dev/full ]; then
	"$KVSIM" size >/dev/full 2>"$tmp/err"
	[ $? -eq 1 ] || fail "size to a full stdout exits 1"
	has "$(cat "$tmp/err")" "standard output: write failed" "full stdout"
	"$KVSIM" size --json >/dev/full 2>/dev/null
	[ $? -eq 1 ] || fail "size --json to a full stdout exits 1"
fi
run 2 --context 0 && has "$err" "--context: must be at least 1" "zero"
run 0 --context 8000 --max-model-len 4096 &&
	has "$err" "warning: --context 8,000 is beyond --max-model-len 4,096" "context past the given max_model_len"
run 0 --context 4096 --max-model-len 4096 && case "$err" in *"beyond --max-model-len"*) fail "context at max_model_len warned";; esac
run 2 --context -5 && has "$err" "--context: must be positive" "negative"
run 2 --context abc && has "$err" "expected a positive integer, got 'abc'" "non-numeric"
run 2 --context 4x && has "$err" "expected a positive integer" "suffix"
run 2 --context 4.5K && has "$err" "expected a token count" "binary suffix on a decimal"
# vLLM's human-readable token counts: k = 10^3, K = 2^10, decimals with k/m
for pair in 8k:8000 8K:8192 128k:128000 1.5k:1500 1M:1048576 25.6k:25600; do
	run 0 --context "${pair%%:*}" --max-model-len 2M --json &&
		[ "$(nget context_tokens)" = "${pair#*:}" ] ||
		fail "--context ${pair%%:*} is ${pair#*:} tokens (got $(nget context_tokens))"
done
run 0 --max-model-len 8K --json && [ "$(nget max_model_len)" = 8192 ] || fail "--max-model-len 8K"
run 2 --context 99999999999999999999999 && has "$err" "too large" "overflowing number"
run 2 --context 1000000000000000000 && has "$err" "does not fit in 64 bits" "overflowing size"
run 2 --tp 0 && has "$err" "--tp" "tp zero"
run 2 --tp 3 && has "$err" "does not divide" "tp not dividing heads"
run 2 --block-size 0 && has "$err" "--block-size" "block zero"
run 2 --gpu-memory-utilization 0 && has "$err" "must be greater than 0" "util zero"
run 2 --gpu-memory-utilization 1.5 && has "$err" "too large" "util > 1"
run 2 --gpu-memory-utilization x && has "$err" "expected a number" "util non-numeric"
run 2 --gpu-mem 80 && has "$err" "no unit" "unit required"
run 2 --gpu-mem 80XB && has "$err" "unknown unit" "bad unit"
run 2 --gpu-mem 0GB && has "$err" "greater than zero" "zero memory"
run 2 --gpu-mem 99999999TB && has "$err" "64 bits" "memory overflow"
run 2 --reserve 10 && has "$err" "--reserve" "reserve unit"
run 2 --params -7 && has "$err" "--params" "negative params"
run 2 --kv-cache-dtype fp7 && has "$err" "unknown data type 'fp7'" "bad dtype"
run 2 --kv-heads 5 && has "$err" "--kv-heads" "kv heads not dividing"
run 2 --model deepseek-v3 --kv-heads 8 && has "$err" "MLA" "kv heads on MLA"
run 2 --gpu-hour-price -1 && has "$err" "--gpu-hour-price" "negative price"
run 2 --bogus && has "$err" "unknown option '--bogus'" "unknown flag"
run 2 --model && has "$err" "missing value" "missing value"
run 2 stray && has "$err" "unexpected argument 'stray'" "positional"

# the long-context case must not be an error
run 0 --model llama-3.1-405b && has "$out" "do not" "405b on one GPU: weights do not fit"

# ---- one source of the engine's batch defaults -------------------------------
# size's profile run and replay's scheduler take vLLM's `vllm serve` limits
# for the GPU, so the pool replay simulates is the one size prints
for spec in "a100-80gb:256:2048" "h100-80gb:1024:8192" "a100-40gb:256:2048"; do
	IFS=: read -r g seqs toks <<<"$spec"
	run 0 --model llama-3-8b --gpu "$g" --json || continue
	blocks=$(nget num_gpu_blocks)
	[ "$(nget profile_seqs)" = "$seqs" ] && [ "$(nget profile_tokens)" = "$toks" ] ||
		fail "size on $g: profile run $(nget profile_seqs) seqs, $(nget profile_tokens) tokens"
	kvs_run replay 0 --model llama-3-8b --gpu "$g" --limit 1 || continue
	has "$out" "($blocks blocks of 16)" "replay's pool on $g is size's"
	has "$out" "max_num_seqs $seqs, max_num_batched_tokens $toks" "replay's limits on $g"
done
# given limits are used by both
run 0 --model llama-3-8b --gpu h100-80gb --max-num-seqs 256 --max-num-batched-tokens 2048 --json &&
	blocks=$(nget num_gpu_blocks) &&
	kvs_run replay 0 --model llama-3-8b --gpu h100-80gb --max-num-seqs 256 \
		--max-num-batched-tokens 2048 --limit 1 &&
	has "$out" "($blocks blocks of 16)" "replay's pool with given limits"
# a fleet pool on another GPU than --gpu takes that GPU's defaults
run 0 --model llama-3-8b --gpu h100-80gb --json && blocks=$(nget num_gpu_blocks) &&
	kvs_run fleet 0 --model llama-3-8b --pool big:1:h100-80gb:1 --limit 1 &&
	has "$out" "($blocks blocks of 16)" "fleet pool's pool on h100-80gb" &&
	has "$out" "max_num_seqs 1024, max_num_batched_tokens 8192" "fleet pool's limits"

# ---- long-context guidance: few conversations, max_model_len -----------------
# 3 conversations of 128K on 4 H100s: the cache is below the weights, but
# the ways out are due, and no --context the user gave is suggested
run 0 --model llama-3-70b --gpu h100-80gb --tp 4 --context 128K --max-model-len 128K --json "$tmp/l70.json" && {
	has "$out" "Only 3 conversations of 131,072 tokens fit per replica" "few conversations"
	has "$out" "Ways out" "few conversations: ways out"
	has "$out" "1 up to 131,072 tokens (max_model_len)" "shorter context capped at max_model_len"
	has "$out" "6 conversations fit (now 3)" "prefix sharing where it helps"
	case "$out" in *"try --context"*) fail "suggests a --context at 128K" ;; esac
	grep -q '"few_conversations": true' "$tmp/l70.json" || fail "few_conversations in JSON"
}
# many conversations at a long context: no suggestion of --context 128000
run 0 --model llama-3.1-70b --gpu h200-141gb --tp 8 --context 128000 && {
	has "$out" "no long-context trouble" "long context, many fit"
	case "$out" in *"try --context"*) fail "suggests --context 128000 at 128000" ;; esac
}
# --max-model-len past the model's positions: warned, as vLLM refuses it
# unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set
for cmd in size replay; do
	lim=(); [ "$cmd" = replay ] && lim=(--limit 1)
	kvs_run "$cmd" 0 --model llama-3-8b --max-model-len 128K ${lim[@]+"${lim[@]}"} &&
		has "$err" "--max-model-len 131,072 is beyond llama-3-8b's max_position_embeddings (8,192)" "$cmd: long max_model_len" &&
		has "$err" "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" "$cmd: how to override"
	VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 kvs_run "$cmd" 0 --model llama-3-8b --max-model-len 128K \
		${lim[@]+"${lim[@]}"} && case "$err" in *beyond*) fail "$cmd: warned with the variable set" ;; esac
done
run 0 --model llama-3-8b --max-model-len 8K && [ -z "$err" ] || fail "warning at max_model_len 8K"
# llama-3.1-70b: a preset of its own (131,072 positions)
run 0 --model llama-3.1-70b --gpu h100-80gb --tp 4 --context 128K --json && {
	[ "$(nget max_position_embeddings)" = 131072 ] || fail "llama-3.1-70b positions"
	[ "$(nget num_layers)" = 80 ] || fail "llama-3.1-70b layers"
	[ -z "$err" ] || fail "llama-3.1-70b at 128K warns: $err"
}

# ---- per GPU and per replica ------------------------------------------------
# at tp 4 the conversations are the replica's, and a conversation's KV is
# given per GPU and summed over the replica
run 0 --model llama-3-70b --gpu h100-80gb --tp 4 --context 8K && {
	has "$out" "tokens and conversations per replica of 4 GPUs" "replica named in the header"
	has "$out" "640.00 MiB" "per conversation per GPU"
	has "$out" "2.50 GiB, summed over the replica's 4 GPUs" "per conversation, replica"
	has "$out" "per replica, whole conversations in whole blocks" "conversations per replica"
}
run 0 --model llama-3-70b --gpu h100-80gb --tp 4 --context 8K --json &&
	[ "$(jget bytes_per_context_replica)" = $((4 * $(jget bytes_per_context))) ] ||
	fail "bytes_per_context_replica is 4 x bytes_per_context at tp 4"
run 0 --model llama-3-8b --context 8K --json &&
	[ "$(jget bytes_per_context_replica)" = "$(jget bytes_per_context)" ] ||
	fail "bytes_per_context_replica at one GPU"
# pp: the replica holds every layer once
run 0 --model llama-3-70b --gpu h100-80gb --pp 3 --context 8K --json &&
	[ "$(jget bytes_per_context_replica)" = $((8192 * 80 * 2 * 8 * 128 * 2)) ] ||
	fail "bytes_per_context_replica at pp 3: $(jget bytes_per_context_replica)"
run 0 && case "$out" in *"per replica, whole"* | *"replica of"*) fail "one GPU: 'per replica' printed" ;; esac

# ---- weights that do not fit: only the ways out that work -------------------
run 0 --model llama-3-70b --gpu l4 --json "$tmp/l4.json" && {
	has "$out" "quantised weights" "weights do not fit: quantised weights offered"
	has "$out" "--dtype int4 tp 2  pp 2  ( 4 GPUs): 29 conversations" "int4 weights on 4 L4s"
	has "$out" "--dtype fp8  tp 4  pp 1  ( 4 GPUs): 5 conversations" "fp8 weights on 4 L4s"
	for no in "quantised cache" "offload to host" "offload the whole" "shorter context:" \
		"prefix sharing" "up to 0 tokens"; do
		case "$out" in *"$no"*) fail "weights do not fit, yet '$no' offered" ;; esac
	done
	# quantised weights come before more GPUs
	q=${out%%quantised weights*}
	g=${out%%more GPUs*}
	[ ${#q} -lt ${#g} ] || fail "quantised weights after more GPUs"
	grep -q '"int4_weights": {' "$tmp/l4.json" || fail "int4_weights in JSON"
}
# every layout that holds a conversation is listed (no cut at 6 rows)
run 0 --model llama-3-70b --gpu h100-80gb --context 128K --max-model-len 128K && {
	has "$out" "tp 8  pp 2  (16 GPUs)" "tp 8 x pp 2 listed"
	has "$out" "tp 16 pp 1  (16 GPUs)" "tp 16 listed"
	has "$out" "tp 16 pp 4  (64 GPUs)" "64 GPUs listed"
}

# ---- modules a quantised checkpoint keeps at 16 bits -------------------------
# The gpt-oss-120b preset (the shape fields of its published config.json):
# MXFP4 experts, attention and routers kept at bf16 by
# modules_to_not_convert.  Everything but the embeddings at 4.25 bits is
# 63,745,386,572 B; attention (2880 x 4096 x 2 + 2880 x 512 x 2 =
# 26,542,080 a layer) and routers (2880 x 128 = 368,640) over 36 layers,
# 968,785,920 parameters, at 2 B instead of 0.53125 B add 1,422,904,320 B.
run 0 --model gpt-oss-120b --gpu h100-80gb && {
	has "$out" "116,789,048,640 parameters" "gpt-oss-120b parameters"
	has "$out" "65,168,290,892  60.69 GiB, embeddings/lm_head, attention, routers at 16 bits" \
		"modules_to_not_convert kept wide"
	[ -z "$err" ] || fail "gpt-oss config warned: $err"
}
run 0 --model gpt-oss-120b --gpu h100-80gb --json && {
	has "$out" '"attention_layers": 36' "kept_16bit in JSON"
	has "$out" '"router_layers": 36' "kept_16bit in JSON"
	has "$out" '"weight_bytes": 65168290892' "weight bytes in JSON"
}
run 0 --model llama-3-8b --json && case "$out" in
	*kept_16bit*) fail "kept_16bit without a quantised checkpoint" ;;
esac
sed 's|"lm_head"|"lm_head", "model.layers.0.mlp"|' "$ROOT/sizing/presets/models/gpt-oss-120b.json" \
	>"$tmp/goss-mlp.json"
sed 's|"model.layers.\*.self_attn"|"model.layers.3.self_attn"|' \
	"$ROOT/sizing/presets/models/gpt-oss-120b.json" >"$tmp/goss-l3.json"
run 0 --model "$tmp/goss-l3.json" --gpu h100-80gb &&
	has "$out" "attention (1 layer)" "one layer's attention kept"
run 0 --model "$tmp/goss-l3.json" --gpu h100-80gb --layers 4 && {
	has "$err" "--layers 4: the modules" "per-layer entries dropped by --layers"
	case "$out" in *"attention (1 layer)"*) fail "per-layer entry kept after --layers" ;; esac
}
# routers of every MoE layer of an interleaved layout (Llama 4, MoE every
# 2nd of 4 layers) are all of them, not a count of layers
cat >"$tmp/l4.json" <<'EOF2'
{ "model_type": "llama4_text", "num_hidden_layers": 4, "num_attention_heads": 4,
  "num_key_value_heads": 2, "head_dim": 16, "hidden_size": 64, "intermediate_size": 32,
  "intermediate_size_mlp": 96, "num_local_experts": 4, "num_experts_per_tok": 1,
  "interleave_moe_layer_step": 2, "vocab_size": 100,
  "quantization_config": { "quant_method": "awq", "bits": 4,
    "modules_to_not_convert": ["model.layers.*.feed_forward.router"] } }
EOF2
run 0 --model "$tmp/l4.json" --gpu h100-80gb && {
	has "$out" ", routers at 16 bits" "interleaved routers, all of them"
	case "$out" in *"routers (2 layers)"*) fail "interleaved routers counted as some layers" ;; esac
}
# projections and dense MLPs kept one by one (hidden 64, 4 heads of 16, 2
# kv heads, MLP 128, vocab 100: 160,832 parameters).  Kept at 16 bits:
# the embeddings and head 12,800, q of layer 1 (64 x 64 = 4,096), gate
# and up of layer 3 (2 x 64 x 128 = 16,384), down of layers 0 and 3
# (2 x 128 x 64 = 16,384): 49,664, one byte more each at FP8 = 210,496 B.
# Layer 5 is past the model's 4: said, counted narrow.
cat >"$tmp/proj.json" <<'EOF2'
{ "model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 4,
  "num_key_value_heads": 2, "hidden_size": 64, "intermediate_size": 128, "vocab_size": 100,
  "quantization_config": { "quant_method": "fbgemm_fp8",
    "modules_to_not_convert": ["lm_head", "model.layers.0.mlp.down_proj", "model.layers.3.mlp",
      "model.layers.1.self_attn.q_proj", "model.layers.5.mlp.down_proj"] } }
EOF2
run 0 --model "$tmp/proj.json" --gpu h100-80gb && {
	has "$out" "210,496  205.56 KiB, embeddings/lm_head, q_proj (1 layer), gate/up_proj (1 layer), down_proj (2 layers) at 16 bits" \
		"projections kept one by one"
	has "$err" "does not count apart (counted at fp8): 'model.layers.5.mlp.down_proj'" \
		"a projection past the layers is said"
}
run 0 --model "$tmp/proj.json" --gpu h100-80gb --json && {
	has "$out" '"weight_bytes": 210496' "projections' weight bytes in JSON"
	has "$out" '"projection_layers": {' "projection_layers in JSON"
	has "$out" '"down_proj": 2' "projection_layers in JSON"
	has "$out" '"q_proj": 1' "projection_layers in JSON"
}
run 0 --model "$tmp/proj.json" --gpu h100-80gb --layers 2 && {
	has "$err" "--layers 2: the modules" "named projections dropped by --layers"
	has "$out" "embeddings/lm_head at 16 bits" "named projections dropped by --layers"
}
# Meta's Llama-3.1-405B-Instruct-FP8 list (scripts/llama-405b-fp8-config.sh):
# the q, k, v, o projections of all 126 layers, the MLP of layers 0 and
# 125, lm_head (tests/test_sizing.c
# derives 487,164,166,144 B; 60,895,520,768 B a GPU at tp 8)
bash "$ROOT/scripts/llama-405b-fp8-config.sh" >"$tmp/405-fp8.json"
run 0 --model "$tmp/405-fp8.json" --gpu h100-80gb --tp 8 && {
	has "$out" "60,895,520,768  56.71 GiB, this GPU's share, embeddings/lm_head, q/k/v/o_proj, MLP (2 layers) at 16 bits" \
		"405B FP8 keeps its attention and two MLPs"
	[ -z "$err" ] || fail "405B FP8 config warned: $err"
}
# expert parallelism follows a parameter count below the shape estimate
run 0 --model deepseek-v3 --params 640000000000 --gpu h200-141gb --dp 8 --enable-expert-parallel --json &&
	[ "$(jget weight_bytes)" -lt 200000000000 ] || fail "--params below the estimate drops expert parallelism: $(jget weight_bytes)"
run 0 --model "$tmp/goss-mlp.json" --gpu h100-80gb &&
	has "$err" "quantization_config lists modules kept at 16 bits that kvsim does not count apart (counted at int4): 'model.layers.0.mlp'" \
		"an MLP kept wide is said"
sed 's|"quant_method": "mxfp4"|"quant_method": "mxfp4", "lm_head": true|' \
	"$ROOT/sizing/presets/models/gpt-oss-120b.json" >"$tmp/goss-lmhead.json"
run 0 --model "$tmp/goss-lmhead.json" --gpu h100-80gb &&
	has "$err" "says \"lm_head\": true and lists lm_head among the modules kept at 16 bits" \
		"lm_head both quantised and kept"

# ---- data-parallel ranks and expert parallelism -------------------------------
# DeepSeek-V3 on eight H200s: tp 8 keeps the MLA latent whole on every GPU,
# so the eight hold the conversations of one; eight data-parallel ranks
# with the experts spread over them hold eight times a GPU's.
run 0 --model deepseek-v3 --gpu h200-141gb --tp 8 --context 32k --json && tp8=$(jget max_conversations)
run 0 --model deepseek-v3 --gpu h200-141gb --dp 8 --enable-expert-parallel --context 32k --json && {
	per=$(jget max_conversations)
	[ "$(jget max_conversations_total)" = $((per * 8)) ] || fail "dp 8: total is not 8 x $per"
	[ "$(nget dp)" = 8 ] || fail "dp in JSON"
	[ "$per" -gt 0 ] && [ $((per * 8)) -gt $((tp8 * 4)) ] ||
		fail "dp 8 with expert parallelism: $per per rank against $tp8 at tp 8"
}
run 0 --model deepseek-v3 --gpu h200-141gb --dp 8 --enable-expert-parallel --context 32k && {
	has "$out" "tp 1 x pp 1 x dp 8 (8 GPUs)" "dp in the header"
	has "$out" "32 of the 256 routed experts of a layer (expert parallel)" "experts spread"
	has "$out" "conversations on the 8 ranks (8 GPUs)" "conversations over the ranks"
}
# ... and offered as a way out when few fit at tp 8 (24 against 5 at 128K)
run 0 --model deepseek-v3 --gpu h200-141gb --tp 8 --context 128k && {
	has "$out" "data-parallel attention: --tp 1 --dp 8 --enable-expert-parallel holds" "dp offered"
	has "$out" "24 conversations on the same 8 GPUs (3 per rank; now 5)" "dp figures"
}
run 0 --model llama-3-70b --gpu h100-80gb --tp 4 --context 128k &&
	case "$out" in *"data-parallel attention"*) fail "dp offered for a dense model" ;; esac
run 0 --model llama-3-8b --dp 2 --enable-expert-parallel &&
	has "$err" "--enable-expert-parallel: llama-3-8b has no experts, it changes nothing" "EP on a dense model"
run 0 --model mixtral-8x7b --enable-expert-parallel &&
	has "$err" "without --data-parallel-size > 1" "EP without dp"
# whole experts: Mixtral's 8 over 3 GPUs put 3 on the first; 16 GPUs are
# more than its experts
run 0 --model mixtral-8x7b --gpu h100-80gb --dp 3 --enable-expert-parallel --json &&
	[ "$(jget weight_bytes)" = 37034139648 ] || fail "dp 3: 3 of 8 experts a GPU: $(jget weight_bytes)"
run 2 --model mixtral-8x7b --dp 16 --enable-expert-parallel &&
	has "$err" "the model has 8 experts per layer, fewer than one per GPU" "more GPUs than experts"
run 2 --model mixtral-8x7b --dp 2 --enable-expert-parallel=0 &&
	has "$err" "--enable-expert-parallel takes no value" "EP flag with a value"
kvs_run replay 2 -q --model llama-3-8b --dp 2 &&
	has "$err" "--data-parallel-size 2: replay simulates one engine, one data-parallel rank" "dp refused by replay" &&
	has "$err" "'kvsim fleet --dp 2' runs the 2 ranks" "replay --dp points to fleet --dp"
kvs_run compare 2 -q --model llama-3-8b --dp 2 &&
	has "$err" "--data-parallel-size 2: compare simulates one engine" "dp refused by compare"
run 2 --dp 0 && has "$err" "--dp" "dp 0 refused"
# a vLLM override past the GPU's memory: said, the figures kept as asked
run 0 --model llama-3-8b --kv-cache-memory-bytes 1TB &&
	has "$err" "warning: --kv-cache-memory-bytes: a KV pool of 931.32 GiB and 14.96 GiB of weights exceed the 39.50 GiB of one a100-40gb" "override past the GPU"
run 0 --model llama-3-8b --kv-cache-memory-bytes 20GiB &&
	case "$err" in *warning*) fail "an override that fits warned: $err" ;; esac
kvs_run replay 0 -q --limit 5 --num-gpu-blocks-override 10000000 &&
	has "$err" "warning: --num-gpu-blocks-override: a KV pool of 19531.25 GiB" "replay override past the GPU"

# ---- the examples of README.md and docs/SIZING.md ----------------------------
run 0 --model llama-2-7b --gpu a100-80gb --context 4000 && {
	has "$out" "524,288" "README tour: bytes per token"
	printf '%s\n' "$out" | grep -Eq "conversations that fit +29 " || fail "README tour: 29 conversations"
	grep -q "27 conversations" "$ROOT/README.md" && fail "README still says 27 conversations"
}
grep -q "# llama-2-7b, a100-80gb, 4,000 tokens" "$ROOT/docs/SIZING.md" &&
	fail "docs/SIZING.md: bare kvsim size is a100-40gb"

# ---- a multimodal checkpoint: the vision tower in the weights ---------------
# Gemma-3-27B-it: 27,432,406,640 parameters (the checkpoint's count), of
# which the SigLIP tower and projector 423,060,336; bf16: 2 bytes each
run 0 --model gemma-3-27b --gpu h100-80gb && {
	has "$out" "27,432,406,640 parameters (from the config's shapes), of which vision tower 0.42B" "model line"
	has "$out" "54,864,813,280" "weights"
	has "$out" "vision tower 806.92 MiB" "the tower's share of the weights"
	[ -z "$err" ] || fail "gemma-3-27b warned: $err"
}
run 0 --model gemma-3-27b --gpu h100-80gb --json && {
	[ "$(nget vision_params)" = 423060336 ] || fail "vision_params $(nget vision_params)"
	[ "$(jget vision_weight_bytes)" = 846120672 ] || fail "vision_weight_bytes $(jget vision_weight_bytes)"
}
# the tower on the first stage only, split over tp: 423,060,336 x 2 / 2
run 0 --model gemma-3-27b --gpu h100-80gb --tp 2 --pp 2 --json &&
	[ "$(jget vision_weight_bytes)" = 423060336 ] || fail "tp 2 x pp 2: vision_weight_bytes"
run 0 --model llama-3-8b --json && case "$out" in *vision*) fail "vision keys without a tower" ;; esac
# Llama 4: its own tower and projector (871,932,416, test_sizing's hand
# count), on the model line and in the weights (bf16, tp 8: / 8)
run 0 --model llama-4-maverick --gpu h200-141gb --tp 8 && {
	has "$out" "401,583,781,376 parameters (from the config's shapes), of which vision tower 0.87B" "Maverick's model line"
	[ -z "$err" ] || fail "llama-4-maverick warned: $err"
}
# vLLM's Llama 4 launch post (vLLM 0.8.3) serves Scout bf16 at tp 8 with
# --max-model-len 1,000,000 on H100 and 3,600,000 on H200: both start
for gm in h100-80gb:1000000 h200-141gb:3600000; do
	run 0 --model llama-4-scout --gpu "${gm%%:*}" --tp 8 --max-model-len "${gm#*:}" &&
		case "$out" in *"would not start"*) fail "Scout on ${gm%%:*} x 8 at ${gm#*:}: refused" ;; esac
done
run 0 --model llama-4-scout --gpu h100-80gb --tp 8 --json && {
	[ "$(nget vision_params)" = 871932416 ] || fail "Scout's vision_params $(nget vision_params)"
	[ "$(jget vision_weight_bytes)" = 217983104 ] || fail "Scout's vision_weight_bytes $(jget vision_weight_bytes)"
}
# Qwen2-VL and Qwen2.5-VL: their towers with their patch mergers
# (675,759,104 and 676,550,144, test_sizing's hand counts), on the model
# line and in the weights; Hugging Face counts Qwen2-VL-7B-Instruct at 8.29B
run 0 --model qwen2-vl-7b --gpu h100-80gb && {
	has "$out" "8,291,375,616 parameters (from the config's shapes), of which vision tower 0.68B" "Qwen2-VL's model line"
	[ -z "$err" ] || fail "qwen2-vl-7b warned: $err"
}
# vLLM's profile run of the vision tower, derived by hand.  Qwen2.5-VL on
# an L4 at max_model_len 2048: the encoder budget max(2048, 16384) holds
# one image of 16,384 tokens, 65,536 patches of 3 x 2 x 14^2 = 1,176
# pixels; a layer's tensors per patch 2 x 1280 + max(4 x 1280, 3 x 3420)
# = 12,820, so the peak is (12,820 + 1,176) x 65,536 x 2 B = 1,834,483,712;
# above the activations and sampler (262,144,000 + 311,427,072) by
# 1,260,912,640, more than the kept embeddings (16,384 x 3,584 x 2 B =
# 117,440,512).  KV budget 3,647,435,195 - 1,260,912,640 = 2,386,522,555
# B: 2,601 blocks of 917,504 B
run 0 --model qwen2.5-vl-7b --gpu l4 --max-model-len 2048 && {
	has "$out" "- vision encoder (1 item)         1,260,912,640  1.17 GiB, profile run of the tower on 65,536 patches" "encoder line on an L4"
	has "$out" "num_gpu_blocks                            2,601" "encoder term in the L4 pool"
}
# the run takes more than a tenth of the pool there: the pool without it
# (3,975 blocks of 16) and the flags that shrink it are said
run 0 --model qwen2.5-vl-7b --gpu l4 --max-model-len 2048 &&
	has "$(printf '%s' "$out" | tr '\n' ' ')" "The vision encoder's profile run takes 1.17 GiB of the pool: 41,616 tokens of KV cache, 63,600 without it" "encoder note"
run 0 --model qwen2.5-vl-7b --gpu h100-80gb &&
	case "$out" in *"profile run takes"*) fail "encoder note under a tenth" ;; esac
# no note where the pool does not come from memory, or the run costs no
# token
run 0 --model qwen2.5-vl-7b --gpu l4 --num-gpu-blocks-override 1000 &&
	case "$out" in *"profile run takes"*) fail "encoder note with a block override" ;; esac
run 0 --model qwen2.5-vl-7b --gpu l4 --gpu-memory-utilization 0.5 &&
	case "$out" in *"profile run takes"*) fail "encoder note with no pool either way" ;; esac
run 0 --model qwen2.5-vl-7b --gpu l4 --max-model-len 2048 --json && {
	[ "$(nget encoder_peak_bytes)" = 1834483712 ] || fail "L4 encoder peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_out_bytes)" = 117440512 ] || fail "L4 encoder out $(nget encoder_out_bytes)"
	[ "$(nget encoder_bytes)" = 1260912640 ] || fail "L4 encoder bytes $(nget encoder_bytes)"
	[ "$(nget encoder_patches)" = 65536 ] || fail "L4 encoder patches $(nget encoder_patches)"
	has "$out" '"encoder"' "encoder in the counted terms"
}
# on an H100 the text model's terms (8,192 tokens, 1,024 sequences) are
# above the tower's peak: only the kept embeddings count
run 0 --model qwen2.5-vl-7b --gpu h100-80gb --json &&
	[ "$(nget encoder_bytes)" = 117440512 ] || fail "H100 encoder bytes $(nget encoder_bytes)"
# tp 2 splits attention and the MLP: 2 x 1280 + max(4 x 640, 3 x 1710)
# + 1,176 = 8,866 a patch, x 65,536 x 2 B
run 0 --model qwen2.5-vl-7b --gpu l4 --tp 2 --json &&
	[ "$(nget encoder_peak_bytes)" = 1162084352 ] || fail "tp 2 encoder peak $(nget encoder_peak_bytes)"
# Qwen3-VL: patches of 3 x 2 x 16^2 = 1,536 pixels, a plain MLP: 2 x 1152
# + max(4 x 1152, 2 x 4304) + 1,536 = 12,448 a patch
run 0 --model qwen3-vl-8b --gpu l4 --json &&
	[ "$(nget encoder_peak_bytes)" = 1631584256 ] || fail "Qwen3-VL encoder peak $(nget encoder_peak_bytes)"
# Gemma 3: 8,192 / (256 + 4) = 31 images of 64^2 SigLIP patches of 3 x
# 14^2 pixels: (2 x 1152 + max(4 x 1152, 2 x 4304) + 588) x 126,976 x 2 B;
# below the text model's terms, so the kept embeddings (31 x 256 x 5,376
# x 2 B) count
run 0 --model gemma-3-27b --gpu mi300x --max-model-len 4096 --json && {
	[ "$(nget encoder_items)" = 31 ] || fail "Gemma 3 encoder items $(nget encoder_items)"
	[ "$(nget encoder_peak_bytes)" = 2920448000 ] || fail "Gemma 3 encoder peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_bytes)" = 85327872 ] || fail "Gemma 3 encoder bytes $(nget encoder_bytes)"
}
# vLLM caps the items at max_num_seqs prompts of max(1, min(limit,
# max_model_len / item tokens)) items: 4 x min(2, 4096 / 260) = 8 images
run 0 --model gemma-3-27b --gpu mi300x --max-model-len 4096 --max-num-seqs 4 \
	--limit-mm-per-prompt '{"image": 2, "video": 0}' --json &&
	[ "$(nget encoder_items)" = 8 ] || fail "capped encoder items $(nget encoder_items)"
run 0 --model gemma-3-27b --gpu mi300x --max-model-len 300 --max-num-seqs 4 --json &&
	[ "$(nget encoder_items)" = 4 ] || fail "one image a prompt: $(nget encoder_items)"
run 0 --model gemma-3-27b --gpu mi300x --max-model-len 4096 --max-num-seqs 4 \
	--limit-mm-per-prompt image=1,video=2 --json &&
	[ "$(nget encoder_items)" = 4 ] || fail "image=1: $(nget encoder_items)"
# no image profiled: no term, said on the table; the L4 pool as before
# the term (3,975 blocks)
for f in "--limit-mm-per-prompt image=0,video=0" "--limit-mm-per-prompt {\"image\":0,\"video\":0}" --skip-mm-profiling; do
	# shellcheck disable=SC2086  # the flag and its value as two words
	run 0 --model qwen2.5-vl-7b --gpu l4 --max-model-len 2048 $f && {
		has "$out" "vision encoder profile                      -  not run (" "no profile with $f"
		has "$out" "num_gpu_blocks                            3,975" "pool without the encoder, $f"
	}
done
# images off, videos on (their default, 999): vLLM profiles a video of a
# Qwen-VL tower; the largest image stands in, said on the line
run 0 --model qwen2.5-vl-7b --gpu l4 --max-model-len 2048 --limit-mm-per-prompt image=0 && {
	has "$out" "images are off, so vLLM profiles a video" "video stand-in said"
	has "$out" "num_gpu_blocks                            2,601" "video stand-in pool"
}
# Gemma 3 takes images only: image=0 runs nothing; LLaVA's tower, whose
# run kvsim does not model, says "not run" too
run 0 --model gemma-3-4b --gpu l4 --limit-mm-per-prompt image=0 &&
	has "$out" "not run (--limit-mm-per-prompt: no modality the tower takes)" "Gemma 3 image=0"
run 0 --model llava-1.5-7b --gpu l4 --skip-mm-profiling &&
	has "$out" "vision encoder profile                      -  not run (--skip-mm-profiling)" "LLaVA skip"
# the flags as given in the JSON documents, under vLLM's names
run 0 --model qwen2.5-vl-7b --gpu l4 --limit-mm-per-prompt image=0,video=3 \
	--mm-processor-kwargs '{"max_pixels": 1003520}' --json && {
	has "$out" '"limit_mm_per_prompt": {' "limit in the deploy JSON"
	has "$out" '"max_pixels": 1003520' "max_pixels in the deploy JSON"
}
run 0 --model qwen2.5-vl-7b --gpu l4 --json &&
	case "$out" in *limit_mm_per_prompt*|*mm_processor_kwargs*) fail "mm flags in a default document" ;; esac
for bad in "" "image=1," ",image=1" "images=0" "IMAGE=0" '{"":1}' "image=2147483648"; do
	run 2 --model qwen2.5-vl-7b --gpu l4 --limit-mm-per-prompt "$bad" &&
		has "$err" "--limit-mm-per-prompt: " "bad limit '$bad'"
done
run 2 --model qwen2.5-vl-7b --gpu l4 --limit-mm-per-prompt images=0 &&
	has "$err" "unknown modality 'images' (image, video or audio)" "unknown modality"
run 2 --model qwen2.5-vl-7b --gpu l4 --engine sglang --skip-mm-profiling &&
	has "$err" "--skip-mm-profiling is a vLLM option" "skip under sglang"
# refused whatever the value, even one that changes nothing
run 2 --model qwen2.5-vl-7b --gpu l4 --engine trtllm --limit-mm-per-prompt audio=1 &&
	has "$err" "--limit-mm-per-prompt is a vLLM option" "limit under trtllm"
run 2 --model qwen2.5-vl-7b --gpu l4 --engine sglang --mm-processor-kwargs '{}' &&
	has "$err" "--mm-processor-kwargs is a vLLM option" "kwargs under sglang"
# --mm-processor-kwargs max_pixels: 1,003,520 = 1,280 x 28^2 pixels, so
# 1,280 tokens of 4 patches; the peak (13,996 x 5,120 x 2 B) is below the
# text terms, so the kept embeddings count: 1,280 x 3,584 x 2 B
run 0 --model qwen2.5-vl-7b --gpu l4 --max-model-len 2048 \
	--mm-processor-kwargs '{"max_pixels": 1003520, "min_pixels": 3136}' --json && {
	[ "$(nget encoder_patches)" = 5120 ] || fail "max_pixels patches $(nget encoder_patches)"
	[ "$(nget encoder_peak_bytes)" = 143319040 ] || fail "max_pixels peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_bytes)" = 9175040 ] || fail "max_pixels term $(nget encoder_bytes)"
}
run 0 --model llava-1.5-7b --gpu l4 --mm-processor-kwargs '{"max_pixels": 1003520}' &&
	has "$err" "warning: --mm-processor-kwargs max_pixels changes nothing for llava-1.5-7b" "max_pixels on another tower"
run 2 --model qwen2.5-vl-7b --gpu l4 --mm-processor-kwargs '{"max_pixels": 0}' &&
	has "$err" "--mm-processor-kwargs: 'max_pixels' must be a positive integer" "bad max_pixels"
run 2 --model qwen2.5-vl-7b --gpu l4 --mm-processor-kwargs 'max_pixels=4' &&
	has "$err" "--mm-processor-kwargs: expected a JSON object" "kwargs not JSON"
run 2 --model qwen2.5-vl-7b --gpu l4 --limit-mm-per-prompt image=x &&
	has "$err" "--limit-mm-per-prompt: expected MODALITY=COUNT" "bad limit list"
run 2 --model qwen2.5-vl-7b --gpu l4 --limit-mm-per-prompt '{"image": -1}' &&
	has "$err" "the count of 'image' must be an integer from 0 to 2147483647" "negative limit"
run 2 --model qwen2.5-vl-7b --gpu l4 --limit-mm-per-prompt '{"image": 2' &&
	has "$err" "expected a JSON object of counts" "bad limit JSON"
# SGLang's default fraction for a vision model: x 0.95 x (1 - 0.1 x (r -
# 1)), held to [0.8, 1.05], r = layers x hidden^2 / (24 x 1024^2).
# Qwen2.5-VL's tower config has no num_hidden_layers (24) and hidden 1280:
# r = 1.5625, 0.95 x 0.94375 = 0.8965625; 0.835 x that = 0.7486296875
run 0 --model qwen2.5-vl-7b --gpu h100-80gb --engine sglang &&
	has "$out" "usable (x 0.749 mem_fraction_static)" "SGLang's VLM fraction" &&
	has "$out" "x 0.8966 for the vision tower (24 layers of 1280)" "SGLang's VLM factor said"
run 0 --model qwen2.5-vl-7b --gpu h100-80gb --engine sglang --json && {
	has "$out" '"vlm_factor": 0.89656' "vlm_factor in JSON"
	has "$out" '"fraction": 0.748629687' "fraction in JSON"
}
# Qwen2-VL's tower config says hidden_size 3584 (the text width): r =
# 12.25, held at 0.8: 0.76; Gemma 3's SigLIP, 27 layers of 1152: r =
# 1.423828125, 0.95 x 0.9576171875 = 0.909736328125; LLaVA's CLIP is
# ViT-L/14 itself: 0.95
run 0 --model qwen2-vl-7b --gpu h100-80gb --engine sglang &&
	has "$out" "x 0.7600 for the vision tower (24 layers of 3584)" "Qwen2-VL's factor"
run 0 --model gemma-3-27b --gpu h100-80gb --engine sglang &&
	has "$out" "x 0.9097 for the vision tower (27 layers of 1152)" "Gemma 3's factor"
run 0 --model llava-1.5-7b --gpu h100-80gb --engine sglang &&
	has "$out" "x 0.9500 for the vision tower (24 layers of 1024)" "LLaVA's factor"
# a fraction given is used as it is; text models take none
run 0 --model qwen2.5-vl-7b --gpu h100-80gb --engine sglang --mem-fraction-static 0.8 --json &&
	case "$out" in *vlm_factor*) fail "vlm_factor with a fraction given" ;; esac
run 0 --model qwen2.5-7b --gpu h100-80gb --engine sglang --json &&
	case "$out" in *vlm_factor*) fail "vlm_factor without a tower" ;; esac
# LLaVA-1.5's CLIP: 336-pixel images in 14-pixel patches, 576 tokens (the
# class token dropped, strategy "default"); on an L4 max(2048, 576) / 576
# = 3 images of 577 patches: (2 x 1024 + max(4 x 1024, 2 x 4096) + 588)
# x 1,731 x 2 B; kept 3 x 576 x 4096 x 2 B
run 0 --model llava-1.5-7b --gpu l4 --json && {
	[ "$(nget encoder_items)" = 3 ] || fail "LLaVA items $(nget encoder_items)"
	[ "$(nget encoder_peak_bytes)" = 37486536 ] || fail "LLaVA peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_bytes)" = 14155776 ] || fail "LLaVA term $(nget encoder_bytes)"
}
# Pixtral-12B: 64 x 64 patches, 64 rows of 65 tokens (4,160), one image
# at 8,192 tokens: (2 x 1024 + max(4 x 1024, 3 x 4096) + 768) x 4,096 x 2
# B, gated MLP; kept 4,096 x 5,120 x 2 B
run 0 --model pixtral-12b --gpu h100-80gb --json && {
	[ "$(nget encoder_items)" = 1 ] || fail "Pixtral items $(nget encoder_items)"
	[ "$(nget encoder_peak_bytes)" = 123731968 ] || fail "Pixtral peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_out_bytes)" = 41943040 ] || fail "Pixtral kept $(nget encoder_out_bytes)"
}
# InternVL2.5-8B: 12 tiles and a thumbnail of 32^2 patches and a class
# token (13 x 1,025), 13 x 256 embeddings between <img> and </img> (3,330
# tokens): on an H100 8,192 / 3,330 = 2 images; (2 x 1024 + max(4 x
# 1024, 2 x 4096) + 588) x 26,650 x 2 B
run 0 --model internvl2.5-8b --gpu h100-80gb --json && {
	[ "$(nget encoder_items)" = 2 ] || fail "InternVL items $(nget encoder_items)"
	[ "$(nget encoder_patches)" = 26650 ] || fail "InternVL patches $(nget encoder_patches)"
	[ "$(nget encoder_peak_bytes)" = 577132400 ] || fail "InternVL peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_out_bytes)" = 54525952 ] || fail "InternVL kept $(nget encoder_out_bytes)"
}
# Llama 4: 16 chunks and a global one of 24^2 patches and a class token,
# 144 tokens a chunk after the pixel shuffle: 1 + 16 x 145 + 1 + 144 + 1 =
# 2,467 tokens; 8,192 / 2,467 = 3 images, 3 x 17 x 577 = 29,427 patches;
# at tp 4 (2 x 1408 + max(4 x 352, 2 x 1408) + 588) x 29,427 x 2 B; kept 3
# x 17 x 144 x 5120 x 2 B
run 0 --model llama-4-scout --gpu h100-80gb --tp 4 --json && {
	[ "$(nget encoder_patches)" = 29427 ] || fail "Llama 4 patches $(nget encoder_patches)"
	[ "$(nget encoder_peak_bytes)" = 366071880 ] || fail "Llama 4 peak $(nget encoder_peak_bytes)"
	[ "$(nget encoder_out_bytes)" = 75202560 ] || fail "Llama 4 kept $(nget encoder_out_bytes)"
}
# a tower whose run is not modelled (SigLIP under PaliGemma) says so;
# text models and other engines carry no encoder term
cat > "$tmp/paligemma.json" <<'EOF'
{"model_type": "paligemma", "text_config": {"model_type": "gemma", "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": 1, "hidden_size": 256, "head_dim": 64,
 "intermediate_size": 512, "vocab_size": 1000},
 "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 64,
 "intermediate_size": 128, "num_hidden_layers": 2, "image_size": 224, "patch_size": 14}}
EOF
run 0 --model "$tmp/paligemma.json" --gpu l4 &&
	has "$out" "vision encoder profile                      -  not estimated for this tower" "encoder profile line"
run 0 --model llama-2-7b --gpu l4 --json &&
	case "$out" in *encoder*) fail "encoder term without a tower" ;; esac
run 0 --model qwen2.5-vl-7b --gpu l4 --engine sglang --json &&
	case "$out" in *encoder*) fail "encoder term under sglang" ;; esac
run 0 --model qwen2.5-vl-7b --gpu h100-80gb --engine sglang &&
	case "$out" in *"vision encoder profile"*) fail "encoder profile line under sglang" ;; esac
run 0 --model qwen2.5-7b --gpu h100-80gb &&
	case "$out" in *"vision encoder profile"*) fail "encoder profile line without a tower" ;; esac
run 0 --model qwen2.5-vl-7b --gpu h100-80gb --json && {
	[ "$(nget vision_params)" = 676550144 ] || fail "Qwen2.5-VL's vision_params $(nget vision_params)"
	[ "$(jget vision_weight_bytes)" = 1353100288 ] || fail "Qwen2.5-VL's vision_weight_bytes $(jget vision_weight_bytes)"
	[ "$(jget weight_bytes)" = 16584333312 ] || fail "Qwen2.5-VL's weight_bytes $(jget weight_bytes)"
}
# its AWQ checkpoint keeps "visual" at 16 bits: said by the list, no warning
sed 's/"use_sliding_window": false,/"use_sliding_window": false, "quantization_config": {"bits": 4, "group_size": 128, "modules_to_not_convert": ["visual"], "quant_method": "awq", "zero_point": true},/' \
	"$ROOT/sizing/presets/models/qwen2.5-vl-7b.json" >"$tmp/awq.json"
run 0 --model "$tmp/awq.json" --gpu h100-80gb --json && {
	[ -z "$err" ] || fail "AWQ with visual kept: warned: $err"
	[ "$(jget vision_weight_bytes)" = 1353100288 ] || fail "AWQ: vision_weight_bytes $(jget vision_weight_bytes)"
}
sed 's/"use_sliding_window": false,/"use_sliding_window": false, "quantization_config": {"bits": 4, "group_size": 128, "quant_method": "awq", "zero_point": true},/' \
	"$ROOT/sizing/presets/models/qwen2.5-vl-7b.json" >"$tmp/awq.json"
run 0 --model "$tmp/awq.json" --gpu h100-80gb &&
	has "$err" "the vision tower (676,550,144 parameters) counts at int4" "AWQ tower in doubt"
# Qwen2-VL-2B (2.21B on Hugging Face): tied embeddings
run 0 --model "$(bash "$ROOT/scripts/qwen2-vl-2b-config.sh" >"$tmp/q2b.json"; echo "$tmp/q2b.json")" --gpu h100-80gb &&
	has "$out" "2,208,985,600 parameters" "Qwen2-VL-2B's count"
# LLaVA-1.5-7B: a CLIP tower and LLaVA's projector (324,487,168,
# test_sizing's hand count; Hugging Face: 7.06B in all), no warning
run 0 --model llava-1.5-7b --gpu h100-80gb --json && {
	[ "$(nget vision_params)" = 324487168 ] || fail "LLaVA's vision_params $(nget vision_params)"
	[ "$(nget num_params)" = 7063427072 ] || fail "LLaVA's num_params $(nget num_params)"
	[ -z "$err" ] || fail "llava-1.5-7b warned: $err"
}
# Pixtral-12B: Pixtral's tower and LLaVA's projector (434,957,312);
# its bf16 shards on Hugging Face add up to 25.37 GB
run 0 --model pixtral-12b --gpu h100-80gb --json && {
	[ "$(nget vision_params)" = 434957312 ] || fail "Pixtral's vision_params $(nget vision_params)"
	[ "$(jget weight_bytes)" = 25365479424 ] || fail "Pixtral's weight_bytes $(jget weight_bytes)"
	[ -z "$err" ] || fail "pixtral-12b warned: $err"
}
# Qwen3-VL: the tower with its merger and three deepstack mergers
# (576,388,336, test_sizing's hand count) on the model line and in the
# weights; Qwen3-VL-8B-Instruct's bf16 safetensors hold 17,534,247,392 bytes
run 0 --model qwen3-vl-8b --gpu h100-80gb --json && {
	[ -z "$err" ] || fail "qwen3-vl-8b warned: $err"
	[ "$(nget vision_params)" = 576388336 ] || fail "Qwen3-VL's vision_params $(nget vision_params)"
	[ "$(jget weight_bytes)" = 17534247392 ] || fail "Qwen3-VL's weight_bytes $(jget weight_bytes)"
}
run 0 --model qwen3-vl-8b --gpu h100-80gb &&
	has "$out" "8,767,123,696 parameters (from the config's shapes), of which vision tower 0.58B" "Qwen3-VL's model line"
# a deepstack list that is not one: the file and the field
sed 's/"deepstack_visual_indexes": \[/"deepstack_visual_indexes": 3, "x": [/' \
	"$ROOT/sizing/presets/models/qwen3-vl-8b.json" >"$tmp/q3.json"
run 1 --model "$tmp/q3.json" --gpu h100-80gb &&
	has "$err" "q3.json: field 'vision_config.deepstack_visual_indexes': expected a list" "deepstack list"
# InternVL's chat config (model_type internvl_chat): the text model under
# llm_config, InternViT-6B and mlp1 (InternVL2.5-38B's shapes, tests/data):
# 38,388,164,992 parameters as Hugging Face counts them, the KV of
# Qwen2.5-32B (64 layers x 8 kv heads x 128 x 2 x 2 bytes, over 2 GPUs)
run 0 --model "$ROOT/tests/data/internvl2_5-38b.json" --gpu h100-80gb --tp 2 --json && {
	[ -z "$err" ] || fail "InternVL2.5-38B warned: $err"
	[ "$(nget num_params)" = 38388164992 ] || fail "InternVL's num_params $(nget num_params)"
	[ "$(nget vision_params)" = 5628282240 ] || fail "InternVL's vision_params $(nget vision_params)"
	[ "$(jget kv_bytes_per_token)" = 131072 ] || fail "InternVL's KV bytes $(jget kv_bytes_per_token)"
}
# a norm kvsim does not know: the file and the field
sed 's/"norm_type": "rms_norm"/"norm_type": "group_norm"/' \
	"$ROOT/tests/data/internvl2_5-38b.json" >"$tmp/ivl.json"
run 1 --model "$tmp/ivl.json" --gpu h100-80gb &&
	has "$err" "ivl.json: field 'vision_config.norm_type': expected \"rms_norm\" or \"layer_norm\", got \"group_norm\"" "InternViT's norm_type"
# a tower kvsim has no shapes for: named, not silently dropped
sed 's/"siglip_vision_model"/"mllama_vision_model"/' \
	"$ROOT/sizing/presets/models/gemma-3-4b.json" >"$tmp/mm.json"
run 0 --model "$tmp/mm.json" --gpu h100-80gb && {
	has "$err" "warning: google/gemma-3-4b-it: vision tower of model_type 'mllama_vision_model' not counted" "unknown tower warned"
	has "$out" "3,880,263,168 parameters (from the config's shapes)" "the text model only"
	case "$out" in *"vision tower"*) fail "an uncounted tower reported" ;; esac
}
run 0 --model "$tmp/mm.json" --gpu h100-80gb --params 4.3e9 && [ -z "$err" ] || fail "--params: still warned"
# a quantised checkpoint that does not say where its tower stands: said
sed 's/"mm_tokens_per_image": 256,/"mm_tokens_per_image": 256, "quantization_config": {"quant_method": "fp8"},/' \
	"$ROOT/sizing/presets/models/gemma-3-4b.json" >"$tmp/q.json"
run 0 --model "$tmp/q.json" --gpu h100-80gb &&
	has "$err" "the vision tower (419,816,304 parameters) counts at fp8" "quantised tower in doubt"
sed 's/"mm_tokens_per_image": 256,/"mm_tokens_per_image": 256, "quantization_config": {"quant_method": "fp8", "ignore": ["lm_head", "re:vision_tower.*", "re:multi_modal_projector.*"]},/' \
	"$ROOT/sizing/presets/models/gemma-3-4b.json" >"$tmp/q.json"
run 0 --model "$tmp/q.json" --gpu h100-80gb && {
	[ -z "$err" ] || fail "tower kept at 16 bits still warned: $err"
	has "$out" "at 16 bits" "tower at 16 bits in the weights line"
}

# ---- pipeline parallelism: the batches in flight, stated --------------------
run 0 --model llama-3-70b --gpu h100-80gb --pp 2 &&
	has "$out" "2 stages run one after another (one batch in flight" "pp assumption in the header"
run 0 --model llama-3-70b --gpu h100-80gb --pp 2 --pp-balanced &&
	has "$out" "2 stages, up to 2 balanced micro-batches in flight" "--pp-balanced in the header"
run 0 --model llama-3-70b --gpu h100-80gb --tp 2 &&
	case "$out" in *"one batch in flight"* | *"micro-batches in flight"*) fail "pp note at pp 1" ;; esac
run 0 --model llama-3-70b --gpu h100-80gb --tp 2 --pp-balanced &&
	has "$err" "--pp-balanced without --pipeline-parallel-size > 1 changes nothing" \
		"--pp-balanced at pp 1 warned"
# SGLang's scheduler balances its micro-batches: the default with
# --engine sglang, --no-pp-balanced turns it off
run 0 --model llama-3-70b --gpu h100-80gb --pp 2 --engine sglang &&
	has "$out" "2 balanced micro-batches in flight, as SGLang's" "sglang at pp 2: balanced by default"
run 0 --model llama-3-70b --gpu h100-80gb --pp 2 --engine sglang --no-pp-balanced &&
	has "$out" "2 stages run one after another (one batch in flight" "--no-pp-balanced under sglang"
run 0 --model llama-3-70b --gpu h100-80gb --tp 2 --no-pp-balanced &&
	has "$err" "--no-pp-balanced without --pipeline-parallel-size > 1 changes nothing" \
		"--no-pp-balanced at pp 1 warned"
printf 'arrival_s,prompt_tokens,output_tokens\n0,300,40\n0.1,200,30\n0.2,500,20\n' >"$tmp/pp3.csv"
kvs_run replay 0 "$tmp/pp3.csv" --model llama-3-8b --pp 2 --engine sglang --json "$tmp/sg_def.json" -q &&
kvs_run replay 0 "$tmp/pp3.csv" --model llama-3-8b --pp 2 --engine sglang --pp-balanced \
	--json "$tmp/sg_bal.json" -q &&
kvs_run replay 0 "$tmp/pp3.csv" --model llama-3-8b --pp 2 --engine sglang --no-pp-balanced \
	--json "$tmp/sg_one.json" -q &&
	python3 - "$tmp" <<'PY' || fail "sglang at pp 2: balanced by default in replay"
import json, sys
d = {k: json.load(open(f"{sys.argv[1]}/sg_{k}.json")) for k in ("def", "bal", "one")}
e = lambda k: d[k]["policies"]["paged"]["e2e_s"]["mean"]
assert d["def"]["engine"].get("pp_balanced") is True, d["def"]["engine"]
assert "pp_balanced" not in d["one"]["engine"]
assert e("def") == e("bal") and e("def") < e("one"), (e("def"), e("bal"), e("one"))
PY

# a whole-step fit is not split: said; the replay header names the bound
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,10\n' >"$tmp/pp1.csv"
kvs_run replay 0 "$tmp/pp1.csv" --pp 2 --pp-balanced --step-time-linear 0.01 &&
	has "$err" "change nothing under --step-time-linear, a fit of whole steps" \
		"--pp-balanced under the linear model warned" &&
	has "$out" "(tp 1, pp 2 balanced)" "replay header: the balanced bound"
kvs_run replay 0 "$tmp/pp1.csv" --pp 2 --step-time-linear 0.01 &&
	case "$out$err" in *balanced*) fail "balanced said without --pp-balanced" ;; esac
for cmd in size replay; do
	kvs_run "$cmd" 0 --help && has "$out" "one batch in flight: a step passes through the" \
		"$cmd --help: pp assumption" &&
		has "$out" "--pp-balanced" "$cmd --help: --pp-balanced"
done
# vLLM 0.14's check at pp > 1 over every stage's layers: 10,000 tokens of
# Llama-3.1-70B are 625 blocks of 16 x 40 layers x 4,096 B = 1,638,400,000 B
# a stage (it starts), 3,276,800,000 B over both stages (0.14 would not)
run 0 --model llama-3.1-70b --gpu h100-80gb --pp 2 --max-model-len 10000 &&
	has "$out" "vLLM from 0.14.0 until PR #33698 (February 2026) would not start" \
		"pp 2: vLLM 0.14's check said"
run 0 --model llama-3.1-70b --gpu h100-80gb --pp 2 --max-model-len 10000 --json &&
	python3 - "$out" <<'PY' || fail "pp 2: vllm_log request bytes over all stages"
import json, sys
v = json.loads(sys.argv[1])["vllm_log"]
assert v["request_bytes"] == 625 * 16 * 40 * 4096, v
assert v["request_bytes_all_stages"] == 625 * 16 * 80 * 4096, v
assert v["starts"] is True and v["starts_v0_14"] is False, v
PY
run 0 --model llama-3.1-70b --gpu h100-80gb --pp 2 --max-model-len 4000 &&
	case "$out" in *"PR #33698"*) fail "pp 2: 0.14 note where every check passes" ;; esac
run 0 --model llama-3.1-70b --gpu h100-80gb --tp 2 --max-model-len 10000 --json &&
	case "$out" in *"request_bytes_all_stages"* | *"tokens_per_s_other"*)
		fail "pp 1: a pp-only key written" ;; esac

# the decode step at pp 4 with 8 conversations or more, by hand: one batch
# of all of them through the four stages (each stage's weights once), or,
# balanced, a quarter of them per micro-batch, each stage reading its
# weights four times and a quarter of the KV each time: the KV read is
# split, not the weights
for bal in "" --pp-balanced; do
	run 0 --model llama-3-8b --gpu l4 --pp 4 --context 8K --json $bal &&
		python3 - "$out" "$bal" <<'PY' || fail "pp 4 decode step ($bal) against its hand derivation"
import json, sys
j = json.loads(sys.argv[1])
bal = sys.argv[2] == "--pp-balanced"
c = j["max_conversations"]
assert c >= 8, c
assert j["deploy"].get("pp_balanced", False) == bal
w = j["weight_bytes"]          # one stage's weights
kv = j["bytes_per_context"]    # one stage's share of a conversation's cache
bw = 300e9                     # the L4 preset's 300 GB/s
m = j["model"]
def step(mb):                  # mb conversations per micro-batch
    flops = (2 * m["num_active_params"] / 4 +
             4 * 8192 * m["num_heads"] * m["head_dim"] * m["num_layers"] / 4) * mb
    return 4 * max((w + mb * kv) / bw, flops / 121e12)
mine, other = (step(c / 4), step(c)) if bal else (step(c), step(c / 4))
assert abs(j["decode_step_s"] - mine) <= 1e-9 * mine, (j["decode_step_s"], mine)
# the other bound beside it
assert abs(j["decode_tokens_per_s_other"] - c / other) <= 1e-9 * c / other, j
PY
done

finish "cli size"
