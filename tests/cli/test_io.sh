#!/usr/bin/env bash
# Inputs and outputs: traces read once (pipes, FIFOs and standard input
# with every flag), output files written whole or not at all and checked
# before the runs, bounded memory for `trace` prefix statistics, and the
# messages of bad inputs (file, line, field, reason).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
K=$KVSIM
S="${KVS_SOURCE_ROOT:?}/traces/samples"
M="${KVS_SHARED_TRACES:-}/mooncake-synthetic/synthetic.jsonl"

"$K" gen --requests 40 --seed 3 -o "$tmp/t.csv" 2>/dev/null || fail "gen t.csv"
# no temporary file (.NAME.kvsim-XXXXXX) left anywhere under a directory
no_tmp() {
	local left
	left=$(find "$1" -name '.*.kvsim-*' | head -3)
	[ -z "$left" ] || fail "${2:-temporary files left}: $left"
}

# ---- inputs read once (item 5) -------------------------------------------
want=$("$K" trace --rate 2 "$tmp/t.csv" --json | grep '"mean_rate"')
has "$want" '"mean_rate": 2' "--rate keep on a file"
got=$("$K" trace --rate 2 --json <(cat "$tmp/t.csv") | grep '"mean_rate"')
[ "$got" = "$want" ] || fail "--rate over <(cat): '$got' != '$want'"
got=$(cat "$tmp/t.csv" | "$K" trace --rate 2 --json - | grep '"mean_rate"')
[ "$got" = "$want" ] || fail "--rate over stdin: '$got' != '$want'"
mkfifo "$tmp/fifo"
(cat "$tmp/t.csv" > "$tmp/fifo" &)
got=$(timeout 20 "$K" trace --rate 2 --json "$tmp/fifo" | grep '"mean_rate"')
[ "$got" = "$want" ] || fail "--rate over a FIFO: '$got' != '$want'"
# replay, compare (several policies) and sweep from a FIFO, with --rate
ref=$("$K" compare --policies paged,max --rate 2 -q "$tmp/t.csv" --json - | grep -v '"path"\|wall')
(cat "$tmp/t.csv" > "$tmp/fifo" &)
got=$(timeout 20 "$K" compare --policies paged,max --rate 2 -q "$tmp/fifo" --json - | grep -v '"path"\|wall')
[ "$got" = "$ref" ] || fail "compare over a FIFO differs from the file"
(cat "$tmp/t.csv" > "$tmp/fifo" &)
timeout 20 "$K" replay --rate 2 -q "$tmp/fifo" >/dev/null || fail "replay --rate over a FIFO"
(cat "$tmp/t.csv" > "$tmp/fifo" &)
timeout 20 "$K" sweep --rate 2 -q --block-sizes 16 "$tmp/fifo" >/dev/null || fail "sweep --rate over a FIFO"
timeout 20 "$K" compare --rate 2 -q <(cat "$tmp/t.csv") >/dev/null || fail "compare over <(cat)"

# ---- outputs whole or not at all (item 6) --------------------------------
mkdir "$tmp/o"
(cat "$tmp/t.csv"; echo "99,abc,5,0,0,1,0") > "$tmp/bad.csv"
echo keep > "$tmp/o/out.csv"
kvs_run trace 1 "$tmp/bad.csv" --write "$tmp/o/out.csv"
has "$err" 'bad.csv:43: prompt_tokens'
[ "$(cat "$tmp/o/out.csv")" = keep ] || fail "a failed trace --write clobbered the file"
kvs_run trace 1 "$tmp/bad.csv" --write "$tmp/o/new.csv"
[ -e "$tmp/o/new.csv" ] && fail "a failed trace --write left a partial file"
kvs_run gen 1 --rate 1e-9 --requests 100 -o "$tmp/o/g.csv"
[ -e "$tmp/o/g.csv" ] && fail "a failed gen left a file"
for o in "--json $tmp/o/out.csv" "--timeseries $tmp/o/out.csv" "--requests $tmp/o/out.csv"; do
	# shellcheck disable=SC2086
	kvs_run replay 1 "$tmp/bad.csv" -q $o
	[ "$(cat "$tmp/o/out.csv")" = keep ] || fail "a failed replay $o clobbered the file"
