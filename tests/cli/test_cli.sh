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

finish "cli"
