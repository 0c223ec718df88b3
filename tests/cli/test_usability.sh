#!/usr/bin/env bash
# CLI tests of what a vLLM, Vidur or pandas user types and reads: did-you-mean
# hints, forgiving inputs, per-request latency columns, --bench-json in
# `vllm bench serve --save-result`'s schema, the summary CSV, cost figures,
# gen --burstiness, the ShareGPT hint and shortest floats in JSON.
# Needs $KVSIM and $KVS_SOURCE_ROOT.
set -u
ROOT="${KVS_SOURCE_ROOT:?}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ---- did you mean ------------------------------------------------------------
"$KVSIM" replya >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown command exits 2"
has "$(cat "$tmp/err")" "unknown command 'replya'; did you mean 'replay'?" "command hint"
kvs_run size 2 --modle llama-3-8b && has "$err" "did you mean '--model'?" "flag hint"
kvs_run replay 2 --max-num-seq 8 && has "$err" "did you mean '--max-num-seqs'?" "replay flag hint"
kvs_run sweep 2 --block-sizs 16 && has "$err" "did you mean '--block-sizes'?" "sweep flag hint"
kvs_run size 2 --zzzzzz && { has "$err" "unknown option '--zzzzzz'" "no hint"; case "$err" in *"did you mean"*) fail "no hint for a far word";; esac; }
# --csv is sweep's alone: the others neither advertise it nor suggest it
# for itself
for c in size trace replay compare fleet; do
	kvs_run "$c" 2 --csv && {
		has "$err" "unknown option '--csv'" "$c --csv"
		case "$err" in *"did you mean '--csv'"*) fail "$c --csv suggests itself: $err";; esac
	}
	"$KVSIM" "$c" --help | grep -q -- "--csv\b" && fail "$c --help names --csv, which it does not take"
done
"$KVSIM" sweep --help | grep -q -- "--csv \[FILE\]" || fail "sweep --help names --csv"
kvs_run size 2 --model llama3-8b && has "$err" "did you mean 'llama-3-8b'?" "model hint"
kvs_run size 2 --gpu h100 && has "$err" "did you mean 'h100-80gb' or 'h100-nvl-94gb'?" "gpu hint"
kvs_run size 2 --gpu h100-80 && has "$err" "did you mean 'h100-80gb'?" "near gpu hint"
kvs_run size 2 --model qwen3-vl && has "$err" "did you mean 'qwen3-vl-8b' or 'qwen3-vl-30b-a3b'?" "model family hint"

# ---- forgiving input ---------------------------------------------------------------
kvs_run size 0 --model Llama-3-8B --gpu H100-80GB --json && {
	has "$out" '"name": "llama-3-8b"' "model in any case"
	has "$out" '"name": "h100-80gb"' "gpu in any case"
}
kvs_run size 0 --model llama-3-70b -tp 4 -pp 2 && has "$out" "tp 4 x pp 2 (8 GPUs)" "-tp/-pp"
mkdir -p "$tmp/Llama-3-8B"
cp "$ROOT/sizing/presets/models/llama-3-8b.json" "$tmp/Llama-3-8B/config.json"
kvs_run size 0 --model "$tmp/Llama-3-8B" --json && has "$out" '"num_layers": 32' "--model DIR"
kvs_run size 0 --model "$tmp/Llama-3-8B/" && has "$out" "32 layers" "--model DIR/"
kvs_run size 0 --block-size 17 && has "$err" "--block-size 17 is not a power of two" "block size warning"
kvs_run size 0 --block-size 32 && [ -z "$err" ] || fail "no warning for a power of two: $err"
# shortest floats that read back the same: 0.9, not 0.90000000000000002
kvs_run size 0 --json && {
	has "$out" '"gpu_memory_utilization": 0.9,' "shortest float"
	case "$out" in *0000000000000*) fail "17-digit floats in size --json";; esac
}

# ---- traces -------------------------------------------------------------------------
kvs_run trace 0 && has "$out" "cv " "trace statistic named cv"
printf '[\n  {"id": "x", "conversations": [{"from": "human", "value": "hi"}]}\n]\n' >"$tmp/sg.json"
kvs_run trace 1 "$tmp/sg.json" && { has "$err" "sg.json:1: a JSON array" "ShareGPT named"; has "$err" "ShareGPT" "ShareGPT hint"; }
# gen --burstiness k is gamma gaps of shape k: cv = 1/sqrt(k)
"$KVSIM" gen --requests 4000 --rate 10 --burstiness 0.25 --seed 3 -o "$tmp/b.csv" 2>/dev/null || fail "gen --burstiness"
kvs_run trace 0 "$tmp/b.csv" --json && {
	cv=$(printf '%s\n' "$out" | sed -n 's/^  "cv_interarrival": \([0-9.]*\),$/\1/p')
	awk -v c="$cv" 'BEGIN { exit !(c > 1.8 && c < 2.2) }' || fail "--burstiness 0.25 gives cv 2 (got $cv)"
}
# --cv alone is gamma gaps of that cv, as --burstiness; with another
# arrival process it is a usage error, not ignored
"$KVSIM" gen --requests 4000 --rate 10 --cv 2 --seed 3 -o "$tmp/cv.csv" 2>/dev/null || fail "gen --cv"
kvs_run trace 0 "$tmp/cv.csv" --json && {
	cv=$(printf '%s\n' "$out" | sed -n 's/^  "cv_interarrival": \([0-9.]*\),$/\1/p')
	awk -v c="$cv" 'BEGIN { exit !(c > 1.8 && c < 2.2) }' || fail "--cv 2 alone gives cv 2 (got $cv)"
}
expect 2 "gen: --cv is the coefficient of variation of gamma gaps" gen --requests 10 --cv 2 --arrival poisson
expect 2 "gen: --cv .* goes with --arrival gamma" gen --requests 10 --arrival constant --cv 0.5
"$KVSIM" gen --requests 10 --arrival gamma --cv 2 >/dev/null 2>&1 || fail "gen --arrival gamma --cv 2"
"$KVSIM" gen --requests 10 --burstiness 1 --cv 2 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--burstiness with --cv is a usage error"
"$KVSIM" gen --requests 10 --burstiness 1 --arrival constant >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--burstiness with --arrival constant is a usage error"

