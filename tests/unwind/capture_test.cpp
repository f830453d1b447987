// memtrack_unwind_capture against the return addresses each function of a known chain recorded itself,
// against a frame-pointer walk, and against libunwind: through the executable, a linked shared library,
// a dlopen'ed one, a signal handler, truncation, and threads.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "memtrack/unwind/unwind.h"
#include "unwind/chain.h"
#include "unwind/hook_capture.h"
#include "unwind/libunwind_reference.h"

namespace {

using memtrack::unwind_test::Chain;

constexpr std::size_t kMax = 256;

struct Capture {
  std::uintptr_t frames[kMax] = {};
  std::size_t count = 0;
  bool truncated = false;
  void* libunwind[kMax] = {};
  int libunwind_count = 0;
  std::size_t max = kMax;
};

// The leaf every chain ends in: records its own return address, captures, and asks libunwind too.
__attribute__((noinline)) void capture_leaf(Chain* chain) {
  chain->leaf_return = reinterpret_cast<std::uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
  auto* capture = static_cast<Capture*>(chain->arg);
  capture->count = memtrack_unwind_capture(capture->frames, capture->max, 0, &capture->truncated);
  capture->libunwind_count = memtrack::unwind_test::libunwind_backtrace(capture->libunwind, static_cast<int>(kMax));
  asm volatile("" : : "r"(chain) : "memory");
}

std::vector<std::uintptr_t> expected_of(const Chain& chain) {
  std::uintptr_t buffer[memtrack::unwind_test::kMaxChainDepth + 1];
  const std::size_t n = chain.expected(buffer);
  return {buffer, buffer + n};
}

std::vector<std::uintptr_t> captured(const Capture& capture, std::size_t from, std::size_t count) {
  return {capture.frames + from, capture.frames + from + count};
}

// Both unwinders must agree from the leaf's return address to the end of the stack (frame 0 differs:
// each is the address after its own call in the leaf).
void expect_same_as_libunwind(const Capture& capture) {
  ASSERT_GT(capture.libunwind_count, 1);
  ASSERT_EQ(capture.count, static_cast<std::size_t>(capture.libunwind_count));
  for (std::size_t i = 1; i < capture.count; ++i)
    EXPECT_EQ(capture.frames[i], reinterpret_cast<std::uintptr_t>(capture.libunwind[i])) << "frame " << i;
}

void run_and_check(void (*run)(Chain*), int depth) {
  Capture capture;
  Chain chain;
  chain.depth = depth;
  chain.leaf = capture_leaf;
  chain.arg = &capture;
  run(&chain);
  const auto expected = expected_of(chain);
  ASSERT_GE(capture.count, expected.size() + 1);
  EXPECT_EQ(captured(capture, 1, expected.size()), expected);
  EXPECT_FALSE(capture.truncated);
  expect_same_as_libunwind(capture);
}

TEST(UnwindCapture, ExactReturnAddressesWithoutFramePointers) {
  for (int depth : {1, 2, 24, memtrack::unwind_test::kMaxChainDepth}) {
    SCOPED_TRACE(depth);
    run_and_check(memtrack::unwind_test::run_chain, depth);
  }
}

TEST(UnwindCapture, CachedAndUncachedAgree) {
  // The first capture after an invalidation computes every rule; the second, from the same call site,
  // finds them all cached.
  memtrack_unwind_invalidate();
  std::uint64_t misses[2];
  for (auto& m : misses) {
    const auto before = memtrack_unwind_get_stats().misses;
    run_and_check(memtrack::unwind_test::run_chain, 24);
    m = memtrack_unwind_get_stats().misses - before;
  }
  EXPECT_GE(misses[0], 24u);
  EXPECT_EQ(misses[1], 0u);
}

// The same in both tables of the rule cache: a process starts with the small one and moves to the big one
// after 512 rules computed (docs/UNWIND.md).
TEST(UnwindCapture, CachedAndUncachedAgreeInBothTables) {
  for (int round = 0; round < 64 && memtrack_unwind_get_stats().cache_tier == 0; ++round) {
    SCOPED_TRACE(round);
    memtrack_unwind_invalidate();
    std::uint64_t misses[2];
    for (auto& m : misses) {
      const auto before = memtrack_unwind_get_stats().misses;
      run_and_check(memtrack::unwind_test::run_chain, 24);
      m = memtrack_unwind_get_stats().misses - before;
    }
    EXPECT_GE(misses[0], 24u);
    if (memtrack_unwind_get_stats().cache_tier == 0) {  // not the round that moved
      EXPECT_EQ(misses[1], 0u);
    }
  }
  ASSERT_EQ(memtrack_unwind_get_stats().cache_tier, 1u);
  memtrack_unwind_invalidate();
  std::uint64_t misses[2];
  for (auto& m : misses) {
    const auto before = memtrack_unwind_get_stats().misses;
    run_and_check(memtrack::unwind_test::run_chain, 24);
    m = memtrack_unwind_get_stats().misses - before;
  }
  EXPECT_GE(misses[0], 24u);
  EXPECT_EQ(misses[1], 0u);
}

// Whether a capture through a chain of `depth` frames holds the chain's own return addresses (for a fork
// child, which cannot report through gtest).
bool chain_captured_right(int depth) {
  Capture capture;
  Chain chain;
  chain.depth = depth;
  chain.leaf = capture_leaf;
  chain.arg = &capture;
  memtrack::unwind_test::run_chain(&chain);
  const auto expected = expected_of(chain);
  return capture.count >= expected.size() + 1 && captured(capture, 1, expected.size()) == expected &&
         !capture.truncated;
}

// Shared memory for memtrack_unwind_use_shared_rules, in use while the object lives.
class SharedRules {
 public:
  static constexpr std::size_t kBytes = std::size_t{1} << 20;
  SharedRules() : memory_(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {}
  ~SharedRules() {
    memtrack_unwind_use_shared_rules(nullptr, 0);
    if (ok()) munmap(memory_, kBytes);
  }
  SharedRules(const SharedRules&) = delete;
  SharedRules& operator=(const SharedRules&) = delete;
  [[nodiscard]] bool ok() const { return memory_ != MAP_FAILED; }
  [[nodiscard]] std::uint64_t* words() const { return static_cast<std::uint64_t*>(memory_); }
  void use() const { memtrack_unwind_use_shared_rules(memory_, kBytes); }

 private:
  void* memory_;
};

// What one capture through a 24-frame chain moved in the unwinder's counters, its rule cache emptied first.
struct Moved {
  std::uint64_t misses, shared_hits, shared_stores;
};
Moved capture_with_an_empty_cache() {
  memtrack_unwind_invalidate();
  const memtrack_unwind_stats before = memtrack_unwind_get_stats();
  run_and_check(memtrack::unwind_test::run_chain, 24);
  const memtrack_unwind_stats after = memtrack_unwind_get_stats();
  return {after.misses - before.misses, after.shared_hits - before.shared_hits,
          after.shared_stores - before.shared_stores};
}

// Rules shared between processes (memtrack_unwind_use_shared_rules): what one process computed, another takes
// instead of computing it, and unwinds the same stack with it.
TEST(UnwindCapture, RulesComputedInOneProcessAreTakenByAnother) {
  const SharedRules shared;
  ASSERT_TRUE(shared.ok());
  shared.use();
  // This process computes the chain's rules and adds them to the shared ones.
  const Moved parent = capture_with_an_empty_cache();
  EXPECT_GE(parent.misses, 24u);
  EXPECT_GE(parent.shared_stores, 24u);
  EXPECT_EQ(parent.shared_hits, 0u);
  // A child, its own cache emptied, computes none of them: the chain's misses are answered by the shared rules.
  // Only the child's own frames (chain_captured_right and its call site here, which the parent's capture did
  // not pass through) are computed.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    memtrack_unwind_invalidate();
    const memtrack_unwind_stats b = memtrack_unwind_get_stats();
    const bool right = chain_captured_right(24);
    const memtrack_unwind_stats a = memtrack_unwind_get_stats();
    const std::uint64_t misses = a.misses - b.misses, hits = a.shared_hits - b.shared_hits;
    const std::uint64_t computed = misses - hits;
    _exit(!right ? 1 : hits < 24 ? 2 : computed > 3 ? 3 : a.shared_stores - b.shared_stores != computed ? 4 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: wrong frames, 2: too few rules taken, 3: more rules computed, 4: computed rules not stored";
}

// A shared table whose entries all hold other keys (every group full, as a recording's table could become):
// nothing is taken from it or added, and the rules computed here are right.
TEST(UnwindCapture, AFullSharedTableIsPassedBy) {
  const SharedRules shared;
  ASSERT_TRUE(shared.ok());
  for (std::size_t i = 0; i < SharedRules::kBytes / 8; i += 2) {  // (key, value): odd keys no rule has, kCfaRsp
    shared.words()[i] = 0x5555555555555555ull + 2 * i;
    shared.words()[i + 1] = 1;
  }
  shared.use();
  const Moved moved = capture_with_an_empty_cache();
  EXPECT_GE(moved.misses, 24u);
  EXPECT_EQ(moved.shared_hits, 0u);
  EXPECT_EQ(moved.shared_stores, 0u);
}

// Walks the frame-pointer chain from the leaf: [rbp] is the caller's rbp, [rbp + 8] the return address.
__attribute__((noinline, optimize("no-omit-frame-pointer"))) void fp_leaf(Chain* chain) {
  auto* capture = static_cast<Capture*>(chain->arg);
  capture->count = memtrack_unwind_capture(capture->frames, capture->max, 0, &capture->truncated);
  auto* fp = static_cast<std::uintptr_t*>(__builtin_frame_address(0));
  std::uintptr_t* out = reinterpret_cast<std::uintptr_t*>(capture->libunwind);
  int n = 0;
  for (; n <= chain->depth && fp != nullptr; ++n) {
    out[n] = fp[1];
    fp = reinterpret_cast<std::uintptr_t*>(fp[0]);
  }
  capture->libunwind_count = n;
}

TEST(UnwindCapture, MatchesFramePointerWalk) {
  Capture capture;
  Chain chain;
  chain.depth = 24;
  chain.leaf = fp_leaf;
  chain.arg = &capture;
  memtrack::unwind_test::run_chain_fp(&chain);
  ASSERT_EQ(capture.libunwind_count, 25);
  ASSERT_GE(capture.count, 26u);
  for (int i = 0; i < capture.libunwind_count; ++i)
    EXPECT_EQ(capture.frames[i + 1], reinterpret_cast<std::uintptr_t>(capture.libunwind[i])) << "frame " << i;
  // And the levels' own records agree with both.
  Chain copy = chain;
  copy.leaf_return = capture.frames[1];
  EXPECT_EQ(captured(capture, 1, 25), expected_of(copy));
}

TEST(UnwindCapture, ThroughALinkedSharedLibrary) { run_and_check(memtrack_unwind_test_lib_chain, 24); }

TEST(UnwindCapture, ThroughADlopenedLibraryAndAfterItsUnload) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    void* handle = dlopen(MEMTRACK_UNWIND_TEST_DL, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    auto* run = reinterpret_cast<void (*)(Chain*)>(dlsym(handle, "memtrack_unwind_test_lib_chain"));
    ASSERT_NE(run, nullptr);
    ASSERT_NE(run, &memtrack_unwind_test_lib_chain);
    const auto invalidations = memtrack_unwind_get_stats().invalidations;
    run_and_check(run, 12);
    // The capture's misses saw dl_iterate_phdr's counters move.
    EXPECT_GT(memtrack_unwind_get_stats().invalidations, invalidations);
    ASSERT_EQ(dlclose(handle), 0);
    memtrack_unwind_invalidate();
  }
}

TEST(UnwindCapture, SkipDropsInnermostFrames) {
  // Two captures from this function: all frames but the first (each its own call site) are the same.
  std::uintptr_t all[kMax], fewer[kMax];
  bool truncated = true;
  const std::size_t n_all = memtrack_unwind_capture(all, kMax, 0, &truncated);
  const std::size_t n = memtrack_unwind_capture(fewer, kMax, 3, &truncated);
  ASSERT_EQ(n + 3, n_all);
  EXPECT_FALSE(truncated);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(fewer[i], all[i + 3]) << i;
}

TEST(UnwindCapture, DeeperThanMaxIsTruncated) {
  Capture full;
  {
    Chain chain;
    chain.depth = 30;
    chain.leaf = capture_leaf;
    chain.arg = &full;
    memtrack::unwind_test::run_chain(&chain);
  }
  ASSERT_FALSE(full.truncated);
  for (std::size_t max : {std::size_t{0}, std::size_t{1}, std::size_t{10}, full.count - 1, full.count}) {
    SCOPED_TRACE(max);
    Capture capture;
    capture.max = max;
    Chain chain;
    chain.depth = 30;
    chain.leaf = capture_leaf;
    chain.arg = &capture;
    memtrack::unwind_test::run_chain(&chain);
    EXPECT_EQ(capture.count, max);
    EXPECT_EQ(capture.truncated, max < full.count);
    // Frames 1..31 are the leaf's and the levels' return addresses; from 32 on, this test's call sites
    // (which differ between the two captures).
    for (std::size_t i = 1; i < std::min<std::size_t>(max, 32); ++i) EXPECT_EQ(capture.frames[i], full.frames[i]) << i;
  }
}

// The signal test: the handler captures, libunwind too, and the chain below the interrupted raise() must
// appear after the signal frame.
Capture g_signal_capture;

__attribute__((noinline)) void signal_handler(int) {
  Capture& capture = g_signal_capture;
  capture.count = memtrack_unwind_capture(capture.frames, kMax, 0, &capture.truncated);
  capture.libunwind_count = memtrack::unwind_test::libunwind_backtrace(capture.libunwind, static_cast<int>(kMax));
}

__attribute__((noinline)) void raising_leaf(Chain* chain) {
  chain->leaf_return = reinterpret_cast<std::uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
  raise(SIGUSR1);
  asm volatile("" : : "r"(chain) : "memory");
}

TEST(UnwindCapture, ThroughASignalHandlerFrame) {
  struct sigaction action {};
  action.sa_handler = signal_handler;
  sigemptyset(&action.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  Chain chain;
  chain.depth = 10;
  chain.leaf = raising_leaf;
  memtrack::unwind_test::run_chain(&chain);
  sigaction(SIGUSR1, &old, nullptr);

  const Capture& capture = g_signal_capture;
  expect_same_as_libunwind(capture);
  // The chain's addresses follow raise()'s frames, in order.
  const auto expected = expected_of(chain);
  std::size_t at = 0;
  while (at < capture.count && capture.frames[at] != expected[0]) ++at;
  ASSERT_LT(at, capture.count) << "the leaf's return address is not in the signal handler's stack";
  ASSERT_LE(at + expected.size(), capture.count);
  EXPECT_EQ(captured(capture, at, expected.size()), expected);
  // Between the handler and the leaf: __restore_rt, then raise's own frames in libc.
  EXPECT_GE(at, 3u);
}

// Two call sites in two functions of the same shape: the chain below them sits at the same stack
// addresses with the same return addresses, so a capture finds the previous one's frames and must notice
// that the return address further out changed.
__attribute__((noinline)) void call_site_a(Chain* chain) {
  memtrack::unwind_test::run_chain(chain);
  asm volatile("" : : "r"(chain) : "memory");
}
__attribute__((noinline)) void call_site_b(Chain* chain) {
  memtrack::unwind_test::run_chain(chain);
  asm volatile("" : : "r"(chain) : "memory");
}

TEST(UnwindCapture, PrefixReuseNoticesChangedOuterFrames) {
  std::uintptr_t previous = 0;
  int changes = 0;
  for (int round = 0; round < 200; ++round) {
    Capture capture;
    Chain chain;
    chain.depth = 16 + round % 3;
    chain.leaf = capture_leaf;
    chain.arg = &capture;
    (round % 4 < 2 ? call_site_a : call_site_b)(&chain);
    expect_same_as_libunwind(capture);
    // frames[1 + 1 + depth]: run_chain's return address, inside call_site_a or call_site_b.
    const std::uintptr_t site = capture.frames[2 + chain.depth];
    changes += site != previous;
    previous = site;
    if (HasFailure()) break;
  }
  EXPECT_GE(changes, 100);
}

TEST(UnwindCapture, PrefixReuseAgreesWithFullUnwinds) {
  for (int round = 0; round < 300; ++round) {
    const int depth = 1 + (round * 11) % memtrack::unwind_test::kMaxChainDepth;
    Capture with, without;
    for (bool reuse : {true, false}) {
      memtrack_unwind_set_prefix_reuse(reuse);
      Chain chain;
      chain.depth = depth;
      chain.leaf = capture_leaf;
      chain.arg = reuse ? &with : &without;
      (round % 2 ? memtrack::unwind_test::run_chain : memtrack_unwind_test_lib_chain)(&chain);
    }
    memtrack_unwind_set_prefix_reuse(true);
    expect_same_as_libunwind(with);
    expect_same_as_libunwind(without);
    if (HasFailure()) break;
  }
}

// rbp_capture(out, max, truncated, mode): memtrack_unwind_capture(out, max, 0, truncated) from a frame
// whose CFI computes the CFA from rbp (rbp + 16):
//   mode 0: an ordinary frame-pointer frame: the whole stack.
//   mode 1: rbp points at a fake frame record inside the frame whose return address is 0: by the frame's
//           own CFI the stack ends there. Same ip and sp as mode 0, only rbp differs, and it is live (the
//           CFA is computed from it): the prefix record must not reuse mode 0's stack for it.
extern "C" std::size_t rbp_capture(std::uintptr_t* out, std::size_t max, bool* truncated, std::uintptr_t mode);
asm(R"(
  .text
  .p2align 4
  .type rbp_capture, @function
rbp_capture:
  .cfi_startproc
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_offset %rbp, -16
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
  subq $32, %rsp
  testq %rcx, %rcx
  jz 1f
  movq $0, 8(%rsp)
  movq (%rbp), %rax
  movq %rax, (%rsp)
  movq %rsp, %rbp
1:
  movq %rdx, %rcx
  xorl %edx, %edx
  call memtrack_unwind_capture
  leaq 32(%rsp), %rbp
  leave
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size rbp_capture, .-rbp_capture
)");

struct RbpRounds {
  int rounds = 0;
  bool live = false;                  // rbp_capture's modes, else hook_capture with a changing value
  std::vector<std::uintptr_t> first;  // mode 0 / the first capture, reuse on
  int checked = 0;
};

__attribute__((noinline)) void rbp_leaf(Chain* chain) {
  chain->leaf_return = reinterpret_cast<std::uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
  auto* r = static_cast<RbpRounds*>(chain->arg);
  for (int round = 0; round < r->rounds; ++round) {
    std::uintptr_t with[kMax], without[kMax];
    bool truncated = false;
    const std::uintptr_t arg = r->live ? static_cast<std::uintptr_t>(round % 3 == 2) : 0x1000u + round;
    memtrack_unwind_set_prefix_reuse(true);
    const std::size_t n = (r->live ? rbp_capture : hook_capture)(with, kMax, &truncated, arg);
    memtrack_unwind_set_prefix_reuse(false);
    const std::size_t m = (r->live ? rbp_capture : hook_capture)(without, kMax, &truncated, arg);
    memtrack_unwind_set_prefix_reuse(true);
    // Frame 1 is each call's own return address in this function.
    ASSERT_EQ(n, m) << "round " << round;
    if (n > 1) with[1] = without[1] = 0;
    EXPECT_EQ(std::vector<std::uintptr_t>(with, with + n), std::vector<std::uintptr_t>(without, without + m))
        << "round " << round;
    if (round == 0) r->first.assign(with, with + n);
    if (r->live) {
      EXPECT_EQ(n, arg == 1 ? 1u : r->first.size()) << "round " << round;
    }
    ++r->checked;
    if (::testing::Test::HasFailure()) break;
  }
  asm volatile("" : : "r"(chain) : "memory");
}

// The prefix record meets a frame whose rbp changes from call to call (a dead rbp: the frame saved its
// caller's): every capture is still the whole, exact stack.
TEST(UnwindCapture, PrefixReuseThroughAFrameHoldingAChangingRbp) {
  RbpRounds r;
  r.rounds = 200;
  Chain chain;
  chain.depth = 20;
  chain.leaf = rbp_leaf;
  chain.arg = &r;
  memtrack::unwind_test::run_chain(&chain);
  EXPECT_EQ(r.checked, r.rounds);
  const auto expected = expected_of(chain);
  ASSERT_GE(r.first.size(), expected.size() + 2);
  // first[0]: in hook_capture; first[1]: in rbp_leaf after the call; then the chain.
  EXPECT_EQ(std::vector<std::uintptr_t>(r.first.begin() + 2, r.first.begin() + 2 + expected.size()), expected);
}

// A live rbp is compared: with the same ip and sp, a frame whose CFA is computed from a different rbp is
// unwound again (mode 1 ends the stack at once), not taken from the record of mode 0.
TEST(UnwindCapture, PrefixReuseComparesALiveRbp) {
  for (void (*run)(Chain*) : {memtrack::unwind_test::run_chain, memtrack::unwind_test::run_chain_fp}) {
    RbpRounds r;
    r.rounds = 150;
    r.live = true;
    Chain chain;
    chain.depth = 12;
    chain.leaf = rbp_leaf;
    chain.arg = &r;
    run(&chain);
    EXPECT_EQ(r.checked, r.rounds);
    EXPECT_GT(r.first.size(), 14u);
  }
}

// A profiling timer interrupts captures (and the rest of the loop) at random points; the handler's own
// captures must agree with libunwind's, and the interrupted ones must be unharmed.
std::atomic<int> g_handler_captures{0};
std::atomic<int> g_handler_mismatches{0};

void prof_handler(int) {
  std::uintptr_t frames[kMax];
  void* theirs[kMax];
  bool truncated = false;
  const std::size_t n = memtrack_unwind_capture(frames, kMax, 0, &truncated);
  const int m = memtrack::unwind_test::libunwind_backtrace(theirs, static_cast<int>(kMax));
  bool same = n == static_cast<std::size_t>(m) && n > 2;
  for (std::size_t i = 1; same && i < n; ++i) same = frames[i] == reinterpret_cast<std::uintptr_t>(theirs[i]);
  g_handler_captures.fetch_add(1);
  if (!same) g_handler_mismatches.fetch_add(1);
}

TEST(UnwindCapture, SignalsInterruptingCaptures) {
  struct sigaction action {};
  action.sa_handler = prof_handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGPROF, &action, &old), 0);
  itimerval timer{{0, 200}, {0, 200}};
  ASSERT_EQ(setitimer(ITIMER_PROF, &timer, nullptr), 0);
  int failures = 0;
  // At least 2,000 rounds, then on until 200 signals landed in captures: the profiling timer counts CPU time
  // in scheduler ticks, so on a loaded machine a fixed number of rounds (20,000, ~10 ms) could end before the
  // first signal. Bounded at 10 s of wall time, after which the test fails below if none arrived.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int round = 0; round < 2000 || (g_handler_captures.load() < 200 && std::chrono::steady_clock::now() < give_up);
       ++round) {
    Capture capture;
    Chain chain;
    chain.depth = 8 + round % 8;
    chain.leaf = capture_leaf;
    chain.arg = &capture;
    memtrack::unwind_test::run_chain(&chain);
    const auto expected = expected_of(chain);
    if (capture.count < expected.size() + 1 || captured(capture, 1, expected.size()) != expected) ++failures;
  }
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  sigaction(SIGPROF, &old, nullptr);
  EXPECT_EQ(failures, 0);
  EXPECT_GT(g_handler_captures.load(), 0);
  EXPECT_EQ(g_handler_mismatches.load(), 0);
}

