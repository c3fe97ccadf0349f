// tap.cjs: the checks of one SDK script, as TAP lines without numbers (openai_sdk.bash numbers
// them): check(description, async fn) passes when fn resolves to true; a throw is a failure with
// its message. The client is the official SDK pointed at the URL given as the last argument.
const OpenAI = require("openai");

const url = process.argv[process.argv.length - 1];
const client = new OpenAI({ baseURL: url + "/v1", apiKey: "none", maxRetries: 0, timeout: 120e3 });

async function check(description, fn) {
  try {
    const ok = await fn();
    console.log(`${ok === true ? "ok" : "not ok"} - ${description}`);
    if (ok !== true) console.log(`  got: ${JSON.stringify(ok)}`);
  } catch (e) {
    console.log(`not ok - ${description}`);
    console.log(`  threw: ${e && e.stack ? e.stack.split("\n").slice(0, 3).join(" | ") : e}`);
  }
}

// Every chunk of a stream, in order.
async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

module.exports = { OpenAI, client, url, check, collect };