# exclusive flags are refused whatever their values; boolean flags take none
for c in trace replay compare fleet sweep; do
	expect 2 "$c: --time-scale and --rate both set the arrival times" "$c" --time-scale 1 --rate 2
	expect 2 "$c: --time-scale and --rate both set the arrival times" "$c" --rate 2 --time-scale=1
done
kvs_run trace 0 --time-scale 1 --json && has "$out" '"requests"' "--time-scale 1 alone"
expect 2 "sweep: .*--plan-info need --from-plan" sweep --plan-info
for f in --plan-info --quiet --no-dedupe --no-kernel-step-time --find-max-rate; do
	expect 2 "sweep: $f takes no value" sweep "$f=yes"
done

# trace --write converts instead of summarising: with --json, a usage error
# and neither file written
expect 2 "trace: --write converts the trace instead of summarising it, so --json would write nothing" \
	trace --write "$tmp/w.jsonl" --json "$tmp/w.json"
expect 2 "give one \('kvsim trace $tmp/w.jsonl --json'" trace --json --write "$tmp/w.jsonl"
[ -e "$tmp/w.jsonl" ] || [ -e "$tmp/w.json" ] && fail "trace --write with --json wrote a file"

# ---- per-request columns, by hand ------------------------------------------------------
cat >"$tmp/t.csv" <<'CSV'
arrival_s,prompt_tokens,output_tokens
0,100,11
0.5,50,1
CSV
kvs_run replay 0 "$tmp/t.csv" --step-time-linear 0.01 --requests "$tmp/r.csv" -q && {
	head -n 1 "$tmp/r.csv" | grep -q ',ttft_s,tpot_s,itl_mean_s,e2e_s$' || fail "request CSV header"
	awk -F, 'NR > 1 {
		ttft = $8 - $6; e2e = $9 - $6
		if (($15 - ttft)^2 > 1e-16 || ($18 - e2e)^2 > 1e-16) bad = 1
		if ($11 > 1 && (($16 - (e2e - ttft) / ($11 - 1))^2 > 1e-16 || $17 != $16)) bad = 1
		if ($11 == 1 && ($16 != "" || $17 != "")) bad = 1
		n++
	} END { exit bad || n != 2 }' "$tmp/r.csv" || fail "ttft/tpot/itl/e2e columns by hand: $(cat "$tmp/r.csv")"
}

# ---- --bench-json: vllm bench serve's keys and units -----------------------------------------
kvs_scaled_limit 60
kvs_run replay 0 --goodput ttft:500 tpot:50 --gpu-hour-price 2 --bench-json "$tmp/b.json" \
	--json "$tmp/j.json" --summary-csv "$tmp/s.csv" -q && {
	for k in date backend model_id tokenizer_id num_prompts request_rate duration completed \
		total_input_tokens total_output_tokens request_throughput request_goodput \
		output_throughput total_token_throughput; do
		grep -q "^  \"$k\": " "$tmp/b.json" || fail "--bench-json key $k"
	done
	for m in ttft tpot itl e2el; do
		for s in mean median std p50 p90 p95 p99; do
			grep -q "^  \"${s}_${m}_ms\": [0-9]" "$tmp/b.json" || fail "--bench-json key ${s}_${m}_ms"
		done
	done
	has "$out" "cost at \$2.00 per GPU-hour" "cost in the table"
	has "$out" "\$ per million output tokens" "cost row"
}
kvs_scaled_limit 60
kvs_run replay 0 --json "$tmp/j2.json" --bench-json "$tmp/b2.json" -q
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/b.json" "$tmp/j.json" "$tmp/s.csv" "$tmp/b2.json" <<'PY' || fail "--bench-json units and values"
import csv, json, math, sys
b = json.load(open(sys.argv[1])); j = json.load(open(sys.argv[2]))
p = j["policies"]["paged"]
# seconds in kvsim's JSON, milliseconds in vLLM's
assert math.isclose(b["p99_ttft_ms"], p["ttft_s"]["p99"] * 1e3, rel_tol=1e-9), (b["p99_ttft_ms"], p["ttft_s"])
assert math.isclose(b["mean_e2el_ms"], p["e2e_s"]["mean"] * 1e3, rel_tol=1e-9)
assert math.isclose(b["median_tpot_ms"], p["tpot_s"]["p50"] * 1e3, rel_tol=1e-9)
assert b["completed"] == p["accounting"]["completed"] and b["num_prompts"] == p["accounting"]["arrived"]
assert math.isclose(b["request_throughput"], b["completed"] / b["duration"], rel_tol=1e-12)
assert math.isclose(b["output_throughput"], b["total_output_tokens"] / b["duration"], rel_tol=1e-12)
assert b["goodput"] == {"ttft": 500.0, "tpot": 50.0}
assert 0 <= b["request_goodput"] <= b["request_throughput"]
# ITL: per-request TPOT once per gap, so its mean is weighted by gaps
assert b["std_ttft_ms"] > 0 and b["p50_ttft_ms"] <= b["p90_ttft_ms"] <= b["p95_ttft_ms"] <= b["p99_ttft_ms"]
c = b["cost"]
assert c["gpus"] == 1 and c["dollars_per_hour"] == 2.0
assert math.isclose(c["dollars"], 2.0 * b["duration"] / 3600, rel_tol=1e-12)
assert math.isclose(c["dollars_per_million_output_tokens"], c["dollars"] / b["total_output_tokens"] * 1e6, rel_tol=1e-12)
assert math.isclose(c["dollars_per_request"], c["dollars"] / b["completed"], rel_tol=1e-12)
assert p["cost"]["gpus"] == 1
rows = list(csv.DictReader(open(sys.argv[3])))
assert len(rows) == 1 and rows[0]["policy"] == "paged"
assert math.isclose(float(rows[0]["p99_ttft_ms"]), b["p99_ttft_ms"], rel_tol=1e-15)
assert math.isclose(float(rows[0]["dollars_per_request"]), c["dollars_per_request"], rel_tol=1e-15)
b2 = json.load(open(sys.argv[4]))
assert "request_goodput" not in b2 and "goodput" not in b2 and "cost" not in b2
# the client's --max-concurrency, as vllm bench serve: null in an open loop
assert b["max_concurrency"] is None and b2["max_concurrency"] is None, b["max_concurrency"]
PY
fi
kvs_scaled_limit 60
kvs_run replay 0 --max-concurrency 8 --bench-json "$tmp/b3.json" -q &&
	has "$(cat "$tmp/b3.json")" '"max_concurrency": 8,' "--bench-json max_concurrency is --max-concurrency"
