// Encodes 200,000 events through the installed library to a memory sink and checks the result.
#include <cstdio>

#include "memtrack/pipeline/stream_encoder.h"

int main() {
  memtrack::pipeline::MemorySink sink;
  memtrack::pipeline::EncoderOptions options;
  options.workers = 2;
  memtrack::pipeline::StreamEncoder encoder(sink, options);
  for (int i = 0; i < 200000; ++i) {
    const auto kind = i % 2 ? memtrack::codec::EventKind::Free : memtrack::codec::EventKind::Malloc;
    (void)encoder.push(memtrack::codec::make_event(kind, 1, 1, static_cast<unsigned>(i), 4096u * (i / 2), i % 2 ? 0 : 64));
  }
  const auto status = encoder.finish();
  std::printf("status %s, frames %llu, events %llu, bytes %zu\n", status.is_ok() ? "ok" : status.message().c_str(),
              static_cast<unsigned long long>(encoder.stats().frames),
              static_cast<unsigned long long>(encoder.stats().events), sink.bytes().size());
  return status.is_ok() && encoder.stats().frames == 4 && encoder.stats().events == 200000 ? 0 : 1;
}
