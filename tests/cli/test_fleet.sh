#!/usr/bin/env bash
# CLI tests of `kvsim fleet`: help, a fleet of one against replay (every
# key of the replay JSON), round-robin routing by hand on a tiny trace,
# per-replica rows and their accounting, the report, --find-min-replicas
# and --gpu-hour-price, and error messages with exit codes.  Needs $KVSIM.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvs_scaled_limit 150   # sanitizer builds replay the first 150 requests
run() { kvs_run fleet "$@"; } # run EXPECTED_RC ARGS...: $out, $err

# ---- help lists every option and router ---------------------------------------------
run 0 --help && for f in --replicas --router --router-refresh --gpu-hour-price \
	--find-min-replicas --rate --max-replicas --json --report \
	round-robin random least-requests least-kv prefix score cache-threshold vllm-dp \
	--data-parallel-size \
	--policy --max-num-seqs --enable-prefix-caching --slo-ttft --slo-tpot \
	--model --gpu --tp --block-size --limit; do
	has "$out" "$f" "help"
done
"$KVSIM" --help | grep -q "fleet" || fail "kvsim --help lists fleet"

# ---- a fleet of one is the replay --------------------------------------------------------
run 0 -q --router least-requests --json "$tmp/f1.json" &&
	kvs_run replay 0 -q --json "$tmp/r.json" && {
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/r.json" "$tmp/f1.json" <<'PY' || fail "fleet of one differs from replay"
import json, sys
r, f = (json.load(open(p)) for p in sys.argv[1:3])
assert f["command"] == "fleet" and r["command"] == "replay"
for k in r:
    if k != "command":
        assert json.dumps(r[k], sort_keys=True) == json.dumps(f[k], sort_keys=True), k
fl = f["fleet"]
assert fl["replicas"] == 1 and fl["router"] == "least-requests", fl
rows = f["replicas"]
acc = f["policies"]["paged"]["accounting"]
assert rows[0]["arrived"] == acc["arrived"] == rows[0]["routed"]
PY
	fi
}

# ---- round-robin on a tiny trace: 5 requests over 2 replicas, 3 + 2 ---------------------
cat >"$tmp/tiny.csv" <<'CSV'
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:00:00.0000000,100,5
2023-11-16 18:00:00.1000000,100,5
2023-11-16 18:00:00.2000000,100,5
2023-11-16 18:00:00.3000000,100,5
2023-11-16 18:00:00.4000000,100,5
CSV
run 0 "$tmp/tiny.csv" -q --replicas 2 --step-time-linear 0.01 --gpu-hour-price 2.5 \
	--json "$tmp/t.json" && {
	has "$out" "fleet: 2 replicas, router round-robin" "fleet line"
	has "$out" "paged: arrived 5 = completed 5 + rejected 0 + unfinished 0" "fleet accounting"
	echo "$out" | grep -qE '^ +0 +3 +3 +0 +0 ' || fail "replica 0 row: $out"
	echo "$out" | grep -qE '^ +1 +2 +2 +0 +0 ' || fail "replica 1 row: $out"
	# 3 and 2 requests: mean 2.5, sd 0.5, CV 0.2
	has "$out" "requests CV 0.2000" "balance"
	# 2 replicas x 1 GPU x $2.5
	has "$out" "2 GPUs, \$5.00 per hour" "cost"
	# the pool per GPU is one replica's, as replay prints it; the sum of
	# both is the fleet's, labelled so (before: the sum as "per GPU")
	kvs_run replay 0 "$tmp/tiny.csv" -q --step-time-linear 0.01
	pergpu=$(echo "$out" | grep '^KV pool per GPU')
	[ -n "$pergpu" ] || fail "replay's KV pool per GPU: $out"
	run 0 "$tmp/tiny.csv" -q --replicas 2 --step-time-linear 0.01
	[ "$(echo "$out" | grep '^KV pool per GPU')" = "$pergpu" ] ||
		fail "fleet's KV pool per GPU is not replay's: $out"
	has "$out" "KV pool of the whole fleet 39.55 GiB on 2 GPUs = 324000 tokens (20250 blocks" \
		"fleet total KV pool"
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/t.json" <<'PY' || fail "fleet JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
fl = d["fleet"]
assert [r["routed"] for r in d["replicas"]] == [3, 2]
assert [r["name"] for r in d["replicas"]] == ["0", "1"]
assert abs(fl["balance"]["requests_cv"] - 0.2) < 1e-12
assert fl["cost"]["dollars_per_hour"] == 5.0
# engine: one replica, per GPU; policies.*.kv: the replicas' sum; fleet.kv: both
kv, e, pk = fl["kv"], d["engine"], d["policies"]["paged"]["kv"]
assert kv["gpus"] == 2 and kv["budget_bytes_per_gpu"] == e["kv_budget_bytes"], kv
assert kv["num_gpu_blocks_per_replica"] == e["num_gpu_blocks"], kv
assert kv["total_bytes"] == 2 * e["kv_budget_bytes"] == pk["budget_bytes"], (kv, pk)
assert kv["total_blocks"] == pk["num_gpu_blocks"] and kv["total_tokens"] == 16 * kv["total_blocks"]
for r in d["replicas"]:
    assert r["arrived"] == r["completed"] + r["rejected"] + r["unfinished"]
p = d["policies"]["paged"]
assert p["accounting"]["completed"] == 5
# each request: 10 ms prefill + 4 decode steps of 10 ms: TTFT 10 ms alone on its replica
assert abs(p["ttft_s"]["max"] - 0.01) < 1e-9, p["ttft_s"]
PY
	fi
}

