#!/usr/bin/env bash
# bench.sh: the `make bench` driver. Runs each benchmark section (one function per benchmark,
# listed in SECTIONS) against the binaries in BUILD_DIR/bench and prints their figures as
# "<section>.<impl>.<name> value" lines, then each section's verdict. Benchmarks are measurements,
# not tests: a slow result is printed, never turned into a failure (docs/PERF.md keeps the log).
# Exits non-zero only when a benchmark cannot run or gives a wrong answer (e.g. token counts that
# differ from the reference). Owns BUILD_DIR/bench/ data files and build/npm (the npm reference
# packages); it must not write anywhere else.
#
#   scripts/bench.sh BUILD_DIR [SECTION...]
#   BENCH_REPS=N    repetitions per timing (default 5, after one untimed warm-up)
#   BENCH_CPU=N     the CPU every timed process is pinned to (default: the first this process may
#                   use; empty: no pinning). The CPUs of a shared VM can differ in speed by 2x, so
#                   compared runs share one.
#   BENCH_SERVER_CPU=N  the CPU of the server a client benchmark measures against (default: the
#                   first other CPU this process may use; empty: no pinning)
set -euo pipefail
build=${1:?usage: bench.sh BUILD_DIR [SECTION...]}
shift
reps=${BENCH_REPS:-5}
# The CPUs in this process's affinity list ("0-1,4" -> 0 1 4), one a line; none without taskset.
cpu_list() {
  command -v taskset >/dev/null || return 0
  taskset -cp $$ | sed 's/.*: *//' | tr ',' '\n' |
    awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }'
}
cpu=${BENCH_CPU-$(cpu_list | head -n 1)}
server_cpu=${BENCH_SERVER_CPU-$(cpu_list | awk -v c="$cpu" '$1 != c { print; exit }')}
npm_dir=build/npm
SECTIONS=(tokenizer client scheduler engine serving kvcache parallel peer)
status=0

# The command prefix that pins to CPU $1 (nothing when $1 is empty or taskset is missing).
pin_prefix() {
  if [ -n "$1" ] && command -v taskset >/dev/null; then echo "taskset -c $1"; fi
}

# Runs a timed command pinned to $cpu (unpinned when BENCH_CPU is empty or taskset is missing).
pinned() {
  $(pin_prefix "$cpu") "$@"
}

# Value of "name value" line $2 in the text $1.
field() { awk -v k="$2" '$1 == k { print $2; exit }' <<<"$1"; }

# Prints each line of $2 (a benchmark's "name value" output) as "$1.name value".
prefixed() { sed "s/^/$1./" <<<"$2"; }

# Installs an npm package into build/npm when it is missing there.
need_npm() {
  [ -f "$npm_dir/node_modules/$1/package.json" ] && return 0
  command -v npm >/dev/null || { echo "bench: npm not found; install nodejs, npm" >&2; return 1; }
  echo "bench: installing npm package $1 into $npm_dir" >&2
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" "$1" >&2
}

# The median of the numbers on stdin, one a line.
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# Starts `gptoss-engine serve gpt-oss-tiny --device cpu FLAGS...` on a free port, its output in
# LOG: `start_serve LOG FLAGS...` sets serve_pid and serve_port; non-zero when it is not
# listening within 30 s.
start_serve() {
  local log=$1
  shift
  serve_port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => {
                          console.log(s.address().port); s.close(); });')
  "$build/bin/gptoss-engine" serve gpt-oss-tiny --port "$serve_port" --device cpu "$@" \
    > "$log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do grep -q "listening on" "$log" && return 0; sleep 0.1; done
  kill "$serve_pid"
  echo "bench: serve did not start: $(tail -2 "$log")" >&2
  return 1
}

# Each section is a function bench_<name> that prints its figures and returns non-zero when it
# cannot run or its answer is wrong. It runs in an `||` context, where `set -e` does not apply:
# check every step (`|| return 1`).

# ---------------------------------------------------------------------------------------------
# tokenizer: o200k_base encoding throughput, ours vs the npm tiktoken, on the same corpus file.

