#!/usr/bin/python3
"""Trains the digits CNN of tests/test_precision.cpp with PyTorch on scikit-learn's digits data
(1797 8x8 images of handwritten digits, shipped in Debian's python3-sklearn), seeded, in a few
seconds on 2 cores, and writes what the precision tests need.

Usage: gen_digits.py OUT_DIR
Writes OUT_DIR/digits.safetensors (the trained state_dict, parameter names as the C++ twin's)
and OUT_DIR/digits_test.safetensors: the 450 held-out images ("images", f32 [450, 1, 8, 8],
pixels scaled to [0, 1]), their labels ("labels", i64 [450]) and PyTorch's logits for them
("logits", f32 [450, 10]); and 256 training images for int8 calibration ("calibration", f32
[256, 1, 8, 8], never the held-out ones).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from torch2safetensors import save_file  # noqa: E402


class DigitsNet(torch.nn.Module):
    """Two 3x3 convolutions (padding 1) with relu, 2x2 max-pooling, two linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    test, train = order[:450], order[450:]
    model = DigitsNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(40):
        perm = train[torch.randperm(len(train))]
        for i in range(0, len(perm), 64):
            b = perm[i:i + 64]
            opt.zero_grad()
            F.cross_entropy(model(images[b]), labels[b]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        logits = model(images[test])
    accuracy = (logits.argmax(1) == labels[test]).float().mean().item()
    print(f"digits: PyTorch fp32 test accuracy {100 * accuracy:.2f}% on {len(test)} images")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(out, "digits.safetensors"))
    save_file({"images": images[test].contiguous(), "labels": labels[test].contiguous(), "logits": logits,
               "calibration": images[train[:256]].contiguous()},
              os.path.join(out, "digits_test.safetensors"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
