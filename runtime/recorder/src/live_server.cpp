#include "live_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace memtrack::runtime {

// ---- LiveSites

std::uint32_t LiveSites::allocated(const codec::Event& e, std::uint64_t) {
  ++allocations_;
  allocated_bytes_ += e.size;
  if (!stacks_) return 0;
  if (pid_ != e.pid || sites_of_pid_ == nullptr) {  // events come in runs of one process
    pid_ = e.pid;
    sites_of_pid_ = &by_pid_[e.pid];
  }
  std::uint32_t payload = 0;
  if (const std::uint32_t* found = sites_of_pid_->find(e.stack); found != nullptr) {
    payload = *found;
  } else {
    sites_.push_back(Site{e.pid, e.stack, 0, 0, 0, 0});
    payload = static_cast<std::uint32_t>(sites_.size());
    sites_of_pid_->set(e.stack, payload);
  }
  Site& s = sites_[payload - 1];
  s.live_bytes += e.size;
  ++s.live_count;
  s.allocated_bytes += e.size;
  ++s.allocations;
  return payload;
}

void LiveSites::released(std::int32_t, std::uint64_t, std::uint64_t size, std::uint32_t payload, bool inherited,
                         Release) {
  if (payload == 0 || inherited || payload > sites_.size()) return;
  Site& s = sites_[payload - 1];
  s.live_bytes -= std::min(size, s.live_bytes);
  if (s.live_count != 0) --s.live_count;
}

// ---- LiveServer

namespace {

void send_best_effort(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

LiveServer::LiveServer() : path_(live_socket_path(::getpid())) {
  make_live_directory();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path)
    throw std::runtime_error("live view socket " + path_ + ": path longer than a Unix socket allows");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("live view socket: " + std::string(std::strerror(errno)));
  // A socket of this pid left by a recorder that was killed (the pid was reused) is stale.
  ::unlink(path_.c_str());
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 8) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    throw std::runtime_error("live view socket " + path_ + ": " + std::strerror(err));
  }
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    const int err = errno;
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    throw std::runtime_error("live view: eventfd: " + std::string(std::strerror(err)));
  }
}

LiveServer::~LiveServer() {
  if (!finished_) finish({});
}

void LiveServer::start(pid_t command) {
  command_ = command;
  thread_ = std::thread([this] { run(); });
}

