// The compact encoder: one pass assigns dictionary indices, then each column is written in order
// (docs/FORMAT.md, "Compact data frames"). Address references come from an open-addressing table (address
// -> the threads that allocated and released it, and their counts at the time) cleared per frame by an epoch,
// so a frame costs no clearing.
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "compact_internal.h"
#include "memtrack/codec/compact.h"

namespace memtrack::codec {

using namespace compact;

bool is_compact_content(std::span<const std::byte> content) {
  return content.size() >= sizeof kCompactMagic &&
         std::memcmp(content.data(), kCompactMagic, sizeof kCompactMagic) == 0;
}

namespace {

// address -> the latest thread that allocated it and that released it in the frame, each with the 0-based
// number of that address in the thread's list. One 32-byte entry per address, so an address costs one probe
// sequence (one cache line, usually) for its lookup and its update together: the table of a 65,536-event
// frame is 8 MiB, far beyond the caches, and separate arrays or tables cost a miss each.
class AddressTable {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Entry {
    std::uint64_t key;
    std::uint32_t stamp;
    std::uint32_t thread[2];  // [0] allocated, [1] released by; kNone: not in the frame
    std::uint32_t number[2];
    std::uint32_t padding;
  };
  static_assert(sizeof(Entry) == 32);

  // At most `max_entries` distinct keys per frame; the load stays at most 1/2.
  static std::size_t capacity(std::size_t max_entries) {
    std::size_t cap = 16;
    while (cap < 2 * max_entries) cap *= 2;
    return cap;
  }
  explicit AddressTable(std::size_t max_entries) {
    mask_ = capacity(max_entries) - 1;
    entries_ = std::make_unique<Entry[]>(mask_ + 1);  // stamps zero: empty for every epoch >= 1
  }

  void clear() {
    if (++epoch_ == 0) {  // after 2^32 frames: stamps of old epochs could look current
      for (std::size_t i = 0; i <= mask_; ++i) entries_[i].stamp = 0;
      epoch_ = 1;
    }
  }

  // The entry of `key`, created empty if the frame has none yet.
  Entry& at(std::uint64_t key) {
    std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & mask_;
    for (; entries_[i].stamp == epoch_; i = (i + 1) & mask_) {
      if (entries_[i].key == key) return entries_[i];
    }
    Entry& e = entries_[i];
    e.stamp = epoch_;
    e.key = key;
    e.thread[0] = e.thread[1] = kNone;
    return e;
  }

 private:
  std::size_t mask_ = 0;
  std::uint32_t epoch_ = 1;
  std::unique_ptr<Entry[]> entries_;
};

struct ThreadState {
  std::uint64_t previous = 0;  // the thread's previous address in the frame
  std::uint32_t allocations = 0, releases = 0;
};

}  // namespace

struct CompactFrameEncoder::Impl {
  explicit Impl(std::size_t max)
      : max_events(max),
        buffer(std::make_unique_for_overwrite<std::byte[]>(output_bound(max))),
        thread_of(std::make_unique_for_overwrite<std::uint32_t[]>(max)),
        table(2 * max) {
    dictionary.reserve(64);
    threads.reserve(64);
  }

  std::size_t max_events;
  std::unique_ptr<std::byte[]> buffer;
  std::unique_ptr<std::uint32_t[]> thread_of;  // per event: its dictionary index
  std::unordered_map<std::uint64_t, std::uint32_t> dictionary;
  std::vector<std::uint64_t> pairs;  // the dictionary in index order: pid << 32 | tid
  std::vector<ThreadState> threads;
  AddressTable table;

