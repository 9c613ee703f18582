#!/usr/bin/env bash
# The GPU JPEG codecs (nvJPEG) in one command on the GPU machine: the
# reproject job end to end, and the decoder's and encoder's own bounds.
#
#   bench/bench_nvjpeg.sh DIR [N] [--build DIR] [--json-dir DIR] [--device SPEC]
#     DIR          input folder (eq_NNNN.jpg, 7680x3840, generated when missing by
#                  bench_reproject_job.sh and reused)
#     N            images (default 240)
#     --build      build directory with pixflow, bench/bench_nvjpeg and
#                  tests/reproject_cli_ref (default build)
#     --json-dir   where the JSON summaries go (default DIR.json)
#
# Runs, in this order:
#   1. reproject N images -> 8 views 1920x1080 q90, --codec gpu  (reproject_gpu.json)
#      and again with --cpu-assist off (the GPU decoding alone: reproject_gpu_only.json)
#   2. reproject N images -> cube map 6 x 1920^2 q90, --codec gpu (reproject_cube.json)
#   3. reproject N images -> 8 views, --codec cpu: the baseline   (reproject_cpu.json)
#   4. bench_nvjpeg on the first 32 inputs (nvjpeg.json): decode images/s on one
#      engine at a time (batch 1, one state), batch 16 on one state, batch 16 on
#      4 states (threads); encode 1920x1080 views/s on 8 threads
# then one table. The inputs are in the page cache (this measures the pipeline
# and the GPU, not the disk).
set -euo pipefail
usage() { sed -n '2,22p' "$0"; exit "${1:-0}"; }
[ $# -ge 1 ] || usage 2
case "$1" in -h|--help) usage 0 ;; esac
DIR=$1
shift
N=240
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then N=$1; shift; fi
BUILD=build
JDIR=
DEVICE=cuda
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=${2:?}; shift ;;
    --json-dir) JDIR=${2:?}; shift ;;
    --device) DEVICE=${2:?}; shift ;;
    -h|--help) usage 0 ;;
    *) echo "bench_nvjpeg.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
JDIR=${JDIR:-${DIR%/}.json}
mkdir -p "$JDIR"
here=$(cd "$(dirname "$0")" && pwd)
job() { bash "$here/bench_reproject_job.sh" "$DIR" "$N" --build "$BUILD" --device "$DEVICE" "$@"; }

echo "== 1. reproject -> 8 views, GPU codec"
job --codec gpu --json "$JDIR/reproject_gpu.json"
echo "== 1b. reproject -> 8 views, GPU codec, no CPU assist"
job --codec gpu --json "$JDIR/reproject_gpu_only.json" -- --cpu-assist off
echo "== 2. reproject -> cube map, GPU codec"
job --codec gpu --cube 1920 --json "$JDIR/reproject_cube.json"
echo "== 3. reproject -> 8 views, CPU codec (baseline)"
job --codec cpu --json "$JDIR/reproject_cpu.json"
echo "== 4. nvJPEG's own bounds"
files=()
for ((i = 0; i < N && i < 32; i++)); do files+=("$(printf '%s/eq_%04d.jpg' "$DIR" "$i")"); done
"$BUILD/bench/bench_nvjpeg" --device "$DEVICE" --batch 16 --states 4 --encoders 8 "${files[@]}"
"$BUILD/bench/bench_nvjpeg" --device "$DEVICE" --batch 16 --states 4 --encoders 8 --json \
  "${files[@]}" >"$JDIR/nvjpeg.json"

echo "== summary (JSON in $JDIR)"
for f in reproject_gpu reproject_gpu_only reproject_cube reproject_cpu; do
  awk -v name="$f" '
    function val(line) { sub(/^[^:]*: */, "", line); sub(/,$/, "", line); gsub(/"/, "", line); return line }
    /"images_per_s":/ { ips = val($0) }
    /"decoded_hardware":/ { hw = val($0) }
    /"decoded_gpu":/ { g = val($0) }
    /"decoded_cpu":/ { c = val($0) }
    /"encoded_gpu":/ { eg = val($0) }
    /"encoded_cpu":/ { ec = val($0) }
    END { printf "%-18s %8.2f images/s  decoded hw/gpu/cpu %s/%s/%s  encoded gpu/cpu %s/%s\n", name, ips, hw, g, c, eg, ec }
  ' "$JDIR/$f.json"
done
echo "== where the time goes: GPU codec, 8 views (reproject_gpu.json)"
awk '
  function val(line) { sub(/^[^:]*: */, "", line); sub(/,$/, "", line); gsub(/"/, "", line); return line }
  /"stages": \{/ { in_st = 1; next }
  in_st && /^    "[a-z]+": \{/ { st = $1; gsub(/[":]/, "", st); order[++n] = st; next }
  in_st && /^  \}/ { in_st = 0 }
  in_st && /"busy_s"/ { busy[st] = val($0) }
  in_st && /"ms_per_image"/ { per[st] = val($0) }
  in_st && /"threads"/ { thr[st] = val($0) }
  in_st && /"utilisation"/ { util[st] = val($0) }
  /"decoders_for_ring":/ { wr = val($0) }
  /"compute_for_output_blocks":/ { wo = val($0) }
  /"encoders_idle":/ { wi = val($0) }
  END {
    printf "%-10s %10s %12s %8s %7s\n", "stage", "busy s", "ms/image", "threads", "util"
    for (i = 1; i <= n; i++) { s = order[i]; printf "%-10s %10.2f %12.3f %8s %6.0f%%\n", s, busy[s], per[s], thr[s], util[s] * 100 }
    printf "waits: decoders for blocks %.2f s, compute for output blocks %.2f s, encoders idle %.2f s\n", wr, wo, wi
  }' "$JDIR/reproject_gpu.json"
