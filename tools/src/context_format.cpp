#include "context_format.h"

#include <cstdio>
#include <optional>
#include <type_traits>
#include <vector>

#include "json_writer.h"

namespace memtrack::tools {
namespace {

// One record as one line: an object whose first member is "context", its members in the order called.
class Line {
 public:
  Line(std::string& out, const char* type) : out_(out), json_(out) { json_.begin_object().member("context", type); }
  ~Line() {
    json_.end_object();
    out_ += '\n';
  }
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  template <class T>
  Line& num(const char* key, const T& v) {
    json_.key(key).num(v);
    return *this;
  }
  Line& boolean(const char* key, bool v) {
    json_.key(key).boolean(v);
    return *this;
  }
  Line& str(const char* key, const std::string& v) {
    json_.key(key).str(v);
    return *this;
  }
  Line& strs(const char* key, const std::vector<std::string>& v) {
    json_.key(key).raw(json_strings(v));
    return *this;
  }
  Line& hex(const char* key, const std::vector<std::uint8_t>& bytes) {
    std::string h;
    for (const std::uint8_t b : bytes) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%02x", b);
      h += buf;
    }
    return str(key, h);
  }
  template <class T>
  Line& column(const char* key, const std::vector<T>& v) {
    json_.key(key).array(v, [](JsonWriter& j, const T& x) { j.num(x); });
    return *this;
  }

 private:
  std::string& out_;
  JsonWriter json_;
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
              .num("status", r.status)
              .num("signal", r.signal);
        } else if constexpr (std::is_same_v<T, codec::Untracked>) {
          Line(out, "Untracked")
              .num("pid", r.pid)
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
        } else if constexpr (std::is_same_v<T, codec::Resident>) {
          Line(out, "Resident")
              .num("pid", std::int64_t{r.pid})
              .num("event", r.event)
              .num("timestamp", r.timestamp)
              .num("anon", r.anon)
              .num("file", r.file)
              .num("shmem", r.shmem)
              .num("swap", r.swap)
              .num("own", r.own)
              .num("hwm", r.hwm);
        } else if constexpr (std::is_same_v<T, codec::ResidentPages>) {
          Line(out, "ResidentPages")
              .num("pid", std::int64_t{r.pid})
              .num("event", r.event)
              .num("timestamp", r.timestamp)
              .num("part", std::uint64_t{r.part})
              .num("page_size", std::uint64_t{r.page_size})
              .column("starts", r.starts)
              .column("pages", r.pages)
              .hex("present", r.present);
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