# ---- a pool's GPU: a preset or a GPU file; --gpu / --gpu-mem would be dropped, so refused
cat >"$tmp/g40.json" <<'JSON'
{ "memory": "39.50GiB", "hbm_gb_per_s": 1555, "fp16_dense_tflops": 312,
  "pcie_gb_per_s": 32, "interconnect_gb_per_s": 300 }
JSON
run 0 "$tmp/tiny.csv" -q --pool p:1:"$tmp/g40.json":1 &&
	has "$out" "KV pool per GPU 19.78 GiB" "pool on a GPU file (the a100-40gb's figures)"
run 2 "$tmp/tiny.csv" -q --pool p:1:h100-80gb:1 --gpu-mem 40GiB &&
	has "$err" "--pool names each pool's GPU: not with --gpu-mem" "--gpu-mem with --pool refused"
run 2 "$tmp/tiny.csv" -q --pool p:1:h100-80gb:1 --gpu a100-40gb &&
	has "$err" "--pool names each pool's GPU: not with --gpu" "--gpu with --pool refused"

# ---- heterogeneous pools: 2 x (h100, tp 2) + 3 x (a100-40gb, tp 1) = 7 GPUs -----------------
run 0 "$tmp/tiny.csv" -q --pool big:2:h100-80gb:2 --pool small:3:a100-40gb:1 \
	--gpu-hour-price 2 --json "$tmp/p.json" && {
	has "$out" "fleet: 5 replicas, router round-robin" "pool fleet line"
	has "$out" "pool big: 2 x h100-80gb, tp 2" "pool line"
	# the header: a pool per GPU for each pool, the fleet's total over its 7 GPUs
	has "$out" "model llama-3-8b, KV cache bf16, 5 replicas in 2 pools" "pool header"
	echo "$out" | grep -qE '^  pool big: 2 x h100-80gb \(tp 2\): KV pool per GPU ' ||
		fail "pool big's KV pool per GPU: $out"
	echo "$out" | grep -qE '^  pool small: 3 x a100-40gb \(tp 1\): KV pool per GPU 19.78 GiB ' ||
		fail "pool small's KV pool per GPU: $out"
	echo "$out" | grep -qE '^KV pool of the whole fleet .* on 7 GPUs = ' || fail "pools' total: $out"
	# each pool takes its GPU's scheduler defaults (vLLM's serve rule)
	echo "$out" | grep -qE '^  pool small: .*max_num_seqs 256, max_num_batched_tokens 2048$' ||
		fail "pool small's limits: $out"
	echo "$out" | grep -qE '^  pool big: .*max_num_seqs 1024, max_num_batched_tokens 8192$' ||
		fail "pool big's limits: $out"
	has "$out" "engine max_num_seqs and max_num_batched_tokens per pool (above)" "engine line per pool"
	has "$out" "pool small: 3 x a100-40gb, tp 1" "pool line"
	has "$out" "7 GPUs, \$14.00 per hour" "pool cost"
	# the table names the replicas as the JSON does (before: 0, 1, ...)
	for r in big-0 big-1 small-2 small-3 small-4; do
		echo "$out" | grep -qE "^ +$r +1 +1 +0 +0 " || echo "$out" | grep -qE "^ +$r +0 +0 +0 +0 " ||
			fail "replica $r in the table: $out"
	done
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/p.json" <<'PY' || fail "pool JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
fl = d["fleet"]
assert [p["name"] for p in fl["pools"]] == ["big", "small"]
assert [r["pool"] for r in d["replicas"]] == ["big", "big", "small", "small", "small"]
assert [r["name"] for r in d["replicas"]] == ["big-0", "big-1", "small-2", "small-3", "small-4"]
assert fl["pools"][0]["kv_budget_bytes"] > fl["pools"][1]["kv_budget_bytes"]
assert fl["cost"]["gpus"] == 7
kv, pl = fl["kv"], fl["pools"]
# different pools: no one figure per GPU; the total over every GPU
assert kv["budget_bytes_per_gpu"] is None and kv["gpus"] == 7, kv
assert kv["total_bytes"] == 2 * 2 * pl[0]["kv_budget_bytes"] + 3 * pl[1]["kv_budget_bytes"], kv
assert kv["total_blocks"] == 2 * pl[0]["num_gpu_blocks"] + 3 * pl[1]["num_gpu_blocks"], kv
PY
	fi
}
run 2 -q --pool big:2:h100-80gb && has "$err" "expected NAME:N:GPU:TP" "pool fields"
run 2 -q --pool big:0:h100-80gb:1 && has "$err" "replicas '0'" "pool of none"
run 2 -q --pool big:2:nope:1 && has "$err" "unknown GPU 'nope'" "pool GPU"
run 2 -q --pool big:2:a100-40gb:3 && has "$err" "tp 3 does not divide" "pool tp"
run 2 -q --pool big:2:a100-40gb:1 --replicas 3 && has "$err" "not with --replicas" "pool and replicas"
run 2 -q --pool a:1:h100-80gb:1 --pool a:2:a100-40gb:1 && has "$err" "pool a: named twice (pools 1 and 2)" "a pool name given twice"

