#!/usr/bin/env bash
# The plan cache on the GPU machine: cold (empty cache) vs warm start-up.
#   bash bench/plan_cache.sh BUILD_DIR OUT_DIR [SEGMENT_INPUT]
# 1. `pixflow model run` of DeepLabV3-ResNet50 and LRASPP-MobileNetV3
#    (exported by bench/nn_peer_torch.py's own functions: random weights,
#    512x512) and the selfie model, fp16 on cuda:0, batch 1: run_ms is the
#    first run, so it includes planning (and the CUDA graph's capture);
#    cold, then warm (the cache the cold run wrote), then --no-cache.
# 2. `pixflow segment INPUT -o null` (throughput mode, batch 64): whole-run
#    fps cold and warm, and the steady state from two warm runs of
#    different lengths: (N - n) / (T_N - T_n) over --frames n and all N,
#    which cancels start-up. Prints one table.
set -uo pipefail
build=${1:?build dir}
out=${2:?out dir}
seg_in=${3:-.data/bench/segment_1080p.h264}
mkdir -p "$out/plan_cache"
d=$(cd "$out/plan_cache" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
px=$build/pixflow
export PIXFLOW_LOG=${PIXFLOW_LOG:-warn}

python3 - "$d" "$here/bench" <<'PY' || { echo "plan_cache: export failed"; exit 1; }
import sys, os, numpy as np
sys.path.insert(0, sys.argv[2])
import nn_peer_torch as p
for name in p.MODELS:
    path = os.path.join(sys.argv[1], name + ".onnx")
    if not os.path.exists(path):
        p.export(p.build(name), path)
    np.save(os.path.join(sys.argv[1], name + "_in_b1.npy"), p.make_input(1))
PY
python3 -c "import numpy as np; np.save('$d/selfie_in.npy', np.random.rand(1,256,256,3).astype(np.float32))"
selfie=$here/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite

j() { python3 -c "import json,sys; o=json.load(open(sys.argv[1])); print(' '.join(str(o.get(k)) for k in sys.argv[2:]))" "$@"; }

: >"$d/model.txt"
for m in deeplabv3 lraspp selfie; do
  if [ "$m" = selfie ]; then f=$selfie; in="$d/selfie_in.npy"; else f="$d/$m.onnx"; in="$d/${m}_in_b1.npy"; fi
  export PIXFLOW_CACHE_DIR="$d/cache_$m"
  rm -rf "$PIXFLOW_CACHE_DIR"
  for pass in cold warm nocache; do
    extra=""; [ "$pass" = nocache ] && extra=--no-cache
    rm -rf "$d/o_$m"
    if "$px" model run "$f" --input "$in" --output-dir "$d/o_$m" --device cuda:0 \
         --precision fp16 --json $extra >"$d/${m}_$pass.json" 2>"$d/${m}_$pass.err"; then
      echo "$m $pass $(j "$d/${m}_$pass.json" run_ms convs_tuned convs_cached)" >>"$d/model.txt"
    else
      echo "$m $pass FAILED $(tail -1 "$d/${m}_$pass.err")" >>"$d/model.txt"
    fi
  done
done

: >"$d/segment.txt"
if [ -f "$seg_in" ]; then
  export PIXFLOW_CACHE_DIR="$d/cache_segment"
  rm -rf "$PIXFLOW_CACHE_DIR"
  seg() { # label [args]
    local label=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    "$px" segment "$seg_in" -o null --device cuda:0 --quiet --batch 64 --json "$@" \
      >"$d/seg_$label.json" 2>"$d/seg_$label.err"
    t1=$(date +%s.%N)
    echo "$label $(j "$d/seg_$label.json" frames fps elapsed_s) $(python3 -c "print($t1 - $t0)")" >>"$d/segment.txt"
  }
  seg cold
  seg warm
  seg warm2
  seg warm_short --frames 300
  seg warm_short2 --frames 300
  unset PIXFLOW_CACHE_DIR
fi

python3 - "$d/model.txt" "$d/segment.txt" <<'PY'
import sys
print("plan cache: time to the first output (model run, fp16, batch 1, cuda:0; ms incl. planning)")
print("%-10s %12s %12s %12s %8s" % ("model", "cold", "warm", "no-cache", "convs"))
rows = {}
for l in open(sys.argv[1]):
    w = l.split()
    rows.setdefault(w[0], {})[w[1]] = w[2:]
for m, r in rows.items():
    def ms(k):
        v = r.get(k, ["?"])
        return v[0] if v[0] != "FAILED" else "FAILED"
    conv = r.get("cold", ["", "?"])
    print("%-10s %12s %12s %12s %8s" % (m, ms("cold"), ms("warm"), ms("nocache"),
          "%s/%s" % (conv[1] if len(conv) > 1 else "?", r.get("warm", ["", "", "?"])[2] if len(r.get("warm", [])) > 2 else "?")))
seg = {}
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) >= 4 and w[1] != "None":
        seg[w[0]] = (float(w[1]), float(w[2]), float(w[3]))
if seg:
    print("segment -o null, batch 64: frames, whole-run fps, elapsed s")
    for k, v in seg.items():
        print("  %-12s %6d frames %8.1f fps %7.3f s" % (k, v[0], v[1], v[2]))
    if "warm" in seg and "warm_short" in seg:
        longs = [seg[k] for k in ("warm", "warm2") if k in seg]
        shorts = [seg[k] for k in ("warm_short", "warm_short2") if k in seg]
        tl = min(v[2] for v in longs); ts = min(v[2] for v in shorts)
        n = longs[0][0] - shorts[0][0]
        ss = n / (tl - ts) if tl > ts else float("nan")
        best = max(v[1] for v in longs)
        print("  steady state (%d - %d frames) / (%.3f - %.3f s) = %.1f fps; warm whole run %.1f fps = %.1f%% of it"
              % (longs[0][0], shorts[0][0], tl, ts, ss, best, 100 * best / ss))
PY
