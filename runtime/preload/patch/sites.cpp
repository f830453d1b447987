// Finding allocator entry points by name in loaded images and hooking them (sites.h, patch.h).
//
// Symbols come from each image's file: .symtab when it has one (an executable that is not stripped names
// its statically linked allocator there), else .dynsym, each name of the tables looked up through the
// file's .gnu.hash (gnu_hash.h) when it has one. The file is mapped read-only with a raw mmap (not an event)
// and unmapped after: only the pages read are faulted in. Each patched function is a "site" with its own
// hook (an instance of site_hook below) and trampoline; aliases (mimalloc's malloc is mi_malloc) are one site.
#include "sites.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <utility>

#include "../gnu_hash.h"
#include "../resolve.h"
#include "../ring_client.h"
#include "../stacks.h"
#include "patch.h"

namespace memtrack::preload {
namespace {

using K = runtime::RingEventKind;

// ---- Sites and their hooks ---------------------------------------------------------------------------------

using Fn6 = uintptr_t (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

struct Site {
  std::atomic<uintptr_t> original;  // the trampoline; set before the entry jumps to the hook
  uintptr_t entry;
  uintptr_t twin;  // a throwing entry's nothrow twin (its entry: patched or not, calling it is right)
  const EntrySpec* spec;
  uint8_t saved[8];  // the entry's first bytes before the patch (restore_entry, `memtrack attach`'s detach)
  uint8_t saved_len;
  bool restored;
};

constexpr int kMaxSites = 256;
constinit Site g_sites[kMaxSites] = {};
constinit int g_site_count = 0;  // written under the image-scan lock only

struct NothrowTag {};
constinit const NothrowTag kNothrowTag{};

inline uintptr_t call(Fn6 f, const uintptr_t* a) { return f(a[0], a[1], a[2], a[3], a[4], a[5]); }

inline uint64_t size_of(const EntrySpec& s, const uintptr_t* a) {
  if (s.size_a < 0) return 0;
  uint64_t n = a[s.size_a];
  if (s.size_b >= 0) n *= a[s.size_b];
  return n;
}

// The outermost call of a patched entry: the call and its one event.
uintptr_t run_site(const Site& site, uintptr_t* a) {
  const EntrySpec& s = *site.spec;
  const Fn6 orig = reinterpret_cast<Fn6>(site.original.load(std::memory_order_acquire));
  switch (s.rule) {
    case Rule::Alloc:
    case Rule::Mallocx:
    case Rule::Strdup: {
      uintptr_t r;
      {
        EntryScope scope;
        if (site.twin != 0) {
          uintptr_t b[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
          if (s.twin_tag >= 0) b[s.twin_tag] = reinterpret_cast<uintptr_t>(&kNothrowTag);
          r = call(reinterpret_cast<Fn6>(site.twin), b);
        } else {
          r = call(orig, a);
        }
        if (r != 0) {
          K kind = s.kind;
          uint64_t n = size_of(s, a);
          if (s.rule == Rule::Mallocx) {
            kind = (a[1] & 0x3f) != 0 ? K::AlignedAlloc : (a[1] & 0x40) != 0 ? K::Calloc : K::Malloc;
          } else if (s.rule == Rule::Strdup) {
            n = strlen(reinterpret_cast<const char*>(r)) + 1;
          }
          record(kind, reinterpret_cast<void*>(r), n, capture_stack());
          return r;
        }
        if (site.twin == 0) return r;
      }
      return call(orig, a);  // the throwing entry, outside any scope: throws (see hooks_cxx.cpp)
    }
    case Rule::PosixMemalign: {
      EntryScope scope;
      const uintptr_t r = call(orig, a);
      if (static_cast<int>(r) == 0)
        record(K::AlignedAlloc, *reinterpret_cast<void**>(a[0]), size_of(s, a), capture_stack());
      return r;
    }
    case Rule::Realloc:
    case Rule::InPlaceSize:
    case Rule::InPlacePtr: {
      void* p = reinterpret_cast<void*>(a[s.ptr]);
      const uint64_t n = size_of(s, a);
      const Fn6 f = site.twin != 0 ? reinterpret_cast<Fn6>(site.twin) : orig;
      uintptr_t r;
      {
        EntryScope scope;
        if (p == nullptr) {
          r = call(f, a);
          if (r != 0) record(K::Realloc, reinterpret_cast<void*>(r), n, capture_stack());
        } else {
          // As realloc_impl: the stack, then the ticket before the old block can be released, filled after.
          const uint32_t stack = capture_stack();
          Ticket tk;
          const bool recording = begin_event(tk);
          r = call(f, a);
          const bool moved = s.rule == Rule::Realloc ? r != 0 : s.rule == Rule::InPlacePtr ? r != 0 : r >= n;
          if (recording) {
            if (moved)
              commit_realloc(tk, p, s.rule == Rule::Realloc ? reinterpret_cast<void*>(r) : p, n, stack);
            else if (s.rule == Rule::Realloc && n == 0)
              commit_event(tk, K::Free, p, 0);
            else
              commit_nothing(tk);
          }
        }
        if (r != 0 || site.twin == 0) return r;
      }
      return call(orig, a);
    }
    case Rule::Mmap: {
      EntryScope scope;
      const uintptr_t r = call(orig, a);
      if (r != reinterpret_cast<uintptr_t>(MAP_FAILED))
        record(K::Mmap, reinterpret_cast<void*>(r), a[1], capture_stack());
      return r;
    }
    case Rule::Munmap: {
      EntryScope scope;
      if (munmap_is_event(a[0], a[1])) record(K::Munmap, reinterpret_cast<void*>(a[0]), a[1]);
      return call(orig, a);
    }
    case Rule::Sbrk: {
      EntryScope scope;
      const uintptr_t r = call(orig, a);
      const auto inc = static_cast<intptr_t>(a[0]);
      if (r != ~uintptr_t{0} && inc != 0)
        record(K::Brk, reinterpret_cast<void*>(r + a[0]),
               inc > 0 ? static_cast<uint64_t>(inc) : static_cast<uint64_t>(-inc), capture_stack());
      return r;
    }
    case Rule::Free: {
      void* p = reinterpret_cast<void*>(a[s.ptr]);
      if (p != nullptr && in_arena(p)) return 0;
      EntryScope scope;
      if (p != nullptr) record(K::Free, p, 0);
      return call(orig, a);
    }
  }
  return call(orig, a);
}

template <int I>
uintptr_t site_hook(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4, uintptr_t a5) {
  const Site& site = g_sites[I];
  if (in_entry()) return reinterpret_cast<Fn6>(site.original.load(std::memory_order_relaxed))(a0, a1, a2, a3, a4, a5);
  uintptr_t a[6] = {a0, a1, a2, a3, a4, a5};
  return run_site(site, a);
}

template <int... I>
constexpr auto make_hooks(std::integer_sequence<int, I...>) {
  struct Hooks {
    Fn6 fn[sizeof...(I)];
  };
  return Hooks{{&site_hook<I>...}};
}
constexpr auto kHooks = make_hooks(std::make_integer_sequence<int, kMaxSites>{});

// ---- Images ------------------------------------------------------------------------------------------------

constexpr int kMaxImages = 512;
constinit uintptr_t g_scanned[kMaxImages] =
    {};  // the load bias of every image scanned (0 is the main one's, if not PIE)
constinit int g_scanned_count = 0;
constinit bool g_main_scanned = false;
constinit std::atomic_flag g_scan_lock = ATOMIC_FLAG_INIT;

bool scanned(uintptr_t bias) {
  for (int i = 0; i < g_scanned_count; ++i)
    if (g_scanned[i] == bias) return true;
  return false;
}

const char* basename_of(const char* path) {
  const char* b = path;
  for (const char* c = path; *c; ++c)
    if (*c == '/') b = c + 1;
  return b;
}

// The C runtime, the loader and the preload's own libraries: nothing to hook (the C library's malloc is
// interposed, and patching it would hook the preload's own real calls).
bool skipped(const char* path) {
  const char* b = basename_of(path);
  return starts_with(b, "libc.so") || starts_with(b, "ld-linux") || starts_with(b, "libZydis") ||
         starts_with(b, "libZycore") || starts_with(b, "linux-vdso") || starts_with(b, "libmemtrack-preload") ||
         starts_with(b, "libmemtrack-attach") || starts_with(b, "libstdc++.so") || starts_with(b, "libgcc_s") ||
         starts_with(b, "libm.so");
}

// `memtrack attach`: the PLT is bound already, so the C library's and libstdc++'s entries are patched too;
// only the loader, the preload and its own libraries are left alone.
bool skipped_when_attached(const char* path) {
  const char* b = basename_of(path);
  return starts_with(b, "ld-linux") || starts_with(b, "libZydis") || starts_with(b, "libZycore") ||
         starts_with(b, "linux-vdso") || starts_with(b, "libmemtrack-preload") || starts_with(b, "libmemtrack-attach");
}

struct Image {
  uintptr_t bias;
  const char* path;
  bool main;
};

// The image's path as the user knows it ("/proc/self/exe" is ours for the main image).
const char* shown_path(const char* path, char* buf, size_t cap) {
  if (strcmp(path, "/proc/self/exe") != 0) return path;
  const long r = syscall(SYS_readlinkat, AT_FDCWD, path, buf, cap - 1);
  if (r <= 0) return path;
  buf[r] = '\0';
  return buf;
}

void report(const char* name, const char* path, const char* why) {
  char exe[PATH_MAX];
  say("cannot hook ", name, " in ", shown_path(path, exe, sizeof exe), ": ", why, "; its calls are not recorded");
}

// A throwing operator new (or mi_new, tc_new) left unpatched is not an unrecorded entry in general: every
// call still runs it, and what it calls is recorded if hooked. libstdc++'s (an executable linked with
// -static-libstdc++: gcc's cc1) calls malloc, interposed, so each call is one Malloc event as usual. So the
// note is given only when the image can reach no hooked malloc: it neither imports malloc (then the PLT
// reaches the preload's) nor defines one that is hooked. An image that imports malloc but whose operator
// new allocates from a pool of its own would be missed silently; no program seen so far does that.
void report_no_twin(const char* name, const char* path) {
  char exe[PATH_MAX];
  say(name, " in ", shown_path(path, exe, sizeof exe),
      " is not hooked (its nothrow twin, needed to hook it safely, is not defined beside it) and the image "
      "calls no hooked malloc: its calls are not recorded");
}

struct Found {
  const EntrySpec* spec;
  uintptr_t addr;
  size_t size;
};

// The C library's functions hooked besides the allocators under `memtrack attach` (sites.h, ExtraEntry), and
// the entries patched for them, with their original bytes for the detach.
constexpr int kMaxExtra = 8;
constinit const ExtraEntry* g_extra = nullptr;
constinit int g_extra_count = 0;
struct ExtraSite {
  uintptr_t entry;
  uint8_t saved[8];
  uint8_t saved_len;
  bool restored;
};
constinit ExtraSite g_extra_sites[kMaxExtra] = {};
constinit int g_extra_site_count = 0;

int extra_index(const char* name) {
  for (int i = 0; i < g_extra_count; ++i)
    if (strcmp(g_extra[i].name, name) == 0) return i;
  return -1;
}

// The lowest address above `addr` where the symbol table has a symbol (patch_entry's `limit`).
uintptr_t next_symbol(const Elf64_Sym* syms, size_t nsyms, uintptr_t bias, uintptr_t addr) {
  uintptr_t limit = ~uintptr_t{0};
  for (size_t k = 0; k < nsyms; ++k) {
    const Elf64_Sym& s = syms[k];
    if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
    const uintptr_t at = bias + s.st_value;
    if (at > addr && at < limit) limit = at;
  }
  return limit;
}

// Patches the extra entries found in the C library's image (sites.h, ExtraEntry).
void patch_extra(const Image& im, const Found* found, const int* which, int n, const Elf64_Sym* syms, size_t nsyms) {
  for (int i = 0; i < n; ++i) {
    const Found& f = found[i];
    const ExtraEntry& e = g_extra[which[i]];
    bool dup = false;
    for (int j = 0; j < g_extra_site_count; ++j) dup = dup || g_extra_sites[j].entry == f.addr;
    if (dup || g_extra_site_count == kMaxExtra) continue;
    ExtraSite& site = g_extra_sites[g_extra_site_count];
    site.entry = f.addr;
    site.saved_len = static_cast<uint8_t>(patched_bytes(f.addr, f.size));
    memcpy(site.saved, reinterpret_cast<const void*>(f.addr), site.saved_len);
    site.restored = false;
    const uintptr_t limit = needs_padding(f.addr, f.size) ? next_symbol(syms, nsyms, im.bias, f.addr) : 0;
    uintptr_t original = 0;
    const char* why = patch_entry(f.addr, f.size, limit, e.hook, &original);
    if (why != nullptr) {
      say("cannot hook ", e.name, " in ", im.path, ": ", why, "; the images it starts are not recorded");
      continue;
    }
    // Before the entry's jump is written: under attach the writes wait for memtrack_attach_commit.
    e.original->store(reinterpret_cast<void*>(original), std::memory_order_release);
    ++g_extra_site_count;
  }
}

// Calls f(const EntrySpec&) for every entry of the tables (the standard names only when `standard`), in
// order, until f returns false.
template <typename F>
void for_each_entry(bool standard, F&& f) {
  const EntryTable* tables[] = {&kJemallocEntries, &kMimallocEntries, &kTcmallocEntries, &kStandardEntries};
  for (const EntryTable* t : tables) {
    if (t->standard && !standard) continue;
    for (size_t i = 0; i < t->count; ++i)
      if (!f(t->specs[i])) return;
  }
}

const EntrySpec* lookup(const char* name, bool standard) {
  const EntrySpec* found = nullptr;
  for_each_entry(standard, [&](const EntrySpec& spec) {
    if (strcmp(spec.name, name) == 0) found = &spec;
    return found == nullptr;
  });
  return found;
}

// First-character filter: every name in the tables starts with one of these.
inline bool maybe_ours(const char* n) {
  return (n[0] == '_' && n[1] == 'Z' && (n[2] == 'n' || n[2] == 'd')) || n[0] == 'm' || n[0] == 't' || n[0] == 'j' ||
         n[0] == 'r' || n[0] == 'x' || n[0] == 's' || n[0] == 'd' || n[0] == 'f' || n[0] == 'c' || n[0] == 'a' ||
         n[0] == 'p' || n[0] == 'v';
}

void patch_image(const Image& im, bool standard) {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, im.path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return;
  struct stat st;
  void* map = MAP_FAILED;
  if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr)))
    map = reinterpret_cast<void*>(syscall(SYS_mmap, nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0));
  syscall(SYS_close, fd);
  if (map == MAP_FAILED || reinterpret_cast<uintptr_t>(map) > ~uintptr_t{4095}) return;
  const auto* base = static_cast<const uint8_t*>(map);
  const size_t len = static_cast<size_t>(st.st_size);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  Found found[96];
  int nfound = 0;
  // The extra entries (sites.h, ExtraEntry), looked for in the C library only.
  const bool extra = g_extra_count > 0 && starts_with(basename_of(im.path), "libc.so");
  Found extra_found[kMaxExtra];
  int extra_which[kMaxExtra];
  int nextra = 0;
  const Elf64_Sym* all_syms = nullptr;  // the symbol table found below, for patch_entry's padding proof
  size_t all_nsyms = 0;
  bool reaches_malloc = false;  // the image imports malloc, or defines one found here (hooked below)
  // A defined function symbol `s` named `name`: an extra entry, an allocator entry of the tables, or neither.
  auto consider = [&](const Elf64_Sym& s, const char* name, const EntrySpec* spec) {
    const int type = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || (bind != STB_GLOBAL && bind != STB_WEAK)) return;
    if (extra && type == STT_FUNC && nextra < kMaxExtra) {
      const int which = extra_index(name);
      if (which >= 0) {
        extra_which[nextra] = which;
        extra_found[nextra++] = Found{nullptr, im.bias + s.st_value, s.st_size};
        return;
      }
    }
    if (spec == nullptr) return;
    if (type == STT_GNU_IFUNC) {
      report(name, im.path, "it is an IFUNC (its address is chosen at load time)");
      return;
    }
    if (strcmp(name, "malloc") == 0) reaches_malloc = true;
    if (nfound < 96) found[nfound++] = Found{spec, im.bias + s.st_value, s.st_size};
  };
  // An import of malloc (.symtab names it with its version, "malloc@GLIBC_2.2.5"; .dynsym without).
  auto imports_malloc = [](const Elf64_Sym& s, const char* name) {
    return s.st_shndx == SHN_UNDEF && strncmp(name, "malloc", 6) == 0 && (name[6] == '\0' || name[6] == '@');
  };
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shoff != 0 &&
      eh->e_shoff + eh->e_shnum * sizeof(Elf64_Shdr) <= len) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    const Elf64_Shdr* symtab = nullptr;
    for (int i = 0; i < eh->e_shnum; ++i)
      if (sh[i].sh_type == SHT_SYMTAB) symtab = &sh[i];
    // A stripped image: its .dynsym, through the .gnu.hash table that indexes it when it has one (below).
    const Elf64_Shdr* gnu_hash = nullptr;
    if (symtab == nullptr)
      for (int i = 0; i < eh->e_shnum; ++i) {
        if (sh[i].sh_type == SHT_DYNSYM) symtab = &sh[i];
        if (sh[i].sh_type == SHT_GNU_HASH) gnu_hash = &sh[i];
      }
    if (gnu_hash != nullptr && (gnu_hash->sh_link >= eh->e_shnum || &sh[gnu_hash->sh_link] != symtab ||
                                gnu_hash->sh_offset % 4 != 0 || gnu_hash->sh_offset + gnu_hash->sh_size > len))
      gnu_hash = nullptr;
    if (symtab != nullptr && symtab->sh_link < eh->e_shnum && symtab->sh_offset + symtab->sh_size <= len &&
        sh[symtab->sh_link].sh_offset + sh[symtab->sh_link].sh_size <= len) {
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + symtab->sh_offset);
      const size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
      const char* strs = reinterpret_cast<const char*>(base + sh[symtab->sh_link].sh_offset);
      const size_t strs_len = sh[symtab->sh_link].sh_size;
      all_syms = syms;
      all_nsyms = nsyms;
      if (gnu_hash != nullptr) {
        // Each name looked up, not every symbol read: cc1 exports 28,902 symbols, and reading them all (the
        // file's pages, a name compare for most) was a third of what recording added to a `cc1 --version`.
        const GnuHashSymbols table{syms,
                                   nsyms,
                                   strs,
                                   strs_len,
                                   reinterpret_cast<const uint32_t*>(base + gnu_hash->sh_offset),
                                   gnu_hash->sh_size / 4};
        // Imports are not in the hash table: they come first, below its first hashed symbol.
        const size_t unhashed = table.hash_words >= 4 && table.hash[1] < nsyms ? table.hash[1] : nsyms;
        for (size_t i = 0; i < unhashed; ++i)
          if (syms[i].st_name < strs_len && imports_malloc(syms[i], strs + syms[i].st_name)) reaches_malloc = true;
        const auto each_name = [&](const char* name, const EntrySpec* spec) {
          for_each_gnu_hash_match(table, name, [&](const Elf64_Sym& sym) {
            consider(sym, name, spec);
            return true;
          });
        };
        for_each_entry(standard, [&](const EntrySpec& spec) {
          each_name(spec.name, &spec);
          return true;
        });
        if (extra)
          for (int i = 0; i < g_extra_count; ++i) each_name(g_extra[i].name, nullptr);
      } else {
        for (size_t i = 0; i < nsyms && nfound < 96; ++i) {
          const Elf64_Sym& s = syms[i];
          if (s.st_name >= strs_len) continue;
          const char* name = strs + s.st_name;
          if (imports_malloc(s, name)) reaches_malloc = true;
          if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
          consider(s, name, maybe_ours(name) ? lookup(name, standard) : nullptr);
        }
      }
    }
  }
  // Patch, twins resolved within the image first (a throwing entry without its nothrow twin is refused).
  for (int i = 0; i < nfound; ++i) {
    const Found& f = found[i];
    bool dup = false;
    for (int j = 0; j < g_site_count; ++j) dup = dup || g_sites[j].entry == f.addr;
    if (dup) continue;  // an alias of an entry hooked already
    uintptr_t twin = 0;
    if (f.spec->nothrow_twin != nullptr) {
      for (int j = 0; j < nfound; ++j)
        if (strcmp(found[j].spec->name, f.spec->nothrow_twin) == 0) twin = found[j].addr;
      if (twin == 0) {
        if (!reaches_malloc) report_no_twin(f.spec->name, im.path);
        continue;
      }
    }
    if (g_site_count == kMaxSites) {
      report(f.spec->name, im.path, "the preload's table of hooked entries is full");
      continue;
    }
    Site& site = g_sites[g_site_count];
    site.entry = f.addr;
    site.twin = twin;
    site.spec = f.spec;
    uintptr_t original = 0;
    // The site must be complete before its hook can run: the hook reads `original`, which patch_entry
    // publishes before the entry's jump (it writes it into *original first).
    // The lowest symbol above the entry, looked up only for the rare entry that needs the padding after it.
    const uintptr_t limit = needs_padding(f.addr, f.size) ? next_symbol(all_syms, all_nsyms, im.bias, f.addr) : 0;
    site.saved_len = static_cast<uint8_t>(patched_bytes(f.addr, f.size));
    memcpy(site.saved, reinterpret_cast<const void*>(f.addr), site.saved_len);
    site.restored = false;
    const char* why =
        patch_entry(f.addr, f.size, limit, reinterpret_cast<uintptr_t>(kHooks.fn[g_site_count]), &original);
    if (why != nullptr) {
      report(f.spec->name, im.path, why);
      continue;
    }
    site.original.store(original, std::memory_order_release);
    ++g_site_count;
  }
  patch_extra(im, extra_found, extra_which, nextra, all_syms, all_nsyms);
  syscall(SYS_munmap, map, len);
}