done
kvs_run sweep 1 "$tmp/bad.csv" -q --block-sizes 16 --json="$tmp/o/out.csv"
[ "$(cat "$tmp/o/out.csv")" = keep ] || fail "a failed sweep --json clobbered the file"
# a bad trace with every output flag (compare reads it whole before the
# runs): none of the outputs, nor any temporary file, is left
mkdir "$tmp/o5"
kvs_run compare 1 "$tmp/bad.csv" -q --policies paged,max --json "$tmp/o5/j.json" \
	--timeseries "$tmp/o5/t.csv" --requests "$tmp/o5/r.csv" \
	--bench-json "$tmp/o5/b.json" --summary-csv "$tmp/o5/s.csv"
has "$err" 'bad.csv:43: prompt_tokens' "compare, bad trace"
[ -z "$(ls -A "$tmp/o5")" ] || fail "a failed compare left $(ls -A "$tmp/o5")"
# success replaces it, whole
kvs_run replay 0 "$tmp/t.csv" -q --json "$tmp/o/out.csv"
has "$(tail -c 3 "$tmp/o/out.csv")" "}"
no_tmp "$tmp/o"
# a run stopped by SIGTERM mid-way writes its outputs whole, marked
# "interrupted", and no temporary files; one killed outright leaves
# nothing under the outputs' names (the trace replays in about 2 s without
# the fast path, 4x the time it is given, so that the signal comes mid-run)
"$K" gen --requests 200000 --rate 2000 --seed 1 -o "$tmp/big.csv" 2>/dev/null
timeout -s TERM 0.5 "$K" replay "$tmp/big.csv" -q --no-fast-path \
	--json "$tmp/o/killed.json" --requests "$tmp/o/killed.csv" >/dev/null 2>&1
rc=$?
if [ "$rc" -eq 124 ]; then
	grep -q '"interrupted": true' "$tmp/o/killed.json" || fail "a stopped replay's --json is marked interrupted"
	has "$(tail -c 3 "$tmp/o/killed.json")" "}"
	arrived=$(sed -n 's/^ *"arrived": \([0-9]*\),*$/\1/p' "$tmp/o/killed.json" | head -n 1)
	[ "$(wc -l <"$tmp/o/killed.csv")" -eq $((arrived + 1)) ] ||
		fail "a stopped replay's --requests holds every arrived request ($arrived)"
	no_tmp "$tmp/o" "a stopped replay left temporary files"
fi
timeout -s KILL 0.5 "$K" replay "$tmp/big.csv" -q --no-fast-path \
	--json "$tmp/o/killed9.json" --requests "$tmp/o/killed9.csv" >/dev/null 2>&1
if [ $? -eq 137 ]; then
	[ -e "$tmp/o/killed9.json" ] && fail "a killed replay left its --json"
	[ -e "$tmp/o/killed9.csv" ] && fail "a killed replay left its --requests"
fi
# devices are written in place; /dev/full names the file and the reason
kvs_run sweep 1 "$tmp/t.csv" -q --block-sizes 16 --csv=/dev/full
has "$err" "--csv: /dev/full: write failed: No space left on device"
kvs_run replay 0 "$tmp/t.csv" -q --json /dev/null

# ---- item 7: gen writes only what the reader reads back -------------------
kvs_run gen 1 --rate 1e-9 --requests 100 -o "$tmp/o/g.csv"
has "$err" "is past the latest a trace can hold"
"$K" gen --rate 2e-8 --requests 100 --seed 2 -o "$tmp/slow.csv" 2>/dev/null || fail "gen --rate 2e-8"
kvs_run trace 0 "$tmp/slow.csv"
has "$out" "requests         100"

