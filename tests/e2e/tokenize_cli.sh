#!/usr/bin/env bash
# tokenize_cli.sh: drives the real `gptoss-bench tokenize` binary: JSONL against the reference
# tiktoken vectors, raw stdin, --count, --decode round trips, special tokens, and error messages
# that name the line and the flag. Usage: tokenize_cli.sh BUILD_DIR (prints TAP).
set -u
bin="${1:?usage: tokenize_cli.sh BUILD_DIR}/bin/gptoss-bench"
vectors=tests/fixtures/tokenizer/o200k_base-vectors.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/e2e/tap.bash
[ -x "$bin" ] || { echo "Bail out! $bin is not built"; exit 1; }

# node compares JSON (it is on every machine the project supports; python may not be)
same_ids_as_vectors() {
  "$bin" tokenize --encoding o200k_base --jsonl "$vectors" > "$tmp/ids.jsonl" &&
  node -e '
    const fs = require("fs");
    const lines = f => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
    const want = lines(process.argv[1]), got = lines(process.argv[2]);
    const bad = want.filter((w, i) => JSON.stringify(w.ids) !== JSON.stringify((got[i] || {}).ids));
    process.exit(want.length === 227 && got.length === 227 && bad.length === 0 ? 0 : 1);
  ' "$vectors" "$tmp/ids.jsonl"
}
tap_ok "jsonl: all 227 reference vectors" same_ids_as_vectors

decodes_back() {
  "$bin" tokenize --encoding o200k_base --decode --jsonl "$tmp/ids.jsonl" > "$tmp/text.jsonl" &&
  node -e '
    const fs = require("fs");
    const lines = f => fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
    const want = lines(process.argv[1]), got = lines(process.argv[2]);
    process.exit(want.every((w, i) => got[i] && w.text === got[i].text) ? 0 : 1);
  ' "$vectors" "$tmp/text.jsonl"
}
tap_ok "jsonl --decode: the ids decode back to the texts" decodes_back

raw_ids() { [ "$(printf 'Hello, World!' | "$bin" tokenize --encoding o200k_base)" = "13225 11 5922 0" ]; }
tap_ok "raw stdin: ids on one line" raw_ids

raw_count() { [ "$(printf 'Hello, World!' | "$bin" tokenize --count)" = "4" ]; }
tap_ok "raw --count" raw_count

raw_round_trip() {
  printf 'caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 <|start|>\n' > "$tmp/in.txt"
  "$bin" tokenize < "$tmp/in.txt" | "$bin" tokenize --decode > "$tmp/out.txt" && cmp -s "$tmp/in.txt" "$tmp/out.txt"
}
tap_ok "raw --decode round trip" raw_round_trip

special_allowed() { [ "$(printf '<|start|>user' | "$bin" tokenize --allow-special)" = "200006 1428" ]; }
tap_ok "--allow-special recognises <|start|>" special_allowed

special_plain() { out=$(printf '<|start|>' | "$bin" tokenize) && [ -n "$out" ] && ! grep -qw 200006 <<< "$out"; }
tap_ok "special-token text is plain text by default" special_plain

bad_json_names_line() {
  printf '{"text": "a"}\n{"text": \n' > "$tmp/bad.jsonl"
  ! "$bin" tokenize --jsonl "$tmp/bad.jsonl" > /dev/null 2> "$tmp/err" && grep -q "bad.jsonl:2: invalid JSON" "$tmp/err"
}
tap_ok "invalid JSON line: error names the line" bad_json_names_line

unknown_id_names_line() {
  printf '{"ids": [1]}\n{"ids": [1]}\n{"ids": [201088]}\n' > "$tmp/ids.jsonl"
  ! "$bin" tokenize --decode --jsonl "$tmp/ids.jsonl" > /dev/null 2> "$tmp/err" &&
    grep -q "ids.jsonl:3: token id 201088 is not in o200k_harmony" "$tmp/err"
}
tap_ok "unknown id: error names the line and the id" unknown_id_names_line

unknown_flag_named() { ! "$bin" tokenize --frobnicate 2> "$tmp/err" < /dev/null && grep -q "'--frobnicate'" "$tmp/err"; }
tap_ok "unknown flag: error names it" unknown_flag_named

bad_encoding_named() { ! "$bin" tokenize --encoding cl100k 2> "$tmp/err" < /dev/null && grep -q "cl100k" "$tmp/err"; }
tap_ok "unknown encoding: error names it and the choices" bad_encoding_named

tap_done
