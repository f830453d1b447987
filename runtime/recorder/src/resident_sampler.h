// The resident sampler (docs/RUNTIME.md, "Resident memory"): a recorder thread that follows every tracked
// process's resident memory in /proc and writes a NoteResident into the ring when it moved, so each sample
// becomes a `Resident` record positioned among the events as causally as a lifecycle note (the ticket is
// taken after the read).
//
// How often: /proc/<pid>/statm (the cheapest read, docs/RUNTIME.md) is polled every kMinPoll while the process's
// resident size moves, backing off to kMaxPoll while it stays put. A sample (status: the anon/file/shmem/swap
// split and VmHWM, about ten statm reads) is written when the resident size reached a new high by 1%, or moved by 1% (at
// least kMinStep) and kMinGap passed since the last sample, or settled (unchanged since the last poll) at
// least kMinStep away from the last sample (so a plateau just short of the 1% step is sampled); and when the kernel's VmHWM, read every
// kHwmCheck, shows a high the samples missed. Each sample also counts memtrack's own pages (its memfds'; proc.h,
// resident_bytes_of_mapping) and leaves them out. Cost bound: the thread measures its own CPU time and stretches
// every poll interval while it exceeds kCpuBudget of one core.
//
// Resident pages (docs/RUNTIME.md, "Resident pages"): when a process's resident anonymous memory (statm's
// resident - shared) reaches a new high of at least kPagesStep and 1/8 above its last snapshot, or settles
// (unchanged since the last poll) at least kPagesSettledStep and 1/64 above it, and the time since its last
// snapshot is at least that snapshot's wall time / kPagesShare, the sampler reads the present bits of its
// anonymous mappings (proc.h: read_anon_pages), parks them in `pages` and writes a NoteResidentPages, which
// becomes a ResidentPages record at its position. Snapshots only grow, so a process gets a bounded number of
// them, and they take at most kPagesShare of the wall time per process; one whose pages cannot be read (EPERM,
// ended) gets none from then on.
//
// Thread safety: watch() from any thread (the reader's, through Lifecycle::on_new_process); everything else
// on the sampler's own thread, until stop().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "page_snapshots.h"
#include "shared_ring.h"

namespace memtrack::runtime {

struct ResidentCost {
  std::uint64_t polls = 0;      // statm reads
  std::uint64_t samples = 0;    // notes written
  std::uint64_t own_scans = 0;  // maps + pagemap reads for memtrack's own pages (one per sample)
  std::uint64_t page_snapshots = 0;      // ResidentPages snapshots parked and noted
  std::uint64_t snapshot_bytes = 0;      // mapped anonymous bytes their bits cover
  std::uint64_t snapshot_failures = 0;   // processes whose pages could not be read
  double snapshot_cpu_seconds = 0;       // the sampler thread's CPU time in them (in cpu_seconds too)
  double snapshot_max_seconds = 0;       // the longest one, wall
  double cpu_seconds = 0;       // the sampler thread's CPU time
  double wall_seconds = 0;      // from start to stop()
};

class ResidentSampler {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr auto kMinPoll = std::chrono::milliseconds(1);
  static constexpr auto kMaxPoll = std::chrono::milliseconds(32);
  static constexpr auto kMinGap = std::chrono::milliseconds(20);
  static constexpr auto kHwmCheck = std::chrono::milliseconds(100);
  static constexpr std::uint64_t kMinStep = 256 << 10;
  static constexpr double kCpuBudget = 0.015;
  static constexpr std::uint64_t kPagesStep = 4 << 20;
  static constexpr std::uint64_t kPagesSettledStep = 512 << 10;
  static constexpr double kPagesShare = 0.02;

  // Starts the thread (call with every signal blocked: it inherits the mask). `pages` (may be null: no page
  // snapshots) must outlive it.
  ResidentSampler(SharedRing& ring, PageSnapshots* pages);
  ~ResidentSampler();
  ResidentSampler(const ResidentSampler&) = delete;
  ResidentSampler& operator=(const ResidentSampler&) = delete;

  // A tracked process started: sampled from now on, the first time at once.
  void watch(std::int32_t pid);
  // Ends the thread; idempotent. Returns what sampling cost.
  ResidentCost stop();

 private:
  struct Process {
    std::int32_t pid = 0;
    int statm = -1, status = -1;
    clock::duration interval = kMinPoll;
    clock::time_point next_poll, last_sample, last_hwm_check;
    bool sampled = false;
    std::uint64_t last_resident = 0;  // statm's, memtrack's pages included
    std::uint64_t own = 0;  // memtrack's own resident bytes in this process (its memfds' pages), at the last sample
    std::uint64_t own_anon = 0, own_shared = 0;  // of which private copies (RssAnon) and file pages (RssShmem)
    std::uint64_t sampled_resident = 0, sampled_high = 0;  // the program's, at the last sample and its highest
    std::uint64_t snapshot_anon = 0;  // resident anonymous bytes at the last page snapshot
    clock::time_point next_snapshot;  // the earliest the next may start (kPagesShare)
    bool pages_unreadable = false;
  };
  void run();
  bool poll(Process& p, clock::time_point now, double stretch);
  void sample(Process& p, clock::time_point now);
  void scan_own(Process& p);
  void snapshot(Process& p, std::uint64_t anon, clock::time_point now);

  SharedRing& ring_;
  PageSnapshots* pages_;
  std::uint64_t next_snapshot_id_ = 1;
  std::vector<std::uint64_t> pagemap_scratch_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::int32_t> incoming_;  // guarded by mutex_
  bool stop_ = false;                   // guarded by mutex_
  std::vector<Process> processes_;      // the sampler's thread only
  ResidentCost cost_;
  clock::time_point started_;
  std::thread thread_;
};

}  // namespace memtrack::runtime
