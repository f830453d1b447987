// memtrack diff: what changed between two recordings and where.
#include <cstdio>
#include <optional>
#include <string>

#include "args.h"
#include "commands.h"
#include "diff_format.h"
#include "io.h"
#include "memtrack/analysis/run_compare.h"
#include "memtrack/analysis/site_match.h"
#include "recording.h"
#include "top_format.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack diff BASE HEAD [--json | --markdown] [-n N]\n"
    "                     [--by peak|allocated|count|leaked|temporary|resident]\n"
    "                     [--region NAME] [--pid-image IMAGE]\n\n"
    "Compares two recordings (one of them may be - for stdin): the totals side by side with the change\n"
    "(allocations, bytes allocated, peak heap and when, leaked, temporary allocations, processes; peak resident\n"
    "when both recordings sampled it), then the allocation sites whose figures changed most, then the\n"
    "processes and the regions.\n\n"
    "  --by MEASURE    rank sites by the change in: peak (bytes live at the peak of the heap, default),\n"
    "                  allocated, count, leaked, temporary or resident (resident bytes of the site's live blocks\n"
    "                  at each process's highest page snapshot, as top --by resident; both recordings must have\n"
    "                  resident samples and page snapshots, and the whole recordings are compared: not with\n"
    "                  --region or --pid-image; top --help)\n"
    "  -n N            the first N sites (default 10; 0: all)\n"
    "  --region NAME   compare only region NAME of each recording (stats --help: its occurrences summed)\n"
    "  --pid-image IMAGE  compare only the first process image of executable IMAGE (its basename) of each\n"
    "                  recording: its events (read in a second pass), its regions\n"
    "  --json          {\"totals\": {\"base\", \"head\", \"delta\", \"percent\"}, \"sites\": [{\"stack\", \"base\",\n"
    "                  \"head\", \"delta\", \"status\"}...], \"site_counts\", \"processes\": [...], \"regions\": "
    "[...]}\n"
    "                  with top --json's names; a side without the item is null; totals' peak_resident_bytes\n"
    "                  only when both recordings sampled resident memory, sites' resident_bytes only when\n"
    "                  both have page snapshots\n"
    "  --markdown      GitHub-flavoured markdown tables, for a pull-request comment\n\n"
    "Sites pair by what they are, not where they were: frames with a function name by (function, file name,\n"
    "module name), so two builds of one program pair up although every address moved; frames without one by\n"
    "the module's build-id and offset (only the same build pairs). Sites of one recording that become the same\n"
    "(two calls in one function that differ only by line) are summed. A site is \"new\" (only in HEAD), \"gone\"\n"
    "(only in BASE), \"changed\" or \"same\". Processes pair by executable name and order of appearance (the\n"
    "k-th image of a program with the k-th); regions by name, their per-run medians side by side.\n";

}  // namespace

int run_diff(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const bool json = args.flag("json"), markdown = args.flag("markdown");
  if (json && markdown) throw UsageError("--json and --markdown: choose one");
  RecordingOptions options;
  options.sites = true;
  if (const auto by = args.value("by"); by && !parse_order(*by, options.order))
    throw UsageError("--by '" + *by + "': expected peak, allocated, count, leaked, temporary or resident");
  const bool by_resident = options.order == analysis::SiteOrder::resident;
  std::size_t limit = 10;
  if (const auto n = args.value("n", "n")) limit = static_cast<std::size_t>(parse_int("-n", *n, 0, INT64_MAX));
  options.region = args.value("region");
  options.pid_image = args.value("pid-image");
  // As check --max-resident: the samples are of whole processes, and the region and image filters pass
  // every pid's resident records on.
  if (by_resident && (options.region || options.pid_image))
    throw UsageError(std::string("--by resident with ") + (options.region ? "--region" : "--pid-image") +
                     ": resident memory is sampled per process, not per region or image");
  const auto files = args.positionals();
  if (files.size() != 2) throw UsageError(files.size() < 2 ? "expected BASE and HEAD" : "more than two files");
  if (files[0] == "-" && files[1] == "-") throw UsageError("BASE and HEAD cannot both be stdin");

  Recording base, head;
  for (Recording* r : {&base, &head}) {
    const std::string& path = r == &base ? files[0] : files[1];
    try {
      if (const codec::Status s = read_recording(path, options, *r); !s.is_ok()) {
        std::fprintf(stderr, "memtrack diff: %s\n", s.message().c_str());
        return 1;
      }
    } catch (const NoSuchImage& e) {
      std::fprintf(stderr, "memtrack diff: %s\n", e.what());
      return 2;
    }
    if (options.region && r->region_occurrences == 0) {
      std::fprintf(stderr, "memtrack diff: %s has no region '%s'\n", r->name.c_str(), options.region->c_str());
      return 1;
    }
    if (by_resident && !r->totals.resident_sampled) {
      std::fprintf(stderr,
                   "memtrack diff: %s has no resident samples (recorded with --no-resident or by an older memtrack, "
                   "or its processes ended before the first sample): --by resident cannot compare it\n",
                   r->name.c_str());
      return 1;
    }
    if (by_resident && r->has_stacks && !r->sites->has_resident_pages) {
      std::fprintf(stderr,
                   "memtrack diff: %s: resident per site not recorded (no ResidentPages snapshot: recorded with "
                   "--no-resident, by an older memtrack, or no process's resident memory grew enough to take "
                   "one): --by resident cannot compare it\n",
                   r->name.c_str());
      return 1;
    }
  }

  DiffReport report;
  report.base_name = base.name;
  report.head_name = head.name;
  report.region = options.region;
  report.order = options.order;
  report.limit = limit;
  // Sites of a recording with stacks against one without would all read as new or gone.
  report.has_stacks = base.has_stacks && head.has_stacks;
  if (base.has_stacks != head.has_stacks) report.without_stacks = base.has_stacks ? head.name : base.name;
  report.base = base.totals;
  report.head = head.totals;
  report.resident = base.totals.resident_sampled && head.totals.resident_sampled;
  report.resident_sites = report.has_stacks && base.sites->has_resident_pages && head.sites->has_resident_pages;
  if (report.has_stacks)
    report.sites = analysis::match_sites(base.sites->sites, head.sites->sites, options.order, limit);
  report.processes = analysis::match_images(base.stats.heap.images(), head.stats.heap.images());
  report.regions =
      analysis::match_regions(analysis::region_figures(base.occurrences), analysis::region_figures(head.occurrences));
  const std::string text = json       ? format_diff_json(report)
                           : markdown ? format_diff_markdown(report)
                                      : format_diff_table(report);
  BufferedOutput out(1, "stdout");
  out.buffer() = text;
  if (const codec::Status s = out.flush(); !s.is_ok()) {
    std::fprintf(stderr, "memtrack diff: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace memtrack::tools
