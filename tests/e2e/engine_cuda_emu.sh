#!/usr/bin/env bash
# engine_cuda_emu.sh: the whole engine on the CUDA backend with no GPU: BUILD/simt/gptoss-engine,
# whose CUDA backend runs on the host SIMT emulator (tests/simt), generates on both golden
# checkpoints with --device cuda, judged as scripts/gpu-check.sh's golden step judges a GPU:
# f32 weights within 1e-4 of the float64 reference's prompt logits with its greedy ids, bf16
# weights (MXFP4 experts, a bf16 KV cache, tensor-core attention) within 5e-2. Skipped where the
# emulated engine is not built (make test SANITIZE=1). Usage: engine_cuda_emu.sh BUILD_DIR (TAP).
set -u
bin="${1:?usage: engine_cuda_emu.sh BUILD_DIR}/simt/gptoss-engine"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
. tests/e2e/golden.bash
[ -x "$bin" ] || { echo "1..0 # skip $bin is not built (make test SANITIZE=1 leaves it out)"; exit 0; }

for fixture in a b; do
  tap_ok "checkpoint $fixture on the emulated CUDA backend, f32 weights: logits within 1e-4, the same greedy ids" \
    matches_golden "$bin" 1e-4 same "$fixture" --device cuda --weight-format f32
  tap_ok "checkpoint $fixture on the emulated CUDA backend, bf16 weights: logits within 5e-2" \
    matches_golden "$bin" 5e-2 any "$fixture" --device cuda --weight-format bf16
done
tap_done
