#include "preload_messages.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "sys_error.h"

namespace memtrack::runtime {

PreloadMessages::PreloadMessages() {
  fd_ = static_cast<int>(::syscall(SYS_memfd_create, "memtrack-messages", MFD_CLOEXEC));
  if (fd_ < 0) throw sys_error("memfd_create(messages)");
}

PreloadMessages::~PreloadMessages() { ::close(fd_); }

std::string PreloadMessages::path() const {
  return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
}

std::vector<PreloadMessage> PreloadMessages::collect() const {
  // Sized by what was written (usually nothing), at most kMaxBytes.
  struct stat st {};
  const std::size_t size = ::fstat(fd_, &st) == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0;
  std::string bytes(std::min(size, kMaxBytes), '\0');
  std::size_t n = 0;
  while (n < bytes.size()) {
    const ssize_t r = ::pread(fd_, bytes.data() + n, bytes.size() - n, static_cast<off_t>(n));
    if (r <= 0) break;
    n += static_cast<std::size_t>(r);
  }
  bytes.resize(n);
  return parse_preload_messages(bytes);
}

std::vector<PreloadMessage> parse_preload_messages(std::string_view bytes) {
  std::vector<PreloadMessage> out;
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    std::string_view line = bytes.substr(0, nl);
    bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
    std::int32_t pid = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec == std::errc() && end != line.data() + line.size() && *end == ' ')
      line.remove_prefix(static_cast<std::size_t>(end - line.data()) + 1);
    else
      pid = 0;
    if (line.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const PreloadMessage& m) { return m.text == line; });
    if (it == out.end()) it = out.insert(out.end(), PreloadMessage{std::string(line), {}, 0});
    ++it->count;
    if (pid != 0 && std::find(it->pids.begin(), it->pids.end(), pid) == it->pids.end()) it->pids.push_back(pid);
  }
  return out;
}

}  // namespace memtrack::runtime
