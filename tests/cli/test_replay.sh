#!/usr/bin/env bash
# CLI tests of `kvsim replay`: help, the default run on the bundled trace,
# hand-computed timings on a tiny trace, JSON determinism and keys, the CSV
# outputs, and error messages with exit codes.  Needs $KVSIM.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvs_scaled_limit 150   # sanitizer builds replay the first 150 requests
run() { kvs_run replay "$@"; } # run EXPECTED_RC ARGS...: $out, $err
S_NATIVE="${KVS_SOURCE_ROOT:?}/traces/samples/native-sample.csv"

# ---- help lists every option ---------------------------------------------------
run 0 --help && for f in --policy --max-num-seqs --max-num-batched-tokens \
	--enable-prefix-caching --preemption-mode --swap-space --watermark --page-size \
	--slo-ttft --slo-tpot --flops-efficiency --bandwidth-efficiency --step-overhead \
	--step-time-table --sample-interval --seed --quiet --json --timeseries --requests \
	--report --kv-read-factor --no-enable-chunked-prefill --enable-chunked-prefill \
	--model --gpu --tp --block-size --max-model-len --rate --limit; do
	has "$out" "$f" "help"
done

# ---- the bundled trace ---------------------------------------------------------------
run 0 -q && {
	has "$out" "llama-3-8b on a100-40gb" "default deployment"
	has "$out" "token states" "memory table"
	has "$out" "external fragmentation" "memory table"
	has "$out" "queue delay p99" "queueing"
	has "$out" "TPOT p50" "latency"
	has "$out" "paged: arrived " "accounting line"
	[ -z "$err" ] || fail "--quiet still wrote to stderr: $err"
}

# ---- SGLang's pool: the one size prints, whatever replay's token budget ----------
# (A100-80GB: SGLang's default mem_fraction_static 0.836 with its own chunk
# of 8192, while replay schedules vLLM's 2048-token steps; 25,814 blocks of
# llama-3-8b as `kvsim size --engine sglang --gpu a100-80gb` gives them)
run 0 "$S_NATIVE" -q --engine sglang --gpu a100-80gb --json "$tmp/sgl.json" && {
	grep -q '"num_gpu_blocks": 25814' "$tmp/sgl.json" || fail "sglang: replay's pool is not size's"
}
run 0 "$S_NATIVE" -q --engine sglang --gpu a100-80gb --no-enable-chunked-prefill ||
	fail "sglang without chunked prefill: $err"

# ---- a tiny trace with hand-computed times (fixed 10 ms steps) ----------------------
cat >"$tmp/tiny.csv" <<'CSV'
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:00:00.0000000,100,5
2023-11-16 18:00:01.0000000,200,1
2023-11-16 18:00:02.0000000,9000,10
CSV
run 0 "$tmp/tiny.csv" -q --step-time-linear 0.01 --requests "$tmp/req.csv" \
	--timeseries "$tmp/ts.csv" --json "$tmp/a.json" --sample-interval 0.5 && {
	has "$out" "paged: arrived 3 = completed 2 + rejected 1 (exceeds_max_model_len 1) + unfinished 0" "accounting"
	# request 0: arrives 0, first token after the 10 ms prefill, 5 steps in all
	has "$(cat "$tmp/req.csv")" "paged,0,2,completed,,0.000000000,0.000000000,0.010000000,0.050000000,100,5,0,0" "request 0 row"
	has "$(cat "$tmp/req.csv")" "paged,1,3,completed,,1.000000000,1.000000000,1.010000000,1.010000000,200,1,0,0" "request 1 row"
	has "$(cat "$tmp/req.csv")" "rejected,exceeds_max_model_len" "rejected row"
	[ "$(wc -l <"$tmp/req.csv")" -eq 4 ] || fail "requests CSV: expected header + 3 rows"
	head -1 "$tmp/ts.csv" | grep -q '^policy,t_s,token_states_pct,reservation_pct,internal_fragmentation_pct,external_fragmentation_pct,cached_idle_pct,free_pct,running,waiting$' ||
		fail "time series header: $(head -1 "$tmp/ts.csv")"
	[ "$(wc -l <"$tmp/ts.csv")" -ge 4 ] || fail "time series: too few samples"
}

