// Building artifacts in tests: frames from FrameSerializer (or CompactFrameEncoder) + FrameCompressor, optionally
// followed by the frame index from SeekTableBuilder (the layout the pipeline's writer produces), and generated traces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "memtrack/codec/compact.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/seek_table.h"

namespace memtrack::testing {

struct Artifact {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> frame_offsets;  // data frames only
  std::vector<std::size_t> frame_events;   // events per data frame
};

// `compact`: compact frame content (memtrack/codec/compact.h) instead of msgpack.
inline Artifact build_artifact(std::span<const codec::Event> events, std::size_t frame_events, bool with_index,
                               int level = codec::kDefaultLevel, bool compact = false) {
  codec::FrameSerializer serializer(frame_events);
  std::optional<codec::CompactFrameEncoder> compact_encoder;
  if (compact) compact_encoder.emplace(frame_events);
  codec::FrameCompressor compressor(level);
  codec::SeekTableBuilder index;
  std::vector<std::byte> buf(codec::FrameCompressor::bound(serializer.capacity_bytes(), codec::kMaxCompactBlockEnds));
  Artifact a;
  std::size_t i = 0;
  do {
    const std::size_t n = std::min(frame_events, events.size() - i);
    const auto msgpack =
        compact ? compact_encoder->encode(events.subspan(i, n)) : serializer.serialize(events.subspan(i, n));
    codec::Status s;
    // As the writers do: a compact frame ends a zstd block at each of its columns.
    const std::span<const std::size_t> block_ends =
        compact ? compact_encoder->block_ends() : std::span<const std::size_t>{};
    const std::size_t size = compressor.compress(msgpack, block_ends, buf, s);
    if (!s.is_ok()) throw std::runtime_error(s.message());
    a.frame_offsets.push_back(a.bytes.size());
    a.frame_events.push_back(n);
    a.bytes.insert(a.bytes.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size));
    index.add(static_cast<std::uint32_t>(size), static_cast<std::uint32_t>(msgpack.size()));
    i += n;
  } while (i < events.size());
  if (with_index) {
    const auto table = index.finish();
    a.bytes.insert(a.bytes.end(), table.begin(), table.end());
  }
  return a;
}

// A trace with realistic structure for checking stats: several pids, allocations freed later (or never),
// reallocs that move and that grow in place, page-aligned mappings cut by partial munmaps, brk, and the
// anomalies a tracker sees in practice (frees of unknown addresses, an address allocated twice).
inline std::vector<codec::Event> generate_trace(std::size_t n, std::uint32_t seed) {
  using codec::EventKind;
  std::mt19937_64 rng(seed);
  struct Block {
    std::int32_t pid;
    std::uint64_t addr;
  };
  std::vector<Block> live;
  std::vector<codec::Event> out;
  out.reserve(n);
  std::uint64_t ts = 1'000'000;
  const std::int32_t pids[] = {100, 200, 300};
  while (out.size() < n) {
    ts += 1 + rng() % 1000;
    const std::int32_t pid = pids[rng() % 3];
    const auto tid = static_cast<std::int32_t>(pid + rng() % 4);
    // Small address space so addresses get reused after frees.
    const std::uint64_t addr = 0x10000 + (rng() % 4096) * 64;
    const std::uint64_t size = rng() % 8 == 0 ? rng() % (1u << 20) : rng() % 512;
    const unsigned pick = static_cast<unsigned>(rng() % 100);
    if (pick < 35) {
      out.push_back(codec::make_event(EventKind::Malloc, pid, tid, ts, addr, size));
      live.push_back({pid, addr});
    } else if (pick < 40) {
      out.push_back(codec::make_event(EventKind::Calloc, pid, tid, ts, addr, size));
      live.push_back({pid, addr});
    } else if (pick < 43) {
      out.push_back(codec::make_event(EventKind::AlignedAlloc, pid, tid, ts, addr, size));
      live.push_back({pid, addr});
    } else if (pick < 75) {
      if (!live.empty() && rng() % 10 != 0) {
        const std::size_t k = rng() % live.size();
        out.push_back(codec::make_event(EventKind::Free, live[k].pid, tid, ts, live[k].addr));
        live[k] = live.back();
        live.pop_back();
      } else {
        out.push_back(codec::make_event(EventKind::Free, pid, tid, ts, addr));  // maybe unknown
      }
    } else if (pick < 85) {
      if (!live.empty() && rng() % 4 != 0) {
        const std::size_t k = rng() % live.size();
        const std::uint64_t to = rng() % 2 == 0 ? live[k].addr : addr;  // in place or moved
        out.push_back(codec::make_realloc(live[k].pid, tid, ts, to, live[k].addr, size));
        live[k].addr = to;
      } else {
        out.push_back(codec::make_event(EventKind::Realloc, pid, tid, ts, addr, size));  // realloc(NULL, n)
        live.push_back({pid, addr});
      }
    } else if (pick < 92) {
      const std::uint64_t page = 0x7f00'0000'0000ull + (rng() % 256) * 4096;
      out.push_back(codec::make_event(EventKind::Mmap, pid, tid, ts, page, (1 + rng() % 16) * 4096));
    } else if (pick < 98) {
      const std::uint64_t page = 0x7f00'0000'0000ull + (rng() % 256) * 4096;
      out.push_back(codec::make_event(EventKind::Munmap, pid, tid, ts, page, (1 + rng() % 8) * 4096));
    } else {
      out.push_back(codec::make_event(EventKind::Brk, pid, tid, ts, 0x5000'0000 + rng() % 4096, rng() % 65536));
    }
  }
  return out;
}

}  // namespace memtrack::testing
