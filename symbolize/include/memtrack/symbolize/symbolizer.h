// Symbolization: module-relative addresses to function names, source files and lines, after the recording
// (in the recorder when it ends, or at analysis time), never in the tracked program. Built on elfutils'
// libdwfl/libdw (Debian's libdw-dev):
//
//   - DWARF in the module, or in a separate debug file found by build-id under each debug directory
//     (<dir>/.build-id/xx/yyyy.debug, what Debian's -dbg/-dbgsym packages install) or by .gnu_debuglink:
//     function names (demangled), file and line, and the chain of inlined calls at the address.
//   - Without DWARF for an address: the function name from .symtab, or from .dynsym when the module is
//     stripped (no file, no line).
//   - Otherwise (no symbol covers the address, the module file is gone, or it is a different build than the
//     one recorded): nothing but the module and the address, with the reason in the module's status. When
//     the file is gone or replaced but the recorded build's debug file is installed, the symbols come from
//     it (the status still says missing or mismatch, the message names the debug file).
//
// Names: the demangled DWARF linkage name. GCC gives none to functions with internal linkage, lambdas and
// many template members: a function then takes its symbol's name (qualified, with parameters; C functions
// keep DW_AT_name), an inlined call its DW_AT_name with the enclosing namespaces. Each unit's functions
// and the symbol table are indexed on first use, so a batch costs lookups (bench/symbolize_throughput.sh).
//
// Addresses are module-relative: the run-time address minus the module's load bias (dl_phdr_info::dlpi_addr,
// link_map::l_addr), i.e. the address in the ELF file's own address space, what `addr2line -e MODULE` and
// `eu-addr2line -e MODULE` take. For ET_EXEC executables the load bias is 0.
//
// Thread safety: a Symbolizer is not thread-safe (libdwfl sessions are not); use one per thread.
// Ownership: results are plain values owned by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memtrack/symbolize/build_id.h"

