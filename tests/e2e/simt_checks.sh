#!/usr/bin/env bash
# simt_checks.sh: the SIMT emulator's checking builds catch what compute-sanitizer would on a GPU,
# in tests/simt/test_simt.cu's kernels, each run alone.
# - racecheck (BUILD/simt-thread, make SIMT_SANITIZER=thread: tests/simt/racecheck.h): a read of
#   another thread's shared memory with no barrier between, a warp's exchange through shared
#   memory ordered only by a shuffle (which orders no memory), and a stage read after the barrier
#   but before its cp.async wait are each reported as a data race at the kernel's own line, and
#   so are two blocks adding to one global int by a plain read and write; the same kernels with
#   the barrier, __syncwarp or wait put back, or the add made atomic, run clean.
# - memcheck (BUILD/simt-address, make SIMT_SANITIZER=address: tests/simt/memcheck.h): a read one
#   element past a cudaMalloc'd buffer, a static shared array and dynamic shared memory is each
#   reported by AddressSanitizer at the kernel's line; the same reads in bounds run clean.
# A build that is missing skips its half (make test SANITIZE=1 builds neither).
# Usage: simt_checks.sh BUILD_DIR (TAP).
set -u
build="${1:?usage: simt_checks.sh BUILD_DIR}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
races="$build/simt-thread/test_simt" memory="$build/simt-address/test_simt"
[ -x "$races" ] || [ -x "$memory" ] ||
  { echo "1..0 # skip neither $races nor $memory is built (make test SANITIZE=1)"; exit 0; }

# reported BIN CASE ERROR KERNEL LINE: a failing exit, and the report ERROR with the kernel's
# frame at tests/simt/test_simt.cu:LINE (one of the accesses)
reported() {
  "$1" "$2" > "$tmp/$2.txt" 2>&1 && return 1
  grep -m1 -A2 "ERROR: AddressSanitizer\|WARNING: ThreadSanitizer" "$tmp/$2.txt" | sed 's/^/# /'
  grep -q "$3" "$tmp/$2.txt" && grep -q "#[0-9] .*$4(.*tests/simt/test_simt.cu:$5" "$tmp/$2.txt"
}
clean() {
  "$1" "$2" > "$tmp/$2.txt" 2>&1 && ! grep -q 'Sanitizer' "$tmp/$2.txt"
}
line_of() { grep -n "$1" tests/simt/test_simt.cu | head -1 | cut -d: -f1; }

if [ -x "$races" ]; then
  race='WARNING: ThreadSanitizer: data race'
  tap_ok "a shared-memory read with no barrier after another thread's write is a reported race" \
    reported "$races" block-race "$race" neighbour_kernel "$(line_of 'out\[t\] = s\[(t + 1) % THREADS\]')"
  tap_ok "the same with __syncthreads between runs clean" clean "$races" block-ok
  tap_ok "a warp's shared-memory exchange ordered only by a shuffle is a reported race" \
    reported "$races" warp-race "$race" warp_kernel "$(line_of 'out\[l\] += s\[l ^ 1\]')"
  tap_ok "the same with __syncwarp runs clean" clean "$races" warp-ok
  tap_ok "a cp.async stage read after the barrier but before its wait is a reported race" \
    reported "$races" copy-race "$race" copy_kernel "$(line_of 'out\[t\] = s\[(t + shift) % THREADS\]')"
  tap_ok "the same with the wait before the barrier runs clean" clean "$races" copy-ok
  tap_ok "blocks adding to one global int by a plain read and write is a reported race" \
    reported "$races" grid-race "$race" blocks_add_kernel "$(line_of '\*total += 1;')"
  tap_ok "the same add made atomic runs clean" clean "$races" grid-ok
fi
if [ -x "$memory" ]; then
  past=$(line_of 'out\[t\] = where == 0')
  tap_ok "a read one past a cudaMalloc'd buffer is reported" \
    reported "$memory" global-past 'AddressSanitizer: heap-buffer-overflow' reach_kernel "$past"
  tap_ok "a read one past a static shared array is reported" \
    reported "$memory" static-past 'AddressSanitizer: heap-buffer-overflow' reach_kernel "$past"
  tap_ok "a read one past the dynamic shared memory is reported" \
    reported "$memory" dynamic-past 'AddressSanitizer: heap-buffer-overflow' reach_kernel "$past"
  tap_ok "the same reads in bounds run clean" clean "$memory" reach-ok
fi
tap_done
