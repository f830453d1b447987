// memtrack stats: what a trace did with memory (counts, peaks, leaks, sizes), from any artifact.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "args.h"
#include "artifact_bytes.h"
#include "artifact_command.h"
#include "commands.h"
#include "file_symbolizer.h"
#include "io.h"
#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/indexed_file.h"
#include "memtrack/analysis/regions.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/pipeline/fd_io.h"
#include "progress.h"
#include "regions_format.h"
#include "stats_format.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack stats FILE [--json] [--region NAME | --regions]\n\n"
    "Summarizes a MemtrackArtifact (FILE may be - for stdin): events by kind and by pid, bytes allocated,\n"
    "peak live heap per pid and when it happened, what is still live at the end (leaks), allocation sizes\n"
    "as a power-of-two histogram, duration, frames and compression ratio.\n\n"
    "  --json         one JSON document instead of the table\n"
    "  --region NAME  the stats of region NAME alone (memtrack/control.h): its occurrences summed, as one\n"
    "                 stream of the events inside them plus the later frees of the blocks they allocated, so\n"
    "                 peaks and leaks are those of the region's own blocks; then one row per occurrence\n"
    "  --regions      per region name (a benchmark's): its runs, each run's peak of its own blocks, bytes\n"
    "                 allocated, allocations and what is still live at its end, and min/median/max over the\n"
    "                 runs (JSON: {\"regions\": [{\"name\", \"runs\", \"per_run\", \"min\", \"median\", \"max\"}]})\n\n"
    "An artifact with regions or pauses (recorded with memtrack/control.h, --paused or 'memtrack ctl') lists\n"
    "them after the stats: per occurrence its events, allocations, bytes, frees of its own blocks and of older\n"
    "ones, peak and retained bytes of its own blocks (JSON: \"regions\", \"paused\").\n\n"
    "With a frame index (a seek table at the end of the file) frames are decoded in parallel; without one,\n"
    "sequentially. Live heap: Malloc, Calloc, AlignedAlloc and Realloc add, Free and Realloc's old address\n"
    "remove, per pid; Mmap/Munmap count as mapped bytes; Brk is counted but is not heap.\n\n"
    "With a context section (artifacts of `memtrack record`), the numbers follow the processes' lives: the\n"
    "peak counts only processes alive at the moment (a block a fork child inherited counts once, while its\n"
    "parent still holds it), an exec ends the old image's heap (shown as \"freed by exec\", not as leaks), a\n"
    "fork child starts with its parent's blocks (its frees of them match; those it still holds unchanged at\n"
    "its exit are its parent's, shown as \"inherited at exit\", not as its leaks), an exec of a program that\n"
    "cannot be tracked (static, setuid, setgid) ends the image as an exec does, and there is a row per process\n"
    "image with its command. Without one (older artifacts, other writers) the numbers are as before: every\n"
    "pid alive to the end, and a note says so (JSON: \"context\": false).\n"
    "JSON \"complete\": true when the writer's end mark is there (the End record, or the frame index), false\n"
    "when the artifact is damaged or was cut short, null when its writer leaves no mark (no index).\n\n"
    "On a damaged artifact the stats cover the events before the damage, one line on stderr names the\n"
    "frame and byte offset, and the exit status is 1. A damaged frame index is reported the same way after\n"
    "the stats, which are then computed sequentially.\n"
    "An artifact recorded with call stacks (a file or stdin) also lists its top leak sites: the call\n"
    "stacks of the most bytes still live at the end ('memtrack top FILE --by leaked' shows more).\n\n"
    "The table fits 100 columns: tables give bytes in binary units and times in milliseconds, a column that\n"
    "is 0 on every row is left out, a command too long for its row is cut (\"...\"), and a frame line names\n"
    "its module (then its source file) by file name when the whole path does not fit. --json has every\n"
    "number exact and every name whole.\n";

constexpr std::size_t kLeakSites = 5;

// The top leak sites of an artifact with call stacks, from the stats' own pass (a file or a pipe alike): the
// accumulator starts when a record before the first event says the artifact has stacks (our writer's
// Recording lists "stacks" and comes first), so an artifact without them costs nothing and prints what it
// always did. `late()`: the first stack record came after events (another writer), and only a second pass
// over a file can give the sites.
class LeakSites final : public analysis::ArtifactConsumer {
 public:
  void add_context(const codec::ContextRecord& r) override {
    const bool stacks = analysis::marks_stacks(r);
    if (!acc_ && stacks && !events_) acc_.emplace();
    if (acc_) {
      acc_->add_context(r);
    } else if (stacks) {
      late_ = true;
    }
  }
  void add(std::span<const codec::Event> events) override {
    events_ = events_ || !events.empty();
    if (acc_) acc_->add(events);
  }
  [[nodiscard]] bool late() const { return late_; }
  [[nodiscard]] std::optional<analysis::SitesResult> result() const {
    if (!acc_) return std::nullopt;
    return leaks_of(*acc_);
  }

  static analysis::SitesResult leaks_of(const analysis::SiteAccumulator& acc) {
    analysis::SitesResult r = acc.result(analysis::SiteOrder::leaked, kLeakSites, file_symbolizer());
    std::erase_if(r.sites, [](const analysis::Site& s) { return s.totals.leaked_bytes == 0; });
    return r;
  }

