#include "memtrack/runtime/recorder.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "event_writer.h"
#include "heap_tracker.h"
#include "tsc_clock.h"

extern char** environ;

namespace memtrack::runtime {
namespace {

std::runtime_error sys_error(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

// The shared ring: a memfd the tracked processes open through /proc/<recorder pid>/fd/<n>. The fd itself is
// close-on-exec, so the program's fd table is untouched and programs that close all fds still attach.
class SharedRing {
 public:
  explicit SharedRing(std::uint64_t slots) : slots_(slots) {
    if (slots < 64 || (slots & (slots - 1)) != 0) throw std::runtime_error("ring size must be a power of two >= 64");
    fd_ = static_cast<int>(::syscall(SYS_memfd_create, "memtrack-ring", MFD_CLOEXEC));
    if (fd_ < 0) throw sys_error("memfd_create");
    bytes_ = ring_bytes(slots);
    if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) throw sys_error("ftruncate(ring)");
    void* map = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) throw sys_error("mmap(ring)");
    header_ = new (map) RingHeader;
    header_->magic = kRingMagic;
    header_->version = kRingVersion;
    header_->capacity = slots;
    header_->recorder_pid = static_cast<std::int32_t>(::getpid());
    header_->timestamp_tsc = 0;
    header_->head.store(0, std::memory_order_relaxed);
    header_->waiters.store(0, std::memory_order_relaxed);
    header_->wake_futex.store(0, std::memory_order_relaxed);
    header_->detached.store(0, std::memory_order_relaxed);
    slots_ptr_ = ring_slots(header_);
    // Published to the producers by posix_spawn (a system call) before any of them maps the ring.
    for (std::uint64_t i = 0; i < slots; ++i) new (&slots_ptr_[i].seq) std::atomic<std::uint64_t>(i);
    owners_ = ring_owners(header_);
    for (std::uint64_t i = 0; i < 2 * slots; ++i) new (&owners_[i]) std::atomic<std::uint64_t>(0);
    header_->exec_count.store(0, std::memory_order_relaxed);
    for (auto& notice : header_->exec_notices) notice.store(0, std::memory_order_relaxed);
  }
  ~SharedRing() {
    ::munmap(header_, bytes_);
    ::close(fd_);
  }
  SharedRing(const SharedRing&) = delete;
  SharedRing& operator=(const SharedRing&) = delete;

