#!/usr/bin/env bash
# bench_datasets.sh: vLLM v0.10.2's other datasets through the real `gptoss-bench bench` over
# loopback HTTP: sonnet, burstgpt, custom and prefix_repetition against `gptoss-bench mock-server`
# (request counts and token totals, hand-computed from the fixtures and flags), the prompt text
# each sends as an independent node server records it (sonnet templated on completions and plain
# on chat, as vLLM does; custom with and without the chat template), and the refused datasets
# and flags, each named with its reason.
# Usage: bench_datasets.sh BUILD_DIR (prints TAP). About 5 s.
set -u
build="${1:?usage: bench_datasets.sh BUILD_DIR}"
bin="$build/bin/gptoss-bench"
fx=tests/fixtures/bench
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "Bail out! $build is not built"; exit 1; }
command -v node > /dev/null || { echo "Bail out! node is not installed (make deps)"; exit 1; }

"$bin" mock-server --port 0 --ttft-ms 1 --itl-ms 0 > "$tmp/mock.log" 2>&1 &
pids+=($!)
url=$(wait_for_output "$tmp/mock.log" 's/^mock-server listening on //p' 50) ||
  { echo "Bail out! mock-server did not start"; exit 1; }

json_get() {  # result file, key
  node -e 'console.log(JSON.stringify(JSON.parse(require("fs").readFileSync(process.argv[1]))[process.argv[2]]))' "$1" "$2"
}
run() {  # name, bench flags...: runs against the mock, result in $tmp/NAME.json
  local name=$1; shift
  "$bin" bench --base-url "$url" --save-result --result-dir "$tmp" --result-filename "$name.json" \
    "$@" > "$tmp/$name.out" 2>&1
}

# sonnet-small.txt: 4 lines of 10 tokens. --sonnet-prefix-len 0 and --sonnet-input-len large:
# lines = round((input - base) / 10); every templated prompt is base + 10 * lines tokens.
run sonnet --dataset-name sonnet --dataset-path "$fx/sonnet-small.txt" --num-prompts 6 \
  --sonnet-output-len 5 --sonnet-prefix-len 0 --sonnet-input-len 400
tap_ok "sonnet: 6 requests completed, named sonnet" \
  [ "$(json_get "$tmp/sonnet.json" completed),$(json_get "$tmp/sonnet.json" dataset_name)" = '6,"sonnet"' ]
tap_ok "sonnet: 6 x --sonnet-output-len 5 = 30 tokens generated" \
  [ "$(json_get "$tmp/sonnet.json" total_output_tokens)" = 30 ]
in=$(json_get "$tmp/sonnet.json" total_input_tokens)
tap_ok "sonnet: every prompt at most --sonnet-input-len 400 and the same length ($in / 6)" \
  [ $((in % 6)) -eq 0 -a $((in / 6)) -le 400 -a $((in / 6)) -gt 390 ]
run sonnet-default --dataset-name sonnet --num-prompts 10
tap_ok "sonnet: the shipped datasets/sonnet.txt by default, prompts <= 550 tokens" \
  [ "$(json_get "$tmp/sonnet-default.json" completed)" = 10 -a \
    "$(json_get "$tmp/sonnet-default.json" total_input_tokens)" -le 5500 ]

# burstgpt-small.csv keeps GPT-4 1087/230 and GPT-4 20/7: both, once each, for 2 prompts
run burst --dataset-name burstgpt --dataset-path "$fx/burstgpt-small.csv" --num-prompts 2
tap_ok "burstgpt: input 1087 + 20 and output 230 + 7 tokens" \
  [ "$(json_get "$tmp/burst.json" total_input_tokens),$(json_get "$tmp/burst.json" total_output_tokens)" = 1107,237 ]

# custom-small.jsonl: 5 + 7 + 4 tokens without the template; 5 prompts oversample 2 of them
run custom --dataset-name custom --dataset-path "$fx/custom-small.jsonl" --num-prompts 3 \
  --custom-skip-chat-template --custom-output-len 3
tap_ok "custom, template skipped: 16 input tokens, 3 x 3 output" \
  [ "$(json_get "$tmp/custom.json" total_input_tokens),$(json_get "$tmp/custom.json" total_output_tokens)" = 16,9 ]
run custom-over --dataset-name custom --dataset-path "$fx/custom-small.jsonl" --num-prompts 5
tap_ok "custom: oversampled to 5 with vLLM's line, 5 x 256 output tokens" \
  [ "$(grep -c '^Oversampled requests to reach 5 total samples.$' "$tmp/custom-over.out"),$(json_get "$tmp/custom-over.json" total_output_tokens)" = 1,1280 ]

