#include "check_limits.h"

#include <strings.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>

#include "json_writer.h"
#include "stats_format.h"
#include "units.h"

namespace memtrack::tools {
namespace {

__extension__ typedef unsigned __int128 u128;  // GCC and Clang: a size times a unit, checked against 2^64

struct Unit {
  const char* name;
  std::uint64_t bytes;
};

constexpr Unit kUnits[] = {
    {"B", 1},
    {"kB", 1000},
    {"MB", 1000 * 1000},
    {"GB", 1000ull * 1000 * 1000},
    {"TB", 1000ull * 1000 * 1000 * 1000},
    {"KiB", 1ull << 10},
    {"MiB", 1ull << 20},
    {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},
};

std::string amount(Measure m, std::uint64_t v) { return measure_info(m).bytes ? human_bytes(v) : std::to_string(v); }

std::string percent(double p) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f%%", p);
  return buf;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text, std::string* shown) {
  std::size_t i = 0;
  u128 whole = 0;
  const std::size_t digits_begin = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
    ++i;
  }
  if (i == digits_begin) return std::nullopt;
  std::string_view fraction;
  if (i < text.size() && text[i] == '.') {
    const std::size_t f = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    fraction = text.substr(f, i - f);
    if (fraction.empty() || fraction.size() > 18) return std::nullopt;
  }
  const std::string_view number = text.substr(0, i);
  if (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit_text = text.substr(i);
  const Unit* unit = &kUnits[0];
  if (!unit_text.empty()) {
    unit = nullptr;
    for (const Unit& u : kUnits)
      if (unit_text.size() == std::strlen(u.name) && strncasecmp(unit_text.data(), u.name, unit_text.size()) == 0)
        unit = &u;
    if (unit == nullptr) return std::nullopt;
  }
  u128 value = whole * unit->bytes;
  if (!fraction.empty()) {
    u128 num = 0, den = 1;
    for (const char c : fraction) num = num * 10 + static_cast<unsigned>(c - '0'), den *= 10;
    value += num * unit->bytes / den;
  }
  if (value > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
  if (shown != nullptr) *shown = std::string(number) + " " + unit->name;
  return static_cast<std::uint64_t>(value);
}

std::uint64_t Measured::of(Measure m) const { return this->*measure_info(m).field; }

const char* option_name(const Limit& l) { return l.growth ? "--max-growth" : measure_info(l.measure).option; }

LimitResult evaluate(const Limit& limit, std::uint64_t value, std::optional<std::uint64_t> base) {
  LimitResult r;
  r.limit = limit;
  r.value = value;
  if (!limit.growth) {
    r.ok = value <= limit.max;
    return r;
  }
  r.base = base;
  const std::uint64_t b = base.value_or(0);
  if (b == 0) {
    r.ok = value == 0;
    if (value == 0) r.growth_percent = 0.0;
    return r;
  }
  const double growth = (static_cast<double>(value) - static_cast<double>(b)) / static_cast<double>(b) * 100.0;
  r.growth_percent = growth;
  r.ok = growth <= limit.max_percent;
  return r;
}

std::string format_broken(const LimitResult& r) {
  const Measure m = r.limit.measure;
  std::string line = r.where.empty() ? std::string() : r.where + ": ";
  if (r.limit.growth) {
    const std::uint64_t b = r.base.value_or(0);
    line += std::string(measure_info(m).label) + " grew " +
            (r.growth_percent ? percent(*r.growth_percent) : std::string("from 0")) + " (" + amount(m, b) + " -> " +
            amount(m, r.value) + ") > --max-growth " + r.limit.shown;
    return line;
  }
  std::string value = amount(m, r.value);
  std::string limit = r.limit.shown;
  // When the rounded figure reads as the limit itself, the bytes say why it is over.
  if (measure_info(m).bytes && human_bytes(r.value) == human_bytes(r.limit.max)) {
    value += " (" + std::to_string(r.value) + " B)";
    limit += " (" + std::to_string(r.limit.max) + " B)";
  }
  return line + measure_info(m).label + " " + value + " > " + option_name(r.limit) + " " + limit;
}

std::string format_check_json(const std::string& file, const std::optional<std::string>& baseline,
                              const std::optional<std::string>& region, const std::vector<LimitResult>& results) {
  const auto opt = [](const std::optional<std::string>& s) { return s ? json_string(*s) : std::string("null"); };
  bool ok = true;
  for (const LimitResult& r : results) ok = ok && r.ok;
  std::string o = "{\"file\":" + json_string(file) + ",\"baseline\":" + opt(baseline) + ",\"region\":" + opt(region) +
                  ",\"ok\":" + (ok ? "true" : "false") + ",\"limits\":[";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const LimitResult& r = results[i];
    char pct[48] = "null";
    if (r.growth_percent) std::snprintf(pct, sizeof pct, "%.2f", *r.growth_percent);
    char max_pct[48];
    std::snprintf(max_pct, sizeof max_pct, "%.6g", r.limit.max_percent);
    o += (i ? "," : "") + std::string("{\"option\":\"") + option_name(r.limit) + "\",\"measure\":\"" +
         measure_info(r.limit.measure).json +
         "\",\"limit\":" + (r.limit.growth ? max_pct : std::to_string(r.limit.max)) +
         ",\"value\":" + std::to_string(r.value) + ",\"base\":" + (r.base ? std::to_string(*r.base) : "null") +
         ",\"growth_percent\":" + pct + ",\"where\":" + (r.where.empty() ? "null" : json_string(r.where)) +
         ",\"ok\":" + (r.ok ? "true" : "false") + "}";
  }
  return o + "]}\n";
}

}  // namespace memtrack::tools
