#!/usr/bin/env bash
# `memtrack record` of the allocation-churn program at several zstd levels, interleaved round by round:
# median wall and CPU time, and artifact bytes per event. The basis of record's default level
# (runtime::kDefaultRecordLevel).
#
#   bench/record_levels.sh [BUILD_DIR] [ROUNDS] [OPS_PER_THREAD] [LEVEL...]
#   defaults:             build/dev   5        4000000          -5 -3 -2 -1 1
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-}"
rounds=${2:-5}
ops=${3:-4000000}
shift $(($# < 3 ? $# : 3))
levels=("$@")
((${#levels[@]})) || levels=(-5 -3 -2 -1 1)

make_churn_work

for ((r = 1; r <= rounds; r++)); do
  for level in "${levels[@]}"; do
    timed "$memtrack" record --level "$level" -o "$work/a.msgpack" -- "$work/churn" 2 "$ops" > "$work/out" 2> /dev/null
    events=$(awk '/^events/ {print $2}' "$work/out")
    echo "$level $wall $cpu $(stat -c %s "$work/a.msgpack") $events"
  done
done > "$work/runs"

echo "memtrack record of churn, 2 threads x $ops operations, $rounds interleaved rounds, medians"
printf '  level      wall       CPU   B/event   wall x level %s\n' "${levels[0]}"
base=$(median_where "$work/runs" 2 "${levels[0]}")
for level in "${levels[@]}"; do
  wall=$(median_where "$work/runs" 2 "$level")
  cpu=$(median_where "$work/runs" 3 "$level")
  per_event=$(awk -v l="$level" '$1 == l {print $4 / $5}' "$work/runs" | tail -1)
  printf '  %5s  %7.3f s  %6.3f s  %8.1f   %.2fx\n' "$level" "$wall" "$cpu" "$per_event" "$(echo "$wall / $base" | bc -l)"
done
