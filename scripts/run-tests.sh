#!/usr/bin/env bash
# Runs every test suite and sums them: unit tests (cmocka binaries in BUILD/tests, TAP output),
# the emulator's own tests and the quick tests of test_cuda_ops on the host SIMT emulator
# (BUILD/simt/test_cuda_ops: the CUDA backend's kernels against their CPU twins without a GPU;
# `make test-cuda-emu` runs them all), some of them again on its race- and memory-checking
# builds (BUILD/simt-thread, BUILD/simt-address), and end-to-end scripts (tests/e2e/*.sh, TAP
# output, given BUILD). Ends with one line "N passed, N failed" and exits non-zero if anything
# failed or a suite crashed.
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR}
passed=0
failed=0

run_suite() {  # name, command...
  local name=$1; shift
  local out rc ok not_ok started=$SECONDS
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" | sed "s|^|[$name] |"
  echo "[$name] took $((SECONDS - started)) s"
  ok=$(printf '%s\n' "$out" | grep -c '^ok ')
  not_ok=$(printf '%s\n' "$out" | grep -c '^not ok ')
  if [ "$rc" -ne 0 ] && [ "$not_ok" -eq 0 ]; then
    echo "[$name] suite exited with status $rc without reporting a failed test: counted as 1 failure"
    not_ok=1
  fi
  passed=$((passed + ok))
  failed=$((failed + not_ok))
}

export CMOCKA_MESSAGE_OUTPUT=TAP
for t in "$build"/tests/test_*; do
  [ -x "$t" ] && run_suite "$(basename "$t")" "$t"
done
# the emulated tests of about half a minute or less each on 2 cores (about 80 s in all; the
# others, sampling over 201,088 logits, MoE at GPT-OSS's widths, the graph replays, take minutes),
# with each launch's blocks and threads run last to first (a GPU promises no order; the checking
# builds and the engine below run them first to last)
emu_quick=test_alloc,test_add_zero,test_embed,test_rmsnorm,test_rope,test_linear,test_attention
emu_quick+=,test_moe_mxfp4,test_moe_formats,test_moe_uneven,test_moe_ties,test_moe_wide
emu_quick+=,test_sample_short_rows,test_sample_top_short_rows,test_weights_refuse
[ -x "$build/simt/test_simt" ] && run_suite test_simt "$build/simt/test_simt"
[ -x "$build/simt/test_nccl" ] && run_suite test_nccl "$build/simt/test_nccl"
[ -x "$build/simt/test_cuda_ops" ] &&
  SIMT_ORDER=reverse EMU_TESTS=$emu_quick run_suite test_cuda_ops-simt "$build/simt/test_cuda_ops"
# the kernels with shared memory and barriers among them again on the checking builds: under
# ThreadSanitizer (BUILD/simt-thread, 15-25x slower) and AddressSanitizer (BUILD/simt-address);
# a race or an out-of-bounds access fails the suite
# (the race check gives the CPU twin one thread: test_cuda_ops.c, TEST_CPU_TWIN_THREADS)
emu_checked=test_rmsnorm,test_attention_groups,test_moe_mxfp4,test_moe_formats,test_moe_uneven
emu_checked+=,test_sample_short_rows,test_sample_top_short_rows
for check in thread:racecheck:1 address:memcheck:2; do
  IFS=: read -r sanitizer name twin_threads <<< "$check"
  dir="$build/simt-$sanitizer"
  [ -x "$dir/test_simt" ] && run_suite "test_simt-$name" "$dir/test_simt"
  [ -x "$dir/test_nccl" ] && run_suite "test_nccl-$name" "$dir/test_nccl"
  [ -x "$dir/test_cuda_ops" ] && TEST_CPU_TWIN_THREADS=$twin_threads EMU_TESTS=$emu_checked \
    run_suite "test_cuda_ops-$name" "$dir/test_cuda_ops"
done
# and the whole engine's forward passes on the golden checkpoints, memory-checked (about 10 s)
SIMT_SANITIZER=address run_suite engine_cuda_emu-memcheck bash tests/e2e/engine_cuda_emu.sh "$build"
for t in tests/e2e/*.sh; do
  [ -f "$t" ] && run_suite "$(basename "$t" .sh)" bash "$t" "$build"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
