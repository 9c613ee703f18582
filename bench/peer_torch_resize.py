#!/usr/bin/env python3
"""Peer for bench_resize: the same resizes and conversion done with PyTorch.

    python3 bench/peer_torch_resize.py [--device cuda:0] [--iters 50] [--json]

Same sources as bench/bench_resize.c (integer triangle-wave patterns, built
bit for bit here), same shapes, same timing method (each call alone on one
stream between two CUDA events, after a warm-up; median and fastest in us per
frame), and the mean of the output bytes, so the two tables line up:

  resize rgb24 1080p -> 512x512 bilinear
      F.interpolate(mode="bilinear", align_corners=False, antialias=False):
      the same sample positions and weights as pixflow's bilinear.
  resize rgb24 1080p -> 512x512 area
      F.interpolate(mode="area") = adaptive_avg_pool2d: for this non-integer
      factor its windows are [floor(i W / w), ceil((i + 1) W / w)) with equal
      weights, not overlap-weighted like pixflow's (and OpenCV's) area, so
      its output mean differs slightly; for integer factors both are exact
      block means.
  convert nv12 -> rgb24 1080p (BT.601 limited)
      the ops.h formula in float tensor ops: chroma repeated 2x2, then
      R = y' + rv v, G = y' - gu u - gv v, B = y' + bu u, rounded half up.

What is timed, per case, two variants:
  "u8 -> u8": everything from the uint8 HWC frame on the GPU to a uint8 HWC
      result (permute, .float(), the op, + 0.5, floor, clamp, .to(uint8)),
      i.e. the work pixflow's call does;
  "op only": the interpolation (or the conversion arithmetic) alone on
      float inputs prepared outside the timed region.
Bytes moved are counted like bench_resize (source + output at u8), and the
share is against a 256 MiB device-to-device copy measured in the same run.
Python is used here only for this peer comparison.
"""
import argparse
import json
import statistics
import sys

W, H, DW, DH = 1920, 1080, 512, 512
COPY_BYTES = 256 << 20


