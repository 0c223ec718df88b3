#!/usr/bin/env bash
# kvsim trace: table and --json on the samples, shaping flags, exit codes
# for usage errors (2) and bad files (1), --skip-bad-lines, --write.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
K=$KVSIM
S="${KVS_SOURCE_ROOT:?}/traces/samples"

"$K" trace --help | grep -q -- "--sort-window" || fail "help lists the shaping flags"
"$K" help trace | grep -q "usage: kvsim trace" || fail "kvsim help trace"

# default: the bundled Azure cut
out=$("$K" trace)
has "$out" "azure-conv-sample.csv (azure)"
has "$out" "requests         1511"

j=$("$K" trace "$S/mooncake-sample.jsonl" --json)
has "$j" '"requests": 5'
has "$j" '"span_s": 3.25'
has "$j" '"full_blocks": 9'
has "$j" '"hit_blocks": 5'
has "$j" '"prefix_hit_blocks": 0.5555555556'
has "$j" '"p50": 1100'
has "$j" '"balanced": true'
j=$("$K" trace "$S/mooncake-sample.jsonl" --json --block-size 256)
has "$j" '"hit_blocks": 10'
has "$j" '"hash_block_tokens": 256'

j=$("$K" trace "$S/azure-conv-sample.csv" --json)
has "$j" '"prefix_hit_blocks": null'
has "$j" '"format": "azure"'

j=$("$K" trace "$S/burstgpt-sample.csv" --json)
has "$j" '"failed": 2'
has "$j" '"requests": 5'
j=$("$K" trace "$S/burstgpt-sample.csv" --json --keep-failed)
has "$j" '"requests": 7'
has "$j" '"kept_failed": 2'
has "$("$K" trace "$S/burstgpt-sample.csv" --keep-failed)" "2 of the requests are BurstGPT failure rows kept by --keep-failed" "trace table: kept failures"

# shaping
j=$("$K" trace "$S/azure-conv-sample.csv" --json --limit 10)
has "$j" '"requests": 10'
j=$("$K" trace "$S/azure-conv-sample.csv" --json --start 10 --end 20)
has "$j" '"requests": 40'
has "$j" '"filtered_window": 45'
j=$("$K" trace "$S/azure-conv-sample.csv" --json --rate 20)
has "$j" '"mean_rate": 20'
j=$("$K" trace "$S/azure-conv-sample.csv" --json --max-model-len 2000)
has "$j" '"over_max_len": 144'
j=$("$K" trace "$S/azure-conv-sample.csv" --json --max-model-len 2000 --overlong truncate)
has "$j" '"truncated": 144'
# every arrival at one instant: no rate and no cv (n/a, null), not 0
printf 'arrival_s,prompt_tokens,output_tokens\n0,10,5\n0,20,5\n0,30,5\n' >"$tmp/instant.csv"
t=$("$K" trace "$tmp/instant.csv")
printf '%s\n' "$t" | grep -Eq '^mean rate +n/a$' || fail "one instant: mean rate not n/a: $t"
printf '%s\n' "$t" | grep -Eq '^cv +n/a \(' || fail "one instant: cv not n/a: $t"
j=$("$K" trace "$tmp/instant.csv" --json)
has "$j" '"mean_rate": null' "one instant: JSON mean_rate"
has "$j" '"cv_interarrival": null' "one instant: JSON cv"
# standard input
j=$("$K" trace - --json < "$S/native-sample.csv")
has "$j" '"sessions": 2'

