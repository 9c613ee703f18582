#!/bin/sh
# A QDQ INT8 model end to end through the CLI on the CPU:
# tests/int8_qdq_model.py writes the model, an input and numpy's unfused
# result; `pixflow model run` must
#   - fuse the chains (`model inspect`: at most 12 nodes after the passes of
#     the file's 35; unfused, the weights' DequantizeLinear fold but every
#     Conv, Q and DQ stays: over 20),
#   - match numpy within 2 steps of the output scale, most values equal,
#   - give the same bytes with the SIMD fast path off (PF_CPU_SIMD=none: the
#     plain-C reference) and on.
# Exit 77 when /usr/bin/python3 lacks onnx or numpy (python3-onnx, python3-numpy).
# usage: int8_model_cli.sh PIXFLOW SOURCE_TESTS_DIR
set -u
PIXFLOW=$1
TESTS=$2
PY=/usr/bin/python3
if ! $PY -c 'import onnx, numpy' 2>/dev/null; then
    echo "int8_model_cli: $PY lacks onnx/numpy (apt-get install python3-onnx python3-numpy): skipped"
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY "$TESTS/int8_qdq_model.py" "$T" || exit 1
nodes=$("$PIXFLOW" model inspect "$T/int8_qdq.onnx" | sed -n 's/.* \([0-9]*\) after the passes.*/\1/p')
echo "nodes after the passes: $nodes"
if [ -z "$nodes" ] || [ "$nodes" -gt 12 ]; then
    echo "int8_model_cli: the QDQ chains were not fused ($nodes nodes after the passes)"
    exit 1
fi
"$PIXFLOW" model run "$T/int8_qdq.onnx" --input "x=$T/x.npy" --output-dir "$T/fast" --device cpu || exit 1
PF_CPU_SIMD=none "$PIXFLOW" model run "$T/int8_qdq.onnx" --input "x=$T/x.npy" --output-dir "$T/ref" \
    --device cpu || exit 1
cmp "$T/fast/out.npy" "$T/ref/out.npy" || { echo "int8_model_cli: fast path != reference"; exit 1; }
$PY - "$T" <<'PYEOF' || exit 1
import sys
import numpy as np
t = sys.argv[1]
a = np.load(t + "/fast/out.npy")
b = np.load(t + "/expected.npy")
step = float(np.load(t + "/step.npy")[0])
d = np.abs(a.astype(np.float64) - b)
print("int8_model_cli: %d outputs, %d differ, max %.2f steps" % (a.size, int((d > 0).sum()), d.max() / step))
assert a.shape == b.shape, (a.shape, b.shape)
assert d.max() <= 2.0001 * step, "more than 2 steps off"
assert (d > 0).mean() <= 0.25, "too many values differ"
PYEOF
