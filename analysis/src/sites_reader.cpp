// read_sites: one sequential pass over an artifact in memory, data frames and context frames together.
// (The shared frame readers of frame_reader.h will deliver context records too; until then `top` reads
// them here. The accumulator only needs records and events in position order, whoever reads them.)
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "memtrack/analysis/sites.h"
#include "memtrack/codec/msgpack_decoder.h"

namespace memtrack::analysis {
namespace {

constexpr std::uint32_t kSkippableMask = 0xFFFFFFF0u, kSkippableBase = 0x184D2A50u;
// A frame without a declared size (the older single-stream layout) grows its buffer up to this.
constexpr std::size_t kMaxFrameBytes = std::size_t{1} << 32;

std::uint32_t load_le32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::uint64_t position_of(const codec::ContextRecord& r) {
  return std::visit(
      [](const auto& x) -> std::uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, codec::EventStacks>) {
          return x.first_event;
        } else if constexpr (requires { x.event; }) {
          return x.event;
        } else {
          return 0;  // RecordingInfo, StreamEnd (no position), Symbols: anywhere
        }
      },
      r);
}

// Decompresses one whole zstd frame.
codec::Status decompress(std::span<const std::byte> frame, const std::string& where, std::vector<std::byte>& out) {
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return {codec::Errc::bad_zstd, where + ": bad frame header"};
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 27);
  out.resize(declared != ZSTD_CONTENTSIZE_UNKNOWN && declared <= kMaxFrameBytes ? declared : std::size_t{1} << 20);
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::size_t produced = 0;
  codec::Status status;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= kMaxFrameBytes) {
        status = {codec::Errc::too_large, where + ": frame content larger than 4 GiB"};
        break;
      }
      out.resize(out.size() * 2);
    }
    ZSTD_outBuffer o{out.data(), out.size(), produced};
    const std::size_t r = ZSTD_decompressStream(dctx, &o, &in);
    produced = o.pos;
    if (ZSTD_isError(r)) {
      status = {codec::Errc::bad_zstd, where + ": corrupt zstd data (" + ZSTD_getErrorName(r) + ")"};
      break;
    }
    if (r == 0) break;
    if (in.pos == in.size && o.pos < o.size) {
      status = {codec::Errc::truncated, where + ": input ends inside the frame"};
      break;
    }
  }
  ZSTD_freeDCtx(dctx);
  out.resize(produced);
  if (status.is_ok() && declared != ZSTD_CONTENTSIZE_UNKNOWN && produced != declared)
    status = {codec::Errc::bad_zstd, where + ": frame content is " + std::to_string(produced) +
                                         " bytes but its header declares " + std::to_string(declared)};
  return status;
}

}  // namespace

codec::Status read_sites(std::span<const std::byte> file, const std::string& name, SiteAccumulator& acc,
                         const SitesProgressFn& progress) {
  std::vector<codec::Event> events;  // the last data frame's, held until the context frames after it are read
  std::vector<codec::ContextRecord> records;
  std::uint64_t first_event = 0;  // index of events[0]
  std::vector<std::byte> content;

  // Delivers the held frame's events with every record positioned at or before each of them; records
  // positioned later wait (for the next frame, or the end when `all`).
  const auto deliver = [&](bool all) {
    std::stable_sort(records.begin(), records.end(),
                     [](const auto& a, const auto& b) { return position_of(a) < position_of(b); });
    std::size_t r = 0, e = 0;
    while (e < events.size()) {
      while (r < records.size() && position_of(records[r]) <= first_event + e) acc.add_context(records[r++]);
      std::size_t run = e + 1;  // events up to the next record's position go in one call
      const std::uint64_t next = r < records.size() ? position_of(records[r]) : UINT64_MAX;
      while (run < events.size() && first_event + run < next) ++run;
      acc.add(std::span<const codec::Event>(events.data() + e, run - e));
      e = run;
    }
    if (all)
      while (r < records.size()) acc.add_context(records[r++]);
    records.erase(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(r));
    first_event += events.size();
    events.clear();
  };

  std::uint64_t frame = 0;
  std::size_t pos = 0;
  while (pos < file.size()) {
    const std::string where = name + ": frame " + std::to_string(frame) + " at byte " + std::to_string(pos);
    if (file.size() - pos < 8) return {codec::Errc::truncated, where + ": input ends inside a frame header"};
    const std::uint32_t magic = load_le32(file.data() + pos);
    if ((magic & kSkippableMask) == kSkippableBase) {
      const std::uint64_t size = 8ull + load_le32(file.data() + pos + 4);
      if (size > file.size() - pos) return {codec::Errc::truncated, where + ": input ends inside a skippable frame"};
      const auto bytes = file.subspan(pos, static_cast<std::size_t>(size));
      if (codec::is_context_frame(bytes)) {
        const codec::Status s = codec::decode_context_frame(bytes, pos, records);
        if (!s) return {s.code(), name + ": " + s.message()};
      }
      pos += static_cast<std::size_t>(size);
      continue;
    }
    if (magic != ZSTD_MAGICNUMBER) return {codec::Errc::bad_zstd, where + ": not a zstd frame"};
    const std::size_t size = ZSTD_findFrameCompressedSize(file.data() + pos, file.size() - pos);
    if (ZSTD_isError(size)) return {codec::Errc::truncated, where + ": " + ZSTD_getErrorName(size)};
    deliver(false);
    if (const codec::Status s = decompress(file.subspan(pos, size), where, content); !s) return s;
    std::string error;
    for (std::size_t off = 0; off < content.size();) {
      codec::Event e;
      const std::size_t start = off;
      const codec::ParseResult r = codec::parse_event(content.data(), content.size(), off, e, error);
      if (r != codec::ParseResult::ok)
        return {codec::Errc::bad_msgpack,
                where + ": event at byte " + std::to_string(start) +
                    " of the frame's content: " + (r == codec::ParseResult::error ? error : "truncated")};
      events.push_back(e);
    }
    pos += size;
    ++frame;
    if (progress) progress(pos, first_event + events.size());
  }
  deliver(true);
  return {};
}

