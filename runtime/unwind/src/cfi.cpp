// .eh_frame_hdr search and CFI evaluation, reduced to a compact rule (cfi.h). References: the LSB's
// "Exception Frames" (.eh_frame, .eh_frame_hdr, the DW_EH_PE pointer encodings) and DWARF 4, section 6.4
// (call frame instructions). Only what x86_64 code emitted by gcc, clang and hand-written glibc assembly
// uses is handled; anything else yields kFallback so the frame is stepped by libunwind instead.
#include "cfi.h"

#include <cstring>

namespace memtrack::unwind {
namespace {

// DWARF register numbers on x86_64 (System V psABI, figure 3.36).
constexpr unsigned kRegRbp = 6;
constexpr unsigned kRegRsp = 7;
constexpr unsigned kRegRa = 16;

// Pointer encodings (DW_EH_PE_*).
constexpr std::uint8_t kPeOmit = 0xff;
constexpr std::uint8_t kPeAbsptr = 0x00, kPeUleb128 = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
                       kPeSleb128 = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c;
constexpr std::uint8_t kPePcrel = 0x10, kPeDatarel = 0x30;
constexpr std::uint8_t kPeIndirect = 0x80;

// A cursor over mapped memory with an end bound: a malformed length stops parsing instead of running off.
struct Reader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool ok = true;

