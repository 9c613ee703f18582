#!/usr/bin/env python3
"""Checks a QDQ file written by `pixflow model quantize` with onnxruntime
(the GPU machine's python3 has it; CPU provider unless --cuda).

    python3 bench/quant_check.py --fp32 M.onnx --int8 M_int8.onnx --images DIR
        [--sim M_sim.onnx] [--norm 01|11|imagenet] [--count N] [--cuda] [--json]

1. onnx.checker.check_model(full_check=True) on the int8 file; counts of
   QuantizeLinear/DequantizeLinear and int8 initializers;
2. onnxruntime loads both files (a session is made: the QDQ file is usable
   by another runtime) and runs them on every image (resized bilinear to the
   input size, RGB, (pixel / 255 - mean) / std, layout from the input shape);
3. per output: max/mean |int8 - fp32|; for 4-D outputs with H, W >= 8 the
   argmax agreement and mIoU (1 channel: mask > 0.5 agreement and IoU),
   intersections and unions summed over the images (pixflow model compare's
   definitions);
4. with --sim (the --simulate file): |onnxruntime(int8) - onnxruntime(sim)|,
   i.e. whether the Q/DQ file computes what pixflow's float simulation of it
   computes (onnxruntime may run real int8 kernels: small differences from
   requantization rounding are expected, not label flips).
--fp32 may be a TFLite model's `pixflow model convert` output.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

NORMS = {
    "01": ([0, 0, 0], [1, 1, 1]),
    "11": ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
    "imagenet": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
}


def load_image(path, h, w):
    try:
        import cv2
        img = cv2.imread(path, cv2.IMREAD_COLOR)
        if img is None:
            raise IOError(path)
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        interp = cv2.INTER_AREA if img.shape[0] > h else cv2.INTER_LINEAR
        return cv2.resize(img, (w, h), interpolation=interp).astype(np.float32)
    except ImportError:
        from PIL import Image
        return np.asarray(Image.open(path).convert("RGB").resize((w, h), Image.BILINEAR),
                          dtype=np.float32)


def session(path, cuda):
    providers = (["CUDAExecutionProvider"] if cuda else []) + ["CPUExecutionProvider"]
    return ort.InferenceSession(path, providers=providers)


class Seg:
    def __init__(self, classes):
        self.classes = classes
        n = 2 if classes == 1 else classes
        self.inter = np.zeros(n)
        self.union = np.zeros(n)
        self.same = 0
        self.pixels = 0

    def add(self, a, b, caxis):
        if self.classes == 1:
            la = (np.take(a, 0, axis=caxis) > 0.5).astype(np.int64)
            lb = (np.take(b, 0, axis=caxis) > 0.5).astype(np.int64)
        else:
            la, lb = a.argmax(axis=caxis), b.argmax(axis=caxis)
        self.same += int((la == lb).sum())
        self.pixels += la.size
        for c in range(len(self.inter)):
            ia, ib = la == c, lb == c
            self.inter[c] += (ia & ib).sum()
            self.union[c] += (ia | ib).sum()

    def result(self):
        if self.classes == 1:
            iou = self.inter[1] / self.union[1] if self.union[1] else 1.0
        else:
            used = self.union > 0
            iou = float((self.inter[used] / self.union[used]).mean()) if used.any() else 1.0
        return self.same / max(self.pixels, 1), float(iou)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp32", required=True)
    ap.add_argument("--int8", required=True)
    ap.add_argument("--sim")
    ap.add_argument("--images", required=True)
    ap.add_argument("--norm", choices=sorted(NORMS), default="imagenet")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    m = onnx.load(args.int8)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    int8_inits = sum(1 for t in m.graph.initializer if t.data_type == onnx.TensorProto.INT8)
    report = {"fp32": args.fp32, "int8": args.int8, "checker": "ok",
              "quantize_linear": ops.count("QuantizeLinear"),
              "dequantize_linear": ops.count("DequantizeLinear"), "int8_initializers": int8_inits}

    s32, s8 = session(args.fp32, args.cuda), session(args.int8, args.cuda)
    ssim = session(args.sim, args.cuda) if args.sim else None
    report["providers"] = s8.get_providers()
    inp = s32.get_inputs()[0]
    shape = inp.shape
    nchw = shape[1] == 3
    h, w = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    mean, std = (np.array(v, np.float32) for v in NORMS[args.norm])
    paths = sorted(p for p in glob.glob(os.path.join(args.images, "*"))
                   if p.lower().endswith((".png", ".jpg", ".jpeg")))
    if args.count:
        paths = paths[:args.count]
    if not paths:
        sys.exit("quant_check: no images in %s" % args.images)
    outs = [o.name for o in s32.get_outputs()]
    stats = [{"name": n, "max_abs": 0.0, "sum_abs": 0.0, "n": 0, "seg": None, "sim_max": 0.0,
              "sim_sum": 0.0} for n in outs]
    for p in paths:
        x = (load_image(p, h, w) / 255.0 - mean) / std
        x = (x.transpose(2, 0, 1) if nchw else x)[None].astype(np.float32)
        a = s32.run(None, {inp.name: x})
        b = s8.run(None, {s8.get_inputs()[0].name: x})
        c = ssim.run(None, {ssim.get_inputs()[0].name: x}) if ssim else None
        for i, st in enumerate(stats):
            d = np.abs(a[i].astype(np.float64) - b[i])
            st["max_abs"] = max(st["max_abs"], float(d.max()))
            st["sum_abs"] += float(d.sum())
            st["n"] += d.size
            if c is not None:
                e = np.abs(b[i].astype(np.float64) - c[i])
                st["sim_max"] = max(st["sim_max"], float(e.max()))
                st["sim_sum"] += float(e.sum())
            if a[i].ndim == 4:
                caxis = 1 if a[i].shape[1] <= a[i].shape[3] else 3
                hh, ww = (a[i].shape[2], a[i].shape[3]) if caxis == 1 else a[i].shape[1:3]
                if hh >= 8 and ww >= 8:
                    if st["seg"] is None:
                        st["seg"] = Seg(a[i].shape[caxis])
                    st["seg"].add(a[i], b[i], caxis)
    report["images"] = len(paths)
    report["outputs"] = []
    for st in stats:
        o = {"name": st["name"], "max_abs": st["max_abs"], "mean_abs": st["sum_abs"] / st["n"]}
        if st["seg"]:
            o["classes"] = st["seg"].classes
            o["agreement"], o["miou"] = st["seg"].result()
        if ssim:
            o["vs_sim_max_abs"] = st["sim_max"]
            o["vs_sim_mean_abs"] = st["sim_sum"] / st["n"]
        report["outputs"].append(o)
    if args.json:
        print(json.dumps(report))
    else:
        print("%s: checker ok, %d Q, %d DQ, %d int8 initializers; onnxruntime %s (%s)"
              % (args.int8, report["quantize_linear"], report["dequantize_linear"], int8_inits,
                 ort.__version__, ",".join(report["providers"])))
        for o in report["outputs"]:
            line = "  %s: max |d| %.4g mean |d| %.4g" % (o["name"], o["max_abs"], o["mean_abs"])
            if "miou" in o:
                line += ", agreement %.4f%%, %s %.4f" % (100 * o["agreement"],
                                                         "IoU" if o["classes"] == 1 else "mIoU",
                                                         o["miou"])
            if ssim:
                line += "; vs pixflow's simulation: max |d| %.4g mean %.4g" % (
                    o["vs_sim_max_abs"], o["vs_sim_mean_abs"])
            print(line)


if __name__ == "__main__":
    main()