void LiveServer::publish(std::string snapshot) {
  {
    std::lock_guard lock(mutex_);
    latest_ = std::move(snapshot);
    fresh_ = true;
  }
  want_now_.store(false, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void LiveServer::finish(std::string last) {
  if (finished_) return;
  finished_ = true;
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      if (!last.empty()) {
        latest_ = std::move(last);
        fresh_ = true;
      }
      closing_ = true;
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  for (Client& c : clients_) ::close(c.fd);
  clients_.clear();
  ::close(listen_fd_);
  ::close(wake_fd_);
  ::unlink(path_.c_str());
}

bool LiveServer::flush(Client& c) {
  for (;;) {
    if (c.sent == c.out.size()) {
      if (c.next.empty()) return true;
      c.out = std::move(c.next);
      c.next.clear();
      c.sent = 0;
    }
    const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.sent += static_cast<std::size_t>(n);
  }
}

void LiveServer::accept_viewers() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    const std::string refusal = check_peer(fd);
    if (!refusal.empty()) {
      send_best_effort(fd, "refused: " + refusal + "\n");
      ::close(fd);
      continue;
    }
    Client c;
    c.fd = fd;
    c.out = encode_greeting(::getpid(), command_);
    {
      std::lock_guard lock(mutex_);
      c.next = latest_;  // the newest snapshot at once (a new one follows within a moment: want_now_)
    }
    clients_.push_back(std::move(c));
    viewers_.fetch_add(1, std::memory_order_relaxed);
    want_now_.store(true, std::memory_order_relaxed);
    if (!flush(clients_.back())) {
      ::close(clients_.back().fd);
      clients_.pop_back();
      viewers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

void LiveServer::run() {
  bool closing = false;
  std::chrono::steady_clock::time_point deadline;
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (fresh_) {
        for (Client& c : clients_) c.next = latest_;
        fresh_ = false;
      }
      if (closing_ && !closing) {
        closing = true;
        deadline = std::chrono::steady_clock::now() + kFinishWait;
      }
    }
    for (std::size_t i = 0; i < clients_.size();) {
      if (flush(clients_[i])) {
        ++i;
        continue;
      }
      ::close(clients_[i].fd);
      clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
      viewers_.fetch_sub(1, std::memory_order_relaxed);
    }
    int timeout = -1;
    if (closing) {
      const bool drained = std::all_of(clients_.begin(), clients_.end(),
                                       [](const Client& c) { return c.sent == c.out.size() && c.next.empty(); });
      const auto left = deadline - std::chrono::steady_clock::now();
      if (drained || left <= std::chrono::steady_clock::duration::zero()) return;
      timeout = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()) + 1;
    }
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, closing ? short{0} : short{POLLIN}, 0});
    for (const Client& c : clients_)
      fds.push_back({c.fd, static_cast<short>(POLLIN | (c.sent != c.out.size() || !c.next.empty() ? POLLOUT : 0)), 0});
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t v;
      [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &v, sizeof v);
    }
    if ((fds[1].revents & POLLIN) != 0) accept_viewers();
    // Viewers send nothing: input is read and dropped, end of stream or an error closes the viewer.
    for (std::size_t i = 0, j = 2; i < clients_.size() && j < fds.size(); ++j) {
      bool gone = (fds[j].revents & (POLLERR | POLLNVAL)) != 0;
      if (!gone && (fds[j].revents & (POLLIN | POLLHUP)) != 0) {
        char buf[256];
        const ssize_t n = ::recv(clients_[i].fd, buf, sizeof buf, MSG_DONTWAIT);
        gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      }
      if (gone) {
        ::close(clients_[i].fd);
        clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));
        viewers_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        ++i;
      }
    }
  }
}

// ---- LiveBooks

LiveBooks::LiveBooks(LiveServer& server, const analysis::LiveHeap& heap, const LiveSites& sites,
                     const Lifecycle& lifecycle, const StackTables* stacks, SharedRing& ring, bool resident)
    : server_(server),
      heap_(heap),
      sites_(sites),
      lifecycle_(lifecycle),
      stacks_(stacks),
      ring_(ring),
      resident_(resident),
      started_(clock::now()),
      last_(started_) {}

void LiveBooks::tick() {
  if (!server_.viewers()) return;
  const auto now = clock::now();
  if (now - last_ < kInterval && !server_.wants_now()) return;
  server_.publish(build(now, false));
}

std::string LiveBooks::frame_of(std::int32_t pid, std::uint32_t stack) const {
  if (stack == 0) return "(no stack)";
  const ImageTables* image = stacks_ != nullptr ? stacks_->current_of(pid) : nullptr;
  if (image == nullptr) return "stack " + std::to_string(stack);
  const std::uint64_t* address = image->addresses.find(stack);
  if (address == nullptr) return "stack " + std::to_string(stack);
  char buf[64];
  const ModuleEntry* m = image->module_of(*address);
  if (m == nullptr) {
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(*address));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(*address - m->bias));
  const auto slash = m->path.find_last_of('/');
  return (slash == std::string::npos ? m->path : m->path.substr(slash + 1)) + buf;
}

