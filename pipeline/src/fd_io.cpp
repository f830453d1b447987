#include "memtrack/pipeline/fd_io.h"

#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace memtrack::pipeline {

std::ptrdiff_t FdSource::read(std::span<std::byte> out) {
  for (;;) {
    const ssize_t n = ::read(fd_, out.data(), out.size());
    if (n >= 0) return n;
    if (errno != EINTR) return -errno;
  }
}

WriteResult write_all(int fd, std::span<const std::byte> bytes) {
  WriteResult r;
  while (r.written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + r.written, bytes.size() - r.written);
    if (n < 0) {
      if (errno == EINTR) continue;
      r.error = errno;
      return r;
    }
    // write(2) returning 0 for a non-empty request would loop forever; it is a failure.
    if (n == 0) return r;
    r.written += static_cast<std::size_t>(n);
  }
  return r;
}

// std::strerror may share a static buffer between threads; the error_code message does not.
std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace memtrack::pipeline
