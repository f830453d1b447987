// The compact decoder: reads the columns in order into the output events (docs/FORMAT.md, "Compact data
// frames"). Every count is checked against the bytes left before anything is sized from it: each event takes
// at least one byte of the kind column, each dictionary entry two bytes.
#include <bit>
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
    if (p != end && (static_cast<std::uint8_t>(*p) & 0x80) == 0) {  // most values: one byte
      out = static_cast<std::uint8_t>(*p++);
      return true;
    }
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

  FrameStacks* stacks_out = nullptr;
  std::vector<std::uint32_t> stack_dictionary;
  std::vector<std::uint32_t> stack_prediction;  // per thread, 9 kinds
  std::vector<std::uint32_t> stack_ids;

  bool decode(std::span<const std::byte> content, std::vector<Event>& out) {
    base = content.data();
    p = base;
    end = base + content.size();
    if (!is_compact_content(content)) return fail(Errc::bad_compact, p, "no compact magic");
    p += sizeof kCompactMagic;
    if (p == end) return fail(Errc::truncated, p, "the content ends before the version");
    const auto version = static_cast<std::uint8_t>(*p);
    if (version < 1 || version > 5) {
      return fail(Errc::bad_compact, p, "format version " + std::to_string(version) + " (this reader knows 1 to 5)");
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
    if (!(version == 1 ? columns(events, n) : columns_v2(events, n, version))) {
      out.resize(first_out);
      return false;
    }
    return true;
  }

  // Version 2: a token per event, the dictionary and threads as in version 1, timestamps and sizes split
  // into low bytes and high varints, then the four address columns, each after its byte length.
  std::vector<std::uint64_t> allocation_class;  // per allocation entry (in `lists`' allocation segments)
  // Per thread, its allocation entries' live flags in words of 64 (bit i % 64 of its word i / 64), from
  // live_first[t]: a live rank is found by popcounts, newest word first.
  std::vector<std::uint64_t> live;
  std::vector<std::uint32_t> live_first;
  std::vector<std::uint64_t> allocation_end;  // per thread: its latest allocation's address + its class
  std::vector<std::uint64_t> release_key;     // per release entry (compact_internal.h, kNotFree)
  struct Column {
    const std::byte* p;
    const std::byte* end;
  };
  Column address_columns[5] = {};  // live, class, release, deltas, version 5's remainders
  bool aligned_deltas = false;     // version 5

  bool column_varint(Column& c, std::uint64_t& out, const char* what) {
    if (c.p != c.end && (static_cast<std::uint8_t>(*c.p) & 0x80) == 0) {  // most values: one byte
      out = static_cast<std::uint8_t>(*c.p++);
      return true;
    }
    const std::byte* const saved_p = p;
    const std::byte* const saved_end = end;
    p = c.p;
    end = c.end;
    const bool ok = varint(out, what);
    c.p = p;
    p = saved_p;
    end = saved_end;
    return ok;
  }

  // Version 4's live and class values: a byte below 255, or 255 and a varint of the value - 255.
  bool column_byte_value(Column& c, std::uint64_t& out, const char* what) {
    if (c.p != c.end && *c.p != std::byte{0xFF}) {
      out = static_cast<std::uint8_t>(*c.p++);
      return true;
    }
    if (c.p == c.end) return fail(Errc::truncated, c.p, std::string("the content ends inside ") + what);
    const std::byte* const at = c.p++;
    std::uint64_t rest = 0;
    if (!column_varint(c, rest, what)) return false;
    if (rest > UINT64_MAX - 255) return fail(Errc::bad_compact, at, std::string(what) + ": a value above 64 bits");
    out = rest + 255;
    return true;
  }

  // A split value: its high part from `high`, its low byte from `low`.
  bool split(Column& high, std::uint64_t& out, const std::byte*& low, const char* what) {
    std::uint64_t value = 0;
    const std::byte* const at = high.p;
    if (!column_varint(high, value, what)) return false;
    if (value >= (std::uint64_t{1} << 56)) return fail(Errc::bad_compact, at, std::string(what) + " above 64 bits");
    out = (value << 8) | static_cast<std::uint8_t>(*low++);
    return true;
  }

  // Moves p past `count` varints (their last bytes: bit 7 clear), without reading their values.
  bool skip(std::size_t count, const char* what) {
    for (; count > 0; ++p) {
      if (p == end) return fail(Errc::truncated, p, std::string("the content ends inside ") + what);
      if ((static_cast<std::uint8_t>(*p) & 0x80) == 0) --count;
    }
    return true;
  }

  // The index of thread t's allocation whose live rank (live allocations of the thread after it) is
  // `rank`, or UINT32_MAX if the thread has no more live allocations than that.
  std::uint32_t live_at(std::uint32_t t, std::uint64_t rank) const {
    const std::uint32_t allocations = filled[2 * t];
    if (allocations == 0) return UINT32_MAX;
    const std::uint64_t* const masks = live.data() + live_first[t];
    for (std::uint32_t w = (allocations - 1) / 64 + 1; w-- > 0;) {
      std::uint64_t mask = masks[w];
      const std::uint64_t bytes = byte_popcounts(mask);
      const auto here = static_cast<unsigned>((bytes * 0x0101010101010101ull) >> 56);
      if (rank >= here) {
        rank -= here;
        continue;
      }
      // The rank-th set bit from the top: whole bytes first, then bit by bit within one.
      unsigned shift = 56;
      for (;; shift -= 8) {
        const auto in_byte = static_cast<unsigned>((bytes >> shift) & 0xFF);
        if (rank < in_byte) break;
        rank -= in_byte;
      }
      mask &= std::uint64_t{0xFF} << shift;
      for (; rank > 0; --rank) mask &= ~(std::uint64_t{1} << (63 - std::countl_zero(mask)));
      return w * 64 + static_cast<std::uint32_t>(63 - std::countl_zero(mask));
    }
    return UINT32_MAX;
  }

  bool address_v2(std::uint32_t t, bool release, unsigned mode, std::size_t event, const Event& e, std::uint64_t size,
                  bool byte_values, std::uint64_t& out) {
    const std::size_t mine = 2 * t + (release ? 1 : 0);
    const std::uint32_t entry = first[mine] + filled[mine];
    std::uint64_t value = 0;
    auto name = [&](const char* what) { return "event " + std::to_string(event) + ": " + what; };
    const std::size_t column = release                      ? (mode == kReleaseLive ? 0 : 3)
                               : mode == kAllocationClass   ? 1
                               : mode == kAllocationRelease ? 2
                               : mode == kAllocationDelta   ? 3
                                                            : 4;
    const std::byte* const at = column < 4 ? address_columns[column].p : nullptr;
    if (column < 4 &&
        !(byte_values && column < 2 ? column_byte_value(address_columns[column], value, "an address column")
                                    : column_varint(address_columns[column], value, "an address column"))) {
      return false;
    }
    std::uint64_t key = kNotFree;
    if (column == 3 && aligned_deltas) {
      std::uint64_t remainder = 0;
      if ((value & 1) != 0) {
        Column& r = address_columns[4];
        if (r.p == r.end) return fail(Errc::truncated, r.p, name("the content ends inside the deltas' remainders"));
        remainder = static_cast<std::uint8_t>(*r.p);
        if (remainder == 0 || remainder >= kDeltaUnit)
          return fail(Errc::bad_compact, r.p, name("a delta's remainder of ") + std::to_string(remainder) + " (1 to 15)");
        ++r.p;
      }
      out = (release ? previous[t] : allocation_end[t]) + aligned_delta(value, remainder);
    } else if (column == 3) {
      out = (release ? previous[t] : allocation_end[t]) + unzigzag64(value);
    } else if (column == 4) {
      out = e.old_addr;
    } else if (column == 0) {
      const std::uint32_t index = live_at(t, value);
      if (index == UINT32_MAX) {
        return fail(Errc::bad_compact, at,
                    name("names its thread's live allocation ") + std::to_string(value) + ", which it does not have");
      }
      const std::uint32_t a = first[2 * t] + index;
      out = lists[a];
      live[live_first[t] + index / 64] &= ~(std::uint64_t{1} << (index % 64));
      key = allocation_class[a];
    } else if (column == 1) {
      const std::uint64_t want = compact::size_class(size);
      const std::uint32_t begin = first[2 * t + 1];
      const std::uint32_t count = filled[2 * t + 1];
      const std::uint32_t window = count < kClassWindow ? count : kClassWindow;
      std::uint64_t seen = 0;
      std::uint32_t found = UINT32_MAX;
      for (std::uint32_t j = 0; j < window; ++j) {
        const std::uint32_t r = begin + count - 1 - j;
        if (release_key[r] == want && seen++ == value) {
          found = r;
          break;
        }
      }
      if (found == UINT32_MAX) {
        return fail(Errc::bad_compact, at,
                    name("names free block ") + std::to_string(value) + " of its class, which its thread's last " +
                        std::to_string(window) + " releases do not have");
      }
      out = lists[found];
      release_key[found] = kNotFree;
    } else {
      const std::uint32_t count = filled[2 * t + 1];
      if (value >= count) {
        return fail(Errc::bad_compact, at,
                    name("names its thread's release ") + std::to_string(value + 1) + " of " + std::to_string(count));
      }
      const std::uint32_t r = first[2 * t + 1] + count - 1 - static_cast<std::uint32_t>(value);
      out = lists[r];
      release_key[r] = kNotFree;
    }
    previous[t] = out;
    lists[entry] = out;
    ++filled[mine];
    if (release) {
      release_key[entry] = key;
    } else {
      allocation_class[entry] = compact::size_class(size);
      allocation_end[t] = out + allocation_class[entry];
      const std::uint32_t index = entry - first[2 * t];
      live[live_first[t] + index / 64] |= std::uint64_t{1} << (index % 64);
    }
    return true;
  }

  // The (pid, tid) dictionary after the kinds, the same in both versions: into `pairs`.
  bool thread_dictionary(std::size_t n) {
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
    return true;
  }

  // Versions 2 to 4 differ only in the timestamps and two address columns: version 3 stores them by group
  // (compact_internal.h, kTimestampGroups), version 2 in event order (one group); version 4 by group too, each
  // group in its mode (split values, or short gaps), and its live and class columns hold byte values.
  bool columns_v2(Event* events, std::size_t n, unsigned version) {
    const bool grouped = version >= 3;
    const std::byte* const tokens = p;
    std::size_t sized = 0;
    std::size_t group_count[kTimestampGroups] = {};
    unsigned previous_class = 0;
    for (std::size_t i = 0; i < n; ++i, ++p) {
      const auto token = static_cast<std::uint8_t>(*p);
      const std::uint8_t k = token & kKindMask;
      const bool has_old = (token & kKindOldAddr) != 0;
      const bool release = addr_is_release(k);
      const unsigned allocation_mode = token >> kAllocationModeShift;
      const unsigned release_mode = (token >> kReleaseModeShift) & 1u;
      if (!is_valid_kind(k) || (has_old && k != static_cast<std::uint8_t>(EventKind::Realloc)) ||
          (release && allocation_mode != 0) || (!release && !has_old && release_mode != 0) ||
          (allocation_mode == kAllocationSame && !has_old)) {
        return fail(Errc::bad_compact, p, "event " + std::to_string(i) + ": bad token " + std::to_string(token));
      }
      events[i] = Event{};
      events[i].kind = static_cast<EventKind>(k);
      if (has_old) events[i].flags = kFlagHasOldAddr;
      sized += has_size(k) ? 1 : 0;
      const unsigned now = grouped ? timestamp_class(k) : 0;
      ++group_count[3 * now + previous_class];
      previous_class = grouped ? now : 0;
    }
    if (!thread_dictionary(n)) return false;
    const std::uint64_t d = pairs.size();
    const std::byte* at = p;  // where the part being read starts, for the errors
    // Find where each column starts (a skip over its varints), then read them all in one pass over the events:
    // each pass over a frame's 3.5 MiB of events costs a read of them from memory.
    Column threads{p, nullptr}, timestamp_high[kTimestampGroups] = {}, size_high{};
    const std::byte* timestamp_low[kTimestampGroups];
    const std::byte* timestamp_escape[kTimestampGroups] = {};
    bool short_gaps[kTimestampGroups] = {};
    if (!skip(n, "the threads")) return false;
    threads.end = p;
    if (version >= 4) {
      if (kTimestampGroups > static_cast<std::size_t>(end - p))
        return fail(Errc::truncated, p, "the content ends inside the timestamp modes");
      for (unsigned g = 0; g < kTimestampGroups; ++g, ++p) {
        const auto mode = static_cast<std::uint8_t>(*p);
        if (mode > kTimestampShort) {
          return fail(Errc::bad_compact, p,
                      "timestamp group " + std::to_string(g) + ": mode " + std::to_string(mode) + " (0 or 1)");
        }
        short_gaps[g] = mode == kTimestampShort;
      }
    }
    if (n > static_cast<std::size_t>(end - p))
      return fail(Errc::truncated, p, "the content ends inside the timestamps");
    {
      std::size_t before = 0;
      for (unsigned g = 0; g < kTimestampGroups; ++g) {
        timestamp_low[g] = p + before;
        before += group_count[g];
      }
    }
    p += n;
    for (unsigned g = 0; g < kTimestampGroups; ++g) {
      std::size_t values = group_count[g];
      if (short_gaps[g]) {  // only the escaped gaps have a low byte and a high part
        values = 0;
        for (std::size_t j = 0; j < group_count[g]; ++j) values += timestamp_low[g][j] == std::byte{kShortEscape};
        if (values > static_cast<std::size_t>(end - p))
          return fail(Errc::truncated, p, "the content ends inside the escaped timestamps");
        timestamp_escape[g] = p;
        p += values;
      }
      timestamp_high[g].p = p;
      if (!skip(values, "the timestamps")) return false;
      timestamp_high[g].end = p;
    }
    if (sized > static_cast<std::size_t>(end - p)) return fail(Errc::truncated, p, "the content ends inside the sizes");
    const std::byte* size_low = p;
    p += sized;
    size_high.p = p;
    if (!skip(sized, "the sizes")) return false;
    size_high.end = p;
    aligned_deltas = version >= 5;
    address_columns[4] = {};
    for (std::size_t ci = 0; ci < (aligned_deltas ? 5u : 4u); ++ci) {
      Column& c = address_columns[ci];
      std::uint64_t length = 0;
      at = p;
      if (!varint(length, "an address column's length")) return false;
      if (length > static_cast<std::uint64_t>(end - p)) {
        return fail(Errc::truncated, at,
                    "an address column of " + std::to_string(length) + " bytes in " + std::to_string(end - p));
      }
      c = {p, p + length};
      p += length;
    }
    const std::byte* stack_codes = nullptr;
    std::uint64_t first_stack_event = 0;
    if (version >= 5) {
      if (p == end) return fail(Errc::truncated, p, "the content ends before the stacks flag");
      const auto flag = static_cast<std::uint8_t>(*p);
      if (flag > 1) return fail(Errc::bad_compact, p, "stacks flag " + std::to_string(flag) + " (0 or 1)");
      ++p;
      if (flag == 1) {
        if (!varint(first_stack_event, "the stacks' first event")) return false;
        std::uint64_t entries = 0;
        at = p;
        if (!varint(entries, "the stack dictionary's size")) return false;
        if (entries > n || entries > static_cast<std::uint64_t>(end - p)) {
          return fail(Errc::bad_compact, at,
                      "a stack dictionary of " + std::to_string(entries) + " ids for " + std::to_string(n) +
                          " events in " + std::to_string(end - p) + " bytes");
        }
        stack_dictionary.resize(entries);
        for (std::uint32_t& id : stack_dictionary) {
          std::uint64_t v = 0;
          at = p;
          if (!varint(v, "the stack dictionary")) return false;
          if (v > UINT32_MAX) return fail(Errc::bad_compact, at, "a stack id above 32 bits");
          id = static_cast<std::uint32_t>(v);
        }
        if (n > static_cast<std::size_t>(end - p))
          return fail(Errc::truncated, p, "the content ends inside the stack codes");
        stack_codes = p;
        p = end;  // read after the events, to the end
      }
    }
    if (p != end) return fail(Errc::bad_compact, p, std::to_string(end - p) + " bytes after the last column");

    thread_of.resize(n);
    first.assign(2 * d + 1, 0);
    filled.assign(2 * d, 0);
    std::uint64_t timestamp = 0;
    previous_class = 0;
    for (std::size_t i = 0; i < n; ++i) {
      Event& e = events[i];
      std::uint64_t t = 0;
      at = threads.p;
      if (!column_varint(threads, t, "the threads")) return false;
      if (t >= d) {
        return fail(Errc::bad_compact, at,
                    "event " + std::to_string(i) + ": thread " + std::to_string(t) + " of " + std::to_string(d));
      }
      thread_of[i] = static_cast<std::uint32_t>(t);
      e.pid = unzigzag32(static_cast<std::uint32_t>(pairs[t] >> 32));
      e.tid = unzigzag32(static_cast<std::uint32_t>(pairs[t] & 0xFFFFFFFFu));
      std::uint64_t z = 0;
      const unsigned now = grouped ? timestamp_class(static_cast<std::uint8_t>(e.kind)) : 0;
      const unsigned g = 3 * now + previous_class;
      previous_class = now;
      if (!short_gaps[g]) {
        if (!split(timestamp_high[g], z, timestamp_low[g], "the timestamps")) return false;
        timestamp += unzigzag64(z);
      } else if (const auto b = static_cast<std::uint8_t>(*timestamp_low[g]++); b != kShortEscape) {
        timestamp += b;
      } else {
        if (!split(timestamp_high[g], z, timestamp_escape[g], "the timestamps")) return false;
        timestamp += unzigzag64(z);
      }
      e.timestamp = timestamp;
      const auto k = static_cast<std::uint8_t>(e.kind);
      if (has_size(k) && !split(size_high, e.size, size_low, "the sizes")) return false;
      // Each thread's two lists, sized by counting its addresses.
      if (e.has_old_addr()) ++first[2 * t + 1];
      ++first[2 * t + (addr_is_release(k) ? 1 : 0)];
    }
    std::uint32_t total = 0;
    for (std::uint32_t& f : first) total += std::exchange(f, total);
    lists.resize(total);
    allocation_class.resize(total);
    release_key.resize(total);
    live_first.resize(d);
    std::uint32_t words = 0;
    for (std::uint32_t t = 0; t < d; ++t) {
      live_first[t] = words;
      words += (first[2 * t + 1] - first[2 * t] + 63) / 64;
    }
    live.assign(words, 0);
    allocation_end.assign(d, 0);
    previous.assign(d, 0);
    const bool byte_values = version >= 4;
    for (std::size_t i = 0; i < n; ++i) {
      Event& e = events[i];
      const std::uint32_t t = thread_of[i];
      const auto token = static_cast<std::uint8_t>(tokens[i]);
      const unsigned release_mode = (token >> kReleaseModeShift) & 1u;
      if (e.has_old_addr() && !address_v2(t, true, release_mode, i, e, 0, byte_values, e.old_addr)) return false;
      if (addr_is_release(static_cast<std::uint8_t>(e.kind))) {
        if (!address_v2(t, true, release_mode, i, e, 0, byte_values, e.addr)) return false;
      } else if (!address_v2(t, false, token >> kAllocationModeShift, i, e, e.size, byte_values, e.addr)) {
        return false;
      }
    }
    for (std::size_t c = 0; c < 5; ++c) {
      if (address_columns[c].p != address_columns[c].end) {
        return fail(Errc::bad_compact, address_columns[c].p,
                    std::to_string(address_columns[c].end - address_columns[c].p) +
                        " bytes after the last value of "
                        "address column " +
                        std::to_string(c));
      }
    }
    if (stack_codes != nullptr && !stacks(events, n, d, first_stack_event, stack_codes)) return false;
    return true;
  }

  // Version 5's stack codes, from `codes` to the content's end: each event's code 0 its prediction (the stack
  // of its thread's latest event of its kind in the frame, 0 before the first), k an entry of the dictionary.
  bool stacks(const Event* events, std::size_t n, std::uint64_t d, std::uint64_t first_event, const std::byte* codes) {
    constexpr std::size_t kinds = 9;
    stack_prediction.assign(d * kinds, 0);
    stack_ids.resize(n);
    Column c{codes, end};
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t& predicted = stack_prediction[thread_of[i] * kinds + static_cast<unsigned>(events[i].kind)];
      std::uint64_t code = 0;
      const std::byte* const at = c.p;
      if (!column_byte_value(c, code, "the stack codes")) return false;
      if (code > stack_dictionary.size()) {
        return fail(Errc::bad_compact, at,
                    "event " + std::to_string(i) + ": stack code " + std::to_string(code) + " of a dictionary of " +
                        std::to_string(stack_dictionary.size()));
      }
      if (code != 0) predicted = stack_dictionary[code - 1];
      stack_ids[i] = predicted;
    }
    if (c.p != end) return fail(Errc::bad_compact, c.p, std::to_string(end - c.p) + " bytes after the stack codes");
    if (stacks_out != nullptr) {
      stacks_out->present = true;
      stacks_out->first_event = first_event;
      stacks_out->ids.swap(stack_ids);
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
    if (!thread_dictionary(n)) return false;
    const std::uint64_t d = pairs.size();
    const std::byte* at = p;  // where the part being read starts, for the errors
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

Status CompactFrameDecoder::decode(std::span<const std::byte> content, std::vector<Event>& out, FrameStacks* stacks) {
  impl_->status = Status::ok();
  if (stacks != nullptr) {
    stacks->present = false;
    stacks->first_event = 0;
    stacks->ids.clear();
  }
  impl_->stacks_out = stacks;
  impl_->decode(content, out);
  impl_->stacks_out = nullptr;
  if (!impl_->status.is_ok() && stacks != nullptr) {
    stacks->present = false;
    stacks->ids.clear();
  }
  return impl_->status;
}

}  // namespace memtrack::codec
