// memtrack-gen-events N [SEED]: writes the first N events of the realistic workload
// (memtrack/workload/realistic_events.h) to stdout as raw records, for the shell benchmarks that feed
// `memtrack encode` from a pipe (bench/encode_rss.sh).
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "memtrack/codec/raw_record.h"
#include "memtrack/workload/realistic_events.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memtrack-gen-events N [SEED] > events.raw\n");
    return 2;
  }
  const unsigned long long n = std::strtoull(argv[1], nullptr, 10);
  memtrack::workload::EventGenerator gen(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1);
  constexpr std::size_t kBlockEvents = 65536;
  constexpr std::size_t kRecord = memtrack::codec::kRawRecordSize;
  std::vector<std::byte> block(kBlockEvents * kRecord);
  for (unsigned long long done = 0; done < n;) {
    const std::size_t count = static_cast<std::size_t>(std::min<unsigned long long>(kBlockEvents, n - done));
    for (std::size_t i = 0; i < count; ++i) {
      memtrack::codec::pack_raw_record(gen.next(), std::span<std::byte, kRecord>(block.data() + i * kRecord, kRecord));
    }
    const auto* p = block.data();
    std::size_t left = count * kRecord;
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
