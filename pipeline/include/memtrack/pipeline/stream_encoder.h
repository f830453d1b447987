// The streaming encoder: events in, an artifact of independent zstd frames out (docs/FORMAT.md).
//
// Output. Frames of exactly `frame_events` events (the last may be shorter; an empty stream writes one empty
// frame), each serialized to msgpack (or compact columns: EncoderOptions::compact) and compressed as one zstd frame
// with content size and checksum, written strictly in order. The bytes depend only on the events, `level` and
// `frame_events`: they are identical for every worker count and every in-flight cap.
//
// How it runs. An ordered pipeline of K in-flight frames ("slots"):
//
//   producer thread          oneTBB arena (min(workers, K) threads)       writer thread (dedicated)
//   fill a free slot  --->   serialize + compress frame n, in          --> write frame n to the sink, in
//   (push / source.read)     parallel with other slots                     order; its slot is free again
//
// Every buffer (the events, a codec::FrameSerializer's msgpack buffer sized once from kMaxEncodedEventBytes,
// an output buffer sized once from codec::FrameCompressor::bound) and the FrameCompressor's ZSTD_CCtx belong
// to a slot, never to a thread, so memory is bounded by K slots whatever the worker count
// (docs/ARCHITECTURE.md, "Memory follows in-flight frames, not threads"; the CodSpeed encoder kept ~5 MiB
// per worker thread). K comes from a memory budget (derive_in_flight_cap), not from the core count. The
// events, msgpack and output buffers are on huge pages and never value-initialized (codec/huge_pages.h): a
// slot's pages are faulted in as frames fill them, a few 2 MiB faults rather than thousands of 4 KiB ones.
// A frame takes the slot freed last, so a stream that never has K frames alive (a recording whose encoder
// keeps up) faults in only the slots it has alive at once (EncoderStats::slots_used), not K.
//
// Why not tbb::parallel_pipeline: it has exactly this shape (serial_in_order input, parallel encode,
// serial_in_order output, max_number_of_live_tokens = K), but its input and output filters run on pool
// threads, and ours block: the input waits for a producer that may be idle for minutes (the recorder of a
// sleeping program) and the output sits in write(2) on a slow pipe or disk. Either would hold a oneTBB
// worker (docs/ARCHITECTURE.md, "Blocking work never holds a oneTBB worker"). So the two serial stages run on
// threads that may block (the caller's thread and one writer thread), and only the non-blocking encode stage
// runs as tasks in a task_arena. The K slots play the role of the live-token limit: frame n waits for a free
// slot, and one is free once frame n - K has been written.
//
// Index. Unless disabled, finish() appends a seek table after the frames (EncoderOptions::write_seek_table).
//
// Errors. The first failure in frame order (compression of frame n, or the sink's write of frame n) stops
// the encoder: frames before it were written whole and form a valid artifact, nothing after it is written,
// and every later push() and finish() returns that error, which names the frame and what failed. A frame
// the sink failed to write completely is the sink's failure; the encoder writes nothing after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/status.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/pipeline/sink.h"

