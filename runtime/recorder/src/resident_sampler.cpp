#include "resident_sampler.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "memtrack/runtime/ring.h"
#include "proc.h"

namespace memtrack::runtime {
namespace {

// What memtrack's own mappings (the ring, the preload's tables: ring.h, kOwnMemfdPrefix) are called in
// /proc/<pid>/maps.
const std::string& own_mapping() {
  static const std::string name = std::string("memfd:") + kOwnMemfdPrefix;
  return name;
}

double thread_cpu_seconds() {
  struct timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int open_proc(std::int32_t pid, const char* file) {
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
  return ::open(path, O_RDONLY | O_CLOEXEC);
}

// How far the program's resident size must move before it is worth a sample: 1%, at least kMinStep.
std::uint64_t step_of(std::uint64_t bytes) { return std::max(bytes / 100, ResidentSampler::kMinStep); }

}  // namespace

ResidentSampler::ResidentSampler(SharedRing& ring, PageSnapshots* pages)
    : ring_(ring), pages_(pages), started_(clock::now()) {
  thread_ = std::thread([this] { run(); });
}

ResidentSampler::~ResidentSampler() { stop(); }

void ResidentSampler::watch(std::int32_t pid) {
  {
    const std::lock_guard lock(mutex_);
    incoming_.push_back(pid);
  }
  wake_.notify_one();
}

ResidentCost ResidentSampler::stop() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
    cost_.wall_seconds = std::chrono::duration<double>(clock::now() - started_).count();
  }
  return cost_;
}

// memtrack's resident pages in the process, now: the ring's pages only grow (touched lap by lap, never
// unmapped), the tables' too (nodes are never removed), but a sample's figures need them as of the sample.
void ResidentSampler::scan_own(Process& p) {
  const MappingResident own =
      resident_bytes_of_mapping(p.pid, own_mapping().c_str(), kTablesMemfdName, pagemap_scratch_);
  p.own_anon = own.anon;
  p.own_shared = own.shared;
  p.own = own.anon + own.shared;
  ++cost_.own_scans;
}

void ResidentSampler::sample(Process& p, clock::time_point now) {
  scan_own(p);
  StatusMemory m;
  if (!read_status_memory(p.status, m)) return;  // ended meanwhile: the next poll drops it
  // The two reads are not one instant: a count a little past what status shows is clamped.
  const std::uint64_t own_anon = std::min(p.own_anon, m.anon), own_shared = std::min(p.own_shared, m.shmem);
  const RingResidentPayload payload{m.anon - own_anon,     m.file, m.shmem - own_shared, m.swap,
                                    own_anon + own_shared, m.hwm};
  if (!ring_.write_note(RingEventKind::NoteResident, p.pid, 0, 0,
                        {reinterpret_cast<const char*>(&payload), sizeof payload}))
    return;  // the ring is detached: the recording is over
  const std::uint64_t program = payload.anon + payload.file + payload.shmem;
  p.sampled = true;
  p.sampled_resident = program;
  p.sampled_high = std::max(p.sampled_high, program);
  p.last_sample = p.last_hwm_check = now;
  ++cost_.samples;
}

void ResidentSampler::snapshot(Process& p, std::uint64_t anon, clock::time_point now) {
  const double cpu = thread_cpu_seconds();
  const clock::time_point start = clock::now();
  codec::ResidentPages pages;
  if (!read_anon_pages(p.pid, pages, pagemap_scratch_)) {
    p.pages_unreadable = true;
    ++cost_.snapshot_failures;
    return;
  }
  for (const std::uint64_t n : pages.pages) cost_.snapshot_bytes += n * pages.page_size;
  const std::uint64_t id = next_snapshot_id_++;
  pages_->put(id, std::move(pages));
  if (!ring_.write_note(RingEventKind::NoteResidentPages, p.pid, id)) {
    (void)pages_->take(id);  // the ring is detached: the recording is over
    return;
  }
  const clock::duration took = clock::now() - start;
  p.snapshot_anon = anon;
  p.next_snapshot = now + std::chrono::duration_cast<clock::duration>(took / kPagesShare);
  ++cost_.page_snapshots;
  cost_.snapshot_cpu_seconds += thread_cpu_seconds() - cpu;
  cost_.snapshot_max_seconds = std::max(cost_.snapshot_max_seconds, std::chrono::duration<double>(took).count());
}

