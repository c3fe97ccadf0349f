#!/usr/bin/env bash
# gate_slowdown.sh: the CI gate catches a slower engine. Runs configs/ci.ini's base and async
# engines with the async one made 2x slower per step (GPTOSS_TEST_STEP_SLOWDOWN=2, a testing
# hook of `gptoss-engine serve`), then gates the run against results/baselines/ci-cpu.json
# exactly as sweep_cpu.sh does (ratios to base, max drop 30%): it must fail with a regression on
# both of async's workloads (the median drop past 30% and the Mann-Whitney p below 0.05), and
# judge nothing about base (the reference). Five rounds, not ci.ini's three: against the
# baseline's 9 ratios, 3 reach p < 0.05 only while they win at most 2 of the 27 pairs, and on a
# busy 2-core machine one slowed ratio of 3 has landed among the baseline's (U = 2, p 0.036);
# 5 may win 7 of 45 (p 0.042), so the test does not flake (it costs about 25 s more). Also: a
# bad factor is refused with a message that names the variable, a bad --alpha with one that
# names the flag.
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

"$bin" gate results/baselines/ci-cpu.json results/baselines/ci-cpu.json --alpha 1 \
  > "$tmp/alpha.out" 2> "$tmp/alpha.err"
rc=$?
tap_ok "gate --alpha 1 is unusable input (exit 2), naming the flag and the range" \
  bash -c "[ $rc -eq 2 ] && grep -q \"gate: --alpha needs a p-value threshold between 0 and 1 (e.g. 0.05), not '1'\" '$tmp/alpha.err'"

case "$build" in  # ASan + UBSan slow each engine by their own factor: the ratios do not hold
  */sanitize | */sanitize/)
    for what in "the slowed run fails the gate" "both async workloads regress, significantly (p < 0.05)"; do
      num_tests=$((num_tests + 1))
      echo "ok $num_tests - $what # SKIP sanitizer build"
    done
    tap_done
    exit 0 ;;
esac

# ci.ini with the slowdown in [engine.async]'s environment.
awk '{ print } /^\[engine\.async\]$/ { print "env.GPTOSS_TEST_STEP_SLOWDOWN = 2" }' configs/ci.ini \
  > "$tmp/ci.ini"
"$bin" sweep "$tmp/ci.ini" --only base,async --rounds 5 --results-dir "$tmp/res" > "$tmp/out.txt" 2> "$tmp/err.txt"
rc=$?
run=$(ls -d "$tmp"/res/ci-*Z 2>/dev/null | head -1)
tap_ok "the slowed sweep runs" [ "$rc" -eq 0 -a -n "$run" ]
tap_ok "the slowed engine says so in its log" \
  grep -q "GPTOSS_TEST_STEP_SLOWDOWN=2: every step is made 2x slower" "$run/async/engine.log"

"$bin" gate results/baselines/ci-cpu.json "$run" --relative-to base --max-drop 30 > "$tmp/gate.txt" 2>&1
rc=$?
sed 's/^/# /' "$tmp/gate.txt"
tap_ok "the slowed run fails the gate (exit 1)" [ "$rc" -eq 1 ]
regressions() {  # 9:5 ratios and a p-value below 0.05, not the median-only fallback
  local w
  for w in random sharegpt; do
    grep -Eq "^async +$w +total_token_throughput / base .* 9:5 +0\.0[0-4][0-9]*  REGRESSION\$" \
      "$tmp/gate.txt" || return 1
  done
}
tap_ok "both async workloads regress, significantly (p < 0.05)" regressions
tap_ok "the reference engine itself is not judged" bash -c "! grep -q '^base ' '$tmp/gate.txt'"
tap_done