bench_tokenizer() {
  local corpus="$build/bench/tokenizer-corpus.txt" ours theirs
  [ -x "$build/bench/bench_tokenizer" ] ||
    { echo "bench: $build/bench/bench_tokenizer is not built; run make bench" >&2; return 1; }
  [ -s "$corpus" ] || scripts/bench-corpus.sh "$corpus" || return 1
  need_npm tiktoken || return 1
  echo "== tokenizer: o200k_base encode (ordinary), $reps reps after a warm-up, CPU ${cpu:-any}," \
    "corpus $corpus"
  ours=$(pinned "$build/bench/bench_tokenizer" "$corpus" "$reps") || return 1
  prefixed tokenizer.ours "$ours"
  theirs=$(pinned node scripts/bench-tiktoken.mjs "$corpus" "$reps") || return 1
  prefixed tokenizer.tiktoken "$theirs"
  awk -v a="$(field "$ours" median_mb_s)" -v b="$(field "$theirs" median_mb_s)" \
      -v c="$(field "$ours" best_mb_s)" -v d="$(field "$theirs" best_mb_s)" \
      'BEGIN { printf "tokenizer.ratio_median %.2f\ntokenizer.ratio_best %.2f\n", a / b, c / d }'
  local n_ours n_theirs
  n_ours=$(field "$ours" tokens)
  n_theirs=$(field "$theirs" tokens)
  if [ "$n_ours" = "$n_theirs" ]; then
    echo "tokenizer.tokens_agree yes"
  else
    echo "tokenizer.tokens_agree no"
    echo "bench: tokenizer: token counts differ (ours $n_ours, tiktoken $n_theirs) on $corpus:" \
      "a tokenizer bug" >&2
    return 1
  fi
}

# ---------------------------------------------------------------------------------------------
# client: the load generator's ceiling. `gptoss-bench mock-server` (one HTTP thread, pinned to
# $server_cpu) streams completions on loopback, every token an event with a ": t=<ns>" send
# stamp; tests/bench/bench_client.c (client_run with one event loop, as `bench` runs by default,
# pinned to $cpu) reads them. Three runs: "ceiling", 1000 streams with the server writing as fast
# as it can (no TTFT, no ITL; its stamp lags only say how far ahead the server wrote); "paced",
# one tenth of the 200,000 tokens/s target over the same 1000 streams (20 tokens/s each: ITL
# 50 ms, the sends spread over one ITL so events come evenly), for the receive lag of the stamps;
# "paced100", the same 20,000 tokens/s over 100 streams (ITL 5 ms), which costs the server far
# less. Targets: ceiling >= 200,000 tokens/s, p99 stamp lag < 1 ms when paced. First, "floor":
# tests/bench/bench_wakeup.c sends bare stamps between the same two CPUs at the paced event rate
# (every 50 us over loopback TCP, no HTTP), the lag no client could beat on this machine now.

mock_pid=
mock_url=
client_out=
trap 'stop_mock_server' EXIT  # never leave a mock server behind

# Starts mock-server with the flags $@ on a free port, pinned to $server_cpu; sets mock_pid and
# mock_url (its log: $build/bench/mock-server.log).
start_mock_server() {
  local log="$build/bench/mock-server.log"
  mkdir -p "$build/bench"
  : >"$log"  # emptied here, so that the wait below cannot read the last server's URL
  $(pin_prefix "$server_cpu") "$build/bin/gptoss-bench" mock-server --port 0 --threads 1 "$@" \
    >"$log" 2>&1 &
  mock_pid=$!
  for _ in $(seq 200); do
    mock_url=$(sed -n 's/^mock-server listening on //p' "$log")
    [ -n "$mock_url" ] && return 0
    kill -0 "$mock_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench: mock-server did not start: $(cat "$log")" >&2
  stop_mock_server
  return 1
}

# CPU seconds (user + system) the running mock server has used, from /proc.
mock_cpu_s() {
  awk -v tck="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / tck }' "/proc/$mock_pid/stat"
}

stop_mock_server() {
  [ -n "$mock_pid" ] || return 0
  kill "$mock_pid" 2>/dev/null || true
  wait "$mock_pid" 2>/dev/null || true
  mock_pid=
}