 private:
  std::optional<analysis::SiteAccumulator> acc_;
  bool events_ = false, late_ = false;
};

// The second pass for late stacks (a file only). nullopt when the sites cannot be read.
std::optional<analysis::SitesResult> late_leak_sites(int fd, const std::string& name) {
  if (fd == 0) return std::nullopt;
  const ArtifactBytes file(fd, name);
  analysis::SiteAccumulator acc;
  analysis::ArtifactConsumer* consumers[] = {&acc};
  analysis::PassSummary pass;
  if (!analysis::read_artifact(file.bytes(), name, consumers, pass).is_ok()) return std::nullopt;
  return LeakSites::leaks_of(acc);
}

// memtrack stats --region NAME: one pass through the region filter into the stats.
int region_stats(int fd, const std::string& name, const std::string& region, bool json, ProgressMeter& meter) {
  const ArtifactBytes file(fd, name);
  close_fd(fd);
  analysis::Stats stats;
  analysis::StatsConsumer consumer(stats);
  analysis::Regions regions(region, &consumer);
  analysis::ArtifactConsumer* consumers[] = {&regions};
  analysis::PassSummary pass;
  const codec::Status status = analysis::read_artifact(file.bytes(), name, consumers, pass,
                                                       [&](std::uint64_t b, std::uint64_t e) { meter.update(b, e); });
  regions.finish();
  meter.finish();
  stats.status = status;
  stats.file = analysis::file_summary(pass);
  if (regions.selected_occurrences() == 0 && status.is_ok()) {
    std::fprintf(stderr, "memtrack stats: %s has no region '%s' (its regions: %s)\n", name.c_str(), region.c_str(),
                 region_names(regions).c_str());
    return 1;
  }
  const std::uint64_t origin = stats.counts.events != 0 ? stats.counts.first_timestamp : 0;
  std::string text;
  if (json) {
    text = splice_json(format_stats_json(stats, nullptr, false),
                       format_region_json_member(region, regions.selected_occurrences()) + "," +
                           format_regions_json_members(regions, origin, &region));
  } else {
    text = "region " + region + ": " + std::to_string(regions.selected_occurrences()) +
           " occurrence(s), summed (events inside them, and later frees of their blocks)\n" +
           format_stats_table(stats, nullptr, false) + format_regions_table(regions, origin, &region);
  }
  print_stdout(text);
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack stats: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int run_stats(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  const bool json = args.flag("json");
  const bool by_region = args.flag("regions");
  const ArtifactArgs a = parse_artifact_args(args, {.pid = false, .region = true, .default_output = {}});
  const std::optional<std::string>& region = a.region;
  const std::string& name = a.name;
  if (by_region && region) throw UsageError("--regions and --region: choose one");
  if (by_region) return run_stats_regions(a.input, json);
  const int fd = open_input(a.input);
  std::optional<codec::SeekTable> index;
  // A bad index does not make the data unreadable: read sequentially (a plain decoder skips the index's
  // skippable frame), then report the bad index with exit status 1.
  const codec::Status index_status = analysis::load_index(fd, name, index);
  struct stat st {};
  const std::uint64_t total = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  ProgressMeter meter(total);
  if (region) return region_stats(fd, name, *region, json, meter);
  const analysis::ProgressFn progress = [&](std::uint64_t bytes, std::uint64_t events) { meter.update(bytes, events); };
  // The context section (process lifecycle, stacks) comes with the frames, in the same pass, from a file or
  // a pipe: the stats and the leak sites are fed together.
  LeakSites sites;
  analysis::Regions regions;  // the regions and pauses, listed after the stats when there are any
  analysis::ArtifactConsumer* also[] = {&sites, &regions};
  analysis::Stats stats;
  if (index) {
    stats = analysis::compute_stats_indexed(
        *index,
        [&](std::uint64_t offset, std::span<std::byte> out) { return analysis::read_at(fd, name, offset, out); }, name,
        progress, 0, also);
  } else {
    pipeline::FdSource source(fd);
    stats = analysis::compute_stats(source, name, progress, also);
  }
  meter.finish();
  regions.finish();
  // On damage, no leak sites (the sites of a prefix would read as the artifact's).
  std::optional<analysis::SitesResult> leaks;
  if (stats.status.is_ok()) leaks = sites.late() ? late_leak_sites(fd, name) : sites.result();
  close_fd(fd);
  const codec::Status status = stats.status.is_ok() ? index_status : stats.status;
  // On damage, the stats of the events before it, then the error.
  if (stats.file.frames > 0 || stats.status.is_ok()) {
    const analysis::SitesResult* l = leaks ? &*leaks : nullptr;
    std::string text = json ? format_stats_json(stats, l) : format_stats_table(stats, l);
    // Only an artifact with regions or pauses lists them: the output of the others stays what it was.
    if (!regions.occurrences().empty() || !regions.paused().empty()) {
      const std::uint64_t origin = stats.counts.events != 0 ? stats.counts.first_timestamp : 0;
      text = json ? splice_json(std::move(text), format_regions_json_members(regions, origin))
                  : text + format_regions_table(regions, origin);
    }
    print_stdout(text);
  }
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack stats: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace memtrack::tools
