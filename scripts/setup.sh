#!/usr/bin/env bash
# Installs what pixflow needs to build, test and run its jobs, and nothing
# when it is already there (safe to run again and again):
#   - Debian packages (apt-get), only those missing;
#   - the models from npm (package.json + package-lock.json) into node_modules/,
#     only when the lock file changed since the last install.
# CUDA is optional: the build uses nvcc when /usr/local/cuda (or PATH) has it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools, checked by command (node and npm may come from another packaging of
# Node.js, which Debian's npm package would conflict with): "command:package".
DEB_TOOLS=(cmake:cmake make:make gcc:gcc g++:g++ pkg-config:pkg-config node:nodejs npm:npm
           protoc-c:protobuf-c-compiler ffmpeg:ffmpeg)
# Libraries, checked by Debian package name. Later modules add theirs here.
# libopencv-dev: only for the oracle tests (tests/test_*.cpp) and CPU peer benchmarks.
# libyaml-dev: YAML pipelines (optional at build time, wanted here).
# libprotobuf-c-dev + libonnx-dev: the ONNX reader (protoc-c generates the C
# code from libonnx-dev's onnx.proto at build time; optional, wanted here).
# libonnx-testdata: the ONNX conformance cases the reader's tests open.
# libopenblas-dev: sgemm under the nn CPU executor's conv/GEMM.
# libpng-dev, libjpeg-dev: images; libav*-dev, libswscale-dev: video through
# FFmpeg (optional at build time, wanted here); libffmpeg-nvenc-dev: the
# NVDEC headers (ffnvcodec, runtime-loaded libnvcuvid), carried to the GPU machine;
# libavdevice-dev: V4L2 cameras (/dev/videoN) through libavdevice (optional).
# libhiredis-dev: the Redis job queue (optional at build time, wanted here);
# redis-server (with redis-cli): the queue's tests start their own server
# (the service the package may start on port 6379 is never used by them).
# python3-dev: the Python package (python/); python3-numpy + python3-pytest: its
# tests; python3-setuptools, -venv, -pip: `pip install .` offline (its test).
# python3-onnx: tests/int8_qdq_model.py writes the QDQ INT8 test model; onnx.checker on
# the files the ONNX writer and the quantizer write.
DEB_LIBS=(libopencv-dev libyaml-dev libprotobuf-c-dev libonnx-dev libonnx-testdata
          libopenblas-dev libpng-dev libjpeg-dev libavformat-dev libavcodec-dev libavutil-dev
          libswscale-dev libffmpeg-nvenc-dev libavdevice-dev libhiredis-dev redis-server
          python3-dev python3-numpy python3-pytest python3-setuptools python3-venv python3-pip
          python3-onnx)

missing=()
for t in "${DEB_TOOLS[@]}"; do
  command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t#*:}")
done
for p in "${DEB_LIBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Models from npm, pinned by the lock file. The stamp holds the lock's hash.
stamp=node_modules/.pixflow-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing models from npm (package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
# face_landmark.tflite ships only inside @mediapipe/face_mesh's packed assets.
scripts/extract-face-landmark.sh

# Sample media from Debian packages (astronaut.png, vtest.avi, ...) into .data/
# and generated inputs; only what is missing (scripts/fetch-media.sh).
if [ -x scripts/fetch-media.sh ]; then
  scripts/fetch-media.sh
fi

# The 30-frame job clips (.data/jobcheck: H.264 ES, Y4M, MP4, TS, HEVC, 10-bit) that
# test_jobs_api and the GPU parity tests read; made by ffmpeg from Megamind.avi, once.
if [ -x scripts/make-jobcheck-sample.sh ]; then
  scripts/make-jobcheck-sample.sh
fi
