#!/usr/bin/env bash
# How many live streams one `pixflow segment` run sustains (issue 12, "Live"):
# N copies of one clip, read at their native rate (--realtime, as cameras
# would send them), segmented in one pipeline (one batched model) with the
# composite dropped at the end (-o null). N passes when every stream kept the
# clip's rate (worst stream fps >= FPS_TOL x the clip's), every stream's p99
# latency (decode -> composite done) is <= P99_MS, and no frame was dropped
# or lost (every stream has all the clip's frames). N doubles from --start
# until a failure, then the largest passing N is found by bisection.
#
#   bench/bench_live_streams.sh [options] [CLIP]
#     CLIP             a video (e.g. 1080p30 H.264 MP4); made when missing with
#                      ffmpeg from .data/vtest.avi (--make), else required
#     --pixflow PATH   the binary (default: $PIXFLOW, else pixflow in build-cpu/, build/,
#                      build-cuda/ (build/ first for --device cuda*), else on PATH)
#     --device SPEC    cpu, cuda, cuda:N (default cpu)
#     --start N        first N (default 1)     --max N      largest N tried (default 256)
#     --fps-tol X      default 0.97            --p99-ms MS  default 100
#     --make WxH@FPS   the clip made when CLIP is missing (default 1280x720@30, 10 s)
#     --seconds S      its length (default 10); with a CLIP given: use its first S
#                      seconds only (pixflow --frames S x the clip's fps)
#     --clip-fps R     the clip's frame rate (default: --make's, i.e. 30)
#     --list N,N,...   run these N only (no search)
#     --keep DIR       keep each run's --json as DIR/nNNN.json
#     -- ARGS          passed on to pixflow segment (e.g. --batch 16)
#
# Needs bash, python3 (the driver, JSON, CPU time) and pixflow; ffmpeg only to
# make the clip. Prints one line per N (aggregate fps, worst stream fps, worst
# p50/p99, drops, CPU: the cores pixflow kept busy = its user+sys CPU time /
# wall time, the whole machine's busy share from /proc/stat, others' work
# included, and pixflow's CPU time per frame; the busiest stage other than
# the readers, from --stats: a reader's busy time includes its pacing waits)
# and the largest N that passed, with the likely bottleneck: the CPU when
# pixflow, or the machine, kept >= 90% of the cores busy, else that busiest
# stage (a stage near 100% busy on its one thread limits the run whatever
# the cores).
set -euo pipefail

usage() { sed -n '2,34p' "$0"; exit "${1:-0}"; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PIXFLOW_BIN=${PIXFLOW:-}
DEVICE=cpu START=1 MAX=256 FPS_TOL=0.97 P99_MS=100 MAKE=1280x720@30 SECONDS_=10 KEEP= CLIP_FPS= LIST= CUT=0
CLIP=
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage 0 ;;
    --pixflow) PIXFLOW_BIN=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --start) START=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --fps-tol) FPS_TOL=$2; shift 2 ;;
    --p99-ms) P99_MS=$2; shift 2 ;;
    --make) MAKE=$2; shift 2 ;;
    --seconds) SECONDS_=$2; CUT=1; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --clip-fps) CLIP_FPS=$2; shift 2 ;;
    --list) LIST=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) echo "bench_live_streams: unknown option $1" >&2; usage 2 ;;
    *) CLIP=$1; shift ;;
  esac
