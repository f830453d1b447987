// Property: parse_event on arbitrary bytes never crashes, reads nothing past `size`, and is consistent:
// - `offset` advances only on ok and foreign, and then stays within the input;
// - a foreign event's bytes parse alone to the same foreign event (its type and common keys), and every
//   strict prefix of them is need_more;
// - an ok event is a valid raw record (validate_record), and re-encoding it then parsing again gives the
//   same event, both through the canonical fast path and through msgpack-c's visitor (a map16 header
//   forces it), so the two parsers cannot drift apart;
// - the bytes of an ok event parse alone to the same event, and every strict prefix of them is need_more,
//   never error: the artifact decoder relies on this when an event straddles decompressed chunks.
// Leniency means an ok event re-encoded need not equal its input bytes; that is not checked.
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "memtrack/codec/msgpack_decoder.h"
#include "memtrack/codec/raw_record.h"

namespace {

using memtrack::codec::Event;
using memtrack::codec::ParseResult;

// Parses bytes copied into a buffer of exactly that size, so ASan sees any read past the end.
ParseResult parse_exact(const std::byte* p, std::size_t n, std::size_t& offset, Event& e, std::string& error) {
  std::vector<std::byte> copy(p, p + n);
  return memtrack::codec::parse_event(copy.data(), copy.size(), offset, e, error);
}

void check_event(const std::byte* bytes, std::size_t n, const Event& e) {
  const memtrack::codec::Status valid = memtrack::codec::validate_record(e, 0);
  FUZZ_CHECK(valid.is_ok(), "parsed event is not a valid record: %s", valid.message().c_str());

  // Alone, the event's bytes parse to the same event.
  std::size_t offset = 0;
  Event again;
  std::string error;
  FUZZ_CHECK(parse_exact(bytes, n, offset, again, error) == ParseResult::ok, "%s", error.c_str());
  FUZZ_CHECK(offset == n && again == e, "event bytes parsed alone differ (offset %zu of %zu)", offset, n);

  // Every strict prefix needs more bytes. Long events (unknown keys) are sampled to keep runs fast.
  const std::size_t step = n <= 256 ? 1 : n / 128;
  for (std::size_t k = 1; k < n; k += step) {
    offset = 0;
    const ParseResult r = parse_exact(bytes, k, offset, again, error);
    FUZZ_CHECK(r == ParseResult::need_more && offset == 0, "prefix %zu of %zu: result %d (%s)", k, n,
               static_cast<int>(r), error.c_str());
  }

  // Re-encoded (canonical layout, fast path) it parses to the same event.
  std::byte encoded[memtrack::codec::kMaxEncodedEventBytes + memtrack::codec::kEncoderSlackBytes + 2];
  const std::size_t size = memtrack::codec::encode_event(e, encoded + 2);
  FUZZ_CHECK(size <= memtrack::codec::kMaxEncodedEventBytes, "encoded size %zu", size);
  offset = 0;
  FUZZ_CHECK(parse_exact(encoded + 2, size, offset, again, error) == ParseResult::ok, "re-encoded: %s", error.c_str());
  FUZZ_CHECK(offset == size && again == e, "re-encoded event parses differently");

  // The same map with a map16 header takes msgpack-c's visitor path and must agree.
  const auto fixmap = static_cast<unsigned>(encoded[2]);
  FUZZ_CHECK(fixmap >= 0x85 && fixmap <= 0x87, "encoder wrote header 0x%02x", fixmap);
  encoded[0] = std::byte{0xde};
  encoded[1] = std::byte{0x00};
  encoded[2] = static_cast<std::byte>(fixmap & 0x0f);
  offset = 0;
  FUZZ_CHECK(parse_exact(encoded, size + 2, offset, again, error) == ParseResult::ok, "map16 form: %s", error.c_str());
  FUZZ_CHECK(offset == size + 2 && again == e, "visitor and fast path disagree");
}

void check_foreign(const std::byte* bytes, std::size_t n, const Event& e, std::string_view type) {
  std::size_t offset = 0;
  Event again;
  std::string error;
  std::string_view type_again;
  std::vector<std::byte> copy(bytes, bytes + n);
  FUZZ_CHECK(memtrack::codec::parse_event(copy.data(), n, offset, again, error, &type_again) == ParseResult::foreign,
             "foreign event bytes alone: %s", error.c_str());
  FUZZ_CHECK(offset == n && type_again == type && again.pid == e.pid && again.tid == e.tid &&
                 again.timestamp == e.timestamp && again.addr == e.addr,
             "foreign event bytes parsed alone differ");
  const std::size_t step = n <= 256 ? 1 : n / 128;
  for (std::size_t k = 1; k < n; k += step) {
    offset = 0;
    const ParseResult r = parse_exact(bytes, k, offset, again, error);
    FUZZ_CHECK(r == ParseResult::need_more && offset == 0, "foreign prefix %zu of %zu: result %d (%s)", k, n,
               static_cast<int>(r), error.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  std::size_t offset = 0;
  std::string error;
  // Several events in a row, as in a frame's content; bounded so one input cannot run for long.
  for (int i = 0; i < 64 && offset < size; ++i) {
    const std::size_t start = offset;
    Event e;
    std::string_view type;
    const ParseResult r = memtrack::codec::parse_event(bytes, size, offset, e, error, &type);
    if (r == ParseResult::foreign) {
      FUZZ_CHECK(offset > start && offset <= size, "foreign but offset %zu (start %zu, size %zu)", offset, start, size);
      check_foreign(bytes + start, offset - start, e, type);
      continue;
    }
    if (r != ParseResult::ok) {
      FUZZ_CHECK(offset == start, "offset moved from %zu to %zu on a non-ok result", start, offset);
      if (r == ParseResult::error) FUZZ_CHECK(!error.empty(), "error without a message");
      break;
    }
    FUZZ_CHECK(offset > start && offset <= size, "ok but offset %zu (start %zu, size %zu)", offset, start, size);
    check_event(bytes + start, offset - start, e);
  }
  return 0;
}