struct Collect {
  Image images[kMaxImages];
  int count;
};

int collect(struct dl_phdr_info* info, size_t, void* data) {
  auto* c = static_cast<Collect*>(data);
  const bool main = c->count == 0 && (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0');
  if (c->count < kMaxImages)
    c->images[c->count++] = Image{info->dlpi_addr, main ? "/proc/self/exe" : info->dlpi_name, main};
  return 0;
}

}  // namespace

namespace {

// Patches the images loaded since the last scan (each image once): those `skip` leaves, every entry of the
// main executable, and of the others only what the PLT does not reach unless `every_entry`. Returns how many
// sites it patched.
int scan_new_images(bool (*skip)(const char*), bool every_entry) {
  while (g_scan_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  static Collect c;  // zero-initialized, constant: no static constructor; used under the lock only
  c.count = 0;
  dl_iterate_phdr(collect, &c);
  const int before = g_site_count;
  for (int i = 0; i < c.count && g_scanned_count < kMaxImages; ++i) {
    const Image& im = c.images[i];
    if (im.main ? g_main_scanned : scanned(im.bias)) continue;
    if (im.main)
      g_main_scanned = true;
    else
      g_scanned[g_scanned_count++] = im.bias;
    if (im.path == nullptr || im.path[0] != '/' || skip(im.path)) continue;
    patch_image(im, im.main || every_entry);
  }
  const int added = g_site_count - before;
  g_scan_lock.clear(std::memory_order_release);
  return added;
}

}  // namespace

// The PLT reaches a standard name in a library loaded at startup (the preload comes first); not in the
// executable, nor in a library loaded with dlopen and called through dlsym'd pointers.
void patch_new_images(bool after_dlopen) { (void)scan_new_images(skipped, after_dlopen); }

// Attached later, the PLT is already bound everywhere: every image's entries.
int patch_images_for_attach() {
  const int before = g_extra_site_count;
  const int added = scan_new_images(skipped_when_attached, true);
  return added + (g_extra_site_count - before);
}

void set_extra_entries(const ExtraEntry* entries, int count) {
  g_extra = entries;
  g_extra_count = count < kMaxExtra ? count : kMaxExtra;
}

int restore_patched_entries() {
  // Bounded: the tool's call may run on a thread it interrupted inside a scan (a preloaded image's dlopen
  // hook holds the lock while it patches the new library, outside the C library), which would never release
  // it. The recording is off already, so entries left patched only pass their calls through.
  for (int tries = 0; g_scan_lock.test_and_set(std::memory_order_acquire); ++tries) {
    if (tries == 20000) {
      say("cannot restore the entries patched by attach (their table is busy); they stay hooked, unrecorded");
      return 0;
    }
    sched_yield();
  }
  int restored = 0;
  for (int i = 0; i < g_site_count; ++i) {
    Site& site = g_sites[i];
    if (site.restored) continue;
    if (restore_entry(site.entry, site.saved, site.saved_len)) {
      site.restored = true;
      ++restored;
    } else {
      say("cannot restore an entry patched by attach (its page cannot be made writable); it stays hooked, unrecorded");
    }
  }
  for (int i = 0; i < g_extra_site_count; ++i) {
    ExtraSite& site = g_extra_sites[i];
    if (site.restored) continue;
    if (restore_entry(site.entry, site.saved, site.saved_len)) {
      site.restored = true;
      ++restored;
    } else {
      say("cannot restore an entry patched by attach (its page cannot be made writable); it stays hooked");
    }
  }
  g_scan_lock.clear(std::memory_order_release);
  return restored;
}

}  // namespace memtrack::preload