# ---- the report renders a fleet ------------------------------------------------------------
run 0 "$tmp/tiny.csv" -q --replicas 2 --report "$tmp/rep" && report_ok && check_report "$tmp/rep" && {
	has "$(cat "$tmp/rep/index.html")" "<h3>Replicas</h3>" "report replica table"
	has "$(cat "$tmp/rep/index.html")" "<th>routed</th>" "report replica column"
	# the answer states the fleet, and the fleet-wide concurrency as such;
	# the replica columns by the table's headings, shares in percent
	# (before: no replica count, router or GPUs; raw keys, a fraction)
	html=$(cat "$tmp/rep/index.html")
	has "$html" "A fleet of <b>2 replicas</b> on <b>2 GPUs</b>, router round-robin: " "report: the fleet"
	has "$html" "conversations at once on average across the fleet (" "report: fleet-wide concurrency"
	has "$html" "<th>routed</th><th>arrived</th><th>completed</th><th>rejected</th><th>unfinished</th><th>KV used %</th><th>prefix hit %</th>" \
		"report: replica columns"
	echo "$html" | grep -q "<th>prefix_hit_rate_tokens</th>" && fail "report: raw replica key"
}

# ---- time-weighted memory over the fleet's time -----------------------------------------
# replica 0 holds 100 .. 199 tokens (149.5 on average) for 100 steps of
# 10 ms; replica 1 holds 100 tokens for one step and then nothing: over the
# fleet's 1.00 s and its 2 x 1,600 tokens, (149.5 x 1.0 + 100 x 0.01) /
# 3,200 = 4.70% token states (not 9.31%, replica 1 counted over its own
# 10 ms only)
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,100\n0,100,1\n' >"$tmp/idle.csv"
run 0 "$tmp/idle.csv" -q --replicas 2 --router round-robin --model llama-3-8b --gpu h100-80gb \
	--step-time-linear 0.01 --block-size 16 --num-gpu-blocks-override 100 &&
	echo "$out" | grep -qE '^  token states +4\.70$' || fail "fleet memory over the fleet's time: $out"

