#!/usr/bin/env bash
# Recording cost on programs nobody here wrote (issue 26's real-program table): each workload natively, under
# `memtrack record --no-stacks`, under `memtrack record` (stacks, the default) and, for the single-process
# ones, under heaptrack (which follows only the first process of a tree), ROUNDS interleaved rounds, medians
# of wall time. Per workload also: the events and processes of the last stacks recording, its stack nodes
# (record's summary line), and whether the program's stdout was the same under both recordings as natively.
#
# Workloads (each skipped, and said so on stderr, when its program is not installed):
#   sqlite3        300,000 inserts, an index, a LIKE scan and a GROUP BY in :memory:
#   perl           a hash of 100,000 keys of arrays, then a sum over it
#   jq             60,000 objects built, filtered and grouped
#   python3        a dict of 500,000 lists, under --python-malloc (PYTHONMALLOC=malloc for heaptrack)
#   git loop       sh -c 'for i in $(seq 100); do git --version; done' (102 processes)
#   git commit     20 commits of 10 new files each (git add, git commit) in a fresh repository, made before
#                  the timed command in each round
#   make -j2       a make -B -j2 of 8 small C files linked into one program
#   g++            one C++ file with <map>, <string>, <vector>, <algorithm> and <regex> at -O1
#
# usage: bench/real_programs.sh [BUILD_DIR] [ROUNDS] [TSV_OUT] [quick]
#   BUILD_DIR default build/dev, ROUNDS default 3, TSV_OUT (- for none) the lines below without the header;
#   quick: sqlite3, perl and the git loop only (run_suite.sh --smoke);
#   bench/render_performance.py --section real-programs reads it as real_programs.tsv.
#   prints one line per workload: name events processes stack_nodes native_s nostacks_s stacks_s heaptrack_s
#   same_output rounds (heaptrack_s 0 where heaptrack was not run; same_output yes or no)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/bench/record_common.sh"
use_build "${1:-}"
rounds=${2:-3}
use_tsv "${3:-}"
quick=0
[[ ${4:-} != quick ]] || quick=1
make_work
have_heaptrack=0
command -v heaptrack > /dev/null && have_heaptrack=1
# Debian's interpreter, not a wrapper script (a pyenv shim) that heaptrack would record instead.
py=/usr/bin/python3

# The workloads' inputs.
cat > "$work/load.sql" << 'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, value REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
INSERT INTO t SELECT i, 'name-' || (i * 7919 % 300000), i * 0.5 FROM n;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(value) FROM t WHERE name LIKE 'name-1%';
SELECT name, count(*) FROM t GROUP BY substr(name, 1, 7) ORDER BY 2 DESC LIMIT 3;
EOF
mkdir -p "$work/make"
for i in 1 2 3 4 5 6 7 8; do
  cat > "$work/make/f$i.c" << EOF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int f$i(int n) { int s = 0; for (int k = 0; k < n; ++k) { char b[32]; snprintf(b, sizeof b, "%d", k); s += (int)strlen(b); } return s; }
EOF
done
{
  echo '#include <stdio.h>'
  for i in 1 2 3 4 5 6 7 8; do echo "int f$i(int);"; done
  echo 'int main(void) { int s = 0;'
  for i in 1 2 3 4 5 6 7 8; do echo "  s += f$i(100);"; done
  echo '  printf("%d\n", s); return 0; }'
} > "$work/make/main.c"
printf 'prog: main.o f1.o f2.o f3.o f4.o f5.o f6.o f7.o f8.o\n\tcc -o $@ $^\n%%.o: %%.c\n\tcc -O1 -c $< -o $@\n' \
  > "$work/make/Makefile"
cat > "$work/one.cpp" << 'EOF'
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < argc * 1000; ++i) m[std::to_string(i % 97)].push_back(i);
  std::regex re("[0-9]+");
  int n = 0;
  for (auto& [k, v] : m) { std::sort(v.begin(), v.end()); n += std::regex_match(k, re); }
  return n == 97 ? 0 : 1;
}
EOF
# git commit: a fresh repository and 200 files in 20 directories, made before each timed run (setup_git).
setup_git() {
  rm -rf "$work/repo"
  git init -q "$work/repo"
  local d i
  for d in $(seq 20); do
    mkdir "$work/repo/d$d"
    for i in $(seq 10); do printf 'file %d %d\n%s\n' "$d" "$i" "$(seq "$((d * i))")" > "$work/repo/d$d/f$i.txt"; done
  done
}
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench \
  GIT_COMMITTER_EMAIL=bench@localhost GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'

# key_of NAME: the prefix of workload NAME's files in $work.
key_of() { echo "$work/$(echo "$1" | tr ' /' '__')"; }

