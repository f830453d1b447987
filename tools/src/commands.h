// The subcommands of `memtrack`. Each returns the process exit status: 0 success, 1 bad data or I/O
// failure (one line on stderr saying what and where), 2 usage error (thrown as UsageError).
#pragma once

#include <string>

#include "memtrack/codec/status.h"

namespace memtrack::tools {

int run_encode(int argc, char** argv);
int run_decode(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_stats(int argc, char** argv);
int run_record(int argc, char** argv);
int run_top(int argc, char** argv);
int run_report(int argc, char** argv);
int run_export(int argc, char** argv);
int run_ctl(int argc, char** argv);
int run_live(int argc, char** argv);
int run_attach(int argc, char** argv);
// The preload library `record` and `attach` inject (cmd_record.cpp: MEMTRACK_PRELOAD, else beside the binary).
std::string find_preload();
int run_diff(int argc, char** argv);
int run_check(int argc, char** argv);
// `stats --regions`: the figures of each region name (cmd_stats_regions.cpp).
int run_stats_regions(const std::string& path, bool json);

// The exit status of a command that failed with `status` (not ok): 2 for Errc::usage (what the command line
// asked for does not fit the input, e.g. --frames on an artifact without a frame index), 1 for everything
// else (bad data, I/O). Interrupted commands exit 128 + the signal number instead, which the command knows.
int exit_status(const codec::Status& status);

}  // namespace memtrack::tools
