#!/usr/bin/env python3
"""Peer for the inference engine: torchvision segmentation models in PyTorch.

    python3 bench/nn_peer_torch.py --out DIR [--device cuda:0] [--iters 50] [--json]

What it does, in one run on the GPU machine:
  1. builds torchvision DeepLabV3-ResNet50 and LRASPP-MobileNetV3-Large with
     random weights (torch.manual_seed(0), eval mode, 21 classes), and exports
     each to DIR/<name>.onnx (opset 17, input "input" [N,3,512,512] with a
     symbolic batch, output "out");
  2. writes one input DIR/<name>_in_b1.npy (float32, seed 1, ImageNet-normalised
     uniform noise) and the float32 reference output DIR/<name>_ref_b1.npy
     computed in PyTorch float32 with TF32 disabled (matmul and cuDNN);
  3. times PyTorch at 512x512 fp16, batch 1 and 8, channels_last,
     cudnn.benchmark: eager, and replayed from a CUDA graph (static input and
     output), median of --iters samples between CUDA events after warm-up, in
     ms per batch and per frame.
pixflow's side (bench/nn_peer.sh) loads the same .onnx files, runs them on
the same input and compares values (relative L2 error), and times its own
executor. Random weights make argmax labels unstable: values are compared.
Python is used here only for this peer comparison.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import torch
import torchvision

MODELS = ["lraspp", "deeplabv3"]
SIZE = 512
BATCHES = [1, 8]


class OutOnly(torch.nn.Module):
    """torchvision segmentation models return a dict; ONNX wants a tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def build(name):
    torch.manual_seed(0)
    seg = torchvision.models.segmentation
    if name == "lraspp":
        m = seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=21)
    else:
        m = seg.deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=21,
                                   aux_loss=False)
    m.eval()
    # Random BN statistics, so batch-norm folding is exercised with real values
    # (fresh BNs have mean 0, var 1, which folding would pass trivially).
    g = torch.Generator().manual_seed(2)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            c = mod.num_features
            mod.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            mod.weight.data.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            mod.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return OutOnly(m).eval()


def export(model, path):
    x = torch.zeros(1, 3, SIZE, SIZE)
    kw = dict(input_names=["input"], output_names=["out"], opset_version=17,
              dynamic_axes={"input": {0: "N"}, "out": {0: "N"}}, do_constant_folding=True)
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kw)
    except TypeError:
        torch.onnx.export(model, (x,), path, **kw)


def make_input(batch):
    rng = np.random.default_rng(1)
    x = rng.random((batch, 3, SIZE, SIZE), dtype=np.float32)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    return ((x - mean) / std).astype(np.float32)


def time_ms(fn, iters, device):
    for _ in range(5):
        fn()
    torch.cuda.synchronize(device)
    samples = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b))
    return statistics.median(samples), min(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device(args.device)
    rows = []
    for name in MODELS:
        model = build(name)
        onnx_path = os.path.join(args.out, name + ".onnx")
        export(model, onnx_path)
        x1 = make_input(1)
        np.save(os.path.join(args.out, name + "_in_b1.npy"), x1)
        # Reference: float32, TF32 off.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        m32 = model.to(dev)
        with torch.no_grad():
            ref = m32(torch.from_numpy(x1).to(dev)).float().cpu().numpy()
        np.save(os.path.join(args.out, name + "_ref_b1.npy"), ref)
        # The first 4 classes alone (4 MB), small enough to bring back from
        # the GPU machine for CPU-side checks.
        np.save(os.path.join(args.out, name + "_ref_b1_c4.npy"), np.ascontiguousarray(ref[:, :4]))
        # PyTorch's own fp16 error against that reference, for context.
        torch.backends.cudnn.benchmark = True
        m16 = build(name).to(dev).half().to(memory_format=torch.channels_last)
        with torch.no_grad():
            o16 = m16(torch.from_numpy(x1).to(dev).half().contiguous(
                memory_format=torch.channels_last)).float().cpu().numpy()
        rel16 = float(np.linalg.norm(o16 - ref) / max(np.linalg.norm(ref), 1e-30))
        for batch in BATCHES:
            xb = torch.from_numpy(make_input(batch)).to(dev).half().contiguous(
                memory_format=torch.channels_last)
            with torch.no_grad():
                eager, _ = time_ms(lambda: m16(xb), args.iters, dev)
                static_in = xb.clone()
                s = torch.cuda.Stream(device=dev)
                s.wait_stream(torch.cuda.current_stream(dev))
                with torch.cuda.stream(s):
                    for _ in range(3):
                        m16(static_in)
                torch.cuda.current_stream(dev).wait_stream(s)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_out = m16(static_in)
                graphed, best = time_ms(graph.replay, args.iters, dev)
                del static_out
            row = {"bench": "peer_torch_nn", "model": name, "batch": batch, "precision": "fp16",
                   "eager_ms": round(eager, 4), "graph_ms": round(graphed, 4),
                   "graph_best_ms": round(best, 4),
                   "graph_ms_per_frame": round(graphed / batch, 4),
                   "torch_fp16_rel_l2_vs_fp32": rel16,
                   "torch": torch.__version__, "torchvision": torchvision.__version__}
            rows.append(row)
        del m16, m32
        torch.cuda.empty_cache()
    for r in rows:
        if args.json:
            print(json.dumps(r))
        else:
            print("peer_torch_nn %-9s batch %d fp16: eager %.3f ms, CUDA graph %.3f ms "
                  "(%.3f ms/frame); torch fp16 vs fp32 rel L2 %.2e"
                  % (r["model"], r["batch"], r["eager_ms"], r["graph_ms"],
                     r["graph_ms_per_frame"], r["torch_fp16_rel_l2_vs_fp32"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
