#!/usr/bin/env bash
# peers.sh: the `make peers` driver: our engine against llama.cpp on the same weights, for
# correctness. Not part of `make test` (the first llama.cpp build takes about 10 minutes).
#
#   scripts/peers.sh BUILD_DIR
#
# 1. llama.cpp (scripts/peer-llamacpp.sh: built once per CPU, cached under build/peers/); the
#    link build/peers/llama.cpp points at this CPU's build (configs/cpu-peers.ini uses it).
# 2. The weights: gpt-oss-tiny's dummy weights (seed 0) exported as a checkpoint folder
#    (`gptoss-engine export-checkpoint`), and the two golden fixtures; each as GGUF
#    (scripts/export-gguf.py), F32 dense for correctness, and gpt-oss-tiny also Q8_0 and BF16
#    dense for the speed comparisons of `make bench` (section peer), and the logit_bias list of
#    tokens that are not valid UTF-8 alone (configs/cpu-peers.ini sends it to llama-server).
# 3. Each GGUF read back with llama.cpp's GGUF reader (tests/peers/test_export_gguf.py).
# 4. Greedy ids of both engines (scripts/peer-greedy.py with tests/peers/llama_greedy.cpp, our
#    driver of libllama, compiled here against the peer's libraries), 32 tokens a prompt, and
#    the negative control: golden a with one matrix's sign flipped must fail that comparison.
# Prints TAP per step and ends with "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
build=${1:?usage: peers.sh BUILD_DIR}
peers=build/peers
models=$peers/models
passed=0
failed=0

run() {  # name, command...: counts the command's TAP lines (or its exit status when it has none)
  local name=$1 out rc ok not_ok
  shift
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "$out" | sed "s|^|[$name] |"
  ok=$(grep -c '^ok ' <<<"$out"); not_ok=$(grep -c '^not ok ' <<<"$out")
  if [ "$ok" -eq 0 ] && [ "$not_ok" -eq 0 ]; then
    if [ "$rc" -eq 0 ]; then ok=1; else not_ok=1; fi
  elif [ "$rc" -ne 0 ] && [ "$not_ok" -eq 0 ]; then
    not_ok=1
  fi
  passed=$((passed + ok)); failed=$((failed + not_ok))
}

env_out=$(scripts/peer-llamacpp.sh "$peers") || { echo "peers: llama.cpp could not be built"; exit 1; }
eval "$env_out"
ln -sfn "$(dirname "$LLAMACPP_BIN")" "$peers/llama.cpp"
export GGUF_PY
echo "peers: llama.cpp $LLAMACPP_COMMIT in $LLAMACPP_BIN"

# A GGUF is made again when missing or older than its checkpoint or the exporter.
gguf_of() {  # checkpoint folder, out file, dense format, more export-gguf.py flags...
  if [ ! -s "$2" ] || [ "$2" -ot "$1/config.json" ] || [ "$2" -ot scripts/export-gguf.py ]; then
    /usr/bin/python3 scripts/export-gguf.py "$1" "$2" --dense "$3" --gguf-py "$GGUF_PY" "${@:4}"
  fi
}

mkdir -p "$models"
tiny=$models/gpt-oss-tiny
if [ ! -s "$tiny/model.safetensors" ] || [ "$tiny/model.safetensors" -ot "$build/bin/gptoss-engine" ]; then
  run export-checkpoint "$build/bin/gptoss-engine" export-checkpoint --model gpt-oss-tiny --out "$tiny"
fi
ban=$models/llamacpp-utf8-ban.json  # configs/cpu-peers.ini's --extra-body, written with the Q8_0 GGUF
[ -s "$ban" ] || rm -f "$models/gpt-oss-tiny-q8_0.gguf"
run "gguf tiny f32" gguf_of "$tiny" "$models/gpt-oss-tiny-f32.gguf" f32
run "gguf tiny q8_0" gguf_of "$tiny" "$models/gpt-oss-tiny-q8_0.gguf" q8_0 --utf8-ban "$ban"
run "gguf tiny bf16" gguf_of "$tiny" "$models/gpt-oss-tiny-bf16.gguf" bf16
for fixture in a b; do
  run "gguf golden $fixture" gguf_of "tests/fixtures/gptoss-tiny/$fixture" "$models/golden-$fixture-f32.gguf" f32
done

run "read back tiny" /usr/bin/python3 tests/peers/test_export_gguf.py "$tiny" "$models/gpt-oss-tiny-f32.gguf" 199742
for fixture in a b; do
  run "read back golden $fixture" /usr/bin/python3 tests/peers/test_export_gguf.py \
    "tests/fixtures/gptoss-tiny/$fixture" "$models/golden-$fixture-f32.gguf"
done

# Our greedy driver on llama.cpp's library (tests/peers/llama_greedy.cpp), built beside it.
lib=$(dirname "$LLAMACPP_BIN") src=$peers/llama.cpp-src greedy_bin=$LLAMACPP_BIN/llama_greedy
if [ ! -x "$greedy_bin" ] || [ "$greedy_bin" -ot tests/peers/llama_greedy.cpp ]; then
  run "build llama_greedy" g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" \
    tests/peers/llama_greedy.cpp "$lib/src/libllama.a" "$lib/ggml/src/libggml.a" \
    "$lib/ggml/src/libggml-cpu.a" "$lib/ggml/src/libggml-base.a" -fopenmp -lpthread -ldl \
    -o "$greedy_bin"
fi
greedy() {  # checkpoint, gguf, prompts
  /usr/bin/python3 scripts/peer-greedy.py --checkpoint "$1" --gguf "$2" \
    --llama-greedy "$greedy_bin" --engine "$build/bin/gptoss-engine" \
    --tokenizer "$build/bin/gptoss-bench" --tokens 32 --prompts "$3"
}
for fixture in a b; do
  run "greedy golden $fixture" greedy "tests/fixtures/gptoss-tiny/$fixture" "$models/golden-$fixture-f32.gguf" 6
done
run "greedy tiny" greedy "$tiny" "$models/gpt-oss-tiny-f32.gguf" 6

# The negative control: with one weight matrix's sign flipped on our side, the comparison must
# fail; near-tie verdicts that excused it would excuse a real bug too.
must_part() {  # checkpoint, gguf
  local out
  out=$(greedy "$@" 2>&1)
  printf '%s\n' "$out" | sed 's/^/#   /'
  if grep -q '^not ok 1 - the engines agree' <<<"$out" && ! grep -q '^ok .*near-tie' <<<"$out"; then
    echo "ok 1 - a sign-flipped block.3.attn.out.weight is caught, no parting excused"
  else
    echo "not ok 1 - a sign-flipped block.3.attn.out.weight passed as near-ties"
  fi
}
flipped=$models/golden-a-sign-flipped
/usr/bin/python3 tests/peers/sign_flipped_checkpoint.py tests/fixtures/gptoss-tiny/a "$flipped" \
  block.3.attn.out.weight
run "negative control" must_part "$flipped" "$models/golden-a-f32.gguf" 6

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
