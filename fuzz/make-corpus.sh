#!/bin/sh
# Seed corpora for the fuzzers (git-ignored): fuzz/corpus-onnx/ from
# the ONNX conformance node models, lraspp.onnx and fuzz/onnx_seeds.py;
# fuzz/corpus-tflite/ from the MediaPipe models and fuzz/tflite_seeds.py;
# fuzz/corpus-video/ (fuzz_video) small clips made with the ffmpeg tool
# (64x48, 6 frames: mpeg4/AVI, h264/MP4, hevc/MKV, vp9/WebM, mjpeg/AVI,
# ffv1/MKV, Y4M) and the first 64 KiB of .data/Megamind.avi; fuzz/corpus-es/
# (fuzz_h264_es) the H.264 and HEVC clips as Annex B streams.
# Run from the repository root.
set -eu
mkdir -p fuzz/corpus-onnx fuzz/corpus-tflite fuzz/corpus-video
if command -v ffmpeg >/dev/null; then
    v() { # v FILE ENCODER-ARGS...
        out=$1
        shift
        ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=64x48:rate=10 -frames:v 6 \
            "$@" "fuzz/corpus-video/$out"
    }
    v mpeg4.avi -c:v mpeg4 -bf 2 -g 3
    v h264.mp4 -c:v libx264 -preset ultrafast -bf 2 -g 3 -pix_fmt yuv420p -movflags +faststart
    v h264.ts -c:v libx264 -preset ultrafast -g 3 -pix_fmt yuv420p
    v hevc.mkv -c:v libx265 -preset ultrafast -g 3 -pix_fmt yuv420p -x265-params log-level=error
    v vp9.webm -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 3
    v mjpeg.avi -c:v mjpeg -pix_fmt yuvj420p
    v ffv1.mkv -c:v ffv1
    v clip.y4m -pix_fmt yuv420p
    # fuzz_h264_es: Annex B elementary streams.
    mkdir -p fuzz/corpus-es
    ffmpeg -v error -nostdin -y -i fuzz/corpus-video/h264.mp4 -c copy -f h264 fuzz/corpus-es/clip.h264
    ffmpeg -v error -nostdin -y -i fuzz/corpus-video/hevc.mkv -c copy -f hevc fuzz/corpus-es/clip.hevc
fi
[ -f .data/Megamind.avi ] && head -c 65536 .data/Megamind.avi >fuzz/corpus-video/megamind-head.avi
for f in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
    [ -f "$f" ] || continue
    cp "$f" "fuzz/corpus-onnx/$(basename "$(dirname "$f")").onnx"
done
[ -f .data/nn/lraspp.onnx ] && cp .data/nn/lraspp.onnx fuzz/corpus-onnx/
[ -d node_modules/@mediapipe ] && find node_modules/@mediapipe -name '*.tflite' -exec cp {} fuzz/corpus-tflite/ \;
python3 fuzz/onnx_seeds.py fuzz/corpus-onnx
python3 fuzz/tflite_seeds.py fuzz/corpus-tflite
echo "with the hand-made seeds: corpus-onnx $(ls fuzz/corpus-onnx | wc -l), corpus-tflite $(ls fuzz/corpus-tflite | wc -l), corpus-video $(ls fuzz/corpus-video | wc -l) files"
