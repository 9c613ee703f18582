#!/usr/bin/env bash
# CLI tests of network outputs: `pixflow segment IN -o udp://|tcp://|srt://|rtsp://...`
# (registered by tests/net_output_cli.cmake). The receivers are ffmpeg processes
# on loopback that this script starts, bounds (timeout) and kills itself.
#
#   net_output_cli.sh CASE PIXFLOW WORKDIR SRC
#
# CASE:
#   tcp      -o tcp://user:secret@... and --mask-out tcp://...: an ffmpeg receiver
#            each; ffprobe counts 50 H.264 frames in each = the 50 sent; no
#            password in stderr or --json
#   udp      -o udp://...: a UDP socket keeps the datagrams, ffprobe counts the
#            frames; UDP may lose a datagram even on loopback, so at least 45 of
#            the 50 frames must arrive (all did in every run here)
#   rtsp     -o rtsp://127.0.0.1:P/live pushed into `ffmpeg -rtsp_flags listen`
#            (RTP interleaved over TCP): 50 frames
#   rtmp     -o rtmp://127.0.0.1:P/live/cam (FLV) into `ffmpeg -listen 1`: 50 frames
#   srt      -o srt://...?passphrase=... refused by a listener without one: exit 1,
#            passphrase not shown; then -o srt://... --realtime into `ffmpeg -i
#            srt://...?mode=listener`: at least 45 of 50 frames (SRT live mode
#            may drop a lagging receiver's tail at close; skipped when this
#            FFmpeg has no libsrt)
#   dead     the TCP receiver is killed (-9) 1 s into a --realtime run of a 30 s
#            video: exit 1 within 12 s of the kill (0.1 s without sanitizers),
#            the error names the redacted URL
#   stall    a receiver that accepts and never reads: with --output-timeout 500
#            the run fails with "timed out" within 4 s of the connect
#   multi    two inputs -o 'tcp://127.0.0.1:PORT{index}'-style (consecutive
#            ports), receiver 1 killed mid-run: stream 0 still gets all its
#            frames, stream 1 is reported (output_failed in --json), exit 1
#   yaml     `pixflow run` with io.video_sink path tcp://...: 50 frames; an ftp://
#            sink is refused at load, without the password
#   refused  a scheme off the whitelist (ftp://) and an output URL equal to the
#            input URL: exit 1 naming the problem, without the password
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
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null ||
    { echo "SKIP: no ffmpeg/ffprobe tool"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
[ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
    { echo "SKIP: no selfie model (npm)"; exit 77; }

# pids + cleanup trap, fail, free_port, wait_listening
. "$SRC/tests/live_feeders.sh"
wait_listen() { wait_listening "$1"; }
# wait_conn PORT: until a connection to local TCP PORT is established (20 s at
# most: the sender loads its model first), so a receiver killed after it is
# gone mid-stream, not before the connect. Read from /proc like
# wait_listening.
wait_conn() {
    local hex
    hex=$(printf '%04X' "$1")
    for _ in $(seq 200); do
        grep -q ":$hex [0-9A-F]*:[0-9A-F]* 01" /proc/net/tcp 2>/dev/null && return 0
        sleep 0.1
    done
    fail "nobody connected to port $1"
}
# gen NAME FRAMES: a 320x240 25 fps Y4M test pattern.
gen() {
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i "testsrc=size=320x240:rate=25" \
        -frames:v "$2" -pix_fmt yuv420p "$1.y4m" || fail "ffmpeg could not make $1.y4m"
}
# frames FILE: video frames ffprobe counts in FILE (0 when unreadable).
frames() {
    local n
    n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
        -of csv=p=0 "$1" 2>/dev/null | head -1)
    echo "${n:-0}"
}
# recv OUT INPUT-ARGS...: an ffmpeg receiver copying the stream into OUT, in
# the background; its pid is in $rpid (ffmpeg's own, so the trap's kill
# reaches it). It ends at the sender's end of stream; INPUT-ARGS bound the
# wait for a sender (listen timeouts of 60 s: a sanitizer build under load
# starts slowly).
recv() {
    local out=$1
    shift
    ffmpeg -hide_banner -nostdin -loglevel error -y "$@" -c copy "$out" 2> "$out.log" &
    rpid=$!
    pids+=("$rpid")
}
LT=listen_timeout
no_secret() { ! grep -l "secret" "$@" || fail "a password is shown in $*"; }
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$1" "$2"; }
lt() {
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$1" "$2"
}

case $case_name in
tcp)
    gen a 50
    p=$(free_port SOCK_STREAM); m=$(free_port SOCK_STREAM)
    recv out.ts -i "tcp://127.0.0.1:$p?listen=1&$LT=60000"; r1=$rpid
    recv mask.ts -i "tcp://127.0.0.1:$m?listen=1&$LT=60000"; r2=$rpid
    wait_listen "$p"; wait_listen "$m"
    timeout 60 "$PIXFLOW" segment a.y4m -o "tcp://user:secret@127.0.0.1:$p?token=secret" \
        --mask-out "tcp://127.0.0.1:$m" --json --quiet > sum.json 2> err.txt; rc=$?
    cat err.txt sum.json
    [ "$rc" = 0 ] || fail "exit status $rc"
    wait "$r1"; wait "$r2"
    [ "$(frames out.ts)" = 50 ] || fail "out.ts: $(frames out.ts) frames, 50 sent"
    [ "$(frames mask.ts)" = 50 ] || fail "mask.ts: $(frames mask.ts) frames, 50 sent"
    ffprobe -v error -show_entries stream=codec_name -of csv=p=0 out.ts | grep -q h264 ||
        fail "out.ts is not H.264"
    grep -q "\"output\": \"tcp://user:\*\*\*@127.0.0.1:$p?token=\*\*\*\"" sum.json ||
        fail "--json output not the redacted URL"
    no_secret err.txt sum.json
    ;;