# cost in sweep rows (table, JSON, CSV) and on the report page of a sweep and a compare
kvs_scaled_limit 100
kvs_run sweep 0 --limit 100 --policies paged,max --block-sizes 16,32 --gpu-hour-price 2.5 -tp 2 \
	--json "$tmp/cw.json" --csv "$tmp/cw.csv" --report "$tmp/cwr" -q && {
	has "$out" "Cost at \$2.50 per GPU-hour x 2 GPUs (\$5.00 per hour)" "sweep cost table"
	has "$(cat "$tmp/cwr/index.html")" "\$ per million output tokens" "sweep cost on the report page"
}
kvs_run sweep 0 --limit 30 --policies paged --block-sizes 16 -q --csv "$tmp/cn.csv" &&
	{ grep -q dollars "$tmp/cn.csv" && fail "no cost columns without a price"; }
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/cw.json" "$tmp/cw.csv" <<'PY' || fail "sweep cost figures"
import csv, json, math, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(d["rows"]) == 4
for r, c in zip(d["rows"], rows):
    k = r["cost"]
    assert k["gpus"] == 2 and k["gpu_hour_price"] == 2.5 and k["dollars_per_hour"] == 5.0
    assert math.isclose(k["dollars"], 5.0 * r["sim_time_s"] / 3600, rel_tol=1e-9)
    assert math.isclose(k["dollars_per_request"], k["dollars"] / r["completed"], rel_tol=1e-9)
    out_tok = r["output_tokens_per_s"] * r["sim_time_s"]
    assert math.isclose(k["dollars_per_million_output_tokens"], k["dollars"] / out_tok * 1e6, rel_tol=1e-6)
    assert math.isclose(k["dollars_per_conversation_hour"], 5.0 / r["concurrency_mean"], rel_tol=1e-9)
    assert math.isclose(float(c["dollars_per_request"]), k["dollars_per_request"], rel_tol=1e-5)
    assert c["gpus"] == "2"
PY
fi
kvs_scaled_limit 100
kvs_run compare 0 --policies paged,max --gpu-hour-price 2 --report "$tmp/ccr" -q &&
	has "$(cat "$tmp/ccr/index.html")" "Cost (--gpu-hour-price)" "compare cost on the report page"
# compare: a list, one object per policy; the summary one row per policy
kvs_scaled_limit 100
kvs_run compare 0 --policies paged,max --bench-json "$tmp/cb.json" --summary-csv "$tmp/cs.csv" -q && {
	[ "$(head -c 1 "$tmp/cb.json")" = "[" ] || fail "compare --bench-json is a list"
	[ "$(wc -l <"$tmp/cs.csv")" -eq 3 ] || fail "summary CSV: header and two rows"
	cut -d, -f1 "$tmp/cs.csv" | tr '\n' ' ' | grep -q "^policy paged max $" || fail "summary CSV policies"
}
# --horizon: every request of the trace accounted for in each output, as
# --json's accounting does: num_prompts + after_horizon = the trace's 40
"$KVSIM" gen --requests 40 --rate 10 --seed 3 -o "$tmp/h40.csv" 2>/dev/null || fail "gen h40"
kvs_run compare 0 "$tmp/h40.csv" --policies paged,max --horizon 2 --bench-json "$tmp/hb.json" \
	--summary-csv "$tmp/hs.csv" --json "$tmp/hj.json" -q && command -v python3 >/dev/null &&
	python3 - "$tmp/hb.json" "$tmp/hs.csv" "$tmp/hj.json" <<'PY' || fail "--bench-json and --summary-csv after a horizon"
import csv, json, sys
b = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
pol = json.load(open(sys.argv[3]))["policies"]
assert open(sys.argv[2]).readline().rstrip("\n").endswith(",unfinished,after_horizon")
assert len(b) == len(rows) == 2
for x, r in zip(b, rows):
    a = pol[x["label"]]["accounting"]
    assert 0 < x["num_prompts"] < 40 and x["num_prompts"] + x["after_horizon"] == 40, x
    assert x["after_horizon"] == a["after_horizon"] and "after_interrupt" not in x
    assert r["policy"] == x["label"] and int(r["num_prompts"]) + int(r["after_horizon"]) == 40
PY
kvs_run replay 0 "$tmp/h40.csv" --bench-json "$tmp/nb.json" --summary-csv "$tmp/ns.csv" -q &&
	grep -q after_ "$tmp/nb.json" "$tmp/ns.csv" && fail "no horizon: an after_ key or column"
kvs_run replay 2 --goodput ttft500 && has "$err" "expected KEY:MILLISECONDS" "bad --goodput"
kvs_run replay 2 --goodput foo:5 && has "$err" "'foo' is not a metric" "unknown --goodput metric"
# one objective from two flags is refused, whatever their order
kvs_run replay 2 --goodput ttft:500 --slo-ttft 1 &&
	has "$err" "--slo-ttft and --goodput ttft:MS both set the TTFT objective; give one" "TTFT from two flags"
kvs_run compare 2 --slo-tpot 0.05 --goodput ttft:500 tpot:50 &&
	has "$err" "--slo-tpot and --goodput tpot:MS both set the TPOT objective; give one" "TPOT from two flags"
kvs_scaled_limit 50
kvs_run replay 0 --slo-tpot 0.05 --goodput ttft:500 -q --json "$tmp/slo2.json" &&
	has "$(cat "$tmp/slo2.json")" '"slo_tpot_s": 0.05' "--slo-tpot with --goodput ttft: both kept"

# ---- Ctrl-C: outputs written whole, marked "interrupted", exit 130 ---------------------
# a run of several seconds (20,000 long requests stepped one token at a time),
# interrupted after half a second
"$KVSIM" gen --requests 20000 --rate 50 --output-len fixed:2000 --prompt-len fixed:100 \
	--seed 1 -o "$tmp/long.csv" 2>/dev/null || fail "gen long trace"
