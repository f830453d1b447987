// Allocation sites of two recordings paired by what they are, not where they were (`memtrack diff`): two
// builds of one program, every address moved, still pair up.
//
// A site's identity is its sequence of frames, innermost first, each frame:
//   - with a function name: (function, file's basename, module's basename); line, address and whether the
//     call was inlined are left out (they move with any edit or inlining decision);
//   - without one: (module build-id, module-relative address) when the module has a build-id, so only the
//     same build pairs; (module path, address) without a build-id; the absolute address outside any module;
//   - the depth cap's truncation marker as itself.
// Sites of one recording with the same identity (two calls in one function differing only by line, or the
// same path through two copies of a library) are merged, their totals summed: the pair is of the merged site.
//
// Pure functions of their inputs; no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memtrack/analysis/sites.h"

namespace memtrack::analysis {

// A matched item's status: in both and equal, in both and different, only in head, only in base.
enum class ChangeStatus : std::uint8_t { same, changed, added, removed };

struct SiteChange {
  std::vector<SiteFrame> stack;  // head's frames (base's for a removed site), of the largest merged site
  SiteTotals base, head;         // zero on a side without the site
  std::uint32_t base_sites = 0, head_sites = 0;  // sites of each side merged into this one (0: absent)
  ChangeStatus status = ChangeStatus::same;
};

struct SitesDiff {
  std::vector<SiteChange> sites;  // ranked (match_sites), the first `limit`
  // Over every matched site, before the limit.
  std::uint64_t same = 0, changed = 0, added = 0, removed = 0;
};

// The identity above, as a byte string (equal strings: the same site): the frames' identities in order.
[[nodiscard]] std::string site_identity(const Site& site);
// One frame's identity appended to `key` (self-delimiting: a sequence of them is a site's identity).
void append_frame_identity(std::string& key, const SiteFrame& frame);

// `base`, `head`: every site of each recording (SiteAccumulator::result with limit 0); their order decides
// which merged site's frames are shown (the first). Ranked by the absolute change in `order`'s measure, then
// in bytes allocated, then in allocations, then by the larger side's measure; ties keep head's order, removed
// sites after. `limit` 0: all. A site is "same" when its totals are equal, resident bytes only counted when
// `order` is resident (they move with the kernel's timing from run to run).
[[nodiscard]] SitesDiff match_sites(std::span<const Site> base, std::span<const Site> head, SiteOrder order,
                                    std::size_t limit);

}  // namespace memtrack::analysis
