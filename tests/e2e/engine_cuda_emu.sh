#!/usr/bin/env bash
# engine_cuda_emu.sh: the whole engine on the CUDA backend with no GPU: BUILD/simt/gptoss-engine,
# whose CUDA backend runs on the host SIMT emulator (tests/simt), generates on both golden
# checkpoints with --device cuda, judged as scripts/gpu-check.sh's golden step judges a GPU:
# f32 weights within 1e-4 of the float64 reference's prompt logits with its greedy ids, bf16
# weights (MXFP4 experts, a bf16 KV cache, tensor-core attention) within 5e-2. Then the same
# with -tp 2, -pp 2 and both on emulated GPUs (SIMT_DEVICES=4), the ranks meeting through
# engine/dist/comm_nccl.c on the emulator's NCCL, and `serve` of a checkpoint with -tp 2: its
# decode steps' graphs (collectives recorded in them), --enforce-eager and -tp 2 -pp 2 give one
# GPU's greedy texts. With EMU_SERVE=1 (make test-cuda-emu; about 3 minutes) also `serve` of
# gpt-oss-tiny (dummy weights, MXFP4 experts) with its graphs and with --enforce-eager: 4 greedy
# completions at once give the same texts, and the shutdown line says graphs ran steps
# (gpu-check's `graphs` step). With SIMT_SANITIZER=address or thread, the same on the memory- or
# race-checking build (BUILD/simt-address, BUILD/simt-thread; fewer ranks' runs there): a bad
# access or a race in any kernel of a whole forward pass fails the generation. Skipped where that
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

# serve on the emulated GPUs with the 4 greedy completions of 4 prompts (token ids) at once; their
# texts into $tmp/NAME.txt, the log into $tmp/serve-NAME.log
serve_texts() {  # name, model and flags...
  local name=$1 url pid p curls=()
  shift
  "$bin" serve "$@" --device cuda --port 0 --max-num-seqs 4 --max-num-batched-tokens 64 \
    --max-model-len 128 --kv-cache-memory 0.02 --cuda-graph-sizes 4 > "$tmp/serve-$name.log" 2>&1 &
  pid=$!
  url=$(wait_for_output "$tmp/serve-$name.log" 's/^gptoss-engine serve: listening on //p' 6000) ||
    { kill "$pid"; return 1; }
  for p in 1 2 3 4; do
    curl -sf "$url/v1/completions" -H 'content-type: application/json' \
      -d "{\"prompt\": [$p, 17, 200, 3$p], \"max_tokens\": 6, \"temperature\": 0}" > "$tmp/$name-$p.json" &
    curls+=($!)
  done
  wait "${curls[@]}"
  kill -TERM "$pid"
  wait "$pid"
  for p in 1 2 3 4; do jget "$tmp/$name-$p.json" 'o.choices[0].text'; done > "$tmp/$name.txt"
}
# whether serve NAME ran decode steps as graphs (its shutdown line, shown)
graphs_ran() {
  grep -h 'CUDA graphs' "$tmp/serve-$1.log" | sed 's/^/# /'
  grep -q 'CUDA graphs ran [1-9][0-9]* of' "$tmp/serve-$1.log"
}
graphs_equal_eager() {
  local model=(gpt-oss-tiny --load-format dummy --weight-format bf16)
  serve_texts graphs "${model[@]}" && serve_texts eager "${model[@]}" --enforce-eager &&
    graphs_ran graphs && cmp -s "$tmp/graphs.txt" "$tmp/eager.txt"
}
[ "${EMU_SERVE:-0}" = 1 ] &&
  tap_ok "serve on the emulated CUDA backend: the decode steps' graphs ran, and give --enforce-eager's texts" \
    graphs_equal_eager

# Ranks on emulated GPUs (SIMT_DEVICES of them, one a rank): engine/dist/comm_nccl.c itself, on
# the emulator's NCCL (tests/simt/nccl.cc), which meets the ranks' calls as GPUs would and fails
# on collectives that do not match. (On the race-checking build, 40 s a run, only -tp 2 -pp 2.)
export SIMT_DEVICES=4
splits=("-tp 2" "-pp 2" "-tp 2 -pp 2")
[ "${SIMT_SANITIZER:-}" = thread ] && splits=("-tp 2 -pp 2")
for split in "${splits[@]}"; do
  tap_ok "checkpoint a, $split on emulated GPUs (NCCL), f32 weights: logits within 1e-4, the same greedy ids" \
    matches_golden "$bin" 1e-4 same a --device cuda --weight-format f32 $split
done
[ "${SIMT_SANITIZER:-}" = thread ] || tap_ok "checkpoint b, -tp 2 -pp 2 on emulated GPUs, bf16 weights: logits within 5e-2" \
  matches_golden "$bin" 5e-2 any b --device cuda --weight-format bf16 -tp 2 -pp 2
too_few_gpus() {
  ! SIMT_DEVICES=2 "$bin" generate --model tests/fixtures/gptoss-tiny/a --prompt-ids 1,2 \
    --max-tokens 1 --device cuda -tp 2 -pp 2 > /dev/null 2> "$tmp/few.err" &&
    grep -q '4 ranks need 4 GPUs (one a rank) and CUDA sees 2' "$tmp/few.err"
}
tap_ok "-tp 2 -pp 2 with 2 GPUs is refused before loading, naming the ranks and the GPUs" too_few_gpus
tp_graphs_equal_one_gpu() {
  local a=tests/fixtures/gptoss-tiny/a
  serve_texts one "$a" --enforce-eager && serve_texts tp-graphs "$a" -tp 2 &&
    serve_texts tp-eager "$a" -tp 2 --enforce-eager &&
    serve_texts tp-pp "$a" -tp 2 -pp 2 --async-scheduling || return 1
  graphs_ran tp-graphs && cmp -s "$tmp/one.txt" "$tmp/tp-graphs.txt" &&
    cmp -s "$tmp/one.txt" "$tmp/tp-eager.txt" && cmp -s "$tmp/one.txt" "$tmp/tp-pp.txt"
}
# (on the plain build; on the memory-checking one with EMU_SERVE=1: four servers take 40 s there)
[ -z "${SIMT_SANITIZER:-}" ] || [ "${SIMT_SANITIZER:-}${EMU_SERVE:-0}" = address1 ] &&
  tap_ok "serve checkpoint a with -tp 2 on 2 emulated GPUs: the decode steps' graphs (their all-reduces in them) ran; graphs, eager and -tp 2 -pp 2 with async scheduling give one GPU's texts" \
    tp_graphs_equal_one_gpu
tap_done
