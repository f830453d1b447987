// Third-party readers on memtrack artifacts (docs/FORMAT.md, "Compatibility promise" and "Context section:
// what plain consumers see"). An artifact recorded by `memtrack record` from a shell running children, with
// call stacks, has context frames between its data frames; the readers that must not notice them:
//   - CodSpeed's own reader (the Rust `zstd` crate's streaming decoder + rmp_serde on its MemtrackEvent
//     struct), built from Debian's crates by the interop_rust_build ctest fixture (rust/src/main.rs);
//   - `zstd -d`, and python3-zstandard (read_across_frames=True) + python3-msgpack (read_artifact.py).
// Each is checked against `memtrack decode --format raw` event for event, and against `memtrack stats --json`
// on the event count, the per-kind counts, the bytes and the per-pid counts. The same on artifacts without
// context frames (tests/data, and the recorded events re-encoded by `memtrack encode`).
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/run.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/raw_record.h"

namespace {

using memtrack::testing::memtrack_bin;
using memtrack::testing::run;
using memtrack::testing::RunResult;
using memtrack::testing::scratch_dir;
using memtrack::testing::slurp;
namespace codec = memtrack::codec;

const std::string kReader = MEMTRACK_INTEROP_READER;
const std::string kPython = MEMTRACK_SYSTEM_PYTHON;
const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;

std::string tmp(const std::string& name) { return scratch_dir() + "/" + name; }

std::uint32_t le32(const std::string& b, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);  // x86-64 and aarch64 Debian: little-endian, as the format
  return v;
}

// The artifact's frames in file order: data frames (their bytes) and skippable frames (their magic).
struct Frames {
  std::vector<std::string> data;     // each data frame's compressed bytes
  std::vector<std::uint32_t> order;  // per frame: 0 for a data frame, else the skippable magic
};

Frames walk_frames(const std::string& bytes) {
  Frames f;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 8) {
      ADD_FAILURE() << "trailing " << bytes.size() - at << " bytes at offset " << at;
      break;
    }
    const std::uint32_t magic = le32(bytes, at);
    if ((magic & 0xFFFFFFF0u) == 0x184D2A50u) {
      f.order.push_back(magic);
      at += 8 + std::size_t{le32(bytes, at + 4)};
      continue;
    }
    const std::size_t n = ZSTD_findFrameCompressedSize(bytes.data() + at, bytes.size() - at);
    if (ZSTD_isError(n)) {
      ADD_FAILURE() << "no zstd frame at offset " << at << ": " << ZSTD_getErrorName(n);
      break;
    }
    f.order.push_back(0);
    f.data.push_back(bytes.substr(at, n));
    at += n;
  }
  return f;
}

std::vector<codec::Event> raw_events(const std::string& raw) {
  EXPECT_EQ(raw.size() % codec::kRawRecordSize, 0u);
  std::vector<codec::Event> events(raw.size() / codec::kRawRecordSize);
  std::size_t n = 0;
  const codec::Status st = codec::unpack_raw_records(std::as_bytes(std::span(raw.data(), raw.size())), 0, events, n);
  EXPECT_TRUE(st.is_ok()) << st.message();
  events.resize(n);
  return events;
}

// The reader's summary lines (rust/src/main.rs) computed from `memtrack decode --format raw`'s records, so
// the two can be compared as text. The kinds in raw-record order, the pids ascending.
std::string summary_of(const std::vector<codec::Event>& events) {
  // Saturating, as `memtrack stats` adds: the conformance fixtures hold sizes of 2^64-1.
  const auto add = [](std::uint64_t& sum, std::uint64_t v) { sum = v > UINT64_MAX - sum ? UINT64_MAX : sum + v; };
  std::uint64_t count[9] = {}, bytes[9] = {}, allocated = 0, brk = 0;
  std::map<std::int32_t, std::uint64_t> pids;
  for (const codec::Event& e : events) {
    const auto k = static_cast<std::size_t>(e.kind);
    ++count[k];
    add(bytes[k], e.size);
    if (e.kind == codec::EventKind::Malloc || e.kind == codec::EventKind::Calloc ||
        e.kind == codec::EventKind::Realloc || e.kind == codec::EventKind::AlignedAlloc)
      add(allocated, e.size);
    if (e.kind == codec::EventKind::Brk) add(brk, e.size);
    ++pids[e.pid];
  }
  std::string s = "events " + std::to_string(events.size()) + "\n";
  for (std::size_t k = 1; k <= 8; ++k)
    s += "kind " + std::string(codec::kind_name(static_cast<codec::EventKind>(k))) + " " + std::to_string(count[k]) +
         " " + std::to_string(bytes[k]) + "\n";
  s += "bytes_allocated " + std::to_string(allocated) + "\nbrk_bytes " + std::to_string(brk) + "\n";
  for (const auto& [pid, n] : pids) s += "pid " + std::to_string(pid) + " " + std::to_string(n) + "\n";
  return s;
}

