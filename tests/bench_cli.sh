#!/usr/bin/env bash
# `pixflow bench` on the CPU: the model subcommand's JSON (throughput, latency
# p50/p99), a sweep that picks a batch under --max-latency, the SVG plots (well
# formed, with data), the per-node profile, the ops subcommand, and usage errors.
#   bench_cli.sh PIXFLOW MODEL
set -u
px=$1
model=$2
py=/usr/bin/python3
[ -f "$model" ] || { echo "SKIP: $model absent"; exit 77; }
[ -x "$py" ] || { echo "SKIP: no $py"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if "$@"; then :; else echo "FAILED: $*"; fail=1; fi; }

"$px" bench model "$model" --iters 5 --warmup 1 --json >"$tmp/one.json" 2>"$tmp/one.err"
check test $? -eq 0
check "$py" - "$tmp/one.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["throughput"] > 0 and o["latency_p50_ms"] > 0, o
assert o["latency_p99_ms"] >= o["latency_p50_ms"], o
assert o["latency"]["p99"] == o["latency_p99_ms"] and o["batch"] == 1, o
assert o["device"] == "cpu" and o["first_run_ms"] > 0, o
PY

"$px" bench model "$model" --iters 4 --warmup 1 --batch 4 --sweep --max-latency 100000 \
  --plot "$tmp/plots" --profile --json >"$tmp/sweep.json" 2>"$tmp/sweep.err"
check test $? -eq 0
check "$py" - "$tmp/sweep.json" "$tmp/plots" <<'PY'
import json, sys, os, xml.dom.minidom as m
o = json.load(open(sys.argv[1]))
assert [r["batch"] for r in o["sweep"]] == [1, 2, 4], o["sweep"]
best = max(o["sweep"], key=lambda r: r["throughput"])
assert o["best_batch"] == best["batch"] == o["batch"], o
assert len(o["profile"]["nodes"]) > 10 and o["profile"]["total_ms"] > 0
for f in ("latency.svg", "histogram.svg", "sweep.svg"):
    d = m.parse(os.path.join(sys.argv[2], f))
    assert d.getElementsByTagName("polyline") or d.getElementsByTagName("rect"), f
PY
# A bound nothing meets: no best batch, and the top level is the last one.
"$px" bench model "$model" --iters 2 --warmup 0 --batch 2 --sweep --max-latency 0.000001 \
  >"$tmp/none.txt" 2>&1
check grep -q "no batch keeps p99 within --max-latency" "$tmp/none.txt"

"$px" bench ops --iters 1 --only resize --json >"$tmp/ops.json" 2>"$tmp/ops.err"
check test $? -eq 0
check "$py" - "$tmp/ops.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["copy_gbps"] > 0 and [x["op"] for x in o["ops"]] == ["resize"], o
assert o["ops"][0]["ms"] > 0 and o["ops"][0]["gbps"] > 0, o
PY

# Usage errors: exit 2 with the option named.
"$px" bench model "$model" --batch 0 >/dev/null 2>"$tmp/e1"; check test $? -eq 2
check grep -q -- "--batch '0'" "$tmp/e1"
"$px" bench model "$model" --max-latency 5 >/dev/null 2>"$tmp/e2"; check test $? -eq 2
check grep -q "only with --sweep" "$tmp/e2"
"$px" bench ops --only nothing >/dev/null 2>"$tmp/e3"; check test $? -eq 2
"$px" bench frobnicate >/dev/null 2>&1; check test $? -eq 2
"$px" bench model /nonexistent.onnx >/dev/null 2>"$tmp/e4"; check test $? -eq 1
check grep -q "nonexistent.onnx" "$tmp/e4"
exit $fail
