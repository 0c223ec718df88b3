#!/usr/bin/env bash
# Install what the build needs (Debian packages, idempotent), configure and
# build kvsim into ./build (or $KVS_BUILD_DIR).  Extra meson options may be
# passed as arguments on the first configure.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(meson ninja-build pkg-config gcc libc6-dev
      libjemalloc-dev libcmocka-dev libjansson-dev libcsv-dev libcairo2-dev libjs-chart.js)
if [ -n "${KVS_EXTRA_PACKAGES:-}" ]; then
	read -r -a extra <<<"$KVS_EXTRA_PACKAGES"
	pkgs+=("${extra[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build="${KVS_BUILD_DIR:-build}"
if [ ! -f "$build/build.ninja" ]; then
	echo "setup: configuring $build" >&2
	meson setup "$build" "$@" >/dev/null
fi
# ninja's [N/M] lines become a progress line every 10% (the first build,
# CUDA kernels included, takes minutes); the whole log is kept and shown
# when the build fails.
log="$build/meson-logs/compile.log"
mkdir -p "$build/meson-logs"
if ! meson compile -C "$build" 2>&1 | tee "$log" | awk '
	/^\[[0-9]+\/[0-9]+\]/ {
		split(substr($1, 2), a, /[\/\]]/)
		pct = int(100 * a[1] / a[2])
		if (a[2] > 1 && pct >= next_pct) {
			printf "setup: compiling %d/%d (%d%%)\n", a[1], a[2], pct > "/dev/stderr"
			next_pct = pct - pct % 10 + 10
		}
	}'; then
	cat "$log" >&2
	exit 1
fi
echo "setup: built $build/cli/kvsim" >&2
