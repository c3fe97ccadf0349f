# slurm_cluster.bash: sourced by tests/e2e/sweep_slurm.sh: a real one-node Slurm cluster on this
# machine, for the length of one test, as root: a munge key and munged on its own socket, a
# minimal slurm.conf (this host as the only node, its CPUs as the node's resources, one
# GRES-free partition, no accounting, state and logs under DIR, free ports on 127.0.0.1), and
# slurmctld and slurmd in the foreground as children of the test. SLURM_CONF points the client
# commands (sbatch, squeue, scancel) at it.

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => {
             console.log(s.address().port); s.close(); });'
}

slurm_cluster_start() {  # DIR: starts the cluster, fails when it does not come up in 30 s
  local dir=$1 host
  host=$(hostname -s)
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  head -c 1024 /dev/urandom > "$dir/munge.key" && chmod 400 "$dir/munge.key"
  munged --foreground --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" \
    --pid-file="$dir/munged.pid" --seed-file="$dir/munge.seed" \
    --log-file="$dir/log/munged.log" > "$dir/log/munged.out" 2>&1 &
  SLURM_CLUSTER_PIDS=$!
  cat > "$dir/slurm.conf" <<CONF
ClusterName=gptoss-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc)
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  for _ in $(seq 50); do [ -S "$dir/munge.sock" ] && break; sleep 0.1; done
  slurmctld -D -i > "$dir/log/slurmctld.out" 2>&1 &
  SLURM_CLUSTER_PIDS="$SLURM_CLUSTER_PIDS $!"
  slurmd -D -N "$host" > "$dir/log/slurmd.out" 2>&1 &
  SLURM_CLUSTER_PIDS="$SLURM_CLUSTER_PIDS $!"
  for _ in $(seq 300); do
    [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && return 0
    sleep 0.1
  done
  echo "# the Slurm cluster did not come up; its logs:" && tail -n 5 "$dir"/log/* | sed 's/^/# /'
  return 1
}

slurm_cluster_stop() {  # the daemons (SIGTERM, then SIGKILL after 10 s) and their jobs
  [ -n "${SLURM_CLUSTER_PIDS:-}" ] || return 0
  scancel --full --user=root 2>/dev/null
  # shellcheck disable=SC2086  # a list of pids
  kill $SLURM_CLUSTER_PIDS 2>/dev/null
  for _ in $(seq 100); do
    # shellcheck disable=SC2086
    kill -0 $SLURM_CLUSTER_PIDS 2>/dev/null || break
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -9 $SLURM_CLUSTER_PIDS 2>/dev/null
  wait 2>/dev/null
  SLURM_CLUSTER_PIDS=
}
