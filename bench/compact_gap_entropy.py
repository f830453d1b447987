#!/usr/bin/env python3
"""The entropy of the gap before each event (timestamp_i - timestamp_{i-1}, in event order), alone and given
what a compact frame's reader knows before the timestamps (docs/FORMAT.md, "Compact data frames"): how many
bits per event a better timestamp model could still save.

  memtrack decode --format csv ARTIFACT | head -n 1000001 | bench/compact_gap_entropy.py

Prints, in bits per event: the gap alone; given the kinds of the event and of the one before (version 3's
timestamp groups); given those and whether the thread changed.
"""
import collections
import csv
import math
import sys


def conditional_entropy(pairs):
    """H(value | key) over (key, value) pairs, in bits."""
    by_key = collections.defaultdict(collections.Counter)
    for key, value in pairs:
        by_key[key][value] += 1
    total = sum(sum(c.values()) for c in by_key.values())
    bits = 0.0
    for counts in by_key.values():
        n = sum(counts.values())
        bits -= sum(k * math.log2(k / n) for k in counts.values())
    return bits / total if total else 0.0


def main():
    rows = csv.DictReader(sys.stdin)
    prev = None
    alone, kinds, kinds_thread = [], [], []
    for row in rows:
        if prev is not None:
            gap = int(row["timestamp"]) - int(prev["timestamp"])
            alone.append((None, gap))
            kinds.append(((prev["type"], row["type"]), gap))
            kinds_thread.append(((prev["type"], row["type"], prev["tid"] == row["tid"]), gap))
        prev = row
    print(f"gaps            {len(alone)}")
    print(f"alone           {conditional_entropy(alone):.2f} bits")
    print(f"given kinds     {conditional_entropy(kinds):.2f} bits")
    print(f"  and thread    {conditional_entropy(kinds_thread):.2f} bits")


if __name__ == "__main__":
    main()
