#!/usr/bin/env bash
# CLI tests of `pixflow faces` (registered by tests/faces_cli.cmake).
#
#   faces_cli.sh CASE PIXFLOW SOURCE_DIR WORKDIR
#
# CASE: image video messi blank streams bad_model. The JSON Lines are checked with
# Debian's python3 (/usr/bin/python3). Models come from pf_model_find
# ($PIXFLOW_MODELS or the source tree's node_modules, installed by
# scripts/setup.sh). Exit 0 pass, 1 fail, 77 skipped (models, images or
# ffmpeg missing).
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
SRC=${3:?source dir}
WORK=${4:?work directory}
export PIXFLOW_LOG=error
PY=/usr/bin/python3
ASTRO=$SRC/.data/astronaut.png
MESSI=$SRC/.data/messi5.jpg

lm=${PIXFLOW_MODELS:-$SRC/node_modules/@mediapipe/face_mesh}/face_landmark.tflite
[ -f "$lm" ] || [ -f "$SRC/node_modules/@mediapipe/face_mesh/face_landmark.tflite" ] ||
  { echo "SKIP: face_landmark.tflite not installed (scripts/setup.sh)"; exit 77; }
[ -f "$ASTRO" ] && [ -x "$PY" ] || { echo "SKIP: $ASTRO or $PY missing"; exit 77; }

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1

# check_jsonl FILE PYTHON-EXPRESSIONS: recs = the parsed records.
check_jsonl() {
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for r in recs:
    assert set(r) == {"stream", "frame", "pts", "faces"}, r.keys()
    for f in r["faces"]:
        assert set(f) == {"id", "score", "box", "keypoints", "landmarks"}, f.keys()
        assert len(f["box"]) == 4 and len(f["keypoints"]) == 6 and len(f["landmarks"]) == 468
        assert all(len(k) == 2 for k in f["keypoints"]) and all(len(p) == 3 for p in f["landmarks"])
exec(sys.argv[2])
PYEOF
}

case $case_name in
image)
  "$PIXFLOW" faces "$ASTRO" --json-out a.jsonl -o a.png --quiet || exit 1
  [ -s a.png ] || { echo "FAIL: no drawing"; exit 1; }
  # One face, where the hand-measured box is (180,78)-(274,172); eyes inside.
  check_jsonl a.jsonl '
assert len(recs) == 1 and recs[0]["stream"] == 0 and recs[0]["frame"] == 0
fs = recs[0]["faces"]; assert len(fs) == 1, len(fs)
x0, y0, x1, y1 = fs[0]["box"]
assert abs(x0 - 180) < 12 and abs(y0 - 78) < 12 and abs(x1 - 274) < 12 and abs(y1 - 172) < 12, fs[0]["box"]
for i in (33, 133, 362, 263, 13, 14):
    x, y, z = fs[0]["landmarks"][i]; assert 180 <= x <= 274 and 78 <= y <= 172, (i, x, y)
' || exit 1
  ;;
video)
  command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg"; exit 77; }
  # 15 frames of a 320x320 window sliding 6 px a frame: the face moves left.
  ffmpeg -loglevel error -y -loop 1 -i "$ASTRO" -vf "crop=320:320:20+6*n:0" -frames:v 15 \
    -r 15 -pix_fmt yuv420p -c:v mpeg4 -q:v 2 clip.mp4 || exit 1
  "$PIXFLOW" faces clip.mp4 --json-out v.jsonl -o v.mp4 --detect-every 4 --json >sum.json || exit 1
  check_jsonl v.jsonl '
assert [r["frame"] for r in recs] == list(range(15)), [r["frame"] for r in recs]
assert all(len(r["faces"]) == 1 for r in recs), [len(r["faces"]) for r in recs]
assert {r["faces"][0]["id"] for r in recs} == {1}
pts = [r["pts"] for r in recs]; assert pts == sorted(pts) and pts[0] is not None
xs = [r["faces"][0]["box"][0] for r in recs]; assert xs[0] - xs[-1] > 60, xs
' || exit 1
  "$PY" -c 'import json,sys; s=json.load(open("sum.json")); assert s["frames"]==15 and s["faces"]==15 and s["ok"], s' || exit 1
  n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 v.mp4)
  [ "$n" = 15 ] || { echo "FAIL: v.mp4 has $n frames"; exit 1; }
  ;;
