// `memtrack top` on artifacts built here from events and context records with known call chains: the JSON
// contract (absent fields null), every ranking's order, -n, --pid, symbols from the artifact, symbols from
// the module files when the artifact has none (the symbolization tests' chain program), a deleted module
// (module + offset), and an artifact without stacks.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/run.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "symbolize/chain_fixture.h"

namespace memtrack::testing {
namespace {

using codec::EventKind;
using codec::make_event;
namespace sym = memtrack::symbolize::testing;

struct Part {
  std::vector<codec::Event> events;
  std::vector<codec::ContextRecord> records;  // written in a context frame right after the events' frame
};

// Each part's events as one data frame, then its records in one context frame (our writer's layout).
std::string write_artifact(const std::string& name, const std::vector<Part>& parts) {
  codec::FrameSerializer serializer(1024);
  codec::FrameCompressor compressor(3);
  std::vector<std::byte> out, buf(codec::FrameCompressor::bound(serializer.capacity_bytes())), scratch;
  for (const Part& p : parts) {
    const auto msgpack = serializer.serialize(p.events);
    codec::Status s;
    const std::size_t n = compressor.compress(msgpack, buf, s);
    EXPECT_TRUE(s.is_ok()) << s.message();
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    if (!p.records.empty()) {
      EXPECT_TRUE(codec::encode_context_frame(p.records, compressor, scratch, out));
    }
  }
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  return path;
}

std::string mt() { return memtrack_bin(); }

// Two sites in pid 5 with symbols in the artifact (the module file does not exist: Symbols must be used),
// and one in pid 6 at an address in no module.
//  S1 = leaf 0x1100 (alloc_big, big.c:10) <- 0x1200 (main, big.c:20)    3 x Malloc 1000, one freed
//  S2 = 0x1300 (alloc_small, inlined into helper, small.c:5/6) <- main   5 x Malloc 10, each freed at once
//  S3 = pid 6, 0x4242 (no module)                                        1 x Malloc 7, leaked
std::string symbols_artifact() {
  const std::vector<std::uint8_t> id = {0xde, 0xad};
  std::vector<codec::ContextRecord> records = {
      codec::RecordingInfo{"0", {"prog"}, 0, 0, {"lifecycle", "stacks", "modules", "symbols"}, 1},
      codec::ProcessStart{5, 1, 0, 0},
      codec::Module{5, 0, "/nonexistent/prog", id, 0x1000, 0x1000, 0x2000, true},
      codec::StackNodes{5, 0, 1, {0, 1, 1}, {0x1200, 0x1100, 0x1300}},
      codec::ProcessStart{6, 1, 0, 0},
      codec::StackNodes{6, 0, 1, {0}, {0x4242}},
  };
  std::vector<codec::Event> ev;
  std::vector<std::uint32_t> ids;
  std::uint64_t ts = 1;
  for (int i = 0; i < 3; ++i) {
    ev.push_back(make_event(EventKind::Malloc, 5, 5, ts++, 0x100 + i, 1000)), ids.push_back(2);
    ev.push_back(make_event(EventKind::Malloc, 5, 5, ts++, 0x200, 10)), ids.push_back(3);
    ev.push_back(make_event(EventKind::Free, 5, 5, ts++, 0x200)), ids.push_back(0);
  }
  ev.push_back(make_event(EventKind::Free, 5, 5, ts++, 0x100)), ids.push_back(0);
  for (int i = 0; i < 2; ++i) {
    ev.push_back(make_event(EventKind::Malloc, 5, 7, ts++, 0x300, 10)), ids.push_back(3);
    ev.push_back(make_event(EventKind::Free, 5, 7, ts++, 0x300)), ids.push_back(0);
  }
  ev.push_back(make_event(EventKind::Malloc, 6, 6, ts++, 0x100, 7)), ids.push_back(1);
  records.push_back(codec::EventStacks{0, ids});
  // Module-relative: 0x100 alloc_big, 0x200 main, 0x300 alloc_small inlined into helper.
  records.push_back(codec::Symbols{"/nonexistent/prog",
                                   id,
                                   {0x100, 0x200, 0x300},
                                   {1, 1, 2},
                                   {0, 1, 2, 3},
                                   {4, 4, 5, 5},
                                   {10, 20, 5, 6},
                                   {"alloc_big", "main", "alloc_small", "helper", "big.c", "small.c"}});
  records.push_back(codec::StreamEnd{ev.size(), 1, true});
  return write_artifact("symbols.mt", {{ev, records}});
}

// The live heap peaks at 3,010 B, after the third small Malloc: S1 holds 3,000, S2 10, S3 nothing yet.
const std::string kS1 =
    "{\"stack\":[{\"function\":\"alloc_big\",\"module\":\"/nonexistent/prog\",\"file\":\"big.c\",\"line\":10,"
    "\"address\":\"0x100\"},{\"function\":\"main\",\"module\":\"/nonexistent/prog\",\"file\":\"big.c\",\"line\":20,"
    "\"address\":\"0x200\"}],\"peak_bytes\":3000,\"allocated_bytes\":3000,\"allocations\":3,\"leaked_bytes\":2000,"
    "\"leaked_blocks\":2,\"temporary\":0}";
const std::string kS2 =
    "{\"stack\":[{\"function\":\"alloc_small\",\"module\":\"/nonexistent/prog\",\"file\":\"small.c\",\"line\":5,"
    "\"address\":\"0x300\"},{\"function\":\"helper\",\"module\":\"/nonexistent/prog\",\"file\":\"small.c\","
    "\"line\":6,\"address\":\"0x300\"},{\"function\":\"main\",\"module\":\"/nonexistent/prog\",\"file\":\"big.c\","
    "\"line\":20,\"address\":\"0x200\"}],\"peak_bytes\":10,\"allocated_bytes\":50,\"allocations\":5,"
    "\"leaked_bytes\":0,\"leaked_blocks\":0,\"temporary\":5}";
std::string s3(int peak) {
  return "{\"stack\":[{\"function\":null,\"module\":null,\"file\":null,\"line\":null,\"address\":\"0x4242\"}],"
         "\"peak_bytes\":" +
         std::to_string(peak) +
         ",\"allocated_bytes\":7,\"allocations\":1,\"leaked_bytes\":7,\"leaked_blocks\":1,"
         "\"temporary\":0}";
}

// A site's numbers (or a sum's) as the JSON writes them.
std::string numbers(int peak, int allocated, int allocations, int leaked, int leaked_blocks, int temporary) {
  return "\"peak_bytes\":" + std::to_string(peak) + ",\"allocated_bytes\":" + std::to_string(allocated) +
         ",\"allocations\":" + std::to_string(allocations) + ",\"leaked_bytes\":" + std::to_string(leaked) +
         ",\"leaked_blocks\":" + std::to_string(leaked_blocks) + ",\"temporary\":" + std::to_string(temporary);
}
// What follows the sites: the rest beyond -n, the allocations without a stack, and the totals they add up to.
std::string after_sites(int rest_sites, const std::string& rest, const std::string& without, int sites,
                        const std::string& totals) {
  return "],\"rest\":{\"sites\":" + std::to_string(rest_sites) + "," + rest + "},\"without_stack\":{" + without +
         "},\"totals\":{\"sites\":" + std::to_string(sites) + "," + totals + "}}\n";
}
const std::string kNone = numbers(0, 0, 0, 0, 0, 0);
// S1 + S2 + S3: the whole artifact (every allocation has a stack); its peak is the heap's, 3,010 B.
const std::string kAll = numbers(3010, 3057, 9, 2007, 3, 5);

TEST(Top, JsonIsTheContractInEveryOrder) {
  const std::string file = symbols_artifact();
  const std::string kS3 = s3(0);
  const std::pair<const char*, std::string> cases[] = {
      {"peak", kS1 + "," + kS2 + "," + kS3},      {"allocated", kS1 + "," + kS2 + "," + kS3},
      {"count", kS2 + "," + kS1 + "," + kS3},     {"leaked", kS1 + "," + kS3 + "," + kS2},
      {"temporary", kS2 + "," + kS1 + "," + kS3},  // S1 before S3 on a tie: more bytes allocated
  };
  for (const auto& [by, sites] : cases) {
    const auto r = run(mt() + " top " + file + " --json --by " + by);
    ASSERT_EQ(r.status, 0) << by << ": " << r.err;
    EXPECT_EQ(r.out, std::string("{\"by\":\"") + by + "\",\"sites\":[" + sites + after_sites(0, kNone, kNone, 3, kAll))
        << by;
  }
  const auto def = run(mt() + " top " + file + " --json");
  EXPECT_EQ(def.out.rfind("{\"by\":\"peak\"", 0), 0u) << def.out;
}

TEST(Top, LimitAndPidSelectSites) {
  const std::string file = symbols_artifact();
  const auto one = run(mt() + " top " + file + " --json -n 1 --by count");
  ASSERT_EQ(one.status, 0) << one.err;
  // The two sites beyond -n 1 are the rest: S1 and S3 summed; with S2 they are the totals.
  EXPECT_EQ(one.out,
            "{\"by\":\"count\",\"sites\":[" + kS2 + after_sites(2, numbers(3000, 3007, 4, 2007, 3, 0), kNone, 3, kAll));
  // pid 6 alone peaks when it allocates its 7 bytes.
  const auto pid6 = run(mt() + " top " + file + " --json --pid 6");
  ASSERT_EQ(pid6.status, 0) << pid6.err;
  EXPECT_EQ(pid6.out,
            "{\"by\":\"peak\",\"sites\":[" + s3(7) + after_sites(0, kNone, kNone, 1, numbers(7, 7, 1, 7, 1, 0)));
  // A pid the artifact does not have is a usage error naming the ones it has (issue 23), for every command
  // that takes --pid; report leaves an earlier page as it was.
  const auto none = run(mt() + " top " + file + " --json --pid 99");
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "memtrack top: no process 99 in " + file + " (processes: 5, 6)\n");
  const auto exported = run(mt() + " export " + file + " --format folded --pid 99");
  EXPECT_EQ(exported.status, 2);
  EXPECT_EQ(exported.out, "");
  EXPECT_EQ(exported.err, "memtrack export: no process 99 in " + file + " (processes: 5, 6)\n");
  const std::string page = scratch_dir() + "/pid99.html";
  std::ofstream(page) << "earlier page";
  const auto report = run(mt() + " report " + file + " --pid 99 -o " + page);
  EXPECT_EQ(report.status, 2);
  EXPECT_EQ(report.err, "memtrack report: no process 99 in " + file + " (processes: 5, 6)\n");
  EXPECT_EQ(slurp(page), "earlier page");
  EXPECT_EQ(run(mt() + " top " + file + " --by size").status, 2);
  EXPECT_EQ(run(mt() + " top " + file + " -n -1").status, 2);
}

TEST(Top, TableShowsEachSitesFrames) {
  const auto r = run(mt() + " top " + symbols_artifact() + " -n 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("top 2 allocation sites by peak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#1  peak 2.9 KiB, allocated 2.9 KiB in 3 allocations, leaked 2.0 KiB in 2 blocks"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      alloc_big (big.c:10) in /nonexistent/prog\n      main (big.c:20) in /nonexistent/prog\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      alloc_small (small.c:5) [inlined] in /nonexistent/prog\n"), std::string::npos) << r.out;
}

// One site, one allocation, one leaked block: the counts are singular (issue 23: "1 allocations").
TEST(Top, OneIsSingular) {
  const auto r = run(mt() + " top " + symbols_artifact() + " --pid 6");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("#1  peak 7 B, allocated 7 B in 1 allocation, leaked 7 B in 1 block, 0 temporary\n"),
            std::string::npos)
      << r.out;
  const auto stats = run(mt() + " stats " + symbols_artifact());
  ASSERT_EQ(stats.status, 0) << stats.err;
  EXPECT_NE(stats.out.find("  7 bytes in 1 block (7 B), 1 allocation\n"), std::string::npos) << stats.out;
}

// A lost output is an error: `top > /dev/full` says so and exits 1 (issue 23).
TEST(Top, AnOutputThatCannotBeWrittenIsAnError) {
  const auto r = run(mt() + " top " + symbols_artifact() + " > /dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "memtrack top: stdout: write failed: No space left on device\n");
  const auto json = run(mt() + " top " + symbols_artifact() + " --json >&-");
  EXPECT_EQ(json.status, 1);
  EXPECT_EQ(json.err, "memtrack top: stdout: write failed: Bad file descriptor\n");
}

TEST(Top, WithoutStacksSaysSo) {
  const std::string file = write_artifact("nostacks.mt", {{{make_event(EventKind::Malloc, 1, 1, 1, 16, 8)}, {}}});
  const auto r = run(mt() + " top " + file);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("has no call stacks"), std::string::npos) << r.err;
}

// --python on a recording without Python frames: one line saying so, exit 1, nothing on stdout.
TEST(Top, PythonWithoutPythonFramesSaysSo) {
  const std::string art = symbols_artifact();
  const RunResult r = run(mt() + " top " + art + " --python");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("memtrack top: " + art + " has no Python frames"), std::string::npos) << r.err;
}

