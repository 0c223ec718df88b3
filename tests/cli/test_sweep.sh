#!/usr/bin/env bash
# CLI tests of `kvsim sweep`: help, table, JSON and CSV output, identical
# JSON for --jobs 1 and 2, a row against `kvsim replay --json` (when that
# command is built), capacity search, and usage errors with their exit codes.
# Needs $KVSIM and $KVS_SOURCE_ROOT; python3 reads the JSON.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT="${KVS_SOURCE_ROOT:?}"
SAMPLE="$ROOT/traces/samples/azure-conv-sample.csv"
MOON="$ROOT/traces/samples/mooncake-sample.jsonl"
# Requests per run: fewer under sanitizers (KVS_TEST_SCALE below 1), where
# every engine step also runs the allocator validator; and the capacity
# searches' bisection stops at a coarser rate tolerance there.
case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") N=300 N2=200 TOL=0.05 ;; *) N=60 N2=50 TOL=0.25 ;; esac

# run EXPECTED_RC ARGS...: kvsim sweep, stdout/stderr kept in $out/$err
run() {
	local want=$1
	shift
	"$KVSIM" sweep "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
	if [ "$rc" -ne "$want" ]; then
		fail "kvsim sweep $* exited $rc, expected $want; stderr: $err"
		return 1
	fi
	return 0
}

run 0 --help && for flag in --block-sizes --policies --jobs --kernel-profile --kernel-cost-margin \
	--find-max-rate --slo-ttft --slo-tpot --rate-tolerance --rates --json --csv \
	--enable-prefix-caching --model --gpu --limit --report --kv-read-factor; do
	grep -q -- "$flag" <<<"$out" || fail "--help does not list $flag"
done

# table: one row per combination, recommendations
if run 0 "$SAMPLE" --limit $N --block-sizes 8,16,32 --policies paged,oracle --quiet; then
	n=$(grep -cE '^(paged|oracle) ' <<<"$out")
	[ "$n" -eq 6 ] || fail "table has $n rows, expected 6"
	grep -q 'throughput_within_slo' <<<"$out" || fail "no throughput recommendation"
	grep -q 'least_kv_waste' <<<"$out" || fail "no waste recommendation"
	grep -q 'best_prefix_hit_rate' <<<"$out" || fail "no prefix recommendation"
fi

# JSON identical for --jobs 1 and --jobs 2
args=("$SAMPLE" --limit $N --block-sizes 4,16,64 --quiet)
"$KVSIM" sweep "${args[@]}" --jobs 1 --json >"$tmp/j1.json" || fail "jobs 1 failed"
"$KVSIM" sweep "${args[@]}" --jobs 2 --json >"$tmp/j2.json" || fail "jobs 2 failed"
cmp -s "$tmp/j1.json" "$tmp/j2.json" || fail "--jobs 1 and --jobs 2 JSON differ"

if command -v python3 >/dev/null; then
	python3 - "$tmp/j1.json" <<'PY' || fail "sweep JSON schema"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "sweep"
for k in ("model", "gpu", "engine", "trace", "rows", "recommendations", "kernel"):
    assert k in d, k
rows = d["rows"]
assert len(rows) == 15, len(rows)
keys = ["policy", "block_size", "internal_fragmentation_pct", "metadata_bytes_max",
        "prefix_hit_rate_tokens", "concurrency_mean", "concurrency_p99", "queue_delay_p99_s",
        "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "requests_per_s",
        "output_tokens_per_s", "preemptions", "kernel_cost_us"]
for r in rows:
    for k in keys:
        assert k in r, k
assert [r["block_size"] for r in rows[:3]] == [4, 16, 64]
# paged kernel cost falls from block 4 to 16 (fewer block-table lookups)
assert rows[0]["kernel_relative_cost"] > rows[1]["kernel_relative_cost"] > 1
assert all(r["kernel_relative_cost"] == 1 for r in rows if r["policy"] != "paged")
assert {r["objective"] for r in d["recommendations"]} == {
    "throughput_within_slo", "least_kv_waste", "best_prefix_hit_rate"}
PY
fi

