#!/usr/bin/python3
"""Python's onnx.checker, full check (strict shape inference), on every model Amber exported.

Usage: check_onnx_export.py DIR   (test_onnx_export writes one model per op there)

Exits 0 when every DIR/*.onnx passes; skips, saying so, when this python has no onnx module
(python3-onnx; a GPU machine's own python may lack it). The C++ test already ran libonnx's
checker and shape inference on each: this is the same check through ONNX's Python API.
"""
import glob
import os
import sys

try:
    import onnx
except ImportError:
    print("SKIPPED: this python has no onnx module (Debian's python3-onnx)")
    sys.exit(0)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    paths = sorted(glob.glob(os.path.join(argv[1], "*.onnx")))
    if not paths:
        print(f"FAIL: no exported models in {argv[1]}", file=sys.stderr)
        return 1
    bad = 0
    for p in paths:
        try:
            onnx.checker.check_model(onnx.load(p), full_check=True)
        except Exception as e:  # noqa: BLE001 - every checker error is a failure to report
            bad += 1
            print(f"FAIL: {os.path.basename(p)}: {str(e).splitlines()[0]}")
    print(f"onnx {onnx.__version__}: {len(paths) - bad} of {len(paths)} exported models pass "
          "onnx.checker.check_model(full_check=True)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