# One client run against a fresh mock server: $1 the run's name, $2 the server's timing flags,
# then bench_client's NUM_STREAMS OUTPUT_LEN SPREAD_MS. Sets client_out to bench_client's lines
# plus the server's CPU seconds and busy fraction of its core (over the client's wall time).
client_run_one() {
  local run=$1 server_s
  local -a flags
  read -ra flags <<<"$2"
  shift 2
  start_mock_server "${flags[@]}" || return 1
  client_out=$(pinned "$build/bench/bench_client" "$mock_url" "$@") ||
    { stop_mock_server; return 1; }
  server_s=$(mock_cpu_s)
  stop_mock_server
  client_out+=$'\n'$(awk -v s="$server_s" -v w="$(field "$client_out" wall_s)" \
    'BEGIN { printf "server_cpu_s %.3f\nserver_cpu_busy %.2f\n", s, s / w }')
  prefixed "client.$run" "$client_out"
}

bench_client() {
  local b tokens_per_s p99_ms p99_100_ms p99_busy_ms
  for b in bench_client bench_wakeup; do
    [ -x "$build/bench/$b" ] ||
      { echo "bench: $build/bench/$b is not built; run make bench" >&2; return 1; }
  done
  echo "== client: streaming completions on loopback, client on CPU ${cpu:-any}," \
    "mock-server on CPU ${server_cpu:-any}"
  client_out=$("$build/bench/bench_wakeup" "${cpu:--1}" "${server_cpu:--1}" 40000 50) || return 1
  prefixed client.floor "$client_out"
  client_run_one ceiling "--ttft-ms 0 --itl-ms 0" 1000 2000 0 || return 1
  tokens_per_s=$(field "$client_out" tokens_per_s)
  client_run_one paced "--ttft-ms 0 --itl-ms 50" 1000 200 50 || return 1
  p99_ms=$(field "$client_out" stamp_lag_p99_ms)
  client_run_one paced100 "--ttft-ms 0 --itl-ms 5" 100 1000 5 || return 1
  p99_100_ms=$(field "$client_out" stamp_lag_p99_ms)
  # The same paced run with the client busy-polling (bench --busy-poll): no OS wake-up in the lag.
  client_run_one paced_busy "--ttft-ms 0 --itl-ms 50" 1000 200 50 busy || return 1
  p99_busy_ms=$(field "$client_out" stamp_lag_p99_ms)
  awk -v t="$tokens_per_s" -v l="$p99_ms" -v m="$p99_100_ms" -v b="$p99_busy_ms" 'BEGIN {
    printf "client.ceiling_target_met %s\n", (t >= 200000 ? "yes" : "no")
    printf "client.paced_lag_target_met %s\n", (l < 1 ? "yes" : "no")
    printf "client.paced100_lag_target_met %s\n", (m < 1 ? "yes" : "no")
    printf "client.paced_busy_lag_target_met %s\n", (b < 1 ? "yes" : "no") }'
}

# ---------------------------------------------------------------------------------------------
# scheduler: the engine's host time per step in steady-state decode (sched_schedule +
# batch_build + sched_update, tests/bench/bench_scheduler.c) at 256 and 1024 running requests,
# synchronous and async scheduling. Target: under 200 us per step at 1024.

bench_scheduler() {
  local out
  [ -x "$build/bench/bench_scheduler" ] ||
    { echo "bench: $build/bench/bench_scheduler is not built; run make bench" >&2; return 1; }
  echo "== scheduler: host time per engine step, steady-state decode, $reps windows after a" \
    "warm-up, CPU ${cpu:-any}"
  out=$(pinned "$build/bench/bench_scheduler" "$reps") || return 1
  prefixed scheduler "$out"
  awk -v s="$(field "$out" sync.n1024.us_per_step_median)" \
      -v a="$(field "$out" async.n1024.us_per_step_median)" \
    'BEGIN { printf "scheduler.target_met %s\n", (s < 200 && a < 200 ? "yes" : "no") }'
}

