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
#include <stdlib.h>

#include <atomic>

#include "gnu_hash.h"
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
// "3.11.2" from Py_Version (0xMMmmppRS) into `ver` (at least 12 bytes).
void version_string(char* ver) {
  char* w = ver;
  for (unsigned part :
       {unsigned(g_py.version >> 24) & 0xff, unsigned(g_py.version >> 16) & 0xff, unsigned(g_py.version >> 8) & 0xff}) {
    if (w != ver) *w++ = '.';
    char digits[4];
    int k = 0;
    do digits[k++] = static_cast<char>('0' + part % 10);
    while ((part /= 10) != 0 && k < 3);
    while (k > 0) *w++ = digits[--k];
  }
  *w = '\0';
}

void note_mode() {
  if (g_noted.exchange(true, std::memory_order_relaxed)) return;
  char ver[16];
  version_string(ver);
  if (g_domains[kDomainObj].wrapped)
    say("python ", ver,
        ": pymalloc's allocations are recorded through the interpreter's allocator domains "
        "(PyObject_Malloc, PyMem_Malloc)");
  else
    say("python ", ver, ": the interpreter allocates objects with malloc (PYTHONMALLOC=malloc)");
}

// ---- Finding the runtime: an image's dynamic symbols, through its GNU hash table in memory -----------------

struct DynSyms {
  GnuHashSymbols table;
  uintptr_t bias;
};

bool dyn_syms(const struct dl_phdr_info* info, DynSyms& out) {
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const Elf64_Dyn*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dyn == nullptr) return false;
  out = DynSyms{GnuHashSymbols{}, info->dlpi_addr};
  // glibc relocates these entries in place on x86-64; an unrelocated one is below the load bias.
  auto at = [&](Elf64_Addr v) { return v < info->dlpi_addr ? v + info->dlpi_addr : v; };
  for (const Elf64_Dyn* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) out.table.syms = reinterpret_cast<const Elf64_Sym*>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_STRTAB) out.table.strs = reinterpret_cast<const char*>(at(d->d_un.d_ptr));
    if (d->d_tag == DT_GNU_HASH) out.table.hash = reinterpret_cast<const uint32_t*>(at(d->d_un.d_ptr));
  }
  return out.table.syms != nullptr && out.table.strs != nullptr && out.table.hash != nullptr;
}

struct Found {
  DynSyms syms;
  uintptr_t text_start, text_end;  // the image's executable segments
  bool ok;
};

int find_runtime(struct dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Found*>(data);
  DynSyms s;
  if (!dyn_syms(info, s) || gnu_hash_lookup(s.table, "PyMem_SetAllocator") == nullptr) return 0;
  f->syms = s;
  f->ok = true;
  f->text_start = ~uintptr_t{0};
  f->text_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (lo < f->text_start) f->text_start = lo;
    if (hi > f->text_end) f->text_end = hi;
  }
  return 1;  // the first image defining it is the interpreter the program runs
}

// ---- Python frames (CPython 3.10 to 3.13) --------------------------------------------------------------------
//
// At each capture the calling thread's own frame chain is read: its thread state (PyGILState_GetThisThreadState:
// a TSS read, no allocation, null on threads the interpreter does not know and before it is initialized), its
// innermost frame (`tstate->cframe->current_frame` up to 3.12, `tstate->current_frame` in 3.13), then each
// `_PyInterpreterFrame`'s `previous`. Only this thread's chain: it changes only on this thread, which is inside
// an allocator call, and each frame holds a strong reference to its code object, so the chain is stable while
// we read it whether or not this thread holds the GIL. Each frame is checked (aligned, its code's type
// PyCode_Type) and a chain that fails the check ends there.
//
// Where one call of _PyEval_EvalFrameDefault starts: 3.10 evaluates each frame (a PyFrameObject, linked by
// f_back) in a call of its own; 3.11 runs Python-to-Python calls inside one call and marks its first frame
// (`is_entry`); 3.12 and 3.13 put a frame of their own on the chain before it instead (an entry frame on the
// C stack, owner FRAME_OWNED_BY_CSTACK, running a trampoline code object), which is skipped and ends the group.
//
// The offsets are those of Include/internal/pycore_frame.h (Include/cpython/frameobject.h in 3.10),
// Include/cpython/code.h, Include/cpython/pystate.h and unicodeobject.h of each version, the same in every
// x.y.z of one version (read with offsetof from the headers of pyenv's 3.10.13, 3.11.7, 3.12.1 and 3.13.0
// builds); the interpreter's version says which, and other versions get native frames only. These are the
// same in the four:
namespace py {
constexpr size_t kObType = 8;         // PyObject.ob_type
constexpr size_t kVarSize = 16;       // PyVarObject.ob_size
constexpr size_t kBytesData = 32;     // PyBytesObject.ob_sval
constexpr size_t kStrLength = 16;     // PyASCIIObject.length
constexpr size_t kStrState = 32;      // .state: bit 5 compact, bit 6 ascii
constexpr int8_t kOwnedByCstack = 3;  // FRAME_OWNED_BY_CSTACK (3.12, 3.13)
}  // namespace py

