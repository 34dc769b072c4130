#!/usr/bin/python3
"""Reference data for Amber's tests, computed by PyTorch (Debian's python3-torch).

Usage: /usr/bin/python3 tests/gen_reference.py OUT_DIR

Writes OUT_DIR/ops.safetensors: for every case of the table below, the inputs (as stored:
a non-contiguous input is stored in a layout from which the C++ test rebuilds the same
strided view), the expected outputs, and in __metadata__["cases"] a JSON list describing
each case (op name as in Amber's op table, attributes by name, layouts, tolerances, or the
error Amber must raise where PyTorch raises too). Also writes OUT_DIR/core.safetensors
with torch's type-promotion table, printed tensors and seeded random numbers, and for
each model (torchvision's ResNet-18, the transformer encoder of DESIGN.md section 9, LeNet,
the Elman RNN, the decoder) MODEL.safetensors (its state_dict) and MODEL_io.safetensors (inputs and
outputs at several batch sizes), and OUT_DIR/seeds_io.safetensors with the inputs and
outputs of the seed programs of DESIGN.md section 9 (samples/models/programs.h).

Numbers always come from PyTorch, never from Amber. Tolerance rule: |amber - ref| <=
atol + rtol * |ref|; integer and bool results must match exactly.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from torch2safetensors import save_file  # noqa: E402

DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
          "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
          "u8": torch.uint8, "bool": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}

gen = torch.Generator().manual_seed(1234)


class In:
    """One input: shape, dtype, value kind, and the layout the C++ side rebuilds.

    kind: "randn" (normal), "pos" (0.5..2.5), "nonzero" (|x| in 0.5..2.5 with random sign),
    "int" (-9..9), "nzint" (+-1..9), "uint" (0..9), "bool", "idxN" (0..N-1), "wide" (normal
    times 5), "halves" (multiples of 0.5 in -4..4, zeros of both signs included), "unit"
    (-0.99..0.99), "ge1" (1..5).
    layout: None (contiguous), ("t", a, b) transposed dims a and b, ("s2", d) every second
    element along d, ("exp", d, n) a size-1 dim d expanded to n (stride 0), ("cl",) a 4-D
    tensor in channels-last memory (stored as NHWC, rebuilt with permute(0, 3, 1, 2)).
    """

    def __init__(self, shape, dtype="f32", kind="randn", layout=None):
        self.shape, self.dtype, self.kind, self.layout = tuple(shape), dtype, kind, layout

    def make(self):
        dt = DTYPES[self.dtype]
        shape = self.shape
        if self.layout and self.layout[0] == "exp":
            shape = list(shape)
            shape[self.layout[1]] = 1
        if self.kind == "randn":
            x = torch.randn(shape, generator=gen, dtype=torch.float64)
        elif self.kind == "pos":
            x = torch.rand(shape, generator=gen, dtype=torch.float64) * 2 + 0.5
        elif self.kind == "nonzero":
            x = torch.rand(shape, generator=gen, dtype=torch.float64) * 2 + 0.5
            x = x * (torch.randint(0, 2, shape, generator=gen) * 2 - 1)
        elif self.kind == "int":
            x = torch.randint(-9, 10, shape, generator=gen)
        elif self.kind == "nzint":
            x = torch.randint(1, 10, shape, generator=gen) * (torch.randint(0, 2, shape, generator=gen) * 2 - 1)
        elif self.kind == "uint":
            x = torch.randint(0, 10, shape, generator=gen)
        elif self.kind == "bool":
            x = torch.randint(0, 2, shape, generator=gen).bool()
        elif self.kind == "wide":
            x = torch.randn(shape, generator=gen, dtype=torch.float64) * 5
        elif self.kind == "unit":
            x = torch.rand(shape, generator=gen, dtype=torch.float64) * 1.98 - 0.99
        elif self.kind == "ge1":
            x = torch.rand(shape, generator=gen, dtype=torch.float64) * 4 + 1
        elif self.kind == "halves":
            x = torch.randint(-8, 9, shape, generator=gen).to(torch.float64) / 2
            x = torch.where(torch.randint(0, 4, shape, generator=gen) == 0, x * -0.0, x)
        elif self.kind == "fixed":  # Fixed: given values
            x = self.value
        elif self.kind.startswith("idx"):  # valid indices 0..N-1
            x = torch.randint(0, int(self.kind[3:]), shape, generator=gen)
        else:
            raise ValueError(self.kind)
        x = x.to(dt)
        # stored: the tensor written to the file; logical: what the op sees.
        if self.layout is None:
            return x, x
        if self.layout[0] == "t":
            _, a, b = self.layout
            stored = x.transpose(a, b).contiguous()
            return stored, stored.transpose(a, b)
        if self.layout[0] == "s2":
            d = self.layout[1]
            big = list(x.shape)
            big[d] *= 2
            stored = torch.zeros(big, dtype=dt)
            idx = [slice(None)] * x.dim()
            idx[d] = slice(0, None, 2)
            stored[tuple(idx)] = x
            return stored, stored[tuple(idx)]
        if self.layout[0] == "exp":
            return x, x.expand(self.shape)
        if self.layout[0] == "cl":
            stored = x.permute(0, 2, 3, 1).contiguous()
            return stored, stored.permute(0, 3, 1, 2)
        raise ValueError(self.layout)

    def spec(self):
        return {"layout": list(self.layout) if self.layout else None}


CASES = []


def case(name, op, fn, inputs, attrs=None, atol=1e-6, rtol=1e-5, error=None):
    CASES.append(dict(name=name, op=op, fn=fn, inputs=inputs, attrs=attrs or {}, atol=atol, rtol=rtol, error=error))


# ---- binary arithmetic: shapes, broadcasting, non-contiguous inputs, promotion ----
BINARY = {
    "add": lambda a, b, alpha=1: torch.add(a, b, alpha=alpha),
    "sub": lambda a, b, alpha=1: torch.sub(a, b, alpha=alpha),
    "mul": lambda a, b: torch.mul(a, b),
    "div": lambda a, b, rounding_mode=None: torch.div(a, b, rounding_mode=rounding_mode),
}
SHAPES = [
    ("1", [1], [1]),
    ("5", [5], [5]),
    ("7x13", [7, 13], [7, 13]),
    ("bcast_7x1x13_5x1", [7, 1, 13], [5, 1]),
    ("bcast_1_13", [1], [13]),
    ("scalar0d_7", [], [7]),
]
for op, fn in BINARY.items():
    kb = "nonzero" if op == "div" else "randn"
    for sname, sa, sb in SHAPES:
        case(f"{op}_{sname}", op, fn, [In(sa), In(sb, kind=kb)])
    case(f"{op}_noncontig_t", op, fn, [In([7, 13], layout=("t", 0, 1)), In([7, 13], kind=kb, layout=("s2", 1))])
    case(f"{op}_noncontig_expand", op, fn, [In([5, 7, 13], layout=("exp", 1, 7)), In([13], kind=kb)])
    case(f"{op}_f64", op, fn, [In([5, 7], "f64"), In([7], "f64", kind=kb)], atol=1e-12, rtol=1e-12)
for dt in ["i64", "i32", "i16", "i8", "u8"]:
    kind = "uint" if dt == "u8" else "int"
    case(f"add_{dt}", "add", BINARY["add"], [In([5, 7], dt, kind), In([7], dt, kind)], attrs={"alpha": 3})
    case(f"mul_{dt}", "mul", BINARY["mul"], [In([13], dt, kind), In([13], dt, kind)])
    case(f"sub_{dt}", "sub", BINARY["sub"], [In([7, 5], dt, kind, ("t", 0, 1)), In([5], dt, kind)])
case("add_alpha_f32", "add", BINARY["add"], [In([5, 7]), In([7])], attrs={"alpha": 2.5})
case("sub_alpha_f32", "sub", BINARY["sub"], [In([13]), In([13])], attrs={"alpha": -0.5})
# Type promotion between tensors (dimensioned and zero-dim).
for da, db in [("i32", "f32"), ("i64", "i32"), ("u8", "i8"), ("f32", "f64"), ("bool", "i32"), ("u8", "i16"),
               ("i16", "f64")]:
    ka = "uint" if da == "u8" else ("bool" if da == "bool" else ("int" if da[0] in "iu" else "randn"))
    kb = "uint" if db == "u8" else ("bool" if db == "bool" else ("int" if db[0] in "iu" else "randn"))
    case(f"promote_add_{da}_{db}", "add", BINARY["add"], [In([5, 7], da, ka), In([7], db, kb)])
case("promote_zero_dim_f64_with_i32", "mul", BINARY["mul"], [In([7], "i32", "int"), In([], "f64")], atol=1e-12)
case("promote_zero_dim_f64_with_f32", "mul", BINARY["mul"], [In([7], "f32"), In([], "f64")])
case("promote_zero_dim_i64_with_i8", "add", BINARY["add"], [In([7], "i8", "int"), In([], "i64", "int")])
# Division: true division of integers gives f32; rounding modes.
case("div_int_true", "div", BINARY["div"], [In([5, 7], "i64", "int"), In([7], "i32", "nzint")])
for mode in ["trunc", "floor"]:
    case(f"div_{mode}_f32", "div", BINARY["div"], [In([7, 13]), In([13], kind="nonzero")], attrs={"rounding_mode": mode})
    case(f"div_{mode}_i32", "div", lambda a, b, rounding_mode: torch.div(a, b, rounding_mode=rounding_mode),
         [In([7, 13], "i32", "int"), In([13], "i32", "nzint")], attrs={"rounding_mode": mode})
case("div_bad_mode", "div", BINARY["div"], [In([5]), In([5], kind="nonzero")], attrs={"rounding_mode": "round"},
     error="rounding_mode")
# Broadcasting errors name the op and both shapes.
case("add_not_broadcastable", "add", BINARY["add"], [In([2, 3]), In([4])], error="add: shapes [2, 3] and [4]")
case("mul_not_broadcastable", "mul", BINARY["mul"], [In([7, 5]), In([7])], error="mul: shapes [7, 5] and [7]")
case("sub_bool", "sub", BINARY["sub"], [In([5], "bool", "bool"), In([5], "bool", "bool")], error="sub")
case("add_int_float_alpha", "add", BINARY["add"], [In([5], "i32", "int"), In([5], "i32", "int")],
     attrs={"alpha": 0.5}, error="alpha must not be a floating point")

# ---- tensor with a C++ number ----
SCALAR = {
    "add.Scalar": lambda a, other, alpha=1: torch.add(a, other, alpha=alpha),
    "sub.Scalar": lambda a, other, alpha=1: torch.sub(a, other, alpha=alpha),
    "rsub.Scalar": lambda a, other, alpha=1: torch.rsub(a, other, alpha=alpha),
    "mul.Scalar": lambda a, other: torch.mul(a, other),
    "div.Scalar": lambda a, other, rounding_mode=None: torch.div(a, other, rounding_mode=rounding_mode),
}
for op, fn in SCALAR.items():
    base = op.split(".")[0]
    case(f"{base}_scalar_f32_13", op, fn, [In([13])], attrs={"other": 2.5})
    case(f"{base}_scalar_f32_noncontig", op, fn, [In([7, 13], layout=("t", 0, 1))], attrs={"other": -3})
    case(f"{base}_scalar_i32_int", op, fn, [In([5, 7], "i32", "int")], attrs={"other": 3})
    case(f"{base}_scalar_i64_float", op, fn, [In([7], "i64", "int")], attrs={"other": 0.5})
    case(f"{base}_scalar_u8_int", op, fn, [In([5], "u8", "uint")], attrs={"other": 2})
    case(f"{base}_scalar_0d", op, fn, [In([])], attrs={"other": 1.5})
case("add_scalar_alpha", "add.Scalar", SCALAR["add.Scalar"], [In([7])], attrs={"other": 2, "alpha": 3})
case("rsub_scalar_alpha", "rsub.Scalar", SCALAR["rsub.Scalar"], [In([7])], attrs={"other": 2, "alpha": 0.25})
case("mul_scalar_bool_tensor_int", "mul.Scalar", SCALAR["mul.Scalar"], [In([5], "bool", "bool")], attrs={"other": 3})
case("add_scalar_u8_wraps", "add.Scalar", SCALAR["add.Scalar"], [In([5], "u8", "uint")], attrs={"other": 300})
case("div_scalar_floor_i32", "div.Scalar", SCALAR["div.Scalar"], [In([13], "i32", "int")],
     attrs={"other": -4, "rounding_mode": "floor"})

# ---- unary ----
UNARY = {"neg": torch.neg, "relu": torch.relu, "exp": torch.exp, "tanh": torch.tanh, "reciprocal": torch.reciprocal}
for op, fn in UNARY.items():
    kind = "nonzero" if op == "reciprocal" else "randn"
    case(f"{op}_1", op, fn, [In([1], kind=kind)])
    case(f"{op}_7x13", op, fn, [In([7, 13], kind=kind)])
    case(f"{op}_noncontig", op, fn, [In([5, 7, 13], kind=kind, layout=("t", 0, 2))])
    case(f"{op}_f64", op, fn, [In([13], "f64", kind=kind)], atol=1e-12, rtol=1e-12)
    case(f"{op}_0d", op, fn, [In([], kind=kind)])
case("neg_i32", "neg", torch.neg, [In([13], "i32", "int")])
case("relu_i64", "relu", torch.relu, [In([7, 5], "i64", "int", ("t", 0, 1))])
case("exp_i64_to_f32", "exp", torch.exp, [In([7], "i64", "int")], rtol=1e-6)
case("tanh_large", "tanh", torch.tanh, [In([1000])])
case("neg_bool", "neg", torch.neg, [In([5], "bool", "bool")], error="bool")

# ---- reductions ----
def torch_sum(a, dim=None, keepdim=False, dtype=None):
    if dim is None:
        return torch.sum(a, dtype=DTYPES[dtype] if dtype else None)
    return torch.sum(a, dim=dim, keepdim=keepdim, dtype=DTYPES[dtype] if dtype else None)


case("sum_all_13", "sum", torch_sum, [In([13])], atol=1e-5, rtol=1e-5)
case("sum_all_7x5x13", "sum", torch_sum, [In([7, 5, 13])], atol=1e-5, rtol=1e-5)
case("sum_dim0", "sum", torch_sum, [In([7, 5, 13])], attrs={"dim": [0]}, atol=1e-5, rtol=1e-5)
case("sum_dim_last_keep", "sum", torch_sum, [In([7, 5, 13])], attrs={"dim": [-1], "keepdim": True}, atol=1e-5,
     rtol=1e-5)
case("sum_dims_0_2", "sum", torch_sum, [In([7, 5, 13], layout=("t", 0, 2))], attrs={"dim": [0, 2]}, atol=1e-5,
     rtol=1e-5)
case("sum_dims_keep_noncontig", "sum", torch_sum, [In([7, 5, 13], layout=("s2", 1))],
     attrs={"dim": [1, 2], "keepdim": True}, atol=1e-5, rtol=1e-5)
case("sum_empty_dims_all", "sum", torch_sum, [In([5, 7])], attrs={"dim": []}, atol=1e-5, rtol=1e-5)
case("sum_i32_to_i64", "sum", torch_sum, [In([7, 13], "i32", "int")], attrs={"dim": [1]})
case("sum_bool", "sum", torch_sum, [In([13], "bool", "bool")])
case("sum_dtype_f64", "sum", torch_sum, [In([5, 7])], attrs={"dim": [0], "dtype": "f64"}, atol=1e-6)
case("sum_large", "sum", torch_sum, [In([100003])], atol=1e-3, rtol=1e-5)
case("sum_large_cols", "sum", torch_sum, [In([3, 70001])], attrs={"dim": [1]}, atol=1e-3, rtol=1e-5)
case("sum_0d", "sum", torch_sum, [In([])])


def torch_prod(a, dim=None, keepdim=False, dtype=None):
    """torch.prod over any set of dims (torch takes one): dim by dim, the last first."""
    if dtype:
        a = a.to(DTYPES[dtype])
    if not dim:
        y = torch.prod(a)
        return y.reshape([1] * a.dim()) if keepdim else y
    for d in sorted((d % a.dim() for d in dim), reverse=True):
        a = torch.prod(a, d, keepdim=keepdim)
    return a


case("prod_all_13", "prod", torch_prod, [In([13], kind="nonzero")], atol=1e-6, rtol=1e-5)
case("prod_dim0", "prod", torch_prod, [In([7, 5, 13], kind="nonzero")], attrs={"dim": [0]}, atol=1e-6, rtol=1e-5)
case("prod_dims_keep_noncontig", "prod", torch_prod, [In([7, 5, 13], kind="nonzero", layout=("t", 0, 2))],
     attrs={"dim": [2, 0], "keepdim": True}, atol=1e-6, rtol=1e-5)
case("prod_all_keep", "prod", torch_prod, [In([3, 4], kind="nonzero")], attrs={"dim": [], "keepdim": True},
     atol=1e-6, rtol=1e-5)
case("prod_rows_37", "prod", torch_prod, [In([3, 37], kind="nonzero")], attrs={"dim": [-1]}, atol=1e-6, rtol=1e-5)
case("prod_i32_to_i64", "prod", torch_prod, [In([7, 5], "i32", "int")], attrs={"dim": [1]})
case("prod_bool", "prod", torch_prod, [In([13], "bool", "bool")])
case("prod_dtype_f64", "prod", torch_prod, [In([5, 7], kind="nonzero")], attrs={"dim": [0], "dtype": "f64"},
     atol=1e-9, rtol=1e-9)
case("prod_empty_dim", "prod", torch_prod, [In([3, 0, 2])], attrs={"dim": [1]})
case("prod_0d", "prod", torch_prod, [In([], kind="nonzero")])
# Short inner runs (pairwise distances sum over a last dim of 2) and kept dims that merge.
case("sum_short_inner", "sum", torch_sum, [In([33, 17, 2])], attrs={"dim": [-1]}, atol=1e-6, rtol=1e-6)
case("sum_short_inner_strided", "sum", torch_sum, [In([17, 3, 5], layout=("t", 0, 2))], attrs={"dim": [1]},
     atol=1e-6, rtol=1e-6)
case("sum_dim_out_of_range", "sum", torch_sum, [In([5, 7])], attrs={"dim": [2]}, error="dimension 2 is out of range")
case("sum_dim_repeated", "sum", torch_sum, [In([5, 7])], attrs={"dim": [1, -1]}, error="appears multiple times")

# ---- matrix products ----
for sname, (n, k, m) in {"5x7x13": (5, 7, 13), "1x1x13": (1, 1, 13), "13x1x5": (13, 1, 5),
                         "64x127x33": (64, 127, 33)}.items():
    case(f"mm_{sname}", "mm", torch.mm, [In([n, k]), In([k, m])], atol=1e-5, rtol=1e-4)
case("mm_transposed_inputs", "mm", torch.mm, [In([5, 7], layout=("t", 0, 1)), In([7, 13], layout=("t", 0, 1))],
     atol=1e-5, rtol=1e-4)
case("mm_strided_inputs", "mm", torch.mm, [In([5, 7], layout=("s2", 1)), In([7, 13], layout=("s2", 0))], atol=1e-5,
     rtol=1e-4)
case("mm_k0", "mm", torch.mm, [In([5, 0]), In([0, 7])])
# Above the kernel's tiny-product size (1024 multiply-adds): oneDNN's sgemm, in-place layouts.
case("mm_transposed_33x40x17", "mm", torch.mm,
     [In([33, 40], layout=("t", 0, 1)), In([40, 17], layout=("t", 0, 1))], atol=1e-5, rtol=1e-4)
case("mm_shape_mismatch", "mm", torch.mm, [In([2, 3]), In([4, 5])], error="mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
case("mm_not_matrix", "mm", torch.mm, [In([2, 3, 4]), In([4, 5])], error="mm: self must be a matrix, got shape [2, 3, 4]")

# ---- conversions and copies ----
def torch_to(a, dtype):
    return a.to(DTYPES[dtype])


for src, dst, kind in [("f32", "i32", "randn"), ("f32", "f16", "randn"), ("f32", "bf16", "randn"),
                       ("i64", "f32", "int"), ("f32", "bool", "int"), ("bool", "f32", "bool"),
                       ("f64", "u8", "pos"), ("i32", "i8", "int"), ("f16", "f64", "randn"), ("bf16", "f32", "randn"),
                       ("u8", "i64", "uint"), ("f32", "f64", "randn")]:
    case(f"to_{src}_{dst}", "to", torch_to, [In([7, 13], src, kind, ("t", 0, 1))], attrs={"dtype": dst}, atol=0, rtol=0)
case("clone_noncontig", "clone", torch.clone, [In([5, 7, 13], layout=("t", 1, 2))], atol=0, rtol=0)
case("clone_i16", "clone", torch.clone, [In([13], "i16", "int")], atol=0, rtol=0)

# ---- views ----
VIEWS = [
    ("reshape_contig", "reshape", lambda a, shape: a.reshape(shape), In([5, 7, 13]), {"shape": [35, -1]}),
    ("reshape_noncontig_copy", "reshape", lambda a, shape: a.reshape(shape), In([5, 7], layout=("t", 0, 1)),
     {"shape": [35]}),
    ("view_split_dim", "view", lambda a, size: a.view(size), In([7, 13]), {"size": [7, 1, 13, 1]}),
    ("permute_3d", "permute", lambda a, dims: a.permute(dims), In([5, 7, 13]), {"dims": [2, 0, 1]}),
    ("transpose_neg", "transpose", lambda a, dim0, dim1: a.transpose(dim0, dim1), In([5, 7, 13]),
     {"dim0": -1, "dim1": 0}),
    ("slice_step2", "slice", lambda a, dim=0, start=None, end=None, step=1: a[:, start:end:step], In([5, 13]),
     {"dim": 1, "start": 1, "end": 12, "step": 2}),
    ("slice_neg_clamped", "slice", lambda a, dim=0, start=None, end=None, step=1: a[start:end:step], In([13, 5]),
     {"dim": 0, "start": -5, "end": 100}),
    ("select_neg", "select", lambda a, dim, index: a.select(dim, index), In([5, 7, 13]), {"dim": 1, "index": -2}),
    ("unsqueeze_neg", "unsqueeze", lambda a, dim: a.unsqueeze(dim), In([5, 7]), {"dim": -1}),
    ("squeeze_all", "squeeze", lambda a: a.squeeze(), In([1, 5, 1, 7]), {}),
    ("squeeze_dim", "squeeze.dim", lambda a, dim: a.squeeze(dim), In([5, 1, 7]), {"dim": 1}),
    ("squeeze_dim_not_one", "squeeze.dim", lambda a, dim: a.squeeze(dim), In([5, 1, 7]), {"dim": 0}),
    ("expand_new_dims", "expand", lambda a, size: a.expand(size), In([5, 1]), {"size": [3, 5, 7]}),
    ("expand_keep", "expand", lambda a, size: a.expand(size), In([1, 13]), {"size": [7, -1]}),
    ("flatten_middle", "flatten", lambda a, start_dim=0, end_dim=-1: a.flatten(start_dim, end_dim),
     In([5, 7, 13, 1]), {"start_dim": 1, "end_dim": 2}),
    ("flatten_noncontig", "flatten", lambda a, start_dim=0, end_dim=-1: a.flatten(start_dim, end_dim),
     In([5, 7, 13], layout=("t", 0, 2)), {}),
    ("contiguous_noncontig", "contiguous", lambda a: a.contiguous(), In([7, 13], layout=("t", 0, 1)), {}),
]
for name, op, fn, inp, attrs in VIEWS:
    case(name, op, fn, [inp], attrs=attrs, atol=0, rtol=0)
case("view_incompatible", "view", lambda a, size: a.view(size), [In([5, 7], layout=("t", 0, 1))], attrs={"size": [35]},
     error="view")
case("view_bad_numel", "view", lambda a, size: a.view(size), [In([5, 7])], attrs={"size": [6, -1]},
     error="shape [6, -1] is invalid for input of size 35")
case("select_out_of_range", "select", lambda a, dim, index: a.select(dim, index), [In([5, 7])],
     attrs={"dim": 1, "index": 7}, error="index 7 is out of range")
case("permute_repeated", "permute", lambda a, dims: a.permute(dims), [In([5, 7])], attrs={"dims": [0, 0]},
     error="repeats")
case("expand_bad", "expand", lambda a, size: a.expand(size), [In([5, 2])], attrs={"size": [5, 3]},
     error="must match the existing size")

# ---- factories ----
def torch_full(size, fill_value, dtype=None):
    return torch.full(size, fill_value, dtype=DTYPES[dtype] if dtype else None)


def torch_arange(start, end, step=1, dtype=None):
    return torch.arange(start, end, step, dtype=DTYPES[dtype] if dtype else None)


case("full_f32", "full", torch_full, [], attrs={"size": [5, 7], "fill_value": 2.5})
case("full_int_default_i64", "full", torch_full, [], attrs={"size": [13], "fill_value": 7})
case("full_bool", "full", torch_full, [], attrs={"size": [1, 5], "fill_value": True})
case("full_i8", "full", torch_full, [], attrs={"size": [7], "fill_value": -3, "dtype": "i8"})
case("arange_int", "arange", torch_arange, [], attrs={"start": 0, "end": 13})
case("arange_step", "arange", torch_arange, [], attrs={"start": 1, "end": 14, "step": 3})
case("arange_float", "arange", torch_arange, [], attrs={"start": 0, "end": 1, "step": 0.1})
case("arange_neg_step_f64", "arange", torch_arange, [], attrs={"start": 5, "end": -2.5, "step": -0.5, "dtype": "f64"})
case("arange_bad_sign", "arange", torch_arange, [], attrs={"start": 0, "end": 5, "step": -1},
     error="inconsistent with step sign")



# ================= [cpu-ops]: the full op set =================
import math  # noqa: E402

import torch.nn.functional as F  # noqa: E402

# ---- more unary math and activations ----
MORE_UNARY = {"abs": (torch.abs, "randn"), "log": (torch.log, "pos"), "sqrt": (torch.sqrt, "pos"),
              "rsqrt": (torch.rsqrt, "pos"), "sigmoid": (torch.sigmoid, "randn"), "silu": (F.silu, "randn")}
for op, (fn, kind) in MORE_UNARY.items():
    case(f"{op}_13", op, fn, [In([13], kind=kind)])
    case(f"{op}_noncontig", op, fn, [In([5, 7, 13], kind=kind, layout=("t", 0, 2))])
    case(f"{op}_f64", op, fn, [In([7, 5], "f64", kind=kind)], atol=1e-12, rtol=1e-12)
case("abs_i32", "abs", torch.abs, [In([13], "i32", "int")])
case("log_i64_to_f32", "log", torch.log, [In([7], "i64", "uint")], rtol=1e-6)
case("sigmoid_large", "sigmoid", torch.sigmoid, [In([3000])])
for approx in ["none", "tanh"]:
    case(f"gelu_{approx}", "gelu", lambda a, approximate: F.gelu(a, approximate=approximate),
         [In([7, 13])], attrs={"approximate": approx})
    case(f"gelu_{approx}_big", "gelu", lambda a, approximate: F.gelu(a, approximate=approximate),
         [In([5, 1000], layout=("t", 0, 1))], attrs={"approximate": approx})
case("gelu_bad", "gelu", lambda a, approximate: F.gelu(a, approximate=approximate), [In([5])],
     attrs={"approximate": "erf"}, error="approximate")
case("hardtanh_default", "hardtanh", lambda a, min_val=-1, max_val=1: F.hardtanh(a, min_val, max_val), [In([7, 13])])
case("hardtanh_bounds", "hardtanh", lambda a, min_val=-1, max_val=1: F.hardtanh(a, min_val, max_val), [In([13])],
     attrs={"min_val": -0.5, "max_val": 0.25})
CLAMP = lambda a, min=None, max=None: torch.clamp(a, min, max)  # noqa: E731
case("clamp_both", "clamp", CLAMP, [In([7, 13], layout=("t", 0, 1))], attrs={"min": -0.5, "max": 0.5})
case("clamp_min_only", "clamp", CLAMP, [In([13])], attrs={"min": 0.1})
case("clamp_max_only", "clamp", CLAMP, [In([13])], attrs={"max": -0.1})
case("clamp_min_gt_max", "clamp", CLAMP, [In([13])], attrs={"min": 1, "max": -1})
case("clamp_int", "clamp", CLAMP, [In([13], "i32", "int")], attrs={"min": -3, "max": 4})
case("clamp_int_float_bound", "clamp", CLAMP, [In([13], "i64", "int")], attrs={"min": -2.5})
case("clamp_none", "clamp", CLAMP, [In([5])], error="at least one of 'min' or 'max'")
POWS = lambda a, exponent: torch.pow(a, exponent)  # noqa: E731
for e, kind in [(2, "randn"), (3, "randn"), (0.5, "pos"), (-0.5, "pos"), (-1, "nonzero"), (-2, "nonzero"),
                (2.5, "pos"), (0, "randn")]:
    case(f"pow_scalar_{str(e).replace('-', 'm').replace('.', '_')}", "pow.Scalar", POWS, [In([7, 13], kind=kind)],
         attrs={"exponent": e})
case("pow_scalar_int", "pow.Scalar", POWS, [In([13], "i64", "int")], attrs={"exponent": 3})
case("pow_scalar_int_float_exp", "pow.Scalar", POWS, [In([13], "i32", "uint")], attrs={"exponent": 0.5})
case("pow_scalar_int_negative", "pow.Scalar", POWS, [In([5], "i64", "int")], attrs={"exponent": -2},
     error="negative integer powers")
case("pow_tensor", "pow", torch.pow, [In([7, 13], kind="pos"), In([13])])
case("pow_tensor_int", "pow", torch.pow, [In([7, 5], "i64", "int"), In([5], "i64", "uint")])

# ---- comparisons and where ----
CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
for op, fn in CMP.items():
    case(f"{op}_bcast", op, fn, [In([7, 1, 13], "i32", "int"), In([5, 1], "i32", "int")])
    case(f"{op}_f32_noncontig", op, fn, [In([7, 13], layout=("t", 0, 1)), In([7, 13])])
    case(f"{op}_promote", op, fn, [In([13], "i64", "int"), In([13], "f32")])
    case(f"{op}_scalar", f"{op}.Scalar", fn, [In([7, 13], "i32", "int")], attrs={"other": 2})
    case(f"{op}_scalar_float", f"{op}.Scalar", fn, [In([13], "i64", "int")], attrs={"other": 1.5})
case("eq_bool", "eq", torch.eq, [In([13], "bool", "bool"), In([13], "bool", "bool")])
WHERE = lambda c, a, b: torch.where(c, a, b)  # noqa: E731
case("where_bcast", "where", WHERE, [In([7, 1, 13], "bool", "bool"), In([5, 1]), In([13])])
case("where_promote", "where", WHERE, [In([13], "bool", "bool"), In([13], "i64", "int"), In([13], "f32")])
case("where_noncontig", "where", WHERE, [In([7, 13], "bool", "bool", ("t", 0, 1)), In([7, 13], layout=("s2", 1)),
                                         In([7, 13])])

# ---- reductions, softmax ----
def torch_mean(a, dim=None, keepdim=False, dtype=None):
    d = DTYPES[dtype] if dtype else None
    return torch.mean(a, dtype=d) if dim is None else torch.mean(a, dim=dim, keepdim=keepdim, dtype=d)


case("mean_all", "mean", torch_mean, [In([7, 5, 13])], atol=1e-6, rtol=1e-5)
case("mean_dims_keep", "mean", torch_mean, [In([7, 5, 13], layout=("t", 0, 2))], attrs={"dim": [0, 2], "keepdim": True},
     atol=1e-6, rtol=1e-5)
case("mean_hw_cl", "mean", torch_mean, [In([2, 7, 5, 3], layout=("cl",))], attrs={"dim": [-1, -2]}, atol=1e-6,
     rtol=1e-5)
case("mean_dtype_f64", "mean", torch_mean, [In([13])], attrs={"dtype": "f64"}, atol=1e-7)
case("mean_int_error", "mean", torch_mean, [In([13], "i64", "int")], error="floating")


def torch_amax(a, dim=(), keepdim=False):
    return torch.amax(a, dim=dim, keepdim=keepdim)


def torch_amin(a, dim=(), keepdim=False):
    return torch.amin(a, dim=dim, keepdim=keepdim)


for op, fn in [("amax", torch_amax), ("amin", torch_amin)]:
    case(f"{op}_all", op, fn, [In([7, 5, 13])], atol=0, rtol=0)
    case(f"{op}_dim1_keep", op, fn, [In([7, 5, 13], layout=("t", 1, 2))], attrs={"dim": [1], "keepdim": True},
         atol=0, rtol=0)
    case(f"{op}_i32", op, fn, [In([7, 13], "i32", "int")], attrs={"dim": [-1]})
    case(f"{op}_large", op, fn, [In([2, 50001])], attrs={"dim": [1]}, atol=0, rtol=0)
    case(f"{op}_empty_dim", op, fn, [In([0, 5])], attrs={"dim": [0]}, error="non-zero size")


def with_nan(shape, where):
    t = torch.randn(shape, generator=gen)
    t.view(-1)[where] = float("nan")
    return t


def torch_argmax(a, dim=None, keepdim=False):
    return torch.argmax(a, dim=dim, keepdim=keepdim)


case("argmax_dim", "argmax", torch_argmax, [In([7, 5, 13])], attrs={"dim": 1})
case("argmax_dim_keep_noncontig", "argmax", torch_argmax, [In([7, 13], layout=("t", 0, 1))],
     attrs={"dim": -1, "keepdim": True})
case("argmax_flat", "argmax", torch_argmax, [In([7, 13])])
case("argmax_ties_int", "argmax", torch_argmax, [In([13, 7], "i32", "uint")], attrs={"dim": 0})
case("argmax_large", "argmax", torch_argmax, [In([100003])])


def any_all(fn):
    def run(x, dim=(), keepdim=False):
        if not dim:  # every dim
            y = fn(x)
            return (y.reshape([1] * x.dim()) if keepdim else y).bool()
        for d in sorted((d % x.dim() for d in dim), reverse=True):  # PyTorch 1.13: one dim at a time
            x = fn(x, d, keepdim)
        return x.bool()  # PyTorch gives u8 for u8 inputs; Amber always bool
    return run


def cumsum(a, dim, dtype=None):
    return torch.cumsum(a, dim, dtype=DTYPES[dtype] if dtype else None)


case("cumsum_last", "cumsum", cumsum, [In([7, 13])], attrs={"dim": -1})
case("cumsum_dim0_noncontig", "cumsum", cumsum, [In([9, 5, 6], layout=("t", 0, 2))], attrs={"dim": 0})
case("cumsum_i32_to_i64", "cumsum", cumsum, [In([4, 11], "i32", "int")], attrs={"dim": 1}, atol=0, rtol=0)
case("cumsum_bool", "cumsum", cumsum, [In([3, 8], "bool", "bool")], attrs={"dim": 1}, atol=0, rtol=0)
case("cumsum_dtype_f64", "cumsum", cumsum, [In([5, 6])], attrs={"dim": 0, "dtype": "f64"})
case("cumsum_long", "cumsum", cumsum, [In([2, 10007], "f64")], attrs={"dim": 1})
case("cumsum_scalar", "cumsum", cumsum, [In([])], attrs={"dim": -1})
case("cumsum_bad_dim", "cumsum", cumsum, [In([3, 4])], attrs={"dim": 2}, error="out of range")


def flip(a, dims):
    return torch.flip(a, dims)


case("flip_last", "flip", flip, [In([7, 13])], attrs={"dims": [-1]}, atol=0, rtol=0)
case("flip_two_noncontig", "flip", flip, [In([5, 7, 13], layout=("t", 0, 2))], attrs={"dims": [0, 2]}, atol=0, rtol=0)
case("flip_all_i64", "flip", flip, [In([3, 4, 5], "i64", "int")], attrs={"dims": [2, 0, 1]}, atol=0, rtol=0)
case("flip_none_bool", "flip", flip, [In([6, 5], "bool", "bool")], attrs={"dims": []}, atol=0, rtol=0)
case("flip_big", "flip", flip, [In([3, 1001])], attrs={"dims": [1]}, atol=0, rtol=0)
case("flip_repeated", "flip", flip, [In([3, 4])], attrs={"dims": [1, -1]},
     error="dim 1 appears multiple times in dims")

for op, fn in {"tril": torch.tril, "triu": torch.triu}.items():
    case(f"{op}_default", op, lambda a, diagonal=0, fn=fn: fn(a, diagonal), [In([7, 5])], atol=0, rtol=0)
    case(f"{op}_above", op, lambda a, diagonal=0, fn=fn: fn(a, diagonal), [In([5, 13])], attrs={"diagonal": 2},
         atol=0, rtol=0)
    case(f"{op}_below_batch_noncontig", op, lambda a, diagonal=0, fn=fn: fn(a, diagonal),
         [In([3, 7, 6], layout=("t", 1, 2))], attrs={"diagonal": -3}, atol=0, rtol=0)
    case(f"{op}_i64_4d", op, lambda a, diagonal=0, fn=fn: fn(a, diagonal), [In([2, 3, 4, 5], "i64", "int")],
         attrs={"diagonal": 1}, atol=0, rtol=0)
    case(f"{op}_f64_far", op, lambda a, diagonal=0, fn=fn: fn(a, diagonal), [In([4, 6], "f64")],
         attrs={"diagonal": -9}, atol=0, rtol=0)
    case(f"{op}_bool", op, lambda a, diagonal=0, fn=fn: fn(a, diagonal), [In([6, 4], "bool", "bool")],
         atol=0, rtol=0)


for op, fn in {"logical_and": torch.logical_and, "logical_or": torch.logical_or,
               "logical_xor": torch.logical_xor}.items():
    case(f"{op}_int_zeros_bcast", op, fn, [In([5, 7, 13], "f32", "int", layout=("t", 0, 2)), In([7, 1], "i32", "int")],
         atol=0, rtol=0)
    case(f"{op}_bool", op, fn, [In([9, 4], "bool", "bool"), In([4], "bool", "bool")], atol=0, rtol=0)
    case(f"{op}_i64_f64", op, fn, [In([13], "i64", "int"), In([13], "f64", "int")], atol=0, rtol=0)
case("logical_not_f32", "logical_not", torch.logical_not, [In([7, 13], "f32", "int", layout=("t", 0, 1))],
     atol=0, rtol=0)
case("logical_not_bool", "logical_not", torch.logical_not, [In([6, 5], "bool", "bool")], atol=0, rtol=0)
case("logical_not_u8", "logical_not", torch.logical_not, [In([3, 1001], "u8", "uint")], atol=0, rtol=0)


def masked_fill(a, mask, value):
    return a.masked_fill(mask, value)


case("masked_fill_bcast_noncontig", "masked_fill.Scalar", masked_fill,
     [In([5, 7, 13], layout=("t", 0, 2)), In([7, 1], "bool", "bool")], attrs={"value": -1.5}, atol=0, rtol=0)
case("masked_fill_large", "masked_fill.Scalar", masked_fill, [In([4, 9]), In([4, 9], "bool", "bool")],
     attrs={"value": -1e30}, atol=0, rtol=0)
case("masked_fill_i64", "masked_fill.Scalar", masked_fill, [In([3, 1001], "i64", "int"), In([1001], "bool", "bool")],
     attrs={"value": 7}, atol=0, rtol=0)
case("masked_fill_f64", "masked_fill.Scalar", masked_fill, [In([6, 5], "f64"), In([6, 1], "bool", "bool")],
     attrs={"value": 0.1}, atol=0, rtol=0)


def torch_argmin(a, dim=None, keepdim=False):
    return torch.argmin(a, dim=dim, keepdim=keepdim)


case("argmin_dim", "argmin", torch_argmin, [In([7, 5, 13])], attrs={"dim": 1})
case("argmin_dim_keep_noncontig", "argmin", torch_argmin, [In([7, 13], layout=("t", 0, 1))],
     attrs={"dim": -1, "keepdim": True})
case("argmin_flat", "argmin", torch_argmin, [In([7, 13])])
case("argmin_ties_int", "argmin", torch_argmin, [In([13, 7], "i32", "uint")], attrs={"dim": 0})
case("argmin_f64", "argmin", torch_argmin, [In([5, 9], "f64")], attrs={"dim": 0})
case("argmin_large", "argmin", torch_argmin, [In([100003])])
for op, fn in [("softmax", lambda a, dim, dtype=None: torch.softmax(a, dim)),
               ("log_softmax", lambda a, dim, dtype=None: torch.log_softmax(a, dim))]:
    case(f"{op}_last", op, fn, [In([7, 13])], attrs={"dim": -1})
    case(f"{op}_dim0", op, fn, [In([7, 5, 13])], attrs={"dim": 0})
    case(f"{op}_noncontig_mid", op, fn, [In([7, 5, 13], layout=("t", 1, 2))], attrs={"dim": 1})
    case(f"{op}_long_rows", op, fn, [In([3, 1001])], attrs={"dim": 1})
    case(f"{op}_0d", op, fn, [In([])], attrs={"dim": 0})
    case(f"{op}_f64", op, fn, [In([5, 7], "f64")], attrs={"dim": 1}, atol=1e-12, rtol=1e-12)

# ---- matrix products ----
case("bmm_odd", "bmm", torch.bmm, [In([5, 7, 13]), In([5, 13, 1])], atol=1e-5, rtol=1e-4)
case("bmm_noncontig", "bmm", torch.bmm, [In([3, 7, 13], layout=("t", 1, 2)), In([3, 13, 5], layout=("s2", 1))],
     atol=1e-5, rtol=1e-4)
case("bmm_many_small", "bmm", torch.bmm, [In([64, 5, 7]), In([64, 7, 5])], atol=1e-5, rtol=1e-4)
case("bmm_noncontig_large", "bmm", torch.bmm, [In([3, 20, 30], layout=("t", 1, 2)), In([3, 30, 9], layout=("s2", 1))],
     atol=1e-5, rtol=1e-4)
MATMUL_SHAPES = {"1d_1d": ([13], [13]), "2d_1d": ([7, 13], [13]), "1d_2d": ([13], [13, 5]),
                 "3d_2d_fold": ([5, 7, 13], [13, 3]), "3d_3d": ([5, 7, 13], [5, 13, 3]),
                 "4d_3d_bcast": ([2, 1, 7, 13], [5, 13, 3]), "1d_3d": ([13], [5, 13, 3]), "3d_1d": ([5, 7, 13], [13]),
                 "2d_3d": ([7, 13], [5, 13, 3])}
for name, (sa, sb) in MATMUL_SHAPES.items():
    case(f"matmul_{name}", "matmul", torch.matmul, [In(sa), In(sb)], atol=1e-5, rtol=1e-4)
case("matmul_noncontig", "matmul", torch.matmul, [In([5, 7, 13], layout=("t", 1, 2)), In([13, 3], layout=("t", 0, 1))],
     atol=1e-5, rtol=1e-4)
case("matmul_mismatch", "matmul", torch.matmul, [In([5, 7]), In([5, 7])], error="cannot be multiplied")
LINEAR = lambda x, w, b=None: F.linear(x, w, b)  # noqa: E731
case("linear_bias", "linear", LINEAR, [In([7, 13]), In([5, 13]), In([5])], atol=1e-5, rtol=1e-4)
case("linear_no_bias", "linear", LINEAR, [In([7, 13]), In([5, 13]), None], atol=1e-5, rtol=1e-4)
case("linear_3d", "linear", LINEAR, [In([2, 7, 13]), In([5, 13]), In([5])], atol=1e-5, rtol=1e-4)
case("linear_1d", "linear", LINEAR, [In([13]), In([5, 13]), In([5])], atol=1e-5, rtol=1e-4)
case("linear_noncontig_large", "linear", LINEAR,
     [In([3, 11, 40], layout=("t", 0, 1)), In([29, 40], layout=("t", 0, 1)), In([29])], atol=1e-5, rtol=1e-4)
case("linear_noncontig", "linear", LINEAR, [In([3, 7, 13], layout=("t", 0, 1)), In([5, 13], layout=("t", 0, 1)),
                                            In([5])], atol=1e-5, rtol=1e-4)
# Rows every second one apart behind a size-1 dim whose stride fits no pattern (read in place
# with that row stride), and a broadcast leading dim (stride 0: gathered).
case("linear_size1_dim_stride", "linear", LINEAR, [In([7, 1, 13], layout=("s2", 0)), In([5, 13]), In([5])],
     atol=1e-5, rtol=1e-4)
case("linear_broadcast_rows", "linear", LINEAR, [In([3, 4, 13], layout=("exp", 1, 4)), In([5, 13]), In([5])],
     atol=1e-5, rtol=1e-4)
case("linear_mismatch", "linear", LINEAR, [In([7, 13]), In([5, 12]), None], error="in_features")


def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
    """torch 2.0's scaled_dot_product_attention (math path), written out for torch 1.13."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if is_causal:
        keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    return torch.softmax(scores, -1) @ v