udp)
    gen a 50
    p=$(free_port SOCK_DGRAM)
    # The receiver keeps every datagram (a python socket: ffmpeg's UDP input
    # either times out before a slow sender's first packet or, without a
    # timeout, never ends). It stops once the sender has exited (the file
    # 'sent' exists) and nothing came for 1 s, or after 80 s. ffprobe then
    # counts the frames in what arrived.
    python3 - "$p" out.ts <<'PY' &
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(('127.0.0.1', int(sys.argv[1])))
s.settimeout(1)
f = open(sys.argv[2], 'wb')
end = time.time() + 80
while time.time() < end:
    try:
        f.write(s.recv(65536))
    except socket.timeout:
        if os.path.exists('sent'):
            break
f.close()
PY
    r1=$!; pids+=("$r1")
    sleep 0.5 # the receiver binds its socket
    timeout 60 "$PIXFLOW" segment a.y4m -o "udp://127.0.0.1:$p" --quiet > sum.txt 2> err.txt
    rc=$?
    touch sent
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    wait "$r1"
    n=$(frames out.ts)
    echo "udp: $n of 50 frames received"
    [ "$n" -ge 45 ] && [ "$n" -le 50 ] || fail "out.ts: $n frames, 50 sent"
    ;;
rtsp)
    gen a 50
    p=$(free_port SOCK_STREAM)
    recv out.ts -listen_timeout 60 -rtsp_flags listen -i "rtsp://127.0.0.1:$p/live"; r1=$rpid
    wait_listen "$p"
    timeout 60 "$PIXFLOW" segment a.y4m -o "rtsp://127.0.0.1:$p/live" --quiet > sum.txt 2> err.txt
    rc=$?
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    wait "$r1"
    [ "$(frames out.ts)" = 50 ] || fail "out.ts: $(frames out.ts) frames, 50 sent"
    ;;
rtmp)
    gen a 50
    p=$(free_port SOCK_STREAM)
    recv out.flv -listen 1 -timeout 60 -i "rtmp://127.0.0.1:$p/live/cam"; r1=$rpid
    wait_listen "$p"
    timeout 60 "$PIXFLOW" segment a.y4m -o "rtmp://127.0.0.1:$p/live/cam" --quiet > sum.txt \
        2> err.txt
    rc=$?
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    wait "$r1"
    [ "$(frames out.flv)" = 50 ] || fail "out.flv: $(frames out.flv) frames, 50 sent"
    ;;