// How a version links its frames and says where an evaluation loop's call starts.
enum class Chain : uint8_t {
  kFrameObjects,  // 3.10: PyFrameObjects, one evaluation call each; the instruction an int (f_lasti)
  kIsEntry,       // 3.11: _PyInterpreterFrames, the first of a call marked is_entry
  kEntryFrames,   // 3.12, 3.13: _PyInterpreterFrames, a C-stack-owned frame before the first of a call
};

// What differs between versions.
struct Layout {
  Chain chain;
  size_t tstate_cframe;   // PyThreadState.cframe; 0: the current frame is in the thread state (3.10, 3.13)
  size_t current_frame;   // _PyCFrame.current_frame, or PyThreadState.current_frame (3.13), .frame (3.10)
  size_t frame_code;      // _PyInterpreterFrame.f_code (f_executable in 3.13), PyFrameObject.f_code (3.10)
  size_t frame_previous;  // .previous, PyFrameObject.f_back (3.10)
  size_t frame_instr;     // .prev_instr (3.11, 3.12: the instruction being executed), .instr_ptr (3.13),
                          // PyFrameObject.f_lasti (3.10: an int, the instruction's index)
  size_t frame_is_entry;  // .is_entry (3.11)
  size_t frame_owner;     // .owner (char; 3.11 to 3.13)
  size_t code_consts;     // PyCodeObject.co_consts
  size_t code_names;      // .co_names
  size_t code_unique;     // .co_exceptiontable (3.11 to 3.13), .co_code (3.10): an object of this code's own
  size_t code_firstline;  // .co_firstlineno (int)
  size_t code_filename;   // .co_filename
  size_t code_name;       // .co_qualname (3.11 to 3.13), .co_name (3.10, which has no qualified name)
  size_t code_linetable;  // .co_linetable (bytes)
  size_t code_adaptive;   // .co_code_adaptive: the instructions, 2 bytes each (3.11 to 3.13)
  size_t code_flags;      // .co_flags (int), read for shim_flags
  int shim_flags;         // co_flags of the interpreter's own shim codes, whose frames are not shown (3.13:
                          // CO_NO_MONITORING_EVENTS, the frame that checks what __init__ returned); 0: none
  size_t ascii_data;      // sizeof(PyASCIIObject): a compact ASCII string's characters
  size_t utf8_length;     // PyCompactUnicodeObject.utf8_length
  size_t utf8;            // .utf8 (may be null)
  uint32_t table_format;  // RingPythonCodePayload.table_format of its co_linetable
};
// A field a version does not have is 0 (tstate_cframe 0: the frame is in the thread state itself).
constexpr Layout kPy310 = {.chain = Chain::kFrameObjects,
                           .tstate_cframe = 0,
                           .current_frame = 24,
                           .frame_code = 32,
                           .frame_previous = 24,
                           .frame_instr = 96,
                           .frame_is_entry = 0,
                           .frame_owner = 0,
                           .code_consts = 56,
                           .code_names = 64,
                           .code_unique = 48,
                           .code_firstline = 40,
                           .code_filename = 104,
                           .code_name = 112,
                           .code_linetable = 120,
                           .code_adaptive = 0,
                           .code_flags = 36,
                           .shim_flags = 0,
                           .ascii_data = 48,
                           .utf8_length = 48,
                           .utf8 = 56,
                           .table_format = runtime::kPythonLineTable310};
