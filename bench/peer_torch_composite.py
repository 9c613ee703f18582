#!/usr/bin/env python3
"""Peer for bench_composite: background replacement of a 1080p frame in PyTorch.

    python3 bench/peer_torch_composite.py [--device cuda:0] [--iters 50] [--json]

The same work as bench/bench_composite.c, case by case:
  - frame 1920x1080 RGB uint8 [1, 3, H, W] (the bench's integer triangle-wave
    pattern, bit for bit), mask float32 [1, 1, 256, 256] (the same soft
    ellipse, float32 operations in the same order), 1080p RGB image;
  - per frame: m = F.interpolate(mask, (1080, 1920), mode="bilinear",
    align_corners=False) (pixflow's half-pixel rule), background, then
    floor(clamp(m * frame + (1 - m) * bg, 0, 255) + 0.5) to uint8 (pixflow's
    round half up);
  - blur: separable Gaussian (radius ceil(3 sigma), normalised weights) as
    two depthwise conv2d (1 x K, then K x 1) on float32, edges replicated
    (pixflow clamps): the exact Gaussian at full resolution, and for sigma 32
    also pixflow's method (ops.h: avg_pool2d by q = floor(sigma / 4), the
    blur with sigma / q there, bilinear upsampling) so both designs are timed;
    torchvision.transforms.functional.gaussian_blur (one 2-D conv of K x K
    taps, reflect padding) is timed for sigma 4 when torchvision is present;
  - nv12 -> nv12: Y and interleaved UV planes in, BT.601 limited conversion to
    RGB (chroma repeated 2x2), the colour blend, uint8 rounding, RGB -> Y per
    pixel and U, V from the 2x2 mean (avg_pool2d), as ops.h defines;
  - timing: each call alone between two CUDA events on a non-default stream
    after a warm-up; median and fastest of N (default 50) in µs per frame;
    the floor and share of copy bandwidth as in bench_composite (frame, mask
    and image read once, output written once, over a 256 MiB device-to-device
    copy measured in the same run, read + write bytes).
The output mean per channel (nv12: Y plane) is printed for comparison with
bench_composite's (the full-resolution blur rows differ slightly from
pixflow's downscaled sigma 32 by design; the rest should agree within
rounding). Python is used here only for this peer comparison.
"""
import argparse
import json
import math
import statistics
import sys

W, H, MASK = 1920, 1080, 256
COLOUR = (0, 177, 64)
COPY_BYTES = 256 << 20


