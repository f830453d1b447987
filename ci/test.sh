#!/usr/bin/env bash
# Builds memtrack with warnings as errors and runs the test suite with ctest, then again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then the concurrent parts under ThreadSanitizer.
# `ci/test.sh dev` (or asan, tsan) runs just one configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
configs=("${@:-dev asan tsan}")
# shellcheck disable=SC2206
configs=(${configs[*]})
for preset in "${configs[@]}"; do
  echo "=== ci/test.sh: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  case "$preset" in
    # ThreadSanitizer for what runs threads: the pipeline, the recorder and the unwinder. The Python frame
    # tests run on Debian's interpreter alone here: the other versions' variants (where the machine has them)
    # test those versions' frame layouts, which dev and asan cover, through the same threads.
    tsan) ctest --preset tsan -j "$jobs" -L 'pipeline|runtime|integration|unwind' -E '^Versions/PythonFrames\..*/3_[0-9]+' ;;
    # The interop tests run other programs' readers (Rust, python) on artifacts: nothing of ours to
    # sanitize, and the Rust reader would be built a second time (about 2 CPU minutes).
    asan) ctest --preset asan -j "$jobs" -LE interop ;;
    *) ctest --preset "$preset" -j "$jobs" ;;
  esac
done
