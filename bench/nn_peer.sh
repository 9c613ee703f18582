#!/usr/bin/env bash
# Inference engine vs PyTorch on the GPU machine, in one run:
#   bash bench/nn_peer.sh BUILD_DIR OUT_DIR
# 1. bench/nn_peer_torch.py exports DeepLabV3-ResNet50 and LRASPP-MobileNetV3
#    (random weights, seed 0) to ONNX, writes an input and PyTorch's float32
#    output (TF32 off), and times PyTorch fp16 eager / CUDA graph at batch 1, 8;
# 2. `pixflow model run` runs the same ONNX files on the same input on
#    cuda:0 in fp32 (TF32 off) and fp16; the relative L2 error against
#    PyTorch's fp32 output is computed here (numpy);
# 3. bench_nn times pixflow's executor (CUDA graph) at batch 1 and 8, fp16,
#    and the selfie segmentation model at batch 1 and 64;
# then prints one table: ms per frame, the ratio to PyTorch's CUDA-graph
# figure (target >= 1.3x), the errors (targets 1e-3 fp32, 1e-2 fp16).
set -uo pipefail
build=${1:?build dir}
out=${2:?out dir}
mkdir -p "$out/nn"
nn=$(cd "$out/nn" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
pixflow=$build/pixflow
bench=$build/bench/bench_nn

python3 "$here/bench/nn_peer_torch.py" --out "$nn" --json 2>/dev/null >"$nn/peer.jsonl" ||
  { echo "nn_peer: PyTorch peer failed"; exit 1; }

rel_l2() { # a.npy b.npy
  python3 - "$1" "$2" <<'EOF'
import sys, numpy as np
a = np.load(sys.argv[1]).astype(np.float64); b = np.load(sys.argv[2]).astype(np.float64)
if a.shape != b.shape:
    print("shape %s vs %s" % (a.shape, b.shape)); sys.exit(0)
print("%.3e" % (np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)))
EOF
}

: >"$nn/pixflow.jsonl"
for m in lraspp deeplabv3; do
  for prec in fp32 fp16; do
    d="$nn/${m}_$prec"
    rm -rf "$d"
    if "$pixflow" model run "$nn/$m.onnx" --input "input=$nn/${m}_in_b1.npy" --output-dir "$d" \
         --device cuda:0 --precision "$prec" >"$d.log" 2>&1; then
      err=$(rel_l2 "$d/out.npy" "$nn/${m}_ref_b1.npy")
    else
      err="run failed: $(tail -1 "$d.log")"
    fi
    echo "{\"model\":\"$m\",\"precision\":\"$prec\",\"rel_l2_vs_torch_fp32\":\"$err\"}" >>"$nn/pixflow.jsonl"
  done
  for b in 1 8; do
    "$bench" --device cuda:0 --model "$nn/$m.onnx" --batch "$b" --precision fp16 --json \
      >>"$nn/pixflow.jsonl" 2>"$nn/bench_${m}_$b.err" || echo "{\"model\":\"$m.onnx\",\"batch\":$b,\"error\":true}" >>"$nn/pixflow.jsonl"
  done
done
selfie=$here/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite
for b in 1 64; do
  "$bench" --device cuda:0 --model "$selfie" --batch "$b" --precision fp16 --json \
    >>"$nn/pixflow.jsonl" 2>/dev/null || echo "{\"model\":\"selfie\",\"batch\":$b,\"error\":true}" >>"$nn/pixflow.jsonl"
done

python3 - "$nn/peer.jsonl" "$nn/pixflow.jsonl" <<'EOF'
import json, sys
peer = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
print("nn vs PyTorch (fp16, 512x512, CUDA graph on both sides; ms per frame)")
print("%-10s %5s %12s %12s %12s %8s" % ("model", "batch", "pixflow", "torch graph", "torch eager", "speedup"))
for p in peer:
    name = p["model"] + ".onnx"
    r = [x for x in mine if x.get("model") == name and x.get("batch") == p["batch"]]
    if not r or r[0].get("error"):
        print("%-10s %5d %12s %12.3f %12.3f" % (p["model"], p["batch"], "FAILED",
              p["graph_ms_per_frame"], p["eager_ms"] / p["batch"]))
        continue
    ms = r[0]["median_ms_graph"] / p["batch"]
    print("%-10s %5d %12.3f %12.3f %12.3f %7.2fx" % (p["model"], p["batch"], ms,
          p["graph_ms_per_frame"], p["eager_ms"] / p["batch"], p["graph_ms_per_frame"] / ms))
for x in mine:
    if "rel_l2_vs_torch_fp32" in x:
        print("parity %-10s %s: rel L2 vs PyTorch fp32 = %s (target %s)" % (
            x["model"], x["precision"], x["rel_l2_vs_torch_fp32"],
            "1e-3" if x["precision"] == "fp32" else "1e-2"))
for x in mine:
    if x.get("model") == "selfie_segmentation.tflite":
        print("selfie batch %d fp16: %.3f ms per batch, %.0f frames/s" % (
            x["batch"], x["median_ms_graph"], 1000.0 * x["batch"] / x["median_ms_graph"]))
for p in peer[:1]:
    print("torch %s, torchvision %s; PyTorch's own fp16 vs fp32 rel L2: see peer.jsonl" % (
        p["torch"], p["torchvision"]))
EOF
