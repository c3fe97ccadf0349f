#!/usr/bin/env bash
# engine_prefix_cache.sh: automatic prefix caching through the real `gptoss-engine serve` on
# gpt-oss-tiny (dummy weights) over HTTP. A shared-prefix chat workload (one long developer
# message, different user questions, all at once, then every question again, plus repeats) gives
# the same greedy ids (return_token_ids, temperature 0, ignore_eos) with caching on as with
# --no-enable-prefix-caching, in sync and async scheduling and with -tp 2, with a KV cache
# small enough to force preemptions (which ends with every block free), and with the plain KV
# cache instead of the hybrid one (the default; the start-up log says which). Token-id prompts sent
# one after another hit exactly what block arithmetic says (block size 16), in the shutdown log
# (and on /metrics when it carries vllm:prefix_cache_*). The start-up log says whether caching
# is on. Usage: engine_prefix_cache.sh BUILD_DIR (prints TAP).
set -u
engine="${1:?usage: engine_prefix_cache.sh BUILD_DIR}/bin/gptoss-engine"
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$engine" ] || { echo "Bail out! $engine is not built"; exit 1; }

MAX_TOKENS=24

start_server() {  # flags...; sets $url, $server_pid and $log
  log=$tmp/serve.$RANDOM.log
  "$engine" serve gpt-oss-tiny --weight-format f32 --port 0 --kv-cache-memory 64MiB "$@" \
    > "$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  url=$(wait_for_output "$log" 's/^gptoss-engine serve: listening on //p' 600) && return 0
  echo "# serve did not start: $(tail -3 "$log")"
  return 1
}

stop_server() {  # SIGTERM, then the status must be 0
  kill -TERM "$server_pid"
  wait "$server_pid"
}

metric() {  # name: its value on /metrics (empty when absent)
  curl -s "$url/metrics" | sed -n "s/^$1\(_total\)\?{[^}]*} //p" | head -1
}

# The shared-prefix chat workload: wave 1 sends every question at once plus repeats of the
# first four, wave 2 every question again. Prints JSON [[question, ids, prompt tokens], ...] in
# request order.
run_chats() {
  node - "$url" $MAX_TOKENS <<'JS'
const [url, maxTokens] = process.argv.slice(2);
const developer = ("You are the arithmetic tutor of a small school. " +
  "Answer every question about numbers with care: restate the question, work through each " +
  "step of the calculation on its own line, check the result a second way, and end with one " +
  "short sentence that gives the answer. Never skip a step, never guess, and say so plainly " +
  "when a question is not about arithmetic. Keep a friendly tone, use plain words, and avoid " +
  "jargon that a ten-year-old would not know. ").repeat(2);
const question = i => `Question ${i}: what is ${i * 7} plus ${i + 3}, and is it even?`;
async function one(q) {
  const res = await fetch(url + "/v1/chat/completions", {method: "POST", body: JSON.stringify({
    model: "gpt-oss-tiny", messages: [{role: "developer", content: developer},
                                      {role: "user", content: question(q)}],
    max_tokens: +maxTokens, temperature: 0, ignore_eos: true, return_token_ids: true})});
  const body = await res.json();
  return body.choices ? [q, body.choices[0].token_ids, body.usage.prompt_tokens] : [q, body, 0];
}
const wave = qs => Promise.all(qs.map(one));
const all = [...Array(12).keys()];
(async () => {
  const out = [...await wave([...all, 0, 1, 2, 3]), ...await wave(all)];
  console.log(JSON.stringify(out));
})().catch(e => console.log(JSON.stringify("error " + e)));
JS
}

# Every answer of run $1 has ids, each question's answers agree, and they equal the reference.
same_as_reference() {  # file
  node - "$tmp/ref.json" "$1" <<'JS'
const fs = require("fs");
const [ref, got] = process.argv.slice(2).map(f => JSON.parse(fs.readFileSync(f, "utf8")));
const want = {};
for (const [q, ids] of ref) if (Array.isArray(ids)) want[q] = JSON.stringify(ids);
const bad = got.filter(([q, ids]) => !Array.isArray(ids) || ids.length !== 24 ||
                                     JSON.stringify(ids) !== want[q]);
if (bad.length) console.error(`# ${bad.length} answers differ, first: ${JSON.stringify(bad[0])}`);
process.exit(Array.isArray(got) && got.length === 28 && bad.length === 0 ? 0 : 1);
JS
}

