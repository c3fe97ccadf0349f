#!/usr/bin/env bash
# gpu-check.sh: the one-shot GPU acceptance check of issue 8 (the CUDA backend), for a machine
# with an H100/H200, in two stages (issue 19: the GPU machine has no network, so nothing is built
# there). `scripts/gpu-check.sh OUTDIR` on a machine that can build does both: stage 1,
# scripts/gpu-stage.sh OUTDIR/stage (build and pack the binaries, libraries and fixtures), then
# stage 2, OUTDIR/stage/run.sh OUTDIR, which runs this script's steps from the staged folder.
# For a bare GPU machine: `scripts/gpu-stage.sh DIR` here, carry DIR, `DIR/run.sh OUT` there.
# This file owns the steps; run.sh sets GPU_CHECK_BIN (the binaries' folder, whose parent holds
# tests/fixtures and datasets) and the libraries. Steps, each logged to OUTDIR/<step>.log, each
# gated on the one before (a failure skips the rest), then one summary table:
#   1 device     nvidia-smi -L (GPU_RUN_DEVICE=cpu: skipped, and so are ops, kernels and serve)
#   2 ops        test_cuda_ops: every op against its CPU twin, errors printed
#   3 golden     `gptoss-engine generate --device cuda` on tests/fixtures/gptoss-tiny/{a,b}:
#                prompt logits against logits.npy and greedy ids against golden.json, as
#                tests/e2e/engine_generate.sh does for the CPU: f32 weights as tightly as the
#                CPU (1e-4), bf16 weights within 5e-2 (section 3 below says why); then on
#                ranks, one a GPU (NCCL), as many as there are: -tp 2 and -pp 2 from 2
#                GPUs, -tp 2 -pp 2 from 4
#   4 sampling   `gptoss-engine serve gpt-oss-tiny --load-format dummy --device cuda
#                --max-num-seqs 1` (one request at a time: see the step): 32 greedy random 64/48
#                completions sampled on the device, then again with GPTOSS_HOST_SAMPLING=1
#                (every row on the host): the texts (none empty) must be the same; and 32
#                seeded ones at temperature 1, top-k 50, top-p 0.9: at least 9 in 10 the same
#                (sampling-top); and, on two more fresh servers, 32 greedy random 320/48 ones
#                (past the 128-token window) with the hybrid KV cache (the default) and with
#                --disable-hybrid-kv-cache-manager: the same texts (kv-hybrid); and the
#                greedy 64/48 ones again with --enforce-eager: the same texts as with the
#                decode steps' CUDA graphs (the default), and the server's shutdown line says
#                graphs ran steps (graphs: one sequence a step, so only the graph of size 1);
#                and both again at --max-num-seqs 24, all 32 sent at once (graphs of 1, 2, 4,
#                8, 16 and 24: steps of 3, 5-7, 9-15 and 17-23 sequences padded): at least 3 in
#                4 the same, as padding changes a product's row count, else WARN, which gates
#                nothing (graphs-batched)
#   5 kernels    bench_cuda_kernels: MoE and attention GB/s and TFLOP/s against
#                the measured copy bandwidth and cuBLAS bf16 rate; then, where the stage has a
#                baseline (gpu-stage.sh's GPU_STAGE_BASELINE), its bench_cuda_kernels
#                (kernels-baseline.log) and the two tables side by side (kernels-ab.txt)
#   5a decode    bench_cuda_decode: a whole decode step of GPU_CHECK_DECODE_MODEL
#                (openai/gpt-oss-20b) at batches of 1 to 256, op by op and by its CUDA graph:
#                ms per step of each and the graph's speed-up (decode.log)
#   5b ncu       only when GPU_CHECK_STEPS names it: Nsight Compute's full set (clocks left
#                alone) on GPU_CHECK_NCU_COUNT (2) launches of the kernels matching the regex
#                GPU_CHECK_NCU_KERNEL (mxfp4) in `bench_cuda_kernels 1 GPU_CHECK_NCU_SHAPE`
#                (moe.gpt-oss-120b.e128.t1024: its figures alone), the text report in ncu.log;
#                "n/a" (not a failure) where the machine has no ncu or it profiles nothing
#                (counters refused); FAIL when the benchmark fails under it
#   6 serve      `gptoss-engine serve openai/gpt-oss-20b --load-format dummy --device cuda` in
#                each of GPU_CHECK_SERVE_MODES (sync: the defaults, a bf16 KV cache; async:
#                --async-scheduling; kv-f32: --kv-cache-dtype float32, the cache bf16 halves;
#                moe-wide32: GPTOSS_CUDA_MOE_KERNEL=wide32, the wide MoE kernel on decode items;
#                moe-no-cublas: GPTOSS_CUDA_MOE_CUBLAS_ROWS=0, prefill MoE calls on the wide
#                kernel instead of the cuBLAS path;
#                plain-kv: --disable-hybrid-kv-cache-manager, for what the hybrid cache gives;
#                eager: --enforce-eager, for what the decode steps' CUDA graphs give;
#                host-sampling: GPTOSS_HOST_SAMPLING=1, for what device sampling saves;
#                top-p: the defaults, the bench asking for temperature 1, top-k 50, top-p 0.9
#                and 5 logprobs a token (the device's top-k / top-p and logprobs rows);
#                profile: GPTOSS_CUDA_PROFILE=1, the device time per op in serve-profile.log;
#                baseline: the defaults with the staged baseline's engine), each
#                measured by `gptoss-bench bench` on each of GPU_CHECK_WORKLOADS: random
#                2000/100 (random) and datasets/sharegpt-synth.json (sharegpt), 200 prompts each;
#                and, where the decode graphs were on, how many steps ran by one (graphs-<mode>,
#                "info": the server's shutdown line)
# Stays within GPU_CHECK_BUDGET_S seconds (default 470; run.sh: 420): a step that would start
# past it is recorded as "skipped (time)", one cut off by it as "partial (time)" with what it
# had. Exits 0 when every step that ran passed.
#
#   scripts/gpu-check.sh OUTDIR
#   env: GPU_CHECK_BIN (set by run.sh), GPU_RUN_DEVICE (cuda; cpu), GPU_CHECK_BUDGET_S (470),
#        GPU_CHECK_PROMPTS (200), GPU_CHECK_SERVE_ARGS (extra `serve` flags),
#        GPU_CHECK_SERVE_MODES ("sync async host-sampling"), GPU_CHECK_SERVE_MODEL
#        (openai/gpt-oss-20b), GPU_CHECK_WORKLOADS ("random sharegpt"), GPU_CHECK_BENCH_S (150:
#        the most seconds one `gptoss-bench bench` run may take), GPU_CHECK_STEPS ("device ops
#        golden sampling kernels decode serve": run only these; add ncu for the profiler),
#        GPU_CHECK_DECODE_MODEL (step 5a), GPU_CHECK_NCU_KERNEL, GPU_CHECK_NCU_SHAPE,
#        GPU_CHECK_NCU_COUNT (step 5b), GPU_CHECK_KEEP_GOING (1: a failed step does not skip the
#        steps after it, e.g. to serve with GPTOSS_CUDA_MOE_KERNEL=tile when a new kernel's op
#        test fails; the exit status still says it failed), and gpu-stage.sh's BUILD_ROOT, CUDA
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "${GPU_CHECK_BIN:-}" ]; then  # both stages, here
  "$(dirname "$0")/gpu-stage.sh" "$out/stage" || exit 1
  exec "$out/stage/run.sh" "$out"
