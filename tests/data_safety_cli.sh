#!/usr/bin/env bash
# CLI tests of issue 13's data safety (registered by tests/data_safety_cli.cmake):
# no input is ever destroyed, no output is ever half-written.
#
#   data_safety_cli.sh CASE PIXFLOW SRC WORKDIR
#
# CASE:
#   same_file     segment/reproject/run/model run refuse an output that is an
#                 input (same file, hard link, symlink, --mask-out, --trace, an
#                 output directory that is the input directory), naming both,
#                 before anything is written; the input is byte-identical after
#   same_stem     segment refuses two inputs whose outputs share a name
#   overwrite     -n refuses an existing output (file untouched), -y and the
#                 default overwrite, -y -n is a usage error (segment, reproject,
#                 run, model run)
#   model         segment --model with the face detector is refused, naming
#                 the shapes
#   full_disk     a file size limit (as a full disk) in the middle of a video
#                 and an image: exit 1 naming the file, previous files intact
#   concurrent    two segment runs writing one path at once leave one run's
#                 complete output, never a mix
#   signal        two SIGINTs to a running segment: exit 130, the summary is
#                 printed, the MP4 under the final name is complete (every
#                 frame of the summary, ffprobe reads it), no temporary is left;
#                 SIGKILL mid-run leaves the previous file under the name intact
# Inputs are generated with ffmpeg (installed by scripts/setup.sh); the model
# comes from npm. Exit 0 pass, 1 fail (the failing check is printed), 77 skip.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
SRC=${3:?source tree}
WORK=${4:?work directory}
export PIXFLOW_DEVICE=cpu
export PIXFLOW_MODELS=$SRC
export PIXFLOW_LOG=error
SELFIE=$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite
FACE=$SRC/node_modules/@mediapipe/face_detection/face_detection_short_range.tflite

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect_status WANT DESCRIPTION COMMAND...: stdout/stderr -> out.txt/err.txt
expect_status() {
  local want=$1 what=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$what: exit status $got, expected $want"
    sed 's/^/  stderr: /' err.txt >&2
    return 1
  fi
  return 0
}
expect_err() { # expect_err DESCRIPTION TEXT: err.txt contains TEXT
  grep -qF -- "$2" err.txt || { fail "$1: stderr lacks '$2'"; sed 's/^/  stderr: /' err.txt >&2; }
}
same_bytes() { # same_bytes DESCRIPTION FILE COPY
  cmp -s "$2" "$3" || fail "$1: $2 was changed"
}
no_temporaries() {
  local left
  left=$(find . -name '.*.pftmp-*' | head -3)
  [ -z "$left" ] || fail "$1: temporary files left: $left"
}
need() {
  for f in "$@"; do
    [ -e "$f" ] || { echo "SKIP: $f is missing"; exit 77; }
  done
  command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg is missing"; exit 77; }
}
video() { # video FILE FRAMES
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=160x120:rate=25" -frames:v "$2" \
    -pix_fmt yuv420p "$1"
}
image() { # image FILE
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=64x48" -frames:v 1 "$1"
}
equirect() { # equirect FILE
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=256x128" -frames:v 1 "$1"
}
# A float32 .npy of shape (3, 4, 5), zeros (what test_abs takes).
npy345() {
  local dict="{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 5), }"
  local hlen=$(( ( (10 + ${#dict} + 1 + 63) / 64) * 64 - 10 ))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((hlen & 255)))\\x$(printf %02x $((hlen >> 8)))"
    printf '%s' "$dict"
    printf '%*s' $((hlen - ${#dict} - 1)) ''
    printf '\n'
    head -c 240 /dev/zero
  } >"$1"
}

case $case_name in
same_file)
  need "$SELFIE"
  video in.mp4 30
  cp in.mp4 orig.mp4
  ln in.mp4 hard.mp4
  ln -s in.mp4 soft.mp4
  for o in in.mp4 hard.mp4 ./soft.mp4; do
    expect_status 1 "segment -o $o" "$PIXFLOW" segment in.mp4 -o "$o" --quiet &&
      expect_err "segment -o $o" "is the input in.mp4"
  done
  expect_status 1 "segment --mask-out input" "$PIXFLOW" segment in.mp4 -o out.mp4 \
    --mask-out soft.mp4 --quiet && expect_err "--mask-out" "mask soft.mp4 is the input in.mp4"
  expect_status 1 "segment --trace input" "$PIXFLOW" segment in.mp4 -o out.mp4 --trace hard.mp4 \
    --quiet && expect_err "--trace" "trace hard.mp4 is the input in.mp4"
  same_bytes "segment" in.mp4 orig.mp4
  [ ! -e out.mp4 ] || fail "segment wrote out.mp4 although it refused"
  # An output directory that is the input directory: outputs named like the inputs.
  mkdir shots
  image shots/a.png
  image shots/b.jpg
  cp -r shots shots.orig
  expect_status 1 "segment shots/ -o shots/" "$PIXFLOW" segment shots/ -o shots/ --quiet &&
    expect_err "segment dir" "is the input shots/"
  expect_status 1 "segment masks into the input dir" "$PIXFLOW" segment shots/a.png -o x.png \
    --mask-out shots/a.png --quiet
  for f in a.png b.jpg; do same_bytes "segment dir" shots/$f shots.orig/$f; done
  # The background image and the model are inputs too.
  expect_status 1 "segment -o background" "$PIXFLOW" segment shots/a.png --background \
    shots/b.jpg -o shots/b.jpg --quiet && expect_err "background" "is the input shots/b.jpg"
  same_bytes "segment background" shots/b.jpg shots.orig/b.jpg
  cp "$SELFIE" model.tflite
  cp model.tflite model.orig
  expect_status 1 "segment -o model" "$PIXFLOW" segment in.mp4 --model model.tflite \
    -o model.tflite --quiet && expect_err "model" "is the input model.tflite"
  same_bytes "segment model" model.tflite model.orig
  # reproject: an input named like another input's view.
  mkdir pano
  equirect pano/p.jpg
  equirect pano/p_view00.jpg
  cp pano/p_view00.jpg view.orig
  expect_status 1 "reproject output = input" "$PIXFLOW" reproject pano/p.jpg pano/p_view00.jpg \
    -o pano --view 0,0,0,90,32x32 --quiet &&
    expect_err "reproject" "is the input pano/p_view00.jpg"
  same_bytes "reproject" pano/p_view00.jpg view.orig
  expect_status 1 "reproject --trace input" "$PIXFLOW" reproject pano/p.jpg -o out \
    --view 0,0,0,90,32x32 --trace pano/p.jpg --quiet
  # run: a sink that writes the file a source reads (refused when loaded).
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=64x48:rate=25" -frames:v 5 \
    -pix_fmt yuv420p clip.y4m
  cp clip.y4m clip.orig
  ln -s clip.y4m clip_link.y4m
  cat >loop.yaml <<'EOF'
stages:
  - {name: src, type: io.video_source, path: clip.y4m}
  - {name: dst, type: io.video_sink, path: clip_link.y4m}
edges:
  - {from: src, to: dst}
EOF
  expect_status 1 "run sink = source" "$PIXFLOW" run loop.yaml --quiet &&
    expect_err "run" "is the input clip.y4m"
  same_bytes "run" clip.y4m clip.orig
  # model run: an input .npy where an output goes.
  ABS=/usr/share/libonnx-testdata/data/node/test_abs/model.onnx
  if [ -e "$ABS" ]; then
    mkdir npy
    npy345 npy/y.npy
    cp npy/y.npy y.orig
    expect_status 1 "model run output = input" "$PIXFLOW" model run "$ABS" --input x=npy/y.npy \
      --output-dir npy && expect_err "model run" "output npy/y.npy is the input npy/y.npy"
    same_bytes "model run" npy/y.npy y.orig
    expect_status 0 "model run elsewhere" "$PIXFLOW" model run "$ABS" --input x=npy/y.npy \
      --output-dir out_npy
  fi
  no_temporaries same_file
  ;;
same_stem)
  need "$SELFIE"
  mkdir d1 d2
  image d1/a.png
  image d1/a.jpg
  cp d1/a.png d2/a.png
  expect_status 1 "segment a.png a.jpg masks" "$PIXFLOW" segment d1/a.png d1/a.jpg -o out \
    --mask-out masks --quiet &&
    expect_err "same stem" "d1/a.png and d1/a.jpg would both be written to masks/a.png"
  expect_status 1 "segment d1/a.png d2/a.png" "$PIXFLOW" segment d1/a.png d2/a.png -o out --quiet &&
    expect_err "same name" "d1/a.png and d2/a.png would both be written to out/a.png"
  expect_status 1 "output = mask" "$PIXFLOW" segment d1/a.png -o same.png --mask-out same.png \
    --quiet && expect_err "output = mask" "would both be written to same.png"
  expect_status 1 "output = trace, spelt differently" "$PIXFLOW" segment d1/a.png -o same.png \
    --trace ./d1/../same.png --quiet &&
    expect_err "output = trace" "the output and the trace would both be written to"
  [ -z "$(ls out 2>/dev/null)" ] || fail "segment wrote into out/ although it refused"
  expect_status 0 "distinct stems" "$PIXFLOW" segment d1/a.png d1/a.jpg -o out --quiet
  ;;
overwrite)
  need "$SELFIE"
  image a.png
  echo "keep me" >a_seg.png
  expect_status 1 "segment -n" "$PIXFLOW" segment a.png -n --quiet &&
    expect_err "segment -n" "a_seg.png: already exists"
  [ "$(cat a_seg.png)" = "keep me" ] || fail "segment -n changed a_seg.png"
  expect_status 2 "segment -y -n" "$PIXFLOW" segment a.png -y -n --quiet
  expect_status 0 "segment -y" "$PIXFLOW" segment a.png -y --quiet
  [ "$(cat a_seg.png)" != "keep me" ] || fail "segment -y did not overwrite"
  echo "keep me" >a_seg.png
  expect_status 0 "segment (default: overwrite)" "$PIXFLOW" segment a.png --quiet
  [ "$(cat a_seg.png)" != "keep me" ] || fail "segment did not overwrite by default"
  "$PIXFLOW" segment --help | grep -q -- "-n" || fail "segment --help does not mention -n"
  mkdir -p pano out
  equirect pano/p.jpg
  echo "keep me" >out/p_view00.jpg
  expect_status 1 "reproject -n" "$PIXFLOW" reproject pano/p.jpg -o out --view 0,0,0,90,32x32 \
    -n --quiet && expect_err "reproject -n" "out/p_view00.jpg: already exists"
  [ "$(cat out/p_view00.jpg)" = "keep me" ] || fail "reproject -n changed the view"
  expect_status 0 "reproject -y" "$PIXFLOW" reproject pano/p.jpg -o out --view 0,0,0,90,32x32 \
    -y --quiet
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=64x48:rate=25" -frames:v 5 \
    -pix_fmt yuv420p clip.y4m
  echo "keep me" >copy.y4m
  cat >copy.yaml <<'EOF'
stages:
  - {name: src, type: io.video_source, path: clip.y4m}
  - {name: dst, type: io.video_sink, path: copy.y4m}
edges:
  - {from: src, to: dst}
EOF
  expect_status 1 "run -n" "$PIXFLOW" run copy.yaml -n --quiet &&
    expect_err "run -n" "copy.y4m: already exists"
  [ "$(cat copy.y4m)" = "keep me" ] || fail "run -n changed copy.y4m"
  expect_status 0 "run -y" "$PIXFLOW" run copy.yaml -y --quiet
  head -c 9 copy.y4m | grep -q YUV4MPEG2 || fail "run -y did not write copy.y4m"
  ABS=/usr/share/libonnx-testdata/data/node/test_abs/model.onnx
  if [ -e "$ABS" ]; then
    npy345 x.npy
    mkdir res
    echo "keep me" >res/y.npy
    expect_status 1 "model run -n" "$PIXFLOW" model run "$ABS" --input x=x.npy --output-dir res \
      -n && expect_err "model run -n" "res/y.npy: already exists"
    [ "$(cat res/y.npy)" = "keep me" ] || fail "model run -n changed y.npy"
    expect_status 0 "model run -y" "$PIXFLOW" model run "$ABS" --input x=x.npy --output-dir res -y
  fi
  no_temporaries overwrite
  ;;
model)
  need "$SELFIE" "$FACE"
  image a.png
  expect_status 1 "segment --model face detector" "$PIXFLOW" segment a.png --model "$FACE" \
    --quiet && expect_err "model" "is not a person segmenter: it has 2 outputs"
  expect_err "model shapes" "[-1, 896, 16]"
  [ ! -e a_seg.png ] || fail "segment wrote a_seg.png with a detector"
  expect_status 0 "segment --model selfie file" "$PIXFLOW" segment a.png --model "$SELFIE" --quiet
  ;;
signal)
  need "$SELFIE"
  command -v ffprobe >/dev/null || { echo "SKIP: ffprobe is missing"; exit 77; }
  # 720p: x264 holds tens of frames in its lookahead, so finishing the file
  # (flush, trailer, rename) takes long enough for the second signal to land
  # in it, which used to kill the process (SA_RESETHAND): a 48-byte MP4.
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=1280x720:rate=25" -frames:v 100 -preset ultrafast \
    -pix_fmt yuv420p long.mp4
  "$PIXFLOW" segment long.mp4 -o long_seg.mp4 --batch 4 >out.txt 2>err.txt &
  pid=$!
  # Wait for frames to flow (progress lines), then signal twice, as GNU
  # timeout does (the child, then its process group).
  for _ in $(seq 300); do
    grep -qE "segment: [1-9][0-9]*/" err.txt 2>/dev/null && break
    sleep 0.1
  done
  kill -INT $pid
  sleep 0.02
  second=0
  kill -INT $pid 2>/dev/null && second=1
  sleep 0.1
  kill -INT $pid 2>/dev/null
  wait $pid
  rc=$?
  [ "$rc" = 130 ] || fail "exit status $rc after two SIGINTs, expected 130"
  grep -q "(interrupted)" out.txt || fail "no summary after two SIGINTs"
  if [ $second = 1 ]; then
    grep -q "already stopping" err.txt || fail "the second signal was not acknowledged"
  else
    echo "note: the run had ended before the second signal (the check is weaker)"
  fi
  frames=$(awk '/^  frames/ {print $2}' out.txt)
  got=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
    -of csv=p=0 long_seg.mp4 2>/dev/null)
  [ -n "$frames" ] && [ "$frames" -gt 0 ] || fail "summary frames '$frames'"
  [ "$got" = "$frames" ] || fail "long_seg.mp4 has '$got' frames, the summary says '$frames'"
  no_temporaries signal
  # A crash (SIGKILL, which no handler sees) mid-run: the old file under the
  # final name is untouched (the old writer had truncated it at the start).
  echo "previous result" >killed.mp4
  "$PIXFLOW" segment long.mp4 -o killed.mp4 --batch 4 >out.txt 2>err.txt &
  pid=$!
  for _ in $(seq 300); do
    grep -qE "segment: [1-9][0-9]*/" err.txt 2>/dev/null && break
    sleep 0.1
  done
  kill -KILL $pid
  wait $pid 2>/dev/null
  [ "$(cat killed.mp4)" = "previous result" ] || fail "SIGKILL mid-run changed killed.mp4"
  ;;
full_disk)
  need "$SELFIE"
  # A file size limit (ulimit -f, KiB) stands in for a full disk: each write
  # past it fails (EFBIG). The previous files under the final names stay,
  # the run fails naming the output, and no temporary is left.
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=160x120:rate=25" -frames:v 20 \
    -pix_fmt yuv420p in.y4m
  mkdir shots
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=640x480" -frames:v 1 shots/a.png
  echo "previous video" >out.y4m
  mkdir -p segd && echo "previous image" >segd/a.png
  (ulimit -f 48; "$PIXFLOW" segment in.y4m -o out.y4m --quiet >out.txt 2>err.txt)
  rc=$?
  [ "$rc" = 1 ] || fail "segment over the size limit: exit status $rc, expected 1"
  expect_err "segment video full" "out.y4m"
  [ "$(cat out.y4m)" = "previous video" ] || fail "a failed video write changed out.y4m"
  (ulimit -f 48; "$PIXFLOW" segment shots/a.png -o segd/ --quiet >out.txt 2>err.txt)
  rc=$?
  [ "$rc" = 1 ] || fail "segment image over the size limit: exit status $rc, expected 1"
  [ "$(cat segd/a.png)" = "previous image" ] || fail "a failed image write changed segd/a.png"
  no_temporaries full_disk
  ;;
