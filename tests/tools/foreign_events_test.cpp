// Artifacts with event kinds this version does not know (CodSpeed's newer Rss, Rmap, Fork, Exec, Exit and
// Stack events, written here as rmp_serde writes them), through the real binary: decode passes them through
// in their places, stats counts them by type and every number of the known events stays exact, the analyses
// ignore them, and nothing calls the artifact damaged (docs/FORMAT.md, "Readers' rule").
#include <gtest/gtest.h>
#include <zstd.h>

#include <fstream>
#include <msgpack.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/artifacts.h"
#include "common/run.h"
#include "memtrack/codec/seek_table.h"

namespace memtrack::testing {
namespace {

std::string mt() { return memtrack_bin(); }
std::string tmp(const std::string& name) { return scratch_dir() + "/" + name; }

// One event map as serde + rmp_serde write MemtrackEvent { pid, tid, timestamp, addr, #[serde(flatten)] kind }
// with #[serde(tag = "type")]: a fixmap of the exact count, the common keys, the tag, the variant's fields.
class Writer {
 public:
  Writer() : pk_(buf_) {}
  // `fields` writes the variant's fields after the tag; `n` is how many.
  template <class Fields>
  void event(std::int32_t pid, std::uint64_t ts, std::uint64_t addr, const std::string& type, std::uint32_t n,
             Fields&& fields) {
    pk_.pack_map(5 + n);
    key("pid");
    pk_.pack_int32(pid);
    key("tid");
    pk_.pack_int32(pid);
    key("timestamp");
    pk_.pack_uint64(ts);
    key("addr");
    pk_.pack_uint64(addr);
    key("type");
    key(type);
    fields(*this);
  }
  void key(const std::string& s) {
    pk_.pack_str(static_cast<std::uint32_t>(s.size()));
    pk_.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
  }
  msgpack::packer<msgpack::sbuffer>& pk() { return pk_; }
  // The content written so far as one zstd frame (with its content size and checksum, as ours), then empty.
  std::vector<std::byte> frame() {
    std::vector<std::byte> out(ZSTD_compressBound(buf_.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), buf_.data(), buf_.size());
    ZSTD_freeCCtx(c);
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    content_ = buf_.size();
    buf_.clear();
    return out;
  }
  [[nodiscard]] std::size_t last_content() const { return content_; }

