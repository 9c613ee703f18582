#!/usr/bin/env bash
# Video fidelity of `pixflow segment` and the YAML video sink (issue 13),
# registered by tests/video_cli.cmake.
#
#   video_cli.sh CASE PIXFLOW SRC WORKDIR
#
# Inputs are made with the ffmpeg tool; outputs are checked with ffprobe
# (tags, streams, counts, durations, rates) and by decoding with ffmpeg.
# CASE: color audio aspect_rotation odd_size encoder trim bad_options yaml_sink.
# Exit 0 pass, 1 fail (each failing check is printed), 77 skipped.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
SRC=${3:?source tree}
WORK=${4:?work directory}
export PIXFLOW_DEVICE=cpu PIXFLOW_LOG=error PIXFLOW_MODELS=$SRC

command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null ||
  { echo "SKIP: needs the ffmpeg and ffprobe tools"; exit 77; }
if [ "$case_name" != yaml_sink ] && [ "$case_name" != bad_options ] &&
   [ ! -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ]; then
  echo "SKIP: the selfie model is missing (npm ci installs it)"; exit 77
fi
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
# libx265 3.5 leaks a few kB of its own at encoder open (FrameFilter::init);
# under ASan (scripts/test) that is not ours to fix.
printf 'leak:libx265.so\n' > lsan.supp
export LSAN_OPTIONS="suppressions=$WORK/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect_status() { # expect_status WANT DESCRIPTION COMMAND...: output -> out.txt/err.txt
  local want=$1 what=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$what: exit status $got, expected $want"
    sed 's/^/  stderr: /' err.txt >&2
  fi
}
err_has() { grep -qF -- "$1" err.txt || { fail "$2: stderr does not mention '$1'"; sed 's/^/  stderr: /' err.txt >&2; }; }
ff() { ffmpeg -v error -y -nostdin "$@" || { echo "cannot make input: ffmpeg $*" >&2; exit 1; }; }
# probe FILE SELECT ENTRY: one value of the first stream matching SELECT (v:0, a:0)
probe() { ffprobe -v error -select_streams "$2" -show_entries "stream=$3" -of default=nw=1:nk=1 "$1" | head -1; }
count_streams() { ffprobe -v error -select_streams "$2" -show_entries stream=index -of csv=p=0 "$1" | wc -l | tr -d ' '; }
frames() { ffprobe -v error -select_streams v:0 -count_frames -show_entries stream=nb_read_frames -of default=nw=1:nk=1 "$1"; }
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
# within DESCRIPTION A B TOL: |A - B| <= TOL (decimals)
within() { awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }' ||
  fail "$1: $2 vs $3 differ by more than $4"; }
seg() { "$PIXFLOW" segment "$@" --background none --quiet; }