# CSV: header + one line per row
if run 0 "$SAMPLE" --limit $N2 --block-sizes 16,32 --policies paged --csv --quiet; then
	[ "$(wc -l <<<"$out")" -eq 3 ] || fail "CSV has $(wc -l <<<"$out") lines, expected 3"
	head -1 <<<"$out" | grep -q '^policy,block_size,internal_fragmentation_pct' ||
		fail "CSV header"
fi
run 2 "$SAMPLE" --json --csv || true

# --horizon: each row accounts for every request of the trace (arrived +
# after_horizon = its 40), in the JSON rows and in two CSV columns at the
# end; without a horizon neither appears
"$KVSIM" gen --requests 40 --rate 10 --seed 3 -o "$tmp/h40.csv" 2>/dev/null || fail "gen h40"
if run 0 "$tmp/h40.csv" --horizon 2 --block-sizes 8,16 --policies paged,max --quiet \
	--json "$tmp/h.json" --csv "$tmp/h.csv" && command -v python3 >/dev/null; then
	python3 - "$tmp/h.json" "$tmp/h.csv" <<'PY' || fail "sweep rows after a horizon account for the trace"
import csv, json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 4
for r in rows:
    assert 0 < r["arrived"] < 40 and r["arrived"] + r["after_horizon"] == 40, r
c = list(csv.reader(open(sys.argv[2])))
assert c[0][-2:] == ["arrived", "after_horizon"], c[0]
assert {len(x) for x in c} == {len(c[0])}
for x, r in zip(c[1:], rows):
    assert (x[0], int(x[-2]), int(x[-1])) == (r["policy"], r["arrived"], r["after_horizon"])
PY
fi
if run 0 "$tmp/h40.csv" --block-sizes 16 --policies paged --quiet --json "$tmp/nh.json" \
	--csv "$tmp/nh.csv"; then
	grep -q after_horizon "$tmp/nh.json" "$tmp/nh.csv" && fail "sweep without a horizon: after_horizon"
	head -n 1 "$tmp/nh.csv" | grep -q ',arrived' && fail "sweep without a horizon: an arrived column"
fi

# a row equals a separate replay (without the kernel term, replay's settings)
if "$KVSIM" help replay >/dev/null 2>&1 && command -v python3 >/dev/null; then
	"$KVSIM" sweep "$SAMPLE" --limit $N --block-sizes 32 --policies paged \
		--no-kernel-step-time --quiet --json >"$tmp/s.json" || fail "sweep for replay"
	"$KVSIM" replay "$SAMPLE" --limit $N --block-size 32 --policy paged --quiet \
		--json "$tmp/r.json" >/dev/null || fail "replay"
	python3 - "$tmp/s.json" "$tmp/r.json" <<'PY' || fail "sweep row differs from replay"
import json, sys
s = json.load(open(sys.argv[1]))["rows"][0]
p = json.load(open(sys.argv[2]))["policies"]["paged"]
assert s["concurrency_mean"] == p["concurrency"]["mean"]
assert s["ttft_p99_s"] == p["ttft_s"]["p99"]
assert s["tpot_p99_s"] == p["tpot_s"]["p99"]
assert s["internal_fragmentation_pct"] == p["memory_pct"]["internal_fragmentation"]
assert s["preemptions"] == p["preemptions"]
PY
	# with the kernel cost in the step time: replay --kv-read-factor REL
	"$KVSIM" sweep "$SAMPLE" --limit $N --block-sizes 4 --policies paged --quiet \
		--json >"$tmp/sk.json" || fail "sweep with kernel cost"
	rel=$(python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["rows"][0]["kernel_relative_cost"]))' "$tmp/sk.json")
	"$KVSIM" replay "$SAMPLE" --limit $N --block-size 4 --policy paged --quiet \
		--kv-read-factor "$rel" --json "$tmp/rk.json" >/dev/null || fail "replay --kv-read-factor $rel"
	python3 - "$tmp/sk.json" "$tmp/rk.json" "$tmp/r.json" <<'PY' || fail "kernel-fed sweep row differs from replay --kv-read-factor"
