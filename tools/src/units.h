// Numbers as people read them in the tools' output.
#pragma once

#include <cstdint>
#include <string>

namespace memtrack::tools {

// "512 B", "1.5 KiB", "38.4 MiB", ... (binary units, one decimal above bytes).
std::string human_bytes(std::uint64_t bytes);

// "1 block", "2 blocks": `n` and the noun, plural (noun + "s") unless n is 1.
std::string counted(std::uint64_t n, const std::string& noun);

}  // namespace memtrack::tools
