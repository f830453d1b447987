#!/usr/bin/env python3
"""Reads a MemtrackArtifact with third-party decoders only (Debian's python3-zstandard + python3-msgpack),
as any consumer would, and prints one line per event for the C++ integration tests:

    pid tid timestamp addr type size old_addr      (size and old_addr are - when absent)

Exit status 1 with a message on stderr when the artifact cannot be read or an event is malformed."""
import sys

import msgpack
import zstandard

KEYS = {
    "Malloc": ["size"], "Free": [], "Calloc": ["size"], "AlignedAlloc": ["size"], "Mmap": ["size"],
    "Munmap": ["size"], "Brk": ["size"], "Realloc": ["size"],
}


def main(path):
    out = sys.stdout
    count = 0
    with open(path, "rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
        for ev in msgpack.Unpacker(reader, raw=False):
            kind = ev["type"]
            if kind not in KEYS:
                raise ValueError(f"event {count}: unknown type {kind!r}")
            expected = ["pid", "tid", "timestamp", "addr", "type"] + (["old_addr"] if "old_addr" in ev else []) + KEYS[kind]
            if list(ev.keys()) != expected:
                raise ValueError(f"event {count}: keys {list(ev.keys())} != {expected}")
            size = ev.get("size", "-")
            old = ev.get("old_addr", "-")
            out.write(f"{ev['pid']} {ev['tid']} {ev['timestamp']} {ev['addr']} {kind} {size} {old}\n")
            count += 1
    print(f"# {count} events", file=sys.stderr)


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # noqa: BLE001 - any failure is a failed interop check
        print(f"read_artifact.py: {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
