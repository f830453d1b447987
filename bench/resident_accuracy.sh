#!/usr/bin/env bash
# How close memtrack's peak resident comes to the kernel's own high-water mark (issue 29: within 5% of VmHWM
# on single-process programs and within 5% of the sum on two processes holding memory at the same time). Each
# workload runs once natively (the reference) and once under `memtrack record` (stacks on, the default); the
# reference is the native run's, so memtrack's own pages, which its figures leave out, are not in it either.
#   touch64, touch16  tests/integration/programs/resident.c `touch 64 64 300` and `touch 64 16 300`: a 64 MiB
#                     block, all or 16 MiB of it touched; reference: the VmHWM the program reads at its end;
#                     memtrack: stats' peak resident
#   fork              `fork 32 300`: parent and child each hold 32 MiB at once; reference: the sum of the two
#                     VmHWMs; memtrack: stats' peak resident (the sum over the processes alive)
#   python, gcc, sqlite  real programs (python3 building a list of 3M strings; g++ -O2 -c
#                     analysis/src/timeline.cpp; sqlite3 filling an in-memory table, if installed): reference:
#                     GNU time's maximum resident set size (%M: the largest of the program's processes);
#                     memtrack: the largest per-process peak_resident_bytes of stats --json
#
# usage: bench/resident_accuracy.sh [BUILD_DIR] [TSV_OUT]
#   BUILD_DIR default build/dev (needs bin/memtrack and the preload library)
#   TSV_OUT   if given (- for none), one line per workload: workload processes reference reference_bytes
#             memtrack_bytes; bench/render_performance.py --section resident-accuracy reads it
# With MEMTRACK_BENCH_SMOKE=1 (run_suite.sh --smoke) the real programs shrink: python 300,000 strings, gcc -O2 -c
# of churn.c, sqlite 20,000 rows.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_build "${1:-}"
use_tsv "${2:-}"
make_churn_work
cc -O2 "$here/tests/integration/programs/resident.c" -o "$work/resident"
python=/usr/bin/python3
[[ -x $python ]] || python=$(command -v python3)

# recorded NAME CMD...: records CMD to $work/NAME.mt (its stdout to $work/NAME.rec.out).
recorded() {
  local name=$1
  shift
  "$memtrack" record -q -o "$work/$name.mt" -- "$@" > "$work/$name.rec.out" 2> "$work/$name.rec.err" ||
    { echo "resident_accuracy.sh: recording $name failed:" >&2; cat "$work/$name.rec.err" >&2; exit 1; }
  "$memtrack" stats --json "$work/$name.mt" > "$work/$name.json"
}

# figure NAME FIELD: from $work/NAME.json: total (peak_resident_bytes) or largest (the largest per-process
# peak_resident_bytes); the number of processes sampled after it.
figure() {
  "$python" - "$work/$1.json" "$2" << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
pids = [p for p in d["pids"] if p.get("peak_resident_bytes") is not None]
v = d["peak_resident_bytes"] if sys.argv[2] == "total" else max(p["peak_resident_bytes"] for p in pids)
print(v, len(pids))
EOF
}

# row NAME REFERENCE_KIND REFERENCE_BYTES MEMTRACK_BYTES PROCESSES: one TSV line.
row() {
  local line
  line=$(printf '%s\t%s\t%s\t%s\t%s' "$1" "$5" "$2" "$3" "$4")
  echo "$line"
  if [[ -n $tsv ]]; then echo "$line" >> "$tsv"; fi
}

# hwm_sum FILE: the sum of the "hwm <bytes>" lines the resident program printed.
hwm_sum() { awk '/hwm /{s += $NF} END {print s + 0}' "$1"; }

# program NAME FIELD ARGS...: resident.c natively and recorded.
program() {
  local name=$1 field=$2
  shift 2
  "$work/resident" "$@" > "$work/$name.native"
  recorded "$name" "$work/resident" "$@"
  local m n
  read -r m n < <(figure "$name" "$field")
  row "$name" vmhwm "$(hwm_sum "$work/$name.native")" "$m" "$n"
}

# real NAME CMD...: CMD natively under GNU time (%M, KiB) and recorded.
real() {
  local name=$1
  shift
  /usr/bin/time -o "$work/$name.time" -f "%M" "$@" > /dev/null 2> "$work/$name.native.err" ||
    { echo "resident_accuracy.sh: $name failed:" >&2; cat "$work/$name.native.err" >&2; exit 1; }
  recorded "$name" "$@"
  local m n
  read -r m n < <(figure "$name" largest)
  row "$name" maxrss "$(($(tail -n 1 "$work/$name.time") * 1024))" "$m" "$n"
}

printf 'workload\tprocesses\treference\treference_bytes\tmemtrack_bytes\n'
if [[ -n $tsv ]]; then : > "$tsv"; fi
program touch64 total touch 64 64 300
program touch16 total touch 64 16 300
program fork total fork 32 300
if [[ ${MEMTRACK_BENCH_SMOKE:-0} == 1 ]]; then
  strings=300000 rows=20000
  gcc_args=(gcc -O2 -c "$here/tests/integration/programs/churn.c" -o "$work/churn.o")
else
  strings=3000000 rows=300000
  gcc_args=(g++ -std=c++20 -O2 -c "$here/analysis/src/timeline.cpp" -I "$here/analysis/include"
    -I "$here/codec/include" -o "$work/timeline.o")
fi
real python "$python" -c "x = [str(i) * 4 for i in range($strings)]"
real gcc "${gcc_args[@]}"
if command -v sqlite3 > /dev/null; then
  real sqlite sqlite3 :memory: "create table t(a, b); with recursive c(i) as (select 1 union all select i + 1 from c
    where i < $rows) insert into t select i, hex(randomblob(64)) from c; select count(*) from t;"
fi
