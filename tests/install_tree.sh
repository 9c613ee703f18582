#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then use the installed tree the
# way a user would, from outside the source and build trees:
#   - the layout: library, headers, CLI, pkg-config file, CMake package,
#     LICENSE and the models in share/pixflow/models;
#   - nothing installed names the build or source tree (the exported CMake
#     files, the .pc file, the CLI's RUNPATH, which is $ORIGIN-relative);
#   - the tree still works after it is moved (relocatable);
#   - the installed CLI runs from another directory with no LD_LIBRARY_PATH
#     and no PIXFLOW_MODELS (`pixflow info`; `pixflow segment` finds the
#     installed model once the library has pf_model_find);
#   - tests/consumer builds against it with find_package(pixflow), with
#     pkg-config (shared) and with pkg-config --static, and runs the model;
#   - a CUDA build: libpixflow has no NEEDED cuDNN/cuBLAS, and where they can
#     be hidden (not in the loader's default directories) the CLI and the
#     consumer run on the CPU without them while `pixflow info` names them
#     as missing.
# usage: install_tree.sh BUILD_DIR SOURCE_DIR CMAKE C_COMPILER [SANITIZE]
set -euo pipefail
build=$(cd "$1" && pwd -P)
src=$(cd "$2" && pwd -P)
cmake=$3
cc=$4
san=${5:-}
sanflags=${san:+-fsanitize=$san -fno-omit-frame-pointer}

# Outside both trees: the CLI's old lookup walks up from its own folder and
# would otherwise find the source tree's node_modules.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pixflow-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

cache_var() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
libdir=$(cache_var CMAKE_INSTALL_LIBDIR)
bindir=$(cache_var CMAKE_INSTALL_BINDIR)
datadir=$(cache_var CMAKE_INSTALL_DATADIR)
includedir=$(cache_var CMAKE_INSTALL_INCLUDEDIR)
: "${libdir:=lib}" "${bindir:=bin}" "${datadir:=share}" "${includedir:=include}"

"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "cmake --install"; }
p=$tmp/prefix

# Layout -------------------------------------------------------------------------------
for f in "$bindir/pixflow" "$libdir/libpixflow.so" "$libdir/libpixflow.a" \
         "$libdir/pkgconfig/pixflow.pc" "$libdir/cmake/pixflow/pixflowConfig.cmake" \
         "$libdir/cmake/pixflow/pixflowConfigVersion.cmake" \
         "$libdir/cmake/pixflow/pixflowTargets.cmake" "$includedir/pixflow/pixflow.h" \
         share/doc/pixflow/LICENSE; do
    [ -e "$p/$f" ] || fail "$f was not installed"
done
grep -q "Apache License" "$p/share/doc/pixflow/LICENSE" || fail "LICENSE is not the Apache licence"
models=$p/$datadir/pixflow/models
have_models=0
if [ -f "$src/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite" ]; then
    have_models=1
    for m in selfie_segmentation.tflite selfie_segmentation_landscape.tflite; do
        cmp -s "$models/$m" "$src/node_modules/@mediapipe/selfie_segmentation/$m" ||
            fail "$datadir/pixflow/models/$m missing or not the npm model"
    done
    for m in "$src"/node_modules/@mediapipe/face_detection/*.tflite; do
        [ -e "$m" ] || continue
        cmp -s "$models/$(basename "$m")" "$m" || fail "$(basename "$m") was not installed"
    done
else
    note "node_modules/@mediapipe missing (npm ci): model checks skipped"
fi

# No build or source paths in what was installed --------------------------------------
leaks=$(grep -rlF -e "$build" -e "$src" "$p/$libdir/cmake" "$p/$libdir/pkgconfig" || true)
[ -z "$leaks" ] || fail "installed files name the build/source tree: $leaks"
runpath=$(readelf -d "$p/$bindir/pixflow" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
rel=$(realpath -m --relative-to="/x/$bindir" "/x/$libdir")
[ "$runpath" = "\$ORIGIN/$rel" ] || fail "CLI RUNPATH is '$runpath', expected '\$ORIGIN/$rel'"
note "CLI RUNPATH $runpath"

# Relocatable: everything below runs from a moved copy --------------------------------
mv "$p" "$tmp/moved"
p=$tmp/moved
models=$p/$datadir/pixflow/models
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
unset PIXFLOW_MODELS PIXFLOW_DEVICE
# No LD_LIBRARY_PATH: libpixflow comes through the RUNPATH. Only the GPU
# machine's carried libprotobuf-c (PF_ONNX_PREGEN_DIR) needs one, and it
# holds no libpixflow.
pregen=$(cache_var PF_ONNX_PREGEN_DIR)
if [ -n "$pregen" ]; then export LD_LIBRARY_PATH=$pregen; else unset LD_LIBRARY_PATH; fi
export PIXFLOW_DEVICE=cpu

# The CLI --------------------------------------------------------------------------------
loaded=$(ldd "$p/$bindir/pixflow" | sed -n 's/.*libpixflow\.so[.0-9]* => \(.*\) (0x.*/\1/p')
[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$p/$libdir/libpixflow.so")" ] ||
    fail "the installed CLI loads libpixflow from '$loaded', not from $p/$libdir"
