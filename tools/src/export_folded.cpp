#include <map>

#include "export_format.h"

namespace memtrack::tools {
namespace {

void append_name(std::string& line, const std::string& name) {
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    line += ch == ';' ? ':' : c < 0x20 ? ' ' : ch;
  }
}

// Each node's own value (its value less its children's) is the value of the stack that ends there.
void walk(const analysis::FlameNode& n, std::string& prefix, std::map<std::string, std::uint64_t>& lines) {
  std::uint64_t children = 0;
  for (const analysis::FlameNode& c : n.children) children += c.value;
  if (n.value > children) lines[prefix] += n.value - children;
  for (const analysis::FlameNode& c : n.children) {
    const std::size_t mark = prefix.size();
    if (!prefix.empty()) prefix += ';';
    append_name(prefix, c.name);
    walk(c, prefix, lines);
    prefix.resize(mark);
  }
}

}  // namespace

SiteSource sites_of(const analysis::SitesResult& sites) {
  return [&sites](const std::function<void(const analysis::Site&)>& sink) {
    for (const analysis::Site& s : sites.sites) sink(s);
    analysis::SitesResult rest;
    rest.unknown = sites.unknown;
    return rest;
  };
}

std::string format_folded(const SiteSource& sites, analysis::FlameValue value) {
  analysis::FlameBuilder builder(value);
  const analysis::SitesResult rest = sites([&](const analysis::Site& s) { builder.add(s); });
  builder.add_unknown(rest.unknown);
  const analysis::FlameGraph g = builder.finish(0);
  std::map<std::string, std::uint64_t> lines;  // equal texts (same names, other modules) add up
  std::string prefix;
  for (const analysis::FlameNode& c : g.root.children) {
    append_name(prefix, c.name);
    walk(c, prefix, lines);
    prefix.clear();
  }
  std::string out;
  for (const auto& [stack, v] : lines) out += stack + ' ' + std::to_string(v) + '\n';
  return out;
}

}  // namespace memtrack::tools
