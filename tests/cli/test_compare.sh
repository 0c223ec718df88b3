#!/usr/bin/env bash
# CLI tests of `kvsim compare`: the default comparison on the bundled trace
# (the README's first command), ratios, JSON, standard input, errors.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvs_scaled_limit 150   # sanitizer builds replay the first 150 requests
run() { kvs_run compare "$@"; } # run EXPECTED_RC ARGS...: $out, $err

run 0 --help && { has "$out" "--policies" "help"; has "$out" "paged / each" "help"; }

run 0 && {
	for p in paged max pow2 oracle vattention; do
		has "$out" "$p: arrived " "accounting line of $p"
	done
	has "$out" "paged / each policy" "ratios"
	has "$out" "waste (reserved + fragmented)" "waste ratio"
}

run 0 -q --policies paged,max --json "$tmp/c.json" --timeseries "$tmp/ts.csv" && {
	grep -q '^paged,' "$tmp/ts.csv" || fail "time series lacks paged rows"
	grep -q '^max,' "$tmp/ts.csv" || fail "time series lacks max rows"
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/c.json" <<'PY' || fail "compare JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "compare"
assert set(d["policies"]) == {"paged", "max"}
r = d["ratios"]["max"]
for k in ("concurrency", "throughput", "waste", "p99_queue_delay"):
    assert k in r, k
pg, mx = d["policies"]["paged"], d["policies"]["max"]
assert pg["concurrency"]["max"] >= mx["concurrency"]["max"]
assert abs(r["concurrency"] - pg["concurrency"]["mean"] / mx["concurrency"]["mean"]) < 1e-9
for p in (pg, mx):
    a = p["accounting"]
    assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"]
PY
	fi
}
run 0 -q --policies paged,max --json "$tmp/d.json" && { cmp -s "$tmp/c.json" "$tmp/d.json" || fail "JSON not byte-identical"; }

# standard input is read once and replayed for each policy
trace=$("$KVSIM" replay --help | sed -n 's/^without it, the bundled sample (\(.*\))$/\1/p')
if [ -n "$trace" ] && [ -f "$trace" ]; then
	"$KVSIM" compare - -q --policies paged,oracle ${extra[@]+"${extra[@]}"} --json "$tmp/stdin.json" <"$trace" >"$tmp/out" 2>"$tmp/err" ||
		fail "compare from stdin: $(cat "$tmp/err")"
	"$KVSIM" compare "$trace" -q --policies paged,oracle ${extra[@]+"${extra[@]}"} --json "$tmp/file.json" >/dev/null 2>&1
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/stdin.json" "$tmp/file.json" <<'PY' || fail "stdin and file replays differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["policies"] == b["policies"]
PY
	fi
fi


# ---- --report DIR ----------------------------------------------------------------------
printf 'x\n' >"$tmp/file"
run 0 -q --limit 200 --policies paged,max,oracle --report "$tmp/rep" --json "$tmp/rep.json" && report_ok && {
	check_report "$tmp/rep"
	for fig in memory requests cdf-queue-delay cdf-ttft cdf-tpot; do
		[ -s "$tmp/rep/$fig.png" ] && [ -s "$tmp/rep/$fig.svg" ] || fail "report lacks $fig.png/svg"
	done
	for p in paged max oracle; do
		grep -q ">$p<\|>$p " "$tmp/rep/index.html" || fail "report does not name $p"
	done
	grep -c "arrived [0-9,]* = completed" "$tmp/rep/index.html" | grep -qx 3 ||
		fail "report lacks the three accounting lines"
}
run 1 -q --limit 200 --report "$tmp/file/sub" && has "$err" "file is not a directory" "report under a file"
# the report replaces its directory as a whole: one holding other files is
# refused before the run, and its files stay
mkdir -p "$tmp/foreign" && printf 'keep\n' >"$tmp/foreign/notes.txt"
run 1 --limit 200 --report "$tmp/foreign" --json "$tmp/foreign.json" &&
	has "$err" "not a previous kvsim report: it holds 'notes.txt'" "foreign report dir" && {
	[ -z "$out" ] || fail "compare ran before refusing the report directory"
	[ -e "$tmp/foreign.json" ] && fail "a refused report directory left --json's file"
	[ "$(ls -A "$tmp/foreign")" = notes.txt ] || fail "the refused directory changed"
}
# a previous report is replaced
run 0 -q --limit 200 --policies paged --report "$tmp/rep" && report_ok
run 0 --help && has "$out" "--report DIR" "help lists --report"
# open loop: throughput ties and the table says where capacity shows
run 0 --limit 200 --policies paged,pow2,oracle &&
	has "$out" "(open loop: each policy served the offered load, so throughput ties" "open-loop hint"
run 0 --limit 200 --policies paged,pow2,oracle --max-concurrency 8 &&
	! grep -q "open loop: each policy" <<<"$out" || fail "open-loop hint in a closed loop"

run 2 --policies paged,paged && has "$err" "given twice" "duplicate policy"
run 2 --policies paged,lru && has "$err" "unknown policy 'lru'" "bad policy"
run 2 --policies "" && has "$err" "--policies" "empty list"

# A loaded pool at block size 64: the crossing classes dissolve at steps
# where sequences also finish (the engine once read those finished entries
# of its due list and crashed); the fast path matches stepping one token
# at a time.  1,042 requests at 40 req/s: skipped under sanitizers, whose
# validators make it minutes long.  8192 tokens per step (the a100-40gb's
# default is 2048): the budget at which this trace runs the pool short.
if [ "${KVS_TEST_SCALE:-1}" = 1 ]; then
	"$KVSIM" gen --requests 1042 --rate 40 --seed 1 -o "$tmp/load.csv" 2>/dev/null ||
		fail "gen of the loaded trace"
	if run 0 "$tmp/load.csv" --policies paged --block-size 64 --max-num-batched-tokens 8192 \
		--json "$tmp/f64.json" -q &&
	   run 0 "$tmp/load.csv" --policies paged --block-size 64 --max-num-batched-tokens 8192 \
		--no-fast-path --json "$tmp/s64.json" -q && command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/f64.json" "$tmp/s64.json" <<'PY' || fail "fast path differs at block size 64"
import json, sys
f, s = (json.load(open(p))["policies"]["paged"] for p in sys.argv[1:])
assert f["accounting"] == s["accounting"], (f["accounting"], s["accounting"])
assert f["accounting"]["completed"] > 1000
for k in ("preemptions", "recomputed_tokens", "memory_peak_time_s"):
    assert f[k] == s[k], k
assert f["preemptions"] > 0   # the pool ran short
assert f["sim"]["steps"] == s["sim"]["steps"]
assert f["sim"]["spans"] < s["sim"]["spans"]
PY
	fi
fi

finish "cli compare"
