// `memtrack decode --context`'s rendering of context records (docs/FORMAT.md, "Context section"): one JSON
// object per line, like the events' JSON lines. The record's type is under "context" (events never have that
// key, so `jq 'select(.context)'` splits them), then its fields under their msgpack key names in the
// writer's order; columns are arrays of numbers, build ids lowercase hex strings, absent optionals null.
#pragma once

#include <string>

#include "memtrack/codec/context.h"

namespace memtrack::tools {

// Appends one line (with its newline) to `out`.
void append_context_json(std::string& out, const codec::ContextRecord& record);

}  // namespace memtrack::tools