"$p/$bindir/pixflow" info >"$tmp/info.txt" || fail "installed pixflow info"
"$p/$bindir/pixflow" info --json >"$tmp/info.json" || fail "installed pixflow info --json"
# One key per line in the CLI's JSON; "version" first at the top level.
json_str() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$2" | head -1; }
version=$(json_str version "$tmp/info.json")
[ -n "$version" ] || fail "no version in pixflow info --json"
cuda=0
grep -q '^ *"cuda": true' "$tmp/info.json" && cuda=1
note "installed pixflow $version (cuda $cuda) runs from $PWD"

astronaut=$src/.data/astronaut.png
# (Whole outputs into grep: with pipefail, `cmd | grep -q` fails when grep
# stops reading early and cmd gets SIGPIPE.)
exports=$(nm -D --defined-only "$p/$libdir/libpixflow.so")
if grep -qw pf_model_find <<<"$exports"; then
    if [ $have_models = 1 ] && [ -f "$astronaut" ]; then
        "$p/$bindir/pixflow" segment "$astronaut" -o out.png --json >"$tmp/seg.json" ||
            fail "installed pixflow segment (no PIXFLOW_MODELS)"
        used=$(json_str model "$tmp/seg.json")
        [ "$(realpath "$used")" = "$(realpath "$models/selfie_segmentation.tflite")" ] ||
            fail "segment used $used, not the installed model in $models"
        note "installed pixflow segment found $used"
    else
        note "astronaut.png or the models missing: installed segment check skipped"
    fi
else
    note "libpixflow has no pf_model_find yet: installed segment check skipped"
fi

# Consumers ------------------------------------------------------------------------------
"$cmake" -S "$src/tests/consumer" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$p" \
    -DCMAKE_C_COMPILER="$cc" ${sanflags:+"-DCMAKE_C_FLAGS=$sanflags"} \
    -DCMAKE_BUILD_TYPE=Release >"$tmp/consumer-cmake.log" 2>&1 ||
    { cat "$tmp/consumer-cmake.log"; fail "find_package(pixflow) consumer: configure"; }
"$cmake" --build "$tmp/cmake-build" >>"$tmp/consumer-cmake.log" 2>&1 ||
    { cat "$tmp/consumer-cmake.log"; fail "find_package(pixflow) consumer: build"; }
[ "$(realpath -m "$(cat "$tmp/cmake-build/models_dir.txt")")" = "$(realpath -m "$models")" ] ||
    fail "pixflow_MODELS_DIR is '$(cat "$tmp/cmake-build/models_dir.txt")', expected '$models'"

# CI installs pkg-config and make (scripts/setup.sh); the GPU machine may lack them.
# Builds against a carried static FFmpeg or protobuf-c (scripts/gpu-prep)
# have no complete Libs.private: no static link there.
pc_ok=1
command -v pkg-config >/dev/null && command -v make >/dev/null || pc_ok=0
static_ok=$pc_ok
[ -z "$(cache_var PF_FFMPEG_STATIC_DIR)$(cache_var PF_ONNX_PREGEN_DIR)" ] || static_ok=0
if [ $pc_ok = 1 ]; then
    export PKG_CONFIG_PATH=$p/$libdir/pkgconfig
    [ "$(pkg-config --modversion pixflow)" = "$version" ] || fail "pkg-config --modversion"
    grep -q '^License: Apache-2.0$' "$p/$libdir/pkgconfig/pixflow.pc" || fail "pixflow.pc: no License"
    pc_models=$(pkg-config --variable=modelsdir pixflow)
    [ "$(realpath -m "$pc_models")" = "$(realpath -m "$models")" ] || fail "pkg-config modelsdir is $pc_models"
    mkdir "$tmp/make-build"
    make -s -f "$src/tests/consumer/Makefile" O="$tmp/make-build" CC="$cc" CFLAGS="$sanflags" \
        LDFLAGS="$sanflags" >"$tmp/consumer-make.log" 2>&1 ||
        { cat "$tmp/consumer-make.log"; fail "pkg-config consumer: build"; }
