#!/usr/bin/env bash
# Integrator's final GPU check, part A (one device call, < 10 min): build,
# every test that can run there (ctest: the CUDA tests and the CPU ones), then
# the start-up table (bench/bench_start.sh).
#   bash scripts/gpu-final-a.sh OUT_DIR
set -uo pipefail
out=${1:?out dir}
mkdir -p "$out"
cd "$(dirname "$0")/.."
T0=$(date +%s)
bash scripts/gpu-check --build-only > "$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -20; exit 1; }
B=build-gpu; [ -x build-gpu/pixflow ] || B=build
echo "build $(( $(date +%s) - T0 )) s ($B)"
export PF_SOURCE_DIR=$PWD
(cd "$B" && timeout 330 ctest -j6 --timeout 150 --output-on-failure > "$out/ctest.log" 2>&1)
echo "ctest rc=$? $(( $(date +%s) - T0 )) s"
grep -E "tests passed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|\(Subprocess" "$out/ctest.log" | head -20
timeout 200 bash bench/bench_start.sh "$B" .data/bench/segment_1080p.h264 cuda:0 > "$out/start.txt" 2>&1
echo "bench_start rc=$? $(( $(date +%s) - T0 )) s"; tail -25 "$out/start.txt"
