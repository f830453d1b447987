#include "memtrack/runtime/recorder.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "control_notes.h"
#include "output_file.h"
#include "preload_messages.h"
#include "processes.h"
#include "lifecycle.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/runtime/image_check.h"
#include "recorder_internal.h"
#include "ring_reader.h"
#include "stack_tables.h"
#include "symbols_writer.h"
#include "shared_ring.h"
#include "sys_error.h"
#include "tsc_clock.h"

extern char** environ;

namespace memtrack::runtime {
namespace {

// The reader thread's work: the ring's events, read straight into the encoder's frame buffers, encoded into
// the artifact. After an encoder failure, or in discard mode, it keeps draining the ring without encoding:
// the program must never block on us.
struct ReaderOutcome {
  codec::Status status;
  std::uint64_t artifact_bytes = 0;
};

void drain(RingReader& reader) {
  std::vector<codec::Event> scratch(8192);
  while (reader.read(scratch) != 0) {
  }
}

ReaderOutcome read_and_encode(RingReader& reader, SharedRing& ring, int fd, const RecordOptions& options, bool discard,
                              const std::string& output_path, pipeline::ContextChannel* context) {
  ReaderOutcome outcome;
  if (!discard) {
    try {
      pipeline::FdSink sink(fd, output_path);
      pipeline::EncoderOptions encoder;
      encoder.workers = options.workers;
      encoder.level = options.level;
      encoder.context = context;
      // Each data frame's stacks, right after it (built in the parallel encode stage).
      if (options.stack_depth != 0) encoder.frame_context = event_stacks_records;
      pipeline::EncoderStats stats;
      outcome.status = pipeline::encode_stream(reader, sink, encoder, &stats);
      outcome.artifact_bytes = stats.bytes_out;
    } catch (const std::exception& e) {
      // The program is already running: let it go on untracked instead of waiting on a ring nobody encodes.
      outcome.status = {codec::Errc::io, std::string("cannot start the encoder: ") + e.what()};
      ring.header()->detached.store(1, std::memory_order_relaxed);
    }
  }
  drain(reader);
  return outcome;
}

// The recorder's environment plus LD_PRELOAD (ours first: the preload takes its first entry out again, and
// keeps the rest where the user's LD_PRELOAD was, so the program sees its native environment) and
// MEMTRACK_MESSAGES and MEMTRACK_RING (last; taken out by the preload).
std::vector<std::string> child_environment(const std::string& preload, const std::string& ring_path,
                                           const std::string& messages_path) {
  std::vector<std::string> env;
  bool have_preload = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (v.starts_with("LD_PRELOAD=")) {
      if (have_preload) continue;
      have_preload = true;
      std::string entry = "LD_PRELOAD=" + preload;
      if (v.size() > 11) entry.append(":").append(v.substr(11));
      env.push_back(std::move(entry));
      continue;
    }
    if (v.starts_with(std::string(kEnvRing) + "=") || v.starts_with(std::string(kEnvMessages) + "=")) continue;
    env.emplace_back(v);
  }
  if (!have_preload) env.push_back("LD_PRELOAD=" + preload);
  env.push_back(std::string(kEnvMessages) + "=" + messages_path);
  env.push_back(std::string(kEnvRing) + "=" + ring_path);
  return env;
}

// What /proc/<pid>/stat says of a process.
struct ProcStat {
  bool exists = false;
  char state = '?';
  int ppid = 0;
  int session = 0;
};

ProcStat proc_stat(int pid) {
  ProcStat st;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return st;
  const std::size_t paren = line.rfind(')');  // the command name may contain spaces and parentheses
  if (paren == std::string::npos) return st;
  int pgrp = 0;
  if (std::sscanf(line.c_str() + paren + 1, " %c %d %d %d", &st.state, &st.ppid, &pgrp, &st.session) != 4) return st;
  st.exists = true;
  return st;
}

bool running(const ProcStat& st) { return st.exists && st.state != 'Z' && st.state != 'X'; }

std::string executable_of(int pid) {
  char buf[4096];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Our children: the command and the orphans re-parented to us (we are a subreaper), from every thread's
// children list (a re-parented orphan may be listed under any of our threads).
std::set<int> children_of_us() {
  std::set<int> out;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* t = ::readdir(d)) {
      if (t->d_name[0] == '.') continue;
      std::ifstream in(std::string("/proc/self/task/") + t->d_name + "/children");
      int pid = 0;
      while (in >> pid) out.insert(pid);
    }
    ::closedir(d);
  }
  return out;
}

