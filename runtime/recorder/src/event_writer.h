// The one place where the recorder meets the encoder: events in, artifact bytes out to a file descriptor.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::runtime {

class EventWriter {
 public:
  virtual ~EventWriter() = default;
  // Single producer; may block while the encoder is behind (that is the backpressure the ring relies on).
  virtual codec::Status push(std::span<const codec::Event> events) = 0;
  // Writes everything pushed so far; the artifact is complete afterwards.
  virtual codec::Status finish() = 0;
  [[nodiscard]] virtual std::uint64_t bytes_written() const = 0;
};

std::unique_ptr<EventWriter> make_event_writer(int fd, const std::string& name, unsigned workers, int level);

// Accepts and drops everything: measures the transport without the encoder (MEMTRACK_RECORD_DISCARD=1).
std::unique_ptr<EventWriter> make_discarding_writer();

}  // namespace memtrack::runtime