# ---- the fewest replicas for an SLO --------------------------------------------------------
run 0 -q --find-min-replicas --rate 20 --slo-ttft 0.5 --slo-tpot 0.05 --router least-requests && {
	echo "$out" | grep -qE '^kvsim fleet: [0-9]+ replicas meet p99 TTFT <= 0.5 s and p99 TPOT <= 0.05 s at 20 requests/s' ||
		fail "find-min-replicas: $out"
	n=$(echo "$out" | sed -n 's/^kvsim fleet: \([0-9]*\) replicas meet.*/\1/p')
	has "$out" "fleet: $n replicas" "the table is the minimal fleet"
	[ "$n" -gt 1 ] 2>/dev/null || fail "20 requests/s needs more than one replica: $n"
	m=$((n - 1))
	has "$err" "kvsim fleet: $m replicas:" "the fleet one smaller was tried"
	echo "$err" | grep -q "kvsim fleet: $m replicas: .*misses" || fail "n - 1 replicas miss: $err"
}
# --json -: standard output is the JSON alone, the answer's line on stderr
# (sanitizer builds: 60 requests, the answer's value is not checked here)
kvs_scaled_limit 60
run 0 -q --find-min-replicas --rate 20 --slo-ttft 0.5 --json - && command -v python3 >/dev/null && {
	printf '%s' "$out" | python3 -c 'import json, sys; json.load(sys.stdin)' 2>/dev/null ||
		fail "find-min-replicas --json -: not JSON: $(printf '%s' "$out" | head -c 200)"
	has "$err" "replicas meet p99 TTFT <= 0.5 s" "find-min-replicas --json -: the answer on stderr"
}
# one SLO given: the answer names that one, no bound of 0 s on the other
echo "$err" | grep -q "replicas meet p99 TTFT <= 0.5 s at 20 requests/s" ||
	fail "find-min-replicas, TTFT only: $err"
echo "$err" | grep -q "TPOT <= 0 s" && fail "find-min-replicas: a TPOT bound not given: $err"

# every search writes fleet.search: the counts tried and their verdicts
kvs_scaled_limit 150
run 0 -q --find-min-replicas --rate 20 --slo-ttft 0.5 --json "$tmp/s.json" &&
	command -v python3 >/dev/null && {
	python3 - "$tmp/s.json" <<'PY' || fail "a finished search's fleet.search"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["fleet"]["search"]
assert s["result"] == "found" and s["floor"] is None, s
assert s["fewest_meeting"] == s["shown_replicas"] == d["fleet"]["replicas"], s
assert s["most_missing"] == s["fewest_meeting"] - 1, s
assert [t["verdict"] for t in s["tried"] if t["replicas"] == s["fewest_meeting"]] == ["meets"], s
PY
}
# an SLO no number of replicas meets: the search stops once more replicas
# no longer help (no request queued, the p99 missed no better than the
# count before), says so with the floor and what would help, writes its
# outputs, exits 1 (before: doubling to 1,024, then "raise --max-replicas");
# sanitizer builds: 40 requests, enough to reach the floor
kvs_scaled_limit 40
run 1 -q --model llama-3-70b --gpu h100-80gb --tp 4 --slo-ttft 0.01 --find-min-replicas \
	--json "$tmp/u.json" && {
	has "$out" "kvsim fleet: unattainable: no number of replicas meets p99 TTFT <= 0.01 s" \
		"unattainable verdict"
	has "$out" "the floor of an unloaded fleet: p99 TTFT " "unattainable floor"
	has "$out" "a faster GPU (--gpu), more tensor parallelism (--tp)" "what would help"
	echo "$err" | grep -q "1024 replicas" && fail "unattainable: doubled to 1024: $err"
	echo "$err" | grep -q "raise --max-replicas" && fail "unattainable: max-replicas advice: $err"
	command -v python3 >/dev/null && python3 - "$tmp/u.json" <<'PY' || fail "unattainable fleet.search"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["fleet"]["search"]
assert s["result"] == "unattainable" and s["fewest_meeting"] is None, s
t = s["tried"]
assert t[-1]["queue_delay_max_s"] == 0 and t[-1]["replicas"] < 1024, t
assert s["floor"]["replicas"] == t[-1]["replicas"] == s["shown_replicas"], s
assert s["floor"]["ttft_p99_s"] == t[-1]["ttft_p99_s"] > 0.01, s
assert t[-1]["ttft_p99_s"] >= t[-2]["ttft_p99_s"] * (1 - 1e-3), t
assert d["fleet"]["replicas"] == t[-1]["replicas"]
PY
}

