// The commutative half of a trace's summary: counts by kind and by pid, bytes allocated, brk bytes, the size
// histogram, first and last timestamps. Each frame can count its own events on any thread and merge() adds
// the parts up in any order, with the same result as one add() over the whole trace.
//
// Byte totals are 64-bit and saturate at 2^64-1 instead of wrapping: only hostile input (sizes near 2^64)
// gets there, and a total pinned at the maximum is recognisable where a wrapped one would look plausible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "memtrack/codec/event.h"

namespace memtrack::analysis {

inline constexpr std::size_t kKinds = 9;  // indexed by EventKind value; 0 unused
inline constexpr std::size_t kSizeBuckets = 65;

// Allocation sizes by powers of two: bucket 0 holds size 0, bucket k >= 1 holds [2^(k-1), 2^k).
struct SizeHistogram {
  std::array<std::uint64_t, kSizeBuckets> counts{};

  [[nodiscard]] static std::size_t bucket(std::uint64_t size);
  // The smallest and largest size bucket k holds (both 0 for bucket 0).
  [[nodiscard]] static std::uint64_t bucket_min(std::size_t k);
  [[nodiscard]] static std::uint64_t bucket_max(std::size_t k);

  void add(std::uint64_t size) { ++counts[bucket(size)]; }
  void merge(const SizeHistogram& other);
  [[nodiscard]] std::uint64_t operator[](std::size_t k) const { return counts[k]; }
};

struct EventCounts {
  std::uint64_t events = 0;
  std::array<std::uint64_t, kKinds> by_kind{};
  std::map<std::int32_t, std::uint64_t> by_pid;
  std::uint64_t bytes_allocated = 0;  // sizes of allocating events (Realloc counts its new size)
  std::uint64_t brk_bytes = 0;
  SizeHistogram size_histogram;  // of allocating events
  std::uint64_t first_timestamp = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t last_timestamp = 0;

  void add(std::span<const codec::Event> block);  // any order
  void merge(const EventCounts& other);
};

// Foreign events (codec/foreign_event.h: types this reader does not know) by type name, apart from every
// count above, which they never enter (docs/FORMAT.md, "Readers' rule").
struct ForeignCounts {
  // Distinct names kept, so that hostile input cannot grow the table; events of further names are counted
  // in other_types.
  static constexpr std::size_t kMaxTypes = 64;
  std::uint64_t events = 0;
  std::map<std::string, std::uint64_t, std::less<>> by_type;
  std::uint64_t other_types = 0;

  void add(std::string_view type);
};

}  // namespace memtrack::analysis
