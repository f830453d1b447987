// The compact decoder: reads the columns in order into the output events (docs/FORMAT.md, "Compact data
// frames"). Every count is checked against the bytes left before anything is sized from it: each event takes
// at least one byte of the kind column, each dictionary entry two bytes.
#include <string>
#include <utility>

#include "compact_internal.h"
#include "memtrack/codec/compact.h"

namespace memtrack::codec {

using namespace compact;

struct CompactFrameDecoder::Impl {
  std::vector<std::uint64_t> pairs;          // the dictionary: pid << 32 | tid
  std::vector<std::uint32_t> thread_of;      // per event
  std::vector<std::uint32_t> first, filled;  // per thread and list: where its entries start, how many so far
  std::vector<std::uint64_t> lists;          // every thread's allocation list, then its release list
  std::vector<std::uint64_t> previous;       // per thread: its previous address

  const std::byte* base = nullptr;
  const std::byte* p = nullptr;
  const std::byte* end = nullptr;
  Status status;

  bool fail(Errc code, const std::byte* at, const std::string& what) {
    status = {code, "compact content at byte " + std::to_string(at - base) + ": " + what};
    return false;
  }

  bool varint(std::uint64_t& out, const char* what) {
    const std::byte* const start = p;
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (p == end) return fail(Errc::truncated, start, std::string("the content ends inside ") + what);
      const auto b = static_cast<std::uint8_t>(*p++);
      if (shift == 63 && b > 1) return fail(Errc::bad_compact, start, std::string(what) + " does not fit 64 bits");
      v |= std::uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) break;
    }
    out = v;
    return true;
  }

  bool address(std::uint32_t t, bool release, std::size_t event, std::uint64_t& out) {
    const std::byte* const start = p;
    if (p == end) return fail(Errc::truncated, start, "the content ends inside the addresses");
    const auto b0 = static_cast<std::uint8_t>(*p);
    std::uint64_t value = 0;
    if ((b0 & 0x80) == 0) {
      ++p;
      value = b0 >> 2;
    } else {
      ++p;
      std::uint64_t rest = 0;
      if (!varint(rest, "an address")) return false;
      if (rest >= (std::uint64_t{1} << 59)) return fail(Errc::bad_compact, start, "an address code above 66 bits");
      value = (rest << 5) | ((b0 & 0x7Fu) >> 2);
    }
    const unsigned tag = b0 & 3u;
    if (tag == kTagDelta) {
      out = previous[t] + unzigzag64(value);
    } else if (tag == kTagAllocationRef || tag == kTagReleaseRef) {
      const std::size_t list = 2 * t + (tag == kTagReleaseRef ? 1 : 0);
      if (value == 0 || value > filled[list]) {
        return fail(Errc::bad_compact, start,
                    "event " + std::to_string(event) + " names its thread's " + std::to_string(value) +
                        "th most recent " + (tag == kTagReleaseRef ? "release" : "allocation") + " of " +
                        std::to_string(filled[list]));
      }
      out = lists[first[list] + filled[list] - value];
    } else {
      return fail(Errc::bad_compact, start, "event " + std::to_string(event) + ": address tag 3 is reserved");
    }
    previous[t] = out;
    const std::size_t mine = 2 * t + (release ? 1 : 0);
    lists[first[mine] + filled[mine]++] = out;
    return true;
  }

  bool decode(std::span<const std::byte> content, std::vector<Event>& out) {
    base = content.data();
    p = base;
    end = base + content.size();
    if (!is_compact_content(content)) return fail(Errc::bad_compact, p, "no compact magic");
    p += sizeof kCompactMagic;
    if (p == end) return fail(Errc::truncated, p, "the content ends before the version");
    if (const auto version = static_cast<std::uint8_t>(*p); version != kCompactVersion) {
      return fail(
          Errc::bad_compact, p,
          "format version " + std::to_string(version) + " (this reader knows " + std::to_string(kCompactVersion) + ")");
    }
    ++p;
    std::uint64_t n = 0;
    const std::byte* at = p;
    if (!varint(n, "the event count")) return false;
    if (n > kMaxCompactFrameEvents) {
      return fail(
          Errc::bad_compact, at,
          std::to_string(n) + " events, more than a frame holds (" + std::to_string(kMaxCompactFrameEvents) + ")");
    }
    if (n > static_cast<std::size_t>(end - p)) {
      return fail(Errc::truncated, at, std::to_string(n) + " events but " + std::to_string(end - p) + " bytes left");
    }
    const std::size_t first_out = out.size();
    out.resize(first_out + n);
    Event* const events = out.data() + first_out;
    if (!columns(events, n)) {
      out.resize(first_out);
      return false;
    }
    return true;
  }

  bool columns(Event* events, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i, ++p) {
      const auto kind = static_cast<std::uint8_t>(*p);
      const std::uint8_t k = kind & kKindMask;
      if (!is_valid_kind(k) || (kind & ~(kKindMask | kKindOldAddr)) != 0 ||
          ((kind & kKindOldAddr) != 0 && k != static_cast<std::uint8_t>(EventKind::Realloc))) {
        return fail(Errc::bad_compact, p, "event " + std::to_string(i) + ": bad kind byte " + std::to_string(kind));
      }
      events[i] = Event{};
      events[i].kind = static_cast<EventKind>(k);
      if ((kind & kKindOldAddr) != 0) events[i].flags = kFlagHasOldAddr;
    }
    std::uint64_t d = 0;
    const std::byte* at = p;
    if (!varint(d, "the dictionary size")) return false;
    if (d > n || (n > 0 && d == 0)) {
      return fail(Errc::bad_compact, at,
                  "a dictionary of " + std::to_string(d) + " threads for " + std::to_string(n) + " events");
    }
    if (2 * d > static_cast<std::size_t>(end - p)) {
      return fail(Errc::truncated, at,
                  "a dictionary of " + std::to_string(d) + " threads in " + std::to_string(end - p) + " bytes");
    }
    pairs.resize(d);
    for (std::uint64_t& pair : pairs) {
      std::uint64_t pid = 0, tid = 0;
      at = p;
      if (!varint(pid, "the dictionary") || !varint(tid, "the dictionary")) return false;
      if (pid > UINT32_MAX || tid > UINT32_MAX) return fail(Errc::bad_compact, at, "a pid or tid above 32 bits");
      pair = (pid << 32) | tid;
    }
    thread_of.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t t = 0;
      at = p;
      if (!varint(t, "the threads")) return false;
      if (t >= d) {
        return fail(Errc::bad_compact, at,
                    "event " + std::to_string(i) + ": thread " + std::to_string(t) + " of " + std::to_string(d));
      }
      thread_of[i] = static_cast<std::uint32_t>(t);
      events[i].pid = unzigzag32(static_cast<std::uint32_t>(pairs[t] >> 32));
      events[i].tid = unzigzag32(static_cast<std::uint32_t>(pairs[t] & 0xFFFFFFFFu));
    }
    std::uint64_t timestamp = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t z = 0;
      if (!varint(z, "the timestamps")) return false;
      timestamp += unzigzag64(z);
      events[i].timestamp = timestamp;
    }

    // Each thread's two lists, sized by counting its addresses.
    first.assign(2 * d, 0);
    filled.assign(2 * d, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::uint8_t>(events[i].kind);
      if (events[i].has_old_addr()) ++first[2 * thread_of[i] + 1];
      ++first[2 * thread_of[i] + (addr_is_release(k) ? 1 : 0)];
    }
    std::uint32_t total = 0;
    for (std::uint32_t& f : first) total += std::exchange(f, total);
    lists.resize(total);
    previous.assign(d, 0);
    for (std::size_t i = 0; i < n; ++i) {
      Event& e = events[i];
      const std::uint32_t t = thread_of[i];
      if (e.has_old_addr() && !address(t, true, i, e.old_addr)) return false;
      if (!address(t, addr_is_release(static_cast<std::uint8_t>(e.kind)), i, e.addr)) return false;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (has_size(static_cast<std::uint8_t>(events[i].kind)) && !varint(events[i].size, "the sizes")) return false;
    }
    if (p != end) return fail(Errc::bad_compact, p, std::to_string(end - p) + " bytes after the last column");
    return true;
  }
};

CompactFrameDecoder::CompactFrameDecoder() : impl_(std::make_unique<Impl>()) {}
CompactFrameDecoder::~CompactFrameDecoder() = default;

Status CompactFrameDecoder::decode(std::span<const std::byte> content, std::vector<Event>& out) {
  impl_->status = Status::ok();
  impl_->decode(content, out);
  return impl_->status;
}

}  // namespace memtrack::codec
