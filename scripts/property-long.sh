#!/usr/bin/env bash
# The long run of the differential property test (tests/test_property.c):
# many generated cases, each replayed under every policy, fast path and
# one token at a time, with the validators at every step.  Prints every
# seed and its verdict, then a summary; exits non-zero when a case fails.
#
#   scripts/property-long.sh                  1500 cases from seed 1000
#   scripts/property-long.sh --cases N --first S
#   scripts/property-long.sh --seed S         rerun one case, verbosely
#
# KVS_BUILD_DIR selects the build directory (default ./build; a
# -Ddebug_checks=2 build adds the allocator's own checks at every call).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${KVS_BUILD_DIR:-build}"
exe="$build/tests/test_property"
if [ ! -x "$exe" ]; then
	[ -d "$build" ] || scripts/setup.sh
	ninja -C "$build" tests/test_property >/dev/null
fi
first=1000 cases=1500 seed=
while [ $# -gt 0 ]; do
	case "$1" in
	--first) first="$2"; shift 2 ;;
	--cases) cases="$2"; shift 2 ;;
	--seed) seed="$2"; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "property-long.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
if [ -n "$seed" ]; then
	exec "$exe" --seed "$seed"
fi
start=$(date +%s)
rc=0
"$exe" --first "$first" --cases "$cases" || rc=$?
echo "property-long: $cases cases in $(( $(date +%s) - start )) s; rerun a failing one with --seed S"
exit $rc