case("sdpa_3d", "scaled_dot_product_attention", sdpa, [In([3, 7, 5]), In([3, 9, 5]), In([3, 9, 4])], atol=1e-5,
     rtol=1e-4)
case("sdpa_4d_causal", "scaled_dot_product_attention", sdpa, [In([2, 3, 13, 8]), In([2, 3, 13, 8]), In([2, 3, 13, 8])],
     attrs={"is_causal": True}, atol=1e-5, rtol=1e-4)
case("sdpa_float_mask", "scaled_dot_product_attention", sdpa,
     [In([2, 7, 5]), In([2, 9, 5]), In([2, 9, 5]), In([7, 9])], atol=1e-5, rtol=1e-4)
case("sdpa_noncontig", "scaled_dot_product_attention", sdpa,
     [In([2, 7, 5], layout=("t", 0, 1)), In([2, 9, 5], layout=("s2", 2)), In([2, 9, 3], layout=("t", 1, 2))],
     atol=1e-5, rtol=1e-4)
case("sdpa_long", "scaled_dot_product_attention", sdpa, [In([1, 130, 16]), In([1, 150, 16]), In([1, 150, 16])],
     atol=1e-5, rtol=1e-4)
# 301 rows of 301 scores: two blocks of rows (151 and a last of 150; attention.cpp's row_block)
case("sdpa_two_blocks_causal", "scaled_dot_product_attention", sdpa,
     [In([2, 301, 8]), In([2, 301, 8]), In([2, 301, 8])], attrs={"is_causal": True}, atol=1e-5, rtol=1e-4)


