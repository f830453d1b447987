// `memtrack decode` and `memtrack stats` on damaged and indexed artifacts, through the real binary: every
// truncation point and random corruptions give a prefix of the true events plus one error line, --salvage
// skips exactly the damaged frame, the frame index is ignored by plain decoders (zstd CLI, python-zstandard,
// our sequential decoder), and --frames returns the right slice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "common/artifacts.h"
#include "common/fixtures.h"
#include "common/run.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace memtrack::testing {
namespace {

std::string mt() { return memtrack_bin(); }
std::string tmp(const std::string& name) { return scratch_dir() + "/" + name; }

void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string raw_of(std::span<const codec::Event> events) {
  const std::vector<std::byte> raw = raw_records(events);
  return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
}

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

bool is_prefix(const std::string& prefix, const std::string& all) {
  return prefix.size() <= all.size() && all.compare(0, prefix.size(), prefix) == 0;
}

TEST(DecodeCli, EveryTruncationPointGivesAPrefixThenOneErrorLine) {
  const auto events = generate_trace(24, 21);
  const auto a = build_artifact(events, 8, false);  // 3 frames
  const std::string all = raw_of(events);
  for (std::size_t cut = 0; cut < a.bytes.size(); ++cut) {
    write_bytes(tmp("cut.zst"), std::span(a.bytes.data(), cut));
    const auto r = run(mt() + " decode " + tmp("cut.zst") + " --format raw");
    ASSERT_TRUE(is_prefix(r.out, all)) << "cut at " << cut;
    ASSERT_EQ(r.out.size() % (8 * 48), 0u) << "cut at " << cut << ": part of a frame was written";
    const bool between_frames =
        cut > 0 && std::find(a.frame_offsets.begin(), a.frame_offsets.end(), cut) != a.frame_offsets.end();
    if (between_frames) {
      ASSERT_EQ(r.status, 0) << "cut at " << cut << ": " << r.err;
      continue;
    }
    ASSERT_EQ(r.status, 1) << "cut at " << cut;
    ASSERT_EQ(count_lines(r.err), 1u) << r.err;
    const std::string frame = std::to_string(r.out.size() / (8 * 48));
    ASSERT_EQ(r.err.rfind("memtrack decode: " + tmp("cut.zst") + ": frame " + frame + " at byte ", 0), 0u) << r.err;
  }
}

TEST(DecodeCli, RandomCorruptionGivesAPrefixAndAnErrorNeverAWrongEvent) {
  const auto events = generate_trace(600, 22);
  const auto a = build_artifact(events, 200, true);
  const std::string all = raw_of(events);
  std::mt19937 rng(5);
  int errors = 0;
  for (int trial = 0; trial < 150; ++trial) {
    auto damaged = a.bytes;
    const std::size_t pos = rng() % damaged.size();
    damaged[pos] ^= static_cast<std::byte>(1u << (rng() % 8));
    write_bytes(tmp("flip.zst"), damaged);
    const auto r = run(mt() + " decode " + tmp("flip.zst") + " --format raw");
    ASSERT_TRUE(is_prefix(r.out, all)) << "flip at " << pos;
    if (r.status == 0) {
      ASSERT_EQ(r.out, all) << "flip at " << pos << " lost events without an error";
    } else {
      ++errors;
      ASSERT_EQ(r.status, 1);
      ASSERT_EQ(count_lines(r.err), 1u) << r.err;
    }
  }
  EXPECT_GT(errors, 120);  // flips in the index's entries don't matter to a sequential decode
}

TEST(DecodeCli, SalvageSkipsExactlyTheDamagedFrameAndReportsIt) {
  const auto events = generate_trace(1000, 23);
  auto a = build_artifact(events, 200, true);  // 5 frames
  const std::size_t damaged_at = a.frame_offsets[2] + (a.frame_offsets[3] - a.frame_offsets[2]) / 2;
  a.bytes[damaged_at] ^= std::byte{0x20};
  write_bytes(tmp("salvage.zst"), a.bytes);

  const auto plain = run(mt() + " decode " + tmp("salvage.zst") + " --format raw");
  EXPECT_EQ(plain.status, 1);
  EXPECT_EQ(plain.out, raw_of(std::span(events.data(), 400)));

  const auto r = run(mt() + " decode --salvage " + tmp("salvage.zst") + " --format raw");
  EXPECT_EQ(r.status, 1);
  std::vector<codec::Event> expected(events.begin(), events.begin() + 400);
  expected.insert(expected.end(), events.begin() + 600, events.end());
  EXPECT_EQ(r.out, raw_of(expected));
  EXPECT_EQ(count_lines(r.err), 2u) << r.err;
  const std::string prefix =
      "memtrack decode: " + tmp("salvage.zst") + ": frame 2 at byte " + std::to_string(a.frame_offsets[2]) + ": ";
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("; skipped bytes " + std::to_string(a.frame_offsets[2]) + ".." +
                       std::to_string(a.frame_offsets[3]) + ", resuming at the next frame\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("damaged data was skipped"), std::string::npos) << r.err;

  // Nothing to salvage: same output and exit status as a plain decode.
  const auto clean = build_artifact(events, 200, true);
  write_bytes(tmp("clean.zst"), clean.bytes);
  const auto ok = run(mt() + " decode --salvage " + tmp("clean.zst") + " --format raw");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, raw_of(events));
}

TEST(DecodeCli, TheIndexIsIgnoredByPlainDecoders) {
  const auto events = generate_trace(5000, 24);
  const auto a = build_artifact(events, 1000, true);
  write_bytes(tmp("indexed.zst"), a.bytes);
  // zstd -d: the concatenated msgpack of every event, nothing from the index.
  codec::FrameSerializer whole(events.size());
  const auto msgpack = whole.serialize(events);
  const auto z = run("zstd -q -d -c " + tmp("indexed.zst") + " > " + tmp("indexed.msgpack"));
  ASSERT_EQ(z.status, 0) << z.err;
  EXPECT_EQ(slurp(tmp("indexed.msgpack")), std::string(reinterpret_cast<const char*>(msgpack.data()), msgpack.size()));
  // python-zstandard reading across frames + msgpack, as existing consumers do.
  const std::string script =
      "import sys, json, zstandard, msgpack\n"
      "with open(sys.argv[1], 'rb') as f:\n"
      "    reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)\n"
      "    for ev in msgpack.Unpacker(reader, raw=False):\n"
      "        print(json.dumps(ev, separators=(',', ':')))\n";
  std::ofstream(tmp("read.py")) << script;
  const auto py = run("/usr/bin/python3 " + tmp("read.py") + " " + tmp("indexed.zst"));
  ASSERT_EQ(py.status, 0) << py.err;
  const auto ours = run(mt() + " decode " + tmp("indexed.zst"));
  ASSERT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(count_lines(py.out), events.size());
  EXPECT_EQ(py.out, ours.out);
  // Our sequential decoder through a pipe (no index possible) and from the file.
  const auto piped = run("cat " + tmp("indexed.zst") + " | " + mt() + " decode - --format raw");
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, raw_of(events));
}

