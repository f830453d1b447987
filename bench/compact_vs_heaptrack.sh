#!/usr/bin/env bash
# Compact artifacts against compatible ones and heaptrack's file (issue 25), one run per workload:
# - each program recorded with `memtrack record` (compatible, its default level -2) and `record --compact`
#   (its default level 1), stacks on (the default), and under `heaptrack -o` (its .zst file's size);
# - the recording's events (`decode --format raw`) encoded by one worker at level 1 in each encoding: the
#   CPU of serialize + compress, as `memtrack encode --stats` reports it (the encode stage's thread CPU time
#   per frame, summed: reading and unpacking the records, the same for both encodings, is not in it);
# - `memtrack stats` CPU of the compatible recording and of its conversion to compact (the same events; decode
#   and heap accounting).
# The encode CPU figures are medians of 5 runs, the stats CPU of 3, compatible and compact interleaved.
# Workloads: churn (tests/integration/programs/churn.c) 2 threads x 2M and x 5M operations, sqlite3, perl, jq and
# python3 --python-malloc when installed (a fixed script each, below), and N realistic events from
# memtrack-gen-events (encode only: no program, no heaptrack).
#
# usage: bench/compact_vs_heaptrack.sh [BUILD_DIR] [TSV_OUT] [REALISTIC_EVENTS]
#   BUILD_DIR default build/dev (needs bin/memtrack, bin/memtrack-gen-events and the preload library)
#   TSV_OUT   if given (- for none), the lines below without the header; bench/render_performance.py
#             --section compact reads it as compact.tsv
#   prints one line per workload: name events compatible_bytes compact_bytes heaptrack_bytes
#   encode_compatible_cpu_s encode_compact_cpu_s stats_compatible_cpu_s stats_compact_cpu_s (heaptrack_bytes
#   0 and stats 0 where there is none); then one line "record", "churn 2x4M", events, and the medians of
#   record's wall and CPU and of record --compact's over 3 interleaved rounds
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/bench/record_common.sh"
use_build "${1:-}"
use_tsv "${2:-}"
realistic=${3:-2000000}
require_installed heaptrack
make_churn_work

cpu_of() { timed "$@" > /dev/null 2> "$work/cpu.err" || { cat "$work/cpu.err" >&2; exit 1; }; echo "$cpu"; }
events_of() { "$memtrack" stats --json "$1" | grep -o '"events":[0-9]*' | head -1 | cut -d: -f2; }

# interleaved MEASURE ROUNDS "ARGS_A" "ARGS_B": "A B", the medians of `MEASURE ARGS_A` and `MEASURE ARGS_B` over
# ROUNDS interleaved runs (A B A B ...); each ARGS a string split as words (no quoting inside).
interleaved() {
  local measure=$1 rounds=$2 a=() b=() r
  for ((r = 0; r < rounds; r++)); do
    # shellcheck disable=SC2086 # split on purpose
    a+=("$($measure $3)")
    # shellcheck disable=SC2086
    b+=("$($measure $4)")
  done
  echo "$(printf '%s\n' "${a[@]}" | median)" "$(printf '%s\n' "${b[@]}" | median)"
}

# pair_cpu "CMD_A" "CMD_B": "A B", the medians of their CPU over 3 interleaved runs.
pair_cpu() { interleaved cpu_of 3 "$1" "$2"; }

# stage_cpu ARGS...: the encode stage's CPU seconds of `memtrack encode --stats ARGS...`.
stage_cpu() {
  "$memtrack" encode --stats "$@" 2> "$work/stage.err" || { cat "$work/stage.err" >&2; exit 1; }
  grep -o 'encode-cpu-ms [0-9.]*' "$work/stage.err" | awk '{printf "%.4f\n", $2 / 1000}'
}

# encode_cpu RAW: "compatible compact" encode-stage CPU of RAW's records at level 1, one worker (medians of
# 5 interleaved runs).
encode_cpu() {
  interleaved stage_cpu 5 "--workers 1 --level 1 -i $1 -o $work/e.compatible" \
    "--workers 1 --compact --level 1 -i $1 -o $work/e.compact"
}

