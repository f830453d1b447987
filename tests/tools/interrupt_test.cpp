// `memtrack encode` interrupted by SIGINT or SIGTERM while it waits for more input: it finishes the artifact
// with every whole record it read, and exits with 128 + the signal.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/fixtures.h"
#include "common/run.h"

namespace memtrack::testing {
namespace {

struct Interrupted {
  int status = -1;
  std::string artifact;
};

// Feeds `bytes` through a pipe that stays open, waits until memtrack has read all of it, then sends `sig`.
Interrupted interrupt_encode(const std::string& bytes, int sig, const std::string& name) {
  const std::string artifact = scratch_dir() + "/" + name;
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[0], 0);
    ::close(fds[0]);
    ::close(fds[1]);
    const int err = ::open((artifact + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, 2);
    ::execl(memtrack_bin().c_str(), "memtrack", "encode", "--frame-events", "1000", "-o", artifact.c_str(), nullptr);
    ::_exit(127);
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fds[1], bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  // The parent still holds the read end, so it can see when the pipe has been drained by memtrack.
  for (int i = 0; i < 1000; ++i) {
    int pending = -1;
    ::ioctl(fds[0], FIONREAD, &pending);
    if (pending == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it hand the last block to the pipeline
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  Interrupted r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.artifact = artifact;
  return r;
}

TEST(Interrupt, SigintFinishesTheArtifactWithEverythingRead) {
  const std::string raw = slurp(data_path("realistic-140k.raw")).substr(0, 12345 * 48);
  const auto r = interrupt_encode(raw, SIGINT, "int.zst");
  EXPECT_EQ(r.status, 128 + SIGINT);
  const std::string err = slurp(r.artifact + ".err");
  EXPECT_NE(err.find("interrupted by SIGINT after record 12345; the artifact holds every record before it"),
            std::string::npos)
      << err;
  // A complete artifact: every record, and the frame index (decode --frames needs it).
  const auto d = run(memtrack_bin() + " decode " + r.artifact + " --format raw");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.out, raw);
  const auto slice = run(memtrack_bin() + " decode " + r.artifact + " --frames 12:13 --format raw");
  ASSERT_EQ(slice.status, 0) << slice.err;
  EXPECT_EQ(slice.out, raw.substr(12000 * 48));
}

TEST(Interrupt, SigtermDropsOnlyAPartialRecord) {
  const std::string raw = slurp(data_path("realistic-140k.raw")).substr(0, 500 * 48 + 20);
  const auto r = interrupt_encode(raw, SIGTERM, "term.zst");
  EXPECT_EQ(r.status, 128 + SIGTERM);
  const std::string err = slurp(r.artifact + ".err");
  EXPECT_NE(err.find("interrupted by SIGTERM after record 500 (a partial record of 20 bytes was dropped)"),
            std::string::npos)
      << err;
  const auto d = run(memtrack_bin() + " decode " + r.artifact + " --format raw");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.out, raw.substr(0, 500 * 48));
}

}  // namespace
}  // namespace memtrack::testing