import json, sys
s = json.load(open(sys.argv[1]))["rows"][0]
d = json.load(open(sys.argv[2]))
p = d["policies"]["paged"]
assert s["kernel_relative_cost"] > 1.2            # block 4: 1 + delta / 4 and more
assert d["engine"]["step_time"]["kv_read_factor"] == s["kernel_relative_cost"]
# the factor travels through 12 significant digits: equal to 1e-9
close = lambda a, b: abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12)
assert close(s["concurrency_mean"], p["concurrency"]["mean"])
assert close(s["ttft_p99_s"], p["ttft_s"]["p99"])
assert close(s["tpot_p99_s"], p["tpot_s"]["p99"])
assert close(s["output_tokens_per_s"], p["throughput"]["output_tokens_per_s"])
assert s["preemptions"] == p["preemptions"]
# and the kernel cost made the steps slower than the plain replay at block 32
plain = json.load(open(sys.argv[3]))["policies"]["paged"]
assert p["tpot_s"]["p50"] > plain["tpot_s"]["p50"]
PY
	# Mooncake hash ids (one per 512 tokens): the full sub-blocks inside a
	# prompt's partial last 512-token block are shared at a finer block
	# size as replay shares them, directly and through --plan/--from-plan
	mc="$tmp/mcpart.jsonl"
	{
		echo '{"timestamp":0,"input_length":600,"output_length":4,"hash_ids":[7,8]}'
		echo '{"timestamp":4000,"input_length":600,"output_length":4,"hash_ids":[7,8]}'
		echo '{"timestamp":8000,"input_length":1100,"output_length":3,"hash_ids":[7,8,9]}'
		echo '{"timestamp":12000,"input_length":1100,"output_length":3,"hash_ids":[7,8,9]}'
		echo '{"timestamp":16000,"input_length":300,"output_length":2,"hash_ids":[5]}'
		echo '{"timestamp":20000,"input_length":300,"output_length":2,"hash_ids":[5]}'
	} >"$mc"
	"$KVSIM" sweep "$mc" --enable-prefix-caching --policies paged --block-sizes 4,16,64,256,512,1024 \
		--no-kernel-step-time --quiet --json >"$tmp/mcs.json" || fail "sweep of partial Mooncake blocks"
	"$KVSIM" sweep "$mc" --enable-prefix-caching --policies paged --block-sizes 4,16,64,256,512,1024 \
		--no-kernel-step-time --quiet --plan "$tmp/mcplan.json" || fail "plan of partial Mooncake blocks"
	"$KVSIM" sweep --from-plan "$tmp/mcplan.json" --points 0-5 --out "$tmp/mcpts" --quiet ||
		fail "points of partial Mooncake blocks"
	"$KVSIM" sweep --from-plan "$tmp/mcplan.json" --merge "$tmp/mcpts" --quiet \
		--json "$tmp/mcm.json" >/dev/null || fail "merge of partial Mooncake blocks"
	for b in 4 16 64 256 512 1024; do
		"$KVSIM" replay "$mc" --enable-prefix-caching --policy paged --block-size $b --quiet \
			--json "$tmp/mcr$b.json" >/dev/null || fail "replay of partial Mooncake blocks at $b"
	done
	python3 - "$tmp" <<'PY' || fail "sweep's prefix hits on partial Mooncake blocks differ from replay's"
import json, sys
t = sys.argv[1]
for src in ("mcs", "mcm"):
    rows = json.load(open(f"{t}/{src}.json"))["rows"]
    assert len(rows) == 6, len(rows)
    for r in rows:
        b = r["block_size"]
        p = json.load(open(f"{t}/mcr{b}.json"))["policies"]["paged"]
        assert r["prefix_hit_tokens"] == p["prefix_hit_tokens"], (src, b, r["prefix_hit_tokens"], p["prefix_hit_tokens"])
hits = {r["block_size"]: r["prefix_hit_tokens"] for r in json.load(open(f"{t}/mcs.json"))["rows"]}
# block 16: 592 for the second 600-token prompt and for the first 1100-token
# one (the 600-token prompt's blocks), 1088 for the second, 288 for a 300
assert hits[16] == 592 + 592 + 1088 + 288, hits
PY
else
	echo "kvsim replay not built: sweep-vs-replay CLI check skipped (covered by test_sweep)"
fi

# capacity search
if run 0 "$SAMPLE" --limit $N --block-sizes 16 --policies paged --find-max-rate \
	--slo-ttft 2 --slo-tpot 0.2 --rate-tolerance "$TOL" --quiet --json; then
	if command -v python3 >/dev/null; then
		python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["capacity"][0]