constexpr Layout kPy311 = {.chain = Chain::kIsEntry,
                           .tstate_cframe = 56,
                           .current_frame = 8,
                           .frame_code = 32,
                           .frame_previous = 48,
                           .frame_instr = 56,
                           .frame_is_entry = 68,
                           .frame_owner = 69,
                           .code_consts = 24,
                           .code_names = 32,
                           .code_unique = 40,
                           .code_firstline = 72,
                           .code_filename = 112,
                           .code_name = 128,
                           .code_linetable = 136,
                           .code_adaptive = 184,
                           .code_flags = 48,
                           .shim_flags = 0,
                           .ascii_data = 48,
                           .utf8_length = 48,
                           .utf8 = 56,
                           .table_format = runtime::kPythonLocationTable};
constexpr Layout kPy312 = {.chain = Chain::kEntryFrames,
                           .tstate_cframe = 56,
                           .current_frame = 0,
                           .frame_code = 0,
                           .frame_previous = 8,
                           .frame_instr = 56,
                           .frame_is_entry = 0,
                           .frame_owner = 70,
                           .code_consts = 24,
                           .code_names = 32,
                           .code_unique = 40,
                           .code_firstline = 68,
                           .code_filename = 112,
                           .code_name = 128,
                           .code_linetable = 136,
                           .code_adaptive = 192,
                           .code_flags = 48,
                           .shim_flags = 0,
                           .ascii_data = 40,
                           .utf8_length = 40,
                           .utf8 = 48,
                           .table_format = runtime::kPythonLocationTable};
constexpr Layout kPy313 = {.chain = Chain::kEntryFrames,
                           .tstate_cframe = 0,
                           .current_frame = 72,
                           .frame_code = 0,
                           .frame_previous = 8,
                           .frame_instr = 56,
                           .frame_is_entry = 0,
                           .frame_owner = 70,
                           .code_consts = 24,
                           .code_names = 32,
                           .code_unique = 40,
                           .code_firstline = 68,
                           .code_filename = 112,
                           .code_name = 128,
                           .code_linetable = 136,
                           .code_adaptive = 200,
                           .code_flags = 48,
                           .shim_flags = 0x2000000,
                           .ascii_data = 40,
                           .utf8_length = 40,
                           .utf8 = 48,
                           .table_format = runtime::kPythonLocationTable};

// The layout of CPython `version` (0xMMmmppRS, as Py_Version), or null.
const Layout* layout_of(uint64_t version) {
  switch (version >> 16) {
    case 0x030A:
      return &kPy310;
    case 0x030B:
      return &kPy311;
    case 0x030C:
      return &kPy312;
    case 0x030D:
      return &kPy313;
    default:
      return nullptr;
  }
}

constexpr size_t kMaxPythonFrames = 256;
constexpr uint64_t kIdShift = 20, kIdMask = (uint64_t{1} << 20) - 1, kIndexMask = (uint64_t{1} << 20) - 1;
constexpr uint64_t kGenShift = 40, kModuleSpan = uint64_t{1} << kGenShift;

struct FrameReader {
  uintptr_t eval_start, eval_end;  // _PyEval_EvalFrameDefault
  uintptr_t text_start, text_end;  // the interpreter's image (its executable segments)
  uintptr_t code_type;             // &PyCode_Type
  void* (*this_tstate)();          // PyGILState_GetThisThreadState
  Layout layout;                   // the running version's
  bool on;
};
constinit FrameReader g_frames = {0, 0, 0, 0, 0, nullptr, {}, false};

