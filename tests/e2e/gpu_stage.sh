#!/usr/bin/env bash
# gpu_stage.sh: proves the GPU check's packaging (scripts/gpu-stage.sh, the staged run.sh) on a
# machine without nvcc or a GPU: stages BUILD_DIR's binaries (GPU_STAGE_FROM, nothing built), moves
# the folder elsewhere, and checks that every staged binary (unpacked from stage.tar.gz) resolves
# each non-system library from the staged lib/ (none missing, none taken from this machine's
# Debian packages), that the engine
# and gptoss-bench run from there, that `run.sh OUT` with GPU_RUN_DEVICE=cpu passes the golden step
# (one rank, then -tp 2, -pp 2 and -tp 2 -pp 2 as threads)
# on the CPU (the CUDA-only steps "skipped: no GPU") and packs its logs into OUT/gpu-check.tar.gz,
# that a failed step skips the steps after it unless GPU_CHECK_KEEP_GOING=1, that the folder
# stays under the carry limit, and the errors for a bad BUILD_DIR, a bad
# GPU_STAGE_BASELINE and an over-size folder. Usage: gpu_stage.sh BUILD_DIR (TAP).
set -u
build=${1:?usage: gpu_stage.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$build/bin/gptoss-engine" ] || { echo "Bail out! $build/bin/gptoss-engine is not built"; exit 1; }

GPU_STAGE_FROM=$build scripts/gpu-stage.sh "$tmp/stage" > "$tmp/stage.log" 2>&1
rc=$?
tap_ok "gpu-stage.sh stages $build (GPU_STAGE_FROM)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || sed 's/^/# /' "$tmp/stage.log"
tap_ok "it prints the folder's size and the working tree's" \
  grep -qE "MiB \+ the working tree's [0-9]+ MiB \(limit 62\)" "$tmp/stage.log"
mv "$tmp/stage" "$tmp/moved"  # nothing may depend on where it was staged
dir=$tmp/moved
tap_ok "the folder holds run.sh, gpu-check.sh, STAGED and stage.tar.gz alone" \
  test -x "$dir/run.sh" -a -f "$dir/gpu-check.sh" -a -f "$dir/STAGED" -a -f "$dir/stage.tar.gz" \
  -a "$(ls "$dir" | wc -l)" -eq 4
tap_ok "the folder is at most 40 MiB (it travels with the working tree, 64 MiB in all)" \
  test "$(du -sm "$dir" | cut -f1)" -le 40

mkdir -p "$tmp/unpacked" && tar -xzf "$dir/stage.tar.gz" -C "$tmp/unpacked"
staged=$tmp/unpacked
lib=$staged/lib
tap_ok "stage.tar.gz holds the fixtures, the ShareGPT-format dataset and the tokenizer" \
  test -f "$staged/tests/fixtures/gptoss-tiny/a/golden.json" \
  -a -f "$staged/datasets/sharegpt-synth.json" -a -f "$staged/datasets/tokenizer/o200k_base.tiktoken"
tap_ok "stage.tar.gz holds libcjson and libmicrohttpd" test -f "$lib/libcjson.so.1" -a -f "$lib/libmicrohttpd.so.12"
excluded() {
  local f
  for f in "$lib"/*; do
    [[ "${f##*/}" =~ ^(libc|libm|libstdc\+\+|libgcc_s|ld-linux.*|libcudart|libcublas.*|libnccl.*|libcuda)\.so ]] && return 1
  done
  return 0
}
tap_ok "stage.tar.gz leaves out glibc, libstdc++, libgcc_s and the CUDA libraries" excluded
# Every library ldd resolves is the staged one, or one the device has (glibc & co, CUDA).
resolves_from_stage() {  # binary
  local out line bad=0
  out=$(LD_LIBRARY_PATH=$lib ldd "$1" 2>&1) || return 1
  while read -r line; do
    case $line in
      *"not found"*) echo "# $1: $line"; bad=1 ;;
      *"=> $lib/"*) ;;
      *"=> "*) [[ "$line" =~ ^(libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux[^ ]*|libcudart|libcublas[A-Za-z]*|libnccl[^ ]*|libcuda)\.so ]] ||
                 { echo "# $1: from this machine, not the stage: $line"; bad=1; } ;;
    esac
  done <<< "$out"
  return "$bad"
}
for b in "$staged"/bin/*; do
  tap_ok "$(basename "$b") loads every library from the stage or the device" resolves_from_stage "$b"
done
runs_staged() { LD_LIBRARY_PATH=$lib "$staged/bin/$1" --help > /dev/null 2>&1; }
tap_ok "the staged gptoss-engine --help runs" runs_staged gptoss-engine
tap_ok "the staged gptoss-bench --help runs" runs_staged gptoss-bench

(cd "$tmp" && GPU_RUN_DEVICE=cpu GPU_CHECK_BUDGET_S=120 "$dir/run.sh" "$tmp/out") > "$tmp/run.log" 2>&1
rc=$?
tap_ok "run.sh OUT with GPU_RUN_DEVICE=cpu exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || sed 's/^/# /' "$tmp/run.log"
tap_ok "it packs the logs into OUT/gpu-check.tar.gz, and leaves OUT/summary.txt" \
  test -f "$tmp/out/gpu-check.tar.gz" -a -f "$tmp/out/summary.txt" -a ! -e "$tmp/out/logs"
tar -tzf "$tmp/out/gpu-check.tar.gz" > "$tmp/listing" 2>/dev/null
holds() { local f; for f in "$@"; do grep -qx "logs/$f" "$tmp/listing" || return 1; done; }
tap_ok "the tarball holds summary.txt, env.txt and the golden logs" \
  holds summary.txt env.txt golden-a-f32.log golden-a-f32.json golden-b-bf16.log
tar -xzOf "$tmp/out/gpu-check.tar.gz" logs/env.txt > "$tmp/env.txt" 2>/dev/null
tap_ok "the tarball's env.txt names the stage's libraries" grep -q '^LD_LIBRARY_PATH=.*gpu-stage\.' "$tmp/env.txt"
tap_ok "ops, kernels and serve are skipped: no GPU" \
  test "$(grep -cE '^(ops|kernels|serve-sync|serve-async) +skipped +no GPU' "$tmp/out/summary.txt")" -eq 4
if command -v python3 > /dev/null; then
  tap_ok "the golden step passes on the CPU (4 rows)" \
    test "$(grep -cE '^golden-[ab]-(f32|bf16) +PASS' "$tmp/out/summary.txt")" -eq 4
  tap_ok "... and again on ranks: -tp 2, -pp 2 and -tp 2 -pp 2 (12 rows)" \
    test "$(grep -cE '^golden-[ab]-(f32|bf16)-(tp2|pp2|tp2pp2) +PASS' "$tmp/out/summary.txt")" -eq 12
else
  tap_ok "without python3 the golden step says why it is skipped" grep -q 'python3 not found' "$tmp/out/summary.txt"
fi
tap_ok "run.sh prints the summary table" grep -q '^step  *result  *detail' "$tmp/run.log"

# A failed step skips the ones after it, unless GPU_CHECK_KEEP_GOING=1. Here the device step
# fails for want of a GPU (GPU_RUN_DEVICE left at cuda), and golden then runs or is skipped.
gated() {  # keep-going value -> the summary's golden lines
  (cd "$tmp" && GPU_CHECK_KEEP_GOING=$1 GPU_CHECK_STEPS="device golden" GPU_CHECK_BUDGET_S=60 \
    "$dir/run.sh" "$tmp/gated$1") > /dev/null 2>&1
  grep -E '^golden' "$tmp/gated$1/summary.txt"
}
if nvidia-smi -L > /dev/null 2>&1; then
  echo "# skipped: GPU_CHECK_KEEP_GOING (a GPU is present: the device step passes)"
elif command -v python3 > /dev/null; then
  tap_ok "after a failed step the next is skipped, naming the failure" \
    eval 'gated 0 | grep -qE "^golden +skipped +after device failed"'
  tap_ok "with GPU_CHECK_KEEP_GOING=1 it runs all the same (and fails here: no GPU)" \
    eval 'gated 1 | grep -qE "^golden-a-f32 +FAIL +generate failed"'
fi

fails_saying() {  # text, command...: the command fails and its output holds the text
  local text=$1; shift
  ! "$@" > "$tmp/fail.log" 2>&1 && grep -qF "$text" "$tmp/fail.log"
}
tap_ok "a GPU_STAGE_FROM without binaries fails, naming it" \
  fails_saying "nowhere has no bin/gptoss-engine" env GPU_STAGE_FROM="$tmp/nowhere" scripts/gpu-stage.sh "$tmp/bad"
tap_ok "a folder over GPU_STAGE_MAX_MIB fails, naming the limit" \
  fails_saying "pass 1 MiB" env GPU_STAGE_FROM="$build" GPU_STAGE_MAX_MIB=1 scripts/gpu-stage.sh "$tmp/big"
tap_ok "a GPU_STAGE_BASELINE that is no commit fails, naming it" \
  fails_saying "GPU_STAGE_BASELINE=no-such-rev is no commit" env GPU_STAGE_FROM="$build" \
  GPU_STAGE_BASELINE=no-such-rev scripts/gpu-stage.sh "$tmp/nobase"
mkdir -p "$tmp/precious" && touch "$tmp/precious/keep"
tap_ok "a folder that is not a stage is never replaced" \
  fails_saying "is not a staged folder" env GPU_STAGE_FROM="$build" scripts/gpu-stage.sh "$tmp/precious"
tap_ok "... and keeps its files" test -f "$tmp/precious/keep"
tap_done