assert c["outcome"] in ("found", "unbounded"), c
assert c["max_rate"] > 0 and c["conversations_per_gpu"] > 0
if c["outcome"] == "found":
    assert abs(c["fail_rate"] / c["max_rate"] - (1 + float(sys.argv[1]))) < 1e-9
' "$TOL" <<<"$out" || fail "capacity JSON"
	fi
fi


# ---- --report DIR ----------------------------------------------------------------------
# the sweep rendered: rows, capacity and recommendations
if run 0 "$SAMPLE" --limit $N2 --block-sizes 4,16,64 --policies paged,oracle --find-max-rate \
	--slo-ttft 2 --slo-tpot 0.2 --rate-tolerance "$TOL" --quiet --json="$tmp/rep.json" \
	--report "$tmp/rep" && report_ok; then
	check_report "$tmp/rep"
	for fig in sweep-fragmentation sweep-throughput sweep-latency capacity; do
		[ -s "$tmp/rep/$fig.png" ] && [ -s "$tmp/rep/$fig.svg" ] || fail "sweep report lacks $fig.png/svg"
	done
	for k in Recommendations throughput_within_slo least_kv_waste best_prefix_hit_rate \
		'Capacity search'; do
		grep -q "$k" "$tmp/rep/index.html" || fail "sweep report lacks '$k'"
	done
	# the capacity table shows each entry's next rate tried (fail_rate)
	if command -v python3 >/dev/null; then
		python3 - "$tmp/rep.json" "$tmp/rep/index.html" <<'PY' || fail "capacity table"
import json, sys
d = json.load(open(sys.argv[1]))
html = open(sys.argv[2], encoding="utf-8").read()
assert len(d["capacity"]) == 6
for c in d["capacity"]:
    if c["outcome"] == "found":
        assert "<td>%.3g</td>" % c["fail_rate"] in html or \
               "<td>%.2f</td>" % c["fail_rate"] in html, c["fail_rate"]
PY
	fi
fi
run 1 "$SAMPLE" --limit $N2 --block-sizes 16 --report "$SAMPLE/sub"
grep -q 'is not a directory' <<<"$err" || fail "bad report dir not explained: $err"
[ -n "$out" ] && fail "sweep ran before refusing the report directory"
mkdir -p "$tmp/foreign" && printf 'keep\n' >"$tmp/foreign/notes.txt"
run 1 "$SAMPLE" --limit $N2 --block-sizes 16 --report "$tmp/foreign"
grep -q "not a previous kvsim report" <<<"$err" || fail "foreign report dir not refused: $err"
grep -q "combinations done" <<<"$err" && fail "sweep ran before refusing a foreign report directory"

# SLOs at the trace's rate: a met/missed column and, without --find-max-rate,
# the hint to use it; contiguous policies are recommended without a block size
# and oracle (a bound) never is
if run 0 "$SAMPLE" --limit $N2 --block-sizes 8,16 --policies pow2,oracle --slo-ttft 1000 \
	--slo-tpot 10 --quiet; then
	grep -q 'trace rate' <<<"$out" || fail "no 'SLO at trace rate' column"
	[ "$(grep -cE '^(pow2|oracle) .* met$' <<<"$out")" -eq 4 ] || fail "SLO column: $out"
	grep -q -- '--find-max-rate' <<<"$out" || fail "no --find-max-rate hint"
	grep -q 'throughput_within_slo  pow2: pow2 delivers' <<<"$out" ||
		fail "contiguous recommendation not named without a block size: $out"
	grep -q 'oracle, the unattainable bound' <<<"$out" || fail "oracle bound not quoted"
	grep -qE '^  [a-z_]+ +oracle' <<<"$out" && fail "oracle recommended: $out"
fi
if run 0 "$SAMPLE" --limit $N2 --block-sizes 16 --policies paged --slo-ttft 0.001 --quiet; then
	[ "$(grep -cE '^paged .* missed$' <<<"$out")" -eq 1 ] || fail "SLO missed not shown"
	grep -q '0 of 1 simulated combinations meet them' <<<"$out" || fail "SLO summary: $out"
fi

