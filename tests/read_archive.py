#!/usr/bin/python3
"""An independent reader of Amber archives, written from docs/FORMAT.md alone.

Usage: /usr/bin/python3 tests/read_archive.py ARCHIVE EXPECTED.safetensors PROTO

Reads ARCHIVE with Python's zipfile and Debian's python3-protobuf (model.pb decoded with
code protoc generates from PROTO), checks the structure the specification promises (entry
order, stored entries, CRC-32s, 64-byte aligned weight data located from the local
headers, XXH3-64 checksums, byte lengths), prints every weight's name, dtype and shape, and
compares its values with the tensor of the same name in EXPECTED (a safetensors file).
Exits non-zero on the first mismatch.
"""
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import xxhash

DTYPES = {0: ("F32", np.float32), 1: ("F64", np.float64), 2: ("F16", np.float16), 3: ("BF16", np.uint16),
          4: ("I64", np.int64), 5: ("I32", np.int32), 6: ("I16", np.int16), 7: ("I8", np.int8),
          8: ("U8", np.uint8), 9: ("BOOL", np.bool_)}
ST_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "BF16": np.uint16, "I64": np.int64,
             "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def fail(msg):
    print(f"read_archive.py: {msg}", file=sys.stderr)
    sys.exit(1)


def load_proto_module(proto):
    out = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--proto_path={os.path.dirname(os.path.abspath(proto))}", f"--python_out={out}",
                    os.path.abspath(proto)], check=True)
    sys.path.insert(0, out)
    return importlib.import_module(os.path.splitext(os.path.basename(proto))[0] + "_pb2")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + end], dtype=ST_DTYPES[e["dtype"]]).reshape(e["shape"])
    return out


def data_offset(raw, info):
    """The file offset of an entry's data, from its local header (section 2)."""
    h = raw[info.header_offset:info.header_offset + 30]
    sig, = struct.unpack("<I", h[:4])
    if sig != 0x04034B50:
        fail(f"{info.filename}: no local header at {info.header_offset}")
    name_len, extra_len = struct.unpack("<HH", h[26:30])
    return info.header_offset + 30 + name_len + extra_len


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    archive, expected_path, proto = sys.argv[1:]
    pb = load_proto_module(proto)
    with open(archive, "rb") as f:
        raw = f.read()
    z = zipfile.ZipFile(archive)
    bad = z.testzip()
    if bad is not None:
        fail(f"entry {bad} fails its CRC-32")
    names = [i.filename for i in z.infolist()]
    if names[:4] != ["format_version", "byte_order", "model.pb", "graph.txt"]:
        fail(f"unexpected entry order {names[:4]}")
    for i in z.infolist():
        if i.compress_type != zipfile.ZIP_STORED:
            fail(f"{i.filename} is compressed")
    version = z.read("format_version").decode()
    if version != "1.0\n" or z.read("byte_order") != b"little\n":
        fail(f"version record {version!r} or byte order unexpected")
    model = pb.Model()
    model.ParseFromString(z.read("model.pb"))
    if (model.format_major, model.format_minor) != (1, 0):
        fail(f"model.pb format {model.format_major}.{model.format_minor}")
    expected = read_safetensors(expected_path)
    infos = {i.filename: i for i in z.infolist()}
    for rec in model.tensors:
        info = infos[rec.record]
        off = data_offset(raw, info)
        if off % 64 != 0:
            fail(f"{rec.record}: data starts at {off}, not a multiple of 64")
        blob = raw[off:off + info.file_size]
        if len(blob) != rec.byte_length:
            fail(f"{rec.name}: {len(blob)} bytes, byte_length says {rec.byte_length}")
        if xxhash.xxh3_64_intdigest(blob) != rec.xxh3:
            fail(f"{rec.name}: XXH3 mismatch")
        code, np_dtype = DTYPES[rec.dtype]
        values = np.frombuffer(blob, dtype=np_dtype).reshape(list(rec.shape))
        print(f"{rec.name}: {code} {list(rec.shape)} at offset {off}")
        if rec.name not in expected:
            fail(f"{rec.name} is not among the expected tensors")
        if not np.array_equal(values, expected[rec.name]):
            fail(f"{rec.name}: values differ from the expected ones")
    missing = set(expected) - {r.name for r in model.tensors}
    if missing:
        fail(f"tensors missing from the archive: {sorted(missing)}")
    graph = model.graph
    print(f"graph: {len(graph.inputs)} inputs {[i.name for i in graph.inputs]}, {len(graph.nodes)} nodes, "
          f"outputs {[o.name for o in graph.outputs]}; ops {sorted({n.op for n in graph.nodes})}")
    print(f"ok: {len(model.tensors)} weights, {len(raw)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
