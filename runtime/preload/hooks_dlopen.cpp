// dlopen: a library loaded at run time may define an allocator (its own API, or malloc itself, reached
// through dlsym'd pointers, which no PLT interposition sees). After each successful dlopen, the images not
// seen yet are scanned and their entry points patched (patch/sites.h) before the program can look any up.
//
// Interposing dlopen changes one thing the program can see: glibc finds "the caller" from dlopen's return
// address, and the caller's DT_RUNPATH/DT_RPATH and $ORIGIN decide where a name without a slash is searched.
// Called from here, the caller would be this library (no RUNPATH, $ORIGIN = our directory), and a program
// that dlopens "libplugin.so" from its own RUNPATH (common with $ORIGIN/../lib) would fail under memtrack
// only. So the hook searches the real caller's paths itself, in glibc's order (ld.so(8)), and hands glibc
// the path it finds; everything else (LD_LIBRARY_PATH, the cache, the default directories, names already
// loaded) glibc still decides, with the same result it would give the caller.
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "patch/sites.h"
#include "resolve.h"
#include "stacks.h"

namespace memtrack::preload {
namespace {

using DlopenFn = void* (*)(const char*, int);
using DlcloseFn = int (*)(void*);
constinit std::atomic<void*> g_real_dlopen{nullptr};
constinit std::atomic<void*> g_real_dlclose{nullptr};

// The caller's DT_RUNPATH or DT_RPATH (which glibc uses only without a RUNPATH): the string, and whether
// it is a RUNPATH. glibc has relocated the d_ptr entries of a loaded object's dynamic section in place.
struct SearchPath {
  const char* dirs = nullptr;
  bool runpath = false;
};

SearchPath search_path_of(const link_map* lm) {
  SearchPath out;
  if (lm == nullptr || lm->l_ld == nullptr) return out;
  const char* strtab = nullptr;
  ElfW(Xword) runpath = 0, rpath = 0;
  bool has_runpath = false, has_rpath = false;
  for (const ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(d->d_un.d_ptr);
    if (d->d_tag == DT_RUNPATH) runpath = d->d_un.d_val, has_runpath = true;
    if (d->d_tag == DT_RPATH) rpath = d->d_un.d_val, has_rpath = true;
  }
  if (strtab == nullptr) return out;
  if (has_runpath) return {strtab + runpath, true};
  if (has_rpath) return {strtab + rpath, false};
  return out;
}

// The directory $ORIGIN stands for: the caller's file's directory (the executable's has an empty l_name).
bool origin_of(const link_map* lm, char* out, size_t cap) {
  size_t n = 0;
  if (lm->l_name != nullptr && lm->l_name[0] == '/') {
    n = strlen(lm->l_name);
    if (n >= cap) return false;
    memcpy(out, lm->l_name, n);
  } else {
    const long r = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", out, cap - 1);
    if (r <= 0) return false;
    n = static_cast<size_t>(r);
  }
  while (n > 0 && out[n - 1] != '/') --n;
  if (n > 1) --n;  // keep "/" for a file in the root
  out[n] = '\0';
  return true;
}

// Appends `s` to out[*n..cap); false when it does not fit.
bool append(char* out, size_t cap, size_t* n, const char* s, size_t len) {
  if (*n + len >= cap) return false;
  memcpy(out + *n, s, len);
  *n += len;
  out[*n] = '\0';
  return true;
}

// Expands $ORIGIN / ${ORIGIN} in [s, s+len) into out. Other dynamic string tokens ($LIB, $PLATFORM) are
// left to glibc: false, and the caller falls back to glibc's own search.
bool expand(const char* s, size_t len, const link_map* lm, char* out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < len;) {
    if (s[i] != '$') {
      if (!append(out, cap, &n, s + i, 1)) return false;
      ++i;
      continue;
    }
    size_t skip = 0;
    if (len - i >= 7 && memcmp(s + i, "$ORIGIN", 7) == 0) skip = 7;
    if (len - i >= 9 && memcmp(s + i, "${ORIGIN}", 9) == 0) skip = 9;
    if (skip == 0) return false;
    char origin[PATH_MAX];
    if (!origin_of(lm, origin, sizeof origin) || !append(out, cap, &n, origin, strlen(origin))) return false;
    i += skip;
  }
  return true;
}

bool is_file(const char* path) {
  const long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  syscall(SYS_close, fd);
  return true;
}

// The path the caller's own search would open for `file`, written to `out`; false when glibc's search from
// here finds the same thing (no caller paths apply, the name is already loaded, LD_LIBRARY_PATH comes first)
// or nothing is found in the caller's directories.
bool caller_path(const char* file, const void* return_address, DlopenFn real, DlcloseFn real_close, char* out,
                 size_t cap) {
  if (file == nullptr || file[0] == '\0') return false;
  Dl_info info;
  link_map* lm = nullptr;
  if (dladdr1(return_address, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0 || lm == nullptr)
    return false;
  const bool has_slash = strchr(file, '/') != nullptr;
  if (has_slash) {
    // A path: only $ORIGIN in it depends on the caller.
    return strchr(file, '$') != nullptr && expand(file, strlen(file), lm, out, cap);
  }
  const SearchPath sp = search_path_of(lm);
  if (sp.dirs == nullptr) return false;  // searched as from here: the executable's RPATH, LD_LIBRARY_PATH, ...
  // A name already loaded (by its name or soname) is found before any search.
  if (void* h = real(file, RTLD_LAZY | RTLD_NOLOAD)) {
    real_close(h);
    return false;
  }
  if (sp.runpath) {
    // RUNPATH comes after LD_LIBRARY_PATH: a match there is what glibc finds from here too.
    const char* llp = getenv("LD_LIBRARY_PATH");
    for (const char* d = llp; d != nullptr && *d != '\0';) {
      const size_t len = strcspn(d, ":;");
      char path[PATH_MAX];
      if (len > 0 && expand(d, len, lm, path, sizeof path)) {
        size_t n = strlen(path);
        if (append(path, sizeof path, &n, "/", 1) && append(path, sizeof path, &n, file, strlen(file)) &&
            is_file(path))
          return false;
      }
      d += len;
      if (*d != '\0') ++d;
    }
  }
  for (const char* d = sp.dirs; *d != '\0';) {
    const size_t len = strcspn(d, ":");
    if (len > 0 && expand(d, len, lm, out, cap)) {
      size_t n = strlen(out);
      if (append(out, cap, &n, "/", 1) && append(out, cap, &n, file, strlen(file)) && is_file(out)) return true;
    }
    d += len;
    if (*d != '\0') ++d;
  }
  return false;
}

}  // namespace

void* real_dlopen(const char* file, int mode) { return next_fn<DlopenFn>(g_real_dlopen, "dlopen")(file, mode); }

}  // namespace memtrack::preload

MEMTRACK_EXPORT void* dlopen(const char* file, int mode) {
  using namespace memtrack::preload;
  const void* return_address = __builtin_return_address(0);
  const auto real = next_fn<DlopenFn>(g_real_dlopen, "dlopen");
  const auto real_close = next_fn<DlcloseFn>(g_real_dlclose, "dlclose");
  stacks_load_fallback_at_dlopen();  // the unwinder's fallback, where the program takes the loader's locks anyway
  char path[PATH_MAX];
  const bool found = caller_path(file, return_address, real, real_close, path, sizeof path);
  void* h = real(found ? path : file, mode);
  if (h != nullptr && (mode & RTLD_NOLOAD) == 0) {
    patch_new_images(true);
    reset_cxx_operators();
  }
  return h;
}
