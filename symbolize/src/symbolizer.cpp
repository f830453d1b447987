// Symbolization with libdwfl: one Dwfl session per module, each module's ELF (and its separate debug file)
// opened once and kept for the Symbolizer's lifetime, so a batch of addresses costs lookups only.
#include "memtrack/symbolize/symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <utility>

namespace memtrack::symbolize {
namespace {

bool debuginfod_configured() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[0] != '\0';
}

// libdwfl's standard search (build-id under each debug root, then .gnu_debuglink next to the module and
// under the roots) ends with a debuginfod query when DEBUGINFOD_URLS is set. Without Options::debuginfod,
// only the local build-id search runs in that case.
int find_debuginfo_local(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                         const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  if (!debuginfod_configured()) {
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
  }
  return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                      debuginfo_file_name);
}

std::string errno_text(int error) { return std::strerror(error); }

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool elf_has_symtab(Elf* elf) {
  if (elf == nullptr) return false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == SHT_SYMTAB && shdr.sh_size > 0) return true;
  }
  return false;
}

}  // namespace

const char* to_string(Source source) noexcept {
  switch (source) {
    case Source::none:
      return "none";
    case Source::dwarf:
      return "dwarf";
    case Source::symtab:
      return "symtab";
    case Source::dynsym:
      return "dynsym";
  }
  return "?";
}

const char* to_string(ModuleStatus status) noexcept {
  switch (status) {
    case ModuleStatus::ok:
      return "ok";
    case ModuleStatus::missing:
      return "missing";
    case ModuleStatus::build_id_mismatch:
      return "build_id_mismatch";
    case ModuleStatus::not_elf:
      return "not_elf";
  }
  return "?";
}

std::string to_hex(const BuildId& id) {
  char text[2 * kMaxBuildIdSize + 1];
  build_id_to_hex(id, text, sizeof text);
  return text;
}

bool read_build_id(const std::string& path, BuildId& out, std::string* error) {
  out.size = 0;
  auto fail = [&](std::string message) {
    if (error != nullptr) *error = std::move(message);
    return false;
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open " + path + ": " + errno_text(errno));
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  bool found = false;
  std::string message;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    message = path + ": not an ELF file" + (elf == nullptr ? std::string(": ") + elf_errmsg(-1) : std::string());
  } else {
    const void* bits = nullptr;
    const ssize_t size = dwelf_elf_gnu_build_id(elf, &bits);
    if (size > 0 && build_id_from_bytes(bits, static_cast<std::size_t>(size), out)) {
      found = true;
    } else if (size > 0) {
      message =
          path + ": build-id of " + std::to_string(size) + " bytes is longer than " + std::to_string(kMaxBuildIdSize);
    } else {
      message = path + ": no build-id note";
    }
  }
  if (elf != nullptr) elf_end(elf);
  ::close(fd);
  return found ? true : fail(std::move(message));
}

std::string demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  std::string text(name);
  int status = 0;
  char* out = abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return text;
  std::string result(out);
  std::free(out);
  return result;
}

struct Symbolizer::Impl {
  // A function symbol of the module's best symbol table (.symtab, else .dynsym).
  struct Symbol {
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
  static constexpr std::uint32_t kNoEntry = ~std::uint32_t{0};

  struct Module {
    ModuleInfo info;
    Dwfl* dwfl = nullptr;
    Dwfl_Module* mod = nullptr;  // null: nothing to read (missing, mismatch without a debug file, not ELF)
    bool symbols_indexed = false;
    std::vector<Symbol> symbols;  // sorted by value, one per address
    std::unordered_map<Dwarf_Off, std::unique_ptr<CuIndex>> cus;
    ~Module() {
      if (dwfl != nullptr) dwfl_end(dwfl);
    }
  };

  Options options;
  std::string debuginfo_path;  // libdwfl's colon-separated search path, built from Options::debug_dirs
  char* debuginfo_path_ptr = nullptr;
  Dwfl_Callbacks callbacks{};
  std::map<std::string, std::unique_ptr<Module>> modules;
  struct PairHash {
    std::size_t operator()(const std::pair<const char*, const char*>& key) const noexcept {
      return std::hash<const void*>()(key.first) * 31 + std::hash<const void*>()(key.second);
    }
  };
  std::unordered_map<std::pair<const char*, const char*>, std::string, PairHash> path_cache;
  // __cxa_demangle's output buffer, reused (it reallocs it when a name is longer).
  char* demangle_buffer = nullptr;
  std::size_t demangle_capacity = 0;

