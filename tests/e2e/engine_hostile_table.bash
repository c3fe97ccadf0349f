# engine_hostile_table.bash: the rows of engine_hostile.sh, one request each:
#   api WANT KIND NAME METHOD PATH BODY [curl args]   well-formed HTTP (curl)
#   raw WANT KIND NAME FILE [raw_http flags]          bytes as they are (raw_http)
# KIND: error (OpenAI's error body), ok (a completion), sse (a stream), mhd (refused by
# libmicrohttpd before any route, with its own HTML body), none. Sourced after the servers start.
C=/v1/completions
CHAT=/v1/chat/completions
P='"prompt": "hi"'
M='"messages": [{"role": "user", "content": "hi"}]'
req() { printf "$@" > "$tmp/req.$((++row_num))"; echo "$tmp/req.$row_num"; }

# ---- the body is not a JSON object
api 400 error "invalid JSON (cut short)" POST $C '{"prompt": "hi", "max_tokens": 2'
api 400 error "an empty body" POST $C ''
api 400 error "a JSON array" POST $C '[1, 2, 3]'
api 400 error "a JSON string" POST $C '"hello"'
api 400 error "JSON null" POST $C 'null'
api 400 error "trailing garbage after the object" POST $C "{$P, \"max_tokens\": 1} xyz"
api 400 error "two objects" POST $C "{$P, \"max_tokens\": 1}{}"
api 400 error "single quotes" POST $C "{'prompt': 'hi'}"
api 400 error "NaN" POST $C "{$P, \"max_tokens\": NaN}"
api 400 error "a lone surrogate escape" POST $C '{"prompt": "\ud800", "max_tokens": 1}'
api 400 error "an escaped NUL (\\u0000) in the prompt" POST $C \
  '{"prompt": "a\u0000b", "max_tokens": 1}'
api 400 error "a raw NUL byte in the prompt" POST $C @"$(req '{"prompt": "a\0b", "max_tokens": 1}')"
node -e 'process.stdout.write("[".repeat(1e5) + "]".repeat(1e5))' > "$tmp/deep1"
node -e 'process.stdout.write("{\"prompt\": " + "{\"a\": ".repeat(5000) + "1" + "}".repeat(5001))' \
  > "$tmp/deep2"
node -e 'process.stdout.write("{\"prompt\": " + "[".repeat(900) + "1" + "]".repeat(900) + "}")' \
  > "$tmp/deep3"
api 400 error "arrays nested 100,000 deep" POST $C @"$tmp/deep1"
api 400 error "objects nested 5,000 deep" POST $C @"$tmp/deep2"
api 400 error "a prompt nested 900 lists deep" POST $C @"$tmp/deep3"

# ---- wrong types and ranges
for bad in '"10"' -1 0 1.5 1e400 2147483648 1000000 true '[1]'; do
  api 400 error "max_tokens $bad" POST $C "{$P, \"max_tokens\": $bad}"
done
for bad in -0.5 '"hot"' 1e309 1e7; do
  api 400 error "temperature $bad" POST $C "{$P, \"max_tokens\": 1, \"temperature\": $bad}"
done
for bad in 0 1.5 -1 '"1"'; do
  api 400 error "top_p $bad" POST $C "{$P, \"max_tokens\": 1, \"top_p\": $bad}"
done
for bad in -5 1e12 2.5; do
  api 400 error "top_k $bad" POST $C "{$P, \"max_tokens\": 1, \"top_k\": $bad}"
done
for bad in 0 1e18 -1 '"1"' 129; do
  api 400 error "n $bad" POST $C "{$P, \"max_tokens\": 1, \"n\": $bad}"
done
for bad in true 21 -1 1.5; do
  api 400 error "logprobs $bad" POST $C "{$P, \"max_tokens\": 1, \"logprobs\": $bad}"
done
for bad in '"abc"' 1e30 0.5; do
  api 400 error "seed $bad" POST $C "{$P, \"max_tokens\": 1, \"seed\": $bad}"
done
api 400 error 'stream "yes"' POST $C "{$P, \"max_tokens\": 1, \"stream\": \"yes\"}"
api 400 error "stream_options without stream" POST $C \
  "{$P, \"max_tokens\": 1, \"stream_options\": {\"include_usage\": true}}"
api 400 error "stream_options.include_usage 1" POST $C \
  "{$P, \"max_tokens\": 1, \"stream\": true, \"stream_options\": {\"include_usage\": 1}}"
api 400 error 'ignore_eos "true"' POST $C "{$P, \"max_tokens\": 1, \"ignore_eos\": \"true\"}"
api 400 error 'stop [""]' POST $C "{$P, \"max_tokens\": 1, \"stop\": [\"\"]}"
api 400 error 'stop [1]' POST $C "{$P, \"max_tokens\": 1, \"stop\": [1]}"
api 200 ok 'stop ["x"]' POST $C "{$P, \"max_tokens\": 1, \"stop\": [\"x\"]}"
api 200 ok "temperature 1e-300 (greedy in effect)" POST $C \
  "{$P, \"max_tokens\": 1, \"temperature\": 1e-300}"
