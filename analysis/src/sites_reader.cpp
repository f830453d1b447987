// read_sites and marks_stacks (sites.h): the site accumulator as one more consumer of the artifact pass.
#include <algorithm>

#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/sites.h"

namespace memtrack::analysis {
namespace {

class SitesConsumer final : public ArtifactConsumer {
 public:
  explicit SitesConsumer(SiteAccumulator& acc) : acc_(acc) {}
  void add_context(const codec::ContextRecord& record) override { acc_.add_context(record); }
  void add(std::span<const codec::Event> events) override { acc_.add(events); }

 private:
  SiteAccumulator& acc_;
};

}  // namespace

codec::Status read_sites(std::span<const std::byte> file, const std::string& name, SiteAccumulator& acc,
                         const SitesProgressFn& progress) {
  SitesConsumer consumer(acc);
  ArtifactConsumer* consumers[] = {&consumer};
  PassSummary summary;
  return read_artifact(file, name, consumers, summary, progress);
}

bool marks_stacks(const codec::ContextRecord& record) {
  if (std::holds_alternative<codec::StackNodes>(record) || std::holds_alternative<codec::EventStacks>(record))
    return true;
  const auto* info = std::get_if<codec::RecordingInfo>(&record);
  return info != nullptr && std::find(info->sections.begin(), info->sections.end(), "stacks") != info->sections.end();
}

}  // namespace memtrack::analysis
