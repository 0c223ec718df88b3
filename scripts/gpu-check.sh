#!/usr/bin/env bash
# gpu-check.sh OUTDIR - on a machine with an NVIDIA GPU: build kvsim with CUDA
# into a fresh build directory, run the GPU test suite (every CUDA kernel
# against its C reference) and the kernel benchmark, and leave everything in
# OUTDIR:
#   build.log          meson setup + compile output
#   nvidia-smi.txt     the device as the driver sees it (when available)
#   gpu-tests.log      meson test --suite gpu output (+ testlog.json copy)
#   bench.txt          the benchmark table (default grid)
#   kernel_profile.json  the same run as JSON (kvsim sweep --kernel-profile)
#   summary.txt        the target point and pass/fail lines
# Exits non-zero when the build or the GPU tests fail, or when no GPU is
# usable (the tests then report "skipped").  Budget: under 5 minutes on an
# H200 (about 2 to build, under 1 for the tests, under 1 for the benchmark).
# Environment: KVS_PEAK_GBPS (4800), KVS_BENCH_ARGS (extra benchmark flags,
# e.g. "--all"), NVCC (default: nvcc on PATH or /usr/local/cuda/bin/nvcc).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: scripts/gpu-check.sh OUTDIR" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
build="$(mktemp -d "${TMPDIR:-/tmp}/kvsim-gpu-build.XXXXXX")"
trap 'rm -rf "$build"' EXIT
peak="${KVS_PEAK_GBPS:-4800}"
export PATH="$PATH:/usr/local/cuda/bin"

log() { printf '[gpu-check %s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$out/summary.txt"; }
: > "$out/summary.txt"
log "source $root, build $build, results $out"

if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
	log "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)"
else
	log "nvidia-smi not found"
fi

log "configure and build (-Dcuda=enabled)"
if ! { meson setup "$build" "$root" -Dcuda=enabled -Dbuildtype=release \
	&& meson compile -C "$build"; } > "$out/build.log" 2>&1; then
	tail -30 "$out/build.log" >&2
	log "FAIL: build (see build.log)"
	exit 1
fi

log "GPU tests (suite gpu)"
rc=0
timeout 240 meson test -C "$build" --suite gpu --print-errorlogs --num-processes 1 \
	> "$out/gpu-tests.log" 2>&1 || rc=$?
cp "$build/meson-logs/testlog.json" "$out/gpu-testlog.json" 2>/dev/null || true
if grep -q 'SKIP' "$out/gpu-tests.log"; then
	log "FAIL: GPU tests skipped: no usable CUDA device"
	grep -h 'skipped:' "$build/meson-logs/testlog.txt" 2>/dev/null | head -3 | tee -a "$out/summary.txt" || true
	exit 1
fi
if [ $rc -ne 0 ]; then
	tail -40 "$out/gpu-tests.log" >&2
	log "FAIL: GPU tests (exit $rc, see gpu-tests.log)"
	exit 1
fi
log "GPU tests passed"

bench="$build/bench/bench_kernels"
# shellcheck disable=SC2086
timeout 120 "$bench" --peak-gbps "$peak" ${KVS_BENCH_ARGS:-} > "$out/bench.txt" 2> "$out/bench.stderr" || {
	cat "$out/bench.stderr" >&2; log "FAIL: benchmark (table)"; exit 1; }
# shellcheck disable=SC2086
timeout 120 "$bench" --json --peak-gbps "$peak" ${KVS_BENCH_ARGS:-} > "$out/kernel_profile.json" 2>> "$out/bench.stderr" || {
	cat "$out/bench.stderr" >&2; log "FAIL: benchmark (json)"; exit 1; }
cat "$out/bench.txt"

# the target point: batch 64, context 4096, block 16
target="$(awk '$1 == "cuda" && $2 == 16 && $3 == 64 && $4 == 4096' "$out/bench.txt")"
if [ -n "$target" ]; then
	share="$(echo "$target" | awk '{gsub("%", "", $8); print $8}')"
	ratio="$(echo "$target" | awk '{print $10}')"
	log "target point block 16, batch 64, context 4096: ${share}% of ${peak} GB/s (target >= 70%), paged/contiguous time ${ratio} (target <= 1.10)"
	if awk -v s="$share" 'BEGIN { exit !(s >= 70) }'; then
		log "bandwidth target: met"
	else
		log "bandwidth target: NOT met"
	fi
	if awk -v r="$ratio" 'BEGIN { exit !(r <= 1.10) }'; then
		log "paged vs contiguous target: met"
	else
		log "paged vs contiguous target: NOT met"
	fi
else
	log "target point not in the benchmark grid (KVS_BENCH_ARGS filtered it out?)"
fi
log "done: results in $out"
