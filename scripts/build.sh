#!/usr/bin/env bash
# Configures and builds pixflow into build/ (or $PF_BUILD_DIR). Extra CMake
# arguments pass through: scripts/build.sh -DPF_CUDA=off
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${PF_BUILD_DIR:-build}
jobs=${PF_JOBS:-$(nproc)}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=${PF_BUILD_TYPE:-RelWithDebInfo} -DPF_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j "$jobs"
