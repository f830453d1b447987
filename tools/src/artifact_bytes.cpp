#include "artifact_bytes.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <stdexcept>

#include "memtrack/pipeline/fd_io.h"

namespace memtrack::tools {

ArtifactBytes::ArtifactBytes(int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw std::runtime_error(name + ": cannot map: " + pipeline::errno_text(errno));
    data_ = static_cast<const std::byte*>(p);
    mapped_ = true;
    return;
  }
  pipeline::FdSource source(fd);
  for (;;) {
    const std::size_t at = copy_.size();
    copy_.resize(at + (std::size_t{1} << 20));
    const std::ptrdiff_t n = source.read(std::span(copy_.data() + at, copy_.size() - at));
    if (n < 0) throw std::runtime_error(name + ": read failed: " + pipeline::errno_text(static_cast<int>(-n)));
    copy_.resize(at + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  data_ = copy_.data();
  size_ = copy_.size();
}

ArtifactBytes::~ArtifactBytes() {
  if (mapped_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace memtrack::tools
