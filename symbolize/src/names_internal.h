// Names shared by the DWARF and symbol-table lookups: demangling into one reused buffer, and source paths
// normalized once per distinct string.
#pragma once

#include <elfutils/libdw.h>

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>

namespace memtrack::symbolize {

class NameCache {
 public:
  explicit NameCache(bool demangle) : demangle_(demangle) {}
  ~NameCache();
  NameCache(const NameCache&) = delete;
  NameCache& operator=(const NameCache&) = delete;

  // `name` demangled when demangling is on and it is a mangled C++ name, else `name`. The result is valid
  // until the next call.
  const char* demangled(const char* name);

  // Absolute paths lexically normalized (build systems leave "dir/../../src" in them); relative ones, as
  // distributions' -fdebug-prefix-map builds record them, joined to the compile directory when it is absolute.
  // Cached by the strings' addresses: libdw's file names and compile directories stay put while the
  // modules are open, and normalizing a path costs more than the rest of a frame.
  const std::string& source_path(Dwarf_Die* cudie, const char* file);

 private:
  struct PairHash {
    std::size_t operator()(const std::pair<const char*, const char*>& key) const noexcept {
      return std::hash<const void*>()(key.first) * 31 + std::hash<const void*>()(key.second);
    }
  };
  bool demangle_;
  std::unordered_map<std::pair<const char*, const char*>, std::string, PairHash> path_cache_;
  // __cxa_demangle's output buffer, reused (it reallocs it when a name is longer).
  char* demangle_buffer_ = nullptr;
  std::size_t demangle_capacity_ = 0;
};

}  // namespace memtrack::symbolize
