// memtrack ctl: pause, resume or mark a running `memtrack record` from outside the program.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "io.h"
#include "memtrack/runtime/recorder_control.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack ctl PID pause|resume|begin NAME|end|mark NAME\n\n"
    "Controls the recording of 'memtrack record' process PID (the recorder, not the program), for harnesses\n"
    "that cannot link libmemtrack-control (memtrack/control.h):\n"
    "  pause       stop recording allocations (of every process of the recording; frees are still recorded,\n"
    "              so blocks allocated before stay accounted right)\n"
    "  resume      record allocations again\n"
    "  begin NAME  open a region NAME covering every process of the recording ('memtrack stats --region NAME')\n"
    "  end         close the innermost region opened with begin or mark\n"
    "  mark NAME   close the innermost region opened with begin or mark (if any) and open NAME: marks cut\n"
    "              the run into phases\n\n"
    "Each takes effect at its place in the event stream, like the library's calls. SIGUSR1 and SIGUSR2 to the\n"
    "recorder pause and resume too. Exit status: 0 done, 1 PID is not a recorder of this user or the recording\n"
    "has ended, 2 usage error; 'pause' while paused, 'resume' while recording and 'end' with no region open\n"
    "are 0 and say so.\n";

}  // namespace

int run_ctl(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  const auto words = args.positionals();
  if (words.size() < 2) throw UsageError("expected PID and a command");
  const int pid = static_cast<int>(parse_int("PID", words[0], 1, INT32_MAX));
  const std::string& what = words[1];
  runtime::ControlCommand command;
  std::size_t want = 2;
  if (what == "pause") {
    command = runtime::ControlCommand::pause;
  } else if (what == "resume") {
    command = runtime::ControlCommand::resume;
  } else if (what == "end") {
    command = runtime::ControlCommand::region_end;
  } else if (what == "begin" || what == "mark") {
    command = what == "begin" ? runtime::ControlCommand::region_begin : runtime::ControlCommand::mark;
    want = 3;
    if (words.size() < 3) throw UsageError(what + " needs a NAME");
  } else {
    throw UsageError("unknown command '" + what + "': expected pause, resume, begin NAME, end or mark NAME");
  }
  if (words.size() > want) throw UsageError("unexpected '" + words[want] + "'");
  if (::kill(pid, 0) != 0 && errno == ESRCH) {
    std::fprintf(stderr, "memtrack ctl: no process %d\n", pid);
    return 1;
  }
  const bool changed = runtime::control_recorder(pid, command, want == 3 ? words[2] : std::string{});
  if (!changed && (command == runtime::ControlCommand::pause || command == runtime::ControlCommand::resume))
    std::fprintf(stderr, "memtrack ctl: the recording was already %s\n",
                 command == runtime::ControlCommand::pause ? "paused" : "running");
  if (!changed && command == runtime::ControlCommand::region_end)
    std::fprintf(stderr, "memtrack ctl: no region is open (begin NAME or mark NAME opens one): nothing to end\n");
  return 0;
}

}  // namespace memtrack::tools
