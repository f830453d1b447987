// memtrack: record, encode and decode allocation-event artifacts (CodSpeed MemtrackArtifact compatible).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "args.h"
#include "commands.h"
#include "io.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"encode", memtrack::tools::run_encode, "raw 48-byte records -> artifact (zstd frames of msgpack events)"},
    {"decode", memtrack::tools::run_decode, "artifact -> JSON lines, CSV or raw records"},
    {"convert", memtrack::tools::run_convert, "artifact -> the same events in the other encoding (codspeed, compact)"},
    {"record", memtrack::tools::run_record, "run a command and record its allocation events into an artifact"},
    {"attach", memtrack::tools::run_attach,
     "record a running process (ptrace, no restart) until it exits or --duration"},
    {"stats", memtrack::tools::run_stats, "artifact -> counts, peak live heap, leaks, size histogram"},
    {"top", memtrack::tools::run_top, "artifact with stacks -> allocation sites by peak, bytes, count, leaks"},
    {"report", memtrack::tools::run_report, "artifact -> one HTML page: memory over time, flame graphs, top sites"},
    {"export", memtrack::tools::run_export, "artifact with stacks -> folded stacks or a pprof profile"},
    {"diff", memtrack::tools::run_diff, "two recordings -> what changed: totals, sites, processes, regions"},
    {"check", memtrack::tools::run_check, "artifact -> exit 1 when a memory limit (peak, allocated, leaked) is broken"},
    {"ctl", memtrack::tools::run_ctl, "pause, resume or mark a running 'memtrack record' (from outside)"},
    {"live", memtrack::tools::run_live, "watch a running 'memtrack record' live: heap, processes, top sites"},
};

std::string usage() {
  std::string out =
      "usage: memtrack <command> [options]\n\n"
      "memtrack records and converts allocation-event traces in CodSpeed's MemtrackArtifact format.\n\n"
      "commands:\n";
  char line[160];
  for (const Command& c : kCommands) {
    std::snprintf(line, sizeof line, "  %-8s %s\n", c.name, c.summary);
    out += line;
  }
  return out +
         "\n'memtrack help <command>' or 'memtrack <command> --help' explains a command; 'memtrack --version'\n"
         "prints the version. Exit status: 0 success, 1 bad data or I/O "
         "error, 2 usage error.\n";
}

// What `memtrack --help` and `--version` print, checked as every command's output is.
int print(const std::string& text) {
  if (const memtrack::codec::Status s = memtrack::tools::write_stdout(text); !s) {
    std::fprintf(stderr, "memtrack: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

namespace memtrack::tools {

int exit_status(const codec::Status& status) { return status.code() == codec::Errc::usage ? 2 : 1; }

}  // namespace memtrack::tools

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usage().c_str(), stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || (name == "help" && argc == 2)) {
    return print(usage());
  }
  if (name == "--version" || name == "-V" || name == "version") {
    return print(std::string("memtrack ") + MEMTRACK_VERSION + "\n");
  }
  // `memtrack help CMD` is `memtrack CMD --help`.
  char help_flag[] = "--help";
  char* help_argv[] = {argv[0], argc > 2 ? argv[2] : argv[1], help_flag, nullptr};
  if (name == "help") {
    name = argv[2];
    argc = 3;
    argv = help_argv;
  }
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(argc, argv);
    } catch (const memtrack::tools::UsageError& e) {
      std::fprintf(stderr, "memtrack %s: %s (see 'memtrack %s --help')\n", c.name, e.what(), c.name);
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memtrack %s: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "memtrack: unknown command '%s'\n", argv[1]);
  std::fputs(usage().c_str(), stderr);
  return 2;
}
