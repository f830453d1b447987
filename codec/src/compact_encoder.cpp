// The compact encoder (version 5): a pre-pass assigns dictionary indices and counts each thread's addresses,
// the address pass writes the tokens and the address columns, then the other columns follow in order
// (docs/FORMAT.md, "Compact data frames"). Address references come from an open-addressing table (address
// -> the threads that allocated and released it, and their counts at the time) cleared per frame by an epoch,
// so a frame costs no clearing.
#include <algorithm>
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
// number of that address in the thread's list. An open-addressing table of 4-byte slots (a 14-bit hash tag
// and the entry's index) over a dense array of entries in first-seen order: the slots of a 65,536-event frame
// take 1 MiB, which fits a core's L2 (one table of 32-byte entries took 8 MiB), and a probe reads an entry
// only when its tag matches; the entries of recent addresses, the ones looked up again soonest, sit
// together at the array's end. BM_EncodeCompact_Frame (bench/compress.cpp) measures the encoder.
class AddressTable {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Entry {
    std::uint64_t key;
    std::uint32_t thread[2];  // [0] allocated, [1] released by; kNone: not in the frame
    std::uint32_t number[2];
    std::uint32_t slot;  // where its slot is, so that clear() empties only the slots in use
    std::uint32_t padding;
  };
  static_assert(sizeof(Entry) == 32);

  // At most `max_entries` distinct keys per frame; the load stays at most 1/2.
  static std::size_t capacity(std::size_t max_entries) {
    std::size_t cap = 16;
    while (cap < 2 * max_entries) cap *= 2;
    return cap;
  }
  static std::size_t memory_bytes(std::size_t max_entries) {
    return capacity(max_entries) * sizeof(std::uint32_t) + max_entries * sizeof(Entry);
  }
  explicit AddressTable(std::size_t max_entries) {
    // A slot holds index + 1 in its low kIndexBits (0: empty).
    if (max_entries >= (std::size_t{1} << kIndexBits)) throw std::invalid_argument("address table too large");
    mask_ = capacity(max_entries) - 1;
    slots_ = std::make_unique<std::uint32_t[]>(mask_ + 1);  // zero: empty
    entries_ = std::make_unique_for_overwrite<Entry[]>(max_entries);
  }

  void clear() {
    for (std::uint32_t k = 0; k < count_; ++k) slots_[entries_[k].slot] = 0;
    count_ = 0;
  }

  // Starts loading the slot where the probe for `key` begins (the address pass asks a few events ahead:
  // the slots of a frame's addresses are spread over 1 MiB; BM_EncodeCompact_Frame measures the pass).
  void prefetch(std::uint64_t key) const {
    __builtin_prefetch(&slots_[static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & mask_]);
  }

  // The entry of `key`, created empty if the frame has none yet. Precondition: fewer than max_entries keys.
  Entry& at(std::uint64_t key) {
    const std::uint64_t h = key * 0x9E3779B97F4A7C15ull;
    std::size_t i = static_cast<std::size_t>(h >> 40) & mask_;
    const auto tag = static_cast<std::uint32_t>(h >> 26) & kTagMask;
    for (std::uint32_t slot; (slot = slots_[i]) != 0; i = (i + 1) & mask_) {
      if ((slot >> kIndexBits) != tag) continue;
      Entry& e = entries_[(slot & kIndexMask) - 1];
      if (e.key == key) return e;
    }
    Entry& e = entries_[count_];
    slots_[i] = tag << kIndexBits | ++count_;
    e.key = key;
    e.thread[0] = e.thread[1] = kNone;
    e.slot = static_cast<std::uint32_t>(i);
    return e;
  }

 private:
  static constexpr unsigned kIndexBits = 18;
  static constexpr std::uint32_t kIndexMask = (1u << kIndexBits) - 1, kTagMask = (1u << (32 - kIndexBits)) - 1;
  std::size_t mask_ = 0;
  std::uint32_t count_ = 0;
  std::unique_ptr<std::uint32_t[]> slots_;
  std::unique_ptr<Entry[]> entries_;
};

