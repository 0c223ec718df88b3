#!/usr/bin/env bash
# Submit the points of a sweep plan to Slurm as a job array (each task a
# chunk of points) and a merge job that starts when the array has ended
# (docs/SCALE-OUT.md).  Needs a file system the login node and the compute
# nodes share at the same path: the plan, its trace, kvsim and OUTDIR.
#
#   scripts/sweep-slurm.sh PLAN.json OUTDIR [OPTIONS] [-- MERGE OUTPUT FLAGS]
#
#   --chunk K            points per array task (10)
#   --cpus C             CPUs per task: points of a chunk on C threads (1)
#   --max-running M      at most M array tasks at once (no limit)
#   --kvsim PATH         kvsim on the nodes ($KVSIM, else kvsim in PATH)
#   --sbatch "ARGS"      more sbatch arguments for both jobs (--partition=..,
#                        --time=.., --account=..)
#   -- FLAGS             merge output flags (default: --json=OUTDIR/sweep.json
#                        --csv=OUTDIR/sweep.csv); the table goes to the merge
#                        job's log, OUTDIR/logs/merge-JOBID.out
#
# Prints the array's and the merge's job ids.  A task that fails (or a node
# lost) leaves its points missing: the merge names them, and running this
# script again resubmits everything, each task skipping points already
# written, so only the missing ones are simulated.
set -euo pipefail

die() { echo "sweep-slurm: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: sweep-slurm.sh PLAN.json OUTDIR [OPTIONS] [-- MERGE FLAGS]"
plan=$(realpath "$1") out=$(realpath -m "$2")
shift 2
chunk=10 cpus=1 maxrun="" extra=""
kvsim=${KVSIM:-$(command -v kvsim || true)}
while [ $# -gt 0 ]; do
	case $1 in
	--chunk) chunk=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--max-running) maxrun="%$2"; shift 2 ;;
	--kvsim) kvsim=$2; shift 2 ;;
	--sbatch) extra=$2; shift 2 ;;
	--) shift; break ;;
	*) die "unknown option '$1'" ;;
	esac
done
[[ $chunk =~ ^[1-9][0-9]*$ ]] || die "--chunk $chunk: expected a positive integer"
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus $cpus: expected a positive integer"
[ -n "$kvsim" ] || die "kvsim not found: give --kvsim PATH or set KVSIM"
kvsim=$(realpath "$kvsim")
command -v sbatch >/dev/null || die "sbatch not found (Debian package 'slurm-client')"
merge_flags=("$@")
[ ${#merge_flags[@]} -gt 0 ] || merge_flags=(--json="$out/sweep.json" --csv="$out/sweep.csv")

info=$("$kvsim" sweep --from-plan "$plan" --plan-info) || exit 1
n=$(sed -n 's/^points //p' <<<"$info")
[ "$n" -gt 0 ] || die "$plan: no points"
tasks=$(( (n + chunk - 1) / chunk ))
mkdir -p "$out/logs"

# The batch scripts are written next to the results, so what ran is on record.
q() { printf '%q ' "$@"; }
cat >"$out/points.sbatch" <<SB
#!/bin/bash
#SBATCH --job-name=kvsim-points
#SBATCH --cpus-per-task=$cpus
#SBATCH --output=$out/logs/points-%A_%a.out
set -eu
a=\$(( SLURM_ARRAY_TASK_ID * $chunk ))
b=\$(( a + $chunk - 1 ))
[ \$b -lt $n ] || b=$((n - 1))
exec $(q "$kvsim") sweep --from-plan $(q "$plan") --points "\$a-\$b" --out $(q "$out") --jobs $cpus --quiet
SB
cat >"$out/merge.sbatch" <<SB
#!/bin/bash
#SBATCH --job-name=kvsim-merge
#SBATCH --output=$out/logs/merge-%j.out
exec $(q "$kvsim") sweep --from-plan $(q "$plan") --merge $(q "$out") $(q "${merge_flags[@]}")
SB
# shellcheck disable=SC2086
array=$(sbatch --parsable $extra --array="0-$((tasks - 1))$maxrun" "$out/points.sbatch")
array=${array%%;*}
# afterany: the merge runs even when a task failed, and names the points missing
# shellcheck disable=SC2086
merge=$(sbatch --parsable $extra --dependency="afterany:$array" "$out/merge.sbatch")
merge=${merge%%;*}
echo "array $array ($tasks tasks of up to $chunk points, $n points)"
echo "merge $merge (after the array; log $out/logs/merge-$merge.out)"
