#!/usr/bin/env bash
# CLI tests of `pixflow segment IN1 IN2 ... -o PATTERN` (several inputs in one
# pipeline; registered by tests/segment_multi_cli.cmake).
#
#   segment_multi_cli.sh CASE PIXFLOW WORKDIR SRC
#
# CASE:
#   files    3 generated Y4M inputs of different sizes and lengths in one run:
#            each output has its input's frame count and size, and equals
#            (within 1 level mean per frame) a single-input run of the same
#            file, so frames kept their stream and order and the mask
#            smoothing is per stream; --json has 3 streams; the text summary
#            one line per stream
#   patterns -o without {name}/{index}, -o missing, --mask-out without a
#            key, '-' among several, two inputs on one output: exit 2 or 1
#            with a message naming the problem; nothing written
#   index    -o 'out/{index}.y4m' and --mask-out 'm/{index}/': outputs 0..2
#   realtime --realtime: two 1 s files take at least 0.9 s
#   live     an MPEG-TS feeder over TCP (-re) plus a file: both outputs
#            complete, the live line in the summary
#   late     a live input not up yet when the run starts (its feeder
#            starts 0.8 s later) is opened in the background while the
#            other stream runs (--retries, back-off): exit 0, both outputs;
#            a sender that never comes: the file's output whole, the
#            camera's stream FAILED in the summary, exit 1; --retries 0:
#            exit 1 at once
#   parallel 8 TCP feeders (-re, 30 fps): the inputs are opened at once,
#            not one after the other (each open waits ~0.75 s for the
#            stream's data: 6 s in turn); `--frames 1` over all 8 takes
#            under 4 s (not checked under sanitizers), every stream has
#            its frame
# Exit 0 pass, 1 fail (the failing check is printed), 77 skip.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
WORK=${3:?work directory}
SRC=${4:?source tree}
export PIXFLOW_DEVICE=cpu PIXFLOW_MODELS=$SRC
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg tool"; exit 77; }
[ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
    { echo "SKIP: no selfie model (npm)"; exit 77; }

. "$SRC/tests/live_feeders.sh" # pids + EXIT trap, fail, free_port, wait_listening

# gen NAME WxH FRAMES: a Y4M test pattern.
gen() {
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi \
        -i "testsrc=size=$2:rate=25" -frames:v "$3" -pix_fmt yuv420p "$1.y4m" ||
        fail "ffmpeg could not make $1.y4m"
}

# y4m_info FILE: "frames WxH"
y4m_info() {
    python3 - "$1" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
hdr = d[:d.index(b'\n')].split()
w = [t[1:] for t in hdr if t.startswith(b'W')][0].decode()
h = [t[1:] for t in hdr if t.startswith(b'H')][0].decode()
print(d.count(b'FRAME\n'), w + 'x' + h)
PY
}

# close A B: same frame count and every frame within 1 level mean difference.
close() {
    python3 - "$1" "$2" <<'PY'
import sys
def frames(p):
    d = open(p, 'rb').read()
    parts = d.split(b'FRAME\n')[1:]
    return [x.rstrip(b'\n') if False else x for x in parts]
a, b = frames(sys.argv[1]), frames(sys.argv[2])
if len(a) != len(b):
    sys.exit("frame counts differ: %d vs %d" % (len(a), len(b)))
for i, (x, y) in enumerate(zip(a, b)):
    if len(x) != len(y):
        sys.exit("frame %d sizes differ" % i)
    m = sum(abs(p - q) for p, q in zip(x, y)) / len(x)
    if m > 1.0:
        sys.exit("frame %d differs: mean %.3f" % (i, m))
PY
}

case $case_name in
files)
    gen a 160x120 12; gen b 96x64 20; gen c 128x96 7
    mkdir out single
    timeout 120 "$PIXFLOW" segment a.y4m b.y4m c.y4m -o 'out/{name}_seg.y4m' --batch 4 --quiet \
        --json > multi.json 2> multi.err; rc=$?
    cat multi.err multi.json
    [ "$rc" = 0 ] || fail "exit status $rc"
    python3 - multi.json <<'PY' || fail "--json"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["streams"]
assert len(s) == 3, s
assert [x["frames"] for x in s] == [12, 20, 7], s
assert j["frames"] == 39, j["frames"]
assert [x["output"] for x in s] == ["out/a_seg.y4m", "out/b_seg.y4m", "out/c_seg.y4m"], s
PY
    for spec in "a 12 160x120" "b 20 96x64" "c 7 128x96"; do
        set -- $spec
        [ "$(y4m_info "out/$1_seg.y4m")" = "$2 $3" ] ||
            fail "out/$1_seg.y4m: $(y4m_info "out/$1_seg.y4m"), expected $2 $3"
        timeout 60 "$PIXFLOW" segment "$1.y4m" -o "single/$1.y4m" --batch 4 --quiet > /dev/null ||
            fail "single run of $1.y4m"
        close "out/$1_seg.y4m" "single/$1.y4m" || fail "$1: several-input output differs from a single run"
    done
    timeout 120 "$PIXFLOW" segment a.y4m b.y4m c.y4m -o null --quiet > text.out || fail "-o null"
    cat text.out
    [ "$(grep -c '^  stream [0-2] ' text.out)" = 3 ] || fail "no per-stream lines"
    grep -q 'stream 1  b.y4m -> <null>: 20 frames' text.out || fail "stream 1 line"
    ;;
