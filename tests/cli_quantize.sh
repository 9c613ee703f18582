#!/usr/bin/env bash
# CLI tests of `pixflow model quantize` and `pixflow model compare`
# (registered by tests/quantize_cli.cmake).
#
#   cli_quantize.sh CASE PIXFLOW SOURCE_DIR WORKDIR
#
# CASE:
#   selfie   MediaPipe selfie segmentation calibrated on 12 frames of the
#            first half of .data/Megamind.avi (a close-up of two characters,
#            what the model is for; frames extracted with ffmpeg here): the
#            QDQ file passes onnx.checker (when /usr/bin/python3 has onnx),
#            the summary's JSON has its keys and counts, the simulated file
#            runs in `pixflow model run`, and `pixflow model compare` on 12
#            frames of the second half gives mask IoU vs FP32 >= 0.90 (0.9475
#            measured with 45/45 frames, percentile 99.99); the QDQ file itself
#            runs in `pixflow model run` (pixflow's int8 path) with the same
#            IoU bound, also against the model written by `model convert`.
#   vtest    the same on .data/vtest.avi (people far away: tiny masks, so
#            the IoU is only printed) with --method minmax and entropy: both
#            write loadable files.
#   errors   bad input refused with a message naming it: no --calib, an
#            unknown method, percentile 0, an empty directory, a missing model,
#            a non-image model.
# Exit 0 pass, 1 fail, 77 skipped (model, ffmpeg or the videos missing).
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
SRC=${3:?source dir}
WORK=${4:?work directory}
export PIXFLOW_LOG=error
PY=/usr/bin/python3
MODEL=$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite
[ -f "$MODEL" ] || { echo "SKIP: $MODEL not installed (scripts/setup.sh)"; exit 77; }

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# frames VIDEO: 24 frames spread over the video, the first 12 into calib/,
# the last 12 into eval/.
frames() {
  command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg missing"; exit 77; }
  [ -f "$1" ] || { echo "SKIP: $1 missing (scripts/fetch-media.sh)"; exit 77; }
  local n step
  n=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets \
      -of csv=p=0 "$1")
  step=$(( n / 24 ))
  [ "$step" -ge 1 ] || step=1
  mkdir -p all calib eval
  ffmpeg -v error -i "$1" -vf "select=not(mod(n\,$step))" -vsync vfr -frames:v 24 all/f_%02d.png ||
    fail "ffmpeg could not extract frames from $1"
  local i=0
  for f in all/f_*.png; do
    i=$((i + 1))
    if [ $i -le 12 ]; then mv "$f" calib/; else mv "$f" eval/; fi
  done
}

checker() {
  if "$PY" -c 'import onnx.checker' 2>/dev/null; then
    "$PY" -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" \
      "$1" || fail "onnx.checker refused $1"
    echo "onnx.checker: $1 ok"
  else
    echo "python3-onnx missing: checker skipped"
  fi
}

# run_model FILE: `pixflow model run` on a random input (numpy), outputs written.
run_model() {
  "$PY" -c "import numpy as np; np.save('in.npy', np.random.rand(1,256,256,3).astype('f4'))" ||
    fail "numpy missing"
  local inp
  inp=$("$PIXFLOW" model inspect "$1" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['inputs'][0]['name'])")
  rm -rf out && "$PIXFLOW" model run "$1" --input "$inp=in.npy" --output-dir out >run.txt 2>&1
}

case "$case_name" in
selfie)
  frames "$SRC/.data/Megamind.avi"
  "$PIXFLOW" model quantize "$MODEL" --calib calib -o int8.onnx --simulated-copy sim2.onnx --json \
    --quiet > q.json || fail "quantize failed"
  "$PY" - q.json <<'PYEOF' || fail "quantize JSON"
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("file", "output", "method", "percentile", "images", "norm", "weights", "activations",
          "nodes", "residual_adds", "left_float", "calib_s", "total_s"):
    assert k in r, k
assert r["images"] == 12 and r["method"] == "percentile" and r["percentile"] == 99.99, r
assert r["nodes"] > 10 and r["weights"] == r["nodes"] and r["activations"] > 10, r
assert "[0,1]" in r["norm"] and "NHWC 256x256" in r["norm"], r["norm"]
print("quantize:", r)
PYEOF
  checker int8.onnx
  "$PIXFLOW" model quantize "$MODEL" --calib 'calib/*.png' -o sim.onnx --simulate --quiet > s.txt ||
    fail "simulated quantize failed"
  grep -q "simulated" s.txt || fail "summary does not say simulated"
  checker sim.onnx
  # --simulated-copy (made with the QDQ file above): the same bytes as --simulate.
  cmp -s sim.onnx sim2.onnx || fail "--simulated-copy differs from --simulate"
  run_model sim.onnx || fail "model run on the simulated file: $(cat run.txt)"
  "$PIXFLOW" model compare "$MODEL" sim.onnx --inputs eval --json --quiet > c.json ||
    fail "compare failed"
  "$PY" - c.json <<'PYEOF' || fail "mask IoU too low"
