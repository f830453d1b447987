#include "io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
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

namespace {

codec::Status write_checked(int fd, const std::string& name, std::string_view text) {
  const std::span<const std::byte> bytes = std::as_bytes(std::span(text.data(), text.size()));
  const pipeline::WriteResult r = pipeline::write_all(fd, bytes);
  if (r.written == bytes.size()) return {};
  if (r.error == 0) return {codec::Errc::io, name + ": write returned 0 bytes"};
  return {codec::Errc::io, name + ": write failed: " + pipeline::errno_text(r.error)};
}

}  // namespace

codec::Status write_stdout(std::string_view text) { return write_checked(1, "stdout", text); }

void print_stdout(std::string_view text) {
  if (const codec::Status s = write_stdout(text); !s) throw std::runtime_error(s.message());
}

OutputFile::OutputFile(const std::string& path) : name_(path == "-" ? "stdout" : path) {
  if (path == "-") {
    fd_ = 1;
    return;
  }
  // A symbolic link keeps pointing where it did: the file it names is the one replaced.
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  }
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    fd_ = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error(path + ": cannot open: " + pipeline::errno_text(errno));
    owned_ = true;
    return;
  }
  const std::size_t slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  std::string temporary = dir + "." + base + ".XXXXXX";
  fd_ = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot create: " + pipeline::errno_text(errno));
  owned_ = true;
  // mkostemp makes the file 0600; give it the mode the file had, or the one a new file gets.
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd_, mode);
  target_ = std::move(target);
  temporary_ = std::move(temporary);
}

OutputFile::~OutputFile() {
  if (owned_) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

codec::Status OutputFile::commit() {
  const bool owned = std::exchange(owned_, false);
  if (owned && ::close(fd_) != 0) return {codec::Errc::io, name_ + ": write failed: " + pipeline::errno_text(errno)};
  if (temporary_.empty()) return {};
  if (::rename(temporary_.c_str(), target_.c_str()) != 0)
    return {codec::Errc::io, name_ + ": cannot replace: " + pipeline::errno_text(errno)};
  temporary_.clear();
  return {};
}

BufferedOutput::BufferedOutput(int fd, std::string name, std::size_t capacity)
    : fd_(fd), name_(std::move(name)), capacity_(capacity) {
  buffer_.reserve(capacity_ + 4096);
}

codec::Status BufferedOutput::maybe_flush() { return buffer_.size() >= capacity_ ? flush() : codec::Status{}; }

codec::Status BufferedOutput::flush() {
  codec::Status status = write_checked(fd_, name_, buffer_);
  if (status.is_ok())
    written_ += buffer_.size();
  else
    failed_ = true;
  buffer_.clear();
  return status;
}

}  // namespace memtrack::tools
