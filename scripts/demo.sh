#!/usr/bin/env bash
# demo.sh: `make demo`. Runs the most complete thing the project has so far and says what it ran.
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
echo "-- gptoss-engine generate --model gpt-oss-tiny --device cpu --chat 'What is 2 + 2?' --max-tokens 8"
"$engine" generate --model gpt-oss-tiny --device cpu --chat 'What is 2 + 2?' --max-tokens 8 |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const o=JSON.parse(s);
    console.log("   output ids: " + o.output_ids.join(" "));
    console.log("   text (random weights, so no meaning): " + JSON.stringify(o.text));
    console.log("   finish_reason: " + o.finish_reason);})'
echo

echo "== demo 3/3: gptoss-bench sweep configs/cpu.ini: the study's shape on the CPU (gpt-oss-tiny)"
echo "-- baseline, async scheduling, a batched-token budget, -tp 2 and FLASHINFER (both recorded as"
echo "   failed with their error line); ShareGPT-format and random workloads; about 3 minutes on 2 cores"
"$bench" sweep configs/cpu.ini
for run in results/cpu-[0-9]*Z; do :; done  # this sweep's newest run (not cpu-peers-...)
echo "-- $run/summary.md:"
sed 's/^/   /' "$run/summary.md"
