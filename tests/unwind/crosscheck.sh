#!/bin/sh
# usage: crosscheck.sh PRELOAD PROGRAM — runs a Debian program with the crosscheck preload
# (crosscheck_preload.cpp) and passes when every process it started captured stacks and every capture
# agreed with libunwind. The workloads allocate in many shapes (dicts, regexes, B-trees, hashes, sorting,
# compression) so the stacks reach deep into each program's own code and its libraries.
set -eu
preload=$1
program=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
case $program in
  python3) set -- /usr/bin/python3 -c 'import json, re; d = {str(i): [i] * (i % 7) for i in range(20000)}; s = json.dumps(d); print(len(s), len(re.findall("[0-9]+", s)))' ;;
  sqlite3) set -- /usr/bin/sqlite3 :memory: 'create table t(a, b); with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000) insert into t select x, hex(randomblob(16)) from c; create index i on t(b); select count(*) from t where b like "A%";' ;;
  perl) set -- /usr/bin/perl -e 'my %h; $h{$_} = [1 .. ($_ % 9)] for 1 .. 20000; my @k = sort keys %h; print scalar(@k), "\n"' ;;
  sort) set -- sh -c 'seq 1 30000 | /usr/bin/sort -R | /usr/bin/sort -n | tail -1' ;;
  xz) set -- sh -c 'seq 1 30000 | /usr/bin/xz -3 | /usr/bin/xz -d | wc -l' ;;
  *) echo "crosscheck.sh: unknown program $program" >&2; exit 2 ;;
esac
MEMTRACK_CROSSCHECK_LOG=$log LD_PRELOAD=$preload "$@" >/dev/null
cat "$log" >&2
# Every process must report, with captures, and none may report a mismatch.
grep -q 'crosscheck: pid=[0-9]* captures=[1-9]' "$log" || { echo "crosscheck.sh: $program: no captures reported" >&2; exit 1; }
if grep 'crosscheck:' "$log" | grep -qv 'mismatches=0 '; then
  echo "crosscheck.sh: $program: our stacks differ from libunwind's" >&2
  exit 1
fi
