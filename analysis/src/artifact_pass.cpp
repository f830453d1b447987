#include "memtrack/analysis/artifact_pass.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "memtrack/codec/msgpack_decoder.h"

namespace memtrack::analysis {
namespace {

constexpr std::uint32_t kSkippableMask = 0xFFFFFFF0u, kSkippableBase = 0x184D2A50u;
// A frame without a declared content size (the older single-stream layout) grows its buffer up to this.
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
          return 0;  // RecordingInfo, StreamEnd, Symbols: no position, delivered as soon as read
        }
      },
      r);
}

// Decompresses one whole zstd frame into `out` (reused between frames).
codec::Status decompress(ZSTD_DCtx* dctx, std::span<const std::byte> frame, const std::string& where,
                         std::vector<std::byte>& out) {
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return {codec::Errc::bad_zstd, where + ": bad frame header"};
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  out.resize(declared != ZSTD_CONTENTSIZE_UNKNOWN && declared <= kMaxFrameBytes ? declared : std::size_t{1} << 20);
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::size_t produced = 0;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= kMaxFrameBytes) return {codec::Errc::too_large, where + ": frame content larger than 4 GiB"};
      out.resize(std::max<std::size_t>(out.size() * 2, 4096));
    }
    ZSTD_outBuffer o{out.data(), out.size(), produced};
    const std::size_t r = ZSTD_decompressStream(dctx, &o, &in);
    produced = o.pos;
    if (ZSTD_isError(r)) return {codec::Errc::bad_zstd, where + ": corrupt zstd data (" + ZSTD_getErrorName(r) + ")"};
    if (r == 0) break;
    if (in.pos == in.size && o.pos < o.size) return {codec::Errc::truncated, where + ": input ends inside the frame"};
  }
  out.resize(produced);
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && produced != declared)
    return {codec::Errc::bad_zstd, where + ": frame content is " + std::to_string(produced) +
                                       " bytes but its header declares " + std::to_string(declared)};
  return {};
}

struct DCtx {
  ZSTD_DCtx* p = ZSTD_createDCtx();
  DCtx() { ZSTD_DCtx_setParameter(p, ZSTD_d_windowLogMax, 27); }
  ~DCtx() { ZSTD_freeDCtx(p); }
  DCtx(const DCtx&) = delete;
  DCtx& operator=(const DCtx&) = delete;
};

}  // namespace

codec::Status read_artifact(std::span<const std::byte> file, const std::string& name,
                            std::span<ArtifactConsumer* const> consumers, PassSummary& summary,
                            const PassProgressFn& progress) {
  summary = {};
  std::vector<codec::Event> events;  // the last data frame's, held until the context frames after it are read
  std::vector<codec::ContextRecord> records;
  std::uint64_t first_event = 0;  // index of events[0]
  std::vector<std::byte> content;
  DCtx dctx;

  const auto record_to_all = [&](const codec::ContextRecord& r) {
    for (ArtifactConsumer* c : consumers) c->add_context(r);
  };
  // Delivers the held frame's events, each after every record positioned at or before it; records positioned
  // later wait (for the next frame, or the end when `all`).
  const auto deliver = [&](bool all) {
    std::stable_sort(records.begin(), records.end(),
                     [](const auto& a, const auto& b) { return position_of(a) < position_of(b); });
    std::size_t r = 0, e = 0;
    while (e < events.size()) {
      while (r < records.size() && position_of(records[r]) <= first_event + e) record_to_all(records[r++]);
      std::size_t run = e + 1;  // the events up to the next record's position go in one call
      const std::uint64_t next = r < records.size() ? position_of(records[r]) : UINT64_MAX;
      while (run < events.size() && first_event + run < next) ++run;
      for (ArtifactConsumer* c : consumers) c->add(std::span<const codec::Event>(events.data() + e, run - e));
      e = run;
    }
    if (all)
      while (r < records.size()) record_to_all(records[r++]);
    records.erase(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(r));
    first_event += events.size();
    events.clear();
  };
  const auto fail = [&](codec::Status s) {
    deliver(true);
    return s;
  };

  std::uint64_t frame = 0;
  std::size_t pos = 0;
  while (pos < file.size()) {
    const std::string where = name + ": frame " + std::to_string(frame) + " at byte " + std::to_string(pos);
    if (file.size() - pos < 8) return fail({codec::Errc::truncated, where + ": input ends inside a frame header"});
    const std::uint32_t magic = load_le32(file.data() + pos);
    if ((magic & kSkippableMask) == kSkippableBase) {
      const std::uint64_t size = 8ull + load_le32(file.data() + pos + 4);
      if (size > file.size() - pos)
        return fail({codec::Errc::truncated, where + ": input ends inside a skippable frame"});
      const auto bytes = file.subspan(pos, static_cast<std::size_t>(size));
      if (codec::is_context_frame(bytes)) {
        const codec::Status s = codec::decode_context_frame(bytes, pos, records);
        if (!s) return fail({s.code(), name + ": " + s.message()});
        ++summary.context_frames;
      }
      pos += static_cast<std::size_t>(size);
      summary.compressed_bytes = pos;
      continue;
    }
    if (magic != ZSTD_MAGICNUMBER) return fail({codec::Errc::bad_zstd, where + ": not a zstd frame"});
    const std::size_t size = ZSTD_findFrameCompressedSize(file.data() + pos, file.size() - pos);
    if (ZSTD_isError(size)) return fail({codec::Errc::truncated, where + ": " + ZSTD_getErrorName(size)});
    deliver(false);
    if (const codec::Status s = decompress(dctx.p, file.subspan(pos, size), where, content); !s) return fail(s);
    std::string error;
    for (std::size_t off = 0; off < content.size();) {
      codec::Event e;
      const std::size_t start = off;
      const codec::ParseResult r = codec::parse_event(content.data(), content.size(), off, e, error);
      if (r != codec::ParseResult::ok)
        return fail({codec::Errc::bad_msgpack,
                     where + ": event at byte " + std::to_string(start) +
                         " of the frame's content: " + (r == codec::ParseResult::error ? error : "truncated")});
      events.push_back(e);
    }
    pos += size;
    ++frame;
    ++summary.data_frames;
    summary.compressed_bytes = pos;
    summary.decompressed_bytes += content.size();
    summary.events += events.size();
    if (progress) progress(pos, summary.events);
  }
  deliver(true);
  return {};
}

}  // namespace memtrack::analysis