struct ThreadState {
  std::uint64_t previous = 0;          // the thread's previous address in the frame
  std::uint64_t allocation_end = 0;    // its latest allocation's address + that size's class
  std::uint32_t allocation_first = 0;  // where its allocation entries start in the per-address arrays
  std::uint32_t live_first = 0;        // where its live masks start
  std::uint32_t allocation_count = 0;  // allocation addresses in the frame (the pre-pass counts them)
  std::uint32_t release_first = 0, release_count = 0;
  std::uint32_t allocations = 0, releases = 0;  // so far
};

// Version 5's stack dictionary, at most one id per event: a hash node and an ordering entry.
constexpr std::size_t kStackBytesPerEvent = 48;

// Release keys (compact_internal.h, kNotFree) are kept apart from the addresses so that a class rank is a
// count over 8-byte keys the compiler vectorizes: scanning 24-byte entries took 40% of the encoder's CPU.

}  // namespace

struct CompactFrameEncoder::Impl {
  explicit Impl(std::size_t max)
      : max_events(max),
        buffer(std::make_unique_for_overwrite<std::byte[]>(output_bound(max))),
        thread_of(std::make_unique_for_overwrite<std::uint32_t[]>(max)),
        allocation_class(std::make_unique_for_overwrite<std::uint64_t[]>(max)),
        live(std::make_unique_for_overwrite<std::uint64_t[]>(live_words(max))),
        release_key(std::make_unique_for_overwrite<std::uint64_t[]>(max)),
        live_column(std::make_unique_for_overwrite<std::byte[]>(kLiveBytes * max)),
        class_column(std::make_unique_for_overwrite<std::byte[]>(kClassBytes * max)),
        release_column(std::make_unique_for_overwrite<std::byte[]>(kReleaseBytes * max)),
        delta_column(std::make_unique_for_overwrite<std::byte[]>(kDeltaBytes * max)),
        remainder_column(std::make_unique_for_overwrite<std::byte[]>(kRemainderBytes * max)),
        timestamp_column(std::make_unique_for_overwrite<std::byte[]>(kTimestampBytes * max)),
        size_column(std::make_unique_for_overwrite<std::byte[]>(kSplitBytes * max)),
        table(2 * max) {
    dictionary.reserve(64);
    threads.reserve(64);
  }

  // Bytes a value of each address column takes at most, per event: a live rank and a release reference are
  // below 65,536 (1 + 3 bytes), a class rank below kClassWindow (2), and an event has two deltas of 10 at most.
  // A split value (a size) takes 1 + 8; a timestamp a first byte, and an escaped low byte and high part.
  static constexpr std::size_t kLiveBytes = 4, kClassBytes = 2, kReleaseBytes = 3, kDeltaBytes = 20, kRemainderBytes = 2,
                               kSplitBytes = 9,
                               kTimestampBytes = 10;
  static constexpr std::size_t kPerEventBytes = sizeof(std::uint32_t) + 3 * sizeof(std::uint64_t) + kLiveBytes +
                                                kClassBytes + kReleaseBytes + kDeltaBytes + kRemainderBytes + kSplitBytes +
                                                kTimestampBytes;
  // Live masks: a thread's allocations in words of 64 flags, its first word of its own (so at most one word
  // per event and thread more than a whole number of words).
  static std::size_t live_words(std::size_t max) { return max + max / 64 + 1; }
  // How many events ahead the address pass prefetches the address table's slot of an event's addr.
  static constexpr std::size_t kPrefetchAhead = 8;

  std::size_t max_events;
  std::unique_ptr<std::byte[]> buffer;
  std::unique_ptr<std::uint32_t[]> thread_of;  // per event: its dictionary index
  // Per allocation address, in each thread's segment: its size class, and its live flag (bit i % 64 of word
  // i / 64 of the thread's masks), so that a live rank is a few popcounts: the live allocations after it in
  // its word, then every word after.
  std::unique_ptr<std::uint64_t[]> allocation_class;
  std::unique_ptr<std::uint64_t[]> live;
  std::unique_ptr<std::uint64_t[]> release_key;  // per release address, in each thread's segment
  std::unique_ptr<std::byte[]> live_column, class_column, release_column, delta_column, remainder_column;
  std::unique_ptr<std::byte[]> timestamp_column, size_column;  // low bytes, then high parts
  // Where the last content's columns (and timestamp groups) end, as offsets in it: see block_ends().
  std::size_t block_end[kMaxCompactBlockEnds];
  std::size_t block_ends = 0;
  std::byte* live_end = nullptr;
  std::byte* class_end = nullptr;
  std::byte* release_end = nullptr;
  std::byte* delta_end = nullptr;
  std::byte* remainder_end = nullptr;

