#!/usr/bin/env bash
# Peak RSS of `memtrack encode` on 4M realistic events read from a pipe, at 1, 4, 16 and 64 workers
# (issue 3: at most 64 MiB each, and 64 workers within 1.25x of 4). Exits 1 if a limit is exceeded.
# Each worker count also runs with mimalloc preloaded (LD_PRELOAD of Debian's libmimalloc.so.2, the same
# dynamic override that linking it would give), so one run shows whether mimalloc pays (issue 3).
# Two more runs at 4 workers with --in-flight 2 and 8 give the resident cost of one in-flight slot.
# Runs are interleaved round by round so background load hits every configuration alike.
#
# usage: bench/encode_rss.sh [BUILD_DIR] [TSV_OUT] [ROUNDS]
#   BUILD_DIR default build/release (needs bin/memtrack and bin/memtrack-gen-events)
#   TSV_OUT   if given, one line per run: allocator workers in_flight round max_rss_kib wall_s user_s sys_s
#             (in_flight 0: K derived from the default memory budget)
#             (bench/render_performance.py reads it)
#   ROUNDS    default 3
set -euo pipefail
build=${1:-build/release}
tsv=${2:-}
rounds=${3:-3}
mimalloc=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
raw=$(mktemp --suffix=.raw)
runs=$(mktemp)
trap 'rm -f "$raw" "$runs"' EXIT
"$build/bin/memtrack-gen-events" 4194304 > "$raw"

allocators=(glibc)
[[ -e $mimalloc ]] && allocators+=(mimalloc)
# run ALLOCATOR WORKERS IN_FLIGHT ROUND: one `memtrack encode` of the events from a pipe, appended to $runs.
run() {
  local preload="" opts=(--workers "$2")
  [[ $1 == mimalloc ]] && preload=$mimalloc
  (($3)) && opts+=(--in-flight "$3")
  # GNU time reports the largest RSS of the process it runs: memtrack, not cat.
  out=$(cat "$raw" | LD_PRELOAD=$preload /usr/bin/time -f '%M %e %U %S' "$build/bin/memtrack" encode "${opts[@]}" \
        -o /dev/null 2>&1 > /dev/null)
  read -r kib wall user sys <<< "$(tail -n1 <<< "$out")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$kib" "$wall" "$user" "$sys" >> "$runs"
}
for ((r = 1; r <= rounds; r++)); do
  for w in 1 4 16 64; do
    for a in "${allocators[@]}"; do run "$a" "$w" 0 "$r"; done
  done
  for k in 2 8; do run glibc 4 "$k" "$r"; done
done
[[ -n $tsv ]] && cp "$runs" "$tsv"

# The shipped allocator (glibc): the largest peak over the rounds, per worker count.
declare -A rss
for w in 1 4 16 64; do
  rss[$w]=$(awk -v w="$w" '$1 == "glibc" && $2 == w && $3 == 0 && $5 > m {m = $5} END {print m}' "$runs")
  printf 'workers %2d: peak RSS %6.1f MiB (%s KiB, largest of %d runs)\n' "$w" "$(bc -l <<< "${rss[$w]} / 1024")" \
    "${rss[$w]}" "$rounds"
done
status=0
for w in 1 4 16 64; do
  if ((rss[$w] > 64 * 1024)); then echo "FAIL: workers $w above 64 MiB"; status=1; fi
done
ratio=$(bc -l <<< "${rss[64]} / ${rss[4]}")
printf '64 workers / 4 workers: %.2fx\n' "$ratio"
if (($(bc -l <<< "$ratio > 1.25"))); then echo "FAIL: 64 workers above 1.25x of 4"; status=1; fi
exit $status
