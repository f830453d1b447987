// The distribution is documented in the header; keep the two in step.
#include "memtrack/workload/realistic_events.h"

#include <algorithm>

namespace memtrack::workload {
namespace {
constexpr std::int32_t kPid = 4242;
}  // namespace

codec::Event EventGenerator::next() {
  using codec::EventKind;
  timestamp_ += 20 + rand() % 900;
  const std::int32_t pid = (rand() % 16 == 0) ? kPid + 1 : kPid;
  const std::int32_t tid = pid + static_cast<std::int32_t>(rand() % 6);
  const std::uint64_t roll = rand() % 1000;

  if (roll < 440 || live_.empty()) return alloc(EventKind::Malloc, pid, tid, small_size());
  if (roll < 880) {
    const std::uint64_t addr = take_live();
    return codec::make_event(EventKind::Free, pid, tid, timestamp_, addr);
  }
  if (roll < 940) {
    const std::uint64_t size = small_size() * 2;
    if (rand() % 10 == 0) return alloc(EventKind::Realloc, pid, tid, size);  // realloc(NULL, size)
    const std::uint64_t old_addr = take_live();
    const std::uint64_t addr = new_heap_addr(size);
    live_.push_back(addr);
    return codec::make_realloc(pid, tid, timestamp_, addr, old_addr, size);
  }
  if (roll < 975) return alloc(EventKind::Calloc, pid, tid, small_size() * (1 + rand() % 8));
  if (roll < 988) return alloc(EventKind::AlignedAlloc, pid, tid, 64u << (rand() % 6));
  if (roll < 994) {
    mmap_top_ -= 1u << 20;
    return codec::make_event(EventKind::Mmap, pid, tid, timestamp_, mmap_top_, (1u + rand() % 16) << 16);
  }
  if (roll < 998) return codec::make_event(EventKind::Munmap, pid, tid, timestamp_, mmap_top_, 1u << 16);
  brk_ += 132u << 10;
  return codec::make_event(EventKind::Brk, pid, tid, timestamp_, brk_, 132u << 10);
}

std::vector<codec::Event> EventGenerator::take(std::size_t n) {
  std::vector<codec::Event> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(next());
  return out;
}

std::uint64_t EventGenerator::rand() {  // splitmix64: tiny, fast, the same everywhere
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t EventGenerator::small_size() {
  const std::uint64_t r = rand() % 100;
  if (r < 70) return 8 + rand() % 121;
  if (r < 97) return 129 + rand() % 3968;
  return 4096 + rand() % (256u << 10);
}

std::uint64_t EventGenerator::new_heap_addr(std::uint64_t size) {
  const std::uint64_t addr = heap_;
  heap_ += (size + 31) & ~std::uint64_t{15};
  return addr;
}

codec::Event EventGenerator::alloc(codec::EventKind kind, std::int32_t pid, std::int32_t tid, std::uint64_t size) {
  const std::uint64_t addr = new_heap_addr(size);
  live_.push_back(addr);
  return codec::make_event(kind, pid, tid, timestamp_, addr, size);
}

// Frees mostly recent blocks (LIFO-ish, as real programs do) and sometimes an old one.
std::uint64_t EventGenerator::take_live() {
  const std::size_t back = live_.size() - 1;
  const std::size_t i = (rand() % 4 != 0) ? back - static_cast<std::size_t>(rand() % std::min<std::size_t>(8, back + 1))
                                          : static_cast<std::size_t>(rand() % live_.size());
  const std::uint64_t addr = live_[i];
  live_[i] = live_.back();
  live_.pop_back();
  return addr;
}

std::vector<codec::Event> realistic_events(std::size_t n, std::uint64_t seed) { return EventGenerator(seed).take(n); }

}  // namespace memtrack::workload