def bool_mask_case():
    keep = torch.rand(2, 7, 9, generator=gen) > 0.4
    keep[:, :, 0] = True  # no fully masked row
    return keep


class Fixed(In):
    """An input with given values."""

    def __init__(self, value, layout=None):
        super().__init__(value.shape, NAMES[value.dtype], "fixed", layout)
        self.value = value


case("sdpa_bool_mask", "scaled_dot_product_attention", sdpa,
     [In([2, 7, 5]), In([2, 9, 5]), In([2, 9, 5]), Fixed(bool_mask_case())], atol=1e-5, rtol=1e-4)

# ---- convolution ----
def conv(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
    return F.conv2d(x, w, b, stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation), groups=groups)


CONV_TOL = dict(atol=1e-4, rtol=1e-4)
case("conv_3x3_pad", "conv2d", conv, [In([1, 5, 13, 7]), In([7, 5, 3, 3]), In([7])], attrs={"padding": [1]}, **CONV_TOL)
case("conv_stride_dilation", "conv2d", conv, [In([2, 3, 13, 13]), In([5, 3, 3, 3]), None],
     attrs={"stride": [2, 1], "padding": [2, 1], "dilation": [2, 1]}, **CONV_TOL)
case("conv_groups", "conv2d", conv, [In([1, 6, 9, 9]), In([9, 2, 3, 3]), In([9])], attrs={"groups": 3}, **CONV_TOL)
case("conv_depthwise", "conv2d", conv, [In([2, 8, 7, 7]), In([8, 1, 3, 3]), In([8])],
     attrs={"groups": 8, "padding": [1]}, **CONV_TOL)
case("conv_7x7_s2_resnet_stem", "conv2d", conv, [In([1, 3, 32, 32]), In([16, 3, 7, 7]), None],
     attrs={"stride": [2], "padding": [3]}, **CONV_TOL)
case("conv_1x1", "conv2d", conv, [In([1, 13, 5, 7]), In([7, 13, 1, 1]), In([7])], **CONV_TOL)
case("conv_unbatched", "conv2d", conv, [In([3, 9, 9]), In([4, 3, 3, 3]), In([4])], **CONV_TOL)
case("conv_noncontig_input", "conv2d", conv, [In([2, 5, 9, 11], layout=("t", 2, 3)), In([3, 5, 3, 3]), In([3])],
     **CONV_TOL)
case("conv_channels_last_input", "conv2d", conv, [In([2, 16, 9, 9], layout=("cl",)), In([8, 16, 3, 3]), In([8])],
     attrs={"padding": [1]}, **CONV_TOL)
case("conv_wide", "conv2d", conv, [In([1, 64, 14, 14]), In([64, 64, 3, 3]), In([64])], attrs={"padding": [1]},
     atol=2e-4, rtol=1e-4)
def fused_conv(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1, activation="clamp", min_val=0.0,
               max_val=6.0):
    """conv2d, then the activation (Amber's own op: its reference refuses what Amber refuses)."""
    if activation not in ("clamp", "silu", "hardswish") or (activation == "clamp" and min_val > max_val):
        raise ValueError(f"activation {activation} [{min_val}, {max_val}]")
    y = conv(x, w, b, stride, padding, dilation, groups)
    if activation == "clamp":
        return torch.clamp(y, min_val, max_val)
    return F.silu(y) if activation == "silu" else F.hardswish(y)


def with_nan_inf(shape, nan, inf, ninf):
    t = torch.randn(shape, generator=gen) * 3
    t.view(-1)[nan] = float("nan")
    t.view(-1)[inf] = float("inf")
    t.view(-1)[ninf] = float("-inf")
    return t


case("fused_conv_relu6", "fused_conv2d", fused_conv, [In([2, 5, 9, 7], kind="wide"), In([7, 5, 3, 3]), In([7])],
     attrs={"padding": [1]}, **CONV_TOL)
case("fused_conv_clamp_depthwise_nan_inf", "fused_conv2d", fused_conv,
     [Fixed(with_nan_inf([2, 6, 7, 8], [3], [100], [250])), In([6, 1, 3, 3]), In([6])],
     attrs={"groups": 6, "padding": [1], "min_val": -1.5, "max_val": 2.0}, **CONV_TOL)
case("fused_conv_silu_strided_groups", "fused_conv2d", fused_conv, [In([1, 6, 11, 9], kind="wide"),
     In([4, 3, 3, 3]), In([4])], attrs={"groups": 2, "stride": [2], "padding": [1], "activation": "silu"}, **CONV_TOL)
case("fused_conv_silu_nan_inf", "fused_conv2d", fused_conv,
     [Fixed(with_nan_inf([1, 4, 5, 6], [7], [30], [61])), In([3, 4, 1, 1]), None], attrs={"activation": "silu"},
     **CONV_TOL)
case("fused_conv_hardswish_noncontig", "fused_conv2d", fused_conv,
     [In([2, 5, 9, 11], kind="wide", layout=("t", 2, 3)), In([3, 5, 3, 3]), In([3])],
     attrs={"activation": "hardswish"}, **CONV_TOL)
# ReLU as the fusion pass makes it (clamp to [0, inf]; 3e38 here, JSON has no infinity): with a
# source over twice the output's elements (stride 2) the kernel clamps after the primitive.
case("fused_conv_relu_strided_wide_source", "fused_conv2d", fused_conv,
     [In([1, 8, 9, 9], kind="wide"), In([2, 8, 3, 3]), In([2])], attrs={"stride": [2], "max_val": 3e38}, **CONV_TOL)
# Finite source and weights whose sums overflow (products of 9e38, each beyond f32): the kernel's
# bound sees it and clamps after the primitive: +inf in any summation order, clamped to 3e38.
# (Products of both signs would make the result depend on the order: one FMA chain gives +inf,
# oneDNN's AVX-512 kernels, in PyTorch too, inf - inf = NaN.)
case("fused_conv_clamp_overflow", "fused_conv2d", fused_conv,
     [Fixed(torch.full([1, 2, 3, 3], 3e19)), Fixed(torch.tensor([[3e19, 3e19], [1.0, 1.0]]).reshape(2, 2, 1, 1)),
      None], attrs={"max_val": 3e38}, **CONV_TOL)
case("fused_conv_bad_activation", "fused_conv2d", fused_conv, [In([1, 3, 8, 8]), In([4, 3, 3, 3]), None],
     attrs={"activation": "relu"}, error="activation must be clamp, silu or hardswish")
case("fused_conv_clamp_bounds", "fused_conv2d", fused_conv, [In([1, 3, 8, 8]), In([4, 3, 3, 3]), None],
     attrs={"min_val": 2.0, "max_val": 1.0}, error="min_val <= max_val")
case("conv_channel_mismatch", "conv2d", conv, [In([1, 3, 8, 8]), In([4, 4, 3, 3]), None], error="channels")
case("conv_too_small", "conv2d", conv, [In([1, 1, 2, 2]), In([1, 1, 3, 3]), None], error="smaller than the kernel")



def conv_t(x, w, b=None, stride=(1,), padding=(0,), output_padding=(0,), groups=1, dilation=(1,)):
    return F.conv_transpose2d(x, w, b, stride=tuple(stride), padding=tuple(padding),
                              output_padding=tuple(output_padding), groups=groups, dilation=tuple(dilation))


case("convt_3x3", "conv_transpose2d", conv_t, [In([1, 5, 7, 6]), In([5, 4, 3, 3]), In([4])], **CONV_TOL)
case("convt_s2_outpad", "conv_transpose2d", conv_t, [In([2, 6, 5, 7]), In([6, 3, 4, 3]), In([3])],
     attrs={"stride": [2], "padding": [1], "output_padding": [1, 0]}, **CONV_TOL)
case("convt_outpad_past_padding", "conv_transpose2d", conv_t, [In([1, 3, 4, 5]), In([3, 2, 3, 3]), In([2])],
     attrs={"stride": [3, 2], "output_padding": [2, 1]}, **CONV_TOL)
case("convt_groups_dilation", "conv_transpose2d", conv_t, [In([2, 6, 5, 5]), In([6, 2, 3, 2]), None],
     attrs={"groups": 3, "dilation": [2, 1], "padding": [2, 1], "stride": [1, 2]}, **CONV_TOL)
case("convt_unbatched", "conv_transpose2d", conv_t, [In([4, 6, 5]), In([4, 3, 2, 2]), In([3])],
     attrs={"stride": [2]}, **CONV_TOL)
case("convt_noncontig_input", "conv_transpose2d", conv_t,
     [In([2, 5, 9, 11], layout=("t", 2, 3)), In([5, 3, 3, 3]), In([3])], attrs={"padding": [1]}, **CONV_TOL)
case("convt_channels_last_input", "conv_transpose2d", conv_t,
     [In([2, 16, 6, 7], layout=("cl",)), In([16, 8, 2, 2]), In([8])], attrs={"stride": [2]}, **CONV_TOL)
case("convt_channel_mismatch", "conv_transpose2d", conv_t, [In([1, 3, 8, 8]), In([4, 4, 3, 3]), None],
     error="channels")
case("convt_outpad_too_big", "conv_transpose2d", conv_t, [In([1, 3, 8, 8]), In([3, 4, 3, 3]), None],
     attrs={"stride": [2], "output_padding": [2]}, error="output padding must be smaller than either stride or dilation")

# ---- pooling ----
def maxpool(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return F.max_pool2d(x, kernel_size, stride or None, padding, dilation, ceil_mode)


def avgpool(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True, divisor_override=None):
    return F.avg_pool2d(x, kernel_size, stride or None, padding, ceil_mode, count_include_pad, divisor_override)


case("maxpool_2x2", "max_pool2d", maxpool, [In([2, 3, 13, 7])], attrs={"kernel_size": [2]}, atol=0, rtol=0)
case("maxpool_3x3_s2_p1_resnet", "max_pool2d", maxpool, [In([1, 5, 13, 13], layout=("cl",))],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1]}, atol=0, rtol=0)
case("maxpool_ceil", "max_pool2d", maxpool, [In([1, 2, 7, 9])],
     attrs={"kernel_size": [3, 2], "stride": [2], "ceil_mode": True}, atol=0, rtol=0)
case("maxpool_dilation", "max_pool2d", maxpool, [In([1, 2, 11, 11])],
     attrs={"kernel_size": [3], "stride": [1], "padding": [1], "dilation": [2]}, atol=0, rtol=0)
case("maxpool_unbatched_noncontig", "max_pool2d", maxpool, [In([3, 9, 8], layout=("t", 1, 2))],
     attrs={"kernel_size": [2], "stride": [1]}, atol=0, rtol=0)
case("argmin_nan", "argmin", torch_argmin, [Fixed(with_nan([3, 7], [4, 5, 15]))], attrs={"dim": 1})
case("maxpool_nan", "max_pool2d", maxpool, [Fixed(with_nan([1, 1, 4, 4], [0, 5]))], attrs={"kernel_size": [2]},
     atol=0, rtol=0)
# Channels-last: whole-row passes (dense rows, and rows strided by a transposed layout).
case("maxpool_cl_lenet", "max_pool2d", maxpool, [In([3, 6, 30, 30], layout=("cl",))], attrs={"kernel_size": [2]},
     atol=0, rtol=0)
case("maxpool_cl_ceil_pad", "max_pool2d", maxpool, [In([2, 6, 9, 11], layout=("cl",))],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1], "ceil_mode": True}, atol=0, rtol=0)
case("maxpool_cl_strided_rows", "max_pool2d", maxpool, [In([2, 5, 7, 9], layout=("t", 1, 3))],
     attrs={"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 1]}, atol=0, rtol=0)
case("maxpool_cl_nan", "max_pool2d", maxpool, [Fixed(with_nan([1, 3, 4, 6], [0, 7, 20, 50]), layout=("cl",))],
     attrs={"kernel_size": [2]}, atol=0, rtol=0)
def maxpool_i(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return F.max_pool2d(x, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


case("maxpool_indices_ceil_pad", "max_pool2d_with_indices", maxpool_i, [In([2, 3, 9, 8])],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1], "ceil_mode": True}, atol=0, rtol=0)
case("maxpool_indices_ties_cl", "max_pool2d_with_indices", maxpool_i, [In([1, 4, 6, 7], kind="halves", layout=("cl",))],
     attrs={"kernel_size": [2, 3], "stride": [1, 2]}, atol=0, rtol=0)
case("maxpool_indices_dilation_unbatched_f64", "max_pool2d_with_indices", maxpool_i,
     [In([3, 11, 10], "f64", layout=("t", 1, 2))], attrs={"kernel_size": [3], "stride": [2], "dilation": [2]},
     atol=0, rtol=0)
case("maxpool_indices_nan", "max_pool2d_with_indices", maxpool_i, [Fixed(with_nan([1, 1, 4, 4], [0, 1, 10]))],
     attrs={"kernel_size": [2]}, atol=0, rtol=0)
# max_unpool2d's inputs are a max pool's values and indices (overlapping windows repeat an index).
def pooled(shape, kernel_size, stride, padding=0, dtype=torch.float32):
    v, i = F.max_pool2d(torch.randn(shape, generator=gen, dtype=dtype), kernel_size, stride, padding,
                        return_indices=True)
    return v, i


def maxunpool(x, indices, output_size):  # the ATen op F.max_unpool2d calls, after checking output_size
    return torch._C._nn.max_unpool2d(x, indices, output_size)


v, i = pooled([2, 3, 9, 7], 2, 2)
case("maxunpool_2x2", "max_unpool2d", maxunpool, [Fixed(v), Fixed(i)], attrs={"output_size": [9, 7]}, atol=0, rtol=0)
v, i = pooled([1, 5, 7, 11], 3, 1, 1)
case("maxunpool_repeated_cl", "max_unpool2d", maxunpool, [Fixed(v, layout=("cl",)), Fixed(i, layout=("cl",))],
     attrs={"output_size": [7, 11]}, atol=0, rtol=0)
v, i = pooled([4, 13, 6], 3, 2, 1, torch.float64)
case("maxunpool_unbatched_f64_noncontig", "max_unpool2d", maxunpool,
     [Fixed(v, layout=("t", 1, 2)), Fixed(i, layout=("t", 1, 2))], attrs={"output_size": [14, 7]}, atol=0, rtol=0)
case("maxunpool_bad_index", "max_unpool2d", maxunpool, [Fixed(torch.ones(1, 1, 2, 2)), Fixed(torch.tensor(
    [[[[0, 1], [2, 16]]]]))], attrs={"output_size": [4, 4]}, error="invalid max index")
case("maxunpool_bad_shape", "max_unpool2d", maxunpool, [Fixed(torch.ones(1, 1, 2, 2)), Fixed(torch.zeros(
    1, 1, 2, 1, dtype=torch.int64))], attrs={"output_size": [4, 4]}, error="shape")
case("maxpool_bad_pad", "max_pool2d", maxpool, [In([1, 1, 8, 8])], attrs={"kernel_size": [2], "padding": [2]},
     error="pad should be at most half")
case("avgpool_2x2", "avg_pool2d", avgpool, [In([2, 3, 13, 7])], attrs={"kernel_size": [2]})
case("avgpool_pad_include", "avg_pool2d", avgpool, [In([1, 3, 7, 7], layout=("cl",))],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1]})
case("avgpool_pad_exclude_ceil", "avg_pool2d", avgpool, [In([1, 3, 8, 7])],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1], "ceil_mode": True, "count_include_pad": False})
case("avgpool_divisor", "avg_pool2d", avgpool, [In([1, 2, 6, 6])],
     attrs={"kernel_size": [2], "divisor_override": 3})
case("avgpool_ceil_include", "avg_pool2d", avgpool, [In([1, 2, 8, 8])],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1], "ceil_mode": True})
ADAPT = lambda x, output_size: F.adaptive_avg_pool2d(x, output_size * (3 - len(output_size)))  # noqa: E731
case("adaptive_to_1", "adaptive_avg_pool2d", ADAPT, [In([2, 7, 7, 7], layout=("cl",))], attrs={"output_size": [1]})
case("adaptive_uneven", "adaptive_avg_pool2d", ADAPT, [In([1, 3, 13, 7])], attrs={"output_size": [5, 3]})
case("adaptive_upsample", "adaptive_avg_pool2d", ADAPT, [In([1, 2, 3, 2])], attrs={"output_size": [5, 7]})
for op, fn in [("amax", torch_amax), ("amin", torch_amin)]:
    case(f"{op}_short_runs_nan", op, fn, [Fixed(with_nan([9, 5, 3], [4, 40]))], attrs={"dim": [-1]}, atol=0, rtol=0)
    # Runs long enough for the CPU's vectors of running extrema, and their tails: a NaN in one
    # row's vector part, another in a tail; 8-bit and 64-bit lanes.
    case(f"{op}_long_runs_nan", op, fn, [Fixed(with_nan([4, 101], [130, 403]))], attrs={"dim": [-1]}, atol=0,
         rtol=0)
    case(f"{op}_long_runs_u8", op, fn, [In([3, 77], "u8", "uint")], attrs={"dim": [-1]}, atol=0, rtol=0)
    case(f"{op}_long_runs_f64", op, fn, [In([3, 77], "f64")], attrs={"dim": [-1]}, atol=0, rtol=0)

