// SeenProcesses (the recorder's process liveness books): every pid of the events, whatever their kind, once.
#include "processes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

using memtrack::codec::Event;
using memtrack::codec::EventKind;
using memtrack::codec::make_event;
using memtrack::runtime::SeenProcesses;

TEST(SeenProcesses, CountsEveryPidOnceWhateverTheKind) {
  SeenProcesses seen;
  EXPECT_EQ(seen.count(), 0u);
  const std::vector<Event> events = {
      make_event(EventKind::Malloc, 1, 1, 0, 0x1000, 100),   make_event(EventKind::Brk, 3, 3, 0, 0x5000, 4096),
      make_event(EventKind::Free, 1, 2, 0, 0x1000),  // another thread of pid 1
      make_event(EventKind::Mmap, 2, 2, 0, 0x9000, 1 << 20), make_event(EventKind::Free, 1, 1, 0, 0x1000),
  };
  seen.add(events);
  seen.add(std::span(events).first(1));  // pid 1 again, across batches
  EXPECT_EQ(seen.count(), 3u);
  std::vector<std::int32_t> pids = seen.pids();
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<std::int32_t>{1, 2, 3}));
}

}  // namespace
