#!/usr/bin/env bash
# Symbolization throughput of memtrack::symbolize (memtrack-symbolize-addrs) on real modules: N distinct
# return addresses (the instruction after each call, from objdump -d, spread evenly over the module), first
# with a cold Symbolizer (the module's ELF and debug file opened in the timing), beside binutils' addr2line
# on the same addresses (-i -f -C: inlined frames, demangled) as the ratio's reference.
#   bench/symbolize_throughput.sh [BUILD_DIR] [N] [MODULE...]
# Default modules: libc.so.6 (DWARF when libc6-dbg is installed), libstdc++.so.6 and python3 (.dynsym only on
# Debian without their -dbgsym packages).
set -euo pipefail
build=${1:-build/dev}
n=${2:-5000}
shift $(( $# > 2 ? 2 : $# ))
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  modules=(/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/bin/python3)
fi
tool=$build/bin/memtrack-symbolize-addrs
[ -x "$tool" ] || { echo "symbolize_throughput.sh: $tool not built (cmake --build --preset dev)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for module in "${modules[@]}"; do
  real=$(readlink -f "$module")
  # "  2a3f4:\tcall   2a100 <foo>": the next instruction's address is the call's return address.
  objdump -d --no-show-raw-insn "$real" |
    awk -F'\t' 'want && /^ *[0-9a-f]+:/ { a = $1; sub(/^ */, "", a); sub(/:$/, "", a); print a; want = 0 }
                $2 ~ /^call/ { want = 1 }' | sort -u > "$work/all"
  total=$(wc -l < "$work/all")
  step=$(( total > n ? total / n : 1 ))
  # awk stops itself: `| head` would end the pipeline with SIGPIPE (exit 141 under pipefail).
  awk -v s="$step" -v n="$n" 'NR % s == 0 && ++k <= n' "$work/all" > "$work/addresses"
  count=$(wc -l < "$work/addresses")
  # addr2line wants the call itself: address - 1, as memtrack's --return-addresses does internally.
  while read -r a; do printf '%x\n' $(( 0x$a - 1 )); done < "$work/addresses" > "$work/calls"
  t0=$(now)
  "$tool" -e "$real" --return-addresses --quiet --stats < "$work/addresses" 2> "$work/stats"
  t1=$(now)
  addr2line -i -f -C -e "$real" < "$work/calls" > /dev/null
  t2=$(now)
  awk -v m="$real" -v c="$count" -v all="$total" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v stats="$(cat "$work/stats")" \
    'BEGIN { mt = t1 - t0; a2l = t2 - t1;
             printf "%s: %d of %d call return addresses\n  memtrack: %.3f s (process), %.0f addresses/s; addr2line: %.3f s, %.0f addresses/s; addr2line/memtrack = %.2f\n  %s\n",
                    m, c, all, mt, c / mt, a2l, c / a2l, a2l / mt, stats }'
done
