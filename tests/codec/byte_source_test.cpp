// InputWindow, the read window codec::FrameWalker (under both sequential artifact readers) walks its source
// through: offsets across reads, a read error that a later read recovers from, and an end of input that
// stays the end.
#include "memtrack/codec/byte_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

namespace memtrack::codec {
namespace {

// Reads at most `step` bytes at a time of 0, 1, 2, ...; fails once with EIO when `fail_at` reads are done.
class StepSource final : public ByteSource {
 public:
  StepSource(std::size_t size, std::size_t step, int fail_at = -1) : size_(size), step_(step), fail_at_(fail_at) {}
  std::ptrdiff_t read(std::span<std::byte> out) override {
    ++reads;
    if (reads - 1 == fail_at_) return -EIO;
    std::size_t n = std::min({out.size(), step_, size_ - pos_});
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(pos_ + i);
    pos_ += n;
    return static_cast<std::ptrdiff_t>(n);
  }
  int reads = 0;

 private:
  std::size_t size_, step_, pos_ = 0;
  int fail_at_;
};

TEST(InputWindow, KeepsUnreadBytesAndTheirOffsetsAcrossReads) {
  StepSource source(100, 30);
  InputWindow w(source, 40);
  EXPECT_EQ(w.fill(), 30);
  w.pos = 25;  // consumed 25 bytes
  EXPECT_EQ(w.offset(), 25u);
  EXPECT_EQ(w.fill(), 30);  // the 5 unread bytes move to the front, 30 more after them
  EXPECT_EQ(w.base, 25u);
  EXPECT_EQ(w.pos, 0u);
  EXPECT_EQ(w.available(), 35u);
  for (std::size_t i = 0; i < w.available(); ++i) EXPECT_EQ(std::to_integer<std::size_t>(w.unread()[i]), 25 + i);
  EXPECT_EQ(w.fill(), 5);  // only the room left in the window
  EXPECT_EQ(w.available(), 40u);
  EXPECT_EQ(w.bytes.size(), 40u);  // never grows
}

TEST(InputWindow, AReadErrorIsReturnedAndALaterReadGoesOn) {
  StepSource source(10, 4, 1);
  InputWindow w(source, 16);
  EXPECT_EQ(w.fill(), 4);
  EXPECT_EQ(w.fill(), -EIO);
  EXPECT_FALSE(w.eof);
  EXPECT_EQ(w.available(), 4u);
  EXPECT_EQ(w.fill(), 4);
  EXPECT_EQ(w.available(), 8u);
  EXPECT_EQ(std::to_integer<int>(w.unread()[7]), 7);
}

TEST(InputWindow, TheEndOfInputStaysTheEnd) {
  StepSource source(3, 8);
  InputWindow w(source);
  EXPECT_EQ(w.bytes.size(), kInputChunk);
  EXPECT_EQ(w.fill(), 3);
  EXPECT_EQ(w.fill(), 0);
  EXPECT_TRUE(w.eof);
  const int reads = source.reads;
  EXPECT_EQ(w.fill(), 0);
  EXPECT_EQ(source.reads, reads);  // no read after the end
  EXPECT_EQ(w.available(), 3u);
}

}  // namespace
}  // namespace memtrack::codec
