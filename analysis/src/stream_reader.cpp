// StreamFrameReader (frame_reader.h): an artifact read once, in order, from any byte source, data frames and
// context frames together. codec::ArtifactDecoder yields only events (it steps over every skippable frame);
// this reader keeps the frame structure so that a data frame goes out with the context frames after it.
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrack/analysis/frame_reader.h"
#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/byte_source.h"  // InputWindow
#include "memtrack/codec/context.h"      // the skippable frame magics, hex32
#include "memtrack/codec/msgpack_decoder.h"

namespace memtrack::analysis {
namespace {

constexpr std::size_t kFrameHeaderMax = 18;  // ZSTD_FRAMEHEADERSIZE_MAX (static-only in zstd.h)
constexpr std::size_t kPieceEvents = 65536;  // a streamed frame goes out in pieces of at most this many events

}  // namespace

struct StreamFrameReader::Impl {
  std::string name;
  codec::DecoderLimits limits;  // the sequential decoder's limits, so both refuse the same input
  StreamProgress progress;
  ZSTD_DCtx* dctx = nullptr;

  codec::InputWindow in;
  codec::Status read_status;  // a read error: no more reads after it

  // Decompressed msgpack not parsed yet, mp[0, mp_end): an event may straddle frames (older writers).
  std::vector<std::byte> mp;
  std::size_t mp_end = 0;
  std::vector<codec::Event> events;           // the held frame's (or the streamed frame's current piece)
  std::vector<codec::ContextRecord> records;  // read since the held frame
  std::vector<std::byte> skippable;           // one context frame's bytes
  DecodedFrame held;                          // what is known of the held frame
  bool holding = false;
  std::uint64_t frame_index = 0;  // the current or next data frame

  Impl(codec::ByteSource& s, std::string n) : name(std::move(n)), in(s) {
    dctx = ZSTD_createDCtx();
    if (dctx == nullptr) throw std::runtime_error("ZSTD_createDCtx failed");
    // The window is capped; a frame's declared content size chooses buffering and is checked against what
    // the frame produced, and sizes a buffer only up to max_buffered_frame_bytes.
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, limits.window_log_max);
    mp.resize(std::max<std::size_t>(256u << 10, 2 * limits.max_event_bytes));
  }
  ~Impl() { ZSTD_freeDCtx(dctx); }

  codec::Status fail(codec::Errc code, std::uint64_t at, const std::string& what) const {
    return {code, name + ": frame " + std::to_string(frame_index) + " at byte " + std::to_string(at) + ": " + what};
  }

  // One more read, keeping the unread bytes. False at the end of input or on a read error (read_status).
  bool refill() {
    if (!read_status.is_ok()) return false;
    const std::ptrdiff_t n = in.fill();
    if (n < 0) {
      read_status = {codec::Errc::io, name + ": read failed at byte " + std::to_string(in.base + in.end) + ": " +
                                          std::strerror(static_cast<int>(-n))};
      return false;
    }
    return n > 0;
  }

  bool ensure(std::size_t n) {  // n <= codec::kInputChunk
    while (in.available() < n)
      if (!refill()) return false;
    return true;
  }

  // Consumes `n` bytes, appending them to `out` when given. False if the input ends first.
  bool take(std::uint64_t n, std::vector<std::byte>* out) {
    while (n > 0) {
      if (in.available() == 0 && !refill()) return false;
      const auto step = static_cast<std::size_t>(std::min<std::uint64_t>(n, in.available()));
      if (out != nullptr) out->insert(out->end(), in.unread(), in.unread() + step);
      in.pos += step;
      n -= step;
    }
    return true;
  }

  codec::Status deliver(const IndexedFrameReader::InOrderFn& in_order) {
    DecodedFrame f = held;
    f.events = events;
    f.context = records;
    const codec::Status s = in_order(f);
    progress.events += events.size();
    events.clear();
    records.clear();
    held = {};
    holding = false;
    return s;
  }

