// memtrack stats --regions: per region name, the figures of each run and their min/median/max (what a
// benchmark harness reports per benchmark; analysis/run_compare.h region_figures).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "commands.h"
#include "io.h"
#include "memtrack/analysis/run_compare.h"
#include "recording.h"
#include "json_writer.h"
#include "stats_format.h"
#include "units.h"

namespace memtrack::tools {
namespace {

using analysis::RegionFigures;
using analysis::RegionRun;

std::string u64(std::uint64_t v) { return std::to_string(v); }

std::string run_json(const RegionRun& r) {
  return "{\"peak_bytes\":" + u64(r.peak_bytes) + ",\"allocated_bytes\":" + u64(r.allocated_bytes) +
         ",\"allocations\":" + u64(r.allocations) + ",\"leaked_bytes\":" + u64(r.leaked_bytes) +
         ",\"leaked_blocks\":" + u64(r.leaked_blocks) + "}";
}

std::string figures_json(const std::string& file, const std::vector<RegionFigures>& figures) {
  std::string o = "{\"file\":" + json_string(file) + ",\"regions\":[";
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const RegionFigures& f = figures[i];
    o += (i ? "," : "") + std::string("{\"name\":") + json_string(f.name) + ",\"runs\":" + u64(f.runs.size()) +
         ",\"per_run\":[";
    for (std::size_t k = 0; k < f.runs.size(); ++k) o += (k ? "," : "") + run_json(f.runs[k]);
    o += "],\"min\":" + run_json(f.min) + ",\"median\":" + run_json(f.median) + ",\"max\":" + run_json(f.max) + "}";
  }
  return o + "]}\n";
}

// "6.0 KiB" when every run had it, else "1.0 KiB / 2.0 KiB / 4.0 KiB" (min / median / max).
std::string spread(const RegionFigures& f, std::uint64_t RegionRun::*m, bool bytes) {
  const auto show = [&](std::uint64_t v) { return bytes ? human_bytes(v) : u64(v); };
  if (f.min.*m == f.max.*m) return show(f.max.*m);
  return show(f.min.*m) + " / " + show(f.median.*m) + " / " + show(f.max.*m);
}

std::string figures_table(const std::vector<RegionFigures>& figures) {
  if (figures.empty()) return "no regions (memtrack/control.h marks them)\n";
  std::string out =
      "regions by name: each run's own heap blocks; one figure when every run had it, else min / median / max\n";
  for (const RegionFigures& f : figures) {
    out += "\n" + f.name + ": " + u64(f.runs.size()) + (f.runs.size() == 1 ? " run\n" : " runs\n");
    out += "  peak         " + spread(f, &RegionRun::peak_bytes, true) + "\n";
    out += "  allocated    " + spread(f, &RegionRun::allocated_bytes, true) + "\n";
    out += "  allocations  " + spread(f, &RegionRun::allocations, false) + "\n";
    out += "  leaked       " + spread(f, &RegionRun::leaked_bytes, true) + " in " +
           spread(f, &RegionRun::leaked_blocks, false) + " blocks (live at the run's end)\n";
  }
  return out;
}

}  // namespace

int run_stats_regions(const std::string& path, bool json) {
  Recording r;
  if (const codec::Status s = read_recording(path, RecordingOptions{}, r); !s.is_ok()) {
    std::fprintf(stderr, "memtrack stats: %s\n", s.message().c_str());
    return 1;
  }
  const auto figures = analysis::region_figures(r.occurrences);
  BufferedOutput out(1, "stdout");
  out.buffer() = json ? figures_json(r.name, figures) : figures_table(figures);
  if (const codec::Status s = out.flush(); !s.is_ok()) {
    std::fprintf(stderr, "memtrack stats: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace memtrack::tools
