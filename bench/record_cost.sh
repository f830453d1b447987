#!/usr/bin/env bash
# Recording cost (issue 26) in one run, as ratios:
#   process    per process: sh -c 'for i in $(seq N); do git --version >/dev/null; done' natively, under
#              `memtrack record --no-stacks` and under `memtrack record` (stacks, the default), interleaved round
#              by round; wall time and minor page faults (GNU time %R: the command and every process it waited
#              for, the recorder included)
#   threads    per event at 1, 2, 4 and 8 threads: the same total of operations (tests/integration/programs/
#              churn.c: one malloc, realloc or free each, so one event each) split over T threads, natively,
#              under heaptrack and under `memtrack record` (stacks on), interleaved; wall ns per event and the
#              recording's extra ns per event ((recorded - native) / events)
#   transport  the transport alone (bench/transport_floor.c: P producers pushing 48-byte events through a ring
#              like the runtime's to one consumer, through a pipe in 85-event batches, and through per-thread
#              rings merged by timestamp) at P = 1, 2, 4, 8,
#              the same total of events split over P; ns per event, one run per P
#
# usage: bench/record_cost.sh [BUILD_DIR] [TSV_OUT] [ROUNDS]
#   BUILD_DIR default build/dev (needs bin/memtrack and the preload library; heaptrack and git installed)
#   TSV_OUT   if given (- for none), one `key value` line per figure (medians over the rounds); bench/
#             render_performance.py reads it
#   ROUNDS    interleaved rounds of the process and thread workloads (default 3)
# With MEMTRACK_BENCH_SMOKE=1 (run_suite.sh --smoke) the workloads shrink: 5 git processes, 20,000 events per
# thread count, 20,000 transport events.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-}"
use_tsv "${2:-}"
rounds=${3:-3}
require_installed heaptrack
require_installed git
make_churn_work
cc -O2 -pthread "$here/bench/transport_floor.c" -o "$work/transport_floor"

if [[ ${MEMTRACK_BENCH_SMOKE:-0} == 1 ]]; then
  procs=5 events=20000 transport_events=20000
else
  procs=100 events=4000000 transport_events=4000000
fi
thread_counts=(1 2 4 8)

# faulted NAME CMD...: run NAME CMD... (wall and CPU to $work/NAME.times and .cpu), and CMD's minor page faults
# to $work/NAME.faults.
faulted() {
  local name=$1
  shift
  /usr/bin/time -o "$work/time" -f "%e %U %S %R" "$@" > "$work/$name.out" 2> "$work/$name.err" ||
    { echo "record_cost.sh: $name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  local wall user sys faults
  read -r wall user sys faults < "$work/time"
  echo "$wall" >> "$work/$name.times"
  echo "$user + $sys" | bc -l >> "$work/$name.cpu"
  echo "$faults" >> "$work/$name.faults"
}

# recorded_events ERR: the event count of record's summary in ERR.
recorded_events() { sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$1"; }

if [[ -n $tsv ]]; then : > "$tsv"; fi
emit rounds "$rounds"

# ------------------------------------------------------------------------------------------------ per process
loop="for i in \$(seq $procs); do git --version > /dev/null; done"
for ((r = 1; r <= rounds; r++)); do
  faulted proc_native sh -c "$loop"
  faulted proc_nostacks "$memtrack" record --no-stacks -o "$work/p.mt" -- sh -c "$loop"
  faulted proc_stacks "$memtrack" record -o "$work/p.mt" -- sh -c "$loop"
done
emit proc_git_processes "$procs"
emit proc_processes "$(sed -n 's/.* events from \([0-9]*\) process.*/\1/p' "$work/proc_stacks.err")"
for side in native nostacks stacks; do
  emit "proc_${side}_wall" "$(median < "$work/proc_$side.times")"
  emit "proc_${side}_cpu" "$(median < "$work/proc_$side.cpu")"
  emit "proc_${side}_faults" "$(median < "$work/proc_$side.faults")"
done

# ------------------------------------------------------------------------------------------------ per thread
lost_total=0
for ((r = 1; r <= rounds; r++)); do
  for t in "${thread_counts[@]}"; do
    ops=$((events / t))
    faulted "thr${t}_native" "$work/churn" "$t" "$ops"
    faulted "thr${t}_heaptrack" heaptrack -o "$work/ht" "$work/churn" "$t" "$ops"
    rm -f "$work"/ht*
    faulted "thr${t}_memtrack" "$memtrack" record -o "$work/t.mt" -- "$work/churn" "$t" "$ops"
    expected=$(awk '/^events/ {print $2}' "$work/thr${t}_memtrack.out")
    recorded=$(recorded_events "$work/thr${t}_memtrack.err")
    # The artifact also holds the C runtime's own few allocations: only fewer than expected is a loss.
    lost=$((expected > recorded ? expected - recorded : 0))
    lost_total=$((lost_total + lost))
    echo "$expected" > "$work/thr${t}.events"
  done
done
for t in "${thread_counts[@]}"; do
  emit "thr${t}_events" "$(cat "$work/thr${t}.events")"
  for side in native heaptrack memtrack; do
    emit "thr${t}_${side}_wall" "$(median < "$work/thr${t}_$side.times")"
    emit "thr${t}_${side}_cpu" "$(median < "$work/thr${t}_$side.cpu")"
  done
done
emit thr_lost_events "$lost_total"

# ------------------------------------------------------------------------------------------------- transport
for p in "${thread_counts[@]}"; do
  line=$("$work/transport_floor" "$p" $((transport_events / p)))
  echo "$line" >&2
  emit "transport${p}_ring_ns" "$(sed -n 's/.*: ring \([0-9.]*\) ns\/event.*/\1/p' <<< "$line")"
  emit "transport${p}_pipe_ns" "$(sed -n 's/.*pipe (85-event batches) \([0-9.]*\) ns\/event.*/\1/p' <<< "$line")"
  emit "transport${p}_merge_ns" "$(sed -n 's/.*merge (per-thread rings by timestamp) \([0-9.]*\) ns\/event.*/\1/p' <<< "$line")"
done
emit transport_events "$transport_events"
