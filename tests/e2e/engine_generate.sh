#!/usr/bin/env bash
# engine_generate.sh: drives the real `gptoss-engine generate`: greedy ids and --logits-out on
# both golden checkpoints against the float64 reference, a dummy-weight preset with a chat
# prompt, the router diagnostics (--route-margins-out, --flip-route), `export-checkpoint` (the
# dummy weights written as a checkpoint folder load back to the same logits, bit for bit), and
# errors that name the flag or file. Usage: engine_generate.sh BUILD_DIR (TAP).
set -u
bin="${1:?usage: engine_generate.sh BUILD_DIR}/bin/gptoss-engine"
fixtures=tests/fixtures/gptoss-tiny
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
. tests/e2e/golden.bash
[ -x "$bin" ] || { echo "Bail out! $bin is not built"; exit 1; }

tap_ok "checkpoint a: greedy ids and prompt logits match the reference" matches_golden "$bin" 1e-4 same a
tap_ok "checkpoint b: greedy ids and prompt logits match the reference" matches_golden "$bin" 1e-4 same b
tap_ok "checkpoint a, -tp 2 -pp 2: the same" matches_golden "$bin" 1e-4 same a -tp 2 -pp 2
tap_ok "checkpoint b, -tp 4: the same" matches_golden "$bin" 1e-4 same b -tp 4

# --chat renders vLLM's gpt-oss prompt (system message with the date, no commentary channel
# without tools): its ids equal the hand-written harmony text through the tokenizer.
chat_text='<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06
Current date: 2026-01-31

Reasoning: medium

# Valid channels: analysis, final. Channel must be included for every message.<|end|><|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant'
dummy_chat() {
  GPTOSS_TEST_CURRENT_DATE=2026-01-31 "$bin" generate --model gpt-oss-tiny --load-format dummy \
    --chat "What is 2 + 2?" --max-tokens 3 > "$tmp/chat.json" &&
  printf '%s' "$chat_text" | "${bin%/*}/gptoss-bench" tokenize --allow-special > "$tmp/want" &&
  node -e 'const fs = require("fs"), o = JSON.parse(fs.readFileSync(process.argv[1]));
           const want = fs.readFileSync(process.argv[2], "utf8").trim().split(/\s+/).map(Number);
           process.exit(JSON.stringify(o.prompt_ids) === JSON.stringify(want) &&
                        o.output_ids.length >= 1 && typeof o.text === "string" ? 0 : 1)' \
    "$tmp/chat.json" "$tmp/want"
}
tap_ok "dummy gpt-oss-tiny: --chat renders vLLM's harmony prompt and generates" dummy_chat

# The same greedy ids from float32 and 8-bit weights on a short dummy prompt (their logits differ
# by about 1e-2 relative: docs/PERF.md).
dummy_formats_agree() {
  local f
  for f in f32 q8 bf16; do
    "$bin" generate --model gpt-oss-tiny --load-format dummy --weight-format "$f" \
      --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 2 --ignore-eos > "$tmp/$f.json" || return 1
  done
  node -e 'const ids = f => JSON.stringify(JSON.parse(require("fs").readFileSync(f)).output_ids);
           process.exit(ids(process.argv[1]) === ids(process.argv[2]) &&
                        ids(process.argv[1]) === ids(process.argv[3]) ? 0 : 1)' \
    "$tmp/f32.json" "$tmp/q8.json" "$tmp/bf16.json"
}
tap_ok "dummy gpt-oss-tiny: --weight-format f32, q8 and bf16 pick the same greedy ids" \
  dummy_formats_agree

fails_with() {  # expected text, args...
  local want=$1; shift
  ! "$bin" generate "$@" > /dev/null 2> "$tmp/err" && grep -qF -- "$want" "$tmp/err"
}
tap_ok "-tp 3 is refused: it does not divide the query heads" \
  fails_with "-tp 3 does not divide" --model "$fixtures/a" --prompt-ids 1 --max-tokens 1 -tp 3
tap_ok "no --model: error says so" fails_with "--model is required" --prompt-ids 1 --max-tokens 1
tap_ok "bad --prompt-ids: error names the flag" \
  fails_with "--prompt-ids" --model "$fixtures/a" --prompt-ids 1,x --max-tokens 1
tap_ok "id outside the vocabulary: error names it" \
  fails_with "prompt id 5000" --model "$fixtures/a" --prompt-ids 1,5000 --max-tokens 1
tap_ok "unknown model: error lists the presets" \
  fails_with "gpt-oss-tiny" --model no-such-model --prompt-ids 1 --max-tokens 1
tap_ok "unknown --weight-format: error names the flag" \
  fails_with "--weight-format 'f16'" --model "$fixtures/a" --weight-format f16 --prompt-ids 1 --max-tokens 1
