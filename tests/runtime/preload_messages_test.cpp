// The preload's diagnostics channel, recorder side (runtime/recorder/src/preload_messages.h): lines appended
// through the memfd's /proc path come back deduplicated, with the pids that wrote them.
#include "preload_messages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

using memtrack::runtime::parse_preload_messages;
using memtrack::runtime::PreloadMessage;
using memtrack::runtime::PreloadMessages;

TEST(PreloadMessages, DeduplicatesInOrderOfFirstLineWithTheirPids) {
  const std::vector<PreloadMessage> m = parse_preload_messages(
      "12 b\n7 a\n12 b\n9 b\n\n7 a\n12 b\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].text, "b");
  EXPECT_EQ(m[0].pids, (std::vector<std::int32_t>{12, 9}));
  EXPECT_EQ(m[0].count, 4u);
  EXPECT_EQ(m[1].text, "a");
  EXPECT_EQ(m[1].pids, (std::vector<std::int32_t>{7}));
  EXPECT_EQ(m[1].count, 2u);
}

TEST(PreloadMessages, LinesWithoutAPidOrCutShortAreKept) {
  const std::vector<PreloadMessage> m = parse_preload_messages("no pid\n42 cut sh");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].text, "no pid");
  EXPECT_TRUE(m[0].pids.empty());
  EXPECT_EQ(m[1].text, "cut sh");
  EXPECT_EQ(m[1].pids, (std::vector<std::int32_t>{42}));
}

TEST(PreloadMessages, LinesAppendedThroughThePathAreCollected) {
  PreloadMessages channel;
  EXPECT_TRUE(channel.collect().empty());
  for (const char* line : {"5 one\n", "6 one\n", "5 two\n"}) {
    // As the preload writes: open O_APPEND, one write, close.
    const int fd = ::open(channel.path().c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0) << channel.path();
    ASSERT_EQ(::write(fd, line, std::char_traits<char>::length(line)),
              static_cast<ssize_t>(std::char_traits<char>::length(line)));
    ::close(fd);
  }
  const std::vector<PreloadMessage> m = channel.collect();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].text, "one");
  EXPECT_EQ(m[0].pids, (std::vector<std::int32_t>{5, 6}));
  EXPECT_EQ(m[1].text, "two");
}

}  // namespace