reference_consistent() {  # the reference's repeats agree among themselves
  node -e '
const got = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const seen = {};
for (const [q, ids] of got) {
  if (!Array.isArray(ids) || ids.length !== 24) process.exit(1);
  if (seen[q] && seen[q] !== JSON.stringify(ids)) process.exit(1);
  seen[q] = JSON.stringify(ids);
}' "$tmp/ref.json"
}

shutdown_hits() {  # "QUERIES HITS" from the shutdown log
  local n='\([0-9]*\)'
  sed -n "s/^gptoss-engine serve: prefix cache: $n queries, $n hits.*/\\1 \\2/p" "$log"
}

# Requests admitted in the same step cannot hit each other (a block is cached once its KV is
# written), so how much of wave 1 hits depends on timing; but wave 2 repeats every question of
# wave 1, whose KV is all written by then: each of its prompts of P tokens hits all its full
# blocks but the one holding its last token, 16 * floor((P - 1) / 16) tokens, unless a small
# cache evicted them. Checks wave 2's sum <= hits < queries (with a small cache: 0 < hits).
enough_hits() {  # answers file, queries, hits, small (1: a small cache)
  node -e '
const [file, queries, hits, small] = process.argv.slice(1);
const got = JSON.parse(require("fs").readFileSync(file, "utf8"));
const wave2 = got.slice(16).reduce((n, [q, ids, p]) => n + 16 * Math.floor((p - 1) / 16), 0);
console.log(`# wave 2 alone hits ${wave2} tokens`);
process.exit(+hits < +queries && +hits >= (small === "1" ? 1 : wave2) && wave2 > 0 ? 0 : 1);
' "$@"
}

# The reference: caching off.
if start_server --no-enable-prefix-caching; then
  tap_ok "--no-enable-prefix-caching: the start-up log says prefix caching off" \
    grep -q "prefix caching off" "$log"
  run_chats > "$tmp/ref.json"
  tap_ok "caching off: 28 answers of $MAX_TOKENS ids, repeats identical" reference_consistent
  stop_server
  tap_ok "caching off: SIGTERM stops the server with status 0" [ $? -eq 0 ]
  tap_ok "caching off: the shutdown log says so" grep -q "prefix cache: off" "$log"
else
  echo "Bail out! the reference server did not start"
  exit 1
fi

# Caching on (the default), sync, async, -tp 2, a KV cache of 80 blocks (2.5 MiB of 32 KiB
# hybrid blocks), and the plain KV cache (--disable-hybrid-kv-cache-manager, async): the shared
# developer prefix is most of each prompt, so most prefill is hits.
for mode in sync async "tp 2" "small kv" "plain kv"; do
  flags=()
  case $mode in
    async) flags=(--async-scheduling) ;;
    "tp 2") flags=(-tp 2) ;;
    "small kv") flags=(--kv-cache-memory 2560KiB --max-num-seqs 16) ;;
    "plain kv") flags=(--disable-hybrid-kv-cache-manager --async-scheduling) ;;
  esac
  if ! start_server "${flags[@]}"; then
    tap_ok "$mode: the server starts" false
    continue
  fi
  [ "$mode" = sync ] && tap_ok "default: the start-up log says prefix caching on" \
    grep -q "prefix caching on" "$log"
  [ "$mode" = sync ] && tap_ok "default: the start-up log says the KV cache is hybrid" \
    grep -q "blocks, hybrid (the sliding layers keep their last 128 positions)" "$log"
  [ "$mode" = "plain kv" ] && tap_ok "plain kv: the start-up log does not say hybrid" \
    bash -c "grep -q 'blocks = [0-9]* tokens of KV capacity' '$log' && ! grep -q hybrid '$log'"
  run_chats > "$tmp/$mode.json"
  tap_ok "$mode, caching on: the same greedy ids as caching off" same_as_reference "$tmp/$mode.json"
  if [ "$mode" = "small kv" ]; then
    preemptions=$(metric vllm:num_preemptions)
    tap_ok "small kv: the workload was preempted ($preemptions preemptions)" \
      [ "${preemptions:-0}" -gt 0 ]
    usage=$(metric vllm:kv_cache_usage_perc)
    tap_ok "small kv: afterwards vllm:kv_cache_usage_perc is 0 (got $usage)" [ "$usage" = 0 ]
  fi
  stop_server
  tap_ok "$mode: SIGTERM stops the server with status 0" [ $? -eq 0 ]
  read -r queries hits <<< "$(shutdown_hits)"
  echo "# $mode: prefix cache $queries queries, $hits hits"
  small=0
  [ "$mode" = "small kv" ] && small=1
  tap_ok "$mode: the shutdown log reports hits (${hits:-none} of ${queries:-none} tokens)" \
    enough_hits "$tmp/$mode.json" "${queries:-0}" "${hits:-0}" $small
  tap_ok "$mode: the shutdown log: no KV block in use at stop" \
    grep -q "KV blocks in use at stop: 0 of" "$log"
