// A cache of separate debug files with their compressed .debug sections decompressed (docs/RUNTIME.md,
// "Call stacks"). Distributions compress their debug files (Debian's -dbg and -dbgsym packages: zlib), and
// libdw inflates every compressed .debug section each time it opens one (libc6-dbg's libc: 4 MB inflated
// to 10 MB), in every recording and analysis command that names a frame of that library. The cache keeps
// <dir>/<build-id>.debug, written once (to a temporary file renamed into place, so a reader never sees half
// a file) and opened instead of the compressed file after.
#pragma once

#include <string>

#include "memtrack/symbolize/build_id.h"

namespace memtrack::symbolize {

// The path of the copy of build `id` in `dir` if there is a valid one (its build-id is `id`), else empty.
std::string cached_debug_file(const BuildId& id, const std::string& dir);

// Writes the uncompressed copy of the debug file at `path` (build `id`) into `dir` when the file has a
// compressed (SHF_COMPRESSED) .debug section; the copy's path, or empty when the file has none or the copy
// cannot be written (then nothing is left behind).
std::string write_decompressed_copy(const std::string& path, const BuildId& id, const std::string& dir);

}  // namespace memtrack::symbolize
