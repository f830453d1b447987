#include "memtrack/pipeline/sink.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "memtrack/pipeline/fd_io.h"

namespace memtrack::pipeline {

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
  const WriteResult r = write_all(fd_, bytes);
  if (r.written == bytes.size()) return {};
  if (r.error == 0) return {codec::Errc::io, name_ + ": write returned 0 bytes"};
  return {codec::Errc::io, name_ + ": write failed after " + std::to_string(r.written) + " of " +
                               std::to_string(bytes.size()) + " bytes: " + errno_text(r.error) +
                               remove_partial_write(r.written)};
}

codec::Status MemorySink::write(std::span<const std::byte> bytes) {
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return {};
}

}  // namespace memtrack::pipeline
