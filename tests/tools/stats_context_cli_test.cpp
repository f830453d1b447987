// `memtrack stats` on artifacts written by the pipeline with a context section: the lifecycle records reach
// the accounting through both readers (the frame index, which lists the context frames too, and the
// sequential one, for a file and for a pipe alike: one pass reads both), `decode --frames` counts data
// frames only, and `decode --context` shows the records among the events.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "common/run.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace memtrack::testing {
namespace {

using codec::EventKind;
constexpr std::uint64_t kMiB = 1 << 20;

// `children` processes started one after another by pid 100, each allocating 1 MiB and exiting with it
// still allocated: one event each, so child k's Malloc is event k.
std::string write_sequential_children(const std::string& name, int children, bool with_index) {
  pipeline::MemorySink sink;
  pipeline::ContextChannel channel;
  pipeline::EncoderOptions options;
  options.frame_events = 4;  // several data frames, with context frames between them
  options.workers = 2;
  options.context = &channel;
  options.write_seek_table = with_index;
  channel.add(codec::RecordingInfo{"test", {"sh"}, 0, 0, {"lifecycle"}, 99});
  channel.add(codec::ProcessStart{100, 99, 0, 0});
  {
    pipeline::StreamEncoder encoder(sink, options);
    for (int k = 0; k < children; ++k) {
      const std::int32_t pid = 200 + k;
      const auto at = static_cast<std::uint64_t>(k);
      channel.add(codec::ProcessStart{pid, 100, at, at * 10});
      EXPECT_TRUE(encoder.push(codec::make_event(EventKind::Malloc, pid, pid, at * 10 + 1, 0x1000 + at, kMiB)));
      channel.add(codec::ProcessExit{pid, at + 1, at * 10 + 2, 0, std::nullopt});
    }
    EXPECT_TRUE(encoder.finish());
  }
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(sink.bytes().data()), static_cast<std::streamsize>(sink.bytes().size()));
  return path;
}

std::string json_value(const std::string& json, const std::string& key) {
  const std::size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "<absent>";
  const std::size_t begin = at + key.size() + 3;
  return json.substr(begin, json.find_first_of(",}", begin) - begin);
}

TEST(StatsContext, SequentialChildrenPeakAtOneChildThroughTheIndexAndSequentially) {
  for (const bool with_index : {true, false}) {
    const std::string file = write_sequential_children(with_index ? "kids.idx.mt" : "kids.seq.mt", 30, with_index);
    const RunResult r = run(memtrack_bin() + " stats --json " + file);
    ASSERT_EQ(r.status, 0) << r.err;
    // Computed here: each child's 1 MiB stops counting when it exits, before the next one allocates.
    EXPECT_EQ(json_value(r.out, "peak_live_bytes"), std::to_string(kMiB)) << with_index << r.out;
    EXPECT_EQ(json_value(r.out, "context"), "true") << r.out;
    EXPECT_EQ(json_value(r.out, "complete"), "true") << r.out;
    EXPECT_EQ(json_value(r.out, "events"), "30") << r.out;
    EXPECT_EQ(json_value(r.out, "indexed"), with_index ? "true" : "false") << r.out;
  }
}

TEST(StatsContext, DecodeFramesCountsDataFramesOnly) {
  const std::string file = write_sequential_children("kids.frames.mt", 10, true);  // frames of 4, 4, 2
  const RunResult all = run(memtrack_bin() + " decode " + file + " --frames 1:3");
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), '\n'), 6) << all.out;
  EXPECT_NE(all.out.find("\"pid\":204"), std::string::npos) << all.out;
  const RunResult outside = run(memtrack_bin() + " decode " + file + " --frames 3:4");
  EXPECT_EQ(outside.status, 2);
  EXPECT_NE(outside.err.find("is outside the 3 frames of the index"), std::string::npos) << outside.err;
}

// Without the "indexed" key: a file with an index is read through it, a pipe sequentially; everything else
// must be the same bytes.
std::string without_indexed(std::string json) {
  for (const char* v : {"\"indexed\":true", "\"indexed\":false"})
    if (const std::size_t at = json.find(v); at != std::string::npos) json.erase(at, std::string(v).size());
  return json;
}

