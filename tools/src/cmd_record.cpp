// memtrack record: run a command under the preload library and write its allocation events as an artifact.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "memtrack/runtime/recorder.h"
#include "units.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack record [-o FILE] [--workers N] [--level L] -- CMD [ARGS...]\n\n"
    "Runs CMD with libmemtrack-preload.so and records every malloc, free, calloc, realloc, aligned\n"
    "allocation, mmap, munmap and brk of it and of every process it starts (forks, exec chains), in causal\n"
    "order and without loss: when the recorder falls behind, the program waits.\n\n"
    "  -o, --output FILE   artifact to write (default: <pid>.MemtrackArtifact.msgpack in the current directory)\n"
    "  --workers N         encoder threads (default: hardware threads)\n"
    "  --level L           zstd level, -7..22 (default: -2)\n\n"
    "The recorder finishes the artifact when CMD and every process of its session have exited; daemons\n"
    "(another session) are left running, untracked, and named in the summary. SIGTERM, SIGHUP or SIGINT end\n"
    "the recording at once. It exits with CMD's exit status (128+N when signal N killed it). The library is found at\n"
    "<dir of memtrack>/../lib/libmemtrack-preload.so unless MEMTRACK_PRELOAD names another.\n";

std::string find_preload() {
  if (const char* env = std::getenv("MEMTRACK_PRELOAD"); env != nullptr && *env != '\0') return env;
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "libmemtrack-preload.so";
  std::string dir(exe, static_cast<std::size_t>(n));
  dir.erase(dir.find_last_of('/'));
  return dir + "/../lib/libmemtrack-preload.so";
}

}  // namespace

int run_record(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  runtime::RecordOptions options;
  options.output = args.value("output", "o").value_or("");
  options.workers = static_cast<unsigned>(parse_int("workers", args.value("workers").value_or("0"), 0, 1024));
  options.level = static_cast<int>(
      parse_int("level", args.value("level").value_or(std::to_string(runtime::kDefaultRecordLevel)), -7, 22));
  options.command = args.after_double_dash();
  const std::vector<std::string> rest = args.positionals();
  if (options.command.empty())
    options.command = rest;
  else if (!rest.empty())
    throw UsageError("unexpected argument " + rest.front() + " before --");
  if (options.command.empty()) throw UsageError("no command given: memtrack record [options] -- CMD [ARGS...]");
  options.preload_path = find_preload();
  // Undocumented knob for tests: a tiny ring makes every producer wrap and wait.
  if (const char* slots = std::getenv("MEMTRACK_RING_SLOTS"); slots != nullptr && *slots != '\0')
    options.ring_slots = static_cast<std::uint64_t>(parse_int("MEMTRACK_RING_SLOTS", slots, 64, 1LL << 30));

  const runtime::RecordResult r = runtime::record(options);
  std::fprintf(stderr, "memtrack record: %llu events from %llu process%s, artifact %s (%s), peak heap %s",
               static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.processes),
               r.processes == 1 ? "" : "es", r.output_path.c_str(), human_bytes(r.artifact_bytes).c_str(),
               human_bytes(r.peak_heap_bytes).c_str());
  if (r.abandoned_slots != 0)
    std::fprintf(stderr, ", %llu ring slots skipped (their threads died before filling them)",
                 static_cast<unsigned long long>(r.abandoned_slots));
  std::fputc('\n', stderr);
  auto list = [](const std::vector<runtime::ProcessNote>& processes, bool with_reason) {
    std::string out;
    for (const runtime::ProcessNote& p : processes) {
      if (!out.empty()) out += ", ";
      out += (p.pid != 0 ? std::to_string(p.pid) : std::string("?")) + " (" + p.executable + ")";
      if (with_reason) out += ": " + p.reason;
    }
    return out;
  };
  if (r.ended_by_signal != 0)
    std::fprintf(stderr, "memtrack record: the recording was ended by signal %d\n", r.ended_by_signal);
  if (!r.left_running.empty())
    std::fprintf(stderr, "memtrack record: left running (not waited for, untracked from here on): %s\n",
                 list(r.left_running, false).c_str());
  if (!r.untracked.empty()) std::fprintf(stderr, "memtrack record: not tracked: %s\n", list(r.untracked, true).c_str());
  if (!r.status.is_ok()) {
    std::fprintf(stderr, "memtrack record: %s\n", r.status.message().c_str());
    return r.exit_status != 0 ? r.exit_status : 1;
  }
  return r.exit_status;
}

}  // namespace memtrack::tools
