#include "memtrack/runtime/recorder_control.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "control_notes.h"
#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {
namespace {

// The recorder's ring is the memfd named "memtrack-ring" (shared_ring.cpp) among its descriptors.
int open_ring(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    throw std::runtime_error(dir + ": " + std::strerror(errno) + " (is " + std::to_string(pid) +
                             " a running 'memtrack record' of this user?)");
  int fd = -1;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string link = dir + "/" + e->d_name;
    char target[256];
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strncmp(target, "/memfd:memtrack-ring", 20) != 0) continue;
    fd = ::open(link.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      ::closedir(d);
      throw std::runtime_error(link + ": " + std::strerror(err));
    }
    break;
  }
  ::closedir(d);
  if (fd < 0)
    throw std::runtime_error("process " + std::to_string(pid) +
                             " is not a 'memtrack record' (no ring among its descriptors)");
  return fd;
}

// Takes one off the count of regions ctl has open; false when none is open (two ctl racing: one wins).
bool take_outside_region(RingHeader* ring) {
  std::uint32_t open = ring->outside_regions.load(std::memory_order_relaxed);
  while (open != 0)
    if (ring->outside_regions.compare_exchange_weak(open, open - 1, std::memory_order_relaxed)) return true;
  return false;
}

}  // namespace

bool control_recorder(int recorder_pid, ControlCommand command, const std::string& name) {
  const int fd = open_ring(recorder_pid);
  RingHeader probe;
  if (::pread(fd, &probe, sizeof probe, 0) != static_cast<ssize_t>(sizeof probe) || probe.magic != kRingMagic ||
      probe.version != kRingVersion || probe.capacity == 0 || (probe.capacity & (probe.capacity - 1)) != 0) {
    ::close(fd);
    throw std::runtime_error("process " + std::to_string(recorder_pid) +
                             ": its ring is of another memtrack version (ring version " +
                             std::to_string(probe.version) + ", this one speaks " + std::to_string(kRingVersion) + ")");
  }
  const std::size_t bytes = ring_bytes(probe.capacity);
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw std::runtime_error(std::string("mmap of the recorder's ring: ") + std::strerror(errno));
  auto* ring = static_cast<RingHeader*>(map);
  if (ring->detached.load(std::memory_order_relaxed) != 0) {
    ::munmap(map, bytes);
    throw std::runtime_error("process " + std::to_string(recorder_pid) + ": the recording has ended");
  }
  bool changed = false;
  switch (command) {
    case ControlCommand::pause:
    case ControlCommand::resume:
      changed = toggle_recording(ring, command == ControlCommand::pause, recorder_pid, "ctl");
      break;
    case ControlCommand::region_begin:
      changed = note_region(ring, true, recorder_pid, name);
      if (changed) ring->outside_regions.fetch_add(1, std::memory_order_relaxed);
      break;
    case ControlCommand::region_end:
      changed = take_outside_region(ring) && note_region(ring, false, recorder_pid, {});
      break;
    case ControlCommand::mark:
      // The first mark has nothing to close: it only begins.
      if (take_outside_region(ring) && !note_region(ring, false, recorder_pid, {})) break;
      changed = note_region(ring, true, recorder_pid, name);
      if (changed) ring->outside_regions.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  ::munmap(map, bytes);
  return changed;
}

}  // namespace memtrack::runtime
