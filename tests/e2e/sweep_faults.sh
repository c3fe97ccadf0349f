#!/usr/bin/env bash
# sweep_faults.sh: the sweep driver under harness faults, with `gptoss-bench mock-server` as an
# external engine (the driver is what is tested; tests/fixtures/sweep/{faults,interrupt}.ini):
# an engine that crashes mid-workload is recorded as failed with its last error line and the
# sweep goes on; shell metacharacters in a command and an env value reach the engine literally;
# an unwritable results folder is refused before anything starts; a result write that fails
# leaves no partial file; Ctrl-C exits 130, keeps what finished and leaves no process of the
# engine's group; a SIGKILLed sweep still takes its engine down; progress lines (not a redrawn
# bar) when stderr is not a terminal, a bar redrawn in place when it is.
# Usage: sweep_faults.sh BUILD_DIR (prints TAP). About 15 s.
set -u
build="${1:?usage: sweep_faults.sh BUILD_DIR}"
bin_dir=$(cd "$build/bin" 2>/dev/null && pwd)
bin="$bin_dir/gptoss-bench"
fix="$(pwd)/tests/fixtures/sweep"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "Bail out! $build is not built"; exit 1; }
export PATH="$bin_dir:$PATH"  # the sweep files' commands name gptoss-bench

gone() {  # pid: true when no such process runs (a zombie left to a non-reaping init counts)
  local stat
  [ -n "$1" ] || return 1  # no pid recorded: not a pass
  stat=$(ps -o stat= -p "$1" 2>/dev/null)
  [ -z "$stat" ] || [ "${stat:0:1}" = Z ]
}
group_empty() {  # pgid: true when no live process is in it
  [ -n "$1" ] || return 1
  ! ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}
