// `memtrack check`'s limits: sizes as people write them, the measures of a recording they bound, and the
// lines and JSON that say which hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtrack::tools {

// "24MB" (10^6), "24MiB" (2^20), "1.5GiB", "512" (bytes); units B, kB, MB, GB, TB, KiB, MiB, GiB, TiB in
// any case, a space allowed before the unit; a fraction is exact and rounded down to a byte. nullopt: not a
// size, or above 2^64-1. `shown`: the size as limit lines print it ("1.5 GiB", "512 B").
std::optional<std::uint64_t> parse_size(std::string_view text, std::string* shown = nullptr);

enum class Measure : std::uint8_t { peak, allocated, allocations, leaked };

// What a recording (or one region occurrence) measured.
struct Measured {
  std::uint64_t peak = 0, allocated = 0, allocations = 0, leaked = 0;
  [[nodiscard]] std::uint64_t of(Measure m) const;
};

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

// "--max-peak", ..., "--max-growth".
std::string option_name(const Limit& limit);
// "peak_bytes", "allocated_bytes", "allocations", "leaked_bytes" (top --json's names).
const char* measure_json(Measure m);

std::string format_check_json(const std::string& file, const std::optional<std::string>& baseline,
                              const std::optional<std::string>& region, const std::vector<LimitResult>& results);

}  // namespace memtrack::tools
