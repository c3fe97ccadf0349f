# engine_hostile_lib.bash: sourced by engine_hostile.sh: starting servers, sending one table row
# (curl for well-formed HTTP, raw_http for bytes curl will not send), judging every row's status
# and body at once (node: strict UTF-8, then OpenAI's error shape or a completion), the slow
# clients, and small probes (listening address, metrics, greedy ids). Expects $engine,
# $raw_http, $tmp and pids.

start_server() {  # name, flags...: starts it in the background; sets pid_NAME
  local name=$1; shift
  "$engine" serve gpt-oss-tiny --port 0 --weight-format q8 --max-model-len 4096 --threads 1 \
    "$@" > "$tmp/serve.$name.log" 2>&1 &
  pids+=($!)
  printf -v "pid_$name" %s $!
}

wait_listening() {  # name: waits until it prints its address; sets port_NAME
  local log=$tmp/serve.$1.log p=
  for _ in $(seq 600); do
    p=$(sed -n 's/^gptoss-engine serve: listening on http:\/\/.*:\([0-9]*\)$/\1/p' "$log")
    [ -n "$p" ] && { printf -v "port_$1" %s "$p"; return 0; }
    sleep 0.1
  done
  echo "# serve $1 did not start: $(tail -3 "$log")"
  return 1
}

# Rows are sent first and judged together (one node process for all): each api or raw call
# appends "want<TAB>kind<TAB>got<TAB>file<TAB>name" to $tmp/rows; rows_check prints their TAP lines.
# KIND: error (OpenAI's error body, its code a string or null as OpenAI's, in valid UTF-8), ok (a completion), sse
# (a stream ending in [DONE]), or mhd / none (only the status is checked).
row_num=0
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >> "$tmp/rows"; }

# api WANT KIND NAME METHOD PATH BODY [curl args...]: one well-formed HTTP request (BODY: text,
# @FILE, or - for none) to the plain server, or to another with HOST=... PORT=... set.
api() {
  local want=$1 kind=$2 name=$3 method=$4 path=$5 body=$6; shift 6
  local out=$tmp/row.$((++row_num)) data=()
  case $body in -) ;; @*) data=(--data-binary "$body") ;; *) printf '%s' "$body" > "$out.in"
    data=(--data-binary @"$out.in") ;; esac
  local got
  got=$(curl -s -o "$out" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
    "${data[@]}" "$@" "http://${HOST:-127.0.0.1}:${PORT:-$port}$path")
  row "$want" "$kind" "$got" "$out" "$name"
}

# raw WANT KIND NAME FILE [raw_http flags]: FILE's bytes as they are. WANT 0: the server closes
# without answering.
raw() {
  local want=$1 kind=$2 name=$3 file=$4; shift 4
  local out=$tmp/row.$((++row_num)) got
  got=$("$raw_http" 127.0.0.1 "$port" --body "$out" --timeout-ms 10000 "$@" < "$file" |
    cut -d' ' -f1)
  row "$want" "$kind" "$got" "$out" "$name"
}

rows_check() {  # one TAP line per row sent since the last call, in order
  node -e '
    const fs = require("fs");
    const judge = (want, kind, got, file) => {
      if (got !== want) return `status ${got}, wanted ${want}`;
      if (kind === "mhd" || kind === "none") return "";
      let text;
      try { text = new TextDecoder("utf-8", {fatal: true}).decode(fs.readFileSync(file)); }
      catch (e) { return "the body is not valid UTF-8"; }
      if (kind === "sse") return text.endsWith("data: [DONE]\n\n") ? "" : "no [DONE] at the end";
      let o;
      try { o = JSON.parse(text); } catch (e) { return "the body is not JSON"; }
      if (kind === "error") {
        const e = o.error;  // code: a string identifier or null (as OpenAI), never the status
        const codes = {401: ["invalid_api_key"], 404: [null, "model_not_found"], other: [null]};
        const good = e && typeof e.message === "string" && e.message && typeof e.type === "string"
          && "param" in e && (e.param === null || typeof e.param === "string") && codes[got === "401" || got === "404" ? got : "other"].includes(e.code);
        return good ? "" : "not an OpenAI error body: " + text.slice(0, 200);
      }
      const good = Array.isArray(o.choices) && o.choices.length === 1 && o.usage;
      return good ? "" : "not a completion: " + text.slice(0, 200);
    };
    for (const line of fs.readFileSync(process.argv[1], "utf8").split("\n")) {
      if (!line) continue;
      const [want, kind, got, file] = line.split("\t");
      console.log(judge(want, kind, got, file).replace(/\n/g, " ") || "ok");
    }' "$tmp/rows" > "$tmp/verdicts"
  local want kind got file name verdict
  while IFS=$'\t' read -r want kind got file name <&3 && read -r verdict <&4; do
    [ "$verdict" = ok ] || echo "# $verdict"
    tap_ok "$want $name" [ "$verdict" = ok ]
  done 3< "$tmp/rows" 4< "$tmp/verdicts"
  : > "$tmp/rows"
}

