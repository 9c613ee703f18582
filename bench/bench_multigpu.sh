#!/usr/bin/env bash
# Segmentation on two GPUs vs one (GPU machine with two GPUs):
#   bash bench/bench_multigpu.sh PIXFLOW INPUT.h264 [STREAMS]
# STREAMS (default 16) copies of INPUT (H.264, NVDEC) segmented with -o null (throughput
# mode, batch 64): on cuda:0 alone, then over cuda:0,cuda:1 (round-robin); aggregate fps
# = all frames / elapsed from the summary; and the ratio (goal >= 1.9). Then peer access
# and frame copies between the GPUs (bench_p2p next to PIXFLOW's bench/).
set -u
px=${1:?pixflow}
in=${2:?input}
n=${3:-16}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for i in $(seq 0 $((n - 1))); do ln -s "$(readlink -f "$in")" "$tmp/cam$i.h264"; args+=("$tmp/cam$i.h264"); done
fps() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); o=json.loads(t[t.index('{'):]); print(o['frames'], o['fps'], o['elapsed_s'])" "$1"; }
for pass in warm one two one_again two_again; do
  dev=cuda:0; case $pass in two*) dev=cuda:0,cuda:1 ;; esac
  "$px" segment "${args[@]}" -o null --device "$dev" --quiet --json >"$tmp/$pass.json" 2>"$tmp/$pass.err" ||
    { echo "$pass failed: $(tail -2 "$tmp/$pass.err")"; continue; }
  [ "$pass" = warm ] && continue # fills the plan cache
  echo "$pass $dev $(fps "$tmp/$pass.json")"
done | tee "$tmp/table"
python3 - "$tmp/table" "$n" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 5]
one = max(float(r[3]) for r in rows if r[0].startswith("one"))
two = max(float(r[3]) for r in rows if r[0].startswith("two"))
print("segment %s x 1080p H.264, -o null: 1 GPU %.0f fps, 2 GPUs %.0f fps: %.2fx (goal >= 1.9x)"
      % (sys.argv[2], one, two, two / one))
PY
p2p=$(dirname "$px")/bench/bench_p2p
[ -x "$p2p" ] && "$p2p" --iters 50
