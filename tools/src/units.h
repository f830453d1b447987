// Numbers as people read them in the tools' output.
#pragma once

#include <cstdint>
#include <string>

namespace memtrack::tools {

// "512 B", "1.5 KiB", "38.4 MiB", ... (binary units, one decimal above bytes).
std::string human_bytes(std::uint64_t bytes);

// Nanoseconds as seconds with six decimals ("0.012345 s"): the stats table's durations.
std::string seconds(std::uint64_t ns);
// Milliseconds below a second (a short test program's whole run is a few), seconds above: "12.345 ms",
// "3.210 s" (the report's summary).
std::string short_duration(std::uint64_t ns);

// "1 block", "2 blocks": `n` and the noun, plural (noun + "s") unless n is 1.
std::string counted(std::uint64_t n, const std::string& noun);

}  // namespace memtrack::tools