fi
bin=$(cd "$GPU_CHECK_BIN" && pwd) || exit 1
cd "$bin/.." || exit 1
device=${GPU_RUN_DEVICE:-cuda}
budget=${GPU_CHECK_BUDGET_S:-470}
prompts=${GPU_CHECK_PROMPTS:-200}
steps=${GPU_CHECK_STEPS:-device ops golden sampling kernels decode serve}
serve_modes=${GPU_CHECK_SERVE_MODES:-sync async host-sampling}
serve_model=${GPU_CHECK_SERVE_MODEL:-openai/gpt-oss-20b}
workloads=" ${GPU_CHECK_WORKLOADS:-random sharegpt} "
start=$(date +%s)
summary=()
failed=0
blocked=
pids=()
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

elapsed() { echo $(( $(date +%s) - start )); }
# Seconds left, at most $1: the timeout of a step.
left() { local l=$(( budget - $(elapsed) )); [ "$l" -gt "$1" ] && l=$1; echo "$l"; }
record() {  # step, result (PASS/FAIL/WARN/...), detail, "soft": a FAIL that gates nothing
  summary+=("$(printf '%-26s %-14s %s' "$1" "$2" "$3")")
  if [ "$2" = FAIL ]; then
    failed=1
    [ "${GPU_CHECK_KEEP_GOING:-0}" = 1 ] || [ "${4:-}" = soft ] || blocked=${blocked:-$1}
  fi
  echo "gpu-check: $1: $2 $3"
}
wants() { [[ " $steps " == *" $1 "* ]]; }
# True when a step may start: the ones before passed (or GPU_CHECK_KEEP_GOING=1), it needs a GPU
# only where there is one
# ($3 = gpu), and enough of the budget is left (at least $2 seconds).
may_start() {
  if [ -n "$blocked" ]; then record "$1" skipped "after $blocked failed"; return 1; fi
  if [ "${3:-}" = gpu ] && [ "$device" = cpu ]; then record "$1" skipped "no GPU (GPU_RUN_DEVICE=cpu)"; return 1; fi
  if [ "$(left 100000)" -lt "$2" ]; then record "$1" "skipped (time)" "$(elapsed) s used of $budget"; return 1; fi
}

