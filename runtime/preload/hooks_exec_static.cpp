// A tracked process that executes a statically linked image: LD_PRELOAD never enters the new image, so
// the preload says so before the exec, into the recorder's notes (ring.h, kEnvUntracked), and `record`'s
// summary names the process and the reason. note_exec_image is called with the path about to be executed.
//
// execve is interposed here only until the exec-family hooks of the process-lifecycle work take it over:
// those call note_exec_image(path) first and this file's execve goes away (one definition of execve).
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>

#include <atomic>

#include "memtrack/runtime/ring.h"
#include "memtrack/runtime/static_image.h"
#include "preload_internal.h"

namespace memtrack::preload {

void note_exec_image(const char* path) {
  if (path == nullptr || !runtime::is_static_executable(path)) return;
  const char* notes = getenv(runtime::kEnvUntracked);
  if (notes == nullptr || *notes == '\0') return;
  const long fd = syscall(SYS_openat, AT_FDCWD, notes, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  // One write per note, so notes of concurrent processes never interleave.
  char line[1024];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s != '\0' && n < sizeof line - 1) line[n++] = *s++;
  };
  char digits[16];
  int i = sizeof digits - 1;
  digits[i] = '\0';
  for (long pid = syscall(SYS_getpid); pid != 0 || i == sizeof digits - 1; pid /= 10)
    digits[--i] = static_cast<char>('0' + pid % 10);
  put(digits + i);
  put("\t");
  put(path);
  put("\t");
  put(runtime::kStaticImageReason);
  line[n++] = '\n';
  (void)!syscall(SYS_write, fd, line, n);
  syscall(SYS_close, fd);
}

}  // namespace memtrack::preload

MEMTRACK_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  memtrack::preload::note_exec_image(path);
  // The raw system call: what glibc's execve is, with no lookup that could allocate in a vfork child.
  return static_cast<int>(syscall(SYS_execve, path, argv, envp));
}
