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
      "12 memtrack: b\n7 memtrack: a\n12 memtrack: b\n9 memtrack: b\n\n7 memtrack: a\n12 memtrack: b\n");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].text, "memtrack: b");
  EXPECT_EQ(m[0].pids, (std::vector<std::int32_t>{12, 9}));
  EXPECT_EQ(m[0].count, 4u);
  EXPECT_EQ(m[1].text, "memtrack: a");
  EXPECT_EQ(m[1].pids, (std::vector<std::int32_t>{7}));
  EXPECT_EQ(m[1].count, 2u);
}

TEST(PreloadMessages, LinesWithoutAPidOrCutShortAreKept) {
  const std::vector<PreloadMessage> m = parse_preload_messages("memtrack: no pid\n42 memtrack: cut sh");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].text, "memtrack: no pid");
  EXPECT_TRUE(m[0].pids.empty());
  EXPECT_EQ(m[1].text, "memtrack: cut sh");
  EXPECT_EQ(m[1].pids, (std::vector<std::int32_t>{42}));
}

TEST(PreloadMessages, LinesAppendedThroughThePathAreCollected) {
  PreloadMessages channel;
  EXPECT_TRUE(channel.collect().empty());
  for (const char* line : {"5 memtrack: one\n", "6 memtrack: one\n", "5 memtrack: two\n"}) {
    // As the preload writes: open O_APPEND, one write, close.
    const int fd = ::open(channel.path().c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0) << channel.path();
    ASSERT_EQ(::write(fd, line, std::char_traits<char>::length(line)),
              static_cast<ssize_t>(std::char_traits<char>::length(line)));
    ::close(fd);
  }
  const std::vector<PreloadMessage> m = channel.collect();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].text, "memtrack: one");
  EXPECT_EQ(m[0].pids, (std::vector<std::int32_t>{5, 6}));
  EXPECT_EQ(m[1].text, "memtrack: two");
}

}  // namespace
