// Hooks for the integration tests. Compiled only into libmemtrack-preload-testhooks.so (built with the tests,
// never installed; runtime/preload/CMakeLists.txt), which a test selects with MEMTRACK_PRELOAD; the shipped
// libmemtrack-preload.so has none of this code. Each hook is off unless its environment variable enables it.
#include <dlfcn.h>
#include <stdlib.h>

#include "resolve.h"

#ifndef MEMTRACK_PRELOAD_TEST_HOOKS
#error "test_hooks.cpp belongs to the test build of the preload only"
#endif

namespace memtrack::preload {

// MEMTRACK_TEST_DLSYM_MISS=1 (Record.DlsymBootstrapAllocationsUseTheArena): glibc 2.36's dlsym allocates
// nothing when every symbol is found, so the bootstrap arena would go unexercised. A failed lookup makes
// dlsym allocate its error message (and free it on the next call) while we are still resolving, which is
// the case the arena exists for; the arena's use is then reported on stderr for the test to check. getenv
// does not allocate.
void bootstrap_test_hook() {
  const char* v = getenv("MEMTRACK_TEST_DLSYM_MISS");
  if (v == nullptr || *v != '1') return;
  (void)dlsym(RTLD_NEXT, "memtrack_test_no_such_symbol");
  (void)dlsym(RTLD_NEXT, "malloc");  // a successful call after a failed one releases the error state
  char digits[24];
  size_t n = arena_bytes_used();
  int i = sizeof digits - 1;
  digits[i] = '\0';
  do {
    digits[--i] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0 && i > 0);
  write_stderr("memtrack: bootstrap arena bytes used: ");
  write_stderr(digits + i);
  write_stderr("\n");
}

}  // namespace memtrack::preload
