#include "memtrack/analysis/flame.h"

#include <cstdio>
#include <string_view>
#include <unordered_map>

namespace memtrack::analysis {

std::uint64_t site_value(const SiteTotals& t, FlameValue v) {
  switch (v) {
    case FlameValue::peak:
      return t.peak_bytes;
    case FlameValue::allocated:
      return t.allocated_bytes;
    case FlameValue::count:
      return t.allocations;
    case FlameValue::leaked:
      return t.leaked_bytes;
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
  std::uint64_t value = 0, count = 0;
  std::vector<std::size_t> children;
};

void add_path(std::vector<Flat>& nodes, std::unordered_map<std::string, std::size_t>& index,
              const std::vector<const SiteFrame*>& path, std::uint64_t value, std::uint64_t count) {
  std::size_t at = 0;
  nodes[0].value += value;
  nodes[0].count += count;
  std::string key;
  for (const SiteFrame* f : path) {
    const std::string name = frame_name(*f);
    key.assign(std::to_string(at))
        .append(1, '\0')
        .append(name)
        .append(1, '\0')
        .append(f->module)
        .append(1, '\0')
        .append(f->file);
    auto [it, fresh] = index.try_emplace(key, nodes.size());
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
    nodes[at].value += value;
    nodes[at].count += count;
  }
}

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
  for (const std::size_t c : f.children) {
    if (nodes[c].value < min_value) {
      g.pruned_nodes += subtree_size(nodes, c);
      g.pruned_value += nodes[c].value;
      continue;
    }
    out.children.push_back(nest(nodes, c, min_value, g));
  }
  return out;
}

}  // namespace

FlameGraph build_flame_graph(const SitesResult& sites, FlameValue v, double prune_fraction) {
  std::vector<Flat> nodes(1);
  nodes[0].name = "all";
  std::unordered_map<std::string, std::size_t> index;
  std::vector<const SiteFrame*> path;
  for (const Site& s : sites.sites) {
    const std::uint64_t value = site_value(s.totals, v);
    if (value == 0) continue;
    path.clear();
    for (auto it = s.stack.rbegin(); it != s.stack.rend(); ++it) path.push_back(&*it);  // outermost first
    add_path(nodes, index, path, value, site_count(s.totals, v));
  }
  if (const std::uint64_t value = site_value(sites.unknown, v); value != 0) {
    SiteFrame none;
    none.function = "[no stack]";
    path.assign(1, &none);
    add_path(nodes, index, path, value, site_count(sites.unknown, v));
  }
  FlameGraph g;
  g.threshold = prune_fraction;
  const auto min_value = static_cast<std::uint64_t>(static_cast<double>(nodes[0].value) * prune_fraction);
  g.root = nest(nodes, 0, min_value, g);
  return g;
}

}  // namespace memtrack::analysis
