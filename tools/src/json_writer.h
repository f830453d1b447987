// The one JSON writer of the tools' outputs (stats --json, top --json, decode --context, the report's data):
// values appended to a string in order, commas placed by the writer, strings always valid JSON.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace memtrack::tools {

// A JSON string of bytes that need not be UTF-8 (command lines, paths, symbol names): bytes that are not part
// of a valid UTF-8 sequence become U+FFFD and control characters are escaped, so a document always parses.
std::string json_string(std::string_view in);
// An array of json_string()s.
std::string json_strings(const std::vector<std::string>& v);

// Appends to `out`. Inside an object every value follows key(); a value or an opening after another one in the
// same object or array gets its comma. Nothing checks that the calls nest: the callers' structure is the
// schema.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
  // For members appended inside an object someone else opens and closes (`"a":1,"b":2`, no braces).
  static JsonWriter members(std::string& out) {
    JsonWriter j(out);
    j.first_.push_back(true);
    return j;
  }

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k);

  JsonWriter& str(std::string_view s) { return raw(json_string(s)); }
  JsonWriter& str_or_null(std::string_view s) { return s.empty() ? null() : str(s); }
  template <std::integral T>
  JsonWriter& num(T v) {
    return raw(std::to_string(v));
  }
  // 0 is written as null (a line number, an optional count).
  JsonWriter& num_or_null(std::uint64_t v) { return v != 0 ? num(v) : null(); }
  template <class T>
  JsonWriter& num(const std::optional<T>& v) {
    return v ? num(*v) : null();
  }
  JsonWriter& boolean(bool v) { return raw(v ? "true" : "false"); }
  JsonWriter& strs(const std::vector<std::string>& v) { return raw(json_strings(v)); }
  JsonWriter& null() { return raw("null"); }
  // A value already in JSON (a formatted number, a nested document).
  JsonWriter& raw(std::string_view json);

  // key(k) then the value.
  template <class V>
  JsonWriter& member(std::string_view k, const V& v) {
    key(k);
    if constexpr (std::is_convertible_v<const V&, std::string_view>)
      return str(v);
    else if constexpr (std::is_same_v<V, bool>)
      return boolean(v);
    else
      return num(v);
  }
  // An array of `items`, each written by `each(writer, item)`.
  template <class Range, class Each>
  JsonWriter& array(const Range& items, Each&& each) {
    begin_array();
    for (const auto& item : items) each(*this, item);
    return end_array();
  }

 private:
  void separate();
  JsonWriter& open(char c);
  JsonWriter& close(char c);

  std::string& out_;
  std::vector<bool> first_;  // per open object or array: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace memtrack::tools
