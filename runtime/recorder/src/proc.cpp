#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include "memtrack/runtime/recorder.h"

namespace memtrack::runtime {

ProcStat proc_stat(int id) {
  ProcStat st;
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", id);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    st.exists = errno != ENOENT && errno != ESRCH;
    return st;
  }
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  const int read_errno = errno;
  ::close(fd);
  if (n <= 0) {
    st.exists = n < 0 && read_errno != ESRCH;  // an empty read or ESRCH: the process went away meanwhile
    return st;
  }
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');  // the command name may contain spaces and parentheses
  int pgrp = 0;
  st.exists = true;
  if (paren == nullptr || std::sscanf(paren + 1, " %c %d %d %d", &st.state, &st.ppid, &pgrp, &st.session) != 4)
    st.state = '?';
  return st;
}

std::string executable_of(int pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/exe", pid);
  char buf[4096];
  const ssize_t n = ::readlink(path, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::set<int> children_of_us() {
  std::set<int> out;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* t = ::readdir(d)) {
      if (t->d_name[0] == '.') continue;
      std::ifstream in(std::string("/proc/self/task/") + t->d_name + "/children");
      int pid = 0;
      while (in >> pid) out.insert(pid);
    }
    ::closedir(d);
  }
  return out;
}

namespace {

// A whole small /proc file at offset 0 into `buf`, NUL-terminated; its length, or 0.
std::size_t pread_all(int fd, char* buf, std::size_t size) {
  const ssize_t n = ::pread(fd, buf, size - 1, 0);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return static_cast<std::size_t>(n);
}

// "Key:   123 kB" in a status text: the value in bytes, or false when the key is missing.
bool status_kb(const char* text, const char* key, std::uint64_t& bytes) {
  const char* at = std::strstr(text, key);
  if (at == nullptr) return false;
  bytes = std::strtoull(at + std::strlen(key), nullptr, 10) * 1024;
  return true;
}

}  // namespace

bool read_statm(int fd, Statm& out) {
  char buf[128];
  if (pread_all(fd, buf, sizeof buf) == 0) return false;
  unsigned long long size = 0, resident = 0, shared = 0;
  if (std::sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 || size == 0) return false;
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  out.resident = resident * page;
  out.shared = shared * page;
  return true;
}

bool read_status_memory(int fd, StatusMemory& out) {
  char buf[4096];
  if (pread_all(fd, buf, sizeof buf) == 0) return false;
  return status_kb(buf, "\nRssAnon:", out.anon) && status_kb(buf, "\nRssFile:", out.file) &&
         status_kb(buf, "\nRssShmem:", out.shmem) && status_kb(buf, "\nVmSwap:", out.swap) &&
         status_kb(buf, "\nVmHWM:", out.hwm);
}