# ---- item 8: step-time coefficients keep the figures finite ---------------
kvs_run replay 2 "$tmp/t.csv" --step-time-linear 1e300
has "$err" "numbers in [0, 3600] s"
kvs_run replay 0 "$tmp/t.csv" -q --step-time-linear 3600 --json -
printf '%s' "$out" | grep -qE '_pct": null|: -?inf|: nan' && fail "--step-time-linear 3600: non-finite figures"
has "$out" '"reservation_pct"' "--step-time-linear 3600: memory parts"

# ---- item 9: a trace without requests renders -----------------------------
printf 'arrival_s,prompt_tokens,output_tokens\n' > "$tmp/empty.csv"
kvs_run replay 0 "$tmp/empty.csv" -q --json "$tmp/empty.json"
kvs_run report 0 "$tmp/empty.json" -o "$tmp/rep-empty"
[ -s "$tmp/rep-empty/index.html" ] || fail "report of an empty run"
if kvs_run compare 0 "$tmp/empty.csv" -q --report "$tmp/rep-empty2"; then
	[ -s "$tmp/rep-empty2/index.html" ] || fail "compare --report of an empty run"
fi
# a broken document is named once, not "kvsim replay: ... kvsim replay:"
python3 - "$tmp/empty.json" > "$tmp/broken.json" <<'EOF' 2>/dev/null || true
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["policies"].values():
    p["timeseries"]["free_pct"] = [1.0]
print(json.dumps(d))
EOF
if [ -s "$tmp/broken.json" ]; then
	kvs_run report 1 "$tmp/broken.json" -o "$tmp/rep-broken"
	has "$err" "timeseries.free_pct: has values, but t_s is empty"
fi

# ---- item 10: every output checked before the runs -------------------------
# the trace fails at its last line: a bad output must fail first
for o in --json --timeseries --requests; do
	kvs_run replay 1 "$tmp/bad.csv" -q $o /nonexistent-dir/x
	has "$err" "$o: /nonexistent-dir/x: cannot write: No such file or directory"
done
# size and trace too: nothing printed before the failure
kvs_run size 1 --json /nonexistent-dir/x.json
has "$err" "--json: /nonexistent-dir/x.json: cannot write: No such file or directory"
[ -z "$out" ] || fail "size printed its table before a bad --json path failed"
kvs_run trace 1 "$tmp/t.csv" --json /nonexistent-dir/x.json
has "$err" "--json: /nonexistent-dir/x.json: cannot write"
[ -z "$out" ] || fail "trace printed its table before a bad --json path failed"
kvs_run sweep 1 "$tmp/bad.csv" -q --block-sizes 16 --csv=/nonexistent-dir/x.csv
has "$err" "--csv: /nonexistent-dir/x.csv: cannot write"
kvs_run replay 1 "$tmp/bad.csv" -q --json "$tmp/o"
has "$err" "Is a directory"

# ---- item 11: trace prefix statistics in bounded memory ---------------------
# the figures at a block size that splits the trace's blocks
j=$("$K" trace "$S/mooncake-sample.jsonl" --json --block-size 1)
has "$j" '"prefix_capped": false'
has "$j" '"prefix_requests": 5'
if [ -f "$M" ] && [ "${KVS_TEST_SCALE:-1}" = 1 ]; then
	# 21 M distinct 1-token blocks once took 800 MB; now the 40 k source ids
	out=$( (ulimit -v 400000; "$K" trace "$M" --block-size 1) 2>&1) ||
		fail "trace --block-size 1 on Mooncake in 400 MB: $out"
	has "$out" "39852661 of 61194628" "Mooncake --block-size 1 hits"
	has "$out" "21341967 distinct blocks" "Mooncake --block-size 1 distinct blocks"
fi

