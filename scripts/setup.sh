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
	meson setup "$build" "$@" >/dev/null
fi
meson compile -C "$build" >/dev/null || meson compile -C "$build"
echo "setup: built $build/cli/kvsim" >&2
