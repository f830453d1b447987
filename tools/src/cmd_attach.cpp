// memtrack attach: record a process that is already running (memtrack/runtime/attach.h).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "args.h"
#include "commands.h"
#include "memtrack/runtime/attach.h"
#include "memtrack/runtime/attach_inject.h"
#include "recording_flags.h"
#include "units.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack attach PID [-o FILE] [--duration S] [--workers N] [--level L] [--compact]\n"
    "                       [--no-stacks] [--stack-depth N] [--no-resident] [-q]\n\n"
    "Records the running process PID without restarting it: loads libmemtrack-attach.so into it (ptrace, on one\n"
    "of its threads stopped a few milliseconds at a point outside the C library; no gdb) and hooks its\n"
    "malloc family, C++ operators and the allocator APIs by entry patching, until the process exits, --duration\n"
    "elapses, or Ctrl-C (SIGINT, SIGTERM, SIGHUP). Then it detaches: the patched entries get their bytes back\n"
    "and no thread of memtrack is left in the process (the inert library stays mapped). The process's output\n"
    "is untouched: the preload's notes come here. Fork children made while attached, and the images the process\n"
    "or they exec, are recorded and detached too (as under record); a library loaded with dlopen after the\n"
    "attach is not recorded.\n\n"
    "The artifact says it began by attaching: blocks allocated before are unknown, so their frees count as\n"
    "frees of blocks from before the recording, and the peak is the peak since the attach.\n\n"
    "  -o, --output FILE   artifact to write (default: PID.MemtrackArtifact.msgpack in the current directory)\n"
    "  --duration S        detach after S seconds (a decimal number)\n"
    "  --workers N, --level L, --compact, --no-stacks, --stack-depth N, --no-resident, -q: as for record\n\n"
    "'memtrack live <this recorder's pid>' shows the recording live. Exit status: 0 recorded; 3 no such\n"
    "process; 4 not permitted (the reason is named: another user, Yama's ptrace_scope, no CAP_SYS_PTRACE, a\n"
    "debugger attached); 5 unsupported process (static, not glibc, not x86-64); 6 already recorded; 1 other\n"
    "errors; 128+N when signal N ended the recording (the artifact is complete then too).\n";

}  // namespace

int run_attach(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  runtime::AttachOptions options;
  options.output = args.value("output", "o").value_or("");
  if (options.output == "-") throw UsageError("-o -: write the artifact to a file");
  if (const auto d = args.value("duration")) {
    char* end = nullptr;
    options.duration_seconds = std::strtod(d->c_str(), &end);
    if (d->empty() || *end != '\0' || !(options.duration_seconds > 0) || options.duration_seconds > 1e7)
      throw UsageError("--duration: expected a number of seconds > 0, got '" + *d + "'");
  }
  parse_recording_flags(args, options);
  const bool quiet = args.flag("quiet", "q");
  const std::vector<std::string> rest = args.positionals();
  if (rest.size() != 1) throw UsageError("expected one PID: memtrack attach PID [options]");
  options.pid = static_cast<pid_t>(parse_int("PID", rest[0], 1, 1 << 30));
  // libmemtrack-attach.so (runtime/preload/CMakeLists.txt says why it is not the preload itself): beside the
  // preload library, unless MEMTRACK_ATTACH_LIBRARY names another.
  if (const char* env = std::getenv("MEMTRACK_ATTACH_LIBRARY"); env != nullptr && *env != '\0') {
    options.preload_path = env;
  } else {
    const std::string preload = find_preload();
    const auto slash = preload.find_last_of('/');
    options.preload_path =
        (slash == std::string::npos ? std::string(".") : preload.substr(0, slash)) + "/libmemtrack-attach.so";
  }
  options.on_attached = [&](const std::string& socket) {
    if (quiet) return;
    std::fprintf(stderr, "memtrack attach: recording process %d%s; Ctrl-C detaches", static_cast<int>(options.pid),
                 options.duration_seconds > 0
                     ? (" for " + std::to_string(options.duration_seconds).substr(0, 6) + " s").c_str()
                     : "");
    if (!socket.empty()) std::fprintf(stderr, " ('memtrack live %d' shows it live)", static_cast<int>(::getpid()));
    std::fputc('\n', stderr);
  };

  runtime::AttachResult r;
  try {
    r = runtime::attach(options);
  } catch (const runtime::AttachError& e) {
    std::fprintf(stderr, "memtrack attach: %s\n", e.what());
    return e.exit_status;
  }
  const runtime::RecordResult& rec = r.record;
  if (!quiet && rec.status.is_ok()) {
    std::fprintf(stderr,
                 "memtrack attach: %llu events from %llu process%s, artifact %s (%s), peak heap since attach %s; "
                 "%d entries hooked, the process paused %.2f ms to attach and %.2f ms to detach",
                 static_cast<unsigned long long>(rec.events), static_cast<unsigned long long>(rec.processes),
                 rec.processes == 1 ? "" : "es", rec.output_path.c_str(), human_bytes(rec.artifact_bytes).c_str(),
                 human_bytes(rec.peak_heap_bytes).c_str(), r.hooked_entries, r.attach_pause_ms, r.detach_pause_ms);
    std::fputs(r.process_exited             ? " (the process exited)\n"
               : r.ended_after_seconds != 0 ? " (--duration elapsed)\n"
                                            : "\n",
               stderr);
    for (const runtime::PreloadMessage& m : rec.preload_messages)
      std::fprintf(stderr, "memtrack attach: preload: %s\n", m.text.c_str());
  }
  if (!r.detach_error.empty()) std::fprintf(stderr, "memtrack attach: detach: %s\n", r.detach_error.c_str());
  if (!rec.status.is_ok()) {
    std::fprintf(stderr, "memtrack attach: %s\n", rec.status.message().c_str());
    return 1;
  }
  if (rec.ended_by_signal != 0 && !quiet)
    std::fprintf(stderr, "memtrack attach: detached on signal %d\n", rec.ended_by_signal);
  return rec.exit_status;
}

}  // namespace memtrack::tools
