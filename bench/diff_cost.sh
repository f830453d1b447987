#!/usr/bin/env bash
# `memtrack diff` beside `memtrack stats` of the same two files (issue 24: diff of two 10M-event recordings
# with stacks at most 1.5x stats of both, memory bounded by sites, not events). Per size, bench/churn_deep.c
# recorded twice with `memtrack record` (stacks on, the default: 2 threads of malloc/free at a call depth of
# 24 frames, so every event carries a stack id), then, one run each: `memtrack stats` of each recording and
# `memtrack diff` of the two. The ratio is diff's CPU (user + system) to the two stats runs' together; the
# peak RSS of diff beside the larger of the two stats runs'. Two sizes show whether memory follows the events.
#
# usage: bench/diff_cost.sh [BUILD_DIR] [TSV_OUT] [EVENTS...]
#   BUILD_DIR default build/release (needs bin/memtrack and the preload library)
#   TSV_OUT   if given (- for none), one line per size: events artifact_bytes diff_wall_s diff_cpu_s
#             diff_max_rss_kib stats_wall_s stats_cpu_s stats_max_rss_kib (stats: both runs' wall and CPU
#             summed, the larger peak RSS); bench/render_performance.py reads it from run_suite.sh's results
#   EVENTS    the recording sizes (default 1000000 10000000); a recording has the events churn_deep makes for
#             EVENTS / 4 operations per thread (a free and a malloc each), within a few events
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-$here/build/release}"
use_tsv "${2:-}"
shift $(($# > 2 ? 2 : $#))
sizes=("$@")
((${#sizes[@]})) || sizes=(1000000 10000000)
make_work
build_churn_deep "$work"

# measure NAME CMD...: runs CMD with stdout discarded, leaves "wall user system max_rss_kib" in $work/NAME.time
measure() {
  local name=$1
  shift
  /usr/bin/time -o "$work/$name.time" -f '%e %U %S %M' "$@" > /dev/null 2> "$work/$name.err" ||
    { echo "diff_cost.sh: $* failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
}

printf 'events\tartifact_bytes\tdiff_wall_s\tdiff_cpu_s\tdiff_max_rss_kib\tstats_wall_s\tstats_cpu_s\tstats_max_rss_kib\n'
[[ -z $tsv ]] || : > "$tsv"
for n in "${sizes[@]}"; do
  for side in base head; do
    "$memtrack" record -o "$work/$side.mt" -- "$work/churn_deep" 2 $((n / 4)) 24 > /dev/null 2> "$work/record.err" ||
      { cat "$work/record.err" >&2; exit 1; }
  done
  events=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/record.err")
  measure stats_base "$memtrack" stats "$work/base.mt"
  measure stats_head "$memtrack" stats "$work/head.mt"
  measure diff "$memtrack" diff "$work/base.mt" "$work/head.mt"
  read -r dwall duser dsys drss < "$work/diff.time"
  read -r bwall buser bsys brss < "$work/stats_base.time"
  read -r hwall huser hsys hrss < "$work/stats_head.time"
  line=$(awk -v e="$events" -v a="$(stat -c %s "$work/head.mt")" -v dw="$dwall" -v du="$duser" -v ds="$dsys" \
    -v dr="$drss" -v bw="$bwall" -v bu="$buser" -v bs="$bsys" -v br="$brss" -v hw="$hwall" -v hu="$huser" \
    -v hs="$hsys" -v hr="$hrss" 'BEGIN {
      printf "%s\t%s\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%s", e, a, dw, du + ds, dr, bw + hw, bu + bs + hu + hs,
        (br > hr ? br : hr) }')
  emit "$line"
done