# workload NAME ENV CMD...: one line for CMD run with environment assignment ENV (or "" for none).
workload() {
  local name=$1 env=$2
  shift 2
  local -a pre=()
  [[ -z $env ]] || pre=(env "$env")
  local flag=()
  [[ $env != PYTHONMALLOC=malloc ]] || flag=(--python-malloc)
  "$memtrack" record -q "${flag[@]}" -o "$work/w.compatible" -- "$@" > /dev/null
  "$memtrack" record -q "${flag[@]}" --compact -o "$work/w.compact" -- "$@" > /dev/null
  rm -f "$work"/ht*
  "${pre[@]}" heaptrack -o "$work/ht" "$@" > /dev/null 2>&1 || true
  local ht
  ht=$(ls "$work"/ht*.zst 2> /dev/null | head -1 || true)
  [[ -n $ht ]] || { echo "compact_vs_heaptrack.sh: heaptrack wrote no .zst for $name" >&2; exit 1; }
  "$memtrack" decode --format raw "$work/w.compatible" -o "$work/w.raw"
  local enc st
  enc=$(encode_cpu "$work/w.raw")
  # Stats of the same events in both encodings: the compatible recording and its conversion. Two recordings
  # differ in more than their encoding: their resident samples and page snapshots, which stats attributes,
  # are taken at other moments.
  "$memtrack" convert --to compact "$work/w.compatible" -o "$work/w.converted"
  st=$(pair_cpu "$memtrack stats $work/w.compatible" "$memtrack stats $work/w.converted")
  emit "$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$name" "$(events_of "$work/w.compatible")" \
    "$(stat -c %s "$work/w.compatible")" "$(stat -c %s "$work/w.compact")" "$(stat -c %s "$ht")" \
    ${enc% *} ${enc#* } ${st% *} ${st#* })"
}

if [[ -n $tsv ]]; then : > "$tsv"; fi
printf 'name\tevents\tcompatible_bytes\tcompact_bytes\theaptrack_bytes\tencode_compatible_cpu_s\tencode_compact_cpu_s\tstats_compatible_cpu_s\tstats_compact_cpu_s\n'
workload "churn 2x2M" "" "$work/churn" 2 2000000
workload "churn 2x5M" "" "$work/churn" 2 5000000
if command -v sqlite3 > /dev/null; then
  cat > "$work/load.sql" << 'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, value REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
INSERT INTO t SELECT i, 'name-' || (i * 7919 % 50000), i * 0.5 FROM n;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(value) FROM t WHERE name LIKE 'name-1%';
SELECT name, count(*) FROM t GROUP BY substr(name, 1, 7) ORDER BY 2 DESC LIMIT 3;
EOF
  workload sqlite3 "" sqlite3 ":memory:" ".read $work/load.sql"
fi
if command -v perl > /dev/null; then
  workload perl "" perl -e 'my %h; for my $i (1 .. 100000) { $h{"k$i"} = [$i, "v" x ($i % 40)] }
    my $s = 0; $s += length($_->[1]) for values %h; print "$s\n"'
fi
if command -v jq > /dev/null; then
  workload jq "" jq -n '[range(60000) | {a: ., b: (. * 2 | tostring), c: [., . + 1]}]
    | map(select(.a % 3 == 0)) | group_by(.a % 10) | map(length)'
fi
if command -v python3 > /dev/null; then
  # The interpreter itself, not a wrapper script (a pyenv shim) that heaptrack would record instead.
  py=$(python3 -c 'import sys; print(sys.executable)')
  workload "python3 --python-malloc" PYTHONMALLOC=malloc "$py" -c \
    'd = {str(i): [i] * 3 for i in range(100000)}; print(sum(len(v) for v in d.values()))'
fi

# record --compact against record on churn 2 x 4M (issue 25: "faster than record"): 3 rounds, interleaved,
# medians of wall and CPU (user + system of the recorder and the program). One line:
# record <TAB> name <TAB> events <TAB> record_wall_s record_cpu_s compact_wall_s compact_cpu_s
for round in 1 2 3; do
  run rec.compatible "$memtrack" record -q -o "$work/r.compatible" -- "$work/churn" 2 4000000
  run rec.compact "$memtrack" record -q --compact -o "$work/r.compact" -- "$work/churn" 2 4000000
done
emit "$(printf 'record\tchurn 2x4M\t%s\t%s\t%s\t%s\t%s' "$(events_of "$work/r.compact")" \
  "$(median < "$work/rec.compatible.times")" "$(median < "$work/rec.compatible.cpu")" \
  "$(median < "$work/rec.compact.times")" "$(median < "$work/rec.compact.cpu")")"

"$build/bin/memtrack-gen-events" "$realistic" > "$work/realistic.raw"
enc=$(encode_cpu "$work/realistic.raw")
emit "$(printf 'realistic events\t%s\t%s\t%s\t0\t%s\t%s\t0\t0' "$realistic" "$(stat -c %s "$work/e.compatible")" \
  "$(stat -c %s "$work/e.compact")" ${enc% *} ${enc#* })"
