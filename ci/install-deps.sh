#!/usr/bin/env bash
# Installs everything memtrack needs to build, test and benchmark, from Debian 12's packages only.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  libmsgpack-cxx-dev libzstd-dev libtbb-dev libmimalloc-dev
  googletest libgtest-dev libbenchmark-dev
  zstd python3 python3-msgpack python3-zstandard
  # phase two: the unwinder's fallback, symbols, the report's browser test
  libunwind-dev libdw-dev libelf-dev binutils zlib1g-dev
  chromium fonts-dejavu-core
  # memtrack export --format pprof: protobuf, and Debian's profile.proto (a copy is checked in too)
  protobuf-compiler libprotobuf-dev golang-github-google-pprof-dev
  # allocators beyond glibc: the preload's instruction decoder, and the allocators the tests build against
  libzydis-dev libjemalloc-dev libgoogle-perftools-dev
  # tests/interop: CodSpeed's reader (Rust zstd + rmp_serde), built offline from Debian's crates; pulls in
  # rustc and, for zstd-sys's bindgen, libclang (about 190 packages, 87 MiB to download)
  cargo librust-zstd-dev librust-rmp-serde-dev librust-serde-derive-dev
  # the floor of the recording benchmarks (bench/record_*.sh; the smoke run in ctest skips them without it)
  heaptrack
  # the live view's tests drive a terminal (tests/integration/live_test.cpp)
  tmux
  # the benchmark scripts' arithmetic and GNU time's max RSS (bench/record_common.sh, resident_accuracy.sh)
  bc time
  # Python programs under record (tests/integration/python_test.cpp): python3 -m pytest with a region per test
  python3-pytest
)
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/install-deps.sh: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "ci/install-deps.sh: all ${#packages[@]} packages present"
fi
