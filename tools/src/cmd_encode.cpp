// memtrack encode: raw 48-byte records in, artifact out, on the pipeline (memtrack::pipeline).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "interrupt.h"
#include "io.h"
#include "memtrack/codec/compact.h"
#include "memtrack/pipeline/raw_record_reader.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "output_checks.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack encode [-i FILE|-] [-o FILE|-] [--workers N] [--level L] [--frame-events N]\n"
    "                       [--in-flight K | --memory-budget MIB] [--compact] [--stats]\n\n"
    "Reads 48-byte raw event records (docs/FORMAT.md) and writes a MemtrackArtifact: one zstd frame of\n"
    "msgpack events per N events, each with its content size and checksum. Frames are encoded in parallel\n"
    "and written in order; the output bytes do not depend on --workers, --in-flight or --memory-budget.\n\n"
    "  -i, --input FILE      raw records to read (default: - for stdin)\n"
    "  -o, --output FILE     artifact to write (default: - for stdout)\n"
    "  --workers N           encoding threads, 0..1024 (default 0: hardware threads)\n"
    "  --level L             zstd level, -7..22 (default: -5; with --compact, 1)\n"
    "  --frame-events N      events per frame (default: 65536)\n"
    "  --in-flight K         frames alive at once (read, encoding, or waiting to be written); default:\n"
    "                        derived from the memory budget (4 at the default frame size)\n"
    "  --memory-budget MIB   budget for in-flight frame buffers, in MiB (default: 64)\n"
    "  --compact             compact data frames (docs/FORMAT.md, \"Compact data frames\"): every field of\n"
    "                        every event in a fraction of the bytes, read by every memtrack command but not\n"
    "                        by CodSpeed's reader (memtrack convert --to codspeed gives it); --frame-events\n"
    "                        at most 65536\n"
    "  --stats               print events, frames, bytes in and out, K, the slots used and the encode\n"
    "                        stage's CPU time (serialize + compress, all workers) on stderr at the end\n\n"
    "A bad record (unknown kind, reserved bits, truncated tail) stops encoding with an error naming the\n"
    "record index; the frames written before it stay a valid artifact holding every record before it.\n"
    "SIGINT or SIGTERM stops reading: every whole record read so far is encoded, the artifact is finished\n"
    "(with its frame index), and the exit status is 128 + the signal number.\n";

}  // namespace

int run_encode(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  const std::string input = args.value("input", "i").value_or("-");
  const std::string output = args.value("output", "o").value_or("-");
  pipeline::EncoderOptions options;
  options.compact = args.flag("compact");
  options.level = static_cast<int>(parse_int(
      "level", args.value("level").value_or(options.compact ? std::to_string(codec::kDefaultCompactLevel) : "-5"), -7,
      22));
  options.frame_events =
      static_cast<std::size_t>(parse_int("frame-events", args.value("frame-events").value_or("65536"), 1, 1 << 24));
  if (auto w = args.value("workers")) options.workers = static_cast<unsigned>(parse_int("workers", *w, 0, 1024));
  const auto in_flight = args.value("in-flight");
  const auto budget = args.value("memory-budget");
  if (in_flight && budget) throw UsageError("--in-flight and --memory-budget are exclusive");
  if (in_flight) options.max_in_flight = static_cast<std::size_t>(parse_int("in-flight", *in_flight, 1, 1024));
  if (budget)
    options.memory_budget_bytes = static_cast<std::size_t>(parse_int("memory-budget", *budget, 1, 1 << 20)) << 20;
  if (options.compact && options.frame_events > codec::kMaxCompactFrameEvents)
    throw UsageError("--compact frames hold at most " + std::to_string(codec::kMaxCompactFrameEvents) + " events");
  const bool print_stats = args.flag("stats");
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals().front());

  refuse_output_is_input(input, output);
  // Binary on a terminal is unreadable and can leave it in a strange state (zstd refuses too).
  if (output == "-" && ::isatty(1)) throw UsageError("refusing to write a binary artifact to a terminal; use -o FILE");
  if (input == "-" && ::isatty(0))
    std::fputs("memtrack encode: reading raw records from the terminal (end with Ctrl-D); use -i FILE or a pipe\n",
               stderr);

  // SIGINT/SIGTERM stop reading; everything read so far is encoded, the artifact is finished, exit 128+sig.
  InterruptGuard interrupt_guard;
  const int in_fd = open_input(input);
  const int out_fd = open_output(output);
  // The reader is the pipeline's source: it fills the pipeline's frame buffers directly.
  pipeline::RawRecordReader source(in_fd, input == "-" ? "stdin" : input);
  source.stop_on_signal(InterruptGuard::flag());
  pipeline::FdSink sink(out_fd, output == "-" ? "stdout" : output);
  pipeline::EncoderStats stats;
  const codec::Status status = pipeline::encode_stream(source, sink, options, &stats);
  close_fd(in_fd);
  close_fd(out_fd);
  if (print_stats) {
    std::fprintf(stderr,
                 "events %llu frames %llu msgpack-bytes %llu zstd-bytes %llu in-flight-cap %zu slots-used %zu "
                 "encode-cpu-ms %.3f\n",
                 static_cast<unsigned long long>(stats.events), static_cast<unsigned long long>(stats.frames),
                 static_cast<unsigned long long>(stats.bytes_in), static_cast<unsigned long long>(stats.bytes_out),
                 stats.in_flight_cap, stats.slots_used, static_cast<double>(stats.encode_cpu_ns) / 1e6);
  }
  if (!status.is_ok()) {
    if (status.code() == codec::Errc::interrupted) {
      std::fprintf(stderr, "memtrack encode: %s; the artifact holds every record before it\n",
                   status.message().c_str());
      return 128 + static_cast<int>(*InterruptGuard::flag());
    }
    std::fprintf(stderr, "memtrack encode: %s\n", status.message().c_str());
    return exit_status(status);
  }
  return 0;
}

}  // namespace memtrack::tools
