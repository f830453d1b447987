// The preload's diagnostics channel (memtrack/runtime/ring.h, kEnvMessages; docs/RUNTIME.md, "Diagnostics"):
// a memfd the tracked processes append their notes to, one line each, instead of writing into the program's
// stderr. The recorder reads it once the recording has ended and record prints it in its summary.
#pragma once

#include <string>
#include <vector>

#include "memtrack/runtime/recorder.h"

namespace memtrack::runtime {

// Owns the memfd (close-on-exec: the program's fd table is untouched; processes open it through path(),
// /proc/<recorder pid>/fd/<n>, and only while they write a line). Not thread-safe; the recorder's main thread
// creates it before the command starts and collects it after every process has gone.
class PreloadMessages {
 public:
  // Throws std::runtime_error when the memfd cannot be created.
  PreloadMessages();
  ~PreloadMessages();
  PreloadMessages(const PreloadMessages&) = delete;
  PreloadMessages& operator=(const PreloadMessages&) = delete;

  [[nodiscard]] std::string path() const;

  // Every distinct message so far, in the order of its first line, with the pids that wrote it. Lines are
  // "<pid> <text>"; a line without a pid, or cut short, is kept with pid 0. At most kMaxBytes are read: a
  // process that floods the channel cannot make the recorder's memory grow.
  [[nodiscard]] std::vector<PreloadMessage> collect() const;
  static constexpr std::size_t kMaxBytes = 1 << 20;

 private:
  int fd_ = -1;
};

// Parses the channel's bytes (collect()'s work, for the tests).
std::vector<PreloadMessage> parse_preload_messages(std::string_view bytes);

}  // namespace memtrack::runtime
