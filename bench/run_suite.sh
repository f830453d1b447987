#!/usr/bin/env bash
# Runs the benchmark suite and regenerates docs/PERFORMANCE.md from that one run.
#
# usage: bench/run_suite.sh [--smoke] [--build DIR] [--out DIR] [--no-rss] [--no-report] [--no-symbolize]
#                           [--no-diff] [--with-record] [--doc FILE] [-- BENCH_ARGS...]
#   --smoke    tiny sizes (MEMTRACK_BENCH_SMOKE=1, --benchmark_min_time=0.01; the shell benchmarks at a few
#              thousand events, once; no RSS), and the document goes to OUT/PERFORMANCE.md instead of docs/
#              (ctest runs this: label bench). The recording benchmarks run only if heaptrack is installed.
#   --build    the build tree with bin/memtrack-bench (default build/release: benchmarks need -O2/-O3)
#   --out      where the JSON, the load samples and the run's metadata are kept (default BUILD/bench-results)
#   --no-rss   skip bench/encode_rss.sh (peak RSS of `memtrack encode` from a pipe, glibc vs mimalloc)
#   --no-report     skip bench/report_size.sh (`memtrack report` time and page size beside `memtrack stats`,
#              1M and 16M events, without and with call stacks, a g++ compile and a 40-process recording with
#              the widest line of `memtrack stats` and `memtrack top` on each; about a minute)
#   --no-symbolize  skip bench/symbolize_throughput.sh (memtrack's symbolizer beside addr2line on libc,
#              libstdc++ and python3, 5,000 addresses each; under a minute)
#   --no-diff  skip bench/diff_cost.sh (`memtrack diff` beside `memtrack stats` of the same two recordings
#              with stacks, 1M and 10M events each; about a minute)
#   --with-record  also record programs (needs heaptrack and the preload library in BUILD; about three
#              minutes): bench/record_overhead.sh (native vs heaptrack vs `memtrack record`) for 7 rounds of
#              2 threads x 1M operations (the runtime issue's workload), then 5 rounds of 2 x 4M (the native
#              run well above GNU time's 10 ms resolution); and bench/record_stacks.sh (the same with call
#              stacks on and off, 2 x 1M malloc/free at a call depth of 24 frames, 5 rounds) and
#              bench/resident_cost.sh (resident sampling against --no-resident: churn 2 x 4M and g++ compiling
#              a file, 3 rounds, and the sampler's CPU for 10 busy processes; about three minutes more) and
#              bench/resident_accuracy.sh (peak resident against the kernel's VmHWM and GNU time's max RSS:
#              resident.c's programs, python3, g++ and sqlite3; about a minute) and bench/record_cost.sh (the
#              recording cost per process, per thread at 1/2/4/8 threads and of the transport alone, 3 rounds;
#              about a minute) and bench/attach_cost.sh (`memtrack attach`'s cost per event beside `record
#              --no-stacks` and the pause while attaching and detaching, 5 rounds of 1 thread x 3M iterations;
#              under a minute; skipped, and said so, where ptrace of a sibling process is not permitted) and
#              bench/real_programs.sh (sqlite3, perl, jq, python3, git, make and g++ natively, with and
#              without stacks and under heaptrack, 3 rounds; about two minutes) and bench/python_cost.sh
#              (Python frames against native-only stacks and --python-malloc, on a JSON/regex script and
#              `python3 -m pytest` of a small suite, Debian's /usr/bin/python3 with python3-pytest, 5 rounds;
#              about three minutes) and bench/compact_vs_heaptrack.sh (compact artifacts beside the compatible
#              encoding and heaptrack's file, encode and stats CPU, record --compact against record; not with
#              --smoke; about three minutes)
#   --doc      the document to write (default docs/PERFORMANCE.md, or OUT/PERFORMANCE.md with --smoke)
#   BENCH_ARGS extra arguments for memtrack-bench (e.g. --benchmark_filter=Peak); the renderer then reports
#              the rows that are missing instead of writing the document
#
# The full run (`bench/run_suite.sh --with-record --build build/release`, the command docs/PERFORMANCE.md
# names) takes about ten minutes on 2 cores. Run it on a quiet machine: the document records the load
# average sampled during the run, so a contended run is visible as such.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
invocation="bench/run_suite.sh$(printf ' %q' "$@")"
smoke=0
build=build/release
out=""
rss=1
report=1
symbolize=1
diff=1
record=0
doc=""
bench_args=()
while (($#)); do
  case $1 in
    --smoke) smoke=1 ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --no-rss) rss=0 ;;
    --no-report) report=0 ;;
    --no-symbolize) symbolize=0 ;;
    --no-diff) diff=0 ;;
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
  # The recording benchmarks at smoke sizes need heaptrack as the full ones do; without it the document
  # says they were skipped (a full run with --with-record fails instead).
  if command -v heaptrack > /dev/null; then record=1; else record=0; record_skipped="heaptrack is not installed"; fi
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
# The machine's CPU counters at both ends and this script's own CPU (its waited-for children: every
# benchmark), so the document can say how much CPU other processes took during the run.
cpu_stat_start=$(head -n1 /proc/stat)
# part NAME: closes the previous part's timing (seconds per part go to meta.txt, so the document can say
# where the run's time went).
timing=""
part_start=$SECONDS
part() {
  timing+="${timing:+ }$1:$((SECONDS - part_start))"
  part_start=$SECONDS
}
# bench_script OUT CMD...: runs one of the shell benchmarks with its stdout to OUT, and keeps the command
# for the document (commands.txt).
: > "$out/commands.txt"
bench_script() {
  local to=$1
  shift
  echo "run_suite.sh: $*" >&2
  echo "$*" >> "$out/commands.txt"
  "$@" > "$to"
}
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
part benchmarks
if ((rss)); then
  # Its limits are reported in the document; a failed limit must not stop the document being written.
  bench_script "$out/encode_rss.txt" bench/encode_rss.sh "$build" "$out/encode_rss.tsv" || true
  part encode_rss
