// The recorder's artifact file: written beside its target under a temporary name and renamed onto it at
// the end, so that nobody ever reads a mix of two writers or a half-written file under the target's name.
//
// A regular-file target (new, or existing and writable) is written as `<target>.<recorder pid>.partial`
// in the target's directory, created exclusively, and renamed onto the target by finish(). The rename
// replaces only the file that was the target when the recording started (or none): a file that appeared
// under the target's name since (another recorder's, given the same target) is left alone, and the artifact
// is kept beside it as `<stem>.<recorder pid><extension>` (final_path() says; `same.mt` -> `same.4242.mt`).
// So two recorders given the same target both keep their recording. A recorder killed before finish()
// (SIGKILL, a crash) leaves its .partial file: its whole frames are a valid artifact, the events up to the
// last frame written. Anything else (a device such as /dev/null or /dev/full, a FIFO) is written in place.
#pragma once

#include <string>

#include "memtrack/codec/status.h"

namespace memtrack::runtime {

class OutputFile {
 public:
  // `target` empty: the default name, which depends on the command's pid; the file is created now (under
  // a provisional .partial name in the current directory) and named by name_default() after the spawn.
  // Throws std::runtime_error naming the path when the target cannot be written, before any program runs.
  explicit OutputFile(const std::string& target);
  ~OutputFile();  // closes the fd if finish() was not called; leaves the .partial file where it is
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  int fd() const { return fd_; }
  const std::string& partial_path() const { return partial_; }  // empty when written in place

  // The default target is known: renames the provisional file to `<target>.<recorder pid>.partial`.
  // Best effort: on failure the provisional name stays and finish() renames from it.
  void name_default(const std::string& target);
  // Closes the file and renames it onto the target, or beside it (above). The status names both paths on
  // failure (the artifact is then still in the .partial file).
  codec::Status finish();
  // Where the artifact is after finish(): the target, or the name beside it.
  [[nodiscard]] const std::string& final_path() const { return final_; }
  // finish() found another file under the target's name and kept the artifact beside it.
  [[nodiscard]] bool kept_beside() const { return final_ != target_; }
  // The command could not be started: closes and removes the file (no artifact rather than an empty one).
  void abandon();

 private:
  void remember_target();

  std::string target_;
  std::string partial_;
  std::string final_;
  int fd_ = -1;
  bool had_target_ = false;  // the target existed when the recording started: (dev_, ino_)
  unsigned long dev_ = 0, ino_ = 0;
};

}  // namespace memtrack::runtime
