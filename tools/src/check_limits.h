// `memtrack check`'s limits: sizes as people write them, the measures of a recording they bound, and the
// lines and JSON that say which hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtrack::tools {

// "24MB" (10^6), "24MiB" (2^20), "1.5GiB", "512" (bytes); units B, kB, MB, GB, TB, KiB, MiB, GiB, TiB in
// any case, a space allowed before the unit; a fraction is exact and rounded down to a byte. nullopt: not a
// size, or above 2^64-1. `shown`: the size as limit lines print it ("1.5 GiB", "512 B").
std::optional<std::uint64_t> parse_size(std::string_view text, std::string* shown = nullptr);

enum class Measure : std::uint8_t { peak, allocated, allocations, leaked, resident };

// What a recording (or one region occurrence) measured. `resident`: the peak of resident memory (0 for a
// region occurrence, or a recording that did not sample it: cmd_check refuses limits on it there).
struct Measured {
  std::uint64_t peak = 0, allocated = 0, allocations = 0, leaked = 0, resident = 0;
  [[nodiscard]] std::uint64_t of(Measure m) const;
};

// Everything a measure is called and where its value is: the one table the limits, their lines and their
// JSON read (kMeasures[m] describes Measure m).
struct MeasureInfo {
  Measure measure;
  const char* label;   // in limit lines: "peak heap"
  const char* option;  // its absolute limit: "--max-peak"
  const char* json;    // top --json's name: "peak_bytes"
  std::uint64_t Measured::*field;
  bool bytes;  // a size (parsed as one, shown in KiB/MiB), else a count
};
inline constexpr MeasureInfo kMeasures[] = {
    {Measure::peak, "peak heap", "--max-peak", "peak_bytes", &Measured::peak, true},
    {Measure::allocated, "bytes allocated", "--max-allocated", "allocated_bytes", &Measured::allocated, true},
    {Measure::allocations, "allocations", "--max-allocations", "allocations", &Measured::allocations, false},
    {Measure::leaked, "leaked", "--max-leaked", "leaked_bytes", &Measured::leaked, true},
    {Measure::resident, "peak resident", "--max-resident", "peak_resident_bytes", &Measured::resident, true},
};
static_assert(
    [] {
      for (std::size_t i = 0; i < std::size(kMeasures); ++i)
        if (static_cast<std::size_t>(kMeasures[i].measure) != i) return false;
      return true;
    }(),
    "kMeasures lists the measures in Measure's order");
[[nodiscard]] constexpr const MeasureInfo& measure_info(Measure m) { return kMeasures[static_cast<std::size_t>(m)]; }

struct Limit {
  Measure measure = Measure::peak;
  bool growth = false;     // --max-growth: against the baseline, in percent
  std::uint64_t max = 0;   // absolute
  double max_percent = 0;  // growth
  std::string shown;       // "2 MiB", "1000", "10%"
};

struct LimitResult {
  Limit limit;
  std::uint64_t value = 0;
  std::optional<std::uint64_t> base;     // growth: the baseline's value
  std::optional<double> growth_percent;  // growth: none when base is 0 (any growth from 0 breaks the limit)
  std::string where;                     // "region NAME (occurrence 2 of 3)"; empty for the whole recording
  bool ok = true;
};

// Absolute: value <= max. Growth: head <= base * (1 + pct/100) (0 -> 0 holds, 0 -> anything breaks).
LimitResult evaluate(const Limit& limit, std::uint64_t value, std::optional<std::uint64_t> base);

// "peak heap 3.0 MiB > --max-peak 2 MiB"; "peak heap grew 12.5% (2.0 MiB -> 2.3 MiB) > --max-growth 10%";
// prefixed by `where` and ": " when set.
std::string format_broken(const LimitResult& r);

// The limit's option: its measure's (MeasureInfo::option), or "--max-growth".
const char* option_name(const Limit& limit);

std::string format_check_json(const std::string& file, const std::optional<std::string>& baseline,
                              const std::optional<std::string>& region, const std::vector<LimitResult>& results);

}  // namespace memtrack::tools
