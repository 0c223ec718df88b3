#!/usr/bin/env bash
# kvsim report: usage errors, bad input, and a full report from the fixtures
# (and from a tiny replay and compare when the build has them) in which every
# file is non-empty and valid: SVG parses as XML, PNG has its signature and
# the size asked for, index.html references only files that exist.
set -euo pipefail

: "${KVSIM:?KVSIM must point to the kvsim binary}"
: "${KVS_SOURCE_ROOT:?KVS_SOURCE_ROOT must point to the source tree}"
data="$KVS_SOURCE_ROOT/tests/data"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-report-sh.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_exit CODE CMD...: run, capture stderr in $tmp/err, check the code
expect_exit() {
	local want=$1; shift
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	set -e
	[ "$got" -eq "$want" ] || { cat "$tmp/err" >&2; fail "'$*' exited $got, want $want"; }
}

have_python=0
if command -v python3 >/dev/null 2>&1; then have_python=1; fi

# check_dir DIR [static]: every figure and the page are valid; prints the
# figure count.  The page is one file: every chart spec is JSON with data,
# no script comes from elsewhere, each PNG is linked once, and shown as an
# <img> only with --static.
check_dir() {
	local dir=$1 mode=${2:-} n=0
	[ -s "$dir/index.html" ] || fail "$dir/index.html missing or empty"
	for svg in "$dir"/*.svg; do
		[ -s "$svg" ] || fail "$svg empty"
		png=${svg%.svg}.png
		[ -s "$png" ] || fail "$png missing or empty"
		sig=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
		[ "$sig" = "89504e470d0a1a0a" ] || fail "$png: not a PNG (signature $sig)"
		n=$((n + 1))
	done
	if [ "$have_python" = 1 ]; then
		python3 - "$dir" "$mode" <<'EOF' || fail "$dir: validation failed"
import glob, json, os, re, struct, sys
import xml.etree.ElementTree as ET
d, mode = sys.argv[1], sys.argv[2]
for svg in sorted(glob.glob(os.path.join(d, "*.svg"))):
    root = ET.parse(svg).getroot()          # raises on malformed XML
    assert root.tag.endswith("svg"), (svg, root.tag)
    assert root.get("width") and root.get("height"), svg
for png in sorted(glob.glob(os.path.join(d, "*.png"))):
    with open(png, "rb") as f:
        head = f.read(24)
    w, h = struct.unpack(">II", head[16:24])    # IHDR width, height
    assert head[12:16] == b"IHDR" and w >= 320 and h >= 180, (png, w, h)
html = open(os.path.join(d, "index.html"), encoding="utf-8").read()
refs = re.findall(r'(?:src|href)="([^"#][^"]*)"', html)
assert refs, "index.html references no figure"
for r in refs:
    assert "://" not in r and not r.startswith("/"), ("not local", r)
    p = os.path.join(d, r)
    assert os.path.isfile(p) and os.path.getsize(p) > 0, ("missing", r)
imgs = re.findall(r'<img [^>]*src="([^"]+)"', html)
pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.png")))
linked = sorted(set(re.findall(r'href="([^"]+\.png)"', html)))
assert linked == pngs, ("every PNG is linked", linked, pngs)
if mode == "static" or "Chart.js v" not in html:  # no chart library: images
    assert sorted(imgs) == pngs, ("every PNG is shown once", imgs, pngs)
else:
    assert imgs == [], ("the page shows no image file without --static", imgs)
assert "<script src" not in html, "a script from elsewhere"
specs = re.findall(r'<script type="application/json" class="kvs-chart">(.*?)</script>', html, re.S)
assert specs or not pngs, "no interactive chart"
for s in specs:
    spec = json.loads(s)
    assert spec["series"] and any(len(x["data"]) >= 2 for x in spec["series"]), spec["title"]
    for x in spec["series"]:
        assert len(x["data"]) % 2 == 0, (spec["title"], x["name"])
EOF
	fi
	echo "$n"
}

# ---- usage ------------------------------------------------------------------
expect_exit 0 "$KVSIM" report --help
grep -q -- "-o, --output DIR" "$tmp/out" || fail "--help lacks -o"
expect_exit 0 "$KVSIM" help report
expect_exit 2 "$KVSIM" report
grep -q "no input" "$tmp/err" || fail "no-input message: $(cat "$tmp/err")"
expect_exit 2 "$KVSIM" report "$data/compare.json"
grep -q "\-o DIR" "$tmp/err" || fail "missing -o message: $(cat "$tmp/err")"
expect_exit 2 "$KVSIM" report "$data/compare.json" -o "$tmp/x" --frobnicate
grep -q "unknown option '--frobnicate'" "$tmp/err" || fail "unknown flag message"
expect_exit 2 "$KVSIM" report "$data/compare.json" -o "$tmp/x" --width 12
expect_exit 2 "$KVSIM" report "$data/compare.json" -o
[ ! -e "$tmp/x" ] || fail "usage errors must not write anything"

# ---- bad input: exit 1, message names the file and the key or position ------
expect_exit 1 "$KVSIM" report "$tmp/nope.json" -o "$tmp/x"
grep -q "nope.json: cannot open" "$tmp/err" || fail "missing file message: $(cat "$tmp/err")"
# '-' is standard input, once
"$KVSIM" report - -o "$tmp/stdin" <"$data/compare.json" >/dev/null 2>"$tmp/err" ||
	fail "report - from standard input: $(cat "$tmp/err")"
[ -s "$tmp/stdin/index.html" ] || fail "report -: no page"
expect_exit 1 "$KVSIM" report - - -o "$tmp/x2"
grep -q "standard input given twice" "$tmp/err" || fail "two '-' unclear: $(cat "$tmp/err")"
mkdir -p "$tmp/adir"
expect_exit 1 "$KVSIM" report "$tmp/adir" -o "$tmp/x"
grep -q "adir: cannot read: is a directory" "$tmp/err" || fail "directory input unclear: $(cat "$tmp/err")"
printf '{\n "command": "replay",\n "policies": {\n' >"$tmp/trunc.json"
expect_exit 1 "$KVSIM" report "$tmp/trunc.json" -o "$tmp/x"
grep -q "trunc.json: line 4, column" "$tmp/err" || fail "truncated JSON message: $(cat "$tmp/err")"
sed 's/"arrived": 1200/"arrivd": 1200/' "$data/compare.json" >"$tmp/key.json"
expect_exit 1 "$KVSIM" report "$data/sweep.json" "$tmp/key.json" -o "$tmp/x"
grep -q "key.json: policies.max.accounting.arrived: missing required key" "$tmp/err" ||
	fail "missing key message: $(cat "$tmp/err")"
[ ! -e "$tmp/x" ] || fail "a bad input must leave no output"
# a percentage past the whole is no run's
sed '0,/"waste_pct": [0-9.e+-]*/s//"waste_pct": 150/' "$data/sweep.json" >"$tmp/pct.json"
expect_exit 1 "$KVSIM" report "$tmp/pct.json" -o "$tmp/x"
grep -q "pct.json: rows\[0\].waste_pct: 150 is above 100 (a percentage of the whole)" "$tmp/err" ||
	fail "percentage over 100 message: $(cat "$tmp/err")"

# ---- fixtures ------------------------------------------------------------------
expect_exit 0 "$KVSIM" report "$data/compare.json" -o "$tmp/one"
[ ! -s "$tmp/err" ] || fail "no progress output when stderr is not a terminal: $(cat "$tmp/err")"
n=$(check_dir "$tmp/one")
[ "$n" -eq 5 ] || fail "compare fixture: $n figures, want 5"
for f in memory requests cdf-queue-delay cdf-ttft cdf-tpot; do
	[ -s "$tmp/one/$f.svg" ] && [ -s "$tmp/one/$f.png" ] || fail "$f missing"
done

expect_exit 0 "$KVSIM" report "$data/compare.json" "$data/sweep.json" \
	"$data/replay-min.json" -o "$tmp/multi/nested" --title "Fixture report" \
	--width 1280 --height 720 --quiet --static
n=$(check_dir "$tmp/multi/nested" static)
[ "$n" -eq 9 ] || fail "multi-run report: $n figures, want 9"
grep -q "<title>Fixture report</title>" "$tmp/multi/nested/index.html" || fail "--title"
grep -q 'width="1280" height="720"' "$tmp/multi/nested/index.html" || fail "--width/--height"

# a sweep saved before two row keys were renamed (docs/REPORT-JSON.md) renders
# the same page as the same sweep with the current keys
mkdir -p "$tmp/keys-old" "$tmp/keys-new"
cp "$data/sweep.json" "$tmp/keys-new/sweep.json"
sed -e 's/"metadata_bytes_max":/"metadata_bytes":/g' \
    -e 's/"prefix_hit_rate_tokens":/"prefix_hit_rate":/g' \
	"$data/sweep.json" >"$tmp/keys-old/sweep.json"
grep -q '"prefix_hit_rate":' "$tmp/keys-old/sweep.json" || fail "old-key sweep not made"
! grep -q '"metadata_bytes_max":' "$tmp/keys-old/sweep.json" || fail "old-key sweep not made"
for d in keys-old keys-new; do
	(cd "$tmp/$d" && "$KVSIM" report sweep.json -o out --quiet) ||
		fail "$d: kvsim report failed"
done
for f in "$tmp/keys-new/out/"*; do
	cmp -s "$f" "$tmp/keys-old/out/$(basename "$f")" ||
		fail "old row keys render differently: $(basename "$f")"
done
grep -q "block tables" "$tmp/keys-old/out/index.html" || fail "metadata column missing"

# ---- the output directory changes as a whole -----------------------------------
# The previous report is one run with five figures; the new one three runs
# with fourteen, drawn large so that drawing takes a few seconds (smaller
# under sanitizers, which are slower anyway).  Whatever happens, the
# directory is the one or the other, whole (diff -r against a copy of each),
# and no staging directory (".w.kvsim-XXXXXX") is left beside it.
big=(--width 3200 --height 1800)
case "${KVS_TEST_SCALE:-1}" in 1 | 1.0) ;; *) big=(--width 1600 --height 900) ;; esac
big=(report "$data/compare.json" "$data/sweep.json" "$data/replay-min.json" "${big[@]}" --quiet)
expect_exit 0 "$KVSIM" report "$data/compare.json" -o "$tmp/w-old"
expect_exit 0 "$KVSIM" "${big[@]}" -o "$tmp/w-new"