# One timed run of mode MODE (native, nostacks, stacks, heaptrack) of workload NAME: appends its wall time to
# $(key_of NAME).MODE.times; its stdout to .out (the last round's), its stderr to .err.
one_run() {
  local name=$1 mode=$2 pymalloc=$3 setup=$4
  shift 4
  [[ -z $setup ]] || "$setup"
  # --python-malloc for record; the same environment for the native run and heaptrack.
  local -a flag=() pre=()
  [[ $pymalloc == 0 ]] || { flag=(--python-malloc); pre=(env PYTHONMALLOC=malloc); }
  local key
  key="$(key_of "$name").$mode"
  case $mode in
    native) timed "${pre[@]}" "$@" > "$key.out" 2> "$key.err" ;;
    nostacks) timed "$memtrack" record --no-stacks "${flag[@]}" -o "$work/a.nostacks" -- "$@" > "$key.out" 2> "$key.err" ;;
    stacks) timed "$memtrack" record "${flag[@]}" -o "$work/a.stacks" -- "$@" > "$key.out" 2> "$key.err" ;;
    heaptrack)
      rm -f "$work"/ht.*
      timed "${pre[@]}" heaptrack -o "$work/ht" "$@" > "$key.out" 2> "$key.err" ;;
  esac
  echo "$wall" >> "$key.times"
}

# workload NAME HEAPTRACK PYMALLOC SETUP CMD...: ROUNDS interleaved rounds of every mode, one line.
# HEAPTRACK 1 runs heaptrack too; PYMALLOC 1 records with --python-malloc; SETUP a function run before each
# run (or "").
workload() {
  local name=$1 ht=$2 pymalloc=$3 setup=$4
  shift 4
  if ((quick)) && [[ $name != sqlite3 && $name != perl && $name != "git loop" ]]; then return; fi
  if ! command -v "$1" > /dev/null; then
    echo "real_programs.sh: $1 is not installed: workload '$name' skipped" >&2
    return
  fi
  local -a modes=(native nostacks stacks)
  [[ $ht == 0 || $have_heaptrack == 0 ]] || modes+=(heaptrack)
  local round mode
  for ((round = 1; round <= rounds; round++)); do
    for mode in "${modes[@]}"; do one_run "$name" "$mode" "$pymalloc" "$setup" "$@"; done
  done
  local key
  key=$(key_of "$name")
  local summary events processes nodes same=yes
  summary=$(grep -h 'memtrack record:.*events from' "$key.stacks.err" | tail -1)
  [[ -n $summary ]] || { echo "real_programs.sh: no summary from record of '$name':" >&2; cat "$key.stacks.err" >&2; exit 1; }
  events=$(echo "$summary" | sed -E 's/.*memtrack record: ([0-9]+) events? from.*/\1/')
  processes=$(echo "$summary" | sed -E 's/.* events? from ([0-9]+) process.*/\1/')
  nodes=$(echo "$summary" | grep -oE '[0-9]+ stack nodes' | cut -d' ' -f1 || true)
  # make -j2 may interleave its two jobs' lines: compare sorted.
  for mode in nostacks stacks; do
    cmp -s <(sort "$key.native.out") <(sort "$key.$mode.out") || same=no
  done
  local htm=0
  [[ ! -f $key.heaptrack.times ]] || htm=$(median < "$key.heaptrack.times")
  emit "$name" "$events" "$processes" "${nodes:-0}" "$(median < "$key.native.times")" \
    "$(median < "$key.nostacks.times")" "$(median < "$key.stacks.times")" "$htm" "$same" "$rounds"
}

if [[ -n $tsv ]]; then : > "$tsv"; fi
printf 'name\tevents\tprocesses\tstack_nodes\tnative_s\tnostacks_s\tstacks_s\theaptrack_s\tsame_output\trounds\n'
workload sqlite3 1 0 "" sqlite3 ":memory:" ".read $work/load.sql"
workload perl 1 0 "" perl -e 'my %h; for my $i (1 .. 100000) { $h{"k$i"} = [$i, "v" x ($i % 40)] }
  my $s = 0; $s += length($_->[1]) for values %h; print "$s\n"'
workload jq 1 0 "" jq -n '[range(60000) | {a: ., b: (. * 2 | tostring), c: [., . + 1]}]
  | map(select(.a % 3 == 0)) | group_by(.a % 10) | map(length)'
workload "python3 --python-malloc" 1 1 "" "$py" -c \
  'd = {str(i): [i] * 3 for i in range(500000)}; print(sum(len(v) for v in d.values()))'
workload "git loop" 0 0 "" sh -c 'for i in $(seq 100); do git --version; done'
workload "git commit" 0 0 setup_git sh -c "cd '$work/repo' && for d in \$(seq 20); do git add d\$d && git commit -q -m d\$d || exit 1; done && git log --format=%T -1"
workload "make -j2" 0 0 "" make -s -B -j2 -C "$work/make"
workload "g++" 0 0 "" g++ -O1 -c "$work/one.cpp" -o "$work/one.o"
