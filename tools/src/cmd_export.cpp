// memtrack export: allocation sites as folded stacks or a pprof profile (export_format.h).
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "args.h"
#include "artifact_command.h"
#include "commands.h"
#include "export_format.h"
#include "file_symbolizer.h"
#include "io.h"
#include "memtrack/analysis/python_sites.h"
#include "report_data.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack export FILE --format folded|pprof [--by peak|allocated|count|leaked] [--pid P] [--python]\n"
    "                       [-o OUT]\n\n"
    "Writes the allocation sites of an artifact recorded with call stacks for other viewers:\n"
    "  --format folded  collapsed stacks, one line per stack: 'outermost;...;innermost VALUE'\n"
    "                   (flamegraph.pl, inferno, speedscope)\n"
    "  --format pprof   a gzipped profile.proto (go tool pprof, Pyroscope, Parca, speedscope) with the\n"
    "                   sample types peak_space, alloc_space, alloc_objects, leaked_space, leaked_objects;\n"
    "                   functions, files, lines (inlined calls as lines of one location), module mappings\n"
    "  --by peak        bytes live at the peak of the live heap (default)\n"
    "  --by allocated   bytes allocated\n"
    "  --by count       number of allocations\n"
    "  --by leaked      bytes still live at the end\n"
    "                   (folded: the VALUE; pprof: the default sample type, all types are in the file)\n"
    "  --pid P          only the allocations of process P\n"
    "  --python         each stack reduced to its Python frames (function, file, line), as top --python;\n"
    "                   a stack without any is \"[no Python frame]\"\n"
    "  -o, --output OUT where to write (default: - for stdout)\n";

}  // namespace

int run_export(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  const std::optional<std::string> format = args.value("format");
  if (!format) throw UsageError("missing --format folded|pprof");
  if (*format != "folded" && *format != "pprof")
    throw UsageError("--format '" + *format + "': expected folded or pprof");
  const bool python = args.flag("python");
  analysis::FlameValue value = analysis::FlameValue::peak;
  analysis::SiteOrder order = analysis::SiteOrder::peak;
  if (const auto by = args.value("by")) {
    if (*by == "peak") {
    } else if (*by == "allocated") {
      value = analysis::FlameValue::allocated;
      order = analysis::SiteOrder::allocated;
    } else if (*by == "count") {
      value = analysis::FlameValue::count;
      order = analysis::SiteOrder::count;
    } else if (*by == "leaked") {
      value = analysis::FlameValue::leaked;
      order = analysis::SiteOrder::leaked;
    } else {
      throw UsageError("--by '" + *by + "': expected peak, allocated, count or leaked");
    }
  }
  const ArtifactArgs a = parse_artifact_args(
      args, {.pid = true, .region = false, .default_output = [](const std::string&) { return std::string("-"); }});
  // Binary on a terminal is unreadable and can leave it in a strange state (as encode refuses).
  if (*format == "pprof" && a.output == "-" && ::isatty(1))
    throw UsageError("refusing to write a binary pprof profile to a terminal; use -o FILE or a pipe");
  OpenArtifact file(a);
  const ExportSites sites = read_export_sites(file.bytes(), a.name, order, a.pid, file.progress(), file_symbolizer());
  file.finish();
  if (const std::string missing = missing_process(a, sites.processes); sites.status.is_ok() && !missing.empty()) {
    std::fprintf(stderr, "memtrack export: %s\n", missing.c_str());
    return 2;
  }
  if (!sites.has_stacks) return refuse_lacking("export", a.name, sites.status, kLacksStacks);
  std::string bytes;
  bool any_python = false;
  const SiteSource each = [&](const std::function<void(const analysis::Site&)>& sink) {
    if (!python) return sites.each(sink);
    return sites.each([&](const analysis::Site& s) {
      const analysis::Site reduced{analysis::python_stack(s.stack), s.totals};
      any_python = any_python || analysis::has_python_frames(reduced.stack);
      sink(reduced);
    });
  };
  if (*format == "folded") {
    bytes = format_folded(each, value);
  } else if (const codec::Status s = format_pprof(each, sites.modules, value, bytes); !s) {
    std::fprintf(stderr, "memtrack export: %s: %s\n", a.name.c_str(), s.message().c_str());
    return 1;
  }
  if (python && !any_python) return refuse_lacking("export", a.name, sites.status, kLacksPythonFrames);
  if (const codec::Status written = write_output(a.output, std::move(bytes)); !written) {
    std::fprintf(stderr, "memtrack export: %s\n", written.message().c_str());
    return 1;
  }
  if (!sites.status.is_ok()) {
    std::fprintf(stderr, "memtrack export: %s (the output covers the events before it)\n",
                 sites.status.message().c_str());
    return exit_status(sites.status);
  }
  return 0;
}

}  // namespace memtrack::tools