def tri(torch, t, p):
    return (torch.abs((t % p) - p // 2) * 510) // p


def make_inputs(torch, dev):
    x = torch.arange(W, device=dev, dtype=torch.int64).view(1, W)
    y = torch.arange(H, device=dev, dtype=torch.int64).view(H, 1)

    def rgb(variant):
        r = tri(torch, x + 64 * variant, 512).expand(H, W)
        g = tri(torch, y + 32 * variant, 256).expand(H, W)
        b = tri(torch, x + 2 * y, 640 if variant else 1536)
        return torch.stack([r, g, b]).to(torch.uint8).unsqueeze(0).contiguous()

    frame, image = rgb(0), rgb(1)
    yp = (16 + tri(torch, x + y, 512) * 219 // 255).to(torch.uint8)
    cx = torch.arange((W + 1) // 2, device=dev, dtype=torch.int64).view(1, -1)
    cy = torch.arange((H + 1) // 2, device=dev, dtype=torch.int64).view(-1, 1)
    u = (16 + tri(torch, cx, 256) * 224 // 255).expand(cy.shape[0], cx.shape[1])
    v = (16 + tri(torch, cy, 128) * 224 // 255).expand(cy.shape[0], cx.shape[1])
    uv = torch.stack([u, v], dim=-1).to(torch.uint8).contiguous()
    mx = torch.arange(MASK, device=dev, dtype=torch.float32).view(1, MASK)
    my = torch.arange(MASK, device=dev, dtype=torch.float32).view(MASK, 1)
    dx, dy = (mx - 128.0) / 70.0, (my - 150.0) / 110.0
    m = ((1.0 - (dx * dx + dy * dy)) * 4.0).clamp(0.0, 1.0)
    return frame, image, yp.contiguous(), uv, m.view(1, 1, MASK, MASK).contiguous()


def gauss_weights(torch, dev, sigma):
    r = math.ceil(3.0 * sigma)
    g = [math.exp(-(k * k) / (2.0 * sigma * sigma)) for k in range(-r, r + 1)]
    s = sum(g)
    return torch.tensor([v / s for v in g], device=dev, dtype=torch.float32), r


def make_ops(torch, F, dev):
    colour = torch.tensor(COLOUR, device=dev, dtype=torch.float32).view(1, 3, 1, 1)

    def upmask(mask):
        return F.interpolate(mask, size=(H, W), mode="bilinear", align_corners=False)

    def blend(frame_f, m, bg):
        return torch.floor((m * frame_f + (1.0 - m) * bg).clamp(0.0, 255.0) + 0.5).to(torch.uint8)

    kernels = {}  # sigma -> (horizontal, vertical weights, radius), made once, outside timing

    def weights(sigma):
        if sigma not in kernels:
            w, r = gauss_weights(torch, dev, sigma)
            k = w.numel()
            kernels[sigma] = (w.view(1, 1, 1, k).expand(3, 1, 1, k).contiguous(),
                              w.view(1, 1, k, 1).expand(3, 1, k, 1).contiguous(), r)
        return kernels[sigma]

    def sep_blur(x, sigma):
        wh, wv, r = weights(sigma)
        x = F.conv2d(F.pad(x, (r, r, 0, 0), mode="replicate"), wh, groups=3)
        return F.conv2d(F.pad(x, (0, 0, r, r), mode="replicate"), wv, groups=3)

    def down_blur(x, sigma):
        q = int(math.floor(sigma / 4.0))
        small = F.avg_pool2d(x, q, ceil_mode=True)  # edge blocks average what they have
        small = sep_blur(small, sigma / q)
        return F.interpolate(small, scale_factor=q, mode="bilinear", align_corners=False)[..., :H, :W]

    def colour_case(frame, mask):
        return blend(frame.float(), upmask(mask), colour)

    def image_case(frame, mask, image):
        return blend(frame.float(), upmask(mask), image.float())

    def blur_case(frame, mask, sigma, method):
        f = frame.float()
        return blend(f, upmask(mask), method(f, sigma))

    def tv_case(frame, mask, sigma):
        import torchvision.transforms.functional as TF
        f = frame.float()
        k = 2 * math.ceil(3.0 * sigma) + 1
        return blend(f, upmask(mask), TF.gaussian_blur(f, [k, k], [sigma, sigma]))

    def nv12_case(yp, uv, mask):
        # BT.601 limited (ops.h's table), chroma of pixel (x, y) at (x/2, y/2).
        yy = (yp.float() - 16.0) * 1.164384
        u = uv[..., 0].float() - 128.0
        v = uv[..., 1].float() - 128.0
        u = u.repeat_interleave(2, 0).repeat_interleave(2, 1)[:H, :W]
        v = v.repeat_interleave(2, 0).repeat_interleave(2, 1)[:H, :W]
        r = (yy + 1.596027 * v).clamp(0, 255)
        g = (yy - 0.391762 * u - 0.812968 * v).clamp(0, 255)
        b = (yy + 2.017232 * u).clamp(0, 255)
        f = torch.stack([r, g, b]).unsqueeze(0)
        out = blend(f, upmask(mask), colour).float()
        ro, go, bo = out[0, 0], out[0, 1], out[0, 2]
        y_out = torch.floor((0.256788 * ro + 0.504129 * go + 0.097906 * bo + 16.0).clamp(0, 255) + 0.5)
        mean = F.avg_pool2d(out, 2, ceil_mode=True)[0]
        cu = -0.148223 * mean[0] - 0.290993 * mean[1] + 0.439216 * mean[2] + 128.0
        cv = 0.439216 * mean[0] - 0.367788 * mean[1] - 0.071427 * mean[2] + 128.0
        uv_out = torch.floor(torch.stack([cu, cv], dim=-1).clamp(0, 255) + 0.5)
        return y_out.to(torch.uint8), uv_out.to(torch.uint8)

    return colour_case, image_case, blur_case, sep_blur, down_blur, tv_case, nv12_case


def time_us(torch, fn, iters, warmup, stream):
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    out, times = None, []
    with torch.cuda.stream(stream):
        for i in range(warmup + iters):
            e0.record(stream)
            out = fn()
            e1.record(stream)
            e1.synchronize()
            if i >= warmup:
                times.append(1e3 * e0.elapsed_time(e1))
    return statistics.median(times), min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    ap.add_argument("--iters", type=int, default=50, help="timed frames per case (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed frames first (default 5)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peer_torch_composite: PyTorch is not installed ({e})", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch_composite: torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    try:
        import torchvision  # noqa: F401
        have_tv = True
    except ImportError:
        have_tv = False

    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(device=dev)
    frame, image, yp, uv, mask = make_inputs(torch, dev)
    colour_case, image_case, blur_case, sep_blur, down_blur, tv_case, nv12_case = make_ops(torch, F, dev)
    torch.cuda.synchronize()

    rgb_bytes, nv_bytes, mask_bytes = W * H * 3, W * H * 3 // 2, MASK * MASK * 4
    cases = [
        ("rgb24 colour", lambda: colour_case(frame, mask), 2 * rgb_bytes + mask_bytes),
        ("rgb24 image 1080p", lambda: image_case(frame, mask, image), 3 * rgb_bytes + mask_bytes),
        ("rgb24 blur sigma 4", lambda: blur_case(frame, mask, 4.0, sep_blur), 2 * rgb_bytes + mask_bytes),
    ]
    if have_tv:
        cases.append(("rgb24 blur 4 torchvision", lambda: tv_case(frame, mask, 4.0),
                      2 * rgb_bytes + mask_bytes))
    cases += [
        ("rgb24 blur sigma 32", lambda: blur_case(frame, mask, 32.0, sep_blur), 2 * rgb_bytes + mask_bytes),
        ("rgb24 blur 32 pooled", lambda: blur_case(frame, mask, 32.0, down_blur),
         2 * rgb_bytes + mask_bytes),
        ("nv12 colour", lambda: nv12_case(yp, uv, mask), 2 * nv_bytes + mask_bytes),
    ]

    rows = []
    for name, fn, nbytes in cases:
        med, best, out = time_us(torch, fn, args.iters, args.warmup, stream)
        if isinstance(out, tuple):
            mean = [out[0].float().mean().item(), 0.0, 0.0]
        else:
            mean = [out[0, c].float().mean().item() for c in range(3)]
        rows.append({"name": name, "median_us": med, "min_us": best, "bytes": nbytes, "mean": mean})

    a = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev).fill_(0x5A)
    b = torch.empty_like(a)
    copy_med, _, _ = time_us(torch, lambda: b.copy_(a), 10, 2, stream)
    copy_gbps = 2.0 * COPY_BYTES / (copy_med * 1e-6) / 1e9
    for r in rows:
        r["floor_us"] = r["bytes"] / (copy_gbps * 1e9) * 1e6
        r["share"] = r["floor_us"] / r["median_us"]

    name = torch.cuda.get_device_name(dev)
    if args.json:
        print(json.dumps({
            "bench": "composite", "impl": "pytorch", "torch": torch.__version__,
            "device": str(dev), "device_name": name, "frame": f"{W}x{H}",
            "mask": f"f32 {MASK}x{MASK}", "iters": args.iters, "warmup": args.warmup,
            "timing": "events", "copy_gbps": round(copy_gbps, 2), "copy_bytes": 2 * COPY_BYTES,
            "cases": [{"name": r["name"], "median_us": round(r["median_us"], 2),
                       "min_us": round(r["min_us"], 2), "bytes": r["bytes"],
                       "floor_us": round(r["floor_us"], 2),
                       "share_of_copy_bandwidth": round(r["share"], 4),
                       "output_mean": [round(v, 3) for v in r["mean"]]} for r in rows]}))
        return 0
    print(f"peer_torch_composite on {dev} ({name}), PyTorch {torch.__version__}: "
          f"{W}x{H} frame, f32 {MASK}x{MASK} mask")
    print(f"{args.iters} frames per case after {args.warmup} warm-up, each alone between two events\n")
    print(f"{'case':<26} {'median us':>11} {'fastest us':>11} {'MB moved':>10} {'floor us':>10} "
          f"{'share':>7}   output mean (nv12: Y)")
    for r in rows:
        print(f"{r['name']:<26} {r['median_us']:11.1f} {r['min_us']:11.1f} {r['bytes'] / 1e6:10.2f} "
              f"{r['floor_us']:10.2f} {100 * r['share']:6.1f}%   "
              f"{r['mean'][0]:.2f} {r['mean'][1]:.2f} {r['mean'][2]:.2f}")
    print(f"\ncopy bandwidth (device-to-device 256 MiB, read + write): {copy_gbps:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
