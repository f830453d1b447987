#include "memtrack/codec/artifact_decoder.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "memtrack/codec/context.h"  // the skippable frame magics
#include "memtrack/codec/msgpack_decoder.h"
#include "zstd_internal.h"  // ZSTD_getFrameHeader: the content size, and a truncated header told from a bad one

namespace memtrack::codec {
namespace {

constexpr std::size_t kMsgpackChunk = 256u << 10;

}  // namespace

struct ArtifactDecoder::Impl {
  std::string name;
  DecoderLimits limits;
  Status status;
  DecoderProgress progress;

  ZSTD_DCtx* dctx = nullptr;

  InputWindow in;  // the compressed input

  // Decompressed msgpack not yet parsed: mp[mp_pos, mp_end). An event may straddle frames (older writers).
  std::vector<std::byte> mp;
  std::size_t mp_pos = 0, mp_end = 0;
  std::uint64_t frame_content_pos = 0;  // decompressed offset of mp[0] within the current frame

  // Parsed events. events[ready_pos, released) are released to the caller; events[released, end) are held
  // until their frame is verified (buffered mode). One vector, not a pending and a ready one: new events are
  // only parsed once the caller has taken every released one, and a second vector kept the previous frame's
  // capacity alive beside the growing one (fuzzing found 2.9 KB of input reaching 73 MB of heap that way).
  std::vector<Event> events;
  std::size_t ready_pos = 0, released = 0;

  bool in_frame = false, buffered = false, done = false;
  // The current frame's declared content size (ZSTD_CONTENTSIZE_UNKNOWN if none) and what it produced.
  // zstd itself does not compare them when the declared size is 4 GiB or more (found by the decoder
  // limits tests), so the decoder does, for every frame.
  std::uint64_t declared_content_size = 0, frame_content_bytes = 0;
  std::uint64_t frame_index = 0;   // index of the current or next data frame
  std::uint64_t frame_offset = 0;  // file offset of the current frame's first byte
  std::uint64_t fail_offset = 0;   // where the last error was reported
  bool failed_in_frame = false;    // the error was inside a data frame (not garbage between frames)

  Impl(ByteSource& s, std::string n, DecoderLimits l) : name(std::move(n)), limits(l), in(s) {
    mp.resize(std::max(kMsgpackChunk, 2 * limits.max_event_bytes));
    dctx = ZSTD_createDCtx();
    if (dctx == nullptr) throw std::runtime_error("ZSTD_createDCtx failed");
    // Never let a frame header decide how much we allocate: the window is capped, and a frame's declared
    // content size only chooses buffered mode and is checked against what the frame produced; it never
    // sizes a buffer.
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, limits.window_log_max);
  }
  ~Impl() { ZSTD_freeDCtx(dctx); }

  void fail(Errc code, std::uint64_t at, const std::string& what) {
    fail_offset = at;
    failed_in_frame = in_frame;
    status = {code, name + ": frame " + std::to_string(frame_index) + " at byte " + std::to_string(at) + ": " + what};
    done = true;
  }

  // Reads more input, keeping unread bytes. Returns false at end of input or on error (status set).
  bool read_more() {
    const std::ptrdiff_t n = in.fill();
    if (n < 0) {
      fail(Errc::io, in.offset(), std::string("read failed: ") + std::strerror(static_cast<int>(-n)));
      return false;
    }
    if (n == 0) return false;
    progress.compressed_bytes = in.base + in.end;
    return true;
  }

  bool ensure(std::size_t n) {
    while (in.available() < n) {
      if (!read_more()) return in.available() >= n;
    }
    return true;
  }

  void release() { released = events.size(); }

