#!/usr/bin/env bash
# `pixflow segment` over two GPUs (label cuda; exits 77 unless cuda:0 and cuda:1 exist).
#   segment_multigpu.sh PIXFLOW JOB_COMPARE SRC WORKDIR
# Four copies of .data/jobcheck/clip.h264 (30 frames, NVDEC) are segmented once on cuda:0
# alone and once over cuda:0,cuda:1 (round-robin: streams 0 and 2 on cuda:0, 1 and 3 on
# cuda:1), then with --assign 1,1,1,0; masks written per stream. Checks: every stream
# done with all its frames on the device the summary names, a chain per device in --stats
# (infer_gpu0 and infer_gpu1), and every mask equal to the one-GPU run's within the
# fp16 tolerance the jobs' parity tests use (same model, same kernels: identical in
# practice). Usage errors: --assign with a position past the list, one input on two GPUs.
set -u
PIXFLOW=${1:?pixflow}
CMP=${2:?job_compare}
SRC=${3:?source tree}
WORK=${4:?work dir}
export PIXFLOW_LOG=error
unset PIXFLOW_DEVICE
"$PIXFLOW" info --device cuda:1 >/dev/null 2>&1 || { echo "SKIP: no cuda:1"; exit 77; }
clip=$SRC/.data/jobcheck/clip.h264
[ -f "$clip" ] || { echo "SKIP: $clip absent (scripts/make-jobcheck-sample.sh)"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK/in"
cd "$WORK" || exit 1
for i in 0 1 2 3; do cp "$clip" "in/cam$i.h264"; done
fail=0
run() { # label device [args]
  local label=$1 dev=$2; shift 2
  "$PIXFLOW" segment in/cam0.h264 in/cam1.h264 in/cam2.h264 in/cam3.h264 -o null \
    --mask-out "$label/{name}/" --device "$dev" --quiet --stats --json "$@" >"$label.json" \
    2>"$label.err" || { echo "FAILED: $label: $(tail -3 "$label.err")"; fail=1; }
}
run one cuda:0
run two cuda:0,cuda:1
run assigned cuda:0,cuda:1 --assign 1,1,1,0
/usr/bin/python3 - two.json assigned.json <<'PY' || fail=1
import json, sys
for f, want in ((sys.argv[1], ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]),
                (sys.argv[2], ["cuda:1", "cuda:1", "cuda:1", "cuda:0"])):
    txt = open(f).read()
    o = json.loads(txt[txt.index("{"):txt.rindex("}") + 1]) if txt.lstrip().startswith("{") else json.loads(txt[txt.rindex("\n{") + 1:])
    got = [s["device"] for s in o["streams"]]
    assert got == want, (f, got)
    assert all(s["frames"] == 30 and not s["error"] for s in o["streams"]), o["streams"]
    assert o["device"] == "cuda:0,cuda:1", o["device"]
print("devices per stream as assigned; 4 x 30 frames")
PY
grep -q "infer_gpu1" two.err two.json 2>/dev/null || grep -q "infer_gpu1" two.json || {
  echo "FAILED: no infer_gpu1 stage in --stats"; fail=1; }
for run in two assigned; do
  for i in 0 1 2 3; do
    for m in one/cam$i/*; do
      b=$(basename "$m")
      "$CMP" "$m" "$run/cam$i/$b" --max-mean 0.5 --over 8 --max-over-frac 0.005 >/dev/null 2>&1 ||
        { echo "FAILED: $run/cam$i/$b differs from one/cam$i/$b"; fail=1; break; }
    done
  done
done
n1=$(ls one/cam*/* | wc -l)
[ "$n1" -eq 120 ] || { echo "FAILED: $n1 masks in the one-GPU run, expected 120"; fail=1; }
"$PIXFLOW" segment in/cam0.h264 in/cam1.h264 -o null --device cuda:0,cuda:1 --assign 0,2 \
  >/dev/null 2>err.txt
[ $? -eq 2 ] && grep -q -- "--assign" err.txt || { echo "FAILED: --assign 0,2 accepted"; fail=1; }
"$PIXFLOW" segment in/cam0.h264 -o null --device cuda:0,cuda:1 >/dev/null 2>err.txt
[ $? -ne 0 ] && grep -q "several video inputs" err.txt ||
  { echo "FAILED: one input on two GPUs: $(cat err.txt)"; fail=1; }
[ $fail -eq 0 ] && echo "segment on two GPUs: ok"
exit $fail
