#!/usr/bin/env bash
# kvsim report in a real browser, with no network.  Headless Chromium loads
# index.html from disk and the page's own script records on <body> what it
# did; the test reads the dumped DOM:
#   1. every interactive chart drew, with all its points, and no script
#      error: data-charts == data-charts-ok == the number of chart specs;
#   2. hovering a point (#selftest: the page sends a real mousemove to the
#      middle point of its first chart) shows a tooltip with that point's
#      value, checked against the value in the page's JSON spec; dragging
#      across the first zoomable chart zooms its x axis, a double-click
#      zooms back out;
#   3. the dark theme follows the system setting (--force-dark-mode);
#   4. the static figures (--static) all decode, and a copy with one PNG
#      removed is caught (data-images-broken="1" and a visible warning);
#   5. a screenshot is a non-trivial PNG (KVS_REPORT_SHOT=FILE keeps it).
# Exit 77 (skip) when no Chromium is installed (.ci/run installs Debian's
# `chromium`).
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
if ! command -v python3 >/dev/null 2>&1; then
	echo "no python3: browser test skipped"
	exit 77
fi

data="$KVS_SOURCE_ROOT/tests/data"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-browser.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# headless FLAGS... URL: a fresh profile per run, no sandbox (CI runs as
# root), no network (every host name fails to resolve, every proxy
# connection is refused), virtual time so the load event and the hover
# have run before the DOM is dumped
headless() {
	local profile
	profile=$(mktemp -d "$tmp/profile.XXXXXX")
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
		--no-first-run --no-default-browser-check --disable-extensions \
		--host-resolver-rules='MAP * ~NOTFOUND' --proxy-server='127.0.0.1:9' \
		--user-data-dir="$profile" --hide-scrollbars \
		--virtual-time-budget=10000 "$@" 2>>"$tmp/browser.log"
}
body_of() { grep -o '<body[^>]*>' "$1" | head -1; }

"$KVSIM" report "$data/compare.json" "$data/sweep.json" "$data/replay-min.json" \
	-o "$tmp/report" >/dev/null
page="$tmp/report/index.html"
grep -q '<script src=' "$page" && fail "the page loads a script from elsewhere"
specs=$(grep -o 'class="kvs-chart">' "$page" | wc -l)
[ "$specs" -gt 0 ] || fail "the report has no interactive chart"
if ! grep -q 'Chart.js v' "$page"; then
	echo "this build has no chart library (-Dchartjs=none or libjs-chart.js missing): chart checks skipped"
	exit 77
fi

# 1 + 2. charts drawn, a point hovered
headless --dump-dom "file://$page#selftest" >"$tmp/dom.html" ||
	{ cat "$tmp/browser.log" >&2; fail "chromium --dump-dom failed"; }
body=$(body_of "$tmp/dom.html")
echo "loaded: ${body:0:600}"
case "$body" in *"data-charts=\"$specs\""*) ;;
*) fail "the page script did not run or saw the wrong number of charts ($specs expected)" ;; esac
case "$body" in *"data-charts-ok=\"$specs\""*) ;;
*) fail "not every chart drew all its points: $body" ;; esac
case "$body" in *'data-script-errors="0"'*) ;;
*) fail "script errors: $body" ;; esac
python3 - "$page" "$tmp/dom.html" <<'EOF' || fail "the hovered value does not match the data"
import html, json, re, sys
page, dom = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read()
body = re.search(r"<body[^>]*>", dom).group(0)
attr = {k: html.unescape(v) for k, v in re.findall(r'(data-[a-z-]+)="([^"]*)"', body)}
fig, series, index = attr["data-hover-chart"], int(attr["data-hover-series"]), int(attr["data-hover-index"])
tip, want = attr.get("data-hover", ""), attr["data-hover-expect"]
assert tip, "no tooltip after the hover: %r" % attr
assert want in tip, ("tooltip", tip, "lacks", want)
spec = json.loads(re.search(r'<figure[^>]* id="%s"><script type="application/json" class="kvs-chart">(.*?)</script>'
                            % re.escape(fig), page, re.S).group(1))