done
if [ -z "$PIXFLOW_BIN" ]; then
  dirs=(build-cpu build build-cuda)
  [[ $DEVICE == cuda* ]] && dirs=(build build-cuda build-cpu)
  for c in "${dirs[@]/#/$ROOT/}" "$(command -v pixflow || true)"; do
    [[ $c == "$ROOT"/* ]] && c=$c/pixflow
    [ -n "$c" ] && [ -x "$c" ] && { PIXFLOW_BIN=$c; break; }
  done
fi
[ -x "${PIXFLOW_BIN:-}" ] || { echo "bench_live_streams: no pixflow binary (--pixflow)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "bench_live_streams: needs python3" >&2; exit 2; }
export PIXFLOW_MODELS=${PIXFLOW_MODELS:-$ROOT}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_live_streams.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
if [ -n "$CLIP" ] && [ "$CUT" = 1 ]; then
  # A long clip (e.g. .data/bench/segment_1080p.mp4, 100 s): its first seconds.
  EXTRA=(--frames "$(python3 -c "print(round($SECONDS_ * ${CLIP_FPS:-${MAKE##*@}}))")" "${EXTRA[@]}")
fi
if [ -z "$CLIP" ]; then
  command -v ffmpeg > /dev/null ||
    { echo "bench_live_streams: give a CLIP (no ffmpeg here to make one)" >&2; exit 2; }
  [[ $MAKE =~ ^([0-9]+)x([0-9]+)@([0-9]+)$ ]] || { echo "--make '$MAKE': expected WxH@FPS" >&2; exit 2; }
  w=${BASH_REMATCH[1]} h=${BASH_REMATCH[2]} r=${BASH_REMATCH[3]}
  CLIP=$WORK/clip_${w}x${h}_${r}.mp4
  # vtest.avi (people walking, 10 fps) played 3x fast: every frame differs,
  # as a camera's do (duplicated frames would decode for almost nothing).
  src=(-f lavfi -i "testsrc2=size=${w}x${h}:rate=$r")
  [ -f "$ROOT/.data/vtest.avi" ] && src=(-i "$ROOT/.data/vtest.avi")
  ffmpeg -hide_banner -nostdin -loglevel error "${src[@]}" \
    -vf "setpts=PTS/3,scale=$w:$h,fps=$r" -t "$SECONDS_" -c:v libx264 -preset fast -crf 23 \
    -g "$r" -pix_fmt yuv420p -an "$CLIP"
  echo "clip: $CLIP (${w}x${h} ${r} fps H.264, $SECONDS_ s, from ${src[-1]})"
fi
[ -n "$CLIP_FPS" ] || CLIP_FPS=${MAKE##*@}
[ -r "$CLIP" ] || { echo "bench_live_streams: cannot read $CLIP" >&2; exit 2; }

exec python3 - "$PIXFLOW_BIN" "$CLIP" "$DEVICE" "$START" "$MAX" "$FPS_TOL" "$P99_MS" "$WORK" \
  "$KEEP" "$CLIP_FPS" "$LIST" "${EXTRA[@]}" <<'PY'
import json, os, resource, subprocess, sys, time

pixflow, clip, device, start, nmax, fps_tol, p99_max, work, keep, clip_fps, nlist = sys.argv[1:12]
extra = sys.argv[12:]
start, nmax, fps_tol, p99_max = int(start), int(nmax), float(fps_tol), float(p99_max)
clip_fps = float(clip_fps)
cores = len(os.sched_getaffinity(0))
START_S = 1.0     # allowance for the start of a one-input run (see judge)
clip_frames = 0   # the most frames any stream had (a stream with fewer lost some)
results = {}


def machine_busy():
    """(busy, total) jiffies of all CPUs from /proc/stat; None off Linux."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def stage_busy(table):
    """{stage: busy fraction} from the --stats table's stage lines."""
    busy = {}
    for line in table.splitlines():
        t = line.split()
        if len(t) > 5 and t[5].endswith("%") and t[1].isdigit():
            try:
                busy[t[0]] = float(t[5][:-1]) / 100
            except ValueError:
                pass
    return busy


def busiest(j):
    """'stage NN%' of the busiest stage that is not a reader (a reader's busy
    time includes its waits for the clip's timestamps under --realtime), and
    the busiest reader's."""
    b = j.get("stage_busy") or {}
    work = {k: v for k, v in b.items() if not k.startswith("read")}
    reads = {k: v for k, v in b.items() if k.startswith("read")}
    def fmt(d):
        if not d:
            return "-"
        k, v = max(d.items(), key=lambda kv: kv[1])
        return "%s %.0f%%" % (k, 100 * v)
    return fmt(work), fmt(reads)


def run(n):
    d = os.path.join(work, "n%d" % n)
    os.makedirs(d, exist_ok=True)
    ext = os.path.splitext(clip)[1]
    inputs = []
    for i in range(n):
        p = os.path.join(d, "s%03d%s" % (i, ext))
        if not os.path.exists(p):
            os.symlink(os.path.abspath(clip), p)
        inputs.append(p)
    cmd = [pixflow, "segment", *inputs, "-o", "null", "--realtime", "--json", "--stats",
           "--quiet", "--device", device, *extra]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    m0 = machine_busy()
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    m1 = machine_busy()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    machine = (m1[0] - m0[0]) / (m1[1] - m0[1]) if m0 and m1 and m1[1] > m0[1] else -1
    if keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, "n%03d.json" % n), "w") as f:
            f.write(p.stdout)
    # --stats prints the stage table, then --json its object.
    at = p.stdout.find("\n{\n")
    stats, doc = (p.stdout[:at], p.stdout[at + 1:]) if at >= 0 else ("", p.stdout)
    try:
        j = json.loads(doc)
        j["stage_busy"] = stage_busy(stats)
    except ValueError:
        sys.exit("N=%d: pixflow exited %d without a JSON summary:\n%s" %
                 (n, p.returncode, p.stderr[-2000:]))
    if p.returncode != 0:
        sys.exit("N=%d: pixflow exited %d:\n%s" % (n, p.returncode, p.stderr[-2000:]))
    return j, wall, cpu, machine


def judge(n, j, wall, cpu, machine):
    global clip_frames
    # One input runs the single-input path, whose summary has no per-stream
    # window: its fps is over the whole run, the start (model planning,
    # ~0.5 s) included. Its fps is taken over the run less START_S (at most
    # the clip's rate): the stream passes when the run took at most the
    # clip's duration / FPS_TOL + START_S.
    s = j.get("streams")
    if not s:
        s = [{k: j[k] for k in ("frames", "dropped", "latency_p50_ms", "latency_p99_ms")}]
        s[0]["fps"] = min(clip_fps, j["frames"] / max(j["elapsed_s"] - START_S, 1e-3))
    clip_frames = max(clip_frames, max(x["frames"] for x in s))
    worst_fps = min(x["fps"] for x in s)
    worst_p50 = max(x["latency_p50_ms"] for x in s)
    worst_p99 = max(x["latency_p99_ms"] for x in s)
    drops = sum(x["dropped"] for x in s) + sum(clip_frames - x["frames"] for x in s)
    agg = sum(x["fps"] for x in s)
    why = []
    if worst_fps < fps_tol * clip_fps:
        why.append("fps %.1f < %.1f" % (worst_fps, fps_tol * clip_fps))
    if worst_p99 > p99_max:
        why.append("p99 %.0f ms > %.0f" % (worst_p99, p99_max))
    if drops:
        why.append("%d frames dropped or lost" % drops)
    r = dict(n=n, ok=not why, agg=agg, worst_fps=worst_fps, p50=worst_p50, p99=worst_p99,
             drops=drops, cores_busy=cpu / wall if wall > 0 else 0, wall=wall, machine=machine,
             cpu_ms=1000 * cpu / max(1, sum(x["frames"] for x in s)),
             busiest=busiest(j)[0], busiest_read=busiest(j)[1], why="; ".join(why))
    results[n] = r
    print("%5d  %-4s  %9.1f  %9.1f  %8.1f  %8.1f  %5d  %5.2f/%d  %6s  %6.1f  %-15s %s" % (
        n, "ok" if r["ok"] else "FAIL", agg, worst_fps, worst_p50, worst_p99, drops,
        r["cores_busy"], cores, "%.0f%%" % (100 * machine) if machine >= 0 else "-", r["cpu_ms"],
        r["busiest"], r["why"]), flush=True)
    return r["ok"]


def trial(n):
    if n not in results:
        judge(n, *run(n))
    return results[n]["ok"]


print("pixflow %s, device %s, clip %s (%g fps), %d CPU cores for this process" %
      (pixflow, device, clip, clip_fps, cores))
print("pass: every stream >= %.2f x the clip's fps, p99 <= %.0f ms, no drops\n" %
      (fps_tol, p99_max))
print("%5s  %-4s  %9s  %9s  %8s  %8s  %5s  %7s  %6s  %6s  %-15s %s" % (
    "N", "", "agg fps", "worst fps", "p50 ms", "p99 ms", "drops", "pixflow", "machine",
    "ms CPU", "busiest", "why not"))
if nlist:
    for n in [int(x) for x in nlist.split(",")]:
        trial(n)
    sys.exit(0)
good, bad, n = 0, None, max(1, start)
while n <= nmax:
    if trial(n):
        good = n
        n *= 2
    else:
        bad = n
        break
if good == 0 and bad is not None and bad > 1:  # --start above what passes: go down
    lo, hi = 0, bad
else:
    lo, hi = good, bad if bad is not None else None
if hi is not None:
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if trial(mid):
            lo = mid
        else:
            hi = mid
    good = lo
print()
if good == 0:
    print("largest N that passed: none (1 stream already fails)")
else:
    r = results[good]
    print("largest N that passed: %d (%.1f fps aggregate, worst stream %.1f fps, "
          "p50 %.1f ms, p99 %.1f ms)" % (good, r["agg"], r["worst_fps"], r["p50"], r["p99"]))
fail = results.get(good + 1) or (results.get(hi) if hi else None)
if fail:
    own = fail["cores_busy"] / cores
    print("at N=%d: %s; pixflow kept %.2f of %d cores busy, the machine %s; busiest stage "
          "%s, busiest reader %s (decode and pacing waits)"
          % (fail["n"], fail["why"], fail["cores_busy"], cores,
             "%.0f%%" % (100 * fail["machine"]) if fail["machine"] >= 0 else "(unknown)",
             fail["busiest"], fail["busiest_read"]))
    print("bottleneck: " + (
        "the CPU (pixflow used %.0f%% of its cores)" % (100 * own) if own >= 0.9 else
        "the CPU, shared: the machine was %.0f%% busy, pixflow %.0f%% of it"
        % (100 * fail["machine"], 100 * fail["cores_busy"] / cores / fail["machine"])
        if fail["machine"] >= 0.9 else
        "stage %s (the CPU was not saturated)" % fail["busiest"]))
elif hi is None:
    print("(every N up to --max %d passed)" % nmax)
PY
