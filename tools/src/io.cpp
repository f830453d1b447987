#include "io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace memtrack::tools {

int open_input(const std::string& path) {
  if (path == "-") return 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  return fd;
}

int open_output(const std::string& path) {
  if (path == "-") return 1;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  return fd;
}

void close_fd(int fd) {
  if (fd > 2) ::close(fd);
}

codec::Status write_all(int fd, std::span<const std::byte> bytes, const std::string& name) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {codec::Errc::io, name + ": write failed: " + std::strerror(errno)};
    }
    if (n == 0) return {codec::Errc::io, name + ": write returned 0 bytes"};
    done += static_cast<std::size_t>(n);
  }
  return {};
}

BufferedOutput::BufferedOutput(int fd, std::string name, std::size_t capacity)
    : fd_(fd), name_(std::move(name)), capacity_(capacity) {
  buffer_.reserve(capacity_ + 4096);
}

codec::Status BufferedOutput::maybe_flush() { return buffer_.size() >= capacity_ ? flush() : codec::Status{}; }

codec::Status BufferedOutput::flush() {
  codec::Status s = write_all(fd_, std::as_bytes(std::span(buffer_.data(), buffer_.size())), name_);
  buffer_.clear();
  return s;
}

}  // namespace memtrack::tools
