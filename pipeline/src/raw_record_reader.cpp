#include "memtrack/pipeline/raw_record_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "memtrack/pipeline/fd_io.h"

namespace memtrack::pipeline {

using codec::kRawRecordSize;

RawRecordReader::RawRecordReader(int fd, std::string name)
    : fd_(fd), name_(std::move(name)), buffer_(kBlockRecords * kRawRecordSize) {}

bool RawRecordReader::interrupted() const { return stop_flag_ != nullptr && *stop_flag_ != 0; }

// Not FdSource: that one retries every EINTR, and here an EINTR with the stop flag set must end the read.
std::size_t RawRecordReader::fill(std::size_t want, int& error) {
  std::size_t filled = 0;
  while (filled < want && !eof_ && !interrupted()) {
    const ssize_t n = ::read(fd_, buffer_.data() + filled, want - filled);
    if (n < 0) {
      if (errno == EINTR) continue;  // the loop condition sees the stop flag
      error = errno;
      break;
    }
    if (n == 0) eof_ = true;
    filled += static_cast<std::size_t>(n);
  }
  return filled;
}

std::size_t RawRecordReader::read(std::span<codec::Event> out) {
  std::size_t produced = 0;
  while (status_.is_ok() && produced < out.size() && !eof_) {
    const std::size_t want = std::min(out.size() - produced, kBlockRecords) * kRawRecordSize;
    int error = 0;
    const std::size_t filled = fill(want, error);
    const bool stopped = error == 0 && interrupted();
    // Records before a read error, a signal or a bad record are returned first; the first bad record wins
    // over a read error or a signal after it.
    std::size_t count = 0;
    const codec::Status s =
        codec::unpack_raw_records(std::span(buffer_.data(), filled), records_read_, out.subspan(produced), count);
    records_read_ += count;
    produced += count;
    if (!s.is_ok()) {
      status_ = {s.code(), name_ + ": " + s.message()};
      break;
    }
    const std::size_t tail = filled % kRawRecordSize;
    if (error != 0) {
      status_ = {codec::Errc::io,
                 name_ + ": read failed after record " + std::to_string(records_read_) + ": " + errno_text(error)};
    } else if (stopped) {
      std::string dropped;
      if (tail > 0) dropped = " (a partial record of " + std::to_string(tail) + " bytes was dropped)";
      const char* abbrev = sigabbrev_np(static_cast<int>(*stop_flag_));
      status_ = {codec::Errc::interrupted, name_ + ": interrupted by SIG" + std::string(abbrev ? abbrev : "?") +
                                               " after record " + std::to_string(records_read_) + dropped};
      eof_ = true;
    } else if (tail > 0) {
      // fill() stops short of a whole number of records only at the end of the input.
      status_ = {codec::Errc::truncated, name_ + ": record " + std::to_string(records_read_) + ": truncated (" +
                                             std::to_string(tail) + " of 48 bytes at end of input)"};
    }
  }
  return produced;
}

}  // namespace memtrack::pipeline
