#include "tsc_clock.h"

#include <sched.h>
#include <time.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace memtrack::runtime {
namespace {

std::uint64_t monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t read_tsc() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

std::string slurp(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

__extension__ typedef __int128 int128;  // GCC and Clang; the shift of a negative value is arithmetic

// Below this much reference time, the rate is not yet known well enough (each pair's TSC is uncertain by
// the width of the bracket around one clock read).
constexpr std::uint64_t kMinBaselineNs = 2'000'000;
// How far from the line through the first CPU's readings another CPU's reading may lie (usable()): a few
// times the bracket of one clock read in a VM, well inside what a timestamp may be off by (RUNTIME.md).
constexpr double kCpuAgreementNs = 2000;
// How long a reference pair is reused (see convert).
constexpr std::uint64_t kRefreshNs = 1'000'000;

}  // namespace

bool TscClock::usable() {
#if !defined(__x86_64__)
  return false;
#else
  const char* choice = std::getenv("MEMTRACK_CLOCK");
  if (choice != nullptr && std::strcmp(choice, "monotonic") == 0) return false;
  const std::string cpuinfo = slurp("/proc/cpuinfo");
  if (cpuinfo.find(" constant_tsc") == std::string::npos || cpuinfo.find(" nonstop_tsc") == std::string::npos)
    return false;
  if (choice != nullptr && std::strcmp(choice, "tsc") == 0) return true;
  const std::string source = slurp("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  if (source == "tsc\n") return true;
  // A KVM guest's clock is the host's TSC scaled (pvclock): linear in the guest's TSC as long as the host
  // keeps it stable, which the guest cannot read from user space. So check what the conversion needs: that
  // every CPU's TSC lies on one line against CLOCK_MONOTONIC.
  return source == "kvm-clock\n" && (cpus_agree() || cpus_agree() || cpus_agree());  // a preempted read fails one
#endif
}

bool TscClock::cpus_agree() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.empty()) return false;
  // The first CPU's pair before and after the others' gives the line; each other CPU's pair must lie on it.
  std::vector<Pair> pairs;
  const auto on = [&](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return false;
    pairs.push_back(now());
    return true;
  };
  bool ok = on(cpus.front());
  for (std::size_t i = 1; ok && i < cpus.size(); ++i) ok = on(cpus[i]);
  if (ok) {
    // A baseline of a millisecond at least, so the line's slope is known to a few parts per 10,000.
    const std::uint64_t start = pairs.front().mono;
    while (monotonic_ns() - start < kMinBaselineNs / 2) sched_yield();
    ok = on(cpus.front());
  }
  sched_setaffinity(0, sizeof allowed, &allowed);
  if (!ok) return false;
  const Pair first = pairs.front(), last = pairs.back();
  if (last.tsc <= first.tsc || last.mono <= first.mono) return false;
  const double ns_per_tick = static_cast<double>(last.mono - first.mono) / static_cast<double>(last.tsc - first.tsc);
  for (const Pair& p : pairs) {
    const double predicted =
        static_cast<double>(first.mono) + (static_cast<double>(p.tsc) - static_cast<double>(first.tsc)) * ns_per_tick;
    if (std::fabs(predicted - static_cast<double>(p.mono)) > kCpuAgreementNs) return false;
  }
  return true;
}

TscClock::Pair TscClock::now() {
  // The TSC halfway between two reads that bracket the clock_gettime call; of a few tries, the tightest
  // bracket (a VM or an interrupt can stretch one by microseconds, which would skew the rate).
  Pair best{};
  std::uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t before = read_tsc();
    const std::uint64_t mono = monotonic_ns();
    const std::uint64_t after = read_tsc();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, mono};
    }
  }
  return best;
}

TscClock::TscClock() : origin_(now()) {}

void TscClock::convert(std::span<codec::Event> events) {
  // A new reference pair (eight clock reads) at most every kRefreshNs of TSC time: a reader that keeps up
  // with the program converts many small batches, and reading the clocks for each cost more than the
  // conversion. Between refreshes the last pair and rate are reused; the rate is known to a few parts per
  // million once the baseline is long, so a pair at most 1 ms old adds nanoseconds of error.
  if (mult_ == 0 || read_tsc() - ref_.tsc > refresh_ticks_) refresh();
  for (codec::Event& e : events) {
    const auto ticks = static_cast<std::int64_t>(e.timestamp - ref_.tsc);  // negative: made before `ref_`
    const auto offset = static_cast<std::int64_t>((static_cast<int128>(ticks) * mult_) >> 32);
    e.timestamp = ref_.mono + static_cast<std::uint64_t>(offset);
  }
}

void TscClock::refresh() {
  Pair ref = now();
  if (ref.mono - origin_.mono < kMinBaselineNs) {
    // Only at the very start of a recording: wait until the rate can be measured.
    const std::uint64_t wait = kMinBaselineNs - (ref.mono - origin_.mono);
    struct timespec ts = {0, static_cast<long>(wait)};
    nanosleep(&ts, nullptr);
    ref = now();
  }
  // Nanoseconds per tick in 32.32 fixed point: one multiply per event, no floating-point rounding calls.
  const double ns_per_tick = static_cast<double>(ref.mono - origin_.mono) / static_cast<double>(ref.tsc - origin_.tsc);
  mult_ = static_cast<std::int64_t>(ns_per_tick * 4294967296.0);
  refresh_ticks_ = static_cast<std::uint64_t>(static_cast<double>(kRefreshNs) / ns_per_tick);
  ref_ = ref;
}

}  // namespace memtrack::runtime
