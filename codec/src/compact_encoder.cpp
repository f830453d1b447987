// The compact encoder: one pass assigns dictionary indices, then each column is written in order
// (docs/FORMAT.md, "Compact data frames"). Address references come from two open-addressing tables (address
// -> the thread and its count at the time) cleared per frame by an epoch, so a frame costs no clearing.
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "compact_internal.h"
#include "memtrack/codec/compact.h"

namespace memtrack::codec {

using namespace compact;

bool is_compact_content(std::span<const std::byte> content) {
  return content.size() >= sizeof kCompactMagic && std::memcmp(content.data(), kCompactMagic, sizeof kCompactMagic) == 0;
}

namespace {

// address -> (thread index << 32 | its 0-based number in that thread's list), the latest per address.
class AddressTable {
 public:
  explicit AddressTable(std::size_t max_entries) {
    std::size_t cap = 16;
    while (cap < 2 * max_entries) cap *= 2;
    mask_ = cap - 1;
    keys_ = std::make_unique_for_overwrite<std::uint64_t[]>(cap);
    values_ = std::make_unique_for_overwrite<std::uint64_t[]>(cap);
    stamps_ = std::make_unique<std::uint32_t[]>(cap);  // zero: empty for every epoch >= 1
  }

  void clear() {
    if (++epoch_ == 0) {  // after 2^32 frames: stamps of old epochs could look current
      std::memset(stamps_.get(), 0, (mask_ + 1) * sizeof(std::uint32_t));
      epoch_ = 1;
    }
  }

  [[nodiscard]] const std::uint64_t* find(std::uint64_t key) const {
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      if (stamps_[i] != epoch_) return nullptr;
      if (keys_[i] == key) return &values_[i];
    }
  }

  void put(std::uint64_t key, std::uint64_t value) {
    std::size_t i = slot(key);
    for (; stamps_[i] == epoch_; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        values_[i] = value;
        return;
      }
    }
    stamps_[i] = epoch_;
    keys_[i] = key;
    values_[i] = value;
  }

 private:
  [[nodiscard]] std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & mask_;
  }

  std::size_t mask_ = 0;
  std::uint32_t epoch_ = 1;
  std::unique_ptr<std::uint64_t[]> keys_, values_;
  std::unique_ptr<std::uint32_t[]> stamps_;
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
        allocated(max),
        released(max) {
    dictionary.reserve(64);
    threads.reserve(64);
  }

  std::size_t max_events;
  std::unique_ptr<std::byte[]> buffer;
  std::unique_ptr<std::uint32_t[]> thread_of;  // per event: its dictionary index
  std::unordered_map<std::uint64_t, std::uint32_t> dictionary;
  std::vector<std::uint64_t> pairs;  // the dictionary in index order: pid << 32 | tid
  std::vector<ThreadState> threads;
  AddressTable allocated, released;

  // Writes the code of `address` at position `release` of thread `t`, then records it.
  std::byte* put_address(std::byte* p, std::uint32_t t, std::uint64_t address, bool release) {
    ThreadState& ts = threads[t];
    const std::uint64_t z = zigzag64(address - ts.previous);
    std::uint64_t value = z;
    unsigned tag = kTagDelta;
    // A release is looked up among the thread's allocations, an allocation among its releases.
    if (const std::uint64_t* hit = (release ? allocated : released).find(address);
        hit != nullptr && (*hit >> 32) == t) {
      const std::uint64_t k = (release ? ts.allocations : ts.releases) - static_cast<std::uint32_t>(*hit);
      if (tagged_size(k) <= tagged_size(z)) {
        value = k;
        tag = release ? kTagAllocationRef : kTagReleaseRef;
      }
    }
    p = put_tagged(p, value, tag);
    ts.previous = address;
    const std::uint64_t me = std::uint64_t{t} << 32;
    if (release) {
      released.put(address, me | ts.releases++);
    } else {
      allocated.put(address, me | ts.allocations++);
    }
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
    allocated.clear();
    released.clear();
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
    throw std::invalid_argument("a compact frame holds 1.." + std::to_string(kMaxCompactFrameEvents) +
                                " events, not " + std::to_string(max_events));
  }
  impl_ = std::make_unique<Impl>(max_events);
}
CompactFrameEncoder::~CompactFrameEncoder() = default;
CompactFrameEncoder::CompactFrameEncoder(CompactFrameEncoder&&) noexcept = default;
CompactFrameEncoder& CompactFrameEncoder::operator=(CompactFrameEncoder&&) noexcept = default;

std::span<const std::byte> CompactFrameEncoder::encode(std::span<const Event> events) { return impl_->encode(events); }
std::size_t CompactFrameEncoder::max_events() const { return impl_->max_events; }

}  // namespace memtrack::codec