  // Version 5's delta: the difference in units of 16 bytes (zigzag64 of d >> 4, arithmetic), shifted left
  // once, its low bit set when d is not a multiple of 16, whose remainder d & 15 then goes to the
  // remainders column (compact_internal.h, kDeltaUnit).
  void put_delta(std::uint64_t d) {
    const std::uint64_t remainder = d & (kDeltaUnit - 1);
    delta_end = put_varint(delta_end, aligned_delta_value(d));
    if (remainder != 0) *remainder_end++ = static_cast<std::byte>(remainder);
  }
  std::unordered_map<std::uint64_t, std::uint32_t> dictionary;
  std::vector<std::uint64_t> pairs;  // the dictionary in index order: pid << 32 | tid
  std::vector<ThreadState> threads;
  AddressTable table;

  // Live allocations of the thread after `index` (which is live): its live rank.
  std::uint32_t live_rank(const ThreadState& ts, std::uint32_t index) const {
    const std::uint64_t* const masks = live.get() + ts.live_first;
    const std::uint32_t word = index / 64, last = (ts.allocations - 1) / 64;
    const unsigned bit = index % 64;
    std::uint32_t rank = bit == 63 ? 0 : popcount64(masks[word] >> (bit + 1));
    for (std::uint32_t w = word + 1; w <= last; ++w) rank += popcount64(masks[w]);
    return rank;
  }

  // The mode of release address `address` of thread `t`; writes its value and records it.
  unsigned release(std::uint32_t t, std::uint64_t address) {
    ThreadState& ts = threads[t];
    AddressTable::Entry& entry = table.at(address);
    std::uint64_t& key = release_key[ts.release_first + ts.releases];
    key = kNotFree;
    unsigned mode = kReleaseDelta;
    if (entry.thread[0] == t && (live[ts.live_first + entry.number[0] / 64] >> (entry.number[0] % 64) & 1) != 0) {
      const std::uint32_t index = entry.number[0];
      live_end = put_byte_value(live_end, live_rank(ts, index));
      live[ts.live_first + index / 64] &= ~(std::uint64_t{1} << (index % 64));
      key = allocation_class[ts.allocation_first + index];
      mode = kReleaseLive;
    } else {
      put_delta(address - ts.previous);
    }
    entry.thread[1] = t;
    entry.number[1] = ts.releases++;
    ts.previous = address;
    return mode;
  }

  // The mode of allocation address `address` of thread `t` (`old`: the event's old_addr, if it has one).
  unsigned allocate(std::uint32_t t, std::uint64_t address, std::uint64_t size, const std::uint64_t* old) {
    ThreadState& ts = threads[t];
    AddressTable::Entry& entry = table.at(address);
    const std::uint64_t size_class = compact::size_class(size);
    unsigned mode = kAllocationDelta;
    if (old != nullptr && *old == address) {
      mode = kAllocationSame;
    } else if (entry.thread[1] == t) {
      // Only the latest release of the address is looked for: the class rank counts the free blocks of the
      // class released after it, the release reference its distance.
      const std::uint32_t number = entry.number[1];
      std::uint64_t* const keys = release_key.get() + ts.release_first;
      if (keys[number] == size_class && ts.releases - number <= kClassWindow) {
        class_end = put_byte_value(class_end, class_rank(keys + number + 1, keys + ts.releases, size_class));
        keys[number] = kNotFree;
        mode = kAllocationClass;
      } else {
        const std::uint64_t k = ts.releases - number - 1;
        if (varint_size(k) <= varint_size(zigzag64(address - ts.allocation_end))) {
          release_end = put_varint(release_end, k);
          keys[number] = kNotFree;
          mode = kAllocationRelease;
        }
      }
    }
    if (mode == kAllocationDelta) put_delta(address - ts.allocation_end);
    const std::uint32_t index = ts.allocations++;
    allocation_class[ts.allocation_first + index] = size_class;
    live[ts.live_first + index / 64] |= std::uint64_t{1} << (index % 64);
    entry.thread[0] = t;
    entry.number[0] = index;
    ts.previous = address;
    ts.allocation_end = address + size_class;
    return mode;
  }

