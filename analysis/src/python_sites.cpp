#include "memtrack/analysis/python_sites.h"

#include <algorithm>
#include <utility>

namespace memtrack::analysis {

bool is_python_frame(const SiteFrame& frame) { return !frame.truncated_marker && frame.module == kPythonModule; }

std::vector<SiteFrame> python_stack(const std::vector<SiteFrame>& stack) {
  std::vector<SiteFrame> out;
  bool python = false;
  for (const SiteFrame& f : stack) {
    if (!is_python_frame(f) && !f.truncated_marker) continue;
    SiteFrame kept;
    kept.truncated_marker = f.truncated_marker;
    if (!f.truncated_marker) {
      kept.function = f.function;
      kept.module = f.module;
      kept.file = f.file;
      kept.line = f.line;
      python = true;
    }
    out.push_back(std::move(kept));
  }
  if (!python) {
    SiteFrame none;
    none.function = kNoPythonFrame;
    out.assign(1, std::move(none));
  }
  return out;
}

bool has_python_frames(const std::vector<SiteFrame>& reduced) {
  return !(reduced.size() == 1 && reduced[0].function == kNoPythonFrame && reduced[0].module.empty());
}

void PythonSites::add(const Site& site) {
  std::vector<SiteFrame> stack = python_stack(site.stack);
  any_python_ = any_python_ || has_python_frames(stack);
  // Function, file and line of each frame, each ended by a byte no name holds; the marker as "*".
  std::string key;
  for (const SiteFrame& f : stack) {
    key += f.truncated_marker ? std::string("*") : f.function + '\0' + f.file + '\0' + std::to_string(f.line);
    key += '\1';
  }
  const auto [it, inserted] = index_.try_emplace(std::move(key), sites_.size());
  if (inserted) {
    sites_.push_back(Site{std::move(stack), site.totals});
    return;
  }
  sites_[it->second].totals += site.totals;
}

SitesResult PythonSites::result(SiteOrder order, std::size_t limit, SitesResult summary) const {
  std::vector<std::size_t> rank(sites_.size());
  for (std::size_t i = 0; i < rank.size(); ++i) rank[i] = i;
  std::stable_sort(rank.begin(), rank.end(), [&](std::size_t a, std::size_t b) {
    return ranks_before(sites_[a].totals, sites_[b].totals, order);
  });
  summary.sites.clear();
  summary.rest = {};
  summary.rest_sites = 0;
  for (std::size_t i = 0; i < rank.size(); ++i) {
    if (limit == 0 || i < limit) {
      summary.sites.push_back(sites_[rank[i]]);
    } else {
      summary.rest += sites_[rank[i]].totals;
      ++summary.rest_sites;
    }
  }
  return summary;
}

}  // namespace memtrack::analysis
