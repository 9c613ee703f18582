#!/usr/bin/env bash
# `pixflow faces` at 1080p with 1, 4 and 16 faces per frame (issue 14's
# benchmark). One command; JSON Lines out (one object per run, then one
# "floor" object per case), so the results tabulate directly.
#
#   bench/bench_faces.sh [--pixflow BIN] [--device SPEC] [--frames F] [--streams N]
#                        [--faces "1 4 16"] [--precisions "fp32 fp16"]
#                        [--graphs "graph no-graph"] [--modes "throughput preload latency"]
#                        [--out FILE.jsonl]
#
# Inputs: bench/faces_clip.py writes 1920x1080 Y4M clips (the astronaut's
# face tiled, drifting 2 px a frame) into a temporary folder: no ffmpeg
# needed. Per faces count, precision and graph setting:
#   throughput: N streams (default 16) of the clip in one `pixflow faces`
#               run (batched across streams), --max-faces = the faces count;
#               fps_steady = frames/s after the first 3 batches (plans and
#               graphs made), gpu_ms_per_batch = CUDA events around the
#               device chain (uploads excluded);
#   preload:    the throughput run with --preload: every frame read first
#               (on CUDA into device memory), so the figure is the tracker's
#               own (no Y4M reading, no uploads: as frames decoded on the GPU
#               by NVDEC would arrive);
#   latency:    one stream, --latency (batch 1): p50/p99 per frame.
# Floor per case (printed as "kind": "floor"): FLOPs of the detector (one
# run per frame) plus the landmark model (max_faces runs, the padded batch)
# from `pixflow model inspect --json`, over the tensor rate, and the bytes a
# frame must move (the I420 frame up over PCIe; on the device the I420 read,
# the RGB written and read once, the crops written and read, the weights
# read) over the bandwidths.
# The rates default to an H100 SXM's data sheet (dense fp16 989 TFLOP/s,
# fp32 without TF32 67 TFLOP/s, HBM3 3.35 TB/s, PCIe 5 x16 ~55 GB/s in
# practice); override with TENSOR_FP16, FP32_RATE, HBM_BPS, PCIE_BPS.
# On the CPU (--device cpu) run with small --frames and --streams.
set -euo pipefail
bin=./build/pixflow
dev=cuda:0
frames=60
streams=16
faces_list="1 4 16"
precisions="fp32 fp16"
graphs="graph no-graph"
modes="throughput preload latency"
out=/dev/stdout
while [ $# -gt 0 ]; do
  case "$1" in
    --pixflow) bin=$2; shift 2 ;;
    --device) dev=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --faces) faces_list=$2; shift 2 ;;
    --precisions) precisions=$2; shift 2 ;;
    --graphs) graphs=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "bench_faces: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
py=
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import numpy' 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "bench_faces: needs python3 with numpy (or PYTHON=...)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$out" = /dev/stdout ] || : >"$out"
case $dev in cpu*) precisions=fp32; graphs=graph ;; esac

emit() { printf '%s\n' "$1" >>"$out"; }

# run KIND FACES PREC GRAPH ARGS...: one pixflow run, its --json summary
# annotated with the case.
run() {
  local kind=$1 nf=$2 prec=$3 graph=$4
  shift 4
  local extra=(--max-faces "$nf")
  [ "$prec" = fp16 ] && extra+=(--fp16)
  [ "$graph" = no-graph ] && extra+=(--no-graph)
  [ "$nf" = 16 ] && extra+=(--detector face_detection_full)
  if ! "$bin" faces "$@" --device "$dev" "${extra[@]}" --stats --json --quiet \
      >"$tmp/sum.json" 2>"$tmp/err.txt"; then
    emit "{\"kind\": \"$kind\", \"faces\": $nf, \"precision\": \"$prec\", \"graph\": \"$graph\", \"error\": $("$py" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()[-400:]))' "$tmp/err.txt")}"
    return 0
  fi
  emit "$("$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
d.update(kind=sys.argv[2], faces_in_frame=int(sys.argv[3]), graph_setting=sys.argv[4])
print(json.dumps(d))' "$tmp/sum.json" "$kind" "$nf" "$graph")"
}

flops() { "$bin" model inspect "$1" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["flops"])'; }
det_short=$src/node_modules/@mediapipe/face_detection/face_detection_short_range.tflite
det_full=$src/node_modules/@mediapipe/face_detection/face_detection_full_range.tflite
lm=${PF_FACE_LANDMARK_MODEL:-$src/node_modules/@mediapipe/face_mesh/face_landmark.tflite}
f_short=$(flops "$det_short")
f_full=$(flops "$det_full")
f_lm=$(flops "$lm")

for nf in $faces_list; do
  clip=$tmp/faces$nf.y4m
  "$py" "$here/faces_clip.py" "$src/.data/astronaut.png" "$nf" "$frames" "$clip"
  inputs=()
  for ((i = 0; i < streams; i++)); do inputs+=("$clip"); done
  for prec in $precisions; do
    for graph in $graphs; do
      for mode in $modes; do
        case $mode in
          throughput) run throughput "$nf" "$prec" "$graph" "${inputs[@]}" ;;
          preload) run preload "$nf" "$prec" "$graph" "${inputs[@]}" --preload ;;
          latency) run latency "$nf" "$prec" "$graph" "$clip" --latency ;;
          *) echo "bench_faces: unknown mode $mode" >&2; exit 2 ;;
        esac
      done
    done
  done
  det=$f_short
  [ "$nf" = 16 ] && det=$f_full
  emit "$("$py" -c '
import json, os, sys
nf, det, lm = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
fp16 = float(os.environ.get("TENSOR_FP16", 989e12))
fp32 = float(os.environ.get("FP32_RATE", 67e12))
hbm = float(os.environ.get("HBM_BPS", 3.35e12))
pcie = float(os.environ.get("PCIE_BPS", 55e9))
flops = det + nf * lm
frame = 1920 * 1080 * 3 // 2                # I420, as pixflow faces reads videos
rgb = 1920 * 1080 * 3                       # converted on the device: written once
crops = nf * 192 * 192 * 3 * 4 * 2          # written, then read by the model
weights = 4 * (0.15e6 + 0.6e6)              # both models, fp32 (about: params x 4 B)
dev_bytes = frame + 2 * rgb + crops + weights
print(json.dumps({"kind": "floor", "faces": nf, "flops_per_frame": flops,
  "detector_flops": det, "landmark_flops_per_face": lm,
  "compute_us_fp16": flops / fp16 * 1e6, "compute_us_fp32": flops / fp32 * 1e6,
  "device_bytes": dev_bytes, "hbm_us": dev_bytes / hbm * 1e6,
  "upload_bytes": frame, "pcie_us": frame / pcie * 1e6,
  "rates": {"fp16": fp16, "fp32": fp32, "hbm": hbm, "pcie": pcie}}))' "$nf" "$det" "$f_lm")"
done