case "$case_name" in
color)
  # Three stripes (192,48,32) (16,200,240) (8,8,8) in full-range BT.709 H.264
  # (the VUI flags say so): the output must be tagged the same and decode to
  # the same RGB within 6 (two 8-bit YUV roundings, x264 at crf 0 ... plus
  # the segment composite of an unchanged frame). Before: limited-range
  # BT.601 maths made the blacks crushed and the colours off by ~15.
  for c in C03020 10C8F0 080808; do
    ff -f lavfi -i "color=c=0x$c:s=110x240:r=25:d=0.4" "s_$c.mkv"
  done
  ff -i s_C03020.mkv -i s_10C8F0.mkv -i s_080808.mkv \
    -filter_complex "hstack=inputs=3,scale=out_color_matrix=bt709:out_range=pc,format=yuv420p" \
    -c:v libx264 -qp 0 -colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range pc in.mp4
  expect_status 0 "segment full-range 709" seg in.mp4 -o out.mp4
  expect_eq "color_range" "$(probe out.mp4 v:0 color_range)" pc
  expect_eq "color_space" "$(probe out.mp4 v:0 color_space)" bt709
  expect_eq "color_primaries" "$(probe out.mp4 v:0 color_primaries)" bt709
  expect_eq "color_transfer" "$(probe out.mp4 v:0 color_transfer)" bt709
  ffmpeg -v error -y -nostdin -i out.mp4 -frames:v 1 -f rawvideo -pix_fmt rgb24 out.rgb
  # Centre of each stripe (row 120, columns 55, 165, 275).
  i=0
  for want in "192 48 32" "16 200 240" "8 8 8"; do
    off=$(( (120 * 330 + 55 + 110 * i) * 3 ))
    got=$(od -An -tu1 -j "$off" -N 3 out.rgb)
    read -r -a g <<<"$got"
    read -r -a w <<<"$want"
    [ "${#g[@]}" = 3 ] || { fail "stripe $i: no pixels decoded"; break; }
    for k in 0 1 2; do
      d=$(( g[k] - w[k] )); d=${d#-}
      [ "$d" -le 6 ] || fail "stripe $i channel $k: got ${g[$k]}, expected ${w[$k]} (tolerance 6)"
    done
    i=$((i + 1))
  done
  ;;
audio)
  # A sine tone next to the video: copied (same codec, no re-encode), its
  # duration within one frame (40 ms) of the video's; --no-audio drops it.
  ff -f lavfi -i "testsrc2=s=160x120:r=25:d=2" -f lavfi -i "sine=frequency=440:duration=2" \
    -c:v libx264 -c:a aac -b:a 96k -shortest in.mp4
  expect_status 0 "segment with audio" seg in.mp4 -o out.mp4
  expect_eq "audio streams" "$(count_streams out.mp4 a)" 1
  expect_eq "audio codec" "$(probe out.mp4 a:0 codec_name)" "$(probe in.mp4 a:0 codec_name)"
  # Copied, not re-encoded: the same packets (their MD5s) in the same order.
  ffmpeg -v error -nostdin -i in.mp4 -map 0:a -c copy -f framemd5 - | grep -v '^#' | cut -d, -f6 > a_in.md5
  ffmpeg -v error -nostdin -i out.mp4 -map 0:a -c copy -f framemd5 - | grep -v '^#' | cut -d, -f6 > a_out.md5
  [ -s a_in.md5 ] && cmp -s a_in.md5 a_out.md5 || fail "audio packets differ from the input's"
  within "audio vs video duration" "$(probe out.mp4 a:0 duration)" "$(probe out.mp4 v:0 duration)" 0.04
  within "audio start" "$(probe out.mp4 a:0 start_time)" "$(probe out.mp4 v:0 start_time)" 0.04
  expect_status 0 "segment --no-audio" seg in.mp4 -o noaudio.mp4 --no-audio
  expect_eq "audio streams with --no-audio" "$(count_streams noaudio.mp4 a)" 0
  # Matroska keeps a subtitle stream too.
  printf '1\n00:00:00,000 --> 00:00:01,000\nhello\n' > sub.srt
  ff -i in.mp4 -i sub.srt -map 0 -map 1 -c copy in.mkv
  expect_status 0 "segment mkv with subtitles" seg in.mkv -o out.mkv
  expect_eq "subtitle streams" "$(count_streams out.mkv s)" 1
  expect_eq "audio streams (mkv)" "$(count_streams out.mkv a)" 1
  ;;
aspect_rotation)
  ff -f lavfi -i "testsrc2=s=160x120:r=25:d=0.4" -vf setsar=4/3 -c:v libx264 sar0.mp4
  ff -i sar0.mp4 -c copy -metadata:s:v:0 rotate=90 in.mp4
  expect_status 0 "segment SAR 4:3, rotated 90" seg in.mp4 -o out.mp4
  expect_eq "sample aspect ratio" "$(probe out.mp4 v:0 sample_aspect_ratio)" 4:3
  rot=$(ffprobe -v error -select_streams v:0 -show_streams out.mp4 | sed -n 's/^rotation=//p' | head -1)
  expect_eq "rotation" "$rot" 90
  ;;
odd_size)
  # 161x121 (FFV1 stores odd sizes): H.264 4:2:0 needs even sizes, so the
  # writer pads one column and row (the edge repeated; H.264 crops in units
  # of 2 for 4:2:0, so the bitstream cannot hide them). Before: "Generic
  # error in an external library".
  ff -f lavfi -i "testsrc2=s=162x122:r=25:d=0.4" -vf "format=yuv444p,crop=161:121:0:0" -c:v ffv1 in.mkv
  expect_status 0 "segment 161x121" seg in.mkv -o out.mp4
  expect_eq "width (padded to even)" "$(probe out.mp4 v:0 width)" 162
  expect_eq "height (padded to even)" "$(probe out.mp4 v:0 height)" 122
  expect_eq "frames" "$(frames out.mp4)" 10
  # VP9 takes odd sizes: kept exactly.
  expect_status 0 "segment 161x121 to VP9" seg in.mkv -o out.webm --codec libvpx-vp9 --crf 40
  expect_eq "VP9 width" "$(probe out.webm v:0 width)" 161
  expect_eq "VP9 height" "$(probe out.webm v:0 height)" 121
  ;;
