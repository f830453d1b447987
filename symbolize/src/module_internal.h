// Opening a module: its ELF in a Dwfl session of its own, the build-id check against the recording, and
// its separate debug file (build-id under the debug roots, .gnu_debuglink, debuginfod when allowed).
#pragma once

#include <elfutils/libdwfl.h>

#include <string>

#include "dwarf_frames_internal.h"
#include "elf_symbols_internal.h"
#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::symbolize {

struct Module {
  ModuleInfo info;
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;  // null: nothing to read (missing, mismatch without a debug file, not ELF)
  ElfSymbols symbols;
  DwarfFrames dwarf;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

class ModuleOpener {
 public:
  // `options` must outlive the opener.
  explicit ModuleOpener(const Options& options);
  ModuleOpener(const ModuleOpener&) = delete;  // callbacks_ points into the opener
  ModuleOpener& operator=(const ModuleOpener&) = delete;

  // Fills `m` (new) for `ref`: status, message, the file the symbols come from, and the session if there is
  // anything to read.
  void open(const ModuleRef& ref, Module& m) const;

 private:
  bool report(Module& m, const std::string& file, std::string& error) const;
  std::string debug_file_by_build_id(const BuildId& id) const;

  const Options& options_;
  std::string debuginfo_path_;  // libdwfl's colon-separated search path, built from Options::debug_dirs
  char* debuginfo_path_ptr_ = nullptr;
  Dwfl_Callbacks callbacks_{};
};

}  // namespace memtrack::symbolize
