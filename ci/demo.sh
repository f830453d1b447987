#!/usr/bin/env bash
# The main job on a bundled workload: build a release memtrack, encode the bundled 140,000-event trace into
# an artifact, decode it back and check it is the same trace.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target memtrack
bin=build/release/bin/memtrack
out=$(mktemp -d)
$bin encode -i tests/data/realistic-140k.raw -o "$out/demo.MemtrackArtifact.msgpack"
$bin decode "$out/demo.MemtrackArtifact.msgpack" --format raw -o "$out/roundtrip.raw"
cmp tests/data/realistic-140k.raw "$out/roundtrip.raw"
echo "artifact: $out/demo.MemtrackArtifact.msgpack ($(stat -c %s "$out/demo.MemtrackArtifact.msgpack") bytes for 140000 events; round trip identical)"
$bin decode "$out/demo.MemtrackArtifact.msgpack" | head -n 3
