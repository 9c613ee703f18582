#!/usr/bin/env bash
# CLI tests of `pixflow reproject` (registered by tests/reproject_cli.cmake).
#
#   reproject_cli.sh CASE PIXFLOW REF WORKDIR
#
# CASE: exact views cubemap bad_inputs outdir usage json video list.
# REF is tests/reproject_cli_ref.c: it generates inputs and recomputes views
# with the library (pf_ops_equirect_to_views / _to_cubemap on the CPU) from
# the same decoded input, comparing with the CLI's PNG byte for byte.
# Exit 0 pass, 1 fail (the failing check is printed), 77 skipped.
set -u
case_name=${1:?case}
PIXFLOW=${2:?pixflow binary}
REF=${3:?reference binary}
WORK=${4:?work directory}
export PIXFLOW_DEVICE=${PIXFLOW_DEVICE:-cpu}
export PIXFLOW_LOG=error

rm -rf "$WORK"
mkdir -p "$WORK/in"
cd "$WORK" || exit 1

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
check() { # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  "$@" || fail "$what"
}
expect_status() { # expect_status WANT DESCRIPTION COMMAND...: stdout/stderr -> out.txt/err.txt
  local want=$1 what=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$what: exit status $got, expected $want"
    sed 's/^/  stderr: /' err.txt >&2
  fi
}
err_has() { # err_has TEXT DESCRIPTION: err.txt mentions TEXT
  grep -qF -- "$1" err.txt || { fail "$2: stderr does not mention '$1'"; sed 's/^/  stderr: /' err.txt >&2; }
}
count_files() { find "$1" -maxdepth 1 -type f | wc -l | tr -d ' '; }

gen() { "$REF" gen "$@" >/dev/null || { echo "cannot generate $1" >&2; exit 1; }; }

case "$case_name" in
exact)
  gen in/a.png 512 256 1
  gen in/b.jpg 512 256 2 85
  V0="30,10,5,90,96x64"
  V1="-120,-30,0,60,64x80"
  V2="179.5,85,-40,120,33x17"
  expect_status 0 "two inputs, three views" \
    "$PIXFLOW" reproject in/a.png in/b.jpg -o out --view "$V0" --view "$V1" --view "$V2" \
      --format png --quiet
  for stem in a b; do
    src=in/$stem.png
    [ "$stem" = b ] && src=in/b.jpg
    check "$stem view00 exact" "$REF" check-view "$src" "out/${stem}_view00.png" "$V0"
    check "$stem view01 exact" "$REF" check-view "$src" "out/${stem}_view01.png" "$V1"
    check "$stem view02 exact" "$REF" check-view "$src" "out/${stem}_view02.png" "$V2"
  done
  [ "$(count_files out)" = 6 ] || fail "expected exactly 6 files in out/, got $(ls out)"
  # Nearest sampling and a batch bigger than the ring and the thread counts.
  for i in 0 1 2 3 4 5 6 7 8 9; do gen "in/n$i.png" 512 256 $((10 + i)); done
  expect_status 0 "nearest, 10 inputs, small ring" \
    "$PIXFLOW" reproject in/n?.png -o near --view "$V1" --interp nearest --format png \
      --decoders 3 --encoders 2 --ring 2 --quiet
  for i in 0 1 2 3 4 5 6 7 8 9; do
    check "n$i nearest exact" "$REF" check-view "in/n$i.png" "near/n${i}_view00.png" "$V1" nearest
  done
  ;;
views)
  gen in/p.png 512 256 3
  expect_status 0 "--views 4:75:80x60" \
    "$PIXFLOW" reproject in/p.png -o out --views 4:75:80x60 --format png --quiet
  k=0
  for yaw in 0 90 180 270; do
    check "--views view0$k (yaw $yaw) exact" \
      "$REF" check-view in/p.png "out/p_view0$k.png" "$yaw,0,0,75,80x60"
    k=$((k + 1))
  done
  [ "$(count_files out)" = 4 ] || fail "--views 4: expected 4 files, got $(ls out)"
  expect_status 0 "--views 3 (defaults: fov 90, 1024x1024)" \
    "$PIXFLOW" reproject in/p.png -o def --views 3 --format png --quiet
  [ "$("$REF" size def/p_view02.png)" = 1024x1024 ] || fail "--views 3: default size"
  check "--views 3 yaw 120 exact" "$REF" check-view in/p.png def/p_view01.png "120,0,0,90,1024x1024"
  # --view and --views together: --view first, then the ring.
  expect_status 0 "--view + --views" \
    "$PIXFLOW" reproject in/p.png -o mix --view 0,90,0,100,40x40 --views 2:60:50x30 --format png --quiet
  check "mix view00" "$REF" check-view in/p.png mix/p_view00.png "0,90,0,100,40x40"
  check "mix view02" "$REF" check-view in/p.png mix/p_view02.png "180,0,0,60,50x30"
  ;;
