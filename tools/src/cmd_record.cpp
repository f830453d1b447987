// memtrack record: run a command under the preload library and write its allocation events as an artifact.
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "args.h"
#include "commands.h"
#include "live_view.h"
#include "memtrack/codec/compact.h"
#include "memtrack/runtime/recorder.h"
#include "recording_flags.h"
#include "units.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack record [-o FILE] [--workers N] [--level L] [--no-stacks] [--stack-depth N] [-q]\n"
    "                       [--python-malloc] [--paused] [--compact] [--no-resident]\n"
    "                       [--live [--live-output FILE]] [--] CMD [ARGS...]\n\n"
    "Runs CMD with libmemtrack-preload.so and records every malloc, free, calloc, realloc, aligned\n"
    "allocation, mmap, munmap and brk of it and of every process it starts (forks, exec chains), in causal\n"
    "order and without loss: when the recorder falls behind, the program waits. CMD begins at the first word\n"
    "that is not one of these options (or after --): options after it are CMD's, as with env or time.\n\n"
    "  -o, --output FILE   artifact to write (default: <pid>.MemtrackArtifact.msgpack in the current\n"
    "                      directory). Written as FILE.<recorder pid>.partial beside FILE and renamed to FILE\n"
    "                      when the recording ends (if another file took FILE meanwhile, it is left alone and\n"
    "                      the recording is kept beside it, as the summary says). '-' is refused: stdout is\n"
    "                      CMD's, and the artifact would mix with what CMD prints; write a file and read it\n"
    "                      from there.\n"
    "  --workers N         encoder threads, 0..1024 (default 0: hardware threads)\n"
    "  --level L           zstd level, -7..22 (default: -2; with --compact, 1)\n"
    "  --no-stacks         record no call stacks (the events cost what they cost without them)\n"
    "  --stack-depth N     frames recorded per allocation, 1..256 (default 128); deeper stacks are cut and marked\n"
    "  -q, --quiet         no summary line (and no notes) on stderr; errors are still reported\n"
    "  --python-malloc     run CMD with PYTHONMALLOC=malloc: CPython's objects come from malloc. Without it they\n"
    "                      come from pymalloc, as in production, and are recorded through the interpreter's\n"
    "                      allocator domains; the summary says which, per process\n"
    "  --paused            start with recording paused: no allocation is recorded (frees are) until a resume:\n"
    "                      memtrack_resume() (memtrack/control.h), SIGUSR2 to the recorder, or\n"
    "                      'memtrack ctl PID resume'. SIGUSR1 to the recorder pauses; see 'memtrack ctl --help'\n"
    "  --compact           compact data frames (docs/FORMAT.md, \"Compact data frames\"): every field kept in a\n"
    "                      fraction of the bytes and CPU; every memtrack command reads them, CodSpeed's reader\n"
    "                      does not ('memtrack convert --to codspeed' writes what it reads)\n"
    "  --no-resident       do not sample the processes' resident memory (by default a recorder thread reads\n"
    "                      /proc/PID/statm and status, steering toward 1.5% of one core: 1.5-4% measured\n"
    "                      over seconds, up to 7% in a recording under a second; the summary says how much,\n"
    "                      and 'memtrack stats' shows the samples)\n"
    "  --live              a full-screen live view on this terminal while CMD runs: heap now and peak, mapped\n"
    "                      and resident bytes, rates, processes, top sites (keys: l/a/c sort, p pause, tab/n/b\n"
    "                      process, q closes the view and the recording goes on); one status line instead when\n"
    "                      the terminal is dumb or not a terminal. CMD's stdout and stderr go to a file (its\n"
    "                      stdin is /dev/null when it was this terminal). 'memtrack live PID' opens the same\n"
    "                      view from another terminal, with or without --live.\n"
    "  --live-output FILE  where CMD's output goes under --live (default: memtrack-live.<recorder pid>.out)\n\n"
    "The recorder finishes the artifact when CMD and every process of its session have exited, however they\n"
    "exited; daemons (a process in another session, after setsid) are left running, untracked from then on,\n"
    "and named in the summary. It exits with CMD's exit status (128+N when signal N killed it; 127 when CMD is\n"
    "not found, 126 when it cannot be executed). Signals: SIGINT from the terminal reaches CMD (its process\n"
    "group); SIGTERM, SIGHUP or SIGINT sent to the recorder are passed on to CMD while it runs, and the\n"
    "recording ends when CMD does (or 1 s later; a second signal ends it at once); once CMD has exited they\n"
    "end the recording at once, with a valid artifact. A recorder killed with SIGKILL leaves\n"
    "FILE.<pid>.partial: every whole frame in it is a valid artifact (decode reads it up to the cut).\n"
    "The library is found where the install put it, <dir of memtrack>/" MEMTRACK_PRELOAD_INSTALL_DIR
    "/,\nelse in the build tree's lib/, unless MEMTRACK_PRELOAD names another. A separate debug file with\n"
    "compressed sections (a distribution's debug package) is read through an uncompressed copy kept in\n"
    "$MEMTRACK_DEBUG_CACHE (default ~/.cache/memtrack/debug; 'off': none), made the first time.\n";

