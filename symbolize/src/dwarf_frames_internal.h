// DWARF lookup through libdw: the function, its inlined calls and the source line at an address, from a
// per-unit function index built on first use.
#pragma once

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "elf_symbols_internal.h"
#include "memtrack/symbolize/symbolizer.h"
#include "names_internal.h"

namespace memtrack::symbolize {

inline constexpr std::uint32_t kNoEntry = ~std::uint32_t{0};

// The functions of one compilation unit, indexed on the first address that falls in it: each subprogram and
// inlined subroutine with code, in DIE pre-order, so an entry's nested inlines are entries (index, end).
// dwarf_getscopes() walks the unit's DIE tree on every call; this walks it once.
struct FunctionEntry {
  Dwarf_Die die;
  std::uint32_t parent = kNoEntry;  // the enclosing entry this was inlined into; kNoEntry for a function
  std::uint32_t end = 0;            // one past the last nested entry
  std::uint32_t ranges_begin = 0;
  std::uint32_t ranges_end = 0;
  std::uint32_t depth = 0;
  bool inlined = false;
  bool has_name = false;
  bool qualified = false;  // the name came from a linkage name
  std::string name;        // demangled, cached on first use
};
struct TopRange {
  Dwarf_Addr low;
  Dwarf_Addr high;
  std::uint32_t entry;
};
struct CuIndex {
  Dwarf_Die cudie;
  std::vector<FunctionEntry> entries;
  std::vector<std::pair<Dwarf_Addr, Dwarf_Addr>> ranges;
  std::vector<TopRange> tops;  // the functions' ranges, sorted by low
  Dwarf_Files* files = nullptr;
  std::size_t file_count = 0;
  // Namespace prefixes ("memtrack::tools::(anonymous namespace)::"; [0] is "") and the prefix of each
  // namespace-level subprogram DIE, to qualify the names GCC gives without a linkage name.
  std::vector<std::string> scopes{std::string()};
  std::unordered_map<Dwarf_Off, std::uint32_t> scope_of;
};

// One module's DWARF, for the lifetime of its Dwfl session.
class DwarfFrames {
 public:
  // DWARF frames at `pc` in `mod` (the same module on every call), innermost first, appended to
  // out.frames: from the unit's index, else as eu-addr2line --inlines finds them (the innermost scope's chain
  // of parent DIEs: the inlined subroutines, each with its call site, up to the subprogram). `symbol` (may
  // be null) names C++ functions whose DWARF name is unqualified. False when DWARF has nothing at pc.
  bool frames(Dwfl_Module* mod, NameCache& names, Dwarf_Addr pc, ElfSymbol* symbol, SymbolizedAddress& out);

 private:
  CuIndex& cu_index(Dwarf_Die* cudie);
  bool indexed_frames(NameCache& names, Dwarf_Die* cudie, Dwarf_Addr pc, Dwarf_Addr bias, const Frame& location,
                      ElfSymbol* symbol, SymbolizedAddress& out);

  std::unordered_map<Dwarf_Off, std::unique_ptr<CuIndex>> cus_;
};

}  // namespace memtrack::symbolize
