#include "event_format.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <span>
#include <system_error>
#include <vector>

#include "json_writer.h"
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

std::string hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * bytes.size());
  for (const std::byte b : bytes) {
    s += kDigits[std::to_integer<unsigned>(b) >> 4];
    s += kDigits[std::to_integer<unsigned>(b) & 15];
  }
  return s;
}

// A foreign event's map as JSON (append_foreign_event's rules).
class JsonValues final : public codec::MsgpackValueVisitor {
 public:
  explicit JsonValues(std::string& out) : w_(out) {}
  void nil() override { scalar("null"); }
  void boolean(bool v) override { scalar(v ? "true" : "false"); }
  void unsigned_integer(std::uint64_t v) override { scalar(std::to_string(v)); }
  void signed_integer(std::int64_t v) override { scalar(std::to_string(v)); }
  void floating(double v) override {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    scalar(ec == std::errc{} && std::isfinite(v) ? std::string(buf, end) : "null");
  }
  void str(std::string_view v) override {
    if (skip_ > 0) return;
    if (at_key()) {
      w_.key(v);
      key_done();
    } else {
      w_.str(v);
      value_done();
    }
  }
  void bin(std::span<const std::byte> v) override { scalar(json_string(hex(v))); }
  void ext(std::int8_t type, std::span<const std::byte> v) override {
    scalar("{\"ext\":" + std::to_string(type) + ",\"data\":" + json_string(hex(v)) + "}");
  }
  void begin_array(std::uint32_t) override { open(false); }
  void end_array() override { close(false); }
  void begin_map(std::uint32_t) override { open(true); }
  void end_map() override { close(true); }

 private:
  [[nodiscard]] bool at_key() const { return !levels_.empty() && levels_.back().map && levels_.back().key_next; }
  void key_done() { levels_.back().key_next = false; }
  void value_done() {
    if (!levels_.empty() && levels_.back().map) levels_.back().key_next = true;
  }
  void scalar(const std::string& json) {
    if (skip_ > 0) return;
    if (at_key()) {
      w_.key(json);
      key_done();
    } else {
      w_.raw(json);
      value_done();
    }
  }
  void open(bool map) {
    if (skip_ > 0 || at_key()) {  // a container as a key: named, its contents left out
      if (skip_++ == 0) {
        w_.key(map ? "{...}" : "[...]");
        key_done();
      }
      return;
    }
    map ? w_.begin_object() : w_.begin_array();
    levels_.push_back({map, true});
  }
  void close(bool map) {
    if (skip_ > 0) {
      --skip_;
      return;
    }
    map ? w_.end_object() : w_.end_array();
    levels_.pop_back();
    value_done();
  }

  struct Level {
    bool map;
    bool key_next;
  };
  JsonWriter w_;
  std::vector<Level> levels_;
  unsigned skip_ = 0;
};

void append_csv_field(std::string& out, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

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

void append_foreign_event(std::string& out, const codec::ForeignEvent& e, OutputFormat format) {
  if (format == OutputFormat::jsonl) {
    JsonValues values(out);
    // The parser checked the map whole, so the walk cannot fail.
    (void)codec::visit_msgpack(e.msgpack, values);
    out += '\n';
    return;
  }
  if (format != OutputFormat::csv) return;
  append_number(out, e.pid);
  out += ',';
  append_number(out, e.tid);
  out += ',';
  append_number(out, e.timestamp);
  out += ',';
  append_number(out, e.addr);
  out += ',';
  append_csv_field(out, e.type);
  out += ",,\n";
}

std::string raw_foreign_error(const std::string& name, std::uint64_t events, const codec::ForeignEvent& e) {
  return name + ": after event " + std::to_string(events) + ": an event of type " + json_string(e.type) +
         ", which a raw record cannot hold (its kinds are the 8 of docs/FORMAT.md); use --format jsonl or csv";
}

}  // namespace memtrack::tools
