#!/usr/bin/env bash
# NVDEC test input, into .data/nvdec/ (git-ignored; no binary media in git).
# Needs the ffmpeg program with libx264 (and libx265 for the HEVC sample).
#
#   scripts/make-nvdec-sample.sh [--force]
#
# Writes:
#   test.h264   64 frames 1920x1080 of testsrc2, x264 with 2 B-frames and a
#               GOP of 32, as an Annex B elementary stream (tests/cuda/
#               test_cuda_nvdec.c and bench/bench_nvdec.c read it)
#   ref/{y,u,v}_NNN.png   the same stream decoded by ffmpeg (yuv420p), each
#               plane of frame NNN (001..064) as an 8-bit gray PNG: the
#               reference NVDEC output must match bit for bit (H.264 decoding
#               is exact). PNG, not Y4M: 64 raw 1080p frames are 199 MB, too
#               big to carry to the GPU machine (64 MiB); the PNGs are ~14 MB
#               and pixflow reads them itself (pf_image_read, GRAY8).
#   test.hevc, ref_hevc/{y,u,v}_NNN.png   the same for HEVC (x265, 2
#               B-frames), 16 frames 1280x720, when ffmpeg has libx265
# Then copy .data/nvdec/ next to a tree carried to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."

force=0
case "${1:-}" in
  --force) force=1 ;;
  -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
  "") ;;
  *) echo "make-nvdec-sample: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
command -v ffmpeg >/dev/null || { echo "make-nvdec-sample: needs the ffmpeg program" >&2; exit 1; }

out=.data/nvdec
mkdir -p "$out"
ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)

# planes IN DIR N: decodes IN with ffmpeg into DIR/{y,u,v}_%03d.png (N frames).
planes() {
  rm -rf "$2" && mkdir -p "$2"
  "${ff[@]}" -i "$1" -filter_complex "format=yuv420p,extractplanes=y+u+v[y][u][v]" \
    -map "[y]" -frames:v "$3" "$2/y_%03d.png" -map "[u]" -frames:v "$3" "$2/u_%03d.png" \
    -map "[v]" -frames:v "$3" "$2/v_%03d.png"
}

if [ "$force" = 1 ] || [ ! -s "$out/test.h264" ] || [ ! -s "$out/ref/v_064.png" ]; then
  "${ff[@]}" -f lavfi -i testsrc2=size=1920x1080:rate=30 -frames:v 64 -pix_fmt yuv420p \
    -c:v libx264 -preset veryfast -bf 2 -g 32 -keyint_min 32 -sc_threshold 0 \
    -bsf:v h264_mp4toannexb -f h264 "$out/test.h264"
  planes "$out/test.h264" "$out/ref" 64
  echo "make-nvdec-sample: $out/test.h264 ($(stat -c %s "$out/test.h264") bytes), $out/ref/"
fi

if ffmpeg -hide_banner -encoders 2>/dev/null | grep -q libx265; then
  if [ "$force" = 1 ] || [ ! -s "$out/test.hevc" ] || [ ! -s "$out/ref_hevc/v_016.png" ]; then
    "${ff[@]}" -f lavfi -i testsrc2=size=1280x720:rate=30 -frames:v 16 -pix_fmt yuv420p \
      -c:v libx265 -preset veryfast -x265-params "bframes=2:keyint=8:log-level=error" \
      -f hevc "$out/test.hevc"
    planes "$out/test.hevc" "$out/ref_hevc" 16
    echo "make-nvdec-sample: $out/test.hevc, $out/ref_hevc/"
  fi
else
  echo "make-nvdec-sample: ffmpeg has no libx265: HEVC sample skipped"
fi
