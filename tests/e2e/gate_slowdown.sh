#!/usr/bin/env bash
# gate_slowdown.sh: the CI gate catches a slower engine. Runs configs/ci.ini's base and async
# engines with the async one made 2x slower per step (GPTOSS_TEST_STEP_SLOWDOWN=2, a testing
# hook of `gptoss-engine serve`), then gates the run against results/baselines/ci-cpu.json
# exactly as sweep_cpu.sh does (ratios to base, max drop 30%): it must fail with a regression on
# both of async's workloads, and judge nothing about base (the reference). Also: a bad factor is
# refused with a message that names the variable.
# Usage: gate_slowdown.sh BUILD_DIR (prints TAP).
set -u
build="${1:?usage: gate_slowdown.sh BUILD_DIR}"
bin="$build/bin/gptoss-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] && [ -x "$build/bin/gptoss-engine" ] || { echo "Bail out! $build is not built"; exit 1; }

GPTOSS_TEST_STEP_SLOWDOWN=0.5 "$build/bin/gptoss-engine" serve gpt-oss-tiny --port 0 \
  > "$tmp/bad.out" 2> "$tmp/bad.err"
rc=$?
tap_ok "a slowdown factor below 1 is refused" [ "$rc" -ne 0 ]
tap_ok "the refusal names the variable and the range" \
  grep -q "GPTOSS_TEST_STEP_SLOWDOWN='0.5' must be a factor from 1 to 1000" "$tmp/bad.err"

case "$build" in  # ASan + UBSan slow each engine by their own factor: the ratios do not hold
  */sanitize | */sanitize/)
    for what in "the slowed run fails the gate" "both async workloads regress"; do
      num_tests=$((num_tests + 1))
      echo "ok $num_tests - $what # SKIP sanitizer build"
    done
    tap_done
    exit 0 ;;
esac

# ci.ini with the slowdown in [engine.async]'s environment.
awk '{ print } /^\[engine\.async\]$/ { print "env.GPTOSS_TEST_STEP_SLOWDOWN = 2" }' configs/ci.ini \
  > "$tmp/ci.ini"
"$bin" sweep "$tmp/ci.ini" --only base,async --results-dir "$tmp/res" > "$tmp/out.txt" 2> "$tmp/err.txt"
rc=$?
run=$(ls -d "$tmp"/res/ci-*Z 2>/dev/null | head -1)
tap_ok "the slowed sweep runs" [ "$rc" -eq 0 -a -n "$run" ]
tap_ok "the slowed engine says so in its log" \
  grep -q "GPTOSS_TEST_STEP_SLOWDOWN=2: every step is made 2x slower" "$run/async/engine.log"

"$bin" gate results/baselines/ci-cpu.json "$run" --relative-to base --max-drop 30 > "$tmp/gate.txt" 2>&1
rc=$?
sed 's/^/# /' "$tmp/gate.txt"
tap_ok "the slowed run fails the gate (exit 1)" [ "$rc" -eq 1 ]
regressions() {
  grep -Eq '^async +random +total_token_throughput / base .* REGRESSION' "$tmp/gate.txt" &&
    grep -Eq '^async +sharegpt +total_token_throughput / base .* REGRESSION' "$tmp/gate.txt"
}
tap_ok "both async workloads regress" regressions
tap_ok "the reference engine itself is not judged" bash -c "! grep -q '^base ' '$tmp/gate.txt'"
tap_done
