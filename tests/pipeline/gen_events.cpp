// memtrack-gen-events N [SEED]: writes N realistic raw records (tests/common/event_gen.h) to stdout, for
// measuring `memtrack encode` from a pipe (docs/PERFORMANCE.md).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/event_gen.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memtrack-gen-events N [SEED] > events.raw\n");
    return 2;
  }
  const unsigned long long n = std::strtoull(argv[1], nullptr, 10);
  memtrack::testing::EventGenerator gen(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
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
