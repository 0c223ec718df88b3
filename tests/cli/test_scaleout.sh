#!/usr/bin/env bash
# Scale-out through the real GNU parallel: a sweep run threaded, then
# planned, run point by point by scripts/sweep-parallel.sh on this machine
# (-S :) and merged, must print byte-identical JSON, CSV and table; the
# same after one point file is deleted (the merge names it, a rerun fills
# it) and after a worker is killed mid-run (the job log records it,
# --resume-failed reruns it).  Plus the refusals: another plan's point
# file, another trace, configuration flags with --from-plan.
. "$(dirname "$0")/lib.sh"
root="${KVS_SOURCE_ROOT:?}"
command -v parallel >/dev/null || { echo "SKIP: GNU parallel not installed (Debian package 'parallel')"; exit 77; }
script="$root/scripts/sweep-parallel.sh"
trace="$tmp/trace.csv"
cp "$root/traces/samples/azure-conv-sample.csv" "$trace"
# sanitizer builds (KVS_TEST_SCALE < 1, debug checks that walk the pool):
# the first 40 requests, no block size below 16
limit=() bs=1,16,64
case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) limit=(--limit 40) bs=16,32,64 ;; esac
args=("$trace" --block-sizes $bs --policies paged,max,oracle --find-max-rate
      --slo-ttft 2 --slo-tpot 0.1 --rate-tolerance 0.1 ${limit[@]+"${limit[@]}"})
cd "$tmp" || exit 1

# the threaded sweep: the reference bytes
"$KVSIM" sweep "${args[@]}" --jobs 2 --json=ref.json --csv=ref.csv --quiet >ref.txt ||
	fail "threaded sweep failed"

kvs_run sweep 0 "${args[@]}" --plan plan.json
has "$err" "5 points (0-4)" "plan summary"
kvs_run sweep 0 --from-plan plan.json --plan-info
has "$out" "points 5" "plan info"
has "$out" "trace $trace" "plan info trace"
grep -q '"sha256": "'"$(sha256sum "$trace" | cut -d' ' -f1)"'"' plan.json ||
	fail "plan.json does not hold the trace's SHA-256 (sha256sum)"
grep -q '"kvsim_version"' plan.json || fail "plan.json has no kvsim_version"

same() { # same TAG: merged outputs equal the threaded ones
	cmp -s ref.json "m.json" || fail "$1: merged JSON differs: $(diff ref.json m.json | head -5)"
	cmp -s ref.csv "m.csv" || fail "$1: merged CSV differs"
	cmp -s ref.txt "m.txt" || fail "$1: merged table differs"
}
merge_flags=(--json=m.json --csv=m.csv --quiet)

# 1. every point through GNU parallel on this machine, then the merge
KVSIM="$KVSIM" "$script" plan.json pts -S : -j 2 --joblog run1.log -- "${merge_flags[@]}" >m.txt ||
	fail "sweep-parallel.sh failed"
same "parallel"
[ "$(ls pts | grep -c '^point-0000[0-4][0-9]\.json$')" = 5 ] || fail "expected 5 point files: $(ls pts)"
[ "$(awk 'NR > 1 && $7 == 0' run1.log | wc -l)" = 5 ] || fail "job log: 5 jobs with exit 0 expected: $(cat run1.log)"
ls -a pts | grep -q '\.tmp\.' && fail "temporary files left in pts: $(ls -a pts)"

# 2. a point file deleted: the merge names it; a rerun runs only that point
rm pts/point-000003.json
kvs_run sweep 1 --from-plan plan.json --merge pts --json=m.json
has "$err" "pts: 1 of 5 points missing: 3" "missing point named"
KVSIM="$KVSIM" "$script" plan.json pts --joblog run2.log -- "${merge_flags[@]}" >m.txt 2>run2.err ||
	fail "rerun after a deleted point failed: $(cat run2.err)"
same "after a deleted point"
kvs_run sweep 0 --from-plan plan.json --points 0-4 --out pts
has "$err" "0 run, 5 already done" "rerun skips finished points"

# 3. a worker killed mid-run (SIGKILL 0.1 s into the slowest point, paged at
# the smallest block size, four replays): no half file; --resume-failed reruns it
cat >killer.sh <<KILL
#!/usr/bin/env bash
if [[ " \$* " == *" --points 0 "* ]] && mkdir "$tmp/killed" 2>/dev/null; then
	"$KVSIM" "\$@" & pid=\$!
	sleep 0.1
	kill -KILL \$pid
	wait \$pid
	exit 137
fi
exec "$KVSIM" "\$@"
KILL
chmod +x killer.sh
KVSIM="$tmp/killer.sh" "$script" plan.json pts3 -j 2 --retries 1 --joblog run3.log --no-merge 2>run3.err &&
	fail "a run with a killed worker should fail"
[ -d killed ] || fail "the worker of point 0 was not started"
if [ -e pts3/point-000000.json ]; then
	# a fast machine finished the point before the kill: the job still
	# failed (137); without its file the rest of the checks read the same
	echo "note: point 0 finished within 0.1 s, before the kill"
	rm pts3/point-000000.json
fi
[ "$(ls pts3 | grep -c '^point-')" = 4 ] || fail "4 points expected after the kill: $(ls pts3)"
[ "$(awk 'NR > 1 && $7 != 0' run3.log | wc -l)" = 1 ] || fail "job log: one failed job expected: $(cat run3.log)"
kvs_run sweep 1 --from-plan plan.json --merge pts3
has "$err" "1 of 5 points missing: 0" "killed point named"
KVSIM="$KVSIM" "$script" plan.json pts3 --retries 1 --joblog run3.log --resume-failed -- "${merge_flags[@]}" >m.txt ||
	fail "--resume-failed after a killed worker failed"