# --max-replicas reached while more replicas still help: the largest fleet
# tried is written, with the counts tried, exit 1 (before: no output)
kvs_scaled_limit 150
run 1 -q --find-min-replicas --slo-ttft 0.5 --max-replicas 2 --rate 40 --json "$tmp/mr.json" && {
	has "$out" "kvsim fleet: no fleet of up to 2 replicas meets the SLOs at 40 requests/s, and more replicas still helped (raise --max-replicas)" \
		"max-replicas verdict"
	has "$out" "tried 1 (misses), 2 (misses)" "max-replicas: counts tried"
	command -v python3 >/dev/null && python3 - "$tmp/mr.json" <<'PY' || fail "max-replicas fleet.search"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["fleet"]["search"]
assert s["result"] == "max_replicas_reached" and s["most_missing"] == 2, s
assert [t["replicas"] for t in s["tried"]] == [1, 2] and d["fleet"]["replicas"] == 2, s
PY
}

"$KVSIM" report --help | grep -q "kvsim fleet --json" || fail "report --help names fleet runs"
# a search's answer in the report: found, and unattainable with its floor
"$KVSIM" report "$tmp/s.json" -o "$tmp/rs" --quiet 2>/dev/null || fail "report of a search"
n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fleet"]["search"]["fewest_meeting"])' "$tmp/s.json" 2>/dev/null)
[ -z "$n" ] || has "$(cat "$tmp/rs/index.html")" "The fewest replicas that meet p99 TTFT &le; 500 ms at 20 req/s: <b>$n</b>" \
	"report: the search's answer"
"$KVSIM" report "$tmp/u.json" -o "$tmp/ru" --quiet 2>/dev/null || fail "report of an unattainable search"
has "$(cat "$tmp/ru/index.html")" "<b>Unattainable:</b> no number of replicas meets p99 TTFT &le; 10 ms" \
	"report: unattainable"
has "$(cat "$tmp/ru/index.html")" "the floor of an unloaded fleet is p99 TTFT " "report: floor"

