#include "recording.h"

#include <sys/stat.h>

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
  Fanout(analysis::Stats* stats, analysis::SiteAccumulator* sites) : stats_(stats), sites_(sites) {}
  void add_context(const codec::ContextRecord& r) override {
    if (stats_ != nullptr) stats_->add_context(r);
    if (sites_ != nullptr) sites_->add_context(r);
  }
  void add(std::span<const codec::Event> events) override {
    if (stats_ != nullptr) stats_->add(events);
    if (sites_ != nullptr) sites_->add(events);
  }

 private:
  analysis::Stats* stats_;
  analysis::SiteAccumulator* sites_;
};

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
  if (options.region) {
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
