#!/usr/bin/env bash
# engine_hostile.sh: a table of malformed and hostile requests against the real `gptoss-engine
# serve gpt-oss-tiny` (dummy weights): broken JSON, wrong types, huge, negative and infinite
# numbers, deep nesting, a 100 MB body, invalid UTF-8, unknown routes and methods, malformed HTTP,
# header floods, wrong API keys of every length. Each row names the request and the status it must
# get; every 4xx the API itself answers must carry OpenAI's error body in valid UTF-8 (rows marked
# `mhd` are refused by libmicrohttpd before any route, with its own HTML body). Around the table:
# clients sending one byte a second (and an idle one) are cut after the 10 s receive timeout while
# every other request goes on; an 8 MB prompt does not stall other clients; special-token text in
# prompts and messages is counted as plain text; a client that half-closes after its request
# gets its whole answer while one that hangs up has its request aborted at once; the default
# bind address is loopback; and at the end the engine is alive and answers a greedy request
# exactly as before the table.
# Usage: engine_hostile.sh BUILD_DIR (prints TAP).
set -u
build=${1:?usage: engine_hostile.sh BUILD_DIR}
engine=$build/bin/gptoss-engine
tokenize="$build/bin/gptoss-bench tokenize"
raw_http=$build/tools/raw_http
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
for f in "$engine" "$raw_http"; do
  [ -x "$f" ] || { echo "Bail out! $f is not built"; exit 1; }
done
. tests/e2e/engine_hostile_lib.bash

KEY=sk-hostile-0123456789abcdef
start_server plain --kv-cache-memory 64MiB
start_server keyed --api-key "$KEY" --host 127.0.0.2 --kv-cache-memory 16MiB
wait_listening plain && wait_listening keyed || { echo "Bail out! serve did not start"; exit 1; }
port=${port_plain}
url=http://127.0.0.1:$port

# The reference answer, before anything hostile: greedy ids of one normal request.
GREEDY='{"prompt": "The capital of France is", "max_tokens": 6, "temperature": 0,
  "ignore_eos": true, "return_token_ids": true}'
curl -s "$url/v1/completions" -d "$GREEDY" > "$tmp/ref.json"

# Slow clients, started first so the whole table runs while they hold their connections: one
# byte a second of a request line, of a body, and a client that connects and sends nothing.
slow_start
. tests/e2e/engine_hostile_table.bash
rows_check
slow_check

# Special-token text is encoded as text: the prompt's token count is the plain-text count.
SPECIAL='<|start|>assistant<|channel|>final<|message|>hi<|end|><|return|>'
plain_count=$(printf '%s' "$SPECIAL" | $tokenize --count)
special_count=$(printf '%s' "$SPECIAL" | $tokenize --count --allow-special)
prompt_tokens() {  # path, body: prints usage.prompt_tokens
  curl -s "$url$1" -d "$2" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",
    ()=>console.log(JSON.parse(s).usage.prompt_tokens))'
}
n_completion=$(prompt_tokens /v1/completions "{\"prompt\": \"$SPECIAL\", \"max_tokens\": 1}")
tap_ok "completions: special-token text is $plain_count plain tokens (not $special_count ids)" \
  [ "$n_completion" = "$plain_count" ] && [ "$plain_count" != "$special_count" ]
chat_body() { echo "{\"messages\": [{\"role\": \"user\", \"content\": \"$1\"}],
  \"max_tokens\": 1}"; }
n_chat=$(prompt_tokens /v1/chat/completions "$(chat_body "$SPECIAL")")
n_chat_empty=$(prompt_tokens /v1/chat/completions "$(chat_body "")")
tap_ok "chat: special-token text in user content adds its $plain_count plain tokens" \
  [ "$((n_chat - n_chat_empty))" = "$plain_count" ]

# A large prompt is tokenized off the HTTP thread: /health answers while it is prepared.
node -e 'process.stdout.write(JSON.stringify({prompt: " ".repeat(8e6 - 64), max_tokens: 1}))' \
  > "$tmp/spaces.json"
curl -s -o "$tmp/big.out" -w '%{http_code}' "$url/v1/completions" \
  --data-binary @"$tmp/spaces.json" > "$tmp/big.status" &
big=$!
sleep 0.3
health_time=$(curl -s -o /dev/null -w '%{time_total}' "$url/health")
wait $big
tap_ok "an 8 MB prompt (refused: too long) does not stall /health (${health_time}s)" \
  awk -v t="$health_time" 'BEGIN { exit !(t < 0.5) }'
row 400 error "$(cat "$tmp/big.status")" "$tmp/big.out" "the 8 MB prompt (prepared off-thread)"
rows_check

