// The live channel's wire form and place (memtrack/runtime/live.h).
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "memtrack/runtime/live.h"

namespace memtrack::runtime {
namespace {

// A field that ends a line (an executable, a frame): one line, whatever the bytes.
std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

std::string optional_number(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string rate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v < 0 ? 0.0 : v);
  return buf;
}

// Splits `line` into words at single spaces; the last of `n` words takes the rest of the line.
std::vector<std::string_view> words(std::string_view line, std::size_t n) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const auto space = line.find(' ');
    if (space == std::string_view::npos) break;
    out.push_back(line.substr(0, space));
    line.remove_prefix(space + 1);
  }
  out.push_back(line);
  return out;
}

template <typename T>
bool number(std::string_view s, T& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size();
}

bool optional_field(std::string_view s, std::optional<std::uint64_t>& v) {
  if (s == "-") return v.reset(), true;
  std::uint64_t n = 0;
  if (!number(s, n)) return false;
  v = n;
  return true;
}

bool flag(std::string_view s, bool& v) {
  if (s != "0" && s != "1") return false;
  v = s == "1";
  return true;
}

}  // namespace

std::string encode_greeting(pid_t recorder, pid_t command) {
  return std::string(kLiveGreeting) + " " + std::to_string(kLiveProtocolVersion) + " " + std::to_string(recorder) +
         " " + std::to_string(command) + "\n";
}

std::optional<LiveGreeting> parse_greeting(std::string_view line, std::string& error) {
  if (line.ends_with('\n')) line.remove_suffix(1);
  const auto w = words(line, 4);
  int version = 0;
  LiveGreeting g;
  if (w.size() != 4 || w[0] != kLiveGreeting || !number(w[1], version) || !number(w[2], g.recorder) ||
      !number(w[3], g.command)) {
    error = "not a memtrack live socket (greeting '" + one_line(line.substr(0, 60)) + "')";
    return std::nullopt;
  }
  if (version != kLiveProtocolVersion) {
    error = "the recorder speaks live protocol " + std::to_string(version) + ", this memtrack " +
            std::to_string(kLiveProtocolVersion);
    return std::nullopt;
  }
  return g;
}

// snapshot SEQ SECONDS running|ended PAUSED STACKS
// total HEAP PEAK MAPPED RESIDENT|- EVENTS ALLOCATIONS ALLOCATED EVENTS/S ALLOCATIONS/S BYTES/S EXITED
// proc PID HEAP PEAK MAPPED RESIDENT|- EVENTS RUNNING EXECUTABLE...
// site PID STACK LIVE LIVE_COUNT ALLOCATED ALLOCATIONS FRAME...
// end
std::string encode_snapshot(const LiveSnapshot& s) {
  std::string out;
  out += "snapshot " + std::to_string(s.sequence) + " " + rate(s.seconds) + " " + (s.ended ? "ended" : "running") +
         " " + (s.paused ? "1" : "0") + " " + (s.stacks ? "1" : "0") + "\n";
  out += "total " + std::to_string(s.heap_bytes) + " " + std::to_string(s.peak_bytes) + " " +
         std::to_string(s.mapped_bytes) + " " + optional_number(s.resident_bytes) + " " + std::to_string(s.events) +
         " " + std::to_string(s.allocations) + " " + std::to_string(s.allocated_bytes) + " " +
         rate(s.events_per_second) + " " + rate(s.allocations_per_second) + " " + rate(s.bytes_per_second) + " " +
         std::to_string(s.exited_processes) + "\n";
  for (const LiveProcess& p : s.processes)
    out += "proc " + std::to_string(p.pid) + " " + std::to_string(p.heap_bytes) + " " + std::to_string(p.peak_bytes) +
           " " + std::to_string(p.mapped_bytes) + " " + optional_number(p.resident_bytes) + " " +
           std::to_string(p.events) + " " + (p.running ? "1" : "0") + " " + one_line(p.executable) + "\n";
  for (const LiveSite& site : s.sites)
    out += "site " + std::to_string(site.pid) + " " + std::to_string(site.stack) + " " +
           std::to_string(site.live_bytes) + " " + std::to_string(site.live_count) + " " +
           std::to_string(site.allocated_bytes) + " " + std::to_string(site.allocations) + " " +
           one_line(site.frame) + "\n";
  out += "end\n";
  return out;
}