SLOW_CLIENTS=6
slow_start() {  # raw_http clients that send one byte a second, and one that sends nothing
  local head='POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n'
  printf "$head" 40 > "$tmp/slow.head"
  printf "$head" 400 > "$tmp/body.head"
  for i in $(seq "$SLOW_CLIENTS"); do
    "$raw_http" 127.0.0.1 "$port" --slow-ms 1000 --timeout-ms 30000 < "$tmp/slow.head" \
      > "$tmp/slow.$i" &
    pids+=($!)
  done
  # The body comes slowly: the headers arrive at once, then one byte a second.
  { cat "$tmp/body.head"; printf '{"prompt": "%0366d", "max_tokens": 1}' 0; } > "$tmp/body.req"
  "$raw_http" 127.0.0.1 "$port" --slow-ms 1000 --fast-bytes "$(wc -c < "$tmp/body.head")" \
    --timeout-ms 30000 < "$tmp/body.req" > "$tmp/slow.body" &
  pids+=($!)
  "$raw_http" 127.0.0.1 "$port" --timeout-ms 30000 < /dev/null > "$tmp/slow.idle" &
  pids+=($!)
  slow_pids=("${pids[@]: -$((SLOW_CLIENTS + 2))}")
}

cut_in_time() {  # file: raw_http's line says the server closed it after 9 to 13 s, unanswered
  read -r status _ ms end < "$1"
  [ "$status" = 0 ] && [ "$ms" -ge 9000 ] && [ "$ms" -le 13000 ] &&
    { [ "$end" = closed ] || [ "$end" = reset ]; } || { echo "# $1: $(cat "$1")"; return 1; }
}

slow_check() {
  wait "${slow_pids[@]}"
  local ok=0
  for i in $(seq "$SLOW_CLIENTS"); do cut_in_time "$tmp/slow.$i" && ok=$((ok + 1)); done
  tap_ok "$SLOW_CLIENTS clients sending a request line at 1 byte/s are cut after ~10 s" \
    [ "$ok" = "$SLOW_CLIENTS" ]
  tap_ok "a client sending its body at 1 byte/s is cut after ~10 s" cut_in_time "$tmp/slow.body"
  tap_ok "a client that connects and sends nothing is cut after ~10 s" \
    cut_in_time "$tmp/slow.idle"
  tap_ok "/metrics counts the $((SLOW_CLIENTS + 2)) cut connections" metric_at_least \
    "http://127.0.0.1:$port" gptoss:http_connections_cut_total $((SLOW_CLIENTS + 2))
}

metric() {  # url, name: prints the sample's value
  curl -s "$1/metrics" | sed -n "s/^$2{[^}]*} //p"
}
metric_at_least() { awk -v v="$(metric "$1" "$2")" -v m="$3" 'BEGIN { exit !(v >= m) }'; }
metrics_idle() {
  [ "$(metric "$1" vllm:num_requests_running)" = 0 ] &&
    [ "$(metric "$1" vllm:num_requests_waiting)" = 0 ] &&
    [ "$(metric "$1" vllm:kv_cache_usage_perc)" = 0 ]
}

listens_on() {  # port, address as /proc/net/tcp writes it: a socket listens there on that port
  local hex
  hex=$(printf '%04X' "$1")
  grep -qE "^ *[0-9]+: $2:$hex 00000000:0000 0A" /proc/net/tcp
}

same_ids() {  # two completion answers with return_token_ids: the same ids, and some
  node -e 'const fs = require("fs");
    const ids = f => JSON.stringify(JSON.parse(fs.readFileSync(f)).choices[0].token_ids);
    const [a, b] = process.argv.slice(1).map(ids);
    process.exit(a === b && a.length > 2 ? 0 : 1)' "$1" "$2"
}