# ---- prefill/decode disaggregation ---------------------------------------------------------
# 5 requests of 100 + 5 tokens over 1 prefill + 2 decode replicas: every
# request handed out once, received once, its KV moved once
run 0 "$tmp/tiny.csv" -q --pool prefill:1:h100-80gb:1 --pool dec:2:h100-80gb:1:decode \
	--kv-link 100Gb/s:20us --json "$tmp/d.json" && {
	has "$out" "KV link: custom, 12.5 GB/s, latency 2e-05 s" "link line"
	has "$out" "paged: arrived 5 = completed 5 + rejected 0 + unfinished 0" "disaggregated accounting"
	has "$out" "KV transfers: 5" "transfers line"
	# each row balances in sight: routed = completed + rejected +
	# unfinished + handed off (before: a prefill row of 5 routed, 0
	# completed, 0 rejected, 0 unfinished, the hand-offs only as "KV sent")
	has "$out" "routed completed  rejected unfinished handed off" "handed-off column"
	echo "$out" | grep -qE '^  prefill-0 +5 +0 +0 +0 +5 ' || fail "prefill row balance: $out"
	n2=$(echo "$out" | sed -n 's/^ *dec-1 \+\([0-9]*\) \+\([0-9]*\) \+0 \+0 \+0 .*/\1 \2/p')
	n3=$(echo "$out" | sed -n 's/^ *dec-2 \+\([0-9]*\) \+\([0-9]*\) \+0 \+0 \+0 .*/\1 \2/p')
	[ -n "$n2" ] && [ -n "$n3" ] && [ "${n2% *}" = "${n2#* }" ] && [ "${n3% *}" = "${n3#* }" ] ||
		fail "decode rows: routed = completed, nothing handed off: $out"
	has "$out" "each row: routed = completed + rejected + unfinished + handed off" "balance line"
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/d.json" <<'PY' || fail "disaggregated JSON"
import json, sys
d = json.load(open(sys.argv[1]))
fl, rows = d["fleet"], d["replicas"]
assert [r["role"] for r in rows] == ["prefill", "decode", "decode"], rows
assert rows[0]["kv_sent"] == 5 and rows[0]["arrived"] == 5 and rows[0]["completed"] == 0
assert sum(r["kv_received"] for r in rows) == 5 and sum(r["completed"] for r in rows) == 5
for r in rows:
    assert r["arrived"] + r["kv_received"] == r["completed"] + r["rejected"] + r["unfinished"] + r["kv_sent"], r
t = fl["transfers"]
# llama-3-8b: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 131072 B/token
assert t["count"] == 5 and t["bytes"] == 5 * 100 * 131072, t
assert t["mean_s"] >= 20e-6 + 100 * 131072 / 12.5e9 - 1e-12, t
assert fl["kv_link"]["bytes_per_s"] == 12.5e9 and fl["kv_link"]["latency_s"] == 2e-5
assert [p["role"] for p in fl["pools"]] == ["prefill", "decode"]
PY
	fi
}
# pools in any order, a stale signal, the prefix router
run 0 "$tmp/tiny.csv" -q --pool decode:2:h100-80gb:1 --pool prefill:2:h100-80gb:1 \
	--router prefix --router-refresh 1 --enable-prefix-caching && {
	has "$out" "paged: arrived 5 = completed 5 + rejected 0 + unfinished 0" "decode pool first"
	has "$out" "KV transfers: 5" "decode pool first: transfers"
}
# same_runs A.json B.json WHAT: two fleet runs agree (fast path and one
# token at a time): every figure to 1e-9, events and spans aside
same_runs() {
	command -v python3 >/dev/null 2>&1 || return 0
	python3 - "$1" "$2" <<'PY' || fail "$3: the fast path and --no-fast-path disagree"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
bad = []
def walk(x, y, p=""):
    if isinstance(x, dict):
        for k in x:
            if k not in ("events", "spans", "fast_path", "wall_s"):
                walk(x[k], y.get(k), p + "." + k)
    elif isinstance(x, list):
        for i, (u, v) in enumerate(zip(x, y)):
            walk(u, v, "%s[%d]" % (p, i))
    elif isinstance(x, float) and isinstance(y, float):
        if abs(x - y) > 1e-9 * max(abs(x), abs(y)):
            bad.append((p, x, y))
    elif x != y:
        bad.append((p, x, y))
walk(a, b)
assert not bad, bad[:5]
PY
}
# a decode replica refuses a request it can never fit (l4's pool is far
# smaller than the a100's) while it decodes a long one; the prefill
# replica, its memory freed, prefills the request that waited for it and
# hands it over at 39 s: the decode replica must not have run on past
# that (before, the run failed: "comes at 39.3 s, before the engine's
# time 642 s")
printf 'arrival_s,prompt_tokens,output_tokens\n0,16,9000\n1.0,2000,20000\n1.01,123000,10\n' >"$tmp/rej.csv"
for fp in "" --no-fast-path; do
	run 0 -q "$tmp/rej.csv" --model llama-3.1-8b --gpu-memory-utilization 0.8 \
		--pool prefill:1:a100-40gb:1 --pool decode:1:l4:1 $fp --json "$tmp/rej$fp.json" &&
		has "$out" "paged: arrived 3 = completed 1 + rejected 2 (exceeds_kv_budget 2)" \
			"decode-side refusals $fp"
done
same_runs "$tmp/rej.json" "$tmp/rej--no-fast-path.json" "decode-side refusals"
# a decode replica that starts two transfers on one link within a span,
# the second after the first one's latency (small pools, a slow link with
# latency): the first transfer is served alone until the second's latency
# ends, the same both ways (before, the fast path delayed it)
"$KVSIM" gen --requests 150 --rate 20 --prompt-len uniform:100:800 --output-len uniform:10:200 \
	--seed 7 -o "$tmp/g150.csv" 2>/dev/null || fail "gen g150"
for fp in "" --no-fast-path; do
	run 0 -q "$tmp/g150.csv" --num-gpu-blocks-override 300 --pool prefill:2:h100-80gb:1 \
		--pool decode:2:h100-80gb:1 --kv-link 1GB/s:5ms $fp --json "$tmp/two$fp.json"
done
same_runs "$tmp/two.json" "$tmp/two--no-fast-path.json" "two transfers on one link in a span"
run 0 --help && for f in --kv-link nvlink ib-400g ib-200g eth-100g pcie5 ROLE; do
	has "$out" "$f" "help (disaggregation)"
done
run 2 -q --pool prefill:1:h100-80gb:1 --pool decode:1:h100-80gb:1 --kv-link fast &&
	has "$err" "--kv-link 'fast': bandwidth" "bad link bandwidth"
