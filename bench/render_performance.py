#!/usr/bin/python3
"""Writes docs/PERFORMANCE.md from one run of bench/run_suite.sh.

Every number in the document comes from the files of that run (bench.json and heap.json from
memtrack-bench, meta.txt and load.txt from run_suite.sh, encode_rss.tsv from bench/encode_rss.sh,
record_overhead.*.tsv and record_stacks.tsv from the recording scripts, report_size.tsv from
bench/report_size.sh, symbolize.txt from bench/symbolize_throughput.sh, diff_cost.tsv from
bench/diff_cost.sh, compact.tsv from bench/compact_vs_heaptrack.sh, resident_cost.tsv from bench/resident_cost.sh,
resident_accuracy.tsv from bench/resident_accuracy.sh, record_cost.tsv from bench/record_cost.sh, attach_cost.tsv
from bench/attach_cost.sh, real_programs.tsv from bench/real_programs.sh, python_cost.tsv from bench/python_cost.sh); every sentence comes from this template. Prose that explains a number is printed only when the numbers of the run support it. The one
exception is the comparison section, which quotes the published figures of CodSpeed's pull request as
constants below, marked as taken on another machine.

usage: bench/render_performance.py --results DIR --out FILE
       bench/render_performance.py --results DIR --out FILE
           --section diff|compact|resident|resident-accuracy|record-cost|attach-cost|real-programs|python-cost
           [--build BUILD]
           (only the `memtrack diff` section of FILE, from DIR/diff_cost.tsv, the compact artifacts section,
           from DIR/compact.tsv, the resident sampling section, from DIR/resident_cost.tsv, or the peak resident
           section, from DIR/resident_accuracy.tsv, or the recording cost section, from DIR/record_cost.tsv, or
           the attach section, from DIR/attach_cost.tsv, or the real programs' section, from
           DIR/real_programs.tsv, or the Python programs section, from DIR/python_cost.tsv:
           for a machine too slow or too busy for the whole suite; the section says it was run alone)
Exits 1, writing nothing, if a benchmark row the document needs is missing from the JSON or a result file
cannot be read.
"""

import argparse
import datetime
import json
import os
import re
import statistics
import sys
import textwrap

WORKERS = [1, 2, 4, 8, 16, 32, 64]
LEVELS = [-5, -2, -1, 1, 3]
RSS_WORKERS = [1, 4, 16, 64]
# bench/unwind.cpp: every capture variant, at each shape (call sites, threads).
UNWIND = [("Memtrack", "prefix record + rule cache"), ("MemtrackRules", "rule cache only, no prefix reuse"),
          ("MemtrackMiss", "every rule recomputed"), ("Libunwind", "libunwind's unw_backtrace, per-thread cache"),
          ("LibunwindMiss", "the same after unw_flush_cache"), ("GlibcBacktrace", "glibc's backtrace(), libgcc"),
          ("DlIteratePhdr", "one dl_iterate_phdr call, no capture"),
          ("MemtrackInterned", "capture + interning into a hash table of stacks"),
          ("MemtrackTree", "capture + interning into a trace tree")]
UNWIND_SHAPES = [(1, 1), (4, 1), (1, 2), (4, 2)]  # (sites, threads)
STACKS_GOAL = 2.0  # issue 13: heaptrack / memtrack >= 2.0 in wall time with stacks on
DIFF_GOAL = 1.5  # issue 24: diff of two 10M-event recordings with stacks at most 1.5x stats of both
DIFF_GOAL_EVENTS = 10e6
DIFF_HEADER = ["events", "artifact_bytes", "diff_wall_s", "diff_cpu_s", "diff_max_rss_kib", "stats_wall_s",
               "stats_cpu_s", "stats_max_rss_kib"]
# issue 29: record's wall time with resident sampling within 3% of --no-resident (churn 2 x 4M, gcc), the
# sampler at most 2% of one core for 10 busy processes
RESIDENT_WALL_GOAL = 0.03
RESIDENT_CPU_GOAL = 2.0
RESIDENT_HEADER = ["workload", "rounds", "processes", "on_wall_s", "off_wall_s", "on_cpu_s", "off_cpu_s", "samples",
                   "polls", "sampler_cpu_s", "sampler_share_pct"]
RESIDENT_SECTION = "## Sampling resident memory"
# issue 29: peak resident within 5% of VmHWM on single-process programs, of the sum on two processes at once
RESIDENT_ACCURACY_GOAL = 0.05
RESIDENT_ACCURACY_HEADER = ["workload", "processes", "reference", "reference_bytes", "memtrack_bytes"]
RESIDENT_ACCURACY_SECTION = "## Peak resident against the kernel's high-water mark"
# issue 26: with stacks at most 1.2x the --no-stacks wall time on a process-heavy workload; the per-event cost
# at 2 and 8 threads at most 1.25x that at 1 thread
RECORD_COST_PROCESS_GOAL = 1.2
RECORD_COST_THREAD_GOAL = 1.25
RECORD_COST_THREADS = [1, 2, 4, 8]
RECORD_COST_SECTION = "## Recording cost per process, per thread and in the transport"
ATTACH_COST_SECTION = "## Attaching to a running process"
REAL_PROGRAMS_HEADER = ["name", "events", "processes", "stack_nodes", "native_s", "nostacks_s", "stacks_s",
                        "heaptrack_s", "same_output", "rounds"]
REAL_PROGRAMS_SECTION = "## Recording programs nobody here wrote"
# issue 26: with stacks, sqlite3 at most 2.0x native, python3 --python-malloc and perl at most 1.5x; on the
# multi-process workloads stacks at most 1.2x the --no-stacks time
REAL_PROGRAMS_NATIVE_GOALS = {"sqlite3": 2.0, "python3 --python-malloc": 1.5, "perl": 1.5}
REAL_PROGRAMS_MULTI = ["git loop", "git commit", "make -j2"]
PYTHON_COST_SECTION = "## Python programs"
PYTHON_FRAMES_GOAL = 1.3  # issue 28: Python frames at most 1.3x the time of native-only stacks
# issue 25: compact artifacts. Churn with stacks at most heaptrack's bytes per event; the programs at most 4x
# heaptrack's file; realistic events at most half the compatible encoding's size at the same level; encode CPU
# at most 0.6x the compatible encoding's at the same level; stats of a compact artifact no slower.
COMPACT_CHURN_GOAL = 1.0
COMPACT_PROGRAM_GOAL = 4.0
COMPACT_REALISTIC_GOAL = 0.5
COMPACT_CPU_GOAL = 0.6
COMPACT_HEADER = ["name", "events", "compatible_bytes", "compact_bytes", "heaptrack_bytes", "encode_compatible_cpu_s",
                  "encode_compact_cpu_s", "stats_compatible_cpu_s", "stats_compact_cpu_s"]
MIB = 1024.0 * 1024.0
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# CodSpeed pull request #548, "perf(runner-shared): stream memtrack encoder frames instead of windows": the
# design this project implements. Figures as published there, 8-core sandbox, Rust encoder (rmp_serde,
# zstd level -5, 64k-event frames).
CODSPEED = {
    "msgpack_bytes_per_event": 64.0,  # "64 B per event"
    "compressed_mb_per_frame": 1.27,  # "1.27 MB ... per frame after zstd -5"
    "serde_ms_per_frame": 6.3,  # "roughly 6.3 ms for serde versus 3 ms for zstd on a 64k-event frame"
    "handwritten_ms_per_frame": 2.6,  # "gets serialization from about 6.3 to 2.6 ms per frame"
    "zstd_ms_per_frame": 3.0,
    "one_worker_ms_per_1m_events": 210.0,  # "single-worker time is unchanged (210 ms vs 213 ms locally)"
    "peak_mib_before": 80.0,  # "main keeps memory flat at about 80 MiB" (4M events, io::sink)
    "peak_mib_after_16_workers": 120.0,  # "120 vs 81 MiB" at 16 workers
    "per_worker_mib_after_fixup": 6.0,  # "brings the extra memory to about 6 MiB per worker"
    "retained_mib_64_cores": 300.0,  # review finding: "a 64-core run can retain roughly 300 MiB"
}


class Row:
    """One benchmark (all repetitions of it): medians of time and counters, the largest heap peak."""

    def __init__(self, runs):
        self.runs = runs
        self.real_ns = statistics.median(r["real_time"] * TO_NS[r["time_unit"]] for r in runs)
        self.cpu_ns = statistics.median(r["cpu_time"] * TO_NS[r["time_unit"]] for r in runs)
        mem = [r["max_bytes_used"] for r in runs if "max_bytes_used" in r]
        self.heap = max(mem) if mem else None
        growth = [r["net_heap_growth"] for r in runs if "net_heap_growth" in r]
        self.net_growth = max(growth, key=abs) if growth else None
        allocs = [r["allocs_per_iter"] for r in runs if "allocs_per_iter" in r]
        self.allocs = max(allocs) if allocs else None

    def counter(self, name):
        return statistics.median(r[name] for r in self.runs)


def base_name(run_name):
    """BM_X/workers:2/iterations:1/process_time/real_time -> BM_X/workers:2"""
    parts = [p for p in run_name.split("/") if p not in ("real_time", "process_time")]
    parts = [p for p in parts if not p.startswith("iterations:")]
    return "/".join(parts)


def load_rows(path):
    with open(path) as f:
        data = json.load(f)
    groups = {}
    for r in data["benchmarks"]:
        if r.get("run_type", "iteration") != "iteration" or r.get("error_occurred"):
            continue
        groups.setdefault(base_name(r.get("run_name", r["name"])), []).append(r)
    return data["context"], {k: Row(v) for k, v in groups.items()}


def load_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            meta[key] = value
    return meta


def load_loads(path):
    with open(path) as f:
        return [float(line.split()[0]) for line in f if line.strip()]


def load_rss(path):
    if not os.path.exists(path):
        return None
    runs = []
    with open(path) as f:
        for line in f:
            a, w, k, rnd, kib, wall, user, sys_ = line.split()
            runs.append(dict(alloc=a, workers=int(w), in_flight=int(k), kib=int(kib), wall=float(wall),
                             cpu=float(user) + float(sys_)))
    return runs


def load_records(results):
    """Every record_overhead.<ops>.tsv run_suite.sh wrote, smallest workload first."""
    runs = []
    for name in os.listdir(results):
        if name.startswith("record_overhead.") and name.endswith(".tsv"):
            runs.append(load_tsv_keys(os.path.join(results, name)))
    return sorted(runs, key=lambda r: r["events"])


def load_tsv_keys(path):
    """A `key value` file (record_overhead.sh, record_stacks.sh), or None when the file is not there."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return {k: float(v) for k, v in (line.split() for line in f if line.strip())}


def load_report_sizes(path):
    """bench/report_size.sh's TSV (a header line, then one line per recording), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.split() for line in f if line.strip()]
    header = ["variant", "events", "artifact_bytes", "page_bytes", "report_wall_s", "report_user_s",
              "report_max_rss_kib", "stats_wall_s", "stats_user_s", "stats_columns", "top_columns"]
    older = header[:9]  # before the widths were measured
    runs = []
    for n, cols in enumerate(lines, 1):
        if cols in (header, older):
            continue
        if len(cols) not in (len(header), len(older)):
            raise ValueError(f"{path}:{n}: {len(cols)} columns, expected {len(header)} ({' '.join(header)})")
        runs.append({k: (v if k == "variant" else float(v)) for k, v in zip(header, cols)})
    return runs


def load_diff_cost(path):
    """bench/diff_cost.sh's TSV (a header line, then one line per size), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.split() for line in f if line.strip()]
    runs = []
    for n, cols in enumerate(lines, 1):
        if cols == DIFF_HEADER:
            continue
        if len(cols) != len(DIFF_HEADER):
            raise ValueError(f"{path}:{n}: {len(cols)} columns, expected {len(DIFF_HEADER)} ({' '.join(DIFF_HEADER)})")
        runs.append({k: float(v) for k, v in zip(DIFF_HEADER, cols)})
    return sorted(runs, key=lambda r: r["events"])


def load_compact(path):
    """bench/compact_vs_heaptrack.sh's TSV (tab-separated: workload names have spaces), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    runs = []
    for n, cols in enumerate(lines, 1):
        if cols == COMPACT_HEADER:
            continue
        if cols[0] == "record":
            if len(cols) != 7:
                raise ValueError(f"{path}:{n}: a record line of {len(cols)} columns, expected 7 (record name "
                                 "events record_wall_s record_cpu_s compact_wall_s compact_cpu_s)")
            runs.append({"record": True, "name": cols[1], "events": float(cols[2]),
                         "record_wall_s": float(cols[3]), "record_cpu_s": float(cols[4]),
                         "compact_wall_s": float(cols[5]), "compact_cpu_s": float(cols[6])})
            continue
        if len(cols) != len(COMPACT_HEADER):
            raise ValueError(f"{path}:{n}: {len(cols)} columns, expected {len(COMPACT_HEADER)} "
                             f"({' '.join(COMPACT_HEADER)})")
        runs.append({k: (v if k == "name" else float(v)) for k, v in zip(COMPACT_HEADER, cols)})
    return runs