// Code objects seen in stacks: open addressing on the code's address. `value` is the code's pseudo-address
// prefix (tag | generation | id) with 20 bits of a fingerprint of the code in its low bits (fingerprint()): a code
// freed and another allocated at its address gets a new id.
constexpr uint32_t kCodeSlots = 1u << 15;
struct CodeSlot {
  std::atomic<uint64_t> code;
  std::atomic<uint64_t> value;
};
constinit CodeSlot g_codes[kCodeSlots] = {};
constinit std::atomic<uint32_t> g_code_count{0};
constinit std::atomic_flag g_code_lock = ATOMIC_FLAG_INIT;
constinit std::atomic<int> g_code_lock_pid{0};  // the process whose thread took g_code_lock last
constinit uint64_t g_next_id = 1;               // under g_code_lock; id 0: an unknown code
constinit uint64_t g_generation = 0;            // under g_code_lock
constinit int g_module_pid = 0;                 // under g_code_lock: the pid that noted the current module (0: none)
constinit char g_note[16 + 10 * 1024];

template <typename T>
inline T load(uintptr_t at) {
  T v;
  memcpy(&v, reinterpret_cast<const void*>(at), sizeof v);
  return v;
}

inline uint64_t module_base(uint64_t generation) { return kPythonAddressTag | generation << kGenShift; }

// From the code's first 64 bytes only, which the chain's type check has just read (the names and the first
// line are two cache lines further: reading them at every lookup was a fifth of python_splice's time on
// pytest): its size in code units and its constants', names' and exception table's objects, which a code
// allocated where a freed one was does not share (each code has tuples of its own, but for the empty ones).
uint64_t fingerprint(uintptr_t code) {
  const Layout& L = g_frames.layout;
  const uint64_t f = load<uintptr_t>(code + L.code_consts) ^ (load<uintptr_t>(code + L.code_names) >> 4) ^
                     (load<uintptr_t>(code + L.code_unique) << 4) ^
                     static_cast<uint64_t>(load<int64_t>(code + py::kVarSize)) << 44;
  return (f ^ (f >> 20) ^ (f >> 40)) & kIndexMask;
}

// A str's UTF-8 bytes when the interpreter has them (compact ASCII, or a compact string whose UTF-8 form
// exists); else false.
bool str_bytes(uintptr_t s, const char*& out, size_t& n) {
  if (s == 0 || (s & 7) != 0) return false;
  const uint32_t state = load<uint32_t>(s + py::kStrState);
  if ((state & (1u << 5)) == 0) return false;
  if ((state & (1u << 6)) != 0) {
    out = reinterpret_cast<const char*>(s + g_frames.layout.ascii_data);
    n = static_cast<size_t>(load<int64_t>(s + py::kStrLength));
    return true;
  }
  const uintptr_t utf8 = load<uintptr_t>(s + g_frames.layout.utf8);
  if (utf8 == 0) return false;
  out = reinterpret_cast<const char*>(utf8);
  n = static_cast<size_t>(load<int64_t>(s + g_frames.layout.utf8_length));
  return true;
}

// Under g_code_lock: this image's Python module, noted once per process (a fork child notes its own: the
// parent goes on numbering its codes in the module they share).
bool note_module() {
  if (g_module_pid == g_pid) return true;
  if (g_module_pid != 0) ++g_generation;
  if (g_generation >= 0xff) return false;
  const uint64_t base = module_base(g_generation);
  char payload[sizeof(runtime::RingModulePayload) + 12 + 8];
  runtime::RingModulePayload m = {};
  m.start = base;
  m.end = base + kModuleSpan;
  m.build_id_size = 12;  // unique per module: the pid and a clock reading
  memcpy(payload, &m, sizeof m);
  const uint32_t pid = static_cast<uint32_t>(g_pid);
  const uint64_t now = timestamp_now();
  memcpy(payload + sizeof m, &pid, 4);
  memcpy(payload + sizeof m + 4, &now, 8);
  memcpy(payload + sizeof m + 12, "[python]", 8);
  if (!write_note(RingEventKind::NoteModule, g_pid, base, payload, sizeof payload)) return false;
  g_module_pid = g_pid;
  return true;
}

