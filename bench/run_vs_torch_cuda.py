#!/usr/bin/env python3
"""Amber vs PyTorch CUDA on the same GPU, same seeded models, one run: one command, one table.

Usage: python3 bench/run_vs_torch_cuda.py [--build DIR] [--device cuda:0] [--rounds R]
                                          [--seconds S] [--cases a,b] [--no-torch]
                                          [--precisions tf32,bf16,f16,bf16-model,f16-model]

Writes the models (bench/gen_bench_models.py --gpu, with this python3's torch) and Amber's
archives (make_bench_archives from DIR, default build-gpu) into DIR/bench-models-gpu, then for
every case, round by round: Amber (bench_amber_case --device D: host inputs, outputs on the
device, each call synchronised) and PyTorch (bench/torch_cuda_case.py: eager with
cudnn.benchmark, channels_last where it applies, and CUDA-graphed). Each number is the minimum
over rounds of a run's median. Ratios are Amber / PyTorch (below 1: Amber faster). GPU memory:
the most Amber held at once (amber::device_memory) beside PyTorch's peak allocated. Then the
fused elementwise bandwidth against the device's copy bandwidth (bench_device_bandwidth), then
[cuda]'s targets each marked met or NOT met with its number, then the precisions (below): the
tables a short device lease cares most about come first.
--precisions: Amber's reduced load precisions (LoadOptions::precision) timed on the cases with
convolutions or linear layers, a table of their own beside Amber's f32 (each run's median, one
run a precision and round; "" skips it; a precision the GPU lacks prints its refusal); the whole
model in 16 bits (bf16-model, f16-model) also against PyTorch's model.to(dtype), eager and
CUDA-graphed (torch_cuda_case.py --dtype).
--no-torch runs Amber's side alone (--device sim:0 checks the harness without a GPU).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["ten_mul", "lenet_b1", "resnet18_b1", "resnet18_b64", "transformer_b1", "transformer_b8", "topk_sort",
         "topk_vocab", "resize_aa"]
# Left out of the precisions' table: too small to tell, or without a convolution or a matrix product.
NOT_IN_PRECISIONS = {"ten_mul", "lenet_b1", "topk_sort", "topk_vocab", "resize_aa"}


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def target_lines(res, cases, bw=None):
    """[cuda]'s targets (Amber / PyTorch on the same GPU) as lines "met" or "NOT met" with the
    numbers; a target whose case or peer did not run is left out."""
    lines = []

    def p50(c, variant):
        return res.get((c, variant), {}).get("p50_ms")

    def best_eager(c):
        e = [x for x in (p50(c, "eager"), p50(c, "eager_cl")) if x]
        return min(e) if e else None

    def check(what, value, bound, fmt="{:.2f}", below=True):
        ok = value <= bound if below else value >= bound
        lines.append(f"  {'met    ' if ok else 'NOT met'}  {what}: {fmt.format(value)} "
                     f"(target {'<=' if below else '>='} {fmt.format(bound)})")

    for c, bound in (("resnet18_b1", 0.5), ("transformer_b1", 0.5), ("resnet18_b64", 1.0)):
        a, e = p50(c, "amber"), best_eager(c) if c in cases else None
        if a and e:
            check(f"{c} / PyTorch eager", a / e, bound)
    a, g = p50("resnet18_b1", "amber"), p50("resnet18_b1", "graphed")
    if a and g:
        check("resnet18_b1 / PyTorch CUDA-graphed", a / g, 1.0)
    if p50("ten_mul", "amber"):
        check("ten_mul per call (us)", 1000 * p50("ten_mul", "amber"), 10.0, "{:.1f}")
    for c in cases:
        am = res.get((c, "amber"), {})
        if am.get("p50_ms") and am.get("first_ms"):
            check(f"{c} first call / steady", am["first_ms"] / am["p50_ms"], 1.2)
    if bw:
        check("fused elementwise / device copy (%)", 100 * bw["fused_over_copy"], 80.0, "{:.0f}", below=False)
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-gpu"))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--bandwidth-mib", type=float, default=256, help="bytes each bandwidth call reads (and writes)")
    ap.add_argument("--precisions", default="tf32,bf16,f16,bf16-model,f16-model")
    a = ap.parse_args()
    models = os.path.join(a.build, "bench-models-gpu")
    if not os.path.exists(os.path.join(models, "cases.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_bench_models.py"), models, "--gpu"],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.path.join(a.build, "bench", "make_bench_archives"), models], check=True,
                   stdout=subprocess.DEVNULL)
    amber = os.path.join(a.build, "bench", "bench_amber_case")
    cases = a.cases.split(",")
    res = {}

    def keep(key, d):
        cur = res.setdefault(key, {})
        for k, v in d.items():
            if isinstance(v, (int, float)) and k != "calls":
                cur[k] = min(cur.get(k, float("inf")), v) if k != "max_abs_diff" else max(cur.get(k, 0), v)
            elif not isinstance(v, (int, float)):
                cur[k] = v

    for r in range(a.rounds):
        for c in cases:
            print(f"round {r + 1}/{a.rounds}: {c}", file=sys.stderr)
            keep((c, "amber"), run_json([amber, os.path.join(models, f"{c}.amber"),
                                         os.path.join(models, f"{c}.io.safetensors"), "--device", a.device,
                                         "--seconds", str(a.seconds), "--no-open"]))
            if not a.no_torch:
                t = run_json([sys.executable, os.path.join(ROOT, "bench", "torch_cuda_case.py"), models, c,
                              "--seconds", str(a.seconds)])
                for variant in ("eager", "eager_cl", "graphed"):
                    if variant in t:
                        keep((c, variant), t[variant])
                res["device"], res["torch"] = t["device"], t["torch"]

    print(f"\nAmber on {a.device} vs PyTorch {res.get('torch', '-')} on {res.get('device', '-')} "
          f"(ms, min over {a.rounds} rounds of each run's median; host inputs, synchronised calls)")
    head = (f"{'case':16} {'amber':>9} {'first':>8} {'2nd':>8} {'idle':>8} {'load':>8} {'eager':>9} {'eager cl':>9} "
            f"{'graphed':>9} {'g idle':>8} ")
    print(head + f"{'a/eager':>8} {'a/graph':>8} {'a MiB':>8} {'t MiB':>8} {'|a-ref|':>9}")
    for c in cases:
        am = res[(c, "amber")]
        e, ecl, g = res.get((c, "eager"), {}), res.get((c, "eager_cl"), {}), res.get((c, "graphed"), {})
        best_eager = min([x["p50_ms"] for x in (e, ecl) if x] or [float("nan")])
        fmt = lambda x: f"{x:9.4g}" if isinstance(x, float) else f"{'-':>9}"  # noqa: E731
        mib = lambda x: f"{x:8.3g}" if isinstance(x, (int, float)) else f"{'-':>8}"  # noqa: E731
        ratio = lambda d: f"{am['p50_ms'] / d:8.2f}" if d == d and d else f"{'-':>8}"  # noqa: E731
        print(f"{c:16} {am['p50_ms']:9.4g} {am['first_ms']:8.3g} {am.get('second_ms', 0):8.3g} "
              f"{am.get('idle_ms', 0):8.3g} {am['load_ms']:8.3g} {fmt(e.get('p50_ms'))} "
              f"{fmt(ecl.get('p50_ms'))} {fmt(g.get('p50_ms'))} {mib(g.get('idle_ms'))} {ratio(best_eager)} "
              f"{ratio(g.get('p50_ms', float('nan')))} {mib(am.get('device_mib'))} {mib(g.get('gpu_mib'))} "
              f"{am['max_abs_diff']:9.2g}")
    print("first: the first call, right after load (the inputs read before it); 2nd: Amber's second call; idle: "
          "the median of 5 calls each after 20 ms idle (a first call's excess that idle calls share is not the first "
          "call's own); g idle: the same for PyTorch's CUDA-graphed calls. a MiB: the most device memory Amber held at once "
          "(weights, arenas, outputs); t MiB: PyTorch's peak allocated, CUDA-graphed run. Neither counts cuDNN's "
          "or cuBLAS's own memory.")
    bw = min((run_json([os.path.join(a.build, "bench", "bench_device_bandwidth"), "--device", a.device, "--mib",
                        str(a.bandwidth_mib)]) for _ in range(a.rounds)), key=lambda r: r["fused_ms"])
    print(f"\nfused elementwise (relu(2x + 1), one node, {bw['mib']:.0f} MiB in, {bw['mib']:.0f} MiB out): "
          f"{bw['fused_gbps']:.0f} GB/s = {100 * bw['fused_over_copy']:.0f}% of the device's copy "
          f"({bw['copy_gbps']:.0f} GB/s, the same bytes; target >= 80%)")
    print(f"fused elementwise, two inputs (relu(x * y + 1), {2 * bw['mib']:.0f} MiB in, {bw['mib']:.0f} MiB out): "
          f"{bw['fused2_gbps']:.0f} GB/s = {100 * bw['fused2_over_copy']:.0f}% of the copy's GB/s")
    if "call_upload_gbps" in bw:
        print(f"a host input's way up ({bw['upload_mb']:.1f} MB, ResNet-18 b64's): a copy from pageable memory "
              f"{bw['pageable_upload_gbps']:.1f} GB/s, through page-locked memory {bw['staged_upload_gbps']:.1f} "
              f"GB/s, a call of relu(x) from the host (the loader's chunks through page-locked memory, the relu "
              f"included) {bw['call_upload_gbps']:.1f} GB/s")
        print(f"and at {bw['small_upload_kib']:.0f} KiB (ResNet-18 b1's, under the loader's 1 MiB bound for its "
              f"chunks): pageable {bw['small_pageable_us']:.1f} us, through page-locked memory "
              f"{bw['small_staged_us']:.1f} us, a call of relu(x) {bw['small_call_us']:.1f} us")
    print("\n[cuda]'s targets:")
    print("\n".join(target_lines(res, cases, bw)))
    precision_table(a, amber, models, [c for c in cases if c not in NOT_IN_PRECISIONS], res)
    return 0


def precision_table(a, amber, models, cases, res):
    precisions = [p for p in a.precisions.split(",") if p]
    if not precisions or not cases:
        return
    got, refused = {}, {}
    for r in range(a.rounds):
        for c in cases:
            for p in precisions:
                if p in refused:
                    continue
                run = subprocess.run([amber, os.path.join(models, f"{c}.amber"), os.path.join(models, f"{c}.io.safetensors"),
                                      "--device", a.device, "--seconds", str(a.seconds), "--no-open", "--precision", p],
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    refused[p] = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}"
                    continue
                d = json.loads(run.stdout.strip().splitlines()[-1])
                cur = got.setdefault((c, p), d)
                if d["p50_ms"] < cur["p50_ms"]:
                    got[(c, p)] = d
    shown = [p for p in precisions if p not in refused]
    print(f"\nAmber's reduced precisions on {a.device} (ms, min over {a.rounds} rounds; ratios against Amber f32 "
          f"above; |a-ref|: against PyTorch's f32)")
    print(f"{'case':16} {'f32':>9}" + "".join(f" {p:>9} {p + '/f32':>9} {'|a-ref|':>9}" for p in shown))
    for c in cases:
        f32 = res[(c, "amber")]["p50_ms"]
        line = f"{c:16} {f32:9.4g}"
        for p in shown:
            d = got.get((c, p))
            line += f" {d['p50_ms']:9.4g} {d['p50_ms'] / f32:9.2f} {d['max_abs_diff']:9.2g}" if d else f" {'-':>9}" * 3
        print(line)
    for p, why in refused.items():
        print(f"{p}: not run: {why}")
    # The whole model in 16 bits against PyTorch's model.to(dtype).
    peers = {"bf16-model": "bfloat16", "f16-model": "float16"}
    halves = [p for p in shown if p in peers]
    if a.no_torch or not halves:
        return
    torch16 = {}
    for r in range(a.rounds):
        for c in cases:
            for p in halves:
                t = run_json([sys.executable, os.path.join(ROOT, "bench", "torch_cuda_case.py"), models, c,
                              "--seconds", str(a.seconds), "--dtype", peers[p]])
                for variant in ("eager", "eager_cl", "graphed"):
                    if variant in t:
                        cur = torch16.setdefault((c, p, variant), t[variant])
                        if t[variant]["p50_ms"] < cur["p50_ms"]:
                            torch16[(c, p, variant)] = t[variant]
    print(f"\nthe whole model in 16 bits: Amber against PyTorch's model.to(dtype) (ms, min over {a.rounds} rounds; "
          f"eager: the better of eager and channels_last)")
    print(f"{'case':16} {'precision':11} {'amber':>9} {'eager':>9} {'graphed':>9} {'a/eager':>8} {'a/graph':>8} "
          f"{'|t-ref|':>9}")
    for c in cases:
        for p in halves:
            d = got.get((c, p))
            eager = [torch16[(c, p, v)]["p50_ms"] for v in ("eager", "eager_cl") if (c, p, v) in torch16]
            g = torch16.get((c, p, "graphed"))
            if not d or not eager or not g:
                continue
            print(f"{c:16} {p:11} {d['p50_ms']:9.4g} {min(eager):9.4g} {g['p50_ms']:9.4g} "
                  f"{d['p50_ms'] / min(eager):8.2f} {d['p50_ms'] / g['p50_ms']:8.2f} {g['max_abs_diff']:9.2g}")


if __name__ == "__main__":
    sys.exit(main())