# ---------------------------------------------------------------------------------------------
# engine: prefill and decode tokens/s of gpt-oss-tiny (dummy weights, q8 dense, MXFP4 experts) at
# batch 1, 8, 32, 64 (128 prompt tokens, 64 generated per sequence) with the CPU backend on every
# CPU (not pinned: the engine uses them all), tests/bench/bench_engine.c, BENCH_ENGINE_RUNS
# (default 3) runs per batch size, the fastest and the median; the achieved GFLOP/s against the
# matrix-product ceiling measured in the same run, and batch 1's decode against its memory
# floor (engine.b1.decode_of_bandwidth_floor: the bytes a token reads over the read bandwidth
# measured in the same run). The comparison with llama.cpp is section peer.

bench_engine() {
  local out
  [ -x "$build/bench/bench_engine" ] ||
    { echo "bench: $build/bench/bench_engine is not built; run make bench" >&2; return 1; }
  echo "== engine: gpt-oss-tiny forward, dummy weights, all CPUs"
  out=$("$build/bench/bench_engine" --runs "${BENCH_ENGINE_RUNS:-3}") || return 1
  prefixed engine "$out"
}

# ---------------------------------------------------------------------------------------------
# serving: the HTTP path against the engine alone on the same work. Engine: bench_engine, 64
# sequences of 128 prompt tokens prefilled and 64 tokens decoded each (its seconds: prefill
# tokens / prefill rate + decode tokens / decode rate). Serving: `gptoss-engine serve` (the same
# weights and formats, every CPU) under `gptoss-bench bench`, 64 requests of 128 prompt tokens
# to /v1/completions (no chat template: the same 8,192 prompt tokens) with --ignore-eos and 64
# output tokens each, all at once; its seconds: the benchmark duration. The client runs on the
# same CPUs, as in any single-machine benchmark. The two alternate BENCH_SERVING_RUNS (default
# 3) times; serving.of_engine = engine seconds / serving seconds, medians (issue target: 0.9).

bench_serving() {
  local runs=${BENCH_SERVING_RUNS:-3} tmp r out e s
  tmp=$(mktemp -d)
  echo "== serving: gpt-oss-tiny, serve under bench vs bench_engine, 64 x (128 in, 64 out)"
  start_serve "$tmp/serve.log" --kv-cache-memory 1GiB --max-num-seqs 64 || return 1
  for r in $(seq "$runs"); do
    out=$("$build/bench/bench_engine" --runs 1 --batches 64 --prompt 128 --gen 64) || break
    awk '$1 == "b64.prefill_tokens" { pt = $2 } $1 == "b64.prefill_tok_s" { pr = $2 }
         $1 == "b64.decode_tokens" { dt = $2 } $1 == "b64.decode_tok_s" { dr = $2 }
         END { printf "%.4f\n", pt / pr + dt / dr }' <<<"$out" >> "$tmp/engine"
    "$build/bin/gptoss-bench" bench --base-url "http://127.0.0.1:$serve_port" \
      --endpoint /v1/completions --endpoint-type openai --dataset-name random \
      --random-input-len 128 --random-output-len 64 --num-prompts 64 --ignore-eos --seed "$r" \
      > "$tmp/bench.$r" 2>&1 || break
    grep -q "^Successful requests: *64" "$tmp/bench.$r" || { cat "$tmp/bench.$r" >&2; break; }
    sed -n 's/^Benchmark duration (s): *//p' "$tmp/bench.$r" >> "$tmp/serve"
  done
  kill "$serve_pid"; wait "$serve_pid" 2> /dev/null
  [ "$(wc -l < "$tmp/serve" 2> /dev/null)" -eq "$runs" ] ||
    { echo "bench: a serving run failed" >&2; return 1; }
  e=$(median < "$tmp/engine")
  s=$(median < "$tmp/serve")
  echo "serving.engine_s_median $e"
  echo "serving.serve_s_median $s"
  awk -v e="$e" -v s="$s" 'BEGIN { printf "serving.of_engine %.3f\n", e / s }'
  rm -rf "$tmp"
}

