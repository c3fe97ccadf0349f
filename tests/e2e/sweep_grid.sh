#!/usr/bin/env bash
# sweep_grid.sh: grid sweeps and --resume, with `gptoss-bench mock-server` engines
# (tests/fixtures/sweep/grid.ini: an engine grid over --itl-ms 2, 8 and a workload grid over
# request rates 20, 4). The plan names every point; Ctrl-C during the second engine point's
# first run, then `sweep --resume RUN`: the finished points are kept as they were (same file,
# not rerun), the rest runs, each engine point is started once per sweep invocation with all its
# workload points (one pid, one log), the resumed start logs to engine.resume1.log; summary.md
# has no "(no result)" block for the workload the grid engines were never given; the Pareto
# chart of the rate grid is drawn, its front holding the itl 2 ms points and none of the 8 ms
# ones; the same grid sweep, Ctrl-C and resume on the built-in CPU engine (gpt-oss-tiny);
# --resume refuses another sweep file and a folder that is not a run.
# Usage: sweep_grid.sh BUILD_DIR (prints TAP). About 40 s.
set -u
build="${1:?usage: sweep_grid.sh BUILD_DIR}"
bin_dir=$(cd "$build/bin" 2>/dev/null && pwd)
bin="$bin_dir/gptoss-bench"
fix="$(pwd)/tests/fixtures/sweep"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "Bail out! $build is not built"; exit 1; }
export PATH="$bin_dir:$PATH"  # the sweep file's commands name gptoss-bench

# 1. The plan.
"$bin" sweep "$fix/grid.ini" --dry-run > "$tmp/plan.txt" 2>&1
tap_ok "plan: 3 engines (2 grid points), 3 workloads (2 grid points)" \
  grep -q '^sweep grid: 3 engines, 3 workloads, repeat 1$' "$tmp/plan.txt"
tap_ok "plan: a point's id, label and flags" \
  grep -qF 'engine mock.itl-ms-8 (mock (itl-ms=8), 1 GPU): gptoss-bench mock-server --port {port} --threads 1 --ttft-ms 5 --itl-ms 8' "$tmp/plan.txt"
tap_ok "plan: the grid engines run the rate points only" \
  [ "$(grep -c '^  workloads: rates.request-rate-20 rates.request-rate-4$' "$tmp/plan.txt")" = 2 ]
tap_ok "plan: a workload point's flags" \
  grep -qF 'workload rates.request-rate-4 (rates (request-rate=4)): gptoss-bench bench --dataset-name=random --num-prompts=20 --random-input-len=16 --random-output-len=8 --ignore-eos --request-rate=4' "$tmp/plan.txt"
"$bin" sweep "$fix/grid.ini" --only mock --dry-run > "$tmp/only.txt" 2>&1
tap_ok "--only with a grid's id selects its points" \
  [ "$(grep -c '\[skipped\]' "$tmp/only.txt")" = 1 ]

# 2. Ctrl-C in the second point's rate-4 run (after its rate-20 result is recorded).
"$bin" sweep "$fix/grid.ini" --results-dir "$tmp/res" > /dev/null 2> "$tmp/first.err" &
sweep_pid=$!
pids+=("$sweep_pid")
run=""
for _ in $(seq 600); do
  run=$(ls -d "$tmp"/res/grid-*Z 2>/dev/null | head -1)
  [ -n "$run" ] && [ -f "$run/manifest.json" ] &&
    [ "$(jget "$run/manifest.json" 'o.engines[1].results.length' 2>/dev/null)" = 1 ] && break
  sleep 0.05
done
sleep 0.5
kill -INT "$sweep_pid"
wait "$sweep_pid"
rc=$?
tap_ok "Ctrl-C: exit status 130" [ "$rc" -eq 130 ]
tap_ok "Ctrl-C: the manifest records the points done" \
  [ "$(jget "$run/manifest.json" 'o.engines.map(e => e.status + ":" + e.results.length).join()')" = "ok:2,interrupted:1,pending:0" ]
kept="$run/mock.itl-ms-8/rates.request-rate-20.json"
before=$(stat -c '%i %Y' "$kept" 2>/dev/null; md5sum < "$kept")

# 3. Resume.
"$bin" sweep --resume "$run" > "$tmp/resume.out" 2> "$tmp/resume.err"
rc=$?
tap_ok "resume: exit status 0" [ "$rc" -eq 0 ]
tap_ok "resume: every engine ok with all its results" \
  [ "$(jget "$run/manifest.json" 'o.engines.map(e => e.status + ":" + e.results.length).join()')" = "ok:2,ok:2,ok:3" ]
tap_ok "resume: the finished points are not run again (file untouched)" \
  [ "$(stat -c '%i %Y' "$kept"; md5sum < "$kept")" = "$before" ]
tap_ok "resume: only the 4 missing points ran (4 reports printed)" \
  [ "$(grep -c '^============ Serving Benchmark Result' "$tmp/resume.out")" = 4 ]
