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
build=${1:-build/release}
tsv=${2:-}
if [[ $tsv == - ]]; then tsv=""; fi
shift $(($# > 2 ? 2 : $#))
sizes=("$@")
((${#sizes[@]})) || sizes=(1000000 10000000)
memtrack=$build/bin/memtrack
[[ -x $memtrack ]] || { echo "diff_cost.sh: no $memtrack (build first)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cc -O2 -fomit-frame-pointer -pthread "$here/bench/churn_deep.c" -o "$dir/churn_deep"

# timed NAME CMD...: runs CMD with stdout discarded, leaves "wall user system max_rss_kib" in $dir/NAME.time
timed() {
  local name=$1
  shift
  /usr/bin/time -o "$dir/$name.time" -f '%e %U %S %M' "$@" > /dev/null 2> "$dir/$name.err" ||
    { echo "diff_cost.sh: $* failed:" >&2; cat "$dir/$name.err" >&2; exit 1; }
}

printf 'events\tartifact_bytes\tdiff_wall_s\tdiff_cpu_s\tdiff_max_rss_kib\tstats_wall_s\tstats_cpu_s\tstats_max_rss_kib\n'
if [[ -n $tsv ]]; then : > "$tsv"; fi
for n in "${sizes[@]}"; do
  for side in base head; do
    "$memtrack" record -o "$dir/$side.mt" -- "$dir/churn_deep" 2 $((n / 4)) 24 > /dev/null 2> "$dir/record.err" ||
      { cat "$dir/record.err" >&2; exit 1; }
  done
  events=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$dir/record.err")
  timed stats_base "$memtrack" stats "$dir/base.mt"
  timed stats_head "$memtrack" stats "$dir/head.mt"
  timed diff "$memtrack" diff "$dir/base.mt" "$dir/head.mt"
  read -r dwall duser dsys drss < "$dir/diff.time"
  read -r bwall buser bsys brss < "$dir/stats_base.time"
  read -r hwall huser hsys hrss < "$dir/stats_head.time"
  line=$(awk -v e="$events" -v a="$(stat -c %s "$dir/head.mt")" -v dw="$dwall" -v du="$duser" -v ds="$dsys" \
    -v dr="$drss" -v bw="$bwall" -v bu="$buser" -v bs="$bsys" -v br="$brss" -v hw="$hwall" -v hu="$huser" \
    -v hs="$hsys" -v hr="$hrss" 'BEGIN {
      printf "%s\t%s\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%s", e, a, dw, du + ds, dr, bw + hw, bu + bs + hu + hs,
        (br > hr ? br : hr) }')
  echo "$line"
  if [[ -n $tsv ]]; then echo "$line" >> "$tsv"; fi
done
