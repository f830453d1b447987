#!/usr/bin/env bash
# Builds memtrack with warnings as errors and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake --preset dev
cmake --build --preset dev -j "$jobs"
ctest --preset dev -j "$jobs"
