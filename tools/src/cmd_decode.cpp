// memtrack decode: artifact in, events out as JSON lines, CSV or raw records, in order.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "context_format.h"
#include "event_format.h"
#include "io.h"
#include "memtrack/analysis/frame_reader.h"
#include "memtrack/analysis/indexed_file.h"
#include "memtrack/analysis/stream_frame_reader.h"
#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/frame_decoder.h"
#include "memtrack/pipeline/fd_io.h"
#include "output_checks.h"
#include "progress.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack decode FILE [--format jsonl|csv|raw] [-o FILE|-] [--frames A:B] [--salvage]\n"
    "                            [--context|--context-only]\n\n"
    "Reads a MemtrackArtifact (any number of zstd frames; FILE may be - for stdin) and writes its events in\n"
    "order, with memory bounded by one frame whatever the file size.\n\n"
    "  --format jsonl|csv|raw   JSON lines (default), CSV with a header row, or 48-byte raw records\n"
    "  -o, --output FILE        where to write (default: - for stdout)\n"
    "  --frames A:B             only frames A to B-1 (0-based; A: or :B leave an end open), read through the\n"
    "                           frame index without touching the rest of the file\n"
    "  --salvage                on a damaged frame, skip to the next frame and continue; each skip is reported\n"
    "                           on stderr, and the exit status is 1 if anything was skipped\n"
    "  --context                also the context records (processes, execs, exits, stacks, symbols: artifacts of\n"
    "                           `memtrack record`), one JSON object per line among the events in stream order:\n"
    "                           a record before the events at and after its position. Its type is under the\n"
    "                           key \"context\" (events never have it), then its fields by their names in\n"
    "                           docs/FORMAT.md. With --frames, each frame's records follow its events (their\n"
    "                           file order). jsonl only; not with --salvage\n"
    "  --context-only           the context records alone, no events\n\n"
    "On a damaged artifact the output holds exactly the events before the damage, then one line on stderr\n"
    "names the frame index and byte offset, and the exit status is 1.\n\n"
    "An event of a type this version does not know (CodSpeed's newer kinds: Rss, Fork, Exec, ...) is passed\n"
    "through in its place: jsonl with all its keys, csv with its pid, tid, timestamp, addr and type; raw\n"
    "records cannot hold it, so --format raw stops there with exit status 1.\n";

enum class Context { none, with_events, only };

using analysis::FrameRange;

// A foreign event (a type this reader does not know) passed through; raw records cannot hold one.
codec::Status write_foreign(std::string& out, const std::string& name, std::uint64_t events_before,
                            const codec::ForeignEvent& f, OutputFormat format) {
  if (format == OutputFormat::raw) return {codec::Errc::bad_record, raw_foreign_error(name, events_before, f)};
  append_foreign_event(out, f, format);
  return {};
}

FrameRange parse_frames(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw UsageError("--frames: '" + text + "' is not A:B");
  FrameRange r;
  const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
  if (!a.empty()) r.first = static_cast<std::size_t>(parse_int("frames", a, 0, INT64_MAX));
  if (!b.empty()) r.last = static_cast<std::size_t>(parse_int("frames", b, 0, INT64_MAX));
  if (r.last < r.first) throw UsageError("--frames: B is before A in '" + text + "'");
  return r;
}

