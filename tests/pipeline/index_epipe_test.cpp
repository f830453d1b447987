// The frame index (and the last context frame) are written by close() on the caller's thread, after the
// writer thread is gone: a pipe closed after the last data frame must give an EPIPE error there too, never a
// SIGPIPE that kills the process (issue: `encode | head` dying silently).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "memtrack/codec/event.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace memtrack::pipeline {
namespace {

// An FdSink on a pipe whose read end is closed right after the first write (the one data frame).
struct ClosingPipeSink : Sink {
  int fds[2] = {-1, -1};
  std::unique_ptr<FdSink> inner;
  int writes = 0;
  ClosingPipeSink() {
    EXPECT_EQ(::pipe(fds), 0);
    inner = std::make_unique<FdSink>(fds[1], "pipe");
  }
  ~ClosingPipeSink() override {
    if (fds[0] >= 0) ::close(fds[0]);
    ::close(fds[1]);
  }
  codec::Status write(std::span<const std::byte> bytes) override {
    const codec::Status s = inner->write(bytes);
    if (++writes == 1) {
      ::close(fds[0]);
      fds[0] = -1;
    }
    return s;
  }
};

TEST(IndexAfterClosedPipe, IsAnEpipeErrorNotASignal) {
  struct sigaction dfl = {}, old = {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, &old);  // the default action would kill this test
  {
    ClosingPipeSink sink;
    EncoderOptions options;
    options.workers = 1;
    StreamEncoder encoder(sink, options);
    ASSERT_TRUE(encoder.push(codec::make_event(codec::EventKind::Malloc, 1, 1, 1, 0x10, 8)).is_ok());
    const codec::Status s = encoder.finish();
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("frame index"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("Broken pipe"), std::string::npos) << s.message();
    EXPECT_EQ(sink.writes, 2);  // the frame, then the index that failed
  }
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
  sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace
}  // namespace memtrack::pipeline