namespace memtrack::symbolize {

// Where an address's frames came from.
enum class Source : std::uint8_t {
  none = 0,    // module + offset only
  dwarf = 1,   // DWARF: names, file, line, inlined frames
  symtab = 2,  // .symtab: the function name only
  dynsym = 3,  // .dynsym (the module has no .symtab): the exported function name only
};

// The state of a module after it was opened (once per Symbolizer).
enum class ModuleStatus : std::uint8_t {
  ok = 0,                 // the file on disk is the recorded build (or no build-id was given to check)
  missing = 1,            // the file cannot be opened (deleted, moved, unreadable)
  build_id_mismatch = 2,  // the file on disk is another build than the recorded one
  not_elf = 3,            // the file is not an ELF object libelf can read
};

const char* to_string(Source source) noexcept;
const char* to_string(ModuleStatus status) noexcept;

// A module as recorded: its path when it was mapped and, when known, its build-id (empty: not checked).
struct ModuleRef {
  std::string path;
  BuildId build_id;
};

struct ModuleInfo {
  std::string path;  // as given in the ModuleRef
  ModuleStatus status = ModuleStatus::ok;
  std::string message;       // one line saying what failed and where; empty when status is ok
  BuildId file_build_id;     // the build-id of the file on disk (empty if it has none or is missing)
  std::string symbols_file;  // the ELF the symbols come from: the module itself or a separate debug file
  std::string debug_file;    // the separate DWARF file found for the module, if any
  bool has_dwarf = false;
  Source symbols = Source::none;  // the best symbol table: symtab, dynsym or none
};

struct Frame {
  std::string function;    // demangled; empty when unknown
  std::string file;        // source file as the DWARF names it (absolute when the compile directory is known)
  std::uint32_t line = 0;  // 0 when unknown
  std::uint32_t column = 0;
  bool inlined = false;  // an inlined call: the next frame is the function it was inlined into
};

struct SymbolizedAddress {
  std::uint64_t address = 0;  // module-relative, as given
  Source source = Source::none;
  // Innermost first: the inlined calls at the address, then the function containing it (the last frame,
  // inlined == false). Empty when source == none: the caller shows module + address.
  std::vector<Frame> frames;
  // The address's distance from the start of the containing function's symbol (symtab/dynsym), 0 if unknown.
  std::uint64_t symbol_offset = 0;
};

// How to read the addresses of one batch.
enum class AddressKind : std::uint8_t {
  exact,           // the address of an instruction (a program counter, a symbol)
  return_address,  // a return address from an unwound stack: the call is looked up at address - 1, so the
                   // line is the call's, not the next statement's (and a call ending a function resolves)
};

struct Progress {
  std::size_t done = 0;     // addresses symbolized so far in this run
  std::size_t total = 0;    // addresses in this run
  std::string_view module;  // the module being read
};
// Called every Options::progress_interval addresses and once at the end of each batch. Return false to stop:
// the remaining addresses of the run are returned unresolved (source none).
using ProgressFn = std::function<bool(const Progress&)>;

// Where Options::debug_cache_dir points by default: $MEMTRACK_DEBUG_CACHE when set ("off": no cache), else
// $XDG_CACHE_HOME/memtrack/debug, else $HOME/.cache/memtrack/debug; empty (no cache) without any of them.
std::string default_debug_cache_dir();

struct Options {
  // Roots searched for separate debug files by build-id (<root>/.build-id/xx/yyyy.debug) and by debuglink
  // (<root>/<module dir>/<debuglink>), in order, after the module's own directory and its .debug/.
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};
  // elfutils asks debuginfod servers (over the network) when DEBUGINFOD_URLS is set and nothing local was
  // found. Off by default: symbolizing must not stall on the network unless asked to. Otherwise the search
  // is local: by build-id under the roots above, then by the module's .gnu_debuglink name (src/debuglink.h),
  // and the debuginfod client library is never loaded.
  bool debuginfod = false;
  // A separate debug file with compressed .debug sections (distributions' debug packages) is read, after the
  // first time, through an uncompressed copy kept here by build-id (src/debug_cache.h): libdw inflates every
  // compressed section each time it opens a file. Empty: no copies.
  std::string debug_cache_dir = default_debug_cache_dir();
  bool demangle = true;
  std::size_t progress_interval = 4096;
};

class Symbolizer {
 public:
  explicit Symbolizer(Options options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Opens the module on first use (each path + build-id once per Symbolizer; the file and its debug file
  // stay open until the Symbolizer is destroyed) and says what was found. Never fails: problems are in the
  // returned status and message. The reference stays valid for the Symbolizer's lifetime.
  const ModuleInfo& open(const ModuleRef& module);

  // Symbolizes addresses of one module, results in the input's order. An address no symbol covers, or any
  // address of a module that is missing or another build, comes back with source none.
  std::vector<SymbolizedAddress> symbolize(const ModuleRef& module, std::span<const std::uint64_t> addresses,
                                           AddressKind kind = AddressKind::return_address,
                                           const ProgressFn& progress = {});

  // One address (convenience over the batch form).
  SymbolizedAddress symbolize_one(const ModuleRef& module, std::uint64_t address,
                                  AddressKind kind = AddressKind::exact);

  [[nodiscard]] std::size_t modules_open() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads the build-id of an ELF file on disk (its PT_NOTE or .note.gnu.build-id). False with a one-line
// reason in `error` when the file cannot be opened, is not ELF, or has no build-id note.
bool read_build_id(const std::string& path, BuildId& out, std::string* error = nullptr);

// Lowercase hex of a build-id (allocating form of build_id_to_hex).
std::string to_hex(const BuildId& id);

// Demangles an Itanium C++ ABI name ("_Z..."); other names come back unchanged.
std::string demangle(std::string_view name);

}  // namespace memtrack::symbolize
