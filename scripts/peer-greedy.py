#!/usr/bin/env python3
"""peer-greedy.py: greedy generation from our engine against llama.cpp's on the same weights.

  scripts/peer-greedy.py --checkpoint DIR --gguf FILE.gguf --llama-greedy BIN
                         [--engine build/bin/gptoss-engine] [--tokens 32] [--prompts N]

For every prompt of a seeded set (the checkpoint's golden.json prompt when it has one, token-id
prompts drawn from its vocabulary, and for the full o200k_harmony vocabulary a few English and
code sentences tokenized by `gptoss-bench tokenize`), both engines decode --tokens tokens
greedily with EOS ignored: ours with `gptoss-engine generate --weight-format f32` (float32
weights and activations), llama.cpp's through `llama-server` /completion with the prompt as token
ids, temperature 0, a float32 KV cache and no flash attention. Where the two id sequences part,
the report names the position and both engines' top-2 there (ours: logits from
`generate --logits-out` on the prompt plus the common prefix; llama.cpp's: its top-2 log-
probabilities, whose difference is the logit gap) and calls it a near-tie when either engine's
top-2 gap is below 0.05 (float32 sums of a different order move logits by about 1e-5 relative;
a gap that small is a coin toss, not a bug). Prints TAP: a prompt passes when the sequences are
equal or part at a near-tie.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

NEAR_TIE = 0.05
TEXT_PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
    "In 1869 Dmitri Mendeleev published a periodic table of the chemical elements.",
]


def llama_greedy(binary, gguf, threads, cases, num_tokens):
    """[(ids, top2)] per case from tests/peers/llama_greedy.cpp (libllama's own decoding)."""
    lines = "".join(",".join(map(str, ids)) + "\n" for _, ids in cases)
    out = subprocess.run([binary, gguf, str(threads), str(num_tokens)], input=lines, check=True,
                         capture_output=True, text=True).stdout
    replies = [json.loads(line) for line in out.splitlines()]
    return [(r["ids"], [[(t[0], t[1]), (t[2], t[3])] for t in r["top2"]]) for r in replies]


def ours(engine, checkpoint, prompt_ids, num_tokens, threads, logits_out=None):
    command = [engine, "generate", "--model", checkpoint, "--load-format", "safetensors",
               "--weight-format", "f32", "--prompt-ids", ",".join(map(str, prompt_ids)),
               "--max-tokens", str(num_tokens), "--ignore-eos", "--threads", str(threads)]
    if logits_out:
        command += ["--logits-out", logits_out]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["output_ids"]


def prompts(checkpoint, vocab_size, count, tokenizer):
    rng = random.Random(20261203)
    found = []
    golden = Path(checkpoint) / "golden.json"
    if golden.exists():
        found.append(("golden.json prompt", json.loads(golden.read_text())["prompt_ids"]))
    if vocab_size == 201088 and tokenizer:
        for text in TEXT_PROMPTS:
            ids = subprocess.run([tokenizer, "tokenize"], input=text, check=True,
                                 capture_output=True, text=True).stdout.split()
            found.append((f"text {text[:24]!r}...", [int(i) for i in ids]))
    text_vocab = min(vocab_size, 199998)  # token-id prompts avoid the special tokens
    while len(found) < count:
        length = rng.randint(4, 48)
        found.append((f"random ids, {length} tokens",
                      [rng.randrange(text_vocab) for _ in range(length)]))
    return found[:count]


def top2(logits_row):
    order = np.argsort(-logits_row, kind="stable")[:2]
    return [(int(i), float(logits_row[i])) for i in order]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--llama-greedy", required=True)
    here = Path(__file__).resolve().parent.parent
    parser.add_argument("--engine", default=str(here / "build/bin/gptoss-engine"))
    parser.add_argument("--tokenizer", default=str(here / "build/bin/gptoss-bench"))
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    vocab_size = json.loads((Path(args.checkpoint) / "config.json").read_text())["vocab_size"]
    work = tempfile.mkdtemp(prefix="peer-greedy-")
    failures = 0
    cases = prompts(args.checkpoint, vocab_size, args.prompts, args.tokenizer)
    peer = llama_greedy(args.llama_greedy, args.gguf, args.threads, cases, args.tokens)
    for n, ((name, prompt_ids), (theirs, their_tops)) in enumerate(zip(cases, peer), 1):
        mine = ours(args.engine, args.checkpoint, prompt_ids, args.tokens, args.threads)
        if mine == theirs:
            print(f"ok {n} - {name}: {len(mine)} greedy ids equal")
            continue
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                  min(len(mine), len(theirs)))
        npy = f"{work}/logits.npy"
        ours(args.engine, args.checkpoint, prompt_ids + mine[:at], 1, args.threads, npy)
        our_top = top2(np.load(npy)[-1])
        their_top = their_tops[at]
        our_gap = our_top[0][1] - our_top[1][1]
        their_gap = their_top[0][1] - their_top[1][1]
        tie = min(our_gap, their_gap) < NEAR_TIE
        failures += not tie
        print(f"{'ok' if tie else 'not ok'} {n} - {name}: part at output position {at} "
              f"({'near-tie' if tie else 'NOT a near-tie'})")
        print(f"#   ours:      {mine[at:at + 4]}... top-2 (id, logit) {our_top}, gap {our_gap:.4f}")
        print(f"#   llama.cpp: {theirs[at:at + 4]}... top-2 (id, logit) {their_top}, "
              f"gap {their_gap:.4f}")
    print(f"1..{len(cases)}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