# ---- without chunked prefill (vLLM V0): hand-computed times, 10 ms steps ---------------
# A's prompt step [0, 10); A's decode [10, 20) (B arrives at 15); B's prompt
# step [20, 30) while A waits; both decode [30, 40) and finish.
cat >"$tmp/v0.csv" <<'CSV'
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:00:00.0000000,100,3
2023-11-16 18:00:00.0150000,100,2
CSV
run 0 "$tmp/v0.csv" -q --step-time-linear 0.01 --no-enable-chunked-prefill --max-model-len 4096 \
	--requests "$tmp/v0req.csv" --json "$tmp/v0.json" && {
	has "$out" "max_num_batched_tokens 4096, no chunked prefill," "header: V0 budget default max_model_len"
	has "$(cat "$tmp/v0req.csv")" "paged,0,2,completed,,0.000000000,0.000000000,0.010000000,0.040000000,100,3,0,0" "V0 request 0 row"
	has "$(cat "$tmp/v0req.csv")" "paged,1,3,completed,,0.015000000,0.020000000,0.030000000,0.040000000,100,2,0,0" "V0 request 1 row"
	has "$(cat "$tmp/v0.json")" '"enable_chunked_prefill": false' "V0 engine JSON"
}
# the same trace with chunked prefill: B's prompt rides in A's last decode step
run 0 "$tmp/v0.csv" -q --step-time-linear 0.01 --enable-chunked-prefill --requests "$tmp/v1req.csv" \
	--json "$tmp/v1.json" && {
	has "$(cat "$tmp/v1req.csv")" "paged,0,2,completed,,0.000000000,0.000000000,0.010000000,0.030000000,100,3,0,0" "V1 request 0 row"
	case "$(cat "$tmp/v1.json")" in *enable_chunked_prefill*) fail "V1 JSON names enable_chunked_prefill" ;; esac
}
run 2 "$tmp/v0.csv" --no-enable-chunked-prefill --max-model-len 4096 --max-num-batched-tokens 1000 &&
	has "$err" "--max-num-batched-tokens (1000) must be at least max_model_len (4096)" "V0 budget error"
run 2 "$tmp/v0.csv" --no-enable-chunked-prefill=1 && has "$err" "no-enable-chunked-prefill" "flag takes no value"

# ---- determinism and JSON -------------------------------------------------------------
run 0 "$tmp/tiny.csv" -q --step-time-linear 0.01 --json "$tmp/b.json" --sample-interval 0.5 &&
	{ cmp -s "$tmp/a.json" "$tmp/b.json" || fail "same inputs gave different JSON"; }
run 0 -q --json "$tmp/c.json" && run 0 -q --json "$tmp/d.json" &&
	{ cmp -s "$tmp/c.json" "$tmp/d.json" || fail "default replay JSON not byte-identical"; }
run 0 -q --json - && has "$out" '"policies"' "--json - prints JSON"
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/c.json" <<'PY' || fail "JSON report content"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "replay"
for k in ("model", "gpu", "engine", "trace", "policies"):
    assert k in d, k
p = d["policies"]["paged"]
a = p["accounting"]
assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"], a
assert a["arrived"] == d["trace"]["requests"]
m = p["memory_pct"]
assert abs(sum(m[k] for k in ("token_states", "reservation", "internal_fragmentation",
       "external_fragmentation", "cached_idle", "free")) - 100) < 1e-6, m
for k in ("concurrency", "queue_delay_s", "ttft_s", "tpot_s", "throughput", "goodput",
          "timeseries", "cdf", "memory_peak_pct", "waiting", "tokens_per_step"):
    assert k in p, k
for k in ("p50", "p90", "p99", "max"):
    assert p["ttft_s"][k] is not None
ts = p["timeseries"]
n = len(ts["t_s"])
assert n > 10 and all(len(ts[k]) == n for k in ts if k != "interval_s")
assert len(p["cdf"]["q"]) == 101 and len(p["cdf"]["ttft_s"]) == 101
assert p["sim"]["wall_s"] is None
e = d["engine"]
assert e["max_num_seqs"] == 256 and e["block_size"] == 16 and e["kv_budget_bytes"] > 0
PY
fi

