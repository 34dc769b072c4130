#!/usr/bin/python3
"""ONNX Runtime's int8 peer for the benchmark: a float ONNX model rewritten in the QDQ layout
ORT's own static quantizer (onnxruntime.quantization.quantize_static, a Python tool the npm
package does not ship) writes, so ORT runs its int8 kernels (QLinearConv, QLinearMatMul,
QLinearAdd, ...): calibrated by ORT itself (bench/ort_run.js, min/max of every value), uint8
activations, int8 weights symmetric per output channel, int32 biases, Q/DQ on every input and
output of Conv, Gemm, MatMul, Add, Concat and the pooling and reshaping ops, a Relu after one of
them folded into its output's range.

Usage: ort_qdq.py MODEL.onnx OUT.onnx ORT_NODE_MODULES INPUTS.json
INPUTS.json: bench/ort_run.js's calibration inputs (a raw float32 file and shape per input).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))

# Ops whose float inputs and outputs are quantized (ORT's QDQ selectors fuse these).
QUANTIZED_OPS = {"Conv", "Gemm", "MatMul", "Add", "Concat", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten",
                 "Reshape"}
# Which inputs of an op are data to quantize (the rest: shapes, or weights handled apart).
DATA_INPUTS = {"Conv": [0], "Gemm": [0], "MatMul": [0, 1], "Add": [0, 1], "Concat": None, "MaxPool": [0],
               "AveragePool": [0], "GlobalAveragePool": [0], "Flatten": [0], "Reshape": [0]}


def value_ranges(model, modules, inputs_json):
    """ORT's min/max of every node output and graph input on the calibration inputs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inferred = onnx.shape_inference.infer_shapes(m)
    typed = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have and o in typed and typed[o].type.tensor_type.elem_type == TensorProto.FLOAT:
                m.graph.output.append(typed[o])
                have.add(o)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ranges.onnx")
        onnx.save(m, path)
        p = subprocess.run(["node", os.path.join(here, "ort_run.js"), modules, path, inputs_json, "ranges"],
                           capture_output=True, text=True, check=True)
    ranges = json.loads(p.stdout)
    with open(inputs_json) as f:
        for name, spec in json.load(f).items():
            x = np.fromfile(spec["file"], dtype=np.float32)
            ranges[name] = [float(x.min()), float(x.max())]
    return ranges


