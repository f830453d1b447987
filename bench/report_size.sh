#!/usr/bin/env bash
# `memtrack report` generation time, peak RSS and page size on recordings of 1M and 16M realistic events
# (memtrack-gen-events, several pids, frees, reallocs, mappings; no call stacks or context records: the
# timeline and the summary, which are what grows with the events; flame graphs and tables are bounded by
# the pruning and the table length, not by the events). 100M is extrapolated from the two.
#
# usage: bench/report_size.sh [BUILD_DIR] [TSV_OUT]
#   BUILD_DIR default build/release (needs bin/memtrack and bin/memtrack-gen-events)
#   TSV_OUT   if given, one line per run: events artifact_bytes page_bytes wall_s user_s max_rss_kib
#             (the columns bench/render_performance.py would read, from run_suite.sh's results directory)
set -euo pipefail
build=${1:-build/release}
tsv=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'events\tartifact_bytes\tpage_bytes\twall_s\tuser_s\tmax_rss_kib\n'
[[ -n $tsv ]] && : > "$tsv"
for n in 1048576 16777216; do
  "$build/bin/memtrack-gen-events" "$n" | "$build/bin/memtrack" encode -o "$dir/a.mt"
  out=$( { /usr/bin/time -f '%e %U %M' "$build/bin/memtrack" report "$dir/a.mt" -o "$dir/a.html" 2>&1 >/dev/null; } | tail -n1)
  read -r wall user rss <<< "$out"
  line=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$n" "$(stat -c %s "$dir/a.mt")" "$(stat -c %s "$dir/a.html")" "$wall" "$user" "$rss")
  echo "$line"
  [[ -n $tsv ]] && echo "$line" >> "$tsv"
done
