#!/usr/bin/env bash
# Damaged video never crashes or hangs (registered by tests/video_damage.cmake).
#
#   video_damage.sh CASE PIXFLOW CHECK WORKDIR
#
# CASE reader: makes small clips with the ffmpeg tool (160x120, 20 frames:
#   mpeg4 in AVI, h264 in MP4, hevc in MKV, vp9 in WebM, mjpeg in AVI, plus
#   the first 2 MB of .data/Megamind.avi when present: the sample whose
#   damage once aborted the process), and runs CHECK
#   (tests/video_damage_check.c) on each: 13 deterministic damaged copies
#   per clip (cuts, bit flips, zeroed runs, a duplicated range, noise)
#   decoded by pf_video_reader in a child process with a time bound, both
#   with FFmpeg's threads and with one thread.
# CASE cli: `pixflow segment`, `pixflow reproject` and `pixflow run` on
#   damaged copies of the mpeg4 clip (bits flipped, cut short): exit 0,
#   frames written, the damage counted in the summary; a file cut before its
#   first frame is a clean error that names it.
# Exit 0 pass, 1 fail, 77 skipped (no ffmpeg tool or a build without FFmpeg).
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
CHECK=${3:?video_damage_check binary}
WORK=${4:?work directory}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export PIXFLOW_DEVICE=cpu PIXFLOW_MODELS=$SRC

command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg tool"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK/dmg"
cd "$WORK" || exit 1
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# clip NAME CODEC-ARGS...: 20 frames of a moving test pattern.
clip() {
  local out=$1
  shift
  ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=160x120:rate=10 -frames:v 20 \
    -pix_fmt yuv420p "$@" "$out" || fail "ffmpeg could not make $out"
}

make_clips() {
  clip mpeg4.avi -c:v mpeg4 -bf 2 -g 8 -q:v 5
  clip h264.mp4 -c:v libx264 -preset ultrafast -bf 2 -g 8 -x264-params log-level=error \
    -movflags +faststart
  clip hevc.mkv -c:v libx265 -preset ultrafast -g 8 -x265-params log-level=error
  clip vp9.webm -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 8 -b:v 200k
  ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=160x120:rate=10 -frames:v 20 \
    -c:v mjpeg -pix_fmt yuvj420p -q:v 5 mjpeg.avi || fail "ffmpeg could not make mjpeg.avi"
  clips="mpeg4.avi h264.mp4 hevc.mkv vp9.webm mjpeg.avi"
  if [ -f "$SRC/.data/Megamind.avi" ]; then
    head -c 2000000 "$SRC/.data/Megamind.avi" >megamind.avi
    clips="$clips megamind.avi"
  fi
}

case $case_name in
reader)
  make_clips
  # shellcheck disable=SC2086
  "$CHECK" -o dmg $clips || fail "damaged clips (FFmpeg's decoder threads)"
  # shellcheck disable=SC2086
  "$CHECK" -t 1 -o dmg $clips >threads1.txt || { cat threads1.txt; fail "damaged clips (1 thread)"; }
  grep -E '^[^ ].*damaged copies' threads1.txt | sed 's/^/one thread: /'
  ;;
cli)
  [ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
    { echo "SKIP: no selfie model (npm ci)"; exit 77; }
  clip mpeg4.avi -c:v mpeg4 -bf 2 -g 8 -q:v 5
  # Bits flipped past the headers; cut at 60 %; cut inside the headers.
  size=$(stat -c %s mpeg4.avi)
  cp mpeg4.avi flip.avi
  for off in $((size / 3)) $((size / 2)) $((size * 2 / 3)) $((size * 3 / 4)); do
    printf '\xa5' | dd of=flip.avi bs=1 seek=$off conv=notrunc status=none
  done
  head -c $((size * 6 / 10)) mpeg4.avi >cut.avi
  head -c 300 mpeg4.avi >stub.avi
  for f in flip.avi cut.avi; do
    timeout -k 5 120 "$PIXFLOW" segment "$f" -o null --json >seg.json 2>seg.err
    rc=$?
    [ $rc = 0 ] || { cat seg.err; fail "segment $f: exit status $rc"; continue; }
    frames=$(sed -n 's/.*"frames": *\([0-9]*\).*/\1/p' seg.json)
    corrupt=$(sed -n 's/.*"corrupt_packets": *\([0-9]*\).*/\1/p' seg.json)
    echo "segment $f: frames $frames, corrupt_packets $corrupt"
    [ "${frames:-0}" -gt 0 ] || fail "segment $f: no frames ($(cat seg.json))"
    [ "${corrupt:-0}" -gt 0 ] || fail "segment $f: damage not counted ($(cat seg.json))"
    timeout -k 5 120 "$PIXFLOW" reproject "$f" -o rp_$f --views 1:90:32x32 --format png --quiet \
      2>rp.err || { cat rp.err; fail "reproject $f: exit status $?"; }
    grep -q "$f: [0-9]* damaged or missing packets skipped" rp.err ||
      { cat rp.err; fail "reproject $f: the damage is not reported"; }
    n=$(ls rp_$f | wc -l)
    echo "reproject $f: $n files"
    [ "$n" -gt 0 ] || fail "reproject $f: nothing written"
    printf 'name: damage\nstages:\n  - name: src\n    type: io.video_source\n    path: %s\n  - name: sink\n    type: io.video_sink\n    path: run_%s.y4m\n' \
      "$f" "$f" >run.yaml
    timeout -k 5 120 "$PIXFLOW" run run.yaml >run.out 2>&1 || { cat run.out; fail "run $f: exit status $?"; }
    n=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames \
      -of csv=p=0 "run_$f.y4m")
    echo "run $f: $n frames written"
    [ "${n:-0}" = "$frames" ] || fail "run $f: $n frames written, segment read $frames"
    grep -q "io.video_source: $f: .*damaged or missing packets skipped" run.out ||
      { cat run.out; fail "run $f: the damage is not reported"; }
  done
  timeout -k 5 60 "$PIXFLOW" segment stub.avi -o null >stub.out 2>&1
  rc=$?
  echo "segment stub.avi: exit $rc: $(head -c 300 stub.out)"
  [ $rc = 1 ] || fail "segment stub.avi: exit status $rc, expected 1"
  grep -q 'stub.avi' stub.out || fail "segment stub.avi: the error does not name the file"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
[ $failures = 0 ] && echo "ok" && exit 0
echo "$failures check(s) failed" >&2
exit 1