  // How many of [begin, end) equal `key`: four independent sums, so that the loop is not one dependency chain
  // (its 1.6 ns per key was the encoder's largest cost on churn, where a free block is reused ~60 releases on).
  static std::uint32_t class_rank(const std::uint64_t* begin, const std::uint64_t* end, std::uint64_t key) {
    std::uint32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; end - begin >= 4; begin += 4) {
      s0 += begin[0] == key ? 1 : 0;
      s1 += begin[1] == key ? 1 : 0;
      s2 += begin[2] == key ? 1 : 0;
      s3 += begin[3] == key ? 1 : 0;
    }
    for (; begin != end; ++begin) s0 += *begin == key ? 1 : 0;
    return s0 + s1 + s2 + s3;
  }

  static std::byte* put_column(std::byte* p, const std::byte* begin, const std::byte* end) {
    const auto n = static_cast<std::size_t>(end - begin);
    p = put_varint(p, n);
    if (n != 0) std::memcpy(p, begin, n);
    return p + n;
  }

  // Notes that a column (or a timestamp group) ends at p, unless nothing was written since the last end.
  void end_block(const std::byte* p) {
    const auto at = static_cast<std::size_t>(p - buffer.get());
    if (block_ends != 0 && block_end[block_ends - 1] == at) return;
    block_end[block_ends++] = at;
  }

  // Version 5's stack section (docs/FORMAT.md, "Version 5"): per thread and kind the stack of the thread's
  // latest event of that kind in the frame (0 before the first) predicts the next one's; the ids that miss
  // go into a dictionary, most used first, and each event's code names its prediction (0) or an entry.
  std::vector<std::uint32_t> stack_prediction;                  // per thread, 9 kinds (0 unused)
  std::unordered_map<std::uint32_t, std::uint32_t> stack_uses;  // id -> misses, then id -> code
  std::vector<std::pair<std::uint32_t, std::uint32_t>> stack_order;
  static constexpr std::size_t kStackKinds = 9;

  std::byte* put_stacks(std::byte* p, std::span<const Event> events, std::uint64_t first_event) {
    const std::size_t n = events.size();
    *p++ = std::byte{1};
    p = put_varint(p, first_event);
    stack_prediction.assign(threads.size() * kStackKinds, 0);
    stack_uses.clear();
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t& predicted = stack_prediction[thread_of[i] * kStackKinds + static_cast<unsigned>(events[i].kind)];
      if (events[i].stack != predicted) ++stack_uses[events[i].stack];
      predicted = events[i].stack;
    }
    stack_order.assign(stack_uses.begin(), stack_uses.end());
    std::sort(stack_order.begin(), stack_order.end(),
              [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    p = put_varint(p, stack_order.size());
    for (std::size_t k = 0; k < stack_order.size(); ++k) {
      p = put_varint(p, stack_order[k].first);
      stack_uses[stack_order[k].first] = static_cast<std::uint32_t>(k + 1);
    }
    end_block(p);
    stack_prediction.assign(threads.size() * kStackKinds, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t& predicted = stack_prediction[thread_of[i] * kStackKinds + static_cast<unsigned>(events[i].kind)];
      p = put_byte_value(p, events[i].stack == predicted ? 0 : stack_uses.find(events[i].stack)->second);
      predicted = events[i].stack;
    }
    return p;
  }

  std::span<const std::byte> encode(std::span<const Event> events, bool with_stacks, std::uint64_t first_event) {
    const std::size_t n = events.size();
    block_ends = 0;
    if (n == 0) return {};
    dictionary.clear();
    pairs.clear();
    threads.clear();
    std::uint64_t last_pair = 0;
    std::uint32_t last_index = UINT32_MAX;
    std::size_t sized = 0;
    // Per timestamp group (compact_internal.h), its events, counted in this pass that reads the kinds anyway.
    std::size_t group_count[kTimestampGroups] = {};
    std::size_t group_short[kTimestampGroups] = {};  // its gaps below kShortEscape
    unsigned before_class = 0;
    std::uint64_t before_timestamp = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      const std::uint64_t pair =
          (std::uint64_t{static_cast<std::uint32_t>(e.pid)} << 32) | static_cast<std::uint32_t>(e.tid);
      if (pair != last_pair || last_index == UINT32_MAX) {
        const auto [it, added] = dictionary.try_emplace(pair, static_cast<std::uint32_t>(pairs.size()));
        if (added) {
          pairs.push_back(pair);
          threads.emplace_back();
        }
        last_pair = pair;
        last_index = it->second;
      }
      thread_of[i] = last_index;
      ThreadState& ts = threads[last_index];
      const std::uint8_t kind = kind_byte(e);
      const unsigned now_class = timestamp_class(kind & kKindMask);
      ++group_count[3 * now_class + before_class];
      group_short[3 * now_class + before_class] += e.timestamp - before_timestamp < kShortEscape ? 1 : 0;
      before_timestamp = e.timestamp;
      before_class = now_class;
      if ((kind & kKindOldAddr) != 0) ++ts.release_count;
      if (addr_is_release(kind & kKindMask)) {
        ++ts.release_count;
      } else {
        ++ts.allocation_count;
      }
      if (has_size(kind & kKindMask)) ++sized;
    }
    std::uint32_t allocation_total = 0, release_total = 0, live_total = 0;
    for (ThreadState& ts : threads) {
      ts.allocation_first = allocation_total;
      ts.release_first = release_total;
      ts.live_first = live_total;
      allocation_total += ts.allocation_count;
      release_total += ts.release_count;
      live_total += (ts.allocation_count + 63) / 64;
    }
    std::memset(live.get(), 0, live_total * sizeof(std::uint64_t));
    live_end = live_column.get();
    class_end = class_column.get();
    release_end = release_column.get();
    delta_end = delta_column.get();
    remainder_end = remainder_column.get();
    table.clear();

    // One pass over the events writes the tokens in place and every other per-event column to its own
    // buffer (each pass over a frame's 3.5 MiB of events costs a read of them from memory).
    std::byte* p = buffer.get();
    std::memcpy(p, kCompactMagic, sizeof kCompactMagic);
    p += sizeof kCompactMagic;
    *p++ = static_cast<std::byte>(kCompactVersion);
    p = put_varint(p, n);
    std::byte* const tokens = p;
    // The timestamps by group (compact_internal.h): group g's first bytes (low bytes, or short gaps) at
    // low_at[g], the low bytes of its escaped short gaps at escape_at[g], its high parts in a region of 8
    // bytes per value (z >> 8 is below 2^56: at most 8 varint bytes) from high_at[g].
    std::byte* const timestamp_low = timestamp_column.get();
    std::byte* low_at[kTimestampGroups];
    std::byte* escape_begin[kTimestampGroups];
    std::byte* escape_at[kTimestampGroups];
    std::byte* high_begin[kTimestampGroups];
    std::byte* high_at[kTimestampGroups];
    bool short_gaps[kTimestampGroups];
    {
      std::size_t before = 0;
      for (unsigned g = 0; g < kTimestampGroups; ++g) {
        low_at[g] = timestamp_low + before;
        escape_begin[g] = escape_at[g] = timestamp_low + n + before;
        high_begin[g] = high_at[g] = timestamp_low + 2 * n + 8 * before;
        before += group_count[g];
        short_gaps[g] = group_count[g] != 0 && 16 * group_short[g] >= kShortShare * group_count[g];
      }
    }
    unsigned previous_class = 0;
    std::byte* size_low = size_column.get();
    std::byte* size_high = size_low + sized;
    std::uint64_t previous = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      if (i + kPrefetchAhead < n) table.prefetch(events[i + kPrefetchAhead].addr);
      const std::uint32_t t = thread_of[i];
      auto token = static_cast<unsigned>(kind_byte(e));
      const bool has_old = (token & kKindOldAddr) != 0;
      if (has_old) token |= release(t, e.old_addr) << kReleaseModeShift;
      if (addr_is_release(token & kKindMask)) {
        token |= release(t, e.addr) << kReleaseModeShift;
      } else {
        token |= allocate(t, e.addr, e.size, has_old ? &e.old_addr : nullptr) << kAllocationModeShift;
      }
      tokens[i] = static_cast<std::byte>(token);
      // Each split column: the low bytes first, then the high parts (zstd's entropy coder sees each apart).
      const std::uint64_t gap = e.timestamp - previous;
      const std::uint64_t z = zigzag64(gap);
      previous = e.timestamp;
      const unsigned now = timestamp_class(token & kKindMask);
      const unsigned g = 3 * now + previous_class;
      previous_class = now;
      if (!short_gaps[g]) {
        *low_at[g]++ = static_cast<std::byte>(z);
        high_at[g] = put_varint(high_at[g], z >> 8);
      } else if (gap < kShortEscape) {
        *low_at[g]++ = static_cast<std::byte>(gap);
      } else {
        *low_at[g]++ = std::byte{kShortEscape};
        *escape_at[g]++ = static_cast<std::byte>(z);
        high_at[g] = put_varint(high_at[g], z >> 8);
      }
      if (has_size(token & kKindMask)) {
        *size_low++ = static_cast<std::byte>(e.size);
        size_high = put_varint(size_high, e.size >> 8);
      }
    }
    p += n;
    end_block(p);
    p = put_varint(p, pairs.size());
    for (const std::uint64_t pair : pairs) {
      p = put_varint(p, zigzag32(static_cast<std::int32_t>(pair >> 32)));
      p = put_varint(p, zigzag32(static_cast<std::int32_t>(pair & 0xFFFFFFFFu)));
    }
    end_block(p);
    for (std::size_t i = 0; i < n; ++i) p = put_varint(p, thread_of[i]);
    for (unsigned g = 0; g < kTimestampGroups; ++g) *p++ = static_cast<std::byte>(short_gaps[g] ? 1 : 0);
    end_block(p);
    for (unsigned g = 0; g < kTimestampGroups; ++g) {
      p += group_count[g];
      end_block(p);
    }
    std::memcpy(p - n, timestamp_low, n);
    for (unsigned g = 0; g < kTimestampGroups; ++g) {
      if (short_gaps[g]) {
        const auto escapes = static_cast<std::size_t>(escape_at[g] - escape_begin[g]);
        if (escapes != 0) std::memcpy(p, escape_begin[g], escapes);
        p += escapes;
        end_block(p);
      }
      const auto bytes = static_cast<std::size_t>(high_at[g] - high_begin[g]);
      if (bytes != 0) std::memcpy(p, high_begin[g], bytes);
      p += bytes;
      end_block(p);
    }
    std::memcpy(p, size_column.get(), sized);
    p += sized;
    end_block(p);
    const auto size_high_bytes = static_cast<std::size_t>(size_high - size_column.get()) - sized;
    std::memcpy(p, size_column.get() + sized, size_high_bytes);
    p += size_high_bytes;
    end_block(p);
    p = put_column(p, live_column.get(), live_end);
    end_block(p);
    p = put_column(p, class_column.get(), class_end);
    end_block(p);
    p = put_column(p, release_column.get(), release_end);
    end_block(p);
    p = put_column(p, delta_column.get(), delta_end);
    end_block(p);
    p = put_column(p, remainder_column.get(), remainder_end);
    end_block(p);
    if (with_stacks) {
      p = put_stacks(p, events, first_event);
    } else {
      *p++ = std::byte{0};
    }
    // The content's end is not a block end: the frame ends there.
    const auto size = static_cast<std::size_t>(p - buffer.get());
    if (block_ends != 0 && block_end[block_ends - 1] == size) --block_ends;
    return {buffer.get(), size};
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

std::span<const std::byte> CompactFrameEncoder::encode(std::span<const Event> events) {
  return impl_->encode(events, false, 0);
}
std::span<const std::byte> CompactFrameEncoder::encode(std::span<const Event> events, std::uint64_t stacks_first_event) {
  return impl_->encode(events, true, stacks_first_event);
}
std::span<const std::size_t> CompactFrameEncoder::block_ends() const { return {impl_->block_end, impl_->block_ends}; }
std::size_t CompactFrameEncoder::max_events() const { return impl_->max_events; }
std::size_t CompactFrameEncoder::memory_bytes(std::size_t max_events) {
  // Two addresses per event at most (a Realloc's old_addr and addr).
  return output_bound(max_events) + max_events * Impl::kPerEventBytes + (max_events / 64 + 1) * 8 +
         AddressTable::memory_bytes(2 * max_events) + max_events * kStackBytesPerEvent;
}

}  // namespace memtrack::codec