# ---- item 12: messages name the file, line, field and reason ---------------
printf 'arrival_s,prompt_tokens,output_tokens\n1e-320,5,5\n2,5,5\n' > "$tmp/tiny.csv"
kvs_run trace 0 "$tmp/tiny.csv"
printf 'arrival_s,prompt_tokens,output_tokens\n1e400,5,5\n' > "$tmp/huge.csv"
kvs_run trace 1 "$tmp/huge.csv"
has "$err" "too large"
printf 'arrival_s,prompt_tokens,output_tokens\n0,5,5\n' | iconv -t UTF-16 > "$tmp/u16.csv" 2>/dev/null &&
	{ kvs_run trace 1 "$tmp/u16.csv"; has "$err" "u16.csv:1: the file is UTF-16 text"; }
printf 'arrival_s,prompt_tokens,output_tokens,prompt_tokens\n0,5,5,7\n' > "$tmp/dup.csv"
kvs_run trace 1 "$tmp/dup.csv"
has "$err" 'dup.csv:1: header: column "prompt_tokens" appears twice (columns 2 and 4)'
printf 'arrival_s,prompt_tokens,output_tokens,session_id,turn,num_samples,priority,hash_block_tokens,hash_ids\n0,600,5,0,0,1,0,512,18446744073709551615 3\n' > "$tmp/bigid.csv"
kvs_run trace 1 "$tmp/bigid.csv" --block-size 16
has "$err" "bigid.csv:2: hash_ids: hash id 18446744073709551615 is too large to split"
kvs_run sweep 2 "$tmp/bigid.csv" -q --enable-prefix-caching --block-sizes 16
has "$err" "bigid.csv: line 2: hash_ids: id 18446744073709551615 is too large to split"
kvs_run replay 1 "$tmp/t.csv" --step-time-table "$tmp/o"
has "$err" "cannot read step-time table: is a directory"
kvs_run replay 2 "$tmp/t.csv" --gpu-mem 1B
has "$err" "device memory 1 B, from --gpu-mem"
cfg='{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"num_hidden_layers":32,"vocab_size":128256,"intermediate_size":14336,"max_position_embeddings":8192,"torch_dtype":"bfloat16"}'
printf '\xef\xbb\xbf%s' "$cfg" > "$tmp/bom.json"
kvs_run size 0 --model "$tmp/bom.json"
printf '%s' "${cfg%\}},\"head_dim\":4294967295}" > "$tmp/hd.json"
kvs_run size 1 --model "$tmp/hd.json"
has "$err" "hd.json: field 'head_dim': 4294967295 is out of range [1, 65536]"
# a line of exactly 1 MiB (without its newline) is read; one byte more is not
python3 - "$tmp" <<'EOF' || fail "writing the 1 MiB lines"
import sys
d = sys.argv[1]
for name, n in (("mib.jsonl", 1 << 20), ("mib1.jsonl", (1 << 20) + 1)):
    head = '{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 5, "pad": "'
    line = head + "x" * (n - len(head) - 2) + '"}'
    assert len(line) == n
    open(f"{d}/{name}", "w").write(line + "\n")
EOF
kvs_run trace 0 "$tmp/mib.jsonl" --format native-jsonl
kvs_run trace 1 "$tmp/mib1.jsonl" --format native-jsonl
has "$err" "mib1.jsonl:1: line: longer than 1048576 bytes"

# ---- output flags: what --json WORD names ----------------------------------
# before the trace, a WORD not ending in .json is the trace, never
# overwritten; after it, or ending in .json, WORD is the file
mkdir "$tmp/j"
cp "$tmp/t.csv" "$tmp/j/t.csv"
sum0=$(cksum <"$tmp/j/t.csv")
for c in replay compare fleet; do
	kvs_run "$c" 0 --json "$tmp/j/t.csv" -q --policies paged && {
		[ "$(cksum <"$tmp/j/t.csv")" = "$sum0" ] || fail "$c --json TRACE.csv overwrote the trace"
		has "$out" "\"path\": \"$tmp/j/t.csv\"" "$c --json TRACE.csv: JSON of that trace on stdout"
	}
	kvs_run "$c" 0 "$tmp/j/t.csv" -q --policies paged --json "$tmp/j/$c-out" &&
		grep -q '"policies"' "$tmp/j/$c-out" || fail "$c TRACE --json WORD: WORD is the file"
	kvs_run "$c" 0 -q --policies paged --limit 20 --json "$tmp/j/$c.json" &&
		grep -q '"policies"' "$tmp/j/$c.json" || fail "$c --json FILE.json: the file"
