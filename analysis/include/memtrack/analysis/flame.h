// Flame graphs of allocation sites (sites.h), what `memtrack report` draws and `memtrack export` writes:
// every site's stack merged into one tree from the outermost frame (main, or the thread's start) to the
// innermost (the call that allocated), a node's value the sum of its sites' values.
//
// A node is a function in its caller: frames are merged by (name, module, file) (in a differential graph by
// their identity, below), so two calls from the same function on different lines are one node (its line is
// kept when they agree, else 0). Inlined frames are nodes of their own, like the functions they were inlined
// into. Allocations without a stack are one child of the root, "[no stack]".
//
// Pruning keeps a graph small whatever the recording: a node whose value is below `prune_fraction` of the
// root's is dropped with its subtree; its bytes stay in its parent's value (a node's value includes its
// children's, so the parent is as wide as before), and the graph counts what it dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memtrack/analysis/sites.h"

namespace memtrack::analysis {

// resident: resident bytes of the site's live blocks at the page snapshots (SiteTotals::resident_bytes).
enum class FlameValue { peak, allocated, count, leaked, resident };

struct FlameNode {
  std::string name;    // frame_name()
  std::string module;  // empty: unknown
  std::string file;    // empty: unknown
  std::uint32_t line = 0;
  std::uint64_t value = 0;                       // bytes (count: allocations)
  std::uint64_t count = 0;                       // allocations (leaked: blocks)
  std::uint64_t base_value = 0, base_count = 0;  // the baseline's (build_diff_flame_graph only)
  std::vector<FlameNode> children;               // in the order first seen
};

struct FlameGraph {
  FlameNode root;  // name "all"
  std::uint64_t pruned_nodes = 0, pruned_value = 0;
  double threshold = 0;       // the fraction of the root's value below which nodes were pruned
  bool differential = false;  // build_diff_flame_graph: nodes carry the baseline's values too
};

// A site's value for `v`, and its count (allocations; leaked blocks for leaked).
std::uint64_t site_value(const SiteTotals& t, FlameValue v);
std::uint64_t site_count(const SiteTotals& t, FlameValue v);

// How a frame is named: its function; else "module+0x<relative address>" (the module's file name); else
// "0x<address>"; a truncated stack's marker is "[truncated]".
std::string frame_name(const SiteFrame& frame);

// Builds a flame graph from sites given one at a time (SiteAccumulator::for_each_site), so no list of every
// site with its frames need exist: the builder keeps each distinct frame once and the tree of paths.
class FlameBuilder {
 public:
  // `by_identity`: frames merge by their identity (a differential graph, build_diff_flame_graph).
  explicit FlameBuilder(FlameValue v, bool by_identity = false);
  ~FlameBuilder();
  FlameBuilder(FlameBuilder&&) noexcept;
  FlameBuilder(const FlameBuilder&) = delete;
  FlameBuilder& operator=(const FlameBuilder&) = delete;

  void add(const Site& site, bool base = false);                   // base: the baseline's values (a differential graph)
  void add_unknown(const SiteTotals& unknown, bool base = false);  // the allocations without a stack
  [[nodiscard]] FlameGraph finish(double prune_fraction = 0.001) const;

  struct Tree;

 private:
  FlameValue value_;
  std::unique_ptr<Tree> tree_;
  std::vector<const SiteFrame*> path_;
};

// The tree of every site with a non-zero value for `v` (sites in any order), pruned as described above
// (prune_fraction 0: nothing pruned).
FlameGraph build_flame_graph(const SitesResult& sites, FlameValue v, double prune_fraction = 0.001);

// Both recordings' sites in one tree (`memtrack report --baseline`): value and count are head's, base_value
// and base_count the baseline's. Frames merge by their identity (site_match.h: function, file's and
// module's basenames, or build-id + offset), so a node holds exactly the sites `memtrack diff` pairs under
// that path, and two builds of one program share their nodes although every address moved; the name, module,
// file and line shown are of the first site seen (head's first). A node is pruned when both its values are
// below prune_fraction of the larger root value.
FlameGraph build_diff_flame_graph(const SitesResult& base, const SitesResult& head, FlameValue v,
                                  double prune_fraction = 0.001);

}  // namespace memtrack::analysis
