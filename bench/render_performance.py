#!/usr/bin/python3
"""Writes docs/PERFORMANCE.md from one run of bench/run_suite.sh.

Every number in the document comes from the files of that run (bench.json from memtrack-bench, meta.txt
and load.txt from run_suite.sh, encode_rss.tsv from bench/encode_rss.sh); every sentence comes from this
template. Prose that explains a number is printed only when the numbers of the run support it. The one
exception is the comparison section, which quotes the published figures of CodSpeed's pull request as
constants below, marked as taken on another machine.

usage: bench/render_performance.py --results DIR --out FILE
Exits 1, writing nothing, if a benchmark row the document needs is missing from the JSON.
"""

import argparse
import json
import os
import statistics
import sys
import textwrap

WORKERS = [1, 2, 4, 8, 16, 32, 64]
LEVELS = [-5, -2, -1, 1, 3]
RSS_WORKERS = [1, 4, 16, 64]
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
            with open(os.path.join(results, name)) as f:
                runs.append({k: float(v) for k, v in (line.split() for line in f if line.strip())})
    return sorted(runs, key=lambda r: r["events"])


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


def x(v):
    return f"{v:.2f}x"


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
    return names


def render(ctx, rows, meta, loads, rss, record):
    b = rows
    nproc = int(meta["nproc"])
    frame_events = int(ctx["memtrack_frame_events"])
    stream_events = int(ctx["memtrack_stream_events"])
    peak_events = int(ctx["memtrack_peak_stream_events"])
    decode_events = int(ctx["memtrack_decode_stream_events"])
    smoke = meta.get("smoke") == "1"
    load_start, load_end, load_max = loads[0], loads[-1], max(loads)
    contended = load_start >= 0.75 * nproc
    out = []
    w = out.append

    w("# Performance")
    w("")
    w("<!-- Generated by bench/render_performance.py from one run of bench/run_suite.sh. Do not edit by hand:")
    w("     change the template in bench/render_performance.py and re-run bench/run_suite.sh. -->")
    w("")
    if smoke:
        w("> **Smoke run** (MEMTRACK_BENCH_SMOKE=1): streams of a few frames and 0.01 s per benchmark. It only")
        w("> proves that the suite and this renderer still work; none of its numbers means anything.")
        w("")
    w("Every figure below comes from the same run of the benchmark suite, and every ratio is taken between two")
    w("rows of that run, never across runs or machines. Absolute times depend on the machine; ratios to a floor")
    w("measured beside them (memcpy of the same bytes, zstd alone on the same bytes) are what carries over.")
    w("")

    # ---------------------------------------------------------------------------------------------- machine
    w("## Machine and run")
    w("")
    w(table(["", ""], [
        ["CPU", f"{meta['cpu_model']}, {nproc} hardware threads ({ctx.get('mhz_per_cpu', '?')} MHz)"],
        ["System", f"{meta['kernel']}; {meta['compiler']}; CMAKE_BUILD_TYPE={meta['build_type']}"],
        ["Commit", meta["commit"]],
        ["Run", f"{meta['started']} to {meta['finished']}"],
        ["1-minute load average", f"{load_start:.2f} at start, {load_end:.2f} at end, at most {load_max:.2f} "
                                  f"({len(loads)} samples, every 5 s)"],
    ]))
    w("")
    w("The load average includes the suite itself, which keeps one to two threads busy (more during the")
    w("pipeline rows), so the figure at start is the one that shows what else was running.")
    if contended:
        w(f"**This run was contended**: the load at start ({load_start:.2f}) was close to or above the {nproc} cores,")
        w("so other processes held part of the CPU. Single-thread rows below use the CPU time of the benchmark")
        w("thread, which holds up under contention; wall-clock rows of multi-threaded benchmarks (pipeline")
        w("speed-up, stats on two threads) measure the neighbours as much as memtrack. Re-run on a quiet machine.")
    else:
        w(f"The machine was quiet at the start of the run (load {load_start:.2f} on {nproc} cores).")
    w("")
    w("```sh")
    w("cmake --preset release && cmake --build --preset release -j2")
    w(meta["command"].strip())
    w("# which ran:")
    w(meta["bench_command"].strip())
    if meta.get("heap_command"):
        w(meta["heap_command"].strip())
    build = meta["command"].split("--build ")[1].split()[0]
    if rss is not None:
        w(f"bench/encode_rss.sh {build} <results>/encode_rss.tsv")
    for r in record:
        w(f"bench/record_overhead.sh {build} {int(r['rounds'])} {int(r['threads'])} {int(r['ops_per_thread'])} "
          f"<results>/record_overhead.{int(r['ops_per_thread'])}.tsv")
    w("```")
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
            rows_.append([f"{int(r['threads'])} x {int(r['ops_per_thread']):,} ops ({ev:,} events, {int(r['rounds'])} rounds)",
                          f"{nat:.3f} s", f"{ht:.3f} / {r['heaptrack_cpu']:.3f} s", f"{mt:.3f} / {r['memtrack_cpu']:.3f} s",
                          f"{tr:.3f} s", x(ht / mt), x(r["heaptrack_cpu"] / r["memtrack_cpu"]), x(mt / nat),
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
              f"{x(per['heaptrack'] / per['memtrack'])} per event. The fixed cost left over (start-up, and heaptrack's "
              f"processing at exit) is {fixed['heaptrack']:.2f} s for heaptrack and {fixed['memtrack']:.2f} s for "
              "`memtrack record`: the shorter the program, the larger memtrack's lead.")
        if record[0]["native_wall"] < 0.2:
            w("Native runs this short are near the 10 ms resolution of GNU time, so ratios to native are coarse; "
              "heaptrack against `memtrack record` is the robust comparison.")
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
        all_rows.append([f"`{name}`", ms(r.real_ns), ms(r.cpu_ns), len(r.runs),
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True, help="run_suite.sh's output directory")
    ap.add_argument("--out", required=True, help="the Markdown file to write")
    args = ap.parse_args()
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
    text = render(ctx, rows, load_meta(os.path.join(args.results, "meta.txt")),
                  load_loads(os.path.join(args.results, "load.txt")),
                  load_rss(os.path.join(args.results, "encode_rss.tsv")),
                  load_records(args.results))
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
