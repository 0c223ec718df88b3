#!/usr/bin/env bash
# kvsim report in a real browser: headless Chromium loads index.html from
# disk, takes a screenshot, and the page's own load check (an inline script
# that records on <body> how many images loaded with naturalWidth 0) must
# report no broken image.  A copy of the report with one PNG removed must be
# caught as broken, so the check itself is tested.  Exit 77 (skip) when no
# Chromium is installed (.ci/run installs Debian's `chromium`).
set -euo pipefail

: "${KVSIM:?KVSIM must point to the kvsim binary}"
: "${KVS_SOURCE_ROOT:?KVS_SOURCE_ROOT must point to the source tree}"

browser=""
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$(command -v "$b")
		break
	fi
done
if [ -z "$browser" ]; then
	echo "no chromium: browser test skipped"
	exit 77
fi

data="$KVS_SOURCE_ROOT/tests/data"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-browser.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# headless FLAGS... URL: a fresh profile per run, no sandbox (CI runs as
# root), virtual time so the load event has fired before the DOM is dumped
headless() {
	local profile
	profile=$(mktemp -d "$tmp/profile.XXXXXX")
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
		--no-first-run --no-default-browser-check --disable-extensions \
		--user-data-dir="$profile" --hide-scrollbars \
		--virtual-time-budget=10000 "$@" 2>>"$tmp/browser.log"
}

"$KVSIM" report "$data/compare.json" "$data/sweep.json" "$data/replay-min.json" \
	-o "$tmp/report" >/dev/null
imgs=$(grep -o '<img ' "$tmp/report/index.html" | wc -l)
[ "$imgs" -gt 0 ] || fail "the report has no images"
url="file://$tmp/report/index.html"

# 1. the DOM after load: every image decoded
headless --dump-dom "$url" >"$tmp/dom.html" || { cat "$tmp/browser.log" >&2; fail "chromium --dump-dom failed"; }
body=$(grep -o '<body[^>]*>' "$tmp/dom.html" | head -1)
echo "loaded: $body"
case "$body" in
*"data-images=\"$imgs\""*) ;;
*) fail "the load check did not run or saw the wrong number of images ($imgs expected): $body" ;;
esac
case "$body" in
*'data-images-broken="0"'*) ;;
*) fail "images failed to load: $body" ;;
esac

# 2. a screenshot of the page as a reader sees it
headless --window-size=1600,2400 --screenshot="$tmp/shot.png" "$url" >/dev/null ||
	{ cat "$tmp/browser.log" >&2; fail "chromium --screenshot failed"; }
[ -s "$tmp/shot.png" ] || fail "no screenshot written"
sig=$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a" ] || fail "screenshot is not a PNG"
[ "$(stat -c %s "$tmp/shot.png")" -gt 50000 ] || fail "screenshot suspiciously small (blank page?)"
if [ -n "${KVS_REPORT_SHOT:-}" ]; then
	cp "$tmp/shot.png" "$KVS_REPORT_SHOT"
fi

# 3. the check catches a missing figure
cp -r "$tmp/report" "$tmp/broken"
rm "$tmp/broken/run1-memory.png"
headless --dump-dom "file://$tmp/broken/index.html" >"$tmp/dom2.html" ||
	fail "chromium --dump-dom failed on the broken copy"
body=$(grep -o '<body[^>]*>' "$tmp/dom2.html" | head -1)
case "$body" in
*'data-images-broken="1"'*) ;;
*) fail "a missing PNG went unnoticed: $body" ;;
esac
grep -q 'figures failed to load' "$tmp/dom2.html" || fail "no visible warning for a missing figure"
echo "ok"
