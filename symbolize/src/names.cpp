#include "names_internal.h"

#include <cxxabi.h>
#include <dwarf.h>

#include <cstdlib>
#include <filesystem>

namespace memtrack::symbolize {

NameCache::~NameCache() { std::free(demangle_buffer_); }

const char* NameCache::demangled(const char* name) {
  if (!demangle_ || name == nullptr || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name, demangle_buffer_, &demangle_capacity_, &status);
  if (status != 0 || out == nullptr) return name;
  demangle_buffer_ = out;
  return out;
}

const std::string& NameCache::source_path(Dwarf_Die* cudie, const char* file) {
  static const std::string kNone;
  if (file == nullptr) return kNone;
  const char* dir = nullptr;
  if (file[0] != '/' && cudie != nullptr) {
    Dwarf_Attribute attr;
    dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
    if (dir != nullptr && dir[0] != '/') dir = nullptr;
  }
  auto [it, inserted] = path_cache_.try_emplace({file, dir});
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

}  // namespace memtrack::symbolize
