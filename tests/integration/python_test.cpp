// CPython under `memtrack record` (docs/RUNTIME.md, "Python programs"): Debian's /usr/bin/python3 (3.11,
// libpython linked statically) and, for the frame tests, 3.10, 3.12 and 3.13 where this machine has them
// (PythonFrames below); scripts in programs/python/.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "artifact_events.h"
#include "common/run.h"

namespace {

namespace fs = std::filesystem;
using memtrack::testing::memtrack_bin;
using memtrack::testing::memtrack_stats_command;
using memtrack::testing::run;
using memtrack::testing::RunResult;
using memtrack::testing_integration::read_artifact_events;

const std::string kPython = MEMTRACK_SYSTEM_PYTHON;
const std::string kScripts = MEMTRACK_INTEGRATION_DIR "/programs/python";

// The interpreters the frame tests run on: Debian's (always; the only one on Debian 12, so the only one CI
// has) and, where this machine has them, CPython 3.10, 3.12 and 3.13, whose frame layouts the preload knows too
// (docs/RUNTIME.md, "Python programs"). A version's interpreter is the first of: a path in
// MEMTRACK_TEST_PYTHONS (colon-separated) that is that version, `python3.N` on PATH, pyenv's build
// ($PYENV_ROOT or ~/.pyenv, versions/3.N.*/bin/python3.N). Absent: its tests are skipped, saying so.
struct Interpreter {
  std::string path;     // empty: not found
  std::string version;  // "3.12.1"
};

// `python -c` printing sys.executable and the version, or an empty Interpreter.
Interpreter ask(const std::string& python) {
  const RunResult r = run("'" + python +
                          "' -c 'import sys; print(sys.executable); print(\"%d.%d.%d\" % sys.version_info[:3])' "
                          "2>/dev/null");
  std::istringstream in(r.out);
  Interpreter i;
  if (r.status != 0 || !std::getline(in, i.path) || !std::getline(in, i.version)) return {};
  return i;
}

Interpreter find_interpreter(const std::string& slot) {
  if (slot == "system") return ask(kPython);
  const std::string name = "python" + slot;  // slot: "3.12"
  const auto is_it = [&](const Interpreter& i) { return !i.path.empty() && i.version.rfind(slot + ".", 0) == 0; };
  if (const char* list = std::getenv("MEMTRACK_TEST_PYTHONS")) {
    std::istringstream in(list);
    for (std::string p; std::getline(in, p, ':');)
      if (Interpreter i = ask(p); is_it(i)) return i;
  }
  if (Interpreter i = ask(name); is_it(i)) return i;
  const char* root = std::getenv("PYENV_ROOT");
  const char* home = std::getenv("HOME");
  const fs::path versions = root != nullptr   ? fs::path(root) / "versions"
                            : home != nullptr ? fs::path(home) / ".pyenv" / "versions"
                                              : fs::path();
  std::error_code ec;
  if (!versions.empty() && fs::is_directory(versions, ec))
    for (const auto& d : fs::directory_iterator(versions, ec))
      if (d.path().filename().string().rfind(slot + ".", 0) == 0)
        if (Interpreter i = ask((d.path() / "bin" / name).string()); is_it(i)) return i;
  return {};
}

// The fixture of the tests run on each interpreter: skipped when the version is not on this machine.
class PythonFrames : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    python_ = find_interpreter(GetParam());
    if (python_.path.empty())
      GTEST_SKIP() << "no CPython " << GetParam() << " here (MEMTRACK_TEST_PYTHONS, python" << GetParam()
                   << " on PATH or pyenv's build)";
  }
  int minor() const { return std::atoi(python_.version.c_str() + 2); }  // "3.12.1": 12
  // At least 3.12: list comprehensions are inlined in their function (PEP 709).
  bool inlines_comprehensions() const { return minor() >= 12; }
  // A function as a stack names it: its qualified name, or in 3.10 (no co_qualname) its name alone.
  std::string shown(const std::string& qualname) const {
    return minor() >= 11 ? qualname : qualname.substr(qualname.rfind('.') + 1);
  }
  Interpreter python_;
};

// `memtrack record -o ART [FLAGS] -- PYTHON SCRIPT` (Debian's python3 unless said) with PYTHONMALLOC unset (the test's
// own environment may set it).
RunResult record(const fs::path& art, const std::string& flags, const std::string& script,
                 const std::string& python = kPython) {
  return run("env -u PYTHONMALLOC " + memtrack_bin() + " record -o '" + art.string() + "' " + flags + " -- '" + python +
             "' " + kScripts + "/" + script);
}

