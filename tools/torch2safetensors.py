#!/usr/bin/python3
"""Writes PyTorch tensors to a safetensors file without the safetensors package.

Debian ships no safetensors package and torch 1.13 cannot write the format, so Amber ships
this: an 8-byte little-endian header length, a JSON header (name -> dtype, shape,
data_offsets; optional __metadata__ of strings) padded with spaces to 8 bytes, then the raw
little-endian data of each tensor in order.

    /usr/bin/python3 tools/torch2safetensors.py model_state_dict.pt model.safetensors

converts a file saved with torch.save(model.state_dict(), ...). From Python, import it and
call save_file({"name": tensor, ...}, path, metadata={...}).
"""
import json
import os
import struct
import sys

import torch

_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def _raw_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def to_bytes(tensors, metadata=None):
    """Returns the safetensors encoding of a {name: tensor} mapping (insertion order kept)."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, t in tensors.items():
        if t.dtype not in _DTYPES:
            raise ValueError(f"tensor {name!r}: dtype {t.dtype} has no safetensors code")
        raw = _raw_bytes(t)
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def save_file(tensors, path, metadata=None):
    """Writes {name: tensor} to path atomically (temporary file, then rename)."""
    data = to_bytes(tensors, metadata)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    obj = torch.load(argv[1], map_location="cpu")
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        print(f"{argv[1]}: expected a state_dict (a dict of tensors), got {type(obj).__name__}", file=sys.stderr)
        return 1
    tensors = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    save_file(tensors, argv[2], {"source": os.path.basename(argv[1])})
    print(f"wrote {len(tensors)} tensors to {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
