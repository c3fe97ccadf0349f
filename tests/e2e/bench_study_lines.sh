#!/usr/bin/env bash
# bench_study_lines.sh: the study's two `vllm bench serve` command lines (spec/seed-study.md:
# always `--backend openai-chat --endpoint /v1/chat/completions`; ShareGPT, and random 128/4 with
# seed 42) given to `gptoss-bench bench` against the built-in engine: --backend must pick the
# chat format, so every request succeeds. Flags as the study gives them; aside: the model
# (gpt-oss-tiny), the port, the synthetic ShareGPT file and fewer prompts (CPU time).
# Usage: bench_study_lines.sh BUILD_DIR (TAP).
set -u
build=${1:?usage: bench_study_lines.sh BUILD_DIR}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2> /dev/null; wait 2> /dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
"$build/bin/gptoss-engine" serve gpt-oss-tiny --port 0 --kv-cache-memory 256MiB \
  > "$tmp/serve.log" 2>&1 &
pid=$!
url=$(wait_for_output "$tmp/serve.log" 's/^gptoss-engine serve: listening on //p' 300) ||
  { echo "Bail out! the engine did not start"; exit 1; }

succeeded() {  # prompts, bench flags...: every request succeeded, none failed
  local n=$1
  shift
  "$build/bin/gptoss-bench" bench --base-url "$url" "$@" > "$tmp/out" 2>&1 &&
    grep -Eq "^Successful requests: +$n *$" "$tmp/out" &&
    ! grep -Eq "^Failed requests: +[1-9]" "$tmp/out"
}
tap_ok "study line 1 (ShareGPT): --backend openai-chat --endpoint /v1/chat/completions" \
  succeeded 16 --model gpt-oss-tiny --backend openai-chat --endpoint /v1/chat/completions \
  --dataset-name sharegpt --dataset-path datasets/sharegpt-synth.json --num-prompts 16 \
  --sharegpt-output-len 8
tap_ok "study line 2 (short): random 128/4, seed 42, chat" \
  succeeded 100 --model gpt-oss-tiny --backend openai-chat --endpoint /v1/chat/completions \
  --dataset-name random --random-input-len 128 --random-output-len 4 --num-prompts 100 --seed 42
chat_json() {  # the result JSON names the chat format, as vLLM's does
  "$build/bin/gptoss-bench" bench --base-url "$url" --model gpt-oss-tiny --backend openai-chat \
    --endpoint /v1/chat/completions --num-prompts 2 --random-input-len 16 --random-output-len 2 \
    --save-result --result-dir "$tmp" --result-filename r.json > /dev/null 2>&1 &&
    grep -q '"endpoint_type": *"openai-chat"' "$tmp/r.json"
}
tap_ok "the result JSON says endpoint_type openai-chat" chat_json
completions_to_chat() {  # --backend openai against the chat endpoint: the engine's 400, counted
  "$build/bin/gptoss-bench" bench --base-url "$url" --model gpt-oss-tiny --backend openai \
    --endpoint /v1/chat/completions --num-prompts 2 --random-input-len 16 --random-output-len 2 \
    --ready-check-timeout-sec 3 > "$tmp/out" 2>&1  # the ready check retries a 400 until then
  grep -q "messages is required" "$tmp/out"
}
tap_ok "--backend openai against /v1/chat/completions still sends a prompt (the engine says 400)" \
  completions_to_chat
tap_done
