// The subcommands' file policy: inputs and outputs by name ("-" is stdin/stdout), and buffered text output.
// The read and write loops themselves are the pipeline's (memtrack/pipeline/fd_io.h).
#pragma once

#include <cstddef>
#include <string>

#include "memtrack/codec/status.h"

namespace memtrack::tools {

// Returns an fd (0 for "-"); throws std::runtime_error naming the path on failure.
int open_input(const std::string& path);
// Returns an fd (1 for "-"), created or truncated; throws std::runtime_error naming the path on failure.
int open_output(const std::string& path);
void close_fd(int fd);

// Buffers small writes (decoded text lines) and flushes in large blocks with pipeline::write_all. A failed
// flush is one line naming `name` and the errno text ("stdout: write failed: Broken pipe").
class BufferedOutput {
 public:
  BufferedOutput(int fd, std::string name, std::size_t capacity = 1u << 20);
  std::string& buffer() { return buffer_; }
  // Flushes when the buffer is past its capacity; returns the first error.
  codec::Status maybe_flush();
  codec::Status flush();

 private:
  int fd_;
  std::string name_;
  std::size_t capacity_;
  std::string buffer_;
};

}  // namespace memtrack::tools
