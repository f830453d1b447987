// `memtrack report` and `memtrack export` on artifacts with known call chains: one built here from events and
// context records (the sites of tests/analysis/sites_test.cpp, whose numbers are worked out there by hand), and
// one recorded from a real program (tests/report/programs/report_calls.c). The folded lines and the pprof
// profile (read back with protobuf's own C++ reader) hold exactly the expected stacks and values; the report
// loads in headless Chromium with no error and shows the chart and the known names in the flame graph.
#include <elf.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "common/artifacts.h"
#include "common/run.h"
#include "memtrack/codec/context.h"
#include "profile.pb.h"
#include "report/browser.h"

namespace mt = memtrack::testing;
namespace codec = memtrack::codec;
using codec::EventKind;
using codec::make_event;

namespace {

// pid 10 runs /bin/prog (build-id 01 02 03, bias 0x1000) with /lib/libx.so (bias 0x7000000); pid 11 is its
// fork child. Sites, innermost first: A = h_inl (inlined in h), h, libx+0x100, main; B = g, main;
// C = libx+0x100, main; D = libx+0x200, main. Per site (sites_test.cpp):
//   peak: A 300, C 1000; allocated: A 305, B 60, C 1000, D 7; count: A 3, B 2, C 1, D 1;
//   leaked: A 205 (2 blocks), B 10 (1), D 7 (1).
std::vector<std::byte> known_chains_artifact() {
  const std::vector<codec::Event> first = {
      make_event(EventKind::Malloc, 10, 1, 1, 0xa0, 100), make_event(EventKind::Malloc, 10, 1, 2, 0xb0, 50),
      make_event(EventKind::Free, 10, 1, 3, 0xb0),        make_event(EventKind::Malloc, 10, 2, 4, 0xc0, 1000),
      make_event(EventKind::Malloc, 10, 1, 5, 0xa1, 200), make_event(EventKind::Free, 10, 2, 6, 0xc0),
      make_event(EventKind::Malloc, 10, 1, 7, 0xb1, 10),  make_event(EventKind::Free, 10, 1, 8, 0xa0),
  };
  const std::vector<codec::Event> second = {make_event(EventKind::Malloc, 11, 11, 9, 0xd0, 5),
                                            make_event(EventKind::Malloc, 11, 11, 10, 0xd1, 7)};
  const std::vector<codec::ContextRecord> after_first = {
      codec::RecordingInfo{"test", {"prog", "--fork"}, 1, 2, {"lifecycle", "stacks", "modules"}, 1},
      codec::ProcessStart{10, 1, 0, 0},
      codec::Module{10, 0, "/bin/prog", {1, 2, 3}, 0x1000, 0x1000, 0x9000, true},
      codec::Module{10, 0, "/lib/libx.so", {}, 0x7000000, 0x7000000, 0x7100000, true},
      codec::StackNodes{10, 0, 1, {0, 1, 1, 2}, {0x1500, 0x7000100, 0x1800, 0x1234}},
      codec::Symbols{"/bin/prog",
                     {1, 2, 3},
                     {0x500, 0x800, 0x234},
                     {1, 1, 2},
                     {0, 1, 2, 3},
                     {4, 4, 4, 4},
                     {50, 60, 70, 71},
                     {"main", "g", "h_inl", "h", "prog.c"}},
      codec::EventStacks{0, {4, 3, 0, 2, 4, 0, 3, 0}},
  };
  const std::vector<codec::ContextRecord> after_second = {
      codec::ProcessStart{11, 10, 8, 9}, codec::StackNodes{11, 8, 5, {1}, {0x7000200}},
      codec::EventStacks{8, {4, 5}},     codec::ProcessExit{11, 10, 11, 0, std::nullopt},
      codec::StreamEnd{10, 2, true},
  };
  codec::FrameCompressor compressor(3);
  std::vector<std::byte> scratch, out;
  const auto context = [&](const std::vector<codec::ContextRecord>& records) {
    const codec::Status s = codec::encode_context_frame(records, compressor, scratch, out);
    if (!s.is_ok()) throw std::runtime_error(s.message());
  };
  const mt::Artifact a = mt::build_artifact(first, first.size(), false);
  out = a.bytes;
  context(after_first);
  const mt::Artifact b = mt::build_artifact(second, second.size(), false);
  out.insert(out.end(), b.bytes.begin(), b.bytes.end());
  context(after_second);
  return out;
}

std::string write_known_chains() {
  const std::string path = mt::scratch_dir() + "/chains.mt";
  const std::vector<std::byte> bytes = known_chains_artifact();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string folded(const std::string& by) {
  const mt::RunResult r =
      mt::run(mt::memtrack_bin() + " export " + write_known_chains() + " --format folded --by " + by);
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

TEST(Export, FoldedHasExactlyTheExpectedLinesForEveryRanking) {
  EXPECT_EQ(folded("allocated"),
            "main;g 60\n"
            "main;libx.so+0x100 1000\n"
            "main;libx.so+0x100;h;h_inl 305\n"
            "main;libx.so+0x200 7\n");
  EXPECT_EQ(folded("peak"),
            "main;libx.so+0x100 1000\n"
            "main;libx.so+0x100;h;h_inl 300\n");
  EXPECT_EQ(folded("count"),
            "main;g 2\n"
            "main;libx.so+0x100 1\n"
            "main;libx.so+0x100;h;h_inl 3\n"
            "main;libx.so+0x200 1\n");
  EXPECT_EQ(folded("leaked"),
            "main;g 10\n"
            "main;libx.so+0x100;h;h_inl 205\n"
            "main;libx.so+0x200 7\n");
}

TEST(Export, UsageAndMissingStacks) {
  const std::string file = write_known_chains();
  EXPECT_EQ(mt::run(mt::memtrack_bin() + " export " + file).status, 2);
  EXPECT_EQ(mt::run(mt::memtrack_bin() + " export " + file + " --format svg").status, 2);
  EXPECT_EQ(mt::run(mt::memtrack_bin() + " export " + file + " --format folded --by temporary").status, 2);
  // Events without any stack record: one line on stderr, exit 1.
  const std::vector<codec::Event> plain = {make_event(EventKind::Malloc, 1, 1, 1, 0x10, 8)};
  const mt::Artifact a = mt::build_artifact(plain, 1, true);
  const std::string path = mt::scratch_dir() + "/plain.mt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(a.bytes.data()), static_cast<std::streamsize>(a.bytes.size()));
  const mt::RunResult r = mt::run(mt::memtrack_bin() + " export " + path + " --format pprof -o /dev/null");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("has no call stacks"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

perftools::profiles::Profile read_pprof(const std::string& path) {
  const std::string gz = mt::slurp(path);
  EXPECT_GE(gz.size(), 2u);
  EXPECT_EQ(gz.substr(0, 2), "\x1f\x8b") << "not gzip";
  google::protobuf::io::ArrayInputStream raw(gz.data(), static_cast<int>(gz.size()));
  google::protobuf::io::GzipInputStream in(&raw, google::protobuf::io::GzipInputStream::GZIP);
  perftools::profiles::Profile p;
  EXPECT_TRUE(p.ParseFromZeroCopyStream(&in));
  return p;
}

TEST(Export, PprofParsesIntoTheExpectedSamplesFunctionsAndValues) {
  const std::string out = mt::scratch_dir() + "/chains.pb.gz";
  const mt::RunResult r =
      mt::run(mt::memtrack_bin() + " export " + write_known_chains() + " --format pprof --by leaked -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const perftools::profiles::Profile p = read_pprof(out);
  const auto str = [&](std::int64_t i) { return p.string_table(static_cast<int>(i)); };
  ASSERT_EQ(p.string_table(0), "");
  std::vector<std::string> types;
  for (const auto& t : p.sample_type()) types.push_back(str(t.type()) + "/" + str(t.unit()));
  EXPECT_EQ(types, (std::vector<std::string>{"peak_space/bytes", "alloc_space/bytes", "alloc_objects/count",
                                             "leaked_space/bytes", "leaked_objects/count"}));
  EXPECT_EQ(str(p.default_sample_type()), "leaked_space");

  std::map<std::uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : p.function()) functions[f.id()] = &f;
  std::map<std::uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : p.location()) locations[l.id()] = &l;
  std::map<std::uint64_t, const perftools::profiles::Mapping*> mappings;
  for (const auto& m : p.mapping()) mappings[m.id()] = &m;

  // Each sample's stack as "function@line" per line, innermost first, locations separated by " | ".
  std::map<std::string, std::vector<std::int64_t>> samples;
  for (const auto& s : p.sample()) {
    std::string stack;
    for (const std::uint64_t id : s.location_id()) {
      ASSERT_TRUE(locations.count(id)) << id;
      const auto& loc = *locations[id];
      if (!stack.empty()) stack += " | ";
      for (int i = 0; i < loc.line_size(); ++i) {
        ASSERT_TRUE(functions.count(loc.line(i).function_id()));
        stack += (i ? "," : "") + str(functions[loc.line(i).function_id()]->name()) + "@" +
                 std::to_string(loc.line(i).line());
      }
    }
    samples[stack] = {s.value().begin(), s.value().end()};
  }
  const std::map<std::string, std::vector<std::int64_t>> expected = {
      {"h_inl@70,h@71 | libx.so+0x100@0 | main@50", {300, 305, 3, 205, 2}},
      {"g@60 | main@50", {0, 60, 2, 10, 1}},
      {"libx.so+0x100@0 | main@50", {1000, 1000, 1, 0, 0}},
      {"libx.so+0x200@0 | main@50", {0, 7, 1, 7, 1}},
  };
  EXPECT_EQ(samples, expected);

  // Addresses: module-relative + the module's bias, in its mapping (path, build-id, range, offset).
  std::map<std::string, std::uint64_t> address_of;
  for (const auto& l : p.location()) {
    const std::string name = str(functions[l.line(l.line_size() - 1).function_id()]->name());
    address_of[name] = l.address();
    ASSERT_TRUE(mappings.count(l.mapping_id())) << name;
    const auto& m = *mappings[l.mapping_id()];
    EXPECT_GE(l.address(), m.memory_start()) << name;
    EXPECT_LT(l.address(), m.memory_limit()) << name;
    if (name == "h" || name == "main" || name == "g") {
      EXPECT_EQ(str(m.filename()), "/bin/prog");
      EXPECT_EQ(str(m.build_id()), "010203");
      EXPECT_EQ(m.memory_start(), 0x1000u);
      EXPECT_EQ(m.memory_limit(), 0x9000u);
      EXPECT_EQ(m.file_offset(), 0u);
    } else {
      EXPECT_EQ(str(m.filename()), "/lib/libx.so");
      EXPECT_EQ(str(m.build_id()), "");
    }
  }
  EXPECT_EQ(address_of["h"], 0x1234u);
  EXPECT_EQ(address_of["main"], 0x1500u);
  EXPECT_EQ(address_of["g"], 0x1800u);
  EXPECT_EQ(address_of["libx.so+0x100"], 0x7000100u);
  for (const auto& f : p.function())
    if (str(f.name()) == "h") {
      EXPECT_EQ(str(f.filename()), "prog.c");
    }
}

// A non-PIE executable's mapping: memory_start is its lowest PT_LOAD segment's p_vaddr (load bias 0) and
// file_offset that segment's p_offset (0 here, where start - bias would say 0x400000), read from the ELF file.
TEST(Export, PprofMappingOfANonPieExecutableHasItsSegmentsFileOffset) {
  const std::string program = MEMTRACK_PROGRAMS_DIR "/report_calls_nopie";
  const std::string elf = mt::slurp(program);
  ASSERT_GE(elf.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof eh);
  ASSERT_EQ(eh.e_type, ET_EXEC) << program << " is not a non-PIE executable";
  std::uint64_t lowest_vaddr = UINT64_MAX, lowest_offset = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    ASSERT_LE(eh.e_phoff + (i + 1) * sizeof ph, elf.size());
    std::memcpy(&ph, elf.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && ph.p_vaddr < lowest_vaddr) lowest_vaddr = ph.p_vaddr, lowest_offset = ph.p_offset;
  }
  ASSERT_NE(lowest_vaddr, UINT64_MAX);
  ASSERT_NE(lowest_vaddr, lowest_offset) << "the test needs a segment whose address is not its offset";

  const std::string artifact = mt::scratch_dir() + "/nopie.mt", out = mt::scratch_dir() + "/nopie.pb.gz";
  const mt::RunResult rec = mt::run(mt::memtrack_bin() + " record -q -o " + artifact + " -- " + program);
  ASSERT_EQ(rec.status, 0) << rec.err;
  const mt::RunResult r = mt::run(mt::memtrack_bin() + " export " + artifact + " --format pprof -o " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const perftools::profiles::Profile p = read_pprof(out);
  const perftools::profiles::Mapping* mapping = nullptr;
  for (const auto& m : p.mapping())
    if (p.string_table(static_cast<int>(m.filename())).ends_with("/report_calls_nopie")) mapping = &m;
  ASSERT_NE(mapping, nullptr) << "no mapping of the program";
  EXPECT_EQ(mapping->memory_start(), lowest_vaddr);
  EXPECT_EQ(mapping->file_offset(), lowest_offset);
  // The program's own frames are in it.
  bool in_program = false;
  for (const auto& l : p.location())
    in_program |= l.mapping_id() == mapping->id() && l.address() >= mapping->memory_start() &&
                  l.address() < mapping->memory_limit();
  EXPECT_TRUE(in_program);
}

// The report's JSON as embedded in the page (escape_json's \u003c etc. are valid JSON escapes).
std::string embedded_json(const std::string& page) {
  const std::string open = "<script type=\"application/json\"";
  const std::size_t at = page.find(open);
  const std::size_t begin = page.find('>', at) + 1;
  return page.substr(begin, page.find("</script>", begin) - begin);
}

#define SKIP_WITHOUT_CHROMIUM()                                                         \
  if (!mt::have_chromium())                                                             \
  GTEST_SKIP() << mt::kChromium                                                         \
               << " is absent: install Debian's chromium package (ci/install-deps.sh) " \
                  "to run the report's browser tests"

mt::BrowserResult load_report(const std::string& html, const std::string& tag) {
  mt::BrowserResult r = mt::load_in_chromium(html, tag, true);
  EXPECT_EQ(r.status, 0) << r.log.substr(0, 4000);
  EXPECT_EQ(r.console_lines, "") << "the page logged to the console";
  EXPECT_EQ(mt::html_attribute(r.dom, "data-errors"), "0") << mt::html_attribute(r.dom, "data-error-messages");
  EXPECT_EQ(mt::html_attribute(r.dom, "data-rendered"), "yes");
  EXPECT_NE(r.dom.find("id=\"mt-chart\""), std::string::npos);
  EXPECT_NE(r.dom.find("data-series=\"live heap\""), std::string::npos);
  const mt::Image img = mt::decode_png(mt::slurp(r.screenshot));
  EXPECT_EQ(img.error, "");
  const mt::PixelStats s = mt::pixel_stats(img);
  EXPECT_GE(s.distinct, 50u) << "a blank page";
  EXPECT_GE(s.non_background, 0.02) << "a blank page";
  return r;
}

std::string flame_svg(const std::string& dom) {
  const std::size_t begin = dom.find("id=\"mt-flame\"");
  if (begin == std::string::npos) return "";
  return dom.substr(begin, dom.find("</svg>", begin) - begin);
}

TEST(ReportGenerator, KnownChainsReportDrawsTheNamesChartAndMarkers) {
  const std::string html = mt::scratch_dir() + "/chains.html";
  const mt::RunResult r = mt::run(mt::memtrack_bin() + " report " + write_known_chains() + " -o " + html);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = mt::slurp(html);
  const std::string json = embedded_json(page);
  // The generator's numbers, before any browser: peak 1300 B at t = 4 ns (event 4, first event at 1), the
  // markers of both processes, the per-process series, the flame graphs and tables of the sites.
  EXPECT_NE(json.find("\"peak\":{\"t_ns\":4,\"bytes\":1300}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"kind\":\"start\",\"pid\":11"), std::string::npos);
  EXPECT_NE(json.find("\"kind\":\"exit\",\"pid\":11"), std::string::npos);
  EXPECT_NE(json.find("\"label\":\"pid 10\""), std::string::npos) << json;
  // (Frames are listed once in top.frames, in the order first met; stacks hold their indices.)
  EXPECT_NE(json.find("\"top\":{\"peak\":[{\"stack\":[0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"frames\":[{\"function\":null,\"module\":\"/lib/libx.so\""), std::string::npos)
      << "peak ranks site C (1000 B) first; a frame in no Symbols record has no function (the page shows module "
         "+ address)";
  EXPECT_NE(json.find("\"pruned\":{\"peak\":{\"nodes\":0"), std::string::npos);
  // Every section but resident per site (no ResidentPages records in this artifact): said, not drawn as 0.
  EXPECT_NE(json.find("\"missing\":{\"flame.resident\":\"not recorded: the artifact has no page snapshots"),
            std::string::npos)
      << json;
  const std::size_t missing_at = json.find("\"missing\":{");
  const std::string missing = json.substr(missing_at, json.find('}', missing_at) - missing_at);
  EXPECT_EQ(missing.find("\",\""), std::string::npos) << "flame.resident is the only missing key: " << missing;
  EXPECT_EQ(json.find("\"resident\":{\"name\""), std::string::npos) << "no resident graph";
  SKIP_WITHOUT_CHROMIUM();
  const mt::BrowserResult b = load_report(html, "chains");
  const std::string flame = flame_svg(b.dom);
  for (const char* name : {"all", "main", "libx.so+0x100"})
    EXPECT_NE(flame.find(">" + std::string(name) + "</text>"), std::string::npos) << name;
  EXPECT_NE(b.dom.find("data-ranking=\"peak\""), std::string::npos);
  EXPECT_NE(b.dom.find("class=\"mt-marker\""), std::string::npos);
  EXPECT_NE(b.dom.find("Resident at peak: not recorded: the artifact has no page snapshots"), std::string::npos);
  EXPECT_NE(b.dom.find("data-key=\"resident\" aria-selected=\"false\" disabled"), std::string::npos)
      << "the resident tab is disabled";
}

TEST(ReportGenerator, RecordedProgramReportLoadsInTheBrowser) {
  const std::string artifact = mt::scratch_dir() + "/report_calls.mt", html = mt::scratch_dir() + "/calls.html";
  const mt::RunResult rec =
      mt::run(mt::memtrack_bin() + " record -o " + artifact + " -- " + MEMTRACK_PROGRAMS_DIR "/report_calls");
  ASSERT_EQ(rec.status, 0) << rec.err;
  // Default output: the artifact's name + .html in the current directory.
  const mt::RunResult r = mt::run("cd " + mt::scratch_dir() + " && " + mt::memtrack_bin() + " report " + artifact);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(mt::run("mv " + mt::scratch_dir() + "/report_calls.mt.html " + html).status, 0);
  const std::string json = embedded_json(mt::slurp(html));
  // 200 + 65 + 10 allocations: the chart's peak is report_build's 64 * 4096 B plus its array at least.
  EXPECT_NE(json.find("\"timeline\":{\"t_ns\":["), std::string::npos);
  const bool stacks = json.find("\"flame\":{") != std::string::npos;
  if (!stacks) {
    EXPECT_NE(json.find("\"flame\":\"the artifact has no call stacks"), std::string::npos) << json;
  }
  SKIP_WITHOUT_CHROMIUM();
  const mt::BrowserResult b = load_report(html, "calls");
  if (stacks) {  // recorded with call stacks (the capture of issue 13): the known chain is in the graph
    const std::string flame = flame_svg(b.dom);
    for (const char* name : {"main", "report_build", "report_buffer"})
      EXPECT_NE(flame.find(">" + std::string(name) + "</text>"), std::string::npos) << name;
  } else {
    std::cout << "recorded without call stacks (this build's recorder does not capture them): flame graph "
                 "names not checked on the recorded program\n";
  }
}

// The page of `html` with `script` run after the report's own (the page's policy allows inline scripts), its
// key=value lines read back with mt::test_results.
std::string with_script(const std::string& html, const std::string& script, const std::string& tag) {
  std::string page = mt::slurp(html);
  const std::size_t at = page.rfind("</body>");
  page.insert(at, "<script>\n" + script + "\n</script>");
  const std::string path = mt::scratch_dir() + "/" + tag + ".html";
  std::ofstream(path, std::ios::binary) << page;
  return path;
}

// Writes `lines` (JS expressions of key=value lines) into <pre id="mt-test-results">.
constexpr const char* kResultsTail = R"JS(
  const pre = document.createElement('pre');
  pre.id = 'mt-test-results';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
)JS";

std::string value_or(const std::map<std::string, std::string>& m, const std::string& k) {
  const auto it = m.find(k);
  return it == m.end() ? "<absent>" : it->second;
}

// A recording that pauses itself (programs/report_pause.c: 8 MiB held, pause, freed while 4 MiB is allocated
// unrecorded, resume, 1 MiB): inside the pause the events give a heap of 0 although the program holds 4 MiB.
// The page shades the span, labels it "paused", and draws no heap there (the line is broken: two runs, no
// point strictly inside the band); the tooltip inside says the heap is not known.
TEST(ReportGenerator, PausedSpanIsShadedAndTheHeapLineBrokenThere) {
  const std::string artifact = mt::scratch_dir() + "/pause.mt", html = mt::scratch_dir() + "/pause.html";
  const mt::RunResult rec =
      mt::run(mt::memtrack_bin() + " record -q -o " + artifact + " -- " + MEMTRACK_PROGRAMS_DIR "/report_pause");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const mt::RunResult r = mt::run(mt::memtrack_bin() + " report " + artifact + " -o " + html);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = embedded_json(mt::slurp(html));
  ASSERT_NE(json.find("\"paused\":[{\"begin_ns\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"source\":\"library\",\"resumed\":true}]"), std::string::npos) << json;
  SKIP_WITHOUT_CHROMIUM();
  const std::string script = std::string(R"JS(
(function () {
  const r = window.memtrackReport, out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  const p = r.data.timeline.paused[0];
  const band = document.querySelector('#mt-chart rect.mt-paused');
  put('bands', document.querySelectorAll('#mt-chart rect.mt-paused').length);
  put('label', Array.from(document.querySelectorAll('#mt-chart text.mt-paused-label')).map((t) => t.textContent).join('|'));
  const a = +band.getAttribute('x'), b = a + +band.getAttribute('width');
  const heap = document.querySelector('#mt-chart .mt-line[data-series="live heap"]');
  put('runs', heap.getAttribute('data-runs'));
  const xs = heap.getAttribute('d').split(/[ML]/).filter(Boolean).map((xy) => +xy.split(',')[0]);
  put('inside', xs.filter((x) => x > a + 0.5 && x < b - 0.5).length);
  put('before', xs.filter((x) => x <= a + 0.5).length);
  put('after', xs.filter((x) => x >= b - 0.5).length);
  put('hover.inside', r.timeline.hoverAt((p.begin_ns + p.end_ns) / 2));
  put('hover.before', r.timeline.hoverAt(p.begin_ns / 2));
  r.timeline.unhover();
  put('legend', document.getElementById('mt-timeline-legend').textContent);
  put('note', document.querySelector('#mt-timeline p.mt-note').textContent);
  r.timeline.setView('process');
  put('process.runs', document.querySelector('#mt-chart .mt-line:not([stroke-dasharray])').getAttribute('data-runs'));
  r.timeline.setView('whole');
)JS") + kResultsTail + "})();";
  const mt::BrowserResult b = load_report(with_script(html, script, "pause-driven"), "pause");
  const auto res = mt::test_results(b.dom);
  ASSERT_FALSE(res.empty()) << "the script wrote nothing";
  EXPECT_EQ(value_or(res, "bands"), "1");
  EXPECT_EQ(value_or(res, "label"), "paused");
  EXPECT_EQ(value_or(res, "runs"), "2") << "the heap line is broken over the pause";
  EXPECT_EQ(value_or(res, "inside"), "0") << "no heap drawn inside the pause (the recorded 0 B is not the heap)";
  EXPECT_NE(value_or(res, "before"), "0");
  EXPECT_NE(value_or(res, "after"), "0");
  EXPECT_NE(value_or(res, "hover.inside").find("live heap: not known (paused)"), std::string::npos)
      << value_or(res, "hover.inside");
  EXPECT_NE(value_or(res, "hover.inside").find("paused (library"), std::string::npos) << value_or(res, "hover.inside");
  EXPECT_NE(value_or(res, "hover.before").find("live heap: 8.00 MiB"), std::string::npos)
      << value_or(res, "hover.before");
  EXPECT_NE(value_or(res, "legend").find("paused (not recorded)"), std::string::npos) << value_or(res, "legend");
  EXPECT_NE(value_or(res, "note").find("nothing is known of the heap inside a pause and its lines are broken"),
            std::string::npos)
      << value_or(res, "note");
  EXPECT_EQ(value_or(res, "process.runs"), "2") << "the per-process heap line too";
}

// 13 processes (sh and 12 sorts): the per-process view draws the 8 with the highest peak heap, its legend lists
// them with "+5 more", which shows all 13 (and a second click the 8 again).
TEST(ReportGenerator, ManyProcessesShowTheTopEightWithMore) {
  const std::string artifact = mt::scratch_dir() + "/many.mt", html = mt::scratch_dir() + "/many.html";
  const mt::RunResult rec = mt::run(mt::memtrack_bin() + " record -q -o " + artifact +
                                    " -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sort /etc/services "
                                    ">/dev/null; done'");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const mt::RunResult r = mt::run(mt::memtrack_bin() + " report " + artifact + " -o " + html);
  ASSERT_EQ(r.status, 0) << r.err;
  SKIP_WITHOUT_CHROMIUM();
  const std::string script = std::string(R"JS(
(function () {
  const r = window.memtrackReport, out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  const heaps = () => Array.from(document.querySelectorAll('#mt-chart .mt-line:not([stroke-dasharray])'));
  const items = () => Array.from(document.querySelectorAll('#mt-timeline-legend span')).filter((e) => !/^(resident|start|exec|exit)/.test(e.textContent) && !/resident/.test(e.textContent));
  put('processes', r.data.timeline.processes.length);
  // 13 processes' markers are drawn per 4-pixel bucket in a strip above the plot: above the hover overlay,
  // with their tooltip on hover.
  const bucket = document.querySelector('#mt-chart .mt-marker-bucket[data-kind="exit"]');
  const bb = bucket.getBoundingClientRect(), bx = bb.left + bb.width / 2, by = bb.top + bb.height / 2;
  put('bucket.top', document.elementFromPoint(bx, by) === bucket);
  bucket.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: bx, clientY: by}));
  const tip = document.getElementById('mt-tooltip');
  put('bucket.tooltip', tip.hidden ? 'hidden' : tip.textContent);
  r.timeline.unhover();
  r.timeline.setView('process');
  put('lines', heaps().length);
  put('items', items().length);
  const more = document.getElementById('mt-more-processes');
  put('more', more ? more.textContent : 'none');
  // The lines drawn are the highest peaks: the lowest drawn peak is at least the highest hidden one.
  const peak = (p) => Math.max(0, ...p.heap);
  const drawn = new Set(heaps().map((l) => l.getAttribute('data-series')));
  const names = r.data.timeline.processes.map((p) => p.label);
  const drawnPeaks = r.data.timeline.processes.filter((p) => Array.from(drawn).some((d) => d.startsWith(p.label))).map(peak);
  const hiddenPeaks = r.data.timeline.processes.filter((p) => !Array.from(drawn).some((d) => d.startsWith(p.label))).map(peak);
  put('ranked', Math.min(...drawnPeaks) >= Math.max(0, ...hiddenPeaks));
  more.click();
  put('all.lines', heaps().length);
  put('all.items', items().length);
  put('all.more', document.getElementById('mt-more-processes').textContent);
  document.getElementById('mt-more-processes').click();
  put('again.lines', heaps().length);
  r.timeline.setView('whole');
)JS") + kResultsTail + "})();";
  const mt::BrowserResult b = load_report(with_script(html, script, "many-driven"), "many");
  const auto res = mt::test_results(b.dom);
  ASSERT_FALSE(res.empty()) << "the script wrote nothing";
  const int processes = std::stoi(value_or(res, "processes"));
  ASSERT_GE(processes, 13) << "sh and 12 sorts";
  EXPECT_EQ(value_or(res, "bucket.top"), "true") << "the marker strip is not under the hover overlay";
  EXPECT_NE(value_or(res, "bucket.tooltip").find("process exit"), std::string::npos) << value_or(res, "bucket.tooltip");
  EXPECT_EQ(value_or(res, "lines"), "8");
  EXPECT_EQ(value_or(res, "items"), "8");
  EXPECT_EQ(value_or(res, "more"), "+" + std::to_string(processes - 8) + " more");
  EXPECT_EQ(value_or(res, "ranked"), "true");
  EXPECT_EQ(value_or(res, "all.lines"), std::to_string(processes));
  EXPECT_EQ(value_or(res, "all.items"), std::to_string(processes));
  EXPECT_EQ(value_or(res, "all.more"), "show the 8 highest only");
  EXPECT_EQ(value_or(res, "again.lines"), "8");
}

