#include "report_data.h"

#include <cinttypes>
#include <cstdio>
#include <string_view>

#include "artifact_command.h"
#include "diff_format.h"
#include "json_writer.h"
#include "memtrack/analysis/event_kinds.h"
#include "stats_format.h"
#include "top_format.h"
#include "units.h"

namespace memtrack::tools {

using analysis::FlameGraph;
using analysis::FlameNode;
using analysis::FlameValue;
using analysis::ProcessImage;
using analysis::SiteOrder;

namespace {

constexpr SiteOrder kOrders[] = {SiteOrder::peak, SiteOrder::allocated, SiteOrder::count, SiteOrder::leaked,
                                 SiteOrder::temporary};

// The first Module record of each path (pid aside), for pprof's mappings.
class ModuleList final : public analysis::ArtifactConsumer {
 public:
  explicit ModuleList(std::vector<codec::Module>& modules) : modules_(modules) {}
  void add_context(const codec::ContextRecord& r) override {
    if (const auto* m = std::get_if<codec::Module>(&r); m && m->loaded) {
      bool known = false;
      for (const codec::Module& k : modules_) known = known || k.path == m->path;
      if (!known) modules_.push_back(*m);
    }
  }
  void add(std::span<const codec::Event>) override {}

 private:
  std::vector<codec::Module>& modules_;
};

// `differential`: with the baseline's value and count.
void flame_node(JsonWriter& j, const FlameNode& n, bool differential) {
  j.begin_object().member("name", n.name).member("value", n.value).member("count", n.count);
  if (differential) j.member("base", n.base_value).member("base_count", n.base_count);
  j.key("module").str_or_null(n.module).key("file").str_or_null(n.file).key("line").num_or_null(n.line);
  if (!n.children.empty())
    j.key("children").array(n.children, [differential](JsonWriter& w, const FlameNode& c) {
      flame_node(w, c, differential);
    });
  j.end_object();
}

// Nothing to draw: no bytes on either side.
bool empty(const FlameGraph& g) { return g.root.value == 0 && g.root.base_value == 0; }

// "14.1 KiB (head +2.7 KiB, +19.2%)": a baseline's figure and head's change from it.
std::string against(std::uint64_t base, std::uint64_t head, bool bytes) {
  const auto amount = [&](std::uint64_t v) { return bytes ? human_bytes(v) : std::to_string(v); };
  const std::string delta = head >= base ? "+" + amount(head - base) : "-" + amount(base - head);
  return amount(base) + " (head " +
         (head == base ? std::string("the same") : delta + ", " + percent_change(base, head)) + ")";
}

// How the page pairs the two recordings, shown as is.
constexpr const char* kBaselineMatch =
    "allocation sites are paired as `memtrack diff` pairs them: frames with a function name by function, file "
    "name and module name (two builds of one program pair although every address moved), others by the "
    "module's build-id and offset; the width of a frame is head's bytes, its colour the change from the "
    "baseline (red grew, blue shrank, grey unchanged)";

// The summary table: what `memtrack stats` says first, as label/value pairs.
std::vector<std::pair<std::string, std::string>> summary_rows(const ReportData& d) {
  const analysis::Stats& s = d.stats;
  const analysis::EventCounts& c = s.counts;
  std::vector<std::pair<std::string, std::string>> rows;
  const auto kind = [&](codec::EventKind k) { return c.by_kind[static_cast<std::size_t>(k)]; };
  if (s.context.recording && !s.context.recording->command.empty()) {
    std::string cmd;
    for (const std::string& a : s.context.recording->command) cmd += (cmd.empty() ? "" : " ") + a;
    rows.emplace_back("command", cmd);
  }
  rows.emplace_back("events", std::to_string(c.events));
  rows.emplace_back("duration", short_duration(c.events ? c.last_timestamp - c.first_timestamp : 0));
  std::uint64_t allocations = 0;
  for (std::size_t k = 1; k < analysis::kKinds; ++k)
    if (analysis::allocates(static_cast<codec::EventKind>(k))) allocations += c.by_kind[k];
  rows.emplace_back("allocations", std::to_string(allocations));
  rows.emplace_back("frees", std::to_string(kind(codec::EventKind::Free)));
  rows.emplace_back("bytes allocated", human_bytes(c.bytes_allocated));
  rows.emplace_back("peak live heap", human_bytes(s.heap.total_peak_bytes()) + " at " +
                                          short_duration(s.heap.total_peak_timestamp() > c.first_timestamp
                                                             ? s.heap.total_peak_timestamp() - c.first_timestamp
                                                             : 0));
  std::uint64_t unmatched = 0, peak_mapped = 0;
  for (const ProcessImage& img : s.heap.images()) {
    unmatched += img.heap.unmatched_frees;
    peak_mapped = std::max(peak_mapped, img.heap.peak_mapped_bytes);
  }
  const BlockTotals leaked = still_live_at_end(s);
  rows.emplace_back("leaked at end", human_bytes(leaked.bytes) + " in " + counted(leaked.count, "block"));
  if (s.heap.has_lifecycle()) rows.emplace_back("freed by exec", human_bytes(freed_by_exec(s).bytes));
  rows.emplace_back("largest mapped (one process)", human_bytes(peak_mapped));
  rows.emplace_back("unmatched frees", std::to_string(unmatched));
  rows.emplace_back("processes", counted(c.by_pid.size(), "pid") + ", " + counted(s.heap.images().size(), "image"));
  if (!s.context.untracked.empty())
    rows.emplace_back("untracked", std::to_string(s.context.untracked.size()) + " (see memtrack stats)");
  if (d.has_stacks) rows.emplace_back("allocation sites", std::to_string(d.sites));
  rows.emplace_back(
      "frames", std::to_string(d.pass.data_frames) + " data, " + std::to_string(d.pass.context_frames) + " context");
  rows.emplace_back("file size", human_bytes(d.pass.compressed_bytes));
  if (d.pass.compressed_bytes) rows.emplace_back("msgpack bytes", human_bytes(d.pass.decompressed_bytes));
  const std::optional<bool> complete = s.complete();
  rows.emplace_back("complete", !complete ? "unknown (no end mark)" : *complete ? "yes" : "no (cut short or damaged)");
  if (!s.heap.has_lifecycle())
    rows.emplace_back("note", "no lifecycle records: every pid is one process alive to the end");
  if (d.options.pid) rows.emplace_back("charts and sites", "pid " + std::to_string(*d.options.pid) + " only");
  if (d.baseline) {
    const analysis::RunTotals &b = d.baseline->totals, &h = d.baseline->head_totals;
    rows.emplace_back("baseline", d.baseline->artifact);
    rows.emplace_back("baseline peak live heap", against(b.peak_bytes, h.peak_bytes, true));
    rows.emplace_back("baseline bytes allocated", against(b.allocated_bytes, h.allocated_bytes, true));
    rows.emplace_back("baseline allocations", against(b.allocations, h.allocations, false));
    rows.emplace_back("baseline leaked at end", against(b.leaked_bytes, h.leaked_bytes, true));
  }
  return rows;
}

}  // namespace

ReportData build_report(std::span<const std::byte> file, const std::string& name, const ReportOptions& options,
                        const analysis::ProgressFn& progress, const analysis::ModuleSymbolizer& symbolizer) {
  ReportData d;
  d.artifact = name;
  d.options = options;
  analysis::TimelineBuilder timeline(d.stats.heap, options.max_points, options.max_images, options.pid);
  // One live heap (d.stats.heap): the timeline drives it, the sites are its client.
  analysis::SiteAccumulator sites(options.pid, &d.stats.heap);
  analysis::StatsConsumer stats(d.stats, analysis::StatsConsumer::Part::counts_and_context);
  analysis::Fanout consumer({&stats, &timeline, &sites});
  // The regions for the time axis, in the same pass; with --region, also the filter in front of the rest.
  analysis::Regions regions(options.region, options.region ? &consumer : nullptr);
  ProcessList processes;
  analysis::ArtifactConsumer* unfiltered[] = {&stats, &timeline, &sites, &regions, &processes};
  analysis::ArtifactConsumer* filtered[] = {&regions, &processes};
  d.status = analysis::read_artifact(file, name,
                                     options.region ? std::span<analysis::ArtifactConsumer* const>(filtered)
                                                    : std::span<analysis::ArtifactConsumer* const>(unfiltered),
                                     d.pass, progress);
  regions.finish();
  d.regions = regions.occurrences();
  d.paused = regions.paused();
  d.region_occurrences = regions.selected_occurrences();
  d.processes = processes.pids();
  d.stats.status = d.status;
  d.stats.file = analysis::file_summary(d.pass);
  d.timeline = timeline.result();
  d.has_stacks = sites.has_stacks();
  d.has_resident_pages = d.has_stacks && sites.has_resident_pages();
  if (d.has_stacks) {
    if (options.keep_sites) {
      // A baseline comparison pairs every site of both recordings (add_baseline): the list is kept.
      analysis::SitesResult all = sites.result(SiteOrder::allocated, 0, symbolizer);
      d.sites = all.sites.size();
      d.flame_peak = build_flame_graph(all, FlameValue::peak, options.prune_fraction);
      d.flame_allocated = build_flame_graph(all, FlameValue::allocated, options.prune_fraction);
      d.flame_leaked = build_flame_graph(all, FlameValue::leaked, options.prune_fraction);
      if (d.has_resident_pages) d.flame_resident = build_flame_graph(all, FlameValue::resident, options.prune_fraction);
      d.all_sites = std::move(all);
    } else {
      // One site at a time into the three graphs: memory grows with distinct frames, not sites x frames.
      // The resident graph is of the same sites' resident_bytes (what `memtrack top --by resident` ranks).
      analysis::FlameBuilder peak(FlameValue::peak), allocated(FlameValue::allocated), leaked(FlameValue::leaked);
      analysis::FlameBuilder resident(FlameValue::resident);
      const analysis::SitesResult rest =
          sites.for_each_site(SiteOrder::allocated, 0, symbolizer, [&](const analysis::Site& site) {
            ++d.sites;
            peak.add(site);
            allocated.add(site);
            leaked.add(site);
            if (d.has_resident_pages) resident.add(site);
          });
      for (analysis::FlameBuilder* b : {&peak, &allocated, &leaked, &resident}) b->add_unknown(rest.unknown);
      d.flame_peak = peak.finish(options.prune_fraction);
      d.flame_allocated = allocated.finish(options.prune_fraction);
      d.flame_leaked = leaked.finish(options.prune_fraction);
      if (d.has_resident_pages) d.flame_resident = resident.finish(options.prune_fraction);
    }
    for (const SiteOrder o : kOrders) d.top.emplace_back(o, sites.result(o, options.top_sites, symbolizer));
  }
  return d;
}

void add_baseline(ReportData& head, ReportData&& base) {
  ReportBaseline b;
  b.artifact = base.artifact;
  b.totals = analysis::run_totals(base.stats, base.all_sites ? &*base.all_sites : nullptr);
  b.head_totals = analysis::run_totals(head.stats, head.all_sites ? &*head.all_sites : nullptr);
  b.timeline = std::move(base.timeline);
  b.has_stacks = base.has_stacks;
  b.differential = head.all_sites && base.all_sites;
  if (b.differential) {
    const double prune = head.options.prune_fraction;
    head.flame_peak = build_diff_flame_graph(*base.all_sites, *head.all_sites, FlameValue::peak, prune);
    head.flame_allocated = build_diff_flame_graph(*base.all_sites, *head.all_sites, FlameValue::allocated, prune);
    head.flame_leaked = build_diff_flame_graph(*base.all_sites, *head.all_sites, FlameValue::leaked, prune);
  }
  head.baseline = std::move(b);
}

std::string report_json(const ReportData& d) {
  std::string out;
  JsonWriter j(out);
  const analysis::Stats& s = d.stats;
  const analysis::EventCounts& c = s.counts;
  j.begin_object().member("version", 1).key("meta").begin_object().key("command");
  const std::vector<std::string> none;
  j.array(s.context.recording ? s.context.recording->command : none,
          [](JsonWriter& w, const std::string& a) { w.str(a); });
  j.member("memtrack", s.context.recording ? s.context.recording->memtrack_version : std::string());
  j.member("events", c.events).member("duration_ns", c.events ? c.last_timestamp - c.first_timestamp : 0);
  j.member("artifact", d.artifact).end_object();
  if (d.baseline) {
    const ReportBaseline& b = *d.baseline;
    const auto totals = [](JsonWriter& w, const analysis::RunTotals& t) {
      w.begin_object().member("peak_bytes", t.peak_bytes).member("allocated_bytes", t.allocated_bytes);
      w.member("allocations", t.allocations).member("leaked_bytes", t.leaked_bytes).member("events", t.events);
      w.end_object();
    };
    j.key("baseline").begin_object().member("artifact", b.artifact).member("differential", b.differential);
    j.member("match", kBaselineMatch).key("totals").begin_object().key("base");
    totals(j, b.totals);
    j.key("head");
    totals(j, b.head_totals);
    j.end_object().end_object();
  }

  std::vector<std::pair<std::string, std::string>> missing;
  if (!d.status.is_ok()) missing.emplace_back("summary", "the artifact is damaged: " + d.status.message());
  if (c.events == 0) missing.emplace_back("timeline", "the artifact has no events");
  if (!d.timeline.has_lifecycle)
    missing.emplace_back("timeline.markers",
                         "the artifact has no lifecycle records (recorded before memtrack wrote them, or by "
                         "another writer): no process starts, execs or exits to mark");
  if (d.timeline.images_total > d.timeline.images.size())
    missing.emplace_back("timeline.processes", "showing the " + std::to_string(d.timeline.images.size()) +
                                                   " processes with the highest peaks of " +
                                                   std::to_string(d.timeline.images_total));
  if (!d.has_stacks) {
    const std::string why =
        "the artifact has no call stacks (recorded with --no-stacks, or by a memtrack or writer without them)";
    missing.emplace_back("flame", why);
    missing.emplace_back("top", why);
  } else if (d.flame_leaked && empty(*d.flame_leaked)) {
    missing.emplace_back("flame.leaked", "nothing leaked: every block was freed (or went with an exec)");
  }
  if (d.has_stacks && !d.has_resident_pages)
    missing.emplace_back("flame.resident",
                         "not recorded: the artifact has no page snapshots (ResidentPages records: "
                         "recorded with --no-resident, by an older memtrack, or no process's resident memory grew "
                         "enough to take one)");
  else if (d.flame_resident && empty(*d.flame_resident))
    missing.emplace_back("flame.resident", "no live block was resident at the page snapshots");
  if (d.has_stacks && d.flame_peak && empty(*d.flame_peak))
    missing.emplace_back("flame.peak", "nothing was live at the peak");
  if (d.baseline && d.has_stacks && !d.baseline->differential)
    missing.emplace_back("flame.baseline",
                         d.baseline->artifact + " has no call stacks: the flame graphs are of this recording alone");
  if (!missing.empty()) {
    j.key("missing").begin_object();
    for (const auto& [key, why] : missing) j.member(key, why);
    j.end_object();
  }

  j.key("summary").array(summary_rows(d), [](JsonWriter& w, const std::pair<std::string, std::string>& r) {
    w.begin_array().str(r.first).str(r.second).end_array();
  });

  if (c.events != 0) {
    const analysis::Timeline& t = d.timeline;
    const auto times = [](JsonWriter& w, const auto& p) { w.num(p.t); };
    const auto values = [](JsonWriter& w, const auto& p) { w.num(p.value); };
    j.key("timeline").begin_object();
    j.key("t_ns").array(t.total, times).key("heap").array(t.total, values);
    j.key("mapped").array(t.total, [](JsonWriter& w, const auto& p) { w.num(p.value2); });
    j.key("peak").begin_object().member("t_ns", t.peak_t_ns).member("bytes", t.peak_bytes).end_object();
    j.key("processes").array(t.images, [&](JsonWriter& w, const analysis::ImageSeries& img) {
      w.begin_object().member("pid", img.pid).member("label", img.label);
      w.key("t_ns").array(img.points, times).key("heap").array(img.points, values).end_object();
    });
    if (!t.resident.empty()) {
      // Only with Resident samples (docs/FORMAT.md, "Context section: resident"): every other report is unchanged.
      j.key("resident").begin_object();
      j.key("t_ns").array(t.resident, times).key("bytes").array(t.resident, values);
      j.key("processes").array(t.resident_pids, [&](JsonWriter& w, const analysis::PidResidentSeries& p) {
        w.begin_object().member("pid", p.pid);
        w.key("t_ns").array(p.points, times).key("bytes").array(p.points, values).end_object();
      });
      j.end_object();
    }
    if (t.has_lifecycle) {
      j.key("markers").array(t.markers, [](JsonWriter& w, const analysis::TimelineMarker& m) {
        static constexpr const char* kKinds[] = {"start", "exec", "exit"};
        w.begin_object().member("t_ns", m.t_ns).member("kind", kKinds[static_cast<int>(m.kind)]);
        w.member("pid", m.pid).member("label", m.label).end_object();
      });
    }
    if (!d.paused.empty()) {
      // Allocations were not recorded there (frees were): the page breaks the heap lines over these spans.
      const std::uint64_t origin = d.stats.counts.first_timestamp;
      const auto rel = [&](std::uint64_t ts) { return ts > origin ? ts - origin : 0; };
      j.key("paused").array(d.paused, [&](JsonWriter& w, const analysis::PausedSpan& p) {
        w.begin_object().member("begin_ns", rel(p.begin_timestamp)).member("end_ns", rel(p.end_timestamp));
        w.member("source", p.source).member("resumed", p.resumed).end_object();
      });
    }
    if (!d.regions.empty()) {
      // Times since the chart's origin (the first event it shows); a region that began before it starts there.
      const std::uint64_t origin = d.stats.counts.events != 0 ? d.stats.counts.first_timestamp : 0;
      const auto rel = [&](std::uint64_t ts) { return ts > origin ? ts - origin : 0; };
      j.key("regions").array(d.regions, [&](JsonWriter& w, const analysis::RegionOccurrence& r) {
        w.begin_object().member("name", r.occurrence > 1 ? r.name + " #" + std::to_string(r.occurrence) : r.name);
        w.member("begin_ns", rel(r.begin_timestamp)).member("end_ns", rel(r.end_timestamp)).end_object();
      });
    }
    if (d.baseline && !d.baseline->timeline.total.empty()) {
      const analysis::Timeline& b = d.baseline->timeline;
      j.key("baseline").begin_object().member("label", "baseline live heap (" + d.baseline->artifact + ")");
      j.key("t_ns").array(b.total, times).key("heap").array(b.total, values);
      j.key("peak").begin_object().member("t_ns", b.peak_t_ns).member("bytes", b.peak_bytes).end_object();
      j.end_object();
    }
    j.member("downsampled_from", t.samples).end_object();
  }

  if (d.has_stacks) {
    j.key("flame").begin_object();
    const std::pair<const char*, const std::optional<FlameGraph>*> graphs[] = {{"peak", &d.flame_peak},
                                                                               {"allocated", &d.flame_allocated},
                                                                               {"leaked", &d.flame_leaked},
                                                                               {"resident", &d.flame_resident}};
    for (const auto& [key, g] : graphs) {
      if (!*g || empty(**g)) continue;
      j.key(key);
      flame_node(j, (*g)->root, (*g)->differential);
    }
    j.key("pruned").begin_object();
    for (const auto& [key, g] : graphs) {
      if (!*g) continue;
      char threshold[32];
      std::snprintf(threshold, sizeof threshold, "%g", (*g)->threshold);
      j.key(key).begin_object().member("nodes", (*g)->pruned_nodes).member("bytes", (*g)->pruned_value);
      j.key("threshold").raw(threshold).end_object();
    }
    j.end_object().end_object();
    // Each distinct frame once ("frames"); a site's stack lists their indices. The rankings share most of
    // their sites and frames, so the page grows with what is shown, not five times over.
    std::unordered_map<std::string, std::uint64_t> frame_ids;
    std::vector<const std::string*> frames;
    const auto frame_id = [&](const analysis::SiteFrame& f) {
      std::string text = format_stack_json({f});
      text = text.substr(1, text.size() - 2);  // the one element of the array
      const auto [it, fresh] = frame_ids.try_emplace(std::move(text), frames.size());
      if (fresh) frames.push_back(&it->first);
      return it->second;
    };
    j.key("top").begin_object();
    for (const auto& [order, result] : d.top) {
      j.key(order_name(order)).array(result.sites, [&](JsonWriter& w, const analysis::Site& site) {
        w.begin_object().key("stack").array(site.stack,
                                            [&](JsonWriter& a, const analysis::SiteFrame& f) { a.num(frame_id(f)); });
        write_site_totals_json(w, site.totals);
        w.end_object();
      });
    }
    j.key("frames").array(frames, [](JsonWriter& w, const std::string* text) { w.raw(*text); });
    j.member("total", static_cast<std::uint64_t>(d.sites));  // every site of the recording; the rankings list the first
    j.end_object();
  }
  j.end_object();
  return out;
}

ExportSites read_export_sites(std::span<const std::byte> file, const std::string& name, SiteOrder order,
                              std::optional<std::int32_t> pid, const analysis::ProgressFn& progress,
                              const analysis::ModuleSymbolizer& symbolizer) {
  ExportSites out;
  out.accumulator = std::make_unique<analysis::SiteAccumulator>(pid);
  out.order = order;
  out.symbolizer = symbolizer;
  ModuleList modules(out.modules);
  ProcessList processes;
  analysis::ArtifactConsumer* consumers[] = {&modules, out.accumulator.get(), &processes};
  analysis::PassSummary pass;
  out.status = analysis::read_artifact(file, name, consumers, pass, progress);
  out.processes = processes.pids();
  out.has_stacks = out.accumulator->has_stacks();
  return out;
}

}  // namespace memtrack::tools
