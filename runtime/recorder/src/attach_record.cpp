// memtrack::runtime::attach (memtrack/runtime/attach.h): record() for a process that is already running. The
// ring, reader, encoder, lifecycle books and live view are record()'s; what differs is the start (inject the
// preload, attach_inject.h) and the end (the process is not our child: its exit is seen through a pidfd, and
// the recording may end before it, by --duration or a signal, with every recorded process detached).
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "control_notes.h"
#include "lifecycle.h"
#include "live_server.h"
#include "memtrack/analysis/live_heap.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "memtrack/runtime/attach.h"
#include "memtrack/runtime/attach_inject.h"
#include "output_file.h"
#include "preload_messages.h"
#include "proc.h"
#include "processes.h"
#include "resident_sampler.h"
#include "ring_reader.h"
#include "shared_ring.h"
#include "stack_tables.h"
#include "supervisor.h"
#include "symbols_writer.h"
#include "sys_error.h"
#include "tsc_clock.h"

namespace memtrack::runtime {
namespace {

std::uint64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  ::clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The process's command line, as the Recording's command.
std::vector<std::string> command_line(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < all.size()) {
    const std::size_t end = all.find('\0', at);
    out.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (out.empty()) out.push_back(executable_of(pid));
  return out;
}

// memtrack_attach_start's refusals (runtime/preload/attach.cpp).
std::string start_refusal(pid_t pid, long code) {
  const std::string who = "process " + std::to_string(pid);
  switch (code) {
    case -1:
      return who + " is recorded already (memtrack record, or another attach)";
    case -2:
      return who + " was attached to before: memtrack attaches once per process";
    case -3:
      return who + " did not receive the recorder's ring (the attach socket: another network namespace?)";
    case -4:
      return who + " could not note itself in the ring";
    default:
      return who + ": memtrack_attach_start returned " + std::to_string(code);
  }
}

// Hands the ring's fd to the attached process (runtime/preload/attach.cpp, receive_ring_fd): an abstract Unix
// socket any process can connect to, on a thread of its own while the main thread runs the injected calls.
// Only a peer whose pid is the attached process's gets the fd; anyone else is dropped. The thread ends when
// the fd was sent, or at stop().
class RingFdServer {
 public:
  RingFdServer(pid_t pid, const std::string& ring_path) : pid_(pid) {
    ring_fd_ = ::open(ring_path.c_str(), O_RDWR | O_CLOEXEC);
    if (ring_fd_ < 0) throw sys_error("open " + ring_path);
    std::uint64_t nonce = 0;
    if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce)) nonce = clock_ns(CLOCK_MONOTONIC);
    name_ = "memtrack-attach." + std::to_string(::getpid()) + "." + std::to_string(nonce);
    sock_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name_.data(), name_.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
    if (sock_ < 0 || ::bind(sock_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(sock_, 4) != 0) {
      const std::runtime_error e = sys_error("the attach socket");
      if (sock_ >= 0) ::close(sock_);
      ::close(ring_fd_);
      throw e;
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~RingFdServer() {
    stop();
    ::close(sock_);
    ::close(ring_fd_);
  }
  RingFdServer(const RingFdServer&) = delete;
  RingFdServer& operator=(const RingFdServer&) = delete;
  // What memtrack_attach_start takes as its ring.
  [[nodiscard]] std::string address() const { return "@" + name_; }
  void stop() {
    stopping_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void serve() {
    while (!stopping_.load()) {
      pollfd p{sock_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(sock_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ucred cred{};
      socklen_t n = sizeof cred;
      if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &n) == 0 && cred.pid == pid_) {
        char byte = 1;
        iovec io{&byte, 1};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        msghdr msg{};
        msg.msg_iov = &io;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(cm), &ring_fd_, sizeof(int));
        const bool sent = ::sendmsg(c, &msg, MSG_NOSIGNAL) == 1;
        ::close(c);
        if (sent) return;
        continue;
      }
      ::close(c);
    }
  }

  pid_t pid_;
  int ring_fd_ = -1;
  int sock_ = -1;
  std::string name_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

struct Detached {
  double pause_ms = 0;
  int restored = 0;
  std::string error;
};

// Asks one process's preload to stop and restore its entries.
Detached detach_process(pid_t pid, const std::string& preload) {
  Detached d;
  std::vector<RemoteCall> calls(1);
  calls[0].library = preload;
  calls[0].symbol = "memtrack_attach_stop";
  try {
    const InjectStats s = inject_calls(pid, calls);
    d.pause_ms = s.pause_ms;
    d.restored = static_cast<int>(static_cast<std::int32_t>(calls[0].result));
  } catch (const AttachError& e) {
    d.error = "process " + std::to_string(pid) + ": " + e.what();
  }
  return d;
}

}  // namespace

AttachResult attach(const AttachOptions& given) {
  check_attachable(given.pid);
  if (::access(given.preload_path.c_str(), R_OK) != 0) throw sys_error("preload library " + given.preload_path);
  // The path as the process's maps will show it (no "..", no symlinks).
  AttachOptions options = given;
  if (char* real = ::realpath(given.preload_path.c_str(), nullptr)) {
    options.preload_path = real;
    std::free(real);
  }
  const pid_t pid = options.pid;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) throw AttachError("no such process: " + std::to_string(pid), kAttachNoProcess);
  struct ClosePidfd {
    int fd;
    ~ClosePidfd() { ::close(fd); }
  } close_pidfd{pidfd};

  SignalScope signals;
  SharedRing ring(kDefaultRingSlots);
  std::unique_ptr<TscClock> tsc;
  if (TscClock::usable()) tsc = std::make_unique<TscClock>();
  ring.header()->timestamp_tsc = tsc ? 1 : 0;
  ring.header()->stack_depth = options.stack_depth;

  AttachResult result;
  RecordResult& rec = result.record;
  rec.output_path = options.output.empty() ? std::to_string(pid) + ".MemtrackArtifact.msgpack" : options.output;
  std::optional<OutputFile> out;
  out.emplace(options.output);
  if (options.output.empty()) out->name_default(rec.output_path);
  const int fd = out->fd();

  // "attached" (docs/FORMAT.md, "Versions and sections"): the recording began while the process ran, so
  // blocks it allocated before are unknown (their frees are frees of blocks from before the recording).
  std::vector<std::string> sections = {"lifecycle", "control", "attached"};
  if (options.resident) sections.insert(sections.end(), {"resident", "resident-pages"});
  if (options.stack_depth != 0) sections.insert(sections.end(), {"stacks", "modules", "symbols"});
  pipeline::ContextChannel channel;
  channel.add(codec::RecordingInfo{MEMTRACK_VERSION, command_line(pid), clock_ns(CLOCK_REALTIME),
                                   clock_ns(CLOCK_MONOTONIC), sections, static_cast<std::int32_t>(::getpid())});
  PreloadMessages messages;

  std::optional<LiveServer> live;
  if (options.live_server) {
    try {
      live.emplace();
    } catch (const std::exception& e) {
      rec.live_error = e.what();
    }
  }

  LiveSites live_sites(options.stack_depth != 0);
  analysis::LiveHeap heap;
  if (live) heap.set_client(&live_sites);
  SeenProcesses processes;
  ProcessWatch watch;
  RingReader reader(ring, watch, processes, heap, tsc.get());
  Lifecycle lifecycle(channel, tsc.get(), &heap);
  reader.set_lifecycle(&lifecycle);
  StackTables stacks(channel);
  SymbolsWriter symbols_writer(false);
  SymbolsSummary symbols;
  if (options.stack_depth != 0) {
    stacks.on_new_addresses([&](std::span<const StackTables::NewAddress> a) { symbols_writer.prefetch(a); });
    reader.set_stacks(&stacks, [&] { symbols = symbols_writer.write(stacks, channel); });
  }
  PageSnapshots page_snapshots;
  lifecycle.set_page_snapshots(&page_snapshots);
  std::optional<ResidentSampler> sampler;
  if (options.resident) sampler.emplace(ring, &page_snapshots);
  // Processes met in the ring (the attached one, its fork children): watched for their end.
  std::mutex new_mutex;
  std::vector<std::int32_t> new_pids;
  lifecycle.on_new_process([&](std::int32_t p) {
    {
      const std::lock_guard lock(new_mutex);
      new_pids.push_back(p);
    }
    if (sampler) sampler->watch(p);
  });
  std::optional<LiveBooks> live_books;
  if (live) {
    live_books.emplace(*live, heap, live_sites, lifecycle, options.stack_depth != 0 ? &stacks : nullptr, ring,
                       options.resident);
    reader.set_tick([&] { live_books->tick(); });
    live->start(pid);
  }

  codec::Status encode_status;
  std::uint64_t artifact_bytes = 0;
  std::thread reader_thread([&] {
    try {
      pipeline::FdSink sink(fd, rec.output_path);
      pipeline::EncoderOptions encoder;
      encoder.workers = options.workers;
      encoder.level = options.level;
      encoder.compact = options.compact;
      encoder.context = &channel;
      // (compact: in the data frame itself, compact version 5, but for an empty stream's one empty frame).
      if (options.stack_depth != 0) encoder.frame_context = event_stacks_records;
      encoder.compact_stacks = options.stack_depth != 0 && options.compact;
      pipeline::EncoderStats stats;
      encode_status = pipeline::encode_stream(reader, sink, encoder, &stats);
      artifact_bytes = stats.bytes_out;
    } catch (const std::exception& e) {
      encode_status = {codec::Errc::io, std::string("cannot start the encoder: ") + e.what()};
      ring.header()->detached.store(1, std::memory_order_relaxed);
    }
    std::vector<codec::Event> scratch(8192);
    while (reader.read(scratch) != 0) {
    }
  });
  // Every path out of here must end the reader: the tracked processes are "exited" for it once detached.
  auto finish_reader = [&] {
    std::uint32_t expected = 0;
    ring.header()->detached.compare_exchange_strong(expected, kDetachedQuiet, std::memory_order_relaxed);
    ring.wake_waiters();
    watch.all_exited.store(true, std::memory_order_release);
    if (reader_thread.joinable()) reader_thread.join();
  };

  // The injection: dlopen the preload, then start it on the ring.
  std::vector<RemoteCall> calls;
  // The ring reaches the process as an fd over a socket (a process of another user cannot open our /proc).
  RingFdServer fd_server(pid, ring.path());
  auto call = [](std::string library, std::string symbol, std::vector<std::string> strings) {
    RemoteCall c;
    c.library = std::move(library);
    c.symbol = std::move(symbol);
    c.strings = std::move(strings);
    return c;
  };
  calls.push_back(call("libc.so", "dlopen", {options.preload_path}));
  calls.back().integers = {RTLD_NOW};
  calls.back().must_not_return_0 = true;
  // The images the process execs are preloaded as under `record`: LD_PRELOAD=<the library>, and the ring by
  // its path (a process of another user cannot open it: those images are noted no-access, not recorded).
  calls.push_back(call(options.preload_path, "memtrack_attach_start",
                       {fd_server.address(), messages.path(), options.preload_path, ring.path()}));
  // The jumps, written with every other thread stopped outside the entries' first bytes (patch.h).
  OtherThreadsStopped others_stopped;
  calls.push_back(call(options.preload_path, "memtrack_attach_commit", {}));
  calls.back().before = [&](pid_t chosen) {
    const auto started_code = static_cast<std::int32_t>(calls[1].result);
    if (started_code < 0)
      throw AttachError(start_refusal(pid, started_code), started_code >= -2 ? kAttachAlreadyRecorded : 1);
    const std::uint64_t table = remote_symbol(pid, options.preload_path, "memtrack_attach_entries");
    std::uint64_t count = 0;
    if (table == 0 || !read_remote(pid, table, &count, 8) || count > 256)
      throw AttachError("cannot read the preload's table of entries in the process", 1);
    std::vector<std::uint64_t> pairs(2 * count);
    if (count != 0 && !read_remote(pid, table + 8, pairs.data(), pairs.size() * 8))
      throw AttachError("cannot read the preload's table of entries in the process", 1);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    for (std::uint64_t i = 0; i < count; ++i) spans.emplace_back(pairs[2 * i], pairs[2 * i + 1]);
    others_stopped.stop(pid, chosen, spans);
  };
  try {
    const InjectStats s = inject_calls(pid, calls);
    fd_server.stop();
    result.threads_stopped = static_cast<int>(others_stopped.count());
    result.threads_stepped = others_stopped.stepped();
    others_stopped.release();
    result.attach_pause_ms = s.pause_ms;
  } catch (const AttachError& e) {
    others_stopped.release();
    finish_reader();
    out->abandon();
    const bool loaded = calls[0].result != 0;
    throw AttachError(std::string(e.what()) + (loaded ? " (the preload stays loaded in the process, inert)" : ""),
                      e.exit_status);
  }
  result.hooked_entries = static_cast<int>(static_cast<std::int32_t>(calls[2].result));
  if (live && options.on_attached) options.on_attached(live->path());
  if (!live && options.on_attached) options.on_attached("");

  // Wait: the process's exit, the duration, or SIGINT/SIGTERM/SIGHUP (SIGUSR1/SIGUSR2 pause and resume).
  signals.enter_wait();
  const sigset_t set = SignalScope::wait_set();
  const int signal_fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) throw sys_error("signalfd");
  using clock = std::chrono::steady_clock;
  const auto started_at = clock::now();
  std::set<std::int32_t> others;  // fork children met in the ring
  std::set<std::int32_t> noted;
  auto note_gone = [&](std::int32_t p) {
    if (noted.insert(p).second) ring.write_note(RingEventKind::NoteExit, p, 0, 0);
  };
  for (;;) {
    {
      const std::lock_guard lock(new_mutex);
      for (const std::int32_t p : new_pids)
        if (p != pid) others.insert(p);
      new_pids.clear();
    }
    for (auto it = others.begin(); it != others.end();) {
      if (running(proc_stat(*it))) {
        ++it;
        continue;
      }
      note_gone(*it);
      it = others.erase(it);
    }
    int timeout = 100;
    if (options.duration_seconds > 0) {
      const double left = options.duration_seconds - std::chrono::duration<double>(clock::now() - started_at).count();
      if (left <= 0) {
        result.ended_after_seconds = static_cast<int>(options.duration_seconds);
        break;
      }
      timeout = std::min(timeout, static_cast<int>(left * 1000) + 1);
    }
    pollfd fds[2] = {{signal_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int ready = ::poll(fds, 2, timeout);
    if (ready <= 0) continue;
    if (fds[1].revents != 0) {
      result.process_exited = true;
      break;
    }
    signalfd_siginfo info;
    int stop = 0;
    while (::read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGUSR1 || sig == SIGUSR2)
        toggle_recording(ring.header(), sig == SIGUSR1, static_cast<std::int32_t>(::getpid()), "signal");
      if (sig == SIGTERM || sig == SIGHUP || sig == SIGINT) stop = sig;
    }
    if (stop != 0) {
      rec.ended_by_signal = stop;
      rec.exit_status = 128 + stop;
      break;
    }
  }
  ::close(signal_fd);

  // Detach every recorded process still running: the attached one and its fork children (which inherited
  // the patched entries).
  std::set<std::int32_t> to_detach = others;
  if (!result.process_exited) to_detach.insert(pid);
  for (const std::int32_t p : to_detach) {
    if (!running(proc_stat(p))) continue;
    const Detached d = detach_process(p, options.preload_path);
    result.detach_pause_ms = std::max(result.detach_pause_ms, d.pause_ms);
    result.restored_entries += d.restored > 0 ? d.restored : 0;
    if (!d.error.empty()) result.detach_error += (result.detach_error.empty() ? "" : "; ") + d.error;
  }
  if (result.process_exited) note_gone(pid);
  // A thread between its ticket and its slot when the preload stopped fills the slot within microseconds.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto head = ring.header()->head.load(std::memory_order_acquire);
  const auto deadline = clock::now() + std::chrono::milliseconds(500);
  while (reader.position() < head && clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (sampler) {
    const ResidentCost resident = sampler->stop();
    rec.resident_polls = resident.polls;
    rec.resident_cpu_seconds = resident.cpu_seconds;
    rec.resident_wall_seconds = resident.wall_seconds;
  }
  finish_reader();
  if (live) live->finish(live_books->final_snapshot());
  rec.status = encode_status;
  rec.artifact_bytes = artifact_bytes;
  const codec::Status finished = out->finish();
  if (rec.status.is_ok()) rec.status = finished;
  if (finished.is_ok() && out->kept_beside()) {
    rec.target_taken = rec.output_path;
    rec.output_path = out->final_path();
  }
  rec.events = reader.events();
  rec.abandoned_slots = reader.abandoned();
  rec.peak_heap_bytes = heap.total_peak_bytes();
  rec.processes = heap.pids().size();
  rec.resident_samples = lifecycle.resident_samples();
  rec.page_snapshots = lifecycle.page_snapshots();
  rec.preload_messages = messages.collect();
  const StackSummary stack_summary = stacks.summary();
  rec.stack_nodes = stack_summary.nodes;
  rec.symbolized_addresses = symbols.addresses;
  return result;
}

}  // namespace memtrack::runtime
