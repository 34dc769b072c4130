#!/usr/bin/python3
"""PyTorch's side of bench_kernels' last table (common eager ops on mid-sized f32 tensors): the
same ops on the same shapes, in the same order, each the median over 5 rounds of a round's mean
of 20 calls (as bench_kernels times them, bench_util.h's median_seconds).

Usage: /usr/bin/python3 bench/torch_ops.py [threads] (default 2, as bench_kernels)
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def median_ms(f, calls=20, rounds=5):
    f()
    per_round = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        per_round.append((time.perf_counter() - t0) / calls)
    return statistics.median(per_round) * 1e3


def main():
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    a, b, rows = torch.randn(64, 256, 256), torch.randn(64, 256, 256), torch.randn(4096, 1024)
    wide, gamma, beta, lines = torch.randn(8192, 512), torch.randn(512), torch.randn(512), torch.randn(64, 16384)
    table, picks = torch.randn(50000, 256), (torch.rand(4096) * 49999).long()
    across, square = (torch.rand(4096, 64) * 1023).long(), torch.randn(2048, 2048)
    maps, planes, mask = torch.randn(32, 256, 28, 28), torch.randn(8, 64, 112, 112), a > 0
    parts = [torch.randn(1024, 1024) for _ in range(4)]
    ops = [
        ("add [64, 256, 256]", lambda: a + b),
        ("gelu [64, 256, 256]", lambda: F.gelu(a)),
        ("gelu tanh [64, 256, 256]", lambda: F.gelu(a, approximate="tanh")),
        ("where [64, 256, 256]", lambda: torch.where(mask, a, b)),
        ("softmax [8192, 512] last dim", lambda: torch.softmax(wide, -1)),
        ("layer_norm [8192, 512]", lambda: F.layer_norm(wide, (512,), gamma, beta)),
        ("sum [4096, 1024] last dim", lambda: rows.sum(-1)),
        ("sum [4096, 1024] first dim", lambda: rows.sum(0)),
        ("mean [32, 256, 28, 28] over H, W", lambda: maps.mean((2, 3))),
        ("amax [4096, 1024] last dim", lambda: rows.amax(-1)),
        ("argmax [4096, 1024] last dim", lambda: rows.argmax(-1)),
        ("cumsum [64, 16384] last dim", lambda: lines.cumsum(1)),
        ("index_select 4096 rows of [50000, 256]", lambda: table.index_select(0, picks)),
        ("embedding 4096 rows of [50000, 256]", lambda: F.embedding(picks, table)),
        ("gather [4096, 64] of [4096, 1024]", lambda: rows.gather(1, across)),
        ("cat 4 x [1024, 1024] along dim 1", lambda: torch.cat(parts, 1)),
        ("[2048, 2048] transposed, contiguous", lambda: square.t().contiguous()),
        ("max_pool2d 3x3 s2 p1 [8, 64, 112, 112]", lambda: F.max_pool2d(planes, 3, 2, 1)),
    ]
    print(f"{'eager ops (f32), PyTorch ' + torch.__version__:44} {'ms':>10}")
    with torch.no_grad():
        for what, f in ops:
            print(f"{what:44} {median_ms(f):10.3f}")


if __name__ == "__main__":
    sys.exit(main())