tap_ok "--max-tokens 0 is refused" fails_with "--max-tokens" --model "$fixtures/a" --prompt-ids 1 --max-tokens 0
# Router diagnostics on checkpoint a (4 layers, 2 of 8 experts): --route-margins-out is
# [layers, prompt] and never negative; --flip-route L:P at the closest choice leaves the logits
# of the positions before P as they were (causal attention; within 1e-4: the experts' row
# groups change size, and with them the kernels' blocking) and moves those from P on.
route_probe() {
  local ids=7,99,512,3,870,41,1000,256,64,5 args
  args=(--model "$fixtures/a" --prompt-ids "$ids" --max-tokens 1 --ignore-eos --device cpu)
  "$bin" generate "${args[@]}" --logits-out "$tmp/plain.npy" --route-margins-out "$tmp/m.npy" \
    > /dev/null || return 1
  local at
  at=$(node -e '
    const b = require("fs").readFileSync(process.argv[1]), h = b.readUInt16LE(8);
    const header = b.toString("latin1", 10, 10 + h);
    const m = new Float32Array(b.buffer.slice(b.byteOffset + 10 + h, b.byteOffset + b.length));
    if (!header.includes("(4, 10)") || m.some(v => !(v >= 0))) process.exit(1);
    let best = 0;
    m.forEach((v, i) => { if (v < m[best]) best = i; });
    const layer = Math.floor(best / 10), position = best % 10;
    console.log(position > 0 ? `${layer}:${position}` : `${layer}:1`);' "$tmp/m.npy") || return 1
  "$bin" generate "${args[@]}" --flip-route "$at" --logits-out "$tmp/flipped.npy" > /dev/null ||
    return 1
  node -e '
    const fs = require("fs");
    const npy = f => { const b = fs.readFileSync(f); const h = b.readUInt16LE(8);
                       return new Float32Array(b.buffer.slice(b.byteOffset + 10 + h, b.byteOffset + b.length)); };
    const plain = npy(process.argv[1]), flipped = npy(process.argv[2]);
    const p = Number(process.argv[3].split(":")[1]), vocab = plain.length / 10;
    const moved = (from, to) => plain.slice(from * vocab, to * vocab)
      .reduce((worst, v, i) => Math.max(worst, Math.abs(v - flipped[from * vocab + i])), 0);
    process.exit(moved(0, p) <= 1e-4 && moved(p, p + 1) > 1e-2 ? 0 : 1);' "$tmp/plain.npy" "$tmp/flipped.npy" "$at"
}
tap_ok "--route-margins-out and --flip-route: margins [layers, prompt]; a flip changes logits from its position on" route_probe
tap_ok "--flip-route outside the model is refused" \
  fails_with "--flip-route 4:0 is outside the model (4 layers)" --model "$fixtures/a" \
  --prompt-ids 1,2 --max-tokens 1 --flip-route 4:0
tap_ok "--flip-route that is not LAYER:POSITION is refused" \
  fails_with "--flip-route '1-2' is not LAYER:POSITION" --model "$fixtures/a" --prompt-ids 1 \
  --max-tokens 1 --flip-route 1-2
tap_ok "router diagnostics with -tp 2 are refused: one rank on the CPU" \
  fails_with "need one rank on the CPU" --model "$fixtures/a" --prompt-ids 1 --max-tokens 1 \
  --route-margins-out "$tmp/x.npy" -tp 2

# export-checkpoint: gpt-oss-tiny's dummy weights as a folder; both load to the same logits.
exported() {
  "$bin" export-checkpoint --model gpt-oss-tiny --out "$tmp/tiny" > /dev/null || return 1
  [ "$(ls -A "$tmp/tiny")" = "$(printf 'config.json\nmodel.safetensors')" ] || return 1  # no temporaries
  "$bin" generate --model gpt-oss-tiny --load-format dummy --weight-format f32 --prompt-ids 5,6,7,8 \
    --max-tokens 2 --ignore-eos --logits-out "$tmp/dummy.npy" > "$tmp/dummy.json" 2> /dev/null &&
  "$bin" generate --model "$tmp/tiny" --load-format safetensors --weight-format f32 --prompt-ids 5,6,7,8 \
    --max-tokens 2 --ignore-eos --logits-out "$tmp/folder.npy" > "$tmp/folder.json" 2> /dev/null &&
  cmp -s "$tmp/dummy.npy" "$tmp/folder.npy" &&
  [ "$(sed 's/.*"output_ids"//' "$tmp/dummy.json")" = "$(sed 's/.*"output_ids"//' "$tmp/folder.json")" ]
}
tap_ok "export-checkpoint: the folder loads to the dummy weights' logits, bit for bit" exported
rm -rf "$tmp/tiny"
refused() {
  ! "$bin" export-checkpoint --model "$fixtures/a" --out "$tmp/x" 2> "$tmp/err" &&
    grep -q "is not a preset" "$tmp/err"
}
tap_ok "export-checkpoint: a checkpoint folder is refused (no export needed)" refused
tap_done
