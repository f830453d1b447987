#include "dwarf_frames_internal.h"

#include <dwarf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace memtrack::symbolize {
namespace {

// The demangled linkage name when the DIE (or its abstract origin or specification) has one, else its plain
// DW_AT_name; `qualified` says which. GCC omits linkage names for functions with internal linkage, lambdas
// and many template members, whose DW_AT_name is unqualified ("since_start", "operator()").
const char* die_name(NameCache& names, Dwarf_Die* die, bool* qualified) {
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (name == nullptr) name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  if (qualified != nullptr) *qualified = name != nullptr;
  if (name != nullptr) return names.demangled(name);
  return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

// `scope` indexes CuIndex::scopes: the namespaces around the DIEs being walked.
void index_children(CuIndex& cu, Dwarf_Die* parent_die, std::uint32_t parent, std::uint32_t depth, bool in_function,
                    std::uint32_t scope) {
  Dwarf_Die child;
  if (dwarf_child(parent_die, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram && !in_function && scope != 0) {
      cu.scope_of.emplace(dwarf_dieoffset(&child), scope);
    }
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point) {
      FunctionEntry entry;
      entry.die = child;
      entry.inlined = tag == DW_TAG_inlined_subroutine;
      // A subprogram nested in another (a GNU C nested function) is a function of its own.
      entry.parent = entry.inlined ? parent : kNoEntry;
      entry.depth = entry.inlined ? depth : 0;
      entry.ranges_begin = static_cast<std::uint32_t>(cu.ranges.size());
      Dwarf_Addr base = 0;
      Dwarf_Addr low = 0;
      Dwarf_Addr high = 0;
      for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0;) {
        if (high > low) cu.ranges.emplace_back(low, high);
      }
      entry.ranges_end = static_cast<std::uint32_t>(cu.ranges.size());
      // No code (an abstract instance, a declaration): nothing in it has code either.
      if (entry.ranges_begin == entry.ranges_end) continue;
      const auto index = static_cast<std::uint32_t>(cu.entries.size());
      if (entry.parent == kNoEntry) {
        for (std::uint32_t r = entry.ranges_begin; r < entry.ranges_end; ++r) {
          cu.tops.push_back({cu.ranges[r].first, cu.ranges[r].second, index});
        }
      }
      cu.entries.push_back(std::move(entry));
      index_children(cu, &child, index, cu.entries[index].depth + 1, true, scope);
      cu.entries[index].end = static_cast<std::uint32_t>(cu.entries.size());
    } else if (tag == DW_TAG_namespace && !in_function) {
      const char* name = dwarf_diename(&child);
      cu.scopes.push_back(cu.scopes[scope] + (name != nullptr ? name : "(anonymous namespace)") + "::");
      index_children(cu, &child, parent, depth, false, static_cast<std::uint32_t>(cu.scopes.size() - 1));
    } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_namespace || tag == DW_TAG_module ||
               tag == DW_TAG_try_block || tag == DW_TAG_catch_block) {
      index_children(cu, &child, parent, depth, in_function, scope);
    } else if (in_function && (tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type)) {
      // A local class or a lambda's closure type: GCC nests its member functions' definitions (a lambda's
      // operator()) in it. At namespace level, classes hold only declarations (definitions refer to them
      // with DW_AT_specification), and skipping them spares most of a C++ unit's DIEs.
      index_children(cu, &child, parent, depth, true, scope);
    }
    // Variables, parameters and other types hold no code.
  } while (dwarf_siblingof(&child, &child) == 0);
}

bool contains(const CuIndex& cu, const FunctionEntry& entry, Dwarf_Addr pc) {
  for (std::uint32_t r = entry.ranges_begin; r < entry.ranges_end; ++r) {
    if (pc >= cu.ranges[r].first && pc < cu.ranges[r].second) return true;
  }
  return false;
}

