// Temporary single-threaded writer (codec's FrameSerializer + FrameCompressor) until the pipeline's
// StreamEncoder is merged; same artifact bytes: one frame per 65,536 events.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "event_writer.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace memtrack::runtime {
namespace {

constexpr std::size_t kFrameEvents = 65536;

class SerialWriter final : public EventWriter {
 public:
  SerialWriter(int fd, std::string name, int level)
      : fd_(fd),
        name_(std::move(name)),
        serializer_(kFrameEvents),
        compressor_(level),
        compressed_(codec::FrameCompressor::bound(serializer_.capacity_bytes())) {
    pending_.reserve(kFrameEvents);
  }

  codec::Status push(std::span<const codec::Event> events) override {
    for (const codec::Event& e : events) {
      pending_.push_back(e);
      if (pending_.size() == kFrameEvents) {
        if (auto s = flush(); !s.is_ok()) return s;
      }
    }
    return {};
  }

  codec::Status finish() override {
    if (finished_) return {};
    finished_ = true;
    if (!pending_.empty() || frames_ == 0) return flush();
    return {};
  }

  std::uint64_t bytes_written() const override { return bytes_; }

 private:
  codec::Status flush() {
    codec::Status status;
    const auto msgpack = serializer_.serialize(pending_);
    const std::size_t size = compressor_.compress(msgpack, compressed_, status);
    pending_.clear();
    if (!status.is_ok()) return status;
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, compressed_.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return {codec::Errc::io, name_ + ": write failed: " + std::strerror(errno)};
      done += static_cast<std::size_t>(n);
    }
    bytes_ += size;
    ++frames_;
    return {};
  }

  int fd_;
  std::string name_;
  codec::FrameSerializer serializer_;
  codec::FrameCompressor compressor_;
  std::vector<std::byte> compressed_;
  std::vector<codec::Event> pending_;
  std::uint64_t bytes_ = 0;
  std::uint64_t frames_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<EventWriter> make_event_writer(int fd, const std::string& name, unsigned /*workers*/, int level) {
  return std::make_unique<SerialWriter>(fd, name, level);
}

}  // namespace memtrack::runtime
