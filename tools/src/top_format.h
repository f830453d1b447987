// `memtrack top`'s renderings of allocation sites (memtrack::analysis::SiteAccumulator ranks them): the JSON
// contract other tools rely on, and a table that shows each site's top frames as heaptrack_print does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "json_writer.h"
#include "memtrack/analysis/sites.h"

namespace memtrack::tools {

// "peak", "allocated", "count", "leaked", "temporary".
std::string_view order_name(analysis::SiteOrder order);
// False for a name that is none of them.
bool parse_order(std::string_view name, analysis::SiteOrder& out);

// {"by": ..., "sites": [{"stack": [{"function", "module", "file", "line", "address"}...], "peak_bytes",
// "allocated_bytes", "allocations", "leaked_bytes", "leaked_blocks", "temporary"}...], "rest": {"sites", the
// same numbers}, "without_stack": {the numbers}, "totals": {"sites", the numbers}}: the listed sites plus the
// rest (the sites beyond -n) plus the allocations without a stack are the totals; stack innermost first; unknown fields
// null; "address" a hex string (module-relative, absolute for an address in no known module); a stack cut at the depth
// cap ends with a frame whose function is "[truncated]" and the rest null.
std::string format_top_json(const analysis::SitesResult& result, analysis::SiteOrder order);

// The same document written as the sites come (SiteAccumulator::for_each_site), so that it need not be held
// whole: take() hands over what was written since the last take(), to be printed.
class TopJsonStream {
 public:
  // Opens the document, up to the sites' array. `resident`: the artifact has ResidentPages records.
  TopJsonStream(analysis::SiteOrder order, bool resident);
  TopJsonStream(const TopJsonStream&) = delete;
  TopJsonStream& operator=(const TopJsonStream&) = delete;
  void add(const analysis::Site& site);
  // Closes it: "rest", "without_stack" and "totals" from `summary` (everything but its `sites`) and the sites
  // added.
  void finish(const analysis::SitesResult& summary);
  std::string take();
  [[nodiscard]] std::size_t pending() const { return out_.size(); }

 private:
  std::string out_;
  JsonWriter j_;
  bool resident_;
  analysis::SiteTotals listed_;
  std::size_t sites_ = 0;
};

// A stack as format_top_json's "stack" array.
std::string format_stack_json(const std::vector<analysis::SiteFrame>& stack);
void write_stack_json(JsonWriter& j, const std::vector<analysis::SiteFrame>& stack);

// One site's JSON object, as in format_top_json's "sites" (and `stats --json`'s "top_leaks").
std::string format_site_json(const analysis::Site& site);
// The same into a document being written (the report's sites).
void write_site_json(JsonWriter& j, const analysis::Site& site);
// A site's numbers as members of the object being written ("peak_bytes", ... "temporary").
void write_site_totals_json(JsonWriter& j, const analysis::SiteTotals& totals);

// `memtrack stats`' short section: the sites that leaked most, one line of numbers and `frames` frames each.
std::string format_leak_sites_table(const analysis::SitesResult& leaks, std::size_t frames = 4);

// The table: one block per site, its numbers then up to `frames` frames (0: all).
std::string format_top_table(const analysis::SitesResult& result, analysis::SiteOrder order, std::size_t frames = 12);
// The same in pieces, for sites that come one at a time: the first line (`sites`: how many follow), one site's
// block (`rank` from 1; `resident`: the artifact has ResidentPages records), the allocations without a stack.
std::string format_top_table_head(const analysis::SitesResult& summary, std::size_t sites, analysis::SiteOrder order);
std::string format_top_table_site(const analysis::Site& site, std::size_t rank, bool resident, std::size_t frames = 12);
std::string format_top_table_tail(const analysis::SitesResult& summary);

// One frame as a line: "function (file:line) in module [+0xaddress]".
std::string format_frame(const analysis::SiteFrame& frame);

// The frame as a table line of at most `width` columns after an indent of `indent`: when the whole line is
// longer, the module is shown by its file name, then the source file by its name, then the line is cut
// ("..."). `memtrack top --json` keeps every path whole.
std::string format_frame_line(const analysis::SiteFrame& frame, std::size_t indent = 6, std::size_t width = 100);

}  // namespace memtrack::tools
