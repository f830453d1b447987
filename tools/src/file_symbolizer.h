// Symbolizing allocation sites from the module files themselves (memtrack::symbolize, libdw), for artifacts
// that have no Symbols record for a module: the file at the recorded path, if it still exists and its
// build-id is the recorded one; otherwise the module's frames stay module + offset.
#pragma once

#include "memtrack/analysis/sites.h"

namespace memtrack::tools {

// One symbolizer session (each module opened once) shared by the returned function's copies.
analysis::ModuleSymbolizer file_symbolizer();

}  // namespace memtrack::tools
