#!/usr/bin/python3
"""The ONNX zoo against ONNX Runtime and libtorch: each model of tests/gen_onnx_zoo.py's output
imported with `amber import`, then Amber (`amber bench`), ONNX Runtime (bench/ort_case.js, the
npm registry's onnxruntime-node, graph optimisation on) on the same .onnx file and, with
--torch, libtorch (bench_torch_case on bench/gen_zoo_torch.py's traced and frozen model, with
and without optimize_for_inference, the faster counted) at the same batch and intra-op
threads, alternating, in one run; prints the median over rounds of each run's p50, and each
ratio as the median over rounds of that round's ratio (a round's runs are seconds apart, so a
machine whose speed drifts between rounds, as shared VMs' do, moves both sides of a round's
ratio alike), with its lowest and highest round in `range` (the first precision's against ORT).

Usage: run_onnx_zoo.py ZOO_DIR ORT_NODE_MODULES [--amber build/tools/amber] [--models a,b]
       [--batches 1] [--threads 2,1] [--seconds 2] [--rounds 3] [--torch build-bench/bench/bench_torch_case]
       [--precisions f32,bf16]
--precisions: Amber's load precisions to time, a column each (ONNX Runtime and libtorch stay
f32), and `int8`: the archive `amber quantize` calibrated on 8 seeded inputs (uniform in
[-1, 1), like ORT's timed inputs), beside ONNX Runtime's int8 on the same model in the QDQ
layout of ORT's own quantizer calibrated on the same inputs (bench/ort_qdq.py: the `ORT int8`
column and the int8/ORTq ratio), and ONNX Runtime on Amber's int8 archive exported to ONNX
in QDQ form (`ORT amb8`: what [quant] names the int8 peer, ORT running Amber's export). Before
timing, that export is run by ONNX Runtime on a ninth input and compared with Amber's output (`ort diff`: max
|diff| / max |amber|, [quant]'s export check), beside Amber's int8 against its own f32 there
(`int8 err`, the same measure: what int8 costs, the yardstick for `ort diff`).
ORT_NODE_MODULES: a folder where `npm install --ignore-scripts onnxruntime-node` was run
(bench/README.md). libtorch runs at batch 1 only (the model is traced there).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tools"))
import torch  # noqa: E402
from torch2safetensors import save_file  # noqa: E402


def read_safetensors(path):
    """{name: float32 array} of a safetensors file (Amber's `run --outputs`)."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, spec in header.items():
        if name != "__metadata__":
            b, e = spec["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype=np.float32).reshape(spec["shape"])
    return out


def int8_models(amber, modules, onnx_path, archive, sample_shape, tmp):
    """Amber's calibrated int8 archive and ORT's QDQ model of one zoo model, both calibrated on
    the same 8 seeded inputs; returns their paths and max |ORT(Amber's QDQ export) - Amber| /
    max |Amber| on a ninth input."""
    name = onnx.load(onnx_path, load_external_data=False).graph.input[0].name
    rng = np.random.default_rng(0)
    calib = rng.uniform(-1, 1, (8, *sample_shape)).astype(np.float32)
    probe = rng.uniform(-1, 1, (1, *sample_shape)).astype(np.float32)
    spec = {}
    for tag, x in (("calib", calib), ("probe", probe)):
        x.tofile(os.path.join(tmp, tag + ".bin"))
        spec[tag] = os.path.join(tmp, tag + ".json")
        with open(spec[tag], "w") as f:
            json.dump({name: {"file": os.path.join(tmp, tag + ".bin"), "shape": list(x.shape)}}, f)
        save_file({name: torch.from_numpy(x)}, os.path.join(tmp, tag + ".safetensors"))
    int8_archive = archive[:-len(".amber")] + ".int8.amber"
    subprocess.run([amber, "quantize", archive, "--calibrate", os.path.join(tmp, "calib.safetensors"), "-o",
                    int8_archive, "--quiet"], check=True, capture_output=True)
    ort_model = onnx_path[:-len(".onnx")] + ".ortq.onnx"
    subprocess.run(["/usr/bin/python3", os.path.join(here, "ort_qdq.py"), onnx_path, ort_model, modules, spec["calib"]],
                   check=True, capture_output=True)
    exported = archive[:-len(".amber")] + ".int8.onnx"  # kept: ONNX Runtime times it too
    subprocess.run([amber, "export-onnx", int8_archive, "-o", exported], check=True, capture_output=True)
    out = {}
    for tag, path in (("int8", int8_archive), ("f32", archive)):
        out[tag] = os.path.join(tmp, tag + "_out.safetensors")
        subprocess.run([amber, "run", path, "--inputs", os.path.join(tmp, "probe.safetensors"), "--outputs", out[tag]],
                       check=True, capture_output=True)
    mine, f32 = (next(iter(read_safetensors(out[t]).values())).ravel().astype(np.float64) for t in ("int8", "f32"))
    p = subprocess.run(["node", os.path.join(here, "ort_run.js"), modules, exported, spec["probe"], "values"],
                       capture_output=True, text=True, check=True)
    theirs = np.array(next(iter(json.loads(p.stdout).values()))["values"], dtype=np.float64)
    scale = np.abs(mine).max()
    return (int8_archive, ort_model, exported, float(np.abs(theirs - mine).max() / scale),
            float(np.abs(f32 - mine).max() / scale))


def amber_p50(amber, archive, batch, threads, seconds, precision):
    p = subprocess.run([amber, "bench", archive, "--batch", str(batch), "--threads", str(threads), "--iters",
                        "100000", "--seconds", str(seconds), "--precision", precision, "--json"],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["p50_ms"]


def ort_p50(modules, model, batch, threads, seconds):
    p = subprocess.run(["node", os.path.join(here, "ort_case.js"), modules, model, str(batch), str(threads),
                        str(seconds)], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["p50_ms"]


def torch_p50(tool, zoo, model, threads, seconds):
    best = None
    for extra in ([], ["--optimize"]):
        p = subprocess.run([tool, os.path.join(zoo, model + ".frozen.pt"), os.path.join(zoo, model + ".inputs.pt"),
                            "--threads", str(threads), "--seconds", str(seconds), *extra], capture_output=True,
                           text=True, check=True)
        v = json.loads(p.stdout.strip().splitlines()[-1])["p50_ms"]
        best = v if best is None else min(best, v)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zoo")
    ap.add_argument("ort_modules")
    ap.add_argument("--amber", default=os.path.join(here, "..", "build", "tools", "amber"))
    ap.add_argument("--models", default="")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch", default="")
    ap.add_argument("--precisions", default="f32")
    a = ap.parse_args()
    precisions = a.precisions.split(",")
    int8 = "int8" in precisions
    with open(os.path.join(a.zoo, "zoo.json")) as f:
        shapes = {m["model"]: m["input"] for m in json.load(f)}
    models = list(shapes)
    if a.models:
        models = [m for m in models if m in a.models.split(",")]
    print(f"{'model':20} {'batch':>5} {'thr':>3}" + "".join(f" {'amber ' + p:>10}" for p in precisions)
          + f" {'ORT ms':>9}" + (f" {'ORT int8':>9} {'ORT amb8':>9}" if int8 else "")
          + "".join(f" {p + '/ORT':>9}" for p in precisions) + f" {'range':>9}"
          + (f" {'int8/ORTq':>9} {'ort diff':>9} {'int8 err':>9}" if int8 else "")
          + (f" {'torch ms':>9}" + "".join(f" {p + '/torch':>10}" for p in precisions) if a.torch else ""),
          flush=True)
    for m in models:
        onnx_path, archive = os.path.join(a.zoo, m + ".onnx"), os.path.join(a.zoo, m + ".bench.amber")
        subprocess.run([a.amber, "import", onnx_path, "-o", archive], check=True, capture_output=True)
        archives = {p: archive for p in precisions}
        if int8:
            with tempfile.TemporaryDirectory() as tmp:
                archives["int8"], ort_int8_model, amber_qdq, ort_diff, int8_err = int8_models(
                    a.amber, a.ort_modules, onnx_path, archive, shapes[m], tmp)
        for batch in [int(b) for b in a.batches.split(",")]:
            for threads in [int(t) for t in a.threads.split(",")]:
                am, ort, ortq, orta, tt = {p: [] for p in precisions}, [], [], [], []
                with_torch = a.torch and batch == 1
                for _ in range(a.rounds):
                    for p in precisions:
                        am[p].append(amber_p50(a.amber, archives[p], batch, threads, a.seconds,
                                               "f32" if p == "int8" else p))
                    ort.append(ort_p50(a.ort_modules, onnx_path, batch, threads, a.seconds))
                    if int8:
                        ortq.append(ort_p50(a.ort_modules, ort_int8_model, batch, threads, a.seconds))
                        orta.append(ort_p50(a.ort_modules, amber_qdq, batch, threads, a.seconds))
                    if with_torch:
                        tt.append(torch_p50(a.torch, a.zoo, m, threads, a.seconds))
                x = {p: statistics.median(am[p]) for p in precisions}
                y = statistics.median(ort)
                # Per-round ratios: each round's Amber run against the ONNX Runtime run beside it.
                r = {p: [u / v for u, v in zip(am[p], ort)] for p in precisions}
                line = f"{m:20} {batch:5} {threads:3}" + "".join(f" {x[p]:10.3f}" for p in precisions)
                line += f" {y:9.3f}" + (f" {statistics.median(ortq):9.3f} {statistics.median(orta):9.3f}" if int8 else "")
                line += "".join(f" {statistics.median(r[p]):9.2f}" for p in precisions)
                lo, hi = min(r[precisions[0]]), max(r[precisions[0]])
                line += f" {lo:4.2f}-{hi:4.2f}"
                if int8:
                    rq = statistics.median([u / v for u, v in zip(am["int8"], ortq)])
                    line += f" {rq:9.2f} {ort_diff:9.1e} {int8_err:9.1e}"
                if with_torch:
                    z = statistics.median(tt)
                    line += f" {z:9.3f}" + "".join(
                        f" {statistics.median([u / v for u, v in zip(am[p], tt)]):10.2f}" for p in precisions)
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