no_debris() {
	! ls -a "$tmp" | grep -q 'kvsim-' || fail "$1: staging left behind: $(ls -a "$tmp" | grep kvsim-)"
}
# is_whole: prints old or new, or fails
is_whole() {
	if diff -r "$tmp/w" "$tmp/w-old" >/dev/null 2>&1; then echo old
	elif diff -r "$tmp/w" "$tmp/w-new" >/dev/null 2>&1; then echo new
	else fail "$1: the directory is neither report: $(diff -rq "$tmp/w" "$tmp/w-old" | head -5)"
	fi
}
# bg_report: the new report into $tmp/w in the background, with job control
# so that it keeps SIGINT; its pid in $pid
bg_report() {
	set -m
	"$KVSIM" "${big[@]}" -o "$tmp/w" >"$tmp/bg.out" 2>"$tmp/bg.err" &
	pid=$!
	set +m
}
# wait_staged: until a figure is drawn in the staging directory (mid-way)
wait_staged() {
	local i
	for i in $(seq 1 1500); do
		compgen -G "$tmp/.w.kvsim-*/*.png" >/dev/null && return 0
		sleep 0.02
	done
	fail "no figure drawn in a staging directory"
}
# stop SIGNAL...: each signal to $pid, 0.01 s apart; its exit status in $rc
stop() {
	local s
	for s in "$@"; do
		kill -"$s" "$pid" 2>/dev/null || true
		sleep "${stop_gap:-0.01}"
	done
	set +e
	wait "$pid"
	rc=$?
	set -e
}

