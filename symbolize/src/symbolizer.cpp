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
  struct Module {
    ModuleInfo info;
    Dwfl* dwfl = nullptr;
    Dwfl_Module* mod = nullptr;  // null: nothing to read (missing, mismatch without a debug file, not ELF)
    ~Module() {
      if (dwfl != nullptr) dwfl_end(dwfl);
    }
  };

  Options options;
  std::string debuginfo_path;  // libdwfl's colon-separated search path, built from Options::debug_dirs
  char* debuginfo_path_ptr = nullptr;
  Dwfl_Callbacks callbacks{};
  std::map<std::string, std::unique_ptr<Module>> modules;
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
  static std::string source_path(Dwarf_Die* cudie, const char* file) {
    if (file == nullptr) return {};
    std::string path;
    if (file[0] != '/' && cudie != nullptr) {
      Dwarf_Attribute attr;
      const char* dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
      if (dir != nullptr && dir[0] == '/') {
        path = dir;
        if (path.back() != '/') path += '/';
      }
    }
    path += file;
    if (path[0] != '/') return path;
    return std::filesystem::path(path).lexically_normal().string();
  }

  const char* die_name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (name == nullptr) name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (name != nullptr) return demangled(name);
    return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  }

  // DWARF frames at `pc`, innermost first (the approach of eu-addr2line --inlines): the innermost scope's
  // chain of parent DIEs gives the inlined subroutines, each with its call site, up to the subprogram.
  bool dwarf_frames(Dwfl_Module* mod, Dwarf_Addr pc, SymbolizedAddress& out) {
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
        const char* name = die_name(die);
        Frame frame = location;
        frame.function = name != nullptr ? name : "";
        frame.inlined = tag == DW_TAG_inlined_subroutine;
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

    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* symbol = dwfl_module_addrinfo(m.mod, pc, &offset, &sym, nullptr, nullptr, nullptr);
    if (symbol != nullptr) {
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type == STT_OBJECT || type == STT_TLS || type == STT_SECTION || type == STT_FILE) symbol = nullptr;
    }
    if (symbol != nullptr) out.symbol_offset = offset + (pc != address ? 1 : 0);

    if (m.info.has_dwarf && dwarf_frames(m.mod, pc, out)) {
      out.source = Source::dwarf;
      Frame& outer = out.frames.back();
      if (outer.function.empty() && symbol != nullptr) outer.function = demangled(symbol);
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
    frame.function = demangled(symbol);
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
