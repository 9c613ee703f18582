#!/usr/bin/env python3
"""QDQ INT8 export with onnxruntime's post-training quantization (the
stand-in until `pixflow model quantize` lands; bench/int8_peer.sh uses it).

    python3 bench/int8_quantize.py MODEL.onnx OUT.onnx --input IN.npy [--calib 8]

Calibration: --calib samples made from IN.npy ([1,3,H,W], ImageNet-
normalised) plus seeded noise of the same spread, min-max ranges.
Format: QuantFormat.QDQ, per-channel symmetric int8 weights, symmetric int8
activations (zero point 0: what pixflow's tensor-core INT8 conv takes; see
docs/int8.md), int32 biases behind DequantizeLinear. Needs onnxruntime
(CPU is enough) and numpy; the GPU machine's python has both.
"""
import argparse
import sys

import numpy as np
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)


class Reader(CalibrationDataReader):
    def __init__(self, name, base, n):
        rng = np.random.default_rng(7)
        self.items = [{name: (base + rng.normal(0, base.std() * 0.5, base.shape)).astype(np.float32)}
                      for _ in range(n)]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.items):
            return None
        self.i += 1
        return self.items[self.i - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--input", required=True)
    ap.add_argument("--input-name", default="input")
    ap.add_argument("--calib", type=int, default=8)
    a = ap.parse_args()
    base = np.load(a.input).astype(np.float32)
    quantize_static(a.model, a.out, Reader(a.input_name, base, a.calib),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    print("int8_quantize: wrote %s" % a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
