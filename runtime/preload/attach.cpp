// `memtrack attach`'s half inside the process (docs/RUNTIME.md, "Attaching to a running process"). The
// recorder's tool stops one thread of the process with ptrace, makes it call dlopen() on this library and
// then memtrack_attach_start(); at the end, memtrack_attach_stop(). Loaded with dlopen (RTLD_LOCAL), the
// library interposes nothing: the process's PLT is bound to the C library already. So every allocator entry
// of every loaded image, the C library's malloc family and libstdc++'s operators included, is hooked by entry
// patching (patch/sites.h), whose hooks record through the same ring protocol as under `memtrack record`.
//
// Both calls run on a thread the tool chose at a point where it holds none of the C library's locks
// (outside libc and the loader, or blocked in a system call); the process's other threads run meanwhile.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "patch/patch.h"
#include "patch/sites.h"
#include "ring_client.h"
#include "stacks.h"

namespace memtrack::preload {

namespace {
constinit bool g_attached_once = false;
}

// The constructor's question (hooks.cpp): loaded by dlopen for `memtrack attach`, not preloaded by
// `memtrack record` (which names the ring in the environment and this library in LD_PRELOAD)?
bool loaded_for_attach() {
  // Attached already: a library's constructor allocated before ours (mimalloc's does), and attach() took our
  // variables out of environ.
  if (g_state.load(std::memory_order_acquire) != kUnattached) return false;
  if (getenv(memtrack::runtime::kEnvRing) != nullptr) return false;
  const char* preload = getenv("LD_PRELOAD");
  return preload == nullptr || strstr(preload, "libmemtrack-preload") == nullptr;
}

namespace {

// The ring's fd from the recorder, over the abstract Unix socket `name` ("@..." without the '@'): a process of
// another user cannot open /proc/<recorder>/fd/<n> (the kernel allows it only to processes that may ptrace the
// recorder), but any process may connect to an abstract socket, and the recorder sends the fd only to the
// attached process (it checks the peer's pid). Raw system calls: no allocation. Returns -1 on failure.
int receive_ring_fd(const char* name) {
  const int sock = static_cast<int>(syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (sock < 0) return -1;
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  const size_t len = strlen(name);
  if (len + 1 > sizeof addr.sun_path) {
    syscall(SYS_close, sock);
    return -1;
  }
  memcpy(addr.sun_path + 1, name, len);  // sun_path[0] == 0: the abstract namespace
  int fd = -1;
  if (syscall(SYS_connect, sock, &addr, offsetof(struct sockaddr_un, sun_path) + 1 + len) == 0) {
    char byte = 0;
    struct iovec io = {&byte, 1};
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    struct msghdr msg = {};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (syscall(SYS_recvmsg, sock, &msg, MSG_CMSG_CLOEXEC) == 1) {
      const struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
      if (c != nullptr && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    }
  }
  syscall(SYS_close, sock);
  return fd;
}

}  // namespace

}  // namespace memtrack::preload

using namespace memtrack::preload;  // NOLINT: the functions below are the library's ABI

// What memtrack_attach_start returns besides a count of hooked entries (>= 0). The tool maps these to its
// messages (runtime/recorder/src/attach_inject.h keeps the same numbers).
enum : int {
  kAttachAlreadyRecorded = -1,  // this image records already (under `memtrack record`, or another attach)
  kAttachOnceOnly = -2,         // attached and detached before: one attach per process image
  kAttachNoRing = -3,           // the ring cannot be opened or mapped, or is not the version of this library
  kAttachNoNote = -4,           // the image's note could not be written (the recorder detached the ring)
};

constexpr int kAttachMaxEntries = 256;
// The entries memtrack_attach_start prepared, for the tool to read (/proc/PID/mem) before it calls
// memtrack_attach_commit: [0] the count n, then n pairs (entry address, bytes that change).
extern "C" {
__attribute__((visibility("default"))) constinit uint64_t memtrack_attach_entries[1 + 2 * kAttachMaxEntries] = {};
}

// Maps the ring at `ring` (/proc/<recorder>/fd/<n>, or "@NAME": the fd sent over the abstract socket NAME), notes this
// image (NoteExec, as at exec under record) and hooks the allocators and the exec family. `messages`: the recorder's
// messages channel ("" for none); `preload`: this library's path and `ring_path` the ring's (/proc/<recorder>/fd/<n>),
// for the environments of the images this process execs, which are preloaded as under `memtrack record`.
MEMTRACK_EXPORT int memtrack_attach_start(const char* ring, const char* messages, const char* preload,
                                          const char* ring_path) {
  int expected = kUnattached;
  if (!g_state.compare_exchange_strong(expected, kAttaching, std::memory_order_acq_rel))
    return g_attached_once ? kAttachOnceOnly : kAttachAlreadyRecorded;
  t_busy = true;  // what this call allocates (on_exit's list, pthread_atfork's) is not the program's
  int result = kAttachNoRing;
  set_attached_environment(ring_path, messages, preload);
  const int fd = ring[0] == '@' ? receive_ring_fd(ring + 1)
                                : static_cast<int>(syscall(SYS_openat, AT_FDCWD, ring, O_RDWR | O_CLOEXEC));
  RingHeader probe;
  if (fd >= 0 && syscall(SYS_pread64, fd, &probe, sizeof probe, 0) == static_cast<long>(sizeof probe) &&
      probe.magic == memtrack::runtime::kRingMagic && probe.version == memtrack::runtime::kRingVersion &&
      probe.capacity != 0 && (probe.capacity & (probe.capacity - 1)) == 0) {
    void* map = reinterpret_cast<void*>(syscall(SYS_mmap, nullptr, memtrack::runtime::ring_bytes(probe.capacity),
                                                PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (map != MAP_FAILED) {
      g_ring = static_cast<RingHeader*>(map);
      g_slots = memtrack::runtime::ring_slots(g_ring);
      g_mask = probe.capacity - 1;
      g_owners = memtrack::runtime::ring_owners(g_ring);
      g_owner_mask = 2 * probe.capacity - 1;
      g_timestamp_tsc = probe.timestamp_tsc == 1;
      g_pid = static_cast<int>(syscall(SYS_getpid));
      const uint32_t i = g_ring->exec_count.fetch_add(1, std::memory_order_relaxed);
      g_ring->exec_notices[i % memtrack::runtime::kExecNotices].store(
          memtrack::runtime::exec_notice(g_ring->head.load(std::memory_order_relaxed), g_pid),
          std::memory_order_release);
      result = g_ring->detached.load(std::memory_order_relaxed) == 0 && begin_image() ? 0 : kAttachNoNote;
      if (result == 0) stacks_attach();
    }
  }
  if (fd >= 0) syscall(SYS_close, fd);
  if (result == 0) pthread_atfork(nullptr, nullptr, after_fork_in_child);
  g_attached_once = true;
  g_state.store(result == 0 ? kRecording : kOff, std::memory_order_release);
  t_busy = false;
  if (result != 0) return result;
  // libunwind for the frames without a compact rule: dlopen, which the preload does in its constructor; here
  // on the tool's chosen thread, outside any allocator call (stacks.h, stacks_load_fallback).
  stacks_load_fallback();
  // The entries' jumps wait for memtrack_attach_commit (patch.h, defer_entry_writes says why).
  defer_entry_writes(true);
  const int hooked = patch_images_for_attach();
  defer_entry_writes(false);
  static uintptr_t entries[kAttachMaxEntries];
  static uint8_t lengths[kAttachMaxEntries];
  const int n = deferred_entries(entries, lengths, kAttachMaxEntries);
  for (int i = 0; i < n; ++i) {
    memtrack_attach_entries[1 + 2 * i] = entries[i];
    memtrack_attach_entries[2 + 2 * i] = lengths[i];
  }
  memtrack_attach_entries[0] = static_cast<uint64_t>(n);
  return hooked;
}

// Writes the jumps memtrack_attach_start prepared. The tool calls it with every other thread of the process
// stopped, none of them inside the bytes listed in memtrack_attach_entries. Returns how many it wrote.
MEMTRACK_EXPORT int memtrack_attach_commit() { return commit_deferred_entries(); }

// Stops recording and gives every patched entry its original bytes back. The hooks, islands and the ring
// stay mapped (a thread inside a hook finishes its call through them; see patch.h, restore_entry). Returns
// how many entries were restored, or -1 when this image never recorded. Also called in an image that an
// attached process exec'd, which was preloaded (this library in LD_PRELOAD): it stops recording the same
// way (its interposed functions stay, and pass every call through), and the images it starts from then on
// are not told of the ring (ChildEnv: not recording).
MEMTRACK_EXPORT int memtrack_attach_stop() {
  if (!g_attached_once && g_state.load(std::memory_order_acquire) == kUnattached) return -1;
  g_state.store(kOff, std::memory_order_release);
  return restore_patched_entries();
}
