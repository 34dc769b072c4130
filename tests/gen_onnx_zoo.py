#!/usr/bin/python3
"""The ONNX zoo's reference data: torchvision models (seeded weights, nothing downloaded), the
samples' transformer encoder and a GPT-2-style causal decoder block, each exported with
torch.onnx.export with a dynamic batch (and a small GRU, LSTM and RNN stack) (OUT/NAME.onnx) beside seeded inputs at batch 1 and 4
and PyTorch's outputs (OUT/NAME.io.safetensors: x1, y1, x4, y4); OUT/zoo.json lists them.
The transformer is also exported with its sequence length dynamic too (OUT/transformer_seq.onnx,
dims N and "seq", with inputs and outputs at (N, T) = (2, 16), (1, 77), (1, 300) in
OUT/transformer_seq.io.safetensors: x.n2t16, y.n2t16, ...).

Usage: gen_onnx_zoo.py OUT [NAME...]   (Debian's /usr/bin/python3, which sees python3-torch)
"""
import json
import math
import os
import sys
import time

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch2safetensors import save_file  # noqa: E402

VISION = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "densenet121",
          "squeezenet1_1", "shufflenet_v2_x1_0", "regnet_y_400mf", "convnext_tiny", "vit_b_16"]


class CausalBlock(torch.nn.Module):
    """A GPT-2 block: pre-norm causal self-attention and a GELU MLP, both residual."""

    def __init__(self, d=256, heads=4, seq=64):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(n, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(n, t, d)
        x = x + self.proj(y)
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class Recurrent(torch.nn.Module):
    """A bidirectional GRU, a two-layer LSTM and a ReLU RNN, batch first: ONNX's GRU (with
    linear_before_reset, as PyTorch's), LSTM and RNN as torch.onnx.export writes them."""

    def __init__(self, d=32, h=24):
        super().__init__()
        self.gru = torch.nn.GRU(d, h, batch_first=True, bidirectional=True)
        self.lstm = torch.nn.LSTM(2 * h, h, num_layers=2, batch_first=True)
        self.rnn = torch.nn.RNN(h, h, nonlinearity="relu", batch_first=True)

    def forward(self, x):
        y, _ = self.gru(x)
        y, _ = self.lstm(y)
        y, _ = self.rnn(y)
        return y


def calibrate(model, shape):
    """Seeded weights that exercise the model: torchvision zero-initialises some layers (ViT's
    head) and leaves batch norms at mean 0, variance 1, which shrinks a deep network's outputs
    to ~1e-15. Zero weight matrices get small random values, and the batch norms' running
    statistics are measured on random batches (train mode, cumulative averages)."""
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        if norms:
            for m in norms:
                m.reset_running_stats()
                m.momentum = None
            model.train()
            for _ in range(3):
                model(torch.randn([8] + shape, generator=g))
    model.eval()


def build(name):
    torch.manual_seed(0)
    if name in VISION:
        model, shape = getattr(torchvision.models, name)(), [3, 224, 224]
        calibrate(model, shape)
        return model, shape
    if name == "transformer":
        import gen_reference
        models, _, _ = gen_reference.build_models()
        return models["transformer"], [128, 256]
    if name == "gpt2_block":
        return CausalBlock(), [64, 256]
    if name == "recurrent":
        return Recurrent(), [7, 32]
    raise SystemExit(f"unknown model {name}")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    names = sys.argv[2:] or VISION + ["transformer", "gpt2_block", "recurrent"]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    listed = []
    for name in names:
        start = time.time()
        model, shape = build(name)
        model.eval()
        g = torch.Generator().manual_seed(11)
        x1, x4 = torch.randn([1] + shape, generator=g), torch.randn([4] + shape, generator=g)
        with torch.no_grad():
            y1, y4 = model(x1), model(x4)
        # Exported with gradients enabled: PyTorch's fused inference path for transformer layers
        # (aten::_transformer_encoder_layer_fwd) has no ONNX form, and it is skipped then.
        torch.onnx.export(model, x1, os.path.join(out, f"{name}.onnx"), input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=14)
        save_file({"x1": x1, "y1": y1.contiguous(), "x4": x4, "y4": y4.contiguous()},
                  os.path.join(out, f"{name}.io.safetensors"), {"model": name})
        listed.append({"model": name, "input": shape})
        print(f"{name}: exported in {time.time() - start:.1f} s", flush=True)
    if "transformer" in names:  # one archive for every sequence length (amber import --dynamic)
        model, shape = build("transformer")
        model.eval()
        g = torch.Generator().manual_seed(12)
        axes = {0: "N", 1: "seq"}
        torch.onnx.export(model, torch.randn([1] + shape, generator=g), os.path.join(out, "transformer_seq.onnx"),
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": axes, "y": axes},
                          opset_version=14)
        io = {}
        for n, t in [(2, 16), (1, 77), (1, 300)]:
            x = torch.randn([n, t] + shape[1:], generator=g)
            with torch.no_grad():
                io[f"x.n{n}t{t}"], io[f"y.n{n}t{t}"] = x, model(x).contiguous()
        save_file(io, os.path.join(out, "transformer_seq.io.safetensors"), {"model": "transformer_seq"})
    with open(os.path.join(out, "zoo.json"), "w") as f:
        json.dump(listed, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