engine=$bin/gptoss-engine
bench=$bin/gptoss-bench

# 1 device ------------------------------------------------------------------------------------
if wants device && may_start device 5 gpu; then
  if grep -q '^cuda backend: no' STAGED 2>/dev/null; then
    record device FAIL "staged without CUDA (CUDA=0 or no nvcc where gpu-stage.sh ran): stage again with nvcc"
  elif ! command -v nvidia-smi >/dev/null; then
    record device FAIL "nvidia-smi not found (no GPU driver here; without a GPU: GPU_RUN_DEVICE=cpu)"
  elif timeout 30 nvidia-smi -L > "$out/device.txt" 2>&1 && grep -q '^GPU ' "$out/device.txt"; then
    timeout 30 nvidia-smi >> "$out/device.txt" 2>&1
    record device PASS "$(head -n 1 "$out/device.txt")"
  else
    record device FAIL "nvidia-smi -L lists no GPU: $(tail -n 1 "$out/device.txt" 2>/dev/null)"
  fi
fi

# 2 ops ---------------------------------------------------------------------------------------
if wants ops && may_start ops 30 gpu; then
  CMOCKA_MESSAGE_OUTPUT=TAP timeout "$(left 180)" "$bin/test_cuda_ops" > "$out/ops.log" 2>&1
  rc=$?
  ok=$(grep -c '^ok ' "$out/ops.log"); bad=$(grep -c '^not ok ' "$out/ops.log")
  skipped=$(grep -c 'skipped: no CUDA device' "$out/ops.log")
  worst=$(awk '/rel_l2_err/ { v = $(NF); if (v + 0 > max) { max = v + 0; line = $0 } }
               END { sub(/^# */, "", line); print line }' "$out/ops.log")
  if [ "$rc" -eq 124 ]; then
    record ops "partial (time)" "$ok passed, $bad failed before the time ran out (see ops.log)"
  elif [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$skipped" -eq 0 ]; then
    record ops PASS "$ok tests; largest rel_l2: ${worst:0:90}"
  else
    record ops FAIL "rc $rc, $bad failed, $skipped skipped (see ops.log)"
  fi
fi

# 3 golden ------------------------------------------------------------------------------------
# Prompt logits' relative RMS error against the float64 reference, and the greedy ids.
#   f32   float32 everywhere (cuBLAS SGEMM, the float32 expert kernel): as tight as the CPU's
#         e2e test (1e-4) and the same greedy ids.
#   bf16  bf16 GEMM inputs, MXFP4 experts: within 5e-2 (the CPU's own bf16 kernels give 2.2e-2
#         and 2.4e-2 on these two checkpoints); greedy ids are reported, not required (bf16
#         rounding flips near-ties on the CPU too).
golden_compare() {  # fixture dir, our json, our npy -> prints "rel_rms ids_equal first_diff"
  python3 - "$@" <<'PY'
import json, struct, sys
def npy(path):
    b = open(path, "rb").read()
    hlen = struct.unpack("<H", b[8:10])[0]
    data = b[10 + hlen:]
    return struct.unpack("<%df" % (len(data) // 4), data)
d, ours_json, ours_npy = sys.argv[1:4]
golden = json.load(open(d + "/golden.json"))
ours = json.load(open(ours_json))
want, got = npy(d + "/logits.npy"), npy(ours_npy)
if len(want) != len(got):
    print("inf no -1"); sys.exit(0)
diff = sum((g - w) ** 2 for g, w in zip(got, want)); norm = sum(w * w for w in want)
mine, ref = ours.get("output_ids", []), golden["greedy_ids"]
first = next((i for i, (a, b) in enumerate(zip(mine, ref)) if a != b), -1)
print("%.3g %s %d" % ((diff / norm) ** 0.5, "yes" if mine == ref else "no", first))
PY
}
# Then the same on ranks, one a GPU through NCCL, where the machine has the GPUs: -tp 2 and
# -pp 2 from 2, -tp 2 -pp 2 from 4 (rows golden-a-f32-tp2, ...-pp2, ...-tp2pp2); on the CPU
# (GPU_RUN_DEVICE=cpu: ranks are threads) all three.
gpus=4
[ "$device" = cuda ] && gpus=$(grep -c '^GPU ' "$out/device.txt" 2>/dev/null)
splits=("")
[ "${gpus:-0}" -ge 2 ] && splits+=("-tp 2" "-pp 2")
[ "${gpus:-0}" -ge 4 ] && splits+=("-tp 2 -pp 2")
if wants golden && may_start golden 20; then
  if ! command -v python3 >/dev/null; then
    record golden "skipped" "python3 not found (needed to read logits.npy)"
  fi
  for split in "${splits[@]}"; do
    for fixture in a b; do
      for wf in f32 bf16; do
        command -v python3 >/dev/null || break 3
        dir=tests/fixtures/gptoss-tiny/$fixture
        name=golden-$fixture-$wf${split:+-${split//[- ]/}}
        ids=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["prompt_ids"])))' "$dir/golden.json")
        n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["greedy_ids"]))' "$dir/golden.json")
        # shellcheck disable=SC2086  # a split is a list of flags
        timeout "$(left 60)" "$engine" generate --device "$device" --model "$dir" --weight-format "$wf" \
             --prompt-ids "$ids" --max-tokens "$n" --ignore-eos --logits-out "$out/$name.npy" $split \
             > "$out/$name.json" 2> "$out/$name.log"
        rc=$?
        if [ "$rc" -eq 124 ]; then record "$name" "partial (time)" "generate cut off"; break 3; fi
        if [ "$rc" -ne 0 ]; then
          record "$name" FAIL "generate failed: $(tail -n 1 "$out/$name.log")"
          continue
        fi
        read -r rel same first <<< "$(golden_compare "$dir" "$out/$name.json" "$out/$name.npy")"
        tol=5e-2
        [ "$wf" = f32 ] && tol=1e-4
        detail="logits rel_rms $rel (<= $tol), greedy ids equal: $same"
        [ "$same" = no ] && detail+=" (first difference at $first)"
        if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$rel" "$tol" &&
           { [ "$wf" = bf16 ] || [ "$same" = yes ]; }; then
          record "$name" PASS "$detail"
        else
          record "$name" FAIL "$detail"
        fi
      done
    done
  done
fi

# Serving (steps 4 and 6): one engine at a time, measured by gptoss-bench bench.
serve_start() {  # log, model, flags... -> sets url, server_pid
  url=
  # shellcheck disable=SC2086  # GPU_CHECK_SERVE_ARGS is a list of flags
  "${serve_engine:-$engine}" serve "$2" --device cuda --port 0 ${GPU_CHECK_SERVE_ARGS:-} "${@:3}" > "$1" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  local until=$(( $(date +%s) + $(left 200) ))
  while [ "$(date +%s)" -lt "$until" ]; do
    url=$(sed -n 's/^gptoss-engine serve: listening on //p' "$1")
    [ -n "$url" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}
serve_stop() {
  kill -TERM "$server_pid" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$server_pid" 2>/dev/null || break; sleep 1; done
  kill -KILL "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
}
profile_top() {  # serve log -> its profile table's three largest shares, on one line
  awk '/profile \(GPTOSS_CUDA_PROFILE=1\)/ { on = 1; next }
       on && /%$/ { $1 = $1; print $NF "\t" $0 }' "$1" |  # $1 = $1: single spaces
    sort -rn | head -3 | cut -f2 | paste -sd ';' -
}
metric() {  # log, label -> value
  awk -v label="$2" 'index($0, label) == 1 { print $NF; exit }' "$1"
}
bench_run() {  # name, bench flags... (a flag given again here overrides the default before it)
  local name=$1; shift
  timeout "$(left "${GPU_CHECK_BENCH_S:-150}")" "$bench" bench --base-url "$url" --endpoint-type openai-chat \
       --endpoint /v1/chat/completions --num-prompts "$prompts" --seed 42 --ignore-eos \
       --save-result --result-dir "$out" --result-filename "$name.json" "$@" \
       > "$out/$name.log" 2>&1
  local rc=$? log=$out/$name.log
  if [ "$rc" -eq 124 ]; then
    record "$name" "partial (time)" "cut off: $(grep -c . "$log") log lines ($name.log)"
  elif [ "$rc" -eq 0 ]; then
    record "$name" PASS "$(printf 'out %s tok/s, total %s tok/s, TTFT %s ms, TPOT %s ms, %s ok' \
      "$(metric "$log" 'Output token throughput')" "$(metric "$log" 'Total Token throughput')" \
      "$(metric "$log" 'Mean TTFT')" "$(metric "$log" 'Mean TPOT')" \
      "$(metric "$log" 'Successful requests')")"
  else
    record "$name" FAIL "see $name.log: $(tail -n 1 "$out/$name.log")"
  fi
}
# 4 sampling ----------------------------------------------------------------------------------
# The same requests sampled on the device and on the host: greedy ones must generate the same
# texts; seeded ones with temperature 1, top-k 50 and top-p 0.9 the same texts for nearly all
# (the device sums masses in units of 2^-40, the host in doubles: a draw within a unit of a
# boundary may part them, and a text that parts once stays apart).
same_texts() {  # two result files -> "N of M", or what is wrong
  python3 -c '
import json, sys
a, b = (json.load(open(p))["generated_texts"] for p in sys.argv[1:3])
empty = sum(not x for x in a)
print("count differs" if len(a) != len(b) else "%d empty" % empty if empty else
      "%d of %d" % (sum(x == y for x, y in zip(a, b)), len(a)))
' "$1" "$2"
}
# Records check NAME: the texts of runs sampling-A and sampling-B (the bench's result files) the
# same for at least NUM in DEN of them (none empty), described as WHAT; else FAIL, or the
# result ELSE (WARN, say) where given.
compare_texts() {  # name, a, b, num, den, what[, else]
  local name=$1 a=$out/sampling-$2.json b=$out/sampling-$3.json num=$4 den=$5 what=$6 same
  if [ ! -s "$a" ] || [ ! -s "$b" ]; then
    record "$name" FAIL "a run left no result (sampling-$2.log, sampling-$3.log)"
    return
  fi
  same=$(same_texts "$a" "$b")
  if [[ $same == *" of "* ]] && [ "${same##* of }" -gt 0 ] &&
     [ $(( ${same%% of *} * den )) -ge $(( ${same##* of } * num )) ]; then
    record "$name" PASS "$what: $same"
  else
    record "$name" "${7:-FAIL}" "$what: not so ($same)"
  fi
}
# Every comparison but graphs-batched serves one request at a time (--max-num-seqs 1): a
# batch's makeup can change a product's rounding (cuBLAS and the CPU kernels choose by row
# count; MoE items depend on who else is in the step), so texts from differently batched runs
# may part where two tokens are near ties, whatever the sampler or the cache (on the CPU,
# batched: 25-32 of 32 greedy texts alike between two runs of the same server). Multi-row sampling is test_cuda_ops's to check.
if wants sampling && may_start sampling 95 gpu; then
  for where in device host hybrid-kv plain-kv eager graphs-24 eager-24; do  # a fresh server each
    flags=(--max-num-seqs 1)
    case $where in
      plain-kv) flags+=(--disable-hybrid-kv-cache-manager) ;;
      eager) flags+=(--enforce-eager) ;;
      graphs-24) flags=(--max-num-seqs 24) ;;
      eager-24) flags=(--max-num-seqs 24 --enforce-eager) ;;
    esac
    if GPTOSS_HOST_SAMPLING=$([ "$where" = host ] && echo 1 || echo 0) \
         serve_start "$out/sampling-serve-$where.log" gpt-oss-tiny --load-format dummy \
         --weight-format bf16 "${flags[@]}"; then
      case $where in
        eager | graphs-24 | eager-24)
          bench_run "sampling-$where" --dataset-name random --random-input-len 64 \
            --random-output-len 48 --temperature 0 --save-detailed --num-prompts 32 \
            --endpoint-type openai --endpoint /v1/completions ;;
        device | host)
          bench_run "sampling-$where" --dataset-name random --random-input-len 64 \
            --random-output-len 48 --temperature 0 --save-detailed --num-prompts 32 \
            --endpoint-type openai --endpoint /v1/completions
          bench_run "sampling-top-$where" --dataset-name random --random-input-len 64 \
            --random-output-len 48 --temperature 1.0 --top-k 50 --top-p 0.9 \
            --extra-body '{"seed": 7}' --save-detailed --num-prompts 32 \
            --endpoint-type openai --endpoint /v1/completions ;;
        *)
          bench_run "sampling-$where" --dataset-name random --random-input-len 320 \
            --random-output-len 48 --temperature 0 --save-detailed --num-prompts 32 \
            --endpoint-type openai --endpoint /v1/completions ;;
      esac
    else
      record "sampling-$where" FAIL "not ready: $(tail -n 1 "$out/sampling-serve-$where.log")"
    fi
    serve_stop
  done
  compare_texts sampling device host 1 1 "greedy texts sampled on the device = on the host"
  compare_texts sampling-top top-device top-host 9 10 "seeded top-k/top-p texts, device = host"
  compare_texts kv-hybrid hybrid-kv plain-kv 1 1 \
    "greedy texts past the window, hybrid KV cache = plain"
  # The graphs ran (they may have been off, or dropped): the servers' shutdown lines say so.
  for where in device graphs-24; do
    ran=$(grep -m1 'CUDA graphs ran' "$out/sampling-serve-$where.log" | sed 's/^.*CUDA graphs //')
    [[ $ran == "ran "[1-9]* ]] ||
      record "graphs-ran-$where" FAIL "no step ran by a CUDA graph: $(grep -m1 -E 'CUDA graphs|moved after' "$out/sampling-serve-$where.log")"
  done
  compare_texts graphs device eager 1 1 "greedy texts with CUDA graphs = --enforce-eager ($(
    grep -m1 'CUDA graphs ran' "$out/sampling-serve-device.log" | sed 's/^.*CUDA graphs //'))"
  compare_texts graphs-batched graphs-24 eager-24 3 4 \
    "greedy texts at up to 24 a step (most padded), graphs vs --enforce-eager ($(
    grep -m1 'CUDA graphs ran' "$out/sampling-serve-graphs-24.log" | sed 's/^.*CUDA graphs //'))" WARN
