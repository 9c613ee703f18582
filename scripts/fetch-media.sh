#!/usr/bin/env bash
# Sample media for tests, examples and benchmarks, into .data/ (git-ignored).
# Safe to run again: only what is missing is fetched or generated.
#
#   scripts/fetch-media.sh                 # samples from Debian packages
#   scripts/fetch-media.sh --bench [--equirect N] [--force]
#                                          # + generated inputs in .data/bench/
#
# Samples (SPEC "Data and models"), unpacked from the .deb files with
# dpkg-deb -x in a temporary folder, which is deleted afterwards:
#   python3-skimage: astronaut.png (512x512 RGB, public domain)
#   opencv-doc:      vtest.avi (768x576 pedestrians), Megamind.avi, messi5.jpg
# Bench inputs (need the ffmpeg program):
#   bench/vtest_1080p.mp4   1920x1080 H.264, 600 frames, from vtest.avi (looped)
#   bench/vtest_1080p.h264  the same as an Annex B elementary stream (NVDEC input)
#   bench/segment_1080p.h264  3000 frames (vtest looped 5 times), an IDR every 32
#                           frames so NVDEC decoders can split it: the segment benchmark
#   bench/segment_1080p.mp4   the same bitstream in MP4 at 30 fps (multi-stream benchmark)
#   bench/equirect/eq_NNNN.jpg  N (default 240) 7680x3840 JPEGs of a moving test
#                           pattern (ffmpeg's testsrc2), encoded by parallel ffmpeg runs
set -euo pipefail
cd "$(dirname "$0")/.."

bench=0
force=0
n_equirect=240
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench=1 ;;
    --equirect) shift; n_equirect="${1:?--equirect needs a count}" ;;
    --equirect=*) n_equirect="${1#*=}" ;;
    --force) force=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "fetch-media: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$n_equirect" in
  ''|*[!0-9]*) echo "fetch-media: --equirect '$n_equirect': expected a count" >&2; exit 2 ;;
esac

data=.data
mkdir -p "$data"

# name in .data : package : path suffix inside the package
SAMPLES=(
  "astronaut.png:python3-skimage:/skimage/data/astronaut.png"
  "vtest.avi:opencv-doc:/examples/data/vtest.avi"
  "Megamind.avi:opencv-doc:/examples/data/Megamind.avi"
  "messi5.jpg:opencv-doc:/examples/data/messi5.jpg"
)

need_pkgs=()
for s in "${SAMPLES[@]}"; do
  name=${s%%:*}; rest=${s#*:}; pkg=${rest%%:*}
  if [ "$force" = 1 ] || [ ! -s "$data/$name" ]; then
    case " ${need_pkgs[*]:-} " in *" $pkg "*) ;; *) need_pkgs+=("$pkg") ;; esac
  fi
done

if [ ${#need_pkgs[@]} -gt 0 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"   # apt's _apt user downloads into it (no "unsandboxed" warning)
  for pkg in "${need_pkgs[@]}"; do
    echo "fetch-media: downloading $pkg (apt-get download)"
    if ! (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null); then
      echo "fetch-media: apt-get download $pkg failed (run 'apt-get update'?)" >&2
      exit 1
    fi
    deb=$(ls "$tmp"/"${pkg}"_*.deb | head -n1)
    mkdir -p "$tmp/x-$pkg"
    dpkg-deb -x "$deb" "$tmp/x-$pkg"
    rm -f "$deb"
    for s in "${SAMPLES[@]}"; do
      name=${s%%:*}; rest=${s#*:}; p=${rest%%:*}; suffix=${rest#*:}
      [ "$p" = "$pkg" ] || continue
      src=$(find "$tmp/x-$pkg" -path "*$suffix" -type f | head -n1)
      if [ -z "$src" ]; then
        echo "fetch-media: $pkg has no file ending in $suffix" >&2
        exit 1
      fi
      cp "$src" "$data/$name.part" && mv "$data/$name.part" "$data/$name"
      echo "fetch-media: $data/$name"
    done
    rm -rf "$tmp/x-$pkg"
  done
fi

[ "$bench" = 1 ] || exit 0

command -v ffmpeg >/dev/null || { echo "fetch-media: --bench needs the ffmpeg program" >&2; exit 1; }
mkdir -p "$data/bench/equirect"
ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)

v="$data/bench/vtest_1080p.mp4"
if [ "$force" = 1 ] || [ ! -s "$v" ]; then
  echo "fetch-media: $v (1080p H.264, 600 frames)"
  "${ff[@]}" -stream_loop -1 -i "$data/vtest.avi" -frames:v 600 -vf scale=1920:1080 \
    -c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p -r 30 "$v.part.mp4"
  mv "$v.part.mp4" "$v"
fi
es="$data/bench/vtest_1080p.h264"
if [ "$force" = 1 ] || [ ! -s "$es" ]; then
  "${ff[@]}" -i "$v" -c:v copy -bsf:v h264_mp4toannexb -f h264 "$es.part"
  mv "$es.part" "$es"
  echo "fetch-media: $es"
fi
seg="$data/bench/segment_1080p.h264"
if [ "$force" = 1 ] || [ ! -s "$seg" ]; then
  "${ff[@]}" -stream_loop 4 -i "$v" -c:v libx264 -preset veryfast -crf 30 -g 32 -bf 2 \
    -pix_fmt yuv420p -f h264 "$seg.part"
  mv "$seg.part" "$seg"
  echo "fetch-media: $seg"
fi
# The same bitstream in MP4 (demuxed by FFmpeg, decoded by NVDEC): the
# multi-stream benchmark's input (bench/bench_multistream.sh).
segmp4="$data/bench/segment_1080p.mp4"
if [ "$force" = 1 ] || [ ! -s "$segmp4" ]; then
  "${ff[@]}" -r 30 -i "$seg" -c:v copy -f mp4 "$segmp4.part"
  mv "$segmp4.part" "$segmp4"
  echo "fetch-media: $segmp4"
fi

# Equirect JPEGs: only the missing indices, in a few parallel ffmpeg runs
# (each renders a contiguous range of testsrc2 frames, so every image differs).
have=$(find "$data/bench/equirect" -name 'eq_*.jpg' -size +0 | wc -l)
if [ "$force" = 1 ] || [ "$have" -lt "$n_equirect" ]; then
  jobs=$(nproc 2>/dev/null || echo 4)
  [ "$jobs" -gt 8 ] && jobs=8
  per=$(( (n_equirect + jobs - 1) / jobs ))
  echo "fetch-media: $n_equirect equirect 7680x3840 JPEGs in $data/bench/equirect ($jobs jobs)"
  pids=()
  for ((j = 0; j < jobs; j++)); do
    start=$(( j * per )); count=$per
    [ $(( start + count )) -gt "$n_equirect" ] && count=$(( n_equirect - start ))
    [ "$count" -gt 0 ] || continue
    "${ff[@]}" -f lavfi -i "testsrc2=size=7680x3840:rate=30" \
      -vf "trim=start_frame=$start:end_frame=$(( start + count )),setpts=PTS-STARTPTS" \
      -frames:v "$count" -q:v 3 -start_number "$start" \
      "$data/bench/equirect/eq_%04d.jpg" &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ "$rc" = 0 ] || { echo "fetch-media: equirect generation failed" >&2; exit 1; }
fi
echo "fetch-media: done ($data/bench)"