# ---- --horizon: the requests after it are counted, not dropped ---------------------------
run 0 -q "$S_NATIVE" --horizon 1e-9 --requests "$tmp/hreq.csv" --json "$tmp/h.json" && {
	has "$out" "paged: arrived 1 = completed 0 + rejected 0 + unfinished 1" "horizon: accounting"
	has "$out" "(the trace's 4 requests = arrived 1 + 3 after the horizon at 1e-09 s, not simulated)" "horizon: the rest"
	[ "$(wc -l <"$tmp/hreq.csv")" -eq 2 ] || fail "horizon: requests CSV rows are the arrived ones"
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/h.json" <<'PY' || fail "horizon: JSON accounting"
import json, sys
d = json.load(open(sys.argv[1]))
a = d["policies"]["paged"]["accounting"]
assert a["arrived"] == a["completed"] + a["rejected"] + a["unfinished"] == 1, a
assert a["after_horizon"] == 3, a
assert d["trace"]["yielded"] == a["arrived"] + a["after_horizon"], d["trace"]
PY
	fi
}
# the trace in memory (compare): every policy accounts for all of it
kvs_run compare 0 -q "$S_NATIVE" --horizon 1 --json "$tmp/hc.json" --policies paged,max && {
	has "$out" "paged: arrived 2 = " "horizon compare: paged"
	has "$out" "(the trace's 4 requests = arrived 2 + 2 after the horizon at 1 s, not simulated)" "horizon compare: the rest"
	[ "$(grep -c "after the horizon at 1 s" <<<"$out")" -eq 2 ] || fail "horizon compare: a line per policy: $out"
	[ "$(grep -c '"after_horizon": 2' "$tmp/hc.json")" -eq 2 ] || fail "horizon compare: JSON after_horizon"
}
# a closed loop's request held at the horizon is counted with the unread ones
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0000000,100,50\n2023-11-16 18:00:00.0000000,100,50\n2023-11-16 18:00:00.0000000,100,50\n' >"$tmp/held.csv"
run 0 -q "$tmp/held.csv" --step-time-linear 0.01 --max-concurrency 1 --horizon 0.2 &&
	has "$out" "(the trace's 3 requests = arrived 1 + 2 after the horizon at 0.2 s, not simulated)" "horizon: held request"
# no horizon, no such line or key
run 0 -q "$S_NATIVE" --json "$tmp/nh.json" && {
	case "$out" in *"after the horizon"*) fail "no horizon: an after-the-horizon line" ;; esac
	grep -q after_horizon "$tmp/nh.json" && fail "no horizon: an after_horizon key"
}
# the rest of the trace is read: a malformed line past the horizon is an error
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0000000,100,5\n2023-11-16 18:00:01.0000000,100,5\n2023-11-16 18:00:02.0000000,abc,5\n' >"$tmp/late.csv"
run 1 -q "$tmp/late.csv" --horizon 0.5 --step-time-linear 0.01 && has "$err" "late.csv:4" "horizon: bad line after it"

# ---- a given sample interval is coarsened, with a warning, past 65536 samples ----------
run 0 -q "$S_NATIVE" --sample-interval 1e-6 --json "$tmp/fine.json" && {
	has "$err" "warning: --sample-interval 1e-06 s over " "fine interval: the warning"
	has "$err" "sampled every 6.4e-05 s instead" "fine interval: the interval used"
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$tmp/fine.json" <<'PY' || fail "fine interval: the JSON's time series"
import json, sys
d = json.load(open(sys.argv[1]))
ts = d["policies"]["paged"]["timeseries"]
assert d["engine"]["sample_interval_s"] == 1e-06
assert ts["interval_s"] == 6.4e-05, ts["interval_s"]
assert 32768 < len(ts["t_s"]) <= 65536, len(ts["t_s"])
PY
	fi
}
run 0 -q "$S_NATIVE" --sample-interval 0.5 && { [ -z "$err" ] || fail "a coarse interval warns: $err"; }

# ---- options take effect ---------------------------------------------------------------
run 0 -q --policy max --json "$tmp/max.json" && has "$(cat "$tmp/max.json")" '"max": {' "policy max"
run 0 -q --max-num-seqs 4 --max-num-batched-tokens 512 && has "$out" "max_num_seqs 4" "max-num-seqs"