// The path posix_spawnp runs for `file` (PATH search), for the untrackable check of the command itself.
std::string find_command(const std::string& file) {
  if (file.find('/') != std::string::npos) return file;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + file;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

std::uint64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  ::clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Restores the recorder's signal mask and dispositions on every exit path.
class SignalScope {
 public:
  SignalScope() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &original_mask_);
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], nullptr, &original_[i]);
  }
  ~SignalScope() {
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &original_[i], nullptr);
    pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
  }
  const sigset_t& original_mask() const { return original_mask_; }
  // Signals the child must get with default dispositions (we change them below).
  sigset_t defaults_for_child() const {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < kCount; ++i)
      if (original_[i].sa_handler != SIG_IGN) sigaddset(&set, kSignals[i]);
    return set;
  }
  // Main thread only, once the helper threads exist (they keep everything blocked): the main thread keeps
  // SIGCHLD, SIGINT, SIGTERM and SIGHUP blocked and takes them with sigtimedwait (wait_set()); SIGQUIT from
  // the terminal goes to the program's process group too, and the recorder ignores it.
  void enter_wait() {
    struct sigaction ign = {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGQUIT, &ign, nullptr);
    sigset_t mask = original_mask_;
    const sigset_t waited = wait_set();
    for (int sig = 1; sig < NSIG; ++sig)
      if (sigismember(&waited, sig) == 1) sigaddset(&mask, sig);
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  }
  static sigset_t wait_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);  // pause the recording (docs/RUNTIME.md, "Harness control")
    sigaddset(&set, SIGUSR2);  // resume it
    return set;
  }

 private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
  sigset_t original_mask_;
  struct sigaction original_[kCount];
};

}  // namespace

