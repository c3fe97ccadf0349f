// reasoning.cjs: against a server whose model is scripted (GPTOSS_TEST_FORCED_OUTPUT) to think
// "The user greets." on the analysis channel, then answer "Hello there!" on final: chat carries
// them as reasoning_content and content (whole and streamed), reasoning_effort is accepted or
// refused as vLLM does, and /v1/responses gives reasoning and message items, whole, streamed
// (the SDK's event types and finalResponse()), cut short (incomplete), and refuses what needs
// stored state.
const { client, check, collect } = require("../sdk/tap.cjs");

const THOUGHT = "The user greets.", ANSWER = "Hello there!";
const model = "gpt-oss-tiny", messages = [{ role: "user", content: "Hi" }];
(async () => {
  await check("chat: reasoning_content and content from the two channels, finish stop", async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 64 });
    const m = r.choices[0].message;
    return m.content === ANSWER && m.reasoning_content === THOUGHT &&
      r.choices[0].finish_reason === "stop" && m.tool_calls.length === 0;
  });
  await check("chat stream: delta.reasoning_content and delta.content accumulate to both", async () => {
    const chunks = await collect(await client.chat.completions.create({ model, messages,
      max_tokens: 64, stream: true }));
    const join = k => chunks.map(c => (c.choices[0] && c.choices[0].delta[k]) || "").join("");
    const finish = chunks.map(c => c.choices[0] && c.choices[0].finish_reason).filter(Boolean);
    return join("reasoning_content") === THOUGHT && join("content") === ANSWER &&
      finish.length === 1 && finish[0] === "stop";
  });
  await check("chat: reasoning_effort low/medium/high accepted, \"max\" is a 400", async () => {
    for (const reasoning_effort of ["low", "medium", "high"])
      await client.chat.completions.create({ model, messages, max_tokens: 4, reasoning_effort });
    try {
      await client.chat.completions.create({ model, messages, max_tokens: 4,
        reasoning_effort: "max" });
      return "accepted";
    } catch (e) { return e.status === 400 && e.param === "reasoning_effort"; }
  });
  await check("responses.create: a reasoning item and a message item, output_text", async () => {
    const r = await client.responses.create({ model, input: "Hi", max_output_tokens: 64 });
    const [rs, msg] = r.output;
    return r.object === "response" && r.id.startsWith("resp_") && r.status === "completed" &&
      r.output.length === 2 && rs.type === "reasoning" && rs.content[0].type === "reasoning_text" &&
      rs.content[0].text === THOUGHT && msg.type === "message" && msg.role === "assistant" &&
      msg.content[0].type === "output_text" && msg.content[0].text === ANSWER &&
      r.output_text === ANSWER && r.usage.input_tokens > 0 &&
      r.usage.output_tokens_details.reasoning_tokens > 0 &&
      r.usage.total_tokens === r.usage.input_tokens + r.usage.output_tokens;
  });
  await check("responses.create stream: vLLM's event types, in order, numbered", async () => {
    const events = await collect(await client.responses.create({ model, input: "Hi",
      max_output_tokens: 64, stream: true }));
    const kinds = events.map(e => e.type).filter((t, i, a) => t !== a[i - 1]);
    const want = ["created", "in_progress", "output_item.added", "content_part.added",
      "reasoning_text.delta", "reasoning_text.done", "content_part.done", "output_item.done",
      "output_item.added", "content_part.added", "output_text.delta", "output_text.done",
      "content_part.done", "output_item.done", "completed"].map(t => "response." + t);
    return JSON.stringify(kinds) === JSON.stringify(want) &&
      events.every((e, i) => e.sequence_number === i) ? true : kinds;
  });
  await check("responses.stream(...).finalResponse() accumulates both items", async () => {
    const stream = client.responses.stream({ model, input: [{ role: "user",
      content: [{ type: "input_text", text: "Hi" }] }], max_output_tokens: 64 });
    let deltas = "";
    stream.on("response.output_text.delta", e => { deltas += e.delta; });
    const r = await stream.finalResponse();
    return r.output_text === ANSWER && deltas === ANSWER && r.output[0].content[0].text === THOUGHT;
  });
  await check("responses: cut by max_output_tokens is status incomplete", async () => {
    const r = await client.responses.create({ model, input: "Hi", max_output_tokens: 3 });
    return r.status === "incomplete" && r.incomplete_details.reason === "max_output_tokens";
  });
  await check("responses: previous_response_id and background are 400s; GET by id is 404", async () => {
    const statuses = [];
    for (const extra of [{ previous_response_id: "resp_1" }, { background: true }])
      try { await client.responses.create({ model, input: "Hi", ...extra }); statuses.push(200); }
      catch (e) { statuses.push(e.status); }
    try { await client.responses.retrieve("resp_1"); statuses.push(200); }
    catch (e) { statuses.push(e.status); }
    return JSON.stringify(statuses) === "[400,400,404]" ? true : statuses;
  });
})();