# ---------------------------------------------------------------------------------------------
# kvcache: the hybrid KV cache (the default) against the plain one
# (--disable-hybrid-kv-cache-manager) at equal bytes. gpt-oss-tiny (4 layers, window 128) is
# served with a 32 MiB KV cache (float32: 8,192 tokens in plain 4-layer blocks, 16,384 slots in
# hybrid 2-layer ones) and gets 32 requests of 1,024 prompt tokens and 256 output tokens at once
# (/v1/completions, --ignore-eos): the plain cache holds 6 of them at a time, the hybrid one
# about 11 once their prompts are in. The two servers alternate BENCH_KV_RUNS (default 3) times:
# kvcache.<cache>.s_median (benchmark duration), .preemptions (per run, vllm:num_preemptions),
# .output_tok_s_median, and kvcache.speedup = plain s / hybrid s.

bench_kvcache() {
  local runs=${BENCH_KV_RUNS:-3} tmp r cache after
  tmp=$(mktemp -d)
  echo "== kvcache: gpt-oss-tiny, 32 MiB of KV, 32 x (1024 in, 256 out), hybrid vs plain"
  for r in $(seq "$runs"); do
    for cache in hybrid plain; do
      local flags=(--kv-cache-memory 32MiB --max-num-seqs 32)
      [ "$cache" = plain ] && flags+=(--disable-hybrid-kv-cache-manager)
      start_serve "$tmp/serve.$cache.log" "${flags[@]}" || return 1
      "$build/bin/gptoss-bench" bench --base-url "http://127.0.0.1:$serve_port" \
        --endpoint /v1/completions --endpoint-type openai --dataset-name random \
        --random-input-len 1024 --random-output-len 256 --num-prompts 32 --ignore-eos \
        --seed "$r" > "$tmp/bench.$cache.$r" 2>&1
      after=$(curl -s "http://127.0.0.1:$serve_port/metrics" |
        sed -n 's/^vllm:num_preemptions_total{[^}]*} //p' | head -1)
      kill "$serve_pid"; wait "$serve_pid" 2> /dev/null
      grep -q "^Successful requests: *32" "$tmp/bench.$cache.$r" ||
        { cat "$tmp/bench.$cache.$r" >&2; return 1; }
      sed -n 's/^Benchmark duration (s): *//p' "$tmp/bench.$cache.$r" >> "$tmp/$cache.s"
      sed -n 's/^Output token throughput (tok\/s): *//p' "$tmp/bench.$cache.$r" >> "$tmp/$cache.tok"
      echo "${after%.*}" >> "$tmp/$cache.preemptions"
    done
  done
  for cache in hybrid plain; do
    echo "kvcache.$cache.s_median $(median < "$tmp/$cache.s")"
    echo "kvcache.$cache.output_tok_s_median $(median < "$tmp/$cache.tok")"
    echo "kvcache.$cache.preemptions $(paste -sd, "$tmp/$cache.preemptions")"
    grep -m1 "kv-cache-memory" "$tmp/serve.$cache.log" | sed "s/^ */# $cache: /"
  done
  awk -v h="$(median < "$tmp/hybrid.s")" -v p="$(median < "$tmp/plain.s")" \
    'BEGIN { printf "kvcache.speedup %.3f\n", p / h }'
  rm -rf "$tmp"
}

# ---------------------------------------------------------------------------------------------
# peer: our engine against llama.cpp on the same weights, same machine, same run. The weights:
# gpt-oss-tiny's dummy weights (seed 0), which bench_engine generates and
# build/peers/models/gpt-oss-tiny-<dense>.gguf holds (scripts/peers.sh makes them; llama.cpp is
# built by scripts/peer-llamacpp.sh, ~10 minutes the first time). The shape: B = 1, 8, 32, 64
# sequences of 128 prompt tokens, 64 generated each, every CPU (the same thread count). Ours:
# bench_engine (q8 unembedding, bf16 other dense, MXFP4 experts); llama.cpp: llama-batched-bench
# on the Q8_0-dense GGUF (MXFP4 experts), weight repacking on (its default; -nr when
# BENCH_PEER_NO_REPACK=1). The two programs alternate, BENCH_PEER_RUNS (default 3) times each;
# medians are compared: peer.ratio.bB.{prefill,decode} = ours / llama.cpp.

