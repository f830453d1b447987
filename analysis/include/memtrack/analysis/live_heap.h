// The live-heap model: which heap blocks and mappings each process image holds, event by event, and the
// peaks; the one model behind every command's heap figures and the recorder's summary line. Its rules (what
// a free, a realloc, a fork, an exec and an exit do to the books, what counts as leaked) are in
// docs/ACCOUNTING.md; which kinds allocate is event_kinds.h.
//
// Memory: one table entry per live block per image; a fork child copies its parent's table once (its tags
// are two bits of each stored size, no second table), its mappings too.
//
// Order matters (an allocation must be seen before its free, a record before the events after its
// position), so a LiveHeap is fed every event exactly once, in artifact order, from one thread at a time.
// Records may be given early (their effect waits for their position), or late (applied at once, counted in
// late_records()). Not thread-safe, const calls included (pids() fills a cache); no allocation per event
// except when a pid, a block table's growth or a mapping is new.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtrack/analysis/address_map.h"
#include "memtrack/analysis/stream_order.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"

namespace memtrack::analysis {

struct PidHeap {
  std::uint64_t live_bytes = 0, live_count = 0;  // at the end: what leaked
  std::uint64_t peak_bytes = 0, peak_timestamp = 0;
  std::uint64_t mapped_bytes = 0, peak_mapped_bytes = 0, peak_mapped_timestamp = 0;
  std::uint64_t unmatched_frees = 0, unmatched_munmaps = 0;
  std::uint64_t events = 0;  // events of this image (pids(): of the pid)
};

// One process image: a pid from its start (or first event) to its exec or exit, or one of its exec'd images.
struct ProcessImage {
  enum class End : std::uint8_t { running, exec, exit };
  std::int32_t pid = 0;
  std::optional<std::int32_t> ppid;  // known from a ProcessStart
  std::uint32_t image = 0;           // 0: the image the process started with; n: after its n-th Exec
  bool forked = false;               // runs the image its parent had at the fork (it did not exec yet)
  std::string executable;            // empty when unknown (no context, or a process of unknown origin)
  std::vector<std::string> argv;
  End end = End::running;
  std::optional<std::int32_t> exit_status, exit_signal;  // end == exit, when known
  std::optional<std::uint64_t> start_event, end_event;   // positions of the records that began / ended it
  std::string untracked;  // the Untracked record's reason ("static", ...) for an image memtrack cannot track
  PidHeap heap;           // live_*: leaks when end == exit (still live when running; 0 after an exec)
  std::uint64_t inherited_bytes = 0, inherited_count = 0;  // the copy of the parent's blocks at the fork
  // Of those, the ones held unchanged (never freed, reallocated or replaced by it) at its exit, or, while it
  // runs, now. At an exit they leave live_*; while it runs they are in live_* (more events could free them).
  std::uint64_t inherited_at_exit_bytes = 0, inherited_at_exit_count = 0;
  std::uint64_t freed_by_exec_bytes = 0, freed_by_exec_count = 0;

  // What the image leaks: the blocks it holds at its exit, or at the recording's end while it still runs,
  // but the unchanged copies of its parent's blocks (the parent's leaks, counted once, by the parent).
  [[nodiscard]] std::uint64_t leaked_bytes() const {
    return end == End::running ? heap.live_bytes - inherited_at_exit_bytes : heap.live_bytes;
  }
  [[nodiscard]] std::uint64_t leaked_count() const {
    return end == End::running ? heap.live_count - inherited_at_exit_count : heap.live_count;
  }
};

// Whether an Untracked record says its pid execs an image memtrack cannot track (reason "static" or
// "setuid", "setgid", "no-access", pid known): the lifecycle rule above, shared with the sites' books (sites.h).
[[nodiscard]] bool untracked_exec(const codec::Untracked& record);

// A client of a LiveHeap: attributes the live heap (to sites, and later to resident memory) from the heap's
// own books, without a second copy of the blocks. Each block carries a 32-bit payload the client chose at its
// allocation. Called from inside LiveHeap::add() and add_context(), in stream order.
class HeapClient {
 public:
  enum class Release : std::uint8_t {
    freed,     // by a Free, or a Realloc's old address
    replaced,  // a new block at its address (a missed free)
    exec,      // its image exec'd (or exec'd an untracked image): gone with the address space
    exit,      // its image exited (or its pid was reused): a leak of that image
  };
  virtual ~HeapClient() = default;
  // Event `index` (counting the events given to add() from 0) allocates: the payload of its block.
  virtual std::uint32_t allocated(const codec::Event& e, std::uint64_t index) = 0;
  // A block left its image's books. `inherited`: a fork child's copy of its parent's block, never freed nor
  // reallocated by the child (its payload is the parent's; for exit, the heap does not count it a leak).
  virtual void released(std::int32_t pid, std::uint64_t addr, std::uint64_t size, std::uint32_t payload,
                        bool inherited, Release how) = 0;
  // The global live heap (total_live_bytes) reached a new peak, after the changes that made it.
  virtual void new_peak() = 0;
};

class LiveHeap {
 public:
  LiveHeap() = default;
  // Copies and moves keep the books consistent (they hold pointers into the results, between images, and a
  // cache of the last pid's books); a moved-from LiveHeap is empty. A copy has no client; a move keeps it.
  LiveHeap(const LiveHeap& other);
  LiveHeap(LiveHeap&& other) noexcept;
  LiveHeap& operator=(const LiveHeap& other);
  LiveHeap& operator=(LiveHeap&& other) noexcept;
  ~LiveHeap() = default;

  void add(std::span<const codec::Event> events);  // in artifact order

