// The 48-byte little-endian raw record: the interchange format of `memtrack encode` (input) and
// `memtrack decode --format raw` (output). Layout in docs/FORMAT.md.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <span>

#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::codec {

// Checks one record: known kind, reserved bytes zero, only bit 0 of flags, and that bit only on Realloc.
// `record_index` is the 0-based index in the whole stream, used in the error message.
[[nodiscard]] Status validate_record(const Event& e, std::uint64_t record_index);

// Reads raw records from a file descriptor in blocks, validating each. Blocks until the block is full or
// the input ends, so a pipe is read the same as a file.
class RawRecordReader {
 public:
  // `name` is used in error messages ("-" for stdin). Does not take ownership of fd.
  RawRecordReader(int fd, std::string name);

  // Fills up to out.size() events. Returns how many valid events were read; 0 means end of input or an
  // error (check status()). Events before a bad record are returned before the error is reported.
  std::size_t read(std::span<Event> out);
  [[nodiscard]] const Status& status() const { return status_; }

  // Makes the reader stop when *flag becomes non-zero (a signal number, set by a handler installed without
  // SA_RESTART, so that a read(2) blocked on a pipe returns EINTR): read() then returns the whole records it
  // has and status() is Errc::interrupted. A partial record at that moment is dropped, and the message says so.
  void stop_on_signal(const volatile std::sig_atomic_t* flag) { stop_flag_ = flag; }
  [[nodiscard]] std::uint64_t records_read() const { return records_read_; }

 private:
  [[nodiscard]] bool interrupted() const;

  int fd_;
  std::string name_;
  Status status_;
  std::uint64_t records_read_ = 0;
  std::size_t carry_ = 0;  // bytes of a partial record kept between reads
  unsigned char partial_[kRawRecordSize] = {};
  bool eof_ = false;
  const volatile std::sig_atomic_t* stop_flag_ = nullptr;
};

}  // namespace memtrack::codec