done

# ---- output flags: never over an input or another output ------------------
# usage errors naming both, before anything is written
kvs_run fleet 2 "$tmp/j/t.csv" -q --json "$tmp/j/t.csv"
has "$err" "--json $tmp/j/t.csv is also the trace" "fleet --json over the trace"
for c in replay compare; do
	kvs_run "$c" 2 "$tmp/j/t.csv" -q --requests "$tmp/j/t.csv"
	has "$err" "--requests $tmp/j/t.csv is also the trace" "$c --requests over the trace"
	kvs_run "$c" 2 "$tmp/j/t.csv" -q --json "$tmp/j/same.json" --summary-csv "$tmp/j/./same.json"
	has "$err" "--json and --summary-csv both name" "$c two outputs, one file"
	kvs_run "$c" 2 "$tmp/j/t.csv" -q --json - --bench-json -
	has "$err" "--json and --bench-json both write to standard output" "$c two outputs on stdout"
done
ln -s t.csv "$tmp/j/link.csv"
kvs_run replay 2 "$tmp/j/link.csv" -q --timeseries "$tmp/j/t.csv"
has "$err" "--timeseries $tmp/j/t.csv is also the trace" "an output over the trace's link target"
# the bundled sample, read when no trace is given, is an input too
mkdir -p "$tmp/dd/traces"
cp "$tmp/t.csv" "$tmp/dd/traces/azure-conv-sample.csv"
KVSIM_DATADIR="$tmp/dd" kvs_run replay 2 -q --json="$tmp/dd/traces/azure-conv-sample.csv"
has "$err" "is also the trace" "an output over the bundled sample"
kvs_run sweep 2 "$tmp/j/t.csv" -q --csv "$tmp/j/t.csv"
has "$err" "--csv $tmp/j/t.csv is also the trace" "sweep --csv over the trace"
kvs_run sweep 2 "$tmp/j/t.csv" -q --json="$tmp/j/s.out" --csv="$tmp/j/s.out"
has "$err" "--json and --csv both name" "sweep --json and --csv, one file"
kvs_run trace 2 "$tmp/j/t.csv" --write "$tmp/j/t.csv"
has "$err" "--write $tmp/j/t.csv is also the trace" "trace --write over the trace"
[ "$(cksum <"$tmp/j/t.csv")" = "$sum0" ] || fail "a refused output changed the trace"
[ -e "$tmp/j/same.json" ] || [ -e "$tmp/j/s.out" ] && fail "a refused output was written"
no_tmp "$tmp/j"
# devices take any number of outputs
kvs_run replay 0 "$tmp/j/t.csv" -q --json /dev/null --requests /dev/null --summary-csv /dev/null

# ---- a read-only output names the real cause, for the superuser too -----------
echo keep >"$tmp/j/ro.csv"
chmod 444 "$tmp/j/ro.csv"
ro="cannot write: read-only file (mode 0444)"
kvs_run replay 1 "$tmp/j/t.csv" -q --summary-csv "$tmp/j/ro.csv" && has "$err" "--summary-csv: $tmp/j/ro.csv: $ro"
kvs_run compare 1 "$tmp/j/t.csv" -q --json "$tmp/j/ro.csv" && has "$err" "--json: $tmp/j/ro.csv: $ro"
kvs_run sweep 1 "$tmp/j/t.csv" -q --block-sizes 16 --csv "$tmp/j/ro.csv" && has "$err" "--csv: $tmp/j/ro.csv: $ro"
kvs_run trace 1 "$tmp/j/t.csv" --write "$tmp/j/ro.csv" && has "$err" "--write: $tmp/j/ro.csv: $ro"
kvs_run trace 1 "$tmp/j/t.csv" --json "$tmp/j/ro.csv" && has "$err" "--json: $tmp/j/ro.csv: $ro"
kvs_run size 1 --json "$tmp/j/ro.csv" && has "$err" "--json: $tmp/j/ro.csv: $ro"
kvs_run gen 1 --requests 3 -o "$tmp/j/ro.csv" && has "$err" "-o: $tmp/j/ro.csv: $ro"
[ "$(cat "$tmp/j/ro.csv")" = keep ] || fail "a read-only output was replaced"
if [ -r /proc/version ]; then
	kvs_run replay 1 "$tmp/j/t.csv" -q --summary-csv /proc/version
	has "$err" "--summary-csv: /proc/version: cannot write: read-only file" "/proc/version"
