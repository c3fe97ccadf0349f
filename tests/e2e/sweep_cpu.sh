#!/usr/bin/env bash
# sweep_cpu.sh: runs `gptoss-bench sweep configs/ci.ini` on the built-in CPU engine and checks the
# run folder (manifest fields, one result JSON per engine and workload, the sink-less backend
# recorded as failed with its error line, three rounds), that no engine process is left, the gate
# (pass against the run itself, fail against a clearly faster baseline, pass against the committed
# baseline in ratios to the run's own reference engine), and Ctrl-C: exit 130, no process left, a
# manifest with interrupted=true.
# Usage: sweep_cpu.sh BUILD_DIR (prints TAP).
set -u
build="${1:?usage: sweep_cpu.sh BUILD_DIR}"
bin="$build/bin/gptoss-bench"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] && [ -x "$build/bin/gptoss-engine" ] || { echo "Bail out! $build is not built"; exit 1; }

manifest_get() {  # run folder, JS expression on m: prints its value
  node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1] + "/manifest.json"));
           console.log(eval(process.argv[2]))' "$1" "$2"
}
# Every engine command of the manifest: none may still run, and no port may still listen.
no_engine_left() {
  local cmd
  while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    pgrep -fx -- "$cmd" > /dev/null && { echo "# still running: $cmd"; return 1; }
  done < <(manifest_get "$1" 'm.engines.filter(e => e.status !== "skipped" && e.status !== "pending").map(e => e.command).join("\n")')
  return 0
}

"$bin" sweep configs/ci.ini --results-dir "$tmp/res" > "$tmp/out.txt" 2> "$tmp/err.txt"
rc=$?
tap_ok "sweep exits 0" [ "$rc" -eq 0 ]
run=$(ls -d "$tmp"/res/ci-*Z 2>/dev/null | head -1)
tap_ok "run folder results/ci-<UTC time>" [ -n "$run" ] 
tap_ok "manifest: name, sweep text, times, not interrupted" \
  [ "$(manifest_get "$run" '[m.name, m.sweep_text.includes("[engine.base]"), !!m.started, !!m.finished, m.interrupted].join()')" = "ci,true,true,true,false" ]
tap_ok "manifest: baseline, optimized, one comparison, repeat" \
  [ "$(manifest_get "$run" '[m.baseline, m.optimized, m.comparisons[0].name, m.comparisons[0].candidate, m.repeat].join()')" = "base,async,async scheduling,async,3" ]
tap_ok "manifest: host, CPU, versions" [ "$(manifest_get "$run" '!!(m.host && m.cpu && m.versions)')" = true ]
# The CPU as /proc/cpuinfo names it (vendor, family, model and the ISA flags the kernels go by).
cpuinfo() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -1; }
tap_ok "manifest: the CPU's model name, vendor and family from /proc/cpuinfo" \
  [ "$(manifest_get "$run" '[m.cpu, m.cpu_detail.vendor, m.cpu_detail.family].join("|")')" = \
    "$(cpuinfo 'model name')|$(cpuinfo vendor_id)|$(cpuinfo 'cpu family')" ]
tap_ok "manifest: usable CPUs = nproc" [ "$(manifest_get "$run" 'm.cpu_detail.usable_cpus')" = "$(nproc)" ]
tap_ok "manifest: rounds 3, so 3 results per pair" \
  [ "$(manifest_get "$run" '[m.rounds, m.repeat].join()')" = "3,3" ]
tap_ok "manifest: base and async ok" \
  [ "$(manifest_get "$run" 'm.engines.map(e => e.id + ":" + e.status).join()')" = "base:ok,async:ok,flashinfer:failed" ]
tap_ok "manifest: FLASHINFER failed with its error line" \
  [ "$(manifest_get "$run" 'm.engines[2].error.includes("does not support attention sinks")')" = true ]