  explicit Impl(Options opts) : options(std::move(opts)) {
    // "" is the module's own directory, ".debug" its subdirectory; absolute entries are roots for both the
    // build-id and the debuglink search (libdwfl's default is ":.debug:/usr/lib/debug").
    debuginfo_path = ":.debug";
    for (const std::string& dir : options.debug_dirs) debuginfo_path += ":" + dir;
    debuginfo_path_ptr = debuginfo_path.data();
    callbacks.find_elf = dwfl_build_id_find_elf;
    callbacks.find_debuginfo = options.debuginfod ? dwfl_standard_find_debuginfo : find_debuginfo_local;
    callbacks.section_address = dwfl_offline_section_address;
    callbacks.debuginfo_path = &debuginfo_path_ptr;
  }
  ~Impl() { std::free(demangle_buffer); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  const char* demangled(const char* name) {
    if (!options.demangle || name == nullptr || name[0] != '_' || name[1] != 'Z') return name;
    int status = 0;
    char* out = abi::__cxa_demangle(name, demangle_buffer, &demangle_capacity, &status);
    if (status != 0 || out == nullptr) return name;
    demangle_buffer = out;
    return out;
  }

  // Reports `file` as the only module of a new session, at its own link-time addresses (bias 0), so
  // module-relative addresses are the session's addresses.
  bool report(Module& m, const std::string& file, std::string& error) {
    if (m.dwfl != nullptr) dwfl_end(m.dwfl);
    m.mod = nullptr;
    m.dwfl = dwfl_begin(&callbacks);
    if (m.dwfl == nullptr) {
      error = std::string("dwfl_begin: ") + dwfl_errmsg(-1);
      return false;
    }
    dwfl_report_begin(m.dwfl);
    m.mod = dwfl_report_elf(m.dwfl, file.c_str(), file.c_str(), -1, 0, true);
    dwfl_report_end(m.dwfl, nullptr, nullptr);
    if (m.mod == nullptr) {
      error = file + ": not an ELF file libelf can read: " + dwfl_errmsg(-1);
      dwfl_end(m.dwfl);
      m.dwfl = nullptr;
      return false;
    }
    return true;
  }

  // The separate debug file of build `id` under the debug roots, if one is installed. Used when the module
  // itself is gone or replaced: the debug file keeps the program headers, .symtab and DWARF of that build.
  std::string debug_file_by_build_id(const BuildId& id) const {
    if (id.size < 2) return {};
    const std::string hex = to_hex(id);
    for (const std::string& dir : options.debug_dirs) {
      std::string candidate = dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
      if (file_exists(candidate)) return candidate;
    }
    return {};
  }

  void describe_symbols(Module& m) {
    ModuleInfo& info = m.info;
    Dwarf_Addr bias = 0;
    Dwarf* dwarf = dwfl_module_getdwarf(m.mod, &bias);
    info.has_dwarf = dwarf != nullptr;
    const char* main_file = nullptr;
    const char* debug_file = nullptr;
    dwfl_module_info(m.mod, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, &debug_file);
    if (debug_file != nullptr && (main_file == nullptr || std::strcmp(debug_file, main_file) != 0)) {
      info.debug_file = debug_file;
    }
    GElf_Addr elf_bias = 0;
    Elf* main_elf = dwfl_module_getelf(m.mod, &elf_bias);
    const bool symtab = elf_has_symtab(main_elf) || (dwarf != nullptr && elf_has_symtab(dwarf_getelf(dwarf)));
    if (symtab) {
      info.symbols = Source::symtab;
    } else if (dwfl_module_getsymtab(m.mod) > 0) {
      info.symbols = Source::dynsym;
    }
  }

  Module& open(const ModuleRef& ref) {
    std::string key = ref.path;
    key += '\0';
    key += to_hex(ref.build_id);
    auto it = modules.find(key);
    if (it != modules.end()) return *it->second;
    auto module = std::make_unique<Module>();
    Module& m = *module;
    modules.emplace(std::move(key), std::move(module));
    ModuleInfo& info = m.info;
    info.path = ref.path;

    const int fd = ::open(ref.path.c_str(), O_RDONLY | O_CLOEXEC);
    std::string error;
    if (fd < 0) {
      info.status = ModuleStatus::missing;
      info.message = "cannot open " + ref.path + ": " + errno_text(errno);
    } else {
      ::close(fd);
      if (!report(m, ref.path, error)) {
        info.status = ModuleStatus::not_elf;
        info.message = error;
      } else {
        const unsigned char* bits = nullptr;
        GElf_Addr note_vaddr = 0;
        const int size = dwfl_module_build_id(m.mod, &bits, &note_vaddr);
        if (size > 0) build_id_from_bytes(bits, static_cast<std::size_t>(size), info.file_build_id);
        if (!ref.build_id.empty() && !(info.file_build_id == ref.build_id)) {
          info.status = ModuleStatus::build_id_mismatch;
          info.message = "build-id mismatch for " + ref.path + ": recorded " + to_hex(ref.build_id) + ", file has " +
                         (info.file_build_id.empty() ? std::string("none") : to_hex(info.file_build_id));
          dwfl_end(m.dwfl);
          m.dwfl = nullptr;
          m.mod = nullptr;
        } else {
          info.symbols_file = ref.path;
        }
      }
    }
    if (m.mod == nullptr && info.status != ModuleStatus::not_elf) {
      // The recorded build may still be described by its debug file.
      const std::string debug = debug_file_by_build_id(ref.build_id);
      if (!debug.empty()) {
        if (report(m, debug, error)) {
          info.symbols_file = debug;
          info.message += "; symbols from " + debug;
        } else {
          info.message += "; " + error;
        }
      }
    }
    if (m.mod != nullptr) describe_symbols(m);
    return m;
  }

  // Absolute paths lexically normalized (build systems leave "dir/../../src" in them); relative ones, as
  // distributions' -fdebug-prefix-map builds record them, joined to the compile directory when it is absolute.
  // Cached by the strings' addresses: libdw's file names and compile directories stay put while the
  // modules are open, and normalizing a path costs more than the rest of a frame.
  const std::string& source_path(Dwarf_Die* cudie, const char* file) {
    static const std::string kNone;
    if (file == nullptr) return kNone;
    const char* dir = nullptr;
    if (file[0] != '/' && cudie != nullptr) {
      Dwarf_Attribute attr;
      dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
      if (dir != nullptr && dir[0] != '/') dir = nullptr;
    }
    auto [it, inserted] = path_cache.try_emplace({file, dir});
    if (!inserted) return it->second;
    std::string path;
    if (dir != nullptr) {
      path = dir;
      if (path.back() != '/') path += '/';
    }
    path += file;
    it->second = path[0] == '/' ? std::filesystem::path(path).lexically_normal().string() : path;
    return it->second;
  }

  // The demangled linkage name when the DIE (or its abstract origin or specification) has one, else its plain
  // DW_AT_name; `qualified` says which. GCC omits linkage names for functions with internal linkage, lambdas
  // and many template members, whose DW_AT_name is unqualified ("since_start", "operator()").
  const char* die_name(Dwarf_Die* die, bool* qualified = nullptr) {
    Dwarf_Attribute attr;
    const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (name == nullptr) name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (qualified != nullptr) *qualified = name != nullptr;
    if (name != nullptr) return demangled(name);
    return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  }

  // libdwfl's dwfl_module_addrinfo() scans the whole symbol table on each call (most of the time on a
  // module like libc); the table is sorted here once and searched.
  void index_symbols(Module& m) {
    m.symbols_indexed = true;
    const int count = dwfl_module_getsymtab(m.mod);
    for (int i = 1; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr value = 0;
      GElf_Word shndx = 0;
      const char* name = dwfl_module_getsym_info(m.mod, i, &sym, &value, &shndx, nullptr, nullptr);
      if (name == nullptr || name[0] == '\0' || shndx == SHN_UNDEF) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
      const int bind = GELF_ST_BIND(sym.st_info);
      Symbol symbol;
      symbol.value = value;
      symbol.size = sym.st_size;
      symbol.name = name;
      symbol.is_function = type != STT_NOTYPE;
      symbol.rank = (sym.st_size > 0 ? 0 : 4) + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
      m.symbols.push_back(std::move(symbol));
    }
    std::sort(m.symbols.begin(), m.symbols.end(), [](const Symbol& a, const Symbol& b) {
      return a.value != b.value ? a.value < b.value : a.rank < b.rank;
    });
    m.symbols.erase(std::unique(m.symbols.begin(), m.symbols.end(),
                                [](const Symbol& a, const Symbol& b) { return a.value == b.value; }),
                    m.symbols.end());
  }

  // The symbol containing pc: the last one starting at or before it if its size covers it (or, sizeless, if
  // it is a function: nothing starts between it and pc), else a bigger one a few entries before (a function
  // with local labels inside it).
  Symbol* find_symbol(Module& m, Dwarf_Addr pc) {
    if (!m.symbols_indexed) index_symbols(m);
    auto it = std::upper_bound(m.symbols.begin(), m.symbols.end(), pc,
                               [](Dwarf_Addr value, const Symbol& symbol) { return value < symbol.value; });
    if (it == m.symbols.begin()) return nullptr;
    --it;
    if (it->size == 0) return it->is_function ? &*it : nullptr;
    for (int back = 0; back < 8; ++back, --it) {
      if (it->size > 0 && pc - it->value < it->size) return &*it;
      if (it == m.symbols.begin()) break;
    }
    return nullptr;
  }

  // The demangled name without a symbol version ("tmpfile@@GLIBC_2.2.5" in a .symtab) and, with
  // `strip_clone`, without GCC's clone and partition suffixes ("_Z3fooi.constprop.0", "_Z3barv.cold"): the
  // name of the source function that DWARF describes.
  const std::string& symbol_name(Symbol& symbol, bool strip_clone = false) {
    std::string& name = strip_clone ? symbol.base : symbol.demangled;
    bool& cached = strip_clone ? symbol.has_base : symbol.has_demangled;
    if (!cached) {
      std::string_view raw = symbol.name;
      raw = raw.substr(0, std::min(raw.find('@'), strip_clone ? raw.find('.') : std::string_view::npos));
      const std::string plain(raw.empty() ? std::string_view(symbol.name) : raw);
      name = demangled(plain.c_str());
      cached = true;
    }
    return name;
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
      } else if (in_function &&
                 (tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type)) {
        // A local class or a lambda's closure type: GCC nests its member functions' definitions (a lambda's
        // operator()) in it. At namespace level, classes hold only declarations (definitions refer to them
        // with DW_AT_specification), and skipping them spares most of a C++ unit's DIEs.
        index_children(cu, &child, parent, depth, true, scope);
      }
      // Variables, parameters and other types hold no code.
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  CuIndex& cu_index(Module& m, Dwarf_Die* cudie) {
    auto& slot = m.cus[dwarf_dieoffset(cudie)];
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

  static bool contains(const CuIndex& cu, const FunctionEntry& entry, Dwarf_Addr pc) {
    for (std::uint32_t r = entry.ranges_begin; r < entry.ranges_end; ++r) {
      if (pc >= cu.ranges[r].first && pc < cu.ranges[r].second) return true;
    }
    return false;
  }

  // The innermost entry containing pc (an inlined subroutine, or the function itself), or kNoEntry.
  static std::uint32_t innermost_entry(const CuIndex& cu, Dwarf_Addr pc) {
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

  const std::string& entry_name(const CuIndex& cu, FunctionEntry& entry) {
    if (!entry.has_name) {
      const char* name = die_name(&entry.die, &entry.qualified);
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

  Frame call_site(const CuIndex& cu, Dwarf_Die* die) {
    Frame location;
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    if (cu.files != nullptr && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &value) == 0 &&
        value < cu.file_count) {
      Dwarf_Die cudie = cu.cudie;
      location.file = source_path(&cudie, dwarf_filesrc(cu.files, value, nullptr, nullptr));
    }
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &value) == 0) {
      location.line = static_cast<std::uint32_t>(value);
    }
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &attr), &value) == 0) {
      location.column = static_cast<std::uint32_t>(value);
    }
    return location;
  }

