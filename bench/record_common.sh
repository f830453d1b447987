# Sourced by the bench/record_*.sh scripts: the allocation-churn program they record, and a median.

# build_churn DIR: compiles tests/integration/programs/churn.c to DIR/churn (so a Release build without
# tests works too).
build_churn() {
  cc -O2 -pthread "$(dirname "${BASH_SOURCE[0]}")/../tests/integration/programs/churn.c" -o "$1/churn"
}

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