else
  rm -f "$out/encode_rss.tsv"
fi
rm -f "$out"/record_overhead*.tsv "$out/record_stacks.tsv" "$out/report_size.tsv" "$out/symbolize.txt" \
  "$out/diff_cost.tsv" "$out/resident_cost.tsv" "$out/resident_accuracy.tsv" "$out/record_cost.tsv" \
  "$out/attach_cost.tsv" "$out/real_programs.tsv" "$out/python_cost.tsv" "$out/compact.tsv"
if ((record)); then
  # The runtime issue's workload (2 threads x 1M operations), then 4x longer: their difference is the cost
  # per event without the fixed cost of starting a recording. Smoke: a few thousand operations, once.
  if ((smoke)); then specs=("1 2000" "1 8000"); else specs=("7 1000000" "5 4000000"); fi
  for spec in "${specs[@]}"; do
    read -r rounds ops <<< "$spec"
    bench_script "$out/record_overhead.$ops.txt" \
      bench/record_overhead.sh "$build" "$rounds" 2 "$ops" "$out/record_overhead.$ops.tsv"
  done
  # The stacks issue's workload: 2 threads x 1M malloc/free at a call depth of 24 frames.
  if ((smoke)); then spec="1 2000"; else spec="5 1000000"; fi
  read -r rounds ops <<< "$spec"
  bench_script "$out/record_stacks.txt" bench/record_stacks.sh "$build" "$rounds" 2 "$ops" 24 "$out/record_stacks.tsv"
  # Resident sampling against --no-resident (smoke: one round; the workloads keep their sizes).
  if ((smoke)); then rounds=1; else rounds=3; fi
  bench_script "$out/resident_cost.txt" bench/resident_cost.sh "$build" "$out/resident_cost.tsv" "$rounds"
  bench_script "$out/resident_accuracy.txt" bench/resident_accuracy.sh "$build" "$out/resident_accuracy.tsv"
  # Issue 26: per process (a git loop), per thread (churn at 1/2/4/8 threads) and the transport alone (smoke:
  # one round at the script's smoke sizes).
  bench_script "$out/record_cost.txt" bench/record_cost.sh "$build" "$out/record_cost.tsv" "$rounds"
  # Issue 27: `memtrack attach` per event beside `record --no-stacks`, and its pauses. Attaching to a sibling
  # process needs Yama's ptrace_scope 0, or CAP_SYS_PTRACE (root) up to scope 2. Smoke: one round of 300,000
  # iterations (about 0.2 s natively: fewer, and the program may end before attach reaches it).
  scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2> /dev/null || echo 0)
  if ((scope == 0 || (scope <= 2 && $(id -u) == 0))); then
    if ((smoke)); then spec="1 1 300000"; else spec="5 1 3000000"; fi
    read -r rounds threads ops <<< "$spec"
    bench_script "$out/attach_cost.txt" bench/attach_cost.sh "$build" "$rounds" "$threads" "$ops" "$out/attach_cost.tsv"
  else
    attach_skipped="Yama's ptrace_scope is $scope and the suite runs as uid $(id -u): memtrack attach may not trace it"
  fi
  # Issue 26's real-program table: sqlite3, perl, jq, python3, a git loop, git commits, make -j2 and g++,
  # natively, without and with stacks and under heaptrack (smoke: sqlite3, perl and the git loop, once).
  if ((smoke)); then
    bench_script "$out/real_programs.txt" bench/real_programs.sh "$build" 1 "$out/real_programs.tsv" quick
  else
    bench_script "$out/real_programs.txt" bench/real_programs.sh "$build" 3 "$out/real_programs.tsv"
  fi
  # Issue 28: Python frames against native-only stacks and --python-malloc (smoke: one round, a smaller
  # JSON script).
  # Smoke without Debian's python3 and pytest: skipped (the section is then left out); a full run fails.
  if ((smoke)); then rounds=1; else rounds=5; fi
  if ((!smoke)) || /usr/bin/python3 -m pytest --version > /dev/null 2>&1; then
    bench_script "$out/python_cost.txt" bench/python_cost.sh "$build" "$out/python_cost.tsv" "$rounds"
  else
    echo "run_suite.sh: smoke: no /usr/bin/python3 with pytest, bench/python_cost.sh skipped" >&2
  fi
  # Issue 25: compact artifacts beside the compatible encoding and heaptrack's file (churn 2x2M and 2x5M,
  # sqlite3, perl, jq, python3, realistic events, and record --compact against record on churn 2x4M). Its
  # workloads have fixed sizes (tens of seconds each), so a smoke run leaves the section out.
  if ((!smoke)); then
    bench_script "$out/compact.txt" bench/compact_vs_heaptrack.sh "$build" "$out/compact.tsv"
  fi
  part record
