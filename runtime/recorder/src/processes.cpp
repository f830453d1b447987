#include "processes.h"

namespace memtrack::runtime {

void SeenProcesses::add(std::span<const codec::Event> events) {
  for (const codec::Event& e : events) {
    if (any_ && e.pid == last_pid_) [[likely]]
      continue;
    pids_.insert(e.pid);
    last_pid_ = e.pid;
    any_ = true;
  }
}

}  // namespace memtrack::runtime
