#!/usr/bin/env bash
# CLI tests of the fidelity options of replay/compare: buddy placement,
# the closed-loop client, and --step-time-profile (Vidur operator profiles:
# the two bundled profiles end to end, bad input refused with the file, the
# line and column or the mismatch named; skipped without ../shared/profiles).
set -u
ROOT="${KVS_SOURCE_ROOT:?}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvs_scaled_limit 200
run() { kvs_run replay "$@"; }

# ---- placement --------------------------------------------------------------
kvs_run compare 0 --policies oracle --placement buddy --json=- && has "$out" '"placement": "buddy"' "buddy in the JSON config"
kvs_run compare 0 --policies oracle --placement best-fit --json=- && has "$out" '"placement": "best-fit"' "best-fit"
run 2 --placement worst-fit && has "$err" "--placement: expected first-fit, best-fit or buddy, got 'worst-fit'" "bad placement"

# ---- closed loop ------------------------------------------------------------
"$KVSIM" gen --arrival constant --rate 1000 --prompt-len fixed:64 --output-len fixed:8 --requests 6 -o "$tmp/cl.csv" 2>/dev/null
run 0 "$tmp/cl.csv" --max-concurrency 1 && {
	has "$out" "completed                                6" "all six complete one at a time"
	printf '%s\n' "$out" | grep -Eq '^  max +1 *$' || fail "closed loop of 1: running max is not 1: $out"
}
run 0 "$tmp/cl.csv" --max-concurrency 1 --json=- && has "$out" '"max_concurrency": 1' "max_concurrency in the JSON config"
run 2 "$tmp/cl.csv" --max-concurrency 0 && has "$err" "--max-concurrency" "zero refused"

# ---- measured profiles ------------------------------------------------------
P="$ROOT/../shared/profiles/vidur/compute"
if [ ! -d "$P" ]; then
	echo "skip: ../shared/profiles is absent (profile checks)"
	finish "cli fidelity"
	exit 0
fi

run 0 --model llama-2-7b --gpu h100-80gb --step-time-profile "$P/h100/meta-llama/Llama-2-7b-hf" && {
	has "$out" "step time profile + roofline" "header names the profile"
	has "$err" "non-attention operators from" "where the terms came from"
	has "$err" "all-reduce from the roofline" "tp 1: no all-reduce profile"
	has "$err" "attention, KV read and write from the roofline" "no attention.csv: roofline attention"
	has "$out" "completed" "ran end to end"
}
run 0 --model llama-2-70b --gpu a100-80gb --tp 2 --step-time-profile "$P/a100/meta-llama/Llama-2-70b-hf" && {
	has "$err" "a100_pairwise_nvlink/all_reduce.csv" "tp 2: measured all-reduce"
	has "$err" "attention from attention.csv (128 batch sizes x 79 KV lengths, 81 chunk sizes)" \
		"measured attention read"
	has "$out" "completed" "70B tp 2 ran end to end"
}
# a profile of another GPU than --gpu's (by its compute/GPU/ directory) is said
for g in h100-80gb a100-80gb; do
	run 0 --model llama-3-8b --gpu $g --tp 2 --limit 20 -q \
		--step-time-profile "$P/a100/meta-llama/Meta-Llama-3-8B" || continue
	case $g in
	h100*) has "$err" "warning: --step-time-profile was measured on a100 (its directory compute/a100/), not on --gpu h100-80gb: the step times and the all-reduce times are a100's" "profile of another GPU" ;;
	*) case "$err" in *warning*) fail "a100 profile on a100-80gb warned: $err" ;; esac ;;
	esac
done
run 2 --model llama-3-8b --step-time-profile "$P/h100/meta-llama/Llama-2-7b-hf" &&
	has "$err" "the step-time profile is for n_embd 4096, 32 heads, 32 kv heads" "shape mismatch"
run 2 --model llama-2-7b --tp 16 --step-time-profile "$P/h100/meta-llama/Llama-2-7b-hf" &&
	has "$err" "no rows for tensor parallelism 16" "tp missing from the profile"
run 1 --model llama-2-7b --step-time-profile "$tmp/nowhere" && has "$err" "nowhere/mlp.csv: cannot open" "missing dir"
run 2 --model llama-2-7b --step-time-profile "$P/h100/meta-llama/Llama-2-7b-hf" --step-time-linear 0.01,0,0 &&
	has "$err" "give one" "two step-time models"
# a time cell that is not a plain decimal number (hex, nan) in a copy of a
# published profile: refused with the file, line and column, exit 1
mkdir -p "$tmp/badprof"
for cell in 0x1p-3 nan 1.7e308; do
	awk -F, -v OFS=, -v cell="$cell" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_stats.mlp_act.median") c = i }
		NR == 5 { $c = cell } { print }' "$P/h100/meta-llama/Llama-2-7b-hf/mlp.csv" >"$tmp/badprof/mlp.csv"
	run 1 --model llama-2-7b --gpu h100-80gb --step-time-profile "$tmp/badprof" &&
		has "$err" "badprof/mlp.csv:5: column 39 ('time_stats.mlp_act.median'): expected a decimal number from 0 to 3600000 (milliseconds), got '$cell'" "bad time cell $cell"
done
finish "cli fidelity"
