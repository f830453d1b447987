#!/usr/bin/env bash
# Runs the benchmark suite and regenerates docs/PERFORMANCE.md from that one run.
#
# usage: bench/run_suite.sh [--smoke] [--build DIR] [--out DIR] [--no-rss] [--with-record] [--doc FILE]
#                           [-- BENCH_ARGS...]
#   --smoke    tiny sizes (MEMTRACK_BENCH_SMOKE=1, --benchmark_min_time=0.01), no shell benchmarks, and the
#              document goes to OUT/PERFORMANCE.md instead of docs/ (ctest runs this: label bench)
#   --build    the build tree with bin/memtrack-bench (default build/release: benchmarks need -O2/-O3)
#   --out      where the JSON, the load samples and the run's metadata are kept (default BUILD/bench-results)
#   --no-rss   skip bench/encode_rss.sh (peak RSS of `memtrack encode` from a pipe, glibc vs mimalloc)
#   --with-record  also run bench/record_overhead.sh (native vs heaptrack vs `memtrack record`): 7 rounds of
#              2 threads x 1M operations (the runtime issue's workload), then 5 rounds of 2 x 4M (the native
#              run well above GNU time's 10 ms resolution); about two minutes; needs heaptrack and the
#              preload library in BUILD
#   --doc      the document to write (default docs/PERFORMANCE.md, or OUT/PERFORMANCE.md with --smoke)
#   BENCH_ARGS extra arguments for memtrack-bench (e.g. --benchmark_filter=Peak); the renderer then reports
#              the rows that are missing instead of writing the document
#
# The full run takes a few minutes. Run it on a quiet machine: the document records the load average
# sampled during the run, so a contended run is visible as such.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
smoke=0
build=build/release
out=""
rss=1
record=0
doc=""
bench_args=()
while (($#)); do
  case $1 in
    --smoke) smoke=1 ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --no-rss) rss=0 ;;
    --with-record) record=1 ;;
    --doc) doc=$2; shift ;;
    --) shift; bench_args=("$@"); break ;;
    *) echo "run_suite.sh: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$build/bench-results}
mkdir -p "$out"
bench=$build/bin/memtrack-bench
[[ -x $bench ]] || { echo "run_suite.sh: no $bench (cmake --preset release && cmake --build --preset release)" >&2; exit 2; }

args=(--benchmark_out="$out/bench.json" --benchmark_out_format=json)
if ((smoke)); then
  export MEMTRACK_BENCH_SMOKE=1
  args+=(--benchmark_min_time=0.01)
  rss=0
  record=0
  doc=${doc:-$out/PERFORMANCE.md}
else
  unset MEMTRACK_BENCH_SMOKE
  # Three repetitions in random order: a neighbour's burst hits one repetition of one row, not a whole
  # family, and the renderer takes medians.
  args+=(--benchmark_repetitions=3 --benchmark_enable_random_interleaving=true)
  doc=${doc:-docs/PERFORMANCE.md}
fi
args+=("${bench_args[@]}")

# Load average every 5 s while the suite runs, so the document can say how quiet the machine was.
: > "$out/load.txt"
cat /proc/loadavg >> "$out/load.txt"
(while sleep 5; do cat /proc/loadavg >> "$out/load.txt"; done) &
sampler=$!
trap 'kill $sampler 2> /dev/null || true' EXIT

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "run_suite.sh: $bench ${args[*]}" >&2
"$bench" "${args[@]}" > "$out/bench.txt"
heap_args=()
rm -f "$out/heap.json"
if ((!smoke)); then
  # The heap figures: memtrack-bench counts the heap only without repetitions (a Google Benchmark 1.7.1 bug,
  # see bench_main.cpp), so a second pass, short per benchmark (the peak rows run their one iteration anyway).
  heap_args=(--benchmark_out="$out/heap.json" --benchmark_out_format=json --benchmark_min_time=0.01 "${bench_args[@]}")
  echo "run_suite.sh: $bench ${heap_args[*]}" >&2
  "$bench" "${heap_args[@]}" > "$out/heap.txt"
fi
if ((rss)); then
  echo "run_suite.sh: bench/encode_rss.sh $build $out/encode_rss.tsv" >&2
  # Its limits are reported in the document; a failed limit must not stop the document being written.
  bench/encode_rss.sh "$build" "$out/encode_rss.tsv" > "$out/encode_rss.txt" || true
else
  rm -f "$out/encode_rss.tsv"
fi
rm -f "$out"/record_overhead*.tsv
if ((record)); then
  # The runtime issue's workload (2 threads x 1M operations), then 4x longer: their difference is the cost
  # per event without the fixed cost of starting a recording.
  for spec in "7 1000000" "5 4000000"; do
    read -r rounds ops <<< "$spec"
    echo "run_suite.sh: bench/record_overhead.sh $build $rounds 2 $ops $out/record_overhead.$ops.tsv" >&2
    bench/record_overhead.sh "$build" "$rounds" 2 "$ops" "$out/record_overhead.$ops.tsv" > "$out/record_overhead.$ops.txt"
  done
fi
cat /proc/loadavg >> "$out/load.txt"
kill $sampler 2> /dev/null || true

# What the renderer cannot read from the benchmark JSON.
{
  echo "started=$started"
  echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command=bench/run_suite.sh$( ((smoke)) && echo " --smoke")$( ((record)) && echo " --with-record") --build $build ${bench_args[*]}"
  echo "bench_command=$bench ${args[*]}"
  echo "heap_command=$( ((${#heap_args[@]})) && echo "$bench ${heap_args[*]}")"
  echo "commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)$(git diff --quiet HEAD -- 2> /dev/null || echo ' (with uncommitted changes)')"
  echo "nproc=$(nproc)"
  echo "cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
  echo "kernel=$(uname -sr)"
  echo "compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" | head -n1) $("$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" | head -n1)" -dumpfullversion 2> /dev/null || true)"
  echo "build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")"
  echo "smoke=$smoke"
} > "$out/meta.txt"

/usr/bin/python3 bench/render_performance.py --results "$out" --out "$doc"
echo "run_suite.sh: wrote $doc" >&2
