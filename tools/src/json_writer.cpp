#include "json_writer.h"

#include <cstdio>

namespace memtrack::tools {

std::string json_string(std::string_view in) {
  std::string o = "\"";
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
      ++i;
    } else if (c < 0x80) {
      o += static_cast<char>(c);
      ++i;
    } else {
      // Length and range of a well-formed sequence (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
      std::size_t len = 0;
      unsigned char lo = 0x80, hi = 0xBF;
      if (c >= 0xC2 && c <= 0xDF)
        len = 2;
      else if (c >= 0xE0 && c <= 0xEF)
        len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      else if (c >= 0xF0 && c <= 0xF4)
        len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      bool ok = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
      for (std::size_t k = 2; ok && k < len; ++k) ok = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
      if (ok) {
        o.append(in.substr(i, len));
        i += len;
      } else {
        o += "\xEF\xBF\xBD";
        ++i;
      }
    }
  }
  return o + "\"";
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + json_string(v[i]);
  return o + "]";
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back()) out_ += ',';
  first_.back() = false;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  out_ += json_string(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::open(char c) {
  separate();
  out_ += c;
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(char c) {
  out_ += c;
  if (!first_.empty()) first_.pop_back();
  return *this;
}

}  // namespace memtrack::tools
