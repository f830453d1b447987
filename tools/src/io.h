// The subcommands' file policy: inputs and outputs by name ("-" is stdin/stdout), and buffered text output.
// The read and write loops themselves are the pipeline's (memtrack/pipeline/fd_io.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "memtrack/codec/status.h"

namespace memtrack::tools {

// Returns an fd (0 for "-"); throws std::runtime_error naming the path on failure.
int open_input(const std::string& path);
// Returns an fd (1 for "-"), created or truncated; throws std::runtime_error naming the path on failure. For
// a streaming writer whose output up to a failure is worth keeping (encode); OutputFile for the others.
int open_output(const std::string& path);
void close_fd(int fd);

// Writes `text` to stdout whole; the status names stdout on failure ("stdout: write failed: No space left on
// device"), so a command whose output is lost says so and exits non-zero.
codec::Status write_stdout(std::string_view text);
// write_stdout for a command's whole output (its --help, its table): throws std::runtime_error with that line.
void print_stdout(std::string_view text);

// An output by name that a failed command leaves as it was: "-" is stdout; a regular file (or a new name) is
// written beside it under a hidden temporary name and renamed over it by commit(); anything else that exists
// (a device, a FIFO) is opened and written in place. Without commit() the temporary is removed.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);  // throws std::runtime_error naming the path
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  [[nodiscard]] int fd() const { return fd_; }
  // For messages: the path as given, or "stdout".
  [[nodiscard]] const std::string& name() const { return name_; }
  // Closes the output and, for a file written beside, renames it over the path; the status names the path.
  codec::Status commit();

 private:
  std::string name_;
  std::string target_;     // the path renamed over; empty when written in place
  std::string temporary_;  // empty when written in place
  int fd_ = -1;
  bool owned_ = false;  // fd_ is ours to close (a file may get fd 0..2 when a standard stream is closed)
};

// Buffers small writes (decoded text lines) and flushes in large blocks with pipeline::write_all. A failed
// flush is one line naming `name` and the errno text ("stdout: write failed: Broken pipe").
class BufferedOutput {
 public:
  BufferedOutput(int fd, std::string name, std::size_t capacity = 1u << 20);
  std::string& buffer() { return buffer_; }
  // Flushes when the buffer is past its capacity; returns the first error.
  codec::Status maybe_flush();
  codec::Status flush();
  // Bytes flushed so far.
  [[nodiscard]] std::uint64_t written() const { return written_; }
  // A flush has failed (the output lacks bytes).
  [[nodiscard]] bool failed() const { return failed_; }

 private:
  int fd_;
  std::string name_;
  std::size_t capacity_;
  std::string buffer_;
  std::uint64_t written_ = 0;
  bool failed_ = false;
};

}  // namespace memtrack::tools
