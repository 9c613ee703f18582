#!/usr/bin/env bash
# CLI tests of `pixflow queue` and `pixflow worker` (registered by
# tests/queue_cli.cmake). Each case starts its own redis-server on a free
# loopback port with AOF on (appendfsync always) in its work directory and
# stops it, and every worker it starts, on exit.
#
#   queue_cli.sh CASE PIXFLOW REF WORKDIR
#
# CASE: cli exactly_once kill9 restart poison malformed sigterm
# REF is tests/reproject_cli_ref (it generates the small equirect inputs).
# Exit 0 pass, 1 fail (the failing check is printed), 77 skipped (no
# redis-server, or pixflow built without the queue).
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
REF=${3:?reference binary}
WORK=${4:?work directory}
export PIXFLOW_DEVICE=cpu
export PIXFLOW_LOG=warn
unset PIXFLOW_REDIS_PASSWORD PIXFLOW_REDIS_USER

command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
  { echo "SKIP: redis-server/redis-cli not installed (scripts/setup.sh installs them)"; exit 77; }
"$PIXFLOW" queue --help >/dev/null 2>&1 || { echo "SKIP: pixflow has no queue command"; exit 77; }

rm -rf "$WORK"
mkdir -p "$WORK/in" "$WORK/redis"
cd "$WORK" || exit 1
WORK=$(pwd -P)

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
PIDS=()
REDIS_PID=
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  [ -n "$REDIS_PID" ] && kill -KILL "$REDIS_PID" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

# redis-server on a free loopback port: a random one, again if taken.
start_redis() { # start_redis [extra redis-server args...]
  local tries
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    [ -n "${PORT:-}" ] && [ "$tries" = 1 ] || PORT=$((20000 + RANDOM % 40000))
    redis-server --port "$PORT" --bind 127.0.0.1 --dir "$WORK/redis" --appendonly yes \
      --appendfsync always --save '' --logfile "$WORK/redis/log" "$@" &
    REDIS_PID=$!
    local i
    for i in $(seq 50); do
      if redis-cli -p "$PORT" ${REDIS_PASS:+--no-auth-warning -a "$REDIS_PASS"} ping 2>/dev/null |
        grep -q PONG; then
        URL=redis://127.0.0.1:$PORT
        return 0
      fi
      kill -0 "$REDIS_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
    PORT=
  done
  echo "cannot start redis-server" >&2
  tail -5 "$WORK/redis/log" >&2
  exit 1
}
rcli() { redis-cli -p "$PORT" --no-auth-warning ${REDIS_PASS:+-a "$REDIS_PASS"} "$@"; }

