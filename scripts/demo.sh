#!/usr/bin/env bash
# demo.sh: `make demo`. Runs the most complete thing the project has so far and says what it ran.
# (When the sweep lands, this becomes `gptoss-bench sweep configs/cpu.ini`.)
set -euo pipefail
build="${1:?usage: demo.sh BUILD_DIR}"
bench="$build/bin/gptoss-bench"
engine="$build/bin/gptoss-engine"

echo "== demo 1/3: the o200k_harmony tokenizer and GPT-OSS's harmony chat format"
echo "-- gptoss-bench tokenize --allow-special on a harmony prompt (default system message + one user message):"
prompt='<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06

Reasoning: medium

# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|><|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant'
ids=$(printf '%s' "$prompt" | "$bench" tokenize --allow-special)
echo "$ids" | fold -s -w 100
echo "   $(echo "$ids" | wc -w) tokens"
echo

echo "== demo 2/3: gptoss-engine generate: GPT-OSS on the CPU (gpt-oss-tiny, dummy weights)"
echo "-- gptoss-engine generate --model gpt-oss-tiny --chat 'What is 2 + 2?' --max-tokens 8"
"$engine" generate --model gpt-oss-tiny --chat 'What is 2 + 2?' --max-tokens 8 |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const o=JSON.parse(s);
    console.log("   output ids: " + o.output_ids.join(" "));
    console.log("   text (random weights, so no meaning): " + JSON.stringify(o.text));
    console.log("   finish_reason: " + o.finish_reason);})'
echo

echo "== demo 3/3: gptoss-bench bench (the vLLM bench serve drop-in) against gptoss-engine serve"
log=$(mktemp)
"$engine" serve gpt-oss-tiny --port 0 --kv-cache-memory 512MiB > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$log"' EXIT
url=
for _ in $(seq 300); do
  url=$(sed -n 's/^gptoss-engine serve: listening on //p' "$log")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "gptoss-engine serve did not start: $(cat "$log")"; exit 1; }
sed 's/^/   /' "$log"
echo "-- gptoss-bench bench --base-url $url --backend openai-chat --endpoint-type openai-chat" \
  "--endpoint /v1/chat/completions --dataset-name sharegpt --dataset-path" \
  "datasets/sharegpt-synth.json --num-prompts 32 --sharegpt-output-len 16 --ignore-eos"
"$bench" bench --base-url "$url" --backend openai-chat --endpoint-type openai-chat \
  --endpoint /v1/chat/completions --dataset-name sharegpt \
  --dataset-path datasets/sharegpt-synth.json --num-prompts 32 --sharegpt-output-len 16 --ignore-eos
kill -TERM $server
wait $server
echo "-- gptoss-engine serve stopped on SIGTERM with status $?"