// Under g_code_lock: a new id for `code` in this process's module, noted with its names and line table.
uint64_t note_code(uintptr_t code) {
  if (!note_module() || g_next_id > kIdMask) return 0;
  const uint64_t prefix = module_base(g_generation) | g_next_id << kIdShift;
  const char *name = "?", *file = "?";
  size_t name_n = 1, file_n = 1;
  if (!str_bytes(load<uintptr_t>(code + g_frames.layout.code_name), name, name_n)) name_n = 1;
  if (!str_bytes(load<uintptr_t>(code + g_frames.layout.code_filename), file, file_n)) file_n = 1;
  if (name_n > 1024) name_n = 1024;
  if (file_n > 4096) file_n = 4096;
  const uintptr_t lt = load<uintptr_t>(code + g_frames.layout.code_linetable);
  size_t lt_n = lt != 0 ? static_cast<size_t>(load<int64_t>(lt + py::kVarSize)) : 0;
  const size_t room = sizeof g_note - sizeof(runtime::RingPythonCodePayload) - name_n - file_n;
  if (lt_n > room) lt_n = room;  // lines past the cut are unknown
  runtime::RingPythonCodePayload h = {};
  h.first_line = static_cast<uint32_t>(load<int>(code + g_frames.layout.code_firstline));
  h.table_format = g_frames.layout.table_format;
  h.name_bytes = static_cast<uint16_t>(name_n);
  h.file_bytes = static_cast<uint16_t>(file_n);
  h.linetable_bytes = static_cast<uint32_t>(lt_n);
  char* w = g_note;
  memcpy(w, &h, sizeof h);
  w += sizeof h;
  memcpy(w, name, name_n);
  w += name_n;
  memcpy(w, file, file_n);
  w += file_n;
  if (lt_n != 0) memcpy(w, reinterpret_cast<const void*>(lt + py::kBytesData), lt_n);
  w += lt_n;
  if (!write_note(RingEventKind::NotePythonCode, g_pid, prefix, g_note, static_cast<size_t>(w - g_note))) return 0;
  ++g_next_id;
  return prefix;
}

// The pseudo-address prefix of `code` (0 in the id bits: unknown, when it cannot be noted now).
uint64_t code_prefix(uintptr_t code, bool may_note) {
  const uint64_t fp = fingerprint(code);
  const uint32_t mask = kCodeSlots - 1;
  uint32_t s = static_cast<uint32_t>((code >> 4) * 0x9E3779B97F4A7C15u >> 40) & mask;
  for (uint32_t probes = 0; probes < kCodeSlots; ++probes, s = (s + 1) & mask) {
    const uint64_t k = g_codes[s].code.load(std::memory_order_acquire);
    if (k == 0) break;
    if (k != code) continue;
    const uint64_t v = g_codes[s].value.load(std::memory_order_acquire);
    if ((v & kIndexMask) == fp) return v & ~kIndexMask;
    break;  // the address holds another code now: a new id (below)
  }
  const uint64_t unknown = module_base(g_generation);
  if (!may_note) return unknown;
  if (g_code_lock.test_and_set(std::memory_order_acquire)) {
    // Held: by another thread, or a handler interrupted this thread inside ours (then: unknown). A fork child
    // inherits the lock held by a thread of its parent, which does not exist here: it is taken over.
    int holder = g_code_lock_pid.load(std::memory_order_relaxed);
    if (holder == 0 || holder == g_pid ||
        !g_code_lock_pid.compare_exchange_strong(holder, g_pid, std::memory_order_relaxed))
      return unknown;  // one thread of the child takes it over
  }
  g_code_lock_pid.store(g_pid, std::memory_order_relaxed);
  uint64_t prefix = 0;
  uint32_t slot = static_cast<uint32_t>((code >> 4) * 0x9E3779B97F4A7C15u >> 40) & mask;
  for (uint32_t probes = 0; probes < kCodeSlots; ++probes, slot = (slot + 1) & mask) {
    const uint64_t k = g_codes[slot].code.load(std::memory_order_relaxed);
    if (k == 0 || k == code) break;
  }
  const uint64_t k = g_codes[slot].code.load(std::memory_order_relaxed);
  const uint64_t v = g_codes[slot].value.load(std::memory_order_relaxed);
  if (k == code && (v & kIndexMask) == fp) {
    prefix = v & ~kIndexMask;  // another thread noted it meanwhile
  } else if (k == code || g_code_count.load(std::memory_order_relaxed) < kCodeSlots / 2) {
    prefix = note_code(code);
    if (prefix != 0) {
      g_codes[slot].value.store(prefix | fp, std::memory_order_release);
      if (k == 0) {
        g_code_count.fetch_add(1, std::memory_order_relaxed);
        g_codes[slot].code.store(code, std::memory_order_release);
      }
    }
  }
  g_code_lock.clear(std::memory_order_release);
  return prefix != 0 ? prefix : unknown;
}

