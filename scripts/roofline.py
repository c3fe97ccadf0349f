#!/usr/bin/env python3
"""roofline.py: the speed model of docs/PERF.md's "Roofline" for gpt-oss-120b and -20b on one
H100 SXM or H200: bytes and FLOPs per decode step by batch size, and each study workload's floor
(all requests at t=0, vLLM-style continuous batching simulated step by step: every step reads the
weights of the experts its batch touches, uniform routing, and every running sequence's KV; a step
takes max(bytes / bandwidth, FLOPs / peak); KV is bf16 with window-sized sliding layers; at most
1024 sequences and what 90% of memory leaves after the weights and 4 GB of scratch). With
--design it applies the CUDA design's targets instead of the peaks (decode at 1.5x the byte floor,
400 TFLOP/s). Shapes from the model spec (spec/gptoss-model.md); peaks from NVIDIA's datasheets.
ShareGPT lengths come from datasets/sharegpt-synth.json through `gptoss-bench tokenize`, filtered
as `vllm bench serve` filters them (the first 1000 pairs). Prints Markdown tables; writes nothing.

  scripts/roofline.py [--design] [--bench build/bin/gptoss-bench]
"""
import argparse, json, os, subprocess, tempfile

HW = {"H100 SXM": (3.35e12, 989.4e12, 80e9), "H200": (4.8e12, 989.4e12, 141e9)}
KV_BYTES = 2 * 8 * 64 * 2  # K and V, 8 KV heads x 64, bf16: per token per layer


def model(name):
    layers, experts = (36, 128) if name == "120b" else (24, 32)
    d = inter = 2880
    vocab = 201088
    expert = (2 * inter * d) // 2 + 2 * inter * (d // 32) + (inter * d) // 2 + inter * (d // 32) \
        + (2 * inter + d) * 2  # mlp1 + mlp2: FP4 blocks, E8M0 scales, bf16 biases
    m = dict(layers=layers, experts=experts, full=layers // 2, slide=layers - layers // 2,
             expert=expert, attn=26553024 * 2, router=(d * experts + experts) * 2,
             unembed=vocab * d * 2,
             active=layers * (26553024 + d * experts + 4 * 3 * inter * d) + vocab * d)
    m["weights"] = layers * (m["attn"] + m["router"] + experts * expert) + m["unembed"]
    return m


def attended(m, ctx):  # key positions one token attends to, summed over layers
    return m["full"] * ctx + m["slide"] * min(ctx, 128)


def step(m, batch, contexts, prefill_flops=0.0):
    touched = m["experts"] * (1 - (1 - 4 / m["experts"]) ** batch)
    weights = m["layers"] * (m["attn"] + m["router"] + touched * m["expert"]) + m["unembed"]
    kv = sum(KV_BYTES * attended(m, c) for c in contexts)
    flops = prefill_flops + batch * 2 * m["active"] + sum(4 * 64 * 64 * attended(m, c)
                                                         for c in contexts)
    return touched, weights, kv, flops


def prefill_flops(m, prompt):
    stride = max(1, prompt // 16)
    attn = sum(4 * 64 * 64 * attended(m, c) for c in range(0, prompt, stride)) * stride
    return prompt * 2 * m["active"] + attn


def simulate(m, hw, requests, max_seqs=1024):
    bw, peak, memory = hw
    capacity = memory * 0.9 - m["weights"] - 4e9
    ring = m["slide"] * 128 * KV_BYTES
    waiting, running, used, seconds, steps = list(requests), [], 0.0, 0.0, 0
    while waiting or running:
        flops = 0.0
        while waiting and len(running) < max_seqs:
            prompt, out = waiting[0]
            need = (prompt + out) * m["full"] * KV_BYTES + ring
            if used + need > capacity and running:
                break
            waiting.pop(0)
            used += need
            flops += prefill_flops(m, prompt)
            running.append([prompt, 0, out, need])
        _, weights, kv, flops = step(m, len(running), [r[0] + r[1] for r in running], flops)
        seconds += max((weights + kv) / bw, flops / peak)
        steps += 1
        for r in running:
            r[1] += 1
        used -= sum(r[3] for r in running if r[1] >= r[2])
        running = [r for r in running if r[1] < r[2]]
    return seconds, steps


def sharegpt_lengths(bench):
    data = json.load(open("datasets/sharegpt-synth.json"))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for c in data:
            if len(c["conversations"]) >= 2:
                for turn in c["conversations"][:2]:
                    f.write(json.dumps({"text": turn["value"]}) + "\n")
    out = subprocess.run([bench, "tokenize", "--count", "--jsonl", f.name], check=True,
                         capture_output=True, text=True).stdout.split()
    os.unlink(f.name)
    counts = [json.loads(x)["count"] for x in out]
    pairs = [(p, o) for p, o in zip(counts[::2], counts[1::2])
             if p >= 4 and o >= 4 and p <= 1024 and p + o <= 2048]
    return pairs[:1000]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--design", action="store_true")
    ap.add_argument("--bench", default="build/bin/gptoss-bench")
    a = ap.parse_args()
    hw = {k: (bw / 1.5, 400e12, mem) if a.design else (bw, peak, mem)
          for k, (bw, peak, mem) in HW.items()}
    print("| model | GPU | batch | experts read per layer | weight GB | KV GB (1K context) | "
          "TFLOP | ms per step | tok/s |\n|---|---|---|---|---|---|---|---|---|")
    for name in ("120b", "20b"):
        m = model(name)
        for g, (bw, peak, _) in hw.items():
            for b in (1, 8, 32, 64, 128, 256, 1024):
                touched, w, kv, fl = step(m, b, [1024] * b)
                t = max((w + kv) / bw, fl / peak)
                print(f"| {name} | {g} | {b} | {touched:.1f} | {w / 1e9:.1f} | {kv / 1e9:.1f} | "
                      f"{fl / 1e12:.2f} | {t * 1e3:.2f} | {b / t:,.0f} |")
    pairs = sharegpt_lengths(a.bench)
    workloads = [(f"ShareGPT x{len(pairs)} ({sum(p for p, _ in pairs):,} in / "
                  f"{sum(o for _, o in pairs):,} out)", pairs),
                 ("random 128/4 x1000", [(128, 4)] * 1000),
                 ("random 2000/100 x500", [(2000, 100)] * 500),
                 ("random 4000/200 x500", [(4000, 200)] * 500),
                 ("random 32000/100 x100", [(32000, 100)] * 100)]
    print("\n| model | GPU | workload | seconds | total tok/s | steps |\n|---|---|---|---|---|---|")
    for name in ("120b", "20b"):
        m = model(name)
        for g, h in hw.items():
            for w, reqs in workloads:
                s, n = simulate(m, h, reqs)
                print(f"| {name} | {g} | {w} | {s:.1f} | {sum(p + o for p, o in reqs) / s:,.0f} "
                      f"| {n} |")


if __name__ == "__main__":
    main()
