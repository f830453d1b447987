// The recorder's side of the live view (docs/RUNTIME.md, "Live view"; the channel: memtrack/runtime/live.h).
//
// LiveSites is the recorder's LiveHeap client: it counts allocations and, with stacks, each site's live,
// allocated and count figures (site = pid + leaf stack id), O(1) per event (one hash lookup per allocation, an
// index per release). LiveBooks builds a snapshot from those books, the heap and the lifecycle on the reader
// thread, at most once per kInterval and only while a viewer is connected: its cost grows with processes and
// distinct sites, never with events. LiveServer serves it on its own thread: non-blocking sends, and a viewer
// that has not taken the last snapshot gets only the newest one after it (updates are dropped, never events;
// the reader never waits on a viewer).
//
// Thread safety: LiveSites and LiveBooks on the reader thread (LiveBooks::final_snapshot() once the reader is
// done); LiveServer's publish() and wanted() from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dense_ids.h"
#include "lifecycle.h"
#include "memtrack/analysis/live_heap.h"
#include "memtrack/runtime/live.h"
#include "shared_ring.h"
#include "stack_tables.h"

namespace memtrack::runtime {

class LiveSites final : public analysis::HeapClient {
 public:
  struct Site {
    std::int32_t pid = 0;
    std::uint32_t stack = 0;
    std::uint64_t live_bytes = 0, live_count = 0, allocated_bytes = 0, allocations = 0;
  };
  // `stacks`: keep per-site books (without stacks, only the totals).
  explicit LiveSites(bool stacks) : stacks_(stacks) {}

  std::uint32_t allocated(const codec::Event& e, std::uint64_t index) override;
  // A fork child's inherited copy of its parent's block counts for the parent's site: its release is ignored.
  void released(std::int32_t pid, std::uint64_t addr, std::uint64_t size, std::uint32_t payload, bool inherited,
                Release how) override;
  void new_peak() override {}

  [[nodiscard]] const std::vector<Site>& sites() const { return sites_; }
  [[nodiscard]] std::uint64_t allocations() const { return allocations_; }
  [[nodiscard]] std::uint64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  bool stacks_;
  std::vector<Site> sites_;  // payload = index + 1
  // Per pid: stack id -> payload. Stack ids are node ids, dense from 1 in each process image: a vector
  // indexed by them (dense_ids.h) costs one cache miss an event where a hash table's probe was one too.
  std::map<std::int32_t, DenseIds<std::uint32_t>> by_pid_;  // node-based: sites_of_pid_ stays valid
  std::int32_t pid_ = 0;
  DenseIds<std::uint32_t>* sites_of_pid_ = nullptr;  // by_pid_[pid_]
  std::uint64_t allocations_ = 0, allocated_bytes_ = 0;
};

class LiveServer {
 public:
  // Makes the directory (make_live_directory()), binds and listens on live_socket_path(getpid()). Throws
  // std::runtime_error naming the path when it cannot.
  LiveServer();
  ~LiveServer();  // finish() if not done
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  // Starts serving: the greeting names `command`. Call with every signal blocked (the thread inherits it).
  void start(pid_t command);
  // Whether a snapshot is wanted: a viewer is connected (and, with `now_only`, one just connected and has
  // none yet).
  [[nodiscard]] bool viewers() const { return viewers_.load(std::memory_order_relaxed) != 0; }
  [[nodiscard]] bool wants_now() const { return want_now_.load(std::memory_order_relaxed); }
  // Any thread: the newest snapshot (encode_snapshot()), sent to every viewer as soon as it can take it.
  void publish(std::string snapshot);
  // The last snapshot: sent to every viewer (waiting at most kFinishWait for slow ones), then the sockets are
  // closed and the path removed. Idempotent.
  void finish(std::string last);

  static constexpr auto kFinishWait = std::chrono::milliseconds(300);

 private:
  struct Client {
    int fd = -1;
    std::string out;  // being sent
    std::size_t sent = 0;
    std::string next;  // the newest snapshot after `out`; an older one is dropped for it
  };
  void run();
  void accept_viewers();
  bool flush(Client& c);  // false: the viewer is gone

  std::string path_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd
  pid_t command_ = 0;
  std::atomic<int> viewers_{0};
  std::atomic<bool> want_now_{false};
  std::mutex mutex_;
  std::string latest_;           // under mutex_
  bool fresh_ = false;           // under mutex_: latest_ not handed to the clients yet
  bool closing_ = false;         // under mutex_
  std::vector<Client> clients_;  // the server thread only
  std::thread thread_;
  bool finished_ = false;
};

// Builds the snapshots (reader thread).
class LiveBooks {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr auto kInterval = std::chrono::seconds(1);
  // Rows and sites a snapshot carries: enough for any terminal's view.
  static constexpr std::size_t kProcesses = 32, kSitesPerRanking = 12, kProcessesWithSites = 8;

  LiveBooks(LiveServer& server, const analysis::LiveHeap& heap, const LiveSites& sites, const Lifecycle& lifecycle,
            const StackTables* stacks, SharedRing& ring, bool resident);

  // Reader thread, after each batch and idle round: publishes a snapshot when a viewer wants one and
  // kInterval passed since the last (at once for a viewer that just connected).
  void tick();
  // The snapshot of the end (after the reader's last read).
  [[nodiscard]] std::string final_snapshot() { return build(clock::now(), true); }

 private:
  std::string build(clock::time_point now, bool ended);
  std::string frame_of(std::int32_t pid, std::uint32_t stack) const;

  LiveServer& server_;
  const analysis::LiveHeap& heap_;
  const LiveSites& sites_;
  const Lifecycle& lifecycle_;
  const StackTables* stacks_;
  SharedRing& ring_;
  bool resident_;
  clock::time_point started_, last_;
  std::uint64_t sequence_ = 0, last_events_ = 0, last_allocations_ = 0, last_bytes_ = 0;
  std::vector<std::uint32_t> order_;  // reused: site indices being ranked
  std::vector<bool> chosen_;          // reused
};

}  // namespace memtrack::runtime
