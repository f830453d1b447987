// Test helpers for the pipeline: a single-threaded reference encoder built directly from the codec, and plain
// libzstd to split and decompress artifacts (independent of the codec's artifact decoder).
#pragma once

#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/artifacts.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/seek_table.h"

namespace memtrack::testing {

// What the pipeline must produce: one frame per `frame_events` events, one empty frame for no events, then
// (unless `with_index` is false, as for a stream cut short by an error) the seek table of those frames.
inline std::vector<std::byte> reference_artifact(std::span<const codec::Event> events, std::size_t frame_events,
                                                 int level = codec::kDefaultLevel, bool with_index = true) {
  return build_artifact(events, frame_events, with_index, level).bytes;
}

// The msgpack bytes of `events`, as one buffer.
inline std::vector<std::byte> msgpack_of(std::span<const codec::Event> events) {
  codec::FrameSerializer serializer(events.size());
  const auto bytes = serializer.serialize(events);
  return {bytes.begin(), bytes.end()};
}

struct FrameInfo {
  std::size_t offset = 0;
  std::size_t size = 0;
  unsigned long long content_size = 0;
};

// Splits an artifact into its zstd frames; throws on a malformed or truncated frame.
inline std::vector<FrameInfo> split_frames(std::span<const std::byte> artifact) {
  std::vector<FrameInfo> frames;
  std::size_t pos = 0;
  while (pos < artifact.size()) {
    const std::size_t size = ZSTD_findFrameCompressedSize(artifact.data() + pos, artifact.size() - pos);
    if (ZSTD_isError(size)) throw std::runtime_error(std::string("bad frame: ") + ZSTD_getErrorName(size));
    frames.push_back({pos, size, ZSTD_getFrameContentSize(artifact.data() + pos, size)});
    pos += size;
  }
  return frames;
}

// The data frames of a complete artifact: split_frames without the trailing seek table, which must be there
// (and must be a skippable frame with the seekable magic).
inline std::vector<FrameInfo> data_frames(std::span<const std::byte> artifact) {
  std::vector<FrameInfo> frames = split_frames(artifact);
  std::uint32_t magic = 0;
  if (!frames.empty()) std::memcpy(&magic, artifact.data() + frames.back().offset, sizeof magic);
  if (frames.empty() || magic != codec::kSeekTableSkippableMagic) throw std::runtime_error("no trailing seek table");
  frames.pop_back();
  return frames;
}

// Decompresses every frame as one zstd stream, the way consumers read an artifact.
inline std::vector<std::byte> decompress_all(std::span<const std::byte> artifact) {
  ZSTD_DStream* ds = ZSTD_createDStream();
  std::vector<std::byte> out;
  std::vector<std::byte> chunk(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{artifact.data(), artifact.size(), 0};
  std::size_t last = 0;
  while (in.pos < in.size || last != 0) {
    ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
    last = ZSTD_decompressStream(ds, &o, &in);
    if (ZSTD_isError(last)) {
      ZSTD_freeDStream(ds);
      throw std::runtime_error(std::string("decompress: ") + ZSTD_getErrorName(last));
    }
    out.insert(out.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(o.pos));
    // Input used up and the output not full: nothing more is coming (a truncated frame is reported below).
    if (in.pos == in.size && o.pos < o.size) break;
  }
  ZSTD_freeDStream(ds);
  if (last != 0) throw std::runtime_error("artifact ends inside a frame");
  return out;
}

}  // namespace memtrack::testing
