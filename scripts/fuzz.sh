#!/usr/bin/env bash
# Runs each libFuzzer target (built by `make fuzz` in FUZZ_BUILD/bin) for SECONDS, one at a
# time, from its committed seed corpus tests/fuzz/corpus/NAME. New inputs the fuzzer finds go
# to a temporary folder deleted at the end, never into the committed corpus. Prints one line per
# target (execs/s, total execs, edges covered, corpus size reached) and, for a crash, where its
# input is and what to do with it. Exits non-zero if any target crashed.
# Logs: FUZZ_BUILD/logs/NAME.log; crash inputs: FUZZ_BUILD/artifacts/NAME/.
set -uo pipefail
build=${1:?usage: fuzz.sh FUZZ_BUILD SECONDS NAME...}
seconds=${2:?usage: fuzz.sh FUZZ_BUILD SECONDS NAME...}
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/logs"
crashed=()

stat_of() {  # log, libFuzzer final stat name
  sed -n "s/^stat::$2: *\([0-9]*\).*/\1/p" "$1" | tail -1
}
status_of() {  # log, field of libFuzzer's status lines (cov, corp): its last value
  sed -n "s/^#[0-9].* $2: \([0-9]*\).*/\1/p" "$1" | tail -1
}

printf '%-18s %9s %12s %6s %7s  %s\n' target execs/s execs cov corpus result
for name in "$@"; do
  bin=$build/bin/fuzz_$name
  log=$build/logs/$name.log
  artifacts=$build/artifacts/$name
  mkdir -p "$work/$name" "$artifacts"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  result=ok
  if [ "$rc" -ne 0 ]; then
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="CRASH (exit $rc): input ${input:-not saved}; see $log"
    crashed+=("$name")
  fi
  printf '%-18s %9s %12s %6s %7s  %s\n' "$name" "$(stat_of "$log" average_exec_per_sec)" \
    "$(stat_of "$log" number_of_executed_units)" "$(status_of "$log" cov)" \
    "$(status_of "$log" corp)" "$result"
done

if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz: crashed: ${crashed[*]}. Reproduce with FUZZ_BUILD/bin/fuzz_NAME INPUT; once fixed,"
  echo "fuzz: copy the input into tests/fuzz/corpus/NAME/ (named crash-<what>);"
  echo "fuzz: make test replays it from then on."
  exit 1
fi
