// The recorder's setup failures: what failed, then errno's text.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace memtrack::runtime {

[[nodiscard]] inline std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace memtrack::runtime
