// The recorder: runs a command with the preload library, drains the shared event ring and encodes the
// events into an artifact. Used by `memtrack record`.
//
// Process model (docs/RUNTIME.md, "Which processes the recording waits for"): the recorder makes itself a
// child subreaper, so orphans of the command are re-parented to it. It finishes the artifact when the command
// has exited and no process of the command's session is left: a daemon (a process in another session, e.g.
// after setsid) does not hold the recording; it is left running, untracked from then on without a word, and
// reported in RecordResult::left_running. SIGTERM, SIGHUP or SIGINT to the recorder end the recording
// promptly (forwarded to the command while it runs). The recorder itself never runs the preload library:
// LD_PRELOAD is set only in the command's environment, and the command's images take it out of their own.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
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

// Frames kept per stack: as deep as the unwinder's per-thread record of the last stack (docs/UNWIND.md), so
// a stack up to that deep is kept whole and its unchanged outer part costs neither an unwind nor a lookup
// (docs/RUNTIME.md, "Call stacks": a stack past the cap slides under it and is interned anew at every depth).
inline constexpr std::uint32_t kDefaultStackDepth = 128;

struct RecordOptions {
  std::vector<std::string> command;  // argv of the program; command[0] is looked up in PATH
  std::string output;                // empty: <pid of the command>.MemtrackArtifact.msgpack in the cwd;
                                     // written as <output>.<recorder pid>.partial, renamed at the end
  std::string preload_path;          // absolute path of libmemtrack-preload.so
  unsigned workers = 0;              // encoder workers; 0 = hardware threads
  int level = kDefaultRecordLevel;   // zstd level
  bool compact = false;              // compact data frames (pipeline::EncoderOptions::compact)
  std::uint64_t ring_slots = kDefaultRingSlots;
  // Frames recorded per allocation (`record --stack-depth`), at most 256; 0: no stacks (`--no-stacks`).
  std::uint32_t stack_depth = kDefaultStackDepth;
  // `record --paused`: allocations are not recorded until a resume (memtrack_resume(), SIGUSR2 to the
  // recorder, `memtrack ctl PID resume`); frees are. docs/RUNTIME.md, "Harness control".
  bool paused = false;
  // Sample each tracked process's resident memory (docs/RUNTIME.md, "Resident memory"); `--no-resident`: no
  // sampler thread, no Resident records, and the Recording does not list the section.
  bool resident = true;
  // The live view (docs/RUNTIME.md, "Live view"): the recorder serves snapshots on a Unix socket
  // (memtrack/runtime/live.h) while it records. When the socket cannot be made, a live recording
  // (`require_live`) fails before the command runs; another goes on and says why in RecordResult::live_error.
  bool live_server = true;
  bool require_live = false;
  // Called on the recorder's main thread once the command runs and the socket serves, with the socket's path
  // and the command's pid; a thread it starts inherits a fully blocked signal mask.
  std::function<void(const std::string& socket, int command_pid)> on_live;
  // Not empty: the command's stdout and stderr go to this file (created or truncated before the command
  // runs), and its stdin is /dev/null when the recorder's is a terminal (`record --live`: the view's).
  std::string command_output;
};

struct ProcessNote {
  std::int32_t pid = 0;  // 0: not known
  std::string executable;
  std::string reason;  // untracked: "setuid", "setgid", "static", "no-access", "left-running"
};

// A diagnostic the preload wrote to the recorder instead of the program's stderr (docs/RUNTIME.md,
// "Diagnostics"): its text, the pids that wrote it (in order of first line) and how many
// lines said it.
struct PreloadMessage {
  std::string text;
  std::vector<std::int32_t> pids;
  std::uint64_t count = 0;
};

struct RecordResult {
  int exit_status = 0;      // the command's exit status, or 128 + signal number when a signal killed it
  int command_signal = 0;   // the signal that killed the command, or 0
  std::string output_path;  // where the artifact is
  // Not empty: the target, which another file took while recording (another recorder's, given the same
  // target); output_path is then beside it (runtime/recorder/src/output_file.h) and the other file untouched.
  std::string target_taken;
  std::uint64_t events = 0;
  std::uint64_t artifact_bytes = 0;
  std::uint64_t peak_heap_bytes = 0;         // peak of live malloc-family bytes across all recorded processes
  std::uint64_t processes = 0;               // processes recorded (with events or lifecycle records), as in stats
  std::uint64_t abandoned_slots = 0;         // tickets whose thread died (killed, or replaced by exec) unfilled
  codec::Status status;                      // artifact write failures
  std::vector<ProcessNote> left_running;     // still running when the recording ended (not waited for)
  std::vector<ProcessNote> untracked;        // images that could not be tracked (setuid, static)
  std::uint64_t context_records = 0;         // lifecycle records produced (docs/FORMAT.md, Context section)
  int ended_by_signal = 0;                   // the signal that ended the recording early, or 0
  std::uint64_t stack_nodes = 0;             // trace-tree nodes noted by all images
  std::uint64_t stack_modules = 0;           // Module records
  std::uint64_t stack_table_bytes = 0;       // the recorder's stack and module tables (estimate)
  std::uint64_t symbolized_addresses = 0;    // distinct module-relative addresses in the symbol table
  std::uint64_t symbolized_ahead = 0;        // of which symbolized while the program ran (a recorder thread)
  double symbolize_ahead_cpu_seconds = 0;    // that thread's CPU time
  double symbolize_seconds_at_end = 0;       // wall time symbolizing the rest after the program ended
  std::uint64_t resident_samples = 0;        // Resident records written (docs/RUNTIME.md, "Resident memory")
  std::uint64_t resident_polls = 0;          // /proc/<pid>/statm reads behind them
  double resident_cpu_seconds = 0;           // the sampler thread's CPU time
  double resident_wall_seconds = 0;          // over this wall time
  std::string live_error;                    // why the live view's socket could not be served, or empty
  std::uint64_t page_snapshots = 0;          // ResidentPages snapshots written (docs/RUNTIME.md, "Resident pages")
  std::uint64_t page_snapshot_bytes = 0;     // the mapped anonymous bytes their bits covered
  std::uint64_t page_snapshot_failures = 0;  // processes whose pagemap could not be read (no snapshot)
  double page_snapshot_cpu_seconds = 0;      // the sampler's CPU time in them
  double page_snapshot_max_seconds = 0;      // the longest one, wall
  // The preload's diagnostics, deduplicated, in order of first appearance.
  std::vector<PreloadMessage> preload_messages;
};

// The command could not be started. exit_status is what shells, env and timeout exit with then: 127 when
// the command was not found, 126 when it was found but could not be executed.
struct SpawnError : std::runtime_error {
  SpawnError(const std::string& command, int error)
      : std::runtime_error("cannot run '" + command + "': " + std::strerror(error)),
        exit_status(error == ENOENT || error == ENOTDIR ? 127 : 126) {}
  int exit_status;
};

// The file posix_spawnp and execvp run for `file`: `file` itself when it contains a '/', else the first
// executable one of PATH's directories (PATH unset: /bin:/usr/bin, glibc's default); empty when none is.
std::string find_command(const std::string& file);

// Throws std::runtime_error when recording cannot start (no preload library, the output cannot be created,
// ring creation failure), SpawnError when the command cannot be started; in both cases the command has not
// run and no artifact is left. Once the command runs, errors are reported in RecordResult::status and the command
// is still waited for.
RecordResult record(const RecordOptions& options);

}  // namespace memtrack::runtime