run 2 -q --pool prefill:1:h100-80gb:1 --pool decode:1:h100-80gb:1 --kv-link 10:-1ms &&
	has "$err" "--kv-link '10:-1ms': latency" "bad link latency"
run 2 -q --replicas 2 --kv-link nvlink && has "$err" "--kv-link needs prefill and decode pools" \
	"link without disaggregation"
run 2 -q --pool a:1:h100-80gb:1:middle && has "$err" "role 'middle'" "bad role"
run 2 -q --pool prefill:1:h100-80gb:1 --pool x:1:h100-80gb:1 &&
	has "$err" "needs a prefill pool and a decode pool" "prefill without decode"

# ---- errors ------------------------------------------------------------------------------------
run 2 -q --router nope && has "$err" "router 'nope': unknown" "unknown router"
run 2 -q --router score:prefix=x && has "$err" "prefix='x'" "bad weight"
run 2 -q --replicas 0 && has "$err" "--replicas" "zero replicas"
# more replicas than the machine's memory holds: refused up front, at once
# (each holds its pool's bookkeeping, about 380 KiB here, whatever the trace)
mem_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo 2>/dev/null)
if [ -n "$mem_kb" ] && [ "$mem_kb" -lt 350000000 ]; then
	run 1 -q --replicas 1048576 && has "$err" "1048576 replicas need about" "a fleet past the host's memory"
else
	echo "note: more than 350 GB of memory: the fleet-past-memory check is skipped"
fi
run 2 -q --router-refresh -1 && has "$err" "--router-refresh" "negative refresh"
run 2 -q --find-min-replicas && has "$err" "--find-min-replicas needs --slo-ttft" "search without SLO"
run 2 -q --rate 3 && has "$err" "--rate is for --find-min-replicas" "rate alone"
run 2 -q --max-replicas 5 && has "$err" "--max-replicas is for --find-min-replicas" "max-replicas alone"
run 2 -q --policies paged,max && has "$err" "one policy per fleet" "several policies"
run 1 -q "$tmp/nothere.csv" && has "$err" "nothere.csv" "missing trace"
# a block size the trace's hash blocks cannot take is a usage error, whether
# the trace is streamed or read into memory (the search, standard input)
mooncake="$KVS_SOURCE_ROOT/traces/samples/mooncake-sample.jsonl"
run 2 -q "$mooncake" --block-size 48 && has "$err" "neither divides" "block size, streamed"
run 2 -q --block-size 48 - < "$mooncake" && has "$err" "neither divides" "block size, stdin"
run 2 -q "$mooncake" --block-size 48 --find-min-replicas --slo-ttft 1 &&
	has "$err" "neither divides" "block size, search"
run 1 -q "$tmp/tiny.csv" --json /nonexistent-dir/x.json &&
	has "$err" "--json: /nonexistent-dir/x.json: cannot write" "unwritable --json"

# ---- replicas that never step; parallel sampling across prefill and decode -------------
printf 'arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority\n0,100,10,0,0,2,0\n0.5,100,10,1,0,2,0\n' >"$tmp/n2.csv"
run 0 -q "$tmp/n2.csv" --replicas 3 --json "$tmp/idle.json" &&
	kvs_run replay 0 -q "$tmp/n2.csv" --start 1000 --json "$tmp/empty.json" &&
	run 0 -q "$tmp/n2.csv" --pool prefill:1:a100-40gb:1 --pool decode:1:a100-40gb:1 \
		--json "$tmp/pd.json" && {
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/idle.json" "$tmp/empty.json" "$tmp/pd.json" <<'PY' || fail "idle replicas' peak, or parallel sampling counted twice"
import json, sys
idle, empty, pd = (json.load(open(p)) for p in sys.argv[1:])
# a replica with nothing to run still has a peak (its first state): the
# fleet's six parts sum to 100, as an empty replay's do
for d in (idle, empty):
    pk = d["policies"]["paged"]["memory_peak_pct"]
    assert abs(sum(pk.values()) - 100) < 1e-6, pk
# each n = 2 request counted once though two replicas held it
a = pd["policies"]["paged"]["accounting"]
assert a["multi_sample_requests"] == 2 == a["arrived"], a
PY
	fi
}

# ---- a given sample interval too fine to keep: coarsened, with replay's warning ---------
run 0 -q --replicas 2 --sample-interval 1e-6 --json=/dev/null &&
	has "$err" "kvsim fleet: warning: --sample-interval 1e-06 s over " "fleet: fine interval warned"

