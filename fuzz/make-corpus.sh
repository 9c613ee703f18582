#!/bin/sh
# Seed corpora for the model fuzzers (git-ignored): fuzz/corpus-onnx/ from
# the ONNX conformance node models, lraspp.onnx and fuzz/onnx_seeds.py;
# fuzz/corpus-tflite/ from the MediaPipe models and fuzz/tflite_seeds.py.
# Run from the repository root.
set -eu
mkdir -p fuzz/corpus-onnx fuzz/corpus-tflite
for f in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
    [ -f "$f" ] || continue
    cp "$f" "fuzz/corpus-onnx/$(basename "$(dirname "$f")").onnx"
done
[ -f .data/nn/lraspp.onnx ] && cp .data/nn/lraspp.onnx fuzz/corpus-onnx/
[ -d node_modules/@mediapipe ] && find node_modules/@mediapipe -name '*.tflite' -exec cp {} fuzz/corpus-tflite/ \;
python3 fuzz/onnx_seeds.py fuzz/corpus-onnx
python3 fuzz/tflite_seeds.py fuzz/corpus-tflite
echo "with the hand-made seeds: corpus-onnx $(ls fuzz/corpus-onnx | wc -l), corpus-tflite $(ls fuzz/corpus-tflite | wc -l) files"
