#!/usr/bin/env bash
# Benchmarks of the Redis queue (docs/benchmarks.md, "Job queue on Redis"):
#   1. the queue's own cost per job: workers with --dry-run (take, check,
#      record the result, acknowledge; run nothing), 1 and 4 workers;
#   2. throughput of small reproject jobs (one 512x256 equirect -> 2 views of
#      160x120 PNG each, a job = one child pixflow process) with 1, 2 and 4
#      workers, and the scaling efficiency;
#   3. the submission cost (queue add --from, per job).
# Starts its own redis-server (loopback, free port, AOF on with
# appendfsync everysec, in a temp dir) and stops it.
#
#   bench/bench_queue.sh [BUILD_DIR]        (default build-cpu, then build)
#   JOBS=200 DRY_JOBS=5000 bench/bench_queue.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-}
if [ -z "$BUILD" ]; then
  for d in build-cpu build; do [ -x "$d/pixflow" ] && BUILD=$d && break; done
fi
PIXFLOW=$(realpath "${BUILD:?no build dir with a pixflow binary}/pixflow")
JOBS=${JOBS:-120}
DRY_JOBS=${DRY_JOBS:-4000}
export PIXFLOW_DEVICE=${PIXFLOW_DEVICE:-cpu} PIXFLOW_LOG=error

WORK=$(mktemp -d /tmp/pixflow-bench-queue.XXXXXX)
REDIS_PID=
cleanup() {
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"
mkdir -p redis in
for try in 1 2 3 4 5; do
  PORT=$((20000 + RANDOM % 40000))
  redis-server --port "$PORT" --bind 127.0.0.1 --dir "$WORK/redis" --appendonly yes \
    --appendfsync everysec --save '' --logfile "$WORK/redis/log" &
  REDIS_PID=$!
  for i in $(seq 50); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break 2; sleep 0.1; done
  kill "$REDIS_PID" 2>/dev/null; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=
done
[ -n "$REDIS_PID" ] || { echo "cannot start redis-server" >&2; exit 1; }
URL=redis://127.0.0.1:$PORT
ffmpeg -loglevel error -f lavfi -i testsrc=size=512x256:rate=1 -frames:v 1 in/a.png

now() { date +%s.%N; }
q() { "$PIXFLOW" queue "$1" --redis "$URL" --queue "$Q" "${@:2}"; }

make_jobs() { # make_jobs N KIND FILE
  local n=$1 kind=$2 i
  : >"$3"
  for i in $(seq 1 "$n"); do
    if [ "$kind" = dry ]; then
      printf '{"argv":["reproject","in/a.png","-o","out/%d","--views","1"]}\n' "$i"
    else
      printf '{"argv":["reproject","%s/in/a.png","-o","%s/out/%d","--views","2:90:160x120","--format","png"]}\n' \
        "$WORK" "$WORK" "$i"
    fi
  done >"$3"
}

# run_workers N [worker options...]: N workers to an empty queue; prints seconds.
run_workers() {
  local n=$1 pids=() k
  shift
  local t0 t1
  t0=$(now)
  for k in $(seq 1 "$n"); do
    "$PIXFLOW" worker --redis "$URL" --queue "$Q" --name "w$k" --exit-when-empty --quiet "$@" &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k"; done
  t1=$(now)
  echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}'
}

echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), hiredis $(dpkg-query -W -f='${Version}' libhiredis0.14 2>/dev/null || echo '?')"
echo

# CPU time (user + system, s) of a process so far, from /proc.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$1/stat"; }
# Milliseconds between the first and the last result of queue $Q (the run
# itself, without the workers' start and the --exit-when-empty wait).
span_ms() { q results | sed -n 's/.*"finished_ms":\([0-9]*\).*/\1/p' | sort -n | sed -n '1p;$p' | paste -sd' ' | awk '{print $2 - $1}'; }

# 1. The queue's own cost per job.
make_jobs "$DRY_JOBS" dry dry.jsonl
Q=dry1
t0=$(now); q add --from dry.jsonl >/dev/null; t1=$(now)
add_ms=$(echo "$t0 $t1 $DRY_JOBS" | awk '{printf "%.3f", ($2 - $1) * 1000 / $3}')
r0=$(cpu_s "$REDIS_PID")
TIMEFORMAT='%U %S'
wcpu=$( { time "$PIXFLOW" worker --redis "$URL" --queue "$Q" --exit-when-empty --quiet --dry-run \
          >/dev/null 2>&1; } 2>&1 )
r1=$(cpu_s "$REDIS_PID")
span1=$(span_ms)
Q=dry4
q add --from dry.jsonl >/dev/null
r2=$(cpu_s "$REDIS_PID")
s4=$(run_workers 4 --dry-run)
r3=$(cpu_s "$REDIS_PID")
span4=$(span_ms)
[ "$(Q=dry1 q status --json | sed -n 's/^ *"done": \([0-9]*\).*/\1/p')" = "$DRY_JOBS" ] || echo "WARNING: dry1 not all done" >&2
echo "| queue's own cost ($DRY_JOBS no-op jobs, worker --dry-run) | workers | wall ms/job (first to last result) | jobs/s | worker CPU µs/job | redis-server CPU µs/job |"
echo "|---|---|---|---|---|---|"
echo "$DRY_JOBS $span1 $wcpu $r0 $r1" | awk '{printf "| take + check + record + ack | 1 | %.3f | %.0f | %.0f | %.0f |\n", $2 / $1, $1 * 1000 / $2, ($3 + $4) * 1e6 / $1, ($6 - $5) * 1e6 / $1}'
echo "$DRY_JOBS $span4 $r2 $r3" | awk '{printf "| take + check + record + ack | 4 | %.3f | %.0f | - | %.0f |\n", $2 / $1, $1 * 1000 / $2, ($4 - $3) * 1e6 / $1}'
echo "| submit (queue add --from, one connection) | - | $add_ms | - | - | - |"
echo
echo "redis-benchmark on this machine (50 clients, no pipelining):"
redis-benchmark -p "$PORT" -q -n 100000 -t set,get,sadd,xadd 2>/dev/null | tr '\r' '\n' | grep -v '^$' | grep 'requests per second' || true
echo

# 2. Reproject throughput.
make_jobs "$JOBS" real real.jsonl
echo "| reproject jobs ($JOBS x 512x256 -> 2 views 160x120 PNG) | workers | s | jobs/s | scaling efficiency |"
echo "|---|---|---|---|---|"
base=
for n in 1 2 4; do
  Q=rp$n
  rm -rf out
  q add --from real.jsonl >/dev/null
  s=$(run_workers "$n")
  done_n=$(q status --json | sed -n 's/^ *"done": \([0-9]*\).*/\1/p')
  [ "$done_n" = "$JOBS" ] || echo "WARNING: $Q: $done_n of $JOBS done" >&2
  rate=$(echo "$JOBS $s" | awk '{printf "%.2f", $1 / $2}')
  [ -n "$base" ] || base=$rate
  echo "$n $s $rate $base" | awk '{printf "| child pixflow per job | %d | %.2f | %.2f | %.0f%% |\n", $1, $2, $3, 100 * $3 / ($1 * $4)}'
done
# One job's own time, for comparison: the same command run directly.
t0=$(now)
for i in $(seq 1 10); do
  "$PIXFLOW" reproject "$WORK/in/a.png" -o "$WORK/direct" --views 2:90:160x120 --format png --quiet >/dev/null
done
t1=$(now)
echo "$t0 $t1" | awk '{printf "| the same command run directly, one after another | - | %.3f per job | %.2f | - |\n", ($2 - $1) / 10, 10 / ($2 - $1)}'