  // DWARF frames at pc from the unit's function index: the innermost inlined call at the line table's
  // location, each enclosing one at the call site of the one inside it, the function last.
  bool indexed_frames(Module& m, Dwarf_Die* cudie, Dwarf_Addr pc, Dwarf_Addr bias, const Frame& location,
                      Symbol* symbol, SymbolizedAddress& out) {
    CuIndex& cu = cu_index(m, cudie);
    std::uint32_t index = innermost_entry(cu, pc - bias);
    if (index == kNoEntry) return false;
    Frame here = location;
    while (index != kNoEntry) {
      FunctionEntry& entry = cu.entries[index];
      Frame frame = here;
      frame.function = entry_name(cu, entry);
      frame.inlined = entry.inlined;
      // A C++ function without a linkage name in DWARF (internal linkage, a lambda, many template members)
      // has only its unqualified DW_AT_name there; its mangled symbol has the scopes and the parameters. C
      // functions keep their DW_AT_name (the symbol may be another alias of the same address).
      if (!entry.inlined && !entry.qualified && symbol != nullptr && std::strncmp(symbol->name, "_Z", 2) == 0) {
        frame.function = symbol_name(*symbol, true);
      }
      out.frames.push_back(std::move(frame));
      if (!entry.inlined) break;
      here = call_site(cu, &entry.die);
      index = entry.parent;
    }
    return true;
  }