# the normal path: over the previous report, exactly the new one, and back
# (the figures the page no longer links are gone)
cp -a "$tmp/w-old" "$tmp/w"
expect_exit 0 "$KVSIM" "${big[@]}" -o "$tmp/w"
[ "$(is_whole "report over a previous one")" = new ] || fail "a report over a previous one is not the new one"
expect_exit 0 "$KVSIM" report "$data/compare.json" -o "$tmp/w/"
[ "$(is_whole "report back")" = old ] || fail "stale figures left beside the report"
no_debris "normal path"

# Ctrl-C once a figure is drawn: exit 130, the previous report as it was
bg_report
wait_staged
stop INT
[ "$rc" -eq 130 ] || fail "interrupted report exits 130 (got $rc): $(cat "$tmp/bg.err")"
grep -q "kvsim report: interrupted: .*/w left as it was" "$tmp/bg.err" ||
	fail "interruption message: $(cat "$tmp/bg.err")"
[ "$(is_whole "Ctrl-C")" = old ] || fail "Ctrl-C: the previous report changed"
[ ! -s "$tmp/bg.out" ] || fail "Ctrl-C: 'wrote' printed"
no_debris "Ctrl-C"

# a second Ctrl-C (a quarter second or more after the first: closer, it
# is the same stop delivered twice) ends it at once, removing what it had
# drawn
bg_report
wait_staged
stop_gap=0.3 stop INT INT
[ "$rc" -eq 130 ] || fail "report stopped by a second Ctrl-C exits 130 (got $rc)"
[ "$(is_whole "second Ctrl-C")" = old ] || fail "second Ctrl-C: the previous report changed"
no_debris "second Ctrl-C"