  // Writes the code of `address` at a release (or allocation) position of thread `t`, then records it.
  std::byte* put_address(std::byte* p, std::uint32_t t, std::uint64_t address, bool release) {
    ThreadState& ts = threads[t];
    const std::uint64_t z = zigzag64(address - ts.previous);
    std::uint64_t value = z;
    unsigned tag = kTagDelta;
    // A release is looked up among the thread's allocations, an allocation among its releases.
    AddressTable::Entry& entry = table.at(address);
    const unsigned other = release ? 0 : 1, mine = release ? 1 : 0;
    std::uint32_t& count = release ? ts.releases : ts.allocations;
    if (entry.thread[other] == t) {
      const std::uint64_t k = (release ? ts.allocations : ts.releases) - entry.number[other];
      if (tagged_size(k) <= tagged_size(z)) {
        value = k;
        tag = release ? kTagAllocationRef : kTagReleaseRef;
      }
    }
    p = put_tagged(p, value, tag);
    ts.previous = address;
    entry.thread[mine] = t;
    entry.number[mine] = count++;
    return p;
  }

  std::span<const std::byte> encode(std::span<const Event> events) {
    const std::size_t n = events.size();
    if (n == 0) return {};
    dictionary.clear();
    pairs.clear();
    std::uint64_t last_pair = 0;
    std::uint32_t last_index = UINT32_MAX;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t pair =
          (std::uint64_t{static_cast<std::uint32_t>(events[i].pid)} << 32) | static_cast<std::uint32_t>(events[i].tid);
      if (pair != last_pair || last_index == UINT32_MAX) {
        const auto [it, added] = dictionary.try_emplace(pair, static_cast<std::uint32_t>(pairs.size()));
        if (added) pairs.push_back(pair);
        last_pair = pair;
        last_index = it->second;
      }
      thread_of[i] = last_index;
    }

    std::byte* p = buffer.get();
    std::memcpy(p, kCompactMagic, sizeof kCompactMagic);
    p += sizeof kCompactMagic;
    *p++ = static_cast<std::byte>(kCompactVersion);
    p = put_varint(p, n);
    for (const Event& e : events) *p++ = static_cast<std::byte>(kind_byte(e));
    p = put_varint(p, pairs.size());
    for (const std::uint64_t pair : pairs) {
      p = put_varint(p, zigzag32(static_cast<std::int32_t>(pair >> 32)));
      p = put_varint(p, zigzag32(static_cast<std::int32_t>(pair & 0xFFFFFFFFu)));
    }
    for (std::size_t i = 0; i < n; ++i) p = put_varint(p, thread_of[i]);
    std::uint64_t previous = 0;
    for (const Event& e : events) {
      p = put_varint(p, zigzag64(e.timestamp - previous));
      previous = e.timestamp;
    }

    threads.assign(pairs.size(), ThreadState{});
    table.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      const std::uint8_t kind = kind_byte(e);
      if ((kind & kKindOldAddr) != 0) p = put_address(p, thread_of[i], e.old_addr, true);
      p = put_address(p, thread_of[i], e.addr, addr_is_release(kind & kKindMask));
    }
    for (const Event& e : events) {
      if (has_size(static_cast<std::uint8_t>(e.kind))) p = put_varint(p, e.size);
    }
    return {buffer.get(), static_cast<std::size_t>(p - buffer.get())};
  }
};

CompactFrameEncoder::CompactFrameEncoder(std::size_t max_events) {
  if (max_events == 0 || max_events > kMaxCompactFrameEvents) {
    throw std::invalid_argument("a compact frame holds 1.." + std::to_string(kMaxCompactFrameEvents) + " events, not " +
                                std::to_string(max_events));
  }
  impl_ = std::make_unique<Impl>(max_events);
}
CompactFrameEncoder::~CompactFrameEncoder() = default;
CompactFrameEncoder::CompactFrameEncoder(CompactFrameEncoder&&) noexcept = default;
CompactFrameEncoder& CompactFrameEncoder::operator=(CompactFrameEncoder&&) noexcept = default;

std::span<const std::byte> CompactFrameEncoder::encode(std::span<const Event> events) { return impl_->encode(events); }
std::size_t CompactFrameEncoder::max_events() const { return impl_->max_events; }
std::size_t CompactFrameEncoder::memory_bytes(std::size_t max_events) {
  // Two addresses per event at most (a Realloc's old_addr and addr).
  return output_bound(max_events) + max_events * sizeof(std::uint32_t) +
         AddressTable::capacity(2 * max_events) * sizeof(AddressTable::Entry);
}

}  // namespace memtrack::codec