patterns)
    gen a 64x48 3; gen b 64x48 3
    mkdir d1 d2; cp a.y4m d1/x.y4m; cp b.y4m d2/x.y4m
    "$PIXFLOW" segment a.y4m b.y4m -o out.y4m 2> e1; rc=$?
    [ "$rc" = 2 ] && grep -q "{name} or {index}" e1 || { cat e1; fail "-o without a key: $rc"; }
    "$PIXFLOW" segment a.y4m b.y4m 2> e2; rc=$?
    [ "$rc" = 2 ] && grep -q "several inputs need a pattern" e2 || { cat e2; fail "no -o: $rc"; }
    "$PIXFLOW" segment a.y4m b.y4m -o '{name}.y4m' --mask-out masks 2> e3; rc=$?
    [ "$rc" = 2 ] && grep -q -- "--mask-out 'masks'" e3 || { cat e3; fail "--mask-out: $rc"; }
    "$PIXFLOW" segment a.y4m - -o '{name}.y4m' 2> e4 < /dev/null; rc=$?
    [ "$rc" = 2 ] && grep -q "stdin" e4 || { cat e4; fail "'-' among several: $rc"; }
    "$PIXFLOW" segment d1/x.y4m d2/x.y4m -o 'o/{name}.y4m' 2> e5; rc=$?
    [ "$rc" = 1 ] && grep -q "d1/x.y4m and d2/x.y4m would both be written to" e5 ||
        { cat e5; fail "same output: $rc"; }
    "$PIXFLOW" segment a.y4m missing.y4m -o 'o/{name}.y4m' 2> e6; rc=$?
    [ "$rc" = 1 ] && grep -q "missing.y4m" e6 || { cat e6; fail "missing input: $rc"; }
    [ ! -e o ] && [ ! -e out.y4m ] && [ ! -e a.y4m.y4m ] || fail "something was written"
    # One stream's output is another stream's input: refused, the input intact.
    cp b.y4m a_seg.y4m; sum0=$(cksum < a_seg.y4m)
    "$PIXFLOW" segment a.y4m a_seg.y4m -o '{name}_seg.y4m' 2> e7; rc=$?
    [ "$rc" = 1 ] && grep -q "would replace a_seg.y4m, an input of this run" e7 ||
        { cat e7; fail "output over another stream's input: $rc"; }
    [ "$(cksum < a_seg.y4m)" = "$sum0" ] || fail "a_seg.y4m was changed"
    ;;
index)
    gen a 64x48 3; gen b 80x48 4; gen c 64x64 5
    timeout 60 "$PIXFLOW" segment a.y4m b.y4m c.y4m -o 'out/{index}.y4m' --mask-out 'm/{index}/' \
        --quiet > sum.txt 2> err.txt || { cat err.txt; fail "exit status"; }
    [ "$(y4m_info out/0.y4m)" = "3 64x48" ] || fail "out/0.y4m"
    [ "$(y4m_info out/1.y4m)" = "4 80x48" ] || fail "out/1.y4m"
    [ "$(y4m_info out/2.y4m)" = "5 64x64" ] || fail "out/2.y4m"
    [ "$(ls m/2 | wc -l)" = 5 ] && [ "$(ls m/0 | wc -l)" = 3 ] || fail "masks: $(ls -R m)"
    ;;
realtime)
    # 25 frames at 25 fps each: read at their native rate the run takes
    # about 1 s (as fast as possible it is a fraction of that here).
    gen a 64x48 25; gen b 64x48 25
    timeout 60 "$PIXFLOW" segment a.y4m b.y4m -o null --realtime --quiet --json > rt.json ||
        fail "exit status"
    python3 - rt.json <<'PY' || fail "--realtime did not pace the files"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["frames"] == 50, j["frames"]
assert j["elapsed_s"] >= 0.9, j["elapsed_s"]
PY
    ;;