fi

# 5 kernels -----------------------------------------------------------------------------------
kernels_run() {  # step name, bench_cuda_kernels binary -> $out/<name>.log; true when it passed
  local name=$1 log=$out/$1.log rc
  timeout "$(left 150)" "$2" 10 > "$log" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ]; then
    record "$name" "partial (time)" "$(grep -c . "$log") lines before the time ran out ($name.log)"
  elif [ "$rc" -ne 0 ]; then
    record "$name" FAIL "see $name.log: $(tail -n 1 "$log")"
  elif grep -q 'skipped: no CUDA device' "$log"; then
    record "$name" FAIL "skipped: no CUDA device"
  else
    record "$name" PASS "$(grep -m1 '^references:' "$log" | sed 's/^references: //') (table in $name.log)"
    return 0
  fi
  return 1
}
if wants kernels && may_start kernels 60 gpu && kernels_run kernels "$bin/bench_cuda_kernels" &&
   [ -x "$bin/baseline/bench_cuda_kernels" ] && may_start kernels-baseline 60 gpu &&
   kernels_run kernels-baseline "$bin/baseline/bench_cuda_kernels"; then
  # Each figure ("cuda.<name> value") of both runs: name, baseline, this, this / baseline.
  awk 'NR == FNR { if ($1 ~ /^cuda\./ && NF == 2) base[$1] = $2; next }
       $1 ~ /^cuda\./ && NF == 2 && ($1 in base) {
         printf "%-48s %12s %12s %8.3f\n", $1, base[$1], $2, base[$1] != 0 ? $2 / base[$1] : 0 }' \
    "$out/kernels-baseline.log" "$out/kernels.log" > "$out/kernels-ab.txt"
  echo "gpu-check: kernels-ab.txt: every figure of the baseline and this build, with the ratio"
