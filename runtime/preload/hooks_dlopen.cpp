// dlopen: a library loaded at run time may define an allocator (its own API, or malloc itself, reached
// through dlsym'd pointers, which no PLT interposition sees). After each successful dlopen, the images not
// seen yet are scanned and their entry points patched (patch/sites.h) before the program can look any up.
#include <dlfcn.h>

#include <atomic>

#include "patch/sites.h"
#include "resolve.h"

namespace memtrack::preload {
namespace {

using DlopenFn = void* (*)(const char*, int);
constinit std::atomic<DlopenFn> g_real_dlopen{nullptr};

}  // namespace
}  // namespace memtrack::preload

MEMTRACK_EXPORT void* dlopen(const char* file, int mode) {
  using namespace memtrack::preload;
  DlopenFn real = g_real_dlopen.load(std::memory_order_acquire);
  if (real == nullptr) {
    ensure_real();
    real = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
    g_real_dlopen.store(real, std::memory_order_release);
  }
  void* h = real(file, mode);
  if (h != nullptr && (mode & RTLD_NOLOAD) == 0) {
    patch_new_images(true);
    reset_cxx_operators();
  }
  return h;
}