// Resident at peak (issue 29): a 64 MiB block with 16 MiB touched and a 16 MiB block touched whole
// (tests/integration/programs/resident.c, sites): the report's resident graph gives each site ~16 MiB, the
// same figures as `memtrack top --by resident --json` (one computation: the sites' resident_bytes).
TEST(ReportGenerator, ResidentAtPeakFlameGraphMatchesTopByResident) {
  const std::string artifact = mt::scratch_dir() + "/sites.mt", html = mt::scratch_dir() + "/sites.html";
  const mt::RunResult rec =
      mt::run(mt::memtrack_bin() + " record -q -o " + artifact + " -- " MEMTRACK_PROGRAMS_DIR "/resident sites 1000");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const mt::RunResult top = mt::run(mt::memtrack_bin() + " top " + artifact + " --by resident --json -n 0");
  ASSERT_EQ(top.status, 0) << top.err;
  // top's resident_bytes of the sites whose innermost frame is big_site / small_site.
  const auto top_resident = [&](const std::string& fn) -> std::uint64_t {
    const std::size_t at = top.out.find("{\"stack\":[{\"function\":\"" + fn + "\"");
    if (at == std::string::npos) return 0;
    const std::size_t key = top.out.find("\"resident_bytes\":", at);
    return std::stoull(top.out.substr(key + 17));
  };
  const std::uint64_t big = top_resident("big_site"), small = top_resident("small_site");
  constexpr std::uint64_t kMiB = 1 << 20;
  EXPECT_GE(big, 14 * kMiB) << top.out;
  EXPECT_LE(big, 18 * kMiB) << top.out;
  EXPECT_GE(small, 14 * kMiB) << top.out;
  EXPECT_LE(small, 18 * kMiB) << top.out;
  const mt::RunResult r = mt::run(mt::memtrack_bin() + " report " + artifact + " -o " + html);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = embedded_json(mt::slurp(html));
  EXPECT_NE(json.find("\"resident\":{\"name\":\"all\""), std::string::npos);
  EXPECT_EQ(json.find("\"flame.resident\""), std::string::npos) << "recorded: nothing missing";
  SKIP_WITHOUT_CHROMIUM();
  const std::string script = std::string(R"JS(
(function () {
  const r = window.memtrackReport, out = [];
  const put = (k, v) => out.push(k + '=' + String(v).replace(/\n/g, ' '));
  put('show', r.flame.show('resident'));
  put('kind', document.getElementById('mt-flame').getAttribute('data-kind'));
  for (const f of ['big_site', 'small_site']) { const fr = r.flame.frame(f); put(f, fr ? fr.value : 'absent'); }
  put('drawn', Array.from(document.querySelectorAll('#mt-flame text')).map((t) => t.textContent).join('|'));
  put('status', document.getElementById('mt-flame-status').textContent);
  put('missing', document.getElementById('mt-flame-resident-missing') ? 'yes' : 'no');
  r.flame.show('peak');
  put('peak.big', r.flame.frame('big_site').value);
)JS") + kResultsTail + "})();";
  const mt::BrowserResult b = load_report(with_script(html, script, "sites-driven"), "sites");
  const auto res = mt::test_results(b.dom);
  ASSERT_FALSE(res.empty()) << "the script wrote nothing";
  EXPECT_EQ(value_or(res, "show"), "true");
  EXPECT_EQ(value_or(res, "kind"), "resident");
  EXPECT_EQ(value_or(res, "big_site"), std::to_string(big)) << "the page's figure is top's";
  EXPECT_EQ(value_or(res, "small_site"), std::to_string(small));
  EXPECT_NE(value_or(res, "drawn").find("big_site"), std::string::npos) << value_or(res, "drawn");
  EXPECT_NE(value_or(res, "status").find("resident at the page snapshots"), std::string::npos);
  EXPECT_EQ(value_or(res, "missing"), "no");
  EXPECT_EQ(value_or(res, "peak.big"), std::to_string(64 * kMiB)) << "live at the peak: the whole 64 MiB";
}

}  // namespace
