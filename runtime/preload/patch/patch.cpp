#include "patch.h"

#include <Zydis/Zydis.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>

#include <atomic>

namespace memtrack::preload {
namespace {

constexpr size_t kIslandBytes = 64 * 1024;
constexpr int kMaxIslands = 32;
constexpr size_t kJumpBytes = 5;      // jmp rel32
constexpr size_t kAbsJumpBytes = 14;  // jmp [rip+0]; .quad target
constexpr size_t kMaxDisplaced = 32;  // at most 5 bytes of instructions of up to 15 bytes each, relocated

struct Island {
  uintptr_t base;
  size_t used;
};
constinit Island g_islands[kMaxIslands] = {};
constinit int g_island_count = 0;
constinit std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
constinit bool g_membarrier = false;
constinit bool g_membarrier_tried = false;

bool within_rel32(uintptr_t from, uintptr_t to) {
  const int64_t d = static_cast<int64_t>(to - from);
  return d >= INT32_MIN && d <= INT32_MAX;
}

long raw_mprotect(uintptr_t addr, size_t len, int prot) { return syscall(SYS_mprotect, addr, len, prot); }

// An island with `bytes` free within rel32 reach of `near` (both ends), mapped with a raw system call so it
// is not an event of the program.
uintptr_t island_alloc(uintptr_t near, size_t bytes) {
  for (int i = 0; i < g_island_count; ++i) {
    Island& is = g_islands[i];
    if (is.used + bytes <= kIslandBytes && within_rel32(near, is.base) && within_rel32(near, is.base + kIslandBytes)) {
      const uintptr_t p = is.base + is.used;
      is.used += (bytes + 15) & ~size_t{15};
      return p;
    }
  }
  if (g_island_count == kMaxIslands) return 0;
  const uintptr_t start = near & ~(kIslandBytes - 1);
  // Nearest free 64 KiB first, below and above; MAP_FIXED_NOREPLACE never replaces a mapping.
  for (uintptr_t k = 1; k < (uintptr_t{1} << 31) / kIslandBytes - 2; ++k) {
    for (int side = 0; side < 2; ++side) {
      const uintptr_t addr = side == 0 ? start - k * kIslandBytes : start + k * kIslandBytes;
      if (side == 0 && addr > start) continue;  // wrapped below zero
      const long r = syscall(SYS_mmap, addr, kIslandBytes, PROT_READ | PROT_EXEC,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (r < 0 && r > -4096) continue;
      if (static_cast<uintptr_t>(r) != addr) {  // a kernel without MAP_FIXED_NOREPLACE treats it as a hint
        syscall(SYS_munmap, r, kIslandBytes);
        continue;
      }
      g_islands[g_island_count++] = Island{addr, (bytes + 15) & ~size_t{15}};
      return addr;
    }
  }
  return 0;
}

void put_abs_jump(uint8_t* at, uintptr_t target) {
  at[0] = 0xff;  // jmp qword [rip+0]
  at[1] = 0x25;
  at[2] = at[3] = at[4] = at[5] = 0;
  memcpy(at + 6, &target, 8);
}

void serialize_all_threads() {
  if (!g_membarrier_tried) {
    g_membarrier_tried = true;
    g_membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
  }
  if (g_membarrier) (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

bool is_rip_relative(const ZydisDecodedInstruction& in) {
  return (in.attributes & ZYDIS_ATTRIB_HAS_MODRM) != 0 && in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5;
}

// The target of a relative branch, or 0 when `in` is not one.
uintptr_t branch_target(const ZydisDecodedInstruction& in, uintptr_t ip) {
  if ((in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) == 0 || is_rip_relative(in)) return 0;
  for (const auto& imm : in.raw.imm)
    if (imm.is_relative) return ip + in.length + static_cast<uintptr_t>(imm.value.s);
  return 0;
}

struct Displaced {
  uint8_t code[kMaxDisplaced + 2 * kAbsJumpBytes];
  size_t code_len;           // the relocated copy, without the jump back
  size_t src_len;            // bytes of the original covered (>= the bytes the patch overwrites)
  bool ends_in_ret = false;  // the last relocated instruction returns: no jump back is needed
};

// Builds the relocated copy of the instructions of `entry` that cover its first `cover` bytes, as it will run
// at `dst`. With `ret_ends` a return may be the last of them (the short-jump patch: the return is copied and
// nothing after it runs).
const char* relocate(const ZydisDecoder& dec, uintptr_t entry, size_t size, uintptr_t dst, Displaced& out,
                     size_t cover = kJumpBytes, bool ret_ends = false) {
  out.code_len = 0;
  out.src_len = 0;
  while (out.src_len < cover) {
    ZydisDecodedInstruction in;
    const uintptr_t ip = entry + out.src_len;
    if (!ZYAN_SUCCESS(
            ZydisDecoderDecodeInstruction(&dec, nullptr, reinterpret_cast<const void*>(ip), size - out.src_len, &in)))
      return "an instruction in its first 5 bytes cannot be decoded";
    const uint8_t* src = reinterpret_cast<const uint8_t*>(ip);
    uint8_t* at = out.code + out.code_len;
    if (in.meta.category == ZYDIS_CATEGORY_RET) {
      if (!ret_ends) return "it returns within its first 5 bytes";
      memcpy(at, src, in.length);
      out.code_len += in.length;
      out.src_len += in.length;
      out.ends_in_ret = true;
      return nullptr;
    }
    if (is_rip_relative(in)) {
      const uintptr_t target = ip + in.length + static_cast<uintptr_t>(in.raw.disp.value);
      const uintptr_t new_ip = dst + out.code_len;
      if (in.raw.disp.size != 32 || !within_rel32(new_ip + in.length, target))
        return "a RIP-relative instruction in its first 5 bytes is out of the island's reach";
      memcpy(at, src, in.length);
      const int32_t disp = static_cast<int32_t>(static_cast<int64_t>(target - (new_ip + in.length)));
      memcpy(at + in.raw.disp.offset, &disp, 4);
      out.code_len += in.length;
    } else if (const uintptr_t target = branch_target(in, ip)) {
      if (in.meta.category == ZYDIS_CATEGORY_CALL && in.length == 5) {
        // call [rip+2]; jmp +8; .quad target
        const uint8_t seq[8] = {0xff, 0x15, 0x02, 0x00, 0x00, 0x00, 0xeb, 0x08};
        memcpy(at, seq, 8);
        memcpy(at + 8, &target, 8);
        out.code_len += 16;
      } else if (in.meta.category == ZYDIS_CATEGORY_UNCOND_BR && in.length == 5) {
        put_abs_jump(at, target);
        out.code_len += kAbsJumpBytes;
      } else if ((in.meta.category == ZYDIS_CATEGORY_COND_BR || in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) &&
                 ((in.length == 2 && (src[0] == 0xeb || (src[0] >= 0x70 && src[0] <= 0x7f))) ||
                  (in.length == 6 && src[0] == 0x0f && src[1] >= 0x80 && src[1] <= 0x8f))) {
        // jcc/jmp rel8 or jcc rel32: re-encoded as rel32 from the trampoline (the island is within reach of
        // the function, so of its branch targets too).
        const bool jmp = src[0] == 0xeb;
        const size_t n = jmp ? 5 : 6;
        const uintptr_t end = dst + out.code_len + n;
        if (!within_rel32(end, target)) return "a branch in its first 5 bytes is out of the island's reach";
        if (jmp) {
          at[0] = 0xe9;
        } else {
          at[0] = 0x0f;
          at[1] = static_cast<uint8_t>(in.length == 2 ? 0x80 + (src[0] - 0x70) : src[1]);
        }
        const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(target - end));
        memcpy(at + n - 4, &rel, 4);
        out.code_len += n;
      } else {
        return "its first 5 bytes hold a branch that cannot be relocated (loop, jrcxz, indirect through RIP)";
      }
    } else {
      memcpy(at, src, in.length);
      out.code_len += in.length;
    }
    out.src_len += in.length;
    if (out.code_len > kMaxDisplaced + kAbsJumpBytes) return "its first instructions are too long to relocate";
  }
  return nullptr;
}

// No branch anywhere in the function may land inside the first `displaced` bytes (after the first byte):
// they are gone.
const char* check_branches(const ZydisDecoder& dec, uintptr_t entry, size_t size, size_t displaced) {
  size_t off = 0;
  while (off < size) {
    ZydisDecodedInstruction in;
    if (!ZYAN_SUCCESS(
            ZydisDecoderDecodeInstruction(&dec, nullptr, reinterpret_cast<const void*>(entry + off), size - off, &in)))
      return "its body cannot be decoded (to check that no branch lands in the patched bytes)";
    const uintptr_t target = branch_target(in, entry + off);
    if (target > entry && target < entry + displaced) return "a branch of the function lands in its first bytes";
    off += in.length;
  }
  return nullptr;
}

}  // namespace

namespace {

constexpr size_t kShortJumpBytes = 2;  // jmp rel8

// Whether [from, to) is alignment padding the compiler or linker put between functions: int3 or nop
// instructions only, decoded whole within the range.
bool is_padding(const ZydisDecoder& dec, uintptr_t from, uintptr_t to) {
  for (uintptr_t ip = from; ip < to;) {
    ZydisDecodedInstruction in;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, nullptr, reinterpret_cast<const void*>(ip), to - ip, &in)))
      return false;
    if (in.mnemonic != ZYDIS_MNEMONIC_NOP && in.mnemonic != ZYDIS_MNEMONIC_INT3) return false;
    ip += in.length;
  }
  return true;
}

// Stores `n` bytes at `at` with one aligned 8-byte store (they lie in one quadword).
void store_in_word(uintptr_t at, const uint8_t* bytes, size_t n) {
  const uintptr_t word = at & ~uintptr_t{7};
  auto* q = reinterpret_cast<uint64_t*>(word);
  uint8_t now[8];
  const uint64_t old = __atomic_load_n(q, __ATOMIC_ACQUIRE);
  memcpy(now, &old, 8);
  memcpy(now + (at - word), bytes, n);
  uint64_t v;
  memcpy(&v, now, 8);
  __atomic_store_n(q, v, __ATOMIC_SEQ_CST);
}

struct Pending {
  uintptr_t entry, jump_from, island, pad;
  bool direct;
};
constexpr int kMaxPending = 256;
constinit Pending g_pending[kMaxPending] = {};
constinit int g_pending_count = 0;
constinit bool g_defer = false;

}  // namespace

