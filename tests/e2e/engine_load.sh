#!/usr/bin/env bash
# engine_load.sh: load and faults against the real `gptoss-engine serve gpt-oss-tiny` (dummy
# weights): STREAMS concurrent streams from `gptoss-bench bench` (all succeed, all open at once);
# REQUESTS streams cut at random points by stream_chaos (mid-request, before the answer, mid-
# stream; FIN or RST): every stream read to the end is whole, and afterwards nothing is running,
# waiting or holding KV; a client that leaves a whole answer before it is done has its request
# aborted at once; prompts that overflow a tiny KV cache, in sync and async scheduling:
# requests are preempted and recomputed, and every one completes with the greedy ids it gets
# alone, while /metrics counts the preemptions; and the engine's RSS stays near its level before
# the load (see rss_check for the tolerances and why).
# Sizes: `make test` runs STREAMS=400 REQUESTS=1000 KV_CLIENTS=12; STRESS=1 (`make stress`) runs
# 2000, 10000 and 48; LOAD_STREAMS / LOAD_REQUESTS override the first two.
# Usage: engine_load.sh BUILD_DIR (prints TAP).
set -u
build=${1:?usage: engine_load.sh BUILD_DIR}
engine=$build/bin/gptoss-engine
bench=$build/bin/gptoss-bench
chaos=$build/tools/stream_chaos
raw_http=$build/tools/raw_http
if [ "${STRESS:-0}" = 1 ]; then STREAMS=2000 REQUESTS=10000 CHAOS_CONCURRENCY=1000 KV_CLIENTS=48
else STREAMS=400 REQUESTS=1000 CHAOS_CONCURRENCY=200 KV_CLIENTS=12; fi
STREAMS=${LOAD_STREAMS:-$STREAMS}
REQUESTS=${LOAD_REQUESTS:-$REQUESTS}
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
for f in "$engine" "$bench" "$chaos" "$raw_http"; do
  [ -x "$f" ] || { echo "Bail out! $f is not built"; exit 1; }
done
. tests/e2e/engine_load_lib.bash
ulimit -n "$(ulimit -Hn)" 2>/dev/null

# ---- concurrent streams, then random disconnects, on one server
start_server --kv-cache-memory 32MiB --max-model-len 1024 ||
  { echo "Bail out! serve did not start"; exit 1; }
url=http://127.0.0.1:$port
streams() {  # n: n streams, all at once; prints bench's report
  "$bench" bench --base-url "$url" --num-prompts "$1" --max-concurrency "$1" \
    --random-input-len 8 --random-output-len 4 --ignore-eos 2>&1
}
streams "$STREAMS" > "$tmp/warmup.txt"  # the same shape as the load: buffers reach their size
rss_before=$(rss "$server_pid")
streams "$STREAMS" > "$tmp/streams.txt"
rss_streams=$(rss "$server_pid")
report() {  # label, value: bench's report line says so
  grep -qE "^$1: +$2 *\$" "$tmp/streams.txt" || { grep -E "^$1" "$tmp/streams.txt"; false; }
}
tap_ok "$STREAMS concurrent streams: all succeed" report "Successful requests" "$STREAMS"
tap_ok "$STREAMS concurrent streams: none failed" report "Failed requests" 0
tap_ok "$STREAMS concurrent streams: all $STREAMS were open at once" \
  report "Peak concurrent requests" "$STREAMS"
tap_ok "$STREAMS concurrent streams: every token arrived ($((STREAMS * 4)))" \
  report "Total generated tokens" $((STREAMS * 4))

"$chaos" 127.0.0.1 "$port" --requests "$REQUESTS" --concurrency "$CHAOS_CONCURRENCY" \
  --max-tokens 4 --seed 11 > "$tmp/chaos.txt" 2>&1
chaos_rc=$?
echo "# stream_chaos: $(tail -1 "$tmp/chaos.txt")"
tap_ok "$REQUESTS streams cut at random points: every stream read to the end is whole" \
  [ "$chaos_rc" = 0 ]
tap_ok "the disconnects were injected (each kind at least 10% of $REQUESTS)" chaos_mix \
  "$tmp/chaos.txt" $((REQUESTS / 10))
tap_ok "after the disconnects: nothing running or waiting, no KV block held" wait_idle "$url"
echo "# hang-ups seen while answers were pending: $(metric "$url" gptoss:http_client_hangups_total)"
rss_after=$(rss "$server_pid")
echo "# RSS (KiB): after warm-up $rss_before, after the streams $rss_streams," \
  "after the disconnects $rss_after"
rss_check "$rss_before" "$rss_streams" "$rss_after"
tap_ok "a client leaving its whole answer (1,000 tokens) is aborted within a second" \
  hangup_aborts "$url"
tap_ok "the engine still answers a request" one_request "$url"
stop_server

# ---- a KV cache far too small for the load: preemption and recomputation, sync and async
# 12 blocks of 16 tokens; each request needs 3 blocks (13 prompt + 32 output tokens), so 12 at
# once need 36.
for mode in sync async; do
  flags=(--kv-cache-memory 768KiB --max-model-len 256 --weight-format f32)
  [ $mode = async ] && flags+=(--async-scheduling)
  if start_server "${flags[@]}"; then
    url=http://127.0.0.1:$port
    read -r mismatches incomplete < <(preempted_clients "$url" "$KV_CLIENTS" 32)
    tap_ok "$mode: $KV_CLIENTS requests overflowing the KV cache all complete (32 tokens each)" \
      [ "$incomplete" = 0 ]
    tap_ok "$mode: each equals its greedy ids alone, despite preemption" [ "$mismatches" = 0 ]
    preemptions=$(metric "$url" vllm:num_preemptions_total)
    echo "# $mode: $preemptions preemptions"
    tap_ok "$mode: /metrics counts the preemptions" \
      awk -v p="$preemptions" 'BEGIN { exit !(p > 0) }'
    tap_ok "$mode: afterwards nothing running or waiting, no KV block held" wait_idle "$url"
    stop_server
  else
    tap_ok "$mode: the server starts" false
  fi
done
tap_done
