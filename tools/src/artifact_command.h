// What the commands that read an artifact share (`memtrack stats`, `top`, `report`, `export`): one FILE
// argument (- for stdin), --pid, --region and -o (each where the command takes it; the output checked
// against the input), the artifact read whole into memory with a progress meter over it, the result written
// to the output at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "args.h"
#include "artifact_bytes.h"
#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/codec/status.h"
#include "progress.h"

namespace memtrack::tools {

struct ArtifactArgs {
  std::string input;   // as given ("-": stdin)
  std::string name;    // for messages: the path, or "stdin"
  std::string output;  // "-": stdout
  std::optional<std::int32_t> pid;
  std::optional<std::string> region;
};

// Which of the shared options a command takes.
struct ArtifactOptions {
  bool pid = false;     // --pid P
  bool region = false;  // --region NAME
  // -o/--output: the output for an input when -o is absent; empty: the command takes no -o.
  std::function<std::string(const std::string&)> default_output;
};

// Consumes the options `takes` names, then the one positional FILE (UsageError otherwise; an option the
// command does not take is an unknown option). Refuses an output that is the input.
ArtifactArgs parse_artifact_args(Args& args, const ArtifactOptions& takes);

// The input opened and read whole (a regular file is mapped), with a progress meter over its bytes.
class OpenArtifact {
 public:
  explicit OpenArtifact(const ArtifactArgs& a);  // throws std::runtime_error naming the file (exit 1)
  [[nodiscard]] std::span<const std::byte> bytes() const { return file_.bytes(); }
  // Progress for analysis::read_artifact; call finish() when the pass is over.
  [[nodiscard]] analysis::ProgressFn progress();
  void finish() { meter_.finish(); }

 private:
  int fd_;  // open only while the bytes are read (a mapping outlives its descriptor)
  ArtifactBytes file_;
  ProgressMeter meter_;
};

// The processes of an artifact, for --pid: the pids of its events and of its ProcessStart records.
class ProcessList final : public analysis::ArtifactConsumer {
 public:
  void add_context(const codec::ContextRecord& r) override;
  void add(std::span<const codec::Event> events) override;
  [[nodiscard]] const std::set<std::int32_t>& pids() const { return pids_; }

 private:
  std::set<std::int32_t> pids_;
};

// "no process P in FILE (processes: ...)" when --pid names a process not in `processes` (the command exits 2);
// empty otherwise.
std::string missing_process(const ArtifactArgs& a, const std::set<std::int32_t>& processes);

// A command that cannot go on because the artifact lacks what it needs: prints "memtrack COMMAND: " and the
// artifact's damage when `status` has one (what is missing may be past the cut), else `name` followed by
// `lack`; returns the exit status (the damage's, else 1).
int refuse_lacking(const char* command, const std::string& name, const codec::Status& status, const char* lack);

// refuse_lacking's `lack` for each command that needs call stacks, and for their --python.
inline constexpr const char* kLacksStacks =
    " has no call stacks (recorded with --no-stacks, or by a writer without them)";
inline constexpr const char* kLacksPythonFrames =
    " has no Python frames (not a Python program, or not a CPython version whose frames memtrack reads: "
    "docs/RUNTIME.md, \"Python programs\")";

// Writes `bytes` to `output` ("-": stdout) in one go; the status names the output on failure.
codec::Status write_output(const std::string& output, std::string bytes);

}  // namespace memtrack::tools
