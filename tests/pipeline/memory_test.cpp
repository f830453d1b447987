// Peak memory of the pipeline is bounded by its K slots plus a constant, whatever the worker count.
//
// This binary replaces the global operator new/delete with counting versions (current and peak bytes in
// use), so every buffer the pipeline allocates through new (events, msgpack and output buffers, its own
// bookkeeping) is measured. zstd allocates its contexts with malloc, outside the count; slot_bytes() covers
// them with zstd's own estimate.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "memtrack/codec/huge_pages.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "memtrack/workload/realistic_events.h"

namespace {

std::atomic<std::size_t> g_current{0};
std::atomic<std::size_t> g_peak{0};

// What a block takes. glibc's usable size of a block aligned to 2 MiB or more (the huge-page buffers,
// memtrack/codec/huge_pages.h, whose sizes are whole multiples of it) also holds the rest of the alignment
// gap glibc mapped around it, less than one alignment and never touched: counted without it.
std::size_t block_bytes(void* p, std::size_t align) {
  const std::size_t usable = malloc_usable_size(p);
  return align >= memtrack::codec::kHugePageBytes ? usable / align * align : usable;
}

void* counted_alloc(std::size_t size, std::size_t align) {
  void* p = align <= alignof(std::max_align_t) ? std::malloc(size == 0 ? 1 : size)
                                               : std::aligned_alloc(align, (size + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  const std::size_t bytes = block_bytes(p, align);
  const std::size_t now = g_current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void counted_free(void* p, std::size_t align = alignof(std::max_align_t)) {
  if (p == nullptr) return;
  g_current.fetch_sub(block_bytes(p, align), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size, alignof(std::max_align_t)); }
void* operator new[](std::size_t size) { return counted_alloc(size, alignof(std::max_align_t)); }
void* operator new(std::size_t size, std::align_val_t align) {
  return counted_alloc(size, static_cast<std::size_t>(align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return counted_alloc(size, static_cast<std::size_t>(align));
}
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t a) noexcept { counted_free(p, static_cast<std::size_t>(a)); }
void operator delete[](void* p, std::align_val_t a) noexcept { counted_free(p, static_cast<std::size_t>(a)); }
void operator delete(void* p, std::size_t, std::align_val_t a) noexcept {
  counted_free(p, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::size_t, std::align_val_t a) noexcept {
  counted_free(p, static_cast<std::size_t>(a));
}

namespace memtrack::pipeline {
namespace {

// A sink that counts bytes and keeps nothing, so the output does not count as pipeline memory.
struct NullSink : Sink {
  std::uint64_t bytes = 0;
  codec::Status write(std::span<const std::byte> b) override {
    bytes += b.size();
    return {};
  }
};

// Peak bytes in use above the baseline while encoding `frames` full frames.
std::size_t peak_while_encoding(const std::vector<codec::Event>& frame, std::size_t frames, EncoderOptions options) {
  NullSink sink;
  const std::size_t baseline = g_current.load();
  g_peak.store(baseline);
  {
    StreamEncoder encoder(sink, options);
    for (std::size_t i = 0; i < frames; ++i) EXPECT_TRUE(encoder.push(frame).is_ok());
    EXPECT_TRUE(encoder.finish().is_ok());
    EXPECT_EQ(encoder.stats().frames, frames);
  }
  return g_peak.load() - baseline;
}

TEST(PipelineMemory, PeakBoundedByInFlightSlotsWhateverTheWorkerCount) {
  EncoderOptions options;
  options.frame_events = 16384;  // a quarter of the default frame keeps the test fast under TSan
  options.max_in_flight = 4;
  const auto frame = workload::EventGenerator(3).take(options.frame_events);
  constexpr std::size_t kFrames = 24;  // enough to cycle every slot several times

  std::size_t peaks[3] = {};
  const unsigned workers[3] = {2, 16, 64};
  for (int i = 0; i < 3; ++i) {
    options.workers = workers[i];
    peaks[i] = peak_while_encoding(frame, kFrames, options);
  }
  const std::size_t bound = options.max_in_flight * slot_bytes(options);
  constexpr std::size_t kConstant = std::size_t{256} << 10;  // bookkeeping: Engine, slots, threads, strings
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("workers " + std::to_string(workers[i]));
    EXPECT_LE(peaks[i], bound + kConstant);
    EXPECT_LE(peaks[i], peaks[0] + kConstant);
    // And the slots really are what dominates: all K were used.
    EXPECT_GE(peaks[i], options.max_in_flight * options.frame_events * sizeof(codec::Event));
  }
  std::printf("peak bytes above baseline: workers 2: %zu, 16: %zu, 64: %zu; K-slot bound %zu\n", peaks[0], peaks[1],
              peaks[2], bound);
}

TEST(PipelineMemory, PeakGrowsWithKNotWithWorkers) {
  EncoderOptions options;
  options.frame_events = 8192;
  options.workers = 8;
  const auto frame = workload::EventGenerator(4).take(options.frame_events);
  options.max_in_flight = 2;
  const std::size_t peak2 = peak_while_encoding(frame, 16, options);
  options.max_in_flight = 6;
  const std::size_t peak6 = peak_while_encoding(frame, 16, options);
  EXPECT_LE(peak2, 2 * slot_bytes(options) + (std::size_t{256} << 10));
  EXPECT_LE(peak6, 6 * slot_bytes(options) + (std::size_t{256} << 10));
  EXPECT_GT(peak6, peak2);
}

// The budget contract: with K derived from memory_budget_bytes, what the pipeline allocates stays within the
// budget (plus bookkeeping), at any worker count.
TEST(PipelineMemory, PeakStaysWithinTheMemoryBudget) {
  EncoderOptions options;
  options.frame_events = 16384;
  options.memory_budget_bytes = 3 * slot_bytes(options) + slot_bytes(options) / 2;  // room for 3.5 slots
  ASSERT_EQ(derive_in_flight_cap(options), 3u);
  const auto frame = workload::EventGenerator(6).take(options.frame_events);
  for (const unsigned workers : {1u, 3u, 32u}) {
    options.workers = workers;
    EXPECT_LE(peak_while_encoding(frame, 12, options), options.memory_budget_bytes + (std::size_t{256} << 10))
        << "workers " << workers;
  }
}

TEST(PipelineMemory, ShortStreamAllocatesOnlyTheSlotsItUses) {
  EncoderOptions options;  // default frame of 65,536 events and the default budget
  options.workers = 4;
  const auto events = workload::EventGenerator(5).take(1000);
  const std::size_t peak = peak_while_encoding(events, 1, options);
  EXPECT_LE(peak, slot_bytes(options) + (std::size_t{256} << 10));
}

}  // namespace
}  // namespace memtrack::pipeline
