// Output faults through the command line: a full disk, a full device, a closed pipe. Each gives one line on
// stderr and exit status 1, and what was written before the fault stays a decodable artifact.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/fixtures.h"
#include "common/run.h"

namespace memtrack::testing {
namespace {

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// RLIMIT_FSIZE stands in for a full disk: once the file reaches the limit, write(2) fails with EFBIG (with
// SIGXFSZ ignored, as the shell's trap leaves it for the exec'd memtrack). It strikes inside a frame.
TEST(OutputFaults, FullDiskLeavesTheWholeFramesBeforeIt) {
  const std::string out = scratch_dir() + "/full.zst";
  const auto r = run("bash -c 'ulimit -f 512; trap \"\" XFSZ; exec " + memtrack_bin() +
                     " encode --frame-events 10000 -i " + data_path("realistic-140k.raw") + " -o " + out + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(out + ": write failed after "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large (the partial frame was removed"), std::string::npos) << r.err;
  // The file is a valid artifact on its own: whole frames, nothing after them (no index: the stream failed).
  const auto d = run(memtrack_bin() + " decode " + out + " --format raw");
  ASSERT_EQ(d.status, 0) << d.err;
  const std::string raw = slurp(data_path("realistic-140k.raw"));
  ASSERT_GE(d.out.size(), 10000u * 48) << "at least one frame fits in 512 KiB";
  EXPECT_EQ(d.out.size() % (10000 * 48), 0u);
  EXPECT_EQ(d.out, raw.substr(0, d.out.size()));
}

TEST(OutputFaults, FullDeviceIsOneLineAndExitOne) {
  const auto e = run(memtrack_bin() + " encode -i " + data_path("events.raw") + " -o /dev/full");
  EXPECT_EQ(e.status, 1);
  EXPECT_EQ(lines(e.err), 1u) << e.err;
  EXPECT_NE(e.err.find("/dev/full: write failed after 0 of "), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("No space left on device"), std::string::npos) << e.err;
  const auto d = run(memtrack_bin() + " decode " + data_path("realistic-140k.frames.zst") + " -o /dev/full");
  EXPECT_EQ(d.status, 1);
  EXPECT_EQ(d.err, "memtrack decode: /dev/full: write failed: No space left on device\n");
}

// Every command's output goes through a checked writer (issue 23): stats and the help and version texts too.
TEST(OutputFaults, EveryCommandsOutputIsChecked) {
  const std::string file = data_path("realistic-140k.frames.zst");
  struct Case {
    std::string command, err;
  } cases[] = {
      {" stats " + file + " > /dev/full", "memtrack stats: stdout: write failed: No space left on device\n"},
      {" stats --json " + file + " >&-", "memtrack stats: stdout: write failed: Bad file descriptor\n"},
      {" stats --help > /dev/full", "memtrack stats: stdout: write failed: No space left on device\n"},
      {" decode --help > /dev/full", "memtrack decode: stdout: write failed: No space left on device\n"},
      {" --help > /dev/full", "memtrack: stdout: write failed: No space left on device\n"},
      {" --version >&-", "memtrack: stdout: write failed: Bad file descriptor\n"},
  };
  for (const Case& c : cases) {
    const auto r = run(memtrack_bin() + c.command);
    EXPECT_EQ(r.status, 1) << c.command;
    EXPECT_EQ(r.err, c.err) << c.command;
  }
}

TEST(OutputFaults, ClosedPipeIsAnErrorNotASilentDeath) {
  // head exits after 100 bytes; encode's writer gets EPIPE (its threads block SIGPIPE) and reports it.
  const std::string script = scratch_dir() + "/closed_pipe.sh";
  {
    std::ofstream(script) << memtrack_bin() << " encode --frame-events 1000 -i " << data_path("realistic-140k.raw")
                          << " | head -c 100 > /dev/null\necho \"status ${PIPESTATUS[0]}\"\n";
  }
  const auto r = run("bash " + script);
  EXPECT_NE(r.out.find("status 1"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("stdout: write failed after"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Broken pipe"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace memtrack::testing
