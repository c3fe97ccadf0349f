#!/usr/bin/env bash
# demo.sh: `make demo`. Runs the most complete thing the project has so far and says what it ran.
# (When the sweep lands, this becomes `gptoss-bench sweep configs/cpu.ini`.)
set -euo pipefail
bin="${1:?usage: demo.sh BUILD_DIR}/bin/gptoss-bench"

echo "== demo: the o200k_harmony tokenizer and GPT-OSS's harmony chat format"
echo "   (the engine, the load generator and the sweep are not built yet)"
echo
prompt='<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06

Reasoning: medium

# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|><|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant'
echo "-- a harmony prompt (default system message + one user message), as GPT-OSS sees it:"
printf '%s\n' "$prompt"
echo
echo "-- its token ids (gptoss-bench tokenize --allow-special):"
ids=$(printf '%s' "$prompt" | "$bin" tokenize --allow-special)
echo "$ids" | fold -s -w 100
echo "   $(echo "$ids" | wc -w) tokens"
echo
text='Tokenizers split "naïve café" and 中文 and emoji 🙂 into byte-level BPE pieces.'
echo "-- o200k_base on: $text"
ids=$(printf '%s' "$text" | "$bin" tokenize --encoding o200k_base)
echo "   ids:     $ids"
echo "   decoded: $(printf '%s' "$ids" | "$bin" tokenize --encoding o200k_base --decode)"
