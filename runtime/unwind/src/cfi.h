// DWARF call-frame information (the .eh_frame flavour) reduced to the compact rules the unwinder caches.
// Internal to memtrack-unwind. Everything here reads memory of modules already mapped and never allocates.
#pragma once

#include <cstdint>

namespace memtrack::unwind {

// How to find the caller's frame from this one. The return address is always at CFA - 8 (x86_64's call
// pushes it there; a rule that says otherwise is not compact).
enum class RuleKind : std::uint8_t {
  kEmpty = 0,        // never stored: marks an empty cache slot
  kCfaRsp = 1,       // CFA = rsp + cfa_offset
  kCfaRbp = 2,       // CFA = rbp + cfa_offset
  kCfaDerefRbp = 3,  // CFA = *(rbp + cfa_offset): gcc's stack-realigning prologue (DW_OP_breg6 off; DW_OP_deref)
  kEnd = 4,          // the return address is undefined (_start, clone): the stack ends here
  kSignal = 5,       // glibc's __restore_rt: the caller's registers are in the ucontext at rsp
  kFallback = 6,     // not compact: step with libunwind
  kNoInfo = 7,       // no module or no FDE covers the address: the stack ends here
};

// How to find the caller's rbp.
enum class RbpRule : std::uint8_t {
  kSame = 0,   // unchanged (callee-saved and not touched, or DW_CFA_same_value)
  kAtCfa = 1,  // *(CFA + rbp_offset)  (DW_CFA_offset)
  kAtRbp = 2,  // *(rbp + rbp_offset)  (DW_CFA_expression r6: DW_OP_breg6 off, the realigning prologue)
};

struct Rule {
  RuleKind kind = RuleKind::kEmpty;
  RbpRule rbp = RbpRule::kSame;
  std::int32_t cfa_offset = 0;
  std::int32_t rbp_offset = 0;
};

// Packs a rule into 48 bits (the cache stores a generation in the other 16). Returns false if an offset
// does not fit (cfa_offset in 27 signed bits, rbp_offset in 16): the caller then stores kFallback.
// The layout (unpacked inline on the hot path): bits 0-2 kind, 3-4 rbp rule, 5-31 cfa_offset, 32-47
// rbp_offset.
bool pack_rule(const Rule& rule, std::uint64_t* bits);
inline RuleKind packed_kind(std::uint64_t bits) { return static_cast<RuleKind>(bits & 7); }
inline RbpRule packed_rbp(std::uint64_t bits) { return static_cast<RbpRule>((bits >> 3) & 3); }
inline std::int32_t packed_cfa_offset(std::uint64_t bits) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)) >> 5;  // arithmetic: sign-extends
}
inline std::int32_t packed_rbp_offset(std::uint64_t bits) {
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(bits >> 32));
}
inline Rule unpack_rule(std::uint64_t bits) {
  return {packed_kind(bits), packed_rbp(bits), packed_cfa_offset(bits), packed_rbp_offset(bits)};
}

// The parts of a loaded module the CFI search needs.
struct ModuleCfi {
  std::uintptr_t eh_frame_hdr = 0;  // runtime address of PT_GNU_EH_FRAME, 0 if the module has none
};

// Computes the rule for the row of the CFI table that covers `address` (a return address minus one, or an
// exact interrupted address) in the module described by `module`. Signal trampolines are recognised by
// the caller, not here.
Rule rule_for(const ModuleCfi& module, std::uintptr_t address);

}  // namespace memtrack::unwind