# ---- a horizon: the trace's requests after it counted, as replay counts them ------------
run 0 -q --replicas 2 --horizon 1 --json "$tmp/fh.json" && {
	has "$out" "after the horizon at 1 s, not simulated" "fleet horizon line"
	kvs_run replay 0 -q --horizon 1 --json "$tmp/rh.json"
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/fh.json" "$tmp/rh.json" <<'PY' || fail "fleet horizon accounting"
import json, sys
f, r = (json.load(open(p))["policies"]["paged"]["accounting"] for p in sys.argv[1:])
assert f["after_horizon"] > 0, f
# the same trace and horizon: the same requests taken, the same rest
assert f["arrived"] + f["after_horizon"] == r["arrived"] + r["after_horizon"], (f, r)
PY
	fi
}

# ---- data parallelism: the ranks behind vLLM's balancer --------------------------------
# --dp 4 --enable-expert-parallel: four replicas, router vllm-dp refreshed
# every 0.1 s, each rank's pool the one 'size' gives for the same flags
dpf=(--model qwen3-30b-a3b --gpu h100-80gb --dp 4 --enable-expert-parallel)
run 0 -q "${dpf[@]}" --limit 200 --json "$tmp/dp.json" &&
	"$KVSIM" size "${dpf[@]}" --json "$tmp/dps.json" >/dev/null &&
	command -v python3 >/dev/null && {
	python3 - "$tmp/dp.json" "$tmp/dps.json" <<'PY' || fail "fleet --dp JSON"
import json, sys
f, s = (json.load(open(p)) for p in sys.argv[1:3])
fl = f["fleet"]
assert fl["replicas"] == 4 and fl["router"] == "vllm-dp", fl
assert fl["router_refresh_s"] == 0.1, fl
assert fl["kv"]["gpus"] == 4, fl["kv"]
assert f["engine"]["kv_budget_bytes"] == s["kv_budget_bytes"], (f["engine"]["kv_budget_bytes"], s["kv_budget_bytes"])
assert f["engine"]["dp"] == 4 and f["engine"]["expert_parallel"] is True
acc = f["policies"]["paged"]["accounting"]
assert sum(r["routed"] for r in f["replicas"]) == acc["arrived"] > 0, acc
PY
}
run 0 -q "${dpf[@]}" --limit 20 && has "$out" "4 data-parallel ranks (experts spread over all of them)" "--dp header"
# without expert parallelism each rank holds the whole model: a smaller pool
run 0 -q --model qwen3-30b-a3b --gpu h100-80gb --dp 4 --limit 50 --json "$tmp/dp0.json" &&
	command -v python3 >/dev/null && {
	python3 - "$tmp/dp0.json" "$tmp/dp.json" <<'PY' || fail "fleet --dp without expert parallelism"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["engine"]["kv_budget_bytes"] < b["engine"]["kv_budget_bytes"]
assert a["engine"]["expert_parallel"] is False
PY
}
# a router given, or SGLang's controller (round robin), and the refresh given
run 0 -q --dp 2 --router least-requests --limit 20 && has "$out" "router least-requests" "--dp --router"
run 0 -q --dp 2 --engine sglang --limit 20 && has "$out" "router round-robin" "--dp under sglang"
run 0 -q --dp 2 --limit 20 --router-refresh 0 && {
	has "$out" "router vllm-dp" "--dp default router"
	case "$out" in *"refreshed every"*) fail "--router-refresh 0 kept a refresh" ;; esac
}
run 0 -q --dp 2 --limit 20 && has "$out" "signals refreshed every 0.1 s" "vllm-dp's refresh"
# the ranks are the replicas
expect 2 "data-parallel-size 2.*not with --replicas" fleet --dp 2 --replicas 3
expect 2 "data-parallel-size 2.*not with --pool" fleet --dp 2 --pool a:1:h100-80gb:1
expect 2 "data-parallel-size 2.*not with --find-min-replicas" fleet --dp 2 --find-min-replicas --slo-ttft 1
run 0 -q --dp 2 --replicas 2 --limit 10
expect 2 "fleet --dp 2" replay --dp 2
expect 2 "router 'vllm-dp': takes no parameters" fleet --router vllm-dp:x=1

finish "cli fleet"
