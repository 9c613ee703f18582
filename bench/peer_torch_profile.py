#!/usr/bin/env python3
"""Where PyTorch's time goes: GPU kernel totals for one torchvision model.

    python3 bench/peer_torch_profile.py [--model deeplabv3|lraspp] [--batch 1] [--runs 5]

Builds the model as bench/nn_peer_torch.py does (random weights, seed 0,
fp16, channels_last, cudnn.benchmark), warms up, then records `--runs`
forward passes with torch.profiler (CUDA activity only) and prints the
kernel time per run, grouped by kernel name, largest first. It shows which
cuDNN/cuBLAS kernels PyTorch's convs reach (e.g. sm90_xmma_*, nvjet_*) and
how much time its unfused batch-norm, clamp and add kernels take, to set
beside `bench_nn --profile`. Python is used here only for this peer.
"""
import argparse

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="deeplabv3", choices=["deeplabv3", "lraspp"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    seg = torchvision.models.segmentation
    if a.model == "deeplabv3":
        m = seg.deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=21,
                                   aux_loss=False)
    else:
        m = seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=21)
    m = m.eval().cuda().half().to(memory_format=torch.channels_last)
    x = torch.randn(a.batch, 3, 512, 512, device="cuda").half()
    x = x.to(memory_format=torch.channels_last)
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad():
        for _ in range(10):
            m(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(a.runs):
                m(x)
            torch.cuda.synchronize()
    tot = {}
    for e in p.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        t = tot.setdefault(e.name[:110], [0, 0.0])
        t[0] += 1
        t[1] += getattr(e, "device_time", None) or e.cuda_time
    print("%s batch %d: GPU kernel time %.1f us per run" %
          (a.model, a.batch, sum(v[1] for v in tot.values()) / a.runs))
    for k, v in sorted(tot.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print("%8.1f us/run %4d calls  %s" % (v[1] / a.runs, v[0] // a.runs, k))


if __name__ == "__main__":
    main()
