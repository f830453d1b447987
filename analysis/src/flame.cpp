#include "memtrack/analysis/flame.h"

#include <algorithm>
#include <cstdio>
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
struct Flat {
  std::string name, module, file;
  std::uint32_t line = 0;
  bool line_conflict = false;
  std::uint64_t value = 0, count = 0, base_value = 0, base_count = 0;
  std::vector<std::size_t> children;
};

struct FlatTree {
  std::vector<Flat> nodes = std::vector<Flat>(1);
  std::unordered_map<std::string, std::size_t> index;
  bool by_identity = false;  // frames keyed as site_match.h pairs them, else by (name, module, file)
};

void add_path(FlatTree& t, const std::vector<const SiteFrame*>& path, std::uint64_t value, std::uint64_t count,
              bool base) {
  std::vector<Flat>& nodes = t.nodes;
  const auto credit = [&](Flat& n) {
    (base ? n.base_value : n.value) += value;
    (base ? n.base_count : n.count) += count;
  };
  std::size_t at = 0;
  credit(nodes[0]);
  std::string key;
  for (const SiteFrame* f : path) {
    const std::string name = frame_name(*f);
    key.assign(std::to_string(at)).append(1, '\0');
    if (t.by_identity)
      append_frame_identity(key, *f);
    else
      key.append(name).append(1, '\0').append(f->module).append(1, '\0').append(f->file);
    auto [it, fresh] = t.index.try_emplace(key, nodes.size());
    if (fresh) {
      Flat n;
      n.name = name;
      n.module = f->module;
      n.file = f->file;
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

void add_sites(FlatTree& t, const SitesResult& sites, FlameValue v, bool base) {
  std::vector<const SiteFrame*> path;
  for (const Site& s : sites.sites) {
    const std::uint64_t value = site_value(s.totals, v);
    if (value == 0) continue;
    path.clear();
    for (auto it = s.stack.rbegin(); it != s.stack.rend(); ++it) path.push_back(&*it);  // outermost first
    add_path(t, path, value, site_count(s.totals, v), base);
  }
  if (const std::uint64_t value = site_value(sites.unknown, v); value != 0) {
    SiteFrame none;
    none.function = "[no stack]";
    path.assign(1, &none);
    add_path(t, path, value, site_count(sites.unknown, v), base);
  }
}

std::uint64_t larger(const Flat& f) { return std::max(f.value, f.base_value); }

std::uint64_t subtree_size(const std::vector<Flat>& nodes, std::size_t i) {
  std::uint64_t n = 1;
  for (const std::size_t c : nodes[i].children) n += subtree_size(nodes, c);
  return n;
}

FlameNode nest(const std::vector<Flat>& nodes, std::size_t i, std::uint64_t min_value, FlameGraph& g) {
  const Flat& f = nodes[i];
  FlameNode out;
  out.name = f.name;
  out.module = f.module;
  out.file = f.file;
  out.line = f.line_conflict ? 0 : f.line;
  out.value = f.value;
  out.count = f.count;
  out.base_value = f.base_value;
  out.base_count = f.base_count;
  for (const std::size_t c : f.children) {
    if (larger(nodes[c]) < min_value) {
      g.pruned_nodes += subtree_size(nodes, c);
      g.pruned_value += nodes[c].value;
      continue;
    }
    out.children.push_back(nest(nodes, c, min_value, g));
  }
  return out;
}

FlameGraph finish(FlatTree& t, double prune_fraction) {
  t.nodes[0].name = "all";
  FlameGraph g;
  g.threshold = prune_fraction;
  g.differential = t.by_identity;
  const auto min_value = static_cast<std::uint64_t>(static_cast<double>(larger(t.nodes[0])) * prune_fraction);
  g.root = nest(t.nodes, 0, min_value, g);
  return g;
}

}  // namespace

FlameGraph build_flame_graph(const SitesResult& sites, FlameValue v, double prune_fraction) {
  FlatTree t;
  add_sites(t, sites, v, false);
  return finish(t, prune_fraction);
}

FlameGraph build_diff_flame_graph(const SitesResult& base, const SitesResult& head, FlameValue v,
                                  double prune_fraction) {
  FlatTree t;
  t.by_identity = true;
  add_sites(t, head, v, false);  // head first: its names are shown
  add_sites(t, base, v, true);
  return finish(t, prune_fraction);
}

}  // namespace memtrack::analysis
