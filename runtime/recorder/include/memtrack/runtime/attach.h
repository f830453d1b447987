// `memtrack attach`: recording a process that is already running (docs/RUNTIME.md, "Attaching to a running
// process"). The recorder makes its ring as under record(), injects the preload into the process with ptrace
// (dlopen on one of its threads, then memtrack_attach_start, which hooks the allocators by entry patching),
// records until the process exits, the duration elapses or a signal ends it, then detaches: the preload is
// asked to stop and to restore every patched entry, and no thread of ours is left in the process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "memtrack/runtime/recorder.h"

namespace memtrack::runtime {

struct AttachOptions {
  pid_t pid = 0;
  std::string output;        // empty: <pid>.MemtrackArtifact.msgpack in the cwd
  std::string preload_path;  // absolute path of libmemtrack-preload.so
  unsigned workers = 0;
  int level = kDefaultRecordLevel;
  bool compact = false;
  std::uint32_t stack_depth = kDefaultStackDepth;
  bool resident = true;
  double duration_seconds = 0;  // > 0: detach after this long
  bool live_server = true;      // `memtrack live RECORDER_PID` serves this recording too
  // Called on the main thread once recording runs, with the live socket ("" without one).
  std::function<void(const std::string& socket)> on_attached;
};

struct AttachResult {
  RecordResult record;          // exit_status is 0, or 128 + N when signal N ended the recording
  double attach_pause_ms = 0;   // how long the injecting thread was stopped while attaching
  double detach_pause_ms = 0;   // ... while detaching (the largest over the processes detached)
  int hooked_entries = 0;       // entries patched in the process
  int threads_stopped = 0;      // other threads held stopped while the entries' jumps were written
  int threads_stepped = 0;      // single steps that moved one of them out of an entry's first bytes
  int restored_entries = 0;     // entries given back their bytes at detach (all processes)
  bool process_exited = false;  // the recording ended because the process exited
  int ended_after_seconds = 0;  // --duration reached (its value), or 0
  std::string detach_error;     // a process that could not be detached cleanly (it keeps inert hooks)
};

// Throws AttachError (attach_inject.h's exit statuses) when the process cannot be attached to; nothing is
// left in the process then, except the inert library when dlopen succeeded and a later step failed (said in
// the message).
AttachResult attach(const AttachOptions& options);

}  // namespace memtrack::runtime