// The innermost entry containing pc (an inlined subroutine, or the function itself), or kNoEntry.
std::uint32_t innermost_entry(const CuIndex& cu, Dwarf_Addr pc) {
  auto it = std::upper_bound(cu.tops.begin(), cu.tops.end(), pc,
                             [](Dwarf_Addr value, const TopRange& range) { return value < range.low; });
  std::uint32_t top = kNoEntry;
  // Functions do not overlap; a few steps back cover a range list that starts before a neighbour's.
  for (int back = 0; back < 4 && it != cu.tops.begin(); ++back) {
    --it;
    if (pc < it->high) {
      top = it->entry;
      break;
    }
  }
  if (top == kNoEntry) return kNoEntry;
  std::uint32_t best = top;
  for (std::uint32_t i = top + 1; i < cu.entries[top].end; ++i) {
    const FunctionEntry& entry = cu.entries[i];
    if (entry.inlined && entry.depth > cu.entries[best].depth && contains(cu, entry, pc)) best = i;
  }
  return best;
}

const std::string& entry_name(NameCache& names, const CuIndex& cu, FunctionEntry& entry) {
  if (!entry.has_name) {
    const char* name = die_name(names, &entry.die, &entry.qualified);
    entry.name = name != nullptr ? name : "";
    entry.has_name = true;
    if (!entry.qualified && name != nullptr) {
      // Prefix the namespaces of the DIE the name is on (the abstract origin of an inlined call).
      Dwarf_Die named = entry.die;
      Dwarf_Attribute attr;
      for (int hops = 0; hops < 8 && !dwarf_hasattr(&named, DW_AT_name); ++hops) {
        Dwarf_Attribute* ref = dwarf_attr(&named, DW_AT_abstract_origin, &attr);
        if (ref == nullptr) ref = dwarf_attr(&named, DW_AT_specification, &attr);
        if (ref == nullptr || dwarf_formref_die(ref, &named) == nullptr) break;
      }
      auto it = cu.scope_of.find(dwarf_dieoffset(&named));
      if (it != cu.scope_of.end()) entry.name = cu.scopes[it->second] + entry.name;
    }
  }
  return entry.name;
}

Frame call_site(NameCache& names, const CuIndex& cu, Dwarf_Die* die) {
  Frame location;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (cu.files != nullptr && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0 &&
      value < cu.file_count) {
    Dwarf_Die cudie = cu.cudie;
    location.file = names.source_path(&cudie, dwarf_filesrc(cu.files, value, nullptr, nullptr));
  }
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0) {
    location.line = static_cast<std::uint32_t>(value);
  }
  if (dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &attr), &value) == 0) {
    location.column = static_cast<std::uint32_t>(value);
  }
  return location;
}

}  // namespace

CuIndex& DwarfFrames::cu_index(Dwarf_Die* cudie) {
  auto& slot = cus_[dwarf_dieoffset(cudie)];
  if (slot) return *slot;
  slot = std::make_unique<CuIndex>();
  CuIndex& cu = *slot;
  cu.cudie = *cudie;
  index_children(cu, &cu.cudie, kNoEntry, 0, false, 0);
  std::sort(cu.tops.begin(), cu.tops.end(), [](const TopRange& a, const TopRange& b) { return a.low < b.low; });
  if (dwarf_getsrcfiles(&cu.cudie, &cu.files, &cu.file_count) != 0) {
    cu.files = nullptr;
    cu.file_count = 0;
  }
  return cu;
}

