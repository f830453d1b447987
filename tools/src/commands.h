// The subcommands of `memtrack`. Each returns the process exit status: 0 success, 1 bad data or I/O
// failure (one line on stderr saying what and where), 2 usage error (thrown as UsageError).
#pragma once

namespace memtrack::tools {

int run_encode(int argc, char** argv);
int run_decode(int argc, char** argv);
int run_stats(int argc, char** argv);
int run_record(int argc, char** argv);

}  // namespace memtrack::tools
