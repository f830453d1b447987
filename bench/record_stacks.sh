#!/usr/bin/env bash
# Call stacks' cost (docs/RUNTIME.md, "Call stacks"): bench/churn_deep.c (THREADS x OPS malloc/free at a call
# depth of DEPTH frames, plain -O2, no frame pointers) natively, under heaptrack (a stack per allocation),
# under `memtrack record` (stacks on, the default) and `memtrack record --no-stacks`, interleaved round by
# round. Prints medians and the ratios of one run, bytes per event with and without stacks, the stack
# tables and the symbolization time (from record's summary line).
#   bench/record_stacks.sh [BUILD_DIR] [ROUNDS] [THREADS] [OPS] [DEPTH] [TSV_OUT]
# TSV_OUT, if given, receives the medians for bench/render_performance.py, one `key value` line each.
# With BASE_BUILD=DIR (another build, e.g. of the commit before a change), `DIR/bin/memtrack record` runs too,
# in the same rounds, and gets its own row: a before/after in one run on one machine.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/bench/record_common.sh"
use_churn_args "$@"
depth=${5:-24}
tsv=${6:-}
require_installed heaptrack
base=${BASE_BUILD:+$(cd "$BASE_BUILD" && pwd)}
[[ -z $base ]] || require_memtrack "$base"

make_work
build_churn_deep "$work"
prog=("$work/churn_deep" "$threads" "$ops" "$depth")

for ((r = 1; r <= rounds; r++)); do
  run native "${prog[@]}"
  run heaptrack heaptrack -o "$work/ht.$r" "${prog[@]}"
  # The base build's run is next to this build's, before it in even rounds and after it in odd ones.
  if [[ -n $base ]] && ((r % 2 == 0)); then run basestacks "$base/bin/memtrack" record -o "$work/bs.msgpack" -- "${prog[@]}"; fi
  run stacks "$memtrack" record -o "$work/st.msgpack" -- "${prog[@]}"
  if [[ -n $base ]] && ((r % 2 == 1)); then run basestacks "$base/bin/memtrack" record -o "$work/bs.msgpack" -- "${prog[@]}"; fi
  run nostacks "$memtrack" record --no-stacks -o "$work/ns.msgpack" -- "${prog[@]}"
  echo "round $r: native $(tail -1 "$work/native.times")s heaptrack $(tail -1 "$work/heaptrack.times")s" \
       "memtrack $(tail -1 "$work/stacks.times")s --no-stacks $(tail -1 "$work/nostacks.times")s" \
       "${base:+BASE_BUILD $(tail -1 "$work/basestacks.times")s}"
  rm -f "$work"/ht."$r"*
done