// DWARF frames at pc from the unit's function index: the innermost inlined call at the line table's
// location, each enclosing one at the call site of the one inside it, the function last.
bool DwarfFrames::indexed_frames(NameCache& names, Dwarf_Die* cudie, Dwarf_Addr pc, Dwarf_Addr bias,
                                 const Frame& location, ElfSymbol* symbol, SymbolizedAddress& out) {
  CuIndex& cu = cu_index(cudie);
  std::uint32_t index = innermost_entry(cu, pc - bias);
  if (index == kNoEntry) return false;
  Frame here = location;
  while (index != kNoEntry) {
    FunctionEntry& entry = cu.entries[index];
    Frame frame = here;
    frame.function = entry_name(names, cu, entry);
    frame.inlined = entry.inlined;
    // A C++ function without a linkage name in DWARF (internal linkage, a lambda, many template members)
    // has only its unqualified DW_AT_name there; its mangled symbol has the scopes and the parameters. C
    // functions keep their DW_AT_name (the symbol may be another alias of the same address).
    if (!entry.inlined && !entry.qualified && symbol != nullptr && std::strncmp(symbol->name, "_Z", 2) == 0) {
      frame.function = symbol_name(names, *symbol, true);
    }
    out.frames.push_back(std::move(frame));
    if (!entry.inlined) break;
    here = call_site(names, cu, &entry.die);
    index = entry.parent;
  }
  return true;
}

bool DwarfFrames::frames(Dwfl_Module* mod, NameCache& names, Dwarf_Addr pc, ElfSymbol* symbol, SymbolizedAddress& out) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(mod, pc, &bias);
  if (cudie == nullptr) return false;

  Frame location;
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc); line != nullptr) {
    int lineno = 0;
    int column = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &lineno, &column, nullptr, nullptr);
    location.file = names.source_path(cudie, file);
    location.line = static_cast<std::uint32_t>(lineno > 0 ? lineno : 0);
    location.column = static_cast<std::uint32_t>(column > 0 ? column : 0);
  }
  if (indexed_frames(names, cudie, pc, bias, location, symbol, out)) return true;

  // Not in the index (code in an imported unit, say): ask libdw for the scopes.
  Dwarf_Die* scopes = nullptr;
  const int count = dwarf_getscopes(cudie, pc - bias, &scopes);
  Dwarf_Die innermost;
  const bool have_scope = count > 0;
  if (have_scope) innermost = scopes[0];
  std::free(scopes);
  scopes = nullptr;

  bool have_function = false;
  if (have_scope) {
    const int depth = dwarf_getscopes_die(&innermost, &scopes);
    Dwarf_Files* files = nullptr;
    std::size_t file_count = 0;
    const bool have_files = dwarf_getsrcfiles(cudie, &files, &file_count) == 0;
    for (int i = 0; i < depth; ++i) {
      Dwarf_Die* die = &scopes[i];
      const int tag = dwarf_tag(die);
      if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram && tag != DW_TAG_entry_point) continue;
      bool qualified = false;
      const char* name = die_name(names, die, &qualified);
      Frame frame = location;
      frame.function = name != nullptr ? name : "";
      frame.inlined = tag == DW_TAG_inlined_subroutine;
      // As in indexed_frames().
      if (!frame.inlined && !qualified && symbol != nullptr && std::strncmp(symbol->name, "_Z", 2) == 0) {
        frame.function = symbol_name(names, *symbol, true);
      }
      out.frames.push_back(std::move(frame));
      if (tag != DW_TAG_inlined_subroutine) {
        have_function = true;
        break;
      }
      // The frame it was inlined into is at the call site.
      location = Frame{};
      Dwarf_Attribute attr;
      Dwarf_Word value = 0;
      if (have_files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0 && value < file_count) {
        location.file = names.source_path(cudie, dwarf_filesrc(files, value, nullptr, nullptr));
      }
      if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0) {
        location.line = static_cast<std::uint32_t>(value);
      }
      if (dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &attr), &value) == 0) {
        location.column = static_cast<std::uint32_t>(value);
      }
    }
    std::free(scopes);
    if (!have_function && !out.frames.empty()) {
      // Inlined frames but no enclosing subprogram: keep the location for the symtab's function name.
      out.frames.push_back(location);
    }
  }
  if (out.frames.empty()) {
    if (location.file.empty()) return false;
    out.frames.push_back(location);  // a line without a function DIE: the name comes from the symbol table
  }
  if (!have_function) out.frames.back().inlined = false;
  return true;
}

}  // namespace memtrack::symbolize