concurrent)
  need "$SELFIE"
  ffmpeg -loglevel error -y -f lavfi -i "testsrc=size=160x120:rate=25" -frames:v 40 \
    -pix_fmt yuv420p in.y4m
  # References, one at a time; then both at once onto one path: the result
  # must be one of them byte for byte (the old writers interleaved into one
  # file opened twice with "wb").
  "$PIXFLOW" segment in.y4m -o red.y4m --background '#FF0000' --quiet >/dev/null 2>&1 ||
    fail "reference red"
  "$PIXFLOW" segment in.y4m -o blue.y4m --background '#0000FF' --quiet >/dev/null 2>&1 ||
    fail "reference blue"
  for round in 1 2; do
    "$PIXFLOW" segment in.y4m -o same.y4m --background '#FF0000' --quiet >/dev/null 2>&1 &
    a=$!
    "$PIXFLOW" segment in.y4m -o same.y4m --background '#0000FF' --quiet >/dev/null 2>&1 &
    b=$!
    wait $a || fail "round $round: the red run failed"
    wait $b || fail "round $round: the blue run failed"
    cmp -s same.y4m red.y4m || cmp -s same.y4m blue.y4m ||
      fail "round $round: same.y4m is neither run's output (a mix of both)"
  done
  no_temporaries concurrent
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "ok $case_name"
exit 0