// `stats -` from a pipe read the events only (the context frames were read from the file beforehand, which
// a pipe cannot do): 30 sequential children gave a 30 MiB peak there. One pass now reads both.
TEST(StatsContext, TheSameArtifactThroughAFileAndAPipeGivesTheSameJson) {
  for (const bool with_index : {true, false}) {
    const std::string file = write_sequential_children(with_index ? "pipe.idx.mt" : "pipe.seq.mt", 30, with_index);
    const RunResult from_file = run(memtrack_bin() + " stats --json " + file);
    const RunResult from_pipe = run("cat " + file + " | " + memtrack_bin() + " stats --json -");
    const RunResult from_stdin = run(memtrack_bin() + " stats --json - < " + file);
    ASSERT_EQ(from_file.status, 0) << from_file.err;
    ASSERT_EQ(from_pipe.status, 0) << from_pipe.err;
    ASSERT_EQ(from_stdin.status, 0) << from_stdin.err;
    EXPECT_EQ(json_value(from_pipe.out, "peak_live_bytes"), std::to_string(kMiB)) << from_pipe.out;
    EXPECT_EQ(json_value(from_pipe.out, "context"), "true") << from_pipe.out;
    EXPECT_EQ(json_value(from_pipe.out, "indexed"), "false") << from_pipe.out;
    if (with_index) {
      EXPECT_EQ(without_indexed(from_pipe.out), without_indexed(from_file.out));
    } else {
      EXPECT_EQ(from_pipe.out, from_file.out);
    }
    EXPECT_EQ(from_stdin.out, from_file.out);
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return lines;
}

// Child k (pid 200 + k) starts at event k, allocates (event k) and exits at event k + 1: in stream order its
// ProcessStart comes right before its Malloc, its ProcessExit right after (before child k + 1's start).
TEST(DecodeContext, RecordsComeAmongTheEventsInStreamOrderFromAFileAndAPipe) {
  const std::string file = write_sequential_children("ctx.mt", 10, true);
  const RunResult r = run(memtrack_bin() + " decode --context " + file);
  ASSERT_EQ(r.status, 0) << r.err;
  const RunResult piped = run("cat " + file + " | " + memtrack_bin() + " decode --context -");
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, r.out);
  const std::vector<std::string> lines = lines_of(r.out);
  // Recording, ProcessStart of 100, 10 x (start, malloc, exit), End.
  ASSERT_EQ(lines.size(), 33u) << r.out;
  EXPECT_EQ(lines[0].rfind("{\"context\":\"Recording\",\"memtrack\":\"test\",\"command\":[\"sh\"]", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "{\"context\":\"ProcessStart\",\"pid\":100,\"ppid\":99,\"event\":0,\"timestamp\":0}");
  for (int k = 0; k < 10; ++k) {
    const std::string pid = std::to_string(200 + k);
    const std::size_t at = 2 + 3 * static_cast<std::size_t>(k);
    EXPECT_EQ(
        lines[at].rfind(
            "{\"context\":\"ProcessStart\",\"pid\":" + pid + ",\"ppid\":100,\"event\":" + std::to_string(k) + ",", 0),
        0u)
        << lines[at];
    EXPECT_EQ(lines[at + 1].rfind("{\"pid\":" + pid + ",", 0), 0u) << lines[at + 1];
    EXPECT_NE(lines[at + 1].find("\"type\":\"Malloc\""), std::string::npos) << lines[at + 1];
    EXPECT_EQ(lines[at + 2], "{\"context\":\"ProcessExit\",\"pid\":" + pid + ",\"event\":" + std::to_string(k + 1) +
                                 ",\"timestamp\":" + std::to_string(k * 10 + 2) + ",\"status\":0,\"signal\":null}");
  }
  EXPECT_EQ(lines[32], "{\"context\":\"End\",\"events\":10,\"frames\":3,\"clean\":true}");

  // Alone: the same records, in the same order, no events.
  const RunResult only = run(memtrack_bin() + " decode --context-only " + file);
  ASSERT_EQ(only.status, 0) << only.err;
  std::string expected;
  for (const std::string& l : lines)
    if (l.rfind("{\"context\":", 0) == 0) expected += l + "\n";
  EXPECT_EQ(only.out, expected);
  EXPECT_EQ(std::count(only.out.begin(), only.out.end(), '\n'), 23);

  // Without --context, decode's output is what it was: the events only.
  const RunResult plain = run(memtrack_bin() + " decode " + file);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out.find("\"context\""), std::string::npos) << plain.out;
  EXPECT_EQ(std::count(plain.out.begin(), plain.out.end(), '\n'), 10);
}

TEST(DecodeContext, FramesGiveEachFramesRecordsAfterItsEvents) {
  const std::string file = write_sequential_children("ctx.frames.mt", 10, true);  // frames of 4, 4, 2
  const RunResult r = run(memtrack_bin() + " decode --context " + file + " --frames 2:3");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  // Frame 2: the Mallocs of children 8 and 9, then the records of the context frames after it (which records
  // go after which frame is the writer thread's timing: a record may be written early), End last.
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[0].find("\"pid\":208"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"pid\":209"), std::string::npos) << lines[1];
  for (std::size_t i = 2; i < lines.size(); ++i) EXPECT_EQ(lines[i].rfind("{\"context\":", 0), 0u) << lines[i];
  EXPECT_EQ(lines.back(), "{\"context\":\"End\",\"events\":10,\"frames\":3,\"clean\":true}");
  // Every frame: every event and every record, each once.
  const RunResult all = run(memtrack_bin() + " decode --context " + file + " --frames 0:");
  ASSERT_EQ(all.status, 0) << all.err;
  const std::vector<std::string> every = lines_of(all.out);
  EXPECT_EQ(every.size(), 33u) << all.out;
  EXPECT_EQ(
      std::count_if(every.begin(), every.end(), [](const std::string& l) { return l.rfind("{\"context\":", 0) == 0; }),
      23);
}

TEST(DecodeContext, UsageErrors) {
  const std::string file = write_sequential_children("ctx.usage.mt", 2, true);
  for (const std::string& args : {std::string("--context --format csv"), std::string("--context-only --format raw"),
                                  std::string("--context --salvage")}) {
    const RunResult r = run(memtrack_bin() + " decode " + args + " " + file);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("--context"), std::string::npos) << r.err;
  }
  const RunResult help = run(memtrack_bin() + " decode --help");
  EXPECT_NE(help.out.find("--context-only"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace memtrack::testing
