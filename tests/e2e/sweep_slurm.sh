#!/usr/bin/env bash
# sweep_slurm.sh: `gptoss-bench sweep configs/ci.ini --slurm` on a real one-node Slurm cluster
# (slurm-wlm and munge from Debian, started by the test as root: slurm_cluster.bash): the
# engines run as jobs, two at once on the 2 cores, and the summary has a local run's shape; a
# job cancelled mid-workload (scancel) is recorded as failed with Slurm's state; Ctrl-C on the
# driver cancels every job and leaves nothing queued; a results folder the jobs cannot see is
# refused; without Slurm on PATH the error names the missing command. Skipped (visibly) when
# not root. About 2 minutes. Usage: sweep_slurm.sh BUILD_DIR (TAP).
set -u
build=${1:?usage: sweep_slurm.sh BUILD_DIR}
bench=$build/bin/gptoss-bench
tmp=$(mktemp -d)
. tests/e2e/tap.bash
. tests/e2e/slurm_cluster.bash
trap 'slurm_cluster_stop; rm -rf "$tmp"' EXIT
[ -x "$bench" ] || { echo "Bail out! $bench is not built"; exit 1; }

no_slurm_on_path() {
  ! PATH=/nonexistent "$bench" sweep configs/ci.ini --slurm --results-dir "$tmp/none" \
    2> "$tmp/err" && grep -q "sbatch is not on PATH" "$tmp/err"
}
tap_ok "--slurm without Slurm's commands on PATH: the error names sbatch" no_slurm_on_path

if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld > /dev/null; then
  echo "ok 2 # skip not root or no slurm-wlm: a Slurm cluster cannot be started here"
  echo "1..2"
  exit 0
fi
if ! slurm_cluster_start "$tmp/cluster"; then
  echo "not ok 2 - a one-node Slurm cluster starts"
  echo "1..2"
  exit 1
fi

# manifest.json's engines as "id status slurm-state" lines; the job id of one engine.
engine_states() {
  node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1]));
           for (const e of m.engines)
             console.log(e.id, e.status, e.slurm ? e.slurm.state : "-");' "$1/manifest.json"
}
job_id() {  # run folder, engine id
  node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1]));
           const e = m.engines.find(x => x.id === process.argv[2]);
           if (e && e.slurm && e.slurm.job_id) console.log(e.slurm.job_id);' \
    "$1/manifest.json" "$2" 2> /dev/null
}
run_dir_of() { ls -d "$1"/ci-* 2> /dev/null | head -n 1; }
# summary.md with every number masked (throughputs, ports, times) and a last cell that is a
# gain or "-" (a gain below zero prints "-": noise decides which): the shape alone.
shape() { sed -E 's/[+-]?[0-9]+([.][0-9]+)?/N/g; s/ +/ /g; s/\| (N%|-) \|$/| V |/' "$1/summary.md"; }

# 1. The whole of ci.ini (one round) as Slurm jobs, and the same run locally.
"$bench" sweep configs/ci.ini --slurm --rounds 1 --results-dir "$tmp/slurm" \
  > "$tmp/slurm.out" 2> "$tmp/slurm.err"
slurm_rc=$?
slurm_run=$(run_dir_of "$tmp/slurm")
"$bench" sweep configs/ci.ini --rounds 1 --results-dir "$tmp/local" > /dev/null 2>&1
local_run=$(run_dir_of "$tmp/local")
all_jobs_done() {
  [ "$slurm_rc" -eq 0 ] &&
    [ "$(engine_states "$slurm_run")" = "$(printf '%s\n' "base ok COMPLETED" "async ok COMPLETED" \
      "flashinfer failed COMPLETED")" ] &&
    [ -s "$slurm_run/base/slurm-$(job_id "$slurm_run" base).out" ] &&
    [ -s "$slurm_run/async/random.json" ] && [ -s "$slurm_run/async/sharegpt.json" ]
}
tap_ok "--slurm: each engine ran as a job; results, logs and job output in its folder" all_jobs_done
tap_ok "--slurm: two jobs ran at once on the 2-CPU node" grep -q "2 running" "$tmp/slurm.err"
same_shape() { [ -n "$local_run" ] && diff <(shape "$local_run") <(shape "$slurm_run"); }
tap_ok "--slurm: summary.md has the local run's shape" same_shape
tap_ok "--slurm: the manifest records the node the engines ran on" \
  grep -q '"driver_host"' "$slurm_run/manifest.json"

# 2. One job cancelled (scancel) while it runs a workload: that engine failed, the rest go on.
"$bench" sweep configs/ci.ini --slurm --rounds 1 --only base,async --results-dir "$tmp/cancel" \
  > /dev/null 2> "$tmp/cancel.err" &
driver=$!
cancel_mid_workload() {
  local run id=""
  for _ in $(seq 600); do
    run=$(run_dir_of "$tmp/cancel")
    [ -n "$run" ] && id=$(job_id "$run" async)
    [ -n "$id" ] && grep -q "workload 1/2" "$run/async/slurm-$id.out" 2> /dev/null && break
    sleep 0.1
  done
  [ -n "$id" ] && scancel "$id" && wait "$driver" &&
    [ "$(engine_states "$run")" = "$(printf '%s\n' "base ok COMPLETED" "async failed CANCELLED" \
      "flashinfer skipped -")" ] &&
    grep -q "Slurm job $id CANCELLED" "$run/manifest.json"
}
tap_ok "scancel mid-workload: that engine is failed with Slurm's state, the other finishes" \
  cancel_mid_workload

# 3. Ctrl-C on the driver while both jobs run: every job cancelled, nothing left queued.
"$bench" sweep configs/ci.ini --slurm --only base,async --results-dir "$tmp/interrupt" \
  > /dev/null 2> "$tmp/interrupt.err" &
driver=$!
interrupted() {
  local run rc
  for _ in $(seq 600); do
    run=$(run_dir_of "$tmp/interrupt")
    [ -n "$run" ] && [ "$(grep -c '"status": "running"' "$run/manifest.json")" -eq 2 ] && break
    sleep 0.1
  done
  kill -INT "$driver"
  wait "$driver"; rc=$?
  [ "$rc" -eq 130 ] && [ -z "$(squeue -h -t PENDING,RUNNING,COMPLETING)" ] &&
    [ "$(engine_states "$run")" = "$(printf '%s\n' "base interrupted CANCELLED" \
      "async interrupted CANCELLED" "flashinfer skipped -")" ] &&
    grep -q '"interrupted": true' "$run/manifest.json"
}
tap_ok "Ctrl-C: exit 130, every job cancelled, none queued, the manifest says interrupted" \
  interrupted

# 4. A results folder the jobs cannot see (a tmpfs mounted only in the driver's namespace).
not_shared() {
  mkdir -p "$tmp/private"
  ! unshare --mount --propagation private sh -c \
    'mount -t tmpfs none "$1" && exec "$2" sweep configs/ci.ini --slurm --results-dir "$1"' \
    sh "$tmp/private" "$bench" > /dev/null 2> "$tmp/private.err" &&
    grep -q "could not write into the run folder" "$tmp/private.err" &&
    [ -z "$(squeue -h -t PENDING,RUNNING -n gptoss-ci-base)" ]
}
tap_ok "a run folder the jobs cannot write is refused before any engine is queued" not_shared
tap_done
