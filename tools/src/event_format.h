// Text and binary renderings of events for `memtrack decode`: JSON lines, CSV, raw 48-byte records.
#pragma once

#include <string>
#include <string_view>

#include "memtrack/codec/event.h"
#include "memtrack/codec/foreign_event.h"

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

// Appends one foreign event (a type this reader does not know), jsonl or csv. JSON: every key of its map in
// its order, the values as msgpack gave them (integers, strings, nil, booleans, floats, arrays, maps; binary
// data as a string of hex digits, an ext value as {"ext":TYPE,"data":HEX}; a key that is not a string
// becomes its JSON text, or "[...]"/"{...}" for an array or a map). CSV: its pid, tid, timestamp, addr and
// type; the size and old_addr columns, which are the known kinds', stay empty. Raw records have no kind for
// it: the caller refuses (raw_foreign_error).
void append_foreign_event(std::string& out, const codec::ForeignEvent& e, OutputFormat format);
// Why `decode --format raw` stops at a foreign event: `name` the input, `events` the events written before.
[[nodiscard]] std::string raw_foreign_error(const std::string& name, std::uint64_t events,
                                            const codec::ForeignEvent& e);

}  // namespace memtrack::tools
