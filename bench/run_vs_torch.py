#!/usr/bin/python3
"""Amber vs libtorch on CPU, side by side: one command prints the whole table.

Usage: /usr/bin/python3 bench/run_vs_torch.py [--rounds R] [--seconds S] [--cases a,b,...]

Builds build-bench/ (Release, -DAMBER_BENCH_TORCH=ON: needs Debian's libtorch-dev), writes
the same seeded models as TorchScript (torch.jit.trace, and frozen) and as Amber archives
(bench/gen_bench_models.py, bench/make_bench_archives), then for every case runs, in
separate processes and interleaved round by round so that noise hits both alike:
  - Amber (bench_amber_case): defaults (no tuning, no environment variable), and 1 and 2
    intra-op threads (to check the defaults are within 10% of Amber's best);
  - libtorch (bench_torch_case) out of the box: traced, frozen, and frozen +
    torch::jit::optimize_for_inference, no thread setting, no environment variable;
  - libtorch tuned: each variant with 1 and 2 threads x OMP_WAIT_POLICY active / passive,
    with OPENBLAS_NUM_THREADS=1;
  - exec + load + one call + exit, wall time, for Amber's defaults and libtorch's best.
Each number is the minimum over rounds. Ratios are Amber / libtorch.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build-bench")
MODELS = os.path.join(BUILD, "bench-models")


def sh(cmd, **kw):
    subprocess.run(cmd, check=True, **kw)


def prepare():
    sh(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DAMBER_BUILD_TESTS=OFF",
        "-DAMBER_BENCH_TORCH=ON"], stdout=subprocess.DEVNULL)
    sh(["cmake", "--build", BUILD, "-j2", "--target", "make_bench_archives", "bench_amber_case", "bench_torch_case"],
       stdout=subprocess.DEVNULL)
    stamp = os.path.join(MODELS, "cases.json")
    if not os.path.exists(stamp):
        sh(["/usr/bin/python3", os.path.join(ROOT, "bench", "gen_bench_models.py"), MODELS], stdout=subprocess.DEVNULL)
    sh([os.path.join(BUILD, "bench", "make_bench_archives"), MODELS])
    with open(stamp) as f:
        return json.load(f)


def run(cmd, env=None):
    e = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        e.pop(k, None)  # out of the box means no environment variable
    e.update(env or {})
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=e, capture_output=True, text=True)
    wall = (time.perf_counter() - t0) * 1e3
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["wall_ms"] = wall
    return res


def keep_min(store, key, res):
    old = store.get(key)
    if old is None:
        store[key] = dict(res)
    else:
        for k, v in res.items():
            old[k] = min(old[k], v) if k not in ("threads",) else v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--cases", default="")
    a = ap.parse_args()
    cases = prepare()
    if a.cases:
        cases = [c for c in cases if c["case"] in a.cases.split(",")]
    amber = os.path.join(BUILD, "bench", "bench_amber_case")
    torch = os.path.join(BUILD, "bench", "bench_torch_case")
    secs = ["--seconds", str(a.seconds)]
    results = {}
    torch_kinds = {"traced": ("traced", []), "frozen": ("frozen", []), "frozen+ofi": ("frozen", ["--optimize"])}
    tuned = [(t, w) for t in (1, 2) for w in ("active", "passive")]
    for r in range(a.rounds):
        for c in cases:
            name = c["case"]
            arc = os.path.join(MODELS, c.get("archive", name) + ".amber")  # shared by the any-length cases
            io = os.path.join(MODELS, name + ".io.safetensors")
            ins = os.path.join(MODELS, name + ".inputs.pt")
            res = results.setdefault(name, {})
            print(f"round {r + 1}/{a.rounds}: {name}", file=sys.stderr, flush=True)
            keep_min(res, "amber", run([amber, arc, io] + secs))
            for t in (1, 2):
                keep_min(res, f"amber t{t}", run([amber, arc, io, "--threads", str(t)] + secs))
            for kind, (file, extra) in torch_kinds.items():
                pt = os.path.join(MODELS, f"{name}.{file}.pt")
                keep_min(res, f"torch {kind}", run([torch, pt, ins] + extra + secs))
                for t, w in tuned:
                    keep_min(res, f"torch {kind} t{t} {w}",
                             run([torch, pt, ins, "--threads", str(t)] + extra + secs,
                                 {"OMP_WAIT_POLICY": w, "OPENBLAS_NUM_THREADS": "1"}))
            keep_min(res, "amber exec", run([amber, arc, io, "--iters", "1", "--no-open"]))
            best = min((k for k in res if k.startswith("torch")), key=lambda k: res[k]["p50_ms"])
            file, extra = torch_kinds[best.split()[1]]
            env = {}
            parts = best.split()
            if len(parts) == 4:
                extra = extra + ["--threads", parts[2][1:]]
                env = {"OMP_WAIT_POLICY": parts[3], "OPENBLAS_NUM_THREADS": "1"}
            keep_min(res, "torch exec", run([torch, os.path.join(MODELS, f"{name}.{file}.pt"), ins, "--iters", "1"]
                                            + extra, env))
    print_table(cases, results)


def print_table(cases, results):
    def ratio(x, y):
        return f"{x / y:.2f}" if y > 0 else "-"

    print("\nlatency (ms, min over rounds of each run's median; ratios Amber / libtorch)")
    hdr = (f"{'case':<15} {'amber':>8} {'a best':>8} {'torch ootb':>10} {'torch best':>10} {'best config':<28}"
           f" {'vs best':>7} {'vs tr/frz':>9} {'a p99':>8} {'t p99':>8} {'a items/s':>10} {'t items/s':>10}")
    print(hdr)
    for c in cases:
        res = results.get(c["case"])
        if not res:
            continue
        am = res["amber"]
        a_best = min(res[k]["p50_ms"] for k in ("amber", "amber t1", "amber t2"))
        ootb = min(res[f"torch {k}"]["p50_ms"] for k in ("traced", "frozen", "frozen+ofi"))
        tk = [k for k in res if k.startswith("torch") and "exec" not in k]
        best = min(tk, key=lambda k: res[k]["p50_ms"])
        trfz = min((k for k in tk if "ofi" not in k), key=lambda k: res[k]["p50_ms"])
        b = res[best]
        items = c["batch"]
        print(f"{c['case']:<15} {am['p50_ms']:>8.4g} {a_best:>8.4g} {ootb:>10.4g} {b['p50_ms']:>10.4g} "
              f"{best[6:]:<28} {ratio(am['p50_ms'], b['p50_ms']):>7} {ratio(am['p50_ms'], res[trfz]['p50_ms']):>9} "
              f"{am['p99_ms']:>8.4g} {b['p99_ms']:>8.4g} {items * 1e3 / am['mean_ms']:>10.0f} "
              f"{items * 1e3 / b['mean_ms']:>10.0f}")
    print("\nload, first call, memory, size (ms, MiB; torch load = torch::jit::load of the frozen file; "
          "'+ofi' = optimize_for_inference after it)")
    print(f"{'case':<15} {'a open':>7} {'a open+xxh':>10} {'t load':>7} {'open/t':>6} {'+xxh/t':>6} {'a load':>7} "
          f"{'a first':>8} {'first/p50':>9} {'t ld+1st':>8} {'+ofi':>7} {'a ld+1st':>8} {'ratio':>6} "
          f"{'a RSS':>6} {'t RSS':>6} {'ratio':>6} {'archive':>8} {'.pt':>8} {'a exec':>7} {'t exec':>7} {'ratio':>6}")
    for c in cases:
        res = results.get(c["case"])
        if not res:
            continue
        am, fz, ofi = res["amber"], res["torch frozen"], res["torch frozen+ofi"]
        tk = [k for k in res if k.startswith("torch") and "exec" not in k]
        best = res[min(tk, key=lambda k: res[k]["p50_ms"])]
        a_lf = am["load_ms"] + am["first_ms"]
        t_lf = min(fz["load_ms"] + fz["first_ms"], ofi["load_ms"] + ofi["optimize_ms"] + ofi["first_ms"])
        size_a = os.path.getsize(os.path.join(MODELS, c.get("archive", c["case"]) + ".amber")) / 2**20
        size_t = os.path.getsize(os.path.join(MODELS, c["case"] + ".frozen.pt")) / 2**20
        print(f"{c['case']:<15} {am['open_ms']:>7.2f} {am['open_verify_ms']:>10.2f} {fz['load_ms']:>7.2f} "
              f"{ratio(am['open_ms'], fz['load_ms']):>6} {ratio(am['open_verify_ms'], fz['load_ms']):>6} "
              f"{am['load_ms']:>7.2f} {am['first_ms']:>8.4g} {ratio(am['first_ms'], am['p50_ms']):>9} "
              f"{t_lf:>8.1f} {ofi['optimize_ms']:>7.1f} {a_lf:>8.1f} {ratio(a_lf, t_lf):>6} {am['rss_mib']:>6.0f} "
              f"{best['rss_mib']:>6.0f} {ratio(am['rss_mib'], best['rss_mib']):>6} {size_a:>8.2f} {size_t:>8.2f} "
              f"{res['amber exec']['wall_ms']:>7.0f} {res['torch exec']['wall_ms']:>7.0f} "
              f"{ratio(res['amber exec']['wall_ms'], res['torch exec']['wall_ms']):>6}")
    print("\nmax |output - PyTorch's|: " + ", ".join(
        f"{c['case']} amber {results[c['case']]['amber']['max_abs_diff']:.2g}" for c in cases if c["case"] in results))
    print_libraries()


def closure(exe):
    out = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    libs = {}
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and parts[1].strip().startswith("/"):
            path = os.path.realpath(parts[1].split()[0])
            libs[os.path.basename(path)] = os.path.getsize(path)
    return libs


def print_libraries():
    a = closure(os.path.join(BUILD, "bench", "bench_amber_case"))
    t = closure(os.path.join(BUILD, "bench", "bench_torch_case"))
    rt = os.path.realpath(os.path.join(BUILD, "libamber_runtime.so"))
    torch_own = sum(v for k, v in t.items() if k.startswith(("libtorch", "libc10")))
    mib = 2**20
    print(f"\nlibraries: libamber_runtime {os.path.getsize(rt) / mib:.1f} MiB vs libtorch + libc10 "
          f"{torch_own / mib:.1f} MiB; shared-library closure (ldd) of the Amber service program "
          f"{sum(a.values()) / mib:.1f} MiB ({len(a)} libraries) vs the libtorch program {sum(t.values()) / mib:.1f} MiB "
          f"({len(t)} libraries): ratio {sum(a.values()) / sum(t.values()):.2f}")


if __name__ == "__main__":
    sys.exit(main())
