#include "memtrack/pipeline/context_channel.h"

#include <cstdint>
#include <utility>
#include <variant>

namespace memtrack::pipeline {

namespace {

// How far back among the pending records a StackNodes record looks for one of its own process to join, and
// the most nodes a joined record holds (its addresses column, 8 bytes a node, stays a 32nd of a column's
// limit, kMaxContextBinBytes).
constexpr std::size_t kJoinLookBack = 16;
constexpr std::size_t kMaxJoinedNodes = 4096;

}  // namespace

bool ContextChannel::join_stack_nodes(const codec::StackNodes& nodes) {
  // Only across StackNodes records (other processes' trees, independent of this one): any other record
  // (a fork, an exec, a module, a resident sample) keeps its place between the nodes before and after it.
  const std::size_t stop = pending_.size() > kJoinLookBack ? pending_.size() - kJoinLookBack : 0;
  for (std::size_t i = pending_.size(); i > stop; --i) {
    auto* last = std::get_if<codec::StackNodes>(&pending_[i - 1]);
    if (last == nullptr) return false;
    if (last->pid != nodes.pid) continue;
    if (static_cast<std::uint64_t>(last->first_id) + last->parents.size() != nodes.first_id ||
        last->parents.size() + nodes.parents.size() > kMaxJoinedNodes)
      return false;
    last->parents.insert(last->parents.end(), nodes.parents.begin(), nodes.parents.end());
    last->addresses.insert(last->addresses.end(), nodes.addresses.begin(), nodes.addresses.end());
    return true;
  }
  return false;
}

void ContextChannel::add(codec::ContextRecord record) {
  const std::lock_guard lock(mutex_);
  if (auto* nodes = std::get_if<codec::StackNodes>(&record); nodes != nullptr && join_stack_nodes(*nodes)) return;
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