n=$(median < "$work/native.times"); nc=$(median < "$work/native.cpu")
h=$(median < "$work/heaptrack.times"); hc=$(median < "$work/heaptrack.cpu")
s=$(median < "$work/stacks.times"); sc=$(median < "$work/stacks.cpu")
x=$(median < "$work/nostacks.times"); xc=$(median < "$work/nostacks.cpu")
events=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/stacks.err")
nodes=$(sed -n 's/.*, \([0-9]*\) stack nodes.*/\1/p' "$work/stacks.err")
# record's summary: "N addresses symbolized (M while the program ran, in C s of CPU; the rest in S s after it ended)"
symbolized_re='.*stack nodes, \([0-9]*\) addresses symbolized (\([0-9]*\) while the program ran, in \([0-9.]*\) s of CPU; the rest in \([0-9.]*\) s after it ended).*'
symbolized=$(sed -n "s/$symbolized_re/\1 addresses, \2 of them while the program ran (\3 s of CPU), the rest in \4 s after it ended/p" "$work/stacks.err")
sb=$(stat -c %s "$work/st.msgpack"); xb=$(stat -c %s "$work/ns.msgpack")
echo
echo "churn_deep $threads x $ops at depth $depth, $rounds rounds, medians (wall s / CPU s):"
printf '| run | wall s | CPU s | wall / native | heaptrack / this (wall) |\n| --- | --- | --- | --- | --- |\n'
printf '| native | %s | %s | 1.00 | |\n' "$n" "$nc"
printf '| heaptrack | %s | %s | %.2f | 1.00 |\n' "$h" "$hc" "$(ratio "$h" "$n")"
printf '| memtrack record (stacks) | %s | %s | %.2f | %.2f |\n' "$s" "$sc" "$(ratio "$s" "$n")" "$(ratio "$h" "$s")"
printf '| memtrack record --no-stacks | %s | %s | %.2f | %.2f |\n' "$x" "$xc" "$(ratio "$x" "$n")" "$(ratio "$h" "$x")"
if [[ -n $base ]]; then
  b=$(median < "$work/basestacks.times"); bc_=$(median < "$work/basestacks.cpu")
  printf '| BASE_BUILD memtrack record (stacks) | %s | %s | %.2f | %.2f |\n' "$b" "$bc_" "$(ratio "$b" "$n")" \
    "$(ratio "$h" "$b")"
  printf 'heaptrack / memtrack CPU: %.2f (this build), %.2f (BASE_BUILD %s)\n' "$(ratio "$hc" "$sc")" \
    "$(ratio "$hc" "$bc_")" "$base"
fi
echo
printf 'artifact bytes per event: %.3f with stacks, %.3f without (%s events)\n' \
  "$(ratio "$sb" "$events")" "$(ratio "$xb" "$events")" "$events"
# The tracee's tree: per node a u64 address + u32 parent, and a u32 hash slot per 2 nodes' capacity touched
# sparsely (the rest of its 20 MiB mapping is never touched).
echo "stack nodes: $nodes (tracee's tree: $((nodes * 12)) bytes of node arrays + touched hash pages); symbolized: $symbolized"
if [[ -n $tsv ]]; then
  # The program's own events (it prints "events N") against what the last recordings hold: the artifact also
  # has the C runtime's few allocations, so only a shortfall counts as lost.
  expected=$(awk '/^events/ {print $2}' "$work/native.out")
  nsevents=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/nostacks.err")
  lost=$(( (expected > events ? expected - events : 0) + (expected > nsevents ? expected - nsevents : 0) ))
  symbolized_n=$(sed -n "s/$symbolized_re/\1/p" "$work/stacks.err")
  symbolized_ahead=$(sed -n "s/$symbolized_re/\2/p" "$work/stacks.err")
  symbolize_ahead_cpu=$(sed -n "s/$symbolized_re/\3/p" "$work/stacks.err")
  symbolize_s=$(sed -n "s/$symbolized_re/\4/p" "$work/stacks.err")
  {
    printf 'rounds\t%s\nthreads\t%s\nops_per_thread\t%s\ndepth\t%s\n' "$rounds" "$threads" "$ops" "$depth"
    printf 'events\t%s\nexpected_events\t%s\nlost_events\t%s\n' "$events" "$expected" "$lost"
    printf 'native_wall\t%s\nnative_cpu\t%s\nheaptrack_wall\t%s\nheaptrack_cpu\t%s\n' "$n" "$nc" "$h" "$hc"
    printf 'stacks_wall\t%s\nstacks_cpu\t%s\nnostacks_wall\t%s\nnostacks_cpu\t%s\n' "$s" "$sc" "$x" "$xc"
    printf 'stacks_bytes\t%s\nnostacks_bytes\t%s\nstack_nodes\t%s\n' "$sb" "$xb" "${nodes:-0}"
    printf 'symbolized_addresses\t%s\nsymbolize_s\t%s\n' "${symbolized_n:-0}" "${symbolize_s:-0}"
    printf 'symbolized_ahead\t%s\nsymbolize_ahead_cpu_s\t%s\n' "${symbolized_ahead:-0}" "${symbolize_ahead_cpu:-0}"
  } > "$tsv"
fi