done

# Hit arithmetic, block size 16: token-id prompts one after another. a and b share 40 tokens.
if start_server; then
  node - "$url" > "$tmp/seq.json" <<'JS'
const url = process.argv[2];
const range = (n, f) => [...Array(n).keys()].map(f);
const a = range(64, i => i < 40 ? 5000 + i : 7000 + i);
const b = range(64, i => i < 40 ? 5000 + i : 8000 + i);
const other = range(64, i => 9000 + i);
// prompt, its hits: a's prefill and 5 decodes write 55 tokens of KV, 3 full blocks
const seq = [[a.slice(0, 50), 0], [b.slice(0, 45), 32], [other.slice(0, 20), 0],
             [a.slice(0, 50), 48], [a.slice(0, 48), 32], [other.slice(0, 20), 16]];
(async () => {
  const usage = [];
  for (const [prompt] of seq) {
    const res = await fetch(url + "/v1/completions", {method: "POST", body: JSON.stringify({
      model: "gpt-oss-tiny", prompt, max_tokens: 6, temperature: 0, ignore_eos: true})});
    usage.push((await res.json()).usage.prompt_tokens);
  }
  console.log(JSON.stringify({usage, want_usage: seq.map(s => s[0].length),
    queries: seq.reduce((n, s) => n + s[0].length, 0), hits: seq.reduce((n, s) => n + s[1], 0)}));
})().catch(e => console.log(JSON.stringify({error: String(e)})));
JS
  want_queries=$(jget "$tmp/seq.json" o.queries)
  want_hits=$(jget "$tmp/seq.json" o.hits)
  tap_ok "sequential: every prompt counted as sent" \
    [ "$(jget "$tmp/seq.json" 'JSON.stringify(o.usage)')" = \
      "$(jget "$tmp/seq.json" 'JSON.stringify(o.want_usage)')" ]
  metric_hits=$(metric vllm:prefix_cache_hits)
  if [ -n "$metric_hits" ]; then
    tap_ok "sequential: /metrics prefix_cache_hits $metric_hits = $want_hits" \
      [ "${metric_hits%.*}" = "$want_hits" ]
    metric_queries=$(metric vllm:prefix_cache_queries)
    tap_ok "sequential: /metrics prefix_cache_queries $metric_queries = $want_queries" \
      [ "${metric_queries%.*}" = "$want_queries" ]
  else
    echo "# skipped: /metrics has no vllm:prefix_cache_hits yet (the shutdown log is checked)"
  fi
  stop_server
  read -r queries hits <<< "$(shutdown_hits)"
  tap_ok "sequential: the shutdown log's hits $hits of $queries = $want_hits of $want_queries" \
    [ "$queries $hits" = "$want_queries $want_hits" ]
else
  tap_ok "sequential: the server starts" false
fi
tap_done
