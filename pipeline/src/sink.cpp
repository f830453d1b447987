#include "memtrack/pipeline/sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace memtrack::pipeline {
namespace {

// std::strerror may share a static buffer between threads; the error_code message does not.
std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

int create_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create: " + errno_text(errno));
  return fd;
}

}  // namespace

FdSink::FdSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

// A full disk (ENOSPC, EFBIG) usually strikes in the middle of a frame. In a regular file the partial frame
// can be cut off again, so the file ends with the last whole frame and is a valid artifact as it stands; a
// pipe or device cannot take bytes back, and its reader sees a truncated last frame.
std::string FdSink::remove_partial_write(std::size_t written) {
  if (written == 0) return "";
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return "";
  const off_t end = ::lseek(fd_, 0, SEEK_CUR);
  if (end < static_cast<off_t>(written)) return "";
  const off_t frame_start = end - static_cast<off_t>(written);
  if (::ftruncate(fd_, frame_start) != 0 || ::lseek(fd_, frame_start, SEEK_SET) != frame_start) return "";
  return " (the partial frame was removed: the file ends with the last whole frame)";
}

codec::Status FdSink::write(std::span<const std::byte> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      return {codec::Errc::io, name_ + ": write failed after " + std::to_string(done) + " of " +
                                   std::to_string(bytes.size()) + " bytes: " + errno_text(err) +
                                   remove_partial_write(done)};
    }
    // write(2) returning 0 for a non-empty request would loop forever; treat it as a failure.
    if (n == 0) return {codec::Errc::io, name_ + ": write returned 0 bytes"};
    done += static_cast<std::size_t>(n);
  }
  return {};
}

FileSink::FileSink(const std::string& path) : fd_sink_(create_file(path), path) {}

FileSink::~FileSink() { ::close(fd_sink_.fd()); }

codec::Status FileSink::write(std::span<const std::byte> bytes) { return fd_sink_.write(bytes); }

codec::Status MemorySink::write(std::span<const std::byte> bytes) {
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return {};
}

}  // namespace memtrack::pipeline
