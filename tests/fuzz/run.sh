#!/usr/bin/env bash
# Runs one libFuzzer target from the checked-in corpus, then minimizes what it found back into the corpus.
#   tests/fuzz/run.sh TARGET [SECONDS] [extra libFuzzer flags...]
# Needs the fuzz build: cmake --preset fuzz && cmake --build --preset fuzz -j2
# Limits (issue 7): -malloc_limit_mb=64 fails on any single allocation of 64 MiB or more, -rss_limit_mb=256
# on a runaway process; artifact_decode_fuzz also asserts the decoder's peak heap per input. ASan's
# quarantine is shrunk so that freed memory it holds back does not count against the RSS limit.
# Findings are written to build/fuzz-findings/TARGET/; the run's log to build/fuzz-logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=$1
seconds=${2:-600}
shift $(($# < 2 ? $# : 2))
bin=build/fuzz/fuzz/$target
work=build/fuzz-work/$target
corpus=tests/fuzz/corpus/$target
dict=()
[[ -f tests/fuzz/$target.dict ]] && dict=(-dict="tests/fuzz/$target.dict")
mkdir -p "$work" build/fuzz-findings/"$target" build/fuzz-logs
# Inputs named *.slow (zip bombs: 16 MiB of content each) are replayed by ctest but not fuzzed from: at
# ~1 s per execution under ASan they would take most of the run.
find "$corpus" -type f ! -name '*.slow' -exec cp -n {} "$work"/ \;

status=0
ASAN_OPTIONS=quarantine_size_mb=32:detect_leaks=1 "$bin" -max_total_time="$seconds" -rss_limit_mb=256 \
  -malloc_limit_mb=64 -timeout=25 -print_final_stats=1 -artifact_prefix=build/fuzz-findings/"$target"/ "${dict[@]}" "$@" \
  "$work" > build/fuzz-logs/"$target".log 2>&1 || status=$?
grep -aE '^(stat::|INFO: seed corpus)|#[0-9]+ +DONE|ERROR|SUMMARY|violated' build/fuzz-logs/"$target".log || true

# Minimize: a fresh directory receives only the inputs that add coverage. Files named regress_* (inputs that
# once failed) and *.slow stay in the corpus as they are.
fresh=$(mktemp -d)
ASAN_OPTIONS=quarantine_size_mb=32 "$bin" -merge=1 -rss_limit_mb=256 "$fresh" "$work" > build/fuzz-logs/"$target".merge.log 2>&1
find "$corpus" -type f ! -name 'regress_*' ! -name '*.slow' -delete
cp "$fresh"/* "$corpus"/
rm -rf "$fresh"
echo "$target: exit $status, corpus $(find "$corpus" -type f | wc -l) files, $(du -sb "$corpus" | cut -f1) bytes"
exit "$status"