# usage errors exit 2
set +e
"$K" trace --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown flag exits 2"
"$K" trace --limit 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--limit 0 exits 2"
"$K" trace --rate 5 --time-scale 2 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--rate with --time-scale exits 2"
# Poisson re-timing without a rate would do nothing: refused, naming --rate
e=$("$K" trace "$S/azure-conv-sample.csv" --time-scale 0.25 --rate-mode poisson 2>&1 >/dev/null)
[ $? -eq 2 ] || fail "--rate-mode poisson without --rate exits 2"
has "$e" "--rate-mode poisson re-times arrivals to --rate R: give --rate" "--rate-mode poisson without --rate explained"
"$K" trace --format csvx >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --format exits 2"
"$K" trace a.csv b.csv >/dev/null 2>&1; [ $? -eq 2 ] || fail "two files exit 2"
"$K" trace "$S/azure-conv-sample.csv" --start 5 --end 1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "window end before start exits 2"
# a block size the trace's hash blocks cannot take: one message naming the
# file once, and the same usage error whether the file says its block size
# on a line (native) or by its format (Mooncake)
for f in native-sample.csv mooncake-sample.jsonl; do
	err=$("$K" trace "$S/$f" --block-size 24 2>&1); [ $? -eq 2 ] || fail "trace $f --block-size 24 exits 2"
	has "$err" "--block-size 24 neither divides nor is a multiple of the trace's"
	[ "$(printf '%s' "$err" | grep -o "$f" | wc -l)" -eq 1 ] || fail "$f named once: $err"
	# replay reads the hash ids for its prefix cache only: without the
	# cache any block size runs, as in sweep
	err=$("$K" replay -q "$S/$f" --block-size 24 --enable-prefix-caching 2>&1)
	[ $? -eq 2 ] || fail "replay $f --block-size 24 --enable-prefix-caching exits 2"
	has "$err" "--block-size 24 neither divides"
	err=$("$K" replay -q "$S/$f" --block-size 24 2>&1) ||
		fail "replay $f --block-size 24 without prefix caching exits 0: $err"
	"$K" compare -q "$S/$f" --block-size 24 >/dev/null 2>&1 ||
		fail "compare $f --block-size 24 without prefix caching exits 0"