kvs_bg "$tmp/i.out" "$tmp/i.err" replay "$tmp/long.csv" --no-fast-path --json "$tmp/i.json" \
	--requests "$tmp/i.csv" --bench-json "$tmp/ib.json" --summary-csv "$tmp/is.csv"
kvs_stop 0.5 INT
[ "$rc" -eq 130 ] || fail "interrupted replay exits 130 (got $rc): $(head -c 300 "$tmp/i.err")"
has "$(cat "$tmp/i.err")" "interrupted at" "interruption reported"
has "$(cat "$tmp/i.out")" "paged: arrived " "table printed whole"
has "$(cat "$tmp/i.out")" "(interrupted at " "the table says it was interrupted"
ls -a "$tmp" | grep -q 'kvsim-' && fail "temporary files left behind"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/i.json" "$tmp/i.csv" "$tmp/ib.json" "$tmp/is.csv" <<'PY' || fail "interrupted outputs parse and account for every request"
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True
a = d["policies"]["paged"]["accounting"]
assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"] and a["unfinished"] > 0
# the rest of the trace: read after the run, counted, not simulated
assert a["arrived"] + a["after_interrupt"] == 20000, a
rows = list(csv.reader(open(sys.argv[2])))
assert len(rows) - 1 == a["arrived"] and {len(r) for r in rows} == {len(rows[0])}
assert sum(r[3] == "unfinished" for r in rows[1:]) == a["unfinished"]
b = json.load(open(sys.argv[3]))
assert b["interrupted"] is True and b["completed"] == a["completed"]
assert b["num_prompts"] + b["after_interrupt"] == 20000 and "after_horizon" not in b, b
s = list(csv.DictReader(open(sys.argv[4])))
assert len(s) == 1 and int(s[0]["num_prompts"]) + int(s[0]["after_interrupt"]) == 20000, s
assert "after_horizon" not in s[0]
PY
fi

# fleet: the same, the router stopping at its next arrival and each replica
# at once
kvs_bg "$tmp/f.out" "$tmp/f.err" fleet "$tmp/long.csv" --replicas 2 --no-fast-path \
	--json "$tmp/f.json"
kvs_stop 0.5 INT
[ "$rc" -eq 130 ] || fail "interrupted fleet exits 130 (got $rc): $(head -c 300 "$tmp/f.err")"
has "$(cat "$tmp/f.err")" "kvsim fleet: interrupted at" "fleet interruption reported"
ls -a "$tmp" | grep -q 'kvsim-' && fail "fleet: temporary files left behind"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/f.json" <<'PY' || fail "interrupted fleet output parses and accounts for its requests"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True
a = d["policies"]["paged"]["accounting"]
assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"] and a["unfinished"] > 0
assert a["arrived"] + a["after_interrupt"] == 20000, a
PY
fi
has "$(cat "$tmp/f.out")" "after the interruption, not simulated" "fleet: the requests not simulated counted"

# a disaggregated fleet: it stops once every hand-off has reached its decode
# replica; KV still on a (slow) link counts as unfinished there, its prefill
# replica having sent it: every total balances
kvs_bg "$tmp/d.out" "$tmp/d.err" fleet "$tmp/long.csv" --pool prefill:2:h100-80gb:1 \
	--pool decode:2:h100-80gb:1 --kv-link 1MB/s:0.5 --no-fast-path --json "$tmp/d.json"
kvs_stop 0.5 INT
[ "$rc" -eq 130 ] || fail "interrupted disaggregated fleet exits 130 (got $rc): $(head -c 300 "$tmp/d.err")"
has "$(cat "$tmp/d.err")" "kvsim fleet: interrupted at" "disaggregated fleet interruption reported"
has "$(cat "$tmp/d.out")" "(interrupted at " "disaggregated fleet: the table says it was interrupted"
has "$(cat "$tmp/d.out")" "KV in flight when interrupted: " "disaggregated fleet: KV in flight said"
ls -a "$tmp" | grep -q 'kvsim-' && fail "disaggregated fleet: temporary files left behind"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/d.json" <<'PY' || fail "interrupted disaggregated fleet accounts for every request"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True
a = d["policies"]["paged"]["accounting"]
assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"] and a["unfinished"] > 0, a
assert a["arrived"] + a.get("after_interrupt", 0) == 20000, a
rs = d["replicas"]
for r in rs:
    assert r["arrived"] + r["kv_received"] == r["completed"] + r["rejected"] + r["unfinished"] + r["kv_sent"], r
# every hand-off counted on both sides
assert sum(r["kv_sent"] for r in rs) == sum(r["kv_received"] for r in rs) > 0
assert d["fleet"]["transfers"]["in_flight"] >= 0
PY
fi

# --find-min-replicas: stopped during its second run, the search so far:
# the counts tried with their verdicts, the fleet that decided the last
# one, marked interrupted
# (the first run's verdict line is awaited up to 4 minutes: a sanitizer
# build on a loaded machine takes long over it)
lim=8000
case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) lim=60 ;; esac
kvs_bg "$tmp/m.out" "$tmp/m.err" fleet "$tmp/long.csv" --limit "$lim" --no-fast-path \
	--find-min-replicas --slo-ttft 0.05 --json "$tmp/m.json"
for i in $(seq 1 4800); do
	grep -q '^kvsim fleet: 1 replicas: p99 ' "$tmp/m.err" && break
	sleep 0.05
done
grep -q '^kvsim fleet: 1 replicas: p99 ' "$tmp/m.err" ||
	fail "search: the first run gave no verdict within 4 minutes"