Q=t
q() { "$PIXFLOW" queue "$1" --redis "$URL" --queue "$Q" "${@:2}"; }
status_field() { # status_field NAME: one count of `queue status --json`
  q status --json | sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p"
}
worker() { # worker NAME [options...]: a background worker; its pid in WPID, log in NAME.log
  local name=$1
  shift
  "$PIXFLOW" worker --redis "$URL" --queue "$Q" --name "$name" --json "$@" \
    >"$name.json" 2>"$name.log" &
  WPID=$!
  PIDS+=("$WPID")
}
wait_worker() { # wait_worker PID [SECONDS]: its exit status; killed (and 124) past the bound
  local pid=$1 limit=${2:-200}
  local end=$((SECONDS + limit))
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $end ]; then
      echo "worker $pid still running after ${limit}s: killed" >&2
      kill -KILL "$pid"
      wait "$pid" 2>/dev/null
      return 124
    fi
    sleep 0.1
  done
  wait "$pid"
}
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...: polls until the command succeeds
  local limit=$1 what=$2
  shift 2
  local end=$((SECONDS + limit))
  until "$@"; do
    if [ $SECONDS -ge $end ]; then
      fail "timed out after ${limit}s waiting for: $what"
      return 1
    fi
    sleep 0.1
  done
}
json_num() { sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p" "$2"; }

gen() { "$REF" gen "$@" >/dev/null || { echo "cannot generate $1" >&2; exit 1; }; }

# Adds N reproject jobs of in/a.png with ids job-000.. and outputs out/NNN/.
add_jobs() { # add_jobs N [view spec]
  local n=$1 views=${2:-2:90:48x32} i
  : >jobs.jsonl
  for i in $(seq -f %03g 0 $((n - 1))); do
    printf '{"id":"job-%s","argv":["reproject","%s/in/a.png","-o","%s/out/%s","--views","%s","--format","png"]}\n' \
      "$i" "$WORK" "$WORK" "$i" "$views" >>jobs.jsonl
  done
  q add --from jobs.jsonl >added.txt || fail "queue add --from jobs.jsonl"
  [ "$(wc -l <added.txt)" = "$n" ] || fail "expected $n ids from queue add, got $(wc -l <added.txt)"
}

# Every job id has exactly one "done" result and its two views exist.
check_exactly_once() { # check_exactly_once N
  local n=$1
  q results >results.jsonl || fail "queue results"
  local done_lines unique
  done_lines=$(grep -c '"status":"done"' results.jsonl)
  unique=$(grep '"status":"done"' results.jsonl | sed 's/.*"id":"\([^"]*\)".*/\1/' | sort -u | wc -l)
  [ "$done_lines" = "$n" ] || fail "expected $n done results, got $done_lines"
  [ "$unique" = "$n" ] || fail "expected $n distinct job ids done, got $unique"
  [ "$(status_field done)" = "$n" ] || fail "status done is $(status_field done), expected $n"
  local missing=0 i
  for i in $(seq -f %03g 0 $((n - 1))); do
    [ -s "out/$i/a_view00.png" ] && [ -s "out/$i/a_view01.png" ] || missing=$((missing + 1))
  done
  [ "$missing" = 0 ] || fail "$missing jobs lack their outputs"
}

case "$case_name" in
cli)
  start_redis
  gen in/a.png 256 128 1
  # Usage errors say what is wrong and exit 2.
  "$PIXFLOW" queue add --queue $Q -- reproject in/a.png -o out 2>err.txt
  [ $? = 2 ] && grep -q -- "--redis URL is required" err.txt || fail "missing --redis"
  "$PIXFLOW" queue frobnicate --redis "$URL" --queue $Q 2>err.txt
  [ $? = 2 ] && grep -q "unknown subcommand 'frobnicate'" err.txt || fail "unknown subcommand"
  q add 2>err.txt
  [ $? = 2 ] && grep -q "no job" err.txt || fail "add without a job"
  q purge 2>err.txt
  [ $? = 2 ] || fail "purge without a choice must be refused"
  # Hostile or wrong jobs are refused at submission too.
  q add -- reproject "$WORK/in/../in/a.png" -o out 2>err.txt
  [ $? = 2 ] && grep -q "'..' in a path is not allowed" err.txt || fail "'..' refused at add"
  q add -- model inspect x.onnx 2>err.txt
  [ $? = 2 ] && grep -q "unknown job type 'model'" err.txt || fail "unknown type refused at add"
  q add -- reproject --list files.txt -o out 2>err.txt
  [ $? = 2 ] && grep -q -- "'--list' is not allowed" err.txt || fail "--list refused"
  q add -- segment - -o out.mp4 2>err.txt
  [ $? = 2 ] && grep -q "stdin/stdout" err.txt || fail "'-' refused"
  # Credentials never come from the command line, and never show.
  "$PIXFLOW" queue status --redis "redis://bob:hunter2@127.0.0.1:$PORT" --queue $Q >out.txt 2>err.txt
  [ $? = 2 ] && grep -q "password in the URL is not accepted" err.txt || fail "URL password refused"
  grep -q hunter2 err.txt out.txt && fail "the password from the URL was printed"
  "$PIXFLOW" queue status --redis "rediss://127.0.0.1:$PORT" --queue $Q 2>err.txt
  [ $? != 0 ] && grep -q "TLS" err.txt || fail "rediss:// refused with a TLS message"
  # A file with one bad line adds nothing; the message names the line.
  printf '{"argv":["reproject","%s/in/a.png","-o","%s/o1","--views","1:90:16x16"]}\n{"argv":["reproject","x.png"],"bogus":1}\n' \
    "$WORK" "$WORK" >bad.jsonl
  q add --from bad.jsonl 2>err.txt
  [ $? = 2 ] && grep -q "bad.jsonl:2: job entry: unknown field 'bogus'" err.txt || fail "bad --from line"
  [ "$(status_field waiting)" = 0 ] || fail "a file with a bad line added jobs"
  # Three good jobs: one from the command line, two from a file.
  id1=$(q add --id first -- reproject "$WORK/in/a.png" -o "$WORK/o1" --views 1:90:16x16 --format png)
  [ "$id1" = first ] || fail "queue add --id first printed '$id1'"
  printf '{"argv":["reproject","%s/in/a.png","-o","%s/o2","--views","1:90:16x16","--format","png"]}\n\n{"argv":["reproject","%s/in/a.png","-o","%s/o3","--views","1:90:16x16","--format","png"],"timeout_s":60}\n' \
    "$WORK" "$WORK" "$WORK" "$WORK" >good.jsonl
  q add --from good.jsonl --json >added.json || fail "add --from good.jsonl"
  grep -q '"added":2' added.json || fail "add --json: $(cat added.json)"
  [ "$(status_field waiting)" = 3 ] || fail "status: expected 3 waiting, got $(status_field waiting)"
  [ "$(status_field done)" = 0 ] || fail "status: done must be 0 before any worker ran"
  worker w1 --exit-when-empty
  wait_worker "$WPID" || fail "worker --exit-when-empty exit status $?"
  [ "$(json_num done w1.json)" = 3 ] || fail "worker done count: $(cat w1.json)"
  [ "$(status_field done)" = 3 ] || fail "status done after the run: $(status_field done)"
  [ "$(status_field waiting)" = 0 ] && [ "$(status_field running)" = 0 ] || fail "queue not empty"
  for o in o1 o2 o3; do [ -s "$o/a_view00.png" ] || fail "$o/a_view00.png missing"; done
  q results --json >results.json
  grep -q '"outputs":\["'"$WORK"'/o1"\]' results.json || fail "result outputs: $(head -c 600 results.json)"
  grep -q '"figures":{"command":"reproject"' results.json || fail "result figures"
  grep -q '"worker":"w1"' results.json || fail "result worker"
  # An authenticated server: the password from the environment or a file,
  # never in messages; a wrong one is refused by name, not echoed.
  rcli CONFIG SET requirepass 's3cret-pw' >/dev/null
  REDIS_PASS=s3cret-pw
  PIXFLOW_REDIS_PASSWORD=wrong-pw "$PIXFLOW" queue status --redis "$URL" --queue $Q >out.txt 2>err.txt
  [ $? = 1 ] && grep -qi "login refused\|WRONGPASS\|invalid" err.txt || fail "wrong password: $(cat err.txt)"
  grep -q "wrong-pw" err.txt out.txt && fail "the wrong password was printed"
  PIXFLOW_REDIS_PASSWORD=s3cret-pw q status >/dev/null || fail "password from the environment"
  printf 's3cret-pw\n' >auth.txt
  chmod 600 auth.txt
  q status --redis-auth-file auth.txt >/dev/null || fail "password from --redis-auth-file"
  PIXFLOW_REDIS_PASSWORD=s3cret-pw q add -- reproject "$WORK/in/a.png" -o "$WORK/o4" --views 1:90:16x16 >/dev/null
  PIXFLOW_REDIS_PASSWORD=s3cret-pw worker w2 --exit-when-empty
  wait_worker "$WPID" || fail "worker with a password: exit status $?"
  PIXFLOW_REDIS_PASSWORD=s3cret-pw q results >results.jsonl
  grep -q s3cret results.jsonl w1.log w2.log w1.json w2.json && fail "the password appears in results or logs"
  [ -s o4/a_view00.jpg ] || fail "job run by the authenticated worker"
  ;;
