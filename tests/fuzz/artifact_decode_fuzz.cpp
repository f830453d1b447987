// Property: ArtifactDecoder (and the FrameWalker under it) over arbitrary bytes never crashes, hangs or
// allocates without bound (run with -malloc_limit_mb), and what it yields is trustworthy:
// - every event is a valid raw record, and progress().events counts exactly what was yielded;
// - the result does not depend on how many events the caller asks for at a time, nor on the size of the
//   pieces the walker gives a streamed frame in (1 for ArtifactDecoder, 65536 for StreamFrameReader);
// - an error names the frame the decoder stopped in and a byte offset;
// - a clean end consumed the whole input, yielded exactly the events an independent reading finds (zstd's
//   streaming decompressor, then parse_event over the content, or the compact decoder over a frame's content
//   that starts with its magic), and re-encoding the events with our
//   writer then decoding again gives the same events.
#include <zstd.h>

#include <algorithm>
#include <string>

#include "fuzz/fuzz_common.h"
#include "memtrack/codec/compact.h"
#include "memtrack/codec/msgpack_decoder.h"
#include "memtrack/codec/raw_record.h"

namespace {

using memtrack::codec::Event;

// An independent reading of the same bytes, to check that the decoder yields exactly what the input holds:
// zstd's streaming decompressor over the whole input (it passes over skippable frames itself), then
// parse_event over the concatenated content (a compact frame's content, whole, through the compact decoder). Returns
// false if the content is larger than `max_content`.
bool reference_decode(std::span<const std::byte> input, std::size_t max_content, memtrack::fuzz::Decoded& out,
                      std::string& error) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 24);
  std::vector<std::byte> content(64 << 10);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  std::size_t produced = 0;
  std::vector<std::size_t> starts = {0};  // where each frame's content starts (zstd returns 0 at a frame's end)
  bool ok = true;
  for (;;) {
    if (produced == content.size()) {
      if (content.size() >= max_content) {
        ok = false;
        break;
      }
      content.resize(content.size() * 2);
    }
    ZSTD_outBuffer o{content.data(), content.size(), produced};
    const std::size_t r = ZSTD_decompressStream(dctx, &o, &in);
    produced = o.pos;
    if (ZSTD_isError(r)) {
      error = ZSTD_getErrorName(r);
      ok = false;
      break;
    }
    if (r == 0 && starts.back() != produced) starts.push_back(produced);
    if (in.pos == in.size) {
      if (r == 0) break;     // every frame complete and flushed
      if (o.pos < o.size) {  // zstd wants input there is no more of
        error = "input ends inside a frame";
        ok = false;
        break;
      }
    }
  }
  ZSTD_freeDCtx(dctx);
  if (!ok) return false;
  std::size_t offset = 0;
  memtrack::codec::CompactFrameDecoder compact;
  while (offset < produced) {
    // A frame that starts with the compact magic, with no event of the frame before left open, is compact.
    const auto frame = std::lower_bound(starts.begin(), starts.end(), offset);
    if (frame != starts.end() && *frame == offset) {
      const std::size_t end = frame + 1 != starts.end() ? *(frame + 1) : produced;
      const std::span<const std::byte> bytes(content.data() + offset, end - offset);
      if (memtrack::codec::is_compact_content(bytes)) {
        std::vector<Event> events;
        const memtrack::codec::Status s = compact.decode(bytes, events);
        if (!s.is_ok()) {
          error = s.message();
          return false;
        }
        for (const Event& e : events) out.add(e);
        offset = end;
        continue;
      }
    }
    Event e;
    const auto r = memtrack::codec::parse_event(content.data(), produced, offset, e, error);
    if (r == memtrack::codec::ParseResult::foreign) continue;  // not among the events (foreign_event.h)
    if (r != memtrack::codec::ParseResult::ok) {
      if (error.empty()) error = "content ends inside an event";
      return false;
    }
    out.add(e);
  }
  return true;
}