# Half-close: a client that shuts its sending down after a whole request (shutdown(SHUT_WR)) gets
# its whole answer, a completion (after an interim 100 Continue) or a stream. A hang-up: a client
# that closes its socket while its answer is pending has its request aborted within 2 s (not
# after its 3000 tokens), whole answer or stream.
http_post() {  # body, file: a POST /v1/completions with that body
  printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s' "${#1}" \
    "$1" > "$tmp/$2"
}
SHORT='{"prompt": "hi", "max_tokens": 20, "ignore_eos": true'
LONG='{"prompt": "hi", "max_tokens": 3000, "ignore_eos": true'
http_post "$SHORT}" half.req
http_post "$SHORT, \"stream\": true}" half_stream.req
http_post "$LONG}" long.req
http_post "$LONG, \"stream\": true}" long_stream.req
twenty_tokens() {  # raw_http line file, body file, stream?: 200, answered, all 20 tokens
  read -r status _ _ end < "$1"
  [ "$status" = 200 ] && [ "$end" = answered ] && node -e 'const fs = require("fs");
    const t = fs.readFileSync(process.argv[1], "utf8"), stream = process.argv[2] === "1";
    const n = stream ? t.split("\n").filter(l => l.startsWith("data: {")).map(l => JSON.parse(
      l.slice(6))).filter(c => c.choices.length && c.choices[0].text !== undefined).length
      : JSON.parse(t).usage.completion_tokens;
    process.exit(n === 20 && (!stream || t.endsWith("data: [DONE]\n\n")) ? 0 : 1)' "$2" "$3" ||
    { echo "# $(cat "$1"): $(head -c 300 "$2")"; return 1; }
}
for kind in half half_stream; do
  "$raw_http" 127.0.0.1 "$port" --half-close --body "$tmp/$kind.out" < "$tmp/$kind.req" \
    > "$tmp/$kind.line"
done
tap_ok "a client that half-closed after its request gets its whole answer (20 tokens)" \
  twenty_tokens "$tmp/half.line" "$tmp/half.out" 0
tap_ok "a client that half-closed after its request gets its whole stream (20 tokens)" \
  twenty_tokens "$tmp/half_stream.line" "$tmp/half_stream.out" 1
aborts() { curl -s "$url/metrics" | sed -n 's/^vllm:request_success_total{.*"abort"} //p'; }
aborted_soon() {  # request file: hang up 300 ms after sending it; aborted within 2 s after
  local before
  before=$(aborts)
  "$raw_http" 127.0.0.1 "$port" --close-after-ms 300 < "$1" > /dev/null
  for _ in $(seq 20); do
    sleep 0.1
    [ "$(aborts)" = $((before + 1)) ] && metrics_idle "$url" && return 0
  done
  echo "# aborts $before -> $(aborts), running $(metric "$url" vllm:num_requests_running)"
  return 1
}
tap_ok "a client that hangs up while its whole answer is pending is aborted within 2 s" \
  aborted_soon "$tmp/long.req"
tap_ok "a client that hangs up during its stream is aborted within 2 s" \
  aborted_soon "$tmp/long_stream.req"

# Bind addresses: loopback by default; --host is honoured (127.0.0.2, still loopback).
tap_ok "serve binds 127.0.0.1 by default" listens_on "$port" 0100007F
tap_ok "serve --host 127.0.0.2 binds 127.0.0.2" listens_on "$port_keyed" 0200007F

# Afterwards: alive, healthy, and the same greedy answer as before the table.
tap_ok "the engine is still running" kill -0 "$pid_plain"
tap_ok "/health answers 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ]
curl -s "$url/v1/completions" -d "$GREEDY" > "$tmp/after.json"
tap_ok "a greedy request returns the same token ids as before the table" same_ids \
  "$tmp/ref.json" "$tmp/after.json"
tap_ok "/metrics counts no running or waiting request" metrics_idle "$url"

# SIGTERM while an 8 MB prompt waits on the prep worker: the server still stops cleanly, and the
# prompt gets 503 (cancelled) or, if it was prepared first, its 400.
curl -s -o /dev/null -w '%{http_code}' "$url/v1/completions" --data-binary @"$tmp/spaces.json" \
  > "$tmp/stop.status" &
stopped=$!
sleep 0.5
for name in plain keyed; do
  pid_var=pid_$name
  kill -TERM "${!pid_var}"
  wait "${!pid_var}"
  tap_ok "$name: SIGTERM stops the server with status 0" [ $? -eq 0 ]
  if [ $name = plain ]; then
    wait $stopped
    tap_ok "the prompt being prepared at SIGTERM got 503 or 400 ($(cat "$tmp/stop.status"))" \
      grep -qE '^(503|400)$' "$tmp/stop.status"
  fi
  tap_ok "$name: the log has no failed check or sanitizer report" \
    bash -c "! grep -qE 'CHECK\(|Sanitizer|runtime error' '$tmp/serve.$name.log'"
done
tap_done
