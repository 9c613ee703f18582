#!/usr/bin/env bash
# Many streams in one `pixflow segment` run, as fast as possible: N copies of
# one input (issue 12's aggregate benchmark: N x 1080p H.264 in MP4), -o null
# (decode, preprocess, infer, mask, composite; nothing encoded), aggregate
# fps = all frames / wall time of the run (planning included), per N.
#
#   bench/bench_multistream.sh [--pixflow BIN] [--device SPEC] [--frames F (0 = all)]
#                              [--counts "1 2 4 8"] INPUT [INPUT2...]
#
# Each INPUT gets its own table (e.g. an MP4 and the same bitstream as an
# elementary stream). Needs python3 to read the --json summary. Prints one
# line per run: input, N, total frames, the run's fps from its summary (the
# pipeline's run, planning included), the same over the process's wall time
# (model load and exit too), the slowest stream's fps, the worst p99
# latency, the decoder.
set -euo pipefail
bin=./build/pixflow
dev=cuda:0
frames=0
counts="1 2 4 8 12 16"
inputs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --pixflow) bin=$2; shift 2 ;;
    --device) dev=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --counts) counts=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) inputs+=("$1"); shift ;;
  esac
done
[ ${#inputs[@]} -gt 0 ] || { echo "bench_multistream: no input (see --help)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench_multistream: needs python3" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-24s %4s %7s %9s %7s %9s %8s %8s  %s\n' input N frames run_fps wall_s wall_fps \
  min_fps p99_ms decoder
for in in "${inputs[@]}"; do
  for n in $counts; do
    args=()
    for ((i = 0; i < n; i++)); do args+=("$in"); done
    t0=$(date +%s.%N)
    lim=()
    [ "$frames" -gt 0 ] && lim=(--frames "$frames")
    if ! "$bin" segment "${args[@]}" -o null --device "$dev" "${lim[@]}" --quiet --json \
        >"$tmp/out.json" 2>"$tmp/err.txt"; then
      echo "bench_multistream: $in x$n failed: $(tail -3 "$tmp/err.txt")" >&2
      continue
    fi
    t1=$(date +%s.%N)
    python3 - "$tmp/out.json" "$in" "$n" "$t0" "$t1" <<'PY'
import json, sys, os
d = json.load(open(sys.argv[1]))
name, n, t0, t1 = os.path.basename(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
st = d.get("streams") or [d]
total = sum(s.get("frames", 0) for s in st)
wall = t1 - t0
minfps = min(s.get("fps", 0) for s in st)
p99 = max(s.get("latency_p99_ms", 0) for s in st)
print("%-24s %4d %7d %9.1f %7.2f %9.1f %8.1f %8.1f  %s" % (name[:24], n, total, d.get("fps", 0),
      wall, total / wall, minfps, p99, d.get("decoder", "")))
PY
  done
done