kvs_stop 0 INT
[ "$rc" -eq 130 ] || fail "interrupted search exits 130 (got $rc): $(head -c 300 "$tmp/m.err")"
has "$(cat "$tmp/m.err")" "kvsim fleet: interrupted after " "search interruption reported"
has "$(cat "$tmp/m.out")" "kvsim fleet: search interrupted (p99 TTFT <= 0.05 s at " "search summary"
has "$(cat "$tmp/m.out")" "tried 1 (misses)" "search summary: the counts tried"
has "$(cat "$tmp/m.out")" "paged: arrived " "search: the table printed whole"
ls -a "$tmp" | grep -q 'kvsim-' && fail "search: temporary files left behind"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/m.json" "$lim" <<'PY' || fail "interrupted search JSON"
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert d["interrupted"] is True
s = d["fleet"]["search"]
t = s["tried"]
assert t[0]["replicas"] == 1 and t[0]["verdict"] == "misses" and t[0]["ttft_p99_s"] > 0.05, t
assert all(x["verdict"] in ("meets", "misses", "interrupted") for x in t)
assert all(x["verdict"] != "interrupted" for x in t[:-1])
assert s["most_missing"] == max(x["replicas"] for x in t if x["verdict"] == "misses")
assert s["shown_replicas"] == d["fleet"]["replicas"]
a = d["policies"]["paged"]["accounting"]
assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"]
assert a["arrived"] + a.get("after_interrupt", 0) == n, a
PY
fi

# a fleet interrupted while its trace is read into memory: no run, no output
mkfifo "$tmp/fpipe"
kvs_bg /dev/null "$tmp/fp.err" fleet "$tmp/fpipe" --replicas 2 --json "$tmp/fp.json" -q
{ head -n 1000 "$tmp/long.csv"; sleep 1; tail -n +1001 "$tmp/long.csv" | head -n 1000; } >"$tmp/fpipe" &
wpid=$!
kvs_stop 0.4 INT
wait "$wpid"
[ "$rc" -eq 130 ] || fail "fleet interrupted while loading: exit 130 (got $rc): $(head -c 300 "$tmp/fp.err")"
has "$(cat "$tmp/fp.err")" "interrupted before the first run; no output written" "fleet interrupted while loading"
[ -e "$tmp/fp.json" ] && fail "fleet interrupted while loading: an output was written"

# a signal while the trace is still being read into memory (from a pipe
# that pauses): the read goes on, no run starts, exit 130, no output
mkfifo "$tmp/pipe"
kvs_bg /dev/null "$tmp/p.err" compare "$tmp/pipe" --json "$tmp/p.json" -q
{ head -n 1000 "$tmp/long.csv"; sleep 1; tail -n +1001 "$tmp/long.csv" | head -n 1000; } >"$tmp/pipe" &
wpid=$!
kvs_stop 0.4 INT
wait "$wpid"
[ "$rc" -eq 130 ] || fail "interrupted while loading: exit 130 (got $rc): $(head -c 300 "$tmp/p.err")"
has "$(cat "$tmp/p.err")" "interrupted before the first run; no output written" "interrupted while loading"
[ -e "$tmp/p.json" ] && fail "interrupted while loading: an output was written"

# a second signal (a quarter second or more after the first) ends the run
# at once: no temporary file is left, and a file already at the target
# stays as it was (unless the run, stopping after the first, wrote its
# outputs before the second came: then whole)
echo keep >"$tmp/k.json"
kvs_bg /dev/null "$tmp/k.err" replay "$tmp/long.csv" --no-fast-path --json "$tmp/k.json" \
	--requests "$tmp/k.csv"
stop_gap=0.3 kvs_stop 0.5 INT INT
ls -a "$tmp" | grep -q 'kvsim-' && fail "second signal: temporary files left behind"
if [ "$(cat "$tmp/k.json")" != keep ]; then
	[ "$rc" -eq 130 ] && grep -q '"interrupted": true' "$tmp/k.json" ||
		fail "second signal: the target changed, and not into a whole output (rc $rc)"
fi
# the same signal twice at once (coreutils' timeout sends it to the
# process and to its group) is one stop: the outputs are written whole
kvs_bg /dev/null "$tmp/k2.err" replay "$tmp/long.csv" --no-fast-path --json "$tmp/k2.json" \
	--requests "$tmp/k2.csv"
stop_gap=0 kvs_stop 0.5 TERM TERM
[ "$rc" -eq 143 ] || fail "a doubled SIGTERM: exit 143 (got $rc): $(head -c 300 "$tmp/k2.err")"
grep -q '"interrupted": true' "$tmp/k2.json" || fail "a doubled SIGTERM: --json written, marked interrupted"
has "$(tail -c 3 "$tmp/k2.json")" "}"

# progress when stderr is not a terminal: plain lines (every
# KVSIM_PROGRESS_INTERVAL seconds) with elapsed time and rate; -q silences
# (fewer requests under sanitizers)
plim=200 slim=40
case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) plim=60 slim=20 ;; esac
KVSIM_PROGRESS_INTERVAL=0 "$KVSIM" replay --limit "$plim" >/dev/null 2>"$tmp/p.err" || fail "replay with progress"
grep -q '^replay paged: .* arrived, .* finished, .* simulated, elapsed [0-9][0-9hms]*, [0-9]* finished/s' "$tmp/p.err" ||
	fail "plain progress line: $(head -c 300 "$tmp/p.err")"
grep -q $'\r' "$tmp/p.err" && fail "no carriage returns off a terminal"
KVSIM_PROGRESS_INTERVAL=0 "$KVSIM" replay --limit "$plim" -q >/dev/null 2>"$tmp/p.err"
[ -s "$tmp/p.err" ] && fail "-q silences progress: $(head -c 200 "$tmp/p.err")"

KVSIM_PROGRESS_INTERVAL=0 "$KVSIM" sweep --limit 40 --block-sizes 16,32,64 --policies paged,max \
	>/dev/null 2>"$tmp/p.err" || fail "sweep with progress"
# the real total: 3 paged block sizes and max once (its rows are repeated)
grep -q '^kvsim sweep: 4/4 combinations done, 4 simulations, elapsed [0-9]* s$' "$tmp/p.err" ||
	fail "sweep progress: the real total: $(head -c 300 "$tmp/p.err")"
grep -q '^kvsim sweep: [0-3]/4 combinations done, [0-9]* simulations\?, running \(paged/\(16\|32\|64\)\|max/16\) at [0-9.]* req/s, elapsed' "$tmp/p.err" ||
	fail "sweep progress: the combination running: $(head -c 300 "$tmp/p.err")"
