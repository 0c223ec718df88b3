#!/usr/bin/env bash
# kvsim gen: determinism, formats, the options reaching the trace, and
# usage errors.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
K=$KVSIM

"$K" gen --help | grep -q -- "--prefix-fraction" || fail "help"

# same seed, same bytes; another seed, other bytes
"$K" gen --requests 500 --seed 9 > "$tmp/a.csv"
"$K" gen --requests 500 --seed 9 -o "$tmp/b.csv" 2>/dev/null
# (the first line is a comment quoting the command line)
cmp -s <(tail -n +2 "$tmp/a.csv") <(tail -n +2 "$tmp/b.csv") || fail "same seed differs"
"$K" gen --requests 500 --seed 10 > "$tmp/c.csv"
cmp -s "$tmp/a.csv" "$tmp/c.csv" && fail "another seed gives the same trace"
head -2 "$tmp/a.csv" | tail -1 | grep -q '^arrival_s,prompt_tokens,output_tokens' || fail "csv header"

# constant arrivals at 4/s: exact rate; fixed lengths
j=$("$K" gen --requests 101 --arrival constant --rate 4 --prompt-len fixed:300 \
	--output-len fixed:20 | "$K" trace - --json)
has "$j" '"requests": 101'
has "$j" '"span_s": 25'
has "$j" '"cv_interarrival": 0'
has "$j" '"p99": 300'

# shared prefix and sessions reach the trace as hash ids
"$K" gen --requests 400 --prefix-tokens 256 --prefix-fraction 1 --prompt-len fixed:64 \
	--output-len fixed:8 -o "$tmp/p.jsonl" 2>/dev/null
j=$("$K" trace "$tmp/p.jsonl" --json)
has "$j" '"format": "native-jsonl"'
# 400 prompts of 320 tokens = 20 blocks; the 16 shared blocks hit in all but the first
has "$j" '"full_blocks": 8000'
has "$j" '"hit_blocks": 6384'
j=$("$K" gen --requests 300 --turns 3 --think 5 | "$K" trace - --json)
has "$j" '"max_turn": 3'
has "$j" '"has_hashes": true'
j=$("$K" gen --requests 10 --n 4 | "$K" trace - --json)
has "$j" '"multi_sample": 10'

# resampling lengths from a trace keeps its values
j=$("$K" gen --requests 50 --prompt-len "trace:$KVS_SOURCE_ROOT/traces/samples/splitwise-sample.csv" \
	--output-len "trace:$KVS_SOURCE_ROOT/traces/samples/splitwise-sample.csv" | "$K" trace - --json)
has "$j" '"max": 4096'

set +e
"$K" gen --rate 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--rate 0 exits 2"
"$K" gen --prompt-len zipf:1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad distribution exits 2"
"$K" gen --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown flag exits 2"
"$K" gen --prefix-fraction 0.5 >/dev/null 2>&1; [ $? -eq 2 ] || fail "fraction without tokens exits 2"
"$K" gen -o /nonexistent-dir/x.csv >/dev/null 2>&1; [ $? -eq 1 ] || fail "unwritable output exits 1"
"$K" gen --requests 3 --hashes=yes >/dev/null 2>&1; [ $? -eq 2 ] || fail "--hashes=yes exits 2"
"$K" gen --requests 3 --rate nan >/dev/null 2>&1; [ $? -eq 2 ] || fail "--rate nan exits 2"
"$K" gen --requests 3 --rate 0x10 >/dev/null 2>&1; [ $? -eq 2 ] || fail "hex --rate exits 2"
"$K" gen --requests 18446744073709551616 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--requests past 2^64 exits 2"
"$K" gen --requests 3 --prompt-len fixed:4294967296 >/dev/null 2>&1; [ $? -eq 2 ] || fail "length past 2^32 exits 2"
expect 2 "-o: one output file at most" gen --requests 3 -o "$tmp/x1.csv" -o "$tmp/x2.csv"
expect 2 "^kvsim gen: generator: " gen --prefix-fraction 0.5
# lengths are decimal, counts whole: no hex, inf or nan, no rounded turns
expect 2 "--prompt-len: '0x40' is not a length distribution" gen --requests 3 --prompt-len 0x40
expect 2 "--prompt-len: 'fixed:0x10': parameter 1 is not a finite decimal number" \
	gen --requests 3 --prompt-len fixed:0x10
expect 2 "--output-len: 'uniform:1:0x20': parameter 2 is not" gen --requests 3 --output-len uniform:1:0x20
expect 2 "--output-len: 'lognormal:inf:1': parameter 1 is not" gen --requests 3 --output-len lognormal:inf:1
expect 2 "--prompt-len: 'nan' is not a length distribution" gen --requests 3 --prompt-len nan
expect 2 "--turns 2.5 is not a whole number" gen --requests 3 --turns 2.5
"$K" gen --requests 3 --turns 2.5 --turns-dist geometric >/dev/null 2>&1 || fail "a fractional mean of geometric turns"
"$K" gen --requests 3 --prompt-len "trace:$tmp" >/dev/null 2>&1; [ $? -eq 1 ] || fail "directory as a length trace exits 1"
"$K" gen --requests 3 -o /dev/full >/dev/null 2>&1; [ $? -eq 1 ] || fail "full output exits 1"
# Ctrl-C: standard output ends after the last whole request; a file is not
# written (one already there untouched); exit 130
kvs_bg "$tmp/gi.csv" "$tmp/gi.err" gen --requests 50000000 --rate 50
kvs_stop 0.5 INT
[ "$rc" -eq 130 ] || fail "interrupted gen exits 130 (got $rc)"
has "$(cat "$tmp/gi.err")" "interrupted after" "gen interruption reported"
[ "$(tail -c 1 "$tmp/gi.csv" | od -An -c | tr -d ' ')" = '\n' ] || fail "gen stdout ends mid-line"
awk -F, 'NR > 2 && NF != 7 { bad = 1 } END { exit bad }' "$tmp/gi.csv" || fail "gen stdout: a cut record"
echo keep >"$tmp/gk.csv"
kvs_bg /dev/null "$tmp/gk.err" gen --requests 50000000 --rate 50 -o "$tmp/gk.csv"
kvs_stop 0.5 INT
[ "$rc" -eq 130 ] || fail "interrupted gen -o exits 130 (got $rc)"
[ "$(cat "$tmp/gk.csv")" = keep ] || fail "interrupted gen -o replaced the file"
has "$(cat "$tmp/gk.err")" "not written" "gen -o interruption reported"
ls -a "$tmp" | grep -q 'kvsim-' && fail "gen: temporary files left behind"

# -q / --quiet as every other command: no "wrote" line, the same file
"$KVSIM" gen --requests 5 -o "$tmp/q0.csv" 2>"$tmp/q0.err" || fail "gen -o"
has "$(cat "$tmp/q0.err")" "kvsim gen: wrote 5 requests" "gen says what it wrote"
for q in -q --quiet; do
	"$KVSIM" gen --requests 5 $q -o "$tmp/q1.csv" 2>"$tmp/q1.err" || fail "gen $q exits 0: $(cat "$tmp/q1.err")"
	[ ! -s "$tmp/q1.err" ] || fail "gen $q wrote to stderr: $(cat "$tmp/q1.err")"
	[ "$(tail -n +2 "$tmp/q1.csv")" = "$(tail -n +2 "$tmp/q0.csv")" ] || fail "gen $q: another trace"
done

set -e
finish "cli gen"