live)
    gen f 96x64 10
    port=$(free_port SOCK_STREAM)
    ffmpeg -hide_banner -nostdin -loglevel error -re -f lavfi -i testsrc=size=160x120:rate=30 \
        -t 1.5 -c:v libx264 -preset ultrafast -tune zerolatency -g 15 -f mpegts \
        "tcp://127.0.0.1:$port?listen=1" &
    pids+=($!)
    sleep 0.4
    timeout 60 "$PIXFLOW" segment "tcp://u:pw@127.0.0.1:$port#cam" f.y4m -o 'out/{name}.y4m' \
        --quiet > sum.txt 2> err.txt; rc=$?
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    [ "$(y4m_info out/f.y4m)" = "10 96x64" ] || fail "out/f.y4m: $(y4m_info out/f.y4m)"
    n=$(y4m_info out/cam.y4m | cut -d' ' -f1)
    [ "${n:-0}" -ge 30 ] || fail "live stream: ${n:-0} frames"
    grep -q "stream 0  tcp://u:\*\*\*@127.0.0.1:$port#cam -> out/cam.y4m: $n frames.*reconnects" sum.txt ||
        fail "live stream line"
    ! grep -q ":pw@" sum.txt err.txt || fail "password shown"
    ;;
late)
    gen f 96x64 10
    port=$(free_port SOCK_STREAM)
    t0=$(date +%s.%N)
    timeout 60 "$PIXFLOW" segment f.y4m "tcp://127.0.0.1:$port#cam" -o 'out/{name}.y4m' \
        --retries 3 --quiet > sum.txt 2> err.txt &
    run=$!
    pids+=($run)
    sleep 0.8
    ffmpeg -hide_banner -nostdin -loglevel error -re -f lavfi -i testsrc=size=160x120:rate=30 \
        -t 1 -c:v libx264 -preset ultrafast -tune zerolatency -g 15 -f mpegts \
        "tcp://127.0.0.1:$port?listen=1" &
    pids+=($!)
    wait "$run"; rc=$?
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "a live input 0.8 s late: exit status $rc"
    grep -q "tcp://127.0.0.1:$port#cam: cannot open.*opening it in the background (retries 3" \
        err.txt || fail "the late start is not said"
    [ "$(y4m_info out/f.y4m)" = "10 96x64" ] || fail "out/f.y4m: $(y4m_info out/f.y4m)"
    n=$(y4m_info out/cam.y4m | cut -d' ' -f1)
    [ "${n:-0}" -ge 20 ] || fail "the late stream: ${n:-0} frames"
    # Never there: the attempts run out; the file's stream is whole, the
    # camera's fails, the summary names it and the exit status is 1.
    rm -rf out
    timeout 60 "$PIXFLOW" segment f.y4m "tcp://127.0.0.1:$port#cam" -o 'out/{name}.y4m' \
        --retries 1 > sum.txt 2> err.txt; rc=$?
    cat err.txt sum.txt
    [ "$rc" = 1 ] || fail "a live input never up: exit status $rc"
    grep -q "(open attempt 1)" err.txt || fail "the attempt is not said"
    ! grep -q "(open attempt 2)" err.txt || fail "more than 1 attempt (--retries 1)"
    [ "$(y4m_info out/f.y4m)" = "10 96x64" ] || fail "out/f.y4m: $(y4m_info out/f.y4m)"
    [ ! -e out/cam.y4m ] || fail "out/cam.y4m was written"
    grep -q "FAILED: tcp://127.0.0.1:$port#cam: cannot open" sum.txt ||
        fail "the summary does not name the failed stream"
    timeout 60 "$PIXFLOW" segment f.y4m "tcp://127.0.0.1:$port#cam" -o 'out/{name}.y4m' \
        --retries 0 --quiet > sum.txt 2> err.txt; rc=$?
    [ "$rc" = 1 ] && ! grep -q "retrying" err.txt || { cat err.txt; fail "--retries 0: $rc"; }
    ;;
parallel)
    urls=()
    for i in 0 1 2 3 4 5 6 7; do
        port=$(free_port SOCK_STREAM)
        ffmpeg -hide_banner -nostdin -loglevel quiet -re -f lavfi \
            -i testsrc=size=160x120:rate=30 -t 20 -c:v libx264 -preset ultrafast \
            -tune zerolatency -g 30 -f mpegts "tcp://127.0.0.1:$port?listen=1" &
        pids+=($!)
        urls+=("tcp://127.0.0.1:$port")
    done
    for u in "${urls[@]}"; do wait_listening "${u##*:}"; done
    t0=$(date +%s.%N)
    timeout 60 "$PIXFLOW" segment "${urls[@]}" -o null --frames 1 --retries 0 --quiet --json \
        > run.json 2> err.txt; rc=$?
    took=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")
    cat err.txt
    echo "8 live inputs, --frames 1: $took s"
    [ "$rc" = 0 ] || fail "exit status $rc"
    # (Not in a sanitizer build: there the model's one batch alone takes seconds.)
    [ "${PF_TEST_SANITIZED:-0}" = 1 ] ||
        python3 -c "import sys; sys.exit(0 if $took < 4.0 else 1)" ||
        fail "$took s: the inputs were opened one after the other"
    python3 - run.json <<'PY' || fail "--json"
import json, sys
s = json.load(open(sys.argv[1]))["streams"]
assert len(s) == 8 and all(x["frames"] == 1 for x in s), s
PY
    ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
echo PASS