s = spec["series"][series]
y = s["data"][2 * index + (0 if spec.get("tip") == "cdf" else 1)]  # a CDF shows x
label, shown = want.rsplit(": ", 1)
assert label == s["name"], (label, s["name"])
num = float(re.match(r"[<]?([0-9.,]+)", shown).group(1).replace(",", ""))
unit = shown.split(" ")[-1] if " " in shown else ""
scale = {"ms": 1e-3, "µs": 1e-6, "min": 60, "h": 3600}.get(unit, 1)
assert abs(num * scale - y) <= 0.006 * abs(y) + 1e-12, (shown, y)
print("hovered %s / %s point %d: tooltip '%s' (data %g)" % (fig, s["name"], index, tip[:80], y))
# a drag from 1/4 to 1/2 of the first zoomable chart zooms its x axis to
# about that quarter; a double-click restores the whole range
z = json.loads(attr["data-zoom"])
(b0, b1), (z0, z1), (r0, r1) = z["before"], z["zoomed"], z["reset"]
assert b0 < z0 < z1 < b1, ("zoom", z)
assert (r0, r1) == (b0, b1), ("reset", z)
print("zoomed %s: [%g, %g] -> [%g, %g] -> [%g, %g]" % (z["chart"], b0, b1, z0, z1, r0, r1))
EOF

# 3. the dark theme follows the system setting
headless --force-dark-mode --dump-dom "file://$page" >"$tmp/dark.html" ||
	fail "chromium --dump-dom (dark) failed"
case "$(body_of "$tmp/dark.html")" in *'data-theme="dark"'*) ;;
*) fail "the page did not follow the dark system setting" ;; esac
case "$(body_of "$tmp/dom.html")" in *'data-theme="light"'*) ;;
*) fail "the page is not light by default" ;; esac

# 4. the static figures: all decode; one missing is caught
"$KVSIM" report "$data/compare.json" "$data/sweep.json" "$data/replay-min.json" \
	--static -o "$tmp/static" >/dev/null
imgs=$(grep -o '<img ' "$tmp/static/index.html" | wc -l)
[ "$imgs" -gt 0 ] || fail "--static shows no image"
headless --dump-dom "file://$tmp/static/index.html" >"$tmp/dom-static.html" ||
	fail "chromium --dump-dom failed on the --static page"
body=$(body_of "$tmp/dom-static.html")
case "$body" in *"data-images=\"$imgs\""*) ;;
*) fail "the load check saw the wrong number of images ($imgs expected): $body" ;; esac
case "$body" in *'data-images-broken="0"'*) ;;
*) fail "images failed to load: $body" ;; esac
case "$body" in *"data-charts-ok=\"$specs\""*) ;;
*) fail "--static lost interactive charts: $body" ;; esac
cp -r "$tmp/static" "$tmp/broken"
rm "$tmp/broken/run1-memory.png"
headless --dump-dom "file://$tmp/broken/index.html" >"$tmp/dom2.html" ||
	fail "chromium --dump-dom failed on the broken copy"
case "$(body_of "$tmp/dom2.html")" in *'data-images-broken="1"'*) ;;
*) fail "a missing PNG went unnoticed" ;; esac
grep -q 'figures failed to load' "$tmp/dom2.html" || fail "no visible warning for a missing figure"

# 5. a screenshot of the page as a reader sees it
headless --window-size=1600,2400 --screenshot="$tmp/shot.png" "file://$page" >/dev/null ||
	{ cat "$tmp/browser.log" >&2; fail "chromium --screenshot failed"; }
[ -s "$tmp/shot.png" ] || fail "no screenshot written"
sig=$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a" ] || fail "screenshot is not a PNG"
[ "$(stat -c %s "$tmp/shot.png")" -gt 50000 ] || fail "screenshot suspiciously small (blank page?)"
if [ -n "${KVS_REPORT_SHOT:-}" ]; then
	cp "$tmp/shot.png" "$KVS_REPORT_SHOT"
fi
echo "ok"
