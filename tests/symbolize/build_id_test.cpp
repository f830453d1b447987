// memtrack::build_id: the build-id of each module mapped in this process, read from memory, equals the one
// libelf reads from the file on disk; reading it allocates nothing; malformed and 8-aligned notes.
#include "memtrack/symbolize/build_id.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "memtrack/heap_counter.h"
#include "memtrack/symbolize/symbolizer.h"

namespace memtrack::symbolize {
namespace {

struct Seen {
  char name[512];
  ElfW(Addr) bias;
  BuildId id;
  bool has_id;
};
// Filled from the dl_iterate_phdr callback without allocating.
Seen g_seen[256];
std::size_t g_count = 0;

int collect(dl_phdr_info* info, std::size_t, void*) {
  if (g_count == sizeof g_seen / sizeof g_seen[0]) return 1;
  Seen& s = g_seen[g_count++];
  std::strncpy(s.name, info->dlpi_name != nullptr ? info->dlpi_name : "", sizeof s.name - 1);
  s.bias = info->dlpi_addr;
  s.has_id = build_id_of(*info, s.id);
  return 0;
}

TEST(BuildId, MappedModulesMatchTheirFilesAndReadingAllocatesNothing) {
  g_count = 0;
  heap_counter::start();
  dl_iterate_phdr(collect, nullptr);
  const heap_counter::Counts counts = heap_counter::stop();
  EXPECT_EQ(counts.allocations, 0);
  ASSERT_GE(g_count, 3u);  // this executable, libc, libstdc++ at least
  std::size_t checked = 0;
  for (std::size_t i = 0; i < g_count; ++i) {
    const Seen& s = g_seen[i];
    std::string path = s.name;
    if (i == 0 && path.empty()) path = "/proc/self/exe";  // the executable comes first, unnamed
    if (path.empty() || path.find("linux-vdso") != std::string::npos) continue;
    BuildId on_disk;
    std::string error;
    const bool has_file_id = read_build_id(path, on_disk, &error);
    EXPECT_EQ(s.has_id, has_file_id) << path << ": " << error;
    EXPECT_EQ(s.id, on_disk) << path << ": memory " << to_hex(s.id) << ", file " << to_hex(on_disk);
    checked += has_file_id ? 1 : 0;
  }
  EXPECT_GE(checked, 3u);
}

TEST(BuildId, OfAddressFindsTheContainingModule) {
  BuildId in_libc;
  ElfW(Addr) bias = 0;
  void* libc_function = dlsym(RTLD_DEFAULT, "qsort");
  ASSERT_NE(libc_function, nullptr);
  ASSERT_TRUE(build_id_of_address(libc_function, in_libc, &bias));
  Dl_info info;
  link_map* map = nullptr;
  ASSERT_NE(dladdr1(libc_function, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP), 0);
  EXPECT_EQ(bias, map->l_addr);
  BuildId on_disk;
  ASSERT_TRUE(read_build_id(info.dli_fname, on_disk));
  EXPECT_EQ(in_libc, on_disk);

  BuildId here;
  ASSERT_TRUE(build_id_of_address(reinterpret_cast<void*>(&collect), here));
  BuildId exe;
  ASSERT_TRUE(read_build_id("/proc/self/exe", exe));
  EXPECT_EQ(here, exe);
  EXPECT_FALSE(here == in_libc);

  BuildId nowhere;
  EXPECT_FALSE(build_id_of_address(reinterpret_cast<void*>(16), nowhere));
  EXPECT_TRUE(nowhere.empty());
}

// A note segment assembled in memory: notes of (name, type, descriptor), padded to `alignment`.
std::vector<unsigned char> notes(std::size_t alignment,
                                 const std::vector<std::pair<std::string, std::vector<unsigned char>>>& entries,
                                 std::uint32_t type_of_first = NT_GNU_PROPERTY_TYPE_0) {
  std::vector<unsigned char> out;
  bool first = true;
  for (const auto& [name, desc] : entries) {
    ElfW(Nhdr) header{static_cast<ElfW(Word)>(name.size() + 1), static_cast<ElfW(Word)>(desc.size()),
                      first ? type_of_first : NT_GNU_BUILD_ID};
    first = false;
    const auto* h = reinterpret_cast<const unsigned char*>(&header);
    out.insert(out.end(), h, h + sizeof header);
    out.insert(out.end(), name.begin(), name.end());
    out.push_back(0);
    while (out.size() % alignment != 0) out.push_back(0);
    out.insert(out.end(), desc.begin(), desc.end());
    while (out.size() % alignment != 0) out.push_back(0);
  }
  return out;
}

bool read_from(std::vector<unsigned char>& segment, std::size_t alignment, BuildId& out) {
  ElfW(Phdr) phdr{};
  phdr.p_type = PT_NOTE;
  phdr.p_vaddr = 0;
  phdr.p_filesz = phdr.p_memsz = segment.size();
  phdr.p_align = alignment;
  return build_id_from_phdrs(reinterpret_cast<ElfW(Addr)>(segment.data()), &phdr, 1, out);
}

TEST(BuildId, EightByteAlignedNotesAfterAPropertyNote) {
  const std::vector<unsigned char> id = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  for (std::size_t alignment : {4u, 8u}) {
    std::vector<unsigned char> segment = notes(alignment, {{"GNU", {0xaa, 0xbb, 0xcc}}, {"GNU", id}});
    BuildId out;
    ASSERT_TRUE(read_from(segment, alignment, out)) << alignment;
    EXPECT_EQ(out.size, 20);
    EXPECT_EQ(std::memcmp(out.bytes, id.data(), id.size()), 0);
  }
}

TEST(BuildId, MalformedOrOversizedNotesAreRejected) {
  BuildId out;
  // A descriptor running past the segment.
  std::vector<unsigned char> segment = notes(4, {{"GNU", {1, 2, 3, 4}}}, NT_GNU_BUILD_ID);
  ElfW(Nhdr) header;
  std::memcpy(&header, segment.data(), sizeof header);
  header.n_descsz = 4096;
  std::memcpy(segment.data(), &header, sizeof header);
  EXPECT_FALSE(read_from(segment, 4, out));
  EXPECT_TRUE(out.empty());
  // Longer than kMaxBuildIdSize: rejected, not truncated.
  segment = notes(4, {{"GNU", std::vector<unsigned char>(kMaxBuildIdSize + 4, 7)}}, NT_GNU_BUILD_ID);
  EXPECT_FALSE(read_from(segment, 4, out));
  // Another owner's note of the same type.
  segment = notes(4, {{"XYZ", {1, 2, 3, 4}}}, NT_GNU_BUILD_ID);
  EXPECT_FALSE(read_from(segment, 4, out));
  // A truncated header.
  segment.resize(7);
  EXPECT_FALSE(read_from(segment, 4, out));
}

TEST(BuildId, Hex) {
  BuildId id;
  ASSERT_TRUE(build_id_from_hex("00ff10Ab", 8, id));
  EXPECT_EQ(id.size, 4);
  char text[9];
  EXPECT_EQ(build_id_to_hex(id, text, sizeof text), 8u);
  EXPECT_STREQ(text, "00ff10ab");
  EXPECT_EQ(build_id_to_hex(id, text, 8), 0u);  // no room for the NUL
  EXPECT_FALSE(build_id_from_hex("abc", 3, id));
  EXPECT_FALSE(build_id_from_hex("zz", 2, id));
  EXPECT_TRUE(id.empty());
  const std::string too_long(2 * (kMaxBuildIdSize + 1), 'a');
  EXPECT_FALSE(build_id_from_hex(too_long.data(), too_long.size(), id));
}

}  // namespace
}  // namespace memtrack::symbolize
