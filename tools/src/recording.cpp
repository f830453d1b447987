#include "recording.h"

#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <type_traits>
#include <variant>

#include "artifact_bytes.h"
#include "file_symbolizer.h"
#include "io.h"
#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/indexed_file.h"
#include "memtrack/pipeline/fd_io.h"
#include "progress.h"

namespace memtrack::tools {
namespace {

// The stats and the sites as downstream consumers (of the region filter, or of the stats' own pass).
class Fanout final : public analysis::ArtifactConsumer {
 public:
  Fanout(analysis::Stats* stats, analysis::SiteAccumulator* sites, analysis::ArtifactConsumer* also = nullptr)
      : stats_(stats), sites_(sites), also_(also) {}
  void add_context(const codec::ContextRecord& r) override {
    if (stats_ != nullptr) stats_->add_context(r);
    if (sites_ != nullptr) sites_->add_context(r);
    if (also_ != nullptr) also_->add_context(r);
  }
  void add(std::span<const codec::Event> events) override {
    if (stats_ != nullptr) stats_->add(events);
    if (sites_ != nullptr) sites_->add(events);
    if (also_ != nullptr) also_->add(events);
  }

 private:
  analysis::Stats* stats_;
  analysis::SiteAccumulator* sites_;
  analysis::ArtifactConsumer* also_;
};

// Passes on one process image's events (its pid's, positioned in [start_event, end_event)) and the context
// records, with positions rewritten to count the passed events, except other pids' lifecycle and region
// records (their processes and regions are not the image's); EventStacks are rebuilt for the passed events
// and the StreamEnd is passed by finish() with the passed count. Records given early wait for their position.
class ImageFilter final : public analysis::ArtifactConsumer {
 public:
  ImageFilter(const analysis::ProcessImage& image, analysis::ArtifactConsumer& downstream)
      : pid_(image.pid),
        begin_(image.start_event.value_or(0)),
        end_(image.end_event.value_or(UINT64_MAX)),
        downstream_(downstream) {}

  void add_context(const codec::ContextRecord& record) override {
    const std::optional<std::uint64_t> at = analysis::position_of(record);
    if (at && *at > seen_) {
      const auto it = std::upper_bound(pending_.begin(), pending_.end(), *at,
                                       [](std::uint64_t p, const codec::ContextRecord& r) {
                                         return p < *analysis::position_of(r);
                                       });
      pending_.insert(it, record);
      return;
    }
    apply(record);
  }

  void add(std::span<const codec::Event> events) override {
    for (const codec::Event& e : events) {
      while (!pending_.empty() && *analysis::position_of(pending_.front()) <= seen_) {
        const codec::ContextRecord r = std::move(pending_.front());
        pending_.erase(pending_.begin());
        apply(r);
      }
      const std::uint64_t g = seen_++;
      if (e.pid != pid_ || g < begin_ || g >= end_) continue;
      while (!stacks_.empty() && stacks_.front().first_event + stacks_.front().ids.size() <= g) stacks_.pop_front();
      std::uint32_t id = 0;
      for (const codec::EventStacks& s : stacks_)
        if (g >= s.first_event && g < s.first_event + s.ids.size()) id = s.ids[g - s.first_event];
      batch_has_ids_ = batch_has_ids_ || !stacks_.empty();
      batch_.push_back(e);
      batch_ids_.push_back(id);
      ++passed_;
    }
    flush();
  }

  void finish() {
    for (const codec::ContextRecord& r : pending_) apply(r);
    pending_.clear();
    flush();
    if (end_record_) {
      end_record_->events = passed_;
      downstream_.add_context(*end_record_);
    }
  }

 private:
  void apply(const codec::ContextRecord& record) {
    if (const auto* es = std::get_if<codec::EventStacks>(&record)) {
      stacks_.push_back(*es);
      return;
    }
    if (const auto* end = std::get_if<codec::StreamEnd>(&record)) {
      end_record_ = *end;
      return;
    }
    const bool other = std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, codec::ProcessStart> || std::is_same_v<T, codec::ProcessExec> ||
                        std::is_same_v<T, codec::ProcessExit> || std::is_same_v<T, codec::RegionBegin> ||
                        std::is_same_v<T, codec::RegionEnd>)
            return x.pid != pid_;
          else if constexpr (std::is_same_v<T, codec::Untracked>)
            return x.pid.has_value() && *x.pid != pid_;
          else
            return false;
        },
        record);
    if (other) return;
    flush();  // the events before it go first: downstream, its position is the next passed event
    codec::ContextRecord copy = record;
    std::visit(
        [&](auto& x) {
          if constexpr (requires { x.event; }) x.event = passed_;
        },
        copy);
    downstream_.add_context(copy);
  }

  void flush() {
    if (batch_.empty()) return;
    if (batch_has_ids_) downstream_.add_context(codec::EventStacks{passed_ - batch_.size(), batch_ids_});
    downstream_.add(batch_);
    batch_.clear();
    batch_ids_.clear();
    batch_has_ids_ = false;
  }

  std::int32_t pid_;
  std::uint64_t begin_, end_;
  analysis::ArtifactConsumer& downstream_;
  std::uint64_t seen_ = 0, passed_ = 0;
  std::vector<codec::ContextRecord> pending_;  // by position
  std::deque<codec::EventStacks> stacks_;
  std::vector<codec::Event> batch_;
  std::vector<std::uint32_t> batch_ids_;
  bool batch_has_ids_ = false;
  std::optional<codec::StreamEnd> end_record_;
};

