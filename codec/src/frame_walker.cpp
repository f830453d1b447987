#include "memtrack/codec/frame_walker.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "memtrack/codec/compact.h"
#include "memtrack/codec/context.h"  // the skippable frame magics, context frame sizes
#include "memtrack/codec/msgpack_decoder.h"
#include "zstd_internal.h"  // ZSTD_getFrameHeader: the content size, and a truncated header told from a bad one

namespace memtrack::codec {
namespace {

constexpr std::size_t kMsgpackChunk = 256u << 10;

}  // namespace

struct FrameWalker::Impl {
  std::string name;
  DecoderLimits limits;
  WalkOptions options;
  Status status;
  ZSTD_DCtx* dctx = nullptr;

  InputWindow in;  // the compressed input

  // Decompressed content not parsed yet: mp[0, mp_end). A streamed frame decompresses into it in steps; a
  // buffered one whole (read_header sizes it), so mp keeps the size of the largest buffered frame.
  std::vector<std::byte> mp;
  std::size_t mp_end = 0;
  std::uint64_t content_pos = 0;  // the offset of mp[0] in the current frame's content

  CompactFrameDecoder compact;
  // mp_end when the current frame's header was read: an unfinished event carried over from the frame before
  // (older writers); a frame that continues one is msgpack whatever its first bytes.
  std::size_t carried = 0;
  std::vector<Event> events;  // the last events item's; cleared when the next one is parsed
  ForeignEvents foreign;      // the foreign events among them, cleared with them
  FrameStacks stacks;         // a compact frame's stacks (version 5), cleared with them
  bool events_out = false;    // `events` went out as an item

  std::vector<std::byte> skippable;  // a held context frame's bytes
  std::uint32_t skippable_magic = 0;
  std::uint64_t skippable_size = 0;

  bool in_frame = false, header_read = false, buffered = false, done = false, frame_done = false;
  // The current frame's declared content size (ZSTD_CONTENTSIZE_UNKNOWN if none) and what it produced: zstd
  // does not compare them when the declared size is 4 GiB or more, so the walker does, for every frame.
  std::uint64_t declared = 0, produced = 0;
  std::uint64_t frame_index = 0;   // the current or next data frame
  std::uint64_t frame_offset = 0;  // the current frame's first byte
  std::uint64_t frame_compressed = 0;
  std::uint64_t data_frames = 0, skippable_frames = 0;
  std::uint64_t fail_offset = 0;  // where the last error was reported
  bool failed_in_frame = false;   // the error was inside a data frame (not garbage between frames)
  bool read_failed = false;

  Impl(ByteSource& s, std::string n, DecoderLimits l, WalkOptions o)
      : name(std::move(n)), limits(l), options(o), in(s) {
    mp.resize(std::max(kMsgpackChunk, 2 * limits.max_event_bytes));
    dctx = ZSTD_createDCtx();
    if (dctx == nullptr) throw std::runtime_error("ZSTD_createDCtx failed");
    // A frame header decides no allocation beyond the limits: the window is capped, and a declared content
    // size chooses buffering (sizing mp only up to max_buffered_frame_bytes) and is checked against what
    // the frame produced.
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, limits.window_log_max);
  }
  ~Impl() { ZSTD_freeDCtx(dctx); }

  Item fail(Errc code, std::uint64_t at, const std::string& what) {
    fail_offset = at;
    failed_in_frame = in_frame;
    status = {code, name + ": frame " + std::to_string(frame_index) + " at byte " + std::to_string(at) + ": " + what};
    done = true;
    return Item::end;
  }

  // Reads more input, keeping unread bytes. False at the end of input or on a read error (status set).
  bool read_more() {
    if (read_failed) return false;
    const std::ptrdiff_t n = in.fill();
    if (n < 0) {
      read_failed = true;
      fail(Errc::io, in.base + in.end, std::string("read failed: ") + std::strerror(static_cast<int>(-n)));
      return false;
    }
    return n > 0;
  }