namespace {

// Linux 6.7's PAGEMAP_SCAN (include/uapi/linux/fs.h), spelled out for older headers (Debian 12's are 6.1).
struct PageRegion {
  std::uint64_t start, end, categories;
};
struct PmScanArg {
  std::uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr std::uint64_t kPageIsFile = 1u << 2, kPageIsPresent = 1u << 3;

// False until a PAGEMAP_SCAN fails as unknown (ENOTTY, EINVAL: a kernel before 6.7); then entries only.
std::atomic<bool> g_no_pagemap_scan{false};

// The present pages of [lo, hi) by PAGEMAP_SCAN into `out`; false if the kernel has no such ioctl (nothing added).
bool scan_present(int pagemap, std::uint64_t lo, std::uint64_t hi, MappingResident& out) {
  PageRegion regions[256];
  MappingResident found;
  for (std::uint64_t at = lo; at < hi;) {
    PmScanArg arg{};
    arg.size = sizeof arg;
    arg.start = at;
    arg.end = hi;
    arg.vec = reinterpret_cast<std::uint64_t>(regions);
    arg.vec_len = std::size(regions);
    arg.category_mask = kPageIsPresent;
    arg.return_mask = kPageIsPresent | kPageIsFile;
    const int n = ::ioctl(pagemap, kPagemapScan, &arg);
    if (n < 0) {
      if (errno != ENOTTY && errno != EINVAL) break;  // the mapping or the process went away: what was found
      g_no_pagemap_scan.store(true, std::memory_order_relaxed);
      return false;
    }
    for (int i = 0; i < n; ++i)
      ((regions[i].categories & kPageIsFile) != 0 ? found.shared : found.anon) += regions[i].end - regions[i].start;
    if (arg.walk_end <= at) break;
    at = arg.walk_end;
  }
  out.anon += found.anon;
  out.shared += found.shared;
  return true;
}

}  // namespace

MappingResident resident_bytes_of_mapping(int pid, const char* name, const char* skip_shared,
                                          std::vector<std::uint64_t>& scratch, PagemapRead how) {
  MappingResident out;
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE* maps = std::fopen(path, "re");
  if (maps == nullptr) return out;
  std::snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
  const int pagemap = ::open(path, O_RDONLY | O_CLOEXEC);
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kEntries = 8192;  // 64 KiB of entries per pread, as read_anon_pages
  char line[512];
  while (pagemap >= 0 && std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::strstr(line, name) == nullptr) continue;
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3) continue;
    if (skip_shared != nullptr && perms[3] == 's' && std::strstr(line, skip_shared) != nullptr) continue;
    if (how == PagemapRead::scan && !g_no_pagemap_scan.load(std::memory_order_relaxed) &&
        scan_present(pagemap, lo, hi, out))
      continue;
    scratch.resize(kEntries);
    for (std::uint64_t p = lo; p < hi;) {
      const std::uint64_t n = std::min<std::uint64_t>((hi - p) / page, kEntries);
      const ssize_t got = ::pread(pagemap, scratch.data(), n * 8, static_cast<off_t>(p / page * 8));
      if (got <= 0) break;
      for (ssize_t i = 0; i < got / 8; ++i) {  // bit 63: present, bit 61: a file page or shared anonymous
        const std::uint64_t present = (scratch[i] >> 63) * page;
        ((scratch[i] >> 61) & 1 ? out.shared : out.anon) += present;
      }
      p += static_cast<std::uint64_t>(got / 8) * page;
    }
  }
  if (pagemap >= 0) ::close(pagemap);
  std::fclose(maps);
  return out;
}

bool read_anon_pages(int pid, codec::ResidentPages& out, std::vector<std::uint64_t>& scratch) {
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE* maps = std::fopen(path, "re");
  if (maps == nullptr) return false;
  std::snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
  const int pagemap = ::open(path, O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) {
    std::fclose(maps);
    return false;
  }
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kEntries = 8192;  // 64 KiB of entries per pread: 32 reads per GiB mapped
  scratch.resize(kEntries);
  out.page_size = static_cast<std::uint32_t>(page);
  out.part = 0;
  out.starts.clear();
  out.pages.clear();
  out.present.clear();
  bool ok = true;
  char line[512];
  while (ok && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long long lo = 0, hi = 0, offset = 0, inode = 0;
    char perms[8] = {};
    unsigned dev_major = 0, dev_minor = 0;
    int name_at = 0;
    if (std::sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &offset, &dev_major, &dev_minor, &inode,
                    &name_at) < 7)
      continue;
    const std::string_view name(line + name_at, std::strcspn(line + name_at, "\n"));
    const bool anonymous = inode == 0 && (name.empty() || name == "[heap]" || name.starts_with("[anon:"));
    if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p' || !anonymous || hi <= lo) continue;
    const std::uint64_t n = (hi - lo) / page;
    out.starts.push_back(lo);
    out.pages.push_back(n);
    const std::size_t first = out.present.size();
    out.present.resize(first + codec::resident_bitmap_bytes(n), 0);
    for (std::uint64_t done = 0; done < n;) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, kEntries));
      const ssize_t got = ::pread(pagemap, scratch.data(), want * 8, static_cast<off_t>((lo / page + done) * 8));
      if (got <= 0) {  // the mapping went away meanwhile (its pages stay absent), or the process did
        ok = got == 0 || errno == EINVAL || errno == ENOMEM;
        break;
      }
      const auto entries = static_cast<std::uint64_t>(got) / 8;
      for (std::uint64_t i = 0; i < entries; ++i)
        if ((scratch[i] >> 63) != 0) {
          const std::uint64_t bit = done + i;
          out.present[first + bit / 8] |= static_cast<std::uint8_t>(1u << (bit % 8));
        }
      done += entries;
    }
  }
  ::close(pagemap);
  std::fclose(maps);
  return ok;
}

std::string find_command(const std::string& file) {
  if (file.find('/') != std::string::npos) return file;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";  // glibc's default (confstr _CS_PATH)
  while (true) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + file;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace memtrack::runtime