bool needs_padding(uintptr_t entry, size_t size) { return size < kJumpBytes || (entry & 7) + kJumpBytes > 8; }

const char* patch_entry(uintptr_t entry, size_t size, uintptr_t limit, uintptr_t hook, uintptr_t* original) {
#if !defined(__x86_64__)
  (void)entry, (void)size, (void)limit, (void)hook, (void)original;
  return "entry patching is implemented for x86-64 only";
#endif
  if (size == 0) return "its size is unknown";
  // The 5-byte jump at the entry needs 5 bytes of the function in one aligned quadword. Else a 2-byte jump
  // to a 5-byte one written in the alignment padding after the function (nothing runs there), when the
  // symbol table and the bytes prove it is padding.
  const bool direct = !needs_padding(entry, size);
  while (g_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  const char* why = nullptr;
  ZydisDecoder dec;
  ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  uintptr_t pad = 0;  // the 5-byte jump's place in the padding (the short-jump patch)
  if (!direct) {
    const uintptr_t end = entry + size;
    const uintptr_t pad_end = (end + 15) & ~uintptr_t{15};
    pad = end > entry + kShortJumpBytes ? end : entry + kShortJumpBytes;
    if ((entry & 7) + kShortJumpBytes > 8)
      why = "its first 2 bytes straddle an 8-byte word (no atomic patch)";
    else if (limit == 0 || limit < pad_end)
      why = size < kJumpBytes ? "it is shorter than 5 bytes (and the symbol table does not prove padding after it)"
                              : "its first 5 bytes straddle an 8-byte word (no atomic patch), and the symbol table "
                                "does not prove padding after it";
    else if (pad + kJumpBytes > pad_end || pad - (entry + kShortJumpBytes) > 127 || !is_padding(dec, end, pad_end))
      why = size < kJumpBytes ? "it is shorter than 5 bytes, with no padding after it for a jump"
                              : "its first 5 bytes straddle an 8-byte word (no atomic patch), with no padding after "
                                "it for a jump";
  }
  Displaced d{};
  uintptr_t island = 0;
  const size_t need = kAbsJumpBytes + sizeof d.code;
  if (why == nullptr && (island = island_alloc(entry, need)) == 0)
    why = "no island page can be mapped within 2 GiB of it";
  const uintptr_t page = island & ~uintptr_t{4095};
  const uintptr_t tramp = island + 16;  // the hook's absolute jump first, then the trampoline
  const size_t overwritten = direct ? kJumpBytes : kShortJumpBytes;
  if (why == nullptr) why = relocate(dec, entry, size, tramp, d, overwritten, !direct);
  if (why == nullptr) why = check_branches(dec, entry, size, direct ? d.src_len : overwritten);
  const uintptr_t jump_from = direct ? entry : pad;  // where the jmp rel32 to the island is
  if (why == nullptr && !within_rel32(jump_from + kJumpBytes, island)) why = "the island is out of jmp rel32 reach";
  const uintptr_t text = entry & ~uintptr_t{4095};
  const size_t text_span = ((direct ? entry + kJumpBytes : pad + kJumpBytes) - text + 4095) & ~size_t{4095};
  if (why == nullptr) {
    // The island's bytes first, while no one can reach them.
    const size_t span = (island + need - page + 4095) & ~size_t{4095};
    if (raw_mprotect(page, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
      why = "its island cannot be made writable";
    } else {
      put_abs_jump(reinterpret_cast<uint8_t*>(island), hook);
      if (!d.ends_in_ret) put_abs_jump(d.code + d.code_len, entry + d.src_len);
      memcpy(reinterpret_cast<void*>(tramp), d.code, d.code_len + kAbsJumpBytes);
      raw_mprotect(page, span, PROT_READ | PROT_EXEC);
      __builtin___clear_cache(reinterpret_cast<char*>(island), reinterpret_cast<char*>(island + need));
      *original = tramp;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (raw_mprotect(text, text_span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        why = "its code page cannot be made writable";
    }
  }
  if (why == nullptr && g_defer) {
    // `memtrack attach`: the entry's jump is written later, by commit_deferred_entries, while the tool holds
    // every other thread of the process stopped outside the entry's first bytes.
    raw_mprotect(text, text_span, PROT_READ | PROT_EXEC);
    if (g_pending_count == kMaxPending) {
      why = "too many entries to patch at once";
    } else {
      Pending& p = g_pending[g_pending_count++];
      p.entry = entry;
      p.jump_from = jump_from;
      p.island = island;
      p.pad = pad;
      p.direct = direct;
    }
    g_lock.clear(std::memory_order_release);
    return why;
  }
  if (why == nullptr) {
    uint8_t jmp[kJumpBytes];
    const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(island - (jump_from + kJumpBytes)));
    jmp[0] = 0xe9;
    memcpy(jmp + 1, &rel, 4);
    if (direct) {
      store_in_word(entry, jmp, kJumpBytes);
    } else {
      // The padding's jump first (no thread runs padding), seen by every thread before the entry changes;
      // then the entry's 2 bytes at once.
      memcpy(reinterpret_cast<void*>(pad), jmp, kJumpBytes);
      __builtin___clear_cache(reinterpret_cast<char*>(pad), reinterpret_cast<char*>(pad + kJumpBytes));
      serialize_all_threads();
      const uint8_t short_jmp[kShortJumpBytes] = {0xeb, static_cast<uint8_t>(pad - (entry + kShortJumpBytes))};
      store_in_word(entry, short_jmp, kShortJumpBytes);
    }
    raw_mprotect(text, text_span, PROT_READ | PROT_EXEC);
    serialize_all_threads();
  }  // else the island space is left unused: it was never reachable
  g_lock.clear(std::memory_order_release);
  return why;
}

size_t patched_bytes(uintptr_t entry, size_t size) { return needs_padding(entry, size) ? kShortJumpBytes : kJumpBytes; }

bool restore_entry(uintptr_t entry, const uint8_t* saved, size_t n) {
  while (g_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  const uintptr_t text = entry & ~uintptr_t{4095};
  const size_t span = (entry + n - text + 4095) & ~size_t{4095};
  const bool ok = raw_mprotect(text, span, PROT_READ | PROT_WRITE | PROT_EXEC) == 0;
  if (ok) {
    store_in_word(entry, saved, n);
    raw_mprotect(text, span, PROT_READ | PROT_EXEC);
    serialize_all_threads();
  }
  g_lock.clear(std::memory_order_release);
  return ok;
}

void defer_entry_writes(bool on) { g_defer = on; }

int deferred_entries(uintptr_t* entries, uint8_t* lengths, int max) {
  int n = 0;
  for (int i = 0; i < g_pending_count && n < max; ++i, ++n) {
    entries[n] = g_pending[i].entry;
    lengths[n] = static_cast<uint8_t>(g_pending[i].direct ? kJumpBytes : kShortJumpBytes);
  }
  return n;
}

int commit_deferred_entries() {
  while (g_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  int done = 0;
  for (int i = 0; i < g_pending_count; ++i) {
    const Pending& p = g_pending[i];
    const uintptr_t text = p.entry & ~uintptr_t{4095};
    const size_t text_span = ((p.direct ? p.entry + kJumpBytes : p.pad + kJumpBytes) - text + 4095) & ~size_t{4095};
    if (raw_mprotect(text, text_span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) continue;
    uint8_t jmp[kJumpBytes];
    const int32_t rel = static_cast<int32_t>(static_cast<int64_t>(p.island - (p.jump_from + kJumpBytes)));
    jmp[0] = 0xe9;
    memcpy(jmp + 1, &rel, 4);
    if (p.direct) {
      store_in_word(p.entry, jmp, kJumpBytes);
    } else {
      memcpy(reinterpret_cast<void*>(p.pad), jmp, kJumpBytes);
      __builtin___clear_cache(reinterpret_cast<char*>(p.pad), reinterpret_cast<char*>(p.pad + kJumpBytes));
      const uint8_t short_jmp[kShortJumpBytes] = {0xeb, static_cast<uint8_t>(p.pad - (p.entry + kShortJumpBytes))};
      store_in_word(p.entry, short_jmp, kShortJumpBytes);
    }
    raw_mprotect(text, text_span, PROT_READ | PROT_EXEC);
    ++done;
  }
  g_pending_count = 0;
  serialize_all_threads();
  g_lock.clear(std::memory_order_release);
  return done;
}

}  // namespace memtrack::preload