// The decoder's worst case with default limits is ~53 MiB (docs/RELIABILITY.md, "Bounded memory"); the
// harness adds at most ~1.5 MiB of kept events.
constexpr std::int64_t kHeapBound = std::int64_t{64} << 20;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using memtrack::fuzz::decode_all;
  const auto input = memtrack::fuzz::as_bytes(data, size);

  // The block size comes from the input's length, so the input bytes stay a plain artifact.
  memtrack::fuzz::HeapPeak::start();
  const auto d = decode_all(input, 1 + size % 97);
  const std::int64_t peak = memtrack::fuzz::HeapPeak::stop();
  // The decoder's bound (docs/RELIABILITY.md) plus the harness's kept events.
  FUZZ_CHECK(peak < kHeapBound, "decoding %zu bytes peaked at %lld bytes of heap", size, static_cast<long long>(peak));
  if (std::getenv("MEMTRACK_FUZZ_PRINT_PEAK") != nullptr)
    std::fprintf(stderr, "peak heap %lld\n", static_cast<long long>(peak));
  FUZZ_CHECK(d.progress.events == d.count, "progress says %llu events, %llu yielded",
             static_cast<unsigned long long>(d.progress.events), static_cast<unsigned long long>(d.count));
  for (std::size_t i = 0; i < d.events.size(); ++i) {
    const memtrack::codec::Status s = memtrack::codec::validate_record(d.events[i], i);
    FUZZ_CHECK(s.is_ok(), "yielded an invalid event: %s", s.message().c_str());
  }

  const auto other = decode_all(input, 4096);
  FUZZ_CHECK(other.count == d.count && other.hash == d.hash, "events depend on the block size (%llu vs %llu)",
             static_cast<unsigned long long>(other.count), static_cast<unsigned long long>(d.count));
  FUZZ_CHECK(other.status.code() == d.status.code() && other.status.message() == d.status.message(),
             "status depends on the block size: '%s' vs '%s'", other.status.message().c_str(),
             d.status.message().c_str());

  // The walker under both sequential readers, with StreamFrameReader's pieces: the same events, the same end
  // (up to 4 MiB of content, as the reference below: a zip bomb is slow enough decoded twice under ASan).
  if (d.progress.decompressed_bytes <= (4u << 20)) {
    const auto walked = memtrack::fuzz::walk_all(input, 65536);
    FUZZ_CHECK(walked.count == d.count && walked.hash == d.hash,
               "the walker in pieces of 65536 gives %llu events, %llu", static_cast<unsigned long long>(walked.count),
               static_cast<unsigned long long>(d.count));
    FUZZ_CHECK(walked.status.message() == d.status.message() && walked.progress.frames == d.progress.frames &&
                   walked.progress.skippable_frames == d.progress.skippable_frames,
               "the walker in pieces ends with '%s', the decoder with '%s'", walked.status.message().c_str(),
               d.status.message().c_str());
  }

  if (!d.status.is_ok()) {
    const std::string expected = "fuzz.zst: frame " + std::to_string(d.progress.frames) + " at byte ";
    FUZZ_CHECK(d.status.message().rfind(expected, 0) == 0, "error '%s' does not start with '%s'",
               d.status.message().c_str(), expected.c_str());
    return 0;
  }

  FUZZ_CHECK(d.progress.compressed_bytes == size, "clean end after %llu of %zu bytes",
             static_cast<unsigned long long>(d.progress.compressed_bytes), size);

  // What the decoder yielded is what the bytes hold.
  memtrack::fuzz::Decoded reference;
  std::string error;
  if (d.progress.decompressed_bytes <= (4u << 20)) {
    FUZZ_CHECK(reference_decode(input, 4u << 20, reference, error), "decoder ok, reference decode fails: %s",
               error.c_str());
    FUZZ_CHECK(reference.count == d.count && reference.hash == d.hash,
               "decoder yielded %llu events, the reference reading %llu (or different ones)",
               static_cast<unsigned long long>(d.count), static_cast<unsigned long long>(reference.count));
  }

  if (!d.complete()) return 0;  // too many events to keep for the round trip (see kMaxKeptEvents)
  const auto reencoded = memtrack::fuzz::encode_frames(d.events, 1 + size % 300);
  const auto again = decode_all(reencoded, 1000);
  FUZZ_CHECK(again.status.is_ok(), "re-encoded artifact fails: %s", again.status.message().c_str());
  FUZZ_CHECK(again.events == d.events, "re-encoded artifact decodes to %zu events, not %zu", again.events.size(),
             d.events.size());
  return 0;
}