# ---- resampling: nearest and bilinear (ATen's ops, as F.interpolate calls them) ----
def NEAREST(x, output_size, scales_h=None, scales_w=None):
    return torch.ops.aten.upsample_nearest2d(x, output_size, scales_h, scales_w)


def BILINEAR(x, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.aten.upsample_bilinear2d(x, output_size, align_corners, scales_h, scales_w)


case("nearest_up_odd", "upsample_nearest2d", NEAREST, [In([2, 3, 5, 7])], attrs={"output_size": [9, 11]}, atol=0, rtol=0)
case("nearest_down_noncontig", "upsample_nearest2d", NEAREST, [In([2, 3, 13, 10], layout=("t", 2, 3))],
     attrs={"output_size": [5, 4]}, atol=0, rtol=0)
case("nearest_double_cl_u8", "upsample_nearest2d", NEAREST, [In([1, 4, 5, 6], "u8", "uint", layout=("cl",))],
     attrs={"output_size": [10, 12]}, atol=0, rtol=0)
case("nearest_scales", "upsample_nearest2d", NEAREST, [In([1, 2, 5, 7])],
     attrs={"output_size": [8, 11], "scales_h": 1.7, "scales_w": 1.6}, atol=0, rtol=0)
# ATen has no integer kernel but uint8 (Amber's covers every numeric dtype): i64 through f64.
case("nearest_down_i64", "upsample_nearest2d", lambda x, **a: NEAREST(x.double(), **a).long(),
     [In([1, 2, 7, 3], "i64", "int")], attrs={"output_size": [4, 3]}, atol=0, rtol=0)
case("nearest_3d", "upsample_nearest2d", NEAREST, [In([2, 5, 7])], attrs={"output_size": [3, 3]},
     error="4-D (N, C, H, W) input")
case("bilinear_up_corners", "upsample_bilinear2d", BILINEAR, [In([2, 3, 5, 7])],
     attrs={"output_size": [9, 13], "align_corners": True})
case("bilinear_up_centres", "upsample_bilinear2d", BILINEAR, [In([2, 3, 5, 7])],
     attrs={"output_size": [11, 8], "align_corners": False})
case("bilinear_down_noncontig", "upsample_bilinear2d", BILINEAR, [In([1, 3, 17, 12], layout=("t", 2, 3))],
     attrs={"output_size": [6, 5], "align_corners": False})
case("bilinear_cl_scales", "upsample_bilinear2d", BILINEAR, [In([2, 8, 6, 5], layout=("cl",))],
     attrs={"output_size": [10, 12], "align_corners": False, "scales_h": 1.75, "scales_w": 2.5})
case("bilinear_f64_to_1", "upsample_bilinear2d", BILINEAR, [In([1, 2, 5, 7], "f64")],
     attrs={"output_size": [1, 1], "align_corners": True})
case("bilinear_same", "upsample_bilinear2d", BILINEAR, [In([1, 2, 5, 7])],
     attrs={"output_size": [5, 7], "align_corners": False}, atol=0, rtol=0)
def BICUBIC(x, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.aten.upsample_bicubic2d(x, output_size, align_corners, scales_h, scales_w)


case("bicubic_up_centres", "upsample_bicubic2d", BICUBIC, [In([2, 3, 5, 7])],
     attrs={"output_size": [11, 9], "align_corners": False}, atol=1e-5)
case("bicubic_up_corners_noncontig", "upsample_bicubic2d", BICUBIC, [In([1, 3, 6, 5], layout=("t", 2, 3))],
     attrs={"output_size": [13, 8], "align_corners": True}, atol=1e-5)
case("bicubic_down_cl_scales", "upsample_bicubic2d", BICUBIC, [In([2, 4, 17, 12], layout=("cl",))],
     attrs={"output_size": [7, 5], "align_corners": False, "scales_h": 0.45, "scales_w": 0.45}, atol=1e-5)
case("bicubic_f64_tiny", "upsample_bicubic2d", BICUBIC, [In([1, 2, 1, 2], "f64")],
     attrs={"output_size": [3, 5], "align_corners": False})
case("bilinear_zero_out", "upsample_bilinear2d", BILINEAR, [In([1, 2, 5, 7])],
     attrs={"output_size": [0, 3], "align_corners": False}, error="sizes should be greater than 0")


# 5-D (N, C, D, H, W): ATen's upsample_nearest3d and upsample_trilinear3d.
def NEAREST3D(x, output_size, scales_d=None, scales_h=None, scales_w=None):
    return torch.ops.aten.upsample_nearest3d(x, output_size, scales_d, scales_h, scales_w)


def TRILINEAR(x, output_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
    return torch.ops.aten.upsample_trilinear3d(x, output_size, align_corners, scales_d, scales_h, scales_w)


case("nearest3d_up_odd", "upsample_nearest3d", NEAREST3D, [In([2, 3, 3, 5, 4])], attrs={"output_size": [5, 9, 7]},
     atol=0, rtol=0)
case("nearest3d_down_noncontig_scales", "upsample_nearest3d", NEAREST3D, [In([1, 4, 7, 6, 9], layout=("t", 1, 4))],
     attrs={"output_size": [3, 4, 5], "scales_d": 0.45, "scales_h": 0.7, "scales_w": 0.6}, atol=0, rtol=0)
case("nearest3d_i64", "upsample_nearest3d", lambda x, **a: NEAREST3D(x.double(), **a).long(),
     [In([1, 2, 2, 3, 3], "i64", "int")], attrs={"output_size": [4, 3, 6]}, atol=0, rtol=0)
case("trilinear_up_centres", "upsample_trilinear3d", TRILINEAR, [In([2, 3, 3, 5, 4])],
     attrs={"output_size": [5, 8, 7], "align_corners": False})
case("trilinear_down_corners_noncontig", "upsample_trilinear3d", TRILINEAR, [In([1, 4, 7, 6, 9], layout=("t", 1, 4))],
     attrs={"output_size": [3, 4, 5], "align_corners": True})
case("trilinear_scales_same_d", "upsample_trilinear3d", TRILINEAR, [In([1, 2, 4, 5, 6])],
     attrs={"output_size": [4, 8, 13], "align_corners": False, "scales_h": 1.7, "scales_w": 2.25})
case("trilinear_f64_to_1", "upsample_trilinear3d", TRILINEAR, [In([1, 2, 3, 5, 7], "f64")],
     attrs={"output_size": [1, 1, 2], "align_corners": True}, atol=1e-12, rtol=1e-12)
case("trilinear_4d", "upsample_trilinear3d", TRILINEAR, [In([2, 5, 7, 3])],
     attrs={"output_size": [3, 3, 3], "align_corners": False}, error="5-D (N, C, D, H, W) input")

# Antialiased (ATen's _upsample_*_aa, F.interpolate(antialias=True)): down by odd factors (windows
# of 3 to 21 taps), up (the plain filter, a window of 3 or 5), mixed, corners, scales, layouts.
def BILINEAR_AA(x, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.aten._upsample_bilinear2d_aa(x, output_size, align_corners, scales_h, scales_w)


def BICUBIC_AA(x, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.aten._upsample_bicubic2d_aa(x, output_size, align_corners, scales_h, scales_w)


case("bilinear_aa_down", "upsample_bilinear2d_aa", BILINEAR_AA, [In([2, 3, 17, 23])],
     attrs={"output_size": [5, 7], "align_corners": False})
case("bilinear_aa_down_far_noncontig", "upsample_bilinear2d_aa", BILINEAR_AA, [In([1, 2, 41, 37], layout=("t", 2, 3))],
     attrs={"output_size": [4, 6], "align_corners": False})
case("bilinear_aa_up_corners", "upsample_bilinear2d_aa", BILINEAR_AA, [In([2, 3, 5, 7])],
     attrs={"output_size": [9, 13], "align_corners": True})
case("bilinear_aa_mixed_cl_scales", "upsample_bilinear2d_aa", BILINEAR_AA, [In([2, 4, 12, 9], layout=("cl",))],
     attrs={"output_size": [5, 14], "align_corners": False, "scales_h": 0.45, "scales_w": 1.6})
case("bilinear_aa_f64_corners", "upsample_bilinear2d_aa", BILINEAR_AA, [In([1, 2, 9, 11], "f64")],
     attrs={"output_size": [4, 3], "align_corners": True}, atol=1e-12, rtol=1e-12)
case("bicubic_aa_down", "upsample_bicubic2d_aa", BICUBIC_AA, [In([2, 3, 19, 16])],
     attrs={"output_size": [6, 5], "align_corners": False}, atol=1e-5)
case("bicubic_aa_down_corners_noncontig", "upsample_bicubic2d_aa", BICUBIC_AA,
     [In([1, 3, 13, 29], layout=("t", 2, 3))], attrs={"output_size": [4, 3], "align_corners": True}, atol=1e-5)
case("bicubic_aa_up_cl", "upsample_bicubic2d_aa", BICUBIC_AA, [In([1, 5, 4, 6], layout=("cl",))],
     attrs={"output_size": [11, 9], "align_corners": False}, atol=1e-5)
case("bicubic_aa_f64_scales", "upsample_bicubic2d_aa", BICUBIC_AA, [In([2, 2, 15, 8], "f64")],
     attrs={"output_size": [4, 20], "align_corners": False, "scales_h": 0.3, "scales_w": 2.5}, atol=1e-12, rtol=1e-12)
case("bicubic_aa_to_1", "upsample_bicubic2d_aa", BICUBIC_AA, [In([1, 2, 7, 6])],
     attrs={"output_size": [1, 1], "align_corners": True}, atol=1e-5)
case("bilinear_aa_3d", "upsample_bilinear2d_aa", BILINEAR_AA, [In([2, 5, 7])],
     attrs={"output_size": [3, 3], "align_corners": False}, error="4-D (N, C, H, W) input")


def GRID(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


# Grids of normal values: about a third of the points fall outside [-1, 1] (the padding modes).
for mode, padding, corners, layout in [("bilinear", "zeros", False, None), ("bilinear", "border", True, None),
                                       ("bilinear", "reflection", False, ("t", 2, 3)),
                                       ("bilinear", "reflection", True, None), ("nearest", "zeros", True, None),
                                       ("nearest", "border", False, None), ("nearest", "reflection", False, None),
                                       ("bicubic", "zeros", False, None), ("bicubic", "border", True, None),
                                       ("bicubic", "reflection", False, None), ("bicubic", "reflection", True, ("cl",))]:
    case(f"grid_{mode}_{padding}_{'corners' if corners else 'centres'}{'_' + layout[0] if layout else ''}",
         "grid_sample", GRID, [In([2, 3, 5, 7], layout=layout), In([2, 4, 6, 2])],
         attrs={"mode": mode, "padding_mode": padding, "align_corners": corners}, atol=1e-5, rtol=1e-5)
case("grid_f64_bilinear", "grid_sample", GRID, [In([1, 2, 4, 3], "f64"), In([1, 5, 1, 2], "f64")],
     attrs={"mode": "bilinear", "padding_mode": "zeros", "align_corners": False})
case("grid_noncontig_grid", "grid_sample", GRID, [In([1, 2, 6, 5]), In([1, 3, 4, 2], layout=("t", 1, 2))],
     attrs={"mode": "bicubic", "padding_mode": "border", "align_corners": False}, atol=1e-5, rtol=1e-5)
# roi_align against torchvision.ops.roi_align: boxes inside, across and outside the image,
# smaller than a bin, reversed; fixed and adaptive grids; both alignments; channels-last and f64.
def roi_align(x, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    import torchvision
    size = list(output_size) * 2 if len(output_size) == 1 else list(output_size)  # one value: both sides
    try:
        return torchvision.ops.roi_align(x, boxes, size, spatial_scale, sampling_ratio, aligned)
    except AssertionError as e:  # torchvision checks shapes with assertions
        raise ValueError(str(e)) from e


def boxes(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


BOXES = boxes([[0, 0.5, 0.5, 6.2, 4.8], [1, 2.0, 1.0, 3.0, 2.5], [1, -3.0, -2.0, 15.0, 11.0], [0, 4.0, 3.0, 4.3, 3.1],
               [1, 5.0, 4.0, 2.0, 1.0], [0, 6.5, 4.5, 9.0, 7.5]])
for aligned in (False, True):
    for ratio in (-1, 2):
        case(f"roi_align_{'aligned' if aligned else 'legacy'}_{'adaptive' if ratio < 0 else 'ratio2'}", "roi_align",
             roi_align, [In([2, 3, 7, 9]), Fixed(BOXES)],
             attrs={"output_size": [3, 4], "spatial_scale": 1.0, "sampling_ratio": ratio, "aligned": aligned},
             atol=1e-5, rtol=1e-5)
case("roi_align_scale_cl", "roi_align", roi_align, [In([2, 5, 13, 11], layout=("cl",)), Fixed(torch.cat([BOXES[:, :1], BOXES[:, 1:] * 2], 1))],
     attrs={"output_size": [2], "spatial_scale": 0.5, "sampling_ratio": 0, "aligned": True}, atol=1e-5, rtol=1e-5)
case("roi_align_f64_big_box", "roi_align", roi_align,
     [In([1, 2, 6, 5], "f64"), Fixed(boxes([[0, -300.0, -200.0, 900.0, 700.0], [0, 1.0, 1.0, 4.0, 3.0]], torch.float64))],
     attrs={"output_size": [2, 3], "sampling_ratio": 0}, atol=1e-12, rtol=1e-10)
case("roi_align_bad_boxes", "roi_align", roi_align, [In([1, 2, 6, 5]), In([3, 4])], attrs={"output_size": [2]},
     error="boxes must be [K, 5]")
case("grid_batch_mismatch", "grid_sample", GRID, [In([2, 2, 4, 4]), In([1, 3, 3, 2])],
     attrs={"mode": "bilinear", "padding_mode": "zeros", "align_corners": False}, error="differs from input's")
case("grid_bad_mode", "grid_sample", GRID, [In([1, 2, 4, 4]), In([1, 3, 3, 2])],
     attrs={"mode": "area", "padding_mode": "zeros", "align_corners": False},
     error="mode must be bilinear, nearest or bicubic")


# ---- normalisation ----
def bn(x, w=None, b=None, m=None, v=None, training=False, momentum=0.1, eps=1e-5):
    return F.batch_norm(x, m, v, w, b, training, momentum, eps)


case("batchnorm_4d", "batch_norm", bn, [In([2, 5, 7, 3]), In([5]), In([5]), In([5]), In([5], kind="pos")])
case("batchnorm_cl", "batch_norm", bn, [In([2, 5, 7, 3], layout=("cl",)), In([5]), In([5]), In([5]), In([5], kind="pos")],
     attrs={"eps": 1e-3})
case("batchnorm_2d_no_affine", "batch_norm", bn, [In([7, 13]), None, None, In([13]), In([13], kind="pos")])
case("batchnorm_noncontig", "batch_norm", bn,
     [In([3, 5, 7, 7], layout=("t", 0, 1)), In([5]), In([5]), In([5]), In([5], kind="pos")])


def ln(x, w=None, b=None, normalized_shape=(), eps=1e-5):
    return F.layer_norm(x, normalized_shape, w, b, eps)


case("layernorm_last", "layer_norm", ln, [In([7, 13]), In([13]), In([13])], attrs={"normalized_shape": [13]})
case("layernorm_two_dims", "layer_norm", ln, [In([3, 5, 7]), In([5, 7]), In([5, 7])],
     attrs={"normalized_shape": [5, 7], "eps": 1e-3})
case("layernorm_no_affine_noncontig", "layer_norm", ln, [In([5, 3, 13], layout=("t", 1, 2)), None, None],
     attrs={"normalized_shape": [13]})
case("layernorm_transformer", "layer_norm", ln, [In([2, 128, 256]), In([256]), In([256])],
     attrs={"normalized_shape": [256]}, atol=1e-5)
case("layernorm_mismatch", "layer_norm", ln, [In([7, 4]), None, None], attrs={"normalized_shape": [5]},
     error="normalized_shape")


# ---- embedding, index_select, cat, stack, split, chunk, dropout ----
EMB = lambda w, idx, padding_idx=-1: torch.embedding(w, idx)  # noqa: E731
case("embedding_2d", "embedding", EMB, [In([11, 5]), In([3, 7], "i64", "idx11")], atol=0, rtol=0)
case("embedding_i32_noncontig", "embedding", EMB, [In([11, 5], layout=("t", 0, 1)), In([13], "i32", "idx11")],
     atol=0, rtol=0)
case("embedding_out_of_range", "embedding", EMB, [In([11, 5]), Fixed(torch.tensor([0, 11]))], error="out of range")
ISEL = lambda x, index, dim: torch.index_select(x, dim, index)  # noqa: E731
case("index_select_dim1", "index_select", ISEL, [In([5, 7, 13], layout=("t", 0, 2)), In([9], "i64", "idx7")],
     attrs={"dim": 1}, atol=0, rtol=0)
case("index_select_i32", "index_select", ISEL, [In([7, 13], "i32", "int"), In([4], "i32", "idx7")], attrs={"dim": 0})
case("index_select_bad", "index_select", ISEL, [In([7, 13]), Fixed(torch.tensor([7]))], attrs={"dim": 0},
     error="out of range")
for op, fn in {"any": torch.any, "all": torch.all}.items():
    case(f"{op}_rows_f32", op, any_all(fn), [Fixed(torch.tensor([[0.0, 0.0, 0.0], [0.0, float("nan"), 0.0],
                                                                 [1e-30, 2.0, -3.0]]))],
         attrs={"dim": [1]}, atol=0, rtol=0)
    case(f"{op}_dim0_keepdim_i32", op, any_all(fn), [In([5, 3], "i32", "uint")], attrs={"dim": [0], "keepdim": True},
         atol=0, rtol=0)
    case(f"{op}_two_dims_bool", op, any_all(fn), [In([4, 6, 5], "bool", "bool", layout=("t", 0, 2))],
         attrs={"dim": [0, -1]}, atol=0, rtol=0)
    case(f"{op}_empty", op, any_all(fn), [In([0, 3])], attrs={"dim": [0]}, atol=0, rtol=0)
    case(f"{op}_everything_f16", op, any_all(fn), [In([3, 40], "f16", "uint")], atol=0, rtol=0)
    case(f"{op}_scalar", op, any_all(fn), [In([], "i64", "uint")], atol=0, rtol=0)
    case(f"{op}_long_u8", op, any_all(fn), [In([2, 70001], "u8", "uint")], attrs={"dim": [1]}, atol=0, rtol=0)
TOPK = lambda x, k, dim=-1, largest=True, sorted=True: torch.topk(x, k, dim, largest, sorted)  # noqa: E731
case("topk_last", "topk", TOPK, [In([7, 13])], attrs={"k": 4}, atol=0, rtol=0)
case("topk_smallest_dim0_noncontig", "topk", TOPK, [In([9, 5, 6], layout=("t", 0, 2))],
     attrs={"k": 3, "dim": 0, "largest": False}, atol=0, rtol=0)
case("topk_nan", "topk", TOPK, [Fixed(torch.tensor([[1.0, float("nan"), 3.0, -2.0], [0.5, 4.0, -1.0, 2.0]]))],
     attrs={"k": 2}, atol=0, rtol=0)
case("topk_smallest_nan_last", "topk", TOPK, [Fixed(torch.tensor([[1.0, float("nan"), 3.0, -2.0]]))],
     attrs={"k": 4, "largest": False}, atol=0, rtol=0)
case("topk_i32_distinct", "topk", TOPK, [Fixed(torch.randperm(1000, generator=torch.Generator().manual_seed(5))
                                               .to(torch.int32).reshape(4, 250))], attrs={"k": 7, "dim": 1},
     atol=0, rtol=0)
case("topk_all_f64", "topk", TOPK, [In([3, 301], "f64")], attrs={"k": 301}, atol=0, rtol=0)
case("topk_long_line", "topk", TOPK, [In([2, 4099])], attrs={"k": 50}, atol=0, rtol=0)
# A whole line sorted (the CPU's radix sort of packed ranks, CUDA's topk_sort_kernel) and, strided,
# k past an eighth of the line (the CPU's radix sort again).
case("topk_sort_long_line", "topk", TOPK, [In([2, 3001])], attrs={"k": 3001}, atol=0, rtol=0)
case("topk_smallest_long_strided", "topk", TOPK, [In([1100, 3])], attrs={"k": 200, "dim": 0, "largest": False},
     atol=0, rtol=0)
case("topk_zero", "topk", TOPK, [In([3, 5])], attrs={"k": 0}, atol=0, rtol=0)
case("topk_scalar", "topk", TOPK, [In([])], attrs={"k": 1}, atol=0, rtol=0)
case("topk_k_too_big", "topk", TOPK, [In([3, 5])], attrs={"k": 6}, error="k 6 is out of range")
GATHER = lambda x, index, dim: torch.gather(x, dim, index.long())  # i32 indices: an Amber extension  # noqa: E731
case("gather_dim1_noncontig", "gather", GATHER, [In([5, 7, 13], layout=("t", 0, 2)), In([4, 9, 6], "i64", "idx7")],
     attrs={"dim": 1}, atol=0, rtol=0)
case("gather_dim0_i32", "gather", GATHER, [In([6, 5], "i32", "int"), In([3, 5], "i32", "idx6")], attrs={"dim": -2},
     atol=0, rtol=0)
case("gather_last_f64", "gather", GATHER, [In([3, 4, 1001], "f64"), In([3, 4, 17], "i64", "idx1001", layout=("t", 0, 1))],
     attrs={"dim": -1}, atol=0, rtol=0)
case("gather_bool", "gather", GATHER, [In([4, 3], "bool", "bool"), In([4, 5], "i64", "idx3")], attrs={"dim": 1},
     atol=0, rtol=0)
case("gather_bad_index", "gather", GATHER, [In([7, 13]), Fixed(torch.tensor([[7]]))], attrs={"dim": 0},
     error="out of range")
case("gather_index_too_big", "gather", GATHER, [In([3, 4]), In([4, 2], "i64", "idx4")], attrs={"dim": 1},
     error="is larger than self")
case("gather_rank_mismatch", "gather", GATHER, [In([3, 4]), In([4], "i64", "idx3")], attrs={"dim": 0},
     error="as many dims as self")


def distinct_index(shape, dim, size, seed):
    """An index of shape whose entries along dim are distinct values below size (so scatter's
    result does not depend on which of repeated writes wins)."""
    g = torch.Generator().manual_seed(seed)
    rest = list(shape)
    n = rest.pop(dim)
    lines = [torch.randperm(size, generator=g)[:n] for _ in range(math.prod(rest))]
    return torch.stack(lines).reshape(*rest, n).movedim(-1, dim).contiguous()


SCATTER = lambda x, index, src, dim: torch.scatter(x, dim, index.long(), src)  # noqa: E731
SCATTER_VALUE = lambda x, index, dim, value: torch.scatter(x, dim, index.long(), value)  # noqa: E731
SCATTER_ADD = lambda x, index, src, dim: torch.scatter_add(x, dim, index.long(), src)  # noqa: E731
case("scatter_dim0", "scatter", SCATTER, [In([4, 5]), Fixed(distinct_index([3, 5], 0, 4, 1)), In([3, 5])],
     attrs={"dim": 0}, atol=0, rtol=0)
case("scatter_dim1_src_larger_noncontig", "scatter", SCATTER,
     [In([3, 6], layout=("t", 0, 1)), Fixed(distinct_index([2, 3], 1, 6, 2)), In([3, 4])], attrs={"dim": -1},
     atol=0, rtol=0)
case("scatter_i64_i32_index", "scatter", SCATTER,
     [In([5, 4], "i64", "int"), Fixed(distinct_index([5, 2], 1, 4, 3).int()), In([5, 2], "i64", "int")],
     attrs={"dim": 1}, atol=0, rtol=0)
case("scatter_value_3d", "scatter.value", SCATTER_VALUE, [In([2, 3, 4]), Fixed(distinct_index([2, 2, 4], 1, 3, 4))],
     attrs={"dim": 1, "value": 2.5}, atol=0, rtol=0)
case("scatter_value_bool", "scatter.value", SCATTER_VALUE,
     [In([3, 4], "bool", "bool"), Fixed(distinct_index([3, 2], 1, 4, 5))], attrs={"dim": 1, "value": True},
     atol=0, rtol=0)
case("scatter_add_repeats", "scatter_add", SCATTER_ADD, [In([5]), In([9], "i64", "idx5"), In([9])], attrs={"dim": 0})
case("scatter_add_2d_f64", "scatter_add", SCATTER_ADD,
     [In([3, 7], "f64"), In([3, 11], "i64", "idx7"), In([4, 11], "f64")], attrs={"dim": 1})
case("scatter_add_i32", "scatter_add", SCATTER_ADD,
     [In([6, 3], "i32", "int"), In([8, 3], "i64", "idx6"), In([8, 3], "i32", "int")], attrs={"dim": 0}, atol=0, rtol=0)
SCATTER_REDUCE = lambda x, index, src, dim, reduce, include_self=True: torch.scatter_reduce(  # noqa: E731
    x, dim, index.long(), src, reduce, include_self=include_self)
for reduce in ["sum", "prod", "mean", "amax", "amin"]:
    case(f"scatter_reduce_{reduce}", "scatter_reduce", SCATTER_REDUCE, [In([5, 4]), In([7, 3], "i64", "idx5"), In([7, 4])],
         attrs={"dim": 0, "reduce": reduce})
    case(f"scatter_reduce_{reduce}_no_self_noncontig", "scatter_reduce", SCATTER_REDUCE,
         [In([4, 6], layout=("t", 0, 1)), Fixed(torch.randint(0, 6, (4, 9), generator=torch.Generator().manual_seed(7)).int()), In([5, 9])],
         attrs={"dim": -1, "reduce": reduce, "include_self": False})
    for include_self in [True, False]:  # integer sums and products wrap, means floor
        case(f"scatter_reduce_{reduce}_i32_{'self' if include_self else 'no_self'}", "scatter_reduce", SCATTER_REDUCE,
             [In([6, 3], "i32", "int"), In([8, 3], "i64", "idx6"), In([8, 3], "i32", "int")],
             attrs={"dim": 0, "reduce": reduce, "include_self": include_self}, atol=0, rtol=0)
case("scatter_reduce_mean_f64_3d", "scatter_reduce", SCATTER_REDUCE,
     [In([3, 7, 2], "f64"), In([3, 11, 2], "i64", "idx7"), In([4, 11, 2], "f64")],
     attrs={"dim": 1, "reduce": "mean", "include_self": False}, atol=1e-12, rtol=1e-12)
case("scatter_reduce_amax_i64", "scatter_reduce", SCATTER_REDUCE,
     [In([4, 5], "i64", "int"), In([4, 8], "i64", "idx5"), In([4, 8], "i64", "int")],
     attrs={"dim": 1, "reduce": "amax", "include_self": False}, atol=0, rtol=0)
for reduce in ["amax", "amin"]:  # a NaN wins, from self or from src
    case(f"scatter_reduce_{reduce}_nan", "scatter_reduce", SCATTER_REDUCE,
         [Fixed(torch.tensor([1.0, float("nan"), 3.0, 4.0, 0.0])), Fixed(torch.tensor([0, 0, 2, 2, 3, 1])),
          Fixed(torch.tensor([float("nan"), 5.0, 2.0, 7.0, -1.0, 2.0]))], attrs={"dim": 0, "reduce": reduce},
         atol=0, rtol=0)
case("scatter_reduce_bad_reduce", "scatter_reduce", SCATTER_REDUCE, [In([3, 4]), In([2, 4], "i64", "idx3"), In([2, 4])],
     attrs={"dim": 0, "reduce": "max"}, error="reduce must be sum, prod, mean, amax or amin, got 'max'")
case("scatter_reduce_bad_index", "scatter_reduce", SCATTER_REDUCE,
     [In([3, 4]), Fixed(torch.tensor([[3]])), In([1, 1])], attrs={"dim": 0, "reduce": "sum"}, error="out of range")
case("scatter_bad_index", "scatter", SCATTER, [In([7, 13]), Fixed(torch.tensor([[7]])), In([1, 1])], attrs={"dim": 0},
     error="out of range")
case("scatter_src_too_small", "scatter", SCATTER, [In([3, 4]), In([2, 3], "i64", "idx3"), In([2, 2])],
     attrs={"dim": 0}, error="is larger than src")
case("scatter_add_dtype_mismatch", "scatter_add", SCATTER_ADD, [In([3, 4]), In([2, 4], "i64", "idx3"), In([2, 4], "f64")],
     attrs={"dim": 0}, error="differs from self dtype")

def repeat(x, repeats):
    return x.repeat(repeats)


case("repeat_2d", "repeat", repeat, [In([3, 5])], attrs={"repeats": [2, 3]}, atol=0, rtol=0)
case("repeat_new_dims_noncontig_i32", "repeat", repeat, [In([4, 3], "i32", "int", layout=("t", 0, 1))],
     attrs={"repeats": [2, 1, 3, 1]}, atol=0, rtol=0)
case("repeat_zero_bool", "repeat", repeat, [In([2, 3], "bool", "bool")], attrs={"repeats": [0, 2]}, atol=0, rtol=0)
case("repeat_scalar", "repeat", repeat, [In([])], attrs={"repeats": [4]}, atol=0, rtol=0)
case("repeat_too_few", "repeat", repeat, [In([2, 3])], attrs={"repeats": [2]}, error="at least as many entries")
case("repeat_overflow", "repeat", repeat, [In([2, 3])], attrs={"repeats": [1, 2**62]}, error="overflow")
case("repeat_negative", "repeat", repeat, [In([2, 3])], attrs={"repeats": [1, -1]}, error="must not be negative")


def roll(x, shifts, dims):
    return torch.roll(x, shifts, dims)


case("roll_last", "roll", roll, [In([7, 13])], attrs={"shifts": [3], "dims": [-1]}, atol=0, rtol=0)
case("roll_two_noncontig_i64", "roll", roll, [In([5, 7, 13], "i64", "int", layout=("t", 0, 2))],
     attrs={"shifts": [-2, 30], "dims": [0, 2]}, atol=0, rtol=0)
case("roll_same_dim_twice_bool", "roll", roll, [In([6, 5], "bool", "bool")], attrs={"shifts": [2, 5], "dims": [1, 1]},
     atol=0, rtol=0)
case("roll_empty_dim", "roll", roll, [In([0, 4])], attrs={"shifts": [1], "dims": [0]}, atol=0, rtol=0)
case("roll_mismatch", "roll", roll, [In([3, 4])], attrs={"shifts": [1, 2], "dims": [0]},
     error="must have the same length")
case("roll_bad_dim", "roll", roll, [In([3, 4])], attrs={"shifts": [1], "dims": [2]}, error="out of range")


def pad(x, pad, mode="constant", value=0):
    if mode == "constant":
        return torch.nn.functional.pad(x, pad, mode, value)
    # reflect/replicate/circular: PyTorch pads only the last 1-3 dims of a batched input (and
    # not every dtype); Amber pads any dims of any dtype. Reference: through f64, a batch dim
    # added where PyTorch wants one.
    y = x.double()
    lead = y.dim() == len(pad) // 2
    y = torch.nn.functional.pad(y.unsqueeze(0) if lead else y, pad, mode)
    return (y.squeeze(0) if lead else y).to(x.dtype)


case("pad_constant_2d", "pad", pad, [In([2, 3, 5, 7])], attrs={"pad": [1, 2, 3, 0], "value": 1.5}, atol=0, rtol=0)
case("pad_constant_crop_i64", "pad", pad, [In([4, 9], "i64", "int", layout=("t", 0, 1))],
     attrs={"pad": [-2, 3, 1, -1], "value": 7}, atol=0, rtol=0)
case("pad_constant_all_dims_bool", "pad", pad, [In([2, 3], "bool", "bool")], attrs={"pad": [1, 0, 0, 2], "value": 1},
     atol=0, rtol=0)
case("pad_reflect_2d", "pad", pad, [In([2, 3, 5, 7])], attrs={"pad": [3, 6, 4, 2], "mode": "reflect"}, atol=0, rtol=0)
case("pad_replicate_3d_noncontig", "pad", pad, [In([2, 3, 4, 5, 6], layout=("t", 1, 4))],
     attrs={"pad": [2, 0, 1, 3, 0, 4], "mode": "replicate"}, atol=0, rtol=0)
case("pad_circular_1d_i32", "pad", pad, [In([3, 4, 1001], "i32", "int")], attrs={"pad": [5, 1001], "mode": "circular"},
     atol=0, rtol=0)
case("pad_odd", "pad", pad, [In([3, 4])], attrs={"pad": [1, 2, 3]}, error="(before, after) pair per padded dim")
case("pad_reflect_too_far", "pad", pad, [In([3, 4])], attrs={"pad": [4, 0], "mode": "reflect"},
     error="must be less than its size 4")
case("pad_circular_too_far", "pad", pad, [In([3, 4])], attrs={"pad": [0, 5], "mode": "circular"},
     error="wraps around more than once")
case("pad_negative_size", "pad", pad, [In([3, 4])], attrs={"pad": [-3, -2]}, error="gives a negative size")
case("pad_overflow", "pad", pad, [In([3, 4])], attrs={"pad": [2**62, 2**62]}, error="overflow")
case("pad_bad_mode", "pad", pad, [In([3, 4])], attrs={"pad": [1, 1], "mode": "edge"},
     error="mode must be constant, reflect, replicate or circular")
CAT = lambda *ts, dim=0: torch.cat(ts, dim)  # noqa: E731
STACK = lambda *ts, dim=0: torch.stack(ts, dim)  # noqa: E731
case("cat_dim1", "cat", CAT, [In([5, 3, 7]), In([5, 1, 7], layout=("t", 0, 2)), In([5, 4, 7])], attrs={"dim": 1},
     atol=0, rtol=0)
case("cat_promote", "cat", CAT, [In([2, 3], "i32", "int"), In([1, 3]), In([4, 3], "f64")], atol=0, rtol=0)
case("cat_skip_empty", "cat", CAT, [In([2, 3]), In([0]), In([1, 3])], atol=0, rtol=0)
case("cat_many", "cat", CAT, [In([1, 2]) for _ in range(40)], atol=0, rtol=0)
case("cat_mismatch", "cat", CAT, [In([2, 3]), In([2, 4])], error="sizes of tensors must match")
case("stack_last", "stack", STACK, [In([3, 5]), In([3, 5], layout=("t", 0, 1)), In([3, 5])], attrs={"dim": -1},
     atol=0, rtol=0)
case("stack_unequal", "stack", STACK, [In([3, 5]), In([3, 4])], error="equal size")
SPLIT = lambda x, split_size, dim=0: torch.split(x, split_size, dim)  # noqa: E731
case("split_uneven", "split", SPLIT, [In([13, 5])], attrs={"split_size": 4}, atol=0, rtol=0)
case("split_dim1_noncontig", "split", SPLIT, [In([5, 13], layout=("t", 0, 1))], attrs={"split_size": 6, "dim": 1},
     atol=0, rtol=0)
case("split_with_sizes", "split_with_sizes", lambda x, split_sizes, dim=0: torch.split(x, split_sizes, dim),
     [In([7, 13])], attrs={"split_sizes": [2, 0, 11], "dim": 1}, atol=0, rtol=0)
case("split_with_sizes_bad", "split_with_sizes", lambda x, split_sizes, dim=0: torch.split(x, split_sizes, dim),
     [In([7, 13])], attrs={"split_sizes": [2, 3]}, error="sum exactly")
case("chunk_uneven", "chunk", lambda x, chunks, dim=0: torch.chunk(x, chunks, dim), [In([13, 3])],
     attrs={"chunks": 5}, atol=0, rtol=0)
case("chunk_qkv", "chunk", lambda x, chunks, dim=0: torch.chunk(x, chunks, dim), [In([2, 7, 24])],
     attrs={"chunks": 3, "dim": -1}, atol=0, rtol=0)
case("dropout_eval", "dropout", lambda x, p=0.5, train=False: F.dropout(x, p, train), [In([7, 13])],
     attrs={"p": 0.3}, atol=0, rtol=0)

# ---- the unary ops of the instruction list added with it (core/fused_ops.h) ----
LIST_UNARY = {"erf": (torch.erf, "wide"), "log1p": (torch.log1p, "pos"), "expm1": (torch.expm1, "randn"),
              "sin": (torch.sin, "wide"), "cos": (torch.cos, "wide"), "floor": (torch.floor, "halves"),
              "ceil": (torch.ceil, "halves"), "round": (torch.round, "halves"), "sign": (torch.sign, "halves"),
              "relu6": (F.relu6, "wide"), "hardsigmoid": (F.hardsigmoid, "wide"), "hardswish": (F.hardswish, "wide"),
              "mish": (F.mish, "wide"), "softsign": (F.softsign, "wide")}
for op, (fn, kind) in LIST_UNARY.items():
    case(f"{op}_13", op, fn, [In([13], kind=kind)])
    case(f"{op}_noncontig", op, fn, [In([5, 7, 13], kind=kind, layout=("t", 0, 2))])
    case(f"{op}_f64", op, fn, [In([7, 5], "f64", kind=kind)], atol=1e-12, rtol=1e-12)
    case(f"{op}_big", op, fn, [In([3, 1001], kind=kind)])
# the trigonometric and hyperbolic functions ONNX has (added with [onnx])
TRIG_UNARY = {"tan": (torch.tan, "randn"), "asin": (torch.asin, "unit"), "acos": (torch.acos, "unit"),
              "atan": (torch.atan, "wide"), "sinh": (torch.sinh, "randn"), "cosh": (torch.cosh, "randn"),
              "asinh": (torch.asinh, "wide"), "acosh": (torch.acosh, "ge1"), "atanh": (torch.atanh, "unit")}
for op, (fn, kind) in TRIG_UNARY.items():
    case(f"{op}_13", op, fn, [In([13], kind=kind)])
    case(f"{op}_noncontig", op, fn, [In([5, 7, 13], kind=kind, layout=("t", 0, 2))])
    case(f"{op}_f64", op, fn, [In([7, 5], "f64", kind=kind)], atol=1e-12, rtol=1e-12)
    case(f"{op}_big", op, fn, [In([3, 1001], kind=kind)])
case("acosh_below_1_nan", "acosh", torch.acosh, [In([7], kind="unit")])
case("atan_i64_to_f32", "atan", torch.atan, [In([7], "i64", "int")])
case("sign_i32", "sign", torch.sign, [In([13], "i32", "int")], atol=0, rtol=0)
case("sign_u8", "sign", torch.sign, [In([13], "u8", "uint")], atol=0, rtol=0)
case("erf_i64_to_f32", "erf", torch.erf, [In([7], "i64", "int")])
case("floor_i64", "floor", torch.floor, [In([7], "i64", "int")], atol=0, rtol=0)
case("round_i8", "round", torch.round, [In([7], "i8", "int")], atol=0, rtol=0)
case("hardswish_i64_refused", "hardswish", F.hardswish, [In([7], "i64", "int")], error="not supported")
case("selu_13", "selu", F.selu, [In([13], kind="wide")])
case("selu_noncontig", "selu", F.selu, [In([5, 7, 13], kind="wide", layout=("t", 0, 2))])
case("selu_f64", "selu", F.selu, [In([7, 5], "f64", kind="wide")], atol=1e-12, rtol=1e-12)
# Ops whose Scalar attributes become the fused instruction's operands: defaults, given values, f64, non-contiguous.
ATTR_UNARY = {
    "leaky_relu": (lambda a, negative_slope=0.01: F.leaky_relu(a, negative_slope), {"negative_slope": 0.2}),
    "elu": (lambda a, alpha=1: F.elu(a, alpha), {"alpha": 0.7}),
    "softplus": (lambda a, beta=1, threshold=20: F.softplus(a, beta, threshold), {"beta": 2, "threshold": 3}),
    "hardshrink": (lambda a, lambd=0.5: F.hardshrink(a, lambd), {"lambd": 1.5}),
    "softshrink": (lambda a, lambd=0.5: F.softshrink(a, lambd), {"lambd": 1.5}),
}
for op, (fn, given) in ATTR_UNARY.items():
    case(f"{op}_default", op, fn, [In([7, 13], kind="wide")])
    case(f"{op}_given", op, fn, [In([5, 7, 13], kind="wide", layout=("t", 0, 2))], attrs=given)
    case(f"{op}_f64", op, fn, [In([7, 5], "f64", kind="wide")], attrs=given, atol=1e-12, rtol=1e-12)
case("threshold_given", "threshold", lambda a, threshold, value: F.threshold(a, threshold, value),
     [In([5, 7, 13], kind="wide", layout=("t", 0, 2))], attrs={"threshold": 0.5, "value": -2})
case("threshold_f64", "threshold", lambda a, threshold, value: F.threshold(a, threshold, value),
     [In([7, 5], "f64", kind="wide")], attrs={"threshold": -1.5, "value": 20}, atol=1e-12, rtol=1e-12)
for op, fn in {"maximum": torch.maximum, "minimum": torch.minimum}.items():
    case(f"{op}_bcast", op, fn, [In([5, 7, 13], layout=("t", 0, 2)), In([7, 1])], atol=0, rtol=0)
    case(f"{op}_f64", op, fn, [In([7, 5], "f64"), In([5], "f64")], atol=0, rtol=0)
    case(f"{op}_i32_i64", op, fn, [In([13], "i32", "int"), In([13], "i64", "int")], atol=0, rtol=0)
    case(f"{op}_big", op, fn, [In([3, 1001]), In([3, 1001])], atol=0, rtol=0)


# ---- int8 quantized ops (what `amber quantize` makes): the input fake-quantized as the op
# defines it (x * (1 / scale) in f32, halves to even, saturated to [0, 255]), the int8
# weights times their scales, the product in f64 (the kernels' integer sums are exact) ----
def fake_quant(x, scale, zero_point):
    s = torch.tensor(scale, dtype=torch.float32)
    q = torch.clamp(torch.round(x * (1.0 / s)) + zero_point, 0, 255)
    return ((q - zero_point) * s.double()).double()


def check_quant(w, input_scale, input_zero_point):
    if w.dtype != torch.int8:
        raise ValueError(f"weight of {w.dtype}")
    if not (input_scale > 0) or not (0 <= input_zero_point <= 255):
        raise ValueError(f"input_scale {input_scale}, input_zero_point {input_zero_point}")


def quantized_conv(x, w, ws, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1, input_scale=1.0,
                   input_zero_point=0, activation="none", min_val=0.0, max_val=6.0):
    check_quant(w, input_scale, input_zero_point)
    if activation not in ("none", "clamp", "silu", "hardswish"):
        raise ValueError(f"activation {activation}")
    wd = w.double() * ws.double().reshape(-1, 1, 1, 1)
    y = F.conv2d(fake_quant(x, input_scale, input_zero_point), wd, None if b is None else b.double(),
                 stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation), groups=groups)
    if activation == "clamp":
        y = torch.clamp(y, min_val, max_val)
    elif activation != "none":
        y = F.silu(y) if activation == "silu" else F.hardswish(y)
    return y.float()


def quantized_linear(x, w, ws, b=None, input_scale=1.0, input_zero_point=0):
    check_quant(w, input_scale, input_zero_point)
    return F.linear(fake_quant(x, input_scale, input_zero_point), w.double() * ws.double().reshape(-1, 1),
                    None if b is None else b.double()).float()


def int8_weights(shape):
    return Fixed(torch.randint(-127, 128, shape, generator=gen).to(torch.int8))


def weight_scales(n):
    return Fixed((torch.rand([n], generator=gen) * 0.02 + 0.001).float())


QUANT_TOL = dict(atol=1e-4, rtol=1e-4)
case("quantized_conv_zero_point", "quantized_conv2d", quantized_conv,
     [In([2, 5, 9, 7], kind="wide"), int8_weights([7, 5, 3, 3]), weight_scales(7), In([7])],
     attrs={"padding": [1], "input_scale": 0.05, "input_zero_point": 131}, **QUANT_TOL)
case("quantized_conv_relu_input_clamp", "quantized_conv2d", quantized_conv,
     [In([3, 6, 8, 9], kind="pos"), int8_weights([4, 3, 3, 2]), weight_scales(4), None],
     attrs={"groups": 2, "stride": [2, 1], "dilation": [1, 2], "input_scale": 0.01, "activation": "clamp",
            "min_val": 0.0, "max_val": 6.0}, **QUANT_TOL)
case("quantized_conv_silu_noncontig_unbatched", "quantized_conv2d", quantized_conv,
     [In([6, 11, 9], layout=("t", 1, 2)), int8_weights([5, 6, 1, 1]), weight_scales(5), In([5])],
     attrs={"input_scale": 0.02, "input_zero_point": 128, "activation": "silu"}, **QUANT_TOL)
case("quantized_conv_channels_last_hardswish", "quantized_conv2d", quantized_conv,
     [In([2, 16, 6, 7], layout=("cl",)), int8_weights([8, 16, 3, 3]), weight_scales(8), In([8])],
     attrs={"padding": [1], "input_scale": 0.03, "input_zero_point": 100, "activation": "hardswish"}, **QUANT_TOL)
case("quantized_conv_bad_zero_point", "quantized_conv2d", quantized_conv,
     [In([1, 3, 8, 8]), int8_weights([4, 3, 3, 3]), weight_scales(4), None],
     attrs={"input_scale": 0.1, "input_zero_point": 300}, error="input_zero_point must be in [0, 255]")
case("quantized_conv_bad_activation", "quantized_conv2d", quantized_conv,
     [In([1, 3, 8, 8]), int8_weights([4, 3, 3, 3]), weight_scales(4), None],
     attrs={"input_scale": 0.1, "activation": "relu"}, error="activation must be clamp, silu, hardswish or none")
case("quantized_linear_bias", "quantized_linear", quantized_linear,
     [In([7, 13], kind="wide"), int8_weights([5, 13]), weight_scales(5), In([5])],
     attrs={"input_scale": 0.04, "input_zero_point": 125}, **QUANT_TOL)
case("quantized_linear_3d_no_bias", "quantized_linear", quantized_linear,
     [In([2, 7, 33]), int8_weights([9, 33]), weight_scales(9), None],
     attrs={"input_scale": 0.02, "input_zero_point": 128}, **QUANT_TOL)
case("quantized_linear_noncontig_1d", "quantized_linear", quantized_linear,
     [In([3, 7, 13], kind="pos", layout=("t", 0, 1)), int8_weights([6, 13]), weight_scales(6), In([6])],
     attrs={"input_scale": 0.01}, **QUANT_TOL)
case("quantized_linear_1d", "quantized_linear", quantized_linear,
     [In([13]), int8_weights([5, 13]), weight_scales(5), In([5])],
     attrs={"input_scale": 0.03, "input_zero_point": 90}, **QUANT_TOL)
case("quantized_linear_bad_scale", "quantized_linear", quantized_linear,
     [In([7, 13]), int8_weights([5, 13]), weight_scales(5), None],
     attrs={"input_scale": -0.5}, error="input_scale must be finite and positive")
case("quantized_linear_float_weight", "quantized_linear", quantized_linear,
     [In([7, 13]), In([5, 13]), weight_scales(5), None],
     attrs={"input_scale": 0.5}, error="weight must be int8, got f32")


# ---- int8 ops with uint8 activations (format 1.4; `amber quantize` chains consecutive int8
# layers): a u8 input is the quantized source itself; the .u8 overloads quantize their f32
# result (after the activation) with output_scale and output_zero_point, rounding half to
# even. The reference computes the result in f64, the kernels in f32: a result within an
# ulp of a rounding boundary may land on either side, so u8 outputs may differ by one level
# (atol 1 on an integer output; test_util.h's compare). ----
def dequant_u8(q, scale, zero_point):
    return ((q.double() - zero_point) * torch.tensor(scale, dtype=torch.float32).double())


def requant(y, output_scale, output_zero_point):
    if not (output_scale > 0) or not (0 <= output_zero_point <= 255):
        raise ValueError(f"output_scale {output_scale}, output_zero_point {output_zero_point}")
    inv = 1.0 / torch.tensor(output_scale, dtype=torch.float32)
    return torch.clamp(torch.round(y.float() * inv) + output_zero_point, 0, 255).to(torch.uint8)


def activation_of(y, activation, min_val, max_val):
    if activation not in ("none", "clamp", "silu", "hardswish"):
        raise ValueError(f"activation {activation}")
    if activation == "clamp":
        return torch.clamp(y, min_val, max_val)
    if activation == "silu":
        return F.silu(y)
    return F.hardswish(y) if activation == "hardswish" else y


def quantized_conv_any(x, w, ws, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1, input_scale=1.0,
                       input_zero_point=0, activation="none", min_val=0.0, max_val=6.0):
    if x.dtype != torch.uint8:
        return quantized_conv(x, w, ws, b, stride, padding, dilation, groups, input_scale, input_zero_point,
                              activation, min_val, max_val)
    check_quant(w, input_scale, input_zero_point)
    wd = w.double() * ws.double().reshape(-1, 1, 1, 1)
    y = F.conv2d(dequant_u8(x, input_scale, input_zero_point), wd, None if b is None else b.double(),
                 stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation), groups=groups)
    return activation_of(y, activation, min_val, max_val).float()


def quantized_conv_u8(x, w, ws, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1, input_scale=1.0,
                      input_zero_point=0, activation="none", min_val=0.0, max_val=6.0, output_scale=1.0,
                      output_zero_point=0):
    y = quantized_conv_any(x, w, ws, b, stride, padding, dilation, groups, input_scale, input_zero_point, activation,
                           min_val, max_val)
    return requant(y, output_scale, output_zero_point)


def quantized_linear_any(x, w, ws, b=None, input_scale=1.0, input_zero_point=0):
    if x.dtype != torch.uint8:
        return quantized_linear(x, w, ws, b, input_scale, input_zero_point)
    check_quant(w, input_scale, input_zero_point)
    return F.linear(dequant_u8(x, input_scale, input_zero_point), w.double() * ws.double().reshape(-1, 1),
                    None if b is None else b.double()).float()


def quantized_linear_u8(x, w, ws, b=None, input_scale=1.0, input_zero_point=0, activation="none", min_val=0.0,
                        max_val=6.0, output_scale=1.0, output_zero_point=0):
    y = quantized_linear_any(x, w, ws, b, input_scale, input_zero_point).double()
    return requant(activation_of(y, activation, min_val, max_val), output_scale, output_zero_point)


def u8_levels(shape):
    return Fixed(torch.randint(0, 256, shape, generator=gen).to(torch.uint8))


def max_pool_u8(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return F.max_pool2d(x.float(), kernel_size, stride or None, padding, dilation, ceil_mode=ceil_mode).to(torch.uint8)


U8_TOL = dict(atol=1, rtol=0)
case("quantized_conv_u8_input", "quantized_conv2d", quantized_conv_any,
     [u8_levels([2, 6, 7, 9]), int8_weights([5, 6, 3, 3]), weight_scales(5), In([5])],
     attrs={"padding": [1], "input_scale": 0.03, "input_zero_point": 17, "activation": "clamp", "min_val": 0.0,
            "max_val": 1e30}, **QUANT_TOL)
case("quantized_conv_u8_input_channels_last", "quantized_conv2d", quantized_conv_any,
     [Fixed(torch.randint(0, 256, [2, 8, 5, 6], generator=gen).to(torch.uint8), layout=("cl",)),
      int8_weights([3, 8, 1, 1]), weight_scales(3), None],
     attrs={"input_scale": 0.05, "input_zero_point": 0}, **QUANT_TOL)
case("quantized_conv_u8_out", "quantized_conv2d.u8", quantized_conv_u8,
     [In([2, 5, 9, 7], kind="wide"), int8_weights([7, 5, 3, 3]), weight_scales(7), In([7])],
     attrs={"padding": [1], "input_scale": 0.05, "input_zero_point": 131, "activation": "clamp", "min_val": 0.0,
            "max_val": 1e30, "output_scale": 0.02, "output_zero_point": 0}, **U8_TOL)
case("quantized_conv_u8_in_out_strided_groups", "quantized_conv2d.u8", quantized_conv_u8,
     [Fixed(torch.randint(0, 256, [1, 6, 11, 7], generator=gen).to(torch.uint8), layout=("s2", 3)),
      int8_weights([4, 3, 3, 3]), weight_scales(4), None],
     attrs={"groups": 2, "stride": [2, 1], "dilation": [1, 2], "input_scale": 0.01, "input_zero_point": 128,
            "output_scale": 0.004, "output_zero_point": 120}, **U8_TOL)
case("quantized_conv_u8_out_silu_unbatched", "quantized_conv2d.u8", quantized_conv_u8,
     [In([6, 11, 9], layout=("t", 1, 2)), int8_weights([5, 6, 1, 1]), weight_scales(5), In([5])],
     attrs={"input_scale": 0.02, "input_zero_point": 128, "activation": "silu", "output_scale": 0.01,
            "output_zero_point": 30}, **U8_TOL)
case("quantized_conv_u8_out_saturates", "quantized_conv2d.u8", quantized_conv_u8,
     [In([1, 4, 6, 6], kind="wide"), int8_weights([3, 4, 3, 3]), weight_scales(3), None],
     attrs={"input_scale": 0.1, "input_zero_point": 100, "output_scale": 0.001, "output_zero_point": 128},
     **U8_TOL)
case("quantized_conv_u8_bad_output_zero_point", "quantized_conv2d.u8", quantized_conv_u8,
     [In([1, 3, 8, 8]), int8_weights([4, 3, 3, 3]), weight_scales(4), None],
     attrs={"input_scale": 0.1, "output_scale": 0.1, "output_zero_point": 256},
     error="output_zero_point must be in [0, 255]")
case("quantized_linear_u8_input", "quantized_linear", quantized_linear_any,
     [u8_levels([7, 13]), int8_weights([5, 13]), weight_scales(5), In([5])],
     attrs={"input_scale": 0.04, "input_zero_point": 125}, **QUANT_TOL)
case("quantized_linear_u8_out_relu", "quantized_linear.u8", quantized_linear_u8,
     [In([2, 7, 33], kind="wide"), int8_weights([9, 33]), weight_scales(9), In([9])],
     attrs={"input_scale": 0.05, "input_zero_point": 128, "activation": "clamp", "min_val": 0.0,
            "max_val": 1e30, "output_scale": 0.01, "output_zero_point": 0}, **U8_TOL)
case("quantized_linear_u8_in_out_hardswish_noncontig", "quantized_linear.u8", quantized_linear_u8,
     [Fixed(torch.randint(0, 256, [3, 13], generator=gen).to(torch.uint8), layout=("t", 0, 1)),
      int8_weights([6, 13]), weight_scales(6), None],
     attrs={"input_scale": 0.01, "input_zero_point": 7, "activation": "hardswish", "output_scale": 0.005,
            "output_zero_point": 64}, **U8_TOL)
case("quantized_linear_u8_1d_clamp", "quantized_linear.u8", quantized_linear_u8,
     [In([13]), int8_weights([5, 13]), weight_scales(5), In([5])],
     attrs={"input_scale": 0.03, "input_zero_point": 90, "activation": "clamp", "min_val": -0.5, "max_val": 0.5,
            "output_scale": 0.004, "output_zero_point": 125}, **U8_TOL)
case("quantized_linear_u8_bad_output_scale", "quantized_linear.u8", quantized_linear_u8,
     [In([7, 13]), int8_weights([5, 13]), weight_scales(5), None],
     attrs={"input_scale": 0.5, "output_scale": 0.0}, error="output_scale must be finite and positive")
case("max_pool2d_u8_channels_last", "max_pool2d", max_pool_u8,
     [Fixed(torch.randint(0, 256, [2, 5, 9, 11], generator=gen).to(torch.uint8), layout=("cl",))],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1]}, atol=0, rtol=0)
case("max_pool2d_u8_dilation_ceil", "max_pool2d", max_pool_u8,
     [u8_levels([3, 7, 10])], attrs={"kernel_size": [2, 3], "stride": [2], "dilation": [1, 2], "ceil_mode": True},
     atol=0, rtol=0)



def quantized_add(a, b, self_scale=1.0, self_zero_point=0, other_scale=1.0, other_zero_point=0, activation="none",
                  min_val=0.0, max_val=6.0, output_scale=1.0, output_zero_point=0):
    if a.dtype != torch.uint8 or b.dtype != torch.uint8:
        raise ValueError(f"{a.dtype} + {b.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"{a.shape} + {b.shape}")
    y = dequant_u8(a, self_scale, self_zero_point) + dequant_u8(b, other_scale, other_zero_point)
    return requant(activation_of(y, activation, min_val, max_val), output_scale, output_zero_point)


case("quantized_add_relu_channels_last", "quantized_add", quantized_add,
     [Fixed(torch.randint(0, 256, [2, 7, 5, 6], generator=gen).to(torch.uint8), layout=("cl",)),
      Fixed(torch.randint(0, 256, [2, 7, 5, 6], generator=gen).to(torch.uint8), layout=("cl",))],
     attrs={"self_scale": 0.02, "self_zero_point": 0, "other_scale": 0.05, "other_zero_point": 128,
            "activation": "clamp", "min_val": 0.0, "max_val": 1e30, "output_scale": 0.03, "output_zero_point": 0},
     **U8_TOL)
case("quantized_add_mixed_layouts_saturates", "quantized_add", quantized_add,
     [Fixed(torch.randint(0, 256, [3, 4, 9], generator=gen).to(torch.uint8), layout=("t", 0, 2)),
      u8_levels([3, 4, 9])],
     attrs={"self_scale": 0.1, "self_zero_point": 100, "other_scale": 0.07, "other_zero_point": 20,
            "output_scale": 0.05, "output_zero_point": 131}, **U8_TOL)
case("quantized_add_hardswish_1d", "quantized_add", quantized_add,
     [u8_levels([37]), u8_levels([37])],
     attrs={"self_scale": 0.01, "self_zero_point": 90, "other_scale": 0.02, "other_zero_point": 140,
            "activation": "hardswish", "output_scale": 0.01, "output_zero_point": 40}, **U8_TOL)
case("quantized_add_shapes_differ", "quantized_add", quantized_add, [u8_levels([2, 3]), u8_levels([3])],
     attrs={"output_scale": 0.1}, error="self and other must have one shape")
case("quantized_add_f32", "quantized_add", quantized_add, [In([2, 3]), u8_levels([2, 3])],
     attrs={"output_scale": 0.1}, error="self and other must be u8, got f32 and u8")


# ---- 16-bit floats: every op that computes in f32 computes in f16 and bf16 too (docs/OPS.md,
# "16-bit floats"): in f32 on the widened inputs, each output rounded once. Derived from the first
# two f32 cases of each op, with their float inputs in 16 bits; the reference widens them,
# runs the f32 case and rounds (PyTorch 1.13's CPU lacks most f16 kernels; its bf16 ones
# compute the same way). Appended after every other case, so their inputs stay as they were.
HALF_ULP = {"bf16": 2.0 ** -7, "f16": 2.0 ** -10}  # the largest relative step of each format


def widened(fn, half):
    def run(*args, **kw):
        out = fn(*[a.float() if a is not None and a.dtype == half else a for a in args], **kw)
        rnd = lambda t: t.to(half) if t.dtype == torch.float32 else t  # noqa: E731
        return type(out)(rnd(t) for t in out) if isinstance(out, (tuple, list)) else rnd(out)
    return run


def half_input(inp, dtype):
    if inp is None or inp.dtype != "f32":
        return inp
    if isinstance(inp, Fixed):
        return Fixed(inp.value.to(DTYPES[dtype]), inp.layout)
    return In(inp.shape, dtype, inp.kind, inp.layout)


def half_cases(cases):
    taken = {}
    for c in list(cases):
        # quantized ops take f32 scales.
        if c["error"] or c["op"] == "to" or c["op"].startswith("quantized"):
            continue
        if not any(i is not None and i.dtype == "f32" for i in c["inputs"]) or taken.get(c["op"], 0) == 2:
            continue
        taken[c["op"]] = taken.get(c["op"], 0) + 1
        for dtype, ulp in HALF_ULP.items():
            case(f"{c['name']}.{dtype}", c["op"], widened(c["fn"], DTYPES[dtype]),
                 [half_input(i, dtype) for i in c["inputs"]], c["attrs"], atol=max(c["atol"], 1e-6),
                 rtol=c["rtol"] + ulp)


half_cases(CASES)

# ---- ops added since: appended with their 16-bit cases after every earlier case, whose random
# inputs (drawn in order from one generator) then stay as they were ----
ADDED = len(CASES)


def add_ln(x, other, w=None, b=None, normalized_shape=(), eps=1e-5):  # a residual connection and its norm
    return F.layer_norm(x + other, normalized_shape, w, b, eps)


case("add_layernorm_last", "add_layer_norm", add_ln, [In([7, 13]), In([7, 13]), In([13]), In([13])],
     attrs={"normalized_shape": [13]})
case("add_layernorm_two_dims_noncontig", "add_layer_norm", add_ln,
     [In([3, 5, 7], layout=("t", 0, 1)), In([3, 5, 7], kind="wide", layout=("s2", 2)), In([5, 7]), None],
     attrs={"normalized_shape": [5, 7], "eps": 1e-3})
case("add_layernorm_transformer", "add_layer_norm", add_ln, [In([2, 128, 256]), In([2, 128, 256]), In([256]),
     In([256])], attrs={"normalized_shape": [256]}, atol=1e-5)
# NaN, inf and -inf in three rows, drawn from a generator of their own (a draw from `gen` now would
# move every earlier case's inputs, drawn from it as the cases run).
nan_rows = torch.randn([4, 9], generator=torch.Generator().manual_seed(2027)) * 3
nan_rows.view(-1)[[3, 12, 30]] = torch.tensor([float("nan"), float("inf"), float("-inf")])
case("add_layernorm_nan_inf_no_affine", "add_layer_norm", add_ln, [Fixed(nan_rows), In([4, 9]), None, None],
     attrs={"normalized_shape": [9]})
case("add_layernorm_f64_expanded", "add_layer_norm", add_ln,
     [In([5, 6], "f64"), In([5, 6], "f64", layout=("exp", 0, 5)), In([6], "f64"), In([6], "f64")],
     attrs={"normalized_shape": [6]}, atol=1e-12, rtol=1e-12)
case("add_layernorm_other_shape", "add_layer_norm", add_ln, [In([7, 4]), In([5, 4]), None, None],
     attrs={"normalized_shape": [4]}, error="other must have the input's shape")
# Row lengths past CUDA's warp-a-row kernel's two sizes (256 and 1024 elements), and past both.
case("layernorm_rows_of_777", "layer_norm", ln, [In([5, 777]), In([777]), In([777])],
     attrs={"normalized_shape": [777]}, atol=1e-5)
case("add_layernorm_rows_of_1024", "add_layer_norm", add_ln, [In([3, 4, 256]), In([3, 4, 256]), None, In([4, 256])],
     attrs={"normalized_shape": [4, 256]}, atol=1e-5)
case("add_layernorm_rows_of_1100", "add_layer_norm", add_ln, [In([2, 1100]), In([2, 1100]), In([1100]), None],
     attrs={"normalized_shape": [1100]}, atol=1e-5)



def attn_merged(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):  # the heads side by side in each row
    return sdpa(q, k, v, attn_mask, dropout_p, is_causal).transpose(-3, -2).flatten(-2)


def bool_mask_case_own():  # bool_mask_case's kind of mask, from a generator of its own (as nan_rows)
    keep = torch.rand(2, 7, 9, generator=torch.Generator().manual_seed(2028)) > 0.4
    keep[:, :, 0] = True
    return keep


ATTN_TOL = dict(atol=1e-5, rtol=1e-4)
case("attn_merge_3d_float_mask", "attention_merge_heads", attn_merged,
     [In([3, 7, 5]), In([3, 9, 5]), In([3, 9, 4]), In([7, 9])], **ATTN_TOL)
case("attn_merge_4d_causal", "attention_merge_heads", attn_merged,
     [In([2, 3, 13, 8]), In([2, 3, 13, 8]), In([2, 3, 13, 6])], attrs={"is_causal": True}, **ATTN_TOL)
# q, k and v as a QKV product's heads: strided views of one [B, L, 3, H, E] tensor's slices.
case("attn_merge_noncontig_5d", "attention_merge_heads", attn_merged,
     [In([2, 2, 3, 11, 8], layout=("t", 2, 3)), In([2, 2, 3, 11, 8], layout=("t", 2, 3)),
      In([2, 2, 3, 11, 8], layout=("s2", 4))], **ATTN_TOL)
case("attn_merge_bool_mask", "attention_merge_heads", attn_merged,
     [In([2, 7, 5]), In([2, 9, 5]), In([2, 9, 5]), Fixed(bool_mask_case_own())], **ATTN_TOL)
# The bench transformer's heads (4 of 64 over 128 rows); 301 rows in two CPU blocks; heads wider
# than CUDA's tiled kernel takes (130).
case("attn_merge_transformer", "attention_merge_heads", attn_merged,
     [In([1, 4, 128, 64]), In([1, 4, 128, 64]), In([1, 4, 128, 64])], **ATTN_TOL)
case("attn_merge_two_blocks_causal", "attention_merge_heads", attn_merged,
     [In([2, 301, 8]), In([2, 301, 8]), In([2, 301, 8])], attrs={"is_causal": True}, **ATTN_TOL)
case("attn_merge_wide_heads", "attention_merge_heads", attn_merged,
     [In([2, 3, 5, 130]), In([2, 3, 6, 130]), In([2, 3, 6, 7])], **ATTN_TOL)
case("attn_merge_rank_2", "attention_merge_heads", attn_merged, [In([7, 5]), In([9, 5]), In([9, 4])],
     error="at least 3 dims")
# 16 heads of 70 rows: 144 blocks of 8 rows, enough that CUDA's tiled kernel keeps two rows a
# warp (the cases above, fewer, take its one-row-a-warp form).
case("attn_merge_many_blocks_causal", "attention_merge_heads", attn_merged,
     [In([2, 8, 70, 16]), In([2, 8, 70, 16]), In([2, 8, 70, 16])], attrs={"is_causal": True}, **ATTN_TOL)

half_cases(CASES[ADDED:])

# The bench transformer's heads in 16 bits: the shape cuDNN's fused attention takes (opt-in on
# CUDA, AMBER_CUDA_CUDNN_ATTENTION=1), which rounds the softmax's weights to 16 bits before their
# product with V, an absolute error of about a weight's rounding times |v| / sqrt(S) per output
# (about 2e-4 in bf16 here, 3e-5 in f16): atol a quarter of the format's step leaves ten times
# that, for outputs near zero; rtol the output's own rounding. Appended last.
for dtype, ulp in HALF_ULP.items():
    case(f"attn_merge_cudnn_shape.{dtype}", "attention_merge_heads", widened(attn_merged, DTYPES[dtype]),
         [In([1, 4, 128, 64], dtype), In([1, 4, 128, 64], dtype), In([1, 4, 128, 64], dtype)], atol=ulp / 4,
         rtol=ulp + 1e-4)


# fused_linear: linear, then fused_conv2d's activations (the product-activation fusion's).
def fused_lin(x, w, b=None, activation="clamp", min_val=0.0, max_val=6.0):
    if activation not in ("clamp", "silu", "hardswish") or (activation == "clamp" and min_val > max_val):
        raise ValueError(f"activation {activation} [{min_val}, {max_val}]")
    y = F.linear(x, w, b)
    if activation == "clamp":
        return torch.clamp(y, min_val, max_val)
    return F.silu(y) if activation == "silu" else F.hardswish(y)


LIN_TOL = {"atol": 1e-5, "rtol": 1e-4}
# ReLU as the fusion pass makes it (clamp to [0, inf]; 3e38 here, JSON has no infinity).
case("fused_linear_relu", "fused_linear", fused_lin, [In([7, 13]), In([5, 13]), In([5])], attrs={"max_val": 3e38},
     **LIN_TOL)
case("fused_linear_relu6_3d", "fused_linear", fused_lin, [In([2, 7, 13], kind="wide"), In([9, 13]), In([9])],
     **LIN_TOL)
case("fused_linear_clamp_nan_inf", "fused_linear", fused_lin,
     [Fixed(with_nan_inf([4, 16], [5], [37], [50])), In([6, 16]), In([6])], attrs={"min_val": -1.5, "max_val": 2.0},
     **LIN_TOL)
case("fused_linear_silu_no_bias", "fused_linear", fused_lin, [In([3, 5, 11], kind="wide"), In([8, 11]), None],
     attrs={"activation": "silu"}, **LIN_TOL)
case("fused_linear_silu_nan_inf", "fused_linear", fused_lin,
     [Fixed(with_nan_inf([3, 9], [2], [12], [22])), In([4, 9]), In([4])], attrs={"activation": "silu"}, **LIN_TOL)
case("fused_linear_hardswish_noncontig", "fused_linear", fused_lin,
     [In([3, 7, 13], kind="wide", layout=("t", 0, 1)), In([5, 13]), In([5])], attrs={"activation": "hardswish"},
     **LIN_TOL)
case("fused_linear_bad_activation", "fused_linear", fused_lin, [In([2, 13]), In([5, 13]), None],
     attrs={"activation": "gelu"}, error="activation must be clamp, silu or hardswish")
case("fused_linear_clamp_bounds", "fused_linear", fused_lin, [In([2, 13]), In([5, 13]), None],
     attrs={"min_val": 2.0, "max_val": 1.0}, error="min_val <= max_val")
case("fused_linear_mismatch", "fused_linear", fused_lin, [In([7, 13]), In([5, 12]), None], error="in_features")
# Operands whose rows are one row expanded (stride 0): CUDA packs them (cuBLASLt's leading
# dimension cannot be 0).
case("linear_expanded_rows", "linear", LINEAR, [In([4, 13], layout=("exp", 0, 4)), In([5, 13]), In([5])], **LIN_TOL)
case("mm_expanded", "mm", torch.mm, [In([6, 9], layout=("exp", 0, 6)), In([9, 4], layout=("exp", 1, 4))], **LIN_TOL)
# Convolutions with channels in fours (what the CUDA backend's own kernel takes, conv_direct.h):
# pixels over two 64-row tiles, strided and dilated unevenly; and a deep sum over few pixels
# (batch 1, 7 x 7: that kernel splits the sum across blocks) into 68 channels (a 64-channel tile
# and a partial one), ReLU.
case("conv_fours_strided_dilated", "conv2d", conv, [In([2, 12, 11, 10]), In([8, 12, 3, 2]), In([8])],
     attrs={"stride": [2, 1], "padding": [2, 1], "dilation": [2, 1]}, **CONV_TOL)
case("fused_conv_relu_deep_sum", "fused_conv2d", fused_conv, [In([1, 64, 7, 7]), In([68, 64, 3, 3]), In([68])],
     attrs={"padding": [1], "max_val": 3e38}, atol=2e-4, rtol=1e-4)

# ---- fused: the fusion pass's node run as an op (docs/OPS.md, "Fused nodes"): its program
# evaluated here instruction by instruction with torch's ops in f32; 16-bit inputs all of one
# dtype give that dtype, rounded once ----
FUSED_INSTR = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "tanh": torch.tanh,
               "exp": torch.exp, "sigmoid": torch.sigmoid, "relu": torch.relu, "sin": torch.sin, "neg": torch.neg,
               "maximum": torch.maximum, "clamp": lambda a, lo, hi: torch.clamp(a, lo.item(), hi.item())}


def fused(*inputs, program):
    half = {t.dtype for t in inputs}
    out_dtype = half.pop() if len(half) == 1 and inputs[0].dtype in (torch.float16, torch.bfloat16) else torch.float32
    xs = [t.to(torch.float32) for t in inputs]
    temps = []
    for text in program.split(";"):
        name, args = text.strip().rstrip(")").split("(")
        ops = []
        for a in (a.strip() for a in args.split(",")):
            ops.append(xs[int(a[1:])] if a[0] == "i" else temps[int(a[1:])] if a[0] == "t"
                       else torch.tensor(float(a), dtype=torch.float32))
        if name not in FUSED_INSTR:
            raise ValueError(f"unknown instruction {name}")
        temps.append(FUSED_INSTR[name](*ops))
    shape = torch.broadcast_shapes(*(t.shape for t in inputs))
    return temps[-1].broadcast_to(shape).to(out_dtype)


def fused_case(name, inputs, program, **kw):
    case(name, "fused", fused, inputs, attrs={"program": program}, **kw)


fused_case("fused_dense", [In([7, 13]), In([7, 13])], "mul(i0, 2.0); add(t0, i1); tanh(t1)")
fused_case("fused_broadcast_weight", [In([2, 3, 5, 7]), In([3, 1, 1])], "add(i0, i1); relu(t0); mul(t1, i0)")
fused_case("fused_noncontig", [In([7, 13], layout=("t", 0, 1)), In([7, 13], layout=("s2", 1))],
           "sub(i0, i1); mul(t0, t0); exp(t1)")
fused_case("fused_expanded_and_0d", [In([5, 7, 13], layout=("exp", 1, 7)), In([])], "maximum(i0, i1); sigmoid(t0)")
fused_case("fused_channels_last", [In([2, 3, 5, 7], layout=("cl",)), In([1, 3, 1, 1])],
           "mul(i0, i1); clamp(t0, -0.5, 0.75)")
fused_case("fused_immediate_only_last", [In([4, 9])], "neg(i0); add(t0, 1.5); div(t0, t1)")
# More values live at once than the CUDA kernel's 16 slots: 20 products, then their sum.
fused_case("fused_many_live", [In([3, 50]), In([50])],
           "; ".join([f"mul(i0, {k + 1}.0)" for k in range(20)] + ["add(t0, i1)"] +
                     [f"add(t{20 + k}, t{k + 1})" for k in range(19)]))
fused_case("fused_eight_inputs", [In([2, 33]) for _ in range(7)] + [In([33])],
           "add(i0, i1); add(t0, i2); mul(t1, i3); sub(t2, i4); add(t3, i5); mul(t4, i6); sin(t5); add(t6, i7)")
fused_case("fused_bf16", [In([6, 21], "bf16"), In([21], "bf16")], "mul(i0, i1); add(t0, 0.5); tanh(t1)",
           atol=2 ** -8, rtol=2 ** -7)
fused_case("fused_f16", [In([6, 21], "f16"), In([6, 1], "f16")], "sub(i0, i1); sigmoid(t0)", atol=2 ** -11,
           rtol=2 ** -10)
fused_case("fused_mixed_f32_bf16", [In([5, 8]), In([5, 8], "bf16")], "add(i0, i1); mul(t0, i0)")
fused_case("fused_big", [In([3, 1001]), In([1001])], "mul(i0, i1); sin(t0); add(t1, i0)")
fused_case("fused_unknown_instruction", [In([4])], "frobnicate(i0)", error="frobnicate")
fused_case("fused_input_out_of_range", [In([4]), In([4])], "add(i0, i2)", error="fused: instruction 0")
fused_case("fused_result_before_it_exists", [In([4])], "add(i0, t1); neg(t0)", error="fused: instruction 0")

# ---- appended last, so that every case above keeps its inputs (In draws from `gen` as the cases
# run, after every definition: fixed values here come from a generator of their own) ----
own = torch.Generator().manual_seed(2028)


def nan_at(t, where):
    t.view(-1)[where] = float("nan")
    return t


# NCHW: each image's planes pooled as one-channel images (the windows inside a row a tap at a
# time for strides 1, 2 and others; edge windows, padding and ceil_mode one by one), a layout
# whose images do not step over whole planes (the window-by-window loop), rows strided along W.
case("maxpool_planes_resnet", "max_pool2d", maxpool, [In([2, 3, 21, 37])],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1]}, atol=0, rtol=0)
case("maxpool_planes_s1", "max_pool2d", maxpool, [In([1, 4, 9, 40])],
     attrs={"kernel_size": [3, 5], "stride": [1], "padding": [1, 2]}, atol=0, rtol=0)
case("maxpool_planes_s3_ceil", "max_pool2d", maxpool, [In([2, 2, 10, 35])],
     attrs={"kernel_size": [4], "stride": [3], "padding": [1], "ceil_mode": True}, atol=0, rtol=0)
case("maxpool_planes_nan", "max_pool2d", maxpool,
     [Fixed(nan_at(torch.randn([1, 2, 4, 20], generator=own), [3, 17, 44, 61, 119]))], attrs={"kernel_size": [3], "stride": [2], "padding": [1]}, atol=0, rtol=0)
case("maxpool_images_transposed", "max_pool2d", maxpool, [In([3, 4, 9, 10], layout=("t", 0, 1))],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1]}, atol=0, rtol=0)
case("maxpool_planes_strided_w", "max_pool2d", maxpool, [In([2, 3, 11, 13], layout=("t", 2, 3))],
     attrs={"kernel_size": [2, 3], "stride": [2, 1]}, atol=0, rtol=0)
case("max_pool2d_u8_planes", "max_pool2d", max_pool_u8,
     [Fixed(torch.randint(0, 256, [2, 3, 9, 19], generator=own).to(torch.uint8))],
     attrs={"kernel_size": [3], "stride": [2], "padding": [1]}, atol=0, rtol=0)
# Runs of 16 or more: sixteen partial products (integers wrap, in any order the same).
case("prod_i64_rows_wrap", "prod", torch_prod, [In([4, 45], "i64", "nzint")], attrs={"dim": [-1]})
case("prod_f64_rows_50", "prod", torch_prod, [In([3, 50], "f64", "nonzero")], attrs={"dim": [1]}, atol=1e-12,
     rtol=1e-12)


def prod_specials():
    """Rows of 40: a NaN; an inf; an inf and a zero (NaN); a zero, in different lanes."""
    t = torch.rand([4, 40], generator=own) + 0.5
    t[0, 17], t[1, 3], t[2, 20], t[2, 33], t[3, 9] = float("nan"), float("inf"), float("-inf"), 0.0, 0.0
    return t


case("prod_rows_nan_inf_zero", "prod", torch_prod, [Fixed(prod_specials())], attrs={"dim": [-1]}, atol=1e-6,
     rtol=1e-5)

# Scatters over more groups (coordinates but dim's alike) than one thread's share: groups run
# side by side, each output's elements still in index order.
case("scatter_add_many_groups", "scatter_add", SCATTER_ADD,
     [In([700, 30]), In([700, 41], "i64", "idx30"), In([700, 41])], attrs={"dim": 1})
case("scatter_reduce_mean_many_groups_dim0", "scatter_reduce", SCATTER_REDUCE,
     [In([5, 200, 30], "f64"), In([7, 200, 30], "i64", "idx5"), In([7, 200, 30], "f64")],
     attrs={"dim": 0, "reduce": "mean", "include_self": False}, atol=1e-12, rtol=1e-12)

# Softmax along an outer dim of dense tensors: sixteen neighbouring rows side by side (a tile's
# rows fewer at the end, dims longer than row_sum's sixteen partials, tiles over threads), NaN,
# inf and a row of -inf (NaN, as PyTorch's), f64.
SOFTMAX_OPS = [("softmax", lambda a, dim, dtype=None: torch.softmax(a, dim)),
               ("log_softmax", lambda a, dim, dtype=None: torch.log_softmax(a, dim))]
special_cols = torch.randn([2, 37, 21], generator=own) * 3
special_cols[0, 5, 3], special_cols[1, 30, 20], special_cols[1, :, 7] = float("nan"), float("inf"), float("-inf")
for op, fn in SOFTMAX_OPS:
    case(f"{op}_outer_dim_tiles", op, fn, [In([4, 40, 300])], attrs={"dim": 1}, atol=1e-6, rtol=1e-5)
    case(f"{op}_outer_dim_specials", op, fn, [Fixed(special_cols)], attrs={"dim": 1}, atol=1e-6, rtol=1e-5)
    case(f"{op}_dim0_f64", op, fn, [In([19, 3, 11], "f64")], attrs={"dim": 0}, atol=1e-12, rtol=1e-12)

# where over a dense output and condition, each operand dense or one value: a select of bits
# per element width (8, 2 and 1 bytes here; 4 above).
case("where_dense_f64", "where", WHERE, [In([3, 1001], "bool", "bool"), In([3, 1001], "f64"), In([3, 1001], "f64")])
case("where_dense_bool", "where", WHERE,
     [In([5, 77], "bool", "bool"), In([5, 77], "bool", "bool"), In([5, 77], "bool", "bool")])
case("where_dense_i16_one_other", "where", WHERE, [In([4, 50], "bool", "bool"), In([4, 50], "i16", "int"),
                                                   In([], "i16", "int")])
case("where_dense_both_one_value", "where", WHERE, [In([6, 40], "bool", "bool"), In([]), In([])])


# Contiguous f32 <-> f16 runs eight at a time (F16C), the rest one by one: every f16 bit
# pattern widened but the last three (NaNs; 65533 values, so a run ends in a partial eight);
# f32 values from below f16's subnormals to past its largest, exact ties between neighbouring
# f16 values (to even), +-0, +-inf and NaN narrowed.
def f32_to_f16_specials():
    bits = torch.randint(0, 0x7bff, [600], generator=own, dtype=torch.int32)
    lo = bits.to(torch.int16).view(torch.float16).float()
    hi = (bits + 1).to(torch.int16).view(torch.float16).float()
    sign = torch.where(torch.rand([600], generator=own) < 0.5, -1.0, 1.0)
    wide = torch.exp(torch.rand([600], generator=own) * 40 - 25) * sign
    fixed = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 65504.0, 65519.99, 65520.0,
                          2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 2.0 ** -14, -2.0 ** -14 * 0.75])
    return torch.cat([(lo + hi) / 2 * sign, wide, fixed])