# ---- --report DIR ----------------------------------------------------------------------
run 0 -q --limit 200 --report "$tmp/rep" --json "$tmp/rep.json" && report_ok && {
	check_report "$tmp/rep"
	for fig in memory requests cdf-queue-delay cdf-ttft cdf-tpot; do
		[ -s "$tmp/rep/$fig.png" ] && [ -s "$tmp/rep/$fig.svg" ] || fail "report lacks $fig.png/svg"
	done
	# the page shows the run the JSON describes (the same text is rendered)
	n=$(sed -n 's/^ *"arrived": \([0-9]*\),*$/\1/p' "$tmp/rep.json" | head -1)
	grep -q "arrived $n = completed" "$tmp/rep/index.html" || fail "report accounting differs from JSON (arrived $n)"
}
# the report without --json renders the same, the table still printed
run 0 --limit 200 --report "$tmp/rep2" && report_ok && {
	check_report "$tmp/rep2"
	has "$out" "paged: arrived " "table with --report"
	cmp -s "$tmp/rep/index.html" "$tmp/rep2/index.html" || fail "report differs with and without --json"
}
# a directory that cannot be created fails before the run, naming the path
run 1 -q --limit 200 --report "$tmp/tiny.csv/sub" && has "$err" "tiny.csv is not a directory" "report under a file"
[ -e "$tmp/tiny.csv/sub" ] && fail "report wrote under a file"
run 1 -q --limit 200 --report "$tmp/tiny.csv" && has "$err" "--report" "report onto a file"
"$KVSIM" replay -q --report >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q -- "--report" "$tmp/err" || fail "--report without DIR: $(cat "$tmp/err")"

# ---- --kv-read-factor --------------------------------------------------------------------
# a lone request on a fixed linear model: prefill of 100 (reads 100 tokens of KV),
# decodes read 101..104; the factor doubles only the per-context-token term
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0000000,100,5\n' >"$tmp/one.csv"
for f in 1 2; do
	run 0 "$tmp/one.csv" -q --step-time-linear 0.01,0,1e-4 --kv-read-factor $f --json "$tmp/kv$f.json"
done
if command -v python3 >/dev/null 2>&1; then
	python3 - "$tmp/kv1.json" "$tmp/kv2.json" <<'PY' || fail "--kv-read-factor timings"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["engine"]["step_time"]["kv_read_factor"] == 1
assert b["engine"]["step_time"]["kv_read_factor"] == 2
ea, eb = (d["policies"]["paged"]["e2e_s"]["max"] for d in (a, b))
kv = 1e-4 * (100 + 101 + 102 + 103 + 104)       # KV-read time at factor 1
assert abs(ea - (5 * 0.01 + kv)) < 1e-9, ea
assert abs(eb - (5 * 0.01 + 2 * kv)) < 1e-9, eb
PY
fi
# --step-time-linear: an empty field is not a missing one, a long one is not cut
run 2 "$tmp/one.csv" -q --step-time-linear 0.01,,0.001 &&
	has "$err" "--step-time-linear: field 2 (PER_TOKEN_S) is empty" "linear: empty middle field"
run 2 "$tmp/one.csv" -q --step-time-linear ,0.01 &&
	has "$err" "--step-time-linear: field 1 (BASE_S) is empty" "linear: empty first field"
run 2 "$tmp/one.csv" -q --step-time-linear 0.01, &&
	has "$err" "--step-time-linear: field 2 (PER_TOKEN_S) is empty" "linear: trailing comma"
run 2 "$tmp/one.csv" -q --step-time-linear "0.002$(printf '%0300d' 0)xyz" &&
	has "$err" "--step-time-linear: field 1 (BASE_S) is longer than 63 characters" "linear: long field"
run 2 "$tmp/one.csv" -q --step-time-linear 0.01,0,0,0,0 &&
	has "$err" "--step-time-linear: more than four fields" "linear: five fields"
run 2 "$tmp/one.csv" -q --step-time-linear 0.01,0x1 &&
	has "$err" "--step-time-linear: field 2 (PER_TOKEN_S) is '0x1'; expected BASE_S" "linear: hex"
run 2 -q --kv-read-factor 0 && has "$err" "--kv-read-factor" "zero factor"
run 2 -q --kv-read-factor x && has "$err" "--kv-read-factor" "non-numeric factor"

