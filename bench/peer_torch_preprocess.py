#!/usr/bin/env python3
"""Peer for bench_preprocess: the same fused preprocess written in PyTorch.

    python3 bench/peer_torch_preprocess.py [--device cuda:0] [--iters 50] [--json]

Same work and method as bench/bench_preprocess.c, so the tables line up:
  - input: 64 distinct random 1920x1080 BGR frames as one uint8 tensor
    [64, 1080, 1920, 3] on the GPU (398 MB, eight times the L2), a batch being
    the next N of them in rotation (a contiguous slice, never wrapping);
  - the op, written the way PyTorch users write it:
        x.permute(0, 3, 1, 2).flip(1).float()            # NHWC BGR -> NCHW RGB
        F.interpolate(x, size=(512, 512), mode="bilinear",
                      align_corners=False, antialias=False)
        ((x / 255 - mean) / std).half()                   # ImageNet mean/std
    eager, and replayed from CUDA graphs (torch.cuda.graphs: one graph per
    batch start, captured once, outputs in a static tensor);
  - a sample: a 64 MiB fill_ first (keeps the GPU busy while the host issues
    the sample, so the events time GPU work, not launch latency), a CUDA
    event, 32 / N batches of N frames (32 frames per sample), an event; the
    median and fastest over --iters samples after warm-up, in us per frame;
  - device copy bandwidth in the same run: a 256 MiB device-to-device copy_
    between events, median of 10, bytes read + written;
  - share of copy bandwidth as the SPEC counts it: (whole source frame
    6,220,800 B + output 1,572,864 B) per frame / time / copy bandwidth.
Sanity: 256 output values of the last batch are recomputed in float64 by the
formula (half-pixel bilinear, clamped edges, (x/255 - mean)/std) and must
match within half precision; a mismatch fails the run.
Python is used here only for this peer comparison.
"""
import argparse
import json
import math
import statistics
import sys

SRC_W, SRC_H, DST = 1920, 1080, 512
POOL = 64
PER_SAMPLE = 32
BATCHES = [1, 8, 32]
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
SPEC_BYTES = SRC_W * SRC_H * 3 + DST * DST * 3 * 2
COPY_BYTES = 256 << 20
BUSY_BYTES = 64 << 20


