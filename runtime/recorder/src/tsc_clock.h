// Converts the raw TSC values producers write as timestamps (ring.h, timestamp_tsc) into CLOCK_MONOTONIC
// nanoseconds, by linear interpolation between reference pairs (TSC, CLOCK_MONOTONIC) the recorder takes:
// one when recording starts, then one per converted batch at most every millisecond. The rate is measured
// over the whole run so far, so it follows the kernel's own (NTP-slewed) rate; events are converted
// milliseconds after they were made, so the error is that of one clock_gettime read (tens of nanoseconds).
#pragma once

#include <cstdint>
#include <span>

#include "memtrack/codec/event.h"

namespace memtrack::runtime {

class TscClock {
 public:
  // True where the CPU's TSC is invariant (constant_tsc and nonstop_tsc) and the kernel's CLOCK_MONOTONIC
  // comes from it: clocksource "tsc", or "kvm-clock" (a KVM guest: the host's TSC, scaled) when every CPU the
  // recorder may run on reads a TSC on one line against CLOCK_MONOTONIC (cpus_agree: pins itself to each in
  // turn, about a millisecond). Then TSC values are comparable across CPUs and processes. The environment
  // variable MEMTRACK_CLOCK=monotonic turns it off (producers then call clock_gettime); MEMTRACK_CLOCK=tsc
  // skips the clocksource's test (the invariant TSC is still required).
  static bool usable();

  TscClock();
  // Rewrites every event's timestamp from TSC ticks to CLOCK_MONOTONIC nanoseconds.
  void convert(std::span<codec::Event> events);

 private:
  struct Pair {
    std::uint64_t tsc;
    std::uint64_t mono;
  };
  static Pair now();
  static bool cpus_agree();
  void refresh();
  Pair origin_;
  Pair ref_{};                       // the latest reference pair
  std::int64_t mult_ = 0;            // ns per tick, 32.32 fixed point; 0 until the first refresh
  std::uint64_t refresh_ticks_ = 0;  // TSC ticks after which ref_ is renewed
};

}  // namespace memtrack::runtime
