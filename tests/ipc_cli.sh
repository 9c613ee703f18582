#!/usr/bin/env bash
# CLI tests of examples/ipc_producer.yaml and examples/ipc_consumer.yaml: two
# `pixflow run` processes exchanging frames through ipc.sink / ipc.source
# (registered by tests/ipc_cli.cmake).
#
#   ipc_cli.sh CASE PIXFLOW WORKDIR SRC
#
# CASE:
#   pair             producer first, then the consumer, --device cpu --json:
#                    both exit 0, each --json reports 300 items, the consumer
#                    logs 300 frames received (memfd; on CUDA: VMM or legacy)
#   consumer_killed  two consumers; one is killed (-9) mid-stream: the
#                    producer still exits 0 and the other consumer gets all
#                    300 frames
#   producer_killed  the producer is killed (-9) mid-stream: the consumer
#                    exits 1 within 5 s, saying the producer went away
#                    without an end of stream
# PF_IPC_DEVICE (default cpu) is the --device of every run (cuda for
# cli_ipc_pair_cuda). Both examples use the socket ipc-demo/frames.sock
# under the current folder.
# Exit 0 pass, 1 fail (the failing check is printed), 77 skip.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
WORK=${3:?work directory}
SRC=${4:?source tree}
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
DEVICE=${PF_IPC_DEVICE:-cpu}
if [ "$DEVICE" != cpu ] && ! "$PIXFLOW" info --device "$DEVICE" >/dev/null 2>&1; then
    echo "SKIP: no device $DEVICE"; exit 77
fi
PROD=$SRC/examples/ipc_producer.yaml
CONS=$SRC/examples/ipc_consumer.yaml
# Only this shell's jobs still running (a reaped pid may belong to another
# process by now).
cleanup() { for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for f in *.err; do [ -f "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
    exit 1
}

printf 'stages:\n  - {name: s, type: source.synthetic, count: 1}\n  - {name: n, type: sink.null}\n'\
'edges:\n  - {from: s, to: n}\n' > probe.yaml
if ! "$PIXFLOW" run probe.yaml --device cpu --quiet >probe.out 2>probe.err; then
    grep -q "YAML" probe.err && { echo "SKIP: this build has no YAML support"; exit 77; }
    fail "a trivial pipeline does not run: $(cat probe.err)"
fi

# Waits up to $2 seconds for pid $1; sets rc to its exit status (124: still
# running, then killed).
wait_for() {
    local pid=$1 limit=$2 t=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.05; t=$((t + 1))
        if [ "$t" -ge $((limit * 20)) ]; then kill -9 "$pid" 2>/dev/null; rc=124; return; fi
    done
    wait "$pid"; rc=$?
}

# Waits until the consumer's progress shows it attached (its log line).
wait_attached() {
    for _ in $(seq 1 200); do
        [ -S ipc-demo/frames.sock ] && grep -q "items" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

case $case_name in
pair)
    "$PIXFLOW" run "$PROD" --device $DEVICE --json >prod.json 2>prod.err & pp=$!
    "$PIXFLOW" run "$CONS" --device $DEVICE --json >cons.json 2>cons.err & cp=$!
    wait_for $cp 30; [ "$rc" = 0 ] || fail "consumer exit $rc"
    wait_for $pp 30; [ "$rc" = 0 ] || fail "producer exit $rc"
    grep -q '"items_completed":300' prod.json || fail "producer json: $(head -c 200 prod.json)"
    grep -q '"items_completed":300' cons.json || fail "consumer json: $(head -c 200 cons.json)"
    grep -Eq "(memfd|cuda-vmm|cuda-legacy), 1280x720 nv12, policy block: 300 frames received" \
        cons.err ||
        fail "consumer report"
    grep -q "300 frames published, 300 sent" prod.err || fail "producer report"
    [ ! -e ipc-demo ] || fail "ipc-demo left behind"
    ;;
consumer_killed)
    "$PIXFLOW" run "$PROD" --device $DEVICE --json >prod.json 2>prod.err & pp=$!
    "$PIXFLOW" run "$CONS" --device $DEVICE --json >keep.json 2>keep.err & k=$!
    "$PIXFLOW" run "$CONS" --device $DEVICE --json >victim.json 2>victim.err & v=$!
    wait_attached victim.err || fail "the victim never attached"
    sleep 0.3
    kill -9 $v
    wait_for $pp 30; [ "$rc" = 0 ] || fail "producer exit $rc after a consumer was killed"
    wait_for $k 30; [ "$rc" = 0 ] || fail "surviving consumer exit $rc"
    # The producer starts with its first consumer: the survivor may have
    # attached a little later. Every frame is either received or counted as
    # published before it attached, and no block consumer skips any.
    line=$(grep -o "[0-9]* frames received, 0 skipped for newer ones, [0-9]* published" keep.err)
    got=$(echo "$line" | cut -d' ' -f1); missed=$(echo "$line" | awk '{print $9}')
    [ -n "$got" ] && [ $((got + missed)) = 300 ] && [ "$got" -ge 200 ] ||
        fail "survivor: '$line'"
    grep -q "\"items_completed\":$got," keep.json || fail "survivor json: $(head -c 200 keep.json)"
    grep -q "1 left\|slots reclaimed" prod.err || fail "producer report"
    ;;
producer_killed)
    "$PIXFLOW" run "$PROD" --device $DEVICE --count 100000 --json >prod.json 2>prod.err & pp=$!
    "$PIXFLOW" run "$CONS" --device $DEVICE --json >cons.json 2>cons.err & cp=$!
    wait_attached cons.err || fail "the consumer never attached"
    sleep 0.3
    kill -9 $pp
    wait_for $cp 5; [ "$rc" = 1 ] || fail "consumer exit $rc (expected 1 within 5 s)"
    grep -q "without an end of stream" cons.err || fail "consumer message"
    rm -rf ipc-demo
    ;;
*) echo "unknown case $case_name"; exit 1 ;;
esac
echo "PASS $case_name"
