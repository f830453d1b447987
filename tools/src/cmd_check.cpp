// memtrack check: memory limits on a recording, as a CI gate.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "check_limits.h"
#include "commands.h"
#include "io.h"
#include "recording.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack check FILE [--max-peak SIZE] [--max-allocated SIZE] [--max-allocations N]\n"
    "                      [--max-leaked SIZE] [--max-resident SIZE] [--baseline BASE --max-growth PCT]\n"
    "                      [--region NAME] [--pid-image IMAGE] [--json]\n\n"
    "Exits 0 when every limit holds; 1 with one line per limit broken (\"peak heap 3.0 MiB > --max-peak\n"
    "2 MiB\"), or when a file cannot be read; 2 for a usage error. SIZE: 24MB (10^6), 24MiB (2^20), 1.5GiB,\n"
    "or plain bytes; units B, kB, MB, GB, TB, KiB, MiB, GiB, TiB.\n\n"
    "  --max-peak SIZE         the peak of the live heap (stats' peak live heap)\n"
    "  --max-allocated SIZE    bytes allocated\n"
    "  --max-allocations N     allocations (malloc, calloc, realloc, the aligned family)\n"
    "  --max-leaked SIZE       bytes still live at the end (stats' leaks)\n"
    "  --max-resident SIZE     the peak of resident memory (stats' peak resident: the sum over the processes\n"
    "                          alive); FILE must have been recorded with resident sampling (record's default)\n"
    "  --baseline BASE --max-growth PCT\n"
    "                          each heap measure may grow at most PCT percent over BASE's (from 0, any growth\n"
    "                          breaks it); not peak resident, which moves with the kernel's and the allocator's\n"
    "                          timing from run to run: bound it with --max-resident\n"
    "  --region NAME           the limits hold for every occurrence of region NAME (memtrack/control.h):\n"
    "                          its own blocks' peak, allocations, and what of them is live at its end;\n"
    "                          against a baseline, the largest occurrence of each side\n"
    "  --pid-image IMAGE       the limits hold for the first process image of executable IMAGE (its\n"
    "                          basename) of FILE (and of BASE): its events only, read in a second pass\n"
    "  --json                  {\"file\", \"baseline\", \"region\", \"ok\", \"limits\": [{\"option\", \"measure\",\n"
    "                          \"limit\", \"value\", \"base\", \"growth_percent\", \"where\", \"ok\"}...]}\n";

struct Side {
  Recording recording;
  std::vector<Measured> runs;             // one per region occurrence; with no --region, the whole recording
  std::vector<std::uint32_t> occurrence;  // the occurrence number of each run
};

// 0, or the exit status after one line on stderr.
int load(const std::string& path, const std::optional<std::string>& region,
         const std::optional<std::string>& pid_image, Side& side) {
  RecordingOptions options;
  options.pid_image = pid_image;
  try {
    if (const codec::Status s = read_recording(path, options, side.recording); !s.is_ok()) {
      std::fprintf(stderr, "memtrack check: %s\n", s.message().c_str());
      return 1;
    }
  } catch (const NoSuchImage& e) {
    std::fprintf(stderr, "memtrack check: %s\n", e.what());
    return 2;
  }
  const Recording& r = side.recording;
  if (!region) {
    side.runs.push_back({r.totals.peak_bytes, r.totals.allocated_bytes, r.totals.allocations, r.totals.leaked_bytes,
                         r.totals.peak_resident_bytes});
    side.occurrence.push_back(0);
    return 0;
  }
  for (const analysis::RegionOccurrence& o : r.occurrences) {
    if (o.name != *region) continue;
    side.runs.push_back({o.peak_bytes, o.allocated_bytes, o.allocations, o.retained_bytes});
    side.occurrence.push_back(o.occurrence);
  }
  if (side.runs.empty()) {
    std::fprintf(stderr, "memtrack check: %s has no region '%s'\n", r.name.c_str(), region->c_str());
    return 1;
  }
  return 0;
}

// The run with the largest value of `m` (the first of equals).
std::size_t worst(const Side& side, Measure m) {
  std::size_t w = 0;
  for (std::size_t i = 1; i < side.runs.size(); ++i)
    if (side.runs[i].of(m) > side.runs[w].of(m)) w = i;
  return w;
}

}  // namespace

