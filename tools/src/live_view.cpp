#include "live_view.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "memtrack/runtime/live.h"
#include "units.h"

namespace memtrack::tools {
namespace {

using runtime::LiveProcess;
using runtime::LiveSite;
using runtime::LiveSnapshot;

volatile sig_atomic_t g_stop = 0;
void on_stop_signal(int) { g_stop = 1; }

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal is gone: nothing to show it on
    done += static_cast<std::size_t>(n);
  }
}

std::string per_second(double v) {
  char buf[32];
  if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1fM/s", v / 1e6);
  else if (v >= 1e4)
    std::snprintf(buf, sizeof buf, "%.0fk/s", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f/s", v);
  return buf;
}

std::string fmt(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string status_line(const LiveSnapshot& s) {
  std::size_t running = 0;
  for (const LiveProcess& p : s.processes) running += p.running;
  std::string line = fmt("%.1f s  heap %s (peak %s)  mapped %s", s.seconds, human_bytes(s.heap_bytes).c_str(),
                         human_bytes(s.peak_bytes).c_str(), human_bytes(s.mapped_bytes).c_str());
  if (s.resident_bytes) line += "  resident " + human_bytes(*s.resident_bytes);
  line += fmt("  events %llu (%s)  %zu running", static_cast<unsigned long long>(s.events),
              per_second(s.events_per_second).c_str(), running);
  if (s.paused) line += "  [recording paused]";
  if (s.ended) line += "  [recording ended]";
  return line;
}

enum class Sort { live, allocated, count };
const char* sort_name(Sort s) { return s == Sort::live ? "live" : s == Sort::allocated ? "allocated" : "count"; }

// The terminal in the view's mode (no echo, keys one at a time, signals still on) and the alternate screen;
// restored on destruction.
class Screen {
 public:
  Screen() {
    if (::tcgetattr(0, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      have_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
    }
    write_all(1, "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
  }
  ~Screen() {
    write_all(1, "\x1b[?25h\x1b[?1049l");
    if (have_) ::tcsetattr(0, TCSANOW, &saved_);
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  static void size(int& rows, int& cols) {
    winsize ws{};
    rows = 24;
    cols = 80;
    if (::ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) rows = ws.ws_row, cols = ws.ws_col;
  }

 private:
  termios saved_{};
  bool have_ = false;
};

struct ViewState {
  Sort sort = Sort::live;
  bool paused = false;
  std::int32_t pid = 0;  // 0: all processes
  int recorder = 0, command = 0;
  std::string command_output;
};

void render(const LiveSnapshot& s, const ViewState& v) {
  int rows = 24, cols = 80;
  Screen::size(rows, cols);
  std::vector<std::string> lines;
  std::string title = fmt("memtrack live  recorder %d  command %d  %.0f s", v.recorder, v.command, s.seconds);
  if (s.ended) title += "  RECORDING ENDED";
  if (s.paused) title += "  [recording paused]";
  if (v.paused) title += "  [view paused: p resumes]";
  lines.push_back(title);
  std::string heap = "heap " + human_bytes(s.heap_bytes) + " (peak " + human_bytes(s.peak_bytes) + ")  mapped " +
                     human_bytes(s.mapped_bytes) + "  resident " +
                     (s.resident_bytes ? human_bytes(*s.resident_bytes) : std::string("-"));
  lines.push_back(heap);
  lines.push_back(fmt("events %llu (%s)  allocations %llu (%s, %s/s)  exited %llu",
                      static_cast<unsigned long long>(s.events), per_second(s.events_per_second).c_str(),
                      static_cast<unsigned long long>(s.allocations), per_second(s.allocations_per_second).c_str(),
                      human_bytes(static_cast<std::uint64_t>(s.bytes_per_second)).c_str(),
                      static_cast<unsigned long long>(s.exited_processes)));
  // Where the command's output goes: the path's end when it is too long (the file name matters most).
  std::string output = v.command_output;
  constexpr std::size_t kOutputLabel = 18;  // "command's output: "
  if (cols > static_cast<int>(kOutputLabel) + 3 && output.size() + kOutputLabel > static_cast<std::size_t>(cols))
    output = "..." + output.substr(output.size() - (static_cast<std::size_t>(cols) - kOutputLabel - 3));
  lines.push_back(output.empty() ? std::string() : "command's output: " + output);

  // Process rows: at most a fifth of the screen, the selected one always among them.
  const int max_procs = std::max(1, std::min<int>(static_cast<int>(s.processes.size()), (rows - 12) / 3));
  lines.push_back(fmt("  %-8s %-10s %-10s %-10s %-12s %s", "PID", "HEAP", "PEAK", "RESIDENT", "EVENTS", "IMAGE"));
  int first = 0;
  for (int i = 0; i < static_cast<int>(s.processes.size()); ++i)
    if (s.processes[i].pid == v.pid && i >= max_procs) first = i - max_procs + 1;
  for (int i = first; i < static_cast<int>(s.processes.size()) && i < first + max_procs; ++i) {
    const LiveProcess& p = s.processes[i];
    lines.push_back(fmt("%c %-8d %-10s %-10s %-10s %-12llu %s%s", p.pid == v.pid ? '>' : ' ', p.pid,
                        human_bytes(p.heap_bytes).c_str(), human_bytes(p.peak_bytes).c_str(),
                        p.resident_bytes ? human_bytes(*p.resident_bytes).c_str() : "-",
                        static_cast<unsigned long long>(p.events), p.running ? "" : "(ended) ",
                        base_name(p.executable).c_str()));
  }
  if (static_cast<int>(s.processes.size()) > max_procs)
    lines.push_back(fmt("  ... %zu processes (tab: next)", s.processes.size()));

  lines.emplace_back();
  std::string which = v.pid == 0 ? std::string("all processes") : "process " + std::to_string(v.pid);
  if (!s.stacks) {
    lines.push_back("no call stacks in this recording (--no-stacks): no sites");
  } else {
    lines.push_back("top sites of " + which + " by " + sort_name(v.sort) + " (frames: module+offset)");
    lines.push_back(fmt("  %-10s %-9s %-10s %-10s %-7s %s", "LIVE", "BLOCKS", "ALLOCATED", "COUNT", "PID", "FRAME"));
    std::vector<const LiveSite*> sites;
    for (const LiveSite& site : s.sites)
      if (v.pid == 0 || site.pid == v.pid) sites.push_back(&site);
    auto key = [&](const LiveSite* x) {
      return v.sort == Sort::live ? x->live_bytes : v.sort == Sort::allocated ? x->allocated_bytes : x->allocations;
    };
    std::stable_sort(sites.begin(), sites.end(), [&](const LiveSite* a, const LiveSite* b) { return key(a) > key(b); });
    const int room = rows - static_cast<int>(lines.size()) - 1;
    for (int i = 0; i < room && i < static_cast<int>(sites.size()); ++i) {
      const LiveSite& site = *sites[i];
      lines.push_back(fmt("  %-10s %-9llu %-10s %-10llu %-7d %s", human_bytes(site.live_bytes).c_str(),
                          static_cast<unsigned long long>(site.live_count), human_bytes(site.allocated_bytes).c_str(),
                          static_cast<unsigned long long>(site.allocations), site.pid, site.frame.c_str()));
    }
    if (sites.empty()) lines.push_back("  (no allocation yet)");
  }
  // The keys on the last line.
  while (static_cast<int>(lines.size()) < rows - 1) lines.emplace_back();
  lines.resize(static_cast<std::size_t>(std::max(1, rows - 1)));
  lines.push_back("keys: l/a/c sort live/allocated/count  p pause  tab/n/b process  q close view");

  std::string out = "\x1b[H";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string& line = lines[i];
    if (static_cast<int>(line.size()) > cols) line.resize(static_cast<std::size_t>(cols));
    out += line;
    out += "\x1b[K";
    if (i + 1 != lines.size()) out += "\r\n";
  }
  out += "\x1b[J";
  write_all(1, out);
}

int connect_to(const std::string& path, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    error = path + ": path longer than a Unix socket allows";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == ENOENT || err == ECONNREFUSED)
      error = path + ": no recording serves it (" + std::strerror(err) +
              "; is the pid a running 'memtrack record' of this user?)";
    else if (err == EACCES || err == EPERM)
      error = path + ": " + std::strerror(err) + " (a recording's live socket is its user's alone)";
    else
      error = path + ": " + std::strerror(err);
    return -1;
  }
  return fd;
}

}  // namespace

std::string live_socket_of(const std::string& target) {
  if (target.find('/') != std::string::npos) return target;
  const bool digits = !target.empty() && std::all_of(target.begin(), target.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) return target;
  const std::string path = runtime::live_socket_path(static_cast<pid_t>(std::strtol(target.c_str(), nullptr, 10)));
  if (::access(path.c_str(), F_OK) == 0) return path;
  // The recorder may have another XDG_RUNTIME_DIR (su, sudo, another login): its listening socket's path,
  // from its descriptors' inodes and /proc/net/unix.
  std::vector<std::string> inodes;
  const std::string fd_dir = "/proc/" + target + "/fd";
  if (DIR* d = ::opendir(fd_dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      char link[64];
      const ssize_t n = ::readlink((fd_dir + "/" + e->d_name).c_str(), link, sizeof link - 1);
      if (n > 9 && std::strncmp(link, "socket:[", 8) == 0) inodes.emplace_back(link + 8, static_cast<std::size_t>(n) - 9);
    }
    ::closedir(d);
  }
  std::ifstream unix_sockets("/proc/net/unix");
  const std::string suffix = "/" + target + ".sock";
  for (std::string line; std::getline(unix_sockets, line);) {
    // Num RefCount Protocol Flags Type St Inode Path
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, inode, socket_path;
    if (!(fields >> num >> refs >> protocol >> flags >> type >> state >> inode >> socket_path)) continue;
    if (socket_path.ends_with(suffix) && std::find(inodes.begin(), inodes.end(), inode) != inodes.end())
      return socket_path;
  }
  return path;
}

LiveViewResult run_live_view(const LiveViewOptions& options) {
  LiveViewResult result;
  const int fd = connect_to(options.socket, result.error);
  if (fd < 0) return result;

  if (options.handle_signals) {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;  // no SA_RESTART: poll returns EINTR
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  }
  const char* term = std::getenv("TERM");
  const bool full = ::isatty(0) == 1 && ::isatty(1) == 1 && term != nullptr && *term != '\0' &&
                    std::strcmp(term, "dumb") != 0;
  const bool status_tty = ::isatty(options.status_fd) == 1;

  ViewState view;
  view.command_output = options.command_output;
  std::optional<Screen> screen;
  std::string buffer;
  bool greeted = false;
  std::optional<LiveSnapshot> last, shown;
  std::size_t status_width = 0;
  std::uint64_t updates = 0;
  int last_rows = 0, last_cols = 0;
  auto finish = [&](LiveViewEnd end) {
    screen.reset();
    if (!full && status_tty && status_width != 0) write_all(options.status_fd, "\n");
    ::close(fd);
    result.end = end;
    result.recorder = view.recorder;
    result.command = view.command;
    if (last) result.summary = status_line(*last);
    return result;
  };
  for (;;) {
    if (g_stop != 0) return finish(LiveViewEnd::closed);
    pollfd fds[2] = {{fd, POLLIN, 0}, {0, static_cast<short>(full ? POLLIN : 0), 0}};
    const int ready = ::poll(fds, 2, full ? 250 : -1);
    if (ready < 0 && errno != EINTR) {
      result.error = std::string("poll: ") + std::strerror(errno);
      return finish(LiveViewEnd::failed);
    }
    bool redraw = false;
    if (full && (fds[1].revents & POLLIN) != 0) {
      char keys[64];
      const ssize_t n = ::read(0, keys, sizeof keys);
      for (ssize_t i = 0; i < n; ++i) {
        const char k = keys[i];
        if (k == 'q' || k == 'Q') return finish(LiveViewEnd::closed);
        if (k == 'l') view.sort = Sort::live;
        if (k == 'a') view.sort = Sort::allocated;
        if (k == 'c') view.sort = Sort::count;
        if (k == 'p') view.paused = !view.paused;
        // Process switching: all, then each row in order (tab or n forward, b or shift-tab's "\e[Z" back).
        const bool back = k == 'b' || (k == 'Z' && i >= 2 && keys[i - 1] == '[' && keys[i - 2] == '\x1b');
        if ((k == '\t' || k == 'n' || back) && last) {
          std::vector<std::int32_t> order = {0};
          for (const LiveProcess& p : last->processes) order.push_back(p.pid);
          auto it = std::find(order.begin(), order.end(), view.pid);
          std::size_t at = it == order.end() ? 0 : static_cast<std::size_t>(it - order.begin());
          at = back ? (at + order.size() - 1) % order.size() : (at + 1) % order.size();
          view.pid = order[at];
        }
        redraw = true;
      }
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char chunk[65536];
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && errno != EINTR) {
        result.error = options.socket + ": " + std::strerror(errno);
        return finish(LiveViewEnd::failed);
      }
      if (n == 0) {
        if (!greeted) {
          result.error = options.socket + ": the recorder closed the connection before greeting";
          return finish(LiveViewEnd::failed);
        }
        return finish(last && last->ended ? LiveViewEnd::recording_ended : LiveViewEnd::lost);
      }
      if (n > 0) buffer.append(chunk, static_cast<std::size_t>(n));
      if (!greeted) {
        const auto nl = buffer.find('\n');
        if (nl == std::string::npos) {
          if (buffer.size() > 4096) {
            result.error = options.socket + ": not a memtrack live socket";
            return finish(LiveViewEnd::failed);
          }
          continue;
        }
        const std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.starts_with("refused: ")) {
          result.error = options.socket + ": the recorder refused this viewer: " + line.substr(9);
          return finish(LiveViewEnd::failed);
        }
        std::string error;
        const auto greeting = runtime::parse_greeting(line, error);
        if (!greeting) {
          result.error = options.socket + ": " + error;
          return finish(LiveViewEnd::failed);
        }
        greeted = true;
        view.recorder = greeting->recorder;
        view.command = greeting->command;
        if (full) screen.emplace();
      }
      // Every whole snapshot in the buffer; the newest one is shown.
      for (;;) {
        const auto end = buffer.find("\nend\n");
        std::size_t cut = std::string::npos;
        if (buffer.starts_with("end\n"))
          cut = 4;
        else if (end != std::string::npos)
          cut = end + 5;
        if (cut == std::string::npos) break;
        std::string error;
        auto snapshot = runtime::parse_snapshot(std::string_view(buffer).substr(0, cut), error);
        buffer.erase(0, cut);
        if (!snapshot) {
          result.error = options.socket + ": " + error;
          return finish(LiveViewEnd::failed);
        }
        last = std::move(*snapshot);
        ++updates;
        if (!full) {
          const std::string line = status_line(*last);
          if (status_tty) {
            // A dumb terminal: one line, rewritten in place.
            std::string out = "\r" + line;
            if (line.size() < status_width) out.append(status_width - line.size(), ' ');
            status_width = line.size();
            write_all(options.status_fd, out);
          } else if (last->ended || (updates - 1) % static_cast<std::uint64_t>(std::max(1, options.status_every)) == 0) {
            write_all(options.status_fd, "memtrack live: " + line + "\n");
          }
        }
        redraw = true;
      }
    }
    if (full && screen) {
      int rows = 0, cols = 0;
      Screen::size(rows, cols);
      if (rows != last_rows || cols != last_cols) redraw = true, last_rows = rows, last_cols = cols;
      if (redraw && last) {
        if (!view.paused || !shown) shown = last;  // a paused view keeps showing what it showed
        render(*shown, view);
      }
    }
  }
}

}  // namespace memtrack::tools
