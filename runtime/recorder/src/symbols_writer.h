// The recording's symbol table (docs/FORMAT.md, "Context section: stacks and modules", `Symbols`): when the
// program has ended, every return address of every image's trace tree is placed in its module (the image's
// Module notes) and symbolized with memtrack::symbolize (libdw: demangled functions, file:line, inlined
// frames; .symtab/.dynsym names without DWARF), and one or more Symbols records per module go into the
// context. Never on the program's path: the recorder does it after the last ticket was read.
#pragma once

#include <cstdint>

#include "memtrack/pipeline/context_channel.h"
#include "stack_tables.h"

namespace memtrack::runtime {

struct SymbolsSummary {
  std::uint64_t modules = 0;    // modules with at least one address
  std::uint64_t addresses = 0;  // distinct module-relative addresses symbolized
  std::uint64_t resolved = 0;   // of which have at least a function name
  std::uint64_t outside = 0;    // addresses in no noted module (JIT code, the pseudo-node excluded)
  double seconds = 0;
};

// Writes the Symbols records of `tables` into `channel`. `progress`: show progress on stderr (a terminal).
SymbolsSummary write_symbols(const StackTables& tables, pipeline::ContextChannel& channel, bool progress);

}  // namespace memtrack::runtime
