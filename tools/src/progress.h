// A one-line progress indicator on stderr for long runs, shown only when stderr is a terminal (never in
// pipes, logs or tests), redrawn at most a few times per second and erased at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace memtrack::tools {

class ProgressMeter {
 public:
  // `total_bytes` 0 when unknown (a pipe).
  explicit ProgressMeter(std::uint64_t total_bytes);
  ~ProgressMeter() { finish(); }
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void update(std::uint64_t bytes, std::uint64_t events);
  void finish();  // erases the line

 private:
  bool enabled_;
  bool drawn_ = false;
  std::uint64_t total_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace memtrack::tools