// A number field of `memtrack stats --json` (the first occurrence: the artifact's total).
std::uint64_t stats_field(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  if (at == std::string::npos) return 0;
  return std::strtoull(json.c_str() + at + key.size() + 3, nullptr, 10);
}

const char* const kPymallocNote =
    ": python 3.11.2: pymalloc's allocations are recorded through the interpreter's allocator domains "
    "(PyObject_Malloc, PyMem_Malloc)\n";
const char* const kMallocNote =
    ": python 3.11.2: the interpreter allocates objects with malloc (PYTHONMALLOC=malloc)\n";

// pymalloc's small objects are allocations without PYTHONMALLOC=malloc: 100,000 bytes objects of 77 bytes
// are at least 100,000 Callocs of 110 bytes, and the summary says how the objects were recorded.
TEST(Python, PymallocObjectsAreRecordedWithoutPythonMalloc) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = record(dir / "a.art", "", "objects.py");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "100000\n");
  EXPECT_NE(r.err.find(kPymallocNote), std::string::npos) << r.err;
  std::uint64_t sized = 0, mmaps = 0;
  for (const auto& e : read_artifact_events(dir / "a.art")) {
    sized += e.type == "Calloc" && e.size == 110;
    mmaps += e.type == "Mmap";
  }
  EXPECT_GE(sized, 100'000u);
  EXPECT_LT(sized, 101'000u) << "one event per object, not two";
  // pymalloc's arenas (1 MiB mmaps, at least 11 for these objects) are its own memory, not events.
  EXPECT_LT(mmaps, 5u);
}

// The same script with --python-malloc (PYTHONMALLOC=malloc): the same allocations, as malloc calls. Totals
// agree within 1% (measured: 164 bytes of 24.5 MB, 8 events of 445,000; the difference is the few calls
// the interpreter makes differently when it knows it runs on malloc).
TEST(Python, TotalsAgreeWithPythonMalloc) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult a = record(dir / "a.art", "", "objects.py");
  const RunResult b = record(dir / "b.art", "--python-malloc", "objects.py");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(b.err.find(kMallocNote), std::string::npos) << b.err;
  EXPECT_EQ(b.err.find("pymalloc's allocations are recorded"), std::string::npos) << b.err;
  const RunResult sa = run(memtrack_stats_command((dir / "a.art").string(), "--json"));
  const RunResult sb = run(memtrack_stats_command((dir / "b.art").string(), "--json"));
  ASSERT_EQ(sa.status, 0) << sa.err;
  ASSERT_EQ(sb.status, 0) << sb.err;
  for (const char* key : {"events", "bytes_allocated", "peak_live_bytes", "Malloc", "Calloc", "Free"}) {
    const double x = static_cast<double>(stats_field(sa.out, key)), y = static_cast<double>(stats_field(sb.out, key));
    EXPECT_GT(y, 0) << key;
    EXPECT_NEAR(x / y, 1.0, 0.01) << key << ": " << x << " without --python-malloc, " << y << " with it";
  }
}

