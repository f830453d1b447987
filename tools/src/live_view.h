// The live view (docs/RUNTIME.md, "Live view"): a viewer of a recorder's live socket (memtrack/runtime/live.h),
// for `memtrack live` and `memtrack record --live`. Full screen with plain ANSI escapes when stdin and stdout are
// terminals and TERM is not dumb; otherwise a one-line status per update.
#pragma once

#include <string>

namespace memtrack::tools {

struct LiveViewOptions {
  std::string socket;
  std::string command_output;  // shown in the view: where CMD's output goes (record --live), or empty
  int status_fd = 1;           // where the one-line status goes when there is no full-screen view
  int status_every = 1;        // of the updates, every n-th gets a status line (when not a terminal)
  bool handle_signals = false;  // SIGINT, SIGTERM, SIGHUP end the view cleanly (memtrack live); else left alone
};

enum class LiveViewEnd {
  recording_ended,  // the last snapshot arrived
  closed,           // the user pressed q (or a signal, with handle_signals)
  lost,             // the stream ended without the last snapshot (the recorder was killed)
  failed,           // `error` says why (cannot connect, refused, bad data)
};

struct LiveViewResult {
  LiveViewEnd end = LiveViewEnd::failed;
  std::string error;    // one line, for failed
  std::string summary;  // the last status line (heap, peak, events), for the closing message
  int recorder = 0, command = 0;
};

LiveViewResult run_live_view(const LiveViewOptions& options);

// The socket of `target`: a path (contains '/'), or a recorder pid's socket in this user's live directory.
std::string live_socket_of(const std::string& target);

}  // namespace memtrack::tools
