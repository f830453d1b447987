// memtrack live: the live view of a running `memtrack record`, from any terminal of its user.
#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "live_view.h"
#include "memtrack/runtime/live.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack live RECORDER_PID|SOCKET\n\n"
    "Shows a running 'memtrack record' live: heap now and its peak, mapped and resident bytes, the event and\n"
    "allocation rates, the processes (pid, heap, events, image) and the top allocation sites by live bytes,\n"
    "allocated bytes or count (innermost frame as module+offset), refreshed about once a second. Any number of\n"
    "viewers, any number of times; the recording never waits for one.\n\n"
    "  RECORDER_PID   the recorder's pid (the 'memtrack record' process): its socket in this user's live\n"
    "                 directory, $XDG_RUNTIME_DIR/memtrack/PID.sock, or /tmp/memtrack-UID/PID.sock\n"
    "  SOCKET         a socket path ('memtrack record --live' names it)\n\n"
    "Keys: l, a, c sort the sites by live bytes, bytes allocated, allocation count; p pauses the display;\n"
    "tab or n shows the next process's sites, b the previous (all processes first); q closes the view (the\n"
    "recording goes on). Full screen when stdin and stdout are terminals and TERM is not dumb; otherwise one\n"
    "status line per update. Exits 0 when the recording ended or the view was closed, 1 when the recorder\n"
    "cannot be reached, refuses this viewer (another user) or was lost.\n";

}  // namespace

int run_live(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const std::vector<std::string> positionals = args.positionals();
  if (positionals.size() != 1) throw UsageError("memtrack live RECORDER_PID|SOCKET: one target");
  LiveViewOptions options;
  options.socket = live_socket_of(positionals[0]);
  options.handle_signals = true;
  const LiveViewResult r = run_live_view(options);
  switch (r.end) {
    case LiveViewEnd::failed:
      std::fprintf(stderr, "memtrack live: %s\n", r.error.c_str());
      return 1;
    case LiveViewEnd::lost:
      std::fprintf(stderr, "memtrack live: %s: the recorder went away without ending the recording (killed?)\n",
                   options.socket.c_str());
      return 1;
    case LiveViewEnd::closed:
      std::fprintf(stderr, "memtrack live: view closed; recording %d goes on (memtrack live %d reopens it)\n",
                   r.recorder, r.recorder);
      return 0;
    case LiveViewEnd::recording_ended:
      std::fprintf(stderr, "memtrack live: the recording ended: %s\n", r.summary.c_str());
      return 0;
  }
  return 0;
}

}  // namespace memtrack::tools
