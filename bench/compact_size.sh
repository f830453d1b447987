#!/usr/bin/env bash
# Compact against compatible data frames (docs/FORMAT.md, "Compact data frames"), one run:
# - bytes per event of `memtrack record` and `record --compact` (stacks on) of the churn program
#   (tests/integration/programs/churn.c, THREADS x OPS), at the compatible default level (-2), and of
#   `record --compact` at its own default (1); heaptrack's file for the same program beside them;
# - bytes per event of `memtrack encode` and `encode --compact` of N realistic events (memtrack-gen-events) at
#   the same level, and at each encoding's default;
# - encode CPU (user + system, one worker) of the churn recording's events in each encoding at -2, and of
#   reading and writing the raw records alone (`decode --format raw` of a compact artifact is not in it).
#   bench/compact_size.sh [BUILD_DIR] [THREADS] [OPS] [REALISTIC_EVENTS]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/bench/record_common.sh"
use_build "${1:-}"
threads=${2:-2} ops=${3:-2000000} realistic=${4:-2000000}
make_churn_work

per_event() { echo "scale=2; $(stat -c %s "$1") / $2" | bc -l; }
events_of() { "$memtrack" stats --json "$1" | grep -o '"events":[0-9]*' | head -1 | cut -d: -f2; }

prog=("$work/churn" "$threads" "$ops")
"$memtrack" record -q -o "$work/churn.compatible" -- "${prog[@]}" > /dev/null
"$memtrack" record -q --compact --level -2 -o "$work/churn.compact-2" -- "${prog[@]}" > /dev/null
"$memtrack" record -q --compact -o "$work/churn.compact" -- "${prog[@]}" > /dev/null
n=$(events_of "$work/churn.compatible")
echo "churn ${threads}x${ops}, stacks on ($n events): bytes per event"
echo "  record (compatible, level -2)   $(per_event "$work/churn.compatible" "$n")"
echo "  record --compact --level -2     $(per_event "$work/churn.compact-2" "$(events_of "$work/churn.compact-2")")"
echo "  record --compact (level 1)      $(per_event "$work/churn.compact" "$(events_of "$work/churn.compact")")"
if command -v heaptrack > /dev/null; then
  heaptrack -o "$work/ht" "${prog[@]}" > /dev/null 2>&1 || true
  ht=$(ls "$work"/ht*.zst 2> /dev/null | head -1 || true)
  [[ -z $ht ]] || echo "  heaptrack's file                $(per_event "$ht" "$n")"
fi

"$build/bin/memtrack-gen-events" "$realistic" > "$work/realistic.raw"
echo "realistic events ($realistic): bytes per event"
for level in -5 -2 1; do
  "$memtrack" encode --level "$level" -i "$work/realistic.raw" -o "$work/r.compatible"
  "$memtrack" encode --compact --level "$level" -i "$work/realistic.raw" -o "$work/r.compact"
  echo "  level $level: compatible $(per_event "$work/r.compatible" "$realistic")" \
       "compact $(per_event "$work/r.compact" "$realistic")" \
       "ratio $(echo "scale=3; $(stat -c %s "$work/r.compact") / $(stat -c %s "$work/r.compatible")" | bc -l)"
done

"$memtrack" decode --format raw "$work/churn.compatible" -o "$work/churn.raw"
cpu_of() { timed "$@" > /dev/null 2>&1; echo "$cpu"; }
echo "encode CPU of the churn recording's $n events, one worker, level -2 (s; best of 3)"
best() { local b=""; for _ in 1 2 3; do local c; c=$(cpu_of "$@"); [[ -z $b ]] || (( $(echo "$c < $b" | bc -l) )) && b=$c; done; echo "$b"; }
floor=$(best cat "$work/churn.raw")
compatible=$(best "$memtrack" encode --workers 1 --level -2 -i "$work/churn.raw" -o "$work/e.compatible")
compact=$(best "$memtrack" encode --workers 1 --compact --level -2 -i "$work/churn.raw" -o "$work/e.compact")
compact1=$(best "$memtrack" encode --workers 1 --compact -i "$work/churn.raw" -o "$work/e.compact1")
echo "  reading the records (cat)       $floor"
echo "  encode (compatible)             $compatible"
echo "  encode --compact                $compact   ratio $(echo "scale=2; $compact / $compatible" | bc -l)"
echo "  encode --compact (level 1)      $compact1   ratio $(echo "scale=2; $compact1 / $compatible" | bc -l)"
