// Controlling a running `memtrack record` from outside the program (`memtrack ctl`, docs/RUNTIME.md,
// "Harness control"): for harnesses that cannot link libmemtrack-control. The caller maps the recorder's ring
// (found among the recorder's descriptors, /proc/PID/fd) and writes into it what the library would: a pause
// or resume (the ring's control word and a note), or a region boundary. The records carry the recorder's pid
// and tid 0, so such a region covers every process of the recording (all of them descend from the recorder).
#pragma once

#include <string>

namespace memtrack::runtime {

enum class ControlCommand { pause, resume, region_begin, region_end, mark };

// `mark NAME` ends the outside region open now, if any, and begins NAME: marks cut the run into phases.
// Returns false when the command changed nothing (a pause while paused, a resume while recording, an end
// with no region of ctl's open: nothing is written then). Throws
// std::runtime_error with a one-line message when `recorder_pid` is not a recorder this user can reach.
bool control_recorder(int recorder_pid, ControlCommand command, const std::string& name = {});

}  // namespace memtrack::runtime
