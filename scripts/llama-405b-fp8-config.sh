#!/usr/bin/env bash
# Write Llama-3.1-405B-Instruct-FP8's config.json, as Meta's FP8 checkpoint
# has it, to standard output: the llama-3.1-405b preset with a
# quantization_config (fbgemm FP8) whose modules_to_not_convert lists
# lm_head, the q, k, v and o projections of all 126 layers and the gate, up
# and down projections of layers 0 and 125.  scripts/validation.sh and
# tests/cli/test_size.sh size it.
#
#   scripts/llama-405b-fp8-config.sh > 405-fp8.json
set -euo pipefail
cd "$(dirname "$0")/.."
mods='"lm_head"'
for l in $(seq 0 125); do
	for p in k_proj o_proj q_proj v_proj; do mods="$mods, \"model.layers.$l.self_attn.$p\""; done
done
for p in down_proj gate_proj up_proj; do
	mods="$mods, \"model.layers.0.mlp.$p\", \"model.layers.125.mlp.$p\""
done
sed "s|\"vocab_size\": 128256|\"vocab_size\": 128256, \"quantization_config\": {\"quant_method\": \"fbgemm_fp8\", \"modules_to_not_convert\": [$mods]}|" \
	sizing/presets/models/llama-3.1-405b.json
