#!/usr/bin/env bash
# Inputs the jobs must read (registered by tests/video_damage.cmake).
#
#   read_inputs.sh CASE PIXFLOW WORKDIR
#
# y4m_cut      a Y4M cut inside frame 6: segment and run write the 6 whole
#              frames, warn naming the file and the frame, and segment's
#              summary counts it.
# special      FIFOs (a writer process started and stopped here), /dev/stdin
#              and process substitution (/dev/fd/N) as inputs of segment,
#              reproject and run, Y4M and MP4 (with audio too: not copied from
#              a pipe), and a JPEG through a FIFO.
# single_file  `pixflow segment FILE` on a CMYK JPEG, a PNG with a bad CRC,
#              empty files and a PNG with a huge width prints the image
#              reader's message, the same as for a directory holding the
#              file (not a video error from FFmpeg).
# Exit 0 pass, 1 fail, 77 skipped (no ffmpeg tool, no model).
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
WORK=${3:?work directory}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export PIXFLOW_DEVICE=cpu PIXFLOW_MODELS=$SRC PIXFLOW_LOG=warn

command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg tool"; exit 77; }
[ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
  { echo "SKIP: no selfie model (npm ci)"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
frames_of() { # frames_of FILE: frames ffprobe decodes
  ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames \
    -of csv=p=0 "$1" 2>/dev/null
}
run_yaml() { # run_yaml IN OUT: pixflow run, video_source -> video_sink
  printf 'name: t\nstages:\n  - name: src\n    type: io.video_source\n    path: %s\n  - name: sink\n    type: io.video_sink\n    path: %s\n' \
    "$1" "$2" >run.yaml
  timeout -k 5 60 "$PIXFLOW" run run.yaml >run.out 2>&1
}
ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 10 \
  -pix_fmt yuv420p clip.y4m || fail "ffmpeg clip.y4m"

case $case_name in
y4m_cut)
  # Header 47 bytes ("YUV4MPEG2 W64 H48 F10:1 Ip A1:1 C420jpeg\n" or so) + 6 frames of
  # 6 + 4608 bytes + half of frame 6.
  hdr=$(head -1 clip.y4m | wc -c)
  head -c $((hdr + 6 * 4614 + 2000)) clip.y4m >cut.y4m
  timeout -k 5 60 "$PIXFLOW" segment cut.y4m -o seg.y4m --json >seg.json 2>seg.err
  rc=$?
  cat seg.err
  [ $rc = 0 ] || fail "segment cut.y4m: exit status $rc"
  [ "$(frames_of seg.y4m)" = 6 ] || fail "segment cut.y4m: $(frames_of seg.y4m) frames written, expected 6"
  grep -q 'cut.y4m: the input is truncated: frame 6 ' seg.err || fail "segment: no warning naming the file and frame"
  grep -q '"corrupt_packets": *1' seg.json || fail "segment: summary does not count it: $(cat seg.json)"
  grep -q '"frames": *6' seg.json || fail "segment: summary frames: $(cat seg.json)"
  timeout -k 5 60 "$PIXFLOW" segment cut.y4m -o seg2.y4m 2>&1 | grep -q 'corrupt packets skipped: 1' ||
    fail "segment: the text summary does not count it"
  run_yaml cut.y4m run.y4m
  rc=$?
  [ $rc = 0 ] || { cat run.out; fail "run cut.y4m: exit status $rc"; }
  [ "$(frames_of run.y4m)" = 6 ] || fail "run cut.y4m: $(frames_of run.y4m) frames written, expected 6"
  grep -q 'cut.y4m: the input is truncated: frame 6 ' run.out || fail "run: no warning naming the file"
  ;;
special)
  ffmpeg -v error -nostdin -y -i clip.y4m -c:v libx264 -preset ultrafast -pix_fmt yuv420p clip.mp4 ||
    fail "ffmpeg clip.mp4"
  ffmpeg -v error -nostdin -y -i clip.y4m -frames:v 1 pic.jpg || fail "ffmpeg pic.jpg"
  writer=
  feed() { # feed FILE FIFO: a writer process for the FIFO, stopped by stop_feed
    rm -f "$2"
    mkfifo "$2" || fail "mkfifo $2"
    cat "$1" >"$2" &
    writer=$!
  }
  stop_feed() {
    [ -n "$writer" ] && kill "$writer" 2>/dev/null
    [ -n "$writer" ] && wait "$writer" 2>/dev/null
    writer=
  }
  trap stop_feed EXIT
  n=0
  for input in clip.y4m clip.mp4; do
    n=$((n + 1))
    feed "$input" fifo$n
    timeout -k 5 60 "$PIXFLOW" segment fifo$n -o fifo$n.y4m >out.txt 2>&1 || { cat out.txt; fail "segment FIFO ($input)"; }
    stop_feed
    [ "$(frames_of fifo$n.y4m)" = 10 ] || fail "segment FIFO ($input): $(frames_of fifo$n.y4m) frames"
    timeout -k 5 60 "$PIXFLOW" segment /dev/stdin -o stdin$n.y4m <"$input" >out.txt 2>&1 ||
      { cat out.txt; fail "segment /dev/stdin ($input)"; }
    [ "$(frames_of stdin$n.y4m)" = 10 ] || fail "segment /dev/stdin ($input): $(frames_of stdin$n.y4m) frames"
    if [ "$input" = clip.mp4 ]; then # '-' with Y4M: segment_cli_y4m_stdin
      timeout -k 5 60 "$PIXFLOW" segment - -o dash$n.y4m <"$input" >out.txt 2>&1 ||
        { cat out.txt; fail "segment - ($input)"; }
      [ "$(frames_of dash$n.y4m)" = 10 ] || fail "segment - ($input): $(frames_of dash$n.y4m) frames"
    fi
    timeout -k 5 60 "$PIXFLOW" segment <(cat "$input") -o ps$n.y4m >out.txt 2>&1 ||
      { cat out.txt; fail "segment <(cat $input)"; }
    [ "$(frames_of ps$n.y4m)" = 10 ] || fail "segment <(cat $input): $(frames_of ps$n.y4m) frames"
    timeout -k 5 60 "$PIXFLOW" reproject <(cat "$input") -o rp$n --views 1:90:32x32 --format png \
      --quiet >out.txt 2>&1 || { cat out.txt; fail "reproject <(cat $input)"; }
    [ "$(ls rp$n | wc -l)" = 10 ] || fail "reproject <(cat $input): $(ls rp$n | wc -l) files"
    feed "$input" rfifo$n
    run_yaml rfifo$n run$n.y4m || { cat run.out; fail "run on a FIFO ($input)"; }
    stop_feed
    [ "$(frames_of run$n.y4m)" = 10 ] || fail "run on a FIFO ($input): $(frames_of run$n.y4m) frames"
  done
  # With audio, to an MP4: the writer must not open the FIFO a second time to copy the
  # audio (it hung, or took the video reader's bytes); the audio is left out, said.
  ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=64x48:rate=10 \
    -f lavfi -i sine=frequency=440:sample_rate=16000 -t 2 -c:v libx264 -preset ultrafast \
    -pix_fmt yuv420p -c:a aac -shortest audio.mp4 || fail "ffmpeg audio.mp4"
  feed audio.mp4 afifo
  timeout -k 5 60 "$PIXFLOW" segment afifo -o afifo.mp4 >out.txt 2>&1 || { cat out.txt; fail "segment FIFO with audio"; }
  stop_feed
  [ "$(frames_of afifo.mp4)" = 20 ] || fail "segment FIFO with audio: $(frames_of afifo.mp4) frames"
  grep -q 'afifo is a pipe: its audio' out.txt || fail "segment FIFO with audio: not said"
  timeout -k 5 60 "$PIXFLOW" segment <(cat audio.mp4) -o apsub.mp4 >out.txt 2>&1 ||
    { cat out.txt; fail "segment <(cat audio.mp4)"; }
  [ "$(frames_of apsub.mp4)" = 20 ] || fail "segment <(cat audio.mp4): $(frames_of apsub.mp4) frames"
  feed pic.jpg pfifo.jpg
  timeout -k 5 60 "$PIXFLOW" segment pfifo.jpg -o pfifo_seg.png >out.txt 2>&1 || { cat out.txt; fail "segment JPEG FIFO"; }
  stop_feed
  [ -s pfifo_seg.png ] || fail "segment JPEG FIFO: nothing written"
  feed pic.jpg rpfifo.jpg
  timeout -k 5 60 "$PIXFLOW" reproject rpfifo.jpg -o rpj --views 1:90:32x32 --format png --quiet \
    >out.txt 2>&1 || { cat out.txt; fail "reproject JPEG FIFO"; }
  stop_feed
  [ "$(ls rpj | wc -l)" = 1 ] || fail "reproject JPEG FIFO: $(ls rpj | wc -l) files"
  ;;