  bool ensure(std::size_t n) {  // n <= kInputChunk
    while (in.available() < n)
      if (!read_more()) return false;
    return true;
  }

  // Parses every whole event of mp into `events`, keeping an unfinished one at the front.
  bool parse() {
    std::string error;
    std::size_t pos = 0;
    bool ok = true;
    while (pos < mp_end) {
      Event e;
      const std::size_t start = pos;
      std::string_view type;
      const ParseResult r = parse_event(mp.data(), mp_end, pos, e, error, &type);
      if (r == ParseResult::ok) {
        events.push_back(e);
        continue;
      }
      if (r == ParseResult::foreign) {
        foreign.add(events.size(), e, std::span(mp).subspan(start, pos - start), type);
        continue;
      }
      const std::uint64_t at = content_pos + start;
      if (r == ParseResult::error) {
        fail(Errc::bad_msgpack, frame_offset,
             "event at byte " + std::to_string(at) + " of the frame's content: " + error);
        ok = false;
      } else if (mp_end - start >= limits.max_event_bytes) {
        fail(Errc::too_large, frame_offset,
             "event at byte " + std::to_string(at) + " of the frame's content is larger than " +
                 std::to_string(limits.max_event_bytes) + " bytes");
        ok = false;
      }
      pos = start;
      break;  // an error, or an event that needs more bytes
    }
    std::memmove(mp.data(), mp.data() + pos, mp_end - pos);
    mp_end -= pos;
    content_pos += pos;
    return ok;
  }

  Item begin() {
    if (!ensure(4)) {
      if (done) return Item::end;
      if (in.available() != 0) return fail(Errc::truncated, in.offset(), "input ends inside a frame header");
      if (mp_end != 0)
        return fail(Errc::truncated, in.offset(), "input ends inside an event (" + std::to_string(mp_end) + " bytes)");
      if (data_frames == 0 && skippable_frames == 0) return fail(Errc::truncated, 0, "empty input: no zstd frame");
      done = true;
      return Item::end;
    }
    const std::uint32_t magic = load_le32(in.unread());
    if (is_skippable_magic(magic)) return skip(magic);
    if (magic != ZSTD_MAGICNUMBER) {
      return fail(Errc::bad_zstd, in.offset(), "not a zstd frame (magic " + hex32(magic) + ")");
    }
    // From here on a failure is inside this frame (for the salvage's frame count).
    in_frame = true;
    header_read = false;
    frame_offset = in.offset();
    return Item::frame_begin;
  }

  Item skip(std::uint32_t magic) {
    const std::uint64_t start = in.offset();
    frame_offset = start;
    if (!ensure(kSkippableHeaderBytes)) {
      if (done) return Item::end;
      return fail(Errc::truncated, start, "input ends inside a skippable frame header");
    }
    const std::uint64_t size = kSkippableHeaderBytes + load_le32(in.unread() + 4);
    const bool hold = options.hold_context && magic == kContextFrameMagic;
    // A held context frame is never larger than its largest valid payload can take.
    if (hold && size > kContextHeaderBytes + ZSTD_compressBound(kMaxContextPayloadBytes)) {
      return fail(Errc::too_large, start,
                  "a context frame of " + std::to_string(size) + " bytes, more than its payload can be");
    }
    skippable.clear();
    for (std::uint64_t left = size; left > 0;) {
      if (in.available() == 0 && !read_more()) {
        if (done) return Item::end;
        return fail(Errc::truncated, start, "input ends inside a skippable frame");
      }
      const auto step = static_cast<std::size_t>(std::min<std::uint64_t>(left, in.available()));
      if (hold) skippable.insert(skippable.end(), in.unread(), in.unread() + step);
      in.pos += step;
      left -= step;
    }
    ++skippable_frames;
    skippable_magic = magic;
    skippable_size = size;
    return Item::skippable;
  }

