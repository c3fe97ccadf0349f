// bench-tiktoken.mjs: the reference side of the tokenizer benchmark: encoding throughput of the
// npm package `tiktoken` (the WASM build of OpenAI's tiktoken), o200k_base, encode_ordinary, on
// the same corpus file and with the same warm-up and repetitions as tests/bench/bench_tokenizer.c,
// printed as the same "name value" lines. Times encode_ordinary only (the text is decoded from
// UTF-8 once, before timing). Owns no files; it must not install anything (bench.sh does).
//
//   node scripts/bench-tiktoken.mjs CORPUS_FILE [REPS]   (tiktoken from build/npm, see
//   tiktoken-npm.mjs)
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { loadTiktoken } from "./tiktoken-npm.mjs";

function die(msg) {
  process.stderr.write(`bench-tiktoken: ${msg}\n`);
  process.exit(1);
}

const [corpusPath, repsArg] = process.argv.slice(2);
if (!corpusPath) die("usage: node scripts/bench-tiktoken.mjs CORPUS_FILE [REPS]");
const reps = repsArg === undefined ? 5 : Number(repsArg);
if (!Number.isInteger(reps) || reps < 1 || reps > 1000) die(`REPS '${repsArg}' must be 1..1000`);

const { tiktoken, version } = loadTiktoken("bench-tiktoken");

let bytes;
try {
  bytes = readFileSync(corpusPath);
} catch (e) {
  die(`${corpusPath}: ${e.message}; build it with scripts/bench-corpus.sh`);
}
const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);

const enc = tiktoken.get_encoding("o200k_base");
const numTokens = enc.encode_ordinary(text).length;  // warm-up, untimed
const mb = bytes.length / 1e6;
const mbS = [];
for (let r = 0; r < reps; r++) {
  const t0 = performance.now();
  const ids = enc.encode_ordinary(text);
  const t1 = performance.now();
  if (ids.length !== numTokens) die(`rep ${r}: ${ids.length} tokens, warm-up ${numTokens}`);
  mbS.push(mb / ((t1 - t0) / 1e3));
}
enc.free();
mbS.sort((a, b) => a - b);
const median = reps % 2 ? mbS[(reps - 1) / 2] : (mbS[reps / 2 - 1] + mbS[reps / 2]) / 2;

console.log(`impl tiktoken-npm-${version}`);
console.log("encoding o200k_base");
console.log(`bytes ${bytes.length}`);
console.log(`mb ${mb.toFixed(3)}`);
console.log(`tokens ${numTokens}`);
console.log(`reps ${reps}`);
console.log(`best_mb_s ${mbS[reps - 1].toFixed(3)}`);
console.log(`median_mb_s ${median.toFixed(3)}`);