// The interpreter's version as 0xMMmmpp00: Py_Version (3.11 and later), else parsed from Py_GetVersion()'s
// "3.10.13 (main, ...)" (a static buffer formatted by snprintf; one of the functions the C API documents as safe
// before the interpreter is initialized, "Before Python Initialization"); 0 when neither says.
uint64_t interpreter_version(const DynSyms& syms) {
  if (const Elf64_Sym* v = gnu_hash_lookup(syms.table, "Py_Version"))
    return *reinterpret_cast<const unsigned long*>(syms.bias + v->st_value);
  const Elf64_Sym* get = gnu_hash_lookup(syms.table, "Py_GetVersion");
  if (get == nullptr || ELF64_ST_TYPE(get->st_info) != STT_FUNC) return 0;
  const char* s = reinterpret_cast<const char* (*)()>(syms.bias + get->st_value)();
  if (s == nullptr) return 0;
  uint64_t parts[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    if (*s < '0' || *s > '9') return 0;
    while (*s >= '0' && *s <= '9') {
      parts[k] = parts[k] * 10 + static_cast<uint64_t>(*s++ - '0');
      if (parts[k] > 255) return 0;
    }
    if (k < 2 && *s++ != '.') return 0;
  }
  return parts[0] << 24 | parts[1] << 16 | parts[2] << 8;
}

}  // namespace