  bool read_header() {
    ensure(ZSTD_FRAMEHEADERSIZE_MAX);
    if (done) return false;
    ZSTD_frameHeader header;
    const std::size_t r = ZSTD_getFrameHeader(&header, in.unread(), in.available());
    // A window above 2^ZSTD_WINDOWLOG_MAX, which zstd never decodes, fails here as a bad header (bad_zstd);
    // a window zstd allows but above window_log_max fails in decompress() as too_large.
    if (ZSTD_isError(r)) {
      fail(Errc::bad_zstd, in.offset(), std::string("bad frame header: ") + ZSTD_getErrorName(r));
      return false;
    }
    if (r > 0) {
      fail(Errc::truncated, in.offset(), "input ends inside a frame header");
      return false;
    }
    declared = header.frameContentSize;
    produced = 0;
    carried = mp_end;
    content_pos = 0;
    buffered = declared != ZSTD_CONTENTSIZE_UNKNOWN && declared <= limits.max_buffered_frame_bytes;
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    if (buffered) {
      // zstd writes a buffered frame straight into mp, after the unfinished event before it, and then keeps
      // no window of its own: mp holds the whole content (one byte more, so that a frame producing more
      // than it declares is reported as such), at most max_buffered_frame_bytes, as zstd's window would.
      const std::size_t need = mp_end + static_cast<std::size_t>(declared) + 1;
      if (mp.size() < need) mp.resize(need);
    }
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_stableOutBuffer, buffered ? 1 : 0);
    header_read = true;
    return true;
  }

  // One ZSTD_decompressStream call into mp's free room. Returns zstd's hint (0: the frame is complete,
  // its checksum verified), or SIZE_MAX after an error (status set).
  std::size_t decompress() {
    if (in.available() == 0 && !read_more()) {
      if (!done) fail(Errc::truncated, frame_offset, "input ends inside the frame");
      return SIZE_MAX;
    }
    ZSTD_inBuffer input{in.bytes.data(), in.end, in.pos};
    ZSTD_outBuffer output{mp.data(), mp.size(), mp_end};
    const std::size_t r = ZSTD_decompressStream(dctx, &output, &input);
    in.pos = input.pos;
    produced += output.pos - mp_end;
    mp_end = output.pos;
    if (ZSTD_isError(r)) {
      // A window above our limit (but one zstd allows) is a limit, too_large; everything else is bad data.
      if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
        fail(Errc::too_large, frame_offset,
             "window larger than the 2^" + std::to_string(limits.window_log_max) + "-byte limit");
      } else {
        fail(Errc::bad_zstd, frame_offset, std::string("corrupt zstd data (") + ZSTD_getErrorName(r) + ")");
      }
      return SIZE_MAX;
    }
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && (produced > declared || (r == 0 && produced != declared))) {
      fail(Errc::bad_zstd, frame_offset,
           "frame content is " + std::string(produced > declared ? "more than " : "") + std::to_string(produced) +
               " bytes but its header declares " + std::to_string(declared));
      return SIZE_MAX;
    }
    return r;
  }

  void complete_frame() {
    in_frame = false;
    frame_done = true;
    frame_compressed = in.offset() - frame_offset;
    ++data_frames;
    ++frame_index;
  }

  Item frame_step() {
    if (events_out) {
      events.clear();
      foreign.clear();
      stacks.present = false;
      stacks.ids.clear();
      events_out = false;
    }
    frame_done = false;
    if (!header_read && !read_header()) return Item::end;
    if (buffered) {
      // The whole frame first, its size and checksum verified, then its events.
      for (;;) {
        const std::size_t r = decompress();
        if (r == SIZE_MAX) return Item::end;
        if (r == 0) break;
      }
      const std::span<const std::byte> content{mp.data(), mp_end};
      if (carried == 0 && is_compact_content(content)) {
        const Status s = compact.decode(content, events, &stacks);
        mp_end = 0;
        if (!s.is_ok()) return fail(s.code(), frame_offset, s.message());
      } else if (!parse()) {
        events.clear();
        foreign.clear();
        return Item::end;
      }
      complete_frame();
      events_out = true;
      return Item::events;
    }
    for (;;) {
      const std::size_t r = decompress();
      if (r == SIZE_MAX) break;
      if (carried == 0 && content_pos == 0 && is_compact_content({mp.data(), mp_end})) {
        fail(Errc::bad_compact, frame_offset,
             "a compact frame must declare a content size of at most " +
                 std::to_string(limits.max_buffered_frame_bytes) + " bytes");
        break;
      }
      if (!parse()) break;
      if (r == 0) complete_frame();
      if (r == 0 || events.size() + foreign.size() >= options.piece_events) {
        events_out = true;
        return Item::events;
      }
    }
    // A streamed frame's events before the damage are events zstd produced and the parser accepted.
    if (events.empty() && foreign.empty()) return Item::end;
    events_out = true;
    return Item::events;
  }

  Item next() {
    if (done) return Item::end;
    return in_frame ? frame_step() : begin();
  }

  bool resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at) {
    if (status.is_ok() || read_failed) return false;
    skipped_from = fail_offset;
    // Forget the damaged frame entirely: its events, its partial content, zstd's state.
    events.clear();
    foreign.clear();
    events_out = false;
    mp_end = 0;
    content_pos = 0;
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    if (failed_in_frame) ++frame_index;
    in_frame = false;
    status = Status::ok();
    done = false;
    const std::uint64_t from = std::max(fail_offset + 1, in.base);
    // Back up into the buffered bytes of the damaged frame when they are still there.
    in.pos = static_cast<std::size_t>(std::min<std::uint64_t>(from - in.base, in.end));
    for (;;) {
      while (in.available() >= 4) {
        const std::uint32_t magic = load_le32(in.unread());
        if (magic == ZSTD_MAGICNUMBER || is_skippable_magic(magic)) {
          resumed_at = in.offset();
          return true;
        }
        ++in.pos;
      }
      if (!read_more()) break;
    }
    // No frame start before the end of input (or a read error, reported through status()).
    in.pos = in.end;
    resumed_at = in.offset();
    if (status.is_ok()) done = true;
    return false;
  }
};