exactly_once)
  # 200 jobs, 4 workers: each job done once, none lost. Then every job is
  # delivered again (the same ids, as a redelivery would): all are detected
  # as done and none is run or recorded twice.
  start_redis
  gen in/a.png 256 128 2
  add_jobs 200
  for n in 1 2 3 4; do
    worker "w$n" --exit-when-empty --quiet
    W[$n]=$WPID
  done
  for n in 1 2 3 4; do wait_worker "${W[$n]}" || fail "worker w$n exit status $?"; done
  check_exactly_once 200
  total=0
  for n in 1 2 3 4; do total=$((total + $(json_num done "w$n.json"))); done
  [ "$total" = 200 ] || fail "workers report $total jobs done, expected 200"
  busy=0
  for n in 1 2 3 4; do [ "$(json_num done "w$n.json")" -gt 0 ] && busy=$((busy + 1)); done
  [ "$busy" -ge 2 ] || fail "only $busy of 4 workers took jobs"
  # Redelivery of done jobs: same ids again.
  rm -rf out
  q add --from jobs.jsonl >/dev/null
  worker w5 --exit-when-empty --quiet
  wait_worker "$WPID" || fail "worker w5 exit status $?"
  [ "$(json_num duplicates w5.json)" = 200 ] || fail "w5 should skip 200 duplicates: $(cat w5.json)"
  [ "$(json_num done w5.json)" = 0 ] || fail "w5 ran done jobs again"
  [ -e out ] && fail "a duplicate job was run again (out/ exists)"
  q results >results.jsonl
  [ "$(grep -c '"status":"done"' results.jsonl)" = 200 ] || fail "duplicates were recorded"
  # A worker that goes silent (SIGSTOP) in the middle of a job loses it to
  # another worker, which completes it; when the first one wakes up and
  # finishes too, its result is detected as a duplicate and not recorded.
  q add --id slow -- reproject "$WORK/in/a.png" -o "$WORK/slow" --views 2:90:48x32 >/dev/null
  worker wa --visibility 1s
  WA=$WPID
  wait_for 30 "wa running the job" pgrep -P "$WA" -x pixflow >/dev/null
  kill -STOP "$WA"
  sleep 1.5
  worker wb --visibility 1s --exit-when-empty --quiet
  wait_worker "$WPID" || fail "worker wb exit status $?"
  [ "$(json_num claimed wb.json)" = 1 ] && [ "$(json_num done wb.json)" = 1 ] || fail "wb: $(cat wb.json)"
  kill -CONT "$WA"
  wait_for 30 "wa settling its copy of the job" grep -q "was done meanwhile by another worker" wa.log
  kill -TERM "$WA"
  wait_worker "$WA" || fail "worker wa exit status $?"
  [ "$(json_num duplicates wa.json)" = 1 ] && [ "$(json_num done wa.json)" = 0 ] || fail "wa: $(cat wa.json)"
  q results >results.jsonl
  [ "$(grep -c '"id":"slow"' results.jsonl)" = 1 ] || fail "the silent worker's job was recorded twice"
  ;;
