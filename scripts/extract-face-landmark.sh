#!/usr/bin/env bash
# Extracts face_landmark.tflite (MediaPipe's 468-point face landmark model,
# 192x192 input) from @mediapipe/face_mesh's packed assets file. The package
# ships no loose .tflite: its Emscripten loader script lists each packed file's
# byte range, and those ranges are read from the script here (never hard-coded),
# so a different package version is either extracted correctly or refused by
# the checksum below.
#   usage: scripts/extract-face-landmark.sh [PACKAGE_DIR]
#   (default node_modules/@mediapipe/face_mesh, relative to the repository root;
#   writes PACKAGE_DIR/face_landmark.tflite)
# Nothing is done when the file is already there with the expected checksum.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-node_modules/@mediapipe/face_mesh}
name=face_landmark.tflite
# SHA-256 of face_landmark.tflite in @mediapipe/face_mesh 0.4.1657299874
# (bytes 2495952..3737848 of face_mesh_solution_packed_assets.data), measured
# when the extraction was written; docs/faces.md records the same value.
want=c603fa6149219a3e9487dc9abd7a0c24474c77263273d24868378cdf40aa26d1
out="$dir/$name"

if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$want" ]; then
  exit 0
fi
loader="$dir/face_mesh_solution_packed_assets_loader.js"
data="$dir/face_mesh_solution_packed_assets.data"
for f in "$loader" "$data"; do
  [ -f "$f" ] || { echo "extract-face-landmark: $f is missing (run npm ci first)" >&2; exit 1; }
done

tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# The loader holds a JSON-like list of {"filename": ..., "start": N, "end": N}
# entries; take the one whose path ends in /face_landmark.tflite.
node - "$loader" "$data" "$name" "$tmp" <<'JS'
const fs = require('fs');
const [loader, data, name, out] = process.argv.slice(2);
const js = fs.readFileSync(loader, 'utf8');
const re = /\{\s*"filename"\s*:\s*"([^"]*)"\s*,\s*"start"\s*:\s*(\d+)\s*,\s*"end"\s*:\s*(\d+)\s*\}/g;
let hit = null;
for (const m of js.matchAll(re))
  if (m[1] === name || m[1].endsWith('/' + name)) {
    if (hit) { console.error(`extract-face-landmark: ${loader} lists ${name} twice`); process.exit(1); }
    hit = { start: Number(m[2]), end: Number(m[3]) };
  }
if (!hit) { console.error(`extract-face-landmark: ${loader} lists no ${name}`); process.exit(1); }
const buf = fs.readFileSync(data);
if (!(hit.start < hit.end && hit.end <= buf.length)) {
  console.error(`extract-face-landmark: ${name} range ${hit.start}..${hit.end} is outside ${data} (${buf.length} bytes)`);
  process.exit(1);
}
fs.writeFileSync(out, buf.subarray(hit.start, hit.end));
JS

got=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  echo "extract-face-landmark: $name from $data has SHA-256 $got, expected $want" >&2
  exit 1
fi
mv "$tmp" "$out"
trap - EXIT
echo "extract-face-landmark: installed $out"
