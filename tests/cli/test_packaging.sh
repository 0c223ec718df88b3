#!/usr/bin/env bash
# The library split: the core libkvsim (sizing, allocators, traces,
# simulator, sweep) links neither CUDA nor cairo, and its pkg-config file
# lists neither; a program built with `pkg-config kvsim` alone (the build's
# uninstalled .pc) links and computes a figure; libkvsim-kernels and
# libkvsim-report have their own .pc files, on the core.
# Needs $KVS_BUILD_ROOT and $KVS_SOURCE_ROOT.
set -u
ROOT="${KVS_SOURCE_ROOT:?}"
B="${KVS_BUILD_ROOT:?}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

core_pc="$B/meson-private/kvsim.pc"
[ -f "$core_pc" ] || fail "no $core_pc"
grep -E '^(Requires|Libs)' "$core_pc" | grep -Eiq 'cuda|cairo|fontconfig|stdc\+\+' && fail "kvsim.pc lists CUDA, cairo or libstdc++: $(cat "$core_pc")"
for p in kvsim-kernels kvsim-report; do
	[ -f "$B/meson-private/$p.pc" ] || fail "no $p.pc"
	grep -q '^Requires: kvsim' "$B/meson-private/$p.pc" || fail "$p.pc requires the core"
done
grep -q -- '-lkvsim-report' "$B/meson-private/kvsim-report.pc" || fail "kvsim-report.pc links -lkvsim-report"
if grep -q 'KVS_HAVE_CAIRO 1' "$B/kvs_config.h"; then
	grep -q 'cairo' "$B/meson-private/kvsim-report.pc" || fail "kvsim-report.pc names cairo"
fi
if grep -q 'KVS_HAVE_CUDA 1' "$B/kvs_config.h"; then
	grep -q -- '-lcudart' "$B/meson-private/kvsim-kernels.pc" || fail "kvsim-kernels.pc names cudart"
fi

# what the core library itself needs
if command -v readelf >/dev/null 2>&1; then
	needed=$(readelf -d "$B/libkvsim.so" | grep NEEDED)
	case "$needed" in *cudart* | *cairo* | *fontconfig*) fail "libkvsim.so needs CUDA or cairo: $needed" ;; esac
	has "$(readelf -d "$B/libkvsim-report.so" | grep NEEDED)" "libkvsim.so" "libkvsim-report on the core"
fi

# a program sizing a model, built against the core's .pc only
cat >"$tmp/core.c" <<'C'
#include <stdio.h>
#include <kvsim/kvsim.h>
int main(int argc, char **argv)
{
	kvs_model m;
	uint64_t b = 0;
	if (argc < 2 || kvs_model_load(argv[1], &m) != KVS_OK ||
	    kvs_kv_bytes_per_token(&m, KVS_DTYPE_BF16, 0, 1, 1, &b) != KVS_OK) {
		fprintf(stderr, "%s\n", kvs_last_error());
		return 1;
	}
	printf("%llu\n", (unsigned long long)b);
	return 0;
}
C
if command -v pkg-config >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; then
	export PKG_CONFIG_PATH="$B/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
	san=()   # a sanitizer build's library needs its runtime loaded first
	readelf -d "$B/libkvsim.so" 2>/dev/null | grep -q libasan && san+=(-fsanitize=address)
	readelf -d "$B/libkvsim.so" 2>/dev/null | grep -q libubsan && san+=(-fsanitize=undefined)
	if cc -std=c11 ${san[@]+"${san[@]}"} "$tmp/core.c" -o "$tmp/core" $(pkg-config --cflags --libs kvsim) \
		-Wl,-rpath,"$B" 2>"$tmp/cc.err"; then
		# llama-3-8b: 32 layers x 8 KV heads x 128 x (K and V) x 2 bytes
		got=$("$tmp/core" "$ROOT/sizing/presets/models/llama-3-8b.json")
		[ "$got" = 131072 ] || fail "core program: $got bytes per token, expected 131072"
		if command -v readelf >/dev/null 2>&1; then
			n=$(readelf -d "$tmp/core" | grep NEEDED)
			case "$n" in *kvsim-kernels* | *kvsim-report* | *cudart* | *cairo*) fail "core program needs $n" ;; esac
		fi
	else
		fail "a program using only kvsim.pc does not build: $(head -c 600 "$tmp/cc.err")"
	fi
fi
finish "packaging"
