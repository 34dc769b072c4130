#!/usr/bin/python3
"""Checks the amber command-line tool (a CTest test; docs/CLI.md is the contract).

Runs every command on the committed golden archive: `run` round-trips inputs and outputs
through safetensors files written and read here with only `json` and `struct` (compared
with the expected outputs stored beside the golden archive); `inspect`, `dot` and
`bench --json` print what docs/CLI.md says; bad command lines exit 2, bad archives and
inputs exit 1 with one line on stderr, unwritable outputs exit 3; and 300 corrupted copies
of the archive never make it crash.

Usage: check_cli.py AMBER_BINARY GOLDEN_DIR WORK_DIR
"""
import json
import os
import random
import struct
import subprocess
import sys

amber, golden_dir, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
golden = os.path.join(golden_dir, "format_1_0.amber")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, expect=0):
    p = subprocess.run([amber, *args], capture_output=True, text=True)
    check(p.returncode >= 0, f"amber {' '.join(args)} died of signal {-p.returncode}")
    check(p.returncode == expect, f"amber {' '.join(args)}: exit {p.returncode}, expected {expect}; stderr: {p.stderr}")
    if expect != 0:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(len(lines) == 1, f"amber {' '.join(args)}: expected one line on stderr, got {lines}")
    return p


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        b, e = info["data_offsets"]
        out[name] = (info["shape"], list(struct.unpack(f"<{(e - b) // 4}f", body[b:e])))
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


io = read_safetensors(os.path.join(golden_dir, "format_1_0_io.safetensors"))

# run: inputs keyed by the model's input name, outputs keyed by its output name.
inputs = os.path.join(work, "in.safetensors")
outputs = os.path.join(work, "out.safetensors")
write_safetensors(inputs, {"input0": io["input.b3"]})
p = run("run", golden, "--inputs", inputs, "--outputs", outputs)
got = read_safetensors(outputs)
want_shape, want = io["output.b3"]
check(list(got) == ["output0"], f"outputs file holds {list(got)}")
shape, values = got.get("output0", ([], []))
check(shape == want_shape, f"output shape {shape} vs {want_shape}")
worst = max((abs(a - b) - 1e-5 * abs(b) for a, b in zip(values, want)), default=1)
check(len(values) == len(want) and worst <= 1e-5, f"outputs differ from the expected ones (worst {worst})")
check("output0" in p.stdout and "inputs (from" in p.stdout, "run prints a summary of inputs and outputs")

# run with generated inputs, at another batch size.
run("run", golden, "--batch", "2", "--seed", "5", "--outputs", outputs)
check(read_safetensors(outputs)["output0"][0] == [2, 5], "--batch 2 gives a [2, 5] output")

# inspect, inspect --graph, dot, bench --json, bench --profile.
p = run("inspect", golden)
for fragment in ["format 1.0", "input0", "f32[N, 3, 8, 8]", "output0", "nodes:", "conv2d", "weights:",
                 "trace warnings: none", "batch: dynamic (N), traced at N=1"]:
    check(fragment in p.stdout, f"inspect prints '{fragment}'")
check(run("inspect", golden, "--graph").stdout.startswith("graph(%input0 : f32[N, 3, 8, 8])"), "inspect --graph")
dot = run("dot", golden).stdout
check(dot.startswith("digraph amber {") and "->" in dot and dot.rstrip().endswith("}"), "dot prints a digraph")
bench = json.loads(run("bench", golden, "--iters", "5", "--json").stdout)
for field in ["file", "device", "threads", "batch", "load_ms", "first_call_ms", "calls", "total_ms", "mean_ms",
              "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms", "throughput_per_s", "peak_rss_mib",
              "workspace_bytes"]:
    check(field in bench, f"bench --json has '{field}'")
check(bench.get("calls") == 5 and bench.get("p50_ms", 0) > 0, f"bench --json values: {bench}")
prof = json.loads(run("bench", golden, "--iters", "3", "--json", "--profile").stdout)
check(len(prof.get("profile", [])) > 0 and all(n["calls"] == 3 for n in prof["profile"]), "bench --profile counts")
check("per node" in run("bench", golden, "--iters", "2", "--profile").stdout, "bench --profile table")
# Every --precision runs, or (a processor without the instructions) is refused in one line.
for precision in ["f32", "bf16", "dynamic-int8", "tf32", "f16", "bf16-model", "f16-model"]:
    p = subprocess.run([amber, "bench", golden, "--iters", "2", "--json", "--precision", precision],
                       capture_output=True, text=True)
    if p.returncode == 0:
        check(json.loads(p.stdout).get("precision") == precision, f"bench --json --precision {precision}")
    else:
        check(p.returncode == 1 and f"precision {precision} is not offered" in p.stderr,
              f"--precision {precision}: exit {p.returncode}, {p.stderr!r}")