TEST(DecodeCli, FramesReturnsTheRightSlice) {
  const auto events = generate_trace(5500, 25);
  const auto a = build_artifact(events, 1000, true);  // 6 frames, the last of 500
  write_bytes(tmp("slice.zst"), a.bytes);
  auto slice = [&](std::size_t first, std::size_t last) {
    const std::size_t b = first * 1000, e = std::min(last * 1000, events.size());
    return raw_of(std::span(events.data() + b, e - b));
  };
  for (const auto& [spec, first, last] : std::vector<std::tuple<std::string, std::size_t, std::size_t>>{
           {"0:1", 0, 1}, {"2:4", 2, 4}, {"5:6", 5, 6}, {"3:3", 3, 3}, {"4:", 4, 6}, {":2", 0, 2}, {"0:6", 0, 6}}) {
    const auto r = run(mt() + " decode " + tmp("slice.zst") + " --format raw --frames " + spec);
    ASSERT_EQ(r.status, 0) << spec << ": " << r.err;
    EXPECT_EQ(r.out, slice(first, last)) << spec;
  }
  const auto out_of_range = run(mt() + " decode " + tmp("slice.zst") + " --frames 2:7");
  EXPECT_EQ(out_of_range.status, 2);  // a usage error (Errc::usage): the command line asks for too many frames
  EXPECT_NE(out_of_range.err.find("outside the 6 frames"), std::string::npos) << out_of_range.err;

  const auto no_index = build_artifact(events, 1000, false);
  write_bytes(tmp("noindex.zst"), no_index.bytes);
  const auto r = run(mt() + " decode " + tmp("noindex.zst") + " --frames 0:1");
  EXPECT_EQ(r.status, 2);  // a usage error: --frames needs an index; the same file decodes whole
  EXPECT_EQ(r.err, "memtrack decode: " + tmp("noindex.zst") + ": no frame index; decode the whole file\n");

  // A damaged frame in the range: the frames before it, then the error naming it.
  auto damaged = a.bytes;
  damaged[a.frame_offsets[3] + 50] ^= std::byte{1};
  write_bytes(tmp("slice-bad.zst"), damaged);
  const auto bad = run(mt() + " decode " + tmp("slice-bad.zst") + " --format raw --frames 2:5");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out, slice(2, 3));
  EXPECT_EQ(bad.err.rfind("memtrack decode: " + tmp("slice-bad.zst") + ": frame 3 at byte " +
                              std::to_string(a.frame_offsets[3]) + ": ",
                          0),
            0u)
      << bad.err;
}

