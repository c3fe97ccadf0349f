#!/usr/bin/env python3
"""export-gguf.py: a GPT-OSS checkpoint folder in OpenAI's original layout (config.json +
*.safetensors: bf16 or f32 dense tensors, MXFP4 expert blocks and scales; what
`gptoss-engine export-checkpoint` writes and the golden fixtures are) -> one GGUF file that
llama.cpp loads as architecture `gpt-oss`.

Written with llama.cpp's own GGUF writer (gguf-py, from the llama.cpp source that
scripts/peer-llamacpp.sh unpacks; --gguf-py or GGUF_PY name its folder) and Debian's numpy.

  scripts/export-gguf.py CHECKPOINT_DIR OUT.gguf [--dense f32|bf16|q8_0]
                         [--vocab datasets/tokenizer/o200k_base.tiktoken] [--gguf-py DIR]
                         [--utf8-ban FILE.json]

--utf8-ban also writes {"logit_bias": {"ID": -100, ...}} for every token whose bytes are not
valid UTF-8 on their own (1,562 of o200k_base's), a request body for `gptoss-bench bench
--extra-body @FILE`: llama-server parses each answer as text and ends a stream with an error
event on invalid UTF-8, which random weights produce; with those tokens banned every answer is
valid UTF-8.

What goes in:
- The vocabulary: o200k_harmony as llama.cpp's "gpt2" BPE with pre-tokenizer "gpt-4o": the
  199,998 o200k_base tokens (bytes from OpenAI's tiktoken file, spelt with GPT-2's byte-to-unicode
  table), the merges rebuilt from the ranks (a token's merge is the last step of byte-pair
  encoding its own bytes with the lower ranks only), and the 1,090 harmony special tokens at ids
  199998..201087 as control tokens. A checkpoint with a smaller vocabulary (the golden fixtures:
  1,024 or 2,048) gets the first vocab_size tokens and the merges among them.
- A minimal harmony chat template (<|start|>ROLE<|message|>CONTENT<|end|>, then
  <|start|>assistant): the benchmarks send token ids or raw completions text, never chat.
- Experts: the checkpoint's MXFP4 bytes, repacked into ggml's block order (scale byte, then 16
  bytes whose low nibbles are values 0..15 and high nibbles values 16..31); mlp1's interleaved
  rows split into gate (even rows) and up (odd rows), as OpenAI's SwiGLU reads them.
- Dense matrices (embedding, qkv split into q/k/v, out, router, unembedding) as F32 (exact for a
  bf16 checkpoint), BF16 or Q8_0; norms, biases and sinks as F32.
- Hyperparameters from config.json: YaRN (factor, original context, beta fast = rope_ntk_beta,
  beta slow = rope_ntk_alpha), the sliding window on even layers, RMS epsilon 1e-5.
"""
import argparse
import base64
import json
import mmap
import os
import struct
import sys
from pathlib import Path

import numpy as np

HARMONY_FIRST_SPECIAL = 199998
HARMONY_VOCAB_SIZE = 201088
HARMONY_NAMED_SPECIALS = {
    199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>",
    200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
    200008: "<|message|>", 200012: "<|call|>",
}
CHAT_TEMPLATE = (
    "{% for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|start|>assistant{% endif %}")
RMS_EPS = 1e-5


def import_gguf(folder):
    if folder:
        sys.path.insert(0, folder)
    try:
        import gguf  # noqa: PLC0415 (its folder is only known at run time)
    except ImportError as e:
        sys.exit(f"export-gguf: cannot import gguf-py ({e}): run scripts/peer-llamacpp.sh, which "
                 "unpacks llama.cpp's source with gguf-py, or pass --gguf-py DIR")
    return gguf


def gpt2_byte_to_unicode():
    """GPT-2's reversible map from the 256 byte values to printable characters: printable
    Latin-1 bytes stand for themselves, the others take code points from 256 on, in order."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def read_tiktoken(path):
    """rank -> token bytes, from a .tiktoken file ("base64 rank" per line)."""
    ranks = {}
    with open(path, "rb") as f:
        for line_number, line in enumerate(f, 1):
            if not line.strip():
                continue
            token, rank = line.split()
            ranks[int(rank)] = base64.b64decode(token)
    if sorted(ranks) != list(range(len(ranks))):
        sys.exit(f"export-gguf: {path}: ranks are not 0..{len(ranks) - 1}")
    return [ranks[r] for r in range(len(ranks))]


def merge_of(token, rank_of, max_rank):
    """The two parts byte-pair encoding of token ends with when only ranks below max_rank may
    merge; None when it does not end in exactly two parts."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        best, best_rank = None, max_rank
        for i in range(len(parts) - 1):
            r = rank_of.get(parts[i] + parts[i + 1])
            if r is not None and r < best_rank:
                best, best_rank = i, r
        if best is None:
            return None
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return parts if len(parts) == 2 else None


