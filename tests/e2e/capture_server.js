// capture_server.js: an independent OpenAI-style server for the e2e tests that check what
// `gptoss-bench bench` sends. Appends each POST to the log (argv[2]) as one JSON line
// {"headers": {...}, "body": {...}} and streams two tokens ("a", then "b" with finish_reason
// "length"), a usage chunk and [DONE], in the chat format when the path names chat, else the
// completions one. Prints "listening PORT" once it listens on 127.0.0.1.
const http = require("http"), fs = require("fs");
const log = process.argv[2];
http.createServer((req, res) => {
  let body = "";
  req.on("data", c => (body += c));
  req.on("end", () => {
    if (req.method !== "POST") { res.writeHead(404); res.end(); return; }
    fs.appendFileSync(log, JSON.stringify({headers: req.headers, body: JSON.parse(body)}) + "\n");
    const chat = req.url.includes("chat");
    res.writeHead(200, {"Content-Type": "text/event-stream"});
    for (const t of ["a", "b"]) {
      const choice = chat ? {index: 0, delta: {content: t}} : {index: 0, text: t};
      choice.finish_reason = t === "b" ? "length" : null;
      res.write("data: " + JSON.stringify({choices: [choice]}) + "\n\n");
    }
    res.write('data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}\n\n');
    res.end("data: [DONE]\n\n");
  });
}).listen(0, "127.0.0.1", function () { console.log("listening " + this.address().port); });