fi
if ((report)); then
  if ((smoke)); then sizes=(16384 65536); else sizes=(1048576 16777216); fi
  bench_script "$out/report_size.txt" bench/report_size.sh "$build" "$out/report_size.tsv" "${sizes[@]}"
  part report
fi
if ((symbolize)); then
  # Smoke: 50 addresses of libc only (the default modules' disassembly alone takes seconds).
  if ((smoke)); then sym_args=(50 /usr/lib/x86_64-linux-gnu/libc.so.6); else sym_args=(5000); fi
  bench_script "$out/symbolize.txt" bench/symbolize_throughput.sh "$build" "${sym_args[@]}"
  part symbolize
fi
if ((diff)); then
  if ((smoke)); then sizes=(20000 80000); else sizes=(1000000 10000000); fi
  bench_script "$out/diff_cost.txt" bench/diff_cost.sh "$build" "$out/diff_cost.tsv" "${sizes[@]}"
  part diff
fi
cat /proc/loadavg >> "$out/load.txt"
cpu_stat_end=$(head -n1 /proc/stat)
kill $sampler 2> /dev/null || true
# `times`' second line: user and system time of the children, as "1m2.345s 0m0.678s" (into a file: in a
# pipe it would run in a subshell, which has no children).
times > "$out/times.txt"
own_cpu=$(tail -n1 "$out/times.txt" |
  awk '{ s = 0; for (i = 1; i <= 2; ++i) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } print s }')

# What the renderer cannot read from the benchmark JSON.
{
  echo "started=$started"
  echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command=$invocation"
  echo "build=$build"
  echo "record_skipped=${record_skipped:-}"
  echo "attach_skipped=${attach_skipped:-}"
  echo "timing=$timing"
  echo "cpu_stat_start=$cpu_stat_start"
  echo "cpu_stat_end=$cpu_stat_end"
  echo "clk_tck=$(getconf CLK_TCK)"
  echo "own_cpu_s=$own_cpu"
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
