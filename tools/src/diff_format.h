// `memtrack diff`'s renderings of two recordings compared (memtrack::analysis pairs them: site_match.h,
// run_compare.h): a table, one JSON document, or GitHub-flavoured markdown for a pull-request comment.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memtrack/analysis/run_compare.h"
#include "memtrack/analysis/site_match.h"
#include "memtrack/analysis/sites.h"

namespace memtrack::tools {

struct DiffReport {
  std::string base_name, head_name;
  std::optional<std::string> region;  // the --region the comparison is restricted to
  analysis::SiteOrder order = analysis::SiteOrder::peak;
  std::size_t limit = 10;      // the table's processes (the sites are already cut; 0: all)
  bool has_stacks = false;     // both recordings have call stacks (otherwise no sites are paired)
  std::string without_stacks;  // the one that has none, when only one has
  analysis::RunTotals base, head;
  bool resident = false;        // both recordings have resident samples: the totals compare peak resident
  bool resident_sites = false;  // both have page snapshots: the sites compare resident bytes
  analysis::SitesDiff sites;
  std::vector<analysis::ImageChange> processes;
  std::vector<analysis::RegionChange> regions;
};

// {"base", "head", "by", "region", "totals": {"base", "head", "delta", "percent"}, "sites": [{"stack",
// "base", "head", "delta", "status"}...], "site_counts", "processes": [...], "regions": [...]}: sizes in
// bytes, deltas head - base, a side without the item null; status "same", "changed", "new" or "gone". The
// totals have "peak_resident_bytes" (stats' peak resident) only when `resident`, the sites "resident_bytes"
// (top --json's) only when `resident_sites`.
std::string format_diff_json(const DiffReport& report);
std::string format_diff_table(const DiffReport& report);
std::string format_diff_markdown(const DiffReport& report);

// "same", "changed", "new", "gone".
const char* status_name(analysis::ChangeStatus status);

// head - base as a signed decimal ("-12", "0", "34"), exact over the whole range.
std::string signed_delta(std::uint64_t base, std::uint64_t head);
// "+12.5%", "-3.0%", "0.0%"; "new" when base is 0 and head is not.
std::string percent_change(std::uint64_t base, std::uint64_t head);

}  // namespace memtrack::tools
