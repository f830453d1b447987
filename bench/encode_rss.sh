#!/usr/bin/env bash
# Peak RSS of `memtrack encode` on 4M realistic events read from a pipe, at 1, 4, 16 and 64 workers
# (issue 3: at most 64 MiB each, and 64 workers within 1.25x of 4). Exits 1 if a limit is exceeded.
# usage: bench/encode_rss.sh [BUILD_DIR]   (default build/release; needs bin/memtrack and tests/memtrack-gen-events)
set -euo pipefail
build=${1:-build/release}
raw=$(mktemp --suffix=.raw)
trap 'rm -f "$raw"' EXIT
"$build/tests/memtrack-gen-events" 4194304 > "$raw"

declare -A rss
for w in 1 4 16 64; do
  # GNU time reports the largest RSS of the process it runs: memtrack, not cat.
  out=$(cat "$raw" | /usr/bin/time -f '%M %e %U %S' "$build/bin/memtrack" encode --workers "$w" -o /dev/null 2>&1 >/dev/null)
  read -r kib wall user sys <<< "$(tail -n1 <<< "$out")"
  rss[$w]=$kib
  printf 'workers %2d: peak RSS %6.1f MiB (%s KiB), %s s wall, %s s user, %s s sys\n' \
    "$w" "$(bc -l <<< "$kib / 1024")" "$kib" "$wall" "$user" "$sys"
done
status=0
for w in 1 4 16 64; do
  if (( rss[$w] > 64 * 1024 )); then echo "FAIL: workers $w above 64 MiB"; status=1; fi
done
ratio=$(bc -l <<< "${rss[64]} / ${rss[4]}")
printf '64 workers / 4 workers: %.2fx\n' "$ratio"
if (( $(bc -l <<< "$ratio > 1.25") )); then echo "FAIL: 64 workers above 1.25x of 4"; status=1; fi
exit $status