done
# truncating to 1 token would leave no output token
err=$("$K" trace "$S/native-sample.csv" --max-model-len 1 --overlong truncate --write "$tmp/t1.csv" 2>&1)
[ $? -eq 2 ] || fail "--max-model-len 1 --overlong truncate exits 2"
has "$err" "max model len 1 cannot hold a prompt token and an output token"
[ ! -e "$tmp/t1.csv" ] || fail "--max-model-len 1 --overlong truncate writes no file"
err=$("$K" trace "$S/azure-conv-sample.csv" --json= 2>&1); [ $? -eq 2 ] || fail "--json= exits 2"
has "$err" "--json=: empty file name"
# --json FILE.json: the table on stdout, the JSON in the file, never a trace
out=$("$K" trace --json "$tmp/t.json" "$S/azure-conv-sample.csv" 2>&1) || fail "trace --json FILE"
has "$out" "requests" "trace table with --json FILE"
grep -q '"first_arrival_s": 0' "$tmp/t.json" || fail "trace --json FILE writes first_arrival_s"
"$K" trace "$S/azure-conv-sample.csv" --skip-bad-lines=yes >/dev/null 2>&1; [ $? -eq 2 ] || fail "--skip-bad-lines=yes exits 2"
# hostile files: a clear message and exit 1, never a crash
mkdir "$tmp/adir"
err=$("$K" trace "$tmp/adir" 2>&1); [ $? -eq 1 ] || fail "directory exits 1"
has "$err" "Is a directory"
err=$("$K" trace /dev/null 2>&1); [ $? -eq 1 ] || fail "/dev/null exits 1"
has "$err" "/dev/null: empty file"
head -c 2100000 /dev/zero | tr '\0' '7' >"$tmp/longline.csv"
err=$("$K" trace "$tmp/longline.csv" 2>&1); [ $? -eq 1 ] || fail "2 MB line exits 1"
has "$err" "longline.csv:1: line: longer than"
printf 'arrival_s,prompt_tokens,output_tokens\n0,18446744073709551616,5\n' >"$tmp/ovf.csv"
err=$("$K" trace "$tmp/ovf.csv" 2>&1); [ $? -eq 1 ] || fail "overflowing count exits 1"
has "$err" "ovf.csv:2: prompt_tokens: too large"
printf 'arrival_s,prompt_tokens,output_tokens\nnan,10,5\n' >"$tmp/nan.csv"
err=$("$K" trace "$tmp/nan.csv" 2>&1); [ $? -eq 1 ] || fail "NaN arrival exits 1"
has "$err" "nan.csv:2: arrival_s: expected a number"
printf '{"arrival_s": [1], "prompt_tokens": {"a": 1}, "output_tokens": 5}\n' >"$tmp/nest.jsonl"
err=$("$K" trace "$tmp/nest.jsonl" 2>&1); [ $? -eq 1 ] || fail "nested JSON exits 1"
has "$err" "nest.jsonl:1: arrival_s: expected a number"
# 2^64 as a JSON real (what UINT64_MAX rounds to) is out of range, not 0
printf '{"arrival_s":0,"prompt_tokens":10,"output_tokens":5,"session_id":18446744073709551615.0}\n' >"$tmp/sid.jsonl"
err=$("$K" trace "$tmp/sid.jsonl" --write "$tmp/sid.csv" 2>&1); [ $? -eq 1 ] || fail "2^64 session id exits 1"
has "$err" "sid.jsonl:1: session_id: too large"
[ ! -e "$tmp/sid.csv" ] || fail "2^64 session id leaves no output file"
"$K" trace "$S/azure-conv-sample.csv" --write /nonexistent-dir/x.csv >/dev/null 2>&1; [ $? -eq 1 ] || fail "unwritable --write exits 1"
# runtime failures exit 1 with file:line: field: reason
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.6805900,-3,44\n' > "$tmp/bad.csv"
err=$("$K" trace "$tmp/bad.csv" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "bad line exits 1 (got $rc)"
has "$err" "bad.csv:3: ContextTokens: negative value"
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-28 23:59:59,374,44\n2023-02-29 00:00:01,374,44\n' > "$tmp/feb.csv"
err=$("$K" trace "$tmp/feb.csv" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "February 29 of 2023 exits 1 (got $rc)"
has "$err" "feb.csv:3: TIMESTAMP: date or time out of range, got \"2023-02-29 00:00:01\""
"$K" trace "$tmp/missing.csv" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing file exits 1"
: > "$tmp/empty.csv"
err=$("$K" trace "$tmp/empty.csv" 2>&1); [ $? -eq 1 ] || fail "empty file exits 1"
has "$err" "empty file"
set -e
out=$("$K" trace "$tmp/bad.csv" --skip-bad-lines 2>"$tmp/err")
has "$out" "requests         1"
has "$(cat "$tmp/err")" "skipped 1 malformed line(s); first: $tmp/bad.csv:3: ContextTokens"

# --write converts to native, readable back with the same numbers
"$K" trace "$S/mooncake-sample.jsonl" --block-size 128 --write "$tmp/m.csv" 2>/dev/null
j=$("$K" trace "$tmp/m.csv" --json)
has "$j" '"format": "native-csv"'
has "$j" '"hash_block_tokens": 128'
has "$j" '"requests": 5'
# truncated to 2 tokens: one of each, and the file reads back
"$K" trace "$S/native-sample.csv" --max-model-len 2 --overlong truncate --write "$tmp/t2.csv" 2>/dev/null ||
	fail "--max-model-len 2 --overlong truncate"
j=$("$K" trace "$tmp/t2.csv" --json) || fail "a trace truncated to 2 tokens reads back"
has "$j" '"requests": 4'
has "$j" '"total": 4'
"$K" trace "$S/azure-conv-sample.csv" --write "$tmp/a.jsonl" 2>/dev/null
j=$("$K" trace "$tmp/a.jsonl" --json)
has "$j" '"format": "native-jsonl"'
has "$j" '"total": 1609464'
# line endings: \r\n and \r\r\n read; \r alone (classic Mac OS) is named
printf 'arrival_s,prompt_tokens,output_tokens\r\n0,10,5\r\n1,10,5\r\n' >"$tmp/crlf.csv"
j=$("$K" trace "$tmp/crlf.csv" --json) && has "$j" '"requests": 2' || fail "CRLF trace"
printf 'arrival_s,prompt_tokens,output_tokens\r\r\n0,10,5\r\r\n' >"$tmp/crcrlf.csv"
"$K" trace "$tmp/crcrlf.csv" >/dev/null 2>&1 || fail "a \\r\\r\\n trace"
printf 'arrival_s,prompt_tokens,output_tokens\r0,10,5\r1,10,5\r' >"$tmp/cr.csv"
rc=0
"$K" trace "$tmp/cr.csv" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] || fail "a CR-only trace does not exit 1"
grep -q 'cr.csv:1: a carriage return inside the line: the file ends its lines in \\r alone' "$tmp/err" ||
	fail "CR-only trace: $(cat "$tmp/err")"
finish "cli trace"
