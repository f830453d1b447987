#include "event_format.h"

#include <charconv>
#include <cstddef>

#include "memtrack/codec/raw_record.h"

namespace memtrack::tools {
namespace {

template <typename T>
void append_number(std::string& out, T v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

bool has_size(const codec::Event& e) { return e.kind != codec::EventKind::Free; }

}  // namespace

bool parse_output_format(std::string_view text, OutputFormat& out) {
  if (text == "jsonl")
    out = OutputFormat::jsonl;
  else if (text == "csv")
    out = OutputFormat::csv;
  else if (text == "raw")
    out = OutputFormat::raw;
  else
    return false;
  return true;
}

std::string_view format_header(OutputFormat format) {
  return format == OutputFormat::csv ? "pid,tid,timestamp,addr,type,size,old_addr\n" : "";
}

void append_event(std::string& out, const codec::Event& e, OutputFormat format) {
  switch (format) {
    case OutputFormat::raw: {
      std::byte record[codec::kRawRecordSize];
      codec::pack_raw_record(e, record);
      out.append(reinterpret_cast<const char*>(record), sizeof record);
      return;
    }
    case OutputFormat::jsonl:
      out += "{\"pid\":";
      append_number(out, e.pid);
      out += ",\"tid\":";
      append_number(out, e.tid);
      out += ",\"timestamp\":";
      append_number(out, e.timestamp);
      out += ",\"addr\":";
      append_number(out, e.addr);
      out += ",\"type\":\"";
      out += codec::kind_name(e.kind);
      out += '"';
      if (e.has_old_addr()) {
        out += ",\"old_addr\":";
        append_number(out, e.old_addr);
      }
      if (has_size(e)) {
        out += ",\"size\":";
        append_number(out, e.size);
      }
      out += "}\n";
      return;
    case OutputFormat::csv:
      append_number(out, e.pid);
      out += ',';
      append_number(out, e.tid);
      out += ',';
      append_number(out, e.timestamp);
      out += ',';
      append_number(out, e.addr);
      out += ',';
      out += codec::kind_name(e.kind);
      out += ',';
      if (has_size(e)) append_number(out, e.size);
      out += ',';
      if (e.has_old_addr()) append_number(out, e.old_addr);
      out += '\n';
      return;
  }
}

}  // namespace memtrack::tools
