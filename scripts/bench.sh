#!/usr/bin/env bash
# bench.sh: the `make bench` driver. Runs each benchmark section (one function per benchmark,
# listed in SECTIONS) against the binaries in BUILD_DIR/bench and prints their figures as
# "<section>.<impl>.<name> value" lines, then each section's verdict. Benchmarks are measurements,
# not tests: a slow result is printed, never turned into a failure (docs/PERF.md keeps the log).
# Exits non-zero only when a benchmark cannot run or gives a wrong answer (e.g. token counts that
# differ from the reference). Owns BUILD_DIR/bench/ data files and build/npm (the npm reference
# packages); it must not write anywhere else.
#
#   scripts/bench.sh BUILD_DIR [SECTION...]
#   BENCH_REPS=N    repetitions per timing (default 5, after one untimed warm-up)
#   BENCH_CPU=N     the CPU every timed process is pinned to (default: the first this process may
#                   use; empty: no pinning). The CPUs of a shared VM can differ in speed by 2x, so
#                   compared runs share one.
set -euo pipefail
build=${1:?usage: bench.sh BUILD_DIR [SECTION...]}
shift
reps=${BENCH_REPS:-5}
# First CPU in this process's affinity list ("0-1,4" -> 0); empty when taskset is missing.
first_cpu() {
  command -v taskset >/dev/null || return 0
  taskset -cp $$ | sed 's/.*: *//; s/[-,].*//'
}
cpu=${BENCH_CPU-$(first_cpu)}
npm_dir=build/npm
SECTIONS=(tokenizer)
status=0

# Runs a timed command pinned to $cpu (unpinned when BENCH_CPU is empty or taskset is missing).
pinned() {
  if [ -n "$cpu" ] && command -v taskset >/dev/null; then taskset -c "$cpu" "$@"; else "$@"; fi
}

# Value of "name value" line $2 in the text $1.
field() { awk -v k="$2" '$1 == k { print $2; exit }' <<<"$1"; }

# Prints each line of $2 (a benchmark's "name value" output) as "$1.name value".
prefixed() { sed "s/^/$1./" <<<"$2"; }

# Installs an npm package into build/npm when it is missing there.
need_npm() {
  [ -f "$npm_dir/node_modules/$1/package.json" ] && return 0
  command -v npm >/dev/null || { echo "bench: npm not found; install nodejs, npm" >&2; return 1; }
  echo "bench: installing npm package $1 into $npm_dir" >&2
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" "$1" >&2
}

# Each section is a function bench_<name> that prints its figures and returns non-zero when it
# cannot run or its answer is wrong. It runs in an `||` context, where `set -e` does not apply:
# check every step (`|| return 1`).

# ---------------------------------------------------------------------------------------------
# tokenizer: o200k_base encoding throughput, ours vs the npm tiktoken, on the same corpus file.

bench_tokenizer() {
  local corpus="$build/bench/tokenizer-corpus.txt" ours theirs
  [ -x "$build/bench/bench_tokenizer" ] ||
    { echo "bench: $build/bench/bench_tokenizer is not built; run make bench" >&2; return 1; }
  [ -s "$corpus" ] || scripts/bench-corpus.sh "$corpus" || return 1
  need_npm tiktoken || return 1
  echo "== tokenizer: o200k_base encode (ordinary), $reps reps after a warm-up, CPU ${cpu:-any}," \
    "corpus $corpus"
  ours=$(pinned "$build/bench/bench_tokenizer" "$corpus" "$reps") || return 1
  prefixed tokenizer.ours "$ours"
  theirs=$(pinned node scripts/bench-tiktoken.mjs "$corpus" "$reps") || return 1
  prefixed tokenizer.tiktoken "$theirs"
  awk -v a="$(field "$ours" median_mb_s)" -v b="$(field "$theirs" median_mb_s)" \
      -v c="$(field "$ours" best_mb_s)" -v d="$(field "$theirs" best_mb_s)" \
      'BEGIN { printf "tokenizer.ratio_median %.2f\ntokenizer.ratio_best %.2f\n", a / b, c / d }'
  local n_ours n_theirs
  n_ours=$(field "$ours" tokens)
  n_theirs=$(field "$theirs" tokens)
  if [ "$n_ours" = "$n_theirs" ]; then
    echo "tokenizer.tokens_agree yes"
  else
    echo "tokenizer.tokens_agree no"
    echo "bench: tokenizer: token counts differ (ours $n_ours, tiktoken $n_theirs) on $corpus:" \
      "a tokenizer bug" >&2
    return 1
  fi
}

# ---------------------------------------------------------------------------------------------

if [ $# -gt 0 ]; then SECTIONS=("$@"); fi
for s in "${SECTIONS[@]}"; do
  if ! declare -F "bench_$s" >/dev/null; then
    echo "bench: no benchmark section '$s'" >&2
    status=1
    continue
  fi
  "bench_$s" || { echo "bench: section $s failed" >&2; status=1; }
done
exit "$status"
