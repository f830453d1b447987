#!/usr/bin/env bash
# `memtrack report` generation time, peak RSS and page size on recordings of 1M and 16M events, beside
# `memtrack stats` on the same artifact (its floor: the same read of every frame and the same heap
# accounting, without the timeline, flame graphs, top tables and HTML). Two kinds of recording:
#   events  realistic events (memtrack-gen-events | memtrack encode: several pids, frees, reallocs,
#           mappings; no call stacks or context records): the timeline and the summary, which are what grow
#           with the events.
#   stacks  bench/churn_deep.c recorded with `memtrack record` (stacks on, the default): 2 threads of
#           malloc/free at a call depth of 24 frames, so every allocation carries a stack id and the artifact
#           holds the stack and symbol tables. One call site: the sites, flame graphs and tables stay small
#           (they are bounded by the pruning and the table length, not by the events); what this adds over
#           `events` is the per-event stack accounting.
#   compile g++ -O1 -c of a C++ file using <regex>, <map> and <iostream>, recorded with `memtrack record`:
#           thousands of sites with deep stacks across several processes, what the site tables, flame graphs
#           and page grow with (one recording, whatever its events; not one of the sizes).
#   procs40 `sh -c 'for i in $(seq 40); do sort /etc/services >/dev/null; done'` recorded with `memtrack
#           record`: 41 processes, what the per-process series, markers and legend grow with, and the
#           widest line of `memtrack stats` and `memtrack top` (their per-process tables and frame lines;
#           issue 23 asks for 100 columns). One recording, at every size including smoke (it takes ~0.3 s).
# 100M is extrapolated from the two sizes by bench/render_performance.py.
#
# usage: bench/report_size.sh [BUILD_DIR] [TSV_OUT] [EVENTS...]
#   BUILD_DIR default build/release (needs bin/memtrack, bin/memtrack-gen-events and the preload library)
#   TSV_OUT   if given (- for none), one line per run: variant events artifact_bytes page_bytes report_wall_s
#             report_user_s report_max_rss_kib stats_wall_s stats_user_s stats_columns top_columns (the
#             widest line of `memtrack stats FILE` and of `memtrack top FILE`, in columns; top_columns 0 for a
#             recording without call stacks, which top cannot rank) (bench/render_performance.py reads it from
#             run_suite.sh's results directory)
#   EVENTS    the recording sizes (default 1048576 16777216); a stacks recording has the events churn_deep
#             makes for EVENTS / 4 operations per thread (a free and a malloc each), within a few events
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-$here/build/release}"
use_tsv "${2:-}"
shift $(($# > 2 ? 2 : $#))
sizes=("$@")
((${#sizes[@]})) || sizes=(1048576 16777216)
[[ -x $build/bin/memtrack-gen-events ]] || { echo "report_size.sh: no $build/bin/memtrack-gen-events (build first)" >&2; exit 2; }
make_work
build_churn_deep "$work"

# measure NAME CMD...: runs CMD with stdout to $work/NAME.out, leaves "wall user max_rss_kib" in $work/NAME.time
measure() {
  local name=$1
  shift
  /usr/bin/time -o "$work/$name.time" -f '%e %U %M' "$@" > "$work/$name.out" 2> "$work/$name.err" ||
    { echo "report_size.sh: $* failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
}

printf 'variant\tevents\tartifact_bytes\tpage_bytes\treport_wall_s\treport_user_s\treport_max_rss_kib\t'
printf 'stats_wall_s\tstats_user_s\tstats_columns\ttop_columns\n'
[[ -z $tsv ]] || : > "$tsv"
cat > "$work/compile.cpp" <<'SRC'
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
int main() {
  std::map<int, std::vector<std::string>> m;
  std::regex r("a+b*");
  std::cout << m.size() << std::regex_match("aab", r) << "\n";
}
SRC
# columns FILE: the widest line of FILE in terminal columns (characters, UTF-8).
columns() { LC_ALL=C.UTF-8 wc -L < "$1"; }

for variant in events stacks compile procs40; do
  for n in "${sizes[@]}"; do
    if [[ $variant == procs40 ]]; then
      [[ $n == "${sizes[0]}" ]] || continue  # one recording
      "$memtrack" record -o "$work/a.mt" -- sh -c 'for i in $(seq 40); do sort /etc/services >/dev/null; done' \
        > /dev/null 2> "$work/record.err" || { cat "$work/record.err" >&2; exit 1; }
      events=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/record.err")
    elif [[ $variant == compile ]]; then
      [[ $n == "${sizes[0]}" ]] || continue  # one recording
      [[ -z ${MEMTRACK_BENCH_SMOKE:-} ]] || continue  # a real compile: not at smoke sizes
      "$memtrack" record -o "$work/a.mt" -- g++ -O1 -c "$work/compile.cpp" -o "$work/compile.o" > /dev/null \
        2> "$work/record.err" || { cat "$work/record.err" >&2; exit 1; }
      events=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/record.err")
    elif [[ $variant == events ]]; then
      "$build/bin/memtrack-gen-events" "$n" | "$memtrack" encode -o "$work/a.mt"
      events=$n
    else
      "$memtrack" record -o "$work/a.mt" -- "$work/churn_deep" 2 $((n / 4)) 24 > /dev/null 2> "$work/record.err" ||
        { cat "$work/record.err" >&2; exit 1; }
      events=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/record.err")
    fi
    measure report "$memtrack" report "$work/a.mt" -o "$work/a.html"
    measure stats "$memtrack" stats "$work/a.mt"
    read -r wall user rss < "$work/report.time"
    read -r swall suser _ < "$work/stats.time"
    scols=$(columns "$work/stats.out")
    tcols=0
    if [[ $variant != events ]]; then  # the others have call stacks
      "$memtrack" top "$work/a.mt" > "$work/top.out" 2> "$work/top.err" || { cat "$work/top.err" >&2; exit 1; }
      tcols=$(columns "$work/top.out")
    fi
    line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$variant" "$events" "$(stat -c %s "$work/a.mt")" \
      "$(stat -c %s "$work/a.html")" "$wall" "$user" "$rss" "$swall" "$suser" "$scols" "$tcols")
    emit "$line"
  done
done