FrameWalker::FrameWalker(ByteSource& source, std::string name, DecoderLimits limits, WalkOptions options)
    : impl_(std::make_unique<Impl>(source, std::move(name), limits, options)) {}
FrameWalker::~FrameWalker() = default;

FrameWalker::Item FrameWalker::next() { return impl_->next(); }
std::span<const Event> FrameWalker::events() const { return impl_->events; }
const ForeignEvents& FrameWalker::foreign() const { return impl_->foreign; }
const FrameStacks& FrameWalker::stacks() const { return impl_->stacks; }
bool FrameWalker::frame_done() const { return impl_->frame_done; }
std::uint64_t FrameWalker::frame_index() const { return impl_->frame_index; }
std::uint64_t FrameWalker::frame_offset() const { return impl_->frame_offset; }
std::uint64_t FrameWalker::frame_compressed_bytes() const { return impl_->frame_compressed; }
std::uint64_t FrameWalker::frame_content_bytes() const { return impl_->produced; }
std::uint32_t FrameWalker::skippable_magic() const { return impl_->skippable_magic; }
std::span<const std::byte> FrameWalker::skippable_bytes() const { return impl_->skippable; }
std::uint64_t FrameWalker::skippable_size() const { return impl_->skippable_size; }
std::uint64_t FrameWalker::data_frames() const { return impl_->data_frames; }
std::uint64_t FrameWalker::skippable_frames() const { return impl_->skippable_frames; }
std::uint64_t FrameWalker::offset() const { return impl_->in.offset(); }
std::uint64_t FrameWalker::bytes_read() const { return impl_->in.base + impl_->in.end; }
const Status& FrameWalker::status() const { return impl_->status; }

bool FrameWalker::resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at) {
  return impl_->resync(skipped_from, resumed_at);
}

}  // namespace memtrack::codec
