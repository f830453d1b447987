#include "memtrack/analysis/indexed_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace memtrack::analysis {

codec::Status read_at(int fd, const std::string& name, std::uint64_t offset, std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return {codec::Errc::io,
              name + ": read failed at byte " + std::to_string(offset + done) + ": " + std::strerror(errno)};
    }
    if (n == 0) {
      return {codec::Errc::truncated, name + ": file ends at byte " + std::to_string(offset + done) +
                                          ", before the end of a frame the index describes"};
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

codec::Status load_index(int fd, const std::string& name, std::optional<codec::SeekTable>& index) {
  index.reset();
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return {};
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  if (file_size < codec::kSeekTableFooterSize) return {};
  std::byte footer[codec::kSeekTableFooterSize];
  codec::Status status = read_at(fd, name, file_size - sizeof footer, footer);
  if (!status.is_ok()) return status;
  const std::uint64_t size = codec::seek_table_size(footer, file_size, status);
  if (!status.is_ok()) return {status.code(), name + ": " + status.message()};
  if (size == 0) return {};
  // seek_table_size checked `size` against the file size, so this allocation is bounded by the file.
  std::vector<std::byte> table(static_cast<std::size_t>(size));
  status = read_at(fd, name, file_size - size, table);
  if (!status.is_ok()) return status;
  codec::SeekTable parsed;
  status = codec::parse_seek_table(table, file_size, parsed);
  if (!status.is_ok()) return {status.code(), name + ": " + status.message()};
  index = std::move(parsed);
  return {};
}

}  // namespace memtrack::analysis