def vocabulary(tiktoken_path, vocab_size, gguf):
    """Tokens (strings), token types and merges for the first vocab_size ids."""
    text_tokens = read_tiktoken(tiktoken_path)
    if vocab_size > HARMONY_VOCAB_SIZE or (HARMONY_FIRST_SPECIAL < vocab_size < HARMONY_VOCAB_SIZE):
        sys.exit(f"export-gguf: vocab_size {vocab_size}: expected {HARMONY_VOCAB_SIZE} "
                 f"(o200k_harmony) or at most {HARMONY_FIRST_SPECIAL} (a prefix of o200k_base)")
    if len(text_tokens) != HARMONY_FIRST_SPECIAL:
        sys.exit(f"export-gguf: {tiktoken_path} has {len(text_tokens)} tokens, o200k_base has "
                 f"{HARMONY_FIRST_SPECIAL}")
    b2u = gpt2_byte_to_unicode()
    spell = lambda b: "".join(b2u[x] for x in b)  # noqa: E731
    num_text = min(vocab_size, HARMONY_FIRST_SPECIAL)
    rank_of = {text_tokens[r]: r for r in range(num_text)}
    tokens = [spell(text_tokens[r]) for r in range(num_text)]
    types = [gguf.TokenType.NORMAL] * num_text
    merges = []
    for r in range(num_text):
        if len(text_tokens[r]) < 2:
            continue
        parts = merge_of(text_tokens[r], rank_of, r)
        if parts is None:
            sys.exit(f"export-gguf: token {r} ({text_tokens[r]!r}) is not the merge of two "
                     "lower-ranked tokens: not a BPE vocabulary")
        merges.append(f"{spell(parts[0])} {spell(parts[1])}")
    for i in range(num_text, vocab_size):
        tokens.append(HARMONY_NAMED_SPECIALS.get(i, f"<|reserved_{i}|>"))
        types.append(gguf.TokenType.CONTROL)
    return tokens, types, merges


def write_utf8_ban(tiktoken_path, vocab_size, path):
    banned = {}
    for rank, token in enumerate(read_tiktoken(tiktoken_path)[:vocab_size]):
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            banned[str(rank)] = -100
    with open(path + ".tmp", "w") as f:
        json.dump({"logit_bias": banned}, f)
    os.replace(path + ".tmp", path)


class Safetensors:
    """The tensors of every *.safetensors file in a folder, as numpy arrays over mmap."""

    DTYPES = {"BF16": np.uint16, "F32": np.float32, "U8": np.uint8}

    def __init__(self, folder):
        self.tensors = {}
        files = sorted(Path(folder).glob("*.safetensors"))
        if not files:
            sys.exit(f"export-gguf: {folder} holds no *.safetensors file")
        for path in files:
            f = open(path, "rb")
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            (header_len,) = struct.unpack("<Q", data[:8])
            header = json.loads(data[8:8 + header_len])
            base = 8 + header_len
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                if info["dtype"] not in self.DTYPES:
                    sys.exit(f"export-gguf: {path}: {name} has dtype {info['dtype']}")
                begin, end = info["data_offsets"]
                array = np.frombuffer(data, dtype=self.DTYPES[info["dtype"]],
                                      count=(end - begin) // np.dtype(self.DTYPES[info["dtype"]]).itemsize,
                                      offset=base + begin)
                self.tensors[name] = (info["dtype"], array.reshape(info["shape"]))

    def float32(self, name):
        dtype, array = self.get(name)
        if dtype == "BF16":
            return (array.astype(np.uint32) << 16).view(np.float32)
        if dtype != "F32":
            sys.exit(f"export-gguf: {name} is {dtype}, expected BF16 or F32")
        return array

    def get(self, name):
        if name not in self.tensors:
            sys.exit(f"export-gguf: the checkpoint has no tensor {name}")
        return self.tensors[name]


