#!/usr/bin/env python3
"""sign_flipped_checkpoint.py: a copy of a checkpoint folder with one BF16 tensor negated.

  tests/peers/sign_flipped_checkpoint.py SRC_DIR DST_DIR TENSOR

The negative control of `make peers`: our engine on the copy against llama.cpp on the GGUF of the
original must part at positions that scripts/peer-greedy.py calls NOT a near-tie, or its
near-tie verdicts would explain away a real bug (here: a sign error in one weight matrix).
Only TENSOR's bytes change (each BF16 value's sign bit, in place); the safetensors header and
every other tensor are copied as they are.
"""
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    src, dst, tensor = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "golden.json"):
        if (src / name).exists():
            shutil.copyfile(src / name, dst / name)
    data = bytearray((src / "model.safetensors").read_bytes())
    header_len = struct.unpack_from("<Q", data)[0]
    header = json.loads(data[8:8 + header_len])
    if header.get(tensor, {}).get("dtype") != "BF16":
        sys.exit(f"sign_flipped_checkpoint: {tensor} is not a BF16 tensor of {src}")
    begin, end = (8 + header_len + offset for offset in header[tensor]["data_offsets"])
    values = np.frombuffer(data, dtype="<u2", count=(end - begin) // 2, offset=begin)
    data[begin:end] = (values ^ 0x8000).astype("<u2").tobytes()
    (dst / "model.safetensors").write_bytes(bytes(data))


if __name__ == "__main__":
    main()