// A signal that lands on a PLT stub: plt_stepper sets the trap flag and calls getppid through the
// executable's PLT, so SIGTRAP interrupts each instruction until the handler clears the flag at the first
// one outside the executable (in libc's getppid). Every capture at a trap in the executable must agree
// with libunwind's, the one on the PLT's jmp among them.
extern "C" void plt_stepper();
asm(R"(
  .text
  .p2align 4
  .type plt_stepper, @function
plt_stepper:
  .cfi_startproc
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  pushfq
  .cfi_adjust_cfa_offset 8
  orq $0x100, (%rsp)
  popfq
  .cfi_adjust_cfa_offset -8
  call getppid@PLT
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  ret
  .cfi_endproc
  .size plt_stepper, .-plt_stepper
)");

int g_trap_checked = 0, g_trap_mismatches = 0, g_trap_in_plt = 0;

void trap_handler(int, siginfo_t*, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  const auto ip = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  Dl_info here{}, stepper{};
  dladdr(reinterpret_cast<void*>(ip), &here);
  dladdr(reinterpret_cast<void*>(plt_stepper), &stepper);
  if (here.dli_fbase != stepper.dli_fbase) {
    uc->uc_mcontext.gregs[REG_EFL] &= ~greg_t{0x100};
    return;
  }
  if (here.dli_saddr != reinterpret_cast<void*>(plt_stepper)) ++g_trap_in_plt;
  std::uintptr_t frames[kMax];
  void* theirs[kMax];
  bool truncated = false;
  const std::size_t n = memtrack_unwind_capture(frames, kMax, 0, &truncated);
  const int m = memtrack::unwind_test::libunwind_backtrace(theirs, static_cast<int>(kMax));
  bool same = n == static_cast<std::size_t>(m) && n > 3;
  for (std::size_t i = 1; same && i < n; ++i) same = frames[i] == reinterpret_cast<std::uintptr_t>(theirs[i]);
  ++g_trap_checked;
  if (!same) ++g_trap_mismatches;
}

