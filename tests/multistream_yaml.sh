#!/usr/bin/env bash
# The multi-stream YAML examples run (registered by
# tests/segment_multi_cli.cmake; `pixflow run` needs libyaml):
#
#   multistream_yaml.sh CASE PIXFLOW WORKDIR SRC
#
# CASE:
#   synthetic  examples/multistream.yaml as it is: exit 0, each of the four
#              cameras' sinks checksums its 60 frames, --json lists 4 streams
#              of 60 frames with no drops
#   live       examples/multistream_live.yaml with its inputs made here: the
#              two .data/ files generated (40 and 50 frames, 10 fps) in the
#              work directory, the live stream served by an ffmpeg feeder
#              (MPEG-TS over TCP, -re) on a free port instead of 5000, 2
#              retries instead of 5. The feeder stops after 2 s and never
#              comes back: the camera retries, gives up, its stream ends;
#              the files go on. Exit 0, each output has its own stream's
#              frames (all of a file's; the camera's: those sent) and size,
#              --json has 3 streams
# Exit 0 pass, 1 fail (the failing check is printed), 77 skip.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
WORK=${3:?work directory}
SRC=${4:?source tree}
export PIXFLOW_DEVICE=cpu
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

. "$SRC/tests/live_feeders.sh" # pids + EXIT trap, fail, free_port, wait_listening

case $case_name in
synthetic)
    timeout 60 "$PIXFLOW" run "$SRC/examples/multistream.yaml" --json > run.json 2> run.err
    rc=$?
    cat run.err
    [ "$rc" = 0 ] || fail "exit status $rc"
    [ "$(grep -c '^checksum out[0-3]: 60 items' run.err)" = 4 ] || fail "not 4 sinks of 60 items"
    python3 - run.json <<'PY' || fail "--json"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["streams"]
assert len(s) == 4, s
for x in s:
    assert x["items_out"] == 60 and x["dropped"] == 0, x
PY
    ;;
live)
    command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null ||
        { echo "SKIP: no ffmpeg/ffprobe tool"; exit 77; }
    [ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
        { echo "SKIP: no selfie model (npm)"; exit 77; }
    ln -s "$SRC/node_modules" node_modules
    mkdir .data
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i testsrc2=size=192x144:rate=10 \
        -frames:v 40 -c:v mpeg4 .data/vtest.avi || fail "cannot make .data/vtest.avi"
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i testsrc2=size=160x120:rate=10 \
        -frames:v 50 -c:v mpeg4 .data/Megamind.avi || fail "cannot make .data/Megamind.avi"
    port=$(free_port SOCK_STREAM)
    grep -q '"tcp://127.0.0.1:5000"' "$SRC/examples/multistream_live.yaml" ||
        fail "the example no longer reads tcp://127.0.0.1:5000"
    # 2 retries instead of 5: the same path in 1.5 s instead of 7.5 s.
    grep -q "retries: 5 " "$SRC/examples/multistream_live.yaml" || fail "the example's retries changed"
    sed -e "s|tcp://127.0.0.1:5000|tcp://127.0.0.1:$port|" -e "s|retries: 5 |retries: 2 |" \
        "$SRC/examples/multistream_live.yaml" > live.yaml
    ffmpeg -hide_banner -nostdin -loglevel error -re -f lavfi -i testsrc2=size=128x96:rate=10 \
        -t 2 -c:v libx264 -preset ultrafast -tune zerolatency -g 10 -f mpegts \
        "tcp://127.0.0.1:$port?listen=1" &
    pids+=("$!")
    wait_listening "$port"
    timeout 60 "$PIXFLOW" run live.yaml --json > run.json 2> run.err; rc=$?
    grep -v "items/s" run.err
    [ "$rc" = 0 ] || fail "exit status $rc"
    grep -q "giving up after 2 reconnect attempts" run.err || fail "the camera did not give up"
    python3 - run.json <<'PY' || fail "outputs"
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
s = {x["source"]: x for x in j["streams"]}
assert sorted(s) == [0, 1, 2], s
def probe(p):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                          "-show_entries", "stream=width,height,nb_read_frames", "-of", "csv=p=0",
                          p], capture_output=True, text=True, check=True).stdout.split(",")
    return int(out[0]), int(out[1]), int(out[2])
for src, path, size, n in [(0, "vtest_seg.mp4", (192, 144), 40),
                           (1, "Megamind_seg.mp4", (160, 120), 50),
                           (2, "cam_seg.mp4", (128, 96), None)]:
    w, h, frames = probe(path)
    print(path, "%dx%d" % (w, h), frames, "frames; json", s[src]["items_out"])
    assert (w, h) == size, (path, w, h)
    assert frames == s[src]["items_out"], (path, frames, s[src])
    if n is not None:
        assert frames == n, (path, frames, n)
    else:
        assert 12 <= frames <= 21, (path, frames)  # 2 s at 10 fps, the start maybe cut
PY
    ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
echo PASS
