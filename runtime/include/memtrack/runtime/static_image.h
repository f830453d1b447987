// Is an executable statically linked (no PT_INTERP), so that LD_PRELOAD never enters it and nothing it does
// can be recorded? Shared by the recorder (CMD, before it starts) and the preload (an image a tracked process
// executes, checked at exec). Raw system calls and the stack only: the preload may call it anywhere.
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace memtrack::runtime {

inline constexpr const char* kStaticImageReason =
    "statically linked (no PT_INTERP), so LD_PRELOAD never enters it; its allocations are not recorded";

// True only for a readable ELF executable with program headers and none of type PT_INTERP. Scripts, other
// formats and unreadable files are not judged static (the kernel or the interpreter decides what runs).
inline bool is_static_executable(const char* path) {
  const long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh;
  bool is_static = false;
  if (syscall(SYS_pread64, fd, &eh, sizeof eh, 0) == static_cast<long>(sizeof eh) &&
      memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) && eh.e_phnum > 0 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    is_static = true;
    bool has_dynamic = false;
    for (int i = 0; i < eh.e_phnum && is_static; ++i) {
      Elf64_Phdr ph;
      if (syscall(SYS_pread64, fd, &ph, sizeof ph, static_cast<long>(eh.e_phoff + i * sizeof ph)) !=
          static_cast<long>(sizeof ph)) {
        is_static = false;
        break;
      }
      if (ph.p_type == PT_INTERP) is_static = false;
      if (ph.p_type == PT_DYNAMIC) has_dynamic = true;
    }
    // A shared library without PT_INTERP is not an executable anyone runs; static-pie has PT_DYNAMIC and
    // no PT_INTERP, and is static.
    if (is_static && eh.e_type == ET_DYN && !has_dynamic) is_static = false;
  }
  syscall(SYS_close, fd);
  return is_static;
}

}  // namespace memtrack::runtime