def activation_qparams(lo, hi):
    """uint8 scale and zero point of a range widened to hold 0."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zp = int(np.clip(np.round(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


def quantize(model, ranges):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}

    # A Relu after a quantized op: dropped, the op writing its output (quantizing it with
    # the Relu's range, which starts at 0, clamps as the Relu did).
    dropped = set()
    for n in g.node:
        if n.op_type != "Relu" or n.input[0] not in producer:
            continue
        p, t = producer[n.input[0]], n.input[0]
        if p.op_type in QUANTIZED_OPS and len(consumers.get(t, [])) == 1 and t not in outputs:
            p.output[0] = n.output[0]
            dropped.add(id(n))
    nodes = [n for n in g.node if id(n) not in dropped]
    producer = {o: n for n in nodes for o in n.output}

    new_inits, weight_nodes = [], []

    def add_init(name, array):
        new_inits.append(numpy_helper.from_array(array, name))
        return name

    def dequantized_weight(name, axis):  # int8, symmetric per channel along axis
        w = numpy_helper.to_array(inits[name]).astype(np.float32)
        moved = np.moveaxis(w, axis, 0)
        amax = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
        out = name + "_dq"
        weight_nodes.append(helper.make_node(
            "DequantizeLinear", [add_init(name + "_int8", q), add_init(name + "_scale", scale),
                                 add_init(name + "_zp", np.zeros(scale.shape, np.int8))], [out], axis=axis))
        return out, scale

    def dequantized_bias(name, scale):  # int32 at scale x_scale * w_scale
        b = numpy_helper.to_array(inits[name]).astype(np.float64)
        q = np.clip(np.round(b / scale), -2**31, 2**31 - 1).astype(np.int32)
        out = name + "_dq"
        weight_nodes.append(helper.make_node(
            "DequantizeLinear", [add_init(name + "_int32", q), add_init(name + "_scale", scale.astype(np.float32)),
                                 add_init(name + "_zp", np.zeros(scale.shape, np.int32))], [out], axis=0))
        return out

    # Which float values get a Q/DQ pair: the data inputs and outputs of the quantized ops.
    to_quantize = set()
    for n in nodes:
        if n.op_type not in QUANTIZED_OPS:
            continue
        idx = DATA_INPUTS[n.op_type]
        for k in (range(len(n.input)) if idx is None else idx):
            if k < len(n.input) and n.input[k] and n.input[k] not in inits and n.input[k] in ranges:
                to_quantize.add(n.input[k])
        if n.output[0] in ranges:
            to_quantize.add(n.output[0])

    qdq_after = {}  # a producer's (renamed) output -> the Q/DQ nodes reading it
    qdq_inputs = []
    renamed = {}
    for t in sorted(to_quantize):
        scale, zp = activation_qparams(*ranges[t])
        s, z = add_init(t + "_act_scale", np.array(scale)), add_init(t + "_act_zp", np.array(zp))
        src = t
        if t in producer:  # the producer writes t_f32; the DQ writes t for every consumer
            src = t + "_f32"
            renamed[t] = src
        q = helper.make_node("QuantizeLinear", [src, s, z], [t + "_q"])
        dq = helper.make_node("DequantizeLinear", [t + "_q", s, z], [t if t in producer else t + "_dq"])
        if t in producer:
            qdq_after[src] = [q, dq]
        else:  # a graph input: its consumers read the DQ
            qdq_inputs += [q, dq]
            for n in nodes:
                for k, i in enumerate(n.input):
                    if i == t:
                        n.input[k] = t + "_dq"

    # Weights and biases of Conv, Gemm and MatMul.
    for n in nodes:
        if n.op_type not in ("Conv", "Gemm", "MatMul") or len(n.input) < 2 or n.input[1] not in inits:
            continue
        if n.input[0] not in to_quantize and not n.input[0].endswith("_dq"):
            continue
        x = n.input[0][:-3] if n.input[0].endswith("_dq") else n.input[0]
        x_scale, _ = activation_qparams(*ranges[x])
        if n.op_type == "Conv":
            axis = 0
        elif n.op_type == "Gemm":
            axis = 0 if any(a.name == "transB" and a.i == 1 for a in n.attribute) else 1
        else:
            axis = 1
        if numpy_helper.to_array(inits[n.input[1]]).ndim != (4 if n.op_type == "Conv" else 2):
            continue
        n.input[1], w_scale = dequantized_weight(n.input[1], axis)
        if len(n.input) > 2 and n.input[2] in inits and numpy_helper.to_array(inits[n.input[2]]).ndim == 1:
            n.input[2] = dequantized_bias(n.input[2], x_scale.astype(np.float64) * w_scale.astype(np.float64))

    ordered = weight_nodes + qdq_inputs
    for n in nodes:
        for k, o in enumerate(n.output):
            if o in renamed:
                n.output[k] = renamed[o]
        ordered.append(n)
        for o in n.output:
            ordered += qdq_after.get(o, [])
    del g.node[:]
    g.node.extend(ordered)
    g.initializer.extend(new_inits)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    del g.value_info[:]
    return model


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    src, out, modules, inputs_json = sys.argv[1:]
    model = onnx.load(src)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:
        print(f"{src}: opset {opset}; per-channel DequantizeLinear needs 13", file=sys.stderr)
        return 1
    model = quantize(model, value_ranges(model, modules, inputs_json))
    onnx.checker.check_model(model)
    onnx.save(model, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