api 200 ok "seed -1 and top_k 2147483647" POST $C \
  "{$P, \"max_tokens\": 1, \"seed\": -1, \"top_k\": 2147483647}"

# ---- prompts
for bad in 42 '{}' '[]' '[-1]' '[1e9]' '[1.5]' '["a", []]' '[[1], ["b"]]' '[["a"]]' '""' '[true]'; do
  api 400 error "prompt $bad" POST $C "{\"prompt\": $bad, \"max_tokens\": 1}"
done
api 400 error "no prompt" POST $C '{"max_tokens": 1}'
api 200 ok "special-token ids given as ids (the client's own choice)" POST $C \
  '{"prompt": [200006, 1, 2], "max_tokens": 1}'
api 200 ok "a prompt of invalid UTF-8 bytes (answer still UTF-8)" POST $C \
  @"$(req '{"prompt": "ok \377\376\303 ok", "max_tokens": 2}')"
api 404 error "an unknown model" POST $C "{\"model\": \"nope\", $P, \"max_tokens\": 1}"
api 400 error "model 7" POST $C "{\"model\": 7, $P, \"max_tokens\": 1}"
api 404 error "a model name of invalid UTF-8 (error body still UTF-8)" POST $C \
  @"$(req '{"model": "x\377\376\303", "prompt": "hi", "max_tokens": 1}')"
long_model=x$(node -e 'process.stdout.write("é".repeat(10000))')  # quoted cut at byte 200
api 404 error "a 20 KB model name, quoted cut mid-character (error body still UTF-8)" POST $C \
  "{\"model\": \"$long_model\", $P, \"max_tokens\": 1}"

# ---- chat
for bad in '"hi"' '[]' '[null]' '[[]]' '[{"content": "x"}]' '[{"role": 5, "content": "x"}]' \
  '[{"role": "tool", "content": "x"}]' '[{"role": "user", "content": 5}]' \
  '[{"role": "user", "content": {}}]' \
  '[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]' \
  '[{"role": "assistant", "content": "x", "tool_calls": {}}]' \
  '[{"role": "assistant", "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}]' \
  '[{"role": "tool", "tool_call_id": "nowhere", "content": "x"}]'; do
  api 400 error "messages $bad" POST $CHAT "{\"messages\": $bad, \"max_tokens\": 1}"
done
api 400 error "no messages" POST $CHAT '{"max_tokens": 1}'
api 400 error 'reasoning_effort "max"' POST $CHAT \
  "{$M, \"max_tokens\": 1, \"reasoning_effort\": \"max\"}"
api 400 error "reasoning_effort 3" POST $CHAT "{$M, \"max_tokens\": 1, \"reasoning_effort\": 3}"
api 400 error "max_completion_tokens -3" POST $CHAT "{$M, \"max_completion_tokens\": -3}"
api 200 sse "a chat stream with usage (still served)" POST $CHAT \
  "{$M, \"max_tokens\": 2, \"stream\": true, \"stream_options\": {\"include_usage\": true}}"

# ---- body size
{ printf '{"prompt": "'; head -c 100000000 /dev/zero | tr '\0' a; printf '"}'; } > "$tmp/100mb"
api 413 error "a 100 MB body" POST $C @"$tmp/100mb"
head -c 9000000 "$tmp/100mb" > "$tmp/9mb"
api 413 error "a 9 MB chunked body (no Content-Length)" POST $C @"$tmp/9mb" \
  -H 'Transfer-Encoding: chunked'
rm -f "$tmp/100mb" "$tmp/9mb"

# ---- routes and methods
api 404 error "GET an unknown route" GET /v1/nope -
api 404 error "POST /v1/embeddings (not served)" POST /v1/embeddings "{$P}"
api 404 error "GET /" GET / -
api 405 error "GET /v1/chat/completions" GET $CHAT -
api 405 error "PUT /v1/completions" PUT $C "{$P}"
api 405 error "DELETE /v1/models" DELETE /v1/models -
api 405 error "POST /health" POST /health '{}'
api 405 error "OPTIONS /v1/completions" OPTIONS $C -
raw 405 error "an unknown method FOO" "$(req 'FOO /v1/models HTTP/1.1\r\nHost: x\r\n\r\n')"
raw 404 error "a URL with %00 and %ff%fe (error body still UTF-8)" \
  "$(req 'GET /v1/x%%ff%%fe%%00y HTTP/1.1\r\nHost: x\r\n\r\n')"
