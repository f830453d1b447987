// memtrack encode: raw 48-byte records in, artifact out.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "io.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/raw_record.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack encode [-i FILE|-] [-o FILE|-] [--level L] [--frame-events N]\n\n"
    "Reads 48-byte raw event records (docs/FORMAT.md) and writes a MemtrackArtifact: one zstd frame of\n"
    "msgpack events per N events, each with its content size and checksum.\n\n"
    "  -i, --input FILE      raw records to read (default: - for stdin)\n"
    "  -o, --output FILE     artifact to write (default: - for stdout)\n"
    "  --level L             zstd level, -7..22 (default: -5)\n"
    "  --frame-events N      events per frame (default: 65536)\n\n"
    "A bad record (unknown kind, reserved bits, truncated tail) stops encoding with an error naming the\n"
    "record index; the frames written before it stay a valid artifact holding every record before it.\n";

}  // namespace

int run_encode(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const std::string input = args.value("input", "i").value_or("-");
  const std::string output = args.value("output", "o").value_or("-");
  const int level = static_cast<int>(parse_int("level", args.value("level").value_or("-5"), -7, 22));
  const auto frame_events =
      static_cast<std::size_t>(parse_int("frame-events", args.value("frame-events").value_or("65536"), 1, 1 << 24));
  if (!args.positionals().empty()) throw UsageError("unexpected argument " + args.positionals().front());

  const int in_fd = open_input(input);
  const int out_fd = open_output(output);
  const std::string in_name = input == "-" ? "stdin" : input;
  const std::string out_name = output == "-" ? "stdout" : output;

  codec::RawRecordReader reader(in_fd, in_name);
  codec::FrameSerializer serializer(frame_events);
  codec::FrameCompressor compressor(level);
  std::vector<codec::Event> events(frame_events);
  std::vector<std::byte> compressed(codec::FrameCompressor::bound(serializer.capacity_bytes()));

  codec::Status status;
  bool wrote_frame = false;
  for (;;) {
    const std::size_t n = reader.read(events);
    // An empty input still gets one (empty) frame, so the artifact is never a zero-byte file.
    if (n == 0 && wrote_frame) break;
    const auto msgpack = serializer.serialize(std::span(events.data(), n));
    const std::size_t size = compressor.compress(msgpack, compressed, status);
    if (!status.is_ok()) break;
    status = write_all(out_fd, std::span(compressed.data(), size), out_name);
    if (!status.is_ok()) break;
    wrote_frame = true;
    if (n < frame_events) break;
  }
  if (status.is_ok() && !reader.status().is_ok()) status = reader.status();
  close_fd(in_fd);
  close_fd(out_fd);
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack encode: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace memtrack::tools