# prefix_repetition: 25 prompts over 4 prefixes -> 4 x 6 = 24 requests of 16 + 8 tokens
run prefix --dataset-name prefix_repetition --num-prompts 25 --prefix-repetition-prefix-len 16 \
  --prefix-repetition-suffix-len 8 --prefix-repetition-num-prefixes 4 \
  --prefix-repetition-output-len 2
tap_ok "prefix_repetition: 24 requests, 24 x 24 input and 24 x 2 output tokens" \
  [ "$(json_get "$tmp/prefix.json" completed),$(json_get "$tmp/prefix.json" total_input_tokens),$(json_get "$tmp/prefix.json" total_output_tokens)" = 24,576,48 ]

# What is sent, as an independent server records it.
. tests/e2e/capture_server.bash
start_capture_server "$tmp/bodies.jsonl"
port=$capture_port
sent() { captured "$tmp/bodies.jsonl" "$@"; }  # line of bodies.jsonl, JS expression on b
capture() {  # bench flags...: one timed request, no ready check; bodies.jsonl holds its body
  : > "$tmp/bodies.jsonl"
  "$bin" bench --port "$port" --model m --num-prompts 1 --ready-check-timeout-sec 0 "$@" \
    > "$tmp/capture.out" 2>&1
}
lines='one two three four five six seven eight nine\nten two three four five six seven eight nine\n'
instr='Pick as many lines as you can from these poem lines:\n'
# The instruction in the chat template is 68 tokens (`gptoss-bench tokenize --allow-special
# --count` of the text checked below, without the two lines), so --sonnet-prefix-len 88 gives
# round(20 / 10) = 2 prefix lines and --sonnet-input-len 90 round(22 / 10) = 2 lines in all:
# the prompt is the instruction and the file's first two lines (68 + 20 = 88 <= 90 tokens).
capture --dataset-name sonnet --dataset-path "$fx/sonnet-small.txt" --sonnet-prefix-len 88 \
  --sonnet-input-len 90
tap_ok "sonnet on completions: the chat-templated text, as vLLM sends it" \
  [ "$(sent 1 'JSON.stringify(b.prompt)')" = "\"<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\\nKnowledge cutoff: 2024-06\\n\\nReasoning: medium\\n\\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|><|start|>user<|message|>$instr$lines<|end|><|start|>assistant\"" ]
capture --dataset-name sonnet --dataset-path "$fx/sonnet-small.txt" --sonnet-prefix-len 88 \
  --sonnet-input-len 90 --backend openai-chat --endpoint /v1/chat/completions
tap_ok "sonnet on chat: the plain text as the user message" \
  [ "$(sent 1 'JSON.stringify(b.messages[0].content[0].text)')" = "\"$instr$lines\"" ]
capture --dataset-name custom --dataset-path "$fx/custom-small.jsonl" --custom-skip-chat-template \
  --seed 0
tap_ok "custom, template skipped: a prompt of the file, verbatim" \
  grep -qE '"prompt":"(Tell me a story\.|What is 2\+2\?|Name three colours\.)"' "$tmp/bodies.jsonl"
capture --dataset-name custom --dataset-path "$fx/custom-small.jsonl"
tap_ok "custom: the chat template around the prompt by default" \
  [ "$(sent 1 'b.prompt.startsWith("<|start|>system<|message|>") && /<\|start\|>user<\|message\|>(Tell me a story\.|What is 2\+2\?|Name three colours\.)<\|end\|><\|start\|>assistant$/.test(b.prompt)')" = true ]

refused() {  # description, expected message part, bench flags...
  local desc=$1 want=$2; shift 2
  "$bin" bench --base-url "$url" "$@" > "$tmp/refused.out" 2>&1
  tap_ok "$desc" grep -qF -- "$want" "$tmp/refused.out"
}
refused "hf: refused, hub downloads" "--dataset-name hf is not supported: hub downloads are not supported" \
  --dataset-name hf --dataset-path lmarena-ai/VisionArena-Chat
refused "--hf-split: refused by name" "--hf-split is not supported" --hf-split train
refused "random-mm: refused, multimodal" "--dataset-name random-mm is not supported: multimodal" \
  --dataset-name random-mm
refused "--random-batch-size 2: refused, embeddings only" "--random-batch-size 2 is not supported" \
  --random-batch-size 2
refused "--blazedit-min-distance: refused by name" "--blazedit-min-distance is not supported" \
  --blazedit-min-distance 0.2
refused "custom without --dataset-path" "--dataset-name custom needs --dataset-path" \
  --dataset-name custom
refused "custom: a bad line is named" "custom-no-prompt.jsonl:2: no string \"prompt\"" \
  --dataset-name custom --dataset-path "$fx/custom-no-prompt.jsonl" --num-prompts 1
tap_done