int run_check(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const bool json = args.flag("json");
  std::vector<Limit> limits;
  for (const MeasureInfo& info : kMeasures) {
    const std::string option = info.option + 2;  // without "--"
    const auto v = args.value(option);
    if (!v) continue;
    Limit l;
    l.measure = info.measure;
    if (info.bytes) {
      const auto size = parse_size(*v, &l.shown);
      if (!size)
        throw UsageError(std::string(info.option) + " '" + *v + "': expected a size (24MB, 24MiB, 1.5GiB, bytes)");
      l.max = *size;
    } else {
      l.max = static_cast<std::uint64_t>(parse_int(option, *v, 0, INT64_MAX));
      l.shown = std::to_string(l.max);
    }
    limits.push_back(l);
  }
  const std::optional<std::string> baseline = args.value("baseline");
  const std::optional<std::string> growth = args.value("max-growth");
  if (baseline.has_value() != growth.has_value())
    throw UsageError(baseline ? "--baseline needs --max-growth PCT" : "--max-growth needs --baseline BASE");
  if (growth) {
    std::string text = *growth;
    if (!text.empty() && text.back() == '%') text.pop_back();
    char* end = nullptr;
    const double pct = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(pct) || pct < 0)
      throw UsageError("--max-growth '" + *growth + "': expected a percentage (10, 2.5%)");
    for (const MeasureInfo& info : kMeasures) {
      if (info.measure == Measure::resident) continue;  // not reproducible enough for a relative gate (--help)
      Limit l;
      l.measure = info.measure;
      l.growth = true;
      l.max_percent = pct;
      l.shown = text + "%";
      limits.push_back(l);
    }
  }
  const std::optional<std::string> region = args.value("region");
  const std::optional<std::string> pid_image = args.value("pid-image");
  const auto files = args.positionals();
  if (files.size() != 1) throw UsageError(files.empty() ? "missing FILE" : "more than one FILE");
  if (limits.empty())
    throw UsageError(
        "no limit given (--max-peak, --max-allocated, --max-allocations, --max-leaked, --max-resident, --max-growth)");
  const auto absolute_resident = [&] {
    return std::ranges::any_of(limits, [](const Limit& l) { return !l.growth && l.measure == Measure::resident; });
  };
  if (absolute_resident() && (region || pid_image))
    throw UsageError(std::string("--max-resident with ") + (region ? "--region" : "--pid-image") +
                     ": resident memory is sampled per process, not per region or image");
  if (baseline && *baseline == "-" && files[0] == "-") throw UsageError("FILE and BASE cannot both be stdin");

  Side head, base;
  if (const int rc = load(files[0], region, pid_image, head); rc != 0) return rc;
  if (baseline)
    if (const int rc = load(*baseline, region, pid_image, base); rc != 0) return rc;

  if (absolute_resident() && !head.recording.totals.resident_sampled) {
    std::fprintf(stderr,
                 "memtrack check: %s has no resident samples (recorded with --no-resident or by an older memtrack, "
                 "or its processes ended before the first sample): --max-resident cannot be checked\n",
                 head.recording.name.c_str());
    return 1;
  }

  std::vector<LimitResult> results;
  for (const Limit& l : limits) {
    const std::size_t w = worst(head, l.measure);
    std::optional<std::uint64_t> b;
    if (l.growth) b = base.runs[worst(base, l.measure)].of(l.measure);
    LimitResult r = evaluate(l, head.runs[w].of(l.measure), b);
    if (pid_image) r.where = "process " + *pid_image;
    if (region) {
      r.where += (r.where.empty() ? "" : ", ") + std::string("region ") + *region;
      if (head.runs.size() > 1 || !r.ok)
        r.where +=
            " (occurrence " + std::to_string(head.occurrence[w]) + " of " + std::to_string(head.runs.size()) + ")";
    }
    results.push_back(std::move(r));
  }

  std::string text;
  std::size_t broken = 0;
  for (const LimitResult& r : results) {
    if (r.ok) continue;
    ++broken;
    if (!json) text += format_broken(r) + "\n";
  }
  if (json) {
    text =
        format_check_json(head.recording.name,
                          baseline ? std::optional<std::string>(base.recording.name) : std::nullopt, region, results);
  } else if (broken == 0) {
    text = "memtrack check: " + head.recording.name + ": " + std::to_string(results.size()) +
           (results.size() == 1 ? " limit holds\n" : " limits hold\n");
  }
  BufferedOutput out(1, "stdout");
  out.buffer() = text;
  if (const codec::Status s = out.flush(); !s.is_ok()) {
    std::fprintf(stderr, "memtrack check: %s\n", s.message().c_str());
    return 1;
  }
  return broken == 0 ? 0 : 1;
}

}  // namespace memtrack::tools