# prefix hits against block size on the Mooncake sample (5 requests, far apart,
# memory to spare: nothing is evicted and nothing waits, so the hits follow from
# the hash ids alone).  Its ids name whole 512-token blocks and a finer block's
# ids are derived from them, so every block size dividing 512 finds the same
# shared prefixes: requests 2 and 5 reuse ids 0,1 (1024 tokens each), request 3
# id 0 (512) = 2560 of 5248 prompt tokens.  At 1024 the ids merge in pairs and
# request 3's 600-token prompt has no full block left: 1024 + 1024 = 2048.  So
# the hit rate is non-increasing in the block size, equal across the dividers
# and strictly lower at 1024 (the whole-block sharing the column is about).
# On a real trace with eviction, the cache's timing can vary by block size, so
# only this exact case is asserted.
if command -v python3 >/dev/null &&
	run 0 "$MOON" --block-sizes 1,2,4,8,16,32,64,128,256,512,1024 --policies paged \
		--enable-prefix-caching --quiet --json="$tmp/moon.json" --report "$tmp/moon" &&
	report_ok; then
	python3 - "$tmp/moon.json" <<'PY' || fail "prefix hits against block size"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
bs = [r["block_size"] for r in rows]
assert bs == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], bs
hits = [r["prefix_hit_tokens"] for r in rows]
assert hits == [2560] * 10 + [2048], hits
rate = [r["prefix_hit_rate_tokens"] for r in rows]
assert all(a >= b for a, b in zip(rate, rate[1:])), rate
assert abs(rate[0] - 2560 / 5248) < 1e-9 and abs(rate[-1] - 2048 / 5248) < 1e-9, rate
assert all(r["completed"] == 5 and r["preemptions"] == 0 for r in rows)
rec = {r["objective"]: r for r in d["recommendations"]}["best_prefix_hit_rate"]
assert rec["found"] and rec["policy"] == "paged" and rec["block_size"] in bs[:10], rec
PY
	check_report "$tmp/moon"
	grep -q '<th>prefix hit</th>' "$tmp/moon/index.html" || fail "report lacks the prefix-hit column"
	grep -q '<td>48.8 %</td>' "$tmp/moon/index.html" || fail "report lacks the 48.8 % hit rate"
	grep -q '<td>39.0 %</td>' "$tmp/moon/index.html" || fail "report lacks the 39.0 % hit rate"
	[ -s "$tmp/moon/sweep-fragmentation.png" ] || fail "no trade-off figure"
fi

# usage errors: exit 2 with a message naming the problem
run 2 "$SAMPLE" --find-max-rate
grep -qi 'slo' <<<"$err" || fail "no SLO hint: $err"
run 2 "$SAMPLE" --block-sizes 8,x
grep -q "'x'" <<<"$err" || fail "bad block size not named: $err"
run 2 "$SAMPLE" --policies paged,lru
run 2 "$SAMPLE" --block-size 16
# the throughput/latency curve of docs/SWEEP.md: one sweep per --rate, the
# CSVs joined with the rate in front; the offered rate is what is served
# below the knee
first=1
for r in 1 2 4; do
	"$KVSIM" sweep "$SAMPLE" --limit $N2 --rate $r --policies paged --block-sizes 16 --quiet --csv - |
		awk -F, -v r=$r -v h=$first 'NR == 1 { if (h) print "rate," $0; next } { print r "," $0 }'
	first=0
done >"$tmp/curve.csv"
if command -v python3 >/dev/null; then
	python3 - "$tmp/curve.csv" <<'PY' || fail "rate curve recipe of docs/SWEEP.md"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["rate"] for r in rows] == ["1", "2", "4"], rows
# short runs (sanitizers: 50 requests) end in a drain: only the lowest
# rate is compared with its offer, the others must rise with it
assert 0.7 < float(rows[0]["requests_per_s"]) < 1.2, rows[0]
for a, b in zip(rows, rows[1:]):
    assert float(b["requests_per_s"]) > float(a["requests_per_s"]), (a, b)
for r in rows:
    for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "output_tokens_per_s"):
        assert float(r[k]) > 0, (k, r)
assert float(rows[2]["output_tokens_per_s"]) > float(rows[0]["output_tokens_per_s"])
PY
fi

