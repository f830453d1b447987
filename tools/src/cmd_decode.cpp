// memtrack decode: artifact in, events out as JSON lines, CSV or raw records, in order.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "event_format.h"
#include "io.h"
#include "memtrack/codec/artifact_decoder.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack decode FILE [--format jsonl|csv|raw] [-o FILE|-]\n\n"
    "Reads a MemtrackArtifact (any number of zstd frames; FILE may be - for stdin) and writes its events in\n"
    "order, with memory bounded by one frame whatever the file size.\n\n"
    "  --format jsonl|csv|raw   JSON lines (default), CSV with a header row, or 48-byte raw records\n"
    "  -o, --output FILE        where to write (default: - for stdout)\n\n"
    "On a damaged artifact the output holds exactly the events before the damage, then one line on stderr\n"
    "names the frame index and byte offset, and the exit status is 1.\n";

}  // namespace

int run_decode(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  OutputFormat format = OutputFormat::jsonl;
  if (auto f = args.value("format")) {
    if (!parse_output_format(*f, format)) throw UsageError("--format: '" + *f + "' is not jsonl, csv or raw");
  }
  const std::string output = args.value("output", "o").value_or("-");
  const auto files = args.positionals();
  if (files.size() != 1) throw UsageError(files.empty() ? "missing FILE" : "more than one FILE");

  const int in_fd = open_input(files[0]);
  const int out_fd = open_output(output);
  const std::string in_name = files[0] == "-" ? "stdin" : files[0];
  codec::FdSource source(in_fd);
  codec::ArtifactDecoder decoder(source, in_name);
  BufferedOutput out(out_fd, output == "-" ? "stdout" : output);
  out.buffer() += format_header(format);

  std::vector<codec::Event> events(4096);
  codec::Status status;
  while (status.is_ok()) {
    const std::size_t n = decoder.next(events);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) append_event(out.buffer(), events[i], format);
    status = out.maybe_flush();
  }
  codec::Status flushed = out.flush();
  if (status.is_ok()) status = flushed;
  if (status.is_ok()) status = decoder.status();
  close_fd(in_fd);
  close_fd(out_fd);
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack decode: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace memtrack::tools