TEST(DecodeCli, AnIndexEntryLargerThanAnyFrameIsRefusedNotAllocated) {
  // A consistent index over one 17 MiB skippable frame: bigger than any frame FrameDecoder can decode, so
  // --frames and stats refuse it by its size before reading it.
  const std::uint32_t payload = 17u << 20;
  std::vector<std::byte> file(8 + payload);
  const std::uint32_t header[2] = {0x184D2A50u, payload};
  std::memcpy(file.data(), header, 8);
  codec::SeekTableBuilder index;
  index.add(static_cast<std::uint32_t>(file.size()), 0);
  const auto table = index.finish();
  file.insert(file.end(), table.begin(), table.end());
  write_bytes(tmp("huge-entry.zst"), file);
  const auto d = run(mt() + " decode " + tmp("huge-entry.zst") + " --frames 0:1");
  EXPECT_EQ(d.status, 1);
  EXPECT_NE(d.err.find("more than a frame can be"), std::string::npos) << d.err;
  const auto s = run(mt() + " stats " + tmp("huge-entry.zst"));
  EXPECT_EQ(s.status, 1);
  EXPECT_NE(s.err.find("frame 0 at byte 0: the index says"), std::string::npos) << s.err;
  // The sequential decoder just skips the skippable frames: an artifact without data frames.
  EXPECT_EQ(run(mt() + " decode " + tmp("huge-entry.zst")).status, 0);
}

TEST(StatsCli, IndexedAndSequentialAgreeAndJsonParses) {
  const auto events = generate_trace(20000, 26);
  write_bytes(tmp("s-indexed.zst"), build_artifact(events, 4096, true).bytes);
  write_bytes(tmp("s-plain.zst"), build_artifact(events, 4096, false).bytes);
  const auto indexed = run(mt() + " stats --json " + tmp("s-indexed.zst"));
  const auto plain = run("cat " + tmp("s-plain.zst") + " | " + mt() + " stats - --json");
  ASSERT_EQ(indexed.status, 0) << indexed.err;
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(indexed.out.find("\"indexed\":true"), std::string::npos);
  // The same figures except how the file was read (and its size: the index adds a few bytes).
  auto strip = [](std::string s) {
    s = s.substr(0, s.find(",\"file\":"));
    return s;
  };
  EXPECT_EQ(strip(indexed.out), strip(plain.out));
  std::ofstream(tmp("j.json")) << indexed.out;
  const auto py =
      run("/usr/bin/python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); "
          "print(d['events'], d['file']['frames'], len(d['pids']))\" " +
          tmp("j.json"));
  ASSERT_EQ(py.status, 0) << py.err;
  EXPECT_EQ(py.out, "20000 5 3\n");

  const auto table = run(mt() + " stats " + tmp("s-indexed.zst"));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("peak live heap"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("events                 20000\n"), std::string::npos) << table.out;
  EXPECT_TRUE(table.err.empty()) << "no progress line when stderr is not a terminal: " << table.err;
}

