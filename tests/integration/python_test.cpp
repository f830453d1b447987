// CPython under `memtrack record` (docs/RUNTIME.md, "Python programs"): Debian's /usr/bin/python3 (3.11,
// libpython linked statically), scripts in programs/python/.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "artifact_events.h"
#include "common/run.h"

namespace {

namespace fs = std::filesystem;
using memtrack::testing::memtrack_bin;
using memtrack::testing::run;
using memtrack::testing::RunResult;
using memtrack::testing_integration::read_artifact_events;

const std::string kPython = MEMTRACK_SYSTEM_PYTHON;
const std::string kScripts = MEMTRACK_INTEGRATION_DIR "/programs/python";

// `memtrack record -o ART [FLAGS] -- python3 SCRIPT` with PYTHONMALLOC unset (the test's own environment
// may set it).
RunResult record(const fs::path& art, const std::string& flags, const std::string& script) {
  return run("env -u PYTHONMALLOC " + memtrack_bin() + " record -o '" + art.string() + "' " + flags + " -- " + kPython +
             " " + kScripts + "/" + script);
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
  const RunResult sa = run(memtrack_bin() + " stats --json '" + (dir / "a.art").string() + "'");
  const RunResult sb = run(memtrack_bin() + " stats --json '" + (dir / "b.art").string() + "'");
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

}  // namespace
