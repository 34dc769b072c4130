#!/usr/bin/python3
"""The ONNX zoo's models as TorchScript for libtorch (bench_torch_case): each model of
tests/gen_onnx_zoo.py, built the same way (same seeds and weights), traced at batch 1 and frozen
(ZOO/NAME.frozen.pt), beside its batch-1 input and PyTorch's output (ZOO/NAME.inputs.pt, the
holder bench_torch_case reads: buffers input0 and expected0).

Usage: gen_zoo_torch.py ZOO_DIR [NAME...]   (Debian's /usr/bin/python3; after the zoo exists)
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import gen_onnx_zoo  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_bench_models import Holder  # noqa: E402  (the inputs holder bench_torch_case reads)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    zoo = sys.argv[1]
    names = sys.argv[2:] or [e["model"] for e in json.load(open(os.path.join(zoo, "zoo.json")))]
    torch.set_num_threads(2)
    for name in names:
        model, shape = gen_onnx_zoo.build(name)
        model.eval()
        x = torch.randn([1] + shape, generator=torch.Generator().manual_seed(11))
        with torch.no_grad():
            frozen = torch.jit.freeze(torch.jit.trace(model, x))
            y = model(x)
        frozen.save(os.path.join(zoo, f"{name}.frozen.pt"))
        torch.jit.script(Holder({"input0": x, "expected0": y})).save(os.path.join(zoo, f"{name}.inputs.pt"))
        print(f"{name}: traced and frozen", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
