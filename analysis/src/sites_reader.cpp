// read_sites and has_stacks (sites.h): the site accumulator as one more consumer of the artifact pass.
#include <zstd.h>

#include <algorithm>
#include <vector>

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

bool has_stacks(std::span<const std::byte> file) {
  // Only the context frames are decoded; data frames are stepped over by their block headers.
  std::vector<codec::ContextRecord> records;
  for (std::size_t pos = 0; file.size() - pos >= codec::kSkippableHeaderBytes;) {
    std::size_t size = 0;
    if (codec::is_skippable_magic(codec::load_le32(file.data() + pos))) {
      const std::uint64_t n = codec::kSkippableHeaderBytes + codec::load_le32(file.data() + pos + 4);
      if (n > file.size() - pos) return false;
      size = static_cast<std::size_t>(n);
      const auto bytes = file.subspan(pos, size);
      records.clear();
      if (codec::is_context_frame(bytes)) {
        if (!codec::decode_context_frame(bytes, pos, records)) return false;
        for (const codec::ContextRecord& r : records) {
          if (std::holds_alternative<codec::StackNodes>(r) || std::holds_alternative<codec::EventStacks>(r))
            return true;
          if (const auto* info = std::get_if<codec::RecordingInfo>(&r))
            if (std::find(info->sections.begin(), info->sections.end(), "stacks") != info->sections.end()) return true;
        }
      }
    } else {
      size = ZSTD_findFrameCompressedSize(file.data() + pos, file.size() - pos);
      if (ZSTD_isError(size)) return false;
    }
    pos += size;
  }
  return false;
}

}  // namespace memtrack::analysis