encoder)
  ff -f lavfi -i "testsrc2=s=160x120:r=24000/1001:d=1" -c:v libx264 in.mp4
  expect_status 0 "--codec libx265 --preset ultrafast --crf 30" \
    seg in.mp4 -o h265.mp4 --codec libx265 --preset ultrafast --crf 30
  expect_eq "codec" "$(probe h265.mp4 v:0 codec_name)" hevc
  expect_eq "fps kept" "$(probe h265.mp4 v:0 r_frame_rate)" 24000/1001
  expect_eq "frames" "$(frames h265.mp4)" 24
  expect_status 0 "--codec mpeg4 --bitrate 300k" seg in.mp4 -o mp4v.mp4 --codec mpeg4 --bitrate 300k
  expect_eq "codec" "$(probe mp4v.mp4 v:0 codec_name)" mpeg4
  expect_eq "fps kept (mpeg4)" "$(probe mp4v.mp4 v:0 r_frame_rate)" 24000/1001
  # Quality follows --crf: crf 45 must be much smaller than crf 15.
  expect_status 0 "--crf 15" seg in.mp4 -o q15.mp4 --crf 15 --preset ultrafast
  expect_status 0 "--crf 45" seg in.mp4 -o q45.mp4 --crf 45 --preset ultrafast
  s15=$(stat -c %s q15.mp4) s45=$(stat -c %s q45.mp4)
  [ "$s45" -lt $((s15 / 2)) ] || fail "--crf 45 ($s45 bytes) is not much smaller than --crf 15 ($s15)"
  expect_status 1 "--preset bogus" seg in.mp4 -o bad.mp4 --preset bogus
  err_has "bogus" "--preset bogus"
  ;;
trim)
  # 23.976 fps, 3 s, with audio: --start 1 --duration 1 keeps frames with
  # 1.0 <= t < 2.0 (24 of them: t = k * 1001/24000, k = 24..47), starts at
  # 0, keeps the 1001-tick grid, and cuts the audio alike.
  ff -f lavfi -i "testsrc2=s=160x120:r=24000/1001:d=3" -f lavfi -i "sine=frequency=440:duration=3" \
    -c:v libx264 -c:a aac -shortest in.mp4
  expect_status 0 "--start 1 --duration 1" seg in.mp4 -o cut.mp4 --start 1 --duration 00:00:01.000
  expect_eq "frames" "$(frames cut.mp4)" 24
  expect_eq "fps" "$(probe cut.mp4 v:0 r_frame_rate)" 24000/1001
  within "video start" "$(probe cut.mp4 v:0 start_time)" 0 0.001
  within "video duration" "$(probe cut.mp4 v:0 duration)" 1.001 0.002
  within "audio duration" "$(probe cut.mp4 a:0 duration)" 1.001 0.05
  # The first frame kept is frame 24 of the input (testsrc2 draws a frame
  # counter): compare it with the input's frame 24, decoded by ffmpeg.
  ffmpeg -v error -nostdin -i in.mp4 -vf "select=eq(n\,24)" -frames:v 1 -f rawvideo -pix_fmt gray ref24.gray
  ffmpeg -v error -nostdin -i in.mp4 -vf "select=eq(n\,23)" -frames:v 1 -f rawvideo -pix_fmt gray ref23.gray
  ffmpeg -v error -nostdin -i cut.mp4 -frames:v 1 -f rawvideo -pix_fmt gray first.gray
  d24=$(cmp -l first.gray ref24.gray | awk '{d = $2 - $3; if (d < 0) d = -d; s += d} END {print s + 0}')
  d23=$(cmp -l first.gray ref23.gray | awk '{d = $2 - $3; if (d < 0) d = -d; s += d} END {print s + 0}')
  [ "$d24" -lt "$d23" ] || fail "first frame is not input frame 24 (diff to 24: $d24, to 23: $d23)"
  expect_status 0 "--frames 10" seg in.mp4 -o ten.mp4 --frames 10
  expect_eq "frames (--frames 10)" "$(frames ten.mp4)" 10
  within "audio ends with the video (--frames 10)" "$(probe ten.mp4 a:0 duration)" \
    "$(probe ten.mp4 v:0 duration)" 0.05
  expect_status 0 "--start 00:00:02.5" seg in.mp4 -o tail.mp4 --start 00:00:02.5
  expect_eq "frames from 2.5 s" "$(frames tail.mp4)" 12
  expect_status 1 "--start after the end" seg in.mp4 -o none.mp4 --start 10
  err_has "no frames from there on" "--start after the end"
  ;;
