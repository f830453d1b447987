#include "output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys_error.h"

namespace memtrack::runtime {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return path.substr(0, slash + 1);  // keeps the slash: "dir/" or "/"
}

// Creates `<base>.<pid>.partial` exclusively (or `<base>.<pid>-N.partial` when a dead recorder with the
// same pid left one: that file is someone's artifact and is not touched).
int create_partial(const std::string& base, std::string& path) {
  const std::string stem = base + "." + std::to_string(::getpid());
  for (int n = 1; n < 100; ++n) {
    path = stem + (n == 1 ? "" : "-" + std::to_string(n)) + ".partial";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// `<stem>.<pid><extension>` beside `target` (the extension: from the last '.' of the file name, if any),
// `<stem>.<pid>-N<extension>` for N = 2, 3, ... when that exists too.
std::string beside(const std::string& target, int n) {
  const std::size_t name = target.find_last_of('/') + 1;  // npos + 1 == 0
  std::size_t dot = target.find_last_of('.');
  if (dot == std::string::npos || dot <= name) dot = target.size();
  return target.substr(0, dot) + "." + std::to_string(::getpid()) + (n == 1 ? "" : "-" + std::to_string(n)) +
         target.substr(dot);
}

// rename(from, to) unless `to` exists. Filesystems without RENAME_NOREPLACE: link + unlink, also exclusive.
int rename_noreplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL) return -1;
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  ::unlink(from.c_str());
  return 0;
}

}  // namespace

void OutputFile::remember_target() {
  struct stat st {};
  had_target_ = ::stat(target_.c_str(), &st) == 0;
  dev_ = had_target_ ? st.st_dev : 0;
  ino_ = had_target_ ? st.st_ino : 0;
}

OutputFile::OutputFile(const std::string& target) : target_(target) {
  if (target_.empty()) {
    // The default name needs the command's pid: a provisional name now, so an unwritable current directory
    // fails before the program runs instead of after.
    fd_ = create_partial("memtrack-record", partial_);
    if (fd_ < 0) throw sys_error(partial_ + ": cannot create (the current directory receives the artifact)");
    return;
  }
  // A symlink to an existing file: the artifact replaces the file it points to, as writing through it would.
  char resolved[PATH_MAX];
  struct stat lst {};
  if (::lstat(target_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode) && ::realpath(target_.c_str(), resolved) != nullptr)
    target_ = resolved;
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    // Devices and FIFOs are written in place; renaming over them would replace /dev/null.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw sys_error(target + ": cannot create");
    return;
  }
  if (exists) {
    // An existing file the user cannot write must not be replaced by a rename (which needs only the
    // directory's permission): fail as opening it would, without truncating it.
    const int probe = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
    if (probe < 0) throw sys_error(target + ": cannot create");
    ::close(probe);
  }
  fd_ = create_partial(target_, partial_);
  if (fd_ < 0) throw sys_error(partial_ + ": cannot create (the artifact is written beside " + target + ")");
  if (exists) ::fchmod(fd_, st.st_mode & 07777);
  remember_target();
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::name_default(const std::string& target) {
  target_ = target;
  remember_target();
  const std::string base = directory_of(partial_) + target;
  std::string path = base + "." + std::to_string(::getpid()) + ".partial";
  // RENAME_NOREPLACE: never replace another recorder's (or a dead one's) partial artifact.
  if (::renameat2(AT_FDCWD, partial_.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) partial_ = path;
}

codec::Status OutputFile::finish() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) {
    return {codec::Errc::io, (partial_.empty() ? target_ : partial_) + ": close failed: " + std::strerror(errno)};
  }
  final_ = target_;
  if (partial_.empty()) return {};
  struct stat now {};
  const bool exists = ::stat(target_.c_str(), &now) == 0;
  int r = -1;
  if (exists && had_target_ && now.st_dev == dev_ && now.st_ino == ino_)
    r = ::rename(partial_.c_str(), target_.c_str());  // the file the user named at the start: replaced
  else if (!exists)
    r = rename_noreplace(partial_, target_);
  if (r != 0 && (exists || errno == EEXIST)) {
    // Someone else's file under the target's name: ours goes beside it.
    for (int n = 1; n < 100 && r != 0; ++n) {
      final_ = beside(target_, n);
      r = rename_noreplace(partial_, final_);
      if (r != 0 && errno != EEXIST) break;
    }
  }
  if (r != 0) {
    return {codec::Errc::io, "cannot rename " + partial_ + " to " + final_ + ": " + std::strerror(errno) +
                                 "; the artifact is in " + partial_};
  }
  return {};
}

void OutputFile::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!partial_.empty()) ::unlink(partial_.c_str());  // a device or FIFO written in place is left alone
}

}  // namespace memtrack::runtime