def expected(frame_bgr, c, y, x):
    """Output (c, y, x) of one frame by the formula, in float64.

    frame_bgr: uint8 tensor [H, W, 3] on the CPU."""
    def taps(i, out_size, in_size):
        s = (i + 0.5) * in_size / out_size - 0.5
        s = max(s, 0.0)  # PyTorch clamps negative source coordinates to 0
        k0 = int(math.floor(s))
        f = s - k0
        k1 = min(k0 + 1, in_size - 1)
        return min(k0, in_size - 1), k1, f

    y0, y1, fy = taps(y, DST, SRC_H)
    x0, x1, fx = taps(x, DST, SRC_W)
    ch = 2 - c  # output RGB channel c is BGR channel 2 - c

    def px(yy, xx):
        return float(frame_bgr[yy, xx, ch])

    v = (1 - fy) * ((1 - fx) * px(y0, x0) + fx * px(y0, x1)) + \
        fy * ((1 - fx) * px(y1, x0) + fx * px(y1, x1))
    return (v / 255.0 - MEAN[c]) / STD[c]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    ap.add_argument("--iters", type=int, default=50, help="timed samples per row (default 50)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed samples first (default 3)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"peer_torch_preprocess: PyTorch is not installed ({e})", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch_preprocess: torch.cuda.is_available() is False (no GPU or driver)",
              file=sys.stderr)
        return 1

    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(device=dev)  # non-default, like a pixflow stream
    gen = torch.Generator(device=dev)
    gen.manual_seed(20261121)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)

    def preprocess(x):
        x = x.permute(0, 3, 1, 2).flip(1).float()
        x = F.interpolate(x, size=(DST, DST), mode="bilinear", align_corners=False,
                          antialias=False)
        return ((x / 255 - mean) / std).half()

    with torch.cuda.stream(stream):
        frames = torch.randint(0, 256, (POOL, SRC_H, SRC_W, 3), dtype=torch.uint8, device=dev,
                               generator=gen)
        ca = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev).fill_(1)
        cb = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev).fill_(2)
        busy = ca[:BUSY_BYTES]
    stream.synchronize()

    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)

    # Device copy bandwidth.
    ms = []
    with torch.cuda.stream(stream):
        for i in range(-2, 10):
            e0.record(stream)
            cb.copy_(ca)
            e1.record(stream)
            e1.synchronize()
            if i >= 0:
                ms.append(e0.elapsed_time(e1))
    copy_ms = statistics.median(ms)
    copy_gbps = 2 * COPY_BYTES / (copy_ms * 1e-3) / 1e9

    def time_mode(n, run_batch):
        """Median and fastest us/frame of samples of PER_SAMPLE frames."""
        reps = PER_SAMPLE // n
        pos = 0
        samples = []
        with torch.cuda.stream(stream):
            for it in range(-args.warmup, args.iters):
                busy.fill_(it & 0xFF)
                e0.record(stream)
                for _ in range(reps):
                    run_batch(pos)
                    pos = (pos + n) % POOL
                e1.record(stream)
                e1.synchronize()
                if it >= 0:
                    samples.append(e0.elapsed_time(e1) * 1e3 / PER_SAMPLE)
        return statistics.median(samples), min(samples)

    rows = []
    last_out = {}
    for n in BATCHES:
        # Eager.
        def eager(pos, n=n):
            last_out["eager"] = (pos, preprocess(frames[pos:pos + n]))
        med, best = time_mode(n, eager)
        rows.append({"mode": "eager", "batch": n, "median_us_per_frame": med,
                     "best_us_per_frame": best})

        # CUDA graphs: one per batch start (a graph bakes in its input address).
        graphs, outs = {}, {}
        with torch.cuda.stream(stream):
            for _ in range(3):  # warm-up on the side stream before capture, as the docs advise
                preprocess(frames[0:n])
        stream.synchronize()
        for pos in range(0, POOL, n):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                outs[pos] = preprocess(frames[pos:pos + n])
            graphs[pos] = g

        def replay(pos, graphs=graphs, outs=outs):
            graphs[pos].replay()
            last_out["graph"] = (pos, outs[pos])
        med, best = time_mode(n, replay)
        rows.append({"mode": "graph", "batch": n, "median_us_per_frame": med,
                     "best_us_per_frame": best})
        del graphs, outs
    stream.synchronize()

    # Sanity: the last eager and graph outputs against the formula.
    worst = 0.0
    bad = 0
    checked = 0
    pick = torch.Generator().manual_seed(7)
    for mode in ("eager", "graph"):
        pos, out = last_out[mode]
        out = out.float().cpu()
        nb = out.shape[0]
        for _ in range(128):
            i = int(torch.randint(0, nb, (1,), generator=pick))
            c = int(torch.randint(0, 3, (1,), generator=pick))
            y = int(torch.randint(0, DST, (1,), generator=pick))
            x = int(torch.randint(0, DST, (1,), generator=pick))
            want = expected(frames[pos + i].cpu(), c, y, x)
            got = float(out[i, c, y, x])
            # Half precision: 2^-11 relative, plus float32 rounding slack.
            tol = abs(want) * 2.0 ** -10 + 2e-3
            d = abs(got - want)
            worst = max(worst, d)
            checked += 1
            if d > tol:
                bad += 1
                if bad <= 3:
                    print(f"peer_torch_preprocess: {mode} frame {pos + i} c {c} y {y} x {x}: "
                          f"{got} vs formula {want}", file=sys.stderr)

    for r in rows:
        gb = SPEC_BYTES / (r["median_us_per_frame"] * 1e-6) / 1e9
        r["gbps_spec"] = round(gb, 1)
        r["share_spec"] = round(gb / copy_gbps, 4)
        r["median_us_per_frame"] = round(r["median_us_per_frame"], 3)
        r["best_us_per_frame"] = round(r["best_us_per_frame"], 3)

    props = torch.cuda.get_device_properties(dev)
    if args.json:
        print(json.dumps({
            "bench": "preprocess", "impl": "pytorch", "torch": torch.__version__,
            "cuda": torch.version.cuda, "device": str(dev), "device_name": props.name,
            "case": "1920x1080 bgr24 -> [N,3,512,512] f16 nchw rgb, bilinear, imagenet mean/std",
            "iters": args.iters, "warmup": args.warmup, "frames_per_sample": PER_SAMPLE,
            "pool_frames": POOL, "copy_gbps": round(copy_gbps, 1),
            "spec_bytes_per_frame": SPEC_BYTES, "sanity_checked": checked, "sanity_bad": bad,
            "cases": rows}))
        return 1 if bad else 0

    print(f"peer_torch_preprocess on {dev} ({props.name}): PyTorch {torch.__version__}, "
          f"CUDA {torch.version.cuda}")
    print("1920x1080 bgr u8 -> [N,3,512,512] f16 rgb: permute, flip, float, interpolate "
          "(bilinear, align_corners=False, antialias=False), normalise, half")
    print(f"{args.iters} samples of {PER_SAMPLE} frames per row after {args.warmup} warm-up; "
          f"{POOL} distinct input frames in rotation")
    print(f"device copy (256 MiB, read + write): {copy_ms:.3f} ms = {copy_gbps:.1f} GB/s")
    print()
    print(f"{'mode':<6} {'batch':>5} {'us/frame':>12} {'best us':>12} {'GB/s SPEC':>11} "
          f"{'of copy':>9}")
    for r in rows:
        print(f"{r['mode']:<6} {r['batch']:>5} {r['median_us_per_frame']:>12.3f} "
              f"{r['best_us_per_frame']:>12.3f} {r['gbps_spec']:>11.1f} "
              f"{100 * r['share_spec']:>8.1f}%")
    e32 = next(r for r in rows if r["mode"] == "eager" and r["batch"] == 32)
    g32 = next(r for r in rows if r["mode"] == "graph" and r["batch"] == 32)
    print()
    print(f"peer_torch_preprocess: batch 32: eager {e32['median_us_per_frame']:.2f} us/frame "
          f"({100 * e32['share_spec']:.1f}% of copy), graph {g32['median_us_per_frame']:.2f} "
          f"us/frame = {g32['gbps_spec']:.0f} GB/s ({100 * g32['share_spec']:.1f}% of copy "
          f"bandwidth {copy_gbps:.0f} GB/s)")
    print(f"peer_torch_preprocess: sanity vs the formula: {'ok' if not bad else 'FAILED'} "
          f"({checked} values, max |diff| {worst:.2e})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
