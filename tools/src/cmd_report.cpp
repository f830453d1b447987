// memtrack report: one self-contained HTML page of an artifact (tools/report/report_html.h).
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "args.h"
#include "artifact_command.h"
#include "commands.h"
#include "file_symbolizer.h"
#include "io.h"
#include "output_checks.h"
#include "report_data.h"
#include "report_html.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack report FILE [-o OUT.html] [--pid P] [--region NAME] [--baseline BASE]\n\n"
    "Writes one self-contained HTML page of an artifact (every script and style inline, nothing loaded from\n"
    "the network: it opens offline and as a CI artifact):\n"
    "  - memory over time: the live heap and mapped bytes of the whole recording and of each process, the\n"
    "    peak marked, process starts, execs and exits (from the artifact's lifecycle records);\n"
    "  - flame graphs of the heap live at the peak, of all bytes allocated and of the leaks (artifacts\n"
    "    recorded with call stacks); click to zoom, search by function name;\n"
    "  - the top allocation sites of `memtrack top` for each ranking, and the summary of `memtrack stats`.\n"
    "What the artifact cannot give (no stacks, no lifecycle records) the page says is missing, and why.\n"
    "Series are downsampled to about 2,000 points (each point its bucket's maximum) and flame-graph frames\n"
    "below 0.1% of the whole are pruned (the page says how many), so a page stays a few MiB.\n\n"
    "  -o, --output OUT  where to write (default: FILE's name + .html in the current directory; - stdout)\n"
    "  --pid P           only process P's memory and allocation sites (the summary stays whole)\n"
    "  --region NAME     only region NAME (memtrack/control.h): the events inside its occurrences and the\n"
    "                    later frees of their blocks, as 'memtrack stats --region' counts them\n"
    "  --baseline BASE   compare with recording BASE (memtrack diff BASE FILE): its live heap drawn beside\n"
    "                    FILE's, and differential flame graphs: a frame's width is FILE's bytes, its colour\n"
    "                    the change from BASE (red grew, blue shrank), sites paired as `memtrack diff` pairs\n"
    "                    them (by function, file and module name); with --region, both are cut to it\n"
    "Regions (of an artifact recorded with them) are drawn on the time axis, each occurrence a named bar.\n\n"
    "A damaged artifact gives the page of what was read before the damage, one line on stderr and exit 1.\n";

std::string default_output(const std::string& input) {
  if (input == "-") return "stdin.html";
  const std::size_t slash = input.rfind('/');
  return (slash == std::string::npos ? input : input.substr(slash + 1)) + ".html";
}

}  // namespace

int run_report(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  ReportOptions options;
  const std::optional<std::string> baseline = args.value("baseline");
  const ArtifactArgs a = parse_artifact_args(args, {.pid = true, .region = true, .default_output = default_output});
  options.pid = a.pid;
  options.region = a.region;
  if (baseline) {
    if (a.pid) throw UsageError("--pid names a process of one recording: not with --baseline");
    if (*baseline == "-" && a.input == "-") throw UsageError("FILE and BASE cannot both be stdin");
    refuse_output_is_input(*baseline, a.output);
    options.keep_sites = true;
  }
  std::optional<ReportData> base;
  if (baseline) {  // read first, so that a baseline that cannot be read costs no pass over FILE
    ArtifactArgs b = a;
    b.input = *baseline;
    b.name = *baseline == "-" ? "stdin" : *baseline;
    OpenArtifact file(b);
    base.emplace(build_report(file.bytes(), b.name, options, file.progress(), file_symbolizer()));
    file.finish();
    // A damaged baseline is refused whole (as `memtrack diff` does): a prefix would read as the recording.
    if (!base->status.is_ok()) {
      std::fprintf(stderr, "memtrack report: %s\n", base->status.message().c_str());
      return 1;
    }
    if (options.region && base->region_occurrences == 0) {
      std::fprintf(stderr, "memtrack report: %s has no region '%s'\n", b.name.c_str(), options.region->c_str());
      return 1;
    }
  }
  OpenArtifact file(a);
  ReportData data = build_report(file.bytes(), a.name, options, file.progress(), file_symbolizer());
  file.finish();
  if (options.region && data.region_occurrences == 0 && data.status.is_ok()) {
    std::fprintf(stderr, "memtrack report: %s has no region '%s'\n", a.name.c_str(), options.region->c_str());
    return 1;
  }
  if (const std::string missing = missing_process(a, data.processes); data.status.is_ok() && !missing.empty()) {
    std::fprintf(stderr, "memtrack report: %s\n", missing.c_str());
    return 2;
  }
  if (base) add_baseline(data, std::move(*base));
  // Input that is no artifact at all (not one frame read) gives no page: an existing OUT stays as it was.
  if (!data.status.is_ok() && data.pass.data_frames == 0 && data.pass.skippable_frames == 0) {
    std::fprintf(stderr, "memtrack report: %s\n", data.status.message().c_str());
    return exit_status(data.status);
  }
  if (const codec::Status written = write_output(a.output, render_report_html(report_json(data))); !written) {
    std::fprintf(stderr, "memtrack report: %s\n", written.message().c_str());
    return 1;
  }
  if (!data.status.is_ok()) {
    std::fprintf(stderr, "memtrack report: %s (the report covers the events before it)\n",
                 data.status.message().c_str());
    return exit_status(data.status);
  }
  if (a.output != "-") std::fprintf(stderr, "memtrack report: wrote %s\n", a.output.c_str());
  return 0;
}

}  // namespace memtrack::tools