def render_compact(runs, alone=None):
    """The compact artifacts section (bench/compact_vs_heaptrack.sh's runs) as template lines."""
    records = [r for r in runs if r.get("record")]
    runs = [r for r in runs if not r.get("record")]
    out = []
    w = out.append
    w("## Compact artifacts against heaptrack")
    w("")
    w("bench/compact_vs_heaptrack.sh: each program recorded by `memtrack record` (the compatible encoding, zstd "
      "-2), `memtrack record --compact` (compact version 5, zstd 1; docs/FORMAT.md, \"Compact data frames\") and "
      "`heaptrack -o` (its .zst file), stacks on in all three; then the recording's events encoded by one worker "
      "at level 1 in each encoding (the CPU of serialize + compress as `memtrack encode --stats` reports it: the "
      "encode stage's thread CPU time per frame, summed; reading the records, the same for both, is not in it), "
      "and `memtrack stats` of the "
      "compatible recording and of its conversion to compact (`memtrack convert --to compact`: the same events; "
      "two recordings differ in their resident samples, which stats attributes). The realistic events (memtrack-gen-events) are encoded only: no program, no heaptrack. One "
      "recording each; the encode CPU is the median of 5 runs, the stats CPU of 3, the two encodings interleaved. Every compact artifact keeps every field of every event (nanosecond timestamps, every address, "
      "size, pid and tid); heaptrack keeps a timestamp every few milliseconds and an index of a deduplicated "
      "(size, trace) pair per allocation.")
    if alone:
        w("")
        w(alone)
    w("")
    rows_ = []
    for r in runs:
        n = r["events"]
        ht = r["heaptrack_bytes"]
        rows_.append([r["name"], f"{int(n):,}", f"{r['compatible_bytes'] / n:.2f}", f"{r['compact_bytes'] / n:.2f}",
                      f"{ht / n:.2f}" if ht > 0 else "-",
                      xr(r["compact_bytes"], ht) if ht > 0 else "-",
                      xr(r["compact_bytes"], r["compatible_bytes"]),
                      xr(r["encode_compact_cpu_s"], r["encode_compatible_cpu_s"]),
                      f"{r['stats_compatible_cpu_s']:.2f} / {r['stats_compact_cpu_s']:.2f} s"
                      if r["stats_compatible_cpu_s"] > 0 else "-"])
    w(table(["workload", "events", "compatible B/event", "compact B/event", "heaptrack B/event",
             "compact / heaptrack", "compact / compatible", "encode CPU compact / compatible (level 1)",
             "stats CPU compatible / compact"], rows_))
    w("")
    churn = [r for r in runs if r["name"].startswith("churn") and r["heaptrack_bytes"] > 0]
    programs = [r for r in runs if not r["name"].startswith("churn") and r["heaptrack_bytes"] > 0]
    realistic = [r for r in runs if r["heaptrack_bytes"] == 0]
    if churn:
        worst = max(r["compact_bytes"] / r["heaptrack_bytes"] for r in churn)
        w(f"Goal (issue 25): churn with stacks at most heaptrack's bytes per event: at most {worst:.2f}x here, "
          f"{verdict(worst <= COMPACT_CHURN_GOAL)}.")
    if programs:
        worst = max(programs, key=lambda r: r["compact_bytes"] / r["heaptrack_bytes"])
        ratio = worst["compact_bytes"] / worst["heaptrack_bytes"]
        w(f"Goal: the programs at most {COMPACT_PROGRAM_GOAL:.0f}x heaptrack's file: the worst is {worst['name']}, "
          f"{ratio:.1f}x, {verdict(ratio <= COMPACT_PROGRAM_GOAL)}.")
    for r in realistic:
        ratio = r["compact_bytes"] / r["compatible_bytes"]
        w(f"Goal: {r['name']} at most {COMPACT_REALISTIC_GOAL:.1f}x the compatible encoding's size at the same "
          f"level: {ratio:.2f}x, {verdict(ratio <= COMPACT_REALISTIC_GOAL)}.")
    timed = [r for r in runs if r["encode_compatible_cpu_s"] >= 0.5]
    if timed:
        worst = max(r["encode_compact_cpu_s"] / r["encode_compatible_cpu_s"] for r in timed)
        w(f"Goal: encode CPU at most {COMPACT_CPU_GOAL:.1f}x the compatible encoding's at the same level (rows "
          f"with at least 0.5 s of compatible encoding, where the timer's resolution does not decide): at "
          f"most {worst:.2f}x, {verdict(worst <= COMPACT_CPU_GOAL)}.")
    stats = [r for r in runs if r["stats_compatible_cpu_s"] >= 0.5]
    if stats:
        worst = max(r["stats_compact_cpu_s"] / r["stats_compatible_cpu_s"] for r in stats)
        w(f"Goal: stats of a compact recording no slower than of the compatible one (rows with at least 0.5 s): "
          f"at most {worst:.2f}x, {verdict(worst <= 1.0)}.")
    if records:
        w("")
        w("`memtrack record --compact` against `memtrack record` (stacks on, each its default level; 3 rounds "
          "interleaved, medians; wall and CPU of the recorder and the program together):")
        w("")
        w(table(["workload", "events", "record wall / CPU", "record --compact wall / CPU",
                 "wall compact / compatible", "CPU compact / compatible"],
                [[r["name"], f"{int(r['events']):,}", f"{r['record_wall_s']:.2f} / {r['record_cpu_s']:.2f} s",
                  f"{r['compact_wall_s']:.2f} / {r['compact_cpu_s']:.2f} s",
                  xr(r["compact_wall_s"], r["record_wall_s"]), xr(r["compact_cpu_s"], r["record_cpu_s"])]
                 for r in records]))
        w("")
        for r in records:
            ratio = r["compact_wall_s"] / r["record_wall_s"]
            w(f"Goal: `record --compact` of {r['name']} faster than `record`: {ratio:.2f}x its wall time, "
              f"{verdict(ratio < 1.0)}.")
    w("")
    if any(r["compact_bytes"] > r["heaptrack_bytes"] for r in churn + programs):
        w("Where the compact bytes go, column by column (the nanosecond timestamps first), and why heaptrack's "
          "file is smaller: docs/FORMAT.md, \"Compact data frames\".")
        w("")
    return out


REPORT_SECTION = "## `memtrack report`"


def render_report(reports, alone=None):
    """The `memtrack report` section (bench/report_size.sh's runs) as template lines. `alone`: a sentence
    saying the section was regenerated without the rest of the document, and from which run."""
    out = []
    w = out.append
    w(REPORT_SECTION)
    w("")
    w("bench/report_size.sh: the HTML report's generation time, peak RSS and page size, beside `memtrack "
      "stats` on the same artifact (the floor: the same read of every frame and the same heap accounting, "
      "without the timeline, flame graphs, tables and page). \"events\" are realistic events "
      "(memtrack-gen-events | memtrack encode: several processes, frees, reallocs, mappings; no call stacks); "
      "\"stacks\" is bench/churn_deep.c recorded with stacks on (2 threads, one call site at a depth of 24 "
      "frames), so every allocation is attributed to a site, but the flame graphs stay small; \"compile\" is "
      "g++ -O1 -c of a C++ file using <regex>, <map> and <iostream> recorded with stacks: thousands of sites "
      "with deep stacks in several processes, what the tables, flame graphs and page grow with (its memory is "
      "bounded by the distinct frames and paths, not by sites times frames); \"procs40\" is `sh -c 'for i in "
      "$(seq 40); do sort /etc/services >/dev/null; done'` recorded with stacks: 41 processes, what the "
      "per-process series, markers and legend grow with (the page draws the 8 highest peaks, the rest behind "
      "\"+K more\", and the report keeps at most 32 processes' series). The widths are the widest line, in "
      "columns, of `memtrack stats FILE` and `memtrack top FILE` on the same artifact (issue 23 asks for 100; "
      "top needs call stacks, so none for \"events\"). One run each.")
    if alone:
        w("")
        w(alone)
    w("")
    rrows = []
    widths = any("stats_columns" in r for r in reports)
    for r in reports:
        row = [r["variant"], f"{int(r['events']):,}", mib(r["artifact_bytes"]),
               f"{r['page_bytes'] / 1024:.0f} KiB", f"{r['report_wall_s']:.2f} / {r['report_user_s']:.2f} s",
               mib(r["report_max_rss_kib"] * 1024), f"{r['stats_wall_s']:.2f} / {r['stats_user_s']:.2f} s",
               xr(r["report_wall_s"], r["stats_wall_s"]),
               f"{r['events'] / r['report_wall_s'] / 1e6:.1f} M/s" if r["report_wall_s"] > 0 else "n/a"]
        if widths:
            top = r.get("top_columns", 0)
            row.append(f"{int(r['stats_columns'])} / {int(top) if top else 'n/a'}" if "stats_columns" in r else "n/a")
        rrows.append(row)
    header = ["recording", "events", "artifact", "page", "report wall / user", "report peak RSS",
              "stats wall / user", "report / stats (wall)", "report events/s"]
    if widths:
        header.append("stats / top width (columns)")
    w(table(header, rrows))
    w("")
    target = 100e6
    for variant in ("events", "stacks"):
        runs = sorted((r for r in reports if r["variant"] == variant), key=lambda r: r["events"])
        if len(runs) < 2 or runs[-1]["events"] == runs[0]["events"]:
            continue
        a, z = runs[0], runs[-1]

        def extra(key):
            return a[key] + (z[key] - a[key]) * (target - a["events"]) / (z["events"] - a["events"])

        w(f"\"{variant}\" at 100M events, extrapolated linearly from the {int(a['events']):,} and "
          f"{int(z['events']):,} rows: the report would take {extra('report_wall_s'):.0f} s against "
          f"{extra('stats_wall_s'):.0f} s for stats. The page grew by "
          f"{(z['page_bytes'] - a['page_bytes']) / 1024:+.0f} KiB from the smaller recording to the larger; at "
          f"that rate it would be {max(extra('page_bytes'), 0) / 1024:,.0f} KiB at 100M, an upper bound, since "
          "the series are cut to a fixed number of points and the flame graphs pruned by share, not by count.")
        w("")
    return out


def render_diff(diffs, alone=None):
    """The `memtrack diff` section (bench/diff_cost.sh's runs) as template lines. `alone`: a sentence saying
    the section was regenerated without the rest of the document, and from which run."""
    out = []
    w = out.append
    w("## `memtrack diff`")
    w("")
    w("bench/diff_cost.sh: `memtrack diff` of two recordings beside `memtrack stats` of each of the same two files "
      "(the floor: the same read of every frame, the same heap accounting and the same site accumulator, without "
      "the pairing and the tables). Each recording is bench/churn_deep.c recorded with stacks on (2 threads of "
      "malloc/free at a call depth of 24 frames, every event with a stack id); the stats columns are both runs "
      "together (wall and CPU summed, the larger peak RSS). One run each; the ratios are of CPU (user + system), "
      "which a busy neighbour disturbs less than wall time.")
    if alone:
        w("")
        w(alone)
    w("")
    rows_ = []
    for r in diffs:
        rows_.append([f"{int(r['events']):,}", mib(r["artifact_bytes"]),
                      f"{r['diff_wall_s']:.2f} / {r['diff_cpu_s']:.2f} s",
                      f"{r['stats_wall_s']:.2f} / {r['stats_cpu_s']:.2f} s", xr(r["diff_cpu_s"], r["stats_cpu_s"]),
                      xr(r["diff_wall_s"], r["stats_wall_s"]), mib(r["diff_max_rss_kib"] * 1024),
                      mib(r["stats_max_rss_kib"] * 1024)])
    w(table(["events per recording", "artifact (each)", "diff wall / CPU", "stats of both wall / CPU",
             "diff / stats (CPU)", "diff / stats (wall)", "diff peak RSS", "stats peak RSS (larger)"], rows_))
    w("")
    big = diffs[-1]
    if big["events"] >= DIFF_GOAL_EVENTS * 0.99 and big["stats_cpu_s"] > 0:
        ratio = big["diff_cpu_s"] / big["stats_cpu_s"]
        w(f"Goal (issue 24): diff of two {DIFF_GOAL_EVENTS / 1e6:.0f}M-event recordings with stacks at most "
          f"{DIFF_GOAL:.1f}x stats of both: {ratio:.2f}x in CPU at {int(big['events']):,} events, "
          f"{verdict(ratio <= DIFF_GOAL)}.")
        w("")
    small = diffs[0]
    if len(diffs) >= 2 and big["events"] > small["events"] and small["diff_max_rss_kib"] > 0:
        grew = big["events"] / small["events"]
        d_rss = big["diff_max_rss_kib"] / small["diff_max_rss_kib"]
        s_rss = big["stats_max_rss_kib"] / small["stats_max_rss_kib"] if small["stats_max_rss_kib"] > 0 else 0
        w(f"Memory: from {int(small['events']):,} to {int(big['events']):,} events ({grew:.0f}x), diff's peak RSS "
          f"went from {mib(small['diff_max_rss_kib'] * 1024)} to {mib(big['diff_max_rss_kib'] * 1024)} "
          f"({d_rss:.2f}x) and stats' from {mib(small['stats_max_rss_kib'] * 1024)} to "
          f"{mib(big['stats_max_rss_kib'] * 1024)} ({s_rss:.2f}x).")
        if d_rss < grew / 2:
            w("diff's memory does not follow the events: it holds the sites and live blocks of one recording at a "
              "time (churn_deep has one call site and at most 128 live blocks), plus what stats' own read holds.")
        else:
            w("**diff's memory grew with the events** in this run.")
        w("")
    return out