TEST(Top, StatsListsTheTopLeakSitesOnlyWithStacks) {
  const std::string file = symbols_artifact();
  const auto table = run(mt() + " stats " + file);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(
      table.out.find("\ntop leak sites\n  2000 bytes in 2 blocks (2.0 KiB), 3 allocations\n"
                     "      alloc_big (big.c:10) in /nonexistent/prog\n      main (big.c:20) in /nonexistent/prog\n"
                     "  7 bytes in 1 block (7 B), 1 allocation\n      ?? at 0x4242\n"),
      std::string::npos)
      << table.out;
  const auto json = run(mt() + " stats --json " + file);
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find(",\"top_leaks\":[" + kS1 + "," + s3(0) + "]}\n"), std::string::npos) << json.out;
  // From a pipe too: the leak sites come from the stats' own pass.
  const auto piped = run("cat " + file + " | " + mt() + " stats --json -");
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, json.out);

  // The same events without stack records (context frames of the lifecycle only): no section, no key.
  const std::string plain = write_artifact(
      "plain.mt", {{{make_event(EventKind::Malloc, 5, 5, 1, 0x100, 1000)},
                    {codec::RecordingInfo{"0", {"prog"}, 0, 0, {"lifecycle"}, 1}, codec::ProcessStart{5, 1, 0, 0}}}});
  const auto t2 = run(mt() + " stats " + plain), j2 = run(mt() + " stats --json " + plain);
  ASSERT_EQ(t2.status, 0) << t2.err;
  EXPECT_EQ(t2.out.find("top leak sites"), std::string::npos) << t2.out;
  EXPECT_EQ(j2.out.find("top_leaks"), std::string::npos) << j2.out;
  // "complete" stays the document's last key (its value is the lifecycle issue's: no End record here).
  const std::size_t last = j2.out.rfind(",\"complete\":");
  ASSERT_NE(last, std::string::npos) << j2.out;
  EXPECT_EQ(j2.out.find(',', last + 1), std::string::npos) << j2.out;
}

