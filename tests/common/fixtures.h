// Test helpers: reading fixture files from tests/data and raw-record files into events.
#pragma once

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrack/codec/event.h"
#include "memtrack/codec/raw_record.h"

namespace memtrack::testing {

inline std::string data_path(const std::string& name) { return std::string(MEMTRACK_TEST_DATA_DIR) + "/" + name; }

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

inline std::vector<codec::Event> read_raw_events(const std::string& path) {
  const auto bytes = read_file(path);
  if (bytes.size() % codec::kRawRecordSize != 0) throw std::runtime_error(path + " is not whole records");
  std::vector<codec::Event> events(bytes.size() / codec::kRawRecordSize);
  std::size_t n = 0;
  const codec::Status s = codec::unpack_raw_records(bytes, 0, events, n);
  if (!s.is_ok()) throw std::runtime_error(path + ": " + s.message());
  return events;
}

// The raw records of `events` (codec::pack_raw_record), as `memtrack decode --format raw` writes them.
inline std::vector<std::byte> raw_records(std::span<const codec::Event> events) {
  std::vector<std::byte> out(events.size() * codec::kRawRecordSize);
  for (std::size_t i = 0; i < events.size(); ++i) {
    codec::pack_raw_record(events[i], std::span<std::byte, codec::kRawRecordSize>(
                                          out.data() + i * codec::kRawRecordSize, codec::kRawRecordSize));
  }
  return out;
}

inline std::string to_hex(const std::byte* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned>(p[i]);
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

}  // namespace memtrack::testing