std::string LiveBooks::build(clock::time_point now, bool ended) {
  LiveSnapshot s;
  s.sequence = ++sequence_;
  s.seconds = std::chrono::duration<double>(now - started_).count();
  s.ended = ended;
  s.paused = (ring_.header()->control.load(std::memory_order_relaxed) & kRingControlPaused) != 0;
  s.stacks = stacks_ != nullptr;
  s.heap_bytes = heap_.total_live_bytes();
  s.peak_bytes = heap_.total_peak_bytes();
  s.events = heap_.events();
  s.allocations = sites_.allocations();
  s.allocated_bytes = sites_.allocated_bytes();
  const double dt = std::chrono::duration<double>(now - last_).count();
  if (dt > 0) {  // the first snapshot's rates: since the recording started
    s.events_per_second = static_cast<double>(s.events - last_events_) / dt;
    s.allocations_per_second = static_cast<double>(s.allocations - last_allocations_) / dt;
    s.bytes_per_second = static_cast<double>(s.allocated_bytes - last_bytes_) / dt;
  }
  last_ = now;
  last_events_ = s.events;
  last_allocations_ = s.allocations;
  last_bytes_ = s.allocated_bytes;

  // The rows: images still running, heap first; then the ended ones, peak first.
  const auto& resident = lifecycle_.last_resident();
  std::vector<const analysis::ProcessImage*> images;
  for (const analysis::ProcessImage& image : heap_.images()) {
    const bool running = image.end == analysis::ProcessImage::End::running;
    if (running) s.mapped_bytes += image.heap.mapped_bytes;
    if (image.end == analysis::ProcessImage::End::exit) ++s.exited_processes;
    images.push_back(&image);
  }
  std::stable_sort(images.begin(), images.end(), [](const auto* a, const auto* b) {
    const bool ra = a->end == analysis::ProcessImage::End::running, rb = b->end == analysis::ProcessImage::End::running;
    if (ra != rb) return ra;
    return ra ? a->heap.live_bytes > b->heap.live_bytes : a->heap.peak_bytes > b->heap.peak_bytes;
  });
  std::uint64_t resident_sum = 0;
  bool any_resident = false;
  for (const analysis::ProcessImage* image : images) {
    const bool running = image->end == analysis::ProcessImage::End::running;
    std::optional<std::uint64_t> rss;
    if (running && resident_)
      if (const auto it = resident.find(image->pid); it != resident.end()) rss = it->second;
    if (rss) resident_sum += *rss, any_resident = true;
    if (s.processes.size() < kProcesses && (running || image->heap.events != 0))
      s.processes.push_back(LiveProcess{image->pid, running ? image->heap.live_bytes : 0, image->heap.peak_bytes,
                                        running ? image->heap.mapped_bytes : 0, image->heap.events, rss, running,
                                        image->executable});
  }
  if (any_resident) s.resident_bytes = resident_sum;

  // The sites: the first kSitesPerRanking of each ranking, overall and in the first processes' rows.
  const auto& all = sites_.sites();
  chosen_.assign(all.size(), false);
  auto rank = [&](std::int32_t pid, auto key) {
    order_.clear();
    for (std::uint32_t i = 0; i < all.size(); ++i)
      if ((pid == 0 || all[i].pid == pid) && key(all[i]) != 0) order_.push_back(i);
    const std::size_t k = std::min(order_.size(), kSitesPerRanking);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k), order_.end(),
                      [&](std::uint32_t a, std::uint32_t b) { return key(all[a]) > key(all[b]); });
    for (std::size_t i = 0; i < k; ++i) chosen_[order_[i]] = true;
  };
  auto by_live = [](const LiveSites::Site& x) { return x.live_bytes; };
  auto by_allocated = [](const LiveSites::Site& x) { return x.allocated_bytes; };
  auto by_count = [](const LiveSites::Site& x) { return x.allocations; };
  std::vector<std::int32_t> pids = {0};
  for (std::size_t i = 0; i < s.processes.size() && pids.size() <= kProcessesWithSites; ++i)
    if (std::find(pids.begin(), pids.end(), s.processes[i].pid) == pids.end()) pids.push_back(s.processes[i].pid);
  for (const std::int32_t pid : pids) {
    rank(pid, by_live);
    rank(pid, by_allocated);
    rank(pid, by_count);
  }
  for (std::uint32_t i = 0; i < all.size(); ++i)
    if (chosen_[i])
      s.sites.push_back(LiveSite{all[i].pid, all[i].stack, all[i].live_bytes, all[i].live_count, all[i].allocated_bytes,
                                 all[i].allocations, frame_of(all[i].pid, all[i].stack)});
  return encode_snapshot(s);
}

}  // namespace memtrack::runtime
