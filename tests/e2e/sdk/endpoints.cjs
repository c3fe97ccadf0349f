// endpoints.cjs: the serving part of issue 17 through the official SDK: models.retrieve (a Model,
// or NotFoundError with code "model_not_found"), the error body (BadRequestError's status,
// message, param, code null), vLLM's /version, /tokenize and /detokenize through the SDK's own
// get/post (their counts equal the prompt_tokens of the same prompt on the completion routes),
// and /metrics after N requests: each request histogram counts N more, its buckets are
// cumulative with +Inf equal to _count, and the token sums are the arithmetic's.
const { OpenAI, client, url, check } = require("./tap.cjs");

const root = new OpenAI({ baseURL: url, apiKey: "none", maxRetries: 0, timeout: 120e3 });
const model = "gpt-oss-tiny";

// The samples of a Prometheus text body: {"name{labels}": value}.
async function scrape() {
  const text = await (await fetch(url + "/metrics")).text();
  const samples = {};
  for (const line of text.split("\n"))
    if (line && !line.startsWith("#")) {
      const at = line.lastIndexOf(" ");
      samples[line.slice(0, at)] = Number(line.slice(at + 1));
    }
  return samples;
}
const labels = `model_name="${model}",engine="0"`;
const at = (s, name, extra) => s[`${name}{${labels}${extra ? "," + extra : ""}}`];

// A histogram's buckets in order, each {le, count}.
function buckets(s, name) {
  return Object.keys(s).filter(k => k.startsWith(`${name}_bucket{${labels},le="`))
    .map(k => ({ le: k.slice(k.lastIndexOf('le="') + 4, -2), count: s[k] }));
}
function consistent(s, name) {
  const b = buckets(s, name), count = at(s, name + "_count");
  const cumulative = b.every((x, i) => i === 0 || x.count >= b[i - 1].count);
  return b.length > 1 && cumulative && b[b.length - 1].le === "+Inf" &&
    b[b.length - 1].count === count && at(s, name + "_sum") >= 0;
}

(async () => {
  await check("models.retrieve(gpt-oss-tiny) parses into a Model", async () => {
    const m = await client.models.retrieve(model);
    return m.id === model && m.object === "model" && typeof m.created === "number" &&
      m.owned_by === "gptoss-engine";
  });
  await check("models.retrieve of an unknown id: NotFoundError, code model_not_found", async () => {
    try {
      await client.models.retrieve("gpt-oss-120b");
      return "answered";
    } catch (e) {
      return e instanceof OpenAI.NotFoundError && e.status === 404 &&
        e.code === "model_not_found" && e.param === null && e.type === "NotFoundError" &&
        e.message.includes("The model `gpt-oss-120b` does not exist.") || String(e);
    }
  });
  await check("a completion for an unknown model: NotFoundError, param model, code "
    + "model_not_found", async () => {
    try {
      await client.completions.create({ model: "gpt-oss-120b", prompt: "hi", max_tokens: 1 });
      return "answered";
    } catch (e) {
      return e instanceof OpenAI.NotFoundError && e.status === 404 && e.param === "model" &&
        e.code === "model_not_found" || String(e);
    }
  });
  await check("a bad top_p: BadRequestError with status, message, param top_p, code null",
    async () => {
      try {
        await client.completions.create({ model, prompt: "hi", max_tokens: 1, top_p: 5 });
        return "answered";
      } catch (e) {
        return e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "top_p" &&
          e.code === null && e.error.code === null && /top_p/.test(e.message) || String(e);
      }
    });
  await check("GET /version answers {version: string}", async () => {
    const v = await root.get("/version");
    return typeof v.version === "string" && v.version.length > 0;
  });
  await check("/tokenize of a prompt: its count is the completion's prompt_tokens; /detokenize "
    + "gives the prompt back", async () => {
    const prompt = "The capital of France is Paris.";
    const t = await root.post("/tokenize", { body: { model, prompt, return_token_strs: true } });
    const r = await client.completions.create({ model, prompt, max_tokens: 1 });
    const d = await root.post("/detokenize", { body: { model, tokens: t.tokens } });
    return t.count === t.tokens.length && t.count === r.usage.prompt_tokens &&
      t.max_model_len > 0 && t.token_strs.length === t.count && t.token_strs[0] === "The" &&
      t.token_strs[1] === "\u0120capital" && d.prompt === prompt;
  });
  await check("/tokenize of messages: its count is the chat answer's prompt_tokens", async () => {
    const messages = [{ role: "user", content: "What is 2 + 2?" }];
    const t = await root.post("/tokenize", { body: { model, messages } });
    const bare = await root.post("/tokenize",
      { body: { model, messages, add_generation_prompt: false } });
    const r = await client.chat.completions.create({ model, messages, max_tokens: 1 });
    return t.count === r.usage.prompt_tokens && bare.count === t.count - 2 &&
      t.token_strs === null;
  });
  await check("/tokenize and /detokenize refuse bad input with BadRequestError naming the field",
    async () => {
      const refused = async body => {
        try {
          await root.post(body.tokens === undefined ? "/tokenize" : "/detokenize", { body });
          return null;
        } catch (e) {
          return e instanceof OpenAI.BadRequestError && e.status === 400 ? e.param : String(e);
        }
      };
      return await refused({ prompt: 5 }) === "prompt" &&
        await refused({ tokens: [-1] }) === "tokens" &&
        await refused({ prompt: "a", return_token_strs: "yes" }) === "return_token_strs";
    });
  await check("/metrics after 3 requests of 5 tokens: every request histogram counts 3 more, "
    + "buckets consistent, token sums exact", async () => {
    const before = await scrape();
    const prompt = "Hello";
    const t = await root.post("/tokenize", { body: { prompt } });
    for (let i = 0; i < 3; i++)
      await client.completions.create({ model, prompt, max_tokens: 5, ignore_eos: true });
    const after = await scrape();
    const delta = (name, extra) => at(after, name, extra) - at(before, name, extra);
    const names = ["vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds",
      "vllm:request_decode_time_seconds", "vllm:request_prompt_tokens",
      "vllm:request_generation_tokens", "vllm:request_params_max_tokens"];
    const counts = names.every(n => delta(n + "_count") === 3 && consistent(after, n));
    const itl = ["vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"]
      .every(n => delta(n + "_count") === 3 * 4 && consistent(after, n));
    const sums = delta("vllm:request_generation_tokens_sum") === 15 &&
      delta("vllm:request_prompt_tokens_sum") === 3 * t.count &&
      delta("vllm:request_params_max_tokens_sum") === 15 &&
      delta("vllm:request_success_total", 'finished_reason="length"') === 3 &&
      delta("vllm:generation_tokens_total") === 15;
    const ttft = buckets(after, "vllm:time_to_first_token_seconds");
    return counts && itl && sums && ttft[0].le === "0.001" &&
      ttft[ttft.length - 2].le === "2560.0" ||
      JSON.stringify({ counts, itl, sums, ttft: ttft.map(b => b.le) });
  });
})();