  codec::Status skippable_frame(std::uint32_t magic) {
    const std::uint64_t start = in.offset();
    if (!ensure(codec::kSkippableHeaderBytes)) {
      if (!read_status.is_ok()) return read_status;
      return fail(codec::Errc::truncated, start, "input ends inside a skippable frame header");
    }
    const std::uint64_t size = codec::kSkippableHeaderBytes + codec::load_le32(in.unread() + 4);
    const bool context = magic == codec::kContextFrameMagic;
    // A context frame is held whole to be decoded: never more than its largest valid payload can take.
    const std::uint64_t largest = codec::kContextHeaderBytes + ZSTD_compressBound(codec::kMaxContextPayloadBytes);
    if (context && size > largest)
      return fail(codec::Errc::too_large, start,
                  "a context frame of " + std::to_string(size) + " bytes, more than its payload can be");
    skippable.clear();
    if (!take(size, context ? &skippable : nullptr)) {
      if (!read_status.is_ok()) return read_status;
      return fail(codec::Errc::truncated, start, "input ends inside a skippable frame");
    }
    ++progress.skippable_frames;
    progress.compressed_bytes = in.offset();
    if (!context) return {};
    ++progress.context_frames;
    ++held.context_frames;
    held.context_bytes += size;
    const codec::Status s = codec::decode_context_frame(skippable, start, records);
    if (!s.is_ok()) return {s.code(), name + ": " + s.message()};
    return {};
  }

  // Parses every whole event of mp into `events`, keeping an unfinished one at the front.
  codec::Status parse(std::uint64_t frame_start, std::uint64_t& content_pos) {
    std::string error;
    std::size_t pos = 0;
    while (pos < mp_end) {
      codec::Event e;
      const std::size_t start = pos;
      const codec::ParseResult r = codec::parse_event(mp.data(), mp_end, pos, e, error);
      if (r == codec::ParseResult::ok) {
        events.push_back(e);
        continue;
      }
      const std::uint64_t at = content_pos + start;
      if (r == codec::ParseResult::error)
        return fail(codec::Errc::bad_msgpack, frame_start,
                    "event at byte " + std::to_string(at) + " of the frame's content: " + error);
      if (mp_end - start >= limits.max_event_bytes)
        return fail(codec::Errc::too_large, frame_start,
                    "event at byte " + std::to_string(at) + " of the frame's content is larger than " +
                        std::to_string(limits.max_event_bytes) + " bytes");
      pos = start;
      break;
    }
    std::memmove(mp.data(), mp.data() + pos, mp_end - pos);
    mp_end -= pos;
    content_pos += pos;
    return {};
  }

  codec::Status data_frame(const IndexedFrameReader::InOrderFn& in_order, bool& consumer_failed) {
    bool buffered = false;
    codec::Status s = decode_frame(in_order, consumer_failed, buffered);
    // A buffered frame's events go out only once it is verified whole; a streamed one's as they come.
    if (!s.is_ok() && buffered) events.clear();
    return s;
  }