std::uint64_t file_size(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Frames [range.first, range.last) through the index, one frame in flight (memory bounded by one frame, as
// for the whole file): each read with one pread and verified whole before its events are written.
codec::Status decode_frames(int fd, const std::string& name, const codec::SeekTable& index, FrameRange range,
                            OutputFormat format, Context context, BufferedOutput& out) {
  const auto read_at = [&](std::uint64_t offset, std::span<std::byte> bytes) {
    return analysis::read_at(fd, name, offset, bytes);
  };
  // The index also lists context frames; --frames counts data frames only (a frame of events).
  analysis::IndexedFrameReader all(index, read_at, name, {}, 1);
  const std::uint64_t frames = all.data_frames();
  if (range.first > frames || (range.last != SIZE_MAX && range.last > frames)) {
    return {codec::Errc::usage, name + ": --frames " + std::to_string(range.first) + ":" +
                                    (range.last == SIZE_MAX ? "" : std::to_string(range.last)) + " is outside the " +
                                    std::to_string(frames) + (frames == 1 ? " frame" : " frames") + " of the index"};
  }
  analysis::IndexedFrameReader reader(index, read_at, name, {range.first, std::min<std::size_t>(range.last, frames)},
                                      1);
  ProgressMeter meter(reader.bytes_in_range());
  std::uint64_t done = 0, count = 0;
  return reader.run({}, [&](const analysis::DecodedFrame& f) {
    if (context != Context::only) {
      std::size_t written = 0;
      for (std::size_t i = 0; f.foreign != nullptr && i < f.foreign->size(); ++i) {
        const codec::ForeignEvent foreign = (*f.foreign)[i];
        for (; written < foreign.position && written < f.events.size(); ++written)
          append_event(out.buffer(), f.events[written], format);
        codec::Status status = write_foreign(out.buffer(), name, count + written, foreign, format);
        if (!status.is_ok()) return status;
      }
      for (; written < f.events.size(); ++written) append_event(out.buffer(), f.events[written], format);
    }
    if (context != Context::none)
      for (const codec::ContextRecord& r : f.context) append_context_json(out.buffer(), r);
    codec::Status status = out.maybe_flush();
    if (!status.is_ok()) return status;
    done += f.compressed_bytes;
    count += f.events.size();
    meter.update(done, count);
    return codec::Status{};
  });
}

// Writes what a pass delivers; the first output failure stops the pass (checked after each frame).
class ContextWriter final : public analysis::ArtifactConsumer {
 public:
  ContextWriter(BufferedOutput& out, OutputFormat format, bool events) : out_(out), format_(format), events_(events) {}
  void add_context(const codec::ContextRecord& record) override { append_context_json(out_.buffer(), record); }
  void add(std::span<const codec::Event> events) override {
    if (!events_) return;
    for (const codec::Event& e : events) append_event(out_.buffer(), e, format_);
  }
  void add_foreign(const codec::ForeignEvent& event) override {
    if (events_) append_foreign_event(out_.buffer(), event, format_);  // jsonl: --context is JSON lines only
  }

 private:
  BufferedOutput& out_;
  OutputFormat format_;
  bool events_;
};

// The whole file in stream order with its context records (StreamFrameReader).
codec::Status decode_with_context(int fd, const std::string& name, Context context, OutputFormat format,
                                  BufferedOutput& out) {
  pipeline::FdSource source(fd);
  analysis::StreamFrameReader reader(source, name);
  ContextWriter writer(out, format, context == Context::with_events);
  analysis::ArtifactConsumer* consumers[] = {&writer};
  analysis::StreamOrder order(consumers);
  ProgressMeter meter(file_size(fd));
  bool output_failed = false;
  const codec::Status status = reader.run([&](const analysis::DecodedFrame& f) {
    order.add(f.context, f.events, f.foreign);
    meter.update(reader.progress().compressed_bytes, order.events());
    codec::Status flushed = out.maybe_flush();
    output_failed = !flushed.is_ok();
    return flushed;
  });
  // The records positioned after the last event (or after the damage's last good frame) come last.
  if (!output_failed) order.finish();
  return status;
}

// The whole file in order; with `salvage`, damaged stretches are skipped and reported, and the status
// returned is the first damage (so the exit status is 1) while decoding continued past it.
codec::Status decode_stream(int fd, const std::string& name, bool salvage, OutputFormat format, BufferedOutput& out) {
  pipeline::FdSource source(fd);
  codec::ArtifactDecoder decoder(source, name);
  ProgressMeter meter(file_size(fd));
  std::vector<codec::Event> events(4096);
  codec::Status first_damage;
  for (;;) {
    const std::size_t n = decoder.next(events);
    const codec::ForeignEvents& foreign = decoder.foreign();
    for (std::size_t i = 0; i < foreign.size(); ++i) {
      codec::Status status = write_foreign(out.buffer(), name, decoder.progress().events - n, foreign[i], format);
      if (!status.is_ok()) return status;
    }
    if (n > 0 || !foreign.empty()) {
      for (std::size_t i = 0; i < n; ++i) append_event(out.buffer(), events[i], format);
      codec::Status flushed = out.maybe_flush();
      if (!flushed.is_ok()) return flushed;
      meter.update(decoder.progress().compressed_bytes, decoder.progress().events);
      continue;
    }
    if (decoder.status().is_ok()) break;
    if (!salvage || decoder.status().code() == codec::Errc::io) return decoder.status();
    if (first_damage.is_ok()) first_damage = decoder.status();
    // Write what came before the damage first, so stdout and stderr tell the story in order.
    codec::Status flushed = out.flush();
    if (!flushed.is_ok()) return flushed;
    meter.finish();
    const std::string what = decoder.status().message();
    std::uint64_t from = 0, resumed = 0;
    const bool found = decoder.resync(from, resumed);
    std::fprintf(stderr, "memtrack decode: %s; skipped bytes %llu..%llu%s\n", what.c_str(),
                 static_cast<unsigned long long>(from), static_cast<unsigned long long>(resumed),
                 found ? ", resuming at the next frame" : " (end of input)");
    if (!found) {
      if (!decoder.status().is_ok()) return decoder.status();  // a read error while searching
      break;
    }
  }
  if (!first_damage.is_ok()) {
    return {first_damage.code(), name + ": damaged data was skipped (--salvage); the output lacks those events"};
  }
  return {};
}

}  // namespace

int run_decode(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  OutputFormat format = OutputFormat::jsonl;
  if (auto f = args.value("format")) {
    if (!parse_output_format(*f, format)) throw UsageError("--format: '" + *f + "' is not jsonl, csv or raw");
  }
  const std::string output = args.value("output", "o").value_or("-");
  std::optional<FrameRange> range;
  if (auto f = args.value("frames")) range = parse_frames(*f);
  const bool salvage = args.flag("salvage");
  const bool context_only = args.flag("context-only"), with_context = args.flag("context");
  if (context_only && with_context)
    throw UsageError("--context and --context-only exclude each other (--context-only: the records alone)");
  const Context context = context_only ? Context::only : with_context ? Context::with_events : Context::none;
  const auto files = args.positionals();
  if (files.size() != 1) throw UsageError(files.empty() ? "missing FILE" : "more than one FILE");
  if (range && salvage) throw UsageError("--frames and --salvage do not go together");
  if (context != Context::none && salvage) throw UsageError("--context and --salvage do not go together");
  if (context != Context::none && format != OutputFormat::jsonl)
    throw UsageError("--context: context records are JSON lines (--format jsonl)");
  refuse_output_is_input(files[0], output);
  // Binary on a terminal is unreadable and can leave it in a strange state (as encode refuses).
  if (format == OutputFormat::raw && output == "-" && ::isatty(1))
    throw UsageError("refusing to write raw records to a terminal; use -o FILE or a pipe");

  const int in_fd = open_input(files[0]);
  const std::string in_name = files[0] == "-" ? "stdin" : files[0];
  codec::Status status;
  std::optional<codec::SeekTable> index;
  if (range) {
    status = analysis::load_index(in_fd, in_name, index);
    if (status.is_ok() && !index) {
      status = {codec::Errc::usage, in_name + ": no frame index; decode the whole file"};
    }
  }
  if (!status.is_ok()) {
    close_fd(in_fd);
    std::fprintf(stderr, "memtrack decode: %s\n", status.message().c_str());
    return exit_status(status);
  }

  OutputFile out_file(output);
  BufferedOutput out(out_file.fd(), out_file.name());
  const std::string_view header = format_header(format);
  out.buffer() += header;
  if (range) {
    status = decode_frames(in_fd, in_name, *index, *range, format, context, out);
  } else if (context != Context::none) {
    status = decode_with_context(in_fd, in_name, context, format, out);
  } else {
    status = decode_stream(in_fd, in_name, salvage, format, out);
  }
  const bool decoded = status.is_ok() || out.written() + out.buffer().size() > header.size();
  codec::Status flushed = out.flush();
  // An existing output is replaced only by a whole output, or by the part of a damaged input before the
  // damage: input that gave nothing (not an artifact) or a failed write leave it as it was.
  if (flushed.is_ok() && !out.failed() && decoded) flushed = out_file.commit();
  if (status.is_ok()) status = flushed;
  close_fd(in_fd);
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack decode: %s\n", status.message().c_str());
    return exit_status(status);
  }
  return 0;
}

}  // namespace memtrack::tools