// The chain program's captured return addresses (leaf in the library, middle and run in the executable) as
// one stack; no Symbols record, so top symbolizes from the module files. The library is a copy, deleted
// before top runs in the second case.
std::string chain_artifact(const std::string& name, const std::string& lib_path) {
  const sym::Capture& leaf = sym::capture("leaf");
  const sym::Capture& middle = sym::capture("middle");
  const sym::Capture& run_ = sym::capture("run");
  const auto id = [](const symbolize::BuildId& b) { return std::vector<std::uint8_t>(b.bytes, b.bytes + b.size); };
  const std::vector<codec::ContextRecord> records = {
      codec::ProcessStart{9, 1, 0, 0},
      codec::Module{9, 0, middle.module, id(middle.build_id), middle.bias, middle.bias, middle.bias + (1u << 24), true},
      codec::Module{9, 0, lib_path, id(leaf.build_id), leaf.bias, leaf.bias, leaf.bias + (1u << 20), true},
      codec::StackNodes{9, 0, 1, {0, 1, 2}, {run_.address, middle.address, leaf.address}},
      codec::EventStacks{0, {3, 3}},
  };
  return write_artifact(
      name,
      {{{make_event(EventKind::Malloc, 9, 9, 1, 0x10, 40), make_event(EventKind::Malloc, 9, 9, 2, 0x20, 2)}, records}});
}

