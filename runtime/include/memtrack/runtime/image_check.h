// Whether an executable can be tracked by the preload library, decided before it runs: used by the preload
// (in the exec and spawn hooks, for the images a tracked process starts) and by the recorder (for the
// command itself). Raw system calls and stack buffers only: the preload calls it from an exec hook, where
// nothing may allocate.
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {

// 0 when the image at `path` (relative to dirfd; AT_FDCWD for the cwd; "" with AT_EMPTY_PATH for dirfd
// itself) can be tracked, or why not:
// - Setuid (Setgid): a set-user-ID (set-group-ID) file whose owner (group) differs from the caller's
//   effective user (group). The kernel then runs it with AT_SECURE, and the dynamic loader ignores
//   LD_PRELOAD paths.
// - Static: an ELF executable without a PT_INTERP program header (statically linked, static-pie too): no
//   dynamic loader runs, so nothing is preloaded.
// Anything that is not a readable 64-bit ELF file (a script, an unreadable execute-only file) gives 0: its
// interpreter is checked when that is exec'd, and an image we cannot inspect is not claimed untracked.
inline int image_untrackable(int dirfd, const char* path, int at_flags = 0) {
  const int fd = static_cast<int>(at_flags & AT_EMPTY_PATH ? syscall(SYS_fcntl, dirfd, F_DUPFD_CLOEXEC, 0)
                                                           : syscall(SYS_openat, dirfd, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return 0;
  int reason = 0;
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if ((st.st_mode & S_ISUID) && st.st_uid != static_cast<uid_t>(syscall(SYS_geteuid))) {
      reason = static_cast<int>(RingUntrackedReason::Setuid);
    } else if ((st.st_mode & S_ISGID) && st.st_gid != static_cast<gid_t>(syscall(SYS_getegid))) {
      reason = static_cast<int>(RingUntrackedReason::Setgid);  // ssh-agent, wall, write
    } else {
      Elf64_Ehdr eh;
      if (syscall(SYS_pread64, fd, &eh, sizeof eh, 0) == static_cast<long>(sizeof eh) &&
          eh.e_ident[EI_MAG0] == ELFMAG0 && eh.e_ident[EI_MAG1] == ELFMAG1 && eh.e_ident[EI_MAG2] == ELFMAG2 &&
          eh.e_ident[EI_MAG3] == ELFMAG3 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
          eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256) {
        // The program headers in one read (executables have about a dozen), in chunks if there are more.
        bool interp = false;
        bool read_all = true;
        Elf64_Phdr ph[32];
        for (unsigned i = 0; i < eh.e_phnum && !interp && read_all; i += 32) {
          const unsigned n = eh.e_phnum - i < 32 ? eh.e_phnum - i : 32;
          const long want = static_cast<long>(n * sizeof(Elf64_Phdr));
          read_all = syscall(SYS_pread64, fd, ph, want, eh.e_phoff + i * sizeof(Elf64_Phdr)) == want;
          for (unsigned j = 0; j < n && read_all; ++j) interp = interp || ph[j].p_type == PT_INTERP;
        }
        if (read_all && !interp && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN))
          reason = static_cast<int>(RingUntrackedReason::Static);
      }
    }
  }
  syscall(SYS_close, fd);
  return reason;
}

// The record's name of a reason (docs/FORMAT.md, Untracked).
inline const char* untracked_reason_name(int reason) {
  switch (reason) {
    case static_cast<int>(RingUntrackedReason::Setuid):
      return "setuid";
    case static_cast<int>(RingUntrackedReason::Setgid):
      return "setgid";
    case static_cast<int>(RingUntrackedReason::Static):
      return "static";
    case static_cast<int>(RingUntrackedReason::LeftRunning):
      return "left-running";
    case static_cast<int>(RingUntrackedReason::NoAccess):
      return "no-access";
    default:
      return "unknown";
  }
}

}  // namespace memtrack::runtime