namespace {

struct WaitOutcome {
  int exit_status = 0;
  int ended_by_signal = 0;
  std::vector<ProcessNote> left_running;
};

constexpr auto kTick = std::chrono::milliseconds(100);
// After the command exited, how long the recorder waits for the rest of its session before it says which
// processes it waits for (and then again every kAnnounceEvery).
constexpr auto kAnnounceAfter = std::chrono::milliseconds(1500);
constexpr auto kAnnounceEvery = std::chrono::seconds(10);
// After SIGTERM/SIGHUP/SIGINT while the command runs: how long it has to exit before the recording ends
// without it.
constexpr auto kSignalGrace = std::chrono::seconds(1);

// Waits (briefly: the reader keeps up within milliseconds) until the reader has handed on every ticket
// taken so far, so the lifecycle books include every process that announced itself before now.
void catch_up(SharedRing& ring, const RingReader& reader, bool reading) {
  if (!reading) return;
  const std::uint64_t head = ring.header()->head.load(std::memory_order_acquire);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (reader.position() < head && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void note_exit(SharedRing& ring, pid_t pid, int status) {
  if (WIFEXITED(status))
    ring.write_note(RingEventKind::NoteExit, pid, static_cast<std::uint32_t>(WEXITSTATUS(status)), kRingNoteHasStatus);
  else if (WIFSIGNALED(status))
    ring.write_note(RingEventKind::NoteExit, pid, static_cast<std::uint32_t>(WTERMSIG(status)), kRingNoteSignal);
}

std::string describe(const std::vector<ProcessNote>& processes) {
  std::string out;
  for (const ProcessNote& p : processes) {
    if (!out.empty()) out += ", ";
    out += std::to_string(p.pid) + " (" + (p.executable.empty() ? "?" : p.executable) + ")";
  }
  return out;
}

// The descendant policy (docs/RUNTIME.md, "Which processes the recording waits for"): the recording lasts
// while the command runs and, after it, while a process of the command's session runs (a tracked one, or
// one of our children: the orphans re-parented to us). Processes in another session (daemons: setsid) and
// processes no longer among our descendants do not hold it. SIGTERM/SIGHUP/SIGINT end it: at once once the
// command has exited, else when the command exits after being passed the signal, or kSignalGrace later.
// Every exit the recorder learns of (reaped with its status, or found gone) is noted in the ring; at the end,
// what still runs is noted left running and the ring is detached quietly, so those processes stop recording
// without a word.
WaitOutcome wait_for_processes(pid_t child, SharedRing& ring, RingReader& reader, Lifecycle& lifecycle,
                               ProcessWatch& watch, bool reading) {
  using clock = std::chrono::steady_clock;
  WaitOutcome out;
  const pid_t our_session = ::getsid(0);
  bool child_done = false;
  bool confirmed_empty = false;
  int stop_signal = 0;
  int signals_seen = 0;
  clock::time_point stop_at{};
  clock::time_point child_exit_at{};
  clock::time_point announced_at{};
  std::set<int> noted_gone;  // tracked non-children noted gone, until the reader has taken the note
  const sigset_t wait_set = SignalScope::wait_set();
  for (;;) {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      if (WIFSIGNALED(status)) watch.killed.fetch_add(1, std::memory_order_relaxed);
      note_exit(ring, pid, status);
      if (pid == child) {
        out.exit_status = exit_code(status);
        child_done = true;
        child_exit_at = clock::now();
      }
    }
    const auto now = clock::now();
    if (stop_signal != 0 && (child_done || signals_seen > 1 || now - stop_at > kSignalGrace)) break;

    const std::set<int> ours = children_of_us();
    std::vector<ProcessNote> holding;
    std::set<int> still_alive;
    for (const TrackedProcess& p : lifecycle.alive()) {
      still_alive.insert(p.pid);
      const ProcStat st = proc_stat(p.pid);
      if (!running(st)) {
        // Not ours to reap (its parent is a tracked process), or a zombie we reap next round: gone. It
        // ended without exit() (_exit, a signal), so its exit status is not known here.
        if (!ours.contains(p.pid) && noted_gone.insert(p.pid).second)
          ring.write_note(RingEventKind::NoteExit, p.pid, 0, 0);
        continue;
      }
      if (st.session == our_session || (p.pid == child && !child_done)) holding.push_back({p.pid, p.executable, {}});
    }
    std::erase_if(noted_gone, [&](int pid) { return !still_alive.contains(pid); });
    for (const int pid : ours) {
      if (still_alive.contains(pid)) continue;
      const ProcStat st = proc_stat(pid);
      if (running(st) && (st.session == our_session || pid == child)) holding.push_back({pid, executable_of(pid), {}});
    }

    if (child_done) {
      if (holding.empty()) {
        // Once more after the reader has caught up: a process announced just now is then in the books.
        if (confirmed_empty) break;
        confirmed_empty = true;
        catch_up(ring, reader, reading);
        continue;
      }
      confirmed_empty = false;
      if (now - child_exit_at > kAnnounceAfter &&
          (announced_at == clock::time_point{} || now - announced_at > kAnnounceEvery)) {
        announced_at = now;
        std::fprintf(stderr,
                     "memtrack record: the command has exited; waiting for %zu process%s of its session: %s "
                     "(SIGTERM, SIGHUP or SIGINT ends the recording now)\n",
                     holding.size(), holding.size() == 1 ? "" : "es", describe(holding).c_str());
      }
    }

    siginfo_t info;
    const struct timespec tick = {0, std::chrono::nanoseconds(kTick).count()};
    const int sig = ::sigtimedwait(&wait_set, &info, &tick);
    if (sig == SIGUSR1 || sig == SIGUSR2)
      toggle_recording(ring.header(), sig == SIGUSR1, static_cast<std::int32_t>(::getpid()), "signal");
    if (sig == SIGTERM || sig == SIGHUP || sig == SIGINT) {
      ++signals_seen;
      // A terminal's SIGINT reached the command's process group already; one sent to us alone is passed on.
      const bool from_terminal = sig == SIGINT && info.si_code == SI_KERNEL;
      if (!child_done && !from_terminal) ::kill(child, sig);
      if (stop_signal == 0) {
        stop_signal = sig;
        stop_at = clock::now();
      }
    }
  }

  catch_up(ring, reader, reading);
  std::set<int> listed;
  // The executable as it is now (a fork child may have exec'd since its last note was read).
  for (const TrackedProcess& p : lifecycle.alive()) {
    if (!running(proc_stat(p.pid)) || !listed.insert(p.pid).second) continue;
    const std::string now = executable_of(p.pid);
    out.left_running.push_back({p.pid, now.empty() ? p.executable : now, "left-running"});
  }
  for (const int pid : children_of_us())
    if (running(proc_stat(pid)) && listed.insert(pid).second)
      out.left_running.push_back({pid, executable_of(pid), "left-running"});
  for (const ProcessNote& p : out.left_running)
    ring.write_note(RingEventKind::NoteUntracked, p.pid, static_cast<std::uint64_t>(RingUntrackedReason::LeftRunning),
                    0, p.executable);
  if (!out.left_running.empty()) {
    // They stop recording at their next event, silently; a producer between its ticket and its slot fills
    // the slot within microseconds, so give those a moment before every ticket counts as final.
    std::uint32_t expected = 0;
    ring.header()->detached.compare_exchange_strong(expected, kDetachedQuiet, std::memory_order_relaxed);
    ring.wake_waiters();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!child_done) out.exit_status = 128 + stop_signal;
  out.ended_by_signal = stop_signal;
  watch.all_exited.store(true, std::memory_order_release);
  return out;
}

}  // namespace

InternalRecordOptions InternalRecordOptions::from_environment() {
  InternalRecordOptions internal;
  const char* discard = std::getenv("MEMTRACK_RECORD_DISCARD");
  internal.discard = discard != nullptr && *discard == '1';
  if (const char* dump = std::getenv("MEMTRACK_RECORD_CONTEXT_DUMP"); dump != nullptr) internal.context_dump = dump;
  return internal;
}

RecordResult record(const RecordOptions& options) { return record(options, InternalRecordOptions::from_environment()); }

RecordResult record(const RecordOptions& options, const InternalRecordOptions& internal) {
  if (options.command.empty()) throw std::runtime_error("no command to record");
  if (::access(options.preload_path.c_str(), R_OK) != 0) throw sys_error("preload library " + options.preload_path);

  // Every thread created from here on (reader, encoder workers) inherits a fully blocked mask: the
  // recorder never steals the program's signals or runs handlers on its worker threads.
  SignalScope signals;
  SharedRing ring(options.ring_slots);
  // The reference pair is taken before any producer exists, so every TSC value is after it.
  std::unique_ptr<TscClock> tsc;
  if (TscClock::usable()) tsc = std::make_unique<TscClock>();
  ring.header()->timestamp_tsc = tsc ? 1 : 0;
  ring.header()->stack_depth = options.stack_depth;

  // Descendants orphaned by their parents are re-parented to us, so we can wait for all of them and know
  // when no producer is left.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw sys_error("prctl(PR_SET_CHILD_SUBREAPER)");

  // The output (named or default) is created before the command starts, so a bad path fails without
  // running it; it is written beside its target and renamed at the end (output_file.h).
  std::optional<OutputFile> out;
  if (!internal.discard || !options.output.empty()) out.emplace(options.output);
  int fd = out ? out->fd() : -1;

  // The context records (docs/FORMAT.md, "Context section"): the recording first, then the processes as
  // their notes arrive in the ring.
  pipeline::ContextChannel channel;
  channel.add(codec::RecordingInfo{MEMTRACK_VERSION,
                                   options.command,
                                   clock_ns(CLOCK_REALTIME),
                                   clock_ns(CLOCK_MONOTONIC),
                                   options.stack_depth != 0
                                       ? std::vector<std::string>{"lifecycle", "control", "stacks", "modules",
                                                                  "symbols"}
                                       : std::vector<std::string>{"lifecycle", "control"},
                                   static_cast<std::int32_t>(::getpid())});
  const std::string command_path = find_command(options.command[0]);
  const int command_untrackable = command_path.empty() ? 0 : image_untrackable(AT_FDCWD, command_path.c_str());

  PreloadMessages messages;
  std::vector<std::string> env = child_environment(options.preload_path, ring.path(), messages.path());
  std::vector<std::string> argv_strings = options.command;
  std::vector<char*> envp = c_strings(env);
  std::vector<char*> argv = c_strings(argv_strings);

  // record --paused: the pause is the first note, before any event of the command.
  if (options.paused) toggle_recording(ring.header(), true, static_cast<std::int32_t>(::getpid()), "start");

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  const sigset_t child_defaults = signals.defaults_for_child();
  posix_spawnattr_setsigmask(&attr, &signals.original_mask());
  posix_spawnattr_setsigdefault(&attr, &child_defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t child = 0;
  const int spawn_error = ::posix_spawnp(&child, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (spawn_error != 0) {
    if (out) out->abandon();
    throw SpawnError(options.command[0], spawn_error);
  }
  // An untrackable command says nothing through the ring: the recorder notes it (before any event of it).
  if (command_untrackable != 0)
    ring.write_note(RingEventKind::NoteUntracked, child, static_cast<std::uint64_t>(command_untrackable), 0,
                    command_path);

  RecordResult result;
  result.output_path = options.output.empty() ? std::to_string(child) + ".MemtrackArtifact.msgpack" : options.output;
  if (out && options.output.empty()) out->name_default(result.output_path);

  // The summary line's peak comes from the same live-heap model as `memtrack stats`.
  analysis::LiveHeap heap;
  SeenProcesses processes;
  ProcessWatch watch;
  RingReader reader(ring, watch, processes, heap, tsc.get());
  Lifecycle lifecycle(channel, tsc.get(), &heap);
  reader.set_lifecycle(&lifecycle);
  StackTables stacks(channel);
  SymbolsWriter symbols_writer(::isatty(2) == 1);
  SymbolsSummary symbols;
  if (options.stack_depth != 0) {
    stacks.on_new_addresses([&](std::span<const StackTables::NewAddress> a) { symbols_writer.prefetch(a); });
    reader.set_stacks(&stacks, [&] { symbols = symbols_writer.write(stacks, channel); });
  }
  ReaderOutcome outcome;
  std::thread reader_thread;
  if (fd >= 0 || internal.discard)
    reader_thread = std::thread(
        [&] {
          // The context goes into the artifact, unless a test takes it from the dump instead.
          outcome = read_and_encode(reader, ring, fd, options, internal.discard, result.output_path,
                                    internal.context_dump.empty() ? &channel : nullptr);
        });

  signals.enter_wait();
  const WaitOutcome waited = wait_for_processes(child, ring, reader, lifecycle, watch, reader_thread.joinable());
  result.exit_status = waited.exit_status;
  result.ended_by_signal = waited.ended_by_signal;
  result.left_running = waited.left_running;

  if (reader_thread.joinable()) {
    reader_thread.join();
    result.status = outcome.status;
    result.artifact_bytes = outcome.artifact_bytes;
  }
  if (out) {
    const codec::Status finished = out->finish();
    if (result.status.is_ok()) result.status = finished;
  }
  result.events = reader.events();
  result.abandoned_slots = reader.abandoned();
  result.peak_heap_bytes = heap.total_peak_bytes();
  result.processes = processes.count();
  for (const UntrackedProcess& u : lifecycle.untracked())
    if (u.reason != "left-running") result.untracked.push_back({u.pid, u.executable, u.reason});
  result.context_records = lifecycle.records() + 1;  // and the Recording record
  result.preload_messages = messages.collect();
  const StackSummary stack_summary = stacks.summary();
  result.stack_nodes = stack_summary.nodes;
  result.stack_modules = stack_summary.modules;
  result.stack_table_bytes = stack_summary.table_bytes;
  result.symbolized_addresses = symbols.addresses;
  result.symbolized_ahead = symbols.ahead;
  result.symbolize_ahead_cpu_seconds = symbols.ahead_cpu_seconds;
  result.symbolize_seconds_at_end = symbols.seconds_at_end;
  if (!internal.context_dump.empty()) {
    std::vector<std::byte> frame;
    const codec::Status st = channel.take_frame(frame);
    std::ofstream dump(internal.context_dump, std::ios::binary);
    dump.write(reinterpret_cast<const char*>(frame.data()), static_cast<std::streamsize>(frame.size()));
    if ((!st || !dump) && result.status.is_ok())
      result.status = {codec::Errc::io, internal.context_dump + ": cannot write the context records"};
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return result;
}

}  // namespace memtrack::runtime
