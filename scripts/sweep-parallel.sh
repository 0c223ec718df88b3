#!/usr/bin/env bash
# Run the points of a sweep plan through GNU parallel, on this machine or
# on ssh hosts, then merge them (docs/SCALE-OUT.md).
#
#   scripts/sweep-parallel.sh PLAN.json OUTDIR [OPTIONS] [-- MERGE OUTPUT FLAGS]
#
#   -S LOGINS            parallel's --sshlogin (default ':' = this machine)
#   --sshloginfile FILE  hosts from a file (parallel's format, ':' = local)
#   -j N                 jobs per host (parallel's default: one per CPU)
#   --chunk K            points per job (1); K > 1 needs a shared file system
#                        when hosts are remote (results come back by --return
#                        one file per job otherwise)
#   --shared             plan, trace and OUTDIR are on a file system every host
#                        sees at the same path: no --basefile / --return
#   --retries N          tries per job on failure (3)
#   --joblog FILE        parallel's job log (OUTDIR.joblog)
#   --resume-failed      rerun only the jobs the job log records as failed or
#                        not run (points already written are skipped anyway)
#   --cleanup            remove the plan, trace and point files from remote
#                        hosts afterwards (parallel's --cleanup; never with
#                        paths the hosts share with this machine)
#   --kvsim PATH         kvsim on the hosts ($KVSIM, else kvsim in PATH)
#   --no-merge           run the points only
#   -- FLAGS             output flags of the merge (--json=F, --csv=F, ...);
#                        without them the merge prints the table
#
# Remote hosts without a shared file system get the plan and its trace by
# --basefile (same path as here; relative paths land under the remote home
# directory), and each point file back by --return.
set -euo pipefail

die() { echo "sweep-parallel: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: sweep-parallel.sh PLAN.json OUTDIR [OPTIONS] [-- MERGE FLAGS]"
plan=$1 out=$2
shift 2
logins=() jobs=() chunk=1 shared=0 retries=3 joblog="" resume=() merge=1 remote=0 cleanup=()
kvsim=${KVSIM:-kvsim}
while [ $# -gt 0 ]; do
	case $1 in
	-S) logins+=(-S "$2"); [ "$2" = ":" ] || remote=1; shift 2 ;;
	--sshloginfile) logins+=(--sshloginfile "$2"); remote=1; shift 2 ;;
	-j) jobs=(-j "$2"); shift 2 ;;
	--chunk) chunk=$2; shift 2 ;;
	--shared) shared=1; shift ;;
	--retries) retries=$2; shift 2 ;;
	--joblog) joblog=$2; shift 2 ;;
	--resume-failed) resume=(--resume-failed); shift ;;
	--cleanup) cleanup=(--cleanup); shift ;;
	--kvsim) kvsim=$2; shift 2 ;;
	--no-merge) merge=0; shift ;;
	--) shift; break ;;
	*) die "unknown option '$1'" ;;
	esac
done
[[ $chunk =~ ^[1-9][0-9]*$ ]] || die "--chunk $chunk: expected a positive integer"
[ ${#logins[@]} -gt 0 ] || logins=(-S :)
[ -n "$joblog" ] || joblog="$out.joblog"
command -v parallel >/dev/null || die "GNU parallel not found (Debian package 'parallel')"
# parallel builds the remote command for $SHELL; when it is unset (cron, CI,
# env -i) remote jobs with --basefile/--return wrote no point files
export SHELL=${SHELL:-$(command -v bash)}

info=$("$kvsim" sweep --from-plan "$plan" --plan-info) || exit 1
n=$(sed -n 's/^points //p' <<<"$info")
trace=$(sed -n 's/^trace //p' <<<"$info")
[ "$n" -gt 0 ] || die "$plan: no points"

xfer=()
if [ $remote = 1 ] && [ $shared = 0 ]; then
	[ "$chunk" = 1 ] || die "--chunk $chunk with remote hosts needs --shared (results return one file per job)"
	xfer=(--basefile "$plan" --basefile "$trace"
	      --return "$out/point-{=\$_=sprintf(\"%06d\",\$_)=}.json" ${cleanup[@]+"${cleanup[@]}"})
fi
mkdir -p "$out"

# job arguments: "A-B" chunks of the points 0..n-1
ranges() {
	local a=0 b
	while [ $a -lt "$n" ]; do
		b=$((a + chunk - 1))
		[ $b -lt "$n" ] || b=$((n - 1))
		if [ "$chunk" = 1 ]; then echo $a; else echo "$a-$b"; fi
		a=$((b + 1))
	done
}
# a point already written is skipped by kvsim, so --retries and reruns resume
ranges | parallel --will-cite "${logins[@]}" "${jobs[@]}" --retries "$retries" \
	--joblog "$joblog" "${resume[@]}" "${xfer[@]}" \
	"$kvsim" sweep --from-plan "$plan" --points {} --out "$out" --quiet
[ $merge = 1 ] || exit 0
exec "$kvsim" sweep --from-plan "$plan" --merge "$out" "$@"