fi
# Static: libpixflow.a and Libs.private must be enough.
if [ $static_ok = 1 ]; then
    # shellcheck disable=SC2046
    "$cc" -std=c11 $sanflags $(pkg-config --cflags pixflow) -o "$tmp/make-build/consumer-static" \
        "$src/tests/consumer/main.c" "$p/$libdir/libpixflow.a" \
        $(pkg-config --static --libs pixflow | sed 's/-lpixflow\b//') >"$tmp/static.log" 2>&1 ||
        { cat "$tmp/static.log"; fail "pkg-config --static consumer: link"; }
    static_dyn=$(readelf -d "$tmp/make-build/consumer-static")
    grep -q 'libpixflow' <<<"$static_dyn" &&
        fail "the static consumer needs libpixflow.so"
fi
[ $pc_ok = 1 ] || note "no pkg-config or make here: pkg-config consumers skipped"

if [ $have_models = 1 ]; then
    "$tmp/cmake-build/consumer" "$models" || fail "find_package(pixflow) consumer: run"
    if [ $pc_ok = 1 ]; then
        "$tmp/make-build/consumer" "$pc_models" || fail "pkg-config consumer: run"
    fi
    if [ $static_ok = 1 ]; then
        "$tmp/make-build/consumer-static" "$models" || fail "static consumer: run"
    fi
fi

# CUDA builds: cuDNN and cuBLAS are loaded at run time, never NEEDED ------------------
if [ "$cuda" = 1 ]; then
    needed=$(readelf -d "$p/$libdir/libpixflow.so" | grep NEEDED || true)
    echo "$needed" | grep -Eq 'cudnn|cublas' && fail "libpixflow.so links cuDNN/cuBLAS: $needed"
    note "libpixflow.so NEEDED: $(echo "$needed" | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')"
    # The loader run directly with its cache off searches only RUNPATHs and
    # its default directories; the CUDA toolkit's are not among them.
    ldso=$(readelf -l "$p/$bindir/pixflow" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
    "$ldso" --inhibit-cache "$p/$bindir/pixflow" info >"$tmp/hidden.txt" ||
        fail "pixflow info without the loader cache"
    # "nn libs:   cuDNN     9.14.0 (/path)" or "... not available: libcudnn.so.9 not found (...)"
    libs=$(sed -n '/^nn libs:/,/^selected:/p' "$tmp/hidden.txt" | grep -v '^selected:')
    echo "$libs" | grep -q ' cuDNN ' && echo "$libs" | grep -q ' cuBLAS ' ||
        fail "pixflow info does not list cuDNN and cuBLAS: $libs"
    hidden=$(echo "$libs" | grep -c 'not available' || true)
    if echo "$libs" | grep 'not available' | grep -Ev 'libcu(dnn|blas|blasLt)\.so\.[0-9]+ not found'; then
        fail "a missing library is not named: $libs"
    fi
    if [ "$hidden" -gt 0 ]; then
        note "cuDNN/cuBLAS hidden: $(echo "$libs" | tr -s ' ' | tr '\n' ' ')"
        if [ $have_models = 1 ]; then
            "$ldso" --inhibit-cache "$tmp/cmake-build/consumer" "$models" ||
                fail "the consumer does not run on the CPU without cuDNN/cuBLAS"
            if [ -f "$astronaut" ]; then
                "$ldso" --inhibit-cache "$p/$bindir/pixflow" segment "$astronaut" \
                    --model "$models/selfie_segmentation.tflite" --device cpu -o hidden.png ||
                    fail "pixflow segment --device cpu without cuDNN/cuBLAS"
                note "pixflow segment --device cpu ran without cuDNN/cuBLAS"
            fi
        fi
    else
        note "cuDNN/cuBLAS are in the loader's default directories here: hiding check skipped"
    fi
fi
echo "install_tree: ok"
