#!/usr/bin/env bash
# The `pixflow reproject` batch job, end to end: N generated 7680x3840 JPEG
# equirects -> 8 views of 1920x1080 each (JPEG q90), as the reproject issue
# specifies. Prints images/s and where the time goes (per-stage busy time).
#
#   bench/bench_reproject_job.sh DIR [N] [options] [-- extra pixflow reproject args]
#     DIR                 input folder: eq_NNNN.jpg are generated there when missing
#                         (reused by later runs)
#     N                   images (default 240)
#     --build DIR         build directory with pixflow and tests/reproject_cli_ref
#                         (default: build)
#     --device SPEC       cpu, cuda, cuda:N (default: $PIXFLOW_DEVICE or auto)
#     --out DIR           output folder (default DIR.out; emptied first, removed after
#                         unless --keep)
#     --keep              keep the outputs
#     --json FILE         also keep the command's JSON summary in FILE
#     --cube SIZE         a cube map of six SIZE x SIZE faces instead of the 8 views
#     --codec C           auto (default), cpu or gpu (nvJPEG decode + encode on CUDA)
#
# Inputs: 8 distinct synthetic images (smooth colour fields, edges and mild
# noise, ~ the JPEG size of a photo) are encoded by tests/reproject_cli_ref,
# or by ffmpeg's testsrc2 when that program is missing; the N inputs are
# copies of those 8 with a JPEG comment (COM segment) carrying the file
# number, so every file differs but decoding costs the same as for the base
# image. The inputs are in the page cache when the job starts (just written
# or read by the previous run): this measures the pipeline, not the disk.
set -euo pipefail

usage() { sed -n '2,27p' "$0"; exit "${1:-0}"; }
[ $# -ge 1 ] || usage 2
case "$1" in -h|--help) usage 0 ;; esac
DIR=$1
shift
N=240
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  N=$1
  shift
fi
BUILD=build
DEVICE=${PIXFLOW_DEVICE:-auto}
OUT=
KEEP=0
JSON_COPY=
CUBE=
CODEC=auto
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=${2:?--build DIR}; shift ;;
    --device) DEVICE=${2:?--device SPEC}; shift ;;
    --out) OUT=${2:?--out DIR}; shift ;;
    --keep) KEEP=1 ;;
    --json) JSON_COPY=${2:?--json FILE}; shift ;;
    --cube) CUBE=${2:?--cube SIZE}; shift ;;
    --codec) CODEC=${2:?--codec C}; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) echo "bench_reproject_job: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ "$N" -ge 1 ] || { echo "bench_reproject_job: N must be >= 1" >&2; exit 2; }
OUT=${OUT:-${DIR%/}.out}
PIXFLOW=${PIXFLOW:-$BUILD/pixflow}
REF=${REF:-$BUILD/tests/reproject_cli_ref}
[ -x "$PIXFLOW" ] || { echo "bench_reproject_job: $PIXFLOW not found (build it or set PIXFLOW)" >&2; exit 1; }

W=7680
H=3840
BASES=8
mkdir -p "$DIR"

# Inputs ------------------------------------------------------------------------------------
have=0
for ((i = 0; i < N; i++)); do
  [ -s "$(printf '%s/eq_%04d.jpg' "$DIR" "$i")" ] || break
  have=$((i + 1))
done
if [ "$have" -lt "$N" ]; then
  base_dir=$DIR/.base
  mkdir -p "$base_dir"
  t0=$(date +%s.%N)
  jobs=$(nproc 2>/dev/null || echo 4)
  if [ -x "$REF" ]; then
    gen_base() { "$REF" gen "$base_dir/base_$1.jpg" "$W" "$H" "$1" 90 >/dev/null; }
  elif command -v ffmpeg >/dev/null 2>&1; then
    gen_base() {
      ffmpeg -v error -y -f lavfi -i "testsrc2=size=${W}x${H}:rate=25" -ss "$1" -frames:v 1 \
        -q:v 2 "$base_dir/base_$1.jpg"
    }
  else
    echo "bench_reproject_job: need $REF (build the tests) or ffmpeg to make the inputs" >&2
    exit 1
  fi
  running=0
  for ((b = 0; b < BASES; b++)); do
    [ -s "$base_dir/base_$b.jpg" ] && continue
    gen_base "$b" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  for ((i = have; i < N; i++)); do
    b=$base_dir/base_$((i % BASES)).jpg
    # SOI, then a COM segment (length 10: "pf" + 6 digits), then the rest.
    { head -c 2 "$b"; printf '\377\376\000\012pf%06d' "$i"; tail -c +3 "$b"; } \
      >"$(printf '%s/eq_%04d.jpg' "$DIR" "$i")"
  done
  t1=$(date +%s.%N)
  echo "generated $((N - have)) inputs in $DIR ($(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s)"
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for ((i = 0; i < N; i++)); do printf '%s/eq_%04d.jpg\n' "$DIR" "$i"; done >"$list"
bytes=$(xargs cat <"$list" | wc -c) # also brings the inputs into the page cache

