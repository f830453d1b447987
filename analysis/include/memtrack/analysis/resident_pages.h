// Resident bytes of live heap blocks, from a `ResidentPages` snapshot (docs/FORMAT.md, "Context section:
// resident"): which of a block's pages were present when the recorder read /proc/<pid>/pagemap.
//
// The split rule: a present page is divided among the live blocks that overlap it in proportion to each one's
// bytes in it (a page held by one block, whole or in part, is that block's; a page shared by a 1 KiB and a
// 3 KiB block gives them 1 KiB and 3 KiB of its 4 KiB when it is full, 1/4 and 3/4 of it in any case). So the
// blocks' resident bytes add up to the present pages they touch, as the kernel counts them; a page no block
// touches (allocator free space, metadata) is nobody's. Absent pages, and pages outside the snapshot's ranges,
// count nothing. Integer shares are rounded down.
//
// Cost: O(blocks) for the pages at the blocks' ends (one hash entry per distinct end page), plus the bits of
// the blocks' inner pages counted 64 at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memtrack/codec/context.h"

namespace memtrack::analysis {

struct LiveBlock {
  std::uint64_t addr = 0, size = 0;
};

// The resident bytes of each of `blocks` (disjoint, as a process's live blocks are; any order) by `pages`:
// out[i] for blocks[i].
[[nodiscard]] std::vector<std::uint64_t> resident_bytes_of(std::span<const LiveBlock> blocks,
                                                           const codec::ResidentPages& pages);

}  // namespace memtrack::analysis
