// tools.cjs: against a server whose model is scripted to think, then call
// get_weather({"city":"Paris"}) on the commentary channel (GPTOSS_TEST_FORCED_OUTPUT). Argument:
// ADDED, the token count of the call and its output as vLLM renders them into the history (the
// e2e script counts it with `gptoss-bench tokenize`), then the URL. Chat: message.tool_calls and
// finish_reason "tool_calls", whole and streamed (deltas accumulate to the same call, also through
// the SDK's own stream helper), tools change prompt_tokens, and the next turn with the tool's
// output is accepted and longer by exactly ADDED. Responses: reasoning and function_call items,
// whole and streamed, and the function_call_output turn.
const { client, check, collect } = require("../sdk/tap.cjs");

const added = Number(process.argv[2]);
const model = "gpt-oss-tiny", messages = [{ role: "user", content: "Weather in Paris?" }];
const tools = [{ type: "function", function: { name: "get_weather",
  description: "Current weather in a city.", parameters: { type: "object",
    properties: { city: { type: "string", description: "City name" } }, required: ["city"] } } }];
const isParis = args => JSON.parse(args).city === "Paris";
(async () => {
  let first;
  await check("chat: message.tool_calls[0] is get_weather({city: Paris}), finish tool_calls", async () => {
    first = await client.chat.completions.create({ model, messages, tools, max_tokens: 64 });
    const m = first.choices[0].message, call = m.tool_calls[0];
    return first.choices[0].finish_reason === "tool_calls" && m.tool_calls.length === 1 &&
      call.type === "function" && call.id.startsWith("chatcmpl-tool-") &&
      call.function.name === "get_weather" && isParis(call.function.arguments) &&
      m.content === null && m.reasoning_content === "Need the weather.";
  });
  await check("chat: tools add to prompt_tokens (the developer message's namespace)", async () => {
    const bare = await client.chat.completions.create({ model, messages, max_tokens: 1 });
    return first.usage.prompt_tokens > bare.usage.prompt_tokens + 20 ? true :
      [first.usage.prompt_tokens, bare.usage.prompt_tokens];
  });
  await check("chat stream: tool_calls deltas accumulate to the same call", async () => {
    const chunks = await collect(await client.chat.completions.create({ model, messages, tools,
      max_tokens: 64, stream: true }));
    const deltas = chunks.flatMap(c => (c.choices[0] && c.choices[0].delta.tool_calls) || []);
    const head = deltas[0], args = deltas.map(d => d.function.arguments || "").join("");
    const finish = chunks.map(c => c.choices[0] && c.choices[0].finish_reason).filter(Boolean);
    return head.index === 0 && head.type === "function" && head.id.startsWith("chatcmpl-tool-") &&
      head.function.name === "get_weather" && deltas.every(d => d.index === 0) &&
      isParis(args) && JSON.stringify(finish) === '["tool_calls"]';
  });
  await check("chat.completions.stream(...).finalChatCompletion() has the call", async () => {
    const r = await client.chat.completions.stream({ model, messages, tools, max_tokens: 64 })
      .finalChatCompletion();
    const call = r.choices[0].message.tool_calls[0];
    return call.function.name === "get_weather" && isParis(call.function.arguments);
  });
  await check(`chat: the next turn with the tool's output is accepted, ${added} tokens longer`, async () => {
    const call = first.choices[0].message.tool_calls[0];
    const history = [...messages,
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", tool_call_id: call.id, content: '{"temp":21}' }];
    const r = await client.chat.completions.create({ model, messages: history, tools,
      max_tokens: 1 });
    return r.usage.prompt_tokens === first.usage.prompt_tokens + added ? true :
      [r.usage.prompt_tokens, first.usage.prompt_tokens, added];
  });
  await check("chat: a tool message naming no earlier call is a 400", async () => {
    try {
      await client.chat.completions.create({ model, tools, max_tokens: 1, messages: [...messages,
        { role: "tool", tool_call_id: "call_nope", content: "x" }] });
      return "accepted";
    } catch (e) { return e.status === 400; }
  });
  const rtools = [{ type: "function", name: "get_weather", description: "Current weather.",
    parameters: tools[0].function.parameters, strict: false }];
  let resp;
  await check("responses.create with tools: reasoning and function_call items", async () => {
    resp = await client.responses.create({ model, input: "Weather in Paris?", tools: rtools,
      max_output_tokens: 64 });
    const [rs, fc] = resp.output;
    return resp.output.length === 2 && rs.type === "reasoning" && fc.type === "function_call" &&
      fc.name === "get_weather" && isParis(fc.arguments) && fc.call_id.startsWith("call_") &&
      resp.tools[0].name === "get_weather";
  });
  await check("responses.stream(...).finalResponse(): function_call_arguments accumulate", async () => {
    const stream = client.responses.stream({ model, input: "Weather in Paris?", tools: rtools,
      max_output_tokens: 64 });
    let deltas = "";
    stream.on("response.function_call_arguments.delta", e => { deltas += e.delta; });
    const r = await stream.finalResponse();
    const fc = r.output.find(o => o.type === "function_call");
    return fc && fc.name === "get_weather" && isParis(fc.arguments) && deltas === fc.arguments;
  });
  await check("responses: the function_call_output turn is accepted and longer", async () => {
    const fc = resp.output[1];
    const r = await client.responses.create({ model, tools: rtools, max_output_tokens: 1,
      input: [{ role: "user", content: "Weather in Paris?" }, ...resp.output,
        { type: "function_call_output", call_id: fc.call_id, output: '{"temp":21}' }] });
    return r.usage.input_tokens > resp.usage.input_tokens;
  });
  await check("responses: built-in tools are 400s", async () => {
    try {
      await client.responses.create({ model, input: "x", tools: [{ type: "web_search_preview" }] });
      return "accepted";
    } catch (e) { return e.status === 400 && e.param === "tools"; }
  });
})();
