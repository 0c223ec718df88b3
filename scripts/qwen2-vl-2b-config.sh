#!/usr/bin/env bash
# Write Qwen2-VL-2B-Instruct's config.json to standard output: the
# qwen2-vl-7b preset with Qwen2-1.5B's text model (hidden 1536, MLP 8960,
# 12 heads, 2 kv heads, vocabulary 151,936, tied embeddings) and the same
# vision tower, its merger into 1536.  scripts/validation.sh and
# tests/cli/test_size.sh size it.
#
#   scripts/qwen2-vl-2b-config.sh > qwen2-vl-2b.json
set -euo pipefail
cd "$(dirname "$0")/.."
# "hidden_size" is the text model's width at the top level and the
# merger's output in vision_config: both 1536
sed -e 's|"Qwen/Qwen2-VL-7B-Instruct"|"Qwen/Qwen2-VL-2B-Instruct"|' \
	-e 's|"hidden_size": 3584|"hidden_size": 1536|' \
	-e 's|"intermediate_size": 18944|"intermediate_size": 8960|' \
	-e 's|"num_attention_heads": 28|"num_attention_heads": 12|' \
	-e 's|"num_key_value_heads": 4|"num_key_value_heads": 2|' \
	-e 's|"tie_word_embeddings": false|"tie_word_embeddings": true|' \
	-e 's|"vocab_size": 152064|"vocab_size": 151936|' \
	sizing/presets/models/qwen2-vl-7b.json