case("to_f32_f16_contiguous_runs", "to", torch_to, [Fixed(f32_to_f16_specials())], attrs={"dtype": "f16"},
     atol=0, rtol=0)
case("to_f16_f32_every_value", "to", torch_to,
     [Fixed(torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16)[:-3])],
     attrs={"dtype": "f32"}, atol=0, rtol=0)
# Flipped runs into a dense output (the source walked backwards with a stride of -1) copied as
# one reversed loop per run: 1-, 2- and 8-byte elements, runs shorter and longer than a vector.
case("flip_runs_u8", "flip", flip, [In([5, 67], "u8", "uint")], attrs={"dims": [-1]}, atol=0, rtol=0)
case("flip_runs_f16", "flip", flip, [In([4, 45], "f16")], attrs={"dims": [1]}, atol=0, rtol=0)
case("flip_runs_f64_all", "flip", flip, [In([3, 5, 7], "f64")], attrs={"dims": [0, 1, 2]}, atol=0, rtol=0)
# Transposing copies of 4-byte elements in 32 x 32 tiles, each eight by eight in registers: tiles
# cut at the edges (sizes not multiples of 8 or 32), a batch of transposed planes, i32, NaN bits.
case("clone_transposed_tiles", "clone", torch.clone, [In([37, 75], layout=("t", 0, 1))], atol=0, rtol=0)
case("clone_transposed_planes_i32", "clone", torch.clone, [In([3, 40, 33], "i32", "int", ("t", 1, 2))], atol=0,
     rtol=0)
