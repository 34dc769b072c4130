#!/usr/bin/python3
"""The ONNX zoo against ONNX Runtime and libtorch: each model of tests/gen_onnx_zoo.py's output
imported with `amber import`, then Amber (`amber bench`), ONNX Runtime (bench/ort_case.js, the
npm registry's onnxruntime-node, graph optimisation on) on the same .onnx file and, with
--torch, libtorch (bench_torch_case on bench/gen_zoo_torch.py's traced and frozen model, with
and without optimize_for_inference, the faster counted) at the same batch and intra-op
threads, alternating, in one run; prints the median over rounds of each run's p50.

Usage: run_onnx_zoo.py ZOO_DIR ORT_NODE_MODULES [--amber build/tools/amber] [--models a,b]
       [--batches 1] [--threads 2,1] [--seconds 2] [--rounds 3] [--torch build-bench/bench/bench_torch_case]
       [--precisions f32,bf16]
--precisions: Amber's load precisions to time, a column each (ONNX Runtime and libtorch stay f32).
ORT_NODE_MODULES: a folder where `npm install --ignore-scripts onnxruntime-node` was run
(bench/README.md). libtorch runs at batch 1 only (the model is traced there).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


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
    with open(os.path.join(a.zoo, "zoo.json")) as f:
        models = [m["model"] for m in json.load(f)]
    if a.models:
        models = [m for m in models if m in a.models.split(",")]
    print(f"{'model':20} {'batch':>5} {'thr':>3}" + "".join(f" {'amber ' + p:>10}" for p in precisions)
          + f" {'ORT ms':>9}" + "".join(f" {p + '/ORT':>9}" for p in precisions)
          + (f" {'torch ms':>9}" + "".join(f" {p + '/torch':>10}" for p in precisions) if a.torch else ""),
          flush=True)
    for m in models:
        onnx_path, archive = os.path.join(a.zoo, m + ".onnx"), os.path.join(a.zoo, m + ".bench.amber")
        subprocess.run([a.amber, "import", onnx_path, "-o", archive], check=True, capture_output=True)
        for batch in [int(b) for b in a.batches.split(",")]:
            for threads in [int(t) for t in a.threads.split(",")]:
                am, ort, tt = {p: [] for p in precisions}, [], []
                with_torch = a.torch and batch == 1
                for _ in range(a.rounds):
                    for p in precisions:
                        am[p].append(amber_p50(a.amber, archive, batch, threads, a.seconds, p))
                    ort.append(ort_p50(a.ort_modules, onnx_path, batch, threads, a.seconds))
                    if with_torch:
                        tt.append(torch_p50(a.torch, a.zoo, m, threads, a.seconds))
                x = {p: statistics.median(am[p]) for p in precisions}
                y = statistics.median(ort)
                line = f"{m:20} {batch:5} {threads:3}" + "".join(f" {x[p]:10.3f}" for p in precisions)
                line += f" {y:9.3f}" + "".join(f" {x[p] / y:9.2f}" for p in precisions)
                if with_torch:
                    z = statistics.median(tt)
                    line += f" {z:9.3f}" + "".join(f" {x[p] / z:10.2f}" for p in precisions)
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