  // DWARF frames at `pc`, innermost first: from the unit's index, else as eu-addr2line --inlines finds them
  // (the innermost scope's chain of parent DIEs: the inlined subroutines, each with its call site, up to the
  // subprogram).
  bool dwarf_frames(Module& m, Dwarf_Addr pc, Symbol* symbol, SymbolizedAddress& out) {
    Dwfl_Module* mod = m.mod;
    Dwarf_Addr bias = 0;
    Dwarf_Die* cudie = dwfl_module_addrdie(mod, pc, &bias);
    if (cudie == nullptr) return false;

    Frame location;
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc); line != nullptr) {
      int lineno = 0;
      int column = 0;
      const char* file = dwfl_lineinfo(line, nullptr, &lineno, &column, nullptr, nullptr);
      location.file = source_path(cudie, file);
      location.line = static_cast<std::uint32_t>(lineno > 0 ? lineno : 0);
      location.column = static_cast<std::uint32_t>(column > 0 ? column : 0);
    }
    if (indexed_frames(m, cudie, pc, bias, location, symbol, out)) return true;

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
        const char* name = die_name(die, &qualified);
        Frame frame = location;
        frame.function = name != nullptr ? name : "";
        frame.inlined = tag == DW_TAG_inlined_subroutine;
        // As in indexed_frames().
        if (!frame.inlined && !qualified && symbol != nullptr && std::strncmp(symbol->name, "_Z", 2) == 0) {
          frame.function = symbol_name(*symbol, true);
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
          location.file = source_path(cudie, dwarf_filesrc(files, value, nullptr, nullptr));
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

  void symbolize_address(Module& m, std::uint64_t address, AddressKind kind, SymbolizedAddress& out) {
    out.address = address;
    if (m.mod == nullptr) return;
    const Dwarf_Addr pc = kind == AddressKind::return_address && address > 0 ? address - 1 : address;

    Symbol* symbol = find_symbol(m, pc);
    if (symbol != nullptr) out.symbol_offset = address - symbol->value;

    if (m.info.has_dwarf && dwarf_frames(m, pc, symbol, out)) {
      out.source = Source::dwarf;
      Frame& outer = out.frames.back();
      if (outer.function.empty() && symbol != nullptr) outer.function = symbol_name(*symbol);
      if (outer.function.empty() && out.frames.size() == 1 && outer.file.empty()) {
        out.frames.clear();  // nothing useful in it
      } else {
        return;
      }
    }
    if (symbol == nullptr) {
      out.source = Source::none;
      out.symbol_offset = 0;
      return;
    }
    out.source = m.info.symbols == Source::dynsym ? Source::dynsym : Source::symtab;
    Frame frame;
    frame.function = symbol_name(*symbol);
    out.frames.push_back(std::move(frame));
  }
};

