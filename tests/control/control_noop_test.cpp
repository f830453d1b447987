// libmemtrack-control without memtrack (memtrack/control.h): every call is a no-op that allocates nothing,
// counted with the heap counter (which replaces malloc in this executable), for both the static archive
// (this executable) and, through the program tests/integration/programs/control.c, the shared library.
#include <gtest/gtest.h>

#include <cstdlib>

#include "memtrack/control.h"
#include "memtrack/heap_counter.h"

namespace {

TEST(ControlNoop, CallsAllocateNothingAndSayNotRecording) {
  memtrack::heap_counter::start();
  int recording = 0;
  for (int i = 0; i < 100000; ++i) {
    memtrack_region_begin("noop");
    memtrack_pause();
    memtrack_resume();
    memtrack_region_begin(nullptr);
    memtrack_region_end();
    memtrack_region_end();
    recording += memtrack_is_recording();
  }
  const memtrack::heap_counter::Counts c = memtrack::heap_counter::stop();
  EXPECT_EQ(recording, 0);
  EXPECT_EQ(c.allocations, 0);
  EXPECT_EQ(c.allocated_bytes, 0);
  // The counter works here: an allocation in the window is seen (so the zero above can fail).
  memtrack::heap_counter::start();
  void* volatile p = std::malloc(100);
  std::free(p);
  EXPECT_EQ(memtrack::heap_counter::stop().allocations, 1);
}

}  // namespace
