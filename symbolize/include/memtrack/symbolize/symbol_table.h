// The symbol table in a serializable form: what goes into an artifact so it can be read on another machine
// without the modules. Plain vectors of integers and one table of distinct strings; the artifact's context
// section defines the bytes (this library does not). Frames reference strings by index; index 0 is always
// the empty string, meaning "unknown".
//
// Layout:
//   modules[m]    the module (path, build-ids, status) that addresses with module == m belong to
//   addresses[i]  one symbolized address: frames[first_frame .. first_frame + frame_count), innermost first;
//                 all but the last are inlined calls. frame_count == 0: module + address only.
//   addresses are sorted by (module, address) and unique, so find() is a binary search.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::symbolize {

struct SymbolTable {
  struct Module {
    std::uint32_t path = 0;  // string index
    BuildId build_id;        // as recorded (requested)
    ModuleStatus status = ModuleStatus::ok;
    std::uint32_t message = 0;  // string index: why it was not symbolized, if it was not
  };
  struct Frame {
    std::uint32_t function = 0;  // string index, demangled
    std::uint32_t file = 0;      // string index
    std::uint32_t line = 0;
    std::uint32_t column = 0;
  };
  struct Address {
    std::uint32_t module = 0;
    std::uint64_t address = 0;  // module-relative, as recorded (a return address is not adjusted)
    std::uint32_t first_frame = 0;
    std::uint32_t frame_count = 0;
    Source source = Source::none;
  };

  std::vector<std::string> strings{std::string()};
  std::vector<Module> modules;
  std::vector<Frame> frames;
  std::vector<Address> addresses;

  // The entry for (module, address), or nullptr.
  [[nodiscard]] const Address* find(std::uint32_t module, std::uint64_t address) const;
  [[nodiscard]] std::span<const Frame> frames_of(const Address& entry) const {
    return {frames.data() + entry.first_frame, entry.frame_count};
  }
  [[nodiscard]] const std::string& string(std::uint32_t index) const { return strings.at(index); }
};

// Builds a SymbolTable, interning strings as they come.
class SymbolTableBuilder {
 public:
  SymbolTableBuilder();
  std::uint32_t intern(std::string_view text);
  // Adds a module; its index in SymbolTable::modules is returned.
  std::uint32_t add_module(const ModuleRef& module, const ModuleInfo& info);
  // Adds one address's frames to module `module`. Adding the same (module, address) twice keeps the first.
  void add(std::uint32_t module, const SymbolizedAddress& symbolized);
  // Sorts the addresses and hands the table over; the builder is empty afterwards.
  SymbolTable finish();

 private:
  SymbolTable table_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

// One module's addresses to symbolize.
struct ModuleAddresses {
  ModuleRef module;
  std::vector<std::uint64_t> addresses;  // module-relative; duplicates are symbolized once
  AddressKind kind = AddressKind::return_address;
};

// Symbolizes every request with `symbolizer` into one table; modules[i] is requests[i].module. `progress`
// sees the whole run: done/total count addresses over all requests. A progress callback returning false
// stops the run; the addresses not reached stay in the table with source none.
SymbolTable symbolize_table(Symbolizer& symbolizer, std::span<const ModuleAddresses> requests,
                            const ProgressFn& progress = {});

}  // namespace memtrack::symbolize
