#!/usr/bin/env bash
# `memtrack attach`'s cost (docs/RUNTIME.md, "Attaching to a running process"):
# tests/programs/attach_loop (THREADS x ITERS iterations of malloc/calloc/realloc/free/new[]) natively, under
# `memtrack record --no-stacks` and attached with `memtrack attach --no-stacks` from its first line ("ready"),
# interleaved round by round: the hooks and the ring alone, like for like (the stack capture is the same code
# under both). Prints each mode's median wall time of
# the program, the events each recorded, the cost per event (median wall minus native, over the events) and
# attach's per-event cost as a ratio of record's, then the median pause of the injecting thread while
# attaching and detaching (from attach's summary line, with --duration so that a detach happens: a second
# set of runs on a program that waits for a stop file). Ratios from one run.
#   bench/attach_cost.sh [BUILD_DIR] [ROUNDS] [THREADS] [ITERS] [TSV_OUT]
#   TSV_OUT  if given (- for none), one `key value` line per figure (medians over the rounds); bench/
#            render_performance.py reads it (run_suite.sh --with-record writes attach_cost.tsv)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-$here/build/release}"
rounds=${2:-5}
threads=${3:-1}
iters=${4:-3000000}
use_tsv "${5:-}"
prog="$build/tests/programs/attach_loop"
[[ -x $prog ]] || { echo "attach_cost.sh: need $prog (build with tests)" >&2; exit 2; }
make_work

events() { "$memtrack" stats "$1" | awk '$1 == "events" { print $2; exit }'; }

for ((r = 1; r <= rounds; r++)); do
  /usr/bin/time -f %e -o "$work/t" "$prog" "$threads" "$iters" > /dev/null
  cat "$work/t" >> "$work/native"
  "$memtrack" record -q --no-stacks -o "$work/r.msgpack" /usr/bin/time -f %e -o "$work/t" "$prog" "$threads" "$iters" > /dev/null
  cat "$work/t" >> "$work/record"
  events "$work/r.msgpack" >> "$work/record.events"
  /usr/bin/time -f %e -o "$work/t" "$prog" "$threads" "$iters" > "$work/out" &
  until grep -q ready "$work/out" 2> /dev/null; do sleep 0.001; done
  "$memtrack" attach "$(awk '/ready/ { print $2 }' "$work/out")" -q --no-stacks -o "$work/a.msgpack"
  wait
  cat "$work/t" >> "$work/attach"
  events "$work/a.msgpack" >> "$work/attach.events"
  echo "round $r: native $(tail -1 "$work/native")s record --no-stacks $(tail -1 "$work/record")s attach --no-stacks $(tail -1 "$work/attach")s"
done
for ((r = 1; r <= rounds; r++)); do
  rm -f "$work/stop"
  "$prog" "$threads" 1000000000 "$work/stop" > "$work/out" &
  pid=$!
  until grep -q ready "$work/out" 2> /dev/null; do sleep 0.001; done
  "$memtrack" attach "$pid" --no-stacks -o "$work/p.msgpack" --duration 0.3 2>&1 |
    sed -n 's/.*paused \([0-9.]*\) ms to attach and \([0-9.]*\) ms to detach.*/\1 \2/p' >> "$work/pauses"
  touch "$work/stop"
  wait "$pid"
done
native=$(median < "$work/native")
rec=$(median < "$work/record")
att=$(median < "$work/attach")
rec_events=$(median < "$work/record.events")
att_events=$(median < "$work/attach.events")
attach_pause=$(cut -d' ' -f1 "$work/pauses" | median)
detach_pause=$(cut -d' ' -f2 "$work/pauses" | median)
awk -v n="$native" -v r="$rec" -v a="$att" -v re="$rec_events" -v ae="$att_events" -v t="$threads" -v i="$iters" 'BEGIN {
  rc = (r - n) / re * 1e9; ac = (a - n) / ae * 1e9
  printf "attach_loop %d x %d, medians of the rounds:\n", t, i
  printf "  native              %.3f s\n", n
  printf "  record --no-stacks  %.3f s  %d events  %.1f ns/event\n", r, re, rc
  printf "  attach --no-stacks  %.3f s  %d events  %.1f ns/event\n", a, ae, ac
  printf "  attach/record per event: %.2f\n", (rc > 0 ? ac / rc : 0)
}'
printf '  pause of the injecting thread (median of %d): attach %s ms, detach %s ms\n' "$rounds" \
  "$attach_pause" "$detach_pause"
if [[ -n $tsv ]]; then
  {
    printf 'rounds\t%s\nthreads\t%s\niters\t%s\n' "$rounds" "$threads" "$iters"
    printf 'native_wall\t%s\nrecord_wall\t%s\nattach_wall\t%s\n' "$native" "$rec" "$att"
    printf 'record_events\t%s\nattach_events\t%s\n' "$rec_events" "$att_events"
    printf 'attach_pause_ms\t%s\ndetach_pause_ms\t%s\n' "$attach_pause" "$detach_pause"
  } > "$tsv"
fi
