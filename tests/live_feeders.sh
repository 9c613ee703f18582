# Shared by tests that start helper processes (ffmpeg feeders serving live
# streams on loopback, samplers): sourced, never run. Every process a test
# starts goes into `pids` and is killed by its pid when the test exits,
# however it exits.
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    pids=()
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# free_port SOCK_STREAM|SOCK_DGRAM: a free loopback port (bound, released).
free_port() {
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, getattr(socket, sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}

# wait_listening PORT: until a TCP socket listens on 127.0.0.1:PORT (read
# from /proc: a probe connection would take a feeder's only accept), at
# most 10 s.
wait_listening() {
    for _ in $(seq 100); do
        grep -qi "0100007F:$(printf '%04X' "$1") 00000000:0000 0A" /proc/net/tcp && return 0
        sleep 0.1
    done
    fail "no feeder listens on port $1"
}
