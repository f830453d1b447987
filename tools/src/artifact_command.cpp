#include "artifact_command.h"

#include "io.h"
#include "output_checks.h"

namespace memtrack::tools {

ArtifactArgs parse_artifact_args(Args& args, const std::function<std::string(const std::string&)>& default_output) {
  ArtifactArgs a;
  if (const auto p = args.value("pid")) a.pid = static_cast<std::int32_t>(parse_int("--pid", *p, INT32_MIN, INT32_MAX));
  const std::optional<std::string> out = args.value("output", "o");
  const auto files = args.positionals();
  if (files.size() != 1) throw UsageError(files.empty() ? "missing FILE" : "more than one FILE");
  a.input = files[0];
  a.name = a.input == "-" ? "stdin" : a.input;
  a.output = out.value_or(default_output(a.input));
  refuse_output_is_input(a.input, a.output);
  return a;
}

OpenArtifact::OpenArtifact(const ArtifactArgs& a)
    : fd_(open_input(a.input)), file_(fd_, a.name), meter_(file_.bytes().size()) {
  close_fd(fd_);
}

analysis::ProgressFn OpenArtifact::progress() {
  return [this](std::uint64_t bytes, std::uint64_t events) { meter_.update(bytes, events); };
}

codec::Status write_output(const std::string& output, std::string bytes) {
  const int fd = open_output(output);
  BufferedOutput out(fd, output == "-" ? "stdout" : output, 0);
  out.buffer() = std::move(bytes);
  const codec::Status written = out.flush();
  if (fd != 1) close_fd(fd);
  return written;
}

}  // namespace memtrack::tools
