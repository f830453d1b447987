// Errors on data paths are values, never exceptions: a Status is ok or carries a code and one line of text
// that already says what failed and where (file, frame index, byte offset, record index).
#pragma once

#include <string>
#include <utility>

namespace memtrack::codec {

enum class Errc {
  ok = 0,
  truncated,    // input ended inside a record, event or frame
  bad_record,   // raw record: unknown kind, reserved bits, flags on a non-Realloc; an event no raw record holds
  bad_msgpack,  // malformed msgpack, wrong value types, missing field
  bad_zstd,     // corrupted zstd data, checksum mismatch, a frame header zstd rejects
  too_large,    // a size beyond the decoder's limits: a window above DecoderLimits::window_log_max, an event
                // above max_event_bytes, a frame FrameDecoder would have to hold above max_buffered_frame_bytes
  io,           // read or write failure (errno text in the message)
  usage,        // invalid argument from the caller
  interrupted,  // a signal asked the reader to stop (SIGINT, SIGTERM); what was read before it is kept
  bad_compact,  // a compact data frame (memtrack/codec/compact.h) whose columns are malformed or inconsistent
};

class Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  [[nodiscard]] bool is_ok() const { return code_ == Errc::ok; }
  explicit operator bool() const { return is_ok(); }
  [[nodiscard]] Errc code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  Errc code_ = Errc::ok;
  std::string message_;
};

}  // namespace memtrack::codec