# killed: the staging directory stays (nothing can remove it), the previous
# report is whole, and the next report into the directory removes it
bg_report
wait_staged
stop KILL
[ "$(is_whole "SIGKILL")" = old ] || fail "SIGKILL: the previous report changed"
ls -a "$tmp" | grep -q '^\.w\.kvsim-' || fail "SIGKILL: expected the staging directory to stay"
expect_exit 0 "$KVSIM" report "$data/compare.json" -o "$tmp/w"
[ "$(is_whole "after SIGKILL")" = old ] || fail "report after SIGKILL"
no_debris "the next report after SIGKILL"

# Ctrl-C at any moment: the one report or the other, whole
for d in 0.3 1.5 2.8; do
	rm -rf "$tmp/w"
	cp -a "$tmp/w-old" "$tmp/w"
	bg_report
	sleep "$d"
	stop INT
	case "$rc" in 0 | 130) ;; *) fail "Ctrl-C after $d s: exit $rc: $(cat "$tmp/bg.err")" ;; esac
	got=$(is_whole "Ctrl-C after $d s")
	[ "$rc" -eq 0 ] && [ "$got" != new ] && fail "exit 0 without the new report"
	echo "Ctrl-C after $d s: exit $rc, the $got report"
	no_debris "Ctrl-C after $d s"
done
rm -rf "$tmp/w"
cp -a "$tmp/w-old" "$tmp/w"

# a directory holding anything else is refused before anything is drawn,
# naming the entry, and stays as it was
echo mine >"$tmp/w/notes.txt"
expect_exit 1 "$KVSIM" report "$data/sweep.json" -o "$tmp/w"
grep -q "w: not a previous kvsim report: it holds 'notes.txt'" "$tmp/err" ||
	fail "foreign file message: $(cat "$tmp/err")"
[ "$(cat "$tmp/w/notes.txt")" = mine ] || fail "foreign file touched"
rm "$tmp/w/notes.txt"
[ "$(is_whole "refused")" = old ] || fail "a refused report changed the directory"
no_debris "refused"
rm -rf "$tmp/w" "$tmp/w-old" "$tmp/w-new"

# ---- the fallback: a directory that cannot be renamed (its parent is not
# writable) is staged inside and its files moved in one by one: the result
# is the same report, stale figures removed, nothing left behind; Ctrl-C
# leaves the previous report.  As root (who may write anywhere), run as
# nobody; skipped when that cannot be done.
as_user=()
if [ "$(id -u)" -eq 0 ]; then
	as_user=(none)
	if command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
		as_user=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
	fi
fi
fb="$tmp/fb"
mkdir -p "$fb/p"
cp "$data/compare.json" "$data/sweep.json" "$fb/"
chmod 755 "$tmp" "$fb" "$fb/p"
chmod 644 "$fb/compare.json" "$fb/sweep.json"
[ "$(id -u)" -ne 0 ] || chown nobody "$fb/p" 2>/dev/null || as_user=(none)
if [ "${as_user[0]:-}" != none ] &&
	${as_user[@]+"${as_user[@]}"} "$KVSIM" report "$fb/compare.json" -o "$fb/p/out" --quiet >/dev/null 2>&1; then
	expect_exit 0 "$KVSIM" report "$fb/sweep.json" -o "$fb/ref" --quiet
	chmod 555 "$fb/p"
	expect_exit 0 ${as_user[@]+"${as_user[@]}"} "$KVSIM" report "$fb/sweep.json" -o "$fb/p/out" --quiet
	diff -r "$fb/p/out" "$fb/ref" >/dev/null || fail "fallback: not the new report: $(diff -rq "$fb/p/out" "$fb/ref" | head -5)"
	set -m
	${as_user[@]+"${as_user[@]}"} "$KVSIM" report "$fb/compare.json" "$fb/sweep.json" --width 3200 \
		--height 1800 -o "$fb/p/out" --quiet >/dev/null 2>"$fb/err" &
	pid=$!
	set +m
	for i in $(seq 1 1500); do
		compgen -G "$fb/p/out/.out.kvsim-*/*.png" >/dev/null && break
		sleep 0.02
	done
	stop INT
	[ "$rc" -eq 130 ] || fail "fallback: Ctrl-C exits 130 (got $rc): $(cat "$fb/err")"
	diff -r "$fb/p/out" "$fb/ref" >/dev/null || fail "fallback: Ctrl-C changed the previous report"
	chmod 755 "$fb/p"
