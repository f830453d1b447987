// A small, explicit argument parser shared by the subcommands: long options with values, short aliases,
// positionals, and usage errors that name the offending argument.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace memtrack::tools {

// Thrown for bad command lines; main() prints it and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  Args(int argc, char** argv, int first);

  // Consumes `--name VALUE`, `--name=VALUE` or `-s VALUE`; the last occurrence wins.
  std::optional<std::string> value(const std::string& name, const std::string& short_name = "");
  // Consumes a flag without a value.
  bool flag(const std::string& name, const std::string& short_name = "");
  // Everything after a literal `--`, for `record -- CMD ARGS`.
  std::vector<std::string> after_double_dash();
  // Remaining arguments after options were consumed; throws UsageError on any leftover `-x` option.
  std::vector<std::string> positionals();

 private:
  std::vector<std::string> args_;
  std::vector<std::string> tail_;
  std::vector<bool> used_;
};

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max);

}  // namespace memtrack::tools
