#!/usr/bin/env bash
# CLI tests of live sources (registered by tests/live_sources_cli.cmake):
# `pixflow run` of a YAML whose io.video_source reads a URL served on
# loopback by ffmpeg feeders this script starts and stops itself.
#
#   live_sources_cli.sh CASE PIXFLOW WORKDIR [SRC]
#
# CASE:
#   tcp_reconnect  MPEG-TS over TCP (-re); the feeder is killed mid-run and
#                  restarted: the run goes on, logs the reconnect and the gap,
#                  ends with exit 0 when the stream ends for good (bounded
#                  retries), writes every frame it counted; the URL's
#                  password is in no output (stderr, --json, the trace)
#   udp            MPEG-TS over UDP (-re): frames arrive at the sender's pace,
#                  the end of the stream (a stall) ends the run with exit 0
#   mux            two live streams and a file through `mux` and `demux`; one
#                  feeder killed and restarted: every stream keeps its frames,
#                  the file all of them, the run ends when all have ended
#   segment        `pixflow segment URL --json`: output named from host and port,
#                  no password in the summary or the JSON
#   dead           a closed port, a missing camera, a refused protocol: exit 1
#                  naming the (redacted) URL or the device, never 0 frames and
#                  exit 0; Ctrl-C during endless reconnecting stops at once
#   srt            `pixflow segment srt://...?mode=caller` from an ffmpeg SRT
#                  listener: every frame sent arrives (skipped without srt)
#   http           an MPEG-TS file from python3's http.server: all 40 frames;
#                  a 404 is exit 1 naming the URL, nothing written
# Exit 0 pass, 1 fail (the failing check is printed), 77 skip.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
WORK=${3:?work directory}
SRC=${4:-}
export PIXFLOW_DEVICE=cpu
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg tool"; exit 77; }

feeders=()
cleanup() {
    for p in "${feeders[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    feeders=()
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }

# A free loopback port (bound, then released).
free_port() {
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, getattr(socket, sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}

# feed URL SECONDS: ffmpeg -re sending a 30 fps test pattern as MPEG-TS; pid in $feeder.
feed() {
    # Not under timeout(1): $! must be ffmpeg itself, to kill it mid-stream;
    # -t bounds it, and the EXIT trap kills one still waiting for a client.
    ffmpeg -hide_banner -nostdin -loglevel error -re \
        -f lavfi -i testsrc=size=320x240:rate=30 -t "$2" -c:v libx264 -preset ultrafast \
        -tune zerolatency -g 15 -f mpegts "$1" &
    feeder=$!
    feeders+=("$feeder")
}

# yaml URL EXTRA: a pipeline reading URL into out.y4m.
yaml() {
    cat > live.yaml <<YAML
name: live
trace: trace.json
stages:
  - name: cam
    type: io.video_source
    path: "$1"
$2
  - name: out
    type: io.video_sink
    path: out.y4m
edges:
  - {from: cam, to: out}
YAML
}

frames_of() {
    python3 -c 'import sys; print(open(sys.argv[1], "rb").read().count(b"FRAME\n"))' "$1" 2>/dev/null || echo 0
}

case $case_name in
tcp_reconnect)
    port=$(free_port SOCK_STREAM)
    feed "tcp://127.0.0.1:$port?listen=1" 20
    yaml "tcp://viewer:hunter2@127.0.0.1:$port" "    retries: 10
    retry_delay_ms: 100
    retry_max_delay_ms: 300
    read_timeout_ms: 2000"
    sleep 0.5 # the feeder listens
    timeout 60 "$PIXFLOW" run live.yaml --json > run.json 2> run.err &
    run=$!
    sleep 1.5
    kill -9 "$feeder"; wait "$feeder" 2>/dev/null
    sleep 0.7
    feed "tcp://127.0.0.1:$port?listen=1" 1.5
    wait "$run"; rc=$?
    cat run.err
    [ "$rc" = 0 ] || fail "exit status $rc"
    grep -q "stream resumed after" run.err || fail "no resume logged"
    grep -q "1 reconnects" run.err || fail "no reconnect counted in the source's summary"
    grep -Eq "about [1-9][0-9]* frames missed" run.err || fail "no missed frames counted"
    n=$(frames_of out.y4m)
    items=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["items_out"])' run.json 2>/dev/null ||
            grep -o '"items_out": *[0-9]*' run.json | head -1 | grep -o '[0-9]*$')
    echo "frames written: $n, JSON: $items"
    [ "$n" -ge 50 ] || fail "only $n frames written (expected the first feeder's and the second's)"
    [ "$n" = "$items" ] || fail "$n frames written, $items items counted"
    for f in run.err run.json trace.json; do
        [ -f "$f" ] || continue
        ! grep -q hunter2 "$f" || fail "the password appears in $f"
    done
    grep -q "viewer:\*\*\*@127.0.0.1" run.err || fail "the redacted URL is not in the log"
    ;;
