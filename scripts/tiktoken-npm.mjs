// tiktoken-npm.mjs: loads the reference tokenizer, the npm package `tiktoken` (the WASM build of
// OpenAI's tiktoken), for the node scripts (bench-tiktoken.mjs, make-extra-vectors.mjs). It is
// looked up in $TIKTOKEN_NPM_DIR (default build/npm, as installed by
// `npm install --prefix build/npm tiktoken`); it must not install anything itself.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

// Returns { tiktoken, version, dir } or exits with a message that names the fix.
export function loadTiktoken(prog) {
  const dir = resolve(process.env.TIKTOKEN_NPM_DIR || "build/npm");
  try {
    const tiktoken = createRequire(join(dir, "noop.cjs"))("tiktoken");
    const pkg = JSON.parse(readFileSync(join(dir, "node_modules/tiktoken/package.json"), "utf8"));
    return { tiktoken, version: pkg.version, dir };
  } catch (e) {
    process.stderr.write(`${prog}: cannot load tiktoken from ${dir} (${e.code || e.message}); ` +
                         `install it with: npm install --prefix ${dir} tiktoken\n`);
    process.exit(1);
  }
}