# Run -----------------------------------------------------------------------------------------
rm -rf "$OUT"
json=$(mktemp)
trap 'rm -f "$list" "$json"' EXIT
outputs=(--views 8:90:1920x1080)
what="8 views 1920x1080"
if [ -n "$CUBE" ]; then
  outputs=(--cubemap "$CUBE")
  what="cube map 6 x ${CUBE}x${CUBE}"
fi
echo "pixflow reproject: $N x ${W}x${H} JPEG ($((bytes / N / 1024)) KiB each) -> $what JPEG q90, device $DEVICE, codec $CODEC"
status=0
"$PIXFLOW" reproject --list "$list" -o "$OUT" "${outputs[@]}" --device "$DEVICE" --codec "$CODEC" \
  --json --quiet ${EXTRA[@]+"${EXTRA[@]}"} >"$json" || status=$?
[ -n "$JSON_COPY" ] && cp "$json" "$JSON_COPY"
if [ "$status" != 0 ]; then
  echo "bench_reproject_job: pixflow reproject exited with $status" >&2
  cat "$json" >&2
  exit 1
fi
files=$(find "$OUT" -type f -name '*.jpg' | wc -l)
[ "$KEEP" = 1 ] || rm -rf "$OUT"

# The JSON writer puts one key per line; awk keeps track of the stage object.
awk -v files="$files" '
  function val(line) { sub(/^[^:]*: */, "", line); sub(/,$/, "", line); gsub(/"/, "", line); return line }
  /"stages": \{/ { in_st = 1; next }
  in_st && /^    "[a-z]+": \{/ { st = $1; gsub(/[":]/, "", st); order[++n] = st; next }
  in_st && /^  \}/ { in_st = 0 }
  in_st && /"busy_s"/ { busy[st] = val($0) }
  in_st && /"ms_per_image"/ { per[st] = val($0) }
  in_st && /"threads"/ { thr[st] = val($0) }
  in_st && /"utilisation"/ { util[st] = val($0) }
  !in_st && /"device":/ { dev = val($0) }
  !in_st && /"device_name":/ { devname = val($0) }
  !in_st && /"images":/ { images = val($0) }
  !in_st && /"failures":/ { failures = val($0) }
  !in_st && /"elapsed_s":/ { elapsed = val($0) }
  !in_st && /"images_per_s":/ { ips = val($0) }
  /"p50":/ { p50 = val($0) }
  /"p99":/ { p99 = val($0) }
  /"decoders":/ { dec = val($0) }
  /"encoders":/ { enc = val($0) }
  /"host_bytes":/ { host = val($0) }
  /"device_bytes":/ { devb = val($0) }
  /"decoded_hardware":/ { dhw = val($0) }
  /"decoded_gpu":/ { dgpu = val($0) }
  /"decoded_cpu":/ { dcpu = val($0) }
  /"encoded_gpu":/ { egpu = val($0) }
  /"encoded_cpu":/ { ecpu = val($0) }
  END {
    printf "device        %s (%s)\n", dev, devname
    printf "images        %s in %.2f s, %d files, %s failures\n", images, elapsed, files, failures
    printf "images/s      %.2f\n", ips
    printf "latency       p50 %.0f ms, p99 %.0f ms per image\n", p50, p99
    printf "threads       %s decoders, %s encoders; memory: host %.0f MiB, device %.0f MiB\n", dec, enc, host / 1048576, devb / 1048576
    printf "codecs        decoded %d hardware, %d gpu, %d cpu; encoded %d gpu, %d cpu files\n", dhw, dgpu, dcpu, egpu, ecpu
    printf "%-10s %10s %12s %8s %7s\n", "stage", "busy s", "ms/image", "threads", "util"
    for (i = 1; i <= n; i++) {
      s = order[i]
      if (busy[s] + 0 == 0 && (s == "upload" || s == "download")) continue
      printf "%-10s %10.2f %12.2f %8s %6.0f%%\n", s, busy[s], per[s], thr[s], util[s] * 100
    }
  }' "$json"