case("clone_transposed_nan", "clone", torch.clone,
     [Fixed(nan_at(torch.randn([48, 40], generator=own), [0, 9, 333, 1919]), layout=("t", 0, 1))], atol=0, rtol=0)
# Loaded linear layers of at most 4 rows by at most 65536 weights: their products computed
# directly (the weights transposed once at setup), beyond either bound on oneDNN; a bias, none,
# transposed weights, NaN and inf in the rows.
def linear_nan_inf_rows():
    t = torch.randn([2, 24], generator=own)
    t[0, 5], t[1, 11] = float("nan"), float("inf")
    return t


case("linear_direct_3_rows", "linear", LINEAR, [In([3, 37]), In([29, 37]), In([29])], **LIN_TOL)
case("linear_direct_4_rows_no_bias", "linear", LINEAR, [In([2, 2, 50]), In([70, 50]), None], **LIN_TOL)
case("linear_direct_at_bound", "linear", LINEAR, [In([2, 256]), In([256, 256]), In([256])], **LIN_TOL)
case("linear_direct_past_bound", "linear", LINEAR, [In([1, 257]), In([256, 257]), In([256])], **LIN_TOL)
case("linear_direct_5_rows", "linear", LINEAR, [In([5, 20]), In([9, 20]), In([9])], **LIN_TOL)
case("linear_direct_transposed_weight", "linear", LINEAR,
     [In([2, 33]), In([17, 33], layout=("t", 0, 1)), In([17])], **LIN_TOL)