KVSIM_PROGRESS_INTERVAL=0 "$KVSIM" sweep --limit "$slim" --block-sizes 16 --policies paged -q \
	--find-max-rate --slo-ttft 5 >/dev/null 2>"$tmp/p.err" || fail "sweep --find-max-rate -q"
[ -s "$tmp/p.err" ] && fail "sweep -q silences progress: $(head -c 200 "$tmp/p.err")"

# sweep: SIGINT once a combination has finished: its rows kept, the table,
# JSON and CSV written whole, marked interrupted, exit 130; SIGTERM 143
# (threaded, with a capacity search)
sweep_interrupt() {   # SIGNAL WANT-RC ARGS...
	local sig=$1 want=$2 i lim=3000
	shift 2
	case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) lim=10 ;; esac
	KVSIM_PROGRESS_INTERVAL=0 kvs_bg "$tmp/si.out" "$tmp/si.err" sweep "$tmp/long.csv" \
		--limit "$lim" --no-fast-path "$@"
	for i in $(seq 1 1200); do
		grep -q '^kvsim sweep: [1-9][0-9]*/' "$tmp/si.err" && break
		sleep 0.1
	done
	kvs_stop 0 "$sig"
	[ "$rc" -eq "$want" ] || fail "sweep interrupted by SIG$sig exits $want (got $rc): $(tail -c 300 "$tmp/si.err")"
	has "$(cat "$tmp/si.err")" "interrupted: " "sweep interruption reported"
	[ "$(tail -c 1 "$tmp/si.err")" = "" ] || fail "progress line ended"
	ls -a "$tmp" | grep -q 'kvsim-' && fail "sweep left temporary files behind"
}
sweep_interrupt INT 130 --policies paged,max --block-sizes 16,32,64,128,256,8,4,2 --jobs 1 \
	--json "$tmp/si.json" --csv "$tmp/si.csv"
has "$(cat "$tmp/si.out")" "interrupted: " "sweep table marked interrupted"
has "$(cat "$tmp/si.out")" "Recommendations:" "sweep table printed whole"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/si.json" "$tmp/si.csv" <<'PY' || fail "interrupted sweep outputs parse and hold the finished rows"
import csv, json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True and d["points_total"] == 9, d.get("points_total")
assert 1 <= d["points_done"] < 9, d["points_done"]
rows = d["rows"]
# a finished max run stands for its 5 block sizes
assert len(rows) >= d["points_done"] and all(r["completed"] > 0 for r in rows)
assert d["simulations"] >= d["points_done"]
c = list(csv.reader(open(sys.argv[2])))
assert len(c) - 1 == len(rows) and {len(r) for r in c} == {len(c[0])}
assert [(r[0], int(r[1])) for r in c[1:]] == [(r["policy"], r["block_size"]) for r in rows]
PY
fi
sweep_interrupt TERM 143 --policies paged --block-sizes 16,32,64,128,8,4,2 --find-max-rate --jobs 2 \
	--slo-ttft 1 --rate-tolerance 0.5 --json "$tmp/st.json"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/st.json" <<'PY' || fail "SIGTERM sweep JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["interrupted"] is True and d["points_total"] == 7
assert len(d["capacity"]) == d["points_done"] and len(d["rows"]) >= d["points_done"]
PY
fi

# ---- Vidur's two trace formats, detected by header ----------------------------------
printf 'num_prefill_tokens,num_decode_tokens\n100,20\n200,30\n300,40\n' >"$tmp/vl.csv"
printf 'Date,Time,PromptTokenCount,CompletionTokenCount\n2023-11-16,0,100,20\n2023-11-16,1.5,200,30\n2023-11-16,2,300,40\n' >"$tmp/vd.csv"
kvs_run trace 0 "$tmp/vl.csv" && { has "$out" "(vidur-lengths)" "vidur-lengths detected"; has "$out" "requests         3" "vidur-lengths count"; }
kvs_run trace 0 "$tmp/vd.csv" && { has "$out" "(vidur-dated)" "vidur-dated detected"; has "$out" "span             2.000 s (0.000 .. 2.000)" "vidur-dated Time in seconds"; }
kvs_run replay 0 "$tmp/vl.csv" --requests "$tmp/vl0.csv" -q
kvs_run replay 0 "$tmp/vl.csv" --rate 2 --seed 7 --requests "$tmp/vlr.csv" -q
kvs_run replay 0 "$tmp/vd.csv" --requests "$tmp/vdr.csv" -q
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp" <<'PY' || fail "Vidur formats: arrivals and lengths"
import csv, sys
t = sys.argv[1]
rows = lambda n: list(csv.DictReader(open(f"{t}/{n}")))
want = [("100", "20"), ("200", "30"), ("300", "40")]
for n in ("vl0.csv", "vlr.csv", "vdr.csv"):
    assert [(r["prompt_tokens"], r["output_tokens"]) for r in rows(n)] == want, n
    assert [r["line"] for r in rows(n)] == ["2", "3", "4"], n
assert [float(r["arrival_s"]) for r in rows("vl0.csv")] == [0, 0, 0]      # no arrival times
a = [float(r["arrival_s"]) for r in rows("vlr.csv")]                       # Poisson at --rate
assert a[0] == 0 and a[0] < a[1] < a[2], a
assert [float(r["arrival_s"]) for r in rows("vdr.csv")] == [0, 1.5, 2]    # Time, seconds
PY
fi
printf 'Date,Time,PromptTokenCount,CompletionTokenCount\n2023-11-16,0,100,20\n2023-11-17,1.5,200,30\n' >"$tmp/vd2.csv"
kvs_run replay 1 "$tmp/vd2.csv" && has "$err" "vd2.csv:3: Date: \"2023-11-17\" differs from 2023-11-16 of line 2" "vidur-dated one date"
printf 'Date,Time,PromptTokenCount,CompletionTokenCount\n2023-11-16,0,100,x\n' >"$tmp/vd3.csv"
kvs_run replay 1 "$tmp/vd3.csv" && has "$err" "vd3.csv:2: CompletionTokenCount: expected an integer" "vidur-dated bad field"
printf 'num_prefill_tokens,num_decode_tokens\n0,5\n' >"$tmp/vl2.csv"
kvs_run replay 1 "$tmp/vl2.csv" && has "$err" "vl2.csv:2: num_prefill_tokens: must be at least 1 token" "vidur-lengths zero prompt"
printf '100,20\n200,30\n' >"$tmp/vl3.csv"
kvs_run trace 0 "$tmp/vl3.csv" --format vidur-lengths && has "$out" "requests         2" "vidur-lengths headerless, forced"