namespace memtrack::pipeline {

// Default memory budget for the K slots when EncoderOptions::memory_budget_bytes is 0. At 65,536 events a
// slot reserves ~15.6 MiB (see slot_bytes), so the default gives K = 4: enough to keep two to three encoders
// busy while one frame is filled and one written, and it stays under 64 MiB of reservations. Pages of the
// worst-case buffers that are never written are never touched, so resident memory is lower (PERFORMANCE.md).
inline constexpr std::size_t kDefaultMemoryBudgetBytes = std::size_t{64} << 20;
// Derived caps never exceed this: more in-flight frames than encoders plus a few buys nothing.
inline constexpr std::size_t kMaxDerivedInFlight = 32;

// What a per-frame context builder sees: one data frame's events (docs/FORMAT.md, "Context section").
struct FrameContextInput {
  std::uint64_t frame = 0;        // the data frame's number (0-based)
  std::uint64_t first_event = 0;  // global index of its first event
  std::span<const codec::Event> events;
};
// Builds context records from one data frame, in the parallel encode stage: on a pool thread, for several
// frames at once (so it must be thread-safe across frames), never blocking. `out` is empty on entry and is
// the slot's own vector (its capacity is reused). A non-ok status (or an exception) fails the stream as a
// compression error of that frame would. The records go into one context frame written right after data
// frame `frame`, before the ContextChannel's frame.
using FrameContextBuilder =
    std::function<codec::Status(const FrameContextInput&, std::vector<codec::ContextRecord>& out)>;

struct EncoderOptions {
  unsigned workers = 0;                 // 0 = std::thread::hardware_concurrency()
  int level = codec::kDefaultLevel;     // zstd level
  std::size_t frame_events = 65536;     // events per frame, >= 1
  std::size_t memory_budget_bytes = 0;  // 0 = kDefaultMemoryBudgetBytes; the in-flight cap K is derived from it
  std::size_t max_in_flight = 0;        // 0 = derive K from the budget; tests set it explicitly (1 is allowed)
  // After the last data frame, write a frame index: a seek table in the zstd seekable format, in a trailing
  // skippable frame (docs/FORMAT.md, "Frame index"). Plain decoders skip it; `memtrack stats` and
  // `decode --frames` use it. Not written when the stream stops on an error: the artifact is then the frames
  // written before it, still valid, read sequentially.
  bool write_seek_table = true;
  // Context section (version 2, docs/FORMAT.md "Versions and sections"). Null and empty: a version-1
  // artifact, byte for byte what the encoder wrote before context existed. After data frame n is written,
  // the writer thread writes (1) the context frame of frame_context's records for frame n, if any, then
  // (2) context->take_frame(), if records are pending: two separate context frames, so the first can be
  // compressed in parallel with the data and the second holds what arrived up to that moment. At a clean
  // finish the pipeline adds End{events, frames, clean} to `context` (clean = false when encode_stream's
  // source reported an error) and writes the last channel frame before the seek table. Every context frame
  // gets a seek table entry (its whole size, decompressed size 0). The channel must outlive the encoder.
  ContextChannel* context = nullptr;
  FrameContextBuilder frame_context;
  // Data frames hold compact columns (memtrack/codec/compact.h, docs/FORMAT.md "Compact data frames")
  // instead of CodSpeed-compatible msgpack; frame_events is then at most codec::kMaxCompactFrameEvents. A
  // slot then holds a codec::CompactFrameEncoder instead of the FrameSerializer (slot_bytes counts it).
  bool compact = false;
  // With compact: every data frame carries its events' Event::stack (compact version 5's stack section, for
  // the EventStacks record at the frame's first event that readers give back with it), instead of an
  // EventStacks record from frame_context, which is then called for an empty frame only (an empty stream's
  // one frame, whose compact content is empty: its record stays a context record).
  bool compact_stacks = false;
};

struct EncoderStats {
  std::uint64_t events = 0;          // events in frames written to the sink
  std::uint64_t frames = 0;          // frames written to the sink
  std::uint64_t bytes_in = 0;        // content bytes of those frames (msgpack, or compact columns)
  std::uint64_t bytes_out = 0;       // compressed bytes written (data, context and index frames)
  std::uint64_t context_frames = 0;  // context frames written
  std::uint64_t context_bytes = 0;   // their bytes (included in bytes_out)
  std::size_t in_flight_cap = 0;     // K
  std::size_t slots_used = 0;        // slots whose buffers were allocated: the most frames alive at once, <= K
  std::uint64_t encode_cpu_ns = 0;   // CPU time of the encode stage (serialize + compress, the frame context),
                                     // summed over the pool's threads (CLOCK_THREAD_CPUTIME_ID around each frame)
};

// Bytes one slot reserves for `options` (compact: the CompactFrameEncoder's memory_bytes instead of the
// serializer's buffer, and the bounds of compact content): frame_events * (sizeof(Event) + kMaxEncodedEventBytes) +
// kEncoderSlackBytes for the events and the msgpack buffer, plus FrameCompressor::bound of the largest
// msgpack frame for the output buffer, plus FrameCompressor::context_bytes (zstd's estimate of a compression
// context at that level and frame size).
std::size_t slot_bytes(const EncoderOptions& options);

// K, the cap on frames alive at once (being filled, encoded or waiting to be written):
//   options.max_in_flight                                        if non-zero, else
//   clamp(budget / slot_bytes(options), 2, kMaxDerivedInFlight)  with budget = memory_budget_bytes or
//                                                                kDefaultMemoryBudgetBytes.
// At least 2 so filling overlaps encoding; independent of the worker count and of the core count.
std::size_t derive_in_flight_cap(const EncoderOptions& options);

class StreamEncoder {
 public:
  // Throws std::runtime_error on setup failure (frame_events == 0, a zstd level out of range, no thread).
  // Slot buffers are allocated on first use, so a short stream reserves only the slots it fills.
  StreamEncoder(Sink& sink, EncoderOptions options = {});
  // Finishes if finish() was not called (its error is then lost: call finish() to see it).
  ~StreamEncoder();
  StreamEncoder(const StreamEncoder&) = delete;
  StreamEncoder& operator=(const StreamEncoder&) = delete;

  // Single producer: call push(), finish() and stats() from one thread at a time. Copies the events into the
  // current frame and hands each full frame to the pool at once; blocks (backpressure) while K frames are in
  // flight. Never throws. Returns the first sink/compression error, after which nothing more is accepted.
  // Call it from an ordinary thread, not from inside a oneTBB task: a blocked producer would hold that
  // task's worker thread, which the encoder's own arena may need.
  codec::Status push(std::span<const codec::Event> events);
  codec::Status push(const codec::Event& e);

  // Hands over the partial frame (an empty stream still writes one valid empty frame), waits until every
  // frame was written in order, stops the writer thread, and returns the first error. Never hangs on an
  // error: after a failure the remaining frames are dropped, not written. It waits for a sink write in
  // progress, so a sink that blocks forever blocks finish(). Idempotent.
  codec::Status finish();

  // Counts of what reached the sink. Complete after finish(); before it, a snapshot taken by this call.
  const EncoderStats& stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A pull-based source for encode_stream: fills slot buffers directly, without an extra copy.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Fills up to out.size() events (it may return fewer before the end); 0 means end of input or an error.
  virtual std::size_t read(std::span<codec::Event> out) = 0;
  // Checked after read() returned 0: ok at a clean end, otherwise the error (it names what and where).
  virtual codec::Status status() const = 0;
};

// Encodes the whole of `source` to `sink` (the `memtrack encode` path). The calling thread reads from the
// source (it may block there); encoding runs in the pool and writing on a dedicated thread, as above. The
// events read before a source error are encoded and written, then the source error is returned. The first
// sink or compression error stops reading. `stats`, if given, receives the final counts.
codec::Status encode_stream(EventSource& source, Sink& sink, const EncoderOptions& options,
                            EncoderStats* stats = nullptr);

}  // namespace memtrack::pipeline
