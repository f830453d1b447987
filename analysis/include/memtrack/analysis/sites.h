// Allocation sites: where the heap came from (docs/FORMAT.md, "Context section: stacks and modules"). What
// `memtrack top` ranks and `memtrack stats` lists as top leak sites.
//
// A *site* is a distinct call stack, keyed by its sequence of (module, module-relative return address),
// innermost first, where a module is named by its build-id (by its path when it has none): the same code
// path in different processes, or in images that loaded a library at different addresses, is one site. An
// address in no known module is keyed by itself (no module). A stack cut at the depth cap keeps its marker.
//
// SiteAccumulator is fed context records and events in position order (a record before the events at and
// after its `event` position; EventStacks before the events it covers), from one thread. Per site:
//   allocations, allocated_bytes  heap allocations (event_kinds.h: allocates()) and their bytes
//   leaked_bytes, leaked_blocks   still live at the end of the trace (an image's blocks at its Exec are gone
//                                 with its address space, not leaks; an exited process's blocks are leaks)
//   peak_bytes                    live at the moment of the peak of the live heap (LiveHeap's total: the sum
//                                 over pids; with a pid filter, that pid's own peak), the first time it was
//                                 reached
//   temporary                     allocations whose free directly follows them: no other allocation or free
//                                 of the same process between the two (heaptrack's definition, docs/ACCOUNTING.md;
//                                 a Realloc counts as a free, then an allocation)
//   resident_bytes                resident bytes of the site's live blocks at each process image's last (and
//                                 highest) ResidentPages snapshot, summed over the images (resident_pages.h: a
//                                 page shared by blocks is split by their bytes in it; a fork child's unchanged
//                                 copies of its parent's blocks count at neither); only when the artifact has
//                                 ResidentPages records (SitesResult::has_resident_pages)
// Allocations without a stack (id 0, or a node the trace tree does not define) are counted in `unknown`.
//
// Lifecycle: ProcessStart with a parent that has a trace tree copies the parent's tree and module list
// into the child (the child numbers its new nodes on from there); Exec, and an Untracked record of an exec
// (live_heap.h: untracked_exec), start an empty one. The blocks are the live heap's (the accumulator is its
// HeapClient: each block carries its site), so an image's blocks end with it as the heap says (live_heap.h,
// "Lifecycle"). Blocks a fork child inherits count at the parent's site, as the parent's leaks if the parent
// never frees them, and never as the child's (live_heap.h: inherited_at_exit_*): the child's frees of them
// change no site.
//
// Not thread-safe. Memory: the trace trees, the heap's blocks (4 bytes more each), one entry per distinct
// stack and per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/analysis/stream_order.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"

namespace memtrack::analysis {

// One frame of a resolved stack. Inlined calls at an address come first, each with the address's module
// and address, then the function containing the call.
struct SiteFrame {
  std::string function;                  // demangled; empty when unknown
  std::string module;                    // the module's path; empty when the address is in no known module
  std::vector<std::uint8_t> build_id;    // the module's; empty when it has none or there is no module
  std::string file;                      // empty when unknown
  std::uint32_t line = 0;                // 0 when unknown
  std::optional<std::uint64_t> address;  // module-relative (absolute without a module); none for the marker
  bool inlined = false;
  bool truncated_marker = false;  // the stack was cut at the depth cap here; the callers are unknown
};

struct SiteTotals {
  std::uint64_t allocations = 0, allocated_bytes = 0;
  std::uint64_t leaked_bytes = 0, leaked_blocks = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t temporary = 0;
  std::uint64_t resident_bytes = 0;

