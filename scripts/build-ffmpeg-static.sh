#!/usr/bin/env bash
# A small static FFmpeg for the GPU machine, which has none of FFmpeg's
# libraries (their dependency closure is ~170 MB). Built here from Debian's
# source package (the same 5.1.x as the -dev packages this machine builds
# against), position-independent so that libpixflow.so can take it in, with
# no external codec libraries: demuxers and muxers of the common containers,
# parsers, the bitstream filters NVDEC feeding needs, network protocols and
# FFmpeg's own decoders/encoders. Installs into .ffmpeg-static/ (git-ignored;
# headers, lib/*.a and lib/pkgconfig), which scripts/gpu-prep carries and
# scripts/gpu-check passes to CMake (-DPF_FFMPEG_STATIC_DIR=...).
#
#   scripts/build-ffmpeg-static.sh [--force] [--jobs N]
#
# Needs: apt-get access to Debian's source packages (a deb-src entry is set up
# in a private directory, nothing in /etc changes), gcc, make, nasm (x86 SIMD;
# installed when missing). Takes ~10 minutes on 2 cores; the result is ~12 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=$root/.ffmpeg-static
work=$root/.ffmpeg-build
force=0
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "build-ffmpeg-static: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$force" -eq 0 ] && [ -f "$prefix/lib/libavformat.a" ]; then
  echo "build-ffmpeg-static: $prefix is there (--force rebuilds)"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
for t in nasm:nasm make:make; do
  command -v "${t%%:*}" >/dev/null || $SUDO apt-get install -y -qq --no-install-recommends "${t#*:}"
done

# Debian's source package, through a private sources directory.
mkdir -p "$work/apt/lists/partial" "$work/apt/parts" "$work/src"
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
cat >"$work/apt/parts/deb-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o "Dir::Etc::SourceParts=$work/apt/parts" -o Dir::Etc::SourceList=/dev/null
          -o "Dir::State::Lists=$work/apt/lists")
if ! ls "$work"/src/ffmpeg_*.orig.tar.xz >/dev/null 2>&1; then
  apt-get "${apt_opts[@]}" update -qq
  # apt checks the files against the signed Sources index it just fetched.
  (cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only -qq ffmpeg)
fi
tarball=$(ls "$work"/src/ffmpeg_*.orig.tar.xz | head -1)
rm -rf "$work/ffmpeg"
mkdir -p "$work/ffmpeg"
tar -xJf "$tarball" -C "$work/ffmpeg" --strip-components=1

# Components. Containers: what cameras, phones and encoders write, and what
# network streams carry. Codecs: video that NVDEC takes or the CPU path meets,
# audio decoders for probing (passthrough copies packets, never decodes).
demuxers=mov,matroska,avi,mpegts,mpegtsraw,flv,h264,hevc,mpegvideo,m4v,ivf,yuv4mpegpipe,rawvideo,mjpeg,image2,rtsp,rtp,sdp,aac,mp3,wav,ogg,hls,concat
muxers=mp4,mov,matroska,webm,mpegts,avi,flv,h264,hevc,rtsp,rtp,rtp_mpegts,yuv4mpegpipe,rawvideo,mjpeg,null,ivf,adts,wav
decoders=h264,hevc,mpeg4,mpeg2video,mpeg1video,mjpeg,vp8,vp9,av1,rawvideo,png,ffv1,aac,aac_latm,mp3,mp2,opus,vorbis,flac,ac3,pcm_s16le,pcm_s16be,pcm_f32le,pcm_u8,pcm_mulaw,pcm_alaw
encoders=mpeg4,mjpeg,rawvideo,ffv1,png,qtrle,aac,pcm_s16le
parsers=h264,hevc,mpeg4video,mpegvideo,mjpeg,vp8,vp9,av1,aac,aac_latm,mpegaudio,opus,vorbis,flac,ac3,png
bsfs=h264_mp4toannexb,hevc_mp4toannexb,extract_extradata,h264_metadata,hevc_metadata,vp9_superframe,vp9_superframe_split,aac_adtstoasc,dump_extradata,null
protocols=file,pipe,fd,tcp,udp,rtp,http,hls,crypto,data,concat,subfile

cd "$work/ffmpeg"
./configure --prefix="$prefix" --enable-static --disable-shared --enable-pic \
  --disable-autodetect --disable-everything --disable-programs --disable-doc \
  --disable-avdevice --disable-avfilter --disable-postproc --enable-swscale \
  --enable-swresample --enable-avformat --enable-avcodec --enable-network --enable-zlib \
  --enable-demuxer=$demuxers --enable-muxer=$muxers --enable-decoder=$decoders \
  --enable-encoder=$encoders --enable-parser=$parsers --enable-bsf=$bsfs \
  --enable-protocol=$protocols --disable-debug --extra-cflags="-O2" >"$work/configure.log" 2>&1 ||
  { tail -20 "$work/configure.log"; exit 1; }
make -j "$jobs" >"$work/make.log" 2>&1 || { grep -E 'error' "$work/make.log" | head -20; exit 1; }
rm -rf "$prefix"
make install >>"$work/make.log" 2>&1
echo "build-ffmpeg-static: $(du -sh "$prefix" | cut -f1) in $prefix ($(basename "$tarball" .orig.tar.xz))"
