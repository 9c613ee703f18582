#!/usr/bin/env python3
"""Exports DeepLabV3-ResNet50 and LRASPP-MobileNetV3-Large for the int8
accuracy run (bench/int8_accuracy.sh), the way bench/nn_peer_torch.py does
(opset 17, input "input" [N,3,512,512] with a symbolic batch, output "out").

    python3 bench/quant_export.py --out DIR [--json]

Weights: torchvision's pretrained COCO-with-VOC-labels weights when they are
already in the torch hub cache (~/.cache/torch/hub/checkpoints; nothing is
downloaded: the GPU machine has no network), else random weights
(torch.manual_seed(0), nn_peer_torch.build) - then argmax agreement and mIoU
say little (random logits are close to each other), and the output says so.
Prints one JSON line per model: name, path, weights ("pretrained" or
"random"), checkpoint.
"""
import argparse
import json
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nn_peer_torch import OutOnly, build, export  # noqa: E402


def cached_weights(enum):
    """The weights enum's checkpoint if it is in the hub cache, else None."""
    w = enum.DEFAULT
    path = os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(w.url))
    return (w, path) if os.path.exists(path) else (None, path)


def pretrained(name):
    seg = torchvision.models.segmentation
    if name == "lraspp":
        w, path = cached_weights(seg.LRASPP_MobileNet_V3_Large_Weights)
        if w is None:
            return None, path
        return seg.lraspp_mobilenet_v3_large(weights=w), path
    w, path = cached_weights(seg.DeepLabV3_ResNet50_Weights)
    if w is None:
        return None, path
    return seg.deeplabv3_resnet50(weights=w, aux_loss=True), path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--random", action="store_true", help="random weights even when cached")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in ("deeplabv3", "lraspp"):
        m, ckpt = (None, "") if args.random else pretrained(name)
        kind = "pretrained"
        if m is None:
            m = build(name)  # nn_peer_torch: random weights, seed 0, random BN statistics
            kind = "random"
            print("quant_export: %s: %s not in the torch hub cache: RANDOM weights (argmax "
                  "figures are not meaningful)" % (name, ckpt or "checkpoint"), file=sys.stderr)
        else:
            m = OutOnly(m.eval()).eval()
        path = os.path.join(args.out, name + ".onnx")
        with torch.no_grad():
            export(m, path)
        print(json.dumps({"name": name, "path": path, "weights": kind, "checkpoint": ckpt}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
