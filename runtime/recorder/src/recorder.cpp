#include "memtrack/runtime/recorder.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "memtrack/runtime/static_image.h"
#include "output_file.h"
#include "processes.h"
#include "recorder_internal.h"
#include "ring_reader.h"
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
                              const std::string& output_path) {
  ReaderOutcome outcome;
  if (!discard) {
    try {
      pipeline::FdSink sink(fd, output_path);
      pipeline::EncoderOptions encoder;
      encoder.workers = options.workers;
      encoder.level = options.level;
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

// Forwarded to the command: a `kill <recorder>` should stop the program, and the recorder then finishes.
volatile sig_atomic_t g_child_pid = 0;
void forward_signal(int sig) {
  if (g_child_pid > 0) ::kill(g_child_pid, sig);
}

// The file posix_spawnp will run: CMD itself when it names a path, else the first executable match in PATH.
std::string find_in_path(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return cmd;
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "/usr/bin:/bin";
  for (;;) {
    const std::size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + cmd;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return {};
    rest.remove_prefix(colon + 1);
  }
}

std::string untracked_line(pid_t pid, const std::string& image) {
  return "pid " + std::to_string(pid) + " (" + image + ") ran untracked: " + kStaticImageReason;
}

// Lines "PID\tPATH\tREASON\n" appended by the preload (ring.h, kEnvUntracked).
void read_untracked_notes(int fd, std::vector<std::string>& out) {
  std::string text;
  char buf[4096];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::size_t t1 = line.find('\t'), t2 = line.find('\t', t1 == std::string::npos ? t1 : t1 + 1);
    if (t1 == std::string::npos || t2 == std::string::npos) continue;
    out.push_back("pid " + line.substr(0, t1) + " (" + line.substr(t1 + 1, t2 - t1 - 1) +
                  ") ran untracked: " + line.substr(t2 + 1));
  }
}

std::vector<std::string> child_environment(const std::string& preload, const std::string& ring_path,
                                           const std::string& untracked_path) {
  std::vector<std::string> env;
  std::string ld_preload = "LD_PRELOAD=" + preload;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (v.starts_with("LD_PRELOAD=")) {
      if (v.size() > 11) ld_preload += ":" + std::string(v.substr(11));
      continue;
    }
    if (v.starts_with(std::string(kEnvRing) + "=") || v.starts_with(std::string(kEnvUntracked) + "=")) continue;
    env.emplace_back(v);
  }
  env.push_back(ld_preload);
  env.push_back(std::string(kEnvRing) + "=" + ring_path);
  env.push_back(std::string(kEnvUntracked) + "=" + untracked_path);
  return env;
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
  // Main thread only, once the helper threads exist (they keep everything blocked): the terminal's
  // SIGINT/SIGQUIT go to the program's process group too, so the recorder ignores them and finishes the
  // artifact when the program exits; SIGTERM/SIGHUP sent to the recorder are passed on to the program.
  void enter_wait() {
    struct sigaction ign = {};
    ign.sa_handler = SIG_IGN;
    struct sigaction fwd = {};
    fwd.sa_handler = forward_signal;
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, &ign, nullptr);
    sigaction(SIGQUIT, &ign, nullptr);
    sigaction(SIGTERM, &fwd, nullptr);
    sigaction(SIGHUP, &fwd, nullptr);
    pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
  }

 private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
  sigset_t original_mask_;
  struct sigaction original_[kCount];
};

}  // namespace

InternalRecordOptions InternalRecordOptions::from_environment() {
  InternalRecordOptions internal;
  const char* discard = std::getenv("MEMTRACK_RECORD_DISCARD");
  internal.discard = discard != nullptr && *discard == '1';
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

  // Descendants orphaned by their parents are re-parented to us, so we can wait for all of them and know
  // when no producer is left.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw sys_error("prctl(PR_SET_CHILD_SUBREAPER)");

  // The output (named or default) is created before the command starts, so a bad path fails without
  // running it; it is written beside its target and renamed at the end (output_file.h).
  std::optional<OutputFile> out;
  if (!internal.discard || !options.output.empty()) out.emplace(options.output);
  int fd = out ? out->fd() : -1;

  // The notes of untracked processes: a memfd the preload appends to through /proc (like the ring).
  const int notes_fd = static_cast<int>(::syscall(SYS_memfd_create, "memtrack-untracked", MFD_CLOEXEC));
  if (notes_fd < 0) throw sys_error("memfd_create");
  const std::string notes_path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(notes_fd);
  std::vector<std::string> env = child_environment(options.preload_path, ring.path(), notes_path);
  const std::string cmd_image = find_in_path(options.command[0]);
  const bool cmd_static = !cmd_image.empty() && is_static_executable(cmd_image.c_str());
  std::vector<std::string> argv_strings = options.command;
  std::vector<char*> envp = c_strings(env);
  std::vector<char*> argv = c_strings(argv_strings);

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
  g_child_pid = child;

  RecordResult result;
  if (cmd_static) result.untracked.push_back(untracked_line(child, cmd_image));
  result.output_path = options.output.empty() ? std::to_string(child) + ".MemtrackArtifact.msgpack" : options.output;
  if (out && options.output.empty()) out->name_default(result.output_path);

  // The summary line's peak comes from the same live-heap model as `memtrack stats`.
  analysis::LiveHeap heap;
  SeenProcesses processes;
  ProcessWatch watch;
  RingReader reader(ring, watch, processes, heap, tsc.get());
  ReaderOutcome outcome;
  std::thread reader_thread;
  if (fd >= 0 || internal.discard)
    reader_thread = std::thread(
        [&] { outcome = read_and_encode(reader, ring, fd, options, internal.discard, result.output_path); });

  signals.enter_wait();
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: the command and all its descendants are gone
    }
    if (WIFSIGNALED(status)) watch.killed.fetch_add(1, std::memory_order_relaxed);
    if (pid == child) {
      result.exit_status = exit_code(status);
      g_child_pid = 0;
    }
  }
  watch.all_exited.store(true, std::memory_order_release);

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
  read_untracked_notes(notes_fd, result.untracked);
  ::close(notes_fd);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return result;
}

}  // namespace memtrack::runtime