# Bad command lines: exit 2.
run(expect=2)
run("frobnicate", golden, expect=2)
run("inspect", expect=2)
run("inspect", golden, "--bogus", expect=2)
run("bench", golden, "--iters", "abc", expect=2)
run("bench", golden, "--iters", "0", expect=2)
run("run", golden, "--inputs", inputs, "--batch", "2", expect=2)
run("run", golden, "--device", "tpu", expect=2)
check("--precision must be f32, bf16, dynamic-int8, tf32, f16, bf16-model or f16-model" in run("run", golden, "--precision", "f8", expect=2).stderr,
      "bad --precision message")
# Bad archives and inputs: exit 1, one line naming the problem.
check("cannot open" in run("inspect", os.path.join(work, "missing.amber"), expect=1).stderr, "missing file message")
junk = os.path.join(work, "junk.amber")
with open(junk, "wb") as f:
    f.write(os.urandom(1000))
run("inspect", junk, expect=1)
write_safetensors(inputs, {"image": io["input.b3"]})
check("no tensor for model input(s) input0" in run("run", golden, "--inputs", inputs, expect=1).stderr,
      "missing input message")
write_safetensors(inputs, {"input0": ([3, 3, 8, 9], [0.0] * (3 * 3 * 8 * 9))})
check("input input0: expected f32[N, 3, 8, 8]" in run("run", golden, "--inputs", inputs, expect=1).stderr,
      "wrong shape message")
check("device cuda:4096 requested but" in run("run", golden, "--device", "cuda:4096", expect=1).stderr,
      "no such CUDA device message")
# Outputs that cannot be written: exit 3.
run("run", golden, "--outputs", os.path.join(work, "no", "such", "dir", "out.safetensors"), expect=3)

# amber export-onnx (amber-export-onnx beside amber): the archive as ONNX opset 17.
golden_onnx = os.path.join(work, "golden.onnx")
p = run("export-onnx", golden, "-o", golden_onnx)
check("opset 17" in p.stdout and os.path.getsize(golden_onnx) > 0, f"export-onnx prints a summary: {p.stdout}")
run("export-onnx", golden, expect=2)
run("export-onnx", golden, "-o", golden_onnx, "--bogus", expect=2)
check("junk.amber" in run("export-onnx", junk, "-o", golden_onnx, expect=1).stderr, "export-onnx of a non-archive")
run("export-onnx", golden, "-o", os.path.join(work, "no", "such", "dir", "x.onnx"), expect=3)
# --external-data: the weights in golden_ext.onnx.data, read back by amber import and by
# Python's onnx (load and full check) from beside the model.
golden_ext = os.path.join(work, "golden_ext.onnx")
p = run("export-onnx", golden, "-o", golden_ext, "--external-data", "--external-min-bytes", "64")
check("of external data in " + golden_ext + ".data" in p.stdout and os.path.getsize(golden_ext + ".data") > 0,
      f"export-onnx --external-data writes the data file: {p.stdout}")
run("import", golden_ext, "-o", os.path.join(work, "golden_ext.amber"))
run("export-onnx", golden, "-o", golden_ext, "--external-min-bytes", "0", expect=2)
try:
    import onnx
    onnx.checker.check_model(golden_ext, full_check=True)
    marked = onnx.load(golden_ext, load_external_data=False).graph.initializer
    check(any(t.data_location == onnx.TensorProto.EXTERNAL for t in marked), "weights marked external")
    loaded = onnx.load(golden_ext).graph.initializer
    check(all(t.data_location != onnx.TensorProto.EXTERNAL for t in loaded), "onnx.load reads the external data")
except ImportError:
    print("note: python3-onnx missing; the external data is not checked by onnx")

