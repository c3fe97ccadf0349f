#!/usr/bin/env python3
"""test_export_gguf.py: scripts/export-gguf.py's output read back with llama.cpp's own GGUF
reader (gguf-py's GGUFReader and dequantizer), against the checkpoint decoded here straight from
the MXFP4 spec (value table 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, times 2^(scale-127);
byte j holds values 2j (low nibble) and 2j+1 (high), as OpenAI's reference reads them).

  tests/peers/test_export_gguf.py CHECKPOINT_DIR FILE.gguf [VOCAB_SIZE_EXPECTED_MERGES]

Checks: architecture and hyperparameters, vocabulary size, special tokens at their ids, the
merge count, every F32 tensor bit-equal to the checkpoint's bf16 values, gate/up/down experts
equal to the spec decoding (mlp1's even rows = gate, odd rows = up), q/k/v the slices of qkv.
Prints TAP. Needs GGUF_PY (the folder of llama.cpp's gguf-py) on sys.path or in the
environment.
"""
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, os.environ.get("GGUF_PY", ""))
import gguf  # noqa: E402

# The exporter, for its safetensors reader and constants (its file name has a dash).
_spec = importlib.util.spec_from_file_location(
    "export_gguf", Path(__file__).resolve().parent.parent.parent / "scripts/export-gguf.py")
export_gguf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(export_gguf)

FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)
num_tests = 0
failed = 0


def ok(description, condition):
    global num_tests, failed
    num_tests += 1
    print(f"{'ok' if condition else 'not ok'} {num_tests} - {description}")
    failed += not condition


def spec_mxfp4(blocks, scales):
    values = np.stack((FP4[blocks & 0x0F], FP4[blocks >> 4]), axis=-1)
    values = values.reshape(*blocks.shape[:-1], 32)
    return (values * np.ldexp(1.0, scales.astype(np.int32) - 127)[..., None]).reshape(
        *blocks.shape[:-2], -1)


def main():
    checkpoint, path = sys.argv[1], sys.argv[2]
    st = export_gguf.Safetensors(checkpoint)
    with open(Path(checkpoint) / "config.json") as f:
        c = json.load(f)

    r = gguf.GGUFReader(path)
    field = lambda k: r.fields[k].contents()  # noqa: E731
    tensors = {t.name: t for t in r.tensors}
    ok("architecture gpt-oss", field("general.architecture") == "gpt-oss")
    ok("block count, embedding, heads, experts",
       [field("gpt-oss.block_count"), field("gpt-oss.embedding_length"),
        field("gpt-oss.attention.head_count"), field("gpt-oss.attention.head_count_kv"),
        field("gpt-oss.expert_count"), field("gpt-oss.expert_used_count"),
        field("gpt-oss.attention.sliding_window")] ==
       [c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"],
        c["num_key_value_heads"], c["num_experts"], c["experts_per_token"], c["sliding_window"]])
    ok("YaRN factor and original context",
       abs(field("gpt-oss.rope.scaling.factor") - c["rope_scaling_factor"]) < 1e-6 and
       field("gpt-oss.rope.scaling.original_context_length") == c["initial_context_length"])
    tokens = field("tokenizer.ggml.tokens")
    ok(f"{c['vocab_size']} tokens", len(tokens) == c["vocab_size"])
    ok("token 0 is '!' (o200k rank 0, byte 0x21)", tokens[0] == "!")
    merges = field("tokenizer.ggml.merges")
    if c["vocab_size"] == export_gguf.HARMONY_VOCAB_SIZE:
        ok("special tokens at their harmony ids",
           [tokens[199998], tokens[200006], tokens[200008], tokens[200012], tokens[201087]] ==
           ["<|startoftext|>", "<|start|>", "<|message|>", "<|call|>", "<|reserved_201087|>"])
        ok("eos <|return|>", field("tokenizer.ggml.eos_token_id") == 200002)
    if len(sys.argv) > 3:
        ok(f"{sys.argv[3]} merges", len(merges) == int(sys.argv[3]))

    def gguf_f32(name):
        t = tensors[name]
        data = np.array(t.data)
        if t.tensor_type != gguf.GGMLQuantizationType.F32:
            data = gguf.quants.dequantize(data, t.tensor_type)
        return data.reshape([int(x) for x in reversed(t.shape)])

    ok("token_embd = embedding (F32, bit-equal)",
       np.array_equal(gguf_f32("token_embd.weight"), st.float32("embedding.weight")))
    ok("output = unembedding",
       np.array_equal(gguf_f32("output.weight"), st.float32("unembedding.weight")))
    q_dim = c["num_attention_heads"] * c["head_dim"]
    kv_dim = c["num_key_value_heads"] * c["head_dim"]
    all_equal = True
    for i in range(c["num_hidden_layers"]):
        b, g = f"block.{i}.", f"blk.{i}."
        qkv = st.float32(b + "attn.qkv.weight")
        all_equal &= np.array_equal(gguf_f32(g + "attn_q.weight"), qkv[:q_dim])
        all_equal &= np.array_equal(gguf_f32(g + "attn_k.weight"), qkv[q_dim:q_dim + kv_dim])
        all_equal &= np.array_equal(gguf_f32(g + "attn_v.weight"), qkv[q_dim + kv_dim:])
        all_equal &= np.array_equal(gguf_f32(g + "attn_sinks.weight"), st.float32(b + "attn.sinks"))
        all_equal &= np.array_equal(gguf_f32(g + "post_attention_norm.weight"),
                                    st.float32(b + "mlp.norm.scale"))
    ok("q/k/v are qkv's slices; sinks and norms equal, every layer", all_equal)
    experts_equal = True
    for i in range(c["num_hidden_layers"]):
        b, g = f"block.{i}.", f"blk.{i}."
        mlp1 = spec_mxfp4(st.get(b + "mlp.mlp1_weight.blocks")[1],
                          st.get(b + "mlp.mlp1_weight.scales")[1])
        mlp2 = spec_mxfp4(st.get(b + "mlp.mlp2_weight.blocks")[1],
                          st.get(b + "mlp.mlp2_weight.scales")[1])
        experts_equal &= tensors[g + "ffn_gate_exps.weight"].tensor_type == gguf.GGMLQuantizationType.MXFP4
        experts_equal &= np.array_equal(gguf_f32(g + "ffn_gate_exps.weight"), mlp1[:, 0::2])
        experts_equal &= np.array_equal(gguf_f32(g + "ffn_up_exps.weight"), mlp1[:, 1::2])
        experts_equal &= np.array_equal(gguf_f32(g + "ffn_down_exps.weight"), mlp2)
        bias1 = st.float32(b + "mlp.mlp1_bias")
        experts_equal &= np.array_equal(gguf_f32(g + "ffn_gate_exps.bias"), bias1[:, 0::2])
        experts_equal &= np.array_equal(gguf_f32(g + "ffn_up_exps.bias"), bias1[:, 1::2])
    ok("experts MXFP4: gate = mlp1 even rows, up = odd rows, down = mlp2 (spec decoding)",
       experts_equal)
    print(f"1..{num_tests}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