# --rates: the same curve in one command: the rows equal the --rate loop's
# (arrivals scaled by the cursor instead of re-timed by the reader: equal
# to rounding), one table line per rate and combination, a "curve" in the
# JSON; and the flags it cannot be combined with
if run 0 "$SAMPLE" --limit $N2 --rates 1,2,4 --policies paged --block-sizes 16 \
	--csv "$tmp/rates.csv" --json "$tmp/rates.json"; then
	[ "$(grep -cE '^ +[124] paged +16 ' <<<"$out")" -eq 3 ] || fail "--rates table: $out"
	has "$out" "at 3 rates" "--rates table header"
	if command -v python3 >/dev/null; then
		python3 - "$tmp/curve.csv" "$tmp/rates.csv" "$tmp/rates.json" <<'PY' || fail "--rates rows differ from the --rate loop's"
import csv, json, sys
loop = list(csv.DictReader(open(sys.argv[1])))
rates = list(csv.DictReader(open(sys.argv[2])))
assert len(rates) == 3 and list(rates[0])[:3] == ["rate", "policy", "block_size"], rates[0]
close = lambda a, b: abs(a - b) <= 1e-4 * max(abs(a), abs(b), 1e-9)
for a, b in zip(loop, rates):
    assert a["rate"] == b["rate"], (a["rate"], b["rate"])
    for k in ("requests_per_s", "output_tokens_per_s", "ttft_p50_s", "ttft_p99_s",
              "tpot_p50_s", "tpot_p99_s"):
        assert close(float(a[k]), float(b[k])), (k, a[k], b[k])
d = json.load(open(sys.argv[3]))
assert d["rates"] == [1.0, 2.0, 4.0], d["rates"]
assert [r["rate"] for r in d["curve"]] == [1.0, 2.0, 4.0]
assert d["simulations"] == 3 and "rows" not in d and "interrupted" not in d
PY
	fi
fi
# --rates over several block sizes: a contiguous policy (max), simulated
# once per rate, is one table line per rate ("any" block size) as its rows
# are identical; paged has a line per block size; the CSV keeps every row
if run 0 "$SAMPLE" --limit $N2 --rates 1,2 --policies paged,max --block-sizes 8,16 \
	--csv "$tmp/rates-bs.csv"; then
	[ "$(grep -cE '^ +[12] max +any ' <<<"$out")" -eq 2 ] || fail "--rates: max not once per rate: $out"
	[ "$(grep -cE '^ +[12] max +(8|16) ' <<<"$out")" -eq 0 ] || fail "--rates: max repeated: $out"
	[ "$(grep -cE '^ +[12] paged +(8|16) ' <<<"$out")" -eq 4 ] || fail "--rates: paged rows: $out"
	has "$out" "block any: a contiguous policy (max" "--rates note on the collapsed rows"
	[ "$(grep -c ',max,' "$tmp/rates-bs.csv")" -eq 4 ] || fail "--rates CSV lost repeated rows"
fi
run 2 "$SAMPLE" --rates 1,x
has "$err" "'x' is not a request rate" "--rates with a bad rate"
run 2 "$SAMPLE" --rates 1,,2
run 2 "$SAMPLE" --rates 0
run 2 "$SAMPLE" --rates 1e-20 && has "$err" "not a request rate in [1e-09, 1e+09]" "--rates below the range"
run 2 "$SAMPLE" --rates 2,1e300 && has "$err" "'1e300' is not a request rate" "--rates above the range"
# base_rate is the trace's own rate whatever the rates asked for
run 0 "$SAMPLE" --limit 30 --block-sizes 16 --policies paged --rates 2,8 --json "$tmp/rb.json" &&
	kvs_run trace 0 "$SAMPLE" --limit 30 --json "$tmp/rbt.json" &&
	command -v python3 >/dev/null && {
	python3 - "$tmp/rb.json" "$tmp/rbt.json" <<'PY' || fail "--rates base_rate is not the trace's rate"
import json, sys
s, t = (json.load(open(p)) for p in sys.argv[1:3])
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        for v in o.values():
            r = find(v, k)
            if r is not None: return r
    return None
rate = find(t, "mean_rate")
assert abs(s["base_rate"] - rate) < 1e-9 * rate, (s["base_rate"], rate)
assert s["rates"] == [2, 8], s["rates"]
PY
}
run 2 "$SAMPLE" --rates 1,2,1.0 && has "$err" "--rates: 1.0 given twice" "a rate given twice"
run 2 "$SAMPLE" --rates 2 --find-max-rate --slo-ttft 2
has "$err" "--rates cannot be combined with --find-max-rate" "--rates with --find-max-rate"
run 2 "$SAMPLE" --rates 2 --rate 3
run 2 "$SAMPLE" --rates 2 --plan "$tmp/rp.json"