std::string frame_json(const char* function, const std::string& module, const std::string& file, std::uint32_t line,
                       std::uint64_t address) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
  return std::string("{\"function\":") + (function ? "\"" + std::string(function) + "\"" : "null") + ",\"module\":\"" +
         module + "\",\"file\":" + (file.empty() ? "null" : "\"" + file + "\"") +
         ",\"line\":" + (line ? std::to_string(line) : "null") + ",\"address\":\"" + hex + "\"}";
}

// The source directory the DWARF names: this tree's, or the one a shared compiler cache first compiled the
// programs in (ccache keeps the object of another checkout of the same sources).
std::string dwarf_sources_dir(const std::string& out) {
  const std::string tail = "/tests/symbolize/programs/chain_main.cpp\"";
  const std::size_t end = out.find(tail);
  if (end == std::string::npos) return sym::sources_dir();
  const std::size_t begin = out.rfind('"', end) + 1;
  return out.substr(begin, end - begin) + "/tests/symbolize/programs";
}

TEST(Top, SymbolizesFromTheModuleFilesWhenTheArtifactHasNoSymbols) {
  const sym::Capture& leaf = sym::capture("leaf");
  const sym::Capture& middle = sym::capture("middle");
  const sym::Capture& run_ = sym::capture("run");
  const auto r = run(mt() + " top --json " + chain_artifact("chain.mt", leaf.module));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string dir = dwarf_sources_dir(r.out);
  const std::string lib = dir + "/chain_lib.cpp", exe = dir + "/chain_main.cpp";
  const std::string expected =
      "{\"by\":\"peak\",\"sites\":[{\"stack\":[" +
      frame_json("symlib::inlined_leaf(symlib::Recorder*, int)", leaf.module, lib,
                 sym::marker_line("chain_lib.cpp", "leaf_call"), leaf.relative()) +
      "," +
      frame_json("symlib::middle(symlib::Recorder*, int)", leaf.module, lib,
                 sym::marker_line("chain_lib.cpp", "inline_site"), leaf.relative()) +
      "," +
      frame_json("int chain::Outer::run<int>(symlib::Recorder*, int)", middle.module, exe,
                 sym::marker_line("chain_main.cpp", "run_call"), middle.relative()) +
      "," + frame_json("main", middle.module, exe, sym::marker_line("chain_main.cpp", "main_call"), run_.relative()) +
      "],\"peak_bytes\":42,\"allocated_bytes\":42,\"allocations\":2,\"leaked_bytes\":42,\"leaked_blocks\":2,"
      "\"temporary\":0}" +
      after_sites(0, kNone, kNone, 1, numbers(42, 42, 2, 42, 2, 0));
  EXPECT_EQ(r.out, expected);
}

