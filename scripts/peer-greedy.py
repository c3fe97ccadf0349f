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
top-2 gap is below 0.05, or when the swap it takes is within the engines' measured noise: at
each output position both engines see the same context, llama.cpp's top-2 gap minus ours for the
same two ids is their disagreement; the largest disagreement over the positions where they still
chose alike (all prompts of the run, at least MIN_NOISE_SAMPLES of them) bounds what rounding
does on these weights, and a parting whose disagreement is no larger is a coin toss, not a bug
(llama.cpp's 8-bit activations for the MXFP4 experts move logits by several 1e-2 on random
weights). The near-tie verdicts need the two engines to be the same model first: when the
median disagreement exceeds AGREEMENT_MAX (0.04-0.05 on the golden weights; a sign error in
one weight matrix makes it 0.26) the run fails as a whole and no parting is excused.

A wider logit gap can still come from a near-tie one step back: an expert choice of the router.
llama.cpp multiplies the MXFP4 experts with 8-bit activations, which moves router logits by
about 1e-2, so a token whose k-th and (k+1)-th router logits are closer than ROUTE_NEAR_TIE may
take the other expert there. For such a divergence the report reads our router margins over the
context (`generate --route-margins-out`) and, for the closest few choices, re-runs our engine
with that one choice flipped (`generate --flip-route LAYER:POSITION`): when ours then predicts
llama.cpp's token, the divergence is explained by that router near-tie, and the report says how
many of llama.cpp's following tokens ours then reproduces. Prints TAP: a prompt passes when the
sequences are equal or part at a near-tie of either kind.
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
AGREEMENT_MAX = 0.1
MIN_NOISE_SAMPLES = 16
ROUTE_NEAR_TIE = 0.05
AGREEMENT_MAX = 0.1
MIN_NOISE_SAMPLES = 16
ROUTE_FLIPS_TRIED = 4
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


def ours(engine, checkpoint, prompt_ids, num_tokens, threads, *flags):
    command = [engine, "generate", "--model", checkpoint, "--load-format", "safetensors",
               "--weight-format", "f32", "--prompt-ids", ",".join(map(str, prompt_ids)),
               "--max-tokens", str(num_tokens), "--ignore-eos", "--threads", str(threads),
               "--device", "cpu", *flags]
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


def route_flip(args, context, margins, theirs_after):
    """The closest router choice over the context whose flip makes ours predict llama.cpp's
    token: (layer, position, margin, llama.cpp tokens then reproduced), or None."""
    layers, positions = np.unravel_index(np.argsort(margins, axis=None), margins.shape)
    for layer, position in list(zip(layers, positions))[:ROUTE_FLIPS_TRIED]:
        margin = float(margins[layer, position])
        if margin >= ROUTE_NEAR_TIE:
            break
        flipped = ours(args.engine, args.checkpoint, context, len(theirs_after), args.threads,
                       "--flip-route", f"{layer}:{position}")
        if flipped[0] == theirs_after[0]:
            same = next((i for i, (a, b) in enumerate(zip(flipped, theirs_after)) if a != b),
                        len(theirs_after))
            return int(layer), int(position), margin, same
    return None


def compare(args, work, prompt_ids, theirs, their_tops):
    """Ours against llama.cpp's ids for one prompt: our ids, the first output position where
    they part (or the last one), our context up to there with its router margins and our
    logits at its end, and at every output position up to there the disagreement: llama.cpp's
    top-2 gap minus ours for the same two ids."""
    mine = ours(args.engine, args.checkpoint, prompt_ids, args.tokens, args.threads)
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), len(mine) - 1)
    context = prompt_ids + mine[:at]
    logits_npy, margins_npy = f"{work}/logits.npy", f"{work}/margins.npy"
    ours(args.engine, args.checkpoint, context, 1, args.threads, "--logits-out", logits_npy,
         "--route-margins-out", margins_npy)
    logits = np.load(logits_npy)
    disagreement = []
    for j in range(at + 1):
        row = logits[len(prompt_ids) - 1 + j]
        (a, their_a), (b, their_b) = their_tops[j]
        disagreement.append((their_a - their_b) - float(row[a] - row[b]))
    return {"mine": mine, "at": at, "context": context, "last_logits": logits[-1],
            "margins": np.load(margins_npy), "disagreement": np.array(disagreement)}


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
    cases = prompts(args.checkpoint, vocab_size, args.prompts, args.tokenizer)
    peer = llama_greedy(args.llama_greedy, args.gguf, args.threads, cases, args.tokens)
    compared = [compare(args, work, prompt_ids, theirs, their_tops)
                for (_, prompt_ids), (theirs, their_tops) in zip(cases, peer)]
    agreeing = np.abs(np.concatenate([c["disagreement"][:c["at"] + (c["mine"] == theirs)]
                                      for c, (theirs, _) in zip(compared, peer)]))
    median = float(np.median(agreeing)) if agreeing.size else float("inf")
    largest = float(agreeing.max()) if agreeing.size else 0.0
    noise = largest if agreeing.size >= MIN_NOISE_SAMPLES else 0.0
    same_model = median <= AGREEMENT_MAX
    print(f"{'ok' if same_model else 'not ok'} 1 - the engines agree where they chose alike: "
          f"median disagreement {median:.4f} (at most {AGREEMENT_MAX}), max {largest:.4f} over "
          f"{agreeing.size} positions"
          + ("" if noise else f" (too few for a noise bound: {MIN_NOISE_SAMPLES} needed)"))
    failures = 0 if same_model else 1
    for n, ((name, _), (theirs, their_tops), c) in enumerate(zip(cases, peer, compared), 2):
        mine, at = c["mine"], c["at"]
        if mine == theirs:
            print(f"ok {n} - {name}: {len(mine)} greedy ids equal")
            continue
        our_top = top2(c["last_logits"])
        their_top = their_tops[at]
        our_gap = our_top[0][1] - our_top[1][1]
        their_gap = their_top[0][1] - their_top[1][1]
        swap = abs(c["disagreement"][at])
        tie = same_model and (min(our_gap, their_gap) < NEAR_TIE or swap <= noise)
        flip = None
        if same_model and not tie:
            flip = route_flip(args, c["context"], c["margins"], theirs[at:])
        verdict = ("near-tie" if tie else "router near-tie" if flip else "NOT a near-tie")
        failures += not (tie or flip)
        print(f"{'ok' if tie or flip else 'not ok'} {n} - {name}: part at output position {at} "
              f"({verdict}; disagreement {swap:.4f})")
        if flip:
            layer, position, margin, same = flip
            print(f"#   router: layer {layer}, context position {position}, margin {margin:.4f}; "
                  f"flipped there, ours gives llama.cpp's next {same} of {len(theirs) - at} ids")
        print(f"#   ours:      {mine[at:at + 4]}... top-2 (id, logit) {our_top}, gap {our_gap:.4f}")
        print(f"#   llama.cpp: {theirs[at:at + 4]}... top-2 (id, logit) {their_top}, "
              f"gap {their_gap:.4f}")
    print(f"1..{len(cases) + 1}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
