// Reads 48-byte raw records (memtrack/codec/raw_record.h, docs/FORMAT.md) from a file descriptor: the input
// of `memtrack encode`. It is the pipeline's EventSource for that path, so it fills the encoder's frame
// buffers directly, one virtual call per block of events.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memtrack/codec/event.h"
#include "memtrack/codec/raw_record.h"
#include "memtrack/codec/status.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace memtrack::pipeline {

// Reads blocks of records with read(2) into a buffer of its own and unpacks each into an Event, validating
// it (codec::unpack_raw_records). Blocks until `out` is full or the input ends, so a pipe is read the same
// as a file. One thread at a time.
class RawRecordReader final : public EventSource {
 public:
  // `name` is used in error messages ("stdin" for fd 0). Does not take ownership of fd. Allocates its read
  // buffer here, once.
  RawRecordReader(int fd, std::string name);

  // Fills up to out.size() events. Returns how many valid events were read; 0 means end of input or an
  // error (check status()). Events before a bad record are returned before the error is reported.
  std::size_t read(std::span<codec::Event> out) override;
  [[nodiscard]] codec::Status status() const override { return status_; }

  // Makes the reader stop when *flag becomes non-zero (a signal number, set by a handler installed without
  // SA_RESTART, so that a read(2) blocked on a pipe returns EINTR): read() then returns the whole records it
  // has and status() is Errc::interrupted. A partial record at that moment is dropped, and the message says so.
  void stop_on_signal(const volatile std::sig_atomic_t* flag) { stop_flag_ = flag; }
  [[nodiscard]] std::uint64_t records_read() const { return records_read_; }

  // Records per read(2) at most: 96 KiB, small enough to stay in cache between read(2) and unpacking.
  static constexpr std::size_t kBlockRecords = 2048;

 private:
  [[nodiscard]] bool interrupted() const;
  // Reads up to `want` bytes into buffer_, until it has them, the input ends, a signal stops it or read(2)
  // fails. Returns the bytes read; sets eof_, or `error` to the errno.
  std::size_t fill(std::size_t want, int& error);

  int fd_;
  std::string name_;
  codec::Status status_;
  std::uint64_t records_read_ = 0;
  std::vector<std::byte> buffer_;
  bool eof_ = false;
  const volatile std::sig_atomic_t* stop_flag_ = nullptr;
};

}  // namespace memtrack::pipeline
