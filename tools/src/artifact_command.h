// What the commands that read a whole artifact into one page or file share (`memtrack report`, `export`):
// one FILE argument (- for stdin), an optional --pid, an -o output checked against the input, the artifact
// read whole into memory with a progress meter over it, and the result written to the output at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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
};

// Consumes --pid and -o/--output, then the one positional FILE (UsageError otherwise); `default_output` gives
// the output for an input when -o is absent. Refuses an output that is the input.
ArtifactArgs parse_artifact_args(Args& args, const std::function<std::string(const std::string&)>& default_output);

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

// Writes `bytes` to `output` ("-": stdout) in one go; the status names the output on failure.
codec::Status write_output(const std::string& output, std::string bytes);

}  // namespace memtrack::tools