# ---- --scheduling-policy fcfs|priority (vLLM's) ----------------------------------------
# one request at a time: fcfs admits in arrival order; priority by (priority,
# arrival), so after request 0 (running alone) come 2 and 3 (priority 1, in
# arrival order) and then 1 (priority 5); each starts when the one before
# finishes, and the four run the same shape, so the finish times are the same set
printf 'arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority\n0.000,16,4,0,0,1,0\n0.001,16,4,1,0,1,5\n0.002,16,4,2,0,1,1\n0.003,16,4,3,0,1,1\n' >"$tmp/prio.csv"
# three requests on 5 blocks of 16 tokens: memory runs out; fcfs preempts the
# most recently admitted (never request 0), priority the largest priority
# value (never request 1, priority 0; request 0, priority 2, first)
printf 'arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority\n0.0000,16,40,0,0,1,2\n0.0001,16,40,1,0,1,0\n0.0002,16,40,2,0,1,1\n' >"$tmp/prio2.csv"
for p in fcfs priority; do
	kvs_run replay 0 "$tmp/prio.csv" --max-num-seqs 1 --scheduling-policy "$p" --requests "$tmp/q1-$p.csv" -q
	kvs_run replay 0 "$tmp/prio2.csv" --num-gpu-blocks-override 5 --watermark 0 \
		--scheduling-policy "$p" --requests "$tmp/q2-$p.csv" --json "$tmp/q2-$p.json" -q
done
has "$out" "priority scheduling" "priority scheduling in the header"
kvs_run replay 2 --scheduling-policy lottery && has "$err" "expected fcfs or priority" "bad --scheduling-policy"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp" <<'PY' || fail "scheduling policy order and victims"
import csv, json, sys
t = sys.argv[1]
def rows(name):
    return list(csv.DictReader(open(f"{t}/{name}")))
for p, order in (("fcfs", ["0", "1", "2", "3"]), ("priority", ["0", "2", "3", "1"])):
    r = sorted(rows(f"q1-{p}.csv"), key=lambda x: float(x["admitted_s"]))
    assert [x["index"] for x in r] == order, (p, [x["index"] for x in r])
    for a, b in zip(r, r[1:]):
        assert a["finish_s"] == b["admitted_s"], (p, a, b)
fin = lambda p: sorted(x["finish_s"] for x in rows(f"q1-{p}.csv"))
assert fin("fcfs") == fin("priority")
pre = {p: {x["index"]: int(x["preemptions"]) for x in rows(f"q2-{p}.csv")} for p in ("fcfs", "priority")}
assert all(x["outcome"] == "completed" for p in ("fcfs", "priority") for x in rows(f"q2-{p}.csv"))
assert pre["fcfs"]["0"] == 0 and pre["fcfs"]["2"] >= 1, pre
assert pre["priority"]["1"] == 0 and pre["priority"]["0"] >= 1, pre
assert json.load(open(f"{t}/q2-priority.json"))["engine"]["scheduling_policy"] == "priority"
assert "scheduling_policy" not in json.load(open(f"{t}/q2-fcfs.json"))["engine"]
PY
fi
# fcfs is the default, byte for byte
kvs_scaled_limit 60
kvs_run replay 0 --json "$tmp/f0.json" --requests "$tmp/f0.csv" -q && f0="$out"
kvs_run replay 0 --scheduling-policy fcfs --json "$tmp/f1.json" --requests "$tmp/f1.csv" -q &&
	{ [ "$out" = "$f0" ] && cmp -s "$tmp/f0.json" "$tmp/f1.json" && cmp -s "$tmp/f0.csv" "$tmp/f1.csv" ||
		fail "--scheduling-policy fcfs changes the output"; }
extra=()

# ---- one output grammar: "--json out.json" is that file on every command ----------
extra=()   # no --limit for size
cd "$tmp" || exit 1
# ---- output flags: once each, never empty (usage errors, exit 2) ----------------------
mkdir refused && cd refused || exit 1
expect 2 "report: -o: one output directory at most \(already 'a'\)" report x.json -o a -o b
expect 2 "report: --output: one output directory at most" report x.json -o a --output b
expect 2 "replay: --json: one output file at most \(already 'a.json'\)" replay --json a.json --json b.json
expect 2 "replay: --json: one output file at most \(already standard output\)" replay --json --json=b.json
expect 2 "compare: --requests: one output file at most" compare --requests a.csv --requests b.csv
expect 2 "fleet: --report: one output directory at most" fleet --report a --report b
expect 2 "sweep: --csv: one output file at most" sweep --csv=a.csv --csv=b.csv
expect 2 "sweep: --plan: one output file at most" sweep --plan a --plan b
expect 2 "size: --json: one output file at most" size --json a.json --json b.json
expect 2 "trace: -o: one output file at most" trace --write a.csv -o b.csv
expect 2 "gen: --out: one output file at most \(already 'a.csv'\)" gen -o a.csv --out b.csv
expect 2 "report: -o: empty directory name" report x.json -o ''
expect 2 "trace: --write: empty file name" trace --write ''
expect 2 "replay: --summary-csv: empty file name" replay --summary-csv ''
expect 2 "replay: --report: empty directory name" replay --report ''
expect 2 "sweep: --report: empty directory name" sweep --report ''
expect 2 "gen: --out: empty file name" gen --out ''
[ -z "$(ls -A)" ] || fail "a refused output flag wrote $(ls -A)"
cd .. || exit 1