// Under the interpreter's debug hooks (PYTHONMALLOC=pymalloc_debug, as -X dev sets them) the domains are
// wrapped again after the interpreter sets them: the objects are still recorded once each, at the size the
// program asked for.
TEST(Python, DebugHooksAreWrappedToo) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = run("PYTHONMALLOC=pymalloc_debug " + memtrack_bin() + " record -o '" + (dir / "d.art").string() +
                          "' -- " + kPython + " " + kScripts + "/objects.py");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(kPymallocNote), std::string::npos) << r.err;
  std::uint64_t sized = 0;
  for (const auto& e : read_artifact_events(dir / "d.art")) sized += e.type == "Calloc" && e.size == 110;
  EXPECT_GE(sized, 100'000u);
  EXPECT_LT(sized, 101'000u);
}

// "LINE A B" lines (sites.py's, or index.py's tracemalloc report) as line -> (A, B).
std::map<int, std::pair<std::uint64_t, std::uint64_t>> per_line(const std::string& text) {
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> out;
  std::istringstream in(text);
  int line = 0;
  std::uint64_t a = 0, b = 0;
  while (in >> line >> a >> b) out[line] = {a, b};
  return out;
}

// memtrack's peak bytes and allocations per line of `script`, by each site's innermost Python frame (of the
// sites by their Python frames alone, top --python: the same sums as of every site, in a far shorter document).
std::map<int, std::pair<std::uint64_t, std::uint64_t>> memtrack_lines(const fs::path& art, const std::string& script) {
  const RunResult r = run(memtrack_bin() + " top '" + art.string() + "' --python --json -n 0 | " + kPython + " " +
                          kScripts + "/sites.py " + kScripts + "/" + script);
  EXPECT_EQ(r.status, 0) << r.err;
  return per_line(r.out);
}

// Issue 28's example: build_index() called from main() is named with its file and line among the native
// frames, innermost first, in top's text and JSON.
TEST_P(PythonFrames, FramesNameTheScriptsFunctionsAndLines) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = record(dir / "i.art", "", "index.py", python_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "100000\n");
  const std::string file = kScripts + "/index.py";
  const RunResult top = run(memtrack_bin() + " top '" + (dir / "i.art").string() + "' -n 3");
  ASSERT_EQ(top.status, 0) << top.err;
  // index.py:16 is Item.__init__'s "key-%d" line, :23 build_index's loop body, :34 main's call.
  EXPECT_NE(top.out.find(shown("Item.__init__") + " ("), std::string::npos) << top.out;
  EXPECT_NE(r.err.find(": python " + python_.version + ": pymalloc's allocations are recorded"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("frames are not shown"), std::string::npos) << r.err;
  const auto build = top.out.find("build_index (");
  const auto main = top.out.find("main (", build == std::string::npos ? 0 : build);
  ASSERT_NE(build, std::string::npos) << top.out;
  ASSERT_NE(main, std::string::npos) << "main below build_index: " << top.out;
  EXPECT_NE(top.out.find("index.py:23) in [python]"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("index.py:34) in [python]"), std::string::npos) << top.out;
  const RunResult json = run(memtrack_bin() + " top '" + (dir / "i.art").string() + "' --json -n 1");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(
      json.out.find("{\"function\":\"build_index\",\"module\":\"[python]\",\"file\":\"" + file + "\",\"line\":23"),
      std::string::npos)
      << json.out;
  // Native frames stay around them: the interpreter's entry below, the allocator's callers above.
  EXPECT_NE(json.out.find("\"function\":\"PyEval_EvalCode\""), std::string::npos) << json.out;
  // By Python frames alone (--python): the first site is the same code path with nothing else, and a line's
  // allocations are one site (the script's 100,000 objects at least, Item.__init__'s line).
  const RunResult py = run(memtrack_bin() + " top '" + (dir / "i.art").string() + "' --python --by count -n 1");
  ASSERT_EQ(py.status, 0) << py.err;
  EXPECT_EQ(py.out.find("PyEval_EvalCode"), std::string::npos) << py.out;
  std::istringstream lines(py.out);
  std::vector<std::string> frames;
  std::uint64_t count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (const auto in = line.find(" allocated "); line.rfind("#1 ", 0) == 0 && in != std::string::npos)
      count = std::strtoull(line.c_str() + line.find(" in ", in) + 4, nullptr, 10);
    if (line.rfind("      ", 0) == 0) frames.push_back(line.substr(6, line.find(" (") - 6));
  }
  EXPECT_EQ(frames, (std::vector<std::string>{shown("Item.__init__"), "build_index", "main", "<module>"})) << py.out;
  EXPECT_GE(count, 100'000u) << py.out;
  // export --python: the flame graph's stacks of Python functions alone, outermost first.
  const RunResult folded =
      run(memtrack_bin() + " export '" + (dir / "i.art").string() + "' --format folded --python --by count");
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_NE(("\n" + folded.out).find("\n<module>;main;build_index;" + shown("Item.__init__") + " "), std::string::npos)
      << folded.out.substr(0, 4000);
  EXPECT_EQ(folded.out.find("PyEval_EvalCode"), std::string::npos) << folded.out.substr(0, 4000);
}

// The same script traced by tracemalloc (the standard library's tracer, in a run of its own, without
// memtrack) reports the live bytes per line once the index is built, which is the peak of the live heap:
// memtrack's peak bytes per line (by the innermost Python frame) agree within 0.1% on every line holding
// at least 1 MB (measured: equal on three lines, 224 bytes apart of 14.4 MB on the fourth).
TEST_P(PythonFrames, PerLineBytesAgreeWithTracemalloc) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult traced = run("env -u PYTHONMALLOC TRACEMALLOC=1 '" + python_.path + "' " + kScripts + "/index.py");
  ASSERT_EQ(traced.status, 0) << traced.err;
  const RunResult r = record(dir / "i.art", "", "index.py", python_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto ours = memtrack_lines(dir / "i.art", "index.py");
  int compared = 0;
  for (const auto& [line, stat] : per_line(traced.out)) {
    if (stat.first < 1'000'000) continue;
    ++compared;
    const auto it = ours.find(line);
    ASSERT_NE(it, ours.end()) << "line " << line << " (" << stat.first << " bytes in tracemalloc) not in memtrack's";
    EXPECT_NEAR(static_cast<double>(it->second.first) / static_cast<double>(stat.first), 1.0, 0.001)
        << "line " << line << ": memtrack " << it->second.first << ", tracemalloc " << stat.first;
  }
  EXPECT_EQ(compared, 4) << traced.out;  // lines 16, 17, 22 (the dict), 23
}

// Threads, a C call and a subprocess: each worker thread's function is found at its line with its
// 20,000 lists, ctypes' malloc of 1,000,003 bytes has call_c's line above the native frames, and the child
// started with subprocess.run([sys.executable, ...]) is recorded with its own Python frames (line 34 runs
// only there).
TEST_P(PythonFrames, ThreadsACCallAndASubprocess) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = record(dir / "t.art", "", "threads.py", python_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "80000\n");
  const auto lines = memtrack_lines(dir / "t.art", "threads.py");
  for (int line : {12, 16, 20, 24, 34}) {
    const auto it = lines.find(line);
    ASSERT_NE(it, lines.end()) << "line " << line;
    EXPECT_GE(it->second.second, 20'000u) << "line " << line;
  }
  const auto c = lines.find(30);
  ASSERT_NE(c, lines.end());
  EXPECT_GE(c->second.first, 1'000'003u);
  // The C call's site ranks 14th by allocated bytes on Debian's python3.
  const RunResult json = run(memtrack_bin() + " top '" + (dir / "t.art").string() + "' --json -n 200 --by allocated");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto ffi = json.out.find("\"function\":\"ffi_call\"");
  const auto caller =
      json.out.find("{\"function\":\"call_c\",\"module\":\"[python]\"", ffi == std::string::npos ? 0 : ffi);
  ASSERT_NE(ffi, std::string::npos) << json.out.substr(0, 4000);
  EXPECT_NE(caller, std::string::npos) << "call_c outside (after) ffi_call in the stack";
}

// The Python frames of one site at a time, innermost first, as "function:line ..." with "*" for each run
// of native frames: sites.py's sibling in the test itself, through python3's json module. The 50 sites of most
// allocations (the script's sites of 30,000 rank first).
std::string python_stacks(const fs::path& art) {
  const std::string code =
      "import json,sys\n"
      "for s in json.load(sys.stdin)['sites']:\n"
      "  out, native = [], False\n"
      "  for f in s['stack']:\n"
      "    if f['module'] == '[python]':\n"
      "      out.append('%s:%s' % (f['function'], f['line'])); native = False\n"
      "    elif not native:\n"
      "      out.append('*'); native = True\n"
      "  print(s['allocations'], ' '.join(out))\n";
  const fs::path py = art.string() + ".stacks.py";
  std::ofstream(py) << code;
  const RunResult r = run(memtrack_bin() + " top '" + art.string() + "' --json -n 50 --by count | " + kPython + " '" +
                          py.string() + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

// A generator shows above the code that resumes it (list(), whose native frames, the interpreter's, are left
// out between two Python frames), a key function called back from C (sorted) above its Python caller, and a
// coroutine under asyncio's event loop (its C extension's frames between them stay).
TEST_P(PythonFrames, GeneratorsCallbacksAndCoroutines) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = record(dir / "g.art", "", "generators.py", python_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "30000 30000\n");
  const std::string stacks = python_stacks(dir / "g.art");
  EXPECT_NE(stacks.find("30000 * produce:5 consume:13 <module>:26 *"), std::string::npos) << stacks;
  EXPECT_NE(stacks.find(" * key_of:9 consume:14 <module>:26 *"), std::string::npos) << stacks;
  // From 3.12 the list comprehension runs in coro_alloc's own frame (PEP 709).
  const std::string coroutine = inlines_comprehensions() ? "30000 * coro_alloc:18 * " + shown("Handle._run") + ":"
                                                         : "30000 * " + shown("coro_alloc.<locals>.<listcomp>") +
                                                               ":18 coro_alloc:18 * " + shown("Handle._run") + ":";
  EXPECT_NE(stacks.find(coroutine), std::string::npos) << stacks;
}

// `memtrack record -- python3 -m pytest` with the few-line plugin of programs/python/pytest_suite/conftest.py
// (a region per test through the control library and ctypes): each test's region holds its own
// allocations. Needs python3-pytest (ci/install-deps.sh).
TEST(Python, PytestWithARegionPerTest) {
  ASSERT_EQ(run(kPython + " -c 'import pytest'").status, 0) << "python3-pytest is not installed (ci/install-deps.sh)";
  const fs::path dir = memtrack::testing::test_dir("python");
  const std::string art = (dir / "p.art").string();
  const RunResult r =
      run("cd " + kScripts + "/pytest_suite && env -u PYTHONMALLOC MEMTRACK_CONTROL_LIB=" MEMTRACK_CONTROL_LIB " " +
          memtrack_bin() + " record -o '" + art + "' -- " + kPython + " -m pytest -q -p no:cacheprovider .");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 passed"), std::string::npos) << r.out;
  const auto allocations = [&](const std::string& test) {
    const RunResult s = run(memtrack_stats_command(art, "--json --region test_small.py::" + test));
    EXPECT_EQ(s.status, 0) << s.err;
    return stats_field(s.out, "Malloc") + stats_field(s.out, "Calloc") + stats_field(s.out, "Realloc");
  };
  EXPECT_GE(allocations("test_strings"), 30'000u);  // one str per element
  EXPECT_GE(allocations("test_lists"), 40'000u);    // a list and its items per element
  EXPECT_LT(allocations("test_nothing_much"), 1'000u);
}

// A fork child (no exec) names the codes it meets after the fork in a Python module of its own (fork.py:11
// runs only there), and those its parent noted before the fork (fork.py:7 in both) through the parent's.
TEST_P(PythonFrames, AForkChildNamesItsOwnCodes) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = record(dir / "f.art", "", "fork.py", python_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  const auto lines = memtrack_lines(dir / "f.art", "fork.py");
  const auto child = lines.find(11), both = lines.find(7);
  ASSERT_NE(child, lines.end());
  ASSERT_NE(both, lines.end());
  EXPECT_GE(child->second.second, 20'000u);
  EXPECT_GE(both->second.second, 20'000u);  // 10,000 lists in each process
}

// Codes freed and new ones made, often at a freed one's address (programs/python/reused_codes.py): each of
// the 300 functions' allocations is named after its own function and file, never another's.
TEST_P(PythonFrames, ACodeMadeWhereAFreedOneWasIsNamedAfterItself) {
  const fs::path dir = memtrack::testing::test_dir("python");
  const RunResult r = record(dir / "c.art", "", "reused_codes.py", python_.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const RunResult top = run(memtrack_bin() + " top '" + (dir / "c.art").string() + "' --by allocated --python -n 0");
  ASSERT_EQ(top.status, 0) << top.err;
  std::size_t named = 0, wrong = 0;
  for (std::size_t at = top.out.find("made_"); at != std::string::npos; at = top.out.find("made_", at + 1)) {
    const unsigned long i = std::strtoul(top.out.c_str() + at + 5, nullptr, 10);
    const auto file = top.out.find("(<made ", at);
    if (file == std::string::npos) continue;
    const unsigned long j = std::strtoul(top.out.c_str() + file + 7, nullptr, 10);
    ++named;
    if (i != j) ++wrong;
  }
  EXPECT_EQ(wrong, 0u) << top.out;
  for (int i = 0; i < 300; ++i) {
    const std::string name = "made_" + std::to_string(i) + " (<made " + std::to_string(i) + ">:2)";
    EXPECT_NE(top.out.find(name), std::string::npos) << name;
  }
  EXPECT_GE(named, 300u);
}

INSTANTIATE_TEST_SUITE_P(Versions, PythonFrames, ::testing::Values("system", "3.10", "3.12", "3.13"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

}  // namespace
