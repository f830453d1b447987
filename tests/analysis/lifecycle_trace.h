// Lifecycle traces for the analysis tests: events and the context records that position them, built together
// so every record's `event` is the index of the next event.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"

namespace memtrack::testing {

using codec::ContextRecord;
using codec::Event;
using codec::EventKind;
using codec::make_event;

inline constexpr std::int32_t kRecorder = 1;
inline constexpr std::uint64_t kMiB = 1 << 20;

// A trace under construction: events and records, each record positioned before the next event.
struct Trace {
  std::vector<Event> events;
  std::vector<ContextRecord> records;
  std::uint64_t ts = 1000;

  std::uint64_t at() const { return events.size(); }
  void malloc(std::int32_t pid, std::uint64_t addr, std::uint64_t size) {
    events.push_back(make_event(EventKind::Malloc, pid, pid, ts++, addr, size));
  }
  void free(std::int32_t pid, std::uint64_t addr) {
    events.push_back(make_event(EventKind::Free, pid, pid, ts++, addr));
  }
  void realloc(std::int32_t pid, std::uint64_t old_addr, std::uint64_t addr, std::uint64_t size) {
    events.push_back(codec::make_realloc(pid, pid, ts++, addr, old_addr, size));
  }
  // The recorder's note that `pid` is about to exec an image it cannot track.
  void untracked(std::int32_t pid, const std::string& exe, const std::string& reason) {
    records.push_back(codec::Untracked{pid, exe, reason, at()});
  }
  void start(std::int32_t pid, std::int32_t ppid) { records.push_back(codec::ProcessStart{pid, ppid, at(), ts++}); }
  void exec(std::int32_t pid, const std::string& exe, std::vector<std::string> argv) {
    records.push_back(codec::ProcessExec{pid, at(), ts++, exe, std::move(argv)});
  }
  void exit(std::int32_t pid, int status = 0) {
    records.push_back(codec::ProcessExit{pid, at(), ts++, status, std::nullopt});
  }
};

inline std::uint64_t position(const ContextRecord& r) {
  return std::visit(
      [](const auto& x) -> std::uint64_t {
        if constexpr (requires { x.event; }) return x.event;
        return 0;
      },
      r);
}

}  // namespace memtrack::testing