def mxfp4_to_ggml(blocks, scales):
    """OpenAI's MXFP4 ([..., nb, 16] bytes holding values 2j (low nibble) and 2j+1 (high), and
    [..., nb] e8m0 scales) -> ggml's block_mxfp4 rows ([..., nb * 17] bytes)."""
    codes = np.stack((blocks & 0x0F, blocks >> 4), axis=-1).reshape(*blocks.shape[:-1], 32)
    packed = (codes[..., :16] | (codes[..., 16:] << 4)).astype(np.uint8)
    rows = np.concatenate((scales[..., None], packed), axis=-1)
    return np.ascontiguousarray(rows.reshape(*blocks.shape[:-2], blocks.shape[-2] * 17))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--dense", choices=["f32", "bf16", "q8_0"], default="f32")
    here = Path(__file__).resolve().parent.parent
    parser.add_argument("--vocab", default=str(here / "datasets/tokenizer/o200k_base.tiktoken"))
    parser.add_argument("--gguf-py", default=os.environ.get("GGUF_PY"))
    parser.add_argument("--utf8-ban")
    args = parser.parse_args()
    gguf = import_gguf(args.gguf_py)

    with open(Path(args.checkpoint) / "config.json") as f:
        c = json.load(f)
    st = Safetensors(args.checkpoint)
    layers, hidden, inter = c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"]
    heads, kv_heads, head_dim = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    if c.get("swiglu_limit", 7.0) != 7.0:
        sys.exit("export-gguf: llama.cpp's gpt-oss fixes swiglu_limit at 7.0; this checkpoint has "
                 f"{c['swiglu_limit']}")

    if args.utf8_ban:
        write_utf8_ban(args.vocab, c["vocab_size"], args.utf8_ban)
    tmp = args.out + ".tmp"  # renamed once complete: a reader never sees half a file
    w = gguf.GGUFWriter(tmp, "gpt-oss")
    w.add_name(Path(args.checkpoint).resolve().name)
    w.add_block_count(layers)
    w.add_context_length(int(round(c["initial_context_length"] * max(c["rope_scaling_factor"], 1))))
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(inter)
    w.add_expert_feed_forward_length(inter)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_expert_count(c["num_experts"])
    w.add_expert_used_count(c["experts_per_token"])
    w.add_sliding_window(c["sliding_window"])
    if c["rope_scaling_factor"] > 1:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(c["rope_scaling_factor"])
        w.add_rope_scaling_orig_ctx_len(c["initial_context_length"])
        w.add_rope_scaling_yarn_beta_fast(c["rope_ntk_beta"])
        w.add_rope_scaling_yarn_beta_slow(c["rope_ntk_alpha"])

    tokens, types, merges = vocabulary(args.vocab, c["vocab_size"], gguf)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-4o")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if c["vocab_size"] == HARMONY_VOCAB_SIZE:
        w.add_bos_token_id(199998)   # <|startoftext|>
        w.add_eos_token_id(200002)   # <|return|>
        w.add_pad_token_id(199999)   # <|endoftext|>
        w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def dense(name, array):
        array = np.ascontiguousarray(array, dtype=np.float32)
        if args.dense == "bf16":
            bits = array.view(np.uint32)
            rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            w.add_tensor(name, rounded, raw_dtype=gguf.GGMLQuantizationType.BF16)
        elif args.dense == "q8_0":
            w.add_tensor(name, gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, array)

    def f32(name, array):
        w.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))

    def mxfp4(name, blocks, scales):
        w.add_tensor(name, mxfp4_to_ggml(blocks, scales), raw_dtype=gguf.GGMLQuantizationType.MXFP4)

    dense("token_embd.weight", st.float32("embedding.weight"))
    f32("output_norm.weight", st.float32("norm.scale"))
    dense("output.weight", st.float32("unembedding.weight"))
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    for i in range(layers):
        b, g = f"block.{i}.", f"blk.{i}."
        f32(g + "attn_norm.weight", st.float32(b + "attn.norm.scale"))
        qkv_w, qkv_b = st.float32(b + "attn.qkv.weight"), st.float32(b + "attn.qkv.bias")
        for part, lo, hi in (("q", 0, q_dim), ("k", q_dim, q_dim + kv_dim),
                             ("v", q_dim + kv_dim, q_dim + 2 * kv_dim)):
            dense(g + f"attn_{part}.weight", qkv_w[lo:hi])
            f32(g + f"attn_{part}.bias", qkv_b[lo:hi])
        dense(g + "attn_output.weight", st.float32(b + "attn.out.weight"))
        f32(g + "attn_output.bias", st.float32(b + "attn.out.bias"))
        f32(g + "attn_sinks.weight", st.float32(b + "attn.sinks"))
        f32(g + "post_attention_norm.weight", st.float32(b + "mlp.norm.scale"))
        dense(g + "ffn_gate_inp.weight", st.float32(b + "mlp.gate.weight"))
        f32(g + "ffn_gate_inp.bias", st.float32(b + "mlp.gate.bias"))
        _, blocks1 = st.get(b + "mlp.mlp1_weight.blocks")
        _, scales1 = st.get(b + "mlp.mlp1_weight.scales")
        bias1 = st.float32(b + "mlp.mlp1_bias")
        mxfp4(g + "ffn_gate_exps.weight", blocks1[:, 0::2], scales1[:, 0::2])
        mxfp4(g + "ffn_up_exps.weight", blocks1[:, 1::2], scales1[:, 1::2])
        f32(g + "ffn_gate_exps.bias", bias1[:, 0::2])
        f32(g + "ffn_up_exps.bias", bias1[:, 1::2])
        _, blocks2 = st.get(b + "mlp.mlp2_weight.blocks")
        _, scales2 = st.get(b + "mlp.mlp2_weight.scales")
        mxfp4(g + "ffn_down_exps.weight", blocks2, scales2)
        f32(g + "ffn_down_exps.bias", st.float32(b + "mlp.mlp2_bias"))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, args.out)
    print(f"export-gguf: {args.checkpoint} -> {args.out} ({len(tokens)} tokens, {len(merges)} "
          f"merges, dense {args.dense}, experts MXFP4)")


if __name__ == "__main__":
    main()
