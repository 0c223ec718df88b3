#!/usr/bin/env bash
# Short fuzz runs of every trace reader: builds tests/fuzz/fuzz_reader.c
# once per format with clang's libFuzzer, AddressSanitizer and UBSan,
# directly against the library sources it needs, and runs each for
# SECONDS (default 20).  Crashes leave their input in the build folder.
#   tests/fuzz/run.sh [SECONDS]        (KVS_FUZZ_DIR: build folder)
set -euo pipefail
secs="${1:-20}"
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
srcs=("$root/common/common.c" "$root"/traces/linebuf.c "$root"/traces/parse.c
      "$root"/traces/reader.c "$root"/traces/rng.c)
flags=(-g -O1 -std=c17 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$out" -I"$root/include" -I"$root/traces")
formats=(auto azure mooncake burstgpt splitwise native-csv native-jsonl)
declare -A enum=([auto]=AUTO [azure]=AZURE [mooncake]=MOONCAKE [burstgpt]=BURSTGPT
                 [splitwise]=SPLITWISE [native-csv]=NATIVE_CSV [native-jsonl]=NATIVE_JSONL)
rc=0
for f in "${formats[@]}"; do
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
	echo "== fuzz $f (${secs}s)"
	log="$out/fuzz_$f.log"
	if (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" \
		-max_len=8192 -timeout=10 -rss_limit_mb=2048 "$corpus" > "$log" 2>&1); then
		grep -E "^Done" "$log" || true
	else
		rc=1
		echo "fuzz $f FAILED (full log: $log)"
		grep -E "ERROR|SUMMARY|Test unit written|internal invariant" "$log" | head -20 || true
	fi
done
exit $rc
