// A test-only LD_PRELOAD library: on every malloc of the program (up to a budget), captures the stack with
// memtrack_unwind_capture and with libunwind's unw_backtrace and compares them. At exit it prints one
// line, "crosscheck: pid=P captures=N mismatches=M frames=F", and for the first mismatch the frame index and
// both addresses with their modules. tests/unwind runs real Debian programs under it: their code has no
// frame pointers and CFI from many compilers and hand-written assembly, which the chain tests do not.
#include <dlfcn.h>
#include <fcntl.h>
#include <libunwind.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "memtrack/unwind/unwind.h"

extern "C" void* __libc_malloc(std::size_t);

namespace {

constexpr int kMax = 256;
constexpr unsigned long kBudget = 200000;  // captures per process: enough for every distinct stack shape

thread_local bool t_inside = false;
unsigned long g_captures = 0, g_mismatches = 0, g_frames = 0;
bool g_reported = false;
char g_first[512];

const char* module_of(std::uintptr_t address) {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(address), &info) && info.dli_fname ? info.dli_fname : "?";
}

__attribute__((noinline)) void crosscheck() {
  std::uintptr_t ours[kMax];
  void* theirs[kMax];
  bool truncated = false;
  const std::size_t n = memtrack_unwind_capture(ours, kMax, 0, &truncated);
  const int m = unw_backtrace(theirs, kMax);
  __atomic_add_fetch(&g_captures, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g_frames, n, __ATOMIC_RELAXED);
  // Frame 0 is each one's own call site in this function; libunwind also ends with a 0 on some stacks.
  std::size_t limit = static_cast<std::size_t>(m);
  while (limit > 0 && theirs[limit - 1] == nullptr) --limit;
  std::size_t diff = 1;
  while (diff < n && diff < limit && ours[diff] == reinterpret_cast<std::uintptr_t>(theirs[diff])) ++diff;
  if (diff == n && diff == limit) return;
  if (__atomic_add_fetch(&g_mismatches, 1, __ATOMIC_RELAXED) == 1) {
    const std::uintptr_t a = diff < n ? ours[diff] : 0;
    const auto b = diff < limit ? reinterpret_cast<std::uintptr_t>(theirs[diff]) : 0;
    std::snprintf(g_first, sizeof(g_first),
                  "first mismatch at frame %zu of %zu/%zu: ours %#lx (%s) libunwind %#lx (%s)", diff, n, limit,
                  static_cast<unsigned long>(a), a ? module_of(a) : "-", static_cast<unsigned long>(b),
                  b ? module_of(b) : "-");
  }
}

// Appended to $MEMTRACK_CROSSCHECK_LOG with one write(2) (programs such as sort and xz close stderr before
// the destructors run).
__attribute__((destructor)) void report() {
  if (g_reported) return;
  g_reported = true;
  const char* path = std::getenv("MEMTRACK_CROSSCHECK_LOG");
  if (path == nullptr) return;
  char line[768];
  const int len = std::snprintf(line, sizeof(line), "crosscheck: pid=%d captures=%lu mismatches=%lu frames=%lu%s%s\n",
                                static_cast<int>(getpid()), g_captures, g_mismatches, g_frames, g_mismatches ? " " : "",
                                g_mismatches ? g_first : "");
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, static_cast<std::size_t>(len)) < 0) std::abort();
  close(fd);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* malloc(std::size_t size) {
  if (!t_inside && __atomic_load_n(&g_captures, __ATOMIC_RELAXED) < kBudget) {
    t_inside = true;
    crosscheck();
    t_inside = false;
  }
  return __libc_malloc(size);
}