  // Tells `client` (not owned; null: none) of every block change from now on. Before the first event.
  void set_client(HeapClient* client) { client_ = client; }
  // Calls f(pid, size, payload, inherited) on every block of the images still running.
  template <typename F>
  void for_each_live_block(F&& f) const {
    for (const auto& entry : books_) {
      const auto pid = entry.first;  // a named copy: clang 14 cannot capture a structured binding
      entry.second.live.for_each([&](std::uint64_t, std::uint64_t stored, std::uint32_t payload) {
        f(pid, stored & kSizeMask, payload, (stored & kInherited) != 0);
      });
    }
  }

  // Calls f(addr, size, payload, inherited) on every block of pid's current image (none when it has ended).
  template <typename F>
  void for_each_live_block_of(std::int32_t pid, F&& f) const {
    const auto it = books_.find(pid);
    if (it == books_.end()) return;
    it->second.live.for_each([&](std::uint64_t addr, std::uint64_t stored, std::uint32_t payload) {
      f(addr, stored & kSizeMask, payload, (stored & kInherited) != 0);
    });
  }

  // A context record: ProcessStart, Exec, ProcessExit and an image's Untracked take effect before the event
  // at their position (`event`, counting the events given to add() from 0); other records are ignored here
  // (Stats keeps them).
  void add_context(const codec::ContextRecord& record);

  // Whether any lifecycle record was applied: without, every number is the version-1 model's.
  [[nodiscard]] bool has_lifecycle() const { return lifecycle_; }
  [[nodiscard]] std::uint64_t events() const { return events_seen_; }
  // Records given after the events at their position had been added (applied late: a reader out of order).
  [[nodiscard]] std::uint64_t late_records() const { return late_; }
  // Records whose position lies beyond the events added so far (a stream cut short, or a wrong position).
  [[nodiscard]] std::size_t pending_records() const { return pending_.size(); }

  // Every image, in the order they began. References stay valid while events and records are added.
  [[nodiscard]] const std::deque<ProcessImage>& images() const { return images_; }
  // Every pid seen in the events or records, whatever their kinds, summed over its images: events, live
  // (leaked_*() of each image), mapped and unmatched are sums, peaks the largest image's. Valid until the next add or add_context.
  [[nodiscard]] const std::map<std::int32_t, PidHeap>& pids() const;
  // The global live heap now (images alive), and the peak of that sum and when it happened.
  [[nodiscard]] std::uint64_t total_live_bytes() const { return total_live_; }
  // Live heap bytes of the pid's current image (0 for a pid not seen).
  [[nodiscard]] std::uint64_t live_bytes_of(std::int32_t pid) const {
    const auto it = books_.find(pid);
    return it == books_.end() ? 0 : it->second.heap->live_bytes;
  }
  [[nodiscard]] std::uint64_t total_peak_bytes() const { return total_peak_; }
  [[nodiscard]] std::uint64_t total_peak_timestamp() const { return total_peak_ts_; }

 private:
  struct Books {
    std::size_t image = 0;                            // index in images_
    PidHeap* heap = nullptr;                          // &images_[image].heap
    AddressMap live;                                  // addr -> size, tagged (live_heap.cpp: kInherited, kShared)
    std::map<std::uint64_t, std::uint64_t> mappings;  // start -> length, non-overlapping
    // Inherited blocks still held unchanged are tagged kInherited (their sums: the image's
    // inherited_at_exit_*); of those, the ones the parent image still counts (tagged kShared), and that
    // parent's books (null once it ended: kShared tags are stale then).
    std::uint64_t shared_bytes = 0, shared_count = 0;
    Books* parent = nullptr;
    std::vector<Books*> sharers;  // children whose `shared` refers to this image
  };
  Books& books_of(std::int32_t pid);
  Books& new_image(std::int32_t pid);
  void add_span(std::span<const codec::Event> events);
  void apply(const codec::ContextRecord& record);
  void release(Books& b, std::uint64_t addr, std::uint64_t size, std::uint64_t& total_live);
  void tell_release(std::int32_t pid, std::uint64_t addr, std::uint64_t stored, std::uint32_t payload,
                    HeapClient::Release how);
  void unshare_children(Books& b, std::uint64_t addr, std::uint64_t& total_live);
  void end_image(std::int32_t pid, ProcessImage::End how, std::uint64_t event, std::uint64_t ts);
  void sample_peak(std::uint64_t ts);
  void relink(const LiveHeap& from);
  void map(Books& b, std::uint64_t addr, std::uint64_t size, std::uint64_t ts);
  void unmap(Books& b, std::uint64_t addr, std::uint64_t size);

  // A block's stored size carries two tags in its top bits (live_heap.cpp).
  static constexpr std::uint64_t kInherited = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kShared = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kSizeMask = kShared - 1;

  HeapClient* client_ = nullptr;
  std::deque<ProcessImage> images_;  // the results, in the order images began
  // The current image of each pid. Node-based: references stay valid as pids are added, so the last pid's
  // books can be cached, and children can point at their parent's.
  std::unordered_map<std::int32_t, Books> books_;
  std::int32_t last_pid_ = 0;
  Books* last_ = nullptr;  // the last pid's books: pids repeat in long runs
  std::uint64_t total_live_ = 0, total_peak_ = 0, total_peak_ts_ = 0;
  std::uint64_t last_ts_ = 0;  // the last event's timestamp: when an Untracked record (which has none) applies
  std::uint64_t events_seen_ = 0, late_ = 0;
  bool lifecycle_ = false;
  PositionQueue pending_;  // lifecycle records given before their position
  mutable std::map<std::int32_t, PidHeap> pids_;
  mutable bool pids_dirty_ = true;
};

}  // namespace memtrack::analysis
