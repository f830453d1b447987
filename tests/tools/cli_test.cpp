// The `memtrack` command line: encode/decode round trips, exit codes, one-line errors, and artifacts read
// by third-party decoders (the zstd CLI; Debian's python3-zstandard + python3-msgpack).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/fixtures.h"
#include "common/run.h"

namespace memtrack::testing {
namespace {

std::string mt() { return memtrack_bin(); }
std::string tmp(const std::string& name) { return scratch_dir() + "/" + name; }

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, EncodeIsByteIdenticalToTheReferenceThroughTheZstdCli) {
  const auto r = run(mt() + " encode -i " + data_path("events.raw") + " -o " + tmp("e.zst"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto z = run("zstd -q -d -c " + tmp("e.zst") + " > " + tmp("e.msgpack"));
  ASSERT_EQ(z.status, 0) << z.err;
  EXPECT_EQ(slurp(tmp("e.msgpack")), slurp(data_path("events.msgpack")));
}

TEST(Cli, RoundTripsThroughPipesAtFrameBoundaries) {
  const std::string raw = slurp(data_path("realistic-140k.raw"));
  for (std::size_t n : {0u, 1u, 999u, 1000u, 1001u}) {
    write_bytes(tmp("in.raw"), raw.substr(0, n * 48));
    const auto r = run("cat " + tmp("in.raw") + " | " + mt() + " encode --frame-events 1000 | " + mt() +
                       " decode - --format raw > " + tmp("out.raw"));
    ASSERT_EQ(r.status, 0) << n << ": " << r.err;
    EXPECT_EQ(slurp(tmp("out.raw")), raw.substr(0, n * 48)) << n;
  }
}

TEST(Cli, PythonZstandardAndMsgpackReadOurArtifact) {
  ASSERT_EQ(run(mt() + " encode -i " + data_path("realistic-140k.raw") + " -o " + tmp("r.zst")).status, 0);
  // Three frames (65,536 + 65,536 + 8,928 events) read as one stream, the way existing consumers read it.
  const std::string script =
      "import sys, json, zstandard, msgpack\n"
      "with open(sys.argv[1], 'rb') as f:\n"
      "    reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)\n"
      "    for ev in msgpack.Unpacker(reader, raw=False):\n"
      "        print(json.dumps(ev, separators=(',', ':')))\n";
  write_bytes(tmp("read.py"), script);
  const auto py = run("/usr/bin/python3 " + tmp("read.py") + " " + tmp("r.zst"));
  ASSERT_EQ(py.status, 0) << py.err;
  const auto ours = run(mt() + " decode " + tmp("r.zst") + " --format jsonl");
  ASSERT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(count_lines(py.out), 140000u);
  EXPECT_EQ(py.out, ours.out);
}

TEST(Cli, DecodeCsvHasAHeaderAndOneRowPerEvent) {
  const auto r = run(mt() + " decode " + data_path("events.single-stream.zst") + " --format csv");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "pid,tid,timestamp,addr,type,size,old_addr");
  EXPECT_EQ(count_lines(r.out), 510u);
  EXPECT_NE(r.out.find("\n4242,4243,1700000000123456789,93824992256704,Realloc,4096,93824992256000\n"),
            std::string::npos);
}

TEST(Cli, TruncatedArtifactGivesThePrefixThenOneErrorLine) {
  ASSERT_EQ(
      run(mt() + " encode --frame-events 50000 -i " + data_path("realistic-140k.raw") + " -o " + tmp("t.zst")).status,
      0);
  const std::string artifact = slurp(tmp("t.zst"));
  write_bytes(tmp("cut.zst"), artifact.substr(0, artifact.size() - 1000));
  const auto r = run(mt() + " decode " + tmp("cut.zst") + " --format raw -o " + tmp("cut.raw"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("cut.zst: frame 2 at byte "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("input ends inside the frame"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(tmp("cut.raw")), slurp(data_path("realistic-140k.raw")).substr(0, 100000 * 48));
}

TEST(Cli, BadRecordStopsEncodingNamingItAndKeepsEverythingBefore) {
  std::string raw = slurp(data_path("realistic-140k.raw")).substr(0, 3000 * 48);
  raw[2500 * 48 + 40] = 42;  // unknown kind
  write_bytes(tmp("bad.raw"), raw);
  const auto r = run(mt() + " encode --frame-events 1000 -i " + tmp("bad.raw") + " -o " + tmp("bad.zst"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "memtrack encode: " + tmp("bad.raw") + ": record 2500: unknown kind 42\n");
  const auto d = run(mt() + " decode " + tmp("bad.zst") + " --format raw -o " + tmp("bad.out"));
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(slurp(tmp("bad.out")), raw.substr(0, 2500 * 48));
}

TEST(Cli, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(run(mt()).status, 2);
  EXPECT_EQ(run(mt() + " frobnicate").status, 2);
  EXPECT_EQ(run(mt() + " encode --level 99 -i /dev/null").status, 2);
  EXPECT_EQ(run(mt() + " encode --frame-events x").status, 2);
  EXPECT_EQ(run(mt() + " decode").status, 2);
  EXPECT_EQ(run(mt() + " decode a b").status, 2);
  EXPECT_EQ(run(mt() + " decode x --format xml").status, 2);
  const auto bad = run(mt() + " decode --bogus x");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "memtrack decode: unknown option --bogus (see 'memtrack decode --help')\n");
  for (const char* cmd : {"--help", "encode --help", "decode --help"}) {
    const auto r = run(mt() + " " + cmd);
    EXPECT_EQ(r.status, 0) << cmd;
    EXPECT_NE(r.out.find("usage: memtrack"), std::string::npos) << cmd;
  }
}

// Errc::usage maps to exit 2 like a bad option (README: "2 usage error"): --frames asks for something the
// artifact cannot give (it has no frame index, or fewer frames), and the remedy is a different command line,
// not different data. A damaged index, by contrast, is bad data and exits 1 (StatsCli.ABadIndex...).
TEST(Cli, FramesTheArtifactCannotServeIsAUsageErrorExitTwo) {
  const std::string plain = data_path("realistic-140k.frames.zst");  // CodSpeed's layout: no frame index
  const auto r = run(mt() + " decode " + plain + " --frames 0:1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "memtrack decode: " + plain + ": no frame index; decode the whole file\n");

  ASSERT_EQ(run(mt() + " encode --frame-events 100 -i " + data_path("events.raw") + " -o " + tmp("u.zst")).status, 0);
  const auto beyond = run(mt() + " decode " + tmp("u.zst") + " --frames 0:1000");
  EXPECT_EQ(beyond.status, 2);
  EXPECT_EQ(count_lines(beyond.err), 1u) << beyond.err;
  EXPECT_NE(beyond.err.find(": --frames 0:1000 is outside the "), std::string::npos) << beyond.err;
}

TEST(Cli, UncreatableOutputIsAnIoErrorNamingThePath) {
  const auto r = run(mt() + " encode -i " + data_path("events.raw") + " -o /nonexistent-dir/out.zst");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "memtrack encode: /nonexistent-dir/out.zst: cannot create: No such file or directory\n");
}

TEST(Cli, MissingInputIsAnIoErrorNamingTheFile) {
  const auto r = run(mt() + " decode /nonexistent/a.zst");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "memtrack decode: /nonexistent/a.zst: cannot open: No such file or directory\n");
}

}  // namespace
}  // namespace memtrack::testing

namespace memtrack::testing {
namespace {

// `memtrack encode` writes the frame index, so its artifacts support `decode --frames` and parallel stats,
// and plain decoders still read them (the zstd CLI skips the index frame).
TEST(Cli, EncodedArtifactsCarryAFrameIndex) {
  ASSERT_EQ(run(memtrack_bin() + " encode --frame-events 10000 -i " + data_path("realistic-140k.raw") + " -o " +
                scratch_dir() + "/idx.zst")
                .status,
            0);
  const auto slice = run(memtrack_bin() + " decode " + scratch_dir() + "/idx.zst --frames 3:5 --format raw -o " +
                         scratch_dir() + "/slice.raw");
  ASSERT_EQ(slice.status, 0) << slice.err;
  EXPECT_EQ(slurp(scratch_dir() + "/slice.raw"), slurp(data_path("realistic-140k.raw")).substr(30000 * 48, 20000 * 48));
  // Several frames plus the index, still exactly the reference msgpack for a plain zstd reader.
  ASSERT_EQ(run(memtrack_bin() + " encode --frame-events 100 -i " + data_path("events.raw") + " -o " + scratch_dir() +
                "/small-idx.zst")
                .status,
            0);
  const auto z = run("zstd -q -d -c " + scratch_dir() + "/small-idx.zst");
  ASSERT_EQ(z.status, 0) << z.err;
  EXPECT_EQ(z.out, slurp(data_path("events.msgpack")));
}

}  // namespace
}  // namespace memtrack::testing
