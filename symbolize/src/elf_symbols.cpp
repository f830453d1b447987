#include "elf_symbols_internal.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace memtrack::symbolize {

// libdwfl's dwfl_module_addrinfo() scans the whole symbol table on each call (most of the time on a
// module like libc); the table is sorted here once and searched.
void ElfSymbols::index(Dwfl_Module* mod) {
  indexed_ = true;
  const int count = dwfl_module_getsymtab(mod);
  for (int i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Addr value = 0;
    GElf_Word shndx = 0;
    const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, nullptr, nullptr);
    if (name == nullptr || name[0] == '\0' || shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
    const int bind = GELF_ST_BIND(sym.st_info);
    ElfSymbol symbol;
    symbol.value = value;
    symbol.size = sym.st_size;
    symbol.name = name;
    symbol.is_function = type != STT_NOTYPE;
    symbol.rank = (sym.st_size > 0 ? 0 : 4) + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
    symbols_.push_back(std::move(symbol));
  }
  std::sort(symbols_.begin(), symbols_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    return a.value != b.value ? a.value < b.value : a.rank < b.rank;
  });
  symbols_.erase(std::unique(symbols_.begin(), symbols_.end(),
                             [](const ElfSymbol& a, const ElfSymbol& b) { return a.value == b.value; }),
                 symbols_.end());
}

ElfSymbol* ElfSymbols::find(Dwfl_Module* mod, Dwarf_Addr pc) {
  if (!indexed_) index(mod);
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), pc,
                             [](Dwarf_Addr value, const ElfSymbol& symbol) { return value < symbol.value; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (it->size == 0) return it->is_function ? &*it : nullptr;
  for (int back = 0; back < 8; ++back, --it) {
    if (it->size > 0 && pc - it->value < it->size) return &*it;
    if (it == symbols_.begin()) break;
  }
  return nullptr;
}

const std::string& symbol_name(NameCache& names, ElfSymbol& symbol, bool strip_clone) {
  std::string& name = strip_clone ? symbol.base : symbol.demangled;
  bool& cached = strip_clone ? symbol.has_base : symbol.has_demangled;
  if (!cached) {
    std::string_view raw = symbol.name;
    raw = raw.substr(0, std::min(raw.find('@'), strip_clone ? raw.find('.') : std::string_view::npos));
    const std::string plain(raw.empty() ? std::string_view(symbol.name) : raw);
    name = names.demangled(plain.c_str());
    cached = true;
  }
  return name;
}

}  // namespace memtrack::symbolize
