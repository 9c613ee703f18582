#!/usr/bin/env python3
"""Peer for bench_transfer: host<->device copy bandwidth measured with PyTorch.

    python3 bench/peer_torch_transfer.py [--device cuda:0] [--iters 50] [--json]

Same frames, directions, host memory kinds and method as bench/bench_transfer.c,
so the two tables (or JSON objects) line up row by row:
  - frames: 1920x1080 RGB (6,220,800 B) and 7680x3840 RGB (88,473,600 B);
  - host memory: torch.empty(...).pin_memory() versus a pageable tensor that
    has been written (touched) beforehand;
  - host->device: src.to(device, non_blocking=True) (PyTorch's idiom; the
    output comes from its caching allocator, so after warm-up no cudaMalloc
    is timed), or with --h2d copy: copy_ into one preallocated device tensor;
  - device->host: host_tensor.copy_(device_tensor, non_blocking=True) into
    the preallocated pinned or pageable tensor (Tensor.to('cpu',
    non_blocking=True) would pick pinned output memory by itself);
  - each copy alone on one non-default stream between two CUDA events
    (enable_timing=True), after a warm-up; the median of N (default 50), the
    fastest, and the host-clock median around issue + sync; GB/s = 1e9 B/s.
Python is used here only for this peer comparison.
"""
import argparse
import json
import statistics
import sys
import time

CASES = [("1080p_rgb", 1920 * 1080 * 3), ("8k_equirect_rgb", 7680 * 3840 * 3)]
DIRECTIONS = ["h2d", "d2h"]
HOSTS = ["pinned", "pageable"]


def gbps(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9 if ms > 0 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0", help="CUDA device (default cuda:0)")
    ap.add_argument("--iters", type=int, default=50, help="timed copies per row (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed copies first (default 5)")
    ap.add_argument("--h2d", choices=["to", "copy"], default="to",
                    help="host->device as .to(device, non_blocking=True) (default) "
                         "or copy_ into a preallocated tensor")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")

    try:
        import torch
    except ImportError as e:
        print(f"peer_torch_transfer: PyTorch is not installed ({e})", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("peer_torch_transfer: torch.cuda.is_available() is False (no GPU or driver)",
              file=sys.stderr)
        return 1

    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(device=dev)  # non-default, like a pixflow stream
    max_bytes = max(n for _, n in CASES)

    pageable = torch.randint(0, 256, (max_bytes,), dtype=torch.uint8)  # written: touched
    pinned = torch.empty(max_bytes, dtype=torch.uint8).pin_memory()
    pinned.copy_(torch.flip(pageable, [0]))
    assert pinned.is_pinned() and not pageable.is_pinned()
    dbuf = torch.empty(max_bytes, dtype=torch.uint8, device=dev)
    hosts = {"pinned": pinned, "pageable": pageable}

    # One verified round trip per host kind.
    with torch.cuda.stream(stream):
        for name, h in hosts.items():
            dbuf.copy_(h, non_blocking=True)
            back = torch.empty_like(h)
            back.copy_(dbuf, non_blocking=True)
            stream.synchronize()
            if not torch.equal(back, h):
                print(f"peer_torch_transfer: round trip through {name} memory returned wrong data",
                      file=sys.stderr)
                return 1

    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    rows = []
    with torch.cuda.stream(stream):
        for case, n in CASES:
            for d in DIRECTIONS:
                for hname in HOSTS:
                    host = hosts[hname][:n]
                    dev_view = dbuf[:n]
                    ev, wall = [], []
                    out = None
                    for i in range(-args.warmup, args.iters):
                        t0 = time.perf_counter_ns()
                        e0.record(stream)
                        if d == "h2d":
                            if args.h2d == "to":
                                out = host.to(dev, non_blocking=True)
                            else:
                                dev_view.copy_(host, non_blocking=True)
                        else:
                            host.copy_(dev_view, non_blocking=True)
                        e1.record(stream)
                        e1.synchronize()
                        t1 = time.perf_counter_ns()
                        if i >= 0:
                            ev.append(e0.elapsed_time(e1))
                            wall.append((t1 - t0) / 1e6)
                    del out
                    med = statistics.median(ev)
                    best = min(ev)
                    wmed = statistics.median(wall)
                    rows.append({"name": case, "bytes": n, "direction": d, "host": hname,
                                 "median_ms": round(med, 4), "min_ms": round(best, 4),
                                 "gbps": round(gbps(n, med), 2),
                                 "best_gbps": round(gbps(n, best), 2),
                                 "wall_median_ms": round(wmed, 4),
                                 "wall_gbps": round(gbps(n, wmed), 2)})

    props = torch.cuda.get_device_properties(dev)
    if args.json:
        print(json.dumps({
            "bench": "transfer", "impl": "pytorch", "torch": torch.__version__,
            "cuda": torch.version.cuda, "device": str(dev), "device_name": props.name,
            "kind": "host<->device", "h2d_method": args.h2d, "iters": args.iters,
            "warmup": args.warmup, "timing": "events", "unit": "GB/s (1e9 B/s), median",
            "cases": rows}))
        return 0

    print(f"peer_torch_transfer on {dev} ({props.name}): PyTorch {torch.__version__}, "
          f"CUDA {torch.version.cuda}, h2d via "
          f"{'.to(device, non_blocking=True)' if args.h2d == 'to' else 'copy_'}")
    print(f"{args.iters} copies per row after {args.warmup} warm-up, each alone between two "
          f"events; GB/s = 1e9 B/s")
    print()
    print(f"{'frame':<16} {'bytes':>11} {'dir':>4} {'host':<9} {'median ms':>10} {'GB/s':>9} "
          f"{'best GB/s':>9} {'wall GB/s':>11}")
    for r in rows:
        print(f"{r['name']:<16} {r['bytes']:>11} {r['direction']:>4} {r['host']:<9} "
              f"{r['median_ms']:>10.3f} {r['gbps']:>9.2f} {r['best_gbps']:>9.2f} "
              f"{r['wall_gbps']:>11.2f}")
    ratios = []
    for case, _ in CASES:
        for d in DIRECTIONS:
            pin = next(r for r in rows if r["name"] == case and r["direction"] == d
                       and r["host"] == "pinned")
            pag = next(r for r in rows if r["name"] == case and r["direction"] == d
                       and r["host"] == "pageable")
            ratios.append(f"{case} {d} {pag['median_ms'] / pin['median_ms']:.2f}x")
    print()
    print("pinned / pageable (median): " + " ".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
