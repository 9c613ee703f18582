#!/usr/bin/env bash
# `pixflow bench segment|reproject` on the CPU with the small sample media:
# the JSON keys (throughput, latency_ms p50/p90/p99/max, first_frame_ms,
# steady_fps, whole_run_fps) and their consistency, the cold (--no-cache) and
# warm start both reporting the time to the first frame, --frames, the SVG
# plots (well formed, with data), reproject's temporary outputs removed, and
# bad input refused with a message that names it.
#   cli_bench_jobs.sh PIXFLOW SOURCE_DIR
set -u
px=$1
src=$2
py=/usr/bin/python3
clip=$src/.data/jobcheck/clip.y4m
img1=$src/.data/astronaut.png
img2=$src/.data/messi5.jpg
for f in "$clip" "$img1" "$img2"; do [ -f "$f" ] || { echo "SKIP: $f absent"; exit 77; }; done
[ -x "$py" ] || { echo "SKIP: no $py"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PIXFLOW_CACHE_DIR=$tmp/cache TMPDIR=$tmp/t
mkdir -p "$TMPDIR"
fail=0
check() { if "$@"; then :; else echo "FAILED: $*"; fail=1; fi; }
# ok STATUS ERRFILE: the command before succeeded; else its stderr is shown.
ok() { if [ "$1" -eq 0 ]; then :; else echo "FAILED: exit $1; stderr:"; cat "$2"; fail=1; fi; }

# The common checks of one JSON object: keys, ordering, consistency.
cat >"$tmp/check.py" <<'PY'
import json, math, sys
o = json.load(open(sys.argv[1]))
frames, cache = int(sys.argv[2]), sys.argv[3] == "on"
for k in ("throughput", "latency_ms", "first_frame_ms", "steady_fps", "whole_run_fps"):
    assert k in o, (k, o)
l = o["latency_ms"]
assert 0 < l["p50"] <= l["p90"] <= l["p99"] <= l["max"], l
assert o["frames"] == frames, (o["frames"], frames)
assert o["throughput"] == o["steady_fps"] > 0, o
assert o["whole_run_fps"] > 0 and o["first_frame_ms"] > 0, o
assert o["plan_cache"] is cache, o
assert 0 <= o["warmup"] <= frames // 2, o
r = o["whole_run_over_steady"]
assert math.isclose(r, o["whole_run_fps"] / o["steady_fps"], rel_tol=1e-4), o
assert o["stages"] and all(0 <= s["busy"] <= 1.0001 for s in o["stages"]), o["stages"]
if o["command"] == "segment":
    # After the model is loaded comes after the start.
    assert 0 < o["first_frame_after_model_ms"] < o["first_frame_ms"], o
    assert [s["name"] for s in o["stages"]][:2] == ["read", "preprocess"], o["stages"]
PY
cat >"$tmp/svg.py" <<'PY'
import os, sys, xml.dom.minidom as m
for f in ("latency.svg", "histogram.svg"):
    p = os.path.join(sys.argv[1], f)
    d = m.parse(p)
    assert d.documentElement.tagName == "svg", p
    assert d.getElementsByTagName("polyline") or len(d.getElementsByTagName("rect")) > 2, p
PY

# Segment, warm start (the default) with plots.
"$px" bench segment "$clip" --device cpu --batch 4 --json --plot "$tmp/seg" \
  >"$tmp/seg.json" 2>"$tmp/seg.err"
ok $? "$tmp/seg.err"
check "$py" "$tmp/check.py" "$tmp/seg.json" 30 on
check "$py" "$tmp/svg.py" "$tmp/seg"
# Cold start: the plan cache off; latency mode; the first 12 frames.
"$px" bench segment "$clip" --device cpu --latency --frames 12 --warmup 2 --no-cache --json \
  >"$tmp/cold.json" 2>"$tmp/cold.err"
ok $? "$tmp/cold.err"
check "$py" "$tmp/check.py" "$tmp/cold.json" 12 off
check "$py" - "$tmp/cold.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["mode"] == "latency" and o["batch"] == 1 and o["warmup"] == 2, o
PY
# The text report names the figures.
"$px" bench segment "$clip" --device cpu --frames 8 >"$tmp/seg.txt" 2>&1
ok $? "$tmp/seg.txt"
check grep -q "throughput: .* frames/s" "$tmp/seg.txt"
check grep -q "first frame: .* ms after the model was loaded" "$tmp/seg.txt"

# Reproject: two images, small views, plots; its outputs are removed.
"$px" bench reproject "$img1" "$img2" --device cpu --views 2:90:64x48 --json \
  --plot "$tmp/rp" >"$tmp/rp.json" 2>"$tmp/rp.err"
ok $? "$tmp/rp.err"
check "$py" "$tmp/check.py" "$tmp/rp.json" 2 on
check "$py" "$tmp/svg.py" "$tmp/rp"
check test -z "$(ls -A "$TMPDIR")"
# A video input (Y4M: read without FFmpeg, also on the GPU machine) and
# --frames: the job is cancelled once 5 frames are done (those in flight
# finish too).
"$px" bench reproject "$clip" --device cpu --views 1:90:32x24 --frames 5 \
  --json >"$tmp/rpv.json" 2>"$tmp/rpv.err"
ok $? "$tmp/rpv.err"
check "$py" - "$tmp/rpv.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["status"] == "interrupted" and 5 <= o["frames"] < 30, o
assert o["throughput"] > 0 and o["latency_ms"]["p50"] > 0, o
PY
check test -z "$(ls -A "$TMPDIR")"

# Bad input: refused, the message names it; nothing measured.
"$px" bench segment "$tmp/missing.mp4" --device cpu --json >"$tmp/b1.out" 2>"$tmp/b1.err"
check test $? -ne 0
check grep -q "missing.mp4" "$tmp/b1.err"
check test ! -s "$tmp/b1.out"
"$px" bench reproject "$tmp/missing.jpg" --device cpu --views 1:90:8x8 >"$tmp/b2.out" \
  2>"$tmp/b2.err"
check test $? -ne 0
check grep -q "missing.jpg" "$tmp/b2.err"
check test -z "$(ls -A "$TMPDIR")"
# Usage errors: exit 2, the option named.
"$px" bench segment "$clip" --batch 0 >/dev/null 2>"$tmp/u1"; check test $? -eq 2
check grep -q -- "--batch '0'" "$tmp/u1"
"$px" bench segment "$clip" --latency --batch 4 >/dev/null 2>"$tmp/u2"; check test $? -eq 2
check grep -q -- "--latency" "$tmp/u2"
"$px" bench reproject "$img1" --views 0 >/dev/null 2>"$tmp/u3"; check test $? -eq 2
check grep -q -- "--views '0'" "$tmp/u3"
"$px" bench segment >/dev/null 2>"$tmp/u4"; check test $? -eq 2
check grep -q "no INPUT" "$tmp/u4"

[ $fail -eq 0 ] && echo "cli_bench_jobs: all checks passed"
exit $fail
