#!/usr/bin/env bash
# memcheck.sh: `make memcheck`. Runs the real binaries end to end under valgrind memcheck and
# fails on any memory error or definite leak (--errors-for-leak-kinds=definite): the engine's
# `generate` on gpt-oss-tiny (dummy weights, a harmony chat prompt, two threads); `bench`
# against `mock-server` (completions and chat, detailed results, injected errors, cut streams),
# both under valgrind; and a small sweep (tests/fixtures/sweep/memcheck.ini) with its children
# traced (mock-server engines; the built-in engine runs natively, git/gnuplot/sh are skipped);
# and the engine's `serve` with one thread: a chat stream, a completion, a malformed body.
# One valgrind log per process in OUT (default BUILD/memcheck); prints one line per step.
# Usage: memcheck.sh BUILD_DIR [OUT]. 5-8 minutes on 2 cores (loading gpt-oss-tiny's dummy
# weights takes about 40 s under valgrind, and each engine step several seconds).
set -uo pipefail
build="${1:?usage: memcheck.sh BUILD_DIR [OUT]}"
out="${2:-$build/memcheck}"
bin_dir=$(cd "$build/bin" && pwd)
command -v valgrind > /dev/null ||
  { echo "memcheck: valgrind is missing: apt-get install valgrind (or scripts/deps.sh memcheck)" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"
export PATH="$bin_dir:$PATH"  # the sweep file's mock-server command names gptoss-bench
vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 --num-callers=30)
pids=()
trap 'kill "${pids[@]}" 2> /dev/null; wait 2> /dev/null' EXIT
. tests/e2e/tap.bash  # wait_for_output
failed=0
step_start=$SECONDS

# check NAME RC: the step's logs (NAME.*.log) say each traced process ran to its end (an ERROR
# SUMMARY line) with 0 errors; definite leaks count as errors. A log of only valgrind's 6-line
# header is a fork that exec'd a program left untraced (--trace-children-skip): not counted.
check() {
  local name=$1 rc=$2 procs=0 finished=0 errs=0 leaked=0 f n
  for f in "$out/$name".*.log; do
    [ -f "$f" ] || continue
    grep -q 'ERROR SUMMARY' "$f" || [ "$(wc -l < "$f")" -gt 6 ] || continue
    procs=$((procs + 1))
    grep -q 'ERROR SUMMARY' "$f" && finished=$((finished + 1))
    n=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f")
    errs=$((errs + ${n:-0}))
    n=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tr -d ,)
    leaked=$((leaked + ${n:-0}))
  done
  if [ "$rc" -eq 0 ] && [ "$errs" -eq 0 ] && [ "$procs" -gt 0 ] && [ "$finished" -eq "$procs" ]; then
    echo "memcheck: $name: ok ($procs process(es), 0 errors, 0 bytes definitely lost," \
         "$((SECONDS - step_start)) s)"
  else
    echo "memcheck: $name: FAILED (exit $rc, $procs process(es), $finished finished, $errs errors," \
         "$leaked bytes definitely lost): see $out/$name.*.log"
    failed=$((failed + 1))
  fi
  step_start=$SECONDS
}

# 1. The engine, offline.
"${vg[@]}" --log-file="$out/generate.%p.log" "$bin_dir/gptoss-engine" generate --model gpt-oss-tiny \
  --load-format dummy --device cpu --chat 'What is 2 + 2?' --max-tokens 2 --threads 2 \
  > "$out/generate.json"
check generate $?

