#include "memtrack/pipeline/context_channel.h"

#include <utility>

namespace memtrack::pipeline {

void ContextChannel::add(codec::ContextRecord record) {
  const std::lock_guard lock(mutex_);
  pending_.push_back(std::move(record));
}

codec::Status ContextChannel::take_frame(std::vector<std::byte>& frame) {
  frame.clear();
  taking_.clear();
  {
    const std::lock_guard lock(mutex_);
    std::swap(taking_, pending_);
  }
  if (taking_.empty()) return {};
  codec::Status status = codec::encode_context_frame(taking_, compressor_, scratch_, frame);
  if (!status) frame.clear();
  return status;
}

std::size_t ContextChannel::pending() const {
  const std::lock_guard lock(mutex_);
  return pending_.size();
}

}  // namespace memtrack::pipeline
