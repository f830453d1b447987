#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets into a directory (default: build/fuzz-seeds/<target>/).

Seeds are slices of the fixtures in tests/data plus hand-made hostile cases. They are not checked in as
they are: each fuzzer's corpus under tests/fuzz/corpus/<target>/ is the result of fuzzing from these seeds
and minimizing with -merge=1 (commands in docs/RELIABILITY.md). Needs only python3 and the zstd CLI.
"""
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build", "fuzz-seeds")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def zstd(data, *args):
    # From a file, so the CLI knows the size and writes it in the frame header (our writer's layout); from
    # stdin it would write none.
    tmp = os.path.join(OUT, ".zstd-input")
    os.makedirs(OUT, exist_ok=True)
    with open(tmp, "wb") as f:
        f.write(data)
    out = subprocess.run(["zstd", "-q", "-c", *args, tmp], stdout=subprocess.PIPE, check=True).stdout
    os.remove(tmp)
    return out


def fixstr(s):
    return bytes([0xA0 | len(s)]) + s.encode()


events = [bytes.fromhex(line.strip()) for line in open(os.path.join(DATA, "events.hex")) if line.strip()]
raw = open(os.path.join(DATA, "events.raw"), "rb").read()

# --- msgpack_event_parse_fuzz: single events, runs of events, lenient layouts, hostile headers.
T = "msgpack_event_parse_fuzz"
for i, e in enumerate(events[:24]):
    write(T, "event_%03d" % i, e)
write(T, "run_of_8", b"".join(events[:8]))
write(T, "truncated_event", events[2][:-3])
# Lenient forms rmp_serde accepts: map16 header, str8 keys, shuffled keys, an unknown key, nil old_addr.
free = [("pid", b"\x01"), ("tid", b"\x02"), ("timestamp", b"\xcc\xc8"), ("addr", b"\x20"), ("type", fixstr("Free"))]
write(T, "map16_free", b"\xde\x00\x05" + b"".join(fixstr(k) + v for k, v in free))
write(T, "str8_keys", b"\x85" + b"".join(b"\xd9" + bytes([len(k)]) + k.encode() + v for k, v in free))
write(T, "shuffled_keys", b"\x85" + b"".join(fixstr(k) + v for k, v in reversed(free)))
write(T, "unknown_key", b"\x86" + b"".join(fixstr(k) + v for k, v in free) + fixstr("extra") + b"\x92\x01\xc0")
realloc_nil = [("pid", b"\x01"), ("tid", b"\x02"), ("timestamp", b"\x03"), ("addr", b"\x04"),
               ("type", fixstr("Realloc")), ("old_addr", b"\xc0"), ("size", b"\x05")]
write(T, "realloc_nil_old_addr", b"\x87" + b"".join(fixstr(k) + v for k, v in realloc_nil))
# Hostile: sizes declaring billions, deep nesting under an unknown key, bytes that are never msgpack.
write(T, "map32_4g", b"\xdf\xff\xff\xff\xff" + fixstr("pid") + b"\x01")
write(T, "str32_4g_key", b"\x81\xdb\xff\xff\xff\xff" + b"a" * 16)
write(T, "array32_4g_value", b"\x81" + fixstr("x") + b"\xdd\xff\xff\xff\xff\x01\x02")
write(T, "deep_nesting", b"\x81" + fixstr("x") + b"\x91" * 2000 + b"\xc0")
write(T, "never_used_c1", b"\xc1" * 4)
write(T, "negative_pid", b"\x85" + fixstr("pid") + b"\xd2\x80\x00\x00\x00" + b"".join(fixstr(k) + v for k, v in free[1:]))

# --- artifact_decode_fuzz: small framed artifacts, the older single-stream layout, damaged and hostile frames.
T = "artifact_decode_fuzz"
mp = b"".join(events[:40])
one_frame = zstd(mp)
write(T, "one_frame", one_frame)
write(T, "two_frames", zstd(b"".join(events[:20])) + zstd(b"".join(events[20:60])))
write(T, "empty_frame", zstd(b""))
write(T, "single_stream", subprocess.run(["zstd", "-q", "-c", "--no-content-size"], input=mp,
                                         stdout=subprocess.PIPE, check=True).stdout)
write(T, "no_checksum", zstd(mp, "--no-check"))
skippable = b"\x5e\x2a\x4d\x18\x03\x00\x00\x00abc"
write(T, "skippable_after", one_frame + skippable)
write(T, "skippable_first", skippable + one_frame)
write(T, "truncated_frame", one_frame[: len(one_frame) // 2])
write(T, "garbage_between", one_frame + b"\x42" + one_frame)
flipped = bytearray(one_frame)
flipped[len(flipped) // 2] ^= 0x10
write(T, "flipped_bit", bytes(flipped))
write(T, "junk_in_frame", zstd(b"\xc1" * 10))
# Frame headers: window log 31 (no content size); content size 2^62 declared in an 8-byte field.
write(T, "huge_window", b"\x28\xb5\x2f\xfd\x00\xa8\x01\x00\x00")
write(T, "huge_content_size", b"\x28\xb5\x2f\xfd\xc0" + struct.pack("<Q", 1 << 62) + b"\x01\x00\x00")
# 16 MiB of one repeated event compresses to a few KB: the buffered-frame worst case.
bomb = zstd(events[1] * ((16 << 20) // len(events[1])), "-19")
write(T, "zip_bomb_16mib", bomb)
# Two of them: the second frame's events used to grow beside the first frame's dead buffer (73 MB of heap).
write(T, "zip_bomb_two_frames", bomb + bomb)
# The worst case of the buffered path: 38-byte events (the smallest a Free can be) filling 16 MiB, in a
# single-segment frame whose window is the whole 16 MiB.
smallest = b"\x85" + fixstr("pid") + b"\x00" + fixstr("tid") + b"\x00" + fixstr("timestamp") + b"\x00" + \
    fixstr("addr") + b"\x00" + fixstr("type") + fixstr("Free")
assert len(smallest) == 38
write(T, "zip_bomb_single_segment", zstd(smallest * ((16 << 20) // 38), "-19", "--zstd=wlog=24"))

# --- raw_record_fuzz: first byte = recipe (block size, memfd or pipe, chunk), then records.
T = "raw_record_fuzz"
R = 48
write(T, "ten_records_memfd", b"\x03" + raw[: 10 * R])
write(T, "ten_records_pipe", b"\x5b" + raw[: 10 * R])
write(T, "truncated_tail", b"\x02" + raw[: 3 * R + 17])
bad = bytearray(raw[: 5 * R])
bad[3 * R + 40] = 9  # unknown kind in record 3
write(T, "bad_kind", b"\x01" + bytes(bad))
bad = bytearray(raw[: 5 * R])
bad[2 * R + 45] = 1  # reserved byte in record 2
write(T, "reserved_byte", b"\x1c" + bytes(bad))
write(T, "empty", b"\x00")

# --- frame_round_trip_fuzz: a recipe (frame size, level, block size) then event bytes; raw fixtures make
# plausible field values.
T = "frame_round_trip_fuzz"
write(T, "recipe_small_frames", b"\x07\x00\x05" + raw[: 6 * R])
write(T, "recipe_skippable_level3", b"\x3f\x13\x40" + raw[6 * R: 12 * R])
write(T, "recipe_wide_ints", b"\x01\x02\x00" + bytes(range(256)))

# --- compact_frame_fuzz: first byte = mode. Even: the content after the magic and version; odd: a recipe of
# events, round-tripped, then damaged. compact() below writes the format of docs/FORMAT.md ("Compact data
# frames") with delta-coded addresses only; the hand-made content uses references.
def uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zz64(v):
    v &= (1 << 64) - 1
    return ((v << 1) ^ (-(v >> 63))) & ((1 << 64) - 1)


def zz32(v):
    return ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF


def compact(events):
    """events: (kind, pid, tid, timestamp, addr, size, old_addr or None)."""
    pairs = []
    for e in events:
        if (e[1], e[2]) not in pairs:
            pairs.append((e[1], e[2]))
    out = bytearray(b"\xc1mtc\x01") + uvarint(len(events))
    out += bytes(e[0] | (0x10 if e[6] is not None else 0) for e in events)
    out += uvarint(len(pairs))
    for pid, tid in pairs:
        out += uvarint(zz32(pid)) + uvarint(zz32(tid))
    out += b"".join(uvarint(pairs.index((e[1], e[2]))) for e in events)
    prev = 0
    for e in events:
        out += uvarint(zz64(e[3] - prev))
        prev = e[3]
    last = {}
    for e in events:
        for a in ([e[6]] if e[6] is not None else []) + [e[4]]:
            p = last.get((e[1], e[2]), 0)
            out += uvarint(zz64(a - p) * 4 + 1)
            last[(e[1], e[2])] = a
    out += b"".join(uvarint(e[5]) for e in events if e[0] != 2)
    return bytes(out)


T = "compact_frame_fuzz"
every_kind = [(1, 1, 2, 10, 0x1000, 16, None), (3, 1, 2, 11, 0x2000, 32, None), (4, 1, 2, 12, 0x3000, 64, 0x1000),
              (4, 1, 2, 13, 0x4000, 8, None), (5, 1, 3, 14, 0x5000, 4096, None), (2, 1, 2, 15, 0x3000, 0, None),
              (6, -1, 2, 16, 0x7F0000000000, 1 << 20, None), (7, -1, 2, 17, 0x7F0000000000, 1 << 20, None),
              (8, 2**31 - 1, -2**31, 2**64 - 1, 2**64 - 1, 2**64 - 1, None), (2, 1, 3, 0, 0x5000, 0, None)]
write(T, "content_every_kind", b"\x00" + compact(every_kind)[5:])
# Malloc then a Free naming it (an allocation reference), as the encoder writes it (tests/codec/compact_test.cpp).
write(T, "content_reference", bytes.fromhex("00" "02" "0102" "01" "0204" "0000" "1402" "818002" "04" "10"))
# The same two events in version 3 (mode 4: (4 >> 1) % 4 + 1), as the encoder writes them: tokens by delta
# and live rank, the timestamps grouped (the Free's before the Malloc's), the columns of docs/FORMAT.md.
write(T, "content_v3_reference",
      bytes.fromhex("04" "02" "0122" "01" "0204" "0000" "0214" "0000" "10" "00" "0100" "00" "00" "028040"))
# Version 4 (mode 6: (6 >> 1) % 4 + 1): the same two events as the encoder writes them (docs/FORMAT.md's
# example: the 9 timestamp modes, groups 2 and 6 short gaps), then the Free at 311, its gap 301 escaped in a
# short-gap group (255, then the low byte 5a and the high part 02 of zigzag64(301)).
write(T, "content_v4_reference",
      bytes.fromhex("06" "02" "0122" "01" "0204" "0000" "000001000000010000" "010a" "10" "00" "0100" "00" "00" "028040"))
write(T, "content_v4_escape",
      bytes.fromhex("06" "02" "0122" "01" "0204" "0000" "000001000000010000" "ff0a" "5a02" "10" "00" "0100" "00" "00"
                    "028040"))
# Version 5 (mode 8: (8 >> 1) % 5 + 1): the same two events, their deltas in units of 16 (0x1000: 80 08), the
# empty remainders column and no stacks (flag 00); then with stacks (docs/FORMAT.md's example: flag 01, first
# event 100, a dictionary of one id 7, the codes 01 00).
write(T, "content_v5_reference",
      bytes.fromhex("08" "02" "0122" "01" "0204" "0000" "000001000000010000" "010a" "10" "00" "0100" "00" "00" "028008"
                    "00" "00"))
write(T, "content_v5_stacks",
      bytes.fromhex("08" "02" "0122" "01" "0204" "0000" "000001000000010000" "010a" "10" "00" "0100" "00" "00" "028008"
                    "00" "01" "64" "0107" "0100"))
write(T, "recipe_few_threads", b"\x01\x04" + raw[: 20 * R])
write(T, "recipe_stacks", b"\x41\x04" + raw[: 20 * R])
write(T, "recipe_damaged", b"\x0f\x02" + raw[20 * R: 40 * R])
write(T, "recipe_cut", b"\x03\x01" + raw[: 10 * R] + b"\x80")
# A compact artifact for artifact_decode_fuzz: two compact frames.
write("artifact_decode_fuzz", "compact_frames",
      zstd(compact(every_kind), "--content-size", "--check") + zstd(compact(every_kind[:3]), "--content-size", "--check"))
print("seeds written to", OUT)
