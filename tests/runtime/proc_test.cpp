// The recorder's scan of memtrack's own pages in a process (runtime/recorder/src/proc.h,
// resident_bytes_of_mapping): private copies as anon, pages of the file as shared, and the preload's shared
// view of its tables not read; by PAGEMAP_SCAN and by pagemap entries alike.
#include "proc.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "memtrack/runtime/ring.h"

namespace {

using memtrack::runtime::kRingMemfdName;
using memtrack::runtime::kTablesMemfdName;
using memtrack::runtime::PagemapRead;
using memtrack::runtime::resident_bytes_of_mapping;

const std::uint64_t kPage = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));

// A memfd of `pages` pages named `name`, mapped with `flags`; closed once mapped, as the preload does.
char* map_memfd(const char* name, std::size_t pages, int flags, int* keep_fd = nullptr) {
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, name, MFD_CLOEXEC));
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(pages * kPage)) != 0) return nullptr;
  void* map = ::mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (keep_fd != nullptr)
    *keep_fd = fd;
  else
    ::close(fd);
  return map == MAP_FAILED ? nullptr : static_cast<char*>(map);
}

TEST(OwnPages, PrivateCopiesAreAnonTheRingIsSharedAndTheTablesViewIsNotRead) {
  constexpr std::size_t kPages = 64;
  int fd = -1;
  char* tables = map_memfd(kTablesMemfdName, kPages, MAP_PRIVATE, &fd);
  ASSERT_NE(tables, nullptr);
  void* view_map = ::mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(view_map, MAP_FAILED);
  ::close(fd);
  char* view = static_cast<char*>(view_map);
  char* ring = map_memfd(kRingMemfdName, 8, MAP_SHARED);
  ASSERT_NE(ring, nullptr);
  for (std::size_t i = 0; i < 3; ++i) tables[i * kPage] = 1;  // three private copies
  for (std::size_t i = 10; i < 14; ++i) view[i * kPage] = 1;  // four pages through the view
  for (std::size_t i = 0; i < 2; ++i) ring[i * kPage] = 1;    // two pages of the ring

  // Two holes of the file read through the private mapping: pages of the file, mapped, not copied (shared);
  // far from the view's four, which the fault-around of a read nearby would map too.
  volatile char sink = static_cast<char>(tables[40 * kPage] + tables[41 * kPage]);
  (void)sink;

  const std::string own = std::string("memfd:") + memtrack::runtime::kOwnMemfdPrefix;
  std::vector<std::uint64_t> scratch;
  for (const PagemapRead how : {PagemapRead::scan, PagemapRead::entries}) {
    SCOPED_TRACE(how == PagemapRead::scan ? "PAGEMAP_SCAN" : "pagemap entries");
    const auto skipped = resident_bytes_of_mapping(::getpid(), own.c_str(), kTablesMemfdName, scratch, how);
    EXPECT_EQ(skipped.anon, 3 * kPage);
    EXPECT_EQ(skipped.shared, 4 * kPage);  // the ring's two and the file's two; the view's four are not read
    const auto all = resident_bytes_of_mapping(::getpid(), own.c_str(), nullptr, scratch, how);
    EXPECT_EQ(all.anon, 3 * kPage);
    EXPECT_EQ(all.shared, 8 * kPage);  // read, the view's pages count
  }

  ::munmap(tables, kPages * kPage);
  ::munmap(view, kPages * kPage);
  ::munmap(ring, 8 * kPage);
}

}  // namespace
