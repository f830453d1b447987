#!/usr/bin/env bash
# What sampling resident memory costs a recording (issue 29: record's wall time with sampling within 3% of
# `--no-resident` on churn 2 x 4M and on gcc compiling a file; the sampler at most 2% of one core for 10 busy
# processes). Per workload, `memtrack record` (stacks on, the default) and `memtrack record --no-resident`,
# interleaved round by round; medians of wall and CPU (user + system of the recorder and every process it
# ran), and the sampler's own figures from record's summary (samples, polls, its thread's CPU time and its
# share of one core over the recording).
#   churn  tests/integration/programs/churn.c, 2 threads x 4M malloc/realloc/free
#   gcc    g++ -std=c++20 -O2 -c analysis/src/timeline.cpp (cc1plus and as: 3 processes)
#   busy   --no-stacks, sh -c 'resident busy 3000 & x 10; wait' (tests/integration/programs/resident.c: each
#          maps, touches and unmaps 1-16 MiB without a pause, so resident memory always moves: the sampler's
#          worst case); one round
#
# usage: bench/resident_cost.sh [BUILD_DIR] [TSV_OUT] [ROUNDS]
#   BUILD_DIR default build/dev (needs bin/memtrack and the preload library)
#   TSV_OUT   if given (- for none), one line per workload: workload rounds processes on_wall_s off_wall_s
#             on_cpu_s off_cpu_s samples polls sampler_cpu_s sampler_share_pct (the sampler's figures: the
#             medians over the rounds with sampling); bench/render_performance.py reads it
#   ROUNDS    rounds of churn and gcc (default 3)
# With MEMTRACK_BENCH_SMOKE=1 (run_suite.sh --smoke) the workloads shrink: churn 2 x 200,000, gcc -O2 -c of
# churn.c, busy 300 ms.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-}"
use_tsv "${2:-}"
rounds=${3:-3}
make_churn_work
cc -O2 "$here/tests/integration/programs/resident.c" -o "$work/resident"

# sampler_figures FILE: "samples polls cpu_s share_pct" from record's summary in FILE.
sampler_figures() {
  sed -n 's/.*, \([0-9]*\) samples\? of resident memory (\([0-9]*\) polls\?, \([0-9.]*\) ms of CPU, \([0-9.]*\)% of one core).*/\1 \2 \3 \4/p' "$1" |
    awk '{printf "%s %s %.4f %s\n", $1, $2, $3 / 1000, $4}'
}

# workload NAME ROUNDS [RECORD_OPTION...] -- CMD...: the interleaved rounds; one TSV line.
workload() {
  local name=$1 n=$2
  shift 2
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  rm -f "$work"/"$name".*
  for ((r = 1; r <= n; r++)); do
    for side in on off; do
      local extra=()
      [[ $side == off ]] && extra=(--no-resident)
      run "$name.$side" "$memtrack" record "${opts[@]}" "${extra[@]}" -o "$work/a.mt" -- "$@" ||
        { echo "resident_cost.sh: recording $name failed:" >&2; cat "$work/$name.$side.err" >&2; exit 1; }
      [[ $side == on ]] && sampler_figures "$work/$name.on.err" >> "$work/$name.sampler"
    done
  done
  if [[ ! -s $work/$name.sampler ]]; then
    # At smoke sizes a recording can end before the sampler's first sample (a loaded machine): say so and
    # go on with zeros, so the smoke run checks the script and the renderer. A full run must have samples.
    if [[ ${MEMTRACK_BENCH_SMOKE:-0} == 1 ]]; then
      echo "resident_cost.sh: $name ended before its first resident sample (smoke size); its sampler figures are 0" >&2
      echo "0 0 0.0000 0" > "$work/$name.sampler"
    else
      echo "resident_cost.sh: no sampler figures in record's summary:" >&2; cat "$work/$name.on.err" >&2; exit 1
    fi
  fi
  local line processes
  processes=$(sed -n 's/.* events from \([0-9]*\) process.*/\1/p' "$work/$name.on.err")
  line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$name" "$n" "$processes" \
    "$(median < "$work/$name.on.times")" "$(median < "$work/$name.off.times")" \
    "$(median < "$work/$name.on.cpu")" "$(median < "$work/$name.off.cpu")" \
    "$(cut -d' ' -f1 "$work/$name.sampler" | median)" "$(cut -d' ' -f2 "$work/$name.sampler" | median)" \
    "$(cut -d' ' -f3 "$work/$name.sampler" | median)" "$(cut -d' ' -f4 "$work/$name.sampler" | median)")
  echo "$line"
  if [[ -n $tsv ]]; then echo "$line" >> "$tsv"; fi
}

printf 'workload\trounds\tprocesses\ton_wall_s\toff_wall_s\ton_cpu_s\toff_cpu_s\tsamples\tpolls\tsampler_cpu_s\tsampler_share_pct\n'
if [[ -n $tsv ]]; then : > "$tsv"; fi
if [[ ${MEMTRACK_BENCH_SMOKE:-0} == 1 ]]; then
  workload churn "$rounds" -- "$work/churn" 2 200000
  workload gcc "$rounds" -- gcc -O2 -c "$here/tests/integration/programs/churn.c" -o "$work/churn.o"
  busy_ms=300
else
  workload churn "$rounds" -- "$work/churn" 2 4000000
  workload gcc "$rounds" -- g++ -std=c++20 -O2 -c "$here/analysis/src/timeline.cpp" -I "$here/analysis/include" \
    -I "$here/codec/include" -o "$work/timeline.o"
  busy_ms=3000
fi
workload busy 1 --no-stacks -- sh -c "for i in 1 2 3 4 5 6 7 8 9 10; do '$work/resident' busy $busy_ms > /dev/null & done; wait"
