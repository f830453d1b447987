// The ordered, bounded encode pipeline. Shape and reasons are in the header; this file keeps three rules:
//  - A slot's state changes only under Engine::mutex_. The producer owns a Filling slot, one pool task owns an
//    Encoding slot, the writer owns an Encoded slot; nobody else touches its buffers meanwhile.
//  - Only the encode stage runs in the task arena, and it never blocks or waits on another frame.
//  - Frame n takes a free slot, the one freed last (so an encoder that keeps up faults in one or two slots'
//    buffers, not K), and order_[n % K] names it until it is written. Slots are freed in frame order (the
//    writer is in order), so a slot is free for frame n once frame n - K has been written: the K slots are
//    the in-flight limit, and no two unwritten frames share an order_ entry.
#include "memtrack/pipeline/stream_encoder.h"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memtrack/codec/compact.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/seek_table.h"
#include "stream_encoder_internal.h"

#if defined(__SANITIZE_THREAD__)
// oneTBB (Debian's libtbb, not built with ThreadSanitizer) recycles task objects through its own small-object
// pool, and TSan cannot see the synchronization inside libtbb: it reports the reuse of a finished task's memory
// by the next enqueue as a race, always with the innermost frame in task_arena.h; and libtbb's internal
// bookkeeping shows up through intercepted calls (memcmp, operator delete) made from libtbb itself. Only those
// two are silenced: reports whose innermost frame is in task_arena.h, and interceptors called from libtbb. A
// race in our own code, the encode task's body included, still reports (checked with a deliberate race in
// the test encode hook, stream_encoder_internal.h). Every binary linking the pipeline under TSan gets this
// through the runtime's weak hook.
extern "C" __attribute__((visibility("default"), used)) const char* __tsan_default_suppressions() {
  return "race_top:oneapi/tbb/task_arena.h\n"
         "called_from_lib:libtbb.so\n";
}
#endif

namespace memtrack::pipeline {
namespace {

// Frames larger than this would make a slot reserve gigabytes; nobody needs them.
constexpr std::size_t kMaxFrameEvents = std::size_t{1} << 24;

unsigned resolve_workers(unsigned workers) {
  if (workers != 0) return workers;
  return std::max(1u, std::thread::hardware_concurrency());
}

enum class SlotState { Free, Filling, Encoding, Encoded };

// One in-flight frame and everything needed to encode it. Buffers are sized once, for a full frame, on the
// slot's first use. The serializer's and the output buffers are never value-initialized: a frame writes only
// the front of its worst-case buffers (64.6 of 97 bytes per realistic event; ~20 of 100 after zstd), and
// pages never written are never resident.
struct FrameSlot {
  explicit FrameSlot(int level) : compressor(level) {}

  codec::FrameCompressor compressor;
  // The frame's events and its compressed bytes, on huge pages and not initialized (codec/huge_pages.h): only
  // what a frame fills is touched.
  codec::HugeArray<codec::Event> events;
  std::optional<codec::FrameSerializer> serializer;   // the one codec::FrameSerializer, as benchmarked
  std::optional<codec::CompactFrameEncoder> compact;  // instead of it, for EncoderOptions::compact
  codec::HugeArray<std::byte> compressed;             // its size: FrameCompressor::bound of the largest frame