tap_ok "resume: the first point is not started again" \
  bash -c "! grep -q 'starting.*--itl-ms 2' '$tmp/resume.err'"
tap_ok "resume: the cut point restarts once, logging to engine.resume1.log" \
  [ "$(ls "$run/mock.itl-ms-8" | grep -c '^engine')" = 2 -a -s "$run/mock.itl-ms-8/engine.resume1.log" ]
tap_ok "resume: each engine point started once for all its workload points" \
  [ "$(grep -c 'starting' "$tmp/resume.err")" = 2 ]
tap_ok "resume: the manifest keeps the start and records the resume" \
  [ "$(jget "$run/manifest.json" '[o.resumed.length, o.started < o.resumed[0], o.interrupted].join()')" = "1,true,false" ]
tap_ok "summary: no '(no result)' block for a workload an engine was never given" \
  bash -c "! grep -q 'no result' '$run/summary.md' && grep -q '^### plain / fixed' '$run/summary.md'"
tap_ok "plot: the rate grid's Pareto chart is drawn" \
  [ -s "$run/plots/pareto-rates.png" -a -s "$run/plots/pareto-rates.svg" ]
front=$(awk '/^# Pareto front/ { on = 1; next } on' "$run/plots/pareto-rates.dat")
tap_ok "plot: the front holds itl 2 ms points and no 8 ms one" \
  bash -c "grep -q 'itl-ms=2' <<< '$front' && ! grep -q 'itl-ms=8' <<< '$front'"
tap_ok "plot: the trade-off chart's axes start at 0" \
  bash -c "grep -q 'set yrange \[0:\*\]' '$run/plots/tradeoff.gp'"

# 4. The same on the built-in CPU engine (gpt-oss-tiny): Ctrl-C while the second engine point
# runs, then --resume; every point measured, the first point's results kept, the Pareto chart
# drawn (its front is the data's; the unit test checks the arithmetic).
"$bin" sweep "$fix/grid-cpu.ini" --results-dir "$tmp/cpu" > /dev/null 2> "$tmp/cpu.err" &
sweep_pid=$!
pids+=("$sweep_pid")
cpu=""
for _ in $(seq 1200); do
  cpu=$(ls -d "$tmp"/cpu/grid-cpu-*Z 2>/dev/null | head -1)
  [ -n "$cpu" ] && [ -f "$cpu/manifest.json" ] &&
    [ "$(jget "$cpu/manifest.json" 'o.engines[1].status' 2>/dev/null)" = running ] && break
  sleep 0.05
done
kill -INT "$sweep_pid"
wait "$sweep_pid"
rc=$?
tap_ok "CPU engine: Ctrl-C during the second point exits 130 with the first point's results" \
  [ "$rc" -eq 130 -a "$(jget "$cpu/manifest.json" 'o.engines[0].status + ":" + o.engines[0].results.length')" = "ok:2" ]
kept="$cpu/tiny.max-num-batched-tokens-64/rates.request-rate-8.json"
before=$(md5sum < "$kept")
"$bin" sweep --resume "$cpu" > /dev/null 2> "$tmp/cpu-resume.err"
rc=$?
tap_ok "CPU engine: the resume measures the rest (every point ok, 2 results each)" \
  [ "$rc" -eq 0 -a "$(jget "$cpu/manifest.json" 'o.engines.map(e => e.status + ":" + e.results.length).join()')" = "ok:2,ok:2" ]
tap_ok "CPU engine: the first point's results are kept, and it is not started again" \
  bash -c "[ \"\$(md5sum < '$kept')\" = '$before' ] && ! grep -q 'starting.*--max-num-batched-tokens 64\$' '$tmp/cpu-resume.err'"
tap_ok "CPU engine: summary grid table and Pareto chart over both points" \
  bash -c "grep -q '^## Grid rates' '$cpu/summary.md' && [ -s '$cpu/plots/pareto-rates.png' ] && [ \$(grep -c '^[0-9]' '$cpu/plots/pareto-rates.dat') -ge 5 ]"

# 5. Refusals.
sed 's/request-rate = 20, 4/request-rate = 20, 5/' "$fix/grid.ini" > "$tmp/other.ini"
"$bin" sweep "$tmp/other.ini" --resume "$run" > /dev/null 2> "$tmp/other.err"
rc=$?
tap_ok "resume: another sweep file is refused, naming the manifest" \
  bash -c "[ $rc -ne 0 ] && grep -q 'is not the sweep file the run was made with' '$tmp/other.err'"
"$bin" sweep --resume "$tmp" > /dev/null 2> "$tmp/norun.err"
rc=$?
tap_ok "resume: a folder without a manifest is refused" \
  bash -c "[ $rc -ne 0 ] && grep -q 'not a run folder' '$tmp/norun.err'"
tap_done
