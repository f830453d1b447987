// CPython's allocator domains seen as allocations (python.h, docs/RUNTIME.md, "Python programs").
//
// Why the domains and not the entry points: Debian's python3 is built with LTO and PGO, and its
// PyObject_Malloc / PyMem_Malloc are inlined into about 190 callers, each copy comparing the domain's function
// pointer with pymalloc's and running pymalloc inline when they are equal. Patching the exported entries
// would see a fraction of the calls. Every copy calls through the pointer when it is anything else, so
// replacing the domain's allocator (PyMem_SetAllocator, the documented way, the one tracemalloc uses) sees
// them all. The wrapper calls the allocator it replaced with that allocator's own context: the interpreter
// runs the same pymalloc as without memtrack.
//
// One event per call: each wrapper is an entry (EntryScope, preload_internal.h), so the malloc that pymalloc
// calls for blocks over 512 bytes, and the mmap/munmap of its arenas, are nested calls and make no event of
// their own (as jemalloc's own mappings make none). Under PYTHONMALLOC=malloc (`record --python-malloc`) the
// domains are the C allocator's (the same functions as PYMEM_DOMAIN_RAW's): they are left alone and the
// objects are malloc events, as before.
//
// When: the preload's constructor runs before main, so before the interpreter allocates anything; the
// domains hold their static defaults (pymalloc) then. The interpreter may set them again from PYTHONMALLOC
// or -X dev (_PyMem_SetupAllocators, during its pre-initialization, before its first object): that function
// is entry-patched (patch/patch.h) and the domains are wrapped again after it returns.
#include "python.h"

#include <elf.h>
#include <link.h>

#include <atomic>

#include "patch/patch.h"
#include "ring_client.h"
#include "stacks.h"