TEST(UnwindCapture, SignalOnAPltStub) {
  struct sigaction action {};
  action.sa_sigaction = trap_handler;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGTRAP, &action, &old), 0);
  (void)getppid();  // binds the PLT entry: the stepped call goes straight to libc
  plt_stepper();
  sigaction(SIGTRAP, &old, nullptr);
  EXPECT_GE(g_trap_in_plt, 1);
  EXPECT_GE(g_trap_checked, 1);
  EXPECT_EQ(g_trap_mismatches, 0);
}

TEST(UnwindCapture, FallbackThroughLibunwindAgrees) {
  ASSERT_TRUE(memtrack_unwind_init(dlopen, dlsym));
  memtrack_unwind_test_force_fallback(true);
  const auto steps = memtrack_unwind_get_stats().fallback_steps;
  run_and_check(memtrack::unwind_test::run_chain, 24);
  memtrack_unwind_test_force_fallback(false);
  EXPECT_GE(memtrack_unwind_get_stats().fallback_steps - steps, 25u);
}

TEST(UnwindCapture, ConcurrentThreadsAndInvalidations) {
  constexpr int kThreads = 4, kRounds = 2000;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread invalidator([&] {
    while (!stop.load()) {
      memtrack_unwind_invalidate();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        Capture capture;
        Chain chain;
        chain.depth = 1 + (round * 7 + t * 13) % memtrack::unwind_test::kMaxChainDepth;
        chain.leaf = capture_leaf;
        chain.arg = &capture;
        if (round % 2)
          memtrack::unwind_test::run_chain(&chain);
        else
          memtrack_unwind_test_lib_chain(&chain);
        const auto expected = expected_of(chain);
        if (capture.count < expected.size() + 1 || captured(capture, 1, expected.size()) != expected ||
            capture.count != static_cast<std::size_t>(capture.libunwind_count))
          failures.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  stop.store(true);
  invalidator.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