all_results() {
  for e in base async; do for w in random sharegpt; do for k in 1 2 3; do
    node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1]));
             process.exit(o.completed === 48 && o.total_token_throughput > 0 ? 0 : 1)' \
      "$run/$e/$w.r$k.json" || return 1
  done; done; done
}
tap_ok "one result JSON per engine, workload and round, 48 requests each" all_results
logs() {
  [ -s "$run/base/engine.log" ] && [ -s "$run/base/engine.round2.log" ] &&
    [ -s "$run/base/engine.round3.log" ] && [ -s "$run/flashinfer/engine.log" ]
}
tap_ok "each engine has its log, one per round" logs
tap_ok "a failed engine is not started again in later rounds" [ ! -e "$run/flashinfer/engine.round2.log" ]
tap_ok "the summary names the machine" grep -q "^Machine: $(cpuinfo 'model name') (" "$run/summary.md"
tap_ok "the failed engine has no result" [ ! -e "$run/flashinfer/random.r1.json" ]
tap_ok "progress with round and ETA on stderr" \
  grep -q 'configuration 2/3 async, workload 2/2 sharegpt (run 3/3), elapsed .*, ETA' "$tmp/err.txt"
tap_ok "no engine process is left behind" no_engine_left "$run"

# The gate: the run passes against itself and fails against a baseline 10 times faster.
gate_passes() { "$bin" gate "$run" "$run" > "$tmp/gate.txt" 2>&1; }
tap_ok "gate: the run passes against itself" gate_passes
cp -r "$run" "$tmp/faster"
for f in "$tmp"/faster/*/*.json; do
  node -e 'const fs = require("fs"), p = process.argv[1], o = JSON.parse(fs.readFileSync(p));
           for (const k of Object.keys(o)) if (k.endsWith("throughput")) o[k] *= 10;
           fs.writeFileSync(p, JSON.stringify(o))' "$f"
done
gate_fails() { ! "$bin" gate "$tmp/faster" "$run" > "$tmp/gate.txt" 2>&1; }
tap_ok "gate: fails against a clearly faster baseline" gate_fails

# The CI gate: this run against the committed baseline (results/baselines/ci-cpu.json, exported
# from one ci.ini run with `gptoss-bench report RUN --export`), judged as ratios to the run's own
# `base` engine, so a CPU 4x slower than the baseline's (or a busy one) moves both sides alike.
# Medians of three rounds moved by -14% to +10% against the baseline in 14 runs, quiet and beside a
# parallel build (docs/PERF.md); 30% holds that and still catches a 2x slower engine
# (gate_slowdown.sh: -38% to -56% in the same runs). A row fails only when, besides, the
# Mann-Whitney test of the run's 3 per-round ratios against the baseline's 9 gives p < 0.05.
gate_baseline() {  # its table goes to the log as TAP comments either way
  "$bin" gate results/baselines/ci-cpu.json "$run" --relative-to base --max-drop 30 > "$tmp/gate.txt" 2>&1
  local rc=$?
  sed 's/^/# /' "$tmp/gate.txt"
  return "$rc"
}
case "$build" in  # ASan + UBSan (make test SANITIZE=1) make the engine several times slower
  */sanitize | */sanitize/)
    num_tests=$((num_tests + 1))
    echo "ok $num_tests - gate against results/baselines/ci-cpu.json # SKIP sanitizer build" ;;
  *) tap_ok "gate: passes against results/baselines/ci-cpu.json (ratios to base, max drop 30%)" gate_baseline ;;
esac

# Ctrl-C during the first engine's workloads.
"$bin" sweep configs/ci.ini --results-dir "$tmp/int" > "$tmp/int.out" 2> "$tmp/int.err" &
sweep_pid=$!
pids+=("$sweep_pid")
for _ in $(seq 600); do
  grep -q 'workload 1/2' "$tmp/int.err" && break
  sleep 0.05
done
kill -INT "$sweep_pid"
wait "$sweep_pid"
rc=$?
run=$(ls -d "$tmp"/int/ci-*Z 2>/dev/null | head -1)
tap_ok "Ctrl-C: exit status 130" [ "$rc" -eq 130 ]
tap_ok "Ctrl-C: manifest says interrupted" [ "$(manifest_get "$run" 'm.interrupted')" = true ]
tap_ok "Ctrl-C: the later engines were not started" \
  [ "$(manifest_get "$run" 'm.engines.slice(1).map(e => e.status).join()')" = "pending,pending" ]
tap_ok "Ctrl-C: no engine process is left behind" no_engine_left "$run"
tap_done