  std::size_t count = 0;  // events in the frame
  std::uint64_t frame = 0;
  std::size_t msgpack_size = 0;
  std::size_t compressed_size = 0;
  // Per-frame context (EncoderOptions::frame_context): the records and their whole context frame, built in
  // the encode stage and written after the data frame. Reused across the slot's frames.
  std::vector<codec::ContextRecord> context_records;
  std::vector<std::byte> context_scratch, context_frame;
  codec::Status status;  // the encode result, read by the writer
  // Written under Engine::mutex_; atomic so the encode task can take an acquire edge without the lock.
  std::atomic<SlotState> state{SlotState::Free};
};

thread_local internal::EncodeHook t_encode_hook;

}  // namespace

namespace internal {

ScopedEncodeHook::ScopedEncodeHook(EncodeHook hook) : previous_(std::exchange(t_encode_hook, std::move(hook))) {}
ScopedEncodeHook::~ScopedEncodeHook() { t_encode_hook = std::move(previous_); }
const EncodeHook& current_encode_hook() { return t_encode_hook; }

}  // namespace internal

namespace {

// The largest content a frame of `events` events can have, and the compressed buffer a slot allocates for
// it (zstd's bound; a compact frame may be compressed in up to kMaxCompactBlockEnds blocks).
std::size_t content_bound(bool compact, std::size_t events) {
  return compact ? codec::CompactFrameEncoder::output_bound(events) : codec::FrameSerializer::output_bound(events);
}
std::size_t compressed_buffer_bytes(bool compact, std::size_t events) {
  return codec::FrameCompressor::bound(content_bound(compact, events), compact ? codec::kMaxCompactBlockEnds : 0);
}

// The calling thread's CPU time (one system call: per frame, not per event).
std::uint64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

std::size_t slot_bytes(const EncoderOptions& options) {
  const std::size_t events = std::clamp<std::size_t>(options.frame_events, 1, kMaxFrameEvents);
  // The events, content and compressed buffers are on huge pages (codec/huge_pages.h): whole ones.
  const std::size_t encoder = options.compact ? codec::CompactFrameEncoder::memory_bytes(events)
                                              : codec::FrameSerializer::allocated_bytes(events);
  return codec::huge_allocation_bytes(events * sizeof(codec::Event)) + encoder +
         codec::huge_allocation_bytes(compressed_buffer_bytes(options.compact, events)) +
         codec::FrameCompressor::context_bytes(options.level, content_bound(options.compact, events));
}

std::size_t derive_in_flight_cap(const EncoderOptions& options) {
  if (options.max_in_flight != 0) return options.max_in_flight;
  const std::size_t budget = options.memory_budget_bytes != 0 ? options.memory_budget_bytes : kDefaultMemoryBudgetBytes;
  return std::clamp<std::size_t>(budget / slot_bytes(options), 2, kMaxDerivedInFlight);
}

namespace {

// The machinery shared by StreamEncoder (push) and encode_stream (pull). The producer side (acquire, submit,
// cancel, close) is called from one thread at a time.
// Blocks SIGPIPE on the calling thread for its lifetime; a SIGPIPE raised meanwhile (by a write to a closed
// pipe, directed at this thread) is taken off the pending set before the old mask comes back.
class PipeSignalScope {
 public:
  PipeSignalScope() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~PipeSignalScope() {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1 && sigismember(&old_, SIGPIPE) == 0) {
      const timespec now = {0, 0};
      (void)sigtimedwait(&pipe, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  PipeSignalScope(const PipeSignalScope&) = delete;
  PipeSignalScope& operator=(const PipeSignalScope&) = delete;

 private:
  sigset_t old_;
};

class Engine {
 public:
  Engine(Sink& sink, const EncoderOptions& options)
      : sink_(sink),
        frame_events_(options.frame_events),
        k_(derive_in_flight_cap(options)),
        on_encode_(internal::current_encode_hook()),
        write_seek_table_(options.write_seek_table),
        context_(options.context),
        frame_context_(options.frame_context),
        compact_(options.compact),
        compact_stacks_(options.compact && options.compact_stacks) {
    const std::size_t max_events = compact_ ? codec::kMaxCompactFrameEvents : kMaxFrameEvents;
    if (frame_events_ == 0 || frame_events_ > max_events) {
      throw std::runtime_error(std::string(compact_ ? "compact " : "") + "frame_events must be in 1.." +
                               std::to_string(max_events) + ", got " + std::to_string(frame_events_));
    }
    stats_.in_flight_cap = k_;
    // Compressors are created up front (cheap: zstd allocates its workspace on the first frame) so that a bad
    // level is a setup error; the large buffers wait for the slot's first use.
    slots_.reserve(k_);
    for (std::size_t i = 0; i < k_; ++i) slots_.push_back(std::make_unique<FrameSlot>(options.level));
    for (std::size_t i = k_; i-- > 0;) free_.push_back(slots_[i].get());
    order_.assign(k_, nullptr);

    // No more encoders than frames that can be in flight: extra threads would only idle.
    const int concurrency = static_cast<int>(std::min<std::size_t>(resolve_workers(options.workers), k_));
    // The arena's threads are all oneTBB workers (no slot reserved for an external thread: none joins it).
    // oneTBB's pool defaults to hardware_concurrency - 1 workers, which on a 2-core host would leave a
    // 2-worker arena with 1 thread. Raise the process limit only when it is below our need; the smallest
    // active global_control wins, so an application-wide limit still applies.
    const auto limit = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
    if (static_cast<std::size_t>(concurrency) + 1 > limit) {
      parallelism_.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(concurrency) + 1);
    }
    arena_.initialize(concurrency, 0);

    // The writer blocks every signal: the recorder's threads never take a signal meant for the program or
    // the tool (docs/RUNTIME.md, "Processes, exec, threads, signals"), and a write to a closed pipe fails
    // with EPIPE instead of killing the process with SIGPIPE (docs/RELIABILITY.md); the pending
    // thread-directed SIGPIPE is discarded when the thread exits.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      writer_ = std::thread([this] { writer_loop(); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  ~Engine() { (void)close(); }

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  [[nodiscard]] std::size_t frame_events() const { return frame_events_; }
  [[nodiscard]] bool failed() const { return failed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t frames_submitted() const { return next_submit_; }  // producer-owned

  codec::Status error() {
    std::lock_guard lock(mutex_);
    return error_;
  }

  EncoderStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  // Waits for a free slot (backpressure: K frames in flight) and hands it to the producer with count = 0:
  // the one freed last, so a stream that never has K frames in flight touches only the slots it needs (a
  // slot's buffers are faulted in as its first frame fills them). Returns nullptr once the encoder has
  // failed; error() says why.
  FrameSlot* acquire() {
    FrameSlot* taken = nullptr;
    {
      std::unique_lock lock(mutex_);
      producer_cv_.wait(lock, [&] { return failed_.load(std::memory_order_relaxed) || !free_.empty(); });
      if (failed_.load(std::memory_order_relaxed)) return nullptr;
      taken = free_.back();
      free_.pop_back();
      taken->state = SlotState::Filling;
    }
    FrameSlot& slot = *taken;
    slot.count = 0;
    if (slot.events.empty()) {
      try {
        slot.events = codec::HugeArray<codec::Event>(frame_events_);
        if (compact_) {
          slot.compact.emplace(frame_events_);
        } else {
          slot.serializer.emplace(frame_events_);
        }
        slot.compressed = codec::HugeArray<std::byte>(compressed_buffer_bytes(compact_, frame_events_));
        std::lock_guard lock(mutex_);
        ++stats_.slots_used;
      } catch (const std::bad_alloc&) {
        slot.events.reset();
        slot.serializer.reset();
        slot.compact.reset();
        slot.compressed.reset();
        std::lock_guard lock(mutex_);
        slot.state = SlotState::Free;
        free_.push_back(&slot);
        fail_locked({codec::Errc::io, "frame " + std::to_string(next_submit_) + ": out of memory for its buffers"});
        return nullptr;
      }
    }
    return &slot;
  }

  // Hands a filled slot (slot.count events) to the pool as the next frame.
  void submit(FrameSlot& slot) {
    {
      std::lock_guard lock(mutex_);
      slot.frame = next_submit_++;
      order_[slot.frame % k_] = &slot;  // at most k_ frames are unwritten: this overwrites none of theirs
      slot.state.store(SlotState::Encoding, std::memory_order_release);
    }
    arena_.enqueue([this, &slot] { encode(slot); });
  }

  // Gives back an acquired slot without encoding it.
  void cancel(FrameSlot& slot) {
    std::lock_guard lock(mutex_);
    slot.state = SlotState::Free;
    free_.push_back(&slot);
  }

  // Waits until every submitted frame was written (or dropped after an error), stops the writer and returns
  // the first error. Idempotent.
  codec::Status close(bool clean = true) {
    if (writer_.joinable()) {
      {
        std::lock_guard lock(mutex_);
        closing_ = true;
      }
      writer_cv_.notify_one();
      writer_.join();
      // What close() writes itself (the last context frame, the index) gets the writer thread's EPIPE
      // handling: SIGPIPE blocked on this thread, and a SIGPIPE the write raised discarded before unblocking,
      // so a pipe closed after the last frame is an error value, not a dead process.
      const PipeSignalScope no_sigpipe;
      // The last context frame (what arrived after the last data frame, and End) goes before the index.
      if (context_ != nullptr && !failed()) {
        const EncoderStats counts = stats();
        context_->add(codec::StreamEnd{counts.events, counts.frames, clean});
        const codec::Status status = write_channel();
        if (!status.is_ok()) {
          std::lock_guard lock(mutex_);
          fail_locked({status.code(), "context after the last frame: " + status.message()});
        }
      }
      // The writer is gone, so the index is ours; it goes after every frame, and only after a clean stream.
      if (write_seek_table_ && !failed()) {
        const std::vector<std::byte> table = index_.finish();
        codec::Status status;
        try {
          status = sink_.write(table);
        } catch (const std::exception& e) {
          status = {codec::Errc::io, std::string("sink threw: ") + e.what()};
        }
        std::lock_guard lock(mutex_);
        if (status.is_ok()) {
          stats_.bytes_out += table.size();
        } else {
          fail_locked(
              {status.code(), "frame index after frame " + std::to_string(next_write_) + ": " + status.message()});
        }
      }
    }
    return error();
  }

 private:
  void fail_locked(codec::Status status) {
    if (failed_.load(std::memory_order_relaxed)) return;
    error_ = std::move(status);
    failed_.store(true, std::memory_order_relaxed);
    producer_cv_.notify_all();
  }

  // Pool task: serialize and compress one frame into its slot. Never blocks (the hook aside, in tests).
  void encode(FrameSlot& slot) {
    // Pairs with the release in submit(): the producer's writes to the slot happen before this task reads them.
    (void)slot.state.load(std::memory_order_acquire);
    codec::Status status;
    const std::uint64_t cpu_before = thread_cpu_ns();
    // After a failure nothing more is written, so the work would be wasted.
    if (!failed_.load(std::memory_order_relaxed)) {
      if (on_encode_) on_encode_(slot.frame);
      const std::span<const codec::Event> events{slot.events.data(), slot.count};
      const std::span<const std::byte> msgpack = !slot.compact ? slot.serializer->serialize(events)
                                                 : compact_stacks_
                                                     ? slot.compact->encode(events, slot.frame * frame_events_)
                                                     : slot.compact->encode(events);
      slot.msgpack_size = msgpack.size();
      // A compact frame ends a zstd block at each column (compact.h): the same content, fewer bytes.
      const std::span<const std::size_t> block_ends =
          slot.compact ? slot.compact->block_ends() : std::span<const std::size_t>{};
      slot.compressed_size =
          slot.compressor.compress(msgpack, block_ends, {slot.compressed.data(), slot.compressed.size()}, status);
      slot.context_frame.clear();
      // compact_stacks: the frame holds its stacks, but an empty one (compact content is then empty).
      if (status.is_ok() && frame_context_ && !(compact_stacks_ && slot.count != 0)) status = build_frame_context(slot);
    }
    slot.status = std::move(status);
    const std::uint64_t cpu = thread_cpu_ns() - cpu_before;
    // Notify under the lock: once the writer sees Encoded, the engine may be destroyed, and this task must not
    // touch it after unlocking.
    std::lock_guard lock(mutex_);
    stats_.encode_cpu_ns += cpu;
    slot.state = SlotState::Encoded;
    writer_cv_.notify_one();
  }

  // After the data frame: its zstd frame is already compressed, so sharing the slot's compressor does not
  // change the data bytes (every zstd frame is independent).
  codec::Status build_frame_context(FrameSlot& slot) {
    slot.context_records.clear();
    try {
      codec::Status status =
          frame_context_(FrameContextInput{slot.frame, slot.frame * frame_events_, {slot.events.data(), slot.count}},
                         slot.context_records);
      if (!status.is_ok() || slot.context_records.empty()) return status;
      return codec::encode_context_frame(slot.context_records, slot.compressor, slot.context_scratch,
                                         slot.context_frame);
    } catch (const std::exception& e) {
      return {codec::Errc::io, std::string("frame context builder threw: ") + e.what()};
    }
  }

  // Writes one context frame and indexes it (writer thread, or close() after it joined).
  codec::Status write_context(std::span<const std::byte> frame) {
    if (frame.empty()) return {};
    codec::Status status;
    try {
      status = sink_.write(frame);
    } catch (const std::exception& e) {
      status = {codec::Errc::io, std::string("sink threw: ") + e.what()};
    }
    if (!status.is_ok()) return status;
    std::lock_guard lock(mutex_);
    index_.add(static_cast<std::uint32_t>(frame.size()), 0);
    stats_.context_frames += 1;
    stats_.context_bytes += frame.size();
    stats_.bytes_out += frame.size();
    return {};
  }

  // The channel's pending records as one context frame (writer thread, or close() after it joined).
  codec::Status write_channel() {
    if (context_ == nullptr) return {};
    codec::Status status = context_->take_frame(channel_frame_);
    if (!status.is_ok()) return status;
    return write_context(channel_frame_);
  }

  // A throwing sink (a user's subclass) would terminate the process from this thread; make it an error.
  codec::Status write_frame(const FrameSlot& slot) {
    try {
      return sink_.write({slot.compressed.data(), slot.compressed_size});
    } catch (const std::exception& e) {
      return {codec::Errc::io, std::string("sink threw: ") + e.what()};
    }
  }

  void record_written(const FrameSlot& slot) {
    // Frames are at most 2^24 * 97 bytes of msgpack, so both sizes fit the table's u32 fields.
    index_.add(static_cast<std::uint32_t>(slot.compressed_size), static_cast<std::uint32_t>(slot.msgpack_size));
    stats_.events += slot.count;
    stats_.frames += 1;
    stats_.bytes_in += slot.msgpack_size;
    stats_.bytes_out += slot.compressed_size;
  }

  // Dedicated thread: writes frames in order and frees their slots. After a failure it keeps freeing slots
  // (dropping their frames) so that the producer and close() never wait forever.
  void writer_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      writer_cv_.wait(lock, [&] {
        if (next_write_ < next_submit_) return order_[next_write_ % k_]->state == SlotState::Encoded;
        return closing_;
      });
      if (next_write_ == next_submit_) return;  // closing, and everything submitted is retired
      FrameSlot& slot = *order_[next_write_ % k_];
      const bool write = !failed_.load(std::memory_order_relaxed);
      lock.unlock();
      codec::Status status;
      if (write) {
        status = slot.status;
        if (status.is_ok()) status = write_frame(slot);
        if (status.is_ok()) {
          {
            std::lock_guard relock(mutex_);
            record_written(slot);
          }
          status = write_context(slot.context_frame);
          if (status.is_ok()) status = write_channel();
          if (!status.is_ok()) status = {status.code(), "context after " + status.message()};
        }
        if (!status.is_ok()) {
          const std::uint64_t first = slot.frame * frame_events_;
          status = {status.code(), "frame " + std::to_string(slot.frame) +
                                       (slot.count == 0 ? std::string(" (no events)")
                                                        : " (events " + std::to_string(first) + " to " +
                                                              std::to_string(first + slot.count - 1) + ")") +
                                       ": " + status.message()};
        }
      }
      lock.lock();
      if (write && !status.is_ok()) fail_locked(std::move(status));
      slot.state = SlotState::Free;
      free_.push_back(&slot);
      ++next_write_;
      producer_cv_.notify_one();
    }
  }

  Sink& sink_;
  const std::size_t frame_events_;
  const std::size_t k_;
  const internal::EncodeHook on_encode_;  // tests only (stream_encoder_internal.h)
  const bool write_seek_table_;
  ContextChannel* const context_;
  const FrameContextBuilder frame_context_;
  const bool compact_;
  const bool compact_stacks_;
  std::vector<std::byte> channel_frame_;  // writer-owned, then close()'s
  codec::SeekTableBuilder index_;         // written by the writer thread, then by close() after it has joined
  std::vector<std::unique_ptr<FrameSlot>> slots_;
  std::vector<FrameSlot*> free_;   // under mutex_: free slots, the one freed last at the back
  std::vector<FrameSlot*> order_;  // under mutex_: frame f's slot at f % k_ from submit until written

  std::mutex mutex_;
  std::condition_variable producer_cv_;  // a slot became free, or the encoder failed
  std::condition_variable writer_cv_;    // a slot was encoded, or close() was called
  std::uint64_t next_submit_ = 0;        // written by the producer under mutex_
  std::uint64_t next_write_ = 0;         // written by the writer under mutex_
  bool closing_ = false;
  std::atomic<bool> failed_{false};  // set once, with error_, under mutex_
  codec::Status error_;
  EncoderStats stats_;

  std::optional<tbb::global_control> parallelism_;
  tbb::task_arena arena_;
  std::thread writer_;
};

}  // namespace

class StreamEncoder::Impl {
 public:
  Impl(Sink& sink, const EncoderOptions& options) : engine_(sink, options) {}

