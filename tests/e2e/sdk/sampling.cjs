// sampling.cjs: the sampling and output fields through the official SDK: n choices with their
// indices (whole and streamed), chat and completions logprobs in OpenAI's shapes, a stop string
// cutting the text with finish_reason "stop", seeds reproducible, lists of prompts, logit_bias
// steering greedy output, echo, continuous usage, and every refused field a BadRequestError that
// names it.
const { OpenAI, client, check, collect } = require("./tap.cjs");

const model = "gpt-oss-tiny";
const messages = [{ role: "user", content: "Tell me a story." }];

// Refused with 400: the SDK raises BadRequestError whose message names the field.
async function refused(create, body, field) {
  try {
    await create(body);
    return `accepted ${JSON.stringify(body)}`;
  } catch (e) {
    return (e instanceof OpenAI.BadRequestError && e.status === 400 && e.message.includes(field)) ||
      `${e.status} ${e.message}`;
  }
}

(async () => {
  await check("chat n=3: three choices indexed 0, 1, 2, usage over all", async () => {
    const r = await client.chat.completions.create({ model, messages, n: 3, max_tokens: 4,
      temperature: 1, seed: 7, ignore_eos: true });
    return r.choices.length === 3 && r.choices.every((c, i) => c.index === i &&
      c.finish_reason === "length") && r.usage.completion_tokens === 12;
  });
  await check("chat n=2 stream: chunks carry both indices, each finishes once", async () => {
    const chunks = await collect(await client.chat.completions.create({ model, messages, n: 2,
      max_tokens: 3, temperature: 1, ignore_eos: true, stream: true }));
    const finishes = [0, 0];
    for (const c of chunks) for (const ch of c.choices) if (ch.finish_reason) finishes[ch.index]++;
    const indices = new Set(chunks.flatMap(c => c.choices.map(ch => ch.index)));
    return indices.size === 2 && finishes[0] === 1 && finishes[1] === 1;
  });
  await check("chat logprobs: content entries with logprob <= 0, sorted top_logprobs", async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 5,
      temperature: 1, seed: 3, ignore_eos: true, logprobs: true, top_logprobs: 3 });
    const content = r.choices[0].logprobs.content;
    return content.length === 5 && content.every(e => {
      const tops = e.top_logprobs;
      const sorted = tops.every((t, i) => i === 0 || t.logprob <= tops[i - 1].logprob);
      const same = tops.filter(t => t.token === e.token);
      return typeof e.token === "string" && e.logprob <= 0 && Array.isArray(e.bytes) &&
        tops.length === 3 && sorted && same.every(t => t.logprob === e.logprob);
    }) || content;
  });
  await check("chat logprobs streamed: every token chunk carries its entry", async () => {
    const chunks = await collect(await client.chat.completions.create({ model, messages,
      max_tokens: 4, temperature: 0, ignore_eos: true, logprobs: true, stream: true }));
    const entries = chunks.flatMap(c => c.choices.flatMap(ch => ch.logprobs ? ch.logprobs.content : []));
    return entries.length === 4 && entries.every(e => e.logprob <= 0 && e.top_logprobs.length === 0);
  });
  await check("completions logprobs=2: tokens, token_logprobs, top_logprobs, text_offset", async () => {
    const r = await client.completions.create({ model, prompt: "Once upon a time",
      max_tokens: 6, temperature: 0, ignore_eos: true, logprobs: 2 });
    const lp = r.choices[0].logprobs;
    const greedyTop = lp.top_logprobs.every((d, i) => Math.max(...Object.values(d)) === lp.token_logprobs[i]);
    const offsets = lp.text_offset.every((o, i) => i === 0 ? o === 0 : o >= lp.text_offset[i - 1]);
    return lp.tokens.length === 6 && lp.token_logprobs.every(x => x <= 0) && greedyTop &&
      lp.top_logprobs.every(d => Object.keys(d).length >= 1 && Object.keys(d).length <= 3) &&
      offsets && lp.tokens.join("") === r.choices[0].text || lp;
  });
  await check("stop string: the text ends before its first match, finish_reason stop", async () => {
    const body = { model, prompt: "Once upon a time", max_tokens: 10, temperature: 0,
      ignore_eos: true };
    const full = (await client.completions.create(body)).choices[0].text;
    const chars = Array.from(full);
    const stop = chars.slice(4, 6).join("");
    const want = full.slice(0, full.indexOf(stop));
    const r = await client.completions.create({ ...body, stop: [stop, "zz-never-zz"] });
    const c = r.choices[0];
    return (c.text === want && c.finish_reason === "stop" && c.stop_reason === stop) ||
      { full, stop, got: c.text };
  });
  await check("stop string streamed: nothing past the match is ever sent", async () => {
    const body = { model, prompt: "Once upon a time", max_tokens: 10, temperature: 0,
      ignore_eos: true };
    const full = (await client.completions.create(body)).choices[0].text;
    const stop = Array.from(full).slice(5, 7).join("");
    const chunks = await collect(await client.completions.create({ ...body, stop, stream: true }));
    const text = chunks.map(c => c.choices.length ? c.choices[0].text : "").join("");
    const last = chunks[chunks.length - 1].choices[0];
    return (text === full.slice(0, full.indexOf(stop)) && last.finish_reason === "stop") ||
      { full, stop, text };
  });
  await check("seed: the same seed samples the same text, another seed another", async () => {
    const body = { model, prompt: "Once upon a time", max_tokens: 8, temperature: 1,
      ignore_eos: true };
    const a = (await client.completions.create({ ...body, seed: 42 })).choices[0].text;
    const b = (await client.completions.create({ ...body, seed: 42 })).choices[0].text;
    const c = (await client.completions.create({ ...body, seed: 43 })).choices[0].text;
    return (a === b && a !== c) || { a, b, c };
  });
  await check("list of prompts x n=2: choices prompt * n + i, prompt tokens summed", async () => {
    const one = await client.completions.create({ model, prompt: "Hello", max_tokens: 2,
      temperature: 0, ignore_eos: true });
    const r = await client.completions.create({ model, prompt: ["Hello", "Good morning"], n: 2,
      max_tokens: 2, temperature: 0, ignore_eos: true });
    return r.choices.length === 4 && r.choices.every((c, i) => c.index === i) &&
      r.choices[0].text === one.choices[0].text && r.choices[1].text === one.choices[0].text &&
      r.usage.completion_tokens === 8 && r.usage.prompt_tokens === one.usage.prompt_tokens + 2;
  });
  await check("logit_bias +100 on one id: greedy output is that id", async () => {
    const r = await client.completions.create({ model, prompt: "Hello", max_tokens: 3,
      temperature: 0, ignore_eos: true, logit_bias: { "12345": 100 }, return_token_ids: true });
    return r.choices[0].token_ids.every(id => id === 12345) && r.choices[0].token_ids.length === 3;
  });
  await check("penalties and min_tokens are accepted and keep the answer well formed", async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 6,
      presence_penalty: 1.5, frequency_penalty: 0.5, repetition_penalty: 1.3, min_tokens: 6 });
    return r.usage.completion_tokens === 6 && r.choices[0].finish_reason === "length";
  });
  await check("echo: the text starts with the prompt", async () => {
    const r = await client.completions.create({ model, prompt: "Once upon", max_tokens: 2,
      temperature: 0, ignore_eos: true, echo: true });
    return r.choices[0].text.startsWith("Once upon");
  });
  await check("continuous_usage_stats: every chunk carries usage", async () => {
    const chunks = await collect(await client.completions.create({ model, prompt: "Hi",
      max_tokens: 3, temperature: 0, ignore_eos: true, stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true } }));
    return chunks.every(c => c.usage && c.usage.prompt_tokens > 0);
  });
  const chat = b => client.chat.completions.create({ model, messages, max_tokens: 2, ...b });
  const cmpl = b => client.completions.create({ model, prompt: "x", max_tokens: 2, ...b });
  const refusals = [
    [cmpl, { best_of: 2 }, "best_of"],
    [cmpl, { suffix: "end" }, "suffix"],
    [cmpl, { echo: true, logprobs: 1 }, "echo"],
    [chat, { response_format: { type: "json_object" } }, "response_format"],
    [chat, { response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } } },
      "response_format"],
    [chat, { guided_json: { type: "object" } }, "guided_json"],
    [chat, { structured_outputs: { json: {} } }, "structured_outputs"],
    [cmpl, { min_p: 0.1 }, "min_p"],
    [cmpl, { prompt_logprobs: 1 }, "prompt_logprobs"],
    [chat, { use_beam_search: true }, "use_beam_search"],
    [chat, { top_logprobs: 21, logprobs: true }, "top_logprobs"],
    [cmpl, { presence_penalty: 3 }, "presence_penalty"],
    [cmpl, { logit_bias: { "999999": 1 } }, "logit_bias"],
  ];
  for (const [create, body, field] of refusals)
    await check(`refused with a BadRequestError naming ${field}: ${JSON.stringify(body)}`,
      () => refused(create, body, field));
})();
