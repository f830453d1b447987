// Compact artifacts on the command line: `encode --compact`, `record --compact` and `convert` (docs/FORMAT.md,
// "Compact data frames"). convert --to codspeed gives back exactly what `memtrack encode` writes (the rmp_serde
// fixture's bytes once decompressed), and every reader gives the same output for both encodings.
#include <gtest/gtest.h>

#include <fstream>

#include "common/fixtures.h"
#include "common/run.h"
#include "memtrack/codec/seek_table.h"

namespace memtrack::testing {
namespace {

std::string mt() { return memtrack_bin(); }
std::string tmp(const std::string& name) { return scratch_dir() + "/" + name; }

void must(const std::string& command) {
  const auto r = run(command);
  ASSERT_EQ(r.status, 0) << command << ": " << r.err;
}

TEST(CompactCli, ConvertToCodspeedIsByteIdenticalToEncode) {
  for (const std::string input : {"events.raw", "realistic-140k.raw"}) {
    for (const std::string frames : {"", " --frame-events 1000"}) {
      SCOPED_TRACE(input + frames);
      must(mt() + " encode" + frames + " -i " + data_path(input) + " -o " + tmp("plain.zst"));
      must(mt() + " encode --compact" + frames + " -i " + data_path(input) + " -o " + tmp("compact.zst"));
      const std::string plain = slurp(tmp("plain.zst")), compact = slurp(tmp("compact.zst"));
      EXPECT_NE(plain, compact);
      must(mt() + " convert --to codspeed " + tmp("compact.zst") + " -o " + tmp("back.zst"));
      EXPECT_EQ(slurp(tmp("back.zst")), plain);
      must(mt() + " convert --to compact " + tmp("plain.zst") + " -o " + tmp("there.zst"));
      EXPECT_EQ(slurp(tmp("there.zst")), compact);
      must(mt() + " decode --format raw " + tmp("compact.zst") + " -o " + tmp("out.raw"));
      EXPECT_EQ(slurp(tmp("out.raw")), slurp(data_path(input)));
    }
  }
  // The conformance events: what CodSpeed's serializer wrote, byte for byte, after a trip through compact.
  must(mt() + " encode --compact -i " + data_path("events.raw") + " | " + mt() +
       " convert --to codspeed - | zstd -q -d -c > " + tmp("e.msgpack"));
  EXPECT_EQ(slurp(tmp("e.msgpack")), slurp(data_path("events.msgpack")));
}

TEST(CompactCli, ReadersGiveTheSameOutputForBothEncodings) {
  must(mt() + " encode --frame-events 20000 -i " + data_path("realistic-140k.raw") + " -o " + tmp("p.zst"));
  must(mt() + " encode --compact --frame-events 20000 -i " + data_path("realistic-140k.raw") + " -o " + tmp("c.zst"));
  for (const std::string command : {" decode", " decode --format csv", " decode --frames 2:4",
                                    " stats --json | grep -v bytes", " check --max-peak 1", " top --by count"}) {
    SCOPED_TRACE(command);
    const auto a = run(mt() + command + " " + tmp("p.zst") + " 2>&1 | sed s/p.zst/X/");
    const auto b = run(mt() + command + " " + tmp("c.zst") + " 2>&1 | sed s/c.zst/X/");
    EXPECT_EQ(a.out, b.out);
    EXPECT_FALSE(a.out.empty());
  }
}

TEST(CompactCli, ARecordingWithStacksReadsAsItsCodspeedConversion) {
  must(mt() + " record -q --compact -o " + tmp("rec.compact") +
       " -- /bin/sh -c 'ls / > /dev/null; ls /usr > /dev/null'");
  must(mt() + " convert --to codspeed --level -2 " + tmp("rec.compact") + " -o " + tmp("rec.msgpack"));
  // record --compact and convert --to compact share their default level (kDefaultCompactLevel).
  must(mt() + " convert --to compact " + tmp("rec.msgpack") + " -o " + tmp("rec.again"));
  EXPECT_EQ(slurp(tmp("rec.again")), slurp(tmp("rec.compact")));
  for (const std::string command : {" decode --context", " top", " export --format folded", " stats --regions"}) {
    SCOPED_TRACE(command);
    const auto a = run(mt() + command + " " + tmp("rec.compact"));
    const auto b = run(mt() + command + " " + tmp("rec.msgpack"));
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
  }
  const auto d = run(mt() + " diff --json " + tmp("rec.compact") + " " + tmp("rec.msgpack"));
  EXPECT_EQ(d.status, 0) << d.err;
}

// The frame index's entries of `path`: {data frames, context frames} (a context frame's decompressed size is 0).
std::pair<std::size_t, std::size_t> frame_kinds(const std::string& path) {
  const std::string s = slurp(path);
  const auto* b = reinterpret_cast<const std::byte*>(s.data());
  codec::Status status;
  const std::uint64_t size = codec::seek_table_size({b + s.size() - codec::kSeekTableFooterSize,
                                                     codec::kSeekTableFooterSize}, s.size(), status);
  EXPECT_TRUE(status.is_ok() && size != 0) << path;
  if (size == 0) return {};
  codec::SeekTable table;
  EXPECT_TRUE(codec::parse_seek_table({b + s.size() - size, size}, s.size(), table).is_ok()) << path;
  std::pair<std::size_t, std::size_t> out;
  for (const auto& f : table.frames) (f.decompressed_size == 0 ? out.second : out.first) += 1;
  return out;
}

TEST(CompactCli, ConvertMovesTheStacksOfEveryFrameIntoItAndBack) {
  // A compatible recording with stacks of several full frames (a malloc per Python object).
  must(mt() + " record -q -o " + tmp("multi.plain") +
       " -- env PYTHONMALLOC=malloc /usr/bin/python3 -c 'x = [str(i) * 2 for i in range(60000)]'");
  must(mt() + " convert --to compact " + tmp("multi.plain") + " -o " + tmp("multi.compact"));
  const auto plain = frame_kinds(tmp("multi.plain")), compact = frame_kinds(tmp("multi.compact"));
  ASSERT_GE(plain.first, 3u);
  EXPECT_EQ(compact.first, plain.first);
  // Each data frame's EventStacks context frame is gone into it (compact version 5).
  EXPECT_EQ(compact.second, plain.second - plain.first);
  // And back: a context frame of stacks after each data frame again, readers seeing the same records.
  must(mt() + " convert --to codspeed --level -2 " + tmp("multi.compact") + " -o " + tmp("multi.back"));
  EXPECT_EQ(frame_kinds(tmp("multi.back")), plain);
  must(mt() + " convert --to compact " + tmp("multi.back") + " -o " + tmp("multi.again"));
  EXPECT_EQ(slurp(tmp("multi.again")), slurp(tmp("multi.compact")));
  for (const std::string command : {" decode --context", " decode --context --frames 1:3",
                                    " stats --json | grep -v bytes", " top --by count", " stats --regions"}) {
    SCOPED_TRACE(command);
    const auto a = run(mt() + command + " " + tmp("multi.plain") + " 2>&1 | sed s/multi.plain/X/");
    const auto b = run(mt() + command + " " + tmp("multi.compact") + " 2>&1 | sed s/multi.compact/X/");
    const auto c = run(mt() + command + " " + tmp("multi.back") + " 2>&1 | sed s/multi.back/X/");
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.out, c.out);
    EXPECT_FALSE(a.out.empty());
  }
  const auto stacks = run(mt() + " decode --context-only " + tmp("multi.compact") + " | grep -c EventStacks");
  EXPECT_EQ(std::stoul(stacks.out), plain.first);
}

TEST(CompactCli, AnEmptyRecordingKeepsItsEmptyStacksRecordInBothEncodings) {
  // Paused from the start, /bin/true records no event: one empty frame, whose compact content is empty.
  must(mt() + " record -q --paused -o " + tmp("empty.plain") + " -- /bin/true");
  must(mt() + " record -q --paused --compact -o " + tmp("empty.compact") + " -- /bin/true");
  must(mt() + " convert --to compact " + tmp("empty.plain") + " -o " + tmp("empty.converted"));
  const std::string grep = " | grep -c '\"context\":\"EventStacks\",\"first_event\":0,\"ids\":\\[\\]'";
  for (const std::string file : {"empty.plain", "empty.compact", "empty.converted"}) {
    SCOPED_TRACE(file);
    EXPECT_EQ(run(mt() + " stats --json " + tmp(file) + " | grep -o '\"events\":[0-9]*' | head -1").out,
              "\"events\":0\n");
    EXPECT_EQ(run(mt() + " decode --context-only " + tmp(file) + grep).out, "1\n");
  }
}

TEST(CompactCli, DamageInACompactFrameIsNamedAndSalvagedOver) {
  must(mt() + " encode --compact --frame-events 1000 -i " + data_path("realistic-140k.raw") + " -o " + tmp("d.zst"));
  // Frame 3, a few bytes into its first block: the frame fails its checksum or its columns.
  std::string bytes = slurp(tmp("d.zst"));
  const auto index = run(mt() + " decode --frames 0:3 --format raw " + tmp("d.zst") + " | wc -c");
  ASSERT_EQ(index.out, "144000\n");
  std::size_t third = 0;  // frame 0 is at byte 0
  for (int f = 1; f <= 3 && third != std::string::npos; ++f) third = bytes.find("\x28\xb5\x2f\xfd", third + 1);
  ASSERT_NE(third, std::string::npos);
  bytes[third + 40] = static_cast<char>(bytes[third + 40] ^ 0x5a);
  std::ofstream(tmp("bad.zst"), std::ios::binary) << bytes;
  const auto plain = run(mt() + " decode --format raw " + tmp("bad.zst") + " -o " + tmp("bad.raw"));
  EXPECT_EQ(plain.status, 1);
  EXPECT_NE(plain.err.find("bad.zst: frame 3 at byte " + std::to_string(third) + ": "), std::string::npos) << plain.err;
  EXPECT_EQ(slurp(tmp("bad.raw")), slurp(data_path("realistic-140k.raw")).substr(0, 3000 * 48));
  const auto salvaged = run(mt() + " decode --salvage --format raw " + tmp("bad.zst") + " | wc -c");
  EXPECT_EQ(salvaged.out, std::to_string(139000 * 48) + "\n") << salvaged.err;
}

TEST(CompactCli, UsageErrors) {
  EXPECT_EQ(
      run(mt() + " encode --compact --frame-events 65537 -i " + data_path("events.raw") + " -o " + tmp("x.zst")).status,
      2);
  EXPECT_EQ(run(mt() + " convert --to json " + data_path("realistic-140k.frames.zst") + " -o " + tmp("x.zst")).status,
            2);
  EXPECT_EQ(run(mt() + " convert " + data_path("realistic-140k.frames.zst") + " -o " + tmp("x.zst")).status, 2);
  const auto bad = run(mt() + " convert --to compact " + data_path("events.raw") + " -o " + tmp("x.zst"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("memtrack convert: " + data_path("events.raw") + ": frame 0 at byte 0: "), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace memtrack::testing
