// The context records of an artifact as a reader of the format finds them: every frame through the frame
// index (the seek table at the end lists each frame's compressed size, docs/FORMAT.md "Context section and
// the frame index"), the context frames decoded with the codec's decode_context_frame. Shared by the
// integration tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "memtrack/codec/context.h"

namespace memtrack::testing_integration {

struct ArtifactFrames {
  std::vector<codec::ContextRecord> context;  // in file order
  std::vector<std::uint64_t> data_frame_bytes;
};

// Fails the calling test when `bytes` has no frame index or a context frame does not decode.
inline ArtifactFrames read_artifact_frames(std::span<const std::byte> bytes) {
  auto le32 = [](const std::byte* p) {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  ArtifactFrames a;
  if (bytes.size() < 9) {
    ADD_FAILURE() << "artifact too short for a frame index: " << bytes.size() << " bytes";
    return a;
  }
  const std::byte* footer = bytes.data() + bytes.size() - 9;
  if (le32(footer + 5) != 0x8F92EAB1u) {
    ADD_FAILURE() << "no frame index";
    return a;
  }
  const std::uint32_t frames = le32(footer);
  const bool checksums = (static_cast<unsigned>(footer[4]) & 0x80u) != 0;
  const std::size_t entry = checksums ? 12 : 8;
  const std::size_t table = 8 + frames * entry + 9;
  if (table > bytes.size()) {
    ADD_FAILURE() << "frame index larger than the artifact";
    return a;
  }
  const std::byte* entries = bytes.data() + bytes.size() - table + 8;
  std::uint64_t offset = 0;
  for (std::uint32_t i = 0; i < frames; ++i) {
    const std::uint32_t size = le32(entries + i * entry);
    const std::span<const std::byte> frame(bytes.data() + offset, size);
    if (codec::is_context_frame(frame)) {
      const codec::Status st = codec::decode_context_frame(frame, offset, a.context);
      EXPECT_TRUE(st.is_ok()) << st.message();
    } else {
      a.data_frame_bytes.push_back(size);
    }
    offset += size;
  }
  return a;
}

}  // namespace memtrack::testing_integration