kill9)
  # Workers are killed with SIGKILL in the middle of a job (while their job's
  # child process runs), three times; each time a fresh worker joins. Every
  # job is completed exactly once, and a watcher checks that any file under a
  # final name is a complete PNG (its last chunk is IEND) at every moment.
  start_redis
  gen in/a.png 1024 512 3
  add_jobs 30 4:90:160x120
  mkdir -p out
  (
    bad=0
    while [ ! -e stop_watch ]; do
      for f in out/*/a_view0*.png; do
        [ -e "$f" ] || continue
        tail -c 8 "$f" 2>/dev/null | od -An -c | grep -q 'I   E   N   D' || { echo "partial: $f"; bad=1; }
      done
      sleep 0.02
    done
    exit $bad
  ) >watch.txt 2>&1 &
  WATCH=$!
  for n in 1 2 3; do worker "w$n" --visibility 1.5s --quiet; W[$n]=$WPID; done
  kills=0
  for round in 1 2 3; do
    victim=${W[$round]}
    # Wait until the victim runs a job (it has a child process), then kill it.
    if wait_for 30 "worker w$round running a job" pgrep -P "$victim" -x pixflow >/dev/null; then
      sleep 0.1
      kill -KILL "$victim" && kills=$((kills + 1))
      wait "$victim" 2>/dev/null
    fi
    # The newcomers exit once the queue is empty, after claiming what the
    # killed workers left.
    n=$((round + 3))
    worker "w$n" --visibility 1.5s --quiet --exit-when-empty
    W[$n]=$WPID
  done
  [ "$kills" = 3 ] || fail "killed $kills workers, expected 3"
  for n in 4 5 6; do wait_worker "${W[$n]}" || fail "worker w$n exit status $?"; done
  touch stop_watch
  wait "$WATCH" || fail "a partial output was visible under its final name: $(cat watch.txt)"
  check_exactly_once 30
  claimed=0
  for n in 4 5 6; do claimed=$((claimed + $(json_num claimed "w$n.json" || echo 0))); done
  [ "$claimed" -ge 1 ] || fail "no job of a killed worker was claimed by another ($claimed)"
  # No killed worker's job process outlived it (PR_SET_PDEATHSIG).
  pgrep -f "$WORK/in/a.png" >/dev/null && fail "a job process outlived its worker"
  ;;
restart)
  # redis-server is killed (SIGKILL: only the AOF survives) and restarted in
  # the middle of a run; the workers reconnect and every job completes once.
  # The visibility timeout is long (300 s): a delivery or a result lost with
  # the server (a reply never read, a LOADING error while the AOF is read) is
  # recovered at once by the worker itself, or the run would take 300 s.
  start_redis
  gen in/a.png 256 128 4
  add_jobs 60
  worker w1 --exit-when-empty --quiet --reconnect-timeout 30s --visibility 300s
  W1=$WPID
  worker w2 --exit-when-empty --quiet --reconnect-timeout 30s --visibility 300s
  W2=$WPID
  wait_for 60 "a third of the jobs done" sh -c "[ \"\$($PIXFLOW queue status --redis $URL --queue $Q --json | sed -n 's/^ *\"done\": \([0-9]*\).*/\1/p')\" -ge 20 ]"
  kill -KILL "$REDIS_PID"
  wait "$REDIS_PID" 2>/dev/null
  sleep 1.5
  start_redis
  wait_worker "$W1" 250 || fail "worker w1 exit status $? after the restart"
  wait_worker "$W2" 250 || fail "worker w2 exit status $? after the restart"
  grep -q "claimed entry" w1.log w2.log && fail "a job waited for the visibility timeout: $(grep -h 'claimed entry' w1.log w2.log)"
  check_exactly_once 60
  rec=$(( $(json_num reconnects w1.json) + $(json_num reconnects w2.json) ))
  [ "$rec" -ge 2 ] || fail "expected both workers to reconnect, got $rec reconnects"
  grep -q "reconnected after" w1.log || fail "w1 did not log its reconnection"
  ;;
poison)
  # A job with a bad input fails every attempt and ends in the dead-letter
  # stream with its error after 3 attempts with back-off, while the good jobs
  # behind it complete. A job that hangs is killed at its time limit; a job
  # whose process crashes is retried without harming the worker.
  start_redis
  gen in/a.png 256 128 5
  mkfifo in/hang.png
  q add --id poison -- reproject "$WORK/in/missing.png" -o "$WORK/pout" --views 1 >/dev/null
  q add --id hang --timeout 1s -- reproject "$WORK/in/hang.png" -o "$WORK/hout" --views 1 >/dev/null
  add_jobs 10
  worker w1 --exit-when-empty --max-attempts 3 --backoff 200ms
  W1=$WPID
  wait_worker "$W1" || fail "worker exit status $?"
  check_exactly_once 10
  q dead --json >dead.json
  grep -q '"error":"exit status 1: .*missing.png.*(attempt 3 of 3)"' dead.json || fail "poison dead letter: $(cat dead.json)"
  grep -q '"error":"timed out after .* (attempt 3 of 3)"' dead.json || fail "hanging job dead letter: $(cat dead.json)"
  [ "$(status_field dead)" = 2 ] || fail "status dead: $(status_field dead)"
  grep -c "failed (attempt" w1.log | grep -qx 4 || fail "expected 4 logged retries: $(grep -c 'failed (attempt' w1.log)"
  # Good jobs were not held up behind the poison (added before them): they
  # completed while it was failing and waiting for its retries.
  q results >results.jsonl
  first_good=$(grep -n '"id":"job-' results.jsonl | head -1 | cut -d: -f1)
  poison_line=$(grep -n '"id":"poison"' results.jsonl | cut -d: -f1)
  [ -n "$first_good" ] && [ -n "$poison_line" ] && [ "$first_good" -lt "$poison_line" ] ||
    fail "the good jobs waited for the poison job"
  # Crash: a job's process killed by a signal is a failed run, then retried.
  q add --id crash -- reproject "$WORK/in/hang.png" -o "$WORK/cout" --views 1 >/dev/null
  worker w2 --max-attempts 2 --backoff 100ms
  W2=$WPID
  first=
  for attempt in 1 2; do
    # A new process (not the first one, which may linger as a zombie).
    wait_for 30 "the crash job's process $attempt" sh -c \
      "p=\$(pgrep -P $W2 -x pixflow); [ -n \"\$p\" ] && [ \"\$p\" != \"$first\" ]"
    first=$(pgrep -P "$W2" -x pixflow)
    kill -SEGV "$first"
  done
  wait_for 30 "the crash job's dead letter" sh -c "[ \"\$($PIXFLOW queue status --redis $URL --queue $Q --json | sed -n 's/^ *\"dead\": \([0-9]*\).*/\1/p')\" = 3 ]"
  kill -0 "$W2" || fail "the worker died with its job"
  q dead >dead.txt
  grep -q "crashed: killed by signal 11" dead.txt || fail "crash dead letter: $(cat dead.txt)"
  kill -TERM "$W2"
  wait_worker "$W2" || fail "worker w2 exit status $?"
  # retry moves dead letters back, attempts reset; purge empties.
  q retry --job poison >retry.txt || fail "queue retry"
  grep -q "^1 dead letter" retry.txt || fail "retry --job poison: $(cat retry.txt)"
  [ "$(status_field waiting)" = 1 ] && [ "$(status_field dead)" = 2 ] || fail "after retry: $(q status)"
  q purge --all --json >purge.json || fail "queue purge --all"
  [ "$(status_field waiting)" = 0 ] && [ "$(status_field done)" = 0 ] && [ "$(status_field dead)" = 0 ] || fail "after purge: $(q status)"
  ;;