case("linear_direct_nan_inf", "linear", LINEAR, [Fixed(linear_nan_inf_rows()), In([10, 24]), In([10])], **LIN_TOL)
# Same-type copies of 4-byte elements through copy_convert (cat, stack, index_select) take the
# transposing tiles too: tiles cut at the edges, i32, NaN bits, index_select's transposed slices.
case("cat_transposed_tiles", "cat", CAT, [In([37, 75], layout=("t", 0, 1)), In([5, 75])], atol=0, rtol=0)
case("stack_transposed_i32", "stack", STACK, [In([40, 33], "i32", "int", ("t", 0, 1)), In([40, 33], "i32", "int")],
     atol=0, rtol=0)
case("cat_transposed_nan", "cat", CAT,
     [Fixed(nan_at(torch.randn([48, 40], generator=own), [0, 9, 333, 1919]), layout=("t", 0, 1)), In([48, 3])],
     attrs={"dim": 1}, atol=0, rtol=0)
case("index_select_transposed_slices", "index_select", ISEL, [In([40, 6, 36], layout=("t", 0, 2)),
     In([4], "i64", "idx6")], attrs={"dim": 1}, atol=0, rtol=0)
# gather checks each row's indices as it copies the row, in parallel: dense rows along the last
# dim (i32, and rows enough for several tasks), and the error naming the first bad index of the
# lowest bad row when later rows are bad too; a negative i32 index.
def gather_two_bad_rows():
    t = torch.randint(0, 70, [300, 64], generator=own)
    t[250, 0], t[100, 5], t[100, 9] = 3000, 2000, 2500
    return t


