#!/usr/bin/env bash
# CLI tests of --kv-offload (replay, compare, fleet): help; a tier hit on a
# crafted trace charged at the tier's bandwidth, by hand; the kv_offload
# JSON object and text lines, absent without the flag; the Mooncake
# synthetic trace (skipped when absent) with and without a host tier; bad
# values with an error naming the flag and exit 2.  Needs $KVSIM.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ---- help --------------------------------------------------------------------------------
for cmd in replay compare fleet; do
	kvs_run "$cmd" 0 --help && has "$out" "--kv-offload KIND:SIZE[:BW]" "$cmd help"
done

# ---- a hit charged by hand -----------------------------------------------------------------
# llama-3-8b: 128 KiB of KV per token, blocks of 16 = 2 MiB; a 100-block pool;
# every step 10 ms.  Request 0 caches 64 blocks (hash ids 1, 2 = 2 x 512
# tokens), request 1 fills the pool and evicts them to the host tier,
# request 2 (the prefix of request 0) loads them back:
#   64 x 2 MiB / 32 GB/s = 134217728 / 32e9 = 4.194304 ms,
# so its first token comes 10 + 4.194304 ms after it arrives (the others 10).
cat >"$tmp/t.jsonl" <<'T'
{"timestamp": 0, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 1000, "input_length": 1590, "output_length": 1, "hash_ids": [10, 11, 12]}
{"timestamp": 2000, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2]}
T
hand=(--model llama-3-8b --gpu a100-80gb --num-gpu-blocks-override 100 --watermark 0
	--step-time-linear 0.01 --enable-prefix-caching -q)
kvs_run replay 0 "$tmp/t.jsonl" "${hand[@]}" --json "$tmp/plain.json"
plain_out=$out
case "$plain_out" in *"KV offload"*) fail "text lines without --kv-offload" ;; esac
kvs_run replay 0 "$tmp/t.jsonl" "${hand[@]}" --kv-offload host:1GiB:32 --json "$tmp/off.json" &&
	has "$out" "KV offload host 1.00 GiB (512 blocks) at 32 GB/s: 64 blocks hit" "text" &&
	has "$out" "prefix hits 64 blocks = HBM 0 + offload tiers 64 (100.0% from the tiers)" "split"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/plain.json" "$tmp/off.json" <<'PY' || fail "hand-computed tier hit"
import json, sys
plain, off = (json.load(open(p))["policies"]["paged"] for p in sys.argv[1:3])
assert "kv_offload" not in plain, "kv_offload without the flag"
assert abs(plain["ttft_s"]["max"] - 0.01) < 1e-12, plain["ttft_s"]
load = 64 * 2097152 / 32e9
assert abs(load - 0.004194304) < 1e-15
assert abs(off["ttft_s"]["max"] - (0.01 + load)) < 1e-12, off["ttft_s"]
k = off["kv_offload"]
h = k["host"]
assert h["capacity_blocks"] == 512 and h["capacity_bytes"] == 1 << 30, h
assert h["bandwidth_bytes_per_s"] == 32e9, h
assert h["hit_blocks"] == 64 and h["hit_tokens"] == 1024, h
assert h["load_bytes"] == 64 * 2097152 and abs(h["load_s"] - load) < 1e-15, h
# stored: request 0's 64 blocks, then 61 of request 1's 96 to make room
# for request 2's 65 (4 free)
assert h["store_blocks"] == 125 and h["store_bytes"] == 125 * 2097152, h
assert h["store_blocks"] == h["resident_blocks"] + h["evicted_blocks"] + h["promoted_blocks"]
assert k["tier_hit_blocks"] == 64 and k["hbm_hit_blocks"] == 0, k
assert k["tier_hit_share"] == 1.0 and k["load_bytes"] == h["load_bytes"], k
assert off["prefix_hit_blocks"] == 64 and off["prefix_hit_tokens"] == 1024, off
assert "disk" not in k
PY
fi

# ---- host then disk ---------------------------------------------------------------------
# a host tier of 10 blocks pushes 54 of request 0's blocks to disk (7 GB/s
# default); request 2 loads its prefix run: the host tier holds the
# most recently evicted blocks (request 0's first 10, evicted last: a
# sequence frees its tail first), the disk the other 54
kvs_run replay 0 "$tmp/t.jsonl" "${hand[@]}" --kv-offload host:20MiB:32,disk:1GiB \
	--json "$tmp/casc.json" && has "$out" "KV offload disk 1.00 GiB (512 blocks) at 7 GB/s" "disk line"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/casc.json" <<'PY' || fail "host -> disk cascade"
import json, sys
k = json.load(open(sys.argv[1]))["policies"]["paged"]["kv_offload"]
h, d = k["host"], k["disk"]
assert h["capacity_blocks"] == 10 and d["capacity_blocks"] == 512, k
assert d["bandwidth_bytes_per_s"] == 7e9, d
assert h["hit_blocks"] + d["hit_blocks"] == 64 == k["tier_hit_blocks"], k
assert h["hit_blocks"] == 10 and d["hit_blocks"] == 54, k
load = 10 * 2097152 / 32e9 + 54 * 2097152 / 7e9
assert abs(k["load_s"] - load) < 1e-12, (k["load_s"], load)
for t in (h, d):
    assert t["store_blocks"] == t["resident_blocks"] + t["evicted_blocks"] + t["promoted_blocks"], t
