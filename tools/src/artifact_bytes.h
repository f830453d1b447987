// A whole artifact in memory, for the commands that read it in one pass with its context frames (`top`,
// `stats`' leak sites): a regular file is mapped (read-only, its pages loaded as they are read), anything
// else (stdin, a pipe) is read to its end.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace memtrack::tools {

class ArtifactBytes {
 public:
  // Throws std::runtime_error naming `name` when the file cannot be read.
  ArtifactBytes(int fd, const std::string& name);
  ~ArtifactBytes();
  ArtifactBytes(const ArtifactBytes&) = delete;
  ArtifactBytes& operator=(const ArtifactBytes&) = delete;

  [[nodiscard]] std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;
  std::vector<std::byte> copy_;
};

}  // namespace memtrack::tools
