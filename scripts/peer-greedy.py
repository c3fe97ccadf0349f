#!/usr/bin/env python3
"""peer-greedy.py: greedy generation from our engine against llama.cpp's on the same weights.

  scripts/peer-greedy.py --checkpoint DIR --gguf FILE.gguf --llama-server BIN
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
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

NEAR_TIE = 0.05
TEXT_PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
    "In 1869 Dmitri Mendeleev published a periodic table of the chemical elements.",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=600):
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


class LlamaServer:
    def __init__(self, binary, gguf, threads, log_path):
        self.port = free_port()
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [binary, "-m", gguf, "--host", "127.0.0.1", "--port", str(self.port), "-t",
             str(threads), "-c", "4096", "-np", "1", "-ctk", "f32", "-ctv", "f32", "-fa", "off",
             "--no-warmup"], stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"peer-greedy: llama-server exited with {self.process.returncode}; "
                         f"log: {log_path}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        sys.exit(f"peer-greedy: llama-server did not become ready in 120 s; log: {log_path}")

    def generate(self, prompt_ids, num_tokens):
        reply = post(f"http://127.0.0.1:{self.port}/completion", {
            "prompt": prompt_ids, "n_predict": num_tokens, "temperature": 0, "top_k": 1,
            "ignore_eos": True, "n_probs": 2, "cache_prompt": False, "return_tokens": True})
        tops = [[(p["id"], p["logprob"]) for p in step["top_logprobs"]]
                for step in reply.get("completion_probabilities", [])]
        return reply["tokens"], tops

    def stop(self):
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


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
    parser.add_argument("--llama-server", required=True)
    here = Path(__file__).resolve().parent.parent
    parser.add_argument("--engine", default=str(here / "build/bin/gptoss-engine"))
    parser.add_argument("--tokenizer", default=str(here / "build/bin/gptoss-bench"))
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    vocab_size = json.loads((Path(args.checkpoint) / "config.json").read_text())["vocab_size"]
    work = tempfile.mkdtemp(prefix="peer-greedy-")
    server = LlamaServer(args.llama_server, args.gguf, args.threads, f"{work}/llama-server.log")
    failures = 0
    try:
        cases = prompts(args.checkpoint, vocab_size, args.prompts, args.tokenizer)
        for n, (name, prompt_ids) in enumerate(cases, 1):
            mine = ours(args.engine, args.checkpoint, prompt_ids, args.tokens, args.threads)
            theirs, their_tops = server.generate(prompt_ids, args.tokens)
            if mine == theirs:
                print(f"ok {n} - {name}: {len(mine)} greedy ids equal")
                continue
            at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                      min(len(mine), len(theirs)))
            npy = f"{work}/logits.npy"
            ours(args.engine, args.checkpoint, prompt_ids + mine[:at], 1, args.threads, npy)
            our_top = top2(np.load(npy)[-1])
            their_top = their_tops[at] if at < len(their_tops) else []
            our_gap = our_top[0][1] - our_top[1][1]
            their_gap = their_top[0][1] - their_top[1][1] if len(their_top) == 2 else float("inf")
            tie = min(our_gap, their_gap) < NEAR_TIE
            failures += not tie
            print(f"{'ok' if tie else 'not ok'} {n} - {name}: part at output position {at} "
                  f"({'near-tie' if tie else 'NOT a near-tie'})")
            print(f"#   ours:      {mine[at:at + 4]}... top-2 (id, logit) {our_top}, gap {our_gap:.4f}")
            print(f"#   llama.cpp: {theirs[at:at + 4]}... top-2 (id, logprob) {their_top}, "
                  f"gap {their_gap:.4f}")
        print(f"1..{len(cases)}")
    finally:
        server.stop()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