  [[nodiscard]] std::string path() const {
    return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
  }
  RingHeader* header() { return header_; }
  RingSlot& slot(std::uint64_t ticket) { return slots_ptr_[ticket & (slots_ - 1)]; }
  std::uint64_t owner(std::uint64_t ticket) {
    return owners_[ticket & (2 * slots_ - 1)].load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t capacity() const { return slots_; }

  // After freeing slots: wake producers sleeping on a full ring. A Dekker handshake with the producer, which
  // increments `waiters` and then re-reads its slot: this read-modify-write reads the latest `waiters`, and
  // if it comes before the producer's increment, it synchronizes with it, so the producer's re-read sees
  // the slots freed above. Either we see the waiter or it sees the free slot. (An RMW, not a fence:
  // ThreadSanitizer does not model fences.)
  void wake_waiters() {
    if (header_->waiters.fetch_add(0, std::memory_order_acq_rel) != 0) {
      header_->wake_futex.fetch_add(1, std::memory_order_seq_cst);
      ::syscall(SYS_futex, &header_->wake_futex, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    }
  }

 private:
  std::uint64_t slots_;
  int fd_ = -1;
  std::size_t bytes_ = 0;
  RingHeader* header_ = nullptr;
  RingSlot* slots_ptr_ = nullptr;
  std::atomic<std::uint64_t>* owners_ = nullptr;
};

// Shared between the main (waiting) thread and the reader thread.
struct ReaderControl {
  std::atomic<bool> all_exited{false};   // no tracked process is left: every ticket is final
  std::atomic<std::uint64_t> killed{0};  // tracked processes that died by a signal so far
  std::uint64_t events = 0;              // reader-owned until joined
  std::uint64_t abandoned = 0;           // reader-owned until joined
  codec::Status status;                  // reader-owned until joined
};

// How long a slot may stay taken-but-unfilled before the reader asks (and then re-asks) whether its owner
// still exists. A live thread fills its slot within microseconds (or, in realloc, when the real call
// returns); the question costs one read of /proc/<pid>/stat.
constexpr auto kAbandonAfter = std::chrono::milliseconds(250);

// True when thread (or process) `tid` no longer runs: gone, or a zombie (killed, not yet reaped). /proc/<tid>
// exists for every thread id, not only for process ids.
bool thread_gone(int tid) {
  const std::string path = "/proc/" + std::to_string(tid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return n == 0 || errno == ESRCH;
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');  // the command name may contain spaces and parentheses
  return paren != nullptr && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

// True when `tid` is the pid of an image that started (exec) after `ticket` was taken: the ticket was held
// by the main thread of the image exec replaced.
bool replaced_by_exec(RingHeader* h, std::int32_t tid, std::uint64_t ticket) {
  for (const auto& n : h->exec_notices) {
    const std::uint64_t notice = n.load(std::memory_order_acquire);
    if (static_cast<std::int32_t>(notice & kOwnerTidMask) == tid &&
        (notice >> kOwnerTidBits) > (ticket & kOwnerTicketMask))
      return true;
  }
  return false;
}

// A slot taken but unfilled for kAbandonAfter: abandon it if the thread that took it is gone (a live owner
// is waited for, however long: a stopped or traced program too). An unsigned ticket means its thread died
// within the few instructions between taking the ticket and signing it; only conclude so after
// kUnsignedAfter and when a tracked process is known to have died (one the recorder reaped, or one of the
// pids seen in the events that no longer runs).
constexpr auto kUnsignedAfter = std::chrono::seconds(1);

bool owner_gone(SharedRing& ring, std::uint64_t ticket, std::chrono::steady_clock::duration stuck_for,
                const ReaderControl& ctl, const HeapTracker& heap) {
  const std::uint64_t owner = ring.owner(ticket);
  if ((owner >> kOwnerTidBits) == (ticket & kOwnerTicketMask)) {
    const auto tid = static_cast<std::int32_t>(owner & kOwnerTidMask);
    return thread_gone(tid) || replaced_by_exec(ring.header(), tid, ticket);
  }
  if (stuck_for < kUnsignedAfter) return false;
  if (ctl.killed.load(std::memory_order_relaxed) != 0) return true;
  for (const std::int32_t pid : heap.pids())
    if (thread_gone(pid)) return true;
  return false;
}

void reader_loop(SharedRing& ring, EventWriter& writer, HeapTracker& heap, ReaderControl& ctl, TscClock* tsc) {
  constexpr std::size_t kBatch = 8192;
  std::vector<codec::Event> batch;
  batch.reserve(kBatch);
  std::uint64_t pos = 0;
  int idle_rounds = 0;
  std::uint64_t stuck_at = UINT64_MAX;
  auto stuck_since = std::chrono::steady_clock::now();
  auto last_check = stuck_since;
  bool writer_ok = true;

  for (;;) {
    batch.clear();
    while (batch.size() < kBatch) {
      RingSlot& s = ring.slot(pos);
      if (s.seq.load(std::memory_order_acquire) != pos + 1) break;
      const codec::Event e = s.event;
      s.seq.store(pos + ring.capacity(), std::memory_order_release);
      ++pos;
      if (static_cast<std::uint8_t>(e.kind) != kNoEventKind) batch.push_back(e);
    }
    if (!batch.empty() || idle_rounds == 0) ring.wake_waiters();
    if (!batch.empty()) {
      idle_rounds = 0;
      ctl.events += batch.size();
      if (tsc != nullptr) tsc->convert(batch);
      heap.apply(batch);
      if (writer_ok) {
        ctl.status = writer.push(batch);
        // On a write failure keep draining (the program must not block on us), but stop encoding.
        writer_ok = ctl.status.is_ok();
      }
      continue;
    }
    // Nothing committed at `pos`.
    const bool exited = ctl.all_exited.load(std::memory_order_acquire);
    const std::uint64_t head = ring.header()->head.load(std::memory_order_acquire);
    if (exited && pos >= head) break;
    if (pos < head) {
      // A ticket was taken but its slot is not filled. Normally its thread is between fetch_add and the
      // store; if every process is gone, or the thread that took it died (killed, or its image replaced
      // by exec), it will never be filled.
      const auto now = std::chrono::steady_clock::now();
      if (stuck_at != pos) {
        stuck_at = pos;
        stuck_since = now;
        last_check = now;
      }
      bool abandon = exited;
      if (!abandon && now - last_check > kAbandonAfter) {
        abandon = owner_gone(ring, pos, now - stuck_since, ctl, heap);
        last_check = now;  // ask again later, not on every idle round
      }
      if (abandon) {
        ring.slot(pos).seq.store(pos + ring.capacity(), std::memory_order_release);
        ++pos;
        ++ctl.abandoned;
        ring.wake_waiters();  // a producer may be waiting for exactly this slot's next lap
        continue;
      }
    }
    // Idle: back off from yielding to sleeping (20 us .. 1 ms). The ring absorbs bursts meanwhile, and a
    // producer that finds it full sleeps on the futex we bump above, so no event waits on this sleep alone.
    ++idle_rounds;
    if (idle_rounds < 16) {
      std::this_thread::yield();
    } else {
      const long us = std::min<long>(1000, 20L << std::min(idle_rounds - 16, 6));
      struct timespec ts = {0, us * 1000};
      ::nanosleep(&ts, nullptr);
    }
  }
  ring.wake_waiters();
}

// Forwarded to the command: a `kill <recorder>` should stop the program, and the recorder then finishes.
volatile sig_atomic_t g_child_pid = 0;
void forward_signal(int sig) {
  if (g_child_pid > 0) ::kill(g_child_pid, sig);
}

std::vector<std::string> child_environment(const std::string& preload, const std::string& ring_path) {
  std::vector<std::string> env;
  std::string ld_preload = "LD_PRELOAD=" + preload;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v = *e;
    if (v.starts_with("LD_PRELOAD=")) {
      if (v.size() > 11) ld_preload += ":" + std::string(v.substr(11));
      continue;
    }
    if (v.starts_with(std::string(kEnvRing) + "=")) continue;
    env.emplace_back(v);
  }
  env.push_back(ld_preload);
  env.push_back(std::string(kEnvRing) + "=" + ring_path);
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

RecordResult record(const RecordOptions& options) {
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

  // A named output is created before the command starts, so a bad path fails without running it. The
  // default name needs the command's pid and is created right after the spawn.
  auto create_output = [](const std::string& path) {
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  };
  int fd = -1;
  if (!options.output.empty()) {
    fd = create_output(options.output);
    if (fd < 0) throw sys_error(options.output + ": cannot create");
  }

  std::vector<std::string> env = child_environment(options.preload_path, ring.path());
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
    if (fd >= 0) {
      ::close(fd);
      ::unlink(options.output.c_str());  // no artifact rather than an empty, invalid one
    }
    errno = spawn_error;
    throw sys_error("cannot run '" + options.command[0] + "'");
  }
  g_child_pid = child;

  RecordResult result;
  result.output_path = options.output.empty() ? std::to_string(child) + ".MemtrackArtifact.msgpack" : options.output;
  if (fd < 0) fd = create_output(result.output_path);
  std::unique_ptr<EventWriter> writer;
  if (fd < 0) {
    result.status = {codec::Errc::io, result.output_path + ": cannot create: " + std::strerror(errno)};
  } else {
    try {
      writer = options.discard ? make_discarding_writer()
                               : make_event_writer(fd, result.output_path, options.workers, options.level);
    } catch (const std::exception& e) {
      result.status = {codec::Errc::io, std::string("cannot start the encoder: ") + e.what()};
    }
  }
  if (!writer) {
    // The program is already running: let it go on untracked instead of blocking on a ring nobody reads.
    ring.header()->detached.store(1, std::memory_order_relaxed);
    ring.wake_waiters();
  }

  HeapTracker heap;
  ReaderControl ctl;
  std::thread reader;
  if (writer) reader = std::thread([&] { reader_loop(ring, *writer, heap, ctl, tsc.get()); });

  signals.enter_wait();
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: the command and all its descendants are gone
    }
    if (WIFSIGNALED(status)) ctl.killed.fetch_add(1, std::memory_order_relaxed);
    if (pid == child) {
      result.exit_status = exit_code(status);
      g_child_pid = 0;
    }
  }
  ctl.all_exited.store(true, std::memory_order_release);

  if (reader.joinable()) reader.join();
  if (writer) {
    if (ctl.status.is_ok()) ctl.status = writer->finish();
    result.artifact_bytes = writer->bytes_written();
    result.status = ctl.status;
    writer.reset();
  }
  if (fd >= 0 && ::close(fd) != 0 && result.status.is_ok())
    result.status = {codec::Errc::io, result.output_path + ": close failed: " + std::strerror(errno)};
  result.events = ctl.events;
  result.abandoned_slots = ctl.abandoned;
  result.peak_heap_bytes = heap.peak_bytes();
  result.processes = heap.processes();
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  return result;
}

}  // namespace memtrack::runtime
