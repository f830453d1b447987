// diagnostic() (preload_internal.h): the preload's one line per message, to the recorder's messages channel.
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>

#include "preload_internal.h"

namespace memtrack::preload {

void diagnostic(const char* const* parts, size_t count) {
  char line[1024];
  // "<pid> " for the recorder, which names the processes of each message; stderr gets the rest.
  size_t len = static_cast<size_t>(
      snprintf(line, sizeof line, "%u ", static_cast<unsigned>(syscall(SYS_getpid))));  // does not allocate
  const size_t text = len;
  auto append = [&](const char* s) {
    const size_t n = strnlen(s, sizeof line - 1 - len);
    memcpy(line + len, s, n);
    len += n;
  };
  for (size_t i = 0; i < count; ++i) append(parts[i]);
  line[len++] = '\n';
  if (const char* path = messages_path(); path != nullptr && *path != '\0') {
    const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CLOEXEC));
    if (fd >= 0) {
      const long w = syscall(SYS_write, fd, line, len);
      syscall(SYS_close, fd);
      if (w == static_cast<long>(len)) return;
    }
  }
  struct iovec out[2] = {{const_cast<char*>("memtrack: "), 10}, {line + text, len - text}};
  (void)!syscall(SYS_writev, 2, out, 2);
}

}  // namespace memtrack::preload
