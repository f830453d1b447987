#!/usr/bin/env bash
# Two builds of memtrack (say, before and after a change) recording the allocation-churn program,
# interleaved round by round: median wall and CPU time of each, full recording and transport only
# (MEMTRACK_RECORD_DISCARD=1), and B as a ratio to A from the same rounds. With `-- CMD...`, the two record CMD
# instead (a real program: `-- make -s -B -j2 -C DIR`, `-- g++ -O1 -c one.cpp`; full recording only), each
# with the preload of its own build.
#
#   bench/record_ab.sh BUILD_A BUILD_B [ROUNDS] [THREADS] [OPS_PER_THREAD]
#   defaults:                          5        2         4000000
#   bench/record_ab.sh BUILD_A BUILD_B ROUNDS -- CMD...
# MEMTRACK_AB_REPEAT=N: each timed run is N recordings of CMD in a row (for a command whose recording is
# shorter than GNU time's 10 ms resolution: `MEMTRACK_AB_REPEAT=20 bench/record_ab.sh A B 5 -- git --version`
# measures a recording's fixed cost).
# A build of an older commit: git worktree add /tmp/old COMMIT && cmake -S /tmp/old -B /tmp/old/build
#   -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/build --target memtrack memtrack_preload
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
usage="usage: bench/record_ab.sh BUILD_A BUILD_B [ROUNDS] [THREADS] [OPS_PER_THREAD] | BUILD_A BUILD_B ROUNDS -- CMD..."
(($# >= 2)) || { echo "$usage" >&2; exit 2; }
builds=("$(cd "$1" && pwd)" "$(cd "$2" && pwd)")
rounds=${3:-5}
repeat=${MEMTRACK_AB_REPEAT:-1}
command=()
modes=(full transport)
if (($# >= 4)) && [[ $4 == -- ]]; then
  shift 4
  (($# > 0)) || { echo "$usage" >&2; exit 2; }
  command=("$@")
  modes=(full)
else
  threads=${4:-2}
  ops=${5:-4000000}
fi
for b in "${builds[@]}"; do require_memtrack "$b"; done

if ((${#command[@]} == 0)); then
  make_churn_work
  command=("$work/churn" "$threads" "$ops")
  what="churn, $threads threads x $ops operations"
else
  make_work
  what="${command[*]}"
fi

for ((r = 1; r <= rounds; r++)); do
  for side in 0 1; do
    for mode in "${modes[@]}"; do
      discard=$([[ $mode == transport ]] && echo 1 || echo 0)
      MEMTRACK_RECORD_DISCARD=$discard timed sh -c 'n=$1; shift; for _ in $(seq "$n"); do "$@" || exit; done' sh \
        "$repeat" "${builds[$side]}/bin/memtrack" record -o "$work/a.msgpack" -- "${command[@]}" > /dev/null 2>&1
      echo "$side $mode $wall $cpu"
    done
  done
done > "$work/runs"

echo "$what, $rounds interleaved rounds, medians$( ((repeat > 1)) && echo ", $repeat recordings per timed run")"
echo "  A = ${builds[0]}"
echo "  B = ${builds[1]}"
printf '  %-10s %9s %9s %9s %9s %8s %8s\n' "" "A wall" "B wall" "A CPU" "B CPU" "B/A wall" "B/A CPU"
for mode in "${modes[@]}"; do
  aw=$(median_where "$work/runs" 3 0 $mode) bw=$(median_where "$work/runs" 3 1 $mode)
  ac=$(median_where "$work/runs" 4 0 $mode) bc_=$(median_where "$work/runs" 4 1 $mode)
  printf '  %-10s %7.3f s %7.3f s %7.3f s %7.3f s %7.2fx %7.2fx\n' "$mode" "$aw" "$bw" "$ac" "$bc_" \
    "$(echo "$bw / $aw" | bc -l)" "$(echo "$bc_ / $ac" | bc -l)"
done
