#!/usr/bin/env python3
"""Python overhead and the Python segmentation loop (issue 17).

1. Per-call overhead: pixflow.ops.resize of a tiny image from Python
   against the same work called from C in a loop (_bench_c_resize: a new
   output, the resize, the stream wait), median of several rounds; also an
   empty call into the extension (GIL released and retaken) and Model.run
   on a one-node ONNX model. Goal: <= 5 us over the C call.
2. Segmentation loop: frames decoded by a pixflow pipeline (io.video_source),
   then per frame in Python ops.preprocess -> Model.run -> ops.composite
   (blur), against `pixflow segment INPUT -o null --json` on the same input
   and device (the CLI batches; the Python loop runs batch 1).

  PYTHONPATH=build/python python3 bench/bench_python.py [--device cuda]
      [--input .data/Megamind.avi] [--frames 300] [--cli build/pixflow]
Prints a table and, with --json, one JSON object.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import pixflow
from pixflow import ops

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def timed(fn, n, rounds=9):
    """Seconds per call: the best of `rounds` rounds of n calls (timeit's
    rule: the slower rounds measure other load on the machine, not the
    call). Both sides of each comparison are measured the same way."""
    fn()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t0) / n)
    return min(per)


def overhead(device, n, onnx):
    from pixflow import _pixflow
    img = np.full((4, 4, 3), 77, np.uint8)
    src = img if device == "cpu" else pixflow.from_dlpack(img).to(device)
    res = {}
    res["noop_us"] = timed(_pixflow._noop, n * 10) * 1e6
    res["py_resize_us"] = timed(lambda: ops.resize(src, (2, 2)), n) * 1e6
    res["c_resize_us"] = min(_pixflow._bench_c_resize(n, 4, 4, 2, 2, device)
                             for _ in range(9)) * 1e6
    res["overhead_us"] = res["py_resize_us"] - res["c_resize_us"]
    if os.path.exists(onnx):
        try:
            m = pixflow.Model(onnx, device=device)
            i = m.inputs[0]
            x = np.zeros([d if d > 0 else 1 for d in i.shape], np.float32)
            if device != "cpu":
                x = pixflow.from_dlpack(x).to(device)
            res["py_model_run_relu_us"] = timed(lambda: m.run({i.name: x}), n) * 1e6
            if device == "cpu":
                res["c_model_run_relu_us"] = min(_pixflow._bench_c_model_run(onnx, n)
                                                 for _ in range(9)) * 1e6
                res["model_overhead_us"] = res["py_model_run_relu_us"] - res["c_model_run_relu_us"]
        except pixflow.Error as e:
            res["model_note"] = str(e)
    return res


def python_segment_loop(path, device, frames, synthetic=None):
    """fps of the Python loop, decoding excluded (frames read first).
    synthetic "WxH": generated frames instead of a file (machines without
    FFmpeg, where only Y4M could be read)."""
    p = pixflow.Pipeline()
    if synthetic:
        w, h = (int(v) for v in synthetic.lower().split("x"))
        src = p.add("source.synthetic", width=w, height=h, count=frames)
    else:
        src = p.add("io.video_source", path=path, format="rgb24", count=frames)
    p.output(src)
    decoded = [np.ascontiguousarray(it.frame) for it in p]
    p.close()
    model = pixflow.Model(pixflow.model_path("selfie_segmentation.tflite"), device=device,
                          max_batch=1)
    name, out = model.inputs[0].name, model.outputs[0].name
    gpu = device != "cpu"
    if gpu:
        decoded = [pixflow.from_dlpack(f).to(device) for f in decoded]

    def one(frame):
        x = ops.preprocess(frame, (256, 256), layout="nhwc")
        mask = model.run({name: x})[out]          # [1, 256, 256, 1]
        return ops.composite(frame, mask, "blur", sigma=12)

    for f in decoded[:5]:
        one(f)
    t0 = time.perf_counter()
    for f in decoded:
        one(f)
    return len(decoded) / (time.perf_counter() - t0), len(decoded)


def cli_segment(cli, path, device, frames):
    r = subprocess.run([cli, "segment", path, "-o", "null", "--json", "--device", device,
                        "--frames", str(frames)], capture_output=True, text=True, check=True)
    j = json.loads(r.stdout)
    return j.get("fps") or j.get("result", {}).get("fps")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--input", default=os.path.join(ROOT, ".data", "Megamind.avi"))
    ap.add_argument("--frames", type=int, default=200)
    ap.add_argument("--cli", default=None, help="the pixflow CLI (default: next to PYTHONPATH)")
    ap.add_argument("--synthetic", default=None, metavar="WxH",
                    help="Python loop on generated frames of this size (no video decoder)")
    ap.add_argument("--cli-input", default=None,
                    help="the CLI's input when it differs (e.g. an .h264 of the same size for "
                         "NVDEC on the GPU machine); default --input")
    ap.add_argument("--onnx", default="/usr/share/libonnx-testdata/data/node/test_relu/model.onnx",
                    help="a small ONNX model for the Model.run overhead (Debian libonnx-testdata)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    res = {"device": a.device, "python": sys.version.split()[0]}
    res.update(overhead(a.device, a.calls, a.onnx))
    if os.path.exists(a.input) or a.synthetic:
        fps, n = python_segment_loop(a.input, a.device, a.frames, a.synthetic)
        res["python_loop_fps"] = fps
        res["frames"] = n
        cli = a.cli
        if not cli:
            for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
                c = os.path.join(p, "..", "pixflow")
                if p and os.path.isfile(c):
                    cli = os.path.abspath(c)
        if cli:
            try:
                res["cli_fps"] = cli_segment(cli, a.cli_input or a.input, a.device, n)
            except (subprocess.CalledProcessError, ValueError) as e:
                res["cli_note"] = str(e)
    if a.json:
        print(json.dumps(res))
        return
    for k, v in res.items():
        print("%-24s %s" % (k, "%.2f" % v if isinstance(v, float) else v))


if __name__ == "__main__":
    main()