fi
# a writable file where no new file may be created beside it (the
# superuser's /proc/sys): the directory is named, not "No such file"
if [ "$(id -u)" = 0 ] && [ -w /proc/sys/kernel/hostname ]; then
	kvs_run replay 1 "$tmp/j/t.csv" -q --summary-csv /proc/sys/kernel/hostname
	has "$err" "its directory /proc/sys/kernel/ takes no new file" "/proc/sys"
fi
chmod 644 "$tmp/j/ro.csv"

# ---- lines a trace dropped are noted on stderr, -q or not ---------------------
(cat "$tmp/t.csv"; echo "99,abc,5,0,0,1,0"; echo "99,5,5,0,0,1,0") > "$tmp/skip.csv"
note="skipped 1 malformed line(s); first: $tmp/skip.csv:43: prompt_tokens"
for c in replay compare fleet sweep; do
	kvs_run "$c" 0 "$tmp/skip.csv" --skip-bad-lines -q --json "$tmp/j/skip-$c.json" &&
		has "$err" "kvsim $c: $note" "$c --skip-bad-lines note"
	grep -q '"skipped_bad_lines": 1' "$tmp/j/skip-$c.json" || fail "$c JSON counts the skipped line"
done
# read twice (fleet's search) and from standard input
kvs_run fleet 0 "$tmp/skip.csv" --skip-bad-lines -q --find-min-replicas --slo-ttft 10 &&
	has "$err" "kvsim fleet: $note" "fleet --find-min-replicas note"
kvs_run compare 0 - --skip-bad-lines -q <"$tmp/skip.csv" &&
	has "$err" "kvsim compare: skipped 1 malformed line(s)" "compare note from standard input"
kvs_run trace 0 "$tmp/skip.csv" --skip-bad-lines && has "$err" "kvsim trace: $note" "trace note"
kvs_run replay 0 "$S/burstgpt-sample.csv" -q &&
	has "$err" "kvsim replay: skipped 2 BurstGPT failure row(s)" "replay notes BurstGPT failures"
kvs_run replay 0 "$S/burstgpt-sample.csv" -q --keep-failed --json "$tmp/j/kf.json" && {
	[ -z "$err" ] || fail "replay --keep-failed -q: nothing on stderr: $err"
	# the kept failure rows are counted and said where they are counted
	has "$out" "(2 BurstGPT failure rows kept by --keep-failed: no output in the trace" "kept failures in the table"
	has "$out" "within completed, TTFT, end-to-end and goodput above)" "kept failures: where"
	grep -q '"kept_failed": 2' "$tmp/j/kf.json" || fail "replay JSON counts the kept failure rows"
}
kvs_run replay 0 "$S/burstgpt-sample.csv" -q --json "$tmp/j/nokf.json" &&
	! grep -q kept_failed "$tmp/j/nokf.json" || fail "replay JSON without --keep-failed: no kept_failed"
kvs_run replay 0 "$tmp/t.csv" -q --skip-bad-lines && [ -z "$err" ] ||
	fail "replay --skip-bad-lines -q of a clean trace: nothing on stderr: $err"

[ "$fails" -eq 0 ] || { echo "cli io: $fails failure(s)" >&2; exit 1; }
echo "cli io: ok"
