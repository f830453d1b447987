// Text and binary renderings of events for `memtrack decode`: JSON lines, CSV, raw 48-byte records.
#pragma once

#include <string>
#include <string_view>

#include "memtrack/codec/event.h"

namespace memtrack::tools {

enum class OutputFormat { jsonl, csv, raw };

// Parses "jsonl", "csv" or "raw"; returns false on anything else.
bool parse_output_format(std::string_view text, OutputFormat& out);

// The CSV header row (with newline); empty for other formats.
std::string_view format_header(OutputFormat format);

// Appends one event in `format` to `out` (raw: codec::pack_raw_record). JSON keys follow the artifact's field
// names and order (pid, tid, timestamp, addr, type, old_addr, size); absent fields are omitted (JSON) or empty
// (CSV).
void append_event(std::string& out, const codec::Event& e, OutputFormat format);

}  // namespace memtrack::tools
