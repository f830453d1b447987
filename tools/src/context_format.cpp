#include "context_format.h"

#include <cstdio>
#include <optional>
#include <type_traits>
#include <vector>

#include "stats_format.h"  // json_string

namespace memtrack::tools {
namespace {

// Writes `"key":value` pairs after the opening of one object.
class Line {
 public:
  Line(std::string& out, const char* type) : out_(out) {
    out_ += "{\"context\":\"";
    out_ += type;
    out_ += '"';
  }
  ~Line() { out_ += "}\n"; }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  Line& num(const char* key, std::uint64_t v) { return raw(key, std::to_string(v)); }
  Line& num(const char* key, std::int64_t v) { return raw(key, std::to_string(v)); }
  Line& opt(const char* key, const std::optional<std::int32_t>& v) {
    return raw(key, v ? std::to_string(*v) : std::string("null"));
  }
  Line& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  Line& str(const char* key, const std::string& v) { return raw(key, json_string(v)); }
  Line& strs(const char* key, const std::vector<std::string>& v) { return raw(key, json_strings(v)); }
  Line& hex(const char* key, const std::vector<std::uint8_t>& bytes) {
    std::string h = "\"";
    for (const std::uint8_t b : bytes) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%02x", b);
      h += buf;
    }
    return raw(key, h + "\"");
  }
  template <class T>
  Line& column(const char* key, const std::vector<T>& v) {
    key_(key);
    out_ += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ',';
      out_ += std::to_string(v[i]);
    }
    out_ += ']';
    return *this;
  }

 private:
  void key_(const char* key) {
    out_ += ",\"";
    out_ += key;
    out_ += "\":";
  }
  Line& raw(const char* key, const std::string& value) {
    key_(key);
    out_ += value;
    return *this;
  }
  std::string& out_;
};

}  // namespace

void append_context_json(std::string& out, const codec::ContextRecord& record) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, codec::RecordingInfo>) {
          Line(out, "Recording")
              .str("memtrack", r.memtrack_version)
              .strs("command", r.command)
              .num("start_realtime_ns", r.start_realtime_ns)
              .num("start_monotonic_ns", r.start_monotonic_ns)
              .strs("sections", r.sections)
              .num("pid", std::int64_t{r.pid});
        } else if constexpr (std::is_same_v<T, codec::ProcessStart>) {
          Line(out, "ProcessStart")
              .num("pid", std::int64_t{r.pid})
              .num("ppid", std::int64_t{r.ppid})
              .num("event", r.event)
              .num("timestamp", r.timestamp);
        } else if constexpr (std::is_same_v<T, codec::ProcessExec>) {
          Line(out, "Exec")
              .num("pid", std::int64_t{r.pid})
              .num("event", r.event)
              .num("timestamp", r.timestamp)
              .str("executable", r.executable)
              .strs("argv", r.argv);
        } else if constexpr (std::is_same_v<T, codec::ProcessExit>) {
          Line(out, "ProcessExit")
              .num("pid", std::int64_t{r.pid})
              .num("event", r.event)
              .num("timestamp", r.timestamp)
              .opt("status", r.status)
              .opt("signal", r.signal);
        } else if constexpr (std::is_same_v<T, codec::Untracked>) {
          Line(out, "Untracked")
              .opt("pid", r.pid)
              .str("executable", r.executable)
              .str("reason", r.reason)
              .num("event", r.event);
        } else if constexpr (std::is_same_v<T, codec::StreamEnd>) {
          Line(out, "End").num("events", r.events).num("frames", r.frames).boolean("clean", r.clean);
        } else if constexpr (std::is_same_v<T, codec::Module>) {
          Line(out, "Module")
              .num("pid", std::int64_t{r.pid})
              .num("event", r.event)
              .str("path", r.path)
              .hex("build_id", r.build_id)
              .num("bias", r.bias)
              .num("start", r.start)
              .num("end", r.end)
              .boolean("loaded", r.loaded);
        } else if constexpr (std::is_same_v<T, codec::StackNodes>) {
          Line(out, "StackNodes")
              .num("pid", std::int64_t{r.pid})
              .num("event", r.event)
              .num("first_id", std::uint64_t{r.first_id})
              .column("parents", r.parents)
              .column("addresses", r.addresses);
        } else if constexpr (std::is_same_v<T, codec::EventStacks>) {
          Line(out, "EventStacks").num("first_event", r.first_event).column("ids", r.ids);
        } else if constexpr (std::is_same_v<T, codec::Pause> || std::is_same_v<T, codec::Resume>) {
          Line(out, std::is_same_v<T, codec::Pause> ? "Pause" : "Resume")
              .num("pid", std::int64_t{r.pid})
              .num("tid", std::int64_t{r.tid})
              .num("event", r.event)
              .num("timestamp", r.timestamp)
              .str("source", r.source);
        } else if constexpr (std::is_same_v<T, codec::RegionBegin>) {
          Line(out, "RegionBegin")
              .num("pid", std::int64_t{r.pid})
              .num("tid", std::int64_t{r.tid})
              .num("event", r.event)
              .num("timestamp", r.timestamp)
              .str("name", r.name);
        } else if constexpr (std::is_same_v<T, codec::RegionEnd>) {
          Line(out, "RegionEnd")
              .num("pid", std::int64_t{r.pid})
              .num("tid", std::int64_t{r.tid})
              .num("event", r.event)
              .num("timestamp", r.timestamp);
        } else {
          static_assert(std::is_same_v<T, codec::Symbols>);
          Line(out, "Symbols")
              .str("path", r.path)
              .hex("build_id", r.build_id)
              .column("addresses", r.addresses)
              .column("depths", r.depths)
              .column("functions", r.functions)
              .column("files", r.files)
              .column("lines", r.lines)
              .strs("strings", r.strings);
        }
      },
      record);
}

}  // namespace memtrack::tools
