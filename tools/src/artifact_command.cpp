#include "artifact_command.h"

#include <cstdio>

#include "commands.h"
#include "io.h"
#include "output_checks.h"

namespace memtrack::tools {

ArtifactArgs parse_artifact_args(Args& args, const ArtifactOptions& takes) {
  ArtifactArgs a;
  if (const auto p = takes.pid ? args.value("pid") : std::nullopt)
    a.pid = static_cast<std::int32_t>(parse_int("--pid", *p, INT32_MIN, INT32_MAX));
  if (takes.region) a.region = args.value("region");
  const std::optional<std::string> out = takes.default_output ? args.value("output", "o") : std::nullopt;
  const auto files = args.positionals();
  if (files.size() != 1) throw UsageError(files.empty() ? "missing FILE" : "more than one FILE");
  a.input = files[0];
  a.name = a.input == "-" ? "stdin" : a.input;
  if (takes.default_output) {
    a.output = out.value_or(takes.default_output(a.input));
    refuse_output_is_input(a.input, a.output);
  }
  return a;
}

OpenArtifact::OpenArtifact(const ArtifactArgs& a)
    : fd_(open_input(a.input)), file_(fd_, a.name), meter_(file_.bytes().size()) {
  close_fd(fd_);
}

analysis::ProgressFn OpenArtifact::progress() {
  return [this](std::uint64_t bytes, std::uint64_t events) { meter_.update(bytes, events); };
}

void ProcessList::add_context(const codec::ContextRecord& r) {
  if (const auto* start = std::get_if<codec::ProcessStart>(&r)) pids_.insert(start->pid);
}

void ProcessList::add(std::span<const codec::Event> events) {
  for (const codec::Event& e : events) pids_.insert(e.pid);
}

int refuse_lacking(const char* command, const std::string& name, const codec::Status& status, const char* lack) {
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack %s: %s\n", command, status.message().c_str());
    return exit_status(status);
  }
  std::fprintf(stderr, "memtrack %s: %s%s\n", command, name.c_str(), lack);
  return 1;
}

std::string missing_process(const ArtifactArgs& a, const std::set<std::int32_t>& processes) {
  if (!a.pid || processes.contains(*a.pid)) return {};
  std::string list;
  for (const std::int32_t pid : processes) list += (list.empty() ? "" : ", ") + std::to_string(pid);
  return "no process " + std::to_string(*a.pid) + " in " + a.name + " (processes: " + (list.empty() ? "none" : list) +
         ")";
}

codec::Status write_output(const std::string& output, std::string bytes) {
  OutputFile file(output);
  BufferedOutput out(file.fd(), file.name(), 0);
  out.buffer() = std::move(bytes);
  if (codec::Status written = out.flush(); !written) return written;
  return file.commit();
}

}  // namespace memtrack::tools