case("gather_last_dense_i32", "gather", GATHER, [In([37, 50]), In([37, 9], "i32", "idx50")], attrs={"dim": 1},
     atol=0, rtol=0)
case("gather_last_dense_rows", "gather", GATHER, [In([300, 70]), In([300, 64], "i64", "idx70")], attrs={"dim": -1},
     atol=0, rtol=0)
case("gather_first_bad_row", "gather", GATHER, [In([300, 70]), Fixed(gather_two_bad_rows())], attrs={"dim": 1},
     error="index 2000 is out of range for dimension 1 of size 70")
case("gather_negative_i32", "gather", GATHER, [In([5, 9]), Fixed(torch.tensor([[0, -1, 3]], dtype=torch.int32))],
     attrs={"dim": 1}, error="index -1 is out of range")
# max_pool2d_with_indices a row at a time, one kernel column across the row's outputs with selects
# (vectorised for dense outputs with column stride 1 or 2): padding at stride 1 (each kernel
# column's first output), stride 2 on rows of odd width, dilated columns, ties and NaN in rows
# long enough for vectors.
case("maxpool_indices_pad_stride1", "max_pool2d_with_indices", maxpool_i, [In([2, 3, 7, 9])],
     attrs={"kernel_size": [3], "stride": [1], "padding": [1]}, atol=0, rtol=0)
case("maxpool_indices_stride2_odd_rows", "max_pool2d_with_indices", maxpool_i, [In([2, 4, 13, 41])],
     attrs={"kernel_size": [2]}, atol=0, rtol=0)
case("maxpool_indices_dilated_cols", "max_pool2d_with_indices", maxpool_i, [In([1, 3, 9, 37])],
     attrs={"kernel_size": [3], "stride": [2, 1], "padding": [1], "dilation": [1, 2]}, atol=0, rtol=0)
case("maxpool_indices_ties_rows", "max_pool2d_with_indices", maxpool_i, [In([1, 2, 8, 36], kind="halves")],
     attrs={"kernel_size": [3], "stride": [1]}, atol=0, rtol=0)
case("maxpool_indices_nan_rows", "max_pool2d_with_indices", maxpool_i,
     [Fixed(nan_at(torch.randn([1, 2, 6, 34], generator=own), [3, 40, 41, 100, 257, 300]))],
     attrs={"kernel_size": [2]}, atol=0, rtol=0)


def run_cases():
    tensors, specs = {}, []
    for c in CASES:
        stored_inputs, logical = [], []
        for inp in c["inputs"]:
            if inp is None:  # an absent optional tensor
                stored_inputs.append(None)
                logical.append(None)
                continue
            stored, log = inp.make()
            stored_inputs.append(stored)
            logical.append(log)
        spec = {"name": c["name"], "op": c["op"], "attrs": c["attrs"], "atol": c["atol"], "rtol": c["rtol"],
                "inputs": [i.spec() if i is not None else {"absent": True} for i in c["inputs"]],
                "error": c["error"]}
        try:
            out = c["fn"](*logical, **c["attrs"])
            if c["error"]:
                raise SystemExit(f"case {c['name']}: torch did not raise but Amber is expected to")
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            if not c["error"]:
                raise SystemExit(f"case {c['name']}: torch raised {e}")
            out = None
        for k, t in enumerate(stored_inputs):
            if t is not None:
                tensors[f"{c['name']}.input{k}"] = t
        if out is not None:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            spec["outputs"] = len(outs)
            for k, t in enumerate(outs):
                tensors[f"{c['name']}.expected{k}"] = t.contiguous()
        specs.append(spec)
    return tensors, specs


def core_reference():
    """torch's promotion table, printed tensors and seeded random numbers."""
    promo = {}
    for a, ta in DTYPES.items():
        for b, tb in DTYPES.items():
            promo[f"{a},{b}"] = NAMES[torch.promote_types(ta, tb)]
    # result_type with wrapped numbers and zero-dim tensors
    result = []
    for dt in DTYPES:
        t = torch.zeros(2, dtype=DTYPES[dt])
        for num in [2, 2.5, True]:
            result.append({"tensor": dt, "number": num, "result": NAMES[torch.result_type(t, num)]})
        for zdt in ["f64", "i64", "bool", "f16"]:
            z = torch.zeros((), dtype=DTYPES[zdt])
            result.append({"tensor": dt, "zero_dim": zdt, "result": NAMES[torch.result_type(t, z)]})
    tensors = {}
    printed = []
    samples = {
        "ints_f32": torch.tensor([1.0, 2.0, 3.0]),
        "frac_f32": torch.tensor([[0.1, -1.25], [3.0, 4.5]]),
        "sci_f32": torch.tensor([1e-5, 1.0, 123456.0]),
        "big_ints": torch.tensor([1e9, 2.0]),
        "i64": torch.tensor([[1, -22], [333, 4]]),
        "i32": torch.tensor([5, 6], dtype=torch.int32),
        "bool": torch.tensor([True, False]),
        "f64": torch.tensor([0.5, 1.5], dtype=torch.float64),
        "zero_dim": torch.tensor(3.5),
        "nan_inf": torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5]),
        "zeros": torch.zeros(2, 3),
        "empty_2d": torch.zeros(0, 3),
        "empty_i64": torch.zeros(0, dtype=torch.int64),
        "long_row": torch.arange(30, dtype=torch.float32) * 1.5,
        "summarized": torch.arange(2000, dtype=torch.float32).reshape(40, 50),
        "cube": torch.arange(24).reshape(2, 3, 4),
    }
    for name, t in samples.items():
        tensors[f"print.{name}"] = t
        printed.append({"name": name, "text": str(t)})
    randoms = []
    for seed, n in [(0, 5), (42, 37), (7, 16)]:
        torch.manual_seed(seed)
        tensors[f"rand.{seed}"] = torch.rand(n)
        torch.manual_seed(seed)
        tensors[f"randn.{seed}"] = torch.randn(n)
        torch.manual_seed(seed)
        tensors[f"rand_f64.{seed}"] = torch.rand(n, dtype=torch.float64)
        randoms.append({"seed": seed, "n": n})
    meta = {"promote_types": json.dumps(promo), "result_type": json.dumps(result), "printed": json.dumps(printed),
            "randoms": json.dumps(randoms)}
    return tensors, meta


# ======== models: torchvision ResNet-18, the transformer encoder, LeNet, Elman RNN, the decoder ========
class LeNet(torch.nn.Module):
    """The Net of shared/DESIGN.md section 1."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(1, 6, 3), torch.nn.Conv2d(6, 16, 3)
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(576, 120), torch.nn.Linear(120, 84), torch.nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Decoder(torch.nn.Module):
    """A U-Net-style decoder (samples/models/small.h): transposed convolutions, group norm,
    bilinear and nearest upsampling."""

    def __init__(self):
        super().__init__()
        self.up1 = torch.nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        self.norm1 = torch.nn.GroupNorm(4, 8)
        self.up2 = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.norm2 = torch.nn.GroupNorm(2, 8)
        self.up3 = torch.nn.Upsample(size=(37, 29))
        self.head = torch.nn.ConvTranspose2d(8, 3, 3, padding=1)
        for norm in (self.norm1, self.norm2):
            norm.weight.data.normal_(1, 0.1)
            norm.bias.data.normal_(0, 0.1)

    def forward(self, x):
        y = F.relu(self.norm1(self.up1(x)))
        y = F.silu(self.norm2(self.conv(self.up2(y))))
        return self.head(self.up3(y))


class ElmanRNN(torch.nn.Module):
    """h = tanh(x[t] @ W_h + h @ U_h + b_h), y_t = tanh(h @ W_y + b_y), stacked over t."""

    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.W_h = torch.nn.Parameter(torch.randn(n_in, n_hidden) * 0.3)
        self.U_h = torch.nn.Parameter(torch.randn(n_hidden, n_hidden) * 0.3)
        self.b_h = torch.nn.Parameter(torch.randn(n_hidden) * 0.1)
        self.W_y = torch.nn.Parameter(torch.randn(n_hidden, n_out) * 0.3)
        self.b_y = torch.nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.U_h.size(0))
        ys = []
        for t in range(x.size(0)):
            h = torch.tanh(x[t] @ self.W_h + h @ self.U_h + self.b_h)
            ys.append(torch.tanh(h @ self.W_y + self.b_y))
        return torch.stack(ys)


def build_models():
    """Seeded models whose every parameter matters (batch-norm statistics and per-layer
    transformer weights are randomised, not left at their defaults)."""
    import torchvision
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18(weights=None)
    for m in resnet.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    for lay in encoder.layers:  # distinct weights per layer (TransformerEncoder deep-copies one)
        lay.self_attn._reset_parameters()
        lay.self_attn.in_proj_bias.data.normal_(0, 0.02)
        lay.self_attn.out_proj.reset_parameters()
        lay.linear1.reset_parameters()
        lay.linear2.reset_parameters()
        for norm in (lay.norm1, lay.norm2):
            norm.weight.data.normal_(1, 0.1)
            norm.bias.data.normal_(0, 0.1)
    prenorm_layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu", norm_first=True)
    prenorm = torch.nn.TransformerEncoder(prenorm_layer, 2, enable_nested_tensor=False)
    for lay in prenorm.layers:
        lay.self_attn._reset_parameters()
        lay.self_attn.in_proj_bias.data.normal_(0, 0.02)
        lay.linear1.reset_parameters()
    lenet = LeNet()
    rnn = ElmanRNN(10, 20, 5)
    decoder = Decoder()
    inputs = {
        "resnet18": {1: torch.randn(1, 3, 224, 224), 8: torch.randn(8, 3, 224, 224)},
        "transformer": {1: torch.randn(1, 128, 256), 8: torch.randn(8, 128, 256)},
        "lenet": {1: torch.randn(1, 1, 32, 32), 8: torch.randn(8, 1, 32, 32), 64: torch.randn(64, 1, 32, 32)},
        "elman_rnn": {1: torch.randn(6, 1, 10), 8: torch.randn(6, 8, 10)},
        "decoder": {1: torch.randn(1, 16, 5, 7), 8: torch.randn(8, 16, 5, 7)},
        # sequence-first [S, N, E], with a key padding mask (true = padding)
        "transformer_prenorm": {1: torch.randn(9, 1, 64), 3: torch.randn(9, 3, 64)},
    }
    masks = {"transformer_prenorm": {1: torch.zeros(1, 9, dtype=torch.bool),
                                     3: torch.arange(9).expand(3, 9) >= torch.tensor([[9], [5], [2]])}}
    return {"resnet18": resnet, "transformer": encoder, "lenet": lenet, "elman_rnn": rnn,
            "transformer_prenorm": prenorm, "decoder": decoder}, inputs, masks


def models_reference(out):
    models, inputs, masks = build_models()
    for name, model in models.items():
        model.eval()
        save_file(model.state_dict(), os.path.join(out, f"{name}.safetensors"), {"model": name})
        io = {}
        with torch.no_grad():
            for batch, x in inputs[name].items():
                io[f"input.b{batch}"] = x
                if name in masks:
                    io[f"mask.b{batch}"] = masks[name][batch]
                    io[f"output.b{batch}"] = model(x, src_key_padding_mask=masks[name][batch])
                else:
                    io[f"output.b{batch}"] = model(x)
        if name == "transformer":  # one archive serves every length: (N, T) other than 128
            g = torch.Generator().manual_seed(7)
            for n, t in [(2, 16), (1, 77), (1, 512), (3, 1)]:
                x = torch.randn(n, t, 256, generator=g)
                io[f"input.n{n}.t{t}"] = x
                with torch.no_grad():
                    io[f"output.n{n}.t{t}"] = model(x)
        save_file(io, os.path.join(out, f"{name}_io.safetensors"), {"batches": ",".join(map(str, inputs[name]))})


def seed_reference(out):
    """The seed programs of DESIGN.md section 9 (samples/models/programs.h): inputs and
    outputs per batch size; static programs (no batch dim) have one shape."""
    g = torch.Generator().manual_seed(99)

    def rn(*s):
        return torch.randn(*s, generator=g)

    def ten_mul(x):
        for _ in range(10):
            x = x * x
        return x

    def loop_rows(x):
        rows = [r.reshape(1, -1).mm(r.reshape(1, -1).t()) + torch.ones(1, 1) for r in x]
        return torch.cat(rows, 0)

    def pairwise(a, b):
        d = a.unsqueeze(1) - b.unsqueeze(0)
        return (d * d).sum(-1)

    programs = [  # name, batches, inputs at batch b, function
        ("two_x_plus_y", [1, 8], lambda b: [rn(b, 3), rn(b, 3)], lambda x, y: 2 * x + y),
        ("mm_add", [3], lambda b: [rn(3, 3)], lambda x: x.mm(x) + torch.ones(3, 3)),
        ("loop_rows", [3], lambda b: [rn(3, 4)], loop_rows),
        ("ten_mul", [1, 8], lambda b: [1 + 0.02 * rn(b, 5)], ten_mul),
        ("pairwise", [100], lambda b: [rn(100, 2), rn(200, 2)], pairwise),
    ]
    io = {}
    for name, batches, make, fn in programs:
        for b in batches:
            ins = make(b)
            for k, t in enumerate(ins):
                io[f"{name}.b{b}.input{k}"] = t
            io[f"{name}.b{b}.output"] = fn(*ins)
    save_file(io, os.path.join(out, "seeds_io.safetensors"),
              {"programs": json.dumps({name: batches for name, batches, _, _ in programs})})


class SquareN(torch.nn.Module):
    """samples/models/control.h's square_n: the seeds' x = x * x, n times, with n an input."""

    def forward(self, x, n):
        for _ in range(int(n)):
            x = x * x
        return x


class LoopElman(ElmanRNN):
    """samples/models/control.h's LoopElman: an Elman RNN over the first n steps of x [T, N, in]
    (ElmanRNN's parameters, drawn the same way)."""

    def forward(self, x, n):
        h = torch.zeros(x.size(1), self.U_h.size(0))
        y = torch.zeros(x.size(0), x.size(1), self.W_y.size(1))
        for t in range(int(n)):
            h = torch.tanh(x[t] @ self.W_h + h @ self.U_h + self.b_h)
            y[t] = torch.tanh(h @ self.W_y + self.b_y)
        return y


class LoopGRU(torch.nn.Module):
    """samples/models/control.h's LoopGRU: torch.nn.GRUCell over the first n steps of x."""

    def __init__(self, n_in: int, n_hidden: int):
        super().__init__()
        self.cell = torch.nn.GRUCell(n_in, n_hidden)

    def forward(self, x, n):
        h = torch.zeros(x.size(1), self.cell.hidden_size)
        for t in range(int(n)):
            h = self.cell(x[t], h)
        return h


class GreedyDecoder(torch.nn.Module):
    """samples/models/control.h's GreedyDecoder: a while loop stopping at the end token."""

    def __init__(self, vocab: int, width: int, end_token: int):
        super().__init__()
        self.embedding = torch.nn.Parameter(torch.randn(vocab, width))
        self.U = torch.nn.Parameter(torch.randn(width, width) * 0.5)
        self.out = torch.nn.Parameter(torch.randn(vocab, width))
        self.end_token = end_token

    def forward(self, start, max_len):
        tokens = torch.full([12], -1, dtype=torch.long)
        i = 0
        last = start
        h = torch.zeros(self.U.size(0))
        while i < int(max_len) and i < 12 and int(last) != self.end_token:
            h = torch.tanh(self.embedding[last] + h @ self.U)
            nxt = torch.argmax(self.out @ h)
            tokens[i] = nxt
            i += 1
            last = nxt
        return tokens


class SkipBlock(torch.nn.Module):
    """samples/models/control.h's SkipBlock: a residual block applied when mean |x| > 1."""

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(hidden, width) * 0.3)
        self.b1 = torch.nn.Parameter(torch.randn(hidden) * 0.1)
        self.w2 = torch.nn.Parameter(torch.randn(width, hidden) * 0.3)
        self.b2 = torch.nn.Parameter(torch.randn(width) * 0.1)

    def forward(self, x):
        if bool(x.abs().mean() > 1.0):
            return x + F.linear(F.relu(F.linear(x, self.w1, self.b1)), self.w2, self.b2)
        return x


def control_reference(out):
    """The control-flow models (samples/models/control.h), each run through torch.jit.script:
    weights as "<model>.<name>", and per case "<model>.<case>.input<k>" and ".output"."""
    torch.manual_seed(404)
    tensors, cases = {}, {}
    elman, gru = LoopElman(4, 8, 3), LoopGRU(4, 8)
    decoder = GreedyDecoder(10, 8, -1)
    tokens = decoder(torch.tensor(1), torch.tensor(12))  # the end token: the third produced from token 1
    decoder.end_token = int(tokens[2])
    block = SkipBlock(6, 12)
    x_seq = torch.randn(9, 3, 4)
    n = lambda v: torch.tensor(v, dtype=torch.long)  # noqa: E731
    x_sq = 1 + 0.001 * torch.randn(2, 5)
    models = {  # name: (model, {case: inputs})
        "square_n": (SquareN(), {"n0": [x_sq, n(0)], "n3": [x_sq, n(3)], "n10": [x_sq, n(10)]}),
        "loop_elman": (elman, {"n2": [x_seq, n(2)], "n5": [x_seq, n(5)], "n9": [x_seq, n(9)]}),
        "loop_gru": (gru, {"n1": [x_seq, n(1)], "n4": [x_seq, n(4)], "n9": [x_seq, n(9)]}),
        "greedy_decoder": (decoder, {"start1": [n(1), n(12)], "start4": [n(4), n(12)], "max2": [n(2), n(2)]}),
        "skip_block": (block, {"small": [torch.randn(4, 6) * 0.5], "large": [torch.randn(4, 6) * 3]}),
    }
    for name, (model, inputs) in models.items():
        scripted = torch.jit.script(model.eval())
        state = model.state_dict()
        if name == "loop_gru":  # GRUCell's names, without the module prefix
            state = {k.split(".", 1)[1]: v for k, v in state.items()}
        for k, v in state.items():
            tensors[f"{name}.{k}"] = v.detach().contiguous()
        for case, ins in inputs.items():
            with torch.no_grad():
                y = scripted(*ins)
            for k, t in enumerate(ins):
                tensors[f"{name}.{case}.input{k}"] = t
            tensors[f"{name}.{case}.output"] = y
        cases[name] = list(inputs)
    tensors["greedy_decoder.end_token"] = torch.tensor(decoder.end_token, dtype=torch.long)
    save_file(tensors, os.path.join(out, "control.safetensors"), {"cases": json.dumps(cases)})


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    tensors, specs = run_cases()
    save_file(tensors, os.path.join(out, "ops.safetensors"),
              {"cases": json.dumps(specs), "torch": torch.__version__})
    ct, cm = core_reference()
    save_file(ct, os.path.join(out, "core.safetensors"), cm)
    models_reference(out)
    seed_reference(out)
    control_reference(out)
    print(f"wrote {len(specs)} op cases ({len(tensors)} tensors) and the core reference to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
