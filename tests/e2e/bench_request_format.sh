#!/usr/bin/env bash
# bench_request_format.sh: what `gptoss-bench bench` sends, as an independent server sees it
# (tests/e2e/capture_server.js records every POST's headers and JSON body).
# Checked against vLLM v0.10.2's payload (spec/vllm-bench.md 3.2): key order, "logprobs": null
# unless --logprobs N, "Authorization: Bearer None" without OPENAI_API_KEY, x-request-id on timed
# requests only; later vLLM's --header KEY=VALUE on every request; --extra-body merged last.
# Usage: bench_request_format.sh BUILD_DIR (prints TAP). About 3 s.
set -u
build="${1:?usage: bench_request_format.sh BUILD_DIR}"
bin="$build/bin/gptoss-bench"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "Bail out! $build is not built"; exit 1; }

. tests/e2e/capture_server.bash
start_capture_server "$tmp/requests.jsonl"
port=$capture_port
req() { captured "$tmp/requests.jsonl" "$@"; }  # line number (1: the ready check), JS on r

env -u OPENAI_API_KEY "$bin" bench --port "$port" --model m --num-prompts 2 --random-input-len 4 \
  --random-output-len 2 --header X-Team=bench --header 'X-Two=a=b' > "$tmp/plain.out" 2>&1
tap_ok "plain run: 3 requests (the ready check, 2 timed)" [ "$(wc -l < "$tmp/requests.jsonl")" = 3 ]
tap_ok "payload keys in vLLM's order, logprobs null" \
  [ "$(req 2 'Object.keys(r.body).join() + " " + r.body.logprobs')" = "model,prompt,temperature,repetition_penalty,max_tokens,logprobs,stream,stream_options null" ]
tap_ok "Authorization: Bearer None without OPENAI_API_KEY" [ "$(req 2 'r.headers.authorization')" = "Bearer None" ]
ids=$(for k in 2 3; do req "$k" 'r.headers["x-request-id"]'; done | sort | tr '\n' ' ')
tap_ok "x-request-id on timed requests (in either order), none on the ready check" \
  [ "$(req 1 'String(r.headers["x-request-id"])'),$ids" = "undefined,benchmark-serving0 benchmark-serving1 " ]
tap_ok "--header KEY=VALUE on every request (the value keeps a later '=')" \
  [ "$(req 1 'r.headers["x-team"]'),$(req 3 'r.headers["x-team"] + " " + r.headers["x-two"]')" = "bench,bench a=b" ]

: > "$tmp/requests.jsonl"
"$bin" bench --port "$port" --model m --num-prompts 1 --random-input-len 4 --random-output-len 2 \
  --logprobs 3 --extra-body '{"logprobs": 5, "top_k": 7}' --ready-check-timeout-sec 0 \
  > "$tmp/logprobs.out" 2>&1
tap_ok "--logprobs N is sent, --extra-body merged over it" \
  [ "$(req 1 'r.body.logprobs + " " + r.body.top_k')" = "5 7" ]
: > "$tmp/requests.jsonl"
"$bin" bench --port "$port" --model m --num-prompts 1 --random-input-len 4 --random-output-len 2 \
  --logprobs 3 --ready-check-timeout-sec 0 > /dev/null 2>&1
tap_ok "--logprobs 3: \"logprobs\": 3" [ "$(req 1 'r.body.logprobs')" = 3 ]
: > "$tmp/requests.jsonl"
"$bin" bench --port "$port" --model m --num-prompts 1 --random-input-len 4 --random-output-len 2 \
  --header ' authorization = Bearer sk-x ' --ready-check-timeout-sec 0 > /dev/null 2>&1
tap_ok "--header Authorization=... replaces the built-in one (stripped, as later vLLM)" \
  [ "$(req 1 'r.headers.authorization')" = "Bearer sk-x" ]
tap_done