extra=()
kvs_run size 0 --json out-size.json && { grep -q '"kv_bytes_per_token"' out-size.json || fail "size --json FILE"; has "$out" "kvsim size:" "size table kept with --json FILE"; }
kvs_run size 0 --json sz && grep -q '"advice"' sz || fail "size --json WORD (no positional): the file"
extra=()
kvs_run trace 0 --json out-trace.json && grep -q '"cv_interarrival"' out-trace.json || fail "trace --json FILE"
kvs_scaled_limit 40
kvs_run replay 0 --limit 40 --json out-replay.json -q && grep -q '"policies"' out-replay.json || fail "replay --json FILE"
kvs_scaled_limit 40
kvs_run replay 0 --limit 40 --json -q && has "$out" '"policies"' "replay bare --json is stdout"
kvs_scaled_limit 40
kvs_run compare 0 --limit 40 --policies paged,max --json=out-compare.json -q && grep -q '"policies"' out-compare.json || fail "compare --json=FILE"
for f in size trace replay compare sweep; do
	"$KVSIM" "$f" --help | grep -q -- "--json" || fail "$f --help names --json"
done
# an existing CSV after a bare --csv is the trace, never overwritten
cp "$ROOT/traces/samples/azure-conv-sample.csv" keep.csv
sum0=$(cksum <keep.csv)
kvs_scaled_limit 30
kvs_run sweep 0 --csv keep.csv --limit 30 --block-sizes 16 --policies paged --quiet &&
	head -n 1 <<<"$out" | grep -q '^policy,' || fail "sweep --csv TRACE.csv: CSV on stdout"
[ "$(cksum <keep.csv)" = "$sum0" ] || fail "sweep --csv overwrote the trace"
# each heading once in sweep --help
dups=$("$KVSIM" sweep --help | grep -E '^[a-zA-Z].*:$' | sort | uniq -d)
[ -z "$dups" ] || fail "sweep --help repeats headings: $dups"
[ ! -e out.json ] || fail "stray out.json"
cd - >/dev/null || exit 1


# ---- no request completed: latencies n/a, not 0 ------------------------------------
printf 'arrival_s,prompt_tokens,output_tokens\n0,100,5\n1,100,5\n' > "$tmp/none.csv"
kvs_run replay 0 "$tmp/none.csv" -q --num-gpu-blocks-override 1 --summary-csv "$tmp/none-s.csv" && {
	echo "$out" | grep -qE '^  TTFT p99 \(s\) +n/a$' || fail "no completion: TTFT p99 n/a: $out"
	echo "$out" | grep -qE '^  queue delay p50 \(s\) +n/a$' || fail "no completion: queue delay n/a"
	echo "$out" | grep -qE '(TTFT|TPOT|end-to-end).* 0\.000' && fail "no completion: a 0 latency: $out"
	# the summary CSV's latency cells are empty (vllm bench serve's 0 stays in --bench-json)
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "p99_ttft_ms") c = i }
		NR == 2 { exit !(c && $c == "") }' "$tmp/none-s.csv" || fail "summary CSV: empty p99_ttft_ms"
}
# a model whose every layer is windowed is held in full by the simulator,
# which size does not: said
kvs_run replay 0 -q --model mistral-7b --limit 5 && has "$err" "mistral-7b has a 4,096-token sliding window on 32 of its 32 layers; with every layer windowed, the simulator keeps every token's KV" "sliding window said"
# ... and by how much: 4,000 tokens fit the window (1.00x); at 32,768,
# 32,768 against 4,096 tokens a layer (8.00x)
has "$err" "(in the simulator a sequence of 4,000 tokens holds 1.00x the KV vLLM keeps, one of 32,768 tokens 8.00x)" "window overstatement quantified"
# gpt-oss-120b mixes full and windowed layers: held as vLLM's hybrid
# allocator holds them, no warning, the layout said
kvs_run replay 0 --model gpt-oss-120b --gpu h100-80gb --limit 5 && {
	case "$err" in *"sliding window"*) fail "hybrid model: a window warning: $err" ;; esac
	has "$out" "1 group of 18 layers with a 128-token window beside 1 full-attention group" "hybrid layout said"
	has "$out" "(14633 blocks of 16), 36.00 KiB per token" "pool in the full group's blocks"
}
# vLLM's --disable-hybrid-kv-cache-manager: every layer held in full, as
# vLLM then holds them, with nothing to warn about
kvs_run replay 0 --model gpt-oss-120b --gpu h100-80gb --limit 5 --disable-hybrid-kv-cache-manager && {
	case "$err" in *"sliding window"*) fail "hybrid manager off: a window warning: $err" ;; esac
	has "$out" "(7316 blocks of 16), 72.00 KiB per token" "hybrid manager off: every layer in the pool"
	case "$out" in *"windowed layers as vLLM"*) fail "hybrid manager off: windows said held" ;; esac
}
kvs_run replay 0 -q --model mistral-7b --limit 5 --max-model-len 4096 && case "$err" in *"sliding window"*) fail "window warned within it: $err";; esac
# trace --seed seeds the Poisson re-timing only: said when there is none
kvs_run trace 0 --seed 5 && has "$err" "--seed has no effect without --rate-mode poisson" "trace --seed alone"
kvs_run trace 0 --seed 5 --rate 3 --rate-mode poisson && case "$err" in *"no effect"*) fail "trace --seed with poisson warned: $err";; esac
# a placement for policies that place nothing: said; for one that does, not
kvs_run replay 0 -q --placement buddy && has "$err" "--placement applies to the policies that place a contiguous region per sequence (max, pow2, oracle); paged ignores it" "placement for paged"
kvs_run replay 0 -q --placement buddy --policy max && case "$err" in *"applies to the policies"*) fail "placement for max warned: $err";; esac
# a trace of no request: said (sweep refuses one)
printf 'arrival_s,prompt_tokens,output_tokens\n' > "$tmp/empty.csv"
for c in replay fleet; do
	kvs_run "$c" 0 "$tmp/empty.csv" -q && has "$err" "empty.csv holds no request (1 line read): the figures are empty" "$c: empty trace said"
done
kvs_run sweep 0 "$tmp/none.csv" -q --policies paged --block-sizes 16 --num-gpu-blocks-override 1 && {
	echo "$out" | grep -qE '^paged +16 .* n/a +n/a +n/a +n/a +n/a ' || fail "sweep: latency n/a: $out"
	has "$out" "No deployable combination completes a request" "sweep: none completes, no SLO"
}
finish "cli usability"
