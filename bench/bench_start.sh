#!/usr/bin/env bash
# Start-up with a cold vs a warm plan cache on the GPU machine (issue 18's
# goals: `pixflow segment` reaches its first frame <= 200 ms after the model
# is loaded with a warm cache, and the 3000-frame run's whole-run fps is
# within 5% of its steady state). One command, one table:
#   bash bench/bench_start.sh [BUILD_DIR [INPUT [DEVICE]]]
# defaults: build, .data/bench/segment_1080p.h264 (3000 frames 1080p), cuda:0.
# 1. `pixflow model run` fp16 (fp32 on cpu) batch 1 of the selfie model and, when PyTorch
#    can export them (bench/nn_peer_torch.py), DeepLabV3-ResNet50 and
#    LRASPP-MobileNetV3 at 512x512: run_ms = the loaded model's first output
#    (planning and graph capture included). cold = an empty cache (the run
#    fills it), warm = the next run, no-cache = --no-cache.
# 2. `pixflow bench segment INPUT` (-o null, throughput mode, batch 64): time
#    to the first frame from the start and after the model was loaded,
#    whole-run fps (the job's figure) and steady-state fps after the warm-up;
#    cold (--no-cache: every conv choice timed), then an empty cache, then warm.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
seg_in=${2:-$here/.data/bench/segment_1080p.h264}
dev=${3:-cuda:0}
prec=fp16; [ "$dev" = cpu ] && prec=fp32
px=$build/pixflow
[ -x "$px" ] || { echo "bench_start: $px is not built"; exit 1; }
[ -f "$seg_in" ] || { echo "bench_start: $seg_in absent (scripts/setup.sh or bench/ makes it)"; exit 1; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
export PIXFLOW_LOG=${PIXFLOW_LOG:-warn}
py=${PYTHON:-$(command -v python3)}

models="selfie=$here/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite"
"$py" -c "import numpy as np; np.save('$d/selfie_in.npy', np.random.rand(1,256,256,3).astype(np.float32))"
if "$py" - "$d" "$here/bench" <<'PY' 2>"$d/export.err"; then
import sys, os, numpy as np
sys.path.insert(0, sys.argv[2])
import nn_peer_torch as p
for name in p.MODELS:
    p.export(p.build(name), os.path.join(sys.argv[1], name + ".onnx"))
    np.save(os.path.join(sys.argv[1], name + "_in.npy"), p.make_input(1))
PY
  for m in deeplabv3 lraspp; do [ -f "$d/$m.onnx" ] && models="$models $m=$d/$m.onnx"; done
else
  echo "bench_start: no DeepLabV3/LRASPP (export failed: $(tail -1 "$d/export.err"))"
fi

: >"$d/rows"
for mf in $models; do
  m=${mf%%=*}; f=${mf#*=}
  export PIXFLOW_CACHE_DIR="$d/cache_$m"
  for pass in cold warm nocache; do
    extra=(); [ $pass = nocache ] && extra=(--no-cache)
    rm -rf "$d/o"
    if "$px" model run "$f" --input "$d/${m}_in.npy" --output-dir "$d/o" --device "$dev" \
         --precision "$prec" --json "${extra[@]}" >"$d/m.json" 2>"$d/m.err"; then
      echo "model_$m $pass $("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_ms"])' "$d/m.json")" >>"$d/rows"
    else
      echo "model_$m $pass FAILED"  >>"$d/rows"
      echo "bench_start: model run $m ($pass): $(tail -1 "$d/m.err")"
    fi
  done
done

export PIXFLOW_CACHE_DIR="$d/cache_segment"
for pass in nocache cold warm; do
  extra=(); [ $pass = nocache ] && extra=(--no-cache)
  if "$px" bench segment "$seg_in" --device "$dev" --batch 64 --warmup 256 --json \
       "${extra[@]}" >"$d/s.json" 2>"$d/s.err"; then
    "$py" - "$d/s.json" "$pass" >>"$d/rows" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
for k in ("first_frame_ms", "first_frame_after_model_ms", "whole_run_fps", "steady_fps",
          "whole_run_over_steady", "frames"):
    print("segment_%s %s %s" % (k, sys.argv[2], o[k]))
PY
  else
    echo "segment_first_frame_ms $pass FAILED" >>"$d/rows"
    echo "bench_start: bench segment ($pass): $(tail -1 "$d/s.err")"
  fi
done

"$py" - "$d/rows" "$dev" "$seg_in" <<'PY'
import sys
rows = {}
for l in open(sys.argv[1]):
    k, p, v = l.split(None, 2)
    rows.setdefault(k, {})[p] = v.strip()
def f(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return (v or "-")[:12]
    if x == int(x) and abs(x) >= 10:
        return "%d" % x
    return "%.3f" % x if abs(x) < 10 else "%.1f" % x
goals = {"segment_first_frame_after_model_ms": "<= 200 (warm)",
         "segment_whole_run_over_steady": ">= 0.95 (warm)"}
print("start-up, %s; segment input %s (failures: see the .err files' last lines above)" % (sys.argv[2], sys.argv[3]))
print("%-40s %12s %12s %12s  %s" % ("figure", "no-cache", "cold", "warm", "goal"))
for k, r in rows.items():
    name = ("model run %s: first output ms" % k[6:]) if k.startswith("model_") else \
        k.replace("segment_", "segment: ")
    print("%-40s %12s %12s %12s  %s" % (name, f(r.get("nocache")), f(r.get("cold")),
                                       f(r.get("warm")), goals.get(k, "")))
PY