fi

# 5a decode ------------------------------------------------------------------------------------
if wants decode && may_start decode 45 gpu; then
  timeout "$(left 90)" "$bin/bench_cuda_decode" 10 "${GPU_CHECK_DECODE_MODEL:-openai/gpt-oss-20b}" \
    > "$out/decode.log" 2>&1
  rc=$?
  if [ "$rc" -eq 124 ]; then
    record decode "partial (time)" "$(grep -c '^cuda\.' "$out/decode.log") figures before the time ran out (decode.log)"
  elif ! grep -q 'graph_speedup' "$out/decode.log"; then
    record decode FAIL "no figure in decode.log: $(tail -n 1 "$out/decode.log")" soft
  elif [ "$rc" -ne 0 ] || grep -q 'skipped: no CUDA device' "$out/decode.log"; then
    record decode FAIL "see decode.log: $(tail -n 1 "$out/decode.log")" soft
  else
    record decode PASS "graph speed-up by batch: $(awk '$1 ~ /graph_speedup$/ {
      split($1, f, "."); printf "%s%s %.2fx", sep, f[4], $2; sep = ", " }' "$out/decode.log") (table in decode.log)"
  fi
fi

# 5b ncu --------------------------------------------------------------------------------------
if wants ncu && may_start ncu 60 gpu; then
  ncu_bin=$(command -v ncu)
  for f in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
    [ -z "$ncu_bin" ] && [ -x "$f" ] && ncu_bin=$f
  done
  if [ -z "$ncu_bin" ]; then
    record ncu n/a "no ncu here (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)"
  else
    timeout "$(left 200)" "$ncu_bin" --clock-control none --set full --import-source no \
      --kernel-name "regex:${GPU_CHECK_NCU_KERNEL:-mxfp4}" --launch-count "${GPU_CHECK_NCU_COUNT:-2}" \
      "$bin/bench_cuda_kernels" 1 "${GPU_CHECK_NCU_SHAPE:-moe.gpt-oss-120b.e128.t1024}" \
      > "$out/ncu.log" 2>&1
    rc=$?
    profiled=$(grep -c '^==PROF== Profiling' "$out/ncu.log")
    if [ "$rc" -eq 124 ]; then
      record ncu "partial (time)" "$profiled kernels profiled before the time ran out (ncu.log)"
    elif [ "$profiled" -eq 0 ]; then  # ncu could not profile here (counters refused, say)
      record ncu n/a "rc $rc, no kernel profiled: $(grep -m1 -iE 'error|fail' "$out/ncu.log")"
    elif [ "$rc" -ne 0 ]; then
      record ncu FAIL "rc $rc after $profiled kernels were profiled (see ncu.log)"
    else
      record ncu PASS "$profiled kernels profiled (ncu.log)"
    fi
  fi