# ---- errors ------------------------------------------------------------------------------
run 2 --bogus && has "$err" "unknown option '--bogus'" "unknown flag"
run 2 --policy lru && has "$err" "unknown policy 'lru'" "bad policy"
run 2 --policies paged,max && has "$err" "one policy" "replay with several policies"
run 2 --preemption-mode kill && has "$err" "--preemption-mode" "bad preemption mode"
run 2 --max-num-seqs 16 --max-num-batched-tokens 8 && has "$err" "--max-num-batched-tokens" "batch < seqs"
run 2 --max-num-seqs 0 && has "$err" "--max-num-seqs" "zero seqs"
run 2 "$tmp/tiny.csv" "$tmp/tiny.csv" && has "$err" "one TRACE" "two traces"
run 1 "$tmp/missing.csv" && has "$err" "missing.csv" "missing trace names the file"
run 1 -q --step-time-table "$tmp/none.csv" && has "$err" "none.csv" "missing table"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.0000000,100,5\n2023-11-16 18:00:01.0000000,abc,5\n' >"$tmp/bad.csv"
run 1 "$tmp/bad.csv" -q && has "$err" "bad.csv:3" "malformed line names file and line"
printf 'num_tokens,context_tokens,step_time_s\n1,2,0.01\n' >"$tmp/short.csv"
run 1 -q --step-time-table "$tmp/short.csv" && has "$err" "at least 3" "table too short"
# the table's content errors exit 1 (as a trace's) and name file, line and column
printf 'num_tokens,context_tokens,step_time_s,step_time_s\n1,100,0.01,9\n2,200,0.02,9\n30,50,0.035,9\n' >"$tmp/dup.csv"
run 1 -q --step-time-table "$tmp/dup.csv" &&
	has "$err" "dup.csv:1: header: column 4 repeats 'step_time_s' (column 3)" "table: a column twice"
printf 'num_tokens,context_tokens,step_time_s\n1,100,0.011\n2,200\n30,50,0.035\n' >"$tmp/few.csv"
run 1 -q --step-time-table "$tmp/few.csv" &&
	has "$err" "few.csv:3: column 3 (step_time_s): missing" "table: a short row"
printf 'num_tokens,context_tokens,step_time_s\n0x10,100,0.011\n2,200,0.022\n30,50,0.035\n' >"$tmp/hex.csv"
run 1 -q --step-time-table "$tmp/hex.csv" &&
	has "$err" "hex.csv:2: column 1 (num_tokens): expected a non-negative number, got '0x10'" "table: hex"
printf 'num_tokens,context_tokens,step_time_s\n1,100,0.011%0100dxyz\n2,200,0.022\n30,50,0.035\n' 0 >"$tmp/long.csv"
run 1 -q --step-time-table "$tmp/long.csv" &&
	has "$err" "long.csv:2: column 3 (step_time_s): value longer than 63 characters" "table: long value"
printf '\357\273\277num_tokens,context_tokens,step_time_s\n1,100,0.011\n2,200,0.022\n30,50,0.035\n' >"$tmp/bom.csv"
run 0 -q --step-time-table "$tmp/bom.csv" && has "$out" "step time from table" "table after a byte order mark"

# ---- hostile inputs and outputs: a clear message, never a crash ------------------------
: >"$tmp/empty.csv"
run 1 -q "$tmp/empty.csv" && has "$err" "empty file" "empty trace"
run 1 -q /dev/null && has "$err" "/dev/null: empty file" "/dev/null trace"
mkdir -p "$tmp/adir"
run 1 -q "$tmp/adir" && has "$err" "Is a directory" "directory as trace"
head -c 4096 /dev/zero | tr '\0' 'x' >"$tmp/noline.csv"
run 1 -q "$tmp/noline.csv" && has "$err" "noline.csv:1" "junk names the line"
run 2 -q "$tmp/tiny.csv" --max-model-len 4294967296 &&
	has "$err" "--max-model-len 4294967296 is beyond the simulator's 4294967295 tokens" "max_model_len past 32 bits"
run 2 -q "$tmp/tiny.csv" --tp 3 && has "$err" "does not divide" "tp 3 on 32 heads"
# a paged pool past 2^31 - 1 blocks names the flag that sized it, before the run
run 2 -q "$tmp/tiny.csv" --num-gpu-blocks-override 4000000000 &&
	has "$err" "--num-gpu-blocks-override 4000000000: the paged pool holds at most 2147483647 blocks" "blocks override past the pool"