raw 200 none "HTTP/1.0 without Host" "$(req 'GET /health HTTP/1.0\r\n\r\n')"
raw 200 none "two pipelined requests in one write" \
  "$(req 'GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n')"

# ---- /tokenize, /detokenize, /version, /v1/models/{id}
api 200 none "POST /tokenize" POST /tokenize "{$P}"
api 400 error "/tokenize prompt 5" POST /tokenize '{"prompt": 5}'
api 400 error "/tokenize with neither prompt nor messages" POST /tokenize '{}'
api 400 error "/tokenize with broken JSON" POST /tokenize '{"prompt'
api 400 error "/tokenize messages [null]" POST /tokenize '{"messages": [null]}'
api 404 error "/tokenize for an unknown model" POST /tokenize "{\"model\": \"nope\", $P}"
api 400 error "/detokenize tokens [-1]" POST /detokenize '{"tokens": [-1]}'
api 400 error "/detokenize tokens [1e30]" POST /detokenize '{"tokens": [1e30]}'
api 400 error '/detokenize tokens "x"' POST /detokenize '{"tokens": "x"}'
api 405 error "GET /tokenize" GET /tokenize -
api 404 error "GET /v1/models/nope" GET /v1/models/nope -
api 200 none "GET /version" GET /version -
api 405 error "POST /version" POST /version '{}'

# ---- malformed HTTP (libmicrohttpd answers before any route)
raw 0 none "not HTTP at all (closed unanswered)" "$(req 'GARBAGE\r\n\r\n')"
raw 505 mhd "HTTP/2.0 in the request line" "$(req 'GET /health HTTP/2.0\r\nHost: x\r\n\r\n')"
raw 200 none "HTTP/1.1 without Host (accepted: libmicrohttpd is lenient)" \
  "$(req 'GET /health HTTP/1.1\r\n\r\n')"
POST_HEAD='POST /v1/completions HTTP/1.1\r\nHost: x\r\n'
raw 400 mhd "Content-Length -5" "$(req "${POST_HEAD}Content-Length: -5\r\n\r\n")"
raw 413 mhd "Content-Length 10^23" \
  "$(req "${POST_HEAD}Content-Length: 100000000000000000000000\r\n\r\n")"
raw 400 mhd "a malformed chunk size" \
  "$(req 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')"
{ printf 'GET /health HTTP/1.1\r\nHost: x\r\n'
  for i in $(seq 5000); do printf 'X-%d: %050d\r\n' "$i" 0; done; printf '\r\n'; } > "$tmp/flood"
raw 431 mhd "5,000 headers (a header flood)" "$tmp/flood"
{ printf 'GET /health HTTP/1.1\r\nHost: x\r\nX-Big: '; head -c 100000 /dev/zero | tr '\0' b
  printf '\r\n\r\n'; } > "$tmp/bighead"
raw 431 mhd "one 100 KB header" "$tmp/bighead"
raw 414 mhd "a 40 KB URL" "$(req "GET /%040000d HTTP/1.1\r\nHost: x\r\n\r\n" 0)"

# ---- the API key (the keyed server: constant-time comparison of the whole header)
keyed() { HOST=127.0.0.2 PORT=$port_keyed api "$@"; }
auth() { echo "Authorization: $1"; }
keyed 401 error "no Authorization header" POST $C "{$P, \"max_tokens\": 1}"
long_key=$(head -c 8000 /dev/zero | tr '\0' k)
for wrong in "Bearer " "Bearer x" "Bearer ${KEY%?}" "Bearer ${KEY%?}X" "Bearer X${KEY#?}" \
  "Bearer ${KEY}x" "Bearer $long_key" "bearer $KEY" "$KEY" \
  "Basic $(printf 'u:%s' "$KEY" | base64)"; do
  keyed 401 error "Authorization: ${wrong:0:40} (${#wrong} chars)" POST $C \
    "{$P, \"max_tokens\": 1}" -H "$(auth "$wrong")"
done
keyed 401 error "a wrong key with a broken body (401 before parsing)" POST $C '{"prompt' \
  -H "$(auth "Bearer x")"
keyed 401 error "GET /v1/models without a key" GET /v1/models -
keyed 200 ok "the right key" POST $C "{$P, \"max_tokens\": 1}" -H "$(auth "Bearer $KEY")"
keyed 200 none "GET /v1/models with the right key" GET /v1/models - -H "$(auth "Bearer $KEY")"
keyed 200 none "GET /health needs no key" GET /health -
keyed 200 none "GET /metrics needs no key" GET /metrics -
keyed 401 error "GET /v1/models/{id} without a key" GET /v1/models/gpt-oss-tiny -
keyed 200 none "POST /tokenize needs no key (as in vLLM, the key guards /v1/* only)" POST \
  /tokenize "{$P}"