// One statm read, and a sample when the rules of the header call for one. False: the process has ended.
bool ResidentSampler::poll(Process& p, clock::time_point now, double stretch) {
  Statm st;
  if (!read_statm(p.statm, st)) return false;
  ++cost_.polls;
  const bool moved = !p.sampled || st.resident != p.last_resident;
  p.last_resident = st.resident;
  p.interval = moved ? clock::duration(kMinPoll) : std::min<clock::duration>(p.interval * 2, kMaxPoll);
  p.next_poll = now + std::chrono::duration_cast<clock::duration>(p.interval * stretch);
  // Between samples, memtrack's pages as of the last one (they only grow: the program's figure errs high, so a
  // sample may come a little early, never late).
  const std::uint64_t program = st.resident - std::min(p.own, st.resident);
  const std::uint64_t moved_by =
      program > p.sampled_resident ? program - p.sampled_resident : p.sampled_resident - program;
  if (!p.sampled || program >= p.sampled_high + step_of(p.sampled_high) ||
      (moved_by >= step_of(p.sampled_resident) && now - p.last_sample >= kMinGap) ||
      (!moved && moved_by >= kMinStep && now - p.last_sample >= kMinGap)) {
    sample(p, now);
  } else if (now - p.last_hwm_check >= kHwmCheck) {
    // A high between two polls: the kernel's high-water mark has passed every sample.
    p.last_hwm_check = now;
    StatusMemory m;
    if (read_status_memory(p.status, m) && m.hwm > p.own && m.hwm - p.own >= p.sampled_high + step_of(p.sampled_high)) {
      sample(p, now);
      p.interval = kMinPoll;
    }
  }
  // A page snapshot at a new high of anonymous memory (the header's rules).
  const std::uint64_t anon = st.resident > st.shared ? st.resident - st.shared : 0;
  if (pages_ != nullptr && !p.pages_unreadable && now >= p.next_snapshot) {
    const std::uint64_t base = p.snapshot_anon;
    if (anon >= base + std::max(base / 8, kPagesStep) ||
        (!moved && anon >= base + std::max(base / 64, kPagesSettledStep)))
      snapshot(p, anon, now);
  }
  return true;
}

void ResidentSampler::run() {
  double stretch = 1;
  clock::time_point budget_at = clock::now();
  double budget_cpu = thread_cpu_seconds();
  std::vector<std::int32_t> incoming;
  clock::time_point next = clock::now();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, next, [&] { return stop_ || !incoming_.empty(); });
      if (stop_) break;
      incoming.swap(incoming_);
    }
    const clock::time_point now = clock::now();
    for (const std::int32_t pid : incoming) {
      Process p;
      p.pid = pid;
      p.statm = open_proc(pid, "statm");
      p.status = open_proc(pid, "status");
      if (p.statm < 0 || p.status < 0) {  // ended already, or /proc hides it: never sampled
        if (p.statm >= 0) ::close(p.statm);
        if (p.status >= 0) ::close(p.status);
        continue;
      }
      p.next_poll = now;
      processes_.push_back(p);
    }
    incoming.clear();
    // Due within half the shortest interval: polled in this wake-up too, so processes share wake-ups (a
    // wake-up costs more than the statm read).
    const clock::time_point due = now + kMinPoll / 2;
    std::erase_if(processes_, [&](Process& p) {
      if (p.next_poll > due || poll(p, now, stretch)) return false;
      ::close(p.statm);
      ::close(p.status);
      return true;
    });
    // The budget: over each quarter second, the thread's CPU time against the wall time.
    if (now - budget_at >= std::chrono::milliseconds(250)) {
      const double cpu = thread_cpu_seconds();
      const double share = (cpu - budget_cpu) / std::chrono::duration<double>(now - budget_at).count();
      if (share > kCpuBudget)
        stretch = std::min(stretch * 2, 64.0);
      else if (share < kCpuBudget / 3)
        stretch = std::max(stretch / 2, 1.0);
      budget_at = now;
      budget_cpu = cpu;
    }
    next = now + std::chrono::seconds(1);
    for (const Process& p : processes_) next = std::min(next, p.next_poll);
  }
  for (const Process& p : processes_) {
    ::close(p.statm);
    ::close(p.status);
  }
  processes_.clear();
  cost_.cpu_seconds = thread_cpu_seconds();
}

}  // namespace memtrack::runtime