# amber quantize (amber-quantize beside amber): the golden model calibrated on 16 samples;
# the int8 archive is format 1.3 (no int8 layer reads another's output: no uint8 between
# them, so no 1.4) and runs the golden inputs close to the f32 outputs.
rng_q = random.Random(11)
calib = os.path.join(work, "calib.safetensors")
write_safetensors(calib, {"input0": ([16, 3, 8, 8], [rng_q.gauss(0, 1) for _ in range(16 * 192)])})
golden_int8 = os.path.join(work, "golden.int8.amber")
p = run("quantize", golden, "--calibrate", calib, "-o", golden_int8)
check("2 of 2 convolutions and linear layers in int8 (0 passing uint8 on), 0 additions in int8, calibrated on 16 samples"
      in p.stdout,
      f"quantize prints a summary: {p.stdout}")
check("input range [" in p.stdout, f"quantize prints each node's range: {p.stdout}")
check("format 1.3" in run("inspect", golden_int8).stdout, "the int8 archive is format 1.3")
q_inputs = os.path.join(work, "q_in.safetensors")
write_safetensors(q_inputs, {"input0": io["input.b3"]})
run("run", golden_int8, "--inputs", q_inputs, "--outputs", outputs)
q_shape, q_out = read_safetensors(outputs)["output0"]
check(q_shape == want_shape and max(abs(a - b) for a, b in zip(q_out, want)) < 0.1 * max(abs(b) for b in want),
      "the int8 archive's outputs are within 10% of the largest f32 output")
p = run("quantize", golden, "--calibrate", calib, "-o", golden_int8, "--method", "minmax", "--quiet", "--no-chain")
check(p.stdout.count("\n") == 1, f"--quiet prints one line: {p.stdout}")
p = run("quantize", golden, "--calibrate", calib, "-o", golden_int8, "--quiet", "--no-int8-add")
check(", 0 additions in int8," in p.stdout, f"--no-int8-add is taken: {p.stdout}")
run("quantize", golden, "--calibrate", calib, expect=2)
run("quantize", golden, "-o", golden_int8, expect=2)
run("quantize", golden, "--calibrate", calib, "-o", golden_int8, "--percentile", "20", expect=2)
run("quantize", golden, "--calibrate", calib, "-o", golden_int8, "--method", "entropy", expect=2)
check("no tensor named 'input0'" in run("quantize", golden, "--calibrate", outputs, "-o", golden_int8,
                                        expect=1).stderr, "quantize names the missing input")
run("quantize", golden, "--calibrate", calib, "-o", os.path.join(work, "no", "such", "dir", "x.amber"), expect=3)


