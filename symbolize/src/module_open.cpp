#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "debug_cache.h"
#include "debuglink.h"
#include "module_internal.h"

namespace memtrack::symbolize {
namespace {

bool debuginfod_configured() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && urls[0] != '\0';
}

// Options::debug_cache_dir and Options::debug_dirs of the opener whose module is being opened on this thread
// (ModuleOpener::open): libdwfl's callbacks have no pointer of their own.
thread_local const std::string* t_debug_cache_dir = nullptr;
thread_local const std::vector<std::string>* t_debug_dirs = nullptr;

// The search for a module's separate debug file: by build-id under each debug root, then by its
// .gnu_debuglink name (debuglink.h), both local. With `any` (Options::debuginfod) and DEBUGINFOD_URLS set,
// libdwfl's standard search, which does the same and then asks the debuginfod servers. Without a server
// to ask, libdwfl's search is not used: it loads the debuginfod client library anyway (debuglink.h).
int find_debuginfo_searched(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                            const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                            char** debuginfo_file_name, bool any) {
  if (any && debuginfod_configured()) {
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
  }
  const int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                              debuginfo_file_name);
  if (fd >= 0) return fd;
  static const std::vector<std::string> kNoRoots;
  return find_by_debuglink(mod, file_name, debuglink_file, debuglink_crc,
                           t_debug_dirs != nullptr ? *t_debug_dirs : kNoRoots, debuginfo_file_name);
}

// The cache first (debug_cache.h): a valid uncompressed copy of this build is returned as the debug file, and
// libdwfl opens it (the searches above open what they find themselves, so the copy must come before them).
// Else the search; a file it finds with compressed sections gets its copy made, and the copy is what libdwfl
// reads from then on, this time too (reading the compressed file would decompress its sections a second time).
int find_debuginfo_cached(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                          const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                          char** debuginfo_file_name, bool any) {
  const std::string* dir = t_debug_cache_dir;
  // The copy at `path` as the debug file, or -1 (then nothing changed).
  const auto use_copy = [&](const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char* name = fd >= 0 ? ::strdup(path.c_str()) : nullptr;
    if (name == nullptr) {
      if (fd >= 0) ::close(fd);
      return -1;
    }
    std::free(*debuginfo_file_name);
    *debuginfo_file_name = name;
    return fd;
  };
  BuildId id;
  if (dir != nullptr && !dir->empty()) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int size = dwfl_module_build_id(mod, &bits, &vaddr);
    if (size > 0) build_id_from_bytes(bits, static_cast<std::size_t>(size), id);
  }
  if (id.size != 0) {
    if (const std::string copy = cached_debug_file(id, *dir); !copy.empty())
      if (const int fd = use_copy(copy); fd >= 0) return fd;
  }
  const int fd = find_debuginfo_searched(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                         debuginfo_file_name, any);
  if (fd >= 0 && id.size != 0 && *debuginfo_file_name != nullptr) {
    if (const std::string copy = write_decompressed_copy(*debuginfo_file_name, id, *dir); !copy.empty()) {
      if (const int copy_fd = use_copy(copy); copy_fd >= 0) {
        ::close(fd);
        return copy_fd;
      }
    }
  }
  return fd;
}

int find_debuginfo_local(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                         const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  return find_debuginfo_cached(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                               debuginfo_file_name, false);
}

// Options::debuginfod: the standard search, network included.
int find_debuginfo_any(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                       const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  return find_debuginfo_cached(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                               debuginfo_file_name, true);
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

ModuleOpener::ModuleOpener(const Options& options) : options_(options) {
  // "" is the module's own directory, ".debug" its subdirectory; absolute entries are roots for both the
  // build-id and the debuglink search (libdwfl's default is ":.debug:/usr/lib/debug").
  debuginfo_path_ = ":.debug";
  for (const std::string& dir : options_.debug_dirs) debuginfo_path_ += ":" + dir;
  debuginfo_path_ptr_ = debuginfo_path_.data();
  callbacks_.find_elf = dwfl_build_id_find_elf;
  callbacks_.find_debuginfo = options_.debuginfod ? find_debuginfo_any : find_debuginfo_local;
  callbacks_.section_address = dwfl_offline_section_address;
  callbacks_.debuginfo_path = &debuginfo_path_ptr_;
}

// Reports `file` as the only module of a new session, at its own link-time addresses (bias 0), so
// module-relative addresses are the session's addresses.
bool ModuleOpener::report(Module& m, const std::string& file, std::string& error) const {
  if (m.dwfl != nullptr) dwfl_end(m.dwfl);
  m.mod = nullptr;
  m.dwfl = dwfl_begin(&callbacks_);
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
std::string ModuleOpener::debug_file_by_build_id(const BuildId& id) const {
  if (id.size < 2) return {};
  const std::string hex = to_hex(id);
  for (const std::string& dir : options_.debug_dirs) {
    std::string candidate = dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
    if (file_exists(candidate)) return candidate;
  }
  return {};
}

namespace {

// What the module's session has to read: DWARF, its debug file, the best symbol table.
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

}  // namespace

void ModuleOpener::open(const ModuleRef& ref, Module& m) const {
  // The debug file is searched for below (describe_symbols), with this opener's cache and roots.
  struct SearchScope {
    explicit SearchScope(const Options& o) {
      t_debug_cache_dir = &o.debug_cache_dir;
      t_debug_dirs = &o.debug_dirs;
    }
    ~SearchScope() {
      t_debug_cache_dir = nullptr;
      t_debug_dirs = nullptr;
    }
  } scope(options_);
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
    std::string debug = debug_file_by_build_id(ref.build_id);
    if (!debug.empty()) {  // read as the main file: through the cache too
      std::string copy = cached_debug_file(ref.build_id, options_.debug_cache_dir);
      if (copy.empty()) copy = write_decompressed_copy(debug, ref.build_id, options_.debug_cache_dir);
      if (!copy.empty()) debug = std::move(copy);
    }
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
}

}  // namespace memtrack::symbolize