srt)
    ffmpeg -hide_banner -protocols 2>/dev/null | sed -n '/^Output:/,$p' | grep -qx ' *srt' ||
        { echo "SKIP: this FFmpeg has no SRT (libsrt)"; exit 77; }
    gen a 50
    p=$(free_port SOCK_DGRAM)
    recv out.ts -i "srt://127.0.0.1:$p?mode=listener&$LT=60000000"; r1=$rpid
    sleep 0.5
    timeout 60 "$PIXFLOW" segment a.y4m -o "srt://127.0.0.1:$p?passphrase=secretsecret" \
        --quiet > sum.txt 2> err.txt; rc=$?
    cat err.txt sum.txt
    # The listener wants the same passphrase: this first run must fail, redacted.
    [ "$rc" = 1 ] || fail "a wrong SRT passphrase: exit status $rc"
    no_secret err.txt sum.txt
    kill "$r1" 2>/dev/null; wait "$r1" 2>/dev/null
    p=$(free_port SOCK_DGRAM)
    # SRT's live mode drops packets later than its latency (120 ms), and a
    # receiver that has not read all it holds when the sender closes loses
    # that tail (libsrt drops a broken connection's buffer): on 2 loaded cores
    # up to 18 of 50 frames, sent as fast as they were made. So: the
    # too-late drop off on both sides (--output-options reaches libsrt),
    # delivery on arrival (tsbpd=0), the sender paced (--realtime), and at
    # least 45 of the 50 frames (tcp, rtsp and rtmp check exact counts).
    recv out.ts -i "srt://127.0.0.1:$p?mode=listener&tlpktdrop=0&tsbpd=0&$LT=60000000"
    r1=$rpid
    sleep 0.5
    timeout 60 "$PIXFLOW" segment a.y4m --realtime -o "srt://127.0.0.1:$p" \
        --output-options tlpktdrop=0 --quiet > sum.txt 2> err.txt
    rc=$?
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    wait "$r1"
    n=$(frames out.ts)
    echo "srt: $n of 50 frames received"
    [ "$n" -ge 45 ] && [ "$n" -le 50 ] || fail "out.ts: $n frames, 50 sent"
    ;;
dead)
    # 30 s of video at its native rate: an output that did not notice the
    # dead receiver would run on to its end.
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i "testsrc=size=320x240:rate=25" \
        -t 30 -c:v libx264 -preset ultrafast a.mp4 || fail "ffmpeg could not make a.mp4"
    p=$(free_port SOCK_STREAM)
    recv out.ts -i "tcp://127.0.0.1:$p?listen=1&$LT=60000"; r1=$rpid
    wait_listen "$p"
    timeout 60 "$PIXFLOW" segment a.mp4 --realtime -o "tcp://user:secret@127.0.0.1:$p" \
        --json --quiet > sum.json 2> err.txt &
    sp=$!; pids+=("$sp")
    wait_conn "$p"
    sleep 1
    kill -9 "$r1"
    t0=$(now)
    wait "$sp"; rc=$?
    t1=$(now)
    cat err.txt sum.json
    echo "failed $(elapsed "$t0" "$t1") s after the receiver was killed"
    [ "$rc" = 1 ] || fail "exit status $rc"
    # 0.1 s here; a sanitizer build under load needs up to ~6 s for the frames
    # in flight to reach the writer and the pipeline to stop.
    lt "$(elapsed "$t0" "$t1")" 12 || fail "took $(elapsed "$t0" "$t1") s to notice"
    grep -q "tcp://user:\*\*\*@127.0.0.1:$p: cannot write" err.txt || fail "error message"
    grep -q '"status": "failed"' sum.json || fail "--json status"
    no_secret err.txt sum.json
    ;;
stall)
    gen a 125
    p=$(free_port SOCK_STREAM)
    python3 - "$p" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(1)
c, _ = s.accept()
time.sleep(30)  # never reads
PY
    pids+=($!)
    wait_listen "$p"
    timeout 60 "$PIXFLOW" segment a.y4m -o "tcp://user:secret@127.0.0.1:$p" --quiet \
        --output-timeout 500 --output-options send_buffer_size=4096 > sum.txt 2> err.txt &
    sp=$!; pids+=("$sp")
    wait_conn "$p" # from the connect: a few frames fill the buffers, then 0.5 s
    t0=$(now)
    wait "$sp"; rc=$?
    t1=$(now)
    cat err.txt sum.txt
    echo "failed $(elapsed "$t0" "$t1") s after the connect"
    [ "$rc" = 1 ] || fail "exit status $rc"
    # 4 s here; a sanitizer build makes the frames that fill the buffers
    # first at ~1 frame/s (4.8 s seen in CI's ASan run)
    bound=4
    [ "${PF_TEST_SANITIZED:-0}" = 1 ] && bound=15
    lt "$(elapsed "$t0" "$t1")" "$bound" || fail "took $(elapsed "$t0" "$t1") s"
    grep -q "tcp://user:\*\*\*@127.0.0.1:$p: cannot write: the receiver took no data for 500 ms" \
        err.txt || fail "error message"
    no_secret err.txt sum.txt
    ;;
multi)
    gen a 125
    gen b 125
    # Two consecutive free ports P0, P0+1 for 'tcp://...:{P0 without its last digit}{index}'.
    for _ in $(seq 50); do
        base=$(( ($(free_port SOCK_STREAM) / 10) * 10 ))
        [ "$base" -ge 1024 ] && [ "$base" -le 65520 ] || continue
        python3 -c "
