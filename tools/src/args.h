// A small, explicit argument parser shared by the subcommands: long options with values, short aliases,
// positionals, and usage errors that name the offending argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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

// For a command that runs another one (`record [options] CMD [ARGS...]`): where its own options end and
// CMD begins. CMD starts after a literal `--`, or at the first word that is neither an option nor the value
// of one of `valued` (options that take a separate value, e.g. "-o", "--workers"); everything from there
// belongs to CMD, options included, as env, time and heaptrack read their command lines:
// `record gcc -o app main.c` gives `-o app` to gcc. options_end is the argc to give Args.
struct CommandSplit {
  int options_end = 0;
  int command_begin = 0;
};
CommandSplit split_command(int argc, char** argv, int first, std::initializer_list<std::string_view> valued);

// `text` as an integer in [min, max]; UsageError naming `option` otherwise. A bare lowercase `option`
// ("level") is shown as --level; one with a dash or in capitals ("-n", "--pid", "PID") as given.
std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max);

}  // namespace memtrack::tools