  bool need(std::size_t n) {
    if (!ok || static_cast<std::size_t>(end - p) < n) ok = false;
    return ok;
  }
  template <typename T>
  T fixed() {
    T v{};
    if (!need(sizeof(T))) return v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  std::uint64_t uleb() {
    std::uint64_t v = 0;
    unsigned shift = 0;
    while (need(1)) {
      const std::uint8_t b = *p++;
      if (shift < 64) v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  std::int64_t sleb() {
    std::uint64_t v = 0;
    unsigned shift = 0;
    std::uint8_t b = 0;
    while (need(1)) {
      b = *p++;
      if (shift < 64) v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    if (shift < 64 && (b & 0x40)) v |= ~std::uint64_t{0} << shift;
    return static_cast<std::int64_t>(v);
  }
  // A DW_EH_PE-encoded pointer. data_base is .eh_frame_hdr's address (datarel is only used there).
  std::uintptr_t pointer(std::uint8_t enc, std::uintptr_t data_base) {
    if (enc == kPeOmit) return 0;
    const std::uintptr_t here = reinterpret_cast<std::uintptr_t>(p);
    std::uint64_t v = 0;
    switch (enc & 0x0f) {
      case kPeAbsptr:
        v = fixed<std::uint64_t>();
        break;
      case kPeUleb128:
        v = uleb();
        break;
      case kPeUdata2:
        v = fixed<std::uint16_t>();
        break;
      case kPeUdata4:
        v = fixed<std::uint32_t>();
        break;
      case kPeUdata8:
        v = fixed<std::uint64_t>();
        break;
      case kPeSleb128:
        v = static_cast<std::uint64_t>(sleb());
        break;
      case kPeSdata2:
        v = static_cast<std::uint64_t>(static_cast<std::int64_t>(fixed<std::int16_t>()));
        break;
      case kPeSdata4:
        v = static_cast<std::uint64_t>(static_cast<std::int64_t>(fixed<std::int32_t>()));
        break;
      case kPeSdata8:
        v = fixed<std::uint64_t>();
        break;
      default:
        ok = false;
        return 0;
    }
    switch (enc & 0x70) {
      case 0x00:
        break;
      case kPePcrel:
        v += here;
        break;
      case kPeDatarel:
        v += data_base;
        break;
      default:
        ok = false;
        return 0;  // textrel/funcrel/aligned: not used on x86_64 Linux
    }
    if ((enc & kPeIndirect) && ok && v != 0) std::memcpy(&v, reinterpret_cast<const void*>(v), sizeof(v));
    return static_cast<std::uintptr_t>(v);
  }
};

// Sizes of the fixed part of an encoding, for .eh_frame_hdr's table (which must use a fixed-size one).
int fixed_size(std::uint8_t enc) {
  switch (enc & 0x0f) {
    case kPeUdata2:
    case kPeSdata2:
      return 2;
    case kPeUdata4:
    case kPeSdata4:
      return 4;
    case kPeAbsptr:
    case kPeUdata8:
    case kPeSdata8:
      return 8;
    default:
      return 0;
  }
}

// The rules being tracked while the CFI program runs. Registers other than rbp and the return address
// are not tracked: the unwinder never needs them, except through a CFA or expression that names them, which
// makes the frame non-compact.
struct RegRule {
  enum Kind : std::uint8_t { kSame, kUndefined, kOffset, kExprRbp, kOther } kind = kSame;
  std::int64_t offset = 0;
};
struct Row {
  enum CfaKind : std::uint8_t { kReg, kDerefRbp, kOtherExpr } cfa_kind = kReg;
  unsigned cfa_reg = kRegRsp;
  std::int64_t cfa_offset = 8;
  RegRule rbp;
  RegRule ra;
};

struct Cie {
  std::uint64_t code_align = 1;
  std::int64_t data_align = -8;
  unsigned ra_reg = kRegRa;
  std::uint8_t fde_enc = kPeAbsptr;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const std::uint8_t* insns = nullptr;
  const std::uint8_t* insns_end = nullptr;
};

// Is the expression [p, p+len) exactly "DW_OP_breg6 off" (optionally followed by DW_OP_deref)? Sets *off.
bool breg6_expr(const std::uint8_t* p, std::uint64_t len, bool want_deref, std::int64_t* off) {
  constexpr std::uint8_t kOpBreg6 = 0x76, kOpDeref = 0x06;
  Reader r{p, p + len};
  if (r.fixed<std::uint8_t>() != kOpBreg6) return false;
  *off = r.sleb();
  if (want_deref && r.fixed<std::uint8_t>() != kOpDeref) return false;
  return r.ok && r.p == r.end;
}

// Runs CFI instructions, stopping before the first row that starts past `target`. `initial` is the row
// after the CIE's instructions (DW_CFA_restore goes back to it). Returns false on an instruction it does
// not understand.
bool run_cfi(Reader r, const Cie& cie, std::uintptr_t loc, std::uintptr_t target, const Row* initial, Row* row) {
  constexpr int kStackDepth = 8;
  Row stack[kStackDepth];
  int depth = 0;
  auto set_reg = [&](std::uint64_t reg, RegRule rule) {
    if (reg == kRegRbp) row->rbp = rule;
    if (reg == cie.ra_reg) row->ra = rule;
  };
  auto restore_reg = [&](std::uint64_t reg) {
    const Row base = initial ? *initial : Row{};
    if (reg == kRegRbp) row->rbp = base.rbp;
    if (reg == cie.ra_reg) row->ra = base.ra;
  };
  auto advance = [&](std::uint64_t delta) {
    loc += delta * cie.code_align;
    return loc <= target;
  };
  while (r.ok && r.p < r.end) {
    const std::uint8_t op = r.fixed<std::uint8_t>();
    const std::uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:  // DW_CFA_advance_loc
        if (!advance(low)) return true;
        continue;
      case 2:  // DW_CFA_offset
        set_reg(low, {RegRule::kOffset, static_cast<std::int64_t>(r.uleb()) * cie.data_align});
        continue;
      case 3:  // DW_CFA_restore
        restore_reg(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;    // DW_CFA_nop
      case 0x01:  // DW_CFA_set_loc
        loc = r.pointer(cie.fde_enc, 0);
        if (loc > target) return true;
        break;
      case 0x02:  // DW_CFA_advance_loc1
        if (!advance(r.fixed<std::uint8_t>())) return true;
        break;
      case 0x03:  // DW_CFA_advance_loc2
        if (!advance(r.fixed<std::uint16_t>())) return true;
        break;
      case 0x04:  // DW_CFA_advance_loc4
        if (!advance(r.fixed<std::uint32_t>())) return true;
        break;
      case 0x05: {  // DW_CFA_offset_extended
        const std::uint64_t reg = r.uleb();
        set_reg(reg, {RegRule::kOffset, static_cast<std::int64_t>(r.uleb()) * cie.data_align});
        break;
      }
      case 0x06:  // DW_CFA_restore_extended
        restore_reg(r.uleb());
        break;
      case 0x07:  // DW_CFA_undefined
        set_reg(r.uleb(), {RegRule::kUndefined, 0});
        break;
      case 0x08:  // DW_CFA_same_value
        set_reg(r.uleb(), {RegRule::kSame, 0});
        break;
      case 0x09: {  // DW_CFA_register: the value lives in another register, which is not tracked
        const std::uint64_t reg = r.uleb();
        (void)r.uleb();
        set_reg(reg, {RegRule::kOther, 0});
        break;
      }
      case 0x0a:  // DW_CFA_remember_state
        if (depth == kStackDepth) return false;
        stack[depth++] = *row;
        break;
      case 0x0b:  // DW_CFA_restore_state
        if (depth == 0) return false;
        *row = stack[--depth];
        break;
      case 0x0c:  // DW_CFA_def_cfa
        row->cfa_kind = Row::kReg;
        row->cfa_reg = static_cast<unsigned>(r.uleb());
        row->cfa_offset = static_cast<std::int64_t>(r.uleb());
        break;
      case 0x0d:  // DW_CFA_def_cfa_register
        row->cfa_kind = Row::kReg;
        row->cfa_reg = static_cast<unsigned>(r.uleb());
        break;
      case 0x0e:  // DW_CFA_def_cfa_offset
        row->cfa_offset = static_cast<std::int64_t>(r.uleb());
        break;
      case 0x0f: {  // DW_CFA_def_cfa_expression
        const std::uint64_t len = r.uleb();
        if (!r.need(len)) return false;
        std::int64_t off = 0;
        row->cfa_kind = breg6_expr(r.p, len, true, &off) ? Row::kDerefRbp : Row::kOtherExpr;
        row->cfa_offset = off;
        r.p += len;
        break;
      }
      case 0x10: {  // DW_CFA_expression
        const std::uint64_t reg = r.uleb();
        const std::uint64_t len = r.uleb();
        if (!r.need(len)) return false;
        std::int64_t off = 0;
        if (breg6_expr(r.p, len, false, &off) && reg == kRegRbp)
          set_reg(reg, {RegRule::kExprRbp, off});
        else
          set_reg(reg, {RegRule::kOther, 0});
        r.p += len;
        break;
      }
      case 0x11: {  // DW_CFA_offset_extended_sf
        const std::uint64_t reg = r.uleb();
        set_reg(reg, {RegRule::kOffset, r.sleb() * cie.data_align});
        break;
      }
      case 0x12:  // DW_CFA_def_cfa_sf
        row->cfa_kind = Row::kReg;
        row->cfa_reg = static_cast<unsigned>(r.uleb());
        row->cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x13:  // DW_CFA_def_cfa_offset_sf
        row->cfa_offset = r.sleb() * cie.data_align;
        break;
      case 0x14:    // DW_CFA_val_offset
      case 0x15: {  // DW_CFA_val_offset_sf
        const std::uint64_t reg = r.uleb();
        if (op == 0x14)
          (void)r.uleb();
        else
          (void)r.sleb();
        set_reg(reg, {RegRule::kOther, 0});
        break;
      }
      case 0x16: {  // DW_CFA_val_expression
        const std::uint64_t reg = r.uleb();
        const std::uint64_t len = r.uleb();
        if (!r.need(len)) return false;
        set_reg(reg, {RegRule::kOther, 0});
        r.p += len;
        break;
      }
      case 0x2e:  // DW_CFA_GNU_args_size
        (void)r.uleb();
        break;
      case 0x2f: {  // DW_CFA_GNU_negative_offset_extended
        const std::uint64_t reg = r.uleb();
        set_reg(reg, {RegRule::kOffset, -static_cast<std::int64_t>(r.uleb()) * cie.data_align});
        break;
      }
      default:
        return false;
    }
  }
  return r.ok;
}

bool parse_cie(const std::uint8_t* cie_start, Cie* cie) {
  Reader r{cie_start, cie_start + 16};
  std::uint64_t length = r.fixed<std::uint32_t>();
  if (length == 0xffffffff) length = r.fixed<std::uint64_t>();
  if (!r.ok || length == 0) return false;
  r.end = r.p + length;
  if (r.fixed<std::uint32_t>() != 0) return false;  // CIE id in .eh_frame
  const std::uint8_t version = r.fixed<std::uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* aug = reinterpret_cast<const char*>(r.p);
  const std::size_t aug_len = strnlen(aug, static_cast<std::size_t>(r.end - r.p));
  r.p += aug_len + 1;
  if (aug[0] != '\0' && aug[0] != 'z') return false;  // "eh" and other ancient forms
  cie->code_align = r.uleb();
  cie->data_align = r.sleb();
  cie->ra_reg = version == 1 ? r.fixed<std::uint8_t>() : static_cast<unsigned>(r.uleb());
  if (aug[0] == 'z') {
    cie->has_augmentation_data = true;
    const std::uint64_t data_len = r.uleb();
    const std::uint8_t* data_end = r.p + data_len;
    for (std::size_t i = 1; i < aug_len && r.ok; ++i) {
      switch (aug[i]) {
        case 'R':
          cie->fde_enc = r.fixed<std::uint8_t>();
          break;
        case 'L':
          (void)r.fixed<std::uint8_t>();
          break;
        case 'P': {
          const std::uint8_t enc = r.fixed<std::uint8_t>();
          // The personality pointer is only skipped: decode without following an indirection.
          (void)r.pointer(static_cast<std::uint8_t>(enc & ~kPeIndirect), 0);
          break;
        }
        case 'S':
          cie->signal_frame = true;
          break;
        case 'B':
          break;
        default:
          i = aug_len;
          break;  // unknown: the length lets us skip the rest
      }
    }
    r.p = data_end;
  }
  cie->insns = r.p;
  cie->insns_end = r.end;
  return r.ok && r.p <= r.end;
}

// Binary search of .eh_frame_hdr's sorted table for the FDE whose initial location is the greatest one
// <= address. Returns the FDE's address or null.
const std::uint8_t* find_fde(std::uintptr_t hdr_addr, std::uintptr_t address) {
  const auto* hdr = reinterpret_cast<const std::uint8_t*>(hdr_addr);
  Reader r{hdr, hdr + 4096};
  if (r.fixed<std::uint8_t>() != 1) return nullptr;  // version
  const std::uint8_t eh_frame_ptr_enc = r.fixed<std::uint8_t>();
  const std::uint8_t fde_count_enc = r.fixed<std::uint8_t>();
  const std::uint8_t table_enc = r.fixed<std::uint8_t>();
  (void)r.pointer(eh_frame_ptr_enc, hdr_addr);
  if (fde_count_enc == kPeOmit || table_enc == kPeOmit) return nullptr;
  const std::uintptr_t count = r.pointer(fde_count_enc, hdr_addr);
  if (!r.ok || count == 0) return nullptr;
  const int size = fixed_size(table_enc);
  if (size == 0 || (table_enc & 0x70) != kPeDatarel) return nullptr;  // gold/lld/bfd all emit datarel|sdata4
  const std::uint8_t* table = r.p;
  auto entry = [&](std::uintptr_t i, int field) {
    Reader e{table + (2 * i + field) * size, table + (2 * i + field + 1) * size};
    return e.pointer(table_enc, hdr_addr);
  };
  std::uintptr_t lo = 0, hi = count;  // invariant: entries before lo start <= address, from hi on > address
  while (lo < hi) {
    const std::uintptr_t mid = lo + (hi - lo) / 2;
    if (entry(mid, 0) <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return nullptr;
  return reinterpret_cast<const std::uint8_t*>(entry(lo - 1, 1));
}

}  // namespace

bool pack_rule(const Rule& rule, std::uint64_t* bits) {
  constexpr std::int32_t kCfaMax = (1 << 26) - 1, kRbpMax = (1 << 15) - 1;
  if (rule.cfa_offset > kCfaMax || rule.cfa_offset < -kCfaMax - 1) return false;
  if (rule.rbp_offset > kRbpMax || rule.rbp_offset < -kRbpMax - 1) return false;
  *bits = static_cast<std::uint64_t>(rule.kind) | static_cast<std::uint64_t>(rule.rbp) << 3 |
          (static_cast<std::uint64_t>(static_cast<std::uint32_t>(rule.cfa_offset)) & 0x7ffffff) << 5 |
          (static_cast<std::uint64_t>(static_cast<std::uint32_t>(rule.rbp_offset)) & 0xffff) << 32;
  return true;
}

Rule rule_for(const ModuleCfi& module, std::uintptr_t address) {
  Rule none;
  none.kind = RuleKind::kNoInfo;
  Rule fallback;
  fallback.kind = RuleKind::kFallback;
  if (module.eh_frame_hdr == 0) return none;
  const std::uint8_t* fde = find_fde(module.eh_frame_hdr, address);
  if (fde == nullptr) return none;

  Reader r{fde, fde + 16};
  std::uint64_t length = r.fixed<std::uint32_t>();
  if (length == 0xffffffff) length = r.fixed<std::uint64_t>();
  if (!r.ok || length == 0) return none;
  r.end = r.p + length;
  const std::uint8_t* cie_ptr_field = r.p;
  const std::uint32_t cie_offset = r.fixed<std::uint32_t>();
  if (cie_offset == 0) return none;  // a CIE, not an FDE: the table is corrupt
  Cie cie;
  if (!parse_cie(cie_ptr_field - cie_offset, &cie)) return fallback;
  const std::uintptr_t pc_begin = r.pointer(cie.fde_enc, 0);
  const std::uintptr_t pc_range = r.pointer(static_cast<std::uint8_t>(cie.fde_enc & 0x0f), 0);
  if (!r.ok || address < pc_begin || address - pc_begin >= pc_range) return none;
  if (cie.has_augmentation_data) r.p += r.uleb();
  if (cie.signal_frame) return fallback;  // a hand-made signal frame other than __restore_rt

  Row initial;
  initial.cfa_offset = 8;
  if (!run_cfi(Reader{cie.insns, cie.insns_end}, cie, pc_begin, ~std::uintptr_t{0}, nullptr, &initial)) return fallback;
  Row row = initial;
  if (!run_cfi(r, cie, pc_begin, address, &initial, &row)) return fallback;

  Rule rule;
  if (row.ra.kind == RegRule::kUndefined) {
    rule.kind = RuleKind::kEnd;
    return rule;
  }
  if (row.ra.kind != RegRule::kOffset || row.ra.offset != -8) return fallback;
  switch (row.cfa_kind) {
    case Row::kReg:
      if (row.cfa_reg == kRegRsp)
        rule.kind = RuleKind::kCfaRsp;
      else if (row.cfa_reg == kRegRbp)
        rule.kind = RuleKind::kCfaRbp;
      else
        return fallback;
      break;
    case Row::kDerefRbp:
      rule.kind = RuleKind::kCfaDerefRbp;
      break;
    case Row::kOtherExpr:
      return fallback;
  }
  rule.cfa_offset = static_cast<std::int32_t>(row.cfa_offset);
  if (rule.cfa_offset != row.cfa_offset) return fallback;
  switch (row.rbp.kind) {
    case RegRule::kSame:
      rule.rbp = RbpRule::kSame;
      break;
    case RegRule::kOffset:
      rule.rbp = RbpRule::kAtCfa;
      break;
    case RegRule::kExprRbp:
      rule.rbp = RbpRule::kAtRbp;
      break;
    default:
      return fallback;  // undefined or in another register
  }
  rule.rbp_offset = static_cast<std::int32_t>(row.rbp.offset);
  if (rule.rbp_offset != row.rbp.offset) return fallback;
  return rule;
}

}  // namespace memtrack::unwind