def load_resident_cost(path):
    """bench/resident_cost.sh's TSV (a header line, then one line per workload), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.split("\t") for line in f.read().split("\n") if line.strip()]
    runs = []
    for n, cols in enumerate(lines, 1):
        if cols == RESIDENT_HEADER:
            continue
        if len(cols) != len(RESIDENT_HEADER):
            raise ValueError(f"{path}:{n}: {len(cols)} columns, expected {len(RESIDENT_HEADER)} "
                             f"({' '.join(RESIDENT_HEADER)})")
        row = {k: float(v) for k, v in zip(RESIDENT_HEADER[1:], cols[1:])}
        row["workload"] = cols[0]
        runs.append(row)
    return runs


RESIDENT_WORKLOADS = {
    "churn": "churn 2 x 4M (tests/integration/programs/churn.c)",
    "gcc": "g++ -O2 -c analysis/src/timeline.cpp",
    "busy": "10 x `resident busy 3000`, --no-stacks",
}


def render_resident(runs, alone=None):
    """The resident sampling section (bench/resident_cost.sh's runs) as template lines. `alone`: as in
    render_diff."""
    out = []
    w = out.append
    w(RESIDENT_SECTION)
    w("")
    w("bench/resident_cost.sh: `memtrack record` (stacks on unless said) with resident sampling and with "
      "`--no-resident`, interleaved round by round, medians; wall and CPU (user + system of the recorder and every "
      "process it ran). The sampler's columns come from record's summary of the runs with sampling: samples "
      "written, statm polls, its thread's CPU time and that time's share of one core over the recording "
      "(docs/RUNTIME.md, \"Resident memory\").")
    if alone:
        w("")
        w(alone)
    w("")
    rows_ = []
    for r in runs:
        rows_.append([RESIDENT_WORKLOADS.get(r["workload"], r["workload"]), f"{int(r['processes'])}",
                      f"{int(r['rounds'])}", f"{r['on_wall_s']:.2f} / {r['off_wall_s']:.2f} s",
                      f"{(r['on_wall_s'] / r['off_wall_s'] - 1) * 100:+.1f}%" if r["off_wall_s"] > 0 else "n/a",
                      f"{r['on_cpu_s']:.2f} / {r['off_cpu_s']:.2f} s",
                      f"{int(r['samples']):,} / {int(r['polls']):,}", f"{r['sampler_cpu_s'] * 1000:.1f} ms",
                      f"{r['sampler_share_pct']:.2f}%"])
    w(table(["workload", "processes", "rounds", "wall, sampling / --no-resident", "wall change",
             "CPU, sampling / --no-resident", "samples / polls", "sampler CPU", "sampler share of one core"], rows_))
    w("")
    by = {r["workload"]: r for r in runs}
    walls = [(k, by[k]) for k in ("churn", "gcc") if k in by and by[k]["off_wall_s"] > 0]
    if walls:
        parts = [f"{k} {(r['on_wall_s'] / r['off_wall_s'] - 1) * 100:+.1f}%" for k, r in walls]
        ok = all(r["on_wall_s"] <= r["off_wall_s"] * (1 + RESIDENT_WALL_GOAL) for _, r in walls)
        w(f"Goal (issue 29): record's wall time with sampling within {RESIDENT_WALL_GOAL * 100:.0f}% of "
          f"`--no-resident` on churn 2 x 4M and on gcc: {', '.join(parts)} in wall time, {verdict(ok)}. A "
          "difference smaller than the rounds' spread on a shared machine is noise, in either direction; what "
          "sampling adds by construction is the sampler thread's CPU, "
          + ", ".join(f"{r['sampler_cpu_s'] / r['on_wall_s'] * 100:.1f}% of {k}'s wall time" for k, r in walls
                      if r["on_wall_s"] > 0) + ".")
        w("")
    if "busy" in by:
        b = by["busy"]
        w(f"Goal (issue 29): the sampler at most {RESIDENT_CPU_GOAL:.0f}% of one core for 10 busy processes: "
          f"{b['sampler_share_pct']:.2f}% ({b['sampler_cpu_s'] * 1000:.1f} ms over the recording, "
          f"{int(b['samples']):,} samples from {int(b['polls']):,} polls), "
          f"{verdict(b['sampler_share_pct'] <= RESIDENT_CPU_GOAL)}. The thread stretches its poll intervals while "
          "it uses more than 1.5% (kCpuBudget) over a 250 ms window: a target it steers toward, not a bound, since "
          "each sample's own reads and the page snapshots (their own share) come on top of the polls it stretches "
          "(docs/RUNTIME.md, \"Resident memory\"); the samples and polls say how much sampling that CPU bought.")
        w("")
    return out


def render_record_cost(c, alone=None):
    """The recording cost section (bench/record_cost.sh's `key value` figures) as template lines. `alone`: as
    in render_diff."""
    out = []
    w = out.append
    w(RECORD_COST_SECTION)
    w("")
    procs = int(c["proc_git_processes"])
    w(f"bench/record_cost.sh, {rounds_phrase(int(c['rounds']))}. Per process: `sh -c 'for i in "
      f"$(seq {procs}); do git --version >/dev/null; done'` ({int(c['proc_processes'])} processes) natively, "
      "under `memtrack record --no-stacks` and under `memtrack record` (stacks, the default); minor page faults "
      "are GNU time's %R, of the command and every process it waited for (the recorder's own included).")
    if alone:
        w("")
        w(alone)
    w("")
    n = c["proc_native_wall"]
    rows_ = []
    for side, label in (("native", "native"), ("nostacks", "`record --no-stacks`"), ("stacks", "`record` (stacks)")):
        wall, faults = c[f"proc_{side}_wall"], c[f"proc_{side}_faults"]
        extra = (faults - c["proc_native_faults"]) / procs
        rows_.append([label, f"{wall:.2f} s", f"{c[f'proc_{side}_cpu']:.2f} s", xr(wall, n), f"{int(faults):,}",
                      "" if side == "native" else f"{extra:+.0f}",
                      "" if side == "native" else f"{(wall - n) / procs * 1000:+.2f} ms"])
    w(table(["run", "wall", "CPU", "wall / native", "minor faults", "extra faults per git process",
             "extra wall per git process"], rows_))
    w("")
    s_, ns_ = c["proc_stacks_wall"], c["proc_nostacks_wall"]
    if ns_ > 0:
        w(f"Goal (issue 26): with stacks at most {RECORD_COST_PROCESS_GOAL}x the `--no-stacks` wall time on a "
          f"process-heavy workload: {x(s_ / ns_)} on this loop, {verdict(s_ <= ns_ * RECORD_COST_PROCESS_GOAL)}. "
          f"Stacks cost {(c['proc_stacks_faults'] - c['proc_nostacks_faults']) / procs:.0f} minor faults and "
          f"{(s_ - ns_) / procs * 1000:.2f} ms of wall time per process over `--no-stacks`.")
        w("")
    w("Per thread: tests/integration/programs/churn.c with the same total of operations (one malloc, realloc or "
      f"free each: one event each, {int(c['thr1_events']):,} events with the C runtime's own) split over 1, 2, 4 "
      "and 8 threads, natively, under heaptrack and under `memtrack record` (stacks on); wall time per event, and "
      "the recording's extra wall time per event ((recorded - native) / events). This machine has "
      f"{os.cpu_count()} cores: past that the threads share them, and the extra per event is what recording "
      "adds to all of them.")
    w("")
    rows_ = []
    base = None
    extras = {}
    for t in RECORD_COST_THREADS:
        ev = c[f"thr{t}_events"]
        nat, ht, mt = (c[f"thr{t}_{k}_wall"] for k in ("native", "heaptrack", "memtrack"))
        ht_x, mt_x = (ht - nat) * 1e9 / ev, (mt - nat) * 1e9 / ev
        extras[t] = mt_x
        if base is None:
            base = mt_x
        rows_.append([f"{t}", f"{nat * 1e9 / ev:.0f} ns", f"{ht * 1e9 / ev:.0f} ns", f"{mt * 1e9 / ev:.0f} ns",
                      f"{ht_x:.0f} ns", f"{mt_x:.0f} ns", xr(mt_x, base), xr(ht - nat, mt - nat)])
    w(table(["threads", "native per event", "heaptrack per event", "memtrack per event", "heaptrack extra",
             "memtrack extra", "memtrack extra / 1 thread", "heaptrack extra / memtrack extra"], rows_))
    w("")
    lost = int(c["thr_lost_events"])
    w(f"Lost events over all rounds and thread counts (fewer in the artifact than churn made): {lost:,}.")
    w("")
    if base and base > 0:
        ok = all(extras[t] <= base * RECORD_COST_THREAD_GOAL for t in (2, 8))
        w(f"Goal (issue 26): the per-event cost (memtrack's extra) at 2 and 8 threads at most "
          f"{RECORD_COST_THREAD_GOAL}x that at 1 thread: {x(extras[2] / base)} at 2 threads and "
          f"{x(extras[8] / base)} at 8, {verdict(ok)}.")
        w("")
    w(f"The transport alone: bench/transport_floor.c, {int(c['transport_events']):,} 48-byte events split over P "
      "producer threads, one consumer copying them out; the ring is the runtime's (one fetch_add ticket per "
      "event on a shared head, slot handoff by sequence number, causal by construction), the pipe takes per-thread "
      "85-event batches (one write(2) each; not causal across threads without a merge), the merge is per-thread "
      "rings with no shared counter whose events carry an ordered TSC reading, merged by the consumer in "
      "timestamp order (a model of the alternative; its protocol is in the program's header). Every producer "
      "reads the TSC once per event, as the runtime does. One run per P.")
    w("")
    rows_ = []
    r1 = c["transport1_ring_ns"]
    m1 = c.get("transport1_merge_ns")
    for p in RECORD_COST_THREADS:
        ring, pipe = c[f"transport{p}_ring_ns"], c[f"transport{p}_pipe_ns"]
        merge = c.get(f"transport{p}_merge_ns")
        rows_.append([f"{p}", f"{ring:.1f} ns", xr(ring, r1), f"{pipe:.1f} ns", xr(pipe, ring)] +
                     ([f"{merge:.1f} ns", xr(merge, m1), xr(merge, ring)] if merge and m1 else ["-", "-", "-"]))
    w(table(["producers", "ring per event", "ring / 1 producer", "pipe (batches) per event", "pipe / ring",
             "merge per event", "merge / 1 producer", "merge / ring"], rows_))
    w("")
    return out


def render_attach_cost(c, alone=None, skipped=None):
    """The `memtrack attach` section (bench/attach_cost.sh's `key value` figures) as template lines, or the line
    saying why it was skipped. `alone`: as in render_diff."""
    out = []
    w = out.append
    w(ATTACH_COST_SECTION)
    w("")
    if c is None:
        w(f"bench/attach_cost.sh was skipped: {skipped}.")
        w("")
        return out
    threads, iters = int(c["threads"]), int(c["iters"])
    rounds = int(c["rounds"])
    w(f"bench/attach_cost.sh, {rounds_phrase(rounds)}: "
      "tests/integration/programs/"
      f"attach_loop.cpp ({threads} thread{'s' if threads != 1 else ''} x {iters:,} iterations of malloc, calloc, "
      "realloc, free and new[]/delete[]) natively, under `memtrack record --no-stacks` and under `memtrack attach "
      "--no-stacks` from its \"ready\" line until it exits: the hooks and the ring alone, like for like (the stack "
      "capture is the same code under both). "
      "Cost per event: the program's wall time minus the native one, over the events that run recorded. The "
      "pauses: how long the injecting thread was stopped while attaching (dlopen, the ring, preparing the hooks, "
      "the commit with the other threads stopped) and while detaching (one call restoring the entries), from "
      "attach's summary, on the same program with `--duration 0.3`, one attach and one detach per round.")
    if alone:
        w("")
        w(alone)
    w("")
    n = c["native_wall"]
    rc = (c["record_wall"] - n) / c["record_events"] * 1e9 if c["record_events"] > 0 else 0.0
    ac = (c["attach_wall"] - n) / c["attach_events"] * 1e9 if c["attach_events"] > 0 else 0.0
    w(table(["run", "wall", "wall / native", "events", "cost per event"], [
        ["native", f"{n:.3f} s", "1.00x", "", ""],
        ["`record --no-stacks`", f"{c['record_wall']:.3f} s", xr(c["record_wall"], n), f"{int(c['record_events']):,}",
         f"{rc:.0f} ns"],
        ["`attach --no-stacks`", f"{c['attach_wall']:.3f} s", xr(c["attach_wall"], n), f"{int(c['attach_events']):,}",
         f"{ac:.0f} ns"],
    ]))
    w("")
    if rc > 0 and ac > 0:
        w(f"Attach's cost per event is {x(ac / rc)} record's (issue 27 asks for the same: the entry-patched hooks and "
          "the ring are the code `record` runs for the entries it patches).")
    else:
        w("The recorded runs were not slower than the native one by a measurable amount in this run, so no ratio "
          "of costs per event is given.")
    w("")
    w(table(["pause (median)", "ms"], [
        ["attaching", f"{c['attach_pause_ms']:.2f}"],
        ["detaching", f"{c['detach_pause_ms']:.2f}"],
    ]))
    w("")
    return out


def load_real_programs(path):
    """bench/real_programs.sh's TSV (a header line, then one line per workload), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.split("\t") for line in f.read().split("\n") if line.strip()]
    runs = []
    for n, cols in enumerate(lines, 1):
        if cols == REAL_PROGRAMS_HEADER or cols == REAL_PROGRAMS_HEADER[:-1]:
            continue
        # Lines written before the rounds column existed have one field less: their rounds are unknown.
        if len(cols) not in (len(REAL_PROGRAMS_HEADER), len(REAL_PROGRAMS_HEADER) - 1):
            raise ValueError(f"{path}:{n}: {len(cols)} fields, expected {len(REAL_PROGRAMS_HEADER)}")
        try:
            r = {"name": cols[0], "same_output": cols[8], "rounds": int(cols[9]) if len(cols) > 9 else None}
            for k, v in zip(REAL_PROGRAMS_HEADER[1:8], cols[1:8]):
                r[k] = float(v)
        except ValueError:
            raise ValueError(f"{path}:{n}: a field is not a number")
        runs.append(r)
    return runs


def render_real_programs(runs, alone=None):
    """The real-program section (bench/real_programs.sh's lines) as template lines. `alone`: as in
    render_diff."""
    out = []
    w = out.append
    w(REAL_PROGRAMS_SECTION)
    w("")
    rounds = {r["rounds"] for r in runs}
    phrase = rounds_phrase(rounds.pop()) if len(rounds) == 1 and None not in rounds else "interleaved rounds, medians"
    w(f"bench/real_programs.sh, {phrase} of wall time: each program natively, under `memtrack "
      "record --no-stacks`, under `memtrack record` (stacks, the default) and, for the single-process ones, under "
      "heaptrack (which follows the first process of a tree only). The workloads are the script's (sqlite3's "
      "inserts, index and queries in memory; a perl hash; jq building and grouping objects; python3 building a "
      "dict under `--python-malloc`; a loop of 100 `git --version`; 20 `git add` and `git commit`; `make -B -j2` "
      "of 9 C files; g++ of one C++ file). Events, processes and stack nodes are the stacks recording's (record's "
      "summary); \"same output\": the program's stdout under both recordings equals the native one.")
    if alone:
        w("")
        w(alone)
    w("")
    rows_ = []
    for r in runs:
        n = r["native_s"]
        ht = r["heaptrack_s"]
        rows_.append([r["name"], f"{int(r['events']):,}", f"{int(r['processes']):,}",
                      f"{r['stack_nodes'] / r['events']:.3f}" if r["events"] > 0 else "n/a",
                      f"{n:.2f} s", xr(r["nostacks_s"], n), xr(r["stacks_s"], n),
                      xr(r["stacks_s"], r["nostacks_s"]), xr(ht, n) if ht > 0 else "",
                      r["same_output"]])
    w(table(["workload", "events", "processes", "stack nodes per event", "native", "`--no-stacks` / native",
             "stacks / native", "stacks / `--no-stacks`", "heaptrack / native", "same output"], rows_))
    w("")
    by_name = {r["name"]: r for r in runs}
    goals = []
    for name, goal in REAL_PROGRAMS_NATIVE_GOALS.items():
        r = by_name.get(name)
        if r and r["native_s"] > 0:
            v = r["stacks_s"] / r["native_s"]
            goals.append(f"{name} with stacks at most {goal:.1f}x native: {x(v)}, {verdict(v <= goal)}")
    for name in REAL_PROGRAMS_MULTI:
        r = by_name.get(name)
        if r and r["nostacks_s"] > 0:
            v = r["stacks_s"] / r["nostacks_s"]
            goals.append(f"{name} with stacks at most {RECORD_COST_PROCESS_GOAL:.1f}x `--no-stacks`: {x(v)}, "
                         f"{verdict(v <= RECORD_COST_PROCESS_GOAL)}")
    if goals:
        w("Goals (issue 26): " + "; ".join(goals) + ".")
        w("")
    differ = [r["name"] for r in runs if r["same_output"] != "yes"]
    if differ:
        w("**The output differed under recording** for: " + ", ".join(differ) + ".")
        w("")
    return out


def render_python_cost(c, alone=None):
    """The Python programs section (bench/python_cost.sh's `key value` figures) as template lines. `alone`: as
    in render_diff."""
    out = []
    w = out.append
    w(PYTHON_COST_SECTION)
    w("")
    w(f"bench/python_cost.sh, {rounds_phrase(int(c['rounds']))}, on Debian's "
      "/usr/bin/python3. "
      f"Two workloads: bench/python/json_regex.py ({int(c['json_records']):,} records through json.dumps/loads, "
      f"re.findall and re.sub, {int(c['json_rounds'])} round{'s' if int(c['json_rounds']) != 1 else ''}) and `python3 -m pytest -q -p no:cacheprovider` "
      "of bench/python/pytest_suite (10 small tests; PYTHONDONTWRITEBYTECODE=1, so every run compiles alike). "
      "Each natively (and, where the run has it, natively with PYTHONMALLOC=malloc, the objects from the "
      "system allocator), under `memtrack record` with native-only stacks (`MEMTRACK_PYTHON_FRAMES=0`), under "
      "`memtrack record` (Python frames in stacks, pymalloc's allocations through the allocator domains) and "
      "under `memtrack record --python-malloc` (Python frames, the objects from malloc). Wall and CPU time of "
      "the whole command (recorder and program); events and stack nodes from record's summary (the trace "
      "tree holds at most 4,194,303 nodes: past that a stack is cut to its longest known prefix, docs/"
      "RUNTIME.md; \"(full)\": the preload said so in a round).")
    if alone:
        w("")
        w(alone)
    w("")
    labels = (("native", "native"), ("nativemalloc", "native, PYTHONMALLOC=malloc"),
              ("nopy", "`record`, native-only stacks"), ("py", "`record`, Python frames"),
              ("pymalloc", "`record --python-malloc`, Python frames"))
    for wl, title in (("json", "JSON/regex script"), ("pytest", "`python3 -m pytest`")):
        n_wall, n_cpu = c[f"{wl}_native_wall"], c[f"{wl}_native_cpu"]
        rows_ = []
        for m, label in labels:
            if f"{wl}_{m}_wall" not in c:
                continue  # results of a run before the mode was added
            wall, cpu = c[f"{wl}_{m}_wall"], c[f"{wl}_{m}_cpu"]
            rows_.append([label, f"{wall:.2f} s", f"{cpu:.2f} s", xr(wall, n_wall), xr(cpu, n_cpu),
                          "" if m.startswith("native") else f"{int(c[f'{wl}_{m}_events']):,}",
                          "" if m.startswith("native") else f"{int(c[f'{wl}_{m}_nodes']):,}"
                          + (" (full)" if c.get(f"{wl}_{m}_full", 0) else "")])
        w(f"{title}:")
        w("")
        w(table(["run", "wall", "CPU", "wall / native", "CPU / native", "events", "stack nodes"], rows_))
        w("")
    goals = []
    ok_all = True
    for wl, name in (("json", "the JSON/regex script"), ("pytest", "pytest")):
        cpu_r = c[f"{wl}_py_cpu"] / c[f"{wl}_nopy_cpu"] if c[f"{wl}_nopy_cpu"] > 0 else 0
        wall_r = c[f"{wl}_py_wall"] / c[f"{wl}_nopy_wall"] if c[f"{wl}_nopy_wall"] > 0 else 0
        ok = cpu_r <= PYTHON_FRAMES_GOAL and wall_r <= PYTHON_FRAMES_GOAL
        ok_all = ok_all and ok
        goals.append(f"{x(cpu_r)} the CPU and {x(wall_r)} the wall time on {name}")
    w(f"Goal (issue 28): Python frames at most {PYTHON_FRAMES_GOAL}x the time of native-only stacks: "
      f"{'; '.join(goals)}, {verdict(ok_all)}.")
    w("")
    mal = []
    ok_all = True
    own = []  # where the program alone is slower with pymalloc than with malloc: what the recording adds
    for wl, name in (("json", "the JSON/regex script"), ("pytest", "pytest")):
        cpu_r = c[f"{wl}_py_cpu"] / c[f"{wl}_pymalloc_cpu"] if c[f"{wl}_pymalloc_cpu"] > 0 else 0
        ok_all = ok_all and cpu_r <= 1.0
        mal.append(f"{x(cpu_r)} on {name}")
        native_malloc = c.get(f"{wl}_nativemalloc_cpu", 0)
        if cpu_r > 1.0 and native_malloc > 0 and c[f"{wl}_native_cpu"] > native_malloc:
            added_py = c[f"{wl}_py_cpu"] - c[f"{wl}_native_cpu"]
            added_malloc = c[f"{wl}_pymalloc_cpu"] - native_malloc
            if added_malloc > 0:
                own.append(f"on {name} the program alone takes {x(c[f'{wl}_native_cpu'] / native_malloc)} the CPU "
                           f"with pymalloc that it takes with PYTHONMALLOC=malloc, and what recording adds to it is "
                           f"{x(added_py / added_malloc)} without `--python-malloc` against with it")
    w("Goal (issue 28): recording without `--python-malloc` no slower than with it (CPU time, without / with): "
      f"{'; '.join(mal)}, {verdict(ok_all)}."
      + (f" Natively, {'; '.join(own)} (the rows above: recorded minus native, each with its own allocator)."
         if own else ""))
    w("")
    return out


def load_resident_accuracy(path):
    """bench/resident_accuracy.sh's TSV (a header line, then one line per workload), or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.split("\t") for line in f.read().split("\n") if line.strip()]
    runs = []
    for n, cols in enumerate(lines, 1):
        if cols == RESIDENT_ACCURACY_HEADER:
            continue
        if len(cols) != len(RESIDENT_ACCURACY_HEADER) or cols[2] not in ("vmhwm", "maxrss"):
            raise ValueError(f"{path}:{n}: expected {len(RESIDENT_ACCURACY_HEADER)} columns "
                             f"({' '.join(RESIDENT_ACCURACY_HEADER)}), reference vmhwm or maxrss")
        runs.append(dict(workload=cols[0], processes=int(cols[1]), reference=cols[2],
                         reference_bytes=int(cols[3]), memtrack_bytes=int(cols[4])))
    return runs


RESIDENT_ACCURACY_WORKLOADS = {
    "touch64": ("`resident touch 64 64 300`: 64 MiB, all touched", "its VmHWM at its end"),
    "touch16": ("`resident touch 64 16 300`: 64 MiB, 16 touched", "its VmHWM at its end"),
    "fork": ("`resident fork 32 300`: 2 processes holding 32 MiB each at once", "the sum of their VmHWMs"),
    "python": ("python3 building a list of 3M strings", "GNU time's max RSS"),
    "gcc": ("g++ -O2 -c analysis/src/timeline.cpp", "GNU time's max RSS (the largest process)"),
    "sqlite": ("sqlite3 filling an in-memory table of 300,000 rows", "GNU time's max RSS"),
}


def render_resident_accuracy(runs, alone=None):
    """The peak resident section (bench/resident_accuracy.sh's runs) as template lines. `alone`: as in
    render_diff."""
    out = []
    w = out.append
    w(RESIDENT_ACCURACY_SECTION)
    w("")
    w("bench/resident_accuracy.sh: each workload once natively, its reference taken there (so memtrack's own "
      "pages, which its figures leave out, are in neither), and once under `memtrack record` (stacks on). For "
      "tests/integration/programs/resident.c the reference is the VmHWM the program reads from /proc/self/status "
      "at its end and memtrack's figure stats' peak resident (the sum over the processes alive); for the real "
      "programs the reference is GNU time's maximum resident set size (%M: of the largest process) and "
      "memtrack's figure the largest per-process `peak_resident_bytes` of `stats --json`.")
    if alone:
        w("")
        w(alone)
    w("")
    rows_ = []
    for r in runs:
        what, ref = RESIDENT_ACCURACY_WORKLOADS.get(r["workload"], (r["workload"], r["reference"]))
        rel = (r["memtrack_bytes"] / r["reference_bytes"] - 1) * 100 if r["reference_bytes"] > 0 else None
        rows_.append([what, f"{r['processes']}", ref, mib(r["reference_bytes"]), mib(r["memtrack_bytes"]),
                      f"{rel:+.1f}%" if rel is not None else "n/a"])
    w(table(["workload", "processes sampled", "reference", "reference", "memtrack's peak resident", "difference"],
            rows_))
    w("")
    by = {r["workload"]: r for r in runs}

    def within(r):
        return r["reference_bytes"] > 0 and abs(r["memtrack_bytes"] / r["reference_bytes"] - 1) <= \
            RESIDENT_ACCURACY_GOAL

    def pct(r):
        return f"{(r['memtrack_bytes'] / r['reference_bytes'] - 1) * 100:+.1f}%"

    single = [(k, by[k]) for k in ("touch64", "touch16", "python", "sqlite") if k in by]
    if single:
        w(f"Goal (issue 29): peak resident within {RESIDENT_ACCURACY_GOAL * 100:.0f}% of VmHWM on single-process "
          f"programs: {', '.join(f'{k} {pct(r)}' for k, r in single)}, {verdict(all(within(r) for _, r in single))}.")
        w("")
    if "fork" in by:
        f = by["fork"]
        w(f"Goal (issue 29): within {RESIDENT_ACCURACY_GOAL * 100:.0f}% of the sum on two processes holding memory "
          f"at the same time: {pct(f)}, {verdict(within(f))}.")
        w("")
    if "gcc" in by:
        g = by["gcc"]
        w(f"gcc runs {g['processes']} processes (the driver, and under it cc1plus, then as): its largest "
          f"per-process peak against GNU time's largest, {pct(g)}"
          + (" (within the same bound)." if within(g) else "."))
        w("")
    if runs and all(r["memtrack_bytes"] >= r["reference_bytes"] for r in runs):
        w("memtrack's figure is above the native reference in every row: a recorded process also holds the "
          "preload library's code and data pages (file and anonymous resident memory), which are not among the "
          "memfd pages taken out as memtrack's own.")
        w("")
    return out


SYM_HEAD = re.compile(r"^(\S+): (\d+) of (\d+) call return addresses$")
SYM_TIMES = re.compile(r"^  memtrack: ([0-9.]+) s \(process\), [0-9.]+ addresses/s; addr2line: ([0-9.]+) s, "
                       r"[0-9.]+ addresses/s; addr2line/memtrack = [0-9.]+$")
SYM_STATS = re.compile(r"open ([0-9.]+) s, lookups ([0-9.]+) s\).*; dwarf (\d+), symtab (\d+), dynsym (\d+), "
                       r"none (\d+); (\d+) frames, (\d+) inlined; symbols (\S+), dwarf (yes|no)")


def load_symbolize(path):
    """bench/symbolize_throughput.sh's output (three lines per module), or None. The script prints text, not a
    table; a line that no longer matches is an error naming it, not a silently missing row."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = [line.rstrip("\n") for line in f]
    modules, i = [], 0
    while i < len(lines):
        head = SYM_HEAD.match(lines[i])
        if not head:
            i += 1
            continue
        if i + 2 >= len(lines):
            raise ValueError(f"{path}:{i + 1}: module {head.group(1)} without its two result lines")
        t, st = SYM_TIMES.match(lines[i + 1]), SYM_STATS.search(lines[i + 2])
        if not t or not st:
            raise ValueError(f"{path}:{i + 2}: not the format bench/render_performance.py reads "
                             "(SYM_TIMES, SYM_STATS): " + (lines[i + 1] if not t else lines[i + 2]))
        modules.append(dict(module=head.group(1), addresses=int(head.group(2)), calls=int(head.group(3)),
                            memtrack_s=float(t.group(1)), addr2line_s=float(t.group(2)),
                            open_s=float(st.group(1)), lookup_s=float(st.group(2)),
                            dwarf=int(st.group(3)), symtab=int(st.group(4)), dynsym=int(st.group(5)),
                            none=int(st.group(6)), frames=int(st.group(7)), inlined=int(st.group(8)),
                            symbols=st.group(9), has_dwarf=st.group(10) == "yes"))
        i += 3
    if not modules:
        raise ValueError(f"{path}: no module results")
    return modules


def other_cpu(meta, wall_s):
    """(core-seconds other processes were busy, core-seconds stolen by the hypervisor, capacity) over the
    run, from /proc/stat at both ends minus run_suite.sh's own children; None for an older meta.txt."""
    if not meta.get("cpu_stat_start") or not meta.get("cpu_stat_end"):
        return None
    a = [int(v) for v in meta["cpu_stat_start"].split()[1:]]
    b = [int(v) for v in meta["cpu_stat_end"].split()[1:]]
    d = [q - p for p, q in zip(a, b)]
    tck = float(meta.get("clk_tck", 100))
    busy = (d[0] + d[1] + d[2] + d[5] + d[6]) / tck  # user nice system irq softirq
    steal = d[7] / tck if len(d) > 7 else 0.0
    return max(busy - float(meta["own_cpu_s"]), 0.0), steal, int(meta["nproc"]) * wall_s


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


def short(ns):
    """ms, or ns below 0.1 ms (a capture takes nanoseconds)."""
    return ms(ns) if ns >= 1e5 else f"{ns:.0f} ns"


def x(v):
    return f"{v:.2f}x"


def rounds_phrase(rounds):
    """'1 round', or 'N interleaved rounds, medians'."""
    return "1 round" if rounds == 1 else f"{rounds} interleaved rounds, medians"


def xr(num, den):
    """num / den as a ratio, or n/a for a zero denominator (a smoke run's native time is 0.00 s)."""
    return x(num / den) if den > 0 else "n/a"


def mib(b):
    return f"{b / MIB:.1f} MiB"


def verdict(ok):
    return "**met**" if ok else "**not met**"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def required_names():
    names = ["BM_Serialize_Frame", "BM_Serialize_Frame_MsgpackPacker", "BM_Floor_MemcpySerializedFrame",
             "BM_Encode_Frame", "BM_Floor_ZstdAlone", "BM_Decode_Artifact", "BM_Floor_ZstdDecompress",
             "BM_HeapCounter_Calibration", "BM_Stats_Indexed/threads:1", "BM_Stats_Indexed/threads:2", "BM_Stats_SerialStage"]
    names += [f"BM_Compress_Frame/level:{lv}" for lv in LEVELS]
    names += [f"BM_Pipeline_EncodeStream/workers:{w}" for w in WORKERS]
    names += [f"BM_Pipeline_Peak/workers:{w}" for w in WORKERS]
    names += [unwind_name("None", s, t) for s, t in UNWIND_SHAPES]
    names += [unwind_name(v, s, t) for v, _ in UNWIND for s, t in UNWIND_SHAPES]
    return names


def unwind_name(variant, sites, threads):
    return f"BM_Unwind_{variant}/sites:{sites}/threads:{threads}"


def render(ctx, rows, meta, loads, rss, record, stacks, reports, symbols, commands, diffs=None, compacts=None,
           resident=None, resident_accuracy=None, record_cost=None, attach_cost=None, real_programs=None,
           python_cost=None):
    b = rows
    nproc = int(meta["nproc"])
    frame_events = int(ctx["memtrack_frame_events"])
    stream_events = int(ctx["memtrack_stream_events"])
    peak_events = int(ctx["memtrack_peak_stream_events"])
    decode_events = int(ctx["memtrack_decode_stream_events"])
    smoke = meta.get("smoke") == "1"
    load_start, load_end, load_max = loads[0], loads[-1], max(loads)
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    wall_s = (datetime.datetime.strptime(meta["finished"], fmt) -
              datetime.datetime.strptime(meta["started"], fmt)).total_seconds()
    others = other_cpu(meta, wall_s)
    other_share = others[0] / others[2] if others and others[2] > 0 else 0.0
    # The CPU other processes took during the run is the direct measure; the load average lags by a minute
    # (a build that ended just before the run still shows in it), so it decides only without that measure.
    contended = other_share >= 0.25 if others else load_start >= 0.75 * nproc
    out = []
    w = out.append

    w("# Performance")
    w("")
    w("<!-- Generated by bench/render_performance.py from one run of bench/run_suite.sh. Do not edit by hand:")
    w("     change the template in bench/render_performance.py and re-run bench/run_suite.sh. -->")
    w("")
    took = "under a minute" if wall_s < 60 else f"{wall_s / 60:.0f} minutes"
    w(f"Regenerate it from the repository's root with this one line (the run below took {took}; `$OUT` is a")
    w("directory of your choice for the run's raw results):")
    w("")
    w("```sh")
    w(f"OUT=/tmp/memtrack-suite; cmake --preset release && cmake --build --preset release -j2 && "
      f"{meta['command'].strip()}")
    w("```")
    w("")
    if smoke:
        w("> **Smoke run** (MEMTRACK_BENCH_SMOKE=1): streams of a few frames and 0.01 s per benchmark. It only")
        w("> proves that the suite and this renderer still work; none of its numbers means anything.")
        w("")
    w("Every figure below comes from the same run of the benchmark suite, and every ratio is taken between two")
    w("rows of that run, never across runs or machines. Absolute times depend on the machine; ratios to a floor")
    w("measured beside them (memcpy of the same bytes, zstd alone on the same bytes, the native run of a")
    w("recorded program, heaptrack on the same program, libunwind on the same stack, `memtrack stats` on the")
    w("same artifact, addr2line on the same addresses) are what carries over.")
    w("")

    # ---------------------------------------------------------------------------------------------- machine
    w("## Machine and run")
    w("")
    machine = [
        ["CPU", f"{meta['cpu_model']}, {nproc} hardware threads ({ctx.get('mhz_per_cpu', '?')} MHz)"],
        ["System", f"{meta['kernel']}; {meta['compiler']}; CMAKE_BUILD_TYPE={meta['build_type']}"],
        ["Commit", meta["commit"]],
        ["Run", f"{meta['started']} to {meta['finished']}"
                + (f" ({', '.join(f'{k} {v} s' for k, v in (p.split(':') for p in meta['timing'].split()))})"
                   if meta.get("timing") else "")],
        ["1-minute load average", f"{load_start:.2f} at start, {load_end:.2f} at end, at most {load_max:.2f} "
                                  f"({len(loads)} samples, every 5 s)"],
    ]
    if others:
        machine.append(["CPU of other processes", f"{others[0]:.0f} core-seconds of the run's {others[2]:.0f} "
                        f"({other_share * 100:.0f}%), {others[1]:.0f} stolen by the hypervisor"])
    w(table(["", ""], machine))
    w("")
    w("The load average includes the suite itself, which keeps one to two threads busy (more during the")
    w("pipeline rows), so the figure at start is the one that shows what else was running (in the minute")
    w("before the run).")
    if others:
        w("\"CPU of other processes\" is the machine's busy time over the run (/proc/stat at both ends) minus")
        w("the CPU of everything the suite ran (its children's rusage).")
        if other_share >= 0.05:
            w(f"**The machine was shared during this run**: other processes kept {others[0] / wall_s:.2f} of its "
              f"{nproc} cores busy on average.")
        else:
            w(f"Other processes took {other_share * 100:.0f}% of the machine during the run.")
    if contended:
        w(f"**This run was contended** (load {load_start:.2f} at start on {nproc} cores"
          + (f", other processes {other_share * 100:.0f}% of the machine" if others else "") + "),")
        w("so other processes held part of the CPU. Single-thread rows below use the CPU time of the benchmark")
        w("thread, which holds up under contention; wall-clock rows of multi-threaded benchmarks (pipeline")
        w("speed-up, stats on two threads) and of recorded programs measure the neighbours as much as memtrack,")
        w("though the interleaved rounds spread them over both sides of each ratio. Re-run on a quiet machine.")
    else:
        if others:
            w(f"So the machine was quiet (the load of {load_start:.2f} at the start is a one-minute average, which "
              "still counts what ran just before the run).")
        else:
            w(f"The machine was quiet at the start of the run (load {load_start:.2f} on {nproc} cores).")
        if load_max >= nproc + 1:
            # The suite alone keeps the load near the core count; well above it, others joined in.
            first = next(i for i, v in enumerate(loads) if v >= nproc + 1)
            w(f"**It did not stay quiet**: the load passed {nproc + 1} about {first * 5} s into the run and reached "
              f"{load_max:.2f} (load.txt in the results directory has every sample, 5 s apart). The suite runs "
              "more threads than cores at times (the pipeline rows' encoders; a recording's program, recorder and "
              "encoders), so part of that is the suite itself, and part other processes"
              + (" (their CPU is in the table above)" if others else "") + ": the rows measured from then on, the "
              "wall-clock ones especially, may include their work. Compare ratios within one table (the rounds of "
              "each are interleaved), and re-run before trusting a goal.")
    w("")
    w("```sh")
    w("cmake --preset release && cmake --build --preset release -j2")
    w(meta["command"].strip())
    w("# which ran:")
    w(meta["bench_command"].strip())
    if meta.get("heap_command"):
        w(meta["heap_command"].strip())
    for c in commands:
        w(c)
    w("```")
    w("")
    if meta.get("note"):  # written into meta.txt by hand when a run needed finishing (say what and why)
        w(f"**Note on this run**: {meta['note']}")
        w("")
    if meta.get("record_skipped"):
        w(f"The recording benchmarks were skipped: {meta['record_skipped']}.")
        w("")
    w("Workload: the realistic event generator (bench/workload/include/memtrack/workload/realistic_events.h,")
    w("seed 1), shared by the benchmarks, the pipeline tests and `memtrack-gen-events`. Frames of "
      f"{frame_events:,} events; the pipeline throughput rows encode {stream_events:,} events, the peak-memory")
    w(f"rows {peak_events:,}, the decoding rows an artifact of {decode_events:,}. A frame serializes to "
      f"{b['BM_Serialize_Frame'].counter('bytes_per_event'):.1f} msgpack bytes per event and compresses to "
      f"{b['BM_Compress_Frame/level:-5'].counter('compressed_bytes_per_event'):.1f} at the default level (-5).")
    w("Timings are medians over the repetitions. Peak heap is `max_bytes_used` from Google Benchmark's")
    w("MemoryManager: bench/heap_counter (memtrack/heap_counter.h) counts every malloc-family call of the process")
    w("(operator new included) at malloc_usable_size during one extra run of each benchmark.")
    if meta.get("heap_command"):
        w("The heap figures come from the second command above, run right after the first: Google Benchmark 1.7.1")
        w("reports the memory of repeated runs from freed memory (bench/bench_main.cpp), so the timing pass runs")
        w("without the heap counter and the heap pass without repetitions.")
    w("")

    # ------------------------------------------------------------------------------------------ frame stages
    memcpy = b["BM_Floor_MemcpySerializedFrame"]
    zstd5 = b["BM_Compress_Frame/level:-5"]
    w(f"## One frame, stage by stage ({frame_events:,} events, one thread)")
    w("")
    w("CPU time of the benchmark thread per frame, and the ratio to the floor measured beside it.")
    w("")
    stage_rows = [
        ["BM_Serialize_Frame (our msgpack writer)", ms(b["BM_Serialize_Frame"].cpu_ns),
         f"{b['BM_Serialize_Frame'].cpu_ns / frame_events:.1f}", "memcpy of the msgpack bytes",
         x(b["BM_Serialize_Frame"].cpu_ns / memcpy.cpu_ns)],
        ["BM_Serialize_Frame_MsgpackPacker (msgpack-c's packer)", ms(b["BM_Serialize_Frame_MsgpackPacker"].cpu_ns),
         f"{b['BM_Serialize_Frame_MsgpackPacker'].cpu_ns / frame_events:.1f}", "memcpy of the msgpack bytes",
         x(b["BM_Serialize_Frame_MsgpackPacker"].cpu_ns / memcpy.cpu_ns)],
    ]
    for lv in LEVELS:
        r = b[f"BM_Compress_Frame/level:{lv}"]
        stage_rows.append([f"BM_Compress_Frame/level:{lv} (zstd alone)", ms(r.cpu_ns), f"{r.cpu_ns / frame_events:.1f}",
                           "memcpy of the msgpack bytes", x(r.cpu_ns / memcpy.cpu_ns)])
    enc = b["BM_Encode_Frame"]
    stage_rows.append(["BM_Encode_Frame (serialize + compress, level -5)", ms(enc.cpu_ns),
                       f"{enc.cpu_ns / frame_events:.1f}", "zstd alone, level -5", x(enc.cpu_ns / zstd5.cpu_ns)])
    stage_rows.append(["BM_Floor_MemcpySerializedFrame (floor)", ms(memcpy.cpu_ns), f"{memcpy.cpu_ns / frame_events:.2f}",
                       "", ""])
    w(table(["row", "per frame", "ns/event", "floor", "x floor"], stage_rows))
    w("")
    w("Compression per level, on the same msgpack frame:")
    w("")
    msgpack_bpe = zstd5.counter("msgpack_bytes_per_event")
    comp_rows = []
    for lv in LEVELS:
        r = b[f"BM_Compress_Frame/level:{lv}"]
        cbpe = r.counter("compressed_bytes_per_event")
        comp_rows.append([lv, ms(r.cpu_ns), f"{msgpack_bpe * frame_events / (r.cpu_ns / 1e9) / 1e6:.0f} MB/s",
                          f"{cbpe:.2f}", x(msgpack_bpe / cbpe), x(r.cpu_ns / zstd5.cpu_ns)])
    w(table(["level", "per frame", "msgpack in", "compressed B/event", "size ratio", "time x level -5"], comp_rows))
    w("")
    ser_share = b["BM_Serialize_Frame"].cpu_ns / enc.cpu_ns
    w(f"Serializing is {x(b['BM_Serialize_Frame'].cpu_ns / memcpy.cpu_ns)} the cost of copying its output and "
      f"{ser_share * 100:.0f}% of encoding a frame; compression is the rest, so the end-to-end frame costs "
      f"{x(enc.cpu_ns / zstd5.cpu_ns)} zstd alone.")
    w("")

    # ------------------------------------------------------------------------------------------------ pipeline
    zs = b["BM_Floor_ZstdAlone"]
    p = {n: b[f"BM_Pipeline_EncodeStream/workers:{n}"] for n in WORKERS}
    w(f"## Pipeline throughput ({stream_events:,} events, memory to a null sink)")
    w("")
    w("`BM_Pipeline_EncodeStream/workers:N` is `memtrack encode`'s path: the caller's thread fills slots, a")
    w("oneTBB arena serializes and compresses them, a writer thread writes them in order. Wall time; the")
    w("whole-process CPU per event (getrusage over every thread) does not depend on what else runs, and CPU")
    w("over wall time shows how many cores the run actually got.")
    w("")
    prow = [["BM_Floor_ZstdAlone (zstd alone, one thread)", ms(zs.real_ns),
             f"{stream_events / (zs.real_ns / 1e9) / 1e6:.2f} M/s", "", f"{zs.counter('proc_cpu_ns_per_event'):.1f}",
             f"{zs.counter('proc_cpu_ns_per_event') * stream_events / zs.real_ns:.2f}", ""]]
    for n in WORKERS:
        r = p[n]
        cpu_pe = r.counter("proc_cpu_ns_per_event")
        prow.append([f"workers:{n}", ms(r.real_ns), f"{stream_events / (r.real_ns / 1e9) / 1e6:.2f} M/s",
                     x(p[1].real_ns / r.real_ns), f"{cpu_pe:.1f}", f"{cpu_pe * stream_events / r.real_ns:.2f}",
                     f"{r.counter('K'):.0f}"])
    w(table(["row", "wall", "events/s", "speed-up vs workers:1", "process CPU ns/event", "cores busy", "K"], prow))
    w("")
    one_vs_zstd_wall = p[1].real_ns / zs.real_ns
    one_vs_zstd_cpu = p[1].counter("proc_cpu_ns_per_event") / zs.counter("proc_cpu_ns_per_event")
    two = p[1].real_ns / p[2].real_ns
    w(table(["goal (issue 3)", "measured", ""], [
        ["1 worker within 1.15x of zstd alone", f"{x(one_vs_zstd_wall)} wall, {x(one_vs_zstd_cpu)} CPU per event",
         f"wall {verdict(one_vs_zstd_wall <= 1.15)}, CPU {verdict(one_vs_zstd_cpu <= 1.15)}"],
        [f"2 workers >= 1.7x the events/s of 1 (needs 2 free cores; this machine has {nproc})", x(two),
         verdict(two >= 1.7)],
    ]))
    w("")
    top = max(n for n in WORKERS if n <= nproc)
    w(f"Above {top} workers (this machine's {nproc} hardware threads) the arena still runs at most min(workers, K) = "
      f"{p[64].counter('K'):.0f} encoders at once; workers:64 reaches {x(p[top].real_ns / p[64].real_ns)} the "
      f"events/s of workers:{top}.")
    if two < 1.7:
        cores2 = p[2].counter("proc_cpu_ns_per_event") * stream_events / p[2].real_ns
        cpu1, cpu2 = p[1].counter("proc_cpu_ns_per_event"), p[2].counter("proc_cpu_ns_per_event")
        if cores2 < 1.8:
            w(f"The 2-worker goal is not shown by this run: at workers:2 the process kept {cores2:.2f} cores busy, so "
              "it did not get two cores" + (" (see the load above)." if contended else "."))
        else:
            cores1 = cpu1 * stream_events / p[1].real_ns
            w(f"At workers:2 the process kept {cores2:.2f} cores busy, so it had both cores. The speed-up is the "
              "ratio of cores kept busy times the ratio of CPU per event: "
              f"({cores2:.2f} / {cores1:.2f}) x ({cpu1:.1f} / {cpu2:.1f} ns) = {x(cores2 / cores1 * cpu1 / cpu2)} "
              "(medians, so within rounding of the measured one): an event costs "
              f"{(cpu2 / cpu1 - 1) * 100:+.0f}% CPU at workers:2, and workers:1 already keeps {cores1:.2f} cores busy "
              "(the producer and writer threads overlap its encoder).")
    w("")

    # ---------------------------------------------------------------------------------------------- peak memory
    pk = {n: b[f"BM_Pipeline_Peak/workers:{n}"] for n in WORKERS}
    k = pk[4].counter("K")
    slot = pk[4].counter("slot_bytes")
    w(f"## Peak memory per worker count ({peak_events:,} events)")
    w("")
    w("`BM_Pipeline_Peak/workers:N`: the encoder's peak heap (everything it allocated through operator new or")
    w("malloc, zstd's contexts included) while encoding the stream from memory to a null sink with the default")
    w("memory budget. The input events are not counted.")
    w("")
    peak_rows = []
    for n in WORKERS:
        r = pk[n]
        peak_rows.append([n, mib(r.heap), x(r.heap / pk[4].heap), f"{r.counter('K'):.0f}",
                          mib(r.counter("K") * r.counter("slot_bytes")), f"{r.allocs:.0f}", f"{r.net_growth}"])
    w(table(["workers", "peak heap", "x workers:4", "K", "K x slot_bytes", "allocations", "net heap growth (B)"],
            peak_rows))
    w("")
    ratio64 = pk[64].heap / pk[4].heap
    spread = (max(r.heap for r in pk.values()) - min(r.heap for r in pk.values())) / MIB
    w(table(["goal (issue 6)", "measured", ""], [
        ["64 workers no more than 1.25x the figure at 4", x(ratio64), verdict(ratio64 <= 1.25)],
    ]))
    w("")
    cal = b["BM_HeapCounter_Calibration"]
    w(f"The counter's calibration (`BM_HeapCounter_Calibration`: {mib(cal.counter('allocated_bytes'))} alive at once "
      "through malloc, calloc, realloc, posix_memalign, aligned_alloc and operator new[]) reads "
      f"{mib(cal.heap)}: {(cal.heap - cal.counter('allocated_bytes')) / 1024:+.1f} KiB of allocator rounding over what was "
      "allocated.")
    w("")
    w(f"From 1 to 64 workers the peak moves by {spread:.2f} MiB. K = {k:.0f} slots reserve {mib(slot)} each "
      "(slot_bytes: the events, a msgpack buffer for the worst case of 97 bytes per event, zstd's bound for the "
      f"output and a compression context), {mib(k * slot)} in all, and the peak at workers:4 is "
      f"{x(pk[4].heap / (k * slot))} that.")
    if ratio64 <= 1.25:
        w("The figure does not follow the worker count because every buffer belongs to one of the K in-flight "
          "slots and none to a thread, and K comes from the memory budget, not from the worker or core count.")
    else:
        w("**The peak grows with the worker count**: something holds memory per thread, which the design rules out "
          "(docs/ARCHITECTURE.md, \"Memory follows in-flight frames, not threads\"). Find it before trusting the other "
          "figures.")
    w("`net heap growth` is what was still allocated when the run ended: zero means the encoder freed everything "
      "it allocated.")
    w("")
    if rss:
        sweep = [r for r in rss if r["in_flight"] != 0]
        rss = [r for r in rss if r["in_flight"] == 0]
        glibc = [r for r in rss if r["alloc"] == "glibc"]
        rss_peak = {n: max(r["kib"] for r in glibc if r["workers"] == n) * 1024 for n in RSS_WORKERS}
        rounds = len([r for r in glibc if r["workers"] == 1])
        w(f"### Peak RSS of `memtrack encode`, {4194304:,} events read from a pipe")
        w("")
        w("bench/encode_rss.sh: the whole process (binary, libraries, thread stacks, everything the heap")
        w(f"counter cannot see), largest of {rounds} runs per worker count, GNU time's maximum resident set size.")
        w("")
        w(table(["workers", "peak RSS", "x workers:4", "peak heap of the encoder (above)"],
                [[n, mib(rss_peak[n]), x(rss_peak[n] / rss_peak[4]), mib(pk[n].heap)] for n in RSS_WORKERS]))
        w("")
        r64 = rss_peak[64] / rss_peak[4]
        w(table(["goal (issue 3)", "measured", ""], [
            ["at most 64 MiB at 1, 4, 16 and 64 workers", f"at most {mib(max(rss_peak.values()))}",
             verdict(max(rss_peak.values()) <= 64 * MIB)],
            ["64 workers no more than 1.25x the figure at 4", x(r64), verdict(r64 <= 1.25)],
        ]))
        w("")
        if max(rss_peak.values()) < pk[4].heap:
            w(f"Resident memory is lower than the heap the encoder reserves ({mib(max(rss_peak.values()))} against "
              f"{mib(pk[4].heap)}),")
            w("although RSS also counts the binary, the libraries and the thread stacks: the slot buffers are")
            w("sized once for the worst case and allocated without being zero-filled, and pages a realistic frame")
            w("never writes are never touched. The budget counts the reservation, so it is the safe side.")
            w("")
        if sweep:
            k2 = max(r["kib"] for r in sweep if r["in_flight"] == 2) * 1024
            k8 = max(r["kib"] for r in sweep if r["in_flight"] == 8) * 1024
            per_slot = (k8 - k2) / 6
            w(f"What one in-flight slot costs, from the same script at 4 workers: peak RSS {mib(k2)} with `--in-flight 2` "
              f"and {mib(k8)} with `--in-flight 8`, so {mib(per_slot)} resident per slot against the "
              f"{mib(slot)} it reserves (slot_bytes), over a base of {mib(k2 - 2 * per_slot)} (binary, libraries, "
              "threads).")
            w("")
        allocs = sorted({r["alloc"] for r in rss})
        if "mimalloc" in allocs:
            def med(a, key, n=None):
                return statistics.median(r[key] for r in rss if r["alloc"] == a and (n is None or r["workers"] == n))

            w("### mimalloc or glibc malloc for `memtrack`")
            w("")
            w("The same runs with Debian's libmimalloc.so.2 preloaded (the dynamic override that linking it")
            w("gives), interleaved with the glibc runs. Medians of CPU (user + system) and wall time; largest RSS.")
            w("")
            mrows = []
            for n in RSS_WORKERS:
                mrows.append([n, f"{med('glibc', 'cpu', n):.2f} s", f"{med('mimalloc', 'cpu', n):.2f} s",
                              f"{med('glibc', 'wall', n):.2f} s", f"{med('mimalloc', 'wall', n):.2f} s",
                              mib(max(r['kib'] for r in rss if r['alloc'] == 'glibc' and r['workers'] == n) * 1024),
                              mib(max(r['kib'] for r in rss if r['alloc'] == 'mimalloc' and r['workers'] == n) * 1024)])
            w(table(["workers", "CPU glibc", "CPU mimalloc", "wall glibc", "wall mimalloc", "RSS glibc",
                     "RSS mimalloc"], mrows))
            w("")
            cpu_ratio = med("mimalloc", "cpu") / med("glibc", "cpu")
            rss_g = statistics.median(r["kib"] for r in rss if r["alloc"] == "glibc")
            rss_m = statistics.median(r["kib"] for r in rss if r["alloc"] == "mimalloc")
            pays = cpu_ratio < 0.95 and rss_m <= rss_g * 1.05
            linked = mimalloc_linked_by_default()
            w(f"Over all runs mimalloc takes {x(cpu_ratio)} the CPU of glibc malloc and {x(rss_m / rss_g)} its RSS "
              f"(medians). {'It pays' if pays else 'It does not pay'} by this run's measure (at least 5% less CPU")
            w(f"without more than 5% more RSS). The encoder made {pk[4].allocs:.0f} heap allocations for the whole "
              f"{peak_events:,}-event stream (peak-memory table above), so an allocator has little to win. "
              "The `memtrack` executable "
              + ("links mimalloc by default (MEMTRACK_TOOL_MIMALLOC=ON)." if linked else
                 "does not link it by default (MEMTRACK_TOOL_MIMALLOC=OFF in tools/CMakeLists.txt; ON links it).")
              + ("" if pays == linked else " **This run disagrees with that default: re-measure and reconsider it.**"))
            w("")

    # ------------------------------------------------------------------------------------------------ recording
    if record:
        w("## Recording a program")
        w("")
        w("bench/record_overhead.sh: tests/integration/programs/churn.c (threads x malloc/free/realloc operations on "
          "a small working set) natively, under heaptrack and under `memtrack record`, interleaved round by round; "
          "medians. \"transport only\" is `memtrack record` with MEMTRACK_RECORD_DISCARD=1: the ring drained, "
          "nothing encoded. The first workload is the one the runtime issue set its goal on (heaptrack / memtrack "
          ">= 2.5x wall); docs/RUNTIME.md explains the runtime.")
        w("")
        rows_ = []
        for r in record:
            ev = int(r["events"])
            nat, ht, mt, tr = (r[k + "_wall"] for k in ("native", "heaptrack", "memtrack", "transport"))
            rows_.append([f"{int(r['threads'])} x {int(r['ops_per_thread']):,} ops ({ev:,} events, {int(r['rounds'])} round{'s' if r['rounds'] != 1 else ''})",
                          f"{nat:.3f} s", f"{ht:.3f} / {r['heaptrack_cpu']:.3f} s", f"{mt:.3f} / {r['memtrack_cpu']:.3f} s",
                          f"{tr:.3f} s", xr(ht, mt), xr(r["heaptrack_cpu"], r["memtrack_cpu"]), xr(mt, nat),
                          f"{r['artifact_bytes'] / ev:.1f}", str(int(r["lost_events"]))])
        w(table(["workload", "native wall", "heaptrack wall / CPU", "memtrack record wall / CPU", "transport only",
                 "heaptrack / memtrack wall", "CPU", "memtrack x native", "artifact B/event", "events lost"], rows_))
        w("")
        if len(record) >= 2:
            a, b_ = record[0], record[-1]
            dev = b_["events"] - a["events"]
            per = {k: (b_[k + "_wall"] - a[k + "_wall"]) / dev * 1e9 for k in ("native", "heaptrack", "memtrack", "transport")}
            # round() + 0.0: a noise-sized negative value prints as 0.00, not -0.00
            fixed = {k: round(a[k + "_wall"] - per[k] * a["events"] / 1e9, 2) + 0.0 for k in ("heaptrack", "memtrack")}
            w(f"Per event, from the difference between the two workloads (which cancels the fixed cost of a run): "
              f"heaptrack {per['heaptrack']:.0f} ns, `memtrack record` {per['memtrack']:.0f} ns, transport only "
              f"{per['transport']:.0f} ns, native {per['native']:.0f} ns of wall time, so heaptrack / memtrack is "
              f"{xr(per['heaptrack'], per['memtrack'])} per event. The fixed cost left over (start-up, and heaptrack's "
              f"processing at exit) is {fixed['heaptrack']:.2f} s for heaptrack and {fixed['memtrack']:.2f} s for "
              "`memtrack record`: the shorter the program, the larger memtrack's lead.")
        if record[0]["native_wall"] < 0.2:
            w("Native runs this short are near the 10 ms resolution of GNU time, so ratios to native are coarse; "
              "heaptrack against `memtrack record` is the robust comparison.")
        w("")

    # ------------------------------------------------------------------------------------- recording, stacks
    if stacks:
        st = stacks
        ev = int(st["events"])
        w("### With call stacks")
        w("")
        w(f"bench/record_stacks.sh: bench/churn_deep.c ({int(st['threads'])} threads x {int(st['ops_per_thread']):,} "
          f"malloc/free at a call depth of {int(st['depth'])} frames, plain -O2 without frame pointers, as Debian "
          "builds programs) natively, under heaptrack (which records a stack per allocation), under `memtrack "
          "record` (stacks on, the default) and `memtrack record --no-stacks`, interleaved round by round; medians "
          f"of {int(st['rounds'])} round{'s' if st['rounds'] != 1 else ''}. The native run is the floor of each row, heaptrack on the same program "
          "the reference of the goal (the stacks issue: heaptrack / memtrack >= "
          f"{STACKS_GOAL:.1f} in wall time with stacks on).")
        w("")
        nat_w, nat_c = st["native_wall"], st["native_cpu"]
        ht_w, ht_c = st["heaptrack_wall"], st["heaptrack_cpu"]

        def srow(name, wall, cpu, nbytes=None):
            return [name, f"{wall:.3f} s", f"{cpu:.3f} s", xr(wall, nat_w), xr(ht_w, wall), xr(ht_c, cpu),
                    f"{nbytes / ev:.2f}" if nbytes is not None else ""]

        w(table(["run", "wall", "CPU", "wall x native", "heaptrack / this (wall)", "heaptrack / this (CPU)",
                 "artifact B/event"], [
            srow("native", nat_w, nat_c),
            srow("heaptrack", ht_w, ht_c),
            srow("memtrack record (stacks)", st["stacks_wall"], st["stacks_cpu"], st["stacks_bytes"]),
            srow("memtrack record --no-stacks", st["nostacks_wall"], st["nostacks_cpu"], st["nostacks_bytes"]),
        ]))
        w("")
        ratio = ht_w / st["stacks_wall"] if st["stacks_wall"] > 0 else 0.0
        w(table(["goal (issue 13)", "measured", ""], [
            [f"heaptrack / memtrack >= {STACKS_GOAL:.1f}x in wall time, stacks on", x(ratio),
             verdict(ratio >= STACKS_GOAL)],
        ]))
        w("")
        extra = (st["stacks_bytes"] - st["nostacks_bytes"]) / ev
        w(f"The recordings hold {ev:,} events ({int(st['expected_events']):,} from the program itself; events lost "
          f"over the last round of both: {int(st['lost_events'])}). Stacks add {extra:.2f} bytes per event to the "
          f"artifact (their ids, the stack and module tables and the symbols, in skippable context frames). The "
          f"tracee interned {int(st['stack_nodes']):,} stack nodes (a trace tree: {int(st['stack_nodes']) * 12:,} "
          "bytes of node arrays at 12 bytes a node, bench/record_stacks.sh's count), and the recorder symbolized "
          f"{int(st['symbolized_addresses']):,} addresses: {int(st.get('symbolized_ahead', 0)):,} of them on its "
          f"symbolizing thread while the program ran ({st.get('symbolize_ahead_cpu_s', 0):.2f} s of CPU), the rest "
          f"in {st['symbolize_s']:.2f} s after the program ended (all included in the times above). Stacks on cost "
          f"{xr(st['stacks_wall'], st['nostacks_wall'])} the wall time of "
          f"--no-stacks, {((st['stacks_cpu'] - st['nostacks_cpu']) / ev * 1e9):.0f} ns of CPU per event.")
        if nat_w < 0.2:
            w("Native runs this short are near the 10 ms resolution of GNU time, so ratios to native are coarse; "
              "heaptrack against `memtrack record` is the robust comparison.")
        w("")

    # ------------------------------------------------------------------------------------------------- unwind
    none = {sh: b[unwind_name("None", *sh)] for sh in UNWIND_SHAPES}

    def net(variant, sh):
        # CPU per capture (Google Benchmark divides a row's CPU, summed over its threads, by the iterations of
        # all of them), minus the malloc/free every row does (BM_Unwind_None).
        return b[unwind_name(variant, *sh)].cpu_ns - none[sh].cpu_ns

    frames = b[unwind_name("Memtrack", 1, 1)].counter("frames")
    frames2 = b[unwind_name("Memtrack", 1, 2)].counter("frames")
    w("## Capturing a call stack")
    w("")
    w("bench/unwind.cpp: one capture per iteration at the bottom of tests/unwind/chain.cpp's 24-deep call chain "
      "(plain -O2, no frame pointers) under Google Benchmark's own frames: "
      f"{frames:.0f} frames in all ({frames2:.0f} in the benchmark's threads). Every row also does a malloc/free "
      "of 32 bytes, so a capture's own cost is its row minus `BM_Unwind_None` (the floor); that net CPU time per "
      "capture is below, with its ratio to libunwind's `unw_backtrace` (per-thread cache, what heaptrack uses) "
      "at the same shape. `sites:4` rotates four call sites, so the two innermost frames change on every "
      "capture; 2 threads share the rule cache and the interners. docs/UNWIND.md explains the variants.")
    w("")
    head = ["capture"] + [f"sites:{s_}, {t_} thread{'s' if t_ > 1 else ''}" for s_, t_ in UNWIND_SHAPES]
    urows = [["`BM_Unwind_None` (malloc/free only: the floor, whole row)"] +
             [f"{none[sh].cpu_ns:.0f} ns" for sh in UNWIND_SHAPES]]
    for v, what in UNWIND:
        cells = []
        for sh in UNWIND_SHAPES:
            lib = net("Libunwind", sh)
            cells.append(f"{net(v, sh):.0f} ns ({xr(net(v, sh), lib)})")
        urows.append([f"`BM_Unwind_{v}` ({what})"] + cells)
    w(table(head, urows))
    w("")
    ratios = [net("Libunwind", sh) / net("Memtrack", sh) for sh in UNWIND_SHAPES if net("Memtrack", sh) > 0]
    if ratios:
        w(f"libunwind / memtrack per capture: {', '.join(x(r_) for r_ in ratios)} at the four shapes above "
          f"(columns in order); with interning into the trace tree, "
          + ", ".join(xr(net("Libunwind", sh), net("MemtrackTree", sh)) for sh in UNWIND_SHAPES) + ".")
    if any(net(v, sh) < 0 for v, _ in UNWIND for sh in UNWIND_SHAPES):
        w("A negative figure is a row cheaper than the malloc/free floor measured beside it: noise.")
    w("")

    # ------------------------------------------------------------------------------------------------- decoding
    dec, dz = b["BM_Decode_Artifact"], b["BM_Floor_ZstdDecompress"]
    s1, s2, ss = b["BM_Stats_Indexed/threads:1"], b["BM_Stats_Indexed/threads:2"], b["BM_Stats_SerialStage"]
    w(f"## Decoding ({decode_events:,} events, {dec.counter('frames'):.0f} frames)")
    w("")
    bound = s1.real_ns / max(s1.real_ns / 2, ss.real_ns)
    w(table(["row", "time", "events/s", "ratio", "goal", ""], [
        ["BM_Decode_Artifact (CPU)", ms(dec.cpu_ns), f"{decode_events / (dec.cpu_ns / 1e9) / 1e6:.1f} M/s",
         f"{x(dec.cpu_ns / dz.cpu_ns)} zstd alone", "<= 2x", verdict(dec.cpu_ns / dz.cpu_ns <= 2)],
        ["BM_Floor_ZstdDecompress (CPU)", ms(dz.cpu_ns), f"{decode_events / (dz.cpu_ns / 1e9) / 1e6:.1f} M/s", "",
         "", ""],
        ["BM_Stats_Indexed/threads:1 (wall)", ms(s1.real_ns), f"{decode_events / (s1.real_ns / 1e9) / 1e6:.1f} M/s",
         "", "", ""],
        ["BM_Stats_Indexed/threads:2 (wall)", ms(s2.real_ns), f"{decode_events / (s2.real_ns / 1e9) / 1e6:.1f} M/s",
         f"{x(s1.real_ns / s2.real_ns)} threads:1", ">= 1.7x", verdict(s1.real_ns / s2.real_ns >= 1.7)],
        ["BM_Stats_SerialStage (wall)", ms(ss.real_ns), "", f"bound for 2 threads: {x(bound)}", "", ""],
    ]))
    w("")
    w("The stats speed-up needs two free cores; its bound is threads:1 / max(threads:1 / 2, the serial stage).")
    w(f"At threads:2 the process kept {s2.cpu_ns / s2.real_ns:.2f} cores busy (process CPU over wall time).")
    w("")

    # ------------------------------------------------------------------------------------------- symbolizing
    if symbols:
        w("## Symbolizing")
        w("")
        w("bench/symbolize_throughput.sh: call return addresses spread evenly over each module (from objdump -d), "
          "named by `memtrack-symbolize-addrs` (memtrack::symbolize on elfutils, what the recorder runs at the end "
          "of a recording) with a cold symbolizer, beside binutils' addr2line -i -f -C (inlined frames, demangled) "
          "on the same addresses: the floor. Both times are whole processes, opening the module and its debug "
          "file included.")
        w("")
        srows = []
        for m in symbols:
            srows.append([f"`{m['module']}`", f"{m['addresses']:,} of {m['calls']:,}", f"{m['memtrack_s']:.3f} s",
                          f"{m['open_s']:.3f} / {m['lookup_s']:.3f} s",
                          f"{m['addresses'] / m['memtrack_s']:,.0f}" if m["memtrack_s"] > 0 else "n/a",
                          f"{m['addr2line_s']:.3f} s",
                          xr(m["addr2line_s"], m["memtrack_s"]),
                          f"DWARF {m['dwarf']}, .symtab {m['symtab']}, .dynsym {m['dynsym']}, none {m['none']}",
                          f"{m['frames']:,} ({m['inlined']:,} inlined)"])
        w(table(["module", "addresses", "memtrack", "open / lookups", "addresses/s", "addr2line",
                 "addr2line / memtrack", "named from", "frames"], srows))
        w("")

    # ----------------------------------------------------------------------------------------------- reports
    if reports:
        for line in render_report(reports):
            w(line)

    # -------------------------------------------------------------------------------------------------- diff
    if diffs:
        for line in render_diff(diffs):
            w(line)
    if compacts:
        for line in render_compact(compacts):
            w(line)

    if resident:
        for line in render_resident(resident):
            w(line)
    if resident_accuracy:
        for line in render_resident_accuracy(resident_accuracy):
            w(line)
    if record_cost:
        for line in render_record_cost(record_cost):
            w(line)
    if attach_cost or meta.get("attach_skipped"):
        for line in render_attach_cost(attach_cost, skipped=meta.get("attach_skipped")):
            w(line)
    if real_programs:
        for line in render_real_programs(real_programs):
            w(line)
    if python_cost:
        for line in render_python_cost(python_cost):
            w(line)

    # ---------------------------------------------------------------------------------------------- comparison
    c = CODSPEED
    w("## Compared with the CodSpeed pull request (another machine)")
    w("")
    w("**Their figures were taken on another machine** (an 8-core sandbox, the Rust encoder of CodSpeed's")
    w("runner: rmp_serde, zstd level -5, 64k-event frames), as published in CodSpeed pull request #548")
    w("(\"perf(runner-shared): stream memtrack encoder frames instead of windows\"); ours come from the run")
    w("above. Times do not carry across machines; bytes do, since both write the same format. The peak figures")
    w("were measured the same way on both sides: a counting allocator, the input not counted, 4M events to a")
    w("null sink.")
    w("")
    frame_scale = frame_events / 65536.0  # per 64k-event frame, as theirs
    per_worker = (pk[64].heap - pk[1].heap) / 63 / MIB
    w(table(["figure", "CodSpeed PR #548 (8 cores)", f"memtrack (this run, {nproc} cores)"], [
        ["msgpack bytes per event", f"~{c['msgpack_bytes_per_event']:.0f}",
         f"{b['BM_Serialize_Frame'].counter('bytes_per_event'):.1f}"],
        ["compressed frame, zstd -5", f"{c['compressed_mb_per_frame']:.2f} MB",
         f"{zstd5.counter('compressed_bytes_per_event') * frame_events / 1e6:.2f} MB"],
        ["serialize a 64k-event frame", f"{c['serde_ms_per_frame']} ms (rmp_serde); {c['handwritten_ms_per_frame']} ms "
         "(hand-written, proposed)", ms(b["BM_Serialize_Frame"].cpu_ns / frame_scale)],
        ["compress a 64k-event frame, level -5", f"~{c['zstd_ms_per_frame']:.0f} ms", ms(zstd5.cpu_ns / frame_scale)],
        ["encode a frame end to end", f"~{c['serde_ms_per_frame'] + c['zstd_ms_per_frame']:.1f} ms",
         ms(enc.cpu_ns / frame_scale)],
        ["1 worker, end to end, per 1M events", f"{c['one_worker_ms_per_1m_events']:.0f} ms",
         ms(p[1].real_ns / stream_events * 1e6)],
        ["peak heap, 4M events", f"{c['peak_mib_before']:.0f} MiB flat before the PR; "
         f"{c['peak_mib_after_16_workers']:.0f} MiB at 16 workers after it",
         (f"{mib(pk[1].heap)} at every worker count from 1 to 64" if mib(min(r.heap for r in pk.values())) ==
          mib(max(r.heap for r in pk.values())) else
          f"{mib(min(r.heap for r in pk.values()))} to {mib(max(r.heap for r in pk.values()))} at 1 to 64 workers; "
          f"{mib(pk[16].heap)} at 16")],
        ["memory added per worker", f"~{c['per_worker_mib_after_fixup']:.0f} MiB (after its fixup); "
         f"~{c['retained_mib_64_cores']:.0f} MiB retained on a 64-core host (review finding)",
         f"{per_worker * 1024:.1f} KiB ((workers:64 - workers:1) / 63)"],
    ]))
    w("")

    # ------------------------------------------------------------------------------------------------ all rows
    w("## Every row of the run")
    w("")
    w("Timings are medians over the repetitions.")
    w("")
    all_rows = []
    def order(name):  # BM_X/workers:2 before BM_X/workers:16
        parts = name.split("/")
        return [parts[0]] + [int(q.split(":")[1]) if q.split(":")[-1].lstrip("-").isdigit() else 0 for q in parts[1:]]

    for name in sorted(b, key=order):
        r = b[name]
        all_rows.append([f"`{name}`", short(r.real_ns), short(r.cpu_ns), len(r.runs),
                         mib(r.heap) if r.heap is not None else ""])
    w(table(["benchmark", "wall", "CPU", "repetitions", "peak heap"], all_rows))
    w("")
    return "\n".join(reflow(out)) + "\n"


def reflow(lines):
    """Joins the template's prose lines into paragraphs filled to 110 columns; tables, headings, code blocks,
    quotes and comments stay as they are. The template can then break its strings wherever it likes."""
    out, prose, in_code = [], [], False

    def flush():
        if prose:
            out.extend(textwrap.wrap(" ".join(prose), 110, break_long_words=False, break_on_hyphens=False))
            prose.clear()

    for line in "\n".join(lines).split("\n"):
        if line.startswith("```"):
            flush()
            in_code = not in_code
            out.append(line)
        elif in_code or not line.strip() or line.startswith(("|", "#", ">", "<!--", "     ")):
            flush()
            out.append(line)
        else:
            prose.append(line.strip())
    flush()
    return out


def mimalloc_linked_by_default():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "CMakeLists.txt")
    with open(path) as f:
        for line in f:
            if line.startswith("option(MEMTRACK_TOOL_MIMALLOC"):
                return line.rstrip().rstrip(")").split()[-1] == "ON"
    return False


SECTIONS = {
    "report": ("report_size.tsv", "bench/report_size.sh", REPORT_SECTION, load_report_sizes, render_report),
    "diff": ("diff_cost.tsv", "bench/diff_cost.sh", "## `memtrack diff`", lambda p: load_diff_cost(p), render_diff),
    "compact": ("compact.tsv", "bench/compact_vs_heaptrack.sh", "## Compact artifacts against heaptrack",
                lambda p: load_compact(p), render_compact),
    "resident": ("resident_cost.tsv", "bench/resident_cost.sh", RESIDENT_SECTION, load_resident_cost,
                 render_resident),
    "resident-accuracy": ("resident_accuracy.tsv", "bench/resident_accuracy.sh", RESIDENT_ACCURACY_SECTION,
                          load_resident_accuracy, render_resident_accuracy),
    "record-cost": ("record_cost.tsv", "bench/record_cost.sh", RECORD_COST_SECTION, load_tsv_keys,
                    render_record_cost),
    "attach-cost": ("attach_cost.tsv", "bench/attach_cost.sh", ATTACH_COST_SECTION, load_tsv_keys,
                    render_attach_cost),
    "real-programs": ("real_programs.tsv", "bench/real_programs.sh", REAL_PROGRAMS_SECTION, load_real_programs,
                      render_real_programs),
    "python-cost": ("python_cost.tsv", "bench/python_cost.sh", PYTHON_COST_SECTION, load_tsv_keys,
                    render_python_cost),
}


def splice_section(args):
    """--section NAME: that section of --out replaced (or added before the comparison section)."""
    tsv_name, script, heading, load, render_section = SECTIONS[args.section]
    tsv = os.path.join(args.results, tsv_name)
    try:
        runs = load(tsv)
    except ValueError as e:
        print(f"render_performance.py: {e}", file=sys.stderr)
        return 1
    if not runs:
        print(f"render_performance.py: no {tsv_name} in {args.results}", file=sys.stderr)
        return 1
    build_type = "?"
    if args.build:
        with open(os.path.join(args.build, "CMakeCache.txt")) as f:
            build_type = next((line.split("=", 1)[1].strip() for line in f if line.startswith("CMAKE_BUILD_TYPE:")), "?")
    loads = load_loads(os.path.join(args.results, "load.txt")) if os.path.exists(
        os.path.join(args.results, "load.txt")) else []
    when = datetime.datetime.fromtimestamp(os.path.getmtime(tsv), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    alone = (f"**This section comes from a run of its own**, not the suite's run above: {script} on "
             f"{args.build or 'a build'} (CMAKE_BUILD_TYPE={build_type}), finished {when}"
             + (f", 1-minute load average {loads[0]:.2f} at start and {loads[-1]:.2f} at end on "
                f"{os.cpu_count()} cores" if loads else "")
             + f"; it was spliced in with `bench/render_performance.py --section {args.section}`. Its ratios are "
               "between rows of that run only.")
    section = reflow(render_section(runs, alone))
    with open(args.out) as f:
        doc = f.read().split("\n")
    start = next((i for i, line in enumerate(doc) if line == heading), None)
    if start is None:
        start = end = next(i for i, line in enumerate(doc) if line.startswith("## Compared with the CodSpeed"))
    else:
        end = next((i for i in range(start + 1, len(doc)) if doc[i].startswith("## ")), len(doc))
    with open(args.out, "w") as f:
        f.write("\n".join(doc[:start] + section + doc[end:]))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True, help="run_suite.sh's output directory")
    ap.add_argument("--out", required=True, help="the Markdown file to write")
    ap.add_argument("--section", choices=list(SECTIONS),
                    help="replace only this section of --out (from --results' report_size.tsv, diff_cost.tsv, "
                         "compact.tsv, resident_cost.tsv, resident_accuracy.tsv, record_cost.tsv, attach_cost.tsv, "
                         "real_programs.tsv or python_cost.tsv and load.txt, as written by bench/report_size.sh, "
                         "bench/diff_cost.sh, bench/compact_vs_heaptrack.sh, bench/resident_cost.sh, "
                         "bench/resident_accuracy.sh, bench/record_cost.sh, bench/attach_cost.sh, "
                         "bench/real_programs.sh or bench/python_cost.sh and "
                         "around "
                         "it), the rest of the document as it is")
    ap.add_argument("--build", help="with --section: the build tree of that run (its CMAKE_BUILD_TYPE is named)")
    args = ap.parse_args()
    if args.section:
        return splice_section(args)
    ctx, rows = load_rows(os.path.join(args.results, "bench.json"))
    heap_json = os.path.join(args.results, "heap.json")
    if os.path.exists(heap_json):  # the heap figures come from their own pass (run_suite.sh)
        _, heap_rows = load_rows(heap_json)
        for name, row in rows.items():
            h = heap_rows.get(name)
            row.heap, row.net_growth, row.allocs = (h.heap, h.net_growth, h.allocs) if h else (None, None, None)
    missing = [n for n in required_names() if n not in rows]
    if missing:
        print("render_performance.py: rows missing from bench.json (renamed or filtered out?): " + ", ".join(missing),
              file=sys.stderr)
        return 1
    try:
        stacks = load_tsv_keys(os.path.join(args.results, "record_stacks.tsv"))
        reports = load_report_sizes(os.path.join(args.results, "report_size.tsv"))
        symbols = load_symbolize(os.path.join(args.results, "symbolize.txt"))
        diffs = load_diff_cost(os.path.join(args.results, "diff_cost.tsv"))
        compacts = load_compact(os.path.join(args.results, "compact.tsv"))
        resident = load_resident_cost(os.path.join(args.results, "resident_cost.tsv"))
        resident_accuracy = load_resident_accuracy(os.path.join(args.results, "resident_accuracy.tsv"))
        record_cost = load_tsv_keys(os.path.join(args.results, "record_cost.tsv"))
        attach_cost = load_tsv_keys(os.path.join(args.results, "attach_cost.tsv"))
        real_programs = load_real_programs(os.path.join(args.results, "real_programs.tsv"))
        python_cost = load_tsv_keys(os.path.join(args.results, "python_cost.tsv"))
    except ValueError as e:
        print(f"render_performance.py: {e}", file=sys.stderr)
        return 1
    commands_txt = os.path.join(args.results, "commands.txt")
    commands = []
    if os.path.exists(commands_txt):
        with open(commands_txt) as f:
            commands = [line.rstrip("\n") for line in f if line.strip()]
    # The run's results directory is the reader's choice, not part of the command: shown as $OUT.
    out_dir = os.path.abspath(args.results).rstrip("/")

    def shown(command):
        return command.replace(out_dir, "$OUT").replace(args.results.rstrip("/"), "$OUT")

    meta = load_meta(os.path.join(args.results, "meta.txt"))
    for key in ("command", "bench_command", "heap_command"):
        if meta.get(key):
            meta[key] = shown(meta[key])
    commands = [shown(c) for c in commands]
    text = render(ctx, rows, meta,
                  load_loads(os.path.join(args.results, "load.txt")),
                  load_rss(os.path.join(args.results, "encode_rss.tsv")),
                  load_records(args.results), stacks, reports, symbols, commands, diffs, compacts, resident,
                  resident_accuracy, record_cost, attach_cost, real_programs, python_cost)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