bad_options)
  for args in "--crf 99|--crf '99'" "--crf x|--crf 'x'" "--start abc|--start 'abc'" \
              "--start -1|--start '-1'" "--duration 0|--duration '0'" "--frames 0|--frames '0'" \
              "--bitrate 12q|--bitrate '12q'" "--codec nope|--codec 'nope'" \
              "--crf 20 --bitrate 1M|--bitrate 1M"; do
    opt=${args%%|*} msg=${args#*|}
    # shellcheck disable=SC2086
    expect_status 2 "$opt" "$PIXFLOW" segment in.mp4 -o out.mp4 $opt
    err_has "$msg" "$opt"
  done
  ;;
yaml_sink)
  # io.video_source -> io.video_sink without fps: the 23.976 source keeps
  # its rate and time base (before: re-gridded to 30 fps), its colour tags,
  # and the sink's frames/start/duration/copy_streams keys work.
  ff -f lavfi -i "testsrc2=s=160x120:r=24000/1001:d=2" -f lavfi -i "sine=frequency=440:duration=2" \
    -c:v libx264 -color_range pc -colorspace bt709 -c:a aac -shortest in.mp4
  cat > p.yaml <<EOF
name: fidelity
device: cpu
stages:
  - {name: src, type: io.video_source, path: in.mp4, format: rgb24}
  - {name: out, type: io.video_sink, path: out.mp4, copy_streams: in.mp4, frames: 30}
EOF
  expect_status 0 "pixflow run" "$PIXFLOW" run p.yaml
  expect_eq "fps" "$(probe out.mp4 v:0 r_frame_rate)" 24000/1001
  expect_eq "frames" "$(frames out.mp4)" 30
  within "duration" "$(probe out.mp4 v:0 duration)" 1.25125 0.002
  expect_eq "colour range" "$(probe out.mp4 v:0 color_range)" pc
  expect_eq "colour matrix" "$(probe out.mp4 v:0 color_space)" bt709
  expect_eq "audio copied" "$(probe out.mp4 a:0 codec_name)" aac
  within "audio cut with the video" "$(probe out.mp4 a:0 duration)" 1.25125 0.05
  cat > q.yaml <<EOF
name: trim
device: cpu
stages:
  - {name: src, type: io.video_source, path: in.mp4}
  - {name: out, type: io.video_sink, path: trim.mkv, start: 0.5, duration: "00:00:00.5", codec: mpeg4}
EOF
  expect_status 0 "pixflow run (start/duration/codec)" "$PIXFLOW" run q.yaml
  expect_eq "codec" "$(probe trim.mkv v:0 codec_name)" mpeg4
  expect_eq "frames 0.5..1.0 s" "$(frames trim.mkv)" 12
  # Sample aspect ratio through a resize: the display aspect stays
  # (4:3 pixels, 160x120 -> 320x120: 2:3 pixels), as FFmpeg's scale does.
  ff -i in.mp4 -vf setsar=4/3 -c:v libx264 -an sar.mp4
  cat > s.yaml <<EOF
name: sar
device: cpu
stages:
  - {name: src, type: io.video_source, path: sar.mp4}
  - {name: wide, type: ops.resize, width: 320, height: 120}
  - {name: out, type: io.video_sink, path: sar_out.mp4}
EOF
  expect_status 0 "pixflow run (resize keeps the display aspect)" "$PIXFLOW" run s.yaml
  expect_eq "SAR after the resize" "$(probe sar_out.mp4 v:0 sample_aspect_ratio)" 2:3
  cat > r.yaml <<EOF
name: bad
device: cpu
stages:
  - {name: src, type: io.video_source, path: in.mp4}
  - {name: out, type: io.video_sink, path: x.mp4, start: "1:99"}
EOF
  expect_status 1 "bad start" "$PIXFLOW" run r.yaml
  err_has "start '1:99'" "bad start"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 1
  ;;
esac
[ "$failures" = 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
echo "ok: $case_name"
