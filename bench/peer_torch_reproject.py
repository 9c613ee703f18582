#!/usr/bin/env python3
"""Peer for bench_reproject: equirect -> 8 perspective views with PyTorch's grid_sample.

    python3 bench/peer_torch_reproject.py [--device cuda:0] [--iters 50] [--json]
                                          [--pixflow PATH | --no-pixflow]

The same work as bench/bench_reproject.c:
  - source 7680x3840 RGB, the same integer triangle-wave pattern (bit for bit);
  - 8 views of 1920x1080, yaw 0, 45, ..., 315, pitch 0, fov 90, bilinear;
  - the sampling grid is precomputed once in float64 from ops.h's formulas
    (camera ray, roll/pitch/yaw rotations, longitude/latitude) and stored as
    float32, all 8 views stacked along H: one grid_sample call per image,
    input [1, 3, 3840, 7680] -> output [1, 3, 8 * 1080, 1920];
  - grid_sample(mode="bilinear", padding_mode="border", align_corners=False):
    the same pixel-centre convention as pixflow (x = fx - 0.5). grid_sample
    cannot wrap x around, so at longitude +-180 (inside the yaw 180 view) it
    clamps where pixflow wraps: half a source pixel column differs there;
  - uint8 -> float conversion and layout change (HWC -> NCHW) happen once,
    outside the timed region; the timed call writes float output (pixflow
    writes rounded uint8);
  - timing: each call alone between two CUDA events on a non-default stream,
    after a warm-up; median of N (default 50) in ms per image, for float32 and
    float16 inputs/grids, and float32 replayed from a CUDA graph.
Check: view 0's centre 64x64 square (rounded to uint8) is compared with a
float64 bilinear evaluation of the same formulas and, when the pixflow bench
binary is found (build-gpu/bench/bench_reproject, or --pixflow PATH), with the
mean pixflow reports for the same square.
Python is used here only for this peer comparison.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

SRC_W, SRC_H = 7680, 3840
NVIEWS, VIEW_W, VIEW_H, FOV = 8, 1920, 1080, 90.0
CENTRE = 64


def pattern(torch, device):
    """The source of bench_reproject.c: tri(t, p) = |t mod p - p/2| * 510 / p."""
    x = torch.arange(SRC_W, device=device, dtype=torch.int64).view(1, SRC_W)
    y = torch.arange(SRC_H, device=device, dtype=torch.int64).view(SRC_H, 1)

    def tri(t, p):
        return (torch.abs((t % p) - p // 2) * 510) // p

    r = tri(x, 512).expand(SRC_H, SRC_W)
    g = tri(y, 256).expand(SRC_H, SRC_W)
    b = tri(x + 2 * y, 1536)
    return torch.stack([r, g, b], dim=-1).to(torch.uint8)  # H, W, 3


def view_rays_lonlat(torch, device, yaw, pitch=0.0, roll=0.0):
    """Longitude and latitude (radians, float64) of every pixel of a view."""
    f = (VIEW_W / 2.0) / math.tan(math.radians(FOV) / 2.0)
    i = torch.arange(VIEW_W, device=device, dtype=torch.float64).view(1, VIEW_W)
    j = torch.arange(VIEW_H, device=device, dtype=torch.float64).view(VIEW_H, 1)
    x = (i + 0.5 - VIEW_W / 2.0).expand(VIEW_H, VIEW_W)
    y = (-(j + 0.5 - VIEW_H / 2.0)).expand(VIEW_H, VIEW_W)
    z = torch.full((VIEW_H, VIEW_W), f, device=device, dtype=torch.float64)
    t, p, a = math.radians(roll), math.radians(pitch), math.radians(yaw)
    x, y = x * math.cos(t) + y * math.sin(t), -x * math.sin(t) + y * math.cos(t)
    y, z = y * math.cos(p) + z * math.sin(p), -y * math.sin(p) + z * math.cos(p)
    x, z = x * math.cos(a) + z * math.sin(a), -x * math.sin(a) + z * math.cos(a)
    lon = torch.atan2(x, z)
    lat = torch.asin(y / torch.sqrt(x * x + y * y + z * z))
    return lon, lat


def make_grid(torch, device):
    """[1, 8*1080, 1920, 2] float64: x_n = lon / pi, y_n = -2 lat / pi, i.e.
    the normalised form (align_corners=False) of x = (lon/360 + 0.5) W - 0.5."""
    grids = []
    for v in range(NVIEWS):
        lon, lat = view_rays_lonlat(torch, device, 45.0 * v)
        grids.append(torch.stack([lon / math.pi, -2.0 * lat / math.pi], dim=-1))
    return torch.cat(grids, dim=0).unsqueeze(0)


def bilinear_reference(torch, src_hwc, lon, lat):
    """float64 bilinear with x wrapped and y clamped, as ops.h defines it."""
    W, H = SRC_W, SRC_H
    sx = (lon / (2 * math.pi) + 0.5) * W - 0.5
    sy = (0.5 - lat / math.pi) * H - 0.5
    x0 = torch.floor(sx)
    y0 = torch.floor(sy)
    ax = (sx - x0).unsqueeze(-1)
    ay = (sy - y0).unsqueeze(-1)
    x0 = x0.long()
    y0 = y0.long()
    xa, xb = x0 % W, (x0 + 1) % W
    ya, yb = y0.clamp(0, H - 1), (y0 + 1).clamp(0, H - 1)
    s = src_hwc.double()
    top = s[ya, xa] * (1 - ax) + s[ya, xb] * ax
    bot = s[yb, xa] * (1 - ax) + s[yb, xb] * ax
    return top * (1 - ay) + bot * ay


def pixflow_centre_mean(path, device):
    try:
        out = subprocess.run([path, "--device", device, "--iters", "1", "--json"],
                             capture_output=True, text=True, timeout=300)
        return json.loads(out.stdout.strip().splitlines()[-1])["view0_centre_mean"], None
    except Exception as e:  # reported, never fatal: the peer's timing stands alone
        return None, f"{path}: {e}"


def time_calls(torch, fn, stream, warmup, iters):
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ms = []
    with torch.cuda.stream(stream):
        for i in range(-warmup, iters):
            e0.record(stream)
            fn()
            e1.record(stream)
            e1.synchronize()
            if i >= 0:
                ms.append(e0.elapsed_time(e1))
    return statistics.median(ms), min(ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per variant (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
    ap.add_argument("--pixflow", default=None,
                    help="bench_reproject binary to compare the centre square with "
                         "(default: build-gpu/bench/bench_reproject if it exists)")
    ap.add_argument("--no-pixflow", action="store_true", help="skip the pixflow comparison")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peer_torch_reproject: PyTorch is not installed ({e})", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch_reproject: torch.cuda.is_available() is False (no GPU or driver)",
              file=sys.stderr)
        return 1

    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(device=dev)
    src_hwc = pattern(torch, dev)
    grid64 = make_grid(torch, dev)
    # Outside the timed region: uint8 HWC -> float NCHW, grids in each dtype.
    inputs = {dt: src_hwc.permute(2, 0, 1).unsqueeze(0).to(dt).contiguous()
              for dt in (torch.float32, torch.float16)}
    grids = {dt: grid64.to(dt).contiguous() for dt in (torch.float32, torch.float16)}
    torch.cuda.synchronize()

    def sample(dt):
        return F.grid_sample(inputs[dt], grids[dt], mode="bilinear", padding_mode="border",
                             align_corners=False)

    rows = []
    for name, dt in (("float32", torch.float32), ("float16", torch.float16)):
        med, best = time_calls(torch, lambda dt=dt: sample(dt), stream, args.warmup, args.iters)
        rows.append({"variant": name, "median_ms": round(med, 4), "min_ms": round(best, 4)})

    # float32 again, captured once in a CUDA graph and replayed.
    graph_note = None
    try:
        with torch.cuda.stream(stream):
            for _ in range(3):
                sample(torch.float32)  # warm-up on the capture stream, as torch advises
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            static_out = sample(torch.float32)
        med, best = time_calls(torch, graph.replay, stream, args.warmup, args.iters)
        rows.append({"variant": "float32 + CUDA graph", "median_ms": round(med, 4),
                     "min_ms": round(best, 4)})
        del static_out
    except Exception as e:  # a capture failure is reported, not fatal
        graph_note = f"CUDA graph capture failed: {e}"

    # Check view 0's centre square against the formulas, and against pixflow.
    with torch.cuda.stream(stream):
        out = sample(torch.float32)
    stream.synchronize()
    y0, x0 = (VIEW_H - CENTRE) // 2, (VIEW_W - CENTRE) // 2
    # view 0 is rows 0..1079 of the stacked output
    peer_sq = out[0, :, y0:y0 + CENTRE, x0:x0 + CENTRE].double()
    lon, lat = view_rays_lonlat(torch, dev, 0.0)
    ref_sq = bilinear_reference(torch, src_hwc, lon[y0:y0 + CENTRE, x0:x0 + CENTRE],
                                lat[y0:y0 + CENTRE, x0:x0 + CENTRE]).permute(2, 0, 1)
    formula_diff = (peer_sq - ref_sq).abs().max().item()
    peer_mean = [round(v, 3) for v in peer_sq.round().clamp(0, 255).mean(dim=(1, 2)).tolist()]
    pix_mean, pix_note = None, None
    if not args.no_pixflow:
        path = args.pixflow
        if path is None:
            here = os.path.dirname(os.path.abspath(__file__))
            path = os.path.join(here, "..", "build-gpu", "bench", "bench_reproject")
        if os.path.exists(path):
            pix_mean, pix_note = pixflow_centre_mean(path, str(dev))
        else:
            pix_note = f"{path} not found"
    pix_diff = (max(abs(a - b) for a, b in zip(peer_mean, pix_mean))
                if pix_mean is not None else None)

    props = torch.cuda.get_device_properties(dev)
    base = rows[0]["median_ms"]
    if args.json:
        print(json.dumps({
            "bench": "reproject", "impl": "pytorch", "torch": torch.__version__,
            "cuda": torch.version.cuda, "device": str(dev), "device_name": props.name,
            "src": f"{SRC_W}x{SRC_H} rgb", "views": NVIEWS, "view": f"{VIEW_W}x{VIEW_H}",
            "fov": FOV, "interp": "bilinear", "method": "grid_sample, precomputed grid",
            "iters": args.iters, "warmup": args.warmup, "timing": "events",
            "unit": "ms per image (8 views), median", "variants": rows,
            "graph_note": graph_note, "view0_centre_mean": peer_mean,
            "max_diff_vs_float64_formula": formula_diff, "pixflow_view0_centre_mean": pix_mean,
            "max_mean_diff_vs_pixflow": pix_diff, "pixflow_note": pix_note}))
        return 0

    print(f"peer_torch_reproject on {dev} ({props.name}): PyTorch {torch.__version__}, "
          f"CUDA {torch.version.cuda}")
    print(f"{SRC_W}x{SRC_H} rgb -> {NVIEWS} views {VIEW_W}x{VIEW_H} (yaw 0..315 step 45, fov 90), "
          f"grid_sample bilinear, padding border, align_corners=False")
    print("grid precomputed (8 views stacked: 1x8640x1920x2); uint8 -> float NCHW outside the "
          "timed region; float output")
    print(f"{args.iters} calls per variant after {args.warmup} warm-up, each alone between two "
          f"CUDA events\n")
    print(f"{'variant':<24} {'ms/image':>9} {'fastest':>9}")
    for r in rows:
        print(f"{r['variant']:<24} {r['median_ms']:>9.3f} {r['min_ms']:>9.3f}")
    if graph_note:
        print(graph_note)
    print(f"\nview 0 centre {CENTRE}x{CENTRE} mean: {peer_mean[0]:.3f} {peer_mean[1]:.3f} "
          f"{peer_mean[2]:.3f}; max |grid_sample - float64 formula| {formula_diff:.4f}")
    if pix_mean is not None:
        print(f"pixflow's view 0 centre mean: {pix_mean[0]:.3f} {pix_mean[1]:.3f} "
              f"{pix_mean[2]:.3f} (max |diff| {pix_diff:.3f})")
    else:
        print(f"pixflow comparison skipped ({pix_note or '--no-pixflow'})")
    best_row = min(rows, key=lambda r: r["median_ms"])
    print(f"peer_torch_reproject: {base:.3f} ms/image median (float32 grid_sample), best "
          f"{best_row['median_ms']:.3f} ms ({best_row['variant']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
