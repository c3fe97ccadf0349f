#!/usr/bin/env bash
# bench_request_format.sh: what `gptoss-bench bench` sends, as an independent server sees it: a
# small node HTTP server records every POST's headers and JSON body and answers a valid stream.
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
command -v node > /dev/null || { echo "Bail out! node is not installed (make deps)"; exit 1; }

cat > "$tmp/server.js" <<'EOF'
// Records each POST as one JSON line {headers, body} and streams two tokens, usage and [DONE].
const http = require("http"), fs = require("fs");
const log = process.argv[2];
http.createServer((req, res) => {
  let body = "";
  req.on("data", c => (body += c));
  req.on("end", () => {
    if (req.method !== "POST") { res.writeHead(404); res.end(); return; }
    fs.appendFileSync(log, JSON.stringify({headers: req.headers, body: JSON.parse(body)}) + "\n");
    res.writeHead(200, {"Content-Type": "text/event-stream"});
    for (const t of ["a", "b"])
      res.write(`data: {"choices":[{"index":0,"text":"${t}","finish_reason":${t === "b" ? '"length"' : "null"}}]}\n\n`);
    res.write('data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}\n\n');
    res.end("data: [DONE]\n\n");
  });
}).listen(0, "127.0.0.1", function () { console.log("listening " + this.address().port); });
EOF
node "$tmp/server.js" "$tmp/requests.jsonl" > "$tmp/server.out" 2>&1 &
pids+=($!)
port=$(wait_for_output "$tmp/server.out" 's/^listening //p' 50) || { echo "Bail out! the node server did not start"; exit 1; }

req() {  # line number (1: the ready check), JS expression on r: prints its value
  node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").split("\n")[process.argv[2] - 1]);
           console.log(eval(process.argv[3]))' "$tmp/requests.jsonl" "$1" "$2"
}

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