std::optional<LiveSnapshot> parse_snapshot(std::string_view block, std::string& error) {
  LiveSnapshot s;
  std::size_t line_no = 0;
  bool have_head = false, have_total = false;
  while (!block.empty()) {
    const auto nl = block.find('\n');
    const std::string_view line = block.substr(0, nl);
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
    ++line_no;
    auto bad = [&] {
      error = "snapshot line " + std::to_string(line_no) + " is malformed: '" + one_line(line.substr(0, 60)) + "'";
      return std::nullopt;
    };
    if (line == "end") {
      if (!have_head || !have_total) return bad();
      return s;
    }
    const std::string_view tag = line.substr(0, line.find(' '));
    if (tag == "snapshot") {
      const auto w = words(line, 6);
      if (w.size() != 6 || !number(w[1], s.sequence) || !number(w[2], s.seconds) ||
          (w[3] != "running" && w[3] != "ended") || !flag(w[4], s.paused) || !flag(w[5], s.stacks))
        return bad();
      s.ended = w[3] == "ended";
      have_head = true;
    } else if (tag == "total") {
      const auto w = words(line, 12);
      if (w.size() != 12 || !number(w[1], s.heap_bytes) || !number(w[2], s.peak_bytes) ||
          !number(w[3], s.mapped_bytes) || !optional_field(w[4], s.resident_bytes) || !number(w[5], s.events) ||
          !number(w[6], s.allocations) || !number(w[7], s.allocated_bytes) || !number(w[8], s.events_per_second) ||
          !number(w[9], s.allocations_per_second) || !number(w[10], s.bytes_per_second) ||
          !number(w[11], s.exited_processes))
        return bad();
      have_total = true;
    } else if (tag == "proc") {
      const auto w = words(line, 9);
      LiveProcess p;
      if (w.size() != 9 || !number(w[1], p.pid) || !number(w[2], p.heap_bytes) || !number(w[3], p.peak_bytes) ||
          !number(w[4], p.mapped_bytes) || !optional_field(w[5], p.resident_bytes) || !number(w[6], p.events) ||
          !flag(w[7], p.running))
        return bad();
      p.executable = std::string(w[8]);
      s.processes.push_back(std::move(p));
    } else if (tag == "site") {
      const auto w = words(line, 8);
      LiveSite site;
      if (w.size() != 8 || !number(w[1], site.pid) || !number(w[2], site.stack) || !number(w[3], site.live_bytes) ||
          !number(w[4], site.live_count) || !number(w[5], site.allocated_bytes) || !number(w[6], site.allocations))
        return bad();
      site.frame = std::string(w[7]);
      s.sites.push_back(std::move(site));
    } else {
      return bad();
    }
  }
  error = "snapshot without its end line";
  return std::nullopt;
}

std::string live_directory() {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/memtrack";
  return "/tmp/memtrack-" + std::to_string(::geteuid());
}

std::string live_socket_path(pid_t recorder) { return live_directory() + "/" + std::to_string(recorder) + ".sock"; }

void make_live_directory() {
  const std::string dir = live_directory();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("live view directory " + dir + ": " + std::strerror(errno));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) throw std::runtime_error("live view directory " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 07777) != 0700)
    throw std::runtime_error("live view directory " + dir +
                             " is not a directory of this user's with mode 0700 (a symlink, another owner or wider "
                             "permissions): refused");
}

std::string peer_refusal(uid_t peer, uid_t owner) {
  if (peer == owner) return {};
  return "viewer uid " + std::to_string(peer) + " is not the recording's user (uid " + std::to_string(owner) + ")";
}

std::string check_peer(int fd) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return std::string("cannot read the viewer's credentials: ") + std::strerror(errno);
  return peer_refusal(cred.uid, ::geteuid());
}

}  // namespace memtrack::runtime
