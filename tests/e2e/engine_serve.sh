#!/usr/bin/env bash
# engine_serve.sh: drives the real `gptoss-engine serve` on gpt-oss-tiny (dummy weights) with 200
# concurrent streaming chat requests over HTTP, in sync and in async scheduling mode, with -tp 2
# and with -pp 2: every greedy output (the ids streamed with vLLM's return_token_ids) equals
# `gptoss-engine generate` on the same prompt; then SIGTERM stops the server with status 0. Before
# that: the refusals at start and the device's defaults (KV cache dtype included).
# Usage: engine_serve.sh BUILD_DIR (prints TAP).
set -u
engine="${1:?usage: engine_serve.sh BUILD_DIR}/bin/gptoss-engine"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
# generate and serve render the same chat prompt only for the same date: fix it for both.
export GPTOSS_TEST_CURRENT_DATE=2026-01-31
[ -x "$engine" ] || { echo "Bail out! $engine is not built"; exit 1; }

# Refusals happen before anything is served, with the reason.
refuses() {  # expected text, flags...
  local want=$1; shift
  ! "$engine" serve tests/fixtures/gptoss-tiny/a --port 0 "$@" > /dev/null 2> "$tmp/err" &&
    grep -qF -- "$want" "$tmp/err"
}
tap_ok "FLASHINFER is refused: no attention sinks" \
  refuses "does not support attention sinks" --attention-backend FLASHINFER
attention_env() { VLLM_ATTENTION_BACKEND=XFORMERS refuses "XFORMERS does not support attention sinks"; }
tap_ok "VLLM_ATTENTION_BACKEND=XFORMERS is refused the same way" attention_env
tap_ok "-tp 3 is refused: it does not divide the query heads" \
  refuses "-tp 3 does not divide the model's 8 query heads" -tp 3
tap_ok "-pp 5 is refused: more stages than layers" refuses "-pp 5 is more stages" -pp 5
# Without a GPU (CI), --device cuda stops at start with the reason; with one it would serve.
if nvidia-smi -L > /dev/null 2>&1; then
  echo "# skipped: --device cuda refusal (a CUDA device is present)"
else
  tap_ok "--device cuda is refused without a CUDA device" refuses "--device cuda: no usable CUDA device" \
    --device cuda
fi
tap_ok "a bad --kv-cache-memory names the flag" refuses "--kv-cache-memory '3x'" --kv-cache-memory 3x
tap_ok "--max-num-seqs above the token budget is refused" \
  refuses "--max-num-seqs" --max-num-seqs 64 --max-num-batched-tokens 32
tap_ok "a bad --kv-cache-dtype names the flag and the choices" \
  refuses "--kv-cache-dtype 'fp8' is unknown; use auto, float32 or bfloat16" --kv-cache-dtype fp8
tap_ok "--kv-cache-dtype bfloat16 on the CPU is refused: its cache is float32" \
  refuses "--kv-cache-dtype bfloat16 needs the CUDA backend" --device cpu --kv-cache-dtype bfloat16

# The defaults follow the device (on the CPU: 2048 batched tokens, 128 sequences; CUDA's 8192
# and 1024 are checked by scripts/gpu-check.sh), and the default sequence cap never exceeds a
# token budget that was given.
serves_with() {  # expected text of the printed configuration, flags...
  local want=$1 log=$tmp/defaults.$RANDOM.log pid; shift
  "$engine" serve gpt-oss-tiny --device cpu --port 0 --kv-cache-memory 64MiB "$@" > "$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  wait_for_output "$log" 's/^gptoss-engine serve: listening on //p' 300 > /dev/null
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  grep -qF -- "$want" "$log"
}
tap_ok "the CPU's defaults: 2048 batched tokens, 128 sequences" \
  serves_with "max-num-batched-tokens 2048  max-num-seqs 128"
tap_ok "the CPU's KV cache is float32 by default" serves_with "kv-cache-dtype float32"
tap_ok "--max-num-batched-tokens 64 alone caps the default sequences at 64" \
  serves_with "max-num-batched-tokens 64  max-num-seqs 64" --max-num-batched-tokens 64

NUM_PROMPTS=4
NUM_REQUESTS=200
MAX_TOKENS=8
message() { echo "Question $1: what is $1 + $1? Explain briefly."; }

# The reference: one generate call per distinct prompt.
for i in $(seq 0 $((NUM_PROMPTS - 1))); do
  "$engine" generate --model gpt-oss-tiny --weight-format f32 --chat "$(message "$i")" \
    --max-tokens $MAX_TOKENS --ignore-eos > "$tmp/ref$i.json" ||
    { echo "Bail out! generate failed"; exit 1; }
done

start_server() {  # flags...; sets $url and $server_pid
  local log=$tmp/serve.$RANDOM.log
  "$engine" serve gpt-oss-tiny --weight-format f32 --port 0 --kv-cache-memory 512MiB \
    --max-num-seqs 256 "$@" \
    > "$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  url=$(wait_for_output "$log" 's/^gptoss-engine serve: listening on //p' 300) && return 0
  echo "# serve did not start: $(tail -3 "$log")"
  return 1
}

# 200 concurrent streams; request i asks prompt i % 8. Prints the number of mismatches.
run_clients() {
  node - "$url" "$tmp" $NUM_PROMPTS $NUM_REQUESTS $MAX_TOKENS <<'JS'
const [url, dir, numPrompts, numRequests, maxTokens] = process.argv.slice(2);
const fs = require("fs");
const message = i => `Question ${i}: what is ${i} + ${i}? Explain briefly.`;
const want = [...Array(+numPrompts).keys()].map(i =>
  JSON.stringify(JSON.parse(fs.readFileSync(`${dir}/ref${i}.json`)).output_ids));
async function one(i) {
  const res = await fetch(url + "/v1/chat/completions", {method: "POST", body: JSON.stringify({
    model: "gpt-oss-tiny", messages: [{role: "user", content: message(i % numPrompts)}],
    max_tokens: +maxTokens, temperature: 0, ignore_eos: true, stream: true, return_token_ids: true})});
  const text = await res.text();
  const ids = [];
  for (const line of text.split("\n"))
    if (line.startsWith("data: {")) for (const c of JSON.parse(line.slice(6)).choices)
      ids.push(...(c.token_ids || []));
  return JSON.stringify(ids) === want[i % numPrompts] ? 0 : 1;
}
Promise.all([...Array(+numRequests).keys()].map(one))
  .then(r => console.log(r.reduce((a, b) => a + b, 0)))
  .catch(e => { console.log("error " + e); });
JS
}

# Modes: one rank in sync and async scheduling, then tensor parallel and pipeline parallel
# (threads as ranks, tests/engine/test_parallel.c compares their logits with one rank's).
for mode in sync async "tp 2" "pp 2 async"; do
  flags=()
  case $mode in
    async) flags=(--async-scheduling) ;;
    "tp 2") flags=(-tp 2) ;;
    "pp 2 async") flags=(-pp 2 --async-scheduling) ;;
  esac
  if start_server "${flags[@]}"; then
    mismatches=$(run_clients)
    tap_ok "$mode: $NUM_REQUESTS concurrent streaming chats equal generate's greedy ids" \
      [ "$mismatches" = 0 ]
    kill -TERM "$server_pid"
    wait "$server_pid"
    tap_ok "$mode: SIGTERM stops the server with status 0" [ $? -eq 0 ]
  else
    tap_ok "$mode: the server starts" false
  fi
done
tap_done