bench_peer() {
  local env_out ours theirs out b r runs=${BENCH_PEER_RUNS:-3} threads gguf
  env_out=$(scripts/peer-llamacpp.sh build/peers) || return 1
  eval "$env_out"
  gguf=build/peers/models/gpt-oss-tiny-q8_0.gguf
  [ -s "$gguf" ] || { echo "bench: $gguf is missing: run make peers first" >&2; return 1; }
  threads=$(nproc)
  local repack=()
  [ "${BENCH_PEER_NO_REPACK:-0}" = 1 ] && repack=(-nr)
  echo "== peer: gpt-oss-tiny, ours (bench_engine) vs llama.cpp $LLAMACPP_COMMIT (llama-batched-bench, Q8_0 dense), $threads threads"
  echo "peer.cpu $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | tr ' ' '_')"
  echo "peer.llamacpp.repack $([ ${#repack[@]} -eq 0 ] && echo on || echo off)"
  local tmp
  tmp=$(mktemp -d)
  for r in $(seq "$runs"); do
    "$build/bench/bench_engine" --runs 1 --threads "$threads" > "$tmp/ours.$r" || return 1
    "$LLAMACPP_BIN/llama-batched-bench" -m "$gguf" -c 16384 -b 2048 -ub 512 -npp 128 -ntg 64 \
      -npl 1,8,32,64 -t "$threads" "${repack[@]}" --output-format jsonl 2> /dev/null |
      grep '^{' > "$tmp/theirs.$r" || return 1
  done
  for b in 1 8 32 64; do
    ours=$(for r in $(seq "$runs"); do
      out=$(cat "$tmp/ours.$r")
      echo "$(field "$out" "b$b.prefill_tok_s") $(field "$out" "b$b.decode_tok_s")"
    done)
    theirs=$(for r in $(seq "$runs"); do
      node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n"))
                 if (l) { const o = JSON.parse(l); if (o.pl == process.argv[2]) console.log(o.speed_pp, o.speed_tg); }' \
        "$tmp/theirs.$r" "$b"
    done)
    paste <(echo "$ours") <(echo "$theirs") | awk -v b="$b" '
      function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
          if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
      { op[NR] = $1; od[NR] = $2; tp[NR] = $3; td[NR] = $4 }
      END { p = median(op, NR); d = median(od, NR); lp = median(tp, NR); ld = median(td, NR)
        printf "peer.ours.b%d.prefill_tok_s %.1f\npeer.ours.b%d.decode_tok_s %.1f\n", b, p, b, d
        printf "peer.llamacpp.b%d.prefill_tok_s %.1f\npeer.llamacpp.b%d.decode_tok_s %.1f\n", b, lp, b, ld
        printf "peer.ratio.b%d.prefill %.2f\npeer.ratio.b%d.decode %.2f\n", b, p / lp, b, d / ld }'
  done
  rm -rf "$tmp"
}

# ---------------------------------------------------------------------------------------------
# parallel: serving throughput of gpt-oss-tiny (dummy weights, q8) under -tp 1, -tp 2 and -pp 2
# on every CPU (each of the ranks gets cores / ranks threads), tests/bench/bench_parallel.c: 64
# requests of 128 prompt tokens generating 32, submitted at once; total tokens/s and per rank (the
# study's per-GPU form), and each split's ratio to one rank in the same run.

bench_parallel() {
  local out
  [ -x "$build/bench/bench_parallel" ] ||
    { echo "bench: $build/bench/bench_parallel is not built; run make bench" >&2; return 1; }
  echo "== parallel: gpt-oss-tiny serving, dummy weights, all CPUs, tp 1 vs tp 2 vs pp 2"
  out=$("$build/bench/bench_parallel" --splits 1x1,2x1,1x2) || return 1
  prefixed parallel "$out"
}

# ---------------------------------------------------------------------------------------------

if [ $# -gt 0 ]; then SECTIONS=("$@"); fi
for s in "${SECTIONS[@]}"; do
  if ! declare -F "bench_$s" >/dev/null; then
    echo "bench: no benchmark section '$s'" >&2
    status=1
    continue
  fi
  "bench_$s" || { echo "bench: section $s failed" >&2; status=1; }
done
exit "$status"
