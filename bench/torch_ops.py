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
    feat, rm, rv = torch.randn(32, 512, 7, 7), torch.randn(64), torch.rand(64) + 0.5
    gw, gb, half, gamma256 = torch.randn(64), torch.randn(64), torch.randn(8, 64, 56, 56), torch.randn(256)
    small, tw = torch.randn(8, 64, 28, 28), torch.randn(64, 32, 4, 4)
    rows64, q, k = torch.randn(4096, 64), torch.randn(64, 128, 64), torch.randn(64, 64, 128)
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
        ("avg_pool2d 3x3 s2 p1 [8, 64, 112, 112]", lambda: F.avg_pool2d(planes, 3, 2, 1)),
        ("avg_pool2d 2x2 [8, 64, 112, 112]", lambda: F.avg_pool2d(planes, 2)),
        ("max_pool2d_with_indices 2x2 [8, 64, 112, 112]", lambda: F.max_pool2d(planes, 2, return_indices=True)),
        ("adaptive_avg_pool2d 1 [32, 512, 7, 7]", lambda: F.adaptive_avg_pool2d(feat, 1)),
        ("batch_norm [8, 64, 112, 112]", lambda: F.batch_norm(planes, rm, rv, gw, gb)),
        ("softmax [64, 256, 256] dim 1", lambda: torch.softmax(a, 1)),
        ("log_softmax [8192, 512] last dim", lambda: torch.log_softmax(wide, -1)),
        ("upsample_nearest2d x2 [8, 64, 56, 56]", lambda: F.interpolate(half, size=(112, 112))),
        ("pad 1 [8, 64, 112, 112]", lambda: F.pad(planes, (1, 1, 1, 1))),
        ("flip last dim [64, 256, 256]", lambda: a.flip(-1)),
        ("roll 7 last dim [64, 256, 256]", lambda: a.roll(7, -1)),
        ("repeat [1, 4, 1] of [64, 256, 256]", lambda: a.repeat(1, 4, 1)),
        ("tril [2048, 2048]", lambda: square.tril()),
        ("to f16 [64, 256, 256]", lambda: a.half()),
        ("mul by a row [64, 256, 256] x [256]", lambda: a * gamma256),
        ("sigmoid [64, 256, 256]", lambda: torch.sigmoid(a)),
        ("prod [4096, 1024] last dim", lambda: rows.prod(-1)),
        ("conv_transpose2d 64->32 k4 s2 [8, 64, 28, 28]", lambda: F.conv_transpose2d(small, tw, None, 2, 1)),
        ("scatter_add [4096, 64] into [4096, 1024]", lambda: rows.scatter_add(1, across, rows64)),
        ("bmm [64, 128, 64] x [64, 64, 128]", lambda: torch.bmm(q, k)),
    ]
    print(f"{'eager ops (f32), PyTorch ' + torch.__version__:44} {'ms':>10}")
    with torch.no_grad():
        for what, f in ops:
            print(f"{what:44} {median_ms(f):10.3f}")


if __name__ == "__main__":
    sys.exit(main())