same "after a killed worker"
[ "$(awk 'NR > 1' run3.log | wc -l)" = 6 ] || fail "--resume-failed: 5 + 1 jobs expected in the log: $(cat run3.log)"

# 5. a "remote" host without a shared file system: ssh replaced by a
# stand-in that runs the command in another directory (the remote home),
# so --basefile ships the plan and the trace there, --return brings each
# point file back and --cleanup removes them; the merge is still identical.
# GNU parallel moves the files with rsync.
if [ ${#limit[@]} -gt 0 ]; then
	echo "note: sanitizer build: the --basefile/--return run is left to the plain build"
elif command -v rsync >/dev/null; then
	mkdir -p remote local
	cp "$trace" local/trace.csv
	cat >fakessh <<SSH
#!/usr/bin/env bash
while [ \$# -gt 0 ]; do case \$1 in -o|-l|-p|-S) shift 2 ;; -*) shift ;; *) break ;; esac; done
shift
[ "\${1:-}" = "--" ] && shift
cd "$tmp/remote" && HOME="$tmp/remote" exec bash -c "\$*"
SSH
	chmod +x fakessh
	(
		cd local || exit 1
		rargs=(trace.csv --block-sizes 16 --policies paged,max ${limit[@]+"${limit[@]}"})
		"$KVSIM" sweep "${rargs[@]}" --jobs 2 --json=ref.json --quiet >/dev/null &&
		"$KVSIM" sweep "${rargs[@]}" --plan plan.json --quiet &&
		PARALLEL_SSH="$tmp/fakessh" "$script" plan.json out -S 2/remotehost --kvsim "$KVSIM" --cleanup \
			-- --json=m.json --quiet >/dev/null
	) || fail "run on a remote host (stand-in ssh) failed"
	cmp -s local/ref.json local/m.json || fail "remote host: merged JSON differs"
	[ "$(ls local/out | grep -c '^point-')" = 2 ] || fail "remote host: 2 point files expected back: $(ls local/out)"
	[ -z "$(ls -A remote)" ] || fail "remote host: --cleanup left $(ls -A remote)"
else
	echo "note: rsync not installed: the --basefile/--return run is skipped"
fi

# 4. refusals, each naming the file
"$KVSIM" sweep "$trace" --block-sizes 16 --policies paged ${limit[@]+"${limit[@]}"} --plan other.json -q ||
	fail "other plan"
"$KVSIM" sweep --from-plan other.json --points 0 --out other -q || fail "other point"
cp other/point-000000.json pts/point-000000.json
kvs_run sweep 1 --from-plan plan.json --merge pts
has "$err" "pts/point-000000.json: from another plan" "another plan's point file refused"
kvs_run sweep 1 --from-plan plan.json --points 0 --out pts
has "$err" "pts/point-000000.json: from another plan" "no skip over another plan's file"
kvs_run sweep 1 --from-plan other.json --merge "$PWD/no-such-dir"
has "$err" "no-such-dir: cannot open the points' directory" "a missing points directory named"
# a point whose figures are not a run's, or not the plan's point: DIR gets
# point 0, EDIT (a sed program) changes it, the merge must name WANT
tampered() {
	local dir=$1 edit=$2 want=$3 what=$4
	"$KVSIM" sweep --from-plan other.json --points 0 --out "$dir" -q || fail "$dir point"
	sed -i "$edit" "$dir/point-000000.json"
	kvs_run sweep 1 --from-plan other.json --merge "$dir"
	has "$err" "$dir/point-000000.json: $want" "$what"
}
tampered bad '0,/"arrived": \([0-9]*\)/s//"arrived": 1\10/' "stats: arrived" \
	"a point whose accounting does not balance refused"
tampered bad2 '0,/"completed": [0-9]*/s//"completed": -4/' \
	"stats.completed: expected a non-negative integer" "a negative count refused"
tampered bad3 '/"rejected_by": \[/{n;s/[0-9][0-9]*/-1/}' \
	"stats.rejected_by[0]: expected a non-negative integer" "a negative reason count refused"
tampered bad4 '0,/"requests_per_s": [0-9.e+-]*/s//"requests_per_s": -2.5/' \
	"stats.requests_per_s: -2.5 is negative" "a negative figure refused"
tampered bad5 's/"row": 0/"row": 5/' \
	"row, policy or block_size is not the plan's point 0" "another row refused"
printf 'x' >>"$trace"
kvs_run sweep 1 --from-plan plan.json --merge pts3
has "$err" "not the plan's trace" "a changed trace refused"
sed -i 's/"requests": [0-9]*/"requests": 7/' plan.json
kvs_run sweep 1 --from-plan plan.json --merge pts3
has "$err" "plan_id does not match" "an edited plan refused"
expect 2 "configuration is the plan's" sweep --from-plan other.json --merge other --gpu h100-80gb
expect 2 "need --from-plan" sweep --points 0 --out x
expect 2 "--plan writes only the plan" sweep --plan x.json --json=y.json
expect 2 "expected I or A-B" sweep --from-plan other.json --points 3-1 --out other
expect 2 "either --points A-B --out DIR or --merge DIR" sweep --from-plan other.json

finish "cli scale-out"