udp)
    port=$(free_port SOCK_DGRAM)
    feed "udp://127.0.0.1:$port" 3
    yaml "udp://127.0.0.1:$port" "    read_timeout_ms: 700
    open_timeout_ms: 2000
    retries: 1
    retry_delay_ms: 100"
    start=$(date +%s.%N)
    timeout 60 "$PIXFLOW" run live.yaml > run.out 2> run.err; rc=$?
    took=$(echo "$(date +%s.%N) - $start" | bc)
    cat run.err
    [ "$rc" = 0 ] || fail "exit status $rc"
    n=$(frames_of out.y4m)
    echo "udp: $n frames in $took s"
    [ "$n" -ge 45 ] || fail "only $n frames"
    # read at the sender's pace: n frames at 30 fps take n/30 s at least
    python3 -c "import sys; sys.exit(0 if $took >= $n/30.0 - 0.5 else 1)" ||
        fail "$n frames in $took s: faster than the sender"
    ;;
dead)
    port=$(free_port SOCK_STREAM)
    yaml "rtsp://admin:hunter2@127.0.0.1:$port/stream" ""
    timeout 30 "$PIXFLOW" run live.yaml > run.out 2> run.err; rc=$?
    cat run.err
    [ "$rc" = 1 ] || fail "closed port: exit status $rc"
    grep -q "rtsp://admin:\*\*\*@127.0.0.1:$port/stream" run.err || fail "the URL is not named"
    ! grep -q hunter2 run.err run.out || fail "the password appears"
    # Retrying forever is still stopped by Ctrl-C at once.
    port=$(free_port SOCK_STREAM)
    feed "tcp://127.0.0.1:$port?listen=1" 0.5
    yaml "tcp://127.0.0.1:$port" "    retries: -1
    retry_delay_ms: 2000"
    sleep 0.3
    timeout 60 "$PIXFLOW" run live.yaml > run.out 2> run.err &
    run=$!
    for _ in $(seq 100); do grep -q reconnecting run.err && break; sleep 0.1; done
    grep -q reconnecting run.err || fail "the source never started reconnecting"
    t0=$(date +%s.%N)
    kill -INT "$run"; wait "$run"; rc=$?
    took=$(echo "$(date +%s.%N) - $t0" | bc)
    echo "SIGINT while reconnecting: exit $rc after $took s"
    [ "$rc" = 130 ] || fail "SIGINT while reconnecting: exit status $rc"
    python3 -c "import sys; sys.exit(0 if $took < 1.5 else 1)" || fail "SIGINT took $took s"
    yaml "/dev/video99" ""
    timeout 30 "$PIXFLOW" run live.yaml > run.out 2> run.err; rc=$?
    cat run.err
    [ "$rc" = 1 ] || fail "missing camera: exit status $rc"
    grep -q "/dev/video99: no such camera" run.err || fail "the camera is not named"
    yaml "ftp://127.0.0.1:$port/x.ts" ""
    timeout 30 "$PIXFLOW" run live.yaml > run.out 2> run.err; rc=$?
    cat run.err
    [ "$rc" = 1 ] || fail "ftp: exit status $rc"
    grep -q "protocol 'ftp' is not allowed" run.err || fail "the protocol is not named"
    ;;
mux)
    # Two live TCP streams and a file through the stream muxer and back out
    # by source id; stream 0's feeder is killed mid-run and restarted.
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i testsrc=size=320x240:rate=30 \
        -frames:v 45 -pix_fmt yuv420p -f yuv4mpegpipe file.y4m || fail "cannot make file.y4m"
    p0=$(free_port SOCK_STREAM); p1=$(free_port SOCK_STREAM)
    feed "tcp://127.0.0.1:$p0?listen=1" 20; f0=$feeder
    feed "tcp://127.0.0.1:$p1?listen=1" 3
    live_keys="retries: 10, retry_delay_ms: 100, retry_max_delay_ms: 300, read_timeout_ms: 2000"
    cat > mux.yaml <<YAML
name: live-mux
stages:
  - {name: cam0, type: io.video_source, source: 0, path: "tcp://127.0.0.1:$p0", $live_keys}
  - {name: cam1, type: io.video_source, source: 1, path: "tcp://127.0.0.1:$p1", $live_keys}
  - {name: file, type: io.video_source, source: 2, path: file.y4m, realtime: true}
  - {name: mux, type: mux, inputs: [cam0, cam1, file], batch_size: 3, timeout_us: 20000}
  - {name: demux, type: demux, inputs: mux, routes: "0:out0,1:out1,2:out2"}
  - {name: out0, type: io.video_sink, inputs: demux, path: out0.y4m}
  - {name: out1, type: io.video_sink, inputs: demux, path: out1.y4m}
  - {name: out2, type: io.video_sink, inputs: demux, path: out2.y4m}
