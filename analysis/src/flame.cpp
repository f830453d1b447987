#include "memtrack/analysis/flame.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "memtrack/analysis/site_match.h"

namespace memtrack::analysis {

std::uint64_t site_value(const SiteTotals& t, FlameValue v) {
  switch (v) {  // the same measures as the sites' orders (site_measure), temporary aside
    case FlameValue::peak:
      return site_measure(t, SiteOrder::peak);
    case FlameValue::allocated:
      return site_measure(t, SiteOrder::allocated);
    case FlameValue::count:
      return site_measure(t, SiteOrder::count);
    case FlameValue::leaked:
      return site_measure(t, SiteOrder::leaked);
    case FlameValue::resident:
      return site_measure(t, SiteOrder::resident);
  }
  return 0;
}

std::uint64_t site_count(const SiteTotals& t, FlameValue v) {
  return v == FlameValue::leaked ? t.leaked_blocks : t.allocations;
}

std::string frame_name(const SiteFrame& frame) {
  if (frame.truncated_marker) return "[truncated]";
  if (!frame.function.empty()) return frame.function;
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(frame.address.value_or(0)));
  if (frame.module.empty()) return hex;
  const std::size_t slash = frame.module.rfind('/');
  return (slash == std::string::npos ? frame.module : frame.module.substr(slash + 1)) + "+" + hex;
}

namespace {

// The tree is built flat (one hash lookup per frame of each site) and turned into nested nodes at the end.
// A node holds its frame's id, not its strings: the frames are interned once each (a recording's sites share
// most of their frames), so memory grows with distinct frames plus one Flat (~72 bytes and its children's indices) per
// path node.
struct Flat {
  std::uint32_t frame = 0;  // FlameBuilder::Tree::frames; unused for the root
  std::uint32_t line = 0;
  bool line_conflict = false;
  std::uint64_t value = 0, count = 0, base_value = 0, base_count = 0;
  std::vector<std::size_t> children;
};

struct FrameText {
  std::string name, module, file;
};

}  // namespace

struct FlameBuilder::Tree {
  std::vector<Flat> nodes = std::vector<Flat>(1);
  std::vector<FrameText> frames;
  std::unordered_map<std::string, std::uint32_t> frame_ids;  // a frame's key: identity, or name/module/file
  std::unordered_map<std::uint64_t, std::size_t> index;      // (parent node << 32 | frame id) -> node
  bool by_identity = false;  // frames keyed as site_match.h pairs them, else by (name, module, file)
  std::string key;           // scratch

  void add_path(const std::vector<const SiteFrame*>& path, std::uint64_t value, std::uint64_t count, bool base) {
    const auto credit = [&](Flat& n) {
      (base ? n.base_value : n.value) += value;
      (base ? n.base_count : n.count) += count;
    };
    std::size_t at = 0;
    credit(nodes[0]);
    for (const SiteFrame* f : path) {
      key.clear();
      std::string name = frame_name(*f);
      if (by_identity)
        append_frame_identity(key, *f);
      else
        key.append(name).append(1, '\0').append(f->module).append(1, '\0').append(f->file);
      const auto [fit, new_frame] = frame_ids.try_emplace(key, static_cast<std::uint32_t>(frames.size()));
      if (new_frame) frames.push_back(FrameText{std::move(name), f->module, f->file});
      const std::uint64_t edge = (static_cast<std::uint64_t>(at) << 32) | fit->second;
      const auto [it, fresh] = index.try_emplace(edge, nodes.size());
      if (fresh) {
        Flat n;
        n.frame = fit->second;
        n.line = f->line;
        nodes[at].children.push_back(nodes.size());
        nodes.push_back(std::move(n));
      } else if (nodes[it->second].line != f->line) {
        nodes[it->second].line_conflict = true;
      }
      at = it->second;
      credit(nodes[at]);
    }
  }
};

namespace {

std::uint64_t larger(const Flat& f) { return std::max(f.value, f.base_value); }

std::uint64_t subtree_size(const std::vector<Flat>& nodes, std::size_t i) {
  std::uint64_t n = 1;
  for (const std::size_t c : nodes[i].children) n += subtree_size(nodes, c);
  return n;
}

FlameNode nest(const FlameBuilder::Tree& t, std::size_t i, std::uint64_t min_value, FlameGraph& g) {
  const Flat& f = t.nodes[i];
  FlameNode out;
  if (i == 0) {
    out.name = "all";
  } else {
    const FrameText& text = t.frames[f.frame];
    out.name = text.name;
    out.module = text.module;
    out.file = text.file;
  }
  out.line = f.line_conflict ? 0 : f.line;
  out.value = f.value;
  out.count = f.count;
  out.base_value = f.base_value;
  out.base_count = f.base_count;
  for (const std::size_t c : f.children) {
    if (larger(t.nodes[c]) < min_value) {
      g.pruned_nodes += subtree_size(t.nodes, c);
      g.pruned_value += t.nodes[c].value;
      continue;
    }
    out.children.push_back(nest(t, c, min_value, g));
  }
  return out;
}

}  // namespace

FlameBuilder::FlameBuilder(FlameValue v, bool by_identity) : value_(v), tree_(std::make_unique<Tree>()) {
  tree_->by_identity = by_identity;
}
FlameBuilder::~FlameBuilder() = default;
FlameBuilder::FlameBuilder(FlameBuilder&&) noexcept = default;

void FlameBuilder::add(const Site& s, bool base) {
  const std::uint64_t value = site_value(s.totals, value_);
  if (value == 0) return;
  path_.clear();
  for (auto it = s.stack.rbegin(); it != s.stack.rend(); ++it) path_.push_back(&*it);  // outermost first
  tree_->add_path(path_, value, site_count(s.totals, value_), base);
}

void FlameBuilder::add_unknown(const SiteTotals& t, bool base) {
  const std::uint64_t value = site_value(t, value_);
  if (value == 0) return;
  SiteFrame none;
  none.function = "[no stack]";
  path_.assign(1, &none);
  tree_->add_path(path_, value, site_count(t, value_), base);
}

FlameGraph FlameBuilder::finish(double prune_fraction) const {
  FlameGraph g;
  g.threshold = prune_fraction;
  g.differential = tree_->by_identity;
  const auto min_value = static_cast<std::uint64_t>(static_cast<double>(larger(tree_->nodes[0])) * prune_fraction);
  g.root = nest(*tree_, 0, min_value, g);
  return g;
}

FlameGraph build_flame_graph(const SitesResult& sites, FlameValue v, double prune_fraction) {
  FlameBuilder b(v);
  for (const Site& s : sites.sites) b.add(s);
  b.add_unknown(sites.unknown);
  return b.finish(prune_fraction);
}

FlameGraph build_diff_flame_graph(const SitesResult& base, const SitesResult& head, FlameValue v,
                                  double prune_fraction) {
  FlameBuilder b(v, true);
  for (const Site& s : head.sites) b.add(s);  // head first: its names are shown
  b.add_unknown(head.unknown);
  for (const Site& s : base.sites) b.add(s, true);
  b.add_unknown(base.unknown, true);
  return b.finish(prune_fraction);
}

}  // namespace memtrack::analysis