namespace memtrack::preload {
namespace {

using K = runtime::RingEventKind;

// PyMemAllocatorEx (Include/cpython/pymem.h, unchanged since 3.5) and the domains' numbers.
struct PyAlloc {
  void* ctx;
  void* (*malloc)(void* ctx, size_t size);
  void* (*calloc)(void* ctx, size_t nelem, size_t elsize);
  void* (*realloc)(void* ctx, void* ptr, size_t new_size);
  void (*free)(void* ctx, void* ptr);
};
constexpr int kDomainRaw = 0, kDomainMem = 1, kDomainObj = 2;

using GetAllocatorFn = void (*)(int domain, PyAlloc* out);
using SetAllocatorFn = void (*)(int domain, PyAlloc* in);
using SetupAllocatorsFn = int (*)(int name);

struct Runtime {
  GetAllocatorFn get;
  SetAllocatorFn set;
  std::atomic<uintptr_t> setup_original;  // _PyMem_SetupAllocators' trampoline, once patched
  uint64_t version;                       // Py_Version: 0xMMmmppRS
  bool found;
};
constinit Runtime g_py = {nullptr, nullptr, {0}, 0, false};

// The allocator each wrapped domain had: the wrappers' context.
struct Domain {
  PyAlloc orig;
  bool wrapped;
};
constinit Domain g_domains[3] = {};
constinit std::atomic<bool> g_noted{false};

void note_mode();

void* wrap_malloc(void* ctx, size_t n) {
  const PyAlloc& o = static_cast<Domain*>(ctx)->orig;
  if (in_entry()) return o.malloc(o.ctx, n);
  if (!g_noted.load(std::memory_order_relaxed)) [[unlikely]]
    note_mode();
  EntryScope scope;
  void* p = o.malloc(o.ctx, n);
  if (p != nullptr) record(K::Malloc, p, n, capture_stack());
  return p;
}

void* wrap_calloc(void* ctx, size_t n, size_t m) {
  const PyAlloc& o = static_cast<Domain*>(ctx)->orig;
  if (in_entry()) return o.calloc(o.ctx, n, m);
  EntryScope scope;
  void* p = o.calloc(o.ctx, n, m);
  if (p != nullptr) record(K::Calloc, p, static_cast<uint64_t>(n) * m, capture_stack());  // Python checks n*m
  return p;
}

// As realloc_impl (hooks.cpp): the stack, then the ticket before the old block can be released, filled
// after. pymalloc's realloc(p, 0) returns a block (it never frees and returns NULL), so a null result is a
// failure that left p alone.
void* wrap_realloc(void* ctx, void* p, size_t n) {
  const PyAlloc& o = static_cast<Domain*>(ctx)->orig;
  if (in_entry()) return o.realloc(o.ctx, p, n);
  EntryScope scope;
  if (p == nullptr) {
    void* q = o.realloc(o.ctx, nullptr, n);
    if (q != nullptr) record(K::Realloc, q, n, capture_stack());
    return q;
  }
  const uint32_t stack = capture_stack();
  Ticket tk;
  const bool recording = begin_event(tk);
  void* q = o.realloc(o.ctx, p, n);
  if (recording) {
    if (q != nullptr)
      commit_realloc(tk, p, q, n, stack);
    else
      commit_nothing(tk);
  }
  return q;
}

void wrap_free(void* ctx, void* p) {
  const PyAlloc& o = static_cast<Domain*>(ctx)->orig;
  if (in_entry() || p == nullptr) return o.free(o.ctx, p);
  EntryScope scope;
  record(K::Free, p, 0);
  o.free(o.ctx, p);
}

bool same(const PyAlloc& a, const PyAlloc& b) {
  return a.ctx == b.ctx && a.malloc == b.malloc && a.calloc == b.calloc && a.realloc == b.realloc && a.free == b.free;
}

// Wraps MEM and OBJ unless they are wrapped already or are the raw domain's allocator (PYTHONMALLOC=malloc:
// their calls reach malloc, interposed). Single-threaded: the constructor, or the interpreter's
// pre-initialization.
void wrap_domains() {
  PyAlloc raw;
  g_py.get(kDomainRaw, &raw);
  for (int d : {kDomainMem, kDomainObj}) {
    PyAlloc cur;
    g_py.get(d, &cur);
    if (cur.malloc == wrap_malloc) continue;
    g_domains[d].wrapped = false;
    if (same(cur, raw)) continue;
    g_domains[d].orig = cur;
    PyAlloc mine = {&g_domains[d], wrap_malloc, wrap_calloc, wrap_realloc, wrap_free};
    g_py.set(d, &mine);
    g_domains[d].wrapped = true;
  }
}

// The hook of _PyMem_SetupAllocators(PyMemAllocatorName): the interpreter sets the domains from PYTHONMALLOC.
int setup_allocators_hook(int name) {
  const auto orig = reinterpret_cast<SetupAllocatorsFn>(g_py.setup_original.load(std::memory_order_acquire));
  const int r = orig(name);
  wrap_domains();
  if (!g_domains[kDomainObj].wrapped) note_mode();
  return r;
}

// One line in record's summary saying how this interpreter's objects are recorded (diagnostic()).
void note_mode() {
  if (g_noted.exchange(true, std::memory_order_relaxed)) return;
  char ver[24];
  const unsigned major = (g_py.version >> 24) & 0xff, minor = (g_py.version >> 16) & 0xff,
                 micro = (g_py.version >> 8) & 0xff;
  // "3.11.2": at most 3 digits each.
  char* w = ver;
  for (unsigned part : {major, minor, micro}) {
    if (w != ver) *w++ = '.';
    char digits[4];
    int k = 0;
    do digits[k++] = static_cast<char>('0' + part % 10);
    while ((part /= 10) != 0 && k < 3);
    while (k > 0) *w++ = digits[--k];
  }
  *w = '\0';
  if (g_domains[kDomainObj].wrapped)
    say("python ", ver,
        ": pymalloc's allocations are recorded through the interpreter's allocator domains "
        "(PyObject_Malloc, PyMem_Malloc)");
  else
    say("python ", ver, ": the interpreter allocates objects with malloc (PYTHONMALLOC=malloc)");
}

// ---- Finding the runtime: an image's dynamic symbols, through its GNU hash table in memory -----------------

struct DynSyms {
  const Elf64_Sym* syms;
  const char* strs;
  const uint32_t* gnu_hash;
  uintptr_t bias;
};

bool dyn_syms(const struct dl_phdr_info* info, DynSyms& out) {
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const Elf64_Dyn*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dyn == nullptr) return false;
  out = DynSyms{nullptr, nullptr, nullptr, info->dlpi_addr};
  // glibc relocates these entries in place on x86-64; an unrelocated one is below the load bias.
  auto at = [&](Elf64_Addr v) { return v < info->dlpi_addr ? v + info->dlpi_addr : v; };
  for (const Elf64_Dyn* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) out.syms = reinterpret_cast<const Elf64_Sym*>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_STRTAB) out.strs = reinterpret_cast<const char*>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_GNU_HASH) out.gnu_hash = reinterpret_cast<const uint32_t*>(at(d->d_un.d_ptr));
  }
  return out.syms != nullptr && out.strs != nullptr && out.gnu_hash != nullptr;
}