cubemap)
  gen in/c.png 512 256 4
  expect_status 0 "--cubemap 48" "$PIXFLOW" reproject in/c.png -o faces --cubemap 48 --format png --quiet
  f=0
  for face in px nx py ny pz nz; do
    check "face $face exact" "$REF" check-face in/c.png "faces/c_$face.png" 48 $f
    f=$((f + 1))
  done
  [ "$(count_files faces)" = 6 ] || fail "--cubemap: expected 6 files, got $(ls faces)"
  expect_status 0 "--cube-layout 3x2" \
    "$PIXFLOW" reproject in/c.png -o m32 --cubemap 40 --cube-layout 3x2 --format png --quiet
  check "3x2 mosaic exact" "$REF" check-cube in/c.png m32/c_cube.png 40 3x2
  expect_status 0 "--cube-layout 1x6" \
    "$PIXFLOW" reproject in/c.png -o m16 --cubemap 40 --cube-layout 1x6 --format png --quiet
  check "1x6 mosaic exact" "$REF" check-cube in/c.png m16/c_cube.png 40 1x6
  [ "$("$REF" size m16/c_cube.png)" = 40x240 ] || fail "1x6 size"
  ;;
bad_inputs)
  gen in/good1.jpg 512 256 5
  gen in/good2.png 512 256 6
  head -c 3000 in/good1.jpg >in/truncated.jpg
  echo "not an image at all" >in/text.jpg
  "$REF" gen-zero-png in/zero.png || exit 1
  : >in/empty.png
  expected_bad="in/missing.jpg in/truncated.jpg in/text.jpg in/zero.png in/empty.png"
  nbad=5
  if command -v convert >/dev/null 2>&1 &&
     convert in/good1.jpg -colorspace CMYK in/cmyk.jpg 2>/dev/null; then
    expected_bad="$expected_bad in/cmyk.jpg"
    nbad=6
  fi
  inputs="in/good1.jpg in/missing.jpg in/truncated.jpg in/text.jpg in/zero.png in/empty.png in/good2.png"
  [ $nbad = 6 ] && inputs="$inputs in/cmyk.jpg"
  # shellcheck disable=SC2086
  expect_status 1 "batch with bad files" \
    "$PIXFLOW" reproject $inputs -o out --view 0,0,0,90,64x48 --format png --json
  for f in $expected_bad; do err_has "$f" "bad file named"; done
  check "good1 still done" "$REF" check-view in/good1.jpg out/good1_view00.png "0,0,0,90,64x48"
  check "good2 still done" "$REF" check-view in/good2.png out/good2_view00.png "0,0,0,90,64x48"
  grep -q '"images": 2' out.txt || fail "json: images should be 2: $(cat out.txt)"
  grep -q "\"failures\": $nbad" out.txt || fail "json: failures should be $nbad"
  [ "$(count_files out)" = 2 ] || fail "only the good files have outputs: $(ls out)"
  # A glob that matches nothing and a directory: the rest completes, status 1.
  mkdir -p in/dir && cp in/good2.png in/dir/d1.png && cp in/good1.jpg in/dir/d2.jpg
  expect_status 1 "glob without match" \
    "$PIXFLOW" reproject 'in/nothing*.png' in/dir -o out2 --view 0,0,0,90,64x48 --quiet
  err_has "in/nothing*.png" "empty glob named"
  [ -f out2/d1_view00.jpg ] && [ -f out2/d2_view00.jpg ] || fail "directory inputs done: $(ls out2)"
  # Two inputs with the same stem would overwrite each other: the second fails.
  mkdir -p in/other && cp in/good2.png in/other/good1.png
  expect_status 1 "same output names" \
    "$PIXFLOW" reproject in/good1.jpg in/other/good1.png -o out3 --view 0,0,0,90,64x48 --quiet
  err_has "in/other/good1.png" "colliding input named"
  ;;
outdir)
  gen in/a.png 512 256 7
  : >in/afile
  expect_status 1 "output under a regular file" \
    "$PIXFLOW" reproject in/a.png -o in/afile/sub --view 0,0,0,90,32x32 --quiet
  err_has "in/afile" "output directory named"
  expect_status 0 "nested output directory created" \
    "$PIXFLOW" reproject in/a.png -o new/deeper/dir --view 0,0,0,90,32x32 --quiet
  [ -f new/deeper/dir/a_view00.jpg ] || fail "nested output written"
  if [ "$(id -u)" != 0 ]; then
    mkdir -p ro && chmod 555 ro
    expect_status 1 "read-only output directory" \
      "$PIXFLOW" reproject in/a.png -o ro --view 0,0,0,90,32x32 --quiet
    err_has "ro" "read-only directory named"
    err_has "not writable" "read-only directory reason"
    chmod 755 ro
  fi
  ;;
