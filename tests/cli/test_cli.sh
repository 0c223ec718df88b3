#!/usr/bin/env bash
# CLI tests of the kvsim front door: version, help for every command, unknown
# commands and flags, and flags whose value is missing.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

expect 0 '^kvsim [0-9]+\.[0-9]+\.[0-9]+$' --version
expect 0 'usage: kvsim COMMAND' --help
expect 0 'usage: kvsim COMMAND' help
expect 2 'usage: kvsim COMMAND'
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "unknown command 'frobnicate'" help frobnicate
for c in size trace gen replay compare fleet sweep report; do
	expect 0 "$c" help "$c"
	cp "$tmp/out" "$tmp/help-cmd"
	expect 0 '--help' "$c" --help
	grep -qi 'usage' "$tmp/out" || fail "kvsim $c --help prints no usage line"
	cmp -s "$tmp/out" "$tmp/help-cmd" || fail "kvsim help $c differs from kvsim $c --help"
	expect 0 '--help' "$c" -h
	cmp -s "$tmp/out" "$tmp/help-cmd" || fail "kvsim $c -h differs from kvsim $c --help"
	expect 2 "unknown option '--no-such-flag'" "$c" --no-such-flag
done
# a flag followed by another flag has no value: refused, never swallowed
expect 2 '--json=: empty file name' replay --json= --limit 5
expect 2 '--report: missing value' compare --report --limit 5
expect 2 '--max-num-seqs: expected a non-negative integer' replay --max-num-seqs abc
expect 2 '--max-num-seqs' replay --max-num-seqs 0
expect 2 '--gpu-mem' size --gpu-mem 80
# boolean flags take no value; "--flag=value" is refused, never ignored
expect 2 '--json=: empty file name' size --json=
expect 2 '--csv=: empty file name' sweep --csv=
expect 2 '--quiet takes no value' replay --quiet=1
expect 2 '--hashes takes no value' gen --hashes=0
# numbers: NaN, infinity, hex and past 2^64 are refused with the flag named
for v in nan inf 0x10 18446744073709551616 -1 ''; do
	expect 2 '--max-num-seqs' replay --max-num-seqs "$v"
	expect 2 '--watermark' compare --watermark "$v"
	expect 2 '--limit' trace --limit "$v"
	expect 2 '--context' size --context "$v"
done
# results that cannot reach standard output fail, for every command
if [ -w /dev/full ]; then
	for c in size trace gen; do
		"$KVSIM" "$c" >/dev/full 2>"$tmp/err"
		[ $? -eq 1 ] || fail "kvsim $c to a full stdout does not exit 1"
		grep -q 'write failed' "$tmp/err" || fail "kvsim $c to a full stdout: $(cat "$tmp/err")"
	done
	# and the top-level help and version too
	for a in --help help --version "size --help"; do
		"$KVSIM" $a >/dev/full 2>"$tmp/err"
		[ $? -eq 1 ] || fail "kvsim $a to a full stdout does not exit 1"
		grep -q 'write failed: No space left on device' "$tmp/err" ||
			fail "kvsim $a to a full stdout: $(cat "$tmp/err")"
	done
	# a trace written to a full device names the reason, not a stale errno
	"$KVSIM" trace --limit 20 --write /dev/full >/dev/null 2>"$tmp/err"
	[ $? -eq 1 ] || fail "trace --write /dev/full does not exit 1"
	grep -q '/dev/full: write failed: No space left on device' "$tmp/err" ||
		fail "trace --write /dev/full: $(cat "$tmp/err")"
fi

finish "cli"
