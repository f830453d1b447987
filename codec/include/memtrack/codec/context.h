// The artifact's context section (docs/FORMAT.md, "Context section"): who the processes were and what the
// recording was, in zstd skippable frames placed after data frames. Plain MemtrackArtifact consumers skip
// them; the data frames stay byte-identical to an artifact of the same events without context.
//
// This header is the one home of the section's bytes: the record types, their msgpack form, and the frame
// that carries them. The recorder writes them (runtime/recorder), the analysis library reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/status.h"

namespace memtrack::codec {

// Every zstd skippable frame starts with a magic in 0x184D2A50..0x184D2A5F, then a u32 LE frame size (the
// bytes after these 8). The one home of these constants for every reader that walks an artifact's frames.
inline constexpr std::uint32_t kSkippableMagicMask = 0xFFFFFFF0u;
inline constexpr std::uint32_t kSkippableMagicBase = 0x184D2A50u;
inline constexpr std::size_t kSkippableHeaderBytes = 8;

// The little-endian u32 at `p` (frame magics and sizes are little-endian whatever the host).
[[nodiscard]] inline std::uint32_t load_le32(const std::byte* p) {
  return std::uint32_t{std::to_integer<std::uint8_t>(p[0])} | std::uint32_t{std::to_integer<std::uint8_t>(p[1])} << 8 |
         std::uint32_t{std::to_integer<std::uint8_t>(p[2])} << 16 |
         std::uint32_t{std::to_integer<std::uint8_t>(p[3])} << 24;
}
[[nodiscard]] inline bool is_skippable_magic(std::uint32_t magic) {
  return (magic & kSkippableMagicMask) == kSkippableMagicBase;
}
// `v` as "0x%08x": how a reader's error message names a frame magic it does not know.
[[nodiscard]] std::string hex32(std::uint32_t v);

// Skippable frame magic 0x184D2A50 + 0xB; the frame index (seek table) uses 0x184D2A5E.
inline constexpr std::uint32_t kContextFrameMagic = 0x184D2A5Bu;
inline constexpr std::uint8_t kContextTag[4] = {'M', 'T', 'C', 'X'};
// The artifact format version a context frame declares. Version 1 artifacts have no context frames.
inline constexpr std::uint8_t kFormatVersion = 2;
inline constexpr std::uint8_t kContextFlagZstd = 0x01;
// skippable magic (4) + frame size (4) + tag (4) + version (1) + flags (1) + reserved (2)
inline constexpr std::size_t kContextHeaderBytes = 16;
// A reader refuses a context payload that declares more than this (a decompressed size is allocated once).
inline constexpr std::size_t kMaxContextPayloadBytes = std::size_t{64} << 20;

// What was recorded, by whom, when: once per artifact, in the first context frame, without a position
// (docs/FORMAT.md, the `Recording` row).
struct RecordingInfo {
  std::string memtrack_version;
  std::vector<std::string> command;
  std::uint64_t start_realtime_ns = 0;
  std::uint64_t start_monotonic_ns = 0;
  std::vector<std::string> sections;  // optional sections this recording writes: "lifecycle", ...
  std::int32_t pid = 0;               // the recorder's pid: the parent of the command's first process
  friend bool operator==(const RecordingInfo&, const RecordingInfo&) = default;
};

// The lifecycle records below carry a position, `event`: the global index of the first event after the point
// the record describes (every later event of the pid has an index >= event).
struct ProcessStart {
  std::int32_t pid = 0;
  std::int32_t ppid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;  // CLOCK_MONOTONIC ns, as the events
  friend bool operator==(const ProcessStart&, const ProcessStart&) = default;
};

struct ProcessExec {
  std::int32_t pid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::string executable;
  std::vector<std::string> argv;
  friend bool operator==(const ProcessExec&, const ProcessExec&) = default;
};

struct ProcessExit {
  std::int32_t pid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::optional<std::int32_t> status;  // exit code, when the process exited and the code is known
  std::optional<std::int32_t> signal;  // the signal that killed it, when known
  friend bool operator==(const ProcessExit&, const ProcessExit&) = default;
};

struct Untracked {
  std::optional<std::int32_t> pid;
  std::string executable;
  std::string reason;  // "setuid", "setgid", "static", "no-access" (an image) or "left-running" (a process)
  std::uint64_t event = 0;
  friend bool operator==(const Untracked&, const Untracked&) = default;
};

// The last record of a recording that finished: its presence says the stream is complete.
struct StreamEnd {
  std::uint64_t events = 0;
  std::uint64_t frames = 0;  // data frames
  bool clean = true;
  friend bool operator==(const StreamEnd&, const StreamEnd&) = default;
};

// The stacks and modules sections (docs/FORMAT.md, "Context section: stacks"). Binary columns are msgpack
// bin values of little-endian integers; a reader refuses one whose length is not a whole number of them, or
// columns of one record whose lengths disagree.

// A module mapped into (loaded = true) or unmapped from (false) the image of `pid` from position `event` on.
// Addresses of the image's stacks in [start, end) belong to it; module-relative = address - bias.
struct Module {
  std::int32_t pid = 0;
  std::uint64_t event = 0;
  std::string path;
  std::vector<std::uint8_t> build_id;  // empty when the module has none
  std::uint64_t bias = 0, start = 0, end = 0;
  bool loaded = true;
  friend bool operator==(const Module&, const Module&) = default;
};

// Nodes first_id, first_id + 1, ... of the trace tree of the image of `pid` that is current at `event`:
// node first_id + i has parent parents[i] (0: the root, the empty stack) and return address addresses[i].
// Address kTruncatedStackAddress marks a pseudo-node: the stack below it was cut at the depth cap.
struct StackNodes {
  std::int32_t pid = 0;
  std::uint64_t event = 0;
  std::uint32_t first_id = 1;
  std::vector<std::uint32_t> parents;    // bin, u32 LE each
  std::vector<std::uint64_t> addresses;  // bin, u64 LE each; same count as parents
  friend bool operator==(const StackNodes&, const StackNodes&) = default;
};
inline constexpr std::uint64_t kTruncatedStackAddress = 1;

// The leaf node of each event of one data frame: ids[i] is the stack of event first_event + i in its
// process image's tree (0: none, e.g. a free). One record per data frame, written right after it.
struct EventStacks {
  std::uint64_t first_event = 0;
  std::vector<std::uint32_t> ids;  // bin, u32 LE each
  friend bool operator==(const EventStacks&, const EventStacks&) = default;
};

// Symbolized module-relative return addresses of one module (path + build-id): for address i, frames
// [sum(depths[0..i)), + depths[i]) of the frame columns, innermost first (inlined calls, then the function
// containing the call); depth 0: nothing known (shown as module + offset). function and file index
// `strings` (kNoString: unknown); line 0: unknown. A module may have several Symbols records (a writer
// splits big tables to stay under the reader's limits); each has its own strings.
struct Symbols {
  std::string path;
  std::vector<std::uint8_t> build_id;
  std::vector<std::uint64_t> addresses;  // bin, u64 LE each
  std::vector<std::uint32_t> depths;     // bin, u32 LE per address
  std::vector<std::uint32_t> functions;  // bin, u32 LE per frame
  std::vector<std::uint32_t> files;      // bin, u32 LE per frame
  std::vector<std::uint32_t> lines;      // bin, u32 LE per frame
  std::vector<std::string> strings;      // array of str
  friend bool operator==(const Symbols&, const Symbols&) = default;
};
inline constexpr std::uint32_t kNoString = 0xFFFFFFFFu;

// The control section (docs/FORMAT.md, "Context section: control"): recording paused and resumed, and named
// regions, positioned in the event stream like the lifecycle records. `pid`/`tid` name who asked (the
// recorder's pid and tid 0 for `record --paused`, a signal to the recorder or `memtrack ctl`).

// From `event` on, allocation events are not recorded (frees still are) until the next Resume. `source`:
// "library" (memtrack_pause), "start" (record --paused), "signal" (SIGUSR1 to the recorder), "ctl".
struct Pause {
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::string source;
  friend bool operator==(const Pause&, const Pause&) = default;
};

// From `event` on, allocation events are recorded again.
struct Resume {
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::string source;
  friend bool operator==(const Resume&, const Resume&) = default;
};

// A region named `name` opened by thread `tid` of `pid` at `event`. Regions nest per (pid, tid): a RegionEnd
// closes the innermost region its thread opened and has not closed.
struct RegionBegin {
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::string name;
  friend bool operator==(const RegionBegin&, const RegionBegin&) = default;
};

struct RegionEnd {
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  friend bool operator==(const RegionEnd&, const RegionEnd&) = default;
};

// The resident section (docs/FORMAT.md, "Context section: resident"): a sample of one process's resident
// memory, taken by the recorder from /proc while the program runs, positioned in the event stream like the
// lifecycle records. Bytes; memtrack's own pages (`own`: the shared ring's resident pages in that process)
// are already taken out of `shmem`. `hwm` is the kernel's VmHWM at the sample, memtrack's pages included.
struct Resident {
  std::int32_t pid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::uint64_t anon = 0, file = 0, shmem = 0, swap = 0;
  std::uint64_t own = 0;
  std::uint64_t hwm = 0;
  [[nodiscard]] std::uint64_t resident() const { return anon + file + shmem; }
  friend bool operator==(const Resident&, const Resident&) = default;
};

// The resident pages of one process at one moment (docs/FORMAT.md, "Context section: resident"): the recorder's
// snapshot of /proc/<pid>/pagemap's present bits over the process's writable private anonymous mappings, taken
// when its resident memory reached a new high (docs/RUNTIME.md, "Resident pages"). Range i starts at starts[i]
// and spans pages[i] pages of page_size bytes; its bits follow the previous range's in `present`, starting on a
// byte: page j of the range is resident when bit (j % 8) of its byte j / 8 is set. The reader checks that
// ranges are page-aligned, ascending and disjoint and that `present` has exactly their bytes. A snapshot too
// big for one record (kMaxContextBinBytes of bits) is split in parts 0, 1, ... with the same pid and event.
struct ResidentPages {
  std::int32_t pid = 0;
  std::uint64_t event = 0;
  std::uint64_t timestamp = 0;
  std::uint32_t part = 0;
  std::uint32_t page_size = 4096;
  std::vector<std::uint64_t> starts;  // bin, u64 LE each
  std::vector<std::uint64_t> pages;   // bin, u64 LE each; same count as starts
  std::vector<std::uint8_t> present;  // bin
  friend bool operator==(const ResidentPages&, const ResidentPages&) = default;
};
// The bytes of `present` a range of `pages` pages takes.
[[nodiscard]] inline std::uint64_t resident_bitmap_bytes(std::uint64_t pages) { return pages / 8 + (pages % 8 != 0); }

// A region name longer than this is cut by the writer (the preload carries it through the ring).
inline constexpr std::size_t kMaxRegionNameBytes = 256;

// What one record may hold, so a writer splits before the reader's unpack limits refuse it: elements of an
// array, bytes of a bin or str value.
inline constexpr std::size_t kMaxContextArrayElements = std::size_t{1} << 16;
inline constexpr std::size_t kMaxContextBinBytes = std::size_t{1} << 20;

// `snapshot` as parts 0, 1, ... whose `present` (and `starts`, `pages` columns) each hold at most `max_bytes`
// (>= 16) bytes, a range longer than that cut into pieces: what the writer puts in the artifact.
[[nodiscard]] std::vector<ResidentPages> split_resident_pages(const ResidentPages& snapshot,
                                                              std::size_t max_bytes = kMaxContextBinBytes);

using ContextRecord =
    std::variant<RecordingInfo, ProcessStart, ProcessExec, ProcessExit, Untracked, StreamEnd, Module, StackNodes,
                 EventStacks, Symbols, Pause, Resume, RegionBegin, RegionEnd, Resident, ResidentPages>;

// Appends the msgpack map of `record` to `out`.
void encode_context_record(const ContextRecord& record, std::vector<std::byte>& out);

// Appends one whole context frame (header + one zstd frame of the records' msgpack) to `out`.
// `scratch` holds the msgpack bytes between calls (reused, so a recorder does not reallocate per frame).
Status encode_context_frame(std::span<const ContextRecord> records, FrameCompressor& compressor,
                            std::vector<std::byte>& scratch, std::vector<std::byte>& out);

// True if `bytes` (at least 4) start with the context frame magic.
[[nodiscard]] bool is_context_frame(std::span<const std::byte> bytes);

// Parses one whole context frame (starting at its skippable magic, `frame.size()` = 8 + its frame size) and
// appends its records to `out`, skipping records of unknown type. `file_offset` is where the frame starts in
// the artifact; errors name it and the record's offset in the payload. A frame of a version greater than
// kFormatVersion is refused with Errc::bad_msgpack ("written by a newer memtrack"), its records untouched.
Status decode_context_frame(std::span<const std::byte> frame, std::uint64_t file_offset,
                            std::vector<ContextRecord>& out);

}  // namespace memtrack::codec