# 2. The load generator against the mock server, both under valgrind.
start_mock() {  # log prefix, flags...: starts it, sets $url
  local log=$out/$1.out; shift
  "${vg[@]}" --log-file="$out/mock-server.%p.log" "$bin_dir/gptoss-bench" mock-server --port 0 \
    --threads 2 "$@" > "$log" 2>&1 &
  pids+=($!)
  mock_pid=$!
  url=$(wait_for_output "$log" 's/^mock-server listening on //p' 300)
}
bench() {  # flags...
  "${vg[@]}" --log-file="$out/bench.%p.log" "$bin_dir/gptoss-bench" bench --base-url "$url" \
    --num-prompts 24 --random-input-len 32 --random-output-len 8 --max-concurrency 8 "$@" \
    > /dev/null 2>> "$out/bench.err"
}
rc=0
start_mock mock1 --ttft-ms 5 --itl-ms 1 --error-rate 0.2 || rc=1
bench --save-result --save-detailed --result-dir "$out/results" --num-client-threads 2 || rc=1
bench --endpoint-type openai-chat --endpoint /v1/chat/completions --num-warmups 2 || rc=1
kill -INT "$mock_pid"; wait "$mock_pid" || rc=1
start_mock mock2 --ttft-ms 5 --itl-ms 1 --cut-after 3 || rc=1
bench --request-rate 200 --ready-check-timeout-sec 0 || rc=1  # every stream is cut: no ready check
kill -INT "$mock_pid"; wait "$mock_pid" || rc=1
check bench $rc
check mock-server $rc

# 3. A sweep: the harness and its mock-server engine under valgrind, the built-in engine native.
"${vg[@]}" --log-file="$out/sweep.%p.log" --trace-children=yes \
  --trace-children-skip='*/gptoss-engine,*/sh,*/git,*/gnuplot,*nvidia-smi' \
  "$bin_dir/gptoss-bench" sweep tests/fixtures/sweep/memcheck.ini --results-dir "$out/runs" \
  > "$out/sweep.out" 2> "$out/sweep.err"
rc=$?
run=$(ls -d "$out"/runs/memcheck-*Z 2> /dev/null | head -1)
grep -q '"status": "ok"' "$run/manifest.json" 2> /dev/null || rc=1  # the base engine ran
check sweep $rc

# 4. The engine's server: one thread (its pool would spin under valgrind, which runs one thread
# at a time), a chat stream, a completion, a malformed body, /metrics, then SIGTERM.
"${vg[@]}" --log-file="$out/serve.%p.log" "$bin_dir/gptoss-engine" serve gpt-oss-tiny \
  --load-format dummy --device cpu --port 0 --threads 1 --kv-cache-memory 32MiB \
  --max-num-seqs 4 > "$out/serve.out" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")
url=
for _ in $(seq 1200); do  # loading the weights takes about 40 s under valgrind
  url=$(sed -n 's/^gptoss-engine serve: listening on //p' "$out/serve.out")
  [ -n "$url" ] || ! kill -0 "$serve_pid" 2> /dev/null && break
  sleep 0.5
done
rc=0
[ -n "$url" ] || rc=1
"$bin_dir/gptoss-bench" bench --base-url "$url" --endpoint-type openai-chat \
  --endpoint /v1/chat/completions --num-prompts 1 --random-input-len 8 --random-output-len 2 \
  --ignore-eos > "$out/serve-bench.out" 2>&1 || rc=1
"$bin_dir/gptoss-bench" bench --base-url "$url" --num-prompts 1 --random-input-len 8 \
  --random-output-len 2 --ready-check-timeout-sec 0 >> "$out/serve-bench.out" 2>&1 || rc=1
[ "$(grep -c '^Successful requests: *1 *$' "$out/serve-bench.out")" -eq 2 ] || rc=1
answers() {  # path, body ('' for a GET), text the answer must hold
  node -e 'const [url, body, want] = process.argv.slice(1);
           fetch(url, body ? {method: "POST", body} : {}).then(r => r.text())
             .then(t => process.exit(t.includes(want) ? 0 : 1), () => process.exit(1))' \
    "$url$1" "$2" "$3"
}
answers /v1/chat/completions '{bad' BadRequestError || rc=1
answers /metrics '' vllm:num_requests_running || rc=1
kill -TERM "$serve_pid"; wait "$serve_pid" || rc=1
check serve $rc

echo "memcheck: $((5 - failed)) passed, $failed failed (logs in $out)"
[ "$failed" -eq 0 ]
