// Allocation sites by their Python frames alone: what `memtrack top --python` ranks (docs/RUNTIME.md, "Python
// programs"). A Python program's sites differ by their native frames too (the interpreter calls the allocator
// from many places for one line of Python), so a line's allocations are spread over many sites; here they are
// one.
//
// A site's stack is reduced to its Python frames (module "[python]"), innermost first, each kept as function,
// file and line (the address is dropped: one line is several instructions); a stack cut at the depth cap keeps
// its marker last. Sites whose reduced stacks are equal are one site, their numbers added: every SiteTotals
// field is a sum over allocations or blocks (peak_bytes over blocks live at one moment), so the sums are what a
// site of those allocations would have. A site with no Python frame (the interpreter's start and end, a thread
// that never ran Python code, a program that is not Python) is reduced to the one frame kNoPythonFrame.
//
// Memory: one entry per distinct reduced stack. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtrack/analysis/sites.h"

namespace memtrack::analysis {

// The module path of Python frames (the recorder's pseudo-module, docs/FORMAT.md).
inline constexpr const char* kPythonModule = "[python]";
// The function of the one frame of a site without Python frames.
inline constexpr const char* kNoPythonFrame = "[no Python frame]";

[[nodiscard]] bool is_python_frame(const SiteFrame& frame);

// A stack reduced to its Python frames as above (function, module, file, line; the depth marker kept), or to
// the one frame kNoPythonFrame when it has none. `memtrack export --python` writes sites with these stacks.
[[nodiscard]] std::vector<SiteFrame> python_stack(const std::vector<SiteFrame>& stack);
// Whether a reduced stack is of Python frames (not the kNoPythonFrame one).
[[nodiscard]] bool has_python_frames(const std::vector<SiteFrame>& reduced);

class PythonSites {
 public:
  // Sites as SiteAccumulator::for_each_site hands them over (ranked by the order result() will be asked for,
  // so that ties keep the same order).
  void add(const Site& site);

  // Whether a site added had a Python frame.
  [[nodiscard]] bool any_python_frame() const { return any_python_; }

  // The merged sites, ranked by `order` (ranks_before; ties in the order first added), the first `limit` (0:
  // all), the others summed into `rest`; the other fields are `summary`'s (for_each_site's result).
  [[nodiscard]] SitesResult result(SiteOrder order, std::size_t limit, SitesResult summary) const;

 private:
  std::unordered_map<std::string, std::size_t> index_;  // reduced stack's key -> sites_
  std::vector<Site> sites_;
  bool any_python_ = false;
};

}  // namespace memtrack::analysis
