// `memtrack report`'s data: one pass over an artifact (analysis::read_artifact) into the live heap and its
// timeline, the counts, and the allocation sites, then the page's JSON (tools/report/report_html.h documents
// the schema). `memtrack export` reads the sites the same way (read_export_sites).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/flame.h"
#include "memtrack/analysis/regions.h"
#include "memtrack/analysis/run_compare.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/analysis/timeline.h"
#include "memtrack/codec/status.h"

namespace memtrack::tools {

struct ReportOptions {
  std::optional<std::int32_t> pid;  // only this process (timeline, sites); the summary stays whole
  // Only this region (memtrack/control.h): everything is of the region filter's stream (analysis/regions.h)
  std::optional<std::string> region;
  std::size_t max_points = 2000;  // per time series
  std::size_t max_images = 32;    // per-process series charted
  std::size_t top_sites = 50;     // rows per ranking
  double prune_fraction = 0.001;  // flame-graph frames below this fraction of the root are dropped
  bool keep_sites = false;        // keep every site (ReportData::all_sites), for add_baseline
};

// The recording a report is compared with (`memtrack report --baseline`).
struct ReportBaseline {
  std::string artifact;
  analysis::RunTotals totals, head_totals;  // what `memtrack diff` compares
  analysis::Timeline timeline;              // its heap over time, drawn beside head's
  bool has_stacks = false;
  bool differential = false;  // the flame graphs pair both sides' sites (both have call stacks)
};

struct ReportData {
  std::string artifact;  // the name shown (the file's name)
  ReportOptions options;
  analysis::Stats stats;  // counts, the live heap (driven by the timeline), context records, file summary
  analysis::PassSummary pass;
  analysis::Timeline timeline;
  bool has_stacks = false;
  std::size_t sites = 0;  // distinct stacks
  std::optional<analysis::FlameGraph> flame_peak, flame_allocated, flame_leaked;
  // Resident bytes per site at the page snapshots (`memtrack top --by resident`'s figures): only when the
  // artifact has ResidentPages records (has_resident_pages).
  std::optional<analysis::FlameGraph> flame_resident;
  bool has_resident_pages = false;
  std::vector<std::pair<analysis::SiteOrder, analysis::SitesResult>> top;  // every ranking, its first rows
  codec::Status status;  // not ok: damaged input, the report covers what was read before the damage
  std::vector<analysis::RegionOccurrence> regions;  // every occurrence, drawn on the time axis
  std::vector<analysis::PausedSpan> paused;         // where recording was paused, shaded on the time axis
  std::uint64_t region_occurrences = 0;             // of options.region
  std::set<std::int32_t> processes;                 // every pid of the artifact (ProcessList), for --pid
  std::optional<analysis::SitesResult> all_sites;   // with ReportOptions::keep_sites and call stacks
  std::optional<ReportBaseline> baseline;           // add_baseline
};

// Reads `file` and computes everything the page shows. `symbolizer` names frames of modules the artifact has
// no Symbols for (tools/src/file_symbolizer.h; empty: module + offset).
ReportData build_report(std::span<const std::byte> file, const std::string& name, const ReportOptions& options,
                        const analysis::ProgressFn& progress = {}, const analysis::ModuleSymbolizer& symbolizer = {});

// Makes `head` the page of head against `base` (both read with keep_sites and the same options): base's
// name, totals and heap series join the page, and when both have call stacks the flame graphs become
// differential (analysis::build_diff_flame_graph: sites paired as `memtrack diff` pairs them).
void add_baseline(ReportData& head, ReportData&& base);

// The page's JSON document (schema version 1, report_html.h).
std::string report_json(const ReportData& data);

// For `memtrack export`: the sites of `file` (every site, ordered by `order`) and the Module records seen
// (the first record of each path, for pprof's mappings), with the read's status.
// The artifact's sites, read once and handed out one at a time (each(): ranked by the order asked for,
// resolved with the symbolizer given), so an export's memory grows with distinct frames, not sites x frames.
struct ExportSites {
  std::unique_ptr<analysis::SiteAccumulator> accumulator;
  analysis::SiteOrder order = analysis::SiteOrder::allocated;
  analysis::ModuleSymbolizer symbolizer;
  [[nodiscard]] analysis::SitesResult each(const std::function<void(const analysis::Site&)>& sink) const {
    return accumulator->for_each_site(order, 0, symbolizer, sink);
  }
  std::vector<codec::Module> modules;
  bool has_stacks = false;
  codec::Status status;
  std::set<std::int32_t> processes;  // every pid of the artifact (ProcessList), for --pid
};
ExportSites read_export_sites(std::span<const std::byte> file, const std::string& name, analysis::SiteOrder order,
                              std::optional<std::int32_t> pid, const analysis::ProgressFn& progress = {},
                              const analysis::ModuleSymbolizer& symbolizer = {});

}  // namespace memtrack::tools
