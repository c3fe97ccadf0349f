#!/usr/bin/env bash
# bench_mock.sh: drives the real `gptoss-bench bench` against the real `gptoss-bench mock-server`
# over loopback: the vLLM report and result JSON, the token totals, the concurrency cap as the
# server counted it, the shipped ShareGPT-format dataset, failures (HTTP errors, and error events
# inside a 200 stream as llama-server sends them), and start-up errors.
# Usage: bench_mock.sh BUILD_DIR (prints TAP).
set -u
bin="${1:?usage: bench_mock.sh BUILD_DIR}/bin/gptoss-bench"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "Bail out! $bin is not built"; exit 1; }

# Starts a mock server with the given flags on a free port; sets $url.
start_mock() {
  local log="$tmp/mock.$RANDOM.log"
  "$bin" mock-server --port 0 "$@" > "$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    url=$(sed -n 's/^mock-server listening on //p' "$log")
    [ -n "$url" ] && return 0
    sleep 0.05
  done
  echo "# mock-server did not start: $(cat "$log")"
  return 1
}

json_get() {  # file, key: prints the value (node parses the JSON)
  node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
           console.log(JSON.stringify(o[process.argv[2]]))' "$1" "$2"
}

start_mock --ttft-ms 20 --itl-ms 2
"$bin" bench --base-url "$url" --num-prompts 40 --random-input-len 64 --random-output-len 16 \
  --max-concurrency 4 --request-rate 200 --save-result --save-detailed --result-dir "$tmp/res" \
  --result-filename run.json --metadata tag=e2e > "$tmp/out.txt" 2> "$tmp/err.txt"
rc=$?
tap_ok "bench exits 0" [ "$rc" -eq 0 ]
tap_ok "report: all 40 requests succeeded" grep -qE '^Successful requests: +40 +$' "$tmp/out.txt"
tap_ok "report: 640 generated tokens (40 x 16, from the usage chunks)" \
  grep -qE '^Total generated tokens: +640 +$' "$tmp/out.txt"
tap_ok "report: the concurrency and rate lines are shown" \
  grep -qE '^Request rate configured \(RPS\): +200.00 +$' "$tmp/out.txt"
block_lines() { sed -n '/^=* Serving Benchmark Result =*$/,/^=\{50\}$/p' "$tmp/out.txt" | wc -l; }
# title, 9 figures (with the concurrency and rate lines), 3 sections of 4 lines, closing line
tap_ok "report: vLLM's block has its 23 lines" [ "$(block_lines)" -eq 23 ]
max_in_flight() { node -e 'fetch(process.argv[1]).then(r=>r.json()).then(s=>console.log(s.max_in_flight))' "$url/mock/stats"; }
tap_ok "server never saw more than --max-concurrency 4 in flight" [ "$(max_in_flight)" -le 4 ]
tap_ok "json: completed 40" [ "$(json_get "$tmp/res/run.json" completed)" = 40 ]
tap_ok "json: metadata key in place" [ "$(json_get "$tmp/res/run.json" tag)" = '"e2e"' ]
tap_ok "json: 40 per-request ITL lists (--save-detailed)" \
  [ "$(node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1]));console.log(o.itls.length)' "$tmp/res/run.json")" = 40 ]
tap_ok "json: dataset named" [ "$(json_get "$tmp/res/run.json" dataset_name)" = '"random"' ]
ttft_close() {  # the mock waits 20 ms before the first event: mean TTFT within [20, 25) ms
  node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1]));
           process.exit(o.mean_ttft_ms >= 20 && o.mean_ttft_ms < 25 ? 0 : 1)' "$tmp/res/run.json"
}
tap_ok "json: mean TTFT matches the server's 20 ms" ttft_close

"$bin" bench --base-url "$url" --endpoint-type openai-chat --endpoint /v1/chat/completions \
  --dataset-name sharegpt --dataset-path datasets/sharegpt-synth.json --num-prompts 30 \
  --sharegpt-output-len 8 > "$tmp/chat.txt" 2>&1
tap_ok "chat endpoint with the shipped ShareGPT-format dataset" \
  grep -qE '^Total generated tokens: +240 +$' "$tmp/chat.txt"

# Poisson arrivals at 100 req/s: vLLM scales the schedule so the last request is sent at exactly
# N / rate = 1.5 s; with 20 ms answers the run lasts 1.5 s and a little more.
"$bin" bench --base-url "$url" --num-prompts 150 --random-input-len 8 --random-output-len 1 \
  --request-rate 100 --seed 3 --save-result --result-dir "$tmp/res" --result-filename rate.json \
  > "$tmp/rate.txt" 2>&1
paced() {
  node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1]));
           process.exit(o.completed === 150 && o.duration >= 1.5 && o.duration < 1.8 ? 0 : 1)' \
    "$tmp/res/rate.json"
}
tap_ok "request rate 100/s: 150 Poisson arrivals take 1.5 s" paced

start_mock --error-rate 1 --ttft-ms 1
"$bin" bench --base-url "$url" --num-prompts 5 --random-input-len 8 --random-output-len 4 \
  --ready-check-timeout-sec 0 > "$tmp/fail.txt" 2> "$tmp/fail.err"
tap_ok "server errors: counted as failed requests" grep -qE '^Failed requests: +5 +$' "$tmp/fail.txt"
tap_ok "server errors: a warning on stderr" test -s "$tmp/fail.err"

# Every 4th stream ends with llama-server's error event after 2 tokens: the ready check is
# arrival 1, so of the 20 timed requests (arrivals 2..21) the 4th, 8th, ... 20th fail.
start_mock --ttft-ms 1 --itl-ms 1 --error-event-every 4
"$bin" bench --base-url "$url" --num-prompts 20 --random-input-len 8 --random-output-len 8 \
  --max-concurrency 4 --save-result --save-detailed --result-dir "$tmp/res" \
  --result-filename events.json > "$tmp/events.txt" 2> "$tmp/events.err"
