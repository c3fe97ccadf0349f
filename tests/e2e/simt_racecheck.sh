#!/usr/bin/env bash
# simt_racecheck.sh: the race-checking build of the SIMT emulator (BUILD/simt-thread, make
# SIMT_SANITIZER=thread: tests/simt/racecheck.h) catches what compute-sanitizer's racecheck would
# on a GPU. tests/simt/test_simt.cu's kernels, each run alone: a read of another thread's shared
# memory with no barrier between, a warp's exchange through shared memory ordered only by a
# shuffle (which orders no memory), and a stage read after the barrier but before its cp.async
# wait must each be reported as a data race at the kernel's own line, and the same kernels with
# the barrier, __syncwarp or wait put back must run clean. Skipped where the build is missing
# (make test SANITIZE=1). Usage: simt_racecheck.sh BUILD_DIR (TAP).
set -u
bin="${1:?usage: simt_racecheck.sh BUILD_DIR}/simt-thread/test_simt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "1..0 # skip $bin is not built (make test SANITIZE=1 leaves it out)"; exit 0; }

# reported CASE KERNEL LINE: ThreadSanitizer's exit status and a data race in KERNEL at
# test_simt.cu:LINE (the racing access)
reported() {
  "$bin" "$1" > "$tmp/$1.txt" 2>&1
  local rc=$?
  grep -m1 -A2 'WARNING: ThreadSanitizer: data race' "$tmp/$1.txt" | sed 's/^/# /'
  [ "$rc" -eq 66 ] && grep -q "#0 $2(.*tests/simt/test_simt.cu:$3 " "$tmp/$1.txt"
}
clean() {
  "$bin" "$1" > "$tmp/$1.txt" 2>&1 && ! grep -q ThreadSanitizer "$tmp/$1.txt"
}
line_of() { grep -n "$1" tests/simt/test_simt.cu | head -1 | cut -d: -f1; }

tap_ok "a shared-memory read with no barrier after the other thread's write is a reported race" \
  reported block-race neighbour_kernel "$(line_of 'out\[t\] = s\[(t + 1) % THREADS\]')"
tap_ok "the same with __syncthreads between runs clean" clean block-ok
tap_ok "a warp's shared-memory exchange ordered only by a shuffle is a reported race" \
  reported warp-race warp_kernel "$(line_of 'out\[l\] += s\[l ^ 1\]')"
tap_ok "the same with __syncwarp runs clean" clean warp-ok
tap_ok "a cp.async stage read after the barrier but before its wait is a reported race" \
  reported copy-race copy_kernel "$(line_of 'out\[t\] = s\[(t + shift) % THREADS\]')"
tap_ok "the same with the wait before the barrier runs clean" clean copy-ok
tap_done
