#!/usr/bin/env bash
# ci-gate.sh: how a GPU CI job gates throughput. It runs the CI sweep, writes the summary and
# plots, then compares the run with the committed baseline and fails the job on a regression.
#
#   scripts/ci-gate.sh [SWEEP_FILE] [BASELINE]      (defaults: configs/ci.ini, results/baselines/ci-gpu.json)
#
# Exit status is the gate's: 0 pass, 1 regression (more than MAX_DROP percent worse), 2 unusable
# input (the sweep or the baseline is missing a pair). Environment: BUILD (default build),
# MAX_DROP (default 5), METRICS (default total_token_throughput,mean_tpot_ms), RELATIVE_TO (an
# engine id: judge ratios to that engine of the same run, so the baseline may come from another
# machine; default: absolute numbers, for a job that always runs on the same machine).
# To refresh the baseline after an intended change, export a good run as a result file:
#   build/bin/gptoss-bench report results/<run> --export results/baselines/ci-gpu.json
set -euo pipefail
sweep_file=${1:-configs/ci.ini}
baseline=${2:-results/baselines/ci-gpu.json}
bin=${BUILD:-build}/bin/gptoss-bench

# 1. The sweep (the sweep half of the harness) writes results/<name>-<UTC time>/ and prints it.
"$bin" sweep "$sweep_file"
run=$(ls -dt results/*-*T*Z | head -n 1)

# 2. Reports for the job's artifacts: summary.md/csv beside the study's published numbers, and
#    the charts (a missing gnuplot only loses the charts, not the gate).
"$bin" report "$run" --compare results/reference/seed-h100.json
"$bin" plot "$run" || echo "ci-gate: no charts (see above)" >&2

# 3. The gate: medians over the sweep's repeats, per GPU so TP/PP configurations compare fairly.
set +e
"$bin" gate "$baseline" "$run" --metric "${METRICS:-total_token_throughput,mean_tpot_ms}" \
  --max-drop "${MAX_DROP:-5}" --per-gpu ${RELATIVE_TO:+--relative-to "$RELATIVE_TO"}
status=$?
set -e
echo "ci-gate: gate exit status $status (0 pass, 1 regression, 2 unusable input); run: $run"
exit "$status"