import json, sys
r = json.load(open(sys.argv[1]))
o = r["outputs"][0]
print("simulated int8 vs FP32 on %d Megamind frames: max |d| %.3f, mean |d| %.4f, mask agreement %.4f, IoU %.4f"
      % (r["images"], o["max_abs"], o["mean_abs"], o["agreement"], o["miou"]))
assert r["images"] == 12 and o["segmentation"] and o["classes"] == 1
assert o["miou"] >= 0.90, o
PYEOF
  if run_model int8.onnx; then
    echo "model run: the QDQ file runs"
    "$PIXFLOW" model compare "$MODEL" int8.onnx --inputs eval --json --quiet > cq.json ||
      fail "compare on QDQ"
    "$PY" - cq.json <<'PYEOF' || fail "mask IoU of the QDQ file too low"
import json, sys
o = json.load(open(sys.argv[1]))["outputs"][0]
print("QDQ int8 run by pixflow vs FP32: mean |d| %.4f, mask agreement %.4f, IoU %.4f"
      % (o["mean_abs"], o["agreement"], o["miou"]))
assert o["miou"] >= 0.90, o
PYEOF
    # The FP32 model written as ONNX: NHWC mask [N, 256, 256, 1] read as 1 class.
    "$PIXFLOW" model convert "$MODEL" -o fp32.onnx || fail "convert"
    "$PIXFLOW" model compare fp32.onnx int8.onnx --inputs eval --calib-count 4 --json --quiet \
      --mean 0 --std 1 > cc.json || fail "compare against the converted FP32 model"
    "$PY" -c "import json,sys; o=json.load(open(sys.argv[1]))['outputs'][0]; assert o['classes'] == 1 and o['miou'] >= 0.9, o" cc.json ||
      fail "compare on the converted model: $(cat cc.json)"
  elif grep -qi "QuantizeLinear\|DequantizeLinear" run.txt; then
    echo "this build does not import Q/DQ yet: $(head -c 300 run.txt)"
  else
    fail "model run on the QDQ file: $(cat run.txt)"
  fi
  ;;
vtest)
  frames "$SRC/.data/vtest.avi"
  for m in minmax entropy; do
    "$PIXFLOW" model quantize "$MODEL" --calib calib -o "sim_$m.onnx" --method $m --simulate \
      --calib-count 6 --quiet > "q_$m.txt" || fail "quantize --method $m"
    grep -q "images      6 " "q_$m.txt" || fail "--calib-count 6 not applied: $(cat "q_$m.txt")"
    "$PIXFLOW" model compare "$MODEL" "sim_$m.onnx" --inputs eval --calib-count 6 --quiet ||
      fail "compare $m"
  done
  ;;
errors)
  mkdir -p empty
  cp "$SRC/.data/astronaut.png" one.png 2>/dev/null || { echo "SKIP: astronaut.png"; exit 77; }
  expect() { # expect EXIT_CODE TEXT -- command...
    local code=$1 text=$2
    shift 3
    "$@" > out.txt 2>&1
    local rc=$?
    [ $rc -eq "$code" ] || fail "'$*' exited $rc, expected $code: $(cat out.txt)"
    grep -qF -- "$text" out.txt || fail "'$*' did not say '$text': $(cat out.txt)"
  }
  expect 2 "--calib" -- "$PIXFLOW" model quantize "$MODEL" -o x.onnx
  expect 2 "'fast'" -- "$PIXFLOW" model quantize "$MODEL" --calib one.png -o x.onnx --method fast
  expect 2 "--percentile '0'" -- "$PIXFLOW" model quantize "$MODEL" --calib one.png -o x.onnx --percentile 0
  expect 2 "--mean '1,2'" -- "$PIXFLOW" model quantize "$MODEL" --calib one.png -o x.onnx --mean 1,2
  expect 1 "empty" -- "$PIXFLOW" model quantize "$MODEL" --calib empty -o x.onnx
  expect 1 "nothere.tflite" -- "$PIXFLOW" model quantize nothere.tflite --calib one.png -o x.onnx
  nonimage=/usr/share/libonnx-testdata/data/node/test_sigmoid/model.onnx
  if [ -f "$nonimage" ]; then
    expect 1 "3 channels" -- "$PIXFLOW" model quantize "$nonimage" --calib one.png -o x.onnx
  else
    echo "$nonimage absent (libonnx-testdata): the non-image model case skipped"
  fi
  [ ! -e x.onnx ] || fail "a refused run wrote x.onnx"
  "$PIXFLOW" model quantize --help | grep -q "ImageNet" || fail "--help"
  "$PIXFLOW" model compare --help | grep -q "mask > 0.5" || fail "compare --help"
  ;;
*) fail "unknown case $case_name" ;;
esac
echo "PASS $case_name"