  codec::Status push(std::span<const codec::Event> events) {
    if (finished_) return after_finish();
    if (engine_.failed()) return engine_.error();
    const std::size_t frame_events = engine_.frame_events();
    while (!events.empty()) {
      if (current_ == nullptr) {
        current_ = engine_.acquire();
        if (current_ == nullptr) return engine_.error();
      }
      const std::size_t n = std::min(events.size(), frame_events - current_->count);
      std::memcpy(current_->events.data() + current_->count, events.data(), n * sizeof(codec::Event));
      current_->count += n;
      events = events.subspan(n);
      // Hand a full frame over at once rather than on the next push: the pool starts on it immediately.
      if (current_->count == frame_events) {
        engine_.submit(*current_);
        current_ = nullptr;
      }
    }
    if (engine_.failed()) return engine_.error();
    return {};
  }

  codec::Status finish() {
    if (finished_) return result_;
    finished_ = true;
    if (!engine_.failed()) {
      // An empty stream still gets one (empty) frame, so the artifact is never a zero-byte file.
      if (current_ == nullptr && engine_.frames_submitted() == 0) current_ = engine_.acquire();
      if (current_ != nullptr) {
        if (current_->count > 0 || engine_.frames_submitted() == 0) {
          engine_.submit(*current_);
        } else {
          engine_.cancel(*current_);
        }
      }
    } else if (current_ != nullptr) {
      engine_.cancel(*current_);
    }
    current_ = nullptr;
    result_ = engine_.close();
    stats_ = engine_.stats();
    return result_;
  }