run 2 -q "$tmp/tiny.csv" --num-gpu-blocks-override 2147483648 &&
	has "$err" "--num-gpu-blocks-override 2147483648" "blocks override one past the pool"
run 2 -q "$tmp/tiny.csv" --gpu h100-80gb --gpu-mem 18000000TB &&
	has "$err" "--gpu-mem: a KV pool of " "memory past the pool" &&
	has "$err" "larger --block-size" "memory past the pool: the remedy"
run 2 -q "$tmp/tiny.csv" --kv-cache-memory-bytes 1000000TB &&
	has "$err" "--kv-cache-memory-bytes: a KV pool of " "KV memory past the pool"
run 0 -q "$tmp/tiny.csv" --policy max --num-gpu-blocks-override 4000000000 --step-time-linear 0.01 &&
	has "$out" "max: arrived 3" "a contiguous policy has no block pool"
run 2 -q "$tmp/tiny.csv" --block-size 0 && has "$err" "--block-size" "block size 0"
run 2 -q "$tmp/tiny.csv" --watermark nan && has "$err" "--watermark: expected a number" "NaN watermark"
run 2 -q "$tmp/tiny.csv" --slo-ttft inf && has "$err" "--slo-ttft: expected a number" "inf SLO"
run 2 -q "$tmp/tiny.csv" --max-num-seqs 18446744073709551616 && has "$err" "--max-num-seqs" "huge seqs"
run 1 -q "$tmp/tiny.csv" --json /nonexistent-dir/x.json &&
	has "$err" "--json: /nonexistent-dir/x.json: cannot write: No such file or directory" "unwritable --json"
run 1 -q "$tmp/tiny.csv" --timeseries /nonexistent-dir/x.csv &&
	has "$err" "--timeseries: /nonexistent-dir/x.csv: cannot write: No such file or directory" "unwritable --timeseries"
run 1 -q "$tmp/tiny.csv" --requests "$tmp/adir" &&
	has "$err" "--requests: $tmp/adir: cannot write: Is a directory" "directory as --requests"
if [ -w /dev/full ]; then
	run 1 -q "$tmp/tiny.csv" --timeseries /dev/full && has "$err" "--timeseries: /dev/full: write failed" "full --timeseries"
	run 1 -q "$tmp/tiny.csv" --requests /dev/full && has "$err" "--requests: /dev/full: write failed" "full --requests"
	"$KVSIM" replay -q "$tmp/tiny.csv" >/dev/full 2>"$tmp/err"
	[ $? -eq 1 ] || fail "replay to a full stdout exits 1"
	has "$(cat "$tmp/err")" "standard output: write failed" "full stdout"
fi

# ---- a preempted victim's planned token ----------------------------------------------
# A victim that had planned the token of the step preempting it does not
# run that step: the token is rolled back in every mode, so stepping one
# token at a time and the fast path agree, and a swapped group always has
# a token left (it went out with every token emitted and never finished:
# an internal invariant failed).
"$KVSIM" gen --requests 160 --rate 75 --seed 1 --n 4 --prompt-len lognormal:64:1.5 \
	--output-len lognormal:256:1.5 -o "$tmp/fam0.csv" 2>/dev/null || fail "gen of the family trace"
head -n 151 "$tmp/fam0.csv" >"$tmp/fam.csv"   # the header lines and 149 requests
for fp in "" --no-fast-path; do
	run 0 "$tmp/fam.csv" --block-size 16 --kv-cache-memory-bytes 2GiB \
		--preemption-mode swap --json - $fp &&
		has "$out" '"completed": 149' "swapped families with their last token planned $fp"
