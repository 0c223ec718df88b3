#!/usr/bin/env bash
# A single-node Slurm cluster started here: munged, slurmctld and slurmd on
# localhost, every file in a temporary directory, ports picked at random;
# scripts/sweep-slurm.sh submits a plan's points as a job array and the
# merge as a dependent job, whose JSON and CSV must equal the threaded
# sweep's byte for byte.  The daemons are stopped and the directory removed
# on exit.  Skips (exit 77, with the reason) when Slurm or munge is not
# installed, when not run as root (slurmd runs jobs as their user), or when
# the daemons do not come up in this environment.
. "$(dirname "$0")/lib.sh"
root="${KVS_SOURCE_ROOT:?}"
skip() { echo "SKIP: $*"; exit 77; }
for b in munged slurmctld slurmd sbatch squeue sinfo; do
	command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
		skip "$b not found (Debian packages munge, slurmctld, slurmd, slurm-client)"
done
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start jobs"
PATH="$PATH:/usr/sbin"

s="$tmp/slurm"
mkdir -p "$s/munge" "$s/state" "$s/spool" "$s/log"
pids=()
# the daemons run in the foreground as children of this script, so they are
# stopped and reaped here, never left behind
stop() {
	local p
	for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null; done
	for p in ${pids[@]+"${pids[@]}"}; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap stop EXIT
why() { # the daemons' last log lines, for a skip message
	tail -n 3 "$s"/log/*.log "$s/munge/munged.log" 2>/dev/null | tr '\n' ' ' | head -c 600
}

head -c 1024 /dev/urandom >"$s/munge/munge.key"
chmod 0400 "$s/munge/munge.key"
munged -F --key-file="$s/munge/munge.key" --socket="$s/munge/munge.sock" \
	--pid-file="$s/munge/munged.pid" --log-file="$s/munge/munged.log" \
	--seed-file="$s/munge/seed" --force >>"$s/munge/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 20); do [ -S "$s/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$s/munge/munge.sock" ] || skip "munged did not start: $(why)"
host=$(hostname -s)
port=$((20000 + RANDOM % 30000))
cat >"$s/slurm.conf" <<CONF
ClusterName=kvsimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$s/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=kvsimtest Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$s/slurm.conf"
slurmctld -D -i >>"$s/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >>"$s/log/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 1 40); do
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || skip "a daemon exited at start: $(why)"; done
	if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then up=1; break; fi
	sleep 0.5
done
[ $up = 1 ] || skip "the node did not come up within 20 s: $(sinfo 2>&1 | tail -1) $(why)"
echo "slurm: node $host up after $SECONDS s (slurmctld port $port)"

# the reference bytes, and the plan
trace="$tmp/trace.csv"
cp "$root/traces/samples/azure-conv-sample.csv" "$trace"
limit=() bs=4,16,64
case "${KVS_TEST_SCALE:-1}" in 1 | 1.0 | "") ;; *) limit=(--limit 40) bs=16,32,64 ;; esac
args=("$trace" --block-sizes $bs --policies paged,max ${limit[@]+"${limit[@]}"})
cd "$tmp" || exit 1
"$KVSIM" sweep "${args[@]}" --json=ref.json --csv=ref.csv --quiet >/dev/null || fail "threaded sweep"
"$KVSIM" sweep "${args[@]}" --plan plan.json --quiet || fail "plan"

# a job array of 2 tasks (chunks of 2 points) and the merge after it
KVSIM="$KVSIM" "$root/scripts/sweep-slurm.sh" plan.json out --chunk 2 >submit.txt 2>&1 ||
	fail "sweep-slurm.sh failed: $(cat submit.txt)"
cat submit.txt
merge=$(sed -n 's/^merge \([0-9]*\).*/\1/p' submit.txt)
array=$(sed -n 's/^array \([0-9]*\).*/\1/p' submit.txt)
[ -n "$merge" ] && [ -n "$array" ] || fail "no job ids in: $(cat submit.txt)"
grep -q "(2 tasks of up to 2 points, 4 points)" submit.txt || fail "expected 2 tasks: $(cat submit.txt)"
done=0
for _ in $(seq 1 120); do
	if [ -n "$merge" ] && ! squeue -h -j "$merge,$array" 2>/dev/null | grep -q .; then done=1; break; fi
	sleep 0.5
done
[ $done = 1 ] || fail "jobs still queued or running after 60 s: $(squeue 2>&1)"
echo "slurm: array and merge done at $SECONDS s"
cmp -s ref.json out/sweep.json || fail "Slurm-merged JSON differs from the threaded sweep's: $(ls out out/logs; cat out/logs/*.out | head -c 600)"
cmp -s ref.csv out/sweep.csv || fail "Slurm-merged CSV differs"
[ "$(ls out | grep -c '^point-')" = 4 ] || fail "4 point files expected: $(ls out)"
[ -s "out/logs/points-${array}_0.out" ] || [ -f "out/logs/points-${array}_0.out" ] ||
	fail "no log of array task 0"

# a task's points lost: the merge job names them; resubmitting fills them in
rm out/point-000002.json out/sweep.json
KVSIM="$KVSIM" "$root/scripts/sweep-slurm.sh" plan.json out --chunk 2 >submit2.txt 2>&1 ||
	fail "resubmit failed: $(cat submit2.txt)"
merge=$(sed -n 's/^merge \([0-9]*\).*/\1/p' submit2.txt)
for _ in $(seq 1 120); do
	[ -n "$merge" ] && ! squeue -h -j "$merge" 2>/dev/null | grep -q . && break
	sleep 0.5
done
echo "slurm: resubmitted jobs done at $SECONDS s"
cmp -s ref.json out/sweep.json || fail "JSON after resubmitting differs"
finish "cli slurm"
