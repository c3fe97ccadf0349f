#!/usr/bin/env bash
# engine_cuda_emu.sh: the whole engine on the CUDA backend with no GPU: BUILD/simt/gptoss-engine,
# whose CUDA backend runs on the host SIMT emulator (tests/simt), generates on both golden
# checkpoints with --device cuda, judged as scripts/gpu-check.sh's golden step judges a GPU:
# f32 weights within 1e-4 of the float64 reference's prompt logits with its greedy ids, bf16
# weights (MXFP4 experts, a bf16 KV cache, tensor-core attention) within 5e-2. With EMU_SERVE=1
# (make test-cuda-emu; about 3 minutes) also `serve` with its decode steps' CUDA graphs and with
# --enforce-eager: 4 greedy completions at once give the same texts, and the shutdown line says
# graphs ran steps (gpu-check's `graphs` step). With SIMT_SANITIZER=address or thread, the same
# on the memory- or race-checking build (BUILD/simt-address, BUILD/simt-thread): a bad access
# or a race in any kernel of a whole forward pass fails the generation. Skipped where that
# engine is not built (make test SANITIZE=1).
# Usage: [EMU_SERVE=1] [SIMT_SANITIZER=address|thread] engine_cuda_emu.sh BUILD_DIR (TAP).
set -u
bin="${1:?usage: engine_cuda_emu.sh BUILD_DIR}/simt${SIMT_SANITIZER:+-$SIMT_SANITIZER}/gptoss-engine"
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

# serve on the emulated GPU (mode: graphs or eager); the 4 completions' texts into $tmp/MODE.txt
serve_texts() {
  local mode=$1 flags=() url pid
  [ "$mode" = eager ] && flags=(--enforce-eager)
  "$bin" serve gpt-oss-tiny --device cuda --load-format dummy --weight-format bf16 --port 0 \
    --max-num-seqs 4 --max-num-batched-tokens 64 --max-model-len 128 --cuda-graph-sizes 4 \
    "${flags[@]}" > "$tmp/serve-$mode.log" 2>&1 &
  pid=$!
  url=$(wait_for_output "$tmp/serve-$mode.log" 's/^gptoss-engine serve: listening on //p' 6000) ||
    { kill "$pid"; return 1; }
  local p curls=()
  for p in 1 2 3 4; do
    curl -sf "$url/v1/completions" -H 'content-type: application/json' \
      -d "{\"model\": \"gpt-oss-tiny\", \"prompt\": \"hello number $p\", \"max_tokens\": 6, \"temperature\": 0}" \
      > "$tmp/$mode-$p.json" &
    curls+=($!)
  done
  wait "${curls[@]}"
  kill -TERM "$pid"
  wait "$pid"
  for p in 1 2 3 4; do jget "$tmp/$mode-$p.json" 'o.choices[0].text'; done > "$tmp/$mode.txt"
}
graphs_equal_eager() {
  serve_texts graphs && serve_texts eager || return 1
  grep -h 'CUDA graphs' "$tmp/serve-graphs.log" | sed 's/^/# /'
  grep -q 'CUDA graphs ran [1-9][0-9]* of' "$tmp/serve-graphs.log" && cmp -s "$tmp/graphs.txt" "$tmp/eager.txt"
}
[ "${EMU_SERVE:-0}" = 1 ] &&
  tap_ok "serve on the emulated CUDA backend: the decode steps' graphs ran, and give --enforce-eager's texts" \
    graphs_equal_eager
tap_done
