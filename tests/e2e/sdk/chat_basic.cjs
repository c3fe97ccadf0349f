// chat_basic.cjs: what already worked before issue 17, as the SDK sees it: models.list, a whole
// chat answer, a stream with usage, and a completion, each parsed into the SDK's typed objects.
const { client, check, collect } = require("./tap.cjs");

const messages = [{ role: "user", content: "What is 2 + 2?" }];
(async () => {
  await check("models.list names gpt-oss-tiny", async () => {
    const page = await client.models.list();
    return page.data.length === 1 && page.data[0].id === "gpt-oss-tiny";
  });
  await check("chat.completions.create: a whole answer with usage", async () => {
    const r = await client.chat.completions.create({ model: "gpt-oss-tiny", messages,
      max_tokens: 8, temperature: 0, ignore_eos: true });
    return r.object === "chat.completion" && r.choices.length === 1 &&
      r.usage.completion_tokens === 8 && r.usage.prompt_tokens > 0 &&
      r.choices[0].finish_reason === "length";
  });
  await check("chat.completions.create stream: chunks end with finish_reason and usage", async () => {
    const chunks = await collect(await client.chat.completions.create({ model: "gpt-oss-tiny",
      messages, max_tokens: 8, temperature: 0, ignore_eos: true, stream: true,
      stream_options: { include_usage: true } }));
    const finish = chunks.filter(c => c.choices.length && c.choices[0].finish_reason);
    const usage = chunks[chunks.length - 1].usage;
    return finish.length === 1 && finish[0].choices[0].finish_reason === "length" &&
      usage && usage.completion_tokens === 8;
  });
  await check("completions.create: text_completion with 5 tokens", async () => {
    const r = await client.completions.create({ model: "gpt-oss-tiny", prompt: "Hello",
      max_tokens: 5, temperature: 0, ignore_eos: true });
    return r.object === "text_completion" && r.usage.completion_tokens === 5;
  });
})();