 private:
  msgpack::sbuffer buf_;
  msgpack::packer<msgpack::sbuffer> pk_;
  std::size_t content_ = 0;
};

void sized(Writer& w, std::int32_t pid, std::uint64_t ts, std::uint64_t addr, const char* type, std::uint64_t size) {
  w.event(pid, ts, addr, type, 1, [&](Writer& x) {
    x.key("size");
    x.pk().pack_uint64(size);
  });
}
void rss(Writer& w, std::int32_t pid, std::uint64_t ts, std::int32_t member, std::uint64_t size) {
  w.event(pid, ts, 0, "Rss", 2, [&](Writer& x) {
    x.key("member");
    x.pk().pack_int32(member);
    x.key("size");
    x.pk().pack_uint64(size);
  });
}

// The known events of the mixed artifact, in order: what decode of the known-only artifact gives.
std::vector<codec::Event> known_events() {
  using codec::EventKind;
  return {codec::make_event(EventKind::Malloc, 1, 1, 100, 0x1000, 64),
          codec::make_event(EventKind::Malloc, 2, 2, 400, 0x2000, 4096),
          codec::make_event(EventKind::Free, 1, 1, 500, 0x1000),
          codec::make_event(EventKind::Calloc, 1, 1, 900, 0x3000, 96)};
}

struct Mixed {
  std::vector<std::byte> bytes;
  std::vector<std::string> foreign_json;  // the foreign events as decode must write them, in order
};

// Two frames and a frame index: Malloc, Rss, Fork | Malloc (with CodSpeed's newer stack_hash key), Free,
// Exec, Exit, Rmap, Stack, Calloc, Rss (last).
Mixed mixed_artifact() {
  Writer w;
  Mixed m;
  codec::SeekTableBuilder index;
  auto flush = [&] {
    const auto f = w.frame();
    index.add(static_cast<std::uint32_t>(f.size()), static_cast<std::uint32_t>(w.last_content()));
    m.bytes.insert(m.bytes.end(), f.begin(), f.end());
  };
  sized(w, 1, 100, 0x1000, "Malloc", 64);
  rss(w, 1, 200, 1, 40960);
  m.foreign_json.push_back(R"({"pid":1,"tid":1,"timestamp":200,"addr":0,"type":"Rss","member":1,"size":40960})");
  w.event(2, 300, 0, "Fork", 1, [](Writer& x) {
    x.key("parent_pid");
    x.pk().pack_int32(1);
  });
  m.foreign_json.push_back(R"({"pid":2,"tid":2,"timestamp":300,"addr":0,"type":"Fork","parent_pid":1})");
  flush();
  w.event(2, 400, 0x2000, "Malloc", 2, [](Writer& x) {
    x.key("size");
    x.pk().pack_uint64(4096);
    x.key("stack_hash");
    x.pk().pack_uint64(0xcafe);
  });
  w.event(1, 500, 0x1000, "Free", 0, [](Writer&) {});
  w.event(2, 600, 0, "Exec", 0, [](Writer&) {});
  m.foreign_json.push_back(R"({"pid":2,"tid":2,"timestamp":600,"addr":0,"type":"Exec"})");
  w.event(2, 700, 0, "Exit", 0, [](Writer&) {});
  m.foreign_json.push_back(R"({"pid":2,"tid":2,"timestamp":700,"addr":0,"type":"Exit"})");
  w.event(1, 750, 0x7f00, "Rmap", 2, [](Writer& x) {
    x.key("member");
    x.pk().pack_int32(1);
    x.key("delta");
    x.pk().pack_int64(-8);
  });
  m.foreign_json.push_back(R"({"pid":1,"tid":1,"timestamp":750,"addr":32512,"type":"Rmap","member":1,"delta":-8})");
  // Stack { #[serde(flatten)] record }: an array, bytes (serde_bytes: bin), a bool.
  w.event(1, 800, 0, "Stack", 5, [](Writer& x) {
    x.key("hash");
    x.pk().pack_uint64(7);
    x.key("regs");
    x.pk().pack_array(2);
    x.pk().pack_uint64(1);
    x.pk().pack_uint64(2);
    x.key("bytes");
    x.pk().pack_bin(3);
    x.pk().pack_bin_body("\xab\x01\xff", 3);
    x.key("fp_chain");
    x.pk().pack_array(0);
    x.key("truncated");
    x.pk().pack_true();
  });
  m.foreign_json.push_back(
      R"({"pid":1,"tid":1,"timestamp":800,"addr":0,"type":"Stack","hash":7,"regs":[1,2],"bytes":"ab01ff","fp_chain":[],"truncated":true})");
  sized(w, 1, 900, 0x3000, "Calloc", 96);
  rss(w, 1, 950, 0, 8192);
  m.foreign_json.push_back(R"({"pid":1,"tid":1,"timestamp":950,"addr":0,"type":"Rss","member":0,"size":8192})");
  flush();
  const auto table = index.finish();
  m.bytes.insert(m.bytes.end(), table.begin(), table.end());
  return m;
}

void write_file(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Output of `args` on the known-only artifact and on the mixed one, both at `path`.
struct Both {
  RunResult known, mixed;
};
Both run_both(const std::string& path, const std::string& args) {
  Both b;
  const auto known = known_events();
  write_file(path, build_artifact(known, 3, true).bytes);
  b.known = run(mt() + " " + args);
  write_file(path, mixed_artifact().bytes);
  b.mixed = run(mt() + " " + args);
  return b;
}

TEST(ForeignEvents, DecodePassesThemThroughInTheirPlaces) {
  const Mixed m = mixed_artifact();
  const std::string path = tmp("foreign.mt");
  write_file(path, m.bytes);
  const std::string plain = run(mt() + " decode " + path).out;
  for (const std::string& how : {std::string(), std::string(" --frames 0:"), std::string(" --context")}) {
    const auto r = run(mt() + " decode " + path + how);
    ASSERT_EQ(r.status, 0) << how << ": " << r.err;
    EXPECT_EQ(r.err, "") << how;
    const auto got = lines(r.out);
    ASSERT_EQ(got.size(), 4u + m.foreign_json.size()) << how << "\n" << r.out;
    // Stream order: K F F | K K F F F F K F  (K known, F foreign)
    const std::vector<int> foreign_at = {1, 2, 5, 6, 7, 8, 10};
    for (std::size_t i = 0; i < foreign_at.size(); ++i)
      EXPECT_EQ(got[static_cast<std::size_t>(foreign_at[i])], m.foreign_json[i]) << how;
    EXPECT_EQ(got[0], R"({"pid":1,"tid":1,"timestamp":100,"addr":4096,"type":"Malloc","size":64})") << how;
    EXPECT_EQ(got[3], R"({"pid":2,"tid":2,"timestamp":400,"addr":8192,"type":"Malloc","size":4096})") << how;
    EXPECT_EQ(r.out, plain) << how;
  }
  // CSV: the common columns and the type.
  const auto csv = run(mt() + " decode " + path + " --format csv");
  ASSERT_EQ(csv.status, 0) << csv.err;
  const auto rows = lines(csv.out);
  ASSERT_EQ(rows.size(), 1u + 4u + m.foreign_json.size());
  EXPECT_EQ(rows[2], "1,1,200,0,Rss,,");
  EXPECT_EQ(rows[3], "2,2,300,0,Fork,,");
  EXPECT_EQ(rows[4], "2,2,400,8192,Malloc,4096,");
}

TEST(ForeignEvents, RawRefusesWithOneLineAfterTheEventsBefore) {
  const std::string path = tmp("foreign-raw.mt");
  write_file(path, mixed_artifact().bytes);
  for (const std::string& how : {std::string(), std::string(" --frames 0:")}) {
    const std::string out = tmp("foreign.raw");
    const auto r = run(mt() + " decode " + path + " --format raw -o " + out + how);
    EXPECT_EQ(r.status, 1) << how;
    EXPECT_EQ(r.err, "memtrack decode: " + path +
                         ": after event 1: an event of type \"Rss\", which a raw record cannot hold (its kinds are "
                         "the 8 of docs/FORMAT.md); use --format jsonl or csv\n")
        << how;
    EXPECT_EQ(slurp(out).size(), 48u) << how << ": the one event before it";
  }
}

TEST(ForeignEvents, StatsCountThemApartAndTheKnownOnesExactly) {
  const std::string path = tmp("foreign-stats.mt");
  for (const std::string& input : {path, "- < " + path}) {  // indexed, and sequential from a pipe
    const Both json = run_both(path, "stats --json " + input);
    ASSERT_EQ(json.mixed.status, 0) << json.mixed.err;
    EXPECT_EQ(json.mixed.err, "");
    const std::string section =
        R"("foreign_events":{"events":7,"by_type":{"Exec":1,"Exit":1,"Fork":1,"Rmap":1,"Rss":2,"Stack":1},"other_types":0},)";
    const auto at = json.mixed.out.find(section);
    ASSERT_NE(at, std::string::npos) << json.mixed.out;
    std::string without = json.mixed.out;
    without.erase(at, section.size());
    // Everything but the file's own figures (frames, bytes) is the known-only artifact's.
    auto before_file = [](const std::string& s) { return s.substr(0, s.find("\"file\":")); };
    EXPECT_EQ(before_file(without), before_file(json.known.out));
    EXPECT_NE(json.mixed.out.find(R"("complete":true)"), std::string::npos) << json.mixed.out;

    const Both text = run_both(path, "stats " + input);
    ASSERT_EQ(text.mixed.status, 0) << text.mixed.err;
    EXPECT_NE(text.mixed.out.find("events of other types (unknown to this version, in no number above)\n"
                                  "  Exec                      1\n  Exit                      1\n"
                                  "  Fork                      1\n  Rmap                      1\n"
                                  "  Rss                       2\n  Stack                     1\n"),
              std::string::npos)
        << text.mixed.out;
    EXPECT_NE(text.mixed.out.find("events                 4\n"), std::string::npos) << text.mixed.out;
  }
}

TEST(ForeignEvents, TheAnalysesIgnoreThem) {
  const std::string path = tmp("foreign-analyses.mt");
  const std::string base = tmp("foreign-base.mt");
  write_file(base, build_artifact(known_events(), 3, true).bytes);
  for (const std::string& args :
       {"top " + path, "top --json " + path, "export --format folded " + path, "diff " + base + " " + path,
        "diff --json " + base + " " + path, "check --max-peak 4KiB " + path, "check --max-peak 8KiB " + path}) {
    const Both b = run_both(path, args);
    EXPECT_EQ(b.mixed.status, b.known.status) << args << ": " << b.mixed.err;
    EXPECT_EQ(b.mixed.out, b.known.out) << args;
    EXPECT_EQ(b.mixed.err, b.known.err) << args;
  }
  const Both report = run_both(path, "report " + path + " -o " + tmp("foreign.html"));
  EXPECT_EQ(report.mixed.status, 0) << report.mixed.err;
}

}  // namespace
}  // namespace memtrack::testing
