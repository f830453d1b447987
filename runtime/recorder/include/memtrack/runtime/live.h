// The live view's channel (docs/RUNTIME.md, "Live view"): both ends of it, the recorder's server
// (runtime/recorder/src/live_server.h) and the viewers (`memtrack live`, `memtrack record --live`).
//
// Where: a Unix stream socket <dir>/<recorder pid>.sock, <dir> being $XDG_RUNTIME_DIR/memtrack, or
// /tmp/memtrack-<uid> without XDG_RUNTIME_DIR: a directory of the recording user's, mode 0700, so no other
// user can reach the socket; the server also refuses a peer of another uid (SO_PEERCRED, peer_refusal()).
//
// Protocol, version 1: text lines, server to viewer only (a viewer sends nothing). First the greeting
// "memtrack-live 1 <recorder pid> <command pid>\n", then one snapshot at a time, each a block of lines ending
// with "end\n" (format in encode_snapshot()). A refused viewer gets one line "refused: <why>\n" instead of
// the greeting, then the end of the stream. The stream ends when the recording does, after a snapshot whose
// state is "ended".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memtrack::runtime {

inline constexpr int kLiveProtocolVersion = 1;
inline constexpr std::string_view kLiveGreeting = "memtrack-live";

struct LiveProcess {
  std::int32_t pid = 0;
  std::uint64_t heap_bytes = 0, peak_bytes = 0, mapped_bytes = 0, events = 0;
  std::optional<std::uint64_t> resident_bytes;  // the last Resident sample, when the sampler runs
  bool running = true;
  std::string executable;  // one line: control characters replaced by '?'
};

struct LiveSite {
  std::int32_t pid = 0;
  std::uint32_t stack = 0;  // leaf node of the process image's trace tree (docs/FORMAT.md, "Call stacks")
  std::uint64_t live_bytes = 0, live_count = 0, allocated_bytes = 0, allocations = 0;
  std::string frame;  // the innermost frame, as module+0xoffset (or 0xaddress outside any module), one line
};

struct LiveSnapshot {
  std::uint64_t sequence = 0;
  double seconds = 0;  // since the recording started
  bool ended = false;
  bool paused = false;  // the recording is paused (harness control)
  bool stacks = false;  // recorded with call stacks: sites are available
  std::uint64_t heap_bytes = 0, peak_bytes = 0, mapped_bytes = 0;
  std::optional<std::uint64_t> resident_bytes;  // the processes' last samples, summed
  std::uint64_t events = 0, allocations = 0, allocated_bytes = 0;
  double events_per_second = 0, allocations_per_second = 0, bytes_per_second = 0;  // since the last snapshot
  std::uint64_t exited_processes = 0;  // images that ended by an exit (some may be in `processes`)
  std::vector<LiveProcess> processes;  // the running ones (heap first), then up to a few that ended
  std::vector<LiveSite> sites;         // the top sites by each ranking, overall and per process, without repeats
};

std::string encode_greeting(pid_t recorder, pid_t command);
// The greeting's fields, or nullopt with `error` saying what was wrong (another version: its number).
struct LiveGreeting {
  pid_t recorder = 0, command = 0;
};
std::optional<LiveGreeting> parse_greeting(std::string_view line, std::string& error);

std::string encode_snapshot(const LiveSnapshot& s);
// One block, "end\n" included. nullopt with `error` (naming the line) on a malformed block.
std::optional<LiveSnapshot> parse_snapshot(std::string_view block, std::string& error);

// The directory of this user's live sockets (not created).
std::string live_directory();
// The socket of recorder `pid` in live_directory().
std::string live_socket_path(pid_t recorder);

// Creates live_directory() if missing; throws std::runtime_error naming it if it cannot, or if it exists but is
// not a directory of ours with mode 0700 (a symlink, another owner, wider permissions).
void make_live_directory();

// Why a peer with credentials (uid) is refused by a server of user `owner`, or empty when it may view.
std::string peer_refusal(uid_t peer, uid_t owner);
// The peer of connected Unix socket `fd` (SO_PEERCRED), checked with peer_refusal() against geteuid().
std::string check_peer(int fd);

}  // namespace memtrack::runtime