  codec::Status decode_frame(const IndexedFrameReader::InOrderFn& in_order, bool& consumer_failed, bool& buffered) {
    const std::uint64_t start = in.offset();
    ensure(kFrameHeaderMax);
    if (!read_status.is_ok()) return read_status;
    const unsigned long long declared = ZSTD_getFrameContentSize(in.unread(), in.available());
    if (declared == ZSTD_CONTENTSIZE_ERROR) {
      if (in.eof && in.available() < kFrameHeaderMax)
        return fail(codec::Errc::truncated, start, "input ends inside a frame header");
      return fail(codec::Errc::bad_zstd, start, "bad frame header");
    }
    // Our writer's frames are verified whole before their events go out; others are streamed.
    // (Held back in `events`, not in mp: parse() empties mp after every step, so mp keeps its size.)
    buffered = declared != ZSTD_CONTENTSIZE_UNKNOWN && declared <= limits.max_buffered_frame_bytes;
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    std::uint64_t produced = 0, content_pos = 0;
    for (;;) {
      if (in.available() == 0 && !refill()) {
        if (!read_status.is_ok()) return read_status;
        return fail(codec::Errc::truncated, start, "input ends inside the frame");
      }
      ZSTD_inBuffer input{in.bytes.data(), in.end, in.pos};
      ZSTD_outBuffer output{mp.data(), mp.size(), mp_end};
      const std::size_t r = ZSTD_decompressStream(dctx, &output, &input);
      in.pos = input.pos;
      produced += output.pos - mp_end;
      mp_end = output.pos;
      if (ZSTD_isError(r)) {
        if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
          return fail(codec::Errc::too_large, start,
                      "window larger than the 2^" + std::to_string(limits.window_log_max) + "-byte limit");
        return fail(codec::Errc::bad_zstd, start, std::string("corrupt zstd data (") + ZSTD_getErrorName(r) + ")");
      }
      if (declared != ZSTD_CONTENTSIZE_UNKNOWN && (produced > declared || (r == 0 && produced != declared)))
        return fail(codec::Errc::bad_zstd, start,
                    "frame content is " + std::string(produced > declared ? "more than " : "") +
                        std::to_string(produced) + " bytes but its header declares " + std::to_string(declared));
      if (const codec::Status s = parse(start, content_pos); !s.is_ok()) return s;
      if (!buffered && events.size() >= kPieceEvents) {
        held.index = frame_index;
        const codec::Status s = deliver(in_order);
        if (!s.is_ok()) {
          consumer_failed = true;
          return s;
        }
      }
      if (r == 0) break;  // the frame is complete, its checksum (if any) verified by zstd
    }
    progress.decompressed_bytes += produced;
    progress.compressed_bytes = in.offset();
    ++progress.data_frames;
    held.index = frame_index++;
    held.compressed_bytes = in.offset() - start;
    held.msgpack_bytes = produced;
    holding = true;
    return {};
  }

  codec::Status run(const IndexedFrameReader::InOrderFn& in_order) {
    codec::Status status;
    bool consumer_failed = false;
    for (;;) {
      if (!ensure(4)) {
        if (!read_status.is_ok()) {
          status = read_status;
        } else if (in.available() != 0) {
          status = fail(codec::Errc::truncated, in.offset(), "input ends inside a frame header");
        } else if (mp_end != 0) {
          status = fail(codec::Errc::truncated, in.offset(),
                        "input ends inside an event (" + std::to_string(mp_end) + " bytes)");
        } else if (progress.data_frames == 0 && progress.skippable_frames == 0) {
          status = fail(codec::Errc::truncated, 0, "empty input: no zstd frame");
        }
        break;
      }
      const std::uint32_t magic = codec::load_le32(in.unread());
      if (codec::is_skippable_magic(magic)) {
        status = skippable_frame(magic);
        if (!status.is_ok()) break;
        continue;
      }
      if (magic != ZSTD_MAGICNUMBER) {
        status = fail(codec::Errc::bad_zstd, in.offset(), "not a zstd frame (magic " + codec::hex32(magic) + ")");
        break;
      }
      if (holding) {  // a new data frame: every context frame of the held one has been read
        status = deliver(in_order);
        if (!status.is_ok()) {
          consumer_failed = true;
          break;
        }
      }
      status = data_frame(in_order, consumer_failed);
      if (!status.is_ok()) break;
    }
    // Everything valid before the end or the damage: the held frame (or a streamed frame's last piece) and
    // the records read after it (or, without any data frame, before the end).
    if (!consumer_failed && (holding || !events.empty() || !records.empty())) {
      if (!holding) held.index = frame_index;
      const codec::Status s = deliver(in_order);
      if (status.is_ok()) status = s;
    }
    return status;
  }
};

StreamFrameReader::StreamFrameReader(codec::ByteSource& source, std::string name)
    : impl_(std::make_unique<Impl>(source, std::move(name))) {}
StreamFrameReader::~StreamFrameReader() = default;

codec::Status StreamFrameReader::run(const IndexedFrameReader::InOrderFn& in_order) { return impl_->run(in_order); }
const StreamProgress& StreamFrameReader::progress() const { return impl_->progress; }

}  // namespace memtrack::analysis