// The summary without what `stats --json` does not report (per-kind bytes): "kind NAME COUNT" lines.
std::string without_kind_bytes(const std::string& summary) {
  std::string out, line;
  for (std::size_t at = 0; at < summary.size();) {
    const std::size_t nl = summary.find('\n', at);
    line = summary.substr(at, nl - at);
    at = nl == std::string::npos ? summary.size() : nl + 1;
    if (line.rfind("kind ", 0) == 0) line = line.substr(0, line.rfind(' '));
    out += line + "\n";
  }
  return out;
}

// `memtrack stats --json`'s numbers in the summary's format (pids without events, listed from context
// records, left out: the readers see only events).
std::string stats_summary(const std::string& artifact) {
  const RunResult r =
      run(memtrack_bin() + " stats --json '" + artifact + "' > " + tmp("stats.json") + " && " + kPython +
          " -c \"import json,sys; d=json.load(open(sys.argv[1])); " + "print('events', d['events']); " +
          "[print('kind', k, d['by_kind'][k]) for k in ('Malloc','Free','Calloc','Realloc'," +
          "'AlignedAlloc','Mmap','Munmap','Brk')]; " +
          "print('bytes_allocated', d['bytes_allocated']); print('brk_bytes', d['brk_bytes']); " +
          "[print('pid', p['pid'], p['events']) for p in sorted(d['pids'], key=lambda p: p['pid'])" +
          " if p['events']]\" " + tmp("stats.json"));
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

struct ReaderRun {
  std::string summary;  // without the codspeed_events line
  std::string raw;
  std::uint64_t codspeed_events = 0;
};

ReaderRun rust_reader(const std::string& artifact) {
  const RunResult r = run("'" + kReader + "' '" + artifact + "' " + tmp("rust.raw"));
  EXPECT_EQ(r.status, 0) << "the Rust zstd + rmp_serde reader failed on " << artifact << ": " << r.err;
  ReaderRun out;
  const std::string first = "codspeed_events ";
  if (r.out.rfind(first, 0) == 0) {
    const std::size_t nl = r.out.find('\n');
    out.codspeed_events = std::stoull(r.out.substr(first.size(), nl - first.size()));
    out.summary = r.out.substr(nl + 1);
  } else {
    ADD_FAILURE() << "unexpected reader output: " << r.out;
  }
  out.raw = slurp(tmp("rust.raw"));
  return out;
}

std::string decode_raw(const std::string& artifact) {
  const RunResult r = run(memtrack_bin() + " decode '" + artifact + "' --format raw -o " + tmp("decode.raw"));
  EXPECT_EQ(r.status, 0) << r.err;
  return slurp(tmp("decode.raw"));
}

// What every reader must agree on for one artifact; `expected_events` when the count is known independently.
void check_rust_reader(const std::string& artifact, std::uint64_t expected_events = 0) {
  SCOPED_TRACE(artifact);
  const std::string raw = decode_raw(artifact);
  const std::vector<codec::Event> events = raw_events(raw);
  if (expected_events != 0) {
    EXPECT_EQ(events.size(), expected_events);
  }
  const ReaderRun rust = rust_reader(artifact);
  // Event for event: every field of every event, in order.
  EXPECT_EQ(rust.raw.size(), raw.size());
  EXPECT_TRUE(rust.raw == raw) << "the Rust reader's events differ from memtrack decode's";
  // CodSpeed's iterator stops silently at the first error: it must have read them all too.
  EXPECT_EQ(rust.codspeed_events, events.size());
  EXPECT_EQ(rust.summary, summary_of(events));
  EXPECT_EQ(without_kind_bytes(rust.summary), stats_summary(artifact));
}

// A multi-process recording with call stacks: a shell running two churn processes at once (one with two
// threads), then alloc_each (every kind of event) and ls; at CodSpeed's level (1). About 100,000 events: two data
// frames or more, so context frames sit between data frames, not only after them.
struct Recording {
  std::string artifact;
  std::string bytes;
  Frames frames;
};

Recording record_multi_process(const std::string& name) {
  Recording rec;
  rec.artifact = tmp(name);
  const std::string script = "'" + kPrograms + "/churn' 2 25000 & '" + kPrograms + "/churn' 1 50000; wait; '" +
                             kPrograms + "/alloc_each' > /dev/null; ls / > /dev/null";
  const RunResult r =
      run(memtrack_bin() + " record -q --level 1 -o '" + rec.artifact + "' -- /bin/sh -c \"" + script + "\"");
  EXPECT_EQ(r.status, 0) << r.err;
  rec.bytes = slurp(rec.artifact);
  rec.frames = walk_frames(rec.bytes);
  return rec;
}

// What the recording must contain for the test to mean something: several processes, stacks, and context
// frames before the last data frame.
void expect_context_between_data_frames(const Recording& rec) {
  ASSERT_GE(rec.frames.data.size(), 2u);
  std::size_t context_frames = 0, context_before_last_data = 0, data_seen = 0;
  for (const std::uint32_t m : rec.frames.order) {
    if (m == 0) ++data_seen;
    if (m != codec::kContextFrameMagic) continue;
    ++context_frames;
    if (data_seen < rec.frames.data.size()) ++context_before_last_data;
  }
  EXPECT_GE(context_frames, 2u);
  EXPECT_GE(context_before_last_data, 1u) << "no context frame between data frames";
  const RunResult s = run(memtrack_bin() + " stats --json '" + rec.artifact + "' > " + tmp("ctx.json") + " && " +
                          kPython + " -c \"import json,sys; d=json.load(open(sys.argv[1])); " +
                          "print(d['context'], 'stacks' in d['recording']['sections'], " +
                          "len([p for p in d['pids'] if p['events']]))\" " + tmp("ctx.json"));
  ASSERT_EQ(s.status, 0) << s.err;
  // sh, its subshell, the two churns, alloc_each, ls: at least four processes with events.
  int processes = 0;
  char context[8] = {}, stacks[8] = {};
  ASSERT_EQ(std::sscanf(s.out.c_str(), "%7s %7s %d", context, stacks, &processes), 3) << s.out;
  EXPECT_STREQ(context, "True");
  EXPECT_STREQ(stacks, "True");
  EXPECT_GE(processes, 4) << s.out;
}

TEST(Interop, RustZstdRmpSerdeReadsAMultiProcessArtifactWithContextFrames) {
  const Recording rec = record_multi_process("ctx.msgpack");
  expect_context_between_data_frames(rec);
  check_rust_reader(rec.artifact);
}

// A compact recording (docs/FORMAT.md, "Compact data frames") converted with `memtrack convert --to codspeed`:
// CodSpeed's reader reads every event of it, as memtrack reads them from the compact original.
TEST(Interop, RustZstdRmpSerdeReadsACompactRecordingConvertedToCodspeed) {
  const std::string compact = tmp("rec.compact"), converted = tmp("rec.converted");
  const std::string script = "'" + kPrograms + "/churn' 2 25000 & '" + kPrograms + "/alloc_each' > /dev/null; wait";
  const RunResult r =
      run(memtrack_bin() + " record -q --compact -o '" + compact + "' -- /bin/sh -c \"" + script + "\"");
  ASSERT_EQ(r.status, 0) << r.err;
  const RunResult c = run(memtrack_bin() + " convert --to codspeed '" + compact + "' -o '" + converted + "'");
  ASSERT_EQ(c.status, 0) << c.err;
  check_rust_reader(converted);
  const RunResult a = run(memtrack_bin() + " decode --format raw '" + compact + "' | sha256sum");
  const RunResult b = run(memtrack_bin() + " decode --format raw '" + converted + "' | sha256sum");
  EXPECT_EQ(a.out, b.out);
}

// Version-1 artifacts: the fixture made with the reference serializer in 65,536-event frames + index, and
// the older layout (one streaming frame without content size), as CodSpeed's writer makes it.
TEST(Interop, RustZstdRmpSerdeReadsArtifactsWithoutContextFrames) {
  check_rust_reader(std::string(MEMTRACK_TEST_DATA_DIR) + "/realistic-140k.frames.zst", 140000);
  check_rust_reader(std::string(MEMTRACK_TEST_DATA_DIR) + "/events.single-stream.zst");
}

// The recorded events without their context: `memtrack encode` of `memtrack decode --format raw` writes the
// same data frames (same 65,536-event frames; the same level, given to both since their defaults differ) and no
// context frame. The recording's data frames
// must be byte-identical to those, and every plain decoder must see the same msgpack stream in both.
TEST(Interop, PlainDecodersSeeTheSameEventsWithAndWithoutContextFrames) {
  const Recording rec = record_multi_process("ctx.msgpack");
  expect_context_between_data_frames(rec);
  const std::string raw = decode_raw(rec.artifact);
  const std::string plain = tmp("plain.msgpack");
  {
    const RunResult r = run(memtrack_bin() + " encode --level 1 -i " + tmp("decode.raw") + " -o '" + plain + "'");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  const Frames without = walk_frames(slurp(plain));
  for (const std::uint32_t m : without.order) EXPECT_NE(m, codec::kContextFrameMagic);
  ASSERT_EQ(rec.frames.data.size(), without.data.size());
  for (std::size_t i = 0; i < without.data.size(); ++i)
    EXPECT_TRUE(rec.frames.data[i] == without.data[i]) << "data frame " << i << " differs from memtrack encode's";

  // zstd -d: the concatenated msgpack of the events, identical with and without context frames, and equal
  // to what our encoder writes for the decoded events (no byte of context leaks into the stream).
  const RunResult z1 = run("zstd -q -d -c '" + rec.artifact + "' > " + tmp("ctx.zstd-d"));
  const RunResult z2 = run("zstd -q -d -c '" + plain + "' > " + tmp("plain.zstd-d"));
  ASSERT_EQ(z1.status, 0) << z1.err;
  ASSERT_EQ(z2.status, 0) << z2.err;
  const std::string with_ctx = slurp(tmp("ctx.zstd-d"));
  EXPECT_FALSE(with_ctx.empty());
  EXPECT_TRUE(with_ctx == slurp(tmp("plain.zstd-d"))) << "zstd -d output differs with context frames";

  // python3-zstandard (read_across_frames=True) + python3-msgpack: every event, every field, in order.
  const RunResult py = run(kPython + " " MEMTRACK_INTEGRATION_DIR "/read_artifact.py '" + rec.artifact + "'");
  ASSERT_EQ(py.status, 0) << py.err;
  std::string expected;
  for (const codec::Event& e : raw_events(raw)) {
    expected += std::to_string(e.pid) + " " + std::to_string(e.tid) + " " + std::to_string(e.timestamp) + " " +
                std::to_string(e.addr) + " " + std::string(codec::kind_name(e.kind)) + " " +
                (e.kind == codec::EventKind::Free ? std::string("-") : std::to_string(e.size)) + " " +
                (e.has_old_addr() ? std::to_string(e.old_addr) : std::string("-")) + "\n";
  }
  EXPECT_EQ(py.out.size(), expected.size());
  EXPECT_TRUE(py.out == expected) << "python3-zstandard + msgpack read different events";

  // The Rust reader on the copy without context reads what it reads with context.
  const ReaderRun a = rust_reader(rec.artifact);
  const ReaderRun b = rust_reader(plain);
  EXPECT_TRUE(a.raw == b.raw);
  EXPECT_EQ(a.summary, b.summary);
}

}  // namespace
