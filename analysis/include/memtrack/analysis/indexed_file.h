// Random access to an artifact on disk: finding its frame index (seek table) and reading frames by offset,
// the file side of IndexedFrameReader (frame_reader.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "memtrack/codec/seek_table.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

// Looks for a seek table at the end of `fd`. Leaves `index` empty when the file has none, or is not a
// regular file (a pipe cannot be read from the end). An index that is present but invalid is an error
// naming `name`: it describes the file wrongly, so trusting any of it could read the wrong bytes.
codec::Status load_index(int fd, const std::string& name, std::optional<codec::SeekTable>& index);

// Reads exactly out.size() bytes at `offset` (pread, retrying short reads and EINTR).
codec::Status read_at(int fd, const std::string& name, std::uint64_t offset, std::span<std::byte> out);

}  // namespace memtrack::analysis
