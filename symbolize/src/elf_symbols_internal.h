// The ELF symbol-table fallback: a module's best symbol table (.symtab, else .dynsym) sorted once and
// searched by address.
#pragma once

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <string>
#include <vector>

#include "names_internal.h"

namespace memtrack::symbolize {

// A function symbol of the module's best symbol table (.symtab, else .dynsym).
struct ElfSymbol {
  GElf_Addr value = 0;
  GElf_Xword size = 0;
  const char* name = nullptr;  // in the ELF's string table, valid while the session is open
  int rank = 0;                // among aliases at one address: sized before sizeless, global, weak, local
  bool is_function = false;
  std::string demangled;  // cached on first use
  bool has_demangled = false;
  std::string base;  // demangled without clone suffixes, cached on first use
  bool has_base = false;
};

class ElfSymbols {
 public:
  // The symbol containing pc: the last one starting at or before it if its size covers it (or, sizeless, if
  // it is a function: nothing starts between it and pc), else a bigger one a few entries before (a function
  // with local labels inside it). `mod` is the same module on every call; the table is read on the first.
  ElfSymbol* find(Dwfl_Module* mod, Dwarf_Addr pc);

 private:
  void index(Dwfl_Module* mod);

  bool indexed_ = false;
  std::vector<ElfSymbol> symbols_;  // sorted by value, one per address
};

// The demangled name without a symbol version ("tmpfile@@GLIBC_2.2.5" in a .symtab) and, with
// `strip_clone`, without GCC's clone and partition suffixes ("_Z3fooi.constprop.0", "_Z3barv.cold"): the
// name of the source function that DWARF describes.
const std::string& symbol_name(NameCache& names, ElfSymbol& symbol, bool strip_clone = false);

}  // namespace memtrack::symbolize
