// memtrack::unwind_pointer (libmemtrack-attach.so's build of the unwinder): the per-thread record lives in
// memory the caller hands each thread (memtrack_unwind_set_thread_record), not in initial-exec TLS. A thread
// without one captures nothing; with one, captures are the same as libunwind's, on each thread with its own
// record, and a record handed to a new thread after its first owner ended starts afresh.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "memtrack/unwind/unwind.h"
#include "unwind/libunwind_reference.h"

namespace {

constexpr std::size_t kMax = 128;

struct Both {
  std::vector<std::uintptr_t> ours, theirs;
};

// Our capture and libunwind's from the same function; frame 0 differs (each is its own call's return
// address), the rest must agree.
__attribute__((noinline)) Both capture_here() {
  std::uintptr_t frames[kMax];
  void* lu[kMax];
  bool truncated = false;
  const std::size_t n = memtrack_unwind_capture(frames, kMax, 0, &truncated);
  const int m = memtrack::unwind_test::libunwind_backtrace(lu, static_cast<int>(kMax));
  Both b;
  b.ours.assign(frames, frames + n);
  for (int i = 0; i < m; ++i) b.theirs.push_back(reinterpret_cast<std::uintptr_t>(lu[i]));
  asm volatile("" : : : "memory");
  return b;
}

__attribute__((noinline)) Both one_deeper() {
  Both b = capture_here();
  asm volatile("" : : : "memory");
  return b;
}

void expect_like_libunwind(const Both& b) {
  ASSERT_GT(b.ours.size(), 2u);
  ASSERT_EQ(b.ours.size(), b.theirs.size());
  for (std::size_t i = 1; i < b.ours.size(); ++i) EXPECT_EQ(b.ours[i], b.theirs[i]) << "frame " << i;
}

struct alignas(64) Record {
  unsigned char bytes[64 * 1024];
};

TEST(UnwindPointer, NoRecordNoFrames) {
  std::thread([] {
    memtrack_unwind_set_thread_record(nullptr);
    EXPECT_TRUE(capture_here().ours.empty());
  }).join();
}

TEST(UnwindPointer, EachThreadCapturesWithItsOwnRecord) {
  ASSERT_LE(memtrack_unwind_thread_record_bytes(), sizeof(Record));
  std::vector<Record> records(3);
  std::vector<std::thread> threads;
  for (Record& r : records)
    threads.emplace_back([&r] {
      memtrack_unwind_set_thread_record(r.bytes);
      for (int i = 0; i < 100; ++i) {
        expect_like_libunwind(capture_here());  // the second and later: through the record (prefix reuse)
        expect_like_libunwind(one_deeper());
      }
      memtrack_unwind_set_thread_record(nullptr);
    });
  for (std::thread& t : threads) t.join();
  // The first record again, on a new thread: the old thread's stack in it is not taken for this one's.
  std::thread([&] {
    memtrack_unwind_set_thread_record(records[0].bytes);
    expect_like_libunwind(capture_here());
    expect_like_libunwind(one_deeper());
  }).join();
}

}  // namespace