  const EncoderStats& stats() {
    if (!finished_) stats_ = engine_.stats();
    return stats_;
  }

 private:
  codec::Status after_finish() const {
    if (!result_.is_ok()) return result_;
    return {codec::Errc::usage, "StreamEncoder::push after finish()"};
  }

  Engine engine_;
  FrameSlot* current_ = nullptr;  // the frame being filled, if any
  bool finished_ = false;
  codec::Status result_;
  EncoderStats stats_;
};

StreamEncoder::StreamEncoder(Sink& sink, EncoderOptions options) : impl_(std::make_unique<Impl>(sink, options)) {}

StreamEncoder::~StreamEncoder() {
  if (impl_) (void)impl_->finish();
}

codec::Status StreamEncoder::push(std::span<const codec::Event> events) { return impl_->push(events); }

codec::Status StreamEncoder::push(const codec::Event& e) { return impl_->push(std::span(&e, 1)); }

codec::Status StreamEncoder::finish() { return impl_->finish(); }

const EncoderStats& StreamEncoder::stats() const { return impl_->stats(); }

codec::Status encode_stream(EventSource& source, Sink& sink, const EncoderOptions& options, EncoderStats* stats) {
  Engine engine(sink, options);
  const std::size_t frame_events = engine.frame_events();
  for (;;) {
    FrameSlot* slot = engine.acquire();
    if (slot == nullptr) break;  // failed: the error is the engine's
    // Frames hold exactly frame_events events, so keep reading until the frame is full or the source ends.
    std::size_t n = 0;
    while (n < frame_events) {
      const std::size_t got = source.read(std::span(slot->events.data() + n, frame_events - n));
      if (got == 0) break;
      n += got;
    }
    // An empty stream still gets one (empty) frame; otherwise an empty tail is not a frame.
    if (n == 0 && engine.frames_submitted() > 0) {
      engine.cancel(*slot);
      break;
    }
    slot->count = n;
    engine.submit(*slot);
    if (n < frame_events) break;
  }
  codec::Status status = engine.close(source.status().is_ok());
  if (stats != nullptr) *stats = engine.stats();
  if (status.is_ok()) status = source.status();
  return status;
}

}  // namespace memtrack::pipeline