std::string basename_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The first image of `name`; throws NoSuchImage naming the images there are.
const analysis::ProcessImage& find_image(const analysis::Stats& stats, const std::string& name,
                                         const std::string& file) {
  std::vector<std::string> names;
  for (const analysis::ProcessImage& img : stats.heap.images()) {
    const std::string base = basename_of(img.executable);
    if (base == name) return img;
    if (!base.empty() && std::find(names.begin(), names.end(), base) == names.end()) names.push_back(base);
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw NoSuchImage("no process running " + name + " in " + file + " (images: " + (list.empty() ? "none known" : list) +
                    ")");
}

// One image of the file: a first pass finds it, a second reads only it.
// Progress is shown for the second pass only.
codec::Status read_image(int fd, const RecordingOptions& options, analysis::SiteAccumulator* sites,
                         const analysis::ProgressFn& progress, Recording& out) {
  const ArtifactBytes file(fd, out.name);
  close_fd(fd);
  analysis::Stats all;
  {
    Fanout fanout(&all, nullptr);
    analysis::ArtifactConsumer* consumers[] = {&fanout};
    analysis::PassSummary pass;
    if (const codec::Status s = analysis::read_artifact(file.bytes(), out.name, consumers, pass); !s.is_ok()) return s;
  }
  const analysis::ProcessImage& image = find_image(all, *options.pid_image, out.name);
  analysis::Regions regions;
  Fanout fanout(&out.stats, sites, options.region ? nullptr : &regions);
  std::optional<analysis::Regions> filter;
  if (options.region) filter.emplace(*options.region, &fanout);
  ImageFilter image_filter(image, filter ? static_cast<analysis::ArtifactConsumer&>(*filter) : fanout);
  analysis::ArtifactConsumer* consumers[] = {&image_filter};
  analysis::PassSummary pass;
  const codec::Status status = analysis::read_artifact(file.bytes(), out.name, consumers, pass, progress);
  image_filter.finish();
  if (filter) {
    filter->finish();
    out.region_occurrences = filter->selected_occurrences();
    out.occurrences = filter->occurrences();
  } else {
    regions.finish();
    out.occurrences = regions.occurrences();
  }
  return status;
}

}  // namespace

codec::Status read_recording(const std::string& path, const RecordingOptions& options, Recording& out) {
  out.name = path == "-" ? "stdin" : path;
  const int fd = open_input(path);
  struct stat st {};
  const std::uint64_t total = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  ProgressMeter meter(total);
  const auto progress = [&](std::uint64_t b, std::uint64_t e) { meter.update(b, e); };
  std::optional<analysis::SiteAccumulator> acc;
  if (options.sites) acc.emplace();
  analysis::SiteAccumulator* sites = acc ? &*acc : nullptr;
  codec::Status status;
  if (options.pid_image) {
    status = read_image(fd, options, sites, progress, out);
    meter.finish();
  } else if (options.region) {
    const ArtifactBytes file(fd, out.name);
    close_fd(fd);
    Fanout fanout(&out.stats, sites);
    analysis::Regions filter(*options.region, &fanout);
    analysis::ArtifactConsumer* consumers[] = {&filter};
    analysis::PassSummary pass;
    status = analysis::read_artifact(file.bytes(), out.name, consumers, pass, progress);
    filter.finish();
    meter.finish();
    out.region_occurrences = filter.selected_occurrences();
    out.occurrences = filter.occurrences();
  } else {
    std::optional<codec::SeekTable> index;
    // A bad index does not make the data unreadable (as `stats`: read sequentially), but the comparison of a
    // file whose end is damaged is refused below.
    const codec::Status index_status = analysis::load_index(fd, out.name, index);
    Fanout fanout(nullptr, sites);
    analysis::Regions regions;
    analysis::ArtifactConsumer* also[] = {&fanout, &regions};
    if (index) {
      out.stats = analysis::compute_stats_indexed(
          *index,
          [&](std::uint64_t offset, std::span<std::byte> buf) { return analysis::read_at(fd, out.name, offset, buf); },
          out.name, progress, 0, also);
    } else {
      pipeline::FdSource source(fd);
      out.stats = analysis::compute_stats(source, out.name, progress, also);
    }
    meter.finish();
    regions.finish();
    close_fd(fd);
    status = out.stats.status.is_ok() ? index_status : out.stats.status;
    out.occurrences = regions.occurrences();
  }
  if (!status.is_ok()) return status;
  if (acc) {
    out.has_stacks = acc->has_stacks();
    out.sites = acc->result(options.order, 0, file_symbolizer());
  }
  out.totals = analysis::run_totals(out.stats, out.sites ? &*out.sites : nullptr);
  return status;
}

}  // namespace memtrack::tools
