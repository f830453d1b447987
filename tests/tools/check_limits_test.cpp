// `memtrack check`'s sizes and limits (tools/src/check_limits.h).
#include "check_limits.h"

#include <gtest/gtest.h>

namespace memtrack::tools {
namespace {

TEST(CheckLimits, Sizes) {
  std::string shown;
  EXPECT_EQ(parse_size("24MB", &shown), 24000000u);
  EXPECT_EQ(shown, "24 MB");
  EXPECT_EQ(parse_size("24MiB", &shown), 24u << 20);
  EXPECT_EQ(shown, "24 MiB");
  EXPECT_EQ(parse_size("1.5GiB", &shown), 1610612736u);
  EXPECT_EQ(shown, "1.5 GiB");
  EXPECT_EQ(parse_size("512", &shown), 512u);
  EXPECT_EQ(shown, "512 B");
  EXPECT_EQ(parse_size("2 mib", &shown), 2u << 20);
  EXPECT_EQ(shown, "2 MiB");
  EXPECT_EQ(parse_size("1kb"), 1000u);
  EXPECT_EQ(parse_size("0.1KiB"), 102u);  // rounded down to a byte
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615u);
  EXPECT_FALSE(parse_size("18446744073709551616"));
  EXPECT_FALSE(parse_size("16EiB"));
  EXPECT_FALSE(parse_size("17179869184GiB"));  // 2^64
  for (const char* bad : {"", "MB", "-1", "1.", ".5", "1..5", "12XB", "1 2", "1  MB", "1e6", "0x10"})
    EXPECT_FALSE(parse_size(bad)) << bad;
}

TEST(CheckLimits, EvaluateAndLines) {
  Limit peak;
  peak.measure = Measure::peak;
  peak.max = 2u << 20;
  peak.shown = "2 MiB";
  const LimitResult over = evaluate(peak, 3u << 20, std::nullopt);
  EXPECT_FALSE(over.ok);
  EXPECT_EQ(format_broken(over), "peak heap 3.0 MiB > --max-peak 2 MiB");
  EXPECT_TRUE(evaluate(peak, 2u << 20, std::nullopt).ok);
  Limit growth;
  growth.measure = Measure::allocations;
  growth.growth = true;
  growth.max_percent = 10;
  growth.shown = "10%";
  EXPECT_TRUE(evaluate(growth, 110, 100).ok);
  LimitResult grew = evaluate(growth, 111, 100);
  EXPECT_FALSE(grew.ok);
  grew.where = "region r (occurrence 2 of 3)";
  EXPECT_EQ(format_broken(grew),
            "region r (occurrence 2 of 3): allocations grew 11.0% (100 -> 111) > --max-growth 10%");
  EXPECT_TRUE(evaluate(growth, 0, 0).ok);
  const LimitResult from_zero = evaluate(growth, 1, 0);
  EXPECT_FALSE(from_zero.ok);
  EXPECT_EQ(format_broken(from_zero), "allocations grew from 0 (0 -> 1) > --max-growth 10%");
}

}  // namespace
}  // namespace memtrack::tools