namespace {

// Calls `visit` with each record of every context frame of `file`, in file order, stepping over data frames
// by their compressed size, until `visit` returns false. Stops quietly at the first damage (the caller's own
// reading reports it); returns false if it stopped there.
template <class Visit>
bool for_each_context_record(std::span<const std::byte> file, Visit&& visit) {
  std::vector<codec::ContextRecord> records;
  for (std::size_t pos = 0; file.size() - pos >= 8;) {
    std::size_t size = 0;
    if ((load_le32(file.data() + pos) & kSkippableMask) == kSkippableBase) {
      const std::uint64_t n = 8ull + load_le32(file.data() + pos + 4);
      if (n > file.size() - pos) return false;
      size = static_cast<std::size_t>(n);
      const auto bytes = file.subspan(pos, size);
      records.clear();
      if (codec::is_context_frame(bytes)) {
        if (!codec::decode_context_frame(bytes, pos, records)) return false;
        for (codec::ContextRecord& r : records)
          if (!visit(r)) return true;
      }
    } else {
      size = ZSTD_findFrameCompressedSize(file.data() + pos, file.size() - pos);
      if (ZSTD_isError(size)) return false;
    }
    pos += size;
  }
  return true;
}

}  // namespace

bool has_stacks(std::span<const std::byte> file) {
  bool found = false;
  for_each_context_record(file, [&](const codec::ContextRecord& r) {
    if (std::holds_alternative<codec::StackNodes>(r) || std::holds_alternative<codec::EventStacks>(r)) found = true;
    if (const auto* info = std::get_if<codec::RecordingInfo>(&r))
      found = found || std::find(info->sections.begin(), info->sections.end(), "stacks") != info->sections.end();
    return !found;
  });
  return found;
}

bool has_control_records(std::span<const std::byte> file) {
  bool found = false;
  for_each_context_record(file, [&](const codec::ContextRecord& r) {
    found = std::holds_alternative<codec::RegionBegin>(r) || std::holds_alternative<codec::Pause>(r);
    return !found;
  });
  return found;
}

std::vector<codec::ContextRecord> read_lifecycle_records(std::span<const std::byte> file) {
  std::vector<codec::ContextRecord> kept;
  for_each_context_record(file, [&](codec::ContextRecord& r) {
    if (std::holds_alternative<codec::RecordingInfo>(r) || std::holds_alternative<codec::ProcessStart>(r) ||
        std::holds_alternative<codec::ProcessExec>(r) || std::holds_alternative<codec::ProcessExit>(r) ||
        std::holds_alternative<codec::Untracked>(r) || std::holds_alternative<codec::StreamEnd>(r))
      kept.push_back(std::move(r));
    return true;
  });
  return kept;
}

}  // namespace memtrack::analysis