else
	echo "cannot run as a user the parent directory refuses: fallback checks skipped"
fi
rm -rf "$fb"

# ---- a tiny replay and compare, when the simulator is in this build ------------
if "$KVSIM" replay --help >/dev/null 2>&1; then
	"$KVSIM" replay --limit 200 --json "$tmp/replay.json" >/dev/null ||
		fail "kvsim replay --limit 200 --json failed"
	expect_exit 0 "$KVSIM" report "$tmp/replay.json" -o "$tmp/replay"
	n=$(check_dir "$tmp/replay")
	echo "replay report: $n figures"
	if "$KVSIM" compare --help >/dev/null 2>&1; then
		"$KVSIM" compare --limit 200 --json "$tmp/compare.json" >/dev/null ||
			fail "kvsim compare --limit 200 --json failed"
		expect_exit 0 "$KVSIM" report "$tmp/compare.json" "$tmp/replay.json" -o "$tmp/cmp"
		n=$(check_dir "$tmp/cmp")
		echo "compare report: $n figures"
	fi
else
	echo "kvsim replay not in this build: report from a replay skipped"
fi

# ---- a request-rate curve (kvsim sweep --rates) --------------------------------
# the throughput/latency figure and the table of rows; a contiguous policy
# (max) shown once per rate ("any" block size), paged at each block size;
# with an SLO the answer names the highest rate within it
if "$KVSIM" sweep --help >/dev/null 2>&1; then
	"$KVSIM" sweep --limit 100 --rates 1,3 --policies paged,max --block-sizes 8,16 \
		--slo-ttft 2 --json "$tmp/curve.json" >/dev/null 2>&1 ||
		fail "kvsim sweep --rates --json failed"
	expect_exit 0 "$KVSIM" report "$tmp/curve.json" -o "$tmp/curve"
	n=$(check_dir "$tmp/curve")
	echo "rate-curve report: $n figures"
	c="$tmp/curve/index.html"
	[ -s "$tmp/curve/rate-curve.svg" ] && [ -s "$tmp/curve/rate-curve.png" ] ||
		fail "rate-curve report: no rate-curve figure"
	grep -q 'id="rate-curve-ttft"' "$c" || fail "rate-curve report: no interactive chart"
	grep -q '<h3>Request-rate curve</h3>' "$c" || fail "rate-curve report: no table"
	# 2 rates x (paged at 8 and 16, max once)
	rows=$(sed -n '/<h3>Request-rate curve/,/<\/table>/p' "$c" | grep -c '^<tr>')
	[ "$rows" -eq 6 ] || fail "rate-curve table: $rows rows, want 6"
	[ "$(sed -n '/<h3>Request-rate curve/,/<\/table>/p' "$c" | grep -c '>any</td>')" -eq 2 ] ||
		fail "rate-curve table: max not shown once per rate"
	grep -q 'The highest offered rate each policy sustains within the SLOs' "$c" ||
		fail "rate-curve report states no answer"
else
	echo "kvsim sweep not in this build: report from a rate curve skipped"
fi

# ---- the page of the bundled compare run weighs under 2 MB ---------------------
# (all five policies on the bundled sample; sanitizer builds, KVS_TEST_SCALE
# below 1, replay its first 150 requests)
if "$KVSIM" compare --help >/dev/null 2>&1; then
	lim=()
	case "${KVS_TEST_SCALE:-1}" in 1 | 1.0) ;; *) lim=(--limit 150) ;; esac
	"$KVSIM" compare -q "${lim[@]}" --report "$tmp/bundled" >/dev/null ||
		fail "kvsim compare --report on the bundled sample failed"
	n=$(check_dir "$tmp/bundled")
	size=$(stat -c %s "$tmp/bundled/index.html")
	echo "bundled compare: index.html $size bytes, $n static figures"
	[ "$size" -lt 2000000 ] || fail "bundled compare page weighs $size bytes, over 2 MB"
	grep -q 'holds <b>[0-9.]*×</b> the conversations of' "$tmp/bundled/index.html" ||
		fail "bundled compare page states no answer"
fi
echo "ok"