  SiteTotals& operator+=(const SiteTotals& t) {
    allocations += t.allocations;
    allocated_bytes += t.allocated_bytes;
    leaked_bytes += t.leaked_bytes;
    leaked_blocks += t.leaked_blocks;
    peak_bytes += t.peak_bytes;
    temporary += t.temporary;
    resident_bytes += t.resident_bytes;
    return *this;
  }
};

struct Site {
  std::vector<SiteFrame> stack;  // innermost first
  SiteTotals totals;
};

enum class SiteOrder { peak, allocated, count, leaked, temporary, resident };

// A site's measure for `order` (peak_bytes, allocated_bytes, allocations, leaked_bytes, temporary,
// resident_bytes).
[[nodiscard]] std::uint64_t site_measure(const SiteTotals& totals, SiteOrder order);
// Whether a site with `x` ranks before one with `y` by `order`: the greater measure, then the more allocated
// bytes, then the more allocations (a stable sort keeps ties in the order the sites were first seen).
[[nodiscard]] bool ranks_before(const SiteTotals& x, const SiteTotals& y, SiteOrder order);

// Symbolizes module-relative return addresses of one module when the artifact has no Symbols record for it:
// fills `out` (one entry per address, innermost frame first; empty: nothing known). The tool's
// (tools/src/file_symbolizer.h) opens the module file with memtrack::symbolize, checking the build-id.
using ModuleSymbolizer =
    std::function<void(const std::string& path, const std::vector<std::uint8_t>& build_id,
                       std::span<const std::uint64_t> addresses, std::vector<std::vector<SiteFrame>>& out)>;

struct SitesResult {
  std::vector<Site> sites;  // in the requested order, best first
  SiteTotals rest;          // the sites beyond the limit, summed
  std::size_t rest_sites = 0;
  SiteTotals unknown;  // allocations without a stack (peak_bytes: their bytes live at the peak)
  std::uint64_t peak_bytes = 0, peak_timestamp = 0;  // the live heap's peak the peak_bytes refer to
  bool has_stacks = false;                           // the artifact had stack records (EventStacks or StackNodes)
  bool has_resident_pages = false;                   // it had ResidentPages records: resident_bytes are known
  std::uint64_t events = 0;
};

class SiteAccumulator final : public ArtifactConsumer {
 public:
  // `pid`: only that pid's events count (peak: its own peak, from a heap of its events and lifecycle alone).
  // `heap`: a live heap the caller drives instead of the accumulator's own, so that one model serves several
  // consumers (`memtrack report`'s timeline and sites): the caller gives it every lifecycle record and event
  // of the stream this accumulator gets (in any order among the consumers of one pass); the accumulator is
  // its client (HeapClient) until destroyed, and it must outlive the accumulator. Ignored with `pid`.
  explicit SiteAccumulator(std::optional<std::int32_t> pid = std::nullopt, LiveHeap* heap = nullptr);
  ~SiteAccumulator() override;
  SiteAccumulator(const SiteAccumulator&) = delete;
  SiteAccumulator& operator=(const SiteAccumulator&) = delete;

  void add_context(const codec::ContextRecord& record) override;  // before the events at its position
  void add(std::span<const codec::Event> events) override;        // in artifact order

  [[nodiscard]] bool has_stacks() const;
  [[nodiscard]] bool has_resident_pages() const;
  [[nodiscard]] std::uint64_t events() const;

  // Resolves every site's frames (Symbols records first, `symbolizer` for modules without one; none: module
  // + offset only) and ranks them. The first `limit` sites by `order` (0: all); ties by allocated bytes,
  // then allocations, then the order sites were first seen.
  SitesResult result(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer = {}) const;

  // What result() has but `sites`, given to for_each_site's `begin` with the number of sites to come.
  using SitesBegin = std::function<void(const SitesResult& summary, std::size_t sites)>;

  // The sites result() lists (the first `limit` by `order`, 0: all), each handed to `sink` as it is resolved
  // and then dropped, in the same order; `begin`, when given, is called once before the first (also when
  // there is none). The result has everything but `sites`. Memory is bounded by the distinct frames, not by
  // sites times frames (`memtrack report` builds its flame graphs this way, `memtrack top` writes its output).
  SitesResult for_each_site(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer,
                            const std::function<void(const Site&)>& sink, const SitesBegin& begin = {}) const;

 private:
  SitesResult collect(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer,
                      const std::function<void(const Site&)>* sink, const SitesBegin* begin) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether a context record says its artifact has call stacks: a Recording listing "stacks" (even a run in
// which no allocation needed a node), or any StackNodes or EventStacks record.
[[nodiscard]] bool marks_stacks(const codec::ContextRecord& record);

}  // namespace memtrack::analysis