single_file)
  mkdir -p d
  # An 8x8 CMYK JPEG (libjpeg, JCS_CMYK) and a PNG whose IHDR says 100000x1 (CRCs right).
  echo '/9j/7gAOQWRvYmUAZAAAAAAA/9sAQwAQCwwODAoQDg0OEhEQExgoGhgWFhgxIyUdKDozPTw5Mzg3QEhcTkBEV0U3OFBtUVdfYmdoZz5NcXlwZHhcZWdj/8AAFAgACAAIBEMRAE0RAFkRAEsRAP/EAB8AAAEFAQEBAQEBAAAAAAAAAAABAgMEBQYHCAkKC//EALUQAAIBAwMCBAMFBQQEAAABfQECAwAEEQUSITFBBhNRYQcicRQygZGhCCNCscEVUtHwJDNicoIJChYXGBkaJSYnKCkqNDU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6g4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV1tfY2drh4uPk5ebn6Onq8fLz9PX29/j5+v/aAA4EQwBNAFkASwAAPwCv4K/5Z1H4K/5Z0eCv+WdSeCv+Wdf/2Q==' |
    base64 -d >cmyk.jpg
  echo 'iVBORw0KGgoAAAANSUhEUgABhqAAAAABCAAAAAB4FUkJAAAAeElEQVR42u3BMQEAAADCoPVPbQ0PoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIBbA4awAAF6KyntAAAAAElFTkSuQmCC' |
    base64 -d >huge.png
  ffmpeg -v error -nostdin -y -i clip.y4m -frames:v 1 crc.png || fail "ffmpeg crc.png"
  size=$(stat -c %s crc.png)
  # A byte of the IDAT chunk's CRC (IEND, 12 bytes, follows it).
  printf '\x55' | dd of=crc.png bs=1 seek=$((size - 14)) conv=notrunc status=none
  : >empty.png
  : >empty.jpg
  for f in cmyk.jpg crc.png empty.png empty.jpg huge.png; do
    rm -rf d/*
    cp "$f" d/
    timeout -k 5 60 "$PIXFLOW" segment "$f" -o "single_$f" >single.txt 2>&1
    rc1=$?
    timeout -k 5 60 "$PIXFLOW" segment d -o dir_out >dir.txt 2>&1
    rc2=$?
    # The line about the file, without the directory part.
    m1=$(grep -m1 "$f" single.txt | sed "s|pixflow segment: ||")
    m2=$(grep -m1 "d/$f" dir.txt | sed "s|pixflow segment: d/||")
    echo "$f: single ($rc1): $m1"
    echo "$f: directory ($rc2): $m2"
    [ -n "$m1" ] || fail "$f: single-file mode names no file: $(cat single.txt)"
    [ "$m1" = "$m2" ] || fail "$f: single-file message differs from the directory's"
    grep -qiE 'ffmpeg|video|stream info' single.txt && fail "$f: treated as a video: $(cat single.txt)"
    [ $rc1 = $rc2 ] || fail "$f: exit status $rc1 alone, $rc2 in a directory"
  done
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
[ $failures = 0 ] && echo "ok" && exit 0
echo "$failures check(s) failed" >&2
exit 1