usage)
  gen in/a.png 64 32 8
  expect_status 0 "--help" "$PIXFLOW" reproject --help
  grep -q "STEM_viewNN" out.txt || fail "--help documents the names"
  expect_status 2 "nothing to produce" "$PIXFLOW" reproject in/a.png -o out
  expect_status 2 "no -o" "$PIXFLOW" reproject in/a.png --views 2
  expect_status 2 "no input" "$PIXFLOW" reproject -o out --views 2
  expect_status 2 "bad --view" "$PIXFLOW" reproject in/a.png -o out --view 0,0,0,190,10x10
  err_has "fov" "bad fov named"
  expect_status 2 "bad --view size" "$PIXFLOW" reproject in/a.png -o out --view 0,0,0,90,10x0
  expect_status 2 "too few fields" "$PIXFLOW" reproject in/a.png -o out --view 0,0,90,10x10
  expect_status 2 "bad --views" "$PIXFLOW" reproject in/a.png -o out --views 65
  expect_status 2 "views and cubemap" "$PIXFLOW" reproject in/a.png -o out --views 2 --cubemap 8
  expect_status 2 "bad format" "$PIXFLOW" reproject in/a.png -o out --views 2 --format gif
  expect_status 2 "bad quality" "$PIXFLOW" reproject in/a.png -o out --views 2 --quality 0
  expect_status 2 "bad device spec" "$PIXFLOW" reproject in/a.png -o out --views 2 --device gpu7
  expect_status 2 "unknown option" "$PIXFLOW" reproject in/a.png -o out --views 2 --bogus
  [ ! -e out ] || fail "usage errors must not create the output directory"
  ;;
json)
  gen in/j.jpg 512 256 9
  expect_status 0 "--json, JPEG output" \
    "$PIXFLOW" reproject in/j.jpg -o out --views 2:90:64x32 --quality 75 --json
  for key in '"images": 1' '"failures": 0' '"files_written": 2' '"images_per_s"' '"p50"' \
             '"p99"' '"decode"' '"kernel"' '"encode"' '"write"' '"device": "cpu"'; do
    grep -qF -- "$key" out.txt || fail "json lacks $key"
  done
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open("out.txt"))' || fail "json does not parse"
  fi
  [ "$("$REF" size out/j_view01.jpg)" = 64x32 ] || fail "jpeg output size"
  expect_status 0 "summary table" "$PIXFLOW" reproject in/j.jpg -o out --views 1 --quiet
  for word in "images/s" p50 p99 failures decode kernel encode write device; do
    grep -qF "$word" out.txt || fail "summary lacks '$word'"
  done
  expect_status 0 "--trace" "$PIXFLOW" reproject in/j.jpg -o out --views 2 --quiet --trace t.json
  grep -q '"traceEvents"' t.json || fail "trace file written"
  ;;
video)
  # Y4M is read by pixflow itself: no FFmpeg needed. 5 frames of 64x32 I420.
  {
    printf 'YUV4MPEG2 W64 H32 F25:1 C420jpeg\n'
    for _ in 1 2 3 4 5; do
      printf 'FRAME\n'
      head -c 3072 /dev/urandom
    done
  } >in/clip.y4m
  expect_status 0 "video, every 2nd frame" \
    "$PIXFLOW" reproject in/clip.y4m -o out --views 2:90:32x32 --every 2 --format png --quiet
  for f in 000000 000002 000004; do
    for v in 00 01; do
      [ -f "out/clip_f${f}_view$v.png" ] || fail "video output clip_f${f}_view$v.png"
    done
  done
  [ "$(count_files out)" = 6 ] || fail "video: expected 6 files, got $(ls out)"
  # Cut inside frame 1: frame 0 is whole and kept, the cut is said (as ffmpeg keeps
  # what decodes).
  head -c 5000 in/clip.y4m >in/cut.y4m
  expect_status 0 "truncated video" env PIXFLOW_LOG=warn \
    "$PIXFLOW" reproject in/cut.y4m -o out2 --views 1:90:32x32 --format png --quiet
  err_has "in/cut.y4m: the input is truncated: frame 1" "truncated video named"
  [ "$(count_files out2)" = 1 ] || fail "truncated video: the whole frame kept: $(ls out2)"
  # An unsupported pixel format (10-bit Y4M) fails alone; the good clip completes.
  { printf 'YUV4MPEG2 W64 H32 F25:1 C420p10\nFRAME\n'; head -c 6144 /dev/urandom; } >in/deep.y4m
  expect_status 1 "10-bit video" \
    "$PIXFLOW" reproject in/deep.y4m in/clip.y4m -o out3 --views 1:90:32x32 --format png --quiet
  err_has "in/deep.y4m" "unsupported video named"
  [ "$(count_files out3)" = 5 ] || fail "the good clip still done: $(ls out3)"
  ;;
list)
  for i in 0 1 2; do gen "in/l$i.png" 128 64 $((20 + i)); done
  printf 'in/l0.png\n\nin/l1.png\nin/l2.png\n' >list.txt
  expect_status 0 "--list" "$PIXFLOW" reproject --list list.txt -o out --views 1:90:16x16 --quiet
  [ "$(count_files out)" = 3 ] || fail "--list: 3 outputs expected, got $(ls out)"
  expect_status 1 "--list missing" "$PIXFLOW" reproject --list nolist.txt -o out --views 1 --quiet
  err_has "nolist.txt" "missing list named"
  ;;
*)
  echo "reproject_cli.sh: unknown case '$case_name'" >&2
  exit 2
  ;;
esac

if [ "$failures" -gt 0 ]; then
  echo "$case_name: $failures check(s) failed" >&2
  exit 1
fi
echo "$case_name: ok"
exit 0