YAML
    sleep 0.5
    timeout 60 "$PIXFLOW" run mux.yaml > run.out 2> run.err &
    run=$!
    sleep 1.5
    kill -9 "$f0"; wait "$f0" 2>/dev/null
    sleep 0.5
    feed "tcp://127.0.0.1:$p0?listen=1" 1.5
    wait "$run"; rc=$?
    grep -v "items/s" run.err
    [ "$rc" = 0 ] || fail "exit status $rc"
    n0=$(frames_of out0.y4m); n1=$(frames_of out1.y4m); n2=$(frames_of out2.y4m)
    echo "frames: stream 0 $n0, stream 1 $n1, file $n2"
    [ "$n2" = 45 ] || fail "the file's stream has $n2 frames, not 45"
    [ "$n1" -ge 60 ] || fail "stream 1 has only $n1 frames (its feeder sent 90)"
    [ "$n0" -ge 50 ] || fail "stream 0 has only $n0 frames"
    grep -q "tcp://127.0.0.1:$p0: stream resumed after" run.err || fail "stream 0 did not resume"
    ;;
segment)
    # `pixflow segment URL`: the default output is named from host and port,
    # the summary and --json show the URL without its password.
    [ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
        { echo "SKIP: no selfie model (npm)"; exit 77; }
    port=$(free_port SOCK_STREAM)
    feed "tcp://127.0.0.1:$port?listen=1" 1.5
    sleep 0.4
    PIXFLOW_MODELS=$SRC timeout 60 "$PIXFLOW" segment "tcp://u:hunter2@127.0.0.1:$port" --json \
        > seg.json 2> seg.err; rc=$?
    cat seg.err seg.json
    [ "$rc" = 0 ] || fail "exit status $rc"
    [ -s "127.0.0.1_${port}_seg.mp4" ] || fail "no 127.0.0.1_${port}_seg.mp4"
    ! grep -q hunter2 seg.json seg.err || fail "the password appears"
    grep -q "\"input\": \"tcp://u:\*\*\*@127.0.0.1:$port\"" seg.json || fail "input not redacted in --json"
    frames=$(grep -o '"frames": *[0-9]*' seg.json | grep -o '[0-9]*$')
    [ "${frames:-0}" -ge 30 ] || fail "only ${frames:-0} frames"
    ;;
srt)
    # `pixflow segment srt://...` as the caller of an ffmpeg SRT listener.
    [ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
        { echo "SKIP: no selfie model (npm)"; exit 77; }
    ffmpeg -hide_banner -protocols 2>/dev/null | grep -qx ' *srt' ||
        { echo "SKIP: this ffmpeg has no srt protocol"; exit 77; }
    port=$(free_port SOCK_DGRAM)
    feed "srt://127.0.0.1:$port?mode=listener" 1.5
    sleep 0.5
    PIXFLOW_MODELS=$SRC timeout 60 "$PIXFLOW" segment "srt://127.0.0.1:$port?mode=caller" \
        -o out.y4m --json > seg.json 2> seg.err; rc=$?
    cat seg.err seg.json
    [ "$rc" = 0 ] || fail "exit status $rc"
    n=$(frames_of out.y4m)
    [ "$n" -ge 30 ] || fail "only $n frames over SRT"
    ;;
http)
    # An MPEG-TS file served over HTTP (python3's http.server): every frame;
    # a missing one (404) is an error naming the URL, never 0 frames and 0.
    [ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
        { echo "SKIP: no selfie model (npm)"; exit 77; }
    mkdir -p www
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i testsrc=size=160x120:rate=30 \
        -frames:v 40 -c:v libx264 -preset ultrafast -g 15 -f mpegts www/clip.ts || fail "ffmpeg"
    port=$(free_port SOCK_STREAM)
    python3 -m http.server "$port" --bind 127.0.0.1 --directory www > http.log 2>&1 &
    feeders+=($!)
    for _ in $(seq 50); do
        python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' \
            "$port" 2>/dev/null && break
        sleep 0.1
    done
    PIXFLOW_MODELS=$SRC timeout 60 "$PIXFLOW" segment "http://127.0.0.1:$port/clip.ts" \
        -o out.y4m > seg.txt 2> seg.err; rc=$?
    cat seg.err seg.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    n=$(frames_of out.y4m)
    [ "$n" = 40 ] || fail "$n frames over HTTP, not 40"
    PIXFLOW_MODELS=$SRC timeout 60 "$PIXFLOW" segment "http://127.0.0.1:$port/none.ts" \
        -o none.y4m > seg.txt 2> seg.err; rc=$?
    cat seg.err
    [ "$rc" = 1 ] || fail "a missing URL: exit status $rc"
    grep -q "http://127.0.0.1:$port/none.ts" seg.err || fail "the error does not name the URL"
    [ ! -e none.y4m ] || fail "none.y4m was written"
    ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
echo PASS
