// Where encoded bytes go: a file descriptor (a file, a pipe, stdout) or memory.
//
// The encoder calls write() from one dedicated writer thread, one whole zstd frame per call, in frame order,
// and never again after a call failed. A sink therefore needs no locking of its own; it must not be shared
// with another writer while an encoder uses it.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "memtrack/codec/status.h"

namespace memtrack::pipeline {

class Sink {
 public:
  virtual ~Sink() = default;
  // Writes all of `bytes` or returns an error (Errc::io) whose message names the sink and the cause. A sink
  // that failed part-way may have written a prefix of `bytes`; the encoder stops at the first error. An
  // exception thrown here is caught and reported as an Errc::io error like any other.
  virtual codec::Status write(std::span<const std::byte> bytes) = 0;
};

// Writes to a file descriptor it does not own, with write_all() (memtrack/pipeline/fd_io.h). Errors name the
// sink and how far the write got ("stdout: write failed after 0 of 4096 bytes: Broken pipe"). EPIPE is
// returned, not raised: the encoder's writer thread blocks SIGPIPE, so a closed pipe is an error value, not a
// dead process.
class FdSink : public Sink {
 public:
  FdSink(int fd, std::string name);
  codec::Status write(std::span<const std::byte> bytes) override;
  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  // After a failed write of which `written` bytes went out: cuts them off again if fd is a regular file.
  // Returns text for the error message saying so, or "".
  std::string remove_partial_write(std::size_t written);

  int fd_;
  std::string name_;
};

// Appends to a vector in memory (tests, embedding programs). Read bytes() only after the encoder finished.
class MemorySink : public Sink {
 public:
  codec::Status write(std::span<const std::byte> bytes) override;
  [[nodiscard]] const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace memtrack::pipeline