def corrupt(data, rng, i, path, max_flips):
    """Writes to path a copy of data cut short (every third i) or with a few bytes changed."""
    b = bytearray(data)
    if i % 3 == 0:
        b = b[:rng.randrange(len(b))]
    else:
        for _ in range(rng.randrange(1, max_flips)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    with open(path, "wb") as f:
        f.write(b)


# amber import (amber-import beside amber): an ONNX model in, an archive out. Needs the onnx
# module (Debian's python3-onnx, installed by the test command) to write the models.
try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    onnx = None
if onnx is None:
    print("SKIPPED: the amber import checks (no onnx module for", sys.executable + ")")
else:
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], [0.1 * i for i in range(12)])
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["h"], transB=1, name="fc"), helper.make_node("Relu", ["h"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    fc_onnx, fc_amber = os.path.join(work, "fc.onnx"), os.path.join(work, "fc.amber")
    onnx.save(model, fc_onnx)
    p = run("import", fc_onnx, "-o", fc_amber)
    check("1 inputs, 1 outputs" in p.stdout, f"import prints a summary: {p.stdout}")
    check("batch: dynamic" in run("inspect", fc_amber).stdout, "an imported symbolic batch is dynamic")
    run("import", fc_onnx, expect=2)
    onnx.checker.check_model(onnx.load(golden_onnx), full_check=True)  # the export above, by ONNX's Python API
    run("import", golden_onnx, "-o", os.path.join(work, "golden_back.amber"))
    run("import", fc_onnx, "-o", fc_amber, "--dim", "T", expect=2)
    # --dynamic keeps a named symbolic dim dynamic: x [N, seq, 3] serves any (N, T).
    mm = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "seq", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "seq", 4])],
        [helper.make_tensor("w", TensorProto.FLOAT, [3, 4], [0.1 * i for i in range(12)])]),
        opset_imports=[helper.make_opsetid("", 13)])
    seq_onnx, seq_amber = os.path.join(work, "seq.onnx"), os.path.join(work, "seq.amber")
    onnx.save(mm, seq_onnx)
    run("import", seq_onnx, "-o", seq_amber, "--dynamic", "seq=T", "--dim", "seq=5")
    p = run("inspect", seq_amber).stdout
    check("sizes: dynamic (N, T), traced at N=1, T=5" in p, f"inspect shows the imported named dim: {p}")
    run("import", seq_onnx, "-o", seq_amber, "--dynamic", "seq=t", expect=2)
    check("no input's symbolic dim" in run("import", seq_onnx, "-o", seq_amber, "--dynamic", "len=L", expect=1).stderr,
          "--dynamic naming no input's dim is refused")
    run("import", fc_onnx, "-o", os.path.join(work, "no", "such", "dir", "fc.amber"), expect=3)
    check("does not parse" in run("import", junk, "-o", fc_amber, expect=1).stderr, "import of a non-ONNX file")
    lstm = helper.make_model(helper.make_graph(
        [helper.make_node("Unique", ["x"], ["y"], name="u1"), helper.make_node("Det", ["y"], ["z"], name="d1")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [])]), opset_imports=[helper.make_opsetid("", 13)])
    unsupported = os.path.join(work, "unsupported.onnx")
    onnx.save(lstm, unsupported)
    err = run("import", unsupported, "-o", fc_amber, expect=1).stderr
    check("u1 (Unique): no Amber mapping" in err and "d1 (Det)" in err, f"import names every refused node: {err}")

    onnx_bytes = open(fc_onnx, "rb").read()
    bad_onnx = os.path.join(work, "corrupt.onnx")
    rng = random.Random(2)
    crashes = 0
    for i in range(150):
        corrupt(onnx_bytes, rng, i, bad_onnx, 6)
        p = subprocess.run([amber, "import", bad_onnx, "-o", fc_amber + ".tmp"], capture_output=True, text=True)
        if p.returncode < 0 or p.returncode not in (0, 1):
            crashes += 1
            print("crash or odd exit", p.returncode, "on corrupted ONNX copy", i, p.stderr[-300:])
    check(crashes == 0, f"{crashes} corrupted ONNX models crashed amber import")

# checklist case: cli.corrupted
# Corrupted archives: the documented outcome for each. Exit 1 with exactly one line on stderr
# naming the file ("amber CMD: error: PATH: ..."); or exit 0 only where the damage is
# harmless (a zip timestamp, padding) and the output is the clean file's, byte for byte;
# a copy cut short always exits 1. --no-verify skips weight checksums, so a damaged weight
# may run to other numbers there: that mode may exit 0 with any output.
data = open(golden, "rb").read()
rng = random.Random(1)
bad = os.path.join(work, "corrupt.amber")


def normalised(cmd, stdout, path):
    lines = stdout.replace(path, "ARCHIVE").splitlines()
    return lines[1:] if cmd[0] == "run" else lines  # run's first line holds timings


commands = (["inspect"], ["run"], ["run", "--no-verify"])
clean = {tuple(c): normalised(c, run(c[0], golden, *c[1:]).stdout, golden) for c in commands}
odd = exit1 = 0
for i in range(300):
    corrupt(data, rng, i, bad, 8)
    for cmd in commands:
        p = subprocess.run([amber, cmd[0], bad, *cmd[1:]], capture_output=True, text=True)
        what = f"corrupted copy {i} ({'cut short' if i % 3 == 0 else 'bytes changed'}), amber {' '.join(cmd)}"
        if p.returncode == 1:
            exit1 += 1
            lines = p.stderr.splitlines()
            ok = len(lines) == 1 and lines[0].startswith(f"amber {cmd[0]}: error: {bad}: ")
        elif p.returncode == 0:
            ok = i % 3 != 0 and ("--no-verify" in cmd or normalised(cmd, p.stdout, bad) == clean[tuple(cmd)])
        else:
            ok = False
        if not ok:
            odd += 1
            print(f"{what}: exit {p.returncode}, stderr {p.stderr[-300:]!r}")
check(odd == 0, f"{odd} corrupted archives ended other than documented")
check(exit1 > 600, f"only {exit1} of 900 runs on corrupted archives failed with exit 1")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("amber CLI: run round-trips safetensors, every command and exit code as documented, "
      f"900 runs on corrupted archives ({exit1} refused with one line, the rest harmless) and 150 imports of corrupted ONNX models without a crash")
