# tests/cli/lib.sh - sourced by the CLI tests: $KVSIM checked, a temp dir
# ($tmp) removed on exit, a failure count, and the helpers below.  A failed
# check is counted and reported, and the script goes on; finish exits 1 when
# any check failed.
KVSIM="${KVSIM:?KVSIM must point at the kvsim binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# has TEXT NEEDLE [WHAT]: NEEDLE occurs literally in TEXT
has() {
	case "$1" in
	*"$2"*) ;;
	*) fail "${3:-check}: missing '$2' in: $(printf '%s' "$1" | head -c 600)" ;;
	esac
}

# Extra arguments kvs_run appends to every command (none by default).
extra=()
# kvs_scaled_limit N: under sanitizers (KVS_TEST_SCALE below 1) commands
# read only the first N requests of their trace.
kvs_scaled_limit() {
	case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) extra=(--limit "$1") ;; esac
}

# kvs_bg OUT ERR ARGS...: kvsim ARGS... started in the background, its
# standard output in OUT and standard error in ERR, its pid in $pid; with
# job control, so that it keeps SIGINT (a non-interactive shell starts
# background jobs ignoring it).
kvs_bg() {
	local o=$1 e=$2
	shift 2
	set -m
	"$KVSIM" "$@" >"$o" 2>"$e" &
	pid=$!
	set +m
}

# kvs_stop SECONDS SIGNAL...: after SECONDS, each SIGNAL sent to $pid in
# turn ($stop_gap seconds apart, 0.01 unless set); waits for it and keeps
# its exit status in $rc.
kvs_stop() {
	local delay=$1 s
	shift
	sleep "$delay"
	for s in "$@"; do
		kill -"$s" "$pid" 2>/dev/null
		sleep "${stop_gap:-0.01}"
	done
	wait "$pid"
	rc=$?
}

# kvs_run CMD WANT ARGS...: runs kvsim CMD ARGS... (and $extra), keeps stdout
# in $out and stderr in $err; a failure unless it exits WANT.
kvs_run() {
	local cmd=$1 want=$2
	shift 2
	"$KVSIM" "$cmd" "$@" ${extra[@]+"${extra[@]}"} >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
	if [ "$rc" -ne "$want" ]; then
		fail "kvsim $cmd $* exited $rc, expected $want; stderr: $(head -c 600 "$tmp/err")"
		return 1
	fi
	return 0
}

# expect WANT PATTERN ARGS...: kvsim ARGS... exits WANT and prints the
# extended regular expression PATTERN on stdout or stderr.
expect() {
	local want=$1 pat=$2
	shift 2
	"$KVSIM" "$@" >"$tmp/out" 2>&1
	local rc=$?
	[ "$rc" -eq "$want" ] || fail "kvsim $* exited $rc, expected $want: $(head -c 400 "$tmp/out")"
	grep -qE -- "$pat" "$tmp/out" || fail "kvsim $*: no '$pat' in: $(head -c 400 "$tmp/out")"
}

# check_report DIR: index.html exists, and every file it references (the PNG and
# SVG figures) exists, is local and non-empty, PNGs with their signature
check_report() {
	local d=$1 r sig refs
	[ -s "$d/index.html" ] || { fail "$d/index.html missing or empty"; return 1; }
	refs=$(grep -o '\(src\|href\)="[^"#][^"]*"' "$d/index.html" |
		sed 's/^[a-z]*="//; s/"$//' | sort -u)
	[ -n "$refs" ] || fail "$d/index.html references no file"
	for r in $refs; do
		case "$r" in
		*://* | /*) fail "$d: non-local reference $r"; continue ;;
		esac
		[ -s "$d/$r" ] || { fail "$d: $r referenced but missing or empty"; continue; }
		case "$r" in
		*.png)
			sig=$(head -c 8 "$d/$r" | od -An -tx1 | tr -d ' \n')
			[ "$sig" = "89504e470d0a1a0a" ] || fail "$d/$r: not a PNG" ;;
		*.svg) grep -q '<svg' "$d/$r" || fail "$d/$r: not an SVG" ;;
		esac
	done
	grep -q '<img \|class="kvs-chart"' "$d/index.html" || fail "$d/index.html shows no figure"
	return 0
}
# report_ok: the last run wrote a report, or this build has no cairo (skip)
report_ok() {
	case "$err" in *libcairo2-dev*) echo "no cairo in this build: --report checks skipped"; return 1 ;; esac
	return 0
}

# finish NAME: the summary line; exit 1 when a check failed.
finish() {
	if [ "$fails" -ne 0 ]; then
		echo "$1: $fails failure(s)" >&2
		exit 1
	fi
	echo "$1: all checks passed"
}
