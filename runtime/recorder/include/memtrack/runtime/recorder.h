// The recorder: runs a command with the preload library, drains the shared event ring and encodes the
// events into an artifact. Used by `memtrack record`.
//
// Process model: the recorder makes itself a child subreaper, so every process the command starts (forks,
// `sh -c` chains, daemons that double-fork) stays its descendant; it finishes the artifact when the last of
// them has exited, however they exited (exit, _exit, SIGKILL). The recorder itself never runs the preload
// library: LD_PRELOAD is set only in the command's environment.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrack/codec/status.h"
#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {

// zstd level of `memtrack record`'s artifacts. A recorded program's events encode as fast at -2 as at -5 (the
// encoder's default, CodSpeed's level) and come out about 1.5x smaller: bench/record_levels.sh on the churn
// program, and BM_Compress_Frame/level:-2 against level:-5 on the workload generator's events.
inline constexpr int kDefaultRecordLevel = -2;

struct RecordOptions {
  std::vector<std::string> command;  // argv of the program; command[0] is looked up in PATH
  std::string output;                // empty: <pid of the command>.MemtrackArtifact.msgpack in the cwd;
                                     // written as <output>.<recorder pid>.partial, renamed at the end
  std::string preload_path;          // absolute path of libmemtrack-preload.so
  unsigned workers = 0;              // encoder workers; 0 = hardware threads
  int level = kDefaultRecordLevel;   // zstd level
  std::uint64_t ring_slots = kDefaultRingSlots;
};

struct RecordResult {
  int exit_status = 0;  // the command's exit status, or 128 + signal number when a signal killed it
  std::string output_path;
  std::uint64_t events = 0;
  std::uint64_t artifact_bytes = 0;
  std::uint64_t peak_heap_bytes = 0;  // peak of live malloc-family bytes across all recorded processes
  std::uint64_t processes = 0;        // distinct pids in the recorded events
  std::uint64_t abandoned_slots = 0;  // tickets whose thread died (killed, or replaced by exec) unfilled
  codec::Status status;               // artifact write failures
  // Processes that ran untracked, one line each naming the pid, the image and why (a statically linked
  // executable, which LD_PRELOAD never enters): CMD itself, checked before it starts, and any image a
  // tracked process executes (the preload checks it at exec).
  std::vector<std::string> untracked;
};

// The command could not be started. exit_status is what shells, env and timeout exit with then: 127 when
// the command was not found, 126 when it was found but could not be executed.
struct SpawnError : std::runtime_error {
  SpawnError(const std::string& command, int error)
      : std::runtime_error("cannot run '" + command + "': " + std::strerror(error)),
        exit_status(error == ENOENT || error == ENOTDIR ? 127 : 126) {}
  int exit_status;
};

// Throws std::runtime_error when recording cannot start (no preload library, the output cannot be created,
// ring creation failure), SpawnError when the command cannot be started; in both cases the command has not
// run and no artifact is left. Once the command runs, errors are reported in RecordResult::status and the command
// is still waited for.
RecordResult record(const RecordOptions& options);

}  // namespace memtrack::runtime
