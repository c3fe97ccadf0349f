#!/usr/bin/env bash
# engine_metrics.sh: `gptoss-engine serve` /metrics read by a real Prometheus text parser
# (parse-prometheus-text-format, pinned, installed into BUILD/npm-prom; it reads a labelled
# histogram's buckets but not its _count and _sum, which are read from their lines here, whose
# syntax the parser has checked) after 5 requests: every
# family vLLM v0.10 exposes that this server measures is there, under vLLM's name and type, with
# the labels model_name and engine, vLLM's bucket bounds (vllm/v1/metrics/loggers.py, written
# here by hand), cumulative buckets with +Inf equal to _count, and counts that are the requests'.
# Usage: engine_metrics.sh BUILD_DIR (prints TAP).
set -u
. tests/e2e/openai_sdk.bash
sdk_begin "${1:?usage: engine_metrics.sh BUILD_DIR}"
prom_dir=$build/npm-prom
npm_pinned "$prom_dir" parse-prometheus-text-format 1.1.1 ||
  { echo "Bail out! the Prometheus parser could not be installed"; exit 1; }
sdk_serve || { echo "Bail out! serve did not start"; exit 1; }

for i in 1 2 3 4; do
  curl -s "$url/v1/completions" -d '{"prompt": "Hello", "max_tokens": 3, "ignore_eos": true}' \
    > /dev/null
done
curl -s "$url/v1/chat/completions" -d '{"messages": [{"role": "user", "content": "hi"}],
  "max_tokens": 3, "ignore_eos": true, "stream": true}' > /dev/null
curl -s "$url/metrics" > "$tmp/metrics.txt"
max_model_len=$(curl -s "$url/v1/models" | node -e 'let s = ""; process.stdin.on("data",
  d => s += d).on("end", () => console.log(JSON.parse(s).data[0].max_model_len))')

NODE_PATH=$prom_dir/node_modules node -e '
const parse = require("parse-prometheus-text-format");
const text = require("fs").readFileSync(process.argv[1], "utf8");
const maxModelLen = Number(process.argv[2]);
let families;
try { families = parse(text); } catch (e) { console.log("not ok - the parser refuses: " + e.message); process.exit(0); }
console.log("ok - the Prometheus text parser reads the whole exposition");
const byName = Object.fromEntries(families.map(f => [f.name, f]));
const ttft = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
  7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const tpot = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
  10.0, 20.0, 40.0, 80.0];
const latency = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
  60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];
const b125 = [];
for (let e = 1; ; e *= 10) { const v = [1, 2, 5].map(m => m * e).filter(v => v <= maxModelLen);
  b125.push(...v); if (v.length < 3) break; }
// vLLM v0.10 name -> [type, buckets (histograms), what the 5 requests make it]
const want = {
  "vllm:num_requests_running": ["GAUGE"], "vllm:num_requests_waiting": ["GAUGE"],
  "vllm:gpu_cache_usage_perc": ["GAUGE"], "vllm:kv_cache_usage_perc": ["GAUGE"],
  "vllm:prefix_cache_queries_total": ["COUNTER"], "vllm:prefix_cache_hits_total": ["COUNTER"],
  "vllm:num_preemptions_total": ["COUNTER"], "vllm:prompt_tokens_total": ["COUNTER"],
  "vllm:generation_tokens_total": ["COUNTER", null, 15],
  "vllm:request_success_total": ["COUNTER"],
  "vllm:time_to_first_token_seconds": ["HISTOGRAM", ttft, 5],
  "vllm:time_per_output_token_seconds": ["HISTOGRAM", tpot, 10],
  "vllm:inter_token_latency_seconds": ["HISTOGRAM", tpot, 10],
  "vllm:e2e_request_latency_seconds": ["HISTOGRAM", latency, 5],
  "vllm:request_decode_time_seconds": ["HISTOGRAM", latency, 5],
  "vllm:request_prompt_tokens": ["HISTOGRAM", b125, 5],
  "vllm:request_generation_tokens": ["HISTOGRAM", b125, 5],
  "vllm:request_params_max_tokens": ["HISTOGRAM", b125, 5],
};
const labels = `{model_name="gpt-oss-tiny",engine="0"}`;
const labelsOk = m => m.labels && m.labels.model_name === "gpt-oss-tiny" && m.labels.engine === "0";
const sample = name => { const l = text.split("\n").find(l => l.startsWith(name + labels + " "));
  return l === undefined ? NaN : Number(l.slice(l.lastIndexOf(" ") + 1)); };
for (const [name, [type, bounds, n]] of Object.entries(want)) {
  const f = byName[name];
  let why = !f ? "missing" : f.type !== type ? "type " + f.type : !f.help ? "no HELP" :
    type !== "HISTOGRAM" && !f.metrics.every(labelsOk) ? "labels " + JSON.stringify(f.metrics[0].labels)
    : "";
  if (!why && type === "HISTOGRAM") {
    const m = f.metrics[0], les = Object.keys(m.buckets), counts = Object.values(m.buckets).map(Number);
    const count = sample(name + "_count"), sum = sample(name + "_sum");
    const wantLes = bounds.map(String).concat("+Inf");
    if (les.length !== wantLes.length || !les.every((le, i) => Number(le) === Number(wantLes[i]) ||
        le === wantLes[i])) why = "buckets " + les.join(",");
    else if (!counts.every((c, i) => i === 0 || c >= counts[i - 1])) why = "buckets not cumulative";
    else if (count !== counts[counts.length - 1]) why = `+Inf is not _count ${count}`;
    else if (count !== n) why = `_count ${count}, wanted ${n}`;
    else if (!(sum >= 0)) why = "_sum " + sum;
  } else if (!why && n !== undefined && Number(f.metrics[0].value) !== n) {
    why = `value ${f.metrics[0].value}, wanted ${n}`;
  }
  console.log(`${why ? "not ok" : "ok"} - ${name}: vLLM type, labels${bounds ? ", buckets" : ""}${n === undefined ? "" : ", " + n}${why ? " (" + why + ")" : ""}`);
}
const gen = sample("vllm:request_generation_tokens_sum"), maxt = sample("vllm:request_params_max_tokens_sum");
console.log(`${gen === 15 && maxt === 15 ? "ok" : "not ok"} - request_generation_tokens_sum and request_params_max_tokens_sum are 5 x 3 (${gen}, ${maxt})`);
const reasons = byName["vllm:request_success_total"].metrics.map(m => m.labels.finished_reason + "=" + m.value);
console.log(`${reasons.join(",") === "stop=0,length=5,abort=0" ? "ok" : "not ok"} - request_success_total by finished_reason: ${reasons.join(",")}`);
' "$tmp/metrics.txt" "$max_model_len" > "$tmp/verdicts"
while IFS= read -r line; do
  case $line in
    "ok - "*) tap_ok "${line#ok - }" true ;;
    "not ok - "*) tap_ok "${line#not ok - }" false ;;
  esac
done < "$tmp/verdicts"
tap_done
