#!/usr/bin/env bash
# engine_threads.sh: `gptoss-engine serve` sizes and pins its threads by the CPUs the process
# may use: all of its affinity set, one CPU each (a worker's Cpus_allowed_list is its one CPU);
# under `taskset -c` one CPU, one thread; under a cgroup CPU quota of one CPU (made by the test
# as root, cgroup v1 or v2) one thread, unpinned; GPTOSS_CPU_PIN=0 leaves them unpinned.
# Usage: engine_threads.sh BUILD_DIR (TAP).
set -u
engine="${1:?usage: engine_threads.sh BUILD_DIR}/bin/gptoss-engine"
tmp=$(mktemp -d)
cgroup=
pid=
. tests/e2e/tap.bash
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null
  [ -n "$cgroup" ] && rmdir "$cgroup" 2> /dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
[ -x "$engine" ] || { echo "Bail out! $engine is not built"; exit 1; }
cpus=$(nproc)

# Starts serve under the prefix command (taskset ..., env ..., or a cgroup joiner), waits for its
# start-up lines, and leaves its pid in $pid and its log in $tmp/serve.log.
start() {
  "$@" "$engine" serve gpt-oss-tiny --port 0 --kv-cache-memory 64MiB > "$tmp/serve.log" 2>&1 &
  pid=$!
  wait_for_output "$tmp/serve.log" 's/^gptoss-engine serve: listening on //p' 300 > /dev/null
}
stop() { kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; pid=; }
threads_line() { grep -o "ranks of [0-9]* threads[^)]*" "$tmp/serve.log"; }
# How many of the engine's threads may run on exactly one CPU.
single_cpu_threads() {
  grep -h "^Cpus_allowed_list:" /proc/"$pid"/task/*/status | awk '$2 ~ /^[0-9]+$/' | wc -l
}

all_cpus() {
  start && [ "$(threads_line)" = "ranks of $cpus threads, one CPU each" ] &&
    [ "$(single_cpu_threads)" -eq $((cpus - 1)) ]  # the workers; the caller's thread floats
}
tap_ok "all $cpus CPUs: $cpus threads, each worker pinned to one CPU" all_cpus
stop
one_cpu() { start taskset -c 0 && [ "$(threads_line)" = "ranks of 1 threads, one CPU each" ]; }
tap_ok "taskset -c 0: 1 thread" one_cpu
stop
no_pin() {
  start env GPTOSS_CPU_PIN=0 && [ "$(threads_line)" = "ranks of $cpus threads" ] &&
    [ "$(single_cpu_threads)" -eq 0 ]
}
tap_ok "GPTOSS_CPU_PIN=0: $cpus threads, none pinned" no_pin
stop

# A cgroup with a quota of one CPU, v1 (cpu controller folder) or v2 (cpu.max).
join_quota_cgroup() {  # the command to run inside it follows
  exec sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" "$@"
}
make_cgroup() {
  [ "$(id -u)" -eq 0 ] || return 1
  if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    cgroup=/sys/fs/cgroup/cpu/gptoss-test-$$
    mkdir "$cgroup" && echo 100000 > "$cgroup/cpu.cfs_period_us" &&
      echo 100000 > "$cgroup/cpu.cfs_quota_us"
  elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
    cgroup=/sys/fs/cgroup/gptoss-test-$$
    mkdir "$cgroup" && echo "100000 100000" > "$cgroup/cpu.max"
  else
    return 1
  fi
}
if [ "$cpus" -lt 2 ] || ! make_cgroup; then
  echo "ok 4 # skip no cgroup CPU quota can be set here (needs root, cgroup v1 cpu or v2) or 1 CPU"
  num_tests=4
else
  quota() { start join_quota_cgroup && [ "$(threads_line)" = "ranks of 1 threads" ]; }
  tap_ok "a cgroup quota of 1 CPU on $cpus: 1 thread, not pinned" quota
  stop
fi
tap_done