Symbolizer::Symbolizer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Symbolizer::~Symbolizer() = default;

const ModuleInfo& Symbolizer::open(const ModuleRef& module) { return impl_->open(module).info; }

std::size_t Symbolizer::modules_open() const { return impl_->modules.size(); }

std::vector<SymbolizedAddress> Symbolizer::symbolize(const ModuleRef& module, std::span<const std::uint64_t> addresses,
                                                     AddressKind kind, const ProgressFn& progress) {
  Impl::Module& m = impl_->open(module);
  std::vector<SymbolizedAddress> results(addresses.size());
  // Stacks share most of their frames: each distinct address is looked up once per batch.
  std::unordered_map<std::uint64_t, std::size_t> seen;
  seen.reserve(addresses.size());
  const std::size_t interval = impl_->options.progress_interval == 0 ? 4096 : impl_->options.progress_interval;
  Progress report{0, addresses.size(), module.path};
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (progress && i > 0 && i % interval == 0) {
      report.done = i;
      if (!progress(report)) {
        for (std::size_t j = i; j < addresses.size(); ++j) results[j].address = addresses[j];
        return results;
      }
    }
    auto [it, inserted] = seen.emplace(addresses[i], i);
    if (!inserted) {
      results[i] = results[it->second];
      continue;
    }
    impl_->symbolize_address(m, addresses[i], kind, results[i]);
  }
  if (progress) {
    report.done = addresses.size();
    progress(report);
  }
  return results;
}

SymbolizedAddress Symbolizer::symbolize_one(const ModuleRef& module, std::uint64_t address, AddressKind kind) {
  SymbolizedAddress result;
  impl_->symbolize_address(impl_->open(module), address, kind, result);
  return result;
}

}  // namespace memtrack::symbolize
