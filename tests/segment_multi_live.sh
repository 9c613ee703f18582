#!/usr/bin/env bash
# The multi-stream live test of issue 12 (registered by
# tests/segment_multi_live.cmake):
#
#   segment_multi_live.sh PIXFLOW WORKDIR SRC
#
# Four live streams served on loopback by ffmpeg feeders (MPEG-TS with -re:
# two over TCP, pixflow connecting; two over UDP, pixflow listening) and two
# Y4M files read with --realtime go through one `pixflow segment ... --json
# -o 'out/{name}_seg.y4m'` run. Every frame carries its number as a bar
# code (12 horizontal bands, black = 0, white = 1; --background none keeps
# the frame's pixels), each stream its own size and its own range of
# numbers, so the outputs can be checked frame by frame:
#   - every output has its own stream's size, numbers and frame count (the
#     Y4M's and the --json 'streams' entry's), the numbers strictly
#     increasing and without holes: order kept, nothing dropped or mixed;
#   - the files: all their frames;
#   - tcp0's feeder is killed mid-run and restarted (its numbers go on from
#     2500): tcp0 resumes (numbers from both feeders, --json reconnects >= 1,
#     gap_s >= 0.5 s);
#   - the other live streams never stall: their outputs, sampled every
#     0.2 s while the run goes on, grow during tcp0's outage (at least half
#     the frames the feeders sent meanwhile) and never stop growing for
#     STALL_S (1.5 s; an outage lasts >= 1.5 s); each has at least 75% of
#     the frames its feeder sent while the pipeline ran, no reconnects.
# The run is stopped by SIGINT (as an operator stops a run of cameras):
# exit 130, --json status "interrupted", every output finished. The test
# takes about 15 s; the feeders, the sampler and pixflow are stopped by an
# EXIT trap, each by its pid.
# Exit 0 pass, 1 fail (the failing check is printed), 77 skip.
set -u
PIXFLOW=${1:?pixflow binary}
WORK=${2:?work directory}
SRC=${3:?source tree}
export PIXFLOW_DEVICE=cpu PIXFLOW_MODELS=$SRC
rm -rf "$WORK"
mkdir -p "$WORK/out"
cd "$WORK" || exit 1
command -v ffmpeg >/dev/null || { echo "SKIP: no ffmpeg tool"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
[ -f "$SRC/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ] ||
    { echo "SKIP: no selfie model (npm)"; exit 77; }
# Six streams in real time need ~60 model frames/s; a Debug ASan + UBSan build
# does about 1 (the reconnect paths run under the sanitizers in
# cli_segment_multi_{live,late} and cli_live_*).
[ "${PF_TEST_SANITIZED:-0}" = 1 ] && { echo "SKIP: a real-time test, not for a sanitizer build"; exit 77; }

FPS=10       # every stream; 6 x 10 fps is well within 2 CI cores (~200 fps there)
STALL_S=1.5

. "$SRC/tests/live_feeders.sh" # pids + EXIT trap, fail, free_port, wait_listening
now() { date +%s.%N; }

# pattern OFFSET: frames numbered from OFFSET as a bar code, 12 bands of
# height H/12, band b white when bit b of the number is set. Each stream
# has 500 numbers of its own (a feeder runs at most 30 s: 300 frames).
pattern() {
    echo "geq=lum='if(bitand(floor(($1+N)/pow(2\,floor(Y*12/H)))\,1)\,235\,16)':cb=128:cr=128"
}

# feed URL WxH OFFSET: a feeder (pid in $feeder), bounded by -t and the trap.
feed() {
    ffmpeg -hide_banner -nostdin -loglevel error -re -f lavfi \
        -i "nullsrc=size=$2:rate=$FPS,$(pattern "$3")" -t 30 -c:v libx264 -preset ultrafast \
        -tune zerolatency -g "$FPS" -pix_fmt yuv420p -f mpegts "$1" &
    feeder=$!
    pids+=("$feeder")
}

names=(file0 tcp0 tcp1 udp0 udp1 file1)
ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i "nullsrc=size=128x120:rate=$FPS,$(pattern 2000)" \
    -frames:v 40 -pix_fmt yuv420p file0.y4m || fail "cannot make file0.y4m"
ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i "nullsrc=size=160x96:rate=$FPS,$(pattern 3000)" \
    -frames:v 50 -pix_fmt yuv420p file1.y4m || fail "cannot make file1.y4m"
pt0=$(free_port SOCK_STREAM); pt1=$(free_port SOCK_STREAM)
pu0=$(free_port SOCK_DGRAM); pu1=$(free_port SOCK_DGRAM)
feed "tcp://127.0.0.1:$pt0?listen=1" 160x120 0; tcp0=$feeder
feed "tcp://127.0.0.1:$pt1?listen=1" 176x120 500
wait_listening "$pt0"; wait_listening "$pt1"
# The UDP feeders send from now on; what comes before pixflow listens is lost.
feed "udp://127.0.0.1:$pu0?pkt_size=1316" 192x120 1000
feed "udp://127.0.0.1:$pu1?pkt_size=1316" 144x120 1500
t_launch=$(now)
timeout 40 "$PIXFLOW" segment file0.y4m "tcp://127.0.0.1:$pt0#tcp0" "tcp://127.0.0.1:$pt1#tcp1" \
    "udp://127.0.0.1:$pu0#udp0" "udp://127.0.0.1:$pu1#udp1" file1.y4m \
    -o 'out/{name}_seg.y4m' --background none --realtime --retries 6 --json --quiet \
    > run.json 2> run.err &
run=$!
pids+=("$run")

# The writers' temporaries appear when the pipeline runs.
tmp_of() { ls out/."$1"_seg.y4m.pftmp-* 2>/dev/null | head -1; }
for _ in $(seq 200); do
    n=0
    for s in "${names[@]}"; do [ -n "$(tmp_of "$s")" ] && n=$((n + 1)); done
    [ "$n" = 6 ] && break
    kill -0 "$run" 2>/dev/null || { cat run.err; fail "pixflow ended before its outputs opened"; }
    sleep 0.1
done
[ "$n" = 6 ] || { cat run.err; fail "only $n of 6 outputs opened after 20 s"; }
t_start=$(now)
echo "pipeline running $(python3 -c "print(round($t_start - $t_launch, 2))") s after launch"

# Sampler: every 0.2 s the time and the size of each output so far.
tmps=()
for s in "${names[@]}"; do tmps+=("$(tmp_of "$s")"); done
(
    while :; do
        line=$(now)
        for f in "${tmps[@]}"; do line="$line $(stat -c %s "$f" 2>/dev/null || echo -1)"; done
        echo "$line"
        sleep 0.2
    done
) > samples.txt &
pids+=("$!")

sleep 2.5
t_kill=$(now)
kill -9 "$tcp0"; wait "$tcp0" 2>/dev/null
sleep 1.0
feed "tcp://127.0.0.1:$pt0?listen=1" 160x120 2500
t_resume=
for _ in $(seq 100); do
    grep -q "tcp0: stream resumed" run.err && { t_resume=$(now); break; }
    sleep 0.1
done
[ -n "$t_resume" ] || t_resume=$(now) # the checks below say what is missing
# 2 s more of every stream; the files (4 s and 5 s) are done by then.
sleep 2
while python3 -c "import sys; sys.exit(0 if $(now) - $t_start < 6.0 else 1)"; do sleep 0.2; done
t_int=$(now)
kill -INT "$run"
wait "$run"; rc=$?
t_end=$(now)
cleanup
cat run.err
echo "SIGINT -> exit $rc in $(python3 -c "print(round($t_end - $t_int, 2))") s"
[ "$rc" = 130 ] || fail "exit status $rc, expected 130 (interrupted)"

python3 - run.json samples.txt "$FPS" "$STALL_S" "$t_start" "$t_kill" "$t_resume" "$t_int" \
    "${names[@]}" <<'PY' || fail "see above"
import json, sys
jpath, spath = sys.argv[1:3]
fps, stall_s, t_start, t_kill, t_resume, t_int = map(float, sys.argv[3:9])
names = sys.argv[9:]
# name: (size, ranges of frame numbers, file frames or None)
want = {"file0": ("128x120", [(2000, 2040)], 40), "tcp0": ("160x120", [(0, 500), (2500, 3000)], None),
        "tcp1": ("176x120", [(500, 1000)], None), "udp0": ("192x120", [(1000, 1500)], None),
        "udp1": ("144x120", [(1500, 2000)], None), "file1": ("160x96", [(3000, 3050)], 50)}
bad = []

def y4m(path):
    d = open(path, "rb").read()
    nl = d.index(b"\n")
    hdr = d[:nl].split()
    w = int([t[1:] for t in hdr if t.startswith(b"W")][0])
    h = int([t[1:] for t in hdr if t.startswith(b"H")][0])
    return d, nl + 1, w, h

def numbers(path):
    """The frame numbers read from the bands (-1: a band neither black nor white)."""
    d, pos, w, h = y4m(path)
    out = []
    while pos < len(d):
        e = d.index(b"\n", pos)
        y = d[e + 1:e + 1 + w * h]
        pos = e + 1 + w * h * 3 // 2
        v = 0
        for b in range(12):
            r = (2 * b + 1) * h // 24
            row = y[r * w + w // 4:r * w + 3 * w // 4]
            m = sum(row) / len(row)
            if 60 < m < 190:
                v = -1
                break
            v |= (m > 128) << b
        out.append(v)
    return out, w, h, pos - len(d)

j = json.load(open(jpath))
if j.get("status") != "interrupted":
    bad.append("--json status %r, expected 'interrupted'" % j.get("status"))
streams = {s["output"]: s for s in j.get("streams", [])}
if len(streams) != 6:
    bad.append("--json has %d streams, expected 6" % len(streams))
samples = [list(map(float, l.split())) for l in open(spath) if l.strip()]
for k, name in enumerate(names):
    size, ranges, file_frames = want[name]
    out = "out/%s_seg.y4m" % name
    try:
        nums, w, h, tail = numbers(out)
    except (OSError, ValueError, IndexError) as e:
        bad.append("%s: cannot read: %s" % (out, e))
        continue
    s = streams.get(out, {})
    line = "%-5s %3d frames (json %s), numbers %s..%s, reconnects %s, gap %.2f s" % (
        name, len(nums), s.get("frames"), nums[0] if nums else "-", nums[-1] if nums else "-",
        s.get("reconnects"), s.get("gap_s", 0))
    print(line)
    if "%dx%d" % (w, h) != size:
        bad.append("%s: %dx%d, expected %s" % (out, w, h, size))
    if tail:
        bad.append("%s: the last frame is cut" % out)
    if s.get("frames") != len(nums):
        bad.append("%s: %d frames, --json says %s" % (out, len(nums), s.get("frames")))
    if -1 in nums:
        bad.append("%s: frame %d has no readable number" % (out, nums.index(-1)))
    outside = [v for v in nums if not any(a <= v < b for a, b in ranges)]
    if outside:
        bad.append("%s: frames of another stream (numbers %s)" % (out, outside[:5]))
    jumps = [(i, a, b) for i, (a, b) in enumerate(zip(nums, nums[1:])) if b != a + 1]
    if file_frames is not None:
        if nums != list(range(ranges[0][0], ranges[0][0] + file_frames)):
            bad.append("%s: not the file's %d frames in order (jumps %s)" % (out, file_frames,
                                                                           jumps[:5]))
        continue
    if any(b <= a for _, a, b in jumps):
        bad.append("%s: out of order at %s" % (out, [j for j in jumps if j[2] <= j[1]][:5]))
    if name == "tcp0":
        # Killed and restarted: one jump from the first feeder's numbers to
        # the second's, a reconnect and a gap counted.
        if len(jumps) != 1 or not (jumps[0][1] < 500 <= 2500 <= jumps[0][2]):
            bad.append("%s: expected one jump from the first feeder to the second, got %s"
                       % (out, jumps[:5]))
        if (s.get("reconnects") or 0) < 1:
            bad.append("%s: --json reconnects %s, expected >= 1" % (out, s.get("reconnects")))
        if (s.get("gap_s") or 0) < 0.5:
            bad.append("%s: --json gap_s %s, expected >= 0.5 (the feeder was down 1 s)"
                       % (out, s.get("gap_s")))
        continue
    if jumps:
        bad.append("%s: frames missing at %s" % (out, jumps[:5]))
    if s.get("reconnects"):
        bad.append("%s: %s reconnects, its feeder never stopped" % (out, s.get("reconnects")))
    expect = fps * (t_int - t_start)
    if len(nums) < 0.75 * expect:
        bad.append("%s: %d frames, expected >= 75%% of %.0f (sent while the pipeline ran)"
                   % (out, len(nums), expect))
    # Progress over time from the sampled sizes (frame = header + Y4M frame).
    d, hdr, _, _ = y4m(out)
    fsize = d.index(b"\n", hdr) + 1 - hdr + w * h * 3 // 2
    series = [(r[0], max(0, int((r[1 + k] - hdr) // fsize))) for r in samples if r[1 + k] >= 0]
    during = [n for t, n in series if t_kill <= t <= t_resume]
    grown = during[-1] - during[0] if during else 0
    if grown < 0.5 * fps * (t_resume - t_kill):
        bad.append("%s: %d frames written during tcp0's %.1f s outage, expected >= %.0f"
                   % (out, grown, t_resume - t_kill, 0.5 * fps * (t_resume - t_kill)))
    last_t, last_n, longest = None, None, 0.0
    for t, n in series:
        if t > t_int:
            break
        if last_n is None or n > last_n:
            last_t, last_n = t, n
        longest = max(longest, t - last_t)
    print("      %d frames during the outage, longest time without a frame %.2f s"
          % (grown, longest))
    if longest >= stall_s:
        bad.append("%s: no frame written for %.2f s: the stream stalled" % (out, longest))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
! grep -q "giving up" run.err || fail "a stream was given up"
echo PASS