import socket
for p in ($base, $base + 1):
    socket.socket().bind(('127.0.0.1', p))" 2>/dev/null && break
    done
    recv out0.ts -i "tcp://127.0.0.1:$base?listen=1&$LT=60000"; r0=$rpid
    recv out1.ts -i "tcp://127.0.0.1:$((base + 1))?listen=1&$LT=60000"; r1=$rpid
    wait_listen "$base"; wait_listen "$((base + 1))"
    timeout 60 "$PIXFLOW" segment a.y4m b.y4m --realtime \
        -o "tcp://user:secret@127.0.0.1:$((base / 10)){index}" --json --quiet \
        > sum.json 2> err.txt &
    sp=$!; pids+=("$sp")
    wait_conn "$base"; wait_conn "$((base + 1))"
    sleep 1
    kill -9 "$r1"
    wait "$sp"; rc=$?
    cat err.txt sum.json
    [ "$rc" = 1 ] || fail "exit status $rc"
    wait "$r0"
    [ "$(frames out0.ts)" = 125 ] || fail "stream 0: $(frames out0.ts) frames, 125 sent"
    grep -q "stream 1 (b.y4m): output failed, the stream stops (the others go on)" err.txt ||
        fail "stream 1's failure not reported"
    python3 - sum.json <<'PY' || fail "--json streams"
import json, sys
d = json.load(open(sys.argv[1]))
s = d['streams']
assert d['status'] == 'failed', d['status']
assert not s[0]['output_failed'] and s[0]["frames"] == 125, s[0]
assert s[1]['output_failed'], s[1]
PY
    no_secret err.txt sum.json
    ;;
yaml)
    # io.video_sink with a URL path: the same writer under `pixflow run`.
    gen a 50
    p=$(free_port SOCK_STREAM)
    recv out.ts -i "tcp://127.0.0.1:$p?listen=1&$LT=60000"; r1=$rpid
    wait_listen "$p"
    cat > p.yaml <<EOF
name: net
device: cpu
stages:
  - {name: src, type: io.video_source, path: a.y4m}
  - {name: out, type: io.video_sink, path: "tcp://user:secret@127.0.0.1:$p", timeout_ms: 2000,
     muxer_options: "mpegts_flags=resend_headers", preset: ultrafast}
EOF
    timeout 60 "$PIXFLOW" run p.yaml > sum.txt 2> err.txt; rc=$?
    cat err.txt sum.txt
    [ "$rc" = 0 ] || fail "exit status $rc"
    wait "$r1"
    [ "$(frames out.ts)" = 50 ] || fail "out.ts: $(frames out.ts) frames, 50 sent"
    no_secret err.txt sum.txt
    sed -i "s|tcp://user:secret@127.0.0.1:$p|ftp://user:secret@127.0.0.1/x|" p.yaml
    timeout 60 "$PIXFLOW" run p.yaml > sum.txt 2> err.txt; rc=$?
    cat err.txt
    [ "$rc" != 0 ] || fail "ftp:// sink accepted"
    grep -q "URL protocol 'ftp' is not allowed for outputs" err.txt || fail "ftp message"
    no_secret err.txt sum.txt
    ;;
refused)
    gen a 5
    timeout 60 "$PIXFLOW" segment a.y4m -o "ftp://user:secret@127.0.0.1/x.ts" > sum.txt 2> err.txt
    rc=$?
    cat err.txt
    [ "$rc" = 1 ] || fail "ftp://: exit status $rc"
    grep -q "URL protocol 'ftp' is not allowed for outputs" err.txt || fail "ftp message"
    no_secret err.txt sum.txt
    p=$(free_port SOCK_STREAM)
    ffmpeg -hide_banner -nostdin -loglevel error -re -i a.y4m -c:v libx264 -f mpegts \
        "tcp://127.0.0.1:$p?listen=1&$LT=60000" &
    pids+=($!)
    wait_listen "$p"
    timeout 60 "$PIXFLOW" segment "tcp://user:secret@127.0.0.1:$p" \
        -o "tcp://127.0.0.1:$p?listen=0" > sum.txt 2> err.txt
    rc=$?
    cat err.txt
    [ "$rc" = 1 ] || fail "output = input URL: exit status $rc"
    grep -q "is the input tcp://user:\*\*\*@127.0.0.1:$p (the same stream)" err.txt ||
        fail "output = input message"
    no_secret err.txt sum.txt
    ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
echo PASS