// The defined symbol `name` of the image, or nullptr.
const Elf64_Sym* lookup(const DynSyms& s, const char* name) {
  uint32_t h = 5381;
  for (const char* c = name; *c; ++c) h = h * 33 + static_cast<uint8_t>(*c);
  const uint32_t nbuckets = s.gnu_hash[0], symoffset = s.gnu_hash[1], bloom_words = s.gnu_hash[2];
  if (nbuckets == 0) return nullptr;
  const uint32_t* buckets = s.gnu_hash + 4 + 2 * bloom_words;  // 64-bit bloom words
  const uint32_t* chain = buckets + nbuckets;
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return nullptr;
  for (;; ++i) {
    const uint32_t ch = chain[i - symoffset];
    if ((ch | 1) == (h | 1) && strcmp(s.strs + s.syms[i].st_name, name) == 0)
      return s.syms[i].st_shndx != SHN_UNDEF && s.syms[i].st_value != 0 ? &s.syms[i] : nullptr;
    if ((ch & 1) != 0) return nullptr;
  }
}

struct Found {
  DynSyms syms;
  bool ok;
};

int find_runtime(struct dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Found*>(data);
  DynSyms s;
  if (!dyn_syms(info, s) || lookup(s, "PyMem_SetAllocator") == nullptr) return 0;
  f->syms = s;
  f->ok = true;
  return 1;  // the first image defining it is the interpreter the program runs
}

}  // namespace

void python_attach() {
  if (g_py.found) return;
  Found f = {};
  dl_iterate_phdr(find_runtime, &f);
  if (!f.ok) return;
  const Elf64_Sym* get = lookup(f.syms, "PyMem_GetAllocator");
  const Elf64_Sym* set = lookup(f.syms, "PyMem_SetAllocator");
  const Elf64_Sym* version = lookup(f.syms, "Py_Version");
  g_py.found = true;
  if (get == nullptr || set == nullptr) return;
  if (version == nullptr) {
    say("python: an interpreter older than 3.11 (no Py_Version): pymalloc's allocations are not recorded; "
        "--python-malloc records its objects as malloc calls");
    return;
  }
  g_py.version = *reinterpret_cast<const unsigned long*>(f.syms.bias + version->st_value);
  if (g_py.version < 0x030B0000) return;  // Py_Version appeared in 3.11
  g_py.get = reinterpret_cast<GetAllocatorFn>(f.syms.bias + get->st_value);
  g_py.set = reinterpret_cast<SetAllocatorFn>(f.syms.bias + set->st_value);
  if (const Elf64_Sym* setup = lookup(f.syms, "_PyMem_SetupAllocators")) {
    const uintptr_t entry = f.syms.bias + setup->st_value;
    uintptr_t original = 0;
    const char* why =
        needs_padding(entry, setup->st_size)
            ? "its first 5 bytes straddle a quadword"
            : patch_entry(entry, setup->st_size, 0, reinterpret_cast<uintptr_t>(&setup_allocators_hook), &original);
    if (why != nullptr)
      say("python: cannot hook _PyMem_SetupAllocators: ", why,
          "; with PYTHONMALLOC set, pymalloc's allocations may not be recorded");
    else
      g_py.setup_original.store(original, std::memory_order_release);
  }
  wrap_domains();
}

}  // namespace memtrack::preload
