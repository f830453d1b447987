#include "memtrack/analysis/timeline.h"

#include <algorithm>
#include <numeric>
#include <type_traits>

namespace memtrack::analysis {

MaxSeries::MaxSeries(std::size_t max_points) : max_(std::max<std::size_t>(max_points, 2)) {}

void MaxSeries::add(std::uint64_t t, std::uint64_t value, std::uint64_t value2) {
  ++samples_;
  std::uint64_t i = t / width_;
  while (i >= max_) {
    // Twice as wide: bucket k takes old buckets 2k and 2k+1, each value the larger of the two.
    const std::size_t half = (buckets_.size() + 1) / 2;
    for (std::size_t k = 0; k < half; ++k) {
      Bucket merged = buckets_[2 * k];
      if (2 * k + 1 < buckets_.size()) {
        const Bucket& b = buckets_[2 * k + 1];
        if (b.used) {
          if (!merged.used || b.value > merged.value) {
            merged.t = b.t;
            merged.value = b.value;
          }
          merged.value2 = std::max(merged.value2, b.value2);
          merged.used = true;
        }
      }
      buckets_[k] = merged;
    }
    buckets_.resize(half);
    width_ *= 2;
    i = t / width_;
  }
  if (i >= buckets_.size()) buckets_.resize(static_cast<std::size_t>(i) + 1);
  Bucket& b = buckets_[static_cast<std::size_t>(i)];
  if (!b.used || value > b.value) {
    b.t = t;
    b.value = value;
  }
  b.value2 = b.used ? std::max(b.value2, value2) : value2;
  b.used = true;
}

std::vector<MaxSeries::Point> MaxSeries::points() const {
  std::vector<Point> out;
  for (const Bucket& b : buckets_)
    if (b.used) out.push_back({b.t, b.value, b.value2});
  return out;
}

namespace {

std::string command_of(const ProcessImage& img) {
  std::string s;
  if (!img.argv.empty()) {
    for (const std::string& a : img.argv) {
      if (!s.empty()) s += ' ';
      s += a;
    }
  } else {
    s = img.executable;
  }
  return s;
}

}  // namespace

TimelineBuilder::TimelineBuilder(LiveHeap& heap, std::size_t max_points, std::size_t max_images,
                                 std::optional<std::int32_t> pid)
    : heap_(heap),
      max_points_(max_points),
      max_images_(max_images),
      pid_(pid),
      total_(max_points),
      resident_total_(max_points) {}

// Images begin in order and never move (a deque), so the new ones are those past what was seen.
void TimelineBuilder::sync_images() {
  const auto& images = heap_.images();
  for (; images_seen_ < images.size(); ++images_seen_) {
    current_[images[images_seen_].pid] = images_seen_;
    tracks_.push_back({MaxSeries(max_points_), 0});
  }
}

void TimelineBuilder::recount_mapped() {
  total_mapped_ = 0;
  const auto& images = heap_.images();
  for (std::size_t i = 0; i < images.size(); ++i) {
    tracks_[i].last_mapped = images[i].end == ProcessImage::End::running ? images[i].heap.mapped_bytes : 0;
    if (!pid_ || images[i].pid == *pid_) total_mapped_ += tracks_[i].last_mapped;
  }
}

void TimelineBuilder::sample_total(std::uint64_t ts) {
  std::uint64_t live = heap_.total_live_bytes();
  if (pid_) {
    const auto it = current_.find(*pid_);
    const auto& images = heap_.images();
    live = it == current_.end() || images[it->second].end != ProcessImage::End::running
               ? 0
               : images[it->second].heap.live_bytes;
  }
  total_.add(rel(ts), live, total_mapped_);
}

void TimelineBuilder::add_resident(const codec::ContextRecord& record) {
  resident_.add(record, heap_);
  std::int32_t pid = 0;
  std::uint64_t ts = 0, bytes = 0;
  if (const auto* r = std::get_if<codec::Resident>(&record)) {
    pid = r->pid;
    ts = r->timestamp;
    bytes = r->resident();
  } else if (const auto* e = std::get_if<codec::ProcessExit>(&record)) {
    pid = e->pid;
    ts = e->timestamp;
  } else {
    return;
  }
  if (pid_ && pid != *pid_) return;
  const auto it = std::holds_alternative<codec::Resident>(record)
                      ? resident_pids_.try_emplace(pid, PidResidentTrack{MaxSeries(max_points_), 0}).first
                      : resident_pids_.find(pid);
  if (it == resident_pids_.end()) return;  // an exit of a process never sampled changes nothing
  const std::uint64_t t = origin_set_ ? rel(ts) : 0;
  it->second.series.add(t, bytes);
  it->second.peak = std::max(it->second.peak, bytes);
  resident_total_.add(t, pid_ ? bytes : resident_.current().resident);
}

void TimelineBuilder::add_context(const codec::ContextRecord& record) {
  heap_.add_context(record);
  add_resident(record);
  TimelineMarker m;
  if (const auto* s = std::get_if<codec::ProcessStart>(&record)) {
    m = {rel(s->timestamp), TimelineMarker::Kind::start, s->pid,
         "pid " + std::to_string(s->pid) + " from " + std::to_string(s->ppid)};
  } else if (const auto* x = std::get_if<codec::ProcessExec>(&record)) {
    std::string cmd;
    for (const std::string& a : x->argv) cmd += (cmd.empty() ? "" : " ") + a;
    m = {rel(x->timestamp), TimelineMarker::Kind::exec, x->pid, cmd.empty() ? x->executable : cmd};
  } else if (const auto* e = std::get_if<codec::ProcessExit>(&record)) {
    std::string how = e->signal   ? "killed by signal " + std::to_string(*e->signal)
                      : e->status ? "exit status " + std::to_string(*e->status)
                                  : std::string("exit");
    m = {rel(e->timestamp), TimelineMarker::Kind::exit, e->pid, std::move(how)};
  } else {
    return;
  }
  if (!origin_set_) m.t_ns = 0;  // before the first event: at the origin (the chart starts there)
  sync_images();
  recount_mapped();
  if (!pid_ || m.pid == *pid_) {
    const std::uint64_t abs = origin_set_ ? origin_ + m.t_ns : 0;
    markers_.push_back(m);
    if (origin_set_) sample_total(abs);  // an exit or exec changes the global heap
  }
}

void TimelineBuilder::add(std::span<const codec::Event> events) {
  for (const codec::Event& e : events) {
    if (!origin_set_) {
      origin_ = e.timestamp;
      origin_set_ = true;
    }
    heap_.add(std::span<const codec::Event>(&e, 1));
    sync_images();
    const auto it = current_.find(e.pid);
    if (it == current_.end()) continue;  // cannot happen: LiveHeap makes an image for every pid it sees
    const ProcessImage& img = heap_.images()[it->second];
    ImageTrack& track = tracks_[it->second];
    if (!pid_ || e.pid == *pid_) {
      total_mapped_ = total_mapped_ - track.last_mapped + img.heap.mapped_bytes;
      track.series.add(rel(e.timestamp), img.heap.live_bytes);
      sample_total(e.timestamp);
    }
    track.last_mapped = img.heap.mapped_bytes;
  }
}

Timeline TimelineBuilder::result() const {
  Timeline out;
  out.total = total_.points();
  out.samples = total_.samples();
  out.has_lifecycle = heap_.has_lifecycle();
  out.markers = markers_;
  if (pid_) {
    for (const auto& p : out.total)
      if (p.value > out.peak_bytes) {
        out.peak_bytes = p.value;
        out.peak_t_ns = p.t;
      }
  } else {
    out.peak_bytes = heap_.total_peak_bytes();
    out.peak_t_ns = rel(heap_.total_peak_timestamp());
  }
  out.resident = resident_total_.points();
  for (const auto& [pid, track] : resident_pids_)
    out.resident_pids.push_back({pid, track.peak, track.series.points()});
  std::stable_sort(out.resident_pids.begin(), out.resident_pids.end(),
                   [](const PidResidentSeries& a, const PidResidentSeries& b) { return a.peak_bytes > b.peak_bytes; });
  if (out.resident_pids.size() > max_images_) out.resident_pids.resize(max_images_);
  const auto& images = heap_.images();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < tracks_.size(); ++i)
    if (tracks_[i].series.samples() > 0 && images[i].heap.peak_bytes > 0) order.push_back(i);
  out.images_total = order.size();
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return images[a].heap.peak_bytes > images[b].heap.peak_bytes; });
  if (order.size() > max_images_) order.resize(max_images_);
  for (const std::size_t i : order) {
    const ProcessImage& img = images[i];
    ImageSeries s;
    s.pid = img.pid;
    s.image = i;
    const std::string cmd = command_of(img);
    s.label = "pid " + std::to_string(img.pid) + (cmd.empty() ? "" : " " + cmd);
    s.peak_bytes = img.heap.peak_bytes;
    s.points = tracks_[i].series.points();
    out.images.push_back(std::move(s));
  }
  return out;
}

}  // namespace memtrack::analysis