done
"$KVSIM" gen --requests 40 --rate 20 --seed 1 -o "$tmp/pri0.csv" 2>/dev/null || fail "gen of the priority trace"
awk -F, -v OFS=, 'NR>2{$7=(NR*7)%4}1' "$tmp/pri0.csv" >"$tmp/pri.csv"   # priorities 0-3
pfig() { printf '%s\n' "$out" | grep -o "\"$1\": *[0-9]*" | head -1; }
for mode in "recompute 30" "swap 26"; do
	head -n $((2 + ${mode#* })) "$tmp/pri.csv" >"$tmp/pri-n.csv"
	figs=()
	for fp in "" --no-fast-path; do
		run 0 "$tmp/pri-n.csv" --block-size 16 --num-gpu-blocks-override 500 \
			--scheduling-policy priority --preemption-mode "${mode% *}" --json - $fp &&
			figs+=("$(pfig preemptions) $(pfig recomputed_tokens) $(pfig swap_out_bytes) $(pfig completed)")
	done
	[ "${figs[0]:-x}" = "${figs[1]:-y}" ] ||
		fail "priority, $mode: fast path ${figs[0]:-} vs one token at a time ${figs[1]:-}"
done

# ---- goodput: none without an SLO, never 100.0 with a miss ---------------------------
# 2000 requests a second apart (no queueing); the 1000th alone has a long
# prompt, so with --slo-ttft 0.03 one of 2000 misses: 99.95%, printed 99.9.
awk 'BEGIN { print "TIMESTAMP,ContextTokens,GeneratedTokens"
	for (i = 0; i < 2000; i++)
		printf "2023-11-16 %02d:%02d:%02d.0000000,%d,2\n", 10 + int(i / 3600),
			int(i / 60) % 60, i % 60, i == 999 ? 5000 : 100 }' >"$tmp/gp.csv"
run 0 "$tmp/gp.csv" -q --step-time-linear 0.01,0.00001 --json "$tmp/gp.json" && {
	has "$out" "goodput (% of arrived)                 n/a  (no SLO)" "goodput without an SLO"
	has "$out" "goodput requests/s                     n/a  (no SLO)" "goodput rate without an SLO"
	has "$(cat "$tmp/gp.json")" '"fraction": null' "JSON goodput fraction without an SLO"
}
# all 2000 even under the sanitizers' --limit (the run is a few thousand
# steps of a linear step time)
saved_extra=(${extra[@]+"${extra[@]}"})
extra=()
run 0 "$tmp/gp.csv" -q --step-time-linear 0.01,0.00001 --slo-ttft 0.03 --json "$tmp/gp.json" && {
	has "$out" "goodput (% of arrived)                99.9" "goodput with one miss in 2000"
	has "$(cat "$tmp/gp.json")" '"fraction": 0.9995' "JSON goodput fraction with one miss"
}
extra=(${saved_extra[@]+"${saved_extra[@]}"})

# ---- --overlong truncate is said: stderr and the table -------------------------------
run 0 "$tmp/tiny.csv" -q --step-time-linear 0.01 --max-model-len 1000 --overlong truncate && {
	has "$out" "(1 request cut to max_model_len 1000 by --overlong truncate)" "truncated line in the table"
	has "$err" "--overlong truncate cut 1 request(s)" "truncated note on stderr"
	has "$out" "completed 3 + rejected 0" "the truncated request completes"
}

# ---- --enable-prefix-caching that can have no effect is said ---------------------------
run 0 "$tmp/tiny.csv" -q --step-time-linear 0.01 --enable-prefix-caching && {
	has "$out" "prefix caching on (inactive: the trace has no prefix hash ids)," "no hash ids: header"
	has "$err" "warning: --enable-prefix-caching had no effect: the trace has no prefix hash ids" "no hash ids: stderr"
}
run 0 "$S_NATIVE" -q --enable-prefix-caching --policy max && {
	has "$out" "prefix caching on (inactive: policy max keeps no prefix cache)," "policy max: header"
	has "$err" "warning: --enable-prefix-caching has no effect: policy max keeps no prefix cache" "policy max: stderr"
}
run 0 "$S_NATIVE" -q --enable-prefix-caching && {
	has "$out" "prefix caching on, step time" "paged with hash ids: active"
	[ -z "$err" ] || fail "paged with hash ids: stderr $err"
}

# ---- the header names pp > 1 -------------------------------------------------------------
run 0 "$tmp/tiny.csv" -q --step-time-linear 0.01 --tp 2 --pp 2 &&
	has "$out" "model llama-3-8b on a100-40gb (tp 2, pp 2), KV cache bf16" "header with pp"
run 0 "$tmp/tiny.csv" -q --step-time-linear 0.01 --pp 4 &&
	has "$out" "on a100-40gb (tp 1, pp 4)," "header with pp alone"

finish "cli replay"
