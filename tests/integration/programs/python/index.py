# A script building a dict of 100,000 objects in build_index(), called from main() (issue 28's example).
# With TRACEMALLOC=1 in the environment it traces itself with tracemalloc and prints, once the index is
# built, tracemalloc's live bytes per line of this file: "LINE BYTES COUNT" (python_test.cpp compares them
# with memtrack's at the peak, which is the same moment).
import os
import sys

TRACE = os.environ.get("TRACEMALLOC") == "1"
if TRACE:
    import tracemalloc
    tracemalloc.start()


class Item:
    def __init__(self, i):
        self.key = "key-%d" % i
        self.values = [i, i + 1, i + 2]


def build_index(n):
    index = {}
    for i in range(n):
        index[i] = Item(i)
    return index


def report():
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, __file__)])
    for stat in snapshot.statistics("lineno"):
        print(stat.traceback[0].lineno, stat.size, stat.count)


def main():
    index = build_index(100_000)
    if TRACE:
        report()
    else:
        print(len(index))


main()