rc=$?
tap_ok "error events: bench exits 0, as with any failed requests" [ "$rc" -eq 0 ]
tap_ok "error events: 15 successful requests" grep -qE '^Successful requests: +15 +$' "$tmp/events.txt"
tap_ok "error events: 5 failed, all as stream errors" \
  grep -qzE 'Failed requests: +5 +'$'\n''Failed \(stream error\): +5 +' "$tmp/events.txt"
tap_ok "error events: only the successful requests' tokens count (15 x 8)" \
  grep -qE '^Total generated tokens: +120 +$' "$tmp/events.txt"
event_counts() {
  node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1]));
           const e=o.errors.filter(x => x.includes("mock-server: injected error event (code 500"));
           console.log(o.completed, o.failed_requests, o.failed_stream_error, e.length,
                       o.output_lens.filter(n => n === 0).length)' "$tmp/res/events.json"
}
tap_ok "error events: json completed 15, failed 5, failed_stream_error 5, 5 errors, 5 zero lengths" \
  [ "$(event_counts)" = "15 5 5 5 5" ]

# Every 5th stream ends cleanly after its 8 tokens but with no finish_reason, usage or [DONE]
# (a server that gave up on it): the 5th, 10th, ... of arrivals 2..21 fail, 4 of them.
start_mock --ttft-ms 1 --itl-ms 1 --unfinished-every 5
"$bin" bench --base-url "$url" --num-prompts 20 --random-input-len 8 --random-output-len 8 \
  --max-concurrency 4 --save-result --save-detailed --result-dir "$tmp/res" \
  --result-filename unfinished.json > "$tmp/unfinished.txt" 2> "$tmp/unfinished.err"
tap_ok "no [DONE] nor finish_reason: 16 successful, 4 failed as stream errors" \
  grep -qzE 'Successful requests: +16 +'$'\n''.*Failed requests: +4 +'$'\n''Failed \(stream error\): +4 +' "$tmp/unfinished.txt"
unfinished_counts() {
  node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1]));
           const e=o.errors.filter(x => x === "stream ended without [DONE] or a finish_reason after 8 events");
           console.log(o.completed, o.failed_stream_error, e.length)' "$tmp/res/unfinished.json"
}
tap_ok "no [DONE] nor finish_reason: json completed 16, failed_stream_error 4, each error says why" \
  [ "$(unfinished_counts)" = "16 4 4" ]

# vLLM's ramp-up: its two lines, its result file name and keys; rates 5 -> 20 over 16 requests
# (rate_i = 5 + i), so every request raises int(rate) by one: 16 change events, 5 to 20.
start_mock --ttft-ms 1 --itl-ms 1
"$bin" bench --base-url "$url" --num-prompts 16 --random-input-len 8 --random-output-len 2 \
  --ramp-up-strategy linear --ramp-up-start-rps 5 --ramp-up-end-rps 20 --save-result \
  --result-dir "$tmp/ramp" > "$tmp/ramp.txt" 2>&1
tap_ok "ramp-up: vLLM's two traffic lines" \
  grep -qzE 'Traffic ramp-up strategy: linear\.'$'\n''Will increase RPS from 5 to 20 RPS over the duration of the benchmark\.' "$tmp/ramp.txt"
ramp_file=$(ls "$tmp/ramp" 2>/dev/null)
tap_ok "ramp-up: vLLM's file name" \
  bash -c "[[ '$ramp_file' =~ ^openai-ramp-up-linear-5qps-20qps-gpt-oss-120b-[0-9]{8}-[0-9]{6}\.json$ ]]"
ramp_keys() {
  node -e 'const o=JSON.parse(require("fs").readFileSync(process.argv[1]));
           const ev=o.rps_change_events, t=ev.map(e => Date.parse(e.timestamp));
           console.log(o.ramp_up_strategy, o.ramp_up_start_rps, o.ramp_up_end_rps, o.request_rate,
                       ev.map(e => e.rps).join(","), t.every((x, i) => i === 0 || x >= t[i - 1]))' \
    "$tmp/ramp/$ramp_file"
}
tap_ok "ramp-up: keys, and one change event per integer rate, in time order" \
  [ "$(ramp_keys)" = "linear 5 20 inf 5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20 true" ]

start_mock --ttft-ms 1 --itl-ms 1 --error-event-every 1
"$bin" bench --base-url "$url" --num-prompts 2 --random-input-len 8 --random-output-len 8 \
  --ready-check-timeout-sec 1 > /dev/null 2> "$tmp/events-ready.err"
rc=$?
tap_ok "error events: the initial test run fails and prints the event's message" \
  [ "$rc" -ne 0 -a -n "$(grep 'Initial test run failed.*Error: stream error event after 2 events: mock-server: injected error event (code 500, type server_error)' "$tmp/events-ready.err")" ]

"$bin" bench --port 1 --model m --num-prompts 2 --random-input-len 8 --ready-check-timeout-sec 1 \
  > /dev/null 2> "$tmp/refused.err"
rc=$?
tap_ok "no server: the initial test run fails with vLLM's message" \
  [ "$rc" -ne 0 -a -n "$(grep 'Initial test run failed' "$tmp/refused.err")" ]

"$bin" bench --num-prompts x > /dev/null 2> "$tmp/flag.err"
tap_ok "bad flag value: error names the flag" grep -q "\-\-num-prompts: 'x'" "$tmp/flag.err"
tap_done
