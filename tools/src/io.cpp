#include "io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <span>
#include <stdexcept>
#include <utility>

#include "memtrack/pipeline/fd_io.h"

namespace memtrack::tools {

int open_input(const std::string& path) {
  if (path == "-") return 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + pipeline::errno_text(errno));
  return fd;
}

int open_output(const std::string& path) {
  if (path == "-") return 1;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create: " + pipeline::errno_text(errno));
  return fd;
}

void close_fd(int fd) {
  if (fd > 2) ::close(fd);
}

BufferedOutput::BufferedOutput(int fd, std::string name, std::size_t capacity)
    : fd_(fd), name_(std::move(name)), capacity_(capacity) {
  buffer_.reserve(capacity_ + 4096);
}

codec::Status BufferedOutput::maybe_flush() { return buffer_.size() >= capacity_ ? flush() : codec::Status{}; }

codec::Status BufferedOutput::flush() {
  const std::span<const std::byte> bytes = std::as_bytes(std::span(buffer_.data(), buffer_.size()));
  const pipeline::WriteResult r = pipeline::write_all(fd_, bytes);
  buffer_.clear();
  if (r.written == bytes.size()) return {};
  if (r.error == 0) return {codec::Errc::io, name_ + ": write returned 0 bytes"};
  return {codec::Errc::io, name_ + ": write failed: " + pipeline::errno_text(r.error)};
}

}  // namespace memtrack::tools