  // Called only when every released event has been taken: drops them, keeping the capacity for reuse.
  void drop_taken() {
    events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(released));
    ready_pos = released = 0;
  }

  // Parses every complete event in mp into `events`, after the released ones.
  bool parse_events() {
    std::string error;
    while (mp_pos < mp_end) {
      Event e;
      const std::size_t start = mp_pos;
      const ParseResult r = parse_event(mp.data(), mp_end, mp_pos, e, error);
      if (r == ParseResult::ok) {
        events.push_back(e);
        continue;
      }
      const std::uint64_t at = frame_content_pos + start;
      if (r == ParseResult::error) {
        fail(Errc::bad_msgpack, frame_offset,
             "event at byte " + std::to_string(at) + " of the frame's content: " + error);
        return false;
      }
      if (mp_end - start >= limits.max_event_bytes) {
        fail(Errc::too_large, frame_offset,
             "event at byte " + std::to_string(at) + " of the frame's content is larger than " +
                 std::to_string(limits.max_event_bytes) + " bytes");
        return false;
      }
      break;  // need more bytes
    }
    // Keep the unparsed tail at the front so the next decompression has room.
    if (mp_pos > 0) {
      std::memmove(mp.data(), mp.data() + mp_pos, mp_end - mp_pos);
      frame_content_pos += mp_pos;
      mp_end -= mp_pos;
      mp_pos = 0;
    }
    return true;
  }

  void start_frame() {
    if (!ensure(4)) {
      if (done) return;
      if (in.available() == 0) {
        done = true;
        if (mp_end > mp_pos) {
          fail(Errc::truncated, in.offset(),
               "input ends inside an event (" + std::to_string(mp_end - mp_pos) + " bytes)");
        } else if (progress.frames == 0 && progress.skippable_frames == 0) {
          fail(Errc::truncated, 0, "empty input: no zstd frame");
        }
        return;
      }
      fail(Errc::truncated, in.offset(), "input ends inside a frame header");
      return;
    }
    std::uint32_t magic;
    std::memcpy(&magic, in.unread(), 4);
    if (is_skippable_magic(magic)) {
      skip_skippable_frame();
      return;
    }
    if (magic != ZSTD_MAGICNUMBER) {
      fail(Errc::bad_zstd, in.offset(), "not a zstd frame (magic " + hex32(magic) + ")");
      return;
    }
    // From here on a failure is inside this frame (for the salvage's frame count).
    in_frame = true;
    frame_offset = in.offset();
    ensure(ZSTD_FRAMEHEADERSIZE_MAX);
    if (done) return;
    ZSTD_frameHeader header;
    const size_t r = ZSTD_getFrameHeader(&header, in.unread(), in.available());
    // A window above 2^ZSTD_WINDOWLOG_MAX, which zstd never decodes, fails here as a bad header
    // (bad_zstd); a window zstd allows but above window_log_max fails in decompress_step as too_large.
    // (FrameDecoder leaves the header to ZSTD_decompressStream and reports both as too_large.)
    if (ZSTD_isError(r)) {
      fail(Errc::bad_zstd, in.offset(), std::string("bad frame header: ") + ZSTD_getErrorName(r));
      return;
    }
    if (r > 0) {
      fail(Errc::truncated, in.offset(), "input ends inside a frame header");
      return;
    }
    frame_content_pos = 0;
    declared_content_size = header.frameContentSize;
    frame_content_bytes = 0;
    // The declared content size alone decides buffering (the checksum, when the frame has one, is verified
    // by zstd on the frame's last block either way).
    buffered = header.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN &&
               header.frameContentSize <= limits.max_buffered_frame_bytes;
  }

  // See ArtifactDecoder::resync.
  bool resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at) {
    if (status.is_ok()) return false;
    skipped_from = fail_offset;
    // Forget the damaged frame entirely: its unverified events, its partial msgpack, zstd's state.
    events.resize(released);  // keep only what was released; the damaged frame's events go
    mp_pos = mp_end = 0;
    frame_content_pos = 0;
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
        std::uint32_t magic;
        std::memcpy(&magic, in.unread(), 4);
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

  void skip_skippable_frame() {
    if (!ensure(8)) {
      if (!done) fail(Errc::truncated, in.offset(), "input ends inside a skippable frame header");
      return;
    }
    std::uint32_t size;
    std::memcpy(&size, in.unread() + 4, 4);
    const std::uint64_t start = in.offset();
    std::uint64_t left = 8ull + size;
    while (left > 0) {
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(left, in.available()));
      in.pos += take;
      left -= take;
      if (left > 0 && !read_more()) {
        if (!done) fail(Errc::truncated, start, "input ends inside a skippable frame");
        return;
      }
    }
    ++progress.skippable_frames;
  }

  void decompress_step() {
    if (in.available() == 0 && !read_more()) {
      if (!done) fail(Errc::truncated, frame_offset, "input ends inside the frame");
      return;
    }
    ZSTD_inBuffer input{in.bytes.data(), in.end, in.pos};
    ZSTD_outBuffer output{mp.data(), mp.size(), mp_end};
    const size_t r = ZSTD_decompressStream(dctx, &output, &input);
    in.pos = input.pos;
    progress.decompressed_bytes += output.pos - mp_end;
    frame_content_bytes += output.pos - mp_end;
    mp_end = output.pos;
    if (ZSTD_isError(r)) {
      // A window above our limit (but one zstd allows) is a limit, too_large; everything else is bad data.
      const std::string reason =
          ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge
              ? "window larger than the 2^" + std::to_string(limits.window_log_max) + "-byte limit"
              : std::string("corrupt zstd data (") + ZSTD_getErrorName(r) + ")";
      fail(ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge ? Errc::too_large : Errc::bad_zstd,
           frame_offset, reason);
      return;
    }
    if (r == 0 && declared_content_size != ZSTD_CONTENTSIZE_UNKNOWN && frame_content_bytes != declared_content_size) {
      fail(Errc::bad_zstd, frame_offset,
           "frame content is " + std::to_string(frame_content_bytes) + " bytes but its header declares " +
               std::to_string(declared_content_size));
      return;
    }
    if (!parse_events()) return;
    if (r == 0) {  // frame complete, checksum (if any) verified by zstd
      in_frame = false;
      ++progress.frames;
      ++frame_index;
      release();
    } else if (!buffered) {
      release();
    }
  }
};

ArtifactDecoder::ArtifactDecoder(ByteSource& source, std::string name, DecoderLimits limits)
    : impl_(std::make_unique<Impl>(source, std::move(name), limits)) {}

ArtifactDecoder::~ArtifactDecoder() = default;

std::size_t ArtifactDecoder::next(std::span<Event> out) {
  Impl& d = *impl_;
  std::size_t filled = 0;
  while (filled < out.size()) {
    if (d.ready_pos < d.released) {
      const std::size_t n = std::min(out.size() - filled, d.released - d.ready_pos);
      std::memcpy(out.data() + filled, d.events.data() + d.ready_pos, n * sizeof(Event));
      d.ready_pos += n;
      filled += n;
      d.progress.events += n;
      continue;
    }
    if (d.released > 0) d.drop_taken();
    if (d.done) break;
    if (d.in_frame) {
      d.decompress_step();
    } else {
      d.start_frame();
    }
  }
  return filled;
}

const Status& ArtifactDecoder::status() const { return impl_->status; }
const DecoderProgress& ArtifactDecoder::progress() const { return impl_->progress; }

bool ArtifactDecoder::resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at) {
  return impl_->resync(skipped_from, resumed_at);
}

}  // namespace memtrack::codec
