#!/usr/bin/env bash
# CLI tests of the kvsim front door: version, help for every command, unknown
# commands and flags, and flags whose value is missing.
set -u
KVSIM="${KVSIM:?KVSIM must point at the kvsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect RC PATTERN ARGS...: exit code RC and PATTERN in stdout+stderr
expect() {
	local want=$1 pat=$2
	shift 2
	"$KVSIM" "$@" >"$tmp/out" 2>&1
	local rc=$?
	[ "$rc" -eq "$want" ] || fail "kvsim $* exited $rc, expected $want: $(head -c 400 "$tmp/out")"
	grep -qE -- "$pat" "$tmp/out" || fail "kvsim $*: no '$pat' in: $(head -c 400 "$tmp/out")"
}

expect 0 '^kvsim [0-9]+\.[0-9]+\.[0-9]+$' --version
expect 0 'usage: kvsim COMMAND' --help
expect 0 'usage: kvsim COMMAND' help
expect 2 'usage: kvsim COMMAND'
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "unknown command 'frobnicate'" help frobnicate
for c in size trace gen replay compare sweep report; do
	expect 0 "$c" help "$c"
	expect 0 '--help' "$c" --help
	grep -qi 'usage' "$tmp/out" || fail "kvsim $c --help prints no usage line"
	expect 2 "unknown option '--no-such-flag'" "$c" --no-such-flag
done
# a flag followed by another flag has no value: refused, never swallowed
expect 2 '--json: missing value' replay --json --limit 5
expect 2 '--report: missing value' compare --report --limit 5
expect 2 '--max-num-seqs: expected a non-negative integer' replay --max-num-seqs abc
expect 2 '--max-num-seqs' replay --max-num-seqs 0
expect 2 '--gpu-mem' size --gpu-mem 80

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)" >&2
	exit 1
fi
echo "cli: all checks passed"