void python_attach() {
  if (g_py.found) return;
  Found f = {};
  dl_iterate_phdr(find_runtime, &f);
  if (!f.ok) return;
  const Elf64_Sym* get = gnu_hash_lookup(f.syms.table, "PyMem_GetAllocator");
  const Elf64_Sym* set = gnu_hash_lookup(f.syms.table, "PyMem_SetAllocator");
  g_py.found = true;
  if (get == nullptr || set == nullptr) return;
  g_py.version = interpreter_version(f.syms);
  if (g_py.version < 0x030A0000) {
    char ver[16];
    version_string(ver);
    say("python ", g_py.version != 0 ? ver : "(version unknown)",
        ": an interpreter older than 3.10: pymalloc's allocations are not recorded and its frames are not shown; "
        "--python-malloc records its objects as malloc calls");
    return;
  }
  g_py.get = reinterpret_cast<GetAllocatorFn>(f.syms.bias + get->st_value);
  g_py.set = reinterpret_cast<SetAllocatorFn>(f.syms.bias + set->st_value);
  if (const Elf64_Sym* setup = gnu_hash_lookup(f.syms.table, "_PyMem_SetupAllocators")) {
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
  // Frames: the layouts of 3.10 to 3.13 (layout_of).
  const Elf64_Sym* eval = gnu_hash_lookup(f.syms.table, "_PyEval_EvalFrameDefault");
  const Elf64_Sym* code_type = gnu_hash_lookup(f.syms.table, "PyCode_Type");
  const Elf64_Sym* this_tstate = gnu_hash_lookup(f.syms.table, "PyGILState_GetThisThreadState");
  const Layout* layout = layout_of(g_py.version);
  if (layout == nullptr) {
    char ver[16];
    version_string(ver);
    say("python ", ver,
        ": its frames are not shown in stacks (the frame layouts known are 3.10's to 3.13's); native frames only");
  } else if (eval == nullptr || code_type == nullptr || this_tstate == nullptr) {
    say("python: _PyEval_EvalFrameDefault, PyCode_Type or PyGILState_GetThisThreadState not found: Python frames "
        "are not shown in stacks");
  } else if (const char* knob = getenv("MEMTRACK_PYTHON_FRAMES"); knob != nullptr && strcmp(knob, "0") == 0) {
    // Native frames only, to measure what Python frames cost (docs/RUNTIME.md, "Python programs").
  } else {
    g_frames.eval_start = f.syms.bias + eval->st_value;
    g_frames.eval_end = g_frames.eval_start + eval->st_size;
    g_frames.code_type = f.syms.bias + code_type->st_value;
    g_frames.text_start = f.text_start;
    g_frames.text_end = f.text_end;
    g_frames.this_tstate = reinterpret_cast<void* (*)()>(f.syms.bias + this_tstate->st_value);
    g_frames.layout = *layout;
    g_frames.on = true;
  }
}

size_t python_splice(uintptr_t* raw, size_t n, size_t cap, size_t keep, bool cut, bool may_note) {
  if (!g_frames.on) return n;
  const auto ts = reinterpret_cast<uintptr_t>(g_frames.this_tstate());
  if (ts == 0) return n;
  const Layout& L = g_frames.layout;
  uintptr_t f;
  if (L.tstate_cframe != 0) {
    const uintptr_t cframe = load<uintptr_t>(ts + L.tstate_cframe);
    if (cframe == 0 || (cframe & 7) != 0) return n;
    f = load<uintptr_t>(cframe + L.current_frame);
  } else {
    f = load<uintptr_t>(ts + L.current_frame);
  }
  // The chain is read as the native frames need it: each evaluation loop's frames when its native frame is
  // met, innermost first, so a cut native stack reads only its loops' frames. And at most keep + 1 of them:
  // every Python frame takes a place in the stack, so the ones past those are past what the caller keeps.
  // Each frame's code and instruction only: the code's prefix (a table lookup) is computed below, for the
  // frames the stack keeps.
  uintptr_t codes[kMaxPythonFrames];
  uint64_t at[kMaxPythonFrames];
  const size_t max_frames = keep + 1 < kMaxPythonFrames ? keep + 1 : kMaxPythonFrames;
  size_t np = 0;
  // The next frame of the chain into codes[np] and at[np], or false at its end (or past max_frames); sets
  // `entry` when it is the first frame of its evaluation loop.
  auto next_frame = [&](bool& entry) {
    uintptr_t code = 0;
    for (;;) {
      if (f == 0 || (f & 7) != 0 || np == max_frames) return false;
      // 3.12, 3.13: an entry frame (the C stack's, between two evaluation loops' frames) is not a function.
      if (L.chain == Chain::kEntryFrames && load<int8_t>(f + L.frame_owner) == py::kOwnedByCstack) {
        f = load<uintptr_t>(f + L.frame_previous);
        if (f == 0 || (f & 7) != 0 || load<int8_t>(f + L.frame_owner) == py::kOwnedByCstack) {
          f = 0;  // two entry frames in a row: not a chain this reader knows
          return false;
        }
      }
      code = load<uintptr_t>(f + L.frame_code);
      if (code == 0 || (code & 7) != 0 || load<uintptr_t>(code + py::kObType) != g_frames.code_type) {
        f = 0;  // the chain ends at the first frame that fails the check
        return false;
      }
      // 3.13's shim between a class's call and its __init__ is skipped. It is pushed by a call inside an
      // evaluation loop, so it is never a loop's first frame, and the frames around it are of one loop.
      if (L.shim_flags == 0 || (load<int>(code + L.code_flags) & L.shim_flags) == 0) break;
      f = load<uintptr_t>(f + L.frame_previous);
    }
    intptr_t index;
    if (L.chain == Chain::kFrameObjects) {
      index = load<int>(f + L.frame_instr);  // -1 before the frame's first instruction
    } else {
      const auto instr = static_cast<intptr_t>(load<uintptr_t>(f + L.frame_instr));
      index = (instr - static_cast<intptr_t>(code + L.code_adaptive)) / 2;
    }
    at[np] = index < 0                                       ? 0
             : static_cast<uint64_t>(index) + 1 > kIndexMask ? kIndexMask
                                                             : static_cast<uint64_t>(index) + 1;
    codes[np++] = code;
    const uintptr_t previous = load<uintptr_t>(f + L.frame_previous);
    if (L.chain == Chain::kFrameObjects)
      entry = true;
    else if (L.chain == Chain::kIsEntry)
      entry = load<bool>(f + L.frame_is_entry);
    else
      entry = previous == 0 || ((previous & 7) == 0 && load<int8_t>(previous + L.frame_owner) == py::kOwnedByCstack);
    f = previous;
    return true;
  };
  // Placed first as kPythonAddressTag | index into codes[]: is_python_address holds for them, as for the
  // pseudo-addresses they become.
  uintptr_t out[kMaxStackDepth + 8];
  if (cap > sizeof out / sizeof out[0]) cap = sizeof out / sizeof out[0];
  size_t o = 0, after_last = 0;
  size_t first = cap, last = 0;  // where the first and the last Python frame went
  for (size_t i = 0; i < n && o < cap; ++i) {
    if (raw[i] >= g_frames.eval_start && raw[i] < g_frames.eval_end) {
      // This evaluation loop's frames: from the innermost not placed yet to its entry frame.
      const size_t before = o;
      bool entry = false;
      while (o < cap && next_frame(entry)) {
        out[o++] = kPythonAddressTag | (np - 1);
        if (entry) break;
      }
      if (o != before) {
        if (first == cap) first = before;
        last = o - 1;
        after_last = o;
        continue;
      }
    }
    out[o++] = raw[i];
  }
  // Frames of evaluation loops whose native frame was not recognised (a return address in a part of the
  // function the compiler split off): after the last placed group, or outermost when none was placed. Not
  // when the native stack was cut (their loops are among the frames not captured).
  if (!cut) {
    const size_t from = np;
    bool entry = false;
    while (o + (np - from) < cap && next_frame(entry)) {
    }
    const size_t extra = np - from;
    if (extra != 0) {
      const size_t at_ = after_last != 0 ? after_last : o;
      memmove(out + at_ + extra, out + at_, (o - at_) * sizeof out[0]);
      for (size_t k = 0; k < extra; ++k) out[at_ + k] = kPythonAddressTag | (from + k);
      o += extra;
      // The frames moved: find the first and the last Python frame again.
      first = cap;
      for (size_t k = 0; k < o; ++k)
        if (is_python_address(out[k])) {
          if (first == cap) first = k;
          last = k;
        }
    }
  }
  if (np == 0) return n;
  // Between two Python frames, the interpreter's own native frames are the machinery of calls
  // (_PyObject_MakeTpCall, _PyFunction_Vectorcall, a builtin's C code): left out, so deep Python stacks fit
  // the depth cap and share their prefixes. Frames of other modules (C extensions) stay.
  size_t kept = 0;
  for (size_t k = 0; k < o; ++k) {
    const uintptr_t a = out[k];
    if (k > first && k < last && !is_python_address(a) && a >= g_frames.text_start && a < g_frames.text_end) continue;
    // The caller keeps the innermost `keep` frames (and knows the stack was cut when there are more): the
    // frames past those are not needed, so their codes are not looked up.
    if (kept == keep) {
      raw[kept] = a;  // one more, so the caller sees the cut (a placeholder if Python: never interned)
      return kept + 1;
    }
    if (is_python_address(a)) {
      const size_t q = a & ~kPythonAddressTag;
      raw[kept++] = code_prefix(codes[q], may_note) | at[q];
    } else {
      raw[kept++] = a;
    }
  }
  return kept;
}

}  // namespace memtrack::preload
