// The live view as a person uses it, through tmux (send-keys to type, capture-pane to read the screen):
// `memtrack record --live` on an 80x24 terminal while programs/live_grow.c grows its heap, `q` closing the view
// while the recording goes on, the program's output kept in the named file; `memtrack live` from other
// clients, several times, full screen, on a dumb terminal and not on a terminal; a viewer of another user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/run.h"

namespace {

namespace fs = std::filesystem;
using memtrack::testing::memtrack_bin;
using memtrack::testing::run;
using memtrack::testing::slurp;
using memtrack::testing::test_dir;

const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;

// A tmux server of the test's own (-L), killed at the end.
class Tmux {
 public:
  Tmux() : name_("memtrack-live-" + std::to_string(::getpid())) {}
  ~Tmux() { run(tmux("kill-server")); }
  [[nodiscard]] std::string tmux(const std::string& args) const { return "tmux -L " + name_ + " " + args; }
  // A window running `command` (sh -c) on an 80x24 terminal.
  void start(const std::string& window, const std::string& command) const {
    const std::string args = run(tmux("has-session -t t")).status == 0 ? "new-window -t t -n " + window
                                                                        : "new-session -d -s t -x 80 -y 24 -n " + window;
    const auto r = run(tmux(args + " " + quote(command)));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void keys(const std::string& window, const std::string& keys) const {
    ASSERT_EQ(run(tmux("send-keys -t t:" + window + " " + keys)).status, 0);
  }
  [[nodiscard]] std::string screen(const std::string& window) const {
    return run(tmux("capture-pane -p -t t:" + window)).out;
  }
  static std::string quote(const std::string& s) {
    std::string out = "'";
    for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }

 private:
  std::string name_;
};

// Polls `done` every 100 ms for up to `seconds` (a bound for a loaded machine, not a measured time).
bool wait_for(const std::function<bool()>& done, int seconds = 30) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The screen's "heap X (peak Y)" line's X.
std::string heap_of(const std::string& screen) {
  std::smatch m;
  static const std::regex heap(R"(\nheap ([0-9.]+ [KMG]?i?B) \(peak)");
  return std::regex_search(screen, m, heap) ? m[1].str() : std::string();
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(LiveView, RecordLiveShowsTheHeapGrowAndQLeavesTheRecordingRunning) {
  const fs::path dir = test_dir("live");
  const std::string stop = (dir / "stop").string(), rc = (dir / "rc").string(), err = (dir / "rec.err").string();
  const std::string artifact = (dir / "a.msgpack").string(), output = (dir / "cmd.out").string();
  Tmux tmux;
  tmux.start("rec", "cd " + dir.string() + " && TERM=xterm " + memtrack_bin() + " record -o " + artifact +
                        " --live --live-output " + output + " -- " + kPrograms + "/live_grow 40 " + stop + " 2>" +
                        err + "; echo $? >" + rc + "; sleep 600");
  std::string first;
  ASSERT_TRUE(wait_for([&] {
    first = tmux.screen("rec");
    return contains(first, "memtrack live  recorder") && !heap_of(first).empty();
  })) << first;
  // The view fits the terminal, names where the command's output goes, and tears nothing.
  const std::vector<std::string> rows = lines_of(first);
  EXPECT_LE(rows.size(), 24u);
  for (const std::string& row : rows) EXPECT_LE(row.size(), 80u) << row;
  EXPECT_TRUE(std::regex_search(first, std::regex("command's output: [^\n]*/cmd\\.out\n"))) << first;
  EXPECT_TRUE(contains(first, "keys: l/a/c sort")) << first;
  EXPECT_FALSE(contains(first, "live_grow step")) << first;
  std::string later;
  ASSERT_TRUE(wait_for([&] {
    later = tmux.screen("rec");
    return !heap_of(later).empty() && heap_of(later) != heap_of(first);
  })) << "the heap did not change on screen: " << first << "\n---\n" << later;
  EXPECT_TRUE(contains(later, "live_grow")) << later;  // the process row's image
  EXPECT_TRUE(contains(later, "live_grow+0x")) << later;  // the top site's innermost frame

  tmux.keys("rec", "c");
  ASSERT_TRUE(wait_for([&] { return contains(tmux.screen("rec"), "by count"); })) << tmux.screen("rec");
  tmux.keys("rec", "Tab");  // from all processes to the first row's
  ASSERT_TRUE(wait_for([&] { return contains(tmux.screen("rec"), "top sites of process "); })) << tmux.screen("rec");
  EXPECT_TRUE(contains(tmux.screen("rec"), "\n> ")) << tmux.screen("rec");  // the row it shows is marked
  tmux.keys("rec", "p");
  ASSERT_TRUE(wait_for([&] { return contains(tmux.screen("rec"), "[view paused: p resumes]"); })) << tmux.screen("rec");
  tmux.keys("rec", "p");
  ASSERT_TRUE(wait_for([&] { return !contains(tmux.screen("rec"), "[view paused"); })) << tmux.screen("rec");
  tmux.keys("rec", "q");
  ASSERT_TRUE(wait_for([&] { return contains(slurp(err), "live view closed; the recording goes on"); }))
      << slurp(err);
  EXPECT_FALSE(contains(tmux.screen("rec"), "keys: l/a/c sort"));  // the terminal is the shell's again
  EXPECT_FALSE(fs::exists(rc)) << "the recording ended with the view";

  // The recording goes on: a second viewer sees it, from its own terminal.
  std::smatch m;
  const std::string said = slurp(err);
  ASSERT_TRUE(std::regex_search(said, m, std::regex("live view of recorder ([0-9]+)"))) << said;
  const std::string recorder = m[1].str();
  tmux.start("again", "TERM=xterm " + memtrack_bin() + " live " + recorder + " 2>" + (dir / "again.err").string() +
                          "; sleep 600");
  ASSERT_TRUE(wait_for([&] { return contains(tmux.screen("again"), "memtrack live  recorder " + recorder); }))
      << tmux.screen("again");

  ASSERT_TRUE(fs::exists(fs::path(dir)));
  std::ofstream(stop).put('\n');
  ASSERT_TRUE(wait_for([&] { return fs::exists(rc) && !slurp(rc).empty(); })) << slurp(err);
  EXPECT_EQ(slurp(rc), "0\n") << slurp(err);
  // The second viewer saw the end and said so.
  ASSERT_TRUE(wait_for([&] { return contains(slurp((dir / "again.err").string()), "the recording ended"); }))
      << tmux.screen("again");

  // The command's output, stdout and stderr, all of it, in the named file.
  const std::string out = slurp(output);
  EXPECT_TRUE(contains(out, "live_grow step 0\n")) << out;
  EXPECT_TRUE(contains(out, "live_grow step 39\n")) << out;
  EXPECT_TRUE(contains(out, "live_grow stderr 39\n")) << out;
  EXPECT_TRUE(contains(out, "live_grow done\n")) << out;
  EXPECT_TRUE(contains(slurp(err), "output is in " + output)) << slurp(err);
  // The artifact is complete: the 40 MiB the program held at its peak, each malloc and free.
  const auto stats = run(memtrack_bin() + " stats " + artifact + " --json");
  ASSERT_EQ(stats.status, 0) << stats.err;
  EXPECT_TRUE(std::regex_search(stats.out, m, std::regex("\"peak_live_bytes\":([0-9]+)"))) << stats.out;
  EXPECT_GE(std::stoull(m[1].str()), 40ull << 20);
}

TEST(LiveView, MemtrackLiveFromOtherClientsAnyNumberOfTimes) {
  const fs::path dir = test_dir("live");
  const std::string stop = (dir / "stop").string(), rc = (dir / "rc").string();
  Tmux tmux;
  // A plain recording (no --live): its recorder serves the view all the same. The shell execs the recorder,
  // so its pid is the recorder's.
  tmux.start("rec", "echo $$ >" + (dir / "pid").string() + "; exec " + memtrack_bin() + " record -o " +
                        (dir / "a.msgpack").string() + " -- " + kPrograms + "/live_grow 30 " + stop + " >" +
                        (dir / "cmd.out").string() + " 2>" + (dir / "rec.err").string());
  ASSERT_TRUE(wait_for([&] { return !slurp((dir / "pid").string()).empty(); }));
  std::string recorder = slurp((dir / "pid").string());
  recorder.erase(recorder.find_last_not_of('\n') + 1);
  const std::string socket = std::string(std::getenv("XDG_RUNTIME_DIR") != nullptr && std::getenv("XDG_RUNTIME_DIR")[0] == '/'
                                             ? std::string(std::getenv("XDG_RUNTIME_DIR")) + "/memtrack"
                                             : "/tmp/memtrack-" + std::to_string(::geteuid())) +
                             "/" + recorder + ".sock";
  ASSERT_TRUE(wait_for([&] { return fs::exists(socket); })) << socket;

  for (int i = 0; i < 2; ++i) {
    const std::string window = "view" + std::to_string(i), err = (dir / (window + ".err")).string();
    tmux.start(window, "TERM=xterm " + memtrack_bin() + " live " + recorder + " 2>" + err + "; sleep 600");
    std::string screen;
    ASSERT_TRUE(wait_for([&] {
      screen = tmux.screen(window);
      return contains(screen, "memtrack live  recorder " + recorder) && !heap_of(screen).empty();
    })) << screen;
    tmux.keys(window, "q");
    ASSERT_TRUE(wait_for([&] { return contains(slurp(err), "view closed; recording " + recorder + " goes on"); }))
        << slurp(err);
  }

  // A dumb terminal: one status line, no full screen.
  tmux.start("dumb", "TERM=dumb " + memtrack_bin() + " live " + socket + "; sleep 600");
  std::string dumb;
  ASSERT_TRUE(wait_for([&] {
    dumb = tmux.screen("dumb");
    return contains(dumb, "heap ") && contains(dumb, "events ");
  })) << dumb;
  EXPECT_FALSE(contains(dumb, "keys: l/a/c sort")) << dumb;
  EXPECT_EQ(lines_of(dumb).front().find("heap"), lines_of(dumb).front().rfind("heap")) << dumb;

  // Not a terminal: a status line per update, to a file, until the recording ends.
  const std::string piped = (dir / "piped.out").string(), piped_rc = (dir / "piped.rc").string();
  tmux.start("piped", memtrack_bin() + " live " + recorder + " >" + piped + " 2>&1 </dev/null; echo $? >" + piped_rc);
  ASSERT_TRUE(wait_for([&] { return contains(slurp(piped), "memtrack live: "); })) << slurp(piped);

  // Another user cannot even reach the socket (its directory is the recording user's alone, mode 0700); one
  // clear line. The server's own SO_PEERCRED check is tested in tests/runtime/live_test.cpp.
  if (::geteuid() == 0 && ::access("/usr/bin/setpriv", X_OK) == 0) {
    const auto refused = run("/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " + memtrack_bin() +
                             " live " + socket + " </dev/null");
    EXPECT_EQ(refused.status, 1) << refused.out << refused.err;
    EXPECT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
    EXPECT_TRUE(contains(refused.err, "Permission denied (a recording's live socket is its user's alone)"))
        << refused.err;
  }

  std::ofstream(stop).put('\n');
  ASSERT_TRUE(wait_for([&] { return fs::exists(piped_rc) && !slurp(piped_rc).empty(); })) << slurp(piped);
  EXPECT_EQ(slurp(piped_rc), "0\n");
  const std::string said = slurp(piped);
  EXPECT_TRUE(contains(said, "[recording ended]")) << said;
  EXPECT_TRUE(contains(said, "memtrack live: the recording ended")) << said;
  // The recording itself was untouched by its viewers.
  ASSERT_TRUE(wait_for([&] { return contains(slurp((dir / "rec.err").string()), "events from 1 process"); }))
      << slurp((dir / "rec.err").string());
  EXPECT_TRUE(contains(slurp((dir / "cmd.out").string()), "live_grow done\n"));
}

}  // namespace