wait_running() {  # results dir, engine index: waits until the manifest shows it running; prints its pid
  local m
  for _ in $(seq 400); do
    m=$(ls "$1"/*/manifest.json 2>/dev/null | head -1)
    if [ -n "$m" ] && [ "$(jget "$m" "o.engines[$2].status")" = running ]; then
      jget "$m" "o.engines[$2].pid"
      return 0
    fi
    sleep 0.025
  done
  return 1
}

# 1. A crashing engine, then one with shell metacharacters, run from an empty folder.
mkdir -p "$tmp/cwd"
(cd "$tmp/cwd" && exec "$bin" sweep "$fix/faults.ini" --results-dir "$tmp/res") \
  > "$tmp/out.txt" 2> "$tmp/err.txt" &
sweep_pid=$!
pids+=("$sweep_pid")
lit_pid=$(wait_running "$tmp/res" 1)
[ -n "$lit_pid" ] && cat "/proc/$lit_pid/cmdline" > "$tmp/cmdline" 2>/dev/null
[ -n "$lit_pid" ] && tr '\0' '\n' < "/proc/$lit_pid/environ" > "$tmp/environ" 2>/dev/null
wait "$sweep_pid"
rc=$?
run=$(ls -d "$tmp"/res/faults-*Z 2>/dev/null | head -1)
m="$run/manifest.json"
tap_ok "crash: the sweep exits 0" [ "$rc" -eq 0 ]
tap_ok "crash: recorded as failed, the next configuration ran" \
  [ "$(jget "$m" 'o.engines.map(e => e.id + ":" + e.status).join()')" = "crash:failed,literal:ok" ]
tap_ok "crash: the error says when and quotes the log's last error line" \
  [ "$(jget "$m" 'o.engines[0].error')" = "$(printf '%s' 'the engine exited with status 1 during workload short: ' \
    "$(grep 'crashing on purpose' "$run/crash/engine.log")")" ]
tap_ok "crash: no result from the crashed engine" [ -z "$(ls "$run/crash" | grep json)" ]
tap_ok "crash: the summary shows the failure" grep -q 'failed: the engine exited with status 1 during workload short' "$run/summary.md"
tap_ok "crash: stderr ends with each engine's status" grep -q '^sweep:   crash: failed: the engine exited' "$tmp/err.txt"
tap_ok "crash: the next engine's results are complete" \
  [ "$(jget "$run/literal/short.json" 'o.completed'),$(jget "$run/literal/other.json" 'o.completed')" = "40,8" ]
model="m;\$(touch pwned)|&&'q'*\`id\`>x"
tap_ok "literal: the command's argv reached the engine unchanged" \
  [ "$(tr '\0' '\n' < "$tmp/cmdline" | tail -2 | head -1),$(tr '\0' '\n' < "$tmp/cmdline" | tail -1)" = "--model,$model" ]
tap_ok "literal: the env value reached the engine unchanged" \
  grep -qxF "GB_LITERAL=\$(touch pwned) && 'x' | y * \`id\` > z" "$tmp/environ"
tap_ok "literal: the served model name is the literal word" [ "$(jget "$run/literal/short.json" 'o.model_id')" = "$model" ]
tap_ok "literal: nothing ran a shell (no pwned, x or z file)" \
  [ -z "$(find "$tmp/cwd" "$run" \( -name pwned -o -name x -o -name z \) -print)" ]
tap_ok "progress: configuration i/N, workload j/M, elapsed, ETA" \
  grep -q '^sweep: configuration 2/2 literal, workload 2/2 other, elapsed [0-9]*m[0-9]*s, ETA [0-9]*m[0-9]*s$' "$tmp/err.txt"
tap_ok "progress: not a terminal: plain lines per workload" grep -qx 'sweep: literal/short: 40/40 requests (100%), [0-9.]* s' "$tmp/err.txt"
tap_ok "progress: not a terminal: no carriage returns" bash -c "! grep -q $'\r' '$tmp/err.txt'"

# 2. On a terminal (script(1) gives the sweep one): the bar is redrawn in place.
if command -v script > /dev/null; then
  script -qec "'$bin' sweep '$fix/faults.ini' --only literal --results-dir '$tmp/tty' > /dev/null" \
    /dev/null > "$tmp/tty.txt" 2>&1
  tap_ok "progress: a terminal: a bar redrawn in place" \
    grep -qa $'\rsweep: literal/short \[#*-*\] [0-9]*/40 requests' "$tmp/tty.txt"
else
  num_tests=$((num_tests + 1)); echo "ok $num_tests - progress on a terminal # SKIP no script(1)"
fi

# 3. Unwritable results folders are refused before any engine starts.
touch "$tmp/file"
"$bin" sweep "$fix/faults.ini" --results-dir "$tmp/file" > /dev/null 2> "$tmp/file.err"
rc=$?
refused() {  # rc, folder, stderr file
  [ "$1" -eq 1 ] && grep -qF "the results folder $2 cannot hold the run" "$3" &&
    grep -q 'pass --results-dir DIR' "$3" && ! grep -q 'starting' "$3"
}
tap_ok "results folder is a file: refused, named, the fix given, nothing started" refused "$rc" "$tmp/file" "$tmp/file.err"
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
as_user=()  # root ignores permission bits: drop the capability that lets it
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --bounding-set=-dac_override,-dac_read_search --)
if [ "$(id -u)" -ne 0 ] || command -v setpriv > /dev/null; then
  "${as_user[@]}" "$bin" sweep "$fix/faults.ini" --results-dir "$tmp/ro" > /dev/null 2> "$tmp/ro.err"
  rc=$?
  tap_ok "read-only results folder: refused, named, the fix given, nothing started" refused "$rc" "$tmp/ro" "$tmp/ro.err"
  tap_ok "read-only results folder: nothing written" [ -z "$(ls -A "$tmp/ro")" ]
else
  num_tests=$((num_tests + 1)); echo "ok $num_tests - read-only results folder # SKIP root without setpriv"
fi

# 4. A result write that fails (file size limit) keeps the old file and leaves no temporary one.
"$bin" mock-server --port 0 --threads 1 --ttft-ms 5 --itl-ms 1 > "$tmp/mock.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do url=$(sed -n 's/^mock-server listening on //p' "$tmp/mock.log"); [ -n "$url" ] && break; sleep 0.05; done
mkdir "$tmp/atomic" && echo old > "$tmp/atomic/r.json"
(ulimit -f 2; trap '' XFSZ; exec "$bin" bench --base-url "$url" --num-prompts 20 --random-input-len 64 \
  --random-output-len 16 --save-result --save-detailed --result-dir "$tmp/atomic" --result-filename r.json) \
  > /dev/null 2> "$tmp/atomic.err"
rc=$?
tap_ok "failed result write: non-zero exit naming the file and the reason" \
  bash -c "[ $rc -ne 0 ] && grep -q 'cannot write $tmp/atomic/r.json: File too large' '$tmp/atomic.err'"
tap_ok "failed result write: the old file is intact, no temporary file left" \
  [ "$(cat "$tmp/atomic/r.json"),$(ls -A "$tmp/atomic")" = "old,r.json" ]

# 5. Ctrl-C during the second workload: 130, the first workload's result kept, nothing left.
"$bin" sweep "$fix/interrupt.ini" --results-dir "$tmp/int" > /dev/null 2> "$tmp/int.err" &
sweep_pid=$!
pids+=("$sweep_pid")
eng_pid=$(wait_running "$tmp/int" 0)
for _ in $(seq 400); do grep -q 'workload 2/2 long' "$tmp/int.err" && break; sleep 0.025; done
sleep 0.3
t0=$(date +%s%N)
kill -INT "$sweep_pid"
wait "$sweep_pid"
rc=$?
echo "# Ctrl-C to exit: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
run=$(ls -d "$tmp"/int/interrupt-*Z 2>/dev/null | head -1)
tap_ok "Ctrl-C: exit status 130" [ "$rc" -eq 130 ]
tap_ok "Ctrl-C: the finished workload's result is written" [ "$(jget "$run/mock/quick.json" 'o.completed')" = 8 ]
tap_ok "Ctrl-C: the cut-short workload has no result (nor a temporary file)" [ "$(ls -A "$run/mock")" = "$(printf 'engine.log\nquick.json')" ]
tap_ok "Ctrl-C: manifest interrupted, engine interrupted, the next pending" \
  [ "$(jget "$run/manifest.json" '[o.interrupted, o.engines[0].status, o.engines[1].status].join()')" = "true,interrupted,pending" ]
tap_ok "Ctrl-C: summary written" [ -s "$run/summary.md" ]
tap_ok "Ctrl-C: the engine (pid from the manifest) is gone" gone "$eng_pid"
tap_ok "Ctrl-C: no process of its group remains" group_empty "$eng_pid"

# 6. The sweep itself SIGKILLed (no handler runs): the kernel's parent-death signal stops the engine.
"$bin" sweep "$fix/interrupt.ini" --results-dir "$tmp/kill" > /dev/null 2>&1 &
sweep_pid=$!
pids+=("$sweep_pid")
eng_pid=$(wait_running "$tmp/kill" 0)
t0=$(date +%s%N)
{ kill -KILL "$sweep_pid"; wait "$sweep_pid"; } 2> /dev/null
for _ in $(seq 100); do gone "$eng_pid" && break; sleep 0.02; done
echo "# engine gone $(( ($(date +%s%N) - t0) / 1000000 )) ms after the sweep's SIGKILL"
tap_ok "SIGKILLed sweep: its engine exits too" gone "$eng_pid"
gone "$eng_pid" || kill -KILL -- "-$eng_pid" 2> /dev/null  # after a failure: leave nothing behind
tap_done