// One corruption, one message: every command reads a damaged frame through the same walker (the index
// through FrameDecoder, a file or a pipe through FrameWalker), and a frame that declares its size is
// decompressed and its checksum verified before it is parsed, so the damage is named as the checksum
// mismatch it is, not as whatever the damaged bytes happen to parse into.
TEST(DamageCli, EveryCommandNamesTheSameDamageTheSameWay) {
  const auto events = generate_trace(60000, 25);
  auto a = build_artifact(events, 20000, true);  // 3 frames of more content than one decompression step
  ASSERT_EQ(a.frame_offsets.size(), 3u);
  for (std::size_t i = 0; i < 6; ++i) a.bytes[a.frame_offsets[1] + 200 + i] ^= std::byte{0xff};
  const std::string file = tmp("damaged.mt");
  write_bytes(file, a.bytes);
  const std::string where = ": frame 1 at byte " + std::to_string(a.frame_offsets[1]) + ": ";
  const struct {
    std::string command, prefix, suffix;
  } runs[] = {
      {" stats " + file, "memtrack stats: " + file, "\n"},    // through the index
      {" stats - < " + file, "memtrack stats: stdin", "\n"},  // a pipe: sequential
      {" decode " + file + " -o " + tmp("damaged.jsonl"), "memtrack decode: " + file, "\n"},
      {" decode --context " + file + " -o " + tmp("damaged.jsonl"), "memtrack decode: " + file, "\n"},
      {" top " + file, "memtrack top: " + file, "\n"},
      {" report " + file + " -o " + tmp("damaged.html"), "memtrack report: " + file,
       " (the report covers the events before it)\n"},
  };
  std::string first;
  for (const auto& r : runs) {
    const auto out = run(mt() + r.command);
    EXPECT_EQ(out.status, 1) << r.command << ": " << out.err;
    ASSERT_EQ(out.err.rfind(r.prefix + where, 0), 0u) << r.command << ": " << out.err;
    ASSERT_GE(out.err.size(), r.prefix.size() + r.suffix.size());
    ASSERT_EQ(out.err.compare(out.err.size() - r.suffix.size(), r.suffix.size(), r.suffix), 0) << out.err;
    const std::string what = out.err.substr(r.prefix.size(), out.err.size() - r.prefix.size() - r.suffix.size());
    if (first.empty()) first = what;
    EXPECT_EQ(what, first) << r.command;
  }
  EXPECT_NE(first.find("checksum"), std::string::npos) << first;
}

TEST(StatsCli, DamageGivesThePrefixStatsAndAnErrorLine) {
  const auto events = generate_trace(20000, 27);
  auto a = build_artifact(events, 4096, true);
  a.bytes[a.frame_offsets[2] + 10] ^= std::byte{4};
  write_bytes(tmp("s-bad.zst"), a.bytes);
  const auto r = run(mt() + " stats --json " + tmp("s-bad.zst"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("\"events\":8192,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"complete\":false"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.rfind("memtrack stats: " + tmp("s-bad.zst") + ": frame 2 at byte ", 0), 0u) << r.err;
}

TEST(StatsCli, ABadIndexFallsBackToSequentialAndExitsOne) {
  const auto events = generate_trace(9000, 28);
  auto a = build_artifact(events, 4096, true);
  a.bytes[a.bytes.size() - 5] = std::byte{0x04};  // reserved descriptor bit
  write_bytes(tmp("s-badindex.zst"), a.bytes);
  const auto r = run(mt() + " stats --json " + tmp("s-badindex.zst"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("\"events\":9000,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"indexed\":false"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "memtrack stats: " + tmp("s-badindex.zst") + ": bad frame index: reserved descriptor bits set\n");
  // decode ignores the index unless --frames asks for it.
  EXPECT_EQ(run(mt() + " decode " + tmp("s-badindex.zst") + " --format raw").out, raw_of(events));
  EXPECT_EQ(run(mt() + " decode " + tmp("s-badindex.zst") + " --frames 0:1").status, 1);
}

TEST(StatsCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run(mt() + " stats").status, 2);
  EXPECT_EQ(run(mt() + " stats a b").status, 2);
  EXPECT_EQ(run(mt() + " decode x --frames 3").status, 2);
  EXPECT_EQ(run(mt() + " decode x --frames 3:1").status, 2);
  EXPECT_EQ(run(mt() + " decode x --frames 0:1 --salvage").status, 2);
  const auto help = run(mt() + " stats --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: memtrack stats"), std::string::npos);
}

}  // namespace
}  // namespace memtrack::testing
