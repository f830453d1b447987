#!/usr/bin/env bash
# Wall-time cost of recording an allocation-churn program: natively, under heaptrack, and under
# `memtrack record`, interleaved round by round so background load hits all three alike.
# Also runs `memtrack record` with MEMTRACK_RECORD_DISCARD=1 (the ring drained, nothing encoded): the
# transport's own cost. Prints medians, the ratios, and lost events (expected vs artifact count).
#
#   bench/record_overhead.sh [BUILD_DIR] [ROUNDS] [THREADS] [OPS_PER_THREAD] [TSV_OUT]
#   defaults:               build/dev   5        2         1000000
# TSV_OUT, if given, receives the medians for bench/render_performance.py, one `key value` line each.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/record_common.sh
source "$here/bench/record_common.sh"
use_churn_args "$@"
tsv=${5:-}
require_installed heaptrack

# The same source the integration tests build.
make_churn_work
prog=("$work/churn" "$threads" "$ops")

expected=""
lost_total=0
for ((r = 1; r <= rounds; r++)); do
  run native "${prog[@]}"
  run heaptrack heaptrack -o "$work/ht.$r" "${prog[@]}"
  run memtrack "$memtrack" record -o "$work/mt.$r.msgpack" -- "${prog[@]}"
  MEMTRACK_RECORD_DISCARD=1 run transport "$memtrack" record -o "$work/discard.msgpack" -- "${prog[@]}"
  expected=$(awk '/^events/ {print $2}' "$work/memtrack.out")
  recorded=$(sed -n 's/^memtrack record: \([0-9]*\) events.*/\1/p' "$work/memtrack.err")
  # The artifact also holds the C runtime's own few allocations (stdio buffer, thread stacks' TLS).
  lost=$((expected > recorded ? expected - recorded : 0))
  lost_total=$((lost_total + lost))
  echo "round $r: native $(tail -1 "$work/native.times")s heaptrack $(tail -1 "$work/heaptrack.times")s" \
       "memtrack $(tail -1 "$work/memtrack.times")s (transport only $(tail -1 "$work/transport.times")s)" \
       "events expected $expected recorded $recorded lost $lost"
  rm -f "$work"/ht."$r"* "$work/discard.msgpack"
done

# Interop check on the last artifact: a third-party decoder sees exactly the recorder's count.
if /usr/bin/python3 -c 'import msgpack, zstandard' 2> /dev/null; then
  decoded=$(/usr/bin/python3 "$here/tests/integration/read_artifact.py" "$work/mt.$rounds.msgpack" 2>&1 > /dev/null |
            sed -n 's/^# \([0-9]*\) events/\1/p')
  echo "python3-zstandard + python3-msgpack decoded $decoded events from the last artifact (recorder said $recorded)"
fi

n=$(median < "$work/native.times")
h=$(median < "$work/heaptrack.times")
m=$(median < "$work/memtrack.times")
t=$(median < "$work/transport.times")
nc=$(median < "$work/native.cpu")
hc=$(median < "$work/heaptrack.cpu")
mc=$(median < "$work/memtrack.cpu")
artifact_bytes=$(stat -c %s "$work/mt.$rounds.msgpack")
echo
echo "workload: $threads threads x $ops malloc/free/realloc operations ($expected events), $rounds interleaved rounds, medians"
printf '                    wall      CPU (user+sys)\n'
printf '  native            %8.3f s  %8.3f s\n' "$n" "$nc"
printf '  heaptrack         %8.3f s  %8.3f s\n' "$h" "$hc"
printf '  memtrack record   %8.3f s  %8.3f s   artifact %d bytes (%.1f B/event)\n' "$m" "$mc" "$artifact_bytes" \
  "$(ratio "$artifact_bytes" "$expected")"
printf '  transport only    %8.3f s   (MEMTRACK_RECORD_DISCARD=1: ring drained, nothing encoded)\n' "$t"
printf '  memtrack / native       %6.2fx\n' "$(ratio "$m" "$n")"
printf '  heaptrack / memtrack    %6.2fx   (wall; goal >= 2.5x)\n' "$(ratio "$h" "$m")"
printf '  heaptrack / memtrack    %6.2fx   (CPU time)\n' "$(ratio "$hc" "$mc")"
printf '  transport ns/event      %6.1f   ((transport - native) / events)\n' "$(echo "($t - $n) * 1000000000 / $expected" | bc -l)"
echo "  lost events             $lost_total"
if [[ -n $tsv ]]; then
  printf 'rounds\t%s\nthreads\t%s\nops_per_thread\t%s\nevents\t%s\nlost_events\t%s\n' \
    "$rounds" "$threads" "$ops" "$expected" "$lost_total" > "$tsv"
  printf 'native_wall\t%s\nheaptrack_wall\t%s\nmemtrack_wall\t%s\ntransport_wall\t%s\n' "$n" "$h" "$m" "$t" >> "$tsv"
  printf 'native_cpu\t%s\nheaptrack_cpu\t%s\nmemtrack_cpu\t%s\nartifact_bytes\t%s\n' "$nc" "$hc" "$mc" \
    "$artifact_bytes" >> "$tsv"
fi