std::string count(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "SIGSEGV" for 11; "signal N" for a number without an abbreviation.
std::string signal_name(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

// `path` as one word for a POSIX shell: as it is when it needs no quoting, else in single quotes.
std::string shell_word(const std::string& path) {
  const bool plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::strchr("/._-+,:@%", c) != nullptr;
  });
  if (plain) return path;
  std::string out = "'";
  for (const char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

// MEMTRACK_PRELOAD, else the library where the install rules put it relative to this binary
// (MEMTRACK_PRELOAD_INSTALL_DIR: ../lib under /usr/local, ../lib/x86_64-linux-gnu under Debian's /usr), else
// where the build tree has it (MEMTRACK_PRELOAD_BUILD_DIR); both are set by tools/CMakeLists.txt. When neither
// exists the installed location is returned, so the recorder's error names it.
std::string find_preload() {
  if (const char* env = std::getenv("MEMTRACK_PRELOAD"); env != nullptr && *env != '\0') return env;
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "libmemtrack-preload.so";
  std::string dir(exe, static_cast<std::size_t>(n));
  dir.erase(dir.find_last_of('/'));
  const std::string installed = dir + "/" MEMTRACK_PRELOAD_INSTALL_DIR "/libmemtrack-preload.so";
  if (::access(installed.c_str(), R_OK) == 0) return installed;
  const std::string built = dir + "/" MEMTRACK_PRELOAD_BUILD_DIR "/libmemtrack-preload.so";
  return ::access(built.c_str(), R_OK) == 0 ? built : installed;
}

int run_record(int argc, char** argv) {
  const CommandSplit split =
      split_command(argc, argv, 2, {"-o", "--output", "--workers", "--level", "--stack-depth", "--live-output"});
  Args args(split.options_end, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  runtime::RecordOptions options;
  options.output = args.value("output", "o").value_or("");
  if (options.output == "-")
    throw UsageError("-o -: the artifact cannot go to stdout, which belongs to the program; use -o FILE");
  parse_recording_flags(args, options);
  const bool quiet = args.flag("quiet", "q");
  const bool python_malloc = args.flag("python-malloc");
  options.paused = args.flag("paused");
  const bool live = args.flag("live");
  const std::optional<std::string> live_output = args.value("live-output");
  if (live_output && !live) throw UsageError("--live-output: only with --live");
  if (live_output && live_output->empty()) throw UsageError("--live-output: an empty file name");
  args.positionals();  // throws on an unknown option before CMD (CMD itself is not in args)
  options.command.assign(argv + split.command_begin, argv + argc);
  if (options.command.empty()) throw UsageError("no command given: memtrack record [options] [--] CMD [ARGS...]");
  options.preload_path = find_preload();
#ifdef MEMTRACK_TEST_HOOKS
  // memtrack-testhooks only (tools/CMakeLists.txt): a tiny ring makes every producer wrap and wait.
  if (const char* slots = std::getenv("MEMTRACK_RING_SLOTS"); slots != nullptr && *slots != '\0')
    options.ring_slots = static_cast<std::uint64_t>(parse_int("MEMTRACK_RING_SLOTS", slots, 64, 1LL << 30));
#endif
  // CPython's objects are recorded either way: pymalloc's through the interpreter's allocator domains
  // (runtime/preload/python.cpp), or, with this, as malloc calls. The recorder's environment is the
  // program's (recorder.cpp copies it).
  if (python_malloc && ::setenv("PYTHONMALLOC", "malloc", 1) != 0) throw std::runtime_error("setenv PYTHONMALLOC");

  // --live: the view runs on a thread of its own while record() waits for the command on this one.
  std::thread view;
  if (live) {
    options.require_live = true;
    options.command_output = live_output.value_or("memtrack-live." + std::to_string(::getpid()) + ".out");
    options.on_live = [&](const std::string& socket, int) {
      std::fprintf(stderr, "memtrack record: live view of recorder %d (socket %s); %s's output goes to %s\n",
                   static_cast<int>(::getpid()), socket.c_str(), options.command[0].c_str(),
                   options.command_output.c_str());
      view = std::thread([&options, socket] {
        LiveViewOptions v;
        v.socket = socket;
        v.command_output = options.command_output;
        v.status_fd = 2;
        v.status_every = 10;  // not a terminal: a line every ~10 s, not a log line per second
        const LiveViewResult r = run_live_view(v);
        if (r.end == LiveViewEnd::closed)
          std::fprintf(stderr,
                       "memtrack record: live view closed; the recording goes on (%s's output: %s; 'memtrack live %d' "
                       "reopens the view)\n",
                       options.command[0].c_str(), options.command_output.c_str(), static_cast<int>(::getpid()));
        else if (r.end == LiveViewEnd::failed)
          std::fprintf(stderr, "memtrack record: live view: %s\n", r.error.c_str());
      });
    };
  }
  struct JoinView {
    std::thread& t;
    ~JoinView() {
      if (t.joinable()) t.join();
    }
  } join_view{view};

  runtime::RecordResult r;
  try {
    r = runtime::record(options);
  } catch (const runtime::SpawnError& e) {
    std::fprintf(stderr, "memtrack record: %s\n", e.what());
    return e.exit_status;
  }
  if (view.joinable()) view.join();
  if (live)
    std::fprintf(stderr, "memtrack record: %s's output is in %s\n", options.command[0].c_str(),
                 options.command_output.c_str());
  if (!r.live_error.empty() && !quiet)
    std::fprintf(stderr, "memtrack record: no live view: %s\n", r.live_error.c_str());
  if (!quiet) {
    // The success line only when the artifact was written; otherwise the error below says what happened.
    if (r.status.is_ok()) {
      std::fprintf(stderr, "memtrack record: %s from %s, artifact %s (%s), peak heap %s",
                   count(r.events, "event", "events").c_str(), count(r.processes, "process", "processes").c_str(),
                   r.output_path.c_str(), human_bytes(r.artifact_bytes).c_str(),
                   human_bytes(r.peak_heap_bytes).c_str());
      if (r.stack_nodes != 0)
        std::fprintf(stderr,
                     ", %s, %s symbolized (%llu while the program ran, in %.2f s of CPU; the rest in %.2f s after it"
                     " ended)",
                     count(r.stack_nodes, "stack node", "stack nodes").c_str(),
                     count(r.symbolized_addresses, "address", "addresses").c_str(),
                     static_cast<unsigned long long>(r.symbolized_ahead), r.symbolize_ahead_cpu_seconds,
                     r.symbolize_seconds_at_end);
      if (r.resident_samples != 0)
        std::fprintf(stderr, ", %s of resident memory (%s, %.1f ms of CPU, %.2f%% of one core)",
                     count(r.resident_samples, "sample", "samples").c_str(),
                     count(r.resident_polls, "poll", "polls").c_str(), r.resident_cpu_seconds * 1e3,
                     r.resident_wall_seconds > 0 ? 100 * r.resident_cpu_seconds / r.resident_wall_seconds : 0.0);
      if (r.page_snapshots != 0)
        std::fprintf(stderr, ", %s of resident pages (%s mapped, %.1f ms of CPU, the longest %.1f ms)",
                     count(r.page_snapshots, "snapshot", "snapshots").c_str(),
                     human_bytes(r.page_snapshot_bytes).c_str(), r.page_snapshot_cpu_seconds * 1e3,
                     r.page_snapshot_max_seconds * 1e3);
      if (r.page_snapshot_failures != 0)
        std::fprintf(stderr, ", %s whose pages could not be read",
                     count(r.page_snapshot_failures, "process", "processes").c_str());
      if (r.abandoned_slots != 0)
        std::fprintf(stderr, ", %s skipped (their threads died before filling them)",
                     count(r.abandoned_slots, "ring slot", "ring slots").c_str());
      std::fputc('\n', stderr);
    }
    if (!r.target_taken.empty())
      std::fprintf(stderr,
                   "memtrack record: %s appeared during the recording (another recorder's?) and is left as it is; "
                   "this recording is %s\n",
                   r.target_taken.c_str(), r.output_path.c_str());
    if (r.command_signal != 0)
      std::fprintf(stderr, "memtrack record: %s killed by %s\n", options.command[0].c_str(),
                   signal_name(r.command_signal).c_str());
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
    if (!r.untracked.empty())
      std::fprintf(stderr, "memtrack record: not tracked: %s\n", list(r.untracked, true).c_str());
    // The preload's diagnostics, which it writes here rather than into the program's stderr: each once,
    // with the processes that said it.
    for (const runtime::PreloadMessage& m : r.preload_messages) {
      std::string who;
      constexpr std::size_t kShown = 8;
      for (std::size_t i = 0; i < m.pids.size() && i < kShown; ++i)
        who += (i == 0 ? "" : ", ") + std::to_string(m.pids[i]);
      if (m.pids.size() > kShown) who += ", ...";
      std::fprintf(stderr, "memtrack record: preload, %s %s: %s\n", m.pids.size() == 1 ? "process" : "processes",
                   who.empty() ? "?" : who.c_str(), m.text.c_str());
    }
    if (r.status.is_ok())
      std::fprintf(stderr,
                   "memtrack record: next: memtrack top %s (the allocation sites), memtrack report %s (a page)\n",
                   shell_word(r.output_path).c_str(), shell_word(r.output_path).c_str());
  }
  if (!r.status.is_ok()) {
    std::fprintf(stderr, "memtrack record: %s\n", r.status.message().c_str());
    return r.exit_status != 0 ? r.exit_status : 1;
  }
  return r.exit_status;
}

}  // namespace memtrack::tools
