// memtrack top: the allocation sites of an artifact recorded with stacks, ranked.
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "args.h"
#include "artifact_command.h"
#include "commands.h"
#include "file_symbolizer.h"
#include "io.h"
#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/python_sites.h"
#include "memtrack/analysis/regions.h"
#include "memtrack/analysis/sites.h"
#include "top_format.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack top FILE [--by peak|allocated|count|leaked|temporary|resident] [-n N] [--pid P]\n"
    "                    [--region NAME] [--python] [--json]\n\n"
    "Ranks the allocation sites of an artifact recorded with call stacks (FILE may be - for stdin). A site\n"
    "is a distinct call stack (the same code path in several processes is one site).\n\n"
    "  --by peak       bytes the site held live at the moment of the peak of the live heap (default)\n"
    "  --by allocated  bytes allocated\n"
    "  --by count      number of allocations\n"
    "  --by leaked     bytes still live at the end (blocks an exec'd image left are not leaks)\n"
    "  --by temporary  allocations freed right after they were made: no other allocation or free of the\n"
    "                  process between the two (heaptrack's definition)\n"
    "  --by resident   resident bytes of the site's live blocks at each process's highest page snapshot\n"
    "                  (ResidentPages, docs/RUNTIME.md; a page shared by blocks is split by their bytes in it)\n"
    "  -n N            the first N sites (default 10; 0: all)\n"
    "  --pid P         only the allocations of process P (peak: P's own peak)\n"
    "  --region NAME   only the allocations made in region NAME (memtrack/control.h; every occurrence): peak\n"
    "                  and leaked are of the region's own blocks, over their whole lives (stats --help)\n"
    "  --python        sites by their Python frames alone (function, file, line): the sites whose Python\n"
    "                  frames are the same are one, their numbers added; a site without any is one whose stack\n"
    "                  is \"[no Python frame]\" (docs/RUNTIME.md, \"Python programs\")\n"
    "  --json          {\"by\", \"sites\": [{\"stack\": [{\"function\", \"module\", \"file\", \"line\",\n"
    "                  \"address\"}...], \"peak_bytes\", \"allocated_bytes\", \"allocations\", \"leaked_bytes\",\n"
    "                  \"leaked_blocks\", \"temporary\", \"resident_bytes\" (only with page snapshots)}...],\n"
    "                  \"rest\": {\"sites\", the same numbers},\n"
    "                  \"without_stack\": {...}, \"totals\": {\"sites\", ...}}: the sites, the rest (beyond -n)\n"
    "                  and the allocations without a stack add up to the totals; stacks innermost first,\n"
    "                  unknown fields null\n\n"
    "Frames are named from the artifact's own symbol table; when it has none for a module (the recorder was\n"
    "killed), from the module file if it still exists and is the recorded build, else module + offset.\n"
    "A frame line fits 100 columns: when the whole line is longer, the module is named by its file name,\n"
    "then the source file too (--json keeps every path whole).\n";

}  // namespace

int run_top(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  const bool json = args.flag("json");
  const bool python = args.flag("python");
  analysis::SiteOrder order = analysis::SiteOrder::peak;
  if (const auto by = args.value("by"); by && !parse_order(*by, order))
    throw UsageError("--by '" + *by + "': expected peak, allocated, count, leaked, temporary or resident");
  std::size_t limit = 10;
  if (const auto n = args.value("n", "n")) limit = static_cast<std::size_t>(parse_int("-n", *n, 0, INT64_MAX));
  const ArtifactArgs a = parse_artifact_args(args, {.pid = true, .region = true, .default_output = {}});
  const std::optional<std::string>& region = a.region;
  const std::string& name = a.name;

  OpenArtifact file(a);
  analysis::SiteAccumulator acc(a.pid);
  std::optional<analysis::Regions> filter;
  if (region) filter.emplace(*region, &acc);
  ProcessList processes;
  analysis::ArtifactConsumer* consumers[] = {filter ? static_cast<analysis::ArtifactConsumer*>(&*filter) : &acc,
                                             &processes};
  analysis::PassSummary pass;
  const codec::Status status = analysis::read_artifact(file.bytes(), name, consumers, pass, file.progress());
  file.finish();
  if (filter) {
    filter->finish();
    if (status.is_ok() && filter->selected_occurrences() == 0) {
      std::fprintf(stderr, "memtrack top: %s has no region '%s'\n", name.c_str(), region->c_str());
      return 1;
    }
  }
  if (const std::string missing = missing_process(a, processes.pids()); status.is_ok() && !missing.empty()) {
    std::fprintf(stderr, "memtrack top: %s\n", missing.c_str());
    return 2;
  }
  if (!acc.has_stacks()) return refuse_lacking("top", name, status, kLacksStacks);
  if (order == analysis::SiteOrder::resident && !acc.has_resident_pages())
    return refuse_lacking("top", name, status,
                          ": resident per site not recorded (no ResidentPages snapshot: recorded with "
                          "--no-resident, by an older memtrack, or no process's resident memory grew enough to "
                          "take one)");
  // Written as the sites are resolved: `-n 0` on a recording of many deep stacks is hundreds of MB of text.
  constexpr std::size_t kFlushBytes = 1 << 16;
  const bool resident = acc.has_resident_pages();
  if (python) {
    // The merged sites are few (one per distinct Python stack): ranked whole, then printed.
    analysis::PythonSites merged;
    analysis::SitesResult summary =
        acc.for_each_site(order, 0, file_symbolizer(), [&](const analysis::Site& s) { merged.add(s); });
    if (!merged.any_python_frame()) return refuse_lacking("top", name, status, kLacksPythonFrames);
    const analysis::SitesResult result = merged.result(order, limit, std::move(summary));
    print_stdout(json ? format_top_json(result, order) : format_top_table(result, order));
  } else if (json) {
    TopJsonStream out(order, resident);
    const analysis::SitesResult summary =
        acc.for_each_site(order, limit, file_symbolizer(), [&](const analysis::Site& s) {
          out.add(s);
          if (out.pending() >= kFlushBytes) print_stdout(out.take());
        });
    out.finish(summary);
    print_stdout(out.take());
  } else {
    std::string out;
    std::size_t rank = 0;
    const analysis::SitesResult summary = acc.for_each_site(
        order, limit, file_symbolizer(),
        [&](const analysis::Site& s) {
          out += format_top_table_site(s, ++rank, resident);
          if (out.size() >= kFlushBytes) {
            print_stdout(out);
            out.clear();
          }
        },
        [&](const analysis::SitesResult& head, std::size_t sites) {
          out += format_top_table_head(head, sites, order);
        });
    out += format_top_table_tail(summary);
    print_stdout(out);
  }
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack top: %s\n", status.message().c_str());
    return exit_status(status);
  }
  return 0;
}

}  // namespace memtrack::tools
