#!/usr/bin/env python3
"""Writes a small QDQ INT8 ONNX model, an input and its expected output (a
test fixture for tests/int8_model_cli.sh; Debian's python3-onnx and numpy).

    int8_qdq_model.py OUT_DIR

The model (input "x" [N,3,16,16] float, output "out" [N,10] float) is what
onnxruntime's QDQ quantizer writes for a small CNN: QuantizeLinear /
DequantizeLinear pairs (int8, symmetric activations, per-channel int8
weights, int32 biases behind DequantizeLinear) around a 3x3 conv + Relu, a
stride-2 conv, a 1x1 conv whose float output meets a residual Add + Relu,
a depthwise conv + Relu, global average pooling and a Gemm (transB) head.
The expected output is computed here with numpy by ONNX's rules, unfused
(float convs of dequantized tensors, a rounding at every QuantizeLinear);
pixflow fuses the chains and rounds once per chain, so values may differ by
a step of a scale where one lies near a rounding boundary (the test allows
a few steps of the last scale).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(18)
nodes, inits = [], []
ctr = [0]


def name(p):
    ctr[0] += 1
    return "%s_%d" % (p, ctr[0])


def const(arr, p):
    n = name(p)
    inits.append(numpy_helper.from_array(arr, n))
    return n


def q_np(x, s, zp=0):
    return np.clip(np.rint((x / np.float32(s)).astype(np.float32)) + zp, -128, 127).astype(np.int8)


def dq_np(q, s, zp=0):
    return ((q.astype(np.float32) - zp) * np.float32(s)).astype(np.float32)


def qdq(x, s):
    """Q then DQ of activation tensor x (ONNX name) at scale s; returns the DQ'd name."""
    sn, zn = const(np.array(s, np.float32), "s"), const(np.array(0, np.int8), "zp")
    qn, dn = name("q"), name("dq")
    nodes.append(helper.make_node("QuantizeLinear", [x, sn, zn], [qn]))
    nodes.append(helper.make_node("DequantizeLinear", [qn, sn, zn], [dn]))
    return dn


def conv_np(x, w, b, stride, pad, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow), np.float64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, o] += np.tensordot(patch, w[o, :, i, j].astype(np.float64), axes=([1], [0]))
    return (y + b.reshape(1, -1, 1, 1)).astype(np.float32)


def qconv(x, x_s, cin, cout, k, stride, group, ref_x):
    """A QDQ conv on DQ'd input x (scale x_s); returns (output name, numpy ref)."""
    wf = rng.normal(0, 0.5 / np.sqrt(cin // group * k * k), (cout, cin // group, k, k)).astype(np.float32)
    ws = (np.abs(wf).reshape(cout, -1).max(1) / 127).astype(np.float32)
    wq = np.clip(np.rint(wf / ws.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
    bq = rng.integers(-500, 500, cout).astype(np.int32)
    bs = (x_s * ws).astype(np.float32)
    wn = name("w")
    nodes.append(helper.make_node("DequantizeLinear", [const(wq, "wq"), const(ws, "ws"),
                                  const(np.zeros(cout, np.int8), "wz")], [wn], axis=0))
    bn = name("b")
    nodes.append(helper.make_node("DequantizeLinear", [const(bq, "bq"), const(bs, "bs"),
                                  const(np.zeros(cout, np.int32), "bz")], [bn], axis=0))
    y = name("conv")
    nodes.append(helper.make_node("Conv", [x, wn, bn], [y], kernel_shape=[k, k], strides=[stride] * 2,
                                  pads=[k // 2] * 4, group=group))
    ref = conv_np(ref_x, dq_np(wq, ws.reshape(-1, 1, 1, 1)), dq_np(bq, bs), stride, k // 2, group)
    return y, ref


def relu(x, ref):
    y = name("relu")
    nodes.append(helper.make_node("Relu", [x], [y]))
    return y, np.maximum(ref, 0)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    N = 2
    xin = rng.uniform(-1, 1, (N, 3, 16, 16)).astype(np.float32)
    s0 = 1 / 127
    # Scales as a min-max calibration on this input would pick them.
    cal = lambda ref: np.float32(max(float(np.abs(ref).max()), 1e-6) / 127)
    x = qdq("x", s0)
    r = dq_np(q_np(xin, s0), s0)
    y, r = qconv(x, s0, 3, 16, 3, 1, 1, r)
    y, r = relu(y, r)
    s1 = cal(r)
    y, r = qdq(y, s1), dq_np(q_np(r, s1), s1)
    y, r = qconv(y, s1, 16, 16, 3, 2, 1, r)
    s2 = cal(r)
    a, ra = qdq(y, s2), dq_np(q_np(r, s2), s2)
    y, r = qconv(a, s2, 16, 16, 1, 1, 1, ra)
    add = name("add")
    nodes.append(helper.make_node("Add", [y, a], [add]))
    y, r = relu(add, r + ra)
    s3 = cal(r)
    y, r = qdq(y, s3), dq_np(q_np(r, s3), s3)
    y, r = qconv(y, s3, 16, 16, 3, 1, 16, r)
    y, r = relu(y, r)
    s4 = cal(r)
    y, r = qdq(y, s4), dq_np(q_np(r, s4), s4)
    gp = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [y], [gp]))
    r = r.mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(np.float32)
    fl = name("flat")
    nodes.append(helper.make_node("Flatten", [gp], [fl], axis=1))
    r = r.reshape(N, 16)
    s5 = cal(r)
    y, r = qdq(fl, s5), dq_np(q_np(r, s5), s5)
    wf = rng.normal(0, 0.3, (10, 16)).astype(np.float32)
    ws = (np.abs(wf).max(1) / 127).astype(np.float32)
    wq = np.clip(np.rint(wf / ws.reshape(-1, 1)), -127, 127).astype(np.int8)
    bq = rng.integers(-300, 300, 10).astype(np.int32)
    bs = (s5 * ws).astype(np.float32)
    wn, bn, gm = name("gw"), name("gb"), name("gemm")
    nodes.append(helper.make_node("DequantizeLinear", [const(wq, "gwq"), const(ws, "gws")], [wn], axis=0))
    nodes.append(helper.make_node("DequantizeLinear", [const(bq, "gbq"), const(bs, "gbs")], [bn], axis=0))
    nodes.append(helper.make_node("Gemm", [y, wn, bn], [gm], transB=1))
    r = (r.astype(np.float64) @ dq_np(wq, ws.reshape(-1, 1)).T.astype(np.float64) + dq_np(bq, bs)).astype(np.float32)
    s6 = cal(r)
    sq, zq = const(np.array(s6, np.float32), "s"), const(np.array(0, np.int8), "zp")
    nodes.append(helper.make_node("QuantizeLinear", [gm, sq, zq], ["out_q"]))
    nodes.append(helper.make_node("DequantizeLinear", ["out_q", sq, zq], ["out"]))
    r = dq_np(q_np(r, s6), s6)
    g = helper.make_graph(nodes, "int8_fixture",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "int8_qdq.onnx"))
    np.save(os.path.join(out, "x.npy"), xin)
    np.save(os.path.join(out, "expected.npy"), r)
    np.save(os.path.join(out, "step.npy"), np.array([s6], np.float32))
    print("wrote %s (%d nodes), output step %g" % (os.path.join(out, "int8_qdq.onnx"), len(nodes), s6))


if __name__ == "__main__":
    main()
