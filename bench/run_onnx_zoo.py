#!/usr/bin/python3
"""The ONNX zoo against ONNX Runtime: each model of tests/gen_onnx_zoo.py's output imported
with `amber import`, then Amber (`amber bench`) and ONNX Runtime (bench/ort_case.js, the npm
registry's onnxruntime-node, graph optimisation on) on the same .onnx file, the same batch and
intra-op threads, alternating, in one run; prints the median over rounds of each run's p50.

Usage: run_onnx_zoo.py ZOO_DIR ORT_NODE_MODULES [--amber build/tools/amber] [--models a,b]
       [--batches 1,4] [--threads 2,1] [--seconds 2] [--rounds 3]
ORT_NODE_MODULES: a folder where `npm install --ignore-scripts onnxruntime-node` was run
(bench/README.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def amber_p50(amber, archive, batch, threads, seconds):
    p = subprocess.run([amber, "bench", archive, "--batch", str(batch), "--threads", str(threads), "--iters",
                        "100000", "--seconds", str(seconds), "--json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["p50_ms"]


def ort_p50(modules, model, batch, threads, seconds):
    p = subprocess.run(["node", os.path.join(here, "ort_case.js"), modules, model, str(batch), str(threads),
                        str(seconds)], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["p50_ms"]


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
    a = ap.parse_args()
    with open(os.path.join(a.zoo, "zoo.json")) as f:
        models = [m["model"] for m in json.load(f)]
    if a.models:
        models = [m for m in models if m in a.models.split(",")]
    print(f"{'model':20} {'batch':>5} {'thr':>3} {'amber ms':>9} {'ORT ms':>9} {'amber/ORT':>9}", flush=True)
    for m in models:
        onnx_path, archive = os.path.join(a.zoo, m + ".onnx"), os.path.join(a.zoo, m + ".bench.amber")
        subprocess.run([a.amber, "import", onnx_path, "-o", archive], check=True, capture_output=True)
        for batch in [int(b) for b in a.batches.split(",")]:
            for threads in [int(t) for t in a.threads.split(",")]:
                am, ort = [], []
                for _ in range(a.rounds):
                    am.append(amber_p50(a.amber, archive, batch, threads, a.seconds))
                    ort.append(ort_p50(a.ort_modules, onnx_path, batch, threads, a.seconds))
                x, y = statistics.median(am), statistics.median(ort)
                print(f"{m:20} {batch:5} {threads:3} {x:9.3f} {y:9.3f} {x / y:9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
