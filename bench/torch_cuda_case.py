#!/usr/bin/env python3
"""PyTorch's side of the GPU benchmark (bench/run_vs_torch_cuda.py), for one case.

Usage: python3 bench/torch_cuda_case.py MODELS_DIR CASE [--seconds S] [--dtype bfloat16|float16]

Builds the case's model exactly as bench/gen_bench_models.py does (same seeds, so the same
weights as the Amber archive), on cuda:0, and times whole calls from host inputs to outputs
ready on the GPU (synchronised), as Amber's bench_amber_case --device cuda:0 does:
  eager       cudnn.benchmark on, the input copied to the GPU each call
  eager_cl    the same with the model and 4-D inputs in channels_last (where it applies)
  graphed     the eager model captured as a CUDA graph (torch.cuda.graphs), the input copied
              into the graph's static input each call
With --dtype, the model and its floating inputs in that dtype (model.to(dtype), the peer of
Amber's Precision::bf16_model and f16_model). Prints one JSON line: per variant first-call ms,
p50 and p99 ms, the median of 5 calls each after 20 ms idle (idle_ms), peak GPU memory MiB, and
max |output - the case's expected output|.
"""
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import gen_bench_models  # noqa: E402


def timed(fn, seconds):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first = (time.perf_counter() - t0) * 1e3
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    idle = []  # as bench_case.h's: the median of 5 calls, each after 20 ms of nothing
    for _ in range(5):
        time.sleep(0.02)
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        idle.append((time.perf_counter() - t) * 1e3)
    idle.sort()
    return first, times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))], idle[2]


def main():
    args = sys.argv[1:]
    seconds, dtype = 2.0, None
    if "--seconds" in args:
        i = args.index("--seconds")
        seconds = float(args[i + 1])
        del args[i:i + 2]
    if "--dtype" in args:
        i = args.index("--dtype")
        dtype = getattr(torch, args[i + 1])
        del args[i:i + 2]
    models_dir, case = args
    cases = {c["case"]: c for c in json.load(open(os.path.join(models_dir, "cases.json")))}
    name = cases[case]["model"]
    models = gen_bench_models.bench_models()
    holder = torch.jit.load(os.path.join(models_dir, f"{case}.inputs.pt"))
    buffers = dict(holder.named_buffers())
    inputs = [buffers[f"input{i}"] for i in range(len(cases[case]["inputs"]))]
    if dtype is not None:
        inputs = [t.to(dtype) if t.is_floating_point() else t for t in inputs]
    expected = buffers["expected0"]
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out = {}
    for variant in ("eager", "eager_cl", "graphed"):
        cl = variant == "eager_cl"
        if cl and not any(t.dim() == 4 for t in inputs):
            continue
        model = models[name].eval().cuda()
        if dtype is not None:
            model = model.to(dtype)
        if cl:
            model = model.to(memory_format=torch.channels_last)
        torch.cuda.reset_peak_memory_stats()
        result = {}
        with torch.no_grad():
            if variant == "graphed":
                static = [t.cuda() for t in inputs]
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        model(*static)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    result["y"] = model(*static)

                def call():
                    for s, t in zip(static, inputs):
                        s.copy_(t, non_blocking=True)
                    graph.replay()
            else:
                def call():
                    xs = [t.cuda(non_blocking=True) for t in inputs]
                    if cl:
                        xs = [x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
                    result["y"] = model(*xs)
            first, p50, p99, idle = timed(call, seconds)
        diff = (result["y"].float().cpu() - expected).abs().max().item()
        out[variant] = {"first_ms": first, "p50_ms": p50, "p99_ms": p99, "idle_ms": idle,
                        "gpu_mib": torch.cuda.max_memory_allocated() / 2**20, "max_abs_diff": diff}
    out["device"] = torch.cuda.get_device_name(0)
    out["torch"] = torch.__version__
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
