#include "args.h"

#include <charconv>

namespace memtrack::tools {

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (int j = i + 1; j < argc; ++j) tail_.emplace_back(argv[j]);
      break;
    }
    args_.push_back(std::move(a));
  }
  used_.assign(args_.size(), false);
}

std::optional<std::string> Args::value(const std::string& name, const std::string& short_name) {
  std::optional<std::string> result;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (used_[i]) continue;
    const std::string& a = args_[i];
    if (a == "--" + name || (!short_name.empty() && a == "-" + short_name)) {
      if (i + 1 >= args_.size()) throw UsageError("option " + a + " needs a value");
      used_[i] = used_[i + 1] = true;
      result = args_[i + 1];
      ++i;
    } else if (a.rfind("--" + name + "=", 0) == 0) {
      used_[i] = true;
      result = a.substr(name.size() + 3);
    }
  }
  return result;
}

bool Args::flag(const std::string& name, const std::string& short_name) {
  bool found = false;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (!used_[i] && (args_[i] == "--" + name || (!short_name.empty() && args_[i] == "-" + short_name))) {
      used_[i] = true;
      found = true;
    }
  }
  return found;
}

std::vector<std::string> Args::after_double_dash() { return tail_; }

std::vector<std::string> Args::positionals() {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    if (used_[i]) continue;
    const std::string& a = args_[i];
    if (a.size() > 1 && a[0] == '-') throw UsageError("unknown option " + a);
    out.push_back(a);
  }
  return out;
}

CommandSplit split_command(int argc, char** argv, int first, std::initializer_list<std::string_view> valued) {
  for (int i = first; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return {i, i + 1};
    if (a.size() < 2 || a[0] != '-') return {i, i};  // the command's first word ("-" alone is a word too)
    for (std::string_view v : valued) {
      if (a == v) {
        ++i;  // the option's value, whatever it looks like (`-o -`, `--level -3`)
        break;
      }
    }
  }
  return {argc, argc};
}

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max) {
  // "level" is the option --level; "-n", "--pid", "PID" or "MEMTRACK_RING_SLOTS" are named as given.
  const bool bare = !option.empty() && option[0] != '-' &&
                    option.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string::npos;
  const std::string what = bare ? "--" + option : option;
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range && p == end) throw UsageError(what + ": " + text + " is outside " + range);
  if (ec != std::errc() || p != end) throw UsageError(what + ": '" + text + "' is not a whole number");
  if (v < min || v > max) throw UsageError(what + ": " + text + " is outside " + range);
  return v;
}

}  // namespace memtrack::tools
