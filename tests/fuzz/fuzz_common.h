// Helpers shared by the fuzz targets. A target states its property with FUZZ_CHECK, which aborts with a
// message: libFuzzer saves the input as a crash, and the replay driver (replay_main.cpp) dies under ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/frame_walker.h"
#include "memtrack/codec/msgpack_encoder.h"

// In ASan builds (the libFuzzer binaries, the asan preset) the sanitizer's allocator reports every malloc
// and free to hooks, so a target can measure the peak heap of one call. Other builds skip that check.
#if defined(__SANITIZE_ADDRESS__)
#define MEMTRACK_FUZZ_HEAP_HOOKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMTRACK_FUZZ_HEAP_HOOKS 1
#endif
#endif
#ifdef MEMTRACK_FUZZ_HEAP_HOOKS
#include <atomic>

// Declared here rather than through <sanitizer/allocator_interface.h>, which gcc does not ship; both
// compiler-rt (clang) and libasan/libtsan (gcc) export them.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
extern "C" std::size_t __sanitizer_get_allocated_size(const volatile void* p);
#endif

#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace memtrack::fuzz {

// Takes bytes from the front of the fuzzer's input; past the end it yields zeros, so every input is usable.
class InputReader {
 public:
  InputReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // An integer of 0..8 bytes (the width comes from the input too), so every msgpack width is reached.
  std::uint64_t varint() {
    const unsigned width = byte() % 9;
    std::uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) v = (v << 8) | byte();
    return v;
  }
  [[nodiscard]] bool empty() const { return pos_ >= size_; }
  [[nodiscard]] std::size_t remaining() const { return pos_ < size_ ? size_ - pos_ : 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// The peak of live heap bytes between start() and stop(), counted from the sanitizer's malloc/free hooks
// (allocations of every thread, zstd's included: libzstd allocates with malloc). Memory freed during the
// measurement but allocated before it lowers the count, so the peak is measured relative to start().
class HeapPeak {
 public:
  static constexpr bool kAvailable =
#ifdef MEMTRACK_FUZZ_HEAP_HOOKS
      true;
#else
      false;
#endif

  static void start() {
#ifdef MEMTRACK_FUZZ_HEAP_HOOKS
    static const bool installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
    FUZZ_CHECK(installed, "cannot install the sanitizer's malloc hooks");
    live().store(0);
    peak().store(0);
    active().store(true);
#endif
  }
  // Returns the peak in bytes (0 where hooks are unavailable).
  static std::int64_t stop() {
#ifdef MEMTRACK_FUZZ_HEAP_HOOKS
    active().store(false);
    return peak().load();
#else
    return 0;
#endif
  }

#ifdef MEMTRACK_FUZZ_HEAP_HOOKS
 private:
  static std::atomic<std::int64_t>& live() {
    static std::atomic<std::int64_t> v{0};
    return v;
  }
  static std::atomic<std::int64_t>& peak() {
    static std::atomic<std::int64_t> v{0};
    return v;
  }
  static std::atomic<bool>& active() {
    static std::atomic<bool> v{false};
    return v;
  }
  static void on_malloc(const volatile void*, std::size_t size) {
    if (!active().load(std::memory_order_relaxed)) return;
    const std::int64_t now = live().fetch_add(static_cast<std::int64_t>(size)) + static_cast<std::int64_t>(size);
    std::int64_t old = peak().load();
    while (now > old && !peak().compare_exchange_weak(old, now)) {
    }
  }
  static void on_free(const volatile void* p) {
    if (!active().load(std::memory_order_relaxed) || p == nullptr) return;
    live().fetch_sub(static_cast<std::int64_t>(__sanitizer_get_allocated_size(p)));
  }
#endif
};

// Encodes events as our writer does: frames of `frame_events`, each one zstd frame with content size and
// checksum. An empty input still gives one (empty) frame.
inline std::vector<std::byte> encode_frames(std::span<const codec::Event> events, std::size_t frame_events,
                                            int level = codec::kDefaultLevel) {
  codec::FrameSerializer serializer(frame_events);
  codec::FrameCompressor compressor(level);
  std::vector<std::byte> out, buf(codec::FrameCompressor::bound(serializer.capacity_bytes()));
  std::size_t i = 0;
  do {
    const std::size_t n = std::min(frame_events, events.size() - i);
    codec::Status s;
    const std::size_t size = compressor.compress(serializer.serialize(events.subspan(i, n)), buf, s);
    FUZZ_CHECK(s.is_ok(), "%s", s.message().c_str());
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size));
    i += n;
  } while (i < events.size());
  return out;
}

// What a decode produced. A few KB of input can decompress to hundreds of thousands of events; keeping them
// all would make the harness, not the decoder, the memory hog, so only the first kMaxKeptEvents are kept and
// all of them are folded into a hash.
inline constexpr std::size_t kMaxKeptEvents = 1u << 14;

struct Decoded {
  std::vector<codec::Event> events;              // the first kMaxKeptEvents events
  std::uint64_t count = 0;                       // all events yielded
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a over every event's bytes
  codec::Status status;
  codec::DecoderProgress progress;

  [[nodiscard]] bool complete() const { return count == events.size(); }
  void add(const codec::Event& e) {
    if (events.size() < kMaxKeptEvents) events.push_back(e);
    ++count;
    const auto* p = reinterpret_cast<const unsigned char*>(&e);
    for (std::size_t i = 0; i < sizeof e; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  }
};

inline Decoded decode_all(std::span<const std::byte> bytes, std::size_t block) {
  codec::MemorySource source(bytes);
  codec::ArtifactDecoder decoder(source, "fuzz.zst");
  Decoded d;
  std::vector<codec::Event> buf(block);
  while (std::size_t n = decoder.next(buf)) {
    FUZZ_CHECK(n <= block, "next() returned %zu for a block of %zu", n, block);
    for (std::size_t i = 0; i < n; ++i) d.add(buf[i]);
  }
  d.status = decoder.status();
  d.progress = decoder.progress();
  return d;
}

// The same bytes through codec::FrameWalker directly, its streamed frames in pieces of `piece_events`
// (StreamFrameReader's configuration but for the context frames, which it would also hold and decode).
inline Decoded walk_all(std::span<const std::byte> bytes, std::size_t piece_events) {
  codec::MemorySource source(bytes);
  codec::FrameWalker walker(source, "fuzz.zst", {}, {.hold_context = false, .piece_events = piece_events});
  Decoded d;
  for (;;) {
    const codec::FrameWalker::Item item = walker.next();
    if (item == codec::FrameWalker::Item::end) break;
    if (item != codec::FrameWalker::Item::events) continue;
    for (const codec::Event& e : walker.events()) d.add(e);
  }
  d.status = walker.status();
  d.progress.frames = walker.data_frames();
  d.progress.skippable_frames = walker.skippable_frames();
  d.progress.compressed_bytes = walker.bytes_read();
  d.progress.events = d.count;
  return d;
}

inline std::span<const std::byte> as_bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

}  // namespace memtrack::fuzz
