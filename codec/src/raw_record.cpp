#include "memtrack/codec/raw_record.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

namespace memtrack::codec {

static_assert(std::endian::native == std::endian::little,
              "raw records are little-endian and read by memcpy; a big-endian port needs byte swaps here");

Status validate_record(const Event& e, std::uint64_t record_index) {
  const auto kind = static_cast<std::uint8_t>(e.kind);
  if (!is_valid_kind(kind)) {
    return {Errc::bad_record, "record " + std::to_string(record_index) + ": unknown kind " + std::to_string(kind)};
  }
  if ((e.flags & ~kFlagHasOldAddr) != 0) {
    return {Errc::bad_record, "record " + std::to_string(record_index) +
                                  ": reserved flag bits set (flags=" + std::to_string(e.flags) + ")"};
  }
  if (e.has_old_addr() && e.kind != EventKind::Realloc) {
    return {Errc::bad_record, "record " + std::to_string(record_index) + ": old_addr flag on a " +
                                  std::string(kind_name(e.kind)) + " record"};
  }
  for (std::uint8_t b : e.reserved) {
    if (b != 0)
      return {Errc::bad_record, "record " + std::to_string(record_index) + ": reserved bytes 42..47 not zero"};
  }
  if (e.kind == EventKind::Free && e.size != 0) {
    return {Errc::bad_record, "record " + std::to_string(record_index) + ": Free record with a non-zero size"};
  }
  if (!e.has_old_addr() && e.old_addr != 0) {
    return {Errc::bad_record, "record " + std::to_string(record_index) + ": old_addr set without the old_addr flag"};
  }
  return {};
}

bool RawRecordReader::interrupted() const { return stop_flag_ != nullptr && *stop_flag_ != 0; }

RawRecordReader::RawRecordReader(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

std::size_t RawRecordReader::read(std::span<Event> out) {
  if (!status_.is_ok() || out.empty()) return 0;
  auto* bytes = reinterpret_cast<unsigned char*>(out.data());
  const std::size_t capacity = out.size_bytes();
  std::size_t filled = carry_;
  if (carry_ > 0) std::memcpy(bytes, partial_, carry_);
  carry_ = 0;
  while (filled < capacity && !eof_ && !interrupted()) {
    const ssize_t n = ::read(fd_, bytes + filled, capacity - filled);
    if (n < 0) {
      if (errno == EINTR && interrupted()) break;
      if (errno == EINTR) continue;
      status_ = {Errc::io,
                 name_ + ": read failed after record " + std::to_string(records_read_) + ": " + std::strerror(errno)};
      break;
    }
    if (n == 0) eof_ = true;
    filled += static_cast<std::size_t>(n);
  }
  if (status_.is_ok() && interrupted()) {
    const std::size_t whole = filled / kRawRecordSize * kRawRecordSize;
    std::string dropped;
    if (filled > whole) dropped = " (a partial record of " + std::to_string(filled - whole) + " bytes was dropped)";
    const char* abbrev = sigabbrev_np(static_cast<int>(*stop_flag_));
    status_ = {Errc::interrupted, name_ + ": interrupted by SIG" + std::string(abbrev ? abbrev : "?") +
                                      " after record " + std::to_string(records_read_ + filled / kRawRecordSize) +
                                      dropped};
    filled = whole;
    eof_ = true;
  }
  std::size_t count = filled / kRawRecordSize;
  const std::size_t tail = filled % kRawRecordSize;
  for (std::size_t i = 0; i < count; ++i) {
    Status s = validate_record(out[i], records_read_ + i);
    if (!s.is_ok()) {
      status_ = {s.code(), name_ + ": " + s.message()};
      records_read_ += i;
      return i;
    }
  }
  records_read_ += count;
  if (tail > 0) {
    if (eof_) {
      status_ = {Errc::truncated, name_ + ": record " + std::to_string(records_read_) + ": truncated (" +
                                      std::to_string(tail) + " of 48 bytes at end of input)"};
    } else {
      std::memcpy(partial_, bytes + count * kRawRecordSize, tail);
      carry_ = tail;
    }
  }
  return count;
}

}  // namespace memtrack::codec