fi

# 6 serve -------------------------------------------------------------------------------------
for mode in $serve_modes; do
  wants serve || break
  may_start "serve-$mode" 90 gpu || continue
  flags=()
  host_sampling=0
  profile=0
  moe_kernel=${GPTOSS_CUDA_MOE_KERNEL:-auto}
  cublas_rows=${GPTOSS_CUDA_MOE_CUBLAS_ROWS:-}
  sampling=()
  case $mode in
    sync) ;;
    async) flags=(--async-scheduling) ;;
    kv-f32) flags=(--kv-cache-dtype float32) ;;
    plain-kv) flags=(--disable-hybrid-kv-cache-manager) ;;
    eager) flags=(--enforce-eager) ;;
    moe-wide32) moe_kernel=wide32 ;;
    moe-no-cublas) cublas_rows=0 ;;
    host-sampling) host_sampling=1 ;;
    top-p) sampling=(--temperature 1.0 --top-k 50 --top-p 0.9 --logprobs 5) ;;
    profile) profile=1 ;;
    baseline) ;;
    *) record "serve-$mode" FAIL "unknown mode (GPU_CHECK_SERVE_MODES: sync, async, kv-f32, plain-kv, eager, moe-wide32, moe-no-cublas, host-sampling, top-p, profile, baseline)"; continue ;;
  esac
  if [ "$mode" = baseline ] && [ ! -x "$bin/baseline/gptoss-engine" ]; then
    record "serve-$mode" FAIL "no baseline staged (gpu-stage.sh with GPU_STAGE_BASELINE=REV)"
    continue
  fi
  t0=$(date +%s)
  serve_engine=$engine
  [ "$mode" = baseline ] && serve_engine=$bin/baseline/gptoss-engine
  if GPTOSS_HOST_SAMPLING=$host_sampling GPTOSS_CUDA_PROFILE=$profile GPTOSS_CUDA_MOE_KERNEL=$moe_kernel \
       GPTOSS_CUDA_MOE_CUBLAS_ROWS=$cublas_rows serve_start "$out/serve-$mode.log" "$serve_model" --load-format dummy \
       --weight-format bf16 "${flags[@]}"; then
    record "serve-$mode" PASS "ready in $(( $(date +%s) - t0 )) s"
    if [ "$mode" != host-sampling ] && [[ $workloads == *" random "* ]]; then
      may_start "random-2000-100-$mode" 30 &&
        bench_run "random-2000-100-$mode" --dataset-name random --random-input-len 2000 \
          --random-output-len 100 "${sampling[@]}"
    fi
    [[ $workloads == *" sharegpt "* ]] && may_start "sharegpt-synth-$mode" 30 &&
      bench_run "sharegpt-synth-$mode" --dataset-name sharegpt \
        --dataset-path datasets/sharegpt-synth.json "${sampling[@]}"
    serve_stop
    graphs_ran=$(grep -m1 'CUDA graphs ran' "$out/serve-$mode.log" | sed 's/^.*CUDA graphs //')
    [ -n "$graphs_ran" ] && record "graphs-$mode" info "$graphs_ran (serve-$mode.log)"
    if [ "$profile" = 1 ]; then
      if grep -q 'profile (GPTOSS_CUDA_PROFILE=1)' "$out/serve-$mode.log"; then
        record profile PASS "$(profile_top "$out/serve-$mode.log") (serve-$mode.log)"
      else
        record profile FAIL "no profile table in serve-$mode.log"
      fi
    fi
  else
    serve_stop
    record "serve-$mode" FAIL "not ready: $(tail -n 1 "$out/serve-$mode.log")"
  fi
done

# summary -------------------------------------------------------------------------------------
{
  echo "gpu-check: $(head -n 1 "$out/device.txt" 2>/dev/null || echo "device $device"), $(elapsed) s of $budget"
  printf '%-26s %-14s %s\n' step result detail
  printf '%s\n' "${summary[@]}"
} | tee "$out/summary.txt"
exit "$failed"