malformed)
  # Entries written straight into the stream (not through `queue add`) that
  # are not valid jobs go to the dead-letter stream with a clear error; the
  # valid job among them is done.
  start_redis
  gen in/a.png 256 128 6
  S="pixflow:{$Q}:jobs"
  good='{"v":1,"id":"ok","type":"reproject","argv":["reproject","'$WORK'/in/a.png","-o","'$WORK'/okout","--views","1:90:16x16"],"attempt":0,"submitted_ms":1}'
  rcli XADD "$S" '*' job '{"v":1,"id":"broken",' >/dev/null
  rcli XADD "$S" '*' job '{"v":1,"id":"t1","type":"rm","argv":["rm","-rf","/"],"attempt":0,"submitted_ms":1}' >/dev/null
  rcli XADD "$S" '*' job '{"v":1,"id":"t2","type":"reproject","attempt":0,"submitted_ms":1}' >/dev/null
  rcli XADD "$S" '*' job '{"v":1,"id":"t3","type":"reproject","argv":["reproject","in/../../etc/shadow","-o","x"],"attempt":0,"submitted_ms":1}' >/dev/null
  rcli XADD "$S" '*' job '{"v":1,"id":"t4","type":"reproject","argv":["reproject","/etc/passwd","-o","x"],"attempt":0,"submitted_ms":1}' >/dev/null
  rcli XADD "$S" '*' job '{"v":9,"id":"t5","type":"reproject","argv":["reproject","a"],"attempt":0,"submitted_ms":1}' >/dev/null
  rcli XADD "$S" '*' job '{"v":1,"id":"t6","type":"reproject","argv":["reproject","--output=../x"],"attempt":0,"submitted_ms":1}' >/dev/null
  rcli XADD "$S" '*' payload nothing >/dev/null
  rcli XADD "$S" '*' job "$good" >/dev/null
  worker w1 --exit-when-empty
  wait_worker "$WPID" || fail "worker exit status $?"
  [ -s okout/a_view00.jpg ] || fail "the valid job among the malformed ones was not done"
  [ "$(status_field dead)" = 8 ] || fail "expected 8 dead letters, got $(status_field dead)"
  q dead >dead.txt
  for want in "byte 21: expected a string key" \
              "unknown job type 'rm'" \
              "field 'argv' (the command line) is missing" \
              "'..' in a path is not allowed" \
              "absolute path outside the worker's root" \
              "schema version 9 is newer" \
              "'--output=../x': '..' in a path" \
              "stream entry has no 'job' field"; do
    grep -qF -- "$want" dead.txt || fail "dead letters lack '$want': $(cat dead.txt)"
  done
  [ "$(json_num dead w1.json)" = 8 ] || fail "worker dead count: $(cat w1.json)"
  ;;
