// The modules of this process image (stacks.h): every object dl_iterate_phdr lists (the executable, shared
// libraries, dlopen'd ones, the vDSO) is noted once when first seen, and again as unloaded when a later scan
// no longer finds it. Scans run at attach and when a new stack node's address lies outside every known
// module or the loader's load/unload counters moved (checked whenever new nodes are added: a module loaded since
// the last scan matters exactly then). dlclose is not interposed, so an unload is noted at the next new stack
// after the dlclose, not at the dlclose itself (dlopen is, for entry patching: hooks_dlopen.cpp).
#include <fcntl.h>
#include <link.h>
#include <stdint.h>

#include <atomic>

#include "memtrack/runtime/ring.h"
#include "memtrack/symbolize/build_id.h"
#include "ring_client.h"
#include "stacks.h"

namespace memtrack::preload {

constinit uintptr_t g_self_start = 0;
constinit uintptr_t g_self_end = 0;

namespace {

constexpr uint32_t kMaxModules = 1024;

struct Known {
  uint64_t bias, start, end;
  bool seen;  // in the current scan
};
// Written by the scanning thread only (g_scan_lock); read lock-free by in_known_module: `count` is published
// after an entry is complete, and entries are only appended (an unloaded one is marked by start == end).
constinit Known g_known[kMaxModules] = {};
constinit std::atomic<uint32_t> g_count{0};
constinit std::atomic<bool> g_scan_lock{false};
// The loader's counters of loads and unloads (dl_phdr_info::dlpi_adds/subs) at the last scan.
constinit std::atomic<unsigned long long> g_adds{0}, g_subs{0};

int read_counters(dl_phdr_info* info, size_t, void* out) {
  auto* c = static_cast<unsigned long long*>(out);
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1;  // the counters are the same in every entry: the first one is enough
}

void note_module(const dl_phdr_info& info, uint64_t start, uint64_t end) {
  char payload[sizeof(runtime::RingModulePayload) + symbolize::kMaxBuildIdSize + 4096];
  runtime::RingModulePayload head = {};
  head.start = start;
  head.end = end;
  symbolize::BuildId id;
  if (symbolize::build_id_of(info, id)) head.build_id_size = id.size;
  size_t len = sizeof head;
  memcpy(payload + len, id.bytes, head.build_id_size);
  len += head.build_id_size;
  memcpy(payload, &head, sizeof head);
  const char* name = info.dlpi_name;
  char exe[4096];
  if (name == nullptr || *name == '\0') {
    // The executable: dl_iterate_phdr names it "", /proc/self/exe says which file it is.
    const long r = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof exe - 1);
    exe[r > 0 ? r : 0] = '\0';
    name = exe;
  }
  size_t name_len = strlen(name);
  if (name_len > sizeof payload - len) name_len = sizeof payload - len;
  memcpy(payload + len, name, name_len);
  len += name_len;
  (void)write_note(RingEventKind::NoteModule, g_pid, info.dlpi_addr, payload, len);
}

void range_of(const dl_phdr_info& info, uint64_t& start, uint64_t& end) {
  start = UINT64_MAX;
  end = 0;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t s = info.dlpi_addr + ph.p_vaddr, e = s + ph.p_memsz;
    if (s < start) start = s;
    if (e > end) end = e;
  }
}

int on_module(dl_phdr_info* info, size_t, void*) {
  uint64_t start, end;
  range_of(*info, start, end);
  if (end <= start) return 0;
  const uint32_t count = g_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i) {
    Known& k = g_known[i];
    if (k.start == start && k.end == end && k.bias == info->dlpi_addr) {
      k.seen = true;
      return 0;
    }
  }
  // The module that holds this code: its frames are memtrack's.
  const uintptr_t self = reinterpret_cast<uintptr_t>(&on_module);
  if (self >= start && self < end) {
    g_self_start = start;
    g_self_end = end;
  }
  if (count == kMaxModules) return 0;  // more modules than we keep: their stacks still resolve by address
  g_known[count] = {info->dlpi_addr, start, end, true};
  g_count.store(count + 1, std::memory_order_release);
  note_module(*info, start, end);
  return 0;
}

}  // namespace

void scan_modules() {
  bool expected = false;
  if (!g_scan_lock.compare_exchange_strong(expected, true, std::memory_order_acquire)) return;
  unsigned long long counters[2] = {0, 0};
  dl_iterate_phdr(read_counters, counters);
  g_adds.store(counters[0], std::memory_order_relaxed);
  g_subs.store(counters[1], std::memory_order_relaxed);
  const uint32_t before = g_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < before; ++i) g_known[i].seen = g_known[i].start == g_known[i].end;
  dl_iterate_phdr(on_module, nullptr);
  for (uint32_t i = 0; i < before; ++i) {
    Known& k = g_known[i];
    if (k.seen) continue;
    // Gone since the last scan: noted with its range and bias (no path or build-id: the loaded note had them).
    runtime::RingModulePayload head = {};
    head.start = k.start;
    head.end = k.end;
    (void)write_note(RingEventKind::NoteModule, g_pid, k.bias, reinterpret_cast<const char*>(&head), sizeof head,
                     runtime::kRingModuleUnloaded);
    k.start = k.end;  // no address is in it any more
  }
  g_scan_lock.store(false, std::memory_order_release);
}

void rescan_if_changed() {
  unsigned long long counters[2] = {0, 0};
  dl_iterate_phdr(read_counters, counters);
  if (counters[0] != g_adds.load(std::memory_order_relaxed) || counters[1] != g_subs.load(std::memory_order_relaxed))
    scan_modules();
}

bool in_known_module(uintptr_t address) {
  const uint32_t count = g_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < count; ++i)
    if (address >= g_known[i].start && address < g_known[i].end) return true;
  return false;
}

}  // namespace memtrack::preload
