#include "progress.h"

#include <unistd.h>

namespace memtrack::tools {

namespace {
// Don't flash a line for runs that end quickly.
constexpr auto kFirstDraw = std::chrono::milliseconds(500);
constexpr auto kRedraw = std::chrono::milliseconds(200);
}  // namespace

ProgressMeter::ProgressMeter(std::uint64_t total_bytes)
    : enabled_(::isatty(STDERR_FILENO) == 1),
      total_(total_bytes),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void ProgressMeter::update(std::uint64_t bytes, std::uint64_t events) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < kFirstDraw || now - last_ < kRedraw) return;
  last_ = now;
  const double mib = static_cast<double>(bytes) / (1 << 20);
  if (total_ > 0) {
    std::fprintf(stderr, "\r%.0f / %.0f MiB (%3.0f%%), %llu events ", mib, static_cast<double>(total_) / (1 << 20),
                 100.0 * static_cast<double>(bytes) / static_cast<double>(total_),
                 static_cast<unsigned long long>(events));
  } else {
    std::fprintf(stderr, "\r%.0f MiB, %llu events ", mib, static_cast<unsigned long long>(events));
  }
  drawn_ = true;
}

void ProgressMeter::finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);  // erase the line, so error messages start clean
  drawn_ = false;
}

}  // namespace memtrack::tools
