#!/usr/bin/env bash
# Inputs of the GPU job-parity tests (tests/jobs_gpu.sh), into .data/jobcheck/
# (git-ignored; no binary media in git). Needs the ffmpeg program with libx264
# and .data/Megamind.avi (scripts/fetch-media.sh).
#
#   scripts/make-jobcheck-sample.sh [--force]
#
# Writes:
#   clip.h264  the first 30 frames of Megamind.avi (a face close-up) scaled to
#              640x360, x264 with 2 B-frames, as an Annex B elementary stream
#              (NVDEC reads it on the GPU machine, which has no FFmpeg)
#   clip.y4m   the same stream decoded by ffmpeg (yuv420p, 10 MB): the CPU
#              side of the comparison sees exactly the frames NVDEC decodes
#   clip.mp4   the same frames encoded again by x264 into MP4 with a 440 Hz AAC
#              tone (FFmpeg's demuxer and decoder on the GPU machine, audio)
#   clip_hevc.mkv, clip.ts, clip10.mkv  the same frames as HEVC in MKV, H.264
#              in MPEG-TS and 10-bit HEVC in MKV (NVDEC behind FFmpeg's
#              demuxers: tests/cuda/test_cuda_nvdec_container.c)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--force" ] && rm -rf .data/jobcheck
dir=.data/jobcheck
have=1
for f in clip.h264 clip.y4m clip.mp4 clip_hevc.mkv clip.ts clip10.mkv; do
  [ -f "$dir/$f" ] || have=0
done
[ "$have" = 1 ] && exit 0
command -v ffmpeg >/dev/null || { echo "make-jobcheck-sample: needs the ffmpeg program" >&2; exit 1; }
[ -f .data/Megamind.avi ] || { echo "make-jobcheck-sample: .data/Megamind.avi is missing (scripts/fetch-media.sh)" >&2; exit 1; }
mkdir -p "$dir"
ffmpeg -v error -y -i .data/Megamind.avi -frames:v 30 -vf scale=640:360 -an -c:v libx264 \
  -preset fast -bf 2 -g 15 -pix_fmt yuv420p -bsf:v h264_mp4toannexb -f h264 "$dir/clip.h264.tmp"
mv "$dir/clip.h264.tmp" "$dir/clip.h264"
ffmpeg -v error -y -i "$dir/clip.h264" -pix_fmt yuv420p -f yuv4mpegpipe "$dir/clip.y4m.tmp"
mv "$dir/clip.y4m.tmp" "$dir/clip.y4m"
ffmpeg -v error -y -i "$dir/clip.y4m" -f lavfi -i sine=frequency=440:duration=1.2 \
  -map 0:v -map 1:a -c:v libx264 -preset fast -bf 2 -g 15 -pix_fmt yuv420p -c:a aac \
  -shortest -f mp4 "$dir/clip.mp4.tmp"
mv "$dir/clip.mp4.tmp" "$dir/clip.mp4"
x265=(-x265-params log-level=error:keyint=15:bframes=2)
ffmpeg -v error -y -i "$dir/clip.y4m" -c:v libx265 "${x265[@]}" -pix_fmt yuv420p \
  -f matroska "$dir/clip_hevc.mkv.tmp"
mv "$dir/clip_hevc.mkv.tmp" "$dir/clip_hevc.mkv"
ffmpeg -v error -y -i "$dir/clip.y4m" -c:v libx264 -preset fast -bf 2 -g 15 -pix_fmt yuv420p \
  -f mpegts "$dir/clip.ts.tmp"
mv "$dir/clip.ts.tmp" "$dir/clip.ts"
ffmpeg -v error -y -i "$dir/clip.y4m" -c:v libx265 "${x265[@]}" -pix_fmt yuv420p10le \
  -f matroska "$dir/clip10.mkv.tmp"
mv "$dir/clip10.mkv.tmp" "$dir/clip10.mkv"
echo "make-jobcheck-sample: $dir/clip.{h264,y4m,mp4,ts} clip_hevc.mkv clip10.mkv"
