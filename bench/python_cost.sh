#!/usr/bin/env bash
# What Python frames in stacks cost (issue 28, docs/RUNTIME.md "Python programs"), on Debian's /usr/bin/python3
# (not a pyenv shim), in one run, as ratios. Two workloads:
#   json    bench/python/json_regex.py: a dict of 40,000 records through json.dumps/loads, re.findall and
#           re.sub, 3 rounds
#   pytest  `python3 -m pytest -q -p no:cacheprovider` of bench/python/pytest_suite (10 small tests), copied
#           to a temporary directory, with PYTHONDONTWRITEBYTECODE=1 so every run collects, rewrites and
#           compiles alike
# each run five ways, interleaved round by round: natively; natively with PYTHONMALLOC=malloc (what the
# program's own CPU is with the system allocator: the ratio of the two recordings below includes it); under
# `memtrack record` with native-only stacks
# (MEMTRACK_PYTHON_FRAMES=0 in the environment, the preload's knob for this measurement); under `memtrack
# record` (Python frames in stacks, the default); and under `memtrack record --python-malloc` (Python frames,
# the objects from malloc). Wall and CPU time are GNU time's, of the whole command (the recorder and the
# program); events and stack nodes come from record's summary line, and `full` (1 in any round) from the
# preload's line saying the trace tree filled up.
#
# usage: [MEMTRACK_BENCH_PYTHON=PYTHON] bench/python_cost.sh [BUILD_DIR] [TSV_OUT] [ROUNDS]
#   BUILD_DIR default build/dev (needs bin/memtrack and the preload library; /usr/bin/python3 with pytest)
#   TSV_OUT   if given (- for none), one `key value` line per figure (medians over the rounds); bench/
#             render_performance.py reads it (section "Python programs")
#   ROUNDS    interleaved rounds (default 5)
# With MEMTRACK_BENCH_SMOKE=1 (run_suite.sh --smoke) the JSON script shrinks to 2,000 records, 1 round.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-}"
use_tsv "${2:-}"
rounds=${3:-5}
# MEMTRACK_BENCH_PYTHON: another interpreter (say pyenv's python3.12, whose frame layout the preload also
# knows); without pytest it runs the JSON script only.
python=${MEMTRACK_BENCH_PYTHON:-/usr/bin/python3}
[[ -x $python ]] || { echo "python_cost.sh: no $python" >&2; exit 2; }
workloads=(json pytest)
if ! "$python" -m pytest --version > /dev/null 2>&1; then
  [[ -n ${MEMTRACK_BENCH_PYTHON:-} ]] ||
    { echo "python_cost.sh: $python has no pytest (apt-get install python3-pytest)" >&2; exit 2; }
  echo "python_cost.sh: $python has no pytest: the JSON script only" >&2
  workloads=(json)
fi
make_work
cp -r "$here/bench/python/pytest_suite" "$work/suite"
export PYTHONDONTWRITEBYTECODE=1

if [[ ${MEMTRACK_BENCH_SMOKE:-0} == 1 ]]; then json_args=(2000 1); else json_args=(40000 3); fi
modes=(native nativemalloc nopy py pymalloc)

# command WORKLOAD: the program's command line, into the array cmd.
command_of() {
  case $1 in
    json) cmd=("$python" "$here/bench/python/json_regex.py" "${json_args[@]}") ;;
    pytest) cmd=("$python" -m pytest -q -p no:cacheprovider "$work/suite") ;;
  esac
}

# one WORKLOAD MODE: one timed run, its wall and CPU to $work/WORKLOAD_MODE.times and .cpu, the summary's
# events and stack nodes to .events and .nodes.
one() {
  local w=$1 m=$2 name=$1_$2
  command_of "$w"
  local rec=("$memtrack" record -o "$work/a.mt")
  case $m in
    native) run "$name" env MEMTRACK_PYTHON_FRAMES=1 "${cmd[@]}" ;;
    nativemalloc) run "$name" env PYTHONMALLOC=malloc "${cmd[@]}" ;;
    nopy) run "$name" env MEMTRACK_PYTHON_FRAMES=0 "${rec[@]}" -- "${cmd[@]}" ;;
    py) run "$name" "${rec[@]}" -- "${cmd[@]}" ;;
    pymalloc) run "$name" "${rec[@]}" --python-malloc -- "${cmd[@]}" ;;
  esac
  if [[ $m != native* ]]; then
    # record's summary line: "memtrack record: N events from ..., M stack nodes, ...".
    local ev nodes
    ev=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/$name.err")
    nodes=$(sed -n 's/^memtrack record: .* \([0-9]*\) stack nodes.*/\1/p' "$work/$name.err")
    [[ -n $ev && -n $nodes ]] || { echo "python_cost.sh: no summary from $name:" >&2; cat "$work/$name.err" >&2; exit 1; }
    echo "$ev" >> "$work/$name.events"
    echo "$nodes" >> "$work/$name.nodes"
    # The preload says when the trace tree filled up (stacks past it cut to their longest known prefix).
    if grep -q 'the trace tree is full' "$work/$name.err"; then echo 1; else echo 0; fi >> "$work/$name.full"
  fi
}

if [[ -n $tsv ]]; then : > "$tsv"; fi
emit rounds "$rounds"
emit json_records "${json_args[0]}"
emit json_rounds "${json_args[1]}"

for ((r = 1; r <= rounds; r++)); do
  for w in "${workloads[@]}"; do
    for m in "${modes[@]}"; do
      one "$w" "$m"
    done
    echo "round $r $w: $(for m in "${modes[@]}"; do printf '%s %ss/%ss ' "$m" "$(tail -1 "$work/${w}_$m.times")" \
      "$(tail -1 "$work/${w}_$m.cpu")"; done)(wall/CPU)" >&2
  done
done
for w in "${workloads[@]}"; do
  for m in "${modes[@]}"; do
    emit "${w}_${m}_wall" "$(median < "$work/${w}_$m.times")"
    emit "${w}_${m}_cpu" "$(median < "$work/${w}_$m.cpu")"
    if [[ $m != native* ]]; then
      emit "${w}_${m}_events" "$(median < "$work/${w}_$m.events")"
      emit "${w}_${m}_nodes" "$(median < "$work/${w}_$m.nodes")"
      emit "${w}_${m}_full" "$(sort -n "$work/${w}_$m.full" | tail -n1)"
    fi
  done
done
