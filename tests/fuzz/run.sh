#!/usr/bin/env bash
# Short fuzz runs of every trace reader, the Hugging Face config.json parser
# and the report JSON parser: builds tests/fuzz/fuzz_reader.c once per
# format, fuzz_config.c and fuzz_report.c with clang's libFuzzer,
# AddressSanitizer and UBSan, directly against the library sources each
# needs, and runs each for SECONDS (default 20), one after the other.
# Crashes leave their input in the build folder.  The corpora grow there
# (corpus-NAME) and are reused by the next run, so a long campaign is this
# script with a large SECONDS (docs/FUZZING.md).
#   tests/fuzz/run.sh [SECONDS [HARNESS...]]   (KVS_FUZZ_DIR: build folder;
#   HARNESS: auto azure mooncake burstgpt splitwise native-csv native-jsonl
#   config report; default all)
set -euo pipefail
secs="${1:-20}"
shift || true
only=("$@")
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${KVS_FUZZ_DIR:-$root/build-fuzz}"
cc="${CC_FUZZ:-clang}"
mkdir -p "$out"
cat > "$out/kvs_config.h" <<CONF
#pragma once
#define KVS_DATADIR "/usr/local/share/kvsim"
#define KVS_DEBUG 2
#define KVS_HAVE_CAIRO 0
#define KVS_HAVE_CUDA 0
#define KVS_HAVE_JEMALLOC 0
#define KVS_SOURCE_ROOT "$root"
#define KVS_VERSION "fuzz"
CONF
srcs=("$root"/common/*.c "$root"/traces/linebuf.c "$root"/traces/parse.c
      "$root"/traces/reader.c "$root"/traces/rng.c)
flags=(-g -O1 -std=c17 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$out" -I"$root" -I"$root/include" -I"$root/traces")
formats=(auto azure mooncake burstgpt splitwise native-csv native-jsonl)
declare -A enum=([auto]=AUTO [azure]=AZURE [mooncake]=MOONCAKE [burstgpt]=BURSTGPT
                 [splitwise]=SPLITWISE [native-csv]=NATIVE_CSV [native-jsonl]=NATIVE_JSONL)
rc=0
wanted() {
	[ ${#only[@]} -eq 0 ] && return 0
	local w
	for w in "${only[@]}"; do [ "$w" = "$1" ] && return 0; done
	return 1
}
# cpu_s FILE: user + system CPU seconds of the finished children in the
# output of bash's `times` (run in this shell, not a subshell: a subshell's
# children times start at 0)
cpu_s() {
	awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] } printf "%.2f", t }' "$1"
}
# run NAME BIN CORPUS MAXLEN: one timed libFuzzer run
run() {
	local name=$1 bin=$2 corpus=$3 maxlen=$4
	echo "== fuzz $name (${secs}s)"
	local log="$out/fuzz_$name.log"
	local t0 t1 ok=0
	times > "$out/.times0"
	t0=$(cpu_s "$out/.times0")
	(cd "$out" && ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" \
		-max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		"$corpus" > "$log" 2>&1) || ok=$?
	times > "$out/.times1"
	t1=$(cpu_s "$out/.times1")
	# the fuzzer's CPU time (wall time is --max_total_time; a shared
	# machine gives it less)
	echo "cpu $name: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
	if [ "$ok" -eq 0 ]; then
		grep -E "^Done|stat::number_of_executed_units|stat::new_units_added" "$log" || true
	else
		rc=1
		echo "fuzz $name FAILED (full log: $log)"
		grep -E "ERROR|SUMMARY|Test unit written|internal invariant" "$log" | head -20 || true
	fi
}
for f in "${formats[@]}"; do
	wanted "$f" || continue
	bin="$out/fuzz_$f"
	"$cc" "${flags[@]}" -DFUZZ_FORMAT="KVS_TRACE_${enum[$f]}" \
		"$root/tests/fuzz/fuzz_reader.c" "${srcs[@]}" -lcsv -ljansson -lm -o "$bin"
	corpus="$out/corpus-$f"
	mkdir -p "$corpus"
	# seeds: the shipped samples and the hand-made bad inputs, each with a
	# leading option byte
	for s in "$root"/tests/fuzz/corpus/* "$root"/traces/samples/*-sample.*; do
		[ "$(basename "$s")" = azure-conv-sample.csv ] && continue
		{ printf '\001'; cat "$s"; } > "$corpus/seed-$(basename "$s")"
	done
	head -c 4000 "$root/traces/samples/azure-conv-sample.csv" | { printf '\012'; cat; } \
		> "$corpus/seed-azure-head.csv"
	run "$f" "$bin" "$corpus" 8192
done

if wanted config; then
	bin="$out/fuzz_config"
	"$cc" "${flags[@]}" -I"$root/sizing" "$root/tests/fuzz/fuzz_config.c" \
		"$root"/common/*.c "$root"/sizing/*.c -ljansson -lm -o "$bin"
	corpus="$out/corpus-config"
	mkdir -p "$corpus"
	# seeds: every preset config.json and the tests' model configs, with
	# option bytes 0, 0x3f and 0xc3 (data-parallel ranks, expert
	# parallelism, INT4 weights)
	for s in "$root"/sizing/presets/models/*.json \
		 $(grep -l '"model_type"' "$root"/tests/data/*.json); do
		{ printf '\000'; cat "$s"; } > "$corpus/seed-$(basename "$s")"
		{ printf '\077'; cat "$s"; } > "$corpus/seed-x-$(basename "$s")"
		{ printf '\303'; cat "$s"; } > "$corpus/seed-ep-$(basename "$s")"
	done
	run config "$bin" "$corpus" 16384
fi

if wanted report; then
	bin="$out/fuzz_report"
	# the report's generated headers (report/meson.build), without Chart.js
	# or fontconfig: the page's text is what the harness checks
	mkdir -p "$out/report"
	printf '#pragma once\n#define KVS_REPORT_HAVE_FONTCONFIG 0\n#define KVS_REPORT_HAVE_CHARTJS 0\n' \
		> "$out/report/report_config.h"
	"$cc" -O1 -std=c17 -o "$out/kvs-embed" "$root/report/embed.c"
	"$out/kvs-embed" "$out/report/report_assets.h" RP_ASSET_PAGE_JS \
		"$root/report/report_interactive.js" RP_ASSET_CHARTJS - RP_ASSET_CHARTJS_LICENSE -
	"$cc" "${flags[@]}" -I"$root/report" "$root/tests/fuzz/fuzz_report.c" \
		"$root"/common/*.c $(ls "$root"/report/*.c | grep -v '/embed\.c$') \
		"$root"/allocator/*.c "$root"/sim/metric.c \
		$(pkg-config --cflags --libs cairo) -ljansson -lm -o "$bin"
	corpus="$out/corpus-report"
	mkdir -p "$corpus"
	cp "$root"/tests/fuzz/corpus-report/*.json "$corpus/"
	run report "$bin" "$corpus" 65536
fi
exit $rc