def tri(t, p):
    """Triangle wave of period p over 0..255 (integer-exact, as in bench_resize.c)."""
    return ((t % p) - p // 2).abs() * 510 // p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per case (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peer_torch_resize: PyTorch is not installed ({e})", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch_resize: torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(device=dev)

    # Sources, as bench_resize.c builds them.
    x = torch.arange(W, dtype=torch.int64).view(1, W)
    y = torch.arange(H, dtype=torch.int64).view(H, 1)
    rgb = torch.stack([tri(x.expand(H, W), 512), tri(y.expand(H, W), 256),
                       tri(x + 2 * y, 1536)], dim=2).to(torch.uint8).to(dev)  # H, W, 3
    cx = torch.arange(W // 2, dtype=torch.int64).view(1, W // 2)
    cy = torch.arange(H // 2, dtype=torch.int64).view(H // 2, 1)
    yp = tri(x + y, 512).to(torch.uint8).to(dev)                                  # H, W
    uv = torch.stack([tri(cx.expand(H // 2, W // 2), 256),
                      tri(cy.expand(H // 2, W // 2), 128)], dim=2).to(torch.uint8).to(dev)

    # BT.601 limited coefficients, computed as pixflow does (double, then float).
    kr, kb = 0.299, 0.114
    kg = 1.0 - kr - kb
    ys, cs = 255.0 / 219.0, 255.0 / 224.0
    rv, gu = 2 * (1 - kr) * cs, 2 * kb * (1 - kb) / kg * cs
    gv, bu = 2 * kr * (1 - kr) / kg * cs, 2 * (1 - kb) * cs

    def to_u8(t):
        return (t + 0.5).floor_().clamp_(0, 255).to(torch.uint8)

    def resize_u8(mode):
        src = rgb.permute(2, 0, 1).unsqueeze(0).float()
        kw = {"align_corners": False, "antialias": False} if mode == "bilinear" else {}
        out = F.interpolate(src, size=(DH, DW), mode=mode, **kw)
        return to_u8(out).squeeze(0).permute(1, 2, 0)

    src_f = rgb.permute(2, 0, 1).unsqueeze(0).float().contiguous()

    def resize_op(mode):
        kw = {"align_corners": False, "antialias": False} if mode == "bilinear" else {}
        return F.interpolate(src_f, size=(DH, DW), mode=mode, **kw)

    def nv12_math(yf, uf, vf):
        yy = (yf - 16.0) * ys
        r = yy + rv * vf
        g = yy - gu * uf - gv * vf
        b = yy + bu * uf
        return r, g, b

    def convert_u8():
        yf = yp.float()
        c = uv.float().repeat_interleave(2, dim=0).repeat_interleave(2, dim=1) - 128.0
        r, g, b = nv12_math(yf, c[..., 0], c[..., 1])
        return to_u8(torch.stack([r, g, b], dim=2))

    yf0 = yp.float()
    c0 = uv.float().repeat_interleave(2, dim=0).repeat_interleave(2, dim=1) - 128.0
    u0, v0 = c0[..., 0].contiguous(), c0[..., 1].contiguous()

    def convert_op():
        return nv12_math(yf0, u0, v0)

    def timed(fn):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        ms = []
        out = None
        with torch.cuda.stream(stream):
            for i in range(args.warmup + args.iters):
                e0.record(stream)
                out = fn()
                e1.record(stream)
                e1.synchronize()
                if i >= args.warmup:
                    ms.append(e0.elapsed_time(e1))
        return statistics.median(ms), min(ms), out

    # Copy bandwidth in the same run (read + write).
    a = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev).fill_(0x5A)
    b = torch.empty_like(a)
    copy_ms, _, _ = timed(lambda: b.copy_(a))
    copy_gbps = 2.0 * COPY_BYTES / (copy_ms * 1e-3) / 1e9
    del a, b

    cases = [
        ("resize rgb24 1080p -> 512x512 bilinear", "resize_bilinear",
         lambda: resize_u8("bilinear"), lambda: resize_op("bilinear"), W * H * 3 + DW * DH * 3),
        ("resize rgb24 1080p -> 512x512 area", "resize_area",
         lambda: resize_u8("area"), lambda: resize_op("area"), W * H * 3 + DW * DH * 3),
        ("convert nv12 -> rgb24 1080p (BT.601 ltd)", "convert_nv12_rgb24",
         convert_u8, convert_op, W * H * 3 // 2 + W * H * 3),
    ]
    rows = []
    for name, key, full, op, nbytes in cases:
        med, best, out = timed(full)
        med_op, best_op, _ = timed(op)
        rows.append({"case": key, "name": name, "median_us": 1e3 * med, "min_us": 1e3 * best,
                     "op_only_median_us": 1e3 * med_op, "op_only_min_us": 1e3 * best_op,
                     "bytes": nbytes, "gbps": nbytes / (med * 1e-3) / 1e9,
                     "share_of_copy_bandwidth": nbytes / (med * 1e-3) / 1e9 / copy_gbps,
                     "output_mean": out.float().mean().item()})

    if args.json:
        print(json.dumps({"bench": "resize", "impl": "pytorch", "torch": torch.__version__,
                          "device": str(dev), "device_name": torch.cuda.get_device_name(dev),
                          "iters": args.iters, "warmup": args.warmup, "timing": "events",
                          "copy_gbps": round(copy_gbps, 2), "copy_bytes": 2 * COPY_BYTES,
                          "cases": rows}))
        return 0
    print(f"peer_torch_resize on {dev} ({torch.cuda.get_device_name(dev)}), torch "
          f"{torch.__version__}: {args.iters} calls per case after {args.warmup} warm-up\n")
    print(f"{'':42} {'u8->u8 us':>10} {'fastest':>8} {'op only':>8} {'GB/s':>7} {'share':>7}"
          f" {'output mean':>11}")
    for r in rows:
        print(f"{r['name']:42} {r['median_us']:10.1f} {r['min_us']:8.1f} "
              f"{r['op_only_median_us']:8.1f} {r['gbps']:7.1f} "
              f"{100 * r['share_of_copy_bandwidth']:6.1f}% {r['output_mean']:11.3f}")
    print(f"\ncopy bandwidth (device-to-device 256 MiB, read + write): {copy_gbps:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