sigterm)
  # SIGTERM: a running job that ends within --grace is finished and recorded;
  # one that does not is handed back to the queue (not lost, not dead) and the
  # worker exits 0 promptly.
  start_redis
  gen in/a.png 256 128 7
  mkfifo in/hang.png
  q add --id quick -- reproject "$WORK/in/a.png" -o "$WORK/qout" --views 1:90:16x16 >/dev/null
  worker w1 --grace 20s
  W1=$WPID
  wait_for 30 "the quick job's process" pgrep -P "$W1" -x pixflow >/dev/null
  kill -TERM "$W1"
  wait_worker "$W1" || fail "worker w1 exit status $?"
  [ "$(status_field done)" = 1 ] || fail "the job running at SIGTERM was not finished: $(q status)"
  q add --id stuck -- reproject "$WORK/in/hang.png" -o "$WORK/sout" --views 1 >/dev/null
  worker w2 --grace 300ms
  W2=$WPID
  wait_for 30 "the stuck job's process" pgrep -P "$W2" -x pixflow >/dev/null
  t0=$SECONDS
  kill -TERM "$W2"
  wait_worker "$W2" || fail "worker w2 exit status $?"
  [ $((SECONDS - t0)) -le 8 ] || fail "the worker took $((SECONDS - t0)) s to hand back and exit"
  [ "$(json_num handed_back w2.json)" = 1 ] || fail "handed_back: $(cat w2.json)"
  [ "$(status_field waiting)" = 1 ] && [ "$(status_field dead)" = 0 ] && [ "$(status_field running)" = 0 ] || fail "after hand-back: $(q status)"
  grep -q "handed back" w2.log || fail "hand-back not logged"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac

[ "$failures" = 0 ] || { echo "$failures check(s) failed in case $case_name" >&2; exit 1; }
echo "PASS $case_name"