TEST(Top, ADeletedModuleIsModulePlusOffset) {
  const sym::Capture& leaf = sym::capture("leaf");
  const sym::Capture& middle = sym::capture("middle");
  const std::string copy = scratch_dir() + "/libgone.so";
  std::filesystem::copy_file(leaf.module, copy, std::filesystem::copy_options::overwrite_existing);
  const std::string file = chain_artifact("gone.mt", copy);
  std::filesystem::remove(copy);
  const auto r = run(mt() + " top --json " + file);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string gone = frame_json(nullptr, copy, "", 0, leaf.relative());
  EXPECT_NE(r.out.find("{\"stack\":[" + gone + "," +
                       frame_json("int chain::Outer::run<int>(symlib::Recorder*, int)", middle.module,
                                  dwarf_sources_dir(r.out) + "/chain_main.cpp",
                                  sym::marker_line("chain_main.cpp", "run_call"), middle.relative())),
            std::string::npos)
      << r.out;
  const auto table = run(mt() + " top " + file);
  char offset[64];
  std::snprintf(offset, sizeof offset, "?? in %s +0x%llx\n", copy.c_str(),
                static_cast<unsigned long long>(leaf.relative()));
  EXPECT_NE(table.out.find(offset), std::string::npos) << table.out;
}

}  // namespace
}  // namespace memtrack::testing
