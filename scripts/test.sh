#!/usr/bin/env bash
# Build (via scripts/setup.sh) and run every test.  Prints meson's results
# and a closing "N passed, N failed, N skipped" line; exits non-zero when a
# test fails.  KVS_BUILD_DIR selects the build directory (default ./build).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${KVS_BUILD_DIR:-build}"
scripts/setup.sh "$@"
rc=0
meson test -C "$build" --print-errorlogs --num-processes 2 || rc=$?
log="$build/meson-logs/testlog.json"
if [ -f "$log" ]; then
	pass=$(grep -c '"result": "OK"' "$log" || true)
	fail=$(grep -cE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
	skip=$(grep -c '"result": "SKIP"' "$log" || true)
	echo "tests: $pass passed, $fail failed, $skip skipped"
fi
exit $rc
