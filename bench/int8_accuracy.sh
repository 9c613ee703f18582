#!/usr/bin/env bash
# INT8 accuracy of post-training quantization (issue 18), on the GPU machine:
#
#   bash bench/int8_accuracy.sh BUILD_DIR OUT_DIR [CALIB_VIDEO] [EVAL_VIDEO]
#
# Calibration frames come from one video, evaluation frames from another
# (defaults .data/vtest.avi and .data/Megamind.avi; QUANT_FRAMES each, default
# 6, spread over the video, bench/quant_frames.py with OpenCV). Calibration and
# comparison run on the CPU (DeepLabV3 at 512x512 is the slow part: ~1 s per
# image and pass on 16 cores; QUANT_MODELS="selfie lraspp" leaves it out); the
# whole script is meant to stay near 90 s. For DeepLabV3-ResNet50 and
# LRASPP-MobileNetV3 (bench/quant_export.py: torchvision's pretrained
# weights when they are in ~/.cache/torch, else random weights - then the
# argmax figures mean little, and the table says "random") and the MediaPipe
# selfie model:
#   1. `pixflow model quantize` (percentile 99.99; CPU calibration) writes the
#      QDQ file and, from the same calibration (--simulated-copy), the same
#      quantization as float ops;
#   2. `pixflow model compare` FP32 vs the simulated file on the evaluation
#      frames: output error, argmax pixel agreement, mIoU (selfie: mask IoU);
#      then FP32 vs the QDQ file itself where this build imports Q/DQ;
#   3. bench/quant_check.py: onnx.checker and onnxruntime on the QDQ file
#      (it loads and runs elsewhere), its figures vs onnxruntime FP32 and its
#      distance to pixflow's simulation.
# QUANT_METHODS (default "percentile") adds entropy/minmax rows;
# QUANT_MODELS (default "selfie lraspp deeplabv3") picks models. Rows are
# printed as each model finishes.
# Everything lands in OUT_DIR (JSON per step) and one table on stdout.
set -uo pipefail
build=${1:?build dir}
out=${2:?out dir}
here=$(cd "$(dirname "$0")/.." && pwd)
calib_video=${3:-$here/.data/vtest.avi}
eval_video=${4:-$here/.data/Megamind.avi}
mkdir -p "$out"
out=$(cd "$out" && pwd)
pixflow=$build/pixflow
export PIXFLOW_LOG=error
py=python3

# Frames already in OUT_DIR/calib and OUT_DIR/eval are kept (made elsewhere,
# e.g. with ffmpeg).
models=${QUANT_MODELS:-selfie lraspp deeplabv3}
methods_all=${QUANT_METHODS:-percentile}
nframes=${QUANT_FRAMES:-6}
[ -n "$(ls "$out/calib" 2>/dev/null)" ] ||
  $py "$here/bench/quant_frames.py" "$calib_video" "$out/calib" "$nframes" || exit 1
[ -n "$(ls "$out/eval" 2>/dev/null)" ] ||
  $py "$here/bench/quant_frames.py" "$eval_video" "$out/eval" "$nframes" || exit 1
if [ "$models" != selfie ]; then
  $py "$here/bench/quant_export.py" --out "$out" > "$out/export.jsonl" || { echo "export failed"; exit 1; }
  cat "$out/export.jsonl"
fi

case " $models " in *" selfie "*) ;; *) false ;; esac &&
"$pixflow" model convert "$here/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" \
  -o "$out/selfie.onnx"

weights_of() { $py -c "import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r['name'] == sys.argv[2]: print(r['weights'])" "$out/export.jsonl" "$1"; }

summary() { # compare.json -> "agreement% mIoU mean|d|"
  $py -c "import json,sys; r=json.load(open(sys.argv[1])); o=r['outputs'][0]
print('%.3f%%  %.4f  %.4g' % (100*o.get('agreement',0), o.get('miou',0), o['mean_abs']))" "$1"
}

printf "\n%-10s %-10s %-11s %-8s %-34s %s\n" model weights method file "agreement  mIoU/IoU  mean|d|" "time"
for m in $models; do
  fp32=$out/$m.onnx     # what onnxruntime runs as the reference
  src=$fp32             # what pixflow quantizes and compares against
  w=pretrained
  norm=imagenet
  if [ $m = selfie ]; then
    norm=01             # TFLite: pixflow's default preprocessing for it is [0,1] too
    src=$here/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite
  else
    w=$(weights_of $m)
  fi
  for meth in $methods_all; do
    q=$out/${m}_${meth}_int8.onnx s=$out/${m}_${meth}_sim.onnx
    t0=$(date +%s%N)
    "$pixflow" model quantize "$src" --calib "$out/calib" -o "$q" --simulated-copy "$s" \
      --method $meth --json --quiet > "$out/${m}_${meth}_quantize.json" ||
      { echo "$m: quantize failed"; continue; }
    t=$(( ($(date +%s%N) - t0) / 1000000 ))
    "$pixflow" model compare "$src" "$s" --inputs "$out/eval" --json --quiet \
      > "$out/${m}_${meth}_compare_sim.json" &&
      printf "%-10s %-10s %-11s %-8s %-34s quantize %d ms\n" $m $w $meth simulated \
        "$(summary "$out/${m}_${meth}_compare_sim.json")" "$t"
    if "$pixflow" model compare "$src" "$q" --inputs "$out/eval" --json --quiet \
         > "$out/${m}_${meth}_compare_qdq.json" 2> "$out/${m}_${meth}_compare_qdq.err"; then
      printf "%-10s %-10s %-11s %-8s %-34s\n" $m $w $meth "qdq(pf)" "$(summary "$out/${m}_${meth}_compare_qdq.json")"
    else
      echo "$m $meth: pixflow does not run the QDQ file: $(head -c 200 "$out/${m}_${meth}_compare_qdq.err")"
    fi
    if [ $meth = percentile ]; then
      $py "$here/bench/quant_check.py" --fp32 "$fp32" --int8 "$q" --sim "$s" --images "$out/eval" \
        --norm $norm --json > "$out/${m}_ort.json" 2> "$out/${m}_ort.err" &&
        $py -c "import json,sys; r=json.load(open(sys.argv[1])); o=r['outputs'][0]
print('%-10s %-10s %-11s %-8s %.3f%%  %.4f  %.4g   (onnxruntime %s; %d Q, %d DQ; vs pixflow sim mean|d| %.3g)' % (
  sys.argv[2], sys.argv[3], 'percentile', 'qdq(ort)', 100*o.get('agreement',0), o.get('miou',0),
  o['mean_abs'], ','.join(r['providers']), r['quantize_linear'], r['dequantize_linear'],
  o.get('vs_sim_mean_abs', -1)))" "$out/${m}_ort.json" $m $w ||
        echo "$m: quant_check.py failed: $(tail -3 "$out/${m}_ort.err")"
    fi
  done
done
echo
echo "JSON per step in $out; frames: calib $calib_video, eval $eval_video"
