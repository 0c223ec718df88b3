#!/usr/bin/env bash
# docs/VALIDATION.md is what scripts/validation.sh prints with this build:
# every published figure in it is the current code's.  Also checks the
# acceptance bounds of the table: the vLLM 0.19 capacity lines within 3%.
# Needs $KVSIM and $KVS_SOURCE_ROOT.
set -u
ROOT="${KVS_SOURCE_ROOT:?}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# the table includes rows computed from ../shared/profiles: without it the
# file cannot be regenerated identically
if [ ! -d "$ROOT/../shared/profiles/vidur/compute" ]; then
	echo "skip: ../shared/profiles is absent"
	exit 77
fi

if ! bash "$ROOT/scripts/validation.sh" "$KVSIM" >"$tmp/validation.md" 2>"$tmp/err"; then
	fail "scripts/validation.sh failed: $(head -c 600 "$tmp/err")"
elif ! diff -u "$ROOT/docs/VALIDATION.md" "$tmp/validation.md" >"$tmp/diff"; then
	fail "docs/VALIDATION.md is out of date; run scripts/validation.sh > docs/VALIDATION.md:
$(head -40 "$tmp/diff")"
fi

# the tuned-against rows: GPU KV cache size within 3% (column 6 is the error)
n=0
while IFS='|' read -r _ src cfg what pub kv e _; do
	case "$what" in *"GPU KV cache size"*) ;; *) continue ;; esac
	n=$((n + 1))
	e=${e// /}
	awk -v e="${e%\%}" 'BEGIN { exit !(e <= 3 && e >= -3) }' ||
		fail "capacity row off by more than 3%: $what $pub vs $kv ($e)"
done <"$tmp/validation.md"
[ "$n" -eq 2 ] || fail "expected the two vLLM 0.19 capacity rows, found $n"
finish "cli validation"