assert h["evicted_blocks"] == d["store_blocks"], k
PY
fi

# ---- compare and fleet take the flag ----------------------------------------------------------
kvs_run compare 0 "$tmp/t.jsonl" "${hand[@]}" --policies paged --kv-offload host:1GiB:32 &&
	has "$out" "64 blocks hit" "compare"
kvs_run fleet 0 "$tmp/t.jsonl" "${hand[@]}" --replicas 2 --kv-offload host:1GiB:32 \
	--json "$tmp/fleet.json" && has "$out" "KV offload host 2.00 GiB (1024 blocks)" "fleet sums"
if command -v python3 >/dev/null 2>&1 && [ -s "$tmp/fleet.json" ]; then
	python3 - "$tmp/fleet.json" <<'PY' || fail "fleet kv_offload"
import json, sys
d = json.load(open(sys.argv[1]))
k = d["policies"]["paged"]["kv_offload"]
assert k["host"]["capacity_blocks"] == 1024, k    # two replicas of 512
# each replica row has its own tier; the fleet figures are their sums
rows = [r["kv_offload"] for r in d["replicas"]]
assert len(rows) == 2 and all(r["host"]["capacity_blocks"] == 512 for r in rows), rows
for key in ("hit_blocks", "load_bytes", "store_blocks"):
    assert sum(r["host"][key] for r in rows) == k["host"][key], (key, rows, k)
PY
fi

# ---- Mooncake: a small pool reaches a higher prefix hit rate with a host tier ---------
moon="${KVS_SHARED_TRACES:-}/mooncake-synthetic/synthetic.jsonl"
if [ -f "$moon" ]; then
	# the whole trace, 3000 blocks, 64 GiB; under sanitizers (validators
	# after every allocator call) 100 requests, 1000 blocks, 2 GiB
	lim=4000 blocks=3000 size=64GiB
	case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) lim=100 blocks=1000 size=2GiB ;; esac
	m=(--model llama-3-8b --gpu a100-80gb --max-model-len 131072 --enable-prefix-caching
		--num-gpu-blocks-override "$blocks" --limit "$lim" -q)
	kvs_run replay 0 "$moon" "${m[@]}" --json "$tmp/m0.json" &&
		kvs_run replay 0 "$moon" "${m[@]}" --kv-offload "host:$size" --json "$tmp/m1.json" &&
		command -v python3 >/dev/null 2>&1 && {
		python3 - "$tmp/m0.json" "$tmp/m1.json" <<'PY' || fail "mooncake hit rate"
import json, sys
a, b = (json.load(open(p))["policies"]["paged"] for p in sys.argv[1:3])
ra, rb = a["prefix_hit_rate"]["tokens"], b["prefix_hit_rate"]["tokens"]
print(f"mooncake: prefix hit rate (tokens) {ra:.4f} without a tier, "
      f"{rb:.4f} with a host tier")
assert rb > ra, (ra, rb)
assert b["kv_offload"]["host"]["bandwidth_bytes_per_s"] == 32e9   # a100: PCIe 4.0 x16
PY
	}
else
	echo "skip: mooncake-synthetic trace absent"
fi

# ---- bad values name the flag ---------------------------------------------------------------
bad() { # bad NEEDLE ARGS...: exit 2, the message names --kv-offload and NEEDLE
	local needle=$1
	shift
	kvs_run replay 2 "$tmp/t.jsonl" "${hand[@]}" "$@" &&
		has "$err" "--kv-offload" "$*" && has "$err" "$needle" "$*"
}
bad "unknown tier 'gpu'" --kv-offload gpu:1GiB
bad "expected KIND:SIZE" --kv-offload host
bad "tier host: size" --kv-offload host:lots
bad "bandwidth '0'" --kv-offload host:1GiB:0
bad "bandwidth 'x'" --kv-offload host:1GiB:x
bad "given twice" --kv-offload host:1GiB --kv-offload host:2GiB
bad "hold no block" --kv-offload host:1MiB
kvs_run replay 2 "$tmp/t.jsonl" --model llama-3-8b -q --kv-offload host:1GiB &&
	has "$err" "--kv-offload needs --enable-prefix-caching" "no prefix caching"
kvs_run compare 2 "$tmp/t.jsonl" "${hand[@]}" --policies paged,max --kv-offload host:1GiB &&
	has "$err" "--kv-offload needs the paged policy" "compare max"
kvs_run sweep 2 "$tmp/t.jsonl" "${hand[@]}" --kv-offload host:1GiB &&
	has "$err" "--kv-offload is for replay, compare and fleet" "sweep"

finish "cli offload"
