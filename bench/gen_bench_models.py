#!/usr/bin/python3
"""The PyTorch side of the Amber-vs-libtorch benchmark (bench/run_vs_torch.py).

Usage: /usr/bin/python3 bench/gen_bench_models.py OUT_DIR [--gpu]

For every benchmark case (model x batch) writes, from the same seeded PyTorch models the
tests use (tests/gen_reference.py):
  CASE.traced.pt      torch.jit.trace of the model in eval mode
  CASE.frozen.pt      the same after torch.jit.freeze (optimize_for_inference is applied in
                      C++ after loading: such a module does not load back from a file in 1.13)
  CASE.inputs.pt      a scripted module whose buffers input0.. and expected0 are the inputs
                      and PyTorch's output (read by bench_torch_case)
  CASE.io.safetensors the same tensors for Amber (bench_amber_case)
  MODEL.safetensors   the state_dict (bench/make_bench_archives builds Amber's archives from it)
and cases.json listing the cases: the models', then three single ops (a sort of 8 lines of 32000,
topk of each whole line: a sampler's; a 1024 -> 224 bicubic antialiased resize of a 3-channel
image; the top 50 of one line of 128256 logits). --gpu adds the case only the GPU benchmark runs:
ResNet-18 at batch 64.
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import gen_reference  # noqa: E402
from torch2safetensors import save_file  # noqa: E402


class TenMul(torch.nn.Module):
    def forward(self, x):
        for _ in range(10):
            x = x * x
        return x


class Pairwise(torch.nn.Module):
    def forward(self, a, b):
        d = a.unsqueeze(1) - b.unsqueeze(0)
        return (d * d).sum(-1)


class TopkSort(torch.nn.Module):
    """A sampler's sort of its logits: the top k of the whole line (values)."""

    def forward(self, x):
        return torch.topk(x, x.shape[-1], dim=-1).values


class TopkVocab(torch.nn.Module):
    """A sampler's top 50 of one line of logits over a large vocabulary (values)."""

    def forward(self, x):
        return torch.topk(x, 50, dim=-1).values


class ResizeAa(torch.nn.Module):
    """An image pipeline's downscale to 224 x 224, bicubic with antialiasing."""

    def forward(self, x):
        return torch.nn.functional.interpolate(x, size=(224, 224), mode="bicubic", antialias=True,
                                               align_corners=False)


def bench_models():
    """The tests' models (gen_reference.build_models) and the benchmark's own."""
    models, _, _ = gen_reference.build_models()
    models.update(ten_mul=TenMul(), pairwise=Pairwise(), topk_sort=TopkSort(), topk_vocab=TopkVocab(),
                  resize_aa=ResizeAa())
    return models


class Holder(torch.nn.Module):
    def __init__(self, tensors):
        super().__init__()
        for k, t in tensors.items():
            self.register_buffer(k, t)

    def forward(self):
        return 0


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--gpu"):
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    gpu = len(sys.argv) == 3
    os.makedirs(out, exist_ok=True)
    models = bench_models()
    g = torch.Generator().manual_seed(7)
    cases = [  # case, model, inputs
        ("ten_mul", "ten_mul", [1 + 0.02 * torch.randn(5, generator=g)]),
        ("pairwise", "pairwise", [torch.randn(100, 2, generator=g), torch.randn(200, 2, generator=g)]),
        ("lenet_b1", "lenet", [torch.randn(1, 1, 32, 32, generator=g)]),
        ("lenet_b64", "lenet", [torch.randn(64, 1, 32, 32, generator=g)]),
        ("resnet18_b1", "resnet18", [torch.randn(1, 3, 224, 224, generator=g)]),
        ("resnet18_b8", "resnet18", [torch.randn(8, 3, 224, 224, generator=g)]),
        ("transformer_b1", "transformer", [torch.randn(1, 128, 256, generator=g)]),
        ("transformer_b8", "transformer", [torch.randn(8, 128, 256, generator=g)]),
        ("elman_rnn", "elman_rnn", [torch.randn(6, 1, 10, generator=g)]),
    ]
    # The transformer at four sequence lengths: libtorch traces each length anew (its trace
    # fixes T); Amber serves them all from one archive traced once (transformer_any_t.amber,
    # "archive" below).
    any_t = [(f"transformer_t{t}", "transformer", [torch.randn(1, t, 256, generator=g)]) for t in (16, 64, 128, 512)]
    cases += any_t
    if gpu:
        cases += [("resnet18_b64", "resnet18", [torch.randn(64, 3, 224, 224, generator=g)])]
    cases += [
        ("topk_sort", "topk_sort", [torch.randn(8, 32000, generator=g)]),
        ("resize_aa", "resize_aa", [torch.rand(1, 3, 1024, 1024, generator=g)]),
        ("topk_vocab", "topk_vocab", [torch.randn(1, 128256, generator=g)]),
    ]
    torch.set_num_threads(1)
    listed = []
    for case, name, inputs in cases:
        model = models[name].eval()
        sd = model.state_dict()
        if sd:
            save_file(sd, os.path.join(out, f"{name}.safetensors"), {"model": name})
        with torch.no_grad():
            expected = model(*inputs)
            traced = torch.jit.trace(model, tuple(inputs), check_trace=False)
            traced.save(os.path.join(out, f"{case}.traced.pt"))
            torch.jit.freeze(traced).save(os.path.join(out, f"{case}.frozen.pt"))
        tensors = {f"input{i}": t.contiguous() for i, t in enumerate(inputs)}
        tensors["expected0"] = expected.contiguous()
        torch.jit.script(Holder(tensors)).save(os.path.join(out, f"{case}.inputs.pt"))
        save_file(tensors, os.path.join(out, f"{case}.io.safetensors"), {"case": case})
        listed.append({"case": case, "model": name, "inputs": [list(t.shape) for t in inputs],
                       "batch": int(inputs[0].shape[1] if name == "elman_rnn" else
                                    inputs[0].shape[0] if inputs[0].dim() > 1 else 1)})
        if case in [c for c, _, _ in any_t]:
            listed[-1]["archive"] = "transformer_any_t"
        print(f"{case}: {name}, inputs {[list(t.shape) for t in inputs]}")
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(listed, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
