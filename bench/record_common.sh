# shellcheck shell=bash
# Sourced by the bench/record_*.sh scripts: the allocation-churn program they record, their checks of what
# they need, timing a command, and medians. Defines functions only (sourcing runs nothing).

# build_churn DIR: compiles tests/integration/programs/churn.c to DIR/churn (so a Release build without
# tests works too).
build_churn() {
  cc -O2 -pthread "$(dirname "${BASH_SOURCE[0]}")/../tests/integration/programs/churn.c" -o "$1/churn"
}

# build_churn_deep DIR: compiles bench/churn_deep.c (threads of malloc/free at a chosen call depth) to
# DIR/churn_deep, without frame pointers like most distributions' code.
build_churn_deep() {
  cc -O2 -fomit-frame-pointer -pthread "$(dirname "${BASH_SOURCE[0]}")/churn_deep.c" -o "$1/churn_deep"
}

# require_memtrack BUILD_DIR: exits 2, naming the calling script, unless BUILD_DIR/bin/memtrack is built.
require_memtrack() {
  [[ -x $1/bin/memtrack ]] || { echo "$(basename "$0"): no $1/bin/memtrack (build first)" >&2; exit 2; }
}

# use_build [BUILD_DIR]: sets build to BUILD_DIR (default: the repository's build/dev) as an absolute path
# and memtrack to its bin/memtrack, exiting 2 unless that is built.
use_build() {
  build=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../build/dev}" && pwd)
  require_memtrack "$build"
  # shellcheck disable=SC2034 # for the sourcing script
  memtrack=$build/bin/memtrack
}

# use_churn_args [BUILD_DIR] [ROUNDS] [THREADS] [OPS]: the churn scripts' first arguments: use_build, then
# rounds (default 5), threads (2) and ops per thread (1,000,000).
use_churn_args() {
  use_build "${1:-}"
  # shellcheck disable=SC2034 # for the sourcing script
  rounds=${2:-5} threads=${3:-2} ops=${4:-1000000}
}

# require_installed PROGRAM: exits 2, naming the calling script, unless PROGRAM is on the PATH.
require_installed() {
  command -v "$1" > /dev/null || { echo "$(basename "$0"): $1 is not installed" >&2; exit 2; }
}

# make_work: sets work to a new temporary directory, removed when the script exits.
make_work() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

# make_churn_work: make_work, then builds the churn program in it ($work/churn).
make_churn_work() {
  make_work
  build_churn "$work"
}

# use_tsv ARG: sets tsv, the script's TSV output, to ARG, or to "" (none) when ARG is "" or -.
use_tsv() {
  tsv=$1
  [[ $tsv != - ]] || tsv=""
}

# emit FIELD...: one line, the fields joined by tabs, on stdout and appended to $tsv when that is set.
emit() {
  local line
  line=$(IFS=$'\t'; echo "$*")
  printf '%s\n' "$line"
  [[ -z $tsv ]] || printf '%s\n' "$line" >> "$tsv"
}

# timed CMD...: runs CMD and sets wall to its wall time and cpu to its CPU time (user + system, all its
# processes and threads), in seconds. CMD's stdout and stderr are the call's: redirect the call. Uses $work.
timed() {
  /usr/bin/time -o "$work/time" -f "%e %U %S" "$@"
  local user sys
  read -r wall user sys < "$work/time"
  cpu=$(echo "$user + $sys" | bc -l)
}

# run NAME CMD...: timed CMD, appending its wall time to $work/NAME.times and its CPU time to $work/NAME.cpu;
# its stdout goes to $work/NAME.out, stderr to $work/NAME.err.
run() {
  local name=$1
  shift
  timed "$@" > "$work/$name.out" 2> "$work/$name.err"
  echo "$wall" >> "$work/$name.times"
  echo "$cpu" >> "$work/$name.cpu"
}

# ratio A B: A / B, or nan when B is 0 (a smoke run's native time is below GNU time's 10 ms resolution).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.6f\n", a / b }'; }

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# median_where FILE COLUMN KEY...: the median of field COLUMN over the lines of FILE whose first fields are
# KEY... (as many fields as keys).
median_where() {
  local file=$1 column=$2
  shift 2
  awk -v c="$column" -v keys="$*" 'BEGIN {n = split(keys, k, " ")} {for (i = 1; i <= n; i++) if ($i != k[i]) next; print $c}' \
    "$file" | median
}
