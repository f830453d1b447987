#include "debuglink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::symbolize {
namespace {

// The CRC-32 .gnu_debuglink stores (zlib's polynomial), of the whole file open at `fd`.
bool file_crc32(int fd, GElf_Word& out) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  unsigned char buffer[64 * 1024];
  off_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    crc = ::crc32(crc, buffer, static_cast<uInt>(n));
    at += n;
  }
  out = static_cast<GElf_Word>(crc);
  return true;
}

}  // namespace

int find_by_debuglink(Dwfl_Module* mod, const char* file_name, const char* debuglink, GElf_Word crc,
                      const std::vector<std::string>& debug_dirs, char** found) {
  errno = 0;
  if (file_name == nullptr) return -1;
  const std::string_view path(file_name);
  const std::size_t slash = path.rfind('/');
  const std::string dir(slash == std::string_view::npos ? "." : path.substr(0, slash));
  const std::string base(slash == std::string_view::npos ? path : path.substr(slash + 1));
  std::string name;
  bool check_crc = crc != 0;
  if (debuglink != nullptr) {
    name = debuglink;
  } else {
    name = base + ".debug";
    check_crc = false;
  }
  if (name.empty()) return -1;

  std::vector<std::string> candidates = {dir + "/" + name, dir + "/.debug/" + name};
  for (const std::string& root : debug_dirs) {
    if (root.empty()) continue;
    candidates.push_back(root + (dir.starts_with('/') ? "" : "/") + dir + "/" + name);
    if (dir.starts_with("/usr/")) candidates.push_back(root + dir.substr(4) + "/" + name);
    candidates.push_back(root + "/" + name);
  }

  struct stat module_stat {};
  const bool module_known = ::stat(file_name, &module_stat) == 0;
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  BuildId module_id;
  if (const int size = dwfl_module_build_id(mod, &bits, &vaddr); size > 0)
    build_id_from_bytes(bits, static_cast<std::size_t>(size), module_id);
  for (const std::string& candidate : candidates) {
    const int fd = ::open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    bool take = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                !(module_known && st.st_dev == module_stat.st_dev && st.st_ino == module_stat.st_ino);
    if (take) {
      BuildId id;
      if (!module_id.empty()) {
        take = read_build_id(candidate, id) && id == module_id;
      } else if (check_crc) {
        GElf_Word file_crc = 0;
        take = file_crc32(fd, file_crc) && file_crc == crc;
      }
    }
    char* copy = take ? ::strdup(candidate.c_str()) : nullptr;
    if (copy == nullptr) {
      ::close(fd);
      continue;
    }
    std::free(*found);
    *found = copy;
    errno = 0;
    return fd;
  }
  errno = 0;
  return -1;
}

}  // namespace memtrack::symbolize
