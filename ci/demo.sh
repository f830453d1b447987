#!/usr/bin/env bash
# The main job on bundled workloads: build a release memtrack, record a multi-threaded allocation workload
# with `memtrack record`; then encode the bundled 140,000-event trace into an artifact, decode it back and
# check it is the same trace.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target memtrack memtrack_preload mtprog_churn
bin=build/release/bin/memtrack
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# 2 threads x 200,000 malloc/realloc/free operations (tests/integration/programs/churn.c). churn prints
# "events E", the calls it made itself; the recorder's and stats' counts are a few higher (3 with Debian 12's
# glibc): they also hold what the C runtime allocates on the program's behalf (stdio's buffer, the threads'
# bookkeeping), which are events of the program too.
echo "churn's own count, then the recorder's and stats' (which include the C runtime's allocations):"
$bin record -o "$out/churn.MemtrackArtifact.msgpack" -- build/release/tests/programs/churn 2 200000
$bin stats "$out/churn.MemtrackArtifact.msgpack"
# Where the memory went: the allocation sites (call stacks) of the recording, by bytes allocated.
$bin top "$out/churn.MemtrackArtifact.msgpack" --by allocated -n 3
# The report page of that recording, kept (not in the temporary directory) so it can be opened afterwards.
report=${MEMTRACK_DEMO_REPORT:-$PWD/build/release/churn.report.html}
$bin report "$out/churn.MemtrackArtifact.msgpack" -o "$report"
echo "report of the recording: $report ($(stat -c %s "$report") bytes; open it in any browser, it loads nothing)"
$bin encode -i tests/data/realistic-140k.raw -o "$out/demo.MemtrackArtifact.msgpack"
$bin decode "$out/demo.MemtrackArtifact.msgpack" --format raw -o "$out/roundtrip.raw"
cmp tests/data/realistic-140k.raw "$out/roundtrip.raw"
echo "artifact: $(stat -c %s "$out/demo.MemtrackArtifact.msgpack") bytes for 140000 events; round trip identical (temporary files are removed on exit)"
# head closes the pipe early; that is not a failure of the demo
{ $bin decode "$out/demo.MemtrackArtifact.msgpack" || true; } | head -n 3
