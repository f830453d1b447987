// memtrack-gen-events N [SEED]: writes the first N events of the realistic workload
// (memtrack/workload/realistic_events.h) to stdout as raw records, for the shell benchmarks that feed
// `memtrack encode` from a pipe (bench/encode_rss.sh).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "memtrack/workload/realistic_events.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memtrack-gen-events N [SEED] > events.raw\n");
    return 2;
  }
  const unsigned long long n = std::strtoull(argv[1], nullptr, 10);
  memtrack::workload::EventGenerator gen(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
  std::vector<memtrack::codec::Event> block(65536);
  for (unsigned long long done = 0; done < n;) {
    const std::size_t count = static_cast<std::size_t>(std::min<unsigned long long>(block.size(), n - done));
    for (std::size_t i = 0; i < count; ++i) block[i] = gen.next();
    const auto* p = reinterpret_cast<const char*>(block.data());
    std::size_t left = count * sizeof(memtrack::codec::Event);
    while (left > 0) {
      const ssize_t w = ::write(1, p, left);
      if (w <= 0) return 1;
      p += w;
      left -= static_cast<std::size_t>(w);
    }
    done += count;
  }
  return 0;
}