messi)
  [ -f "$MESSI" ] || { echo "SKIP: no messi5.jpg"; exit 77; }
  "$PIXFLOW" faces "$MESSI" --detector face_detection_full --json-out m.jsonl -o m.png --quiet || exit 1
  # The player's face (the blurred crowd is not found).
  check_jsonl m.jsonl '
fs = recs[0]["faces"]; assert len(fs) == 1, len(fs)
x0, y0, x1, y1 = fs[0]["box"]; cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
assert 215 <= cx <= 270 and 85 <= cy <= 140, fs[0]["box"]
' || exit 1
  ;;
blank)
  command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg"; exit 77; }
  ffmpeg -loglevel error -y -f lavfi -i color=c=gray:s=640x480 -frames:v 1 blank.png || exit 1
  "$PIXFLOW" faces blank.png --json-out b.jsonl --quiet || exit 1
  check_jsonl b.jsonl 'assert len(recs) == 1 and recs[0]["faces"] == []' || exit 1
  ;;
streams)
  # Two streams in one run (batched), then --latency (one tracker each):
  # a record per stream, the summary's fields, the trace's spans.
  "$PIXFLOW" faces "$ASTRO" "$ASTRO" --json-out s.jsonl --stats --trace t.json --json \
    >sum.json || exit 1
  check_jsonl s.jsonl '
assert sorted(r["stream"] for r in recs) == [0, 1], recs
assert all(len(r["faces"]) == 1 and r["faces"][0]["id"] == 1 for r in recs)
' || exit 1
  "$PY" - <<'PYEOF' || exit 1
import json
s = json.load(open("sum.json"))
assert s["streams"] == 2 and s["frames"] == 2 and s["faces"] == 2 and s["ok"], s
assert s["mode"] == "throughput" and s["device"] == "cpu" and s["batches"] == 1, s
assert s["latency_p99_ms"] >= s["latency_p50_ms"] > 0, s
t = json.load(open("t.json"))
spans = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("name") == "process"]
assert len(spans) == 2, len(spans)
PYEOF
  # --preload: the same records, frames read before the run; no drawing.
  "$PIXFLOW" faces "$ASTRO" "$ASTRO" --preload --json-out p.jsonl --quiet >/dev/null || exit 1
  cmp -s s.jsonl p.jsonl || { echo "FAIL: --preload changed the records"; exit 1; }
  "$PIXFLOW" faces "$ASTRO" --preload -o x.png --quiet 2>/dev/null
  [ $? = 2 ] || { echo "FAIL: --preload with -o not refused as usage"; exit 1; }
  "$PIXFLOW" faces "$ASTRO" "$ASTRO" --latency --json --quiet >lat.json || exit 1
  "$PY" -c 'import json; s=json.load(open("lat.json")); assert s["mode"]=="latency" and s["frames"]==2 and s["batches"]==2, s' || exit 1
  if "$PIXFLOW" faces "$ASTRO" --fp16 --quiet 2>err.txt; then echo "FAIL: fp16 on the CPU"; exit 1; fi
  grep -q "fp16 needs a CUDA device" err.txt || { echo "FAIL: message: $(cat err.txt)"; exit 1; }
  ;;
bad_model)
  det=$SRC/node_modules/@mediapipe/face_detection/face_detection_short_range.tflite
  [ -f "$det" ] || { echo "SKIP: no $det"; exit 77; }
  if "$PIXFLOW" faces "$ASTRO" --landmarks "$det" --quiet 2>err.txt; then
    echo "FAIL: a detector accepted as the landmark model"; exit 1
  fi
  grep -q "\[N,192,192,3\]" err.txt || { echo "FAIL: message: $(cat err.txt)"; exit 1; }
  ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
echo "ok $case_name"
