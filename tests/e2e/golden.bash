# golden.bash: sourced by the e2e scripts that check `gptoss-engine generate` against the golden
# checkpoints (tests/fixtures/gptoss-tiny/{a,b}: golden.json's prompt and greedy ids, the float64
# reference's prompt logits in logits.npy). Needs $tmp (a scratch folder) and node.

# Runs binary's generate on fixture (extra flags after it) and compares: the prompt logits'
# relative RMS error at most tol, finish "length", and, when ids is "same", the greedy ids equal
# the reference's.
matches_golden() {  # binary, tol, ids (same | any), fixture, extra generate flags...
  local bin=$1 tol=$2 ids_rule=$3 dir=tests/fixtures/gptoss-tiny/$4
  shift 4
  local ids n out
  ids=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).prompt_ids.join(","))' "$dir/golden.json")
  n=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).greedy_ids.length)' "$dir/golden.json")
  out=$tmp/$(basename "$dir")-$$-$RANDOM
  "$bin" generate --model "$dir" --prompt-ids "$ids" --max-tokens "$n" --ignore-eos \
    --logits-out "$out.npy" "$@" > "$out.json" || return 1
  node -e '
    const fs = require("fs");
    const npy = f => { const b = fs.readFileSync(f); const h = b.readUInt16LE(8);
                       return new Float32Array(b.buffer.slice(b.byteOffset + 10 + h, b.byteOffset + b.length)); };
    const [dir, ours_json, ours_npy, tol, ids_rule] = process.argv.slice(1);
    const golden = JSON.parse(fs.readFileSync(dir + "/golden.json"));
    const ours = JSON.parse(fs.readFileSync(ours_json));
    const want = npy(dir + "/logits.npy"), got = npy(ours_npy);
    let diff = 0, norm = 0;
    for (let i = 0; i < want.length; i++) { diff += (got[i] - want[i]) ** 2; norm += want[i] ** 2; }
    const rel = Math.sqrt(diff / norm);
    console.log("# " + dir + " " + process.argv.slice(6).join(" ") + ": logits rel_rms " + rel.toPrecision(3));
    const ok = got.length === want.length && rel <= Number(tol) && ours.finish_reason === "length" &&
               (ids_rule !== "same" || JSON.stringify(ours.output_ids) === JSON.stringify(golden.greedy_ids));
    process.exit(ok ? 0 : 1);' "$dir" "$out.json" "$out.npy" "$tol" "$ids_rule" "$@"
}