run 2 "$SAMPLE" --frobnicate
run 2 "$MOON" --block-sizes 16,48 --enable-prefix-caching
grep -q 'block size 48' <<<"$err" && grep -q '512' <<<"$err" ||
	fail "hash granularity error unclear: $err"
run 0 "$MOON" --block-sizes 16,256 --policies paged --enable-prefix-caching --quiet
run 1 "$SAMPLE" --kernel-profile "$tmp/missing.json"
grep -q 'missing.json' <<<"$err" || fail "missing profile not named: $err"
echo '{"entries": [{"block_size": 16}]}' >"$tmp/p.json"
run 1 "$SAMPLE" --kernel-profile "$tmp/p.json"
grep -q 'entries\[0\]' <<<"$err" || fail "profile error does not name the entry: $err"
echo '{"entries": [{"block_size": 16, "context": 1024, "batch": 8, "paged_us": 1e308,
  "contiguous_us": 1e-308}]}' >"$tmp/pinf.json"
run 1 "$SAMPLE" --kernel-profile "$tmp/pinf.json" &&
	has "$err" "pinf.json: entries[0]: paged_us / contiguous_us = 1e+308 / 1e-308 is not a finite ratio" "an infinite kernel ratio"
run 1 "$tmp/none.csv"
run 1 "$SAMPLE" --kernel-profile "$tmp"
grep -q 'is a directory' <<<"$err" || fail "directory as kernel profile unclear: $err"
# a profile from another device than --gpu's is said; a block size it lacks
# is not called measured
echo '{"gpu": "NVIDIA H200", "entries": [{"block_size": 16, "context": 1024, "batch": 8,
  "paged_us": 11, "contiguous_us": 10}]}' >"$tmp/kp.json"
run 0 "$SAMPLE" --limit 30 --policies paged --block-sizes 16,32 --kernel-profile "$tmp/kp.json" && {
	grep -q "warning: --kernel-profile .*kp.json was measured on NVIDIA H200, not on --gpu a100-40gb" <<<"$err" ||
		fail "kernel profile of another GPU not said: $err"
	grep -q "measured profile; block sizes it lacks: the analytic model" <<<"$out" ||
		fail "a fitted block size called measured: $out"
}
run 0 "$SAMPLE" --limit 30 --gpu h200-141gb --policies paged --block-sizes 16 --kernel-profile "$tmp/kp.json" && {
	grep -q "kernel-profile" <<<"$err" && fail "the profile's own GPU warned about: $err"
	grep -q "(measured profile), " <<<"$out" || fail "measured block size: $out"
}
# the output grammar of every command: "--json FILE.json" and "--csv -" take
# the word as their file (never a second trace), a bare flag is stdout
run 0 "$SAMPLE" --limit 30 --block-sizes 16 --policies paged --quiet --json "$tmp/x.json"
grep -q '"rows"' "$tmp/x.json" || fail "--json FILE.json after the trace writes the file"
run 0 --json "$tmp/y.json" "$SAMPLE" --limit 30 --block-sizes 16 --policies paged --quiet
grep -q '"rows"' "$tmp/y.json" || fail "--json FILE.json before the trace writes the file"
run 0 --csv - "$SAMPLE" --limit 30 --block-sizes 16 --policies paged --quiet
head -n 1 <<<"$out" | grep -q '^policy,' || fail "--csv - prints the CSV: $(head -c 200 <<<"$out")"
run 0 --json "$SAMPLE" --limit 30 --block-sizes 16 --policies paged --quiet
grep -q '"rows"' <<<"$out" || fail "bare --json before the trace prints JSON"
run 2 --json= "$SAMPLE"
grep -q -- 'empty file name' <<<"$err" || fail "--json= unclear: $err"
run 1 "$SAMPLE" --limit 50 --block-sizes 16 --policies paged --quiet --csv="$tmp/no/such/dir/x.csv"
grep -q -- '--csv: .*cannot write' <<<"$err" || fail "--csv failure unclear: $err"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all sweep CLI tests passed"
